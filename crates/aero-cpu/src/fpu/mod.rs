//! x87 floating point: a true 80-bit extended-precision soft-float and the FPU state.
//!
//! Layers, bottom up:
//! - [`softfloat`]: format-independent exact arithmetic and IEEE rounding (shared with SSE).
//! - [`F80`] plus [`arith`], [`convert`], [`transcend`]: x87 semantics as pure functions
//!   returning the value, the exception flags raised and C1.
//! - [`X87State`]: registers, stack, control/status/tag words, exception delivery
//!   decisions and the FSAVE/FSTENV/FXSAVE memory images.

pub mod arith;
pub mod convert;
pub mod softfloat;
mod f80;
mod fast;
#[cfg(test)]
mod hostile;
mod image;
mod state;
pub mod transcend;
mod wide;

pub use arith::{Compare, FpResult, Precision, X87Env};
pub use f80::F80;
pub use image::{fxrstor, fxsave, EnvLayout, FxLayout, ImageError};
pub use state::{Dest, X87State, SW_B, SW_C0, SW_C1, SW_C2, SW_C3, SW_ES, SW_SF};
