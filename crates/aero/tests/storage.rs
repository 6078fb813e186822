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

/// Runs `aero headless` with `drives` (and the boot order, BIOS, ...) until the storage
/// guest is done; returns its report.
fn run_storage_guest(dir: &Path, run: &str, drives: &[&str]) -> Report {
    let serial = dir.join(format!("serial-{run}.txt"));
    let mut args = vec![
        "headless",
        "--serial",
        serial.to_str().unwrap(),
        "--until-serial",
        "AERO-STORAGE-DONE",
        "--timeout",
        "200",
    ];
    args.extend_from_slice(drives);
    Report(run_aero(&args, &serial))
}

/// Boots the storage CD with `disk` as the first hard disk; returns the guest's report.
fn boot(dir: &Path, run: &str, disk: &Path, bus: Bus, extra: &[&str]) -> Report {
    let iso = storage_iso();
    let mut args = vec!["--cdrom", iso.to_str().unwrap(), "--boot", "d"];
    let drive = format!("file={},if=ide", disk.display());
    match bus {
        Bus::Ahci => args.extend(["--hda", disk.to_str().unwrap()]),
        Bus::Ide => args.extend(["--drive", drive.as_str()]),
    }
    args.extend_from_slice(extra);
    let report = run_storage_guest(dir, run, &args);
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
    // The kernel's EDD (INT 13h 48h) names the same place for BIOS drive 80h.
    let edd = match bus {
        Bus::Ahci => "version 0x30 | bus PCI 00:05.0 channel: 0 | if SATA device: 0",
        Bus::Ide => "version 0x30 | bus PCI 00:01.1 channel: 0 | if ATA device: 0",
    };
    assert_eq!(
        report.get("EDD-80").map(str::trim),
        Some(edd),
        "{}",
        report.0
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

/// QEMU's four-IDE-drive command line (disk, disk, `media=cdrom`, disk): the CD lands
/// on the secondary master in place of the default empty drive and boots; Linux's
/// `ata_piix` finds all four in their slots, and the kernel's EDD (edd.ko) got a valid
/// EDD 3.0 device path from our INT 13h 48h for each BIOS hard disk. The same boot also
/// reports the caching our BIOS set up: PAT on and the MTRRs SeaBIOS programs on the
/// same machine (a second boot with `--bios` SeaBIOS).
#[test]
fn four_ide_drives_edd_and_mtrrs() {
    let dir = work_dir("four-ide");
    let disks: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("disk{i}.img"))).collect();
    for (i, d) in disks.iter().enumerate() {
        std::fs::write(d, vec![0u8; (8 + i) << 20]).unwrap();
    }
    let iso = storage_iso();
    let drives = [
        format!("file={},if=ide", disks[0].display()),
        format!("file={},if=ide", disks[1].display()),
        format!("file={},if=ide,media=cdrom", iso.display()),
        format!("file={},if=ide", disks[2].display()),
    ];
    let mut args: Vec<&str> = drives
        .iter()
        .flat_map(|d| ["--drive", d.as_str()])
        .collect();
    args.extend(["--boot", "d"]);
    let ours = run_storage_guest(&dir, "aero-bios", &args);
    let block = ours.get("BLOCK").unwrap_or_default();
    assert_eq!(block.trim(), "sda sdb sdc sr0", "{}", ours.0);
    // Primary master/slave, secondary master (the CD), secondary slave: the two ATA
    // ports of 00:01.1 (ata_piix loads before ahci, so they are ata1 and ata2), SCSI
    // target 0 or 1 on each.
    for (dev, port, unit) in [("sda", 1, 0), ("sdb", 1, 1), ("sr0", 2, 0), ("sdc", 2, 1)] {
        let p = ours.get(&format!("PATH-{dev}")).unwrap_or_default();
        assert!(
            p.contains(&format!("0000:00:01.1/ata{port}/"))
                && p.contains(&format!(":0:{unit}:0/block/{dev}")),
            "{dev}: {p}\n{}",
            ours.0
        );
    }
    // The guest formatted the first disk and read the boot CD.
    assert_eq!(ours.get("MODE"), Some("write"), "{}", ours.0);
    assert!(ours.get("CD-SUM").is_some());
    // EDD: 80h-82h are the three disks, each behind the PIIX3 IDE function.
    for (drive, channel, device) in [("80", 0, 0), ("81", 0, 1), ("82", 1, 1)] {
        let edd = ours
            .get(&format!("EDD-{drive}"))
            .unwrap_or_else(|| panic!("no EDD for {drive}h:\n{}", ours.0));
        assert!(edd.starts_with("version 0x30 |"), "{drive}h: {edd}");
        assert!(
            edd.contains(&format!("bus PCI 00:01.1 channel: {channel}")),
            "{drive}h: {edd}"
        );
        assert!(
            edd.contains(&format!("if ATA device: {device}")),
            "{drive}h: {edd}"
        );
    }
    assert!(ours.get("EDD-83").is_none(), "{}", ours.0);
    // Caching: PAT on (Linux keeps it off when the firmware left the MTRRs disabled),
    // and the MTRRs as SeaBIOS programs them.
    let pat = ours.get("PAT").unwrap_or_default();
    assert!(
        pat.starts_with("x86/PAT: Configuration [0-7]:"),
        "PAT: {pat:?}"
    );
    let mtrr = ours.get("MTRR").unwrap_or_default();
    assert!(
        mtrr.contains("reg00: base=0x080000000 ( 2048MB), size= 2048MB, count=1: uncachable"),
        "{mtrr:?}"
    );
    args.extend(["--bios", "/usr/share/seabios/bios.bin"]);
    let seabios = run_storage_guest(&dir, "seabios", &args);
    assert_eq!(seabios.get("MTRR"), Some(mtrr), "{}", seabios.0);
    assert_eq!(seabios.get("PAT"), Some(pat));
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

/// Size of the crash-test disk; record `g` lives at byte `g` MiB (see `crash_record`).
const CRASH_DISK: usize = 256 << 20;
const CRASH_RECORD: usize = 256 << 10;

/// Record `g` as the storage CD's `crash_records` writes it: `yes "AERO-CRASH-GEN g" | head -c 256K`.
fn crash_record(g: u64) -> Vec<u8> {
    let line = format!("AERO-CRASH-GEN {g}\n");
    line.bytes().cycle().take(CRASH_RECORD).collect()
}

/// The guest's crash-test lines from one boot: the first record it wrote and the records it
/// reported durable (flushed before the line was printed).
fn crash_progress(serial: &Path) -> (Option<u64>, Vec<u64>, String) {
    let text = String::from_utf8_lossy(&std::fs::read(serial).unwrap_or_default()).into_owned();
    let num = |l: &str, p: &str| l.trim_end().strip_prefix(p).and_then(|n| n.parse().ok());
    let start = text.lines().find_map(|l| num(l, "AERO-CRASH-START "));
    let flushed = text
        .lines()
        .filter_map(|l| num(l, "AERO-CRASH-FLUSHED "))
        .collect();
    (start, flushed, text)
}

/// Checks a crash-test image after Aero died (or exited): `qemu-img check` finds no
/// corruption (leaked clusters are allowed: a crash may leave allocated but unreferenced
/// clusters, as with QEMU), and QEMU's reader sees every record up to the newest one
/// sector 1 names, which is at least every record the guest reported flushed, nothing
/// beyond the one record that may have been in flight, and no stray data anywhere.
/// Returns the newest record number.
fn check_crash_image(dir: &Path, disk: &Path, flushed: u64, what: &str) -> u64 {
    let check = Command::new("qemu-img")
        .args(["check", "-f", "qcow2", disk.to_str().unwrap()])
        .output()
        .unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    // 0: clean, 3: only leaked clusters.
    assert!(
        matches!(check.status.code(), Some(0 | 3)),
        "{what}: qemu-img check found corruption ({:?}):\n{report}",
        check.status.code()
    );
    let raw = dir.join("crash.raw");
    let conv = Command::new("qemu-img")
        .args(["convert", "-f", "qcow2", "-O", "raw"])
        .args([disk, &raw])
        .status();
    assert!(
        conv.is_ok_and(|s| s.success()),
        "{what}: qemu-img convert failed"
    );
    let bytes = std::fs::read(&raw).unwrap();
    std::fs::remove_file(&raw).unwrap();
    assert_eq!(bytes.len(), CRASH_DISK);
    assert!(
        bytes.starts_with(b"AERO-CRASH-TEST"),
        "{what}: sector 0 lost"
    );
    let sector1: Vec<u8> = bytes[512..1024]
        .iter()
        .copied()
        .filter(|&b| b != 0)
        .collect();
    let newest: u64 = String::from_utf8_lossy(&sector1)
        .trim_end()
        .strip_prefix("AERO-CRASH-LAST ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| {
            assert_eq!(flushed, 0, "{what}: sector 1 lost: {sector1:?}");
            0
        });
    assert!(
        newest >= flushed,
        "{what}: sector 1 names record {newest}, but record {flushed} was reported flushed"
    );
    for (mib, chunk) in bytes.chunks(1 << 20).enumerate() {
        let g = mib as u64;
        let (record, rest) = chunk.split_at(CRASH_RECORD);
        if g == 0 {
            // Sectors 0 and 1, checked above.
            assert!(
                record[1024..].iter().all(|&b| b == 0),
                "{what}: stray data near sector 1"
            );
        } else if g <= newest {
            assert!(
                record == crash_record(g).as_slice(),
                "{what}: record {g} is not intact (newest durable record: {newest}, reported flushed: {flushed})"
            );
        } else if g > newest + 1 {
            // Record newest + 1 may have been in flight; nothing beyond it was written.
            assert!(
                record.iter().all(|&b| b == 0),
                "{what}: stray data in record {g}"
            );
        }
        assert!(
            rest.iter().all(|&b| b == 0),
            "{what}: stray data after record {g}"
        );
    }
    newest
}

/// The crash test with the whole emulator: the guest (storage CD, `crash_records`)
/// writes records to a qcow2 disk on AHCI, each followed by a flush (FLUSH CACHE through
/// Linux's fsync) before it is reported on serial. Aero is killed with SIGKILL at
/// different moments, several times; after each kill the image passes `qemu-img check`
/// and holds every reported record, and the next boot continues writing the same image.
/// 4 KiB clusters make the records keep allocating clusters, L2 tables and refcount
/// blocks, so kills also land in metadata updates.
#[test]
fn sigkill_during_guest_writes_keeps_every_flushed_record() {
    let dir = work_dir("crash");
    let disk = dir.join("crash.qcow2");
    let seed = dir.join("seed.raw");
    // The guest looks for this mark in sector 0; the rest of the disk is blank.
    std::fs::write(&seed, b"AERO-CRASH-TEST").unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&seed)
        .and_then(|f| f.set_len(CRASH_DISK as u64))
        .unwrap();
    let made = Command::new("qemu-img")
        .args([
            "convert",
            "-q",
            "-f",
            "raw",
            "-O",
            "qcow2",
            "-o",
            "cluster_size=4096",
        ])
        .args([&seed, &disk])
        .status();
    assert!(
        made.is_ok_and(|s| s.success()),
        "qemu-img convert failed (package qemu-utils)"
    );
    std::fs::remove_file(&seed).unwrap();

    let iso = storage_iso();
    let aero = |serial: &Path, until: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_aero"));
        cmd.arg("headless")
            .args(["--cdrom", iso.to_str().unwrap(), "--boot", "d"])
            .args(["--hda", disk.to_str().unwrap()])
            .args(["--serial", serial.to_str().unwrap(), "--timeout", "300"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        if until {
            cmd.args(["--until-serial", "AERO-CRASH-DONE"]);
        }
        cmd
    };
    // (records this boot reports flushed before the countdown starts, countdown in ms).
    let kills = [(1, 0), (4, 230), (2, 470), (7, 90)];
    let mut newest = 0;
    let mut flushed_total = 0;
    for (round, (after, delay_ms)) in kills.into_iter().enumerate() {
        let what = format!("kill {round}");
        let serial = dir.join(format!("serial-kill{round}.txt"));
        let mut child = aero(&serial, false).spawn().expect("run aero");
        let began = std::time::Instant::now();
        loop {
            let (_, flushed, text) = crash_progress(&serial);
            if flushed.len() >= after {
                break;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("{what}: aero exited ({status}) before the guest wrote records:\n{text}");
            }
            if began.elapsed() > std::time::Duration::from_secs(600) {
                child.kill().unwrap();
                panic!("{what}: no records after 10 minutes:\n{text}");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let (start, flushed, text) = crash_progress(&serial);
        assert!(
            text.contains("AERO-CRASH-CACHE=write back"),
            "{what}: the guest does not see a write-back cache, so it never flushes:\n{text}"
        );
        assert_eq!(
            start,
            Some(newest + 1),
            "{what}: the guest did not continue after the newest record:\n{text}"
        );
        assert!(!text.contains("WRITE-FAILED"), "{what}:\n{text}");
        let reported = flushed.last().copied().unwrap_or(newest);
        assert_eq!(
            flushed,
            (newest + 1..=reported).collect::<Vec<_>>(),
            "{what}: records out of order"
        );
        flushed_total += flushed.len();
        newest = check_crash_image(&dir, &disk, reported, &what);
        eprintln!(
            "{what}: {} records reported flushed, newest durable {newest}",
            flushed.len()
        );
    }
    // A last boot runs to the end: 30 more records, then a clean power-off.
    let serial = dir.join("serial-final.txt");
    let out = aero(&serial, true).output().expect("run aero");
    let (start, flushed, text) = crash_progress(&serial);
    assert_eq!(
        out.status.code(),
        Some(0),
        "final boot: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(start, Some(newest + 1), "final boot:\n{text}");
    assert_eq!(
        flushed,
        (newest + 1..=newest + 30).collect::<Vec<_>>(),
        "final boot:\n{text}"
    );
    let last = check_crash_image(&dir, &disk, newest + 30, "final boot");
    assert_eq!(last, newest + 30);
    assert!(flushed_total >= kills.iter().map(|k| k.0).sum::<usize>());
}
