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

pub(super) fn render(vga: &Vga, mode: VbeMode, out: &mut Frame) {
    // The DISPI interface only accepts modes up to VBE_MAX_XRES x VBE_MAX_YRES.
    out.reset(mode.width, mode.height);
    let lfb = &vga.vbe.lfb;
    let palette = vga.dac.rgba_table();
    let bytes = match mode.bpp {
        8 => 1,
        15 | 16 => 2,
        24 => 3,
        _ => 4,
    };
    for y in 0..mode.height {
        let line = mode.start.saturating_add(y as usize * mode.pitch);
        let row = out.row_mut(y);
        for x in 0..mode.width as usize {
            let at = line.saturating_add(x * bytes);
            let Some(src) = lfb.get(at..at.saturating_add(bytes)) else {
                continue; // past the end of video memory: stays black
            };
            let rgba = match mode.bpp {
                8 => palette[usize::from(src[0])],
                15 => {
                    let v = u16::from_le_bytes([src[0], src[1]]);
                    [expand5(v >> 10), expand5(v >> 5), expand5(v), 0xFF]
                }
                16 => {
                    let v = u16::from_le_bytes([src[0], src[1]]);
                    [expand5(v >> 11), expand6(v >> 5), expand5(v), 0xFF]
                }
                _ => [src[2], src[1], src[0], 0xFF],
            };
            if let Some(px) = row.get_mut(x * 4..x * 4 + 4) {
                px.copy_from_slice(&rgba);
            }
        }
    }
}
