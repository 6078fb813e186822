//! Runs a test image in QEMU TCG once and caches the debug-console output, keyed by a
//! hash of the image, the QEMU version and the command line.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::layout::RAM_MIB;

pub const QEMU: &str = "qemu-system-x86_64";
/// A plain model with what the cases use (SSE2, CX16, LM, LAHF in long mode), plus SSSE3
/// (which Aero advertises in CPUID.1:ECX[9]; QEMU raises #UD for it unless enabled).
pub const CPU_MODEL: &str = "qemu64,+ssse3";

pub fn available() -> bool {
    Command::new(QEMU)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
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
    base.join("aero").join("qemu-diff")
}

fn args(kernel: &Path, debugcon: &Path) -> Vec<String> {
    vec![
        "-accel".into(),
        "tcg".into(),
        "-cpu".into(),
        CPU_MODEL.into(),
        "-M".into(),
        "pc".into(),
        "-m".into(),
        format!("{RAM_MIB}M"),
        "-smp".into(),
        "1".into(),
        "-display".into(),
        "none".into(),
        "-monitor".into(),
        "none".into(),
        "-serial".into(),
        "none".into(),
        "-parallel".into(),
        "none".into(),
        "-no-reboot".into(),
        "-device".into(),
        "isa-debug-exit,iobase=0xf4,iosize=0x04".into(),
        "-debugcon".into(),
        format!("file:{}", debugcon.display()),
        "-kernel".into(),
        kernel.display().to_string(),
    ]
}

/// A failed QEMU run: what happened and the debug-console output up to that point.
pub struct Failure {
    pub message: String,
    pub partial: Vec<u8>,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure {
            message,
            partial: Vec::new(),
        }
    }
}

/// Debug-console bytes of the image under QEMU, from the cache when possible.
/// Returns (output, whether it came from the cache).
pub fn run(image: &[u8]) -> Result<(Vec<u8>, bool), Failure> {
    let dir = cache_dir();
    std::fs::create_dir_all(&dir)
        .map_err(|e| Failure::from(format!("creating {}: {e}", dir.display())))?;
    let key = {
        let mut h = fnv(0xCBF2_9CE4_8422_2325, image);
        h = fnv(h, version().as_bytes());
        h = fnv(h, args(Path::new("K"), Path::new("D")).join(" ").as_bytes());
        format!("{h:016x}")
    };
    let cached = dir.join(format!("{key}.out"));
    if let Ok(bytes) = std::fs::read(&cached) {
        return Ok((bytes, true));
    }
    let kernel = dir.join(format!("{key}.img.tmp{}", std::process::id()));
    let debugcon = dir.join(format!("{key}.out.tmp{}", std::process::id()));
    std::fs::write(&kernel, image)
        .map_err(|e| Failure::from(format!("writing {}: {e}", kernel.display())))?;
    let _ = std::fs::remove_file(&debugcon);
    let mut child = Command::new(QEMU)
        .args(args(&kernel, &debugcon))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Failure::from(format!("starting {QEMU}: {e}")))?;
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| Failure::from(e.to_string()))? {
            break s;
        }
        if start.elapsed()
            > Duration::from_secs(
                std::env::var("AERO_DIFF_QEMU_TIMEOUT")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(300),
            )
        {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_file(&kernel);
            let partial = std::fs::read(&debugcon).unwrap_or_default();
            let _ = std::fs::remove_file(&debugcon);
            return Err(Failure {
                message: "QEMU did not finish within 300 s".into(),
                partial,
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = std::fs::remove_file(&kernel);
    // isa-debug-exit: exit status (value << 1) | 1 = 1 for the 0 the driver writes.
    if status.code() != Some(1) {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        let partial = std::fs::read(&debugcon).unwrap_or_default();
        let _ = std::fs::remove_file(&debugcon);
        return Err(Failure {
            message: format!("QEMU exited with {status}: {err}"),
            partial,
        });
    }
    let out = std::fs::read(&debugcon)
        .map_err(|e| Failure::from(format!("reading {}: {e}", debugcon.display())))?;
    std::fs::rename(&debugcon, &cached)
        .map_err(|e| Failure::from(format!("caching QEMU output: {e}")))?;
    prune(&dir);
    Ok((out, false))
}

/// Keeps the cache bounded: only the newest `KEEP` outputs stay.
fn prune(dir: &Path) {
    const KEEP: usize = 64;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut outs: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "out"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if outs.len() <= KEEP {
        return;
    }
    outs.sort();
    for (_, path) in outs.iter().take(outs.len() - KEEP) {
        let _ = std::fs::remove_file(path);
    }
}
