//! The trap protocol between ROM stubs and the Rust handlers.
//!
//! Every trapping stub in the ROM is
//! ```text
//!     push dx
//!     push ax
//!     mov  dx, TRAP_PORT
//!     mov  ax, <trap id>
//!     out  dx, ax          ; the machine stops the CPU here and calls Bios::handle_trap
//!     iret                 ; (or the next ROM instruction for internal traps)
//! ```
//! The handler first "pops" the saved AX/DX itself (so the service sees the caller's
//! registers and its results survive), then runs the service. Results go into the CPU
//! registers; CF/ZF for the caller are written into the FLAGS image of the IRET frame.
//! A trap is accepted only when the OUT instruction sits at the expected ROM address for
//! that id, so guest code writing the port by accident cannot corrupt its stack.

/// The I/O port the ROM stubs write to. Chosen outside every ISA/PCI/ACPI range the
/// machine uses (PCI I/O BARs start at 0xC000, QEMU-style debug ports 0x402/0x510/0xE9
/// are avoided so external BIOSes never hit it).
pub const TRAP_PORT: u16 = 0x0AF0;

/// What a trap asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TrapId {
    /// Software interrupt service `INT n`.
    Int(u8),
    /// Power-on self test (reset path), before option ROMs run.
    Post,
    /// IRQ1: AL holds the scancode read from port 0x60 (after INT 15h/4Fh).
    KeyboardIrq,
}

impl TrapId {
    pub fn code(self) -> u16 {
        match self {
            TrapId::Int(n) => n as u16,
            TrapId::Post => 0x100,
            TrapId::KeyboardIrq => 0x101,
        }
    }

    pub fn from_value(value: u32) -> Option<TrapId> {
        match value {
            0..=0xFF => Some(TrapId::Int(value as u8)),
            0x100 => Some(TrapId::Post),
            0x101 => Some(TrapId::KeyboardIrq),
            _ => None,
        }
    }
}

/// What the machine should do after a trap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrapOutcome {
    /// The CPU state was updated; continue running the CPU.
    Resume,
    /// The write did not come from one of our stubs; nothing was changed.
    Ignored,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trap_ids_round_trip() {
        for id in [
            TrapId::Int(0x13),
            TrapId::Int(0),
            TrapId::Post,
            TrapId::KeyboardIrq,
        ] {
            assert_eq!(TrapId::from_value(id.code() as u32), Some(id));
        }
        assert_eq!(TrapId::from_value(0x1234), None);
    }
}
