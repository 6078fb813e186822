//! SSE/SSE2/SSE3/SSSE3 and MMX instructions: dispatch, the shared prologue (#UD/#NM/#MF
//! rules), operand access, data movement and MXCSR instructions. Floating-point
//! arithmetic is in `sse_float.rs`, integer SIMD (MMX and XMM) in `sse_int.rs`; the
//! arithmetic itself is `crate::sse`.
//!
//! Rules applied here (SDM vol. 3, 13.1 and 12.x):
//! - CR0.EM=1: #UD. Instructions touching XMM registers or MXCSR need CR4.OSFXSR (#UD).
//! - CR0.TS=1: #NM.
//! - Instructions on MMX registers check for a pending x87 exception (#MF) and switch the
//!   x87 unit to MMX state (TOP=0, all tags valid).
//! - Unmasked SIMD floating-point exceptions: #XM if CR4.OSXMMEXCPT=1, otherwise #UD;
//!   the destination is not written, MXCSR flags are.
//! - 128-bit memory operands of legacy SSE instructions must be 16-byte aligned (#GP(0)),
//!   except for the explicitly unaligned moves.

use super::{Exec, Handler, Insn, K_IMM, K_MEM, K_REG};
use crate::fault::{Fault, MF, XM, XResult};
use crate::mmu::{CR0_EM, CR0_NE, CR0_TS, CR4_OSFXSR, CR4_OSXMMEXCPT};
use iced_x86::{Code, Instruction, Mnemonic, Register};

pub fn lookup(ins: &Instruction) -> Option<Handler> {
    use Mnemonic::*;
    Some(match ins.mnemonic() {
        Movaps | Movapd | Movdqa | Movntps | Movntpd | Movntdq => mov_full::<true>,
        Movups | Movupd | Movdqu | Lddqu => mov_full::<false>,
        Movss => mov_scalar::<4>,
        Movsd if matches!(ins.code(), Code::Movsd_xmm_xmmm64 | Code::Movsd_xmmm64_xmm) => {
            mov_scalar::<8>
        }
        Movlps | Movlpd | Movhps | Movhpd | Movhlps | Movlhps => mov_half,
        Movd | Movq | Movq2dq | Movdq2q | Movntq => mov_dq,
        Movmskps | Movmskpd | Pmovmskb => movmsk,
        Movnti => movnti,
        Maskmovq | Maskmovdqu => maskmov,
        Movsldup | Movshdup | Movddup => mov_dup,
        Ldmxcsr => ldmxcsr,
        Stmxcsr => stmxcsr,
        Emms => emms,
        _ => return super::sse_float::lookup(ins).or_else(|| super::sse_int::lookup(ins)),
    })
}

// ---- operands -------------------------------------------------------------------------------

/// Where a SIMD operand lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum V {
    Xmm(usize),
    Mm(usize),
    Gpr(u8, u8),
    Mem,
    Imm,
}

pub(super) fn v(i: &Insn, n: usize) -> V {
    let o = i.ops[n];
    match o.kind {
        K_MEM => V::Mem,
        K_REG => V::Gpr(o.reg, o.size),
        K_IMM => V::Imm,
        _ => {
            let r = i.raw.op_register(n as u32);
            if (Register::XMM0..=Register::XMM15).contains(&r) {
                V::Xmm(r as usize - Register::XMM0 as usize)
            } else if (Register::MM0..=Register::MM7).contains(&r) {
                V::Mm(r as usize - Register::MM0 as usize)
            } else {
                V::Imm
            }
        }
    }
}

/// #UD/#NM/#MF checks. Returns true when MMX registers are involved (width 8).
pub(super) fn prologue(ex: &Exec<'_>, i: &Insn) -> XResult<bool> {
    let n = (i.raw.op_count() as usize).min(3);
    // CVTPI2PS switches to MMX state with a memory source too (SDM; unlike CVTPI2PD m64).
    let mmx =
        (0..n).any(|k| matches!(v(i, k), V::Mm(_))) || i.raw.code() == Code::Cvtpi2ps_xmm_mmm64;
    let xmm = (0..n).any(|k| matches!(v(i, k), V::Xmm(_)));
    if ex.s.cr0 & CR0_EM != 0 {
        return Err(Fault::ud());
    }
    if (xmm || !mmx) && ex.s.cr4 & CR4_OSFXSR == 0 {
        return Err(Fault::ud());
    }
    if ex.s.cr0 & CR0_TS != 0 {
        return Err(Fault::nm());
    }
    if mmx && ex.c.fpu.exception_pending() && ex.s.cr0 & CR0_NE != 0 {
        return Err(Fault::new(MF));
    }
    Ok(mmx)
}

/// Any MMX instruction (except EMMS) leaves the x87 unit in MMX state.
pub(super) fn epilogue(ex: &mut Exec<'_>, mmx: bool) {
    if mmx {
        ex.c.fpu.enter_mmx();
    }
}

fn mem_lin(ex: &Exec<'_>, i: &Insn, off: u64) -> u64 {
    ex.c.segc[i.mem.seg as usize % 6].base.wrapping_add(off)
}

/// Reads operand `n` (zero-extended). 16-byte memory operands are alignment-checked
/// when `aligned`.
pub(super) fn read(ex: &mut Exec<'_>, i: &Insn, n: usize, aligned: bool) -> XResult<u128> {
    Ok(match v(i, n) {
        V::Xmm(r) => ex.c.sse.xmm[r],
        V::Mm(r) => ex.c.fpu.mmx(r) as u128,
        V::Gpr(r, size) => ex.reg(r, size) as u128,
        V::Imm => i.imm as u128,
        V::Mem => {
            let size = i.ops[n].size;
            let off = ex.ea(i);
            if size >= 16 {
                if aligned && mem_lin(ex, i, off) & 15 != 0 {
                    return Err(Fault::gp0());
                }
                // Two 8-byte accesses keep the TLB fast path (SSE memcpy loops).
                let lo = ex.read_mem(i.mem.seg, off, 8)?;
                let hi = ex.read_mem(i.mem.seg, off.wrapping_add(8), 8)?;
                (lo as u128) | ((hi as u128) << 64)
            } else {
                ex.read_mem(i.mem.seg, off, size.clamp(1, 8))? as u128
            }
        }
    })
}

/// Writes operand `n`: whole XMM register, MMX register, GPR (x86 width rules) or memory.
pub(super) fn write(ex: &mut Exec<'_>, i: &Insn, n: usize, val: u128, aligned: bool) -> XResult {
    match v(i, n) {
        V::Xmm(r) => ex.c.sse.xmm[r] = val,
        V::Mm(r) => ex.c.fpu.set_mmx(r, val as u64),
        V::Gpr(r, size) => ex.set_reg(r, size, val as u64),
        V::Imm => {}
        V::Mem => {
            let size = i.ops[n].size;
            let off = ex.ea(i);
            if size >= 16 {
                if aligned && mem_lin(ex, i, off) & 15 != 0 {
                    return Err(Fault::gp0());
                }
                let lin = ex.lin(i.mem.seg, off, 8, true)?;
                ex.lin(i.mem.seg, off.wrapping_add(8), 8, true)?;
                if lin & 0xFFF <= 0xFF0 {
                    // One page: once the first half is written the second cannot fault.
                    ex.write_mem(i.mem.seg, off, 8, val as u64)?;
                    ex.write_mem(i.mem.seg, off.wrapping_add(8), 8, (val >> 64) as u64)?;
                } else {
                    ex.write_bytes(i.mem.seg, off, &val.to_le_bytes())?;
                }
            } else {
                ex.write_mem(i.mem.seg, off, size.clamp(1, 8), val as u64)?;
            }
        }
    }
    Ok(())
}

/// Records SIMD FP flags in MXCSR; an unmasked one becomes #XM (or #UD without
/// CR4.OSXMMEXCPT) and the caller must not write its destination.
pub(super) fn fp_flags(ex: &mut Exec<'_>, flags: u8) -> XResult {
    if ex.c.sse.raise(flags) {
        return Err(if ex.s.cr4 & CR4_OSXMMEXCPT != 0 {
            Fault::new(XM)
        } else {
            Fault::ud()
        });
    }
    Ok(())
}

// ---- data movement ---------------------------------------------------------------------------

fn mov_full<const ALIGNED: bool>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    prologue(ex, i)?;
    let val = read(ex, i, 1, ALIGNED)?;
    write(ex, i, 0, val, ALIGNED)
}

/// MOVSS/MOVSD: register-to-register merges the low element; loads zero the rest;
/// stores write only the element.
fn mov_scalar<const BYTES: u32>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    prologue(ex, i)?;
    let mask: u128 = if BYTES == 4 {
        u32::MAX as u128
    } else {
        u64::MAX as u128
    };
    let src = read(ex, i, 1, false)? & mask;
    match (v(i, 0), v(i, 1)) {
        (V::Xmm(d), V::Xmm(_)) => {
            let old = ex.c.sse.xmm[d];
            ex.c.sse.xmm[d] = (old & !mask) | src;
            Ok(())
        }
        _ => write(ex, i, 0, src, false),
    }
}

/// MOVLPS/MOVLPD/MOVHPS/MOVHPD/MOVHLPS/MOVLHPS: 64-bit halves.
fn mov_half(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    prologue(ex, i)?;
    let m = i.raw.mnemonic();
    let lo = u64::MAX as u128;
    match (v(i, 0), m) {
        (V::Mem, Mnemonic::Movlps | Mnemonic::Movlpd) => {
            let x = read(ex, i, 1, false)?;
            write(ex, i, 0, x & lo, false)
        }
        (V::Mem, _) => {
            let x = read(ex, i, 1, false)?;
            write(ex, i, 0, x >> 64, false)
        }
        (V::Xmm(d), _) => {
            let src = read(ex, i, 1, false)?;
            let old = ex.c.sse.xmm[d];
            ex.c.sse.xmm[d] = match m {
                Mnemonic::Movlps | Mnemonic::Movlpd => (old & !lo) | (src & lo),
                Mnemonic::Movhps | Mnemonic::Movhpd | Mnemonic::Movlhps => (old & lo) | (src << 64),
                _ => (old & !lo) | (src >> 64), // MOVHLPS
            };
            Ok(())
        }
        _ => Err(Fault::ud()),
    }
}

/// MOVD/MOVQ in all forms, MOVQ2DQ, MOVDQ2Q. Writes to XMM zero the upper bits.
fn mov_dq(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let mmx = prologue(ex, i)?;
    let bytes = match i.raw.mnemonic() {
        Mnemonic::Movd => 4,
        _ => 8,
    };
    let mask = if bytes == 4 {
        u32::MAX as u128
    } else {
        u64::MAX as u128
    };
    let val = read(ex, i, 1, false)? & mask;
    write(ex, i, 0, val, false)?;
    epilogue(ex, mmx);
    Ok(())
}

fn movmsk(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let mmx = prologue(ex, i)?;
    let src = read(ex, i, 1, false)?;
    let m = match i.raw.mnemonic() {
        Mnemonic::Movmskps => crate::sse::int::movmsk(src, 32),
        Mnemonic::Movmskpd => crate::sse::int::movmsk(src, 64),
        _ => crate::sse::int::pmovmskb(src, if mmx { 8 } else { 16 }),
    };
    write(ex, i, 0, m as u128, false)?;
    epilogue(ex, mmx);
    Ok(())
}

/// MOVNTI: a plain GPR store (no cache model), valid without OSFXSR.
fn movnti(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let val = ex.read_op(i, 1)?;
    ex.write_op(i, 0, val)
}

/// MASKMOVQ/MASKMOVDQU: byte stores to DS:rDI selected by the mask's top bits.
fn maskmov(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let mmx = prologue(ex, i)?;
    // Operand 0 is the implicit [rDI] destination.
    let data = read(ex, i, 1, false)?.to_le_bytes();
    let mask = read(ex, i, 2, false)?.to_le_bytes();
    let width = if mmx { 8 } else { 16 };
    let amask = crate::flags::size_mask(i.asize);
    let base = ex.s.gpr[7] & amask;
    let seg = i.mem.seg;
    for k in 0..width {
        if mask[k] & 0x80 != 0 {
            ex.write_mem(seg, base.wrapping_add(k as u64) & amask, 1, data[k] as u64)?;
        }
    }
    epilogue(ex, mmx);
    Ok(())
}

/// MOVSLDUP/MOVSHDUP/MOVDDUP (SSE3).
fn mov_dup(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    prologue(ex, i)?;
    let m = i.raw.mnemonic();
    let src = read(ex, i, 1, m != Mnemonic::Movddup)?;
    let lane = |k: u32| (src >> (32 * k)) & 0xFFFF_FFFF;
    let r = match m {
        Mnemonic::Movsldup => lane(0) | lane(0) << 32 | lane(2) << 64 | lane(2) << 96,
        Mnemonic::Movshdup => lane(1) | lane(1) << 32 | lane(3) << 64 | lane(3) << 96,
        _ => (src & u64::MAX as u128) | (src << 64),
    };
    write(ex, i, 0, r, true)
}

fn ldmxcsr(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    prologue(ex, i)?;
    let val = ex.read_op(i, 0)? as u32;
    ex.c.sse.set_mxcsr(val).map_err(|_| Fault::gp0())
}

fn stmxcsr(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    prologue(ex, i)?;
    let val = ex.c.sse.mxcsr as u64;
    ex.write_op(i, 0, val)
}

/// EMMS: #UD with CR0.EM, #NM with CR0.TS, #MF if an x87 exception is pending.
fn emms(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    if ex.s.cr0 & CR0_EM != 0 {
        return Err(Fault::ud());
    }
    if ex.s.cr0 & CR0_TS != 0 {
        return Err(Fault::nm());
    }
    if ex.c.fpu.exception_pending() && ex.s.cr0 & CR0_NE != 0 {
        return Err(Fault::new(MF));
    }
    ex.c.fpu.emms();
    Ok(())
}
