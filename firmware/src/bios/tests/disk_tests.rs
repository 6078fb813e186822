use aero_cpu::{Reg, Seg};

use super::*;

fn rig_with_disks() -> Rig {
    let mut host = FakeHost::new();
    host.add_disk(DiskId::HardDisk(0), 2 * 16 * 63 * 10, 512); // 10 MiB-ish
    host.add_disk(DiskId::Floppy(0), 2880, 512);
    host.add_disk(DiskId::Cdrom(0), 64, 2048);
    let mut rig = Rig::new(host);
    rig.post();
    rig
}

#[allow(clippy::too_many_arguments)]
fn chs_read(
    rig: &mut Rig,
    dl: u8,
    count: u8,
    cyl: u16,
    head: u8,
    sector: u8,
    es: u16,
    bx: u16,
) -> Ret {
    rig.set(Reg::Rax, 0x0200 | count as u64);
    rig.set(
        Reg::Rcx,
        ((cyl as u64 & 0xFF) << 8) | ((cyl as u64 >> 2) & 0xC0) | sector as u64,
    );
    rig.set(Reg::Rdx, (head as u64) << 8 | dl as u64);
    rig.set(Reg::Rbx, bx as u64);
    rig.seg_real(Seg::Es, es);
    rig.int(0x13)
}

#[test]
fn chs_read_hard_disk() {
    let mut rig = rig_with_disks();
    let ret = chs_read(&mut rig, 0x80, 3, 0, 0, 2, 0x0800, 0x0010);
    assert!(!cf(&ret), "{ret:?}");
    assert_eq!(rig.get(Reg::Rax) & 0xFFFF, 0x0003, "AH=0, AL=sectors read");
    for i in 0..3usize {
        let at = 0x8010 + i * 512;
        assert_eq!(&rig.ram[at..at + 5], &[1 + i as u8, 0, 0, 0, 0xD5]);
    }
    assert_eq!(rig.ram[0x474], 0, "last status");
    // Head 1 of cylinder 0 starts at LBA = spt (translated geometry has 63 sectors/track).
    let ret = chs_read(&mut rig, 0x80, 1, 0, 1, 1, 0, 0x9000);
    assert!(!cf(&ret));
    assert_eq!(rig.ram[0x9000], 63);
}

#[test]
fn chs_read_errors_set_cf_and_status() {
    let mut rig = rig_with_disks();
    // Sector 0 does not exist.
    let ret = chs_read(&mut rig, 0x80, 1, 0, 0, 0, 0, 0x9000);
    assert!(cf(&ret));
    assert_eq!(rig.ah(), 0x04);
    assert_eq!(rig.ram[0x474], 0x04);
    // AH=01h reports it.
    rig.set(Reg::Rax, 0x0100);
    rig.set(Reg::Rdx, 0x80);
    let ret = rig.int(0x13);
    assert!(cf(&ret));
    assert_eq!(rig.ah(), 0x04);
    // Missing drive.
    let ret = chs_read(&mut rig, 0x81, 1, 0, 0, 1, 0, 0x9000);
    assert!(cf(&ret));
    assert_eq!(rig.ah(), 0x01);
    // Buffer outside RAM: no panic, DMA-boundary style error.
    rig.ram.truncate(0x10000);
    let ret = chs_read(&mut rig, 0x80, 1, 0, 0, 1, 0x0FFF, 0x0000);
    assert!(cf(&ret));
    assert_eq!(rig.ah(), 0x09);
}

#[test]
fn floppy_chs_geometry_and_params() {
    let mut rig = rig_with_disks();
    let ret = chs_read(&mut rig, 0x00, 1, 0, 1, 1, 0, 0x9000);
    assert!(!cf(&ret));
    assert_eq!(rig.ram[0x9000], 18, "1.44 MB: head 1 starts at LBA 18");
    rig.set(Reg::Rax, 0x0800);
    rig.set(Reg::Rdx, 0x00);
    let ret = rig.int(0x13);
    assert!(!cf(&ret));
    assert_eq!(rig.get(Reg::Rbx) & 0xFF, 4, "1.44 MB type");
    assert_eq!(
        rig.get(Reg::Rcx) & 0xFFFF,
        0x4F12,
        "79 cylinders max, 18 sectors"
    );
    assert_eq!(rig.get(Reg::Rdx) & 0xFFFF, 0x0101, "max head 1, one drive");
    assert_eq!(rig.cpu.seg(Seg::Es).selector, 0xF000);
    assert_eq!(rig.get(Reg::Rdi) as u16, rig.bios.layout().diskette_params);
}

/// INT 13h AH=16h (change line) and the other functions on drive 00h.
fn floppy_call(rig: &mut Rig, ax: u64) -> (bool, u8) {
    rig.set(Reg::Rax, ax);
    rig.set(Reg::Rdx, 0x00);
    let ret = rig.int(0x13);
    (cf(&ret), rig.ah())
}

#[test]
fn floppy_change_line_follows_host_media_changes() {
    let mut rig = rig_with_disks();
    // The disk inserted before POST counts as a change until something reads it.
    let ret = chs_read(&mut rig, 0x00, 1, 0, 0, 1, 0, 0x9000);
    assert!(!cf(&ret));
    assert_eq!(
        floppy_call(&mut rig, 0x1600),
        (false, 0x00),
        "read reset the line"
    );
    assert_eq!(
        floppy_call(&mut rig, 0x1500),
        (false, 0x02),
        "change line supported"
    );

    // Taken out: the drive is still there, reads time out, the change is reported once.
    rig.host.remove_floppy(0);
    assert_eq!(floppy_call(&mut rig, 0x1600), (true, 0x06));
    assert_eq!(
        floppy_call(&mut rig, 0x1600),
        (true, 0x80),
        "empty: not ready"
    );
    let ret = chs_read(&mut rig, 0x00, 1, 0, 0, 1, 0, 0x9000);
    assert!(cf(&ret));
    assert_eq!(rig.ah(), 0x80);
    assert_eq!(floppy_call(&mut rig, 0x0000), (false, 0x00), "reset works");
    assert_eq!(floppy_call(&mut rig, 0x1500), (false, 0x02));
    let (carry, _) = floppy_call(&mut rig, 0x0800);
    assert!(!carry);
    assert_eq!(
        rig.get(Reg::Rdx) & 0xFFFF,
        0x0101,
        "one drive, still listed"
    );
    assert_eq!(
        rig.get(Reg::Rcx) & 0xFFFF,
        0x4F12,
        "the drive's 1.44 MB geometry"
    );

    // A new disk: the change shows once, then reads work.
    rig.host.add_disk(DiskId::Floppy(0), 2880, 512);
    rig.host.sector_mut(DiskId::Floppy(0), 0)[4] = 0x77;
    assert_eq!(floppy_call(&mut rig, 0x1600), (true, 0x06));
    assert_eq!(floppy_call(&mut rig, 0x1600), (false, 0x00));
    let ret = chs_read(&mut rig, 0x00, 1, 0, 0, 1, 0, 0x9000);
    assert!(!cf(&ret));
    assert_eq!(rig.ram[0x9004], 0x77);
    // Hard disks never report a change.
    rig.set(Reg::Rax, 0x1600);
    rig.set(Reg::Rdx, 0x80);
    let ret = rig.int(0x13);
    assert!(!cf(&ret));
}

#[test]
fn hard_disk_params_and_type() {
    let mut rig = rig_with_disks();
    rig.set(Reg::Rax, 0x0800);
    rig.set(Reg::Rdx, 0x80);
    let ret = rig.int(0x13);
    assert!(!cf(&ret));
    let cx = rig.get(Reg::Rcx) as u16;
    let max_cyl = (cx >> 8) | ((cx & 0xC0) << 2);
    assert_eq!(cx & 0x3F, 63);
    assert_eq!(max_cyl, 19, "20160 sectors / (16*63) = 20 cylinders");
    assert_eq!(
        rig.get(Reg::Rdx) as u16,
        0x0F01,
        "max head 15, one hard disk"
    );
    rig.set(Reg::Rax, 0x1500);
    rig.set(Reg::Rdx, 0x80);
    let ret = rig.int(0x13);
    assert!(!cf(&ret));
    assert_eq!(rig.ah(), 3);
    assert_eq!(
        (rig.get(Reg::Rcx) as u16, rig.get(Reg::Rdx) as u16),
        (0, 20160)
    );
}

#[test]
fn chs_write_then_read_back() {
    let mut rig = rig_with_disks();
    rig.ram[0x9000..0x9200].fill(0xAB);
    rig.set(Reg::Rax, 0x0301);
    rig.set(Reg::Rcx, 0x0005);
    rig.set(Reg::Rdx, 0x0080);
    rig.set(Reg::Rbx, 0x9000);
    rig.seg_real(Seg::Es, 0);
    let ret = rig.int(0x13);
    assert!(!cf(&ret));
    assert!(
        rig.host
            .sector(DiskId::HardDisk(0), 4)
            .iter()
            .all(|&b| b == 0xAB)
    );
}

fn edd_packet(rig: &mut Rig, at: usize, count: u16, seg: u16, off: u16, lba: u64) {
    rig.ram[at] = 0x10;
    rig.ram[at + 1] = 0;
    rig.ram[at + 2..at + 4].copy_from_slice(&count.to_le_bytes());
    rig.ram[at + 4..at + 6].copy_from_slice(&off.to_le_bytes());
    rig.ram[at + 6..at + 8].copy_from_slice(&seg.to_le_bytes());
    rig.ram[at + 8..at + 16].copy_from_slice(&lba.to_le_bytes());
}

#[test]
fn edd_check_read_and_parameters() {
    let mut rig = rig_with_disks();
    rig.set(Reg::Rax, 0x4100);
    rig.set(Reg::Rbx, 0x55AA);
    rig.set(Reg::Rdx, 0x80);
    let ret = rig.int(0x13);
    assert!(!cf(&ret));
    assert_eq!(rig.get(Reg::Rbx) as u16, 0xAA55);
    assert_eq!(rig.ah(), 0x30);
    assert_eq!(rig.get(Reg::Rcx) & 1, 1);

    edd_packet(&mut rig, 0x600, 2, 0x1000, 0x0000, 100);
    rig.set(Reg::Rax, 0x4200);
    rig.set(Reg::Rsi, 0x600);
    rig.seg_real(Seg::Ds, 0);
    let ret = rig.int(0x13);
    assert!(!cf(&ret));
    assert_eq!(rig.ram[0x10000], 100);
    assert_eq!(rig.ram[0x10200], 101);
    assert_eq!(&rig.ram[0x602..0x604], &[2, 0]);

    // Past the end: error, count 0.
    edd_packet(&mut rig, 0x600, 4, 0x1000, 0, 20158);
    rig.set(Reg::Rax, 0x4200);
    let ret = rig.int(0x13);
    assert!(cf(&ret));
    assert_eq!(rig.ah(), 0x04);
    assert_eq!(&rig.ram[0x602..0x604], &[0, 0]);

    // 48h: v2 buffer.
    rig.ram[0x700..0x702].copy_from_slice(&0x42u16.to_le_bytes());
    rig.set(Reg::Rax, 0x4800);
    rig.set(Reg::Rsi, 0x700);
    let ret = rig.int(0x13);
    assert!(!cf(&ret));
    let b = &rig.ram[0x700..0x71E];
    assert_eq!(u16::from_le_bytes([b[0], b[1]]), 0x1E);
    assert_eq!(u32::from_le_bytes(b[4..8].try_into().unwrap()), 20);
    assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), 16);
    assert_eq!(u32::from_le_bytes(b[12..16].try_into().unwrap()), 63);
    assert_eq!(u64::from_le_bytes(b[16..24].try_into().unwrap()), 20160);
    assert_eq!(u16::from_le_bytes([b[24], b[25]]), 512);
    assert_eq!(&b[26..30], &[0xFF; 4]);
    // Too small buffer.
    rig.ram[0x700..0x702].copy_from_slice(&0x10u16.to_le_bytes());
    rig.set(Reg::Rax, 0x4800);
    assert!(cf(&rig.int(0x13)));
}

#[test]
fn edd_parameter_packet_sizes() {
    let info = DiskInfo {
        sectors: 1 << 40,
        sector_size: 512,
        read_only: false,
        location: None,
    };
    assert!(edd_drive_parameters(DiskId::HardDisk(0), &info, 0x19).is_none());
    let v1 = edd_drive_parameters(DiskId::HardDisk(0), &info, 0x1A).unwrap();
    assert_eq!(v1.len(), 0x1A);
    // Huge disk: CHS not valid (flag bit 1 clear), geometry saturated.
    assert_eq!(v1[2] & 2, 0);
    assert_eq!(u32::from_le_bytes(v1[4..8].try_into().unwrap()), 16383);
    let cd = DiskInfo {
        sectors: 1000,
        sector_size: 2048,
        read_only: true,
        location: None,
    };
    let p = edd_drive_parameters(DiskId::Cdrom(0), &cd, 0xFFFF).unwrap();
    assert_eq!(p.len(), 0x1E);
    assert_eq!(u16::from_le_bytes([p[24], p[25]]), 2048);
    assert_eq!(p[2] & 4, 4, "removable");
}

fn at(pci_device: u8, pci_function: u8, port: DiskPort) -> Option<DiskLocation> {
    Some(DiskLocation {
        pci_bus: 0,
        pci_device,
        pci_function,
        port,
    })
}

/// Sum of the device path information (key to checksum) is zero, as EDD 3.0 asks.
fn device_path_sums_to_zero(b: &[u8]) -> bool {
    b[0x1E..].iter().fold(0u8, |s, x| s.wrapping_add(*x)) == 0
}

/// INT 13h 48h with a buffer of `size` bytes on drive `dl`; what the BIOS wrote (up to
/// the length it reports) and the sentinel byte after it, which must stay untouched.
fn edd_48h(rig: &mut Rig, dl: u8, size: u16) -> (Vec<u8>, u8) {
    rig.ram[0x700..0x7A0].fill(0xCC);
    rig.ram[0x700..0x702].copy_from_slice(&size.to_le_bytes());
    rig.set(Reg::Rax, 0x4800);
    rig.set(Reg::Rdx, u64::from(dl));
    rig.set(Reg::Rsi, 0x700);
    rig.seg_real(Seg::Ds, 0);
    assert!(
        !cf(&rig.int(0x13)),
        "48h on {dl:#x} with {size:#x} bytes failed"
    );
    let len = usize::from(u16::from_le_bytes([rig.ram[0x700], rig.ram[0x701]]));
    (rig.ram[0x700..0x700 + len].to_vec(), rig.ram[0x700 + len])
}

#[test]
fn edd_30_device_path_for_sata_ata_and_atapi() {
    let mut host = FakeHost::new();
    host.add_disk(DiskId::HardDisk(0), 2 * 16 * 63 * 10, 512);
    host.add_disk(DiskId::HardDisk(1), 20000, 512);
    host.add_disk(DiskId::Cdrom(0), 64, 2048);
    let locations = [
        (DiskId::HardDisk(0), at(5, 0, DiskPort::Sata { port: 2 })),
        (
            DiskId::HardDisk(1),
            at(
                1,
                1,
                DiskPort::Ide {
                    channel: 1,
                    slave: true,
                },
            ),
        ),
        (
            DiskId::Cdrom(0),
            at(
                1,
                1,
                DiskPort::Ide {
                    channel: 1,
                    slave: false,
                },
            ),
        ),
    ];
    for (id, location) in locations {
        host.disks.get_mut(&id).unwrap().0.location = location;
    }
    let mut rig = Rig::new(host);
    rig.post();
    // 41h: version 3.0, with fixed-disk access and EDD (device path) support.
    rig.set(Reg::Rax, 0x4100);
    rig.set(Reg::Rbx, 0x55AA);
    rig.set(Reg::Rdx, 0x80);
    assert!(!cf(&rig.int(0x13)));
    assert_eq!(rig.ah(), 0x30);
    assert_eq!(rig.get(Reg::Rcx) & 0x5, 0x5);

    // T13 layout (Linux's 0x4A-byte buffer): AHCI port 2 at 00:05.0.
    let (b, after) = edd_48h(&mut rig, 0x80, 0x4A);
    assert_eq!((b.len(), after), (0x4A, 0xCC));
    assert_eq!(u64::from_le_bytes(b[16..24].try_into().unwrap()), 20160);
    assert_eq!(&b[0x1E..0x20], &0xBEDDu16.to_le_bytes());
    assert_eq!(b[0x20], 44);
    assert_eq!(&b[0x24..0x28], b"PCI ");
    assert_eq!(&b[0x28..0x30], b"SATA    ");
    assert_eq!(&b[0x30..0x34], &[0, 5, 0, 0]);
    assert_eq!(
        &b[0x38..0x48],
        &[2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    );
    assert!(device_path_sums_to_zero(&b));

    // IDE secondary slave disk: ATA, channel 1 in the interface path, slave in the device path.
    let (b, _) = edd_48h(&mut rig, 0x81, 0xFFFF);
    assert_eq!(b.len(), 0x4A, "a larger buffer gets the largest layout");
    assert_eq!(&b[0x28..0x30], b"ATA     ");
    assert_eq!(&b[0x30..0x34], &[0, 1, 1, 1]);
    assert_eq!(b[0x38], 1);
    assert!(device_path_sums_to_zero(&b));

    // Phoenix layout (0x42 bytes, 8-byte device path): the CD on the secondary master.
    let (b, after) = edd_48h(&mut rig, 0xE0, 0x49);
    assert_eq!((b.len(), after), (0x42, 0xCC));
    assert_eq!(b[0x20], 36);
    assert_eq!(&b[0x28..0x30], b"ATAPI   ");
    assert_eq!(
        &b[0x30..0x34],
        &[0, 1, 1, 0],
        "channel byte reserved in Phoenix"
    );
    assert_eq!(b[0x38], 0, "master");
    assert_eq!(u16::from_le_bytes([b[24], b[25]]), 2048);
    assert!(device_path_sums_to_zero(&b));

    // Smaller buffers get the older layouts, never more than they hold.
    for (size, len) in [(0x41, 0x1E), (0x1E, 0x1E), (0x1D, 0x1A), (0x1A, 0x1A)] {
        let (b, after) = edd_48h(&mut rig, 0x80, size);
        assert_eq!((b.len(), after), (len, 0xCC), "buffer {size:#x}");
    }
}

#[test]
fn cdrom_reads_2048_byte_sectors_and_refuses_writes() {
    let mut rig = rig_with_disks();
    edd_packet(&mut rig, 0x600, 1, 0x2000, 0, 7);
    rig.set(Reg::Rax, 0x4200);
    rig.set(Reg::Rdx, 0xE0);
    rig.set(Reg::Rsi, 0x600);
    rig.seg_real(Seg::Ds, 0);
    let ret = rig.int(0x13);
    assert!(!cf(&ret));
    assert_eq!(rig.ram[0x20000], 7);
    assert_eq!(rig.ram[0x20004], 0xD5);
    assert_eq!(rig.ram[0x20800], 0, "only 2048 bytes written");
    edd_packet(&mut rig, 0x600, 1, 0x2000, 0, 7);
    rig.set(Reg::Rax, 0x4300);
    let ret = rig.int(0x13);
    assert!(cf(&ret));
    assert_eq!(rig.ah(), 0x03);
    // CHS on a CD makes no sense.
    let ret = chs_read(&mut rig, 0xE0, 1, 0, 0, 1, 0, 0x9000);
    assert!(cf(&ret));
}

#[test]
fn hostile_edd_packets_do_not_escape() {
    let mut rig = rig_with_disks();
    // Packet pointer at the very end of RAM.
    rig.seg_real(Seg::Ds, 0xFFFF);
    rig.set(Reg::Rsi, 0xFFFF);
    rig.set(Reg::Rax, 0x4200);
    rig.set(Reg::Rdx, 0x80);
    rig.ram.truncate(0x10000);
    assert!(cf(&rig.int(0x13)));
    // Flat 64-bit buffer far outside RAM.
    rig.seg_real(Seg::Ds, 0);
    rig.set(Reg::Rsi, 0x600);
    edd_packet(&mut rig, 0x600, 1, 0xFFFF, 0xFFFF, 0);
    rig.ram[0x600] = 0x18;
    rig.ram[0x610..0x618].copy_from_slice(&0xFFFF_FFFF_FFFF_0000u64.to_le_bytes());
    rig.set(Reg::Rax, 0x4200);
    assert!(cf(&rig.int(0x13)));
    // Huge count.
    edd_packet(&mut rig, 0x600, 0xFFFF, 0, 0x1000, 0);
    rig.set(Reg::Rax, 0x4200);
    assert!(cf(&rig.int(0x13)));
}

/// INT 13h AH=05h with the address fields at 0000:9000 for `sectors` of track `cyl`/`head`.
fn format_track(rig: &mut Rig, cyl: u8, head: u8, sectors: &[u8], size_code: u8) -> (bool, u8) {
    for (k, &r) in sectors.iter().enumerate() {
        rig.ram[0x9000 + k * 4..0x9004 + k * 4].copy_from_slice(&[cyl, head, r, size_code]);
    }
    rig.set(Reg::Rax, 0x0500 | sectors.len() as u64);
    rig.set(Reg::Rcx, (cyl as u64) << 8);
    rig.set(Reg::Rdx, (head as u64) << 8);
    rig.set(Reg::Rbx, 0x9000);
    rig.seg_real(Seg::Es, 0);
    let ret = rig.int(0x13);
    (cf(&ret), rig.ah())
}

/// DOS FORMAT's calls: AH=18h accepts only the inserted disk's geometry, and AH=05h fills
/// the named sectors of one track with the parameter table's fill byte (F6h).
#[test]
fn floppy_format_track_and_media_type() {
    let mut rig = rig_with_disks();
    let media_type = |rig: &mut Rig, cx: u64| {
        rig.set(Reg::Rax, 0x1800);
        rig.set(Reg::Rcx, cx);
        rig.set(Reg::Rdx, 0x00);
        let ret = rig.int(0x13);
        (cf(&ret), rig.ah())
    };
    assert_eq!(
        media_type(&mut rig, 0x4F12),
        (false, 0x00),
        "80 tracks x 18: 1.44 MB"
    );
    assert_eq!(rig.cpu.seg(Seg::Es).selector, 0xF000);
    assert_eq!(rig.get(Reg::Rdi) as u16, rig.bios.layout().diskette_params);
    assert_eq!(
        media_type(&mut rig, 0x4F09),
        (true, 0x0C),
        "720 KB on a 1.44 MB disk"
    );
    assert_eq!(
        media_type(&mut rig, 0x2709),
        (true, 0x0C),
        "360 KB on a 1.44 MB disk"
    );

    // The rig's RAM stands in for the whole address space: put the ROM's F000 segment
    // (where INT 1Eh points: our parameter table) in place, as the machine maps it.
    let rom = rig.bios.rom().to_vec();
    rig.ram[0xF0000..0x100000].copy_from_slice(&rom[rom.len() - 0x10000..]);
    // Track 2, head 1 = LBAs (2 * 2 + 1) * 18 ..; its neighbours keep their data.
    let first = (2 * 2 + 1) * 18;
    let before = rig.host.sector(DiskId::Floppy(0), first - 1).to_vec();
    let all: Vec<u8> = (1..=18).collect();
    assert_eq!(format_track(&mut rig, 2, 1, &all, 2), (false, 0x00));
    for lba in first..first + 18 {
        assert!(
            rig.host
                .sector(DiskId::Floppy(0), lba)
                .iter()
                .all(|&b| b == 0xF6),
            "sector {lba} not filled"
        );
    }
    assert_eq!(rig.host.sector(DiskId::Floppy(0), first - 1), &before[..]);
    assert_ne!(
        rig.host.sector(DiskId::Floppy(0), first + 18)[..4],
        [0xF6; 4]
    );

    // Fields an image cannot hold, or sectors past the track, change nothing.
    let probe = first + 18 + 3; // track 3, head 0, sector 4
    let untouched = rig.host.sector(DiskId::Floppy(0), probe).to_vec();
    assert_eq!(
        format_track(&mut rig, 3, 0, &[4], 3),
        (true, 0x01),
        "1 KiB sectors"
    );
    assert_eq!(
        format_track(&mut rig, 3, 0, &[4, 19], 2),
        (true, 0x04),
        "sector 19"
    );
    assert_eq!(
        format_track(&mut rig, 3, 0, &[], 2),
        (true, 0x01),
        "no sectors"
    );
    assert_eq!(rig.host.sector(DiskId::Floppy(0), probe), &untouched[..]);
    // The fill byte comes from the table INT 1Eh points to.
    rig.ram[0x7000 + 8] = 0xE5;
    rig.ram[0x78..0x7C].copy_from_slice(&[0x00, 0x70, 0x00, 0x00]);
    assert_eq!(format_track(&mut rig, 3, 0, &[4], 2), (false, 0x00));
    assert!(
        rig.host
            .sector(DiskId::Floppy(0), probe)
            .iter()
            .all(|&b| b == 0xE5)
    );
    // Hard disks do not format tracks.
    rig.set(Reg::Rax, 0x0501);
    rig.set(Reg::Rdx, 0x80);
    assert!(cf(&rig.int(0x13)));
}
