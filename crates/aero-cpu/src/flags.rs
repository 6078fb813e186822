//! Lazy arithmetic flags.
//!
//! Most instructions that set CF/PF/AF/ZF/SF/OF have their flags overwritten before
//! anything reads them, so flag-setting instructions only record the operation, its
//! operands and result here; the six status flags are computed when something reads
//! them (Jcc, PUSHF, ADC, ...). `RFLAGS` in [`CpuState`](crate::CpuState) holds every
//! other bit, and the status bits too whenever `op == FlagOp::None`.

pub const CF: u64 = 1 << 0;
pub const PF: u64 = 1 << 2;
pub const AF: u64 = 1 << 4;
pub const ZF: u64 = 1 << 6;
pub const SF: u64 = 1 << 7;
pub const TF: u64 = 1 << 8;
pub const IF: u64 = 1 << 9;
pub const DF: u64 = 1 << 10;
pub const OF: u64 = 1 << 11;
pub const IOPL: u64 = 3 << 12;
pub const NT: u64 = 1 << 14;
pub const RF: u64 = 1 << 16;
pub const VM: u64 = 1 << 17;
pub const AC: u64 = 1 << 18;
pub const VIF: u64 = 1 << 19;
pub const VIP: u64 = 1 << 20;
pub const ID: u64 = 1 << 21;
/// The six arithmetic status flags.
pub const STATUS: u64 = CF | PF | AF | ZF | SF | OF;

/// The operation whose operands are recorded; decides how each flag is derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagOp {
    /// Status flags are materialized in RFLAGS.
    None,
    Add,
    /// `aux` = carry in.
    Adc,
    Sub,
    /// `aux` = borrow in.
    Sbb,
    /// AND/OR/XOR/TEST: CF = OF = AF = 0.
    Logic,
    /// `aux` = CF preserved from before the INC.
    Inc,
    Dec,
    /// SF/ZF/PF from `res`; CF, OF and AF given explicitly in `aux` (shifts, MUL...).
    Explicit,
}

#[derive(Clone, Copy, Debug)]
pub struct LazyFlags {
    pub op: FlagOp,
    /// Operand size in bytes (1, 2, 4, 8).
    pub size: u8,
    pub dst: u64,
    pub src: u64,
    pub res: u64,
    pub aux: u64,
}

impl Default for LazyFlags {
    fn default() -> Self {
        LazyFlags {
            op: FlagOp::None,
            size: 4,
            dst: 0,
            src: 0,
            res: 0,
            aux: 0,
        }
    }
}

#[inline(always)]
pub fn size_mask(size: u8) -> u64 {
    match size {
        1 => 0xFF,
        2 => 0xFFFF,
        4 => 0xFFFF_FFFF,
        _ => u64::MAX,
    }
}

#[inline(always)]
pub fn sign_bit(size: u8) -> u64 {
    1u64 << (size as u32 * 8 - 1)
}

#[inline(always)]
fn parity_even(v: u64) -> bool {
    (v as u8).count_ones() & 1 == 0
}

impl LazyFlags {
    #[inline(always)]
    pub fn set(&mut self, op: FlagOp, size: u8, dst: u64, src: u64, res: u64) {
        self.op = op;
        self.size = size;
        self.dst = dst;
        self.src = src;
        self.res = res;
    }

    /// Record an op whose CF/OF/AF were computed by the instruction (bits in `cf_of_af`).
    #[inline(always)]
    pub fn set_explicit(&mut self, size: u8, res: u64, cf_of_af: u64) {
        self.op = FlagOp::Explicit;
        self.size = size;
        self.res = res;
        self.aux = cf_of_af;
    }

    #[inline(always)]
    pub fn cf(&self, rflags: u64) -> bool {
        let m = size_mask(self.size);
        match self.op {
            FlagOp::None => rflags & CF != 0,
            FlagOp::Add => (self.res & m) < (self.dst & m),
            FlagOp::Adc => {
                if self.aux != 0 {
                    (self.res & m) <= (self.dst & m)
                } else {
                    (self.res & m) < (self.dst & m)
                }
            }
            FlagOp::Sub => (self.dst & m) < (self.src & m),
            FlagOp::Sbb => {
                if self.aux != 0 {
                    (self.dst & m) <= (self.src & m)
                } else {
                    (self.dst & m) < (self.src & m)
                }
            }
            FlagOp::Logic => false,
            FlagOp::Inc | FlagOp::Dec => self.aux != 0,
            FlagOp::Explicit => self.aux & CF != 0,
        }
    }

    #[inline(always)]
    pub fn zf(&self, rflags: u64) -> bool {
        match self.op {
            FlagOp::None => rflags & ZF != 0,
            _ => self.res & size_mask(self.size) == 0,
        }
    }

    #[inline(always)]
    pub fn sf(&self, rflags: u64) -> bool {
        match self.op {
            FlagOp::None => rflags & SF != 0,
            _ => self.res & sign_bit(self.size) != 0,
        }
    }

    #[inline(always)]
    pub fn pf(&self, rflags: u64) -> bool {
        match self.op {
            FlagOp::None => rflags & PF != 0,
            _ => parity_even(self.res),
        }
    }

    #[inline(always)]
    pub fn of(&self, rflags: u64) -> bool {
        let s = sign_bit(self.size);
        match self.op {
            FlagOp::None => rflags & OF != 0,
            FlagOp::Add | FlagOp::Adc => (self.dst ^ self.res) & (self.src ^ self.res) & s != 0,
            FlagOp::Sub | FlagOp::Sbb => (self.dst ^ self.src) & (self.dst ^ self.res) & s != 0,
            FlagOp::Logic => false,
            FlagOp::Inc => self.res & size_mask(self.size) == s,
            FlagOp::Dec => self.res & size_mask(self.size) == s - 1,
            FlagOp::Explicit => self.aux & OF != 0,
        }
    }

    #[inline(always)]
    pub fn af(&self, rflags: u64) -> bool {
        match self.op {
            FlagOp::None => rflags & AF != 0,
            FlagOp::Add | FlagOp::Adc | FlagOp::Sub | FlagOp::Sbb => {
                (self.dst ^ self.src ^ self.res) & 0x10 != 0
            }
            FlagOp::Logic => false,
            FlagOp::Inc => self.res & 0xF == 0,
            FlagOp::Dec => self.res & 0xF == 0xF,
            FlagOp::Explicit => self.aux & AF != 0,
        }
    }

    /// RFLAGS with the status bits computed.
    #[inline]
    pub fn read(&self, rflags: u64) -> u64 {
        if self.op == FlagOp::None {
            return rflags;
        }
        let mut f = rflags & !STATUS;
        if self.cf(rflags) {
            f |= CF;
        }
        if self.pf(rflags) {
            f |= PF;
        }
        if self.af(rflags) {
            f |= AF;
        }
        if self.zf(rflags) {
            f |= ZF;
        }
        if self.sf(rflags) {
            f |= SF;
        }
        if self.of(rflags) {
            f |= OF;
        }
        f
    }

    /// Evaluate an x86 condition code (0 = O ... 15 = G, the low nibble of Jcc/SETcc/CMOVcc).
    #[inline(always)]
    pub fn cond(&self, rflags: u64, cc: u8) -> bool {
        let r = match cc >> 1 {
            0 => self.of(rflags),
            1 => self.cf(rflags),
            2 => self.zf(rflags),
            3 => self.cf(rflags) || self.zf(rflags),
            4 => self.sf(rflags),
            5 => self.pf(rflags),
            6 => self.sf(rflags) != self.of(rflags),
            _ => self.zf(rflags) || (self.sf(rflags) != self.of(rflags)),
        };
        r ^ (cc & 1 != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_borrow_and_overflow() {
        let mut f = LazyFlags::default();
        // 0x80 - 1 = 0x7F: signed overflow, no borrow, AF set.
        f.set(FlagOp::Sub, 1, 0x80, 1, 0x7F);
        let r = f.read(0x2);
        assert_eq!(r & STATUS, OF | AF);
        // 0 - 1 = 0xFF: borrow, sign, parity even (8 ones), AF.
        f.set(FlagOp::Sub, 1, 0, 1, 0xFF);
        assert_eq!(f.read(0x2) & STATUS, CF | SF | PF | AF);
    }

    #[test]
    fn adc_with_carry_in_wraps() {
        let mut f = LazyFlags::default();
        f.set(FlagOp::Adc, 2, 0xFFFF, 0xFFFF, 0xFFFF);
        f.aux = 1;
        assert!(f.cf(0));
        f.aux = 0;
        f.res = 0xFFFE;
        assert!(f.cf(0));
    }

    #[test]
    fn inc_keeps_carry_and_conditions() {
        let mut f = LazyFlags::default();
        f.set(FlagOp::Inc, 4, 0x7FFF_FFFF, 1, 0x8000_0000);
        f.aux = 1;
        let r = f.read(0);
        assert_eq!(r & STATUS, CF | OF | SF | AF | PF);
        assert!(!f.cond(0, 12)); // L: SF != OF -> false
        assert!(f.cond(0, 2)); // B
    }
}
