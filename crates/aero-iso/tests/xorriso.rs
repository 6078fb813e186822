//! Images read back by xorriso (Debian package `xorriso`): Joliet names intact, contents
//! identical, the ISO9660 names valid, and byte-identical output for identical input.

use std::path::Path;
use std::process::Command;

use aero_iso::{IsoBuilder, IsoOptions};

fn sample() -> IsoBuilder {
    let mut b = IsoBuilder::new();
    b.add_file("setup.cmd", b"@echo off\r\n".to_vec()).unwrap();
    b.add_file("README.txt", vec![b'r'; 5000]).unwrap();
    b.add_file("empty.bin", vec![]).unwrap();
    b.add_file(
        "drivers/amd64/aerogpu/aerogpu_d3d9_x64.dll",
        (0..70_000u32).map(|i| i as u8).collect(),
    )
    .unwrap();
    b.add_file("drivers/x86/aerogpu/aerogpu.sys", vec![7; 3000])
        .unwrap();
    b.add_file("certs/aero-test.cer", vec![0x30, 0x82]).unwrap();
    // Enough entries to spill the directory past one sector.
    for i in 0..60 {
        b.add_file(
            &format!("many/A Mixed-Case Name number {i:02}.txt"),
            format!("{i}").into_bytes(),
        )
        .unwrap();
    }
    b
}

fn opts() -> IsoOptions {
    IsoOptions {
        volume_id: "AERO_TOOLS".into(),
        epoch: 1_700_000_000,
    }
}

fn xorriso(args: &[&str]) -> String {
    let out = Command::new("xorriso")
        .args(args)
        .output()
        .expect("xorriso (apt-get install xorriso)");
    assert!(
        out.status.success(),
        "xorriso {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn joliet_tree_extracts_identically() {
    let b = sample();
    let img = b.build(&opts()).unwrap();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("aero-iso-xorriso");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let iso = dir.join("t.iso");
    std::fs::write(&iso, &img).unwrap();
    let ex = dir.join("x");
    xorriso(&[
        "-read_fs",
        "norock",
        "-indev",
        iso.to_str().unwrap(),
        "-osirrox",
        "on",
        "-extract",
        "/",
        ex.to_str().unwrap(),
    ]);
    let expect = |p: &str, data: &[u8]| {
        let got = std::fs::read(ex.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
        assert!(got == data, "{p} differs");
    };
    expect("setup.cmd", b"@echo off\r\n");
    expect("README.txt", &vec![b'r'; 5000]);
    expect("empty.bin", b"");
    expect(
        "drivers/amd64/aerogpu/aerogpu_d3d9_x64.dll",
        &(0..70_000u32).map(|i| i as u8).collect::<Vec<_>>(),
    );
    expect("drivers/x86/aerogpu/aerogpu.sys", &[7; 3000]);
    expect("certs/aero-test.cer", &[0x30, 0x82]);
    for i in 0..60 {
        expect(
            &format!("many/A Mixed-Case Name number {i:02}.txt"),
            format!("{i}").as_bytes(),
        );
    }
}

#[test]
fn primary_tree_has_iso9660_names() {
    let img = sample().build(&opts()).unwrap();
    let iso = Path::new(env!("CARGO_TARGET_TMPDIR")).join("aero-iso-primary.iso");
    std::fs::write(&iso, &img).unwrap();
    let out = xorriso(&[
        "-read_fs",
        "ecma119",
        "-indev",
        iso.to_str().unwrap(),
        "-find",
        "/",
        "-type",
        "f",
    ]);
    assert!(
        out.contains("/DRIVERS/AMD64/AEROGPU/AEROGPU_D3D9_X64.DLL"),
        "{out}"
    );
    assert!(out.contains("/SETUP.CMD"), "{out}");
    let pvd = &img[16 * 2048..17 * 2048];
    assert_eq!(&pvd[1..6], b"CD001");
    assert_eq!(&pvd[40..50], b"AERO_TOOLS");
    assert_eq!(&pvd[813..829], b"2023111422132000");
    let svd = &img[17 * 2048..18 * 2048];
    assert_eq!((svd[0], &svd[88..91]), (2, &b"%/E"[..]));
}

#[test]
fn identical_input_gives_identical_bytes() {
    let a = sample().build(&opts()).unwrap();
    let b = sample().build(&opts()).unwrap();
    assert!(a == b);
    let c = sample().build(&IsoOptions { epoch: 1, ..opts() }).unwrap();
    assert!(a != c, "the epoch must reach the image");
}

#[test]
fn bad_input_is_rejected() {
    let mut b = IsoBuilder::new();
    assert!(b.add_file("../x", vec![]).is_err());
    assert!(b.add_file("a//b", vec![]).is_err());
    b.add_file("a", vec![1]).unwrap();
    assert!(b.add_file("a", vec![2]).is_err());
    b.add_file("a/b", vec![]).unwrap();
    assert!(
        b.build(&opts()).is_err(),
        "a is both a file and a directory"
    );
    let mut c = IsoBuilder::new();
    c.add_file("x.txt", vec![]).unwrap();
    c.add_file("X.TXT", vec![]).unwrap();
    assert!(matches!(
        c.build(&opts()),
        Err(aero_iso::IsoError::IsoNameCollision(_))
    ));
}
