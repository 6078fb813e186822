//! What the probe asks, the QEMU model it is compared with, and every accepted
//! difference with its reason.

use super::probe::Action;

/// QEMU's `core2duo` (Merom, family 6 model 15 stepping 11) minus what Aero does not
/// implement (DE: I/O breakpoints, ACPI: thermal-control MSRs, MONITOR/MWAIT) and
/// without the L3 cache QEMU adds by default (a T7700 has none). QEMU's TCG already
/// drops VME. See `cpuid.rs` for every deviation from the real CPU.
pub const QEMU_MODEL: &str = "core2duo,-de,-acpi,-monitor,l3-cache=off";

/// CPUID leaves where Aero answers as the real T7700 and QEMU does not: (leaf, subleaf,
/// Aero's registers, why).
pub const CPUID_OWN: &[(u32, u32, [u32; 4], &str)] = &[
    (
        2,
        0,
        [1, 0, 0, 0x002C_3049],
        "L2 descriptor 0x49 (4 MiB 16-way, the T7700's L2, as both leaf 4s say); QEMU's \
         legacy descriptor table has 0x7D (2 MiB 8-way), contradicting its own leaf 4",
    ),
    (
        0x4000_0000,
        0,
        [0x4000_0001, 0x6F72_6541, 0x6F72_6541, 0x6F72_6541],
        "hypervisor vendor: AeroAeroAero instead of QEMU's TCGTCGTCGTCG",
    ),
    (
        0x8000_0000,
        0,
        [0x8000_0008, 0, 0, 0],
        "Intel CPUs return 0 in EBX-EDX; QEMU repeats the vendor string",
    ),
    (
        0x8000_0001,
        0,
        [0, 0, 1, 0x2010_0800],
        "Intel CPUs return 0 in EAX; QEMU repeats the signature",
    ),
    (
        0x8000_0005,
        0,
        [0; 4],
        "reserved on Intel; QEMU fills in AMD's L1 cache/TLB layout",
    ),
    (
        0x8000_0006,
        0,
        [0, 0, 0x1000_8040, 0],
        "Intel's L2 description (4 MiB, 16-way, 64-byte lines); QEMU reports its AMD \
         legacy L2 (512 KiB) and AMD TLB/L3 fields",
    ),
];

/// MSRs whose value depends on time or on the firmware that ran before the probe:
/// (index, why). Aero must answer them (no #GP); the value is not compared.
pub const MSR_NOT_COMPARED: &[(u32, &str)] = &[(
    0x10,
    "IA32_TSC: time-dependent (and QEMU 7.2's TCG RDMSR has no TSC case: it reads 0)",
)];

/// Every MSR QEMU 7.2's TCG `helper_rdmsr` answers from state in the probed ranges (the
/// rest read as 0 there: its default case has "XXX: exception?" and never raises #GP).
/// Aero must answer each, except those in `AERO_GP_WHERE_QEMU_ANSWERS`.
pub fn qemu_tcg_msrs() -> Vec<u32> {
    let mut v = vec![
        0x1B, 0x34, 0x35, 0x8B, 0xFE, 0x174, 0x175, 0x176, 0x179, 0x17A, 0x17B, 0x198, 0x1A0,
        0x250, 0x258, 0x259, 0x277, 0x2FF, 0x6E1, 0xD90,
    ];
    v.extend(0x200..=0x20F);
    v.extend(0x268..=0x26F);
    v.extend(0x400..0x400 + 4 * 10);
    v.extend(0xC000_0080..=0xC000_0084);
    v.extend(0xC000_0100..=0xC000_0103);
    v
}

/// MSRs QEMU's TCG answers for any model that a Core 2 does not have: (index, why).
pub const AERO_GP_WHERE_QEMU_ANSWERS: &[(u32, &str)] = &[
    (
        0x34,
        "MSR_SMI_COUNT: Nehalem and later (QEMU counts SeaBIOS's SMIs)",
    ),
    (0x35, "MSR_CORE_THREAD_COUNT: Nehalem and later"),
    (0x6E1, "IA32_PKRS: protection keys are not advertised"),
    (0xD90, "IA32_BNDCFGS: MPX is not advertised"),
    (
        0xC000_0103,
        "IA32_TSC_AUX: RDTSCP is not advertised (Merom lacks it)",
    ),
];

/// CPUID leaves and subleaves to dump: every basic and extended leaf up to a few past
/// the maximum (Intel returns the highest basic leaf for those), the cache leaf's
/// subleaves until past the last cache, and the hypervisor range.
pub fn cpuid_queries() -> Vec<Action> {
    let mut v = Vec::new();
    for leaf in 0..=0x10u32 {
        let subs = match leaf {
            4 => 0..=5,
            7 | 0xB | 0xD => 0..=1,
            _ => 0..=0,
        };
        for sub in subs {
            v.push(Action::Cpuid { leaf, sub });
        }
    }
    for leaf in (0x4000_0000..=0x4000_0001).chain(0x8000_0000..=0x8000_000A) {
        v.push(Action::Cpuid { leaf, sub: 0 });
    }
    v.push(Action::Cpuid {
        leaf: 0xC000_0000,
        sub: 0,
    });
    v
}

/// A known MTRR and PAT state (valid values only), then every MSR of both ranges,
/// then the microcode-revision sequence Windows uses.
pub fn msr_actions() -> Vec<Action> {
    let mut v = vec![
        Action::Wrmsr(0x2FF, 0xC06),
        Action::Wrmsr(0x200, 0x8000_0000),
        Action::Wrmsr(0x201, 0xFF_8000_0800),
        Action::Wrmsr(0x202, 0xF_0000_0006),
        Action::Wrmsr(0x203, 0xFF_F000_0800),
    ];
    for m in 0x204..=0x20F {
        v.push(Action::Wrmsr(m, 0));
    }
    v.push(Action::Wrmsr(0x250, 0x0606_0606_0606_0606));
    v.push(Action::Wrmsr(0x258, 0x0606_0606_0606_0606));
    v.push(Action::Wrmsr(0x259, 0));
    for m in 0x268..=0x26F {
        v.push(Action::Wrmsr(m, 0x0505_0505_0505_0505));
    }
    v.push(Action::Wrmsr(0x277, 0x0007_0406_0007_0406));
    v.push(Action::RdmsrRange(0, 0x2000));
    v.push(Action::RdmsrRange(0xC000_0000, 0xC000_2000));
    // A microcode update trigger is accepted and ignored.
    v.push(Action::Wrmsr(0x79, 0x10_0000));
    // Windows' microcode check (last): write 0 to BIOS_SIGN_ID, CPUID, read the revision.
    v.push(Action::Wrmsr(0x8B, 0));
    v.push(Action::Cpuid { leaf: 1, sub: 0 });
    v.push(Action::Rdmsr(0x8B));
    v
}

/// MSRs KVM answers for an Intel guest beyond QEMU's TCG list (so Windows, tested on
/// KVM for years, may read them) that a Core 2 has: P5_MC_ADDR/TYPE, PLATFORM_ID,
/// EBL_CR_POWERON, FEATURE_CONTROL, the microcode trigger, DEBUGCTL and the last-branch/
/// last-exception records. Aero must answer each (QEMU's TCG reads them as 0).
pub const KVM_ALSO_ANSWERS: &[u32] = &[
    0x0, 0x1, 0x17, 0x2A, 0x3A, 0x79, 0x1D9, 0x1DB, 0x1DC, 0x1DD, 0x1DE,
];
