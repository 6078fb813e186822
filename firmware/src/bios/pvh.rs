//! Direct boot of an uncompressed ELF `vmlinux` through its PVH entry point (the
//! `XEN_ELFNOTE_PHYS32_ENTRY` note, as QEMU's `-kernel vmlinux` uses it): the kernel's
//! segments go to their physical addresses and the CPU enters the 32-bit entry with EBX
//! pointing at an `hvm_start_info` (command line, initrd module, E820-style memory map,
//! RSDP). Why: a bzImage spends most of its boot decompressing itself (about 4.5 of the
//! Debian amd64 kernel's 6.1 G instructions to init); a vmlinux skips that.

use super::linux::{LinuxBootError, bytes_at, u16_at, u32_at, u64_at};

/// `hvm_start_info` and the tables it points at (free low RAM, below the command line).
pub const START_INFO_ADDR: u64 = 0x1_0000;
const MODLIST_ADDR: u64 = START_INFO_ADDR + 0x40;
pub const MEMMAP_ADDR: u64 = START_INFO_ADDR + 0x80;
/// Entries the memory map may hold (the kernel's zero page takes 128).
pub const MAX_MEMMAP_ENTRIES: usize = 128;
const START_INFO_MAGIC: u32 = 0x336E_C578;
const NOTE_PHYS32_ENTRY: u32 = 18;
const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
/// Segments handled at most (vmlinux has 4-5).
const MAX_SEGMENTS: usize = 16;

/// One PT_LOAD segment: file bytes `offset..offset + file_len` at `paddr`, zeros up to
/// `mem_len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub paddr: u64,
    pub offset: usize,
    pub file_len: usize,
    pub mem_len: u64,
}

/// A vmlinux checked for PVH boot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PvhImage {
    pub entry: u32,
    pub segments: Vec<Segment>,
}

/// The file starts like an ELF image.
pub fn is_elf(file: &[u8]) -> bool {
    file.starts_with(b"\x7fELF")
}

impl PvhImage {
    /// Reads the program headers of a little-endian ELF32/ELF64 x86 image.
    pub fn parse(elf: &[u8]) -> Result<PvhImage, LinuxBootError> {
        let class64 = match bytes_at::<2>(elf, 4)? {
            [2, 1] => true,
            [1, 1] => false,
            _ => {
                return Err(LinuxBootError::BadElf(
                    "not a little-endian ELF32/ELF64 file",
                ));
            }
        };
        // Program header table: offset, entry size, count.
        let (phoff, phentsize, phnum) = if class64 {
            (u64_at(elf, 0x20)?, u16_at(elf, 0x36)?, u16_at(elf, 0x38)?)
        } else {
            (
                u64::from(u32_at(elf, 0x1C)?),
                u16_at(elf, 0x2A)?,
                u16_at(elf, 0x2C)?,
            )
        };
        // Each entry must hold the fields read below (Elf64_Phdr / Elf32_Phdr); a zero
        // size would read the same header phnum times.
        if usize::from(phentsize) < if class64 { 56 } else { 32 } {
            return Err(LinuxBootError::BadElf("program header entries too small"));
        }
        let mut segments = Vec::new();
        let mut entry = None;
        for i in 0..usize::from(phnum) {
            let ph = usize::try_from(phoff)
                .ok()
                .and_then(|o| o.checked_add(i * usize::from(phentsize)))
                .ok_or(LinuxBootError::BadElf("program header offset"))?;
            // A field of this header (saturating: past the address space is past the end
            // of the file, which the readers refuse).
            let field = |off: usize| ph.saturating_add(off);
            let (kind, offset, paddr, file_len, mem_len) = if class64 {
                (
                    u32_at(elf, ph)?,
                    u64_at(elf, field(8))?,
                    u64_at(elf, field(0x18))?,
                    u64_at(elf, field(0x20))?,
                    u64_at(elf, field(0x28))?,
                )
            } else {
                (
                    u32_at(elf, ph)?,
                    u64::from(u32_at(elf, field(4))?),
                    u64::from(u32_at(elf, field(0xC))?),
                    u64::from(u32_at(elf, field(0x10))?),
                    u64::from(u32_at(elf, field(0x14))?),
                )
            };
            let range = usize::try_from(offset)
                .ok()
                .zip(usize::try_from(file_len).ok())
                .filter(|&(o, l)| o.checked_add(l).is_some_and(|end| end <= elf.len()))
                .ok_or(LinuxBootError::BadElf(
                    "a segment runs past the end of the file",
                ))?;
            match kind {
                PT_LOAD if mem_len > 0 => {
                    if segments.len() == MAX_SEGMENTS || mem_len < file_len {
                        return Err(LinuxBootError::BadElf("unusual PT_LOAD segments"));
                    }
                    segments.push(Segment {
                        paddr,
                        offset: range.0,
                        file_len: range.1,
                        mem_len,
                    });
                }
                PT_NOTE => entry = entry.or(phys32_entry(&elf[range.0..range.0 + range.1])),
                _ => {}
            }
        }
        let entry = entry.ok_or(LinuxBootError::NoPvhEntry)?;
        if segments.is_empty() {
            return Err(LinuxBootError::BadElf("no PT_LOAD segment"));
        }
        Ok(PvhImage { entry, segments })
    }

    /// Checks that every segment lies in RAM between 1 MiB and `ram_top`; returns where
    /// the kernel's image ends.
    pub fn check(&self, ram_top: u64) -> Result<u64, LinuxBootError> {
        let mut end = 0;
        for s in &self.segments {
            let seg_end = s.paddr.saturating_add(s.mem_len);
            if s.paddr < 0x10_0000 || seg_end > ram_top {
                return Err(LinuxBootError::KernelTooBig {
                    need: seg_end,
                    ram_top,
                });
            }
            end = end.max(seg_end);
        }
        Ok(end)
    }
}

/// The PVH entry point from a note segment (name "Xen", type 18, 4- or 8-byte address).
fn phys32_entry(notes: &[u8]) -> Option<u32> {
    let mut off = 0usize;
    while off + 12 <= notes.len() {
        let namesz = u32_at(notes, off).ok()? as usize;
        let descsz = u32_at(notes, off + 4).ok()? as usize;
        let kind = u32_at(notes, off + 8).ok()?;
        let name = off + 12;
        let desc = name.checked_add(namesz.next_multiple_of(4))?;
        let next = desc.checked_add(descsz.next_multiple_of(4))?;
        let is_xen = notes
            .get(name..name.checked_add(namesz)?)
            .is_some_and(|n| n.starts_with(b"Xen"));
        if kind == NOTE_PHYS32_ENTRY && is_xen && descsz >= 4 {
            return u32_at(notes, desc).ok();
        }
        off = next;
    }
    None
}

/// The `hvm_start_info` (version 1) bytes.
pub fn start_info(nr_modules: u32, cmdline: u64, rsdp: u64, memmap_entries: u32) -> [u8; 56] {
    let mut b = [0u8; 56];
    b[0..4].copy_from_slice(&START_INFO_MAGIC.to_le_bytes());
    b[4..8].copy_from_slice(&1u32.to_le_bytes());
    b[12..16].copy_from_slice(&nr_modules.to_le_bytes());
    b[16..24].copy_from_slice(&MODLIST_ADDR.to_le_bytes());
    b[24..32].copy_from_slice(&cmdline.to_le_bytes());
    b[32..40].copy_from_slice(&rsdp.to_le_bytes());
    b[40..48].copy_from_slice(&MEMMAP_ADDR.to_le_bytes());
    b[48..52].copy_from_slice(&memmap_entries.to_le_bytes());
    b
}

/// One `hvm_modlist_entry` (the initrd).
pub fn module_entry(paddr: u64, size: u64) -> (u64, [u8; 32]) {
    let mut b = [0u8; 32];
    b[0..8].copy_from_slice(&paddr.to_le_bytes());
    b[8..16].copy_from_slice(&size.to_le_bytes());
    (MODLIST_ADDR, b)
}

/// One `hvm_memmap_table_entry` (address, size, E820 type).
pub fn memmap_entry(addr: u64, size: u64, kind: u32) -> [u8; 24] {
    let mut b = [0u8; 24];
    b[0..8].copy_from_slice(&addr.to_le_bytes());
    b[8..16].copy_from_slice(&size.to_le_bytes());
    b[16..20].copy_from_slice(&kind.to_le_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ELF64 with one PT_LOAD of `code` at `paddr` (+`bss` zero bytes) and a PT_NOTE
    /// holding a Xen PHYS32_ENTRY note for `entry` when given.
    fn elf64(paddr: u64, code: &[u8], bss: u64, entry: Option<u32>) -> Vec<u8> {
        let mut notes = Vec::new();
        // An unrelated note first, then the entry.
        for (kind, desc) in [(6u32, b"linux\0\0\0".to_vec())]
            .into_iter()
            .chain(entry.map(|e| (NOTE_PHYS32_ENTRY, e.to_le_bytes().to_vec())))
        {
            notes.extend_from_slice(&4u32.to_le_bytes());
            notes.extend_from_slice(&(desc.len() as u32).to_le_bytes());
            notes.extend_from_slice(&kind.to_le_bytes());
            notes.extend_from_slice(b"Xen\0");
            notes.extend_from_slice(&desc);
        }
        let mut f = vec![0u8; 0x100];
        f[..4].copy_from_slice(b"\x7fELF");
        f[4] = 2;
        f[5] = 1;
        f[0x20..0x28].copy_from_slice(&0x40u64.to_le_bytes());
        f[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        f[0x38..0x3A].copy_from_slice(&2u16.to_le_bytes());
        let code_off = f.len() as u64;
        f.extend_from_slice(code);
        let note_off = f.len() as u64;
        f.extend_from_slice(&notes);
        let ph = |f: &mut Vec<u8>, at: usize, kind: u32, off: u64, pa: u64, fs: u64, ms: u64| {
            f[at..at + 4].copy_from_slice(&kind.to_le_bytes());
            f[at + 8..at + 16].copy_from_slice(&off.to_le_bytes());
            f[at + 0x18..at + 0x20].copy_from_slice(&pa.to_le_bytes());
            f[at + 0x20..at + 0x28].copy_from_slice(&fs.to_le_bytes());
            f[at + 0x28..at + 0x30].copy_from_slice(&ms.to_le_bytes());
        };
        let (cl, nl) = (code.len() as u64, notes.len() as u64);
        ph(&mut f, 0x40, PT_LOAD, code_off, paddr, cl, cl + bss);
        ph(&mut f, 0x40 + 56, PT_NOTE, note_off, 0, nl, nl);
        f
    }

    #[test]
    fn finds_segments_and_the_pvh_entry() {
        let elf = elf64(0x100_0000, &[0x90; 64], 4096, Some(0x100_0010));
        assert!(is_elf(&elf));
        let img = PvhImage::parse(&elf).unwrap();
        assert_eq!(img.entry, 0x100_0010);
        assert_eq!(img.segments.len(), 1);
        let s = img.segments[0];
        assert_eq!(
            (s.paddr, s.file_len, s.mem_len),
            (0x100_0000, 64, 64 + 4096)
        );
        assert_eq!(&elf[s.offset..s.offset + 4], &[0x90; 4]);
        assert_eq!(img.check(64 << 20).unwrap(), 0x100_0000 + 64 + 4096);
        assert!(matches!(
            img.check(16 << 20),
            Err(LinuxBootError::KernelTooBig { .. })
        ));
    }

    #[test]
    fn hostile_or_foreign_elf_files_are_errors() {
        // No PVH note: a vmlinux built without CONFIG_PVH.
        let elf = elf64(0x100_0000, &[0; 16], 0, None);
        assert_eq!(PvhImage::parse(&elf), Err(LinuxBootError::NoPvhEntry));
        // Truncated anywhere: never a panic, always an error.
        let elf = elf64(0x100_0000, &[0; 64], 0, Some(0x100_0000));
        for len in 0..elf.len() {
            assert!(PvhImage::parse(&elf[..len]).is_err(), "{len}");
        }
        // A segment claiming more file bytes than exist, or a huge header count.
        let mut bad = elf.clone();
        bad[0x40 + 0x20..0x40 + 0x28].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(PvhImage::parse(&bad).is_err());
        let mut bad = elf.clone();
        bad[0x38..0x3A].copy_from_slice(&0xFFFFu16.to_le_bytes());
        assert!(PvhImage::parse(&bad).is_err());
        // Program header entries smaller than Elf64_Phdr: a zero size would read the
        // PT_LOAD header twice and load the same segment twice.
        for size in [0u16, 8, 55] {
            let mut bad = elf.clone();
            bad[0x36..0x38].copy_from_slice(&size.to_le_bytes());
            assert_eq!(
                PvhImage::parse(&bad),
                Err(LinuxBootError::BadElf("program header entries too small")),
                "{size}"
            );
        }
        // A program header table offset at the end of the address space.
        let mut bad = elf.clone();
        bad[0x20..0x28].copy_from_slice(&(u64::MAX - 4).to_le_bytes());
        assert!(PvhImage::parse(&bad).is_err());
        // Big-endian.
        let mut bad = elf;
        bad[5] = 2;
        assert!(PvhImage::parse(&bad).is_err());
    }

    #[test]
    fn start_info_layout() {
        let b = start_info(1, 0x20000, 0xFC000, 5);
        assert_eq!(&b[0..4], &0x336E_C578u32.to_le_bytes());
        assert_eq!(b[4], 1, "version 1: with a memory map");
        assert_eq!(u32::from_le_bytes(b[12..16].try_into().unwrap()), 1);
        assert_eq!(u64::from_le_bytes(b[24..32].try_into().unwrap()), 0x20000);
        assert_eq!(u64::from_le_bytes(b[32..40].try_into().unwrap()), 0xFC000);
        assert_eq!(
            u64::from_le_bytes(b[40..48].try_into().unwrap()),
            MEMMAP_ADDR
        );
        assert_eq!(u32::from_le_bytes(b[48..52].try_into().unwrap()), 5);
        let e = memmap_entry(0x10_0000, 0x1000, 1);
        assert_eq!(u32::from_le_bytes(e[16..20].try_into().unwrap()), 1);
    }
}
