//! The machine's virtual clock.
//!
//! Deterministic mode: time is a pure function of retired instructions plus the idle
//! time skipped while the CPU halts, so the same input gives the same output bit for bit.
//! Real-time mode follows the host clock (for the desktop app).

use std::time::Instant;

/// Virtual nanoseconds per retired instruction in deterministic mode (a 100 MIPS machine).
pub const NS_PER_INSTRUCTION: u64 = 10;

pub struct Clock {
    deterministic: bool,
    /// Idle time skipped while halted (deterministic mode).
    skipped_ns: u64,
    host_start: Instant,
    /// Last value handed out; time never goes backwards.
    last_ns: u64,
}

impl Clock {
    pub fn new(deterministic: bool) -> Clock {
        Clock {
            deterministic,
            skipped_ns: 0,
            host_start: Instant::now(),
            last_ns: 0,
        }
    }

    /// The time after `instructions` retired instructions.
    pub fn at(&mut self, instructions: u64) -> u64 {
        let t = if self.deterministic {
            instructions
                .saturating_mul(NS_PER_INSTRUCTION)
                .saturating_add(self.skipped_ns)
        } else {
            self.host_start.elapsed().as_nanos() as u64
        };
        self.last_ns = self.last_ns.max(t);
        self.last_ns
    }

    /// The latest time handed out.
    pub fn now(&self) -> u64 {
        self.last_ns
    }

    /// Instructions that fit before `deadline_ns` starting at `now_ns` (at least 1).
    pub fn instructions_until(&self, now_ns: u64, deadline_ns: u64) -> u64 {
        (deadline_ns.saturating_sub(now_ns) / NS_PER_INSTRUCTION).max(1)
    }

    /// Real-time mode: the host held the guest still for `span`, which guest time skips.
    pub fn skip_host_time(&mut self, span: std::time::Duration) {
        if let Some(start) = self.host_start.checked_add(span) {
            self.host_start = start;
        }
    }

    /// The CPU is halted until `deadline_ns`: skip (deterministic) or sleep (real time).
    pub fn idle_until(&mut self, deadline_ns: u64) {
        if deadline_ns <= self.last_ns {
            return;
        }
        if self.deterministic {
            self.skipped_ns += deadline_ns - self.last_ns;
            self.last_ns = deadline_ns;
        } else {
            let now = self.host_start.elapsed().as_nanos() as u64;
            if deadline_ns > now {
                // Bounded so input and window events are still seen promptly.
                std::thread::sleep(std::time::Duration::from_nanos(
                    (deadline_ns - now).min(10_000_000),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_time_counts_instructions_and_idle() {
        let mut c = Clock::new(true);
        assert_eq!(c.at(100), 100 * NS_PER_INSTRUCTION);
        c.idle_until(5_000);
        assert_eq!(c.now(), 5_000);
        assert_eq!(c.at(100), 5_000, "time never goes backwards");
        assert_eq!(
            c.at(200),
            200 * NS_PER_INSTRUCTION + 5_000 - 100 * NS_PER_INSTRUCTION
        );
        assert_eq!(c.instructions_until(0, 95), 9);
        assert_eq!(c.instructions_until(100, 50), 1);
    }
}
