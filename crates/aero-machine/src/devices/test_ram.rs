//! Flat guest RAM for device unit tests: the DMA-capable devices' tests (HD Audio,
//! e1000, UHCI, floppy) all need the same bounds-checked byte vector.

use aero_storage::ide::{DmaError, GuestMemory};

/// Guest RAM at address 0; an access past its end is a DMA error, as on a bus abort.
pub(crate) struct Ram(pub(crate) Vec<u8>);

impl Ram {
    fn range(&self, addr: u64, len: usize) -> Result<std::ops::Range<usize>, DmaError> {
        let start = usize::try_from(addr).map_err(|_| DmaError::BadAddress(addr))?;
        let end = start
            .checked_add(len)
            .filter(|&end| end <= self.0.len())
            .ok_or(DmaError::BadAddress(addr))?;
        Ok(start..end)
    }
}

impl GuestMemory for Ram {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        let range = self.range(addr, buf.len())?;
        buf.copy_from_slice(&self.0[range]);
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        let range = self.range(addr, data.len())?;
        self.0[range].copy_from_slice(data);
        Ok(())
    }
}
