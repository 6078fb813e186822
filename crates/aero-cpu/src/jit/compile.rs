//! Translation of a decoded block into host code (iced-x86's code assembler).
//!
//! Register model: `rbx` = the `JitCtx`, `r12` = the guest GPR array; `rax`/`rcx` are
//! scratch. Every instruction loads its guest registers from memory and stores its
//! result back, so a helper call or an exit never has guest state to flush. Host EFLAGS
//! hold the guest status flags: each compiled ALU instruction is the host instruction of
//! the same size, and everything between them (loads, stores, `lea`, `jrcxz`, `pushfq`)
//! leaves EFLAGS alone. Helper calls clobber EFLAGS, so they are saved before each call
//! (for the fault path: a fault reports the flags from before its instruction) and
//! restored after it when a later instruction or the exit still needs them.

use super::native;
use super::{
    EXIT_END, EXIT_FAULT, EXIT_NOT_TAKEN, EXIT_PREFIX, EXIT_TAKEN, OFF_END_BLOCK, OFF_EXIT_K,
    OFF_EXIT_KIND, OFF_FAULT_FLAGS, OFF_FLAGS_IN, OFF_FLAGS_OUT, OFF_GPR, OFF_LOOP_LEFT,
    OFF_LOOP_RETIRED, OFF_NEED_R, OFF_NEED_W, OFF_RAM, OFF_RAM_LEN, OFF_STATUS, OFF_TLB,
    OFF_TMP_FLAGS,
};
use crate::exec::{
    Insn, K_HI8, K_IMM, K_MEM, K_NONE, K_REG, NO_REG, PFX_LOCK, PFX_REP, PFX_REPNE, RIP_REG,
};
use crate::mmu::{TLB_SIZE, TlbEntry};
use iced_x86::code_asm::*;
use iced_x86::{Mnemonic, OpKind};

/// An operand as compiled code sees it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Opd {
    Reg(u8),
    Mem,
    Imm(i32),
}

/// What one guest instruction becomes.
#[derive(Clone, Copy)]
enum Form {
    /// Two-operand ALU instruction (ADD/OR/ADC/SBB/AND/SUB/XOR/CMP/TEST).
    Alu {
        m: Mnemonic,
        size: u8,
        dst: Opd,
        src: Opd,
    },
    /// INC/DEC/NEG/NOT.
    Unary {
        m: Mnemonic,
        size: u8,
        dst: Opd,
    },
    /// MOV reg, reg.
    MovRR {
        size: u8,
        d: u8,
        s: u8,
    },
    /// MOV reg, imm (any width).
    MovRI {
        size: u8,
        d: u8,
        imm: u64,
    },
    /// MOVZX/MOVSX/MOVSXD reg, reg.
    Extend {
        signed: bool,
        dsize: u8,
        ssize: u8,
        d: u8,
        s: u8,
    },
    Setcc {
        cc: u8,
        dst: Opd,
    },
    Cmov {
        cc: u8,
        size: u8,
        d: u8,
        src: Opd,
    },
    /// MOV reg, mem.
    Load {
        size: u8,
        d: u8,
    },
    /// MOV mem, reg / MOV mem, imm.
    Store {
        size: u8,
        src: Opd,
    },
    /// A flag-neutral instruction run by its interpreter handler.
    Handler,
    /// The block's closing Jcc / JMP rel.
    Jcc {
        cc: u8,
    },
    Jmp,
}

impl Form {
    /// Reads status flags (or passes some through: INC/DEC keep CF).
    fn reads_flags(&self) -> bool {
        match *self {
            Form::Alu { m, .. } => matches!(m, Mnemonic::Adc | Mnemonic::Sbb),
            Form::Unary { m, .. } => matches!(m, Mnemonic::Inc | Mnemonic::Dec),
            Form::Setcc { .. } | Form::Cmov { .. } | Form::Jcc { .. } => true,
            _ => false,
        }
    }
    /// Writes all six status flags.
    fn writes_flags(&self) -> bool {
        match *self {
            Form::Alu { .. } => true,
            Form::Unary { m, .. } => m == Mnemonic::Neg,
            _ => false,
        }
    }
}

fn gpr_size(size: u8) -> bool {
    matches!(size, 1 | 2 | 4 | 8)
}

/// The immediate of an instruction as the host instruction's signed 32-bit immediate.
fn imm32(i: &Insn, size: u8) -> Option<i32> {
    Some(match size {
        1 => i.imm as u8 as i8 as i32,
        2 => i.imm as u16 as i16 as i32,
        4 => i.imm as u32 as i32,
        _ => i32::try_from(i.imm as i64).ok()?,
    })
}

fn operand(i: &Insn, n: usize, size: u8) -> Option<Opd> {
    let o = i.ops[n];
    match o.kind {
        K_REG if o.size == size => Some(Opd::Reg(o.reg & 15)),
        K_MEM if o.size == size => Some(Opd::Mem),
        K_IMM => Some(Opd::Imm(imm32(i, size)?)),
        _ => None,
    }
}

fn classify(i: &Insn, last: bool) -> Option<Form> {
    use Mnemonic::*;
    if i.prefix & (PFX_LOCK | PFX_REP | PFX_REPNE) != 0 {
        return None;
    }
    let m = i.raw.mnemonic();
    let o0 = i.ops[0];
    let size = o0.size;
    match m {
        Add | Or | Adc | Sbb | And | Sub | Xor | Cmp | Test => {
            if !gpr_size(size) || i.raw.op_count() != 2 {
                return None;
            }
            let dst = operand(i, 0, size)?;
            let src = operand(i, 1, size)?;
            if matches!(dst, Opd::Imm(_)) || (dst == Opd::Mem && src == Opd::Mem) {
                return None;
            }
            Some(Form::Alu { m, size, dst, src })
        }
        Inc | Dec | Neg | Not => {
            if !gpr_size(size) || i.raw.op_count() != 1 {
                return None;
            }
            let dst = operand(i, 0, size)?;
            if matches!(dst, Opd::Imm(_)) {
                return None;
            }
            Some(Form::Unary { m, size, dst })
        }
        Mov if o0.kind == K_MEM && gpr_size(size) && !last => match i.ops[1].kind {
            K_REG if i.ops[1].size == size => Some(Form::Store {
                size,
                src: Opd::Reg(i.ops[1].reg & 15),
            }),
            K_IMM => Some(Form::Store {
                size,
                src: Opd::Imm(imm32(i, size)?),
            }),
            _ => handler_form(i, last),
        },
        Mov if o0.kind == K_REG && gpr_size(size) => match i.ops[1].kind {
            K_REG if i.ops[1].size == size => Some(Form::MovRR {
                size,
                d: o0.reg & 15,
                s: i.ops[1].reg & 15,
            }),
            K_IMM => Some(Form::MovRI {
                size,
                d: o0.reg & 15,
                imm: i.imm,
            }),
            K_MEM if i.ops[1].size == size && !last => Some(Form::Load {
                size,
                d: o0.reg & 15,
            }),
            _ => handler_form(i, last),
        },
        Movzx | Movsx | Movsxd if o0.kind == K_REG && i.ops[1].kind == K_REG && gpr_size(size) => {
            let ssize = i.ops[1].size;
            if !matches!(ssize, 1 | 2 | 4) || ssize >= size {
                return handler_form(i, last);
            }
            Some(Form::Extend {
                signed: m != Movzx,
                dsize: size,
                ssize,
                d: o0.reg & 15,
                s: i.ops[1].reg & 15,
            })
        }
        Seto | Setno | Setb | Setae | Sete | Setne | Setbe | Seta | Sets | Setns | Setp | Setnp
        | Setl | Setge | Setle | Setg => {
            let dst = match o0.kind {
                K_REG if size == 1 => Opd::Reg(o0.reg & 15),
                K_MEM if size == 1 => Opd::Mem,
                _ => return None,
            };
            Some(Form::Setcc { cc: i.cc & 15, dst })
        }
        Cmovo | Cmovno | Cmovb | Cmovae | Cmove | Cmovne | Cmovbe | Cmova | Cmovs | Cmovns
        | Cmovp | Cmovnp | Cmovl | Cmovge | Cmovle | Cmovg => {
            if o0.kind != K_REG || !matches!(size, 2 | 4 | 8) {
                return None;
            }
            let src = match operand(i, 1, size)? {
                Opd::Imm(_) => return None,
                s => s,
            };
            Some(Form::Cmov {
                cc: i.cc & 15,
                size,
                d: o0.reg & 15,
                src,
            })
        }
        Jmp if last && near_rel(i) => Some(Form::Jmp),
        _ if last && crate::exec::control::is_jcc(m) && near_rel(i) => {
            Some(Form::Jcc { cc: i.cc & 15 })
        }
        _ => handler_form(i, last),
    }
}

fn near_rel(i: &Insn) -> bool {
    matches!(
        i.raw.op0_kind(),
        OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
    )
}

/// Instructions that neither read nor write status flags nor RIP, run by their handler.
fn handler_form(i: &Insn, last: bool) -> Option<Form> {
    use Mnemonic::*;
    if last {
        // The interpreter gives a block's last instruction its own RIP: leave it there.
        return None;
    }
    let neutral = matches!(
        i.raw.mnemonic(),
        Mov | Movzx
            | Movsx
            | Movsxd
            | Lea
            | Push
            | Pop
            | Xchg
            | Nop
            | Cbw
            | Cwde
            | Cdqe
            | Cwd
            | Cdq
            | Cqo
            | Bswap
            | Leave
    );
    let plain = i.ops[..i.raw.op_count().min(3) as usize]
        .iter()
        .all(|o| matches!(o.kind, K_REG | K_HI8 | K_MEM | K_IMM | K_NONE));
    (neutral && plain).then_some(Form::Handler)
}

/// Host code for a block.
pub struct Compiled {
    pub code: Vec<u8>,
    /// The whole block compiled, closed by a branch back to its own start: the code runs
    /// further iterations itself while `JitCtx::loop_left` allows (see `Emitter::back_edge`).
    pub self_loop: bool,
    /// Instructions compiled (a prefix of the block).
    pub len: usize,
}

/// The closing branch of `insns` jumps to the block's start (relative to it, so for
/// any block start; the run loop still checks the masked target at entry).
pub fn branches_to_start(insns: &[Insn]) -> bool {
    insns
        .last()
        .is_some_and(|l| (l.end as i64).wrapping_add(l.rel) == 0)
}

/// Compile the longest supported prefix of `insns` into code for host address `ip`.
/// `flat`: the segments flat when the block was decoded (`Block::flat`); memory operands
/// through them get the TLB hit path inline (the block cache hands the block out only
/// while those stay flat). None when not even the first instruction is supported.
pub fn compile(insns: &[Insn], ip: u64, flat: u8) -> Option<Compiled> {
    let n = insns.len();
    let mut forms = Vec::with_capacity(n);
    for (k, i) in insns.iter().enumerate() {
        match classify(i, k + 1 == n) {
            Some(f) => forms.push(f),
            None => break,
        }
    }
    if forms.is_empty() || n > 255 {
        return None;
    }
    // Liveness of the status flags after each instruction (the exit needs them).
    let mut live_after = vec![true; forms.len()];
    let mut live = true;
    for (k, f) in forms.iter().enumerate().rev() {
        live_after[k] = live;
        live = f.reads_flags() || (live && !f.writes_flags());
    }
    let whole = forms.len() == n;
    let self_loop = whole && branches_to_start(insns);
    let mut e = Emitter::new(flat).ok()?;
    e.prologue().ok()?;
    if self_loop {
        let mut top = e.a.create_label();
        e.a.set_label(&mut top).ok()?;
        e.back_edge = Some((top, n as i32));
    }
    let mut helper_versions = Vec::new();
    for (k, f) in forms.iter().enumerate() {
        let live_before = f.reads_flags() || (live_after[k] && !f.writes_flags());
        e.insn(k, &insns[k], *f, live_before, live_after[k]).ok()?;
        if let Some((start, mut next)) = e.helper_version.take() {
            e.label_here(&mut next).ok()?;
            helper_versions.push((k, start, next));
        }
    }
    let done = forms.len();
    if !matches!(forms.last(), Some(Form::Jcc { .. } | Form::Jmp)) {
        e.exit(EXIT_PREFIX, done).ok()?;
    }
    // Out of line: instructions whose inline read missed run again from their start
    // through the helpers only (nothing of them happened yet), then check for an end.
    e.helpers_only = true;
    for (k, mut start, next) in helper_versions {
        e.label_here(&mut start).ok()?;
        e.insn(k, &insns[k], forms[k], true, true).ok()?;
        e.a.jmp(next).ok()?;
    }
    let code = e.finish(ip).ok()?;
    Some(Compiled {
        code,
        self_loop,
        len: forms.len(),
    })
}

struct Emitter {
    a: CodeAssembler,
    epilogue: CodeLabel,
    /// Self-loop blocks: the label after the prologue and the instructions per iteration.
    back_edge: Option<(CodeLabel, i32)>,
    flat: u8,
    /// Emitting the out-of-line helper-only versions (no inline memory paths).
    helpers_only: bool,
    /// The current instruction's helper-only version (its start, and the label after
    /// the instruction's inline code), when an inline read's miss goes there.
    helper_version: Option<(CodeLabel, CodeLabel)>,
    /// (label, instruction index, exit kind) of the out-of-line exits.
    stubs: Vec<(CodeLabel, usize, u64)>,
}

fn gpr(r: u8) -> AsmMemoryOperand {
    qword_ptr(r12 + (r as i32 & 15) * 8)
}

macro_rules! sized {
    ($size:expr, $a:ident, $c:ident, $body:expr) => {
        match $size {
            1 => {
                let $a = al;
                let $c = cl;
                $body
            }
            2 => {
                let $a = ax;
                let $c = cx;
                $body
            }
            4 => {
                let $a = eax;
                let $c = ecx;
                $body
            }
            _ => {
                let $a = rax;
                let $c = rcx;
                $body
            }
        }
    };
}

/// `$f!(cc)` for an x86 condition code 0..15 (O, NO, B, AE, E, NE, BE, A, S, NS, P, NP,
/// L, GE, LE, G): picks the assembler method by name.
macro_rules! by_cc {
    ($cc:expr, $a:expr, $pre:ident, $($arg:expr),*) => {
        paste_cc!($cc, $a, $pre, $($arg),*)
    };
}

macro_rules! paste_cc {
    ($cc:expr, $a:expr, jcc, $($arg:expr),*) => {
        match $cc {
            0 => $a.jo($($arg),*), 1 => $a.jno($($arg),*), 2 => $a.jb($($arg),*),
            3 => $a.jae($($arg),*), 4 => $a.je($($arg),*), 5 => $a.jne($($arg),*),
            6 => $a.jbe($($arg),*), 7 => $a.ja($($arg),*), 8 => $a.js($($arg),*),
            9 => $a.jns($($arg),*), 10 => $a.jp($($arg),*), 11 => $a.jnp($($arg),*),
            12 => $a.jl($($arg),*), 13 => $a.jge($($arg),*), 14 => $a.jle($($arg),*),
            _ => $a.jg($($arg),*),
        }
    };
    ($cc:expr, $a:expr, setcc, $($arg:expr),*) => {
        match $cc {
            0 => $a.seto($($arg),*), 1 => $a.setno($($arg),*), 2 => $a.setb($($arg),*),
            3 => $a.setae($($arg),*), 4 => $a.sete($($arg),*), 5 => $a.setne($($arg),*),
            6 => $a.setbe($($arg),*), 7 => $a.seta($($arg),*), 8 => $a.sets($($arg),*),
            9 => $a.setns($($arg),*), 10 => $a.setp($($arg),*), 11 => $a.setnp($($arg),*),
            12 => $a.setl($($arg),*), 13 => $a.setge($($arg),*), 14 => $a.setle($($arg),*),
            _ => $a.setg($($arg),*),
        }
    };
    ($cc:expr, $a:expr, cmov, $($arg:expr),*) => {
        match $cc {
            0 => $a.cmovo($($arg),*), 1 => $a.cmovno($($arg),*), 2 => $a.cmovb($($arg),*),
            3 => $a.cmovae($($arg),*), 4 => $a.cmove($($arg),*), 5 => $a.cmovne($($arg),*),
            6 => $a.cmovbe($($arg),*), 7 => $a.cmova($($arg),*), 8 => $a.cmovs($($arg),*),
            9 => $a.cmovns($($arg),*), 10 => $a.cmovp($($arg),*), 11 => $a.cmovnp($($arg),*),
            12 => $a.cmovl($($arg),*), 13 => $a.cmovge($($arg),*), 14 => $a.cmovle($($arg),*),
            _ => $a.cmovg($($arg),*),
        }
    };
}

type R = Result<(), CompileError>;

impl Emitter {
    fn new(flat: u8) -> Result<Self, CompileError> {
        let mut a = CodeAssembler::new(64)?;
        let epilogue = a.create_label();
        Ok(Emitter {
            a,
            epilogue,
            back_edge: None,
            flat,
            helpers_only: false,
            helper_version: None,
            stubs: Vec::new(),
        })
    }

    fn prologue(&mut self) -> R {
        let a = &mut self.a;
        a.push(rbx)?;
        a.push(rbp)?;
        a.push(r12)?;
        a.push(r13)?;
        a.push(r14)?;
        a.push(r15)?;
        // Six pushes after the return address: realign to 16 for helper calls.
        a.sub(rsp, 8)?;
        a.mov(rbx, rdi)?;
        a.mov(r12, qword_ptr(rbx + OFF_GPR))?;
        a.mov(r13, qword_ptr(rbx + OFF_TLB))?;
        a.mov(r14, qword_ptr(rbx + OFF_RAM))?;
        a.mov(r15, qword_ptr(rbx + OFF_RAM_LEN))?;
        a.push(qword_ptr(rbx + OFF_FLAGS_IN))?;
        Ok(a.popfq()?)
    }

    fn finish(mut self, ip: u64) -> Result<Vec<u8>, CompileError> {
        let stubs = std::mem::take(&mut self.stubs);
        for (mut label, k, kind) in stubs {
            self.a.set_label(&mut label)?;
            self.exit(kind, k)?;
        }
        let a = &mut self.a;
        a.set_label(&mut self.epilogue)?;
        a.pushfq()?;
        a.pop(qword_ptr(rbx + OFF_FLAGS_OUT))?;
        a.add(rsp, 8)?;
        a.pop(r15)?;
        a.pop(r14)?;
        a.pop(r13)?;
        a.pop(r12)?;
        a.pop(rbp)?;
        a.pop(rbx)?;
        a.ret()?;
        Ok(a.assemble(ip)?)
    }

    /// The taken branch of a self-loop block: run the block again while `loop_left`
    /// allows (the run loop's budget, cleared by a helper that saw anything the run loop
    /// must look at), counting the finished iteration in `loop_retired`; else leave as
    /// taken. Only `lea`/`mov`/`jrcxz`: the guest flags in EFLAGS stay intact.
    fn back_edge(&mut self, k: usize) -> R {
        let taken = self.stub(k, EXIT_TAKEN);
        let Some((top, n)) = self.back_edge else {
            return Ok(self.a.jmp(taken)?);
        };
        let a = &mut self.a;
        a.mov(rcx, qword_ptr(rbx + OFF_LOOP_LEFT))?;
        a.jrcxz(taken)?;
        a.lea(rcx, qword_ptr(rcx - 1))?;
        a.mov(qword_ptr(rbx + OFF_LOOP_LEFT), rcx)?;
        a.mov(rcx, qword_ptr(rbx + OFF_LOOP_RETIRED))?;
        a.lea(rcx, qword_ptr(rcx + n))?;
        a.mov(qword_ptr(rbx + OFF_LOOP_RETIRED), rcx)?;
        Ok(a.jmp(top)?)
    }

    /// Leave through the epilogue with `kind`/`k` (EFLAGS untouched).
    fn exit(&mut self, kind: u64, k: usize) -> R {
        let a = &mut self.a;
        a.mov(qword_ptr(rbx + OFF_EXIT_K), k as i32)?;
        a.mov(qword_ptr(rbx + OFF_EXIT_KIND), kind as i32)?;
        Ok(a.jmp(self.epilogue)?)
    }

    fn stub(&mut self, k: usize, kind: u64) -> CodeLabel {
        if let Some(&(l, _, _)) = self.stubs.iter().find(|s| s.1 == k && s.2 == kind) {
            return l;
        }
        let l = self.a.create_label();
        self.stubs.push((l, k, kind));
        l
    }

    /// Call helper `f` with `arg` (and `rax` as the value when `with_value`); the result
    /// is in `rax`. EFLAGS are saved to `slot` first and restored after when `restore`.
    /// A fault leaves through instruction `k`'s fault exit.
    fn call(
        &mut self,
        f: native::HelperFn,
        arg: u64,
        with_value: bool,
        slot: i32,
        restore: bool,
        k: usize,
    ) -> R {
        self.a.pushfq()?;
        self.a.pop(qword_ptr(rbx + slot))?;
        self.call_saved(f, arg, with_value, slot, restore, k)
    }

    /// `call` with EFLAGS already saved in `slot`.
    fn call_saved(
        &mut self,
        f: native::HelperFn,
        arg: u64,
        with_value: bool,
        slot: i32,
        restore: bool,
        k: usize,
    ) -> R {
        let fault = self.stub(k, EXIT_FAULT);
        let a = &mut self.a;
        if with_value {
            a.mov(rdx, rax)?;
        }
        a.mov(rdi, rbx)?;
        a.mov(rsi, arg)?;
        a.mov(rax, f as usize as u64)?;
        a.call(rax)?;
        let mut ok = a.create_label();
        a.mov(rcx, qword_ptr(rbx + OFF_STATUS))?;
        a.jrcxz(ok)?;
        a.jmp(fault)?;
        a.set_label(&mut ok)?;
        if restore {
            a.push(qword_ptr(rbx + slot))?;
            a.popfq()?;
        }
        Ok(())
    }

    /// Bind `l` here (after any label already waiting for this position).
    fn label_here(&mut self, l: &mut CodeLabel) -> R {
        self.a.zero_bytes()?;
        Ok(self.a.set_label(l)?)
    }

    /// After a memory instruction: its helper calls are the inline paths' misses when it
    /// has them, which check for an end themselves.
    fn check_end_mem(&mut self, k: usize, i: &Insn, flags: Option<i32>) -> R {
        if self.inline_ok(i) {
            return Ok(());
        }
        self.check_end(k, flags)
    }

    /// After an instruction that called helpers: leave if one asked the block to end.
    /// `flags`: the slot holding the guest flags after the instruction when its last
    /// helper call may have left EFLAGS clobbered (not restored: dead in the block).
    fn check_end(&mut self, k: usize, flags: Option<i32>) -> R {
        let end = self.stub(k, EXIT_END);
        let a = &mut self.a;
        let mut next = a.create_label();
        a.mov(rcx, qword_ptr(rbx + OFF_END_BLOCK))?;
        a.jrcxz(next)?;
        if let Some(slot) = flags {
            a.push(qword_ptr(rbx + slot))?;
            a.popfq()?;
        }
        a.jmp(end)?;
        Ok(a.set_label(&mut next)?)
    }

    /// Store `rax` to guest register `d` with x86 write semantics for `size`.
    fn store_reg(&mut self, size: u8, d: u8) -> R {
        let a = &mut self.a;
        let at = r12 + (d as i32 & 15) * 8;
        match size {
            1 => a.mov(byte_ptr(at), al)?,
            2 => a.mov(word_ptr(at), ax)?,
            4 => {
                a.mov(eax, eax)?;
                a.mov(qword_ptr(at), rax)?
            }
            _ => a.mov(qword_ptr(at), rax)?,
        }
        Ok(())
    }

    fn alu_rc(&mut self, m: Mnemonic, size: u8) -> R {
        let a = &mut self.a;
        sized!(
            size,
            ra,
            rc,
            match m {
                Mnemonic::Add => a.add(ra, rc),
                Mnemonic::Or => a.or(ra, rc),
                Mnemonic::Adc => a.adc(ra, rc),
                Mnemonic::Sbb => a.sbb(ra, rc),
                Mnemonic::And => a.and(ra, rc),
                Mnemonic::Sub => a.sub(ra, rc),
                Mnemonic::Xor => a.xor(ra, rc),
                Mnemonic::Cmp => a.cmp(ra, rc),
                _ => a.test(ra, rc),
            }
        )?;
        Ok(())
    }

    fn alu_ri(&mut self, m: Mnemonic, size: u8, imm: i32) -> R {
        let a = &mut self.a;
        sized!(
            size,
            ra,
            _rc,
            match m {
                Mnemonic::Add => a.add(ra, imm),
                Mnemonic::Or => a.or(ra, imm),
                Mnemonic::Adc => a.adc(ra, imm),
                Mnemonic::Sbb => a.sbb(ra, imm),
                Mnemonic::And => a.and(ra, imm),
                Mnemonic::Sub => a.sub(ra, imm),
                Mnemonic::Xor => a.xor(ra, imm),
                Mnemonic::Cmp => a.cmp(ra, imm),
                _ => a.test(ra, imm),
            }
        )?;
        Ok(())
    }

    fn unary(&mut self, m: Mnemonic, size: u8) -> R {
        let a = &mut self.a;
        sized!(
            size,
            ra,
            _rc,
            match m {
                Mnemonic::Inc => a.inc(ra),
                Mnemonic::Dec => a.dec(ra),
                Mnemonic::Neg => a.neg(ra),
                _ => a.not(ra),
            }
        )?;
        Ok(())
    }

    /// Whether operand accesses of `i` may take the inline TLB hit path: a flat segment
    /// (the interpreter's flat memory forms: the offset is the linear address) and an
    /// address the host `lea` forms exactly (no RIP base, a 32-bit displacement).
    fn inline_ok(&self, i: &Insn) -> bool {
        let m = &i.mem;
        !self.helpers_only
            && self.flat & (1 << (m.seg & 7)) != 0
            && m.base != RIP_REG
            && (m.base == NO_REG || m.base < 16)
            && (m.index == NO_REG || m.index < 16)
            && m.scale <= 3
            && (m.ashift != 0 || i32::try_from(m.disp as i64).is_ok())
            && TLB_ENTRY_SIZE.is_some()
    }

    /// `rsi` = the effective address of `i`'s memory operand (as `Exec::ea`).
    fn emit_ea(&mut self, i: &Insn) -> R {
        let m = &i.mem;
        let a = &mut self.a;
        let disp = m.disp as u32 as i32;
        if m.base != NO_REG {
            a.mov(rsi, gpr(m.base))?;
        } else {
            a.xor(esi, esi)?;
        }
        if m.index != NO_REG {
            a.mov(rdx, gpr(m.index))?;
            a.lea(rsi, qword_ptr(rsi + rdx * (1i32 << m.scale) + disp))?;
        } else {
            a.lea(rsi, qword_ptr(rsi + disp))?;
        }
        match m.ashift {
            0 => {}
            32 => a.mov(esi, esi)?,
            48 => a.movzx(esi, si)?,
            _ => return Err(CompileError::Unsupported),
        }
        Ok(())
    }

    /// The TLB hit path (as `Exec::read_fast`/`write_fast`): `rdx` = the RAM offset of
    /// the `size` bytes at linear address `rsi`, or a jump to `slow` when the entry does
    /// not match, lacks the fast permission (`need`: the ctx field of the bit needed),
    /// the access crosses the page or leaves RAM. Clobbers EFLAGS, `rcx`, `rdx`.
    fn emit_tlb(&mut self, size: u8, need: i32, slow: CodeLabel) -> R {
        let esize = TLB_ENTRY_SIZE.ok_or(CompileError::Unsupported)?;
        let a = &mut self.a;
        a.mov(rdx, rsi)?;
        a.shr(rdx, 12)?;
        a.mov(ecx, edx)?;
        a.and(ecx, TLB_SIZE as i32 - 1)?;
        a.imul_3(ecx, ecx, esize)?;
        a.add(rcx, r13)?;
        a.cmp(rdx, qword_ptr(rcx + TLB_TAG))?;
        a.jne(slow)?;
        a.movzx(edx, byte_ptr(rbx + need))?;
        a.test(byte_ptr(rcx + TLB_FAST), dl)?;
        a.je(slow)?;
        a.mov(edx, esi)?;
        a.and(edx, 0xFFF)?;
        a.cmp(edx, 4096 - size as i32)?;
        a.ja(slow)?;
        a.add(rdx, qword_ptr(rcx + TLB_HOST))?;
        a.lea(rcx, qword_ptr(rdx + size as i32))?;
        a.cmp(rcx, r15)?;
        Ok(a.ja(slow)?)
    }

    /// `rax` = operand `n` (memory, `size` bytes) of instruction `k`, zero-extended.
    /// EFLAGS are saved in `slot` first and restored after when `restore`. The first
    /// thing instruction `k` does: a miss runs all of it out of line through helpers.
    fn mem_read(&mut self, k: usize, i: &Insn, n: u64, size: u8, slot: i32, restore: bool) -> R {
        let arg = k as u64 | (n << 8);
        if !self.inline_ok(i) {
            return self.call(native::read_op, arg, false, slot, restore, k);
        }
        let mut slow = self.a.create_label();
        let mut done = self.a.create_label();
        let start = self.a.create_label();
        let after = self.a.create_label();
        self.helper_version = Some((start, after));
        self.a.pushfq()?;
        self.a.pop(qword_ptr(rbx + slot))?;
        self.emit_ea(i)?;
        self.emit_tlb(size, OFF_NEED_R, slow)?;
        let a = &mut self.a;
        match size {
            1 => a.movzx(eax, byte_ptr(r14 + rdx))?,
            2 => a.movzx(eax, word_ptr(r14 + rdx))?,
            4 => a.mov(eax, dword_ptr(r14 + rdx))?,
            _ => a.mov(rax, qword_ptr(r14 + rdx))?,
        }
        a.jmp(done)?;
        a.set_label(&mut slow)?;
        // The guest flags as the instruction found them.
        a.push(qword_ptr(rbx + slot))?;
        a.popfq()?;
        a.jmp(start)?;
        self.label_here(&mut done)?;
        if restore {
            self.a.push(qword_ptr(rbx + slot))?;
            self.a.popfq()?;
        }
        Ok(())
    }

    /// Write `rax` to operand `n` (memory, `size` bytes) of instruction `k`, its last
    /// step. EFLAGS are saved in `slot` first and restored after when `restore`; a miss
    /// restores them and leaves if the helper asked the block to end.
    fn mem_write(&mut self, k: usize, i: &Insn, n: u64, size: u8, slot: i32, restore: bool) -> R {
        let arg = k as u64 | (n << 8);
        if !self.inline_ok(i) {
            return self.call(native::write_op, arg, true, slot, restore, k);
        }
        let mut slow = self.a.create_label();
        let mut done = self.a.create_label();
        self.a.pushfq()?;
        self.a.pop(qword_ptr(rbx + slot))?;
        self.emit_ea(i)?;
        self.emit_tlb(size, OFF_NEED_W, slow)?;
        let a = &mut self.a;
        match size {
            1 => a.mov(byte_ptr(r14 + rdx), al)?,
            2 => a.mov(word_ptr(r14 + rdx), ax)?,
            4 => a.mov(dword_ptr(r14 + rdx), eax)?,
            _ => a.mov(qword_ptr(r14 + rdx), rax)?,
        }
        if restore {
            a.push(qword_ptr(rbx + slot))?;
            a.popfq()?;
        }
        a.jmp(done)?;
        a.set_label(&mut slow)?;
        self.call_saved(native::write_op, arg, true, slot, true, k)?;
        self.check_end(k, None)?;
        self.label_here(&mut done)
    }

    fn insn(&mut self, k: usize, i: &Insn, f: Form, live_before: bool, live_after: bool) -> R {
        let arg = |n: u64| k as u64 | (n << 8);
        match f {
            Form::Alu { m, size, dst, src } => {
                let writes = !matches!(m, Mnemonic::Cmp | Mnemonic::Test);
                match dst {
                    Opd::Mem if writes && !self.inline_ok(i) => {
                        self.call(
                            native::rmw_read,
                            arg(0),
                            false,
                            OFF_FAULT_FLAGS,
                            live_before,
                            k,
                        )?;
                    }
                    Opd::Mem => self.mem_read(k, i, 0, size, OFF_FAULT_FLAGS, live_before)?,
                    Opd::Reg(r) => {
                        if src == Opd::Mem {
                            self.mem_read(k, i, 1, size, OFF_FAULT_FLAGS, live_before)?;
                            self.a.mov(rcx, rax)?;
                        }
                        self.a.mov(rax, gpr(r))?;
                    }
                    Opd::Imm(_) => unreachable_form()?,
                }
                match src {
                    Opd::Reg(s) => {
                        self.a.mov(rcx, gpr(s))?;
                        self.alu_rc(m, size)?;
                    }
                    Opd::Mem => self.alu_rc(m, size)?,
                    Opd::Imm(v) => self.alu_ri(m, size, v)?,
                }
                if writes {
                    match dst {
                        Opd::Reg(r) => self.store_reg(size, r)?,
                        _ if self.inline_ok(i) => {
                            self.mem_write(k, i, 0, size, OFF_TMP_FLAGS, live_after)?
                        }
                        _ => self.call(
                            native::rmw_write,
                            arg(0),
                            true,
                            OFF_TMP_FLAGS,
                            live_after,
                            k,
                        )?,
                    }
                }
                if dst == Opd::Mem || src == Opd::Mem {
                    let flags = (writes && dst == Opd::Mem).then_some(OFF_TMP_FLAGS);
                    self.check_end_mem(k, i, flags)?;
                }
            }
            Form::Unary { m, size, dst } => match dst {
                Opd::Reg(r) => {
                    self.a.mov(rax, gpr(r))?;
                    self.unary(m, size)?;
                    self.store_reg(size, r)?;
                }
                _ if self.inline_ok(i) => {
                    self.mem_read(k, i, 0, size, OFF_FAULT_FLAGS, live_before)?;
                    self.unary(m, size)?;
                    self.mem_write(k, i, 0, size, OFF_TMP_FLAGS, live_after)?;
                    self.check_end_mem(k, i, Some(OFF_TMP_FLAGS))?;
                }
                _ => {
                    self.call(
                        native::rmw_read,
                        arg(0),
                        false,
                        OFF_FAULT_FLAGS,
                        live_before,
                        k,
                    )?;
                    self.unary(m, size)?;
                    self.call(
                        native::rmw_write,
                        arg(0),
                        true,
                        OFF_TMP_FLAGS,
                        live_after,
                        k,
                    )?;
                    self.check_end(k, Some(OFF_TMP_FLAGS))?;
                }
            },
            Form::MovRR { size, d, s } => {
                self.a.mov(rax, gpr(s))?;
                self.store_reg(size, d)?;
            }
            Form::MovRI { size, d, imm } => {
                self.a.mov(rax, imm)?;
                self.store_reg(size, d)?;
            }
            Form::Extend {
                signed,
                dsize,
                ssize,
                d,
                s,
            } => {
                let a = &mut self.a;
                match (signed, ssize) {
                    (false, 1) => a.movzx(eax, byte_ptr(r12 + s as i32 * 8))?,
                    (false, _) => a.movzx(eax, word_ptr(r12 + s as i32 * 8))?,
                    (true, 1) => a.movsx(rax, byte_ptr(r12 + s as i32 * 8))?,
                    (true, 2) => a.movsx(rax, word_ptr(r12 + s as i32 * 8))?,
                    (true, _) => a.movsxd(rax, dword_ptr(r12 + s as i32 * 8))?,
                }
                self.store_reg(dsize, d)?;
            }
            Form::Setcc { cc, dst } => {
                by_cc!(cc, self.a, setcc, al)?;
                match dst {
                    Opd::Reg(r) => self.a.mov(byte_ptr(r12 + r as i32 * 8), al)?,
                    _ => {
                        self.a.movzx(eax, al)?;
                        self.mem_write(k, i, 0, 1, OFF_FAULT_FLAGS, live_after)?;
                        self.check_end_mem(k, i, Some(OFF_FAULT_FLAGS))?;
                    }
                }
            }
            Form::Cmov { cc, size, d, src } => {
                match src {
                    Opd::Reg(s) => self.a.mov(rcx, gpr(s))?,
                    _ => {
                        self.mem_read(k, i, 1, size, OFF_FAULT_FLAGS, true)?;
                        self.a.mov(rcx, rax)?;
                    }
                }
                self.a.mov(rax, gpr(d))?;
                let a = &mut self.a;
                match size {
                    2 => by_cc!(cc, a, cmov, ax, cx)?,
                    4 => by_cc!(cc, a, cmov, eax, ecx)?,
                    _ => by_cc!(cc, a, cmov, rax, rcx)?,
                }
                self.store_reg(size, d)?;
                if src == Opd::Mem {
                    self.check_end_mem(k, i, None)?;
                }
            }
            Form::Load { size, d } => {
                self.mem_read(k, i, 1, size, OFF_FAULT_FLAGS, live_after)?;
                self.store_reg(size, d)?;
                self.check_end_mem(k, i, Some(OFF_FAULT_FLAGS))?;
            }
            Form::Store { size, src } => {
                match src {
                    Opd::Reg(r) => self.a.mov(rax, gpr(r))?,
                    Opd::Imm(v) => self.a.mov(rax, v as i64)?,
                    Opd::Mem => return Err(CompileError::Unsupported),
                }
                self.mem_write(k, i, 0, size, OFF_FAULT_FLAGS, live_after)?;
                self.check_end_mem(k, i, Some(OFF_FAULT_FLAGS))?;
            }
            Form::Handler => {
                self.call(
                    native::handler,
                    arg(0),
                    false,
                    OFF_FAULT_FLAGS,
                    live_after,
                    k,
                )?;
                self.check_end(k, Some(OFF_FAULT_FLAGS))?;
            }
            Form::Jcc { cc } if self.back_edge.is_some() => {
                // Not taken leaves; taken falls through to the back edge.
                let not_taken = self.stub(k, EXIT_NOT_TAKEN);
                by_cc!(cc ^ 1, self.a, jcc, not_taken)?;
                self.back_edge(k)?;
            }
            Form::Jcc { cc } => {
                let taken = self.stub(k, EXIT_TAKEN);
                by_cc!(cc, self.a, jcc, taken)?;
                self.exit(EXIT_NOT_TAKEN, k)?;
            }
            Form::Jmp if self.back_edge.is_some() => self.back_edge(k)?,
            Form::Jmp => self.exit(EXIT_TAKEN, k)?,
        }
        Ok(())
    }
}

/// Where `TlbEntry` keeps what the inline hit path reads.
const TLB_TAG: i32 = std::mem::offset_of!(TlbEntry, tag) as i32;
const TLB_HOST: i32 = std::mem::offset_of!(TlbEntry, host) as i32;
const TLB_FAST: i32 = std::mem::offset_of!(TlbEntry, fast) as i32;
const TLB_ENTRY_SIZE: Option<i32> = {
    let s = std::mem::size_of::<TlbEntry>();
    if s <= 256 { Some(s as i32) } else { None }
};

/// Never reached: `classify` gives no immediate destination.
fn unreachable_form() -> R {
    Err(CompileError::Unsupported)
}

#[derive(Debug, thiserror::Error)]
enum CompileError {
    #[error("assembler: {0}")]
    Asm(#[from] IcedError),
    #[error("unsupported operand form")]
    Unsupported,
}
