//! Helpers shared by the image-format tests: qemu-img/qemu-io as the reference
//! implementation, deterministic test patterns.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use aero_storage::{BlockDevice, OpenOptions, open_image};

/// Runs a qemu tool and returns (exit code, stdout + stderr). qemu-utils is a test dependency.
pub fn qemu(tool: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(tool).args(args).output().unwrap_or_else(|e| {
        panic!("{tool} is needed by these tests (apt-get install qemu-utils): {e}")
    });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

pub fn qemu_ok(tool: &str, args: &[&str]) -> String {
    let (code, text) = qemu(tool, args);
    assert_eq!(code, 0, "{tool} {args:?} failed: {text}");
    text
}

/// Deterministic pseudo-random bytes with some all-zero 4 KiB stretches (sparse images).
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = vec![0u8; len];
    for (i, chunk) in out.chunks_mut(4096).enumerate() {
        if (i as u64 + seed) % 5 == 3 {
            continue;
        }
        for b in chunk.iter_mut() {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            *b = (x >> 56) as u8;
        }
    }
    out
}

/// Data deflate shrinks a lot: each 4 KiB block repeats a short seed-dependent phrase.
pub fn compressible(len: usize, seed: u64) -> Vec<u8> {
    let mut out = vec![0u8; len];
    for (i, chunk) in out.chunks_mut(4096).enumerate() {
        let phrase = format!("block {i} of seed {seed}: aero qcow2 test ");
        for (j, b) in chunk.iter_mut().enumerate() {
            *b = phrase.as_bytes()[j % phrase.len()];
        }
    }
    out
}

pub fn read_all(dev: &mut dyn BlockDevice) -> Vec<u8> {
    let mut buf = vec![0u8; (dev.sector_count() * dev.sector_size() as u64) as usize];
    // Odd-sized requests exercise requests that straddle clusters.
    let step = 7 * dev.sector_size() as usize;
    for (i, chunk) in buf.chunks_mut(step).enumerate() {
        dev.read_sectors((i * 7) as u64, chunk).unwrap();
    }
    buf
}

pub fn open_ro(path: &Path) -> Box<dyn BlockDevice> {
    open_image(
        path,
        &OpenOptions {
            read_only: true,
            ..Default::default()
        },
    )
    .unwrap()
}

pub fn open_rw(path: &Path) -> Box<dyn BlockDevice> {
    open_image(path, &OpenOptions::default()).unwrap()
}

/// `qemu-img check` must find nothing at all (no errors, no leaks).
pub fn assert_check_clean(path: &Path) {
    let (code, text) = qemu("qemu-img", &["check", path.to_str().unwrap()]);
    assert_eq!(code, 0, "qemu-img check failed: {text}");
    assert!(text.contains("No errors were found"), "{text}");
}

/// The guest-visible contents according to QEMU.
pub fn qemu_flatten(path: &Path, dir: &Path) -> Vec<u8> {
    let out = dir.join("flat.raw");
    let _ = std::fs::remove_file(&out);
    qemu_ok(
        "qemu-img",
        &[
            "convert",
            "-O",
            "raw",
            path.to_str().unwrap(),
            out.to_str().unwrap(),
        ],
    );
    std::fs::read(&out).unwrap()
}

/// Applies a deterministic mix of writes (partial clusters, straddling clusters, big runs)
/// to the device and to a model of its contents.
pub fn scribble(dev: &mut dyn BlockDevice, model: &mut [u8], seed: u64) {
    let ss = dev.sector_size() as usize;
    let sectors = dev.sector_count() as usize;
    let mut x = seed;
    for round in 0..40 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let count = 1 + ((x >> 20) as usize % if round % 8 == 0 { 300 } else { 20 });
        let lba = (x >> 33) as usize % (sectors - count.min(sectors));
        let count = count.min(sectors - lba);
        let data = pattern(count * ss, x);
        dev.write_sectors(lba as u64, &data).unwrap();
        model[lba * ss..(lba + count) * ss].copy_from_slice(&data);
    }
}
