//! The Bochs/QEMU debug console port (0xE9): every byte written is output for the host
//! (`--debugcon`); reading returns 0xE9 so firmware can detect the port.

use super::{PortIo, read_bytes, write_bytes};

pub const PORT: u16 = 0xE9;
/// Output kept until the machine drains it; more is dropped.
const MAX_OUTPUT: usize = 1 << 20;

/// A byte-output debug port (0xE9 by default).
#[derive(Clone, Debug)]
pub struct DebugPort {
    port: u16,
    output: Vec<u8>,
}

impl Default for DebugPort {
    fn default() -> Self {
        DebugPort::new()
    }
}

impl DebugPort {
    pub fn new() -> DebugPort {
        DebugPort::at(PORT)
    }

    /// A debug port at another address (SeaBIOS builds for QEMU log to 0x402).
    pub fn at(port: u16) -> DebugPort {
        DebugPort {
            port,
            output: Vec::new(),
        }
    }

    /// Bytes written since the last call.
    pub fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.output)
    }
}

impl PortIo for DebugPort {
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        read_bytes(port, size, |p| if p == self.port { 0xE9 } else { 0xFF })
    }

    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        write_bytes(port, size, value, |p, v| {
            if p == self.port && self.output.len() < MAX_OUTPUT {
                self.output.push(v);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_bytes_and_identifies() {
        let mut port = DebugPort::new();
        assert_eq!(port.io_read(PORT, 1), 0xE9);
        for &b in b"hi\n" {
            port.io_write(PORT, 1, u32::from(b));
        }
        port.io_write(PORT, 2, 0x4241); // low byte to 0xE9, high byte to 0xEA (not ours)
        assert_eq!(port.take_output(), b"hi\nA");
        assert!(port.take_output().is_empty());
    }

    #[test]
    fn output_is_bounded() {
        let mut port = DebugPort::new();
        for _ in 0..MAX_OUTPUT + 5 {
            port.io_write(PORT, 1, 0x2E);
        }
        assert_eq!(port.take_output().len(), MAX_OUTPUT);
    }
}
