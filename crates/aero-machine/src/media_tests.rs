//! Media change seen through the machine's IDE ports, as a guest's ATAPI driver sees it:
//! packet commands on the secondary channel while the host ejects and inserts discs.

use super::*;
use aero_cpu::Bus;
use aero_storage::MemoryDisk;
use aero_storage::ide::MediaError;

/// A CD image of `sectors` sectors whose every byte in sector n is `n + tag`.
fn disc(sectors: usize, tag: u8) -> Box<dyn BlockDevice> {
    let data = (0..sectors * 2048)
        .map(|i| (i / 2048) as u8 + tag)
        .collect();
    Box::new(MemoryDisk::new(data, 2048, true).unwrap())
}

fn machine() -> Machine {
    let config = MachineConfig {
        memory_bytes: 16 << 20,
        cdrom: Some(disc(16, 0)),
        boot_order: Vec::new(),
        extra_drives: vec![(DriveSlot::Ahci(1), IdeDrive::Cdrom(None))],
        ..Default::default()
    };
    let mut m = Machine::new(config).expect("machine");
    enable_ide_io(&mut m);
    m
}

/// What firmware does first: I/O decoding on for the PIIX3 IDE function (00:01.1) and
/// both legacy channels (IDETIM decode enable).
fn enable_ide_io(m: &mut Machine) {
    let cfg = 0x8000_0000 | 1 << 11 | 1 << 8;
    m.platform.io_write(0xCF8, 4, cfg | 0x04);
    m.platform.io_write(0xCFC, 2, 0x0005);
    m.platform.io_write(0xCF8, 4, cfg | 0x40);
    m.platform.io_write(0xCFC, 4, 0x8000_8000);
}

/// A PIO packet command to the secondary master: Ok(data) or Err(sense key).
fn packet(m: &mut Machine, cdb: &[u8]) -> Result<Vec<u8>, u8> {
    let p = &mut m.platform;
    p.io_write(0x176, 1, 0xA0); // master
    p.io_write(0x171, 1, 0); // PIO
    p.io_write(0x174, 1, 0xFE);
    p.io_write(0x175, 1, 0xFF);
    p.io_write(0x177, 1, 0xA0);
    assert_eq!(p.io_read(0x177, 1) & 0x88, 0x08, "packet wanted");
    let mut bytes = [0u8; 12];
    bytes[..cdb.len()].copy_from_slice(cdb);
    for w in bytes.chunks(2) {
        p.io_write(0x170, 2, u32::from(u16::from_le_bytes([w[0], w[1]])));
    }
    let mut data = Vec::new();
    loop {
        let status = p.io_read(0x177, 1);
        if status & 0x01 != 0 {
            return Err((p.io_read(0x171, 1) >> 4) as u8);
        }
        if status & 0x08 == 0 {
            return Ok(data);
        }
        let n = p.io_read(0x174, 1) as usize | (p.io_read(0x175, 1) as usize) << 8;
        let mut chunk = Vec::new();
        for _ in 0..n.div_ceil(2) {
            chunk.extend_from_slice(&(p.io_read(0x170, 2) as u16).to_le_bytes());
        }
        chunk.truncate(n);
        data.extend(chunk);
    }
}

fn sense(m: &mut Machine) -> (u8, u8, u8) {
    let d = packet(m, &[0x03, 0, 0, 0, 18]).unwrap();
    (d[2] & 0x0F, d[12], d[13])
}

fn last_lba(m: &mut Machine) -> u32 {
    let d = packet(m, &[0x25]).unwrap();
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

fn bios_cd_sectors(m: &Machine) -> Option<u64> {
    m.disks.cdrom.as_ref().map(|d| d.sector_count())
}

#[test]
fn guest_sees_host_eject_and_insert_through_the_ide_ports() {
    let mut m = machine();
    let drives = m.cd_drives();
    assert_eq!(drives.len(), 2, "{drives:?}");
    assert_eq!(drives[0].0, media::BIOS_CD_SLOT);
    assert!(drives[0].1.medium && !drives[0].1.tray_open);
    assert_eq!(drives[1].0, DriveSlot::Ahci(1));
    assert!(!drives[1].1.medium);

    assert_eq!(packet(&mut m, &[0x00]), Ok(Vec::new()), "ready");
    assert_eq!(last_lba(&mut m), 15);

    m.eject_cd(media::BIOS_CD_SLOT, false).unwrap();
    assert_eq!(packet(&mut m, &[0x00]), Err(0x02), "not ready");
    assert_eq!(sense(&mut m), (0x02, 0x3A, 0x02), "tray open");
    assert_eq!(
        bios_cd_sectors(&m),
        None,
        "INT 13h sees the empty drive too"
    );

    m.insert_cd(media::BIOS_CD_SLOT, disc(40, 100)).unwrap();
    assert_eq!(packet(&mut m, &[0x25]), Err(0x06), "unit attention");
    assert_eq!(sense(&mut m), (0x06, 0x28, 0x00));
    assert_eq!(last_lba(&mut m), 39, "the new disc's capacity");
    let data = packet(&mut m, &[0x28, 0, 0, 0, 0, 5, 0, 0, 1]).unwrap();
    assert_eq!(data, vec![105u8; 2048], "the new disc's data");
    assert_eq!(bios_cd_sectors(&m), Some(40));

    // The guest locks the tray: the host's eject is a request the guest sees as an event.
    packet(&mut m, &[0x1E, 0, 0, 0, 1]).unwrap();
    let err = m.eject_cd(media::BIOS_CD_SLOT, false).unwrap_err();
    assert!(
        matches!(err, MachineError::Media(_, MediaError::Locked)),
        "{err}"
    );
    let events = packet(&mut m, &[0x4A, 1, 0, 0, 0x10, 0, 0, 0, 8]).unwrap();
    assert_eq!(events[4], 1, "EjectRequest");
    assert_eq!(last_lba(&mut m), 39, "the disc stays in");
    // A machine reset ends the lock.
    m.reset();
    enable_ide_io(&mut m);
    m.eject_cd(media::BIOS_CD_SLOT, false).unwrap();

    // The empty AHCI drive takes a disc; wrong slots and wrong media are plain errors.
    m.insert_cd(DriveSlot::Ahci(1), disc(4, 0)).unwrap();
    assert!(m.cd_drives()[1].1.medium);
    assert!(
        m.eject_cd(DriveSlot::Ahci(3), false).is_err(),
        "no drive there"
    );
    let hd = Box::new(MemoryDisk::new(vec![0; 4096], 512, true).unwrap());
    assert!(
        m.insert_cd(DriveSlot::Ahci(1), hd).is_err(),
        "512-byte sectors"
    );
    let bad = DriveSlot::Ide {
        channel: 7,
        slave: false,
    };
    assert!(m.insert_cd(bad, disc(1, 0)).is_err());
}
