//! Alphanumeric modes: characters from plane 0, attributes from plane 1, glyphs from
//! the font maps in plane 2, with cursor, underline, blink, panning and the 9th-dot rule.

use super::super::Vga;
use crate::frame::Frame;

/// Per-frame state shared by every cell.
struct TextStyle {
    fonts: (usize, usize),
    cursor_at: u32,
    cursor_lines: Option<(u32, u32)>,
    blink_enabled: bool,
    blink_on: bool,
    line_graphics: bool,
    underline_line: u32,
    dots: u32,
}

impl TextStyle {
    /// Appends the colour indices of one cell's dots on scan line `scan`.
    fn push_cell(&self, vga: &Vga, ma: u32, scan: u32, dots: &mut Vec<u8>) {
        let offset = vga.crtc.memory_offset(ma, scan);
        let code = vga.plane(0, offset);
        let attr = vga.plane(1, offset);

        let font = if attr & 0x08 != 0 {
            self.fonts.0
        } else {
            self.fonts.1
        };
        let mut bits = if scan < 32 {
            vga.plane(2, font + usize::from(code) * 32 + scan as usize)
        } else {
            0
        };
        let mut fg = attr & 0x0F;
        let mut bg = attr >> 4;
        if self.blink_enabled {
            bg &= 0x07;
            if attr & 0x80 != 0 && !self.blink_on {
                fg = bg;
            }
        }
        // Monochrome-compatible underline (foreground 1, background 0) and the cursor
        // both light the whole cell width in the foreground colour.
        let underline = scan == self.underline_line && attr & 0x77 == 0x01;
        let cursor = self.cursor_lines.is_some_and(|(start, end)| {
            ma & 0xFFFF == self.cursor_at && start <= scan && scan <= end
        });
        if cursor {
            fg = attr & 0x0F;
        }
        let solid = underline || cursor;
        if solid {
            bits = 0xFF;
        }
        let ninth = solid || (self.line_graphics && (0xC0..=0xDF).contains(&code) && bits & 1 != 0);

        for dot in 0..self.dots {
            let on = if dot < 8 {
                bits >> (7 - dot) & 1 != 0
            } else {
                ninth
            };
            dots.push(if on { fg } else { bg });
        }
    }
}

pub(super) fn render(vga: &Vga, out: &mut Frame) {
    let colors = vga.attribute_colors();
    let char_height = vga.crtc.max_scan_line() + 1;
    let dots: u32 = if vga.seq.eight_dot_chars() { 8 } else { 9 };
    let dot_width: usize = if vga.seq.half_dot_clock() { 2 } else { 1 };
    let columns = vga.crtc.display_chars();
    let pitch = vga.crtc.row_pitch();
    let style = TextStyle {
        fonts: vga.seq.font_bases(),
        cursor_at: vga.crtc.cursor_location(),
        cursor_lines: vga.crtc.cursor_lines().filter(|_| vga.cursor_blink_on()),
        blink_enabled: vga.attr.blink_enabled(),
        blink_on: vga.char_blink_on(),
        line_graphics: vga.attr.line_graphics(),
        underline_line: vga.crtc.underline_line(),
        dots,
    };
    let visible_dots = (columns * dots) as usize;
    // One extra cell so horizontal panning can shift in the next character.
    let mut line_dots: Vec<u8> = Vec::with_capacity(visible_dots + dots as usize);

    for y in 0..out.height {
        let source = vga.line_source(y);
        let row = source.line / char_height;
        let scan = source.line % char_height;
        let row_ma = source.base + row * pitch;
        // 9-dot panning counts 8, 0, 1, ... 7 for shifts of 0 to 8 dots.
        let pan = match (dots, source.pan) {
            (9, p) if p >= 8 => 0,
            (9, p) => p as usize + 1,
            (_, p) => (p & 7) as usize,
        };
        line_dots.clear();
        for col in 0..=columns {
            style.push_cell(vga, row_ma + col, scan, &mut line_dots);
        }
        let out_row = out.row_mut(y);
        let visible = line_dots.iter().skip(pan).take(visible_dots);
        for (i, &index) in visible.enumerate() {
            let color = colors[usize::from(index & 0x0F)];
            for x in i * dot_width..(i + 1) * dot_width {
                if let Some(px) = out_row.get_mut(x * 4..x * 4 + 4) {
                    px.copy_from_slice(&color);
                }
            }
        }
    }
}
