//! QEMU driven through its human monitor on stdin and watched through `screendump`: the
//! reference the scenario tests check Aero's needles against.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use aero::screenshot::{Image, write_png};

/// A P6 PPM as QEMU's `screendump` writes it; None while the file is incomplete.
pub fn parse_ppm(data: &[u8]) -> Option<Image> {
    let mut fields = Vec::new();
    let mut i = 0;
    while fields.len() < 4 {
        while data.get(i)?.is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        while !data.get(i)?.is_ascii_whitespace() {
            i += 1;
        }
        fields.push(String::from_utf8_lossy(&data[start..i]).into_owned());
    }
    let (w, h): (u32, u32) = (fields[1].parse().ok()?, fields[2].parse().ok()?);
    let rgb = data.get(i + 1..)?;
    if fields[0] != "P6" || rgb.len() != (w * h * 3) as usize {
        return None;
    }
    Some(Image {
        width: w,
        height: h,
        rgba: rgb
            .chunks_exact(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect(),
    })
}

/// QEMU's name for the key that types `c` on a US keyboard.
pub fn qemu_key(c: char) -> String {
    match c {
        ' ' => "spc".into(),
        '\n' => "ret".into(),
        '_' => "shift-minus".into(),
        '-' => "minus".into(),
        '=' => "equal".into(),
        '/' => "slash".into(),
        '.' => "dot".into(),
        c if c.is_ascii_uppercase() => format!("shift-{}", c.to_ascii_lowercase()),
        c => c.to_string(),
    }
}

pub struct Qemu {
    child: std::process::Child,
    monitor: std::process::ChildStdin,
    dir: PathBuf,
}

impl Qemu {
    /// qemu-system-x86_64 without a display, `args` added; screendumps go to `dir`.
    pub fn start(args: &[&std::ffi::OsStr], dir: &Path) -> Qemu {
        let mut child = Command::new("qemu-system-x86_64")
            .args(["-display", "none", "-serial", "none", "-monitor", "stdio"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("qemu-system-x86_64 (installed by tests/install-deps.sh)");
        let monitor = child.stdin.take().unwrap();
        Qemu {
            child,
            monitor,
            dir: dir.to_path_buf(),
        }
    }

    pub fn send(&mut self, line: &str) {
        writeln!(self.monitor, "{line}").unwrap();
        self.monitor.flush().unwrap();
    }

    /// Types `text` key by key (US layout).
    pub fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            self.send(&format!("sendkey {}", qemu_key(c)));
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// One screendump (the monitor writes it asynchronously: wait for a whole file).
    pub fn screendump(&mut self) -> Option<Image> {
        let shot = self.dir.join("qemu.ppm");
        let _ = std::fs::remove_file(&shot);
        self.send(&format!("screendump {}", shot.display()));
        let asked = Instant::now();
        while asked.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(100));
            if let Some(img) = std::fs::read(&shot).ok().and_then(|d| parse_ppm(&d)) {
                return Some(img);
            }
        }
        None
    }

    /// Screendumps until `done` says yes (60 s at most): timed waits would race a
    /// loaded host. The last screen is saved as qemu.png.
    pub fn wait_for(&mut self, what: &str, done: impl Fn(&Image) -> bool) -> Image {
        self.wait_for_within(what, 60, done)
    }

    /// [`Qemu::wait_for`] for at most `seconds` (a guest that boots Linux first).
    pub fn wait_for_within(
        &mut self,
        what: &str,
        seconds: u64,
        done: impl Fn(&Image) -> bool,
    ) -> Image {
        let start = Instant::now();
        let mut last = None;
        while start.elapsed() < Duration::from_secs(seconds) {
            std::thread::sleep(Duration::from_millis(500));
            if let Some(img) = self.screendump() {
                let ok = done(&img);
                last = Some(img);
                if ok {
                    break;
                }
            }
        }
        let img = last.unwrap_or_else(|| panic!("QEMU: no screendump"));
        write_png(&self.dir.join("qemu.png"), img.width, img.height, &img.rgba).unwrap();
        assert!(
            done(&img),
            "QEMU: no {what} within {seconds} s (last screen in {})",
            self.dir.join("qemu.png").display()
        );
        img
    }
}

impl Drop for Qemu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
