use aero_cpu::{Reg, Seg};

use super::*;

fn ivt(rig: &Rig, v: usize) -> (u16, u16) {
    let at = v * 4;
    let off = u16::from_le_bytes([rig.ram[at], rig.ram[at + 1]]);
    let seg = u16::from_le_bytes([rig.ram[at + 2], rig.ram[at + 3]]);
    (seg, off)
}

fn word(rig: &Rig, at: usize) -> u16 {
    u16::from_le_bytes([rig.ram[at], rig.ram[at + 1]])
}

#[test]
fn post_builds_ivt_bda_and_programs_chips() {
    let mut host = FakeHost::new().with_pc_bus();
    host.add_disk(DiskId::HardDisk(0), 1000, 512);
    host.add_disk(DiskId::HardDisk(1), 1000, 512);
    host.add_disk(DiskId::Floppy(0), 2880, 512);
    let mut rig = Rig::new(host);
    rig.ram[..0x500].fill(0xCC);
    rig.post();
    let layout = rig.bios.layout().clone();
    assert_eq!(ivt(&rig, 0x13), (0xF000, layout.trap_entry[&0x13]));
    assert_eq!(ivt(&rig, 0x19), (0xF000, layout.trap_entry[&0x19]));
    assert_eq!(ivt(&rig, 0x1E), (0xF000, layout.diskette_params));
    assert_eq!(ivt(&rig, 0x1D), (0, 0));
    assert_eq!(ivt(&rig, 0x08).0, 0xF000);
    assert_ne!(ivt(&rig, 0x08), ivt(&rig, 0x0B), "IRQ0 has its own handler");
    // BDA
    assert_eq!(word(&rig, 0x400), 0x3F8);
    assert_eq!(word(&rig, 0x40E), 0x9FC0);
    assert_eq!(word(&rig, 0x413), 639);
    let equipment = word(&rig, 0x410);
    assert_eq!(equipment & 1, 1, "floppy present");
    assert_eq!((equipment >> 9) & 7, 1, "one serial port");
    assert_eq!(rig.ram[0x475], 2, "two hard disks");
    assert_eq!(word(&rig, 0x41A), 0x1E);
    assert_eq!(word(&rig, 0x482), 0x3E);
    // 12:34:56 → 45296 s → 824,4xx ticks
    let ticks = u32::from_le_bytes(rig.ram[0x46C..0x470].try_into().unwrap());
    assert_eq!(ticks, (45296u64 * 1_193_182 / 65_536) as u32);
    assert_eq!(word(&rig, 0x9FC00), 1, "EBDA size word");
    // PIC: ICW2 vector bases 08h and 70h.
    let w = &rig.host.writes;
    let pos = w.iter().position(|x| *x == (0x20, 1, 0x11)).unwrap();
    assert_eq!(w[pos + 1], (0x21, 1, 0x08));
    let pos = w.iter().position(|x| *x == (0xA0, 1, 0x11)).unwrap();
    assert_eq!(w[pos + 1], (0xA1, 1, 0x70));
    // PIT channel 0 mode 3, divisor 0.
    let pos = w.iter().position(|x| *x == (0x43, 1, 0x36)).unwrap();
    assert_eq!(&w[pos + 1..pos + 3], &[(0x40, 1, 0), (0x40, 1, 0)]);
    // A20 is on.
    assert_eq!(rig.host.port92 & 2, 2);
    // CMOS extended memory fixed up to the 16 MiB machine.
    assert_eq!(
        u16::from_le_bytes([rig.host.cmos[0x17], rig.host.cmos[0x18]]),
        15 * 1024
    );
}

#[test]
fn post_assigns_pci_resources_and_routes_irqs() {
    let mut rig = Rig::new(FakeHost::new().with_pc_bus());
    rig.post();
    let pci = &rig.host.pci;
    // VGA: 16 MiB prefetchable LFB first (largest), at the window start, which is above
    // the ECAM window (0xE0000000-0xEFFFFFFF): no BAR may land there.
    let vga = &pci[&0x0010];
    assert_eq!(vga.reg32(0x10), 0xF000_0000 | 0x8);
    assert_eq!(vga.cfg[4] & 3, 3, "VGA decodes I/O and memory");
    let nic = &pci[&0x0018];
    let bar0 = nic.reg32(0x10);
    let bar2 = nic.reg32(0x18) & !0xF;
    assert_eq!(bar0 & 0x1FFFF, 0, "128 KiB BAR naturally aligned");
    assert!(bar0 >= 0xF100_0000);
    assert_eq!(bar2 & 0x3FFF, 0);
    assert_eq!(nic.reg32(0x1C), 0, "64-bit BAR placed below 4 GiB");
    assert_eq!(nic.reg32(0x18) & 0xF, 0x4, "type bits kept");
    let io = nic.reg32(0x14);
    assert_eq!(io & 1, 1);
    assert!((0xC000..0x10000).contains(&(io & !3)));
    assert_eq!((io & !3) % 64, 0);
    assert_eq!(nic.cfg[4] & 7, 7, "I/O + memory + bus master");
    // Slot 3 INTA → PIRQC → IRQ 11.
    assert_eq!(nic.cfg[0x3C], 11);
    let isa = &pci[&0x0008];
    assert_eq!(&isa.cfg[0x60..0x64], &[10, 10, 11, 11]);
    assert_eq!(rig.host.elcr[1], 0x0C, "IRQ10/11 level triggered");
    let ide = &pci[&0x0009];
    assert_eq!(u16::from_le_bytes([ide.cfg[0x40], ide.cfg[0x41]]), 0x8000);
    assert_eq!(ide.cfg[4] & 1, 1);
    // Its 8- and 4-byte native-mode I/O BARs each get their own naturally aligned ports.
    let mut io_ranges: Vec<(u32, u32)> = [(0x10, 8), (0x14, 4), (0x18, 8), (0x1C, 4), (0x20, 16)]
        .iter()
        .map(|&(reg, size)| (ide.reg32(reg) & !3, size))
        .collect();
    io_ranges.push((io & !3, 64));
    io_ranges.sort();
    for &(base, size) in &io_ranges {
        assert!(base >= 0xC000 && base % size == 0, "{io_ranges:x?}");
    }
    for p in io_ranges.windows(2) {
        assert!(p[0].0 + p[0].1 <= p[1].0, "{io_ranges:x?}");
    }
    // Slot 1 INTB → PIRQB → IRQ 10.
    assert_eq!(ide.cfg[0x3C], 10);
    // No two BARs overlap.
    let mut ranges = vec![
        (vga.reg32(0x10) & !0xF, 16u32 << 20),
        (vga.reg32(0x18) & !0xF, 0x1000),
        (bar0, 0x20000),
        (bar2, 0x4000),
    ];
    ranges.sort();
    for p in ranges.windows(2) {
        assert!(p[0].0 + p[0].1 <= p[1].0, "{ranges:x?}");
    }
}

#[test]
fn pci_bios_calls() {
    let mut rig = Rig::new(FakeHost::new().with_pc_bus());
    rig.post();
    rig.set(Reg::Rax, 0xB101);
    let ret = rig.int(0x1A);
    assert!(!cf(&ret));
    assert_eq!(rig.get(Reg::Rdx) as u32, 0x2049_4350);
    assert_eq!(rig.get(Reg::Rbx) as u16, 0x0210);
    assert_eq!(rig.ah(), 0);
    // Find the PIIX3 IDE function.
    rig.set(Reg::Rax, 0xB102);
    rig.set(Reg::Rcx, 0x7010);
    rig.set(Reg::Rdx, 0x8086);
    rig.set(Reg::Rsi, 0);
    let ret = rig.int(0x1A);
    assert!(!cf(&ret));
    assert_eq!(rig.get(Reg::Rbx) as u16, 0x0009);
    rig.set(Reg::Rsi, 1);
    rig.set(Reg::Rax, 0xB102);
    let ret = rig.int(0x1A);
    assert!(cf(&ret));
    assert_eq!(rig.ah(), 0x86);
    // Find class 030000 (VGA), then read its vendor ID word and write/read a byte.
    rig.set(Reg::Rax, 0xB103);
    rig.set(Reg::Rcx, 0x030000);
    rig.set(Reg::Rsi, 0);
    assert!(!cf(&rig.int(0x1A)));
    assert_eq!(rig.get(Reg::Rbx) as u16, 0x0010);
    rig.set(Reg::Rax, 0xB109);
    rig.set(Reg::Rdi, 0);
    assert!(!cf(&rig.int(0x1A)));
    assert_eq!(rig.get(Reg::Rcx) as u16, 0x1234);
    rig.set(Reg::Rax, 0xB10B);
    rig.set(Reg::Rdi, 0x3C);
    rig.set(Reg::Rcx, 0x05);
    assert!(!cf(&rig.int(0x1A)));
    assert_eq!(rig.host.pci[&0x0010].cfg[0x3C], 5);
    // Misaligned dword access.
    rig.set(Reg::Rax, 0xB10A);
    rig.set(Reg::Rdi, 0x3E);
    assert!(cf(&rig.int(0x1A)));
    assert_eq!(rig.ah(), 0x87);
}

#[test]
fn boot_from_hard_disk() {
    let mut host = FakeHost::new();
    host.add_disk(DiskId::HardDisk(0), 100, 512);
    let s = host.sector_mut(DiskId::HardDisk(0), 0);
    s[510] = 0x55;
    s[511] = 0xAA;
    let mut rig = Rig::new(host);
    rig.post();
    assert_eq!(rig.int(0x19), Ret::Jumped);
    assert_eq!((rig.cpu.seg(Seg::Cs).selector, rig.cpu.rip), (0, 0x7C00));
    assert_eq!(rig.get(Reg::Rdx) as u8, 0x80);
    assert_eq!(rig.ram[0x7C04], 0xD5);
    assert_eq!(&rig.ram[0x7DFE..0x7E00], &[0x55, 0xAA]);
    assert_eq!(rig.cpu.rflags & 0x200, 0x200, "interrupts on");
    assert!(String::from_utf8_lossy(&rig.host.debug_out).contains("Booting from Hard Disk"));
}

#[test]
fn boot_skips_unbootable_disk_and_fails_cleanly() {
    let mut host = FakeHost::new();
    host.add_disk(DiskId::HardDisk(0), 100, 512); // no 55AA
    let mut config = BiosConfig::new(RAM_SIZE as u64);
    config.boot_order = vec![BootDevice::HardDisk, BootDevice::Cdrom, BootDevice::Floppy];
    let mut rig = Rig::with_config(config, host);
    rig.post();
    assert_eq!(rig.int(0x19), Ret::Jumped);
    assert_eq!(rig.cpu.seg(Seg::Cs).selector, 0xF000);
    assert_eq!(rig.cpu.rip, rig.bios.layout().boot_fail as u64);
    assert!(String::from_utf8_lossy(&rig.host.debug_out).contains("not a bootable disk"));
}

#[test]
fn floppy_boot_does_not_need_a_signature() {
    let mut host = FakeHost::new();
    host.add_disk(DiskId::Floppy(0), 2880, 512);
    let mut config = BiosConfig::new(RAM_SIZE as u64);
    config.boot_order = vec![BootDevice::Floppy];
    let mut rig = Rig::with_config(config, host);
    rig.post();
    assert_eq!(rig.int(0x19), Ret::Jumped);
    assert_eq!(rig.cpu.rip, 0x7C00);
    assert_eq!(rig.get(Reg::Rdx) as u8, 0x00);
}

#[test]
fn el_torito_boot_and_status() {
    let mut host = FakeHost::new();
    host.add_disk(DiskId::Cdrom(0), 64, 2048);
    host.sector_mut(DiskId::Cdrom(0), 17)
        .copy_from_slice(&crate::bios::eltorito_test_data::boot_record(20));
    host.sector_mut(DiskId::Cdrom(0), 20)
        .copy_from_slice(&crate::bios::eltorito_test_data::catalog(0, 8, 30));
    let mut config = BiosConfig::new(RAM_SIZE as u64);
    config.boot_order = vec![BootDevice::HardDisk, BootDevice::Cdrom];
    let mut rig = Rig::with_config(config, host);
    rig.post();
    assert_eq!(rig.int(0x19), Ret::Jumped);
    assert_eq!((rig.cpu.seg(Seg::Cs).selector, rig.cpu.rip), (0, 0x7C00));
    assert_eq!(rig.get(Reg::Rdx) as u8, 0xE0);
    // 8 virtual sectors = 4 KiB = CD sectors 30 and 31.
    assert_eq!(rig.ram[0x7C00], 30);
    assert_eq!(rig.ram[0x7C00 + 2048], 31);
    assert_eq!(rig.ram[0x7C00 + 4096], 0, "nothing beyond the image");
    // INT 13h 4B01h reports the boot.
    rig.set(Reg::Rax, 0x4B01);
    rig.set(Reg::Rdx, 0xE0);
    rig.set(Reg::Rsi, 0x500);
    rig.seg_real(Seg::Ds, 0);
    let ret = rig.int(0x13);
    assert!(!cf(&ret));
    assert_eq!(rig.ram[0x500], 0x13);
    assert_eq!(rig.ram[0x502], 0xE0);
    assert_eq!(rig.ram[0x504], 30);
}

/// A CD whose boot catalog (at CD sector 20) names an image at CD sector 30 with `media`.
fn emulation_cd(host: &mut FakeHost, media: u8) {
    host.add_disk(DiskId::Cdrom(0), 64, 2048);
    host.sector_mut(DiskId::Cdrom(0), 17)
        .copy_from_slice(&crate::bios::eltorito_test_data::boot_record(20));
    let mut catalog = crate::bios::eltorito_test_data::catalog(0, 1, 30);
    catalog[33] = media;
    host.sector_mut(DiskId::Cdrom(0), 20)
        .copy_from_slice(&catalog);
}

/// INT 13h AH=02h: one sector at CHS (cyl 0, `head`, `sector`) of drive `dl` to 0000:8000.
fn read_chs(rig: &mut Rig, dl: u8, head: u8, sector: u8) -> (bool, u8) {
    rig.set(Reg::Rax, 0x0201);
    rig.set(Reg::Rcx, u64::from(sector));
    rig.set(Reg::Rdx, u64::from(head) << 8 | u64::from(dl));
    rig.set(Reg::Rbx, 0x8000);
    rig.seg_real(Seg::Es, 0);
    let ret = rig.int(0x13);
    (cf(&ret), (rig.get(Reg::Rax) >> 8) as u8)
}

#[test]
fn el_torito_floppy_emulation_makes_the_image_drive_a() {
    let mut host = FakeHost::new();
    emulation_cd(&mut host, 2); // 1.44 MB
    host.add_disk(DiskId::Floppy(0), 2880, 512);
    let mut config = BiosConfig::new(RAM_SIZE as u64);
    config.boot_order = vec![BootDevice::Cdrom];
    let mut rig = Rig::with_config(config, host);
    rig.post();
    assert_eq!(rig.int(0x19), Ret::Jumped);
    assert_eq!((rig.cpu.seg(Seg::Cs).selector, rig.cpu.rip), (0, 0x7C00));
    assert_eq!(rig.get(Reg::Rdx) as u8, 0x00, "booted as drive A:");
    assert_eq!(
        rig.ram[0x7C00], 30,
        "the image's first sector is the boot sector"
    );
    // Virtual sector 4 (CHS 0/0/5) is the start of CD sector 31.
    assert_eq!(read_chs(&mut rig, 0x00, 0, 5), (false, 0));
    assert_eq!((rig.ram[0x8000], rig.ram[0x8004]), (31, 0xD5));
    // The real floppy answers as B:, and the BDA counts two drives.
    assert_eq!(read_chs(&mut rig, 0x01, 0, 2), (false, 0));
    assert_eq!(rig.ram[0x8000], 1);
    assert_eq!((rig.ram[0x410] & 0xC1), 0x41);
    // INT 13h 08h gives the 1.44 MB shape: 80 cylinders, 18 sectors, 2 heads.
    rig.set(Reg::Rax, 0x0800);
    rig.set(Reg::Rdx, 0x00);
    assert!(!cf(&rig.int(0x13)));
    assert_eq!(rig.get(Reg::Rcx) as u16, (79 << 8) | 18);
    assert_eq!((rig.get(Reg::Rdx) >> 8) as u8, 1);
    // The image is on a CD: writes are refused.
    rig.set(Reg::Rax, 0x0301);
    rig.set(Reg::Rcx, 1);
    rig.set(Reg::Rdx, 0);
    rig.set(Reg::Rbx, 0x8000);
    assert!(cf(&rig.int(0x13)));
    assert_eq!((rig.get(Reg::Rax) >> 8) as u8, 0x03, "write protected");
    // 4B00h reports drive 00h, then ends the emulation: A: is the real floppy again.
    rig.set(Reg::Rax, 0x4B00);
    rig.set(Reg::Rdx, 0x00);
    rig.set(Reg::Rsi, 0x500);
    rig.seg_real(Seg::Ds, 0);
    assert!(!cf(&rig.int(0x13)));
    assert_eq!((rig.ram[0x501], rig.ram[0x502]), (2, 0x00));
    assert_eq!(read_chs(&mut rig, 0x00, 0, 2), (false, 0));
    assert_eq!(rig.ram[0x8000], 1);
    assert_eq!((rig.ram[0x410] & 0xC1), 0x01);
}

#[test]
fn el_torito_hard_disk_emulation_shifts_the_real_disks() {
    let mut host = FakeHost::new();
    emulation_cd(&mut host, 4);
    // The image's MBR (CD sector 30): one partition of 2 cylinders of 4 heads x 16 sectors.
    let mbr = host.sector_mut(DiskId::Cdrom(0), 30);
    mbr[0x1BE + 4] = 0x01;
    mbr[0x1BE + 5] = 3;
    mbr[0x1BE + 6] = 16;
    mbr[0x1BE + 8..0x1BE + 12].copy_from_slice(&16u32.to_le_bytes());
    mbr[0x1BE + 12..0x1BE + 16].copy_from_slice(&112u32.to_le_bytes());
    host.add_disk(DiskId::HardDisk(0), 100, 512);
    let mut config = BiosConfig::new(RAM_SIZE as u64);
    config.boot_order = vec![BootDevice::Cdrom];
    let mut rig = Rig::with_config(config, host);
    rig.post();
    assert_eq!(rig.int(0x19), Ret::Jumped);
    assert_eq!(rig.get(Reg::Rdx) as u8, 0x80);
    assert_eq!(rig.ram[0x475], 2, "BDA hard disk count includes the image");
    // CHS 0/1/1 of the image = virtual sector 16 = CD sector 34.
    assert_eq!(read_chs(&mut rig, 0x80, 1, 1), (false, 0));
    assert_eq!(rig.ram[0x8000], 34);
    // The machine's first disk is now 81h.
    assert_eq!(read_chs(&mut rig, 0x81, 0, 3), (false, 0));
    assert_eq!((rig.ram[0x8000], rig.ram[0x8004]), (2, 0xD5));
    // Beyond the image: sector not found, never the next CD data.
    rig.set(Reg::Rax, 0x0201);
    rig.set(Reg::Rcx, (2 << 8) | 1);
    rig.set(Reg::Rdx, 0x80);
    assert!(cf(&rig.int(0x13)));
}

#[test]
fn int18_from_a_failed_boot_sector_tries_the_next_device() {
    let mut host = FakeHost::new();
    host.add_disk(DiskId::HardDisk(0), 100, 512);
    let s = host.sector_mut(DiskId::HardDisk(0), 0);
    s[510] = 0x55;
    s[511] = 0xAA;
    host.add_disk(DiskId::Floppy(0), 2880, 512);
    let mut config = BiosConfig::new(RAM_SIZE as u64);
    config.boot_order = vec![BootDevice::HardDisk, BootDevice::Floppy];
    let mut rig = Rig::with_config(config, host);
    rig.post();
    assert_eq!(rig.int(0x19), Ret::Jumped);
    assert_eq!(rig.get(Reg::Rdx) as u8, 0x80);
    // The MBR found nothing to boot and called INT 18h: next is the floppy.
    assert_eq!(rig.int(0x18), Ret::Jumped);
    assert_eq!((rig.cpu.seg(Seg::Cs).selector, rig.cpu.rip), (0, 0x7C00));
    assert_eq!(rig.get(Reg::Rdx) as u8, 0x00);
    // And when the floppy gives up too, the failure message routine runs.
    assert_eq!(rig.int(0x18), Ret::Jumped);
    assert_eq!(rig.cpu.rip, rig.bios.layout().boot_fail as u64);
    // INT 19h starts over from the first device.
    assert_eq!(rig.int(0x19), Ret::Jumped);
    assert_eq!(rig.get(Reg::Rdx) as u8, 0x80);
}
