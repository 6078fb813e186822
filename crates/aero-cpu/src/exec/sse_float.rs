//! SSE/SSE2/SSE3 floating-point instructions: arithmetic, min/max, sqrt, reciprocal
//! estimates, compares (CMPxx, (U)COMISx), horizontal ops, bitwise logic, shuffles and
//! the CVT* conversions.

use super::sse::{V, epilogue, fp_flags, prologue, read, v, write};
use super::{Exec, Handler, Insn};
use crate::fault::{Fault, XResult};
use crate::sse::convert::{float_to_float, float_to_int, int_to_float};
use crate::sse::float::{
    self, Arith, F32, F64, Kind, addsub, arith, cmp_predicate, horizontal, low, min_max, packed2,
    set_low,
};
use crate::sse::int;
use iced_x86::{Code, Instruction, Mnemonic};

pub fn lookup(ins: &Instruction) -> Option<Handler> {
    use Mnemonic::*;
    Some(match ins.mnemonic() {
        Addps | Addss | Addpd | Addsd | Subps | Subss | Subpd | Subsd | Mulps | Mulss | Mulpd
        | Mulsd | Divps | Divss | Divpd | Divsd | Minps | Minss | Minpd | Minsd | Maxps | Maxss
        | Maxpd | Maxsd | Cmpps | Cmpss | Cmppd => binary,
        Cmpsd if ins.code() == Code::Cmpsd_xmm_xmmm64_imm8 => binary,
        Sqrtps | Sqrtss | Sqrtpd | Sqrtsd | Rcpps | Rcpss | Rsqrtps | Rsqrtss => unary,
        Comiss | Ucomiss | Comisd | Ucomisd => comis,
        Addsubps | Addsubpd | Haddps | Haddpd | Hsubps | Hsubpd => sse3,
        Andps | Andnps | Orps | Xorps | Andpd | Andnpd | Orpd | Xorpd => logic,
        Shufps | Shufpd | Unpcklps | Unpckhps | Unpcklpd | Unpckhpd => shuffle,
        Cvtpi2ps | Cvtps2pi | Cvttps2pi | Cvtsi2ss | Cvtss2si | Cvttss2si | Cvtpi2pd | Cvtpd2pi
        | Cvttpd2pi | Cvtsi2sd | Cvtsd2si | Cvttsd2si | Cvtps2pd | Cvtpd2ps | Cvtss2sd
        | Cvtsd2ss | Cvtdq2ps | Cvtps2dq | Cvttps2dq | Cvtdq2pd | Cvtpd2dq | Cvttpd2dq => convert,
        _ => return None,
    })
}

/// (element format, scalar form) of an arithmetic mnemonic.
fn shape(m: Mnemonic) -> (Kind, bool) {
    use Mnemonic::*;
    let double = matches!(
        m,
        Addpd
            | Addsd
            | Subpd
            | Subsd
            | Mulpd
            | Mulsd
            | Divpd
            | Divsd
            | Minpd
            | Minsd
            | Maxpd
            | Maxsd
            | Cmppd
            | Cmpsd
            | Sqrtpd
            | Sqrtsd
            | Addsubpd
            | Haddpd
            | Hsubpd
    );
    let scalar = matches!(
        m,
        Addss
            | Addsd
            | Subss
            | Subsd
            | Mulss
            | Mulsd
            | Divss
            | Divsd
            | Minss
            | Minsd
            | Maxss
            | Maxsd
            | Cmpss
            | Cmpsd
            | Sqrtss
            | Sqrtsd
            | Rcpss
            | Rsqrtss
    );
    (if double { F64 } else { F32 }, scalar)
}

fn binary(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    prologue(ex, i)?;
    use Mnemonic::*;
    let m = i.raw.mnemonic();
    let (kind, scalar) = shape(m);
    let a = read(ex, i, 0, false)?;
    let b = read(ex, i, 1, !scalar)?;
    let mx = ex.c.sse.env();
    let pred = i.imm as u8;
    let op = |x: u64, y: u64| match m {
        Addps | Addss | Addpd | Addsd => arith(kind, Arith::Add, x, y, mx),
        Subps | Subss | Subpd | Subsd => arith(kind, Arith::Sub, x, y, mx),
        Mulps | Mulss | Mulpd | Mulsd => arith(kind, Arith::Mul, x, y, mx),
        Divps | Divss | Divpd | Divsd => arith(kind, Arith::Div, x, y, mx),
        Minps | Minss | Minpd | Minsd => min_max(kind, false, x, y, mx),
        Maxps | Maxss | Maxpd | Maxsd => min_max(kind, true, x, y, mx),
        _ => cmp_predicate(kind, pred, x, y, mx),
    };
    let (r, flags) = if scalar {
        let (val, f) = op(low(kind, a), low(kind, b));
        (set_low(kind, a, val), f)
    } else {
        packed2(kind, a, b, op)
    };
    fp_flags(ex, flags)?;
    write(ex, i, 0, r, false)
}

/// Reciprocal estimates: computed exactly and rounded to f32 (within the architected
/// 1.5 * 2^-12 relative error, though not bit-identical to any particular silicon).
fn estimate(x: u32, rsqrt: bool) -> u32 {
    let f = f32::from_bits(x);
    // Denormal inputs behave as zero; results that would be denormal flush to zero.
    let f = if f.is_subnormal() {
        0.0f32.copysign(f)
    } else {
        f
    };
    let r = if rsqrt {
        if f < 0.0 {
            f32::NAN.copysign(-1.0)
        } else {
            (1.0 / (f as f64).sqrt()) as f32
        }
    } else {
        ((1.0 / f as f64) as f32).copysign(if f.is_nan() { 1.0 } else { f.signum() })
    };
    let r = if f.is_nan() {
        f32::from_bits(x | 0x0040_0000)
    } else {
        r
    };
    if r.is_subnormal() {
        0.0f32.copysign(r).to_bits()
    } else {
        r.to_bits()
    }
}

fn unary(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    prologue(ex, i)?;
    use Mnemonic::*;
    let m = i.raw.mnemonic();
    let (kind, scalar) = shape(m);
    let src = read(ex, i, 1, !scalar)?;
    let mx = ex.c.sse.env();
    let op = |x: u64, _: u64| match m {
        Rcpps | Rcpss => (estimate(x as u32, false) as u64, 0),
        Rsqrtps | Rsqrtss => (estimate(x as u32, true) as u64, 0),
        _ => float::sqrt(kind, x, mx),
    };
    let (r, flags) = if scalar {
        let dst = match v(i, 0) {
            V::Xmm(d) => ex.c.sse.xmm[d],
            _ => 0,
        };
        let (val, f) = op(low(kind, src), 0);
        (set_low(kind, dst, val), f)
    } else {
        packed2(kind, src, 0, op)
    };
    fp_flags(ex, flags)?;
    write(ex, i, 0, r, false)
}

/// COMISS/UCOMISS/COMISD/UCOMISD: ZF, PF, CF from the comparison; OF, SF, AF cleared.
fn comis(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    prologue(ex, i)?;
    let m = i.raw.mnemonic();
    let kind = if matches!(m, Mnemonic::Comisd | Mnemonic::Ucomisd) {
        F64
    } else {
        F32
    };
    let a = low(kind, read(ex, i, 0, false)?);
    let b = low(kind, read(ex, i, 1, false)?);
    let signal = matches!(m, Mnemonic::Comiss | Mnemonic::Comisd);
    let mx = ex.c.sse.env();
    let (ord, flags) = float::compare(kind, a, b, signal, mx);
    fp_flags(ex, flags)?;
    let bits = match ord {
        None => 0x45,
        Some(std::cmp::Ordering::Less) => 0x01,
        Some(std::cmp::Ordering::Equal) => 0x40,
        Some(std::cmp::Ordering::Greater) => 0,
    };
    let f = ex.rflags() & !(0x800 | 0x80 | 0x10 | 0x40 | 0x4 | 0x1);
    ex.set_rflags(f | bits);
    Ok(())
}

fn sse3(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    prologue(ex, i)?;
    use Mnemonic::*;
    let m = i.raw.mnemonic();
    let (kind, _) = shape(m);
    let a = read(ex, i, 0, true)?;
    let b = read(ex, i, 1, true)?;
    let mx = ex.c.sse.env();
    let (r, flags) = match m {
        Addsubps | Addsubpd => addsub(kind, a, b, mx),
        Haddps | Haddpd => horizontal(kind, Arith::Add, a, b, mx),
        _ => horizontal(kind, Arith::Sub, a, b, mx),
    };
    fp_flags(ex, flags)?;
    write(ex, i, 0, r, false)
}

fn logic(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    prologue(ex, i)?;
    use Mnemonic::*;
    let a = read(ex, i, 0, true)?;
    let b = read(ex, i, 1, true)?;
    let r = match i.raw.mnemonic() {
        Andps | Andpd => a & b,
        Andnps | Andnpd => !a & b,
        Orps | Orpd => a | b,
        _ => a ^ b,
    };
    write(ex, i, 0, r, false)
}

fn shuffle(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    prologue(ex, i)?;
    use Mnemonic::*;
    let a = read(ex, i, 0, true)?;
    let b = read(ex, i, 1, true)?;
    let imm = i.imm as u8;
    let r = match i.raw.mnemonic() {
        Shufps => int::shufps(a, b, imm),
        Shufpd => int::shufpd(a, b, imm),
        Unpcklps => int::unpack(a, b, 32, 16, false),
        Unpckhps => int::unpack(a, b, 32, 16, true),
        Unpcklpd => int::unpack(a, b, 64, 16, false),
        _ => int::unpack(a, b, 64, 16, true),
    };
    write(ex, i, 0, r, false)
}

/// Lane `k` of width `bits`.
fn lane(v: u128, bits: u32, k: u32) -> u64 {
    int::lane(v, bits, k)
}

fn convert(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let mmx = prologue(ex, i)?;
    use Mnemonic::*;
    let m = i.raw.mnemonic();
    let mx = ex.c.sse.env();
    let dst = match v(i, 0) {
        V::Xmm(d) => ex.c.sse.xmm[d],
        _ => 0,
    };
    let aligned = matches!(
        m,
        Cvtpd2pi | Cvttpd2pi | Cvtdq2ps | Cvtps2dq | Cvttps2dq | Cvtpd2dq | Cvttpd2dq | Cvtpd2ps
    );
    let src = read(ex, i, 1, aligned)?;
    let src_size = i.ops[1].size;
    let dst_size = i.ops[0].size;
    let mut flags = 0u8;
    let mut to_int = |kind: Kind, x: u64, bits: u32, trunc: bool| {
        let (r, f) = float_to_int(kind, x, bits, trunc, mx);
        flags |= f;
        r as u64
            & if bits == 64 {
                u64::MAX
            } else {
                u32::MAX as u64
            }
    };
    let pack2x32 =
        |lo: u64, hi: u64| (lo & 0xFFFF_FFFF) as u128 | (((hi & 0xFFFF_FFFF) as u128) << 32);
    let r: u128 = match m {
        Cvtps2pi | Cvttps2pi => {
            let t = m == Cvttps2pi;
            pack2x32(
                to_int(F32, lane(src, 32, 0), 32, t),
                to_int(F32, lane(src, 32, 1), 32, t),
            )
        }
        Cvtpd2pi | Cvttpd2pi | Cvtpd2dq | Cvttpd2dq => {
            let t = matches!(m, Cvttpd2pi | Cvttpd2dq);
            pack2x32(
                to_int(F64, lane(src, 64, 0), 32, t),
                to_int(F64, lane(src, 64, 1), 32, t),
            )
        }
        Cvtps2dq | Cvttps2dq => {
            let t = m == Cvttps2dq;
            (0..4).fold(0u128, |acc, k| {
                acc | ((to_int(F32, lane(src, 32, k), 32, t) as u128) << (32 * k))
            })
        }
        Cvtss2si | Cvttss2si => {
            to_int(F32, lane(src, 32, 0), dst_size as u32 * 8, m == Cvttss2si) as u128
        }
        Cvtsd2si | Cvttsd2si => {
            to_int(F64, lane(src, 64, 0), dst_size as u32 * 8, m == Cvttsd2si) as u128
        }
        _ => {
            let mut from_int = |kind: Kind, x: i64| {
                let (r, f) = int_to_float(kind, x, mx);
                flags |= f;
                r
            };
            let i32_lane = |k: u32| lane(src, 32, k) as u32 as i32 as i64;
            match m {
                Cvtpi2ps => {
                    (dst & !(u64::MAX as u128))
                        | pack2x32(from_int(F32, i32_lane(0)), from_int(F32, i32_lane(1)))
                }
                Cvtpi2pd | Cvtdq2pd => {
                    (from_int(F64, i32_lane(0)) as u128)
                        | ((from_int(F64, i32_lane(1)) as u128) << 64)
                }
                Cvtdq2ps => (0..4).fold(0u128, |acc, k| {
                    acc | ((from_int(F32, i32_lane(k)) as u128) << (32 * k))
                }),
                Cvtsi2ss | Cvtsi2sd => {
                    let x = if src_size == 8 {
                        src as u64 as i64
                    } else {
                        src as u32 as i32 as i64
                    };
                    let kind = if m == Cvtsi2ss { F32 } else { F64 };
                    set_low(kind, dst, from_int(kind, x))
                }
                _ => {
                    let mut ff = |from: Kind, to: Kind, x: u64| {
                        let (r, f) = float_to_float(from, to, x, mx);
                        flags |= f;
                        r
                    };
                    match m {
                        Cvtps2pd => {
                            (ff(F32, F64, lane(src, 32, 0)) as u128)
                                | ((ff(F32, F64, lane(src, 32, 1)) as u128) << 64)
                        }
                        Cvtpd2ps => pack2x32(
                            ff(F64, F32, lane(src, 64, 0)),
                            ff(F64, F32, lane(src, 64, 1)),
                        ),
                        Cvtss2sd => set_low(F64, dst, ff(F32, F64, lane(src, 32, 0))),
                        Cvtsd2ss => set_low(F32, dst, ff(F64, F32, lane(src, 64, 0))),
                        _ => return Err(Fault::ud()),
                    }
                }
            }
        }
    };
    fp_flags(ex, flags)?;
    write(ex, i, 0, r, false)?;
    epilogue(ex, mmx);
    Ok(())
}
