//! `aero test SCENARIO.toml` on a graphical guest: GRUB's rescue CD switched to its
//! graphical terminal (gfxterm, VBE 1024×768×32) by typed commands. The needle in
//! tests/needles was made from an Aero screenshot with `aero needle create`; QEMU's
//! `screendump` of the same guest after the same keys must match it too, and a needle of
//! something not on the screen must match neither.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use aero::needle::Needle;
use aero::screenshot::{Image, read_png, write_png};
use common::qemu::Qemu;

/// What the test types at GRUB's command line: graphics drivers, the terminal, a font,
/// the mode, then a line of text to find.
const GFXTERM_COMMANDS: &str = "insmod all_video\ninsmod gfxterm\nloadfont unicode\n\
                                set gfxmode=1024x768x32\nterminal_output gfxterm\n\
                                echo AERO-GFXTERM\n";

fn out_dir(test: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("scenarios")
        .join(test);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The needle of GRUB's gfxterm (first two text lines) made from an Aero screenshot.
fn gfxterm_needle() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/needles/grub-gfxterm.json")
}

/// A needle with the same area whose picture is the gfxterm text mirrored left to right:
/// never on the screen.
fn mirrored_needle(dir: &Path) -> PathBuf {
    let mut img = read_png(&gfxterm_needle().with_extension("png")).unwrap();
    let w = img.width as usize;
    for y in 0..44 {
        for x in 0..100 {
            let (l, r) = ((y * w + x) * 4, (y * w + 199 - x) * 4);
            for c in 0..4 {
                img.rgba.swap(l + c, r + c);
            }
        }
    }
    write_png(&dir.join("mirrored.png"), img.width, img.height, &img.rgba).unwrap();
    let json = dir.join("mirrored.json");
    std::fs::write(
        &json,
        r#"{"tags":["mirrored"],"area":[{"xpos":0,"ypos":0,"width":200,"height":44,"type":"match"}]}"#,
    )
    .unwrap();
    json
}

/// The step list of the gfxterm scenario in TOML.
fn toml_string(s: &str) -> String {
    format!("{s:?}")
}

#[test]
fn grub_gfxterm_scenario_matches_its_needle_and_stops_at_a_foreign_one() {
    let dir = out_dir("grub_gfxterm");
    let iso = common::image("grub-rescue-cdrom.iso");
    mirrored_needle(&dir);
    let scenario = dir.join("grub-gfxterm.toml");
    std::fs::write(
        &scenario,
        format!(
            "name = \"grub-gfxterm\"\ntimeout = 20\n\
             [machine]\ncdrom = {iso}\nboot = \"d\"\nmemory = 128\n\
             [[step]]\nwait-screen = \"direct boot\"\ntimeout = 30\n\
             [[step]]\nsendkey = \"c\"\n\
             [[step]]\nwait-screen = \"grub>\"\n\
             [[step]]\ntype = {commands}\n\
             [[step]]\nwait-match = {needle}\n\
             [[step]]\nscreendump = \"gfxterm.png\"\n\
             [[step]]\nassert-match = \"mirrored.json\"\n\
             [[step]]\ntype = \"echo never typed\\n\"\n",
            iso = toml_string(iso.to_str().unwrap()),
            commands = toml_string(GFXTERM_COMMANDS),
            needle = toml_string(gfxterm_needle().to_str().unwrap()),
        ),
    )
    .unwrap();
    let junit = dir.join("junit.xml");
    let artifacts = dir.join("artifacts");
    let out = Command::new(env!("CARGO_BIN_EXE_aero"))
        .arg("test")
        .arg(&scenario)
        .arg("--junit")
        .arg(&junit)
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(
        out.status.code(),
        Some(1),
        "the assert-match step must fail"
    );

    // A progress line per step: the needle matched, the mirrored one failed, the rest
    // did not run.
    assert!(
        stdout.contains("[1/8] wait-screen: direct boot ... ok"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "[5/8] wait-match: {} ... ok",
            gfxterm_needle().display()
        )),
        "{stdout}"
    );
    assert!(stdout.contains("[7/8] assert-match: "), "{stdout}");
    assert!(
        stdout.contains("FAILED after 0.00 s: error: step 7: wait-match"),
        "{stdout}"
    );
    assert!(
        stdout.contains("closest needle mirrored: area 0"),
        "{stdout}"
    );
    assert!(!stdout.contains("[8/8]"), "{stdout}");
    assert!(
        stdout.contains("grub-gfxterm: FAILED (6 of 8 steps passed)"),
        "{stdout}"
    );
    assert!(
        stderr.contains("screen matches needle grub-gfxterm"),
        "{stderr}"
    );

    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(
            "<testsuite name=\"grub-gfxterm\" tests=\"8\" failures=\"1\" errors=\"0\" skipped=\"1\""
        ),
        "{xml}"
    );
    assert_eq!(xml.matches("<failure message=").count(), 1, "{xml}");
    assert!(
        xml.contains("name=\"08 type: &quot;echo never typed\\n&quot;\""),
        "{xml}"
    );

    // The screendump step and the failure's artifacts.
    let shot = read_png(&artifacts.join("gfxterm.png")).unwrap();
    assert_eq!((shot.width, shot.height), (1024, 768), "GRUB's gfxmode");
    assert!(Needle::load(&gfxterm_needle()).unwrap().find(&shot).ok());
    let screen = read_png(&artifacts.join("step7-screen.png")).unwrap();
    assert_eq!((screen.width, screen.height), (1024, 768));
    let needle_png = read_png(&artifacts.join("step7.needle.png")).unwrap();
    assert_eq!(needle_png, read_png(&dir.join("mirrored.png")).unwrap());
    let diff = read_png(&artifacts.join("step7.diff.png")).unwrap();
    assert!(diff.rgba.chunks_exact(4).any(|p| p[..3] == [255, 0, 0]));
    assert!(artifacts.join("serial.log").exists());
}

/// GRUB's text menu has its box's top edge on row 55 of the 720x400 text screen; its
/// command line has not.
fn grub_menu_box(img: &Image) -> bool {
    img.width == 720
        && img.height == 400
        && img.rgba[55 * 720 * 4..56 * 720 * 4]
            .chunks_exact(4)
            .filter(|p| p[0] > 100)
            .count()
            > 600
}

#[test]
fn grub_gfxterm_needle_made_on_aero_matches_qemu_screendump() {
    let dir = out_dir("grub_gfxterm_qemu");
    let iso = common::image("grub-rescue-cdrom.iso");
    let needle = Needle::load(&gfxterm_needle()).unwrap();
    let mirrored = Needle::load(&mirrored_needle(&dir)).unwrap();
    let mut qemu = Qemu::start(
        &[
            "-m".as_ref(),
            "128".as_ref(),
            "-boot".as_ref(),
            "d".as_ref(),
            "-cdrom".as_ref(),
            iso.as_os_str(),
        ],
        &dir,
    );
    qemu.wait_for("GRUB menu", grub_menu_box);
    qemu.send("sendkey c");
    qemu.wait_for("GRUB command line", |img| {
        img.width == 720 && !grub_menu_box(img)
    });
    qemu.type_text(GFXTERM_COMMANDS);
    let img = qemu.wait_for("gfxterm needle match", |img| needle.find(img).ok());
    assert_eq!((img.width, img.height), (1024, 768));
    assert!(
        !mirrored.find(&img).ok(),
        "the mirrored needle matched QEMU"
    );
}

/// The demo guest (no `[machine]`: the built-in demo): serial, needle, typed key, mouse
/// and media-change (a disc into its empty CD drive) steps pass; `click` fails with the reason (no tablet yet). Two runs dump the same
/// screen: deterministic time.
#[test]
fn demo_scenario_runs_serial_needle_and_key_steps_deterministically_and_click_fails() {
    let dir = out_dir("demo");
    let first = dir.join("first.png");
    let out = Command::new(env!("CARGO_BIN_EXE_aero"))
        .args([
            "headless",
            "--until-serial",
            "AERO-DEMO-READY",
            "--timeout",
            "20",
        ])
        .arg("--screenshot")
        .arg(&first)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    // The "Aero" title of the demo screen, away from its moving bar and its cube.
    let out = Command::new(env!("CARGO_BIN_EXE_aero"))
        .args(["needle", "create"])
        .arg(&first)
        .args(["--area", "190,55,260,85", "--tag", "demo-logo", "-o"])
        .arg(dir.join("logo.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    std::fs::write(dir.join("disc.iso"), vec![0x5A; 16 * 2048]).unwrap();
    std::fs::write(
        dir.join("demo.toml"),
        "timeout = 20\n\
         [[step]]\nwait-serial = \"AERO-DEMO-READY\"\n\
         [[step]]\nwait-match = \"logo.json\"\n\
         [[step]]\ntype = \"a\"\n\
         [[step]]\nwait-serial = \"AERO-DEMO-KEY=a\"\n\
         [[step]]\nscreendump = \"demo.png\"\n\
         [[step]]\nmouse_move = [3, 4]\n\
         [[step]]\nmedia-change = { drive = \"ide1-cd0\", file = \"disc.iso\" }\n\
         [[step]]\nclick = [10, 10]\n",
    )
    .unwrap();
    let run = |artifacts: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_aero"))
            .arg("test")
            .arg(dir.join("demo.toml"))
            .arg("--artifacts")
            .arg(dir.join(artifacts))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        eprintln!(
            "stdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(1), "click must fail");
        stdout
    };
    let stdout = run("a");
    for ok in [
        "[1/8] wait-serial: AERO-DEMO-READY ... ok",
        "[2/8] wait-match: ",
        "[4/8] wait-serial: AERO-DEMO-KEY=a ... ok",
        "[6/8] mouse_move 3 4 ... ok",
        "disc.iso ... ok",
    ] {
        assert!(stdout.contains(ok), "{ok:?} in {stdout}");
    }
    assert!(
        stdout.contains("[8/8] click 10 10 ... FAILED after 0.00 s: error: step 8: click: absolute pointer positions need a USB tablet"),
        "{stdout}"
    );
    run("b");
    let (a, b) = (
        read_png(&dir.join("a/demo.png")).unwrap(),
        read_png(&dir.join("b/demo.png")).unwrap(),
    );
    assert!(a == b, "two runs of the scenario dumped different screens");
    assert!(dir.join("a/step8-screen.png").exists());
}
