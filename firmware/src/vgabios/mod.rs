//! The VGA option ROM ("video BIOS"): real 16-bit x86 code, assembled by our own Rust
//! code with iced-x86, that implements INT 10h (VGA text/graphics services, VBE 3.0 and
//! VBE/DDC) purely with I/O port accesses and memory writes.
//!
//! It must not trap into the host: Windows x64 runs the video ROM inside its own x86
//! emulator, where only the ROM, the IVT/BDA and the device's ports and memory exist.
//!
//! The display it drives is Aero's display function (AeroGPU, A3A0:0001), whose legacy
//! face is a Bochs/QEMU "std VGA"-style adapter: the legacy VGA registers, the Bochs DISPI
//! interface at ports 0x1CE/0x1CF and a linear framebuffer at PCI BAR2.
//!
//! What the ROM does not do (callers get an explicit failure or a documented no-op):
//! * VBE 4F0Ah (protected-mode interface) returns 014Fh; VBE 4F09h has no secondary
//!   palette; the 8-bit DAC (4F08h) exists only while a VBE mode is on (034Fh otherwise).
//! * INT 10h text services draw nothing while a VBE mode is active (BDA mode = 7Fh).
//! * BEL (07h) in teletype output is ignored (no speaker access from the video BIOS).
//!
//! Layout of the code: `asm` (multi-pass assembler helper), `rom` (header, init, INT 10h
//! dispatch, data tables), `regs` (register access routines), `modeset`, `text`,
//! `gfx`, `palette`, `fonts`, `info` (AH=0Fh/12h/1Ah/1Bh/1Ch), `vbe`, plus the data
//! builders `vga_modes`, `vbe_modes`, `edid` and `font`.

mod edid;
mod font;
mod fonts;
mod gfx;
mod info;
mod modeset;
mod palette;
mod regs;
mod rom;
mod savestate;
mod text;
mod vbe;
mod vbe_modes;
mod vga_modes;

#[cfg(test)]
mod exec_tests;
#[cfg(test)]
mod hal_emu_tests;
#[cfg(test)]
mod test_rig;
#[cfg(test)]
mod tests;

pub use edid::{EDID_LEN, build_edid};
pub use vbe_modes::{VbeMode, vbe_modes};

/// PCI identity of the display adapter the ROM is written for.
pub const VGA_PCI_VENDOR: u16 = aero_gpu::aerogpu::AEROGPU_PCI_DESCRIPTION.vendor_id;
pub const VGA_PCI_DEVICE: u16 = aero_gpu::aerogpu::AEROGPU_PCI_DESCRIPTION.device_id;
/// The BAR holding the linear framebuffer.
pub const VGA_PCI_LFB_BAR: u8 = aero_gpu::aerogpu::AEROGPU_PCI_DESCRIPTION.lfb_bar_index;
/// PCI class code: display controller, VGA compatible.
pub const VGA_PCI_CLASS: u32 = 0x03_00_00;

/// Largest option ROM the legacy C0000–CFFFF window and the length byte allow.
pub const MAX_ROM_LEN: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum VgaBiosError {
    #[error("assembler: {0}")]
    Asm(#[from] iced_x86::IcedError),
    #[error(transparent)]
    Assembly(#[from] crate::asm16::AsmError),
    #[error("ROM image of {0} bytes exceeds the 64 KiB option ROM limit")]
    TooLarge(usize),
    #[error("font: {0}")]
    Font(String),
}

/// Assembles the complete VGA option ROM image: a multiple of 512 bytes with the
/// 0x55 0xAA signature, length byte, init entry at offset 3, a PCI data structure and a
/// checksum that makes all bytes sum to zero.
pub fn build_vga_bios() -> Result<Vec<u8>, VgaBiosError> {
    rom::build()
}

/// The BIOS data area (segment 0x40) fields the video BIOS owns. All ROM code runs with
/// DS = 0x40, so these are plain offsets.
pub(crate) mod bda {
    pub const SEGMENT: i32 = 0x40;
    pub const MODE: u16 = 0x49;
    pub const COLUMNS: u16 = 0x4A;
    pub const PAGE_SIZE: u16 = 0x4C;
    pub const PAGE_START: u16 = 0x4E;
    pub const CURSOR_POS: u16 = 0x50;
    pub const CURSOR_SHAPE: u16 = 0x60;
    pub const ACTIVE_PAGE: u16 = 0x62;
    pub const CRTC_PORT: u16 = 0x63;
    pub const CGA_MODE_CTL: u16 = 0x65;
    pub const CGA_PALETTE: u16 = 0x66;
    pub const ROWS_MINUS_1: u16 = 0x84;
    pub const CHAR_HEIGHT: u16 = 0x85;
    /// Bit 7: memory was not cleared by the last mode set; bit 0: no cursor emulation.
    pub const VIDEO_CTL: u16 = 0x87;
    pub const SWITCHES: u16 = 0x88;
    /// Bit 3: default palette loading disabled; bit 1: grey summing; bits 4/7: scan lines.
    pub const VGA_FLAGS: u16 = 0x89;
    pub const DCC_INDEX: u16 = 0x8A;
    pub const SAVE_POINTER: u16 = 0xA8;
    pub const EQUIPMENT: u16 = 0x10;
}

/// Offsets of the caller's registers in the INT 10h frame (`pushad` under DS/ES),
/// addressed as `[bp + xx]`. Handlers return values by writing the low bytes/words of
/// these slots; the upper halves of the caller's 32-bit registers come back unchanged.
#[allow(dead_code)] // the whole layout is listed, including slots no handler writes yet
pub(crate) mod frame {
    pub const DI: u16 = 0;
    pub const SI: u16 = 4;
    pub const BP: u16 = 8;
    pub const BX: u16 = 16;
    pub const BL: u16 = 16;
    pub const BH: u16 = 17;
    pub const DX: u16 = 20;
    pub const DL: u16 = 20;
    pub const DH: u16 = 21;
    pub const CX: u16 = 24;
    pub const CL: u16 = 24;
    pub const CH: u16 = 25;
    pub const AX: u16 = 28;
    pub const AL: u16 = 28;
    pub const AH: u16 = 29;
    pub const ES: u16 = 32;
}

/// The per-mode record the ROM keeps for each VGA mode (see `rom::emit_mode_table`).
pub(crate) mod mode_rec {
    pub const LEN: u16 = 22;
    pub const NUMBER: u16 = 0;
    pub const KIND: u16 = 1;
    pub const COLUMN_BYTES: u16 = 2;
    pub const PAGES: u16 = 3;
    pub const SEGMENT: u16 = 4;
    pub const STRIDE: u16 = 6;
    pub const PARAMS: u16 = 8;
    pub const DAC: u16 = 10;
    pub const DAC_ENTRIES: u16 = 12;
    pub const COLOURS: u16 = 14;
    pub const CGA_MODE_CTL: u16 = 16;
    pub const CGA_PALETTE: u16 = 17;
    /// Parameter tables of the 350- and 200-line text variants (0 = none).
    pub const PARAMS_350: u16 = 18;
    pub const PARAMS_200: u16 = 20;
}
