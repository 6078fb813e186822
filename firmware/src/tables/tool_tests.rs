//! Validation of the generated tables with independent tools: ACPICA's `iasl` and
//! `acpiexec` (Debian `acpica-tools`) and `dmidecode`. Each test is skipped, with a
//! printed reason, when its tool is not installed; CI installs them.

use super::acpi::{AcpiConfig, EcamWindow, PciIrqMode, build_acpi};
use std::path::{Path, PathBuf};
use std::process::Command;

fn tool(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| Path::new(dir).join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        eprintln!("skipping: `{name}` not found in PATH (install acpica-tools / dmidecode)");
    }
    found
}

/// A fresh scratch directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aero-acpi-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn configs() -> Vec<(&'static str, AcpiConfig)> {
    vec![
        ("default", AcpiConfig::default()),
        (
            "smp_direct_floppy",
            AcpiConfig {
                cpu_count: 4,
                pci_irq_mode: PciIrqMode::DirectGsi,
                floppy: true,
                hpet: true,
                pci_mmio64: None,
                pci_ecam: Some(EcamWindow {
                    base: 0xB000_0000,
                    end_bus: 0,
                }),
                ..AcpiConfig::default()
            },
        ),
    ]
}

/// Runs `iasl -d` on `file` and returns the disassembly.
fn disassemble(iasl: &Path, dir: &Path, file: &str) -> String {
    let out = Command::new(iasl)
        .current_dir(dir)
        .arg("-d")
        .arg(file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "iasl -d {file} failed:\n{stdout}\n{stderr}"
    );
    assert!(
        !stderr.contains("Error") && !stdout.contains("Error    "),
        "iasl -d {file}:\n{stdout}\n{stderr}"
    );
    let dsl = Path::new(file).with_extension("dsl");
    std::fs::read_to_string(dir.join(dsl)).unwrap()
}

#[test]
fn dsdt_disassembles_and_recompiles_cleanly() {
    let Some(iasl) = tool("iasl") else { return };
    for (label, config) in configs() {
        let dir = scratch(&format!("dsdt-{label}"));
        let tables = build_acpi(&config, 0x7FE_0000).unwrap();
        std::fs::write(dir.join("dsdt.aml"), tables.find(b"DSDT").unwrap()).unwrap();
        let dsl = disassemble(&iasl, &dir, "dsdt.aml");
        for expected in [
            "Device (PCI0)",
            "EisaId (\"PNP0A03\")",
            "Device (ISA)",
            "Device (RTC)",
            "EisaId (\"PNP0B00\")",
            "Device (KBD)",
            "EisaId (\"PNP0303\")",
            "Device (MOU)",
            "EisaId (\"PNP0F13\")",
            "Device (COM1)",
            "EisaId (\"PNP0501\")",
            "EisaId (\"PNP0000\")",
            "EisaId (\"PNP0100\")",
            "Device (HPET)",
            "EisaId (\"PNP0103\")",
            "Device (LNKA)",
            "Device (LNKD)",
            "Device (LNKS)",
            "EisaId (\"PNP0200\")",
            "Method (_PIC, 1",
            "Name (_S5, Package (0x04)",
            "Name (_PRT, Package (0x7C)",
            "OperationRegion (PIRQ, PCI_Config, 0x60, 0x04)",
            "WordBusNumber (ResourceProducer, MinFixed, MaxFixed, PosDecode,",
            "DWordIO (ResourceProducer, MinFixed, MaxFixed, PosDecode, EntireRange,",
            "0xFEBFFFFF",
            "Memory32Fixed (ReadWrite,",
            "Interrupt (ResourceConsumer, Level, ActiveHigh, Shared, ,, )",
            "Processor (CP00, 0x00, 0x00000000, 0x00)",
        ] {
            let expected = if label != "default" && expected.starts_with("Name (_PRT") {
                "Method (_PRT, 0"
            } else {
                expected
            };
            assert!(
                dsl.contains(expected),
                "{label}: `{expected}` missing from\n{dsl}"
            );
        }
        if config.pci_mmio64.is_some() {
            assert!(
                dsl.contains("QWordMemory (ResourceProducer"),
                "{label}: no 64-bit window"
            );
        }
        // Without iasl's `// ...` remarks and line breaks, to match whole resource lists.
        let bare = flat(
            &dsl.lines()
                .map(|l| l.split("//").next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n"),
        );
        if let Some(ecam) = config.pci_ecam {
            // The window is a motherboard resource, and the bridge's bus range matches it.
            let reservation = format!(
                "Device (ECAM) {{ Name (_HID, EisaId (\"PNP0C02\") /* PNP Motherboard \
                 Resources */) Name (_UID, 0x02) Name (_STA, 0x0F) Name (_CRS, \
                 ResourceTemplate () {{ Memory32Fixed (ReadWrite, 0x{:08X}, 0x{:08X}, ) }}) }}",
                ecam.base,
                ecam.size()
            );
            assert!(
                bare.contains(&reservation),
                "{label}: `{reservation}` in\n{bare}"
            );
            let bus_range = format!(
                "WordBusNumber (ResourceProducer, MinFixed, MaxFixed, PosDecode, 0x0000, \
                 0x0000, 0x{:04X}, 0x0000, 0x{:04X}, ,, )",
                ecam.end_bus,
                u16::from(ecam.end_bus) + 1
            );
            assert!(
                bare.contains(&bus_range),
                "{label}: `{bus_range}` in\n{bare}"
            );
        } else {
            assert!(!bare.contains("Device (ECAM)"), "{label}");
        }
        if config.floppy {
            assert!(dsl.contains("EisaId (\"PNP0700\")") && dsl.contains("Device (GSIA)"));
            assert!(dsl.contains("Processor (CP03, 0x03"));
        }
        // Recompiling the disassembly proves the namespace is self-consistent (every
        // referenced name exists, method argument counts match).
        let out = Command::new(&iasl)
            .current_dir(&dir)
            .args(["-p", "recompiled", "dsdt.dsl"])
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && text.contains(" 0 Errors"),
            "{label}: recompile failed:\n{text}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn data_tables_disassemble_with_expected_fields() {
    let Some(iasl) = tool("iasl") else { return };
    let dir = scratch("data");
    let tables = build_acpi(&AcpiConfig::default(), 0x7FE_0000).unwrap();
    let checks: [(&[u8; 4], &[&str]); 7] = [
        (
            b"FACP",
            &[
                "SCI Interrupt : 0009",
                "SMI Command Port : 000000B2",
                "ACPI Enable Value : F1",
                "PM1A Event Block Address : 0000B000",
                "PM Timer Block Address : 0000B008",
                "RTC Century Index : 32",
                "Reset Register Supported (V2) : 1",
                "Value to cause reset : 06",
            ],
        ),
        (
            b"APIC",
            &[
                "Local Apic Address : FEE00000",
                "PC-AT Compatibility : 1",
                "Interrupt : 00000002",
                "Interrupt Input LINT : 01",
            ],
        ),
        (
            b"HPET",
            &["Hardware Block ID : 8086A201", "Address : 00000000FED00000"],
        ),
        (
            b"MCFG",
            &[
                "Base Address : 00000000E0000000",
                "Segment Group Number : 0000",
                "Start Bus Number : 00",
                "End Bus Number : FF",
            ],
        ),
        (b"XSDT", &["ACPI Table Address 4 :"]),
        (b"RSDT", &["ACPI Table Address 4 :"]),
        (
            b"WAET",
            &["PM timer, one read only : 1", "RTC needs no INT ack : 0"],
        ),
    ];
    for (sig, needles) in checks {
        let file = format!("{}.dat", std::str::from_utf8(sig).unwrap().to_lowercase());
        std::fs::write(dir.join(&file), tables.find(sig).unwrap()).unwrap();
        let dsl = disassemble(&iasl, &dir, &file);
        // Collapse the column padding iasl uses so the needles stay readable.
        let flat: String = dsl
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
            .join("\n");
        for needle in needles {
            let needle = needle.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                flat.contains(&needle),
                "{file}: `{needle}` missing from\n{dsl}"
            );
        }
        assert!(
            !flat.contains("Invalid") && !flat.contains("Incorrect"),
            "{file}:\n{dsl}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs ACPICA's `acpiexec` in batch mode on the DSDT and returns its output.
fn acpiexec(exec: &Path, dir: &Path, commands: &str) -> String {
    let mut files = vec!["dsdt.aml"];
    if dir.join("ssdt.aml").exists() {
        files.push("ssdt.aml");
    }
    let out = Command::new(exec)
        .current_dir(dir)
        .args(["-b", commands])
        .args(files)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "acpiexec failed:\n{text}");
    text
}

/// Whitespace-insensitive view of acpiexec output.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn link_methods_program_the_piix3_route_registers() {
    let Some(exec) = tool("acpiexec") else { return };
    let dir = scratch("exec-links");
    let tables = build_acpi(&AcpiConfig::default(), 0x7FE_0000).unwrap();
    std::fs::write(dir.join("dsdt.aml"), tables.find(b"DSDT").unwrap()).unwrap();
    // acpiexec backs the PCI_Config region with zeroed memory: PRQB starts "enabled, IRQ 0".
    let text = flat(&acpiexec(
        &exec,
        &dir,
        "evaluate \\_SB.LNKB._SRS (89 06 00 09 01 0B 00 00 00 79 00); \
         evaluate \\_SB.PCI0.ISA.PRQB; evaluate \\_SB.LNKB._CRS; evaluate \\_SB.LNKB._STA; \
         evaluate \\_SB.LNKB._DIS; evaluate \\_SB.PCI0.ISA.PRQB; evaluate \\_SB.LNKB._STA; \
         evaluate \\_SB.LNKB._PRS",
    ));
    let expect_in_order = [
        "Evaluating \\_SB.PCI0.ISA.PRQB",
        "[Integer] = 000000000000000B", // _SRS wrote IRQ 11, enabled
        "Evaluating \\_SB.LNKB._CRS",
        "89 06 00 09 01 0B 00 00 00 79 00", // _CRS reports IRQ 11
        "Evaluating \\_SB.LNKB._STA",
        "[Integer] = 000000000000000B", // present, enabled
        "Evaluating \\_SB.PCI0.ISA.PRQB",
        "[Integer] = 000000000000008B", // _DIS set bit 7
        "Evaluating \\_SB.LNKB._STA",
        "[Integer] = 0000000000000009",                    // disabled
        "89 0E 00 09 03 05 00 00 00 0A 00 00 00 0B 00 00", // _PRS {5, 10, 11}
    ];
    let mut at = 0;
    for needle in expect_in_order {
        let found = text[at..]
            .find(needle)
            .unwrap_or_else(|| panic!("`{needle}` not found after {at} in\n{text}"));
        at += found + needle.len();
    }
    assert!(
        !text.contains("AE_"),
        "ACPICA reported an exception:\n{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A test-only SSDT with `\PRTE(n)` returning element `n` of `\_SB.PCI0._PRT` (the
/// whole package is larger than acpiexec's display buffer).
fn prt_probe_ssdt() -> Vec<u8> {
    use super::aml::*;
    let body = method(
        "\\PRTE",
        1,
        false,
        &[ret(deref_of(index(
            call("\\_SB.PCI0._PRT", &[]).unwrap(),
            arg(0),
            no_target(),
        )))],
    )
    .unwrap();
    let mut t = super::acpi::sdt::begin(b"SSDT", 2);
    t.extend_from_slice(body.bytes());
    super::acpi::sdt::finish(t)
}

#[test]
fn prt_follows_the_interrupt_model() {
    let Some(exec) = tool("acpiexec") else { return };
    let dir = scratch("exec-prt");
    let config = AcpiConfig {
        pci_irq_mode: PciIrqMode::DirectGsi,
        ..AcpiConfig::default()
    };
    let tables = build_acpi(&config, 0x7FE_0000).unwrap();
    std::fs::write(dir.join("dsdt.aml"), tables.find(b"DSDT").unwrap()).unwrap();
    std::fs::write(dir.join("ssdt.aml"), prt_probe_ssdt()).unwrap();
    // Element 13 = slot 4 (entries 12..16), pin B: PIRQ (4 + 1 - 1) % 4 = A.
    let pic = flat(&acpiexec(&exec, &dir, "evaluate \\PRTE 13"));
    // Element 0 = slot 1 INTA: the PM function's SCI, in both interrupt models.
    let sci = flat(&acpiexec(
        &exec,
        &dir,
        "evaluate \\PRTE 0; evaluate \\_PIC 1; evaluate \\PRTE 0; evaluate \\_SB.LNKS._CRS",
    ));
    assert_eq!(sci.matches("Name LNKS Device").count(), 2, "{sci}");
    assert!(sci.contains("89 06 00 09 01 09 00 00 00 79 00"), "{sci}");
    let apic = flat(&acpiexec(
        &exec,
        &dir,
        "evaluate \\_PIC 1; evaluate \\PRTE 13; evaluate \\_SB.GSIB._CRS",
    ));
    let entry = "Contains 4 Elements: [Integer] = 000000000004FFFF [Integer] = 0000000000000001";
    assert!(pic.contains(entry) && apic.contains(entry), "{pic}\n{apic}");
    assert!(
        pic.contains("Name LNKA Device") && !pic.contains("GSIA"),
        "PIC mode must route via PIRQ links:\n{pic}"
    );
    assert!(
        apic.contains("Name GSIA Device") && !apic.contains("LNKA"),
        "APIC mode must use GSI links:\n{apic}"
    );
    // GSIB is hard-wired to GSI 17, level, active high, shared.
    assert!(apic.contains("89 06 00 09 01 11 00 00 00 79 00"), "{apic}");
    assert!(
        !pic.contains("AE_") && !apic.contains("AE_"),
        "{pic}\n{apic}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dmidecode_decodes_the_smbios_tables() {
    use super::smbios::{SmbiosConfig, build_smbios};
    let Some(dmidecode) = tool("dmidecode") else {
        return;
    };
    let dir = scratch("dmi");
    // dmidecode's binary dump format: the entry point at file offset 0, whose table
    // address points into the same file (offset 0x20).
    let config = SmbiosConfig {
        cpu_count: 2,
        ram_below_4g: 3 << 30,
        ram_above_4g: 1 << 30,
        cpu_mhz: 2000,
        tables_address: 0x20,
        ..SmbiosConfig::default()
    };
    let t = build_smbios(&config).unwrap();
    let mut file = t.entry_point.to_vec();
    file.resize(0x20, 0);
    file.extend_from_slice(&t.tables);
    std::fs::write(dir.join("dmi.bin"), &file).unwrap();
    let out = Command::new(&dmidecode)
        .arg("--from-dump")
        .arg(dir.join("dmi.bin"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "dmidecode failed:\n{stdout}\n{stderr}"
    );
    assert!(
        !stdout.contains("broken") && !stderr.contains("broken") && !stderr.contains("Invalid"),
        "{stdout}\n{stderr}"
    );
    let flat = flat(&stdout);
    for needle in [
        "SMBIOS 2.8 present.",
        "11 structures occupying",
        "Handle 0x0000, DMI type 0, 24 bytes",
        "Vendor: Aero",
        "Release Date: 11/22/2026",
        "ACPI is supported",
        "System is a virtual machine",
        "Manufacturer: Aero Product Name: Aero PC",
        "Serial Number: AERO-0001",
        "Wake-up Type: Power Switch",
        "Chassis Information Manufacturer: Aero Type: Desktop",
        "Socket Designation: CPU 1",
        "Max Speed: 2000 MHz",
        "64-bit capable",
        "Maximum Capacity: 4 GB",
        "Size: 4 GB Form Factor: DIMM",
        "Starting Address: 0x00100000000 Ending Address: 0x0013FFFFFFF",
        "Status: No errors detected",
        "End Of Table",
    ] {
        assert!(flat.contains(needle), "`{needle}` missing from\n{stdout}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
