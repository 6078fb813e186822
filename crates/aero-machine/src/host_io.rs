//! What a front end (the desktop window) feeds into a running machine and reads back:
//! keyboard and mouse input, the ACPI power button, the PC speaker tone, gamepads, pause.
//!
//! Declared inside `machine.rs` so these methods reach the machine's private parts
//! without widening their visibility.

use std::time::Duration;

use super::Machine;

/// A gamepad event from the host, in a form independent of the host library.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GamepadInput {
    Connected {
        pad: u32,
    },
    Disconnected {
        pad: u32,
    },
    /// `button` is the host library's stable button number.
    Button {
        pad: u32,
        button: u32,
        pressed: bool,
    },
    /// `value` in -1.0..=1.0.
    Axis {
        pad: u32,
        axis: u32,
        value: f32,
    },
}

impl Machine {
    /// A key went down or up: its scancode-set-2 sequence (e.g. `[0xE0, 0xF0, 0x75]`).
    /// The i8042 translates to set 1 if the guest asked for it; typematic repeat comes
    /// from the keyboard model, so the host must not send its own repeats.
    pub fn key_event(&mut self, set2_bytes: &[u8]) {
        self.platform.i8042.key_event(set2_bytes);
    }

    /// The guest has read every key byte sent so far (scripts pace their typing on it,
    /// since a guest busy with interrupts off would otherwise lose keys).
    pub fn keyboard_idle(&self) -> bool {
        self.platform.i8042.keyboard_idle()
    }

    /// Relative mouse motion: `dx` right-positive, `dy` down-positive, `dz` positive for
    /// the wheel turned away from the user; `buttons` bit 0 left, 1 right, 2 middle.
    pub fn mouse_move(&mut self, dx: i32, dy: i32, dz: i32, buttons: u8) {
        self.platform.i8042.mouse_move(dx, dy, dz, buttons);
    }

    /// Presses the ACPI power button; an OS with ACPI then shuts down by itself.
    /// Plugs (true) or pulls the NIC's cable; false when the machine has no NIC.
    pub fn set_nic_link(&mut self, up: bool) -> bool {
        let devices = &mut self.platform.pci.pci.functions.devices;
        let Some(nic) = devices.iter_mut().find(|d| d.address == super::NIC_ADDRESS) else {
            return false;
        };
        nic.device.set_link_up(up);
        let now = self.platform.clock.now();
        self.platform.advance(now);
        true
    }

    pub fn press_power_button(&mut self) {
        self.platform.acpi_pm.press_power_button();
    }

    /// The PC speaker's tone (PIT channel 2 through port 0x61), if it sounds now.
    pub fn speaker_tone_hz(&self) -> Option<u32> {
        self.platform.pit.speaker_tone_hz()
    }

    /// Instructions the CPU has retired since power-on (for a speed display).
    pub fn instructions_retired(&self) -> u64 {
        self.cpu.instructions_retired()
    }

    /// The front end held the machine still for `paused`: in real-time mode the guest's
    /// clock skips that span so its timers do not race to catch up.
    pub fn resume_after_pause(&mut self, paused: Duration) {
        self.platform.clock.skip_host_time(paused);
    }

    /// Gamepad input. No guest device takes it yet: the USB HID gamepad will.
    pub fn gamepad_input(&mut self, event: GamepadInput) {
        tracing::debug!(?event, "gamepad input (no USB HID gamepad device yet)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MachineConfig;

    fn machine(deterministic: bool) -> Machine {
        Machine::new(MachineConfig {
            memory_bytes: 16 << 20,
            boot_order: vec![],
            deterministic,
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn speaker_is_silent_at_power_on_and_instructions_count() {
        let mut m = machine(true);
        assert_eq!(m.speaker_tone_hz(), None);
        assert_eq!(m.instructions_retired(), 0);
        m.run_for(1_000_000);
        assert!(m.instructions_retired() > 0);
    }

    #[test]
    fn pause_keeps_real_time_clock_from_jumping() {
        let mut m = machine(false);
        m.run_for(1_000_000);
        let before = m.now_ns();
        std::thread::sleep(Duration::from_millis(300));
        m.resume_after_pause(Duration::from_millis(300));
        m.run_for(1_000_000);
        let step = m.now_ns() - before;
        assert!(
            step < 200_000_000,
            "guest time jumped {step} ns over a pause"
        );
    }
}
