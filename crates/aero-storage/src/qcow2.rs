//! qcow2 images, versions 2 and 3: reads (incl. compressed clusters, zero clusters and
//! backing files) and writes (allocating writes keep refcounts consistent).
//!
//! Crash consistency: new clusters are only ever taken from the end of the file and every
//! metadata change is written in the order "refcount → data → L2 entry → L1 entry", so a
//! process killed between any two writes leaves at worst clusters whose refcount is set but
//! that nothing references (leaks, which `qemu-img check` reports but which are not
//! corruption). Before a reference to a freshly allocated cluster is written, the refcount
//! updates are synced to disk, so a power loss cannot reorder them either. `flush` syncs.
//!
//! Not supported: writing images with internal snapshots, lazy refcounts or the dirty bit
//! (reading works), encryption, external data files, extended L2 entries, zstd.

use std::fs::{File, OpenOptions as FsOpenOptions};
use std::path::{Path, PathBuf};

use crate::fileio::{be_u32, be_u64, put_be_u32, put_be_u64, read_at, write_at};
use crate::image::{ImageFormat, open_backing};
use crate::{BlockDevice, StorageError, check_range};

const MAGIC: &[u8; 4] = b"QFI\xfb";
const V2_HEADER_LEN: usize = 72;
const V3_HEADER_LEN: usize = 104;
/// Hostile headers must not make us allocate unbounded tables (same limits as QEMU).
const MAX_L1_BYTES: u64 = 32 << 20;
const MAX_REFCOUNT_TABLE_BYTES: u64 = 8 << 20;
const MAX_BACKING_NAME: u32 = 1023;
const MAX_BACKING_DEPTH: u32 = 16;
/// How many already-referenced clusters an allocation may skip before the image is
/// declared corrupt (refcounts claiming space far beyond the end of the file).
const MAX_ALLOCATION_SKIP: u32 = 1 << 16;

const OFFSET_MASK: u64 = 0x00ff_ffff_ffff_fe00;
const REFTABLE_OFFSET_MASK: u64 = 0xffff_ffff_ffff_fe00;
const FLAG_COPIED: u64 = 1 << 63;
const FLAG_COMPRESSED: u64 = 1 << 62;
const FLAG_ZERO: u64 = 1;

const INCOMPAT_DIRTY: u64 = 1 << 0;
const INCOMPAT_CORRUPT: u64 = 1 << 1;
const INCOMPAT_DATA_FILE: u64 = 1 << 2;
const INCOMPAT_COMPRESSION_TYPE: u64 = 1 << 3;
const INCOMPAT_EXTENDED_L2: u64 = 1 << 4;
const INCOMPAT_KNOWN: u64 = 0x1f;
const COMPAT_LAZY_REFCOUNTS: u64 = 1 << 0;

const EXT_END: u32 = 0;
const EXT_BACKING_FORMAT: u32 = 0xe279_2aca;

const L2_CACHE_TABLES: usize = 16;

fn corrupt(path: &str, what: impl Into<String>) -> StorageError {
    StorageError::Corrupt {
        path: path.to_string(),
        what: what.into(),
    }
}

fn unsupported(path: &str, what: impl Into<String>) -> StorageError {
    StorageError::Unsupported {
        path: path.to_string(),
        what: what.into(),
    }
}

/// The parsed, validated header.
#[derive(Clone, Debug)]
struct Header {
    version: u32,
    cluster_bits: u32,
    size: u64,
    l1_size: u32,
    l1_offset: u64,
    refcount_table_offset: u64,
    refcount_table_clusters: u32,
    nb_snapshots: u32,
    incompatible: u64,
    compatible: u64,
    autoclear: u64,
    refcount_order: u32,
    backing_name: Option<String>,
    backing_format: Option<String>,
}

/// Why an image may be read but not written (None: writable).
fn write_refusal(h: &Header) -> Option<&'static str> {
    if h.incompatible & INCOMPAT_CORRUPT != 0 {
        Some("image is marked corrupt; repair it with `qemu-img check -r all` before writing")
    } else if h.incompatible & INCOMPAT_DIRTY != 0 {
        Some(
            "image has the dirty bit set (lazy refcounts, not closed cleanly); run `qemu-img check -r all` before writing",
        )
    } else if h.compatible & COMPAT_LAZY_REFCOUNTS != 0 {
        Some(
            "lazy refcounts are enabled; writing is not supported (`qemu-img amend -o lazy_refcounts=off` turns them off)",
        )
    } else if h.nb_snapshots != 0 {
        Some(
            "image has internal snapshots; writing such images is not supported (open it read-only or with --snapshot)",
        )
    } else {
        None
    }
}

fn ranges_overlap(a: (u64, u64), b: (u64, u64)) -> bool {
    a.1 > a.0 && b.1 > b.0 && a.0 < b.1 && b.0 < a.1
}

/// Parses and validates the header. `head` holds the first `min(file_len, 2 MiB)` bytes.
fn parse_header(path: &str, head: &[u8], file_len: u64) -> Result<Header, StorageError> {
    if head.len() < V2_HEADER_LEN {
        return Err(corrupt(path, "truncated qcow2 header"));
    }
    if &head[..4] != MAGIC {
        return Err(corrupt(path, "not a qcow2 image (bad magic)"));
    }
    let version = be_u32(head, 4);
    if version != 2 && version != 3 {
        return Err(unsupported(
            path,
            format!("qcow2 version {version} (only 2 and 3 are supported)"),
        ));
    }
    let cluster_bits = be_u32(head, 20);
    if !(9..=21).contains(&cluster_bits) {
        return Err(corrupt(
            path,
            format!("cluster_bits {cluster_bits} outside 9..=21"),
        ));
    }
    let cluster_size = 1u64 << cluster_bits;
    if be_u32(head, 32) != 0 {
        return Err(unsupported(
            path,
            "encrypted qcow2 images are not supported",
        ));
    }
    let (incompatible, compatible, autoclear, refcount_order, header_len) = if version == 3 {
        if head.len() < V3_HEADER_LEN {
            return Err(corrupt(path, "truncated qcow2 v3 header"));
        }
        let len = be_u32(head, 100) as u64;
        if len < V3_HEADER_LEN as u64 || len > cluster_size || len > head.len() as u64 {
            return Err(corrupt(path, format!("bad header length {len}")));
        }
        (
            be_u64(head, 72),
            be_u64(head, 80),
            be_u64(head, 88),
            be_u32(head, 96),
            len as usize,
        )
    } else {
        (0, 0, 0, 4, V2_HEADER_LEN)
    };
    let unknown = incompatible & !INCOMPAT_KNOWN;
    if unknown != 0 {
        return Err(unsupported(
            path,
            format!("unknown incompatible qcow2 features {unknown:#x}"),
        ));
    }
    if incompatible & INCOMPAT_DATA_FILE != 0 {
        return Err(unsupported(
            path,
            "qcow2 images with an external data file are not supported",
        ));
    }
    if incompatible & INCOMPAT_EXTENDED_L2 != 0 {
        return Err(unsupported(
            path,
            "qcow2 images with extended L2 entries (subclusters) are not supported",
        ));
    }
    if incompatible & INCOMPAT_COMPRESSION_TYPE != 0 {
        let kind = if header_len > V3_HEADER_LEN {
            head[V3_HEADER_LEN]
        } else {
            0
        };
        if kind != 0 {
            return Err(unsupported(
                path,
                format!("qcow2 compression type {kind} (only zlib is supported)"),
            ));
        }
    }
    if refcount_order > 6 {
        return Err(corrupt(
            path,
            format!("refcount_order {refcount_order} > 6"),
        ));
    }

    let size = be_u64(head, 24);
    let l1_size = be_u32(head, 36);
    let l1_offset = be_u64(head, 40);
    let l2_entries = cluster_size / 8;
    let bytes_per_l1_entry = cluster_size * l2_entries;
    let l1_needed = size.div_ceil(bytes_per_l1_entry);
    let l1_bytes = l1_size as u64 * 8;
    if l1_bytes > MAX_L1_BYTES || l1_needed * 8 > MAX_L1_BYTES {
        return Err(unsupported(
            path,
            format!("virtual size {size} too large (L1 table over {MAX_L1_BYTES} bytes)"),
        ));
    }
    if (l1_size as u64) < l1_needed {
        return Err(corrupt(
            path,
            format!("L1 table has {l1_size} entries, {l1_needed} needed for the disk size"),
        ));
    }
    let l1_range = (l1_offset, l1_offset.saturating_add(l1_bytes));
    if l1_size != 0
        && (l1_offset == 0 || !l1_offset.is_multiple_of(cluster_size) || l1_range.1 > file_len)
    {
        return Err(corrupt(
            path,
            "L1 table offset misaligned or beyond the end of the file",
        ));
    }

    let rt_offset = be_u64(head, 48);
    let rt_clusters = be_u32(head, 56);
    let rt_bytes = rt_clusters as u64 * cluster_size;
    if rt_clusters == 0 || rt_bytes > MAX_REFCOUNT_TABLE_BYTES {
        return Err(corrupt(
            path,
            format!("refcount table of {rt_clusters} clusters is empty or too large"),
        ));
    }
    let rt_range = (rt_offset, rt_offset.saturating_add(rt_bytes));
    if rt_offset == 0 || !rt_offset.is_multiple_of(cluster_size) || rt_range.1 > file_len {
        return Err(corrupt(
            path,
            "refcount table offset misaligned or beyond the end of the file",
        ));
    }
    let header_range = (0, cluster_size);
    if ranges_overlap(l1_range, rt_range)
        || ranges_overlap(l1_range, header_range)
        || ranges_overlap(rt_range, header_range)
    {
        return Err(corrupt(path, "header, L1 table and refcount table overlap"));
    }

    let nb_snapshots = be_u32(head, 60);
    let snapshots_offset = be_u64(head, 64);
    if nb_snapshots != 0
        && (!snapshots_offset.is_multiple_of(cluster_size) || snapshots_offset >= file_len)
    {
        return Err(corrupt(
            path,
            "snapshot table offset misaligned or beyond the end of the file",
        ));
    }

    // Backing file name: inside the first cluster, bounded length, UTF-8.
    let backing_offset = be_u64(head, 8);
    let backing_len = be_u32(head, 16);
    let mut backing_name = None;
    let header_cluster_end = cluster_size.min(head.len() as u64);
    if backing_offset != 0 {
        let end = backing_offset.saturating_add(backing_len as u64);
        if backing_len == 0
            || backing_len > MAX_BACKING_NAME
            || end > header_cluster_end
            || backing_offset < header_len as u64
        {
            return Err(corrupt(
                path,
                "backing file name outside the header cluster or too long",
            ));
        }
        let bytes = &head[backing_offset as usize..end as usize];
        let name = std::str::from_utf8(bytes)
            .map_err(|_| corrupt(path, "backing file name is not UTF-8"))?;
        backing_name = Some(name.to_string());
    }

    // Header extensions: a bounded walk inside the header cluster (and before the name).
    let ext_end = if backing_offset != 0 {
        backing_offset
    } else {
        header_cluster_end
    };
    let mut backing_format = None;
    let mut pos = header_len as u64;
    while pos + 8 <= ext_end {
        let kind = be_u32(head, pos as usize);
        let len = be_u32(head, pos as usize + 4) as u64;
        if kind == EXT_END {
            break;
        }
        let data_start = pos + 8;
        let data_end = data_start + len;
        if data_end > ext_end {
            return Err(corrupt(
                path,
                format!("header extension {kind:#x} runs past the header"),
            ));
        }
        if kind == EXT_BACKING_FORMAT {
            let bytes = &head[data_start as usize..data_end as usize];
            let name = std::str::from_utf8(bytes)
                .map_err(|_| corrupt(path, "backing format name is not UTF-8"))?;
            backing_format = Some(name.to_string());
        }
        pos = data_start + len.div_ceil(8) * 8;
    }

    Ok(Header {
        version,
        cluster_bits,
        size,
        l1_size,
        l1_offset,
        refcount_table_offset: rt_offset,
        refcount_table_clusters: rt_clusters,
        nb_snapshots,
        incompatible,
        compatible,
        autoclear,
        refcount_order,
        backing_name,
        backing_format,
    })
}

/// What one L2 entry says about a guest cluster.
enum Mapping {
    Unallocated,
    /// Reads as zeros; a preallocated host cluster may be kept.
    Zero {
        host: u64,
    },
    Normal {
        host: u64,
    },
    Compressed {
        offset: u64,
        len: u64,
    },
}

/// A small most-recently-used cache of L2 tables (deterministic: a Vec, no hashing).
#[derive(Default)]
struct L2Cache {
    tables: Vec<(u64, Vec<u64>)>,
}

impl L2Cache {
    fn get(&mut self, offset: u64) -> Option<&mut Vec<u64>> {
        let pos = self.tables.iter().position(|(o, _)| *o == offset)?;
        if pos != 0 {
            let entry = self.tables.remove(pos);
            self.tables.insert(0, entry);
        }
        self.tables.first_mut().map(|(_, t)| t)
    }

    fn insert(&mut self, offset: u64, table: Vec<u64>) {
        self.tables.retain(|(o, _)| *o != offset);
        self.tables.insert(0, (offset, table));
        self.tables.truncate(L2_CACHE_TABLES);
    }
}

pub struct Qcow2Image {
    file: File,
    path: String,
    sector_size: u32,
    read_only: bool,
    header: Header,
    cluster_size: u64,
    file_len: u64,
    l1: Vec<u64>,
    refcount_table: Vec<u64>,
    backing: Option<Box<dyn BlockDevice>>,
    /// Next candidate for allocation (always at or past the end of the file).
    next_free: u64,
    /// Refcount updates written but not yet synced: sync before referencing new clusters.
    refcounts_unsynced: bool,
    l2_cache: L2Cache,
    /// Last decompressed cluster (host offset, data): sequential reads of compressed images.
    compressed_cache: Option<(u64, Vec<u8>)>,
    /// Clusters allocated up front for the current write request, so that one refcount
    /// sync covers the whole request instead of one sync per cluster.
    reserved: Vec<u64>,
}

impl Qcow2Image {
    /// Opens a qcow2 image. `file` must have been opened writable unless `read_only`.
    pub(crate) fn open(
        file: File,
        path: &Path,
        sector_size: u32,
        read_only: bool,
        depth: u32,
    ) -> Result<Self, StorageError> {
        let p = path.display().to_string();
        let io = |e| StorageError::Io {
            path: p.clone(),
            error: e,
        };
        let file_len = file.metadata().map_err(io)?.len();
        let mut head = vec![0u8; file_len.min(2 << 20) as usize];
        read_at(&file, 0, &mut head).map_err(io)?;
        let header = parse_header(&p, &head, file_len)?;
        drop(head);
        if !read_only && let Some(why) = write_refusal(&header) {
            return Err(unsupported(&p, why));
        }
        if sector_size == 0 || !sector_size.is_power_of_two() {
            return Err(unsupported(&p, format!("bad sector size {sector_size}")));
        }
        let cluster_size = 1u64 << header.cluster_bits;

        let mut l1_raw = vec![0u8; header.l1_size as usize * 8];
        read_at(&file, header.l1_offset, &mut l1_raw).map_err(io)?;
        let l1 = l1_raw.chunks_exact(8).map(|c| be_u64(c, 0)).collect();
        let mut rt_raw = vec![0u8; (header.refcount_table_clusters as u64 * cluster_size) as usize];
        read_at(&file, header.refcount_table_offset, &mut rt_raw).map_err(io)?;
        let refcount_table = rt_raw.chunks_exact(8).map(|c| be_u64(c, 0)).collect();

        let backing = match &header.backing_name {
            None => None,
            Some(name) => {
                if depth >= MAX_BACKING_DEPTH {
                    return Err(unsupported(
                        &p,
                        format!("backing file chain deeper than {MAX_BACKING_DEPTH}"),
                    ));
                }
                let format = match header.backing_format.as_deref() {
                    None => None,
                    Some("raw") => Some(ImageFormat::Raw),
                    Some("qcow2") => Some(ImageFormat::Qcow2),
                    Some("vpc") => Some(ImageFormat::Vhd),
                    Some(other) => {
                        return Err(unsupported(&p, format!("backing file format '{other}'")));
                    }
                };
                let backing_path = resolve_backing(path, name);
                Some(open_backing(&backing_path, format, depth + 1)?)
            }
        };

        let mut image = Qcow2Image {
            file,
            path: p,
            sector_size,
            read_only,
            cluster_size,
            file_len,
            l1,
            refcount_table,
            backing,
            next_free: file_len.div_ceil(cluster_size) * cluster_size,
            refcounts_unsynced: false,
            l2_cache: L2Cache::default(),
            compressed_cache: None,
            reserved: Vec::new(),
            header,
        };
        if !read_only && image.header.autoclear != 0 {
            // We do not maintain whatever these bits describe (e.g. bitmaps): the spec asks
            // writers that do not understand them to clear them.
            let mut buf = [0u8; 8];
            put_be_u64(&mut buf, 0, 0);
            image.write_meta(88, &buf)?;
            image.file.sync_data().map_err(|e| image.io(e))?;
            image.header.autoclear = 0;
        }
        Ok(image)
    }

    pub fn virtual_size(&self) -> u64 {
        self.header.size
    }

    fn io(&self, source: std::io::Error) -> StorageError {
        StorageError::Io {
            path: self.path.clone(),
            error: source,
        }
    }

    fn read_meta(&self, offset: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        read_at(&self.file, offset, buf).map_err(|e| self.io(e))
    }

    fn write_meta(&mut self, offset: u64, buf: &[u8]) -> Result<(), StorageError> {
        write_at(&self.file, offset, buf).map_err(|e| self.io(e))?;
        self.file_len = self.file_len.max(offset + buf.len() as u64);
        Ok(())
    }

    /// Makes written refcounts durable before anything references the clusters they cover.
    fn refcount_barrier(&mut self) -> Result<(), StorageError> {
        if self.refcounts_unsynced {
            self.file.sync_data().map_err(|e| self.io(e))?;
            self.refcounts_unsynced = false;
        }
        Ok(())
    }

    // ---- refcounts ----

    fn refcount_bits(&self) -> u64 {
        1 << self.header.refcount_order
    }

    fn refcounts_per_block(&self) -> u64 {
        self.cluster_size * 8 / self.refcount_bits()
    }

    /// (refcount block offset or 0, byte offset inside it, bit shift for sub-byte widths).
    fn refcount_slot(&self, cluster_index: u64) -> Result<Option<(u64, u64, u32)>, StorageError> {
        let per_block = self.refcounts_per_block();
        let Some(&entry) = self
            .refcount_table
            .get((cluster_index / per_block) as usize)
        else {
            return Ok(None);
        };
        let block = entry & REFTABLE_OFFSET_MASK;
        if block == 0 {
            return Ok(None);
        }
        if !block.is_multiple_of(self.cluster_size) {
            return Err(corrupt(
                &self.path,
                format!("refcount block at {block:#x} is not cluster aligned"),
            ));
        }
        let bit = (cluster_index % per_block) * self.refcount_bits();
        Ok(Some((block, bit / 8, (bit % 8) as u32)))
    }

    fn get_refcount(&self, cluster_index: u64) -> Result<u64, StorageError> {
        let Some((block, byte, shift)) = self.refcount_slot(cluster_index)? else {
            return Ok(0);
        };
        let bits = self.refcount_bits();
        let width = (bits / 8).max(1) as usize;
        let mut buf = [0u8; 8];
        self.read_meta(block + byte, &mut buf[..width])?;
        if bits < 8 {
            Ok(((buf[0] >> shift) as u64) & ((1 << bits) - 1))
        } else {
            Ok(buf[..width]
                .iter()
                .fold(0u64, |acc, &b| (acc << 8) | b as u64))
        }
    }

    fn set_refcount(&mut self, cluster_index: u64, value: u64) -> Result<(), StorageError> {
        let Some((block, byte, shift)) = self.refcount_slot(cluster_index)? else {
            return Err(corrupt(
                &self.path,
                "refcount block missing for an allocated cluster",
            ));
        };
        let bits = self.refcount_bits();
        let mut buf = [0u8; 8];
        let width = (bits / 8).max(1) as usize;
        if bits < 8 {
            self.read_meta(block + byte, &mut buf[..1])?;
            let mask = (((1u16 << bits) - 1) as u8) << shift;
            buf[0] = (buf[0] & !mask) | (((value as u8) << shift) & mask);
        } else {
            let bytes = value.to_be_bytes();
            buf[..width].copy_from_slice(&bytes[8 - width..]);
        }
        self.write_meta(block + byte, &buf[..width])?;
        self.refcounts_unsynced = true;
        Ok(())
    }

    /// Allocates one cluster with refcount 1 (written, not synced): a reserved one, or a
    /// new one at the end of the file.
    fn allocate_cluster(&mut self) -> Result<u64, StorageError> {
        if let Some(offset) = self.reserved.pop() {
            return Ok(offset);
        }
        self.allocate_new_cluster()
    }

    fn allocate_new_cluster(&mut self) -> Result<u64, StorageError> {
        let per_block = self.refcounts_per_block();
        let mut skipped = 0u32;
        loop {
            let offset = self.next_free;
            let index = offset / self.cluster_size;
            let block_index = index / per_block;
            if block_index >= self.refcount_table.len() as u64 {
                self.grow_refcount_table()?;
                continue;
            }
            if self.refcount_table[block_index as usize] & REFTABLE_OFFSET_MASK == 0 {
                // This cluster becomes the refcount block that covers it (and its successors).
                let mut block = vec![0u8; self.cluster_size as usize];
                encode_refcount(&mut block, index % per_block, self.header.refcount_order, 1);
                self.write_meta(offset, &block)?;
                self.file.sync_data().map_err(|e| self.io(e))?;
                let mut entry = [0u8; 8];
                put_be_u64(&mut entry, 0, offset);
                self.write_meta(self.header.refcount_table_offset + block_index * 8, &entry)?;
                self.refcount_table[block_index as usize] = offset;
                self.refcounts_unsynced = true;
                self.next_free += self.cluster_size;
                continue;
            }
            if self.get_refcount(index)? != 0 {
                // Leaked by an earlier crash (or a hostile image): never hand it out twice.
                skipped += 1;
                if skipped > MAX_ALLOCATION_SKIP {
                    return Err(corrupt(
                        &self.path,
                        "refcounts claim clusters far beyond the end of the file; run `qemu-img check -r all`",
                    ));
                }
                self.next_free += self.cluster_size;
                continue;
            }
            self.set_refcount(index, 1)?;
            self.next_free += self.cluster_size;
            return Ok(offset);
        }
    }

    /// Replaces the refcount table with a larger one at the end of the file, together with the
    /// refcount blocks that cover the new table itself. The header switches to the new table
    /// only once it is complete and synced; the old table's clusters are freed afterwards.
    fn grow_refcount_table(&mut self) -> Result<(), StorageError> {
        let cs = self.cluster_size;
        let per_block = self.refcounts_per_block();
        let entries_per_cluster = cs / 8;
        let start = self.next_free;
        let start_index = start / cs;
        let old_clusters = self.header.refcount_table_clusters as u64;
        let mut table_clusters = old_clusters * 2;
        let mut blocks = 0u64;
        let first_block = start_index / per_block;
        loop {
            let last_block = (start_index + table_clusters + blocks - 1) / per_block;
            let need_blocks = last_block - first_block + 1;
            let need_table = (last_block + 1).div_ceil(entries_per_cluster);
            if need_blocks == blocks && need_table <= table_clusters {
                break;
            }
            blocks = need_blocks;
            table_clusters = table_clusters.max(need_table);
        }
        if table_clusters * cs > MAX_REFCOUNT_TABLE_BYTES {
            return Err(unsupported(
                &self.path,
                "image too large: refcount table would exceed its size limit",
            ));
        }
        if first_block < self.refcount_table.len() as u64 {
            return Err(corrupt(
                &self.path,
                "refcount table growth requested inside the covered range",
            ));
        }
        let blocks_offset = start + table_clusters * cs;
        let mut table = self.refcount_table.clone();
        table.resize((table_clusters * entries_per_cluster) as usize, 0);
        let mut block_data = vec![0u8; (blocks * cs) as usize];
        for k in 0..blocks {
            if let Some(slot) = table.get_mut((first_block + k) as usize) {
                *slot = blocks_offset + k * cs;
            }
        }
        for index in start_index..start_index + table_clusters + blocks {
            let block = index / per_block - first_block;
            let block_bytes = &mut block_data[(block * cs) as usize..((block + 1) * cs) as usize];
            encode_refcount(
                block_bytes,
                index % per_block,
                self.header.refcount_order,
                1,
            );
        }
        let mut table_bytes = vec![0u8; table.len() * 8];
        for (i, e) in table.iter().enumerate() {
            put_be_u64(&mut table_bytes, i * 8, *e);
        }
        self.write_meta(blocks_offset, &block_data)?;
        self.write_meta(start, &table_bytes)?;
        self.file.sync_data().map_err(|e| self.io(e))?;
        // Offset (48..56) and cluster count (56..60) change in one small write.
        let mut hdr = [0u8; 12];
        put_be_u64(&mut hdr, 0, start);
        put_be_u32(&mut hdr, 8, table_clusters as u32);
        self.write_meta(48, &hdr)?;
        self.file.sync_data().map_err(|e| self.io(e))?;
        let old_offset = self.header.refcount_table_offset;
        self.refcount_table = table;
        self.header.refcount_table_offset = start;
        self.header.refcount_table_clusters = table_clusters as u32;
        self.next_free = start + (table_clusters + blocks) * cs;
        for k in 0..old_clusters {
            self.set_refcount(old_offset / cs + k, 0)?;
        }
        tracing::debug!(path = %self.path, clusters = table_clusters, "qcow2 refcount table grown");
        Ok(())
    }

    /// Allocates every cluster a write of `len` bytes at `guest` will need.
    fn reserve_for_write(&mut self, guest: u64, len: u64) -> Result<(), StorageError> {
        let cs = self.cluster_size;
        let mut needed = 0usize;
        let mut new_tables: Vec<usize> = Vec::new();
        let mut cluster = guest / cs * cs;
        while cluster < guest + len {
            let (l1_index, l2_offset) = self.l2_table_offset(cluster)?;
            if l2_offset == 0 {
                if !new_tables.contains(&l1_index) {
                    new_tables.push(l1_index);
                }
                needed += 1;
            } else {
                needed += match self.mapping(cluster)? {
                    Mapping::Normal { .. } => 0,
                    Mapping::Zero { host } if host != 0 && self.get_refcount(host / cs)? == 1 => 0,
                    _ => 1,
                };
            }
            cluster += cs;
        }
        needed += new_tables.len();
        let mut reserved = Vec::with_capacity(needed);
        for _ in 0..needed {
            reserved.push(self.allocate_new_cluster()?);
        }
        // allocate_cluster pops from the end: hand out clusters in file order.
        reserved.reverse();
        self.reserved = reserved;
        Ok(())
    }

    /// Returns reservations a request did not use (only after errors or overestimates).
    fn release_reserved(&mut self) -> Result<(), StorageError> {
        while let Some(offset) = self.reserved.pop() {
            self.set_refcount(offset / self.cluster_size, 0)?;
        }
        Ok(())
    }

    /// Drops one reference to each host cluster in `[offset, offset + len)`.
    fn release_clusters(&mut self, offset: u64, len: u64) -> Result<(), StorageError> {
        if len == 0 {
            return Ok(());
        }
        let first = offset / self.cluster_size;
        let last = (offset + len - 1) / self.cluster_size;
        for index in first..=last {
            let count = self.get_refcount(index)?;
            if count > 0 {
                self.set_refcount(index, count - 1)?;
            }
        }
        Ok(())
    }

    // ---- mapping ----

    fn l2_entries(&self) -> u64 {
        self.cluster_size / 8
    }

    fn l2_table_offset(&self, guest: u64) -> Result<(usize, u64), StorageError> {
        let l1_index = (guest / self.cluster_size / self.l2_entries()) as usize;
        let entry = self.l1.get(l1_index).copied().unwrap_or(0);
        let offset = entry & OFFSET_MASK;
        if !offset.is_multiple_of(self.cluster_size) {
            return Err(corrupt(
                &self.path,
                format!("L2 table at {offset:#x} is not cluster aligned"),
            ));
        }
        Ok((l1_index, offset))
    }

    fn l2_entry(&mut self, l2_offset: u64, index: usize) -> Result<u64, StorageError> {
        if let Some(table) = self.l2_cache.get(l2_offset) {
            return Ok(table.get(index).copied().unwrap_or(0));
        }
        let mut raw = vec![0u8; self.cluster_size as usize];
        self.read_meta(l2_offset, &mut raw)?;
        let table: Vec<u64> = raw.chunks_exact(8).map(|c| be_u64(c, 0)).collect();
        let entry = table.get(index).copied().unwrap_or(0);
        self.l2_cache.insert(l2_offset, table);
        Ok(entry)
    }

    fn classify(&self, entry: u64) -> Result<Mapping, StorageError> {
        if entry & FLAG_COMPRESSED != 0 {
            let shift = 62 - (self.header.cluster_bits - 8);
            let offset = entry & ((1u64 << shift) - 1);
            let sectors = ((entry >> shift) & ((1u64 << (self.header.cluster_bits - 8)) - 1)) + 1;
            return Ok(Mapping::Compressed {
                offset,
                len: sectors * 512 - (offset & 511),
            });
        }
        let host = entry & OFFSET_MASK;
        if entry & FLAG_ZERO != 0 {
            if self.header.version < 3 {
                return Err(corrupt(
                    &self.path,
                    "zero cluster flag in a version 2 image",
                ));
            }
            return Ok(Mapping::Zero { host });
        }
        if host == 0 {
            return Ok(Mapping::Unallocated);
        }
        if !host.is_multiple_of(self.cluster_size) {
            return Err(corrupt(
                &self.path,
                format!("data cluster at {host:#x} is not cluster aligned"),
            ));
        }
        Ok(Mapping::Normal { host })
    }

    fn mapping(&mut self, guest: u64) -> Result<Mapping, StorageError> {
        let (_, l2_offset) = self.l2_table_offset(guest)?;
        if l2_offset == 0 {
            return Ok(Mapping::Unallocated);
        }
        let index = ((guest / self.cluster_size) % self.l2_entries()) as usize;
        let entry = self.l2_entry(l2_offset, index)?;
        self.classify(entry)
    }

    fn decompress(&mut self, offset: u64, len: u64) -> Result<&[u8], StorageError> {
        if self
            .compressed_cache
            .as_ref()
            .is_none_or(|(o, _)| *o != offset)
        {
            // The stored length is rounded to sectors; the last one may stop at end of file.
            let avail = self.file_len.saturating_sub(offset).min(len);
            let mut input = vec![0u8; avail as usize];
            self.read_meta(offset, &mut input)?;
            let mut out = vec![0u8; self.cluster_size as usize];
            inflate_cluster(&input, &mut out).map_err(|what| {
                corrupt(
                    &self.path,
                    format!("compressed cluster at {offset:#x}: {what}"),
                )
            })?;
            self.compressed_cache = Some((offset, out));
        }
        Ok(self
            .compressed_cache
            .as_ref()
            .map(|(_, d)| d.as_slice())
            .unwrap_or(&[]))
    }

    /// Reads guest bytes that are not mapped in this image: from the backing file, or zeros.
    fn read_unmapped(&mut self, guest: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        buf.fill(0);
        let Some(backing) = self.backing.as_mut() else {
            return Ok(());
        };
        let ss = backing.sector_size() as u64;
        let backing_len = backing.sector_count() * ss;
        if guest >= backing_len {
            return Ok(());
        }
        let end = (guest + buf.len() as u64).min(backing_len);
        let first = guest / ss;
        let last = end.div_ceil(ss);
        let mut bounce = vec![0u8; ((last - first) * ss) as usize];
        backing.read_sectors(first, &mut bounce)?;
        let skip = (guest - first * ss) as usize;
        let n = (end - guest) as usize;
        buf[..n].copy_from_slice(&bounce[skip..skip + n]);
        Ok(())
    }

    /// Reads bytes that lie inside one guest cluster.
    fn read_in_cluster(&mut self, guest: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        let within = guest % self.cluster_size;
        match self.mapping(guest)? {
            Mapping::Unallocated => self.read_unmapped(guest, buf),
            Mapping::Zero { .. } => {
                buf.fill(0);
                Ok(())
            }
            Mapping::Normal { host } => self.read_meta(host + within, buf),
            Mapping::Compressed { offset, len } => {
                let data = self.decompress(offset, len)?;
                let copied = match data.get(within as usize..within as usize + buf.len()) {
                    Some(src) => {
                        buf.copy_from_slice(src);
                        true
                    }
                    None => false,
                };
                if copied {
                    Ok(())
                } else {
                    Err(corrupt(&self.path, "read past a decompressed cluster"))
                }
            }
        }
    }

    /// Writes bytes inside one guest cluster, allocating (copy-on-write) when needed.
    fn write_in_cluster(&mut self, guest: u64, data: &[u8]) -> Result<(), StorageError> {
        let cs = self.cluster_size;
        let within = (guest % cs) as usize;
        let cluster_start = guest - within as u64;
        let mapping = self.mapping(guest)?;
        if let Mapping::Normal { host } = mapping {
            return write_at(&self.file, host + within as u64, data).map_err(|e| self.io(e));
        }
        // Build the whole new cluster: old contents with the new bytes on top.
        let mut cluster = vec![0u8; cs as usize];
        let mut reuse = None;
        let mut release = None;
        match mapping {
            Mapping::Unallocated => self.read_unmapped(cluster_start, &mut cluster)?,
            Mapping::Zero { host } => {
                if host != 0 && self.get_refcount(host / cs)? == 1 {
                    reuse = Some(host);
                } else if host != 0 {
                    // Shared preallocation: drop our reference once the entry moves away.
                    release = Some((host, cs));
                }
            }
            Mapping::Compressed { offset, len } => {
                cluster.copy_from_slice(self.decompress(offset, len)?);
                release = Some((offset, len));
            }
            Mapping::Normal { .. } => {}
        }
        cluster[within..within + data.len()].copy_from_slice(data);

        let (l1_index, l2_offset) = self.l2_table_offset(guest)?;
        let l2_index = ((guest / cs) % self.l2_entries()) as usize;
        let host = match reuse {
            Some(h) => h,
            None => self.allocate_cluster()?,
        };
        let new_l2 = if l2_offset == 0 {
            Some(self.allocate_cluster()?)
        } else {
            None
        };
        self.write_meta(host, &cluster)?;
        let entry = host | FLAG_COPIED;
        match new_l2 {
            Some(table_offset) => {
                let mut table = vec![0u64; self.l2_entries() as usize];
                table[l2_index] = entry;
                let mut raw = vec![0u8; cs as usize];
                put_be_u64(&mut raw, l2_index * 8, entry);
                self.write_meta(table_offset, &raw)?;
                self.refcount_barrier()?;
                let mut l1e = [0u8; 8];
                let l1_entry = table_offset | FLAG_COPIED;
                put_be_u64(&mut l1e, 0, l1_entry);
                self.write_meta(self.header.l1_offset + l1_index as u64 * 8, &l1e)?;
                if let Some(slot) = self.l1.get_mut(l1_index) {
                    *slot = l1_entry;
                }
                self.l2_cache.insert(table_offset, table);
            }
            None => {
                self.refcount_barrier()?;
                let mut raw = [0u8; 8];
                put_be_u64(&mut raw, 0, entry);
                self.write_meta(l2_offset + l2_index as u64 * 8, &raw)?;
                if let Some(slot) = self
                    .l2_cache
                    .get(l2_offset)
                    .and_then(|t| t.get_mut(l2_index))
                {
                    *slot = entry;
                }
            }
        }
        if let Some((offset, len)) = release {
            // After the L2 entry moved away: a crash before this only leaks.
            self.release_clusters(offset, len)?;
            self.compressed_cache = None;
        }
        Ok(())
    }
}

/// Stores refcount `value` for entry `index` of a refcount block buffer.
fn encode_refcount(block: &mut [u8], index: u64, order: u32, value: u64) {
    let bits = 1u64 << order;
    let bit = index * bits;
    let byte = (bit / 8) as usize;
    if bits < 8 {
        if let Some(b) = block.get_mut(byte) {
            let shift = bit % 8;
            let mask = (((1u16 << bits) - 1) as u8) << shift;
            *b = (*b & !mask) | (((value as u8) << shift) & mask);
        }
    } else {
        let width = (bits / 8) as usize;
        if let Some(dst) = block.get_mut(byte..byte + width) {
            dst.copy_from_slice(&value.to_be_bytes()[8 - width..]);
        }
    }
}

/// Raw-deflate decompression of one cluster; the output must fill it exactly.
fn inflate_cluster(input: &[u8], out: &mut [u8]) -> Result<(), String> {
    use miniz_oxide::inflate::TINFLStatus;
    use miniz_oxide::inflate::core::{DecompressorOxide, decompress, inflate_flags};
    let mut state = DecompressorOxide::new();
    let flags = inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
    let (status, _, written) = decompress(&mut state, input, out, 0, flags);
    match status {
        TINFLStatus::Done | TINFLStatus::HasMoreOutput if written == out.len() => Ok(()),
        TINFLStatus::Done => Err(format!(
            "decompressed to {written} bytes, expected {}",
            out.len()
        )),
        other => Err(format!("deflate error {other:?}")),
    }
}

/// Backing file names are relative to the directory of the image that names them.
fn resolve_backing(image: &Path, name: &str) -> PathBuf {
    let name = Path::new(name);
    if name.is_absolute() {
        return name.to_path_buf();
    }
    image
        .parent()
        .map_or_else(|| name.to_path_buf(), |dir| dir.join(name))
}

impl BlockDevice for Qcow2Image {
    fn sector_size(&self) -> u32 {
        self.sector_size
    }
    fn sector_count(&self) -> u64 {
        self.header.size / self.sector_size as u64
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn read_sectors(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        check_range(self, lba, buf.len())?;
        let mut guest = lba * self.sector_size as u64;
        let mut rest = buf;
        while !rest.is_empty() {
            let n = ((self.cluster_size - guest % self.cluster_size) as usize).min(rest.len());
            let (now, later) = rest.split_at_mut(n);
            self.read_in_cluster(guest, now)?;
            guest += n as u64;
            rest = later;
        }
        Ok(())
    }
    fn write_sectors(&mut self, lba: u64, buf: &[u8]) -> Result<(), StorageError> {
        if self.read_only {
            return Err(StorageError::ReadOnly);
        }
        check_range(self, lba, buf.len())?;
        let start = lba * self.sector_size as u64;
        self.reserve_for_write(start, buf.len() as u64)?;
        let mut guest = start;
        let mut rest = buf;
        let mut result = Ok(());
        while !rest.is_empty() && result.is_ok() {
            let n = ((self.cluster_size - guest % self.cluster_size) as usize).min(rest.len());
            let (now, later) = rest.split_at(n);
            result = self.write_in_cluster(guest, now);
            guest += n as u64;
            rest = later;
        }
        let released = self.release_reserved();
        result.and(released)
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        if self.read_only {
            return Ok(());
        }
        self.file.sync_data().map_err(|e| self.io(e))?;
        self.refcounts_unsynced = false;
        Ok(())
    }
}

/// Options for [`create_qcow2`].
#[derive(Clone, Debug)]
pub struct Qcow2CreateOptions {
    /// Virtual disk size in bytes.
    pub size: u64,
    /// log2 of the cluster size (9..=21); QEMU's default is 16.
    pub cluster_bits: u32,
    /// Backing file name as stored in the image (relative to the new image's directory
    /// unless absolute) and its format.
    pub backing: Option<(String, ImageFormat)>,
}

/// Creates a new, empty qcow2 v3 image. Never overwrites an existing file.
pub fn create_qcow2(path: &Path, opts: &Qcow2CreateOptions) -> Result<(), StorageError> {
    let p = path.display().to_string();
    if !(9..=21).contains(&opts.cluster_bits) {
        return Err(unsupported(
            &p,
            format!("cluster_bits {} outside 9..=21", opts.cluster_bits),
        ));
    }
    let cs = 1u64 << opts.cluster_bits;
    let l2_entries = cs / 8;
    let l1_size = opts.size.div_ceil(cs * l2_entries);
    if l1_size * 8 > MAX_L1_BYTES {
        return Err(unsupported(
            &p,
            format!("disk size {} too large for this cluster size", opts.size),
        ));
    }
    let l1_clusters = (l1_size * 8).div_ceil(cs).max(1);
    let per_block = cs * 8 / 16;
    // Layout: header, refcount table, refcount blocks, L1 table.
    let (mut table_clusters, mut blocks) = (1u64, 1u64);
    loop {
        let total = 1 + table_clusters + blocks + l1_clusters;
        let need_blocks = total.div_ceil(per_block);
        let need_table = (need_blocks * 8).div_ceil(cs);
        if need_blocks == blocks && need_table == table_clusters {
            break;
        }
        blocks = need_blocks;
        table_clusters = need_table;
    }
    let table_offset = cs;
    let blocks_offset = table_offset + table_clusters * cs;
    let l1_offset = blocks_offset + blocks * cs;
    let total = 1 + table_clusters + blocks + l1_clusters;

    let mut header = vec![0u8; cs as usize];
    header[..4].copy_from_slice(MAGIC);
    put_be_u32(&mut header, 4, 3);
    put_be_u32(&mut header, 20, opts.cluster_bits);
    put_be_u64(&mut header, 24, opts.size);
    put_be_u32(&mut header, 36, l1_size as u32);
    put_be_u64(&mut header, 40, l1_offset);
    put_be_u64(&mut header, 48, table_offset);
    put_be_u32(&mut header, 56, table_clusters as u32);
    put_be_u32(&mut header, 96, 4);
    put_be_u32(&mut header, 100, V3_HEADER_LEN as u32);
    let mut pos = V3_HEADER_LEN;
    if let Some((name, format)) = &opts.backing {
        let format_name: &[u8] = match format {
            ImageFormat::Raw => b"raw",
            ImageFormat::Qcow2 => b"qcow2",
            ImageFormat::Vhd => b"vpc",
        };
        if name.is_empty() || name.len() > MAX_BACKING_NAME as usize {
            return Err(unsupported(
                &p,
                "backing file name empty or longer than 1023 bytes",
            ));
        }
        let needed = pos + 8 + 8 + 8 + name.len();
        if needed as u64 > cs {
            return Err(unsupported(
                &p,
                "backing file name does not fit in the header cluster",
            ));
        }
        put_be_u32(&mut header, pos, EXT_BACKING_FORMAT);
        put_be_u32(&mut header, pos + 4, format_name.len() as u32);
        header[pos + 8..pos + 8 + format_name.len()].copy_from_slice(format_name);
        pos += 8 + format_name.len().div_ceil(8) * 8;
        pos += 8; // end-of-extensions marker (already zero)
        put_be_u64(&mut header, 8, pos as u64);
        put_be_u32(&mut header, 16, name.len() as u32);
        header[pos..pos + name.len()].copy_from_slice(name.as_bytes());
    }

    let mut table = vec![0u8; (table_clusters * cs) as usize];
    for k in 0..blocks {
        put_be_u64(&mut table, (k * 8) as usize, blocks_offset + k * cs);
    }
    let mut refblocks = vec![0u8; (blocks * cs) as usize];
    for index in 0..total {
        let block = index / per_block;
        let bytes = &mut refblocks[(block * cs) as usize..((block + 1) * cs) as usize];
        encode_refcount(bytes, index % per_block, 4, 1);
    }

    let io = |e| StorageError::Io {
        path: p.clone(),
        error: e,
    };
    let file = FsOpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(io)?;
    write_at(&file, 0, &header).map_err(io)?;
    write_at(&file, table_offset, &table).map_err(io)?;
    write_at(&file, blocks_offset, &refblocks).map_err(io)?;
    file.set_len(total * cs).map_err(io)?;
    file.sync_all().map_err(io)?;
    Ok(())
}
