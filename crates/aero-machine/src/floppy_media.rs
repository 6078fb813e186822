//! Host media change for floppy drive A: the disk is shared by the floppy controller (its
//! change line, DIR bit 7) and our BIOS (INT 13h AH=16h), so both learn about a swap.
//! A disk taken out is flushed first: whatever the guest wrote is on the host file.

use aero_storage::{BlockDevice, SharedDisk};

use super::{Machine, MachineError};

/// Floppy drive A as the host sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloppyStatus {
    /// A disk is in the drive.
    pub medium: bool,
}

impl Machine {
    /// Drive A, if the machine has one (it is installed by starting with a floppy).
    pub fn floppy_drive(&self) -> Option<FloppyStatus> {
        let fdc = &self.platform.fdc;
        fdc.drive_installed(0).then(|| FloppyStatus {
            medium: fdc.has_disk(0),
        })
    }

    /// Takes the disk out of drive A (flushing what the guest wrote); the guest sees a
    /// disk change. An empty drive is no error.
    pub fn eject_floppy(&mut self) -> Result<(), MachineError> {
        self.require_floppy_drive()?;
        // The FDC and the BIOS hold handles of one shared disk: one flush covers both, and
        // a disk that cannot be flushed stays in (nothing the guest wrote is dropped).
        if let Some(disk) = self.disks.fda.as_mut() {
            disk.flush()?;
        }
        // The file is closed (and its lock released) with the last handle.
        self.platform.fdc.eject_disk(0);
        self.disks.fda = None;
        self.disks.fda_changed = true;
        tracing::info!("floppy ejected");
        Ok(())
    }

    /// Puts `disk` (512-byte sectors) into drive A, taking out (and flushing) the one
    /// there; the guest sees a disk change.
    pub fn insert_floppy(&mut self, disk: Box<dyn BlockDevice>) -> Result<(), MachineError> {
        self.require_floppy_drive()?;
        if disk.sector_size() != 512 {
            return Err(MachineError::Config(format!(
                "a floppy image has 512-byte sectors, not {}",
                disk.sector_size()
            )));
        }
        self.eject_floppy()?;
        let disk = SharedDisk::new(disk);
        self.platform
            .fdc
            .insert_disk(0, Box::new(disk.clone()))
            .map_err(MachineError::Config)?;
        self.disks.fda = Some(Box::new(disk));
        self.disks.fda_changed = true;
        tracing::info!("floppy inserted");
        Ok(())
    }

    fn require_floppy_drive(&self) -> Result<(), MachineError> {
        if self.platform.fdc.drive_installed(0) {
            Ok(())
        } else {
            Err(MachineError::Config(
                "this machine has no floppy drive (start it with --fda to have one)".into(),
            ))
        }
    }
}
