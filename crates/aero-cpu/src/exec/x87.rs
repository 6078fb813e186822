//! x87 instructions (opcodes D8-DF): loads, stores, arithmetic, compares and the
//! transcendental group. Control and state instructions (FNINIT, FLDCW, FNSTENV,
//! FXSAVE, WAIT...) are in `x87_env.rs`. The arithmetic itself is `crate::fpu`.
//!
//! Every waiting instruction first checks #NM (CR0.EM/TS) and a pending unmasked
//! exception (#MF when CR0.NE=1; with NE=0 the legacy FERR#/IRQ13 path is not modelled
//! and execution continues as if IGNNE# were asserted). Stack faults, masked responses
//! and "do not store on unmasked #I/#D/#Z" are handled by `X87State`.

use super::{Exec, Handler, Insn, K_MEM};
use crate::fault::{Fault, MF, XResult};
use crate::fpu::transcend::{self, Constant};
use crate::fpu::{Compare, Dest, F80, FpResult, X87State, arith, convert};
use crate::mmu::{CR0_EM, CR0_NE, CR0_TS};
use iced_x86::{Instruction, Mnemonic, Register};

pub fn lookup(ins: &Instruction) -> Option<Handler> {
    use Mnemonic::*;
    Some(match ins.mnemonic() {
        Fld => fld,
        Fild => fild,
        Fbld => fbld,
        Fld1 | Fldz | Fldpi | Fldl2e | Fldl2t | Fldlg2 | Fldln2 => fld_const,
        Fst | Fstp => fst,
        Fist | Fistp | Fisttp => fist,
        Fbstp => fbstp,
        Fxch => fxch,
        Fcmovb | Fcmove | Fcmovbe | Fcmovu | Fcmovnb | Fcmovne | Fcmovnbe | Fcmovnu => fcmov,
        Fadd | Faddp | Fiadd | Fsub | Fsubp | Fisub | Fsubr | Fsubrp | Fisubr | Fmul | Fmulp
        | Fimul | Fdiv | Fdivp | Fidiv | Fdivr | Fdivrp | Fidivr => farith,
        Fchs | Fabs => fsign,
        Fsqrt | Frndint | F2xm1 | Fsin | Fcos => unary,
        Fsincos | Fptan | Fxtract => push_two,
        Fpatan | Fyl2x | Fyl2xp1 => binary_pop,
        Fscale => fscale,
        Fprem | Fprem1 => fprem,
        Fcom | Fcomp | Fcompp | Fucom | Fucomp | Fucompp | Ficom | Ficomp | Ftst => fcom,
        Fcomi | Fcomip | Fucomi | Fucomip => fcomi,
        Fxam => fxam,
        _ => return super::x87_env::lookup(ins),
    })
}

// ---- shared plumbing ---------------------------------------------------------------------

/// #NM when the FPU is emulated (CR0.EM) or its state belongs to another task (CR0.TS).
pub(super) fn check_nm(ex: &Exec<'_>) -> XResult {
    if ex.s.cr0 & (CR0_EM | CR0_TS) != 0 {
        return Err(Fault::nm());
    }
    Ok(())
}

/// Checks made by every waiting x87 (and MMX) instruction.
pub(super) fn check_waiting(ex: &Exec<'_>) -> XResult {
    check_nm(ex)?;
    if ex.c.fpu.exception_pending() && ex.s.cr0 & CR0_NE != 0 {
        return Err(Fault::new(MF));
    }
    Ok(())
}

/// The 11-bit FOP: low three bits of the D8-DF opcode and the ModRM byte, read back
/// from the code stream (prefixes skipped).
fn fop_of(ex: &mut Exec<'_>, rip: u64) -> u16 {
    let base = ex.s.seg[1].base.wrapping_add(rip);
    let mut k = 0;
    while k < 14 {
        let lin = base.wrapping_add(k) & ex.c.lin_mask;
        let Ok(b) = ex.read_lin::<1>(lin) else {
            return 0;
        };
        if (0xD8..=0xDF).contains(&b) {
            let modrm = ex
                .read_lin::<1>(base.wrapping_add(k + 1) & ex.c.lin_mask)
                .unwrap_or(0);
            return (((b & 7) << 8) | modrm) as u16;
        }
        k += 1;
    }
    0
}

/// Records FIP/FCS (and FDP/FDS for memory operands) after a non-control instruction.
/// As on Pentium 4 and later (FOP compatibility mode off), FOP is only updated when the
/// instruction left an unmasked exception pending, which also keeps the code-stream read
/// off the common path.
pub(super) fn record(ex: &mut Exec<'_>, i: &Insn) {
    let rip = ex.rip_of(i);
    let fop = if ex.c.fpu.exception_pending() {
        fop_of(ex, rip)
    } else {
        ex.c.fpu.fop
    };
    let mem = mem_index(i).map(|_| (ex.ea(i), ex.s.seg[i.mem.seg as usize % 6].selector));
    let cs = ex.s.seg[1].selector;
    ex.c.fpu.record_instruction(rip, cs, fop, mem);
}

pub(super) fn mem_index(i: &Insn) -> Option<usize> {
    (0..3).find(|&n| i.ops[n].kind == K_MEM)
}

/// Stack index of an ST(i) register operand.
fn st_reg(i: &Insn, n: u32) -> usize {
    let r = i.raw.op_register(n);
    if (Register::ST0..=Register::ST7).contains(&r) {
        r as usize - Register::ST0 as usize
    } else {
        0
    }
}

fn ie_masked(fpu: &X87State) -> bool {
    fpu.masks() & crate::fpu::softfloat::IE != 0
}

/// Reads a memory operand as F80: integers (`integer`), f32/f64/f80 otherwise.
/// Returns the value and the conversion's flags (#IA for SNaN, #D for denormals).
fn load_mem(ex: &mut Exec<'_>, i: &Insn, n: usize, integer: bool) -> XResult<(F80, u8)> {
    let off = ex.ea(i);
    let seg = i.mem.seg;
    let size = i.ops[n].size;
    if size == 10 {
        let mut b = [0u8; 10];
        ex.read_bytes(seg, off, &mut b)?;
        return Ok((F80::from_le_bytes(b), 0));
    }
    let raw = ex.read_mem(seg, off, size)?;
    Ok(match (integer, size) {
        (true, 2) => (convert::from_i64(raw as u16 as i16 as i64), 0),
        (true, 4) => (convert::from_i64(raw as u32 as i32 as i64), 0),
        (true, _) => (convert::from_i64(raw as i64), 0),
        (false, 4) => convert::f32_to_f80(raw as u32),
        (false, _) => convert::f64_to_f80(raw),
    })
}

/// Pushes a loaded value: stack overflow first (#IS), then the load's own exceptions.
fn push_loaded(fpu: &mut X87State, v: F80, flags: u8) {
    if !fpu.is_empty(7) {
        fpu.push(v);
        return;
    }
    if fpu.commit_flags(flags, false, Dest::Register) {
        fpu.push(v);
    }
}

/// Masked stack-underflow response for a register destination; returns true when the
/// instruction must stop (always: either the indefinite was written or it is unmasked).
fn underflow_into(fpu: &mut X87State, dst: usize) {
    fpu.stack_fault(false);
    if ie_masked(fpu) {
        fpu.set_st(dst, F80::INDEFINITE);
    }
}

// ---- loads and stores -------------------------------------------------------------------

fn fld(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let (v, flags) = if let Some(n) = mem_index(i) {
        load_mem(ex, i, n, false)?
    } else {
        let k = st_reg(i, 0);
        if ex.c.fpu.is_empty(k) {
            ex.c.fpu.stack_fault(false);
            if !ie_masked(&ex.c.fpu) {
                record(ex, i);
                return Ok(());
            }
            (F80::INDEFINITE, 0)
        } else {
            (ex.c.fpu.st(k), 0)
        }
    };
    push_loaded(&mut ex.c.fpu, v, flags);
    record(ex, i);
    Ok(())
}

fn fild(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let n = mem_index(i).ok_or(Fault::ud())?;
    let (v, _) = load_mem(ex, i, n, true)?;
    push_loaded(&mut ex.c.fpu, v, 0);
    record(ex, i);
    Ok(())
}

fn fbld(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let mut b = [0u8; 10];
    let off = ex.ea(i);
    ex.read_bytes(i.mem.seg, off, &mut b)?;
    push_loaded(&mut ex.c.fpu, convert::from_bcd(b), 0);
    record(ex, i);
    Ok(())
}

fn fld_const(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let env = ex.c.fpu.env();
    let v = match i.raw.mnemonic() {
        Mnemonic::Fld1 => F80::ONE,
        Mnemonic::Fldz => F80::ZERO,
        Mnemonic::Fldpi => transcend::load_constant(Constant::Pi, &env),
        Mnemonic::Fldl2e => transcend::load_constant(Constant::Log2E, &env),
        Mnemonic::Fldl2t => transcend::load_constant(Constant::Log2Ten, &env),
        Mnemonic::Fldlg2 => transcend::load_constant(Constant::Log10Two, &env),
        _ => transcend::load_constant(Constant::Ln2, &env),
    };
    push_loaded(&mut ex.c.fpu, v, 0);
    record(ex, i);
    Ok(())
}

/// FST/FSTP to memory (m32/m64/m80) or ST(i).
fn fst(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let pop = i.raw.mnemonic() == Mnemonic::Fstp;
    let mem = mem_index(i);
    let empty = ex.c.fpu.is_empty(0);
    let env = ex.c.fpu.env();
    let v = if empty {
        F80::INDEFINITE
    } else {
        ex.c.fpu.st(0)
    };
    if empty && !ie_masked(&ex.c.fpu) {
        ex.c.fpu.stack_fault(false);
        record(ex, i);
        return Ok(());
    }
    let stored = match mem {
        Some(n) => {
            let (off, seg, size) = (ex.ea(i), i.mem.seg, i.ops[n].size);
            let (bits, flags, c1) = match size {
                4 => {
                    let (b, f, c) = convert::f80_to_f32(v, &env);
                    (b as u64, f, c)
                }
                8 => convert::f80_to_f64(v, &env),
                _ => (0, 0, false),
            };
            let store = ex.c.fpu.store_allowed(flags, Dest::Memory);
            if store {
                if size == 10 {
                    ex.write_bytes(seg, off, &v.to_le_bytes())?;
                } else {
                    ex.write_mem(seg, off, size, bits)?;
                }
            }
            if empty {
                ex.c.fpu.stack_fault(false);
                true
            } else {
                ex.c.fpu.commit_flags(flags, c1, Dest::Memory)
            }
        }
        None => {
            let k = st_reg(i, 0);
            ex.c.fpu.set_st(k, v);
            if empty {
                ex.c.fpu.stack_fault(false);
            } else {
                ex.c.fpu.set_c1(false);
            }
            true
        }
    };
    if stored && pop {
        ex.c.fpu.pop();
    }
    record(ex, i);
    Ok(())
}

/// FIST/FISTP/FISTTP m16/m32/m64.
fn fist(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let m = i.raw.mnemonic();
    let pop = m != Mnemonic::Fist;
    let n = mem_index(i).ok_or(Fault::ud())?;
    let (off, seg, size) = (ex.ea(i), i.mem.seg, i.ops[n].size);
    let empty = ex.c.fpu.is_empty(0);
    if empty && !ie_masked(&ex.c.fpu) {
        ex.c.fpu.stack_fault(false);
        record(ex, i);
        return Ok(());
    }
    let bits = size as u32 * 8;
    let (value, flags, c1) = if empty {
        (convert::integer_indefinite(bits), 0, false)
    } else {
        convert::to_int(ex.c.fpu.st(0), &ex.c.fpu.env(), bits, m == Mnemonic::Fisttp)
    };
    if ex.c.fpu.store_allowed(flags, Dest::Memory) {
        ex.write_mem(seg, off, size, value as u64)?;
    }
    let stored = if empty {
        ex.c.fpu.stack_fault(false);
        true
    } else {
        ex.c.fpu.commit_flags(flags, c1, Dest::Memory)
    };
    if stored && pop {
        ex.c.fpu.pop();
    }
    record(ex, i);
    Ok(())
}

fn fbstp(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let off = ex.ea(i);
    let empty = ex.c.fpu.is_empty(0);
    if empty && !ie_masked(&ex.c.fpu) {
        ex.c.fpu.stack_fault(false);
        record(ex, i);
        return Ok(());
    }
    let (bytes, flags, c1) = if empty {
        (convert::BCD_INDEFINITE, 0, false)
    } else {
        convert::to_bcd(ex.c.fpu.st(0), &ex.c.fpu.env())
    };
    if ex.c.fpu.store_allowed(flags, Dest::Memory) {
        ex.write_bytes(i.mem.seg, off, &bytes)?;
    }
    let stored = if empty {
        ex.c.fpu.stack_fault(false);
        true
    } else {
        ex.c.fpu.commit_flags(flags, c1, Dest::Memory)
    };
    if stored {
        ex.c.fpu.pop();
    }
    record(ex, i);
    Ok(())
}

fn fxch(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let k = if i.raw.op_count() >= 2 {
        st_reg(i, 1)
    } else {
        1
    };
    let fpu = &mut ex.c.fpu;
    if fpu.is_empty(0) || fpu.is_empty(k) {
        fpu.stack_fault(false);
        if !ie_masked(fpu) {
            record(ex, i);
            return Ok(());
        }
        for r in [0, k] {
            if fpu.is_empty(r) {
                fpu.set_st(r, F80::INDEFINITE);
            }
        }
    } else {
        fpu.set_c1(false);
    }
    let (a, b) = (fpu.st(0), fpu.st(k));
    fpu.set_st(0, b);
    fpu.set_st(k, a);
    record(ex, i);
    Ok(())
}

fn fcmov(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    use Mnemonic::*;
    // Condition codes in the interpreter's numbering (0 = O ... 15 = G).
    let cc = match i.raw.mnemonic() {
        Fcmovb => 2,
        Fcmovnb => 3,
        Fcmove => 4,
        Fcmovne => 5,
        Fcmovbe => 6,
        Fcmovnbe => 7,
        Fcmovu => 10,
        _ => 11,
    };
    let take = ex.cond(cc);
    let k = st_reg(i, 1);
    let fpu = &mut ex.c.fpu;
    if fpu.is_empty(0) || fpu.is_empty(k) {
        underflow_into(fpu, 0);
    } else {
        fpu.set_c1(false);
        if take {
            let v = fpu.st(k);
            fpu.set_st(0, v);
        }
    }
    record(ex, i);
    Ok(())
}

// ---- arithmetic ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum ArithOp {
    Add,
    Sub,
    SubR,
    Mul,
    Div,
    DivR,
}

fn farith(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    use Mnemonic::*;
    let m = i.raw.mnemonic();
    let op = match m {
        Fadd | Faddp | Fiadd => ArithOp::Add,
        Fsub | Fsubp | Fisub => ArithOp::Sub,
        Fsubr | Fsubrp | Fisubr => ArithOp::SubR,
        Fmul | Fmulp | Fimul => ArithOp::Mul,
        Fdiv | Fdivp | Fidiv => ArithOp::Div,
        _ => ArithOp::DivR,
    };
    let pop = matches!(m, Faddp | Fsubp | Fsubrp | Fmulp | Fdivp | Fdivrp);
    let integer = matches!(m, Fiadd | Fisub | Fisubr | Fimul | Fidiv | Fidivr);
    // (destination index, source value or source register, load flags)
    let (dst, src, load_flags) = if let Some(n) = mem_index(i) {
        let (v, f) = load_mem(ex, i, n, integer)?;
        (0, Ok(v), f)
    } else if i.raw.op_count() >= 2 {
        (st_reg(i, 0), Err(st_reg(i, 1)), 0)
    } else {
        (1, Err(0), 0)
    };
    let fpu = &mut ex.c.fpu;
    let src_empty = matches!(src, Err(k) if fpu.is_empty(k));
    if fpu.is_empty(dst) || src_empty {
        underflow_into(fpu, dst);
        if pop && ie_masked(fpu) {
            fpu.pop();
        }
        record(ex, i);
        return Ok(());
    }
    let a = fpu.st(dst);
    let b = match src {
        Ok(v) => v,
        Err(k) => fpu.st(k),
    };
    let env = fpu.env();
    let mut r = match op {
        ArithOp::Add => arith::add(a, b, &env),
        ArithOp::Sub => arith::sub(a, b, &env),
        ArithOp::SubR => arith::sub(b, a, &env),
        ArithOp::Mul => arith::mul(a, b, &env),
        ArithOp::Div => arith::div(a, b, &env),
        ArithOp::DivR => arith::div(b, a, &env),
    };
    r.flags |= load_flags;
    if fpu.write_result(dst, r) && pop {
        fpu.pop();
    }
    record(ex, i);
    Ok(())
}

fn fsign(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let fpu = &mut ex.c.fpu;
    if fpu.is_empty(0) {
        underflow_into(fpu, 0);
    } else {
        let v = fpu.st(0);
        let v = if i.raw.mnemonic() == Mnemonic::Fchs {
            v.negate()
        } else {
            v.abs()
        };
        fpu.set_st(0, v);
        fpu.set_c1(false);
    }
    record(ex, i);
    Ok(())
}

fn unary(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let fpu = &mut ex.c.fpu;
    if fpu.is_empty(0) {
        underflow_into(fpu, 0);
        record(ex, i);
        return Ok(());
    }
    let (x, env) = (fpu.st(0), fpu.env());
    let r = match i.raw.mnemonic() {
        Mnemonic::Fsqrt => Some(arith::sqrt(x, &env)),
        Mnemonic::Frndint => Some(arith::round_to_integer(x, &env)),
        Mnemonic::F2xm1 => Some(transcend::f2xm1(x, &env)),
        Mnemonic::Fsin => transcend::fsin(x, &env),
        _ => transcend::fcos(x, &env),
    };
    let trig = matches!(i.raw.mnemonic(), Mnemonic::Fsin | Mnemonic::Fcos);
    match r {
        Some(r) => {
            fpu.write_result(0, r);
            if trig {
                fpu.set_c2(false);
            }
        }
        // Out of range (|x| >= 2^63): operand unchanged, C2 = 1.
        None => fpu.set_c2(true),
    }
    record(ex, i);
    Ok(())
}

/// FSINCOS, FPTAN, FXTRACT: replace ST(0) and push a second result.
fn push_two(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let m = i.raw.mnemonic();
    let fpu = &mut ex.c.fpu;
    let empty = fpu.is_empty(0);
    if empty || !fpu.is_empty(7) {
        fpu.stack_fault(!empty);
        if ie_masked(fpu) {
            fpu.set_st(0, F80::INDEFINITE);
            fpu.decrement_top();
            fpu.set_st(0, F80::INDEFINITE);
        }
        record(ex, i);
        return Ok(());
    }
    let (x, env) = (fpu.st(0), fpu.env());
    let pair = match m {
        Mnemonic::Fsincos => transcend::fsincos(x, &env),
        Mnemonic::Fptan => transcend::fptan(x, &env).map(|t| {
            (
                t,
                FpResult {
                    value: F80::ONE,
                    flags: 0,
                    c1: false,
                },
            )
        }),
        _ => {
            let (e, s) = transcend::fxtract(x);
            Some((e, s))
        }
    };
    match pair {
        None => fpu.set_c2(true),
        Some((first, second)) => {
            if fpu.commit_flags(
                first.flags | second.flags,
                first.c1 | second.c1,
                Dest::Register,
            ) {
                fpu.set_st(0, first.value);
                fpu.decrement_top();
                fpu.set_st(0, second.value);
            }
            if m != Mnemonic::Fxtract {
                fpu.set_c2(false);
            }
        }
    }
    record(ex, i);
    Ok(())
}

/// FPATAN, FYL2X, FYL2XP1: ST(1) = f(ST(1), ST(0)), then pop.
fn binary_pop(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let fpu = &mut ex.c.fpu;
    if fpu.is_empty(0) || fpu.is_empty(1) {
        underflow_into(fpu, 1);
        if ie_masked(fpu) {
            fpu.pop();
        }
        record(ex, i);
        return Ok(());
    }
    let (x, y, env) = (fpu.st(0), fpu.st(1), fpu.env());
    let r = match i.raw.mnemonic() {
        Mnemonic::Fpatan => transcend::fpatan(y, x, &env),
        Mnemonic::Fyl2x => transcend::fyl2x(y, x, &env),
        _ => transcend::fyl2xp1(y, x, &env),
    };
    if fpu.write_result(1, r) {
        fpu.pop();
    }
    record(ex, i);
    Ok(())
}

fn fscale(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let fpu = &mut ex.c.fpu;
    if fpu.is_empty(0) || fpu.is_empty(1) {
        underflow_into(fpu, 0);
    } else {
        let r = transcend::fscale(fpu.st(0), fpu.st(1), &fpu.env());
        fpu.write_result(0, r);
    }
    record(ex, i);
    Ok(())
}

fn fprem(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let fpu = &mut ex.c.fpu;
    if fpu.is_empty(0) || fpu.is_empty(1) {
        underflow_into(fpu, 0);
    } else {
        let r = transcend::fprem(fpu.st(0), fpu.st(1), i.raw.mnemonic() == Mnemonic::Fprem1);
        if fpu.write_result(0, r.result) {
            if r.complete {
                let q = r.quotient;
                fpu.set_condition(q & 2 != 0, false, q & 1 != 0, q & 4 != 0);
            } else {
                fpu.set_c2(true);
            }
        }
    }
    record(ex, i);
    Ok(())
}

// ---- comparisons ----------------------------------------------------------------------------

/// Operands of a comparison: ST(0) against memory, ST(i), ST(1) or +0 (FTST).
fn compare_operands(ex: &mut Exec<'_>, i: &Insn) -> XResult<Option<(F80, F80, u8)>> {
    use Mnemonic::*;
    let m = i.raw.mnemonic();
    let (src, load_flags) = if let Some(n) = mem_index(i) {
        let (v, f) = load_mem(ex, i, n, matches!(m, Ficom | Ficomp))?;
        (Ok(v), f)
    } else if m == Ftst {
        (Ok(F80::ZERO), 0)
    } else if i.raw.op_count() >= 2 {
        (Err(st_reg(i, 1)), 0)
    } else {
        (Err(1), 0)
    };
    let fpu = &ex.c.fpu;
    if fpu.is_empty(0) || matches!(src, Err(k) if fpu.is_empty(k)) {
        return Ok(None);
    }
    let b = match src {
        Ok(v) => v,
        Err(k) => fpu.st(k),
    };
    Ok(Some((fpu.st(0), b, load_flags)))
}

fn fcom(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    use Mnemonic::*;
    let m = i.raw.mnemonic();
    let pops = match m {
        Fcomp | Fucomp | Ficomp => 1,
        Fcompp | Fucompp => 2,
        _ => 0,
    };
    let quiet = matches!(m, Fucom | Fucomp | Fucompp);
    let ops = compare_operands(ex, i)?;
    let fpu = &mut ex.c.fpu;
    let done = match ops {
        None => {
            fpu.stack_fault(false);
            if ie_masked(fpu) {
                fpu.set_condition(true, true, false, true);
            }
            ie_masked(fpu)
        }
        Some((a, b, load_flags)) => {
            let (ord, flags) = arith::compare(a, b, quiet);
            let ok = fpu.commit_flags(flags | load_flags, false, Dest::Register);
            if ok {
                let (c3, c2, c0) = match ord {
                    Compare::Greater => (false, false, false),
                    Compare::Less => (false, false, true),
                    Compare::Equal => (true, false, false),
                    Compare::Unordered => (true, true, true),
                };
                fpu.set_condition(c3, c2, false, c0);
            }
            ok
        }
    };
    if done {
        for _ in 0..pops {
            fpu.pop();
        }
    }
    record(ex, i);
    Ok(())
}

/// FCOMI/FUCOMI(P): the result goes to ZF, PF, CF; OF, SF, AF are cleared.
fn fcomi(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    use Mnemonic::*;
    let m = i.raw.mnemonic();
    let pop = matches!(m, Fcomip | Fucomip);
    let quiet = matches!(m, Fucomi | Fucomip);
    let ops = compare_operands(ex, i)?;
    let (zf, pf, cf, done) = {
        let fpu = &mut ex.c.fpu;
        match ops {
            None => {
                fpu.stack_fault(false);
                (true, true, true, ie_masked(fpu))
            }
            Some((a, b, _)) => {
                let (ord, flags) = arith::compare(a, b, quiet);
                let ok = fpu.commit_flags(flags, false, Dest::Register);
                let (zf, pf, cf) = match ord {
                    Compare::Greater => (false, false, false),
                    Compare::Less => (false, false, true),
                    Compare::Equal => (true, false, false),
                    Compare::Unordered => (true, true, true),
                };
                (zf, pf, cf, ok)
            }
        }
    };
    // OF, SF and AF are cleared whether or not #IA was raised; ZF/PF/CF only change
    // when the comparison completed (masked or no exception).
    let mut f = ex.rflags() & !(0x800 | 0x80 | 0x10);
    if done {
        f = (f & !(0x40 | 0x4 | 0x1))
            | if zf { 0x40 } else { 0 }
            | if pf { 0x4 } else { 0 }
            | if cf { 0x1 } else { 0 };
    }
    ex.set_rflags(f);
    if done && pop {
        ex.c.fpu.pop();
    }
    record(ex, i);
    Ok(())
}

fn fxam(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let fpu = &mut ex.c.fpu;
    let v = fpu.st(0);
    let (c3, c2, c0) = v.fxam_bits(fpu.is_empty(0));
    fpu.set_condition(c3, c2, v.sign(), c0);
    record(ex, i);
    Ok(())
}
