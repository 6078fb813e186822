//! Host-float fast path for the common SSE case.
//!
//! With round-to-nearest, normal operands and a normal result, the host's IEEE
//! arithmetic gives the architected result bit for bit; only the inexact flag needs
//! work, which error-free transformations (TwoSum, exact f32 products in f64, FMA
//! residuals) provide exactly. f32 operations run in f64 and round once more: double
//! rounding is harmless for +, -, *, / and sqrt because 53 >= 2 * 24 + 2. Anything else
//! (NaN, infinity, zero, denormal, overflow, underflow, directed rounding) returns None
//! and takes the soft-float path, so DAZ/FTZ/flags stay exact.

use super::Mxcsr;
use super::float::{Arith, Kind};
use crate::fpu::softfloat::{PE, Rounding};

/// Smallest magnitude for which FMA residuals of f64 results cannot underflow.
const F64_SAFE_MIN: f64 = f64::MIN_POSITIVE * (1u64 << 54) as f64;

fn pe(inexact: bool) -> u8 {
    if inexact { PE } else { 0 }
}

/// TwoSum: the exact rounding error of s = x + y.
fn two_sum_err(x: f64, y: f64, s: f64) -> f64 {
    let bb = s - x;
    (x - (s - bb)) + (y - bb)
}

pub(super) fn arith(kind: Kind, op: Arith, a: u64, b: u64, mx: Mxcsr) -> Option<(u64, u8)> {
    if mx.rounding() != Rounding::NearestEven {
        return None;
    }
    if kind.bits() == 32 {
        let (x, y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
        if !x.is_normal() || !y.is_normal() {
            return None;
        }
        let (xd, yd) = (x as f64, y as f64);
        let (r, inexact) = match op {
            Arith::Add | Arith::Sub => {
                let yd = if op == Arith::Sub { -yd } else { yd };
                let s = xd + yd;
                let r = s as f32;
                (r, two_sum_err(xd, yd, s) != 0.0 || r as f64 != s)
            }
            Arith::Mul => {
                let p = xd * yd; // exact: 24 + 24 bits
                let r = p as f32;
                (r, r as f64 != p)
            }
            Arith::Div => {
                let r = (xd / yd) as f32;
                (r, r as f64 * yd != xd)
            }
        };
        return r.is_normal().then_some((r.to_bits() as u64, pe(inexact)));
    }
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    if !x.is_normal() || !y.is_normal() {
        return None;
    }
    let (r, inexact) = match op {
        Arith::Add | Arith::Sub => {
            let y = if op == Arith::Sub { -y } else { y };
            let s = x + y;
            (s, two_sum_err(x, y, s) != 0.0)
        }
        Arith::Mul => {
            let p = x * y;
            if p.abs() < F64_SAFE_MIN {
                return None;
            }
            (p, x.mul_add(y, -p) != 0.0)
        }
        Arith::Div => {
            let q = x / y;
            if q.abs() < F64_SAFE_MIN || x.abs() < F64_SAFE_MIN {
                return None;
            }
            (q, q.mul_add(y, -x) != 0.0)
        }
    };
    r.is_normal().then_some((r.to_bits(), pe(inexact)))
}

pub(super) fn sqrt(kind: Kind, a: u64, mx: Mxcsr) -> Option<(u64, u8)> {
    if mx.rounding() != Rounding::NearestEven {
        return None;
    }
    if kind.bits() == 32 {
        let x = f32::from_bits(a as u32);
        if !x.is_normal() || x < 0.0 {
            return None;
        }
        let r = (x as f64).sqrt() as f32;
        let rd = r as f64;
        return Some((r.to_bits() as u64, pe(rd * rd != x as f64)));
    }
    let x = f64::from_bits(a);
    if !x.is_normal() || x < F64_SAFE_MIN {
        return None;
    }
    let r = x.sqrt();
    Some((r.to_bits(), pe(r.mul_add(r, -x) != 0.0)))
}

#[cfg(test)]
mod tests {
    use super::super::MXCSR_DEFAULT;
    use super::super::float::{F32, F64, arith_soft, sqrt_soft};
    use super::*;

    /// The fast path must agree with the soft-float core (value and flags) whenever it
    /// answers; random operands with exponents clustered so all regimes occur.
    #[test]
    fn sse_fast_path_agrees_with_softfloat() {
        let mx = Mxcsr(MXCSR_DEFAULT);
        let mut seed = 0x5EED_FA57_0000_0001u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut answered = 0;
        for n in 0..40000 {
            let (ra, rb) = (next(), next());
            let few_bits = |v: u64| if n % 3 == 0 { v & !0xFFFF_FFFF } else { v };
            // f64 with exponents near 1.0 or near the extremes.
            let e64 = |r: u64| {
                if r & 0x300 == 0 {
                    (r >> 20) % 2046 + 1
                } else {
                    1023 - 30 + (r >> 20) % 60
                }
            };
            let a = few_bits((ra & 0x800F_FFFF_FFFF_FFFF) | (e64(ra) << 52));
            let b = few_bits((rb & 0x800F_FFFF_FFFF_FFFF) | (e64(rb) << 52));
            for op in [Arith::Add, Arith::Sub, Arith::Mul, Arith::Div] {
                if let Some(fast) = arith(F64, op, a, b, mx) {
                    assert_eq!(fast, arith_soft(F64, op, a, b, mx), "{op:?} {a:x} {b:x}");
                    answered += 1;
                }
                let e32 = |r: u64| {
                    if r & 0x3 == 0 {
                        ((r >> 8) % 254 + 1) as u32
                    } else {
                        (127 - 10 + (r >> 8) % 20) as u32
                    }
                };
                let fa = ((ra as u32 & 0x807F_FFFF) | (e32(ra) << 23)) as u64;
                let fb = ((rb as u32 & 0x807F_FFFF) | (e32(rb) << 23)) as u64;
                let (fa, fb) = if n % 3 == 0 {
                    (fa & !0xFFF, fb & !0xFFF)
                } else {
                    (fa, fb)
                };
                if let Some(fast) = arith(F32, op, fa, fb, mx) {
                    assert_eq!(
                        fast,
                        arith_soft(F32, op, fa, fb, mx),
                        "f32 {op:?} {fa:x} {fb:x}"
                    );
                }
            }
            let sq = a & !(1 << 63);
            if let Some(fast) = sqrt(F64, sq, mx) {
                assert_eq!(fast, sqrt_soft(F64, sq, mx));
            }
            let sq32 = (sq >> 32) & 0x7FFF_FFFF;
            if let Some(fast) = sqrt(F32, sq32, mx) {
                assert_eq!(fast, sqrt_soft(F32, sq32, mx));
            }
            // Perfect squares: exact results, no PE.
            let k = (ra >> 40) as f64;
            assert_eq!(
                sqrt(F64, (k * k).to_bits(), mx).map(|r| r.1),
                if k >= 1.0 { Some(0) } else { None }
            );
        }
        assert!(
            answered > 100_000,
            "fast path taken in the common case ({answered})"
        );
    }
}
