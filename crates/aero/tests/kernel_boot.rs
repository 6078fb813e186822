//! Direct kernel boot (`--kernel/--initrd/--append`): the Debian kernels and busybox
//! initramfs that `tests/images/build.sh` also puts on the boot disks, loaded by our BIOS
//! at INT 19h without a disk, boot loader or boot menu.

mod common;
use common::*;
use std::path::PathBuf;
use std::process::Command;

const CMDLINE: &str = LINUX_CMDLINE;
/// What our BIOS prints on the debug console for each way in.
const BZIMAGE_BOOT: &str = "Booting Linux kernel (direct boot)";
const PVH_BOOT: &str = "Booting Linux vmlinux (direct boot, PVH entry)";

/// Boots `kernel` + `initrd` headless to the init's last report line; returns (exit code,
/// serial output, debugcon output).
fn direct_boot(
    test: &str,
    kernel: &std::path::Path,
    initrd: &str,
    extra: &[&str],
) -> (i32, String, String) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(test);
    std::fs::create_dir_all(&dir).unwrap();
    let serial = dir.join("serial.txt");
    let debugcon = dir.join("debugcon.txt");
    let initrd = image(initrd);
    let append = format!("{CMDLINE} aero.direct=1");
    let mut args = vec![
        "headless",
        "--kernel",
        kernel.to_str().unwrap(),
        "--initrd",
        initrd.to_str().unwrap(),
        "--append",
        &append,
        "--serial",
        serial.to_str().unwrap(),
        "--debugcon",
        debugcon.to_str().unwrap(),
        "--until-serial",
        "AERO-BOOT-DONE",
        "--timeout",
        "120",
    ];
    args.extend_from_slice(extra);
    let out = Command::new(env!("CARGO_BIN_EXE_aero"))
        .args(&args)
        .output()
        .expect("run aero");
    let code = out.status.code().unwrap_or(-1);
    eprintln!(
        "aero {args:?} -> {code}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read =
        |p: &PathBuf| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    (code, read(&serial), read(&debugcon))
}

/// `entered` is the BIOS's message for the expected way in ([`BZIMAGE_BOOT`] or [`PVH_BOOT`]).
fn assert_booted_directly(serial: &str, debugcon: &str, machine: &str, entered: &str) {
    assert!(
        debugcon.contains(entered),
        "our BIOS did not boot the kernel as {entered:?}: {debugcon}"
    );
    assert!(!debugcon.contains("Booting from"), "{debugcon}");
    for line in [
        "AERO-BOOT-OK".to_string(),
        format!("AERO-UNAME-M={machine}"),
        "AERO-ACPI=yes".to_string(),
        "AERO-IOAPIC=yes".to_string(),
        // The command line reached the kernel whole.
        format!("AERO-CMDLINE={CMDLINE} aero.direct=1"),
    ] {
        assert!(serial.contains(&line), "missing {line:?} in:\n{serial}");
    }
    // The kernel found our loader's initrd and the BIOS's memory map.
    for log in [
        "Freeing initrd memory",
        "BIOS-e820: [mem 0x0000000000100000-",
        "Run /init as init process",
    ] {
        assert!(serial.contains(log), "kernel log lacks {log:?}:\n{serial}");
    }
}

#[test]
fn amd64_kernel_boots_directly() {
    let (code, serial, debugcon) = direct_boot(
        "kboot-amd64",
        &image("vmlinuz-amd64"),
        "initrd-amd64.img",
        &[],
    );
    assert_eq!(code, 0);
    assert_booted_directly(&serial, &debugcon, "x86_64", BZIMAGE_BOOT);
}

#[test]
fn i386_kernel_boots_directly() {
    let (code, serial, debugcon) =
        direct_boot("kboot-i386", &image("vmlinuz-i386"), "initrd-i386.img", &[]);
    assert_eq!(code, 0);
    assert_booted_directly(&serial, &debugcon, "i686", BZIMAGE_BOOT);
}

#[test]
fn bogus_kernels_are_one_plain_error() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kboot-bogus");
    std::fs::create_dir_all(&dir).unwrap();
    let truncated = dir.join("truncated-vmlinuz");
    let whole = std::fs::read(image("vmlinuz-amd64")).unwrap();
    std::fs::write(&truncated, &whole[..4096]).unwrap();
    let initrd = image("initrd-amd64.img");
    for (kernel, needle) in [
        (truncated.clone(), "larger than 32 KiB or than the file"),
        (initrd.clone(), "no 'HdrS' setup header"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_aero"))
            .args([
                "headless",
                "--kernel",
                kernel.to_str().unwrap(),
                "--timeout",
                "1",
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(needle), "{err}");
    }
}

/// The same kernel uncompressed: our BIOS enters its PVH entry with the memory map,
/// initrd and command line in an hvm_start_info, and the kernel skips decompressing
/// itself (1.6 instead of 6.1 G guest instructions to the report).
#[test]
fn amd64_vmlinux_boots_through_its_pvh_entry() {
    let vmlinux = amd64_vmlinux();
    let (code, serial, debugcon) = direct_boot("kboot-pvh", &vmlinux, "initrd-amd64.img", &[]);
    assert_eq!(code, 0);
    assert_booted_directly(&serial, &debugcon, "x86_64", PVH_BOOT);
    // The kernel read our E820 map and the RSDP from the start info.
    for log in [
        "BIOS-e820: [mem 0x00000000e0000000-0x00000000efffffff] reserved",
        "ACPI: RSDP 0x00000000000FC000",
    ] {
        assert!(serial.contains(log), "kernel log lacks {log:?}:\n{serial}");
    }
}
