//! `aero compare`, `aero needle create` and `aero headless --until-match` through the CLI;
//! the needles are made from an Aero screenshot of the built-in demo guest.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use aero::screenshot::{Image, read_png, write_png};

fn aero(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_aero"))
        .args(args)
        .output()
        .expect("run aero");
    eprintln!(
        "aero {args:?} -> {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn out_dir(test: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("needles")
        .join(test);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn save(path: &Path, img: &Image) {
    write_png(path, img.width, img.height, &img.rgba).unwrap();
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn compare_cli_exit_codes_counts_and_diff() {
    let dir = out_dir("compare");
    let a = Image {
        width: 8,
        height: 4,
        rgba: [10, 20, 30, 255].repeat(32),
    };
    let mut b = a.clone();
    b.rgba[0] = 14; // (0,0) off by 4
    b.rgba[4 * 9 + 2] = 130; // (1,1) off by 100
    let (pa, pb, diff) = (dir.join("a.png"), dir.join("b.png"), dir.join("d.png"));
    save(&pa, &a);
    save(&pb, &b);

    let out = aero(&["compare", s(&pa), s(&pb), "--diff", s(&diff)]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("2 differing pixels, max channel difference 100"),
        "{text}"
    );
    let d = read_png(&diff).unwrap();
    assert_eq!(&d.rgba[4 * 9..4 * 9 + 4], &[255, 0, 0, 255]);

    let out = aero(&["compare", s(&pa), s(&pb), "--tolerance", "4"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 differing pixels"));
    let out = aero(&[
        "compare",
        s(&pa),
        s(&pb),
        "--tolerance",
        "4",
        "--exclude",
        "1,1,1,1",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let out = aero(&["compare", s(&pa), s(&pa)]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 differing pixels"));

    // Bad input: missing file, size mismatch, bad rectangle.
    let small = dir.join("small.png");
    save(
        &small,
        &Image {
            width: 2,
            height: 2,
            rgba: vec![0; 16],
        },
    );
    assert_eq!(
        aero(&["compare", s(&pa), "/nonexistent.png"]).status.code(),
        Some(2)
    );
    assert_eq!(aero(&["compare", s(&pa), s(&small)]).status.code(), Some(2));
    assert_eq!(
        aero(&["compare", s(&pa), s(&pb), "--exclude", "1,2"])
            .status
            .code(),
        Some(2)
    );
}

/// The "Aero" logo of the demo screen (640×480), away from its moving bar.
const LOGO: &str = "190,55,260,85";

#[test]
fn demo_until_match_stops_on_its_own_screenshot_and_times_out_on_a_foreign_needle() {
    let dir = out_dir("until_match");
    let first = dir.join("first.png");
    let out = aero(&[
        "headless",
        "--until-serial",
        "AERO-DEMO-READY",
        "--timeout",
        "20",
        "--screenshot",
        s(&first),
    ]);
    assert_eq!(out.status.code(), Some(0));

    // A needle of the logo, made by `aero needle create`.
    let logo = dir.join("logo.json");
    let out = aero(&[
        "needle",
        "create",
        s(&first),
        "--area",
        LOGO,
        "--tag",
        "demo-logo",
        "-o",
        s(&logo),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&logo).unwrap()).unwrap();
    assert_eq!(json["tags"][0], "demo-logo");
    assert_eq!(json["area"][0]["xpos"], 190);
    assert_eq!(json["area"][0]["type"], "match");
    assert_eq!(
        read_png(&dir.join("logo.png")).unwrap(),
        read_png(&first).unwrap()
    );
    // An area outside the picture is refused.
    let out = aero(&[
        "needle",
        "create",
        s(&first),
        "--area",
        "600,0,100,10",
        "--tag",
        "x",
        "-o",
        s(&dir.join("bad.json")),
    ]);
    assert_eq!(out.status.code(), Some(2));

    // Something that is not on the screen: the logo mirrored.
    let mut other = read_png(&first).unwrap();
    let w = other.width as usize;
    for y in 55..140 {
        for x in 0..130 {
            let (l, r) = ((y * w + 190 + x) * 4, (y * w + 449 - x) * 4);
            for c in 0..4 {
                other.rgba.swap(l + c, r + c);
            }
        }
    }
    let other_png = dir.join("other-screen.png");
    save(&other_png, &other);
    let mirrored = dir.join("mirrored.json");
    let out = aero(&[
        "needle",
        "create",
        s(&other_png),
        "--area",
        LOGO,
        "--tag",
        "mirrored",
        "-o",
        s(&mirrored),
    ]);
    assert_eq!(out.status.code(), Some(0));

    // A needle recorded 12 px left and 7 px lower still finds the logo (within the margin).
    let first_img = read_png(&first).unwrap();
    let mut shifted = first_img.clone();
    for y in 0..480usize {
        for x in 0..640usize {
            let (sx, sy) = ((x + 12).min(639), y.saturating_sub(7));
            let (d, s) = ((y * 640 + x) * 4, (sy * 640 + sx) * 4);
            shifted.rgba[d..d + 4].copy_from_slice(&first_img.rgba[s..s + 4]);
        }
    }
    let shifted_png = dir.join("shifted-screen.png");
    save(&shifted_png, &shifted);
    let moved = dir.join("moved.json");
    let out = aero(&[
        "needle",
        "create",
        s(&shifted_png),
        "--area",
        "178,62,260,85",
        "--tag",
        "moved",
        "-o",
        s(&moved),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let out = aero(&["headless", "--until-match", s(&moved), "--timeout", "20"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("screen matches needle moved"));

    // Either needle may stop the run: the logo does.
    let out = aero(&[
        "headless",
        "--until-match",
        s(&mirrored),
        "--until-match",
        s(&logo),
        "--timeout",
        "20",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("screen matches needle logo"));

    // The mirrored one alone never matches: timeout, with the artifacts written.
    let shot = dir.join("end.png");
    let out = aero(&[
        "headless",
        "--until-match",
        s(&mirrored),
        "--timeout",
        "2",
        "--screenshot",
        s(&shot),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("closest needle mirrored: area 0"),
        "{stderr}"
    );
    assert!(read_png(&shot).is_ok());
    assert_eq!(read_png(&dir.join("end.needle.png")).unwrap(), other);
    let diff = read_png(&dir.join("end.diff.png")).unwrap();
    assert_eq!((diff.width, diff.height), (640, 480));
    // It is drawn over the last screen (dimmed), not an early blank one.
    let end = read_png(&shot).unwrap();
    let i = (470 * 640 + 10) * 4;
    let dimmed: Vec<u8> = end.rgba[i..i + 3].iter().map(|c| c / 3).collect();
    assert_eq!(diff.rgba[i..i + 3], dimmed[..]);
    // The mirrored logo differs: red pixels inside the area.
    assert!(diff.rgba.chunks_exact(4).any(|p| p[..3] == [255, 0, 0]));

    // A needle that does not load is bad input.
    let out = aero(&[
        "headless",
        "--until-match",
        "/nonexistent.json",
        "--timeout",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
}
