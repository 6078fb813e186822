//! Sequencer (ports 0x3C4/0x3C5): clocking, plane write mask, font maps, memory mode.

use super::indexed::IndexedRegs;

const MASKS: [u8; 5] = [0x03, 0x3D, 0x0F, 0x3F, 0x0E];
/// Register values a VGA BIOS leaves for mode 3 (80x25 colour text).
const MODE3: [u8; 5] = [0x03, 0x00, 0x03, 0x00, 0x02];

pub(crate) const SR_CLOCKING: u8 = 1;
pub(crate) const SR_MAP_MASK: u8 = 2;
pub(crate) const SR_CHAR_MAP: u8 = 3;
pub(crate) const SR_MEMORY_MODE: u8 = 4;

#[derive(Clone, Debug)]
pub(crate) struct Sequencer {
    pub(crate) regs: IndexedRegs<5>,
}

impl Sequencer {
    pub(crate) fn new() -> Self {
        Sequencer {
            regs: IndexedRegs::new(0x07, MASKS, MODE3),
        }
    }

    /// Character cells are 8 dots wide (else 9).
    pub(crate) fn eight_dot_chars(&self) -> bool {
        self.regs.get(SR_CLOCKING) & 0x01 != 0
    }

    /// The dot clock is halved: every pixel is shown twice (40-column / 320-pixel modes).
    pub(crate) fn half_dot_clock(&self) -> bool {
        self.regs.get(SR_CLOCKING) & 0x08 != 0
    }

    pub(crate) fn screen_off(&self) -> bool {
        self.regs.get(SR_CLOCKING) & 0x20 != 0
    }

    pub(crate) fn map_mask(&self) -> u8 {
        self.regs.get(SR_MAP_MASK) & 0x0F
    }

    /// Plane-2 byte offsets of the fonts selected by attribute bit 3 = 1 (map A) and
    /// bit 3 = 0 (map B).
    pub(crate) fn font_bases(&self) -> (usize, usize) {
        let sel = self.regs.get(SR_CHAR_MAP);
        let map_a = ((sel >> 2) & 0x03) | ((sel >> 3) & 0x04);
        let map_b = (sel & 0x03) | ((sel >> 2) & 0x04);
        (font_map_base(map_a), font_map_base(map_b))
    }

    pub(crate) fn chain4(&self) -> bool {
        self.regs.get(SR_MEMORY_MODE) & 0x08 != 0
    }

    /// CPU writes use odd/even addressing (memory mode bit 2 clear).
    pub(crate) fn odd_even_writes(&self) -> bool {
        self.regs.get(SR_MEMORY_MODE) & 0x04 == 0
    }
}

/// Font maps 0-3 sit at 16 KiB steps, maps 4-7 between them at 8 KiB offsets.
fn font_map_base(map: u8) -> usize {
    (usize::from(map & 3) << 14) | (usize::from(map >> 2) << 13)
}
