//! Shared by the guest tests: where `tests/images/build.sh` leaves the guest images.
#![allow(dead_code)]

pub mod qemu;

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

/// Where tests/images/build.sh keeps the Debian packages the images come from.
pub fn debs_dir() -> PathBuf {
    images_dir().with_file_name("debs")
}

/// The cached .deb whose file name starts with `prefix` and ends with `suffix`.
pub fn cached_deb(prefix: &str, suffix: &str) -> PathBuf {
    let debs = debs_dir();
    std::fs::read_dir(&debs)
        .unwrap_or_else(|e| panic!("{}: {e} (run tests/images/build.sh)", debs.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(prefix) && name.ends_with(suffix)
        })
        .unwrap_or_else(|| panic!("{prefix}*{suffix} in {}", debs.display()))
}

/// The data of a .deb as a tar stream piped into `tar` with `tar_args`; tar's output.
pub fn untar_deb(deb: &std::path::Path, tar_args: &[&str]) -> std::process::Output {
    let mut dpkg = std::process::Command::new("dpkg-deb")
        .arg("--fsys-tarfile")
        .arg(deb)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("dpkg-deb");
    let tar = std::process::Command::new("tar")
        .args(tar_args)
        .stdin(dpkg.stdout.take().unwrap())
        .output()
        .expect("tar");
    assert!(
        dpkg.wait().unwrap().success() && tar.status.success(),
        "{deb:?}: tar {tar_args:?}: {}",
        String::from_utf8_lossy(&tar.stderr)
    );
    tar
}

/// The release string of a bzImage ("6.1.0-56-amd64"): the setup header's kernel_version
/// field (offset 0x20E) points at it, relative to 0x200.
pub fn kernel_release(bzimage: &[u8]) -> String {
    let field = u16::from_le_bytes([bzimage[0x20E], bzimage[0x20F]]) as usize + 0x200;
    let text = &bzimage[field..(field + 64).min(bzimage.len())];
    let end = text
        .iter()
        .position(|&b| b == b' ' || b == 0)
        .unwrap_or(text.len());
    String::from_utf8_lossy(&text[..end]).into_owned()
}

/// A module (`kernel/drivers/...ko`) of the Debian kernel the amd64 boot images use: from
/// the package of exactly that kernel release (the debs cache also holds others, e.g. the
/// 6.12 kernel of the vga16fb test, whose modules are compressed).
pub fn kernel_module(path: &str) -> Vec<u8> {
    let vmlinuz = images_dir().join("vmlinuz-amd64");
    let release = kernel_release(
        &std::fs::read(&vmlinuz)
            .unwrap_or_else(|e| panic!("{}: {e} (run tests/images/build.sh)", vmlinuz.display())),
    );
    let deb = cached_deb(&format!("linux-image-{release}_"), "_amd64.deb");
    let module = untar_deb(&deb, &["-xO", "--wildcards", &format!("*/{path}")]).stdout;
    assert!(
        module.starts_with(b"\x7fELF"),
        "{path} not found in {deb:?}"
    );
    module
}

/// A fresh directory for one test's files under Cargo's test scratch space.
pub fn work_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A guest /init: mounts /proc, /sys and /dev, installs busybox's applets, sends its
/// output to the serial port, runs `body`, then powers off (and never exits, which
/// would panic the kernel).
pub fn guest_init(body: &str) -> String {
    const PROLOGUE: &str = "#!/bin/sh
/bin/busybox mkdir -p /proc /sys /dev /tmp
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox --install -s /bin
exec >/dev/ttyS0 2>&1
";
    const EPILOGUE: &str = "poweroff -f\nwhile :; do sleep 3600; done\n";
    format!("{PROLOGUE}{body}{EPILOGUE}")
}

/// A copy of `linux-amd64.img` booting the guest image `base_initrd` with `files`
/// (path, mode, contents) added: later archives of a concatenated initramfs override
/// earlier files, so an "init" entry replaces the image's /init.
pub fn linux_disk_with_files(
    dir: &std::path::Path,
    base_initrd: &str,
    files: &[(impl AsRef<str>, u32, impl AsRef<[u8]>)],
) -> PathBuf {
    let path = initrd_with_files(dir, base_initrd, files);
    linux_disk_with_initrd(dir, &path)
}

/// `dir/initrd.img`: the guest image `base_initrd` with `files` (path, mode, contents)
/// appended as a second archive (its entries override the first's).
pub fn initrd_with_files(
    dir: &std::path::Path,
    base_initrd: &str,
    files: &[(impl AsRef<str>, u32, impl AsRef<[u8]>)],
) -> PathBuf {
    let mut initrd = std::fs::read(image(base_initrd)).unwrap();
    initrd.resize(initrd.len().next_multiple_of(4), 0);
    for (ino, (name, mode, data)) in (1u32..).zip(files) {
        cpio_entry(&mut initrd, ino, name.as_ref(), *mode, data.as_ref());
    }
    cpio_entry(&mut initrd, files.len() as u32 + 1, "TRAILER!!!", 0, b"");
    let path = dir.join("initrd.img");
    std::fs::write(&path, &initrd).unwrap();
    path
}

/// The kernel command line the image builder gives syslinux (tests/images/build.sh).
pub const LINUX_CMDLINE: &str = "console=ttyS0,115200 console=tty0 loglevel=7 panic=-1";

/// The ELF vmlinux inside the amd64 bzImage (its xz payload unpacked with xz), made once
/// per target directory and again whenever the bzImage changes (a hash of it is kept next
/// to the vmlinux). Booted with `--kernel` it enters through PVH and skips the kernel's
/// self-decompression: about three quarters of a boot's guest instructions.
pub fn amd64_vmlinux() -> PathBuf {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("amd64-vmlinux");
    let bz = std::fs::read(image("vmlinuz-amd64")).unwrap();
    // FNV-1a: stable across Rust versions (unlike DefaultHasher), fast enough for 10 MB.
    let hash = bz.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let source = format!("{} bytes, fnv1a {hash:016x}\n", bz.len());
    let stamp = out.with_extension("source");
    if out.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(&source) {
        return out;
    }
    let boot = aero_machine::LinuxBoot::new(bz, None, "").expect("vmlinuz-amd64 is a bzImage");
    let payload = boot
        .compressed_payload()
        .expect("a boot protocol 2.08+ payload");
    assert!(payload.starts_with(b"\xfd7zXZ\0"), "the payload is not xz");
    // Unique names, then renames: test binaries may make it at the same time.
    let tag = format!("{}-{:?}", std::process::id(), std::thread::current().id());
    let packed = out.with_extension(format!("xz-{tag}"));
    std::fs::write(&packed, payload).unwrap();
    let unpacked = std::process::Command::new("xz")
        .args(["-dc", "--single-stream"])
        .arg(&packed)
        .output()
        .expect("xz (xz-utils)");
    let _ = std::fs::remove_file(&packed);
    assert!(
        unpacked.status.success() && unpacked.stdout.starts_with(b"\x7fELF"),
        "unxz: {}",
        String::from_utf8_lossy(&unpacked.stderr)
    );
    let tmp = out.with_extension(format!("tmp-{tag}"));
    std::fs::write(&tmp, unpacked.stdout).unwrap();
    std::fs::rename(&tmp, &out).unwrap();
    std::fs::write(&stamp, source).unwrap();
    out
}

/// `aero` arguments that boot the amd64 kernel directly (the vmlinux, through PVH) with
/// the guest image `base_initrd` plus `files` as its initramfs: for tests of devices,
/// which need Linux up quickly, not the BIOS disk path or syslinux.
pub fn linux_direct_with_files(
    dir: &std::path::Path,
    base_initrd: &str,
    files: &[(impl AsRef<str>, u32, impl AsRef<[u8]>)],
) -> Vec<String> {
    let initrd = initrd_with_files(dir, base_initrd, files);
    vec![
        "--kernel".into(),
        amd64_vmlinux().to_str().unwrap().into(),
        "--initrd".into(),
        initrd.to_str().unwrap().into(),
        "--append".into(),
        LINUX_CMDLINE.into(),
    ]
}

/// The entries that put kernel modules (name, `kernel/drivers/...ko` path) at
/// /lib/modules/NAME.ko, after the directories they need.
pub fn module_files(modules: &[(&str, &str)]) -> Vec<(String, u32, Vec<u8>)> {
    let mut files = vec![
        ("lib".to_string(), 0o40755, Vec::new()),
        ("lib/modules".to_string(), 0o40755, Vec::new()),
    ];
    for (name, path) in modules {
        files.push((
            format!("lib/modules/{name}.ko"),
            0o100644,
            kernel_module(path),
        ));
    }
    files
}

/// The value of the first `NAME=value` line the guest wrote to its serial port.
pub fn serial_value<'a>(serial: &'a str, name: &str) -> Option<&'a str> {
    serial.lines().find_map(|line| {
        line.trim_end()
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('='))
    })
}
