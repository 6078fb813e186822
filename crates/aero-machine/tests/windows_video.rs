//! Windows' boot video driver (bootvid) on Aero's VGA, with QEMU's std-vga as the oracle.
//!
//! bootvid does not ask the BIOS for anything: it checks for a VGA by writing
//! graphics-controller and sequencer registers and reading them back, programs mode 12h
//! (640x480, 16 colours, planar) register by register, loads its own palette and draws
//! through the planar machinery: write mode 2 with the bit mask and latches, write mode 0
//! with the map mask and set/reset, write mode 1 latch copies and colour-compare reads.
//! A boot-disk program does the same here; on Aero and on `qemu-system-x86_64 -vga std`
//! the screens must be identical pixel for pixel. QEMU expands the DAC's 6-bit values
//! to 8 bits by its own rule (Aero replicates the top bits), so pixels are compared at
//! the DAC's 6-bit precision, which is exact for what the palette holds.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use aero_machine::{BootDevice, Machine, MachineConfig, RunEvent};
use aero_storage::MemoryDisk;
use iced_x86::code_asm::*;

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

fn serial_out(a: &mut CodeAssembler, text: &[u8]) {
    a.mov(dx, 0x3F8u32).unwrap();
    for &b in text {
        a.mov(al, u32::from(b)).unwrap();
        a.out(dx, al).unwrap();
    }
}

/// Boot sector: loads the main program behind it with INT 13h and jumps there.
fn loader() -> Vec<u8> {
    let mut a = CodeAssembler::new(16).unwrap();
    let mut fail = a.create_label();
    a.cli().unwrap();
    a.xor(ax, ax).unwrap();
    a.mov(ds, ax).unwrap();
    a.mov(es, ax).unwrap();
    a.mov(ss, ax).unwrap();
    a.mov(sp, 0x7C00u32).unwrap();
    a.mov(ax, 0x0200 | MAIN_SECTORS).unwrap();
    a.mov(cx, 0x0002u32).unwrap();
    a.xor(dh, dh).unwrap();
    a.mov(bx, MAIN as u32).unwrap();
    a.int(0x13).unwrap();
    a.jc(fail).unwrap();
    a.jmp(MAIN).unwrap();
    a.set_label(&mut fail).unwrap();
    serial_out(&mut a, b"!L");
    a.hlt().unwrap();
    let mut sector = a.assemble(0x7C00).unwrap();
    sector.resize(510, 0);
    sector.extend_from_slice(&[0x55, 0xAA]);
    sector
}

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
    for row in 230..250u32 {
        for col in 15..35u32 {
            a.mov(di, row * 80 + col).unwrap();
            a.mov(al, byte_ptr(di).es()).unwrap();
            a.mov(byte_ptr(di).es(), 0x5Au32).unwrap();
        }
    }
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

fn disk_image() -> Vec<u8> {
    let mut image = loader();
    image.extend_from_slice(&main_program());
    image.resize(64 * 512, 0);
    image
}

/// An RGB picture.
struct Picture {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
}

fn run_on_aero() -> Picture {
    let disk = MemoryDisk::new(disk_image(), 512, false).unwrap();
    let mut m = Machine::new(MachineConfig {
        memory_bytes: 64 << 20,
        hda: Some(Box::new(disk)),
        cdrom: None,
        fda: None,
        boot_order: vec![BootDevice::HardDisk],
        external_bios: None,
        deterministic: true,
        ..Default::default()
    })
    .unwrap();
    let mut serial = String::new();
    for _ in 0..300 {
        assert_eq!(m.run_for(10_000_000), RunEvent::Running);
        serial.push_str(&String::from_utf8_lossy(&m.take_serial_output()));
        if serial.contains("BOOTVID-OK") || serial.contains('!') {
            break;
        }
    }
    assert!(serial.contains("BOOTVID-OK"), "Aero: {serial:?}");
    let f = m.screen();
    Picture {
        width: f.width,
        height: f.height,
        rgb: f
            .pixels
            .chunks(4)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect(),
    }
}

fn out_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bootvid_qemu");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// QEMU's screendump: binary PPM (P6, maxval 255); None while it is incomplete.
fn read_ppm(path: &Path) -> Option<Picture> {
    let data = std::fs::read(path).ok()?;
    let mut fields = Vec::new();
    let mut at = 0;
    while fields.len() < 4 {
        while data.get(at)?.is_ascii_whitespace() {
            at += 1;
        }
        let start = at;
        while !data.get(at)?.is_ascii_whitespace() {
            at += 1;
        }
        fields.push(String::from_utf8_lossy(&data[start..at]).into_owned());
    }
    if fields[0] != "P6" || fields[3] != "255" {
        return None;
    }
    let (width, height): (u32, u32) = (fields[1].parse().ok()?, fields[2].parse().ok()?);
    let rgb = data
        .get(at + 1..)?
        .get(..(width * height * 3) as usize)?
        .to_vec();
    Some(Picture { width, height, rgb })
}

/// The same disk on QEMU's std-vga; None (after a note) when QEMU is not installed.
fn run_on_qemu() -> Option<Picture> {
    let qemu = "qemu-system-x86_64";
    if Command::new(qemu).arg("--version").output().is_err() {
        eprintln!("NOTE: {qemu} is not installed; skipping (tests/install-deps.sh installs it)");
        return None;
    }
    let dir = out_dir();
    let img = dir.join("bootvid.img");
    std::fs::write(&img, disk_image()).unwrap();
    let serial = dir.join("serial.txt");
    let shot = dir.join("qemu.ppm");
    let _ = std::fs::remove_file(&serial);
    let _ = std::fs::remove_file(&shot);
    let mut child = Command::new(qemu)
        .args([
            "-accel", "tcg", "-m", "64", "-vga", "std", "-display", "none",
        ])
        .args(["-no-reboot", "-snapshot", "-monitor", "stdio"])
        .arg("-drive")
        .arg(format!("file={},format=raw,if=ide", img.display()))
        .arg("-serial")
        .arg(format!("file:{}", serial.display()))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start qemu");
    let mut stdin = child.stdin.take().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let text = loop {
        let text =
            String::from_utf8_lossy(&std::fs::read(&serial).unwrap_or_default()).into_owned();
        if text.contains("BOOTVID-OK") || text.contains('!') || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let picture = if text.contains("BOOTVID-OK") {
        writeln!(stdin, "screendump {}", shot.display()).unwrap();
        stdin.flush().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(p) = read_ppm(&shot) {
                break Some(p);
            }
            if Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    } else {
        None
    };
    let _ = writeln!(stdin, "quit");
    let _ = stdin.flush();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(text.contains("BOOTVID-OK"), "QEMU: {text:?}");
    Some(picture.expect("QEMU wrote its screendump"))
}

fn write_ppm(path: &Path, p: &Picture) {
    let mut data = format!("P6\n{} {}\n255\n", p.width, p.height).into_bytes();
    data.extend_from_slice(&p.rgb);
    std::fs::write(path, data).unwrap();
}

/// What the palette says each 8-bit screen value came from: the DAC's 6 bits.
fn dac_bits(v: u8) -> u8 {
    v >> 2
}

#[test]
fn bootvid_presence_check_and_mode_12h_drawing_match_qemu_std_vga() {
    let aero = run_on_aero();
    assert_eq!((aero.width, aero.height), (640, 480), "mode 12h");
    // The picture holds what was drawn (so an all-black pair cannot pass).
    let at = |x: u32, y: u32| {
        let i = ((y * aero.width + x) * 3) as usize;
        [aero.rgb[i], aero.rgb[i + 1], aero.rgb[i + 2]].map(dac_bits)
    };
    assert_eq!(at(3, 10), PALETTE[0], "band 0 keeps colour 0");
    assert_eq!(at(5 * 15 + 3, 12 * 15 + 10), PALETTE[15], "band 15");
    assert_eq!(at(0, 479), PALETTE[0], "cleared");
    write_ppm(&out_dir().join("aero.ppm"), &aero);
    let Some(qemu) = run_on_qemu() else {
        return;
    };
    assert_eq!((qemu.width, qemu.height), (aero.width, aero.height));
    let mut differing = Vec::new();
    for (i, (a, q)) in aero.rgb.chunks(3).zip(qemu.rgb.chunks(3)).enumerate() {
        if a.iter()
            .map(|&v| dac_bits(v))
            .ne(q.iter().map(|&v| dac_bits(v)))
        {
            differing.push((
                i as u32 % aero.width,
                i as u32 / aero.width,
                a.to_vec(),
                q.to_vec(),
            ));
        }
    }
    assert!(
        differing.is_empty(),
        "{} pixels differ from QEMU (x, y, aero, qemu), first: {:?}; pictures in {}",
        differing.len(),
        &differing[..differing.len().min(8)],
        out_dir().display()
    );
}
