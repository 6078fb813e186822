use super::*;
use crate::font::{font_8x8, font_8x16};
use crate::frame::Frame;
use crate::vga::DisplayMode;

const WHITE: [u8; 4] = [0xFF, 0xFF, 0xFF, 0xFF];
const BLUE: [u8; 4] = [0x00, 0x00, 0xAA, 0xFF];
const BLACK: [u8; 4] = [0x00, 0x00, 0x00, 0xFF];
const GREY: [u8; 4] = [0xAA, 0xAA, 0xAA, 0xFF];

fn text_mode() -> Vga {
    let mut vga = Vga::new();
    set_mode(&mut vga, &MODE_03);
    load_font(&mut vga, font_8x16());
    // Clear the screen to spaces on black.
    put_text(&mut vga, 0, 0, &[b' '; 80 * 25], 0x07);
    set_crtc(&mut vga, 0x0A, 0x20); // cursor off unless a test wants it
    vga
}

fn rendered(vga: &mut Vga) -> Frame {
    let mut frame = Frame::new();
    vga.render(&[], &mut frame); // VGA modes: no framebuffer needed
    frame
}

/// Asserts that the 9x16 cell at (row, col) shows `code` in `fg` on `bg`.
fn assert_cell(frame: &Frame, row: u32, col: u32, code: u8, fg: [u8; 4], bg: [u8; 4]) {
    let glyph = font_8x16().glyph(code);
    for y in 0..16 {
        for x in 0..9 {
            let on = x < 8 && glyph[y as usize] >> (7 - x) & 1 != 0;
            let want = if on { fg } else { bg };
            let got = frame.pixel(col * 9 + x, row * 16 + y).unwrap();
            assert_eq!(
                got, want,
                "cell ({row},{col}) char {code:#x} pixel ({x},{y})"
            );
        }
    }
}

#[test]
fn text_mode_renders_known_string_with_exact_pixels() {
    let mut vga = text_mode();
    put_text(&mut vga, 0, 0, b"Hi!", 0x1F);
    put_text(&mut vga, 24, 77, b"end", 0x07);
    let frame = rendered(&mut vga);
    assert_eq!((frame.width, frame.height), (720, 400));
    assert_eq!(frame.pixels.len(), 720 * 400 * 4);
    assert_cell(&frame, 0, 0, b'H', WHITE, BLUE);
    assert_cell(&frame, 0, 1, b'i', WHITE, BLUE);
    assert_cell(&frame, 0, 2, b'!', WHITE, BLUE);
    assert_cell(&frame, 0, 3, b' ', GREY, BLACK);
    assert_cell(&frame, 24, 79, b'd', GREY, BLACK);
    assert_eq!(
        vga.display_mode(),
        DisplayMode::Text {
            columns: 80,
            rows: 25,
            char_width: 9,
            char_height: 16
        }
    );
}

#[test]
fn ninth_column_repeats_only_for_line_graphics_characters() {
    let mut vga = text_mode();
    put_text(&mut vga, 1, 0, &[0xC4, 0xCD, b'-'], 0x07);
    let frame = rendered(&mut vga);
    let row_of = |code: u8| {
        font_8x16()
            .glyph(code)
            .iter()
            .position(|&r| r == 0xFF)
            .unwrap() as u32
    };
    let y = 16 + row_of(0xC4);
    assert_eq!(frame.pixel(8, y), Some(GREY), "─ joins the next cell");
    let y = 16 + row_of(0xCD);
    assert_eq!(frame.pixel(9 + 8, y), Some(GREY), "═ joins the next cell");
    // '-' lights column 7? No: letters leave it empty, and never get a 9th dot.
    for y in 16..32 {
        assert_eq!(frame.pixel(18 + 8, y), Some(BLACK));
    }
    // Without line-graphics enable, the 9th dot is background.
    set_attr(&mut vga, 0x10, 0x08);
    outb(&mut vga, 0x3C0, 0x20);
    let frame = rendered(&mut vga);
    assert_eq!(frame.pixel(8, 16 + row_of(0xC4)), Some(BLACK));
}

#[test]
fn cursor_and_attribute_blink_follow_virtual_time() {
    let mut vga = text_mode();
    put_text(&mut vga, 0, 0, b"AB", 0x07);
    put_text(&mut vga, 0, 1, b"B", 0x8F); // blinking bright white on black
    set_crtc(&mut vga, 0x0A, 0x0E);
    set_crtc(&mut vga, 0x0B, 0x0F);
    set_crtc(&mut vga, 0x0E, 0x00);
    set_crtc(&mut vga, 0x0F, 0x00); // cursor on cell 0
    let frame_ns = vga.frame_timing().frame_ns();

    vga.advance(0);
    let frame = rendered(&mut vga);
    for x in 0..8 {
        assert_eq!(frame.pixel(x, 14), Some(GREY), "cursor line 14");
        assert_eq!(frame.pixel(x, 15), Some(GREY), "cursor line 15");
    }
    assert!(
        (0..16).any(|y| (9..17).any(|x| frame.pixel(x, y) == Some(WHITE))),
        "B visible"
    );

    vga.advance(8 * frame_ns); // cursor off, characters still in their "on" phase
    let frame = rendered(&mut vga);
    assert_eq!(frame.pixel(0, 15), Some(BLACK));
    assert!((0..16).any(|y| (9..17).any(|x| frame.pixel(x, y) == Some(WHITE))));

    vga.advance(16 * frame_ns); // blink "off" phase: the blinking B disappears
    let frame = rendered(&mut vga);
    assert!((0..16).all(|y| (9..18).all(|x| frame.pixel(x, y) == Some(BLACK))));
    assert_eq!(frame.pixel(0, 15), Some(GREY), "cursor back on");

    // With blinking disabled, bit 7 selects a bright background instead.
    set_attr(&mut vga, 0x10, 0x04);
    outb(&mut vga, 0x3C0, 0x20);
    let frame = rendered(&mut vga);
    assert_eq!(
        frame.pixel(9, 0),
        Some([0x55, 0x55, 0x55, 0xFF]),
        "background colour 8"
    );
}

#[test]
fn eight_by_eight_font_gives_fifty_rows() {
    let mut vga = text_mode();
    load_font(&mut vga, font_8x8());
    set_crtc(&mut vga, 0x09, 0x47);
    put_text(&mut vga, 49, 0, b"last", 0x07);
    assert_eq!(
        vga.display_mode(),
        DisplayMode::Text {
            columns: 80,
            rows: 50,
            char_width: 9,
            char_height: 8
        }
    );
    let frame = rendered(&mut vga);
    let glyph = font_8x8().glyph(b'l');
    for y in 0..8u32 {
        for x in 0..8u32 {
            let on = glyph[y as usize] >> (7 - x) & 1 != 0;
            assert_eq!(
                frame.pixel(x, 49 * 8 + y),
                Some(if on { GREY } else { BLACK })
            );
        }
    }
    assert!(
        vga.text_screen()
            .unwrap()
            .lines()
            .nth(49)
            .unwrap()
            .starts_with("last")
    );
}

#[test]
fn text_screen_returns_the_characters_as_unicode() {
    let mut vga = text_mode();
    put_text(&mut vga, 0, 0, b"Hello, world", 0x07);
    put_text(
        &mut vga,
        2,
        4,
        &[0xC9, 0xCD, 0xBB, b' ', 0x82, b't', 0x82],
        0x1E,
    );
    let screen = vga.text_screen().unwrap();
    let lines: Vec<&str> = screen.lines().collect();
    assert_eq!(lines.len(), 25);
    assert_eq!(lines[0], "Hello, world");
    assert_eq!(lines[1], "");
    assert_eq!(lines[2], "    ╔═╗ été");
    // Scrolling by moving the start address shifts what is on screen.
    set_crtc(&mut vga, 0x0C, 0x00);
    set_crtc(&mut vga, 0x0D, 80);
    assert_eq!(
        vga.text_screen().unwrap().lines().nth(1),
        Some("    ╔═╗ été")
    );
    // Graphics modes have no text screen.
    set_mode(&mut vga, &MODE_12);
    assert_eq!(vga.text_screen(), None);
}

#[test]
fn mode_13h_renders_chain4_pixels_doubled() {
    let mut vga = Vga::new();
    set_mode(&mut vga, &MODE_13);
    outb(&mut vga, 0x3C8, 0x2A);
    for c in [0x3F, 0x00, 0x20] {
        outb(&mut vga, 0x3C9, c);
    }
    vga.mem_write(2 * 320 + 3, 0x2A); // pixel (3, 2)
    vga.mem_write(199 * 320 + 319, 0x2A); // bottom-right pixel
    let frame = rendered(&mut vga);
    assert_eq!((frame.width, frame.height), (640, 400));
    assert_eq!(
        vga.display_mode(),
        DisplayMode::Packed256 {
            width: 320,
            height: 200
        }
    );
    let magenta = [0xFF, 0x00, 0x82, 0xFF];
    for (x, y) in [(6, 4), (7, 4), (6, 5), (7, 5), (638, 398), (639, 399)] {
        assert_eq!(frame.pixel(x, y), Some(magenta), "({x},{y})");
    }
    for (x, y) in [(5, 4), (8, 4), (6, 3), (6, 6)] {
        assert_eq!(frame.pixel(x, y), Some(BLACK), "({x},{y})");
    }
}

#[test]
fn mode_12h_renders_planar_pixels() {
    let mut vga = Vga::new();
    set_mode(&mut vga, &MODE_12);
    set_gc(&mut vga, 5, 0x02); // write mode 2: colour per pixel under the bit mask
    set_gc(&mut vga, 8, 0x80 >> 5);
    vga.mem_read(479 * 80 + 1);
    vga.mem_write(479 * 80 + 1, 0x0E); // pixel (13, 479) yellow
    let frame = rendered(&mut vga);
    assert_eq!((frame.width, frame.height), (640, 480));
    assert_eq!(
        vga.display_mode(),
        DisplayMode::Planar16 {
            width: 640,
            height: 480
        }
    );
    assert_eq!(frame.pixel(13, 479), Some([0xFF, 0xFF, 0x55, 0xFF]));
    assert_eq!(frame.pixel(12, 479), Some(BLACK));
    assert_eq!(frame.pixel(14, 479), Some(BLACK));
}

#[test]
fn palette_access_and_screen_off_blank_the_display() {
    let mut vga = Vga::new();
    set_mode(&mut vga, &MODE_13);
    for offset in 0..64000 {
        vga.mem_write(offset, 0x3F);
    }
    assert_eq!(rendered(&mut vga).pixel(100, 100), Some(WHITE));
    inb(&mut vga, 0x3DA);
    outb(&mut vga, 0x3C0, 0x00); // PAS clear: CPU owns the palette, screen blank
    assert_eq!(rendered(&mut vga).pixel(100, 100), Some(BLACK));
    outb(&mut vga, 0x3C0, 0x20);
    set_seq(&mut vga, 1, 0x21);
    assert_eq!(rendered(&mut vga).pixel(100, 100), Some(BLACK));
}

#[test]
fn line_compare_splits_the_screen() {
    let mut vga = text_mode();
    put_text(&mut vga, 0, 0, b"top", 0x07);
    put_text(&mut vga, 10, 0, b"X", 0x07);
    // Show from row 10, but split after display line 31: rows below come from address 0.
    set_crtc(&mut vga, 0x0C, (800u16 >> 8) as u8);
    set_crtc(&mut vga, 0x0D, (800u16 & 0xFF) as u8);
    set_crtc(&mut vga, 0x18, 31);
    set_crtc(&mut vga, 0x07, 0x0F); // line compare bit 8 clear
    set_crtc(&mut vga, 0x09, 0x0F); // bit 9 clear
    let frame = rendered(&mut vga);
    let x_glyph = font_8x16().glyph(b'X');
    let t_glyph = font_8x16().glyph(b't');
    for y in 0..16u32 {
        for x in 0..8u32 {
            let on = x_glyph[y as usize] >> (7 - x) & 1 != 0;
            assert_eq!(frame.pixel(x, y), Some(if on { GREY } else { BLACK }));
            let on = t_glyph[y as usize] >> (7 - x) & 1 != 0;
            assert_eq!(frame.pixel(x, 32 + y), Some(if on { GREY } else { BLACK }));
        }
    }
}

#[test]
fn forty_column_text_doubles_every_dot() {
    let mut vga = text_mode();
    set_crtc(&mut vga, 0x11, 0x0E); // unprotect CR00-CR07
    set_crtc(&mut vga, 0x01, 0x27);
    set_crtc(&mut vga, 0x13, 0x14);
    set_seq(&mut vga, 1, 0x08); // 9-dot cells, halved dot clock
    let cell = 0x18000 + (40 + 1) * 2; // row 1, column 1 of a 40-column screen
    vga.mem_write(cell, b'W');
    vga.mem_write(cell + 1, 0x0F);
    assert_eq!(
        vga.display_mode(),
        DisplayMode::Text {
            columns: 40,
            rows: 25,
            char_width: 9,
            char_height: 16
        }
    );
    assert_eq!(vga.text_screen().unwrap().lines().nth(1), Some(" W"));
    let frame = rendered(&mut vga);
    assert_eq!((frame.width, frame.height), (720, 400));
    let glyph = font_8x16().glyph(b'W');
    for y in 0..16u32 {
        for x in 0..9u32 {
            let on = x < 8 && glyph[y as usize] >> (7 - x) & 1 != 0;
            let want = Some(if on { WHITE } else { BLACK });
            assert_eq!(frame.pixel(18 + 2 * x, 16 + y), want);
            assert_eq!(frame.pixel(18 + 2 * x + 1, 16 + y), want);
        }
    }
}

#[test]
fn text_panning_and_preset_row_scan_shift_the_picture() {
    let mut vga = text_mode();
    put_text(&mut vga, 0, 0, b"#@W", 0x1F);
    let plain = rendered(&mut vga);
    set_attr(&mut vga, 0x13, 0x02); // 9-dot cells: shift by 3 dots
    outb(&mut vga, 0x3C0, 0x20);
    let panned = rendered(&mut vga);
    set_attr(&mut vga, 0x13, 0x08);
    outb(&mut vga, 0x3C0, 0x20);
    set_crtc(&mut vga, 0x08, 0x03); // start three scan lines into the first row
    let scrolled = rendered(&mut vga);
    for y in 0..16 {
        for x in 0..24 {
            assert_eq!(panned.pixel(x, y), plain.pixel(x + 3, y), "pan ({x},{y})");
            assert_eq!(
                scrolled.pixel(x, y),
                plain.pixel(x, y + 3),
                "scroll ({x},{y})"
            );
        }
    }
    assert_ne!(panned, plain);
}

#[test]
fn planar_panning_shifts_pixels_left() {
    let mut vga = Vga::new();
    set_mode(&mut vga, &MODE_12);
    for offset in 0..16 {
        vga.mem_write(offset, (offset as u8).wrapping_mul(37) | 0x11);
    }
    let plain = rendered(&mut vga);
    set_attr(&mut vga, 0x13, 0x05);
    outb(&mut vga, 0x3C0, 0x20);
    let panned = rendered(&mut vga);
    for x in 0..120 {
        assert_eq!(panned.pixel(x, 0), plain.pixel(x + 5, 0), "x={x}");
    }
}

#[test]
fn mode_0dh_doubles_pixels_in_both_directions() {
    let mode_0d = ModeTable {
        misc: 0x63,
        seq: [0x03, 0x09, 0x0F, 0x00, 0x06],
        crtc: [
            0x2D, 0x27, 0x28, 0x90, 0x2B, 0x80, 0xBF, 0x1F, 0x00, 0xC0, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x9C, 0x8E, 0x8F, 0x14, 0x00, 0x96, 0xB9, 0xE3, 0xFF,
        ],
        gc: [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x0F, 0xFF],
        attr: [
            0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15,
            0x16, 0x17, 0x01, 0x00, 0x0F, 0x00, 0x00,
        ],
    };
    let mut vga = Vga::new();
    set_mode(&mut vga, &mode_0d);
    set_gc(&mut vga, 5, 0x02);
    set_gc(&mut vga, 8, 0x80 >> 5);
    vga.mem_read(3 * 40);
    vga.mem_write(3 * 40, 0x0C); // pixel (5, 3), colour 12 -> palette 0x14 (brown)
    assert_eq!(
        vga.display_mode(),
        DisplayMode::Planar16 {
            width: 320,
            height: 200
        }
    );
    let frame = rendered(&mut vga);
    assert_eq!((frame.width, frame.height), (640, 400));
    let brown = [0xAA, 0x55, 0x00, 0xFF];
    for (x, y) in [(10, 6), (11, 6), (10, 7), (11, 7)] {
        assert_eq!(frame.pixel(x, y), Some(brown), "({x},{y})");
    }
    assert_eq!(frame.pixel(12, 6), Some(BLACK));
    assert_eq!(frame.pixel(10, 8), Some(BLACK));
}

#[test]
fn cga_mode_4_interleaves_odd_lines_at_8k() {
    let mode_04 = ModeTable {
        misc: 0x63,
        seq: [0x03, 0x09, 0x03, 0x00, 0x02],
        crtc: [
            0x2D, 0x27, 0x28, 0x90, 0x2B, 0x80, 0xBF, 0x1F, 0x00, 0xC1, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x9C, 0x8E, 0x8F, 0x14, 0x00, 0x96, 0xB9, 0xA2, 0xFF,
        ],
        gc: [0x00, 0x00, 0x00, 0x00, 0x00, 0x30, 0x0F, 0x00, 0xFF],
        attr: [
            0x00, 0x13, 0x15, 0x17, 0x02, 0x04, 0x06, 0x07, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15,
            0x16, 0x17, 0x01, 0x00, 0x03, 0x00, 0x00,
        ],
    };
    let mut vga = Vga::new();
    set_mode(&mut vga, &mode_04);
    // Line 1 (odd bank at B8000+0x2000), pixels 4-7: colours 3, 0, 1, 2.
    vga.mem_write(0x18000 + 0x2000 + 1, 0b1100_0110);
    assert_eq!(
        vga.display_mode(),
        DisplayMode::Cga4 {
            width: 320,
            height: 200
        }
    );
    let frame = rendered(&mut vga);
    assert_eq!((frame.width, frame.height), (640, 400));
    let color = |i: u8| vga.dac.rgba(vga.attr.dac_index(i));
    for (px, value) in [(4u32, 3u8), (5, 0), (6, 1), (7, 2)] {
        for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
            assert_eq!(
                frame.pixel(px * 2 + dx, 2 + dy),
                Some(color(value)),
                "pixel {px}"
            );
        }
    }
    assert_eq!(frame.pixel(8, 0), Some(BLACK), "line 0 is the even bank");
    assert_ne!(color(3), BLACK);
}
