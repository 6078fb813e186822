//! Gamepads through gilrs, on a thread of their own, forwarded to the machine's input
//! hook. No guest device consumes them yet (the USB HID gamepad will); the machine logs
//! them at debug level meanwhile.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::Duration;

use aero_machine::GamepadInput;
use gilrs::{EventType, Gilrs};

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
            while !stop.load(Ordering::Relaxed) {
                let Some(event) = gilrs.next_event_blocking(Some(Duration::from_millis(200)))
                else {
                    continue;
                };
                let Some(input) = convert(usize::from(event.id) as u32, raw(event.event)) else {
                    continue;
                };
                tracing::debug!(?input, "gamepad");
                if to_machine.send(ToMachine::Gamepad(input)).is_err() {
                    return;
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

/// A gilrs event → the machine's host-neutral form.
fn convert(pad: u32, event: Raw) -> Option<GamepadInput> {
    Some(match event {
        Raw::Connected => GamepadInput::Connected { pad },
        Raw::Disconnected => GamepadInput::Disconnected { pad },
        Raw::Button(button, pressed) => GamepadInput::Button {
            pad,
            button: button as u32,
            pressed,
        },
        // NaN from a broken driver becomes centre.
        Raw::Axis(axis, value) => GamepadInput::Axis {
            pad,
            axis: axis as u32,
            value: if value.is_nan() {
                0.0
            } else {
                value.clamp(-1.0, 1.0)
            },
        },
        Raw::Other => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gilrs::{Axis, Button};

    #[test]
    fn gilrs_events_convert() {
        assert_eq!(
            convert(1, Raw::Button(Button::South, true)),
            Some(GamepadInput::Button {
                pad: 1,
                button: Button::South as u32,
                pressed: true
            })
        );
        assert_eq!(
            convert(0, Raw::Axis(Axis::LeftStickX, 3.0)),
            Some(GamepadInput::Axis {
                pad: 0,
                axis: Axis::LeftStickX as u32,
                value: 1.0
            })
        );
        assert_eq!(
            convert(0, Raw::Axis(Axis::LeftStickY, f32::NAN)),
            Some(GamepadInput::Axis {
                pad: 0,
                axis: Axis::LeftStickY as u32,
                value: 0.0
            })
        );
        assert_eq!(
            convert(2, Raw::Connected),
            Some(GamepadInput::Connected { pad: 2 })
        );
        assert_eq!(convert(2, Raw::Other), None);
    }
}
