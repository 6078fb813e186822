//! Firmware tables that describe Aero's PC to the guest: ACPI (RSDP, RSDT, XSDT, FADT,
//! FACS, DSDT, MADT, HPET, WAET), SMBIOS, the Intel MP table and the `$PIR` routing table.
//!
//! Every builder is a pure function of its config: the same config gives the same bytes.
//! The BIOS decides where the blobs go and copies them into guest memory during POST.
//! Platform facts that are not configurable (port numbers, MMIO bases, IRQ wiring) live
//! in [`platform`] so the chipset models and the tables can be checked against one list.
//!
//! | builder | output | placement |
//! |---|---|---|
//! | [`build_acpi`] | 36-byte RSDP + one blob (FACS first, 64-byte aligned) | RSDP 16-aligned in 0xE0000–0xFFFFF; blob anywhere below 4 GiB, E820 ACPI (NVS for the FACS) |
//! | [`build_smbios`] | 31-byte `_SM_` entry point + structure table | entry 16-aligned in 0xF0000–0xFFFFF; table at `SmbiosConfig::tables_address` |
//! | [`build_mptable`] | floating pointer + configuration table | 16-aligned in the EBDA's first KiB, the last KiB of base memory, or 0xF0000–0xFFFFF |
//! | [`build_pir`] | `$PIR` table | 16-aligned in 0xF0000–0xFFFFF |
//!
//! PCI interrupt routing (see [`PciIrqMode`]): INTx of slot `s`, pin `p` drives PIRQ
//! [`platform::pirq_for`]`(s, p)`; in PIC mode the PIIX3 route registers pick the ISA IRQ
//! (one of [`platform::PCI_LINK_IRQS`]), in APIC mode the OS either keeps using those ISA
//! IRQs on the same IOAPIC pins (`SharedIsaIrqs`, QEMU `pc` style) or uses GSI 16–19
//! (`DirectGsi`). The machine may drive both paths at once; then either mode is truthful.
//!
//! Validation beyond unit tests: `tool_tests` disassembles and recompiles the tables
//! with `iasl`, executes the link methods with `acpiexec` and decodes SMBIOS with
//! `dmidecode`; `qemu_linux_test` (ignored by default) boots Linux on QEMU's i440FX with
//! these ACPI tables.

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
