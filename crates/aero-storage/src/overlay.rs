//! In-memory copy-on-write overlay (`--snapshot`): writes never reach the base image.

use std::collections::BTreeMap;

use crate::{BlockDevice, StorageError, check_range};

pub struct MemoryOverlay {
    base: Box<dyn BlockDevice>,
    /// Written sectors by LBA. BTreeMap keeps iteration deterministic.
    sectors: BTreeMap<u64, Box<[u8]>>,
}

impl MemoryOverlay {
    pub fn new(base: Box<dyn BlockDevice>) -> Self {
        MemoryOverlay {
            base,
            sectors: BTreeMap::new(),
        }
    }
}

impl BlockDevice for MemoryOverlay {
    fn sector_size(&self) -> u32 {
        self.base.sector_size()
    }
    fn sector_count(&self) -> u64 {
        self.base.sector_count()
    }
    fn read_only(&self) -> bool {
        false
    }
    fn read_sectors(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        check_range(self, lba, buf.len())?;
        let ss = self.sector_size() as usize;
        for (i, chunk) in buf.chunks_mut(ss).enumerate() {
            let n = lba + i as u64;
            match self.sectors.get(&n) {
                Some(data) => chunk.copy_from_slice(data),
                None => self.base.read_sectors(n, chunk)?,
            }
        }
        Ok(())
    }
    fn write_sectors(&mut self, lba: u64, buf: &[u8]) -> Result<(), StorageError> {
        check_range(self, lba, buf.len())?;
        let ss = self.sector_size() as usize;
        for (i, chunk) in buf.chunks(ss).enumerate() {
            self.sectors.insert(lba + i as u64, chunk.into());
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        Ok(())
    }
}
