//! Bounds-checked access to guest RAM from the BIOS handlers.
//!
//! The machine hands us its RAM slice: the part below the PCI hole at offset 0, the part
//! remapped above 4 GiB right after it. Every access is checked, so a hostile pointer or a
//! small test RAM yields an error instead of a panic.

use super::error::FirmwareError;

const FOUR_GIB: u64 = 1 << 32;

pub struct GuestMem<'a> {
    ram: &'a mut [u8],
    /// Bytes of RAM below the PCI hole (identity mapped).
    low_end: u64,
    /// Guest-physical ranges handed out for writing, so the CPU can drop decoded code
    /// there instead of all of it.
    written: WrittenRanges,
}

/// Ranges (start, length) of guest RAM the BIOS may have changed; `All` once there are
/// too many to be worth listing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum WrittenRanges {
    #[default]
    None,
    Some(Vec<(u64, u64)>),
    All,
}

impl WrittenRanges {
    const MAX: usize = 64;

    fn add(&mut self, addr: u64, len: u64) {
        if len == 0 {
            return;
        }
        match self {
            WrittenRanges::None => *self = WrittenRanges::Some(vec![(addr, len)]),
            WrittenRanges::Some(v) => {
                // Consecutive writes (a sector after a sector) extend the last range.
                if let Some(last) = v.last_mut()
                    && last.0.checked_add(last.1) == Some(addr)
                {
                    last.1 += len;
                } else if !v.iter().any(|&(a, l)| addr >= a && addr + len <= a + l) {
                    if v.len() >= Self::MAX {
                        *self = WrittenRanges::All;
                    } else {
                        v.push((addr, len));
                    }
                }
            }
            WrittenRanges::All => {}
        }
    }
}

impl<'a> GuestMem<'a> {
    /// `ram_size` is the configured size; `ram` may be shorter (tests) or longer (the
    /// machine's backing bytes can carry the ROM image after RAM).
    pub fn new(ram: &'a mut [u8], ram_size: u64, pci_hole_start: u64) -> GuestMem<'a> {
        let usable = (ram.len() as u64).min(ram_size) as usize;
        let ram = &mut ram[..usable];
        let low_end = (usable as u64).min(pci_hole_start);
        GuestMem {
            ram,
            low_end,
            written: WrittenRanges::None,
        }
    }

    /// The ranges written (or borrowed mutably) so far.
    pub fn take_written(&mut self) -> WrittenRanges {
        std::mem::take(&mut self.written)
    }

    fn range(&self, addr: u64, len: usize) -> Result<std::ops::Range<usize>, FirmwareError> {
        let err = FirmwareError::GuestMemory {
            addr,
            len: len as u64,
        };
        let end = addr.checked_add(len as u64).ok_or(err.clone())?;
        let offset = if end <= self.low_end {
            addr
        } else if addr >= FOUR_GIB {
            (addr - FOUR_GIB)
                .checked_add(self.low_end)
                .ok_or(err.clone())?
        } else {
            return Err(err);
        };
        let start = usize::try_from(offset).map_err(|_| err.clone())?;
        let stop = start.checked_add(len).ok_or(err.clone())?;
        if stop > self.ram.len() {
            return Err(err);
        }
        Ok(start..stop)
    }

    pub fn slice(&self, addr: u64, len: usize) -> Result<&[u8], FirmwareError> {
        let r = self.range(addr, len)?;
        Ok(&self.ram[r])
    }
    pub fn slice_mut(&mut self, addr: u64, len: usize) -> Result<&mut [u8], FirmwareError> {
        let r = self.range(addr, len)?;
        self.written.add(addr, len as u64);
        Ok(&mut self.ram[r])
    }
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), FirmwareError> {
        buf.copy_from_slice(self.slice(addr, buf.len())?);
        Ok(())
    }
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), FirmwareError> {
        self.slice_mut(addr, data.len())?.copy_from_slice(data);
        Ok(())
    }
    pub fn fill(&mut self, addr: u64, len: usize, value: u8) -> Result<(), FirmwareError> {
        self.slice_mut(addr, len)?.fill(value);
        Ok(())
    }
    pub fn read_u8(&self, addr: u64) -> Result<u8, FirmwareError> {
        Ok(self.slice(addr, 1)?[0])
    }
    pub fn read_u16(&self, addr: u64) -> Result<u16, FirmwareError> {
        let s = self.slice(addr, 2)?;
        Ok(u16::from_le_bytes([s[0], s[1]]))
    }
    pub fn read_u32(&self, addr: u64) -> Result<u32, FirmwareError> {
        let s = self.slice(addr, 4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    pub fn read_u64(&self, addr: u64) -> Result<u64, FirmwareError> {
        let mut b = [0u8; 8];
        self.read(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    pub fn write_u8(&mut self, addr: u64, v: u8) -> Result<(), FirmwareError> {
        self.write(addr, &[v])
    }
    pub fn write_u16(&mut self, addr: u64, v: u16) -> Result<(), FirmwareError> {
        self.write(addr, &v.to_le_bytes())
    }
    pub fn write_u32(&mut self, addr: u64, v: u32) -> Result<(), FirmwareError> {
        self.write(addr, &v.to_le_bytes())
    }
    pub fn write_u64(&mut self, addr: u64, v: u64) -> Result<(), FirmwareError> {
        self.write(addr, &v.to_le_bytes())
    }
}

/// Real-mode linear address of `seg:off`.
pub fn real_addr(seg: u16, off: u16) -> u64 {
    ((seg as u64) << 4) + off as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_is_an_error() {
        let mut ram = vec![0u8; 0x1000];
        let mut m = GuestMem::new(&mut ram, 16 << 20, 0xE000_0000);
        assert!(m.write_u32(0xFFE, 1).is_err());
        assert!(m.write_u16(0xFFE, 0xBEEF).is_ok());
        assert_eq!(m.read_u16(0xFFE).unwrap(), 0xBEEF);
        assert!(m.read_u8(u64::MAX).is_err());
        assert!(m.slice(u64::MAX - 1, 4).is_err());
    }

    #[test]
    fn writes_are_recorded_and_merged() {
        let mut ram = vec![0u8; 0x10000];
        let mut m = GuestMem::new(&mut ram, 16 << 20, 0xE000_0000);
        m.read_u32(0x100).unwrap();
        assert_eq!(
            m.take_written(),
            WrittenRanges::None,
            "reads are not writes"
        );
        m.write(0x7C00, &[0; 512]).unwrap();
        m.write(0x7E00, &[0; 512]).unwrap();
        m.write_u16(0x400, 1).unwrap();
        m.write_u8(0x7C10, 1).unwrap();
        assert_eq!(
            m.take_written(),
            WrittenRanges::Some(vec![(0x7C00, 1024), (0x400, 2)])
        );
        for i in 0..100 {
            m.write_u8(i * 16, 0).unwrap();
        }
        assert_eq!(m.take_written(), WrittenRanges::All);
    }

    #[test]
    fn high_ram_is_remapped_after_the_hole() {
        let mut ram = vec![0u8; 0x3000];
        // Pretend the hole starts at 8 KiB: 0x2000.. is the remapped part at 4 GiB.
        let mut m = GuestMem::new(&mut ram, 0x3000, 0x2000);
        m.write_u8(FOUR_GIB + 5, 0xAB).unwrap();
        assert!(m.read_u8(0x2000).is_err(), "hole must not be RAM");
        assert!(
            m.write(0x1FFF, &[1, 2]).is_err(),
            "range crossing into the hole"
        );
        assert_eq!(ram[0x2005], 0xAB);
    }
}
