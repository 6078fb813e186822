//! Format-independent soft-float core: exact arithmetic on finite values and the one
//! rounding step every x87 and SSE result goes through.
//!
//! Operations first produce an [`Exact`] value (a 128-bit significand whose lowest bit is
//! a "sticky" bit standing for everything shifted out), then [`round`] turns it into a
//! value of the destination [`Format`] under the rounding mode, reporting the IEEE
//! exception flags. 128 bits leave at least 63 guard bits below a 64-bit result, which
//! is enough for correct rounding of add/sub/mul/div/sqrt.

/// Exception flag bits, identical in the x87 status word and in MXCSR.
pub const IE: u8 = 0x01;
pub const DE: u8 = 0x02;
pub const ZE: u8 = 0x04;
pub const OE: u8 = 0x08;
pub const UE: u8 = 0x10;
pub const PE: u8 = 0x20;

/// x87 exponent bias adjustment for unmasked overflow/underflow (SDM vol. 1, 8.5.4/8.5.5).
pub const X87_WRAP_BIAS: i32 = 24576;

/// IEEE rounding direction, encoded as in the x87 control word RC field and MXCSR.RC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Rounding {
    #[default]
    NearestEven = 0,
    Down = 1,
    Up = 2,
    Zero = 3,
}

impl Rounding {
    pub fn from_bits(bits: u16) -> Self {
        match bits & 3 {
            0 => Rounding::NearestEven,
            1 => Rounding::Down,
            2 => Rounding::Up,
            _ => Rounding::Zero,
        }
    }
}

/// A binary floating-point destination format: significand bits (with the integer bit)
/// and the normal exponent range (unbiased). The bias is `emax`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    pub precision: u32,
    pub emin: i32,
    pub emax: i32,
}

pub const FMT_EXT: Format = Format {
    precision: 64,
    emin: -16382,
    emax: 16383,
};
pub const FMT_F64: Format = Format {
    precision: 53,
    emin: -1022,
    emax: 1023,
};
pub const FMT_F32: Format = Format {
    precision: 24,
    emin: -126,
    emax: 127,
};

/// Everything the rounding step needs to know about the environment.
#[derive(Clone, Copy, Debug)]
pub struct RoundEnv {
    pub rounding: Rounding,
    pub format: Format,
    pub overflow_masked: bool,
    pub underflow_masked: bool,
    /// x87 semantics: unmasked overflow/underflow still deliver a result, with the
    /// exponent wrapped by [`X87_WRAP_BIAS`]. SSE discards the result instead.
    pub wrap_unmasked: bool,
    /// MXCSR.FTZ: tiny results become zero (only while underflow is masked).
    pub flush_to_zero: bool,
}

impl RoundEnv {
    /// All exceptions masked, no flushing: the IEEE default environment.
    pub fn masked(format: Format, rounding: Rounding) -> Self {
        RoundEnv {
            rounding,
            format,
            overflow_masked: true,
            underflow_masked: true,
            wrap_unmasked: false,
            flush_to_zero: false,
        }
    }
}

/// A finite nonzero operand: value = sig * 2^(exp - 63), `sig` normalized (bit 63 set).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finite {
    pub sign: bool,
    pub exp: i32,
    pub sig: u64,
}

impl Finite {
    /// Normalizes a nonzero significand.
    pub fn new(sign: bool, exp: i32, sig: u64) -> Self {
        debug_assert!(sig != 0);
        let lz = sig.leading_zeros();
        Finite {
            sign,
            exp: exp - lz as i32,
            sig: sig << lz,
        }
    }
}

/// An exact (or sticky-jammed) intermediate: value = sig * 2^(exp - 127).
/// `sig == 0` is an exact zero of the given sign.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exact {
    pub sign: bool,
    pub exp: i32,
    pub sig: u128,
}

impl From<Finite> for Exact {
    fn from(f: Finite) -> Self {
        Exact {
            sign: f.sign,
            exp: f.exp,
            sig: (f.sig as u128) << 64,
        }
    }
}

/// A rounded result in the destination format.
///
/// `bexp` is the biased exponent (bias = `emax`; 0 = zero/denormal, `2*emax+1` = infinity)
/// and `sig` the significand left-aligned so bit 63 is the integer bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rounded {
    pub sign: bool,
    pub bexp: u32,
    pub sig: u64,
    pub flags: u8,
    /// The magnitude was increased by rounding (x87 C1).
    pub round_up: bool,
}

/// Shift right, OR-ing every bit shifted out into bit 0.
pub fn shift_right_jam(v: u128, n: u32) -> u128 {
    if n == 0 {
        v
    } else if n >= 128 {
        (v != 0) as u128
    } else {
        (v >> n) | ((v & ((1u128 << n) - 1)) != 0) as u128
    }
}

/// Whether rounding discards `rem` (the bits below the kept ones, `half` being the
/// weight of the highest discarded bit) should increment the kept significand.
fn should_increment(rounding: Rounding, sign: bool, keep_odd: bool, rem: u128, half: u128) -> bool {
    match rounding {
        Rounding::NearestEven => rem > half || (rem == half && keep_odd),
        Rounding::Down => rem != 0 && sign,
        Rounding::Up => rem != 0 && !sign,
        Rounding::Zero => false,
    }
}

/// Rounds `sig` (value sig*2^(exp-127)) keeping the bits above `drop`.
/// Returns (kept significand, exponent, inexact, incremented).
fn round_bits(
    sig: u128,
    exp: i32,
    drop: u32,
    precision: u32,
    rounding: Rounding,
    sign: bool,
) -> (u128, i32, bool, bool) {
    let lsb = 1u128 << drop;
    let rem = sig & (lsb - 1);
    let mut keep = sig >> drop;
    let mut exp = exp;
    let inc = should_increment(rounding, sign, keep & 1 == 1, rem, lsb >> 1);
    if inc {
        keep += 1;
        if keep >> precision != 0 {
            keep >>= 1;
            exp += 1;
        }
    }
    (keep, exp, rem != 0, inc)
}

fn zero(sign: bool, flags: u8) -> Rounded {
    Rounded {
        sign,
        bexp: 0,
        sig: 0,
        flags,
        round_up: false,
    }
}

/// Rounds an exact intermediate to the environment's format (IEEE 754, tininess detected
/// after rounding as x86 does).
pub fn round(x: Exact, env: &RoundEnv) -> Rounded {
    let Exact {
        sign,
        mut exp,
        mut sig,
    } = x;
    if sig == 0 {
        return zero(sign, 0);
    }
    let lz = sig.leading_zeros();
    sig <<= lz;
    exp -= lz as i32;
    let f = env.format;
    let precision = f.precision.clamp(2, 64);
    let drop = 128 - precision;
    let to_sig64 = |keep: u128| (keep << (64 - precision)) as u64;

    let tiny = exp < f.emin - 1
        || (exp == f.emin - 1 && {
            let (_, e, _, _) = round_bits(sig, exp, drop, precision, env.rounding, sign);
            e < f.emin
        });
    if tiny {
        if env.underflow_masked && env.flush_to_zero {
            return zero(sign, UE | PE);
        }
        if !env.underflow_masked && env.wrap_unmasked {
            let (keep, e, inexact, inc) = round_bits(sig, exp, drop, precision, env.rounding, sign);
            let bexp = (e + f.emax + X87_WRAP_BIAS).max(1) as u32;
            let flags = UE | if inexact { PE } else { 0 };
            return Rounded {
                sign,
                bexp,
                sig: to_sig64(keep),
                flags,
                round_up: inc,
            };
        }
        let shifted = shift_right_jam(sig, (f.emin - exp) as u32);
        let (keep, _, inexact, inc) =
            round_bits(shifted, f.emin, drop, precision, env.rounding, sign);
        let mut flags = if inexact { UE | PE } else { 0 };
        if !env.underflow_masked {
            flags |= UE;
        }
        // Rounding may carry a denormal up into the smallest normal.
        let bexp = if keep >> (precision - 1) != 0 { 1 } else { 0 };
        return Rounded {
            sign,
            bexp,
            sig: to_sig64(keep),
            flags,
            round_up: inc,
        };
    }

    let (keep, e, inexact, inc) = round_bits(sig, exp, drop, precision, env.rounding, sign);
    let pe = if inexact { PE } else { 0 };
    if e > f.emax {
        if !env.overflow_masked {
            let bexp = if env.wrap_unmasked {
                (e + f.emax - X87_WRAP_BIAS).max(1) as u32
            } else {
                (2 * f.emax + 1) as u32
            };
            return Rounded {
                sign,
                bexp,
                sig: to_sig64(keep),
                flags: OE | pe,
                round_up: inc,
            };
        }
        let to_inf = match env.rounding {
            Rounding::NearestEven => true,
            Rounding::Down => sign,
            Rounding::Up => !sign,
            Rounding::Zero => false,
        };
        return if to_inf {
            Rounded {
                sign,
                bexp: (2 * f.emax + 1) as u32,
                sig: 1 << 63,
                flags: OE | PE,
                round_up: true,
            }
        } else {
            let max = to_sig64((1u128 << precision) - 1);
            Rounded {
                sign,
                bexp: (2 * f.emax) as u32,
                sig: max,
                flags: OE | PE,
                round_up: false,
            }
        };
    }
    Rounded {
        sign,
        bexp: (e + f.emax) as u32,
        sig: to_sig64(keep),
        flags: pe,
        round_up: inc,
    }
}

/// Exact a + b of finite operands. An exact zero sum is +0, or -0 when rounding down.
pub fn add(a: Finite, b: Finite, rounding: Rounding) -> Exact {
    let (big, small) = if (a.exp, a.sig) >= (b.exp, b.sig) {
        (a, b)
    } else {
        (b, a)
    };
    let d = (big.exp as i64 - small.exp as i64).min(200) as u32;
    // One bit of headroom at the top for a carry.
    let bs = (big.sig as u128) << 63;
    let ss = shift_right_jam((small.sig as u128) << 63, d);
    if big.sign == small.sign {
        Exact {
            sign: big.sign,
            exp: big.exp + 1,
            sig: bs + ss,
        }
    } else {
        let sig = bs - ss;
        let sign = if sig == 0 {
            rounding == Rounding::Down
        } else {
            big.sign
        };
        Exact {
            sign,
            exp: big.exp + 1,
            sig,
        }
    }
}

/// Exact a * b.
pub fn mul(a: Finite, b: Finite) -> Exact {
    Exact {
        sign: a.sign ^ b.sign,
        exp: a.exp + b.exp + 1,
        sig: a.sig as u128 * b.sig as u128,
    }
}

/// a / b with 127 quotient bits and a sticky bit.
pub fn div(a: Finite, b: Finite) -> Exact {
    let d = b.sig as u128;
    let n1 = (a.sig as u128) << 63;
    let (q1, r1) = (n1 / d, n1 % d);
    let n2 = r1 << 64;
    let (q2, r2) = (n2 / d, n2 % d);
    let sig = (q1 << 64) | q2 | (r2 != 0) as u128;
    Exact {
        sign: a.sign ^ b.sign,
        exp: a.exp - b.exp,
        sig,
    }
}

/// Square root of a positive finite value: 64 root bits, a guard bit and a sticky bit.
pub fn sqrt(a: Finite) -> Exact {
    // Make the exponent of the radicand even so it halves exactly.
    let (radicand, e) = if a.exp & 1 != 0 {
        ((a.sig as u128) << 64, a.exp - 127)
    } else {
        ((a.sig as u128) << 63, a.exp - 126)
    };
    let root = radicand.isqrt();
    let rem = radicand - root * root;
    // (root + 1/2)^2 = root^2 + root + 1/4, never equal to an integer radicand.
    let guard = rem > root;
    let sig = (root << 64) | ((guard as u128) << 63) | (rem != 0) as u128;
    Exact {
        sign: false,
        exp: e / 2 + 63,
        sig,
    }
}

/// Rounds a finite value to an integer under `rounding`.
/// Returns (magnitude, inexact) or None when the magnitude is 2^127 or more.
pub fn round_to_integer(a: Finite, rounding: Rounding) -> Option<(u128, bool)> {
    if a.exp >= 127 {
        return None;
    }
    if a.exp >= 63 {
        return Some(((a.sig as u128) << (a.exp - 63), false));
    }
    // Fixed point with 64 fraction bits: sig * 2^(exp - 63) = fixed * 2^-64.
    let fixed = shift_right_jam((a.sig as u128) << 64, (63 - a.exp).min(200) as u32);
    let int = fixed >> 64;
    let rem = fixed & u64::MAX as u128;
    let inc = should_increment(rounding, a.sign, int & 1 == 1, rem, 1u128 << 63);
    Some((int + inc as u128, rem != 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one() -> Finite {
        Finite {
            sign: false,
            exp: 0,
            sig: 1 << 63,
        }
    }

    #[test]
    fn fpu_core_one_third_in_each_precision_and_mode() {
        let three = Finite {
            sign: false,
            exp: 1,
            sig: 3 << 62,
        };
        let q = div(one(), three);
        let cases = [
            (FMT_EXT, Rounding::NearestEven, 0xAAAA_AAAA_AAAA_AAABu64),
            (FMT_EXT, Rounding::Down, 0xAAAA_AAAA_AAAA_AAAA),
            (FMT_EXT, Rounding::Up, 0xAAAA_AAAA_AAAA_AAAB),
            (FMT_EXT, Rounding::Zero, 0xAAAA_AAAA_AAAA_AAAA),
            (FMT_F64, Rounding::NearestEven, 0xAAAA_AAAA_AAAA_A800),
            (FMT_F64, Rounding::Up, 0xAAAA_AAAA_AAAA_B000),
            (FMT_F32, Rounding::NearestEven, 0xAAAA_AB00_0000_0000),
            (FMT_F32, Rounding::Zero, 0xAAAA_AA00_0000_0000),
        ];
        for (fmt, rc, want) in cases {
            let r = round(q, &RoundEnv::masked(fmt, rc));
            assert_eq!(r.sig, want, "{fmt:?} {rc:?}");
            assert_eq!(r.bexp as i32, fmt.emax - 2);
            assert_eq!(r.flags, PE);
        }
    }

    #[test]
    fn fpu_core_sqrt_two() {
        let two = Finite {
            sign: false,
            exp: 1,
            sig: 1 << 63,
        };
        let r = round(sqrt(two), &RoundEnv::masked(FMT_EXT, Rounding::NearestEven));
        assert_eq!(r.sig, 0xB504_F333_F9DE_6484);
        assert_eq!(r.bexp, 16383);
        let r = round(sqrt(two), &RoundEnv::masked(FMT_F64, Rounding::NearestEven));
        assert_eq!(
            (r.sig >> 11) & ((1 << 52) - 1),
            2f64.sqrt().to_bits() & ((1 << 52) - 1)
        );
    }

    #[test]
    fn fpu_core_overflow_masked_by_mode() {
        let big = Exact {
            sign: false,
            exp: 200,
            sig: 1 << 127,
        };
        let r = round(big, &RoundEnv::masked(FMT_F32, Rounding::NearestEven));
        assert_eq!((r.bexp, r.flags), (255, OE | PE));
        let r = round(big, &RoundEnv::masked(FMT_F32, Rounding::Zero));
        assert_eq!(
            (r.bexp, r.sig, r.flags),
            (254, 0xFFFF_FF00_0000_0000, OE | PE)
        );
    }

    #[test]
    fn fpu_core_underflow_denormal_and_flags() {
        // 2^-149 exactly: the smallest f32 denormal, exact so no UE when masked.
        let x = Exact {
            sign: false,
            exp: -149,
            sig: 1 << 127,
        };
        let r = round(x, &RoundEnv::masked(FMT_F32, Rounding::NearestEven));
        assert_eq!((r.bexp, r.sig >> 40, r.flags), (0, 1, 0));
        // 1.5 * 2^-150 rounds up to 2^-149, inexact and tiny.
        let x = Exact {
            sign: false,
            exp: -150,
            sig: 3 << 126,
        };
        let r = round(x, &RoundEnv::masked(FMT_F32, Rounding::NearestEven));
        assert_eq!((r.bexp, r.sig >> 40, r.flags), (0, 1, UE | PE));
        // Unmasked underflow flags even an exact tiny result.
        let mut env = RoundEnv::masked(FMT_F32, Rounding::NearestEven);
        env.underflow_masked = false;
        let r = round(
            Exact {
                sign: false,
                exp: -149,
                sig: 1 << 127,
            },
            &env,
        );
        assert_eq!(r.flags, UE);
    }

    #[test]
    fn fpu_core_round_to_integer() {
        let two_and_half = Finite {
            sign: false,
            exp: 1,
            sig: 0xA000_0000_0000_0000,
        };
        assert_eq!(
            round_to_integer(two_and_half, Rounding::NearestEven),
            Some((2, true))
        );
        assert_eq!(
            round_to_integer(two_and_half, Rounding::Up),
            Some((3, true))
        );
        let tiny = Finite {
            sign: true,
            exp: -100,
            sig: 1 << 63,
        };
        assert_eq!(round_to_integer(tiny, Rounding::Down), Some((1, true)));
        assert_eq!(
            round_to_integer(tiny, Rounding::NearestEven),
            Some((0, true))
        );
    }
}
