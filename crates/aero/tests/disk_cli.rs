//! `aero disk create/info`, checked against qemu-img.

use std::path::PathBuf;
use std::process::Command;

fn aero(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_aero"))
        .args(args)
        .output()
        .expect("run aero")
}

#[test]
fn create_blank_and_overlay_images_that_qemu_img_accepts() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("disk-cli");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let base = dir.join("base.qcow2");
    let overlay = dir.join("overlay.qcow2");
    let out = aero(&["disk", "create", "--size", "2G", base.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = aero(&[
        "disk",
        "create",
        "--backing",
        base.to_str().unwrap(),
        overlay.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info = aero(&["disk", "info", overlay.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&info.stdout).contains("2147483648 bytes"),
        "{:?}",
        info
    );
    for img in [&base, &overlay] {
        let check = Command::new("qemu-img")
            .args(["check", img.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "qemu-img check {}: {}",
            img.display(),
            String::from_utf8_lossy(&check.stdout)
        );
    }
    let qi = Command::new("qemu-img")
        .args(["info", overlay.to_str().unwrap()])
        .output()
        .unwrap();
    let qi = String::from_utf8_lossy(&qi.stdout);
    assert!(qi.contains("backing file: base.qcow2"), "{qi}");
    assert!(qi.contains("virtual size: 2 GiB"), "{qi}");
    // Never overwrites, and bad sizes are one plain message with exit 2.
    let again = aero(&["disk", "create", "--size", "1G", base.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2));
    let bad = aero(&[
        "disk",
        "create",
        "--size",
        "12Q",
        dir.join("x.qcow2").to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr).lines().count(),
        1,
        "{:?}",
        bad
    );
}
