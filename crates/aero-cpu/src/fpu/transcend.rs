//! x87 transcendental and scaling instructions.
//!
//! Accuracy: results are computed in [`Wide`] (about 126 significant bits) and rounded
//! once under the control word's rounding mode, so they are correctly rounded except for
//! arguments within ~2^-60 ulp of a rounding boundary. Trigonometric arguments are
//! reduced with 384 bits of 2/pi (Payne-Hanek), so large arguments are accurate too —
//! unlike real Intel hardware, which reduces with a 66-bit pi; results for |x| near
//! multiples of pi therefore differ from silicon by design. Precision control does not
//! apply to these instructions (SDM vol. 1, 8.1.5.2).

use super::arith::{FpResult, X87Env, propagate_nan};
use super::f80::{BIAS, Class, F80};
use super::softfloat::{self, DE, Exact, FMT_EXT, Finite, Rounding, ZE};
use super::wide::{self, LN2, LOG2E, ONE, PI, PI_2, PI_4, Wide, ZERO, w};

/// atan(k/8) for k = 0..=8, the table for atan's argument reduction.
const ATAN_EIGHTHS: [Wide; 9] = [
    ZERO,
    w(0xfeadd4d5617b6e32c897989f3e888ef7, -4),
    w(0xfadbafc96406eb156dc79ef5f7a217e5, -3),
    w(0xb7b0ca0f26f784738aa32122dcfe4483, -2),
    w(0xed63382b0dda7b456fe445ecbc3a8d03, -2),
    w(0x8f005d5ef7f59f9b5c835e1665c43747, -1),
    w(0xa4bc7d1934f7092419a87f2a457dac9e, -1),
    w(0xb8053e2bc2319e73cb2da55210a4443d, -1),
    w(0xc90fdaa22168c234c4c6628b80dc1cd1, -1),
];

/// floor(2/pi * 2^384), most significant word first.
const TWO_OVER_PI: [u64; 6] = [
    0xa2f9836e4e441529,
    0xfc2757d1f534ddc0,
    0xdb6295993c439041,
    0xfe5163abdebbc561,
    0xb7246e3a424dd2e0,
    0x06492eea09d1921c,
];

fn round_wide(v: Wide, env: &X87Env, flags: u8) -> FpResult {
    FpResult::rounded(v.to_exact(), &env.round_env(false), flags)
}

fn de_flag(d: bool) -> u8 {
    if d { DE } else { 0 }
}

/// The result of a trigonometric instruction: None when |x| >= 2^63 (C2 set, operand
/// left unchanged).
pub type TrigResult = Option<FpResult>;

/// Reduces |x| (finite, |x| < 2^63) to r in [-pi/4, pi/4] and the quadrant q (mod 4).
fn reduce(x: Finite) -> (Wide, u32) {
    let ax = Finite { sign: false, ..x };
    if ax.exp < -1 {
        return (Wide::from_finite(ax), 0);
    }
    // x * 2/pi as a 448-bit fixed-point product; words little-endian.
    let mut prod = [0u64; 7];
    let mut carry: u128 = 0;
    for i in 0..6 {
        let t = (ax.sig as u128) * (TWO_OVER_PI[5 - i] as u128) + carry;
        prod[i] = t as u64;
        carry = t >> 64;
    }
    prod[6] = carry as u64;
    // Value = prod * 2^(exp - 63 - 384); the binary point sits at bit `point`.
    let point = (384 + 63 - ax.exp) as u32;
    // 64 bits of the product starting at bit `pos` (zero beyond the top).
    let get64 = |pos: u32| -> u64 {
        let (word, off) = ((pos / 64) as usize, pos % 64);
        let lo = prod.get(word).map_or(0, |w| w >> off);
        let hi = if off == 0 {
            0
        } else {
            prod.get(word + 1).map_or(0, |w| w << (64 - off))
        };
        lo | hi
    };
    let mut quadrant = (get64(point) & 3) as u32;
    // 256 fraction bits below the point as (hi, lo); point >= 385 keeps every index valid.
    let mut hi = ((get64(point - 64) as u128) << 64) | get64(point - 128) as u128;
    let mut lo = ((get64(point - 192) as u128) << 64) | get64(point - 256) as u128;
    let mut negative = false;
    if hi >> 127 != 0 {
        // frac >= 1/2: use frac - 1 and the next quadrant.
        let (nlo, borrow) = 0u128.overflowing_sub(lo);
        hi = 0u128.wrapping_sub(hi).wrapping_sub(borrow as u128);
        lo = nlo;
        negative = true;
        quadrant = (quadrant + 1) & 3;
    }
    let frac = if hi != 0 {
        let lz = hi.leading_zeros();
        let sig = if lz == 0 {
            hi
        } else {
            (hi << lz) | (lo >> (128 - lz))
        };
        Wide {
            sign: negative,
            exp: -1 - lz as i32,
            sig: sig | (lo << lz != 0) as u128,
        }
    } else if lo != 0 {
        let lz = lo.leading_zeros();
        Wide {
            sign: negative,
            exp: -129 - lz as i32,
            sig: lo << lz,
        }
    } else {
        ZERO
    };
    (frac.mul(PI_2), quadrant)
}

/// sin and cos of a reduced argument |r| <= pi/4 by Taylor series.
fn sin_cos_reduced(r: Wide) -> (Wide, Wide) {
    let r2 = r.mul(r);
    let mut sin = r;
    let mut term = r;
    let mut n = 1i64;
    while !term.negligible_next_to(sin) && n < 60 {
        term = term.mul(r2).div_int((n + 1) * (n + 2)).neg();
        sin = sin.add(term);
        n += 2;
    }
    let mut cos = ONE;
    let mut term = ONE;
    let mut n = 0i64;
    while !term.negligible_next_to(cos) && n < 60 {
        term = term.mul(r2).div_int((n + 1) * (n + 2)).neg();
        cos = cos.add(term);
        n += 2;
    }
    (sin, cos)
}

/// sin(x), cos(x) of a finite x with |x| < 2^63.
fn sin_cos(x: Finite) -> (Wide, Wide) {
    let (r, q) = reduce(x);
    let (s, c) = sin_cos_reduced(r);
    let (sin, cos) = match q {
        0 => (s, c),
        1 => (c, s.neg()),
        2 => (s.neg(), c.neg()),
        _ => (c.neg(), s),
    };
    (if x.sign { sin.neg() } else { sin }, cos)
}

/// Classifies a trigonometric operand: Err(early result) or Ok(finite, denormal flag).
fn trig_operand(x: F80) -> Result<Option<(Finite, u8)>, FpResult> {
    match x.class() {
        Class::Unsupported | Class::Inf(_) => Err(FpResult::invalid()),
        Class::QNan | Class::SNan => Err(propagate_nan(x, x)),
        Class::Zero(_) => Ok(None),
        Class::Finite(f, d) if f.exp >= 63 => {
            let _ = d;
            Err(FpResult::exact(x, 0))
        }
        Class::Finite(f, d) => Ok(Some((f, de_flag(d)))),
    }
}

fn out_of_range(x: F80) -> bool {
    matches!(x.class(), Class::Finite(f, _) if f.exp >= 63)
}

/// FSIN.
pub fn fsin(x: F80, env: &X87Env) -> TrigResult {
    if out_of_range(x) {
        return None;
    }
    Some(match trig_operand(x) {
        Err(r) => r,
        Ok(None) => FpResult::exact(x, 0),
        Ok(Some((f, de))) => round_wide(sin_cos(f).0, env, de),
    })
}

/// FCOS.
pub fn fcos(x: F80, env: &X87Env) -> TrigResult {
    if out_of_range(x) {
        return None;
    }
    Some(match trig_operand(x) {
        Err(r) => r,
        Ok(None) => FpResult::exact(F80::ONE, 0),
        Ok(Some((f, de))) => round_wide(sin_cos(f).1, env, de),
    })
}

/// FSINCOS: (sin, cos); flags of both are merged into the first.
pub fn fsincos(x: F80, env: &X87Env) -> Option<(FpResult, FpResult)> {
    if out_of_range(x) {
        return None;
    }
    Some(match trig_operand(x) {
        Err(r) => (r, r),
        Ok(None) => (FpResult::exact(x, 0), FpResult::exact(F80::ONE, 0)),
        Ok(Some((f, de))) => {
            let (s, c) = sin_cos(f);
            (round_wide(s, env, de), round_wide(c, env, de))
        }
    })
}

/// FPTAN: tan(x) (the caller then pushes 1.0).
pub fn fptan(x: F80, env: &X87Env) -> TrigResult {
    if out_of_range(x) {
        return None;
    }
    Some(match trig_operand(x) {
        Err(r) => r,
        Ok(None) => FpResult::exact(x, 0),
        Ok(Some((f, de))) => {
            let (s, c) = sin_cos(f);
            round_wide(s.div(c), env, de)
        }
    })
}

/// atan(t) for 0 <= t <= 1.
fn atan_unit(t: Wide) -> Wide {
    let k = t.mul(Wide::from_int(8)).add(w(1 << 127, -1));
    // k = floor(8t + 1/2) from the integer part of the wide value.
    let k_int = if k.exp < 0 {
        0
    } else {
        ((k.sig >> (127 - k.exp.min(4))) as usize).min(8)
    };
    let c = Wide::from_int(k_int as i64).scale(-3);
    let u = if k_int == 0 {
        t
    } else {
        t.sub(c).div(ONE.add(t.mul(c)))
    };
    let u2 = u.mul(u);
    let mut sum = u;
    let mut power = u;
    let mut n = 1i64;
    loop {
        power = power.mul(u2).neg();
        n += 2;
        let term = power.div_int(n);
        // Add even a negligible term: its sticky bit steers directed rounding.
        sum = sum.add(term);
        if term.negligible_next_to(sum) || n > 200 {
            break;
        }
    }
    ATAN_EIGHTHS[k_int].add(sum)
}

/// FPATAN: atan2(y = ST(1), x = ST(0)).
pub fn fpatan(y: F80, x: F80, env: &X87Env) -> FpResult {
    let (cy, cx) = (y.class(), x.class());
    if cy == Class::Unsupported || cx == Class::Unsupported {
        return FpResult::invalid();
    }
    if y.is_nan() || x.is_nan() {
        return propagate_nan(y, x);
    }
    let de = de_flag(matches!(cy, Class::Finite(_, true)) || matches!(cx, Class::Finite(_, true)));
    let sy = y.sign();
    let rounded = |v: Wide| round_wide(v.with_sign(sy), env, de);
    let pi_3_4 = PI.sub(PI_4);
    match (cy, cx) {
        (Class::Zero(_), _) => {
            if x.sign() {
                rounded(PI)
            } else {
                FpResult::exact(y, de)
            }
        }
        (Class::Inf(_), Class::Inf(sx)) => rounded(if sx { pi_3_4 } else { PI_4 }),
        (Class::Inf(_), _) | (_, Class::Zero(_)) => rounded(PI_2),
        (_, Class::Inf(sx)) => {
            if sx {
                rounded(PI)
            } else {
                FpResult::exact(F80::ZERO.with_sign(sy), de)
            }
        }
        (Class::Finite(fy, _), Class::Finite(fx, _)) => {
            let a = Wide::from_finite(fy).abs();
            let b = Wide::from_finite(fx).abs();
            let mut theta = if (fy.exp, fy.sig) <= (fx.exp, fx.sig) {
                atan_unit(a.div(b))
            } else {
                PI_2.sub(atan_unit(b.div(a)))
            };
            if fx.sign {
                theta = PI.sub(theta);
            }
            rounded(theta)
        }
        _ => FpResult::invalid(),
    }
}

/// 2 * atanh(s) = ln((1+s)/(1-s)) for small |s|.
fn two_atanh(s: Wide) -> Wide {
    let s2 = s.mul(s);
    let mut sum = s;
    let mut power = s;
    let mut n = 1i64;
    loop {
        power = power.mul(s2);
        n += 2;
        let term = power.div_int(n);
        sum = sum.add(term);
        if term.negligible_next_to(sum) || n > 400 {
            break;
        }
    }
    sum.scale(1)
}

/// log2 of a positive finite wide value.
fn log2_wide(x: Wide) -> Wide {
    // x = m * 2^e with m in [sqrt(1/2), sqrt(2)) so ln(m) needs no cancellation.
    let mut e = x.exp;
    let mut m = Wide { exp: 0, ..x };
    if m.sig < 0xb504f333f9de6484597d89b3754abe9f {
        m = m.scale(0);
    } else {
        m = m.scale(-1);
        e += 1;
    }
    let s = m.sub(ONE).div(m.add(ONE));
    Wide::from_int(e as i64).add(two_atanh(s).mul(LOG2E))
}

/// FYL2X: y * log2(x), y = ST(1), x = ST(0).
pub fn fyl2x(y: F80, x: F80, env: &X87Env) -> FpResult {
    let (cy, cx) = (y.class(), x.class());
    if cy == Class::Unsupported || cx == Class::Unsupported {
        return FpResult::invalid();
    }
    if y.is_nan() || x.is_nan() {
        return propagate_nan(y, x);
    }
    let de = de_flag(matches!(cy, Class::Finite(_, true)) || matches!(cx, Class::Finite(_, true)));
    let inf = |s: bool| FpResult::exact(F80::INFINITY.with_sign(s), de);
    match (cy, cx) {
        (_, Class::Inf(true)) | (_, Class::Finite(Finite { sign: true, .. }, _)) => {
            FpResult::invalid()
        }
        (Class::Zero(_), Class::Zero(_)) | (Class::Zero(_), Class::Inf(false)) => {
            FpResult::invalid()
        }
        (Class::Inf(sy), Class::Zero(_)) => inf(!sy),
        (_, Class::Zero(_)) => FpResult {
            value: F80::INFINITY.with_sign(!y.sign()),
            flags: de | ZE,
            c1: false,
        },
        (_, Class::Inf(false)) => inf(y.sign()),
        (cy, Class::Finite(fx, _)) => {
            let l = log2_wide(Wide::from_finite(fx));
            match cy {
                Class::Inf(sy) if l.is_zero() => {
                    let _ = sy;
                    FpResult::invalid()
                }
                Class::Inf(sy) => inf(sy ^ l.sign),
                Class::Zero(sy) => {
                    FpResult::exact(F80::ZERO.with_sign(sy ^ (l.sign && !l.is_zero())), de)
                }
                Class::Finite(fy, _) => {
                    let p = Wide::from_finite(fy).mul(l);
                    if p.is_zero() {
                        FpResult::exact(F80::ZERO.with_sign(fy.sign), de)
                    } else {
                        round_wide(p, env, de)
                    }
                }
                _ => FpResult::invalid(),
            }
        }
        _ => FpResult::invalid(),
    }
}

/// FYL2XP1: y * log2(x + 1), defined for |x| < 1 - sqrt(2)/2 (computed for all x > -1).
pub fn fyl2xp1(y: F80, x: F80, env: &X87Env) -> FpResult {
    let (cy, cx) = (y.class(), x.class());
    if cy == Class::Unsupported || cx == Class::Unsupported {
        return FpResult::invalid();
    }
    if y.is_nan() || x.is_nan() {
        return propagate_nan(y, x);
    }
    let de = de_flag(matches!(cy, Class::Finite(_, true)) || matches!(cx, Class::Finite(_, true)));
    match (cy, cx) {
        (Class::Inf(_), Class::Zero(_)) | (_, Class::Inf(_)) => FpResult::invalid(),
        (_, Class::Zero(sx)) | (Class::Zero(sx), _) if !matches!(cx, Class::Finite(f, _) if f.sign && f.exp >= 0) =>
        {
            let _ = sx;
            FpResult::exact(F80::ZERO.with_sign(y.sign() ^ x.sign()), de)
        }
        (_, Class::Finite(fx, _)) => {
            let xw = Wide::from_finite(fx);
            // x <= -1: log undefined.
            if fx.sign && fx.exp >= 0 {
                return FpResult::invalid();
            }
            let l = if fx.exp < -2 {
                two_atanh(xw.div(Wide::from_int(2).add(xw))).mul(LOG2E)
            } else {
                log2_wide(ONE.add(xw))
            };
            match cy {
                Class::Inf(sy) => FpResult::exact(F80::INFINITY.with_sign(sy ^ l.sign), de),
                Class::Finite(fy, _) => round_wide(Wide::from_finite(fy).mul(l), env, de),
                _ => FpResult::invalid(),
            }
        }
        _ => FpResult::invalid(),
    }
}

/// e^z - 1 by Taylor series (|z| small enough to converge quickly, here <= ln 2).
fn expm1(z: Wide) -> Wide {
    let mut sum = z;
    let mut term = z;
    let mut n = 1i64;
    loop {
        n += 1;
        term = term.mul(z).div_int(n);
        sum = sum.add(term);
        if term.negligible_next_to(sum) || n > 80 {
            break;
        }
    }
    sum
}

/// F2XM1: 2^x - 1, defined for -1 <= x <= 1.
pub fn f2xm1(x: F80, env: &X87Env) -> FpResult {
    match x.class() {
        Class::Unsupported => FpResult::invalid(),
        Class::QNan | Class::SNan => propagate_nan(x, x),
        Class::Zero(_) => FpResult::exact(x, 0),
        Class::Inf(false) => FpResult::exact(x, 0),
        Class::Inf(true) => FpResult::exact(F80::ONE.negate(), 0),
        Class::Finite(f, d) => {
            let de = de_flag(d);
            if f.exp >= 0 {
                // ±1 are exact; beyond the architectural domain [-1, 1] the SDM leaves the
                // result undefined: report #IA with the indefinite (as QEMU does).
                return match (f.exp, f.sig == 1 << 63, f.sign) {
                    (0, true, false) => FpResult::exact(F80::ONE, de),
                    (0, true, true) => FpResult::exact(F80::new(true, 0x3FFE, 1 << 63), de),
                    _ => FpResult::invalid(),
                };
            }
            round_wide(expm1(Wide::from_finite(f).mul(LN2)), env, de)
        }
    }
}

/// FSCALE: ST(0) * 2^trunc(ST(1)).
pub fn fscale(st0: F80, st1: F80, env: &X87Env) -> FpResult {
    let (c0, c1) = (st0.class(), st1.class());
    if c0 == Class::Unsupported || c1 == Class::Unsupported {
        return FpResult::invalid();
    }
    if st0.is_nan() || st1.is_nan() {
        return propagate_nan(st0, st1);
    }
    let de = de_flag(matches!(c0, Class::Finite(_, true)) || matches!(c1, Class::Finite(_, true)));
    match (c0, c1) {
        (Class::Zero(_), Class::Inf(false)) | (Class::Inf(_), Class::Inf(true)) => {
            FpResult::invalid()
        }
        (Class::Zero(_), _) | (Class::Inf(_), _) => FpResult::exact(st0, de),
        (Class::Finite(f, _), Class::Inf(s1)) => {
            let v = if s1 { F80::ZERO } else { F80::INFINITY };
            FpResult::exact(v.with_sign(f.sign), de)
        }
        (Class::Finite(f, _), Class::Zero(_)) => {
            FpResult::rounded(f.into(), &env.round_env(false), de)
        }
        (Class::Finite(f, _), Class::Finite(s, _)) => {
            // Any scale beyond ±2^17 over/underflows regardless; clamp to keep i32 math safe.
            let n = match softfloat::round_to_integer(s, Rounding::Zero) {
                Some((mag, _)) => mag.min(1 << 17) as i32,
                None => 1 << 17,
            };
            let n = if s.sign { -n } else { n };
            let x = Exact::from(f);
            FpResult::rounded(
                Exact {
                    exp: x.exp + n,
                    ..x
                },
                &env.round_env(false),
                de,
            )
        }
        _ => FpResult::invalid(),
    }
}

/// FXTRACT: (exponent, significand); the significand ends up in ST(0).
pub fn fxtract(x: F80) -> (FpResult, FpResult) {
    match x.class() {
        Class::Unsupported => (FpResult::invalid(), FpResult::invalid()),
        Class::QNan | Class::SNan => {
            let r = propagate_nan(x, x);
            (r, r)
        }
        Class::Zero(s) => (
            FpResult {
                value: F80::INFINITY.negate(),
                flags: ZE,
                c1: false,
            },
            FpResult {
                value: F80::ZERO.with_sign(s),
                flags: ZE,
                c1: false,
            },
        ),
        Class::Inf(s) => (
            FpResult::exact(F80::INFINITY, 0),
            FpResult::exact(F80::INFINITY.with_sign(s), 0),
        ),
        Class::Finite(f, d) => {
            let exponent = super::convert::from_i64(f.exp as i64);
            let significand = F80::new(f.sign, BIAS as u16, f.sig);
            (
                FpResult::exact(exponent, de_flag(d)),
                FpResult::exact(significand, de_flag(d)),
            )
        }
    }
}

/// Outcome of FPREM/FPREM1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PremResult {
    pub result: FpResult,
    /// Low three quotient bits (Q2 Q1 Q0), reported in C0, C3, C1.
    pub quotient: u8,
    /// False for a partial remainder (C2 = 1, run the instruction again).
    pub complete: bool,
}

/// FPREM (`ieee = false`, truncating quotient) and FPREM1 (`ieee = true`, nearest).
pub fn fprem(st0: F80, st1: F80, ieee: bool) -> PremResult {
    let done = |result: FpResult| PremResult {
        result,
        quotient: 0,
        complete: true,
    };
    let (ca, cb) = (st0.class(), st1.class());
    if ca == Class::Unsupported || cb == Class::Unsupported {
        return done(FpResult::invalid());
    }
    if st0.is_nan() || st1.is_nan() {
        return done(propagate_nan(st0, st1));
    }
    let de = de_flag(matches!(ca, Class::Finite(_, true)) || matches!(cb, Class::Finite(_, true)));
    let (a, b) = match (ca, cb) {
        (Class::Inf(_), _) | (_, Class::Zero(_)) => return done(FpResult::invalid()),
        (Class::Zero(_), _) | (Class::Finite(..), Class::Inf(_)) => {
            return done(FpResult::exact(st0, de));
        }
        (Class::Finite(a, _), Class::Finite(b, _)) => (a, b),
        _ => return done(FpResult::invalid()),
    };
    let d = a.exp - b.exp;
    if d < -1 || (d == -1 && !ieee) {
        return done(FpResult::exact(st0, de));
    }
    // Partial remainder: reduce by a multiple of b * 2^(d - n) with n in 32..=63.
    let (n, complete) = if d >= 64 {
        (32 + (d & 31), false)
    } else {
        (d, true)
    };
    let (num, den, unit_exp) = if n >= 0 {
        ((a.sig as u128) << n, b.sig as u128, a.exp - 63 - n)
    } else {
        (a.sig as u128, (b.sig as u128) << 1, a.exp - 63)
    };
    let mut q = num / den;
    let mut r = num % den;
    let mut sign = a.sign;
    if ieee && complete && (r * 2 > den || (r * 2 == den && q & 1 == 1)) {
        r = den - r;
        q += 1;
        sign = !sign;
    }
    let value = if r == 0 {
        F80::ZERO.with_sign(a.sign)
    } else {
        let exact = Exact {
            sign,
            exp: unit_exp + 127,
            sig: r,
        };
        F80::from_rounded(softfloat::round(
            exact,
            &softfloat::RoundEnv::masked(FMT_EXT, Rounding::NearestEven),
        ))
    };
    PremResult {
        result: FpResult::exact(value, de),
        quotient: (q & 7) as u8,
        complete,
    }
}

/// The constant loaded by FLDPI/FLDL2E/FLDL2T/FLDLG2/FLDLN2, rounded per RC.
pub fn load_constant(which: Constant, env: &X87Env) -> F80 {
    let v = match which {
        Constant::Pi => PI,
        Constant::Log2E => LOG2E,
        Constant::Log2Ten => wide::LOG2_10,
        Constant::Log10Two => wide::LOG10_2,
        Constant::Ln2 => LN2,
    };
    let r = softfloat::round(
        v.to_exact(),
        &softfloat::RoundEnv::masked(FMT_EXT, env.rounding),
    );
    F80::from_rounded(r)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Constant {
    Pi,
    Log2E,
    Log2Ten,
    Log10Two,
    Ln2,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fpu::convert::{f64_to_f80, f80_to_f64, from_i64};

    fn f(x: f64) -> F80 {
        f64_to_f80(x.to_bits()).0
    }
    fn to_f64(v: F80) -> f64 {
        f64::from_bits(f80_to_f64(v, &X87Env::default()).0)
    }

    #[test]
    fn fpu_transcend_known_bit_patterns() {
        let env = X87Env::default();
        let pi = load_constant(Constant::Pi, &env);
        assert_eq!(pi, F80::new(false, 0x4000, 0xC90F_DAA2_2168_C235));
        let down = X87Env {
            rounding: Rounding::Down,
            ..env
        };
        assert_eq!(
            load_constant(Constant::Pi, &down).mantissa,
            0xC90F_DAA2_2168_C234
        );
        // sin(pi/6) with pi/6 rounded to 64 bits: 0.5 minus a tiny amount, rounds to 0.5.
        let pi_6 = crate::fpu::arith::div(pi, from_i64(6), &env).value;
        let s = fsin(pi_6, &env).unwrap();
        assert_eq!(s.value, F80::new(false, 0x3FFE, 0x8000_0000_0000_0000));
        assert_eq!(fcos(F80::ZERO, &env).unwrap().value, F80::ONE);
        // sin(pi) for 64-bit pi is the tiny residual pi - pi64 (~ -5.0165e-20).
        let s = fsin(pi, &env).unwrap().value;
        assert!(
            (to_f64(s) - (-5.016557612668332e-20)).abs() < 1e-33,
            "{}",
            to_f64(s)
        );
        // Out of range: C2 path.
        assert!(fsin(F80::new(false, 0x3FFF + 63, 1 << 63), &env).is_none());
    }

    #[test]
    fn fpu_transcend_against_host_libm() {
        let env = X87Env::default();
        let mut seed = 0xDEAD_BEEF_1234_5678u64;
        for _ in 0..300 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let x = ((seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 20.0;
            let close = |got: F80, want: f64| {
                let g = to_f64(got);
                assert!(
                    (g - want).abs() <= want.abs() * 4e-16 + 1e-300,
                    "got {g} want {want} at x={x}"
                );
            };
            close(fsin(f(x), &env).unwrap().value, x.sin());
            close(fcos(f(x), &env).unwrap().value, x.cos());
            close(fptan(f(x), &env).unwrap().value, x.tan());
            let y = x * 0.37 + 0.1;
            close(fpatan(f(y), f(x), &env).value, y.atan2(x));
            let u = x / 10.0;
            close(
                f2xm1(f(u), &env).value,
                (u * std::f64::consts::LN_2).exp_m1(),
            );
            close(
                fyl2x(f(y), f(x.abs() + 1e-3), &env).value,
                y * (x.abs() + 1e-3).log2(),
            );
            let v = x / 40.0;
            close(fyl2xp1(f(y), f(v), &env).value, y * v.ln_1p() / 2f64.ln());
        }
    }

    #[test]
    fn fpu_transcend_exact_and_special_cases() {
        let env = X87Env::default();
        assert_eq!(fyl2x(f(3.0), f(8.0), &env), FpResult::exact(f(9.0), 0));
        assert_eq!(fyl2x(f(1.0), F80::ZERO, &env).flags, ZE);
        assert_eq!(fyl2x(f(1.0), f(-1.0), &env).value, F80::INDEFINITE);
        assert_eq!(f2xm1(f(1.0), &env).value, f(1.0));
        assert_eq!(f2xm1(f(-1.0), &env).value, f(-0.5));
        assert_eq!(
            fpatan(f(1.0), F80::ZERO, &env).value,
            load_constant(Constant::Pi, &env)
                .with_sign(false)
                .pipe_half()
        );
        assert_eq!(fscale(f(1.5), f(3.9), &env).value, f(12.0));
        assert_eq!(
            fscale(f(1.0), f(-20000.0), &env).flags,
            softfloat::UE | softfloat::PE
        );
        let (e, s) = fxtract(f(-12.0));
        assert_eq!((e.value, s.value), (f(3.0), f(-1.5)));
        let r = fprem(f(10.0), f(3.0), false);
        assert_eq!((r.result.value, r.quotient, r.complete), (f(1.0), 3, true));
        let r = fprem(f(11.0), f(3.0), true);
        assert_eq!((r.result.value, r.quotient), (f(-1.0), 4));
        let r = fprem(f(1e300), f(3.0), false);
        assert!(!r.complete);
        // Repeating FPREM until complete gives the exact fmod.
        let mut x = f(1e300);
        loop {
            let r = fprem(x, f(3.0), false);
            x = r.result.value;
            if r.complete {
                break;
            }
        }
        assert_eq!(to_f64(x), 1e300f64 % 3.0);
        // Tiny sin argument: sin(x) < x, so rounding down must step below x.
        let tiny = f(1e-10);
        let down = X87Env {
            rounding: Rounding::Down,
            ..env
        };
        let s = fsin(tiny, &down).unwrap();
        assert_eq!(s.value.mantissa, tiny.mantissa - 1);
        assert_eq!(fsin(tiny, &env).unwrap().value, tiny);
        // atan(y/1) for tiny y is just below y as well; e^x-1 just above x*ln2.
        let y = F80::new(false, 0x3FFF - 80, 0x8000_0000_0000_0000);
        let r = fpatan(y, F80::ONE, &down);
        assert_eq!(
            (r.value.exponent(), r.value.mantissa),
            (0x3FFF - 81, u64::MAX)
        );
        assert_eq!(r.flags & softfloat::PE, softfloat::PE);
        assert_eq!(fpatan(y, F80::ONE, &env).value, y);
    }

    include!("transcend_cases.rs");

    /// Every case must be within one ulp of the correctly rounded value; count exact hits.
    #[test]
    fn fpu_transcend_against_mpmath_table() {
        let mut exact = 0;
        for &(op, rc, xse, xm, yse, ym, rse, rm) in CASES.iter() {
            let env = X87Env {
                rounding: Rounding::from_bits(rc),
                ..X87Env::default()
            };
            let x = F80 {
                sign_exp: xse,
                mantissa: xm,
            };
            let y = F80 {
                sign_exp: yse,
                mantissa: ym,
            };
            let got = match op {
                "sin" => fsin(x, &env).unwrap().value,
                "cos" => fcos(x, &env).unwrap().value,
                "tan" => fptan(x, &env).unwrap().value,
                "f2xm1" => f2xm1(x, &env).value,
                "atan" => fpatan(y, x, &env).value,
                "yl2x" => fyl2x(y, x, &env).value,
                _ => fyl2xp1(y, x, &env).value,
            };
            assert_eq!(got.sign_exp, rse, "{op} rc={rc} {xse:04x}:{xm:016x}");
            assert!(
                got.mantissa.abs_diff(rm) <= 1,
                "{op} rc={rc} {xse:04x}:{xm:016x} got {:016x} want {rm:016x}",
                got.mantissa
            );
            exact += (got.mantissa == rm) as usize;
        }
        assert_eq!(
            exact,
            CASES.len(),
            "all reference cases are correctly rounded"
        );
    }

    trait Half {
        fn pipe_half(self) -> F80;
    }
    impl Half for F80 {
        fn pipe_half(self) -> F80 {
            F80::new(self.sign(), self.exponent() - 1, self.mantissa)
        }
    }
}
