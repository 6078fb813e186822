//! ICH9 AHCI function (8086:2922, "6 port SATA AHCI controller"): the PCI face of the
//! AHCI HBA whose device logic lives in `aero_storage::ahci`.
//!
//! Class 01h/06h/01h (SATA, AHCI 1.0 programming interface), BAR5 = ABAR (4 KiB memory,
//! the HBA and port registers), INTA# and a single-message MSI capability. The machine
//! maps ABAR when [`AhciPci::abar`] says so and signals interrupts through MSI when the
//! guest enabled it ([`PciFunction`] `config().msi_message()`), INTx otherwise.

use super::pci::{BarKind, ConfigSpace, PciFunction};
use aero_storage::ahci::ABAR_SIZE;

pub const ABAR_INDEX: usize = 5;
/// PCI command register bit 10: INTx disabled.
const COMMAND_INTX_DISABLE: u16 = 1 << 10;

#[derive(Clone, Debug)]
pub struct AhciPci {
    config: ConfigSpace,
}

impl Default for AhciPci {
    fn default() -> Self {
        Self::new()
    }
}

impl AhciPci {
    pub fn new() -> AhciPci {
        let mut config = ConfigSpace::new(0x8086, 0x2922, 0x01_06_01, 0x02, 0x00);
        config.set_bar(
            ABAR_INDEX,
            BarKind::Memory32 {
                prefetchable: false,
            },
            ABAR_SIZE,
        );
        config.set_interrupt_pin(1);
        config.set_subsystem(0x1AF4, 0x1100);
        config.set_u16(0x06, 0x0010 | 0x0280); // capability list, fast back-to-back, DEVSEL medium
        config.add_msi(false);
        config.set_writable_u16(0x04, 0x0407); // I/O, memory, bus master, INTx disable
        AhciPci { config }
    }
}

/// What the machine needs from a function's configuration space to run the HBA.
pub trait AhciConfig {
    /// ABAR when assigned and memory decoding is on.
    fn abar(&self) -> Option<u64>;
    /// Bus mastering allowed (the HBA may touch guest memory).
    fn dma_enabled(&self) -> bool;
    /// INTx may be asserted (no MSI, INTx not disabled).
    fn intx_enabled(&self) -> bool;
}

impl AhciConfig for ConfigSpace {
    fn abar(&self) -> Option<u64> {
        let (_, _, base) = self.bar(ABAR_INDEX)?;
        (self.memory_enabled() && base != 0).then_some(base)
    }

    fn dma_enabled(&self) -> bool {
        self.bus_master()
    }

    fn intx_enabled(&self) -> bool {
        self.command() & COMMAND_INTX_DISABLE == 0 && self.msi_message().is_none()
    }
}

impl PciFunction for AhciPci {
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
    use crate::devices::pci::CAP_ID_MSI;

    #[test]
    fn identity_bar_and_interrupts() {
        let mut f = AhciPci::new();
        assert_eq!(f.config().u32_at(0), 0x2922_8086);
        assert_eq!(f.config().u32_at(0x08) >> 8, 0x01_06_01);
        assert_eq!(f.config().interrupt_pin(), 1);
        f.config_write(0x24, 4, 0xFFFF_FFFF);
        assert_eq!(
            f.config_read(0x24, 4),
            !(ABAR_SIZE as u32 - 1),
            "4 KiB memory BAR"
        );
        f.config_write(0x24, 4, 0xFEBF_0000);
        assert_eq!(f.config().abar(), None, "memory decoding off");
        f.config_write(0x04, 2, 0x0006);
        assert_eq!(f.config().abar(), Some(0xFEBF_0000));
        assert!(f.config().dma_enabled());
        assert!(f.config().intx_enabled());
        // MSI capability in the list; enabling it turns INTx off.
        let cap = f.config_read(0x34, 1) as u8;
        assert_eq!(f.config_read(cap, 1) as u8, CAP_ID_MSI);
        f.config_write(cap + 4, 4, 0xFEE0_0000);
        f.config_write(cap + 8, 2, 0x0041);
        f.config_write(cap + 2, 2, 1);
        assert!(!f.config().intx_enabled());
        assert_eq!(f.config().msi_message().map(|m| m.data), Some(0x41));
    }
}
