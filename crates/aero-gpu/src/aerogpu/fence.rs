//! Fence completion order: submissions complete in ring order; a VSYNC present holds its
//! fence (and every later one) until the next vblank.

use std::collections::VecDeque;

/// A fence waiting to complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingFence {
    pub fence: u64,
    /// Raise AEROGPU_IRQ_FENCE when it completes (the descriptor had no NO_IRQ).
    pub irq: bool,
    /// Waits for a vblank.
    pub vsync: bool,
}

#[derive(Clone, Debug, Default)]
pub struct FenceQueue {
    pending: VecDeque<PendingFence>,
}

impl FenceQueue {
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Queues `f` if it must wait; returns it back if it can complete now.
    pub fn submit(&mut self, f: PendingFence) -> Option<PendingFence> {
        if !f.vsync && self.pending.is_empty() {
            return Some(f);
        }
        self.pending.push_back(f);
        None
    }

    /// Removes the oldest entry (used when the queue exceeds its cap).
    pub fn pop_oldest(&mut self) -> Option<PendingFence> {
        self.pending.pop_front()
    }

    /// What one vblank releases: everything up to and including the first VSYNC entry,
    /// plus the non-VSYNC entries behind it (one flip per vblank).
    pub fn release_one_vblank(&mut self, out: &mut Vec<PendingFence>) {
        let mut flipped = false;
        while let Some(front) = self.pending.front() {
            if front.vsync {
                if flipped {
                    break;
                }
                flipped = true;
            }
            if let Some(f) = self.pending.pop_front() {
                out.push(f);
            }
        }
    }

    /// Everything (scanout stopped, ring reset).
    pub fn drain_all(&mut self, out: &mut Vec<PendingFence>) {
        out.extend(self.pending.drain(..));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(fence: u64, vsync: bool) -> PendingFence {
        PendingFence {
            fence,
            irq: true,
            vsync,
        }
    }

    #[test]
    fn one_flip_per_vblank_in_order() {
        let mut q = FenceQueue::default();
        assert_eq!(q.submit(f(1, false)), Some(f(1, false)));
        assert_eq!(q.submit(f(2, true)), None);
        assert_eq!(
            q.submit(f(3, false)),
            None,
            "later fences wait behind a vsync present"
        );
        assert_eq!(q.submit(f(4, true)), None);
        assert_eq!(q.submit(f(5, false)), None);
        let mut out = Vec::new();
        q.release_one_vblank(&mut out);
        assert_eq!(out.iter().map(|p| p.fence).collect::<Vec<_>>(), [2, 3]);
        out.clear();
        q.release_one_vblank(&mut out);
        assert_eq!(out.iter().map(|p| p.fence).collect::<Vec<_>>(), [4, 5]);
        assert!(q.is_empty());
    }
}
