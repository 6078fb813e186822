//! VHD (Virtual PC / Hyper-V "vpc") images, fixed and dynamic: read and write.
//!
//! Layout: a 512-byte footer at the end (dynamic disks keep a copy at offset 0), for dynamic
//! disks a 1024-byte header pointing at the block allocation table (BAT); each allocated
//! block is a sector bitmap (which sectors hold data) followed by the block's data.
//!
//! Crash consistency of dynamic writes: a new block is placed where the footer was; the
//! footer is first rewritten past the new block (so the file always ends in a valid footer),
//! then the block (bitmap + data) is written, synced, and only then the BAT entry points at
//! it. Data of allocated blocks is written before its bitmap bits are set.
//! Not supported: differencing disks (parent locators).

use std::fs::File;
use std::path::Path;

use crate::fileio::{be_u16, be_u32, be_u64, put_be_u32, read_at, write_at};
use crate::{BlockDevice, StorageError, check_range};

const FOOTER_LEN: u64 = 512;
const DYN_HEADER_LEN: usize = 1024;
const UNALLOCATED: u32 = u32::MAX;
const TYPE_FIXED: u32 = 2;
const TYPE_DYNAMIC: u32 = 3;
const TYPE_DIFFERENCING: u32 = 4;
/// Bounds against hostile headers: the format's own maximum disk size is 2040 GiB.
const MAX_DISK_SIZE: u64 = 2040 << 30;
const MAX_BAT_ENTRIES: u32 = 1 << 22;
const MAX_BLOCK_SIZE: u32 = 256 << 20;

fn corrupt(path: &str, what: impl Into<String>) -> StorageError {
    StorageError::Corrupt {
        path: path.to_string(),
        what: what.into(),
    }
}

/// One's complement of the byte sum, skipping the 4-byte checksum field at `skip`.
fn checksum(bytes: &[u8], skip: usize) -> u32 {
    let sum = bytes
        .iter()
        .enumerate()
        .filter(|(i, _)| !(skip..skip + 4).contains(i))
        .fold(0u32, |acc, (_, &b)| acc.wrapping_add(b as u32));
    !sum
}

fn valid_footer(footer: &[u8]) -> bool {
    footer.len() == FOOTER_LEN as usize
        && &footer[..8] == b"conectix"
        && be_u32(footer, 64) == checksum(footer, 64)
}

/// The guest-visible size. Virtual PC and QEMU's older writer size disks by CHS geometry,
/// Hyper-V and most others by the footer's current size (the same table QEMU uses), and a
/// maximal geometry means the geometry could not express the size.
fn disk_size(footer: &[u8]) -> u64 {
    let cylinders = be_u16(footer, 56) as u64;
    let heads = footer[58] as u64;
    let sectors = footer[59] as u64;
    let current = be_u64(footer, 48);
    let max_chs = cylinders == 65535 && heads == 16 && sectors == 255;
    let chs_creator = matches!(&footer[28..32], b"vpc " | b"qemu");
    if chs_creator && !max_chs {
        cylinders * heads * sectors * 512
    } else {
        current
    }
}

enum Layout {
    Fixed,
    Dynamic {
        bat: Vec<u32>,
        bat_offset: u64,
        block_size: u64,
        /// Sector bitmap size, rounded up to whole sectors.
        bitmap_len: u64,
    },
}

pub struct VhdImage {
    file: File,
    path: String,
    sector_size: u32,
    read_only: bool,
    size: u64,
    footer: Vec<u8>,
    /// Where the trailing footer starts (dynamic disks grow by moving it).
    footer_offset: u64,
    layout: Layout,
}

impl VhdImage {
    pub(crate) fn open(
        file: File,
        path: &Path,
        sector_size: u32,
        read_only: bool,
    ) -> Result<Self, StorageError> {
        let p = path.display().to_string();
        let io = |e| StorageError::Io {
            path: p.clone(),
            error: e,
        };
        let file_len = file.metadata().map_err(io)?.len();
        if file_len < FOOTER_LEN {
            return Err(corrupt(&p, "truncated VHD (no footer)"));
        }
        if sector_size == 0 || !sector_size.is_power_of_two() {
            return Err(StorageError::Unsupported {
                path: p,
                what: format!("bad sector size {sector_size}"),
            });
        }
        let footer_offset = file_len - FOOTER_LEN;
        let mut footer = vec![0u8; FOOTER_LEN as usize];
        read_at(&file, footer_offset, &mut footer).map_err(io)?;
        if !valid_footer(&footer) {
            // A crash or truncation can cost the trailing footer; dynamic disks keep a copy.
            let mut copy = vec![0u8; FOOTER_LEN as usize];
            read_at(&file, 0, &mut copy).map_err(io)?;
            if !valid_footer(&copy) || be_u32(&copy, 60) != TYPE_DYNAMIC {
                let what = if &footer[..8] == b"conectix" {
                    "VHD footer checksum mismatch"
                } else {
                    "VHD footer missing"
                };
                return Err(corrupt(&p, what));
            }
            tracing::warn!(path = %p, "VHD footer at the end is damaged; using the copy at the start");
            footer = copy;
        }
        if be_u32(&footer, 12) >> 16 != 1 {
            return Err(StorageError::Unsupported {
                path: p,
                what: format!("VHD version {:#x}", be_u32(&footer, 12)),
            });
        }
        let size = disk_size(&footer);
        if size > MAX_DISK_SIZE {
            return Err(corrupt(
                &p,
                format!("VHD disk size {size} exceeds the format's 2040 GiB"),
            ));
        }
        let layout = match be_u32(&footer, 60) {
            TYPE_FIXED => {
                if size > footer_offset {
                    return Err(corrupt(
                        &p,
                        format!("fixed VHD claims {size} bytes but holds {footer_offset}"),
                    ));
                }
                Layout::Fixed
            }
            TYPE_DYNAMIC => open_dynamic(&file, &p, &footer, size, footer_offset)?,
            TYPE_DIFFERENCING => {
                return Err(StorageError::Unsupported {
                    path: p,
                    what: "differencing VHD images are not supported".into(),
                });
            }
            other => return Err(corrupt(&p, format!("unknown VHD disk type {other}"))),
        };
        Ok(VhdImage {
            file,
            path: p,
            sector_size,
            read_only,
            size,
            footer,
            footer_offset,
            layout,
        })
    }

    fn io(&self, source: std::io::Error) -> StorageError {
        StorageError::Io {
            path: self.path.clone(),
            error: source,
        }
    }

    /// Reads guest bytes inside one dynamic block (`within` is the offset inside it).
    fn read_in_block(&self, block: u64, within: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        let Layout::Dynamic {
            bat, bitmap_len, ..
        } = &self.layout
        else {
            return Ok(());
        };
        let entry = bat.get(block as usize).copied().unwrap_or(UNALLOCATED);
        if entry == UNALLOCATED {
            buf.fill(0);
            return Ok(());
        }
        let start = entry as u64 * 512;
        read_at(&self.file, start + bitmap_len + within, buf).map_err(|e| self.io(e))?;
        // Sectors whose bitmap bit is clear hold no data in this image: they read as zeros.
        let first = within / 512;
        let count = (buf.len() as u64).div_ceil(512);
        let bitmap = self.read_bitmap(start, first, count)?;
        for (i, sector) in buf.chunks_mut(512).enumerate() {
            let bit = i as u64 + first % 8;
            if bitmap
                .get((bit / 8) as usize)
                .is_none_or(|b| b & (0x80 >> (bit % 8)) == 0)
            {
                sector.fill(0);
            }
        }
        Ok(())
    }

    /// Bitmap bytes covering sectors `first..first + count` of a block (byte-aligned start).
    fn read_bitmap(
        &self,
        block_start: u64,
        first: u64,
        count: u64,
    ) -> Result<Vec<u8>, StorageError> {
        let from = first / 8;
        let to = (first + count).div_ceil(8);
        let mut bytes = vec![0u8; (to - from) as usize];
        read_at(&self.file, block_start + from, &mut bytes).map_err(|e| self.io(e))?;
        Ok(bytes)
    }

    fn write_in_block(&mut self, block: u64, within: u64, data: &[u8]) -> Result<(), StorageError> {
        let Layout::Dynamic {
            bat,
            bat_offset,
            block_size,
            bitmap_len,
        } = &self.layout
        else {
            return Ok(());
        };
        let (bat_offset, block_size, bitmap_len) = (*bat_offset, *block_size, *bitmap_len);
        let entry = bat.get(block as usize).copied().unwrap_or(UNALLOCATED);
        let first = within / 512;
        let count = (data.len() as u64).div_ceil(512);
        if entry != UNALLOCATED {
            let start = entry as u64 * 512;
            write_at(&self.file, start + bitmap_len + within, data).map_err(|e| self.io(e))?;
            let mut bitmap = self.read_bitmap(start, first, count)?;
            let before = bitmap.clone();
            set_bits(&mut bitmap, first % 8, count);
            if bitmap != before {
                write_at(&self.file, start + first / 8, &bitmap).map_err(|e| self.io(e))?;
            }
            return Ok(());
        }
        // New block where the footer was; the footer moves past it first.
        let start = self.footer_offset.div_ceil(512) * 512;
        let sector_index = start / 512;
        let Ok(sector_index) = u32::try_from(sector_index) else {
            return Err(corrupt(&self.path, "VHD file too large for a new block"));
        };
        if sector_index == UNALLOCATED {
            return Err(corrupt(&self.path, "VHD file too large for a new block"));
        }
        let new_footer_offset = start + bitmap_len + block_size;
        write_at(&self.file, new_footer_offset, &self.footer).map_err(|e| self.io(e))?;
        // The footer write extended the file, so the block reads as zeros already (a hole
        // on most file systems): only the bitmap (which also covers the old footer) and the
        // new data need writing, whatever the block size.
        let mut bitmap = vec![0u8; bitmap_len as usize];
        set_bits(&mut bitmap, first, count);
        write_at(&self.file, start, &bitmap).map_err(|e| self.io(e))?;
        write_at(&self.file, start + bitmap_len + within, data).map_err(|e| self.io(e))?;
        self.file.sync_data().map_err(|e| self.io(e))?;
        let mut raw = [0u8; 4];
        put_be_u32(&mut raw, 0, sector_index);
        write_at(&self.file, bat_offset + block * 4, &raw).map_err(|e| self.io(e))?;
        self.footer_offset = new_footer_offset;
        if let Layout::Dynamic { bat, .. } = &mut self.layout
            && let Some(slot) = bat.get_mut(block as usize)
        {
            *slot = sector_index;
        }
        Ok(())
    }

    /// Splits a byte range into per-block pieces: (block, offset inside block, range in buf).
    fn pieces(&self, offset: u64, len: usize) -> Vec<(u64, u64, std::ops::Range<usize>)> {
        let Layout::Dynamic { block_size, .. } = &self.layout else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut done = 0usize;
        while done < len {
            let at = offset + done as u64;
            let within = at % block_size;
            let n = ((block_size - within) as usize).min(len - done);
            out.push((at / block_size, within, done..done + n));
            done += n;
        }
        out
    }
}

/// Sets `count` bits from bit `first` (most significant bit first, as VHD bitmaps are).
fn set_bits(bitmap: &mut [u8], first: u64, count: u64) {
    for bit in first..first + count {
        if let Some(b) = bitmap.get_mut((bit / 8) as usize) {
            *b |= 0x80 >> (bit % 8);
        }
    }
}

fn open_dynamic(
    file: &File,
    p: &str,
    footer: &[u8],
    size: u64,
    footer_offset: u64,
) -> Result<Layout, StorageError> {
    let io = |e| StorageError::Io {
        path: p.to_string(),
        error: e,
    };
    let header_offset = be_u64(footer, 16);
    if header_offset
        .checked_add(DYN_HEADER_LEN as u64)
        .is_none_or(|end| end > footer_offset)
    {
        return Err(corrupt(p, "VHD dynamic header beyond the end of the file"));
    }
    let mut header = vec![0u8; DYN_HEADER_LEN];
    read_at(file, header_offset, &mut header).map_err(io)?;
    if &header[..8] != b"cxsparse" {
        return Err(corrupt(p, "VHD dynamic header cookie missing"));
    }
    if be_u32(&header, 36) != checksum(&header, 36) {
        return Err(corrupt(p, "VHD dynamic header checksum mismatch"));
    }
    let bat_offset = be_u64(&header, 16);
    let entries = be_u32(&header, 28);
    let block_size = be_u32(&header, 32);
    if !block_size.is_power_of_two() || !(4096..=MAX_BLOCK_SIZE).contains(&block_size) {
        return Err(corrupt(
            p,
            format!("VHD block size {block_size} is not a power of two in 4 KiB..256 MiB"),
        ));
    }
    if entries > MAX_BAT_ENTRIES {
        return Err(corrupt(
            p,
            format!("VHD block table of {entries} entries is too large"),
        ));
    }
    if (entries as u64) * (block_size as u64) < size {
        return Err(corrupt(p, "VHD block table does not cover the disk size"));
    }
    let bat_len = entries as u64 * 4;
    let bat_end = bat_offset.saturating_add(bat_len);
    if bat_end > footer_offset || bat_offset < FOOTER_LEN {
        return Err(corrupt(p, "VHD block table outside the file"));
    }
    if bat_offset < header_offset + DYN_HEADER_LEN as u64 && header_offset < bat_end {
        return Err(corrupt(p, "VHD block table overlaps the dynamic header"));
    }
    let mut raw = vec![0u8; bat_len as usize];
    read_at(file, bat_offset, &mut raw).map_err(io)?;
    let bat = raw.chunks_exact(4).map(|c| be_u32(c, 0)).collect();
    let sectors_per_block = block_size as u64 / 512;
    let bitmap_len = sectors_per_block.div_ceil(8).div_ceil(512) * 512;
    Ok(Layout::Dynamic {
        bat,
        bat_offset,
        block_size: block_size as u64,
        bitmap_len,
    })
}

impl BlockDevice for VhdImage {
    fn sector_size(&self) -> u32 {
        self.sector_size
    }
    fn sector_count(&self) -> u64 {
        self.size / self.sector_size as u64
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn read_sectors(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        check_range(self, lba, buf.len())?;
        let offset = lba * self.sector_size as u64;
        if let Layout::Fixed = self.layout {
            return read_at(&self.file, offset, buf).map_err(|e| self.io(e));
        }
        for (block, within, range) in self.pieces(offset, buf.len()) {
            self.read_in_block(block, within, &mut buf[range])?;
        }
        Ok(())
    }
    fn write_sectors(&mut self, lba: u64, buf: &[u8]) -> Result<(), StorageError> {
        if self.read_only {
            return Err(StorageError::ReadOnly);
        }
        check_range(self, lba, buf.len())?;
        let offset = lba * self.sector_size as u64;
        if let Layout::Fixed = self.layout {
            return write_at(&self.file, offset, buf).map_err(|e| self.io(e));
        }
        for (block, within, range) in self.pieces(offset, buf.len()) {
            self.write_in_block(block, within, &buf[range])?;
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        if self.read_only {
            return Ok(());
        }
        self.file.sync_data().map_err(|e| self.io(e))
    }
}
