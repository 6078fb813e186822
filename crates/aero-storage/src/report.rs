//! Host-side I/O failures told to the user. A controller turns any failed transfer into
//! the guest's error status (UNC, READ ERROR); without this the user would only see the
//! guest complain, never that the host disk is full or the image file went bad.

use crate::{BlockDevice, StorageError};

/// Warnings per image before the rest are only counted (a guest retries failing sectors).
const MAX_WARNINGS: u32 = 5;

/// Forwards everything to the image; host failures are logged as plain warnings.
pub struct ReportHostErrors {
    inner: Box<dyn BlockDevice>,
    name: String,
    warnings: u32,
}

impl ReportHostErrors {
    pub fn new(inner: Box<dyn BlockDevice>, name: String) -> ReportHostErrors {
        ReportHostErrors {
            inner,
            name,
            warnings: 0,
        }
    }

    fn check<T>(
        &mut self,
        what: &str,
        lba: u64,
        r: Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        if let Err(e) = &r {
            // Out-of-range and read-only accesses are the guest's doing, not the host's.
            let host_side = !matches!(e, StorageError::OutOfRange { .. } | StorageError::ReadOnly);
            if host_side {
                self.warnings = self.warnings.saturating_add(1);
                if self.warnings <= MAX_WARNINGS {
                    tracing::warn!(
                        "{}: {what} failed at sector {lba}: {e}; the guest sees a disk error{}",
                        self.name,
                        if self.warnings == MAX_WARNINGS {
                            " (further failures of this image are not shown)"
                        } else {
                            ""
                        }
                    );
                }
            }
        }
        r
    }

    /// Host failures so far (shown or not).
    #[cfg(test)]
    fn failures(&self) -> u32 {
        self.warnings
    }
}

impl BlockDevice for ReportHostErrors {
    fn sector_size(&self) -> u32 {
        self.inner.sector_size()
    }
    fn sector_count(&self) -> u64 {
        self.inner.sector_count()
    }
    fn read_only(&self) -> bool {
        self.inner.read_only()
    }
    fn read_sectors(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        let r = self.inner.read_sectors(lba, buf);
        self.check("read", lba, r)
    }
    fn write_sectors(&mut self, lba: u64, buf: &[u8]) -> Result<(), StorageError> {
        let r = self.inner.write_sectors(lba, buf);
        self.check("write", lba, r)
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        let r = self.inner.flush();
        self.check("flush", 0, r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryDisk;

    /// A disk whose host file system is full: writes fail like ENOSPC does.
    struct FullDisk(MemoryDisk);

    impl BlockDevice for FullDisk {
        fn sector_size(&self) -> u32 {
            self.0.sector_size()
        }
        fn sector_count(&self) -> u64 {
            self.0.sector_count()
        }
        fn read_only(&self) -> bool {
            false
        }
        fn read_sectors(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), StorageError> {
            self.0.read_sectors(lba, buf)
        }
        fn write_sectors(&mut self, _: u64, _: &[u8]) -> Result<(), StorageError> {
            Err(StorageError::Backend(std::io::Error::from_raw_os_error(28)))
        }
        fn flush(&mut self) -> Result<(), StorageError> {
            Ok(())
        }
    }

    #[test]
    fn host_failures_are_counted_and_passed_on_guest_mistakes_are_not() {
        let disk = FullDisk(MemoryDisk::new(vec![7; 4096], 512, false).unwrap());
        let mut d = ReportHostErrors::new(Box::new(disk), "full.img".into());
        let mut buf = [0u8; 512];
        d.read_sectors(1, &mut buf).unwrap();
        assert_eq!(buf[0], 7);
        for _ in 0..8 {
            let err = d.write_sectors(0, &buf).unwrap_err();
            assert!(matches!(err, StorageError::Backend(_)), "{err}");
        }
        assert_eq!(d.failures(), 8);
        let err = d.read_sectors(100, &mut buf).unwrap_err();
        assert!(matches!(err, StorageError::OutOfRange { .. }));
        assert_eq!(
            d.failures(),
            8,
            "a read past the end is the guest's mistake"
        );
        assert_eq!((d.sector_count(), d.sector_size()), (8, 512));
    }
}
