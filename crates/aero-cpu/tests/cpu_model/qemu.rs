//! Runs the probe image in QEMU TCG and caches the debug-console output in
//! `~/.cache/aero/cpu-model/<hash>.out` (hash of image, QEMU version and command line).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::probe::{EXIT_PORT, RAM_MIB};

pub const QEMU: &str = "qemu-system-x86_64";

pub fn available() -> bool {
    Command::new(QEMU)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn version() -> String {
    Command::new(QEMU)
        .arg("--version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default()
}

/// FNV-1a, 64 bit: stable across runs and platforms.
fn fnv(h: u64, data: &[u8]) -> u64 {
    data.iter()
        .fold(h, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01B3))
}

fn cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("aero").join("cpu-model")
}

fn args(cpu: &str, kernel: &Path, debugcon: &Path) -> Vec<String> {
    [
        "-accel",
        "tcg",
        "-cpu",
        cpu,
        "-M",
        "pc",
        "-m",
        &format!("{RAM_MIB}M"),
        "-smp",
        "1",
        "-display",
        "none",
        "-monitor",
        "none",
        "-serial",
        "none",
        "-parallel",
        "none",
        "-no-reboot",
        "-device",
        &format!("isa-debug-exit,iobase={EXIT_PORT:#x},iosize=0x04"),
        "-debugcon",
        &format!("file:{}", debugcon.display()),
        "-kernel",
        &kernel.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Debug-console bytes of `image` run under `-cpu cpu`, from the cache when possible.
pub fn run(image: &[u8], cpu: &str) -> Result<Vec<u8>, String> {
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let key = {
        let mut h = fnv(0xCBF2_9CE4_8422_2325, image);
        h = fnv(h, version().as_bytes());
        h = fnv(
            h,
            args(cpu, Path::new("K"), Path::new("D"))
                .join(" ")
                .as_bytes(),
        );
        format!("{h:016x}")
    };
    let cached = dir.join(format!("{key}.out"));
    if let Ok(bytes) = std::fs::read(&cached) {
        return Ok(bytes);
    }
    let tmp = |ext: &str| dir.join(format!("{key}.{ext}.tmp{}", std::process::id()));
    let (kernel, debugcon) = (tmp("img"), tmp("out"));
    std::fs::write(&kernel, image).map_err(|e| format!("writing {}: {e}", kernel.display()))?;
    let _ = std::fs::remove_file(&debugcon);
    let mut child = Command::new(QEMU)
        .args(args(cpu, &kernel, &debugcon))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting {QEMU}: {e}"))?;
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_file(&kernel);
            return Err("QEMU did not finish within 120 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = std::fs::remove_file(&kernel);
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    // isa-debug-exit: exit status (value << 1) | 1 = 1 for the 0 the probe writes.
    if status.code() != Some(1) {
        let _ = std::fs::remove_file(&debugcon);
        return Err(format!("QEMU exited with {status}: {err}"));
    }
    if !err.trim().is_empty() {
        // e.g. "TCG doesn't support requested feature": the model is not what we asked for.
        let _ = std::fs::remove_file(&debugcon);
        return Err(format!("QEMU warned: {err}"));
    }
    let out =
        std::fs::read(&debugcon).map_err(|e| format!("reading {}: {e}", debugcon.display()))?;
    std::fs::rename(&debugcon, &cached).map_err(|e| format!("caching QEMU output: {e}"))?;
    Ok(out)
}
