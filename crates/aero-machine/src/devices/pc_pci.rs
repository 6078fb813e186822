//! PCI bus 0 of the i440FX/PIIX3 PC as QEMU's `pc` machine lays it out, behind the host
//! bridge's configuration mechanism #1 (ports 0xCF8/0xCFC–0xCFF):
//!
//! | address | function |
//! |---|---|
//! | 00:00.0 | i440FX host bridge ([`I440fxHostBridge`]) |
//! | 00:01.0 | PIIX3 ISA bridge ([`Piix3IsaBridge`]) |
//! | 00:01.1 | PIIX3 IDE ([`Piix3Ide`]) |
//! | 00:01.3 | PIIX4 power management ([`Piix4Pm`]) |
//! | 00:02.0 | display: AeroGPU + VGA ([`DisplayPciFunction`]) |
//! | 00:05.0 | ICH9 AHCI ([`AhciPci`]) |
//! | 00:03.0 | e1000 NIC when configured (a [`PcPciFunctions::devices`] entry) |
//! | others | any [`PciFunction`] added to [`PcPciFunctions::others`] |
//!
//! On real hardware the configuration mechanisms live in the host bridge; here they are one
//! device: a [`PortIo`] for 0xCF8–0xCFF (dword at 0xCF8, any size at 0xCFC–0xCFF; byte
//! accesses to 0xCF9 belong to the reset control register) and the ECAM window
//! ([`PcPci::ecam_read`]/[`PcPci::ecam_write`], mapped by the platform at `ECAM_BASE`).
//! Both reach the same functions, and writes through either bump
//! [`PcPci::write_generation`], after which the machine re-reads the typed functions'
//! state (PAM, PIRQ routes, BARs).

use super::ahci_pci::AhciPci;
use super::display_pci::DisplayPciFunction;
use super::i440fx::I440fxHostBridge;
use super::pci::{PciAddress, PciBus, PciConfigMechanism, PciEcam, PciFunction, PciFunctionLookup};
use super::pci_device::PluggedDevice;
use super::piix3::Piix3IsaBridge;
use super::piix3_ide::Piix3Ide;
use super::piix4_pm::Piix4Pm;
use super::{PortIo, size_mask};

pub const HOST_BRIDGE: PciAddress = PciAddress::new(0, 0, 0);
pub const ISA_BRIDGE: PciAddress = PciAddress::new(0, 1, 0);
pub const IDE: PciAddress = PciAddress::new(0, 1, 1);
pub const POWER_MANAGEMENT: PciAddress = PciAddress::new(0, 1, 3);
/// The one display function (AeroGPU with the legacy VGA/VBE path).
pub const DISPLAY: PciAddress = PciAddress::new(0, 2, 0);
/// The AHCI SATA controller (INTA → PIRQA).
pub const AHCI: PciAddress = PciAddress::new(0, 5, 0);

/// The functions on bus 0.
#[derive(Debug, Default)]
pub struct PcPciFunctions {
    pub host_bridge: I440fxHostBridge,
    pub isa_bridge: Piix3IsaBridge,
    pub ide: Piix3Ide,
    pub power_management: Piix4Pm,
    pub display: DisplayPciFunction,
    pub ahci: AhciPci,
    /// Devices with BARs, interrupts and DMA served by the platform (see `pci_device.rs`).
    pub devices: Vec<PluggedDevice>,
    /// Further functions (storage, AeroGPU, …) at addresses of their own.
    pub others: PciBus,
}

impl PciFunctionLookup for PcPciFunctions {
    fn function_mut(&mut self, address: PciAddress) -> Option<&mut dyn PciFunction> {
        match address {
            HOST_BRIDGE => Some(&mut self.host_bridge),
            ISA_BRIDGE => Some(&mut self.isa_bridge),
            IDE => Some(&mut self.ide),
            POWER_MANAGEMENT => Some(&mut self.power_management),
            DISPLAY => Some(&mut self.display),
            AHCI => Some(&mut self.ahci),
            _ => match self.devices.iter_mut().find(|d| d.address == address) {
                Some(plugged) => Some(plugged.device.as_mut()),
                None => self.others.function_mut(address),
            },
        }
    }
}

/// Configuration mechanism #1, the ECAM window and bus 0.
#[derive(Debug)]
pub struct PcPci {
    mechanism: PciConfigMechanism,
    ecam: PciEcam,
    pub functions: PcPciFunctions,
}

impl Default for PcPci {
    fn default() -> PcPci {
        PcPci {
            mechanism: PciConfigMechanism::new(),
            ecam: PciEcam::new(crate::memory_map::ECAM_BUSES),
            functions: PcPciFunctions::default(),
        }
    }
}

impl PcPci {
    pub fn new() -> PcPci {
        PcPci::default()
    }

    /// Changes whenever the guest wrote a configuration register (by port or ECAM).
    pub fn write_generation(&self) -> u64 {
        self.mechanism
            .write_generation()
            .wrapping_add(self.ecam.write_generation())
    }

    /// Size of the ECAM window in bytes.
    pub fn ecam_size(&self) -> u64 {
        self.ecam.size()
    }

    /// A read at `offset` in the ECAM window.
    pub fn ecam_read(&mut self, offset: u64, size: u8) -> u64 {
        self.ecam.mmio_read(offset, size, &mut self.functions)
    }

    /// A write at `offset` in the ECAM window.
    pub fn ecam_write(&mut self, offset: u64, size: u8, value: u64) {
        self.ecam
            .mmio_write(offset, size, value, &mut self.functions)
    }
}

impl PortIo for PcPci {
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        match port {
            0xCF8..=0xCFF => self.mechanism.io_read(port, size, &mut self.functions),
            _ => size_mask(size) as u32,
        }
    }

    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        if let 0xCF8..=0xCFF = port {
            self.mechanism
                .io_write(port, size, value, &mut self.functions);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_id(pci: &mut PcPci, address: PciAddress) -> u32 {
        let cf8 = 0x8000_0000
            | u32::from(address.bus) << 16
            | u32::from(address.device) << 11
            | u32::from(address.function) << 8;
        pci.io_write(0xCF8, 4, cf8);
        pci.io_read(0xCFC, 4)
    }

    #[test]
    fn qemu_pc_layout() {
        let mut pci = PcPci::new();
        assert_eq!(read_id(&mut pci, HOST_BRIDGE), 0x1237_8086);
        assert_eq!(read_id(&mut pci, ISA_BRIDGE), 0x7000_8086);
        assert_eq!(read_id(&mut pci, IDE), 0x7010_8086);
        assert_eq!(
            read_id(&mut pci, PciAddress::new(0, 1, 2)),
            0xFFFF_FFFF,
            "no USB"
        );
        assert_eq!(read_id(&mut pci, POWER_MANAGEMENT), 0x7113_8086);
        assert_eq!(read_id(&mut pci, DISPLAY), 0x0001_A3A0);
        assert_eq!(read_id(&mut pci, PciAddress::new(0, 3, 0)), 0xFFFF_FFFF);
        assert_eq!(read_id(&mut pci, AHCI), 0x2922_8086);
        assert_eq!(
            read_id(&mut pci, PciAddress::new(1, 0, 0)),
            0xFFFF_FFFF,
            "one bus"
        );
    }

    #[test]
    fn writes_reach_typed_functions() {
        let mut pci = PcPci::new();
        let generation = pci.write_generation();
        pci.io_write(0xCF8, 4, 0x8000_0860); // 00:01.0 register 0x60
        pci.io_write(0xCFC, 4, 0x0B0B_0A0A);
        assert_eq!(pci.functions.isa_bridge.pirq_route(0), Some(10));
        assert_eq!(pci.functions.isa_bridge.pirq_route(3), Some(11));
        pci.io_write(0xCF8, 4, 0x8000_0058); // 00:00.0 register 0x58 (PAM0 at 0x59)
        pci.io_write(0xCFD, 1, 0x30);
        assert!(pci.functions.host_bridge.pam_regions()[0].access.read_ram);
        assert!(pci.write_generation() > generation);
        // Byte accesses at 0xCF9 are the reset register's, not ours; dword at CF8 is.
        assert_eq!(pci.io_read(0xCF8, 4), 0x8000_0058);
        assert_eq!(pci.io_read(0x80, 1), 0xFF);
    }
}
