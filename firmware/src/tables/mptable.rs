//! Intel MultiProcessor Specification 1.4 tables: the MP floating pointer followed by the
//! MP configuration table (processors, buses, IOAPIC, I/O and local interrupt entries).
//! Old guests (and Linux with `acpi=off`) find the interrupt routing here.

use super::TablesError;
use super::acpi::PciIrqMode;
use super::checksum::fill_checksum;
use super::platform::*;

/// A PCI function on bus 0 whose Interrupt Pin register is non-zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PciIntxSource {
    pub slot: u8,
    /// 0 = INTA … 3 = INTD (Interrupt Pin register minus one).
    pub pin: u8,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MpConfig {
    pub cpu_count: u8,
    /// CPUID leaf 1 EAX and EDX, copied into the processor entries.
    pub cpuid_signature: u32,
    pub cpuid_features_edx: u32,
    pub pci_irq_mode: PciIrqMode,
    /// The ISA IRQ the BIOS wrote into each PIIX3 route register (PIRQA–D), None when
    /// disabled. Only used in `SharedIsaIrqs` mode.
    pub pirq_routes: [Option<u8>; 4],
    /// Interrupt-using PCI functions found during enumeration.
    pub pci_devices: Vec<PciIntxSource>,
}

impl Default for MpConfig {
    fn default() -> MpConfig {
        MpConfig {
            cpu_count: 1,
            cpuid_signature: 0,
            cpuid_features_edx: 0,
            pci_irq_mode: PciIrqMode::default(),
            pirq_routes: [None; 4],
            pci_devices: Vec::new(),
        }
    }
}

const FLOATING_LEN: usize = 16;
const HEADER_LEN: usize = 44;
const SPEC_REV_1_4: u8 = 4;

const ENTRY_PROCESSOR: u8 = 0;
const ENTRY_BUS: u8 = 1;
const ENTRY_IOAPIC: u8 = 2;
const ENTRY_IO_INTERRUPT: u8 = 3;
const ENTRY_LOCAL_INTERRUPT: u8 = 4;

const INT_VECTORED: u8 = 0;
const INT_NMI: u8 = 1;
const INT_EXTINT: u8 = 3;

const FLAGS_CONFORMING: u16 = 0;
/// Polarity active high (bits 1:0 = 01), level triggered (bits 3:2 = 11).
const FLAGS_LEVEL_HIGH: u16 = 0x0D;

const BUS_PCI: u8 = 0;
const BUS_ISA: u8 = 1;
const ALL_LAPICS: u8 = 0xFF;

/// Builds the floating pointer (at `base`, which must be 16-byte aligned) immediately
/// followed by the configuration table.
pub fn build_mptable(config: &MpConfig, base: u32) -> Result<Vec<u8>, TablesError> {
    if !base.is_multiple_of(16) {
        return Err(TablesError::InvalidConfig(format!(
            "MP floating pointer base {base:#x} not 16-byte aligned"
        )));
    }
    if !(1..=15).contains(&config.cpu_count) {
        return Err(TablesError::InvalidConfig(format!(
            "cpu_count {} outside 1..=15",
            config.cpu_count
        )));
    }
    if let Some(bad) = config.pci_devices.iter().find(|d| d.slot > 31 || d.pin > 3) {
        return Err(TablesError::InvalidConfig(format!(
            "PCI INTx source {bad:?} out of range"
        )));
    }
    let (entries, count) = entries(config);
    let table_len = HEADER_LEN + entries.len();
    let table_len16 = u16::try_from(table_len).map_err(|_| TablesError::TooLarge {
        what: "MP configuration table",
        len: table_len,
        max: 0xFFFF,
    })?;
    let table_addr = base
        .checked_add(FLOATING_LEN as u32)
        .ok_or(TablesError::AddressOverflow {
            base: base.into(),
            size: table_len as u64,
        })?;

    let mut out = Vec::with_capacity(FLOATING_LEN + table_len);
    out.extend_from_slice(b"_MP_");
    out.extend_from_slice(&table_addr.to_le_bytes());
    out.push(1); // length in 16-byte units
    out.push(SPEC_REV_1_4);
    out.push(0); // checksum
    // Feature bytes: 0 = configuration table present; IMCRP clear = virtual wire mode.
    out.extend_from_slice(&[0; 5]);
    fill_checksum(&mut out, 0..FLOATING_LEN, 10);

    let t = out.len();
    out.extend_from_slice(b"PCMP");
    out.extend_from_slice(&table_len16.to_le_bytes());
    out.push(SPEC_REV_1_4);
    out.push(0); // checksum
    out.extend_from_slice(b"AERO    ");
    out.extend_from_slice(b"AERO PC     ");
    out.extend_from_slice(&0u32.to_le_bytes()); // OEM table pointer
    out.extend_from_slice(&0u16.to_le_bytes()); // OEM table size
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&LAPIC_BASE.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes()); // extended table length
    out.extend_from_slice(&[0, 0]); // extended checksum, reserved
    out.extend_from_slice(&entries);
    let end = out.len();
    fill_checksum(&mut out, t..end, t + 7);
    Ok(out)
}

fn io_interrupt(
    out: &mut Vec<u8>,
    kind: u8,
    flags: u16,
    bus: u8,
    bus_irq: u8,
    ioapic: u8,
    pin: u8,
) {
    out.extend_from_slice(&[ENTRY_IO_INTERRUPT, kind]);
    out.extend_from_slice(&flags.to_le_bytes());
    out.extend_from_slice(&[bus, bus_irq, ioapic, pin]);
}

/// The entries in the order the specification requires (sorted by type), and their count.
fn entries(config: &MpConfig) -> (Vec<u8>, u16) {
    let mut out = Vec::new();
    let mut count = 0u16;
    for cpu in 0..config.cpu_count {
        let flags = 1 | if cpu == 0 { 2 } else { 0 }; // enabled, bootstrap processor
        out.extend_from_slice(&[ENTRY_PROCESSOR, cpu, LAPIC_VERSION, flags]);
        out.extend_from_slice(&config.cpuid_signature.to_le_bytes());
        out.extend_from_slice(&config.cpuid_features_edx.to_le_bytes());
        out.extend_from_slice(&[0; 8]);
        count += 1;
    }
    for (id, name) in [(BUS_PCI, b"PCI   "), (BUS_ISA, b"ISA   ")] {
        out.extend_from_slice(&[ENTRY_BUS, id]);
        out.extend_from_slice(name);
        count += 1;
    }
    let ioapic_id = config.cpu_count;
    out.extend_from_slice(&[ENTRY_IOAPIC, ioapic_id, IOAPIC_VERSION, 1]);
    out.extend_from_slice(&IOAPIC_BASE.to_le_bytes());
    count += 1;

    // ISA IRQs used by PCI links are described by the PCI entries instead.
    let pci_isa_irqs: Vec<u8> = match config.pci_irq_mode {
        PciIrqMode::SharedIsaIrqs => config.pirq_routes.iter().flatten().copied().collect(),
        PciIrqMode::DirectGsi => Vec::new(),
    };
    // No ExtINT entry on IOAPIC pin 0: the 8259 reaches the CPU only through LINT0
    // (virtual wire mode), which the local interrupt entries below describe.
    for irq in 0..16u8 {
        if irq == IRQ_CASCADE || pci_isa_irqs.contains(&irq) {
            continue;
        }
        let (pin, flags) = match irq {
            IRQ_PIT => (PIT_GSI as u8, FLAGS_CONFORMING),
            SCI_IRQ => (irq, FLAGS_LEVEL_HIGH),
            _ => (irq, FLAGS_CONFORMING),
        };
        io_interrupt(&mut out, INT_VECTORED, flags, BUS_ISA, irq, ioapic_id, pin);
        count += 1;
    }
    for dev in &config.pci_devices {
        let pirq = pirq_for(dev.slot, dev.pin);
        let pin = match (hardwired_irq(dev.slot, dev.pin), config.pci_irq_mode) {
            (Some(irq), _) => Some(irq),
            (None, PciIrqMode::SharedIsaIrqs) => {
                config.pirq_routes.get(usize::from(pirq)).copied().flatten()
            }
            (None, PciIrqMode::DirectGsi) => Some((PIRQ_GSI_BASE + u32::from(pirq)) as u8),
        };
        if let Some(pin) = pin {
            let source = (dev.slot << 2) | dev.pin;
            io_interrupt(
                &mut out,
                INT_VECTORED,
                FLAGS_LEVEL_HIGH,
                BUS_PCI,
                source,
                ioapic_id,
                pin,
            );
            count += 1;
        }
    }

    for (kind, lint) in [(INT_EXTINT, 0u8), (INT_NMI, 1)] {
        out.extend_from_slice(&[ENTRY_LOCAL_INTERRUPT, kind]);
        out.extend_from_slice(&FLAGS_CONFORMING.to_le_bytes());
        out.extend_from_slice(&[BUS_ISA, 0, ALL_LAPICS, lint]);
        count += 1;
    }
    (out, count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::checksum::sums_to_zero;

    fn io_entries(table: &[u8]) -> Vec<[u8; 8]> {
        let mut at = FLOATING_LEN + HEADER_LEN;
        let mut found = Vec::new();
        while at < table.len() {
            let len = if table[at] == ENTRY_PROCESSOR { 20 } else { 8 };
            if table[at] == ENTRY_IO_INTERRUPT {
                found.push(table[at..at + 8].try_into().unwrap());
            }
            at += len;
        }
        assert_eq!(at, table.len());
        found
    }

    #[test]
    fn floating_pointer_and_header_are_consistent() {
        let config = MpConfig {
            pirq_routes: [Some(10), Some(10), Some(11), Some(11)],
            pci_devices: vec![
                PciIntxSource { slot: 1, pin: 0 },
                PciIntxSource { slot: 1, pin: 3 },
                PciIntxSource { slot: 3, pin: 0 },
            ],
            ..MpConfig::default()
        };
        let t = build_mptable(&config, 0xF5A0).unwrap();
        assert_eq!(&t[..4], b"_MP_");
        assert_eq!(u32::from_le_bytes(t[4..8].try_into().unwrap()), 0xF5B0);
        assert!(sums_to_zero(&t[..16]));
        assert_eq!(&t[16..20], b"PCMP");
        let len = u16::from_le_bytes(t[20..22].try_into().unwrap()) as usize;
        assert_eq!(len, t.len() - 16);
        assert!(sums_to_zero(&t[16..]));
        let count = u16::from_le_bytes(t[50..52].try_into().unwrap());
        // 1 cpu + 2 buses + 1 ioapic + 13 ISA (no 2, 10, 11) + 3 PCI + 2 local.
        assert_eq!(count, 1 + 2 + 1 + 13 + 3 + 2);
        let io = io_entries(&t);
        // The PM function's INTA is the SCI on pin 9.
        assert!(io.contains(&[3, 0, 0x0D, 0, 0, 1 << 2, 1, 9]));
        // PIIX3 INTD (slot 1 pin 3) → PIRQD → IRQ 11, level/high, IOAPIC ID 1.
        assert!(io.contains(&[3, 0, 0x0D, 0, 0, (1 << 2) | 3, 1, 11]));
        // Slot 3 INTA → PIRQC → IRQ 11.
        assert!(io.contains(&[3, 0, 0x0D, 0, 0, 3 << 2, 1, 11]));
        // PIT IRQ0 → INTIN2; SCI level/high on 9; no ISA entry for IRQ 10.
        assert!(io.contains(&[3, 0, 0, 0, 1, 0, 1, 2]));
        assert!(io.contains(&[3, 0, 0x0D, 0, 1, 9, 1, 9]));
        assert!(!io.iter().any(|e| e[4] == BUS_ISA && e[5] == 10));
    }

    #[test]
    fn direct_gsi_routes_pci_to_pins_16_and_up() {
        let config = MpConfig {
            cpu_count: 2,
            pci_irq_mode: PciIrqMode::DirectGsi,
            pci_devices: vec![PciIntxSource { slot: 2, pin: 0 }],
            ..MpConfig::default()
        };
        let t = build_mptable(&config, 0x9FC00).unwrap();
        let io = io_entries(&t);
        assert!(io.contains(&[3, 0, 0x0D, 0, 0, 2 << 2, 2, 17]));
        assert!(io.iter().any(|e| e[4] == BUS_ISA && e[5] == 10));
    }

    #[test]
    fn invalid_configs_are_errors() {
        assert!(build_mptable(&MpConfig::default(), 0xF5A8).is_err());
        let bad = MpConfig {
            pci_devices: vec![PciIntxSource { slot: 32, pin: 0 }],
            ..MpConfig::default()
        };
        assert!(build_mptable(&bad, 0xF5A0).is_err());
        assert!(
            build_mptable(
                &MpConfig {
                    cpu_count: 0,
                    ..MpConfig::default()
                },
                0xF5A0
            )
            .is_err()
        );
    }
}
