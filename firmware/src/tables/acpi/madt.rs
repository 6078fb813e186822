//! Multiple APIC Description Table (ACPI 6.x §5.2.12): one LAPIC per CPU, the IOAPIC,
//! interrupt source overrides for the ISA lines that are not edge/high on their own pin,
//! and LINT1 as NMI.

use super::{AcpiConfig, PciIrqMode, sdt};
use crate::tables::platform::*;

const REVISION: u8 = 1;
const FLAG_PCAT_COMPAT: u32 = 1;

const TYPE_LOCAL_APIC: u8 = 0;
const TYPE_IO_APIC: u8 = 1;
const TYPE_SOURCE_OVERRIDE: u8 = 2;
const TYPE_LAPIC_NMI: u8 = 4;

/// MPS INTI flags: polarity bits 1:0, trigger mode bits 3:2.
pub const INTI_CONFORMING: u16 = 0;
pub const INTI_ACTIVE_HIGH: u16 = 0b01;
pub const INTI_LEVEL: u16 = 0b11 << 2;

/// Every processor (for the NMI entry).
const ALL_PROCESSORS: u8 = 0xFF;

/// ISA IRQs whose IOAPIC routing differs from "same pin, edge, active high":
/// `(isa_irq, gsi, flags)`.
pub fn source_overrides(mode: PciIrqMode) -> Vec<(u8, u32, u16)> {
    let level_high = INTI_LEVEL | INTI_ACTIVE_HIGH;
    let mut list = vec![
        (IRQ_PIT, PIT_GSI, INTI_CONFORMING),
        (SCI_IRQ, u32::from(SCI_IRQ), level_high),
    ];
    if mode == PciIrqMode::SharedIsaIrqs {
        list.extend(
            PCI_LINK_IRQS
                .iter()
                .map(|&irq| (irq, u32::from(irq), level_high)),
        );
    }
    list.sort_unstable();
    list
}

pub fn build(config: &AcpiConfig) -> Vec<u8> {
    let mut t = sdt::begin(b"APIC", REVISION);
    t.extend_from_slice(&LAPIC_BASE.to_le_bytes());
    t.extend_from_slice(&FLAG_PCAT_COMPAT.to_le_bytes());
    for cpu in 0..config.cpu_count {
        // ACPI processor UID = the Processor() ID in the DSDT = the LAPIC ID.
        t.extend_from_slice(&[TYPE_LOCAL_APIC, 8, cpu, cpu]);
        t.extend_from_slice(&1u32.to_le_bytes()); // enabled
    }
    t.extend_from_slice(&[TYPE_IO_APIC, 12, config.cpu_count, 0]);
    t.extend_from_slice(&IOAPIC_BASE.to_le_bytes());
    t.extend_from_slice(&0u32.to_le_bytes()); // GSI base
    for (irq, gsi, flags) in source_overrides(config.pci_irq_mode) {
        t.extend_from_slice(&[TYPE_SOURCE_OVERRIDE, 10, 0 /* ISA bus */, irq]);
        t.extend_from_slice(&gsi.to_le_bytes());
        t.extend_from_slice(&flags.to_le_bytes());
    }
    t.extend_from_slice(&[TYPE_LAPIC_NMI, 6, ALL_PROCESSORS]);
    t.extend_from_slice(&INTI_CONFORMING.to_le_bytes());
    t.push(1); // LINT1
    sdt::finish(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::checksum::sums_to_zero;

    /// Walks the MADT's entries as (type, bytes).
    fn entries(t: &[u8]) -> Vec<(u8, Vec<u8>)> {
        let mut out = Vec::new();
        let mut at = 44;
        while at + 2 <= t.len() {
            let len = t[at + 1] as usize;
            assert!(len >= 2 && at + len <= t.len(), "bad entry length at {at}");
            out.push((t[at], t[at..at + len].to_vec()));
            at += len;
        }
        assert_eq!(at, t.len());
        out
    }

    #[test]
    fn single_cpu_madt() {
        let t = build(&AcpiConfig::default());
        assert!(sums_to_zero(&t));
        assert_eq!(
            u32::from_le_bytes(t[4..8].try_into().unwrap()) as usize,
            t.len()
        );
        assert_eq!(
            u32::from_le_bytes(t[36..40].try_into().unwrap()),
            0xFEE0_0000
        );
        assert_eq!(u32::from_le_bytes(t[40..44].try_into().unwrap()), 1);
        let e = entries(&t);
        let lapics: Vec<_> = e.iter().filter(|(ty, _)| *ty == 0).collect();
        assert_eq!(lapics.len(), 1);
        assert_eq!(lapics[0].1, [0, 8, 0, 0, 1, 0, 0, 0]);
        let ioapic = e.iter().find(|(ty, _)| *ty == 1).unwrap();
        assert_eq!(ioapic.1, [1, 12, 1, 0, 0, 0, 0xC0, 0xFE, 0, 0, 0, 0]);
        let overrides: Vec<_> = e
            .iter()
            .filter(|(ty, _)| *ty == 2)
            .map(|(_, b)| b.clone())
            .collect();
        assert!(overrides.contains(&vec![2, 10, 0, 0, 2, 0, 0, 0, 0, 0]));
        assert!(overrides.contains(&vec![2, 10, 0, 9, 9, 0, 0, 0, 0x0D, 0]));
        assert!(overrides.contains(&vec![2, 10, 0, 11, 11, 0, 0, 0, 0x0D, 0]));
        assert_eq!(overrides.len(), 5);
        let nmi = e.iter().find(|(ty, _)| *ty == 4).unwrap();
        assert_eq!(nmi.1, [4, 6, 0xFF, 0, 0, 1]);
    }

    #[test]
    fn smp_and_direct_gsi() {
        let config = AcpiConfig {
            cpu_count: 4,
            pci_irq_mode: PciIrqMode::DirectGsi,
            ..AcpiConfig::default()
        };
        let e = entries(&build(&config));
        let ids: Vec<u8> = e
            .iter()
            .filter(|(ty, _)| *ty == 0)
            .map(|(_, b)| b[3])
            .collect();
        assert_eq!(ids, [0, 1, 2, 3]);
        assert_eq!(e.iter().find(|(ty, _)| *ty == 1).unwrap().1[2], 4);
        assert_eq!(e.iter().filter(|(ty, _)| *ty == 2).count(), 2);
    }
}
