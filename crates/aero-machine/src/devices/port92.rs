//! System control port A (port 0x92, "fast A20 and reset") as implemented by PS/2-class
//! chipsets and the PIIX family: bit 1 gates A20, a 0→1 transition of bit 0 pulses the
//! CPU reset line (the bit reads back as written until cleared by reset).
//!
//! The machine combines [`Port92::a20_enabled`] with the keyboard controller's A20 gate
//! (either may enable it) and polls [`Port92::take_reset_request`].

use super::{PortIo, read_bytes, write_bytes};

pub const PORT: u16 = 0x92;

const FAST_RESET: u8 = 0x01;
const A20: u8 = 0x02;

/// Port 0x92.
#[derive(Clone, Debug, Default)]
pub struct Port92 {
    value: u8,
    reset_requested: bool,
}

impl Port92 {
    pub fn new() -> Port92 {
        Port92::default()
    }

    /// RESET#: the fast-reset bit clears; the A20 bit keeps its value (PIIX3 keeps it,
    /// and firmware that enabled A20 before a warm reboot expects it still on).
    pub fn reset(&mut self) {
        self.value &= !FAST_RESET;
        self.reset_requested = false;
    }

    /// A20 gate requested through this port.
    pub fn a20_enabled(&self) -> bool {
        self.value & A20 != 0
    }

    /// The guest requested a fast reset since the last call. The machine resets the CPU;
    /// the port keeps its value (and so its A20 setting) as on PIIX3.
    pub fn take_reset_request(&mut self) -> bool {
        std::mem::take(&mut self.reset_requested)
    }

    fn write_byte(&mut self, value: u8) {
        if value & FAST_RESET != 0 && self.value & FAST_RESET == 0 {
            self.reset_requested = true;
        }
        self.value = value & (FAST_RESET | A20);
    }
}

impl PortIo for Port92 {
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        read_bytes(port, size, |p| if p == PORT { self.value } else { 0xFF })
    }

    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        write_bytes(port, size, value, |p, v| {
            if p == PORT {
                self.write_byte(v);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a20_bit_reads_back() {
        let mut port = Port92::new();
        assert!(!port.a20_enabled());
        port.io_write(PORT, 1, 0x02);
        assert!(port.a20_enabled());
        assert_eq!(port.io_read(PORT, 1), 0x02);
        assert!(!port.take_reset_request());
        port.io_write(PORT, 1, 0xFC);
        assert!(!port.a20_enabled());
        assert_eq!(port.io_read(PORT, 1), 0x00, "only bits 0 and 1 exist");
    }

    #[test]
    fn reset_on_rising_edge_of_bit0() {
        let mut port = Port92::new();
        port.io_write(PORT, 1, 0x03);
        assert!(port.take_reset_request());
        assert!(!port.take_reset_request());
        port.io_write(PORT, 1, 0x03);
        assert!(!port.take_reset_request(), "no edge while bit 0 stays set");
        port.io_write(PORT, 1, 0x02);
        port.io_write(PORT, 1, 0x03);
        assert!(port.take_reset_request());
        assert_eq!(port.io_read(0x93, 1), 0xFF);
    }
}
