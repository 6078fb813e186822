//! The public CPU object and its run loop.

use crate::bus::{Bus, PageMapping};
use crate::core::{Core, EV_DATA_BP, EV_IRQ_SHADOW, EV_NMI, EV_SHADOW_ARMED, EV_SHUTDOWN, EV_STOP};
use crate::decode::{BlockCache, SCRATCH};
use crate::exec::Exec;
use crate::fault::Fault;
use crate::flags::{self, FlagOp};
use crate::interrupts;
use crate::state::CpuState;

/// Why [`Cpu::run`] returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunExit {
    BudgetExhausted,
    /// HLT with no deliverable interrupt.
    Halted,
    /// The bus asked for control back (after the instruction that caused it completed).
    StopRequested,
    /// Triple fault (or another unrecoverable condition): the machine should reset.
    Shutdown {
        reason: String,
        cs: u16,
        rip: u64,
        last_exception: Option<u8>,
    },
}

pub struct Cpu {
    pub state: CpuState,
    pub(crate) core: Core,
    blocks: BlockCache,
    jit: crate::jit::Jit,
}

impl Default for Cpu {
    fn default() -> Self {
        Cpu::new()
    }
}

impl Cpu {
    pub fn new() -> Cpu {
        Cpu {
            state: CpuState::at_reset(),
            core: Core::new(),
            blocks: BlockCache::default(),
            jit: crate::jit::Jit::default(),
        }
    }

    /// RESET: architectural state, MSRs, caches.
    pub fn reset(&mut self) {
        let retired = self.core.retired;
        self.state = CpuState::at_reset();
        self.core = Core::new();
        self.core.retired = retired;
        self.blocks.clear();
    }

    /// INIT (from the LAPIC): like RESET, but MSRs that INIT preserves keep their values
    /// and the CPU then waits for a STARTUP IPI ([`Cpu::startup`]).
    pub fn init(&mut self) {
        let msr = self.core.msr.clone();
        self.reset();
        self.core.msr.apic_base = msr.apic_base;
        self.core.msr.pat = msr.pat;
        self.core.msr.mtrr_cap_def = msr.mtrr_cap_def;
        self.core.msr.mtrr_fixed = msr.mtrr_fixed;
        self.core.msr.mtrr_var = msr.mtrr_var;
        self.core.msr.feature_control = msr.feature_control;
        self.core.msr.mc_banks = msr.mc_banks;
        self.core.msr.mcg_status = msr.mcg_status;
        self.core.msr.mcg_ctl = msr.mcg_ctl;
        self.core.msr.misc_enable = msr.misc_enable;
        self.core.wait_for_sipi = true;
        self.state.halted = true;
    }

    /// STARTUP IPI: an INITed CPU starts in real mode at `vector << 12`.
    pub fn startup(&mut self, vector: u8) {
        if !self.core.wait_for_sipi {
            return;
        }
        self.core.wait_for_sipi = false;
        self.state.seg[crate::Seg::Cs as usize] = crate::Segment {
            selector: (vector as u16) << 8,
            base: (vector as u64) << 12,
            limit: 0xFFFF,
            attr: 0x9B,
        };
        self.state.rip = 0;
        self.state.halted = false;
    }

    /// The JIT mode of this CPU (default: `AERO_JIT`, see [`crate::jit`]).
    pub fn jit_mode(&self) -> crate::jit::JitMode {
        self.jit.mode()
    }
    pub fn set_jit_mode(&mut self, mode: crate::jit::JitMode) {
        self.jit.set_mode(mode);
    }
    /// Executions of a block before it is compiled.
    pub fn set_jit_threshold(&mut self, runs: u32) {
        self.jit.set_threshold(runs);
    }
    /// Fewest instructions a block's compiled code must cover (unless it loops on
    /// itself) to be compiled (tests set 1 to compile every block).
    pub fn set_jit_min_insns(&mut self, insns: usize) {
        self.jit.set_min_insns(insns);
    }
    pub fn jit_stats(&self) -> crate::jit::JitStats {
        self.jit.stats()
    }

    pub fn instructions_retired(&self) -> u64 {
        self.core.retired
    }

    /// Blocks of guest code decoded so far (a block found in the block cache is not
    /// decoded again): how well the cache holds a guest's code.
    pub fn blocks_decoded(&self) -> u64 {
        self.blocks.decoded
    }

    /// Guest RAM at `paddr..paddr+len` changed behind the CPU (DMA, firmware).
    pub fn invalidate_code(&mut self, paddr: u64, len: u64) {
        if len == 0 {
            return;
        }
        if self.core.pending_invalidations.len() >= 256 {
            // Too many to track one by one: drop every decoded block.
            self.core.pending_invalidations.clear();
            self.blocks.clear();
            return;
        }
        self.core.pending_invalidations.push((paddr, len));
    }

    /// Drop the TLB and all decoded blocks. Needed after bus mapping changes or ROM/RAM
    /// edits not reported with `invalidate_code`; edits of `state` (segments, CRs, EFER,
    /// RFLAGS) and A20 changes are picked up by the next `run` without it.
    pub fn flush_all_caches(&mut self) {
        self.core.tlb.flush_all();
        self.blocks.clear();
    }

    /// Drop only the TLB: some pages now map elsewhere but hold no decoded code (report
    /// any that might with `invalidate_code`). Cheaper than `flush_all_caches` for
    /// frequent remaps such as a VBE bank switch.
    pub fn flush_tlb(&mut self) {
        self.core.tlb.flush_all();
    }

    pub fn raise_nmi(&mut self) {
        self.core.events |= EV_NMI;
    }

    /// Access to the x87 state (for the machine's snapshot code and tests).
    pub fn fpu(&self) -> &crate::fpu::X87State {
        &self.core.fpu
    }
    pub fn fpu_mut(&mut self) -> &mut crate::fpu::X87State {
        &mut self.core.fpu
    }
    /// Access to the SSE state (XMM registers, MXCSR).
    pub fn sse(&self) -> &crate::sse::SseState {
        &self.core.sse
    }
    pub fn sse_mut(&mut self) -> &mut crate::sse::SseState {
        &mut self.core.sse
    }

    pub fn sse_state(&self) -> &crate::sse::SseState {
        &self.core.sse
    }

    pub fn run<B: Bus>(&mut self, ram: &mut [u8], bus: &mut B, max_instructions: u64) -> RunExit {
        let Cpu {
            state,
            core,
            blocks,
            jit,
        } = self;
        if core.wait_for_sipi {
            return RunExit::Halted;
        }
        let mut ex = Exec {
            s: state,
            c: core,
            ram,
            bus: crate::exec::BusPort::new(bus),
        };
        enter(&mut ex);
        let end = ex.c.retired.saturating_add(max_instructions);
        // The INTR line as last read; re-read after any bus call (`BusPort`).
        let mut irq_line = false;
        let mut prev = SCRATCH;
        let exit = loop {
            // Every condition the checks below act on, tested at once: the common block
            // (nothing pending, no debug feature, budget left) skips them all. The slow
            // path is exact; taking it when nothing is due changes nothing.
            // (A stale or asserted INTR line matters only with IF set.)
            let rare = (ex.c.events != 0)
                | (ex.c.retired >= end)
                | ((irq_line | ex.bus.irq_stale) & (ex.s.rflags & flags::IF != 0))
                | ex.s.halted
                | ex.bus.stop_stale
                | (ex.s.rflags & (flags::TF | flags::RF) != 0);
            let (shadow, tf, rf, bp_exec) = if rare {
                if ex.c.events & EV_SHUTDOWN != 0 {
                    ex.c.events &= !EV_SHUTDOWN;
                    break RunExit::Shutdown {
                        reason: ex.c.shutdown.take().unwrap_or_default(),
                        cs: ex.s.seg[1].selector,
                        rip: ex.s.rip,
                        last_exception: ex.c.last_exception,
                    };
                }
                if ex.c.events & EV_STOP != 0 {
                    ex.c.events &= !EV_STOP;
                    break RunExit::StopRequested;
                }
                if ex.c.retired >= end {
                    break RunExit::BudgetExhausted;
                }
                let shadow = ex.c.events & EV_IRQ_SHADOW != 0;
                ex.c.events &= !EV_IRQ_SHADOW;
                if !shadow && ex.s.rflags & flags::IF != 0 && ex.bus.irq_stale {
                    ex.bus.irq_stale = false;
                    irq_line = ex.bus.interrupt_pending();
                }
                if !shadow && poll_events(&mut ex, irq_line) {
                    prev = SCRATCH;
                    continue;
                }
                if ex.s.halted {
                    break RunExit::Halted;
                }
                if ex.bus.stop_stale {
                    ex.bus.stop_stale = false;
                    if ex.bus.stop_requested() {
                        break RunExit::StopRequested;
                    }
                }
                let tf = ex.s.rflags & flags::TF != 0;
                let rf = ex.s.rflags & flags::RF != 0;
                let bp_exec = ex.c.breakpoints.exec;
                if bp_exec && ex.s.rflags & flags::RF == 0 {
                    let lin = ex.s.seg[1].base.wrapping_add(ex.s.rip) & ex.c.lin_mask;
                    let hits = ex.exec_breakpoint_hits(lin);
                    if hits != 0 {
                        ex.s.dr[6] = (ex.s.dr[6] & !0xF) | hits;
                        interrupts::raise_exception(&mut ex, Fault::new(crate::fault::DB));
                        prev = SCRATCH;
                        continue;
                    }
                }
                (shadow, tf, rf, bp_exec)
            } else {
                (false, false, false, false)
            };
            ex.c.end_block = false;
            let idx = match blocks.fetch(&mut ex, prev) {
                Ok(i) => i,
                Err(f) => {
                    prev = SCRATCH;
                    // Counted like a faulting instruction so an exception storm (a
                    // handler whose code cannot be fetched) still ends with the budget.
                    ex.c.retired += 1;
                    interrupts::raise_exception(&mut ex, f);
                    continue;
                }
            };
            prev = idx;
            let block = blocks.block(idx);
            let all = &block.insns[..];
            // How many instructions may run: one when single-stepping, interrupts are
            // shadowed or instruction breakpoints are armed; never past the budget.
            let left = end - ex.c.retired;
            let (n, unfuse_last) = if !(shadow | tf | bp_exec) & (left >= all.len() as u64) {
                (block.run_len, false)
            } else {
                cut_run(all, shadow || tf || bp_exec, left)
            };
            // Hot blocks run as host code when the JIT has them (`jit/`).
            let whole = n == block.run_len && !unfuse_last;
            // What the loop would run before looking at anything again (a self-loop block
            // iterates within it): nothing past this block when stepping one at a time.
            let budget = if shadow | tf | rf | bp_exec { 0 } else { left };
            let outcome = match jit.run_block(&mut ex, block, idx, whole, budget) {
                Some(true) => Step::Faulted,
                Some(false) => Step::Exit,
                None => run_block(&mut ex, &all[..n], unfuse_last),
            };
            let faulted = outcome == Step::Faulted;
            // Everything below is rare: one test skips it all.
            if (ex.c.events & (EV_SHADOW_ARMED | EV_DATA_BP) != 0) | rf | tf | faulted {
                if ex.c.events & EV_SHADOW_ARMED != 0 {
                    ex.c.events = (ex.c.events & !EV_SHADOW_ARMED) | EV_IRQ_SHADOW;
                }
                if rf && !faulted {
                    // RF suppresses instruction breakpoints for exactly one instruction.
                    ex.s.rflags &= !flags::RF;
                }
                let data_hits = ex.c.pending_db;
                ex.c.pending_db = 0;
                ex.c.events &= !EV_DATA_BP;
                if (tf || data_hits != 0) && !faulted {
                    interrupts::debug_trap(&mut ex, if tf { 1 << 14 } else { 0 } | data_hits);
                }
                if faulted {
                    prev = SCRATCH;
                }
            }
        };
        leave(&mut ex);
        exit
    }
}

/// How many instructions of a block may run when it cannot run whole: one when
/// single-stepping, interrupts are shadowed or instruction breakpoints are armed
/// (`one`); never past the budget (`left`). Also says whether the last of them is a
/// fused CMP/TEST+Jcc cut off from its Jcc, to be run alone through its ordinary handler.
#[cold]
fn cut_run(all: &[crate::exec::Insn], one: bool, left: u64) -> (usize, bool) {
    let n = if one {
        all.len().min(1)
    } else {
        all.len().min(left as usize)
    };
    let unfuse_last = n < all.len() && n > 0 && all[n - 1].fuse != 0;
    let n = if n == all.len() {
        crate::decode::whole_run_len(all)
    } else {
        n
    };
    (n, unfuse_last)
}

/// How running a block ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Its last instruction completed, or one asked to end the block (`end_block`).
    Exit,
    /// An instruction faulted; the exception was delivered.
    Faulted,
}

/// Run `insns` (at least one), the first `insns.len()` instructions of the block at
/// `ex.s.rip`; `unfuse_last`: the last one is a fused CMP/TEST+Jcc cut off from its Jcc,
/// run through its ordinary handler. RIP and the retired count are written once, when
/// the block ends (each instruction finds its own RIP from `Insn::end`, see `Exec::rip_of`);
/// the loop counter `pos` makes the count a device sees exact (`Core::retired_now`).
#[inline(always)]
fn run_block(ex: &mut Exec<'_>, insns: &[crate::exec::Insn], unfuse_last: bool) -> Step {
    let Some((last, body)) = insns.split_last() else {
        return Step::Exit;
    };
    let start_rip = ex.s.rip;
    let ip_mask = ex.ip_mask();
    let last_next = start_rip.wrapping_add(last.end as u64) & ip_mask;
    ex.c.block_rip = start_rip;
    ex.c.next_rip = last_next;
    for (k, insn) in body.iter().enumerate() {
        ex.c.pos = k as u32;
        let result = (insn.handler)(ex, insn);
        // Both rare: a fault, or a handler that needs the block to end here.
        if result.is_err() | ex.c.end_block {
            return end_inside_block(ex, insn, k, result, last_next);
        }
    }
    // The last instruction: branches read and set RIP through `s.rip`/`c.next_rip`.
    let last_start = body.last().map_or(0, |i| i.end);
    ex.s.rip = start_rip.wrapping_add(last_start as u64) & ip_mask;
    ex.c.pos = body.len() as u32;
    let handler = if unfuse_last {
        crate::exec::lookup(&last.raw).unwrap_or(crate::exec::undefined)
    } else {
        last.handler
    };
    let result = handler(ex, last);
    // Faults are counted as retired so a faulting loop still consumes budget.
    ex.c.retired += insns.len() as u64;
    ex.c.pos = 0;
    match result {
        Ok(()) => {
            ex.s.rip = ex.c.next_rip;
            if ex.c.fused_jcc {
                // The fused handler ran the Jcc too.
                ex.c.fused_jcc = false;
                ex.c.retired += 1;
            }
            Step::Exit
        }
        Err(f) => {
            interrupts::raise_exception(ex, f);
            Step::Faulted
        }
    }
}

/// Instruction `k` of the block body (not its last) faulted or set `end_block`: commit
/// RIP and the retired count for it and deliver its fault.
#[cold]
#[inline(never)]
fn end_inside_block(
    ex: &mut Exec<'_>,
    insn: &crate::exec::Insn,
    k: usize,
    result: crate::fault::XResult,
    last_next: u64,
) -> Step {
    ex.c.retired += k as u64 + 1;
    ex.c.pos = 0;
    match result {
        Ok(()) => {
            // A handler that wants to go elsewhere (a REP string instruction resuming
            // later) changed `next_rip`; the others continue after themselves.
            ex.s.rip = if ex.c.next_rip != last_next {
                ex.c.next_rip
            } else {
                ex.next_rip_of(insn)
            };
            Step::Exit
        }
        Err(f) => {
            ex.s.rip = ex.rip_of(insn);
            interrupts::raise_exception(ex, f);
            Step::Faulted
        }
    }
}

/// Deliver a pending NMI or external interrupt (`irq_line`: INTR is asserted). Returns
/// true if one was delivered.
#[inline(always)]
fn poll_events(ex: &mut Exec<'_>, irq_line: bool) -> bool {
    if ex.c.events & EV_NMI != 0 && !ex.c.nmi_blocked {
        ex.c.events &= !EV_NMI;
        ex.c.nmi_blocked = true;
        ex.s.halted = false;
        interrupts::deliver_external(ex, crate::fault::NMI);
        return true;
    }
    if irq_line && ex.s.rflags & flags::IF != 0 {
        ex.bus.sync_time(ex.c.retired);
        let vector = ex.bus.acknowledge_interrupt();
        ex.s.halted = false;
        interrupts::deliver_external(ex, vector);
        return true;
    }
    false
}

/// Load caches from the (possibly externally edited) architectural state.
fn enter(ex: &mut Exec<'_>) {
    ex.c.flags.op = FlagOp::None;
    ex.s.rflags = (ex.s.rflags & !0x28) | 2;
    ex.c.code.ensure(ex.ram.len());
    let paging = [ex.s.cr0, ex.s.cr3, ex.s.cr4, ex.s.efer];
    if paging != ex.c.paging_seen {
        ex.c.tlb.flush_all();
    }
    let a20 = if ex.bus.a20_enabled() {
        u64::MAX
    } else {
        !(1u64 << 20)
    };
    if a20 != ex.c.a20_mask {
        ex.c.a20_mask = a20;
        ex.c.tlb.flush_all();
    }
    let pending = std::mem::take(&mut ex.c.pending_invalidations);
    for (paddr, len) in pending {
        let mut page = paddr & !0xFFF;
        let end = paddr.saturating_add(len - 1);
        // Bounded by the RAM size: larger ranges touch at most every RAM page once.
        let mut budget = ex.c.code.generation.len() + 1;
        while page <= end && budget > 0 {
            if let PageMapping::Ram { offset } | PageMapping::Rom { offset } = ex.bus.map_page(page)
            {
                // Only decoded bytes matter: a firmware write to the caller's stack next
                // to its code keeps the code's blocks.
                let from = paddr.max(page) - page;
                let to = end.min(page + 0xFFF) - page + 1;
                if ex
                    .c
                    .code
                    .write_hits_code(offset >> 12, from as usize, to as usize)
                {
                    ex.c.code.written(offset >> 12);
                }
            }
            page = page.saturating_add(0x1000);
            budget -= 1;
            if page == !0xFFF {
                break;
            }
        }
    }
    ex.c.events &= !EV_STOP;
    ex.refresh_breakpoints();
}

fn leave(ex: &mut Exec<'_>) {
    ex.materialize_flags();
    ex.c.paging_seen = [ex.s.cr0, ex.s.cr3, ex.s.cr4, ex.s.efer];
}
