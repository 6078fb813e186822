//! CPU decoder for the block-compressed formats D3D9 calls DXT1/DXT3/DXT5 (BC1/BC2/BC3),
//! for adapters without TEXTURE_COMPRESSION_BC (issue 17 §1: "decompressed on the CPU
//! when the adapter lacks BC").
//!
//! Rules (D3D9 / S3TC):
//! - Colour endpoints are B5G6R5 words, expanded to 8 bits by bit replication.
//! - BC1: `c0 > c1` (as 16-bit numbers) gives 4 opaque colours (c0, c1, 2/3 c0 + 1/3 c1,
//!   1/3 c0 + 2/3 c1); otherwise 3 colours (c0, c1, their mean) plus transparent black.
//! - BC2/BC3 colour blocks always use the 4-colour mode.
//! - BC2 alpha: an explicit 4-bit value per texel, expanded by replication (`a * 17`).
//! - BC3 alpha: endpoints a0, a1 and 3-bit codes; `a0 > a1` gives 8 interpolated values,
//!   otherwise 6 interpolated values plus 0 and 255.
//!
//! Interpolated values are rounded to nearest (the specs define them as real-valued
//! fractions; hardware differs in the last bit).
//!
//! Texel `i` of a block (row-major, `i = y * 4 + x`) uses the `i`-th code from the low
//! bits up. The output is RGBA8.

use aero_protocol::pci::Format;
use thiserror::Error;

/// The three block-compressed formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BcKind {
    Bc1,
    Bc2,
    Bc3,
}

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum BcError {
    #[error("{len} bytes are not {blocks_w}x{blocks_h} {kind:?} blocks")]
    Length {
        kind: BcKind,
        len: usize,
        blocks_w: u32,
        blocks_h: u32,
    },
}

impl BcKind {
    pub fn from_format(format: Format) -> Option<Self> {
        match format {
            Format::Bc1Unorm => Some(BcKind::Bc1),
            Format::Bc2Unorm => Some(BcKind::Bc2),
            Format::Bc3Unorm => Some(BcKind::Bc3),
            _ => None,
        }
    }

    /// Bytes of one 4x4 block.
    pub fn block_bytes(self) -> usize {
        match self {
            BcKind::Bc1 => 8,
            BcKind::Bc2 | BcKind::Bc3 => 16,
        }
    }
}

/// Decodes `blocks_w` x `blocks_h` tightly packed blocks into a
/// `(4 * blocks_w) x (4 * blocks_h)` RGBA8 image (rows of `16 * blocks_w` bytes). The
/// output is 4 (BC2/3) or 8 (BC1) times the input, so it is bounded by the input length.
pub fn decode(kind: BcKind, data: &[u8], blocks_w: u32, blocks_h: u32) -> Result<Vec<u8>, BcError> {
    let (bw, bh) = (blocks_w as usize, blocks_h as usize);
    let expected = bw
        .checked_mul(bh)
        .and_then(|n| n.checked_mul(kind.block_bytes()));
    if expected != Some(data.len()) {
        return Err(BcError::Length {
            kind,
            len: data.len(),
            blocks_w,
            blocks_h,
        });
    }
    let row_bytes = bw * 16;
    let mut out = vec![0u8; data.len() / kind.block_bytes() * 64];
    for (i, block) in data.chunks_exact(kind.block_bytes()).enumerate() {
        let texels = decode_block(kind, block);
        let (bx, by) = (i % bw, i / bw);
        for y in 0..4 {
            let dst = (by * 4 + y) * row_bytes + bx * 16;
            for x in 0..4 {
                out[dst + x * 4..dst + x * 4 + 4].copy_from_slice(&texels[y * 4 + x]);
            }
        }
    }
    Ok(out)
}

/// One block's 16 texels, row-major. `block` is `kind.block_bytes()` long.
pub fn decode_block(kind: BcKind, block: &[u8]) -> [[u8; 4]; 16] {
    match kind {
        BcKind::Bc1 => decode_colour(&block[..8], true),
        BcKind::Bc2 => {
            let mut texels = decode_colour(&block[8..16], false);
            let bits = u64::from_le_bytes(block[..8].try_into().unwrap_or_default());
            for (i, t) in texels.iter_mut().enumerate() {
                t[3] = ((bits >> (4 * i)) & 0xF) as u8 * 17;
            }
            texels
        }
        BcKind::Bc3 => {
            let mut texels = decode_colour(&block[8..16], false);
            let alphas = bc3_alpha_palette(block[0], block[1]);
            let mut codes = [0u8; 8];
            codes[..6].copy_from_slice(&block[2..8]);
            let bits = u64::from_le_bytes(codes);
            for (i, t) in texels.iter_mut().enumerate() {
                t[3] = alphas[((bits >> (3 * i)) & 7) as usize];
            }
            texels
        }
    }
}

/// B5G6R5 to RGB8 by bit replication.
fn expand_565(v: u16) -> [u16; 3] {
    let (r, g, b) = (v >> 11, (v >> 5) & 0x3F, v & 0x1F);
    [
        (r << 3) | (r >> 2),
        (g << 2) | (g >> 4),
        (b << 3) | (b >> 2),
    ]
}

/// `(wa * a + wb * b) / (wa + wb)`, rounded to nearest.
fn mix(a: u16, b: u16, wa: u16, wb: u16) -> u8 {
    let total = wa + wb;
    ((wa * a + wb * b + total / 2) / total) as u8
}

/// The colour half of a block (8 bytes); `bc1` enables BC1's 3-colour mode.
fn decode_colour(block: &[u8], bc1: bool) -> [[u8; 4]; 16] {
    let c0 = u16::from_le_bytes([block[0], block[1]]);
    let c1 = u16::from_le_bytes([block[2], block[3]]);
    let (e0, e1) = (expand_565(c0), expand_565(c1));
    let rgb = |f: &dyn Fn(u16, u16) -> u8| [f(e0[0], e1[0]), f(e0[1], e1[1]), f(e0[2], e1[2]), 255];
    let palette = if !bc1 || c0 > c1 {
        [
            rgb(&|a, _| a as u8),
            rgb(&|_, b| b as u8),
            rgb(&|a, b| mix(a, b, 2, 1)),
            rgb(&|a, b| mix(a, b, 1, 2)),
        ]
    } else {
        [
            rgb(&|a, _| a as u8),
            rgb(&|_, b| b as u8),
            rgb(&|a, b| mix(a, b, 1, 1)),
            [0, 0, 0, 0],
        ]
    };
    let codes = u32::from_le_bytes([block[4], block[5], block[6], block[7]]);
    std::array::from_fn(|i| palette[((codes >> (2 * i)) & 3) as usize])
}

/// BC3's 8 alpha values for the codes 0..=7.
fn bc3_alpha_palette(a0: u8, a1: u8) -> [u8; 8] {
    let (a, b) = (u16::from(a0), u16::from(a1));
    if a0 > a1 {
        std::array::from_fn(|code| match code {
            0 => a0,
            1 => a1,
            k => mix(a, b, 8 - k as u16, k as u16 - 1),
        })
    } else {
        std::array::from_fn(|code| match code {
            0 => a0,
            1 => a1,
            6 => 0,
            7 => 255,
            k => mix(a, b, 6 - k as u16, k as u16 - 1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Packs 16 codes of `bits` bits each, texel 0 in the low bits.
    fn codes(values: [u8; 16], bits: u32) -> u64 {
        values
            .iter()
            .enumerate()
            .fold(0, |acc, (i, &v)| acc | u64::from(v) << (bits * i as u32))
    }

    fn colour_block(c0: u16, c1: u16, idx: [u8; 16]) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[..2].copy_from_slice(&c0.to_le_bytes());
        b[2..4].copy_from_slice(&c1.to_le_bytes());
        b[4..].copy_from_slice(&(codes(idx, 2) as u32).to_le_bytes());
        b
    }

    const RED: u16 = 0xF800;
    const BLUE: u16 = 0x001F;
    /// Codes 0,1,2,3 repeated: texel i uses code i % 4.
    const RAMP: [u8; 16] = [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3];

    #[test]
    fn endpoints_expand_by_bit_replication() {
        // 0b10000 -> 0b10000100 = 132; 0b100000 (6 bits) -> 0b10000010 = 130.
        assert_eq!(
            expand_565((0b10000 << 11) | (0b10_0000 << 5) | 0b10000),
            [132, 130, 132]
        );
        assert_eq!(expand_565(0xFFFF), [255, 255, 255]);
        assert_eq!(expand_565(0x0001), [0, 0, 8]);
    }

    #[test]
    fn bc1_four_colour_mode_when_c0_greater() {
        let t = decode_block(BcKind::Bc1, &colour_block(RED, BLUE, RAMP));
        assert_eq!(t[0], [255, 0, 0, 255]);
        assert_eq!(t[1], [0, 0, 255, 255]);
        // 2/3 * 255 = 170, 1/3 * 255 = 85.
        assert_eq!(t[2], [170, 0, 85, 255]);
        assert_eq!(t[3], [85, 0, 170, 255]);
        assert_eq!(t[15], t[3]);
    }

    #[test]
    fn bc1_three_colour_mode_when_c0_not_greater() {
        let t = decode_block(BcKind::Bc1, &colour_block(BLUE, RED, RAMP));
        assert_eq!(t[0], [0, 0, 255, 255]);
        assert_eq!(t[1], [255, 0, 0, 255]);
        // The mean of 0 and 255 rounds to 128.
        assert_eq!(t[2], [128, 0, 128, 255]);
        assert_eq!(t[3], [0, 0, 0, 0], "code 3 is transparent black");
        // Equal endpoints are the 3-colour mode as well.
        let t = decode_block(BcKind::Bc1, &colour_block(RED, RED, [3; 16]));
        assert_eq!(t[7], [0, 0, 0, 0]);
    }

    #[test]
    fn bc2_has_explicit_alpha_and_always_four_colours() {
        let alpha: [u8; 16] = std::array::from_fn(|i| i as u8);
        let mut block = [0u8; 16];
        block[..8].copy_from_slice(&codes(alpha, 4).to_le_bytes());
        // c0 < c1 would be BC1's 3-colour mode; BC2 still interpolates 4 colours.
        block[8..].copy_from_slice(&colour_block(BLUE, RED, RAMP));
        let t = decode_block(BcKind::Bc2, &block);
        for (i, texel) in t.iter().enumerate() {
            assert_eq!(texel[3], i as u8 * 17, "texel {i}");
        }
        assert_eq!(t[2][..3], [85, 0, 170]);
        assert_eq!(t[3][..3], [170, 0, 85]);
    }

    #[test]
    fn bc3_eight_value_alpha_mode() {
        let idx: [u8; 16] = std::array::from_fn(|i| (i % 8) as u8);
        let mut block = [0u8; 16];
        block[0] = 255;
        block[1] = 0;
        block[2..8].copy_from_slice(&codes(idx, 3).to_le_bytes()[..6]);
        block[8..].copy_from_slice(&colour_block(RED, BLUE, [0; 16]));
        let t = decode_block(BcKind::Bc3, &block);
        // 255 * (6/7, 5/7, ..., 1/7) rounded.
        let expected = [255, 0, 219, 182, 146, 109, 73, 36];
        for (i, texel) in t.iter().enumerate() {
            assert_eq!(texel[3], expected[i % 8], "texel {i}");
            assert_eq!(texel[..3], [255, 0, 0]);
        }
    }

    #[test]
    fn bc3_six_value_alpha_mode_has_zero_and_full() {
        let idx: [u8; 16] = std::array::from_fn(|i| 7 - (i % 8) as u8);
        let mut block = [0u8; 16];
        block[0] = 10;
        block[1] = 210;
        block[2..8].copy_from_slice(&codes(idx, 3).to_le_bytes()[..6]);
        block[8..].copy_from_slice(&colour_block(BLUE, RED, [0; 16]));
        let t = decode_block(BcKind::Bc3, &block);
        // Codes 7..0: 255, 0, (1*10+4*210)/5 = 170, (2*10+3*210)/5 = 130, 90, 50, then a1, a0.
        let expected = [255, 0, 170, 130, 90, 50, 210, 10];
        for (i, texel) in t.iter().enumerate() {
            assert_eq!(texel[3], expected[i % 8], "texel {i}");
        }
    }

    #[test]
    fn decode_lays_blocks_out_as_an_image() {
        let mut data = Vec::new();
        data.extend(colour_block(RED, BLUE, [0; 16]));
        data.extend(colour_block(RED, BLUE, [1; 16]));
        let image = decode(BcKind::Bc1, &data, 2, 1).unwrap();
        assert_eq!(image.len(), 8 * 4 * 4);
        // Row 3: texels 0..4 red, 4..8 blue.
        let row3 = &image[3 * 32..4 * 32];
        assert_eq!(row3[..4], [255, 0, 0, 255]);
        assert_eq!(row3[12..16], [255, 0, 0, 255]);
        assert_eq!(row3[16..20], [0, 0, 255, 255]);
        assert_eq!(row3[28..32], [0, 0, 255, 255]);
        assert_eq!(
            decode(BcKind::Bc1, &data, 3, 1),
            Err(BcError::Length {
                kind: BcKind::Bc1,
                len: 16,
                blocks_w: 3,
                blocks_h: 1
            })
        );
        assert!(decode(BcKind::Bc3, &[], u32::MAX, u32::MAX).is_err());
        assert_eq!(decode(BcKind::Bc2, &[], 0, 5), Ok(Vec::new()));
    }
}
