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

/// md5 (hex) of the first `len` bytes of `file`, as the guest's `dd | md5sum` prints it.
fn md5_head(file: &Path, len: usize) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("head -c {len} '{}' | md5sum", file.display()))
        .output()
        .expect("md5sum");
    String::from_utf8_lossy(&out.stdout)[..32].to_string()
}

/// Media change as Linux sees it: two CD drives empty at boot (AHCI port 1 and the IDE
/// secondary slave, next to the boot CD); a `--monitor` script inserts a disc into each once the guest waits,
/// the guest (sr_mod over `ahci` and `ata_piix`) reads them, the script ejects them and the
/// guest finds them gone. The AHCI drive also announces both changes by asynchronous
/// notification, which Linux turns into media-change uevents.
#[test]
fn linux_sees_cd_insert_and_eject_from_the_monitor() {
    let dir = work_dir("media");
    let disk = dir.join("data.img");
    std::fs::write(&disk, vec![0u8; 32 << 20]).unwrap();
    let ahci_disc = image("linux-amd64.iso");
    let ide_disc = dir.join("pattern.iso");
    let pattern: Vec<u8> = (0..1024 * 2048u32)
        .map(|i| (i / 2048 * 7 + i % 13) as u8)
        .collect();
    std::fs::write(&ide_disc, &pattern).unwrap();
    let script = dir.join("media.txt");
    std::fs::write(
        &script,
        format!(
            "wait-serial AERO-STORAGE-CD2-WAIT\n\
             change ahci1-cd0 \"{}\"\n\
             change ide1-cd1 \"{}\"\n\
             wait-serial AERO-STORAGE-CD2-READ\n\
             eject ahci1-cd0\n\
             eject ide1-cd1\n",
            ahci_disc.display(),
            ide_disc.display()
        ),
    )
    .unwrap();
    let report = boot(
        &dir,
        "1",
        &disk,
        Bus::Ahci,
        &[
            "--drive",
            "media=cdrom,if=ahci,index=1",
            "--drive",
            "media=cdrom,if=ide,index=3",
            "--monitor",
            script.to_str().unwrap(),
        ],
    );
    let drives: Vec<&str> = report
        .get("CD2-WAIT")
        .unwrap_or_else(|| panic!("the guest saw no empty CD drive:\n{}", report.0))
        .split_whitespace()
        .collect();
    assert_eq!(drives.len(), 2, "{drives:?}\n{}", report.0);
    for name in drives {
        let path = report.get(&format!("CD2-PATH-{name}")).unwrap_or_default();
        let disc = if path.contains("0000:00:05.0/ata") {
            &ahci_disc
        } else if path.contains("0000:00:01.1/ata") {
            &ide_disc
        } else {
            panic!(
                "{name} is behind neither controller: {path:?}\n{}",
                report.0
            )
        };
        let bytes = std::fs::metadata(disc).unwrap().len();
        assert_eq!(
            report.get(&format!("CD2-SUM-{name}")),
            Some(md5_head(disc, 16 * 2048).as_str()),
            "{name} ({path}) did not read the inserted disc:\n{}",
            report.0
        );
        assert_eq!(
            report.get(&format!("CD2-SIZE-{name}")),
            Some((bytes / 512).to_string().as_str()),
            "{name}: the kernel's size is not the new disc's"
        );
        assert_eq!(
            report.get(&format!("CD2-EJECTED-{name}")),
            Some("yes"),
            "{name}: the guest still reads a disc after the eject:\n{}",
            report.0
        );
        // SATA asynchronous notification: the AHCI drive announced the insert and the
        // eject itself (one SDEV_MEDIA_CHANGE uevent each); parallel ATA has no such thing.
        let an_events = if path.contains("0000:00:05.0/ata") {
            "2"
        } else {
            "0"
        };
        assert_eq!(
            report.get(&format!("CD2-AN-EVENTS-{name}")),
            Some(an_events),
            "{name} ({path}): media change notifications:\n{}",
            report.0
        );
    }
    // libata (atapi_an=1) enabled AN on the one AHCI CD drive ("ATAPI: ..., ATAPI AN").
    assert_eq!(
        report.0.matches(", ATAPI AN").count(),
        1,
        "AN on the AHCI CD drive only:\n{}",
        report.0
    );
}
