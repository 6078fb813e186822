//! The virtual 60 Hz vblank of scanout 0, driven by the machine's clock.

/// Vblanks fall on a fixed grid of the device's virtual time (multiples of the period),
/// so the same guest run always sees the same sequence and timestamps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VblankClock {
    period_ns: u64,
    seq: u64,
    last_time_ns: u64,
    next_ns: Option<u64>,
}

impl VblankClock {
    pub fn new(period_ns: u64) -> Self {
        Self {
            period_ns: period_ns.max(1),
            seq: 0,
            last_time_ns: 0,
            next_ns: None,
        }
    }

    pub fn period_ns(&self) -> u64 {
        self.period_ns
    }

    pub fn seq(&self) -> u64 {
        self.seq
    }

    pub fn last_time_ns(&self) -> u64 {
        self.last_time_ns
    }

    /// When the next vblank happens, if running.
    pub fn next_ns(&self) -> Option<u64> {
        self.next_ns
    }

    pub fn start(&mut self, now_ns: u64) {
        if self.next_ns.is_none() {
            self.next_ns = Some(
                (now_ns / self.period_ns)
                    .saturating_add(1)
                    .saturating_mul(self.period_ns),
            );
        }
    }

    pub fn stop(&mut self) {
        self.next_ns = None;
    }

    /// Advances to `now_ns`; returns how many vblanks happened since the last call.
    pub fn advance(&mut self, now_ns: u64) -> u64 {
        let Some(next) = self.next_ns else {
            return 0;
        };
        if now_ns < next {
            return 0;
        }
        let count = (now_ns - next) / self.period_ns + 1;
        self.seq = self.seq.wrapping_add(count);
        self.last_time_ns = next + (count - 1) * self.period_ns;
        self.next_ns = Some(self.last_time_ns.saturating_add(self.period_ns));
        count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_aligned_counting() {
        let mut v = VblankClock::new(100);
        assert_eq!(v.advance(1000), 0, "stopped clocks do not tick");
        v.start(250);
        assert_eq!(v.next_ns(), Some(300));
        assert_eq!(v.advance(299), 0);
        assert_eq!(v.advance(300), 1);
        assert_eq!((v.seq(), v.last_time_ns()), (1, 300));
        assert_eq!(v.advance(730), 4);
        assert_eq!(
            (v.seq(), v.last_time_ns(), v.next_ns()),
            (5, 700, Some(800))
        );
        v.stop();
        assert_eq!(v.advance(5000), 0);
        assert_eq!(v.seq(), 5, "the counter keeps its value while stopped");
    }
}
