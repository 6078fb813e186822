//! The floppy controller as wired into the machine: CMOS drive type, the one --fda image
//! shared with the BIOS, port dispatch, 8237 channel 2 into guest RAM and IRQ 6.

use super::*;
use crate::FloppyStatus;
use aero_cpu::Bus;
use aero_storage::MemoryDisk;

fn machine(fda: Option<Box<dyn BlockDevice>>) -> Machine {
    let config = MachineConfig {
        memory_bytes: 16 << 20,
        fda,
        boot_order: Vec::new(),
        ..Default::default()
    };
    Machine::new(config).expect("machine")
}

fn cmos(m: &mut Machine, index: u32) -> u32 {
    m.platform.io_write(0x70, 1, index);
    m.platform.io_read(0x71, 1)
}

/// Sends one FDC command byte by byte, as a driver does (RQM set, DIO clear).
fn command(m: &mut Machine, bytes: &[u8]) {
    for &b in bytes {
        assert_eq!(m.platform.io_read(0x3F4, 1) & 0xC0, 0x80);
        m.platform.io_write(0x3F5, 1, u32::from(b));
    }
}

fn results(m: &mut Machine) -> Vec<u8> {
    let mut out = Vec::new();
    while m.platform.io_read(0x3F4, 1) & 0xC0 == 0xC0 && out.len() < 16 {
        out.push(m.platform.io_read(0x3F5, 1) as u8);
    }
    out
}

/// IRR of the master PIC (OCW3 read-IRR).
fn pic_irr(m: &mut Machine) -> u32 {
    m.platform.io_write(0x20, 1, 0x0A);
    m.platform.io_read(0x20, 1)
}

#[test]
fn cmos_reports_the_drive_only_with_a_floppy() {
    let mut m = machine(None);
    assert_eq!(cmos(&mut m, 0x10), 0);
    assert_eq!(cmos(&mut m, 0x14) & 1, 0);
    let disk = MemoryDisk::new(vec![0; 1_474_560], 512, false).unwrap();
    let mut m = machine(Some(Box::new(disk)));
    assert_eq!(cmos(&mut m, 0x10), 0x40, "1.44 MB drive 0");
    assert_eq!(cmos(&mut m, 0x14) & 0xC1, 0x01, "one diskette drive");
    // The checksum over 0x10-0x2D still holds.
    let sum: u32 = (0x10..=0x2D).map(|i| cmos(&mut m, i)).sum();
    assert_eq!(sum, cmos(&mut m, 0x2E) << 8 | cmos(&mut m, 0x2F));
}

#[test]
fn dma_read_of_what_the_bios_wrote_reaches_ram_and_raises_irq6() {
    let disk = MemoryDisk::new(vec![0; 1_474_560], 512, false).unwrap();
    let mut m = machine(Some(Box::new(disk)));
    // The BIOS side writes LBA 20 (C0 H1 S3) of the shared image.
    let data: Vec<u8> = (0..512).map(|i| (i * 7 + 1) as u8).collect();
    m.disks
        .fda
        .as_mut()
        .unwrap()
        .write_sectors(20, &data)
        .unwrap();
    // The master PIC initialised like firmware does (vectors 0x08-0x0F, all unmasked).
    for (port, v) in [(0x20, 0x11), (0x21, 0x08), (0x21, 0x04), (0x21, 0x01)] {
        m.platform.io_write(port, 1, v);
    }
    // Controller out of reset with the DMA gate open, the four polls drained.
    m.platform.io_write(0x3F2, 1, 0x00);
    m.platform.io_write(0x3F2, 1, 0x1C);
    assert_ne!(pic_irr(&mut m) & 0x40, 0, "reset interrupt missing");
    for _ in 0..4 {
        command(&mut m, &[0x08]);
        results(&mut m);
    }
    // 8237 channel 2: 512 bytes to 0x10000.
    for (port, v) in [
        (0x0A, 0x06),
        (0x0C, 0),
        (0x04, 0x00),
        (0x04, 0x00),
        (0x81, 0x01),
        (0x0C, 0),
        (0x05, 0xFF),
        (0x05, 0x01),
        (0x0B, 0x46),
        (0x0A, 0x02),
    ] {
        m.platform.io_write(port, 1, v);
    }
    // Take the reset interrupt (INTA clears IRR) and end it.
    assert_eq!(m.platform.acknowledge_interrupt(), 0x08 + 6);
    m.platform.io_write(0x20, 1, 0x20);
    assert_eq!(pic_irr(&mut m) & 0x40, 0);
    command(&mut m, &[0xE6, 0x04, 0, 1, 3, 2, 18, 0x1B, 0xFF]);
    assert!(
        m.platform.requests.dma,
        "the machine was not asked to run the DMA"
    );
    assert!(m.handle_requests().is_none());
    assert_eq!(&m.memory[0x10000..0x10200], &data[..]);
    assert_ne!(pic_irr(&mut m) & 0x40, 0, "completion interrupt missing");
    assert_eq!(results(&mut m), vec![0x04, 0, 0, 0, 1, 4, 2]);
}

/// The disk change line (DIR bit 7) of drive 0, selected with its motor on.
fn change_line(m: &mut Machine) -> bool {
    m.platform.io_write(0x3F2, 1, 0x1C);
    m.platform.io_read(0x3F7, 1) & 0x80 != 0
}

/// Clears the change line the way a driver does: a seek with a disk in the drive.
fn seek(m: &mut Machine, cylinder: u8) {
    command(m, &[0x0F, 0x00, cylinder]);
    command(m, &[0x08]);
    results(m);
}

#[test]
fn host_floppy_swap_reaches_the_controller_and_the_bios() {
    let mut m = machine(None);
    assert_eq!(m.floppy_drive(), None);
    let disk = || MemoryDisk::new(vec![0xAA; 1_474_560], 512, false).unwrap();
    let err = m.insert_floppy(Box::new(disk())).unwrap_err().to_string();
    assert!(err.contains("no floppy drive"), "{err}");

    let mut m = machine(Some(Box::new(disk())));
    m.platform.io_write(0x3F2, 1, 0x00);
    m.platform.io_write(0x3F2, 1, 0x1C);
    for _ in 0..4 {
        command(&mut m, &[0x08]);
        results(&mut m);
    }
    seek(&mut m, 1);
    assert!(
        !change_line(&mut m),
        "a seek with the disk in cleared the line"
    );
    assert!(!m.disks.fda_changed);

    m.eject_floppy().unwrap();
    assert_eq!(m.floppy_drive(), Some(FloppyStatus { medium: false }));
    assert!(m.disks.fda.is_none(), "the BIOS lost the disk too");
    assert!(m.disks.fda_changed);
    assert!(change_line(&mut m));
    seek(&mut m, 2);
    assert!(
        change_line(&mut m),
        "no disk: a seek leaves the line active"
    );
    m.eject_floppy().unwrap(); // ejecting an empty drive is fine

    let mut other = vec![0x55; 737_280]; // 720 KB
    other[0] = 0x42;
    m.insert_floppy(Box::new(MemoryDisk::new(other, 512, false).unwrap()))
        .unwrap();
    assert_eq!(m.floppy_drive(), Some(FloppyStatus { medium: true }));
    let mut sector = [0u8; 512];
    m.disks
        .fda
        .as_mut()
        .unwrap()
        .read_sectors(0, &mut sector)
        .unwrap();
    assert_eq!(sector[0], 0x42, "the BIOS sees the new disk");
    seek(&mut m, 3);
    assert!(!change_line(&mut m));
    let cd = MemoryDisk::new(vec![0; 4096], 2048, true).unwrap();
    assert!(m.insert_floppy(Box::new(cd)).is_err(), "2048-byte sectors");
    assert_eq!(m.floppy_drive(), Some(FloppyStatus { medium: true }));
}
