//! The tables as an OS finds them: anchors by scanning, pointers into reserved memory.

use super::*;

fn find_anchor(bytes: &[u8], base: u64, anchor: &[u8]) -> Option<u64> {
    (0..bytes.len())
        .step_by(16)
        .find(|&i| bytes[i..].starts_with(anchor))
        .map(|i| base + i as u64)
}

fn sum(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0u8, |s, b| s.wrapping_add(*b))
}

fn kind_at(map: &[E820Entry], addr: u64) -> Option<E820Kind> {
    map.iter()
        .find(|e| e.base <= addr && addr < e.end())
        .map(|e| e.kind)
}

#[test]
fn rsdp_in_rom_points_at_tables_in_acpi_memory() {
    let mut rig = Rig::new(FakeHost::new().with_pc_bus());
    rig.post();
    let rom = rig.bios.rom().to_vec();
    // The OS scans 0xE0000–0xFFFFF on 16-byte boundaries.
    let rsdp_addr = find_anchor(&rom, 0xE0000, b"RSD PTR ").expect("RSDP");
    let off = (rsdp_addr - 0xE0000) as usize;
    let rsdp = &rom[off..off + 36];
    assert_eq!(sum(&rsdp[..20]), 0, "ACPI 1.0 checksum");
    assert_eq!(sum(rsdp), 0, "extended checksum");
    let rsdt = u32::from_le_bytes(rsdp[16..20].try_into().unwrap()) as usize;
    let xsdt = u64::from_le_bytes(rsdp[24..32].try_into().unwrap()) as usize;
    let map = rig.bios.memory_map().to_vec();
    for table in [rsdt, xsdt] {
        assert!(matches!(
            kind_at(&map, table as u64),
            Some(E820Kind::AcpiReclaim | E820Kind::AcpiNvs)
        ));
        let len = u32::from_le_bytes(rig.ram[table + 4..table + 8].try_into().unwrap()) as usize;
        assert_eq!(sum(&rig.ram[table..table + len]), 0);
    }
    assert_eq!(&rig.ram[rsdt..rsdt + 4], b"RSDT");
    assert_eq!(&rig.ram[xsdt..xsdt + 4], b"XSDT");
    // The FACS (first in the blob) sits in the NVS page.
    let facs = (0..0x1000)
        .step_by(64)
        .map(|o| rig.bios.memory.acpi_base as usize + o)
        .find(|&a| &rig.ram[a..a + 4] == b"FACS");
    assert_eq!(
        kind_at(&map, facs.expect("FACS") as u64),
        Some(E820Kind::AcpiNvs)
    );
}

#[test]
fn smbios_entry_in_f_segment_and_table_in_rom() {
    let rig = Rig::new(FakeHost::new());
    let rom = rig.bios.rom();
    let f_seg = &rom[0x10000..];
    let ep = find_anchor(f_seg, 0xF0000, b"_SM_").expect("SMBIOS entry point");
    let off = (ep - 0xE0000) as usize;
    let e = &rom[off..off + 31];
    assert_eq!(sum(e), 0);
    assert_eq!(&e[0x10..0x15], b"_DMI_");
    let table = u32::from_le_bytes(e[0x18..0x1C].try_into().unwrap()) as usize;
    let len = u16::from_le_bytes([e[0x16], e[0x17]]) as usize;
    assert!((0xE0000..0xF0000).contains(&table));
    let t = &rom[table - 0xE0000..table - 0xE0000 + len];
    assert_eq!(t[0], 0, "first structure is type 0 (BIOS)");
}

#[test]
fn mp_table_in_ebda_lists_pci_interrupts() {
    let mut rig = Rig::new(FakeHost::new().with_pc_bus());
    rig.post();
    let ebda = 0x9FC00usize;
    let fp = find_anchor(&rig.ram[ebda..ebda + 1024], ebda as u64, b"_MP_")
        .expect("MP floating pointer") as usize;
    assert_eq!(sum(&rig.ram[fp..fp + 16]), 0);
    let cfg = u32::from_le_bytes(rig.ram[fp + 4..fp + 8].try_into().unwrap()) as usize;
    assert_eq!(&rig.ram[cfg..cfg + 4], b"PCMP");
    let len = u16::from_le_bytes([rig.ram[cfg + 4], rig.ram[cfg + 5]]) as usize;
    assert!(cfg + len <= ebda + 1024);
    assert_eq!(sum(&rig.ram[cfg..cfg + len]), 0);
    // The NIC in slot 3 (INTA) appears as an I/O interrupt entry from the PCI bus.
    let source_irq = (3 << 2) as u8;
    let entries = &rig.ram[cfg + 44..cfg + len];
    let mut i = 0;
    let mut found = false;
    while i < entries.len() {
        let step = if entries[i] == 0 { 20 } else { 8 };
        if entries[i] == 3 && entries[i + 5] == source_irq && entries[i + 4] == 0 {
            found = true;
        }
        i += step;
    }
    assert!(found, "slot 3 INTA interrupt entry");
}

#[test]
fn mcfg_reached_from_rsdt_and_xsdt_and_its_window_is_reserved() {
    let mut rig = Rig::new(FakeHost::new().with_pc_bus());
    rig.post();
    let rom = rig.bios.rom().to_vec();
    let off = (find_anchor(&rom, 0xE0000, b"RSD PTR ").expect("RSDP") - 0xE0000) as usize;
    let rsdt = u32::from_le_bytes(rom[off + 16..off + 20].try_into().unwrap()) as usize;
    let xsdt = u64::from_le_bytes(rom[off + 24..off + 32].try_into().unwrap()) as usize;
    let ram = &rig.ram;
    let len_at = |t: usize| u32::from_le_bytes(ram[t + 4..t + 8].try_into().unwrap()) as usize;
    let rsdt_entries: Vec<usize> = ram[rsdt + 36..rsdt + len_at(rsdt)]
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()) as usize)
        .collect();
    let xsdt_entries: Vec<usize> = ram[xsdt + 36..xsdt + len_at(xsdt)]
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()) as usize)
        .collect();
    assert_eq!(
        rsdt_entries, xsdt_entries,
        "RSDT and XSDT list the same tables"
    );
    let mcfg = *rsdt_entries
        .iter()
        .find(|&&t| &ram[t..t + 4] == b"MCFG")
        .expect("MCFG not in the RSDT");
    let table = &ram[mcfg..mcfg + len_at(mcfg)];
    assert_eq!(table.len(), 60);
    assert_eq!(sum(table), 0);
    let base = u64::from_le_bytes(table[44..52].try_into().unwrap());
    let (start_bus, end_bus) = (table[54], table[55]);
    assert_eq!((base, start_bus, end_bus), (0xE000_0000, 0, 0xFF));
    let map = rig.bios.memory_map().to_vec();
    let window = map
        .iter()
        .find(|e| e.base == base)
        .expect("ECAM window not in E820");
    assert_eq!(window.kind, E820Kind::Reserved);
    assert_eq!(window.len, (u64::from(end_bus) + 1) << 20);
    // POST placed no BAR inside the window.
    for (bdf, f) in &rig.host.pci {
        for reg in (0x10..0x28).step_by(4) {
            let bar = u64::from(f.reg32(reg));
            if bar & 1 == 0 && bar & !0xF != 0 {
                let addr = bar & !0xF;
                assert!(
                    !(base..base + window.len).contains(&addr),
                    "{bdf:#x} BAR {reg:#x} at {addr:#x} inside ECAM"
                );
            }
        }
    }
}
