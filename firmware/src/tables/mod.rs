//! Firmware tables that describe Aero's PC to the guest: ACPI (RSDP, RSDT, XSDT, FADT,
//! FACS, DSDT, MADT, HPET), SMBIOS, the Intel MP table and the `$PIR` routing table.
//!
//! Every builder is a pure function of its config: the same config gives the same bytes.
//! The BIOS decides where the blobs go and copies them into guest memory during POST.
//! Platform facts that are not configurable (port numbers, MMIO bases, IRQ wiring) live
//! in [`platform`] so the chipset models and the tables can be checked against one list.

pub mod acpi;
pub mod aml;
pub mod checksum;
pub mod mptable;
pub mod pir;
pub mod platform;
pub mod smbios;

pub use acpi::{AcpiConfig, AcpiTables, PciIrqMode, TableLocation, build_acpi};
pub use mptable::{MpConfig, PciIntxSource, build_mptable};
pub use pir::build_pir;
pub use smbios::{SmbiosConfig, SmbiosTables, build_smbios};

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum TablesError {
    #[error("AML encoding failed: {0}")]
    Aml(#[from] aml::AmlError),
    #[error("invalid table configuration: {0}")]
    InvalidConfig(String),
    #[error("tables do not fit below 4 GiB at base {base:#x} (size {size:#x})")]
    AddressOverflow { base: u64, size: u64 },
    #[error("{what} is {len} bytes; the format allows at most {max}")]
    TooLarge {
        what: &'static str,
        len: usize,
        max: usize,
    },
}

#[cfg(test)]
mod qemu_linux_test;
#[cfg(test)]
mod tool_tests;
