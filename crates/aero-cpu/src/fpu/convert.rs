//! Conversions between [`F80`] and memory formats: integers, f32/f64, packed BCD.

use super::arith::X87Env;
use super::f80::{Class, F80};
use super::softfloat::{self, DE, FMT_F32, FMT_F64, Finite, Format, IE, PE, Rounding};

/// Integer indefinite for an N-bit destination: the most negative value.
pub fn integer_indefinite(bits: u32) -> i64 {
    (-1i64) << (bits.clamp(1, 64) - 1)
}

/// FILD: exact conversion from a signed integer.
pub fn from_i64(v: i64) -> F80 {
    if v == 0 {
        return F80::ZERO;
    }
    F80::from_finite(Finite::new(v < 0, 63, v.unsigned_abs()))
}

/// FIST/FISTP (rounding per RC) and FISTTP (`truncate`) to an N-bit integer.
/// Returns (integer, flags, C1). Invalid results are the integer indefinite.
pub fn to_int(a: F80, env: &X87Env, bits: u32, truncate: bool) -> (i64, u8, bool) {
    let invalid = (integer_indefinite(bits), IE, false);
    // FIST/FISTP/FISTTP raise #IS, #IA and #P only (no #D).
    let f = match a.class() {
        Class::Zero(_) => return (0, 0, false),
        Class::Finite(f, _) => f,
        _ => return invalid,
    };
    let rounding = if truncate {
        Rounding::Zero
    } else {
        env.rounding
    };
    let Some((mag, inexact)) = softfloat::round_to_integer(f, rounding) else {
        return invalid;
    };
    let limit = 1u128 << (bits.clamp(1, 64) - 1);
    if mag > limit || (mag == limit && !f.sign) {
        return invalid;
    }
    let truncated = softfloat::round_to_integer(f, Rounding::Zero).map_or(0, |(t, _)| t);
    let value = if f.sign {
        (mag as i128).wrapping_neg() as i64
    } else {
        mag as i64
    };
    (
        value,
        if inexact { PE } else { 0 },
        inexact && mag > truncated,
    )
}

/// Layout of an IEEE binary interchange format in a u64.
struct Ieee {
    frac_bits: u32,
    format: Format,
}

const IEEE64: Ieee = Ieee {
    frac_bits: 52,
    format: FMT_F64,
};
const IEEE32: Ieee = Ieee {
    frac_bits: 23,
    format: FMT_F32,
};

impl Ieee {
    fn exp_all_ones(&self) -> u64 {
        (2 * self.format.emax + 1) as u64
    }
    fn sign_shift(&self) -> u32 {
        // Fraction bits plus exponent-field width.
        self.frac_bits + (32 - (2 * self.format.emax + 1).leading_zeros())
    }
    fn indefinite(&self) -> u64 {
        (1 << self.sign_shift())
            | (self.exp_all_ones() << self.frac_bits)
            | (1 << (self.frac_bits - 1))
    }

    /// FLD m32/m64: exact widening. SNaN inputs are quietened with #IA, denormals flag #D.
    fn widen(&self, bits: u64) -> (F80, u8) {
        let sign = (bits >> self.sign_shift()) & 1 != 0;
        let exp = (bits >> self.frac_bits) & self.exp_all_ones();
        let frac = bits & ((1 << self.frac_bits) - 1);
        let top = 63 - self.frac_bits;
        if exp == self.exp_all_ones() {
            if frac == 0 {
                return (F80::INFINITY.with_sign(sign), 0);
            }
            let nan = F80::new(sign, 0x7FFF, (1 << 63) | (frac << top));
            let flags = if nan.is_snan() { IE } else { 0 };
            return (nan.quieted(), flags);
        }
        if exp == 0 {
            if frac == 0 {
                return (F80::ZERO.with_sign(sign), 0);
            }
            let f = Finite::new(sign, self.format.emin - self.frac_bits as i32 + 63, frac);
            return (F80::from_finite(f), DE);
        }
        let f = Finite {
            sign,
            exp: exp as i32 - self.format.emax,
            sig: (1 << 63) | (frac << top),
        };
        (F80::from_finite(f), 0)
    }

    /// FST m32/m64: rounding narrowing. Returns (bits, flags, C1).
    fn narrow(&self, a: F80, env: &X87Env) -> (u64, u8, bool) {
        let sign_bit = (a.sign() as u64) << self.sign_shift();
        let top = 63 - self.frac_bits;
        let frac_mask = (1u64 << self.frac_bits) - 1;
        match a.class() {
            Class::Unsupported => (self.indefinite(), IE, false),
            Class::QNan | Class::SNan => {
                let flags = if a.is_snan() { IE } else { 0 };
                let frac = ((a.mantissa >> top) & frac_mask) | (1 << (self.frac_bits - 1));
                (
                    sign_bit | (self.exp_all_ones() << self.frac_bits) | frac,
                    flags,
                    false,
                )
            }
            Class::Inf(_) => (sign_bit | (self.exp_all_ones() << self.frac_bits), 0, false),
            Class::Zero(_) => (sign_bit, 0, false),
            // FST m32/m64 raises #U/#O/#P but not #D for a denormal register value.
            Class::Finite(f, _) => {
                let r = softfloat::round(f.into(), &env.round_env_for(self.format, false));
                let bits =
                    sign_bit | ((r.bexp as u64) << self.frac_bits) | ((r.sig >> top) & frac_mask);
                (bits, r.flags, r.round_up)
            }
        }
    }
}

/// FLD m64.
pub fn f64_to_f80(bits: u64) -> (F80, u8) {
    IEEE64.widen(bits)
}

/// FLD m32.
pub fn f32_to_f80(bits: u32) -> (F80, u8) {
    IEEE32.widen(bits as u64)
}

/// FST m64: (bits, flags, C1).
pub fn f80_to_f64(a: F80, env: &X87Env) -> (u64, u8, bool) {
    IEEE64.narrow(a, env)
}

/// FST m32: (bits, flags, C1).
pub fn f80_to_f32(a: F80, env: &X87Env) -> (u32, u8, bool) {
    let (bits, flags, c1) = IEEE32.narrow(a, env);
    (bits as u32, flags, c1)
}

/// The packed-BCD indefinite stored by FBSTP on invalid operands.
pub const BCD_INDEFINITE: [u8; 10] = [0, 0, 0, 0, 0, 0, 0, 0xC0, 0xFF, 0xFF];

/// FBLD: 18 packed BCD digits plus sign byte. Non-decimal nibbles are taken at face
/// value (the SDM calls the result undefined).
pub fn from_bcd(b: [u8; 10]) -> F80 {
    let mut v: u64 = 0;
    for &byte in b[..9].iter().rev() {
        v = v * 100 + (byte >> 4) as u64 * 10 + (byte & 0xF) as u64;
    }
    let sign = b[9] & 0x80 != 0;
    if v == 0 {
        return F80::ZERO.with_sign(sign);
    }
    F80::from_finite(Finite::new(sign, 63, v))
}

/// FBSTP: round per RC and encode as packed BCD. Returns (bytes, flags, C1).
pub fn to_bcd(a: F80, env: &X87Env) -> ([u8; 10], u8, bool) {
    let invalid = (BCD_INDEFINITE, IE, false);
    // FBSTP raises #IS, #IA and #P only.
    let f = match a.class() {
        Class::Zero(s) => {
            let mut out = [0u8; 10];
            out[9] = (s as u8) << 7;
            return (out, 0, false);
        }
        Class::Finite(f, _) => f,
        _ => return invalid,
    };
    let Some((mut mag, inexact)) = softfloat::round_to_integer(f, env.rounding) else {
        return invalid;
    };
    if mag >= 1_000_000_000_000_000_000 {
        return invalid;
    }
    let truncated = softfloat::round_to_integer(f, Rounding::Zero).map_or(0, |(t, _)| t);
    let c1 = inexact && mag > truncated;
    let mut out = [0u8; 10];
    for byte in out[..9].iter_mut() {
        let lo = (mag % 10) as u8;
        mag /= 10;
        let hi = (mag % 10) as u8;
        mag /= 10;
        *byte = (hi << 4) | lo;
    }
    out[9] = (f.sign as u8) << 7;
    (out, if inexact { PE } else { 0 }, c1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fpu_convert_f64_roundtrip_and_specials() {
        let env = X87Env::default();
        for x in [
            0.0,
            -0.0,
            1.0,
            -2.5,
            1e300,
            5e-324,
            f64::INFINITY,
            f64::MIN_POSITIVE,
            0.1,
        ] {
            let (v, _) = f64_to_f80(f64::to_bits(x));
            assert_eq!(f80_to_f64(v, &env).0, x.to_bits(), "{x}");
        }
        assert_eq!(f64_to_f80(1.0f64.to_bits()).0, F80::ONE);
        assert_eq!(f64_to_f80(5e-324f64.to_bits()).1, DE);
        let (q, flags) = f64_to_f80(0x7FF0_0000_0000_0001);
        assert_eq!(
            (q, flags),
            (F80::new(false, 0x7FFF, 0xC000_0000_0000_0800), IE)
        );
        assert_eq!(f80_to_f64(F80::INDEFINITE, &env).0, 0xFFF8_0000_0000_0000);
        assert_eq!(f80_to_f32(F80::INDEFINITE, &env).0, 0xFFC0_0000);
        let big = F80::new(false, 0x3FFF + 200, 1 << 63);
        let (bits, flags, _) = f80_to_f32(big, &env);
        assert_eq!((bits, flags), (0x7F80_0000, softfloat::OE | PE));
        let (bits, _, c1) = f80_to_f32(f32_to_f80(0x3EAA_AAAB).0, &env);
        assert_eq!((bits, c1), (0x3EAA_AAAB, false));
        // f32 round trip through every exponent.
        for e in 0..255u32 {
            let bits = (e << 23) | 0x12345;
            assert_eq!(f80_to_f32(f32_to_f80(bits).0, &env).0, bits);
        }
    }

    #[test]
    fn fpu_convert_integers() {
        let env = X87Env::default();
        assert_eq!(from_i64(i64::MIN), F80::new(true, 0x3FFF + 63, 1 << 63));
        assert_eq!(
            to_int(from_i64(-123456789), &env, 32, false),
            (-123456789, 0, false)
        );
        let (f, _) = f64_to_f80(2.5f64.to_bits());
        assert_eq!(to_int(f, &env, 16, false), (2, PE, false));
        assert_eq!(to_int(f, &env, 16, true), (2, PE, false));
        let (f, _) = f64_to_f80((-2.7f64).to_bits());
        assert_eq!(to_int(f, &env, 32, false), (-3, PE, true));
        assert_eq!(to_int(f, &env, 32, true), (-2, PE, false));
        assert_eq!(
            to_int(from_i64(32768), &env, 16, false),
            (-32768, IE, false)
        );
        assert_eq!(
            to_int(from_i64(-32768), &env, 16, false),
            (-32768, 0, false)
        );
        assert_eq!(to_int(F80::INDEFINITE, &env, 64, false).0, i64::MIN);
        assert_eq!(
            to_int(F80::INFINITY, &env, 32, true),
            (i32::MIN as i64, IE, false)
        );
    }

    #[test]
    fn fpu_convert_bcd() {
        let env = X87Env::default();
        let bcd = [0x89, 0x67, 0x45, 0x23, 0x01, 0, 0, 0, 0x99, 0x80];
        let v = from_bcd(bcd);
        assert_eq!(v, from_i64(-990_000_000_123_456_789));
        assert_eq!(to_bcd(v, &env), (bcd, 0, false));
        assert_eq!(
            to_bcd(from_i64(1_000_000_000_000_000_000), &env).0,
            BCD_INDEFINITE
        );
        let (f, _) = f64_to_f80(12.5f64.to_bits());
        assert_eq!(
            to_bcd(f, &env),
            ([0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0], PE, false)
        );
    }
}
