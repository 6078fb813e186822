//! MCFG: where PCI Express enhanced configuration space (ECAM) is (PCI Firmware
//! Specification 3.2, §4.1.2). One allocation entry: segment 0, buses 0..=end_bus.

use super::EcamWindow;
use super::sdt;

const REVISION: u8 = 1;

pub fn build(ecam: EcamWindow) -> Vec<u8> {
    let mut t = sdt::begin(b"MCFG", REVISION);
    t.extend_from_slice(&[0; 8]); // reserved
    t.extend_from_slice(&ecam.base.to_le_bytes());
    t.extend_from_slice(&0u16.to_le_bytes()); // PCI segment group
    t.push(0); // start bus
    t.push(ecam.end_bus);
    t.extend_from_slice(&[0; 4]); // reserved
    sdt::finish(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::checksum::sums_to_zero;

    #[test]
    fn one_allocation_entry_for_segment_zero() {
        let t = build(EcamWindow {
            base: 0xE000_0000,
            end_bus: 0xFF,
        });
        assert_eq!(t.len(), 36 + 8 + 16);
        assert_eq!(&t[..4], b"MCFG");
        assert_eq!(u32::from_le_bytes(t[4..8].try_into().unwrap()), 60);
        assert!(sums_to_zero(&t));
        assert_eq!(&t[36..44], &[0; 8]);
        assert_eq!(
            u64::from_le_bytes(t[44..52].try_into().unwrap()),
            0xE000_0000
        );
        assert_eq!(u16::from_le_bytes(t[52..54].try_into().unwrap()), 0);
        assert_eq!((t[54], t[55]), (0, 0xFF));
        assert_eq!(&t[56..60], &[0; 4]);
        let one_bus = build(EcamWindow {
            base: 0xB000_0000,
            end_bus: 0,
        });
        assert_eq!((one_bus[54], one_bus[55]), (0, 0));
        assert!(sums_to_zero(&one_bus));
    }
}
