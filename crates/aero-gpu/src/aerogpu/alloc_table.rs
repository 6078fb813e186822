//! The per-submit allocation table: `alloc_id -> gpa, size, flags`, resolved by id only.

use aero_protocol::ring::{
    ALLOC_FLAG_READONLY, ALLOC_TABLE_MAGIC, ALLOC_TABLE_MAX_ENTRIES, AllocEntry, AllocTableHeader,
};
use aero_protocol::{ABI_MAJOR, abi_major};

use super::error::AllocTableError;
use super::memory::GuestMemory;

/// A validated table, sorted by `alloc_id` (no duplicates, no id 0, every backing inside
/// guest RAM). Reused between submissions to avoid reallocating.
#[derive(Clone, Debug, Default)]
pub struct AllocTable {
    entries: Vec<AllocEntry>,
}

/// One resolved allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub alloc_id: u32,
    pub gpa: u64,
    pub size_bytes: u64,
    pub readonly: bool,
}

impl AllocTable {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Replaces the contents with the table encoded in `bytes`. On error the table is
    /// left empty.
    pub fn parse(&mut self, bytes: &[u8], mem: &dyn GuestMemory) -> Result<(), AllocTableError> {
        self.entries.clear();
        let result = self.parse_inner(bytes, mem);
        if result.is_err() {
            self.entries.clear();
        }
        result
    }

    fn parse_inner(&mut self, bytes: &[u8], mem: &dyn GuestMemory) -> Result<(), AllocTableError> {
        let header = AllocTableHeader::decode(bytes)
            .map_err(|_| AllocTableError::Header("shorter than its header"))?;
        if header.magic != ALLOC_TABLE_MAGIC {
            return Err(AllocTableError::Header("bad magic"));
        }
        if abi_major(header.abi_version) != ABI_MAJOR {
            return Err(AllocTableError::Header("ABI major mismatch"));
        }
        let size = header.size_bytes as usize;
        if size < AllocTableHeader::SIZE || size > bytes.len() {
            return Err(AllocTableError::Header("size_bytes outside the buffer"));
        }
        let stride = header.entry_stride_bytes as usize;
        if stride < AllocEntry::SIZE || !stride.is_multiple_of(8) {
            return Err(AllocTableError::Header("bad entry_stride_bytes"));
        }
        if header.entry_count > ALLOC_TABLE_MAX_ENTRIES {
            return Err(AllocTableError::Header("too many entries"));
        }
        let count = header.entry_count as usize;
        let needed = count
            .checked_mul(stride)
            .and_then(|n| n.checked_add(AllocTableHeader::SIZE))
            .ok_or(AllocTableError::Header("entries overflow"))?;
        if needed > size {
            return Err(AllocTableError::Header("entries run past size_bytes"));
        }
        self.entries.reserve(count);
        for i in 0..count {
            let off = AllocTableHeader::SIZE + i * stride;
            let entry = bytes
                .get(off..)
                .and_then(|b| AllocEntry::decode(b).ok())
                .ok_or(AllocTableError::Header("entries run past size_bytes"))?;
            if entry.alloc_id == 0 {
                return Err(AllocTableError::ZeroId);
            }
            if !mem.contains(entry.gpa, entry.size_bytes) {
                return Err(AllocTableError::OutsideRam {
                    alloc_id: entry.alloc_id,
                    gpa: entry.gpa,
                    size: entry.size_bytes,
                });
            }
            self.entries.push(entry);
        }
        self.entries.sort_unstable_by_key(|e| e.alloc_id);
        if let Some(dup) = self
            .entries
            .windows(2)
            .find(|w| w[0].alloc_id == w[1].alloc_id)
        {
            return Err(AllocTableError::DuplicateId(dup[0].alloc_id));
        }
        Ok(())
    }

    /// The allocation with this id, if the submission listed it.
    pub fn get(&self, alloc_id: u32) -> Option<Allocation> {
        let i = self
            .entries
            .binary_search_by_key(&alloc_id, |e| e.alloc_id)
            .ok()?;
        let e = self.entries.get(i)?;
        Some(Allocation {
            alloc_id: e.alloc_id,
            gpa: e.gpa,
            size_bytes: e.size_bytes,
            readonly: e.flags & ALLOC_FLAG_READONLY != 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aerogpu::memory::VecMemory;
    use aero_protocol::writer::encode_alloc_table;

    fn entry(alloc_id: u32, gpa: u64, size: u64, flags: u32) -> AllocEntry {
        AllocEntry {
            alloc_id,
            flags,
            gpa,
            size_bytes: size,
            reserved0: 0,
        }
    }

    #[test]
    fn resolves_by_id_regardless_of_order() {
        let mem = VecMemory::new(0x10000);
        let mut t = AllocTable::new();
        let bytes = encode_alloc_table(&[
            entry(9, 0x2000, 0x100, 0),
            entry(3, 0x1000, 0x80, ALLOC_FLAG_READONLY),
        ]);
        t.parse(&bytes, &mem).unwrap();
        assert_eq!(
            t.get(3),
            Some(Allocation {
                alloc_id: 3,
                gpa: 0x1000,
                size_bytes: 0x80,
                readonly: true
            })
        );
        assert_eq!(t.get(9).unwrap().gpa, 0x2000);
        assert_eq!(t.get(4), None);
        // Reordered table, same resolution.
        let bytes = encode_alloc_table(&[entry(3, 0x1000, 0x80, 0), entry(9, 0x2000, 0x100, 0)]);
        t.parse(&bytes, &mem).unwrap();
        assert_eq!(t.get(9).unwrap().gpa, 0x2000);
    }

    #[test]
    fn rejects_duplicates_zero_ids_ram_escapes_and_bad_headers() {
        let mem = VecMemory::new(0x10000);
        let mut t = AllocTable::new();
        let dup = encode_alloc_table(&[entry(5, 0, 16, 0), entry(5, 0x100, 16, 0)]);
        assert_eq!(t.parse(&dup, &mem), Err(AllocTableError::DuplicateId(5)));
        assert!(t.is_empty());
        assert_eq!(
            t.parse(&encode_alloc_table(&[entry(0, 0, 16, 0)]), &mem),
            Err(AllocTableError::ZeroId)
        );
        let outside = encode_alloc_table(&[entry(1, 0xFFF0, 0x20, 0)]);
        assert!(matches!(
            t.parse(&outside, &mem),
            Err(AllocTableError::OutsideRam { alloc_id: 1, .. })
        ));
        let overflow = encode_alloc_table(&[entry(1, u64::MAX - 4, 0x20, 0)]);
        assert!(matches!(
            t.parse(&overflow, &mem),
            Err(AllocTableError::OutsideRam { .. })
        ));

        let mut bad = encode_alloc_table(&[entry(1, 0, 16, 0)]);
        bad[0] ^= 1;
        assert_eq!(
            t.parse(&bad, &mem),
            Err(AllocTableError::Header("bad magic"))
        );
        let mut many = encode_alloc_table(&[entry(1, 0, 16, 0)]);
        many[12..16].copy_from_slice(&1000u32.to_le_bytes());
        assert!(matches!(
            t.parse(&many, &mem),
            Err(AllocTableError::Header(_))
        ));
        let mut stride = encode_alloc_table(&[entry(1, 0, 16, 0)]);
        stride[16..20].copy_from_slice(&12u32.to_le_bytes());
        assert_eq!(
            t.parse(&stride, &mem),
            Err(AllocTableError::Header("bad entry_stride_bytes"))
        );
        assert!(t.parse(&[0u8; 7], &mem).is_err());
    }
}
