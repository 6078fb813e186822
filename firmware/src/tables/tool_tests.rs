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
        let text = output_text(&out);
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

/// `iasl -d` of every table we generate, in every configuration, reports no error and
/// no warning (its remarks are listed on stderr for the record). (iasl 20200925 does not
/// take an RSDP on its own; `rsdp.rs` checks that one.)
#[test]
fn every_table_disassembles_without_errors_or_warnings() {
    let Some(iasl) = tool("iasl") else { return };
    for (label, config) in configs() {
        let dir = scratch(&format!("all-{label}"));
        let tables = build_acpi(&config, 0x7FE_0000).unwrap();
        let mut files = Vec::new();
        for t in &tables.tables {
            let sig = std::str::from_utf8(&t.signature).unwrap().to_lowercase();
            let ext = if sig == "dsdt" { "aml" } else { "dat" };
            files.push((
                format!("{sig}.{ext}"),
                tables.find(&t.signature).unwrap().to_vec(),
            ));
        }
        assert!(files.len() >= 7, "{label}: {} tables", files.len());
        for (file, bytes) in files {
            std::fs::write(dir.join(&file), bytes).unwrap();
            let out = Command::new(&iasl)
                .current_dir(&dir)
                .args(["-d", &file])
                .output()
                .unwrap();
            let text = output_text(&out);
            assert!(out.status.success(), "{label} {file}:\n{text}");
            let dsl =
                std::fs::read_to_string(dir.join(Path::new(&file).with_extension("dsl"))).unwrap();
            for (what, body) in [("iasl", text.as_str()), ("dsl", dsl.as_str())] {
                for line in body.lines() {
                    let l = line.to_ascii_lowercase();
                    let complaint = (l.contains("error") && !l.contains("0 errors"))
                        || (l.contains("warning") && !l.contains("0 warnings"))
                        || l.contains("invalid")
                        || l.contains("**** ");
                    assert!(!complaint, "{label} {file} ({what}): {line}\n{text}");
                    if l.contains("remark") && !l.contains("0 remarks") {
                        eprintln!("{label} {file}: {line}");
                    }
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A finished tool's stdout followed by its stderr.
fn output_text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The AML files in `dir` acpiexec loads: the DSDT and, when a test wrote one, an SSDT.
fn aml_files(dir: &Path) -> Vec<&'static str> {
    let mut files = vec!["dsdt.aml"];
    if dir.join("ssdt.aml").exists() {
        files.push("ssdt.aml");
    }
    files
}

/// Runs ACPICA's `acpiexec` in batch mode on the DSDT and returns its output.
fn acpiexec(exec: &Path, dir: &Path, commands: &str) -> String {
    let out = Command::new(exec)
        .current_dir(dir)
        .args(["-b", commands])
        .args(aml_files(dir))
        .output()
        .unwrap();
    let text = output_text(&out);
    assert!(out.status.success(), "acpiexec failed:\n{text}");
    text
}

/// Runs acpiexec's commands from stdin (a batch line is limited to 1023 characters),
/// then `quit`; returns its output.
fn acpiexec_script(exec: &Path, dir: &Path, commands: &[String]) -> String {
    use std::io::Write;
    let mut child = Command::new(exec)
        .current_dir(dir)
        .args(aml_files(dir))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut script = commands.join("\n");
    script.push_str("\nquit\n");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = output_text(&out);
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
/// whole package is larger than acpiexec's display buffer) and `\PRTN` its size.
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
    let count = method(
        "\\PRTN",
        0,
        false,
        &[ret(size_of(call("\\_SB.PCI0._PRT", &[]).unwrap()))],
    )
    .unwrap();
    let mut t = super::acpi::sdt::begin(b"SSDT", 2);
    t.extend_from_slice(body.bytes());
    t.extend_from_slice(count.bytes());
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

/// One `evaluate` as acpiexec printed it.
#[derive(Clone, Debug, PartialEq)]
enum Evaluated {
    Nothing,
    Integer(u64),
    Buffer(Vec<u8>),
    /// Whitespace-collapsed text of the package.
    Package(String),
    Failed(String),
}

/// Every evaluation in acpiexec's output, in order: (path, result).
fn evaluations(text: &str) -> Vec<(String, Evaluated)> {
    let mut out = Vec::new();
    for chunk in text.split("\nEvaluating ").skip(1) {
        let (path, body) = chunk.split_once('\n').unwrap_or((chunk, ""));
        // Up to the next command's prompt when commands come from stdin.
        let body = body.split("\n- ").next().unwrap_or(body);
        let value = if body.contains(" failed with status ") || body.contains("AE_") {
            Evaluated::Failed(body.to_string())
        } else if body.contains("No object was returned") {
            Evaluated::Nothing
        } else if let Some(at) = body.find("[Package]") {
            Evaluated::Package(flat(&body[at..]))
        } else if body.contains("[Buffer]") {
            // "0000: 89 06 00 ...  // text" lines, the first one after "[Buffer] ... =".
            let bytes = body
                .lines()
                .filter_map(|l| l.split_once("//").map(|(hex, _)| hex))
                .filter_map(|hex| hex.rsplit_once(": ").map(|(_, b)| b))
                .flat_map(|b| b.split_whitespace())
                .map(|b| u8::from_str_radix(b, 16).unwrap())
                .collect();
            Evaluated::Buffer(bytes)
        } else if let Some((_, v)) = body.split_once("[Integer] = ") {
            let hex = v.split_whitespace().next().unwrap_or_default();
            Evaluated::Integer(u64::from_str_radix(hex, 16).unwrap())
        } else {
            Evaluated::Failed(format!("unrecognised output: {body}"))
        };
        out.push((path.trim().to_string(), value));
    }
    out
}

/// The interrupts a resource template names (IRQ and Extended Interrupt descriptors),
/// after checking that it is well formed: every descriptor inside the buffer, ending with
/// an End Tag whose checksum byte is zero or sums the template to zero.
fn template_irqs(buf: &[u8]) -> Result<Vec<u32>, String> {
    let mut irqs = Vec::new();
    let mut at = 0;
    while at < buf.len() {
        let tag = buf[at];
        let (name, data, next) = if tag & 0x80 == 0 {
            let len = usize::from(tag & 7);
            ((tag >> 3) & 0xF, at + 1, at + 1 + len)
        } else {
            let len = usize::from(u16::from_le_bytes([
                *buf.get(at + 1).ok_or("cut large item")?,
                *buf.get(at + 2).ok_or("cut large item")?,
            ]));
            (tag, at + 3, at + 3 + len)
        };
        let body = buf
            .get(data..next)
            .ok_or(format!("descriptor at {at} runs past the end"))?;
        match name {
            // End Tag: last, checksum zero or summing the template to zero.
            0xF => {
                let sum = buf.iter().fold(0u8, |s, b| s.wrapping_add(*b));
                if next != buf.len() || body.len() != 1 || (body[0] != 0 && sum != 0) {
                    return Err(format!("bad end tag at {at}"));
                }
                return Ok(irqs);
            }
            // IRQ: a 16-bit mask.
            0x4 => {
                let mask = u16::from_le_bytes([body[0], body[1]]);
                irqs.extend((0..16).filter(|i| mask & (1 << i) != 0));
            }
            0x89 => {
                let count = usize::from(body[1]);
                let list = body.get(2..2 + 4 * count).ok_or("short interrupt list")?;
                irqs.extend(
                    list.chunks(4)
                        .map(|c| u32::from_le_bytes(c.try_into().unwrap())),
                );
            }
            _ => {}
        }
        at = next;
    }
    Err("no end tag".into())
}

/// `\_SB.LNKA._CRS` → `\_SB.LNKA`.
fn parent(path: &str) -> &str {
    path.rsplit_once('.').map_or(path, |(p, _)| p)
}

/// acpiexec (a second ACPI interpreter next to Linux's) evaluates every `_STA`, `_CRS`,
/// `_PRS`, `_PRT`, `_S5`/`_S4` of our DSDT in PIC mode (`_PIC(0)`) and APIC mode
/// (`_PIC(1)`), in every configuration, without one AE_ exception; every resource
/// template is well formed, every `_PRT` entry names a link device; and every interrupt
/// link takes every IRQ of its `_PRS` through `_SRS` and reports it back in `_CRS`, then
/// `_DIS` disables it.
#[test]
fn every_pnp_object_evaluates_in_pic_and_apic_mode() {
    let Some(exec) = tool("acpiexec") else { return };
    for (label, config) in configs() {
        let dir = scratch(&format!("exec-all-{label}"));
        let tables = build_acpi(&config, 0x7FE_0000).unwrap();
        std::fs::write(dir.join("dsdt.aml"), tables.find(b"DSDT").unwrap()).unwrap();
        std::fs::write(dir.join("ssdt.aml"), prt_probe_ssdt()).unwrap();
        let names = [
            "_STA", "_CRS", "_PRS", "_SRS", "_DIS", "_PRT", "_PIC", "_S5_", "_S4_",
        ];
        let find: Vec<String> = names.iter().map(|n| format!("find {n}")).collect();
        let found_text = acpiexec_script(&exec, &dir, &find);
        let found: Vec<String> = found_text
            .lines()
            .map(str::split_whitespace)
            .filter_map(|mut words| {
                let path = words.next()?;
                let kind = words.next()?;
                (path.starts_with('\\')
                    && ["Method", "Integer", "Buffer", "Package"].contains(&kind))
                .then(|| path.to_string())
            })
            .filter(|p| p != "\\PRTE" && p != "\\PRTN")
            .collect();
        let has = |p: &str| found.iter().any(|f| f == p);
        let mut links: Vec<&str> = vec!["\\_SB.LNKA", "\\_SB.LNKB", "\\_SB.LNKC", "\\_SB.LNKD"];
        if config.pci_irq_mode == PciIrqMode::DirectGsi {
            links.extend(["\\_SB.GSIA", "\\_SB.GSIB", "\\_SB.GSIC", "\\_SB.GSID"]);
        }
        links.push("\\_SB.LNKS");
        for p in [
            "\\_PIC",
            "\\_S5",
            "\\_S4",
            "\\_SB.PCI0._PRT",
            "\\_SB.PCI0._CRS",
        ] {
            assert!(has(p), "{label}: {p} missing from {found:?}");
        }
        for link in &links {
            for m in ["_CRS", "_PRS", "_SRS", "_DIS"] {
                assert!(has(&format!("{link}.{m}")), "{label}: {link}.{m} missing");
            }
        }
        let by_suffix = |suffix: &str| -> Vec<&String> {
            found.iter().filter(|p| p.ends_with(suffix)).collect()
        };
        let mut prs: std::collections::BTreeMap<String, Vec<u8>> = Default::default();
        for mode in [0, 1] {
            // Read-only objects, then the _PRT entries one by one.
            let mut cmds = vec![format!("evaluate \\_PIC {mode}")];
            for suffix in ["._STA", "._CRS", "._PRS", "\\_S5", "\\_S4"] {
                cmds.extend(by_suffix(suffix).iter().map(|p| format!("evaluate {p}")));
            }
            cmds.push("evaluate \\PRTN".into());
            let text = acpiexec_script(&exec, &dir, &cmds);
            let evals = evaluations(&text);
            assert!(!text.contains("AE_"), "{label} mode {mode}:\n{text}");
            let mut entries = 0;
            for (path, value) in &evals {
                let what = format!("{label} mode {mode}: {path} = {value:?}");
                match (path.rsplit('.').next().unwrap_or(path), value) {
                    ("\\_PIC", Evaluated::Nothing) => {}
                    ("_STA", Evaluated::Integer(v)) => {
                        assert!([0x09, 0x0B, 0x0F].contains(v), "{what}")
                    }
                    ("_CRS" | "_PRS", Evaluated::Buffer(b)) => {
                        let irqs = template_irqs(b).unwrap_or_else(|e| panic!("{what}: {e}"));
                        if path.ends_with("_PRS") {
                            assert!(!irqs.is_empty(), "{what}");
                            prs.insert(parent(path).to_string(), b.clone());
                        }
                    }
                    // SLP_TYP 0 for S5 and 2 for S4, as the PM device takes them.
                    ("\\_S5" | "\\_S4", Evaluated::Package(p)) => {
                        let typ = if path == "\\_S5" { 0 } else { 2 };
                        let head = format!(
                            "[Package] Contains 4 Elements: [Integer] = {typ:016X} [Integer] = {typ:016X}"
                        );
                        assert!(p.starts_with(&head), "{what}")
                    }
                    ("\\PRTN", Evaluated::Integer(n)) => entries = *n,
                    _ => panic!("unexpected {what}"),
                }
            }
            assert!(entries >= 4 * 30, "{label}: {entries} _PRT entries");
            let cmds: Vec<String> = std::iter::once(format!("evaluate \\_PIC {mode}"))
                .chain((0..entries).map(|i| format!("evaluate \\PRTE {i}")))
                .collect();
            let text = acpiexec_script(&exec, &dir, &cmds);
            assert!(!text.contains("AE_"), "{label} mode {mode}:\n{text}");
            let evals = evaluations(&text);
            assert_eq!(evals.len() as u64, entries + 1);
            for (i, (_, value)) in evals.iter().skip(1).enumerate() {
                let Evaluated::Package(p) = value else {
                    panic!("{label} mode {mode}: _PRT[{i}] = {value:?}")
                };
                let slot = i / 4 + 1;
                let head = format!(
                    "[Package] Contains 4 Elements: [Integer] = {:016X} [Integer] = {:016X}",
                    (slot << 16) | 0xFFFF,
                    i % 4
                );
                let link = p.split("Name ").nth(1).and_then(|r| r.split(' ').next());
                assert!(
                    p.starts_with(&head)
                        && link.is_some_and(|l| links.contains(&format!("\\_SB.{l}").as_str()))
                        && p.ends_with("Device [Integer] = 0000000000000000"),
                    "{label} mode {mode}: _PRT[{i}] = {p}"
                );
            }
            // Every IRQ choice of every link: _SRS, then _CRS and _STA; then _DIS.
            let mut cmds = vec![format!("evaluate \\_PIC {mode}")];
            let mut expect = vec![];
            for link in &links {
                let template = &prs[*link];
                let irqs = template_irqs(template).unwrap();
                let programmable = has(&format!("{link}._STA"));
                for &irq in &irqs {
                    // The _PRS descriptor narrowed to one interrupt.
                    let mut choice = vec![0x89, 6, 0, template[3], 1];
                    choice.extend_from_slice(&irq.to_le_bytes());
                    choice.extend_from_slice(&[0x79, 0]);
                    let hex: Vec<String> = choice.iter().map(|b| format!("{b:02X}")).collect();
                    cmds.push(format!("evaluate {link}._SRS ({})", hex.join(" ")));
                    cmds.push(format!("evaluate {link}._CRS"));
                    expect.push((format!("{link}._CRS"), vec![irq]));
                    if programmable {
                        cmds.push(format!("evaluate {link}._STA"));
                    }
                }
                cmds.push(format!("evaluate {link}._DIS"));
                cmds.push(format!("evaluate {link}._CRS"));
                if programmable {
                    cmds.push(format!("evaluate {link}._STA"));
                    expect.push((format!("{link}._CRS"), vec![0]));
                } else {
                    // Hard-wired: _DIS changes nothing.
                    expect.push((format!("{link}._CRS"), irqs.clone()));
                }
            }
            let text = acpiexec_script(&exec, &dir, &cmds);
            assert!(!text.contains("AE_"), "{label} mode {mode}:\n{text}");
            let evals = evaluations(&text);
            assert_eq!(evals.len(), cmds.len(), "{text}");
            let crs: Vec<(String, Vec<u32>)> = evals
                .iter()
                .filter_map(|(p, v)| match v {
                    Evaluated::Buffer(b) => Some((p.clone(), template_irqs(b).unwrap())),
                    _ => None,
                })
                .collect();
            assert_eq!(crs, expect, "{label} mode {mode}");
            // _STA: enabled after each _SRS, disabled after the _DIS.
            for (i, (path, value)) in evals.iter().enumerate() {
                if path.ends_with("._STA") {
                    let after_dis = evals[i - 2].0.ends_with("._DIS");
                    let want = if after_dis { 0x09 } else { 0x0B };
                    assert_eq!(
                        value,
                        &Evaluated::Integer(want),
                        "{label} mode {mode}: {path}"
                    );
                }
            }
        }
        eprintln!("{label}: {} objects evaluated: {found:?}", found.len());
        let _ = std::fs::remove_dir_all(&dir);
    }
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
