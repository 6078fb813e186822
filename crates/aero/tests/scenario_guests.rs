//! `aero test` scenarios on real guests beyond GRUB (scenarios.rs):
//! - the Debian installer's graphical boot menu (syslinux vesamenu over Debian's splash, VBE
//!   640×480), driven by keys and typing; its needles in tests/needles were made from Aero
//!   screenshots with `aero needle create` (blacked out from 2 px outside their areas, the
//!   blur's reach, and searched within 4 px so the selection bar cannot match a row away).
//!   QEMU's `screendump` after the same keys must match the menu needles too; those leave
//!   out text, which vesamenu draws with the VGA BIOS's font (Aero's own, not QEMU's);
//! - the installer past its menu: Linux in VESA 800×600×16 (`vga=788`, vesafb) up to the
//!   installer's first dialog, whose needle (text in the kernel's font) matches QEMU too;
//! - the `power-off` step on Linux: the ACPI power button reaches the guest (SCI, Linux's
//!   `button` driver, an input event read by /init), which then powers off through ACPI S5.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use aero::needle::Needle;
use aero::screenshot::read_png;
use common::qemu::Qemu;

fn out_dir(test: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("scenario_guests")
        .join(test);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn needle_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/needles/{name}.json"))
}

fn toml_string(s: &Path) -> String {
    format!("{:?}", s.to_str().unwrap())
}

/// The installer CD as Debian boots it over the network: the netboot package's i386 text
/// installer with its own boot menu (`boot-screens/`: vesamenu.c32, splash.png and the
/// menu files), on an isolinux CD (tests/images/build.sh's installer CD boots the kernel
/// directly instead). The menu files name their files relative to the TFTP root; on the CD
/// those paths become absolute.
fn installer_menu_iso(dir: &Path) -> PathBuf {
    let di = "usr/lib/debian-installer/images/12/i386/text/debian-installer/i386";
    let work = dir.join("deb");
    std::fs::create_dir_all(&work).unwrap();
    common::untar_deb(
        &common::cached_deb("debian-installer-12-netboot-i386_", ".deb"),
        &[
            "-x",
            "-C",
            work.to_str().unwrap(),
            "--wildcards",
            &format!("./{di}/boot-screens/*"),
            &format!("./{di}/linux"),
            &format!("./{di}/initrd.gz"),
        ],
    );
    let root = dir.join("iso");
    let files = root.join("debian-installer/i386");
    let screens = files.join("boot-screens");
    std::fs::create_dir_all(&screens).unwrap();
    std::fs::create_dir_all(root.join("isolinux")).unwrap();
    for name in ["linux", "initrd.gz"] {
        std::fs::rename(work.join(di).join(name), files.join(name)).unwrap();
    }
    for entry in std::fs::read_dir(work.join(di).join("boot-screens")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_owned();
        if path.extension().is_some_and(|e| e == "cfg") {
            let text = std::fs::read_to_string(&path).unwrap();
            let text = text
                .replace(" debian-installer/", " /debian-installer/")
                .replace("=debian-installer/", "=/debian-installer/");
            std::fs::write(screens.join(&name), text).unwrap();
        } else {
            std::fs::rename(&path, screens.join(&name)).unwrap();
        }
    }
    // The menu's own syslinux.cfg starts vesamenu.c32; isolinux.bin and ldlinux.c32 of
    // the host's syslinux (the same release as the package's .c32 modules).
    std::fs::copy(
        screens.join("syslinux.cfg"),
        root.join("isolinux/isolinux.cfg"),
    )
    .unwrap();
    for (from, to) in [
        ("/usr/lib/ISOLINUX/isolinux.bin", "isolinux/isolinux.bin"),
        (
            "/usr/lib/syslinux/modules/bios/ldlinux.c32",
            "isolinux/ldlinux.c32",
        ),
    ] {
        std::fs::copy(from, root.join(to))
            .unwrap_or_else(|e| panic!("{from}: {e} (isolinux, syslinux-common)"));
    }
    let iso = dir.join("installer-menu.iso");
    let status = Command::new("xorriso")
        .args(["-as", "mkisofs", "-quiet", "-o"])
        .arg(&iso)
        .args([
            "-V",
            "AERO_DI_MENU",
            "-J",
            "-R",
            "-b",
            "isolinux/isolinux.bin",
        ])
        .args([
            "-c",
            "isolinux/boot.cat",
            "-no-emul-boot",
            "-boot-load-size",
            "4",
        ])
        .arg("-boot-info-table")
        .arg(&root)
        .status()
        .expect("xorriso");
    assert!(status.success(), "xorriso");
    let _ = std::fs::remove_dir_all(&work);
    let _ = std::fs::remove_dir_all(&root);
    iso
}

/// What the tests type on the boot menu's command line (TAB opens it on the selected
/// entry) and the needles of the three screens.
const TYPED: &str = " priority=low";
const MENU: &str = "debian-installer-menu";
const MENU_ADVANCED: &str = "debian-installer-menu-advanced";
const CMDLINE: &str = "debian-installer-cmdline";

fn aero_test(scenario: &Path, artifacts: &Path) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_aero"))
        .arg("test")
        .arg(scenario)
        .arg("--artifacts")
        .arg(artifacts)
        .output()
        .unwrap();
    eprintln!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn debian_installer_graphical_menu_scenario_matches_its_needles() {
    let dir = out_dir("installer_menu");
    let iso = installer_menu_iso(&dir);
    let scenario = dir.join("installer-menu.toml");
    std::fs::write(
        &scenario,
        format!(
            "name = \"installer-menu\"\ntimeout = 10\n\
             [machine]\ncdrom = {iso}\nboot = \"d\"\nmemory = 128\n\
             [[step]]\nwait-match = {menu}\n\
             [[step]]\nscreendump = \"menu.png\"\n\
             [[step]]\nsendkey = \"down\"\n\
             [[step]]\nwait-match = {advanced}\n\
             [[step]]\nscreendump = \"advanced.png\"\n\
             [[step]]\nsendkey = \"up\"\n\
             [[step]]\nwait-match = {menu}\n\
             [[step]]\nsendkey = \"tab\"\n\
             [[step]]\ntype = \"{TYPED}\"\n\
             [[step]]\nwait-match = {cmdline}\n",
            iso = toml_string(&iso),
            menu = toml_string(&needle_path(MENU)),
            advanced = toml_string(&needle_path(MENU_ADVANCED)),
            cmdline = toml_string(&needle_path(CMDLINE)),
        ),
    )
    .unwrap();
    let artifacts = dir.join("artifacts");
    let out = aero_test(&scenario, &artifacts);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("installer-menu: passed (10 of 10 steps passed)"),
        "{stdout}"
    );
    // The screens are VBE graphics (vesamenu's 640×480), and each needle tells the two
    // menu states apart: the selection bar is what differs.
    let menu = read_png(&artifacts.join("menu.png")).unwrap();
    let advanced = read_png(&artifacts.join("advanced.png")).unwrap();
    assert_eq!((menu.width, menu.height), (640, 480));
    let menu_needle = Needle::load(&needle_path(MENU)).unwrap();
    let advanced_needle = Needle::load(&needle_path(MENU_ADVANCED)).unwrap();
    assert!(menu_needle.find(&menu).ok());
    assert!(!menu_needle.find(&advanced).ok(), "Install is not selected");
    assert!(advanced_needle.find(&advanced).ok());
    assert!(
        !advanced_needle.find(&menu).ok(),
        "Advanced is not selected"
    );
}

#[test]
fn debian_installer_menu_needles_made_on_aero_match_qemu_screendump() {
    let dir = out_dir("installer_menu_qemu");
    let iso = installer_menu_iso(&dir);
    let menu = Needle::load(&needle_path(MENU)).unwrap();
    let advanced = Needle::load(&needle_path(MENU_ADVANCED)).unwrap();
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
    let img = qemu.wait_for("installer menu", |img| menu.find(img).ok());
    assert_eq!((img.width, img.height), (640, 480));
    assert!(!advanced.find(&img).ok());
    qemu.send("sendkey down");
    let img = qemu.wait_for("Advanced options selected", |img| advanced.find(img).ok());
    assert!(!menu.find(&img).ok());
    qemu.send("sendkey up");
    qemu.wait_for("Install selected again", |img| menu.find(img).ok());
    // The command-line needle is checked on Aero only: the command line is drawn with the
    // VGA BIOS's font, which is Aero's own (see README "Screenshots and needles").
}

/// The Install entry boots the installer's kernel with `vga=788` (VESA mode 0x114,
/// 800×600, 16-bit colour): the kernel's setup code asks the VGA BIOS for the mode and
/// Linux's vesafb draws the console, and the installer's first dialog, on its linear
/// framebuffer. `quiet` leaves the screen black until then: on Aero's 100 MIPS guest time
/// that is ~50 s (the kernel's xz decompression and the initramfs' gunzip take most of it),
/// plus ~35 s more for the kernel's crypto self-tests (RSA and DH in generic C bignum code),
/// which `cryptomgr.notests`, typed on the entry's command line, skips. With 256 MiB the
/// first dialog is the installer's low-memory warning (it wants 273 MiB; 128 MiB does not
/// boot at all: /init is killed). Its text is drawn by the kernel's own font, so the same
/// needle holds on QEMU, pixel for pixel.
const LOW_MEMORY: &str = "debian-installer-low-memory";
const SKIP_SELF_TESTS: &str = " cryptomgr.notests\n";

#[test]
fn debian_installer_in_vesa_800x600_reaches_its_first_dialog() {
    let dir = out_dir("installer_vesa");
    let iso = installer_menu_iso(&dir);
    let scenario = dir.join("installer-vesa.toml");
    std::fs::write(
        &scenario,
        format!(
            "name = \"installer-vesa\"\ntimeout = 10\n\
             [machine]\ncdrom = {iso}\nboot = \"d\"\nmemory = 256\n\
             [[step]]\nwait-match = {menu}\n\
             [[step]]\nsendkey = \"tab\"\n\
             [[step]]\ntype = {typed:?}\n\
             [[step]]\nwait-match = {dialog}\ntimeout = 120\n\
             [[step]]\nscreendump = \"dialog.png\"\n",
            iso = toml_string(&iso),
            menu = toml_string(&needle_path(MENU)),
            typed = SKIP_SELF_TESTS,
            dialog = toml_string(&needle_path(LOW_MEMORY)),
        ),
    )
    .unwrap();
    let artifacts = dir.join("artifacts");
    let out = aero_test(&scenario, &artifacts);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("installer-vesa: passed (5 of 5 steps passed)"),
        "{stdout}"
    );
    // The dialog is on the 800×600 VESA mode the kernel set, not the menu's 640×480.
    let dialog = read_png(&artifacts.join("dialog.png")).unwrap();
    assert_eq!((dialog.width, dialog.height), (800, 600));
    let needle = Needle::load(&needle_path(LOW_MEMORY)).unwrap();
    assert!(needle.find(&dialog).ok());
    assert!(!Needle::load(&needle_path(MENU)).unwrap().find(&dialog).ok());
    // The same screen with the dialog's title row blanked (console black) is not it.
    let mut blanked = dialog.clone();
    blanked.rgba[208 * 800 * 4..224 * 800 * 4].fill(0);
    assert!(
        !needle.find(&blanked).ok(),
        "the title row is part of the needle"
    );
}

/// QEMU's ISA VGA (`-vga none -device isa-vga`): the same VBE modes through its VGA BIOS,
/// but no PCI device, so no DRM driver (bochs-drm, which the installer loads for QEMU's PCI
/// VGA) replaces vesafb and the dialog stays on the 800×600 VESA framebuffer.
#[test]
fn debian_installer_vesa_dialog_needle_made_on_aero_matches_qemu_screendump() {
    let dir = out_dir("installer_vesa_qemu");
    let iso = installer_menu_iso(&dir);
    let menu = Needle::load(&needle_path(MENU)).unwrap();
    let dialog = Needle::load(&needle_path(LOW_MEMORY)).unwrap();
    let mut qemu = Qemu::start(
        &[
            "-m".as_ref(),
            "256".as_ref(),
            "-vga".as_ref(),
            "none".as_ref(),
            "-device".as_ref(),
            "isa-vga".as_ref(),
            "-boot".as_ref(),
            "d".as_ref(),
            "-cdrom".as_ref(),
            iso.as_os_str(),
        ],
        &dir,
    );
    qemu.wait_for("installer menu", |img| menu.find(img).ok());
    qemu.send("sendkey tab");
    qemu.type_text(SKIP_SELF_TESTS);
    let img = qemu.wait_for_within("low-memory dialog", 300, |img| dialog.find(img).ok());
    assert_eq!((img.width, img.height), (800, 600));
    // Not just similar: every pixel of the needle's areas is Aero's.
    for area in &dialog.json.area {
        for y in area.ypos..area.ypos + area.height {
            let row = |img: &aero::screenshot::Image| {
                let start = ((y * img.width + area.xpos) * 4) as usize;
                img.rgba[start..start + area.width as usize * 4].to_vec()
            };
            assert_eq!(row(&img), row(&dialog.image), "row {y} differs from Aero's");
        }
    }
}

/// What /init does in the power-off test (inside [`common::guest_init`], which powers off
/// after it): Linux's ACPI button driver and evdev, then a read of one event from the
/// power button's input device (what systemd-logind or acpid wait for); the power-off
/// that follows goes through ACPI S5 (the FADT's PM1a control block).
const POWER_BUTTON_BODY: &str = r#"insmod /lib/modules/evdev.ko || echo "AERO-INSMOD-FAILED evdev"
insmod /lib/modules/button.ko || echo "AERO-INSMOD-FAILED button"
dev=
i=0
while [ -z "$dev" ] && [ $i -lt 50 ]; do
    for e in /sys/class/input/event*; do
        case "$(cat "$e/device/phys" 2>/dev/null)" in
        LNXPWRBN/*) [ -c "/dev/input/${e##*/}" ] && dev="/dev/input/${e##*/}" ;;
        esac
    done
    [ -z "$dev" ] && sleep 0.1
    i=$((i + 1))
done
# Opened before saying ready: evdev keeps only the events that come after an open.
exec 3<"$dev"
echo "AERO-POWER-BUTTON-READY $dev"
dd bs=24 count=1 of=/dev/null <&3 2>/dev/null
echo "AERO-POWER-BUTTON-PRESSED"
"#;

/// The amd64 boot disk whose initramfs runs [`POWER_BUTTON_BODY`] with the two modules.
fn power_button_disk(dir: &Path) -> PathBuf {
    let mut files = vec![(
        "init".to_string(),
        0o100755,
        common::guest_init(POWER_BUTTON_BODY).into_bytes(),
    )];
    files.extend(common::module_files(&[
        ("evdev", "kernel/drivers/input/evdev.ko"),
        ("button", "kernel/drivers/acpi/button.ko"),
    ]));
    common::linux_disk_with_files(dir, "initrd-amd64.img", &files)
}

/// `power-off = true` presses the ACPI power button and passes once the guest is off:
/// Linux sees the button (its input event), prints so and powers off by ACPI. A guest that
/// ignores the button (the built-in demo) fails the step on its timeout, named.
#[test]
fn power_off_step_presses_the_acpi_button_and_linux_powers_off() {
    let dir = out_dir("power_off");
    let disk = power_button_disk(&dir);
    let scenario = dir.join("power-off.toml");
    std::fs::write(
        &scenario,
        format!(
            "timeout = 120\n[machine]\nhda = {disk}\n\
             [[step]]\nwait-serial = \"AERO-POWER-BUTTON-READY /dev/input/event\"\n\
             [[step]]\npower-off = true\ntimeout = 10\n",
            disk = toml_string(&disk),
        ),
    )
    .unwrap();
    let artifacts = dir.join("artifacts");
    let out = aero_test(&scenario, &artifacts);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let serial = std::fs::read_to_string(artifacts.join("serial.log")).unwrap_or_default();
    assert_eq!(out.status.code(), Some(0), "{stdout}\nserial:\n{serial}");
    assert!(stdout.contains("[2/2] power-off ... ok"), "{stdout}");
    assert!(
        stdout.contains("power-off: passed (2 of 2 steps passed)"),
        "{stdout}"
    );
    // The guest saw the button and powered off itself (not a machine stop).
    assert!(!serial.contains("AERO-INSMOD-FAILED"), "{serial}");
    assert!(serial.contains("AERO-POWER-BUTTON-PRESSED"), "{serial}");
    assert!(serial.contains("reboot: Power down"), "{serial}");

    // The demo guest ignores the button: the step times out and says what it waited for.
    let ignored = dir.join("ignored.toml");
    std::fs::write(
        &ignored,
        "[[step]]\nwait-serial = \"AERO-DEMO-READY\"\ntimeout = 20\n\
         [[step]]\npower-off = true\ntimeout = 1\n",
    )
    .unwrap();
    let out = aero_test(&ignored, &dir.join("ignored"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "[2/2] power-off ... FAILED after 1.00 s: the guest did not power off within 1 s \
             of guest time after the power button was pressed"
        ),
        "{stdout}"
    );
    assert!(dir.join("ignored/step2-screen.png").exists());
}
