//! Runs the probe image in QEMU TCG and caches the debug-console output in
//! `~/.cache/aero/cpu-model/<hash>.out` (hash of image, QEMU version and command line).

use std::time::Duration;

use super::probe::{EXIT_PORT, RAM_MIB};
use super::qemu_debugcon::QemuRun;
pub use super::qemu_debugcon::{QEMU, available};

/// Debug-console bytes of `image` run under `-cpu cpu`, from the cache when possible.
/// QEMU warnings fail the run: they mean the model is not what was asked for.
pub fn run(image: &[u8], cpu: &str) -> Result<Vec<u8>, String> {
    QemuRun {
        cache_name: "cpu-model",
        cpu,
        ram_mib: RAM_MIB,
        exit_port: EXIT_PORT,
        timeout: Duration::from_secs(120),
        reject_warnings: true,
    }
    .run(image)
    .map(|(out, _cached)| out)
    .map_err(|f| format!("{} (after {} bytes of output)", f.message, f.partial.len()))
}
