//! The CPU a Linux guest sees: /proc/cpuinfo and `cpuid -r` (Debian's cpuid, the host's
//! binary and its libc added to the initramfs) from the amd64 boot image on Aero, next to
//! the same image in QEMU TCG with the CPU model aero-cpu's `cpu_model` test compares
//! CPUID and MSRs with (`core2duo` minus what Aero does not implement). Every cpuinfo field
//! must match except the clock-derived ones, every CPUID leaf except those where Aero
//! answers as a real Intel CPU and QEMU does not. Skips (with a message) only without QEMU.

mod common;
use common::cpio_entry;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const QEMU: &str = "qemu-system-x86_64";
/// Keep in step with `crates/aero-cpu/tests/cpu_model/expect.rs`.
const QEMU_MODEL: &str = "core2duo,-de,-acpi,-monitor,l3-cache=off";
/// Fields that depend on the host clock or the TSC calibration, not on the CPU model.
const CLOCK_FIELDS: &[&str] = &["cpu MHz", "bogomips"];
/// Leaves where Aero answers as a real T7700 and QEMU does not; the values are checked
/// leaf by leaf in `crates/aero-cpu/tests/cpu_model/expect.rs` (`CPUID_OWN`), with reasons.
const CPUID_OWN_LEAVES: &[u32] = &[
    2,
    0x4000_0000,
    0x8000_0000,
    0x8000_0001,
    0x8000_0005,
    0x8000_0006,
];
/// Debian's cpuid and what it loads (from the host, which `tests/install-deps.sh` gives
/// the package): initramfs path, host path.
const CPUID_FILES: &[(&str, &str)] = &[
    ("usr/bin/cpuid", "/usr/bin/cpuid"),
    ("lib64/ld-linux-x86-64.so.2", "/lib64/ld-linux-x86-64.so.2"),
    (
        "lib/x86_64-linux-gnu/libc.so.6",
        "/lib/x86_64-linux-gnu/libc.so.6",
    ),
];

/// /init: /proc/cpuinfo to the serial port between markers, then power off.
const INIT: &str = r#"#!/bin/sh
/bin/busybox mkdir -p /proc /dev
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox dmesg -n 1
exec >/dev/ttyS0 2>&1
echo AERO-CPUID-BEGIN
/usr/bin/cpuid -r -1
echo AERO-CPUID-END
echo AERO-CPUINFO-BEGIN
/bin/busybox cat /proc/cpuinfo
echo AERO-CPUINFO-END
/bin/busybox poweroff -f
while :; do /bin/busybox sleep 3600; done
"#;

/// A copy of the amd64 boot disk whose initramfs runs `INIT` (a later archive of a
/// concatenated initramfs overrides /init).
fn disk_with_init(dir: &Path) -> PathBuf {
    let mut initrd = std::fs::read(common::images_dir().join("initrd-amd64.img"))
        .expect("initrd-amd64.img (run tests/images/build.sh)");
    initrd.resize(initrd.len().next_multiple_of(4), 0);
    cpio_entry(&mut initrd, 1, "init", 0o100755, INIT.as_bytes());
    let dirs = ["usr", "usr/bin", "lib", "lib/x86_64-linux-gnu", "lib64"];
    for (k, d) in dirs.iter().enumerate() {
        cpio_entry(&mut initrd, 2 + k as u32, d, 0o40755, b"");
    }
    for (k, (to, from)) in CPUID_FILES.iter().enumerate() {
        let data =
            std::fs::read(std::fs::canonicalize(from).unwrap_or_else(|e| {
                panic!("{from}: {e} (Debian's cpuid: run tests/install-deps.sh)")
            }))
            .unwrap();
        cpio_entry(&mut initrd, 10 + k as u32, to, 0o100755, &data);
    }
    cpio_entry(&mut initrd, 20, "TRAILER!!!", 0, b"");
    let initrd_path = dir.join("initrd.img");
    std::fs::write(&initrd_path, &initrd).unwrap();
    common::linux_disk_with_initrd(dir, &initrd_path)
}

/// The text between `AERO-<what>-BEGIN` and `AERO-<what>-END`.
fn section<'a>(serial: &'a str, what: &str) -> &'a str {
    serial
        .split_once(&format!("AERO-{what}-BEGIN"))
        .and_then(|(_, rest)| rest.split_once(&format!("AERO-{what}-END")))
        .map(|(body, _)| body)
        .unwrap_or_else(|| panic!("no {what} in the serial output:\n{serial}"))
}

/// `cpuid -r` lines (`   0x00000001 0x00: eax=... edx=...`) by (leaf, subleaf).
fn cpuid_dump(serial: &str) -> Vec<(u32, u32, String)> {
    section(serial, "CPUID")
        .lines()
        .filter_map(|l| {
            let (key, regs) = l.trim().split_once(": ")?;
            let (leaf, sub) = key.split_once(' ')?;
            let hex = |s: &str| u32::from_str_radix(s.trim_start_matches("0x"), 16).ok();
            Some((hex(leaf)?, hex(sub)?, regs.trim().to_string()))
        })
        .collect()
}

/// The (field, value) lines of /proc/cpuinfo.
fn cpuinfo(serial: &str) -> Vec<(String, String)> {
    section(serial, "CPUINFO")
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

fn run_qemu(disk: &Path, serial: &Path) {
    let _ = std::fs::remove_file(serial);
    let mut child = Command::new(QEMU)
        .args(["-accel", "tcg", "-cpu", QEMU_MODEL, "-M", "pc", "-m", "512"])
        .args([
            "-smp",
            "1",
            "-display",
            "none",
            "-monitor",
            "none",
            "-no-reboot",
        ])
        .arg("-drive")
        .arg(format!(
            "file={},format=raw,if=ide,snapshot=on",
            disk.display()
        ))
        .arg("-serial")
        .arg(format!("file:{}", serial.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start QEMU");
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        let out = std::fs::read_to_string(serial).unwrap_or_default();
        if out.contains("AERO-CPUINFO-END") || start.elapsed() > Duration::from_secs(240) {
            let _ = child.kill();
            let _ = child.wait();
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn linux_sees_the_same_cpu_on_aero_and_qemu() {
    assert!(
        Command::new(QEMU)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "{QEMU} is not installed: run `bash tests/install-deps.sh test`"
    );
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cpu-identity");
    std::fs::create_dir_all(&dir).unwrap();
    let disk = disk_with_init(&dir);

    let aero_serial = dir.join("serial-aero.txt");
    let _ = std::fs::remove_file(&aero_serial);
    let out = Command::new(env!("CARGO_BIN_EXE_aero"))
        .args(["headless", "--snapshot", "--serial"])
        .arg(&aero_serial)
        .args(["--until-serial", "AERO-CPUINFO-END", "--timeout", "240"])
        .arg(&disk)
        .output()
        .expect("run aero");
    let aero_out = std::fs::read_to_string(&aero_serial).unwrap_or_default();
    assert!(
        aero_out.contains("AERO-CPUINFO-END"),
        "aero: {}\n{aero_out}",
        String::from_utf8_lossy(&out.stderr)
    );
    let qemu_serial = dir.join("serial-qemu.txt");
    run_qemu(&disk, &qemu_serial);
    let qemu_out = std::fs::read_to_string(&qemu_serial).unwrap_or_default();

    let (aero_cpuid, qemu_cpuid) = (cpuid_dump(&aero_out), cpuid_dump(&qemu_out));
    let dump = |v: &[(u32, u32, String)]| {
        v.iter()
            .map(|(l, s, r)| format!("0x{l:08x} 0x{s:02x}: {r}\n"))
            .collect::<String>()
    };
    std::fs::write(dir.join("cpuid-aero.txt"), dump(&aero_cpuid)).unwrap();
    std::fs::write(dir.join("cpuid-qemu.txt"), dump(&qemu_cpuid)).unwrap();
    assert!(
        aero_cpuid.len() > 25,
        "cpuid -r printed too little:\n{aero_out}"
    );
    let keys = |v: &[(u32, u32, String)]| v.iter().map(|e| (e.0, e.1)).collect::<Vec<_>>();
    assert_eq!(
        keys(&aero_cpuid),
        keys(&qemu_cpuid),
        "the same leaves dumped"
    );
    let differing: Vec<String> = aero_cpuid
        .iter()
        .zip(&qemu_cpuid)
        .filter(|(a, q)| a.2 != q.2 && !CPUID_OWN_LEAVES.contains(&a.0))
        .map(|(a, q)| format!("0x{:08x}.{}: aero {} / qemu {}", a.0, a.1, a.2, q.2))
        .collect();
    assert!(
        differing.is_empty(),
        "cpuid -r differs:\n{}",
        differing.join("\n")
    );

    let (aero, qemu) = (cpuinfo(&aero_out), cpuinfo(&qemu_out));
    let show = |v: &[(String, String)]| {
        v.iter()
            .map(|(k, v)| format!("{k}\t: {v}\n"))
            .collect::<String>()
    };
    std::fs::write(dir.join("cpuinfo-aero.txt"), show(&aero)).unwrap();
    std::fs::write(dir.join("cpuinfo-qemu.txt"), show(&qemu)).unwrap();
    let compared = |v: &[(String, String)]| -> Vec<(String, String)> {
        v.iter()
            .filter(|(k, _)| !CLOCK_FIELDS.contains(&k.as_str()))
            .cloned()
            .collect()
    };
    assert_eq!(
        compared(&aero),
        compared(&qemu),
        "/proc/cpuinfo on Aero (left) and QEMU -cpu {QEMU_MODEL} (right)"
    );
    let field = |k: &str| {
        aero.iter()
            .find(|(f, _)| f == k)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no {k:?} in /proc/cpuinfo"))
    };
    assert_eq!(field("vendor_id"), "GenuineIntel");
    assert_eq!(
        field("model name"),
        "Intel(R) Core(TM)2 Duo CPU     T7700  @ 2.40GHz"
    );
    assert_eq!(
        (field("cpu family"), field("model"), field("stepping")),
        ("6", "15", "11")
    );
    assert_eq!(field("microcode"), "0x1");
    let flags: Vec<&str> = field("flags").split(' ').collect();
    for f in [
        "ssse3", "pni", "cx16", "nx", "lm", "lahf_lm", "mca", "mtrr", "pat",
    ] {
        assert!(flags.contains(&f), "flag {f} missing: {flags:?}");
    }
    for f in ["sse4_1", "monitor", "vme", "rdtscp"] {
        assert!(!flags.contains(&f), "flag {f} advertised: {flags:?}");
    }
}
