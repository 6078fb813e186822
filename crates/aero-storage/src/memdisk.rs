//! A disk held in a byte vector: built-in images such as the demo guest's.

use crate::{BlockDevice, StorageError, check_range};

pub struct MemoryDisk {
    data: Vec<u8>,
    sector_size: u32,
    read_only: bool,
}

impl MemoryDisk {
    /// A disk of `data`; a trailing partial sector is ignored, like a raw image file's.
    pub fn new(data: Vec<u8>, sector_size: u32, read_only: bool) -> Result<Self, StorageError> {
        if sector_size == 0 || !sector_size.is_power_of_two() {
            return Err(StorageError::Unsupported {
                path: "<memory>".into(),
                what: format!("bad sector size {sector_size}"),
            });
        }
        Ok(MemoryDisk {
            data,
            sector_size,
            read_only,
        })
    }

    fn range(&self, lba: u64, len: usize) -> Result<std::ops::Range<usize>, StorageError> {
        check_range(self, lba, len)?;
        // check_range proved lba + len/sector_size <= sector_count, so this fits the Vec.
        let start = lba as usize * self.sector_size as usize;
        Ok(start..start + len)
    }
}

impl BlockDevice for MemoryDisk {
    fn sector_size(&self) -> u32 {
        self.sector_size
    }
    fn sector_count(&self) -> u64 {
        self.data.len() as u64 / u64::from(self.sector_size)
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn read_sectors(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        let r = self.range(lba, buf.len())?;
        buf.copy_from_slice(&self.data[r]);
        Ok(())
    }
    fn write_sectors(&mut self, lba: u64, buf: &[u8]) -> Result<(), StorageError> {
        if self.read_only {
            return Err(StorageError::ReadOnly);
        }
        let r = self.range(lba, buf.len())?;
        self.data[r].copy_from_slice(buf);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_writes_and_bounds() {
        let mut data = vec![0u8; 4 * 512 + 100];
        data[512] = 7;
        let mut d = MemoryDisk::new(data, 512, false).unwrap();
        assert_eq!(d.sector_count(), 4);
        let mut buf = [0u8; 512];
        d.read_sectors(1, &mut buf).unwrap();
        assert_eq!(buf[0], 7);
        d.write_sectors(3, &[9; 512]).unwrap();
        d.read_sectors(3, &mut buf).unwrap();
        assert_eq!(buf, [9; 512]);
        assert!(d.read_sectors(4, &mut buf).is_err());
        assert!(d.read_sectors(u64::MAX, &mut buf).is_err());
        assert!(d.read_sectors(0, &mut [0u8; 100]).is_err());
        assert!(MemoryDisk::new(vec![], 0, false).is_err());
    }

    #[test]
    fn read_only_refuses_writes() {
        let mut d = MemoryDisk::new(vec![1; 1024], 512, true).unwrap();
        assert!(matches!(
            d.write_sectors(0, &[0; 512]),
            Err(StorageError::ReadOnly)
        ));
        let mut buf = [0u8; 512];
        d.read_sectors(0, &mut buf).unwrap();
        assert_eq!(buf, [1; 512]);
    }
}
