//! CPUID: one family-6 profile that advertises only what is implemented. x87/MMX/SSE
//! feature bits are derived from whether handlers for those instructions are wired in.

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
/// Family 6, model 6, stepping 3 (matches EDX after reset).
pub const SIGNATURE: u32 = 0x0000_0663;

pub fn cpuid_values(w: &Wired, leaf: u32, _sub: u32) -> [u32; 4] {
    let word = |k: usize| {
        u32::from_le_bytes([
            VENDOR[4 * k],
            VENDOR[4 * k + 1],
            VENDOR[4 * k + 2],
            VENDOR[4 * k + 3],
        ])
    };
    match leaf {
        0 => [1, word(0), word(2), word(1)],
        1 => {
            let mut edx: u32 = (1 << 3) // PSE
                | (1 << 4) // TSC
                | (1 << 5) // MSR
                | (1 << 6) // PAE
                | (1 << 8) // CX8
                | (1 << 9) // APIC
                | (1 << 11) // SEP
                | (1 << 12) // MTRR
                | (1 << 13) // PGE
                | (1 << 15) // CMOV
                | (1 << 16) // PAT
                | (1 << 17) // PSE-36
                | (1 << 19); // CLFLUSH
            let mut ecx: u32 = 1 << 13; // CMPXCHG16B
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
            // CLFLUSH line 8*8 bytes, one logical processor, APIC ID 0.
            [SIGNATURE, (8 << 8) | (1 << 16), ecx, edx]
        }
        0x8000_0000 => [0x8000_0008, 0, 0, 0],
        0x8000_0001 => {
            let edx = (1 << 11) | (1 << 20) | (1 << 27) | (1 << 29); // SYSCALL, NX, RDTSCP, LM
            [0, 0, 1, edx] // ECX bit 0: LAHF/SAHF in 64-bit mode
        }
        0x8000_0002..=0x8000_0004 => {
            let brand = b"Aero Virtual CPU\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0";
            let base = (leaf - 0x8000_0002) as usize * 16;
            let mut out = [0u32; 4];
            for (k, o) in out.iter_mut().enumerate() {
                let p = base + 4 * k;
                *o = u32::from_le_bytes([brand[p], brand[p + 1], brand[p + 2], brand[p + 3]]);
            }
            out
        }
        // 40 physical address bits, 48 linear.
        0x8000_0008 => [0x3028, 0, 0, 0],
        _ => [0, 0, 0, 0],
    }
}

fn cpuid(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    let leaf = ex.s.gpr[0] as u32;
    let sub = ex.s.gpr[1] as u32;
    let v = cpuid_values(&ex.c.wired, leaf, sub);
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
