//! CPUID: an Intel Core 2 Duo T7700 (as QEMU's `core2duo` model) that advertises only
//! what is implemented. x87/MMX/SSE feature bits are derived from whether handlers for
//! those instructions are wired in. `tests/cpu_model.rs` compares every leaf with QEMU.

use super::{Exec, Handler, Insn};
use crate::fault::XResult;
use iced_x86::{Decoder, DecoderOptions, Instruction, Mnemonic};

pub fn lookup(ins: &Instruction) -> Option<Handler> {
    Some(match ins.mnemonic() {
        Mnemonic::Cpuid => cpuid,
        _ => return None,
    })
}

/// Which optional instruction groups have handlers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Wired {
    pub x87: bool,
    pub mmx: bool,
    pub fxsr: bool,
    pub sse: bool,
    pub sse2: bool,
    pub sse3: bool,
    pub ssse3: bool,
}

fn has_handler(bytes: &[u8]) -> bool {
    let mut d = Decoder::new(32, bytes, DecoderOptions::NONE);
    let ins = d.decode();
    !ins.is_invalid() && super::implemented(&ins).is_some()
}

impl Wired {
    pub fn probe() -> Self {
        Wired {
            x87: has_handler(&[0xD9, 0xC0]) && has_handler(&[0xDE, 0xC1]), // fld st0, faddp
            mmx: has_handler(&[0x0F, 0xFC, 0xC0]),                         // paddb mm0, mm0
            fxsr: has_handler(&[0x0F, 0xAE, 0x00]),                        // fxsave [eax]
            sse: has_handler(&[0x0F, 0x58, 0xC0]),                         // addps
            sse2: has_handler(&[0x66, 0x0F, 0x58, 0xC0]),                  // addpd
            sse3: has_handler(&[0xF2, 0x0F, 0x7C, 0xC0]),                  // haddps
            ssse3: SSSE3_OPCODES.iter().all(|&(map, op)| {
                // Both forms: MMX (no prefix) and XMM (66), e.g. pshufb mm0, mm0.
                let enc = |p: &[u8]| {
                    let mut b = p.to_vec();
                    b.extend_from_slice(&[0x0F, map, op, 0xC0]);
                    if map == 0x3A {
                        b.push(0);
                    }
                    b
                };
                has_handler(&enc(&[])) && has_handler(&enc(&[0x66]))
            }),
        }
    }
}

/// Every SSSE3 instruction (map 0F 38 or 0F 3A, opcode): the bit is set only when all
/// of them have handlers.
const SSSE3_OPCODES: &[(u8, u8)] = &[
    (0x38, 0x00), // PSHUFB
    (0x38, 0x01), // PHADDW
    (0x38, 0x02), // PHADDD
    (0x38, 0x03), // PHADDSW
    (0x38, 0x04), // PMADDUBSW
    (0x38, 0x05), // PHSUBW
    (0x38, 0x06), // PHSUBD
    (0x38, 0x07), // PHSUBSW
    (0x38, 0x08), // PSIGNB
    (0x38, 0x09), // PSIGNW
    (0x38, 0x0A), // PSIGND
    (0x38, 0x0B), // PMULHRSW
    (0x38, 0x1C), // PABSB
    (0x38, 0x1D), // PABSW
    (0x38, 0x1E), // PABSD
    (0x3A, 0x0F), // PALIGNR
];

pub const VENDOR: &[u8; 12] = b"GenuineIntel";
/// Intel Core 2 Duo T7700 (Merom, 65 nm): family 6, model 15, stepping 11 (G0). Merom is
/// the Core 2 without SSE4.1 (Penryn added it; Aero does not implement it), so its real
/// feature set is the closest to Aero's. Also in EDX after reset.
pub const SIGNATURE: u32 = 0x0000_06FB;
/// The brand string of that part (CPUID 0x80000002-4), as QEMU's `core2duo` model has it.
pub const BRAND: &[u8; 48] = b"Intel(R) Core(TM)2 Duo CPU     T7700  @ 2.40GHz\0";
/// Microcode revision in IA32_BIOS_SIGN_ID[63:32] (QEMU's default for Intel models).
pub const MICROCODE_REVISION: u32 = 1;
/// Highest basic and extended leaves (Merom: 0xA and 0x80000008).
pub const MAX_BASIC_LEAF: u32 = 0xA;
pub const MAX_EXTENDED_LEAF: u32 = 0x8000_0008;
/// The hypervisor leaves: "AeroAeroAero", no further leaves defined (like QEMU's TCG leaf).
pub const HYPERVISOR_VENDOR: &[u8; 12] = b"AeroAeroAero";
/// Aero does not advertise RDTSCP (Merom lacks it): RDTSCP raises #UD, IA32_TSC_AUX #GP.
pub const HAS_RDTSCP: bool = false;

/// IA32_MCG_CAP: 10 banks, MCG_CTL present, software error recovery (as QEMU's TCG).
pub const MCG_CAP: u64 = (1 << 24) | (1 << 8) | MC_BANKS as u64;
pub const MC_BANKS: usize = 10;

fn words(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    bytes
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
}

/// CPUID of the T7700 as Aero has it. Deviations from the real part, each because Aero
/// lacks the feature or is one CPU: leaf 1 EDX without VME (virtual-8086 extensions), DE
/// (I/O breakpoints), ACPI (thermal-control MSRs), TM, PBE, DTS and HTT; ECX without
/// MONITOR/MWAIT, VMX, EST, TM2, xTPR, PDCM, DTES64 and DS-CPL, and with the hypervisor
/// bit (31); one core, one thread (leaf 1 EBX[23:16] = 0 and leaf 4 EAX[31:14] = 0, as
/// QEMU with `-smp 1`); leaves 2 and 4 list the caches only, no TLBs; leaves 5, 6 and
/// 0xA as QEMU's model has them (no power management, no performance monitoring).
pub fn cpuid_values(w: &Wired, leaf: u32, sub: u32) -> [u32; 4] {
    let vendor: Vec<u32> = words(VENDOR).collect();
    // Intel: a leaf above the maximum returns the highest basic leaf.
    let leaf = match leaf {
        0x4000_0000..=0x4000_0001 => leaf,
        0x8000_0000..=MAX_EXTENDED_LEAF => leaf,
        l if l > MAX_BASIC_LEAF => MAX_BASIC_LEAF,
        l => l,
    };
    match leaf {
        0 => [MAX_BASIC_LEAF, vendor[0], vendor[2], vendor[1]],
        1 => {
            let mut edx: u32 = (1 << 3) // PSE
                | (1 << 4) // TSC
                | (1 << 5) // MSR
                | (1 << 6) // PAE
                | (1 << 7) // MCE: #MC never happens, CR4.MCE is accepted
                | (1 << 8) // CX8
                | (1 << 9) // APIC
                | (1 << 11) // SEP
                | (1 << 12) // MTRR
                | (1 << 13) // PGE
                | (1 << 14) // MCA: MCG_CAP and the banks exist (never report errors)
                | (1 << 15) // CMOV
                | (1 << 16) // PAT
                | (1 << 17) // PSE-36
                | (1 << 19) // CLFLUSH
                | (1 << 27); // SS: self snoop (a cache property, nothing to emulate)
            let mut ecx: u32 = (1 << 13) // CMPXCHG16B
                | (1 << 31); // running under a hypervisor
            if w.x87 {
                edx |= 1;
            }
            if w.mmx {
                edx |= 1 << 23;
            }
            if w.fxsr {
                edx |= 1 << 24;
            }
            if w.sse && w.fxsr {
                edx |= 1 << 25;
            }
            if w.sse2 && w.fxsr {
                edx |= 1 << 26;
            }
            if w.sse3 && w.sse2 {
                ecx |= 1;
            }
            if w.ssse3 && w.sse3 && w.sse2 {
                ecx |= 1 << 9;
            }
            // CLFLUSH line 8*8 bytes; APIC ID 0 (bits 31:24); no HTT, so no logical count.
            [SIGNATURE, 8 << 8, ecx, edx]
        }
        // One descriptor-list iteration: 0x2C L1D 32 KiB 8-way, 0x30 L1I 32 KiB 8-way,
        // 0x49 L2 4 MiB 16-way (all 64-byte lines), the T7700's caches.
        2 => [1, 0, 0, 0x002C_3049],
        // Deterministic cache parameters, the same caches: type, level, self-initializing;
        // ways-1 << 22 | line-1; sets-1. EDX 1: WBINVD does not flush lower levels' sharers.
        4 => match sub {
            0 => [0x121, (7 << 22) | 63, 63, 1],
            1 => [0x122, (7 << 22) | 63, 63, 1],
            2 => [0x143, (15 << 22) | 63, 4095, 1],
            _ => [0; 4],
        },
        // MONITOR/MWAIT line sizes unset, ECX as QEMU's model (MONITOR is not advertised).
        5 => [0, 0, 3, 0],
        0x4000_0000 => {
            let h: Vec<u32> = words(HYPERVISOR_VENDOR).collect();
            [0x4000_0001, h[0], h[1], h[2]]
        }
        0x8000_0000 => [MAX_EXTENDED_LEAF, 0, 0, 0],
        0x8000_0001 => {
            let mut edx = (1 << 11) | (1 << 20) | (1 << 29); // SYSCALL, NX, LM
            if HAS_RDTSCP {
                edx |= 1 << 27;
            }
            [0, 0, 1, edx] // ECX bit 0: LAHF/SAHF in 64-bit mode
        }
        0x8000_0002..=0x8000_0004 => {
            let base = (leaf - 0x8000_0002) as usize * 16;
            let mut out = [0u32; 4];
            for (o, w) in out.iter_mut().zip(words(&BRAND[base..base + 16])) {
                *o = w;
            }
            out
        }
        // L2: 4096 KiB, 16-way (encoded 8), 64-byte lines.
        0x8000_0006 => [0, 0, (4096 << 16) | (8 << 12) | 64, 0],
        // 40 physical address bits, 48 linear.
        0x8000_0008 => [0x3028, 0, 0, 0],
        _ => [0, 0, 0, 0],
    }
}

fn cpuid(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    let leaf = ex.s.gpr[0] as u32;
    let sub = ex.s.gpr[1] as u32;
    let v = cpuid_values(&ex.c.wired, leaf, sub);
    if leaf == 1 {
        // Like a real CPU: CPUID 1 loads the microcode revision into IA32_BIOS_SIGN_ID.
        ex.c.msr.bios_sign = (MICROCODE_REVISION as u64) << 32;
    }
    ex.set_reg(0, 4, v[0] as u64);
    ex.set_reg(3, 4, v[1] as u64);
    ex.set_reg(1, 4, v[2] as u64);
    ex.set_reg(2, 4, v[3] as u64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssse3_bit_follows_the_handlers() {
        let w = Wired::probe();
        assert!(w.sse3 && w.ssse3, "{w:?}");
        assert_eq!(cpuid_values(&w, 1, 0)[2] & (1 << 9 | 1), 1 << 9 | 1);
        // Without SSSE3 handlers the bit must not be advertised.
        let no = Wired { ssse3: false, ..w };
        assert_eq!(cpuid_values(&no, 1, 0)[2] & (1 << 9), 0);
    }
}
