//! Errors of the system BIOS. Guest mistakes inside a service are reported to the guest
//! (AH status + CF), never as `Err`; `Err` means the BIOS itself cannot continue.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum FirmwareError {
    #[error("ROM assembly failed: {0}")]
    Assembly(String),
    #[error("ROM layout: {0}")]
    Layout(String),
    #[error("guest memory {addr:#x}+{len:#x} is outside guest RAM")]
    GuestMemory { addr: u64, len: u64 },
    #[error("invalid BIOS configuration: {0}")]
    Config(String),
    #[error(transparent)]
    LinuxBoot(#[from] super::linux::LinuxBootError),
    #[error("BIOS trap from an unsupported CPU mode (CR0.PE set outside V86 mode)")]
    UnsupportedMode,
}

/// Failure of one disk transfer as reported by the machine.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
pub enum DiskIoError {
    #[error("no such drive")]
    NoDrive,
    #[error("sector out of range")]
    OutOfRange,
    #[error("medium is write protected")]
    WriteProtected,
    #[error("host I/O error")]
    Io,
}
