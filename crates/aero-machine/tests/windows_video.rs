//! Windows' own video paths on Aero, each with QEMU's std-vga as the oracle.
//!
//! bootvid (the boot video driver) does not ask the BIOS for anything: it checks for a
//! VGA by writing graphics-controller and sequencer registers and reading them back,
//! programs mode 12h (640x480, 16 colours, planar) register by register, loads its own
//! palette and draws through the planar machinery: write mode 2 with the bit mask and
//! latches, write mode 0 with the map mask and set/reset, write mode 1 latch copies and
//! colour-compare reads. A boot-disk program does the same here; on Aero and on
//! `qemu-system-x86_64 -vga std` the screens must be identical pixel for pixel. QEMU
//! expands the DAC's 6-bit values to 8 bits by its own rule (Aero replicates the top
//! bits), so pixels are compared at the DAC's 6-bit precision, exact for what it holds.
//!
//! The x86 kernel's video port calls INT 10h from a V86 task (the `v86` module); VGA
//! drivers read registers back (`readback`) and ask the BIOS for modes, fonts, palette
//! and state (`answers`): each is compared with QEMU and SeaVGABIOS the same way.

use std::path::PathBuf;
use std::time::Duration;

use iced_x86::code_asm::*;

mod common;
use common::{Picture, dac_bits, program_disk, serial_out};

const MAIN: u64 = 0x7E00;
const MAIN_SECTORS: u32 = 20;
/// Colour-compare results parked in RAM before being drawn.
const COMPARE_BUF: u32 = 0x0600;
/// Rectangle parameters for `fill_rect`: x0, x1 (exclusive), y0, y1, colour.
const RECT: u32 = 0x0700;

/// The standard VGA mode 12h register file (IBM VGA technical reference values).
const MISC_12H: u8 = 0xE3;
const SEQ_12H: [u8; 4] = [0x01, 0x0F, 0x00, 0x06];
const CRTC_12H: [u8; 25] = [
    0x5F, 0x4F, 0x50, 0x82, 0x54, 0x80, 0x0B, 0x3E, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xEA, 0x8C, 0xDF, 0x28, 0x00, 0xE7, 0x04, 0xE3, 0xFF,
];
const GC_12H: [u8; 9] = [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x0F, 0xFF];
/// Palette registers 0–15 = DAC entries 0–15 (bootvid's identity), then mode control,
/// overscan, colour plane enable, panning, colour select.
const ATTR_12H: [u8; 21] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F,
    0x01, 0x00, 0x0F, 0x00, 0x00,
];
/// A palette of our own (6-bit components), with values whose low bits matter.
const PALETTE: [[u8; 3]; 16] = [
    [0, 0, 0],
    [0, 0, 42],
    [0, 42, 0],
    [0, 42, 42],
    [42, 0, 0],
    [42, 0, 42],
    [42, 21, 0],
    [42, 42, 42],
    [21, 21, 21],
    [21, 21, 63],
    [21, 63, 21],
    [21, 63, 63],
    [63, 21, 21],
    [63, 21, 63],
    [63, 63, 21],
    [63, 63, 63],
];

/// `out dx, al` with DX = port, AL = value.
fn outb(a: &mut CodeAssembler, port: u16, value: u8) {
    a.mov(dx, u32::from(port)).unwrap();
    a.mov(al, u32::from(value)).unwrap();
    a.out(dx, al).unwrap();
}

/// One word out: index in the low byte, data in the high byte (how bootvid writes).
fn outw(a: &mut CodeAssembler, port: u16, index: u8, value: u8) {
    a.mov(dx, u32::from(port)).unwrap();
    a.mov(ax, u32::from(index) | u32::from(value) << 8).unwrap();
    a.out(dx, ax).unwrap();
}

/// Reads `port` and fails with `code` unless `(value & mask) == expected`.
fn expect_in(a: &mut CodeAssembler, fail: CodeLabel, port: u16, mask: u8, expected: u8, code: u8) {
    a.mov(dx, u32::from(port)).unwrap();
    a.in_(al, dx).unwrap();
    a.and(al, u32::from(mask)).unwrap();
    a.mov(bl, u32::from(code)).unwrap();
    a.cmp(al, u32::from(expected)).unwrap();
    a.jne(fail).unwrap();
}

/// bootvid's VGA presence check: index and data registers of the graphics controller
/// (read map select, bit mask, set/reset) and the sequencer's memory mode must hold
/// what is written; the originals are put back.
fn presence_check(a: &mut CodeAssembler, fail: CodeLabel) {
    outb(a, 0x3CE, 0x04);
    expect_in(a, fail, 0x3CE, 0x0F, 0x04, b'a');
    a.mov(dx, 0x3CFu32).unwrap();
    a.in_(al, dx).unwrap();
    a.push(ax).unwrap();
    for (value, code) in [(0x03u8, b'b'), (0x00, b'c'), (0x02, b'd')] {
        outb(a, 0x3CF, value);
        expect_in(a, fail, 0x3CF, 0xFF, value, code);
    }
    a.pop(ax).unwrap();
    a.mov(dx, 0x3CFu32).unwrap();
    a.out(dx, al).unwrap();
    outb(a, 0x3CE, 0x08);
    expect_in(a, fail, 0x3CE, 0x0F, 0x08, b'e');
    for (value, code) in [(0xBBu8, b'f'), (0x44, b'g')] {
        outb(a, 0x3CF, value);
        expect_in(a, fail, 0x3CF, 0xFF, value, code);
    }
    outb(a, 0x3CF, 0xFF);
    // Set/reset through a word write, read back through the index port.
    outw(a, 0x3CE, 0x00, 0x0A);
    expect_in(a, fail, 0x3CE, 0x0F, 0x00, b'h');
    expect_in(a, fail, 0x3CF, 0x0F, 0x0A, b'i');
    outw(a, 0x3CE, 0x00, 0x00);
    // Sequencer memory mode: flip the odd/even bit and read it back.
    outb(a, 0x3C4, 0x04);
    expect_in(a, fail, 0x3C4, 0x07, 0x04, b'j');
    a.mov(dx, 0x3C5u32).unwrap();
    a.in_(al, dx).unwrap();
    a.mov(ah, al).unwrap();
    a.xor(al, 0x04u32).unwrap();
    a.out(dx, al).unwrap();
    a.mov(bh, al).unwrap();
    a.in_(al, dx).unwrap();
    a.mov(bl, u32::from(b'k')).unwrap();
    a.cmp(al, bh).unwrap();
    a.jne(fail).unwrap();
    a.mov(al, ah).unwrap();
    a.out(dx, al).unwrap();
}

/// Mode 12h register by register, the DAC with our palette, the screen cleared.
fn set_mode_12h(a: &mut CodeAssembler) {
    outb(a, 0x3C2, MISC_12H);
    outw(a, 0x3C4, 0x00, 0x01); // synchronous reset
    for (i, v) in SEQ_12H.iter().enumerate() {
        outw(a, 0x3C4, i as u8 + 1, *v);
    }
    outw(a, 0x3C4, 0x00, 0x03);
    outw(a, 0x3D4, 0x11, 0x0E); // unlock CRTC 0–7
    for (i, v) in CRTC_12H.iter().enumerate() {
        outw(a, 0x3D4, i as u8, *v);
    }
    for (i, v) in GC_12H.iter().enumerate() {
        outw(a, 0x3CE, i as u8, *v);
    }
    a.mov(dx, 0x3DAu32).unwrap();
    a.in_(al, dx).unwrap();
    for (i, v) in ATTR_12H.iter().enumerate() {
        outb(a, 0x3C0, i as u8);
        outb(a, 0x3C0, *v);
    }
    outb(a, 0x3C0, 0x20); // palette address source: display on
    outb(a, 0x3C6, 0xFF);
    outb(a, 0x3C8, 0);
    a.mov(dx, 0x3C9u32).unwrap();
    for rgb in PALETTE {
        for c in rgb {
            a.mov(al, u32::from(c)).unwrap();
            a.out(dx, al).unwrap();
        }
    }
    // Clear: set/reset 0 on all planes through write mode 0.
    outw(a, 0x3C4, 0x02, 0x0F);
    outw(a, 0x3CE, 0x00, 0x00);
    outw(a, 0x3CE, 0x01, 0x0F);
    outw(a, 0x3CE, 0x05, 0x00);
    outw(a, 0x3CE, 0x08, 0xFF);
    a.mov(ax, 0xA000u32).unwrap();
    a.mov(es, ax).unwrap();
    a.xor(di, di).unwrap();
    a.mov(cx, 640 * 480 / 8 / 2).unwrap();
    a.mov(ax, 0xFFFFu32).unwrap();
    a.cld().unwrap();
    a.rep().stosw().unwrap();
    outw(a, 0x3CE, 0x01, 0x00);
}

/// `plot`: CX = x, DX = y, BL = colour, in write mode 2 (ES = A000h): bit mask for the
/// pixel, a read to load the latches, the colour written.
fn emit_plot(a: &mut CodeAssembler, plot: &mut CodeLabel) {
    a.set_label(plot).unwrap();
    a.push(ax).unwrap();
    a.push(cx).unwrap();
    a.push(dx).unwrap();
    a.push(di).unwrap();
    a.mov(ax, dx).unwrap();
    a.mov(di, 80u32).unwrap();
    a.mul(di).unwrap();
    a.mov(di, ax).unwrap();
    a.mov(ax, cx).unwrap();
    a.shr(ax, 3).unwrap();
    a.add(di, ax).unwrap();
    a.and(cl, 7).unwrap();
    a.mov(ah, 0x80u32).unwrap();
    a.shr(ah, cl).unwrap();
    a.mov(al, 8u32).unwrap();
    a.mov(dx, 0x3CEu32).unwrap();
    a.out(dx, ax).unwrap();
    a.mov(al, byte_ptr(di).es()).unwrap();
    a.mov(byte_ptr(di).es(), bl).unwrap();
    a.pop(di).unwrap();
    a.pop(dx).unwrap();
    a.pop(cx).unwrap();
    a.pop(ax).unwrap();
    a.ret().unwrap();
}

/// `fill_rect`: the rectangle at RECT, pixel by pixel through `plot`.
fn emit_fill_rect(a: &mut CodeAssembler, fill: &mut CodeLabel, plot: CodeLabel) {
    let mut row = a.create_label();
    let mut col = a.create_label();
    a.set_label(fill).unwrap();
    a.mov(dx, word_ptr(RECT + 4)).unwrap();
    a.mov(bl, byte_ptr(RECT + 8)).unwrap();
    a.set_label(&mut row).unwrap();
    a.mov(cx, word_ptr(RECT)).unwrap();
    a.set_label(&mut col).unwrap();
    a.call(plot).unwrap();
    a.inc(cx).unwrap();
    a.cmp(cx, word_ptr(RECT + 2)).unwrap();
    a.jb(col).unwrap();
    a.inc(dx).unwrap();
    a.cmp(dx, word_ptr(RECT + 6)).unwrap();
    a.jb(row).unwrap();
    a.ret().unwrap();
}

fn rect(a: &mut CodeAssembler, fill: CodeLabel, x0: u16, x1: u16, y0: u16, y1: u16, colour: u8) {
    for (off, v) in [(0, x0), (2, x1), (4, y0), (6, y1), (8, u16::from(colour))] {
        a.mov(word_ptr(RECT + off), u32::from(v)).unwrap();
    }
    a.call(fill).unwrap();
}

/// Read (loading the latches) then write `value` at every byte of a block of rows
/// `row0..` and byte columns `col0..` (ES = A000h).
fn rmw_block(a: &mut CodeAssembler, row0: u32, rows: u32, col0: u32, cols: u32, value: u8) {
    let mut row = a.create_label();
    let mut col = a.create_label();
    a.mov(bx, rows).unwrap();
    a.mov(si, row0 * 80 + col0).unwrap();
    a.set_label(&mut row).unwrap();
    a.mov(di, si).unwrap();
    a.mov(cx, cols).unwrap();
    a.set_label(&mut col).unwrap();
    a.mov(al, byte_ptr(di).es()).unwrap();
    a.mov(byte_ptr(di).es(), u32::from(value)).unwrap();
    a.inc(di).unwrap();
    a.loop_(col).unwrap();
    a.add(si, 80u32).unwrap();
    a.dec(bx).unwrap();
    a.jnz(row).unwrap();
}

fn main_program() -> Vec<u8> {
    let mut a = CodeAssembler::new(16).unwrap();
    let mut fail = a.create_label();
    let mut plot = a.create_label();
    let mut fill = a.create_label();
    let mut start = a.create_label();
    a.jmp(start).unwrap();
    emit_plot(&mut a, &mut plot);
    emit_fill_rect(&mut a, &mut fill, plot);
    a.set_label(&mut fail).unwrap();
    a.mov(dx, 0x3F8u32).unwrap();
    a.mov(al, u32::from(b'!')).unwrap();
    a.out(dx, al).unwrap();
    a.mov(al, bl).unwrap();
    a.out(dx, al).unwrap();
    let mut hang = a.create_label();
    a.set_label(&mut hang).unwrap();
    a.cli().unwrap();
    a.hlt().unwrap();
    a.jmp(hang).unwrap();

    a.set_label(&mut start).unwrap();
    presence_check(&mut a, fail);
    set_mode_12h(&mut a);

    // 1. Write mode 2: sixteen overlapping bands with edges inside bytes.
    outw(&mut a, 0x3CE, 0x05, 0x02);
    for c in 0..16u16 {
        rect(
            &mut a,
            fill,
            3 + 5 * c,
            301 + 13 * c,
            10 + 12 * c,
            22 + 12 * c,
            c as u8,
        );
    }
    // XOR function (data rotate register) over the bands.
    outw(&mut a, 0x3CE, 0x03, 0x18);
    rect(&mut a, fill, 150, 420, 50, 130, 0x0F);
    outw(&mut a, 0x3CE, 0x03, 0x00);

    // 2. Write mode 0 through the map mask: one byte pattern per plane.
    outw(&mut a, 0x3CE, 0x05, 0x00);
    outw(&mut a, 0x3CE, 0x08, 0xFF);
    for (plane, pattern) in [0xAAu8, 0xCC, 0xF0, 0x81].iter().enumerate() {
        outw(&mut a, 0x3C4, 0x02, 1 << plane);
        a.mov(ax, u32::from(*pattern) * 0x101).unwrap();
        for row in 220..260u32 {
            a.mov(di, row * 80 + 10).unwrap();
            a.mov(cx, 10u32).unwrap();
            a.rep().stosw().unwrap();
        }
    }
    outw(&mut a, 0x3C4, 0x02, 0x0F);

    // 3. Set/reset on planes 2–3 under a bit mask, latches keeping the rest.
    outw(&mut a, 0x3CE, 0x00, 0x0C);
    outw(&mut a, 0x3CE, 0x01, 0x0C);
    outw(&mut a, 0x3CE, 0x08, 0x3C);
    rmw_block(&mut a, 230, 20, 15, 20, 0x5A);
    outw(&mut a, 0x3CE, 0x01, 0x00);
    outw(&mut a, 0x3CE, 0x08, 0xFF);

    // 4. Read mode 1: where does row 100 hold colour 7, and row 150 a colour with planes
    // 0 and 1 set (colour don't care)? The result bytes go to RAM, then drawn in white.
    for (row, colour, dont_care) in [(100u32, 7u8, 0x0Fu8), (150, 3, 0x03)] {
        outw(&mut a, 0x3CE, 0x05, 0x08);
        outw(&mut a, 0x3CE, 0x02, colour);
        outw(&mut a, 0x3CE, 0x07, dont_care);
        for col in 0..40u32 {
            a.mov(al, byte_ptr(row * 80 + col).es()).unwrap();
            a.mov(di, COMPARE_BUF + col + if row == 100 { 0 } else { 40 })
                .unwrap();
            a.mov(byte_ptr(di), al).unwrap();
        }
    }
    outw(&mut a, 0x3CE, 0x05, 0x00);
    outw(&mut a, 0x3CE, 0x07, 0x0F);
    for row in 270..276u32 {
        a.mov(si, COMPARE_BUF).unwrap();
        a.mov(di, row * 80).unwrap();
        a.mov(cx, 80u32).unwrap();
        a.rep().movsb().unwrap();
    }

    // 5. Write mode 1: copy rows 10..90, bytes 0..40 to rows 380..460, bytes 40..80
    // through the latches.
    outw(&mut a, 0x3CE, 0x05, 0x01);
    a.push(ds).unwrap();
    a.mov(ax, 0xA000u32).unwrap();
    a.mov(ds, ax).unwrap();
    for row in 0..80u32 {
        a.mov(si, (row + 10) * 80).unwrap();
        a.mov(di, (row + 380) * 80 + 40).unwrap();
        a.mov(cx, 40u32).unwrap();
        a.rep().movsb().unwrap();
    }
    a.pop(ds).unwrap();
    outw(&mut a, 0x3CE, 0x05, 0x00);

    // 6. Read mode 0 with read map select, plane by plane, written back through the map
    // mask: row 100 (x 0..320) copied to row 470 the way bootvid saves and restores
    // screen areas.
    for plane in 0..4u8 {
        outw(&mut a, 0x3CE, 0x04, plane);
        for col in 0..40u32 {
            a.mov(al, byte_ptr(100 * 80 + col).es()).unwrap();
            a.mov(byte_ptr(COMPARE_BUF + 0x80 + col), al).unwrap();
        }
        outw(&mut a, 0x3C4, 0x02, 1 << plane);
        a.mov(si, COMPARE_BUF + 0x80).unwrap();
        a.mov(di, 470 * 80u32).unwrap();
        a.mov(cx, 40u32).unwrap();
        a.rep().movsb().unwrap();
    }
    outw(&mut a, 0x3C4, 0x02, 0x0F);
    outw(&mut a, 0x3CE, 0x04, 0x00);

    // 7. What vga.sys-style drivers add: write mode 3 (set/reset colour, the rotated
    // CPU byte ANDed with the bit mask) with OR, and write mode 0 with a rotate count and
    // the AND function, over the bands.
    outw(&mut a, 0x3CE, 0x05, 0x03);
    outw(&mut a, 0x3CE, 0x00, 0x0C);
    outw(&mut a, 0x3CE, 0x03, 0x10 | 3); // OR, rotate right 3
    outw(&mut a, 0x3CE, 0x08, 0xF7);
    rmw_block(&mut a, 140, 20, 5, 25, 0x96);
    outw(&mut a, 0x3CE, 0x05, 0x00);
    outw(&mut a, 0x3CE, 0x03, 0x08 | 5); // AND, rotate right 5
    outw(&mut a, 0x3CE, 0x08, 0x7E);
    rmw_block(&mut a, 165, 20, 20, 30, 0x3C);
    outw(&mut a, 0x3CE, 0x03, 0x00);
    outw(&mut a, 0x3CE, 0x08, 0xFF);

    serial_out(&mut a, b"BOOTVID-OK\r\n");
    a.jmp(hang).unwrap();
    let code = a.assemble(MAIN).unwrap();
    assert!(
        code.len() <= MAIN_SECTORS as usize * 512,
        "main program of {} bytes",
        code.len()
    );
    code
}

fn bootvid_disk() -> Vec<u8> {
    program_disk(MAIN, MAIN_SECTORS, &main_program())
}

/// Boots `image` on Aero until COM1 shows `done` or '!'; the serial output and the screen.
fn run_on_aero(image: Vec<u8>, done: &str) -> (String, Picture) {
    let (mut m, serial) = common::run_on_aero(image, None, done, Duration::from_secs(120));
    (serial, Picture::screen_of(&mut m))
}

fn out_dir() -> PathBuf {
    common::out_dir("windows_video")
}

/// `image` on QEMU's std-vga (see `common::run_on_qemu`).
fn run_on_qemu(
    image: Vec<u8>,
    name: &str,
    done: &str,
    screen: bool,
) -> Option<(String, Option<Picture>)> {
    common::run_on_qemu(&image, &out_dir(), name, done, screen)
}

#[test]
fn bootvid_presence_check_and_mode_12h_drawing_match_qemu_std_vga() {
    let (serial, aero) = run_on_aero(bootvid_disk(), "BOOTVID-OK");
    assert!(serial.contains("BOOTVID-OK"), "Aero: {serial:?}");
    assert_eq!((aero.width, aero.height), (640, 480), "mode 12h");
    // The picture holds what was drawn (so an all-black pair cannot pass).
    let at = |x: u32, y: u32| {
        let i = ((y * aero.width + x) * 3) as usize;
        [aero.rgb[i], aero.rgb[i + 1], aero.rgb[i + 2]].map(dac_bits)
    };
    assert_eq!(at(3, 10), PALETTE[0], "band 0 keeps colour 0");
    assert_eq!(at(5 * 15 + 3, 12 * 15 + 10), PALETTE[15], "band 15");
    assert_eq!(at(0, 479), PALETTE[0], "cleared");
    for x in 0..320 {
        assert_eq!(at(x, 470), at(x, 100), "plane-by-plane copy at x {x}");
    }
    assert_eq!(at(100, 470), PALETTE[7], "the copy holds band 7");
    aero.write_ppm(&out_dir().join("bootvid-aero.ppm"));
    let Some((serial, qemu)) = run_on_qemu(bootvid_disk(), "bootvid", "BOOTVID-OK", true) else {
        return;
    };
    assert!(serial.contains("BOOTVID-OK"), "QEMU: {serial:?}");
    let qemu = qemu.expect("QEMU wrote its screendump");
    common::assert_same_dac_colours(&aero, &qemu, &out_dir());
}

// ---- INT 10h from a V86 task ----------------------------------------------------------
//
// The x86 kernel's video port calls the video BIOS from a V86 task. The program runs the
// same INT 10h sequence three times: in real mode, in V86 mode with IOPL 3 (INT goes
// through the IDT; the monitor reflects it to the real-mode vector, the ROM's IRET runs
// natively) and in V86 mode with IOPL 0 (INT, IRET, CLI/STI and PUSHF/POPF fault with
// #GP and the monitor emulates them, as NT's V86 monitor does). The three runs' result
// records (registers, the VBE info blocks) must be identical byte for byte.

mod v86 {
    use super::*;

    pub const SECTORS: u32 = 20;
    /// Results of the three runs: registers at +300h, buffers below.
    pub const R1: u32 = 0x3000;
    pub const R2: u32 = 0x4000;
    pub const R3: u32 = 0x5000;
    const RECORD: u32 = 16;
    pub const CALLS: u32 = 12;
    pub const LEN: u32 = 0x300 + RECORD * CALLS;
    /// Where the ROM writes its blocks (the same in every run: blocks may point into
    /// themselves); copied into the run's results.
    const SCRATCH: u32 = 0x2000;
    const RES_BASE: u32 = 0x0600;
    const REC_PTR: u32 = 0x0602;
    const RUN: u32 = 0x0610;
    /// Reflected INTs (IOPL 3), emulated INTs and IRETs (IOPL 0).
    pub const COUNTS: u32 = 0x0620;
    const V86_STACK: u32 = 0x7000;
    const MONITOR_STACK: u32 = 0x70000;
    const TSS: u32 = 0x20000;
    /// TSS with an I/O permission bitmap allowing every port, and its terminator.
    const TSS_LIMIT: u32 = 0x68 + 0x2000;
    const VM: u32 = 1 << 17;

    // Fixed places of the 32-bit pieces (each assembled on its own).
    const PM_ENTRY: u64 = 0x9000;
    const ENTER_V86: u64 = 0x9080;
    const REFLECT: u64 = 0x9100;
    const GP: u64 = 0x9200;
    const DONE: u64 = 0x9500;
    const PRINT_HEX: u64 = 0x9700;
    const FAIL_STUBS: u64 = 0x9780;
    const FAIL: u64 = 0x9900;
    const GDT: u64 = 0x9A00;
    const GDTR: u64 = 0x9A40;
    const IDTR: u64 = 0x9A48;
    const IDT: u64 = 0xA000;
    const IDT_VECTORS: u64 = 0x21;

    /// Stores AX, BX, CX, DX, ES, BP, SI at [REC_PTR] and advances it.
    fn emit_record(a: &mut CodeAssembler, record: &mut CodeLabel) {
        a.set_label(record).unwrap();
        a.push(di).unwrap();
        a.mov(di, word_ptr(REC_PTR)).unwrap();
        a.mov(word_ptr(di), ax).unwrap();
        a.mov(word_ptr(di + 2), bx).unwrap();
        a.mov(word_ptr(di + 4), cx).unwrap();
        a.mov(word_ptr(di + 6), dx).unwrap();
        a.mov(word_ptr(di + 8), es).unwrap();
        a.mov(word_ptr(di + 10), bp).unwrap();
        a.mov(word_ptr(di + 12), si).unwrap();
        a.add(word_ptr(REC_PTR), RECORD).unwrap();
        a.pop(di).unwrap();
        a.ret().unwrap();
    }

    /// Copies `len` bytes from SCRATCH+`from` to the run's results +`to`.
    fn copy_out(a: &mut CodeAssembler, from: u32, to: u32, len: u32) {
        a.mov(si, SCRATCH + from).unwrap();
        a.mov(di, word_ptr(RES_BASE)).unwrap();
        a.add(di, to).unwrap();
        a.mov(cx, len).unwrap();
        a.rep().movsb().unwrap();
    }

    /// One INT 10h with the given AX, BX, CX, DX (DI = `di`), recorded.
    fn call(a: &mut CodeAssembler, record: CodeLabel, regs: [u32; 4], di_value: u32) {
        a.xor(bp, bp).unwrap();
        a.xor(si, si).unwrap();
        a.mov(di, di_value).unwrap();
        for (r, v) in [ax, bx, cx, dx].into_iter().zip(regs) {
            a.mov(r, v).unwrap();
        }
        a.int(0x10).unwrap();
        a.call(record).unwrap();
        a.xor(ax, ax).unwrap();
        a.mov(es, ax).unwrap();
    }

    /// The INT 10h sequence (DS = ES = 0), results at [RES_BASE]: VBE controller and mode
    /// info, a VBE mode set with LFB and its read-back, DDC, mode 12h, the font pointer,
    /// a DAC read, mode 3 and the cursor.
    fn emit_sequence(a: &mut CodeAssembler, sequence: &mut CodeLabel, record: CodeLabel) {
        a.set_label(sequence).unwrap();
        a.cld().unwrap();
        a.mov(ax, word_ptr(RES_BASE)).unwrap();
        a.add(ax, 0x300u32).unwrap();
        a.mov(word_ptr(REC_PTR), ax).unwrap();
        a.mov(dword_ptr(SCRATCH), u32::from_le_bytes(*b"VBE2"))
            .unwrap();
        call(a, record, [0x4F00, 0, 0, 0], SCRATCH);
        copy_out(a, 0, 0, 0x200);
        call(a, record, [0x4F01, 0, 0x101, 0], SCRATCH + 0x200);
        copy_out(a, 0x200, 0x200, 0x100);
        call(a, record, [0x4F02, 0x4101, 0, 0], 0);
        call(a, record, [0x4F03, 0, 0, 0], 0);
        call(a, record, [0x4F15, 0, 0, 0], 0);
        call(a, record, [0x0012, 0, 0, 0], 0);
        call(a, record, [0x0F00, 0, 0, 0], 0);
        call(a, record, [0x1130, 0x0600, 0, 0], 0);
        call(a, record, [0x1015, 0x0007, 0, 0], 0);
        call(a, record, [0x0003, 0, 0, 0], 0);
        call(a, record, [0x0F00, 0, 0, 0], 0);
        call(a, record, [0x0300, 0, 0, 0], 0);
        a.ret().unwrap();
    }

    /// Real mode: the first run, then protected mode. Also the V86 task's entry.
    fn real_mode_part() -> Vec<u8> {
        let mut a = CodeAssembler::new(16).unwrap();
        let mut record = a.create_label();
        let mut sequence = a.create_label();
        let mut start = a.create_label();
        let mut fail = a.create_label();
        a.jmp(start).unwrap();
        emit_record(&mut a, &mut record);
        emit_sequence(&mut a, &mut sequence, record);
        // The V86 task: the sequence, then INT 20h back to the monitor.
        let mut v86_entry = a.create_label();
        a.set_label(&mut v86_entry).unwrap();
        a.call(sequence).unwrap();
        a.int(0x20).unwrap();
        a.set_label(&mut fail).unwrap();
        serial_out(&mut a, b"!V");
        a.cli().unwrap();
        a.hlt().unwrap();

        a.set_label(&mut start).unwrap();
        a.cli().unwrap();
        // No interrupts reach the V86 task: both PICs masked.
        a.mov(al, 0xFFu32).unwrap();
        a.out(0x21, al).unwrap();
        a.out(0xA1, al).unwrap();
        for i in 0..3 {
            a.mov(dword_ptr(COUNTS + 4 * i), 0u32).unwrap();
        }
        a.mov(word_ptr(RES_BASE), R1).unwrap();
        a.call(sequence).unwrap();
        // The real-mode run is the reference: it must have worked.
        a.cmp(dword_ptr(R1), u32::from_le_bytes(*b"VESA")).unwrap();
        a.jne(fail).unwrap();
        a.cmp(word_ptr(R1 + 0x300), 0x004Fu32).unwrap();
        a.jne(fail).unwrap();
        a.lgdt(ptr(GDTR as u32)).unwrap();
        a.lidt(ptr(IDTR as u32)).unwrap();
        a.mov(eax, cr0).unwrap();
        a.or(eax, 1u32).unwrap();
        a.mov(cr0, eax).unwrap();
        // jmp far dword 08h:PM_ENTRY
        a.db(&[0x66, 0xEA]).unwrap();
        a.db(&(PM_ENTRY as u32).to_le_bytes()).unwrap();
        a.db(&[0x08, 0x00]).unwrap();
        let code = a
            .assemble_options(
                MAIN,
                iced_x86::BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS,
            )
            .unwrap();
        let entry = code.label_ip(&v86_entry).unwrap();
        let mut bytes = code.inner.code_buffer;
        // The V86 entry offset goes where ENTER_V86 expects it: a word at the image end.
        bytes.extend_from_slice(&(entry as u16).to_le_bytes());
        bytes
    }

    fn serial32(a: &mut CodeAssembler, text: &[u8]) {
        a.mov(dx, 0x3F8u32).unwrap();
        for &b in text {
            a.mov(al, u32::from(b)).unwrap();
            a.out(dx, al).unwrap();
        }
    }

    fn flat_segments(a: &mut CodeAssembler) {
        a.mov(ax, 0x10u32).unwrap();
        a.mov(ds, ax).unwrap();
        a.mov(es, ax).unwrap();
        a.mov(ss, ax).unwrap();
        a.mov(esp, MONITOR_STACK).unwrap();
    }

    fn pm_entry() -> Vec<u8> {
        let mut a = CodeAssembler::new(32).unwrap();
        flat_segments(&mut a);
        a.cld().unwrap();
        a.mov(edi, TSS).unwrap();
        a.xor(eax, eax).unwrap();
        a.mov(ecx, (TSS_LIMIT + 4) / 4).unwrap();
        a.rep().stosd().unwrap();
        a.mov(dword_ptr(TSS + 4), MONITOR_STACK).unwrap();
        a.mov(dword_ptr(TSS + 8), 0x10u32).unwrap();
        a.mov(word_ptr(TSS + 0x66), 0x68u32).unwrap();
        a.mov(byte_ptr(TSS + TSS_LIMIT), 0xFFu32).unwrap();
        a.mov(ax, 0x18u32).unwrap();
        a.ltr(ax).unwrap();
        a.mov(dword_ptr(RUN), 1u32).unwrap();
        a.jmp(ENTER_V86).unwrap();
        a.assemble(PM_ENTRY).unwrap()
    }

    /// IRETD into the V86 task: run 1 with IOPL 3, run 2 with IOPL 0.
    fn enter_v86(v86_entry_word: u32) -> Vec<u8> {
        let mut a = CodeAssembler::new(32).unwrap();
        let mut second = a.create_label();
        let mut go = a.create_label();
        a.mov(esp, MONITOR_STACK).unwrap();
        a.cmp(dword_ptr(RUN), 1u32).unwrap();
        a.jne(second).unwrap();
        a.mov(word_ptr(RES_BASE), R2).unwrap();
        a.mov(ebx, VM | 0x3000 | 0x2).unwrap();
        a.jmp(go).unwrap();
        a.set_label(&mut second).unwrap();
        a.mov(word_ptr(RES_BASE), R3).unwrap();
        a.mov(ebx, VM | 0x2).unwrap();
        a.set_label(&mut go).unwrap();
        for _ in 0..5 {
            a.push(0u32).unwrap(); // GS, FS, DS, ES, SS
        }
        a.push(V86_STACK).unwrap();
        a.push(ebx).unwrap();
        a.push(0u32).unwrap(); // CS
        a.movzx(eax, word_ptr(v86_entry_word)).unwrap();
        a.push(eax).unwrap();
        a.iretd().unwrap();
        a.assemble(ENTER_V86).unwrap()
    }

    /// Pushes FLAGS, CS, IP (frame at EBP+`fo`: IP, CS, FLAGS, SP, SS dwords) on the V86
    /// stack and points CS:IP at the real-mode vector EDX, clearing IF and TF: what INT
    /// does in real mode.
    fn reflect_into(a: &mut CodeAssembler, fo: i32) {
        a.movzx(eax, word_ptr(ebp + fo + 16)).unwrap();
        a.shl(eax, 4).unwrap();
        a.movzx(ebx, word_ptr(ebp + fo + 12)).unwrap();
        a.sub(bx, 6).unwrap();
        a.mov(word_ptr(ebp + fo + 12), bx).unwrap();
        a.add(eax, ebx).unwrap();
        for (from, to) in [(8, 4), (4, 2), (0, 0)] {
            a.mov(cx, word_ptr(ebp + fo + from)).unwrap();
            a.mov(word_ptr(eax + to), cx).unwrap();
        }
        a.mov(ecx, dword_ptr(edx * 4)).unwrap();
        a.movzx(ebx, cx).unwrap();
        a.mov(dword_ptr(ebp + fo), ebx).unwrap();
        a.shr(ecx, 16).unwrap();
        a.mov(dword_ptr(ebp + fo + 4), ecx).unwrap();
        a.and(dword_ptr(ebp + fo + 8), !0x300u32).unwrap();
    }

    fn save(a: &mut CodeAssembler) {
        a.push(ebp).unwrap();
        a.mov(ebp, esp).unwrap();
        for r in [eax, ebx, ecx, edx] {
            a.push(r).unwrap();
        }
        a.mov(ax, 0x10u32).unwrap();
        a.mov(ds, ax).unwrap();
    }

    fn restore(a: &mut CodeAssembler) {
        for r in [edx, ecx, ebx, eax] {
            a.pop(r).unwrap();
        }
        a.pop(ebp).unwrap();
    }

    /// Fails with code `code` (printed as !E00cc) unless the frame's EFLAGS has VM.
    fn require_v86(a: &mut CodeAssembler, eflags_at: i32, code: u32) {
        let mut ok = a.create_label();
        a.test(dword_ptr(ebp + eflags_at), VM).unwrap();
        a.jnz(ok).unwrap();
        a.push(code).unwrap();
        a.jmp(FAIL).unwrap();
        a.set_label(&mut ok).unwrap();
    }

    /// IDT vector 10h, DPL 3: INT 10h from the IOPL-3 V86 task.
    fn reflect() -> Vec<u8> {
        let mut a = CodeAssembler::new(32).unwrap();
        save(&mut a);
        require_v86(&mut a, 12, 0x30);
        a.inc(dword_ptr(COUNTS)).unwrap();
        a.mov(edx, 0x10u32).unwrap();
        reflect_into(&mut a, 4);
        restore(&mut a);
        a.iretd().unwrap();
        a.assemble(REFLECT).unwrap()
    }

    /// #GP from the IOPL-0 V86 task: emulates INT n, IRET, CLI, STI, PUSHF, POPF (16-bit
    /// and with the 66h prefix); INT 20h ends the run.
    fn gp() -> Vec<u8> {
        let mut a = CodeAssembler::new(32).unwrap();
        let mut out = a.create_label();
        let mut int_n = a.create_label();
        let mut iret = a.create_label();
        let mut cli_ = a.create_label();
        let mut sti_ = a.create_label();
        let mut pushf = a.create_label();
        let mut popf = a.create_label();
        let mut unknown = a.create_label();
        save(&mut a);
        require_v86(&mut a, 16, 0x31);
        // EBP+8: IP, +12 CS, +16 FLAGS, +20 SP, +24 SS (an error code at +4).
        a.movzx(eax, word_ptr(ebp + 12)).unwrap();
        a.shl(eax, 4).unwrap();
        a.movzx(ebx, word_ptr(ebp + 8)).unwrap();
        a.add(eax, ebx).unwrap();
        a.movzx(ecx, word_ptr(eax)).unwrap();
        for (opcode, target) in [(0xCDu32, int_n), (0xCF, iret), (0xFA, cli_), (0xFB, sti_)] {
            a.cmp(cl, opcode).unwrap();
            a.je(target).unwrap();
        }
        // PUSHF/POPF (the 66h forms move 32 bits: the upper half is written as 0 and
        // ignored when read, VM and IOPL stay the monitor's).
        a.xor(edx, edx).unwrap();
        a.cmp(cl, 0x66u32).unwrap();
        let mut plain = a.create_label();
        a.jne(plain).unwrap();
        a.mov(edx, 2u32).unwrap();
        a.mov(cl, ch).unwrap();
        a.inc(word_ptr(ebp + 8)).unwrap();
        a.set_label(&mut plain).unwrap();
        a.cmp(cl, 0x9Cu32).unwrap();
        a.je(pushf).unwrap();
        a.cmp(cl, 0x9Du32).unwrap();
        a.je(popf).unwrap();
        a.jmp(unknown).unwrap();

        a.set_label(&mut int_n).unwrap();
        a.movzx(edx, byte_ptr(eax + 1)).unwrap();
        a.add(word_ptr(ebp + 8), 2).unwrap();
        a.cmp(dl, 0x20u32).unwrap();
        a.je(DONE).unwrap();
        a.inc(dword_ptr(COUNTS + 4)).unwrap();
        reflect_into(&mut a, 8);
        a.jmp(out).unwrap();

        a.set_label(&mut iret).unwrap();
        a.inc(dword_ptr(COUNTS + 8)).unwrap();
        a.movzx(eax, word_ptr(ebp + 24)).unwrap();
        a.shl(eax, 4).unwrap();
        a.movzx(ebx, word_ptr(ebp + 20)).unwrap();
        a.add(eax, ebx).unwrap();
        a.add(word_ptr(ebp + 20), 6).unwrap();
        a.movzx(ecx, word_ptr(eax)).unwrap();
        a.mov(dword_ptr(ebp + 8), ecx).unwrap();
        a.movzx(ecx, word_ptr(eax + 2)).unwrap();
        a.mov(dword_ptr(ebp + 12), ecx).unwrap();
        a.movzx(ecx, word_ptr(eax + 4)).unwrap();
        let set_flags = |a: &mut CodeAssembler| {
            // Arithmetic flags, TF, IF, DF from the guest; IOPL, NT, VM stay.
            a.and(ecx, 0x0FFFu32).unwrap();
            a.mov(ebx, dword_ptr(ebp + 16)).unwrap();
            a.and(ebx, 0xFFFF_7000u32).unwrap();
            a.or(ebx, ecx).unwrap();
            a.mov(dword_ptr(ebp + 16), ebx).unwrap();
        };
        set_flags(&mut a);
        a.jmp(out).unwrap();

        a.set_label(&mut cli_).unwrap();
        a.and(dword_ptr(ebp + 16), !0x200u32).unwrap();
        a.inc(word_ptr(ebp + 8)).unwrap();
        a.jmp(out).unwrap();
        a.set_label(&mut sti_).unwrap();
        a.or(dword_ptr(ebp + 16), 0x200u32).unwrap();
        a.inc(word_ptr(ebp + 8)).unwrap();
        a.jmp(out).unwrap();

        // EDX = 2 for the 32-bit forms, 0 for the 16-bit ones.
        a.set_label(&mut pushf).unwrap();
        a.inc(word_ptr(ebp + 8)).unwrap();
        a.movzx(eax, word_ptr(ebp + 24)).unwrap();
        a.shl(eax, 4).unwrap();
        a.movzx(ebx, word_ptr(ebp + 20)).unwrap();
        a.sub(bx, 2).unwrap();
        a.sub(bx, dx).unwrap();
        a.mov(word_ptr(ebp + 20), bx).unwrap();
        a.add(eax, ebx).unwrap();
        a.mov(ecx, dword_ptr(ebp + 16)).unwrap();
        a.mov(word_ptr(eax), cx).unwrap();
        a.test(edx, edx).unwrap();
        a.jz(out).unwrap();
        a.mov(word_ptr(eax + 2), 0u32).unwrap();
        a.jmp(out).unwrap();

        a.set_label(&mut popf).unwrap();
        a.inc(word_ptr(ebp + 8)).unwrap();
        a.movzx(eax, word_ptr(ebp + 24)).unwrap();
        a.shl(eax, 4).unwrap();
        a.movzx(ebx, word_ptr(ebp + 20)).unwrap();
        a.add(eax, ebx).unwrap();
        a.add(bx, 2).unwrap();
        a.add(bx, dx).unwrap();
        a.mov(word_ptr(ebp + 20), bx).unwrap();
        a.movzx(ecx, word_ptr(eax)).unwrap();
        set_flags(&mut a);
        a.jmp(out).unwrap();

        a.set_label(&mut unknown).unwrap();
        // !E + 1xxxx: the opcode bytes that faulted.
        a.or(ecx, 0x1_0000u32).unwrap();
        a.push(ecx).unwrap();
        a.jmp(FAIL).unwrap();

        a.set_label(&mut out).unwrap();
        restore(&mut a);
        a.add(esp, 4).unwrap();
        a.iretd().unwrap();
        a.assemble(GP).unwrap()
    }

    /// End of a V86 run: start the next, or compare and report.
    fn done() -> Vec<u8> {
        let mut a = CodeAssembler::new(32).unwrap();
        flat_segments(&mut a);
        let mut compare = a.create_label();
        a.cmp(dword_ptr(RUN), 1u32).unwrap();
        a.jne(compare).unwrap();
        a.mov(dword_ptr(RUN), 2u32).unwrap();
        a.jmp(ENTER_V86).unwrap();
        a.set_label(&mut compare).unwrap();
        a.cld().unwrap();
        for (other, mark) in [(R2, b'A'), (R3, b'B')] {
            let mut same = a.create_label();
            a.mov(esi, R1).unwrap();
            a.mov(edi, other).unwrap();
            a.mov(ecx, LEN).unwrap();
            a.repe().cmpsb().unwrap();
            a.je(same).unwrap();
            // !A / !B and the offset of the first differing byte.
            serial32(&mut a, &[b'!', mark]);
            a.lea(eax, dword_ptr(esi - (R1 + 1))).unwrap();
            a.call(PRINT_HEX).unwrap();
            a.cli().unwrap();
            a.hlt().unwrap();
            a.set_label(&mut same).unwrap();
        }
        for (i, mark) in [b'C', b'D', b'E'].into_iter().enumerate() {
            let mut ok = a.create_label();
            a.cmp(dword_ptr(COUNTS + 4 * i as u32), CALLS).unwrap();
            a.je(ok).unwrap();
            serial32(&mut a, &[b'!', mark]);
            a.mov(eax, dword_ptr(COUNTS + 4 * i as u32)).unwrap();
            a.call(PRINT_HEX).unwrap();
            a.cli().unwrap();
            a.hlt().unwrap();
            a.set_label(&mut ok).unwrap();
        }
        serial32(&mut a, b"V86-OK\r\n");
        a.cli().unwrap();
        a.hlt().unwrap();
        a.assemble(DONE).unwrap()
    }

    /// Prints AX as four hex digits on COM1.
    fn print_hex() -> Vec<u8> {
        let mut a = CodeAssembler::new(32).unwrap();
        let mut digit = a.create_label();
        let mut below = a.create_label();
        a.mov(ebx, eax).unwrap();
        a.mov(ecx, 4u32).unwrap();
        a.mov(dx, 0x3F8u32).unwrap();
        a.set_label(&mut digit).unwrap();
        a.rol(bx, 4).unwrap();
        a.mov(al, bl).unwrap();
        a.and(al, 0x0Fu32).unwrap();
        a.add(al, u32::from(b'0')).unwrap();
        a.cmp(al, u32::from(b'9')).unwrap();
        a.jbe(below).unwrap();
        a.add(al, 7u32).unwrap();
        a.set_label(&mut below).unwrap();
        a.out(dx, al).unwrap();
        a.dec(ecx).unwrap();
        a.jnz(digit).unwrap();
        a.ret().unwrap();
        a.assemble(PRINT_HEX).unwrap()
    }

    /// Stub v: push v, jump to the common failure (8 bytes each).
    fn fail_stub(vector: u64) -> Vec<u8> {
        let mut a = CodeAssembler::new(32).unwrap();
        a.push(vector as u32).unwrap();
        a.jmp(FAIL).unwrap();
        a.assemble(FAIL_STUBS + 8 * vector).unwrap()
    }

    /// Common failure: !E and the code on the stack (a vector, or a monitor's code).
    fn fail() -> Vec<u8> {
        let mut a = CodeAssembler::new(32).unwrap();
        a.mov(ax, 0x10u32).unwrap();
        a.mov(ds, ax).unwrap();
        a.pop(eax).unwrap();
        a.push(eax).unwrap();
        serial32(&mut a, b"!E");
        a.pop(eax).unwrap();
        a.call(PRINT_HEX).unwrap();
        a.cli().unwrap();
        a.hlt().unwrap();
        a.assemble(FAIL).unwrap()
    }

    fn gate(handler: u64, dpl3: bool) -> u64 {
        let kind: u64 = if dpl3 { 0xEE } else { 0x8E };
        (handler & 0xFFFF) | 0x08 << 16 | kind << 40 | (handler >> 16) << 48
    }

    pub fn disk() -> Vec<u8> {
        let real = real_mode_part();
        let entry_word = MAIN + real.len() as u64 - 2;
        assert!(
            MAIN + (real.len() as u64) <= PM_ENTRY,
            "real-mode part too large"
        );
        let mut mem = vec![0u8; (IDT + 8 * IDT_VECTORS - MAIN) as usize];
        let mut put = |at: u64, bytes: &[u8], room: u64| {
            assert!(bytes.len() as u64 <= room, "piece at {at:#x} too large");
            let o = (at - MAIN) as usize;
            mem[o..o + bytes.len()].copy_from_slice(bytes);
        };
        put(MAIN, &real, PM_ENTRY - MAIN);
        put(PM_ENTRY, &pm_entry(), ENTER_V86 - PM_ENTRY);
        put(
            ENTER_V86,
            &enter_v86(entry_word as u32),
            REFLECT - ENTER_V86,
        );
        put(REFLECT, &reflect(), GP - REFLECT);
        put(GP, &gp(), DONE - GP);
        put(DONE, &done(), PRINT_HEX - DONE);
        put(PRINT_HEX, &print_hex(), FAIL_STUBS - PRINT_HEX);
        for v in 0..IDT_VECTORS {
            put(FAIL_STUBS + 8 * v, &fail_stub(v), 8);
        }
        put(FAIL, &fail(), GDT - FAIL);
        let tss = u64::from(TSS);
        let tss_desc = u64::from(TSS_LIMIT & 0xFFFF)
            | (tss & 0xFF_FFFF) << 16
            | 0x89 << 40
            | u64::from(TSS_LIMIT >> 16) << 48
            | (tss >> 24) << 56;
        let gdt: Vec<u8> = [0u64, 0x00CF_9A00_0000_FFFF, 0x00CF_9200_0000_FFFF, tss_desc]
            .iter()
            .flat_map(|d| d.to_le_bytes())
            .collect();
        put(GDT, &gdt, GDTR - GDT);
        let mut gdtr = 31u16.to_le_bytes().to_vec();
        gdtr.extend_from_slice(&(GDT as u32).to_le_bytes());
        put(GDTR, &gdtr, 8);
        let mut idtr = ((8 * IDT_VECTORS - 1) as u16).to_le_bytes().to_vec();
        idtr.extend_from_slice(&(IDT as u32).to_le_bytes());
        put(IDTR, &idtr, 8);
        let idt: Vec<u8> = (0..IDT_VECTORS)
            .flat_map(|v| {
                match v {
                    0x0D => gate(GP, false),
                    0x10 => gate(REFLECT, true),
                    0x20 => gate(DONE, true),
                    _ => gate(FAIL_STUBS + 8 * v, false),
                }
                .to_le_bytes()
            })
            .collect();
        put(IDT, &idt, 8 * IDT_VECTORS);
        program_disk(MAIN, SECTORS, &mem)
    }
}

#[test]
fn int10_from_a_v86_task_matches_real_mode() {
    let (serial, screen) = run_on_aero(v86::disk(), "V86-OK");
    assert!(serial.contains("V86-OK"), "Aero: {serial:?}");
    assert_eq!(
        (screen.width, screen.height),
        (720, 400),
        "back in text mode 3"
    );
    if let Some((serial, _)) = run_on_qemu(v86::disk(), "v86", "V86-OK", false) {
        assert!(serial.contains("V86-OK"), "QEMU: {serial:?}");
    }
}

// ---- The register file as software reads it back ------------------------------------
//
// bootvid's presence check is one instance of a general rule: what a register keeps of a
// write is visible to software. Every sequencer, graphics-controller, CRTC and attribute
// register gets four patterns written and read back, the index ports too, plus the CRTC
// write protection, the DAC's data/index/state/mask registers and the misc and feature
// registers; COM1 carries the read-backs and must be the same text on Aero and QEMU.

mod readback {
    use super::*;

    pub const DONE: &str = "READBACK-DONE";
    const PATTERNS: [u8; 4] = [0xFF, 0x00, 0xA5, 0x5A];
    const SAVED: u32 = 0x0600;

    /// `print_hex8`: AL as two hex digits on COM1 (DX, AX kept).
    pub fn emit_print_hex8(a: &mut CodeAssembler, label: &mut CodeLabel) {
        let mut low = a.create_label();
        a.set_label(label).unwrap();
        a.push(ax).unwrap();
        a.push(cx).unwrap();
        a.push(dx).unwrap();
        a.mov(ah, al).unwrap();
        a.mov(dx, 0x3F8u32).unwrap();
        a.mov(cx, 2u32).unwrap();
        let mut digit = a.create_label();
        a.set_label(&mut digit).unwrap();
        a.rol(ax, 4).unwrap();
        a.push(ax).unwrap();
        a.and(al, 0x0Fu32).unwrap();
        a.add(al, u32::from(b'0')).unwrap();
        a.cmp(al, u32::from(b'9')).unwrap();
        a.jbe(low).unwrap();
        a.add(al, 7u32).unwrap();
        a.set_label(&mut low).unwrap();
        a.out(dx, al).unwrap();
        a.pop(ax).unwrap();
        a.mov(al, ah).unwrap();
        a.loop_(digit).unwrap();
        a.pop(dx).unwrap();
        a.pop(cx).unwrap();
        a.pop(ax).unwrap();
        a.ret().unwrap();
    }

    fn text(a: &mut CodeAssembler, s: &[u8]) {
        a.push(dx).unwrap();
        serial_out(a, s);
        a.pop(dx).unwrap();
    }

    /// For an index/data pair: "XX-II:" then the read-back of each pattern; the
    /// original value is put back.
    fn indexed(a: &mut CodeAssembler, hex: CodeLabel, index_port: u16, count: u8) {
        for i in 0..count {
            text(a, format!("{:02X}-{i:02X}:", index_port & 0xFF).as_bytes());
            a.mov(dx, u32::from(index_port)).unwrap();
            a.mov(al, u32::from(i)).unwrap();
            a.out(dx, al).unwrap();
            a.inc(dx).unwrap();
            a.in_(al, dx).unwrap();
            a.mov(byte_ptr(SAVED), al).unwrap();
            for p in PATTERNS {
                a.mov(al, u32::from(p)).unwrap();
                a.out(dx, al).unwrap();
                a.in_(al, dx).unwrap();
                a.call(hex).unwrap();
            }
            a.mov(al, byte_ptr(SAVED)).unwrap();
            a.out(dx, al).unwrap();
            text(a, b"\r\n");
        }
        // The index register itself.
        text(a, format!("{:02X}-ix:", index_port & 0xFF).as_bytes());
        a.mov(dx, u32::from(index_port)).unwrap();
        for p in PATTERNS {
            a.mov(al, u32::from(p)).unwrap();
            a.out(dx, al).unwrap();
            a.in_(al, dx).unwrap();
            a.call(hex).unwrap();
        }
        text(a, b"\r\n");
    }

    fn port_read(a: &mut CodeAssembler, hex: CodeLabel, port: u16) {
        a.mov(dx, u32::from(port)).unwrap();
        a.in_(al, dx).unwrap();
        a.call(hex).unwrap();
    }

    fn out(a: &mut CodeAssembler, port: u16, value: u8) {
        a.mov(dx, u32::from(port)).unwrap();
        a.mov(al, u32::from(value)).unwrap();
        a.out(dx, al).unwrap();
    }

    pub fn disk() -> Vec<u8> {
        let mut a = CodeAssembler::new(16).unwrap();
        let mut hex = a.create_label();
        let mut start = a.create_label();
        a.jmp(start).unwrap();
        emit_print_hex8(&mut a, &mut hex);
        a.set_label(&mut start).unwrap();
        a.cli().unwrap();
        // Unlock CRTC 0–7 so the loop below reaches them.
        out(&mut a, 0x3D4, 0x11);
        out(&mut a, 0x3D5, 0x0E);
        indexed(&mut a, hex, 0x3C4, 8);
        indexed(&mut a, hex, 0x3CE, 16);
        indexed(&mut a, hex, 0x3D4, 0x19);
        // CRTC write protection: CR0–6 ignore writes, CR7 keeps all but its bit 4.
        text(&mut a, b"protect:");
        for (index, value) in [(0x11u8, 0x00u8), (0x01, 0x4F), (0x07, 0x00), (0x11, 0x80)] {
            out(&mut a, 0x3D4, index);
            out(&mut a, 0x3D5, value);
        }
        for (index, value) in [(0x01u8, 0x11u8), (0x07, 0xFF)] {
            out(&mut a, 0x3D4, index);
            out(&mut a, 0x3D5, value);
            port_read(&mut a, hex, 0x3D5);
        }
        out(&mut a, 0x3D4, 0x11);
        out(&mut a, 0x3D5, 0x0E);
        text(&mut a, b"\r\n");
        // Attribute controller: index (with PAS) through 3C0, data read at 3C1.
        for i in 0..0x15u8 {
            text(&mut a, format!("C0-{i:02X}:").as_bytes());
            for p in PATTERNS {
                // Input status 1 (its retrace bits follow time) resets the flip-flop.
                a.mov(dx, 0x3DAu32).unwrap();
                a.in_(al, dx).unwrap();
                out(&mut a, 0x3C0, i | 0x20);
                out(&mut a, 0x3C0, p);
                port_read(&mut a, hex, 0x3C1);
                port_read(&mut a, hex, 0x3C0);
            }
            text(&mut a, b"\r\n");
        }
        // Input status 1's retrace bits follow time: only the flip-flop reset is used.
        a.mov(dx, 0x3DAu32).unwrap();
        a.in_(al, dx).unwrap();
        out(&mut a, 0x3C0, 0x20);
        // DAC: write entry 10h, read it back; the indexes and state as they move.
        text(&mut a, b"dac:");
        out(&mut a, 0x3C8, 0x10);
        port_read(&mut a, hex, 0x3C7);
        for v in [0x3Fu8, 0x15, 0x2A, 0xFF] {
            out(&mut a, 0x3C9, v);
        }
        port_read(&mut a, hex, 0x3C8);
        out(&mut a, 0x3C7, 0x10);
        port_read(&mut a, hex, 0x3C7);
        for _ in 0..4 {
            port_read(&mut a, hex, 0x3C9);
        }
        port_read(&mut a, hex, 0x3C8);
        text(&mut a, b"\r\npel:");
        for p in PATTERNS {
            out(&mut a, 0x3C6, p);
            port_read(&mut a, hex, 0x3C6);
        }
        out(&mut a, 0x3C6, 0xFF);
        text(&mut a, b"\r\nmisc:");
        for v in [0x67u8, 0xE3, 0x23] {
            out(&mut a, 0x3C2, v);
            port_read(&mut a, hex, 0x3CC);
        }
        out(&mut a, 0x3C2, 0x67);
        text(&mut a, b"\r\nfcr:");
        for v in [0x00u8, 0x08] {
            out(&mut a, 0x3DA, v);
            port_read(&mut a, hex, 0x3CA);
        }
        out(&mut a, 0x3DA, 0x00);
        text(&mut a, b"\r\n");
        text(&mut a, format!("{DONE}\r\n").as_bytes());
        finish(a)
    }
}

/// Ends a boot-disk program with a HLT loop and returns its disk.
fn finish(mut a: CodeAssembler) -> Vec<u8> {
    let mut hang = a.create_label();
    a.set_label(&mut hang).unwrap();
    a.hlt().unwrap();
    a.jmp(hang).unwrap();
    let code = a.assemble(MAIN).unwrap();
    program_disk(MAIN, code.len().div_ceil(512) as u32, &code)
}

/// Where QEMU's std-vga is not a VGA, Aero follows the VGA (checked below instead).
const QEMU_QUIRKS: [(&str, &str); 4] = [
    (
        "C4-07:",
        "QEMU keeps an 8-bit SR07 (a Bochs extension); the VGA has SR0-4 only",
    ),
    (
        "D4-ix:",
        "QEMU keeps all 8 bits of the CRTC index; the VGA decodes 6",
    ),
    (
        "pel:",
        "QEMU ignores the PEL mask (writes dropped, reads 0)",
    ),
    (
        "fcr:",
        "QEMU keeps only bit 4 of the feature control register",
    ),
];

#[test]
fn vga_register_read_back_matches_qemu_std_vga() {
    let (aero, _) = run_on_aero(readback::disk(), readback::DONE);
    assert!(aero.contains(readback::DONE), "Aero: {aero:?}");
    // The VGA's answers where QEMU differs: patterns FF, 00, A5, 5A.
    for expected in [
        "C4-07:00000000",
        "D4-ix:3F00251A",
        "pel:FF00A55A",
        "fcr:0008",
    ] {
        assert!(
            aero.lines().any(|l| l == expected),
            "{expected} missing: {aero}"
        );
    }
    let Some((qemu, _)) = run_on_qemu(readback::disk(), "readback", readback::DONE, false) else {
        return;
    };
    assert!(qemu.contains(readback::DONE), "QEMU: {qemu:?}");
    let differing: Vec<String> = aero
        .lines()
        .zip(qemu.lines())
        .filter(|(a, q)| a != q && !QEMU_QUIRKS.iter().any(|(line, _)| a.starts_with(line)))
        .map(|(a, q)| format!("aero {a} / qemu {q}"))
        .collect();
    assert!(
        differing.is_empty(),
        "{} registers read back differently:\n{}",
        differing.len(),
        differing.join("\n")
    );
    assert_eq!(aero.lines().count(), qemu.lines().count());
}

// ---- INT 10h answers next to SeaVGABIOS -------------------------------------------------
//
// Windows' VGA drivers read back what the BIOS reports (current mode, font metrics,
// display combination, palette and DAC, the state table). A boot-disk program calls
// those functions and prints the returned registers; Aero's VGA BIOS must answer like
// QEMU's (SeaVGABIOS on std-vga) wherever the VGA BIOS interface fixes the answer.

mod answers {
    use super::*;

    pub const DONE: &str = "ANSWERS-DONE";

    /// Prints "name:AX BX CX DX" (registers kept).
    fn dump(a: &mut CodeAssembler, hex: CodeLabel, name: &str) {
        a.pushf().unwrap();
        for r in [ax, bx, cx, dx] {
            a.push(r).unwrap();
        }
        a.mov(bp, sp).unwrap();
        serial_out(a, format!("{name}:").as_bytes());
        for slot in [6u32, 4, 2, 0] {
            a.mov(ax, word_ptr(bp + slot)).unwrap();
            a.xchg(al, ah).unwrap();
            a.call(hex).unwrap();
            a.xchg(al, ah).unwrap();
            a.call(hex).unwrap();
            serial_out(a, b" ");
        }
        serial_out(a, b"\r\n");
        for r in [dx, cx, bx, ax] {
            a.pop(r).unwrap();
        }
        a.popf().unwrap();
    }

    /// Prints "name:" and the bytes at 0:5000h + each range.
    fn dump_buffer(a: &mut CodeAssembler, hex: CodeLabel, name: &str, ranges: &[(u32, u32)]) {
        serial_out(a, format!("{name}:").as_bytes());
        for &(from, to) in ranges {
            for at in from..to {
                a.mov(al, byte_ptr(0x5000 + at)).unwrap();
                a.call(hex).unwrap();
            }
            serial_out(a, b" ");
        }
        serial_out(a, b"\r\n");
    }

    /// INT 10h with AX, BX, CX, DX (ES = 0, DI = 5000h), then the dump.
    fn call(a: &mut CodeAssembler, hex: CodeLabel, name: &str, regs: [u32; 4]) {
        a.xor(si, si).unwrap();
        a.mov(es, si).unwrap();
        a.mov(di, 0x5000u32).unwrap();
        for (r, v) in [ax, bx, cx, dx].into_iter().zip(regs) {
            a.mov(r, v).unwrap();
        }
        a.int(0x10).unwrap();
        dump(a, hex, name);
    }

    pub fn disk() -> Vec<u8> {
        let mut a = CodeAssembler::new(16).unwrap();
        let mut hex = a.create_label();
        let mut start = a.create_label();
        a.jmp(start).unwrap();
        super::readback::emit_print_hex8(&mut a, &mut hex);
        a.set_label(&mut start).unwrap();
        a.xor(ax, ax).unwrap();
        a.mov(ds, ax).unwrap();
        let c = |a: &mut CodeAssembler, name: &str, regs: [u32; 4]| call(a, hex, name, regs);
        c(&mut a, "03h-mode", [0x0003, 0, 0, 0]);
        c(&mut a, "0Fh", [0x0F00, 0, 0, 0]);
        c(&mut a, "03h-cursor", [0x0300, 0, 0, 0]);
        c(&mut a, "02h", [0x0200, 0, 0, 0x0510]);
        c(&mut a, "03h-moved", [0x0300, 0, 0, 0]);
        c(&mut a, "09h", [0x0941, 0x001E, 3, 0]);
        c(&mut a, "08h", [0x0800, 0, 0, 0]);
        c(&mut a, "01h", [0x0100, 0, 0x0E0F, 0]);
        c(&mut a, "03h-shape", [0x0300, 0, 0, 0]);
        c(&mut a, "1130-bh2", [0x1130, 0x0200, 0, 0]);
        c(&mut a, "1130-bh6", [0x1130, 0x0600, 0, 0]);
        c(&mut a, "1130-bh0", [0x1130, 0x0000, 0, 0]);
        c(&mut a, "12h-bl10", [0x1200, 0x0010, 0, 0]);
        c(&mut a, "1Ah", [0x1A00, 0, 0, 0]);
        c(&mut a, "1007-3", [0x1007, 0x0003, 0, 0]);
        c(&mut a, "1008", [0x1008, 0, 0, 0]);
        c(&mut a, "1015-7", [0x1015, 0x0007, 0, 0]);
        c(&mut a, "1015-38", [0x1015, 0x0038, 0, 0]);
        c(&mut a, "1019", [0x1019, 0, 0, 0]);
        c(&mut a, "101A", [0x101A, 0, 0, 0]);
        c(&mut a, "1007-10", [0x1007, 0x0010, 0, 0]);
        c(&mut a, "1003-0", [0x1003, 0x0000, 0, 0]);
        c(&mut a, "1007-10b", [0x1007, 0x0010, 0, 0]);
        c(&mut a, "1C00", [0x1C00, 0, 7, 0]);
        c(&mut a, "0Eh", [0x0E41, 0x0007, 0, 0]);
        c(&mut a, "03h-after", [0x0300, 0, 0, 0]);
        c(&mut a, "12h-mode", [0x0012, 0, 0, 0]);
        c(&mut a, "0Fh-12", [0x0F00, 0, 0, 0]);
        c(&mut a, "0Ch-12", [0x0C05, 0, 10, 10]);
        c(&mut a, "0Dh-12", [0x0D00, 0, 10, 10]);
        c(&mut a, "1130-12", [0x1130, 0x0000, 0, 0]);
        c(&mut a, "1007-12", [0x1007, 0x0006, 0, 0]);
        c(&mut a, "1015-12", [0x1015, 0x0014, 0, 0]);
        c(&mut a, "13h-mode", [0x0013, 0, 0, 0]);
        c(&mut a, "0Fh-13", [0x0F00, 0, 0, 0]);
        c(&mut a, "0Ch-13", [0x0C2A, 0, 10, 10]);
        c(&mut a, "0Dh-13", [0x0D00, 0, 10, 10]);
        c(&mut a, "1130-13", [0x1130, 0x0000, 0, 0]);
        c(&mut a, "1015-13", [0x1015, 0x0028, 0, 0]);
        c(&mut a, "04h-mode", [0x0004, 0, 0, 0]);
        c(&mut a, "0Fh-04", [0x0F00, 0, 0, 0]);
        c(&mut a, "0Ch-04", [0x0C03, 0, 5, 3]);
        c(&mut a, "0Dh-04", [0x0D00, 0, 5, 3]);
        c(&mut a, "07h-mode", [0x0007, 0, 0, 0]);
        c(&mut a, "0Fh-07", [0x0F00, 0, 0, 0]);
        c(&mut a, "12h-scan", [0x1201, 0x0030, 0, 0]);
        c(&mut a, "03h-350", [0x0003, 0, 0, 0]);
        c(&mut a, "1130-350", [0x1130, 0x0000, 0, 0]);
        c(&mut a, "03h-cursor-350", [0x0300, 0, 0, 0]);
        c(&mut a, "12h-scan400", [0x1202, 0x0030, 0, 0]);
        c(&mut a, "1112", [0x1112, 0, 0, 0]);
        c(&mut a, "1130-8x8", [0x1130, 0x0000, 0, 0]);
        c(&mut a, "03h-cursor-8x8", [0x0300, 0, 0, 0]);
        c(&mut a, "03h-back", [0x0003, 0, 0, 0]);
        c(&mut a, "4F03-vga", [0x4F03, 0, 0, 0]);
        c(&mut a, "4F02-101", [0x4F02, 0x4101, 0, 0]);
        c(&mut a, "4F03-vbe", [0x4F03, 0, 0, 0]);
        c(&mut a, "4F06-get", [0x4F06, 0x0001, 0, 0]);
        c(&mut a, "4F07-get", [0x4F07, 0x0001, 0, 0]);
        c(&mut a, "4F05-get", [0x4F05, 0x0100, 0, 0]);
        c(&mut a, "4F08-get", [0x4F08, 0x0001, 0, 0]);
        c(&mut a, "0Fh-vbe", [0x0F00, 0, 0, 0]);
        c(&mut a, "03h-end", [0x0003, 0, 0, 0]);
        // VbeInfoBlock: version, capabilities, total memory (the rest names the BIOS).
        a.mov(dword_ptr(0x5000u32), u32::from_le_bytes(*b"VBE2"))
            .unwrap();
        c(&mut a, "4F00", [0x4F00, 0, 0, 0]);
        dump_buffer(
            &mut a,
            hex,
            "4F00-info",
            &[(0x00, 0x06), (0x0A, 0x0E), (0x12, 0x14)],
        );
        // The state table (after its pointer to the static table).
        c(&mut a, "1Bh", [0x1B00, 0, 0, 0]);
        for (from, to) in [
            (0x04, 0x20),
            (0x20, 0x22),
            (0x22, 0x23),
            (0x23, 0x2D),
            (0x2D, 0x2E),
        ] {
            dump_buffer(&mut a, hex, &format!("1Bh-{from:02X}"), &[(from, to)]);
        }
        dump_buffer(&mut a, hex, "1Bh-2E", &[(0x2E, 0x33)]);
        // ModeInfoBlocks of the standard VESA modes as drivers read them: attributes,
        // window A attributes, granularity and size, bytes per line, resolution, character
        // cell, planes, bits per pixel, memory model, colour masks.
        for mode in [
            0x100u32, 0x101, 0x103, 0x105, 0x107, 0x10E, 0x111, 0x114, 0x117, 0x11A,
        ] {
            c(&mut a, &format!("4F01-{mode:03X}"), [0x4F01, 0, mode, 0]);
            dump_buffer(
                &mut a,
                hex,
                &format!("4F01-{mode:03X}-info"),
                &[(0x00, 0x03), (0x04, 0x08), (0x10, 0x1C), (0x1F, 0x27)],
            );
        }
        serial_out(&mut a, format!("{DONE}\r\n").as_bytes());
        finish(a)
    }
}

/// Answers the VGA BIOS interface leaves to the implementation, or where SeaVGABIOS
/// does not do what IBM's BIOS does (Aero's answers there are checked in
/// firmware/src/vgabios/exec_tests.rs).
const SEAVGABIOS_DIFFERENCES: [(&str, &str); 9] = [
    (
        "1Bh-20:",
        "SeaVGABIOS leaves the CGA mode/palette bytes 0 (Aero: 29h 30h as IBM)",
    ),
    (
        "1Bh-22:",
        "state table rows: SeaVGABIOS gives rows-1 (24), IBM and Aero 25",
    ),
    (
        "1Bh-2D:",
        "SeaVGABIOS leaves the misc flags 0 (Aero: cursor emulation, blink)",
    ),
    (
        "1019:",
        "QEMU's std-vga ignores the PEL mask, so SeaVGABIOS reads 00h",
    ),
    ("1C00:", "save-state buffer sizes are the BIOS's own layout"),
    (
        "1130-350:",
        "SeaVGABIOS keeps 400-line text after AH=12h BL=30h AL=01h",
    ),
    (
        "1130-8x8:",
        "the 8x8 font in a 350-line mode gives 43 rows (SeaVGABIOS: 400 lines)",
    ),
    (
        "4F05-get:",
        "SeaVGABIOS refuses the bank window after a mode set with the LFB bit",
    ),
    (
        "0Fh-vbe:",
        "the BDA mode byte during a VBE mode is the BIOS's own marker",
    ),
];

#[test]
fn int10_answers_match_seavgabios() {
    let (aero, _) = run_on_aero(answers::disk(), answers::DONE);
    assert!(aero.contains(answers::DONE), "Aero: {aero:?}");
    let Some((qemu, _)) = run_on_qemu(answers::disk(), "answers", answers::DONE, false) else {
        return;
    };
    assert!(qemu.contains(answers::DONE), "QEMU: {qemu:?}");
    let differing: Vec<String> = aero
        .lines()
        .zip(qemu.lines())
        .filter(|(a, q)| {
            a != q
                && !SEAVGABIOS_DIFFERENCES
                    .iter()
                    .any(|(line, _)| a.starts_with(line))
        })
        .map(|(a, q)| format!("aero {a} / qemu {q}"))
        .collect();
    assert_eq!(aero.lines().count(), qemu.lines().count());
    assert!(
        differing.is_empty(),
        "{} answers differ:\n{}",
        differing.len(),
        differing.join("\n")
    );
}
