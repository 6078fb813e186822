//! IBM PS/2 (MF2) keyboard as seen from the keyboard controller's port.
//!
//! Follows the IBM PS/2 keyboard technical reference: commands ED (LEDs), EE (echo),
//! F0 (scancode set), F2 (identify: AB 83), F3 (typematic rate/delay), F4/F5/F6 (enable,
//! disable + defaults, defaults), F7–FD (set-3 key types, acknowledged), FE (resend) and
//! FF (reset, BAT result AA). Unknown commands answer FE.
//!
//! The host delivers keys as scancode set 2 bytes ([`Ps2Keyboard::key_event`]); the
//! keyboard sends them in the guest's selected set (set 1 is converted here; set 3 is not
//! modelled and falls back to set 2). The 8042's own set-2 → set-1 translation lives in the
//! controller ([`translate_set2_byte`] is shared). Typematic repeat of the last held key
//! runs on the virtual clock.

use std::collections::VecDeque;

use super::ps2::{ACK, MAX_RESPONSES, Ps2Device, RESEND};

/// Scancodes waiting in the keyboard (a real one buffers about 16 keys).
const MAX_SCANCODES: usize = 64;
/// Longest scancode sequence of one key (Pause is 8 bytes).
const MAX_KEY_BYTES: usize = 8;
const BAT_OK: u8 = 0xAA;

/// The 8042 translation table (scancode set 2 → set 1) for codes below 0x80; codes at and
/// above 0x80 translate to themselves except 0x83 (F7) → 0x41 and 0x84 → 0x54.
const SET2_TO_SET1: [u8; 128] = [
    0xFF, 0x43, 0x41, 0x3F, 0x3D, 0x3B, 0x3C, 0x58, 0x64, 0x44, 0x42, 0x40, 0x3E, 0x0F, 0x29, 0x59,
    0x65, 0x38, 0x2A, 0x70, 0x1D, 0x10, 0x02, 0x5A, 0x66, 0x71, 0x2C, 0x1F, 0x1E, 0x11, 0x03, 0x5B,
    0x67, 0x2E, 0x2D, 0x20, 0x12, 0x05, 0x04, 0x5C, 0x68, 0x39, 0x2F, 0x21, 0x14, 0x13, 0x06, 0x5D,
    0x69, 0x31, 0x30, 0x23, 0x22, 0x15, 0x07, 0x5E, 0x6A, 0x72, 0x32, 0x24, 0x16, 0x08, 0x09, 0x5F,
    0x6B, 0x33, 0x25, 0x17, 0x18, 0x0B, 0x0A, 0x60, 0x6C, 0x34, 0x35, 0x26, 0x27, 0x19, 0x0C, 0x61,
    0x6D, 0x73, 0x28, 0x74, 0x1A, 0x0D, 0x62, 0x6E, 0x3A, 0x36, 0x1C, 0x1B, 0x75, 0x2B, 0x63, 0x76,
    0x55, 0x56, 0x77, 0x78, 0x79, 0x7A, 0x0E, 0x7B, 0x7C, 0x4F, 0x7D, 0x4B, 0x47, 0x7E, 0x7F, 0x6F,
    0x52, 0x53, 0x50, 0x4C, 0x4D, 0x48, 0x01, 0x45, 0x57, 0x4E, 0x51, 0x4A, 0x37, 0x49, 0x46, 0x54,
];

/// Translates one set-2 byte as the 8042 does (the F0 break prefix is handled by callers).
pub fn translate_set2_byte(byte: u8) -> u8 {
    match byte {
        0x83 => 0x41,
        0x84 => 0x54,
        0x00..=0x7F => SET2_TO_SET1[usize::from(byte)],
        _ => byte,
    }
}

/// Converts a set-2 key sequence to set 1 (F0 prefix → bit 7 on the next code).
fn set2_to_set1(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut release = false;
    for &byte in bytes {
        match byte {
            0xF0 => release = true,
            0xE0 | 0xE1 => out.push(byte),
            _ => {
                out.push(translate_set2_byte(byte) | if release { 0x80 } else { 0 });
                release = false;
            }
        }
    }
    out
}

/// A command byte waiting for its parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pending {
    None,
    SetLeds,
    ScancodeSet,
    Typematic,
}

#[derive(Clone, Debug)]
struct Typematic {
    /// Make code of the key being held.
    key: Vec<u8>,
    next_ns: u64,
}

/// A PS/2 keyboard.
#[derive(Clone, Debug)]
pub struct Ps2Keyboard {
    responses: VecDeque<u8>,
    scancodes: VecDeque<u8>,
    pending: Pending,
    scanning: bool,
    scancode_set: u8,
    leds: u8,
    /// Typematic byte as set by F3 (default 10.9 cps after 500 ms).
    typematic_byte: u8,
    held: Option<Typematic>,
    last_sent: u8,
    now_ns: u64,
}

impl Default for Ps2Keyboard {
    fn default() -> Self {
        Self::new()
    }
}

impl Ps2Keyboard {
    pub fn new() -> Ps2Keyboard {
        Ps2Keyboard {
            responses: VecDeque::new(),
            scancodes: VecDeque::new(),
            pending: Pending::None,
            scanning: true,
            scancode_set: 2,
            leds: 0,
            typematic_byte: 0x2B,
            held: None,
            last_sent: 0,
            now_ns: 0,
        }
    }

    /// LED state set by the guest: bit 0 Scroll Lock, bit 1 Num Lock, bit 2 Caps Lock.
    pub fn leds(&self) -> u8 {
        self.leds
    }

    /// Scancode set the guest selected (1, 2 or 3).
    pub fn scancode_set(&self) -> u8 {
        self.scancode_set
    }

    /// A key was pressed or released; `set2_bytes` is its set-2 sequence (e.g. `[0x1C]`,
    /// `[0xF0, 0x1C]`, `[0xE0, 0xF0, 0x75]`). Dropped while scanning is disabled.
    pub fn key_event(&mut self, set2_bytes: &[u8]) {
        if !self.scanning || set2_bytes.is_empty() || set2_bytes.len() > MAX_KEY_BYTES {
            return;
        }
        let is_break = set2_bytes.contains(&0xF0);
        let is_pause = set2_bytes.first() == Some(&0xE1);
        if is_break {
            let make: Vec<u8> = set2_bytes.iter().copied().filter(|&b| b != 0xF0).collect();
            if self.held.as_ref().is_some_and(|held| held.key == make) {
                self.held = None;
            }
        } else if !is_pause {
            let delay = self.typematic_delay_ns();
            self.held = Some(Typematic {
                key: set2_bytes.to_vec(),
                next_ns: self.now_ns.saturating_add(delay),
            });
        }
        self.queue_key(set2_bytes);
    }

    fn queue_key(&mut self, set2_bytes: &[u8]) {
        let bytes = if self.scancode_set == 1 {
            set2_to_set1(set2_bytes)
        } else {
            set2_bytes.to_vec()
        };
        if self.scancodes.len() + bytes.len() > MAX_SCANCODES {
            tracing::debug!("ps2 keyboard: buffer full, key dropped");
            return;
        }
        self.scancodes.extend(bytes);
    }

    fn typematic_delay_ns(&self) -> u64 {
        (u64::from((self.typematic_byte >> 5) & 3) + 1) * 250_000_000
    }

    /// Repeat period: (8 + A) · 2^B · 4.17 ms with A = bits 0–2, B = bits 3–4.
    fn typematic_period_ns(&self) -> u64 {
        let a = u64::from(self.typematic_byte & 7);
        let b = u32::from((self.typematic_byte >> 3) & 3);
        (8 + a) * (1 << b) * 4_170_000
    }

    /// Typematic repeat on the virtual clock.
    pub fn advance(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        let period = self.typematic_period_ns();
        let Some(held) = self.held.as_mut() else {
            return;
        };
        if now_ns < held.next_ns {
            return;
        }
        // Repeats that happened while the guest was not looking collapse into one.
        let missed = (now_ns - held.next_ns) / period;
        held.next_ns = held.next_ns.saturating_add((missed + 1) * period);
        let key = held.key.clone();
        if self.scanning {
            self.queue_key(&key);
        }
    }

    /// When the next typematic repeat is due.
    pub fn next_deadline_ns(&self) -> Option<u64> {
        self.held.as_ref().map(|held| held.next_ns)
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
        self.typematic_byte = 0x2B;
        self.scancode_set = 2;
        self.held = None;
    }

    fn command(&mut self, byte: u8) {
        match byte {
            0xED => {
                self.pending = Pending::SetLeds;
                self.respond(&[ACK]);
            }
            0xEE => self.respond(&[0xEE]),
            0xF0 => {
                self.pending = Pending::ScancodeSet;
                self.respond(&[ACK]);
            }
            0xF2 => self.respond(&[ACK, 0xAB, 0x83]),
            0xF3 => {
                self.pending = Pending::Typematic;
                self.respond(&[ACK]);
            }
            0xF4 => {
                self.scanning = true;
                self.respond(&[ACK]);
            }
            0xF5 => {
                self.scanning = false;
                self.set_defaults();
                self.scancodes.clear();
                self.respond(&[ACK]);
            }
            0xF6 => {
                self.set_defaults();
                self.scancodes.clear();
                self.respond(&[ACK]);
            }
            0xF7..=0xFD => self.respond(&[ACK]),
            0xFE => {
                let last = self.last_sent;
                self.respond(&[last]);
            }
            0xFF => {
                self.set_defaults();
                self.scanning = true;
                self.leds = 0;
                self.scancodes.clear();
                self.respond(&[ACK, BAT_OK]);
            }
            _ => self.respond(&[RESEND]),
        }
    }

    fn parameter(&mut self, pending: Pending, byte: u8) {
        match pending {
            Pending::SetLeds => {
                self.leds = byte & 7;
                self.respond(&[ACK]);
            }
            Pending::ScancodeSet => match byte {
                0 => {
                    let set = self.scancode_set;
                    self.respond(&[ACK, set]);
                }
                1..=3 => {
                    if byte == 3 {
                        tracing::warn!("ps2 keyboard: scancode set 3 not modelled, sending set 2");
                    }
                    self.scancode_set = byte;
                    self.scancodes.clear();
                    self.respond(&[ACK]);
                }
                _ => self.respond(&[RESEND]),
            },
            Pending::Typematic => {
                self.typematic_byte = byte & 0x7F;
                self.respond(&[ACK]);
            }
            Pending::None => {}
        }
    }
}

impl Ps2Device for Ps2Keyboard {
    fn write(&mut self, byte: u8) {
        // A new command also cancels a pending one (bytes ≥ 0xED are commands).
        let pending = std::mem::replace(&mut self.pending, Pending::None);
        if pending != Pending::None && (byte < 0xED || pending == Pending::Typematic) {
            self.parameter(pending, byte);
        } else {
            self.command(byte);
        }
    }

    fn pop(&mut self) -> Option<u8> {
        let byte = self
            .responses
            .pop_front()
            .or_else(|| self.scancodes.pop_front())?;
        self.last_sent = byte;
        Some(byte)
    }

    fn has_data(&self) -> bool {
        !self.responses.is_empty() || !self.scancodes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(kbd: &mut Ps2Keyboard) -> Vec<u8> {
        std::iter::from_fn(|| kbd.pop()).collect()
    }

    #[test]
    fn translation_table_spot_checks() {
        // A, Esc, Enter, Space, F1, F7 (0x83), keypad *, Left Ctrl.
        let pairs = [
            (0x1C, 0x1E),
            (0x76, 0x01),
            (0x5A, 0x1C),
            (0x29, 0x39),
            (0x05, 0x3B),
            (0x83, 0x41),
            (0x7C, 0x37),
            (0x14, 0x1D),
        ];
        for (set2, set1) in pairs {
            assert_eq!(translate_set2_byte(set2), set1, "set 2 code {set2:#x}");
        }
        assert_eq!(translate_set2_byte(0xFA), 0xFA);
        assert_eq!(set2_to_set1(&[0xE0, 0xF0, 0x75]), vec![0xE0, 0xC8]);
    }

    #[test]
    fn reset_identify_and_echo() {
        let mut kbd = Ps2Keyboard::new();
        kbd.write(0xFF);
        assert_eq!(drain(&mut kbd), vec![ACK, BAT_OK]);
        kbd.write(0xF2);
        assert_eq!(drain(&mut kbd), vec![ACK, 0xAB, 0x83]);
        kbd.write(0xEE);
        assert_eq!(drain(&mut kbd), vec![0xEE]);
        kbd.write(0xFE);
        assert_eq!(drain(&mut kbd), vec![0xEE], "resend repeats the last byte");
        kbd.write(0x42);
        assert_eq!(drain(&mut kbd), vec![RESEND]);
    }

    #[test]
    fn leds_and_scancode_set() {
        let mut kbd = Ps2Keyboard::new();
        kbd.write(0xED);
        kbd.write(0x07);
        assert_eq!(drain(&mut kbd), vec![ACK, ACK]);
        assert_eq!(kbd.leds(), 7);
        kbd.write(0xF0);
        kbd.write(0x00);
        assert_eq!(drain(&mut kbd), vec![ACK, ACK, 0x02]);
        kbd.write(0xF0);
        kbd.write(0x01);
        assert_eq!(drain(&mut kbd), vec![ACK, ACK]);
        kbd.key_event(&[0xF0, 0x1C]);
        assert_eq!(drain(&mut kbd), vec![0x9E], "set 1 break of A");
        // A command byte where a parameter was expected starts a new command.
        kbd.write(0xED);
        kbd.write(0xF2);
        assert_eq!(drain(&mut kbd), vec![ACK, ACK, 0xAB, 0x83]);
    }

    #[test]
    fn scanning_disable_drops_keys() {
        let mut kbd = Ps2Keyboard::new();
        kbd.key_event(&[0x1C]);
        kbd.write(0xF5);
        assert_eq!(drain(&mut kbd), vec![ACK], "F5 also clears the buffer");
        kbd.key_event(&[0x1C]);
        assert!(!kbd.has_data());
        kbd.write(0xF4);
        kbd.key_event(&[0x1C]);
        assert_eq!(drain(&mut kbd), vec![ACK, 0x1C]);
    }

    #[test]
    fn typematic_repeat_on_virtual_clock() {
        let mut kbd = Ps2Keyboard::new();
        kbd.write(0xF3);
        kbd.write(0x20); // 500 ms delay, 30 cps (period 8 * 4.17 ms)
        drain(&mut kbd);
        kbd.key_event(&[0x1C]);
        assert_eq!(drain(&mut kbd), vec![0x1C]);
        assert_eq!(kbd.next_deadline_ns(), Some(500_000_000));
        kbd.advance(499_999_999);
        assert!(!kbd.has_data());
        kbd.advance(500_000_000);
        assert_eq!(drain(&mut kbd), vec![0x1C]);
        assert_eq!(kbd.next_deadline_ns(), Some(500_000_000 + 33_360_000));
        kbd.key_event(&[0xF0, 0x1C]);
        assert_eq!(kbd.next_deadline_ns(), None);
        assert_eq!(drain(&mut kbd), vec![0xF0, 0x1C]);
    }

    #[test]
    fn unread_answers_are_bounded() {
        let mut kbd = Ps2Keyboard::new();
        for _ in 0..10_000 {
            kbd.write(0xF2);
        }
        let answers = drain(&mut kbd);
        assert_eq!(answers.len(), MAX_RESPONSES);
        assert_eq!(
            &answers[answers.len() - 3..],
            &[ACK, 0xAB, 0x83],
            "newest kept"
        );
    }

    #[test]
    fn buffer_is_bounded() {
        let mut kbd = Ps2Keyboard::new();
        for _ in 0..100 {
            kbd.key_event(&[0xE0, 0x75]);
        }
        assert_eq!(drain(&mut kbd).len(), MAX_SCANCODES);
        kbd.key_event(&[0u8; 9]);
        assert!(!kbd.has_data());
    }
}
