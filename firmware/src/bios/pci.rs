//! PCI configuration mechanism #1 and POST's bus enumeration: BAR sizing and assignment,
//! decode enables, PIIX3 PIRQ routing and INTERRUPT_LINE.

use tracing::{debug, info, warn};

use super::host::FirmwareHost;

const CONFIG_ADDRESS: u16 = 0xCF8;
const CONFIG_DATA: u16 = 0xCFC;

/// ISA IRQs for PIRQA..PIRQD. Must be a subset of the IRQs the ACPI link devices offer.
pub const PIRQ_IRQS: [u8; 4] = [10, 10, 11, 11];
const IO_WINDOW: (u32, u32) = (0xC000, 0x1_0000);
/// 32-bit MMIO ends below the IOAPIC.
const MMIO_END: u64 = 0xFEC0_0000;

const VENDOR_INTEL: u16 = 0x8086;
const PIIX3_ISA: u16 = 0x7000;
const PIIX3_IDE: u16 = 0x7010;
const PIIX4_PM: u16 = 0x7113;

/// Bus/device/function packed as in PCI BIOS calls: bus << 8 | dev << 3 | fn.
pub type Bdf = u16;

pub fn bdf(bus: u8, dev: u8, func: u8) -> Bdf {
    (bus as u16) << 8 | ((dev as u16 & 0x1F) << 3) | (func as u16 & 7)
}

/// Config-space access through ports 0xCF8/0xCFC.
pub struct PciConfig<'h> {
    host: &'h mut dyn FirmwareHost,
}

impl<'h> PciConfig<'h> {
    pub fn new(host: &'h mut dyn FirmwareHost) -> PciConfig<'h> {
        PciConfig { host }
    }
    fn select(&mut self, bdf: Bdf, reg: u8) {
        self.host.io_write(
            CONFIG_ADDRESS,
            4,
            0x8000_0000 | (bdf as u32) << 8 | (reg & 0xFC) as u32,
        );
    }
    pub fn read32(&mut self, bdf: Bdf, reg: u8) -> u32 {
        self.select(bdf, reg);
        self.host.io_read(CONFIG_DATA, 4)
    }
    pub fn read16(&mut self, bdf: Bdf, reg: u8) -> u16 {
        self.select(bdf, reg);
        self.host.io_read(CONFIG_DATA + (reg & 2) as u16, 2) as u16
    }
    pub fn read8(&mut self, bdf: Bdf, reg: u8) -> u8 {
        self.select(bdf, reg);
        self.host.io_read(CONFIG_DATA + (reg & 3) as u16, 1) as u8
    }
    pub fn write32(&mut self, bdf: Bdf, reg: u8, v: u32) {
        self.select(bdf, reg);
        self.host.io_write(CONFIG_DATA, 4, v);
    }
    pub fn write16(&mut self, bdf: Bdf, reg: u8, v: u16) {
        self.select(bdf, reg);
        self.host
            .io_write(CONFIG_DATA + (reg & 2) as u16, 2, v as u32);
    }
    pub fn write8(&mut self, bdf: Bdf, reg: u8, v: u8) {
        self.select(bdf, reg);
        self.host
            .io_write(CONFIG_DATA + (reg & 3) as u16, 1, v as u32);
    }
    pub fn vendor(&mut self, bdf: Bdf) -> Option<u16> {
        let v = self.read16(bdf, 0);
        (v != 0xFFFF && v != 0).then_some(v)
    }

    /// Every present function on bus 0 in ascending order. Bridges are listed but their
    /// secondary buses are not scanned (the i440FX platform has one bus).
    pub fn functions(&mut self) -> Vec<Bdf> {
        let mut out = Vec::new();
        for dev in 0..32u8 {
            if self.vendor(bdf(0, dev, 0)).is_none() {
                continue;
            }
            let multi = self.read8(bdf(0, dev, 0), 0x0E) & 0x80 != 0;
            for func in 0..if multi { 8 } else { 1 } {
                if self.vendor(bdf(0, dev, func)).is_some() {
                    out.push(bdf(0, dev, func));
                }
            }
        }
        out
    }
}

use crate::tables::platform::pirq_for;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BarKind {
    Io,
    Mem32,
    Mem64,
}

#[derive(Clone, Copy, Debug)]
struct Bar {
    bdf: Bdf,
    reg: u8,
    kind: BarKind,
    size: u64,
    prefetchable: bool,
}

/// What enumeration found, for the PCI BIOS services.
#[derive(Clone, Debug, Default)]
pub struct PciSummary {
    pub last_bus: u8,
    pub functions: Vec<Bdf>,
    /// `(slot, pin)` with pin 0 = INTA for every function that uses an INTx pin.
    pub intx: Vec<(u8, u8)>,
}

/// POST: size and place every BAR, enable decoding, route interrupts. 64-bit BARs that do
/// not fit below 4 GiB go into `mmio64` (`start..end`).
pub fn enumerate(host: &mut dyn FirmwareHost, mmio_start: u64, mmio64: (u64, u64)) -> PciSummary {
    let mut pci = PciConfig::new(host);
    let functions = pci.functions();
    let mut bars = Vec::new();
    for &f in &functions {
        probe_bars(&mut pci, f, &mut bars);
    }
    // Largest first keeps natural alignment with no gaps; ties keep bus order.
    bars.sort_by_key(|b| std::cmp::Reverse(b.size));
    let mut io_next = IO_WINDOW.0 as u64;
    let mut mem_next = mmio_start;
    let mut high_next = mmio64.0;
    let mut enable: Vec<(Bdf, u16)> = Vec::new();
    for bar in &bars {
        let (addr, bit) = match bar.kind {
            BarKind::Io => match place(&mut io_next, bar.size.max(4), IO_WINDOW.1 as u64) {
                Some(a) => (a, 1u16),
                None => {
                    warn!(
                        bdf = bar.bdf,
                        reg = bar.reg,
                        size = bar.size,
                        "PCI I/O window exhausted"
                    );
                    continue;
                }
            },
            BarKind::Mem32 | BarKind::Mem64 => {
                let size = bar.size.max(16);
                match place(&mut mem_next, size, MMIO_END) {
                    Some(a) => (a, 2u16),
                    None if bar.kind == BarKind::Mem64 => {
                        match place(&mut high_next, size, mmio64.1) {
                            Some(a) => (a, 2u16),
                            None => continue,
                        }
                    }
                    None => {
                        warn!(
                            bdf = bar.bdf,
                            reg = bar.reg,
                            size = bar.size,
                            "PCI MMIO window exhausted"
                        );
                        continue;
                    }
                }
            }
        };
        debug!(
            bdf = bar.bdf,
            reg = bar.reg,
            addr,
            size = bar.size,
            prefetch = bar.prefetchable,
            "PCI BAR"
        );
        // I/O BARs may be 4-byte aligned: only their two type bits are kept.
        let flag_bits = if bar.kind == BarKind::Io { 0x3 } else { 0xF };
        let low_flags = pci.read32(bar.bdf, bar.reg) & flag_bits;
        pci.write32(bar.bdf, bar.reg, (addr as u32 & !flag_bits) | low_flags);
        if bar.kind == BarKind::Mem64 {
            pci.write32(bar.bdf, bar.reg + 4, (addr >> 32) as u32);
        }
        match enable.iter_mut().find(|(b, _)| *b == bar.bdf) {
            Some((_, bits)) => *bits |= bit,
            None => enable.push((bar.bdf, bit)),
        }
    }

    let intx = route_interrupts(&mut pci, &functions);
    for &f in &functions {
        let id = pci.read32(f, 0);
        let (vendor, device) = (id as u16, (id >> 16) as u16);
        let class = pci.read16(f, 0x0A);
        let mut bits = enable
            .iter()
            .find(|(b, _)| *b == f)
            .map_or(0, |(_, bits)| *bits);
        match class {
            // VGA answers legacy I/O and memory ranges without BARs.
            0x0300 => bits |= 3,
            // IDE in compatibility mode decodes the legacy ports.
            0x0101 => bits |= 1,
            _ => {}
        }
        if bits != 0 {
            bits |= 4; // bus master: harmless for targets, needed by DMA-capable devices
            let cmd = pci.read16(f, 0x04);
            pci.write16(f, 0x04, cmd | bits);
        }
        if vendor == VENDOR_INTEL && device == PIIX3_IDE {
            // IDETIM: enable decode of the primary and secondary channels.
            pci.write16(f, 0x40, 0x8000);
            pci.write16(f, 0x42, 0x8000);
        }
        if vendor == VENDOR_INTEL && device == PIIX4_PM {
            pci.write32(f, 0x40, 0xB000 | 1);
            let misc = pci.read8(f, 0x80);
            pci.write8(f, 0x80, misc | 1);
        }
        info!(
            "PCI {:02x}:{:02x}.{} {vendor:04x}:{device:04x} class {class:04x}",
            f >> 8,
            (f >> 3) & 0x1F,
            f & 7
        );
    }
    PciSummary {
        last_bus: 0,
        functions,
        intx,
    }
}

/// Next aligned address in a window, or `None` if it does not fit below `end`.
fn place(next: &mut u64, size: u64, end: u64) -> Option<u64> {
    if !size.is_power_of_two() {
        return None;
    }
    let addr = next.checked_add(size - 1)? & !(size - 1);
    let stop = addr.checked_add(size)?;
    if stop > end {
        return None;
    }
    *next = stop;
    Some(addr)
}

fn probe_bars(pci: &mut PciConfig, f: Bdf, out: &mut Vec<Bar>) {
    let header = pci.read8(f, 0x0E) & 0x7F;
    let count = match header {
        0 => 6,
        1 => 2,
        _ => 0,
    };
    // Decoding off while BARs hold all-ones.
    let cmd = pci.read16(f, 0x04);
    pci.write16(f, 0x04, cmd & !3);
    let mut i = 0;
    while i < count {
        let reg = 0x10 + 4 * i as u8;
        let orig = pci.read32(f, reg);
        pci.write32(f, reg, 0xFFFF_FFFF);
        let probed = pci.read32(f, reg);
        pci.write32(f, reg, orig);
        i += 1;
        if probed == 0 || probed == 0xFFFF_FFFF && orig == 0xFFFF_FFFF {
            continue;
        }
        if probed & 1 != 0 {
            let mask = (probed & !3) | 0xFFFF_0000;
            let size = (!mask).wrapping_add(1) as u64;
            if size != 0 {
                out.push(Bar {
                    bdf: f,
                    reg,
                    kind: BarKind::Io,
                    size,
                    prefetchable: false,
                });
            }
            continue;
        }
        let prefetchable = probed & 8 != 0;
        let mut mask = (probed & !0xF) as u64;
        let kind = if (probed >> 1) & 3 == 2 && i < count {
            let hi_reg = reg + 4;
            let hi_orig = pci.read32(f, hi_reg);
            pci.write32(f, hi_reg, 0xFFFF_FFFF);
            let hi = pci.read32(f, hi_reg);
            pci.write32(f, hi_reg, hi_orig);
            i += 1;
            mask |= (hi as u64) << 32;
            BarKind::Mem64
        } else {
            mask |= 0xFFFF_FFFF_0000_0000;
            BarKind::Mem32
        };
        let size = (!mask).wrapping_add(1);
        if size != 0 {
            out.push(Bar {
                bdf: f,
                reg,
                kind,
                size,
                prefetchable,
            });
        }
    }
    pci.write16(f, 0x04, cmd);
}

fn route_interrupts(pci: &mut PciConfig, functions: &[Bdf]) -> Vec<(u8, u8)> {
    let piix3 = functions
        .iter()
        .copied()
        .find(|&f| pci.read32(f, 0) == (PIIX3_ISA as u32) << 16 | VENDOR_INTEL as u32);
    match piix3 {
        Some(isa) => {
            for (i, irq) in PIRQ_IRQS.iter().enumerate() {
                pci.write8(isa, 0x60 + i as u8, *irq);
            }
            // PCI interrupts are level triggered: mark them in the ELCR.
            let mut elcr = [
                pci.host.io_read(0x4D0, 1) as u8,
                pci.host.io_read(0x4D1, 1) as u8,
            ];
            for irq in PIRQ_IRQS {
                elcr[(irq / 8) as usize] |= 1 << (irq % 8);
            }
            pci.host.io_write(0x4D0, 1, elcr[0] as u32);
            pci.host.io_write(0x4D1, 1, elcr[1] as u32);
        }
        None => warn!("no PIIX3 ISA bridge: PCI interrupt routing left alone"),
    }
    let mut intx = Vec::new();
    for &f in functions {
        let pin = pci.read8(f, 0x3D);
        if (1..=4).contains(&pin) {
            let slot = ((f >> 3) & 0x1F) as u8;
            let irq = PIRQ_IRQS[pirq_for(slot, pin - 1) as usize % 4];
            pci.write8(f, 0x3C, irq);
            if !intx.contains(&(slot, pin - 1)) {
                intx.push((slot, pin - 1));
            }
        }
    }
    intx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pirq_irqs_are_ones_the_acpi_links_offer() {
        for irq in PIRQ_IRQS {
            assert!(crate::tables::platform::PCI_LINK_IRQS.contains(&irq));
        }
    }

    #[test]
    fn placement_is_aligned_and_bounded() {
        let mut next = 0xC004;
        assert_eq!(place(&mut next, 0x20, 0x10000), Some(0xC020));
        assert_eq!(next, 0xC040);
        assert_eq!(place(&mut next, 0x10000, 0x10000), None);
        assert_eq!(
            place(&mut next, 3, 0x10000),
            None,
            "sizes are powers of two"
        );
        let mut high = u64::MAX - 10;
        assert_eq!(place(&mut high, 0x1000, u64::MAX), None, "no overflow");
    }
}
