//! qcow2 against qemu-img as the reference: images QEMU wrote read correctly in Aero, images
//! Aero wrote pass `qemu-img check` and read back identically in QEMU.

mod common;

use std::path::Path;

use aero_storage::{
    ImageFormat, OpenOptions, Qcow2CreateOptions, StorageError, create_qcow2, open_image,
};
use common::*;

const MIB: usize = 1 << 20;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A raw file with `data`, converted by QEMU to qcow2 with extra `convert` options.
fn qemu_qcow2_from(dir: &Path, name: &str, data: &[u8], extra: &[&str]) -> std::path::PathBuf {
    let raw = dir.join(format!("{name}.raw"));
    std::fs::write(&raw, data).unwrap();
    let img = dir.join(name);
    let mut args = vec!["convert", "-O", "qcow2"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&[s(&raw), s(&img)]);
    qemu_ok("qemu-img", &args);
    img
}

#[test]
fn reads_qemu_images_v3_v2_and_small_clusters() {
    let dir = tempfile::tempdir().unwrap();
    let data = pattern(3 * MIB + 5 * 512, 1);
    for (name, opts) in [
        ("v3.qcow2", vec![]),
        ("v2.qcow2", vec!["-o", "compat=0.10"]),
        (
            "small.qcow2",
            vec!["-o", "cluster_size=512,refcount_bits=1"],
        ),
        ("big.qcow2", vec!["-o", "cluster_size=2M"]),
    ] {
        let img = qemu_qcow2_from(dir.path(), name, &data, &opts);
        let mut dev = open_ro(&img);
        assert_eq!(dev.sector_count() as usize * 512, data.len(), "{name}");
        assert!(read_all(dev.as_mut()) == data, "{name}: contents differ");
    }
}

#[test]
fn reads_compressed_clusters() {
    let dir = tempfile::tempdir().unwrap();
    let data = compressible(2 * MIB, 2);
    for (name, opts) in [
        ("c.qcow2", vec!["-c"]),
        ("c4k.qcow2", vec!["-c", "-o", "cluster_size=4096"]),
    ] {
        let img = qemu_qcow2_from(dir.path(), name, &data, &opts);
        let stored = std::fs::metadata(&img).unwrap().len();
        assert!(
            stored < data.len() as u64 / 4,
            "{name}: test image is not compressed ({stored} bytes)"
        );
        let mut dev = open_ro(&img);
        assert!(read_all(dev.as_mut()) == data, "{name}: contents differ");
    }
}

#[test]
fn reads_backing_chains_and_zero_clusters() {
    let dir = tempfile::tempdir().unwrap();
    let base_data = pattern(MIB, 3);
    let base = dir.path().join("base.raw");
    std::fs::write(&base, &base_data).unwrap();
    // Middle layer (qcow2 over raw) and top (qcow2 over qcow2), relative names.
    let mid = dir.path().join("mid.qcow2");
    let top = dir.path().join("top.qcow2");
    qemu_ok(
        "qemu-img",
        &[
            "create",
            "-f",
            "qcow2",
            "-b",
            "base.raw",
            "-F",
            "raw",
            s(&mid),
        ],
    );
    qemu_ok("qemu-io", &["-c", "write -P 0x11 65536 4096", s(&mid)]);
    qemu_ok(
        "qemu-img",
        &[
            "create",
            "-f",
            "qcow2",
            "-b",
            "mid.qcow2",
            "-F",
            "qcow2",
            s(&top),
            "2M",
        ],
    );
    qemu_ok(
        "qemu-io",
        &[
            "-c",
            "write -P 0x22 66048 512",
            "-c",
            "write -z 131072 65536",
            "-c",
            "write -P 0x33 1536000 512000",
            s(&top),
        ],
    );

    let mut expected = base_data.clone();
    expected.resize(2 * MIB, 0); // top is larger than its backing: the rest reads as zeros
    expected[65536..65536 + 4096].fill(0x11);
    expected[66048..66048 + 512].fill(0x22);
    expected[131072..131072 + 65536].fill(0);
    expected[1536000..1536000 + 512000].fill(0x33);
    let mut dev = open_ro(&top);
    assert_eq!(dev.sector_count(), 4096);
    let got = read_all(dev.as_mut());
    assert!(got == expected, "backing chain contents differ");
    assert!(got == qemu_flatten(&top, dir.path()));
}

#[test]
fn aero_created_image_passes_qemu_check_and_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("new.qcow2");
    create_qcow2(
        &img,
        &Qcow2CreateOptions {
            size: 8 * MIB as u64,
            cluster_bits: 16,
            backing: None,
        },
    )
    .unwrap();
    assert_check_clean(&img);
    let mut model = vec![0u8; 8 * MIB];
    {
        let mut dev = open_rw(&img);
        scribble(dev.as_mut(), &mut model, 42);
        dev.flush().unwrap();
        assert!(read_all(dev.as_mut()) == model);
    }
    assert_check_clean(&img);
    assert!(
        qemu_flatten(&img, dir.path()) == model,
        "QEMU sees different contents"
    );
    // Creating over an existing file is refused: it could be someone's disk.
    assert!(
        create_qcow2(
            &img,
            &Qcow2CreateOptions {
                size: MIB as u64,
                cluster_bits: 16,
                backing: None
            }
        )
        .is_err()
    );
}

#[test]
fn writes_into_qemu_images_keep_them_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let data = pattern(2 * MIB, 5);
    for (name, opts) in [
        ("v3.qcow2", vec![]),
        ("v2.qcow2", vec!["-o", "compat=0.10"]),
        ("rc1.qcow2", vec!["-o", "cluster_size=1024,refcount_bits=1"]),
        ("rc8.qcow2", vec!["-o", "cluster_size=4096,refcount_bits=8"]),
        ("compressed.qcow2", vec!["-c"]),
    ] {
        let data = if name.starts_with("compressed") {
            compressible(2 * MIB, 5)
        } else {
            data.clone()
        };
        let img = qemu_qcow2_from(dir.path(), name, &data, &opts);
        let mut model = data.clone();
        {
            let mut dev = open_rw(&img);
            scribble(dev.as_mut(), &mut model, 7);
            dev.flush().unwrap();
        }
        assert_check_clean(&img);
        assert!(
            qemu_flatten(&img, dir.path()) == model,
            "{name}: QEMU sees different contents"
        );
        let mut dev = open_ro(&img);
        assert!(
            read_all(dev.as_mut()) == model,
            "{name}: Aero reads different contents"
        );
    }
}

#[test]
fn refcount_table_grows_with_small_clusters() {
    // 512-byte clusters with 64-bit refcounts: one refcount-table cluster covers only 2 MiB,
    // so filling 6 MiB forces the table to move and grow.
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("grow.qcow2");
    qemu_ok(
        "qemu-img",
        &[
            "create",
            "-f",
            "qcow2",
            "-o",
            "cluster_size=512,refcount_bits=64",
            s(&img),
            "6M",
        ],
    );
    let model = pattern(6 * MIB, 9);
    let table_before = std::fs::read(&img).unwrap()[48..60].to_vec();
    {
        let mut dev = open_rw(&img);
        for (i, chunk) in model.chunks(128 * 1024).enumerate() {
            dev.write_sectors((i * 256) as u64, chunk).unwrap();
        }
        dev.flush().unwrap();
    }
    assert_ne!(
        std::fs::read(&img).unwrap()[48..60],
        table_before[..],
        "refcount table did not move"
    );
    let info = qemu_ok("qemu-img", &["info", "--output=json", s(&img)]);
    assert!(info.contains("\"refcount-bits\": 64"), "{info}");
    assert_check_clean(&img);
    assert!(qemu_flatten(&img, dir.path()) == model);
}

#[test]
fn writes_into_overlay_leave_backing_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let base_data = pattern(MIB, 11);
    let base = dir.path().join("base.raw");
    std::fs::write(&base, &base_data).unwrap();
    let top = dir.path().join("top.qcow2");
    qemu_ok(
        "qemu-img",
        &[
            "create",
            "-f",
            "qcow2",
            "-b",
            "base.raw",
            "-F",
            "raw",
            s(&top),
        ],
    );
    let mut model = base_data.clone();
    {
        let mut dev = open_rw(&top);
        scribble(dev.as_mut(), &mut model, 13);
        dev.flush().unwrap();
    }
    assert!(
        std::fs::read(&base).unwrap() == base_data,
        "backing file was modified"
    );
    assert_check_clean(&top);
    assert!(qemu_flatten(&top, dir.path()) == model);
}

#[test]
fn zero_cluster_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let img = qemu_qcow2_from(dir.path(), "z.qcow2", &pattern(MIB, 17), &[]);
    // Plain zero cluster, then a zero cluster that keeps its allocation.
    qemu_ok(
        "qemu-io",
        &[
            "-c",
            "write -z 0 131072",
            "-c",
            "write -z -u 262144 65536",
            s(&img),
        ],
    );
    let mut model = pattern(MIB, 17);
    model[..131072].fill(0);
    model[262144..262144 + 65536].fill(0);
    {
        let mut dev = open_rw(&img);
        assert!(read_all(dev.as_mut()) == model);
        dev.write_sectors(3, &[0xAA; 512]).unwrap();
        dev.write_sectors(262144 / 512 + 1, &[0xBB; 1024]).unwrap();
        model[3 * 512..4 * 512].fill(0xAA);
        model[262144 + 512..262144 + 1536].fill(0xBB);
    }
    assert_check_clean(&img);
    assert!(qemu_flatten(&img, dir.path()) == model);
}

#[test]
fn dirty_and_lazy_refcount_images_are_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("lazy.qcow2");
    qemu_ok(
        "qemu-img",
        &[
            "create",
            "-f",
            "qcow2",
            "-o",
            "lazy_refcounts=on",
            s(&img),
            "1M",
        ],
    );
    let err = open_image(&img, &OpenOptions::default())
        .err()
        .expect("writable open must fail");
    assert!(err.to_string().contains("lazy refcounts"), "{err}");
    assert!(
        open_image(
            &img,
            &OpenOptions {
                read_only: true,
                ..Default::default()
            }
        )
        .is_ok()
    );

    // Set the dirty bit by hand (what a crashed QEMU with lazy refcounts leaves behind).
    let img2 = dir.path().join("dirty.qcow2");
    qemu_ok("qemu-img", &["create", "-f", "qcow2", s(&img2), "1M"]);
    let mut bytes = std::fs::read(&img2).unwrap();
    bytes[79] |= 1;
    std::fs::write(&img2, &bytes).unwrap();
    let err = open_image(&img2, &OpenOptions::default())
        .err()
        .expect("writable open must fail");
    assert!(err.to_string().contains("dirty bit"), "{err}");
    let mut dev = open_image(
        &img2,
        &OpenOptions {
            snapshot: true,
            ..Default::default()
        },
    )
    .unwrap();
    dev.write_sectors(0, &[1; 512]).unwrap();
    drop(dev);
    assert!(
        std::fs::read(&img2).unwrap() == bytes,
        "snapshot mode wrote the image"
    );
}

#[test]
fn format_can_be_forced() {
    let dir = tempfile::tempdir().unwrap();
    let img = qemu_qcow2_from(dir.path(), "f.qcow2", &pattern(MIB, 19), &[]);
    let raw_view = open_image(
        &img,
        &OpenOptions {
            read_only: true,
            format: Some(ImageFormat::Raw),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        raw_view.sector_count() * 512,
        std::fs::metadata(&img).unwrap().len()
    );
    let q = open_image(
        &img,
        &OpenOptions {
            read_only: true,
            format: Some(ImageFormat::Qcow2),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(q.sector_count() * 512, MIB as u64);
}

// ---- hostile headers ----

fn valid_header_image(dir: &Path) -> Vec<u8> {
    let img = dir.join("valid.qcow2");
    qemu_ok(
        "qemu-img",
        &[
            "create",
            "-f",
            "qcow2",
            "-o",
            "cluster_size=4096",
            s(&img),
            "1M",
        ],
    );
    qemu_ok("qemu-io", &["-c", "write -P 0x44 0 8192", s(&img)]);
    std::fs::read(&img).unwrap()
}

fn open_bytes(
    dir: &Path,
    bytes: &[u8],
) -> Result<Box<dyn aero_storage::BlockDevice>, StorageError> {
    let img = dir.join("hostile.qcow2");
    std::fs::write(&img, bytes).unwrap();
    open_image(
        &img,
        &OpenOptions {
            read_only: true,
            ..Default::default()
        },
    )
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_be_bytes());
}

#[test]
fn hostile_headers_error_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let good = valid_header_image(dir.path());
    assert!(open_bytes(dir.path(), &good).is_ok());
    type Mutation = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, Mutation, &str)> = vec![
        ("truncated", Box::new(|b| b.truncate(50)), "truncated"),
        ("version", Box::new(|b| put32(b, 4, 4)), "version 4"),
        (
            "cluster bits",
            Box::new(|b| put32(b, 20, 31)),
            "cluster_bits",
        ),
        ("encrypted", Box::new(|b| put32(b, 32, 2)), "encrypted"),
        (
            "huge size",
            Box::new(|b| put64(b, 24, u64::MAX)),
            "too large",
        ),
        (
            "l1 too small",
            Box::new(|b| put64(b, 24, 1 << 40)),
            "L1 table",
        ),
        ("huge l1", Box::new(|b| put32(b, 36, u32::MAX)), "too large"),
        (
            "l1 beyond eof",
            Box::new(|b| put64(b, 40, 1 << 40)),
            "L1 table offset",
        ),
        (
            "l1 misaligned",
            Box::new(|b| put64(b, 40, 4096 + 8)),
            "L1 table offset",
        ),
        (
            "huge refcount table",
            Box::new(|b| put32(b, 56, u32::MAX)),
            "refcount table",
        ),
        (
            "refcount table beyond eof",
            Box::new(|b| put64(b, 48, 1 << 50)),
            "refcount table offset",
        ),
        (
            "overlap",
            Box::new(|b| {
                let l1 = u64::from_be_bytes(b[40..48].try_into().unwrap());
                put64(b, 48, l1)
            }),
            "overlap",
        ),
        (
            "table in header",
            Box::new(|b| put64(b, 40, 0)),
            "L1 table offset",
        ),
        (
            "unknown incompatible",
            Box::new(|b| b[72] |= 0x80),
            "unknown incompatible",
        ),
        (
            "external data file",
            Box::new(|b| b[79] |= 4),
            "external data file",
        ),
        (
            "refcount order",
            Box::new(|b| put32(b, 96, 7)),
            "refcount_order",
        ),
        (
            "header length",
            Box::new(|b| put32(b, 100, 1 << 20)),
            "header length",
        ),
        (
            "backing name out of cluster",
            Box::new(|b| {
                put64(b, 8, 4000);
                put32(b, 16, 500)
            }),
            "backing file name",
        ),
        (
            "backing name too long",
            Box::new(|b| {
                put64(b, 8, 200);
                put32(b, 16, 2000)
            }),
            "backing file name",
        ),
        ("empty", Box::new(|b| b.clear()), ""),
    ];
    for (name, mutate, expect) in cases {
        let mut bytes = good.clone();
        mutate(&mut bytes);
        match open_bytes(dir.path(), &bytes) {
            Ok(_) if name == "empty" => {} // an empty file is a (zero-sized) raw image
            Ok(_) => panic!("{name}: hostile image was accepted"),
            Err(e) => assert!(
                e.to_string().contains(expect),
                "{name}: unexpected error {e}"
            ),
        }
    }
}

#[test]
fn hostile_tables_error_on_access_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let good = valid_header_image(dir.path());
    let l1 = u64::from_be_bytes(good[40..48].try_into().unwrap()) as usize;
    let mut bad = good.clone();
    // L1 entry pointing far beyond the end of the file, and one misaligned.
    put64(&mut bad, l1, (1u64 << 63) | (1 << 45));
    let mut dev = open_bytes(dir.path(), &bad).unwrap();
    assert!(dev.read_sectors(0, &mut [0u8; 512]).is_err());
    put64(&mut bad, l1, (1u64 << 63) | (4096 + 512));
    let mut dev = open_bytes(dir.path(), &bad).unwrap();
    assert!(
        dev.read_sectors(0, &mut [0u8; 512])
            .err()
            .unwrap()
            .to_string()
            .contains("not cluster aligned")
    );
}

#[test]
fn mutated_images_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let good = valid_header_image(dir.path());
    let mut x = 0x1234_5678u64;
    for _ in 0..400 {
        let mut bytes = good.clone();
        for _ in 0..4 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Hit the header most of the time, the tables otherwise.
            let limit = if x & 3 == 0 { bytes.len() } else { 112 };
            let at = (x >> 32) as usize % limit;
            bytes[at] ^= 1 << ((x >> 29) & 7);
        }
        if let Ok(mut dev) = open_bytes(dir.path(), &bytes) {
            let n = dev.sector_count().min(64);
            let mut buf = vec![0u8; 512];
            for lba in 0..n {
                let _ = dev.read_sectors(lba, &mut buf);
            }
        }
    }
}
