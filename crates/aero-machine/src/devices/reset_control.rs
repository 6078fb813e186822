//! PIIX3 reset control register (port 0xCF9, byte access only): a 0→1 transition of bit 2
//! (RST_CPU) resets the machine; bit 1 (SYS_RST) selects a hard reset (1) or a soft
//! CPU-only INIT (0). This is also the ACPI FADT reset register (value 0x06).
//!
//! Port 0xCF9 overlaps the PCI configuration address dword at 0xCF8: the machine routes only
//! byte accesses at 0xCF9 here and everything wider to the PCI host bridge.

use super::PortIo;

pub const PORT: u16 = 0xCF9;

const SYS_RST: u8 = 0x02;
const RST_CPU: u8 = 0x04;
const FULL_RST: u8 = 0x08;

/// What kind of reset the guest asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResetKind {
    /// INIT the CPU only (SYS_RST clear).
    Soft,
    /// Reset the whole platform (SYS_RST set).
    Hard,
}

/// The 0xCF9 reset control register.
#[derive(Clone, Debug, Default)]
pub struct ResetControl {
    value: u8,
    request: Option<ResetKind>,
}

impl ResetControl {
    pub fn new() -> ResetControl {
        ResetControl::default()
    }

    /// The reset the guest requested since the last call.
    pub fn take_reset_request(&mut self) -> Option<ResetKind> {
        self.request.take()
    }
}

impl PortIo for ResetControl {
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        if port == PORT && size == 1 {
            u32::from(self.value)
        } else {
            0xFFFF_FFFF >> (32 - 8 * u32::from(size.clamp(1, 4)))
        }
    }

    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        if port != PORT || size != 1 {
            return;
        }
        let value = value as u8;
        if value & RST_CPU != 0 && self.value & RST_CPU == 0 {
            self.request = Some(if value & SYS_RST != 0 {
                ResetKind::Hard
            } else {
                ResetKind::Soft
            });
        }
        // RST_CPU is self-clearing once the reset has been signalled.
        self.value = value & (SYS_RST | FULL_RST);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hard_and_soft_reset() {
        let mut rc = ResetControl::new();
        rc.io_write(PORT, 1, 0x02);
        assert_eq!(rc.take_reset_request(), None, "SYS_RST alone does nothing");
        rc.io_write(PORT, 1, 0x06);
        assert_eq!(rc.take_reset_request(), Some(ResetKind::Hard));
        assert_eq!(rc.take_reset_request(), None);
        assert_eq!(rc.io_read(PORT, 1), 0x02);
        rc.io_write(PORT, 1, 0x04);
        assert_eq!(rc.take_reset_request(), Some(ResetKind::Soft));
    }

    #[test]
    fn wide_accesses_are_not_ours() {
        let mut rc = ResetControl::new();
        rc.io_write(PORT, 2, 0x06);
        assert_eq!(rc.take_reset_request(), None);
        assert_eq!(rc.io_read(PORT, 2), 0xFFFF);
        assert_eq!(rc.io_read(0xCF8, 1), 0xFF);
    }
}
