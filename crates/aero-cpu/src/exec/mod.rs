//! Instruction execution: the handler context, operand access and the handler table.
//!
//! # Writing a handler
//!
//! Every instruction is decoded once (see `decode.rs`) into an [`Insn`] whose `handler`
//! was chosen at decode time by [`lookup`]: each group file (`arith.rs`, `control.rs`,
//! ...) has a `lookup(&iced_x86::Instruction) -> Option<Handler>` that matches the
//! mnemonics it implements. To add a group (e.g. `x87.rs`, `sse.rs`): write the file,
//! add `mod x87;` below and one `.or_else(|| x87::lookup(ins))` in [`lookup`].
//!
//! A handler is `fn(&mut Exec, &Insn) -> XResult`:
//! - **Operands**: `i.ops[n]` describes operand `n` as decoded (register, memory,
//!   immediate). `ex.read_op(i, n)` / `ex.write_op(i, n, v)` read and write it at its own
//!   size (`i.ops[n].size` bytes). `i.raw` is the full `iced_x86::Instruction` for
//!   anything else (e.g. `i.raw.op_register(1)` to find an XMM/ST register).
//! - **Memory**: `ex.ea(i)` is the effective address (offset) of the memory operand,
//!   `i.mem.seg` its segment. `ex.read_mem(seg, off, size)` / `ex.write_mem(seg, off,
//!   size, v)` do segment checks, paging and the TLB for 1/2/4/8-byte accesses;
//!   `ex.read_bytes(seg, off, &mut buf)` / `ex.write_bytes(seg, off, &buf)` move larger
//!   blocks (FXSAVE, 16-byte SSE operands, 10-byte x87 values) and check the whole range
//!   before writing anything. Reads/writes may fail with a [`Fault`]: return it with `?`.
//! - **Registers**: `ex.s` is the architectural [`CpuState`] (GPRs, segments, CRs);
//!   `ex.c` is the internal `Core` (lazy flags, MSRs, `fpu: X87State`, `sse: SseState`).
//!   Read RFLAGS with `ex.rflags()` and write it with `ex.set_rflags(v)`; never touch
//!   `ex.s.rflags` directly while lazy flags are pending.
//! - **Exceptions**: return `Err(Fault::new(fault::UD))`, `Err(Fault::gp0())`,
//!   `Err(Fault::nm())`, `Err(Fault::new(fault::MF))`, `Err(Fault::new(fault::XM))`...
//!   Handlers must not commit any architectural state before the last point where they
//!   can fail: the run loop delivers the fault with RIP at the faulting instruction.
//! - **Control**: the run loop does not update RIP between the instructions of a block.
//!   `ex.rip_of(i)` / `ex.next_rip_of(i)` are the addresses of the instruction and the
//!   next one. The last instruction of a block (every branch: decoding ends blocks after
//!   them) also finds its RIP in `ex.s.rip` and the next one in `ex.c.next_rip`, which
//!   branches overwrite. Set `ex.c.end_block = true` after changing anything that affects
//!   how following instructions decode or translate; the block then continues at the
//!   next instruction, or at `ex.c.next_rip` if the handler changed it.
//! - **Time**: devices see `ex.c.retired_now()` instructions retired.

use crate::bus::Bus;
use crate::core::Core;
use crate::fault::{Fault, XResult};
use crate::flags::{self, size_mask};
use crate::state::CpuState;
use iced_x86::Instruction;

pub mod arith;
pub mod bcd;
pub mod bits;
pub mod control;
pub mod cpuid;
pub mod data;
pub mod fused;
pub mod io;
pub mod logic;
pub mod msr;
pub mod rmw;
pub mod shift;
pub mod sse;
pub mod sse_float;
pub mod sse_int;
pub mod stack;
pub mod strings;
pub mod system;
pub mod x87;
pub mod x87_env;

pub type Handler = fn(&mut Exec<'_>, &Insn) -> XResult;

/// Operand kinds.
pub const K_NONE: u8 = 0;
/// General register `reg` (0..15) at `size` bytes (low byte for size 1).
pub const K_REG: u8 = 1;
/// AH/CH/DH/BH: bits 8..15 of register `reg` (0..3).
pub const K_HI8: u8 = 2;
pub const K_MEM: u8 = 3;
pub const K_IMM: u8 = 4;
/// Segment register `reg` (ES=0 .. GS=5).
pub const K_SEG: u8 = 5;
/// Control register `reg`.
pub const K_CR: u8 = 6;
/// Debug register `reg`.
pub const K_DR: u8 = 7;
/// Anything else (x87/XMM/MMX registers...): see `Insn::raw`.
pub const K_OTHER: u8 = 8;

#[derive(Clone, Copy, Debug, Default)]
pub struct Opnd {
    pub kind: u8,
    pub reg: u8,
    /// Operand size in bytes.
    pub size: u8,
}

pub const NO_REG: u8 = 0xFF;
/// Memory base "register" meaning RIP-relative.
pub const RIP_REG: u8 = 0x10;

#[derive(Clone, Copy, Debug, Default)]
pub struct MemRef {
    /// Effective segment (ES=0 .. GS=5).
    pub seg: u8,
    pub base: u8,
    pub index: u8,
    pub scale: u8,
    /// Displacement; RIP-relative: relative to the end of the instruction.
    pub disp: u64,
    /// The address-size mask is `u64::MAX >> ashift` (0, 32 or 48).
    pub ashift: u8,
}

pub const PFX_REP: u8 = 1;
pub const PFX_REPNE: u8 = 2;
pub const PFX_LOCK: u8 = 4;

/// One decoded instruction: one cache line (the interpreter's data stays small, so hot
/// code stays in the host's L1 while the guest streams through memory).
#[derive(Clone)]
#[repr(align(64))]
pub struct Insn {
    pub handler: Handler,
    pub ops: [Opnd; 3],
    pub mem: MemRef,
    /// First immediate, sign-extended as the encoding says, masked to its operand size.
    pub imm: u64,
    /// Branch target relative to the next instruction; the second immediate (ENTER
    /// nesting level, far pointer selector) of instructions without one, see `imm2`.
    pub rel: i64,
    /// Offset of the next instruction from the start of the block (set by the decoder),
    /// so the run loop derives RIPs from the block start instead of a chain of updates.
    pub end: u16,
    /// Operand size in bytes.
    pub osize: u8,
    /// Address size in bytes.
    pub asize: u8,
    /// Condition code 0 (O) .. 15 (G). A fused CMP/TEST (no condition of its own): the
    /// length of its Jcc.
    pub cc: u8,
    pub prefix: u8,
    /// Non-zero: `handler` also runs the Jcc that follows (see `fused.rs`); the Jcc's
    /// operand size.
    pub fuse: u8,
    /// The decoder's view, for rarely executed handlers (x87, SSE, system).
    pub raw: Box<Instruction>,
}

const _: () = assert!(std::mem::size_of::<Insn>() == 64);

impl Insn {
    /// Second immediate (ENTER nesting level, far pointer selector), kept in `rel`.
    #[inline(always)]
    pub fn imm2(&self) -> u64 {
        self.rel as u64
    }
}

/// Everything a handler may touch.
pub struct Exec<'a> {
    pub s: &'a mut CpuState,
    pub c: &'a mut Core,
    pub ram: &'a mut [u8],
    pub bus: BusPort<'a>,
}

/// The bus as handlers see it: forwards every call and remembers whether the CPU did
/// anything that may have changed device state since the run loop last looked, so the
/// loop asks for the INTR line and stop requests only then (devices change only when
/// called: they advance between runs).
pub struct BusPort<'a> {
    bus: &'a mut dyn Bus,
    /// A call since the last `interrupt_pending` poll by the run loop.
    pub(crate) irq_stale: bool,
    /// A call since the last `stop_requested` poll by the run loop.
    pub(crate) stop_stale: bool,
}

impl<'a> BusPort<'a> {
    pub fn new(bus: &'a mut dyn Bus) -> Self {
        BusPort {
            bus,
            irq_stale: true,
            stop_stale: true,
        }
    }
    #[inline(always)]
    fn touch(&mut self) -> &mut dyn Bus {
        self.irq_stale = true;
        self.stop_stale = true;
        &mut *self.bus
    }
    #[inline(always)]
    pub fn map_page(&self, paddr: u64) -> crate::bus::PageMapping {
        self.bus.map_page(paddr)
    }
    pub fn mmio_read(&mut self, paddr: u64, size: u8) -> u64 {
        self.touch().mmio_read(paddr, size)
    }
    pub fn mmio_write(&mut self, paddr: u64, size: u8, value: u64) {
        self.touch().mmio_write(paddr, size, value)
    }
    pub fn io_read(&mut self, port: u16, size: u8) -> u32 {
        self.touch().io_read(port, size)
    }
    pub fn io_write(&mut self, port: u16, size: u8, value: u32) {
        self.touch().io_write(port, size, value)
    }
    pub fn sync_time(&mut self, instructions_retired: u64) {
        self.touch().sync_time(instructions_retired)
    }
    pub fn tsc(&mut self) -> u64 {
        self.touch().tsc()
    }
    pub fn interrupt_pending(&mut self) -> bool {
        self.bus.interrupt_pending()
    }
    pub fn acknowledge_interrupt(&mut self) -> u8 {
        self.touch().acknowledge_interrupt()
    }
    pub fn stop_requested(&mut self) -> bool {
        self.bus.stop_requested()
    }
    pub fn apic_base_written(&mut self, value: u64) {
        self.touch().apic_base_written(value)
    }
    pub fn task_priority_written(&mut self, cr8: u8) {
        self.touch().task_priority_written(cr8)
    }
    pub fn task_priority(&mut self) -> Option<u8> {
        self.touch().task_priority()
    }
    pub fn a20_enabled(&self) -> bool {
        self.bus.a20_enabled()
    }
}

/// Instance of a handler generic over its operand size (`const N: usize`, last
/// parameter), chosen at decode time so the handler has no per-execution size match.
/// `sized!(size, f, A, B)` is `f::<A, B, size>`; GPR sizes are 1, 2, 4 or 8.
macro_rules! sized {
    ($size:expr, $f:ident $(, $c:expr)*) => {
        match $size {
            1 => $f::<$({ $c },)* 1> as $crate::exec::Handler,
            2 => $f::<$({ $c },)* 2>,
            4 => $f::<$({ $c },)* 4>,
            _ => $f::<$({ $c },)* 8>,
        }
    };
}
pub(crate) use sized;

/// How the memory operand of a fast-path handler is addressed (a const parameter, chosen
/// at decode time by [`mem_form`]): any effective address through the segment checks, or
/// a flat segment (base 0 and no limit that a page-sized access can reach; see
/// `Core::flat`) with any, base+displacement or base+index*scale+displacement addressing.
/// Flat forms skip the segment arithmetic: the offset is the linear address, a TLB hit
/// proves the access legal (the TLB never holds a non-canonical page) and everything else
/// takes the checked path.
pub const F_ANY: u8 = 0;
pub const F_FLAT: u8 = 1;
pub const F_FLAT_BD: u8 = 2;
pub const F_FLAT_BISD: u8 = 3;

/// The effective-address part of the form of `ins`'s memory operand (segment ignored).
pub fn ea_form(ins: &Instruction) -> u8 {
    use iced_x86::Register;
    let base = ins.memory_base();
    let plain_gpr = |r: Register| r.is_gpr() && r.size() >= 2;
    if !plain_gpr(base) {
        F_FLAT
    } else if ins.memory_index() == Register::None {
        F_FLAT_BD
    } else if plain_gpr(ins.memory_index()) {
        F_FLAT_BISD
    } else {
        F_FLAT
    }
}

/// The form for `ins`'s memory operand when the segments in the bit mask `flat` are flat.
pub fn mem_form(ins: &Instruction, flat: u8) -> u8 {
    let seg = match ins.memory_segment() {
        iced_x86::Register::ES => 0,
        iced_x86::Register::CS => 1,
        iced_x86::Register::SS => 2,
        iced_x86::Register::DS => 3,
        iced_x86::Register::FS => 4,
        iced_x86::Register::GS => 5,
        _ => return F_ANY,
    };
    if flat & (1 << seg) == 0 {
        F_ANY
    } else {
        ea_form(ins)
    }
}

/// `sized!` over the memory forms: `formed!(form, size, f, A)` is `f::<A, form, size>`.
macro_rules! formed {
    ($form:expr, $size:expr, $f:ident $(, $c:expr)*) => {
        match $form {
            $crate::exec::F_FLAT => $crate::exec::sized!($size, $f $(, $c)*, $crate::exec::F_FLAT),
            $crate::exec::F_FLAT_BD => {
                $crate::exec::sized!($size, $f $(, $c)*, $crate::exec::F_FLAT_BD)
            }
            $crate::exec::F_FLAT_BISD => {
                $crate::exec::sized!($size, $f $(, $c)*, $crate::exec::F_FLAT_BISD)
            }
            _ => $crate::exec::sized!($size, $f $(, $c)*, $crate::exec::F_ANY),
        }
    };
}
pub(crate) use formed;

/// Where the source operand of a size-specialised fast path comes from (a const
/// parameter of the handler): a plain GPR, the immediate, or the ModRM memory operand.
pub const SRC_REG: u8 = 0;
pub const SRC_IMM: u8 = 1;
pub const SRC_MEM: u8 = 2;

/// The source kind of operand `n` for a fast path, if it has one of the kinds above.
pub fn src_kind(ins: &Instruction, n: u32) -> Option<u8> {
    if is_plain_gpr(ins, n) {
        Some(SRC_REG)
    } else if is_imm(ins, n) {
        Some(SRC_IMM)
    } else if is_mem(ins, n) {
        Some(SRC_MEM)
    } else {
        None
    }
}

/// Operand `n` is a general register other than AH/CH/DH/BH (fast-path handlers).
pub fn is_plain_gpr(ins: &Instruction, n: u32) -> bool {
    use iced_x86::{OpKind, Register};
    ins.op_count() > n
        && ins.op_kind(n) == OpKind::Register
        && ins.op_register(n).is_gpr()
        && !matches!(
            ins.op_register(n),
            Register::AH | Register::CH | Register::DH | Register::BH
        )
}

/// Operand `n` is an immediate.
pub fn is_imm(ins: &Instruction, n: u32) -> bool {
    use iced_x86::OpKind::*;
    ins.op_count() > n
        && matches!(
            ins.op_kind(n),
            Immediate8
                | Immediate16
                | Immediate32
                | Immediate64
                | Immediate8to16
                | Immediate8to32
                | Immediate8to64
                | Immediate32to64
        )
}

/// Operand `n` is a ModRM memory operand.
pub fn is_mem(ins: &Instruction, n: u32) -> bool {
    ins.op_count() > n && ins.op_kind(n) == iced_x86::OpKind::Memory
}

/// Handler for instructions that are decoded but not implemented: #UD.
pub fn undefined(_: &mut Exec<'_>, _: &Insn) -> XResult {
    Err(Fault::ud())
}

/// Find the handler for a decoded instruction (segments not assumed flat).
pub fn lookup(ins: &Instruction) -> Option<Handler> {
    lookup_flat(ins, 0)
}

/// Find the handler for an instruction decoded while the segments in the bit mask `flat`
/// are flat (`Core::flat`; blocks are cached per flat mask).
pub fn lookup_flat(ins: &Instruction, flat: u8) -> Option<Handler> {
    implemented_in(ins, mem_form(ins, flat), flat & (1 << 2) != 0).or_else(|| fpu_fallback(ins))
}

/// x87/MMX/SSE instructions without a handler: #NM when CR0.TS/EM say so, else #UD.
fn fpu_fallback(ins: &Instruction) -> Option<Handler> {
    use iced_x86::CpuidFeature::*;
    let f = ins.cpuid_features();
    if f.iter()
        .any(|c| matches!(c, FPU | FPU287 | FPU387 | FPU287XL_ONLY | FPU387SL_ONLY))
    {
        return Some(x87_unavailable);
    }
    if f.iter()
        .any(|c| matches!(c, MMX | SSE | SSE2 | SSE3 | SSSE3 | FXSR))
    {
        return Some(simd_unavailable);
    }
    None
}

fn x87_unavailable(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    use crate::mmu::{CR0_EM, CR0_TS};
    if ex.s.cr0 & (CR0_EM | CR0_TS) != 0 {
        return Err(Fault::nm());
    }
    Err(Fault::ud())
}

fn simd_unavailable(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    use crate::mmu::{CR0_EM, CR0_TS};
    if ex.s.cr0 & CR0_EM == 0 && ex.s.cr0 & CR0_TS != 0 {
        return Err(Fault::nm());
    }
    Err(Fault::ud())
}

/// Handlers that actually implement the instruction (drives CPUID feature bits).
pub fn implemented(ins: &Instruction) -> Option<Handler> {
    implemented_in(ins, F_ANY, false)
}

/// `implemented` with memory fast paths of form `form` (`mem_form`) and, when `flat_ss`,
/// stack fast paths for a flat SS.
fn implemented_in(ins: &Instruction, form: u8, flat_ss: bool) -> Option<Handler> {
    // SSE first: MOVSD/CMPSD share mnemonics with the string instructions.
    sse::lookup(ins)
        .or_else(|| rmw::lookup(ins, form))
        .or_else(|| data::lookup(ins, form))
        .or_else(|| arith::lookup(ins, form))
        .or_else(|| logic::lookup(ins, form))
        .or_else(|| control::lookup(ins, flat_ss))
        .or_else(|| stack::lookup(ins, flat_ss))
        .or_else(|| shift::lookup(ins))
        .or_else(|| bits::lookup(ins))
        .or_else(|| bcd::lookup(ins))
        .or_else(|| strings::lookup(ins))
        .or_else(|| io::lookup(ins))
        // Before `system`: x87 owns WAIT (pending-exception check).
        .or_else(|| x87::lookup(ins))
        .or_else(|| system::lookup(ins))
        .or_else(|| msr::lookup(ins))
        .or_else(|| cpuid::lookup(ins))
}

impl Exec<'_> {
    // ---- flags -----------------------------------------------------------------------

    /// RFLAGS with lazily computed status flags.
    #[inline]
    pub fn rflags(&self) -> u64 {
        self.c.flags.read(self.s.rflags)
    }

    /// Write RFLAGS (all bits; callers apply privilege masks).
    #[inline]
    pub fn set_rflags(&mut self, v: u64) {
        self.c.flags.op = flags::FlagOp::None;
        self.s.rflags = (v & !0x28) | 2;
    }

    /// Materialize the status flags, so single flags can be edited in `s.rflags`.
    #[inline]
    pub fn materialize_flags(&mut self) {
        let f = self.rflags();
        self.set_rflags(f);
    }

    #[inline(always)]
    pub fn cf(&self) -> bool {
        self.c.flags.cf(self.s.rflags)
    }

    #[inline(always)]
    pub fn cond(&self, cc: u8) -> bool {
        self.c.flags.cond(self.s.rflags, cc)
    }

    // ---- registers ---------------------------------------------------------------------

    #[inline(always)]
    pub fn reg(&self, r: u8, size: u8) -> u64 {
        self.s.gpr[r as usize & 15] & size_mask(size)
    }

    /// Write a GPR with x86 semantics: 32-bit writes zero-extend, 8/16-bit writes merge.
    #[inline(always)]
    pub fn set_reg(&mut self, r: u8, size: u8, v: u64) {
        let g = &mut self.s.gpr[r as usize & 15];
        *g = match size {
            1 => (*g & !0xFF) | (v & 0xFF),
            2 => (*g & !0xFFFF) | (v & 0xFFFF),
            4 => v & 0xFFFF_FFFF,
            _ => v,
        };
    }

    // ---- operands ----------------------------------------------------------------------

    // ---- instruction pointer -------------------------------------------------------------

    /// RIP of instruction `i` of the running block.
    #[inline]
    pub fn rip_of(&self, i: &Insn) -> u64 {
        let start = i.end.wrapping_sub(i.raw.len() as u16);
        self.c.block_rip.wrapping_add(start as u64) & self.ip_mask()
    }

    /// RIP of the instruction after `i` of the running block.
    #[inline]
    pub fn next_rip_of(&self, i: &Insn) -> u64 {
        self.c.block_rip.wrapping_add(i.end as u64) & self.ip_mask()
    }

    /// 0xFFFF, 0xFFFF_FFFF or all ones for 16-, 32- and 64-bit code.
    #[inline(always)]
    pub fn ip_mask(&self) -> u64 {
        u64::MAX >> (64u32.wrapping_sub(self.c.bitness) & 63)
    }

    /// Effective address (offset within the segment) of the memory operand.
    #[inline(always)]
    pub fn ea(&self, i: &Insn) -> u64 {
        let m = &i.mem;
        let mut a = m.disp;
        if m.base != NO_REG {
            a = a.wrapping_add(if m.base == RIP_REG {
                // RIP-relative displacements are relative to the block start (decode.rs).
                self.c.block_rip
            } else {
                self.s.gpr[m.base as usize & 15]
            });
        }
        if m.index != NO_REG {
            a = a.wrapping_add(self.s.gpr[m.index as usize & 15] << m.scale);
        }
        a & (u64::MAX >> m.ashift)
    }

    /// `ea` for memory form `F` (see [`F_ANY`]).
    #[inline(always)]
    pub fn ea_f<const F: u8>(&self, i: &Insn) -> u64 {
        let m = &i.mem;
        let a = match F {
            F_FLAT_BD => self.s.gpr[m.base as usize & 15].wrapping_add(m.disp),
            F_FLAT_BISD => self.s.gpr[m.base as usize & 15]
                .wrapping_add(self.s.gpr[m.index as usize & 15] << m.scale)
                .wrapping_add(m.disp),
            _ => return self.ea(i),
        };
        a & (u64::MAX >> m.ashift)
    }

    /// `N` bytes at the memory operand of form `F`.
    #[inline(always)]
    pub fn load_f<const F: u8, const N: usize>(&mut self, i: &Insn) -> XResult<u64> {
        let off = self.ea_f::<F>(i);
        if F != F_ANY
            && let Some(v) = self.read_fast::<N>(off)
        {
            return Ok(v);
        }
        self.load_at::<N>(i.mem.seg, off)
    }

    /// Segment-checked read of `N` bytes at seg:off.
    #[inline(always)]
    fn load_at<const N: usize>(&mut self, seg: u8, off: u64) -> XResult<u64> {
        let lin = self.lin(seg, off, N as u8, false)?;
        self.read_lin::<N>(lin)
    }

    /// Write `N` bytes at the memory operand of form `F`.
    #[inline(always)]
    pub fn store_f<const F: u8, const N: usize>(&mut self, i: &Insn, v: u64) -> XResult {
        let off = self.ea_f::<F>(i);
        if F != F_ANY && self.write_fast::<N>(off, v) {
            return Ok(());
        }
        let lin = self.lin(i.mem.seg, off, N as u8, true)?;
        self.write_lin::<N>(lin, v)
    }

    #[inline(always)]
    pub fn read_op(&mut self, i: &Insn, n: usize) -> XResult<u64> {
        let o = i.ops[n];
        match o.kind {
            K_REG => Ok(self.s.gpr[o.reg as usize & 15] & size_mask(o.size)),
            K_MEM => {
                let off = self.ea(i);
                self.read_mem(i.mem.seg, off, o.size)
            }
            K_IMM => Ok(i.imm),
            K_HI8 => Ok((self.s.gpr[o.reg as usize & 3] >> 8) & 0xFF),
            K_SEG => Ok(self.s.seg[o.reg as usize % 6].selector as u64),
            _ => Ok(0),
        }
    }

    #[inline(always)]
    pub fn write_op(&mut self, i: &Insn, n: usize, v: u64) -> XResult {
        let o = i.ops[n];
        match o.kind {
            K_REG => {
                self.set_reg(o.reg, o.size, v);
                Ok(())
            }
            K_MEM => {
                let off = self.ea(i);
                self.write_mem(i.mem.seg, off, o.size, v)
            }
            K_HI8 => {
                let g = &mut self.s.gpr[o.reg as usize & 3];
                *g = (*g & !0xFF00) | ((v & 0xFF) << 8);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Resolve a read-modify-write destination once (one segment/limit check, one EA).
    #[inline(always)]
    pub fn rmw_loc(&mut self, i: &Insn, n: usize) -> XResult<Loc> {
        let o = i.ops[n];
        match o.kind {
            K_MEM => {
                let off = self.ea(i);
                let lin = self.lin(i.mem.seg, off, o.size, true)?;
                Ok(Loc::Mem(lin, o.size))
            }
            K_HI8 => Ok(Loc::Hi8(o.reg)),
            _ => Ok(Loc::Reg(o.reg, o.size)),
        }
    }

    #[inline(always)]
    pub fn loc_read(&mut self, l: Loc) -> XResult<u64> {
        match l {
            Loc::Reg(r, sz) => Ok(self.reg(r, sz)),
            Loc::Hi8(r) => Ok((self.s.gpr[r as usize & 3] >> 8) & 0xFF),
            Loc::Mem(lin, sz) => self.read_lin_sized(lin, sz),
        }
    }

    #[inline(always)]
    pub fn loc_write(&mut self, l: Loc, v: u64) -> XResult {
        match l {
            Loc::Reg(r, sz) => {
                self.set_reg(r, sz, v);
                Ok(())
            }
            Loc::Hi8(r) => {
                let g = &mut self.s.gpr[r as usize & 3];
                *g = (*g & !0xFF00) | ((v & 0xFF) << 8);
                Ok(())
            }
            Loc::Mem(lin, sz) => self.write_lin_sized(lin, sz, v),
        }
    }

    /// Operand 1 of a fast-path handler: register `ops[1].reg`, the immediate, or `N`
    /// bytes of memory (`S` is `SRC_REG`, `SRC_IMM` or `SRC_MEM`).
    #[inline(always)]
    pub fn src<const S: u8, const N: usize>(&mut self, i: &Insn) -> XResult<u64> {
        self.src_f::<S, F_ANY, N>(i)
    }

    /// `src` with a memory operand of form `F`.
    #[inline(always)]
    pub fn src_f<const S: u8, const F: u8, const N: usize>(&mut self, i: &Insn) -> XResult<u64> {
        match S {
            SRC_REG => Ok(self.reg(i.ops[1].reg, N as u8)),
            SRC_IMM => Ok(i.imm & size_mask(N as u8)),
            _ => self.load_f::<F, N>(i),
        }
    }

    /// `N` bytes at the ModRM memory operand (segment checks, TLB fast path inlined).
    #[inline(always)]
    pub fn load<const N: usize>(&mut self, i: &Insn) -> XResult<u64> {
        self.load_f::<F_ANY, N>(i)
    }

    // ---- segmented memory ----------------------------------------------------------------

    /// Segment translation with limit and type checks.
    #[inline(always)]
    pub fn lin(&self, seg: u8, off: u64, size: u8, write: bool) -> XResult<u64> {
        let sc = &self.c.segc[seg as usize & 7];
        if self.c.long64 {
            let l = sc.base.wrapping_add(off);
            if ((l as i64) << 16 >> 16) as u64 != l {
                return Err(if seg == 2 { Fault::ss(0) } else { Fault::gp0() });
            }
            return Ok(l);
        }
        let (lo, hi) = if write {
            (sc.write_lo, sc.write_hi)
        } else {
            (sc.read_lo, sc.read_hi)
        };
        if off < lo || off + (size as u64 - 1) > hi {
            return Err(if seg == 2 { Fault::ss(0) } else { Fault::gp0() });
        }
        Ok(sc.base.wrapping_add(off) & 0xFFFF_FFFF)
    }

    #[inline(always)]
    pub fn read_mem(&mut self, seg: u8, off: u64, size: u8) -> XResult<u64> {
        let lin = self.lin(seg, off, size, false)?;
        self.read_lin_sized(lin, size)
    }

    #[inline(always)]
    pub fn write_mem(&mut self, seg: u8, off: u64, size: u8, v: u64) -> XResult {
        let lin = self.lin(seg, off, size, true)?;
        self.write_lin_sized(lin, size, v)
    }

    /// Read `buf.len()` bytes (any length) at seg:off.
    pub fn read_bytes(&mut self, seg: u8, off: u64, buf: &mut [u8]) -> XResult {
        if buf.is_empty() {
            return Ok(());
        }
        let lin = self.lin_range(seg, off, buf.len() as u64, false)?;
        for (k, b) in buf.iter_mut().enumerate() {
            *b = self.read_lin::<1>(lin.wrapping_add(k as u64))? as u8;
        }
        Ok(())
    }

    /// Write `buf` at seg:off; every page is checked before the first byte is written.
    pub fn write_bytes(&mut self, seg: u8, off: u64, buf: &[u8]) -> XResult {
        if buf.is_empty() {
            return Ok(());
        }
        let lin = self.lin_range(seg, off, buf.len() as u64, true)?;
        let user = self.c.user;
        let mut page = lin & !0xFFF;
        let end = lin.wrapping_add(buf.len() as u64 - 1);
        loop {
            self.translate(
                page.max(lin) & self.c.lin_mask,
                crate::mmu::Access::Write,
                user,
            )?;
            if page >= (end & !0xFFF) {
                break;
            }
            page = page.wrapping_add(0x1000);
        }
        for (k, b) in buf.iter().enumerate() {
            self.write_lin::<1>(lin.wrapping_add(k as u64), *b as u64)?;
        }
        Ok(())
    }

    fn lin_range(&self, seg: u8, off: u64, len: u64, write: bool) -> XResult<u64> {
        if self.c.long64 || len <= 8 {
            return self.lin(seg, off, len.clamp(1, 8) as u8, write);
        }
        let first = self.lin(seg, off, 1, write)?;
        self.lin(seg, off.wrapping_add(len - 8), 8, write)?;
        Ok(first)
    }

    // ---- stack -----------------------------------------------------------------------------

    /// Stack address size in bytes.
    #[inline(always)]
    pub fn sp_size(&self) -> u8 {
        if self.c.long64 {
            8
        } else if self.s.seg[2].attr & 0x400 != 0 {
            4
        } else {
            2
        }
    }

    /// RSP after adding `delta`, respecting the stack address size.
    #[inline(always)]
    pub fn sp_add(&self, delta: i64) -> u64 {
        let rsp = self.s.gpr[4];
        let n = rsp.wrapping_add(delta as u64);
        match self.sp_size() {
            8 => n,
            4 => n & 0xFFFF_FFFF,
            _ => (rsp & !0xFFFF) | (n & 0xFFFF),
        }
    }

    /// Load the stack pointer for a stack segment that was just loaded (outer-level
    /// RET/IRET, stack switches through gates): with a 16-bit stack (SS.B=0) only SP
    /// changes and ESP's upper half keeps its value, as for every other stack access.
    #[inline]
    pub fn set_sp_for_new_ss(&mut self, sp: u64) {
        self.s.gpr[4] = match self.sp_size() {
            8 => sp,
            4 => sp & 0xFFFF_FFFF,
            _ => (self.s.gpr[4] & !0xFFFF) | (sp & 0xFFFF),
        };
    }

    /// Push `size` (2, 4 or 8) bytes. The size picks an instance of `push_n`, so each
    /// one has the segment check and the TLB fast path inline for its size.
    #[inline(always)]
    pub fn push(&mut self, v: u64, size: u8) -> XResult {
        match size {
            1 => self.push_n::<1>(v),
            2 => self.push_n::<2>(v),
            4 => self.push_n::<4>(v),
            _ => self.push_n::<8>(v),
        }
    }

    /// Read the stack at RSP + `at` without popping.
    #[inline(always)]
    pub fn peek(&mut self, at: u64, size: u8) -> XResult<u64> {
        match size {
            1 => self.peek_n::<1>(at),
            2 => self.peek_n::<2>(at),
            4 => self.peek_n::<4>(at),
            _ => self.peek_n::<8>(at),
        }
    }

    #[inline(always)]
    pub fn pop(&mut self, size: u8) -> XResult<u64> {
        let v = self.peek(0, size)?;
        self.s.gpr[4] = self.sp_add(size as i64);
        Ok(v)
    }

    /// Push `N` bytes: RSP moves only once the write succeeded.
    #[inline(always)]
    pub fn push_n<const N: usize>(&mut self, v: u64) -> XResult {
        let nsp = self.sp_add(-(N as i64));
        let off = nsp & size_mask(self.sp_size());
        let lin = self.lin(2, off, N as u8, true)?;
        self.write_lin::<N>(lin, v)?;
        self.s.gpr[4] = nsp;
        Ok(())
    }

    /// `push_n` for code decoded with a flat SS (`FLAT`, see [`F_FLAT`]): the stack
    /// offset is the linear address and a TLB hit needs no segment check.
    #[inline(always)]
    pub fn push_f<const FLAT: bool, const N: usize>(&mut self, v: u64) -> XResult {
        if FLAT {
            let nsp = self.sp_add(-(N as i64));
            let off = nsp & size_mask(self.sp_size());
            if self.write_fast::<N>(off, v) {
                self.s.gpr[4] = nsp;
                return Ok(());
            }
        }
        self.push_n::<N>(v)
    }

    /// `peek_n` for code decoded with a flat SS (`FLAT`).
    #[inline(always)]
    pub fn peek_f<const FLAT: bool, const N: usize>(&mut self, at: u64) -> XResult<u64> {
        if FLAT {
            let off = self.s.gpr[4].wrapping_add(at) & size_mask(self.sp_size());
            if let Some(v) = self.read_fast::<N>(off) {
                return Ok(v);
            }
        }
        self.peek_n::<N>(at)
    }

    /// Read `N` bytes at RSP + `at`.
    #[inline(always)]
    pub fn peek_n<const N: usize>(&mut self, at: u64) -> XResult<u64> {
        let off = self.s.gpr[4].wrapping_add(at) & size_mask(self.sp_size());
        let lin = self.lin(2, off, N as u8, false)?;
        self.read_lin::<N>(lin)
    }

    /// Pop `N` bytes.
    #[inline(always)]
    pub fn pop_n<const N: usize>(&mut self) -> XResult<u64> {
        let v = self.peek_n::<N>(0)?;
        self.s.gpr[4] = self.sp_add(N as i64);
        Ok(v)
    }
}

/// A resolved read-modify-write destination.
#[derive(Clone, Copy, Debug)]
pub enum Loc {
    Reg(u8, u8),
    Hi8(u8),
    Mem(u64, u8),
}
