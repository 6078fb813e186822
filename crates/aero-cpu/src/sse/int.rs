//! Integer SIMD operations (MMX, SSE2, SSSE3) on packed lanes.
//!
//! Values are u128; MMX operands are zero-extended u64 and `width` (8 or 16 bytes)
//! selects the register size for operations whose result depends on it (pack, unpack,
//! shuffles, byte shifts, horizontal ops). Lane-wise operations work on the full u128;
//! MMX callers keep the low 64 bits.

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    }
}

/// Lane `i` of width `bits`, zero-extended.
pub fn lane(v: u128, bits: u32, i: u32) -> u64 {
    ((v >> (i * bits)) as u64) & mask(bits)
}

fn lane_signed(v: u128, bits: u32, i: u32) -> i64 {
    let x = lane(v, bits, i);
    let shift = 64 - bits;
    ((x << shift) as i64) >> shift
}

fn with_lane(v: u128, bits: u32, i: u32, x: u64) -> u128 {
    let m = (mask(bits) as u128) << (i * bits);
    (v & !m) | (((x & mask(bits)) as u128) << (i * bits))
}

/// Combines corresponding lanes.
pub fn map2(a: u128, b: u128, bits: u32, f: impl Fn(u64, u64) -> u64) -> u128 {
    (0..128 / bits).fold(0, |r, i| {
        r | (((f(lane(a, bits, i), lane(b, bits, i)) & mask(bits)) as u128) << (i * bits))
    })
}

/// Combines corresponding lanes as signed values.
pub fn map2_signed(a: u128, b: u128, bits: u32, f: impl Fn(i64, i64) -> i64) -> u128 {
    (0..128 / bits).fold(0, |r, i| {
        r | (((f(lane_signed(a, bits, i), lane_signed(b, bits, i)) as u64 & mask(bits)) as u128)
            << (i * bits))
    })
}

fn sat_signed(v: i64, bits: u32) -> i64 {
    let max = (1i64 << (bits - 1)) - 1;
    v.clamp(-max - 1, max)
}

fn sat_unsigned(v: i64, bits: u32) -> i64 {
    v.clamp(0, mask(bits) as i64)
}

pub fn padd(a: u128, b: u128, bits: u32) -> u128 {
    map2(a, b, bits, |x, y| x.wrapping_add(y))
}
pub fn psub(a: u128, b: u128, bits: u32) -> u128 {
    map2(a, b, bits, |x, y| x.wrapping_sub(y))
}
/// PADDSB/PADDSW.
pub fn padds(a: u128, b: u128, bits: u32) -> u128 {
    map2_signed(a, b, bits, |x, y| sat_signed(x + y, bits))
}
/// PSUBSB/PSUBSW.
pub fn psubs(a: u128, b: u128, bits: u32) -> u128 {
    map2_signed(a, b, bits, |x, y| sat_signed(x - y, bits))
}
/// PADDUSB/PADDUSW.
pub fn paddus(a: u128, b: u128, bits: u32) -> u128 {
    map2(a, b, bits, |x, y| sat_unsigned((x + y) as i64, bits) as u64)
}
/// PSUBUSB/PSUBUSW.
pub fn psubus(a: u128, b: u128, bits: u32) -> u128 {
    map2(a, b, bits, |x, y| x.saturating_sub(y))
}
pub fn pmullw(a: u128, b: u128) -> u128 {
    map2(a, b, 16, |x, y| x.wrapping_mul(y))
}
pub fn pmulhw(a: u128, b: u128) -> u128 {
    map2_signed(a, b, 16, |x, y| (x * y) >> 16)
}
pub fn pmulhuw(a: u128, b: u128) -> u128 {
    map2(a, b, 16, |x, y| (x * y) >> 16)
}
/// PMULUDQ: low dword of each qword, unsigned 64-bit products.
pub fn pmuludq(a: u128, b: u128) -> u128 {
    map2(a, b, 64, |x, y| (x & 0xFFFF_FFFF) * (y & 0xFFFF_FFFF))
}
/// PMADDWD: pairwise signed word products summed into dwords.
pub fn pmaddwd(a: u128, b: u128) -> u128 {
    (0..4).fold(0, |r, i| {
        let p0 = lane_signed(a, 16, 2 * i) * lane_signed(b, 16, 2 * i);
        let p1 = lane_signed(a, 16, 2 * i + 1) * lane_signed(b, 16, 2 * i + 1);
        with_lane(r, 32, i, (p0 + p1) as u64)
    })
}
/// PAVGB/PAVGW: rounded unsigned average.
pub fn pavg(a: u128, b: u128, bits: u32) -> u128 {
    map2(a, b, bits, |x, y| (x + y + 1) >> 1)
}
pub fn pminu(a: u128, b: u128, bits: u32) -> u128 {
    map2(a, b, bits, |x, y| x.min(y))
}
pub fn pmaxu(a: u128, b: u128, bits: u32) -> u128 {
    map2(a, b, bits, |x, y| x.max(y))
}
pub fn pmins(a: u128, b: u128, bits: u32) -> u128 {
    map2_signed(a, b, bits, |x, y| x.min(y))
}
pub fn pmaxs(a: u128, b: u128, bits: u32) -> u128 {
    map2_signed(a, b, bits, |x, y| x.max(y))
}
pub fn pcmpeq(a: u128, b: u128, bits: u32) -> u128 {
    map2(a, b, bits, |x, y| if x == y { u64::MAX } else { 0 })
}
pub fn pcmpgt(a: u128, b: u128, bits: u32) -> u128 {
    map2_signed(a, b, bits, |x, y| if x > y { -1 } else { 0 })
}
/// PSADBW: sum of absolute byte differences per 64-bit half, in the low word.
pub fn psadbw(a: u128, b: u128) -> u128 {
    (0..2).fold(0, |r, half| {
        let sum: u64 = (0..8)
            .map(|i| lane(a, 8, half * 8 + i).abs_diff(lane(b, 8, half * 8 + i)))
            .sum();
        with_lane(r, 64, half, sum)
    })
}

/// PSLLW/D/Q by a count; counts >= lane width clear the lanes.
pub fn psll(a: u128, count: u64, bits: u32) -> u128 {
    if count >= bits as u64 {
        return 0;
    }
    map2(a, 0, bits, |x, _| x << count)
}
pub fn psrl(a: u128, count: u64, bits: u32) -> u128 {
    if count >= bits as u64 {
        return 0;
    }
    map2(a, 0, bits, |x, _| x >> count)
}
/// PSRAW/D: counts >= width fill with the sign.
pub fn psra(a: u128, count: u64, bits: u32) -> u128 {
    let c = count.min(bits as u64 - 1);
    map2_signed(a, 0, bits, |x, _| x >> c)
}
/// PSLLDQ (byte shift of the whole register).
pub fn pslldq(a: u128, bytes: u8) -> u128 {
    if bytes >= 16 {
        0
    } else {
        a << (bytes as u32 * 8)
    }
}
pub fn psrldq(a: u128, bytes: u8) -> u128 {
    if bytes >= 16 {
        0
    } else {
        a >> (bytes as u32 * 8)
    }
}

/// PACKSSWB/PACKSSDW (signed) and PACKUSWB (unsigned) from `src_bits` lanes.
pub fn pack(a: u128, b: u128, src_bits: u32, width: u32, unsigned: bool) -> u128 {
    let dst = src_bits / 2;
    let n = width * 8 / src_bits;
    let sat = |v: i64| {
        if unsigned {
            sat_unsigned(v, dst)
        } else {
            sat_signed(v, dst)
        }
    };
    let mut r = 0;
    for i in 0..n {
        r = with_lane(r, dst, i, sat(lane_signed(a, src_bits, i)) as u64);
        r = with_lane(r, dst, n + i, sat(lane_signed(b, src_bits, i)) as u64);
    }
    r
}

/// PUNPCKL*/PUNPCKH* (and UNPCKLPS/PD, UNPCKHPS/PD): interleave the low or high halves.
pub fn unpack(a: u128, b: u128, bits: u32, width: u32, high: bool) -> u128 {
    let n = width * 8 / bits / 2;
    let base = if high { n } else { 0 };
    (0..n).fold(0, |r, i| {
        let r = with_lane(r, bits, 2 * i, lane(a, bits, base + i));
        with_lane(r, bits, 2 * i + 1, lane(b, bits, base + i))
    })
}

/// PSHUFD (also SHUFPS with a == b).
pub fn pshufd(a: u128, imm: u8) -> u128 {
    (0..4).fold(0, |r, i| {
        with_lane(r, 32, i, lane(a, 32, ((imm >> (2 * i)) & 3) as u32))
    })
}
/// PSHUFLW (and PSHUFW on the low 64 bits).
pub fn pshuflw(a: u128, imm: u8) -> u128 {
    let lo = (0..4).fold(0, |r, i| {
        with_lane(r, 16, i, lane(a, 16, ((imm >> (2 * i)) & 3) as u32))
    });
    (a & !(u64::MAX as u128)) | lo
}
pub fn pshufhw(a: u128, imm: u8) -> u128 {
    let hi = pshuflw(a >> 64, imm) as u64;
    (a & u64::MAX as u128) | ((hi as u128) << 64)
}
/// SHUFPS: two lanes from a, two from b.
pub fn shufps(a: u128, b: u128, imm: u8) -> u128 {
    let sel = |v: u128, k: u8| lane(v, 32, ((imm >> (2 * k)) & 3) as u32);
    let r = with_lane(0, 32, 0, sel(a, 0));
    let r = with_lane(r, 32, 1, sel(a, 1));
    let r = with_lane(r, 32, 2, sel(b, 2));
    with_lane(r, 32, 3, sel(b, 3))
}
pub fn shufpd(a: u128, b: u128, imm: u8) -> u128 {
    let r = with_lane(0, 64, 0, lane(a, 64, (imm & 1) as u32));
    with_lane(r, 64, 1, lane(b, 64, ((imm >> 1) & 1) as u32))
}

/// PMOVMSKB: top bit of each byte.
pub fn pmovmskb(a: u128, width: u32) -> u32 {
    (0..width).fold(0, |m, i| m | (((lane(a, 8, i) >> 7) as u32) << i))
}
/// MOVMSKPS (bits = 32) / MOVMSKPD (bits = 64).
pub fn movmsk(a: u128, bits: u32) -> u32 {
    (0..128 / bits).fold(0, |m, i| {
        m | (((lane(a, bits, i) >> (bits - 1)) as u32) << i)
    })
}
pub fn pextrw(a: u128, imm: u8, width: u32) -> u16 {
    lane(a, 16, imm as u32 % (width / 2)) as u16
}
pub fn pinsrw(a: u128, v: u16, imm: u8, width: u32) -> u128 {
    with_lane(a, 16, imm as u32 % (width / 2), v as u64)
}

/// PSHUFB (SSSE3).
pub fn pshufb(a: u128, b: u128, width: u32) -> u128 {
    (0..width).fold(0, |r, i| {
        let s = lane(b, 8, i);
        let v = if s & 0x80 != 0 {
            0
        } else {
            lane(a, 8, (s as u32) % width)
        };
        with_lane(r, 8, i, v)
    })
}

/// Horizontal add/subtract pairs (PHADDW/D, PHSUBW/D, PHADDSW, PHSUBSW).
pub fn phorizontal(a: u128, b: u128, bits: u32, width: u32, sub: bool, saturate: bool) -> u128 {
    let n = width * 8 / bits / 2;
    let f = |v: u128, j: u32| {
        let (x, y) = (lane_signed(v, bits, 2 * j), lane_signed(v, bits, 2 * j + 1));
        let r = if sub { x - y } else { x + y };
        (if saturate { sat_signed(r, bits) } else { r }) as u64
    };
    (0..n).fold(0, |r, j| {
        with_lane(with_lane(r, bits, j, f(a, j)), bits, n + j, f(b, j))
    })
}

/// PMADDUBSW: unsigned bytes of a times signed bytes of b, pairwise, saturated words.
pub fn pmaddubsw(a: u128, b: u128, width: u32) -> u128 {
    (0..width / 2).fold(0, |r, i| {
        let p0 = lane(a, 8, 2 * i) as i64 * lane_signed(b, 8, 2 * i);
        let p1 = lane(a, 8, 2 * i + 1) as i64 * lane_signed(b, 8, 2 * i + 1);
        with_lane(r, 16, i, sat_signed(p0 + p1, 16) as u64)
    })
}
/// PMULHRSW: rounded high half of signed word products.
pub fn pmulhrsw(a: u128, b: u128) -> u128 {
    map2_signed(a, b, 16, |x, y| (((x * y) >> 14) + 1) >> 1)
}
/// PSIGNB/W/D.
pub fn psign(a: u128, b: u128, bits: u32) -> u128 {
    map2_signed(a, b, bits, |x, y| match y.signum() {
        -1 => x.wrapping_neg(),
        0 => 0,
        _ => x,
    })
}
/// PABSB/W/D.
pub fn pabs(b: u128, bits: u32) -> u128 {
    map2_signed(b, 0, bits, |x, _| x.abs())
}
/// PALIGNR: (a:b) >> (imm * 8), keeping `width` bytes.
pub fn palignr(a: u128, b: u128, imm: u8, width: u32) -> u128 {
    let bytes = |v: u128| -> [u8; 16] { v.to_le_bytes() };
    let (ab, bb) = (bytes(a), bytes(b));
    let w = width as usize;
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().take(w).enumerate() {
        let k = i + imm as usize;
        *o = if k < w {
            bb[k]
        } else if k < 2 * w {
            ab[k - w]
        } else {
            0
        };
    }
    u128::from_le_bytes(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_int_arith_and_saturation() {
        assert_eq!(padd(0xFF01, 0x0101, 8), 0x0002);
        assert_eq!(padds(0x7F80, 0x0180, 8), 0x7F80);
        assert_eq!(paddus(0xFFF0, 0x0120, 8), 0xFFFF);
        assert_eq!(psubus(0x0510, 0x0620, 8), 0);
        assert_eq!(pmulhw(0x8000, 0x8000), 0x4000);
        assert_eq!(pmullw(0x0100, 0x0100), 0);
        assert_eq!(pmaddwd(0x0002_0003, 0xFFFF_0004), 10);
        assert_eq!(pmuludq(0xFFFF_FFFF, 0xFFFF_FFFF), 0xFFFF_FFFE_0000_0001);
        assert_eq!(
            psadbw(0x0A_00_00_00_00_00_00_01, 0x00_00_00_00_00_00_00_05),
            14
        );
        assert_eq!(pavg(0x0102, 0x0203, 8), 0x0203);
        assert_eq!(pcmpgt(0xFF, 0x01, 8) & 0xFF, 0);
        assert_eq!(pcmpeq(0x1234, 0x1234, 16) & 0xFFFF, 0xFFFF);
    }

    #[test]
    fn sse_int_shifts_pack_unpack_shuffle() {
        assert_eq!(psll(0x8001, 1, 16), 0x0002);
        assert_eq!(psrl(0x8001_8001, 15, 16), 0x0001_0001);
        assert_eq!(psra(0x8000, 20, 16) & 0xFFFF, 0xFFFF);
        assert_eq!(psll(1, 64, 64), 0);
        assert_eq!(pslldq(0xAB, 15), 0xAB << 120);
        assert_eq!(
            pack(0x0000_0080_FF7F_0001, 0xFFFF_FF00, 16, 8, false),
            0x0000_FF80_007F_8001
        );
        assert_eq!(
            pack(0x0000_0080_FF7F_0001, 0, 16, 8, true) as u32,
            0x0080_0001
        );
        // MMX PUNPCKLBW: bytes a0 b0 a1 b1 ...
        assert_eq!(
            unpack(0x0403_0201, 0x0807_0605, 8, 8, false),
            0x0804_0703_0602_0501
        );
        assert_eq!(
            unpack(0x11 << 64, 0x22 << 64, 64, 16, true),
            0x22 << 64 | 0x11
        );
        assert_eq!(
            pshufd(0x4444_4444_3333_3333_2222_2222_1111_1111, 0x1B),
            0x1111_1111_2222_2222_3333_3333_4444_4444
        );
        assert_eq!(pshuflw(0x0004_0003_0002_0001, 0x00), 0x0001_0001_0001_0001);
        assert_eq!(
            shufps(
                0x4_0000_0003_0000_0002_0000_0001,
                0x8_0000_0007_0000_0006_0000_0005,
                0xE4
            ),
            0x8_0000_0007_0000_0002_0000_0001
        );
        assert_eq!(pmovmskb(0x80_00_FF, 16), 0b101);
        assert_eq!(movmsk(1 << 127 | 1 << 31, 32), 0b1001);
        assert_eq!(pextrw(0x0004_0003_0002_0001, 6, 8), 3);
    }

    #[test]
    fn sse_int_ssse3() {
        assert_eq!(pshufb(0x0403_0201, 0x80_00_01_02, 8), 0x0101_0101_0001_0203);
        assert_eq!(
            phorizontal(0x0004_0003_0002_0001, 0x0010_0020, 16, 8, false, false),
            0x0000_0030_0007_0003
        );
        assert_eq!(
            psign(0x0005_0005_0005, 0xFFFF_0000_0001, 16),
            0xFFFB_0000_0005
        );
        assert_eq!(pabs(0xFF80, 8), 0x0180);
        assert_eq!(
            palignr(0x1111_2222, 0x3333_4444, 2, 8),
            0x2222_0000_0000_3333
        );
        assert_eq!(pmulhrsw(0x4000, 0x4000), 0x2000);
        assert_eq!(pmaddubsw(0xFF_FF, 0x7F_7F, 8), 0x7FFF);
    }

    fn bytes(b: [u8; 16]) -> u128 {
        u128::from_le_bytes(b)
    }
    fn words(w: [u16; 8]) -> u128 {
        (0..8).fold(0, |r, k| r | (w[k] as u128) << (16 * k))
    }
    fn dwords(d: [u32; 4]) -> u128 {
        (0..4).fold(0, |r, k| r | (d[k] as u128) << (32 * k))
    }
    /// Bytes `base, base+1, ...`.
    fn seq(base: u8) -> u128 {
        bytes(core::array::from_fn(|k| base + k as u8))
    }

    // Expected values below are worked out by hand from the SDM's pseudocode.

    #[test]
    fn ssse3_pshufb_xmm_and_mm() {
        let b = bytes([
            0x0F, 0x80, 0x01, 0x11, 0xFF, 0x7E, 0x00, 0x08, 0x90, 0x03, 0x13, 0x23, 0x7F, 0x40,
            0x05, 0x0A,
        ]);
        // XMM: index = low 4 bits, bit 7 zeroes the byte.
        let want = bytes([
            0xAF, 0x00, 0xA1, 0xA1, 0x00, 0xAE, 0xA0, 0xA8, 0x00, 0xA3, 0xA3, 0xA3, 0xAF, 0xA0,
            0xA5, 0xAA,
        ]);
        assert_eq!(pshufb(seq(0xA0), b, 16), want);
        // MMX: index = low 3 bits, only 8 bytes.
        let b = u64::from_le_bytes([0x0F, 0x80, 0x09, 0x13, 0xFF, 0x7E, 0x00, 0x0C]) as u128;
        let want = u64::from_le_bytes([0xA7, 0x00, 0xA1, 0xA3, 0x00, 0xA6, 0xA0, 0xA4]) as u128;
        assert_eq!(pshufb(seq(0xA0) & u64::MAX as u128, b, 8), want);
    }

    #[test]
    fn ssse3_horizontal_add_sub_words() {
        let a = words([1, 2, 3, 4, 0x7FFF, 1, 0x8000, 0xFFFF]);
        let b = words([10, 20, 0xFFFF, 0xFFFF, 0x1234, 1, 0x8000, 0x8000]);
        // PHADDW wraps, PHADDSW saturates; dest pairs first, then source pairs.
        assert_eq!(
            phorizontal(a, b, 16, 16, false, false),
            words([3, 7, 0x8000, 0x7FFF, 30, 0xFFFE, 0x1235, 0])
        );
        assert_eq!(
            phorizontal(a, b, 16, 16, false, true),
            words([3, 7, 0x7FFF, 0x8000, 30, 0xFFFE, 0x1235, 0x8000])
        );
        // PHSUBW: even word minus odd word.
        let a = words([0x8000, 1, 0x7FFF, 0xFFFF, 5, 7, 0, 0x8000]);
        let b = words([0, 0, 0xFFFF, 0x7FFF, 100, 0xFF9C, 0x4000, 0xC000]);
        assert_eq!(
            phorizontal(a, b, 16, 16, true, false),
            words([0x7FFF, 0x8000, 0xFFFE, 0x8000, 0, 0x8000, 0xC8, 0x8000])
        );
        assert_eq!(
            phorizontal(a, b, 16, 16, true, true),
            words([0x8000, 0x7FFF, 0xFFFE, 0x7FFF, 0, 0x8000, 0xC8, 0x7FFF])
        );
        // MMX: two pairs from each operand.
        let a = words([1, 2, 3, 4, 0, 0, 0, 0]);
        let b = words([0xFFFF, 1, 0x7FFF, 0x7FFF, 0, 0, 0, 0]);
        assert_eq!(
            phorizontal(a, b, 16, 8, false, false),
            words([3, 7, 0, 0xFFFE, 0, 0, 0, 0])
        );
        assert_eq!(
            phorizontal(a, b, 16, 8, false, true),
            words([3, 7, 0, 0x7FFF, 0, 0, 0, 0])
        );
    }

    #[test]
    fn ssse3_horizontal_add_sub_dwords() {
        let a = dwords([0xFFFF_FFFF, 1, 0x7FFF_FFFF, 1]);
        let b = dwords([2, 3, 0x8000_0000, 0x8000_0000]);
        assert_eq!(
            phorizontal(a, b, 32, 16, false, false),
            dwords([0, 0x8000_0000, 5, 0])
        );
        assert_eq!(
            phorizontal(a, b, 32, 16, true, false),
            dwords([0xFFFF_FFFE, 0x7FFF_FFFE, 0xFFFF_FFFF, 0])
        );
        let (a, b) = (dwords([5, 6, 0, 0]), dwords([7, 0xFFFF_FFF9, 0, 0]));
        assert_eq!(
            phorizontal(a, b, 32, 8, false, false),
            dwords([11, 0, 0, 0])
        );
        assert_eq!(
            phorizontal(a, b, 32, 8, true, false),
            dwords([0xFFFF_FFFF, 14, 0, 0])
        );
    }

    #[test]
    fn ssse3_pmaddubsw_unsigned_times_signed() {
        let a = bytes([
            0xFF, 0xFF, 0xFF, 0xFF, 0x02, 0x03, 0x80, 0x01, 0x00, 0x00, 0xFF, 0x00, 0x10, 0x20,
            0x7F, 0x80,
        ]);
        let b = bytes([
            0x7F, 0x7F, 0x80, 0x80, 0x04, 0xFB, 0xFF, 0x10, 0x80, 0x7F, 0x80, 0x7F, 0x10, 0x20,
            0x01, 0xFF,
        ]);
        // 255*127*2 saturates high, 255*-128*2 low, 2*4-3*5 = -7, -128+16 = -112, 0,
        // 255*-128 = -32640, 16*16+32*32 = 1280, 127-128 = -1.
        let want = words([0x7FFF, 0x8000, 0xFFF9, 0xFF90, 0, 0x8080, 0x0500, 0xFFFF]);
        assert_eq!(pmaddubsw(a, b, 16), want);
        assert_eq!(pmaddubsw(a, b, 8), want & u64::MAX as u128);
        // Not symmetric: the destination bytes are the unsigned ones.
        assert_eq!(pmaddubsw(b, a, 16) & 0xFFFF, 0xFF02); // 127*-1*2 = -254
    }

    #[test]
    fn ssse3_pmulhrsw_rounding() {
        let a = words([0x4000, 0x8000, 0x8000, 0xFFFF, 1, 1, 0x1234, 0xFFFE]);
        let b = words([0x4000, 0x8000, 0x7FFF, 1, 0x4000, 0x2000, 0x5678, 0x7FFF]);
        // ((a*b >> 14) + 1) >> 1 per signed word; -32768*-32768 wraps to 0x8000.
        assert_eq!(
            pmulhrsw(a, b),
            words([0x2000, 0x8000, 0x8001, 0, 1, 0, 0x0C4C, 0xFFFE])
        );
    }

    #[test]
    fn ssse3_psign_and_pabs() {
        let a = bytes([5, 0x80, 0x7F, 0xFF, 3, 3, 3, 0x80, 9, 9, 9, 9, 9, 9, 9, 9]);
        let b = bytes([
            0x80, 0xFF, 1, 0, 0x7F, 0, 0xFE, 1, 0, 0, 0, 0, 0xFF, 1, 0x80, 0,
        ]);
        assert_eq!(
            psign(a, b, 8),
            bytes([
                0xFB, 0x80, 0x7F, 0, 3, 0, 0xFD, 0x80, 0, 0, 0, 0, 0xF7, 9, 0xF7, 0
            ])
        );
        let a = words([5, 0x8000, 7, 0xFFFF, 2, 2, 2, 2]);
        let b = words([0x8000, 0xFFFF, 0, 0x0100, 0xFF00, 1, 0, 0x7FFF]);
        assert_eq!(
            psign(a, b, 16),
            words([0xFFFB, 0x8000, 0, 0xFFFF, 0xFFFE, 2, 0, 2])
        );
        let a = dwords([5, 0x8000_0000, 7, 0x1234_5678]);
        let b = dwords([0xFFFF_FFFF, 0x8000_0000, 0, 0x0000_0100]);
        assert_eq!(
            psign(a, b, 32),
            dwords([0xFFFF_FFFB, 0x8000_0000, 0, 0x1234_5678])
        );
        // The most negative value stays itself (no saturation).
        let b = bytes([
            0x80, 0xFF, 0x7F, 0, 1, 0x81, 0xC0, 0x40, 0, 0, 0, 0, 0, 0, 0, 0xFE,
        ]);
        assert_eq!(
            pabs(b, 8),
            bytes([
                0x80, 1, 0x7F, 0, 1, 0x7F, 0x40, 0x40, 0, 0, 0, 0, 0, 0, 0, 2
            ])
        );
        assert_eq!(
            pabs(
                words([0x8000, 0xFFFF, 0x7FFF, 0x8001, 0, 1, 0xFF00, 0x00FF]),
                16
            ),
            words([0x8000, 1, 0x7FFF, 0x7FFF, 0, 1, 0x0100, 0x00FF])
        );
        assert_eq!(
            pabs(dwords([0x8000_0000, 0xFFFF_FFFE, 5, 0x8000_0001]), 32),
            dwords([0x8000_0000, 2, 5, 0x7FFF_FFFF])
        );
    }

    #[test]
    fn ssse3_palignr_all_shift_ranges() {
        let (a, b) = (seq(0xA0), seq(0xB0));
        assert_eq!(palignr(a, b, 0, 16), b);
        assert_eq!(
            palignr(a, b, 5, 16),
            bytes([
                0xB5, 0xB6, 0xB7, 0xB8, 0xB9, 0xBA, 0xBB, 0xBC, 0xBD, 0xBE, 0xBF, 0xA0, 0xA1, 0xA2,
                0xA3, 0xA4
            ])
        );
        assert_eq!(palignr(a, b, 16, 16), a);
        assert_eq!(palignr(a, b, 20, 16), seq(0xA4) & (u128::MAX >> 32));
        assert_eq!(palignr(a, b, 31, 16), 0xAF);
        assert_eq!(palignr(a, b, 32, 16), 0);
        assert_eq!(palignr(a, b, 255, 16), 0);
        // MMX: the 16-byte concatenation of two 8-byte registers.
        let low = |v: u128| v & u64::MAX as u128;
        let (a, b) = (low(seq(0xA0)), low(seq(0xB0)));
        assert_eq!(
            palignr(a, b, 3, 8),
            u64::from_le_bytes([0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xA0, 0xA1, 0xA2]) as u128
        );
        assert_eq!(palignr(a, b, 8, 8), a);
        assert_eq!(palignr(a, b, 12, 8), 0xA7_A6_A5_A4);
        assert_eq!(palignr(a, b, 16, 8), 0);
        assert_eq!(palignr(a, b, 200, 8), 0);
    }
}
