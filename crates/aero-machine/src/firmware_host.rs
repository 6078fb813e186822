//! What our BIOS sees of the machine while it handles a trap: port I/O and the disks.

use aero_firmware::bios::{DiskId, DiskInfo, DiskIoError, DiskLocation, DiskPort, FirmwareHost};
use aero_storage::{BlockDevice, StorageError};

use crate::DriveSlot;
use crate::devices::pc_pci;
use crate::platform::Platform;

/// The machine's disks, by BIOS role.
pub struct Disks {
    /// INT 13h drives 80h, 81h, ...: `hda` first (the one our BIOS boots), then the other
    /// hard disks in slot order.
    pub hard: Vec<Box<dyn BlockDevice>>,
    /// Where each of `hard` is plugged in (same order).
    pub hard_slots: Vec<DriveSlot>,
    pub cdrom: Option<Box<dyn BlockDevice>>,
    pub fda: Option<Box<dyn BlockDevice>>,
    /// The floppy in drive A was changed since INT 13h last looked (AH=16h change line).
    pub fda_changed: bool,
}

impl Disks {
    fn get(&mut self, drive: DiskId) -> Option<&mut Box<dyn BlockDevice>> {
        match drive {
            DiskId::HardDisk(n) => self.hard.get_mut(usize::from(n)),
            DiskId::Cdrom(0) => self.cdrom.as_mut(),
            DiskId::Floppy(0) => self.fda.as_mut(),
            _ => None,
        }
    }

    /// Makes every write durable (the user's data must survive an exit).
    pub fn flush(&mut self) -> Result<(), StorageError> {
        for disk in self.hard.iter_mut().chain(self.fda.as_mut()) {
            disk.flush()?;
        }
        Ok(())
    }
}

/// A drive slot as EDD 3.0 names it: the controller's PCI function and the port.
fn location(slot: DriveSlot) -> DiskLocation {
    let (pci, port) = match slot {
        DriveSlot::Ide { channel, slave } => (pc_pci::IDE, DiskPort::Ide { channel, slave }),
        DriveSlot::Ahci(port) => (pc_pci::AHCI, DiskPort::Sata { port }),
    };
    DiskLocation {
        pci_bus: pci.bus,
        pci_device: pci.device,
        pci_function: pci.function,
        port,
    }
}

pub struct Host<'a> {
    pub platform: &'a mut Platform,
    pub disks: &'a mut Disks,
}

fn disk_error(e: StorageError) -> DiskIoError {
    match e {
        StorageError::OutOfRange { .. } => DiskIoError::OutOfRange,
        StorageError::ReadOnly => DiskIoError::WriteProtected,
        other => {
            tracing::warn!("disk I/O error: {other}");
            DiskIoError::Io
        }
    }
}

impl FirmwareHost for Host<'_> {
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        aero_cpu::Bus::io_read(self.platform, port, size)
    }

    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        aero_cpu::Bus::io_write(self.platform, port, size, value)
    }

    fn disk_info(&self, drive: DiskId) -> Option<DiskInfo> {
        let (disk, slot) = match drive {
            DiskId::HardDisk(n) => {
                let n = usize::from(n);
                (
                    self.disks.hard.get(n),
                    self.disks.hard_slots.get(n).copied(),
                )
            }
            DiskId::Cdrom(0) => (
                self.disks.cdrom.as_ref(),
                Some(crate::machine::media::BIOS_CD_SLOT),
            ),
            DiskId::Floppy(0) => (self.disks.fda.as_ref(), None),
            _ => (None, None),
        };
        let disk = disk?;
        Some(DiskInfo {
            sectors: disk.sector_count(),
            sector_size: disk.sector_size(),
            read_only: disk.read_only(),
            location: slot.map(location),
        })
    }

    fn floppy_installed(&self, n: u8) -> bool {
        self.platform.fdc.drive_installed(usize::from(n))
    }

    fn take_floppy_change(&mut self, n: u8) -> bool {
        n == 0 && std::mem::take(&mut self.disks.fda_changed)
    }

    fn disk_read(&mut self, drive: DiskId, lba: u64, buf: &mut [u8]) -> Result<(), DiskIoError> {
        self.disks
            .get(drive)
            .ok_or(DiskIoError::NoDrive)?
            .read_sectors(lba, buf)
            .map_err(disk_error)
    }

    fn disk_write(&mut self, drive: DiskId, lba: u64, buf: &[u8]) -> Result<(), DiskIoError> {
        self.disks
            .get(drive)
            .ok_or(DiskIoError::NoDrive)?
            .write_sectors(lba, buf)
            .map_err(disk_error)
    }

    fn now_ns(&self) -> u64 {
        self.platform.clock.now()
    }
}
