//! Bus-master IDE registers (SFF-8038i) and the PRD table walk. Transfers move through a
//! [`GuestMemory`] that checks bounds; a PRD table the guest got wrong ends the transfer
//! with the error bit set instead of touching host memory.

use thiserror::Error;

/// Guest physical memory as seen by a DMA engine.
pub trait GuestMemory {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError>;
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError>;
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum DmaError {
    #[error("DMA to unmapped guest memory at {0:#x}")]
    BadAddress(u64),
    #[error("PRD table ended before the transfer did")]
    PrdTooShort,
    #[error("PRD table too long or looping")]
    PrdTooLong,
    #[error("bus-master direction does not match the command")]
    WrongDirection,
    #[error("no device for the DMA command")]
    NoDevice,
}

pub(crate) const CMD_START: u8 = 1 << 0;
/// Set: the device reads (bus master writes memory).
pub(crate) const CMD_TO_MEMORY: u8 = 1 << 3;
pub(crate) const STATUS_ACTIVE: u8 = 1 << 0;
pub(crate) const STATUS_ERROR: u8 = 1 << 1;
pub(crate) const STATUS_INTERRUPT: u8 = 1 << 2;
const STATUS_DRIVE_DMA_CAPABLE: u8 = 0x60;
const PRD_END: u16 = 1 << 15;
/// A PRD table may not cross a 64 KiB boundary: at most 8192 entries.
const MAX_PRD_ENTRIES: usize = 8192;

#[derive(Clone, Debug, Default)]
pub(crate) struct BusMaster {
    pub command: u8,
    pub status: u8,
    pub prdt: u32,
}

impl BusMaster {
    pub fn read(&self, offset: u8, size: u8) -> u32 {
        let bytes = [self.command, 0, self.status | STATUS_DRIVE_DMA_CAPABLE, 0];
        let prdt = self.prdt.to_le_bytes();
        let all = [
            bytes[0], bytes[1], bytes[2], bytes[3], prdt[0], prdt[1], prdt[2], prdt[3],
        ];
        (0..size.min(4) as usize).fold(0u32, |acc, i| {
            acc | (all.get(offset as usize + i).copied().unwrap_or(0xFF) as u32) << (8 * i)
        })
    }

    /// Register writes other than the command register (returns the new command byte for
    /// offset 0 so the channel can react to the start bit).
    pub fn write(&mut self, offset: u8, size: u8, value: u32) -> Option<u8> {
        let mut command = None;
        for i in 0..size.min(4) {
            let byte = (value >> (8 * i)) as u8;
            match offset + i {
                0 => command = Some(byte & (CMD_START | CMD_TO_MEMORY)),
                2 => {
                    // Error and interrupt are write-1-to-clear; the capability bits are ours.
                    self.status &= !(byte & (STATUS_ERROR | STATUS_INTERRUPT));
                }
                o @ 4..=7 => {
                    let shift = 8 * (o - 4) as u32;
                    self.prdt = (self.prdt & !(0xFF << shift)) | ((byte as u32) << shift);
                    self.prdt &= !3;
                }
                _ => {}
            }
        }
        command
    }
}

/// One scatter/gather segment.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Segment {
    pub addr: u64,
    pub len: usize,
}

/// Reads the PRD table until the end-of-table flag.
pub(crate) fn read_prdt(memory: &mut dyn GuestMemory, base: u32) -> Result<Vec<Segment>, DmaError> {
    let mut segments = Vec::new();
    for i in 0..MAX_PRD_ENTRIES {
        let mut entry = [0u8; 8];
        memory.read(base as u64 + i as u64 * 8, &mut entry)?;
        let addr = u32::from_le_bytes([entry[0], entry[1], entry[2], entry[3]]) & !1;
        let count = u16::from_le_bytes([entry[4], entry[5]]);
        let flags = u16::from_le_bytes([entry[6], entry[7]]);
        let len = if count == 0 {
            0x10000
        } else {
            (count & !1) as usize
        };
        segments.push(Segment {
            addr: addr as u64,
            len,
        });
        if flags & PRD_END != 0 {
            return Ok(segments);
        }
    }
    Err(DmaError::PrdTooLong)
}

/// Moves bytes between a contiguous stream and the segments, from stream offset `done`.
pub(crate) struct Scatter {
    segments: Vec<Segment>,
    index: usize,
    within: usize,
}

impl Scatter {
    pub fn new(segments: Vec<Segment>) -> Self {
        Scatter {
            segments,
            index: 0,
            within: 0,
        }
    }

    /// Total bytes the table describes.
    pub fn capacity(&self) -> usize {
        self.segments.iter().map(|s| s.len).sum()
    }

    /// Copies `data` to guest memory (device → memory).
    pub fn write_out(
        &mut self,
        memory: &mut dyn GuestMemory,
        mut data: &[u8],
    ) -> Result<(), DmaError> {
        while !data.is_empty() {
            let seg = *self.segments.get(self.index).ok_or(DmaError::PrdTooShort)?;
            let n = (seg.len - self.within).min(data.len());
            memory.write(seg.addr + self.within as u64, &data[..n])?;
            self.advance(n, seg.len);
            data = &data[n..];
        }
        Ok(())
    }

    /// Fills `buf` from guest memory (memory → device).
    pub fn read_in(
        &mut self,
        memory: &mut dyn GuestMemory,
        mut buf: &mut [u8],
    ) -> Result<(), DmaError> {
        while !buf.is_empty() {
            let seg = *self.segments.get(self.index).ok_or(DmaError::PrdTooShort)?;
            let n = (seg.len - self.within).min(buf.len());
            let (now, rest) = buf.split_at_mut(n);
            memory.read(seg.addr + self.within as u64, now)?;
            self.advance(n, seg.len);
            buf = rest;
        }
        Ok(())
    }

    fn advance(&mut self, n: usize, seg_len: usize) {
        self.within += n;
        if self.within == seg_len {
            self.index += 1;
            self.within = 0;
        }
    }
}
