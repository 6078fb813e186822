//! x87 basic arithmetic on [`F80`]: special-operand rules, precision control and the
//! rounding step. Pure functions: they report flags and leave masking decisions about
//! storing the result (invalid, zero-divide, denormal unmasked) to the caller.

use std::cmp::Ordering;

use super::f80::{Class, F80};
use super::softfloat::{
    self, DE, Exact, FMT_EXT, Finite, Format, IE, OE, RoundEnv, Rounding, UE, ZE,
};

/// Precision control (control word bits 8-9). Only FADD/FSUB/FMUL/FDIV/FSQRT honour it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Precision {
    Single,
    Double,
    #[default]
    Extended,
}

impl Precision {
    pub fn from_control_word(cw: u16) -> Self {
        match (cw >> 8) & 3 {
            0 => Precision::Single,
            2 => Precision::Double,
            // 01 is reserved; treat it like 64-bit precision.
            _ => Precision::Extended,
        }
    }
    pub fn bits(self) -> u32 {
        match self {
            Precision::Single => 24,
            Precision::Double => 53,
            Precision::Extended => 64,
        }
    }
}

/// The parts of the control word that influence arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct X87Env {
    pub rounding: Rounding,
    pub precision: Precision,
    /// Exception mask bits (control word bits 0-5: IM DM ZM OM UM PM).
    pub masks: u8,
}

impl Default for X87Env {
    /// The FNINIT environment: all masked, nearest-even, 64-bit precision.
    fn default() -> Self {
        X87Env::from_control_word(0x037F)
    }
}

impl X87Env {
    pub fn from_control_word(cw: u16) -> Self {
        X87Env {
            rounding: Rounding::from_bits(cw >> 10),
            precision: Precision::from_control_word(cw),
            masks: (cw & 0x3F) as u8,
        }
    }

    /// Rounding environment for a register result; `honour_pc` selects whether precision
    /// control applies (only to the five basic operations).
    pub(crate) fn round_env(&self, honour_pc: bool) -> RoundEnv {
        let precision = if honour_pc { self.precision.bits() } else { 64 };
        self.round_env_for(
            Format {
                precision,
                ..FMT_EXT
            },
            true,
        )
    }

    /// Rounding environment for a conversion to `format` (memory stores do not wrap).
    pub(crate) fn round_env_for(&self, format: Format, wrap: bool) -> RoundEnv {
        RoundEnv {
            rounding: self.rounding,
            format,
            overflow_masked: self.masks & OE != 0,
            underflow_masked: self.masks & UE != 0,
            wrap_unmasked: wrap,
            flush_to_zero: false,
        }
    }
}

/// A register result with the exceptions it raised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FpResult {
    pub value: F80,
    pub flags: u8,
    /// C1 after the operation: set when the result was rounded up in magnitude.
    pub c1: bool,
}

impl FpResult {
    pub(crate) fn exact(value: F80, flags: u8) -> Self {
        FpResult {
            value,
            flags,
            c1: false,
        }
    }
    pub(crate) fn invalid() -> Self {
        FpResult::exact(F80::INDEFINITE, IE)
    }
    pub(crate) fn rounded(x: Exact, env: &RoundEnv, flags: u8) -> Self {
        let r = softfloat::round(x, env);
        FpResult {
            value: F80::from_rounded(r),
            flags: flags | r.flags,
            c1: r.round_up,
        }
    }
}

/// x87 NaN propagation (SDM vol. 1 table 4-7): a QNaN beats an SNaN, otherwise the NaN
/// with the larger significand wins; the result is always quiet.
pub(crate) fn propagate_nan(a: F80, b: F80) -> FpResult {
    let flags = if a.is_snan() || b.is_snan() { IE } else { 0 };
    let pick = match (a.is_nan(), b.is_nan()) {
        (true, false) => a,
        (false, true) => b,
        _ if a.is_snan() != b.is_snan() => {
            if a.is_snan() {
                b
            } else {
                a
            }
        }
        _ => match (a.mantissa | 1 << 62).cmp(&(b.mantissa | 1 << 62)) {
            Ordering::Greater => a,
            Ordering::Less => b,
            Ordering::Equal if a.sign() && !b.sign() => b,
            Ordering::Equal => a,
        },
    };
    FpResult::exact(pick.quieted(), flags)
}

/// Shared prologue for two-operand operations: returns the early result for NaN or
/// unsupported operands.
fn nan_or_unsupported(a: F80, b: F80) -> Option<FpResult> {
    let (ca, cb) = (a.class(), b.class());
    if ca == Class::Unsupported || cb == Class::Unsupported {
        return Some(FpResult::invalid());
    }
    if a.is_nan() || b.is_nan() {
        return Some(propagate_nan(a, b));
    }
    None
}

fn denormal_flag(a: Class, b: Class) -> u8 {
    let d = |c: Class| matches!(c, Class::Finite(_, true));
    if d(a) || d(b) { DE } else { 0 }
}

fn signed_zero(sign: bool) -> F80 {
    F80::ZERO.with_sign(sign)
}

fn signed_inf(sign: bool) -> F80 {
    F80::INFINITY.with_sign(sign)
}

/// a + b (FADD).
pub fn add(a: F80, b: F80, env: &X87Env) -> FpResult {
    super::fast::add(a, b, false, env).unwrap_or_else(|| add_signed(a, b, false, env))
}

/// a - b (FSUB; FSUBR swaps the operands).
pub fn sub(a: F80, b: F80, env: &X87Env) -> FpResult {
    super::fast::add(a, b, true, env).unwrap_or_else(|| add_signed(a, b, true, env))
}

#[cfg(test)]
pub(crate) fn soft_add(a: F80, b: F80, negate_b: bool, env: &X87Env) -> FpResult {
    add_signed(a, b, negate_b, env)
}
#[cfg(test)]
pub(crate) fn soft_mul(a: F80, b: F80, env: &X87Env) -> FpResult {
    mul_soft(a, b, env)
}
#[cfg(test)]
pub(crate) fn soft_div(a: F80, b: F80, env: &X87Env) -> FpResult {
    div_soft(a, b, env)
}
#[cfg(test)]
pub(crate) fn soft_sqrt(a: F80, env: &X87Env) -> FpResult {
    sqrt_soft(a, env)
}

fn add_signed(a: F80, b: F80, negate_b: bool, env: &X87Env) -> FpResult {
    if let Some(r) = nan_or_unsupported(a, b) {
        return r;
    }
    let b = if negate_b { b.negate() } else { b };
    let (ca, cb) = (a.class(), b.class());
    let de = denormal_flag(ca, cb);
    let renv = env.round_env(true);
    match (ca, cb) {
        (Class::Inf(sa), Class::Inf(sb)) if sa != sb => FpResult::invalid(),
        (Class::Inf(s), _) | (_, Class::Inf(s)) => FpResult::exact(signed_inf(s), de),
        (Class::Zero(sa), Class::Zero(sb)) => {
            let sign = if sa == sb {
                sa
            } else {
                env.rounding == Rounding::Down
            };
            FpResult::exact(signed_zero(sign), 0)
        }
        // x + 0 still rounds x to the selected precision.
        (Class::Finite(f, _), Class::Zero(_)) | (Class::Zero(_), Class::Finite(f, _)) => {
            FpResult::rounded(f.into(), &renv, de)
        }
        (Class::Finite(fa, _), Class::Finite(fb, _)) => {
            FpResult::rounded(softfloat::add(fa, fb, env.rounding), &renv, de)
        }
        _ => FpResult::invalid(),
    }
}

/// a * b (FMUL).
pub fn mul(a: F80, b: F80, env: &X87Env) -> FpResult {
    super::fast::mul(a, b, env).unwrap_or_else(|| mul_soft(a, b, env))
}

fn mul_soft(a: F80, b: F80, env: &X87Env) -> FpResult {
    if let Some(r) = nan_or_unsupported(a, b) {
        return r;
    }
    let (ca, cb) = (a.class(), b.class());
    let de = denormal_flag(ca, cb);
    let sign = a.sign() ^ b.sign();
    match (ca, cb) {
        (Class::Inf(_), Class::Zero(_)) | (Class::Zero(_), Class::Inf(_)) => FpResult::invalid(),
        (Class::Inf(_), _) | (_, Class::Inf(_)) => FpResult::exact(signed_inf(sign), de),
        (Class::Zero(_), _) | (_, Class::Zero(_)) => FpResult::exact(signed_zero(sign), de),
        (Class::Finite(fa, _), Class::Finite(fb, _)) => {
            FpResult::rounded(softfloat::mul(fa, fb), &env.round_env(true), de)
        }
        _ => FpResult::invalid(),
    }
}

/// a / b (FDIV; FDIVR swaps the operands).
pub fn div(a: F80, b: F80, env: &X87Env) -> FpResult {
    super::fast::div(a, b, env).unwrap_or_else(|| div_soft(a, b, env))
}

fn div_soft(a: F80, b: F80, env: &X87Env) -> FpResult {
    if let Some(r) = nan_or_unsupported(a, b) {
        return r;
    }
    let (ca, cb) = (a.class(), b.class());
    let de = denormal_flag(ca, cb);
    let sign = a.sign() ^ b.sign();
    match (ca, cb) {
        (Class::Inf(_), Class::Inf(_)) | (Class::Zero(_), Class::Zero(_)) => FpResult::invalid(),
        (Class::Inf(_), _) => FpResult::exact(signed_inf(sign), de),
        (_, Class::Inf(_)) => FpResult::exact(signed_zero(sign), de),
        (Class::Zero(_), _) => FpResult::exact(signed_zero(sign), de),
        (_, Class::Zero(_)) => FpResult::exact(signed_inf(sign), de | ZE),
        (Class::Finite(fa, _), Class::Finite(fb, _)) => {
            FpResult::rounded(softfloat::div(fa, fb), &env.round_env(true), de)
        }
        _ => FpResult::invalid(),
    }
}

/// Square root (FSQRT).
pub fn sqrt(a: F80, env: &X87Env) -> FpResult {
    super::fast::sqrt(a, env).unwrap_or_else(|| sqrt_soft(a, env))
}

fn sqrt_soft(a: F80, env: &X87Env) -> FpResult {
    match a.class() {
        Class::Unsupported => FpResult::invalid(),
        Class::QNan | Class::SNan => propagate_nan(a, a),
        Class::Zero(_) | Class::Inf(false) => FpResult::exact(a, 0),
        Class::Inf(true) | Class::Finite(Finite { sign: true, .. }, _) => FpResult::invalid(),
        Class::Finite(f, d) => FpResult::rounded(
            softfloat::sqrt(f),
            &env.round_env(true),
            if d { DE } else { 0 },
        ),
    }
}

/// Round to integer under the rounding mode (FRNDINT); precision control is ignored.
pub fn round_to_integer(a: F80, env: &X87Env) -> FpResult {
    match a.class() {
        Class::Unsupported => FpResult::invalid(),
        Class::QNan | Class::SNan => propagate_nan(a, a),
        Class::Zero(_) | Class::Inf(_) => FpResult::exact(a, 0),
        Class::Finite(f, d) => {
            let de = if d { DE } else { 0 };
            match softfloat::round_to_integer(f, env.rounding) {
                Some((mag, inexact)) => {
                    let value = if mag == 0 {
                        signed_zero(f.sign)
                    } else {
                        let exact = Exact {
                            sign: f.sign,
                            exp: 127,
                            sig: mag,
                        };
                        F80::from_rounded(softfloat::round(
                            exact,
                            &RoundEnv::masked(FMT_EXT, env.rounding),
                        ))
                    };
                    // Rounded up in magnitude when the integer exceeds the truncated value.
                    let truncated =
                        softfloat::round_to_integer(f, Rounding::Zero).map_or(0, |(t, _)| t);
                    let up = inexact && mag > truncated;
                    FpResult {
                        value,
                        flags: de | if inexact { softfloat::PE } else { 0 },
                        c1: up,
                    }
                }
                None => FpResult::exact(a, de),
            }
        }
    }
}

/// Result of an x87 comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compare {
    Less,
    Equal,
    Greater,
    Unordered,
}

/// Compares a with b. `quiet` selects FUCOM semantics (QNaN operands do not raise #IA).
pub fn compare(a: F80, b: F80, quiet: bool) -> (Compare, u8) {
    let (ca, cb) = (a.class(), b.class());
    if ca == Class::Unsupported || cb == Class::Unsupported {
        return (Compare::Unordered, IE);
    }
    if a.is_nan() || b.is_nan() {
        let signal = a.is_snan() || b.is_snan() || !quiet;
        return (Compare::Unordered, if signal { IE } else { 0 });
    }
    let de = denormal_flag(ca, cb);
    // Map to a totally ordered key: (sign-adjusted magnitude rank).
    let key = |c: Class| -> (i8, i32, u64) {
        match c {
            Class::Zero(_) => (0, 0, 0),
            Class::Inf(s) => (if s { -2 } else { 2 }, 0, 0),
            Class::Finite(f, _) if f.sign => (-1, -f.exp, !f.sig),
            Class::Finite(f, _) => (1, f.exp, f.sig),
            _ => (0, 0, 0),
        }
    };
    let ord = match key(ca).cmp(&key(cb)) {
        Ordering::Less => Compare::Less,
        Ordering::Equal => Compare::Equal,
        Ordering::Greater => Compare::Greater,
    };
    (ord, de)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fpu::convert::{f64_to_f80, f80_to_f64};

    fn f(x: f64) -> F80 {
        f64_to_f80(x.to_bits()).0
    }

    #[test]
    fn fpu_arith_basic_values() {
        let env = X87Env::default();
        assert_eq!(add(f(1.5), f(2.25), &env).value, f(3.75));
        assert_eq!(sub(f(1.0), f(1.0), &env).value, F80::ZERO);
        let down = X87Env {
            rounding: Rounding::Down,
            ..env
        };
        assert_eq!(sub(f(1.0), f(1.0), &down).value, F80::ZERO.negate());
        assert_eq!(mul(f(-3.0), f(0.5), &env).value, f(-1.5));
        let third = div(F80::ONE, f(3.0), &env);
        assert_eq!(third.value, F80::new(false, 0x3FFD, 0xAAAA_AAAA_AAAA_AAAB));
        assert_eq!(third.flags, softfloat::PE);
        assert!(third.c1);
        let r = sqrt(f(2.0), &env);
        assert_eq!(r.value, F80::new(false, 0x3FFF, 0xB504_F333_F9DE_6484));
    }

    #[test]
    fn fpu_arith_precision_control() {
        let env = X87Env {
            precision: Precision::Single,
            ..X87Env::default()
        };
        let third = div(F80::ONE, f(3.0), &env).value;
        assert_eq!(third.mantissa, 0xAAAA_AB00_0000_0000);
        let env = X87Env {
            precision: Precision::Double,
            ..X87Env::default()
        };
        assert_eq!(
            f80_to_f64(div(F80::ONE, f(3.0), &env).value, &env).0,
            (1.0f64 / 3.0).to_bits()
        );
        // Adding zero still rounds to the selected precision.
        let x = F80::new(false, 0x3FFF, 0xFFFF_FFFF_FFFF_FFFF);
        assert_eq!(add(x, F80::ZERO, &env).value, f(2.0));
    }

    #[test]
    fn fpu_arith_specials() {
        let env = X87Env::default();
        let r = div(F80::ONE, F80::ZERO, &env);
        assert_eq!((r.value, r.flags), (F80::INFINITY, ZE));
        assert_eq!(div(F80::ZERO, F80::ZERO, &env).value, F80::INDEFINITE);
        assert_eq!(sub(F80::INFINITY, F80::INFINITY, &env).flags, IE);
        assert_eq!(mul(F80::INFINITY, F80::ZERO, &env).value, F80::INDEFINITE);
        assert_eq!(sqrt(f(-1.0), &env).value, F80::INDEFINITE);
        assert_eq!(sqrt(F80::ZERO.negate(), &env).value, F80::ZERO.negate());
        let snan = F80::new(false, 0x7FFF, 0x8000_0000_0000_0001);
        let qnan = F80::new(true, 0x7FFF, 0xC000_0000_0000_0005);
        let r = add(snan, qnan, &env);
        assert_eq!((r.value, r.flags), (qnan, IE));
        let r = add(f(1.0), snan, &env);
        assert_eq!((r.value, r.flags), (snan.quieted(), IE));
        let unnormal = F80::new(false, 0x3FFF, 0x4000_0000_0000_0000);
        assert_eq!(add(unnormal, F80::ONE, &env).value, F80::INDEFINITE);
        let denormal = F80::new(false, 0, 1);
        assert_eq!(add(denormal, F80::ZERO, &env).flags, DE);
    }

    #[test]
    fn fpu_arith_overflow_underflow() {
        let env = X87Env::default();
        let max = F80::new(false, 0x7FFE, u64::MAX);
        let r = mul(max, f(2.0), &env);
        assert_eq!((r.value, r.flags), (F80::INFINITY, OE | softfloat::PE));
        // Unmasked overflow delivers the result with the exponent reduced by 24576.
        let unmasked = X87Env {
            masks: 0x3F & !OE,
            ..env
        };
        let r = mul(max, f(2.0), &unmasked);
        assert_eq!(r.value, F80::new(false, 0x7FFF - 24576, u64::MAX));
        assert_eq!(r.flags, OE);
        let min = F80::new(false, 1, 1 << 63);
        let r = mul(min, f(0.5), &env);
        assert_eq!((r.value, r.flags), (F80::new(false, 0, 1 << 62), 0));
        let r = div(min, f(3.0), &env);
        assert_eq!(r.flags, UE | softfloat::PE);
    }

    #[test]
    fn fpu_arith_compare_and_round() {
        assert_eq!(compare(f(1.0), f(2.0), false), (Compare::Less, 0));
        assert_eq!(compare(f(-1.0), f(-2.0), false), (Compare::Greater, 0));
        assert_eq!(
            compare(F80::ZERO.negate(), F80::ZERO, false),
            (Compare::Equal, 0)
        );
        assert_eq!(
            compare(F80::INDEFINITE, F80::ONE, true),
            (Compare::Unordered, 0)
        );
        assert_eq!(
            compare(F80::INDEFINITE, F80::ONE, false),
            (Compare::Unordered, IE)
        );
        let env = X87Env::default();
        assert_eq!(round_to_integer(f(2.5), &env).value, f(2.0));
        assert_eq!(
            round_to_integer(
                f(-2.5),
                &X87Env {
                    rounding: Rounding::Down,
                    ..env
                }
            )
            .value,
            f(-3.0)
        );
        assert!(
            round_to_integer(
                f(-2.5),
                &X87Env {
                    rounding: Rounding::Down,
                    ..env
                }
            )
            .c1
        );
        assert_eq!(round_to_integer(f(0.25), &env).value, F80::ZERO);
    }

    include!("arith_cases.rs");

    /// Bit-exact agreement with mpmath in every rounding mode and precision setting.
    #[test]
    fn fpu_arith_matches_mpmath_all_modes() {
        for &(op, cw, ase, am, bse, bm, rse, rm) in ARITH_CASES.iter() {
            let env = X87Env::from_control_word(cw);
            let a = F80 {
                sign_exp: ase,
                mantissa: am,
            };
            let b = F80 {
                sign_exp: bse,
                mantissa: bm,
            };
            let r = match op {
                "add" => add(a, b, &env),
                "sub" => sub(a, b, &env),
                "mul" => mul(a, b, &env),
                "div" => div(a, b, &env),
                _ => sqrt(a, &env),
            };
            assert_eq!(
                (r.value.sign_exp, r.value.mantissa),
                (rse, rm),
                "{op} cw={cw:04x} {ase:04x}:{am:016x} {bse:04x}:{bm:016x}"
            );
        }
    }

    /// Property check: with PC=53, x87 add/sub/mul/div/sqrt agree bit-for-bit with the
    /// host's IEEE double arithmetic (finite, normal results).
    #[test]
    fn fpu_arith_matches_host_f64() {
        let env = X87Env {
            precision: Precision::Double,
            ..X87Env::default()
        };
        let mut seed = 0x1234_5678_9ABC_DEF0u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for i in 0..20000 {
            let ra = next();
            let rb = next();
            // Mix wide-exponent randoms with near-equal operands (cancellation).
            let a =
                f64::from_bits((ra & 0x800F_FFFF_FFFF_FFFF) | ((0x3C0 + (ra >> 52) % 0x80) << 52));
            let b = if i % 4 == 0 {
                f64::from_bits(a.to_bits() ^ (rb & 0xFF))
            } else {
                f64::from_bits((rb & 0x800F_FFFF_FFFF_FFFF) | ((0x3C0 + (rb >> 52) % 0x80) << 52))
            };
            let to64 = |r: FpResult| f80_to_f64(r.value, &env).0;
            assert_eq!(to64(add(f(a), f(b), &env)), (a + b).to_bits(), "{a} + {b}");
            assert_eq!(to64(sub(f(a), f(b), &env)), (a - b).to_bits(), "{a} - {b}");
            assert_eq!(to64(mul(f(a), f(b), &env)), (a * b).to_bits(), "{a} * {b}");
            assert_eq!(to64(div(f(a), f(b), &env)), (a / b).to_bits(), "{a} / {b}");
            assert_eq!(
                to64(sqrt(f(a.abs()), &env)),
                a.abs().sqrt().to_bits(),
                "sqrt {a}"
            );
        }
    }
}
