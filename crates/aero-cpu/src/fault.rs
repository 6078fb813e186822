//! Exceptions as values.
//!
//! Instruction handlers return `Err(Fault)`; nothing architectural has been committed
//! at that point (handlers write their destination last), so the run loop delivers the
//! exception with RIP still at the faulting instruction.

pub const DE: u8 = 0;
pub const DB: u8 = 1;
pub const NMI: u8 = 2;
pub const BP: u8 = 3;
pub const OF: u8 = 4;
pub const BR: u8 = 5;
pub const UD: u8 = 6;
pub const NM: u8 = 7;
pub const DF: u8 = 8;
pub const TS: u8 = 10;
pub const NP: u8 = 11;
pub const SS: u8 = 12;
pub const GP: u8 = 13;
pub const PF: u8 = 14;
pub const MF: u8 = 16;
pub const AC: u8 = 17;
pub const MC: u8 = 18;
pub const XM: u8 = 19;

/// An exception raised while executing (or delivering) an instruction.
///
/// Kept at 8 bytes so `Result<(), Fault>` is returned in a register by every handler.
/// `form` is never zero and is the only niche, so `Ok(())` is that byte at zero: the run
/// loop tests a handler's result with one byte compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    pub vector: u8,
    form: std::num::NonZeroU8,
    code: u32,
}

/// `Fault::form` without and with an error code.
const NO_CODE: std::num::NonZeroU8 = std::num::NonZeroU8::MIN;
const WITH_CODE: std::num::NonZeroU8 = NO_CODE.saturating_add(1);

const _: () = assert!(std::mem::size_of::<Result<(), Fault>>() == 8);

impl Fault {
    pub const fn new(vector: u8) -> Self {
        Fault {
            vector,
            form: NO_CODE,
            code: 0,
        }
    }
    pub const fn with_code(vector: u8, code: u32) -> Self {
        Fault {
            vector,
            form: WITH_CODE,
            code,
        }
    }
    pub const fn error_code(&self) -> Option<u32> {
        if self.form.get() == WITH_CODE.get() {
            Some(self.code)
        } else {
            None
        }
    }
    pub const fn ud() -> Self {
        Fault::new(UD)
    }
    pub const fn de() -> Self {
        Fault::new(DE)
    }
    pub const fn gp(code: u32) -> Self {
        Fault::with_code(GP, code)
    }
    pub const fn gp0() -> Self {
        Fault::with_code(GP, 0)
    }
    pub const fn ss(code: u32) -> Self {
        Fault::with_code(SS, code)
    }
    pub const fn np(code: u32) -> Self {
        Fault::with_code(NP, code)
    }
    pub const fn ts(code: u32) -> Self {
        Fault::with_code(TS, code)
    }
    pub const fn nm() -> Self {
        Fault::new(NM)
    }
}

pub type XResult<T = ()> = Result<T, Fault>;

/// Class used for the double-fault decision (SDM Vol. 3, Table 6-5).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum FaultClass {
    Benign,
    Contributory,
    PageFault,
    DoubleFault,
}

pub fn class_of(vector: u8) -> FaultClass {
    match vector {
        DE | TS | NP | SS | GP => FaultClass::Contributory,
        PF => FaultClass::PageFault,
        DF => FaultClass::DoubleFault,
        _ => FaultClass::Benign,
    }
}

/// Does raising `second` while delivering `first` escalate to #DF?
pub fn escalates(first: u8, second: u8) -> bool {
    matches!(
        (class_of(first), class_of(second)),
        (FaultClass::Contributory, FaultClass::Contributory)
            | (FaultClass::PageFault, FaultClass::Contributory)
            | (FaultClass::PageFault, FaultClass::PageFault)
    )
}
