//! Host-f64 fast path for x87 arithmetic under precision control 53 (the control word
//! 32-bit Windows runtimes use) and round-to-nearest.
//!
//! It applies when both operands are exactly representable as normal f64 values and the
//! f64 result is normal: then rounding to 53 bits in the x87's wider exponent range is
//! exactly f64 rounding. The inexact flag and C1 (rounded up in magnitude) come from
//! the exact residual (TwoSum or FMA). Everything else returns None.

use super::arith::{FpResult, Precision, X87Env};
use super::convert::f64_to_f80;
use super::f80::F80;
use super::softfloat::{PE, Rounding};

/// Magnitudes below this could make an FMA residual underflow.
const SAFE_MIN: f64 = f64::MIN_POSITIVE * (1u64 << 54) as f64;

/// The f64 equal to `v`, if `v` is a normal number with at most 53 significant bits in
/// f64's normal range.
fn as_f64(v: F80) -> Option<f64> {
    let e = v.exponent() as i32 - 16383;
    if v.mantissa >> 63 == 0 || v.mantissa & 0x7FF != 0 || !(-1022..=1023).contains(&e) {
        return None;
    }
    let bits = ((v.sign() as u64) << 63)
        | (((e + 1023) as u64) << 52)
        | ((v.mantissa >> 11) & ((1 << 52) - 1));
    Some(f64::from_bits(bits))
}

fn usable(env: &X87Env) -> bool {
    env.precision == Precision::Double && env.rounding == Rounding::NearestEven
}

/// Packs a normal f64 result whose exact value exceeds it by `residual_sign_vs_result`.
fn finish(r: f64, inexact: bool, up: bool) -> Option<FpResult> {
    if !r.is_normal() || r.abs() < SAFE_MIN {
        return None;
    }
    let value: F80 = f64_to_f80(r.to_bits()).0;
    Some(FpResult {
        value,
        flags: if inexact { PE } else { 0 },
        c1: inexact && up,
    })
}

/// True when the rounding error `err = exact - r` means |r| > |exact|.
fn rounded_up(r: f64, err: f64) -> bool {
    err != 0.0 && (err < 0.0) != (r < 0.0)
}

pub(super) fn add(a: F80, b: F80, negate_b: bool, env: &X87Env) -> Option<FpResult> {
    if !usable(env) {
        return None;
    }
    let (x, y) = (as_f64(a)?, as_f64(b)?);
    let y = if negate_b { -y } else { y };
    let s = x + y;
    let bb = s - x;
    let err = (x - (s - bb)) + (y - bb);
    finish(s, err != 0.0, rounded_up(s, err))
}

pub(super) fn mul(a: F80, b: F80, env: &X87Env) -> Option<FpResult> {
    if !usable(env) {
        return None;
    }
    let (x, y) = (as_f64(a)?, as_f64(b)?);
    let p = x * y;
    if !p.is_normal() || p.abs() < SAFE_MIN {
        return None;
    }
    let err = x.mul_add(y, -p);
    finish(p, err != 0.0, rounded_up(p, err))
}

pub(super) fn div(a: F80, b: F80, env: &X87Env) -> Option<FpResult> {
    if !usable(env) {
        return None;
    }
    let (x, y) = (as_f64(a)?, as_f64(b)?);
    if x.abs() < SAFE_MIN {
        return None;
    }
    let q = x / y;
    if !q.is_normal() || q.abs() < SAFE_MIN {
        return None;
    }
    // q*y - x, exactly; its sign relative to y tells whether q overshoots x/y.
    let rem = q.mul_add(y, -x);
    let up = rem != 0.0 && ((rem > 0.0) == (y > 0.0)) == (q > 0.0);
    finish(q, rem != 0.0, up)
}

pub(super) fn sqrt(a: F80, env: &X87Env) -> Option<FpResult> {
    if !usable(env) {
        return None;
    }
    let x = as_f64(a)?;
    if x < SAFE_MIN {
        return None;
    }
    let r = x.sqrt();
    let rem = r.mul_add(r, -x);
    finish(r, rem != 0.0, rem > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fpu::arith;

    /// Wherever the fast path answers it must match the soft-float core exactly,
    /// including flags and C1.
    #[test]
    fn fpu_fast_path_agrees_with_softfloat() {
        let env = X87Env::from_control_word(0x027F);
        let mut seed = 0xABCD_EF01_2345_6789u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut answered = 0;
        for n in 0..30000 {
            let mk = |r: u64| {
                let e = if r & 3 == 0 {
                    0x3FFF - 1100 + (r >> 8) % 2200
                } else {
                    0x3FFF - 40 + (r >> 8) % 80
                };
                let m = (r | (1 << 63)) & !0x7FF;
                let m = if n % 4 == 0 { m & !0xFFFF_FFFF } else { m };
                F80::new(r >> 62 & 1 == 1, e as u16, m)
            };
            let (a, b) = (mk(next()), mk(next()));
            let pairs = [
                (add(a, b, false, &env), arith::soft_add(a, b, false, &env)),
                (add(a, b, true, &env), arith::soft_add(a, b, true, &env)),
                (mul(a, b, &env), arith::soft_mul(a, b, &env)),
                (div(a, b, &env), arith::soft_div(a, b, &env)),
                (sqrt(a.abs(), &env), arith::soft_sqrt(a.abs(), &env)),
            ];
            for (k, (fast, soft)) in pairs.into_iter().enumerate() {
                if let Some(f) = fast {
                    assert_eq!(f, soft, "op {k}: {a:?} {b:?}");
                    answered += 1;
                }
            }
        }
        assert!(answered > 50_000, "fast path answered {answered}");
        // Other control words never take the fast path.
        let one = F80::ONE;
        assert!(add(one, one, false, &X87Env::default()).is_none());
    }
}
