//! The legacy VGA adapter with the Bochs VBE extension: one PCI display function with
//! 256 KiB of planar VGA memory, the VGA register set, a RAMDAC, and a 16 MiB linear
//! framebuffer for DISPI modes.
//!
//! The machine wires it up as:
//! * port I/O: [`Vga::io_read`]/[`Vga::io_write`] for every port in [`IO_PORT_RANGES`];
//! * memory 0xA0000-0xBFFFF: [`Vga::mem_read`]/[`Vga::mem_write`] (offset from 0xA0000),
//!   except while a VBE mode is on: then 0xA0000-0xAFFFF is the 64 KiB of the framebuffer
//!   at [`Vga::vbe_bank_window`];
//! * the linear framebuffer ([`LFB_SIZE`] bytes) belongs to the owner, who maps it as
//!   memory (BAR2 of the one display function, AeroGPU's identity, see [`crate::aerogpu`];
//!   [`PCI_DESCRIPTION`] is the std-vga identity this model mirrors), zeroes what
//!   [`Vga::take_lfb_clear`] asks for and passes it to [`Vga::render`];
//! * time: [`Vga::advance`] with the virtual clock before port accesses and rendering.

mod attribute;
mod crtc;
mod dac;
mod graphics;
mod indexed;
mod memory;
mod pci;
mod render;
mod sequencer;
mod timing;
mod vbe;

#[cfg(test)]
mod tests;

use std::ops::RangeInclusive;

use attribute::AttributeController;
use crtc::Crtc;
use dac::Dac;
use graphics::GraphicsController;
use sequencer::Sequencer;
use vbe::Vbe;

pub use pci::{PCI_DESCRIPTION, PciDescription};
pub use render::DisplayMode;
pub use vbe::{BANK_SIZE, LFB_SIZE, VBE_MAX_BPP, VBE_MAX_XRES, VBE_MAX_YRES, VbeMode};

/// Bytes per VGA plane; four planes make the 256 KiB of VGA memory.
pub const PLANE_SIZE: usize = 0x1_0000;
/// Size of the legacy memory window at 0xA0000.
pub const LEGACY_WINDOW_SIZE: u32 = 0x2_0000;
/// Physical base of the legacy window.
pub const LEGACY_WINDOW_BASE: u64 = 0xA_0000;
/// Port ranges the adapter decodes: the VGA block and the Bochs DISPI index/data ports
/// (0x1D0 is the data-port alias some guests use).
pub const IO_PORT_RANGES: [RangeInclusive<u16>; 2] = [0x3B0..=0x3DF, 0x1CE..=0x1D0];

const PORT_DISPI_INDEX: u16 = 0x1CE;
const PORT_DISPI_DATA: u16 = 0x1CF;
const PORT_DISPI_DATA_ALT: u16 = 0x1D0;

/// The VGA + Bochs VBE display adapter.
#[derive(Clone)]
pub struct Vga {
    /// Plane-major: plane `p` occupies `p * PLANE_SIZE ..`.
    vram: Vec<u8>,
    latch: [u8; 4],
    misc: u8,
    feature_control: u8,
    vga_enable: u8,
    seq: Sequencer,
    gc: GraphicsController,
    crtc: Crtc,
    attr: AttributeController,
    dac: Dac,
    vbe: Vbe,
    now_ns: u64,
    /// Port and VRAM writes so far: the picture of a VGA mode changes only with them
    /// (and with the blink phases), see [`Vga::picture_key`].
    writes: u64,
}

/// See [`Vga::picture_key`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PictureKey {
    writes: u64,
    cursor_blink_on: bool,
    char_blink_on: bool,
}

impl std::fmt::Debug for Vga {
    // Summarise: the memories are far too large to print.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vga")
            .field("mode", &self.display_mode())
            .field("misc", &self.misc)
            .field("vbe", &self.vbe)
            .field("now_ns", &self.now_ns)
            .finish_non_exhaustive()
    }
}

impl Default for Vga {
    fn default() -> Self {
        Vga::new()
    }
}

impl Vga {
    /// A powered-up adapter with the registers of 80x25 colour text (what a VGA BIOS
    /// leaves after POST); memory, including the font plane, is empty until software
    /// loads it.
    pub fn new() -> Vga {
        Vga {
            vram: vec![0; 4 * PLANE_SIZE],
            latch: [0; 4],
            misc: 0x67,
            feature_control: 0,
            vga_enable: 1,
            seq: Sequencer::new(),
            gc: GraphicsController::new(),
            crtc: Crtc::new(),
            attr: AttributeController::new(),
            dac: Dac::new(),
            vbe: Vbe::new(),
            now_ns: 0,
            writes: 0,
        }
    }

    /// Brings the adapter to virtual time `now_ns`; retrace status and blinking are
    /// derived from it. Time never goes backwards here.
    pub fn advance(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
    }

    /// The adapter raises no interrupts, so it never needs a deadline.
    pub fn next_deadline_ns(&self) -> Option<u64> {
        None
    }

    /// Reads `size` (1, 2 or 4) bytes from an absolute port; unclaimed bytes read 0xFF.
    pub fn io_read(&mut self, port: u16, size: u8) -> u32 {
        if (PORT_DISPI_INDEX..=PORT_DISPI_DATA_ALT).contains(&port) {
            return self.dispi_read(port, size);
        }
        (0..size.clamp(1, 4)).fold(0u32, |value, i| {
            let byte = self.read_port(port.wrapping_add(u16::from(i)));
            value | u32::from(byte) << (8 * u32::from(i))
        })
    }

    /// Writes the low `size` (1, 2 or 4) bytes of `value` to an absolute port; a word
    /// write to an index port sets the index and then the data register, as on the ISA bus.
    pub fn io_write(&mut self, port: u16, size: u8, value: u32) {
        self.writes = self.writes.wrapping_add(1);
        if (PORT_DISPI_INDEX..=PORT_DISPI_DATA_ALT).contains(&port) {
            self.dispi_write(port, size, value);
            return;
        }
        for i in 0..size.clamp(1, 4) {
            let byte = (value >> (8 * u32::from(i))) as u8;
            self.write_port(port.wrapping_add(u16::from(i)), byte);
        }
    }

    /// The CRTC and status ports answer at 0x3Dx with colour addressing (misc bit 0),
    /// else at 0x3Bx.
    fn is_active_crtc_block(&self, port: u16) -> bool {
        let colour = self.misc & 0x01 != 0;
        if (0x3D0..=0x3DF).contains(&port) {
            colour
        } else {
            !colour
        }
    }

    fn read_port(&mut self, port: u16) -> u8 {
        match port {
            0x3C0 => self.attr.read_index(),
            0x3C1 => self.attr.read_data(),
            0x3C2 => 0x00, // input status 0: no retrace interrupt pending
            0x3C3 => self.vga_enable,
            0x3C4 => self.seq.regs.index(),
            0x3C5 => self.seq.regs.read(),
            0x3C6 => self.dac.pel_mask(),
            0x3C7 => self.dac.state(),
            0x3C8 => self.dac.write_index(),
            0x3C9 => self.dac.read_data(),
            0x3CA => self.feature_control,
            0x3CC => self.misc,
            0x3CE => self.gc.regs.index(),
            0x3CF => self.gc.regs.read(),
            0x3B4 | 0x3D4 if self.is_active_crtc_block(port) => self.crtc.regs.index(),
            0x3B5 | 0x3D5 if self.is_active_crtc_block(port) => self.crtc.regs.read(),
            0x3BA | 0x3DA if self.is_active_crtc_block(port) => {
                self.attr.reset_flip_flop();
                self.input_status_1()
            }
            _ => 0xFF,
        }
    }

    fn write_port(&mut self, port: u16, value: u8) {
        match port {
            0x3C0 => self.attr.write(value),
            0x3C2 => self.misc = value,
            0x3C3 => self.vga_enable = value & 0x01,
            0x3C4 => self.seq.regs.set_index(value),
            0x3C5 => self.seq.regs.write(value),
            0x3C6 => self.dac.set_pel_mask(value),
            0x3C7 => self.dac.set_read_index(value),
            0x3C8 => self.dac.set_write_index(value),
            0x3C9 => self.dac.write_data(value),
            0x3CE => self.gc.regs.set_index(value),
            0x3CF => self.gc.regs.write(value),
            0x3B4 | 0x3D4 if self.is_active_crtc_block(port) => self.crtc.regs.set_index(value),
            0x3B5 | 0x3D5 if self.is_active_crtc_block(port) => self.crtc.write_data(value),
            0x3BA | 0x3DA if self.is_active_crtc_block(port) => self.feature_control = value,
            _ => {}
        }
    }

    fn dispi_read(&mut self, port: u16, size: u8) -> u32 {
        let word = |vga: &Vga, port: u16| -> u16 {
            match port {
                PORT_DISPI_INDEX => vga.vbe.index(),
                PORT_DISPI_DATA | PORT_DISPI_DATA_ALT => vga.vbe.read_data(),
                _ => 0xFFFF,
            }
        };
        let low = u32::from(word(self, port));
        match size {
            1 => low & 0xFF,
            4 if port == PORT_DISPI_INDEX => low | u32::from(self.vbe.read_data()) << 16,
            4 => low | 0xFFFF_0000,
            _ => low,
        }
    }

    fn dispi_write(&mut self, port: u16, size: u8, value: u32) {
        let low = if size == 1 {
            value & 0xFF
        } else {
            value & 0xFFFF
        } as u16;
        match port {
            PORT_DISPI_INDEX => {
                self.vbe.set_index(low);
                if size == 4 {
                    self.vbe.write_data((value >> 16) as u16);
                }
            }
            _ => self.vbe.write_data(low),
        }
        // The DAC width switch lives in the DISPI enable register.
        self.dac.eight_bit = self.vbe.dac_8bit();
    }

    /// While a VBE mode is on, the offset in the framebuffer of the [`BANK_SIZE`] bytes
    /// that 0xA0000 shows (the owner maps them; [`Vga::mem_read`] does not reach them).
    pub fn vbe_bank_window(&self) -> Option<usize> {
        self.vbe.bank_window()
    }

    /// After a VBE mode set: framebuffer bytes `0..n` must read as zero. Taken once; the
    /// owner of the framebuffer clears them before the guest runs on.
    pub fn take_lfb_clear(&mut self) -> Option<usize> {
        self.vbe.take_pending_clear()
    }

    /// The four VGA planes (plane-major, [`PLANE_SIZE`] bytes each), for inspection.
    pub fn planes(&self) -> &[u8] {
        &self.vram
    }

    /// Equal keys mean the same VGA-mode picture (text, planar, 256-colour; the palette
    /// of an 8-bit VBE mode), without rendering it: a count of port and VRAM writes plus
    /// the cursor and character blink phases. A different key may still be the same
    /// picture (a write of the same value).
    pub fn picture_key(&self) -> PictureKey {
        PictureKey {
            writes: self.writes,
            cursor_blink_on: self.cursor_blink_on(),
            char_blink_on: self.char_blink_on(),
        }
    }

    /// The enabled VBE mode, if the DISPI interface has one switched on.
    pub fn vbe_mode(&self) -> Option<VbeMode> {
        self.vbe.active_mode()
    }
}
