//! A 128-bit-significand working format for the transcendental instructions.
//!
//! Values carry about 126 correct bits through a handful of operations, roughly twice
//! the 64 bits of the final x87 result, so the final rounding is correct except in
//! astronomically rare near-halfway cases. Additions jam shifted-out bits into a sticky
//! bit so tiny correction terms still steer directed rounding the right way.

use super::softfloat::{Exact, Finite, shift_right_jam};

/// value = sig * 2^(exp - 127); `sig` has bit 127 set unless the value is zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Wide {
    pub sign: bool,
    pub exp: i32,
    pub sig: u128,
}

/// A positive constant from its 128-bit significand and exponent.
pub(crate) const fn w(sig: u128, exp: i32) -> Wide {
    Wide {
        sign: false,
        exp,
        sig,
    }
}

pub(crate) const ZERO: Wide = w(0, 0);
pub(crate) const ONE: Wide = w(1 << 127, 0);
pub(crate) const PI: Wide = w(0xc90fdaa22168c234c4c6628b80dc1cd1, 1);
pub(crate) const PI_2: Wide = w(0xc90fdaa22168c234c4c6628b80dc1cd1, 0);
pub(crate) const PI_4: Wide = w(0xc90fdaa22168c234c4c6628b80dc1cd1, -1);
pub(crate) const LN2: Wide = w(0xb17217f7d1cf79abc9e3b39803f2f6af, -1);
pub(crate) const LOG2E: Wide = w(0xb8aa3b295c17f0bbbe87fed0691d3e88, 0);
pub(crate) const LOG2_10: Wide = w(0xd49a784bcd1b8afe492bf6ff4dafdb4c, 1);
pub(crate) const LOG10_2: Wide = w(0x9a209a84fbcff7988f8959ac0b7c9178, -2);

fn mul_128(a: u128, b: u128) -> (u128, u128) {
    let (a1, a0) = (a >> 64, a & u64::MAX as u128);
    let (b1, b0) = (b >> 64, b & u64::MAX as u128);
    let lo = a0 * b0;
    let mid1 = a1 * b0;
    let mid2 = a0 * b1;
    let hi = a1 * b1;
    let (mid, carry_mid) = mid1.overflowing_add(mid2);
    let (lo_sum, carry_lo) = lo.overflowing_add(mid << 64);
    let hi = hi + (mid >> 64) + ((carry_mid as u128) << 64) + carry_lo as u128;
    (hi, lo_sum)
}

impl Wide {
    pub fn from_finite(f: Finite) -> Wide {
        Wide {
            sign: f.sign,
            exp: f.exp,
            sig: (f.sig as u128) << 64,
        }
    }

    pub fn from_int(v: i64) -> Wide {
        if v == 0 {
            return ZERO;
        }
        Wide {
            sign: v < 0,
            exp: 127,
            sig: v.unsigned_abs() as u128,
        }
        .normalized()
    }

    pub fn is_zero(self) -> bool {
        self.sig == 0
    }

    pub fn neg(self) -> Wide {
        Wide {
            sign: !self.sign,
            ..self
        }
    }

    pub fn abs(self) -> Wide {
        Wide {
            sign: false,
            ..self
        }
    }

    pub fn with_sign(self, sign: bool) -> Wide {
        Wide { sign, ..self }
    }

    /// Multiplies by 2^n.
    pub fn scale(self, n: i32) -> Wide {
        if self.is_zero() {
            self
        } else {
            Wide {
                exp: self.exp.saturating_add(n),
                ..self
            }
        }
    }

    pub fn to_exact(self) -> Exact {
        Exact {
            sign: self.sign,
            exp: self.exp,
            sig: self.sig,
        }
    }

    fn normalized(self) -> Wide {
        if self.sig == 0 {
            return ZERO;
        }
        let lz = self.sig.leading_zeros();
        Wide {
            sign: self.sign,
            exp: self.exp - lz as i32,
            sig: self.sig << lz,
        }
    }

    pub fn add(self, other: Wide) -> Wide {
        if self.is_zero() {
            return other;
        }
        if other.is_zero() {
            return self;
        }
        let (big, small) = if (self.exp, self.sig) >= (other.exp, other.sig) {
            (self, other)
        } else {
            (other, self)
        };
        let d = (big.exp as i64 - small.exp as i64).min(200) as u32;
        let small_sig = shift_right_jam(small.sig, d);
        if big.sign == small.sign {
            let (s, carry) = big.sig.overflowing_add(small_sig);
            if carry {
                Wide {
                    sign: big.sign,
                    exp: big.exp + 1,
                    sig: (s >> 1) | (1 << 127) | (s & 1),
                }
            } else {
                Wide {
                    sign: big.sign,
                    exp: big.exp,
                    sig: s,
                }
            }
        } else {
            Wide {
                sign: big.sign,
                exp: big.exp,
                sig: big.sig - small_sig,
            }
            .normalized()
        }
    }

    pub fn sub(self, other: Wide) -> Wide {
        self.add(other.neg())
    }

    pub fn mul(self, other: Wide) -> Wide {
        if self.is_zero() || other.is_zero() {
            return Wide {
                sign: self.sign ^ other.sign,
                ..ZERO
            };
        }
        let (hi, lo) = mul_128(self.sig, other.sig);
        // Product of two [1,2) significands lies in [1,4): value = hi * 2^(e1+e2+1-127).
        let w = Wide {
            sign: self.sign ^ other.sign,
            exp: self.exp + other.exp + 1,
            sig: hi | (lo != 0) as u128,
        };
        w.normalized()
    }

    /// Division by restoring long division: 128 quotient bits plus sticky.
    pub fn div(self, other: Wide) -> Wide {
        if self.is_zero() || other.is_zero() {
            return Wide {
                sign: self.sign ^ other.sign,
                ..ZERO
            };
        }
        let b = other.sig;
        let mut rem = self.sig;
        let mut carry = false;
        let mut q: u128 = 0;
        for _ in 0..128 {
            q <<= 1;
            if carry || rem >= b {
                rem = rem.wrapping_sub(b);
                q |= 1;
            }
            carry = rem >> 127 != 0;
            rem <<= 1;
        }
        let sticky = (rem != 0 || carry) as u128;
        Wide {
            sign: self.sign ^ other.sign,
            exp: self.exp - other.exp,
            sig: q | sticky,
        }
        .normalized()
    }

    /// Division by a small integer (the series coefficients): two native u128 divisions
    /// instead of the 128-step long division.
    pub fn div_int(self, d: i64) -> Wide {
        let m = d.unsigned_abs();
        if m == 0 || m >= 1 << 32 || self.is_zero() {
            return self.div(Wide::from_int(d));
        }
        let m = m as u128;
        let (q, r) = (self.sig / m, self.sig % m);
        // sig >= 2^127 and m < 2^32, so q >= 2^95: at most 32 bits to refill.
        let lz = q.leading_zeros();
        let (ext, rem) = ((r << lz) / m, (r << lz) % m);
        let sig = if lz == 0 { q } else { (q << lz) | ext };
        Wide {
            sign: self.sign ^ (d < 0),
            exp: self.exp - lz as i32,
            sig: sig | (rem != 0) as u128,
        }
    }

    /// Whether |self| is negligible next to |reference| at working precision.
    pub fn negligible_next_to(self, reference: Wide) -> bool {
        self.is_zero() || (!reference.is_zero() && self.exp < reference.exp - 130)
    }

    /// Approximate value for tests and debugging.
    #[cfg(test)]
    pub fn to_f64(self) -> f64 {
        let v = (self.sig >> 64) as f64 * 2f64.powi(self.exp - 63);
        if self.sign { -v } else { v }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fpu_wide_arithmetic() {
        let three = Wide::from_int(3);
        let third = ONE.div(three);
        assert_eq!(third.sig >> 4, 0x0AAA_AAAA_AAAA_AAAA_AAAA_AAAA_AAAA_AAAA);
        assert_eq!(third.exp, -2);
        let back = third.mul(three);
        assert!((back.to_f64() - 1.0).abs() < 1e-30);
        assert_eq!(PI_2.add(PI_2), PI);
        assert_eq!(PI.sub(PI_2).sig >> 2, PI_2.sig >> 2);
        assert!(ONE.sub(ONE).is_zero());
        assert_eq!(Wide::from_int(-5).to_f64(), -5.0);
        assert!((LN2.mul(LOG2E).to_f64() - 1.0).abs() < 1e-30);
        // The small-divisor path agrees with long division to the last bits.
        for (k, d) in [3i64, 7, 10, 4003, -6, 4_000_000_001]
            .into_iter()
            .enumerate()
        {
            let x = Wide {
                sign: k % 2 == 1,
                exp: k as i32,
                sig: PI.sig ^ ((k as u128) << 70),
            };
            let (fast, slow) = (x.div_int(d), x.div(Wide::from_int(d)));
            assert_eq!((fast.sign, fast.exp), (slow.sign, slow.exp), "{d}");
            assert!(
                fast.sig.abs_diff(slow.sig) <= 1,
                "{d}: {:x} {:x}",
                fast.sig,
                slow.sig
            );
        }
    }
}
