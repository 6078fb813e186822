//! `aero guest-tools build` writes an ISO holding the drivers (checked with xorriso).

use std::path::PathBuf;
use std::process::Command;

#[test]
fn guest_tools_build_writes_the_iso() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("guest-tools-cli");
    let _ = std::fs::remove_dir_all(&dir);
    let iso = dir.join("tools.iso");
    let out = Command::new(env!("CARGO_BIN_EXE_aero"))
        .args([
            "guest-tools",
            "build",
            "--out",
            iso.to_str().unwrap(),
            "--work-dir",
            dir.join("work").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listing = Command::new("xorriso")
        .args(["-indev", iso.to_str().unwrap(), "-find", "/", "-type", "f"])
        .output()
        .unwrap();
    let files = String::from_utf8_lossy(&listing.stdout).to_lowercase();
    for f in [
        "aerogpu.sys",
        "aerogpu_d3d9.dll",
        "aerogpu_d3d9_x64.dll",
        "aerogpu.inf",
        "manifest.json",
    ] {
        assert!(files.contains(f), "{f} missing from the ISO:\n{files}");
    }
}
