//! Graphics controller (ports 0x3CE/0x3CF): the CPU data path into the planes —
//! set/reset, rotate, logical function, bit mask, write modes 0-3, read modes 0-1 —
//! and which part of A0000-BFFFF the VGA answers.

use super::indexed::IndexedRegs;

const MASKS: [u8; 9] = [0x0F, 0x0F, 0x0F, 0x1F, 0x03, 0x7B, 0x0F, 0x0F, 0xFF];
const MODE3: [u8; 9] = [0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x0E, 0x0F, 0xFF];

pub(crate) const GR_SET_RESET: u8 = 0;
pub(crate) const GR_ENABLE_SET_RESET: u8 = 1;
pub(crate) const GR_COLOR_COMPARE: u8 = 2;
pub(crate) const GR_DATA_ROTATE: u8 = 3;
pub(crate) const GR_READ_MAP: u8 = 4;
pub(crate) const GR_MODE: u8 = 5;
pub(crate) const GR_MISC: u8 = 6;
pub(crate) const GR_COLOR_DONT_CARE: u8 = 7;
pub(crate) const GR_BIT_MASK: u8 = 8;

#[derive(Clone, Debug)]
pub(crate) struct GraphicsController {
    pub(crate) regs: IndexedRegs<9>,
}

impl GraphicsController {
    pub(crate) fn new() -> Self {
        GraphicsController {
            regs: IndexedRegs::new(0x0F, MASKS, MODE3),
        }
    }

    fn mode(&self) -> u8 {
        self.regs.get(GR_MODE)
    }

    pub(crate) fn read_map(&self) -> usize {
        usize::from(self.regs.get(GR_READ_MAP) & 3)
    }

    pub(crate) fn read_mode_1(&self) -> bool {
        self.mode() & 0x08 != 0
    }

    /// CPU reads use odd/even addressing.
    pub(crate) fn odd_even_reads(&self) -> bool {
        self.mode() & 0x10 != 0
    }

    /// CGA-style 2-bit pixels (modes 4/5).
    pub(crate) fn shift_interleave(&self) -> bool {
        self.mode() & 0x20 != 0
    }

    /// 256-colour shift mode (mode 13h and unchained variants).
    pub(crate) fn shift_256(&self) -> bool {
        self.mode() & 0x40 != 0
    }

    /// Maps an offset in the 128 KiB legacy window (0 = 0xA0000) to the VGA's memory
    /// address, or `None` if the selected memory map does not cover it.
    pub(crate) fn map_window(&self, offset: u32) -> Option<u32> {
        let (start, len) = match (self.regs.get(GR_MISC) >> 2) & 3 {
            0 => (0x0_0000, 0x2_0000),
            1 => (0x0_0000, 0x1_0000),
            2 => (0x1_0000, 0x8000),
            _ => (0x1_8000, 0x8000),
        };
        offset.checked_sub(start).filter(|&o| o < len)
    }

    /// The four plane bytes a CPU write of `value` produces, given the latches.
    pub(crate) fn write_data(&self, value: u8, latch: &[u8; 4]) -> [u8; 4] {
        let rotate = self.regs.get(GR_DATA_ROTATE);
        let rotated = value.rotate_right(u32::from(rotate & 7));
        let function = (rotate >> 3) & 3;
        let set_reset = self.regs.get(GR_SET_RESET);
        let enable_sr = self.regs.get(GR_ENABLE_SET_RESET);
        let bit_mask = self.regs.get(GR_BIT_MASK);
        let expand = |bits: u8, plane: usize| if bits >> plane & 1 != 0 { 0xFF } else { 0x00 };

        let mut out = [0u8; 4];
        for (plane, slot) in out.iter_mut().enumerate() {
            let old = latch[plane];
            let (data, mask) = match self.mode() & 3 {
                0 => {
                    let data = if enable_sr >> plane & 1 != 0 {
                        expand(set_reset, plane)
                    } else {
                        rotated
                    };
                    (data, bit_mask)
                }
                1 => {
                    *slot = old;
                    continue;
                }
                2 => (expand(value, plane), bit_mask),
                _ => (expand(set_reset, plane), rotated & bit_mask),
            };
            let combined = match function {
                0 => data,
                1 => data & old,
                2 => data | old,
                _ => data ^ old,
            };
            *slot = (combined & mask) | (old & !mask);
        }
        out
    }

    /// Read mode 1: a 1 for every pixel whose colour (in the planes not marked
    /// "don't care") equals the colour compare register.
    pub(crate) fn color_compare(&self, latch: &[u8; 4]) -> u8 {
        let compare = self.regs.get(GR_COLOR_COMPARE);
        let care = self.regs.get(GR_COLOR_DONT_CARE);
        let mut result = 0xFF;
        for (plane, &byte) in latch.iter().enumerate() {
            if care >> plane & 1 != 0 {
                let want = if compare >> plane & 1 != 0 {
                    0xFF
                } else {
                    0x00
                };
                result &= !(byte ^ want);
            }
        }
        result
    }
}
