//! How the device reaches guest RAM. The machine implements [`GuestMemory`] over its RAM
//! (MMIO holes are not RAM: DMA to them fails); tests use [`VecMemory`].

use thiserror::Error;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("guest memory access of {len} bytes at {gpa:#x} is outside guest RAM")]
pub struct GuestMemoryError {
    pub gpa: u64,
    pub len: u64,
}

/// DMA access to guest physical memory. Implementations must reject (not panic on) any
/// range that is not entirely RAM, including ranges whose end overflows.
pub trait GuestMemory {
    fn read(&self, gpa: u64, buf: &mut [u8]) -> Result<(), GuestMemoryError>;
    fn write(&mut self, gpa: u64, data: &[u8]) -> Result<(), GuestMemoryError>;
    /// Whether `[gpa, gpa + len)` is entirely guest RAM.
    fn contains(&self, gpa: u64, len: u64) -> bool;
}

/// Guest RAM as one vector starting at GPA 0.
#[derive(Clone, Debug, Default)]
pub struct VecMemory {
    pub bytes: Vec<u8>,
}

impl VecMemory {
    pub fn new(size: usize) -> Self {
        Self {
            bytes: vec![0; size],
        }
    }

    fn range(&self, gpa: u64, len: usize) -> Option<core::ops::Range<usize>> {
        let start = usize::try_from(gpa).ok()?;
        let end = start.checked_add(len)?;
        (end <= self.bytes.len()).then_some(start..end)
    }
}

impl GuestMemory for VecMemory {
    fn read(&self, gpa: u64, buf: &mut [u8]) -> Result<(), GuestMemoryError> {
        let err = GuestMemoryError {
            gpa,
            len: buf.len() as u64,
        };
        let r = self.range(gpa, buf.len()).ok_or(err)?;
        buf.copy_from_slice(self.bytes.get(r).ok_or(err)?);
        Ok(())
    }

    fn write(&mut self, gpa: u64, data: &[u8]) -> Result<(), GuestMemoryError> {
        let err = GuestMemoryError {
            gpa,
            len: data.len() as u64,
        };
        let r = self.range(gpa, data.len()).ok_or(err)?;
        self.bytes.get_mut(r).ok_or(err)?.copy_from_slice(data);
        Ok(())
    }

    fn contains(&self, gpa: u64, len: u64) -> bool {
        usize::try_from(len)
            .ok()
            .and_then(|len| self.range(gpa, len))
            .is_some()
    }
}
