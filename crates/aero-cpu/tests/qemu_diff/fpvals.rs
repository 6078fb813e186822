//! Floating-point edge values for x87 and SSE inputs.

use super::rng::Rng;

/// An 80-bit extended value as (sign+exponent, significand).
pub fn f80(rng: &mut Rng) -> [u8; 10] {
    let sign = (rng.below(2) as u16) << 15;
    let (exp, mant): (u16, u64) = match rng.below(16) {
        0 => (0, 0),                                                       // zero
        1 => (0x7FFF, 1 << 63),                                            // infinity
        2 => (0x7FFF, (3 << 62) | ((rng.next_u64() >> 2) * rng.below(2))), // QNaN
        3 => (0x7FFF, (1 << 63) | ((rng.next_u64() >> 2) | 1)),            // SNaN
        4 => (0, rng.next_u64() >> 1),                                     // denormal
        5 => (0x7FFE, u64::MAX),                                           // largest finite
        6 => (1, 1 << 63),                                                 // smallest normal
        7 => return from_f64(small_int(rng) as f64, sign != 0),
        8 => return from_f64(rng.below(1000) as f64 / 8.0, sign != 0),
        9 => (
            (0x3FFF + rng.below(128) as i64 - 64) as u16,
            (1 << 63) | (rng.next_u64() >> 40 << 40),
        ),
        10 => (rng.below(0x7FFF) as u16, (1 << 63) | rng.next_u64()),
        _ => (
            (0x3FFF + rng.below(40) as i64 - 20) as u16,
            (1 << 63) | rng.next_u64(),
        ),
    };
    let mut out = [0u8; 10];
    out[..8].copy_from_slice(&mant.to_le_bytes());
    out[8..].copy_from_slice(&(sign | exp).to_le_bytes());
    out
}

fn small_int(rng: &mut Rng) -> i64 {
    rng.below(21) as i64 - 10
}

/// Exact conversion of a finite f64 (normal or zero) to 80-bit format.
pub fn from_f64(v: f64, negate: bool) -> [u8; 10] {
    let v = if negate { -v } else { v };
    let bits = v.to_bits();
    let sign = ((bits >> 63) as u16) << 15;
    let e = ((bits >> 52) & 0x7FF) as i64;
    let frac = bits & ((1 << 52) - 1);
    let (exp, mant) = if e == 0 && frac == 0 {
        (0u16, 0u64)
    } else {
        ((e - 1023 + 16383) as u16, (1 << 63) | (frac << 11))
    };
    let mut out = [0u8; 10];
    out[..8].copy_from_slice(&mant.to_le_bytes());
    out[8..].copy_from_slice(&(sign | exp).to_le_bytes());
    out
}

pub fn f64_bits(rng: &mut Rng) -> u64 {
    let sign = rng.below(2) << 63;
    sign | match rng.below(14) {
        0 => 0,
        1 => 0x7FF0_0000_0000_0000,
        2 => 0x7FF8_0000_0000_0000 | ((rng.next_u64() >> 13) * rng.below(2)),
        3 => 0x7FF0_0000_0000_0000 | ((rng.next_u64() >> 14) | 1),
        4 => rng.next_u64() >> 12,
        5 => 0x7FEF_FFFF_FFFF_FFFF,
        6 => 0x0010_0000_0000_0000,
        7 => (small_int(rng) as f64).to_bits() & !(1 << 63),
        8 => (rng.below(1000) as f64 / 8.0).to_bits(),
        9 => (2.0f64.powi(31) + rng.below(3) as f64 - 1.0).to_bits(),
        _ => ((1023 + rng.below(80) - 40) << 52) | (rng.next_u64() >> 12),
    }
}

pub fn f32_bits(rng: &mut Rng) -> u32 {
    let sign = (rng.below(2) as u32) << 31;
    sign | match rng.below(14) {
        0 => 0,
        1 => 0x7F80_0000,
        2 => 0x7FC0_0000 | ((rng.next_u64() as u32 >> 10) * rng.below(2) as u32),
        3 => 0x7F80_0000 | ((rng.next_u64() as u32 >> 11) | 1),
        4 => rng.next_u64() as u32 >> 9,
        5 => 0x7F7F_FFFF,
        6 => 0x0080_0000,
        7 => (small_int(rng) as f32).to_bits() & !(1 << 31),
        8 => (rng.below(1000) as f32 / 8.0).to_bits(),
        9 => (2.0f32.powi(31)).to_bits(),
        _ => ((127 + rng.below(40) as u32 - 20) << 23) | (rng.next_u64() as u32 >> 9),
    }
}

/// 16 bytes for an XMM register or m128 operand: float lanes, double lanes or integers.
pub fn xmm(rng: &mut Rng) -> [u8; 16] {
    let mut out = [0u8; 16];
    match rng.below(3) {
        0 => {
            for lane in out.chunks_exact_mut(4) {
                lane.copy_from_slice(&f32_bits(rng).to_le_bytes());
            }
        }
        1 => {
            for lane in out.chunks_exact_mut(8) {
                lane.copy_from_slice(&f64_bits(rng).to_le_bytes());
            }
        }
        _ => {
            let bits = *rng.pick(&[8u32, 16, 32, 64]);
            for lane in out.chunks_exact_mut((bits / 8) as usize) {
                let v = rng.edgy(bits).to_le_bytes();
                let n = lane.len();
                lane.copy_from_slice(&v[..n]);
            }
        }
    }
    out
}

/// Packed BCD (FBLD source): 18 digits and a sign byte.
pub fn bcd80(rng: &mut Rng) -> [u8; 10] {
    let mut out = [0u8; 10];
    for b in out.iter_mut().take(9) {
        *b = ((rng.below(10) as u8) << 4) | rng.below(10) as u8;
    }
    out[9] = if rng.chance(50) { 0x80 } else { 0 };
    out
}
