//! ACPI tables for Aero's PC: RSDP (ACPI 2.0+, pointing at both an RSDT and an XSDT),
//! RSDT, XSDT, FADT, FACS, DSDT, MADT, HPET, MCFG (the ECAM window, when the machine has
//! one) and WAET (Windows' emulated-devices hints).
//!
//! Revisions: FADT revision 3 (the 244-byte ACPI 2.0 layout with X_ fields, which Windows
//! 7 and every Linux handle), DSDT revision 2 (64-bit AML integers), MADT revision 1,
//! FACS version 1, HPET revision 1.

mod dsdt;
mod facs;
mod fadt;
mod hpet;
pub mod loader;
mod madt;
mod mcfg;
mod rsdp;
pub(crate) mod sdt;
mod waet;

use super::TablesError;

/// How PCI INTx interrupts reach the IOAPIC once the OS runs in APIC mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PciIrqMode {
    /// As QEMU `pc`: the PIIX3 steers PIRQA–D onto ISA IRQs (one of
    /// [`PCI_LINK_IRQS`](super::platform::PCI_LINK_IRQS)), and the IOAPIC sees every ISA
    /// IRQ on the pin of the same number. `_PRT` uses the link devices LNKA–LNKD in both
    /// PIC and APIC mode, and the MADT declares the link IRQs level-triggered, active high.
    #[default]
    SharedIsaIrqs,
    /// PIRQA–D are additionally wired straight to IOAPIC pins 16–19 (level, active high).
    /// In APIC mode `_PRT` points at fixed link devices GSIA–GSID for those GSIs.
    DirectGsi,
}

/// A 64-bit PCI MMIO window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmioWindow64 {
    pub base: u64,
    pub size: u64,
}

impl MmioWindow64 {
    /// A window of `size` bytes starting at the first 1 GiB boundary at or above both
    /// 4 GiB and `ram_end` (the end of RAM remapped above 4 GiB).
    pub fn above_ram(ram_end: u64, size: u64) -> MmioWindow64 {
        const GIB: u64 = 1 << 30;
        let start = ram_end.max(4 * GIB);
        MmioWindow64 {
            base: start.div_ceil(GIB).saturating_mul(GIB),
            size,
        }
    }
}

/// A PCI Express ECAM window for segment 0 covering buses `0..=end_bus` (1 MiB per bus,
/// bus 0 at `base`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EcamWindow {
    pub base: u64,
    pub end_bus: u8,
}

impl EcamWindow {
    /// Size in bytes (1 MiB per bus).
    pub fn size(&self) -> u64 {
        (u64::from(self.end_bus) + 1) << 20
    }
}

impl Default for EcamWindow {
    fn default() -> EcamWindow {
        use super::platform::{PCI_ECAM_BASE, PCI_ECAM_BUSES};
        EcamWindow {
            base: u64::from(PCI_ECAM_BASE),
            end_bus: (PCI_ECAM_BUSES - 1) as u8,
        }
    }
}

/// What the ACPI tables describe that varies between machine configurations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcpiConfig {
    /// Number of CPUs, LAPIC IDs 0..cpu_count. 1–15 (the IOAPIC takes ID `cpu_count` and
    /// IOAPIC IDs are four bits wide).
    pub cpu_count: u8,
    /// Start of the 32-bit PCI MMIO window (the PCI hole); it ends at 0xFEBF_FFFF, below
    /// the IOAPIC. RAM below 4 GiB must end at or before this address.
    pub pci_mmio32_base: u32,
    /// 64-bit PCI MMIO window above RAM, if the BIOS places BARs there.
    pub pci_mmio64: Option<MmioWindow64>,
    /// The ECAM window (MCFG table, `PNP0C02` reservation, host bridge bus range), which
    /// must lie below 4 GiB outside the 32-bit PCI MMIO window.
    pub pci_ecam: Option<EcamWindow>,
    pub pci_irq_mode: PciIrqMode,
    /// Describe the HPET (table + `PNP0103` device).
    pub hpet: bool,
    /// Describe a floppy controller (`PNP0700`) on DMA channel 2.
    pub floppy: bool,
}

impl Default for AcpiConfig {
    fn default() -> AcpiConfig {
        AcpiConfig {
            cpu_count: 1,
            pci_mmio32_base: super::platform::PCI_MMIO32_BASE,
            pci_mmio64: Some(MmioWindow64::above_ram(0, 1 << 32)),
            pci_ecam: Some(EcamWindow::default()),
            pci_irq_mode: PciIrqMode::default(),
            hpet: true,
            floppy: false,
        }
    }
}

/// Highest address of the 32-bit PCI MMIO window (just below the IOAPIC).
pub const PCI_MMIO32_END: u32 = 0xFEBF_FFFF;

impl AcpiConfig {
    pub(crate) fn validate(&self) -> Result<(), TablesError> {
        let bad = |msg: String| Err(TablesError::InvalidConfig(msg));
        if !(1..=15).contains(&self.cpu_count) {
            return bad(format!("cpu_count {} outside 1..=15", self.cpu_count));
        }
        if self.pci_mmio32_base >= PCI_MMIO32_END || self.pci_mmio32_base < 0x1000_0000 {
            return bad(format!(
                "pci_mmio32_base {:#x} outside 0x10000000..0xFEC00000",
                self.pci_mmio32_base
            ));
        }
        if let Some(w) = self.pci_mmio64
            && (w.size == 0 || w.base < 1 << 32 || w.base.checked_add(w.size).is_none())
        {
            return bad(format!(
                "64-bit PCI window {:#x}+{:#x} invalid",
                w.base, w.size
            ));
        }
        if let Some(e) = self.pci_ecam {
            let end = e.base + e.size();
            let mmio32 = u64::from(self.pci_mmio32_base)..u64::from(PCI_MMIO32_END) + 1;
            if !e.base.is_multiple_of(1 << 20)
                || end > u64::from(PCI_MMIO32_END) + 1
                || (e.base < mmio32.end && end > mmio32.start)
            {
                return bad(format!(
                    "ECAM window {:#x}+{:#x} not MiB-aligned below the IOAPIC outside the \
                     PCI MMIO window",
                    e.base,
                    e.size()
                ));
            }
        }
        Ok(())
    }
}

/// Where one table sits in guest memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableLocation {
    pub signature: [u8; 4],
    pub address: u32,
    pub length: u32,
}

/// The output of [`build_acpi`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcpiTables {
    /// The 36-byte RSDP; the BIOS copies it to a 16-byte boundary in 0xE0000–0xFFFFF
    /// (or the first KiB of the EBDA).
    pub rsdp: [u8; 36],
    /// Every other table, to be copied to `table_base`. The E820 map must not report
    /// the blob as usable RAM: the FACS (first, 64 bytes after any alignment pad) must be
    /// ACPI NVS (type 4) because the OS keeps using it; the other tables may be ACPI
    /// reclaimable (type 3). Marking the whole blob NVS is also correct.
    pub blob: Vec<u8>,
    /// Each table's address and length inside the blob, in blob order.
    pub tables: Vec<TableLocation>,
    /// The `table_base` the blob was built for.
    pub base: u32,
}

impl AcpiTables {
    /// The bytes of the table with `signature` (`b"FACP"` for the FADT).
    pub fn find(&self, signature: &[u8; 4]) -> Option<&[u8]> {
        let loc = self.tables.iter().find(|t| &t.signature == signature)?;
        let start = loc.address.checked_sub(self.base)? as usize;
        self.blob.get(start..start + loc.length as usize)
    }
}

const TABLE_ALIGN: usize = 16;
const FACS_ALIGN: u64 = 64;

/// Builds all ACPI tables for a blob placed at `table_base` (any address; the FACS is
/// padded up to a 64-byte boundary inside the blob).
pub fn build_acpi(config: &AcpiConfig, table_base: u32) -> Result<AcpiTables, TablesError> {
    config.validate()?;
    let mut layout = Layout::new(table_base);

    let facs_addr = layout.place_aligned(b"FACS", facs::build(), FACS_ALIGN)?;
    let dsdt_addr = layout.place(b"DSDT", dsdt::build(config)?)?;
    let fadt_addr = layout.place(b"FACP", fadt::build(facs_addr, dsdt_addr))?;
    let madt_addr = layout.place(b"APIC", madt::build(config))?;
    let mut described = vec![fadt_addr, madt_addr];
    if config.hpet {
        described.push(layout.place(b"HPET", hpet::build())?);
    }
    if let Some(ecam) = config.pci_ecam {
        described.push(layout.place(b"MCFG", mcfg::build(ecam))?);
    }
    described.push(layout.place(b"WAET", waet::build())?);
    let rsdt_addr = layout.place(b"RSDT", rsdp::build_rsdt(&described))?;
    let xsdt_addr = layout.place(b"XSDT", rsdp::build_xsdt(&described))?;

    let rsdp = rsdp::build_rsdp(rsdt_addr, xsdt_addr);
    Ok(AcpiTables {
        rsdp,
        blob: layout.blob,
        tables: layout.tables,
        base: table_base,
    })
}

/// Appends tables to the blob, tracking their guest addresses.
struct Layout {
    base: u32,
    blob: Vec<u8>,
    tables: Vec<TableLocation>,
}

impl Layout {
    fn new(base: u32) -> Layout {
        Layout {
            base,
            blob: Vec::new(),
            tables: Vec::new(),
        }
    }

    fn place(&mut self, signature: &[u8; 4], table: Vec<u8>) -> Result<u32, TablesError> {
        self.place_aligned(signature, table, TABLE_ALIGN as u64)
    }

    fn place_aligned(
        &mut self,
        signature: &[u8; 4],
        table: Vec<u8>,
        align: u64,
    ) -> Result<u32, TablesError> {
        let here = u64::from(self.base) + self.blob.len() as u64;
        let addr = here.div_ceil(align) * align;
        let end = addr + table.len() as u64;
        if end > 1 << 32 {
            return Err(TablesError::AddressOverflow {
                base: u64::from(self.base),
                size: end - u64::from(self.base),
            });
        }
        self.blob.resize((addr - u64::from(self.base)) as usize, 0);
        self.blob.extend_from_slice(&table);
        let (address, length) = (addr as u32, table.len() as u32);
        self.tables.push(TableLocation {
            signature: *signature,
            address,
            length,
        });
        Ok(address)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::checksum::sums_to_zero;

    fn u32_at(t: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(t[at..at + 4].try_into().unwrap())
    }
    fn u64_at(t: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(t[at..at + 8].try_into().unwrap())
    }

    #[test]
    fn every_table_is_consistent_and_linked() {
        let base = 0x1FFF_0008; // deliberately not 64-byte aligned
        let t = build_acpi(&AcpiConfig::default(), base).unwrap();
        let sigs: Vec<&[u8; 4]> = t.tables.iter().map(|l| &l.signature).collect();
        assert_eq!(
            sigs,
            [
                b"FACS", b"DSDT", b"FACP", b"APIC", b"HPET", b"MCFG", b"WAET", b"RSDT", b"XSDT"
            ]
        );
        for loc in &t.tables {
            let bytes = t.find(&loc.signature).unwrap();
            assert_eq!(&bytes[..4], &loc.signature);
            assert_eq!(u32_at(bytes, 4), loc.length, "{:?}", loc.signature);
            if &loc.signature != b"FACS" {
                assert!(sums_to_zero(bytes), "{:?} checksum", loc.signature);
                assert_eq!(loc.address % 16, 0);
            }
        }
        let addr = |sig: &[u8; 4]| {
            t.tables
                .iter()
                .find(|l| &l.signature == sig)
                .unwrap()
                .address
        };
        assert_eq!(addr(b"FACS") % 64, 0);
        assert_eq!(t.blob.len() as u32, {
            let last = t.tables.last().unwrap();
            last.address + last.length - base
        });

        let fadt = t.find(b"FACP").unwrap();
        assert_eq!(u32_at(fadt, 36), addr(b"FACS"));
        assert_eq!(u32_at(fadt, 40), addr(b"DSDT"));
        assert_eq!(u64_at(fadt, 132), u64::from(addr(b"FACS")));
        assert_eq!(u64_at(fadt, 140), u64::from(addr(b"DSDT")));

        let described = [
            addr(b"FACP"),
            addr(b"APIC"),
            addr(b"HPET"),
            addr(b"MCFG"),
            addr(b"WAET"),
        ];
        let rsdt = t.find(b"RSDT").unwrap();
        let xsdt = t.find(b"XSDT").unwrap();
        for (i, &a) in described.iter().enumerate() {
            assert_eq!(u32_at(rsdt, 36 + 4 * i), a);
            assert_eq!(u64_at(xsdt, 36 + 8 * i), u64::from(a));
        }
        assert_eq!(rsdt.len(), 36 + 4 * described.len());

        assert!(sums_to_zero(&t.rsdp[..20]) && sums_to_zero(&t.rsdp));
        assert_eq!(u32_at(&t.rsdp, 16), addr(b"RSDT"));
        assert_eq!(u64_at(&t.rsdp, 24), u64::from(addr(b"XSDT")));
    }

    #[test]
    fn builds_are_deterministic_and_optional_tables_drop_out() {
        let config = AcpiConfig {
            hpet: false,
            pci_ecam: None,
            ..AcpiConfig::default()
        };
        let a = build_acpi(&config, 0x7FE_0000).unwrap();
        assert_eq!(a, build_acpi(&config, 0x7FE_0000).unwrap());
        assert!(a.find(b"HPET").is_none());
        assert!(a.find(b"MCFG").is_none());
        assert_eq!(a.find(b"RSDT").unwrap().len(), 36 + 12);
        assert_eq!(a.find(b"XSDT").unwrap().len(), 36 + 24);
        let dsdt = a.find(b"DSDT").unwrap();
        assert!(!dsdt.windows(4).any(|w| w == b"HPET"));
    }

    #[test]
    fn invalid_configs_are_rejected() {
        for config in [
            AcpiConfig {
                cpu_count: 0,
                ..AcpiConfig::default()
            },
            AcpiConfig {
                cpu_count: 16,
                ..AcpiConfig::default()
            },
            AcpiConfig {
                pci_mmio32_base: 0xFEC0_0000,
                ..AcpiConfig::default()
            },
            AcpiConfig {
                pci_mmio64: Some(MmioWindow64 {
                    base: 0x1000,
                    size: 1,
                }),
                ..AcpiConfig::default()
            },
            // ECAM inside the BAR window, unaligned, or over the IOAPIC.
            AcpiConfig {
                pci_mmio32_base: 0xE000_0000,
                ..AcpiConfig::default()
            },
            AcpiConfig {
                pci_ecam: Some(EcamWindow {
                    base: 0xD008_0000,
                    end_bus: 0,
                }),
                ..AcpiConfig::default()
            },
            AcpiConfig {
                pci_ecam: Some(EcamWindow {
                    base: 0xFEB0_0000,
                    end_bus: 1,
                }),
                ..AcpiConfig::default()
            },
        ] {
            assert!(
                matches!(
                    build_acpi(&config, 0x10_0000),
                    Err(TablesError::InvalidConfig(_))
                ),
                "{config:?}"
            );
        }
        assert!(matches!(
            build_acpi(&AcpiConfig::default(), 0xFFFF_F000),
            Err(TablesError::AddressOverflow { .. })
        ));
    }

    #[test]
    fn window_above_ram_is_gib_aligned() {
        assert_eq!(MmioWindow64::above_ram(0, 1).base, 1 << 32);
        assert_eq!(MmioWindow64::above_ram((5 << 30) + 1, 1).base, 6 << 30);
    }
}
