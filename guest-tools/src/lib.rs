//! Host-side support for `guest-tools/` (the Windows 7 AeroGPU drivers):
//!
//! - [`replay`]: replays a trace written by the drivers' portable C code (built natively
//!   for tests) into the Rust AeroGPU device, so the guest side is checked against the
//!   real device model;
//! - [`pe`]: a small PE/COFF reader used to check the cross-compiled driver binaries
//!   (machine, subsystem, imports, exports).
#![forbid(unsafe_code)]

pub mod pe;
pub mod replay;
