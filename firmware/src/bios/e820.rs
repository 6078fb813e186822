//! The physical memory map reported through INT 15h E820/E801/88h and the places POST
//! uses (EBDA, ACPI tables at the top of low RAM).

use super::config::BiosConfig;
use super::error::FirmwareError;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const FOUR_GIB: u64 = 1 << 32;
/// Size of the EBDA at the top of conventional memory.
pub const EBDA_SIZE: u64 = KIB;
/// Room for the ACPI tables at the top of low RAM: the first page holds the FACS (ACPI
/// NVS, the OS writes the waking vector there), the rest is reclaimable.
pub const ACPI_NVS_SIZE: u64 = 4 * KIB;
pub const ACPI_RECLAIM_SIZE: u64 = 124 * KIB;
pub const ACPI_REGION_SIZE: u64 = ACPI_NVS_SIZE + ACPI_RECLAIM_SIZE;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u32)]
pub enum E820Kind {
    Ram = 1,
    Reserved = 2,
    AcpiReclaim = 3,
    AcpiNvs = 4,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct E820Entry {
    pub base: u64,
    pub len: u64,
    pub kind: E820Kind,
}

impl E820Entry {
    pub fn end(&self) -> u64 {
        self.base + self.len
    }
    /// The 20-byte record INT 15h/E820 returns.
    pub fn to_bytes(&self) -> [u8; 20] {
        let mut b = [0u8; 20];
        b[0..8].copy_from_slice(&self.base.to_le_bytes());
        b[8..16].copy_from_slice(&self.len.to_le_bytes());
        b[16..20].copy_from_slice(&(self.kind as u32).to_le_bytes());
        b
    }
}

/// Where everything sits in guest-physical memory.
#[derive(Clone, Debug)]
pub struct MemoryPlan {
    pub ram_size: u64,
    /// RAM below the PCI hole.
    pub low_ram: u64,
    /// RAM remapped at 4 GiB.
    pub high_ram: u64,
    pub ebda_base: u64,
    /// Start of the ACPI region (its first page is NVS, the rest reclaimable).
    pub acpi_base: u64,
    pub map: Vec<E820Entry>,
}

impl MemoryPlan {
    pub fn new(config: &BiosConfig) -> Result<MemoryPlan, FirmwareError> {
        let ram_size = config.ram_size;
        if ram_size < 2 * MIB {
            return Err(FirmwareError::Config(format!(
                "{ram_size} bytes of RAM; at least 2 MiB needed"
            )));
        }
        let hole = config.pci_hole_start;
        if !(16 * MIB..=FOUR_GIB).contains(&hole) || !hole.is_multiple_of(MIB) {
            return Err(FirmwareError::Config(format!(
                "PCI hole start {hole:#x} not MiB-aligned in 16 MiB..4 GiB"
            )));
        }
        let low_ram = ram_size.min(hole);
        let high_ram = ram_size - low_ram;
        let ebda_base = 0xA0000 - EBDA_SIZE;
        // Keep the tables 64 KiB aligned so the OS's reclaimed region is tidy.
        let acpi_top = low_ram & !0xFFFF;
        let acpi_base = acpi_top - ACPI_REGION_SIZE;

        let mut map = vec![
            E820Entry {
                base: 0,
                len: ebda_base,
                kind: E820Kind::Ram,
            },
            E820Entry {
                base: ebda_base,
                len: EBDA_SIZE,
                kind: E820Kind::Reserved,
            },
            E820Entry {
                base: 0xE0000,
                len: 0x20000,
                kind: E820Kind::Reserved,
            },
            E820Entry {
                base: MIB,
                len: acpi_base - MIB,
                kind: E820Kind::Ram,
            },
            E820Entry {
                base: acpi_base,
                len: ACPI_NVS_SIZE,
                kind: E820Kind::AcpiNvs,
            },
            E820Entry {
                base: acpi_base + ACPI_NVS_SIZE,
                len: ACPI_RECLAIM_SIZE,
                kind: E820Kind::AcpiReclaim,
            },
        ];
        if low_ram > acpi_top {
            map.push(E820Entry {
                base: acpi_top,
                len: low_ram - acpi_top,
                kind: E820Kind::Ram,
            });
        }
        // Chipset MMIO the OS must not treat as free address space, and the BIOS alias.
        let mut reserved = vec![
            (0xFEC0_0000, 0x1000),  // IOAPIC
            (0xFED0_0000, 0x1000),  // HPET
            (0xFEE0_0000, 0x1000),  // local APIC
            (0xFFFE_0000, 0x20000), // BIOS ROM alias below 4 GiB
        ];
        // The ECAM window: Linux accepts MCFG only where E820 (early) or a PNP0C02 device
        // (late) reserves it.
        reserved.extend(config.pci_ecam.map(|e| (e.base, e.size())));
        reserved.extend(config.reserved_ranges.iter().copied());
        for (base, len) in reserved {
            if len == 0 || base.checked_add(len).is_none() {
                return Err(FirmwareError::Config(format!(
                    "bad reserved range {base:#x}+{len:#x}"
                )));
            }
            if base < low_ram || (base < FOUR_GIB + high_ram && base + len > FOUR_GIB) {
                return Err(FirmwareError::Config(format!(
                    "reserved range {base:#x}+{len:#x} overlaps RAM"
                )));
            }
            map.push(E820Entry {
                base,
                len,
                kind: E820Kind::Reserved,
            });
        }
        if high_ram > 0 {
            map.push(E820Entry {
                base: FOUR_GIB,
                len: high_ram,
                kind: E820Kind::Ram,
            });
        }
        map.sort_by_key(|e| e.base);
        for pair in map.windows(2) {
            if pair[0].end() > pair[1].base {
                return Err(FirmwareError::Config(format!(
                    "memory map overlap: {:#x?} and {:#x?}",
                    pair[0], pair[1]
                )));
            }
        }
        Ok(MemoryPlan {
            ram_size,
            low_ram,
            high_ram,
            ebda_base,
            acpi_base,
            map,
        })
    }

    /// Conventional memory in KiB (INT 12h, BDA 0x413).
    pub fn base_kib(&self) -> u16 {
        (self.ebda_base / KIB) as u16
    }
    /// RAM the OS may use between 1 MiB and the ACPI tables.
    pub fn extended_top(&self) -> u64 {
        self.acpi_base
    }
    /// INT 15h/88h: KiB above 1 MiB, saturated.
    pub fn extended_kib_88(&self) -> u16 {
        ((self.extended_top() - MIB) / KIB).min(0xFFFF) as u16
    }
    /// INT 15h/E801: (KiB between 1 and 16 MiB, 64 KiB blocks between 16 MiB and the top).
    pub fn e801(&self) -> (u16, u16) {
        let top = self.extended_top();
        let below16 = (top.min(16 * MIB) - MIB) / KIB;
        let above16 = top.saturating_sub(16 * MIB) / (64 * KIB);
        (below16 as u16, above16.min(0xFFFF) as u16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(ram: u64) -> MemoryPlan {
        MemoryPlan::new(&BiosConfig::new(ram)).unwrap()
    }

    fn check_invariants(p: &MemoryPlan) {
        for pair in p.map.windows(2) {
            assert!(pair[0].end() <= pair[1].base, "overlap {:x?}", pair);
        }
        let ram: u64 = p
            .map
            .iter()
            .filter(|e| e.kind == E820Kind::Ram)
            .map(|e| e.len)
            .sum();
        let acpi: u64 = p
            .map
            .iter()
            .filter(|e| matches!(e.kind, E820Kind::AcpiReclaim | E820Kind::AcpiNvs))
            .map(|e| e.len)
            .sum();
        // Every byte of RAM is either usable, ACPI, EBDA or hidden behind the ROM (E0000-FFFFF)
        // or the VGA window (A0000-BFFFF) / option ROM area.
        assert_eq!(ram + acpi + EBDA_SIZE + 0x60000, p.ram_size);
        for e in &p.map {
            if e.kind == E820Kind::Ram {
                let in_hole = e.base < FOUR_GIB && e.end() > 0xE000_0000;
                assert!(!in_hole, "RAM inside PCI hole: {e:x?}");
            }
        }
    }

    #[test]
    fn small_machine() {
        let p = plan(32 * MIB);
        check_invariants(&p);
        assert_eq!(p.base_kib(), 639);
        assert_eq!(p.high_ram, 0);
        assert_eq!(p.acpi_base + ACPI_RECLAIM_SIZE + ACPI_NVS_SIZE, 32 * MIB);
        assert_eq!(
            p.e801(),
            (
                15 * 1024,
                ((32 * MIB - 128 * KIB - 16 * MIB) / (64 * KIB)) as u16
            )
        );
        assert!(!p.map.iter().any(|e| e.base >= FOUR_GIB));
    }

    #[test]
    fn odd_size_keeps_tail_ram() {
        let p = plan(100 * MIB + 12 * KIB);
        check_invariants(&p);
        assert!(
            p.map
                .iter()
                .any(|e| e.kind == E820Kind::Ram && e.end() == 100 * MIB + 12 * KIB)
        );
    }

    #[test]
    fn large_machine_remaps_above_4g() {
        for ram in [3584 * MIB, 4096 * MIB, 8192 * MIB] {
            let p = plan(ram);
            check_invariants(&p);
            assert_eq!(p.low_ram, 0xE000_0000);
            let high: u64 = p
                .map
                .iter()
                .filter(|e| e.base >= FOUR_GIB)
                .map(|e| e.len)
                .sum();
            assert_eq!(high, ram - 0xE000_0000);
            assert_eq!(p.extended_kib_88(), 0xFFFF);
        }
        // Exactly 3.5 GiB: nothing above 4 GiB.
        assert_eq!(plan(3584 * MIB).high_ram, 0);
    }

    #[test]
    fn bad_configs_are_errors() {
        assert!(MemoryPlan::new(&BiosConfig::new(MIB)).is_err());
        let mut c = BiosConfig::new(64 * MIB);
        c.reserved_ranges.push((0x100000, 0x1000));
        assert!(MemoryPlan::new(&c).is_err(), "reserved range inside RAM");
        let mut c = BiosConfig::new(64 * MIB);
        c.reserved_ranges.push((0xB000_0000, 0x1000_0000));
        let p = MemoryPlan::new(&c).unwrap();
        assert!(
            p.map
                .iter()
                .any(|e| e.base == 0xB000_0000 && e.kind == E820Kind::Reserved)
        );
    }

    #[test]
    fn ecam_window_is_reserved_above_ram() {
        for ram in [64 * MIB, 4096 * MIB] {
            let p = plan(ram);
            check_invariants(&p);
            let ecam = crate::tables::acpi::EcamWindow::default();
            let entry = p
                .map
                .iter()
                .find(|e| e.base == ecam.base)
                .expect("no E820 entry at the ECAM base");
            assert_eq!((entry.len, entry.kind), (256 * MIB, E820Kind::Reserved));
            assert!(p.low_ram <= ecam.base, "ECAM over RAM");
        }
        let mut c = BiosConfig::new(64 * MIB);
        c.pci_ecam = None;
        let p = MemoryPlan::new(&c).unwrap();
        assert!(!p.map.iter().any(|e| e.base == 0xE000_0000));
    }

    #[test]
    fn record_encoding() {
        let e = E820Entry {
            base: 0x1_0000_0000,
            len: 0x2000,
            kind: E820Kind::AcpiNvs,
        };
        let b = e.to_bytes();
        assert_eq!(&b[0..8], &0x1_0000_0000u64.to_le_bytes());
        assert_eq!(b[16], 4);
    }
}
