//! USB HID devices: one core (descriptors, the standard and HID class requests, the
//! interrupt IN endpoint with a bounded report queue) and three personalities:
//!
//! * **tablet** — absolute X/Y in 0..=32767, three buttons and a wheel, declared as a
//!   Generic Desktop mouse with absolute axes, the shape Windows 7's inbox `mouhid` and
//!   Linux's `hid-generic` take as an absolute pointer;
//! * **keyboard** — boot-protocol keyboard (modifier byte, reserved byte, six key usages),
//!   LEDs through SET_REPORT; the host feeds it PS/2 scancode-set-2 sequences;
//! * **mouse** — boot-protocol mouse with a wheel byte in report protocol;
//! * **gamepad** — a Generic Desktop Game Pad with four signed 8-bit axes (X, Y, Z, Rz),
//!   an eight-way hat switch and sixteen buttons: what Windows 7's inbox HID game
//!   controller support and Linux's `hid-generic` (then `joydev`/`evdev`) take as a
//!   gamepad, with no driver of its own.
//!
//! From the USB 2.0 specification (chapter 9) and the HID 1.11 specification (class
//! requests, report descriptor items, boot reports, keyboard usage page 0x07).

use std::any::Any;
use std::collections::VecDeque;

use super::*;

/// Reports waiting for the guest, at most (older motion is merged, see `queue_report`).
pub const REPORT_QUEUE_LIMIT: usize = 64;
/// The tablet's coordinate range: 0..=TABLET_MAX on both axes.
pub const TABLET_MAX: u16 = 0x7FFF;

const VENDOR_ID: u16 = 0xAE20;
const DESC_HID: u8 = 0x21;
const DESC_REPORT: u8 = 0x22;
const HID_GET_REPORT: u8 = 0x01;
const HID_GET_IDLE: u8 = 0x02;
const HID_GET_PROTOCOL: u8 = 0x03;
const HID_SET_REPORT: u8 = 0x09;
const HID_SET_IDLE: u8 = 0x0A;
const HID_SET_PROTOCOL: u8 = 0x0B;
/// The interrupt IN endpoint's number and packet size.
const INTERRUPT_ENDPOINT: u8 = 1;
const MAX_PACKET: u8 = 8;

/// Which HID device this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HidKind {
    Tablet,
    Keyboard,
    Mouse,
    Gamepad,
}

impl HidKind {
    fn product(self) -> (&'static str, u16) {
        match self {
            HidKind::Tablet => ("Aero USB Tablet", 0x0001),
            HidKind::Keyboard => ("Aero USB Keyboard", 0x0002),
            HidKind::Mouse => ("Aero USB Mouse", 0x0003),
            HidKind::Gamepad => ("Aero USB Gamepad", 0x0004),
        }
    }

    /// Interface subclass and protocol: boot keyboard (1, 1), boot mouse (1, 2); the
    /// tablet has no boot protocol.
    fn boot_interface(self) -> (u8, u8) {
        match self {
            HidKind::Tablet | HidKind::Gamepad => (0, 0),
            HidKind::Keyboard => (1, 1),
            HidKind::Mouse => (1, 2),
        }
    }

    fn report_descriptor(self) -> &'static [u8] {
        match self {
            HidKind::Tablet => TABLET_REPORT_DESCRIPTOR,
            HidKind::Keyboard => KEYBOARD_REPORT_DESCRIPTOR,
            HidKind::Mouse => MOUSE_REPORT_DESCRIPTOR,
            HidKind::Gamepad => GAMEPAD_REPORT_DESCRIPTOR,
        }
    }
}

/// Tablet input report (6 bytes): buttons (3 bits), X and Y (16 bits, absolute, 0..32767),
/// wheel (8 bits, relative).
#[rustfmt::skip]
const TABLET_REPORT_DESCRIPTOR: &[u8] = &[
    0x05, 0x01,       // Usage Page (Generic Desktop)
    0x09, 0x02,       // Usage (Mouse)
    0xA1, 0x01,       // Collection (Application)
    0x09, 0x01,       //   Usage (Pointer)
    0xA1, 0x00,       //   Collection (Physical)
    0x05, 0x09,       //     Usage Page (Button)
    0x19, 0x01,       //     Usage Minimum (1)
    0x29, 0x03,       //     Usage Maximum (3)
    0x15, 0x00,       //     Logical Minimum (0)
    0x25, 0x01,       //     Logical Maximum (1)
    0x95, 0x03,       //     Report Count (3)
    0x75, 0x01,       //     Report Size (1)
    0x81, 0x02,       //     Input (Data, Variable, Absolute)
    0x95, 0x01,       //     Report Count (1)
    0x75, 0x05,       //     Report Size (5)
    0x81, 0x03,       //     Input (Constant): padding
    0x05, 0x01,       //     Usage Page (Generic Desktop)
    0x09, 0x30,       //     Usage (X)
    0x09, 0x31,       //     Usage (Y)
    0x15, 0x00,       //     Logical Minimum (0)
    0x26, 0xFF, 0x7F, //     Logical Maximum (32767)
    0x35, 0x00,       //     Physical Minimum (0)
    0x46, 0xFF, 0x7F, //     Physical Maximum (32767)
    0x75, 0x10,       //     Report Size (16)
    0x95, 0x02,       //     Report Count (2)
    0x81, 0x02,       //     Input (Data, Variable, Absolute)
    0x09, 0x38,       //     Usage (Wheel)
    0x15, 0x81,       //     Logical Minimum (-127)
    0x25, 0x7F,       //     Logical Maximum (127)
    0x35, 0x00,       //     Physical Minimum (0)
    0x45, 0x00,       //     Physical Maximum (0)
    0x75, 0x08,       //     Report Size (8)
    0x95, 0x01,       //     Report Count (1)
    0x81, 0x06,       //     Input (Data, Variable, Relative)
    0xC0,             //   End Collection
    0xC0,             // End Collection
];

/// Boot keyboard: modifiers, a reserved byte, six key usages; five LEDs out.
#[rustfmt::skip]
const KEYBOARD_REPORT_DESCRIPTOR: &[u8] = &[
    0x05, 0x01,       // Usage Page (Generic Desktop)
    0x09, 0x06,       // Usage (Keyboard)
    0xA1, 0x01,       // Collection (Application)
    0x05, 0x07,       //   Usage Page (Keyboard)
    0x19, 0xE0,       //   Usage Minimum (Left Control)
    0x29, 0xE7,       //   Usage Maximum (Right GUI)
    0x15, 0x00,       //   Logical Minimum (0)
    0x25, 0x01,       //   Logical Maximum (1)
    0x75, 0x01,       //   Report Size (1)
    0x95, 0x08,       //   Report Count (8)
    0x81, 0x02,       //   Input (Data, Variable, Absolute): modifiers
    0x95, 0x01,       //   Report Count (1)
    0x75, 0x08,       //   Report Size (8)
    0x81, 0x03,       //   Input (Constant): reserved
    0x95, 0x05,       //   Report Count (5)
    0x75, 0x01,       //   Report Size (1)
    0x05, 0x08,       //   Usage Page (LEDs)
    0x19, 0x01,       //   Usage Minimum (Num Lock)
    0x29, 0x05,       //   Usage Maximum (Kana)
    0x91, 0x02,       //   Output (Data, Variable, Absolute)
    0x95, 0x01,       //   Report Count (1)
    0x75, 0x03,       //   Report Size (3)
    0x91, 0x03,       //   Output (Constant): padding
    0x95, 0x06,       //   Report Count (6)
    0x75, 0x08,       //   Report Size (8)
    0x15, 0x00,       //   Logical Minimum (0)
    0x26, 0xFF, 0x00, //   Logical Maximum (255)
    0x05, 0x07,       //   Usage Page (Keyboard)
    0x19, 0x00,       //   Usage Minimum (0)
    0x2A, 0xFF, 0x00, //   Usage Maximum (255)
    0x81, 0x00,       //   Input (Data, Array): keys
    0xC0,             // End Collection
];

/// Boot mouse: buttons, X, Y (relative), and a wheel byte.
#[rustfmt::skip]
const MOUSE_REPORT_DESCRIPTOR: &[u8] = &[
    0x05, 0x01,       // Usage Page (Generic Desktop)
    0x09, 0x02,       // Usage (Mouse)
    0xA1, 0x01,       // Collection (Application)
    0x09, 0x01,       //   Usage (Pointer)
    0xA1, 0x00,       //   Collection (Physical)
    0x05, 0x09,       //     Usage Page (Button)
    0x19, 0x01,       //     Usage Minimum (1)
    0x29, 0x03,       //     Usage Maximum (3)
    0x15, 0x00,       //     Logical Minimum (0)
    0x25, 0x01,       //     Logical Maximum (1)
    0x95, 0x03,       //     Report Count (3)
    0x75, 0x01,       //     Report Size (1)
    0x81, 0x02,       //     Input (Data, Variable, Absolute)
    0x95, 0x01,       //     Report Count (1)
    0x75, 0x05,       //     Report Size (5)
    0x81, 0x03,       //     Input (Constant): padding
    0x05, 0x01,       //     Usage Page (Generic Desktop)
    0x09, 0x30,       //     Usage (X)
    0x09, 0x31,       //     Usage (Y)
    0x09, 0x38,       //     Usage (Wheel)
    0x15, 0x81,       //     Logical Minimum (-127)
    0x25, 0x7F,       //     Logical Maximum (127)
    0x75, 0x08,       //     Report Size (8)
    0x95, 0x03,       //     Report Count (3)
    0x81, 0x06,       //     Input (Data, Variable, Relative)
    0xC0,             //   End Collection
    0xC0,             // End Collection
];

/// Gamepad input report (7 bytes): X, Y, Z, Rz (signed, -127..=127, positive right/down),
/// the hat (low nibble: 0 up, then clockwise in 45° steps; 8 = centred, outside the
/// logical range so hosts read it as "null"), buttons 1-16 (one bit each).
#[rustfmt::skip]
const GAMEPAD_REPORT_DESCRIPTOR: &[u8] = &[
    0x05, 0x01,       // Usage Page (Generic Desktop)
    0x09, 0x05,       // Usage (Game Pad)
    0xA1, 0x01,       // Collection (Application)
    0x09, 0x30,       //   Usage (X)
    0x09, 0x31,       //   Usage (Y)
    0x09, 0x32,       //   Usage (Z)
    0x09, 0x35,       //   Usage (Rz)
    0x15, 0x81,       //   Logical Minimum (-127)
    0x25, 0x7F,       //   Logical Maximum (127)
    0x75, 0x08,       //   Report Size (8)
    0x95, 0x04,       //   Report Count (4)
    0x81, 0x02,       //   Input (Data, Variable, Absolute)
    0x09, 0x39,       //   Usage (Hat Switch)
    0x15, 0x00,       //   Logical Minimum (0)
    0x25, 0x07,       //   Logical Maximum (7)
    0x35, 0x00,       //   Physical Minimum (0)
    0x46, 0x3B, 0x01, //   Physical Maximum (315)
    0x65, 0x14,       //   Unit (English Rotation: degrees)
    0x75, 0x04,       //   Report Size (4)
    0x95, 0x01,       //   Report Count (1)
    0x81, 0x42,       //   Input (Data, Variable, Absolute, Null State)
    0x65, 0x00,       //   Unit (None)
    0x45, 0x00,       //   Physical Maximum (0)
    0x81, 0x03,       //   Input (Constant): 4 bits of padding
    0x05, 0x09,       //   Usage Page (Button)
    0x19, 0x01,       //   Usage Minimum (1)
    0x29, 0x10,       //   Usage Maximum (16)
    0x15, 0x00,       //   Logical Minimum (0)
    0x25, 0x01,       //   Logical Maximum (1)
    0x75, 0x01,       //   Report Size (1)
    0x95, 0x10,       //   Report Count (16)
    0x81, 0x02,       //   Input (Data, Variable, Absolute)
    0xC0,             // End Collection
];

/// The gamepad's hat value when no direction is held.
pub const HAT_CENTRED: u8 = 8;

/// Everything a gamepad report carries (see [`GAMEPAD_REPORT_DESCRIPTOR`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GamepadState {
    /// X, Y, Z, Rz in -127..=127 (positive right/down).
    pub axes: [i8; 4],
    /// 0..=7 (up, up-right, ... clockwise), or [`HAT_CENTRED`].
    pub hat: u8,
    /// Bit n: button n+1.
    pub buttons: u16,
}

impl Default for GamepadState {
    fn default() -> GamepadState {
        GamepadState {
            axes: [0; 4],
            hat: HAT_CENTRED,
            buttons: 0,
        }
    }
}

impl GamepadState {
    fn report(&self) -> Vec<u8> {
        let [b0, b1] = self.buttons.to_le_bytes();
        let [x, y, z, rz] = self.axes.map(|a| a as u8);
        vec![x, y, z, rz, self.hat.min(HAT_CENTRED), b0, b1]
    }
}

/// A USB HID device (see the module documentation).
pub struct HidDevice {
    kind: HidKind,
    address: u8,
    /// Set by SET_ADDRESS, applied when its status stage completes.
    pending_address: Option<u8>,
    configuration: u8,
    /// Whether the guest has ever configured the device since the last bus reset.
    configured_seen: bool,
    /// HID protocol: 0 boot, 1 report (the default after reset).
    protocol: u8,
    idle: u8,
    leds: u8,
    pipe: ControlPipe,
    reports: VecDeque<Vec<u8>>,
    /// The latest state (GET_REPORT answers it).
    buttons: u8,
    tablet_xy: (u16, u16),
    /// Keyboard: modifier bits and the keys held, in press order.
    modifiers: u8,
    keys: Vec<u8>,
    /// Mouse: motion not yet reported (beyond ±127 per report).
    pending_motion: (i32, i32, i32),
    /// The newest queued report is pure tablet motion (a newer position may replace it).
    last_queued_is_motion: bool,
    gamepad: GamepadState,
    /// Gamepad: which of the host's pads feeds it.
    host_pad: Option<u32>,
}

impl HidDevice {
    pub fn new(kind: HidKind) -> HidDevice {
        HidDevice {
            kind,
            address: 0,
            pending_address: None,
            configuration: 0,
            configured_seen: false,
            protocol: 1,
            idle: 0,
            leds: 0,
            pipe: ControlPipe::default(),
            reports: VecDeque::new(),
            buttons: 0,
            tablet_xy: (0, 0),
            modifiers: 0,
            keys: Vec::new(),
            pending_motion: (0, 0, 0),
            last_queued_is_motion: false,
            gamepad: GamepadState::default(),
            host_pad: None,
        }
    }

    /// A gamepad fed by the host's pad `pad` (an id of the host's choosing).
    pub fn gamepad(pad: u32) -> HidDevice {
        let mut dev = HidDevice::new(HidKind::Gamepad);
        dev.host_pad = Some(pad);
        dev
    }

    /// The host pad behind a gamepad made with [`HidDevice::gamepad`].
    pub fn host_pad(&self) -> Option<u32> {
        self.host_pad
    }

    pub fn kind(&self) -> HidKind {
        self.kind
    }

    /// The guest has selected a configuration (its driver bound the device).
    pub fn configured(&self) -> bool {
        self.configuration != 0
    }

    /// The LED state the guest last set (bit 0 Num Lock, 1 Caps Lock, 2 Scroll Lock).
    pub fn leds(&self) -> u8 {
        self.leds
    }

    /// No reports wait for the guest.
    pub fn idle(&self) -> bool {
        self.reports.is_empty() && self.pending_motion == (0, 0, 0)
    }

    /// Tablet: the pointer at (`x`, `y`) in 0..=32767 with `buttons` (bit 0 left, 1 right,
    /// 2 middle) and `wheel` clicks.
    pub fn tablet_event(&mut self, x: u16, y: u16, buttons: u8, wheel: i8) {
        if self.kind != HidKind::Tablet || !self.configured() {
            return;
        }
        let (x, y) = (x.min(TABLET_MAX), y.min(TABLET_MAX));
        let buttons = buttons & 7;
        // Pure motion replaces a queued motion report, so a fast pointer cannot fill the
        // queue; button changes and wheel turns are kept, at the position they had.
        let mergeable = wheel == 0 && buttons == self.buttons;
        self.buttons = buttons;
        self.tablet_xy = (x, y);
        let report = self.tablet_report(wheel);
        self.queue_report(report, mergeable);
    }

    fn tablet_report(&self, wheel: i8) -> Vec<u8> {
        let (x, y) = self.tablet_xy;
        let [x0, x1] = x.to_le_bytes();
        let [y0, y1] = y.to_le_bytes();
        vec![self.buttons, x0, x1, y0, y1, wheel as u8]
    }

    /// Gamepad: the controls' new state. A change of the axes alone replaces a report of
    /// axes still waiting (a stick moved fast cannot fill the queue); button and hat
    /// changes are each kept. The state is remembered while unconfigured, so the first
    /// GET_REPORT after the guest binds the pad already holds the buttons held.
    pub fn gamepad_event(&mut self, state: GamepadState) {
        if self.kind != HidKind::Gamepad || state == self.gamepad {
            return;
        }
        let axes_only = state.buttons == self.gamepad.buttons && state.hat == self.gamepad.hat;
        self.gamepad = state;
        if self.configured() {
            self.queue_report(state.report(), axes_only);
        }
    }

    /// Gamepad: the state last set.
    pub fn gamepad_state(&self) -> GamepadState {
        self.gamepad
    }

    /// Mouse: relative motion (`dy` down-positive, `dz` wheel away from the user).
    pub fn mouse_event(&mut self, dx: i32, dy: i32, dz: i32, buttons: u8) {
        if self.kind != HidKind::Mouse || !self.configured() {
            return;
        }
        let m = &mut self.pending_motion;
        let clamp = |v: i32| v.clamp(-0x10000, 0x10000);
        *m = (
            clamp(m.0.saturating_add(dx)),
            clamp(m.1.saturating_add(dy)),
            clamp(m.2.saturating_add(dz)),
        );
        let buttons_changed = buttons & 7 != self.buttons;
        self.buttons = buttons & 7;
        if buttons_changed || self.reports.is_empty() {
            self.flush_motion();
        }
    }

    /// Turns pending mouse motion into one report (at most ±127 per axis).
    fn flush_motion(&mut self) {
        let take = |v: &mut i32| {
            let part = (*v).clamp(-127, 127);
            *v -= part;
            part as i8 as u8
        };
        let (mut x, mut y, mut z) = self.pending_motion;
        let report = vec![self.buttons, take(&mut x), take(&mut y), take(&mut z)];
        self.pending_motion = (x, y, z);
        self.queue_report(report, false);
    }

    /// Keyboard: a key went down or up as a scancode-set-2 sequence (as the i8042 gets it).
    /// Returns false when the sequence is not a key this keyboard knows.
    pub fn key_event(&mut self, set2: &[u8]) -> bool {
        if self.kind != HidKind::Keyboard {
            return false;
        }
        let events = set2_to_usages(set2);
        if events.is_empty() {
            return false;
        }
        for (usage, pressed) in events {
            if (0xE0..=0xE7).contains(&usage) {
                let bit = 1u8 << (usage - 0xE0);
                if pressed {
                    self.modifiers |= bit;
                } else {
                    self.modifiers &= !bit;
                }
            } else if pressed {
                if !self.keys.contains(&usage) {
                    self.keys.push(usage);
                }
            } else {
                self.keys.retain(|&k| k != usage);
            }
            if self.configured() {
                let report = self.keyboard_report();
                self.queue_report(report, false);
            }
        }
        true
    }

    fn keyboard_report(&self) -> Vec<u8> {
        let mut report = vec![self.modifiers, 0, 0, 0, 0, 0, 0, 0];
        if self.keys.len() > 6 {
            // Too many keys: the boot protocol's "phantom" state (ErrorRollOver).
            report[2..].fill(0x01);
        } else {
            report[2..2 + self.keys.len()].copy_from_slice(&self.keys);
        }
        report
    }

    fn current_report(&self) -> Vec<u8> {
        match self.kind {
            HidKind::Tablet => self.tablet_report(0),
            HidKind::Keyboard => self.keyboard_report(),
            HidKind::Mouse => vec![self.buttons, 0, 0, 0],
            HidKind::Gamepad => self.gamepad.report(),
        }
    }

    /// Queues `report`; `motion` (pure pointer motion) replaces a motion report still
    /// waiting at the end of the queue.
    fn queue_report(&mut self, report: Vec<u8>, motion: bool) {
        let replace = motion && self.last_queued_is_motion;
        self.last_queued_is_motion = motion;
        if replace && let Some(last) = self.reports.back_mut() {
            *last = report;
            return;
        }
        if self.reports.len() >= REPORT_QUEUE_LIMIT {
            // The guest is not reading: keep the newest state.
            self.reports.pop_front();
        }
        self.reports.push_back(report);
    }

    fn device_descriptor(&self) -> Vec<u8> {
        let (_, product) = self.kind.product();
        let [v0, v1] = VENDOR_ID.to_le_bytes();
        let [p0, p1] = product.to_le_bytes();
        vec![
            18,
            DESC_DEVICE,
            0x10,
            0x01, // USB 1.1
            0,
            0,
            0,          // class in the interface
            MAX_PACKET, // endpoint 0 packet size
            v0,
            v1,
            p0,
            p1,
            0x00,
            0x01, // device release 1.00
            1,
            2,
            3, // manufacturer, product, serial number strings
            1, // one configuration
        ]
    }

    fn hid_descriptor(&self) -> Vec<u8> {
        let [l0, l1] = (self.kind.report_descriptor().len() as u16).to_le_bytes();
        vec![9, DESC_HID, 0x11, 0x01, 0, 1, DESC_REPORT, l0, l1]
    }

    fn configuration_descriptor(&self) -> Vec<u8> {
        let (subclass, protocol) = self.kind.boot_interface();
        let mut d = vec![
            9,
            DESC_CONFIGURATION,
            0,
            0, // total length, below
            1, // one interface
            1, // configuration value
            0,
            0xA0, // bus powered, remote wakeup
            50,   // 100 mA
            9,
            4, // interface descriptor
            0,
            0,
            1, // one endpoint
            3, // HID
            subclass,
            protocol,
            0,
        ];
        d.extend(self.hid_descriptor());
        d.extend([7, 5, 0x80 | INTERRUPT_ENDPOINT, 3, MAX_PACKET, 0, 10]);
        let [t0, t1] = (d.len() as u16).to_le_bytes();
        d[2] = t0;
        d[3] = t1;
        d
    }

    /// Answers one control request (see [`ControlResult`]).
    fn control_request(&mut self, setup: &SetupPacket, out: &[u8]) -> ControlResult {
        let [value_low, value_high] = setup.value.to_le_bytes();
        match (setup.request_type, setup.request) {
            (0x80, REQ_GET_DESCRIPTOR) => match value_high {
                DESC_DEVICE => Ok(self.device_descriptor()),
                DESC_CONFIGURATION => Ok(self.configuration_descriptor()),
                DESC_STRING => match value_low {
                    0 => Ok(vec![4, DESC_STRING, 0x09, 0x04]), // English (US)
                    1 => Ok(string_descriptor("Aero")),
                    2 => Ok(string_descriptor(self.kind.product().0)),
                    3 => Ok(string_descriptor("1")),
                    _ => Err(()),
                },
                _ => Err(()),
            },
            (0x81, REQ_GET_DESCRIPTOR) => match value_high {
                DESC_HID => Ok(self.hid_descriptor()),
                DESC_REPORT => Ok(self.kind.report_descriptor().to_vec()),
                _ => Err(()),
            },
            (0x80..=0x82, REQ_GET_STATUS) => Ok(vec![0, 0]),
            (0x00, REQ_SET_ADDRESS) if setup.value <= 127 => {
                self.pending_address = Some(setup.value as u8);
                Ok(vec![])
            }
            (0x80, REQ_GET_CONFIGURATION) => Ok(vec![self.configuration]),
            (0x00, REQ_SET_CONFIGURATION) if setup.value <= 1 => {
                self.configuration = setup.value as u8;
                if self.configured() {
                    self.configured_seen = true;
                }
                self.reports.clear();
                Ok(vec![])
            }
            (0x81, REQ_GET_INTERFACE) => Ok(vec![0]),
            (0x01, REQ_SET_INTERFACE) if setup.value == 0 => Ok(vec![]),
            // Remote wakeup and endpoint halt features: accepted, nothing to do.
            (0x00 | 0x02, REQ_CLEAR_FEATURE | REQ_SET_FEATURE) => Ok(vec![]),
            (0xA1, HID_GET_REPORT) => Ok(self.current_report()),
            (0xA1, HID_GET_IDLE) => Ok(vec![self.idle]),
            (0xA1, HID_GET_PROTOCOL) => Ok(vec![self.protocol]),
            (0x21, HID_SET_IDLE) => {
                self.idle = value_high;
                Ok(vec![])
            }
            (0x21, HID_SET_PROTOCOL) if setup.value <= 1 => {
                self.protocol = setup.value as u8;
                Ok(vec![])
            }
            // Output report: the keyboard's LEDs.
            (0x21, HID_SET_REPORT) => {
                if self.kind == HidKind::Keyboard
                    && let Some(&leds) = out.first()
                {
                    self.leds = leds & 0x1F;
                }
                Ok(vec![])
            }
            _ => {
                tracing::debug!(?setup, kind = ?self.kind, "USB HID: unsupported request");
                Err(())
            }
        }
    }

    fn interrupt_in(&mut self, data: &mut [u8]) -> UsbResponse {
        if !self.configured() {
            return UsbResponse::Stall;
        }
        if self.reports.is_empty() && self.pending_motion != (0, 0, 0) {
            self.flush_motion();
        }
        let Some(mut report) = self.reports.pop_front() else {
            return UsbResponse::Nak;
        };
        // The boot mouse report is three bytes.
        if self.kind == HidKind::Mouse && self.protocol == 0 {
            report.truncate(3);
        }
        let n = report.len().min(data.len());
        data[..n].copy_from_slice(&report[..n]);
        UsbResponse::Ack(n)
    }
}

impl UsbDevice for HidDevice {
    fn speed(&self) -> UsbSpeed {
        UsbSpeed::Full
    }

    fn address(&self) -> u8 {
        self.address
    }

    fn reset(&mut self) {
        let (kind, gamepad, host_pad) = (self.kind, self.gamepad, self.host_pad);
        *self = HidDevice::new(kind);
        // The host's controls are still where they were.
        self.gamepad = gamepad;
        self.host_pad = host_pad;
    }

    fn handle_token(&mut self, pid: UsbPid, endpoint: u8, data: &mut [u8]) -> UsbResponse {
        match endpoint {
            0 => {
                let mut pipe = std::mem::take(&mut self.pipe);
                let response = pipe.token(pid, data, |setup, out| self.control_request(setup, out));
                if let Some(done) = pipe.take_completed()
                    && done.request == REQ_SET_ADDRESS
                    && done.request_type == 0
                    && let Some(address) = self.pending_address.take()
                {
                    self.address = address;
                }
                self.pipe = pipe;
                response
            }
            INTERRUPT_ENDPOINT if pid == UsbPid::In => self.interrupt_in(data),
            _ => UsbResponse::Stall,
        }
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// HID keyboard usages of a scancode-set-2 sequence: (usage, pressed) pairs. Empty for
/// sequences that are no key (the fake shifts around extended keys are dropped).
pub fn set2_to_usages(set2: &[u8]) -> Vec<(u8, bool)> {
    // Pause has no break code: its make sequence is a press and a release.
    if set2.first() == Some(&0xE1) {
        return vec![(0x48, true), (0x48, false)];
    }
    let (extended, rest) = match set2 {
        [0xE0, rest @ ..] => (true, rest),
        rest => (false, rest),
    };
    let (pressed, code) = match rest {
        [0xF0, code] => (false, *code),
        [code] => (true, *code),
        _ => return Vec::new(),
    };
    let usage = if extended {
        set2_extended_usage(code)
    } else {
        set2_usage(code)
    };
    usage.map(|u| vec![(u, pressed)]).unwrap_or_default()
}

fn set2_usage(code: u8) -> Option<u8> {
    Some(match code {
        0x1C => 0x04, // A
        0x32 => 0x05,
        0x21 => 0x06,
        0x23 => 0x07,
        0x24 => 0x08,
        0x2B => 0x09,
        0x34 => 0x0A,
        0x33 => 0x0B,
        0x43 => 0x0C,
        0x3B => 0x0D,
        0x42 => 0x0E,
        0x4B => 0x0F,
        0x3A => 0x10,
        0x31 => 0x11,
        0x44 => 0x12,
        0x4D => 0x13,
        0x15 => 0x14,
        0x2D => 0x15,
        0x1B => 0x16,
        0x2C => 0x17,
        0x3C => 0x18,
        0x2A => 0x19,
        0x1D => 0x1A,
        0x22 => 0x1B,
        0x35 => 0x1C,
        0x1A => 0x1D, // Z
        0x16 => 0x1E, // 1
        0x1E => 0x1F,
        0x26 => 0x20,
        0x25 => 0x21,
        0x2E => 0x22,
        0x36 => 0x23,
        0x3D => 0x24,
        0x3E => 0x25,
        0x46 => 0x26,
        0x45 => 0x27, // 0
        0x5A => 0x28, // Enter
        0x76 => 0x29, // Escape
        0x66 => 0x2A, // Backspace
        0x0D => 0x2B, // Tab
        0x29 => 0x2C, // Space
        0x4E => 0x2D, // -
        0x55 => 0x2E, // =
        0x54 => 0x2F, // [
        0x5B => 0x30, // ]
        0x5D => 0x31, // backslash
        0x4C => 0x33, // ;
        0x52 => 0x34, // '
        0x0E => 0x35, // `
        0x41 => 0x36, // ,
        0x49 => 0x37, // .
        0x4A => 0x38, // /
        0x58 => 0x39, // Caps Lock
        0x05 => 0x3A, // F1
        0x06 => 0x3B,
        0x04 => 0x3C,
        0x0C => 0x3D,
        0x03 => 0x3E,
        0x0B => 0x3F,
        0x83 => 0x40,
        0x0A => 0x41,
        0x01 => 0x42,
        0x09 => 0x43,
        0x78 => 0x44,
        0x07 => 0x45, // F12
        0x84 => 0x46, // Alt+Print Screen (SysRq)
        0x7E => 0x47, // Scroll Lock
        0x77 => 0x53, // Num Lock
        0x7C => 0x55, // keypad *
        0x7B => 0x56, // keypad -
        0x79 => 0x57, // keypad +
        0x69 => 0x59, // keypad 1
        0x72 => 0x5A,
        0x7A => 0x5B,
        0x6B => 0x5C,
        0x73 => 0x5D,
        0x74 => 0x5E,
        0x6C => 0x5F,
        0x75 => 0x60,
        0x7D => 0x61, // keypad 9
        0x70 => 0x62, // keypad 0
        0x71 => 0x63, // keypad .
        0x61 => 0x64, // non-US backslash
        0x14 => 0xE0, // left Control
        0x12 => 0xE1, // left Shift
        0x11 => 0xE2, // left Alt
        0x59 => 0xE5, // right Shift
        _ => return None,
    })
}

fn set2_extended_usage(code: u8) -> Option<u8> {
    Some(match code {
        0x7C => 0x46, // Print Screen
        0x70 => 0x49, // Insert
        0x6C => 0x4A, // Home
        0x7D => 0x4B, // Page Up
        0x71 => 0x4C, // Delete
        0x69 => 0x4D, // End
        0x7A => 0x4E, // Page Down
        0x74 => 0x4F, // Right
        0x6B => 0x50, // Left
        0x72 => 0x51, // Down
        0x75 => 0x52, // Up
        0x4A => 0x54, // keypad /
        0x5A => 0x58, // keypad Enter
        0x2F => 0x65, // Application
        0x14 => 0xE4, // right Control
        0x11 => 0xE6, // right Alt
        0x1F => 0xE3, // left GUI
        0x27 => 0xE7, // right GUI
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::usb::test_request as request;

    /// Runs a whole control transfer with 8-byte packets; None when it stalls.
    fn control(dev: &mut HidDevice, setup: SetupPacket, out: &[u8]) -> Option<Vec<u8>> {
        let mut s = setup.bytes();
        assert_eq!(
            dev.handle_token(UsbPid::Setup, 0, &mut s),
            UsbResponse::Ack(8)
        );
        let mut answer = Vec::new();
        if setup.is_in() {
            loop {
                let mut buf = [0u8; 8];
                match dev.handle_token(UsbPid::In, 0, &mut buf) {
                    UsbResponse::Ack(n) => {
                        answer.extend_from_slice(&buf[..n]);
                        if n < 8 {
                            break;
                        }
                    }
                    _ => return None,
                }
            }
            dev.handle_token(UsbPid::Out, 0, &mut []);
        } else {
            for chunk in out.chunks(8) {
                let mut c = chunk.to_vec();
                if dev.handle_token(UsbPid::Out, 0, &mut c) == UsbResponse::Stall {
                    return None;
                }
            }
            if dev.handle_token(UsbPid::In, 0, &mut []) != UsbResponse::Ack(0) {
                return None;
            }
        }
        Some(answer)
    }

    fn configured(kind: HidKind) -> HidDevice {
        let mut dev = HidDevice::new(kind);
        control(&mut dev, request(0, REQ_SET_ADDRESS, 5, 0), &[]).unwrap();
        control(&mut dev, request(0, REQ_SET_CONFIGURATION, 1, 0), &[]).unwrap();
        dev
    }

    fn interrupt(dev: &mut HidDevice) -> Option<Vec<u8>> {
        let mut buf = [0u8; 8];
        match dev.handle_token(UsbPid::In, 1, &mut buf) {
            UsbResponse::Ack(n) => Some(buf[..n].to_vec()),
            _ => None,
        }
    }

    #[test]
    fn descriptors_describe_a_hid_interface_with_one_interrupt_endpoint() {
        for (kind, subclass, protocol, report_len) in [
            (HidKind::Tablet, 0, 0, TABLET_REPORT_DESCRIPTOR.len()),
            (HidKind::Keyboard, 1, 1, KEYBOARD_REPORT_DESCRIPTOR.len()),
            (HidKind::Mouse, 1, 2, MOUSE_REPORT_DESCRIPTOR.len()),
            (HidKind::Gamepad, 0, 0, GAMEPAD_REPORT_DESCRIPTOR.len()),
        ] {
            let mut dev = HidDevice::new(kind);
            let device =
                control(&mut dev, request(0x80, REQ_GET_DESCRIPTOR, 0x0100, 64), &[]).unwrap();
            assert_eq!(device.len(), 18);
            assert_eq!((device[0], device[1], device[7]), (18, DESC_DEVICE, 8));
            // The host first reads 9 bytes for the total length, then all of it.
            let head =
                control(&mut dev, request(0x80, REQ_GET_DESCRIPTOR, 0x0200, 9), &[]).unwrap();
            let total = u16::from_le_bytes([head[2], head[3]]);
            let config = control(
                &mut dev,
                request(0x80, REQ_GET_DESCRIPTOR, 0x0200, total),
                &[],
            )
            .unwrap();
            assert_eq!(config.len(), 34);
            assert_eq!(&config[9..18], &[9, 4, 0, 0, 1, 3, subclass, protocol, 0]);
            let hid_len = u16::from_le_bytes([config[25], config[26]]);
            assert_eq!(
                (config[19], config[24], usize::from(hid_len)),
                (DESC_HID, DESC_REPORT, report_len)
            );
            assert_eq!(&config[27..31], &[7, 5, 0x81, 3]);
            let report = control(
                &mut dev,
                SetupPacket {
                    request_type: 0x81,
                    request: REQ_GET_DESCRIPTOR,
                    value: 0x2200,
                    index: 0,
                    length: 256,
                },
                &[],
            )
            .unwrap();
            assert_eq!(report, kind.report_descriptor());
            // Collections open and close in pairs.
            let opens = report.windows(2).filter(|w| w[0] == 0xA1).count();
            assert_eq!(opens, report.iter().filter(|&&b| b == 0xC0).count());
            let product = control(
                &mut dev,
                request(0x80, REQ_GET_DESCRIPTOR, 0x0302, 255),
                &[],
            )
            .unwrap();
            assert_eq!(product, string_descriptor(kind.product().0));
        }
    }

    #[test]
    fn set_address_applies_after_the_status_stage_and_reset_clears_it() {
        let mut dev = HidDevice::new(HidKind::Tablet);
        let mut s = request(0, REQ_SET_ADDRESS, 9, 0).bytes();
        dev.handle_token(UsbPid::Setup, 0, &mut s);
        assert_eq!(dev.address(), 0);
        dev.handle_token(UsbPid::In, 0, &mut []);
        assert_eq!(dev.address(), 9);
        control(&mut dev, request(0, REQ_SET_CONFIGURATION, 1, 0), &[]).unwrap();
        assert!(dev.configured());
        dev.reset();
        assert_eq!((dev.address(), dev.configured()), (0, false));
        // Unknown requests stall.
        assert!(control(&mut dev, request(0x80, 0x42, 0, 8), &[]).is_none());
    }

    #[test]
    fn tablet_reports_absolute_positions_buttons_and_wheel() {
        let mut dev = HidDevice::new(HidKind::Tablet);
        dev.tablet_event(100, 100, 0, 0);
        assert_eq!(
            interrupt(&mut dev),
            None,
            "unconfigured devices report nothing"
        );
        let mut dev = configured(HidKind::Tablet);
        assert_eq!(interrupt(&mut dev), None, "NAK without input");
        dev.tablet_event(0x1234, 40000, 0, 0);
        dev.tablet_event(0x2000, 0x10, 0, 0); // merged with the previous motion
        dev.tablet_event(0x2000, 0x10, 1, 0);
        dev.tablet_event(0x2000, 0x10, 0, -1);
        // Motion after a button change is a report of its own (the release stays where
        // it happened).
        dev.tablet_event(0x10, 0x10, 0, 0);
        assert_eq!(interrupt(&mut dev).unwrap(), [0, 0x00, 0x20, 0x10, 0x00, 0]);
        assert_eq!(interrupt(&mut dev).unwrap(), [1, 0x00, 0x20, 0x10, 0x00, 0]);
        assert_eq!(
            interrupt(&mut dev).unwrap(),
            [0, 0x00, 0x20, 0x10, 0x00, 0xFF]
        );
        assert_eq!(interrupt(&mut dev).unwrap(), [0, 0x10, 0x00, 0x10, 0x00, 0]);
        assert_eq!(interrupt(&mut dev), None);
        // Coordinates clamp to the declared range.
        dev.tablet_event(u16::MAX, 5, 0, 0);
        assert_eq!(interrupt(&mut dev).unwrap()[1..3], [0xFF, 0x7F]);
        // A guest that never reads holds a bounded queue.
        for i in 0..1000 {
            dev.tablet_event(i, i, (i % 2) as u8, 0);
        }
        assert!(dev.reports.len() <= REPORT_QUEUE_LIMIT);
    }

    #[test]
    fn keyboard_turns_set2_into_boot_reports_and_takes_leds() {
        let mut dev = configured(HidKind::Keyboard);
        assert!(dev.key_event(&[0x12])); // left Shift down
        assert!(dev.key_event(&[0x1C])); // A down
        assert!(dev.key_event(&[0xF0, 0x1C]));
        assert!(dev.key_event(&[0xE0, 0x75])); // Up
        assert!(!dev.key_event(&[0xE0, 0x12]), "fake shift is no key");
        assert_eq!(interrupt(&mut dev).unwrap(), [0x02, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(interrupt(&mut dev).unwrap(), [0x02, 0, 0x04, 0, 0, 0, 0, 0]);
        assert_eq!(interrupt(&mut dev).unwrap(), [0x02, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(interrupt(&mut dev).unwrap(), [0x02, 0, 0x52, 0, 0, 0, 0, 0]);
        assert_eq!(interrupt(&mut dev), None);
        assert_eq!(
            set2_to_usages(&[0xE1, 0x14, 0x77, 0xE1, 0xF0, 0x14, 0xF0, 0x77]),
            [(0x48, true), (0x48, false)]
        );
        let set_report = SetupPacket {
            request_type: 0x21,
            request: HID_SET_REPORT,
            value: 0x0200,
            index: 0,
            length: 1,
        };
        control(&mut dev, set_report, &[0x02]).unwrap();
        assert_eq!(dev.leds(), 0x02);
    }

    #[test]
    fn mouse_splits_large_motion_and_boot_protocol_sends_three_bytes() {
        let mut dev = configured(HidKind::Mouse);
        dev.mouse_event(300, -5, 0, 0);
        assert_eq!(interrupt(&mut dev).unwrap(), [0, 127, 0xFB, 0]);
        assert_eq!(interrupt(&mut dev).unwrap(), [0, 127, 0, 0]);
        assert_eq!(interrupt(&mut dev).unwrap(), [0, 46, 0, 0]);
        assert_eq!(interrupt(&mut dev), None);
        control(&mut dev, request(0x21, HID_SET_PROTOCOL, 0, 0), &[]).unwrap();
        dev.mouse_event(1, 2, 3, 4);
        assert_eq!(interrupt(&mut dev).unwrap(), [4, 1, 2]);
    }

    #[test]
    fn gamepad_reports_axes_hat_and_buttons_and_merges_stick_motion() {
        let mut dev = HidDevice::new(HidKind::Gamepad);
        let pressed = GamepadState {
            buttons: 1 << 3,
            ..Default::default()
        };
        // Held before the guest bound it: not queued, but GET_REPORT tells.
        dev.gamepad_event(pressed);
        let mut dev = {
            let mut d = configured(HidKind::Gamepad);
            d.gamepad_event(pressed);
            d.reports.clear();
            d
        };
        let get_report = SetupPacket {
            request_type: 0xA1,
            request: HID_GET_REPORT,
            value: 0x0100,
            index: 0,
            length: 7,
        };
        assert_eq!(
            control(&mut dev, get_report, &[]).unwrap(),
            [0, 0, 0, 0, HAT_CENTRED, 0x08, 0]
        );
        assert_eq!(interrupt(&mut dev), None, "no change, no report");
        let mut state = pressed;
        state.axes = [10, -20, 0, 0];
        dev.gamepad_event(state);
        state.axes = [127, -127, 5, -5]; // replaces the axes report still queued
        dev.gamepad_event(state);
        state.hat = 2; // right
        dev.gamepad_event(state);
        state.buttons = 0x8001; // buttons 1 and 16
        dev.gamepad_event(state);
        dev.gamepad_event(state); // no change
        assert_eq!(
            interrupt(&mut dev).unwrap(),
            [127, 0x81, 5, 0xFB, HAT_CENTRED, 0x08, 0]
        );
        assert_eq!(
            interrupt(&mut dev).unwrap(),
            [127, 0x81, 5, 0xFB, 2, 0x08, 0]
        );
        assert_eq!(
            interrupt(&mut dev).unwrap(),
            [127, 0x81, 5, 0xFB, 2, 0x01, 0x80]
        );
        assert_eq!(interrupt(&mut dev), None);
        // A bus reset keeps the host's controls; the guest reads them again once bound.
        dev.reset();
        assert_eq!(dev.gamepad_state(), state);
        let mut pad = HidDevice::gamepad(7);
        pad.reset();
        assert_eq!((pad.kind(), pad.host_pad()), (HidKind::Gamepad, Some(7)));
        // Other kinds ignore gamepad input; a guest that never reads holds a bounded queue.
        let mut tablet = configured(HidKind::Tablet);
        tablet.gamepad_event(state);
        assert_eq!(interrupt(&mut tablet), None);
        for i in 0..1000u16 {
            state.buttons = i;
            dev.gamepad_event(state);
        }
        assert!(dev.reports.len() <= REPORT_QUEUE_LIMIT);
    }
}
