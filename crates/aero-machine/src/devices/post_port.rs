//! The POST diagnostic port (0x80): firmware writes progress codes here. Every byte is
//! recorded for `--post-log`; reading returns the last code, as on most chipsets. Port
//! 0x80 is also the classic "I/O delay" port, so writes must stay cheap.

use super::{PortIo, read_bytes, write_bytes};

pub const PORT: u16 = 0x80;
/// Codes kept until the machine drains them; older codes are dropped beyond this.
const MAX_CODES: usize = 1 << 16;

/// Port 0x80.
#[derive(Clone, Debug, Default)]
pub struct PostPort {
    codes: Vec<u8>,
    last: u8,
    dropped: u64,
}

impl PostPort {
    pub fn new() -> PostPort {
        PostPort::default()
    }

    /// Codes written since the last call, oldest first.
    pub fn take_codes(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.codes)
    }

    /// The most recent code (0 before any write).
    pub fn last_code(&self) -> u8 {
        self.last
    }

    /// Codes lost because the machine did not drain the log in time.
    pub fn dropped_codes(&self) -> u64 {
        self.dropped
    }
}

impl PortIo for PostPort {
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        read_bytes(port, size, |p| if p == PORT { self.last } else { 0xFF })
    }

    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        write_bytes(port, size, value, |p, v| {
            if p != PORT {
                return;
            }
            self.last = v;
            if self.codes.len() < MAX_CODES {
                self.codes.push(v);
            } else {
                self.dropped += 1;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_codes_in_order() {
        let mut port = PostPort::new();
        for code in [0x01, 0x55, 0xAA] {
            port.io_write(PORT, 1, code);
        }
        assert_eq!(port.io_read(PORT, 1), 0xAA);
        assert_eq!(port.last_code(), 0xAA);
        assert_eq!(port.take_codes(), vec![0x01, 0x55, 0xAA]);
        assert!(port.take_codes().is_empty());
        for _ in 0..MAX_CODES + 3 {
            port.io_write(PORT, 1, 0x11);
        }
        assert_eq!(port.take_codes().len(), MAX_CODES);
        assert_eq!(port.dropped_codes(), 3);
    }
}
