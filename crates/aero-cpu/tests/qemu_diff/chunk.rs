//! Assembles one chunk: the cases of one mode plus the code that runs them and dumps
//! their results to the debug console.
//!
//! Per case (all addresses absolute, no base registers, so nothing depends on the
//! case's own register values): load scratch memory, FXRSTOR, switch to the case stack,
//! load RFLAGS and the GPRs, run the instruction, store the GPRs, switch back, store
//! RFLAGS, then `emit` writes the record. Exceptions go to per-vector stubs that note
//! vector, error code and faulting IP, and IRET to the case's "after" point.
//!
//! Stack cases (`stackgen.rs`) also start from their own stack window image, load their
//! SS:ESP right before the instruction (a `code16` one then far-jumps into a 16-bit code
//! segment pointed at its code, and back), store SS and give the harness its SS back.

use iced_x86::code_asm::*;
use iced_x86::{BlockEncoderOptions, Code, Instruction, MemoryOperand, Register, RepPrefixKind};

use super::case::{Case, Link, LinkValue, Mode};
use super::layout::*;

/// Addresses learned in the first assembly pass.
#[derive(Clone, Default)]
struct Addrs {
    after: Vec<u64>,
    stubs: Vec<u64>,
    rm_entry: u64,
    /// Start of each case's 16-bit code (stack cases with `code16`; 0 otherwise).
    code16: Vec<u64>,
}

/// Base of the 16-bit code segment a `code16` case runs in: its code's page, so IP
/// stays far from the 64 KiB wrap.
fn code16_base(start: u64) -> u64 {
    start & !0xFFF
}

/// The return point of case `k` as the instruction sees it, and its code selector.
fn link_value(c: &Case, k: usize, a: &Addrs, v: LinkValue) -> u64 {
    let code16 = c.stack.as_ref().is_some_and(|s| s.code16);
    match (v, code16) {
        (LinkValue::Ret, false) => a.after.get(k).copied().unwrap_or(0),
        (LinkValue::Ret, true) => {
            let start = a.code16.get(k).copied().unwrap_or(0);
            start - code16_base(start) + c.raw.as_ref().map_or(0, |r| r.len() as u64)
        }
        (LinkValue::Cs, false) => SEL_CODE32 as u64,
        (LinkValue::Cs, true) => SEL_CODE16_CASE as u64,
    }
}

/// `raw` with far-pointer immediates filled in.
fn linked_raw(c: &Case, k: usize, a: Option<&Addrs>) -> Vec<u8> {
    let mut raw = c.raw.clone().unwrap_or_default();
    if let (Some(st), Some(a)) = (&c.stack, a) {
        for l in &st.links {
            if let Link::FarImm { at, size } = *l {
                let off = link_value(c, k, a, LinkValue::Ret).to_le_bytes();
                let sel = link_value(c, k, a, LinkValue::Cs) as u16;
                let n = size as usize;
                raw[at..at + n].copy_from_slice(&off[..n]);
                raw[at + n..at + n + 2].copy_from_slice(&sel.to_le_bytes());
            }
        }
    }
    raw
}

pub struct Chunk {
    pub mode: Mode,
    pub bytes: Vec<u8>,
    /// Entry as the driver jumps to it: RM → offset in the 16-bit code segment,
    /// otherwise the absolute address.
    pub entry: u32,
    /// Case ids in run order.
    pub ids: Vec<u32>,
}

const HAS_ERROR_CODE: [u8; 8] = [8, 10, 11, 12, 13, 14, 17, 21];

pub fn build(mode: Mode, cases: &[&Case]) -> Result<Chunk, String> {
    let first = assemble(mode, cases, None).map_err(|e| e.to_string())?;
    let second = assemble(mode, cases, Some(&first.1)).map_err(|e| e.to_string())?;
    debug_assert_eq!(first.0.len(), second.0.len());
    let limit = if mode == Mode::Real {
        RM_MAX_CHUNK
    } else {
        PM_MAX_CHUNK
    };
    if second.0.len() > limit {
        return Err(format!("chunk too large: {} bytes", second.0.len()));
    }
    let (bytes, _addrs, entry) = second;
    Ok(Chunk {
        mode,
        bytes,
        entry,
        ids: cases.iter().map(|c| c.id).collect(),
    })
}

struct Layout {
    inputs: Vec<u64>,
    fx: Vec<Option<u64>>,
    code_off: u64,
}

fn data_layout(cases: &[&Case]) -> Layout {
    let mut off = C_INPUTS;
    let mut inputs = Vec::new();
    for _ in cases {
        inputs.push(off);
        off += IN_LEN;
    }
    let mut fx = Vec::new();
    for c in cases {
        if c.fx.is_some() {
            fx.push(Some(off));
            off += 512;
        } else {
            fx.push(None);
        }
    }
    Layout {
        inputs,
        fx,
        code_off: (off + 15) & !15,
    }
}

fn default_fx() -> [u8; 512] {
    let mut fx = [0u8; 512];
    fx[0..2].copy_from_slice(&0x037Fu16.to_le_bytes());
    fx[24..28].copy_from_slice(&0x1F80u32.to_le_bytes());
    fx
}

fn data_bytes(mode: Mode, cases: &[&Case], lay: &Layout, addrs: Option<&Addrs>) -> Vec<u8> {
    let base = chunk_code_base(mode);
    let mut d = vec![0u8; lay.code_off as usize];
    let magic = (C_OUT + OUT_MAGIC) as usize;
    d[magic..magic + 4].copy_from_slice(&RECORD_MAGIC.to_le_bytes());
    // IDT (real mode: IVT of seg:off) and its descriptor.
    let idt = C_IDT as usize;
    let (entry_len, limit) = match mode {
        Mode::Real => (4usize, 32 * 4 - 1),
        Mode::Prot32 => (8, 32 * 8 - 1),
        Mode::Long64 => (16, 32 * 16 - 1),
    };
    if let Some(a) = addrs {
        for (v, &stub) in a.stubs.iter().enumerate() {
            let e = &mut d[idt + v * entry_len..idt + (v + 1) * entry_len];
            match mode {
                Mode::Real => {
                    e[0..2].copy_from_slice(&(stub as u16).to_le_bytes());
                    e[2..4].copy_from_slice(&RM_SEG.to_le_bytes());
                }
                Mode::Prot32 | Mode::Long64 => {
                    let sel = if mode == Mode::Prot32 {
                        SEL_CODE32
                    } else {
                        SEL_CODE64
                    };
                    e[0..2].copy_from_slice(&(stub as u16).to_le_bytes());
                    e[2..4].copy_from_slice(&sel.to_le_bytes());
                    e[4] = 0;
                    e[5] = 0x8E; // present, DPL 0, interrupt gate
                    e[6..8].copy_from_slice(&((stub >> 16) as u16).to_le_bytes());
                    if mode == Mode::Long64 {
                        e[8..12].copy_from_slice(&((stub >> 32) as u32).to_le_bytes());
                    }
                }
            }
        }
    }
    let idt_linear = if mode == Mode::Real {
        RM_BASE + C_IDT
    } else {
        base + C_IDT
    };
    let r = C_IDTR as usize;
    d[r..r + 2].copy_from_slice(&(limit as u16).to_le_bytes());
    d[r + 2..r + 10].copy_from_slice(&idt_linear.to_le_bytes());
    d[C_DEFAULT_FX as usize..C_DEFAULT_FX as usize + 512].copy_from_slice(&default_fx());
    let harness_ss = if mode == Mode::Real {
        RM_STACK_SEG
    } else {
        SEL_DATA32
    };
    d[C_HARNESS_SS as usize..C_HARNESS_SS as usize + 2].copy_from_slice(&harness_ss.to_le_bytes());
    for (i, c) in cases.iter().enumerate() {
        let o = lay.inputs[i] as usize;
        d[o..o + 8].copy_from_slice(&c.rflags.to_le_bytes());
        for (g, v) in c.gpr.iter().enumerate() {
            let p = o + IN_GPR as usize + g * 8;
            d[p..p + 8].copy_from_slice(&v.to_le_bytes());
        }
        let m = o + IN_MEM as usize;
        d[m..m + SCRATCH_LEN].copy_from_slice(&c.mem);
        if let Some(st) = &c.stack {
            let w = o + IN_STACK as usize;
            d[w..w + STACK_LEN].copy_from_slice(&st.window);
            d[o + IN_SS as usize..o + IN_SS as usize + 2].copy_from_slice(&st.ss.to_le_bytes());
            d[o + IN_ESP as usize..o + IN_ESP as usize + 8].copy_from_slice(&st.esp.to_le_bytes());
            if let Some(a) = addrs {
                for l in &st.links {
                    let (at, size, v) = match *l {
                        Link::Window { at, size, value } => (w + at, size as usize, value),
                        Link::Scratch { at, size, value } => (m + at, size as usize, value),
                        Link::Gpr { reg, value } => (o + IN_GPR as usize + 8 * reg, 8, value),
                        Link::FarImm { .. } => continue,
                    };
                    let bytes = link_value(c, i, a, v).to_le_bytes();
                    d[at..at + size].copy_from_slice(&bytes[..size]);
                }
            }
        }
        if let (Some(fx), Some(off)) = (&c.fx, lay.fx[i]) {
            d[off as usize..off as usize + 512].copy_from_slice(&fx[..]);
        }
    }
    d
}

fn assemble(
    mode: Mode,
    cases: &[&Case],
    addrs: Option<&Addrs>,
) -> Result<(Vec<u8>, Addrs, u32), IcedError> {
    let lay = data_layout(cases);
    let cb = chunk_code_base(mode);
    let bits = mode.bitness();
    let mut a = CodeAssembler::new(bits)?;
    let at = |off: u64| cb + off;
    let got = |f: &dyn Fn(&Addrs) -> u64| addrs.map(f).unwrap_or(0);
    let (case_sp, harness_sp_store) = match mode {
        Mode::Real => (RM_CASE_SP, at(C_HARNESS_SP)),
        _ => (PM_CASE_SP, at(C_HARNESS_SP)),
    };

    // ---- entry ----
    let mut rm_entry = a.create_label();
    match mode {
        Mode::Real => {
            // Entered in 16-bit protected mode (CS = SEL_CODE16, base RM_BASE).
            a.mov(ax, SEL_DATA16 as u32)?;
            for s in [ds, es, fs, gs, ss] {
                a.mov(s, ax)?;
            }
            a.mov(eax, cr0)?;
            a.and(eax, 0xFFFF_FFFEu32 as i32)?;
            a.mov(cr0, eax)?;
            a.add_instruction(Instruction::with_far_branch(
                Code::Jmp_ptr1616,
                RM_SEG,
                got(&|x| x.rm_entry) as u32,
            )?)?;
            a.set_label(&mut rm_entry)?;
            a.mov(ax, RM_SEG as u32)?;
            for s in [ds, es, fs, gs] {
                a.mov(s, ax)?;
            }
            a.mov(ax, RM_STACK_SEG as u32)?;
            a.mov(ss, ax)?;
            a.mov(esp, RM_HARNESS_SP as u32)?;
        }
        Mode::Prot32 => a.nop()?,
        Mode::Long64 => {
            // Long mode upper halves are undefined after the switch: reload RSP zero-extended.
            a.mov(esp, dword_ptr(IMAGE_BASE + VAR_SAVED_ESP as u64))?;
        }
    }
    a.mov(dword_ptr(at(C_START)), ebx)?;
    a.lidt(ptr(at(C_IDTR)))?;

    // ---- cases ----
    let mut emit = a.create_label();
    let mut after_labels = Vec::new();
    let mut code16_labels = Vec::new();
    for (k, c) in cases.iter().enumerate() {
        let mut next = a.create_label();
        let mut after = a.create_label();
        a.cmp(dword_ptr(at(C_START)), k as u32)?;
        a.ja(next)?;
        // ES/FS/GS may have been changed by the previous case (ES is used right below).
        let data_sel = if mode == Mode::Real {
            RM_SEG
        } else {
            SEL_DATA32
        };
        a.mov(ax, data_sel as u32)?;
        for s in [es, fs, gs] {
            a.mov(s, ax)?;
        }
        a.mov(dword_ptr(at(C_OUT + OUT_ID)), c.id)?;
        a.mov(dword_ptr(at(C_OUT + OUT_HAS_FX)), c.fx.is_some() as u32)?;
        a.mov(dword_ptr(at(C_OUT + OUT_EXC_VEC)), u32::MAX)?;
        for off in [OUT_EXC_ERR, OUT_EXC_ERR + 4, OUT_EXC_IP, OUT_EXC_IP + 4] {
            a.mov(dword_ptr(at(C_OUT + off)), 0u32)?;
        }
        let after_ptr = addrs.map_or(0, |x| link_value(c, k, x, LinkValue::Ret));
        a.mov(dword_ptr(at(C_AFTER_PTR)), after_ptr as u32)?;
        let stack = c.stack.as_deref();
        let code16 = stack.is_some_and(|s| s.code16);
        if code16 {
            // Point the case's 16-bit code segment at the page of its code.
            let base = code16_base(got(&|x| x.code16[k]));
            let lo = 0xFFFF | ((base & 0xFFFF) << 16);
            let hi = ((base >> 16) & 0xFF) | (0x9B << 8) | (base & 0xFF00_0000);
            let gdt = IMAGE_BASE + GDT as u64 + SEL_CODE16_CASE as u64;
            a.mov(dword_ptr(gdt), lo as u32)?;
            a.mov(dword_ptr(gdt + 4), hi as u32)?;
        }
        // Scratch memory from the input block.
        a.cld()?;
        a.mov(esi, at(lay.inputs[k] + IN_MEM) as u32)?;
        a.mov(edi, at(C_SCRATCH) as u32)?;
        a.mov(ecx, (SCRATCH_LEN / 4) as u32)?;
        if mode == Mode::Long64 {
            a.rep().movsd()?;
        } else {
            a.add_instruction(Instruction::with_movsd(
                bits,
                Register::None,
                RepPrefixKind::Repe,
            )?)?;
        }
        // The dumped stack window starts from the case's image (zeros unless it is a stack
        // case), so one case's leftovers never show up in the next.
        let case_sp_window = case_sp - STACK_BELOW;
        if mode == Mode::Real {
            a.push(es)?;
            a.push(RM_STACK_SEG as i32)?;
            a.pop(es)?;
        }
        a.mov(esi, at(lay.inputs[k] + IN_STACK) as u32)?;
        a.mov(edi, case_sp_window as u32)?;
        a.mov(ecx, (STACK_LEN / 4) as u32)?;
        if mode == Mode::Long64 {
            a.rep().movsd()?;
        } else {
            a.add_instruction(Instruction::with_movsd(
                bits,
                Register::None,
                RepPrefixKind::Repe,
            )?)?;
        }
        if mode == Mode::Real {
            a.pop(es)?;
        }
        let fx = lay.fx[k].unwrap_or(C_DEFAULT_FX);
        a.fxrstor(ptr(at(fx)))?;
        // Case stack, flags, registers.
        if mode == Mode::Long64 {
            // Flags go through the harness stack: the case's window stays as given.
            a.mov(qword_ptr(harness_sp_store), rsp)?;
            a.push(qword_ptr(at(lay.inputs[k] + IN_FLAGS)))?;
            a.popfq()?;
            a.mov(esp, case_sp as u32)?;
            for (i, r) in GPR64.iter().enumerate() {
                if i != 4 {
                    a.mov(*r, qword_ptr(at(lay.inputs[k] + IN_GPR + 8 * i as u64)))?;
                }
            }
        } else {
            a.mov(dword_ptr(harness_sp_store), esp)?;
            a.push(dword_ptr(at(lay.inputs[k] + IN_FLAGS)))?;
            a.popfd()?;
            a.mov(esp, case_sp as u32)?;
            for (i, r) in GPR32.iter().enumerate() {
                if i != 4 {
                    a.mov(*r, dword_ptr(at(lay.inputs[k] + IN_GPR + 8 * i as u64)))?;
                }
            }
        }
        let mut start16 = a.create_label();
        if stack.is_some() {
            // MOV SS blocks interrupts for one instruction: the next one sets ESP.
            a.mov(ss, word_ptr(at(lay.inputs[k] + IN_SS)))?;
            a.mov(esp, dword_ptr(at(lay.inputs[k] + IN_ESP)))?;
        }
        if code16 {
            let start = got(&|x| x.code16[k]);
            a.add_instruction(Instruction::with_far_branch(
                Code::Jmp_ptr1632,
                SEL_CODE16_CASE,
                (start - code16_base(start)) as u32,
            )?)?;
            a.set_label(&mut start16)?;
            a.db(&linked_raw(c, k, addrs))?;
            // Back to 32-bit code: JMP FAR ptr16:32 with an operand-size prefix.
            let back = got(&|x| x.after[k]) as u32;
            let mut jmp = vec![0x66, 0xEA];
            jmp.extend_from_slice(&back.to_le_bytes());
            jmp.extend_from_slice(&SEL_CODE32.to_le_bytes());
            a.db(&jmp)?;
        } else {
            match &c.raw {
                Some(_) => a.db(&linked_raw(c, k, addrs))?,
                None => a.add_instruction(c.insn)?,
            }
        }
        a.set_label(&mut after)?;
        after_labels.push(after);
        code16_labels.push(code16.then_some(start16));
        if mode == Mode::Long64 {
            for (i, r) in GPR64.iter().enumerate() {
                a.mov(qword_ptr(at(C_OUT + OUT_GPR + 8 * i as u64)), *r)?;
            }
            a.mov(word_ptr(at(C_OUT + OUT_SEGS + 4)), ss)?;
            a.mov(rsp, qword_ptr(harness_sp_store))?;
            a.pushfq()?;
            a.pop(qword_ptr(at(C_OUT + OUT_FLAGS)))?;
        } else {
            for (i, r) in GPR32.iter().enumerate() {
                a.mov(dword_ptr(at(C_OUT + OUT_GPR + 8 * i as u64)), *r)?;
            }
            a.mov(word_ptr(at(C_OUT + OUT_SEGS + 4)), ss)?;
            if stack.is_some() {
                a.mov(ss, word_ptr(at(C_HARNESS_SS)))?;
            }
            a.mov(esp, dword_ptr(harness_sp_store))?;
            a.pushfd()?;
            a.pop(dword_ptr(at(C_OUT + OUT_FLAGS)))?;
        }
        a.call(emit)?;
        a.set_label(&mut next)?;
    }

    // ---- exit ----
    match mode {
        Mode::Real => {
            a.cli()?;
            a.mov(eax, cr0)?;
            a.or(eax, 1)?;
            a.mov(cr0, eax)?;
            a.add_instruction(Instruction::with1(
                Code::Jmp_m1632,
                MemoryOperand::with_displ(C_RET_FAR, 2),
            )?)?;
        }
        Mode::Prot32 => a.ret()?,
        Mode::Long64 => {
            a.push(SEL_CODE32 as i32)?;
            a.push(qword_ptr(IMAGE_BASE + VAR_RET_LM as u64))?;
            a.add_instruction(Instruction::with(Code::Retfq))?;
        }
    }

    // ---- exception stubs ----
    let mut stub_labels = Vec::new();
    for v in 0u8..32 {
        let mut l = a.create_label();
        a.set_label(&mut l)?;
        stub_labels.push(l);
        let err = mode != Mode::Real && HAS_ERROR_CODE.contains(&v);
        match mode {
            Mode::Real => {
                a.mov(dword_ptr(at(C_OUT + OUT_EXC_VEC)), v as u32)?;
                a.pop(word_ptr(at(C_OUT + OUT_EXC_IP)))?;
                a.push(word_ptr(at(C_AFTER_PTR)))?;
                a.iret()?;
            }
            Mode::Prot32 => {
                if err {
                    a.pop(dword_ptr(at(C_OUT + OUT_EXC_ERR)))?;
                }
                a.mov(dword_ptr(at(C_OUT + OUT_EXC_VEC)), v as u32)?;
                a.pop(dword_ptr(at(C_OUT + OUT_EXC_IP)))?;
                a.push(dword_ptr(at(C_AFTER_PTR)))?;
                a.iretd()?;
            }
            Mode::Long64 => {
                if err {
                    a.pop(qword_ptr(at(C_OUT + OUT_EXC_ERR)))?;
                }
                a.mov(dword_ptr(at(C_OUT + OUT_EXC_VEC)), v as u32)?;
                a.pop(qword_ptr(at(C_OUT + OUT_EXC_IP)))?;
                a.push(qword_ptr(at(C_AFTER_PTR)))?;
                a.iretq()?;
            }
        }
    }

    // ---- emit: write the record to the debug console ----
    a.set_label(&mut emit)?;
    emit_body(&mut a, mode, at)?;

    let ip = cb + lay.code_off;
    let result = a.assemble_options(ip, BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS)?;
    let mut out = Addrs::default();
    for l in &after_labels {
        out.after.push(result.label_ip(l)?);
    }
    for l in &code16_labels {
        out.code16.push(match l {
            Some(l) => result.label_ip(l)?,
            None => 0,
        });
    }
    for l in &stub_labels {
        out.stubs.push(result.label_ip(l)?);
    }
    if mode == Mode::Real {
        out.rm_entry = result.label_ip(&rm_entry)?;
    }
    let code = result.inner.code_buffer;
    let entry = if mode == Mode::Real {
        lay.code_off as u32
    } else {
        ip as u32
    };
    let mut bytes = data_bytes(mode, cases, &lay, addrs);
    bytes.extend_from_slice(&code);
    Ok((bytes, out, entry))
}

fn emit_body(a: &mut CodeAssembler, mode: Mode, at: impl Fn(u64) -> u64) -> Result<(), IcedError> {
    let bits = mode.bitness();
    a.cld()?;
    // SS is stored by the case itself, before a stack case gives the harness's back.
    for (i, s) in [es, cs, ss, ds, fs, gs].into_iter().enumerate() {
        if i != 2 {
            a.mov(word_ptr(at(C_OUT + OUT_SEGS + 2 * i as u64)), s)?;
        }
    }
    a.fxsave(ptr(at(C_OUT_FX)))?;
    a.mov(edx, DEBUGCON_PORT as u32)?;
    let outs = |a: &mut CodeAssembler, seg: Register| -> Result<(), IcedError> {
        a.add_instruction(Instruction::with_outsb(bits, seg, RepPrefixKind::Repe)?)
    };
    a.mov(esi, at(C_OUT) as u32)?;
    a.mov(ecx, OUT_LEN as u32)?;
    outs(a, Register::None)?;
    let mut skip = a.create_label();
    a.cmp(dword_ptr(at(C_OUT + OUT_HAS_FX)), 0)?;
    a.je(skip)?;
    a.mov(esi, at(C_OUT_FX) as u32)?;
    a.mov(ecx, 512u32)?;
    outs(a, Register::None)?;
    a.set_label(&mut skip)?;
    a.mov(esi, at(C_SCRATCH) as u32)?;
    a.mov(ecx, SCRATCH_LEN as u32)?;
    outs(a, Register::None)?;
    let (case_sp, stack_seg) = match mode {
        Mode::Real => (RM_CASE_SP, Register::SS),
        _ => (PM_CASE_SP, Register::None),
    };
    a.mov(esi, (case_sp - STACK_BELOW) as u32)?;
    a.mov(ecx, STACK_LEN as u32)?;
    outs(a, stack_seg)?;
    a.ret()?;
    Ok(())
}

const GPR32: [AsmRegister32; 8] = [eax, ecx, edx, ebx, esp, ebp, esi, edi];
const GPR64: [AsmRegister64; 16] = [
    rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8, r9, r10, r11, r12, r13, r14, r15,
];
