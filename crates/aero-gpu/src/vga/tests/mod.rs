//! Tests drive the adapter only through its ports and memory window, the way a BIOS or
//! driver would. The mode tables are the standard VGA register values for each mode.

mod memory;
mod registers;
mod render;
mod vbe;

use super::Vga;
use crate::font::Font;

pub(super) fn outb(vga: &mut Vga, port: u16, value: u8) {
    vga.io_write(port, 1, u32::from(value));
}

pub(super) fn inb(vga: &mut Vga, port: u16) -> u8 {
    vga.io_read(port, 1) as u8
}

pub(super) fn set_seq(vga: &mut Vga, index: u8, value: u8) {
    outb(vga, 0x3C4, index);
    outb(vga, 0x3C5, value);
}

pub(super) fn set_gc(vga: &mut Vga, index: u8, value: u8) {
    outb(vga, 0x3CE, index);
    outb(vga, 0x3CF, value);
}

pub(super) fn set_crtc(vga: &mut Vga, index: u8, value: u8) {
    outb(vga, 0x3D4, index);
    outb(vga, 0x3D5, value);
}

pub(super) fn set_attr(vga: &mut Vga, index: u8, value: u8) {
    inb(vga, 0x3DA);
    outb(vga, 0x3C0, index);
    outb(vga, 0x3C0, value);
}

pub(super) struct ModeTable {
    misc: u8,
    seq: [u8; 5],
    crtc: [u8; 25],
    gc: [u8; 9],
    attr: [u8; 21],
}

pub(super) const MODE_03: ModeTable = ModeTable {
    misc: 0x67,
    seq: [0x03, 0x00, 0x03, 0x00, 0x02],
    crtc: [
        0x5F, 0x4F, 0x50, 0x82, 0x55, 0x81, 0xBF, 0x1F, 0x00, 0x4F, 0x0D, 0x0E, 0x00, 0x00, 0x00,
        0x00, 0x9C, 0x8E, 0x8F, 0x28, 0x1F, 0x96, 0xB9, 0xA3, 0xFF,
    ],
    gc: [0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x0E, 0x00, 0xFF],
    attr: [
        0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x14, 0x07, 0x38, 0x39, 0x3A, 0x3B, 0x3C, 0x3D, 0x3E,
        0x3F, 0x0C, 0x00, 0x0F, 0x08, 0x00,
    ],
};

pub(super) const MODE_12: ModeTable = ModeTable {
    misc: 0xE3,
    seq: [0x03, 0x01, 0x0F, 0x00, 0x06],
    crtc: [
        0x5F, 0x4F, 0x50, 0x82, 0x54, 0x80, 0x0B, 0x3E, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0xEA, 0x8C, 0xDF, 0x28, 0x00, 0xE7, 0x04, 0xE3, 0xFF,
    ],
    gc: [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x0F, 0xFF],
    attr: [
        0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x14, 0x07, 0x38, 0x39, 0x3A, 0x3B, 0x3C, 0x3D, 0x3E,
        0x3F, 0x01, 0x00, 0x0F, 0x00, 0x00,
    ],
};

pub(super) const MODE_13: ModeTable = ModeTable {
    misc: 0x63,
    seq: [0x03, 0x01, 0x0F, 0x00, 0x0E],
    crtc: [
        0x5F, 0x4F, 0x50, 0x82, 0x54, 0x80, 0xBF, 0x1F, 0x00, 0x41, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x9C, 0x8E, 0x8F, 0x28, 0x40, 0x96, 0xB9, 0xA3, 0xFF,
    ],
    gc: [0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x05, 0x0F, 0xFF],
    attr: [
        0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E,
        0x0F, 0x41, 0x00, 0x0F, 0x00, 0x00,
    ],
};

/// Programs a mode like a VGA BIOS: misc, sequencer, unlocked CRTC, GC, attributes.
pub(super) fn set_mode(vga: &mut Vga, mode: &ModeTable) {
    outb(vga, 0x3C2, mode.misc);
    for (i, &v) in mode.seq.iter().enumerate() {
        set_seq(vga, i as u8, v);
    }
    set_crtc(vga, 0x11, mode.crtc[0x11] & 0x7F);
    for (i, &v) in mode.crtc.iter().enumerate() {
        set_crtc(vga, i as u8, v);
    }
    for (i, &v) in mode.gc.iter().enumerate() {
        set_gc(vga, i as u8, v);
    }
    for (i, &v) in mode.attr.iter().enumerate() {
        set_attr(vga, i as u8, v);
    }
    outb(vga, 0x3C0, 0x20); // palette address source on: display enabled
}

/// Loads `font` into font map 0 of plane 2 the way a BIOS does: sequential planar
/// access to plane 2 at 0xA0000, 32 bytes per glyph, then back to text addressing.
pub(super) fn load_font(vga: &mut Vga, font: &Font) {
    set_seq(vga, 2, 0x04);
    set_seq(vga, 4, 0x06);
    set_gc(vga, 4, 0x02);
    set_gc(vga, 5, 0x00);
    set_gc(vga, 6, 0x04);
    for code in 0..=255u8 {
        for (row, &bits) in font.glyph(code).iter().enumerate() {
            vga.mem_write(u32::from(code) * 32 + row as u32, bits);
        }
    }
    set_seq(vga, 2, 0x03);
    set_seq(vga, 4, 0x02);
    set_gc(vga, 4, 0x00);
    set_gc(vga, 5, 0x10);
    set_gc(vga, 6, 0x0E);
}

/// Writes `text` with attribute `attr` at (row, col) of an 80-column text screen.
pub(super) fn put_text(vga: &mut Vga, row: u32, col: u32, text: &[u8], attr: u8) {
    for (i, &ch) in text.iter().enumerate() {
        let cell = 0x18000 + (row * 80 + col + i as u32) * 2;
        vga.mem_write(cell, ch);
        vga.mem_write(cell + 1, attr);
    }
}
