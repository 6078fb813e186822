//! HPET description table (IA-PC HPET specification 1.0a, §3.2.4).

use super::sdt::{self, Gas, GasAccess, GasSpace};
use crate::tables::platform::*;

const REVISION: u8 = 1;
/// Minimum comparator period in periodic mode without lost interrupts, in counter ticks.
const MIN_PERIODIC_TICKS: u16 = 0x80;

/// The low 32 bits of the HPET's General Capabilities register, which the table repeats:
/// revision 1, last timer index, 64-bit counter, legacy replacement capable, vendor.
pub fn event_timer_block_id() -> u32 {
    let rev_id = 1u32;
    let last_timer = u32::from(HPET_TIMERS - 1) << 8;
    let counter_64bit = 1 << 13;
    let legacy_replacement = 1 << 15;
    rev_id | last_timer | counter_64bit | legacy_replacement | u32::from(HPET_VENDOR_ID) << 16
}

pub fn build() -> Vec<u8> {
    let mut t = sdt::begin(b"HPET", REVISION);
    t.extend_from_slice(&event_timer_block_id().to_le_bytes());
    Gas {
        space: GasSpace::SystemMemory,
        bit_width: 64,
        bit_offset: 0,
        access_size: GasAccess::Undefined,
        address: u64::from(HPET_BASE),
    }
    .write_to(&mut t);
    t.push(0); // HPET sequence number
    t.extend_from_slice(&MIN_PERIODIC_TICKS.to_le_bytes());
    t.push(0); // page protection: none promised
    sdt::finish(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::checksum::sums_to_zero;

    #[test]
    fn hpet_table_layout() {
        let t = build();
        assert_eq!(t.len(), 56);
        assert!(sums_to_zero(&t));
        assert_eq!(
            u32::from_le_bytes(t[36..40].try_into().unwrap()),
            0x8086_A201
        );
        assert_eq!(t[40], 0); // system memory
        assert_eq!(
            u64::from_le_bytes(t[44..52].try_into().unwrap()),
            0xFED0_0000
        );
    }
}
