//! PS/2 mouse with the Microsoft IntelliMouse wheel extension, on the 8042 aux port.
//!
//! Follows the IBM PS/2 mouse technical reference and the IntelliMouse extension: commands
//! FF (reset: FA AA 00), FE (resend), F6 (defaults), F5/F4 (disable/enable reporting),
//! F3 (sample rate), F2 (device ID), F0 (remote mode), EE/EC (wrap mode), EB (read data),
//! EA (stream mode), E9 (status request), E8 (resolution), E7/E6 (scaling 2:1 / 1:1).
//! Unknown commands answer FE. Setting the sample rates 200, 100, 80 in a row switches the
//! device ID to 3 and adds a fourth packet byte with the wheel movement.
//!
//! The host reports movement with [`Ps2Mouse::mouse_move`]: `dx` right-positive, `dy`
//! *down*-positive (screen convention; PS/2 itself is up-positive), `dz` positive for the
//! wheel turned away from the user (scroll up), `buttons` bit 0 left, 1 right, 2 middle.

use std::collections::VecDeque;

use super::ps2::{ACK, MAX_RESPONSES, Ps2Device, RESEND};

/// Bytes of queued packets kept; more movement is dropped (a real mouse would coalesce).
const MAX_QUEUED: usize = 256;
const ID_STANDARD: u8 = 0x00;
const ID_INTELLIMOUSE: u8 = 0x03;
const INTELLIMOUSE_KNOCK: [u8; 3] = [200, 100, 80];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pending {
    None,
    SampleRate,
    Resolution,
}

/// A PS/2 IntelliMouse.
#[derive(Clone, Debug)]
pub struct Ps2Mouse {
    responses: VecDeque<u8>,
    packets: VecDeque<u8>,
    pending: Pending,
    reporting: bool,
    remote: bool,
    wrap: bool,
    scaling_2to1: bool,
    sample_rate: u8,
    resolution: u8,
    device_id: u8,
    /// The last three sample rates set, oldest first, for the wheel knock.
    recent_rates: [u8; 3],
    buttons: u8,
    /// Movement accumulated in remote mode (PS/2 orientation: y up-positive).
    remote_delta: (i32, i32, i32),
    last_sent: u8,
}

impl Default for Ps2Mouse {
    fn default() -> Self {
        Self::new()
    }
}

impl Ps2Mouse {
    pub fn new() -> Ps2Mouse {
        Ps2Mouse {
            responses: VecDeque::new(),
            packets: VecDeque::new(),
            pending: Pending::None,
            reporting: false,
            remote: false,
            wrap: false,
            scaling_2to1: false,
            sample_rate: 100,
            resolution: 2,
            device_id: ID_STANDARD,
            recent_rates: [0; 3],
            buttons: 0,
            remote_delta: (0, 0, 0),
            last_sent: 0,
        }
    }

    /// Device ID the guest negotiated (0 standard, 3 wheel).
    pub fn device_id(&self) -> u8 {
        self.device_id
    }

    /// Host mouse input; see the module doc for the sign conventions.
    pub fn mouse_move(&mut self, dx: i32, dy: i32, dz: i32, buttons: u8) {
        let buttons = buttons & 7;
        let (dx, dy, dz) = (dx, dy.saturating_neg(), dz.saturating_neg());
        if self.remote {
            let acc = &mut self.remote_delta;
            *acc = (
                acc.0.saturating_add(dx),
                acc.1.saturating_add(dy),
                acc.2.saturating_add(dz),
            );
            self.buttons = buttons;
            return;
        }
        let changed = buttons != self.buttons;
        self.buttons = buttons;
        if !self.reporting || (dx == 0 && dy == 0 && dz == 0 && !changed) {
            return;
        }
        // Large motions become several packets of at most ±255 each.
        let (mut dx, mut dy, mut dz) = (dx, dy, dz);
        loop {
            let (px, py, pz) = (dx.clamp(-255, 255), dy.clamp(-255, 255), dz.clamp(-8, 7));
            if !self.queue_packet(px, py, pz) {
                break;
            }
            (dx, dy, dz) = (dx - px, dy - py, dz - pz);
            if dx == 0 && dy == 0 && (dz == 0 || self.device_id != ID_INTELLIMOUSE) {
                break;
            }
        }
    }

    fn packet_len(&self) -> usize {
        if self.device_id == ID_INTELLIMOUSE {
            4
        } else {
            3
        }
    }

    fn encode_packet(&self, dx: i32, dy: i32, dz: i32) -> ([u8; 4], usize) {
        let (dx, dy) = if self.scaling_2to1 {
            (scale_2to1(dx), scale_2to1(dy))
        } else {
            (dx, dy)
        };
        let mut status = 0x08 | self.buttons;
        if dx < 0 {
            status |= 0x10;
        }
        if dy < 0 {
            status |= 0x20;
        }
        if !(-256..=255).contains(&dx) {
            status |= 0x40;
        }
        if !(-256..=255).contains(&dy) {
            status |= 0x80;
        }
        let z = dz.clamp(-8, 7) as i8 as u8;
        (
            [
                status,
                dx.clamp(-256, 255) as u8,
                dy.clamp(-256, 255) as u8,
                z,
            ],
            self.packet_len(),
        )
    }

    fn queue_packet(&mut self, dx: i32, dy: i32, dz: i32) -> bool {
        let (bytes, len) = self.encode_packet(dx, dy, dz);
        if self.packets.len() + len > MAX_QUEUED {
            return false;
        }
        self.packets.extend(&bytes[..len]);
        true
    }

    fn respond(&mut self, bytes: &[u8]) {
        // A guest that sends commands without reading the answers loses the oldest
        // ones instead of growing the queue.
        for &byte in bytes {
            if self.responses.len() >= MAX_RESPONSES {
                self.responses.pop_front();
            }
            self.responses.push_back(byte);
        }
    }

    fn set_defaults(&mut self) {
        self.sample_rate = 100;
        self.resolution = 2;
        self.scaling_2to1 = false;
        self.reporting = false;
        self.remote = false;
        self.packets.clear();
    }

    fn status_byte(&self) -> u8 {
        // Status bits: 6 remote, 5 enabled, 4 scaling 2:1, 2 left, 1 middle, 0 right.
        let left = self.buttons & 1;
        let right = (self.buttons >> 1) & 1;
        let middle = (self.buttons >> 2) & 1;
        u8::from(self.remote) << 6
            | u8::from(self.reporting) << 5
            | u8::from(self.scaling_2to1) << 4
            | left << 2
            | middle << 1
            | right
    }

    fn command(&mut self, byte: u8) {
        match byte {
            0xFF => {
                self.set_defaults();
                self.device_id = ID_STANDARD;
                self.wrap = false;
                self.respond(&[ACK, 0xAA, ID_STANDARD]);
            }
            0xFE => {
                let last = self.last_sent;
                self.respond(&[last]);
            }
            0xF6 => {
                self.set_defaults();
                self.respond(&[ACK]);
            }
            0xF5 => {
                self.reporting = false;
                self.packets.clear();
                self.respond(&[ACK]);
            }
            0xF4 => {
                self.reporting = true;
                self.respond(&[ACK]);
            }
            0xF3 => {
                self.pending = Pending::SampleRate;
                self.respond(&[ACK]);
            }
            0xF2 => {
                let id = self.device_id;
                self.packets.clear();
                self.respond(&[ACK, id]);
            }
            0xF0 => {
                self.remote = true;
                self.packets.clear();
                self.respond(&[ACK]);
            }
            0xEE => {
                self.wrap = true;
                self.respond(&[ACK]);
            }
            0xEC => self.respond(&[ACK]),
            0xEB => {
                self.respond(&[ACK]);
                let (dx, dy, dz) = std::mem::take(&mut self.remote_delta);
                let (bytes, len) = self.encode_packet(dx, dy, dz);
                self.respond(&bytes[..len]);
            }
            0xEA => {
                self.remote = false;
                self.packets.clear();
                self.respond(&[ACK]);
            }
            0xE9 => {
                let status = [ACK, self.status_byte(), self.resolution, self.sample_rate];
                self.respond(&status);
            }
            0xE8 => {
                self.pending = Pending::Resolution;
                self.respond(&[ACK]);
            }
            0xE7 => {
                self.scaling_2to1 = true;
                self.respond(&[ACK]);
            }
            0xE6 => {
                self.scaling_2to1 = false;
                self.respond(&[ACK]);
            }
            _ => self.respond(&[RESEND]),
        }
    }

    fn set_sample_rate(&mut self, rate: u8) {
        self.sample_rate = rate;
        self.recent_rates = [self.recent_rates[1], self.recent_rates[2], rate];
        if self.recent_rates == INTELLIMOUSE_KNOCK {
            self.device_id = ID_INTELLIMOUSE;
        }
    }
}

/// The PS/2 2:1 scaling curve for small motions (larger ones are doubled).
fn scale_2to1(delta: i32) -> i32 {
    let magnitude = match delta.unsigned_abs() {
        0 => 0,
        1 => 1,
        2 => 1,
        3 => 3,
        4 => 6,
        5 => 9,
        m => m.saturating_mul(2).min(i32::MAX as u32),
    } as i32;
    if delta < 0 { -magnitude } else { magnitude }
}

impl Ps2Device for Ps2Mouse {
    fn write(&mut self, byte: u8) {
        if self.wrap && byte != 0xEC && byte != 0xFF {
            self.respond(&[byte]);
            return;
        }
        if byte == 0xEC {
            self.wrap = false;
        }
        match std::mem::replace(&mut self.pending, Pending::None) {
            Pending::SampleRate => {
                self.set_sample_rate(byte);
                self.respond(&[ACK]);
            }
            Pending::Resolution => {
                self.resolution = byte & 3;
                self.respond(&[ACK]);
            }
            Pending::None => self.command(byte),
        }
    }

    fn pop(&mut self) -> Option<u8> {
        let byte = self
            .responses
            .pop_front()
            .or_else(|| self.packets.pop_front())?;
        self.last_sent = byte;
        Some(byte)
    }

    fn has_data(&self) -> bool {
        !self.responses.is_empty() || !self.packets.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(mouse: &mut Ps2Mouse) -> Vec<u8> {
        std::iter::from_fn(|| mouse.pop()).collect()
    }

    fn send(mouse: &mut Ps2Mouse, bytes: &[u8]) -> Vec<u8> {
        for &b in bytes {
            mouse.write(b);
        }
        drain(mouse)
    }

    #[test]
    fn reset_and_identify() {
        let mut mouse = Ps2Mouse::new();
        assert_eq!(send(&mut mouse, &[0xFF]), vec![ACK, 0xAA, 0x00]);
        assert_eq!(send(&mut mouse, &[0xF2]), vec![ACK, 0x00]);
        assert_eq!(send(&mut mouse, &[0x12]), vec![RESEND]);
    }

    #[test]
    fn intellimouse_knock_enables_wheel_packets() {
        let mut mouse = Ps2Mouse::new();
        assert_eq!(
            send(&mut mouse, &[0xF3, 200, 0xF3, 100, 0xF3, 80]),
            vec![ACK; 6]
        );
        assert_eq!(send(&mut mouse, &[0xF2]), vec![ACK, 0x03]);
        assert_eq!(send(&mut mouse, &[0xF4]), vec![ACK]);
        mouse.mouse_move(5, 3, 1, 0b001);
        // Left button, Y negative (moved down), X +5, Y -3, Z -1 (scroll up).
        assert_eq!(drain(&mut mouse), vec![0x08 | 0x01 | 0x20, 5, 0xFD, 0xFF]);
    }

    #[test]
    fn wrong_knock_keeps_standard_id() {
        let mut mouse = Ps2Mouse::new();
        send(&mut mouse, &[0xF3, 200, 0xF3, 200, 0xF3, 80]);
        assert_eq!(send(&mut mouse, &[0xF2]), vec![ACK, 0x00]);
        send(&mut mouse, &[0xF4]);
        mouse.mouse_move(-2, 0, 0, 0);
        assert_eq!(drain(&mut mouse), vec![0x18, 0xFE, 0x00], "3-byte packet");
    }

    #[test]
    fn no_packets_until_enabled_and_large_moves_split() {
        let mut mouse = Ps2Mouse::new();
        mouse.mouse_move(10, 10, 0, 0);
        assert!(!mouse.has_data());
        send(&mut mouse, &[0xF4]);
        mouse.mouse_move(300, 0, 0, 0);
        assert_eq!(drain(&mut mouse), vec![0x08, 255, 0, 0x08, 45, 0]);
        mouse.mouse_move(0, 0, 0, 0b010);
        assert_eq!(
            drain(&mut mouse),
            vec![0x0A, 0, 0],
            "button change alone sends a packet"
        );
        mouse.mouse_move(0, 0, 0, 0b010);
        assert!(!mouse.has_data());
        for _ in 0..1000 {
            mouse.mouse_move(1, 1, 0, 0);
        }
        assert!(drain(&mut mouse).len() <= MAX_QUEUED);
    }

    #[test]
    fn status_request_resolution_scaling() {
        let mut mouse = Ps2Mouse::new();
        send(&mut mouse, &[0xE8, 3, 0xE7, 0xF3, 40, 0xF4]);
        mouse.mouse_move(0, 0, 0, 0b101);
        drain(&mut mouse);
        assert_eq!(
            send(&mut mouse, &[0xE9]),
            vec![ACK, 0x20 | 0x10 | 0x04 | 0x02, 3, 40]
        );
        mouse.mouse_move(4, 0, 0, 0b101);
        assert_eq!(
            drain(&mut mouse),
            vec![0x08 | 0x05, 6, 0],
            "2:1 scaling of 4 is 6"
        );
        send(&mut mouse, &[0xE6]);
        mouse.mouse_move(4, 0, 0, 0b101);
        assert_eq!(drain(&mut mouse)[1], 4);
    }

    #[test]
    fn remote_mode_read_data() {
        let mut mouse = Ps2Mouse::new();
        send(&mut mouse, &[0xF0]);
        mouse.mouse_move(3, -4, 0, 0);
        mouse.mouse_move(1, 0, 0, 1);
        assert!(!mouse.has_data());
        assert_eq!(send(&mut mouse, &[0xEB]), vec![ACK, 0x09, 4, 4]);
        assert_eq!(send(&mut mouse, &[0xEB]), vec![ACK, 0x09, 0, 0]);
        send(&mut mouse, &[0xEA]);
        assert_eq!(send(&mut mouse, &[0xE9])[1] & 0x40, 0);
    }

    #[test]
    fn unread_answers_are_bounded() {
        let mut mouse = Ps2Mouse::new();
        for _ in 0..10_000 {
            mouse.write(0xE9);
        }
        assert_eq!(drain(&mut mouse).len(), MAX_RESPONSES);
    }

    #[test]
    fn wrap_mode_echoes() {
        let mut mouse = Ps2Mouse::new();
        assert_eq!(send(&mut mouse, &[0xEE, 0x12, 0xF4]), vec![ACK, 0x12, 0xF4]);
        assert_eq!(send(&mut mouse, &[0xEC]), vec![ACK]);
        assert_eq!(send(&mut mouse, &[0xF4]), vec![ACK]);
        assert_eq!(
            send(&mut mouse, &[0xFE]),
            vec![ACK],
            "resend repeats the last byte"
        );
    }

    #[test]
    fn extreme_host_values_do_not_panic() {
        let mut mouse = Ps2Mouse::new();
        send(&mut mouse, &[0xF3, 200, 0xF3, 100, 0xF3, 80, 0xF4, 0xE7]);
        mouse.mouse_move(i32::MIN, i32::MAX, i32::MIN, 0xFF);
        assert!(drain(&mut mouse).len() <= MAX_QUEUED);
        send(&mut mouse, &[0xF0]);
        mouse.mouse_move(i32::MAX, i32::MIN, i32::MAX, 0);
        mouse.mouse_move(i32::MAX, i32::MIN, i32::MAX, 0);
        assert_eq!(send(&mut mouse, &[0xEB]).len(), 5);
    }
}
