//! x87 floating point: a true 80-bit extended-precision soft-float and the FPU state.
//!
//! Layers, bottom up:
//! - [`softfloat`]: format-independent exact arithmetic and IEEE rounding (shared with SSE).
//! - [`F80`] plus [`arith`], [`convert`], [`transcend`]: x87 semantics as pure functions
//!   returning the value, the exception flags raised and C1.
//! - [`X87State`]: registers, stack, control/status/tag words, exception delivery
//!   decisions and the FSAVE/FSTENV/FXSAVE memory images.
//!
//! Conformance: FADD/FSUB/FMUL/FDIV/FSQRT are correctly rounded in every precision
//! control and rounding mode (checked bit for bit against mpmath, `arith_cases.rs`);
//! transcendentals are computed with ~126-bit intermediates and rounded once (checked
//! against mpmath in all rounding modes, `transcend_cases.rs`); the only known
//! deliberate difference from silicon is the exact argument reduction of FSIN/FCOS/
//! FSINCOS/FPTAN (Intel reduces with a 66-bit pi). The exec layer (`exec/x87*.rs`) is
//! differentially tested against QEMU by `tests/qemu_diff`.

pub mod arith;
pub mod convert;
mod f80;
mod fast;
#[cfg(test)]
mod hostile;
mod image;
pub mod softfloat;
mod state;
pub mod transcend;
mod wide;

pub use arith::{Compare, FpResult, Precision, X87Env};
pub use f80::F80;
pub use image::{EnvLayout, FxLayout, ImageError, fxrstor, fxsave};
pub use state::{Dest, SW_B, SW_C0, SW_C1, SW_C2, SW_C3, SW_ES, SW_SF, X87State};
