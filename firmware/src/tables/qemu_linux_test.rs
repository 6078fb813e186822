//! End-to-end checks on real hardware emulation: boot the host's Linux kernel on
//! `qemu-system-x86_64 -M pc` (i440FX/PIIX, the machine Aero models) with *our* ACPI
//! tables and read the kernel log. Two ways in: loaded straight into guest RAM and found
//! via `acpi_rsdp=`, or handed to SeaBIOS as fw_cfg files with our table-loader script.
//!
//! Ignored by default (a few seconds of TCG, needs a kernel); run with
//! `cargo test -p aero-firmware qemu_linux -- --ignored`. Kernel: `$AERO_TEST_KERNEL` or
//! the newest `/boot/vmlinuz-*`; the initramfs is a static busybox (`/bin/busybox`).
//!
//! QEMU's PIIX4 PM block sits where SeaBIOS programs it (I/O 0x600) instead of Aero's
//! 0xB000, so the FADT's PM1/PM timer addresses are rewritten for this run; everything
//! else (MADT, HPET, DSDT incl. PIRQ links and `_S5`) is used exactly as built.

use super::acpi::loader::build_acpi_loader_files;
use super::acpi::{AcpiConfig, build_acpi};
use super::checksum::fill_checksum;
use std::path::{Path, PathBuf};
use std::process::Command;

const TABLE_BASE: u32 = 0x0F00_0000;
const RSDP_ADDR: u32 = 0x0F0F_FF00;
const QEMU_PM_BASE: u32 = 0x600;

fn kernel() -> Option<PathBuf> {
    if let Some(k) = std::env::var_os("AERO_TEST_KERNEL") {
        return Some(k.into());
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/boot")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("vmlinuz-"))
        })
        .collect();
    found.sort();
    found.pop()
}

/// A minimal "newc" cpio archive.
fn cpio(entries: &[(&str, u32, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    let pad = |out: &mut Vec<u8>| out.resize(out.len().div_ceil(4) * 4, 0);
    let trailer: (&str, u32, &[u8]) = ("TRAILER!!!", 0, &[]);
    for (i, (name, mode, data)) in entries.iter().chain(std::iter::once(&trailer)).enumerate() {
        let fields = [
            i as u32 + 1,
            *mode,
            0,
            0,
            1,
            0,
            data.len() as u32,
            0,
            0,
            0,
            0,
            name.len() as u32 + 1,
            0,
        ];
        out.extend_from_slice(b"070701");
        for f in fields {
            out.extend_from_slice(format!("{f:08X}").as_bytes());
        }
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        pad(&mut out);
        out.extend_from_slice(data);
        pad(&mut out);
    }
    out
}

/// Moves the FADT's PM1a event/control and PM timer blocks to QEMU's PM base.
fn retarget_pm_blocks(blob: &mut [u8], fadt_offset: usize) {
    let fadt = &mut blob[fadt_offset..fadt_offset + 244];
    for (off32, off64, delta) in [(56, 152, 0), (64, 176, 4), (76, 212, 8)] {
        let port = QEMU_PM_BASE + delta;
        fadt[off32..off32 + 4].copy_from_slice(&port.to_le_bytes());
        fadt[off64..off64 + 8].copy_from_slice(&u64::from(port).to_le_bytes());
    }
    fill_checksum(fadt, 0..244, 9);
}

/// Writes an initramfs whose `/init` prints the interrupt table and a marker, then runs
/// `last_command`; boots it with `qemu_args` and returns the serial log. None = skipped.
fn boot_linux(
    dir: &Path,
    qemu_args: &[String],
    append_extra: &str,
    last_command: &str,
) -> Option<String> {
    let (Some(kernel), true) = (kernel(), Path::new("/bin/busybox").exists()) else {
        eprintln!("skipping: needs a kernel in /boot (or $AERO_TEST_KERNEL) and /bin/busybox");
        return None;
    };
    let init = format!(
        "#!/bin/busybox sh\n/bin/busybox mount -t proc proc /proc\n\
         /bin/busybox cat /proc/interrupts\necho AERO-INIT-DONE\n/bin/busybox {last_command}\n"
    );
    let busybox = std::fs::read("/bin/busybox").unwrap();
    let initrd = cpio(&[
        ("bin", 0o040755, &[]),
        ("proc", 0o040755, &[]),
        ("bin/busybox", 0o100755, &busybox),
        ("init", 0o100755, init.as_bytes()),
    ]);
    std::fs::write(dir.join("initrd.cpio"), initrd).unwrap();
    let append = format!("console=ttyS0 panic=-1 loglevel=7 {append_extra}");
    let out = Command::new("timeout")
        .current_dir(dir)
        .args(["120", "qemu-system-x86_64", "-m", "512", "-smp", "2"])
        .args([
            "-display",
            "none",
            "-nodefaults",
            "-serial",
            "stdio",
            "-no-reboot",
        ])
        .arg("-kernel")
        .arg(&kernel)
        .args(["-initrd", "initrd.cpio", "-append", &append])
        .args(qemu_args)
        .output();
    let Ok(out) = out else {
        eprintln!("skipping: could not run qemu-system-x86_64");
        return None;
    };
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aero-qemu-linux-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Checks that every `expected` line is in the log and no ACPI complaint is, apart from
/// lines containing one of `tolerated`.
fn assert_log(log: &str, expected: &[&str], tolerated: &[&str]) {
    for needle in expected {
        assert!(
            log.contains(needle),
            "`{needle}` missing from the guest log:\n{log}"
        );
    }
    for line in log
        .lines()
        .filter(|l| !tolerated.iter().any(|t| l.contains(t)))
    {
        for bad in [
            "ACPI Error",
            "ACPI BIOS Error",
            "ACPI Warning",
            "Kernel panic",
        ] {
            assert!(!line.contains(bad), "`{line}` in the guest log:\n{log}");
        }
    }
}

/// QEMU's `pc` machine has no ECAM window, so neither MCFG nor its reservation, and its
/// PCI hole starts at 0xE0000000.
fn qemu_pc_config() -> AcpiConfig {
    AcpiConfig {
        cpu_count: 2,
        pci_mmio32_base: 0xE000_0000,
        pci_ecam: None,
        ..AcpiConfig::default()
    }
}

#[test]
#[ignore = "boots Linux on QEMU (seconds); run with --ignored"]
fn qemu_linux_accepts_our_acpi_tables() {
    let dir = scratch("direct");
    let config = qemu_pc_config();
    let mut tables = build_acpi(&config, TABLE_BASE).unwrap();
    let fadt = tables
        .tables
        .iter()
        .find(|t| &t.signature == b"FACP")
        .unwrap();
    let fadt_offset = (fadt.address - TABLE_BASE) as usize;
    retarget_pm_blocks(&mut tables.blob, fadt_offset);
    std::fs::write(dir.join("tables.bin"), &tables.blob).unwrap();
    std::fs::write(dir.join("rsdp.bin"), tables.rsdp).unwrap();
    let args = [
        "-M".to_owned(),
        "pc".to_owned(),
        "-device".to_owned(),
        format!("loader,file=tables.bin,addr={TABLE_BASE:#x},force-raw=on"),
        "-device".to_owned(),
        format!("loader,file=rsdp.bin,addr={RSDP_ADDR:#x},force-raw=on"),
    ];
    let append = format!("acpi_rsdp={RSDP_ADDR:#x} memmap=1M${TABLE_BASE:#x}");
    let Some(log) = boot_linux(&dir, &args, &append, "poweroff -f") else {
        return;
    };
    let _ = std::fs::remove_dir_all(&dir);
    assert_log(
        &log,
        &[
            "ACPI: RSDP 0x000000000F0FFF00 000024 (v02 AERO  )",
            "ACPI: FACP 0x",
            "ACPI: WAET 0x",
            "ACPI: HPET id: 0x8086a201 base: 0xfed00000",
            "ACPI: INT_SRC_OVR (bus 0 bus_irq 9 global_irq 9 high level)",
            "ACPI: Interpreter enabled",
            "ACPI: Using IOAPIC for interrupt routing",
            "ACPI: PCI Root Bridge [PCI0] (domain 0000 [bus 00-ff])",
            "root bus resource [mem 0xe0000000-0xfebfffff window]",
            "Interrupt link LNKA configured for IRQ",
            "smp: Brought up 1 node, 2 CPUs",
            "hpet0: at MMIO 0xfed00000",
            "9-fasteoi   acpi",
            "AERO-INIT-DONE",
            "ACPI: PM: Preparing to enter system sleep state S5",
            "reboot: Power down",
        ],
        &[],
    );
}

/// SeaBIOS runs our `etc/table-loader` script (QEMU's own ACPI generation is switched off
/// with `acpi=off`, which also removes QEMU's PM device, so there is no S5 here: the
/// guest ends with a reset through the FADT reset register instead).
#[test]
#[ignore = "boots Linux on QEMU (seconds); run with --ignored"]
fn seabios_installs_our_tables_from_the_loader_script() {
    let dir = scratch("fw-cfg");
    let files = build_acpi_loader_files(&qemu_pc_config()).unwrap();
    let mut args = vec!["-M".to_owned(), "pc,acpi=off".to_owned()];
    for (i, (name, data)) in files.files().iter().enumerate() {
        let file = format!("fwcfg{i}.bin");
        std::fs::write(dir.join(&file), data).unwrap();
        args.extend(["-fw_cfg".to_owned(), format!("name={name},file={file}")]);
    }
    let Some(log) = boot_linux(&dir, &args, "reboot=acpi", "reboot -f") else {
        return;
    };
    let _ = std::fs::remove_dir_all(&dir);
    assert_log(
        &log,
        &[
            "(v02 AERO  )",
            "ACPI: DSDT 0x",
            "ACPI: HPET id: 0x8086a201 base: 0xfed00000",
            "ACPI: Interpreter enabled",
            "ACPI: PCI Root Bridge [PCI0] (domain 0000 [bus 00-ff])",
            "smp: Brought up 1 node, 2 CPUs",
            "AERO-INIT-DONE",
            "reboot: Restarting system",
        ],
        // Without QEMU's PM device the PM1 enable register reads as open bus.
        &["Could not disable RealTimeClock events"],
    );
}
