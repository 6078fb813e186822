//! Per-CPU state that is not architectural register state: caches, lazy flags, MSR
//! storage, pending events. Lives beside [`CpuState`](crate::CpuState) in [`Cpu`](crate::Cpu).

use crate::flags::LazyFlags;
use crate::mmu::{CodePages, Tlb};

/// Cached view of one segment register for the memory access hot path.
#[derive(Clone, Copy, Debug)]
pub struct SegCache {
    pub base: u64,
    /// Lowest and highest offset a read may touch (expand-down segments have a low bound
    /// above 0); an unreadable segment has the empty range 1..=0, so the access check is
    /// two compares with no separate type test.
    pub read_lo: u64,
    pub read_hi: u64,
    /// The same for writes.
    pub write_lo: u64,
    pub write_hi: u64,
}

/// No access allowed until the run loop loads the real segments.
impl Default for SegCache {
    fn default() -> Self {
        SegCache::new(0, 0, 0, false, false)
    }
}

impl SegCache {
    /// Base 0 and every offset a 32-bit address reaches readable and writable (64-bit
    /// mode caches have the full range).
    pub fn is_flat(&self) -> bool {
        self.base == 0
            && self.read_lo == 0
            && self.write_lo == 0
            && self.read_hi >= 0xFFFF_FFFF
            && self.write_hi >= 0xFFFF_FFFF
    }

    /// Bounds for a segment that allows `lo..=hi` and the accesses allowed.
    pub fn new(base: u64, lo: u64, hi: u64, readable: bool, writable: bool) -> SegCache {
        let (read_lo, read_hi) = if readable { (lo, hi) } else { (1, 0) };
        let (write_lo, write_hi) = if writable { (lo, hi) } else { (1, 0) };
        SegCache {
            base,
            read_lo,
            read_hi,
            write_lo,
            write_hi,
        }
    }
}

/// `Core::events`: the bus asked for control back during the block.
pub const EV_STOP: u32 = 1;
/// Interrupts are inhibited for one instruction (after STI, MOV SS, POP SS).
pub const EV_IRQ_SHADOW: u32 = 1 << 1;
/// The block's instruction starts an interrupt shadow for the next one.
pub const EV_SHADOW_ARMED: u32 = 1 << 2;
/// An NMI is pending (delivered once not blocked).
pub const EV_NMI: u32 = 1 << 3;
/// Data breakpoints hit (`Core::pending_db`): #DB trap after the instruction.
pub const EV_DATA_BP: u32 = 1 << 4;
/// `Core::shutdown` is set.
pub const EV_SHUTDOWN: u32 = 1 << 5;
/// Instruction breakpoints are armed (stays set while they are).
pub const EV_BP_EXEC: u32 = 1 << 6;

/// Model-specific registers that are plain storage.
#[derive(Clone, Debug, Default)]
pub struct Msrs {
    pub star: u64,
    pub lstar: u64,
    pub cstar: u64,
    pub sfmask: u64,
    pub kernel_gs_base: u64,
    pub sysenter_cs: u64,
    pub sysenter_esp: u64,
    pub sysenter_eip: u64,
    pub apic_base: u64,
    pub pat: u64,
    pub mtrr_cap_def: u64,
    pub mtrr_fixed: [u64; 11],
    pub mtrr_var: [u64; 16],
    pub misc_enable: u64,
    pub tsc_aux: u64,
    /// Added to the bus TSC (guest WRMSR to IA32_TSC).
    pub tsc_offset: u64,
    pub bios_sign: u64,
    pub debugctl: u64,
    pub feature_control: u64,
    pub mcg_status: u64,
    pub mcg_ctl: u64,
    /// IA32_MCi_CTL/STATUS/ADDR/MISC of each bank (MSRs 0x400 + 4 * i + k).
    pub mc_banks: [[u64; 4]; crate::exec::cpuid::MC_BANKS],
    /// MSR indexes whose unknown access was already logged (bounded).
    pub unknown_logged: std::collections::BTreeSet<u32>,
}

impl Msrs {
    pub fn at_reset() -> Self {
        Msrs {
            // BSP, enabled, default base.
            apic_base: 0xFEE0_0000 | (1 << 11) | (1 << 8),
            pat: 0x0007_0406_0007_0406,
            misc_enable: 1, // fast strings
            bios_sign: (crate::exec::cpuid::MICROCODE_REVISION as u64) << 32,
            // Every error-reporting control enabled, as QEMU resets them.
            mcg_ctl: u64::MAX,
            mc_banks: [[u64::MAX, 0, 0, 0]; crate::exec::cpuid::MC_BANKS],
            ..Default::default()
        }
    }
}

pub struct Core {
    pub flags: LazyFlags,
    pub tlb: Tlb,
    pub code: CodePages,
    /// By segment index; 6 and 7 are never used (the memory path masks with 7 rather
    /// than dividing by 6).
    pub segc: [SegCache; 8],
    /// Bit per segment register whose cache is flat: base 0, and reads and writes allowed
    /// at every offset below 4 GiB (or 64-bit mode with a zero base). Decoding picks the
    /// flat memory forms for them, and blocks are cached per mask (`decode.rs`).
    pub flat: u8,
    /// `flat << 8 | user << 7 | bitness`: what a decoded block depends on besides its
    /// physical address, kept up to date by `seg.rs` so a block link checks it in one
    /// compare (`decode.rs`).
    pub mode_bits: u64,
    /// Code size of the current CS: 16, 32 or 64.
    pub bitness: u32,
    /// 64-bit mode (IA-32e with CS.L=1): segment bases/limits mostly ignored.
    pub long64: bool,
    /// CPL == 3: user-mode page permissions apply.
    pub user: bool,
    pub need_r: u8,
    pub need_w: u8,
    /// Linear addresses wrap at 4 GiB outside 64-bit mode.
    pub lin_mask: u64,
    pub a20_mask: u64,
    /// RIP after the last instruction of the running block (handlers that branch overwrite
    /// it). Only the last instruction of a block may read it: the others use
    /// [`Exec::next_rip_of`](crate::exec::Exec::next_rip_of).
    pub next_rip: u64,
    /// RIP of the first instruction of the running block. While a block runs, `CpuState::rip`
    /// is this for every instruction but the last one (which sees its own RIP); instructions
    /// find their own RIP with [`Exec::rip_of`](crate::exec::Exec::rip_of).
    pub block_rip: u64,
    /// Index in the running block of the instruction being executed (the run loop's
    /// counter): `retired + pos` is the exact count a device sees (`retired_now`).
    pub pos: u32,
    /// Stop executing the current block after this instruction.
    pub end_block: bool,
    /// A fused CMP/TEST+Jcc handler ran its Jcc too (one more instruction retired).
    pub fused_jcc: bool,
    /// Rare conditions the run loop must act on between blocks, one `EV_*` bit each, so
    /// that the common block transition tests one word.
    pub events: u32,
    pub nmi_blocked: bool,
    /// Instructions retired before the running block (the run loop adds the block's count
    /// when it ends); see `retired_now`.
    pub retired: u64,
    /// Physical ranges written behind the CPU's back, applied at the next `run`.
    pub pending_invalidations: Vec<(u64, u64)>,
    pub shutdown: Option<String>,
    pub last_exception: Option<u8>,
    pub msr: Msrs,
    pub fpu: crate::fpu::X87State,
    pub sse: crate::sse::SseState,
    /// Single-step trap pending after the current instruction (TF was set before it).
    pub trap_after: bool,
    /// DR6 bits to report with a #DB trap after the instruction.
    pub pending_db: u64,
    /// Optional instruction groups with handlers (drives CPUID).
    pub wired: crate::exec::cpuid::Wired,
    pub breakpoints: crate::debug::Breakpoints,
    /// Paging controls (CR0, CR3, CR4, EFER) when `run` last returned: edits made from
    /// outside between runs flush the TLB.
    pub paging_seen: [u64; 4],
    /// After INIT: halted until a STARTUP IPI.
    pub wait_for_sipi: bool,
}

impl Core {
    /// Instructions retired before the one executing now (exact inside a block).
    #[inline(always)]
    pub fn retired_now(&self) -> u64 {
        self.retired + self.pos as u64
    }

    pub fn new() -> Self {
        Core {
            flags: LazyFlags::default(),
            tlb: Tlb::default(),
            code: CodePages::default(),
            segc: [SegCache::default(); 8],
            flat: 0,
            mode_bits: 16,
            bitness: 16,
            long64: false,
            user: false,
            need_r: crate::mmu::R_S,
            need_w: crate::mmu::W_S,
            lin_mask: 0xFFFF_FFFF,
            a20_mask: u64::MAX,
            next_rip: 0,
            block_rip: 0,
            pos: 0,
            end_block: false,
            fused_jcc: false,
            events: 0,
            nmi_blocked: false,
            retired: 0,
            pending_invalidations: Vec::new(),
            shutdown: None,
            last_exception: None,
            msr: Msrs::at_reset(),
            fpu: Default::default(),
            sse: Default::default(),
            trap_after: false,
            pending_db: 0,
            wired: crate::exec::cpuid::Wired::probe(),
            wait_for_sipi: false,
            paging_seen: [0; 4],
            breakpoints: Default::default(),
        }
    }
}
