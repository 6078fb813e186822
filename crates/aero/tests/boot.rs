//! Boot tests: real guests built from Debian packages by `tests/images/build.sh`
//! (cached in ~/.cache/aero/images), booted with `aero headless` exactly as an external
//! test suite would.

mod common;
use common::*;
use std::path::PathBuf;
use std::process::{Command, Output};

fn aero(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aero"))
        .args(args)
        .output()
        .expect("run aero")
}

fn out_dir(test: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(test);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs one headless boot and returns (exit code, serial output, debugcon output, screenshot).
fn boot(test: &str, extra: &[&str]) -> (i32, String, String, Vec<u8>) {
    let dir = out_dir(test);
    let serial = dir.join("serial.txt");
    let debugcon = dir.join("debugcon.txt");
    let shot = dir.join("screen.png");
    let mut args = vec![
        "headless",
        "--snapshot",
        "--serial",
        serial.to_str().unwrap(),
        "--debugcon",
        debugcon.to_str().unwrap(),
        "--screenshot",
        shot.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = aero(&args);
    let code = out.status.code().unwrap_or(-1);
    eprintln!("aero {args:?} -> {code}\nstderr: {}", text(&out.stderr));
    let read = |p: &PathBuf| std::fs::read(p).unwrap_or_default();
    (
        code,
        text(&read(&serial)),
        text(&read(&debugcon)),
        read(&shot),
    )
}

#[test]
fn same_input_gives_the_same_output_bit_for_bit() {
    let img = image("linux-amd64.img");
    let args = ["--timeout", "0.3", img.to_str().unwrap()];
    let first = boot("determinism-1", &args);
    let second = boot("determinism-2", &args);
    assert_eq!(first.0, 1, "the run should end by timeout");
    assert!(
        first.2.contains("Booting from Hard Disk"),
        "BIOS did not get to booting: {:?}",
        first.2
    );
    assert!(!first.3.is_empty(), "no screenshot written");
    assert_eq!(first, second, "two deterministic runs differ");
}

#[test]
fn no_bootable_device_is_reported() {
    let dir = out_dir("no-boot");
    let blank = dir.join("blank.img");
    std::fs::write(&blank, vec![0u8; 1 << 20]).unwrap();
    let (_, _, debugcon, _) = boot("no-boot", &["--timeout", "0.5", blank.to_str().unwrap()]);
    assert!(
        debugcon.to_lowercase().contains("no bootable"),
        "debugcon: {debugcon:?}"
    );
}

#[test]
fn bad_arguments_exit_2_with_one_message() {
    let out = aero(&["headless", "/nonexistent/disk.img"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("/nonexistent/disk.img"), "{err}");
    let out = aero(&["headless", "--boot", "z"]);
    assert_eq!(out.status.code(), Some(2));
    let out = aero(&["headless", "--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Asserts the amd64 guest's own report: it booted with ACPI, the IO-APIC and the HPET.
fn assert_linux_amd64_report(serial: &str) {
    for line in [
        "AERO-BOOT-OK",
        "AERO-UNAME-M=x86_64",
        "AERO-ACPI=yes",
        "AERO-IOAPIC=yes",
        "AERO-HPET-DMESG=yes",
    ] {
        assert!(
            serial.contains(line),
            "missing {line:?} in serial output:\n{serial}"
        );
    }
    for log in [
        "IOAPIC[0]: apic_id",
        "ACPI: Using IOAPIC for interrupt routing",
        "hpet0: at MMIO 0xfed00000",
        "clocksource: Switched to clocksource",
        "Run /init as init process",
    ] {
        assert!(serial.contains(log), "kernel log lacks {log:?}");
    }
}

/// The ECAM window on our BIOS: Linux takes it from the MCFG, accepts it because E820
/// reserves it, sees the PNP0C02 claim, and so gets extended config space under the host
/// bridge. BARs sit above it, in the host bridge's window.
fn assert_linux_uses_our_ecam(serial: &str) {
    for log in [
        "PCI: MMCONFIG for domain 0000 [bus 00-ff] at [mem 0xe0000000-0xefffffff] \
         (base 0xe0000000)",
        "PCI: MMCONFIG at [mem 0xe0000000-0xefffffff] reserved in E820",
        ": [mem 0xe0000000-0xefffffff] has been reserved",
        "acpi PNP0A03:00: _OSC: OS supports [ExtendedConfig",
        "root bus resource [mem 0xf0000000-0xfebfffff window]",
        "root bus resource [bus 00-ff]",
    ] {
        assert!(serial.contains(log), "kernel log lacks {log:?}:\n{serial}");
    }
    for bad in [
        "fail to add MMCONFIG information",
        "not reserved in ACPI motherboard resources",
        "only partially covers this bridge",
    ] {
        assert!(!serial.contains(bad), "kernel log has {bad:?}:\n{serial}");
    }
}

/// The run's screenshot, in 80x25 text mode, matches tests/golden/`golden`.png once
/// `mask` has blanked what legitimately varies.
fn assert_text_screen_matches(test: &str, golden: &str, mask: impl FnOnce(&mut [u8])) {
    let dir = out_dir(test);
    let mut actual = aero::screenshot::read_png(&dir.join("screen.png")).unwrap();
    assert_eq!((actual.width, actual.height), (720, 400), "80x25 text mode");
    mask(&mut actual.rgba);
    let golden =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../tests/golden/{golden}.png"));
    aero::screenshot::assert_matches_golden(
        &actual,
        &golden,
        &dir,
        aero::screenshot::Tolerance::default(),
    )
    .unwrap();
}

/// The guest's /init clears the VGA console and writes the firmware-independent facts
/// after its serial report; the run stops once they are on the text screen
/// (`--until-screen`), and the screen must match one golden image on either BIOS.
fn assert_linux_amd64_screen(test: &str) {
    assert_text_screen_matches(test, "linux-amd64-console", |_| {});
}

#[test]
fn linux_amd64_boots_on_our_bios() {
    let img = image("linux-amd64.img");
    let (code, serial, _, _) = boot(
        "linux-amd64",
        &[
            "--until-screen",
            "AERO-BOOT-DONE",
            "--timeout",
            "120",
            img.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0);
    assert_linux_amd64_report(&serial);
    assert_linux_uses_our_ecam(&serial);
    assert_linux_amd64_screen("linux-amd64");
}

/// Debian's SeaBIOS (package `seabios`, installed by the test setup). It finds the disks
/// with its own drivers: the hard disk on AHCI port 0, the CD on IDE.
const SEABIOS: &str = "/usr/share/seabios/bios.bin";

fn seabios() -> &'static str {
    assert!(
        std::path::Path::new(SEABIOS).exists(),
        "{SEABIOS} is missing: apt-get install seabios (tests/install-deps.sh does)"
    );
    SEABIOS
}

#[test]
fn linux_amd64_boots_on_seabios() {
    let img = image("linux-amd64.img");
    let (code, serial, debugcon, _) = boot(
        "linux-amd64-seabios",
        &[
            "--bios",
            seabios(),
            "--until-screen",
            "AERO-BOOT-DONE",
            "--timeout",
            "120",
            img.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0);
    assert!(
        debugcon.contains("AHCI/0: Aero Hard Disk"),
        "SeaBIOS did not find the disk on AHCI port 0: {debugcon}"
    );
    assert_linux_amd64_report(&serial);
    assert_linux_amd64_screen("linux-amd64-seabios");
}

/// `--drive if=ide` puts the boot disk on the PIIX3 IDE primary master instead.
#[test]
fn linux_amd64_boots_from_ide_on_seabios() {
    let img = image("linux-amd64.img");
    let drive = format!("file={},if=ide,index=0", img.display());
    let (code, serial, debugcon, _) = boot(
        "linux-amd64-seabios-ide",
        &[
            "--bios",
            seabios(),
            "--drive",
            &drive,
            "--until-serial",
            "AERO-BOOT-DONE",
            "--timeout",
            "120",
        ],
    );
    assert_eq!(code, 0);
    assert!(
        debugcon.contains("ata0-0: Aero Hard Disk"),
        "SeaBIOS did not find the IDE disk: {debugcon}"
    );
    assert_linux_amd64_report(&serial);
}

#[test]
fn linux_i386_boots_on_seabios() {
    let img = image("linux-i386.img");
    let (code, serial, _, _) = boot(
        "linux-i386-seabios",
        &[
            "--bios",
            seabios(),
            "--until-serial",
            "AERO-BOOT-DONE",
            "--timeout",
            "120",
            img.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0);
    assert!(serial.contains("AERO-UNAME-M=i686"), "{serial}");
}

#[test]
fn isolinux_cd_boots_on_seabios() {
    let iso = image("linux-amd64.iso");
    let (code, serial, debugcon, _) = boot(
        "isolinux-seabios",
        &[
            "--bios",
            seabios(),
            "--cdrom",
            iso.to_str().unwrap(),
            "--boot",
            "d",
            "--until-serial",
            "AERO-BOOT-DONE",
            "--timeout",
            "120",
        ],
    );
    assert_eq!(code, 0);
    assert!(
        debugcon.contains("DVD/CD [ata1-0: Aero DVD-ROM"),
        "SeaBIOS did not find the ATAPI drive: {debugcon}"
    );
    assert_linux_amd64_report(&serial);
}

#[test]
fn linux_i386_boots_on_our_bios() {
    let img = image("linux-i386.img");
    let (code, serial, _, _) = boot(
        "linux-i386",
        &[
            "--until-serial",
            "AERO-BOOT-DONE",
            "--timeout",
            "120",
            img.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0);
    for line in [
        "AERO-BOOT-OK",
        "AERO-UNAME-M=i686",
        "AERO-ACPI=yes",
        "AERO-IOAPIC=yes",
    ] {
        assert!(
            serial.contains(line),
            "missing {line:?} in serial output:\n{serial}"
        );
    }
    assert_linux_uses_our_ecam(&serial);
    // The 2-level page walk honours CR0.WP on read-only PTEs.
    assert!(
        serial.contains("honours the WP bit even in supervisor mode...Ok."),
        "{serial}"
    );
}

/// GRUB 2 waits at its menu forever (timeout=-1): the screen after `secs` of guest time is
/// compared with the golden image (the same on both BIOSes: both run our VGA BIOS).
fn grub_menu(test: &str, extra: &[&str], secs: &str) {
    let img = image("grub.img");
    let mut args = extra.to_vec();
    args.extend(["--timeout", secs, img.to_str().unwrap()]);
    let (code, serial, _, png) = boot(test, &args);
    assert_eq!(code, 1, "GRUB should still wait at its menu");
    assert!(
        serial.contains("Aero test: Linux amd64 (second entry)"),
        "GRUB's serial menu: {serial:?}"
    );
    assert!(!png.is_empty());
    // The title row carries Debian's GRUB package version, which moves with updates.
    assert_text_screen_matches(test, "grub-menu", |rgba| rgba[..720 * 32 * 4].fill(0));
}

#[test]
fn grub_menu_matches_golden() {
    grub_menu("grub", &[], "3");
}

#[test]
fn grub_menu_on_seabios_matches_golden() {
    // SeaBIOS waits ~2.5 s for its boot-menu key first.
    grub_menu("grub-seabios", &["--bios", seabios()], "6");
}

/// Boots with `args` until `text` is on the text screen (within `secs` of guest time);
/// returns the exit code, COM1 output, port E9h output and the final text screen.
fn boot_until_screen(
    test: &str,
    args: &[&str],
    text: &str,
    secs: &str,
) -> (i32, String, String, String) {
    let screen_file = out_dir(test).join("screen.txt");
    let mut all = args.to_vec();
    all.extend([
        "--until-screen",
        text,
        "--timeout",
        secs,
        "--screen-text",
        screen_file.to_str().unwrap(),
    ]);
    let (code, serial, debugcon, _) = boot(test, &all);
    let screen = std::fs::read_to_string(&screen_file).unwrap_or_default();
    (code, serial, debugcon, screen)
}

/// Debian's memtest86+ ISO: El Torito floppy emulation, then its own 64-bit kernel runs
/// memory tests #0–#3 over all of RAM (address walk, own address, moving inversions)
/// and must find no error.
#[test]
fn memtest86_plus_runs_its_first_tests_clean() {
    let iso = image("memtest86+x64.iso");
    let args = ["-m", "64", "--cdrom", iso.to_str().unwrap(), "--boot", "d"];
    let (code, _, debugcon, screen) = boot_until_screen("memtest", &args, "Test #4", "60");
    assert!(debugcon.contains("Booting from DVD/CD"), "{debugcon}");
    assert_eq!(code, 0, "memtest86+ did not get to test #4:\n{screen}");
    for expected in ["Memtest86+", "Memory  :   64MB", "Errors: 0"] {
        assert!(
            screen.contains(expected),
            "missing {expected:?} on:\n{screen}"
        );
    }
}

/// GRUB's rescue images from Debian (`grub-rescue-pc`) reach their menu from a floppy
/// (INT 13h floppy services), from a CD and from the same hybrid image as a hard disk.
fn grub_rescue(test: &str, drive: &[&str]) {
    let (code, _, _, screen) = boot_until_screen(test, drive, "direct boot", "30");
    assert_eq!(code, 0, "GRUB's menu did not appear:\n{screen}");
    assert!(screen.contains("GNU GRUB  version"), "{screen}");
    assert!(screen.contains("GNU/Linux"), "{screen}");
}

#[test]
fn grub_rescue_floppy_boots_to_its_menu() {
    let img = image("grub-rescue-floppy.img");
    grub_rescue(
        "grub-rescue-floppy",
        &["--fda", img.to_str().unwrap(), "--boot", "a"],
    );
}

#[test]
fn grub_rescue_cd_boots_to_its_menu_as_cd_and_as_disk() {
    let iso = image("grub-rescue-cdrom.iso");
    let iso = iso.to_str().unwrap();
    grub_rescue("grub-rescue-cd", &["--cdrom", iso, "--boot", "d"]);
    grub_rescue("grub-rescue-hybrid", &["--hda", iso]);
}

/// Types `commands` (GRUB syntax, `\\n`-separated) at the command line of GRUB's rescue CD
/// through a `--monitor` script (`wait-screen`, `sendkey`, `type`), with the disks in
/// `disk`; returns the text screen once GRUB has run them all (the script quits, exit 0).
fn grub_command_line(test: &str, commands: &str, disk: &[&str]) -> String {
    let dir = out_dir(test);
    let script = dir.join("keys.txt");
    std::fs::write(
        &script,
        format!(
            "wait-screen direct boot\n\
             sendkey c\n\
             wait-screen grub>\n\
             type \"set m=DONE\\n{commands}\\necho ALL-$m\\n\"\n\
             wait-screen ALL-DONE\n\
             quit\n"
        ),
    )
    .unwrap();
    let iso = image("grub-rescue-cdrom.iso");
    let mut args = vec!["--cdrom", iso.to_str().unwrap(), "--boot", "d"];
    args.extend_from_slice(disk);
    args.extend(["--monitor", script.to_str().unwrap()]);
    let (code, _, _, screen) = boot_until_screen(test, &args, "NO-SUCH-TEXT", "60");
    assert_eq!(code, 0, "the script did not reach its end:\n{screen}");
    screen
}

/// The files syslinux puts on the test disks' FAT partition, as GRUB's `ls` lists them.
const TEST_DISK_FILES: &str = "vmlinuz initrd.img syslinux.cfg ldlinux.sys ldlinux.c32";

/// GRUB's own disk drivers instead of the BIOS: `insmod MODULE` brings up GRUB's native
/// driver for one of our controllers, which must find the disk and list the files of its
/// FAT partition. (A native driver drops GRUB's BIOS disks, so the commands and
/// file-system modules are loaded first, from the CD.)
fn grub_native_driver(test: &str, module: &str, device: &str, disk: &[&str]) {
    let commands = format!(
        "insmod part_msdos\\ninsmod fat\\nls\\necho x\\nclear\\ninsmod {module}\\nls\\nls ({device},msdos1)/"
    );
    let screen = grub_command_line(test, &commands, disk);
    assert!(
        screen.contains(&format!("({device}) ({device},msdos1)")),
        "GRUB's {module} driver did not find the disk:\n{screen}"
    );
    assert!(
        screen.contains(TEST_DISK_FILES),
        "the partition's files were not listed:\n{screen}"
    );
}

#[test]
fn grub_native_ahci_driver_reads_our_ahci_disk() {
    let disk = image("linux-amd64.img");
    grub_native_driver(
        "grub-ahci",
        "ahci",
        "ahci0",
        &["--hda", disk.to_str().unwrap()],
    );
}

#[test]
fn grub_native_pata_driver_reads_our_ide_disk() {
    let disk = format!("file={},if=ide", image("linux-i386.img").display());
    grub_native_driver("grub-pata", "pata", "ata0", &["--drive", disk.as_str()]);
}

/// Our BIOS gives INT 13h every hard disk, not only the boot disk: with a second disk on
/// IDE, GRUB's BIOS disk driver finds 80h and 81h and reads both partitions.
#[test]
fn bios_int13h_sees_every_hard_disk() {
    let first = image("linux-amd64.img");
    let second = format!("file={},if=ide", image("linux-i386.img").display());
    let screen = grub_command_line(
        "grub-two-disks",
        "ls\\nls (hd0,msdos1)/\\nls (hd1,msdos1)/",
        &["--hda", first.to_str().unwrap(), "--drive", second.as_str()],
    );
    assert!(
        screen.contains("(hd0) (hd0,msdos1) (hd1) (hd1,msdos1)"),
        "GRUB did not see both disks:\n{screen}"
    );
    assert_eq!(screen.matches(TEST_DISK_FILES).count(), 2, "{screen}");
}

/// syslinux's memdisk (isolinux CD) copies the GRUB rescue floppy into high memory, hooks
/// INT 13h and INT 15h and boots it as drive 00h; GRUB then loads its modules through
/// memdisk's hooked services, which chain to our BIOS for everything else.
#[test]
fn memdisk_boots_a_floppy_image_from_memory() {
    let iso = image("memdisk-floppy.iso");
    grub_rescue(
        "memdisk",
        &["--cdrom", iso.to_str().unwrap(), "--boot", "d"],
    );
}

/// The Debian installer (i386, text frontend) from an isolinux CD: the kernel, its
/// udev and module loading, then the installer's first dialog on the VGA console.
#[test]
fn debian_installer_i386_reaches_its_first_dialog() {
    let iso = image("debian-installer-i386.iso");
    let args = ["--cdrom", iso.to_str().unwrap(), "--boot", "d"];
    let (code, serial, _, screen) =
        boot_until_screen("debian-installer", &args, "Select a language", "150");
    assert_eq!(code, 0, "no language dialog:\n{screen}\nserial:\n{serial}");
    assert!(serial.contains("Run /init as init process"), "{serial}");
    assert!(!serial.contains("Kernel panic"), "{serial}");
}

#[test]
fn isolinux_cd_boots_on_our_bios() {
    let iso = image("linux-amd64.iso");
    let (code, serial, _, _) = boot(
        "isolinux",
        &[
            "--cdrom",
            iso.to_str().unwrap(),
            "--boot",
            "d",
            "--until-serial",
            "AERO-BOOT-DONE",
            "--timeout",
            "120",
        ],
    );
    assert_eq!(code, 0);
    assert_linux_amd64_report(&serial);
}
