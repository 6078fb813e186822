//! Display devices: the legacy VGA/VBE adapter (boot, text mode, Bochs DISPI) and,
//! later, the AeroGPU paravirtual device.
#![forbid(unsafe_code)]

pub mod aerogpu;
pub mod cp437;
pub mod font;
pub mod frame;
pub mod vga;

pub use frame::Frame;
pub use vga::Vga;
