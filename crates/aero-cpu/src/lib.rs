//! Aero's x86 CPU.
//!
//! The CPU sees the rest of the machine only through [`Bus`] (MMIO, port I/O, the
//! interrupt line) and a plain slice of guest RAM handed to [`Cpu::run`]. Keeping RAM a
//! separate argument lets the software TLB cache RAM offsets and keeps the hit path free
//! of trait calls.
//!
//! Use: `Cpu::new()`, edit `cpu.state` if needed, then call [`Cpu::run`] in a loop and
//! act on its [`RunExit`]. Between runs the machine may edit `cpu.state` (RFLAGS is
//! materialized), but must call [`Cpu::flush_all_caches`] after changing bus mappings,
//! A20 or segment/mode state behind the CPU's back, and [`Cpu::invalidate_code`] after
//! writing guest RAM that may hold code. [`Cpu::raise_nmi`], [`Cpu::init`] and
//! [`Cpu::startup`] are the LAPIC's hooks.
//!
//! Layout: `cpu.rs` (public object, run loop), `decode.rs` (iced-x86 → [`exec::Insn`],
//! block cache keyed by physical address with per-page generations for self-modifying
//! code), `exec/` (instruction handlers grouped by kind; see its docs for how to write
//! one), `mmu.rs` (page walks, software TLB), `seg.rs` (segmentation and privilege
//! checks), `interrupts.rs` (exception/interrupt delivery in every mode, #DF, triple
//! fault, IRET), `task.rs` (hardware task switch), `debug.rs` (DR0-DR7 breakpoints),
//! `flags.rs` (lazy flags), `fpu/` and `sse/` (x87 and SSE arithmetic and state),
//! `jit/` (native code for hot blocks on x86-64 Linux hosts).
// `unsafe` is allowed in one module only: `jit/native.rs` (executable memory, calls into
// generated code).
#![deny(unsafe_code)]

mod bus;
mod core;
mod cpu;
mod debug;
mod decode;
pub mod exec;
pub mod fault;
pub mod flags;
pub mod fpu;
mod interrupts;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub mod jit;
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
#[path = "jit/off.rs"]
pub mod jit;
pub mod mmu;
pub mod seg;
pub mod sse;
mod state;
mod task;

pub use bus::{Bus, PAGE_SIZE, PageMapping};
pub use cpu::{Cpu, RunExit};
pub use state::{CpuState, DescriptorTable, Reg, Seg, Segment};
