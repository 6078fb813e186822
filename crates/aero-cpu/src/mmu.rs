//! Paging and the software TLB.
//!
//! The TLB maps a linear page to the page's physical address and, for RAM/ROM, to its
//! offset in the guest RAM slice. Each entry carries two permission sets: `perm` is what
//! the page walk allowed (used by the slow path to skip a walk) and `fast` is what the
//! inline hit path may do directly on the RAM slice. Writes to ROM, to pages holding
//! decoded code, and to pages whose dirty bit is still clear never get a fast write bit,
//! so they always reach the slow path, which does the bookkeeping.

use crate::bus::{Bus, PageMapping};
use crate::exec::Exec;
use crate::fault::{Fault, PF, XResult};

pub const TLB_BITS: u32 = 10;
pub const TLB_SIZE: usize = 1 << TLB_BITS;

/// Permission bits: one bit per (access kind, privilege).
pub const R_S: u8 = 1;
pub const W_S: u8 = 2;
pub const X_S: u8 = 4;
pub const R_U: u8 = 8;
pub const W_U: u8 = 16;
pub const X_U: u8 = 32;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Access {
    Read = 0,
    Write = 1,
    Exec = 2,
}

/// The permission bit an access needs.
#[inline(always)]
pub fn need_bit(acc: Access, user: bool) -> u8 {
    1 << (acc as u8 + if user { 3 } else { 0 })
}

const NO_TAG: u64 = u64::MAX;

#[derive(Clone, Copy, Debug)]
pub struct TlbEntry {
    /// Linear page number, or `NO_TAG`.
    pub tag: u64,
    /// Offset of the page in guest RAM (valid when `fast` is non-zero).
    pub host: usize,
    /// Physical address of the page.
    pub phys: u64,
    pub perm: u8,
    pub fast: u8,
    pub rom: bool,
    pub global: bool,
    /// For a 4 KiB piece of a 2/4 MiB/1 GiB page: the linear address bits above the large
    /// page's size (`lin & !mask`) and its mask; 0 for ordinary pages. INVLPG of any address
    /// in a large page drops all of its pieces.
    pub large_base: u64,
    pub large_mask: u64,
}

const EMPTY: TlbEntry = TlbEntry {
    tag: NO_TAG,
    host: 0,
    phys: 0,
    perm: 0,
    fast: 0,
    rom: false,
    global: false,
    large_base: 0,
    large_mask: 0,
};

pub struct Tlb {
    /// Fixed size, so the hit path indexes it without a bounds check.
    pub entries: Box<[TlbEntry; TLB_SIZE]>,
    /// Bumped by every flush: caches derived from translations compare it.
    pub epoch: u64,
    /// Large-page pieces filled since the last full flush (INVLPG then scans).
    pub large_pieces: u32,
}

impl Default for Tlb {
    fn default() -> Self {
        Tlb {
            entries: Box::new([EMPTY; TLB_SIZE]),
            epoch: 0,
            large_pieces: 0,
        }
    }
}

impl Tlb {
    #[inline(always)]
    pub fn index(lin: u64) -> usize {
        ((lin >> 12) as usize) & (TLB_SIZE - 1)
    }
    pub fn flush_all(&mut self) {
        self.epoch += 1;
        self.entries.fill(EMPTY);
        self.large_pieces = 0;
    }
    /// CR3 reload: global pages survive.
    pub fn flush_non_global(&mut self) {
        self.epoch += 1;
        let mut large = 0;
        for e in self.entries.iter_mut() {
            if !e.global {
                *e = EMPTY;
            } else if e.large_mask != 0 {
                large += 1;
            }
        }
        self.large_pieces = large;
    }
    pub fn flush_page(&mut self, lin: u64) {
        self.epoch += 1;
        let e = &mut self.entries[Tlb::index(lin)];
        if e.tag == lin >> 12 {
            *e = EMPTY;
        }
        if self.large_pieces > 0 {
            // The other 4 KiB pieces of a large page live in other slots.
            for e in self.entries.iter_mut() {
                if e.large_mask != 0 && e.tag != NO_TAG && lin & !e.large_mask == e.large_base {
                    *e = EMPTY;
                }
            }
        }
    }
    /// A RAM page now holds decoded code: writes to it must take the slow path.
    pub fn protect_code_page(&mut self, host_page: usize) {
        for e in self.entries.iter_mut() {
            if e.fast != 0 && e.host == host_page {
                e.fast &= !(W_S | W_U);
            }
        }
    }
}

/// Per-RAM-page bookkeeping for self-modifying code: which pages hold decoded blocks, which
/// 64-byte chunks of them, and a generation number that decoded blocks compare against.
/// Chunks matter because real code keeps data next to its instructions (GRUB, BIOS
/// services, 16-bit programs): a write to a neighbouring variable must not throw away the
/// page's decoded blocks.
#[derive(Default)]
pub struct CodePages {
    pub has_code: Vec<u64>,
    /// Per page: bit i set when bytes i*64..i*64+64 hold decoded instructions.
    pub chunks: Vec<u64>,
    pub generation: Vec<u32>,
    /// Bumped whenever any page's generation changes.
    pub epoch: u64,
}

impl CodePages {
    pub fn ensure(&mut self, ram_len: usize) {
        let pages = ram_len.div_ceil(4096) + 1;
        if self.generation.len() < pages {
            self.generation.resize(pages, 0);
            self.chunks.resize(pages, 0);
            self.has_code.resize(pages.div_ceil(64), 0);
        }
    }
    #[inline]
    pub fn has_code(&self, page: usize) -> bool {
        self.has_code
            .get(page / 64)
            .is_some_and(|w| w & (1 << (page % 64)) != 0)
    }
    /// Bytes `start..end` (offsets in the page, `end` up to 4096) were decoded.
    pub fn mark_code(&mut self, page: usize, start: usize, end: usize) {
        if let Some(w) = self.has_code.get_mut(page / 64) {
            *w |= 1 << (page % 64);
        }
        if let Some(c) = self.chunks.get_mut(page) {
            *c |= chunk_mask(start, end);
        }
    }
    /// Whether a write of bytes `start..end` of the page touches decoded instructions.
    #[inline]
    pub fn write_hits_code(&self, page: usize, start: usize, end: usize) -> bool {
        self.has_code(page)
            && self
                .chunks
                .get(page)
                .is_none_or(|&c| c & chunk_mask(start, end) != 0)
    }
    /// The page was written: blocks decoded from it are stale.
    pub fn written(&mut self, page: usize) {
        self.epoch += 1;
        if let Some(w) = self.has_code.get_mut(page / 64) {
            *w &= !(1 << (page % 64));
        }
        if let Some(c) = self.chunks.get_mut(page) {
            *c = 0;
        }
        if let Some(g) = self.generation.get_mut(page) {
            *g = g.wrapping_add(1);
        }
    }
    #[inline]
    pub fn generation_of(&self, page: usize) -> u32 {
        self.generation.get(page).copied().unwrap_or(0)
    }
}

/// The 64-byte chunks covering page bytes `start..end`.
#[inline]
fn chunk_mask(start: usize, end: usize) -> u64 {
    let first = (start.min(4095) / 64) as u32;
    let last = (end.clamp(start + 1, 4096) - 1) / 64;
    let n = last as u32 - first + 1;
    let ones = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    ones << first
}

/// Result of a page walk.
struct Walk {
    phys: u64,
    perm: u8,
    global: bool,
    /// Offset mask of the page (0xFFF, or larger for 2/4 MiB and 1 GiB pages).
    page_mask: u64,
}

const P: u64 = 1;
const RW: u64 = 2;
const US: u64 = 4;
const ACCESSED: u64 = 1 << 5;
const DIRTY: u64 = 1 << 6;
const PS: u64 = 1 << 7;
const G: u64 = 1 << 8;
const NX: u64 = 1 << 63;
const ADDR_MASK: u64 = 0x000F_FFFF_FFFF_F000;

impl Exec<'_> {
    // ---- physical memory -------------------------------------------------------------

    pub fn phys_read(&mut self, paddr: u64, size: u8) -> u64 {
        let paddr = paddr & self.c.a20_mask;
        match self.bus.map_page(paddr) {
            PageMapping::Ram { offset } | PageMapping::Rom { offset } => {
                let o = offset.wrapping_add((paddr & 0xFFF) as usize);
                let mut v = 0u64;
                for i in 0..size as usize {
                    let b = self.ram.get(o.wrapping_add(i)).copied().unwrap_or(0xFF);
                    v |= (b as u64) << (8 * i);
                }
                v
            }
            PageMapping::Mmio => {
                self.bus.sync_time(self.c.retired_now());
                // The bus may return more bits than asked for.
                let v = self.bus.mmio_read(paddr, size) & crate::flags::size_mask(size);
                if self.bus.stop_requested() {
                    self.c.events |= crate::core::EV_STOP;
                    self.c.end_block = true;
                }
                v
            }
        }
    }

    pub fn phys_write(&mut self, paddr: u64, size: u8, value: u64) {
        let paddr = paddr & self.c.a20_mask;
        match self.bus.map_page(paddr) {
            PageMapping::Ram { offset } => {
                let o = offset.wrapping_add((paddr & 0xFFF) as usize);
                self.note_ram_write(o, size as usize);
                for i in 0..size as usize {
                    if let Some(b) = self.ram.get_mut(o.wrapping_add(i)) {
                        *b = (value >> (8 * i)) as u8;
                    }
                }
            }
            PageMapping::Rom { .. } => {}
            PageMapping::Mmio => {
                self.bus.sync_time(self.c.retired_now());
                self.bus.mmio_write(paddr, size, value);
                if self.bus.stop_requested() {
                    self.c.events |= crate::core::EV_STOP;
                    self.c.end_block = true;
                }
            }
        }
    }

    /// Bookkeeping for a write of `size` bytes that reached RAM through the slow path.
    #[inline]
    fn note_ram_write(&mut self, host: usize, size: usize) {
        let page = host >> 12;
        let off = host & 0xFFF;
        if self.c.code.write_hits_code(page, off, off + size) {
            self.c.code.written(page);
            // The running block may contain the bytes just written.
            self.c.end_block = true;
        }
    }

    // ---- page walk ---------------------------------------------------------------------

    fn pf(&mut self, lin: u64, acc: Access, user: bool, present: bool, rsvd: bool) -> Fault {
        self.s.cr2 = lin;
        let mut code = 0u32;
        if present {
            code |= 1;
        }
        if acc == Access::Write {
            code |= 2;
        }
        if user {
            code |= 4;
        }
        if rsvd {
            code |= 8;
        }
        if acc == Access::Exec && self.s.efer & EFER_NXE != 0 && self.s.cr4 & CR4_PAE != 0 {
            code |= 16;
        }
        Fault::with_code(PF, code)
    }

    /// Set A (and D for writes) in a paging-structure entry if needed.
    fn touch_entry(&mut self, addr: u64, entry: u64, wide: bool, dirty: bool) -> u64 {
        let mut want = entry | ACCESSED;
        if dirty {
            want |= DIRTY;
        }
        if want != entry {
            self.phys_write(
                addr,
                if wide { 8 } else { 4 },
                if wide { want } else { want & 0xFFFF_FFFF },
            );
        }
        want
    }

    fn walk(&mut self, lin: u64, acc: Access, user: bool) -> XResult<Walk> {
        let cr4 = self.s.cr4;
        let wp = self.s.cr0 & CR0_WP != 0;
        let nxe = self.s.efer & EFER_NXE != 0;
        let write = acc == Access::Write;
        // Accumulated permissions over the levels.
        let mut rw = true;
        let mut us = true;
        let mut nx = false;
        let (leaf_addr, leaf, page_mask, wide);
        // Upper-level entries whose A bit gets set once the walk succeeds: a walk that
        // faults leaves every A bit alone, as the 386 does (test386 POST 11 checks the PDE).
        let mut upper: [(u64, u64); 3] = [(0, 0); 3];
        let mut n_upper = 0usize;

        if cr4 & CR4_PAE == 0 {
            // 2-level, 4-byte entries.
            let pde_addr = (self.s.cr3 & 0xFFFF_F000) + ((lin >> 22) & 0x3FF) * 4;
            let pde = self.phys_read(pde_addr, 4);
            if pde & P == 0 {
                return Err(self.pf(lin, acc, user, false, false));
            }
            rw &= pde & RW != 0;
            us &= pde & US != 0;
            if pde & PS != 0 && cr4 & CR4_PSE != 0 {
                // 4 MiB page; PSE-36 supplies physical bits 32..39 from bits 13..20.
                let base = (pde & 0xFFC0_0000) | ((pde >> 13) & 0xFF) << 32;
                leaf_addr = pde_addr;
                leaf = base | (pde & 0x1FFF);
                page_mask = 0x3F_FFFF;
                wide = false;
            } else {
                upper[0] = (pde_addr, pde);
                n_upper = 1;
                let pte_addr = (pde & 0xFFFF_F000) + ((lin >> 12) & 0x3FF) * 4;
                let pte = self.phys_read(pte_addr, 4);
                if pte & P == 0 {
                    return Err(self.pf(lin, acc, user, false, false));
                }
                rw &= pte & RW != 0;
                us &= pte & US != 0;
                leaf_addr = pte_addr;
                leaf = pte;
                page_mask = 0xFFF;
                wide = false;
            }
        } else {
            let mut table;
            let mut level;
            if self.s.efer & EFER_LMA != 0 {
                table = self.s.cr3 & ADDR_MASK;
                level = 4;
            } else {
                // PAE: the PDPTE has only P (and reserved bits), no permissions.
                let pdpte_addr = (self.s.cr3 & 0xFFFF_FFE0) + ((lin >> 30) & 3) * 8;
                let pdpte = self.phys_read(pdpte_addr, 8);
                if pdpte & P == 0 {
                    return Err(self.pf(lin, acc, user, false, false));
                }
                table = pdpte & ADDR_MASK;
                level = 2;
            }
            loop {
                let shift = 12 + 9 * (level - 1);
                let addr = table + ((lin >> shift) & 0x1FF) * 8;
                let e = self.phys_read(addr, 8);
                if e & P == 0 {
                    return Err(self.pf(lin, acc, user, false, false));
                }
                if e & NX != 0 && !nxe {
                    return Err(self.pf(lin, acc, user, true, true));
                }
                rw &= e & RW != 0;
                us &= e & US != 0;
                nx |= e & NX != 0;
                if level == 1 || (e & PS != 0 && level <= 3) {
                    leaf_addr = addr;
                    leaf = e;
                    page_mask = (1u64 << shift) - 1;
                    wide = true;
                    break;
                }
                if let Some(slot) = upper.get_mut(n_upper) {
                    *slot = (addr, e);
                    n_upper += 1;
                }
                table = e & ADDR_MASK;
                level -= 1;
            }
        }

        // Permission check for this access.
        let ok = match acc {
            Access::Read => !user || us,
            Access::Write => {
                if user {
                    us && rw
                } else {
                    rw || !wp
                }
            }
            Access::Exec => !(nx && nxe) && (!user || us),
        };
        if !ok {
            return Err(self.pf(lin, acc, user, true, false));
        }
        for &(addr, e) in &upper[..n_upper] {
            self.touch_entry(addr, e, cr4 & CR4_PAE != 0, false);
        }
        let leaf = self.touch_entry(leaf_addr, leaf, wide, write);
        let dirty = leaf & DIRTY != 0;
        let mut perm = R_S;
        if (rw || !wp) && dirty {
            perm |= W_S;
        }
        if !(nx && nxe) {
            perm |= X_S;
        }
        if us {
            perm |= R_U;
            if rw && dirty {
                perm |= W_U;
            }
            if !(nx && nxe) {
                perm |= X_U;
            }
        }
        let frame = if page_mask == 0xFFF {
            leaf & ADDR_MASK
        } else {
            leaf & ADDR_MASK & !page_mask
        };
        let phys = (frame | (lin & page_mask & !0xFFF)) & !0xFFF;
        Ok(Walk {
            phys,
            perm,
            global: leaf & G != 0 && cr4 & CR4_PGE != 0,
            page_mask,
        })
    }

    /// Translate `lin` for `acc`, refilling the TLB entry; returns the entry index.
    pub fn translate(&mut self, lin: u64, acc: Access, user: bool) -> XResult<usize> {
        // Never a TLB entry for a non-canonical address: the flat memory forms rely on a
        // hit meaning the address passed the canonical check.
        if ((lin as i64) << 16 >> 16) as u64 != lin {
            return Err(Fault::gp0());
        }
        let idx = Tlb::index(lin);
        let need = need_bit(acc, user);
        let e = self.c.tlb.entries[idx];
        if e.tag == lin >> 12 && e.perm & need != 0 {
            // A code page whose blocks were invalidated becomes fast-writable again.
            if acc == Access::Write
                && e.fast != 0
                && !e.rom
                && e.fast & need == 0
                && !self.c.code.has_code(e.host >> 12)
            {
                self.c.tlb.entries[idx].fast |= e.perm & (W_S | W_U);
            }
            return Ok(idx);
        }
        let w = if self.s.cr0 & CR0_PG != 0 {
            self.walk(lin, acc, user)?
        } else {
            Walk {
                phys: lin & 0xFFFF_F000,
                perm: 0x3F,
                global: false,
                page_mask: 0xFFF,
            }
        };
        let phys = w.phys & self.c.a20_mask;
        let mut fast = 0;
        let mut host = 0;
        let mut rom = false;
        match self.bus.map_page(phys) {
            PageMapping::Ram { offset } => {
                host = offset;
                fast = w.perm;
                if self.c.code.has_code(offset >> 12) {
                    fast &= !(W_S | W_U);
                }
            }
            PageMapping::Rom { offset } => {
                host = offset;
                rom = true;
                fast = w.perm & !(W_S | W_U);
            }
            PageMapping::Mmio => {}
        }
        // The fast path indexes the RAM slice; a mapping outside it must stay slow.
        if host
            .checked_add(4096)
            .is_none_or(|end| end > self.ram.len())
        {
            fast = 0;
        }
        let (large_base, large_mask) = if w.page_mask > 0xFFF {
            self.c.tlb.large_pieces = self.c.tlb.large_pieces.saturating_add(1);
            (lin & !w.page_mask, w.page_mask)
        } else {
            (0, 0)
        };
        self.c.tlb.entries[idx] = TlbEntry {
            tag: lin >> 12,
            host,
            phys,
            perm: w.perm,
            fast,
            rom,
            global: w.global,
            large_base,
            large_mask,
        };
        Ok(idx)
    }

    // ---- linear memory access -----------------------------------------------------------

    /// Slow path of a linear read of `size` (1..=8) bytes.
    pub fn read_lin_slow(&mut self, lin: u64, size: u8, user: bool) -> XResult<u64> {
        let lin = lin & self.c.lin_mask;
        if self.c.breakpoints.data {
            self.check_data_breakpoints(lin, size, Access::Read);
        }
        if (lin & 0xFFF) + size as u64 > 0x1000 {
            // Page-crossing: check both pages before reading anything.
            let first = (0x1000 - (lin & 0xFFF)) as u8;
            let i0 = self.translate(lin, Access::Read, user)?;
            let lin2 = lin.wrapping_add(first as u64) & self.c.lin_mask;
            let i1 = self.translate(lin2, Access::Read, user)?;
            let p0 = self.c.tlb.entries[i0].phys | (lin & 0xFFF);
            let p1 = self.c.tlb.entries[i1].phys;
            let lo = self.phys_read(p0, first);
            let hi = self.phys_read(p1, size - first);
            return Ok(lo | hi << (8 * first as u32));
        }
        let i = self.translate(lin, Access::Read, user)?;
        let p = self.c.tlb.entries[i].phys | (lin & 0xFFF);
        Ok(self.phys_read(p, size))
    }

    pub fn write_lin_slow(&mut self, lin: u64, size: u8, value: u64, user: bool) -> XResult {
        let lin = lin & self.c.lin_mask;
        if self.c.breakpoints.data {
            self.check_data_breakpoints(lin, size, Access::Write);
        }
        if (lin & 0xFFF) + size as u64 > 0x1000 {
            let first = (0x1000 - (lin & 0xFFF)) as u8;
            let lin2 = lin.wrapping_add(first as u64) & self.c.lin_mask;
            // Both translations must succeed before either half is written.
            self.translate(lin, Access::Write, user)?;
            self.translate(lin2, Access::Write, user)?;
            let i0 = self.translate(lin, Access::Write, user)?;
            let p0 = self.c.tlb.entries[i0].phys | (lin & 0xFFF);
            self.phys_write(p0, first, value);
            let i1 = self.translate(lin2, Access::Write, user)?;
            let p1 = self.c.tlb.entries[i1].phys;
            self.phys_write(p1, size - first, value >> (8 * first as u32));
            return Ok(());
        }
        let i = self.translate(lin, Access::Write, user)?;
        let p = self.c.tlb.entries[i].phys | (lin & 0xFFF);
        self.phys_write(p, size, value);
        Ok(())
    }

    /// Read `N` bytes at a linear address with the current privilege.
    #[inline(always)]
    pub fn read_lin<const N: usize>(&mut self, lin: u64) -> XResult<u64> {
        match self.read_fast::<N>(lin) {
            Some(v) => Ok(v),
            None => self.read_lin_slow(lin, N as u8, self.c.user),
        }
    }

    /// The TLB hit path of `read_lin`: `None` when the access needs the slow path.
    #[inline(always)]
    pub fn read_fast<const N: usize>(&self, lin: u64) -> Option<u64> {
        let e = &self.c.tlb.entries[Tlb::index(lin)];
        let off = (lin & 0xFFF) as usize;
        if e.tag == lin >> 12
            && e.fast & self.c.need_r != 0
            && off + N <= 4096
            && let Some(b) = self.ram.get(e.host + off..e.host + off + N)
        {
            let mut buf = [0u8; 8];
            buf[..N].copy_from_slice(b);
            return Some(u64::from_le_bytes(buf));
        }
        None
    }

    #[inline(always)]
    pub fn write_lin<const N: usize>(&mut self, lin: u64, v: u64) -> XResult {
        if self.write_fast::<N>(lin, v) {
            return Ok(());
        }
        self.write_lin_slow(lin, N as u8, v, self.c.user)
    }

    /// The TLB hit path of `write_lin`: false (nothing written) when the access needs the
    /// slow path.
    #[inline(always)]
    pub fn write_fast<const N: usize>(&mut self, lin: u64, v: u64) -> bool {
        let e = &self.c.tlb.entries[Tlb::index(lin)];
        let off = (lin & 0xFFF) as usize;
        if e.tag == lin >> 12 && e.fast & self.c.need_w != 0 && off + N <= 4096 {
            let h = e.host + off;
            if let Some(b) = self.ram.get_mut(h..h + N) {
                b.copy_from_slice(&v.to_le_bytes()[..N]);
                return true;
            }
        }
        false
    }

    /// RAM offset of `lin` if the TLB allows a fast-path access of this kind right now.
    #[inline(always)]
    pub fn fast_host(&self, lin: u64, write: bool) -> Option<usize> {
        let e = &self.c.tlb.entries[Tlb::index(lin)];
        let need = if write { self.c.need_w } else { self.c.need_r };
        if e.tag == lin >> 12 && e.fast & need != 0 {
            Some(e.host + (lin & 0xFFF) as usize)
        } else {
            None
        }
    }

    /// Sized linear read (1, 2, 4 or 8 bytes).
    #[inline]
    pub fn read_lin_sized(&mut self, lin: u64, size: u8) -> XResult<u64> {
        match size {
            1 => self.read_lin::<1>(lin),
            2 => self.read_lin::<2>(lin),
            4 => self.read_lin::<4>(lin),
            _ => self.read_lin::<8>(lin),
        }
    }

    #[inline]
    pub fn write_lin_sized(&mut self, lin: u64, size: u8, v: u64) -> XResult {
        match size {
            1 => self.write_lin::<1>(lin, v),
            2 => self.write_lin::<2>(lin, v),
            4 => self.write_lin::<4>(lin, v),
            _ => self.write_lin::<8>(lin, v),
        }
    }

    /// Supervisor-privilege accesses (descriptor tables, TSS, IDT) regardless of CPL.
    pub fn read_sys(&mut self, lin: u64, size: u8) -> XResult<u64> {
        self.read_lin_slow(lin, size, false)
    }
    pub fn write_sys(&mut self, lin: u64, size: u8, v: u64) -> XResult {
        self.write_lin_slow(lin, size, v, false)
    }
}

pub const CR0_PE: u64 = 1;
pub const CR0_MP: u64 = 1 << 1;
pub const CR0_EM: u64 = 1 << 2;
pub const CR0_TS: u64 = 1 << 3;
pub const CR0_ET: u64 = 1 << 4;
pub const CR0_NE: u64 = 1 << 5;
pub const CR0_WP: u64 = 1 << 16;
pub const CR0_AM: u64 = 1 << 18;
pub const CR0_NW: u64 = 1 << 29;
pub const CR0_CD: u64 = 1 << 30;
pub const CR0_PG: u64 = 1 << 31;
pub const CR4_VME: u64 = 1 << 0;
pub const CR4_PVI: u64 = 1 << 1;
pub const CR4_TSD: u64 = 1 << 2;
pub const CR4_DE: u64 = 1 << 3;
pub const CR4_PSE: u64 = 1 << 4;
pub const CR4_PAE: u64 = 1 << 5;
pub const CR4_MCE: u64 = 1 << 6;
pub const CR4_PGE: u64 = 1 << 7;
pub const CR4_PCE: u64 = 1 << 8;
pub const CR4_OSFXSR: u64 = 1 << 9;
pub const CR4_OSXMMEXCPT: u64 = 1 << 10;
pub const EFER_SCE: u64 = 1;
pub const EFER_LME: u64 = 1 << 8;
pub const EFER_LMA: u64 = 1 << 10;
pub const EFER_NXE: u64 = 1 << 11;

#[allow(dead_code)]
fn _assert_bus_object_safe(_: &dyn Bus) {}
