//! What a front end (the desktop window) feeds into a running machine and reads back:
//! keyboard and mouse input, the ACPI power button, the PC speaker tone, pause (gamepads:
//! `host_gamepad.rs`).
//!
//! Declared inside `machine.rs` so these methods reach the machine's private parts
//! without widening their visibility.

use std::time::Duration;

use super::Machine;
use crate::devices::pci::PciAddress;
use crate::devices::usb::ehci::{self, Ehci};
use crate::devices::usb::hid::{HidDevice, HidKind, TABLET_MAX};
use crate::devices::usb::root_ports::RootPorts;
use crate::devices::usb::uhci::{DEVICE_ID_UHCI1, DEVICE_ID_UHCI2, DEVICE_ID_UHCI3, Uhci};
use crate::platform::Platform;

/// The USB controllers' slot: ICH9 has its UHCI functions (and EHCI) in device 29.
pub const USB_SLOT: u8 = 0x1D;

/// Plugs ICH9's USB controllers into slot 29 as QEMU's `ich9-usb-ehci1` with
/// `ich9-usb-uhci1`-`3` lay them out: UHCI companions at functions 0-2 (two ports each)
/// and EHCI at function 7 over the same six ports, with the tablet on port 1, the
/// keyboard on port 2 and the mouse on port 3 (full speed: EHCI drivers hand them to
/// uhci1 and uhci2).
pub(crate) fn plug_usb(platform: &mut Platform) {
    let root = RootPorts::new(ehci::PORTS);
    let hid = |kind| Box::new(HidDevice::new(kind));
    for (port, device) in [
        (0, hid(HidKind::Tablet)),
        (1, hid(HidKind::Keyboard)),
        (2, hid(HidKind::Mouse)),
    ] {
        let _ = root.attach(port, device);
    }
    let companions = [DEVICE_ID_UHCI1, DEVICE_ID_UHCI2, DEVICE_ID_UHCI3];
    for (function, device_id) in (0u8..).zip(companions) {
        // INTA#-INTC#; function 0 announces the other functions.
        let first_port = usize::from(function) * ehci::PORTS_PER_COMPANION;
        let uhci = Uhci::companion(
            device_id,
            function + 1,
            function == 0,
            root.clone(),
            first_port,
        );
        platform.add_pci_device(PciAddress::new(0, USB_SLOT, function), Box::new(uhci));
    }
    let ehci = Ehci::new(root.clone());
    platform.add_pci_device(PciAddress::new(0, USB_SLOT, 7), Box::new(ehci));
    platform.usb_ports = Some(root);
}

/// Pixel `x` of a `size`-pixel screen as a tablet coordinate (the pixel's centre).
pub fn tablet_coordinate(x: u32, size: u32) -> u16 {
    let size = u64::from(size.max(1));
    let v = (2 * u64::from(x.min(u32::MAX / 2)) + 1) * (u64::from(TABLET_MAX) + 1) / (2 * size);
    v.min(u64::from(TABLET_MAX)) as u16
}

impl Machine {
    /// A key went down or up: its scancode-set-2 sequence (e.g. `[0xE0, 0xF0, 0x75]`).
    /// The i8042 translates to set 1 if the guest asked for it; typematic repeat comes
    /// from the keyboard model, so the host must not send its own repeats.
    /// Once the guest has configured the USB keyboard, keys go there instead (the PS/2
    /// keyboard serves the BIOS and early boot).
    pub fn key_event(&mut self, set2_bytes: &[u8]) {
        if self.with_configured_usb_hid(HidKind::Keyboard, |k| k.key_event(set2_bytes))
            == Some(true)
        {
            return;
        }
        self.platform.i8042.key_event(set2_bytes);
    }

    /// The guest has read every key byte sent so far (scripts pace their typing on it,
    /// since a guest busy with interrupts off would otherwise lose keys).
    pub fn keyboard_idle(&mut self) -> bool {
        let usb_idle = self
            .with_configured_usb_hid(HidKind::Keyboard, |k| k.idle())
            .unwrap_or(true);
        usb_idle && self.platform.i8042.keyboard_idle()
    }

    /// Relative mouse motion: `dx` right-positive, `dy` down-positive, `dz` positive for
    /// the wheel turned away from the user; `buttons` bit 0 left, 1 right, 2 middle.
    /// Goes to the USB mouse once the guest has configured it, else to the PS/2 mouse.
    pub fn mouse_move(&mut self, dx: i32, dy: i32, dz: i32, buttons: u8) {
        if self
            .with_configured_usb_hid(HidKind::Mouse, |m| m.mouse_event(dx, dy, dz, buttons))
            .is_some()
        {
            return;
        }
        self.platform.i8042.mouse_move(dx, dy, dz, buttons);
    }

    /// Whether the guest has configured the USB tablet (its driver bound it), so that
    /// [`Machine::tablet_event`] reaches it.
    pub fn tablet_ready(&mut self) -> bool {
        self.with_configured_usb_hid(HidKind::Tablet, |_| ())
            .is_some()
    }

    /// The USB tablet's pointer at (`x`, `y`) in 0..=32767 (see [`tablet_coordinate`]),
    /// `buttons` bit 0 left, 1 right, 2 middle, `wheel` clicks away from the user.
    /// False when there is no tablet the guest has configured.
    pub fn tablet_event(&mut self, x: u16, y: u16, buttons: u8, wheel: i8) -> bool {
        self.with_configured_usb_hid(HidKind::Tablet, |t| t.tablet_event(x, y, buttons, wheel))
            .is_some()
    }

    /// `f` on the USB HID device of `kind`, if the machine has one and the guest
    /// configured it.
    fn with_configured_usb_hid<R>(
        &mut self,
        kind: HidKind,
        f: impl FnOnce(&mut HidDevice) -> R,
    ) -> Option<R> {
        let mut f = Some(f);
        self.platform.usb_ports.as_ref()?.find_map(|d| {
            let hid = d.as_any_mut().downcast_mut::<HidDevice>()?;
            if hid.kind() != kind || !hid.configured() {
                return None;
            }
            f.take().map(|f| f(hid))
        })
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
