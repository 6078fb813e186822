//! Reading the submission ring from guest memory.

use aero_protocol::ring::{RING_MAGIC, RING_MAX_ENTRIES, RingHeader, SubmitDesc};
use aero_protocol::{ABI_MAJOR, Wire, abi_major};

use super::error::SubmitError;
use super::memory::GuestMemory;

/// A validated ring header: every slot lies inside the programmed ring, inside RAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingLayout {
    pub gpa: u64,
    pub entry_count: u32,
    pub entry_stride: u32,
    pub tail: u32,
}

impl RingLayout {
    /// Reads and validates the header at `gpa` for a ring of `size_bytes` (RING_SIZE).
    pub fn read(mem: &dyn GuestMemory, gpa: u64, size_bytes: u32) -> Result<Self, SubmitError> {
        if (size_bytes as usize) < RingHeader::SIZE {
            return Err(SubmitError::Ring("RING_SIZE_BYTES smaller than the header"));
        }
        let mut raw = [0u8; RingHeader::SIZE];
        mem.read(gpa, &mut raw)?;
        let h = <RingHeader as Wire>::read_le(&raw);
        if h.magic != RING_MAGIC {
            return Err(SubmitError::Ring("bad magic"));
        }
        if abi_major(h.abi_version) != ABI_MAJOR {
            return Err(SubmitError::Ring("ABI major mismatch"));
        }
        if !h.entry_count.is_power_of_two() || h.entry_count > RING_MAX_ENTRIES {
            return Err(SubmitError::Ring(
                "entry_count not a power of two up to the maximum",
            ));
        }
        if (h.entry_stride_bytes as usize) < SubmitDesc::SIZE
            || !h.entry_stride_bytes.is_multiple_of(8)
        {
            return Err(SubmitError::Ring("bad entry_stride_bytes"));
        }
        if h.size_bytes > size_bytes {
            return Err(SubmitError::Ring(
                "header size_bytes exceeds RING_SIZE_BYTES",
            ));
        }
        // Both factors are capped (4096 entries, u32 stride), so u64 cannot overflow.
        let needed =
            RingHeader::SIZE as u64 + u64::from(h.entry_count) * u64::from(h.entry_stride_bytes);
        if needed > u64::from(h.size_bytes) {
            return Err(SubmitError::Ring("entries run past size_bytes"));
        }
        if !mem.contains(gpa, u64::from(h.size_bytes)) {
            return Err(SubmitError::Ring("ring outside guest RAM"));
        }
        Ok(Self {
            gpa,
            entry_count: h.entry_count,
            entry_stride: h.entry_stride_bytes,
            tail: h.tail,
        })
    }

    /// Reads the descriptor for counter value `index`.
    pub fn descriptor(&self, mem: &dyn GuestMemory, index: u32) -> Result<SubmitDesc, SubmitError> {
        let slot = u64::from(index % self.entry_count);
        let gpa = self.gpa + RingHeader::SIZE as u64 + slot * u64::from(self.entry_stride);
        let mut raw = [0u8; SubmitDesc::SIZE];
        mem.read(gpa, &mut raw)?;
        Ok(<SubmitDesc as Wire>::read_le(&raw))
    }

    pub fn write_head(&self, mem: &mut dyn GuestMemory, head: u32) -> Result<(), SubmitError> {
        mem.write(self.gpa + RingHeader::HEAD_OFFSET, &head.to_le_bytes())?;
        Ok(())
    }
}
