//! Storage tests with a real guest: Linux (from `tests/images/build.sh`) boots from the
//! storage-test CD, finds the data disk through its own `ahci` or `ata_piix` driver, formats it and
//! writes files on the first boot, and verifies them on the next boot — after Aero exited
//! and started again, so the data went through the image format to the host file.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn storage_iso() -> PathBuf {
    image("linux-amd64-storage.iso")
}

fn work_dir(test: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("storage-{test}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The guest's report lines (`AERO-STORAGE-KEY=value`) from one boot.
struct Report(String);

impl Report {
    fn get(&self, key: &str) -> Option<&str> {
        let prefix = format!("AERO-STORAGE-{key}=");
        self.0
            .lines()
            .find_map(|l| l.trim_end().strip_prefix(prefix.as_str()))
    }
}

/// Which controller the data disk is on.
#[derive(Clone, Copy)]
enum Bus {
    /// `--hda`: AHCI port 0, the default layout; Linux's `ahci` driver.
    Ahci,
    /// `--drive if=ide`: the PIIX3 IDE primary master; Linux's `ata_piix`.
    Ide,
}

/// Boots the storage CD with `disk` as the first hard disk; returns the guest's report.
fn boot(dir: &Path, run: &str, disk: &Path, bus: Bus, extra: &[&str]) -> Report {
    let serial = dir.join(format!("serial-{run}.txt"));
    let iso = storage_iso();
    let mut args = vec![
        "headless",
        "--cdrom",
        iso.to_str().unwrap(),
        "--boot",
        "d",
        "--serial",
        serial.to_str().unwrap(),
        "--until-serial",
        "AERO-STORAGE-DONE",
        "--timeout",
        "200",
    ];
    let drive = format!("file={},if=ide", disk.display());
    match bus {
        Bus::Ahci => args.extend(["--hda", disk.to_str().unwrap()]),
        Bus::Ide => args.extend(["--drive", drive.as_str()]),
    }
    args.extend_from_slice(extra);
    let out = Command::new(env!("CARGO_BIN_EXE_aero"))
        .args(&args)
        .output()
        .expect("run aero");
    let text = String::from_utf8_lossy(&std::fs::read(&serial).unwrap_or_default()).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "aero {args:?}\nstderr: {}\nserial:\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = Report(text);
    // ata_piix always binds (the CD is on IDE); ahci binds its controller.
    assert_eq!(
        report.get("ATA-PIIX"),
        Some("1"),
        "ata_piix did not bind:\n{}",
        report.0
    );
    assert_eq!(
        report.get("AHCI"),
        Some("1"),
        "ahci did not bind:\n{}",
        report.0
    );
    assert!(
        report
            .get("BLOCK")
            .is_some_and(|b| b.contains("sda") && b.contains("sr0")),
        "disks seen: {:?}",
        report.get("BLOCK")
    );
    assert!(!report.0.contains("INSMOD-FAILED"), "{}", report.0);
    let function = match bus {
        Bus::Ahci => "0000:00:05.0/ata",
        Bus::Ide => "0000:00:01.1/ata",
    };
    assert!(
        report.get("SDA-PATH").is_some_and(|p| p.contains(function)),
        "sda is not behind {function}: {:?}",
        report.get("SDA-PATH")
    );
    report
}

/// First boot formats and writes, second boot (a new process) reads the same files back.
fn write_then_verify(dir: &Path, disk: &Path, bus: Bus, extra: &[&str]) -> String {
    let first = boot(dir, "1", disk, bus, extra);
    assert_eq!(first.get("MODE"), Some("write"), "{}", first.0);
    let sum = first
        .get("SUM")
        .expect("no checksum after writing")
        .to_string();
    assert_eq!(sum.len(), 32);
    let second = boot(dir, "2", disk, bus, extra);
    assert_eq!(
        second.get("MODE"),
        Some("verify"),
        "the file system did not survive a restart:\n{}",
        second.0
    );
    assert_eq!(
        second.get("SUM"),
        Some(sum.as_str()),
        "files read back differ from what was written"
    );
    // The CD (ATAPI through sr_mod) reads the same in both boots.
    assert!(first.get("CD-SUM").is_some());
    assert_eq!(first.get("CD-SUM"), second.get("CD-SUM"));
    sum
}

#[test]
fn raw_disk_on_ide_keeps_files_across_restarts() {
    let dir = work_dir("raw");
    let disk = dir.join("data.img");
    std::fs::write(&disk, vec![0u8; 32 << 20]).unwrap();
    write_then_verify(&dir, &disk, Bus::Ide, &[]);
    // Host side: the FAT boot sector the guest's mkdosfs wrote is in the file.
    let bytes = std::fs::read(&disk).unwrap();
    assert_eq!(&bytes[510..512], &[0x55, 0xAA]);
    assert_eq!(&bytes[3..10], b"mkdosfs");
}

#[test]
fn qcow2_disk_on_ahci_keeps_files_and_passes_qemu_img_check() {
    let dir = work_dir("qcow2");
    let disk = dir.join("data.qcow2");
    let made = Command::new("qemu-img")
        .args(["create", "-q", "-f", "qcow2", disk.to_str().unwrap(), "32M"])
        .status();
    assert!(
        made.is_ok_and(|s| s.success()),
        "qemu-img create failed (package qemu-utils)"
    );
    write_then_verify(&dir, &disk, Bus::Ahci, &[]);
    let check = Command::new("qemu-img")
        .args(["check", disk.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "qemu-img check: {}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    // And QEMU's own reader sees the guest's file system.
    let raw = dir.join("converted.img");
    let conv = Command::new("qemu-img")
        .args([
            "convert",
            "-O",
            "raw",
            disk.to_str().unwrap(),
            raw.to_str().unwrap(),
        ])
        .status();
    assert!(conv.is_ok_and(|s| s.success()));
    assert_eq!(&std::fs::read(&raw).unwrap()[510..512], &[0x55, 0xAA]);
}

#[test]
fn snapshot_never_writes_the_image() {
    let dir = work_dir("snapshot");
    let disk = dir.join("data.img");
    std::fs::write(&disk, vec![0u8; 32 << 20]).unwrap();
    let report = boot(&dir, "1", &disk, Bus::Ahci, &["--snapshot"]);
    assert_eq!(report.get("MODE"), Some("write"), "{}", report.0);
    assert!(
        report.get("SUM").is_some(),
        "the guest could write to its (in-memory) disk"
    );
    assert!(
        std::fs::read(&disk).unwrap().iter().all(|&b| b == 0),
        "--snapshot wrote to the image"
    );
}
