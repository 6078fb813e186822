//! Decoding guest code into [`Insn`]s (once) and the per-physical-address block cache.

use crate::bus::PageMapping;
use crate::exec::{
    self, Exec, Insn, K_CR, K_DR, K_HI8, K_IMM, K_MEM, K_NONE, K_OTHER, K_REG, K_SEG, MemRef, Opnd,
};
use crate::exec::{NO_REG, PFX_LOCK, PFX_REP, PFX_REPNE, RIP_REG};
use crate::fault::{Fault, XResult};
use crate::flags::size_mask;
use crate::mmu::Access;
use iced_x86::{
    Code, ConditionCode, Decoder, DecoderOptions, FlowControl, Instruction, OpKind, Register,
};

/// Longest block; keeps decode latency and interrupt latency bounded.
const MAX_BLOCK_INSNS: usize = 48;
const SLOT_BITS: u32 = 14;
pub(crate) const SLOTS: usize = 1 << SLOT_BITS;
/// Index of the uncached scratch block.
pub const SCRATCH: usize = usize::MAX;

/// Fields in the order the run loop reads them, on cache-line boundaries: going from one
/// block to the next touches the first line of each (key, instructions, first link).
#[repr(C, align(64))]
pub struct Block {
    key: u64,
    /// How many of `insns` run when the block runs whole: a fused CMP/TEST+Jcc at the end
    /// runs its Jcc itself (the Jcc stays in `insns` for runs cut off before it).
    pub run_len: usize,
    pub insns: Vec<Insn>,
    /// The blocks that ran next (most recent first): a lookup that needs no hashing.
    next: [Link; 2],
    /// RAM page (offset >> 12) the code came from, and its generation at decode time.
    host_page: usize,
    code_gen: u32,
    /// The code bytes decoded: after a write to the page, equal bytes mean the block is
    /// still right (GRUB and BIOS code keep variables, even patched opcodes, next to
    /// their instructions).
    bytes: Vec<u8>,
    /// Unique per decode (0 for uncached blocks): compiled code (`jit`) names its block
    /// by it, so a re-decoded block never runs stale host code.
    pub serial: u64,
}

/// A block reached by linear RIP, valid while the cache generation is unchanged (no TLB
/// flush, code write or clear since) and for the same privilege and code size (`ctx`,
/// see [`BlockCache::ctx`]: one compare covers all three); `key` names the block
/// (physical address and code size) so a replaced slot does not match.
#[derive(Clone, Copy)]
struct Link {
    lin: u64,
    ctx: u64,
    key: u64,
    slot: u32,
}

/// Never valid: generations start at 1, so no context is 0.
const NO_LINK: Link = Link {
    lin: u64::MAX,
    ctx: 0,
    key: u64::MAX,
    slot: 0,
};

/// Key of an empty slot: real keys have bits 61..63 clear (see `block_key`).
const EMPTY_KEY: u64 = u64::MAX;

fn empty_block() -> Block {
    Block {
        key: EMPTY_KEY,
        run_len: 0,
        insns: Vec::new(),
        next: [NO_LINK; 2],
        host_page: usize::MAX,
        code_gen: 0,
        bytes: Vec::new(),
        serial: 0,
    }
}

const LIN_BITS: u32 = 10;

pub struct BlockCache {
    /// Recently fetched blocks by linear RIP.
    lin_cache: Vec<Link>,
    /// Empty slots hold a block with `EMPTY_KEY` (no `Option` to test on the hot path);
    /// fixed size, so a masked index needs no bounds check.
    slots: Box<[Block; SLOTS]>,
    /// Blocks that must not be cached (MMIO code, page-crossing first instruction).
    scratch: Option<Block>,
    /// Bumped whenever the TLB or any decoded code page changed, and by `clear`: links
    /// and `lin_cache` entries of older generations are dead.
    generation: u64,
    /// `Tlb::epoch + CodePages::epoch` when `generation` last moved: both only grow, so
    /// one compare sees either change.
    seen_epoch: u64,
    /// The next `Block::serial`.
    next_serial: u64,
}

impl Default for BlockCache {
    fn default() -> Self {
        let slots: Vec<Block> = (0..SLOTS).map(|_| empty_block()).collect();
        let slots: Box<[Block; SLOTS]> = match slots.into_boxed_slice().try_into() {
            Ok(s) => s,
            Err(_) => unreachable!("SLOTS blocks were made"),
        };
        BlockCache {
            lin_cache: vec![NO_LINK; 1 << LIN_BITS],
            slots,
            scratch: None,
            generation: 1,
            seen_epoch: 0,
            next_serial: 1,
        }
    }
}

/// A block's name: its physical address (bits 0..51), the flat-segment mask it was
/// decoded under (52..57: its memory handlers assume those segments flat) and its code
/// size (58..60).
#[inline(always)]
fn block_key(phys: u64, flat: u8, bitness: u32) -> u64 {
    (phys & ((1 << 52) - 1)) | ((flat as u64 & 0x3F) << 52) | (((bitness as u64) >> 4) << 58)
}

/// The flat mask and code size (bits 52..60) are spread over the index too: a 64-bit kernel
/// runs the same code with the current task's FS base flat or not, and both variants must
/// not keep evicting each other from one slot (an odd multiplier keeps them apart).
#[inline(always)]
fn slot_of(key: u64) -> usize {
    let h = key ^ (key >> 13) ^ (key >> 29) ^ (key >> 52).wrapping_mul(0x9E37_79B9);
    (h as usize) & (SLOTS - 1)
}

impl BlockCache {
    pub fn clear(&mut self) {
        self.lin_cache.fill(NO_LINK);
        self.slots.iter_mut().for_each(|s| *s = empty_block());
        self.scratch = None;
        self.generation += 1;
    }

    /// The block starting at the current RIP, decoding it if needed. `prev` is the block
    /// that ran just before (or `SCRATCH`): its links are tried first.
    #[inline]
    pub fn fetch(&mut self, ex: &mut Exec<'_>, prev: usize) -> XResult<usize> {
        let rip = ex.s.rip;
        if !ex.c.long64 && rip > ex.s.seg[1].limit as u64 {
            return Err(Fault::gp0());
        }
        self.sync_generation(ex);
        let lin = ex.s.seg[1].base.wrapping_add(rip) & ex.c.lin_mask;
        let ctx = self.ctx(ex);
        if prev != SCRATCH {
            for l in &self.slots[prev & (SLOTS - 1)].next {
                if l.lin == lin
                    && l.ctx == ctx
                    && self.slots[l.slot as usize & (SLOTS - 1)].key == l.key
                {
                    return Ok(l.slot as usize);
                }
            }
        }
        let idx = self.fetch_unlinked(ex, lin)?;
        // Stamped with the generation `fetch_unlinked` left (it may have moved).
        let ctx = self.ctx(ex);
        if idx != SCRATCH
            && let Some(key) = self.slots.get(idx).map(|b| b.key)
            && let Some(p) = self.slots.get_mut(prev)
        {
            p.next[1] = p.next[0];
            p.next[0] = Link {
                lin,
                ctx,
                key,
                slot: idx as u32,
            };
        }
        Ok(idx)
    }

    /// The generation, flat-segment mask, privilege and code size a link must have been
    /// made under.
    #[inline(always)]
    fn ctx(&self, ex: &Exec<'_>) -> u64 {
        (self.generation << 16) | ex.c.mode_bits
    }

    fn fetch_unlinked(&mut self, ex: &mut Exec<'_>, lin: u64) -> XResult<usize> {
        let bitness = ex.c.bitness;
        let rip = ex.s.rip;
        let user = ex.c.user;
        let li = ((lin ^ (lin >> LIN_BITS)) as usize) & ((1 << LIN_BITS) - 1);
        let le = self.lin_cache[li];
        if le.lin == lin
            && le.ctx == self.ctx(ex)
            && self
                .slots
                .get(le.slot as usize)
                .is_some_and(|b| b.key == le.key)
        {
            return Ok(le.slot as usize);
        }
        // Inline TLB hit check; the full translate() only on a miss.
        let need = crate::mmu::need_bit(Access::Exec, user);
        let mut idx = crate::mmu::Tlb::index(lin);
        let hit = {
            let e = &ex.c.tlb.entries[idx];
            e.tag == lin >> 12 && e.perm & need != 0
        };
        if !hit {
            idx = ex.translate(lin, Access::Exec, user)?;
        }
        let e = ex.c.tlb.entries[idx];
        let cacheable = e.fast != 0;
        let phys = e.phys | (lin & 0xFFF);
        let key = block_key(phys, ex.c.flat, bitness);
        let slot = slot_of(key);
        if cacheable {
            let start = (lin & 0xFFF) as usize;
            let host_page = (e.host + start) >> 12;
            let host_off = e.host + start;
            if let Some(b) = self.slots.get_mut(slot)
                && b.key == key
                && b.host_page == host_page
            {
                let current = ex.c.code.generation_of(host_page);
                let valid = b.code_gen == current || {
                    // The page was written since: revalidate by content.
                    let same = host_off
                        .checked_add(b.bytes.len())
                        .and_then(|end| ex.ram.get(host_off..end))
                        == Some(&b.bytes[..]);
                    if same {
                        b.code_gen = current;
                        let len = b.bytes.len();
                        mark_code(ex, host_page, start, start + len);
                    }
                    same
                };
                if valid {
                    self.remember(li, lin, key, slot, ex);
                    return Ok(slot);
                }
            }
            let (insns, bytes) = decode_block(ex, rip, lin, phys, bitness)?;
            if let Some(bytes) = bytes {
                mark_code(ex, host_page, start, start + bytes.len());
                let code_gen = ex.c.code.generation_of(host_page);
                self.next_serial += 1;
                self.slots[slot] = Block {
                    serial: self.next_serial,
                    key,
                    host_page,
                    code_gen,
                    run_len: whole_run_len(&insns),
                    insns,
                    bytes,
                    next: [NO_LINK; 2],
                };
                self.remember(li, lin, key, slot, ex);
                return Ok(slot);
            }
            self.scratch = Some(Block {
                key,
                host_page: usize::MAX,
                code_gen: 0,
                run_len: whole_run_len(&insns),
                insns,
                bytes: Vec::new(),
                next: [NO_LINK; 2],
                serial: 0,
            });
        } else {
            let (insns, _) = decode_block(ex, rip, lin, phys, bitness)?;
            self.scratch = Some(Block {
                key,
                host_page: usize::MAX,
                code_gen: 0,
                run_len: whole_run_len(&insns),
                insns,
                bytes: Vec::new(),
                next: [NO_LINK; 2],
                serial: 0,
            });
        }
        Ok(SCRATCH)
    }

    /// A new generation if the TLB or any code page changed since the last look.
    #[inline(always)]
    fn sync_generation(&mut self, ex: &Exec<'_>) {
        let epoch = ex.c.tlb.epoch.wrapping_add(ex.c.code.epoch);
        if epoch != self.seen_epoch {
            self.seen_epoch = epoch;
            self.generation += 1;
        }
    }

    /// Marking code and filling the TLB may have bumped the epochs: the entry is
    /// stamped with the generation they give.
    #[inline(always)]
    fn remember(&mut self, li: usize, lin: u64, key: u64, slot: usize, ex: &Exec<'_>) {
        self.sync_generation(ex);
        self.lin_cache[li] = Link {
            lin,
            ctx: self.ctx(ex),
            key,
            slot: slot as u32,
        };
    }

    /// The block at an index returned by `fetch`.
    #[inline(always)]
    pub fn block(&self, idx: usize) -> &Block {
        if idx == SCRATCH {
            self.scratch.as_ref().unwrap_or_else(|| unreachable_block())
        } else {
            &self.slots[idx & (SLOTS - 1)]
        }
    }
}

fn unreachable_block() -> &'static Block {
    static EMPTY: Block = Block {
        key: u64::MAX,
        host_page: usize::MAX,
        code_gen: 0,
        run_len: 0,
        insns: Vec::new(),
        bytes: Vec::new(),
        next: [NO_LINK; 2],
        serial: 0,
    };
    &EMPTY
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

/// Decode from `rip` to the end of the block. Returns the instructions and their bytes,
/// or no bytes when the (single) instruction crosses into the next page (not cacheable).
fn decode_block(
    ex: &mut Exec<'_>,
    rip: u64,
    lin: u64,
    phys: u64,
    bitness: u32,
) -> XResult<(Vec<Insn>, Option<Vec<u8>>)> {
    let in_page = (0x1000 - (lin & 0xFFF)) as usize;
    // Bytes up to the CS limit only (outside 64-bit mode).
    let mut avail = in_page;
    if !ex.c.long64 {
        let left = (ex.s.seg[1].limit as u64).saturating_sub(rip) + 1;
        avail = avail.min(left.min(4096) as usize);
    }
    // A block is at most MAX_BLOCK_INSNS instructions of at most 15 bytes (the cap
    // never cuts a first instruction, so the straddle logic below still sees the page
    // end or the CS limit).
    let limit_cut = avail < in_page;
    let avail = avail.min(MAX_BLOCK_INSNS * 15);
    let mut buf = [0u8; MAX_BLOCK_INSNS * 15];
    read_code(ex, phys, &mut buf[..avail]);
    let ip_mask = if bitness == 16 {
        0xFFFF
    } else if bitness == 32 {
        0xFFFF_FFFF
    } else {
        u64::MAX
    };
    let mut insns = Vec::with_capacity(16);
    let mut offset = 0usize;
    while insns.len() < MAX_BLOCK_INSNS && offset < avail {
        let ip = rip.wrapping_add(offset as u64) & ip_mask;
        let mut dec = Decoder::with_ip(bitness, &buf[offset..avail], ip, DecoderOptions::NONE);
        let ins = dec.decode();
        let incomplete = dec.last_error() == iced_x86::DecoderError::NoMoreBytes;
        if incomplete {
            if !insns.is_empty() {
                break;
            }
            // The first instruction straddles the page (or the CS limit): fetch the rest.
            let have = avail - offset;
            if limit_cut {
                return Err(Fault::gp0());
            }
            let lin2 = lin.wrapping_add(in_page as u64) & ex.c.lin_mask;
            let idx = ex.translate(lin2, Access::Exec, ex.c.user)?;
            let p2 = ex.c.tlb.entries[idx].phys;
            let extra = 15usize.saturating_sub(have);
            let mut more = [0u8; 15];
            read_code(ex, p2, &mut more[..extra]);
            let mut tmp = [0u8; 15];
            tmp[..have].copy_from_slice(&buf[offset..avail]);
            tmp[have..have + extra].copy_from_slice(&more[..extra]);
            let mut dec = Decoder::with_ip(bitness, &tmp[..have + extra], ip, DecoderOptions::NONE);
            let ins = dec.decode();
            let mut insn = build(&ins, &tmp[..ins.len().min(15)], bitness, ex.c.flat);
            place_in_block(&mut insn, ins.len());
            insns.push(insn);
            return Ok((insns, None));
        }
        let len = ins.len();
        let end_here = ins.is_invalid() || ends_block(&ins);
        let mut insn = build(
            &ins,
            &buf[offset..offset + len.min(avail - offset)],
            bitness,
            ex.c.flat,
        );
        offset += len;
        place_in_block(&mut insn, offset);
        if end_here {
            fuse_with_prev(&mut insns, &insn);
            insns.push(insn);
            break;
        }
        insns.push(insn);
    }
    if insns.is_empty() {
        return Err(Fault::gp0());
    }
    let used = offset.min(avail);
    Ok((insns, Some(buf[..used].to_vec())))
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
    let (osize, asize, p66) = size_attrs(bytes, bitness);
    let next_ip = ins.next_ip();
    let mut out = Insn {
        handler: exec::undefined,
        ops: [Opnd::default(); 3],
        mem: MemRef {
            seg: 3,
            base: NO_REG,
            index: NO_REG,
            scale: 0,
            disp: 0,
            ashift: 64 - asize * 8,
        },
        imm: 0,
        rel: 0,
        end: ins.len() as u16,
        osize,
        asize,
        cc: 0,
        prefix: 0,
        fuse: 0,
        raw: Box::new(*ins),
    };
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
    out
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
