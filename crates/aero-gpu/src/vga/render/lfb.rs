//! Bochs VBE linear-framebuffer modes.

use super::super::{VbeMode, Vga};
use crate::frame::Frame;

fn expand5(v: u16) -> u8 {
    let v = (v & 0x1F) as u8;
    (v << 3) | (v >> 2)
}

fn expand6(v: u16) -> u8 {
    let v = (v & 0x3F) as u8;
    (v << 2) | (v >> 4)
}

pub(super) fn render(vga: &Vga, lfb: &[u8], mode: VbeMode, out: &mut Frame) {
    // The DISPI interface only enables modes up to VBE_MAX_XRES x VBE_MAX_YRES.
    out.reset(mode.width, mode.height);
    let palette = vga.dac.rgba_table();
    let bytes = match mode.bpp {
        8 => 1,
        15 | 16 => 2,
        24 => 3,
        _ => 4,
    };
    let line_bytes = mode.width as usize * bytes;
    for y in 0..mode.height {
        let start = mode.start.saturating_add(y as usize * mode.pitch);
        // Pixels past the end of video memory stay black.
        let end = start.saturating_add(line_bytes).min(lfb.len());
        let src = lfb.get(start..end).unwrap_or(&[]);
        let dst = out.row_mut(y).chunks_exact_mut(4);
        let pixels = src.chunks_exact(bytes);
        match mode.bpp {
            8 => pixels
                .zip(dst)
                .for_each(|(s, d)| d.copy_from_slice(&palette[usize::from(s[0])])),
            15 => pixels.zip(dst).for_each(|(s, d)| {
                let v = u16::from_le_bytes([s[0], s[1]]);
                d.copy_from_slice(&[expand5(v >> 10), expand5(v >> 5), expand5(v), 0xFF]);
            }),
            16 => pixels.zip(dst).for_each(|(s, d)| {
                let v = u16::from_le_bytes([s[0], s[1]]);
                d.copy_from_slice(&[expand5(v >> 11), expand6(v >> 5), expand5(v), 0xFF]);
            }),
            _ => pixels
                .zip(dst)
                .for_each(|(s, d)| d.copy_from_slice(&[s[2], s[1], s[0], 0xFF])),
        }
    }
}
