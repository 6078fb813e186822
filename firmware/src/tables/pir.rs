//! The `$PIR` PCI IRQ routing table (Microsoft "PCI IRQ Routing Table Specification"
//! 1.0): PIC-mode interrupt routing for OSes that neither use ACPI nor the MP table
//! (Linux with `acpi=off noapic`, Windows 9x). It names the PIIX3 as the interrupt router
//! and, per device, which router register (link 0x60–0x63 = PIRQA–D) each INTx# uses.

use super::TablesError;
use super::checksum::fill_checksum;
use super::platform::{PCI_LINK_IRQS, PIIX3_PIRQ_ROUTE_REG, PIIX3_SLOT, hardwired_irq, pirq_for};

const HEADER_LEN: usize = 32;
const SLOT_ENTRY_LEN: usize = 16;
const VERSION_1_0: u16 = 0x0100;
/// Intel 82371SB PIIX3 ISA bridge: the router OSes know how to program.
const ROUTER_VENDOR: u16 = 0x8086;
const ROUTER_DEVICE: u16 = 0x7000;

/// Builds the table for the devices in `slots` on bus 0 (each listed once, all four
/// INTx# pins routable). Place it 16-byte aligned in 0xF0000–0xFFFFF.
pub fn build_pir(slots: &[u8]) -> Result<Vec<u8>, TablesError> {
    if let Some(bad) = slots.iter().find(|&&s| s > 31) {
        return Err(TablesError::InvalidConfig(format!(
            "$PIR slot {bad} out of range"
        )));
    }
    let len = HEADER_LEN + SLOT_ENTRY_LEN * slots.len();
    let len16 = u16::try_from(len).map_err(|_| TablesError::TooLarge {
        what: "$PIR table",
        len,
        max: 0xFFFF,
    })?;
    let irq_bitmap = PCI_LINK_IRQS.iter().fold(0u16, |m, &irq| m | 1 << irq);

    let mut t = Vec::with_capacity(len);
    t.extend_from_slice(b"$PIR");
    t.extend_from_slice(&VERSION_1_0.to_le_bytes());
    t.extend_from_slice(&len16.to_le_bytes());
    t.extend_from_slice(&[0, PIIX3_SLOT << 3]); // router bus, devfn
    t.extend_from_slice(&0u16.to_le_bytes()); // no IRQs reserved exclusively for PCI
    t.extend_from_slice(&ROUTER_VENDOR.to_le_bytes());
    t.extend_from_slice(&ROUTER_DEVICE.to_le_bytes());
    t.extend_from_slice(&0u32.to_le_bytes()); // miniport data
    t.extend_from_slice(&[0; 11]); // reserved
    t.push(0); // checksum
    for &slot in slots {
        t.extend_from_slice(&[0, slot << 3]);
        for pin in 0..4 {
            if hardwired_irq(slot, pin).is_some() {
                // Not routed through a PIRQ: link value 0 = not connected to the router.
                t.extend_from_slice(&[0, 0, 0]);
                continue;
            }
            t.push(PIIX3_PIRQ_ROUTE_REG + pirq_for(slot, pin));
            t.extend_from_slice(&irq_bitmap.to_le_bytes());
        }
        // Physical slot number; 0 marks devices built into the board.
        t.extend_from_slice(&[if slot <= PIIX3_SLOT { 0 } else { slot }, 0]);
    }
    fill_checksum(&mut t, 0..len, 31);
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::checksum::sums_to_zero;

    #[test]
    fn pir_layout() {
        let t = build_pir(&[1, 2, 3]).unwrap();
        assert_eq!(t.len(), 32 + 3 * 16);
        assert!(sums_to_zero(&t));
        assert_eq!(&t[..4], b"$PIR");
        assert_eq!(u16::from_le_bytes([t[6], t[7]]) as usize, t.len());
        assert_eq!((t[8], t[9]), (0, 0x08));
        assert_eq!(&t[12..16], [0x86, 0x80, 0x00, 0x70]);
        // Slot 2: INTA → PIRQB (0x61), INTB → PIRQC, INTC → PIRQD, INTD → PIRQA.
        let e = &t[48..64];
        assert_eq!(e[1], 2 << 3);
        assert_eq!([e[2], e[5], e[8], e[11]], [0x61, 0x62, 0x63, 0x60]);
        assert_eq!(u16::from_le_bytes([e[3], e[4]]), 1 << 5 | 1 << 10 | 1 << 11);
        assert_eq!(e[14], 2);
        assert_eq!(t[32 + 14], 0, "PIIX3 is on the board");
        // Slot 1 INTA is the PM function's SCI, not a PIRQ; INTD (USB) is PIRQD.
        assert_eq!(&t[34..37], [0, 0, 0]);
        assert_eq!(t[32 + 11], 0x63);
        assert!(build_pir(&[32]).is_err());
    }
}
