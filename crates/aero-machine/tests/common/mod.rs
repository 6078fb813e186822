//! The boot-disk program harness the machine tests share: a boot sector that loads a
//! program behind it, runs on Aero (our BIOS or an external one) and on QEMU TCG, and the
//! COM1 text each run printed.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use aero_machine::{BootDevice, Machine, MachineConfig, RunEvent};
use aero_storage::MemoryDisk;
use iced_x86::code_asm::*;

/// Writes `text` to COM1 (DX and AL clobbered).
pub fn serial_out(a: &mut CodeAssembler, text: &[u8]) {
    a.mov(dx, 0x3F8u32).unwrap();
    for &b in text {
        a.mov(al, u32::from(b)).unwrap();
        a.out(dx, al).unwrap();
    }
}

/// Boot sector: loads `sectors` sectors (from sector 2 on) to 0:`load_at` with INT 13h
/// and jumps there; prints "!L" if the read fails.
pub fn loader(load_at: u64, sectors: u32) -> Vec<u8> {
    let mut a = CodeAssembler::new(16).unwrap();
    let mut fail = a.create_label();
    a.cli().unwrap();
    a.xor(ax, ax).unwrap();
    a.mov(ds, ax).unwrap();
    a.mov(es, ax).unwrap();
    a.mov(ss, ax).unwrap();
    a.mov(sp, 0x7C00u32).unwrap();
    a.mov(ax, 0x0200 | sectors).unwrap();
    a.mov(cx, 0x0002u32).unwrap();
    a.xor(dh, dh).unwrap();
    a.mov(bx, load_at as u32).unwrap();
    a.int(0x13).unwrap();
    a.jc(fail).unwrap();
    a.jmp(load_at).unwrap();
    a.set_label(&mut fail).unwrap();
    serial_out(&mut a, b"!L");
    a.hlt().unwrap();
    let mut sector = a.assemble(0x7C00).unwrap();
    sector.resize(510, 0);
    sector.extend_from_slice(&[0x55, 0xAA]);
    sector
}

/// A 32 KiB disk: the loader of `sectors` sectors, then `program` (assembled for
/// 0:`load_at`).
pub fn program_disk(load_at: u64, sectors: u32, program: &[u8]) -> Vec<u8> {
    assert!(
        program.len() <= sectors as usize * 512,
        "program of {} bytes",
        program.len()
    );
    let mut image = loader(load_at, sectors);
    image.extend_from_slice(program);
    image.resize(64 * 512, 0);
    image
}

/// Boots `image` from the hard disk of a 64 MiB machine (`bios`: an external BIOS image,
/// else ours) until COM1 shows `done` or a failure mark ('!'), or `limit` passes; returns
/// the machine and the serial output.
pub fn run_on_aero(
    image: Vec<u8>,
    bios: Option<Vec<u8>>,
    done: &str,
    limit: Duration,
) -> (Machine, String) {
    let run = AeroRun {
        timeout: limit,
        ..AeroRun::default()
    };
    run_on_aero_with(image, bios, done, &run)
}

/// How `run_on_aero_with` runs Aero.
pub struct AeroRun<'a> {
    pub memory_mib: u32,
    /// Host time to wait for `done`.
    pub timeout: Duration,
    /// COM1 text that ends the run early as a failure.
    pub failure_marks: &'a [&'a str],
    /// Instructions run between two looks at COM1.
    pub slice: u64,
}

impl Default for AeroRun<'_> {
    fn default() -> Self {
        AeroRun {
            memory_mib: 64,
            timeout: Duration::from_secs(60),
            failure_marks: &["!"],
            slice: 10_000_000,
        }
    }
}

/// `run_on_aero` with the memory size, time limit, failure marks and slice of `run`.
pub fn run_on_aero_with(
    image: Vec<u8>,
    bios: Option<Vec<u8>>,
    done: &str,
    run: &AeroRun,
) -> (Machine, String) {
    let disk = MemoryDisk::new(image, 512, false).unwrap();
    let mut m = Machine::new(MachineConfig {
        memory_bytes: u64::from(run.memory_mib) << 20,
        hda: Some(Box::new(disk)),
        boot_order: vec![BootDevice::HardDisk],
        external_bios: bios,
        deterministic: true,
        ..Default::default()
    })
    .unwrap();
    let mut serial = String::new();
    let start = Instant::now();
    while start.elapsed() < run.timeout {
        let event = m.run_for(run.slice);
        serial.push_str(&String::from_utf8_lossy(&m.take_serial_output()));
        assert_eq!(
            event,
            RunEvent::Running,
            "at {}:\n{serial}",
            m.cpu_location()
        );
        if serial.contains(done) || run.failure_marks.iter().any(|f| serial.contains(f)) {
            break;
        }
    }
    (m, serial)
}

/// An RGB picture.
pub struct Picture {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
}

impl Picture {
    /// What Aero's scanout shows now.
    pub fn screen_of(m: &mut Machine) -> Picture {
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
}

impl Picture {
    /// Writes the picture as a binary PPM (P6), for looking at after a failure.
    pub fn write_ppm(&self, path: &Path) {
        let mut data = format!("P6\n{} {}\n255\n", self.width, self.height).into_bytes();
        data.extend_from_slice(&self.rgb);
        std::fs::write(path, data).unwrap();
    }
}

/// What the palette says an 8-bit screen value came from: the DAC's 6 bits.
pub fn dac_bits(v: u8) -> u8 {
    v >> 2
}

/// Asserts that Aero's and QEMU's screens are the same size and show the same DAC
/// colours pixel for pixel (the two scale 6-bit DAC values to 8 bits differently);
/// `dir` (named in the failure) holds the pictures.
pub fn assert_same_dac_colours(aero: &Picture, qemu: &Picture, dir: &Path) {
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
        dir.display()
    );
}

/// QEMU's screendump: binary PPM (P6, maxval 255); None while it is incomplete.
pub fn read_ppm(path: &Path) -> Option<Picture> {
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

/// `target/tmp/<test>`, created.
pub fn out_dir(test: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(test);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `image` on QEMU TCG (64 MiB, std-vga, SeaBIOS) until COM1 shows `done` or '!': the
/// serial output and, if `screen`, QEMU's screendump then. Files go to `dir` as
/// `name.img`, `name-qemu-serial.txt`, `name-qemu.ppm`. None (after a note) when QEMU is
/// not installed.
pub fn run_on_qemu(
    image: &[u8],
    dir: &Path,
    name: &str,
    done: &str,
    screen: bool,
) -> Option<(String, Option<Picture>)> {
    run_on_qemu_with(image, dir, name, done, screen, &QemuRun::default())
}

/// How `run_on_qemu_with` runs QEMU.
pub struct QemuRun<'a> {
    pub memory_mib: u32,
    /// Host time to wait for `done`.
    pub timeout: Duration,
    /// COM1 text that ends the run early as a failure.
    pub failure_marks: &'a [&'a str],
}

impl Default for QemuRun<'_> {
    fn default() -> Self {
        QemuRun {
            memory_mib: 64,
            timeout: Duration::from_secs(60),
            failure_marks: &["!"],
        }
    }
}

/// `run_on_qemu` with the memory size, time limit and failure marks of `run`.
pub fn run_on_qemu_with(
    image: &[u8],
    dir: &Path,
    name: &str,
    done: &str,
    screen: bool,
    run: &QemuRun,
) -> Option<(String, Option<Picture>)> {
    let qemu = "qemu-system-x86_64";
    if Command::new(qemu).arg("--version").output().is_err() {
        eprintln!("NOTE: {qemu} is not installed; skipping (tests/install-deps.sh installs it)");
        return None;
    }
    let img = dir.join(format!("{name}.img"));
    std::fs::write(&img, image).unwrap();
    let serial = dir.join(format!("{name}-qemu-serial.txt"));
    let shot = dir.join(format!("{name}-qemu.ppm"));
    let _ = std::fs::remove_file(&serial);
    let _ = std::fs::remove_file(&shot);
    let mut child = Command::new(qemu)
        .args(["-accel", "tcg", "-m"])
        .arg(run.memory_mib.to_string())
        .args(["-vga", "std", "-display", "none"])
        .args(["-no-reboot", "-snapshot", "-monitor", "stdio"])
        .arg("-drive")
        .arg(format!("file={},format=raw,if=ide", img.display()))
        .arg("-serial")
        .arg(format!("file:{}", serial.display()))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start qemu");
    let mut stdin = child.stdin.take().unwrap();
    let deadline = Instant::now() + run.timeout;
    let text = loop {
        let text =
            String::from_utf8_lossy(&std::fs::read(&serial).unwrap_or_default()).into_owned();
        let failed = run.failure_marks.iter().any(|m| text.contains(m));
        if text.contains(done) || failed || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let picture = if screen && text.contains(done) {
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
    Some((text, picture))
}
