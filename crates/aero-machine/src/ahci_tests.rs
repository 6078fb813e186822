//! The machine's AHCI path end to end, acting as a guest driver: PCI config cycles find
//! 8086:2922 and place ABAR, the HBA is set up through MMIO, IDENTIFY and READ DMA EXT land
//! in guest RAM, and the completion interrupt reaches the PIC (PIRQ routing), the IOAPIC
//! and, with MSI enabled, the local APIC directly.

use super::*;
use aero_cpu::Bus;
use aero_storage::MemoryDisk;

// Above the ECAM window (0xE0000000-0xEFFFFFFF), where the BIOS places BARs too.
const ABAR: u64 = 0xF800_0000;
const CLB: u64 = 0x10_0000;
const FB: u64 = 0x10_1000;
const CT: u64 = 0x10_2000;
const BUF: u64 = 0x20_0000;

fn machine() -> Machine {
    let disk: Vec<u8> = (0..4096 * 512)
        .map(|i: usize| (i / 512 + i % 253) as u8)
        .collect();
    let config = MachineConfig {
        memory_bytes: 32 << 20,
        boot_order: Vec::new(),
        extra_drives: vec![(
            DriveSlot::Ahci(0),
            IdeDrive::Disk(Box::new(MemoryDisk::new(disk, 512, false).unwrap())),
        )],
        ..Default::default()
    };
    let no_port = MachineConfig {
        extra_drives: vec![(DriveSlot::Ahci(6), IdeDrive::Cdrom(None))],
        ..Default::default()
    };
    assert!(Machine::new(no_port).is_err(), "ICH9 has six ports");
    Machine::new(config).expect("machine")
}

fn cfg_addr(dev: u8, reg: u8) -> u32 {
    0x8000_0000 | u32::from(dev) << 11 | u32::from(reg)
}

fn cfg_read(m: &mut Machine, dev: u8, reg: u8) -> u32 {
    m.platform.io_write(0xCF8, 4, cfg_addr(dev, reg));
    m.platform.io_read(0xCFC, 4)
}

fn cfg_write(m: &mut Machine, dev: u8, reg: u8, value: u32) {
    m.platform.io_write(0xCF8, 4, cfg_addr(dev, reg));
    m.platform.io_write(0xCFC, 4, value);
}

fn abar_write(m: &mut Machine, off: u64, value: u32) {
    m.platform.mmio_write(ABAR + off, 4, u64::from(value));
}

fn abar_read(m: &mut Machine, off: u64) -> u32 {
    m.platform.mmio_read(ABAR + off, 4) as u32
}

/// Finds the AHCI function by scanning bus 0 like a guest does; returns its device number.
fn find_ahci(m: &mut Machine) -> u8 {
    (0..32u8)
        .find(|&dev| cfg_read(m, dev, 0) == 0x2922_8086)
        .expect("8086:2922 on bus 0")
}

/// Slot 0: `fis` with one PRDT entry of `len` bytes at `buf`; issued and run.
fn run_command(m: &mut Machine, fis: [u8; 20], buf: u64, len: u32) {
    let mut header = [0u8; 32];
    header[0..4].copy_from_slice(&(5u32 | 1 << 16).to_le_bytes());
    header[8..12].copy_from_slice(&(CT as u32).to_le_bytes());
    ram_write(m, CLB, &header);
    let mut table = [0u8; 0x90];
    table[..20].copy_from_slice(&fis);
    table[0x80..0x84].copy_from_slice(&(buf as u32).to_le_bytes());
    table[0x8C..0x90].copy_from_slice(&(len - 1).to_le_bytes());
    ram_write(m, CT, &table);
    abar_write(m, 0x100 + 0x38, 1); // P0CI
    assert!(
        m.platform.requests.dma,
        "CI write asks the machine to stop the CPU"
    );
    m.handle_requests();
    assert_eq!(abar_read(m, 0x100 + 0x38), 0, "command completed");
}

fn h2d(command: u8, lba: u64, count: u16) -> [u8; 20] {
    let mut f = [0u8; 20];
    f[0] = 0x27;
    f[1] = 0x80;
    f[2] = command;
    f[4..7].copy_from_slice(&lba.to_le_bytes()[..3]);
    f[7] = 0x40;
    f[8..11].copy_from_slice(&lba.to_le_bytes()[3..6]);
    f[12..14].copy_from_slice(&count.to_le_bytes());
    f
}

fn setup(m: &mut Machine) -> u8 {
    let dev = setup_port0(m);
    assert_eq!(abar_read(m, 0x124), 0x0000_0101, "disk signature");
    dev
}

/// PCI set-up, HBA reset, port 0 started with interrupts on (whatever drive it has).
fn setup_port0(m: &mut Machine) -> u8 {
    let dev = find_ahci(m);
    assert_eq!(cfg_read(m, dev, 0x08) >> 8, 0x01_06_01, "SATA AHCI class");
    cfg_write(m, dev, 0x24, 0xFFFF_FFFF);
    assert_eq!(cfg_read(m, dev, 0x24), 0xFFFF_F000, "4 KiB ABAR");
    cfg_write(m, dev, 0x24, ABAR as u32);
    cfg_write(m, dev, 0x04, 0x0006); // memory + bus master
    assert_eq!(abar_read(m, 0x10), 0x0001_0300, "AHCI 1.3 behind ABAR");
    assert_eq!(abar_read(m, 0x0C), 0x3F, "six ports");
    abar_write(m, 0x04, 1); // GHC.HR
    abar_write(m, 0x04, 0x8000_0002); // AE | IE
    abar_write(m, 0x100, CLB as u32);
    abar_write(m, 0x108, FB as u32);
    abar_write(m, 0x114, 0xFDC0_00FF); // P0IE
    abar_write(m, 0x118, 0x11); // FRE | ST
    m.handle_requests();
    abar_write(m, 0x110, u32::MAX);
    abar_write(m, 0x08, u32::MAX);
    dev
}

/// Turns MSI on with vector `vector` and enables the local APIC.
fn enable_msi(m: &mut Machine, dev: u8, vector: u32) {
    m.platform.mmio_write(0xFEE0_00F0, 4, 0x1FF);
    let cap = (cfg_read(m, dev, 0x34) & 0xFF) as u8;
    assert_eq!(cfg_read(m, dev, cap) & 0xFF, 0x05, "MSI capability");
    cfg_write(m, dev, cap + 4, 0xFEE0_0000);
    cfg_write(m, dev, cap + 8, vector);
    m.platform.io_write(0xCF8, 4, cfg_addr(dev, cap));
    m.platform.io_write(0xCFE, 2, 1); // MSI enable
}

#[test]
fn guest_finds_controller_identifies_and_reads_with_intx() {
    let mut m = machine();
    let dev = setup(&mut m);
    // PIRQ routing as a BIOS does it: PIRQA–D → IRQ 10/10/11/11, IRQ 10/11 level in ELCR.
    cfg_write(&mut m, 1, 0x60, 0x0B0B_0A0A);
    m.platform.io_write(0x4D1, 1, 0x0C);
    let pin = cfg_read(&mut m, dev, 0x3C) >> 8 & 0xFF;
    assert_eq!(pin, 1, "INTA#");
    let irq: u8 = if crate::devices::piix3::pirq_for(dev, 1) < 2 {
        10
    } else {
        11
    };
    // IOAPIC: the ISA pin of that IRQ → vector 0x45, level, unmasked; LAPIC enabled.
    m.platform.mmio_write(0xFEE0_00F0, 4, 0x1FF);
    m.platform
        .mmio_write(0xFEC0_0000, 4, 0x10 + 2 * u64::from(irq));
    m.platform.mmio_write(0xFEC0_0010, 4, 0x45 | 1 << 15);

    run_command(&mut m, h2d(0xEC, 0, 0), BUF, 512);
    let id = ram_read(&mut m, BUF, 512);
    assert_eq!(
        u64::from_le_bytes(id[200..208].try_into().unwrap()),
        4096,
        "capacity in IDENTIFY"
    );

    // The interrupt is up: PIC IRR (OCW3 read IRR) and the LAPIC through the IOAPIC.
    m.platform.io_write(0xA0, 1, 0x0A);
    assert_ne!(
        m.platform.io_read(0xA0, 1) & (1 << (irq - 8)),
        0,
        "IRQ {irq} requested at the PIC"
    );
    assert_eq!(
        m.platform.lapic.pending_vector(),
        Some(0x45),
        "IOAPIC delivered the level interrupt"
    );

    // Acknowledge at the HBA: the line drops.
    abar_write(&mut m, 0x110, u32::MAX);
    abar_write(&mut m, 0x08, u32::MAX);
    m.platform.io_write(0xA0, 1, 0x0A);
    assert_eq!(
        m.platform.io_read(0xA0, 1) & (1 << (irq - 8)),
        0,
        "line released"
    );

    // READ DMA EXT of 16 sectors from LBA 300 into RAM.
    run_command(&mut m, h2d(0x25, 300, 16), BUF + 0x1000, 16 * 512);
    let expect: Vec<u8> = (300 * 512..316 * 512)
        .map(|i: usize| (i / 512 + i % 253) as u8)
        .collect();
    assert_eq!(ram_read(&mut m, BUF + 0x1000, 16 * 512), expect);
    m.platform.io_write(0xA0, 1, 0x0A);
    assert_ne!(m.platform.io_read(0xA0, 1) & (1 << (irq - 8)), 0);
}

#[test]
fn msi_reaches_the_local_apic_and_bus_master_gates_dma() {
    let mut m = machine();
    let dev = setup(&mut m);
    enable_msi(&mut m, dev, 0x61);
    run_command(&mut m, h2d(0xEC, 0, 0), BUF, 512);
    assert_eq!(m.platform.lapic.pending_vector(), Some(0x61));

    // Bus mastering off: the command waits in CI, RAM is untouched.
    cfg_write(&mut m, dev, 0x04, 0x0002);
    ram_write(&mut m, BUF, &[0u8; 512]);
    abar_write(&mut m, 0x100 + 0x38, 1);
    m.handle_requests();
    assert_eq!(abar_read(&mut m, 0x138), 1);
    assert_eq!(ram_read(&mut m, BUF, 2), vec![0, 0]);
}

/// SATA asynchronous notification through the machine: the guest enables it on an AHCI CD
/// drive; a host insert then posts the Set Device Bits FIS and raises the MSI at once,
/// with no AHCI register access by the (idle) guest in between.
#[test]
fn host_media_change_notifies_the_guest_at_once() {
    let config = MachineConfig {
        memory_bytes: 32 << 20,
        boot_order: Vec::new(),
        extra_drives: vec![(DriveSlot::Ahci(0), IdeDrive::Cdrom(None))],
        ..Default::default()
    };
    let mut m = Machine::new(config).expect("machine");
    let dev = setup_port0(&mut m);
    assert_eq!(abar_read(&mut m, 0x124), 0xEB14_0101, "ATAPI signature");
    enable_msi(&mut m, dev, 0x62);
    let mut set_features = h2d(0xEF, 0, 0x05); // SATA feature 05h: asynchronous notification
    set_features[3] = 0x10; // enable
    run_command(&mut m, set_features, BUF, 512);
    assert_eq!(abar_read(&mut m, 0x110) & (1 << 30), 0, "accepted");
    abar_write(&mut m, 0x110, u32::MAX);
    abar_write(&mut m, 0x08, u32::MAX);
    assert_eq!(m.platform.lapic.acknowledge(), 0x62);
    m.platform.mmio_write(0xFEE0_00B0, 4, 0); // EOI
    assert_eq!(m.platform.lapic.pending_vector(), None);

    let disc = MemoryDisk::new(vec![0x11; 16 * 2048], 2048, true).unwrap();
    m.insert_cd(DriveSlot::Ahci(0), Box::new(disc)).unwrap();
    assert_eq!(
        ram_read(&mut m, FB + 0x58, 4),
        vec![0xA1, 0xC0, 0x50, 0x00],
        "SDB FIS with N and I"
    );
    assert_eq!(abar_read(&mut m, 0x110), 1 << 3, "P0IS.SDBS");
    assert_eq!(abar_read(&mut m, 0x13C), 1, "P0SNTF");
    assert_eq!(
        m.platform.lapic.pending_vector(),
        Some(0x62),
        "MSI delivered"
    );
}
