//! Host-side support for `guest-tools/` (the Windows 7 AeroGPU drivers):
//!
//! - [`replay`]: replays a trace written by the drivers' portable C code (built natively
//!   for tests) into the Rust AeroGPU device, so the guest side is checked against the
//!   real device model;
//! - [`pe`]: a small PE/COFF reader used to check the cross-compiled driver binaries
//!   (machine, subsystem, imports, exports);
//! - [`d3d9_host`]: the device end of the test-only D3D9 runtime (`tests/d3d9`), live
//!   over a loopback socket;
//! - [`package`]: builds the drivers (guest-tools/build.sh) and writes the guest tools ISO
//!   (what `aero guest-tools build` calls: [`package::build_iso`]).
#![forbid(unsafe_code)]

pub mod d3d9_host;
pub mod package;
pub mod pe;
pub mod replay;
