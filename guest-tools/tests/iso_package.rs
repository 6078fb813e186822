//! The guest tools ISO: built twice byte-identically, listed by xorriso with Joliet names,
//! and every file's SHA-256 matches manifest.json.

use std::path::{Path, PathBuf};
use std::process::Command;

use aero_guest_tools::package::{self, PackageOptions};

fn build(tag: &str) -> (PathBuf, Vec<package::ManifestEntry>) {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("guest-tools-iso");
    let mut opts = PackageOptions::new(
        base.join(format!("{tag}.iso")),
        base.join(format!("work-{tag}")),
    );
    opts.sign_key_dir = Some(base.join("key"));
    opts.epoch = 1_700_000_000;
    let mut lines = Vec::new();
    let manifest = package::build_iso(&opts, &mut |l| lines.push(l.to_string())).unwrap();
    assert!(
        lines.iter().any(|l| l.contains("aerogpu.sys")),
        "no progress: {lines:?}"
    );
    (opts.iso_path, manifest)
}

#[test]
fn iso_is_reproducible_and_matches_its_manifest() {
    let (a, manifest) = build("a");
    let (b, _) = build("b");
    assert!(
        std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
        "two builds differ"
    );

    let ex = Path::new(env!("CARGO_TARGET_TMPDIR")).join("guest-tools-iso/extract");
    let _ = std::fs::remove_dir_all(&ex);
    let out = Command::new("xorriso")
        .args(["-read_fs", "norock", "-indev"])
        .arg(&a)
        .args(["-osirrox", "on", "-extract", "/"])
        .arg(&ex)
        .output()
        .expect("xorriso (apt-get install xorriso)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for p in [
        "setup.cmd",
        "uninstall.cmd",
        "README.txt",
        "manifest.json",
        "certs/aero-test.cer",
        "drivers/x86/aerogpu/aerogpu.sys",
        "drivers/x86/aerogpu/aerogpu_d3d9.dll",
        "drivers/amd64/aerogpu/aerogpu_d3d9_x64.dll",
        "drivers/amd64/aerogpu/aerogpu.inf",
    ] {
        assert!(ex.join(p).is_file(), "{p} missing from the ISO");
    }
    let json = std::fs::read_to_string(ex.join("manifest.json")).unwrap();
    assert_eq!(json, package::manifest_json(&manifest));
    assert_eq!(manifest.len(), 13);
    for e in &manifest {
        let data = std::fs::read(ex.join(&e.path)).unwrap();
        assert_eq!(data.len() as u64, e.size, "{}", e.path);
        use sha2::Digest;
        let hex: String = sha2::Sha256::digest(&data)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(hex, e.sha256, "{}", e.path);
        assert!(json.contains(&e.sha256));
    }
}
