//! The VBE mode list and the static part of each mode's ModeInfoBlock.

/// Bytes of ModeInfoBlock stored per mode in the ROM (everything up to and including
/// MaxPixelClock); the rest of the 256-byte block is zero.
pub(crate) const MODE_INFO_TEMPLATE_LEN: usize = 0x42;
/// ROM record per mode: mode number (word) + template.
pub(crate) const MODE_RECORD_LEN: usize = 2 + MODE_INFO_TEMPLATE_LEN;

/// ModeInfoBlock field offsets the ROM code patches at run time.
pub(crate) const MI_WIN_FUNC_SEG: u16 = 0x0E;
pub(crate) const MI_BYTES_PER_LINE: u16 = 0x10;
pub(crate) const MI_XRES: u16 = 0x12;
pub(crate) const MI_YRES: u16 = 0x14;
pub(crate) const MI_BPP: u16 = 0x19;
pub(crate) const MI_BANK_IMAGE_PAGES: u16 = 0x1D;
pub(crate) const MI_PHYS_BASE: u16 = 0x28;
pub(crate) const MI_LIN_IMAGE_PAGES: u16 = 0x34;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VbeMode {
    pub number: u16,
    pub width: u16,
    pub height: u16,
    pub bpp: u8,
}

impl VbeMode {
    /// Lines are padded to a multiple of 8 pixels: Bochs-style adapters (QEMU's std VGA
    /// and Aero's) only accept widths in multiples of 8, so a 1366-wide mode runs on a
    /// 1368-pixel raster and every adapter agrees on this pitch.
    pub fn bytes_per_line(&self) -> u32 {
        u32::from(self.width).next_multiple_of(8) * u32::from(self.bpp).div_ceil(8)
    }

    pub fn frame_bytes(&self) -> u32 {
        self.bytes_per_line() * u32::from(self.height)
    }
}

/// The modes the VGA BIOS offers: the VESA-numbered ones and, for wide screens, numbers
/// from 0x140 up (VBE 2.0+ software must read the list instead of assuming numbers).
pub fn vbe_modes() -> Vec<VbeMode> {
    let mut modes = Vec::new();
    let standard: [(u16, u16, [u16; 5]); 4] = [
        // width, height, mode numbers for 8/15/16/24/32 bpp
        (640, 480, [0x101, 0x110, 0x111, 0x112, 0x129]),
        (800, 600, [0x103, 0x113, 0x114, 0x115, 0x12E]),
        (1024, 768, [0x105, 0x116, 0x117, 0x118, 0x138]),
        (1280, 1024, [0x107, 0x119, 0x11A, 0x11B, 0x13D]),
    ];
    for (width, height, numbers) in standard {
        for (number, bpp) in numbers.into_iter().zip([8u8, 15, 16, 24, 32]) {
            modes.push(VbeMode {
                number,
                width,
                height,
                bpp,
            });
        }
    }
    // The remaining VESA-numbered modes a std-vga BIOS offers: 640x400x8 and 320x200
    // in direct colour.
    for (number, width, height, bpp) in [
        (0x100, 640, 400, 8),
        (0x10D, 320, 200, 15),
        (0x10E, 320, 200, 16),
        (0x10F, 320, 200, 24),
    ] {
        modes.push(VbeMode {
            number,
            width,
            height,
            bpp,
        });
    }
    let wide: [(u16, u16); 7] = [
        (1280, 720),
        (1280, 800),
        (1366, 768),
        (1440, 900),
        (1600, 900),
        (1680, 1050),
        (1920, 1080),
    ];
    let mut number = 0x140;
    for (width, height) in wide {
        for bpp in [16u8, 32] {
            modes.push(VbeMode {
                number,
                width,
                height,
                bpp,
            });
            number += 1;
        }
    }
    modes
}

/// `(mask size, field position)` for red, green, blue, reserved in direct-colour modes.
fn colour_fields(bpp: u8) -> [(u8, u8); 4] {
    match bpp {
        15 => [(5, 10), (5, 5), (5, 0), (1, 15)],
        16 => [(5, 11), (6, 5), (5, 0), (0, 0)],
        24 => [(8, 16), (8, 8), (8, 0), (0, 0)],
        32 => [(8, 16), (8, 8), (8, 0), (8, 24)],
        _ => [(0, 0); 4],
    }
}

/// The first [`MODE_INFO_TEMPLATE_LEN`] bytes of the ModeInfoBlock. Fields that depend
/// on the machine (WinFuncPtr segment, PhysBasePtr, image page counts) are filled in
/// by the ROM code when a program asks.
pub(crate) fn mode_info_template(
    mode: &VbeMode,
    bank_switch_offset: u16,
) -> [u8; MODE_INFO_TEMPLATE_LEN] {
    let mut t = [0u8; MODE_INFO_TEMPLATE_LEN];
    let bpl = u16::try_from(mode.bytes_per_line()).unwrap_or(u16::MAX);
    let put16 = |t: &mut [u8], at: usize, v: u16| t[at..at + 2].copy_from_slice(&v.to_le_bytes());
    // Supported, extended info present, colour, graphics, not VGA-register compatible
    // (the DISPI registers run the mode; SeaVGABIOS says the same of these modes), LFB
    // available. Bit 2 (BIOS text output) stays clear: INT 10h text functions do not draw
    // in VBE modes. Bit 6 clear: the bank window at A0000h works.
    t[0x00] = 0xBB;
    t[0x02] = 0x07; // window A: exists, readable, writable
    t[0x03] = 0x00; // window B absent
    put16(&mut t, 0x04, 64); // granularity, KiB
    put16(&mut t, 0x06, 64); // window size, KiB
    put16(&mut t, 0x08, 0xA000);
    put16(&mut t, 0x0C, bank_switch_offset); // WinFuncPtr offset; segment = ROM's CS
    put16(&mut t, 0x10, bpl);
    put16(&mut t, 0x12, mode.width);
    put16(&mut t, 0x14, mode.height);
    t[0x16] = 8; // character cell width
    t[0x17] = 16;
    t[0x18] = 1; // planes
    t[0x19] = mode.bpp;
    t[0x1A] = 1; // banks
    t[0x1B] = if mode.bpp == 8 { 4 } else { 6 }; // packed pixel / direct colour
    t[0x1C] = 0; // bank size
    t[0x1E] = 1; // reserved, must be 1
    let fields = colour_fields(mode.bpp);
    for (i, (size, pos)) in fields.iter().enumerate() {
        t[0x1F + 2 * i] = *size;
        t[0x20 + 2 * i] = *pos;
    }
    // Direct colour info: reserved field usable when it has bits.
    t[0x27] = if fields[3].0 != 0 { 0x02 } else { 0x00 };
    put16(&mut t, 0x32, bpl); // LinBytesPerScanLine
    for (i, (size, pos)) in fields.iter().enumerate() {
        t[0x36 + 2 * i] = *size;
        t[0x37 + 2 * i] = *pos;
    }
    // MaxPixelClock: unused by an emulated display, report a plausible 200 MHz.
    t[0x3E..0x42].copy_from_slice(&200_000_000u32.to_le_bytes());
    t
}
