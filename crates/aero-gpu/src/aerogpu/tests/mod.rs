//! AeroGPU tests: the processor driven directly, and the device driven the way the guest
//! driver does (registers, ring in guest memory, fences, IRQs, vblank).

mod device;
mod fuzz;
mod guest;
mod processor;
mod soft;
mod stream;
mod twin;
