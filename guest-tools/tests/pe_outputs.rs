//! Builds the Windows drivers with `guest-tools/build.sh` (mingw-w64) and checks the PE
//! files: machine, subsystem, entry point, exports (x86 undecorated), imports limited to
//! what Windows 7 has (kernel images import only ntoskrnl/hal/dxgkrnl), determinism.

use std::path::PathBuf;
use std::sync::OnceLock;

use aero_guest_tools::pe::{self, PeInfo};

mod common;

fn build_once() -> &'static PathBuf {
    static OUT: OnceLock<PathBuf> = OnceLock::new();
    OUT.get_or_init(|| common::build_drivers("a"))
}

fn parse(rel: &str) -> PeInfo {
    let path = build_once().join(rel);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    pe::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn imports_of(info: &PeInfo, dll: &str) -> Vec<String> {
    info.imports
        .iter()
        .filter(|i| i.dll.eq_ignore_ascii_case(dll))
        .flat_map(|i| i.functions.clone())
        .collect()
}

/// APIs introduced after Windows 7 that a careless toolchain could pull in.
const NEWER_THAN_WIN7: &[&str] = &[
    "GetSystemTimePreciseAsFileTime",
    "CreateFile2",
    "InitializeSynchronizationBarrier",
    "WaitOnAddress",
    "WakeByAddressSingle",
    "GetCurrentThreadStackLimits",
    "SetThreadDescription",
];

fn check_user_mode(info: &PeInfo, what: &str) {
    for dll in info.imported_dlls() {
        assert!(
            !dll.starts_with("api-ms-win-"),
            "{what} imports {dll} (no API sets on Win7)"
        );
        assert!(
            ["kernel32.dll", "msvcrt.dll", "user32.dll", "gdi32.dll"].contains(&dll.as_str()),
            "{what} imports unexpected {dll}"
        );
    }
    for imp in &info.imports {
        for f in &imp.functions {
            assert!(
                !NEWER_THAN_WIN7.contains(&f.as_str()),
                "{what} imports {f}, newer than Windows 7"
            );
        }
    }
}

#[test]
fn kernel_driver_is_a_native_image_importing_only_kernel_modules() {
    for (rel, machine) in [
        ("x86/aerogpu/aerogpu.sys", pe::MACHINE_I386),
        ("amd64/aerogpu/aerogpu.sys", pe::MACHINE_AMD64),
    ] {
        let info = parse(rel);
        assert_eq!(info.machine, machine, "{rel}");
        assert_eq!(info.is_pe32_plus, machine == pe::MACHINE_AMD64, "{rel}");
        assert_eq!(info.subsystem, pe::SUBSYSTEM_NATIVE, "{rel}");
        assert_ne!(
            info.entry_point_rva, 0,
            "{rel}: DriverEntry must be the entry point"
        );
        // The kernel always rebases drivers: relocations must not be stripped, and the x86
        // image (absolute addresses) must carry them. x64 code here is all RIP-relative,
        // so ld may legitimately emit no fixups at all.
        assert_eq!(
            info.characteristics & 0x0001,
            0,
            "{rel}: IMAGE_FILE_RELOCS_STRIPPED"
        );
        if machine == pe::MACHINE_I386 {
            assert!(info.relocation_bytes > 0, "{rel}: no base relocations");
        }
        assert!(
            (info.major_subsystem_version, info.minor_subsystem_version) <= (6, 1),
            "{rel}"
        );
        for dll in info.imported_dlls() {
            assert!(
                ["ntoskrnl.exe", "hal.dll", "dxgkrnl.sys"].contains(&dll.as_str()),
                "{rel} imports {dll}"
            );
        }
        assert_eq!(
            imports_of(&info, "dxgkrnl.sys"),
            vec!["DxgkInitialize".to_string()],
            "{rel}"
        );
        let nt = imports_of(&info, "ntoskrnl.exe");
        for f in [
            "MmMapIoSpace",
            "MmAllocateContiguousMemory",
            "ExAllocatePoolWithTag",
        ] {
            assert!(nt.iter().any(|n| n == f), "{rel} lacks {f}: {nt:?}");
        }
        assert!(info.exports.is_empty(), "{rel} exports {:?}", info.exports);
    }
}

#[test]
fn umd_dlls_export_the_four_entry_points_undecorated() {
    for (rel, machine) in [
        ("x86/aerogpu/aerogpu_d3d9.dll", pe::MACHINE_I386),
        ("amd64/aerogpu/aerogpu_d3d9_x64.dll", pe::MACHINE_AMD64),
    ] {
        let info = parse(rel);
        assert_eq!(info.machine, machine, "{rel}");
        assert!(info.is_dll(), "{rel}");
        assert_eq!(info.subsystem, pe::SUBSYSTEM_WINDOWS_GUI, "{rel}");
        let mut exports = info.exports.clone();
        exports.sort();
        assert_eq!(
            exports,
            [
                "OpenAdapter",
                "OpenAdapter2",
                "OpenAdapterFromHdc",
                "OpenAdapterFromLuid"
            ],
            "{rel}: exactly the four entry points, no stdcall decoration"
        );
        check_user_mode(&info, rel);
        assert!(
            !info
                .imported_dlls()
                .iter()
                .any(|d| d.starts_with("libstdc++") || d.starts_with("libgcc")),
            "{rel}"
        );
    }
}

#[test]
fn dbgctl_is_a_console_program_using_the_d3dkmt_thunks() {
    for (rel, machine) in [
        ("x86/aerogpu/aerogpu_dbgctl.exe", pe::MACHINE_I386),
        ("amd64/aerogpu/aerogpu_dbgctl.exe", pe::MACHINE_AMD64),
    ] {
        let info = parse(rel);
        assert_eq!(info.machine, machine, "{rel}");
        assert!(!info.is_dll(), "{rel}");
        assert_eq!(info.subsystem, pe::SUBSYSTEM_WINDOWS_CUI, "{rel}");
        let gdi = imports_of(&info, "gdi32.dll");
        for f in [
            "D3DKMTOpenAdapterFromHdc",
            "D3DKMTEscape",
            "D3DKMTCloseAdapter",
        ] {
            assert!(gdi.iter().any(|n| n == f), "{rel} lacks {f}: {gdi:?}");
        }
        check_user_mode(&info, rel);
    }
}

#[test]
fn every_binary_carries_an_authenticode_signature_and_the_cert_ships() {
    for rel in [
        "x86/aerogpu/aerogpu.sys",
        "amd64/aerogpu/aerogpu.sys",
        "x86/aerogpu/aerogpu_d3d9.dll",
        "amd64/aerogpu/aerogpu_d3d9.dll",
        "amd64/aerogpu/aerogpu_d3d9_x64.dll",
        "x86/aerogpu/aerogpu_dbgctl.exe",
        "amd64/aerogpu/aerogpu_dbgctl.exe",
    ] {
        assert!(parse(rel).certificate_bytes > 0, "{rel} is not signed");
    }
    let cer = std::fs::read(build_once().join("certs/aero-test.cer")).unwrap();
    assert_eq!(cer.first(), Some(&0x30), "DER certificate");
    assert!(
        !build_once().join("certs/aero-test.key").exists(),
        "private key next to the cert"
    );
    let inf = std::fs::read_to_string(build_once().join("amd64/aerogpu/aerogpu.inf")).unwrap();
    assert!(inf.contains("PCI\\VEN_A3A0&DEV_0001"));
    assert!(inf.contains("InstalledDisplayDriversWow"));
    assert!(inf.contains("NonLocalMemorySizeMB,%REG_DWORD_NOCLOBBER%,512"));
    // The WOW64 UMD is the x86 build.
    assert_eq!(
        parse("amd64/aerogpu/aerogpu_d3d9.dll").machine,
        pe::MACHINE_I386
    );
}

#[test]
fn builds_are_byte_identical() {
    let a = build_once();
    let b = common::build_drivers("b");
    for rel in [
        "x86/aerogpu/aerogpu.sys",
        "amd64/aerogpu/aerogpu.sys",
        "x86/aerogpu/aerogpu_d3d9.dll",
        "amd64/aerogpu/aerogpu_d3d9_x64.dll",
        "x86/aerogpu/aerogpu_dbgctl.exe",
        "amd64/aerogpu/aerogpu_dbgctl.exe",
        "certs/aero-test.cer",
    ] {
        let x = std::fs::read(a.join(rel)).unwrap();
        let y = std::fs::read(b.join(rel)).unwrap();
        assert!(x == y, "{rel} differs between two builds");
    }
}
