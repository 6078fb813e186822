//! Host gamepads as USB HID game controllers: a pad the host connects is plugged into a
//! free USB root port (the guest sees a hot-plug), its buttons, sticks and hat become HID
//! reports, and it is unplugged when the host loses it.
//!
//! Declared inside `machine.rs` (like `host_io.rs`) to reach the machine's USB ports.

use super::Machine;
use crate::devices::usb::hid::{GamepadState, HAT_CENTRED, HidDevice};

/// A gamepad event from the host, already in the HID gamepad's terms (the front end maps
/// its library's buttons and axes; see `aero run`'s gamepad thread).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GamepadInput {
    /// Host pad `pad` appeared: plug a gamepad in for it.
    Connected { pad: u32 },
    /// Host pad `pad` went away: unplug its gamepad.
    Disconnected { pad: u32 },
    /// HID button `button` (1..=16) went down or up.
    Button { pad: u32, button: u8, pressed: bool },
    /// A stick axis at `value` in -1.0..=1.0, positive right (X, Z) or down (Y, Rz).
    Axis {
        pad: u32,
        axis: GamepadAxis,
        value: f32,
    },
    /// The hat (d-pad): `None` centred, else 0..=7 = up, up-right, ... clockwise.
    Hat { pad: u32, direction: Option<u8> },
}

/// The gamepad's axes, in report order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GamepadAxis {
    /// Left stick, horizontal.
    X,
    /// Left stick, vertical.
    Y,
    /// Right stick, horizontal.
    Z,
    /// Right stick, vertical.
    Rz,
}

/// Why a gamepad event did not reach the guest.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GamepadError {
    #[error("the machine has no USB controllers (--no-usb)")]
    NoUsb,
    #[error("every USB root port is taken; gamepad {0} stays unplugged")]
    NoFreePort(u32),
    #[error("gamepad {0} is not plugged in")]
    NotAttached(u32),
    #[error("gamepad button {0} is not one of 1..=16")]
    NoSuchButton(u8),
    #[error("gamepad hat direction {0} is not one of 0..=7")]
    NoSuchDirection(u8),
}

/// A stick position in -1.0..=1.0 as the report's -127..=127 (NaN: centred).
pub fn axis_value(value: f32) -> i8 {
    if value.is_nan() {
        return 0;
    }
    (value.clamp(-1.0, 1.0) * 127.0).round() as i8
}

impl Machine {
    /// Gamepad input from the window's gamepad thread; what cannot reach the guest is
    /// logged (a pad beyond the free ports, input for a pad never connected).
    pub fn gamepad_input(&mut self, event: GamepadInput) {
        match self.gamepad_event(event) {
            Ok(()) => {}
            // Every stick move of a pad left unplugged would say so: once is enough, at
            // connect time.
            Err(e @ GamepadError::NotAttached(_)) => tracing::debug!("gamepad: {e}"),
            Err(e) => tracing::info!("gamepad: {e}"),
        }
    }

    /// One gamepad event (the monitor's `gamepad_*` commands report the errors).
    /// Connecting a pad that is plugged in already does nothing.
    pub fn gamepad_event(&mut self, event: GamepadInput) -> Result<(), GamepadError> {
        let ports = self
            .platform
            .usb_ports
            .as_ref()
            .ok_or(GamepadError::NoUsb)?;
        let update = |pad: u32, change: &mut dyn FnMut(&mut GamepadState)| {
            ports
                .find_map(|d| {
                    let hid = d.as_any_mut().downcast_mut::<HidDevice>()?;
                    if hid.host_pad() != Some(pad) {
                        return None;
                    }
                    let mut state = hid.gamepad_state();
                    change(&mut state);
                    hid.gamepad_event(state);
                    Some(())
                })
                .ok_or(GamepadError::NotAttached(pad))
        };
        match event {
            GamepadInput::Connected { pad } => {
                if update(pad, &mut |_| ()).is_ok() {
                    return Ok(());
                }
                ports
                    .attach_free(Box::new(HidDevice::gamepad(pad)))
                    .map_err(|_| GamepadError::NoFreePort(pad))?;
                tracing::debug!(pad, "gamepad plugged in");
            }
            GamepadInput::Disconnected { pad } => {
                let (port, _) = ports
                    .detach_where(|d| {
                        d.as_any_mut()
                            .downcast_mut::<HidDevice>()
                            .is_some_and(|h| h.host_pad() == Some(pad))
                    })
                    .ok_or(GamepadError::NotAttached(pad))?;
                tracing::debug!(pad, port, "gamepad unplugged");
            }
            GamepadInput::Button {
                pad,
                button,
                pressed,
            } => {
                if !(1..=16).contains(&button) {
                    return Err(GamepadError::NoSuchButton(button));
                }
                let bit = 1u16 << (button - 1);
                update(pad, &mut |s| {
                    if pressed {
                        s.buttons |= bit;
                    } else {
                        s.buttons &= !bit;
                    }
                })?;
            }
            GamepadInput::Axis { pad, axis, value } => {
                let index = axis as usize;
                update(pad, &mut |s| s.axes[index] = axis_value(value))?;
            }
            GamepadInput::Hat { pad, direction } => {
                if let Some(d) = direction.filter(|&d| d > 7) {
                    return Err(GamepadError::NoSuchDirection(d));
                }
                update(pad, &mut |s| s.hat = direction.unwrap_or(HAT_CENTRED))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MachineConfig;
    use crate::devices::usb::root_ports::RootPorts;

    fn machine(usb: bool) -> Machine {
        Machine::new(MachineConfig {
            memory_bytes: 16 << 20,
            boot_order: vec![],
            deterministic: true,
            usb,
            ..Default::default()
        })
        .unwrap()
    }

    /// The gamepads plugged in: (port, host pad, state).
    fn gamepads(ports: &RootPorts) -> Vec<(usize, u32, GamepadState)> {
        let mut root = ports.lock();
        root.iter_mut()
            .enumerate()
            .filter_map(|(i, p)| {
                let hid = p
                    .device
                    .as_mut()?
                    .as_any_mut()
                    .downcast_mut::<HidDevice>()?;
                Some((i, hid.host_pad()?, hid.gamepad_state()))
            })
            .collect()
    }

    #[test]
    fn pads_plug_into_free_ports_take_input_and_unplug() {
        let mut m = machine(true);
        let ports = m.platform.usb_ports.clone().unwrap();
        let free = ports.lock().iter().filter(|p| p.device.is_none()).count();
        assert!(free >= 1, "a free root port for a gamepad");
        m.gamepad_event(GamepadInput::Connected { pad: 3 }).unwrap();
        m.gamepad_event(GamepadInput::Connected { pad: 3 }).unwrap();
        assert_eq!(gamepads(&ports).len(), 1, "connecting twice plugs one pad");
        m.gamepad_event(GamepadInput::Button {
            pad: 3,
            button: 16,
            pressed: true,
        })
        .unwrap();
        m.gamepad_event(GamepadInput::Axis {
            pad: 3,
            axis: GamepadAxis::Rz,
            value: -1.0,
        })
        .unwrap();
        m.gamepad_event(GamepadInput::Hat {
            pad: 3,
            direction: Some(6),
        })
        .unwrap();
        let (port, pad, state) = gamepads(&ports)[0];
        assert_eq!(pad, 3);
        assert_eq!(
            state,
            GamepadState {
                axes: [0, 0, 0, -127],
                hat: 6,
                buttons: 0x8000
            }
        );
        // Bad values and unknown pads are errors, not panics.
        let button = |pad, button| GamepadInput::Button {
            pad,
            button,
            pressed: true,
        };
        assert_eq!(
            m.gamepad_event(button(3, 17)),
            Err(GamepadError::NoSuchButton(17))
        );
        assert_eq!(
            m.gamepad_event(button(3, 0)),
            Err(GamepadError::NoSuchButton(0))
        );
        assert_eq!(
            m.gamepad_event(button(9, 1)),
            Err(GamepadError::NotAttached(9))
        );
        assert_eq!(
            m.gamepad_event(GamepadInput::Hat {
                pad: 3,
                direction: Some(8)
            }),
            Err(GamepadError::NoSuchDirection(8))
        );
        // Pads beyond the free ports stay out; unplugging frees the port.
        for pad in 10..10 + free as u32 - 1 {
            m.gamepad_event(GamepadInput::Connected { pad }).unwrap();
        }
        assert_eq!(
            m.gamepad_event(GamepadInput::Connected { pad: 99 }),
            Err(GamepadError::NoFreePort(99))
        );
        m.gamepad_event(GamepadInput::Disconnected { pad: 3 })
            .unwrap();
        assert!(ports.lock()[port].device.is_none());
        assert_eq!(
            m.gamepad_event(GamepadInput::Disconnected { pad: 3 }),
            Err(GamepadError::NotAttached(3))
        );
        m.gamepad_event(GamepadInput::Connected { pad: 99 })
            .unwrap();
        assert_eq!(
            machine(false).gamepad_event(GamepadInput::Connected { pad: 0 }),
            Err(GamepadError::NoUsb)
        );
    }

    #[test]
    fn stick_values_scale_to_the_report_range() {
        assert_eq!(axis_value(1.0), 127);
        assert_eq!(axis_value(-1.0), -127);
        assert_eq!(axis_value(5.0), 127);
        assert_eq!(axis_value(0.5), 64);
        assert_eq!(axis_value(f32::NAN), 0);
        assert_eq!(axis_value(f32::NEG_INFINITY), -127);
        // The monitor's -127..=127 survive the trip through -1.0..=1.0.
        for v in -127i8..=127 {
            assert_eq!(axis_value(f32::from(v) / 127.0), v);
        }
    }
}
