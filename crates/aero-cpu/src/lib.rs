//! Aero's x86 CPU.
//!
//! The CPU sees the rest of the machine only through [`Bus`] (MMIO, port I/O, the
//! interrupt line) and a plain slice of guest RAM handed to [`Cpu::run`]. Keeping RAM a
//! separate argument lets the software TLB cache RAM offsets and keeps the hit path free
//! of trait calls.
//!
//! Layout: `cpu.rs` (public object, run loop), `decode.rs` (iced-x86 → [`exec::Insn`],
//! block cache), `exec/` (instruction handlers grouped by kind), `mmu.rs` (paging, TLB),
//! `seg.rs` (segmentation), `interrupts.rs` (exception/interrupt delivery, IRET),
//! `task.rs` (hardware task switch), `flags.rs` (lazy flags), `fpu/` and `sse/` (x87 and
//! SSE arithmetic and state).
#![forbid(unsafe_code)]

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
pub mod mmu;
pub mod seg;
pub mod sse;
mod state;
mod task;

pub use bus::{Bus, PageMapping, PAGE_SIZE};
pub use cpu::{Cpu, RunExit};
pub use state::{CpuState, DescriptorTable, Reg, Seg, Segment};
