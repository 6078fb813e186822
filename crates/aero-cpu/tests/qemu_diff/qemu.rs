//! Runs a test image in QEMU TCG once and caches the debug-console output in
//! `~/.cache/aero/qemu-diff` (see `shared/qemu_debugcon.rs`).

use std::time::Duration;

use super::layout::{EXIT_PORT, RAM_MIB};
use super::qemu_debugcon::QemuRun;
pub use super::qemu_debugcon::{Failure, QEMU, available};

/// A plain model with what the cases use (SSE2, CX16, LM, LAHF in long mode), plus SSSE3
/// (which Aero advertises in CPUID.1:ECX[9]; QEMU raises #UD for it unless enabled).
pub const CPU_MODEL: &str = "qemu64,+ssse3";

/// Debug-console bytes of the image under QEMU, from the cache when possible.
/// Returns (output, whether it came from the cache). `AERO_DIFF_QEMU_TIMEOUT` (seconds,
/// default 300) bounds the run.
pub fn run(image: &[u8]) -> Result<(Vec<u8>, bool), Failure> {
    let timeout = std::env::var("AERO_DIFF_QEMU_TIMEOUT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    QemuRun {
        cache_name: "qemu-diff",
        cpu: CPU_MODEL,
        ram_mib: RAM_MIB,
        exit_port: EXIT_PORT,
        timeout: Duration::from_secs(timeout),
        reject_warnings: false,
    }
    .run(image)
}
