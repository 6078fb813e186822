//! Opening disk image files: format detection and the raw format.

use std::fs::{File, OpenOptions as FsOpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::report::ReportHostErrors;
use crate::{BlockDevice, MemoryOverlay, Qcow2Image, StorageError, VhdImage, check_range};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    Raw,
    Qcow2,
    Vhd,
}

#[derive(Clone, Debug)]
pub struct OpenOptions {
    pub read_only: bool,
    /// Writes go to an in-memory overlay; the file is opened read-only.
    pub snapshot: bool,
    /// Bytes per sector: 512 for disks, 2048 for CD images.
    pub sector_size: u32,
    /// Force a format instead of detecting it from the header.
    pub format: Option<ImageFormat>,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            read_only: false,
            snapshot: false,
            sector_size: 512,
            format: None,
        }
    }
}

fn io_err(path: &Path, source: std::io::Error) -> StorageError {
    StorageError::Io {
        path: path.display().to_string(),
        error: source,
    }
}

/// Detects the format from the file's first bytes (and the VHD footer).
fn detect(file: &mut File, path: &Path) -> Result<ImageFormat, StorageError> {
    let mut head = [0u8; 8];
    let len = file.metadata().map_err(|e| io_err(path, e))?.len();
    let n = file.read(&mut head).map_err(|e| io_err(path, e))?;
    if n >= 4 && &head[..4] == b"QFI\xfb" {
        return Ok(ImageFormat::Qcow2);
    }
    if n >= 8 && &head == b"conectix" {
        return Ok(ImageFormat::Vhd);
    }
    if len >= 512 {
        let mut foot = [0u8; 8];
        file.seek(SeekFrom::Start(len - 512))
            .map_err(|e| io_err(path, e))?;
        file.read_exact(&mut foot).map_err(|e| io_err(path, e))?;
        if &foot == b"conectix" {
            return Ok(ImageFormat::Vhd);
        }
    }
    Ok(ImageFormat::Raw)
}

/// Detects an image file's format from its contents.
pub fn probe_format(path: &Path) -> Result<ImageFormat, StorageError> {
    let mut file = File::open(path).map_err(|e| io_err(path, e))?;
    detect(&mut file, path)
}

/// Opens a disk image, detecting its format, honouring read-only and snapshot modes.
pub fn open_image(path: &Path, opts: &OpenOptions) -> Result<Box<dyn BlockDevice>, StorageError> {
    let writable = !opts.read_only && !opts.snapshot;
    let dev = open_file(path, opts.format, opts.sector_size, writable, 0)?;
    let dev: Box<dyn BlockDevice> = if opts.snapshot {
        Box::new(MemoryOverlay::new(dev))
    } else {
        dev
    };
    Ok(Box::new(ReportHostErrors::new(
        dev,
        path.display().to_string(),
    )))
}

/// Opens a backing file (read-only, 512-byte sectors) at chain depth `depth`.
pub(crate) fn open_backing(
    path: &Path,
    format: Option<ImageFormat>,
    depth: u32,
) -> Result<Box<dyn BlockDevice>, StorageError> {
    open_file(path, format, 512, false, depth)
}

fn open_file(
    path: &Path,
    format: Option<ImageFormat>,
    sector_size: u32,
    writable: bool,
    depth: u32,
) -> Result<Box<dyn BlockDevice>, StorageError> {
    let mut file = FsOpenOptions::new()
        .read(true)
        .write(writable)
        .open(path)
        .map_err(|e| io_err(path, e))?;
    if writable {
        // A second emulator writing the same image would corrupt it.
        file.try_lock().map_err(|_| StorageError::Locked {
            path: path.display().to_string(),
        })?;
    }
    let format = match format {
        Some(f) => f,
        None => detect(&mut file, path)?,
    };
    tracing::debug!(path = %path.display(), ?format, writable, "opening disk image");
    Ok(match format {
        ImageFormat::Raw => Box::new(RawImage::new(file, path, sector_size, !writable)?),
        ImageFormat::Qcow2 => {
            Box::new(Qcow2Image::open(file, path, sector_size, !writable, depth)?)
        }
        ImageFormat::Vhd => Box::new(VhdImage::open(file, path, sector_size, !writable)?),
    })
}

/// A raw image: sector N is at byte N * sector_size. A trailing partial sector is ignored.
pub struct RawImage {
    file: File,
    sector_size: u32,
    sectors: u64,
    read_only: bool,
}

impl RawImage {
    pub fn new(
        file: File,
        path: &Path,
        sector_size: u32,
        read_only: bool,
    ) -> Result<Self, StorageError> {
        let len = file.metadata().map_err(|e| io_err(path, e))?.len();
        if sector_size == 0 || !sector_size.is_power_of_two() {
            return Err(StorageError::Unsupported {
                path: path.display().to_string(),
                what: format!("bad sector size {sector_size}"),
            });
        }
        Ok(RawImage {
            file,
            sector_size,
            sectors: len / sector_size as u64,
            read_only,
        })
    }
}

impl BlockDevice for RawImage {
    fn sector_size(&self) -> u32 {
        self.sector_size
    }
    fn sector_count(&self) -> u64 {
        self.sectors
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn read_sectors(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        check_range(self, lba, buf.len())?;
        self.file
            .seek(SeekFrom::Start(lba * self.sector_size as u64))
            .map_err(StorageError::Backend)?;
        self.file.read_exact(buf).map_err(StorageError::Backend)
    }
    fn write_sectors(&mut self, lba: u64, buf: &[u8]) -> Result<(), StorageError> {
        if self.read_only {
            return Err(StorageError::ReadOnly);
        }
        check_range(self, lba, buf.len())?;
        self.file
            .seek(SeekFrom::Start(lba * self.sector_size as u64))
            .map_err(StorageError::Backend)?;
        self.file.write_all(buf).map_err(StorageError::Backend)
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        if self.read_only {
            return Ok(());
        }
        self.file.sync_data().map_err(StorageError::Backend)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image_with(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    #[test]
    fn raw_read_write_and_bounds() {
        let mut data = vec![0u8; 4 * 512];
        data[512] = 0xAB;
        let f = image_with(&data);
        let mut dev = open_image(f.path(), &OpenOptions::default()).unwrap();
        assert_eq!(dev.sector_count(), 4);
        let mut buf = [0u8; 512];
        dev.read_sectors(1, &mut buf).unwrap();
        assert_eq!(buf[0], 0xAB);
        dev.write_sectors(3, &[0x5A; 512]).unwrap();
        dev.flush().unwrap();
        assert!(matches!(
            dev.read_sectors(4, &mut buf),
            Err(StorageError::OutOfRange { .. })
        ));
        assert!(matches!(
            dev.read_sectors(u64::MAX, &mut buf),
            Err(StorageError::OutOfRange { .. })
        ));
        drop(dev);
        assert_eq!(std::fs::read(f.path()).unwrap()[3 * 512], 0x5A);
    }

    #[test]
    fn second_writer_is_refused() {
        let f = image_with(&[0u8; 1024]);
        let _first = open_image(f.path(), &OpenOptions::default()).unwrap();
        let second = open_image(f.path(), &OpenOptions::default());
        assert!(matches!(second, Err(StorageError::Locked { .. })));
        // Read-only users do not need the lock.
        let ro = OpenOptions {
            read_only: true,
            ..Default::default()
        };
        assert!(open_image(f.path(), &ro).is_ok());
    }

    #[test]
    fn snapshot_never_writes_the_file() {
        let f = image_with(&[7u8; 1024]);
        let opts = OpenOptions {
            snapshot: true,
            ..Default::default()
        };
        let mut dev = open_image(f.path(), &opts).unwrap();
        dev.write_sectors(0, &[1u8; 512]).unwrap();
        let mut buf = [0u8; 512];
        dev.read_sectors(0, &mut buf).unwrap();
        assert_eq!(buf, [1u8; 512]);
        dev.flush().unwrap();
        drop(dev);
        assert_eq!(std::fs::read(f.path()).unwrap(), vec![7u8; 1024]);
    }
}
