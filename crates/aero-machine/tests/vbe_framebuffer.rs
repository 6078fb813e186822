//! The VBE framebuffer as a guest uses it: a boot sector sets a 640x480x32 mode through
//! our VGA BIOS (INT 10h 4F01/4F02), draws through the 64 KiB bank window at 0xA0000
//! (4F05), enters protected mode, draws through the linear framebuffer at the BAR the mode
//! info reports, reads the banked pixel back through it, and fills a line with REP STOSD.
//! The screen must show all of it. Both windows are mapped as memory; this checks that
//! they are the same bytes and that the scanout reads them.

use std::time::Duration;

use iced_x86::code_asm::*;

mod common;

/// 640x480, 32 bpp (see firmware/src/vgabios/vbe_modes.rs).
const MODE: u16 = 0x129;
const PITCH: u32 = 640 * 4;
const MODE_INFO: u32 = 0x6000;
const PM_CODE: u64 = 0x7D00;
const GDT: u64 = 0x7DC0;
const GDTR: u64 = 0x7DD8;
/// The bank-1 pixel: framebuffer offset 0x10000 = line 25, x 384.
const BANKED: (u32, u32) = (384, 25);
const FILLED_LINE: u32 = 100;

fn fail_with(a: &mut CodeAssembler, code: u8) {
    a.mov(al, b'!' as u32).unwrap();
    a.mov(dx, 0x3F8).unwrap();
    a.out(dx, al).unwrap();
    a.mov(al, code as u32).unwrap();
    a.out(dx, al).unwrap();
}

fn real_mode_part() -> Vec<u8> {
    let mut a = CodeAssembler::new(16).unwrap();
    let mut fail = a.create_label();
    let mut hang = a.create_label();
    a.cli().unwrap();
    a.xor(ax, ax).unwrap();
    a.mov(ds, ax).unwrap();
    a.mov(es, ax).unwrap();
    a.mov(ss, ax).unwrap();
    a.mov(sp, 0x7000).unwrap();
    a.mov(ax, 0x4F01).unwrap();
    a.mov(cx, MODE as u32).unwrap();
    a.mov(di, MODE_INFO).unwrap();
    a.int(0x10).unwrap();
    a.mov(bl, b'1' as u32).unwrap();
    a.cmp(ax, 0x004F).unwrap();
    a.jne(fail).unwrap();
    a.mov(ax, 0x4F02).unwrap();
    a.mov(bx, 0x4000 | MODE as u32).unwrap(); // with the linear framebuffer
    a.int(0x10).unwrap();
    a.mov(bl, b'2' as u32).unwrap();
    a.cmp(ax, 0x004F).unwrap();
    a.jne(fail).unwrap();
    a.mov(ax, 0x4F05).unwrap(); // window A to bank 1 (64 KiB granularity)
    a.xor(bx, bx).unwrap();
    a.mov(dx, 1).unwrap();
    a.int(0x10).unwrap();
    a.mov(bl, b'3' as u32).unwrap();
    a.cmp(ax, 0x004F).unwrap();
    a.jne(fail).unwrap();
    a.mov(ax, 0xA000).unwrap();
    a.mov(ds, ax).unwrap();
    a.mov(dword_ptr(0u32), 0x0000_FF00).unwrap(); // A000:0000 green
    a.mov(bl, b'4' as u32).unwrap();
    a.cmp(dword_ptr(0u32), 0x0000_FF00).unwrap();
    a.jne(fail).unwrap();
    a.xor(ax, ax).unwrap();
    a.mov(ds, ax).unwrap();
    a.lgdt(ptr(GDTR as u32)).unwrap();
    a.mov(eax, cr0).unwrap();
    a.or(eax, 1).unwrap();
    a.mov(cr0, eax).unwrap();
    a.db(&[0xEA, PM_CODE as u8, (PM_CODE >> 8) as u8, 0x08, 0x00])
        .unwrap(); // jmp far 0x08:PM_CODE
    a.set_label(&mut fail).unwrap();
    a.mov(al, b'!' as u32).unwrap();
    a.mov(dx, 0x3F8).unwrap();
    a.out(dx, al).unwrap();
    a.mov(al, bl).unwrap();
    a.out(dx, al).unwrap();
    a.set_label(&mut hang).unwrap();
    a.hlt().unwrap();
    a.jmp(hang).unwrap();
    a.assemble(0x7C00).unwrap()
}

fn protected_mode_part() -> Vec<u8> {
    let mut a = CodeAssembler::new(32).unwrap();
    let mut fail = a.create_label();
    let mut hang = a.create_label();
    a.mov(ax, 0x10).unwrap();
    a.mov(ds, ax).unwrap();
    a.mov(es, ax).unwrap();
    a.mov(ss, ax).unwrap();
    a.mov(esi, dword_ptr(MODE_INFO + 0x28)).unwrap(); // PhysBasePtr
    a.mov(dword_ptr(esi + 4), 0x00FF_0000).unwrap(); // pixel (1, 0) red
    // The banked write is at framebuffer offset 0x10000.
    a.cmp(dword_ptr(esi + 0x1_0000), 0x0000_FF00).unwrap();
    a.jne(fail).unwrap();
    a.lea(edi, dword_ptr(esi + FILLED_LINE * PITCH)).unwrap();
    a.mov(ecx, 640).unwrap();
    a.mov(eax, 0x0000_00FF).unwrap(); // blue
    a.rep().stosd().unwrap();
    a.mov(al, b'O' as u32).unwrap();
    a.mov(dx, 0x3F8).unwrap();
    a.out(dx, al).unwrap();
    a.mov(al, b'K' as u32).unwrap();
    a.out(dx, al).unwrap();
    a.jmp(hang).unwrap();
    a.set_label(&mut fail).unwrap();
    fail_with(&mut a, b'5');
    a.set_label(&mut hang).unwrap();
    a.hlt().unwrap();
    a.jmp(hang).unwrap();
    a.assemble(PM_CODE).unwrap()
}

fn boot_sector() -> Vec<u8> {
    let mut sector = real_mode_part();
    let pm = protected_mode_part();
    let pm_at = (PM_CODE - 0x7C00) as usize;
    assert!(sector.len() <= pm_at, "real-mode part too large");
    assert!(
        pm_at + pm.len() <= (GDT - 0x7C00) as usize,
        "protected-mode part too large"
    );
    sector.resize(512, 0);
    sector[pm_at..pm_at + pm.len()].copy_from_slice(&pm);
    for (i, d) in [0u64, 0x00CF_9A00_0000_FFFF, 0x00CF_9200_0000_FFFF]
        .iter()
        .enumerate()
    {
        let off = (GDT - 0x7C00) as usize + 8 * i;
        sector[off..off + 8].copy_from_slice(&d.to_le_bytes());
    }
    let off = (GDTR - 0x7C00) as usize;
    sector[off..off + 2].copy_from_slice(&23u16.to_le_bytes());
    sector[off + 2..off + 6].copy_from_slice(&(GDT as u32).to_le_bytes());
    sector[510] = 0x55;
    sector[511] = 0xAA;
    sector
}

#[test]
fn guest_draws_through_the_bank_window_and_the_linear_framebuffer() {
    let mut image = boot_sector();
    image.resize(64 * 512, 0);
    let (mut m, serial) = common::run_on_aero(image, None, "OK", Duration::from_secs(60));
    assert!(serial.ends_with("OK"), "guest report: {serial:?}");
    let frame = m.screen();
    assert_eq!((frame.width, frame.height), (640, 480));
    assert_eq!(frame.pixel(0, 0), Some([0, 0, 0, 0xFF]), "mode set cleared");
    assert_eq!(frame.pixel(1, 0), Some([0xFF, 0, 0, 0xFF]), "LFB write");
    assert_eq!(
        frame.pixel(BANKED.0, BANKED.1),
        Some([0, 0xFF, 0, 0xFF]),
        "bank window write"
    );
    assert_eq!(frame.pixel(BANKED.0 + 1, BANKED.1), Some([0, 0, 0, 0xFF]));
    for x in 0..640 {
        assert_eq!(
            frame.pixel(x, FILLED_LINE),
            Some([0, 0, 0xFF, 0xFF]),
            "x {x}"
        );
    }
    assert_eq!(frame.pixel(0, FILLED_LINE + 1), Some([0, 0, 0, 0xFF]));
}
