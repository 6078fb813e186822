//! Intel 8042 keyboard controller (ports 0x60/0x64) with a PS/2 keyboard and a PS/2 mouse
//! on its two ports; IRQ1 (keyboard) and IRQ12 (mouse).
//!
//! Follows the IBM PC/AT and PS/2 keyboard controller references: status register
//! (OBF, IBF, SYS, A2, INH, AUX-OBF), the command byte (20h/60h: interrupt enables, SYS,
//! port disables, set-2 → set-1 translation), controller commands A7/A8/A9/AA/AB/AD/AE,
//! C0 (input port), D0/D1 (output port with the A20 gate and the CPU reset line),
//! D2/D3 (write output buffer as keyboard/mouse), D4 (write to mouse), DD/DF (A20 off/on),
//! E0 (test inputs) and F0–FF (pulse output port bits; FE resets the CPU).
//!
//! One output buffer is shared by both ports, so after the guest reads port 0x60 the next
//! byte is loaded only a little later on the virtual clock ([`OUTPUT_REFILL_NS`]): the IRQ
//! line drops between two bytes and the edge-triggered PIC sees each one, as on hardware.
//! The machine polls [`I8042::a20_enabled`] and [`I8042::take_reset_request`].

use std::collections::VecDeque;

use super::ps2::Ps2Device;
use super::ps2_keyboard::{Ps2Keyboard, translate_set2_byte};
use super::ps2_mouse::Ps2Mouse;
use super::{IrqLines, PortIo, Timed, read_bytes, write_bytes};

/// Delay between a data-port read and loading the next byte into the output buffer.
pub const OUTPUT_REFILL_NS: u64 = 50_000;
pub const KEYBOARD_IRQ: u8 = 1;
pub const MOUSE_IRQ: u8 = 12;

const STATUS_OBF: u8 = 0x01;
const STATUS_SYS: u8 = 0x04;
const STATUS_A2: u8 = 0x08;
const STATUS_NOT_INHIBITED: u8 = 0x10;
const STATUS_AUX_OBF: u8 = 0x20;

const CMD_KBD_IRQ: u8 = 0x01;
const CMD_AUX_IRQ: u8 = 0x02;
const CMD_SYS: u8 = 0x04;
const CMD_KBD_DISABLED: u8 = 0x10;
const CMD_AUX_DISABLED: u8 = 0x20;
const CMD_TRANSLATE: u8 = 0x40;

const OUT_RESET_DEASSERTED: u8 = 0x01;
const OUT_A20: u8 = 0x02;
/// Output port after reset: reset line high, A20 enabled (what QEMU and the BIOSes that
/// never touch A20 expect), keyboard clock/data and the unused bits high.
const OUT_POWER_ON: u8 = 0xCF;
const OUT_KBD_OBF: u8 = 0x10;
const OUT_AUX_OBF: u8 = 0x20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Controller,
    Keyboard,
    Mouse,
}

/// Which controller command is waiting for a data byte on port 0x60.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PendingData {
    None,
    WriteRam(u8),
    WriteOutputPort,
    WriteKeyboardBuffer,
    WriteMouseBuffer,
    WriteMouse,
}

/// The keyboard controller and its two PS/2 devices.
#[derive(Clone, Debug)]
pub struct I8042 {
    keyboard: Ps2Keyboard,
    mouse: Ps2Mouse,
    /// 32 bytes of controller RAM; byte 0 is the command byte.
    ram: [u8; 32],
    output: Option<(u8, Source)>,
    last_output: u8,
    /// Bytes produced by the controller itself (or D2/D3), with the port they appear from.
    controller_queue: VecDeque<(u8, Source)>,
    pending: PendingData,
    last_write_was_command: bool,
    output_port: u8,
    reset_requested: bool,
    /// Set-2 F0 prefix seen by the translator; the next code gets bit 7.
    translate_break: bool,
    now_ns: u64,
    refill_at_ns: u64,
}

impl Default for I8042 {
    fn default() -> Self {
        Self::new()
    }
}

impl I8042 {
    /// Power-on state: translation on, keyboard IRQ on, A20 enabled.
    pub fn new() -> I8042 {
        let mut ram = [0; 32];
        ram[0] = CMD_KBD_IRQ | CMD_TRANSLATE | CMD_AUX_DISABLED;
        I8042 {
            keyboard: Ps2Keyboard::new(),
            mouse: Ps2Mouse::new(),
            ram,
            output: None,
            last_output: 0,
            controller_queue: VecDeque::new(),
            pending: PendingData::None,
            last_write_was_command: false,
            output_port: OUT_POWER_ON,
            reset_requested: false,
            translate_break: false,
            now_ns: 0,
            refill_at_ns: 0,
        }
    }

    pub(crate) fn command_byte(&self) -> u8 {
        self.ram[0]
    }

    /// Host keyboard input as set-2 bytes (see [`Ps2Keyboard::key_event`]).
    pub fn key_event(&mut self, set2_bytes: &[u8]) {
        self.keyboard.key_event(set2_bytes);
        self.fill_output();
    }

    /// Everything the keyboard sent has been read by the guest (nothing queued in the
    /// keyboard or waiting in the output buffer).
    pub fn keyboard_idle(&self) -> bool {
        !self.keyboard.has_data() && !matches!(self.output, Some((_, Source::Keyboard)))
    }

    /// Host mouse input (see [`Ps2Mouse::mouse_move`] for the sign conventions).
    pub fn mouse_move(&mut self, dx: i32, dy: i32, dz: i32, buttons: u8) {
        self.mouse.mouse_move(dx, dy, dz, buttons);
        self.fill_output();
    }

    /// The A20 gate as set through the output port (D1, DD/DF).
    pub fn a20_enabled(&self) -> bool {
        self.output_port & OUT_A20 != 0
    }

    /// The guest pulsed the CPU reset line (FE, or D1 with bit 0 clear) since the last call.
    pub fn take_reset_request(&mut self) -> bool {
        std::mem::take(&mut self.reset_requested)
    }

    /// Keyboard LEDs (bit 0 Scroll, 1 Num, 2 Caps Lock).
    pub fn keyboard_leds(&self) -> u8 {
        self.keyboard.leds()
    }

    /// IRQ1 / IRQ12 output levels.
    pub fn irq_lines(&self) -> IrqLines {
        let mut lines = IrqLines::NONE;
        match self.output {
            Some((_, Source::Mouse)) => {
                lines.set(MOUSE_IRQ, self.command_byte() & CMD_AUX_IRQ != 0)
            }
            Some(_) => lines.set(KEYBOARD_IRQ, self.command_byte() & CMD_KBD_IRQ != 0),
            None => {}
        }
        lines
    }

    fn status(&self) -> u8 {
        let mut status = STATUS_NOT_INHIBITED | (self.command_byte() & CMD_SYS);
        if let Some((_, source)) = self.output {
            status |= STATUS_OBF;
            if source == Source::Mouse {
                status |= STATUS_AUX_OBF;
            }
        }
        if self.last_write_was_command {
            status |= STATUS_A2;
        }
        status
    }

    /// Output port as read by D0: the buffer-full bits reflect the current output buffer.
    fn read_output_port(&self) -> u8 {
        let mut value = self.output_port & !(OUT_KBD_OBF | OUT_AUX_OBF);
        match self.output {
            Some((_, Source::Mouse)) => value |= OUT_AUX_OBF,
            Some(_) => value |= OUT_KBD_OBF,
            None => {}
        }
        value
    }

    fn write_output_port(&mut self, value: u8) {
        self.output_port = value;
        if value & OUT_RESET_DEASSERTED == 0 {
            self.reset_requested = true;
            self.output_port |= OUT_RESET_DEASSERTED;
        }
    }

    /// Loads the next byte into the empty output buffer, honouring the refill delay and
    /// the port disable bits (a disabled port keeps its data until it is enabled).
    fn fill_output(&mut self) {
        if self.output.is_some() || self.now_ns < self.refill_at_ns {
            return;
        }
        if let Some(entry) = self.controller_queue.pop_front() {
            self.output = Some(entry);
            return;
        }
        if self.command_byte() & CMD_KBD_DISABLED == 0 {
            while let Some(byte) = self.keyboard.pop() {
                if let Some(byte) = self.translate(byte) {
                    self.output = Some((byte, Source::Keyboard));
                    return;
                }
            }
        }
        if self.command_byte() & CMD_AUX_DISABLED == 0
            && let Some(byte) = self.mouse.pop()
        {
            self.output = Some((byte, Source::Mouse));
        }
    }

    /// Set-2 → set-1 translation of keyboard bytes; `None` for a swallowed F0 prefix.
    fn translate(&mut self, byte: u8) -> Option<u8> {
        if self.command_byte() & CMD_TRANSLATE == 0 {
            return Some(byte);
        }
        if byte == 0xF0 {
            self.translate_break = true;
            return None;
        }
        let release = std::mem::take(&mut self.translate_break);
        Some(translate_set2_byte(byte) | if release { 0x80 } else { 0 })
    }

    fn queue_controller_byte(&mut self, byte: u8, source: Source) {
        // Answers to controller commands replace anything not yet read, like the chip's
        // single output register (bounded: at most one pending answer per command).
        if self.controller_queue.len() < 4 {
            self.controller_queue.push_back((byte, source));
        }
        self.fill_output();
    }

    fn read_data(&mut self) -> u8 {
        if let Some((byte, _)) = self.output.take() {
            self.last_output = byte;
            self.refill_at_ns = self.now_ns.saturating_add(OUTPUT_REFILL_NS);
        }
        self.last_output
    }

    fn write_command(&mut self, command: u8) {
        self.last_write_was_command = true;
        self.pending = PendingData::None;
        match command {
            0x20..=0x3F => self
                .queue_controller_byte(self.ram[usize::from(command & 0x1F)], Source::Controller),
            0x60..=0x7F => self.pending = PendingData::WriteRam(command & 0x1F),
            0xA7 => self.ram[0] |= CMD_AUX_DISABLED,
            0xA8 => {
                self.ram[0] &= !CMD_AUX_DISABLED;
                self.fill_output();
            }
            0xA9 | 0xAB => self.queue_controller_byte(0x00, Source::Controller), // port test: no error
            0xAA => {
                self.ram[0] |= CMD_SYS;
                self.queue_controller_byte(0x55, Source::Controller);
            }
            0xAD => self.ram[0] |= CMD_KBD_DISABLED,
            0xAE => {
                self.ram[0] &= !CMD_KBD_DISABLED;
                self.fill_output();
            }
            0xC0 => self.queue_controller_byte(0x80, Source::Controller), // keyboard not locked
            0xD0 => self.queue_controller_byte(self.read_output_port(), Source::Controller),
            0xD1 => self.pending = PendingData::WriteOutputPort,
            0xD2 => self.pending = PendingData::WriteKeyboardBuffer,
            0xD3 => self.pending = PendingData::WriteMouseBuffer,
            0xD4 => self.pending = PendingData::WriteMouse,
            0xDD => self.output_port &= !OUT_A20,
            0xDF => self.output_port |= OUT_A20,
            0xE0 => self.queue_controller_byte(0x00, Source::Controller),
            0xF0..=0xFF => {
                // Bits 0–3 clear in the command are pulsed low; bit 0 is the reset line.
                if command & 0x01 == 0 {
                    self.reset_requested = true;
                }
            }
            _ => tracing::debug!(command, "i8042: unsupported controller command"),
        }
    }

    fn write_data(&mut self, value: u8) {
        self.last_write_was_command = false;
        match std::mem::replace(&mut self.pending, PendingData::None) {
            PendingData::WriteRam(0) => {
                self.ram[0] = value;
                self.fill_output();
            }
            PendingData::WriteRam(index) => self.ram[usize::from(index & 0x1F)] = value,
            PendingData::WriteOutputPort => self.write_output_port(value),
            PendingData::WriteKeyboardBuffer => self.queue_controller_byte(value, Source::Keyboard),
            PendingData::WriteMouseBuffer => self.queue_controller_byte(value, Source::Mouse),
            PendingData::WriteMouse => {
                self.mouse.write(value);
                self.fill_output();
            }
            PendingData::None => {
                // Sending to the keyboard re-enables its interface, like the real chip.
                self.ram[0] &= !CMD_KBD_DISABLED;
                self.keyboard.write(value);
                self.fill_output();
            }
        }
    }
}

impl PortIo for I8042 {
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        read_bytes(port, size, |p| match p {
            0x60 => self.read_data(),
            0x64 => self.status(),
            _ => 0xFF,
        })
    }

    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        write_bytes(port, size, value, |p, v| match p {
            0x60 => self.write_data(v),
            0x64 => self.write_command(v),
            _ => {}
        });
    }
}

impl Timed for I8042 {
    fn advance(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        self.keyboard.advance(now_ns);
        self.fill_output();
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        let data_waiting =
            !self.controller_queue.is_empty() || self.keyboard.has_data() || self.mouse.has_data();
        let refill = (self.output.is_none() && data_waiting && self.refill_at_ns > self.now_ns)
            .then_some(self.refill_at_ns);
        match (refill, self.keyboard.next_deadline_ns()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctl() -> I8042 {
        I8042::new()
    }

    /// Reads port 0x60 and lets the refill delay pass.
    fn read(c: &mut I8042) -> u8 {
        let byte = c.io_read(0x60, 1) as u8;
        let now = c.now_ns + OUTPUT_REFILL_NS;
        c.advance(now);
        byte
    }

    fn status(c: &mut I8042) -> u8 {
        c.io_read(0x64, 1) as u8
    }

    fn command(c: &mut I8042, cmd: u8) {
        c.io_write(0x64, 1, u32::from(cmd));
    }

    fn data(c: &mut I8042, value: u8) {
        c.io_write(0x60, 1, u32::from(value));
    }

    #[test]
    fn self_test_and_command_byte() {
        let mut c = ctl();
        command(&mut c, 0xAA);
        assert_eq!(status(&mut c) & 0x0D, STATUS_OBF | STATUS_SYS | STATUS_A2);
        assert_eq!(read(&mut c), 0x55);
        command(&mut c, 0x20);
        assert_eq!(read(&mut c), 0x65);
        command(&mut c, 0x60);
        data(&mut c, 0x47);
        command(&mut c, 0x20);
        assert_eq!(read(&mut c), 0x47);
        assert_eq!(status(&mut c) & STATUS_OBF, 0);
        command(&mut c, 0xAB);
        assert_eq!(read(&mut c), 0x00);
        command(&mut c, 0xA9);
        assert_eq!(read(&mut c), 0x00);
    }

    #[test]
    fn keyboard_bytes_are_translated_with_break_prefix() {
        let mut c = ctl();
        c.key_event(&[0x1C]);
        assert_eq!(c.irq_lines(), IrqLines::single(KEYBOARD_IRQ));
        assert_eq!(read(&mut c), 0x1E);
        c.key_event(&[0xE0, 0xF0, 0x75]);
        assert_eq!(read(&mut c), 0xE0);
        assert_eq!(read(&mut c), 0xC8);
        assert_eq!(c.irq_lines(), IrqLines::NONE);
        // Translation off: raw set 2.
        command(&mut c, 0x60);
        data(&mut c, 0x05);
        c.key_event(&[0xF0, 0x1C]);
        assert_eq!(read(&mut c), 0xF0);
        assert_eq!(read(&mut c), 0x1C);
    }

    /// Idle once the guest has read every byte of the key: the monitor's typing waits
    /// for that.
    #[test]
    fn keyboard_is_idle_once_every_key_byte_was_read() {
        let mut c = ctl();
        assert!(c.keyboard_idle());
        c.key_event(&[0xE0, 0xF0, 0x75]);
        assert!(!c.keyboard_idle());
        assert_eq!(read(&mut c), 0xE0);
        assert!(!c.keyboard_idle(), "the break code is still queued");
        assert_eq!(read(&mut c), 0xC8);
        assert!(c.keyboard_idle());
        // Mouse data in the output buffer does not hold the keyboard up.
        c.mouse_move(1, 0, 0, 0);
        assert!(c.keyboard_idle());
    }

    #[test]
    fn next_byte_waits_so_the_irq_line_drops() {
        let mut c = ctl();
        c.key_event(&[0x1C, 0xF0, 0x1C]);
        assert_eq!(c.io_read(0x60, 1), 0x1E);
        assert_eq!(c.irq_lines(), IrqLines::NONE, "line low between bytes");
        assert_eq!(c.next_deadline_ns(), Some(OUTPUT_REFILL_NS));
        c.advance(OUTPUT_REFILL_NS - 1);
        assert_eq!(status(&mut c) & STATUS_OBF, 0);
        c.advance(OUTPUT_REFILL_NS);
        assert_eq!(c.irq_lines(), IrqLines::single(KEYBOARD_IRQ));
        assert_eq!(c.io_read(0x60, 1), 0x9E);
        assert_eq!(
            c.io_read(0x60, 1),
            0x9E,
            "empty buffer reads the last byte again"
        );
    }

    #[test]
    fn keyboard_commands_through_port_60() {
        let mut c = ctl();
        data(&mut c, 0xFF);
        assert_eq!(read(&mut c), 0xFA);
        assert_eq!(read(&mut c), 0xAA);
        data(&mut c, 0xF2);
        assert_eq!(read(&mut c), 0xFA);
        assert_eq!(read(&mut c), 0xAB);
        assert_eq!(
            read(&mut c),
            0x41,
            "translated ID byte, as Linux's atkbd expects"
        );
        data(&mut c, 0xED);
        assert_eq!(read(&mut c), 0xFA);
        data(&mut c, 0x04);
        assert_eq!(read(&mut c), 0xFA);
        assert_eq!(c.keyboard_leds(), 4);
    }

    #[test]
    fn mouse_through_d4_with_irq12() {
        let mut c = ctl();
        command(&mut c, 0xA8);
        command(&mut c, 0x60);
        data(&mut c, 0x47); // both IRQs, translate, SYS
        for byte in [0xF3, 200, 0xF3, 100, 0xF3, 80, 0xF2] {
            command(&mut c, 0xD4);
            data(&mut c, byte);
        }
        let replies: Vec<u8> = (0..8).map(|_| read(&mut c)).collect();
        assert_eq!(
            replies,
            vec![0xFA, 0xFA, 0xFA, 0xFA, 0xFA, 0xFA, 0xFA, 0x03]
        );
        command(&mut c, 0xD4);
        data(&mut c, 0xF4);
        assert_eq!(c.irq_lines(), IrqLines::single(MOUSE_IRQ));
        assert_eq!(status(&mut c) & STATUS_AUX_OBF, STATUS_AUX_OBF);
        assert_eq!(read(&mut c), 0xFA);
        c.mouse_move(1, 0, -1, 0);
        assert_eq!(
            [read(&mut c), read(&mut c), read(&mut c), read(&mut c)],
            [0x08, 1, 0, 1]
        );
    }

    #[test]
    fn disabled_ports_hold_their_data() {
        let mut c = ctl();
        command(&mut c, 0xAD);
        c.key_event(&[0x1C]);
        assert_eq!(status(&mut c) & STATUS_OBF, 0);
        command(&mut c, 0xAE);
        assert_eq!(read(&mut c), 0x1E);
        // Mouse disabled at power-on: its reply waits for A8.
        command(&mut c, 0xD4);
        data(&mut c, 0xF2);
        assert_eq!(status(&mut c) & STATUS_OBF, 0);
        command(&mut c, 0xA8);
        assert_eq!(read(&mut c), 0xFA);
    }

    #[test]
    fn a20_and_reset_through_output_port() {
        let mut c = ctl();
        assert!(c.a20_enabled(), "A20 on after reset, as in QEMU");
        command(&mut c, 0xD0);
        assert_eq!(read(&mut c), 0xCF);
        command(&mut c, 0xD1);
        data(&mut c, 0xDD);
        assert!(!c.a20_enabled());
        command(&mut c, 0xD1);
        data(&mut c, 0xDF);
        assert!(c.a20_enabled());
        command(&mut c, 0xD0);
        assert_eq!(read(&mut c) & 0x03, 0x03);
        command(&mut c, 0xDD);
        assert!(!c.a20_enabled());
        command(&mut c, 0xDF);
        assert!(c.a20_enabled());
        assert!(!c.take_reset_request());
        command(&mut c, 0xFE);
        assert!(c.take_reset_request());
        assert!(!c.take_reset_request());
        command(&mut c, 0xFF); // pulse nothing
        assert!(!c.take_reset_request());
        command(&mut c, 0xD1);
        data(&mut c, 0x02);
        assert!(c.take_reset_request());
    }

    #[test]
    fn d2_d3_write_output_buffer() {
        let mut c = ctl();
        command(&mut c, 0x60);
        data(&mut c, 0x03);
        command(&mut c, 0xD3);
        data(&mut c, 0x77);
        assert_eq!(c.irq_lines(), IrqLines::single(MOUSE_IRQ));
        assert_eq!(read(&mut c), 0x77);
        command(&mut c, 0xD2);
        data(&mut c, 0x99);
        assert_eq!(c.irq_lines(), IrqLines::single(KEYBOARD_IRQ));
        assert_eq!(read(&mut c), 0x99);
        command(&mut c, 0xC0);
        assert_eq!(read(&mut c), 0x80);
    }

    #[test]
    fn irq_enable_bits_gate_lines() {
        let mut c = ctl();
        command(&mut c, 0x60);
        data(&mut c, 0x40);
        c.key_event(&[0x1C]);
        assert_eq!(status(&mut c) & STATUS_OBF, STATUS_OBF);
        assert_eq!(c.irq_lines(), IrqLines::NONE);
    }

    /// Linux's i8042 probe: flush, CTR read twice, self-test, AUX loopback with the AUX
    /// status bit, AUX disable/enable visible in the CTR, and the AUX IRQ test.
    #[test]
    fn linux_i8042_probe_sequence() {
        let mut c = ctl();
        while status(&mut c) & STATUS_OBF != 0 {
            read(&mut c);
        }
        command(&mut c, 0x20);
        let ctr1 = read(&mut c);
        command(&mut c, 0x20);
        assert_eq!(read(&mut c), ctr1, "stable CTR");
        command(&mut c, 0xAA);
        assert_eq!(read(&mut c), 0x55);
        // AUX loopback: the byte comes back flagged as AUX data.
        command(&mut c, 0xD3);
        data(&mut c, 0x5A);
        assert_eq!(
            status(&mut c) & (STATUS_OBF | STATUS_AUX_OBF),
            STATUS_OBF | STATUS_AUX_OBF
        );
        assert_eq!(read(&mut c), 0x5A);
        command(&mut c, 0xA7);
        command(&mut c, 0x20);
        assert_ne!(read(&mut c) & CMD_AUX_DISABLED, 0);
        command(&mut c, 0xA8);
        command(&mut c, 0x20);
        let ctr = read(&mut c);
        assert_eq!(ctr & CMD_AUX_DISABLED, 0);
        // AUX IRQ test: enable IRQ12 in the CTR, loop a byte back, expect IRQ12.
        command(&mut c, 0x60);
        data(&mut c, ctr | CMD_AUX_IRQ);
        command(&mut c, 0xD3);
        data(&mut c, 0xA5);
        assert_eq!(c.irq_lines(), IrqLines::single(MOUSE_IRQ));
        assert_eq!(read(&mut c), 0xA5);
        assert!(c.irq_lines().is_empty());
    }

    #[test]
    fn garbage_is_harmless() {
        let mut c = ctl();
        for v in 0..=255u32 {
            c.io_write(0x64, 1, v);
            c.io_write(0x60, 1, v ^ 0x5A);
            c.io_read(0x60, 4);
            c.io_read(0x64, 2);
            c.advance(u64::from(v) * 100_000);
        }
        let _ = c.next_deadline_ns();
    }
}
