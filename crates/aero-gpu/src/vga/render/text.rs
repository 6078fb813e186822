//! Alphanumeric modes: characters from plane 0, attributes from plane 1, glyphs from
//! the font maps in plane 2, with cursor, underline, blink and the 9th-dot rule.

use super::super::Vga;
use crate::frame::Frame;

pub(super) fn render(vga: &Vga, out: &mut Frame) {
    let colors = vga.attribute_colors();
    let char_height = vga.crtc.max_scan_line() + 1;
    let dots: u32 = if vga.seq.eight_dot_chars() { 8 } else { 9 };
    let dot_width: usize = if vga.seq.half_dot_clock() { 2 } else { 1 };
    let columns = vga.crtc.display_chars();
    let pitch = vga.crtc.row_pitch();
    let (font_a, font_b) = vga.seq.font_bases();
    let cursor_at = vga.crtc.cursor_location();
    let cursor_lines = vga.crtc.cursor_lines().filter(|_| vga.cursor_blink_on());
    let blink_enabled = vga.attr.blink_enabled();
    let blink_on = vga.char_blink_on();
    let line_graphics = vga.attr.line_graphics();
    let underline_line = vga.crtc.underline_line();

    for y in 0..out.height {
        let source = vga.line_source(y);
        let row = source.line / char_height;
        let scan = source.line % char_height;
        let row_ma = source.base + row * pitch;
        let out_row = out.row_mut(y);
        let mut x = 0usize;
        for col in 0..columns {
            let ma = row_ma + col;
            let offset = vga.crtc.memory_offset(ma, scan);
            let code = vga.plane(0, offset);
            let attr = vga.plane(1, offset);

            let font = if attr & 0x08 != 0 { font_a } else { font_b };
            let mut bits = if scan < 32 {
                vga.plane(2, font + usize::from(code) * 32 + scan as usize)
            } else {
                0
            };
            let mut fg = attr & 0x0F;
            let mut bg = attr >> 4;
            if blink_enabled {
                bg &= 0x07;
                if attr & 0x80 != 0 && !blink_on {
                    fg = bg;
                }
            }
            let mut solid = false;
            // Monochrome-compatible underline: foreground 1, background 0.
            if scan == underline_line && attr & 0x77 == 0x01 {
                solid = true;
            }
            if let Some((start, end)) = cursor_lines
                && ma & 0xFFFF == cursor_at
                && start <= scan
                && scan <= end
            {
                solid = true;
                fg = attr & 0x0F;
            }
            if solid {
                bits = 0xFF;
            }
            let ninth = dots == 9
                && (solid || (line_graphics && (0xC0..=0xDF).contains(&code) && bits & 1 != 0));

            for dot in 0..dots {
                let on = if dot < 8 {
                    bits >> (7 - dot) & 1 != 0
                } else {
                    ninth
                };
                let color = colors[usize::from(if on { fg } else { bg })];
                for _ in 0..dot_width {
                    if let Some(px) = out_row.get_mut(x * 4..x * 4 + 4) {
                        px.copy_from_slice(&color);
                    }
                    x += 1;
                }
            }
        }
    }
}
