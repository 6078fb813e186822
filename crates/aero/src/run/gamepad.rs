//! Gamepads through gilrs, on a thread of their own: each host pad becomes a USB HID
//! gamepad in the guest (plugged in when gilrs sees the pad, unplugged when it goes),
//! its buttons, sticks and d-pad mapped to the HID gamepad's buttons 1-16, X/Y/Z/Rz and hat.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::Duration;

use aero_machine::{GamepadAxis, GamepadInput};
use gilrs::{Axis, Button, EventType, Gilrs};

use super::ToMachine;

/// Starts the gamepad thread; it ends when `stop` is set or the machine is gone.
pub fn start(to_machine: Sender<ToMachine>, stop: Arc<AtomicBool>) {
    let spawned = std::thread::Builder::new()
        .name("aero-gamepad".into())
        .spawn(move || {
            let mut gilrs = match Gilrs::new() {
                Ok(g) => g,
                Err(gilrs::Error::NotImplemented(g)) => g,
                Err(e) => {
                    tracing::info!("gamepads unavailable: {e}");
                    return;
                }
            };
            let mut mapper = PadMapper::default();
            // Pads connected before we started: plug them in too (connecting twice is
            // harmless if gilrs also reports them).
            let present: Vec<u32> = gilrs
                .gamepads()
                .map(|(id, _)| usize::from(id) as u32)
                .collect();
            for pad in present {
                if to_machine
                    .send(ToMachine::Gamepad(GamepadInput::Connected { pad }))
                    .is_err()
                {
                    return;
                }
            }
            while !stop.load(Ordering::Relaxed) {
                let Some(event) = gilrs.next_event_blocking(Some(Duration::from_millis(200)))
                else {
                    continue;
                };
                if let Some(input) = mapper.map(usize::from(event.id) as u32, raw(event.event)) {
                    tracing::debug!(?input, "gamepad");
                    if to_machine.send(ToMachine::Gamepad(input)).is_err() {
                        return;
                    }
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the gamepad thread: {e}");
    }
}

/// The parts of a gilrs event that matter here (gilrs' element codes cannot be built
/// outside gilrs, so tests use this form).
#[derive(Clone, Copy, Debug)]
enum Raw {
    Connected,
    Disconnected,
    Button(gilrs::Button, bool),
    Axis(gilrs::Axis, f32),
    Other,
}

fn raw(event: EventType) -> Raw {
    match event {
        EventType::Connected => Raw::Connected,
        EventType::Disconnected => Raw::Disconnected,
        EventType::ButtonPressed(button, _) => Raw::Button(button, true),
        EventType::ButtonReleased(button, _) => Raw::Button(button, false),
        EventType::AxisChanged(axis, value, _) => Raw::Axis(axis, value),
        _ => Raw::Other,
    }
}

/// The d-pad directions held, as bits.
const UP: u8 = 1;
const RIGHT: u8 = 2;
const DOWN: u8 = 4;
const LEFT: u8 = 8;

/// The hat direction of the d-pad directions held (opposite ones cancel).
fn hat(dpad: u8) -> Option<u8> {
    let vertical = match dpad & (UP | DOWN) {
        UP => -1,
        DOWN => 1,
        _ => 0,
    };
    let horizontal = match dpad & (LEFT | RIGHT) {
        LEFT => -1,
        RIGHT => 1,
        _ => 0,
    };
    Some(match (vertical, horizontal) {
        (-1, 0) => 0,
        (-1, 1) => 1,
        (0, 1) => 2,
        (1, 1) => 3,
        (1, 0) => 4,
        (1, -1) => 5,
        (0, -1) => 6,
        (-1, -1) => 7,
        _ => return None,
    })
}

/// The HID button for a gilrs button, in the order of the common PC pads (DirectInput's
/// "button 1" is the bottom face button); d-pad buttons are the hat, not numbered.
fn hid_button(button: Button) -> Option<u8> {
    Some(match button {
        Button::South => 1,
        Button::East => 2,
        Button::West => 3,
        Button::North => 4,
        Button::LeftTrigger => 5,
        Button::RightTrigger => 6,
        Button::LeftTrigger2 => 7,
        Button::RightTrigger2 => 8,
        Button::Select => 9,
        Button::Start => 10,
        Button::LeftThumb => 11,
        Button::RightThumb => 12,
        Button::Mode => 13,
        Button::C => 14,
        Button::Z => 15,
        _ => return None,
    })
}

fn dpad_bit(button: Button) -> Option<u8> {
    Some(match button {
        Button::DPadUp => UP,
        Button::DPadRight => RIGHT,
        Button::DPadDown => DOWN,
        Button::DPadLeft => LEFT,
        _ => return None,
    })
}

/// Turns gilrs events into the machine's gamepad input, keeping each pad's d-pad (the
/// HID hat is one value for four buttons, or two axes on some pads).
#[derive(Default)]
struct PadMapper {
    dpads: HashMap<u32, u8>,
}

impl PadMapper {
    fn map(&mut self, pad: u32, event: Raw) -> Option<GamepadInput> {
        let dpad_change = |dpads: &mut HashMap<u32, u8>, set: u8, clear: u8| {
            let held = dpads.entry(pad).or_default();
            let old = hat(*held);
            *held = (*held & !clear) | set;
            let new = hat(*held);
            (new != old).then_some(GamepadInput::Hat {
                pad,
                direction: new,
            })
        };
        match event {
            Raw::Connected => Some(GamepadInput::Connected { pad }),
            Raw::Disconnected => {
                self.dpads.remove(&pad);
                Some(GamepadInput::Disconnected { pad })
            }
            Raw::Button(button, pressed) => {
                if let Some(bit) = dpad_bit(button) {
                    let (set, clear) = if pressed { (bit, 0) } else { (0, bit) };
                    dpad_change(&mut self.dpads, set, clear)
                } else {
                    hid_button(button).map(|button| GamepadInput::Button {
                        pad,
                        button,
                        pressed,
                    })
                }
            }
            Raw::Axis(axis, value) => {
                // gilrs' Y axes are positive up, HID's down.
                let stick = |axis, value: f32| GamepadInput::Axis { pad, axis, value };
                match axis {
                    Axis::LeftStickX => Some(stick(GamepadAxis::X, value)),
                    Axis::LeftStickY => Some(stick(GamepadAxis::Y, -value)),
                    Axis::RightStickX => Some(stick(GamepadAxis::Z, value)),
                    Axis::RightStickY => Some(stick(GamepadAxis::Rz, -value)),
                    // A d-pad reported as axes: past half way is a direction held.
                    Axis::DPadX => {
                        let set = if value > 0.5 {
                            RIGHT
                        } else if value < -0.5 {
                            LEFT
                        } else {
                            0
                        };
                        dpad_change(&mut self.dpads, set, LEFT | RIGHT)
                    }
                    Axis::DPadY => {
                        let set = if value > 0.5 {
                            UP
                        } else if value < -0.5 {
                            DOWN
                        } else {
                            0
                        };
                        dpad_change(&mut self.dpads, set, UP | DOWN)
                    }
                    // Analog triggers also come as LeftTrigger2/RightTrigger2 buttons.
                    _ => None,
                }
            }
            Raw::Other => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gilrs_events_map_to_hid_gamepad_input() {
        let mut m = PadMapper::default();
        assert_eq!(
            m.map(2, Raw::Connected),
            Some(GamepadInput::Connected { pad: 2 })
        );
        assert_eq!(
            m.map(1, Raw::Button(Button::South, true)),
            Some(GamepadInput::Button {
                pad: 1,
                button: 1,
                pressed: true
            })
        );
        assert_eq!(
            m.map(1, Raw::Button(Button::Start, false)),
            Some(GamepadInput::Button {
                pad: 1,
                button: 10,
                pressed: false
            })
        );
        // Sticks: Y flips to HID's down-positive; values pass as they are (the machine
        // clamps and scales).
        assert_eq!(
            m.map(0, Raw::Axis(Axis::LeftStickY, 0.5)),
            Some(GamepadInput::Axis {
                pad: 0,
                axis: GamepadAxis::Y,
                value: -0.5
            })
        );
        assert_eq!(
            m.map(0, Raw::Axis(Axis::RightStickX, 1.0)),
            Some(GamepadInput::Axis {
                pad: 0,
                axis: GamepadAxis::Z,
                value: 1.0
            })
        );
        assert!(m.map(0, Raw::Axis(Axis::LeftZ, 1.0)).is_none());
        assert!(m.map(0, Raw::Button(Button::Unknown, true)).is_none());
        assert!(m.map(0, Raw::Other).is_none());
        // D-pad buttons make the hat: up, then up-right, then right, opposite ones cancel.
        let hat = |direction| Some(GamepadInput::Hat { pad: 0, direction });
        assert_eq!(m.map(0, Raw::Button(Button::DPadUp, true)), hat(Some(0)));
        assert_eq!(m.map(0, Raw::Button(Button::DPadRight, true)), hat(Some(1)));
        assert_eq!(m.map(0, Raw::Button(Button::DPadUp, false)), hat(Some(2)));
        assert_eq!(m.map(0, Raw::Button(Button::DPadLeft, true)), hat(None));
        assert_eq!(
            m.map(0, Raw::Button(Button::DPadRight, false)),
            hat(Some(6))
        );
        assert!(
            m.map(0, Raw::Button(Button::DPadLeft, true)).is_none(),
            "no change, no event"
        );
        // Another pad's d-pad is its own; a d-pad as axes works the same.
        assert_eq!(
            m.map(5, Raw::Axis(Axis::DPadY, -1.0)),
            Some(GamepadInput::Hat {
                pad: 5,
                direction: Some(4)
            })
        );
        assert_eq!(
            m.map(5, Raw::Axis(Axis::DPadX, -1.0)),
            Some(GamepadInput::Hat {
                pad: 5,
                direction: Some(5)
            })
        );
        assert_eq!(
            m.map(5, Raw::Axis(Axis::DPadY, 0.0)),
            Some(GamepadInput::Hat {
                pad: 5,
                direction: Some(6)
            })
        );
        assert_eq!(
            m.map(5, Raw::Disconnected),
            Some(GamepadInput::Disconnected { pad: 5 })
        );
    }
}
