//! AeroGPU, the paravirtual display device: PCI identity, BAR0 register file, the
//! submission ring in guest memory, fences, interrupts, vblank, scanout/cursor, and the
//! validating command processor with its executor interface.
//!
//! The ABI lives in `guest-tools/drivers/aerogpu/protocol/*.h` (mirrored by the
//! `aero-protocol` crate). See [`AeroGpu`] for how the machine wires it.
//!
//! The machine has one display device: a single PCI function with AeroGPU's identity
//! (A3A0:0001, class 03/00) that owns both models — the legacy VGA ports and 0xA0000
//! window go to [`crate::Vga`], BAR0 to [`AeroGpu`], BAR2
//! ([`AeroGpuPciDescription::lfb_bar_index`]) to the VGA's VBE linear framebuffer, the
//! expansion ROM BAR to the VGA BIOS — and whose current frame is AeroGPU's scanout while
//! SCANOUT0 is enabled, otherwise the VGA output (`aero-machine`'s `display_pci.rs` and
//! `display.rs`).

pub mod alloc_table;
pub mod bc_decode;
pub mod d3d9;
pub mod error;
pub mod executor;
pub(crate) mod executor_common;
pub mod memory;
pub mod pci;
pub mod processor;
pub mod soft_executor;
pub mod wgpu_executor;

pub use alloc_table::{AllocTable, Allocation};
pub use error::{AllocTableError, PacketError, SubmitError};
pub use executor::{Executor, GpuScanout, NullExecutor, PresentedTexture, SubmissionInfo};
pub use memory::{DeviceMemory, DeviceMemoryRef, Gart, GuestMemory, GuestMemoryError, VecMemory};
pub use pci::{AEROGPU_PCI_DESCRIPTION, AeroGpuPciDescription};
pub use processor::{Command, CommandProcessor, Limits, StreamSummary, clear_rect_records};
pub use soft_executor::{SoftError, SoftExecutor, SoftExecutorConfig, SoftStats};
pub use wgpu_executor::{WgpuError, WgpuExecutor};

mod device;
pub mod fence;
mod irq;
mod ring;
pub mod scanout;
mod vblank;

pub use device::{AeroGpu, AeroGpuConfig, DeviceStats, ErrorLatch};
pub use irq::IrqState;
pub use scanout::{CursorConfig, CursorImage, ScanoutConfig, ScanoutError};
pub use vblank::VblankClock;

#[cfg(test)]
mod tests;
