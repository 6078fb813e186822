//! Every general-purpose integer/system instruction iced-x86 decodes must have a handler.
//! Walks all one-byte and 0F-prefixed opcodes with every ModRM /reg value, in 16-, 32-
//! and 64-bit mode. Likewise every SSSE3 encoding (CPUID advertises SSSE3).

use aero_cpu::exec::{implemented, lookup};
use iced_x86::{CpuidFeature, Decoder, DecoderOptions, Mnemonic};

fn is_integer_feature(f: CpuidFeature) -> bool {
    use CpuidFeature::*;
    matches!(
        f,
        INTEL8086
            | INTEL8086_ONLY
            | INTEL186
            | INTEL286
            | INTEL286_ONLY
            | INTEL386
            | INTEL386_ONLY
            | INTEL486
            | X64
            | CMOV
            | CX8
            | CMPXCHG16B
            | SYSCALL
            | SEP
            | MSR
            | TSC
            | RDTSCP
            | CPUID
            | PAUSE
            | CLFSH
            | MULTIBYTENOP
    )
}

/// Instructions deliberately left as #UD (not advertised / not integer).
fn excluded(m: Mnemonic) -> bool {
    use Mnemonic::*;
    matches!(
        m,
        Loadall | Umov | Rsm | Ud0 | Ud1 | Ud2 | Ibts | Xbts | Jmpe | Popcnt | Rdpid
    )
}

#[test]
fn all_integer_opcodes_have_handlers() {
    let mut missing = std::collections::BTreeSet::new();
    let mut checked = 0;
    for bitness in [16u32, 32, 64] {
        for prefix in [&[][..], &[0x0F][..]] {
            for op in 0..=255u8 {
                for reg in 0..8u8 {
                    for modrm_mod in [0xC0u8, 0x00] {
                        let modrm = modrm_mod | (reg << 3) | if modrm_mod == 0 { 6 } else { 1 };
                        let mut bytes = prefix.to_vec();
                        bytes.push(op);
                        bytes.extend_from_slice(&[modrm, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
                        let mut d = Decoder::new(bitness, &bytes, DecoderOptions::NONE);
                        let ins = d.decode();
                        if ins.is_invalid() || excluded(ins.mnemonic()) {
                            continue;
                        }
                        if !ins.cpuid_features().iter().all(|f| is_integer_feature(*f)) {
                            continue;
                        }
                        checked += 1;
                        if lookup(&ins).is_none() {
                            missing.insert(format!(
                                "{:?} ({bitness}-bit, {:02X?})",
                                ins.mnemonic(),
                                &bytes[..prefix.len() + 2]
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 1000, "walked {checked} encodings");
    assert!(
        missing.is_empty(),
        "no handler for:\n{}",
        missing.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// CPUID.1:ECX[9] promises all of SSSE3: whatever iced-x86 decodes as SSSE3 in the 0F 38
/// and 0F 3A maps (no prefix: MMX form, 66: XMM form) must have a real handler, not the
/// #UD/#NM fallback.
#[test]
fn all_ssse3_encodings_have_handlers() {
    let mut seen = std::collections::BTreeSet::new();
    let mut missing = Vec::new();
    for bitness in [16u32, 32, 64] {
        for pfx in [&[][..], &[0x66][..]] {
            for map in [0x38u8, 0x3A] {
                for op in 0..=255u8 {
                    for modrm in [0xC1u8, 0x06] {
                        let mut b = pfx.to_vec();
                        b.extend_from_slice(&[0x0F, map, op, modrm, 0x10, 0, 0, 0, 0]);
                        let mut d = Decoder::new(bitness, &b, DecoderOptions::NONE);
                        let ins = d.decode();
                        if ins.is_invalid() || ins.cpuid_features() != [CpuidFeature::SSSE3] {
                            continue;
                        }
                        seen.insert(ins.code());
                        if implemented(&ins).is_none() {
                            missing.push(format!("{:?} ({bitness}-bit)", ins.code()));
                        }
                    }
                }
            }
        }
    }
    // 16 instructions, each with an MMX and an XMM form (register or memory source).
    assert_eq!(seen.len(), 32, "{seen:?}");
    assert!(
        missing.is_empty(),
        "no handler for:\n{}",
        missing.join("\n")
    );
}
