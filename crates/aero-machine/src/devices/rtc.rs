//! Motorola MC146818A real-time clock with 128 bytes of CMOS RAM (ports 0x70/0x71).
//!
//! Follows the MC146818A datasheet: time/alarm registers in BCD or binary, 12/24-hour
//! format, registers A–D, the once-a-second update cycle (UIP is set 244 µs before the
//! registers change), periodic/alarm/update-ended interrupt flags with read-to-clear
//! register C, SET to halt updates and the divider reset (the first update then comes
//! 500 ms after the divider is released). Port 0x70 bit 7 is the PC's NMI mask.
//!
//! The CMOS layout above 0x0E follows the IBM PC/AT convention plus the SeaBIOS/QEMU
//! extensions (memory above 16 MiB in 0x34/0x35, above 4 GiB in 0x5B–0x5D, CPU count in
//! 0x5F) that [`Rtc::set_memory_size`] fills in; the century lives at 0x32.
//!
//! Time starts at a caller-given Unix time and advances only with the virtual clock; the
//! clock registers are kept as raw fields (like the chip) and normalised on each update,
//! so a guest setting the date field by field never sees a half-converted date.

use super::{NS_PER_SEC, PortIo, Timed, read_bytes, ticks_at, write_bytes};

const REG_SECONDS: u8 = 0x00;
const REG_SECONDS_ALARM: u8 = 0x01;
const REG_MINUTES: u8 = 0x02;
const REG_MINUTES_ALARM: u8 = 0x03;
const REG_HOURS: u8 = 0x04;
const REG_HOURS_ALARM: u8 = 0x05;
const REG_DAY_OF_WEEK: u8 = 0x06;
const REG_DAY: u8 = 0x07;
const REG_MONTH: u8 = 0x08;
const REG_YEAR: u8 = 0x09;
const REG_A: u8 = 0x0A;
const REG_B: u8 = 0x0B;
const REG_C: u8 = 0x0C;
const REG_D: u8 = 0x0D;
/// Century byte (IBM convention; the FADT's CENTURY field points here).
pub const REG_CENTURY: u8 = 0x32;

const A_UIP: u8 = 0x80;
const B_SET: u8 = 0x80;
const B_PIE: u8 = 0x40;
const B_AIE: u8 = 0x20;
const B_UIE: u8 = 0x10;
const B_BINARY: u8 = 0x04;
const B_24H: u8 = 0x02;
const C_IRQF: u8 = 0x80;
const C_PF: u8 = 0x40;
const C_AF: u8 = 0x20;
const C_UF: u8 = 0x10;

/// UIP rises this long before the registers change.
const UIP_LEAD_NS: u64 = 244_000;
/// The divider chain's input clock.
const TIME_BASE_HZ: u64 = 32_768;
/// Alarms repeat at most daily, so a long jump needs to check only one day of seconds.
const SECONDS_PER_DAY: u64 = 86_400;

/// The clock as the chip keeps it: binary values, possibly invalid until the next update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fields {
    second: u8,
    minute: u8,
    hour: u8, // 0–23
    day_of_week: u8,
    day: u8,
    month: u8,
    year: u8, // 0–99
    century: u8,
}

impl Fields {
    fn from_unix(seconds: i64) -> Fields {
        let days = seconds.div_euclid(86_400);
        let in_day = seconds.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        let year = year.clamp(0, 9999);
        Fields {
            second: (in_day % 60) as u8,
            minute: (in_day / 60 % 60) as u8,
            hour: (in_day / 3600) as u8,
            day_of_week: ((days + 4).rem_euclid(7) + 1) as u8, // 1 = Sunday; 1970-01-01 was a Thursday
            day: day as u8,
            month: month as u8,
            year: (year % 100) as u8,
            century: (year / 100) as u8,
        }
    }

    /// Unix time of the fields, with out-of-range values clamped like a best-effort chip.
    fn to_unix(self) -> i64 {
        let year = i64::from(self.century.min(99)) * 100 + i64::from(self.year.min(99));
        let month = u32::from(self.month.clamp(1, 12));
        let day = u32::from(self.day.clamp(1, 31));
        let days = days_from_civil(year, month, day);
        days * 86_400
            + i64::from(self.hour.min(23)) * 3600
            + i64::from(self.minute.min(59)) * 60
            + i64::from(self.second.min(59))
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (month 1–12, day may overflow).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    // Count years from March so the leap day is the last day of the year.
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = i64::from((month + 9) % 12);
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Inverse of [`days_from_civil`]: (year, month, day).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn to_bcd(value: u8) -> u8 {
    let value = value % 100;
    ((value / 10) << 4) | (value % 10)
}

fn from_bcd(value: u8) -> u8 {
    (value >> 4) * 10 + (value & 0xF)
}

/// The MC146818A RTC + CMOS RAM.
#[derive(Clone, Debug)]
pub struct Rtc {
    cmos: [u8; 128],
    fields: Fields,
    alarm: [u8; 3], // raw register values: seconds, minutes, hours
    reg_a: u8,
    reg_b: u8,
    reg_c: u8,
    index: u8,
    nmi_disabled: bool,
    now_ns: u64,
    /// Virtual time of the next once-a-second update (meaningful while the divider runs).
    next_update_ns: u64,
    /// Virtual time the divider chain was released; periodic interrupts are in phase with it.
    divider_start_ns: u64,
}

impl Rtc {
    /// An RTC showing `start_unix_seconds` at virtual time 0 (24-hour BCD, 1024 Hz rate).
    pub fn new(start_unix_seconds: i64) -> Rtc {
        Rtc {
            cmos: [0; 128],
            fields: Fields::from_unix(start_unix_seconds),
            alarm: [0; 3],
            reg_a: 0x26,
            reg_b: B_24H,
            reg_c: 0,
            index: 0,
            nmi_disabled: true,
            now_ns: 0,
            next_update_ns: NS_PER_SEC,
            divider_start_ns: 0,
        }
    }

    /// RESET# on the MC146818: the interrupt enables (PIE, AIE, UIE) and register C's
    /// flags clear, so a rebooting guest does not get the old OS's periodic interrupts.
    /// Time, the divider and CMOS RAM run on the battery and are kept.
    pub fn reset(&mut self) {
        self.reg_b &= !(B_PIE | B_AIE | B_UIE);
        self.reg_c = 0;
    }

    /// IRQ8 output level (register C's IRQF).
    pub fn irq_level(&self) -> bool {
        self.reg_c & C_IRQF != 0
    }

    /// Port 0x70 bit 7: NMIs are masked.
    pub fn nmi_disabled(&self) -> bool {
        self.nmi_disabled
    }

    /// Writes a CMOS RAM byte (firmware configuration; clock registers are not touched).
    pub fn set_cmos(&mut self, index: u8, value: u8) {
        if let Some(byte) = self.cmos.get_mut(usize::from(index))
            && index > REG_D
            && index != REG_CENTURY
        {
            *byte = value;
        }
    }

    /// Reads a CMOS RAM byte as the guest would see it (no side effects).
    pub fn cmos(&self, index: u8) -> u8 {
        self.peek(index & 0x7F)
    }

    /// Fills the memory size fields: base (0x15/0x16), extended up to 64 MiB (0x17/0x18 and
    /// 0x30/0x31, KiB), above 16 MiB (0x34/0x35, 64 KiB units) and above 4 GiB
    /// (0x5B–0x5D, 64 KiB units). `below_4g` is the RAM size below the PCI hole.
    pub fn set_memory_size(&mut self, below_4g: u64, above_4g: u64) {
        const MIB: u64 = 1 << 20;
        let base_kib: u64 = 640;
        let extended_kib = (below_4g.saturating_sub(MIB) / 1024).min(0xFFFF);
        let above_16m = (below_4g.saturating_sub(16 * MIB) >> 16).min(0xFFFF);
        let above_4g = (above_4g >> 16).min(0xFF_FFFF);
        let pairs = [
            (0x15, base_kib),
            (0x17, extended_kib),
            (0x30, extended_kib),
            (0x34, above_16m),
        ];
        for (index, value) in pairs {
            self.cmos[index] = value as u8;
            self.cmos[index + 1] = (value >> 8) as u8;
        }
        self.cmos[0x5B] = above_4g as u8;
        self.cmos[0x5C] = (above_4g >> 8) as u8;
        self.cmos[0x5D] = (above_4g >> 16) as u8;
        self.update_checksum();
    }

    /// Number of CPUs minus one at 0x5F (SeaBIOS convention).
    pub fn set_cpu_count(&mut self, cpus: u8) {
        self.cmos[0x5F] = cpus.saturating_sub(1);
    }

    /// Recomputes the standard checksum over 0x10–0x2D into 0x2E (high) / 0x2F (low).
    pub fn update_checksum(&mut self) {
        let sum: u16 = self.cmos[0x10..=0x2D].iter().map(|&b| u16::from(b)).sum();
        self.cmos[0x2E] = (sum >> 8) as u8;
        self.cmos[0x2F] = sum as u8;
    }

    fn binary_mode(&self) -> bool {
        self.reg_b & B_BINARY != 0
    }

    fn encode(&self, value: u8) -> u8 {
        if self.binary_mode() {
            value
        } else {
            to_bcd(value)
        }
    }

    fn decode(&self, value: u8) -> u8 {
        if self.binary_mode() {
            value
        } else {
            from_bcd(value)
        }
    }

    fn encode_hour(&self, hour: u8) -> u8 {
        if self.reg_b & B_24H != 0 {
            return self.encode(hour);
        }
        let pm = if hour >= 12 { 0x80 } else { 0 };
        let twelve = match hour % 12 {
            0 => 12,
            h => h,
        };
        self.encode(twelve) | pm
    }

    fn decode_hour(&self, raw: u8) -> u8 {
        if self.reg_b & B_24H != 0 {
            return self.decode(raw);
        }
        let hour = self.decode(raw & 0x7F) % 12;
        if raw & 0x80 != 0 { hour + 12 } else { hour }
    }

    /// The divider runs (DV = 010) and SET is clear: the clock updates.
    fn updating(&self) -> bool {
        self.reg_a & 0x70 == 0x20 && self.reg_b & B_SET == 0
    }

    fn divider_running(&self) -> bool {
        self.reg_a & 0x70 == 0x20
    }

    /// Periodic interrupt period in 32.768 kHz ticks (`None` when RS = 0).
    fn periodic_ticks(&self) -> Option<u64> {
        match self.reg_a & 0x0F {
            0 => None,
            1 => Some(1 << 7),
            2 => Some(1 << 8),
            rate => Some(1 << (rate - 1)),
        }
    }

    fn uip(&self) -> bool {
        self.updating() && self.now_ns.saturating_add(UIP_LEAD_NS) >= self.next_update_ns
    }

    fn peek(&self, index: u8) -> u8 {
        let f = &self.fields;
        match index {
            REG_SECONDS => self.encode(f.second),
            REG_MINUTES => self.encode(f.minute),
            REG_HOURS => self.encode_hour(f.hour),
            REG_SECONDS_ALARM => self.alarm[0],
            REG_MINUTES_ALARM => self.alarm[1],
            REG_HOURS_ALARM => self.alarm[2],
            REG_DAY_OF_WEEK => self.encode(f.day_of_week),
            REG_DAY => self.encode(f.day),
            REG_MONTH => self.encode(f.month),
            REG_YEAR => self.encode(f.year),
            REG_CENTURY => self.encode(f.century),
            REG_A => self.reg_a | if self.uip() { A_UIP } else { 0 },
            REG_B => self.reg_b,
            REG_C => self.reg_c,
            REG_D => 0x80, // valid RAM and time
            _ => self.cmos.get(usize::from(index)).copied().unwrap_or(0xFF),
        }
    }

    fn read_data(&mut self) -> u8 {
        let value = self.peek(self.index);
        if self.index == REG_C {
            self.reg_c = 0; // read-to-clear: drops IRQ8
        }
        value
    }

    fn write_data(&mut self, value: u8) {
        match self.index {
            REG_SECONDS => self.fields.second = self.decode(value & 0x7F),
            REG_MINUTES => self.fields.minute = self.decode(value),
            REG_HOURS => self.fields.hour = self.decode_hour(value),
            REG_SECONDS_ALARM => self.alarm[0] = value,
            REG_MINUTES_ALARM => self.alarm[1] = value,
            REG_HOURS_ALARM => self.alarm[2] = value,
            REG_DAY_OF_WEEK => self.fields.day_of_week = self.decode(value),
            REG_DAY => self.fields.day = self.decode(value),
            REG_MONTH => self.fields.month = self.decode(value),
            REG_YEAR => self.fields.year = self.decode(value),
            REG_CENTURY => self.fields.century = self.decode(value),
            REG_A => self.write_reg_a(value),
            REG_B => self.write_reg_b(value),
            REG_C | REG_D => {}
            index => self.cmos[usize::from(index & 0x7F)] = value,
        }
    }

    fn write_reg_a(&mut self, value: u8) {
        let was_running = self.divider_running();
        self.reg_a = value & 0x7F;
        if self.reg_a & 0x70 != 0x20 && self.reg_a & 0x60 != 0x60 {
            tracing::debug!(
                reg_a = value,
                "RTC: non-32.768 kHz time base; clock stopped"
            );
        }
        if !was_running && self.divider_running() {
            // Leaving divider reset: the first update comes half a second later.
            self.divider_start_ns = self.now_ns;
            self.next_update_ns = self.now_ns.saturating_add(NS_PER_SEC / 2);
        }
    }

    fn write_reg_b(&mut self, value: u8) {
        let was_set = self.reg_b & B_SET != 0;
        let mut value = value;
        if value & B_SET != 0 {
            value &= !B_UIE; // SET clears UIE
        }
        self.reg_b = value;
        if was_set && value & B_SET == 0 {
            // A full second passes before the first update after setting the time.
            self.next_update_ns = self.now_ns.saturating_add(NS_PER_SEC);
        }
        self.update_irqf();
    }

    fn update_irqf(&mut self) {
        let enabled = self.reg_b & (B_PIE | B_AIE | B_UIE);
        if self.reg_c & enabled & (C_PF | C_AF | C_UF) != 0 {
            self.reg_c |= C_IRQF;
        }
    }

    fn alarm_matches(&self, fields: &Fields) -> bool {
        // Values 0xC0–0xFF are "don't care".
        let matches = |raw: u8, actual: u8| raw >= 0xC0 || raw == actual;
        matches(self.alarm[0], self.encode(fields.second))
            && matches(self.alarm[1], self.encode(fields.minute))
            && matches(self.alarm[2], self.encode_hour(fields.hour))
    }

    /// Runs `count` update cycles ending at the current one.
    fn run_updates(&mut self, count: u64) {
        let start = self.fields.to_unix();
        let checked = count.min(SECONDS_PER_DAY);
        let mut alarm = false;
        for step in (count - checked + 1)..=count {
            let fields = Fields::from_unix(start.saturating_add(step as i64));
            alarm |= self.alarm_matches(&fields);
        }
        self.fields = Fields::from_unix(start.saturating_add(count as i64));
        self.reg_c |= C_UF;
        if alarm {
            self.reg_c |= C_AF;
        }
    }

    fn next_periodic_ns(&self, after_ns: u64) -> Option<u64> {
        let period = self.periodic_ticks()?;
        let since = after_ns.saturating_sub(self.divider_start_ns);
        let next_tick = (ticks_at(since, TIME_BASE_HZ) / period + 1) * period;
        Some(
            self.divider_start_ns
                .saturating_add(super::ns_for_ticks(next_tick, TIME_BASE_HZ)),
        )
    }
}

impl PortIo for Rtc {
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        read_bytes(port, size, |p| match p {
            0x71 => self.read_data(),
            _ => 0xFF, // the index port is write-only
        })
    }

    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        write_bytes(port, size, value, |p, v| match p {
            0x70 => {
                self.index = v & 0x7F;
                self.nmi_disabled = v & 0x80 != 0;
            }
            0x71 => self.write_data(v),
            _ => {}
        });
    }
}

impl Timed for Rtc {
    fn advance(&mut self, now_ns: u64) {
        if now_ns <= self.now_ns {
            return;
        }
        if self.divider_running() {
            if self.periodic_ticks().is_some()
                && let Some(next) = self.next_periodic_ns(self.now_ns)
                && next <= now_ns
            {
                self.reg_c |= C_PF;
            }
            if now_ns >= self.next_update_ns {
                let count = (now_ns - self.next_update_ns) / NS_PER_SEC + 1;
                if self.reg_b & B_SET == 0 {
                    self.run_updates(count);
                }
                self.next_update_ns = self.next_update_ns.saturating_add(count * NS_PER_SEC);
            }
        }
        self.now_ns = now_ns;
        self.update_irqf();
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        if !self.divider_running() || self.irq_level() {
            return None; // nothing new can change IRQ8 until register C is read
        }
        let periodic = if self.reg_b & B_PIE != 0 {
            self.next_periodic_ns(self.now_ns)
        } else {
            None
        };
        let update =
            (self.updating() && self.reg_b & (B_UIE | B_AIE) != 0).then_some(self.next_update_ns);
        match (periodic, update) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2024-02-29 23:59:58 UTC, a Thursday.
    const START: i64 = 1_709_251_198;

    fn read(rtc: &mut Rtc, index: u8) -> u8 {
        rtc.io_write(0x70, 1, u32::from(index));
        rtc.io_read(0x71, 1) as u8
    }

    fn write(rtc: &mut Rtc, index: u8, value: u8) {
        rtc.io_write(0x70, 1, u32::from(index));
        rtc.io_write(0x71, 1, u32::from(value));
    }

    #[test]
    fn calendar_conversion_round_trips() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        for days in [-1000, 0, 59, 365, 10_957, 19_782, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        let f = Fields::from_unix(START);
        assert_eq!((f.century, f.year, f.month, f.day), (20, 24, 2, 29));
        assert_eq!((f.hour, f.minute, f.second, f.day_of_week), (23, 59, 58, 5));
        assert_eq!(f.to_unix(), START);
    }

    #[test]
    fn reads_bcd_time_and_rolls_over_leap_day() {
        let mut rtc = Rtc::new(START);
        assert_eq!(read(&mut rtc, REG_SECONDS), 0x58);
        assert_eq!(read(&mut rtc, REG_HOURS), 0x23);
        assert_eq!(read(&mut rtc, REG_DAY), 0x29);
        assert_eq!(read(&mut rtc, REG_CENTURY), 0x20);
        assert_eq!(read(&mut rtc, REG_D), 0x80);
        rtc.advance(2 * NS_PER_SEC);
        assert_eq!(read(&mut rtc, REG_SECONDS), 0x00);
        assert_eq!(read(&mut rtc, REG_MINUTES), 0x00);
        assert_eq!(read(&mut rtc, REG_HOURS), 0x00);
        assert_eq!(read(&mut rtc, REG_DAY), 0x01);
        assert_eq!(read(&mut rtc, REG_MONTH), 0x03);
        assert_eq!(read(&mut rtc, REG_DAY_OF_WEEK), 0x06, "Friday");
    }

    #[test]
    fn update_cycle_uip_window() {
        let mut rtc = Rtc::new(START);
        rtc.advance(NS_PER_SEC - UIP_LEAD_NS - 1);
        assert_eq!(read(&mut rtc, REG_A), 0x26);
        rtc.advance(NS_PER_SEC - UIP_LEAD_NS);
        assert_eq!(read(&mut rtc, REG_A), 0xA6);
        assert_eq!(
            read(&mut rtc, REG_SECONDS),
            0x58,
            "old time until the update"
        );
        rtc.advance(NS_PER_SEC);
        assert_eq!(read(&mut rtc, REG_A), 0x26);
        assert_eq!(read(&mut rtc, REG_SECONDS), 0x59);
        assert_eq!(
            read(&mut rtc, REG_C),
            C_PF | C_UF,
            "flags set even with PIE/UIE off"
        );
        assert_eq!(read(&mut rtc, REG_C), 0, "read clears");
    }

    #[test]
    fn binary_and_12_hour_modes() {
        let mut rtc = Rtc::new(START - 12 * 3600); // 11:59:58
        write(&mut rtc, REG_B, B_BINARY);
        assert_eq!(read(&mut rtc, REG_HOURS), 11);
        assert_eq!(read(&mut rtc, REG_SECONDS), 58);
        rtc.advance(2 * NS_PER_SEC);
        assert_eq!(read(&mut rtc, REG_HOURS), 0x80 | 12, "12 PM");
        write(&mut rtc, REG_B, 0);
        rtc.advance(14 * 3600 * NS_PER_SEC);
        assert_eq!(read(&mut rtc, REG_HOURS), 0x01, "1 AM in BCD");
    }

    #[test]
    fn set_halts_and_field_writes_are_raw() {
        let mut rtc = Rtc::new(START);
        write(&mut rtc, REG_B, B_SET | B_24H | B_UIE);
        assert_eq!(read(&mut rtc, REG_B), B_SET | B_24H, "SET clears UIE");
        // Set 2031-02-28 by writing month before day, as a guest might.
        write(&mut rtc, REG_YEAR, 0x31);
        write(&mut rtc, REG_MONTH, 0x02);
        write(&mut rtc, REG_DAY, 0x28);
        write(&mut rtc, REG_HOURS, 0x10);
        write(&mut rtc, REG_MINUTES, 0x20);
        write(&mut rtc, REG_SECONDS, 0x30);
        rtc.advance(5 * NS_PER_SEC);
        assert_eq!(read(&mut rtc, REG_SECONDS), 0x30, "halted");
        assert_eq!(read(&mut rtc, REG_A) & A_UIP, 0);
        write(&mut rtc, REG_B, B_24H);
        rtc.advance(6 * NS_PER_SEC - 1);
        assert_eq!(read(&mut rtc, REG_SECONDS), 0x30);
        rtc.advance(6 * NS_PER_SEC);
        assert_eq!(read(&mut rtc, REG_SECONDS), 0x31);
        assert_eq!(read(&mut rtc, REG_DAY), 0x28);
        assert_eq!(read(&mut rtc, REG_MONTH), 0x02);
        assert_eq!(read(&mut rtc, REG_YEAR), 0x31);
    }

    #[test]
    fn periodic_interrupt_1024hz() {
        let mut rtc = Rtc::new(START);
        write(&mut rtc, REG_B, B_24H | B_PIE);
        assert_eq!(rtc.next_deadline_ns(), Some(976_563));
        rtc.advance(976_562);
        assert!(!rtc.irq_level());
        rtc.advance(976_563);
        assert!(rtc.irq_level());
        assert_eq!(rtc.next_deadline_ns(), None, "line held until C is read");
        assert_eq!(read(&mut rtc, REG_C), C_IRQF | C_PF);
        assert!(!rtc.irq_level());
        assert_eq!(rtc.next_deadline_ns(), Some(1_953_125));
        // Rate 15 = 2 Hz.
        write(&mut rtc, REG_A, 0x2F);
        assert_eq!(rtc.next_deadline_ns(), Some(500_000_000));
    }

    #[test]
    fn alarm_and_update_interrupts() {
        let mut rtc = Rtc::new(START);
        write(&mut rtc, REG_A, 0x20); // no periodic flag, to keep register C exact
        write(&mut rtc, REG_SECONDS_ALARM, 0x05);
        write(&mut rtc, REG_MINUTES_ALARM, 0xFF);
        write(&mut rtc, REG_HOURS_ALARM, 0xC0);
        write(&mut rtc, REG_B, B_24H | B_AIE);
        assert_eq!(rtc.next_deadline_ns(), Some(NS_PER_SEC));
        rtc.advance(6 * NS_PER_SEC);
        assert!(!rtc.irq_level(), "00:00:04 does not match :05");
        rtc.advance(7 * NS_PER_SEC);
        assert!(rtc.irq_level());
        assert_eq!(read(&mut rtc, REG_C), C_IRQF | C_AF | C_UF);
        // Update-ended interrupt.
        write(&mut rtc, REG_B, B_24H | B_UIE);
        rtc.advance(8 * NS_PER_SEC);
        assert_eq!(read(&mut rtc, REG_C), C_IRQF | C_UF);
        // A long jump still finds the daily alarm.
        write(&mut rtc, REG_B, B_24H | B_AIE);
        write(&mut rtc, REG_HOURS_ALARM, 0x12);
        rtc.advance(3 * SECONDS_PER_DAY * NS_PER_SEC);
        assert_eq!(read(&mut rtc, REG_C), C_IRQF | C_AF | C_UF);
    }

    #[test]
    fn divider_reset_delays_first_update_by_half_a_second() {
        let mut rtc = Rtc::new(START);
        rtc.advance(100);
        write(&mut rtc, REG_A, 0x70);
        rtc.advance(3 * NS_PER_SEC);
        assert_eq!(read(&mut rtc, REG_SECONDS), 0x58, "held in reset");
        write(&mut rtc, REG_A, 0x26);
        rtc.advance(3 * NS_PER_SEC + NS_PER_SEC / 2 - 1);
        assert_eq!(read(&mut rtc, REG_SECONDS), 0x58);
        rtc.advance(3 * NS_PER_SEC + NS_PER_SEC / 2);
        assert_eq!(read(&mut rtc, REG_SECONDS), 0x59);
    }

    #[test]
    fn cmos_memory_fields_and_nmi_mask() {
        let mut rtc = Rtc::new(0);
        rtc.set_memory_size(0xC000_0000, 0x1_0000_0000);
        assert_eq!(rtc.cmos(0x15) as u16 | (rtc.cmos(0x16) as u16) << 8, 640);
        assert_eq!(rtc.cmos(0x17) as u16 | (rtc.cmos(0x18) as u16) << 8, 0xFFFF);
        assert_eq!(rtc.cmos(0x30) as u16 | (rtc.cmos(0x31) as u16) << 8, 0xFFFF);
        assert_eq!(rtc.cmos(0x34) as u16 | (rtc.cmos(0x35) as u16) << 8, 0xBF00);
        assert_eq!(
            [rtc.cmos(0x5B), rtc.cmos(0x5C), rtc.cmos(0x5D)],
            [0x00, 0x00, 0x01]
        );
        rtc.set_memory_size(32 << 20, 0);
        assert_eq!(
            rtc.cmos(0x17) as u16 | (rtc.cmos(0x18) as u16) << 8,
            31 * 1024
        );
        assert_eq!(rtc.cmos(0x34) as u16 | (rtc.cmos(0x35) as u16) << 8, 0x100);
        let sum: u16 = (0x10..=0x2D).map(|i| u16::from(rtc.cmos(i))).sum();
        assert_eq!(
            u16::from(rtc.cmos(0x2E)) << 8 | u16::from(rtc.cmos(0x2F)),
            sum
        );
        rtc.set_cmos(REG_SECONDS, 0x99);
        assert_eq!(rtc.cmos(REG_SECONDS), 0x00, "clock registers are not NVRAM");
        rtc.set_cpu_count(2);
        assert_eq!(rtc.cmos(0x5F), 1);
        // NMI mask bit on the index port, and guest NVRAM writes.
        rtc.io_write(0x70, 1, 0x80 | 0x40);
        assert!(rtc.nmi_disabled());
        rtc.io_write(0x71, 1, 0xAB);
        rtc.io_write(0x70, 1, 0x40);
        assert!(!rtc.nmi_disabled());
        assert_eq!(rtc.io_read(0x71, 1), 0xAB);
        assert_eq!(rtc.io_read(0x70, 1), 0xFF);
    }

    #[test]
    fn garbage_time_values_do_not_panic() {
        let mut rtc = Rtc::new(i64::MAX / 2);
        for index in 0..=0x7F {
            write(&mut rtc, index, 0xFF);
        }
        write(&mut rtc, REG_A, 0x26);
        write(&mut rtc, REG_B, 0x7F);
        rtc.advance(u64::MAX / 2);
        for index in 0..=0x7F {
            let _ = read(&mut rtc, index);
        }
        let _ = rtc.next_deadline_ns();
        let _ = Rtc::new(i64::MIN / 2).cmos(0);
    }
}
