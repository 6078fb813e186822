//! The x87 register file: eight physical registers addressed through TOP, the control,
//! status and tag words, the last-instruction pointers, and the exception bookkeeping
//! (sticky flags, ES/B summary, pending #MF).

use super::arith::{FpResult, X87Env};
use super::f80::{Class, F80};
use super::softfloat::{DE, IE, OE, UE, ZE};

/// Status word bits beyond the six exception flags.
pub const SW_SF: u16 = 1 << 6;
pub const SW_ES: u16 = 1 << 7;
pub const SW_C0: u16 = 1 << 8;
pub const SW_C1: u16 = 1 << 9;
pub const SW_C2: u16 = 1 << 10;
pub const SW_C3: u16 = 1 << 14;
pub const SW_B: u16 = 1 << 15;
const SW_TOP_SHIFT: u16 = 11;

/// Control word after FINIT/FNINIT: all exceptions masked, 64-bit precision, nearest.
pub const CW_DEFAULT: u16 = 0x037F;
/// Control word after RESET (SDM vol. 3 table 9-1).
pub const CW_RESET: u16 = 0x0040;

/// Two-bit tag values of the full tag word.
pub const TAG_VALID: u16 = 0;
pub const TAG_ZERO: u16 = 1;
pub const TAG_SPECIAL: u16 = 2;
pub const TAG_EMPTY: u16 = 3;

/// Where an operation's result goes; memory stores are suppressed on unmasked
/// overflow/underflow, register stores deliver the exponent-wrapped value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dest {
    Register,
    Memory,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct X87State {
    /// Physical registers R0..R7 (ST(i) is R[(TOP + i) & 7]).
    pub regs: [F80; 8],
    pub control: u16,
    /// Status word including TOP (bits 11-13).
    pub status: u16,
    /// Bit i set: physical register i is empty. Finer tag values are derived from the
    /// register contents when the full tag word is stored, as hardware does.
    pub empty: u8,
    /// Last non-control instruction: offset, CS selector, 11-bit opcode.
    pub fip: u64,
    pub fcs: u16,
    pub fop: u16,
    /// Last memory operand: offset and DS selector.
    pub fdp: u64,
    pub fds: u16,
}

impl Default for X87State {
    fn default() -> Self {
        X87State::at_reset()
    }
}

impl X87State {
    /// Power-on/RESET state.
    pub fn at_reset() -> Self {
        X87State {
            regs: [F80::ZERO; 8],
            control: CW_RESET,
            status: 0,
            empty: 0xFF,
            fip: 0,
            fcs: 0,
            fop: 0,
            fdp: 0,
            fds: 0,
        }
    }

    /// FINIT/FNINIT: registers keep their contents but are tagged empty.
    pub fn init(&mut self) {
        self.control = CW_DEFAULT;
        self.status = 0;
        self.empty = 0xFF;
        self.fip = 0;
        self.fcs = 0;
        self.fop = 0;
        self.fdp = 0;
        self.fds = 0;
    }

    pub fn env(&self) -> X87Env {
        X87Env::from_control_word(self.control)
    }

    pub fn top(&self) -> usize {
        ((self.status >> SW_TOP_SHIFT) & 7) as usize
    }

    pub fn set_top(&mut self, top: usize) {
        self.status = (self.status & !(7 << SW_TOP_SHIFT)) | (((top & 7) as u16) << SW_TOP_SHIFT);
    }

    /// Physical register index of ST(i).
    pub fn phys(&self, i: usize) -> usize {
        (self.top() + i) & 7
    }

    pub fn is_empty(&self, i: usize) -> bool {
        self.empty & (1 << self.phys(i)) != 0
    }

    /// ST(i) regardless of its tag.
    pub fn st(&self, i: usize) -> F80 {
        self.regs[self.phys(i)]
    }

    /// Writes ST(i) and tags it non-empty.
    pub fn set_st(&mut self, i: usize, v: F80) {
        let p = self.phys(i);
        self.regs[p] = v;
        self.empty &= !(1 << p);
    }

    pub fn set_empty(&mut self, i: usize) {
        let p = self.phys(i);
        self.empty |= 1 << p;
    }

    /// FINCSTP-style pop: tag ST(0) empty and increment TOP.
    pub fn pop(&mut self) {
        self.set_empty(0);
        self.set_top(self.top() + 1);
    }

    /// FDECSTP-style move without touching tags.
    pub fn decrement_top(&mut self) {
        self.set_top(self.top() + 7);
    }

    pub fn increment_top(&mut self) {
        self.set_top(self.top() + 1);
    }

    /// Pushes a value. On stack overflow (ST(7) in use) raises #IS with C1=1; with IE
    /// masked the indefinite is pushed instead. Returns false when nothing was pushed.
    pub fn push(&mut self, v: F80) -> bool {
        if !self.is_empty(7) {
            self.stack_fault(true);
            if self.control & IE as u16 == 0 {
                return false;
            }
            self.decrement_top();
            self.set_st(0, F80::INDEFINITE);
            return true;
        }
        self.decrement_top();
        self.set_st(0, v);
        true
    }

    /// Reads ST(i) as an operand. An empty register raises #IS (C1=0); the masked
    /// response uses the indefinite, the unmasked one returns None (abort the instruction).
    pub fn operand(&mut self, i: usize) -> Option<F80> {
        if self.is_empty(i) {
            self.stack_fault(false);
            return if self.control & IE as u16 != 0 {
                Some(F80::INDEFINITE)
            } else {
                None
            };
        }
        Some(self.st(i))
    }

    /// Records a stack overflow (`overflow`) or underflow.
    pub fn stack_fault(&mut self, overflow: bool) {
        self.set_c1(overflow);
        self.status |= IE as u16 | SW_SF;
        if self.control & IE as u16 == 0 {
            self.status |= SW_ES | SW_B;
        }
    }

    pub fn set_c1(&mut self, on: bool) {
        self.status = (self.status & !SW_C1) | if on { SW_C1 } else { 0 };
    }

    /// Sets C3 C2 C1 C0 at once.
    pub fn set_condition(&mut self, c3: bool, c2: bool, c1: bool, c0: bool) {
        self.status &= !(SW_C0 | SW_C1 | SW_C2 | SW_C3);
        self.status |= if c0 { SW_C0 } else { 0 }
            | if c1 { SW_C1 } else { 0 }
            | if c2 { SW_C2 } else { 0 }
            | if c3 { SW_C3 } else { 0 };
    }

    pub fn masks(&self) -> u8 {
        (self.control & 0x3F) as u8
    }

    /// Whether an operation raising `flags` writes its destination (pure; see
    /// [`X87State::commit_flags`]). Lets memory stores write before committing status.
    pub fn store_allowed(&self, flags: u8, dest: Dest) -> bool {
        let unmasked = flags & !self.masks() & 0x3F;
        unmasked & (IE | DE | ZE) == 0 && (dest == Dest::Register || unmasked & (OE | UE) == 0)
    }

    pub fn set_c2(&mut self, on: bool) {
        self.status = (self.status & !SW_C2) | if on { SW_C2 } else { 0 };
    }

    /// Records exception flags from an operation (after priority filtering) and
    /// returns whether the destination must be written.
    pub fn commit_flags(&mut self, flags: u8, c1: bool, dest: Dest) -> bool {
        let unmasked = flags & !self.masks() & 0x3F;
        // An unmasked #I, #D or #Z aborts the operation: only that exception is reported.
        let (report, store) = if unmasked & IE != 0 {
            (IE, false)
        } else if unmasked & DE != 0 {
            (DE, false)
        } else if unmasked & ZE != 0 {
            (ZE | (flags & DE), false)
        } else {
            let store = dest == Dest::Register || unmasked & (OE | UE) == 0;
            (flags, store)
        };
        self.status |= report as u16;
        if report & !self.masks() & 0x3F != 0 {
            self.status |= SW_ES | SW_B;
        }
        self.set_c1(store && c1);
        store
    }

    /// Convenience: commits a register result into ST(i).
    pub fn write_result(&mut self, i: usize, r: FpResult) -> bool {
        let store = self.commit_flags(r.flags, r.c1, Dest::Register);
        if store {
            self.set_st(i, r.value);
        }
        store
    }

    /// An unmasked exception is pending: the next waiting x87 instruction raises #MF
    /// (or asserts FERR# when CR0.NE is clear).
    pub fn exception_pending(&self) -> bool {
        self.status & SW_ES != 0
    }

    /// FCLEX/FNCLEX.
    pub fn clear_exceptions(&mut self) {
        self.status &= !(0x3F | SW_SF | SW_ES | SW_B);
    }

    /// FLDCW: loading a control word that unmasks a pending flag re-raises ES/B.
    pub fn set_control(&mut self, cw: u16) {
        // Bits 6, 7 and 13-15 are reserved; bit 6 reads as 1 on modern CPUs.
        self.control = (cw & 0x1F3F) | 0x0040;
        self.update_summary();
    }

    /// Recomputes ES/B from the flags and masks (FLDCW, FLDENV, FRSTOR, FXRSTOR).
    pub fn update_summary(&mut self) {
        if (self.status as u8) & !self.masks() & 0x3F != 0 {
            self.status |= SW_ES | SW_B;
        } else {
            self.status &= !(SW_ES | SW_B);
        }
    }

    /// Full 16-bit tag word derived from the register contents (FSTENV/FSAVE).
    pub fn tag_word(&self) -> u16 {
        let mut tw = 0u16;
        for p in 0..8 {
            let tag = if self.empty & (1 << p) != 0 {
                TAG_EMPTY
            } else {
                match self.regs[p].class() {
                    Class::Zero(_) => TAG_ZERO,
                    Class::Finite(_, false) => TAG_VALID,
                    _ => TAG_SPECIAL,
                }
            };
            tw |= tag << (2 * p);
        }
        tw
    }

    /// Loads the tag word (FLDENV/FRSTOR): only "empty" versus "in use" matters.
    pub fn set_tag_word(&mut self, tw: u16) {
        self.empty = (0..8).fold(0u8, |acc, p| {
            acc | ((((tw >> (2 * p)) & 3) == TAG_EMPTY) as u8) << p
        });
    }

    /// FXSAVE abridged tag: bit i set when physical register i is in use.
    pub fn abridged_tag(&self) -> u8 {
        !self.empty
    }

    pub fn set_abridged_tag(&mut self, t: u8) {
        self.empty = !t;
    }

    /// Records the pointers of a non-control x87 instruction.
    pub fn record_instruction(&mut self, fip: u64, fcs: u16, fop: u16, mem: Option<(u64, u16)>) {
        self.fip = fip;
        self.fcs = fcs;
        self.fop = fop & 0x7FF;
        if let Some((fdp, fds)) = mem {
            self.fdp = fdp;
            self.fds = fds;
        }
    }

    /// MMX register MMi aliases the significand of physical register Ri.
    pub fn mmx(&self, i: usize) -> u64 {
        self.regs[i & 7].mantissa
    }

    /// An MMX write: sets the exponent field to all ones, and (as every MMX instruction
    /// except EMMS does) TOP = 0 with all registers tagged valid.
    pub fn set_mmx(&mut self, i: usize, v: u64) {
        self.regs[i & 7] = F80 {
            sign_exp: 0xFFFF,
            mantissa: v,
        };
        self.enter_mmx();
    }

    /// State change made by any MMX instruction.
    pub fn enter_mmx(&mut self) {
        self.set_top(0);
        self.empty = 0;
    }

    /// EMMS: tag every register empty.
    pub fn emms(&mut self) {
        self.empty = 0xFF;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fpu_state_push_pop_and_stack_faults() {
        let mut s = X87State::at_reset();
        s.init();
        for i in 0..8 {
            assert!(s.push(crate::fpu::convert::from_i64(i)));
        }
        assert_eq!(s.top(), 0);
        assert_eq!(s.st(0), crate::fpu::convert::from_i64(7));
        // Ninth push overflows: masked response pushes the indefinite, C1 = 1.
        assert!(s.push(F80::ONE));
        assert_eq!(s.st(0), F80::INDEFINITE);
        assert_eq!(
            s.status & (IE as u16 | SW_SF | SW_C1),
            IE as u16 | SW_SF | SW_C1
        );
        assert!(!s.exception_pending());
        s.init();
        assert_eq!(s.operand(0), Some(F80::INDEFINITE));
        assert_eq!(s.status & SW_C1, 0);
        // Unmasked: no value, ES and B set.
        s.init();
        s.set_control(CW_DEFAULT & !1);
        assert_eq!(s.operand(3), None);
        assert!(s.exception_pending());
        assert_eq!(s.status & (SW_ES | SW_B), SW_ES | SW_B);
        s.clear_exceptions();
        assert!(!s.exception_pending());
    }

    #[test]
    fn fpu_state_unmasked_results_and_tags() {
        let mut s = X87State::at_reset();
        s.init();
        s.push(F80::ONE);
        s.push(F80::ZERO);
        s.push(F80::INFINITY);
        // FINIT leaves TOP 0: pushes go to R7, R6, R5.
        assert_eq!(s.tag_word(), 0x1BFF);
        s.set_control(CW_DEFAULT & !(ZE as u16));
        let r = FpResult {
            value: F80::INFINITY,
            flags: ZE,
            c1: false,
        };
        assert!(!s.write_result(0, r));
        assert!(s.exception_pending());
        // Re-masking through FLDCW clears the summary bits.
        s.set_control(CW_DEFAULT);
        assert!(!s.exception_pending());
        // Memory store with unmasked overflow is suppressed, register store is not.
        s.set_control(CW_DEFAULT & !(OE as u16));
        assert!(!s.commit_flags(OE | 0x20, true, Dest::Memory));
        assert!(s.commit_flags(OE | 0x20, true, Dest::Register));
        assert_eq!(s.status & SW_C1, SW_C1);
    }

    #[test]
    fn fpu_state_mmx_aliasing() {
        let mut s = X87State::at_reset();
        s.init();
        s.set_top(5);
        s.set_mmx(2, 0x1122_3344_5566_7788);
        assert_eq!(s.top(), 0);
        assert_eq!(s.tag_word(), 0x5565);
        assert_eq!(
            s.regs[2],
            F80 {
                sign_exp: 0xFFFF,
                mantissa: 0x1122_3344_5566_7788
            }
        );
        assert_eq!(s.mmx(2), 0x1122_3344_5566_7788);
        s.emms();
        assert_eq!(s.tag_word(), 0xFFFF);
    }
}
