//! Fixed ACPI Description Table, revision 3 (244 bytes, ACPI 2.0 layout; ACPI 6.x §5.2.9).
//! It points at the FACS and DSDT and describes the PIIX4-PM-like register blocks.

use super::sdt::{self, Gas, GasAccess};
use crate::tables::platform::*;

pub const FADT_LEN: usize = 244;
const REVISION: u8 = 3;
const PM_PROFILE_DESKTOP: u8 = 1;
/// Latencies above 100 µs (C2) / 1000 µs (C3) mean "state not supported".
const C2_NOT_SUPPORTED: u16 = 0x0FFF;
const C3_NOT_SUPPORTED: u16 = 0x0FFF;

// IAPC_BOOT_ARCH bits.
const BOOT_ARCH_LEGACY_DEVICES: u16 = 1 << 0;
const BOOT_ARCH_8042: u16 = 1 << 1;

// Fixed feature flags.
const FLAG_WBINVD: u32 = 1 << 0;
const FLAG_PROC_C1: u32 = 1 << 2;
/// Set = no fixed-feature sleep button (there is none). PWR_BUTTON (bit 4) stays clear:
/// the power button is a fixed feature in PM1 (PWRBTN_STS/EN).
const FLAG_SLP_BUTTON: u32 = 1 << 5;
const FLAG_RESET_REG_SUP: u32 = 1 << 10;
/// The PM timer and HPET are the platform clocks; TSC-based time is not promised.
const FLAG_USE_PLATFORM_CLOCK: u32 = 1 << 15;
// TMR_VAL_EXT (bit 8) stays clear: the PM timer is declared 24 bits wide, which is
// correct for a 24-bit counter and still correct (the OS masks) for a 32-bit one.

pub fn build(facs_addr: u32, dsdt_addr: u32) -> Vec<u8> {
    let mut t = sdt::begin(b"FACP", REVISION);
    t.extend_from_slice(&facs_addr.to_le_bytes()); // FIRMWARE_CTRL
    t.extend_from_slice(&dsdt_addr.to_le_bytes()); // DSDT
    t.push(0); // reserved (ACPI 1.0 INT_MODEL)
    t.push(PM_PROFILE_DESKTOP);
    t.extend_from_slice(&u16::from(SCI_IRQ).to_le_bytes());
    t.extend_from_slice(&u32::from(SMI_CMD_PORT).to_le_bytes());
    t.extend_from_slice(&[
        ACPI_ENABLE,
        ACPI_DISABLE,
        0, /* S4BIOS_REQ */
        0, /* PSTATE_CNT */
    ]);
    for block in [
        PM1A_EVT_BLK,
        0,
        PM1A_CNT_BLK,
        0,
        0, /* PM2 */
        PM_TMR_BLK,
        GPE0_BLK,
        0, /* GPE1 */
    ] {
        t.extend_from_slice(&u32::from(block).to_le_bytes());
    }
    t.extend_from_slice(&[
        PM1_EVT_LEN,
        PM1_CNT_LEN,
        0, /* PM2 */
        PM_TMR_LEN,
        GPE0_BLK_LEN,
        0,
        0,
    ]);
    t.push(0); // CST_CNT: no _CST support
    t.extend_from_slice(&C2_NOT_SUPPORTED.to_le_bytes());
    t.extend_from_slice(&C3_NOT_SUPPORTED.to_le_bytes());
    t.extend_from_slice(&[0; 4]); // FLUSH_SIZE, FLUSH_STRIDE (WBINVD works)
    t.extend_from_slice(&[0, 0]); // DUTY_OFFSET, DUTY_WIDTH
    t.extend_from_slice(&[0, 0]); // DAY_ALRM, MON_ALRM: no RTC day/month alarm
    t.push(RTC_CENTURY_INDEX);
    t.extend_from_slice(&(BOOT_ARCH_LEGACY_DEVICES | BOOT_ARCH_8042).to_le_bytes());
    t.push(0); // reserved
    let flags =
        FLAG_WBINVD | FLAG_PROC_C1 | FLAG_SLP_BUTTON | FLAG_RESET_REG_SUP | FLAG_USE_PLATFORM_CLOCK;
    t.extend_from_slice(&flags.to_le_bytes());
    Gas::io(RESET_PORT, 1, GasAccess::Byte).write_to(&mut t);
    t.push(RESET_VALUE);
    t.extend_from_slice(&[0; 3]); // reserved (ARM_BOOT_ARCH, minor version in later revisions)
    // 64-bit pointers equal the 32-bit ones; OSes accept identical pairs.
    t.extend_from_slice(&u64::from(facs_addr).to_le_bytes());
    t.extend_from_slice(&u64::from(dsdt_addr).to_le_bytes());
    for gas in [
        Gas::io(PM1A_EVT_BLK, PM1_EVT_LEN, GasAccess::Undefined),
        Gas::NONE, // PM1b event
        Gas::io(PM1A_CNT_BLK, PM1_CNT_LEN, GasAccess::Undefined),
        Gas::NONE, // PM1b control
        Gas::NONE, // PM2 control
        Gas::io(PM_TMR_BLK, PM_TMR_LEN, GasAccess::Undefined),
        Gas::io(GPE0_BLK, GPE0_BLK_LEN, GasAccess::Byte),
        Gas::NONE, // GPE1
    ] {
        gas.write_to(&mut t);
    }
    debug_assert_eq!(t.len(), FADT_LEN);
    sdt::finish(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::checksum::sums_to_zero;

    fn u16_at(t: &[u8], at: usize) -> u16 {
        u16::from_le_bytes(t[at..at + 2].try_into().unwrap())
    }
    fn u32_at(t: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(t[at..at + 4].try_into().unwrap())
    }
    fn u64_at(t: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(t[at..at + 8].try_into().unwrap())
    }

    #[test]
    fn fields_sit_at_their_spec_offsets() {
        let t = build(0x1000, 0x2000);
        assert_eq!(t.len(), FADT_LEN);
        assert_eq!(u32_at(&t, 4), FADT_LEN as u32);
        assert!(sums_to_zero(&t));
        assert_eq!(&t[0..4], b"FACP");
        assert_eq!(t[8], 3);
        assert_eq!(u32_at(&t, 36), 0x1000);
        assert_eq!(u32_at(&t, 40), 0x2000);
        assert_eq!(u16_at(&t, 46), 9);
        assert_eq!(u32_at(&t, 48), 0xB2);
        assert_eq!((t[52], t[53]), (0xF1, 0xF0));
        assert_eq!(u32_at(&t, 56), 0xB000);
        assert_eq!(u32_at(&t, 64), 0xB004);
        assert_eq!(u32_at(&t, 76), 0xB008);
        assert_eq!(u32_at(&t, 80), 0xAFE0);
        assert_eq!(&t[88..93], [4, 2, 0, 4, 4]);
        assert_eq!(t[108], 0x32);
        assert_eq!(u16_at(&t, 109), 0x0003);
        let flags = u32_at(&t, 112);
        assert_ne!(flags & FLAG_RESET_REG_SUP, 0);
        assert_ne!(flags & FLAG_WBINVD, 0);
        assert_ne!(flags & FLAG_SLP_BUTTON, 0);
        assert_eq!(flags & (1 << 4), 0, "power button must be a fixed feature");
        assert_eq!(flags & (1 << 8), 0, "PM timer declared 24-bit");
        assert_eq!(&t[116..120], [1, 8, 0, 1]);
        assert_eq!(u64_at(&t, 120), 0xCF9);
        assert_eq!(t[128], 0x06);
        assert_eq!(u64_at(&t, 132), 0x1000);
        assert_eq!(u64_at(&t, 140), 0x2000);
        assert_eq!(&t[148..152], [1, 32, 0, 0]);
        assert_eq!(u64_at(&t, 152), 0xB000);
        assert_eq!(&t[172..176], [1, 16, 0, 0]);
        assert_eq!(u64_at(&t, 176), 0xB004);
        assert_eq!(u64_at(&t, 212), 0xB008);
        assert_eq!(&t[220..224], [1, 32, 0, 1]);
        assert_eq!(u64_at(&t, 224), 0xAFE0);
    }
}
