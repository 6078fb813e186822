//! One differential test case: a single instruction plus its complete input state.

use iced_x86::Instruction;

use super::layout::SCRATCH_LEN;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    Real,
    Prot32,
    Long64,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Real, Mode::Prot32, Mode::Long64];
    pub fn bitness(self) -> u32 {
        match self {
            Mode::Real => 16,
            Mode::Prot32 => 32,
            Mode::Long64 => 64,
        }
    }
    pub fn gpr_count(self) -> usize {
        if self == Mode::Long64 { 16 } else { 8 }
    }
    pub fn name(self) -> &'static str {
        match self {
            Mode::Real => "real",
            Mode::Prot32 => "prot32+paging",
            Mode::Long64 => "long64",
        }
    }
    pub fn code(self) -> u32 {
        self as u32
    }
}

/// Parts of the result the SDM leaves undefined for this particular case.
#[derive(Clone, Copy, Debug, Default)]
pub struct Undefined {
    /// RFLAGS bits.
    pub flags: u64,
    /// GPRs (bit per register number) whose value is undefined.
    pub gprs: u16,
    /// x87 status word bits (condition codes the instruction leaves undefined).
    pub fsw: u16,
    /// Physical x87 registers (bit per register) whose bits 79:64 are not compared: MMX
    /// destinations (see `exclusions::MMX_WRITE_EXPONENT`).
    pub st_high: u8,
}

#[derive(Clone, Debug)]
pub struct Case {
    /// Global id, also the order in the image.
    pub id: u32,
    pub mode: Mode,
    pub category: &'static str,
    pub insn: Instruction,
    /// Disassembly, for reports.
    pub text: String,
    /// Input GPRs (RSP is ignored: every case starts on the same stack).
    pub gpr: [u64; 16],
    pub rflags: u64,
    pub mem: [u8; SCRATCH_LEN],
    /// FXRSTOR image for x87/SSE cases; others start from the default image.
    pub fx: Option<Box<[u8; 512]>>,
    pub undefined: Undefined,
    /// Encoded body when it is more than `insn` (branch cases: the branch plus the
    /// instruction it may skip). `insn` is then the decoded first instruction, for reports.
    pub raw: Option<Vec<u8>>,
}
