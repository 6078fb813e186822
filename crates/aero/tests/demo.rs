//! The built-in demo guest (`aero headless` with no disk): it boots to its screen on our
//! BIOS and on SeaBIOS, idles in HLT while its bar moves, and QEMU runs the same image
//! to the same screen (an oracle for the image using only standard PC interfaces).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use aero::screenshot::{Image, Tolerance, assert_matches_golden, compare, read_png};

fn aero(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aero"))
        .args(args)
        .output()
        .expect("run aero")
}

fn out_dir(test: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("demo")
        .join(test);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn golden() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/demo.png")
}

const SEABIOS: &str = "/usr/share/seabios/bios.bin";

/// The demo's animated bar: logical rows 216..224 of 240, doubled in 640×480.
const BAR_ROWS: std::ops::Range<u32> = 432..448;

/// Boots the demo headless until it is ready; returns (exit code, serial, stderr, screen).
fn boot_demo(test: &str, extra: &[&str]) -> (i32, String, String, Image) {
    let dir = out_dir(test);
    let serial = dir.join("serial.txt");
    let shot = dir.join("screen.png");
    let mut args = vec![
        "headless",
        "--serial",
        serial.to_str().unwrap(),
        "--screenshot",
        shot.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = aero(&args);
    let code = out.status.code().unwrap_or(-1);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("aero {args:?} -> {code}\nstderr: {stderr}");
    let serial = String::from_utf8_lossy(&std::fs::read(&serial).unwrap_or_default()).into_owned();
    (
        code,
        serial,
        stderr,
        read_png(&shot).expect("screenshot written"),
    )
}

fn without_bar(img: &Image) -> Image {
    let mut img = img.clone();
    let row = img.width as usize * 4;
    let rows = BAR_ROWS.start as usize..BAR_ROWS.end.min(img.height) as usize;
    img.rgba[rows.start * row..rows.end * row].fill(0);
    img
}

#[test]
fn demo_boots_to_its_screen() {
    let (code, serial, _, screen) = boot_demo(
        "ready",
        &["--until-serial", "AERO-DEMO-READY", "--timeout", "20"],
    );
    assert_eq!(code, 0, "serial: {serial}");
    assert!(serial.starts_with("AERO-DEMO: booting\r\n"), "{serial:?}");
    assert!(
        serial.contains("AERO-DEMO: video VBE mode 0x"),
        "no VBE mode found: {serial:?}"
    );
    assert_eq!((screen.width, screen.height), (640, 480));
    assert_matches_golden(&screen, &golden(), &out_dir("ready"), Tolerance::default()).unwrap();
}

#[test]
fn demo_is_deterministic() {
    let args = ["--until-serial", "AERO-DEMO-READY", "--timeout", "20"];
    let a = boot_demo("det-1", &args);
    let b = boot_demo("det-2", &args);
    assert_eq!(a.0, 0);
    assert!(a.1 == b.1 && a.3 == b.3, "two runs of the demo differ");
}

#[test]
fn demo_idles_in_hlt_and_animates() {
    let (code, serial, stderr, screen) = boot_demo("idle", &["--timeout", "3"]);
    assert_eq!(code, 1, "the demo runs until the timeout");
    assert!(serial.contains("AERO-DEMO-READY"), "{serial:?}");
    // Interrupts arrive 18.2 times a second, so the CPU is nearly always in HLT.
    assert!(
        stderr.contains("halted"),
        "the CPU should be waiting in HLT: {stderr}"
    );
    let ready = read_png(&golden()).unwrap();
    let same = |a: &Image, b: &Image| {
        compare(
            a,
            b,
            Tolerance {
                per_channel: 0,
                mismatch_ratio: 0.0,
            },
        )
        .unwrap()
        .mismatched
            == 0
    };
    assert!(
        same(&without_bar(&screen), &without_bar(&ready)),
        "only the bar may change while idle"
    );
    assert!(!same(&screen, &ready), "the bar did not move in 3 s");
}

#[test]
fn demo_boots_on_seabios() {
    assert!(
        Path::new(SEABIOS).exists(),
        "{SEABIOS} is missing: apt-get install seabios (tests/install-deps.sh does)"
    );
    let (code, serial, _, screen) = boot_demo(
        "seabios",
        &[
            "--bios",
            SEABIOS,
            "--until-serial",
            "AERO-DEMO-READY",
            "--timeout",
            "20",
        ],
    );
    assert_eq!(code, 0, "serial: {serial}");
    assert!(
        serial.contains("AERO-DEMO: video VBE mode 0x"),
        "{serial:?}"
    );
    let dir = out_dir("seabios");
    assert_matches_golden(&screen, &golden(), &dir, Tolerance::default()).unwrap();
}

/// QEMU's screendump: binary PPM (P6, maxval 255).
fn read_ppm(path: &Path) -> Image {
    let data = std::fs::read(path).unwrap();
    let mut fields = Vec::new();
    let mut at = 0;
    while fields.len() < 4 {
        while data[at].is_ascii_whitespace() {
            at += 1;
        }
        let start = at;
        while !data[at].is_ascii_whitespace() {
            at += 1;
        }
        fields.push(String::from_utf8_lossy(&data[start..at]).into_owned());
    }
    assert_eq!(
        (fields[0].as_str(), fields[3].as_str()),
        ("P6", "255"),
        "unexpected PPM header"
    );
    let (w, h): (u32, u32) = (fields[1].parse().unwrap(), fields[2].parse().unwrap());
    let pixels = &data[at + 1..][..(w * h * 3) as usize];
    Image {
        width: w,
        height: h,
        rgba: pixels
            .chunks(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect(),
    }
}

#[test]
fn demo_runs_the_same_under_qemu() {
    let qemu = "qemu-system-x86_64";
    if Command::new(qemu).arg("--version").output().is_err() {
        eprintln!(
            "NOTE: {qemu} is not installed; skipping the QEMU oracle (tests/install-deps.sh installs it)"
        );
        return;
    }
    let dir = out_dir("qemu");
    let img = dir.join("demo.img");
    std::fs::write(&img, aero_firmware::demo::demo_disk_image()).unwrap();
    let serial = dir.join("serial.txt");
    let shot = dir.join("screen.ppm");
    let _ = std::fs::remove_file(&serial);
    let _ = std::fs::remove_file(&shot);
    let mut child = Command::new(qemu)
        .args([
            "-accel",
            "tcg",
            "-m",
            "64",
            "-display",
            "none",
            "-no-reboot",
            "-snapshot",
            "-monitor",
            "stdio",
        ])
        .arg("-drive")
        .arg(format!("file={},format=raw,if=ide", img.display()))
        .arg("-serial")
        .arg(format!("file:{}", serial.display()))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start qemu");
    let deadline = Instant::now() + Duration::from_secs(60);
    let read_serial =
        || String::from_utf8_lossy(&std::fs::read(&serial).unwrap_or_default()).into_owned();
    let mut text = read_serial();
    while !text.contains("AERO-DEMO-READY") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        text = read_serial();
    }
    let ready = text.contains("AERO-DEMO-READY");
    let mut stdin = child.stdin.take().unwrap();
    if ready {
        writeln!(stdin, "screendump {}", shot.display()).unwrap();
    }
    writeln!(stdin, "quit").unwrap();
    drop(stdin);
    let quit_deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() && Instant::now() < quit_deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        ready,
        "QEMU did not reach AERO-DEMO-READY in 60 s; serial: {text:?}; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("AERO-DEMO: booting\r\n"), "{text:?}");
    assert!(
        text.contains("AERO-DEMO: video VBE mode 0x"),
        "SeaBIOS/QEMU's VGA BIOS should give a VBE mode: {text:?}"
    );
    // QEMU keeps running while we ask for the picture, so the bar may have moved.
    let screen = read_ppm(&shot);
    let expected = read_png(&golden()).unwrap();
    let c = compare(
        &without_bar(&screen),
        &without_bar(&expected),
        Tolerance::default(),
    )
    .unwrap();
    if c.mismatched > 0 {
        aero::screenshot::write_png(
            &dir.join("qemu.png"),
            screen.width,
            screen.height,
            &screen.rgba,
        )
        .unwrap();
        aero::screenshot::write_png(
            &dir.join("diff.png"),
            c.diff.width,
            c.diff.height,
            &c.diff.rgba,
        )
        .unwrap();
        panic!(
            "QEMU's screen differs from the golden in {} pixels; see {}",
            c.mismatched,
            dir.display()
        );
    }
}
