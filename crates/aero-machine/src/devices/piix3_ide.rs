//! PIIX3 IDE function (82371SB function 1, 8086:7010): the PCI face of the legacy IDE
//! controller, in compatibility mode.
//!
//! Follows the 82371SB datasheet: class 01h/01h with programming interface 80h (both
//! channels in legacy mode at 0x1F0/0x3F6 with IRQ14 and 0x170/0x376 with IRQ15, bus
//! master capable), BAR4 = 16-byte bus-master IDE I/O block (BMIBA), IDETIM (0x40 primary,
//! 0x42 secondary, bit 15 = decode enable), SIDETIM (0x44). BAR0–3 are not implemented in
//! compatibility mode and read as 0. The ATA/ATAPI model itself lives in the storage crate;
//! the machine routes the legacy ports and BMIBA to it when [`Piix3Ide::channel_enabled`] and
//! [`Piix3Ide::bus_master_base`] say so.

use super::pci::{BarKind, ConfigSpace, PciFunction};

pub const IDETIM_PRIMARY: u8 = 0x40;
pub const IDETIM_SECONDARY: u8 = 0x42;
const IDETIM_DECODE_ENABLE: u16 = 1 << 15;
pub const BUS_MASTER_BAR: usize = 4;

/// The PIIX3 IDE function's configuration space.
#[derive(Clone, Debug)]
pub struct Piix3Ide {
    config: ConfigSpace,
}

impl Default for Piix3Ide {
    fn default() -> Self {
        Self::new()
    }
}

impl Piix3Ide {
    pub fn new() -> Piix3Ide {
        let mut config = ConfigSpace::new(0x8086, 0x7010, 0x01_01_80, 0x00, 0x00);
        config.set_bar(BUS_MASTER_BAR, BarKind::Io, 16);
        config.set_u16(0x06, 0x0280); // fast back-to-back, DEVSEL medium
        config.set_writable_u16(IDETIM_PRIMARY, 0xF3FF);
        config.set_writable_u16(IDETIM_SECONDARY, 0xF3FF);
        config.set_writable_u8(0x44, 0xFF); // SIDETIM
        Piix3Ide { config }
    }

    /// Legacy channel decoding (primary `false`, secondary `true`): the I/O space enable
    /// and the channel's IDETIM decode bit are both set.
    pub fn channel_enabled(&self, secondary: bool) -> bool {
        let register = if secondary {
            IDETIM_SECONDARY
        } else {
            IDETIM_PRIMARY
        };
        self.config.io_enabled() && self.config.u16_at(register) & IDETIM_DECODE_ENABLE != 0
    }

    /// I/O base of the bus-master register block, when assigned and I/O is enabled.
    pub fn bus_master_base(&self) -> Option<u16> {
        let (_, _, base) = self.config.bar(BUS_MASTER_BAR)?;
        (self.config.io_enabled() && base != 0 && base <= 0xFFF0).then_some(base as u16)
    }

    /// Bus-master DMA allowed (PCI command bit 2).
    pub fn dma_enabled(&self) -> bool {
        self.config.bus_master()
    }
}

impl PciFunction for Piix3Ide {
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
    fn identity_and_compatibility_mode() {
        let ide = Piix3Ide::new();
        assert_eq!(ide.config().u32_at(0), 0x7010_8086);
        assert_eq!(ide.config().u32_at(0x08), 0x0101_8000);
        assert_eq!(ide.config().interrupt_pin(), 0, "legacy IRQ14/15, no INTx");
        assert_eq!(ide.config().u32_at(0x10), 0, "BAR0 not implemented");
    }

    #[test]
    fn bus_master_bar_and_decode_enables() {
        let mut ide = Piix3Ide::new();
        ide.config_write(0x20, 4, 0xFFFF_FFFF);
        assert_eq!(ide.config_read(0x20, 4), 0xFFFF_FFF1, "16-byte I/O BAR");
        ide.config_write(0x20, 4, 0xC041);
        assert_eq!(ide.bus_master_base(), None, "I/O decode off");
        assert!(!ide.channel_enabled(false));
        ide.config_write(0x04, 2, 0x0005);
        assert_eq!(ide.bus_master_base(), Some(0xC040));
        assert!(ide.dma_enabled());
        assert!(!ide.channel_enabled(false), "IDETIM decode bit still clear");
        ide.config_write(IDETIM_PRIMARY, 2, 0x8000);
        ide.config_write(IDETIM_SECONDARY, 2, 0x8000);
        assert!(ide.channel_enabled(false) && ide.channel_enabled(true));
        assert_eq!(ide.config_read(IDETIM_PRIMARY, 4), 0x8000_8000);
    }
}
