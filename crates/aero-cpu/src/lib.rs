//! Aero's x86 CPU.
//!
//! The CPU sees the rest of the machine only through [`Bus`] (MMIO, port I/O, the
//! interrupt line) and a plain slice of guest RAM handed to [`Cpu::run`]. Keeping RAM a
//! separate argument lets the software TLB cache RAM offsets and keeps the hit path free
//! of trait calls.
#![forbid(unsafe_code)]

mod bus;
mod state;
pub mod fpu;

pub use bus::{Bus, PageMapping, PAGE_SIZE};
pub use state::{CpuState, DescriptorTable, Reg, Seg, Segment};
