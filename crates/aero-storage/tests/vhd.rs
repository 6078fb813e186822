//! VHD (vpc) fixed and dynamic against qemu-img as the reference.

mod common;

use std::path::{Path, PathBuf};

use aero_storage::{ImageFormat, OpenOptions, StorageError, open_image};
use common::*;

/// 302 cylinders × 4 heads × 17 sectors: a size CHS geometry expresses exactly, so QEMU's
/// CHS-based sizing and ours agree with the raw source.
const SIZE: usize = 302 * 4 * 17 * 512;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn qemu_vhd_from(dir: &Path, subformat: &str, data: &[u8]) -> PathBuf {
    let raw = dir.join(format!("{subformat}.raw"));
    std::fs::write(&raw, data).unwrap();
    let img = dir.join(format!("{subformat}.vhd"));
    let _ = std::fs::remove_file(&img);
    qemu_ok(
        "qemu-img",
        &[
            "convert",
            "-O",
            "vpc",
            "-o",
            &format!("subformat={subformat}"),
            s(&raw),
            s(&img),
        ],
    );
    img
}

#[test]
fn reads_qemu_fixed_and_dynamic() {
    let dir = tempfile::tempdir().unwrap();
    let data = pattern(SIZE, 21);
    for sub in ["fixed", "dynamic"] {
        let img = qemu_vhd_from(dir.path(), sub, &data);
        let mut dev = open_ro(&img);
        assert_eq!(dev.sector_count() as usize * 512, SIZE, "{sub}");
        assert!(read_all(dev.as_mut()) == data, "{sub}: contents differ");
    }
    // A freshly created dynamic disk has no blocks and reads as zeros.
    let empty = dir.path().join("empty.vhd");
    qemu_ok(
        "qemu-img",
        &[
            "create",
            "-f",
            "vpc",
            "-o",
            "subformat=dynamic",
            s(&empty),
            "10M",
        ],
    );
    let mut dev = open_ro(&empty);
    assert_eq!(dev.sector_count() as usize * 512, SIZE);
    assert!(read_all(dev.as_mut()).iter().all(|&b| b == 0));
}

#[test]
fn writes_round_trip_through_qemu() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["fixed", "dynamic"] {
        for start in ["empty", "data"] {
            let data = if start == "empty" {
                vec![0u8; SIZE]
            } else {
                pattern(SIZE, 23)
            };
            let img = qemu_vhd_from(dir.path(), sub, &data);
            let mut model = data.clone();
            {
                let mut dev = open_rw(&img);
                scribble(dev.as_mut(), &mut model, 29);
                dev.flush().unwrap();
                assert!(
                    read_all(dev.as_mut()) == model,
                    "{sub}/{start}: Aero re-read differs"
                );
            }
            let (code, text) = qemu("qemu-img", &["info", s(&img)]);
            assert_eq!(code, 0, "{text}");
            // QEMU shows fixed disks with the footer sector appended; compare the disk itself.
            let flat = qemu_flatten(&img, dir.path());
            assert!(
                flat.len() >= SIZE && flat[..SIZE] == model[..],
                "{sub}/{start}: QEMU sees different contents"
            );
            let mut dev = open_ro(&img);
            assert!(
                read_all(dev.as_mut()) == model,
                "{sub}/{start}: reopened contents differ"
            );
        }
    }
}

#[test]
fn dynamic_disk_survives_loss_of_trailing_footer() {
    let dir = tempfile::tempdir().unwrap();
    let data = pattern(SIZE, 31);
    let img = qemu_vhd_from(dir.path(), "dynamic", &data);
    let len = std::fs::metadata(&img).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&img).unwrap();
    f.set_len(len - 512).unwrap();
    drop(f);
    let mut dev = open_ro(&img);
    assert!(read_all(dev.as_mut()) == data);
}

#[test]
fn vhd_format_is_detected_and_forcible() {
    let dir = tempfile::tempdir().unwrap();
    let img = qemu_vhd_from(dir.path(), "fixed", &pattern(SIZE, 37));
    // Fixed VHDs have no header: only the footer identifies them.
    let dev = open_ro(&img);
    assert_eq!(dev.sector_count() as usize * 512, SIZE);
    let raw = open_image(
        &img,
        &OpenOptions {
            read_only: true,
            format: Some(ImageFormat::Raw),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(raw.sector_count() as usize * 512, SIZE + 512);
}

// ---- hostile images ----

fn open_bytes(
    dir: &Path,
    bytes: &[u8],
) -> Result<Box<dyn aero_storage::BlockDevice>, StorageError> {
    let img = dir.join("hostile.vhd");
    std::fs::write(&img, bytes).unwrap();
    open_image(
        &img,
        &OpenOptions {
            read_only: true,
            format: Some(ImageFormat::Vhd),
            ..Default::default()
        },
    )
}

fn fix_checksum(block: &mut [u8], at: usize) {
    block[at..at + 4].fill(0);
    let sum: u32 = block.iter().fold(0u32, |a, &b| a.wrapping_add(b as u32));
    block[at..at + 4].copy_from_slice(&(!sum).to_be_bytes());
}

/// Mutates the footer (both copies) or the dynamic header and fixes their checksums, so the
/// validation behind the checksum is what gets tested.
fn with_footer(bytes: &[u8], f: impl Fn(&mut [u8])) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let end = b.len() - 512;
    for at in [0, end] {
        f(&mut b[at..at + 512]);
        fix_checksum(&mut b[at..at + 512], 64);
    }
    b
}

fn with_dyn_header(bytes: &[u8], f: impl Fn(&mut [u8])) -> Vec<u8> {
    let mut b = bytes.to_vec();
    f(&mut b[512..1536]);
    fix_checksum(&mut b[512..1536], 36);
    b
}

#[test]
fn hostile_vhds_error_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = vec![0u8; SIZE];
    data[..4096].fill(0x5A);
    let good = std::fs::read(qemu_vhd_from(dir.path(), "dynamic", &data)).unwrap();
    assert!(open_bytes(dir.path(), &good).is_ok());
    let mut bad_sum = good.clone();
    let end = bad_sum.len() - 512;
    bad_sum[end + 40] ^= 1;
    bad_sum[40] ^= 1;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated", good[..100].to_vec(), "truncated"),
        ("no footer", vec![0u8; 4096], "footer missing"),
        ("checksum", bad_sum, "checksum mismatch"),
        (
            "differencing",
            with_footer(&good, |f| f[63] = 4),
            "differencing",
        ),
        (
            "unknown type",
            with_footer(&good, |f| f[63] = 9),
            "disk type",
        ),
        (
            "huge size",
            with_footer(&good, |f| {
                f[28..32].copy_from_slice(b"win ");
                f[48..56].copy_from_slice(&u64::MAX.to_be_bytes())
            }),
            "2040 GiB",
        ),
        (
            "header beyond eof",
            with_footer(&good, |f| {
                f[16..24].copy_from_slice(&(1u64 << 40).to_be_bytes())
            }),
            "dynamic header",
        ),
        (
            "header checksum",
            {
                let mut b = good.clone();
                b[600] ^= 1;
                b
            },
            "checksum",
        ),
        (
            "block size",
            with_dyn_header(&good, |h| h[32..36].copy_from_slice(&3000u32.to_be_bytes())),
            "block size",
        ),
        (
            "huge bat",
            with_dyn_header(&good, |h| {
                h[28..32].copy_from_slice(&u32::MAX.to_be_bytes())
            }),
            "too large",
        ),
        (
            "small bat",
            with_dyn_header(&good, |h| h[28..32].copy_from_slice(&1u32.to_be_bytes())),
            "does not cover",
        ),
        (
            "bat beyond eof",
            with_dyn_header(&good, |h| {
                h[16..24].copy_from_slice(&(1u64 << 40).to_be_bytes())
            }),
            "outside the file",
        ),
        (
            "bat over header",
            with_dyn_header(&good, |h| h[16..24].copy_from_slice(&600u64.to_be_bytes())),
            "overlaps",
        ),
    ];
    for (name, bytes, expect) in cases {
        match open_bytes(dir.path(), &bytes) {
            Ok(_) => panic!("{name}: hostile image was accepted"),
            Err(e) => assert!(
                e.to_string().contains(expect),
                "{name}: unexpected error {e}"
            ),
        }
    }
    // A BAT entry pointing past the end of the file fails the read, not the process.
    let bat = u64::from_be_bytes(good[512 + 16..512 + 24].try_into().unwrap()) as usize;
    let mut b = good.clone();
    b[bat..bat + 4].copy_from_slice(&0x7fff_0000u32.to_be_bytes());
    let mut dev = open_bytes(dir.path(), &b).unwrap();
    assert!(dev.read_sectors(0, &mut [0u8; 512]).is_err());
}

#[test]
fn mutated_vhds_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = vec![0u8; SIZE];
    data[..8192].fill(0x77);
    let good = std::fs::read(qemu_vhd_from(dir.path(), "dynamic", &data)).unwrap();
    let mut x = 99u64;
    for i in 0..300 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let at = 512 + (x >> 33) as usize % 1024 + if i % 3 == 0 { 1024 } else { 0 };
        let bytes = with_dyn_header(&good, |h| {
            if let Some(b) = h.get_mut(at - 512) {
                *b ^= 1 << ((x >> 20) & 7);
            }
        });
        let mut bytes = bytes;
        if i % 3 == 0
            && let Some(b) = bytes.get_mut(at)
        {
            *b ^= 0x10; // the BAT
        }
        if let Ok(mut dev) = open_bytes(dir.path(), &bytes) {
            let mut buf = vec![0u8; 4096];
            for lba in (0..dev.sector_count().min(8192)).step_by(977) {
                let _ = dev.read_sectors(lba, &mut buf[..512]);
            }
        }
    }
}
