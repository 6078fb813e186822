//! What the machine tells the BIOS about itself.

/// A boot device class, tried in `BiosConfig::boot_order`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootDevice {
    Floppy,
    HardDisk,
    Cdrom,
}

#[derive(Clone, Debug)]
pub struct BiosConfig {
    /// Guest RAM in bytes; the part above `pci_hole_start` is remapped above 4 GiB.
    pub ram_size: u64,
    pub boot_order: Vec<BootDevice>,
    pub cpu_count: u32,
    /// Start of the PCI hole below 4 GiB; must match the machine's memory map.
    pub pci_hole_start: u64,
    /// 32-bit PCI MMIO BARs are assigned from here up to the IOAPIC at 0xFEC00000.
    pub pci_mmio_start: u64,
    /// The machine's PCI Express ECAM window, if it has one: described by the MCFG table,
    /// reserved in E820 and claimed by a `PNP0C02` device. Must lie in the PCI hole below
    /// `pci_mmio_start` (BARs never go there).
    pub pci_ecam: Option<crate::tables::acpi::EcamWindow>,
    /// I/O ports of the serial ports to list in the BDA (COM1 first).
    pub serial_ports: Vec<u16>,
    /// Extra MMIO ranges `(base, length)` the OS must not treat as RAM (e.g. PCIe ECAM);
    /// reported as E820 "reserved".
    pub reserved_ranges: Vec<(u64, u64)>,
    /// Firmware-table facts: CPUID leaf 1 EAX/EDX and long-mode support (SMBIOS, MP).
    pub cpuid_signature: u32,
    pub cpuid_features_edx: u32,
    pub cpu_64bit: bool,
    /// The machine has an HPET at 0xFED00000 (ACPI HPET table and device).
    pub hpet: bool,
    /// The machine has a floppy controller (ACPI PNP0700 device).
    pub floppy_controller: bool,
    pub pci_irq_mode: crate::tables::PciIrqMode,
    /// A Linux kernel to boot directly (`--kernel`): INT 19h loads and enters it instead
    /// of trying the boot order.
    pub linux: Option<std::sync::Arc<super::linux::LinuxBoot>>,
}

impl BiosConfig {
    pub fn new(ram_size: u64) -> BiosConfig {
        BiosConfig {
            ram_size,
            boot_order: vec![BootDevice::HardDisk, BootDevice::Cdrom, BootDevice::Floppy],
            cpu_count: 1,
            pci_hole_start: 0xE000_0000,
            pci_mmio_start: u64::from(crate::tables::platform::PCI_MMIO32_BASE),
            pci_ecam: Some(crate::tables::acpi::EcamWindow::default()),
            serial_ports: vec![0x3F8],
            reserved_ranges: Vec::new(),
            cpuid_signature: 0x0000_0663,
            cpuid_features_edx: 0,
            cpu_64bit: true,
            hpet: true,
            floppy_controller: false,
            pci_irq_mode: crate::tables::PciIrqMode::SharedIsaIrqs,
            linux: None,
        }
    }
}
