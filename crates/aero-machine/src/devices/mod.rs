//! Legacy PC chipset device models, one device per file.
//!
//! Every model is a plain struct that knows nothing about the other devices; the machine
//! owns them all and wires them together. The conventions below are shared by all files:
//!
//! * **Port I/O** — [`PortIo`]: `io_read(port, size)` / `io_write(port, size, value)` take
//!   the *absolute* port number and an access size of 1, 2 or 4 bytes. Reads of bits that do
//!   not exist return ones (an open ISA bus floats high).
//! * **MMIO** — [`Mmio`]: `mmio_read(offset, size)` / `mmio_write(offset, size, value)` take
//!   the offset relative to the device's base address and a size of 1, 2, 4 or 8 bytes.
//! * **Time** — [`Timed`]: the machine owns a virtual clock in nanoseconds. `advance(now_ns)`
//!   brings the device up to `now_ns` (monotonic; calling it more or less often must give the
//!   same result), `next_deadline_ns()` says when the device next needs `advance` so the run
//!   loop can bound CPU slices. Devices never read host time. Tick counts are always derived
//!   from the absolute virtual time with exact integer arithmetic ([`ticks_at`],
//!   [`ns_for_ticks`]), so the result does not depend on how the run loop slices time.
//!   Register reads see the state as of the last `advance`, so the machine calls
//!   `advance(now)` on a timed device before dispatching a port/MMIO access to it.
//! * **Interrupts** — devices expose output line *levels* (`irq_level()`, or an [`IrqLines`]
//!   bitmask for devices with several lines). Edge-triggered ISA devices model the level of
//!   their output pin; the PIC/IOAPIC detect edges. Timers whose output may pulse for less
//!   time than a CPU slice (PIT mode 2, HPET edge mode) additionally latch the rising edges
//!   they produced; the machine drains them with `take_irq_pulses()` and, for each pulsed
//!   line, drives the interrupt controller input low then high before applying the level.
//! * **Requests to the machine** (reset, A20, power-off, IPIs, NMIs, EOI broadcasts) are
//!   state the machine polls with `take_*()` methods after an access.
//!
//! | file | device | ports / MMIO | lines |
//! |---|---|---|---|
//! | `pic.rs` | 8259A pair + ELCR | 0x20–21, 0xA0–A1, 0x4D0–4D1 | inputs IRQ0–15 |
//! | `pit.rs` | 8254 + port B | 0x40–43, 0x61 | IRQ0 (level + pulses) |
//! | `rtc.rs` | MC146818 + CMOS | 0x70–71 | IRQ8 |
//! | `serial.rs` | 16550A | 0x3F8–3FF (COM1) | IRQ4 |
//! | `i8042.rs` (+ `ps2*.rs`) | keyboard controller, PS/2 keyboard and mouse | 0x60, 0x64 | IRQ1, IRQ12 |
//! | `dma.rs` | 8237 pair + page registers | 0x00–0F, 0x81–8F, 0xC0–DE | — |
//! | `fdc.rs` | 82077AA floppy controller | 0x3F0–3F5, 0x3F7 | IRQ6 (level + pulses), DMA 2 |
//! | `port92.rs`, `reset_control.rs` | fast A20/reset, PIIX3 RCR | 0x92, 0xCF9 (byte) | — |
//! | `debug_port.rs`, `post_port.rs` | debug console, POST codes | 0xE9, 0x80 | — |
//! | `fw_cfg.rs` | QEMU fw_cfg (signature, no files: SeaBIOS's RAM above 4 GiB) | 0x510–0x511 | — |
//! | `lapic.rs` | local xAPIC (per CPU) | 0xFEE00000 | LINT0/1 in |
//! | `ioapic.rs` | 82093AA | 0xFEC00000 | inputs 0–23 |
//! | `hpet.rs` | HPET, 3 timers | 0xFED00000 (0x400) | ISA IRQ0/8 or IOAPIC 20–23 |
//! | `acpi_pm.rs` | ACPI PM1/PM timer/GPE0/SMI_CMD | 0xB000–0B00B, 0xAFE0–AFE3, 0xB2 | SCI (IRQ9) |
//! | `pci.rs` | config mechanism #1, ECAM, config space | 0xCF8, 0xCFC–CFF | — |
//! | `pc_pci.rs` | bus 0 of the `pc` machine behind 0xCF8/0xCFC and ECAM | 0xCF8, 0xCFC–CFF, ECAM at 0xE0000000 (256 MiB, buses 00–FF; decoded with our BIOS) | — |
//! | `i440fx.rs`, `piix3.rs`, `piix3_ide.rs`, `piix4_pm.rs` | chipset PCI functions | config space | PIRQA–D |
//! | `pci_device.rs` | the one way in for PCI devices (BARs, INTx/MSI, bus-master DMA) | BARs where the guest puts them | INTx via PIRQ |
//! | `e1000.rs` | Intel 82540EM NIC (8086:100E) | BAR0 128 KiB registers, BAR1 I/O window | INTA# |
//! | `usb/ehci.rs` (+ `usb/root_ports.rs`) | ICH9 EHCI (8086:293A, 00:1D.7) over six root ports shared with its companions | BAR0 1 KiB registers | INTD# |
//! | `usb/uhci.rs` (+ `usb/hid.rs`) | ICH9 UHCI companions (8086:2934/2935/2936, 00:1D.0–2) with HID tablet, keyboard, mouse | BAR4 32-byte I/O window | INTA#/INTB#/INTC# |
//! | `hda.rs` (+ `hda_codec.rs`) | Intel ICH6 HD Audio (8086:2668) with an output+input codec | BAR0 16 KiB registers | INTA# or MSI |
//! | `display_pci.rs` | the display function: AeroGPU (A3A0:0001) + VGA/VBE | BAR0 = AeroGPU regs, BAR2 = LFB, ROM BAR | INTA# |
#![allow(dead_code)]

pub mod acpi_pm;
pub mod ahci_pci;
pub mod debug_port;
pub mod display_pci;
pub mod dma;
pub mod e1000;
pub mod fdc;
pub mod fw_cfg;
pub mod hda;
pub mod hda_codec;
pub mod hpet;
pub mod i440fx;
pub mod i8042;
pub mod ioapic;
pub mod lapic;
pub mod pc_pci;
pub mod pci;
pub mod pci_device;
pub mod pic;
pub mod piix3;
pub mod piix3_ide;
pub mod piix4_pm;
pub mod pit;
pub mod port92;
pub mod post_port;
pub mod ps2;
pub mod ps2_keyboard;
pub mod ps2_mouse;
pub mod reset_control;
pub mod rtc;
pub mod serial;
pub mod usb;

#[cfg(test)]
mod platform_consistency_tests;
#[cfg(test)]
mod robustness_tests;
#[cfg(test)]
mod test_ram;

/// A device reachable through x86 port I/O.
pub trait PortIo {
    /// Reads `size` bytes (1, 2 or 4) from the absolute `port`.
    fn io_read(&mut self, port: u16, size: u8) -> u32;
    /// Writes the low `size` bytes (1, 2 or 4) of `value` to the absolute `port`.
    fn io_write(&mut self, port: u16, size: u8, value: u32);
}

/// A device reachable through memory-mapped I/O.
pub trait Mmio {
    /// Reads `size` bytes (1, 2, 4 or 8) at `offset` from the device base.
    fn mmio_read(&mut self, offset: u64, size: u8) -> u64;
    /// Writes the low `size` bytes of `value` at `offset` from the device base.
    fn mmio_write(&mut self, offset: u64, size: u8, value: u64);
}

/// A device driven by the machine's virtual clock.
pub trait Timed {
    /// Brings the device's state up to `now_ns` (monotonic virtual nanoseconds).
    fn advance(&mut self, now_ns: u64);
    /// Virtual time at which the device's state next changes on its own, if ever.
    fn next_deadline_ns(&self) -> Option<u64>;
}

/// A set of interrupt lines, bit `n` = line `n` (ISA IRQ or IOAPIC input, 0..=31).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IrqLines(pub u32);

impl IrqLines {
    pub const NONE: IrqLines = IrqLines(0);

    /// The set with only `line` (lines ≥ 32 are ignored).
    pub fn single(line: u8) -> IrqLines {
        IrqLines(1u32.checked_shl(u32::from(line)).unwrap_or(0))
    }
    pub fn contains(self, line: u8) -> bool {
        self.0.checked_shr(u32::from(line)).unwrap_or(0) & 1 != 0
    }
    pub fn set(&mut self, line: u8, on: bool) {
        let bit = IrqLines::single(line).0;
        if on {
            self.0 |= bit;
        } else {
            self.0 &= !bit;
        }
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// The line numbers in the set, lowest first.
    pub fn iter(self) -> impl Iterator<Item = u8> {
        (0u8..32).filter(move |&line| self.contains(line))
    }
}

impl core::ops::BitOr for IrqLines {
    type Output = IrqLines;
    fn bitor(self, rhs: IrqLines) -> IrqLines {
        IrqLines(self.0 | rhs.0)
    }
}

/// Reads a multi-byte access from a byte-wide device as consecutive byte reads, like an
/// 8-bit ISA bus splits wider cycles (little-endian).
pub(crate) fn read_bytes(port: u16, size: u8, mut read: impl FnMut(u16) -> u8) -> u32 {
    (0..size.clamp(1, 4)).fold(0u32, |value, i| {
        value | u32::from(read(port.wrapping_add(u16::from(i)))) << (8 * u32::from(i))
    })
}

/// Writes a multi-byte access to a byte-wide device as consecutive byte writes.
pub(crate) fn write_bytes(port: u16, size: u8, value: u32, mut write: impl FnMut(u16, u8)) {
    for i in 0..size.clamp(1, 4) {
        write(
            port.wrapping_add(u16::from(i)),
            (value >> (8 * u32::from(i))) as u8,
        );
    }
}

pub const NS_PER_SEC: u64 = 1_000_000_000;

/// Whole ticks of a `hz` clock (started at virtual time 0) that have elapsed at `ns`.
pub fn ticks_at(ns: u64, hz: u64) -> u64 {
    let ticks = u128::from(ns) * u128::from(hz) / u128::from(NS_PER_SEC);
    u64::try_from(ticks).unwrap_or(u64::MAX)
}

/// The earliest virtual time at which `ticks` ticks of a `hz` clock have elapsed
/// (the inverse of [`ticks_at`]); saturates at `u64::MAX`. `hz == 0` never ticks.
pub fn ns_for_ticks(ticks: u64, hz: u64) -> u64 {
    if hz == 0 {
        return u64::MAX;
    }
    let hz = u128::from(hz);
    let ns = (u128::from(ticks) * u128::from(NS_PER_SEC)).div_ceil(hz);
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// Mask of the low `size` bytes (sizes above 8 are treated as 8).
pub(crate) fn size_mask(size: u8) -> u64 {
    match size {
        0 => 0,
        1..=7 => (1u64 << (u32::from(size) * 8)) - 1,
        _ => u64::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_conversion_is_exact_and_inverse() {
        const PIT_HZ: u64 = 1_193_182;
        assert_eq!(ticks_at(NS_PER_SEC, PIT_HZ), PIT_HZ);
        assert_eq!(ticks_at(838, PIT_HZ), 0);
        assert_eq!(ticks_at(839, PIT_HZ), 1);
        assert_eq!(ns_for_ticks(1, PIT_HZ), 839);
        for t in [0u64, 1, 2, 65_535, 1_193_182, 9_999_999_999] {
            let ns = ns_for_ticks(t, PIT_HZ);
            assert_eq!(ticks_at(ns, PIT_HZ), t);
            assert_eq!(
                ticks_at(ns - u64::from(ns > 0), PIT_HZ),
                t.saturating_sub(1)
            );
        }
        assert_eq!(ns_for_ticks(u64::MAX, 1), u64::MAX);
        assert_eq!(ns_for_ticks(5, 0), u64::MAX);
    }

    #[test]
    fn irq_lines_set_and_iterate() {
        let mut lines = IrqLines::NONE;
        lines.set(1, true);
        lines.set(12, true);
        lines.set(40, true); // out of range: ignored
        assert_eq!(lines.0, (1 << 1) | (1 << 12));
        assert!(lines.contains(12) && !lines.contains(2) && !lines.contains(200));
        assert_eq!(lines.iter().collect::<Vec<_>>(), vec![1, 12]);
        lines.set(1, false);
        assert_eq!(lines, IrqLines::single(12));
        assert_eq!(size_mask(1), 0xFF);
        assert_eq!(size_mask(4), 0xFFFF_FFFF);
        assert_eq!(size_mask(8), u64::MAX);
    }
}
