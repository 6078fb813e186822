//! Debug registers: instruction and data breakpoints (DR0-DR3, DR6, DR7).
//!
//! Breakpoints are rare, so they cost nothing when DR7 enables none: with an enabled
//! instruction breakpoint the run loop executes one instruction per block and checks RIP
//! first; with an enabled data breakpoint every memory access takes the TLB slow path
//! (the fast-path permission bits are switched off), where accesses are compared.

use crate::exec::Exec;
use crate::mmu::Access;

/// Enabled breakpoints by kind, derived from DR7.
#[derive(Clone, Copy, Debug, Default)]
pub struct Breakpoints {
    pub exec: bool,
    pub data: bool,
}

fn enabled(dr7: u64, n: usize) -> bool {
    dr7 & (3 << (2 * n)) != 0
}

fn rw_bits(dr7: u64, n: usize) -> u64 {
    (dr7 >> (16 + 4 * n)) & 3
}

fn len_bytes(dr7: u64, n: usize) -> u64 {
    match (dr7 >> (18 + 4 * n)) & 3 {
        0 => 1,
        1 => 2,
        2 => 8,
        _ => 4,
    }
}

pub fn scan(dr7: u64) -> Breakpoints {
    let mut b = Breakpoints::default();
    for n in 0..4 {
        if enabled(dr7, n) {
            match rw_bits(dr7, n) {
                0 => b.exec = true,
                1 | 3 => b.data = true,
                _ => {} // I/O breakpoints need CR4.DE; not implemented.
            }
        }
    }
    b
}

impl Exec<'_> {
    /// Recompute breakpoint state after a DR write (and on entry to `run`).
    pub fn refresh_breakpoints(&mut self) {
        self.c.breakpoints = scan(self.s.dr[7]);
        if self.c.breakpoints.exec {
            self.c.events |= crate::core::EV_BP_EXEC;
        } else {
            self.c.events &= !crate::core::EV_BP_EXEC;
        }
        crate::seg::refresh_mode(self);
    }

    /// DR6 bits of instruction breakpoints matching linear address `lin`.
    pub fn exec_breakpoint_hits(&self, lin: u64) -> u64 {
        let dr7 = self.s.dr[7];
        let mut hits = 0;
        for n in 0..4 {
            if enabled(dr7, n) && rw_bits(dr7, n) == 0 && self.s.dr[n] == lin {
                hits |= 1 << n;
            }
        }
        hits
    }

    /// Record data breakpoint hits for an access (reported as a trap after the instruction).
    pub fn check_data_breakpoints(&mut self, lin: u64, size: u8, acc: Access) {
        let dr7 = self.s.dr[7];
        for n in 0..4 {
            if !enabled(dr7, n) {
                continue;
            }
            let rw = rw_bits(dr7, n);
            let hit_kind = match acc {
                Access::Write => rw == 1 || rw == 3,
                Access::Read => rw == 3,
                Access::Exec => false,
            };
            if !hit_kind {
                continue;
            }
            let len = len_bytes(dr7, n);
            let start = self.s.dr[n] & !(len - 1);
            if lin < start + len && start < lin + size as u64 {
                self.c.pending_db |= 1 << n;
                self.c.events |= crate::core::EV_DATA_BP;
                self.c.end_block = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dr7_decoding() {
        // DR0 exec (L0), DR1 write 4 bytes (G1).
        let dr7 = 0b01 | (0b10 << 2) | (0b01 << 20) | (0b11 << 22);
        let b = scan(dr7);
        assert!(b.exec && b.data);
        assert_eq!(len_bytes(dr7, 1), 4);
        assert!(!scan(0x400).exec);
    }
}
