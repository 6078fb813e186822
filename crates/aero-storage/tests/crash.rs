//! Crash consistency: a child process writes a qcow2 (or dynamic VHD) image in "generations" (writes, then
//! flush, then a progress record) and is killed with SIGKILL at varying moments. Every
//! resulting image must pass `qemu-img check` with no errors (leaks are allowed: they are
//! clusters a crash left allocated but unreferenced), hold every flushed generation, and
//! stay writable by Aero.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use aero_storage::{Qcow2CreateOptions, create_qcow2};
use common::*;

const DISK: usize = 16 << 20;
const SLOT_SECTORS: usize = 8;
const WRITES_PER_GENERATION: usize = 48;
const CHILD_ENV: &str = "AERO_CRASH_CHILD_IMAGE";

/// The slots generation `g` writes: distinct within a generation.
fn slots(g: u64) -> impl Iterator<Item = usize> {
    let nslots = DISK / 512 / SLOT_SECTORS;
    let start = (g as usize * 7919) % nslots;
    (0..WRITES_PER_GENERATION).map(move |k| (start + k * 97) % nslots)
}

fn slot_data(g: u64, slot: usize) -> Vec<u8> {
    let mut d = vec![(g % 251) as u8; SLOT_SECTORS * 512];
    d[..8].copy_from_slice(&(slot as u64).to_le_bytes());
    d
}

fn apply(model: &mut [u8], g: u64) {
    for slot in slots(g) {
        let at = slot * SLOT_SECTORS * 512;
        model[at..at + SLOT_SECTORS * 512].copy_from_slice(&slot_data(g, slot));
    }
}

/// Runs inside the child process only.
#[test]
fn crash_child() {
    let Ok(image) = std::env::var(CHILD_ENV) else {
        return;
    };
    let progress = format!("{image}.progress");
    let first: u64 = std::env::var("AERO_CRASH_FIRST_GEN")
        .unwrap()
        .parse()
        .unwrap();
    let mut dev = open_rw(Path::new(&image));
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&progress)
        .unwrap();
    for g in first.. {
        for slot in slots(g) {
            dev.write_sectors((slot * SLOT_SECTORS) as u64, &slot_data(g, slot))
                .unwrap();
        }
        dev.flush().unwrap();
        writeln!(log, "{g}").unwrap();
    }
}

fn last_flushed(progress: &Path) -> u64 {
    let text = std::fs::read_to_string(progress).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.trim().parse().ok())
        .next_back()
        .unwrap_or(0)
}

fn run_child_and_kill(image: &Path, first_gen: u64, after: Duration) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--test-threads=1", "--nocapture"])
        .env(CHILD_ENV, image)
        .env("AERO_CRASH_FIRST_GEN", first_gen.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
}

fn assert_no_corruption(image: &Path) {
    if image.extension().is_some_and(|e| e == "vhd") {
        // qemu-img has no checker for VHD: QEMU must still open and read the whole image.
        let out = image.with_extension("flat");
        let _ = std::fs::remove_file(&out);
        qemu_ok(
            "qemu-img",
            &[
                "convert",
                "-O",
                "raw",
                image.to_str().unwrap(),
                out.to_str().unwrap(),
            ],
        );
        return;
    }
    let (code, text) = qemu("qemu-img", &["check", image.to_str().unwrap()]);
    assert!(
        code == 0 || code == 3,
        "qemu-img check found corruption (exit {code}): {text}"
    );
    assert!(!text.contains("ERROR"), "{text}");
}

#[test]
fn sigkill_during_writes_never_corrupts() {
    let dir = tempfile::tempdir().unwrap();
    // 512-byte clusters make refcount blocks and refcount-table growth happen during the
    // run; 64 KiB clusters are the common case.
    // cluster_bits 0 stands for a dynamic VHD.
    for (cluster_bits, delays) in [
        (9u32, [40u64, 90, 170, 260, 400]),
        (16, [30, 80, 150, 250, 350]),
        (0, [30, 80, 150, 250, 350]),
    ] {
        let ext = if cluster_bits == 0 { "vhd" } else { "qcow2" };
        let image = dir.path().join(format!("crash{cluster_bits}.{ext}"));
        let progress = dir
            .path()
            .join(format!("crash{cluster_bits}.{ext}.progress"));
        if cluster_bits == 0 {
            let size = DISK.to_string();
            qemu_ok(
                "qemu-img",
                &[
                    "create",
                    "-f",
                    "vpc",
                    "-o",
                    "subformat=dynamic,force_size=on",
                    image.to_str().unwrap(),
                    &size,
                ],
            );
        } else {
            create_qcow2(
                &image,
                &Qcow2CreateOptions {
                    size: DISK as u64,
                    cluster_bits,
                    backing: None,
                },
            )
            .unwrap();
        }
        let mut next_gen = 1u64;
        for (i, ms) in delays.into_iter().enumerate() {
            run_child_and_kill(&image, next_gen, Duration::from_millis(ms));
            assert_no_corruption(&image);
            let flushed = last_flushed(&progress);
            eprintln!(
                "cluster_bits {cluster_bits}: killed after {ms} ms, {flushed} generations flushed"
            );
            let mut before = vec![0u8; DISK];
            for g in 1..=flushed {
                apply(&mut before, g);
            }
            let mut after = before.clone();
            apply(&mut after, flushed + 1);
            let mut dev = open_ro(&image);
            let got = read_all(dev.as_mut());
            for (n, sector) in got.chunks(512).enumerate() {
                let range = n * 512..(n + 1) * 512;
                assert!(
                    sector == &before[range.clone()] || sector == &after[range],
                    "cluster_bits {cluster_bits}, kill {i}: sector {n} lost flushed data (last flushed generation {flushed})"
                );
            }
            // The in-flight generation may have partly landed: rewrite its slots with the
            // flushed contents, so the image is exactly generations 1..=flushed again and the
            // next child can redo generation flushed + 1.
            let mut dev = open_rw(&image);
            for slot in slots(flushed + 1) {
                let at = slot * SLOT_SECTORS * 512;
                dev.write_sectors(
                    (slot * SLOT_SECTORS) as u64,
                    &before[at..at + SLOT_SECTORS * 512],
                )
                .unwrap();
            }
            dev.flush().unwrap();
            drop(dev);
            next_gen = flushed + 1;
            // The restored image equals `before`, i.e. generations 1..=flushed.
            let mut dev = open_ro(&image);
            assert!(read_all(dev.as_mut()) == before);
        }
        // The kills must have landed while work was being done, not before the first flush.
        assert!(
            next_gen > 3,
            "cluster_bits {cluster_bits}: the child made no progress"
        );
    }
}
