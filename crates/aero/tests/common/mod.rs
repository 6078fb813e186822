//! Shared by the guest tests: where `tests/images/build.sh` leaves the guest images.
#![allow(dead_code)]

use std::path::PathBuf;

/// `${XDG_CACHE_HOME:-$HOME/.cache}/aero/images`.
pub fn images_dir() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .expect("HOME or XDG_CACHE_HOME must be set");
    cache.join("aero/images")
}

/// A guest image; the test suite's setup builds them, so a missing one is a failure.
pub fn image(name: &str) -> PathBuf {
    let p = images_dir().join(name);
    assert!(
        p.exists(),
        "{} is missing: run `bash tests/images/build.sh` (tests/test.sh does)",
        p.display()
    );
    p
}

/// tests/golden/<name>.png.
pub fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../tests/golden/{name}.png"))
}

/// The demo guest's animated bar: logical rows 216..224 of 240, doubled in 640×480.
pub const DEMO_BAR_ROWS: std::ops::Range<u32> = 432..448;
/// The demo guest's cube box (x, y, size in 640×480 pixels): the cube turns in it on
/// AeroGPU's GPU executor (firmware/src/demo/mesh.rs); elsewhere (QEMU's VBE) it is
/// background.
pub const DEMO_MESH_BOX: (u32, u32, u32) = (456, 40, 176);

/// `img` with the demo's moving parts blacked out (the bar and the cube's box), so
/// pictures taken at different moments, or without AeroGPU, compare equal.
pub fn without_demo_bar(img: &aero::screenshot::Image) -> aero::screenshot::Image {
    let mut img = img.clone();
    let row = img.width as usize * 4;
    let rows =
        DEMO_BAR_ROWS.start.min(img.height) as usize..DEMO_BAR_ROWS.end.min(img.height) as usize;
    img.rgba[rows.start * row..rows.end * row].fill(0);
    let (x, y, size) = DEMO_MESH_BOX;
    for yy in y..(y + size).min(img.height) {
        let start = (yy * img.width + x.min(img.width)) as usize * 4;
        let end = (yy * img.width + (x + size).min(img.width)) as usize * 4;
        img.rgba[start..end].fill(0);
    }
    img
}

/// Pixels of `a` and `b` that differ, as (count, first and last differing row).
pub fn differing_rows(
    a: &aero::screenshot::Image,
    b: &aero::screenshot::Image,
) -> (usize, Option<(u32, u32)>) {
    assert_eq!((a.width, a.height), (b.width, b.height));
    let mut count = 0;
    let mut rows: Option<(u32, u32)> = None;
    for (i, (pa, pb)) in a.rgba.chunks(4).zip(b.rgba.chunks(4)).enumerate() {
        if pa != pb {
            count += 1;
            let y = i as u32 / a.width;
            rows = Some(rows.map_or((y, y), |(lo, hi)| (lo.min(y), hi.max(y))));
        }
    }
    (count, rows)
}

/// One file of a cpio "newc" archive (what the kernel unpacks as initramfs).
pub fn cpio_entry(out: &mut Vec<u8>, ino: u32, name: &str, mode: u32, data: &[u8]) {
    let fields = [
        ino,
        mode,
        0,
        0,
        1,
        0,
        data.len() as u32,
        0,
        0,
        0,
        0,
        name.len() as u32 + 1,
        0,
    ];
    out.extend_from_slice(b"070701");
    for f in fields {
        out.extend_from_slice(format!("{f:08X}").as_bytes());
    }
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    out.resize(out.len().next_multiple_of(4), 0);
    out.extend_from_slice(data);
    out.resize(out.len().next_multiple_of(4), 0);
}

/// A copy of `linux-amd64.img` at `dir/disk.img` whose FAT partition holds `initrd` as
/// /initrd.img (written with mtools' mcopy at the first partition's offset).
pub fn linux_disk_with_initrd(dir: &std::path::Path, initrd: &std::path::Path) -> PathBuf {
    let disk = dir.join("disk.img");
    std::fs::copy(image("linux-amd64.img"), &disk).unwrap();
    let mbr = std::fs::read(&disk).unwrap();
    let start = u32::from_le_bytes(mbr[454..458].try_into().unwrap());
    let status = std::process::Command::new("mcopy")
        .arg("-o")
        .arg("-i")
        .arg(format!("{}@@{}", disk.display(), u64::from(start) * 512))
        .arg(initrd)
        .arg("::/initrd.img")
        .status()
        .expect("mcopy (mtools)");
    assert!(status.success(), "mcopy failed");
    disk
}

/// Runs the `aero` binary with `args`, requires exit status 0 and returns what the guest
/// wrote to the `serial` file (named in `args`).
pub fn run_aero(args: &[&str], serial: &std::path::Path) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_aero"))
        .args(args)
        .output()
        .expect("run aero");
    let text = String::from_utf8_lossy(&std::fs::read(serial).unwrap_or_default()).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "aero {args:?}\nstderr: {}\nserial:\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}
