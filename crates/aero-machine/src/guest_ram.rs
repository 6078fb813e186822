//! Guest physical memory as a DMA engine sees it: RAM pages only, through the memory map
//! (PCI hole, memory above 4 GiB, PAM shadowing). Every write is remembered so the CPU can
//! drop decoded code that a transfer overwrote.

use aero_cpu::PageMapping;
use aero_storage::ide::{DmaError, GuestMemory};

use crate::memory_map::MemoryMap;

pub struct GuestRam<'a> {
    memory: &'a mut [u8],
    map: &'a MemoryMap,
    /// Guest-physical ranges written, in order (adjacent ones merged).
    pub written: Vec<(u64, u64)>,
}

impl<'a> GuestRam<'a> {
    pub fn new(memory: &'a mut [u8], map: &'a MemoryMap) -> GuestRam<'a> {
        GuestRam {
            memory,
            map,
            written: Vec::new(),
        }
    }

    /// Backing-byte offset of `addr` and how many bytes follow it on the same page, for RAM
    /// (or, when reading, ROM) pages.
    fn locate(&self, addr: u64, write: bool) -> Result<(usize, usize), DmaError> {
        let offset = match self.map.map_page(addr) {
            PageMapping::Ram { offset } => offset,
            PageMapping::Rom { offset } if !write => offset,
            _ => return Err(DmaError::BadAddress(addr)),
        };
        let in_page = (addr & 0xFFF) as usize;
        let start = offset + in_page;
        if start >= self.memory.len() {
            return Err(DmaError::BadAddress(addr));
        }
        Ok((start, (0x1000 - in_page).min(self.memory.len() - start)))
    }

    /// Reads `buf.len()` bytes at `addr`, page by page (RAM or ROM).
    fn read_into(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        let mut done = 0;
        while done < buf.len() {
            let a = addr
                .checked_add(done as u64)
                .ok_or(DmaError::BadAddress(addr))?;
            let (start, room) = self.locate(a, false)?;
            let n = room.min(buf.len() - done);
            buf[done..done + n].copy_from_slice(&self.memory[start..start + n]);
            done += n;
        }
        Ok(())
    }
}

impl GuestRam<'_> {
    /// The written ranges widened to whole 4 KiB pages, sorted and merged: what the CPU
    /// must drop decoded code for. A NIC writes many small pieces (buffers, descriptor
    /// status bytes) to a few pages; one entry per page keeps the CPU's invalidation list
    /// short (past its limit it drops every decoded block).
    pub fn written_pages(&self) -> Vec<(u64, u64)> {
        let mut pages: Vec<(u64, u64)> = self
            .written
            .iter()
            .map(|&(addr, len)| {
                let start = addr & !0xFFF;
                let end = addr.saturating_add(len).saturating_add(0xFFF) & !0xFFF;
                (start, end)
            })
            .collect();
        pages.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(pages.len());
        for (start, end) in pages {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        merged
            .into_iter()
            .map(|(start, end)| (start, end - start))
            .collect()
    }
}

impl GuestMemory for GuestRam<'_> {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        self.read_into(addr, buf)
    }

    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        let mut done = 0;
        while done < data.len() {
            let a = addr
                .checked_add(done as u64)
                .ok_or(DmaError::BadAddress(addr))?;
            let (start, room) = self.locate(a, true)?;
            let n = room.min(data.len() - done);
            self.memory[start..start + n].copy_from_slice(&data[done..done + n]);
            match self.written.last_mut() {
                Some(last) if last.0 + last.1 == a => last.1 += n as u64,
                _ => self.written.push((a, n as u64)),
            }
            done += n;
        }
        Ok(())
    }
}

/// The same RAM for AeroGPU (rings, command streams, fences, scanout). Not imported by
/// name: both traits have `read`/`write`.
impl aero_gpu::aerogpu::GuestMemory for GuestRam<'_> {
    fn read(&self, gpa: u64, buf: &mut [u8]) -> Result<(), aero_gpu::aerogpu::GuestMemoryError> {
        let err = aero_gpu::aerogpu::GuestMemoryError {
            gpa,
            len: buf.len() as u64,
        };
        self.read_into(gpa, buf).map_err(|_| err)
    }

    fn write(&mut self, gpa: u64, data: &[u8]) -> Result<(), aero_gpu::aerogpu::GuestMemoryError> {
        let err = aero_gpu::aerogpu::GuestMemoryError {
            gpa,
            len: data.len() as u64,
        };
        // Check the whole range first: a rejected write changes nothing.
        if !aero_gpu::aerogpu::GuestMemory::contains(self, gpa, data.len() as u64) {
            return Err(err);
        }
        GuestMemory::write(self, gpa, data).map_err(|_| err)
    }

    fn contains(&self, gpa: u64, len: u64) -> bool {
        let Some(end) = gpa.checked_add(len) else {
            return false;
        };
        let mut page = gpa & !0xFFF;
        while page < end {
            if self.locate(page.max(gpa), true).is_err() {
                return false;
            }
            page += 0x1000;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ram_is_reachable_rom_is_read_only_and_the_hole_is_not() {
        let bios = vec![0xEEu8; 0x20000];
        let (map, mut memory) = MemoryMap::allocate(16 << 20, &bios).unwrap();
        let mut ram = GuestRam::new(&mut memory, &map);
        // A write across a page boundary lands in both pages and is recorded once.
        ram.write(0x1FF0, &[7u8; 0x20]).unwrap();
        assert_eq!(ram.written, vec![(0x1FF0, 0x20)]);
        let mut back = [0u8; 0x20];
        ram.read(0x1FF0, &mut back).unwrap();
        assert_eq!(back, [7u8; 0x20]);
        // The BIOS ROM at the top of 4 GiB reads, but never takes DMA writes.
        let mut rom = [0u8; 4];
        ram.read(0xFFFF_FFF0, &mut rom).unwrap();
        assert_eq!(rom, [0xEE; 4]);
        assert_eq!(
            ram.write(0xFFFF_FFF0, &[0; 4]),
            Err(DmaError::BadAddress(0xFFFF_FFF0))
        );
        // Beyond RAM (16 MiB) and the VGA window are not memory a disk can reach.
        assert!(ram.write(16 << 20, &[0; 4]).is_err());
        assert!(ram.write(0xA0000, &[0; 4]).is_err());
        assert!(ram.read(u64::MAX - 1, &mut [0; 4]).is_err());
    }

    #[test]
    fn aerogpu_sees_ram_only_and_rejected_writes_change_nothing() {
        use aero_gpu::aerogpu::GuestMemory as Gpu;
        let (map, mut memory) = MemoryMap::allocate(16 << 20, &[0xEE; 0x20000]).unwrap();
        let mut ram = GuestRam::new(&mut memory, &map);
        Gpu::write(&mut ram, 0x2FFC, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        let mut back = [0u8; 8];
        Gpu::read(&ram, 0x2FFC, &mut back).unwrap();
        assert_eq!(back, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(
            ram.written,
            vec![(0x2FFC, 8)],
            "recorded for code invalidation"
        );
        assert!(
            !Gpu::contains(&ram, 0, 16 << 20),
            "the VGA window is not RAM"
        );
        assert!(Gpu::contains(&ram, 0x10_0000, 15 << 20));
        assert!(!Gpu::contains(&ram, 0x10_0000, (15 << 20) + 1));
        assert!(!Gpu::contains(&ram, 0xFFFF_FFF0, 4), "ROM");
        assert!(!Gpu::contains(&ram, u64::MAX - 2, 4));
        // A write running off the end of RAM fails as a whole.
        let end = 16 << 20;
        assert!(Gpu::write(&mut ram, end - 4, &[9; 8]).is_err());
        Gpu::read(&ram, end - 4, &mut back[..4]).unwrap();
        assert_eq!(back[..4], [0; 4]);
        assert_eq!(ram.written.len(), 1);
    }

    #[test]
    fn written_pages_merge_scattered_small_writes() {
        let (map, mut memory) = MemoryMap::allocate(16 << 20, &[0u8; 0x20000]).unwrap();
        let mut ram = GuestRam::new(&mut memory, &map);
        // Receive buffers and descriptor status bytes, interleaved as a NIC writes them.
        for i in 0..200u64 {
            ram.write(0x10_0000 + i * 0x800, &[1; 64]).unwrap();
            ram.write(0x20_0000 + i * 16 + 12, &[1]).unwrap();
        }
        assert_eq!(ram.written.len(), 400);
        assert_eq!(
            ram.written_pages(),
            vec![(0x10_0000, 100 * 0x1000), (0x20_0000, 0x1000)]
        );
    }
}
