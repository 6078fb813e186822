//! `aero guest-tools build` writes an ISO holding the drivers (checked with xorriso), and a
//! Linux guest reads it from our own CD-ROM drive: it mounts the disc (ISO 9660 + Joliet)
//! and checks every file against the SHA-256 sums in its manifest.json.

mod common;

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

    // The manifest as the host wrote it: one line per file.
    let manifest = dir.join("manifest.json");
    let extract = Command::new("xorriso")
        .args(["-osirrox", "on", "-indev", iso.to_str().unwrap()])
        .args(["-extract", "/manifest.json", manifest.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(extract.status.success(), "xorriso -extract manifest.json");
    let manifest = std::fs::read_to_string(&manifest).unwrap();
    let paths: Vec<&str> = manifest
        .lines()
        .filter_map(|l| l.split("\"path\": \"").nth(1)?.split('"').next())
        .collect();
    assert!(paths.len() >= 5, "manifest lists {paths:?}");

    // Linux boots from the storage CD (IDE) with the tools disc on AHCI port 1.
    let serial = dir.join("serial.txt");
    let run = Command::new(env!("CARGO_BIN_EXE_aero"))
        .args(["headless", "--snapshot", "--boot", "d", "--cdrom"])
        .arg(common::image("linux-amd64-storage.iso"))
        .arg("--drive")
        .arg(format!(
            "file={},media=cdrom,if=ahci,index=1",
            iso.display()
        ))
        .arg("--serial")
        .arg(&serial)
        .args(["--until-serial", "AERO-STORAGE-DONE", "--timeout", "300"])
        .output()
        .unwrap();
    let report = std::fs::read_to_string(&serial).unwrap_or_default();
    assert_eq!(
        run.status.code(),
        Some(0),
        "guest run: {}\n{report}",
        String::from_utf8_lossy(&run.stderr)
    );
    let entries = format!("AERO-STORAGE-TOOLS-ENTRIES={}", paths.len());
    assert!(report.contains(&entries), "{entries} missing:\n{report}");
    for path in &paths {
        let ok = format!("AERO-STORAGE-TOOLS-CHECK {path}: OK");
        assert!(report.contains(&ok), "{ok} missing:\n{report}");
    }
    assert!(!report.contains("FAILED"), "{report}");
}
