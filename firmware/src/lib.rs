//! Aero's own firmware: the system BIOS and the VGA BIOS, assembled by our own Rust
//! code, plus the host-side handlers that ROM stubs trap into.
#![forbid(unsafe_code)]

mod asm16;
pub mod bios;
pub mod demo;
pub mod tables;
pub mod vgabios;

// System BIOS API used by the machine (see `bios` for the trap protocol and ROM layout).
pub use bios::{
    Bios, BiosConfig, BootDevice, DiskId, DiskInfo, DiskIoError, FirmwareError, FirmwareHost,
    TrapOutcome,
};
