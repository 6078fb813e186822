//! Disk images behind one block-device trait, used by the BIOS (INT 13h) and by the
//! storage controllers alike.
//!
//! - [`open_image`] opens raw, qcow2 (v2/v3, backing chains, compressed and zero clusters)
//!   and VHD (fixed/dynamic) files, format detected or forced with [`OpenOptions::format`];
//!   `read_only` never writes, `snapshot` keeps writes in memory, writable opens take an
//!   exclusive lock. Unsupported or corrupt images give one [`StorageError`], never a panic.
//! - [`create_qcow2`] / [`create_qcow2_overlay`] create images (`aero disk create`).
//! - [`ide`] is the ATA/ATAPI device logic of the PIIX3 IDE controller.
#![forbid(unsafe_code)]

pub mod ahci;
mod create;
mod fileio;
pub mod ide;
mod image;
mod memdisk;
mod overlay;
mod qcow2;
mod report;
mod shared;
mod vhd;

pub use create::create_qcow2_overlay;
pub use image::{ImageFormat, OpenOptions, RawImage, open_image, probe_format};
pub use memdisk::MemoryDisk;
pub use overlay::MemoryOverlay;
pub use qcow2::{Qcow2CreateOptions, Qcow2Image, create_qcow2};
pub use shared::SharedDisk;
pub use vhd::VhdImage;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum StorageError {
    /// The cause is part of the message (not a `source()`), so `{:#}` chains print it once.
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error("{path}: {what}")]
    Unsupported { path: String, what: String },
    #[error("{path}: corrupt or invalid image: {what}")]
    Corrupt { path: String, what: String },
    #[error("{path}: image is in use by another program (could not lock it for writing)")]
    Locked { path: String },
    #[error("access beyond the end of the disk (sector {lba}, {count} sectors, disk has {total})")]
    OutOfRange { lba: u64, count: u64, total: u64 },
    #[error("disk is read-only")]
    ReadOnly,
    #[error("I/O error: {0}")]
    Backend(std::io::Error),
}

/// A disk as a sequence of fixed-size sectors.
pub trait BlockDevice: Send {
    /// Bytes per sector (512 for disks, 2048 for CD-ROMs).
    fn sector_size(&self) -> u32;
    fn sector_count(&self) -> u64;
    fn read_only(&self) -> bool;
    /// Reads `buf.len() / sector_size` whole sectors starting at `lba`.
    fn read_sectors(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), StorageError>;
    fn write_sectors(&mut self, lba: u64, buf: &[u8]) -> Result<(), StorageError>;
    /// Make completed writes durable (guest FLUSH CACHE).
    fn flush(&mut self) -> Result<(), StorageError>;
}

/// Checks that `len` bytes at `lba` are whole sectors inside the device.
pub(crate) fn check_range(
    dev: &dyn BlockDevice,
    lba: u64,
    len: usize,
) -> Result<u64, StorageError> {
    let ss = dev.sector_size() as u64;
    let count = len as u64 / ss;
    let total = dev.sector_count();
    if !(len as u64).is_multiple_of(ss) || lba.checked_add(count).is_none_or(|end| end > total) {
        return Err(StorageError::OutOfRange { lba, count, total });
    }
    Ok(count)
}
