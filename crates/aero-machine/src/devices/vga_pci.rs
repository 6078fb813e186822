//! The PCI face of the VGA/VBE adapter (the display model itself lives in `aero-gpu`):
//! configuration space built from the adapter's own [`PciDescription`] (QEMU "std vga",
//! 1234:1111), with BAR0 the linear framebuffer.
//!
//! Follows the PCI 3.0 header rules of [`super::pci::ConfigSpace`]; a VGA-compatible class
//! (03h/00h) also decodes the legacy ranges (0x3B0–0x3DF, 0xA0000–0xBFFFF) without BARs, so
//! the machine keeps those mapped regardless and uses [`VgaPciFunction::lfb_base`] for BAR0.

use aero_gpu::vga::{PCI_DESCRIPTION, PciDescription};

use super::pci::{BarKind, ConfigSpace, PciFunction};

/// Size of the expansion ROM window (the VGA BIOS is at most 64 KiB).
pub const VGA_ROM_BAR_SIZE: u32 = 0x10000;

/// Configuration space of the display function.
#[derive(Clone, Debug)]
pub struct VgaPciFunction {
    config: ConfigSpace,
}

impl Default for VgaPciFunction {
    fn default() -> Self {
        Self::new(&PCI_DESCRIPTION)
    }
}

impl VgaPciFunction {
    pub fn new(description: &PciDescription) -> VgaPciFunction {
        let class_code = u32::from(description.class) << 16
            | u32::from(description.subclass) << 8
            | u32::from(description.prog_if);
        let mut config = ConfigSpace::new(
            description.vendor_id,
            description.device_id,
            class_code,
            description.revision,
            0x00,
        );
        config.set_subsystem(description.subsystem_vendor_id, description.subsystem_id);
        config.set_bar(
            0,
            BarKind::Memory32 {
                prefetchable: description.bar0_prefetchable,
            },
            u64::from(description.bar0_size),
        );
        // Expansion ROM BAR for the VGA BIOS: SeaBIOS-style firmware loads option ROMs
        // from here (our own BIOS finds it shadowed at 0xC0000 instead).
        config.set_rom(VGA_ROM_BAR_SIZE);
        VgaPciFunction { config }
    }

    /// Guest-physical base of the expansion ROM while it is enabled and memory decoding is on.
    pub fn rom_base(&self) -> Option<u64> {
        let base = self.config.rom_base()?;
        (self.config.memory_enabled() && base != 0).then_some(base)
    }

    /// Guest-physical base of the linear framebuffer while memory decoding is on.
    pub fn lfb_base(&self) -> Option<u64> {
        let (_, _, base) = self.config.bar(0)?;
        (self.config.memory_enabled() && base != 0).then_some(base)
    }
}

impl PciFunction for VgaPciFunction {
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

    #[test]
    fn identity_and_framebuffer_bar() {
        let mut vga = VgaPciFunction::default();
        assert_eq!(vga.config().u32_at(0x00), 0x1111_1234);
        assert_eq!(vga.config().u32_at(0x08) >> 8, 0x03_00_00);
        assert_eq!(vga.config().u32_at(0x2C), 0x1100_1AF4);
        vga.config_write(0x10, 4, 0xFFFF_FFFF);
        let size_mask = vga.config_read(0x10, 4);
        assert_eq!(
            !(size_mask & !0xF) + 1,
            PCI_DESCRIPTION.bar0_size,
            "BAR0 sizes to the LFB"
        );
        assert_eq!(size_mask & 0xF, 0x8, "32-bit prefetchable memory");
        vga.config_write(0x10, 4, 0xFD00_0000);
        assert_eq!(vga.lfb_base(), None, "memory decoding off");
        vga.config_write(0x04, 2, 0x0003);
        assert_eq!(vga.lfb_base(), Some(0xFD00_0000));
    }
}
