//! One differential test case: a single instruction plus its complete input state.

use iced_x86::Instruction;

use super::layout::{SCRATCH_LEN, STACK_LEN};

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
    /// Runs on a stack of its own (`stackgen.rs`); every other case uses the harness's.
    pub stack: Option<Box<StackCase>>,
}

/// A case with its own SS:ESP and stack contents: 16-bit stacks under 32-bit code and
/// 32-bit stacks under 16-bit code, SP near the 64 KiB wrap (Prot32 chunks only).
#[derive(Clone, Debug)]
pub struct StackCase {
    /// The instruction (`raw`) runs in a 16-bit code segment (CS.D=0).
    pub code16: bool,
    pub ss: u16,
    pub esp: u64,
    /// Initial contents of the dumped stack window (`layout::STACK_BELOW` below the
    /// window's anchor and `STACK_ABOVE` above; see `stackgen::window_index`).
    pub window: [u8; STACK_LEN],
    /// Values only known once the chunk is assembled.
    pub links: Vec<Link>,
}

/// What a link writes: the return point (the offset right after the instruction in its
/// code segment) or the selector of the instruction's code segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkValue {
    Ret,
    Cs,
}

#[derive(Clone, Copy, Debug)]
pub enum Link {
    /// `size` bytes at this index of the stack window.
    Window {
        at: usize,
        size: u8,
        value: LinkValue,
    },
    /// `size` bytes at this offset of scratch memory.
    Scratch {
        at: usize,
        size: u8,
        value: LinkValue,
    },
    /// A GPR (by number) holds the value.
    Gpr { reg: usize, value: LinkValue },
    /// A far pointer immediate in `raw` at byte `at`: offset (`size` bytes), selector.
    FarImm { at: usize, size: u8 },
}
