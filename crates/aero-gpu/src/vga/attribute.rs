//! Attribute controller (port 0x3C0 index/data with a flip-flop, 0x3C1 read):
//! 16-entry palette, mode control, overscan, colour plane enable, panning.

pub(crate) const AR_REGS: usize = 0x15;
const AR_MODE: usize = 0x10;
const AR_PLANE_ENABLE: usize = 0x12;
const AR_PANNING: usize = 0x13;
const AR_COLOR_SELECT: usize = 0x14;

const MASKS: [u8; AR_REGS] = [
    0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F,
    0xEF, 0xFF, 0x3F, 0x0F, 0x0F,
];
/// Mode 3: the EGA-compatible palette (brown at 6) and blinking enabled.
const MODE3: [u8; AR_REGS] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x14, 0x07, 0x38, 0x39, 0x3A, 0x3B, 0x3C, 0x3D, 0x3E, 0x3F,
    0x0C, 0x00, 0x0F, 0x08, 0x00,
];

#[derive(Clone, Debug)]
pub(crate) struct AttributeController {
    index: u8,
    /// Palette address source: while clear the display shows only the overscan colour.
    palette_source: bool,
    /// The next write to 0x3C0 is data (else an index).
    expect_data: bool,
    regs: [u8; AR_REGS],
}

impl AttributeController {
    pub(crate) fn new() -> Self {
        AttributeController {
            index: 0,
            palette_source: true,
            expect_data: false,
            regs: MODE3,
        }
    }

    pub(crate) fn reset_flip_flop(&mut self) {
        self.expect_data = false;
    }

    pub(crate) fn write(&mut self, value: u8) {
        if self.expect_data {
            let i = usize::from(self.index);
            if let (Some(reg), Some(mask)) = (self.regs.get_mut(i), MASKS.get(i)) {
                *reg = value & mask;
            }
        } else {
            self.index = value & 0x1F;
            self.palette_source = value & 0x20 != 0;
        }
        self.expect_data = !self.expect_data;
    }

    pub(crate) fn read_index(&self) -> u8 {
        self.index | u8::from(self.palette_source) << 5
    }

    pub(crate) fn read_data(&self) -> u8 {
        self.regs.get(usize::from(self.index)).copied().unwrap_or(0)
    }

    pub(crate) fn display_enabled(&self) -> bool {
        self.palette_source
    }

    pub(crate) fn graphics_mode(&self) -> bool {
        self.regs[AR_MODE] & 0x01 != 0
    }

    /// Line graphics: in 9-dot modes characters 0xC0-0xDF repeat column 8 into column 9.
    pub(crate) fn line_graphics(&self) -> bool {
        self.regs[AR_MODE] & 0x04 != 0
    }

    /// Attribute bit 7 blinks the character (else it selects bright backgrounds).
    pub(crate) fn blink_enabled(&self) -> bool {
        self.regs[AR_MODE] & 0x08 != 0
    }

    /// 8-bit colour: two dot clocks form one 256-colour pixel (mode 13h).
    pub(crate) fn eight_bit_color(&self) -> bool {
        self.regs[AR_MODE] & 0x40 != 0
    }

    /// Pixel panning mode: lines below the line-compare split keep panning (else
    /// they are shown unpanned).
    pub(crate) fn pan_below_split(&self) -> bool {
        self.regs[AR_MODE] & 0x20 == 0
    }

    pub(crate) fn plane_enable(&self) -> u8 {
        self.regs[AR_PLANE_ENABLE] & 0x0F
    }

    pub(crate) fn panning(&self) -> u32 {
        u32::from(self.regs[AR_PANNING] & 0x0F)
    }

    /// The DAC index for a 4-bit pixel value, through the palette and colour select.
    pub(crate) fn dac_index(&self, pixel: u8) -> u8 {
        let entry = self.regs[usize::from(pixel & self.plane_enable() & 0x0F)];
        let select = self.regs[AR_COLOR_SELECT];
        let low = if self.regs[AR_MODE] & 0x80 != 0 {
            (entry & 0x0F) | (select & 0x03) << 4
        } else {
            entry & 0x3F
        };
        low | (select & 0x0C) << 4
    }
}
