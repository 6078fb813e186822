//! Bochs VBE "DISPI" interface (ports 0x1CE index / 0x1CF data): linear framebuffer
//! modes at 8/15/16/24/32 bpp plus the 64 KiB banked window at 0xA0000.
//!
//! The framebuffer bytes are not stored here: the machine keeps them next to guest RAM so
//! the CPU reaches BAR2 and the banked window as plain memory pages. This model only says
//! which bytes are shown, which 64 KiB the window maps, and when a mode set clears them.

/// Size of the linear framebuffer (PCI BAR0): room for 1920x1080x32 twice.
pub const LFB_SIZE: usize = 16 << 20;
pub const VBE_MAX_XRES: u16 = 1920;
pub const VBE_MAX_YRES: u16 = 1200;
pub const VBE_MAX_BPP: u16 = 32;
/// Size of the banked window at 0xA0000 in VBE modes.
pub const BANK_SIZE: usize = 0x1_0000;

pub const DISPI_INDEX_ID: u16 = 0x0;
pub const DISPI_INDEX_XRES: u16 = 0x1;
pub const DISPI_INDEX_YRES: u16 = 0x2;
pub const DISPI_INDEX_BPP: u16 = 0x3;
pub const DISPI_INDEX_ENABLE: u16 = 0x4;
pub const DISPI_INDEX_BANK: u16 = 0x5;
pub const DISPI_INDEX_VIRT_WIDTH: u16 = 0x6;
pub const DISPI_INDEX_VIRT_HEIGHT: u16 = 0x7;
pub const DISPI_INDEX_X_OFFSET: u16 = 0x8;
pub const DISPI_INDEX_Y_OFFSET: u16 = 0x9;
pub const DISPI_INDEX_VIDEO_MEMORY_64K: u16 = 0xA;

pub const DISPI_ID0: u16 = 0xB0C0;
pub const DISPI_ID5: u16 = 0xB0C5;

pub const DISPI_ENABLED: u16 = 0x01;
pub const DISPI_GETCAPS: u16 = 0x02;
pub const DISPI_8BIT_DAC: u16 = 0x20;
pub const DISPI_LFB_ENABLED: u16 = 0x40;
pub const DISPI_NOCLEARMEM: u16 = 0x80;

/// The geometry of an enabled VBE mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VbeMode {
    pub width: u32,
    pub height: u32,
    pub bpp: u32,
    /// Bytes from one framebuffer line to the next.
    pub pitch: usize,
    /// Byte offset of the top-left displayed pixel.
    pub start: usize,
}

#[derive(Clone)]
pub(crate) struct Vbe {
    index: u16,
    id: u16,
    xres: u16,
    yres: u16,
    bpp: u16,
    enable: u16,
    bank: u16,
    virt_width: u16,
    virt_height: u16,
    x_offset: u16,
    y_offset: u16,
    /// Framebuffer bytes a mode set asked to clear, until the owner of the memory does it.
    pending_clear: Option<usize>,
}

impl std::fmt::Debug for Vbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vbe")
            .field("xres", &self.xres)
            .field("yres", &self.yres)
            .field("bpp", &self.bpp)
            .field("enable", &self.enable)
            .finish_non_exhaustive()
    }
}

/// Bytes per pixel for a supported depth.
fn bytes_per_pixel(bpp: u16) -> Option<usize> {
    match bpp {
        8 => Some(1),
        15 | 16 => Some(2),
        24 => Some(3),
        32 => Some(4),
        _ => None,
    }
}

impl Vbe {
    pub(crate) fn new() -> Self {
        Vbe {
            index: 0,
            id: DISPI_ID5,
            xres: 640,
            yres: 480,
            bpp: 8,
            enable: 0,
            bank: 0,
            virt_width: 640,
            virt_height: 480,
            x_offset: 0,
            y_offset: 0,
            pending_clear: None,
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.enable & DISPI_ENABLED != 0
    }

    pub(crate) fn dac_8bit(&self) -> bool {
        self.enable & DISPI_8BIT_DAC != 0
    }

    pub(crate) fn index(&self) -> u16 {
        self.index
    }

    pub(crate) fn set_index(&mut self, value: u16) {
        self.index = value;
    }

    fn pitch_for(&self, width: u16) -> usize {
        usize::from(width) * bytes_per_pixel(self.bpp).unwrap_or(1)
    }

    /// The displayed mode while VBE is enabled.
    pub(crate) fn active_mode(&self) -> Option<VbeMode> {
        if !self.enabled() {
            return None;
        }
        let bytes = bytes_per_pixel(self.bpp)?;
        let pitch = self.pitch_for(self.virt_width);
        let start = usize::from(self.y_offset)
            .saturating_mul(pitch)
            .saturating_add(usize::from(self.x_offset) * bytes);
        Some(VbeMode {
            width: u32::from(self.xres),
            height: u32::from(self.yres),
            bpp: u32::from(self.bpp),
            pitch,
            start,
        })
    }

    pub(crate) fn read_data(&self) -> u16 {
        let caps = self.enable & DISPI_GETCAPS != 0;
        match self.index {
            DISPI_INDEX_ID => self.id,
            DISPI_INDEX_XRES if caps => VBE_MAX_XRES,
            DISPI_INDEX_YRES if caps => VBE_MAX_YRES,
            DISPI_INDEX_BPP if caps => VBE_MAX_BPP,
            DISPI_INDEX_XRES => self.xres,
            DISPI_INDEX_YRES => self.yres,
            DISPI_INDEX_BPP => self.bpp,
            DISPI_INDEX_ENABLE => self.enable,
            DISPI_INDEX_BANK => self.bank,
            DISPI_INDEX_VIRT_WIDTH => self.virt_width,
            DISPI_INDEX_VIRT_HEIGHT => self.virt_height,
            DISPI_INDEX_X_OFFSET => self.x_offset,
            DISPI_INDEX_Y_OFFSET => self.y_offset,
            DISPI_INDEX_VIDEO_MEMORY_64K => (LFB_SIZE / BANK_SIZE) as u16,
            _ => 0,
        }
    }

    pub(crate) fn write_data(&mut self, value: u16) {
        match self.index {
            DISPI_INDEX_ID => {
                if (DISPI_ID0..=DISPI_ID5).contains(&value) {
                    self.id = value;
                }
            }
            // Geometry can only change while the mode is off (as on Bochs).
            DISPI_INDEX_XRES | DISPI_INDEX_YRES | DISPI_INDEX_BPP if self.enabled() => {
                tracing::debug!(
                    index = self.index,
                    value,
                    "VBE geometry write while enabled ignored"
                );
            }
            DISPI_INDEX_XRES => {
                if value <= VBE_MAX_XRES && value.is_multiple_of(8) {
                    self.xres = value;
                }
            }
            DISPI_INDEX_YRES => {
                if value <= VBE_MAX_YRES {
                    self.yres = value;
                }
            }
            DISPI_INDEX_BPP => {
                let bpp = if value == 0 { 8 } else { value };
                if bytes_per_pixel(bpp).is_some() {
                    self.bpp = bpp;
                }
            }
            DISPI_INDEX_ENABLE => self.write_enable(value),
            DISPI_INDEX_BANK => {
                self.bank = value & ((LFB_SIZE / BANK_SIZE) as u16 - 1);
            }
            DISPI_INDEX_VIRT_WIDTH => self.set_virtual_width(value),
            DISPI_INDEX_X_OFFSET => self.x_offset = value,
            DISPI_INDEX_Y_OFFSET => self.y_offset = value,
            // VIRT_HEIGHT follows from the width; the memory size is fixed.
            _ => tracing::debug!(
                index = self.index,
                value,
                "VBE write to read-only/unknown register"
            ),
        }
    }

    fn write_enable(&mut self, value: u16) {
        let turning_on = value & DISPI_ENABLED != 0 && !self.enabled();
        if turning_on {
            let pitch = self.pitch_for(self.xres);
            let size = pitch * usize::from(self.yres);
            if self.xres == 0 || self.yres == 0 || size > LFB_SIZE {
                tracing::warn!(
                    xres = self.xres,
                    yres = self.yres,
                    bpp = self.bpp,
                    "VBE mode does not fit the framebuffer; enable ignored"
                );
                return;
            }
            self.virt_width = self.xres;
            self.virt_height = (LFB_SIZE / pitch.max(1)).min(usize::from(u16::MAX)) as u16;
            self.x_offset = 0;
            self.y_offset = 0;
            if value & DISPI_NOCLEARMEM == 0 {
                self.pending_clear = Some(self.pending_clear.unwrap_or(0).max(size));
            }
        }
        self.enable = value
            & (DISPI_ENABLED
                | DISPI_GETCAPS
                | DISPI_8BIT_DAC
                | DISPI_LFB_ENABLED
                | DISPI_NOCLEARMEM);
    }

    fn set_virtual_width(&mut self, width: u16) {
        let pitch = self.pitch_for(width);
        if width < self.xres || pitch == 0 {
            return;
        }
        let lines = LFB_SIZE / pitch;
        if lines < usize::from(self.yres) {
            return;
        }
        self.virt_width = width;
        self.virt_height = lines.min(usize::from(u16::MAX)) as u16;
    }

    /// Offset in the framebuffer of the 64 KiB shown at 0xA0000, while a mode is on.
    pub(crate) fn bank_window(&self) -> Option<usize> {
        self.enabled().then(|| usize::from(self.bank) * BANK_SIZE)
    }

    /// Bytes `0..n` of the framebuffer must be zeroed (taken once).
    pub(crate) fn take_pending_clear(&mut self) -> Option<usize> {
        self.pending_clear.take()
    }
}
