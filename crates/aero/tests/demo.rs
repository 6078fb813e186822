//! The built-in demo guest (`aero headless` with no disk): on Aero it drives AeroGPU
//! (ring, fence interrupts, scanout 0) and boots to its screen on our BIOS and on
//! SeaBIOS, idles in HLT while its bar moves and is presented, and the device draws a
//! textured, depth-tested cube that turns one step per presented frame (the GPU
//! executor; the CPU one has no 3D and the demo says so); QEMU (no AeroGPU) runs the
//! same image through VBE to the same screen without the cube, an oracle for the rest.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use aero::screenshot::{Image, Tolerance, assert_matches_golden, compare, read_png};

mod common;
use common::{DEMO_MESH_BOX, differing_rows, golden, without_demo_bar as without_bar};

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

/// A file's text (lossy); empty when it does not exist (yet).
fn read_text(path: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned()
}

const SEABIOS: &str = "/usr/share/seabios/bios.bin";

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
    let serial = read_text(&serial);
    (
        code,
        serial,
        stderr,
        read_png(&shot).expect("screenshot written"),
    )
}

/// On Aero the demo takes the AeroGPU path: ABI found, both fences signalled by
/// interrupt before the ready marker, scanout 0 rather than VBE, no device errors.
fn assert_aerogpu_path(serial: &str) {
    let ready = serial.find("AERO-DEMO-READY").expect("ready marker");
    let before = &serial[..ready];
    let expected = [
        "AERO-DEMO: aerogpu abi 1.",
        "AERO-DEMO: fence 1 done\r\n",
        "AERO-DEMO: video aerogpu scanout 640x480x32\r\n",
        "AERO-DEMO: fence 2 done\r\n",
    ];
    let mut at = 0;
    for line in expected {
        let found = before[at..].find(line);
        assert!(
            found.is_some(),
            "{line:?} missing or out of order: {serial:?}"
        );
        at += found.unwrap() + line.len();
    }
    assert!(
        !serial.contains("VBE"),
        "VBE used with AeroGPU present: {serial:?}"
    );
    for bad in ["error", "stalled", "timed out", "unusable", "no usable"] {
        assert!(!serial.contains(bad), "{bad:?} on COM1: {serial:?}");
    }
}

const MESH_ON: &str =
    "AERO-DEMO: mesh on: a textured cube drawn by aerogpu\r\nAERO-DEMO-FRAME=0\r\n";
const MESH_OFF: &str = "AERO-DEMO: aerogpu drew nothing: this executor has no 3D (use --gpu wgpu)\r\nAERO-DEMO: mesh off\r\n";

/// The cube's box of a 640×480 screen.
fn mesh_box(img: &Image) -> Image {
    let (x, y, size) = DEMO_MESH_BOX;
    let rgba = (y..y + size)
        .flat_map(|row| {
            let at = ((row * img.width + x) * 4) as usize;
            img.rgba[at..at + (size * 4) as usize].to_vec()
        })
        .collect();
    Image {
        width: size,
        height: size,
        rgba,
    }
}

#[test]
fn demo_boots_to_its_screen() {
    let (code, serial, _, screen) = boot_demo(
        "ready",
        &["--until-serial", "AERO-DEMO-READY", "--timeout", "20"],
    );
    assert_eq!(code, 0, "serial: {serial}");
    assert!(serial.starts_with("AERO-DEMO: booting\r\n"), "{serial:?}");
    assert_aerogpu_path(&serial);
    assert!(serial.contains(MESH_ON), "{serial:?}");
    assert_eq!((screen.width, screen.height), (640, 480));
    assert_matches_golden(
        &screen,
        &golden("demo"),
        &out_dir("ready"),
        Tolerance::default(),
    )
    .unwrap();
}

#[test]
fn demo_is_deterministic() {
    let args = ["--until-serial", "AERO-DEMO-READY", "--timeout", "20"];
    let a = boot_demo("det-1", &args);
    let b = boot_demo("det-2", &args);
    assert_eq!(a.0, 0);
    assert!(a.1 == b.1 && a.3 == b.3, "two runs of the demo differ");
}

/// The cube through guest → ring → processor → wgpu executor → scanout, at a fixed
/// frame: `--until-serial AERO-DEMO-FRAME=32` stops right after frame 32 was presented
/// (the rotation follows the frame counter, not a clock). The golden was made by Aero
/// on lavapipe; the default tolerance (8 per channel on 0.1% of the pixels) leaves room
/// for another adapter's rasterization of the cube's edges and texel ties. Two runs are
/// identical bit for bit, and the box at frame 32 differs from frame 0's: it turns.
#[test]
fn demo_cube_turns_with_the_frame_counter() {
    let args = ["--until-serial", "AERO-DEMO-FRAME=32", "--timeout", "20"];
    let (code, serial, stderr, screen) = boot_demo("frame32", &args);
    assert_eq!(code, 0, "{stderr}\n{serial}");
    assert_aerogpu_path(&serial);
    assert!(serial.contains(MESH_ON), "{serial:?}");
    assert!(serial.ends_with("AERO-DEMO-FRAME=32\r\n"), "{serial:?}");
    assert_matches_golden(
        &screen,
        &golden("demo-frame32"),
        &out_dir("frame32"),
        Tolerance::default(),
    )
    .unwrap();
    let again = boot_demo("frame32-2", &args);
    assert!(again.3 == screen, "two runs differ at frame 32");
    let frame0 = read_png(&golden("demo")).unwrap();
    let exact = Tolerance {
        per_channel: 0,
        mismatch_ratio: 0.0,
    };
    let turned = compare(&mesh_box(&screen), &mesh_box(&frame0), exact).unwrap();
    assert!(
        turned.mismatched > 1000,
        "the cube did not turn: {} pixels changed",
        turned.mismatched
    );
    // Outside the box and the bar nothing moved.
    assert_eq!(
        compare(&without_bar(&screen), &without_bar(&frame0), exact)
            .unwrap()
            .mismatched,
        0
    );
}

/// `--gpu wgpu` (lavapipe in CI) and `--gpu cpu` run AeroGPU's commands on different
/// executors: the CPU one skips draws, so the demo finds its box empty after frame 0,
/// says so on COM1 and in the box, and stops drawing the cube; everything else
/// (serial log and picture) is the same. A bad choice is refused.
#[test]
fn demo_on_the_cpu_executor_shows_that_it_has_no_3d() {
    let args = ["--until-serial", "AERO-DEMO-READY", "--timeout", "20"];
    let gpu = boot_demo("gpu-wgpu", &[&args[..], &["--gpu", "wgpu"]].concat());
    assert_eq!(
        gpu.0, 0,
        "--gpu wgpu (no Vulkan adapter? install mesa-vulkan-drivers): {}",
        gpu.2
    );
    assert_aerogpu_path(&gpu.1);
    assert!(gpu.1.contains(MESH_ON), "{:?}", gpu.1);
    let cpu = boot_demo("gpu-cpu", &[&args[..], &["--gpu", "cpu"]].concat());
    assert_eq!(cpu.0, 0);
    assert_aerogpu_path(&cpu.1);
    assert!(cpu.1.contains(MESH_OFF), "{:?}", cpu.1);
    assert_eq!(
        gpu.1.replace(MESH_ON, ""),
        cpu.1.replace(MESH_OFF, ""),
        "serial differs beyond the mesh lines"
    );
    assert!(
        without_bar(&gpu.3) == without_bar(&cpu.3),
        "the two executors' screens differ outside the cube's box"
    );
    assert_matches_golden(
        &mesh_box(&cpu.3),
        &golden("demo-no-3d-box"),
        &out_dir("gpu-cpu"),
        Tolerance::default(),
    )
    .unwrap();
    let bad = aero(&["headless", "--gpu", "vulkan"]);
    assert_ne!(bad.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--gpu"));
}

/// Without a wgpu adapter (WGPU_BACKEND names a backend this build lacks) `--gpu auto`
/// runs the demo on the CPU executor after one warning, and `--gpu wgpu` refuses to start.
#[test]
fn without_an_adapter_auto_falls_back_to_the_cpu_executor() {
    let run = |gpu: &str| {
        Command::new(env!("CARGO_BIN_EXE_aero"))
            .args([
                "headless",
                "--gpu",
                gpu,
                "--until-serial",
                "AERO-DEMO-READY",
            ])
            .args(["--timeout", "20"])
            .env("WGPU_BACKEND", "metal")
            .output()
            .expect("run aero")
    };
    let auto = run("auto");
    let stderr = String::from_utf8_lossy(&auto.stderr);
    assert_eq!(auto.status.code(), Some(0), "{stderr}");
    let warnings: Vec<_> = stderr.lines().filter(|l| l.contains("aerogpu")).collect();
    // The fallback, then the CPU executor's one note that it skips the demo's draws.
    assert_eq!(warnings.len(), 2, "{stderr}");
    assert!(warnings[0].contains("using the CPU executor"), "{stderr}");
    assert!(
        warnings[1].contains("3D draws need the GPU executor"),
        "{stderr}"
    );
    let wgpu = run("wgpu");
    assert_ne!(wgpu.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&wgpu.stderr).contains("--gpu wgpu: no wgpu adapter"),
        "{}",
        String::from_utf8_lossy(&wgpu.stderr)
    );
}

/// Keys from a `--monitor` script (`sendkey`, `type`): the demo echoes each on COM1, the
/// same lines QEMU's `sendkey` gives in `demo_runs_the_same_under_qemu`, and two runs are
/// identical.
#[test]
fn demo_takes_keys_from_a_monitor_script() {
    let dir = out_dir("keys");
    let script = dir.join("keys.txt");
    std::fs::write(
        &script,
        "wait-serial AERO-DEMO-READY\n\
         sendkey a\n\
         sendkey shift-b\n\
         type \"1x&Y\"\n\
         wait-serial AERO-DEMO-KEY=Y\n\
         sendkey ret\n\
         wait-serial AERO-DEMO-KEY=0x0D\n\
         quit\n",
    )
    .unwrap();
    let args = ["--monitor", script.to_str().unwrap(), "--timeout", "30"];
    let (code, serial, stderr, _) = boot_demo("keys", &args);
    assert_eq!(code, 0, "{stderr}\n{serial}");
    let keys: Vec<&str> = serial
        .lines()
        .filter_map(|l| l.strip_prefix("AERO-DEMO-KEY="))
        .collect();
    assert_eq!(keys, ["a", "B", "1", "x", "&", "Y", "0x0D"], "{serial}");
    let again = boot_demo("keys-2", &args);
    assert_eq!(serial, again.1, "two runs with the same script differ");
}

#[test]
fn demo_idles_in_hlt_and_animates() {
    let (code, serial, stderr, screen) = boot_demo("idle", &["--timeout", "3"]);
    assert_eq!(code, 1, "the demo runs until the timeout");
    assert!(serial.contains("AERO-DEMO-READY"), "{serial:?}");
    // Every bar move is presented; a device that stopped consuming the ring or
    // rejected a present would show up here.
    assert_aerogpu_path(&serial);
    // Interrupts arrive 18.2 times a second, so the CPU is nearly always in HLT.
    assert!(
        stderr.contains("halted"),
        "the CPU should be waiting in HLT: {stderr}"
    );
    let ready = read_png(&golden("demo")).unwrap();
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
        "only the bar and the cube may change while idle"
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
    // SeaBIOS routes the display function's INTx to its own choice of line.
    assert_aerogpu_path(&serial);
    assert!(serial.contains(MESH_ON), "{serial:?}");
    // Its timer ticks fall elsewhere: a tick right after the ready marker may already
    // have moved the bar and turned the cube when the run stops.
    assert_golden_but_bar("SeaBIOS", &screen, &out_dir("seabios"), "seabios.png");
}

/// QEMU's screendump: binary PPM (P6, maxval 255); None while it is incomplete.
fn try_read_ppm(path: &Path) -> Option<Image> {
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
    assert_eq!(
        (fields[0].as_str(), fields[3].as_str()),
        ("P6", "255"),
        "unexpected PPM header"
    );
    let (w, h): (u32, u32) = (fields[1].parse().unwrap(), fields[2].parse().unwrap());
    let pixels = data.get(at + 1..)?.get(..(w * h * 3) as usize)?;
    Some(Image {
        width: w,
        height: h,
        rgba: pixels
            .chunks(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect(),
    })
}

/// QEMU running the demo image, its monitor on stdin, COM1 in a file.
struct Qemu {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    serial: PathBuf,
    dir: PathBuf,
}

impl Qemu {
    /// None (after a printed note) when QEMU is not installed.
    fn start(test: &str, extra: &[&str]) -> Option<Qemu> {
        let qemu = "qemu-system-x86_64";
        if Command::new(qemu).arg("--version").output().is_err() {
            eprintln!(
                "NOTE: {qemu} is not installed; skipping the QEMU oracle (tests/install-deps.sh installs it)"
            );
            return None;
        }
        let dir = out_dir(test);
        let img = dir.join("demo.img");
        std::fs::write(&img, aero_firmware::demo::demo_disk_image()).unwrap();
        let serial = dir.join("serial.txt");
        let _ = std::fs::remove_file(&serial);
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
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start qemu");
        let stdin = child.stdin.take().unwrap();
        Some(Qemu {
            child,
            stdin,
            serial,
            dir,
        })
    }

    fn serial(&self) -> String {
        read_text(&self.serial)
    }

    /// Waits (wall clock) until COM1 output contains `needle`; panics with the output if not.
    fn wait_serial(&mut self, needle: &str, secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let text = self.serial();
            if text.contains(needle) {
                return text;
            }
            if Instant::now() >= deadline || self.child.try_wait().unwrap().is_some() {
                let _ = self.child.kill();
                let mut stderr = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
                }
                panic!(
                    "QEMU did not print {needle:?} in {secs} s; serial: {text:?}; stderr: {stderr}"
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn monitor(&mut self, command: &str) {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The current screen (the monitor runs commands in order, so it is the picture after
    /// everything sent before).
    fn screen(&mut self, name: &str) -> Image {
        let path = self.dir.join(format!("{name}.ppm"));
        let _ = std::fs::remove_file(&path);
        self.monitor(&format!("screendump {}", path.display()));
        let deadline = Instant::now() + Duration::from_secs(20);
        // The file appears once it is complete enough to hold the whole header and data.
        loop {
            if let Ok(meta) = std::fs::metadata(&path)
                && meta.len() > 15
                && let Some(img) = try_read_ppm(&path)
            {
                return img;
            }
            assert!(
                Instant::now() < deadline,
                "QEMU wrote no screendump {}",
                path.display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Qemu {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn save(dir: &Path, name: &str, img: &Image) {
    aero::screenshot::write_png(&dir.join(name), img.width, img.height, &img.rgba).unwrap();
}

/// Asserts that `who`'s `screen` is the golden demo screen apart from the frame-counter
/// bar (a timer tick may move it while the picture is taken); on a mismatch saves the
/// screen as `dir/name` and the difference as `dir/diff.png`.
fn assert_golden_but_bar(who: &str, screen: &Image, dir: &Path, name: &str) {
    let expected = read_png(&golden("demo")).unwrap();
    let c = compare(
        &without_bar(screen),
        &without_bar(&expected),
        Tolerance::default(),
    )
    .unwrap();
    if c.mismatched > 0 {
        save(dir, name, screen);
        save(dir, "diff.png", &c.diff);
        panic!(
            "{who}'s screen differs from the golden in {} pixels; see {}",
            c.mismatched,
            dir.display()
        );
    }
}

#[test]
fn demo_runs_the_same_under_qemu() {
    let Some(mut q) = Qemu::start("qemu", &[]) else {
        return;
    };
    let text = q.wait_serial("AERO-DEMO-READY", 60);
    assert!(text.starts_with("AERO-DEMO: booting\r\n"), "{text:?}");
    assert!(
        text.contains("AERO-DEMO: video VBE mode 0x"),
        "SeaBIOS/QEMU's VGA BIOS should give a VBE mode: {text:?}"
    );
    // QEMU keeps running while we ask for the picture, so the bar may have moved.
    let screen = q.screen("ready");
    let dir = q.dir.clone();
    assert_golden_but_bar("QEMU", &screen, &dir, "qemu.png");
    let expected = read_png(&golden("demo")).unwrap();

    // Typing: each key is echoed on COM1 and drawn in the key panel; Enter clears it.
    for key in ["a", "shift-b", "1"] {
        q.monitor(&format!("sendkey {key}"));
    }
    let text = q.wait_serial("AERO-DEMO-KEY=1\r\n", 20);
    assert!(
        text.contains("AERO-DEMO-KEY=a\r\nAERO-DEMO-KEY=B\r\nAERO-DEMO-KEY=1\r\n"),
        "{text:?}"
    );
    let typed = q.screen("typed");
    let (n, rows) = differing_rows(&without_bar(&typed), &without_bar(&expected));
    // The panel's text row: logical rows 150..166, doubled.
    assert!(
        n > 50 && rows.is_some_and(|(lo, hi)| lo >= 300 && hi < 332),
        "{n} pixels changed in rows {rows:?}"
    );
    save(&dir, "typed.png", &typed);
    q.monitor("sendkey ret");
    q.wait_serial("AERO-DEMO-KEY=0x0D\r\n", 20);
    let cleared = q.screen("cleared");
    assert_eq!(
        differing_rows(&without_bar(&cleared), &without_bar(&expected)).0,
        0,
        "Enter should clear the key line"
    );
}

#[test]
fn demo_falls_back_to_vga_mode_13h_without_a_usable_vbe_mode() {
    // QEMU's Cirrus VGA BIOS offers no 640x480 mode with 32-bit 00RRGGBB pixels.
    let Some(mut q) = Qemu::start("qemu-cirrus", &["-vga", "cirrus"]) else {
        return;
    };
    let text = q.wait_serial("AERO-DEMO-READY", 60);
    assert!(text.contains("AERO-DEMO: video VGA mode 13h"), "{text:?}");
    let shown = q.screen("ready");
    // QEMU shows mode 13h with doubled pixels (640x400); take every other one.
    let scale = shown.width / 320;
    assert!(
        scale >= 1 && (shown.width, shown.height) == (320 * scale, 200 * scale),
        "not mode 13h: {}x{}",
        shown.width,
        shown.height
    );
    let rgba = (0..200u32)
        .flat_map(|y| {
            (0..320u32).map(move |x| ((y * scale * shown.width + x * scale) * 4) as usize)
        })
        .flat_map(|i| shown.rgba[i..i + 4].to_vec())
        .collect();
    let screen = Image {
        width: 320,
        height: 200,
        rgba,
    };
    // The bar (logical rows 176..184) may move while QEMU runs.
    let mut masked = screen.clone();
    masked.rgba[176 * 320 * 4..184 * 320 * 4].fill(0);
    assert_matches_golden(&masked, &golden("demo-vga"), &q.dir, Tolerance::default()).unwrap();
}
