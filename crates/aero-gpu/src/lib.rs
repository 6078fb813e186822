//! Display devices: the legacy VGA/VBE adapter (boot, text mode, Bochs DISPI) and,
//! later, the AeroGPU paravirtual device.
#![forbid(unsafe_code)]
