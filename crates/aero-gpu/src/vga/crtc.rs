//! CRT controller (ports 0x3D4/0x3D5, or 0x3B4/0x3B5 in monochrome addressing):
//! display geometry, start address, cursor, line compare and memory addressing.

use super::indexed::IndexedRegs;

pub(crate) const CRTC_REGS: usize = 0x19;

const CR_OVERFLOW: u8 = 0x07;
const CR_MAX_SCAN: u8 = 0x09;
const CR_VRETRACE_END: u8 = 0x11;
const CR_UNDERLINE: u8 = 0x14;
const CR_MODE: u8 = 0x17;

/// Register values a VGA BIOS leaves for mode 3 (80x25 colour text, 720x400).
const MODE3: [u8; CRTC_REGS] = [
    0x5F, 0x4F, 0x50, 0x82, 0x55, 0x81, 0xBF, 0x1F, 0x00, 0x4F, 0x0D, 0x0E, 0x00, 0x00, 0x00, 0x00,
    0x9C, 0x8E, 0x8F, 0x28, 0x1F, 0x96, 0xB9, 0xA3, 0xFF,
];

#[derive(Clone, Debug)]
pub(crate) struct Crtc {
    pub(crate) regs: IndexedRegs<CRTC_REGS>,
}

impl Crtc {
    pub(crate) fn new() -> Self {
        Crtc {
            regs: IndexedRegs::new(0x3F, [0xFF; CRTC_REGS], MODE3),
        }
    }

    /// A data write honouring the protect bit (CR11 bit 7): CR00-CR07 become read-only,
    /// except the line-compare bit 8 in CR07.
    pub(crate) fn write_data(&mut self, value: u8) {
        let index = self.regs.index();
        let protected = self.regs.get(CR_VRETRACE_END) & 0x80 != 0;
        if protected && index <= CR_OVERFLOW {
            if index == CR_OVERFLOW {
                let kept = self.regs.get(CR_OVERFLOW) & !0x10;
                self.regs.set(CR_OVERFLOW, kept | (value & 0x10));
            }
            return;
        }
        self.regs.write(value);
    }

    fn r(&self, index: u8) -> u32 {
        u32::from(self.regs.get(index))
    }

    fn overflow_bit(&self, bit: u32, to: u32) -> u32 {
        (self.r(CR_OVERFLOW) >> bit & 1) << to
    }

    pub(crate) fn horizontal_total_chars(&self) -> u32 {
        self.r(0x00) + 5
    }

    pub(crate) fn display_chars(&self) -> u32 {
        self.r(0x01) + 1
    }

    pub(crate) fn vertical_total(&self) -> u32 {
        (self.r(0x06) | self.overflow_bit(0, 8) | self.overflow_bit(5, 9)) + 2
    }

    pub(crate) fn display_lines(&self) -> u32 {
        (self.r(0x12) | self.overflow_bit(1, 8) | self.overflow_bit(6, 9)) + 1
    }

    pub(crate) fn vertical_retrace_start(&self) -> u32 {
        self.r(0x10) | self.overflow_bit(2, 8) | self.overflow_bit(7, 9)
    }

    /// Retrace ends when the low 4 bits of the line counter match this.
    pub(crate) fn vertical_retrace_end_low(&self) -> u32 {
        self.r(CR_VRETRACE_END) & 0x0F
    }

    pub(crate) fn line_compare(&self) -> u32 {
        self.r(0x18) | self.overflow_bit(4, 8) | (self.r(CR_MAX_SCAN) >> 6 & 1) << 9
    }

    pub(crate) fn max_scan_line(&self) -> u32 {
        self.r(CR_MAX_SCAN) & 0x1F
    }

    pub(crate) fn double_scan(&self) -> bool {
        self.r(CR_MAX_SCAN) & 0x80 != 0
    }

    /// The address the display starts at, including the CR08 byte-panning offset.
    pub(crate) fn start_address(&self) -> u32 {
        (self.r(0x0C) << 8 | self.r(0x0D)) + (self.r(0x08) >> 5 & 3)
    }

    /// Scan line of the first character row (CR08 preset row scan), for smooth
    /// vertical scrolling.
    pub(crate) fn preset_row_scan(&self) -> u32 {
        self.r(0x08) & 0x1F
    }

    pub(crate) fn cursor_location(&self) -> u32 {
        self.r(0x0E) << 8 | self.r(0x0F)
    }

    /// Cursor scan lines (start, end), or `None` when the cursor is switched off.
    pub(crate) fn cursor_lines(&self) -> Option<(u32, u32)> {
        let start = self.r(0x0A);
        if start & 0x20 != 0 {
            return None;
        }
        Some((start & 0x1F, self.r(0x0B) & 0x1F))
    }

    /// Distance between display rows, in address-counter units.
    pub(crate) fn row_pitch(&self) -> u32 {
        self.r(0x13) * 2
    }

    pub(crate) fn underline_line(&self) -> u32 {
        self.r(CR_UNDERLINE) & 0x1F
    }

    /// How far the address counter is shifted to form a memory offset: 2 in doubleword
    /// mode (mode 13h), 1 in word mode (text modes), 0 in byte mode.
    pub(crate) fn address_shift(&self) -> u32 {
        if self.r(CR_UNDERLINE) & 0x40 != 0 {
            2
        } else if self.r(CR_MODE) & 0x40 == 0 {
            1
        } else {
            0
        }
    }

    /// Address bit 13 comes from the row scan counter (CGA-style odd/even line banks).
    pub(crate) fn cga_interleave(&self) -> bool {
        self.r(CR_MODE) & 0x01 == 0
    }

    /// The plane offset the display fetches for address-counter value `ma` on character
    /// row scan line `scan`, including the CGA/Hercules interleave substitutions.
    pub(crate) fn memory_offset(&self, ma: u32, scan: u32) -> usize {
        let mut offset = ma << self.address_shift();
        let mode = self.r(CR_MODE);
        if mode & 0x01 == 0 {
            offset = (offset & !0x2000) | (scan & 1) << 13;
        }
        if mode & 0x02 == 0 {
            offset = (offset & !0x4000) | (scan >> 1 & 1) << 14;
        }
        (offset & 0xFFFF) as usize
    }
}
