//! Hostile-guest tests for every device: long deterministic pseudo-random sequences of
//! register accesses (any port or offset, any size, any value) interleaved with clock
//! advances. Besides "no panic", they check invariants the run loop relies on: a device's
//! deadline is never in the past after `advance`, and the PIC only hands out the spurious
//! vector when it said nothing was pending.

use super::acpi_pm::{AcpiPm, AcpiPmLayout};
use super::hpet::Hpet;
use super::i440fx::I440fxHostBridge;
use super::i8042::I8042;
use super::ioapic::IoApic;
use super::lapic::LocalApic;
use super::pci::{PciAddress, PciBus, PciConfigMechanism};
use super::pic::DualPic;
use super::piix3::Piix3IsaBridge;
use super::pit::Pit;
use super::rtc::Rtc;
use super::serial::{COM1_BASE, Serial};
use super::{Mmio, PortIo, Timed};

const STEPS: usize = 50_000;

/// xorshift64*: deterministic and good enough to reach odd corners.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
    /// Small, biased values hit command encodings more often than uniform ones.
    fn value(&mut self) -> u64 {
        match self.below(4) {
            0 => self.below(16),
            1 => self.below(256),
            2 => u64::MAX,
            _ => self.next(),
        }
    }
}

/// Random port traffic on `ports` with clock steps; checks the deadline invariant.
fn hammer_ports<D: PortIo + Timed + std::fmt::Debug>(
    device: &mut D,
    ports: &[u16],
    seed: u64,
    mut after_step: impl FnMut(&mut D),
) {
    let mut rng = Rng(seed);
    let mut now = 0u64;
    for _ in 0..STEPS {
        let port = rng.pick(ports);
        let size = rng.pick(&[1u8, 1, 1, 2, 4]);
        if rng.below(2) == 0 {
            device.io_read(port, size);
        } else {
            device.io_write(port, size, rng.value() as u32);
        }
        if rng.below(4) == 0 {
            now += rng.pick(&[1u64, 100, 10_000, 1_000_000, 100_000_000]);
            device.advance(now);
            if let Some(deadline) = device.next_deadline_ns() {
                assert!(
                    deadline > now,
                    "deadline {deadline} not after now {now}: {device:?}"
                );
            }
        }
        after_step(device);
    }
}

fn hammer_mmio<D: Mmio + Timed + std::fmt::Debug>(device: &mut D, span: u64, seed: u64) {
    let mut rng = Rng(seed);
    let mut now = 0u64;
    for _ in 0..STEPS {
        let offset = rng.below(span) & !rng.pick(&[0u64, 3, 7]);
        let size = rng.pick(&[1u8, 2, 4, 4, 8]);
        if rng.below(2) == 0 {
            device.mmio_read(offset, size);
        } else {
            device.mmio_write(offset, size, rng.value());
        }
        if rng.below(4) == 0 {
            now += rng.pick(&[1u64, 100, 10_000, 1_000_000]);
            device.advance(now);
            if let Some(deadline) = device.next_deadline_ns() {
                assert!(
                    deadline > now,
                    "deadline {deadline} not after now {now}: {device:?}"
                );
            }
        }
    }
}

#[test]
fn pit_survives_random_programming() {
    let mut pit = Pit::new();
    hammer_ports(&mut pit, &[0x40, 0x41, 0x42, 0x43, 0x61], 1, |pit| {
        pit.take_irq_pulses();
    });
}

#[test]
fn rtc_survives_random_programming() {
    let mut rtc = Rtc::new(1_700_000_000);
    hammer_ports(&mut rtc, &[0x70, 0x71, 0x71], 2, |_| {});
}

#[test]
fn i8042_survives_random_programming() {
    let mut controller = I8042::new();
    let mut rng = Rng(3);
    hammer_ports(&mut controller, &[0x60, 0x64], 4, |c| {
        match rng.below(8) {
            0 => c.key_event(&[rng.below(256) as u8]),
            1 => c.mouse_move(
                rng.next() as i32,
                rng.next() as i32,
                rng.next() as i32,
                rng.below(256) as u8,
            ),
            _ => {}
        }
        c.take_reset_request();
    });
}

#[test]
fn serial_survives_random_programming() {
    let mut uart = Serial::new(COM1_BASE);
    let ports: Vec<u16> = (COM1_BASE..COM1_BASE + 8).collect();
    let mut rng = Rng(5);
    for _ in 0..STEPS {
        let port = rng.pick(&ports);
        if rng.below(2) == 0 {
            uart.io_read(port, 1);
        } else {
            uart.io_write(port, 1, rng.value() as u32);
        }
        if rng.below(16) == 0 {
            uart.receive(&[rng.below(256) as u8; 7]);
        }
    }
    assert!(uart.take_output().len() <= STEPS);
}

#[test]
fn pic_survives_random_programming_and_keeps_spurious_rule() {
    let mut pic = DualPic::new();
    let mut rng = Rng(6);
    let ports = [0x20u16, 0x21, 0xA0, 0xA1, 0x4D0, 0x4D1];
    for _ in 0..STEPS {
        match rng.below(4) {
            0 => pic.set_irq(rng.below(20) as u8, rng.below(2) == 0),
            1 => {
                pic.io_read(rng.pick(&ports), 1);
            }
            2 => pic.io_write(rng.pick(&ports), 1, rng.value() as u32),
            _ => {
                let pending = pic.interrupt_pending();
                let vector = pic.acknowledge();
                if !pending {
                    assert_eq!(vector & 7, 7, "nothing pending must give a spurious vector");
                }
            }
        }
    }
}

#[test]
fn acpi_pm_survives_random_programming() {
    let mut pm = AcpiPm::new(AcpiPmLayout::default());
    let mut ports: Vec<u16> = (0xB000..0xB00C).collect();
    ports.extend([0xAFE0, 0xAFE1, 0xAFE2, 0xAFE3, 0xB2]);
    hammer_ports(&mut pm, &ports, 7, |pm| {
        pm.take_sleep_request();
    });
}

#[test]
fn lapic_survives_random_programming() {
    let mut lapic = LocalApic::new(0, true);
    hammer_mmio(&mut lapic, 0x1000, 8);
    for _ in 0..300 {
        lapic.acknowledge();
        lapic.mmio_write(0xB0, 4, 0);
        while lapic.take_ipi().is_some() {}
    }
}

#[test]
fn hpet_survives_random_programming() {
    let mut hpet = Hpet::new();
    hammer_mmio(&mut hpet, 0x400, 9);
}

#[test]
fn ioapic_survives_random_programming() {
    let mut ioapic = IoApic::new(1);
    let mut rng = Rng(10);
    for _ in 0..STEPS {
        match rng.below(4) {
            0 => ioapic.set_irq(rng.below(30) as u8, rng.below(2) == 0),
            1 => ioapic.end_of_interrupt(rng.below(256) as u8),
            2 => ioapic.mmio_write(
                rng.pick(&[0u64, 0x10, 0x20]),
                rng.pick(&[1, 4, 8]),
                rng.value(),
            ),
            _ => {
                ioapic.mmio_read(rng.pick(&[0u64, 0x10, 0x14]), 4);
                while ioapic.take_message().is_some() {}
            }
        }
    }
}

#[test]
fn pci_config_survives_random_accesses() {
    let mut bus = PciBus::new();
    bus.insert(PciAddress::new(0, 0, 0), Box::new(I440fxHostBridge::new()));
    bus.insert(PciAddress::new(0, 1, 0), Box::new(Piix3IsaBridge::new()));
    let mut mechanism = PciConfigMechanism::new();
    let mut rng = Rng(11);
    for _ in 0..STEPS {
        let port = rng.pick(&[0xCF8u16, 0xCFC, 0xCFD, 0xCFE, 0xCFF]);
        let size = rng.pick(&[1u8, 2, 4]);
        if rng.below(2) == 0 {
            mechanism.io_read(port, size, &mut bus);
        } else {
            // Keep the address mostly on bus 0, devices 0–1, so registers get hit.
            let value = if port == 0xCF8 {
                0x8000_0000 | (rng.below(2) << 11) as u32 | rng.below(256) as u32
            } else {
                rng.value() as u32
            };
            mechanism.io_write(port, size, value, &mut bus);
        }
    }
    let host = bus.get(PciAddress::new(0, 0, 0)).expect("host bridge");
    assert_eq!(
        host.config().u32_at(0),
        0x1237_8086,
        "IDs survive any write sequence"
    );
}

#[test]
fn dma_survives_random_programming_and_transfers() {
    let mut dma = super::dma::Dma8237::new();
    let mut ports: Vec<u16> = (0x00..0x10).chain(0x81..0x90).collect();
    ports.extend((0xC0..0xE0).step_by(2));
    let mut rng = Rng(12);
    for _ in 0..STEPS {
        let port = rng.pick(&ports);
        if rng.below(2) == 0 {
            dma.io_read(port, 1);
        } else {
            dma.io_write(port, 1, rng.value() as u32);
        }
        let channel = rng.below(9) as u8;
        if let Some(transfer) = dma.transfer(channel) {
            assert!(
                transfer.remaining >= transfer.unit
                    && transfer.remaining <= 0x10000 * transfer.unit
            );
            assert!(transfer.address < 1 << 24, "ISA DMA reaches 16 MiB at most");
            dma.complete(channel, rng.below(0x30000) as usize);
        }
    }
}
