//! Every instruction or result field the differential test does not compare, with the reason.
//!
//! Undefined flags and registers that the SDM defines as undefined *per instruction* are
//! not listed here: they come from iced-x86's per-instruction `rflags_undefined()` plus
//! the operand-dependent rules in `casegen.rs` (shift counts, SHLD/SHRD counts, BSF/BSR
//! with a zero source, BSWAP of a 16-bit register).

use iced_x86::{Code, Mnemonic};

/// Instructions never generated. (mnemonic, reason)
pub const EXCLUDED_MNEMONICS: &[(Mnemonic, &str)] = &[
    (
        Mnemonic::Fsin,
        "QEMU TCG evaluates FSIN in host double precision; not a reference for 80-bit results",
    ),
    (
        Mnemonic::Fcos,
        "QEMU TCG evaluates FCOS in host double precision",
    ),
    (
        Mnemonic::Fsincos,
        "QEMU TCG evaluates FSINCOS in host double precision",
    ),
    (
        Mnemonic::Fptan,
        "QEMU TCG evaluates FPTAN in host double precision",
    ),
    (
        Mnemonic::Fprem,
        "QEMU 7.2 computes FPREM through host doubles: wrong quotient bits (C0/C3/C1) and rounded remainders (checked with exact rational arithmetic)",
    ),
    (
        Mnemonic::Fprem1,
        "QEMU 7.2 computes FPREM1 through host doubles: wrong quotient bits (C0/C3/C1) and rounded remainders (checked with exact rational arithmetic)",
    ),
    (
        Mnemonic::Rcpps,
        "approximation: the SDM only bounds the relative error (1.5*2^-12); QEMU computes exact 1/x",
    ),
    (
        Mnemonic::Rcpss,
        "approximation: the SDM only bounds the relative error; QEMU computes exact 1/x",
    ),
    (
        Mnemonic::Rsqrtps,
        "approximation: the SDM only bounds the relative error; QEMU computes exact 1/sqrt(x)",
    ),
    (
        Mnemonic::Rsqrtss,
        "approximation: the SDM only bounds the relative error; QEMU computes exact 1/sqrt(x)",
    ),
];

/// Individual encodings never generated. (code, reason)
pub const EXCLUDED_CODES: &[(Code, &str)] = &[
    (
        Code::Lfs_r64_m1664,
        "vendor-specific: Intel reads m16:64 with REX.W, AMD and QEMU 7.2 read m16:32",
    ),
    (
        Code::Lgs_r64_m1664,
        "vendor-specific: Intel reads m16:64 with REX.W, AMD and QEMU 7.2 read m16:32",
    ),
    (
        Code::Lss_r64_m1664,
        "vendor-specific: Intel reads m16:64 with REX.W, AMD and QEMU 7.2 read m16:32",
    ),
];

pub fn excluded_code(c: Code) -> Option<&'static str> {
    EXCLUDED_CODES
        .iter()
        .find(|(x, _)| *x == c)
        .map(|(_, r)| *r)
}

/// Byte ranges of the FXSAVE image that are not compared. (start, end, reason)
pub const FX_IGNORED: &[(usize, usize, &str)] = &[
    (5, 6, "reserved byte after the abridged tag word"),
    (
        6,
        24,
        "FOP, FIP/FCS and FDP/FDS: QEMU TCG does not track the last x87 instruction/operand pointers",
    ),
];

pub fn excluded_mnemonic(m: Mnemonic) -> Option<&'static str> {
    EXCLUDED_MNEMONICS
        .iter()
        .find(|(x, _)| *x == m)
        .map(|(_, r)| *r)
}

/// x87 status-word bits never compared.
/// C1 (0x200): QEMU TCG does not maintain C1 (not the "rounded up" indication, not the
/// "set to 0" the SDM requires for FABS/FCHS/arithmetic), so it is no reference for it.
/// DE (0x0002): QEMU 7.2 never reports the denormal-operand exception (the SDM sets it
/// for any denormal source operand, e.g. FSUBP with a denormal ST(0)).
pub const FSW_IGNORED: u16 = 0x0202;

/// MXCSR bits never compared. DE (bit 1): QEMU 7.2 does not set the denormal flag for
/// SSE operations on denormal inputs (SDM: set unless DAZ).
pub const MXCSR_IGNORED: u32 = 0x0002;

/// Bits 79:64 (sign and exponent) of an MMX register an instruction writes are not
/// compared: the SDM (vol. 1, 9.5.1) sets them to all ones, QEMU 7.2 leaves the old value
/// (its MMX ops store only the 64-bit significand). Bits 63:0 are compared: the bytes
/// of such a register's FXSAVE slot that are compared.
pub const MMX_WRITE_EXPONENT: usize = 8;

/// FCOMI/FCOMIP/FUCOMI/FUCOMIP clear OF, SF and AF (SDM); QEMU 7.2 leaves them unchanged,
/// so these three flags are not compared for these instructions.
pub const FCOMI_FLAGS_IGNORED: u64 = 0x800 | 0x80 | 0x10;

/// Generator constraints: inputs that are never produced, because QEMU 7.2 is no
/// reference for them (or the SDM leaves the result undefined). (what, why)
pub const GENERATOR_CONSTRAINTS: &[(&str, &str)] = &[
    (
        "stack cases: a 32-bit ENTER on a 16-bit stack with SP below 4*(level+1) gets level 0 and EBP is not compared",
        "QEMU computes ENTER's frame pointer as ESP-4 over all 32 bits and borrows from ESP's upper half (ESP 0x10000 gives EBP 0xFFFC); the 386 keeps the upper half (EBP 0x1FFFC, test386 POST 1A), as Aero does",
    ),
    (
        "stack cases: ESP is not compared after RET/RETF imm16 >= 0x8000 on a 32-bit stack",
        "QEMU 7.2 sign-extends the imm16 (RET 0FFFEh leaves ESP 2 lower); the SDM releases imm16 bytes unsigned, as Aero does",
    ),
    (
        "stack cases in 32-bit code use 32-bit operands for CALL/RET/RETF/IRET",
        "a 16-bit return address there is IP & 0xFFFF, outside the chunk: the case could not come back",
    ),
    (
        "x87 cases start with a full register stack (7 valid registers before a push; pushes never read ST(7))",
        "QEMU TCG ignores the tag word for arithmetic: stack overflow/underflow (#IS, masked QNaN results) cannot be compared",
    ),
    (
        "x87 precision control other than 64 bits only for register forms of FADD/FSUB/FSUBR/FMUL/FDIV/FDIVR/FSQRT",
        "QEMU 7.2 applies precision control to m32/m64 operand loads and to FRNDINT/FPREM (spurious PE, wrong results); the SDM limits it to those instructions",
    ),
    (
        "no two-operand x87/SSE instruction gets two NaN operands (per lane)",
        "SDM vol. 1 table 4-7 returns the QNaN operand (x87 SNaN+QNaN) or the first source (SSE); QEMU 7.2 uses softfloat's own choice",
    ),
    (
        "128-bit SSE memory operands are 16-byte aligned",
        "QEMU 7.2 does not raise #GP for misaligned legacy-SSE m128 operands (the SDM requires it)",
    ),
    (
        "MIN/MAX PS/SS/PD/SD run with MXCSR.DAZ=0",
        "with DAZ=1 and a denormal source QEMU returns the denormal bits instead of the DAZ-converted zero",
    ),
    (
        "F2XM1 gets |ST0| <= 1, FYL2XP1 |ST0| < 1 - sqrt(2)/2",
        "outside those ranges the SDM leaves the result undefined",
    ),
    (
        "FYL2X/FYL2XP1 never get a denormal ST(1)",
        "QEMU 7.2 returns twice the correctly rounded result (case 5067 of the default seed, checked with 200-bit mpmath)",
    ),
    (
        "IDIV r/m16, r/m32 never divide the most negative dividend by -1",
        "must raise #DE; QEMU 7.2 performs the host division and dies with SIGFPE (other #DE overflows are generated)",
    ),
    (
        "CMPXCHG r32 in long mode: the destination is not compared when the comparison fails",
        "Intel writes the destination back (zero-extending it), AMD and QEMU 7.2 leave it: vendor-specific",
    ),
    (
        "MXCSR/FCW inputs (incl. LDMXCSR/FLDCW operands) keep all exceptions masked",
        "unmasked #MF/#XM delivery belongs to the system behaviour tests",
    ),
    (
        "the test GDT's descriptors have the accessed bit preset (visible through LAR)",
        "QEMU 7.2 does not set the accessed bit when it loads CS through a far jump (the SDM does)",
    ),
    (
        "CVTPI2PD xmm, m64 starts in MMX state (TOP = 0, all tags valid), so its x87 state change cannot be observed",
        "SDM: CVTPI2PD with a memory source does not switch to MMX state; QEMU 7.2 does (TOP = 0, tags valid) as for the mm form",
    ),
    (
        "undocumented alias encodings (TEST F6/F7 /1, FCOM DC D0+i, FSTP DF D0+i, ...) are not generated",
        "QEMU 7.2 raises #UD for some of them",
    ),
];

/// Undocumented alias encodings (TEST F6/F7 /1, FCOM DC D0+i, FSTP DF D0+i, ...): QEMU 7.2
/// raises #UD for some of them, so they are not generated.
pub fn undocumented_alias(c: Code) -> Option<&'static str> {
    let name = format!("{c:?}");
    let last = name.rsplit('_').next().unwrap_or("");
    let b = last.as_bytes();
    let hex = |x: u8| x.is_ascii_hexdigit();
    let dxxx = b.len() == 4 && b[0] == b'D' && b[1..].iter().all(|&x| hex(x));
    let opc_reg = b.len() == 4 && hex(b[0]) && hex(b[1]) && b[2] == b'r' && b[3].is_ascii_digit();
    (dxxx || opc_reg).then_some("undocumented alias encoding; QEMU 7.2 does not decode all of them")
}

/// IDIV r/m16 and r/m32 with the most negative dividend (DX:AX = -2^31, EDX:EAX = -2^63)
/// and divisor -1 must raise #DE; QEMU 7.2 performs the host division and dies with
/// SIGFPE. Such cases are not generated (other #DE overflows still are).
pub fn idiv_crashes_qemu(case: &super::case::Case, divisor: u64) -> bool {
    let size = case.insn.memory_size().size().max(
        (0..case.insn.op_count())
            .find_map(|i| {
                (case.insn.op_kind(i) == iced_x86::OpKind::Register)
                    .then(|| case.insn.op_register(i).size())
            })
            .unwrap_or(0),
    );
    let (eax, edx) = (case.gpr[0], case.gpr[2]);
    match size {
        2 => divisor & 0xFFFF == 0xFFFF && edx & 0xFFFF == 0x8000 && eax & 0xFFFF == 0,
        4 => {
            divisor & 0xFFFF_FFFF == 0xFFFF_FFFF
                && edx & 0xFFFF_FFFF == 0x8000_0000
                && eax & 0xFFFF_FFFF == 0
        }
        _ => false,
    }
}
