//! High Precision Event Timer (MMIO at 0xFED00000), three comparators.
//!
//! Follows the IA-PC HPET specification 1.0a: capabilities (64-bit counter, legacy
//! replacement capable, vendor 8086h, 100 ns period = 10 MHz), general configuration
//! (ENABLE_CNF, LEG_RT_CNF), write-1-to-clear interrupt status, the main counter and per
//! timer configuration (edge/level, enable, periodic with VAL_SET, 32-bit mode, I/O APIC
//! route) and comparators. FSB (MSI) delivery is not offered (capability bit clear).
//!
//! A timer fires when the main counter *passes through* its comparator (equality in the
//! 64- or 32-bit domain), so a comparator already in the past waits for the wrap, exactly
//! as guests (e.g. Linux's `hpet_next_event` re-check) expect. Periodic timers advance
//! their comparator by the period; several periods missed in one step coalesce.
//!
//! Outputs: with legacy replacement on, timer 0 drives ISA IRQ0 and timer 1 ISA IRQ8 (the
//! machine then disconnects the PIT and RTC from those lines, see
//! [`Hpet::legacy_replacement`]); otherwise each timer drives the I/O APIC input named by its
//! route field. Level-mode lines stay asserted until the status bit is cleared; edge-mode
//! fires are latched as pulses.

use super::{IrqLines, Mmio, Timed, size_mask};

pub const DEFAULT_BASE: u64 = 0xFED0_0000;
pub const TIMERS: usize = 3;
/// Counter period in femtoseconds (10 MHz).
pub const PERIOD_FS: u64 = 100_000_000;
const NS_PER_TICK: u64 = 100;

const CAP_REV: u64 = 0x01;
const CAP_NUM_TIMERS: u64 = ((TIMERS as u64) - 1) << 8;
const CAP_COUNT_64: u64 = 1 << 13;
const CAP_LEGACY_ROUTE: u64 = 1 << 15;
const CAP_VENDOR: u64 = 0x8086 << 16;
const CAPABILITIES: u64 =
    CAP_REV | CAP_NUM_TIMERS | CAP_COUNT_64 | CAP_LEGACY_ROUTE | CAP_VENDOR | PERIOD_FS << 32;

const CFG_ENABLE: u64 = 1 << 0;
const CFG_LEGACY: u64 = 1 << 1;

const TN_LEVEL: u64 = 1 << 1;
const TN_INT_ENABLE: u64 = 1 << 2;
const TN_PERIODIC: u64 = 1 << 3;
const TN_PERIODIC_CAP: u64 = 1 << 4;
const TN_SIZE_64_CAP: u64 = 1 << 5;
const TN_VAL_SET: u64 = 1 << 6;
const TN_32BIT: u64 = 1 << 8;
const TN_ROUTE_SHIFT: u64 = 9;
const TN_ROUTE_MASK: u64 = 0x1F << TN_ROUTE_SHIFT;
/// I/O APIC inputs a timer may be routed to: 20–23, free of ISA and PCI interrupts.
const TN_ROUTE_CAP: u64 = 0x00F0_0000 << 32;
const TN_WRITABLE: u64 =
    TN_LEVEL | TN_INT_ENABLE | TN_PERIODIC | TN_VAL_SET | TN_32BIT | TN_ROUTE_MASK;

#[derive(Clone, Copy, Debug, Default)]
struct Timer {
    config: u64,
    comparator: u64,
    period: u64,
}

impl Timer {
    fn modulus_mask(&self) -> u64 {
        if self.config & TN_32BIT != 0 {
            0xFFFF_FFFF
        } else {
            u64::MAX
        }
    }

    /// Does the counter pass the comparator in (from, from + elapsed]?
    fn fires_within(&self, from: u64, elapsed: u64) -> bool {
        let mask = self.modulus_mask();
        let distance = self.comparator.wrapping_sub(from).wrapping_sub(1) & mask;
        distance < elapsed
    }

    /// Ticks from `counter` until the timer next fires (at least 1; the counter wraps).
    fn ticks_until_fire(&self, counter: u64) -> u64 {
        let mask = self.modulus_mask();
        (self.comparator.wrapping_sub(counter).wrapping_sub(1) & mask).saturating_add(1)
    }

    /// After firing at or before `counter`, a periodic timer moves its comparator past it.
    fn rearm_periodic(&mut self, counter: u64) {
        if self.config & TN_PERIODIC == 0 || self.period == 0 {
            return;
        }
        let mask = self.modulus_mask();
        let overshoot = counter.wrapping_sub(self.comparator) & mask;
        let periods = overshoot / self.period + 1;
        self.comparator = self
            .comparator
            .wrapping_add(periods.wrapping_mul(self.period))
            & mask;
    }
}

/// Where a timer's interrupt goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Isa(u8),
    IoApic(u8),
}

/// The HPET block.
#[derive(Clone, Debug)]
pub struct Hpet {
    config: u64,
    status: u64,
    timers: [Timer; TIMERS],
    /// Main counter value when it was last started or written.
    counter_base: u64,
    /// Virtual time at which `counter_base` was valid (meaningful while enabled).
    counter_base_ns: u64,
    now_ns: u64,
    pulses_isa: IrqLines,
    pulses_ioapic: IrqLines,
}

impl Default for Hpet {
    fn default() -> Self {
        Self::new()
    }
}

impl Hpet {
    pub fn new() -> Hpet {
        let timer = Timer {
            config: TN_PERIODIC_CAP | TN_SIZE_64_CAP | TN_ROUTE_CAP,
            comparator: u64::MAX,
            period: 0,
        };
        Hpet {
            config: 0,
            status: 0,
            timers: [timer; TIMERS],
            counter_base: 0,
            counter_base_ns: 0,
            now_ns: 0,
            pulses_isa: IrqLines::NONE,
            pulses_ioapic: IrqLines::NONE,
        }
    }

    /// LEG_RT_CNF: timers 0/1 replace the PIT (IRQ0) and RTC (IRQ8) interrupts.
    pub fn legacy_replacement(&self) -> bool {
        self.config & CFG_LEGACY != 0
    }

    fn enabled(&self) -> bool {
        self.config & CFG_ENABLE != 0
    }

    fn counter_at(&self, now_ns: u64) -> u64 {
        if !self.enabled() {
            return self.counter_base;
        }
        let ticks = now_ns.saturating_sub(self.counter_base_ns) / NS_PER_TICK;
        self.counter_base.wrapping_add(ticks)
    }

    fn route(&self, index: usize) -> Route {
        match (self.legacy_replacement(), index) {
            (true, 0) => Route::Isa(0),
            (true, 1) => Route::Isa(8),
            _ => {
                Route::IoApic(((self.timers[index].config & TN_ROUTE_MASK) >> TN_ROUTE_SHIFT) as u8)
            }
        }
    }

    fn asserted_lines(&self, want_isa: bool) -> IrqLines {
        let mut lines = IrqLines::NONE;
        if !self.enabled() {
            return lines;
        }
        for (index, timer) in self.timers.iter().enumerate() {
            let active = timer.config & TN_LEVEL != 0
                && timer.config & TN_INT_ENABLE != 0
                && self.status & (1 << index) != 0;
            match self.route(index) {
                Route::Isa(irq) if want_isa && active => lines.set(irq, true),
                Route::IoApic(pin) if !want_isa && active => lines.set(pin, true),
                _ => {}
            }
        }
        lines
    }

    /// Asserted ISA lines (IRQ0/IRQ8 in legacy replacement mode).
    pub fn isa_irq_lines(&self) -> IrqLines {
        self.asserted_lines(true)
    }

    /// Asserted I/O APIC inputs.
    pub fn ioapic_irq_lines(&self) -> IrqLines {
        self.asserted_lines(false)
    }

    /// Edge-mode fires on ISA lines since the last call.
    pub fn take_isa_pulses(&mut self) -> IrqLines {
        std::mem::take(&mut self.pulses_isa)
    }

    /// Edge-mode fires on I/O APIC inputs since the last call.
    pub fn take_ioapic_pulses(&mut self) -> IrqLines {
        std::mem::take(&mut self.pulses_ioapic)
    }

    fn fire(&mut self, index: usize) {
        let config = self.timers[index].config;
        if config & TN_LEVEL != 0 {
            // Level status is set even with the interrupt disabled (spec 2.3.9.2.2).
            self.status |= 1 << index;
            return;
        }
        if config & TN_INT_ENABLE == 0 {
            return;
        }
        match self.route(index) {
            Route::Isa(irq) => self.pulses_isa.set(irq, true),
            Route::IoApic(pin) => self.pulses_ioapic.set(pin, true),
        }
    }

    fn read_register(&self, register: u64) -> u64 {
        match register {
            0x000 => CAPABILITIES,
            0x010 => self.config,
            0x020 => self.status,
            0x0F0 => self.counter_at(self.now_ns),
            0x100..=0x15F => {
                let index = ((register - 0x100) / 0x20) as usize;
                let timer = &self.timers[index];
                match register & 0x1F {
                    0x00 => timer.config,
                    0x08 => timer.comparator & timer.modulus_mask(),
                    _ => 0, // FSB route: not supported
                }
            }
            _ => 0,
        }
    }

    fn write_register(&mut self, register: u64, value: u64) {
        match register {
            0x010 => self.write_config(value),
            0x020 => self.status &= !value, // write 1 to clear
            0x0F0 => {
                if self.enabled() {
                    tracing::debug!("hpet: main counter written while running");
                }
                self.counter_base = value;
                self.counter_base_ns = self.now_ns;
            }
            0x100..=0x15F => {
                let index = ((register - 0x100) / 0x20) as usize;
                if register & 0x1F == 0x00 {
                    self.write_timer_config(index, value);
                }
            }
            _ => {}
        }
    }

    fn write_config(&mut self, value: u64) {
        let counter = self.counter_at(self.now_ns);
        self.config = value & (CFG_ENABLE | CFG_LEGACY);
        // Starting or stopping the counter rebases it at the current value.
        self.counter_base = counter;
        self.counter_base_ns = self.now_ns;
    }

    fn write_timer_config(&mut self, index: usize, value: u64) {
        let timer = &mut self.timers[index];
        let fixed = TN_PERIODIC_CAP | TN_SIZE_64_CAP | TN_ROUTE_CAP;
        timer.config = (value & TN_WRITABLE) | fixed;
        if timer.config & TN_32BIT != 0 {
            timer.comparator &= 0xFFFF_FFFF;
        }
        if timer.config & TN_LEVEL == 0 {
            self.status &= !(1 << index);
        }
    }

    /// A comparator write covering `lanes` (the bytes the access touched). A periodic
    /// timer's write sets the period; with VAL_SET it also sets the accumulator (Linux
    /// writes VAL_SET + start value, then the period). Each 32-bit half updates only its
    /// own half, like QEMU's HPET, so 32-bit guests can program 64-bit timers.
    fn write_comparator(&mut self, index: usize, value: u64, lanes: u64) {
        let Some(timer) = self.timers.get_mut(index) else {
            return;
        };
        let lanes = lanes & timer.modulus_mask();
        let value = value & lanes;
        let periodic = timer.config & TN_PERIODIC != 0;
        if !periodic || timer.config & TN_VAL_SET != 0 {
            timer.comparator = (timer.comparator & !lanes) | value;
        }
        if periodic {
            timer.period = (timer.period & !lanes) | value;
        }
        timer.config &= !TN_VAL_SET;
    }
}

impl Mmio for Hpet {
    fn mmio_read(&mut self, offset: u64, size: u8) -> u64 {
        let value = self.read_register(offset & !7);
        (value >> ((offset & 7) * 8)) & size_mask(size)
    }

    fn mmio_write(&mut self, offset: u64, size: u8, value: u64) {
        let register = offset & !7;
        let shift = (offset & 7) * 8;
        let mask = size_mask(size).checked_shl(shift as u32).unwrap_or(0);
        let old = self.read_register(register);
        let merged = if register == 0x020 {
            // Status is write-1-to-clear: untouched bytes must write zeros.
            (value << shift) & mask
        } else {
            (old & !mask) | ((value << shift) & mask)
        };
        if (0x100..0x100 + 0x20 * TIMERS as u64).contains(&register) && register & 0x1F == 0x08 {
            let index = ((register - 0x100) / 0x20) as usize;
            self.write_comparator(index, value << shift, mask);
            return;
        }
        self.write_register(register, merged);
    }
}

impl Timed for Hpet {
    fn advance(&mut self, now_ns: u64) {
        if now_ns <= self.now_ns {
            return;
        }
        let from = self.counter_at(self.now_ns);
        let to = self.counter_at(now_ns);
        self.now_ns = now_ns;
        if !self.enabled() || to == from {
            return;
        }
        let elapsed = to.wrapping_sub(from);
        for index in 0..TIMERS {
            if self.timers[index].fires_within(from, elapsed) {
                self.fire(index);
                self.timers[index].rearm_periodic(to);
            }
        }
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        if !self.enabled() {
            return None;
        }
        let counter = self.counter_at(self.now_ns);
        self.timers
            .iter()
            .filter(|timer| timer.config & TN_INT_ENABLE != 0)
            .map(|timer| {
                let ticks = timer.ticks_until_fire(counter);
                let ns_since_base = (counter
                    .wrapping_sub(self.counter_base)
                    .saturating_add(ticks))
                .saturating_mul(NS_PER_TICK);
                self.counter_base_ns.saturating_add(ns_since_base)
            })
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timer_reg(index: u64, reg: u64) -> u64 {
        0x100 + index * 0x20 + reg
    }

    fn enable(hpet: &mut Hpet, legacy: bool) {
        hpet.mmio_write(0x010, 8, CFG_ENABLE | if legacy { CFG_LEGACY } else { 0 });
    }

    #[test]
    fn capabilities_and_counter() {
        let mut hpet = Hpet::new();
        assert_eq!(hpet.mmio_read(0x000, 4), 0x8086_A201);
        assert_eq!(hpet.mmio_read(0x004, 4), 100_000_000);
        assert_eq!(hpet.mmio_read(timer_reg(0, 0), 8), 0x00F0_0000_0000_0030);
        hpet.advance(1_000);
        assert_eq!(hpet.mmio_read(0x0F0, 8), 0, "halted counter");
        enable(&mut hpet, false);
        hpet.advance(1_000 + 12_345 * 100);
        assert_eq!(hpet.mmio_read(0x0F0, 8), 12_345);
        assert_eq!(hpet.mmio_read(0x0F0, 4), 12_345);
        hpet.mmio_write(0x010, 8, 0);
        hpet.advance(10_000_000);
        assert_eq!(hpet.mmio_read(0x0F0, 8), 12_345, "stopped again");
        hpet.mmio_write(0x0F0, 8, 0xFFFF_FFFF_0000_0000);
        assert_eq!(hpet.mmio_read(0x0F4, 4), 0xFFFF_FFFF);
    }

    #[test]
    fn one_shot_comparator_edge_via_ioapic() {
        let mut hpet = Hpet::new();
        hpet.mmio_write(timer_reg(2, 0), 8, TN_INT_ENABLE | (21 << TN_ROUTE_SHIFT));
        hpet.mmio_write(timer_reg(2, 8), 8, 500);
        enable(&mut hpet, false);
        assert_eq!(hpet.next_deadline_ns(), Some(50_000));
        hpet.advance(49_999);
        assert!(hpet.take_ioapic_pulses().is_empty());
        hpet.advance(50_000);
        assert_eq!(hpet.take_ioapic_pulses(), IrqLines::single(21));
        assert_eq!(hpet.mmio_read(0x020, 8), 0, "no status in edge mode");
        hpet.advance(1_000_000);
        assert!(hpet.take_ioapic_pulses().is_empty(), "one-shot");
        // A comparator in the past waits for the 64-bit wrap: effectively never.
        hpet.mmio_write(timer_reg(2, 8), 8, 5);
        let deadline = hpet.next_deadline_ns().expect("deadline");
        assert!(deadline > 1_000_000_000_000_000);
    }

    #[test]
    fn periodic_legacy_replacement_irq0() {
        let mut hpet = Hpet::new();
        // Linux's periodic setup: VAL_SET, accumulator, then period.
        hpet.mmio_write(timer_reg(0, 0), 8, TN_INT_ENABLE | TN_PERIODIC | TN_VAL_SET);
        hpet.mmio_write(timer_reg(0, 8), 8, 100_000);
        hpet.mmio_write(timer_reg(0, 8), 8, 100_000);
        enable(&mut hpet, true);
        assert!(hpet.legacy_replacement());
        assert_eq!(hpet.next_deadline_ns(), Some(10_000_000));
        hpet.advance(10_000_000);
        assert_eq!(hpet.take_isa_pulses(), IrqLines::single(0));
        assert_eq!(hpet.mmio_read(timer_reg(0, 8), 8), 200_000);
        assert_eq!(hpet.next_deadline_ns(), Some(20_000_000));
        // Missing several periods coalesces into one pulse and re-arms past now.
        hpet.advance(55_000_000);
        assert_eq!(hpet.take_isa_pulses(), IrqLines::single(0));
        assert_eq!(hpet.mmio_read(timer_reg(0, 8), 8), 600_000);
    }

    #[test]
    fn comparator_halves_and_period_semantics() {
        let mut hpet = Hpet::new();
        // One-shot 64-bit timer written as two 32-bit halves.
        hpet.mmio_write(timer_reg(1, 0), 4, TN_INT_ENABLE);
        hpet.mmio_write(timer_reg(1, 8), 4, 0x1234_5678);
        assert_eq!(hpet.mmio_read(timer_reg(1, 8), 8), 0xFFFF_FFFF_1234_5678);
        hpet.mmio_write(timer_reg(1, 0xC), 4, 0x1);
        assert_eq!(hpet.mmio_read(timer_reg(1, 8), 8), 0x0000_0001_1234_5678);
        // Periodic without VAL_SET: only the period changes.
        hpet.mmio_write(timer_reg(1, 0), 8, TN_INT_ENABLE | TN_PERIODIC);
        hpet.mmio_write(timer_reg(1, 8), 8, 500);
        assert_eq!(hpet.mmio_read(timer_reg(1, 8), 8), 0x0000_0001_1234_5678);
        assert_eq!(hpet.timers[1].period, 500);
        // VAL_SET applies to one write only.
        hpet.mmio_write(timer_reg(1, 0), 8, TN_INT_ENABLE | TN_PERIODIC | TN_VAL_SET);
        hpet.mmio_write(timer_reg(1, 8), 8, 1000);
        assert_eq!(hpet.mmio_read(timer_reg(1, 0), 8) & TN_VAL_SET, 0);
        hpet.mmio_write(timer_reg(1, 8), 8, 250);
        assert_eq!(hpet.mmio_read(timer_reg(1, 8), 8), 1000);
        assert_eq!(hpet.timers[1].period, 250);
        enable(&mut hpet, false);
        assert_eq!(hpet.next_deadline_ns(), Some(100_000));
        hpet.advance(100_000);
        assert_eq!(hpet.mmio_read(timer_reg(1, 8), 8), 1250);
    }

    #[test]
    fn level_mode_status_holds_line_until_cleared() {
        let mut hpet = Hpet::new();
        hpet.mmio_write(timer_reg(1, 0), 8, TN_LEVEL | TN_INT_ENABLE);
        hpet.mmio_write(timer_reg(1, 8), 8, 10);
        enable(&mut hpet, true);
        hpet.advance(1_000);
        assert_eq!(hpet.mmio_read(0x020, 8), 0b010);
        assert_eq!(hpet.isa_irq_lines(), IrqLines::single(8));
        assert!(hpet.ioapic_irq_lines().is_empty());
        hpet.mmio_write(0x020, 4, 0b001);
        assert_eq!(hpet.mmio_read(0x020, 8), 0b010, "writing 0 keeps the bit");
        hpet.mmio_write(0x020, 4, 0b010);
        assert!(hpet.isa_irq_lines().is_empty());
        // Without legacy replacement the same timer uses its I/O APIC route.
        hpet.mmio_write(
            timer_reg(1, 0),
            8,
            TN_LEVEL | TN_INT_ENABLE | (20 << TN_ROUTE_SHIFT),
        );
        hpet.mmio_write(0x010, 8, CFG_ENABLE);
        hpet.mmio_write(timer_reg(1, 8), 8, 200);
        hpet.advance(30_000);
        assert_eq!(hpet.ioapic_irq_lines(), IrqLines::single(20));
    }

    #[test]
    fn thirty_two_bit_mode_wraps() {
        let mut hpet = Hpet::new();
        hpet.mmio_write(0x0F0, 8, 0xFFFF_FF00);
        hpet.mmio_write(timer_reg(0, 0), 8, TN_INT_ENABLE | TN_32BIT);
        hpet.mmio_write(timer_reg(0, 8), 8, 0x1_0000_0010);
        assert_eq!(hpet.mmio_read(timer_reg(0, 8), 8), 0x10);
        enable(&mut hpet, false);
        assert_eq!(hpet.next_deadline_ns(), Some((0x100 + 0x10) * 100));
        hpet.advance((0x100 + 0x10) * 100);
        assert_eq!(hpet.take_ioapic_pulses(), IrqLines::single(0));
    }

    #[test]
    fn read_only_bits_and_garbage() {
        let mut hpet = Hpet::new();
        hpet.mmio_write(0x000, 8, 0);
        assert_eq!(hpet.mmio_read(0x000, 8), CAPABILITIES);
        hpet.mmio_write(timer_reg(0, 0), 8, u64::MAX);
        assert_eq!(
            hpet.mmio_read(timer_reg(0, 0), 8),
            TN_WRITABLE | TN_PERIODIC_CAP | TN_SIZE_64_CAP | TN_ROUTE_CAP
        );
        for offset in (0..0x400).step_by(4) {
            hpet.mmio_write(offset, 4, u64::from(u32::MAX));
            hpet.mmio_read(offset, 8);
        }
        hpet.advance(u64::MAX);
        let _ = hpet.next_deadline_ns();
    }
}
