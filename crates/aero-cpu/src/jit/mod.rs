//! The native JIT tier (x86-64 hosts): hot interpreter blocks compiled to host code.
//!
//! How it fits the interpreter (see `docs/jit.md` for the decisions and their reasons):
//! - The run loop asks [`Jit::run_block`] before interpreting a block. A block that ran
//!   `threshold` times is compiled once; it stays valid for exactly as long as the
//!   interpreter's decoded block (the JIT entry remembers the block's decode serial, and
//!   the block cache re-decodes a block whenever its code page was written, so
//!   self-modifying code invalidates compiled code through the existing code-page
//!   tracking).
//! - Compiled code covers a prefix of the block: the first instruction it does not handle
//!   ends it and the interpreter runs the rest of the block from there, with the same
//!   state the interpreter would have had.
//! - Guest registers stay in `CpuState::gpr`; guest status flags live in host EFLAGS
//!   while compiled code runs (the host instruction of the same size sets them exactly
//!   as the guest's), loaded from the materialized lazy flags on entry and written back
//!   materialized on exit.
//! - Memory operands through flat segments take the TLB hit path inline; misses, other
//!   segments and a few flag-neutral instructions call back into the interpreter
//!   (`helpers`), which keeps faults, MMIO, paging and code-page tracking exact. A block
//!   that branches back to its own start iterates in host code within the run loop's
//!   budget. A fault
//!   leaves RIP at the faulting instruction, the flags from before it and `retired`
//!   counted the way the interpreter counts it.
//!
//! `AERO_JIT=off|on|verify` picks the mode (default off); verify runs each compiled block,
//! then re-runs it on the interpreter from the same state (registers, flags, RAM, code
//! pages) and panics with a report at the first difference.

mod compile;
mod helpers;
mod native;

use crate::decode::Block;
use crate::exec::{Exec, Insn, Loc};
use crate::fault::Fault;
use crate::flags::{FlagOp, STATUS, size_mask};
use crate::interrupts;
use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};

/// Which engine runs hot blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JitMode {
    /// Interpreter only.
    Off,
    /// Hot blocks run as host code.
    On,
    /// Hot blocks run as host code, then again on the interpreter; any difference panics.
    Verify,
}

const MODE_UNSET: u8 = 0xFF;
static DEFAULT_MODE: AtomicU8 = AtomicU8::new(MODE_UNSET);
static DEFAULT_THRESHOLD: AtomicU32 = AtomicU32::new(0);
static DEFAULT_MIN_INSNS: AtomicU32 = AtomicU32::new(0);

/// Executions of a block before it is compiled (unless overridden).
const THRESHOLD: u32 = 50;
/// Blocks whose compiled code would cover fewer instructions stay interpreted unless they
/// loop on themselves: entering and leaving host code (flags, context, settling) costs
/// about as much as interpreting that many simple instructions.
const MIN_INSNS: usize = 6;
/// Host code cache size; flushed whole when full.
const CACHE_SIZE: usize = 16 << 20;
/// The entry table grows by this many entries at a time (it is indexed by the block's
/// arena index, up to the block cache's size).
const ENTRIES_STEP: usize = 1 << 12;

/// Mode and threshold for CPUs created from now on in this process (tests run every
/// suite under the JIT this way). `threshold` 0 keeps the default.
pub fn set_default_mode(mode: JitMode, threshold: u32) {
    DEFAULT_MODE.store(mode as u8, Ordering::Relaxed);
    DEFAULT_THRESHOLD.store(threshold, Ordering::Relaxed);
}

/// The fewest instructions worth compiling a block for (see [`Jit::set_min_insns`]) for
/// CPUs created from now on in this process; 0 keeps the default.
pub fn set_default_min_insns(insns: u32) {
    DEFAULT_MIN_INSNS.store(insns, Ordering::Relaxed);
}

fn default_min_insns() -> usize {
    match DEFAULT_MIN_INSNS.load(Ordering::Relaxed) {
        0 => MIN_INSNS,
        n => n as usize,
    }
}

fn default_mode() -> JitMode {
    let m = DEFAULT_MODE.load(Ordering::Relaxed);
    if m != MODE_UNSET {
        return match m {
            1 => JitMode::On,
            2 => JitMode::Verify,
            _ => JitMode::Off,
        };
    }
    match std::env::var("AERO_JIT").as_deref() {
        Ok("on") | Ok("1") => JitMode::On,
        Ok("verify") => JitMode::Verify,
        _ => JitMode::Off,
    }
}

fn default_threshold() -> u32 {
    match DEFAULT_THRESHOLD.load(Ordering::Relaxed) {
        0 => std::env::var("AERO_JIT_THRESHOLD")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&t: &u32| t > 0)
            .unwrap_or(THRESHOLD),
        t => t,
    }
}

/// The context generated code runs with (its layout is read by `compile.rs`).
#[repr(C)]
pub struct JitCtx {
    /// `CpuState::gpr` (16 × u64).
    gpr: u64,
    /// The `Env` the helpers use.
    env: u64,
    /// Guest status flags to load on entry (host EFLAGS layout).
    flags_in: u64,
    /// Host EFLAGS on exit.
    flags_out: u64,
    /// Host EFLAGS before the helper call of the instruction that faulted.
    fault_flags: u64,
    /// Host EFLAGS saved around a later helper call of the same instruction.
    tmp_flags: u64,
    /// Non-zero: the last helper call faulted (`Env::fault`).
    status: u64,
    /// Non-zero: a helper call asked the block to end after this instruction.
    end_block: u64,
    /// Instruction index the exit refers to (see `EXIT_*`).
    exit_k: u64,
    exit_kind: u64,
    /// Self-loop blocks: further iterations compiled code may run before it returns
    /// (0 after a helper saw something the run loop must act on).
    loop_left: u64,
    /// Instructions of finished iterations not yet added to `Core::retired` (helpers
    /// add them on entry, so devices see the exact count).
    loop_retired: u64,
    /// The inline TLB hit path's inputs: `Tlb::entries`, guest RAM and its length, and
    /// the fast-permission bits reads and writes need (`Core::need_r`/`need_w`).
    tlb: u64,
    ram: u64,
    ram_len: u64,
    need_r: u64,
    need_w: u64,
    /// Calls from compiled code into `helpers` (for `JitStats`).
    helper_calls: u64,
}

pub(crate) const OFF_GPR: i32 = 0;
pub(crate) const OFF_FLAGS_IN: i32 = 16;
pub(crate) const OFF_FLAGS_OUT: i32 = 24;
pub(crate) const OFF_FAULT_FLAGS: i32 = 32;
pub(crate) const OFF_TMP_FLAGS: i32 = 40;
pub(crate) const OFF_STATUS: i32 = 48;
pub(crate) const OFF_END_BLOCK: i32 = 56;
pub(crate) const OFF_EXIT_K: i32 = 64;
pub(crate) const OFF_EXIT_KIND: i32 = 72;
pub(crate) const OFF_LOOP_LEFT: i32 = 80;
pub(crate) const OFF_LOOP_RETIRED: i32 = 88;
pub(crate) const OFF_TLB: i32 = 96;
pub(crate) const OFF_RAM: i32 = 104;
pub(crate) const OFF_RAM_LEN: i32 = 112;
pub(crate) const OFF_NEED_R: i32 = 120;
pub(crate) const OFF_NEED_W: i32 = 128;

/// The first `exit_k` instructions completed; the interpreter continues from there.
pub(crate) const EXIT_PREFIX: u64 = 0;
/// Instruction `exit_k` faulted (`Env::fault`), nothing of it committed.
pub(crate) const EXIT_FAULT: u64 = 1;
/// Instruction `exit_k` completed and asked the block to end (MMIO stop, code write...).
pub(crate) const EXIT_END: u64 = 2;
/// The closing branch (instruction `exit_k`) was taken / not taken.
pub(crate) const EXIT_TAKEN: u64 = 3;
pub(crate) const EXIT_NOT_TAKEN: u64 = 4;

/// What the helpers see: the running block and the interpreter state.
pub(crate) struct Env<'e, 'a> {
    ex: &'e mut Exec<'a>,
    insns: &'e [Insn],
    fault: Option<Fault>,
    rmw: Option<Loc>,
}

#[derive(Clone, Copy)]
struct Entry {
    /// Decode serial of the block this entry describes (0: none): the arena index is
    /// reused for other blocks, each with a new serial.
    serial: u64,
    hits: u32,
    state: EntryState,
    /// Code-cache generation the code was installed in.
    cache_gen: u32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum EntryState {
    Cold,
    Compiled {
        offset: usize,
        self_loop: bool,
    },
    /// Not compilable (first instruction unsupported, or too large).
    Refused,
}

const EMPTY_ENTRY: Entry = Entry {
    serial: 0,
    hits: 0,
    state: EntryState::Cold,
    cache_gen: 0,
};

/// Counters for tests and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JitStats {
    pub compiled: u64,
    pub refused: u64,
    pub native_runs: u64,
    /// Further iterations self-loop blocks ran without returning to the run loop.
    pub native_loops: u64,
    /// Calls from compiled code back into the interpreter (memory slow paths, handlers).
    pub helper_calls: u64,
    pub verified: u64,
    pub cache_flushes: u64,
}

pub struct Jit {
    mode: JitMode,
    threshold: u32,
    /// Fewest instructions worth compiling a block for (`MIN_INSNS`; tests lower it).
    min_insns: usize,
    cache: Option<native::CodeCache>,
    cache_gen: u32,
    entries: Vec<Entry>,
    stats: JitStats,
    /// Verify mode: RAM before the block and after the native run.
    ram_before: Vec<u8>,
    ram_native: Vec<u8>,
}

impl Default for Jit {
    fn default() -> Self {
        Jit::new(default_mode(), default_threshold())
    }
}

impl Jit {
    pub fn new(mode: JitMode, threshold: u32) -> Jit {
        Jit {
            mode,
            threshold: threshold.max(1),
            min_insns: default_min_insns(),
            cache: None,
            cache_gen: 1,
            entries: Vec::new(),
            stats: JitStats::default(),
            ram_before: Vec::new(),
            ram_native: Vec::new(),
        }
    }

    pub fn mode(&self) -> JitMode {
        self.mode
    }

    pub fn set_mode(&mut self, mode: JitMode) {
        self.mode = mode;
    }

    /// Executions of a block before it is compiled.
    pub fn set_threshold(&mut self, runs: u32) {
        self.threshold = runs.max(1);
    }

    /// Fewest instructions a block's compiled code must cover (unless it loops on
    /// itself) for it to be compiled; default `MIN_INSNS`. Tests set 1 to compile every
    /// block and compare it with the interpreter.
    pub fn set_min_insns(&mut self, insns: usize) {
        self.min_insns = insns.max(1);
    }

    pub fn stats(&self) -> JitStats {
        self.stats
    }

    /// Run `block` natively if it is hot and compiled. `whole`: the run
    /// loop would run the whole block (no single-step, shadow, breakpoint or budget cut).
    /// `budget`: the instructions the run loop would run from here, block after block,
    /// before it must look at anything (0 when it looks after this block: single-step,
    /// shadow, breakpoints); a self-loop block runs `budget / len` iterations at most.
    /// Returns None when the interpreter should run it, else whether it faulted (the
    /// exception delivered), with the state exactly as `run_block` leaves it.
    #[inline]
    pub(crate) fn run_block(
        &mut self,
        ex: &mut Exec<'_>,
        block: &Block,
        idx: usize,
        whole: bool,
        budget: u64,
    ) -> Option<bool> {
        if self.mode == JitMode::Off || !whole || block.serial == 0 {
            return None;
        }
        if idx >= self.entries.len() {
            self.entries
                .resize((idx / ENTRIES_STEP + 1) * ENTRIES_STEP, EMPTY_ENTRY);
        }
        let e = &mut self.entries[idx];
        if e.serial != block.serial {
            *e = Entry {
                serial: block.serial,
                ..EMPTY_ENTRY
            };
        }
        let (offset, self_loop) = match e.state {
            // The block cache hands out a block only under a flat mask that agrees with
            // the one it was decoded (and compiled) under on the bits its code uses.
            EntryState::Compiled { offset, self_loop } if e.cache_gen == self.cache_gen => {
                (offset, self_loop)
            }
            EntryState::Refused => return None,
            _ => {
                e.hits += 1;
                if e.hits < self.threshold {
                    return None;
                }
                self.compile(idx, block)?
            }
        };
        self.stats.native_runs += 1;
        if self.mode == JitMode::Verify {
            return Some(self.run_verified(ex, block, offset));
        }
        let loops = if self_loop {
            loop_iterations(ex, &block.insns, budget)
        } else {
            0
        };
        let out = self.run_native(ex, &block.insns, block.run_len, offset, loops);
        Some(finish(ex, &block.insns, block.run_len, out))
    }

    #[cold]
    fn compile(&mut self, slot: usize, block: &Block) -> Option<(usize, bool)> {
        if self.cache.is_none() {
            match native::CodeCache::new(CACHE_SIZE) {
                Ok(c) => self.cache = Some(c),
                Err(e) => {
                    tracing::warn!("JIT disabled: {e}");
                    self.mode = JitMode::Off;
                    return None;
                }
            }
        }
        let cache = self.cache.as_mut()?;
        // Compiled under the block's own flat mask: its inline memory paths assume flat
        // only segments the block's handlers were chosen by (`Block::flat_used`).
        let flat = block.flat;
        let min = self.min_insns;
        let worth = |c: &compile::Compiled| c.self_loop || c.len >= min;
        // Too short is refused before the free-space check (no cache flush for it).
        let mut code = compile::compile(&block.insns, cache.next_addr(), flat).filter(worth);
        if matches!(&code, Some(c) if c.code.len() > cache.free()) {
            // Full: drop every compiled block (entries of older generations are stale).
            cache.reset();
            self.cache_gen = self.cache_gen.wrapping_add(1);
            self.stats.cache_flushes += 1;
            code = compile::compile(&block.insns, cache.next_addr(), flat);
        }
        let installed = code.and_then(|c| Some((cache.install(&c.code).ok()?, c.self_loop)));
        let e = &mut self.entries[slot];
        match installed {
            Some((offset, self_loop)) => {
                self.stats.compiled += 1;
                e.state = EntryState::Compiled { offset, self_loop };
                e.cache_gen = self.cache_gen;
                Some((offset, self_loop))
            }
            None => {
                self.stats.refused += 1;
                e.state = EntryState::Refused;
                None
            }
        }
    }

    /// Enter compiled code and return how it exited; guest flags are materialized in
    /// `s.rflags` afterwards.
    fn run_native(
        &mut self,
        ex: &mut Exec<'_>,
        insns: &[Insn],
        run_len: usize,
        offset: usize,
        loops: u64,
    ) -> NativeExit {
        ex.materialize_flags();
        ex.c.block_rip = ex.s.rip;
        ex.c.next_rip = last_next(ex, insns, run_len);
        let mut ctx = JitCtx {
            gpr: ex.s.gpr.as_mut_ptr() as u64,
            env: 0,
            flags_in: (ex.s.rflags & STATUS) | 2,
            flags_out: 0,
            fault_flags: 0,
            tmp_flags: 0,
            status: 0,
            end_block: 0,
            exit_k: 0,
            exit_kind: 0,
            loop_left: loops,
            loop_retired: 0,
            tlb: ex.c.tlb.entries.as_ptr() as u64,
            ram: ex.ram.as_mut_ptr() as u64,
            ram_len: ex.ram.len() as u64,
            need_r: ex.c.need_r as u64,
            need_w: ex.c.need_w as u64,
            helper_calls: 0,
        };
        let mut env = Env {
            ex,
            insns,
            fault: None,
            rmw: None,
        };
        let retired0 = env.ex.c.retired;
        ctx.env = &mut env as *mut Env<'_, '_> as u64;
        if let Some(cache) = &self.cache {
            cache.run(offset, &mut ctx);
        }
        let fault = env.fault;
        let ex = env.ex;
        ex.c.retired += ctx.loop_retired;
        self.stats.helper_calls += ctx.helper_calls;
        if loops != 0 {
            // Only finished iterations have been counted so far (helpers added theirs).
            self.stats.native_loops += (ex.c.retired - retired0) / insns.len().max(1) as u64;
        }
        let host = if ctx.exit_kind == EXIT_FAULT {
            ctx.fault_flags
        } else {
            ctx.flags_out
        };
        ex.s.rflags = (ex.s.rflags & !STATUS) | (host & STATUS);
        ex.c.flags.op = FlagOp::None;
        NativeExit {
            kind: ctx.exit_kind,
            k: ctx.exit_k as usize,
            fault,
        }
    }

    /// Verify mode: the native run, then the interpreter from the same state; both must
    /// agree on registers, flags, RIP, the retired count, the fault and RAM.
    fn run_verified(&mut self, ex: &mut Exec<'_>, block: &Block, offset: usize) -> bool {
        let insns = &block.insns[..];
        // Both runs start with an empty TLB, so page walks set the same A/D bits.
        ex.c.tlb.flush_all();
        ex.materialize_flags();
        let state0 = ex.s.clone();
        let retired0 = ex.c.retired;
        let code0 = (
            ex.c.code.has_code.clone(),
            ex.c.code.chunks.clone(),
            ex.c.code.generation.clone(),
            ex.c.code.epoch,
        );
        self.ram_before.clear();
        self.ram_before.extend_from_slice(ex.ram);

        let out = self.run_native(ex, insns, block.run_len, offset, 0);
        // Only what ran natively is compared: the interpreted rest of a block may do port
        // I/O, which must happen once.
        let native = if out.kind == EXIT_PREFIX && out.k < insns.len() {
            Settled::Prefix(out.k)
        } else {
            settle(ex, insns, block.run_len, out)
        };
        ex.materialize_flags();
        let native_state = ex.s.clone();
        let native_retired = ex.c.retired;
        self.ram_native.clear();
        self.ram_native.extend_from_slice(ex.ram);

        *ex.s = state0.clone();
        ex.c.retired = retired0;
        ex.c.flags.op = FlagOp::None;
        ex.c.end_block = false;
        ex.c.fused_jcc = false;
        ex.c.pos = 0;
        (
            ex.c.code.has_code,
            ex.c.code.chunks,
            ex.c.code.generation,
            ex.c.code.epoch,
        ) = code0;
        ex.c.tlb.flush_all();
        ex.ram.copy_from_slice(&self.ram_before);

        ex.c.block_rip = ex.s.rip;
        let interp = match native {
            Settled::Prefix(m) => {
                ex.c.next_rip = last_next(ex, insns, block.run_len);
                run_body(ex, insns, 0, m, ex.c.next_rip).unwrap_or(Settled::Prefix(m))
            }
            _ => interpret(ex, insns, 0, block.run_len),
        };
        ex.materialize_flags();
        self.stats.verified += 1;

        let mut diffs = Vec::new();
        if native != interp {
            diffs.push(format!(
                "outcome: native {native:?}, interpreter {interp:?}"
            ));
        }
        if native_retired != ex.c.retired {
            diffs.push(format!(
                "retired: native {native_retired}, interpreter {}",
                ex.c.retired
            ));
        }
        if native_state != *ex.s {
            for r in 0..16 {
                if native_state.gpr[r] != ex.s.gpr[r] {
                    diffs.push(format!(
                        "gpr[{r}]: native {:#x}, interpreter {:#x}",
                        native_state.gpr[r], ex.s.gpr[r]
                    ));
                }
            }
            if native_state.rip != ex.s.rip {
                diffs.push(format!(
                    "rip: native {:#x}, interpreter {:#x}",
                    native_state.rip, ex.s.rip
                ));
            }
            if native_state.rflags != ex.s.rflags {
                diffs.push(format!(
                    "rflags: native {:#x}, interpreter {:#x}",
                    native_state.rflags, ex.s.rflags
                ));
            }
            if diffs.is_empty() {
                diffs.push("other architectural state differs".into());
            }
        }
        if *ex.ram != self.ram_native[..]
            && let Some(at) = (0..ex.ram.len()).find(|&a| ex.ram[a] != self.ram_native[a])
        {
            diffs.push(format!(
                "RAM at {at:#x}: native {:#04x}, interpreter {:#04x}",
                self.ram_native[at], ex.ram[at]
            ));
        }
        if !diffs.is_empty() {
            let listing: Vec<String> = insns.iter().map(|i| format!("  {}", i.raw)).collect();
            panic!(
                "JIT verify: block at rip {:#x} differs from the interpreter:\n{}\nstate before: {state0:?}\nblock:\n{}",
                state0.rip,
                diffs.join("\n"),
                listing.join("\n")
            );
        }
        let end = match interp {
            Settled::Prefix(m) => {
                let upto = if m >= block.run_len {
                    insns.len()
                } else {
                    block.run_len
                };
                interpret(ex, insns, m, upto)
            }
            other => other,
        };
        match end {
            Settled::Fault(f) => {
                interrupts::raise_exception(ex, f);
                true
            }
            _ => false,
        }
    }
}

/// RIP after the last instruction the run loop would run (`run_block`'s `last_next`).
fn last_next(ex: &Exec<'_>, insns: &[Insn], run_len: usize) -> u64 {
    let end = insns
        .get(run_len.min(insns.len()).wrapping_sub(1))
        .map_or(0, |i| i.end);
    ex.c.block_rip.wrapping_add(end as u64) & ex.ip_mask()
}

/// Further iterations a self-loop block may run after its first: as many as the run
/// loop would run whole within `budget` (it runs a block whole while at least its
/// length is left), and none unless its branch really lands on its start (the target
/// masked and checked as `settle` does).
fn loop_iterations(ex: &Exec<'_>, insns: &[Insn], budget: u64) -> u64 {
    let Some(last) = insns.last() else {
        return 0;
    };
    if branch_target(ex, ex.s.rip, last) != Some(ex.s.rip) {
        return 0;
    }
    (budget / insns.len() as u64).saturating_sub(1)
}

/// Where the closing relative branch `last` of the block at `start` goes when taken;
/// None when the target fails the CS-limit/canonical check.
fn branch_target(ex: &Exec<'_>, start: u64, last: &Insn) -> Option<u64> {
    let next = start.wrapping_add(last.end as u64) & ex.ip_mask();
    let mask = if ex.c.long64 {
        u64::MAX
    } else {
        size_mask(last.osize)
    };
    let target = next.wrapping_add(last.rel as u64) & mask;
    let bad = if ex.c.long64 {
        ((target as i64) << 16 >> 16) as u64 != target
    } else {
        target > ex.s.seg[1].limit as u64
    };
    (!bad).then_some(target)
}

/// How compiled code exited.
struct NativeExit {
    kind: u64,
    k: usize,
    fault: Option<Fault>,
}

/// A block's run, before any exception is delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Settled {
    Done,
    Fault(Fault),
    /// The first `m` instructions completed (verify mode stops there to compare).
    Prefix(usize),
}

/// Complete the block after a native exit and deliver its fault, if any.
fn finish(ex: &mut Exec<'_>, insns: &[Insn], run_len: usize, out: NativeExit) -> bool {
    match settle(ex, insns, run_len, out) {
        Settled::Fault(f) => {
            interrupts::raise_exception(ex, f);
            true
        }
        _ => false,
    }
}

/// Commit RIP and the retired count for a native exit, running the rest of the block on
/// the interpreter when compiled code covered only a prefix of it.
fn settle(ex: &mut Exec<'_>, insns: &[Insn], run_len: usize, out: NativeExit) -> Settled {
    let n = insns.len();
    let k = out.k.min(n.saturating_sub(1));
    let ip_mask = ex.ip_mask();
    let start = ex.c.block_rip;
    ex.c.pos = 0;
    match out.kind {
        EXIT_FAULT => {
            ex.c.retired += k as u64 + 1;
            ex.s.rip = ex.rip_of(&insns[k]);
            Settled::Fault(out.fault.unwrap_or_else(Fault::gp0))
        }
        EXIT_END => {
            // As `end_inside_block`: a handler that changed `next_rip` goes there.
            ex.c.retired += k as u64 + 1;
            ex.s.rip = if ex.c.next_rip != last_next(ex, insns, run_len) {
                ex.c.next_rip
            } else {
                ex.next_rip_of(&insns[k])
            };
            Settled::Done
        }
        EXIT_TAKEN | EXIT_NOT_TAKEN => {
            let last = &insns[k];
            ex.c.retired += k as u64 + 1;
            let next = ex.next_rip_of(last);
            if out.kind == EXIT_NOT_TAKEN {
                ex.s.rip = next;
                return Settled::Done;
            }
            let Some(target) = branch_target(ex, start, last) else {
                ex.s.rip = ex.rip_of(last);
                return Settled::Fault(Fault::gp0());
            };
            ex.s.rip = target;
            Settled::Done
        }
        _ => {
            // A prefix of `m` instructions ran: the interpreter runs the rest.
            let m = out.k.min(n);
            if m >= n {
                ex.c.retired += n as u64;
                ex.s.rip = start.wrapping_add(insns[n - 1].end as u64) & ip_mask;
                return Settled::Done;
            }
            let upto = if m >= run_len { n } else { run_len };
            interpret(ex, insns, m, upto)
        }
    }
}

/// Instructions `from..to` of a block, none of them its last; Some when one faulted or
/// ended the block (RIP and `retired` then committed as `end_inside_block` does).
fn run_body(
    ex: &mut Exec<'_>,
    insns: &[Insn],
    from: usize,
    to: usize,
    last_next: u64,
) -> Option<Settled> {
    for (k, insn) in insns.iter().enumerate().take(to).skip(from) {
        ex.c.pos = k as u32;
        let result = (insn.handler)(ex, insn);
        if result.is_err() | ex.c.end_block {
            ex.c.retired += k as u64 + 1;
            ex.c.pos = 0;
            return Some(match result {
                Ok(()) => {
                    ex.s.rip = if ex.c.next_rip != last_next {
                        ex.c.next_rip
                    } else {
                        ex.next_rip_of(insn)
                    };
                    Settled::Done
                }
                Err(f) => {
                    ex.s.rip = ex.rip_of(insn);
                    Settled::Fault(f)
                }
            });
        }
    }
    ex.c.pos = 0;
    None
}

/// The interpreter's `run_block` for instructions `from..upto` of a block (`upto` is its
/// run length; `ex.c.block_rip` is the block start and `retired` the count before it),
/// without delivering the fault.
fn interpret(ex: &mut Exec<'_>, insns: &[Insn], from: usize, upto: usize) -> Settled {
    let upto = upto.min(insns.len());
    if from >= upto {
        return Settled::Done;
    }
    let start = ex.c.block_rip;
    let ip_mask = ex.ip_mask();
    let last = &insns[upto - 1];
    let last_next = start.wrapping_add(last.end as u64) & ip_mask;
    ex.c.next_rip = last_next;
    if let Some(early) = run_body(ex, insns, from, upto - 1, last_next) {
        return early;
    }
    let last_start = if upto >= 2 { insns[upto - 2].end } else { 0 };
    ex.s.rip = start.wrapping_add(last_start as u64) & ip_mask;
    ex.c.pos = upto as u32 - 1;
    let result = (last.handler)(ex, last);
    ex.c.retired += upto as u64;
    ex.c.pos = 0;
    match result {
        Ok(()) => {
            ex.s.rip = ex.c.next_rip;
            if ex.c.fused_jcc {
                ex.c.fused_jcc = false;
                ex.c.retired += 1;
            }
            Settled::Done
        }
        Err(f) => Settled::Fault(f),
    }
}
