//! The 80-bit extended-precision register format.

use super::softfloat::{Finite, Rounded};

/// An x87 extended-precision value exactly as stored in a data register or in memory:
/// sign + 15-bit exponent, and a 64-bit significand with an explicit integer bit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct F80 {
    pub sign_exp: u16,
    pub mantissa: u64,
}

pub(crate) const EXP_MAX: u16 = 0x7FFF;
pub(crate) const BIAS: i32 = 16383;
const INT_BIT: u64 = 1 << 63;
const QUIET_BIT: u64 = 1 << 62;

/// How an F80 encoding behaves as an operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Zero(bool),
    /// Finite nonzero; the flag marks a denormal or pseudo-denormal operand (#D).
    Finite(Finite, bool),
    Inf(bool),
    QNan,
    SNan,
    /// Unnormals, pseudo-NaNs and pseudo-infinities: invalid on the 387 and later.
    Unsupported,
}

impl F80 {
    pub const ZERO: F80 = F80 {
        sign_exp: 0,
        mantissa: 0,
    };
    pub const ONE: F80 = F80 {
        sign_exp: 0x3FFF,
        mantissa: INT_BIT,
    };
    pub const INFINITY: F80 = F80 {
        sign_exp: 0x7FFF,
        mantissa: INT_BIT,
    };
    /// The "real indefinite" QNaN produced by masked invalid operations.
    pub const INDEFINITE: F80 = F80 {
        sign_exp: 0xFFFF,
        mantissa: 0xC000_0000_0000_0000,
    };

    pub const fn new(sign: bool, exponent: u16, mantissa: u64) -> F80 {
        F80 {
            sign_exp: ((sign as u16) << 15) | (exponent & EXP_MAX),
            mantissa,
        }
    }
    pub fn sign(self) -> bool {
        self.sign_exp & 0x8000 != 0
    }
    pub fn exponent(self) -> u16 {
        self.sign_exp & EXP_MAX
    }
    pub fn negate(self) -> F80 {
        F80 {
            sign_exp: self.sign_exp ^ 0x8000,
            ..self
        }
    }
    pub fn abs(self) -> F80 {
        F80 {
            sign_exp: self.sign_exp & EXP_MAX,
            ..self
        }
    }
    pub fn with_sign(self, sign: bool) -> F80 {
        F80::new(sign, self.exponent(), self.mantissa)
    }
    pub fn from_le_bytes(b: [u8; 10]) -> F80 {
        let mut m = [0u8; 8];
        m.copy_from_slice(&b[..8]);
        F80 {
            mantissa: u64::from_le_bytes(m),
            sign_exp: u16::from_le_bytes([b[8], b[9]]),
        }
    }
    pub fn to_le_bytes(self) -> [u8; 10] {
        let mut b = [0u8; 10];
        b[..8].copy_from_slice(&self.mantissa.to_le_bytes());
        b[8..].copy_from_slice(&self.sign_exp.to_le_bytes());
        b
    }
    pub fn is_nan(self) -> bool {
        self.exponent() == EXP_MAX && self.mantissa & INT_BIT != 0 && self.mantissa << 1 != 0
    }
    pub fn is_snan(self) -> bool {
        self.is_nan() && self.mantissa & QUIET_BIT == 0
    }
    pub fn is_zero(self) -> bool {
        self.exponent() == 0 && self.mantissa == 0
    }
    /// The QNaN form of a NaN (sets the quiet bit).
    pub fn quieted(self) -> F80 {
        F80 {
            mantissa: self.mantissa | QUIET_BIT,
            ..self
        }
    }

    /// FXAM classification as (C3, C2, C0); `empty` for an empty register.
    pub fn fxam_bits(self, empty: bool) -> (bool, bool, bool) {
        if empty {
            return (true, false, true);
        }
        match self.class() {
            Class::Unsupported => (false, false, false),
            Class::QNan | Class::SNan => (false, false, true),
            Class::Finite(_, false) => (false, true, false),
            Class::Inf(_) => (false, true, true),
            Class::Zero(_) => (true, false, false),
            Class::Finite(_, true) => (true, true, false),
        }
    }

    pub(crate) fn class(self) -> Class {
        let sign = self.sign();
        let e = self.exponent();
        let m = self.mantissa;
        match e {
            0 if m == 0 => Class::Zero(sign),
            // Denormal; a pseudo-denormal (integer bit set) weighs as exponent 1 too.
            0 => Class::Finite(Finite::new(sign, 1 - BIAS, m), true),
            EXP_MAX if m & INT_BIT == 0 => Class::Unsupported,
            EXP_MAX if m << 1 == 0 => Class::Inf(sign),
            EXP_MAX if m & QUIET_BIT != 0 => Class::QNan,
            EXP_MAX => Class::SNan,
            _ if m & INT_BIT == 0 => Class::Unsupported,
            _ => Class::Finite(
                Finite {
                    sign,
                    exp: e as i32 - BIAS,
                    sig: m,
                },
                false,
            ),
        }
    }

    /// Packs an exact finite value (must be representable in 64 bits, normal range).
    pub(crate) fn from_finite(f: Finite) -> F80 {
        F80::new(f.sign, (f.exp + BIAS) as u16, f.sig)
    }

    pub(crate) fn from_rounded(r: Rounded) -> F80 {
        F80::new(r.sign, r.bexp.min(EXP_MAX as u32) as u16, r.sig)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fpu_f80_classes() {
        assert_eq!(F80::ZERO.class(), Class::Zero(false));
        assert_eq!(F80::INFINITY.negate().class(), Class::Inf(true));
        assert_eq!(F80::INDEFINITE.class(), Class::QNan);
        assert_eq!(F80::new(false, 0x7FFF, INT_BIT | 1).class(), Class::SNan);
        assert_eq!(F80::new(false, 0x7FFF, 1).class(), Class::Unsupported);
        assert_eq!(
            F80::new(false, 0x4000, 0x4000_0000_0000_0000).class(),
            Class::Unsupported
        );
        match F80::new(false, 0, 1).class() {
            Class::Finite(f, true) => assert_eq!((f.exp, f.sig), (-16382 - 63, INT_BIT)),
            c => panic!("{c:?}"),
        }
        let b = F80::ONE.to_le_bytes();
        assert_eq!(b, [0, 0, 0, 0, 0, 0, 0, 0x80, 0xFF, 0x3F]);
        assert_eq!(F80::from_le_bytes(b), F80::ONE);
    }
}
