//! ACPI fixed-hardware power management block: PM1a event (status/enable) and control
//! registers, the 24-bit PM timer at 3.579545 MHz, a GPE0 block, the SMI command port
//! (ACPI enable/disable handshake) and the SCI interrupt.
//!
//! Follows the ACPI specification chapter 4.8 (fixed hardware registers): PM1_STS bits are
//! write-1-to-clear, PM1_CNT.SLP_EN with SLP_TYP requests a sleep state, TMR_STS is set each
//! time bit 23 of the PM timer toggles. The port layout defaults to the one our firmware's
//! FADT describes (`aero_firmware::tables::platform`: PM base 0xB000, GPE0 at 0xAFE0,
//! SMI_CMD 0xB2 with enable F1h / disable F0h, SLP_TYP 0 = soft-off, like QEMU's PIIX4 PM);
//! `platform_consistency_tests.rs` keeps the two in step ([`AcpiPmLayout`]). The SCI is a level-triggered line (IRQ 9 on a PC).
//!
//! The machine polls [`AcpiPm::take_sleep_request`] (S5 → power off).

use super::{PortIo, Timed, ns_for_ticks, read_bytes, ticks_at, write_bytes};

/// The PM timer frequency.
pub const PM_TIMER_HZ: u64 = 3_579_545;
/// The ISA IRQ the SCI uses on PIIX-class chipsets (FADT SCI_INT).
pub const SCI_IRQ: u8 = 9;

const PM1_TMR_STS: u16 = 1 << 0;
const PM1_GBL_STS: u16 = 1 << 5;
const PM1_PWRBTN_STS: u16 = 1 << 8;
const PM1_RTC_STS: u16 = 1 << 10;
const PM1_WAK_STS: u16 = 1 << 15;
const PM1_STS_BITS: u16 =
    PM1_TMR_STS | (1 << 4) | PM1_GBL_STS | PM1_PWRBTN_STS | PM1_RTC_STS | PM1_WAK_STS;
const PM1_EN_BITS: u16 = PM1_TMR_STS | PM1_GBL_STS | PM1_PWRBTN_STS | PM1_RTC_STS;

const CNT_SCI_EN: u16 = 1 << 0;
const CNT_SLP_EN: u16 = 1 << 13;
const CNT_SLP_TYP_SHIFT: u16 = 10;
/// Bits that read back (SLP_EN is write-only, GBL_RLS self-clearing).
const CNT_STORED_BITS: u16 = CNT_SCI_EN | (1 << 1) | (7 << CNT_SLP_TYP_SHIFT);

/// Where the registers live and the firmware-visible constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcpiPmLayout {
    /// PM1a_EVT_BLK (4 bytes: status, enable).
    pub pm1a_evt: u16,
    /// PM1a_CNT_BLK (2 bytes).
    pub pm1a_cnt: u16,
    /// PM_TMR_BLK (4 bytes, 24-bit counter).
    pub pm_tmr: u16,
    /// GPE0_BLK (`2 * gpe0_half_len` bytes: status half, then enable half).
    pub gpe0: u16,
    pub gpe0_half_len: u8,
    /// SMI_CMD port, 0 for none (then SCI_EN is set from the start).
    pub smi_cmd: u16,
    pub acpi_enable: u8,
    pub acpi_disable: u8,
    /// SLP_TYP value of `_S5` (soft off).
    pub s5_slp_typ: u8,
    /// SLP_TYP value of `_S4` (hibernate: the OS saved itself; off as for S5).
    pub s4_slp_typ: u8,
}

impl Default for AcpiPmLayout {
    fn default() -> Self {
        AcpiPmLayout {
            pm1a_evt: 0xB000,
            pm1a_cnt: 0xB004,
            pm_tmr: 0xB008,
            gpe0: 0xAFE0,
            gpe0_half_len: 2,
            smi_cmd: 0xB2,
            acpi_enable: 0xF1,
            acpi_disable: 0xF0,
            s5_slp_typ: 0,
            s4_slp_typ: 2,
        }
    }
}

/// What the guest asked for with SLP_EN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SleepRequest {
    /// S5: power the machine off.
    PowerOff,
    /// Another SLP_TYP (S1–S4); not supported by the machine yet.
    Sleep { slp_typ: u8 },
}

/// The ACPI PM register block.
#[derive(Clone, Debug)]
pub struct AcpiPm {
    layout: AcpiPmLayout,
    pm1_sts: u16,
    pm1_en: u16,
    pm1_cnt: u16,
    gpe_sts: [u8; 8],
    gpe_en: [u8; 8],
    now_ns: u64,
    sleep_request: Option<SleepRequest>,
}

impl AcpiPm {
    pub fn new(layout: AcpiPmLayout) -> AcpiPm {
        AcpiPm {
            layout: AcpiPmLayout {
                gpe0_half_len: layout.gpe0_half_len.min(8),
                ..layout
            },
            pm1_sts: 0,
            pm1_en: 0,
            pm1_cnt: if layout.smi_cmd == 0 { CNT_SCI_EN } else { 0 },
            gpe_sts: [0; 8],
            gpe_en: [0; 8],
            now_ns: 0,
            sleep_request: None,
        }
    }

    pub fn layout(&self) -> AcpiPmLayout {
        self.layout
    }

    /// Moves the PM1 event/control and PM timer blocks to a PIIX4-style PM I/O base
    /// (base+0, base+4, base+8), as programmed through the PIIX4 PM function's PMBA.
    pub fn relocate_pm_base(&mut self, base: u16) {
        self.layout.pm1a_evt = base;
        self.layout.pm1a_cnt = base.wrapping_add(4);
        self.layout.pm_tmr = base.wrapping_add(8);
    }

    /// The 24-bit PM timer value now.
    pub fn pm_timer(&self) -> u32 {
        (ticks_at(self.now_ns, PM_TIMER_HZ) & 0xFF_FFFF) as u32
    }

    /// SCI line level: an enabled event is pending and the OS owns ACPI (SCI_EN).
    pub fn sci_level(&self) -> bool {
        if self.pm1_cnt & CNT_SCI_EN == 0 {
            return false;
        }
        let pm1 = self.pm1_sts & self.pm1_en != 0;
        let gpe = self
            .gpe_sts
            .iter()
            .zip(&self.gpe_en)
            .any(|(s, e)| s & e != 0);
        pm1 || gpe
    }

    /// The host pressed the power button (the OS then shuts down gracefully).
    pub fn press_power_button(&mut self) {
        self.pm1_sts |= PM1_PWRBTN_STS;
    }

    /// Raises general-purpose event `bit` (for hotplug and similar sources).
    pub fn raise_gpe(&mut self, bit: u8) {
        if let Some(byte) = self.gpe_sts.get_mut(usize::from(bit / 8))
            && usize::from(bit / 8) < usize::from(self.layout.gpe0_half_len)
        {
            *byte |= 1 << (bit % 8);
        }
    }

    /// The sleep state the guest requested since the last call.
    pub fn take_sleep_request(&mut self) -> Option<SleepRequest> {
        self.sleep_request.take()
    }

    fn in_block(port: u16, base: u16, len: u16) -> Option<u16> {
        let offset = port.wrapping_sub(base);
        (base != 0 && offset < len).then_some(offset)
    }

    fn read_byte(&mut self, port: u16) -> u8 {
        let layout = self.layout;
        let half = u16::from(layout.gpe0_half_len);
        if let Some(offset) = Self::in_block(port, layout.pm1a_evt, 4) {
            let word = if offset < 2 {
                self.pm1_sts
            } else {
                self.pm1_en
            };
            return (word >> (8 * (offset & 1))) as u8;
        }
        if let Some(offset) = Self::in_block(port, layout.pm1a_cnt, 2) {
            return (self.pm1_cnt >> (8 * offset)) as u8;
        }
        if let Some(offset) = Self::in_block(port, layout.pm_tmr, 4) {
            return (self.pm_timer() >> (8 * offset)) as u8;
        }
        if let Some(offset) = Self::in_block(port, layout.gpe0, 2 * half) {
            let offset = usize::from(offset);
            let half = usize::from(half);
            return if offset < half {
                self.gpe_sts[offset]
            } else {
                self.gpe_en[offset - half]
            };
        }
        0xFF
    }

    fn write_byte(&mut self, port: u16, value: u8) {
        let layout = self.layout;
        let half = u16::from(layout.gpe0_half_len);
        if let Some(offset) = Self::in_block(port, layout.pm1a_evt, 4) {
            let shifted = u16::from(value) << (8 * (offset & 1));
            if offset < 2 {
                self.pm1_sts &= !(shifted & PM1_STS_BITS);
            } else {
                let lane = 0xFFu16 << (8 * (offset & 1));
                self.pm1_en = (self.pm1_en & !lane) | (shifted & PM1_EN_BITS);
            }
        } else if let Some(offset) = Self::in_block(port, layout.pm1a_cnt, 2) {
            self.write_pm1_cnt(u16::from(value) << (8 * offset), 0xFFu16 << (8 * offset));
        } else if let Some(offset) = Self::in_block(port, layout.gpe0, 2 * half) {
            let offset = usize::from(offset);
            let half = usize::from(half);
            if offset < half {
                self.gpe_sts[offset] &= !value;
            } else {
                self.gpe_en[offset - half] = value;
            }
        } else if layout.smi_cmd != 0 && port == layout.smi_cmd {
            if value == layout.acpi_enable {
                self.pm1_cnt |= CNT_SCI_EN;
            } else if value == layout.acpi_disable {
                self.pm1_cnt &= !CNT_SCI_EN;
            } else {
                tracing::debug!(value, "acpi: unknown SMI command");
            }
        }
    }

    fn write_pm1_cnt(&mut self, value: u16, lane: u16) {
        self.pm1_cnt =
            (self.pm1_cnt & !(lane & CNT_STORED_BITS)) | (value & lane & CNT_STORED_BITS);
        if value & lane & CNT_SLP_EN != 0 {
            let slp_typ = ((self.pm1_cnt >> CNT_SLP_TYP_SHIFT) & 7) as u8;
            self.sleep_request = Some(if slp_typ == self.layout.s5_slp_typ {
                SleepRequest::PowerOff
            } else if slp_typ == self.layout.s4_slp_typ {
                tracing::info!("acpi: S4 (hibernate) requested; powering off");
                SleepRequest::PowerOff
            } else {
                tracing::warn!(
                    slp_typ,
                    "acpi: sleep state other than S5 requested; not supported"
                );
                SleepRequest::Sleep { slp_typ }
            });
            // Waking (or powering on again) reports WAK_STS.
            self.pm1_sts |= PM1_WAK_STS;
        }
    }
}

impl PortIo for AcpiPm {
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        read_bytes(port, size, |p| self.read_byte(p))
    }

    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        write_bytes(port, size, value, |p, v| self.write_byte(p, v));
    }
}

impl Timed for AcpiPm {
    fn advance(&mut self, now_ns: u64) {
        if now_ns <= self.now_ns {
            return;
        }
        // TMR_STS: bit 23 of the counter toggled (every 2^23 ticks).
        let before = ticks_at(self.now_ns, PM_TIMER_HZ) >> 23;
        let after = ticks_at(now_ns, PM_TIMER_HZ) >> 23;
        if after != before {
            self.pm1_sts |= PM1_TMR_STS;
        }
        self.now_ns = now_ns;
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        let armed = self.pm1_cnt & CNT_SCI_EN != 0
            && self.pm1_en & PM1_TMR_STS != 0
            && self.pm1_sts & PM1_TMR_STS == 0;
        armed.then(|| {
            let next_toggle = ((ticks_at(self.now_ns, PM_TIMER_HZ) >> 23) + 1) << 23;
            ns_for_ticks(next_toggle, PM_TIMER_HZ)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pm() -> AcpiPm {
        AcpiPm::new(AcpiPmLayout::default())
    }

    #[test]
    fn pm_timer_runs_at_3_579545_mhz_and_wraps_at_24_bits() {
        let mut pm = pm();
        pm.advance(1_000_000_000);
        assert_eq!(pm.io_read(0xB008, 4), 3_579_545);
        assert_eq!(pm.io_read(0xB008, 2), 3_579_545 & 0xFFFF);
        pm.advance(ns_for_ticks(1 << 24, PM_TIMER_HZ) + 1_000);
        assert!(pm.io_read(0xB008, 4) < 10);
    }

    #[test]
    fn acpi_enable_handshake_and_sci() {
        let mut pm = pm();
        assert_eq!(
            pm.io_read(0xB004, 2) & 1,
            0,
            "legacy mode until ACPI enable"
        );
        pm.io_write(0xB002, 2, 0x0100); // PWRBTN_EN
        pm.press_power_button();
        assert!(!pm.sci_level(), "no SCI before SCI_EN");
        pm.io_write(0xB2, 1, 0xF1);
        assert_eq!(pm.io_read(0xB004, 2) & 1, 1);
        assert!(pm.sci_level());
        assert_eq!(pm.io_read(0xB000, 2), 0x0100);
        pm.io_write(0xB000, 2, 0x0100);
        assert!(!pm.sci_level(), "write 1 clears");
        pm.io_write(0xB2, 1, 0xF0);
        assert_eq!(pm.io_read(0xB004, 2) & 1, 0);
    }

    #[test]
    fn timer_overflow_status_and_deadline() {
        let mut pm = pm();
        pm.io_write(0xB2, 1, 0xF1);
        pm.io_write(0xB002, 2, 0x0001);
        let toggle = ns_for_ticks(1 << 23, PM_TIMER_HZ);
        assert_eq!(pm.next_deadline_ns(), Some(toggle));
        pm.advance(toggle - 1);
        assert!(!pm.sci_level());
        pm.advance(toggle);
        assert!(pm.sci_level());
        assert_eq!(pm.io_read(0xB000, 2) & 1, 1);
        assert_eq!(pm.next_deadline_ns(), None, "until status is cleared");
    }

    #[test]
    fn s5_power_off_request() {
        let mut pm = pm();
        pm.io_write(0xB004, 2, 0x2000); // SLP_TYP 0 + SLP_EN
        assert_eq!(pm.take_sleep_request(), Some(SleepRequest::PowerOff));
        assert_eq!(pm.take_sleep_request(), None);
        assert_eq!(pm.io_read(0xB004, 2) & 0x2000, 0, "SLP_EN reads as 0");
        pm.io_write(0xB005, 1, 0x24); // high byte only: SLP_TYP 1 + SLP_EN
        assert_eq!(
            pm.take_sleep_request(),
            Some(SleepRequest::Sleep { slp_typ: 1 })
        );
    }

    #[test]
    fn gpe_block() {
        let mut pm = pm();
        pm.io_write(0xB2, 1, 0xF1);
        pm.raise_gpe(1);
        assert!(!pm.sci_level());
        pm.io_write(0xAFE2, 1, 0x02);
        assert!(pm.sci_level());
        assert_eq!(pm.io_read(0xAFE0, 4), 0x0002_0002);
        pm.io_write(0xAFE0, 1, 0x02);
        assert!(!pm.sci_level());
        pm.raise_gpe(200);
        assert_eq!(pm.io_read(0xAFE4, 1), 0xFF, "outside the block");
    }

    #[test]
    fn relocation_moves_pm1_and_timer() {
        let mut pm = pm();
        pm.relocate_pm_base(0x600);
        pm.advance(1_000_000_000);
        assert_eq!(pm.io_read(0x608, 4), 3_579_545);
        assert_eq!(pm.io_read(0xB008, 4), 0xFFFF_FFFF, "old block gone");
        pm.io_write(0x604, 2, 0x2000);
        assert_eq!(pm.take_sleep_request(), Some(SleepRequest::PowerOff));
    }

    #[test]
    fn no_smi_cmd_means_acpi_mode_from_start() {
        let mut pm = AcpiPm::new(AcpiPmLayout {
            smi_cmd: 0,
            ..AcpiPmLayout::default()
        });
        assert_eq!(pm.io_read(0xB004, 2) & 1, 1);
        pm.io_write(0, 1, 0xF0);
        assert_eq!(pm.io_read(0xB004, 2) & 1, 1);
    }
}
