//! CPU access to the legacy window 0xA0000-0xBFFFF: chain-4, odd/even and planar
//! addressing, the latches and read modes. In VBE modes the owner of the framebuffer maps
//! the banked window (see [`Vga::vbe_bank_window`]); what reaches us then is unbacked.

use super::{PLANE_SIZE, Vga};

impl Vga {
    /// Reads a byte at `offset` from 0xA0000 (0..0x20000). Unmapped offsets read 0xFF.
    pub fn mem_read(&mut self, offset: u32) -> u8 {
        if self.vbe.enabled() {
            return 0xFF;
        }
        if self.misc & 0x02 == 0 {
            return 0xFF; // RAM access disabled in the misc output register
        }
        match self.gc.map_window(offset) {
            Some(address) => self.planar_read(address),
            None => 0xFF,
        }
    }

    /// Writes a byte at `offset` from 0xA0000 (0..0x20000); unmapped offsets are ignored.
    pub fn mem_write(&mut self, offset: u32, value: u8) {
        self.writes = self.writes.wrapping_add(1);
        if self.vbe.enabled() {
            return;
        }
        if self.misc & 0x02 == 0 {
            return;
        }
        if let Some(address) = self.gc.map_window(offset) {
            self.planar_write(address, value);
        }
    }

    fn plane_byte(&self, plane: usize, offset: usize) -> u8 {
        self.vram
            .get(plane * PLANE_SIZE + offset)
            .copied()
            .unwrap_or(0)
    }

    fn load_latches(&mut self, offset: usize) {
        for plane in 0..4 {
            self.latch[plane] = self.plane_byte(plane, offset);
        }
    }

    fn planar_read(&mut self, address: u32) -> u8 {
        let address = address as usize;
        let (plane, offset) = if self.seq.chain4() {
            // Chain-4 uses every fourth byte of each plane: the low address bits pick
            // the plane and stay zero in the plane offset.
            (address & 3, address & 0xFFFC)
        } else if self.gc.odd_even_reads() {
            ((self.gc.read_map() & 2) | (address & 1), address & 0xFFFE)
        } else {
            (self.gc.read_map(), address & 0xFFFF)
        };
        self.load_latches(offset);
        if self.gc.read_mode_1() {
            self.gc.color_compare(&self.latch)
        } else {
            self.latch[plane]
        }
    }

    fn planar_write(&mut self, address: u32, value: u8) {
        let address = address as usize;
        let map_mask = self.seq.map_mask();
        let (planes, offset) = if self.seq.chain4() {
            (map_mask & (1 << (address & 3)), address & 0xFFFC)
        } else if self.seq.odd_even_writes() {
            let parity = if address & 1 == 0 { 0b0101 } else { 0b1010 };
            (map_mask & parity, address & 0xFFFE)
        } else {
            (map_mask, address & 0xFFFF)
        };
        let data = self.gc.write_data(value, &self.latch);
        for (plane, &byte) in data.iter().enumerate() {
            if planes >> plane & 1 != 0
                && let Some(slot) = self.vram.get_mut(plane * PLANE_SIZE + offset)
            {
                *slot = byte;
            }
        }
    }
}
