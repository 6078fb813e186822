//! Where a NIC's Ethernet frames go: the host side of the network (user-mode NAT, a
//! capture file, a test's loopback), behind one trait the device models use.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// The host end of an emulated Ethernet link. Frames carry no FCS.
pub trait NetBackend: Send {
    /// A frame the guest sent.
    fn send(&mut self, frame: &[u8]);
    /// The next frame for the guest, if one arrived (never blocks).
    fn receive(&mut self) -> Option<Vec<u8>>;
}

/// Frames queued by a test in both directions: what the guest sent, and frames to
/// hand to it. Clones share the queues.
#[derive(Clone, Default)]
pub struct LoopbackBackend {
    queues: Arc<Mutex<Queues>>,
}

#[derive(Default)]
struct Queues {
    sent: Vec<Vec<u8>>,
    to_guest: VecDeque<Vec<u8>>,
}

impl LoopbackBackend {
    pub fn new() -> LoopbackBackend {
        LoopbackBackend::default()
    }

    /// Frames the guest sent since the last call.
    pub fn take_sent(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.lock().sent)
    }

    /// Queues a frame for the guest.
    pub fn inject(&self, frame: &[u8]) {
        self.lock().to_guest.push_back(frame.to_vec());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queues> {
        // A panicking test thread must not hide the frames from the others.
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl NetBackend for LoopbackBackend {
    fn send(&mut self, frame: &[u8]) {
        self.lock().sent.push(frame.to_vec());
    }

    fn receive(&mut self) -> Option<Vec<u8>> {
        self.lock().to_guest.pop_front()
    }
}
