//! One PC: memory map, port/MMIO dispatch, PCI bus, interrupt controllers, timers and
//! the run loop with its virtual clock. Owns and wires every device.
#![forbid(unsafe_code)]
pub mod devices;
