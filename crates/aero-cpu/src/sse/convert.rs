//! SSE/SSE2 conversions (CVT*): float<->float, int->float and float->int with the
//! rounding (CVT*) or truncating (CVTT*) variants and the integer indefinite.

use crate::fpu::softfloat::{self, Exact, Finite, IE, PE, Rounding};

use super::Mxcsr;
use super::float::{F32, F64, Kind, Op};

/// CVTSS2SD/CVTPS2PD (`from` = F32, `to` = F64) and CVTSD2SS/CVTPD2PS.
pub fn float_to_float(from: Kind, to: Kind, v: u64, mx: Mxcsr) -> (u64, u8) {
    if from.is_nan(v) {
        let flags = if from.is_snan(v) { IE } else { 0 };
        let sign = (v >> (from.bits() - 1)) & 1;
        let frac = v & ((1 << from.frac_bits) - 1);
        // Keep the payload's top bits.
        let frac = if to.frac_bits > from.frac_bits {
            frac << (to.frac_bits - from.frac_bits)
        } else {
            frac >> (from.frac_bits - to.frac_bits)
        };
        let exp_max = (2 * to.format.emax + 1) as u64;
        let bits = (sign << (to.bits() - 1)) | (exp_max << to.frac_bits) | frac;
        return (to.quiet(bits), flags);
    }
    let (c, de) = from.classify(v, mx.daz());
    let sign_bit = |s: bool| (s as u64) << (to.bits() - 1);
    let exp_max = (2 * to.format.emax + 1) as u64;
    match c {
        Op::Zero(s) => (sign_bit(s), de),
        Op::Inf(s) => (sign_bit(s) | (exp_max << to.frac_bits), de),
        Op::Finite(f) => {
            let (r, fl) = to.round(f.into(), mx, mx.rounding());
            (r, fl | de)
        }
        _ => (to.default_nan(), IE),
    }
}

/// CVTSI2SS/SD, CVTDQ2PS/PD, CVTPI2PS/PD: signed integer to float (rounded per MXCSR).
pub fn int_to_float(to: Kind, v: i64, mx: Mxcsr) -> (u64, u8) {
    if v == 0 {
        return (0, 0);
    }
    let f = Finite::new(v < 0, 63, v.unsigned_abs());
    to.round(Exact::from(f), mx, mx.rounding())
}

/// CVT(T)SS2SI, CVT(T)SD2SI, CVT(T)PS2DQ, CVT(T)PD2DQ, CVT(T)PS2PI...: float to a signed
/// `bits`-wide integer. NaN, infinity and out-of-range give the integer indefinite with
/// #I; `truncate` selects the CVTT* forms.
pub fn float_to_int(from: Kind, v: u64, bits: u32, truncate: bool, mx: Mxcsr) -> (i64, u8) {
    let indefinite = (-1i64) << (bits.clamp(1, 64) - 1);
    if from.is_nan(v) {
        return (indefinite, IE);
    }
    // CVT(T)*2SI/DQ/PI raise only #I and #P (no #D for denormal sources).
    let (c, _) = from.classify(v, mx.daz());
    let f = match c {
        Op::Zero(_) => return (0, 0),
        Op::Finite(f) => f,
        _ => return (indefinite, IE),
    };
    let rounding = if truncate {
        Rounding::Zero
    } else {
        mx.rounding()
    };
    let Some((mag, inexact)) = softfloat::round_to_integer(f, rounding) else {
        return (indefinite, IE);
    };
    let limit = 1u128 << (bits.clamp(1, 64) - 1);
    if mag > limit || (mag == limit && !f.sign) {
        return (indefinite, IE);
    }
    let value = if f.sign {
        (mag as i128).wrapping_neg() as i64
    } else {
        mag as i64
    };
    (value, if inexact { PE } else { 0 })
}

/// CVTPS2PD / CVTDQ2PD-style widening of the low two 32-bit lanes.
pub fn ps_to_pd(a: u128, mx: Mxcsr) -> (u128, u8) {
    let (lo, f0) = float_to_float(F32, F64, a as u32 as u64, mx);
    let (hi, f1) = float_to_float(F32, F64, (a >> 32) as u32 as u64, mx);
    ((lo as u128) | ((hi as u128) << 64), f0 | f1)
}

/// CVTPD2PS: two doubles to the low two floats, upper half zeroed.
pub fn pd_to_ps(a: u128, mx: Mxcsr) -> (u128, u8) {
    let (lo, f0) = float_to_float(F64, F32, a as u64, mx);
    let (hi, f1) = float_to_float(F64, F32, (a >> 64) as u64, mx);
    ((lo as u128) | ((hi as u128) << 32), f0 | f1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::MXCSR_DEFAULT;

    const MX: Mxcsr = Mxcsr(MXCSR_DEFAULT);

    #[test]
    fn sse_convert_float_to_int() {
        let d = |x: f64| x.to_bits();
        assert_eq!(float_to_int(F64, d(2.5), 32, false, MX), (2, PE));
        assert_eq!(float_to_int(F64, d(3.5), 32, false, MX), (4, PE));
        assert_eq!(float_to_int(F64, d(-2.7), 32, true, MX), (-2, PE));
        assert_eq!(
            float_to_int(F64, d(2147483648.0), 32, false, MX),
            (i32::MIN as i64, IE)
        );
        assert_eq!(
            float_to_int(F64, d(-2147483648.0), 32, false, MX),
            (i32::MIN as i64, 0)
        );
        assert_eq!(float_to_int(F64, d(f64::NAN), 64, true, MX), (i64::MIN, IE));
        assert_eq!(
            float_to_int(F32, (1e10f32).to_bits() as u64, 64, true, MX),
            (10_000_000_000, 0)
        );
        let down = Mxcsr(MXCSR_DEFAULT | 0x2000);
        assert_eq!(
            float_to_int(F32, (-0.5f32).to_bits() as u64, 32, false, down),
            (-1, PE)
        );
    }

    #[test]
    fn sse_convert_int_and_float_widths() {
        assert_eq!(
            int_to_float(F32, 16_777_217, MX),
            ((16_777_216f32).to_bits() as u64, PE)
        );
        assert_eq!(
            int_to_float(F64, i64::MIN, MX),
            ((i64::MIN as f64).to_bits(), 0)
        );
        assert_eq!(int_to_float(F32, -3, MX), ((-3f32).to_bits() as u64, 0));
        let up = Mxcsr(MXCSR_DEFAULT | 0x4000);
        assert_eq!(
            int_to_float(F32, 16_777_217, up).0,
            (16_777_218f32).to_bits() as u64
        );
        let (v, f) = float_to_float(F64, F32, (0.1f64).to_bits(), MX);
        assert_eq!((v, f), ((0.1f32).to_bits() as u64, PE));
        assert_eq!(
            float_to_float(F32, F64, 0x7F80_0001, MX),
            (0x7FF8_0000_2000_0000, IE)
        );
        assert_eq!(
            float_to_float(F64, F32, (1e300f64).to_bits(), MX).0,
            f32::INFINITY.to_bits() as u64
        );
        let (pd, _) = ps_to_pd(
            ((2.0f32).to_bits() as u128) << 32 | (1.5f32).to_bits() as u128,
            MX,
        );
        assert_eq!(
            pd,
            ((2.0f64).to_bits() as u128) << 64 | (1.5f64).to_bits() as u128
        );
        assert_eq!(
            pd_to_ps(pd, MX).0,
            ((2.0f32).to_bits() as u128) << 32 | (1.5f32).to_bits() as u128
        );
    }
}
