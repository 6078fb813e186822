//! Intel 8254 programmable interval timer (ports 0x40–0x43) and the PC/AT system control
//! port B (0x61: channel 2 gate, speaker enable, refresh toggle, OUT2).
//!
//! Follows the Intel 8254 datasheet: three 16-bit counters, modes 0–5, binary or BCD
//! counting, LSB/MSB/LSB-then-MSB access, counter latch and read-back commands, and GATE
//! semantics (ch0/ch1 gates are tied high, ch2's gate is port 0x61 bit 0).
//!
//! The counters run at 1.193182 MHz derived from the machine's virtual nanosecond clock with
//! exact integer arithmetic: every counter value and output level is a pure function of the
//! absolute tick number, so results do not depend on how often `advance` is called.
//!
//! A count rewritten (without a control word) while a mode 2/3 counter runs takes effect
//! at the end of the current period, as the datasheet says; in the other modes it applies
//! at once. Simplification: in mode 3 with an odd count the read-back value is
//! approximate; OUT timing is exact (high for (N+1)/2 clocks, low for (N−1)/2).
//!
//! Interrupt: channel 0 OUT drives IRQ0. Rising edges of OUT0 are latched so short low
//! pulses (mode 2, mode 4) are never lost: see [`Pit::take_irq_pulses`].

use super::{IrqLines, PortIo, Timed, ns_for_ticks, read_bytes, ticks_at, write_bytes};

/// The 8254 input clock in Hz (14.31818 MHz / 12).
pub const PIT_HZ: u64 = 1_193_182;
/// DRAM refresh request period that toggles port 0x61 bit 4 (15.085 µs).
const REFRESH_TOGGLE_NS: u64 = 15_085;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Lsb,
    Msb,
    LsbMsb,
}

#[derive(Clone, Debug)]
struct Channel {
    mode: u8,
    bcd: bool,
    access: Access,
    /// Count written by the guest in binary, 1..=65536 (10000 in BCD).
    reload: u32,
    /// A full count has been written since the last control word.
    loaded: bool,
    /// Tick at which the current counting run started; `None` while stopped.
    base_tick: Option<u64>,
    /// Counter value at `base_tick` (modes 0/4 may resume mid-count after GATE low).
    base_count: u32,
    /// Modes 0/1/4/5: the terminal count already happened before `base_tick`.
    terminal_passed: bool,
    /// Value when stopped (shown by reads while not counting).
    frozen_value: u32,
    /// Modes 2/3: a count written while running takes effect at the end of the current
    /// period: `(tick of that boundary, new reload)`.
    pending_reload: Option<(u64, u32)>,
    gate: bool,
    gate_controllable: bool,
    lsb_written: Option<u8>,
    read_msb_next: bool,
    count_latch: Option<u16>,
    latch_msb_next: bool,
    status_latch: Option<u8>,
    null_count: bool,
}

impl Channel {
    fn new(gate_controllable: bool) -> Channel {
        Channel {
            mode: 3,
            bcd: false,
            access: Access::LsbMsb,
            reload: 0x10000,
            loaded: false,
            base_tick: None,
            base_count: 0x10000,
            terminal_passed: false,
            frozen_value: 0,
            pending_reload: None,
            gate: !gate_controllable,
            gate_controllable,
            lsb_written: None,
            read_msb_next: false,
            count_latch: None,
            latch_msb_next: false,
            status_latch: None,
            null_count: true,
        }
    }

    fn modulus(&self) -> u32 {
        if self.bcd { 10_000 } else { 0x10000 }
    }

    fn elapsed(&self, tick: u64) -> Option<u64> {
        self.base_tick.map(|base| tick.saturating_sub(base))
    }

    /// Periodic modes: the run (start tick, reload) in effect at `tick`, honouring a
    /// count that takes over at the next period boundary.
    fn periodic_run(&self, tick: u64) -> Option<(u64, u64)> {
        let base = self.base_tick?;
        match self.pending_reload {
            Some((switch, reload)) if tick >= switch => Some((switch, u64::from(reload.max(1)))),
            _ => Some((base, u64::from(self.reload.max(1)))),
        }
    }

    /// Applies a pending reload whose boundary has passed.
    fn settle(&mut self, tick: u64) {
        if let Some((switch, reload)) = self.pending_reload
            && tick >= switch
        {
            self.base_tick = Some(switch);
            self.reload = reload;
            self.base_count = reload;
            self.pending_reload = None;
        }
    }

    /// Raw (binary) counter value at `tick`, in 0..modulus.
    fn value(&self, tick: u64) -> u32 {
        let modulus = u64::from(self.modulus());
        if matches!(self.mode, 2 | 3)
            && let Some((base, reload)) = self.periodic_run(tick)
        {
            let elapsed = tick.saturating_sub(base);
            let value = if self.mode == 2 {
                reload - elapsed % reload
            } else {
                let high_len = reload.div_ceil(2);
                let phase = elapsed % reload;
                let in_half = if phase < high_len {
                    phase
                } else {
                    phase - high_len
                };
                (reload & !1).saturating_sub(2 * in_half)
            };
            return (value % modulus) as u32;
        }
        let Some(elapsed) = self.elapsed(tick) else {
            return self.frozen_value;
        };
        let reload = u64::from(self.reload.max(1));
        let value = match self.mode {
            2 => reload - elapsed % reload,
            3 => {
                let high_len = reload.div_ceil(2);
                let phase = elapsed % reload;
                let in_half = if phase < high_len {
                    phase
                } else {
                    phase - high_len
                };
                (reload & !1).saturating_sub(2 * in_half)
            }
            _ => {
                let start = u64::from(self.base_count);
                (start + modulus - elapsed % modulus) % modulus
            }
        };
        (value % modulus) as u32
    }

    /// Tick of the (single) terminal event in modes 0/1/4/5, relative to the base.
    fn terminal_offset(&self) -> u64 {
        u64::from(self.base_count)
    }

    /// OUT pin level at `tick`.
    fn out(&self, tick: u64) -> bool {
        let elapsed = self.elapsed(tick);
        let run = self.periodic_run(tick);
        match (self.mode, elapsed) {
            (0, None) => self.terminal_passed,
            (0, Some(e)) => self.terminal_passed || e >= self.terminal_offset(),
            (1, Some(e)) => e >= self.terminal_offset(),
            (2, Some(_)) => {
                run.is_none_or(|(base, reload)| (tick - base.min(tick)) % reload != reload - 1)
            }
            (3, Some(_)) => run
                .is_none_or(|(base, reload)| (tick - base.min(tick)) % reload < reload.div_ceil(2)),
            (4, Some(e)) | (5, Some(e)) => self.terminal_passed || e != self.terminal_offset(),
            _ => true,
        }
    }

    /// First tick strictly after `tick` at which OUT rises, if it ever does.
    fn next_rising_edge(&self, tick: u64) -> Option<u64> {
        let base = self.base_tick?;
        let candidate = match self.mode {
            2 | 3 => {
                // Before a pending switch the old period's boundaries apply; the switch
                // tick itself is one of them.
                let (base, reload) = self.periodic_run(tick)?;
                let periods = tick.saturating_sub(base) / reload + 1;
                base.checked_add(periods.checked_mul(reload)?)?
            }
            0 | 1 if !self.terminal_passed => base.checked_add(self.terminal_offset())?,
            4 | 5 if !self.terminal_passed => base.checked_add(self.terminal_offset() + 1)?,
            _ => return None,
        };
        (candidate > tick).then_some(candidate)
    }

    fn start(&mut self, tick: u64) {
        self.pending_reload = None;
        self.base_tick = Some(tick);
        self.base_count = self.reload;
        self.terminal_passed = false;
    }

    fn stop(&mut self, tick: u64) {
        if let Some(elapsed) = self.elapsed(tick) {
            self.frozen_value = self.value(tick);
            if let Some((_, reload)) = self.pending_reload.take() {
                self.reload = reload; // the latest count is used when counting resumes
            }
            if matches!(self.mode, 0 | 4) {
                // Keep counting state so a later GATE high resumes where it paused.
                let passed = match self.mode {
                    0 => elapsed >= self.terminal_offset(),
                    _ => elapsed > self.terminal_offset(),
                };
                let value = self.value(tick);
                self.terminal_passed |= passed;
                self.base_count = if self.terminal_passed {
                    value
                } else {
                    self.base_count.saturating_sub(elapsed as u32)
                };
            }
        }
        self.base_tick = None;
    }

    fn set_gate(&mut self, level: bool, tick: u64) {
        if !self.gate_controllable || level == self.gate {
            return;
        }
        self.gate = level;
        match (self.mode, level) {
            (0 | 4, false) => self.stop(tick),
            (0 | 4, true) if self.loaded => {
                self.base_tick = Some(tick);
            }
            (1 | 5, true) if self.loaded => self.start(tick),
            (2 | 3, false) => self.stop(tick),
            (2 | 3, true) if self.loaded => self.start(tick),
            _ => {}
        }
    }

    fn write_control(&mut self, value: u8, tick: u64) {
        let access = match (value >> 4) & 3 {
            0 => {
                if self.count_latch.is_none() {
                    self.count_latch = Some(self.display_value(tick));
                    self.latch_msb_next = false;
                }
                return;
            }
            1 => Access::Lsb,
            2 => Access::Msb,
            _ => Access::LsbMsb,
        };
        self.stop(tick);
        self.access = access;
        self.mode = match (value >> 1) & 7 {
            6 => 2,
            7 => 3,
            mode => mode,
        };
        self.bcd = value & 1 != 0;
        self.loaded = false;
        self.terminal_passed = false;
        self.null_count = true;
        self.lsb_written = None;
        self.read_msb_next = false;
        self.count_latch = None;
        self.status_latch = None;
    }

    fn write_count_byte(&mut self, byte: u8, tick: u64) {
        let count = match self.access {
            Access::Lsb => u16::from(byte),
            Access::Msb => u16::from(byte) << 8,
            Access::LsbMsb => match self.lsb_written.take() {
                None => {
                    self.lsb_written = Some(byte);
                    if self.mode == 0 {
                        // Writing the first byte stops a mode 0 count.
                        self.stop(tick);
                        self.terminal_passed = false;
                    }
                    return;
                }
                Some(lsb) => u16::from(lsb) | u16::from(byte) << 8,
            },
        };
        self.load_count(count, tick);
    }

    fn load_count(&mut self, count: u16, tick: u64) {
        let binary = if self.bcd {
            bcd_to_binary(count)
        } else {
            u32::from(count)
        };
        let new_reload = if binary == 0 { self.modulus() } else { binary };
        let was_loaded = std::mem::replace(&mut self.loaded, true);
        self.null_count = false;
        self.settle(tick);
        match self.mode {
            0 | 4 => {
                self.reload = new_reload;
                self.terminal_passed = false;
                self.base_count = new_reload;
                self.frozen_value = new_reload % self.modulus();
                self.base_tick = self.gate.then_some(tick);
            }
            1 | 5 => {
                // Used by the next GATE trigger; a running one-shot keeps its count.
                self.reload = new_reload;
                if self.base_tick.is_none() {
                    self.frozen_value = new_reload % self.modulus();
                }
            }
            _ => match self.periodic_run(tick) {
                Some((base, period)) if was_loaded && self.gate => {
                    // Already counting: the new count starts with the next period.
                    let boundary = base + (tick.saturating_sub(base) / period + 1) * period;
                    self.pending_reload = Some((boundary, new_reload));
                }
                _ => {
                    self.reload = new_reload;
                    if self.gate {
                        self.start(tick);
                    } else {
                        self.frozen_value = new_reload % self.modulus();
                    }
                }
            },
        }
    }

    fn display_value(&self, tick: u64) -> u16 {
        let value = self.value(tick);
        if self.bcd {
            binary_to_bcd(value)
        } else {
            value as u16
        }
    }

    fn status(&self, tick: u64) -> u8 {
        let access_bits = match self.access {
            Access::Lsb => 1,
            Access::Msb => 2,
            Access::LsbMsb => 3,
        };
        u8::from(self.out(tick)) << 7
            | u8::from(self.null_count) << 6
            | access_bits << 4
            | self.mode << 1
            | u8::from(self.bcd)
    }

    fn read_byte(&mut self, tick: u64) -> u8 {
        if let Some(status) = self.status_latch.take() {
            return status;
        }
        if let Some(latched) = self.count_latch {
            let (byte, done) = match self.access {
                Access::Lsb => (latched as u8, true),
                Access::Msb => ((latched >> 8) as u8, true),
                Access::LsbMsb if self.latch_msb_next => ((latched >> 8) as u8, true),
                Access::LsbMsb => (latched as u8, false),
            };
            self.latch_msb_next = !done;
            if done {
                self.count_latch = None;
            }
            return byte;
        }
        let value = self.display_value(tick);
        match self.access {
            Access::Lsb => value as u8,
            Access::Msb => (value >> 8) as u8,
            Access::LsbMsb => {
                self.read_msb_next = !self.read_msb_next;
                if self.read_msb_next {
                    value as u8
                } else {
                    (value >> 8) as u8
                }
            }
        }
    }
}

/// Binary value of a 4-digit BCD count; invalid digits are taken at face value and the
/// result clamped to the 10000 modulus.
fn bcd_to_binary(bcd: u16) -> u32 {
    let digits = [bcd & 0xF, (bcd >> 4) & 0xF, (bcd >> 8) & 0xF, bcd >> 12];
    let value: u32 = digits
        .iter()
        .rev()
        .fold(0, |acc, &d| acc * 10 + u32::from(d));
    value.min(10_000) % 10_000
}

fn binary_to_bcd(value: u32) -> u16 {
    let value = value % 10_000;
    ((value / 1000) << 12 | (value / 100 % 10) << 8 | (value / 10 % 10) << 4 | (value % 10)) as u16
}

/// The 8254 and port 0x61.
#[derive(Clone, Debug)]
pub struct Pit {
    channels: [Channel; 3],
    now_ns: u64,
    now_tick: u64,
    irq0_pulse: bool,
    /// Port 0x61 bits 1–3 (speaker data, parity/IOCHK check disables), kept for read-back.
    port61_latch: u8,
}

impl Default for Pit {
    fn default() -> Self {
        Self::new()
    }
}

impl Pit {
    /// Power-on state: no counter programmed, channel 2 gate low.
    pub fn new() -> Pit {
        Pit {
            channels: [Channel::new(false), Channel::new(false), Channel::new(true)],
            now_ns: 0,
            now_tick: 0,
            irq0_pulse: false,
            port61_latch: 0,
        }
    }

    /// Level of OUT0, i.e. the IRQ0 line.
    pub fn irq_level(&self) -> bool {
        self.channels[0].out(self.now_tick)
    }

    /// Rising edges of IRQ0 since the last call (as a set containing IRQ0 or empty).
    pub fn take_irq_pulses(&mut self) -> IrqLines {
        let pulsed = std::mem::take(&mut self.irq0_pulse);
        IrqLines(u32::from(pulsed))
    }

    /// Level of OUT2 (speaker / port 0x61 bit 5).
    pub fn out2(&self) -> bool {
        self.channels[2].out(self.now_tick)
    }

    /// PC speaker: `Some(frequency in Hz)` while the gate and speaker-data bits are on and
    /// channel 2 generates a square wave, for an audio device to play.
    pub fn speaker_tone_hz(&self) -> Option<u32> {
        let ch2 = &self.channels[2];
        let on = self.port61_latch & 0x02 != 0 && ch2.gate && ch2.loaded && ch2.mode == 3;
        on.then(|| (PIT_HZ / u64::from(ch2.reload.max(1))) as u32)
    }

    /// Runs `change` on a channel and latches an IRQ0 pulse if it raised OUT0.
    fn change_channel(&mut self, index: usize, change: impl FnOnce(&mut Channel, u64)) {
        let tick = self.now_tick;
        let before = self.channels[0].out(tick);
        if let Some(channel) = self.channels.get_mut(index) {
            change(channel, tick);
        }
        if !before && self.channels[0].out(tick) {
            self.irq0_pulse = true;
        }
    }

    fn read_back(&mut self, value: u8) {
        let tick = self.now_tick;
        for (index, channel) in self.channels.iter_mut().enumerate() {
            if value & (2 << index) == 0 {
                continue;
            }
            if value & 0x20 == 0 && channel.count_latch.is_none() {
                channel.count_latch = Some(channel.display_value(tick));
                channel.latch_msb_next = false;
            }
            if value & 0x10 == 0 && channel.status_latch.is_none() {
                channel.status_latch = Some(channel.status(tick));
            }
        }
    }

    fn port61(&self) -> u8 {
        let refresh = (self.now_ns / REFRESH_TOGGLE_NS) & 1 != 0;
        u8::from(self.channels[2].gate)
            | (self.port61_latch & 0x0E)
            | u8::from(refresh) << 4
            | u8::from(self.out2()) << 5
    }

    fn read_byte(&mut self, port: u16) -> u8 {
        let tick = self.now_tick;
        match port {
            0x40..=0x42 => match self.channels.get_mut(usize::from(port - 0x40)) {
                Some(channel) => channel.read_byte(tick),
                None => 0xFF,
            },
            0x61 => self.port61(),
            _ => 0xFF,
        }
    }

    fn write_byte(&mut self, port: u16, value: u8) {
        match port {
            0x40..=0x42 => self.change_channel(usize::from(port - 0x40), |ch, tick| {
                ch.write_count_byte(value, tick)
            }),
            0x43 => match value >> 6 {
                3 => self.read_back(value),
                index => self
                    .change_channel(usize::from(index), |ch, tick| ch.write_control(value, tick)),
            },
            0x61 => {
                self.port61_latch = value & 0x0E;
                self.change_channel(2, |ch, tick| ch.set_gate(value & 1 != 0, tick));
            }
            _ => {}
        }
    }
}

impl PortIo for Pit {
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        read_bytes(port, size, |p| self.read_byte(p))
    }

    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        write_bytes(port, size, value, |p, v| self.write_byte(p, v));
    }
}

impl Timed for Pit {
    fn advance(&mut self, now_ns: u64) {
        if now_ns <= self.now_ns {
            return;
        }
        let tick = ticks_at(now_ns, PIT_HZ);
        if self.channels[0]
            .next_rising_edge(self.now_tick)
            .is_some_and(|edge| edge <= tick)
        {
            self.irq0_pulse = true;
        }
        for channel in &mut self.channels {
            channel.settle(tick);
        }
        self.now_ns = now_ns;
        self.now_tick = tick;
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        let edge = self.channels[0].next_rising_edge(self.now_tick)?;
        Some(ns_for_ticks(edge, PIT_HZ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(ticks: u64) -> u64 {
        ns_for_ticks(ticks, PIT_HZ)
    }

    fn program(pit: &mut Pit, control: u8, count: u16) {
        pit.io_write(0x43, 1, u32::from(control));
        let port = 0x40 + u16::from(control >> 6);
        pit.io_write(port, 1, u32::from(count & 0xFF));
        pit.io_write(port, 1, u32::from(count >> 8));
    }

    fn latch_read(pit: &mut Pit, channel: u8) -> u16 {
        pit.io_write(0x43, 1, u32::from(channel << 6));
        let port = 0x40 + u16::from(channel);
        let lo = pit.io_read(port, 1) as u16;
        let hi = pit.io_read(port, 1) as u16;
        lo | hi << 8
    }

    #[test]
    fn mode2_counts_and_pulses_every_period() {
        let mut pit = Pit::new();
        program(&mut pit, 0x34, 1000); // ch0, lo/hi, mode 2
        assert!(pit.irq_level());
        pit.take_irq_pulses();
        assert_eq!(pit.next_deadline_ns(), Some(ns(1000)));
        pit.advance(ns(1));
        assert_eq!(latch_read(&mut pit, 0), 999);
        pit.advance(ns(999));
        assert_eq!(latch_read(&mut pit, 0), 1);
        assert!(!pit.irq_level(), "OUT low for the count of 1");
        assert!(pit.take_irq_pulses().is_empty());
        pit.advance(ns(1000));
        assert_eq!(latch_read(&mut pit, 0), 1000);
        assert!(pit.irq_level());
        assert_eq!(pit.take_irq_pulses(), IrqLines::single(0));
        assert_eq!(pit.next_deadline_ns(), Some(ns(2000)));
        // Skipping several periods at once still yields a pulse.
        pit.advance(ns(5500));
        assert_eq!(pit.take_irq_pulses(), IrqLines::single(0));
        assert_eq!(latch_read(&mut pit, 0), 500);
    }

    #[test]
    fn mode2_new_count_waits_for_the_period_end() {
        let mut pit = Pit::new();
        program(&mut pit, 0x34, 1000);
        pit.advance(ns(300));
        // Rewrite the count only (no control word): takes effect at tick 1000.
        pit.io_write(0x40, 1, 100);
        pit.io_write(0x40, 1, 0);
        assert_eq!(pit.next_deadline_ns(), Some(ns(1000)));
        pit.advance(ns(400));
        assert_eq!(latch_read(&mut pit, 0), 600, "old period still counting");
        pit.take_irq_pulses();
        pit.advance(ns(1000));
        assert_eq!(pit.take_irq_pulses(), IrqLines::single(0));
        assert_eq!(
            latch_read(&mut pit, 0),
            100,
            "new count loaded at the boundary"
        );
        assert_eq!(pit.next_deadline_ns(), Some(ns(1100)));
        pit.advance(ns(1150));
        assert_eq!(latch_read(&mut pit, 0), 50);
        // A control word restarts immediately.
        program(&mut pit, 0x34, 500);
        assert_eq!(pit.next_deadline_ns(), Some(ns(1150 + 500)));
    }

    #[test]
    fn mode3_square_wave_halves() {
        let mut pit = Pit::new();
        program(&mut pit, 0x36, 10);
        pit.advance(ns(4));
        assert!(pit.irq_level());
        assert_eq!(latch_read(&mut pit, 0), 2);
        pit.advance(ns(5));
        assert!(!pit.irq_level());
        assert_eq!(latch_read(&mut pit, 0), 10);
        pit.advance(ns(9));
        assert!(!pit.irq_level());
        pit.take_irq_pulses();
        pit.advance(ns(10));
        assert!(pit.irq_level());
        assert_eq!(pit.take_irq_pulses(), IrqLines::single(0));
        // Odd count 5: high 3 clocks, low 2.
        program(&mut pit, 0x36, 5);
        let base = pit.now_tick;
        pit.advance(ns(base + 2));
        assert!(pit.irq_level());
        pit.advance(ns(base + 3));
        assert!(!pit.irq_level());
        pit.advance(ns(base + 5));
        assert!(pit.irq_level());
    }

    #[test]
    fn bios_default_18_2_hz() {
        let mut pit = Pit::new();
        program(&mut pit, 0x36, 0); // 0 = 65536
        assert_eq!(pit.next_deadline_ns(), Some(ns(65536)));
        assert_eq!(ns(65536), 54_925_402);
        pit.advance(ns(65536 / 2));
        assert!(!pit.irq_level());
    }

    #[test]
    fn mode0_interrupt_on_terminal_count() {
        let mut pit = Pit::new();
        pit.io_write(0x43, 1, 0x30);
        assert!(!pit.irq_level(), "mode 0 OUT goes low on the control word");
        pit.io_write(0x40, 1, 100);
        pit.advance(ns(50));
        assert_eq!(
            latch_read(&mut pit, 0),
            0,
            "first byte of lo/hi stops counting"
        );
        pit.io_write(0x40, 1, 0);
        let base = pit.now_tick;
        pit.advance(ns(base + 99));
        assert!(!pit.irq_level());
        assert_eq!(latch_read(&mut pit, 0), 1);
        assert_eq!(pit.next_deadline_ns(), Some(ns(base + 100)));
        pit.advance(ns(base + 100));
        assert!(pit.irq_level());
        assert_eq!(pit.take_irq_pulses(), IrqLines::single(0));
        pit.advance(ns(base + 102));
        assert_eq!(
            latch_read(&mut pit, 0),
            0xFFFE,
            "counter wraps after terminal count"
        );
        assert!(pit.irq_level(), "OUT stays high");
        assert_eq!(pit.next_deadline_ns(), None);
    }

    #[test]
    fn mode4_linux_oneshot_strobe() {
        let mut pit = Pit::new();
        program(&mut pit, 0x38, 20);
        pit.take_irq_pulses();
        let base = pit.now_tick;
        assert_eq!(pit.next_deadline_ns(), Some(ns(base + 21)));
        pit.advance(ns(base + 20));
        assert!(!pit.irq_level());
        pit.advance(ns(base + 21));
        assert!(pit.irq_level());
        assert_eq!(pit.take_irq_pulses(), IrqLines::single(0));
        pit.advance(ns(base + 100_000));
        assert!(pit.take_irq_pulses().is_empty(), "one strobe only");
    }

    #[test]
    fn channel2_gate_and_port61() {
        let mut pit = Pit::new();
        // Linux PIT calibration: gate high, speaker off, ch2 mode 0.
        pit.io_write(0x61, 1, 0x01);
        program(&mut pit, 0xB0, 0x2E9B);
        assert_eq!(pit.io_read(0x61, 1) & 0x21, 0x01, "OUT2 low while counting");
        pit.advance(ns(0x2E9B - 1));
        assert_eq!(pit.io_read(0x61, 1) & 0x20, 0);
        pit.advance(ns(0x2E9B));
        assert_eq!(pit.io_read(0x61, 1) & 0x20, 0x20);
        // Gate low pauses a mode 0 count.
        program(&mut pit, 0xB0, 100);
        let base = pit.now_tick;
        pit.advance(ns(base + 30));
        pit.io_write(0x61, 1, 0x00);
        pit.advance(ns(base + 1000));
        assert_eq!(latch_read(&mut pit, 2), 70);
        pit.io_write(0x61, 1, 0x01);
        let resume = pit.now_tick;
        pit.advance(ns(resume + 69));
        assert!(!pit.out2());
        pit.advance(ns(resume + 70));
        assert!(pit.out2());
    }

    #[test]
    fn port61_refresh_toggle_and_speaker() {
        let mut pit = Pit::new();
        assert_eq!(pit.io_read(0x61, 1) & 0x10, 0);
        pit.advance(15_085);
        assert_eq!(pit.io_read(0x61, 1) & 0x10, 0x10);
        pit.advance(30_170);
        assert_eq!(pit.io_read(0x61, 1) & 0x10, 0);
        program(&mut pit, 0xB6, 1193);
        assert_eq!(pit.speaker_tone_hz(), None);
        pit.io_write(0x61, 1, 0x03);
        assert_eq!(pit.speaker_tone_hz(), Some(1000));
        assert_eq!(pit.io_read(0x61, 1) & 0x0F, 0x03);
    }

    #[test]
    fn mode1_needs_gate_trigger() {
        let mut pit = Pit::new();
        program(&mut pit, 0xB2, 10); // ch2 mode 1
        assert!(pit.out2());
        pit.advance(ns(100));
        assert!(pit.out2(), "no trigger yet");
        pit.io_write(0x61, 1, 0x01);
        let base = pit.now_tick;
        assert!(!pit.out2());
        pit.advance(ns(base + 9));
        assert!(!pit.out2());
        pit.advance(ns(base + 10));
        assert!(pit.out2());
    }

    #[test]
    fn lsb_msb_only_access_and_bcd() {
        let mut pit = Pit::new();
        pit.io_write(0x43, 1, 0x14); // ch0 lsb only, mode 2
        pit.io_write(0x40, 1, 50);
        pit.advance(ns(10));
        assert_eq!(pit.io_read(0x40, 1), 40);
        pit.io_write(0x43, 1, 0x25); // ch0 msb only, mode 2, BCD
        pit.io_write(0x40, 1, 0x12); // 1200 decimal
        let base = pit.now_tick;
        pit.advance(ns(base + 1));
        assert_eq!(pit.io_read(0x40, 1), 0x11, "MSB of BCD 1199");
        pit.io_write(0x43, 1, 0x00);
        pit.io_write(0x43, 1, 0x35); // back to lo/hi, BCD mode 2
        pit.io_write(0x40, 1, 0x00);
        pit.io_write(0x40, 1, 0x00); // 0 = 10000 in BCD
        let base = pit.now_tick;
        pit.advance(ns(base + 1));
        assert_eq!(latch_read(&mut pit, 0), 0x9999);
        assert_eq!(pit.next_deadline_ns(), Some(ns(base + 10_000)));
    }

    #[test]
    fn read_back_status_and_count() {
        let mut pit = Pit::new();
        pit.io_write(0x43, 1, 0x74); // ch1, lo/hi, mode 2
        pit.io_write(0x43, 1, 0xE4); // read-back status of ch1
        assert_eq!(
            pit.io_read(0x41, 1),
            0x40 | 0x80 | 0x30 | 0x04,
            "null count, OUT high"
        );
        pit.io_write(0x41, 1, 0x34);
        pit.io_write(0x41, 1, 0x12);
        pit.advance(ns(0x34));
        pit.io_write(0x43, 1, 0xC4); // latch count and status of ch1
        assert_eq!(pit.io_read(0x41, 1), 0x80 | 0x30 | 0x04, "status first");
        pit.advance(ns(0x100));
        assert_eq!(pit.io_read(0x41, 1), 0x00);
        assert_eq!(
            pit.io_read(0x41, 1),
            0x12,
            "latched value, not the live one"
        );
        // Latch holds until read even if latched again.
        pit.io_write(0x43, 1, 0x40);
        pit.advance(ns(0x200));
        pit.io_write(0x43, 1, 0x40);
        let lo = pit.io_read(0x41, 1);
        let hi = pit.io_read(0x41, 1);
        assert_eq!(lo | hi << 8, 0x1234 - 0x100);
    }

    #[test]
    fn unprogrammed_and_bogus_accesses_are_harmless() {
        let mut pit = Pit::new();
        assert_eq!(pit.next_deadline_ns(), None);
        assert_eq!(pit.io_read(0x43, 1), 0xFF);
        pit.io_write(0x43, 1, 0xFF);
        pit.io_write(0x42, 4, 0xFFFF_FFFF);
        program(&mut pit, 0x34, 1); // count 1 in mode 2 (illegal but must not panic)
        pit.advance(u64::MAX);
        let _ = pit.next_deadline_ns();
        assert_eq!(bcd_to_binary(0xFFFF), 0);
        assert_eq!(binary_to_bcd(9876), 0x9876);
    }
}
