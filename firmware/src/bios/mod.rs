//! The system BIOS.
pub mod error;
pub mod host;
pub mod mem;
pub mod rom;
pub mod trap;
