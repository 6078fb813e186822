//! PIIX4 power-management function (82371AB function 3, 8086:7113) as QEMU's `pc` machine
//! pairs it with the PIIX3 ISA bridge: the PCI face of the ACPI PM block.
//!
//! Follows the 82371AB datasheet for the registers firmware programs: PMBA (0x40, the
//! 64-byte PM I/O base, bit 0 reads 1), PMREGMISC (0x80, bit 0 enables the PM I/O space),
//! SMBBA (0x90, SMBus I/O base) and SMBHSTCFG (0xD2); the device control registers in
//! between read back, except that DEVACTB.APMC_EN stays set because no SMM is modelled.
//! Our BIOS and SeaBIOS both program PMBA = 0xB000. The machine moves
//! the [`super::acpi_pm::AcpiPm`] block with [`Piix4Pm::pm_io_base`] whenever the PCI write
//! generation changes. The SMBus controller itself is not modelled.

use super::pci::{ConfigSpace, PciFunction};

pub const PMBA: u8 = 0x40;
pub const PMREGMISC: u8 = 0x80;
pub const SMBBA: u8 = 0x90;
pub const SMBHSTCFG: u8 = 0xD2;
/// Device activity B; bit 25 (APMC_EN) routes APM control port (0xB2) writes to SMI.
pub const DEVACTB: u8 = 0x58;
const DEVACTB_APMC_EN: u32 = 1 << 25;

/// The PIIX4 PM function's configuration space.
#[derive(Clone, Debug)]
pub struct Piix4Pm {
    config: ConfigSpace,
}

impl Default for Piix4Pm {
    fn default() -> Self {
        Self::new()
    }
}

impl Piix4Pm {
    pub fn new() -> Piix4Pm {
        let mut config = ConfigSpace::new(0x8086, 0x7113, 0x06_80_00, 0x03, 0x00);
        config.set_interrupt_pin(1);
        config.set_u32(PMBA, 0x0000_0001);
        config.set_writable_u32(PMBA, 0x0000_FFC0);
        config.set_writable_range(0x44, 0x7F); // counters, GPI control, device activity/resources
        // There is no SMM: writes to 0xB2 are serviced by the ACPI PM model directly. Report
        // APMC_EN as already set (read-only) so firmware that would otherwise set up an SMI
        // handler and spin until it ran (SeaBIOS's PIIX4 SMM init) sees the work as done.
        config.set_u32(DEVACTB, DEVACTB_APMC_EN);
        config.set_writable_u32(DEVACTB, !DEVACTB_APMC_EN);
        config.set_writable_u8(PMREGMISC, 0x01);
        config.set_u32(SMBBA, 0x0000_0001);
        config.set_writable_u32(SMBBA, 0x0000_FFF0);
        config.set_writable_u8(SMBHSTCFG, 0x0F);
        Piix4Pm { config }
    }

    /// The PM I/O base when the guest enabled the PM I/O space (PMREGMISC bit 0).
    pub fn pm_io_base(&self) -> Option<u16> {
        let enabled = self.config.u8_at(PMREGMISC) & 1 != 0;
        let base = (self.config.u32_at(PMBA) & 0xFFC0) as u16;
        (enabled && base != 0).then_some(base)
    }
}

impl PciFunction for Piix4Pm {
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
    fn identity() {
        let pm = Piix4Pm::new();
        assert_eq!(pm.config().u32_at(0), 0x7113_8086);
        assert_eq!(pm.config().u32_at(0x08), 0x0680_0003);
        assert_eq!(pm.config().interrupt_pin(), 1);
    }

    #[test]
    fn apmc_enable_reads_as_already_set() {
        let mut pm = Piix4Pm::new();
        assert_ne!(pm.config_read(DEVACTB, 4) & DEVACTB_APMC_EN, 0);
        pm.config_write(DEVACTB, 4, 0x0000_00FF);
        assert_eq!(
            pm.config_read(DEVACTB, 4),
            DEVACTB_APMC_EN | 0xFF,
            "other bits writable"
        );
    }

    #[test]
    fn firmware_programs_pm_base() {
        let mut pm = Piix4Pm::new();
        assert_eq!(pm.pm_io_base(), None);
        pm.config_write(PMBA, 4, 0xB000 | 1);
        assert_eq!(pm.config_read(PMBA, 4), 0xB001);
        assert_eq!(pm.pm_io_base(), None, "not enabled yet");
        pm.config_write(PMREGMISC, 1, 0xFF);
        assert_eq!(pm.config_read(PMREGMISC, 1), 0x01);
        assert_eq!(pm.pm_io_base(), Some(0xB000));
        pm.config_write(PMBA, 4, 0xFFFF_FFFF);
        assert_eq!(
            pm.config_read(PMBA, 4),
            0xFFC1,
            "64-byte aligned, 16-bit I/O space"
        );
        pm.config_write(SMBBA, 4, 0xB101);
        assert_eq!(pm.config_read(SMBBA, 4), 0xB101);
    }
}
