//! All-points-addressable VGA modes: 16-colour planar, 256-colour packed, CGA 4-colour.

use super::super::Vga;
use crate::frame::Frame;

/// Writes `count` copies of `color` at pixel `x` of an RGBA row; returns the next x.
fn put(row: &mut [u8], x: usize, count: usize, color: &[u8; 4]) -> usize {
    for i in x..x + count {
        if let Some(px) = row.get_mut(i * 4..i * 4 + 4) {
            px.copy_from_slice(color);
        }
    }
    x + count
}

/// The address counter for display line `y`, its row-scan counter value and the
/// line's pixel panning.
fn line_start(vga: &Vga, y: u32) -> (u32, u32, u32) {
    let source = vga.line_source(y);
    let rows = vga.crtc.max_scan_line() + 1;
    let ma = source.base + (source.line / rows) * vga.crtc.row_pitch();
    (ma, source.line % rows, source.pan)
}

fn dot_width(vga: &Vga) -> usize {
    if vga.seq.half_dot_clock() { 2 } else { 1 }
}

/// Modes 0Dh/0Eh/10h/12h: one bit per plane per pixel.
pub(super) fn render_planar16(vga: &Vga, out: &mut Frame) {
    let colors = vga.attribute_colors();
    let clocks = vga.crtc.display_chars();
    let width = dot_width(vga);
    for y in 0..out.height {
        let (ma, scan, pan) = line_start(vga, y);
        let pan = pan & 7;
        let row = out.row_mut(y);
        let mut x = 0;
        for pixel in pan..clocks * 8 + pan {
            let offset = vga.crtc.memory_offset(ma + pixel / 8, scan);
            let bit = 7 - (pixel % 8);
            let value = (0..4).fold(0u8, |v, plane| {
                v | (vga.plane(plane, offset) >> bit & 1) << plane
            });
            x = put(row, x, width, &colors[usize::from(value)]);
        }
    }
}

/// Mode 13h and unchained 256-colour modes: each character clock shows one byte from
/// each of the four planes, every pixel two dots wide.
pub(super) fn render_packed256(vga: &Vga, out: &mut Frame) {
    let colors = vga.dac.rgba_table();
    let clocks = vga.crtc.display_chars();
    let width = 2 * dot_width(vga);
    for y in 0..out.height {
        let (ma, scan, pan) = line_start(vga, y);
        let pan = (pan >> 1) & 3;
        let row = out.row_mut(y);
        let mut x = 0;
        for pixel in pan..clocks * 4 + pan {
            let offset = vga.crtc.memory_offset(ma + pixel / 4, scan);
            let value = vga.plane((pixel % 4) as usize, offset);
            x = put(row, x, width, &colors[usize::from(value)]);
        }
    }
}

/// CGA modes 4/5: two bits per pixel, the even byte (plane 0) then the odd byte
/// (plane 1) of each character clock.
pub(super) fn render_cga4(vga: &Vga, out: &mut Frame) {
    let colors = vga.attribute_colors();
    let clocks = vga.crtc.display_chars();
    let width = dot_width(vga);
    for y in 0..out.height {
        let (ma, scan, _) = line_start(vga, y);
        let row = out.row_mut(y);
        let mut x = 0;
        for clock in 0..clocks {
            let offset = vga.crtc.memory_offset(ma + clock, scan);
            for plane in 0..2 {
                let byte = vga.plane(plane, offset);
                for pair in 0..4 {
                    let value = byte >> (6 - 2 * pair) & 3;
                    x = put(row, x, width, &colors[usize::from(value)]);
                }
            }
        }
    }
}
