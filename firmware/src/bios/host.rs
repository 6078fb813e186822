//! What the BIOS needs from the machine while it runs a service.

use super::error::DiskIoError;

/// One BIOS-visible drive. Floppies map to DL 00h/01h, hard disks to 80h + index,
/// the first CD-ROM to E0h.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DiskId {
    Floppy(u8),
    HardDisk(u8),
    Cdrom(u8),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiskInfo {
    /// Number of `sector_size` sectors.
    pub sectors: u64,
    /// 512 for floppies and hard disks, 2048 for CD-ROMs.
    pub sector_size: u32,
    pub read_only: bool,
    /// The controller and port the drive hangs on (EDD 3.0 device path); `None` when the
    /// machine does not say.
    pub location: Option<DiskLocation>,
}

/// Where a drive sits: its controller's PCI function and the port on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiskLocation {
    pub pci_bus: u8,
    pub pci_device: u8,
    pub pci_function: u8,
    pub port: DiskPort,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiskPort {
    /// A parallel ATA channel (0 primary, 1 secondary), master or slave.
    Ide { channel: u8, slave: bool },
    /// A SATA (AHCI) port.
    Sata { port: u8 },
}

/// Implemented by the machine. Every call happens synchronously inside
/// [`crate::Bios::handle_trap`]; the CPU is stopped meanwhile.
pub trait FirmwareHost {
    /// Port I/O exactly as the CPU would do it (PIC, PIT, RTC, PCI config, i8042, 0xE9).
    fn io_read(&mut self, port: u16, size: u8) -> u32;
    fn io_write(&mut self, port: u16, size: u8, value: u32);
    /// The drive, if attached.
    fn disk_info(&self, drive: DiskId) -> Option<DiskInfo>;
    /// Reads `buf.len() / sector_size` whole sectors starting at `lba`.
    fn disk_read(&mut self, drive: DiskId, lba: u64, buf: &mut [u8]) -> Result<(), DiskIoError>;
    fn disk_write(&mut self, drive: DiskId, lba: u64, buf: &[u8]) -> Result<(), DiskIoError>;
    /// Floppy drive `n` exists, with or without a disk in it.
    fn floppy_installed(&self, n: u8) -> bool {
        self.disk_info(DiskId::Floppy(n)).is_some()
    }
    /// The change line of floppy drive `n`, taken: true once after a disk was inserted or
    /// ejected (INT 13h AH=16h). Hosts that never change media never report one.
    fn take_floppy_change(&mut self, _n: u8) -> bool {
        false
    }
    /// Virtual time in nanoseconds (deterministic in headless mode).
    fn now_ns(&self) -> u64;
}
