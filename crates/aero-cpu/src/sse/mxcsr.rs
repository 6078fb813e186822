//! MXCSR: SIMD floating-point control and status.

use crate::fpu::softfloat::{Format, OE, RoundEnv, Rounding, UE};

/// MXCSR after reset/FNINIT-independent initialisation: all masked, nearest, no FTZ/DAZ.
pub const MXCSR_DEFAULT: u32 = 0x1F80;
/// Writable MXCSR bits (FXSAVE's MXCSR_MASK): flags, DAZ, masks, RC, FTZ.
pub const MXCSR_MASK: u32 = 0xFFFF;

const DAZ: u32 = 1 << 6;
const FTZ: u32 = 1 << 15;

/// A decoded view of MXCSR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mxcsr(pub u32);

impl Mxcsr {
    pub fn rounding(self) -> Rounding {
        Rounding::from_bits((self.0 >> 13) as u16)
    }
    /// Exception masks in flag-bit order (IM DM ZM OM UM PM).
    pub fn masks(self) -> u8 {
        ((self.0 >> 7) & 0x3F) as u8
    }
    pub fn daz(self) -> bool {
        self.0 & DAZ != 0
    }
    pub fn ftz(self) -> bool {
        self.0 & FTZ != 0
    }
    pub(crate) fn round_env_with(self, format: Format, rounding: Rounding) -> RoundEnv {
        let masks = self.masks();
        RoundEnv {
            rounding,
            format,
            overflow_masked: masks & OE != 0,
            underflow_masked: masks & UE != 0,
            wrap_unmasked: false,
            flush_to_zero: self.ftz(),
        }
    }
}
