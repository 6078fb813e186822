//! The RAMDAC (ports 0x3C6-0x3C9): 256 colour entries written and read as three
//! components through auto-incrementing indices, plus the pixel mask.

#[derive(Clone, Debug)]
pub(crate) struct Dac {
    palette: [[u8; 3]; 256],
    /// Components written so far for the entry at `write_index`: the RAMDAC latches
    /// red and green and updates the entry only when blue arrives, so a partial
    /// write never shows (or reads back) half a colour.
    pending: [u8; 3],
    write_index: u8,
    read_index: u8,
    component: usize,
    /// The last index write selected reading (0x3C7) rather than writing (0x3C8).
    reading: bool,
    pel_mask: u8,
    /// Components are 8 bits wide (VBE DAC switch); else 6.
    pub(crate) eight_bit: bool,
}

impl Dac {
    pub(crate) fn new() -> Self {
        Dac {
            palette: default_palette(),
            pending: [0; 3],
            write_index: 0,
            read_index: 0,
            component: 0,
            reading: false,
            pel_mask: 0xFF,
            eight_bit: false,
        }
    }

    pub(crate) fn set_write_index(&mut self, value: u8) {
        self.write_index = value;
        self.component = 0;
        self.reading = false;
    }

    pub(crate) fn set_read_index(&mut self, value: u8) {
        self.read_index = value;
        self.component = 0;
        self.reading = true;
    }

    pub(crate) fn write_index(&self) -> u8 {
        self.write_index
    }

    /// DAC state register: 3 after a read-index write, 0 after a write-index write.
    pub(crate) fn state(&self) -> u8 {
        if self.reading { 0x03 } else { 0x00 }
    }

    pub(crate) fn pel_mask(&self) -> u8 {
        self.pel_mask
    }

    pub(crate) fn set_pel_mask(&mut self, value: u8) {
        self.pel_mask = value;
    }

    fn component_mask(&self) -> u8 {
        if self.eight_bit { 0xFF } else { 0x3F }
    }

    pub(crate) fn write_data(&mut self, value: u8) {
        let mask = self.component_mask();
        self.pending[self.component] = value & mask;
        self.component += 1;
        if self.component == 3 {
            self.palette[usize::from(self.write_index)] = self.pending;
            self.component = 0;
            self.write_index = self.write_index.wrapping_add(1);
        }
    }

    pub(crate) fn read_data(&mut self) -> u8 {
        let value = self.palette[usize::from(self.read_index)][self.component];
        self.component += 1;
        if self.component == 3 {
            self.component = 0;
            self.read_index = self.read_index.wrapping_add(1);
        }
        value & self.component_mask()
    }

    /// The RGBA colour of DAC entry `index` after the pixel mask.
    pub(crate) fn rgba(&self, index: u8) -> [u8; 4] {
        let [r, g, b] = self.palette[usize::from(index & self.pel_mask)];
        if self.eight_bit {
            [r, g, b, 0xFF]
        } else {
            [expand6(r), expand6(g), expand6(b), 0xFF]
        }
    }

    /// All 256 entries as RGBA, for a render pass.
    pub(crate) fn rgba_table(&self) -> [[u8; 4]; 256] {
        std::array::from_fn(|i| self.rgba(i as u8))
    }
}

/// 6-bit DAC value to 8 bits, full scale to full scale.
fn expand6(v: u8) -> u8 {
    let v = v & 0x3F;
    (v << 2) | (v >> 4)
}

/// The 16 CGA/EGA text colours in the first entries (what a BIOS programs for mode 3),
/// so a display used before any software touches the DAC still shows text.
fn default_palette() -> [[u8; 3]; 256] {
    let mut palette = [[0u8; 3]; 256];
    for (i, entry) in palette.iter_mut().enumerate().take(64) {
        // Entry i is the EGA colour for 6-bit attribute value i: bits 2/1/0 = R/G/B at
        // 2/3 intensity, bits 5/4/3 = R/G/B at 1/3 intensity.
        let level = |hi: usize, lo: usize| -> u8 {
            (((i >> hi) & 1) * 0x2A + ((i >> lo) & 1) * 0x15) as u8
        };
        *entry = [level(2, 5), level(1, 4), level(0, 3)];
    }
    palette
}
