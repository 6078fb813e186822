//! The shipped x64 UMD, as `build.sh` makes it, runs under Wine (Debian `wine64`): a
//! Windows program (`tests_host/umd_wine_scene.cpp`, built with mingw-w64) loads
//! `aerogpu_d3d9_x64.dll`, opens an adapter through the exported `OpenAdapter`, creates a
//! device, draws and presents two frames, and takes shared alloc_ids from the DLL's
//! cross-process counter, with a second process in between. Its submissions go through
//! the KMD's portable ring code into a trace that the Rust device model replays.
//! The 32-bit DLL does not run here: Debian's `wine32` (i386) is not installable next to
//! the amd64 toolchain on this machine; the same scene runs it on Aero's own CPU instead
//! (`umd_x86_on_aero_cpu.rs`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian puts the loader outside PATH.
fn wine64() -> PathBuf {
    ["/usr/lib/wine/wine64", "/usr/bin/wine64"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("wine64 not found (Debian package wine64; tests/install-deps.sh installs it)")
}

/// A Unix path as Wine's Z: drive sees it.
fn windows_path(p: &Path) -> String {
    format!("Z:{}", p.display()).replace('/', "\\")
}

#[test]
fn shipped_x64_umd_draws_under_wine_and_its_submissions_replay_on_the_device() {
    let drivers = common::build_drivers("wine");
    let dll = drivers.join("amd64/aerogpu/aerogpu_d3d9_x64.dll");
    let exe = common::build_umd_scene("x86_64-w64-mingw32");
    let trace = exe.with_file_name("umd_wine_scene.trace");
    let _ = std::fs::remove_file(&trace);
    // A prefix of our own (made on first use, a few seconds); no Wine debug chatter.
    let prefix = Path::new(env!("CARGO_TARGET_TMPDIR")).join("wine-prefix");
    let out = Command::new(wine64())
        .arg(&exe)
        .arg(windows_path(&trace))
        .arg(windows_path(&dll))
        .env("WINEPREFIX", &prefix)
        .env("WINEDEBUG", "-all")
        .env("WINEDLLOVERRIDES", "mscoree,mshtml=")
        .output()
        .expect("run wine64");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the scene failed under Wine ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    common::check_shared_alloc_ids(&stdout);
    let (submissions, _) = common::scene_submissions(&stdout);
    let replay = common::replay_clean(&trace, submissions);
    let device = replay.device.executor();
    assert_eq!(device.draws, 2, "one draw per frame");
    assert_eq!(device.presents, 2);
    assert_eq!(replay.stats.submissions, submissions);
}
