//! SSE/SSE2/SSE3/SSSE3 state and pure vector operations.
//!
//! [`SseState`] holds XMM0..15 and MXCSR; [`float`] implements the scalar and packed
//! f32/f64 arithmetic on the shared soft-float core with exact MXCSR semantics;
//! [`int`] holds the integer SIMD operations shared by MMX (64-bit) and SSE2 (128-bit).

pub mod convert;
mod fast;
pub mod float;
pub mod int;
mod mxcsr;

pub use mxcsr::{MXCSR_DEFAULT, MXCSR_MASK, Mxcsr};

/// The SSE register file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseState {
    pub xmm: [u128; 16],
    pub mxcsr: u32,
}

impl Default for SseState {
    fn default() -> Self {
        SseState {
            xmm: [0; 16],
            mxcsr: MXCSR_DEFAULT,
        }
    }
}

impl SseState {
    pub fn env(&self) -> Mxcsr {
        Mxcsr(self.mxcsr)
    }

    /// LDMXCSR/FXRSTOR validation: reserved bits set raise #GP.
    pub fn set_mxcsr(&mut self, v: u32) -> Result<(), crate::fpu::ImageError> {
        if v & !MXCSR_MASK != 0 {
            return Err(crate::fpu::ImageError::ReservedMxcsr(v));
        }
        self.mxcsr = v;
        Ok(())
    }

    /// ORs exception flags into MXCSR; returns true when one of them is unmasked
    /// (the instruction must then raise #XM, or #UD when CR4.OSXMMEXCPT is clear,
    /// without writing its destination).
    pub fn raise(&mut self, flags: u8) -> bool {
        self.mxcsr |= (flags & 0x3F) as u32;
        flags & !self.env().masks() & 0x3F != 0
    }
}
