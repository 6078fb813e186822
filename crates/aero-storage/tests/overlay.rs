//! Persistent overlays (`aero disk create --backing BASE OVERLAY`).

mod common;

use aero_storage::{OpenOptions, create_qcow2_overlay, open_image};
use common::*;

const MIB: usize = 1 << 20;

#[test]
fn overlay_over_raw_qcow2_and_vhd_bases() {
    let dir = tempfile::tempdir().unwrap();
    let base_data = pattern(2 * MIB, 41);
    let raw = dir.path().join("base.raw");
    std::fs::write(&raw, &base_data).unwrap();
    let qcow = dir.path().join("base.qcow2");
    qemu_ok(
        "qemu-img",
        &[
            "convert",
            "-O",
            "qcow2",
            raw.to_str().unwrap(),
            qcow.to_str().unwrap(),
        ],
    );
    let vhd = dir.path().join("base.vhd");
    qemu_ok(
        "qemu-img",
        &[
            "convert",
            "-O",
            "vpc",
            "-o",
            "subformat=dynamic,force_size=on",
            raw.to_str().unwrap(),
            vhd.to_str().unwrap(),
        ],
    );

    for (base, format) in [(&raw, "raw"), (&qcow, "qcow2"), (&vhd, "vpc")] {
        let overlay = dir.path().join(format!("over-{format}.qcow2"));
        create_qcow2_overlay(base, &overlay).unwrap();
        let info = qemu_ok(
            "qemu-img",
            &["info", "--output=json", overlay.to_str().unwrap()],
        );
        assert!(
            info.contains(&format!("\"backing-filename-format\": \"{format}\"")),
            "{info}"
        );
        let base_name = base.file_name().unwrap().to_str().unwrap();
        assert!(
            info.contains(&format!("\"backing-filename\": \"{base_name}\"")),
            "same directory stores the bare name: {info}"
        );
        assert_check_clean(&overlay);

        let before = std::fs::read(base).unwrap();
        let mut model = base_data.clone();
        {
            let mut dev = open_rw(&overlay);
            assert_eq!(dev.sector_count() as usize * 512, base_data.len());
            assert!(
                read_all(dev.as_mut()) == model,
                "{format}: overlay does not show the base"
            );
            scribble(dev.as_mut(), &mut model, 43);
            dev.flush().unwrap();
        }
        assert!(
            std::fs::read(base).unwrap() == before,
            "{format}: base was modified"
        );
        assert_check_clean(&overlay);
        assert!(
            qemu_flatten(&overlay, dir.path()) == model,
            "{format}: QEMU sees different contents"
        );
        // Existing files are never overwritten.
        assert!(create_qcow2_overlay(base, &overlay).is_err());
    }
}

#[test]
fn overlay_in_another_directory_stores_an_absolute_path() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let base = dir.path().join("base.raw");
    std::fs::write(&base, pattern(MIB, 47)).unwrap();
    let overlay = sub.join("over.qcow2");
    create_qcow2_overlay(&base, &overlay).unwrap();
    let info = qemu_ok(
        "qemu-img",
        &["info", "--output=json", overlay.to_str().unwrap()],
    );
    let abs = base.canonicalize().unwrap();
    assert!(
        info.contains(&format!("\"backing-filename\": \"{}\"", abs.display())),
        "{info}"
    );
    let mut dev = open_image(
        &overlay,
        &OpenOptions {
            read_only: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(read_all(dev.as_mut()) == pattern(MIB, 47));
}
