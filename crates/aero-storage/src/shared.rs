//! One disk seen by two users: the BIOS (INT 13h) and a storage controller share the same
//! image, so both must write through one object.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::{BlockDevice, StorageError};

/// A cloneable handle to one block device; every clone reads and writes the same image.
#[derive(Clone)]
pub struct SharedDisk {
    inner: Arc<Mutex<Box<dyn BlockDevice>>>,
    sector_size: u32,
    sector_count: u64,
    read_only: bool,
}

impl SharedDisk {
    pub fn new(device: Box<dyn BlockDevice>) -> SharedDisk {
        SharedDisk {
            sector_size: device.sector_size(),
            sector_count: device.sector_count(),
            read_only: device.read_only(),
            inner: Arc::new(Mutex::new(device)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Box<dyn BlockDevice>> {
        // A panic while holding the lock cannot leave a half-updated image behind that a
        // later user could make worse than the panic already did; keep going.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl BlockDevice for SharedDisk {
    fn sector_size(&self) -> u32 {
        self.sector_size
    }
    fn sector_count(&self) -> u64 {
        self.sector_count
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn read_sectors(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        self.lock().read_sectors(lba, buf)
    }
    fn write_sectors(&mut self, lba: u64, buf: &[u8]) -> Result<(), StorageError> {
        self.lock().write_sectors(lba, buf)
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        self.lock().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_image() {
        let mut a = SharedDisk::new(Box::new(
            crate::MemoryDisk::new(vec![0; 4096], 512, false).unwrap(),
        ));
        let mut b = a.clone();
        a.write_sectors(2, &[0xAB; 512]).unwrap();
        let mut buf = [0u8; 512];
        b.read_sectors(2, &mut buf).unwrap();
        assert_eq!(buf, [0xAB; 512]);
        assert_eq!(b.sector_count(), 8);
        assert!(b.read_sectors(8, &mut buf).is_err());
    }
}
