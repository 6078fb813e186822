//! Intel 82093AA I/O APIC (MMIO at 0xFEC00000), 24 inputs.
//!
//! Follows the 82093AA datasheet: IOREGSEL (offset 0x00) / IOWIN (offset 0x10) indirect
//! access to ID (0x00), version (0x01: version 0x11, 24 entries), arbitration ID (0x02)
//! and the redirection table (0x10–0x3F). Edge-triggered inputs send one message per
//! rising edge while unmasked (a masked edge is lost); level-triggered inputs send while
//! asserted, set Remote IRR, and send again after the local APIC's EOI broadcast if the
//! line is still asserted.
//!
//! Input levels passed to [`IoApic::set_irq`] are *asserted* states: the polarity bit is
//! stored for the guest but not applied (like QEMU), because the machine's interrupt
//! sources model assertion, not electrical levels. Messages wait in a per-pin pending set
//! (bounded by construction) until the machine routes them with [`IoApic::take_message`].

use super::Mmio;
use super::lapic::DeliveryMode;

pub const DEFAULT_BASE: u64 = 0xFEC0_0000;
pub const PINS: usize = 24;
const VERSION: u32 = 0x0017_0011;

const ENTRY_MASKED: u64 = 1 << 16;
const ENTRY_LEVEL: u64 = 1 << 15;
const ENTRY_REMOTE_IRR: u64 = 1 << 14;
const ENTRY_DELIVERY_STATUS: u64 = 1 << 12;
/// Bits the guest can write (delivery status and remote IRR are read-only).
const ENTRY_WRITABLE: u64 = 0xFF00_0000_0001_AFFF;

/// An interrupt message for the local APIC(s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoApicMessage {
    pub pin: u8,
    pub vector: u8,
    pub mode: DeliveryMode,
    pub logical: bool,
    pub destination: u8,
    pub level_triggered: bool,
}

/// The I/O APIC.
#[derive(Clone, Debug)]
pub struct IoApic {
    id: u8,
    select: u8,
    entries: [u64; PINS],
    /// Asserted input lines.
    levels: u32,
    /// Pins with a message waiting to be taken.
    pending: u32,
}

impl Default for IoApic {
    fn default() -> Self {
        Self::new(0)
    }
}

impl IoApic {
    /// An I/O APIC with APIC ID `id` (firmware usually gives it the ID after the CPUs).
    pub fn new(id: u8) -> IoApic {
        IoApic {
            id: id & 0x0F,
            select: 0,
            entries: [ENTRY_MASKED; PINS],
            levels: 0,
            pending: 0,
        }
    }

    /// Drives input `pin` (0–23) to `asserted`.
    pub fn set_irq(&mut self, pin: u8, asserted: bool) {
        let Some(&entry) = self.entries.get(usize::from(pin)) else {
            return;
        };
        let bit = 1u32 << pin;
        let rising = asserted && self.levels & bit == 0;
        if asserted {
            self.levels |= bit;
        } else {
            self.levels &= !bit;
        }
        if entry & ENTRY_LEVEL == 0 {
            if rising && entry & ENTRY_MASKED == 0 {
                self.pending |= bit;
            }
        } else {
            self.update_level_pin(usize::from(pin));
        }
    }

    /// Level pins: a message is due while asserted, unmasked and not awaiting EOI.
    fn update_level_pin(&mut self, pin: usize) {
        let Some(&entry) = self.entries.get(pin) else {
            return;
        };
        let bit = 1u32 << pin;
        let due = entry & ENTRY_LEVEL != 0
            && self.levels & bit != 0
            && entry & ENTRY_MASKED == 0
            && entry & ENTRY_REMOTE_IRR == 0;
        if due {
            self.pending |= bit;
        } else if entry & ENTRY_LEVEL != 0 {
            self.pending &= !bit;
        }
    }

    /// The next message to route, lowest pin first.
    pub fn take_message(&mut self) -> Option<IoApicMessage> {
        if self.pending == 0 {
            return None;
        }
        let pin = self.pending.trailing_zeros() as usize;
        self.pending &= !(1 << pin);
        let entry = self.entries.get_mut(pin)?;
        let level_triggered = *entry & ENTRY_LEVEL != 0;
        if level_triggered {
            *entry |= ENTRY_REMOTE_IRR;
        }
        Some(IoApicMessage {
            pin: pin as u8,
            vector: *entry as u8,
            mode: DeliveryMode::from_bits((*entry >> 8) as u32),
            logical: *entry & (1 << 11) != 0,
            destination: (*entry >> 56) as u8,
            level_triggered,
        })
    }

    /// Whether any message is waiting (cheap check for the run loop).
    pub fn has_message(&self) -> bool {
        self.pending != 0
    }

    /// A local APIC's EOI for a level-triggered `vector`: clears Remote IRR on matching pins.
    pub fn end_of_interrupt(&mut self, vector: u8) {
        for pin in 0..PINS {
            let entry = self.entries[pin];
            if entry & ENTRY_REMOTE_IRR != 0 && entry as u8 == vector {
                self.entries[pin] &= !ENTRY_REMOTE_IRR;
                self.update_level_pin(pin);
            }
        }
    }

    fn read_register(&self, index: u8) -> u32 {
        match index {
            0x00 => u32::from(self.id) << 24,
            0x01 => VERSION,
            0x02 => u32::from(self.id) << 24,
            0x10..=0x3F => {
                let entry = self.entries[usize::from((index - 0x10) / 2)];
                if index & 1 == 0 {
                    entry as u32
                } else {
                    (entry >> 32) as u32
                }
            }
            _ => 0,
        }
    }

    fn write_register(&mut self, index: u8, value: u32) {
        match index {
            0x00 => self.id = ((value >> 24) & 0x0F) as u8,
            0x10..=0x3F => {
                let pin = usize::from((index - 0x10) / 2);
                let old = self.entries[pin];
                let merged = if index & 1 == 0 {
                    (old & 0xFFFF_FFFF_0000_0000) | u64::from(value)
                } else {
                    (old & 0x0000_0000_FFFF_FFFF) | u64::from(value) << 32
                };
                let read_only = old & (ENTRY_REMOTE_IRR | ENTRY_DELIVERY_STATUS);
                let mut entry = (merged & ENTRY_WRITABLE) | read_only;
                if entry & ENTRY_LEVEL == 0 {
                    entry &= !ENTRY_REMOTE_IRR; // only meaningful for level pins
                    if entry & ENTRY_MASKED != 0 {
                        self.pending &= !(1 << pin);
                    }
                }
                self.entries[pin] = entry;
                self.update_level_pin(pin);
            }
            _ => {}
        }
    }
}

impl Mmio for IoApic {
    fn mmio_read(&mut self, offset: u64, size: u8) -> u64 {
        let value = match offset & !3 {
            0x00 => u32::from(self.select),
            0x10 => self.read_register(self.select),
            _ => 0,
        };
        let shift = (offset & 3) * 8;
        (u64::from(value) >> shift) & super::size_mask(size)
    }

    fn mmio_write(&mut self, offset: u64, size: u8, value: u64) {
        match offset {
            0x00 => self.select = value as u8,
            0x10 if size >= 4 => self.write_register(self.select, value as u32),
            _ => tracing::debug!(offset, size, "ioapic: unsupported write ignored"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_entry(io: &mut IoApic, pin: u8, entry: u64) {
        io.mmio_write(0x00, 4, u64::from(0x10 + pin * 2));
        io.mmio_write(0x10, 4, entry & 0xFFFF_FFFF);
        io.mmio_write(0x00, 4, u64::from(0x11 + pin * 2));
        io.mmio_write(0x10, 4, entry >> 32);
    }

    fn read_reg(io: &mut IoApic, index: u8) -> u32 {
        io.mmio_write(0x00, 1, u64::from(index));
        io.mmio_read(0x10, 4) as u32
    }

    #[test]
    fn identification_registers() {
        let mut io = IoApic::new(2);
        assert_eq!(read_reg(&mut io, 0x00), 0x0200_0000);
        assert_eq!(read_reg(&mut io, 0x01), 0x0017_0011);
        assert_eq!(read_reg(&mut io, 0x10), 0x0001_0000, "masked at reset");
        io.mmio_write(0x00, 1, 0x00);
        io.mmio_write(0x10, 4, 0x0500_0000);
        assert_eq!(read_reg(&mut io, 0x00), 0x0500_0000);
        assert_eq!(io.mmio_read(0x00, 1), 0x00);
        assert_eq!(read_reg(&mut io, 0x40), 0);
    }

    #[test]
    fn edge_pin_sends_one_message_per_rising_edge() {
        let mut io = IoApic::new(0);
        write_entry(&mut io, 2, 0x0300_0000_0000_0830); // logical dest 3, vector 0x30
        io.set_irq(2, true);
        let msg = io.take_message().expect("message");
        assert_eq!(
            msg,
            IoApicMessage {
                pin: 2,
                vector: 0x30,
                mode: DeliveryMode::Fixed,
                logical: true,
                destination: 3,
                level_triggered: false
            }
        );
        io.set_irq(2, true);
        assert_eq!(io.take_message(), None, "no new edge");
        io.set_irq(2, false);
        io.set_irq(2, true);
        assert!(io.take_message().is_some());
    }

    #[test]
    fn masked_edge_is_lost() {
        let mut io = IoApic::new(0);
        write_entry(&mut io, 4, 0x0001_0034);
        io.set_irq(4, true);
        io.set_irq(4, false);
        write_entry(&mut io, 4, 0x0000_0034);
        assert_eq!(io.take_message(), None);
    }

    #[test]
    fn level_pin_remote_irr_and_eoi() {
        let mut io = IoApic::new(0);
        write_entry(&mut io, 11, 0x0000_A041); // level, active low, vector 0x41
        io.set_irq(11, true);
        let msg = io.take_message().expect("message");
        assert!(msg.level_triggered);
        assert_eq!(
            read_reg(&mut io, 0x10 + 22) & (1 << 14),
            1 << 14,
            "remote IRR set"
        );
        assert_eq!(io.take_message(), None, "no resend before EOI");
        io.end_of_interrupt(0x41);
        assert_eq!(
            io.take_message().map(|m| m.pin),
            Some(11),
            "still asserted: resend"
        );
        io.set_irq(11, false);
        io.end_of_interrupt(0x41);
        assert_eq!(io.take_message(), None);
        assert_eq!(read_reg(&mut io, 0x10 + 22) & (1 << 14), 0);
        // Remote IRR cannot be written by the guest.
        write_entry(&mut io, 11, 0x0000_E041);
        assert_eq!(read_reg(&mut io, 0x10 + 22) & (1 << 14), 0);
    }

    #[test]
    fn unmasking_an_asserted_level_pin_delivers() {
        let mut io = IoApic::new(0);
        write_entry(&mut io, 16, 0x0001_8050);
        io.set_irq(16, true);
        assert!(!io.has_message());
        write_entry(&mut io, 16, 0x0000_8050);
        assert_eq!(io.take_message().map(|m| m.vector), Some(0x50));
    }

    #[test]
    fn lowest_pin_first_and_bad_pins_ignored() {
        let mut io = IoApic::new(0);
        write_entry(&mut io, 1, 0x31);
        write_entry(&mut io, 12, 0x3C);
        io.set_irq(12, true);
        io.set_irq(1, true);
        io.set_irq(24, true);
        io.set_irq(255, true);
        assert_eq!(io.take_message().map(|m| m.pin), Some(1));
        assert_eq!(io.take_message().map(|m| m.pin), Some(12));
        assert_eq!(io.take_message(), None);
        for index in 0..=255u8 {
            io.mmio_write(0, 1, u64::from(index));
            io.mmio_write(0x10, 4, 0xFFFF_FFFF);
            io.mmio_read(0x10, 8);
        }
    }
}
