//! Runs a bare-metal test image (`-kernel`, multiboot) in QEMU TCG once and caches its
//! debug-console output, keyed by a hash of the image, the QEMU version and the command
//! line. Shared by the `qemu_diff` and `cpu_model` tests, which differ only in the
//! settings of [`QemuRun`].

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

/// How one test binary runs its images.
pub struct QemuRun<'a> {
    /// Subdirectory of `~/.cache/aero` holding this test's outputs.
    pub cache_name: &'a str,
    /// `-cpu` model.
    pub cpu: &'a str,
    pub ram_mib: usize,
    /// The port the image writes its exit status to (QEMU's isa-debug-exit device).
    pub exit_port: u16,
    pub timeout: Duration,
    /// Fail when QEMU prints anything on stderr (e.g. "TCG doesn't support requested
    /// feature": the model is then not what was asked for).
    pub reject_warnings: bool,
}

impl QemuRun<'_> {
    fn cache_dir(&self) -> PathBuf {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        base.join("aero").join(self.cache_name)
    }

    fn args(&self, kernel: &Path, debugcon: &Path) -> Vec<String> {
        [
            "-accel",
            "tcg",
            "-cpu",
            self.cpu,
            "-M",
            "pc",
            "-m",
            &format!("{}M", self.ram_mib),
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
            &format!("isa-debug-exit,iobase={:#x},iosize=0x04", self.exit_port),
            "-debugcon",
            &format!("file:{}", debugcon.display()),
            "-kernel",
            &kernel.display().to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    /// Debug-console bytes of `image`, from the cache when possible.
    /// Returns (output, whether it came from the cache).
    pub fn run(&self, image: &[u8]) -> Result<(Vec<u8>, bool), Failure> {
        let dir = self.cache_dir();
        std::fs::create_dir_all(&dir)
            .map_err(|e| Failure::from(format!("creating {}: {e}", dir.display())))?;
        let key = {
            let mut h = fnv(0xCBF2_9CE4_8422_2325, image);
            h = fnv(h, version().as_bytes());
            h = fnv(
                h,
                self.args(Path::new("K"), Path::new("D"))
                    .join(" ")
                    .as_bytes(),
            );
            format!("{h:016x}")
        };
        let cached = dir.join(format!("{key}.out"));
        if let Ok(bytes) = std::fs::read(&cached) {
            return Ok((bytes, true));
        }
        let tmp = |ext: &str| dir.join(format!("{key}.{ext}.tmp{}", std::process::id()));
        let (kernel, debugcon) = (tmp("img"), tmp("out"));
        std::fs::write(&kernel, image)
            .map_err(|e| Failure::from(format!("writing {}: {e}", kernel.display())))?;
        let _ = std::fs::remove_file(&debugcon);
        let mut child = Command::new(QEMU)
            .args(self.args(&kernel, &debugcon))
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
            if start.elapsed() > self.timeout {
                let _ = child.kill();
                let _ = child.wait();
                let _ = std::fs::remove_file(&kernel);
                let partial = std::fs::read(&debugcon).unwrap_or_default();
                let _ = std::fs::remove_file(&debugcon);
                return Err(Failure {
                    message: format!("QEMU did not finish within {} s", self.timeout.as_secs()),
                    partial,
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let _ = std::fs::remove_file(&kernel);
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        let partial = || std::fs::read(&debugcon).unwrap_or_default();
        // isa-debug-exit: exit status (value << 1) | 1 = 1 for the 0 the image writes.
        if status.code() != Some(1) {
            let partial = partial();
            let _ = std::fs::remove_file(&debugcon);
            return Err(Failure {
                message: format!("QEMU exited with {status}: {err}"),
                partial,
            });
        }
        if self.reject_warnings && !err.trim().is_empty() {
            let partial = partial();
            let _ = std::fs::remove_file(&debugcon);
            return Err(Failure {
                message: format!("QEMU warned: {err}"),
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
