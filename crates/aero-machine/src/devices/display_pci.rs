//! The PCI face of the machine's one display adapter: AeroGPU's identity (A3A0:0001,
//! class 03h/00h VGA-compatible) carrying both display models of `aero-gpu`.
//!
//! | resource | what it decodes |
//! |---|---|
//! | BAR0 (32-bit memory, 4 KiB) | AeroGPU registers ([`aero_gpu::aerogpu::AeroGpu`]) |
//! | BAR2 (32-bit prefetchable memory) | the VGA's VBE linear framebuffer |
//! | expansion ROM BAR (64 KiB) | our VGA BIOS (SeaBIOS-style firmware runs it from here) |
//! | INTA# | AeroGPU's level-triggered interrupt |
//!
//! A VGA-compatible class also decodes the legacy ranges (0x3B0–0x3DF, 0xA0000–0xBFFFF)
//! without BARs; the machine keeps those mapped to the VGA regardless. There is no second
//! display function: a guest driver that knows AeroGPU and the boot firmware's VGA/VBE
//! code drive the same device.

use aero_gpu::aerogpu::AEROGPU_PCI_DESCRIPTION;

use super::pci::{BarKind, ConfigSpace, PciFunction};

/// Size of the expansion ROM window (the VGA BIOS is at most 64 KiB).
pub const VGA_ROM_BAR_SIZE: u32 = 0x10000;
/// BAR index of the AeroGPU register block.
pub const MMIO_BAR: usize = 0;
/// BAR index of the VBE linear framebuffer.
pub const LFB_BAR: usize = AEROGPU_PCI_DESCRIPTION.lfb_bar_index as usize;
/// Size of the LFB BAR: all of the VGA's video memory.
pub const LFB_BAR_SIZE: u32 = aero_gpu::vga::PCI_DESCRIPTION.bar0_size;

/// Configuration space of the display function.
#[derive(Clone, Debug)]
pub struct DisplayPciFunction {
    config: ConfigSpace,
}

impl Default for DisplayPciFunction {
    fn default() -> Self {
        Self::new()
    }
}

impl DisplayPciFunction {
    pub fn new() -> DisplayPciFunction {
        let d = AEROGPU_PCI_DESCRIPTION;
        let class_code =
            u32::from(d.class) << 16 | u32::from(d.subclass) << 8 | u32::from(d.prog_if);
        let mut config = ConfigSpace::new(d.vendor_id, d.device_id, class_code, d.revision, 0x00);
        config.set_subsystem(d.subsystem_vendor_id, d.subsystem_id);
        config.set_bar(
            MMIO_BAR,
            BarKind::Memory32 {
                prefetchable: false,
            },
            u64::from(d.bar0_size),
        );
        config.set_bar(
            LFB_BAR,
            BarKind::Memory32 { prefetchable: true },
            u64::from(LFB_BAR_SIZE),
        );
        config.set_rom(VGA_ROM_BAR_SIZE);
        config.set_interrupt_pin(d.interrupt_pin);
        DisplayPciFunction { config }
    }

    fn memory_bar(&self, index: usize) -> Option<u64> {
        let (_, _, base) = self.config.bar(index)?;
        (self.config.memory_enabled() && base != 0).then_some(base)
    }

    /// Guest-physical base of the AeroGPU registers while memory decoding is on.
    pub fn mmio_base(&self) -> Option<u64> {
        self.memory_bar(MMIO_BAR)
    }

    /// Guest-physical base of the linear framebuffer while memory decoding is on.
    pub fn lfb_base(&self) -> Option<u64> {
        self.memory_bar(LFB_BAR)
    }

    /// Guest-physical base of the expansion ROM while it is enabled and memory decoding is on.
    pub fn rom_base(&self) -> Option<u64> {
        let base = self.config.rom_base()?;
        (self.config.memory_enabled() && base != 0).then_some(base)
    }

    /// The INTx pin (1 = INTA#), 0 if none.
    pub fn interrupt_pin(&self) -> u8 {
        self.config.interrupt_pin()
    }
}

impl PciFunction for DisplayPciFunction {
    fn config(&self) -> &ConfigSpace {
        &self.config
    }

    fn config_mut(&mut self) -> &mut ConfigSpace {
        &mut self.config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size_of_bar(f: &mut DisplayPciFunction, reg: u8) -> (u32, u32) {
        f.config_write(reg, 4, 0xFFFF_FFFF);
        let probed = f.config_read(reg, 4);
        (!(probed & !0xF) + 1, probed & 0xF)
    }

    #[test]
    fn identity_bars_and_rom() {
        let mut f = DisplayPciFunction::new();
        assert_eq!(f.config().u32_at(0x00), 0x0001_A3A0);
        assert_eq!(
            f.config().u32_at(0x08) >> 8,
            0x03_00_00,
            "VGA-compatible display"
        );
        assert_eq!(f.config().u32_at(0x2C), 0x0001_A3A0, "subsystem");
        assert_eq!(f.interrupt_pin(), 1, "INTA#");
        assert_eq!(
            size_of_bar(&mut f, 0x10),
            (0x1000, 0x0),
            "BAR0: registers, non-prefetchable"
        );
        assert_eq!(f.config_read(0x14, 4), 0, "BAR1 unused");
        assert_eq!(
            size_of_bar(&mut f, 0x18),
            (LFB_BAR_SIZE, 0x8),
            "BAR2: LFB, prefetchable"
        );
        f.config_write(0x30, 4, 0xFFFF_FFFE);
        assert_eq!(!(f.config_read(0x30, 4) & !0x7FF) + 1, VGA_ROM_BAR_SIZE);

        f.config_write(0x10, 4, 0xFEBF_0000);
        f.config_write(0x18, 4, 0xFD00_0000);
        f.config_write(0x30, 4, 0xFEBE_0001);
        assert_eq!(
            (f.mmio_base(), f.lfb_base(), f.rom_base()),
            (None, None, None),
            "memory decoding off"
        );
        f.config_write(0x04, 2, 0x0002);
        assert_eq!(f.mmio_base(), Some(0xFEBF_0000));
        assert_eq!(f.lfb_base(), Some(0xFD00_0000));
        assert_eq!(f.rom_base(), Some(0xFEBE_0000));
    }
}
