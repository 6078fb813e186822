//! Windows ACPI Emulated Devices Table (Microsoft, "WAET"): tells Windows that the ACPI
//! PM timer is read-safe, so it reads the timer once per query instead of three times
//! to filter glitches that real hardware had — a large saving when every port read is
//! emulated. The RTC_GOOD flag stays clear: our RTC needs register C to be read to
//! re-arm its interrupt, like a real MC146818.

use super::sdt;

const REVISION: u8 = 1;
const ACPI_PM_TIMER_GOOD: u32 = 1 << 1;

pub fn build() -> Vec<u8> {
    let mut t = sdt::begin(b"WAET", REVISION);
    t.extend_from_slice(&ACPI_PM_TIMER_GOOD.to_le_bytes());
    sdt::finish(t)
}

#[cfg(test)]
mod tests {
    use crate::tables::checksum::sums_to_zero;

    #[test]
    fn waet_layout() {
        let t = super::build();
        assert_eq!(t.len(), 40);
        assert!(sums_to_zero(&t));
        assert_eq!(&t[36..40], [0x02, 0, 0, 0]);
    }
}
