//! The physical address map: where RAM, the BIOS ROM, shadow RAM and MMIO live.
//!
//! All CPU-visible backing memory is one byte vector (owned by the machine, built by
//! [`MemoryMap::allocate`]) so the CPU's TLB can cache plain offsets: guest RAM first
//! (below-4G part, then the part remapped above 4 GiB), then the system BIOS image, then
//! the display's linear framebuffer. The legacy area 0xC0000–0xFFFFF is shadow RAM whose
//! read/write routing is set by the i440FX PAM registers, like the real chipset.
//!
//! The framebuffer is memory, not a device register file, so it is mapped like RAM where
//! the display decodes it (BAR2, and the 64 KiB VBE bank window at 0xA0000 while a VBE mode
//! is on): guest drawing runs at memory speed instead of one MMIO call per access.

use aero_cpu::PageMapping;
use aero_gpu::vga::{BANK_SIZE, LFB_SIZE};

/// Start of the PCI hole; RAM beyond it is remapped above 4 GiB.
pub const PCI_HOLE_START: u64 = 0xE000_0000;
/// The PCI Express ECAM (MMCONFIG) window: buses 00–FF, 1 MiB each, at the bottom of the
/// PCI hole. The full 256 buses make the MCFG entry and the host bridge's bus range agree
/// (what every OS expects) and cost nothing but address space: the 236 MiB left below the
/// IOAPIC hold our 32-bit BARs many times over (64-bit BARs can go above 4 GiB). Decoded
/// only when our BIOS runs (it publishes the MCFG); see `Platform::set_ecam_enabled`.
pub const ECAM_BASE: u64 = PCI_HOLE_START;
pub const ECAM_BUSES: u16 = 256;
/// Where the BIOS starts placing 32-bit BARs: right above the ECAM window, so no BAR the
/// firmware assigns (or the OS moves inside the ACPI window) can overlap it.
pub const PCI_MMIO_START: u64 = ECAM_BASE + ((ECAM_BUSES as u64) << 20);
const FOUR_GIB: u64 = 1 << 32;
pub const VGA_WINDOW: std::ops::Range<u64> = 0xA0000..0xC0000;
const SHADOW_START: u64 = 0xC0000;
const SHADOW_END: u64 = 0x10_0000;

/// How one PAM segment routes accesses (i440FX PAM register nibble, bits 0 = RE, 1 = WE).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PamMode {
    pub read_ram: bool,
    pub write_ram: bool,
}

impl PamMode {
    #[cfg(test)]
    pub fn from_bits(nibble: u8) -> Self {
        PamMode {
            read_ram: nibble & 1 != 0,
            write_ram: nibble & 2 != 0,
        }
    }
}

/// The rules that map physical pages onto guest RAM and the BIOS image.
pub struct MemoryMap {
    ram_below_4g: u64,
    ram_above_4g: u64,
    bios_offset: usize,
    bios_len: usize,
    /// PAM segments: index 0 = 0xF0000–0xFFFFF (64 KiB), 1..=12 = 0xC0000–0xEFFFF in 16 KiB steps.
    pam: [PamMode; 13],
    /// Backing offset of the [`LFB_SIZE`]-byte linear framebuffer.
    lfb_offset: usize,
    /// Where the display decodes the framebuffer (its BAR), if it does.
    lfb_base: Option<u64>,
    /// Framebuffer offset shown in 0xA0000–0xAFFFF while a VBE mode is on.
    vga_bank: Option<usize>,
}

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("guest RAM of {0} bytes is not possible (need 2 MiB to 1 TiB)")]
    BadRamSize(u64),
    #[error("host could not allocate {0} MiB for guest RAM")]
    OutOfHostMemory(u64),
    #[error("BIOS image must be a multiple of 64 KiB and at most 2 MiB (got {0} bytes)")]
    BadBiosSize(usize),
}

impl MemoryMap {
    /// The map and the backing bytes (RAM zeroed, BIOS image after it, then the
    /// framebuffer).
    pub fn allocate(ram_size: u64, bios: &[u8]) -> Result<(MemoryMap, Vec<u8>), MemoryError> {
        if !(2 << 20..=1 << 40).contains(&ram_size) {
            return Err(MemoryError::BadRamSize(ram_size));
        }
        if bios.is_empty() || !bios.len().is_multiple_of(0x10000) || bios.len() > 2 << 20 {
            return Err(MemoryError::BadBiosSize(bios.len()));
        }
        let ram_below_4g = ram_size.min(PCI_HOLE_START);
        let ram_above_4g = ram_size - ram_below_4g;
        let total = ram_size as usize + bios.len() + LFB_SIZE;
        // Probe first so a size the host cannot give is an error, not an abort; then take
        // zeroed memory from the allocator, which the OS maps lazily (a 2 GiB guest does
        // not touch 2 GiB at start-up).
        Vec::<u8>::new()
            .try_reserve_exact(total)
            .map_err(|_| MemoryError::OutOfHostMemory(ram_size >> 20))?;
        let mut bytes = vec![0u8; total];
        let bios_offset = ram_size as usize;
        let lfb_offset = bios_offset + bios.len();
        bytes[bios_offset..lfb_offset].copy_from_slice(bios);
        let map = MemoryMap {
            ram_below_4g,
            ram_above_4g,
            bios_offset,
            bios_len: bios.len(),
            pam: [PamMode::default(); 13],
            lfb_offset,
            lfb_base: None,
            vga_bank: None,
        };
        Ok((map, bytes))
    }

    pub fn ram_below_4g(&self) -> u64 {
        self.ram_below_4g
    }
    pub fn ram_above_4g(&self) -> u64 {
        self.ram_above_4g
    }

    fn pam_index(paddr: u64) -> usize {
        if paddr >= 0xF0000 {
            0
        } else {
            1 + ((paddr - SHADOW_START) >> 14) as usize
        }
    }

    /// Sets all 13 PAM segments; returns true if anything changed (CPU caches must be flushed).
    pub fn set_pam(&mut self, pam: [PamMode; 13]) -> bool {
        let changed = pam != self.pam;
        self.pam = pam;
        changed
    }

    /// Where the backing bytes hold the linear framebuffer.
    pub fn lfb_range(&self) -> std::ops::Range<usize> {
        self.lfb_offset..self.lfb_offset + LFB_SIZE
    }

    /// The framebuffer's physical address, while the display decodes it.
    pub fn lfb_base(&self) -> Option<u64> {
        self.lfb_base
    }

    /// Moves (or unmaps) the framebuffer; returns true if that changed anything (CPU TLB
    /// and decoded code must be flushed).
    pub fn set_lfb_base(&mut self, base: Option<u64>) -> bool {
        let changed = base != self.lfb_base;
        self.lfb_base = base;
        changed
    }

    /// Shows framebuffer bytes `offset..offset + 64 KiB` at 0xA0000 (VBE banked window),
    /// or gives the window back to the VGA (`None`). Returns true if that changed anything.
    pub fn set_vga_bank(&mut self, offset: Option<usize>) -> bool {
        // A bank past the framebuffer (impossible for the VGA model) stays unmapped.
        let offset = offset.filter(|&o| o.checked_add(BANK_SIZE).is_some_and(|e| e <= LFB_SIZE));
        let changed = offset != self.vga_bank;
        self.vga_bank = offset;
        changed
    }

    /// Offset of RAM address `paddr` in `bytes`, if `paddr` is RAM.
    pub fn ram_offset(&self, paddr: u64) -> Option<usize> {
        if paddr < self.ram_below_4g {
            Some(paddr as usize)
        } else if paddr >= FOUR_GIB && paddr - FOUR_GIB < self.ram_above_4g {
            Some((self.ram_below_4g + paddr - FOUR_GIB) as usize)
        } else {
            None
        }
    }

    /// Offset in `bytes` of the ROM byte that answers reads at `paddr` when shadowing is off:
    /// the top of the BIOS image is aliased below 1 MiB and at the top of the 4 GiB space.
    fn rom_offset(&self, paddr: u64) -> Option<usize> {
        let len = self.bios_len as u64;
        if paddr >= FOUR_GIB - len && paddr < FOUR_GIB {
            return Some(self.bios_offset + (paddr - (FOUR_GIB - len)) as usize);
        }
        // Below 1 MiB only the last 128 KiB of the image is visible (0xE0000–0xFFFFF).
        let low = len.min(0x20000);
        if paddr >= SHADOW_END - low && paddr < SHADOW_END {
            return Some(self.bios_offset + (len - (SHADOW_END - paddr)) as usize);
        }
        None
    }

    /// The CPU's view of one page.
    pub fn map_page(&self, paddr: u64) -> PageMapping {
        let page = paddr & !0xFFF;
        if VGA_WINDOW.contains(&page) {
            let in_window = (page - VGA_WINDOW.start) as usize;
            return match self.vga_bank {
                Some(bank) if in_window < BANK_SIZE => PageMapping::Ram {
                    offset: self.lfb_offset + bank + in_window,
                },
                _ => PageMapping::Mmio,
            };
        }
        if (SHADOW_START..SHADOW_END).contains(&page) {
            let mode = self.pam[Self::pam_index(page)];
            let Some(ram) = self.ram_offset(page) else {
                return PageMapping::Mmio;
            };
            return match (mode.read_ram, mode.write_ram) {
                (true, true) => PageMapping::Ram { offset: ram },
                (true, false) => PageMapping::Rom { offset: ram },
                // Write-only shadowing (reads ROM, writes RAM) cannot be expressed by one
                // page mapping; firmwares use it only to copy ROM onto itself, so the writes
                // are dropped and reads keep coming from ROM. Known limitation.
                (false, _) => match self.rom_offset(page) {
                    Some(offset) => PageMapping::Rom { offset },
                    None => PageMapping::Mmio,
                },
            };
        }
        if let Some(offset) = self.ram_offset(page) {
            return PageMapping::Ram { offset };
        }
        if let Some(offset) = self.rom_offset(page) {
            return PageMapping::Rom { offset };
        }
        // RAM and ROM win over a BAR programmed on top of them.
        if let Some(in_lfb) = self
            .lfb_base
            .and_then(|base| page.checked_sub(base))
            .filter(|&o| o < LFB_SIZE as u64)
        {
            return PageMapping::Ram {
                offset: self.lfb_offset + in_lfb as usize,
            };
        }
        PageMapping::Mmio
    }

    /// Offsets in the backing bytes of RAM `paddr..paddr+len`, if it is one contiguous
    /// RAM block (firmware loading, DMA).
    pub fn ram_range(&self, paddr: u64, len: usize) -> Option<std::ops::Range<usize>> {
        let start = self.ram_offset(paddr)?;
        if len == 0 {
            return Some(start..start);
        }
        let last = paddr.checked_add(len as u64 - 1)?;
        (self.ram_offset(last)? == start + len - 1).then_some(start..start + len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bios() -> Vec<u8> {
        let mut b = vec![0u8; 0x20000];
        b[0x1FFF0] = 0xEA; // reset vector byte
        b[0] = 0x11;
        b
    }

    #[test]
    fn ram_below_hole_and_remap_above_4g() {
        let (m, _) = MemoryMap::allocate(4 << 30, &bios()).unwrap();
        assert_eq!(m.ram_below_4g(), PCI_HOLE_START);
        assert_eq!(m.ram_above_4g(), (4 << 30) - PCI_HOLE_START);
        assert_eq!(m.map_page(0x1000), PageMapping::Ram { offset: 0x1000 });
        assert_eq!(m.map_page(PCI_HOLE_START), PageMapping::Mmio);
        assert_eq!(
            m.map_page(FOUR_GIB),
            PageMapping::Ram {
                offset: PCI_HOLE_START as usize
            }
        );
        assert_eq!(m.map_page(FOUR_GIB + m.ram_above_4g()), PageMapping::Mmio);
    }

    #[test]
    fn bios_visible_at_reset_vector_and_below_1mib() {
        let (m, bytes) = MemoryMap::allocate(16 << 20, &bios()).unwrap();
        let PageMapping::Rom { offset } = m.map_page(0xFFFF_F000) else {
            panic!("reset vector page not ROM")
        };
        assert_eq!(bytes[offset + 0xFF0], 0xEA);
        let PageMapping::Rom { offset } = m.map_page(0xE0000) else {
            panic!("E0000 not ROM")
        };
        assert_eq!(bytes[offset], 0x11);
        assert_eq!(m.map_page(0xA0000), PageMapping::Mmio);
        // C0000 has no ROM behind it with a 128 KiB image and PAM off.
        assert_eq!(m.map_page(0xC0000), PageMapping::Mmio);
    }

    #[test]
    fn pam_routes_shadow_ram() {
        let (mut m, _) = MemoryMap::allocate(16 << 20, &bios()).unwrap();
        let mut pam = [PamMode::default(); 13];
        pam[0] = PamMode::from_bits(3);
        assert!(m.set_pam(pam));
        assert_eq!(m.map_page(0xF0000), PageMapping::Ram { offset: 0xF0000 });
        pam[0] = PamMode::from_bits(1);
        m.set_pam(pam);
        assert_eq!(m.map_page(0xF0000), PageMapping::Rom { offset: 0xF0000 });
        pam[0] = PamMode::from_bits(0);
        m.set_pam(pam);
        assert_eq!(
            m.map_page(0xF0000),
            PageMapping::Rom {
                offset: (16 << 20) + 0x10000
            }
        );
    }

    #[test]
    fn framebuffer_maps_as_memory_at_its_bar_and_the_vbe_window() {
        let (mut m, bytes) = MemoryMap::allocate(16 << 20, &bios()).unwrap();
        let lfb = m.lfb_range();
        assert_eq!(lfb.len(), LFB_SIZE);
        assert_eq!(lfb.end, bytes.len());
        assert_eq!(
            lfb.start,
            (16 << 20) + 0x20000,
            "after RAM and the BIOS image"
        );
        let bar = 0xF000_0000;
        assert_eq!(m.map_page(bar), PageMapping::Mmio, "not decoded yet");
        assert!(m.set_lfb_base(Some(bar)));
        assert!(!m.set_lfb_base(Some(bar)));
        assert_eq!(
            m.map_page(bar + 0x1234),
            PageMapping::Ram {
                offset: lfb.start + 0x1000
            }
        );
        let last = bar + LFB_SIZE as u64 - 1;
        assert_eq!(
            m.map_page(last),
            PageMapping::Ram {
                offset: lfb.end - 0x1000
            }
        );
        assert_eq!(m.map_page(last + 1), PageMapping::Mmio);
        // A BAR over RAM or the ROM does not hide them.
        m.set_lfb_base(Some(0));
        assert_eq!(m.map_page(0x5000), PageMapping::Ram { offset: 0x5000 });
        // At the very top of the address space: no overflow, the first page maps.
        m.set_lfb_base(Some(!0xFFF));
        assert_eq!(m.map_page(u64::MAX), PageMapping::Ram { offset: lfb.start });

        assert!(m.set_vga_bank(Some(3 * BANK_SIZE)));
        assert_eq!(
            m.map_page(0xA0000),
            PageMapping::Ram {
                offset: lfb.start + 3 * BANK_SIZE
            }
        );
        assert_eq!(
            m.map_page(0xAFFFF),
            PageMapping::Ram {
                offset: lfb.start + 3 * BANK_SIZE + 0xF000
            }
        );
        assert_eq!(
            m.map_page(0xB0000),
            PageMapping::Mmio,
            "only 64 KiB are banked"
        );
        m.set_vga_bank(Some(LFB_SIZE - 0x100)); // past the end: stays unmapped
        assert_eq!(m.map_page(0xA0000), PageMapping::Mmio);
        assert!(m.set_vga_bank(Some(0)));
        assert!(m.set_vga_bank(None));
        assert_eq!(m.map_page(0xA0000), PageMapping::Mmio);
    }

    #[test]
    fn hostile_sizes_are_errors() {
        assert!(MemoryMap::allocate(1 << 20, &bios()).is_err());
        assert!(MemoryMap::allocate(16 << 20, &[0u8; 100]).is_err());
        let (m, _) = MemoryMap::allocate(16 << 20, &bios()).unwrap();
        assert_eq!(m.ram_range(u64::MAX - 1, 3), None);
        assert_eq!(m.ram_range((16 << 20) - 1, 2), None);
        assert_eq!(m.ram_range(0x7C00, 2), Some(0x7C00..0x7C02));
    }
}
