//! Decoding guest code into [`Insn`]s (once) and the block cache.
//!
//! Blocks live in one arena and are found three ways, fastest first:
//! - a link: each block remembers the two blocks that ran after it (by linear RIP);
//! - the front cache: a small direct-mapped table by linear RIP;
//! - the block table: a hash table by physical address and code size, holding every
//!   block decoded since the cache was last emptied (it is emptied whole when the arena
//!   is full, as QEMU does with its translation cache).
//!
//! Nothing global dies with a TLB flush or a code write. A block found by link or front
//! cache is checked on the spot: its code page generation (a write to its decoded bytes
//! bumps it), and that its linear page still maps to its physical page, which is free
//! when the page is the one the previous block was fetched from with no TLB flush since
//! (QEMU's rule for chaining within a page) and otherwise one look at the TLB entry.

use crate::bus::PageMapping;
use crate::exec::{
    self, Exec, Insn, K_CR, K_DR, K_HI8, K_IMM, K_MEM, K_NONE, K_OTHER, K_REG, K_SEG, MemRef, Opnd,
};
use crate::exec::{NO_REG, PFX_LOCK, PFX_REP, PFX_REPNE, RIP_REG};
use crate::fault::{Fault, XResult};
use crate::flags::size_mask;
use crate::mmu::{Access, Tlb};
use iced_x86::{
    Code, ConditionCode, Decoder, DecoderOptions, FlowControl, Instruction, OpKind, Register,
};
use std::cell::Cell;

/// Longest block; keeps decode latency and interrupt latency bounded.
const MAX_BLOCK_INSNS: usize = 48;
/// Most blocks kept at once. The arena grows as code is decoded; when it is full every
/// block is dropped and the memory reused. A Linux boot to its shell decodes about 70k
/// distinct blocks (`cache-stats`); a block with its instructions takes about 0.7 KiB.
const MAX_BLOCKS: usize = 1 << 17;
/// Front cache entries (by linear RIP), allocated on first use.
const FRONT_BITS: u32 = 12;
/// Index of the uncached scratch block (arena slot 0, never in the block table).
pub const SCRATCH: usize = 0;
/// `Block::phys2` of a block within one page.
const ONE_PAGE: u64 = u64::MAX;
/// `BlockCache::last_tag` when no page is known to be mapped as it was.
const NO_TAG: u64 = u64::MAX;

/// Fields in the order the run loop reads them, on cache-line boundaries: following a
/// link reads the first line of the target (checks, instructions) and the second of the
/// source (links).
#[repr(C, align(64))]
pub struct Block {
    /// Unique per decode (0 for uncached and dropped blocks): links and front-cache entries
    /// name a block by it, and compiled code (`jit`) too, so a re-decoded or dropped block
    /// is never used for another.
    pub serial: u64,
    /// `CodePages::epoch` when the block was last known current: while no code page was
    /// written since, its own page's generation need not be looked up.
    code_epoch: Cell<u64>,
    /// RAM page (offset >> 12) the code came from, and its generation at decode time.
    host_page: usize,
    code_gen: u32,
    /// The flat-segment mask (`Core::flat`) the block was decoded under, and the bits of
    /// it its handlers depend on (memory operands' segments, SS for stack instructions):
    /// the block serves every mask that agrees on those.
    pub(crate) flat: u8,
    flat_used: u8,
    /// Bytes of the block on its first page (all of `bytes` unless it crosses).
    len1: u16,
    /// Physical address of the first page.
    phys_page: u64,
    /// Physical address of the second page for a block crossing a page boundary, else
    /// `ONE_PAGE`.
    phys2: u64,
    pub insns: Vec<Insn>,
    /// How many of `insns` run when the block runs whole: a fused CMP/TEST+Jcc at the end
    /// runs its Jcc itself (the Jcc stays in `insns` for runs cut off before it).
    pub run_len: usize,
    /// The blocks that ran next (most recent first): a lookup that needs no hashing.
    next: [Link; 2],
    /// Physical address and code size (`block_key`): the block table's key.
    key: u64,
    /// RAM page and generation of the second page (crossing blocks only).
    host_page2: usize,
    code_gen2: u32,
    /// The code bytes decoded: after a write to the page, equal bytes mean the block is
    /// still right (GRUB and BIOS code keep variables, even patched opcodes, next to
    /// their instructions).
    bytes: Vec<u8>,
}

/// The block `serial` at arena index `idx`, reached at linear address `lin` under
/// `Core::mode_bits` `mode` (privilege, code size, flat mask: one compare covers them).
/// All zero is never valid (`mode_bits` holds the code size, never 0).
#[derive(Clone, Copy)]
struct Link {
    lin: u64,
    mode: u64,
    serial: u64,
    idx: u32,
}

const NO_LINK: Link = Link {
    lin: 0,
    mode: 0,
    serial: 0,
    idx: 0,
};

const fn empty_block() -> Block {
    Block {
        serial: 0,
        code_epoch: Cell::new(u64::MAX),
        host_page: usize::MAX,
        code_gen: 0,
        flat: 0,
        flat_used: 0,
        len1: 0,
        phys_page: 0,
        phys2: ONE_PAGE,
        insns: Vec::new(),
        run_len: 0,
        next: [NO_LINK; 2],
        key: u64::MAX,
        host_page2: usize::MAX,
        code_gen2: 0,
        bytes: Vec::new(),
    }
}

/// One block table entry: a block's key and arena index (`NO_INDEX`: empty).
#[derive(Clone, Copy)]
struct TableEntry {
    key: u64,
    idx: u32,
}

const NO_INDEX: u32 = u32::MAX;
const EMPTY_ENTRY: TableEntry = TableEntry {
    key: 0,
    idx: NO_INDEX,
};

/// Counts one event in `BlockCache::stats` (feature `cache-stats`; nothing when off).
macro_rules! count {
    ($cache:expr, $field:ident) => {
        #[cfg(feature = "cache-stats")]
        {
            $cache.stats.$field += 1;
        }
    };
}

/// What the block cache did, for measuring it on real guests (`cache-stats`).
#[cfg(feature = "cache-stats")]
#[derive(Default, Debug)]
struct CacheStats {
    fetches: u64,
    link_hits: u64,
    front_hits: u64,
    table_hits: u64,
    decodes: u64,
    /// A decoded block replaced a stale one (its code changed, or its second page maps
    /// elsewhere).
    replaced: u64,
    /// Revalidated by content after a write to its page.
    revalidated: u64,
    uncached: u64,
    /// The arena was full and every block dropped.
    flushes: u64,
    /// Blocks in the arena.
    live: u64,
}

#[cfg(feature = "cache-stats")]
impl CacheStats {
    fn fetched(&mut self) {
        self.fetches += 1;
        if self.fetches % (1 << 24) == 0 {
            eprintln!("aero-cpu block cache: {self:?}");
        }
    }
}

pub struct BlockCache {
    /// Recently fetched blocks by linear RIP (empty until first used).
    front: Vec<Link>,
    /// The arena: `blocks[0]` is the scratch block, `blocks[1..live]` are in the block
    /// table, the rest are dropped blocks whose memory (instruction and byte vectors) the
    /// next decodes reuse. Indexes handed out stay below `blocks.len()` (it never shrinks).
    blocks: Vec<Block>,
    live: usize,
    /// Open addressing, linear probing, at most half full; grows with `live`.
    table: Vec<TableEntry>,
    /// Decode buffers, swapped with the block a decode fills: their old contents come
    /// back here, so decoding reuses memory instead of allocating.
    tmp_insns: Vec<Insn>,
    tmp_bytes: Vec<u8>,
    /// `Tlb::epoch` at the last fetch.
    seen_tlb: u64,
    /// Linear page of the last block fetched, with the user bit in bit 0 (`NO_TAG` after
    /// a TLB flush), and the physical page it maps to: a block on the same page for the
    /// same privilege needs no TLB look.
    last_tag: u64,
    last_phys_page: u64,
    /// The last `Block::serial` given.
    next_serial: u64,
    /// Blocks decoded so far (cached or not): counted off the hot path, for tests.
    pub decoded: u64,
    #[cfg(feature = "cache-stats")]
    stats: CacheStats,
}

impl Default for BlockCache {
    fn default() -> Self {
        BlockCache {
            front: Vec::new(),
            blocks: vec![empty_block()],
            live: 1,
            table: Vec::new(),
            tmp_insns: Vec::new(),
            tmp_bytes: Vec::new(),
            seen_tlb: 0,
            last_tag: NO_TAG,
            last_phys_page: 0,
            next_serial: 0,
            decoded: 0,
            #[cfg(feature = "cache-stats")]
            stats: CacheStats::default(),
        }
    }
}

/// A block's table key: its physical address (bits 0..51) and code size (58..60). The
/// flat mask is checked per block (`Block::flat_used`), so code that does not care
/// about FS (a 64-bit kernel's, run with the current task's FS base flat or not) is one
/// block.
#[inline(always)]
fn block_key(phys: u64, bitness: u32) -> u64 {
    (phys & ((1 << 52) - 1)) | (((bitness as u64) >> 4) << 58)
}

#[inline(always)]
fn hash(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize
}

#[inline(always)]
fn front_index(lin: u64) -> usize {
    ((lin ^ (lin >> FRONT_BITS)) as usize) & ((1 << FRONT_BITS) - 1)
}

/// Whether the TLB maps `lin` to physical page `phys_page`, executable at the current
/// privilege.
#[inline(always)]
fn tlb_maps(ex: &Exec<'_>, lin: u64, phys_page: u64) -> bool {
    let e = &ex.c.tlb.entries[Tlb::index(lin)];
    e.tag == lin >> 12
        && e.perm & crate::mmu::need_bit(Access::Exec, ex.c.user) != 0
        && e.phys == phys_page
}

impl BlockCache {
    /// Drop every block (bus mapping changes, reset, too many invalidations).
    pub fn clear(&mut self) {
        self.front.fill(NO_LINK);
        self.table.fill(EMPTY_ENTRY);
        for b in &mut self.blocks[..self.live] {
            b.serial = 0;
            b.next = [NO_LINK; 2];
        }
        self.live = 1;
        self.last_tag = NO_TAG;
    }

    /// The block starting at the current RIP, decoding it if needed. `prev` is the block
    /// that ran just before (or `SCRATCH`): its links are tried first.
    #[inline]
    pub fn fetch(&mut self, ex: &mut Exec<'_>, prev: usize) -> XResult<usize> {
        let rip = ex.s.rip;
        if !ex.c.long64 && rip > ex.s.seg[1].limit as u64 {
            return Err(Fault::gp0());
        }
        #[cfg(feature = "cache-stats")]
        self.stats.fetched();
        if ex.c.tlb.epoch != self.seen_tlb {
            // Pages may map elsewhere now: the same-page shortcut needs a fresh look.
            self.seen_tlb = ex.c.tlb.epoch;
            self.last_tag = NO_TAG;
        }
        let lin = ex.s.seg[1].base.wrapping_add(rip) & ex.c.lin_mask;
        let mode = ex.c.mode_bits;
        let tag = (lin & !0xFFF) | ex.c.user as u64;
        for l in &self.blocks[prev].next {
            if l.lin == lin && l.mode == mode {
                let t = &self.blocks[l.idx as usize];
                if t.serial == l.serial && self.still_valid(t, lin, tag, ex) {
                    count!(self, link_hits);
                    self.last_tag = tag;
                    self.last_phys_page = t.phys_page;
                    return Ok(l.idx as usize);
                }
            }
        }
        let idx = self.fetch_unlinked(ex, lin, tag)?;
        if idx != SCRATCH && prev != SCRATCH {
            let serial = self.blocks[idx].serial;
            let p = &mut self.blocks[prev];
            p.next[1] = p.next[0];
            p.next[0] = Link {
                lin,
                mode,
                serial,
                idx: idx as u32,
            };
        }
        Ok(idx)
    }

    /// Whether block `t`, found by link or front cache for linear address `lin`, may run:
    /// its code unchanged and its page(s) mapped as when it was decoded.
    #[inline(always)]
    fn still_valid(&self, t: &Block, lin: u64, tag: u64, ex: &Exec<'_>) -> bool {
        code_current(t, ex)
            && ((tag == self.last_tag && t.phys_page == self.last_phys_page)
                || tlb_maps(ex, lin, t.phys_page))
            && (t.phys2 == ONE_PAGE || second_page_valid(t, lin, ex))
    }

    #[inline]
    fn fetch_unlinked(&mut self, ex: &mut Exec<'_>, lin: u64, tag: u64) -> XResult<usize> {
        let fi = front_index(lin);
        if let Some(f) = self.front.get(fi)
            && f.lin == lin
            && f.mode == ex.c.mode_bits
            && let t = &self.blocks[f.idx as usize]
            && t.serial == f.serial
            && self.still_valid(t, lin, tag, ex)
        {
            count!(self, front_hits);
            self.last_tag = tag;
            self.last_phys_page = t.phys_page;
            return Ok(f.idx as usize);
        }
        let idx = self.lookup(ex, lin)?;
        if idx != SCRATCH {
            let t = &self.blocks[idx];
            if self.front.is_empty() {
                self.front = vec![NO_LINK; 1 << FRONT_BITS];
            }
            self.front[fi] = Link {
                lin,
                mode: ex.c.mode_bits,
                serial: t.serial,
                idx: idx as u32,
            };
            self.last_tag = tag;
            self.last_phys_page = t.phys_page;
        } else {
            self.last_tag = NO_TAG;
        }
        Ok(idx)
    }

    /// The block table path: translate, find a block for this physical address and
    /// mode, revalidate or decode it.
    #[inline(never)]
    fn lookup(&mut self, ex: &mut Exec<'_>, lin: u64) -> XResult<usize> {
        let bitness = ex.c.bitness;
        let rip = ex.s.rip;
        let user = ex.c.user;
        // Inline TLB hit check; the full translate() only on a miss.
        let need = crate::mmu::need_bit(Access::Exec, user);
        let mut ti = Tlb::index(lin);
        let hit = {
            let e = &ex.c.tlb.entries[ti];
            e.tag == lin >> 12 && e.perm & need != 0
        };
        if !hit {
            ti = ex.translate(lin, Access::Exec, user)?;
        }
        let e = ex.c.tlb.entries[ti];
        let phys = e.phys | (lin & 0xFFF);
        let key = block_key(phys, bitness);
        if e.fast == 0 {
            // MMIO (or outside the RAM slice): decoded each time.
            let d = decode_block(
                ex,
                rip,
                lin,
                phys,
                bitness,
                false,
                &mut self.tmp_insns,
                &mut self.tmp_bytes,
            )?;
            count!(self, decodes);
            count!(self, uncached);
            self.fill(SCRATCH, key, e.phys, usize::MAX, &d);
            return Ok(SCRATCH);
        }
        let start = (lin & 0xFFF) as usize;
        let host_page = e.host >> 12;
        let flat = ex.c.flat;
        let found = self.find(key, flat);
        if let Some(idx) = found
            && self.revalidate(ex, idx, lin, host_page, start)
        {
            count!(self, table_hits);
            return Ok(idx);
        }
        let d = decode_block(
            ex,
            rip,
            lin,
            phys,
            bitness,
            true,
            &mut self.tmp_insns,
            &mut self.tmp_bytes,
        )?;
        count!(self, decodes);
        if !d.cacheable {
            count!(self, uncached);
            self.fill(SCRATCH, key, e.phys, usize::MAX, &d);
            return Ok(SCRATCH);
        }
        mark_code(ex, host_page, start, start + d.len1);
        if let Some((_, host2)) = d.page2 {
            mark_code(ex, host2, 0, d.len - d.len1);
        }
        let idx = match found {
            Some(idx) => {
                count!(self, replaced);
                idx
            }
            None => self.alloc(),
        };
        self.fill(idx, key, e.phys, host_page, &d);
        let b = &mut self.blocks[idx];
        b.code_gen = ex.c.code.generation_of(host_page);
        if let Some((p2, host2)) = d.page2 {
            b.phys2 = p2;
            b.host_page2 = host2;
            b.code_gen2 = ex.c.code.generation_of(host2);
        }
        b.code_epoch.set(ex.c.code.epoch);
        if found.is_none() {
            self.insert(idx);
        }
        Ok(idx)
    }

    /// The live block for `key` decoded under a flat mask that agrees with `flat` on the
    /// bits it uses.
    fn find(&self, key: u64, flat: u8) -> Option<usize> {
        let mask = self.table.len().checked_sub(1)?;
        let mut i = hash(key) & mask;
        loop {
            let t = self.table[i];
            if t.idx == NO_INDEX {
                return None;
            }
            if t.key == key
                && let Some(b) = self.blocks.get(t.idx as usize)
                && (b.flat ^ flat) & b.flat_used == 0
            {
                return Some(t.idx as usize);
            }
            i = (i + 1) & mask;
        }
    }

    /// Whether table block `idx` is still right for `lin`: its code unchanged (or
    /// rewritten with the same bytes, then current again).
    fn revalidate(
        &mut self,
        ex: &mut Exec<'_>,
        idx: usize,
        lin: u64,
        host_page: usize,
        start: usize,
    ) -> bool {
        let b = &self.blocks[idx];
        if b.host_page != host_page {
            return false;
        }
        let crossing = b.phys2 != ONE_PAGE;
        if crossing {
            // The next linear page must still map to the block's second page (a fault
            // there is the decode's to raise, for the instruction that needs it).
            let lin2 = (lin | 0xFFF).wrapping_add(1) & ex.c.lin_mask;
            match ex.translate(lin2, Access::Exec, ex.c.user) {
                Ok(i) if ex.c.tlb.entries[i].phys == b.phys2 => {}
                _ => return false,
            }
        }
        let current = ex.c.code.generation_of(host_page);
        let current2 = if crossing {
            ex.c.code.generation_of(b.host_page2)
        } else {
            0
        };
        if b.code_gen == current && b.code_gen2 == current2 {
            b.code_epoch.set(ex.c.code.epoch);
            return true;
        }
        // A page was written since: revalidate by content.
        let len1 = b.len1 as usize;
        let on_page = |page: usize, from: usize, want: &[u8]| {
            let off = (page << 12) + from;
            off.checked_add(want.len())
                .and_then(|end| ex.ram.get(off..end))
                == Some(want)
        };
        let same = b.bytes.len() >= len1
            && on_page(host_page, start, &b.bytes[..len1])
            && (!crossing || on_page(b.host_page2, 0, &b.bytes[len1..]));
        if same {
            #[cfg(feature = "cache-stats")]
            {
                self.stats.revalidated += 1;
            }
            let len2 = b.bytes.len() - len1;
            let host2 = b.host_page2;
            mark_code(ex, host_page, start, start + len1);
            if crossing {
                mark_code(ex, host2, 0, len2);
            }
            // Marking may have moved no generation: the block is current as of now.
            let b = &mut self.blocks[idx];
            b.code_gen = ex.c.code.generation_of(host_page);
            if crossing {
                b.code_gen2 = ex.c.code.generation_of(host2);
            }
            b.code_epoch.set(ex.c.code.epoch);
        }
        same
    }

    /// Moves a decode (`tmp_insns`, `tmp_bytes`) into block `idx` (or the scratch block)
    /// with a new serial; the block's old vectors become the decode buffers.
    fn fill(&mut self, idx: usize, key: u64, phys_page: u64, host_page: usize, d: &Decoded) {
        self.decoded += 1;
        self.next_serial += 1;
        let serial = if idx == SCRATCH { 0 } else { self.next_serial };
        let b = &mut self.blocks[idx];
        std::mem::swap(&mut b.insns, &mut self.tmp_insns);
        std::mem::swap(&mut b.bytes, &mut self.tmp_bytes);
        b.serial = serial;
        b.key = key;
        b.host_page = host_page;
        b.phys_page = phys_page;
        b.phys2 = ONE_PAGE;
        b.host_page2 = usize::MAX;
        b.code_gen = 0;
        b.code_gen2 = 0;
        b.code_epoch.set(u64::MAX);
        b.flat = d.flat;
        b.flat_used = d.flat_used;
        b.len1 = d.len1 as u16;
        b.run_len = whole_run_len(&b.insns);
        b.next = [NO_LINK; 2];
    }

    /// A free arena index (dropping every block first when the arena is full).
    fn alloc(&mut self) -> usize {
        if self.live > MAX_BLOCKS {
            count!(self, flushes);
            self.clear();
        }
        let idx = self.live;
        if idx == self.blocks.len() {
            self.blocks.push(empty_block());
        }
        self.live += 1;
        #[cfg(feature = "cache-stats")]
        {
            self.stats.live = self.live as u64;
        }
        idx
    }

    /// Adds live block `idx` to the table, growing it to stay at most half full.
    fn insert(&mut self, idx: usize) {
        if self.live * 2 > self.table.len() {
            let size = (self.live * 2).next_power_of_two().max(1024);
            self.table = vec![EMPTY_ENTRY; size];
            for i in 1..self.live {
                self.place(i);
            }
        } else {
            self.place(idx);
        }
    }

    fn place(&mut self, idx: usize) {
        let key = self.blocks[idx].key;
        let mask = self.table.len() - 1;
        let mut i = hash(key) & mask;
        while self.table[i].idx != NO_INDEX {
            i = (i + 1) & mask;
        }
        self.table[i] = TableEntry {
            key,
            idx: idx as u32,
        };
    }

    /// The block at an index returned by `fetch`.
    #[inline(always)]
    pub fn block(&self, idx: usize) -> &Block {
        &self.blocks[idx]
    }
}

/// Whether block `t`'s code is unchanged since it was decoded or last revalidated: no
/// code page written since (one compare), or not its own.
#[inline(always)]
fn code_current(t: &Block, ex: &Exec<'_>) -> bool {
    t.code_epoch.get() == ex.c.code.epoch || {
        let same = ex.c.code.generation.get(t.host_page) == Some(&t.code_gen);
        if same && t.phys2 == ONE_PAGE {
            t.code_epoch.set(ex.c.code.epoch);
        }
        same
    }
}

/// A crossing block's second page: unchanged code, and the linear page after `lin`'s
/// still mapping to it.
#[cold]
#[inline(never)]
fn second_page_valid(t: &Block, lin: u64, ex: &Exec<'_>) -> bool {
    let lin2 = (lin | 0xFFF).wrapping_add(1) & ex.c.lin_mask;
    ex.c.code.generation.get(t.host_page2) == Some(&t.code_gen2) && tlb_maps(ex, lin2, t.phys2)
}

/// See `Block::run_len`.
pub(crate) fn whole_run_len(insns: &[Insn]) -> usize {
    let n = insns.len();
    if n >= 2 && insns[n - 2].fuse != 0 {
        n - 1
    } else {
        n
    }
}

/// Records decoded bytes of a RAM page; the first code on a page takes the fast write
/// path away from it, so writes there are checked.
fn mark_code(ex: &mut Exec<'_>, host_page: usize, start: usize, end: usize) {
    let had = ex.c.code.has_code(host_page);
    ex.c.code.mark_code(host_page, start, end);
    if !had {
        ex.c.tlb.protect_code_page(host_page << 12);
    }
}

/// What `decode_block` produced; the instructions and bytes are in the buffers it was
/// given.
struct Decoded {
    /// False for code outside RAM/ROM, or an instruction crossing into a page that is not.
    cacheable: bool,
    /// The flat mask decoded under, and the bits of it the handlers depend on.
    flat: u8,
    flat_used: u8,
    /// Bytes decoded, and how many of them are on the first page.
    len: usize,
    len1: usize,
    /// A block crossing into the next page: that page's physical address and RAM page.
    page2: Option<(u64, usize)>,
}

/// Decode from `rip` to the end of the block into `insns` (its old entries reused) and
/// the block's code bytes into `bytes`. A block ends at the end of its page, except that
/// a first instruction crossing into the next page takes the block onto that page (to
/// its end at most); `ram_page`: the first page is RAM or ROM (cacheable).
#[allow(clippy::too_many_arguments)]
fn decode_block(
    ex: &mut Exec<'_>,
    rip: u64,
    lin: u64,
    phys: u64,
    bitness: u32,
    ram_page: bool,
    insns: &mut Vec<Insn>,
    bytes: &mut Vec<u8>,
) -> XResult<Decoded> {
    let flat = ex.c.flat;
    let mut flat_used = 0u8;
    let in_page = (0x1000 - (lin & 0xFFF)) as usize;
    // Bytes up to the CS limit only (outside 64-bit mode).
    let mut avail = in_page;
    let cs_left = if ex.c.long64 {
        u64::MAX
    } else {
        (ex.s.seg[1].limit as u64).saturating_sub(rip) + 1
    };
    avail = avail.min(cs_left.min(4096) as usize);
    // A block is at most MAX_BLOCK_INSNS instructions of at most 15 bytes (the cap
    // never cuts a first instruction, so the straddle logic below still sees the page
    // end or the CS limit).
    let mut limit_cut = avail < in_page;
    let mut avail = avail.min(MAX_BLOCK_INSNS * 15);
    let mut page2 = None;
    let mut buf = [0u8; MAX_BLOCK_INSNS * 15];
    read_code(ex, phys, &mut buf[..avail]);
    let ip_mask = if bitness == 16 {
        0xFFFF
    } else if bitness == 32 {
        0xFFFF_FFFF
    } else {
        u64::MAX
    };
    let mut n = 0usize;
    let mut offset = 0usize;
    while n < MAX_BLOCK_INSNS && offset < avail {
        let ip = rip.wrapping_add(offset as u64) & ip_mask;
        let mut dec = Decoder::with_ip(bitness, &buf[offset..avail], ip, DecoderOptions::NONE);
        let ins = dec.decode();
        let incomplete = dec.last_error() == iced_x86::DecoderError::NoMoreBytes;
        if incomplete {
            if n > 0 {
                break;
            }
            // The first instruction straddles the page (or the CS limit): fetch the rest.
            let have = avail - offset;
            if limit_cut {
                return Err(Fault::gp0());
            }
            let lin2 = lin.wrapping_add(in_page as u64) & ex.c.lin_mask;
            let idx = ex.translate(lin2, Access::Exec, ex.c.user)?;
            let e2 = ex.c.tlb.entries[idx];
            let p2 = e2.phys;
            if ram_page && e2.fast != 0 && page2.is_none() && offset == 0 {
                // Both pages RAM: the block goes on into the second page (up to its end
                // and the CS limit), decoded again from its first instruction.
                let room = (MAX_BLOCK_INSNS * 15 - have).min(4096);
                let cs_room = cs_left.saturating_sub(have as u64);
                let room2 = room.min(cs_room.min(4096) as usize);
                read_code(ex, p2, &mut buf[have..have + room2]);
                limit_cut = cs_room < room as u64;
                avail = have + room2;
                page2 = Some((p2, e2.host >> 12, have));
                continue;
            }
            let extra = 15usize.saturating_sub(have);
            let mut more = [0u8; 15];
            read_code(ex, p2, &mut more[..extra]);
            let mut tmp = [0u8; 15];
            tmp[..have].copy_from_slice(&buf[offset..avail]);
            tmp[have..have + extra].copy_from_slice(&more[..extra]);
            let mut dec = Decoder::with_ip(bitness, &tmp[..have + extra], ip, DecoderOptions::NONE);
            let ins = dec.decode();
            let insn = put(insns, 0, &ins, &tmp[..ins.len().min(15)], bitness, flat);
            place_in_block(insn, ins.len());
            insns.truncate(1);
            bytes.clear();
            return Ok(Decoded {
                cacheable: false,
                flat,
                flat_used: flat_bits_used(&ins),
                len: 0,
                len1: 0,
                page2: None,
            });
        }
        let len = ins.len();
        let end_here = ins.is_invalid() || ends_block(&ins);
        let code = &buf[offset..offset + len.min(avail - offset)];
        offset += len;
        place_in_block(put(insns, n, &ins, code, bitness, flat), offset);
        flat_used |= flat_bits_used(&ins);
        n += 1;
        if end_here {
            if let Some((jcc, body)) = insns[..n].split_last_mut() {
                fuse_with_prev(body, jcc);
            }
            break;
        }
    }
    insns.truncate(n);
    if n == 0 {
        return Err(Fault::gp0());
    }
    let used = offset.min(avail);
    bytes.clear();
    bytes.extend_from_slice(&buf[..used]);
    let (page2, len1) = match page2 {
        Some((p2, host2, have)) => (Some((p2, host2)), have),
        None => (None, used),
    };
    Ok(Decoded {
        cacheable: ram_page,
        flat,
        flat_used,
        len: used,
        len1,
        page2,
    })
}

/// Instruction `n` of a decode: the old one there overwritten (its boxed iced
/// instruction reused), or a new one.
fn put<'v>(
    insns: &'v mut Vec<Insn>,
    n: usize,
    ins: &Instruction,
    code: &[u8],
    bitness: u32,
    flat: u8,
) -> &'v mut Insn {
    if n < insns.len() {
        fill_insn(&mut insns[n], ins, code, bitness, flat);
    } else {
        insns.push(build(ins, code, bitness, flat));
    }
    let last = insns.len() - 1;
    &mut insns[n.min(last)]
}

/// The bits of `Core::flat` an instruction's handler was chosen by (see
/// `exec::lookup_flat`): its memory operand's segment, SS for stack instructions.
fn flat_bits_used(ins: &Instruction) -> u8 {
    let seg = match ins.memory_segment() {
        Register::ES => 1,
        Register::CS => 2,
        Register::SS => 4,
        Register::DS => 8,
        Register::FS => 16,
        Register::GS => 32,
        _ => 0,
    };
    seg | if ins.is_stack_instruction() { 4 } else { 0 }
}

/// Records where `insn` ends in its block (`end`: the offset of the next instruction from
/// the block start) and makes a RIP-relative displacement relative to the block start,
/// where the run loop leaves RIP while the block runs.
fn place_in_block(insn: &mut Insn, end: usize) {
    insn.end = end as u16;
    if insn.mem.base == RIP_REG {
        insn.mem.disp = insn.mem.disp.wrapping_add(end as u64);
    }
}

/// A CMP/TEST just before the block's closing Jcc takes over the Jcc too (`fused.rs`).
fn fuse_with_prev(insns: &mut [Insn], jcc: &Insn) {
    let Some(prev) = insns.last_mut() else {
        return;
    };
    if let Some(h) = exec::fused::lookup(&prev.raw, &jcc.raw) {
        prev.handler = h;
        prev.rel = jcc.rel;
        prev.cc = (jcc.end - prev.end) as u8;
        prev.fuse = jcc.osize;
    }
}

fn read_code(ex: &mut Exec<'_>, phys: u64, out: &mut [u8]) {
    let phys = phys & ex.c.a20_mask;
    match ex.bus.map_page(phys) {
        PageMapping::Ram { offset } | PageMapping::Rom { offset } => {
            let o = offset.wrapping_add((phys & 0xFFF) as usize);
            match o.checked_add(out.len()).and_then(|end| ex.ram.get(o..end)) {
                Some(src) => out.copy_from_slice(src),
                None => {
                    for (k, b) in out.iter_mut().enumerate() {
                        *b = ex.ram.get(o.wrapping_add(k)).copied().unwrap_or(0xFF);
                    }
                }
            }
        }
        PageMapping::Mmio => {
            for (k, b) in out.iter_mut().enumerate() {
                *b = ex.phys_read(phys + k as u64, 1) as u8;
            }
        }
    }
}

/// Branches, and everything else that reads or moves RIP (interrupts, system calls): the
/// run loop gives only a block's last instruction its RIP in `CpuState::rip`.
fn ends_block(ins: &Instruction) -> bool {
    use iced_x86::Mnemonic::*;
    ins.flow_control() != FlowControl::Next
        || matches!(
            ins.mnemonic(),
            Syscall
                | Sysret
                | Sysretq
                | Sysenter
                | Sysexit
                | Sysexitq
                | Int
                | Int1
                | Int3
                | Into
                | Iret
                | Iretd
                | Iretq
        )
}

/// Map an iced register to (kind, index, size).
fn map_reg(r: Register) -> Opnd {
    if r.is_gpr() {
        if matches!(r, Register::AH | Register::CH | Register::DH | Register::BH) {
            return Opnd {
                kind: K_HI8,
                reg: (r as u32 - Register::AH as u32) as u8,
                size: 1,
            };
        }
        let full = r.full_register();
        return Opnd {
            kind: K_REG,
            reg: (full as u32 - Register::RAX as u32) as u8,
            size: r.size() as u8,
        };
    }
    if r.is_segment_register() {
        return Opnd {
            kind: K_SEG,
            reg: (r as u32 - Register::ES as u32) as u8,
            size: 2,
        };
    }
    if r.is_cr() {
        return Opnd {
            kind: K_CR,
            reg: (r as u32 - Register::CR0 as u32) as u8,
            size: 8,
        };
    }
    if r.is_dr() {
        return Opnd {
            kind: K_DR,
            reg: (r as u32 - Register::DR0 as u32) as u8,
            size: 8,
        };
    }
    Opnd {
        kind: K_OTHER,
        reg: 0,
        size: r.size() as u8,
    }
}

fn gpr_index(r: Register) -> u8 {
    if r == Register::None {
        NO_REG
    } else if matches!(r, Register::RIP | Register::EIP) {
        RIP_REG
    } else if r.is_gpr() {
        (r.full_register() as u32 - Register::RAX as u32) as u8
    } else {
        NO_REG
    }
}

fn seg_index(r: Register) -> u8 {
    match r {
        Register::ES => 0,
        Register::CS => 1,
        Register::SS => 2,
        Register::FS => 4,
        Register::GS => 5,
        _ => 3,
    }
}

/// Operand-size and address-size attributes from the legacy/REX prefixes.
fn size_attrs(bytes: &[u8], bitness: u32) -> (u8, u8, bool) {
    let mut p66 = false;
    let mut p67 = false;
    let mut rexw = false;
    for &b in bytes {
        match b {
            0x66 => p66 = true,
            0x67 => p67 = true,
            0xF0 | 0xF2 | 0xF3 | 0x26 | 0x2E | 0x36 | 0x3E | 0x64 | 0x65 => {}
            0x40..=0x4F if bitness == 64 => {
                rexw = b & 8 != 0;
                continue;
            }
            _ => break,
        }
        // A REX prefix only counts directly before the opcode.
        rexw = false;
    }
    let osize = if rexw {
        8
    } else if bitness == 16 {
        if p66 { 4 } else { 2 }
    } else if p66 {
        2
    } else {
        4
    };
    let asize = match bitness {
        16 => {
            if p67 {
                4
            } else {
                2
            }
        }
        32 => {
            if p67 {
                2
            } else {
                4
            }
        }
        _ => {
            if p67 {
                4
            } else {
                8
            }
        }
    };
    (osize, asize, p66)
}

fn imm_size(k: OpKind) -> u8 {
    match k {
        OpKind::Immediate8 | OpKind::Immediate8_2nd => 1,
        OpKind::Immediate16 | OpKind::Immediate8to16 => 2,
        OpKind::Immediate32 | OpKind::Immediate8to32 => 4,
        _ => 8,
    }
}

/// Translate one iced instruction into the internal form, resolving its handler for the
/// flat-segment mask `flat` (`Core::flat`).
pub fn build(ins: &Instruction, bytes: &[u8], bitness: u32, flat: u8) -> Insn {
    let mut out = Insn {
        handler: exec::undefined,
        ops: [Opnd::default(); 3],
        mem: MemRef {
            seg: 3,
            base: NO_REG,
            index: NO_REG,
            scale: 0,
            disp: 0,
            ashift: 0,
        },
        imm: 0,
        rel: 0,
        end: 0,
        osize: 0,
        asize: 0,
        cc: 0,
        prefix: 0,
        fuse: 0,
        raw: Box::new(*ins),
    };
    fill_insn(&mut out, ins, bytes, bitness, flat);
    out
}

/// `build` into an existing instruction (keeping its box for the iced instruction).
fn fill_insn(out: &mut Insn, ins: &Instruction, bytes: &[u8], bitness: u32, flat: u8) {
    let (osize, asize, p66) = size_attrs(bytes, bitness);
    let next_ip = ins.next_ip();
    out.handler = exec::undefined;
    out.ops = [Opnd::default(); 3];
    out.mem = MemRef {
        seg: 3,
        base: NO_REG,
        index: NO_REG,
        scale: 0,
        disp: 0,
        ashift: 64 - asize * 8,
    };
    out.imm = 0;
    out.rel = 0;
    out.end = ins.len() as u16;
    out.osize = osize;
    out.asize = asize;
    out.cc = 0;
    out.prefix = 0;
    out.fuse = 0;
    *out.raw = *ins;
    // Stack-width operations default to 64-bit in long mode.
    if bitness == 64 && osize == 4 && is_stack_default64(ins.code()) {
        out.osize = if p66 { 2 } else { 8 };
    }
    if ins.has_rep_prefix() || ins.has_repe_prefix() {
        out.prefix |= PFX_REP;
    }
    if ins.has_repne_prefix() {
        out.prefix |= PFX_REPNE;
    }
    if ins.has_lock_prefix() {
        out.prefix |= PFX_LOCK;
    }
    let cc = ins.condition_code();
    if cc != ConditionCode::None {
        out.cc = cc as u8 - 1;
    }
    let mut imm_seen = false;
    for n in 0..ins.op_count().min(3) {
        let k = ins.op_kind(n);
        let o = match k {
            OpKind::Register => map_reg(ins.op_register(n)),
            OpKind::Memory => {
                out.mem.seg = seg_index(ins.memory_segment());
                out.mem.base = gpr_index(ins.memory_base());
                out.mem.index = gpr_index(ins.memory_index());
                out.mem.scale = ins.memory_index_scale().trailing_zeros() as u8;
                out.mem.disp = if out.mem.base == RIP_REG {
                    ins.memory_displacement64().wrapping_sub(next_ip)
                } else {
                    ins.memory_displacement64()
                };
                Opnd {
                    kind: K_MEM,
                    reg: 0,
                    size: ins.memory_size().size() as u8,
                }
            }
            OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64 => {
                out.rel = ins.near_branch_target().wrapping_sub(next_ip) as i64;
                Opnd {
                    kind: K_NONE,
                    reg: 0,
                    size: 0,
                }
            }
            OpKind::FarBranch16 => {
                out.imm = ins.far_branch16() as u64;
                out.rel = ins.far_branch_selector() as i64;
                Opnd {
                    kind: K_NONE,
                    reg: 0,
                    size: 2,
                }
            }
            OpKind::FarBranch32 => {
                out.imm = ins.far_branch32() as u64;
                out.rel = ins.far_branch_selector() as i64;
                Opnd {
                    kind: K_NONE,
                    reg: 0,
                    size: 4,
                }
            }
            OpKind::Immediate8_2nd => {
                out.rel = ins.immediate8_2nd() as i64;
                Opnd {
                    kind: K_IMM,
                    reg: 0,
                    size: 1,
                }
            }
            k if is_imm(k) => {
                let sz = imm_size(k);
                let v = ins.immediate(n) & size_mask(sz);
                if imm_seen {
                    out.rel = v as i64;
                } else {
                    out.imm = v;
                    imm_seen = true;
                }
                Opnd {
                    kind: K_IMM,
                    reg: 0,
                    size: sz,
                }
            }
            _ => {
                // String operands and other implicit memory operands.
                out.mem.seg = seg_index(ins.memory_segment());
                Opnd {
                    kind: K_OTHER,
                    reg: 0,
                    size: ins.memory_size().size() as u8,
                }
            }
        };
        out.ops[n as usize] = o;
    }
    if !ins.is_invalid() {
        out.handler = exec::lookup_flat(ins, flat).unwrap_or(exec::undefined);
    }
}

fn is_imm(k: OpKind) -> bool {
    matches!(
        k,
        OpKind::Immediate8
            | OpKind::Immediate16
            | OpKind::Immediate32
            | OpKind::Immediate64
            | OpKind::Immediate8to16
            | OpKind::Immediate8to32
            | OpKind::Immediate8to64
            | OpKind::Immediate32to64
    )
}

fn is_stack_default64(code: Code) -> bool {
    use iced_x86::Mnemonic::*;
    matches!(
        code.mnemonic(),
        Push | Pop
            | Pushf
            | Popf
            | Pushfq
            | Popfq
            | Call
            | Ret
            | Jmp
            | Enter
            | Leave
            | Loop
            | Loope
            | Loopne
            | Jrcxz
    )
}
