//! Every instruction or result field the differential test does not compare, with the reason.
//!
//! Undefined flags and registers that the SDM defines as undefined *per instruction* are
//! not listed here: they come from iced-x86's per-instruction `rflags_undefined()` plus
//! the operand-dependent rules in `gen.rs` (shift counts, BSF/BSR with a zero source).

use iced_x86::{Code, Mnemonic};

/// Instructions never generated. (mnemonic, reason)
pub const EXCLUDED_MNEMONICS: &[(Mnemonic, &str)] = &[
    (Mnemonic::Fsin, "QEMU TCG evaluates FSIN in host double precision; not a reference for 80-bit results"),
    (Mnemonic::Fcos, "QEMU TCG evaluates FCOS in host double precision"),
    (Mnemonic::Fsincos, "QEMU TCG evaluates FSINCOS in host double precision"),
    (Mnemonic::Fptan, "QEMU TCG evaluates FPTAN in host double precision"),
    (Mnemonic::Rcpps, "approximation: the SDM only bounds the relative error (1.5*2^-12); QEMU computes exact 1/x"),
    (Mnemonic::Rcpss, "approximation: the SDM only bounds the relative error; QEMU computes exact 1/x"),
    (Mnemonic::Rsqrtps, "approximation: the SDM only bounds the relative error; QEMU computes exact 1/sqrt(x)"),
    (Mnemonic::Rsqrtss, "approximation: the SDM only bounds the relative error; QEMU computes exact 1/sqrt(x)"),
];

/// Individual encodings never generated. (code, reason)
pub const EXCLUDED_CODES: &[(Code, &str)] = &[
    // Reading or writing RSP/ESP/SP is excluded by the register picker instead (the harness
    // owns the stack); these encodings have SP as an implicit operand beyond push/pop.
    (Code::Leavew, "changes SP/BP from the harness frame"),
    (Code::Leaved, "changes SP/BP from the harness frame"),
    (Code::Leaveq, "changes SP/BP from the harness frame"),
];

/// Byte ranges of the FXSAVE image that are not compared. (start, end, reason)
pub const FX_IGNORED: &[(usize, usize, &str)] = &[
    (5, 6, "reserved byte after the abridged tag word"),
    (6, 24, "FOP, FIP/FCS and FDP/FDS: QEMU TCG does not track the last x87 instruction/operand pointers"),
];

pub fn excluded_mnemonic(m: Mnemonic) -> Option<&'static str> {
    EXCLUDED_MNEMONICS.iter().find(|(x, _)| *x == m).map(|(_, r)| *r)
}

pub fn excluded_code(c: Code) -> Option<&'static str> {
    EXCLUDED_CODES.iter().find(|(x, _)| *x == c).map(|(_, r)| *r)
}
