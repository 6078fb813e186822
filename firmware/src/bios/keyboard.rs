//! IRQ1 scancode translation into the BDA keyboard buffer, and INT 16h.
//!
//! All keyboard state lives in the BDA like on real PCs (shift flags 0417h/0418h, the
//! E0-prefix and right Ctrl/Alt bits in 0496h), so a guest that peeks at it sees the truth.

use aero_cpu::Reg;
use tracing::{debug, info};

use super::Bios;
use super::bda;
use super::call::{Call, Flow};
use super::error::FirmwareError;
use super::mem::GuestMem;
use super::scancode;

// 0417h
const RSHIFT: u8 = 0x01;
const LSHIFT: u8 = 0x02;
const CTRL: u8 = 0x04;
const ALT: u8 = 0x08;
const SCROLL_ON: u8 = 0x10;
const NUM_ON: u8 = 0x20;
const CAPS_ON: u8 = 0x40;
const INSERT_ON: u8 = 0x80;
// 0418h
const LCTRL_DOWN: u8 = 0x01;
const LALT_DOWN: u8 = 0x02;
const SCROLL_DOWN: u8 = 0x10;
const NUM_DOWN: u8 = 0x20;
const CAPS_DOWN: u8 = 0x40;
// 0496h
const LAST_E0: u8 = 0x02;
const RCTRL_DOWN: u8 = 0x04;
const RALT_DOWN: u8 = 0x08;

/// What one scancode did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyEvent {
    None,
    Queued(u16),
    BufferFull,
    /// Ctrl+Alt+Del.
    Reboot,
}

fn set(flags: &mut u8, bit: u8, on: bool) {
    if on { *flags |= bit } else { *flags &= !bit }
}

/// Updates the BDA for one set-1 scancode.
pub fn process_scancode(mem: &mut GuestMem, code: u8) -> Result<KeyEvent, FirmwareError> {
    let mut s3 = mem.read_u8(bda::KBD_STATUS3)?;
    if code == 0xE0 {
        mem.write_u8(bda::KBD_STATUS3, s3 | LAST_E0)?;
        return Ok(KeyEvent::None);
    }
    let extended = s3 & LAST_E0 != 0;
    s3 &= !LAST_E0;
    let make = code & 0x80 == 0;
    let key = code & 0x7F;
    let mut f1 = mem.read_u8(bda::SHIFT_FLAGS)?;
    let mut f2 = mem.read_u8(bda::SHIFT_FLAGS2)?;
    let mut event = KeyEvent::None;
    match (key, extended) {
        // Fake shifts around gray keys: ignore.
        (0x2A | 0x36, true) => {}
        (0x2A, false) => set(&mut f1, LSHIFT, make),
        (0x36, false) => set(&mut f1, RSHIFT, make),
        (0x1D, e) => {
            if e {
                set(&mut s3, RCTRL_DOWN, make)
            } else {
                set(&mut f2, LCTRL_DOWN, make)
            }
            set(&mut f1, CTRL, f2 & LCTRL_DOWN != 0 || s3 & RCTRL_DOWN != 0);
        }
        (0x38, e) => {
            if e {
                set(&mut s3, RALT_DOWN, make)
            } else {
                set(&mut f2, LALT_DOWN, make)
            }
            set(&mut f1, ALT, f2 & LALT_DOWN != 0 || s3 & RALT_DOWN != 0);
        }
        (0x3A, false) => toggle(&mut f1, &mut f2, CAPS_ON, CAPS_DOWN, make),
        (0x45, false) => toggle(&mut f1, &mut f2, NUM_ON, NUM_DOWN, make),
        (0x46, false) => toggle(&mut f1, &mut f2, SCROLL_ON, SCROLL_DOWN, make),
        _ if make => {
            if key == 0x53 && f1 & CTRL != 0 && f1 & ALT != 0 {
                event = KeyEvent::Reboot;
            } else if let Some(code) = translate(key, extended, f1) {
                if key == 0x52 && (extended || f1 & (NUM_ON | LSHIFT | RSHIFT) == 0) {
                    f1 ^= INSERT_ON;
                }
                event = if enqueue(mem, code)? {
                    KeyEvent::Queued(code)
                } else {
                    KeyEvent::BufferFull
                };
            }
        }
        _ => {}
    }
    mem.write_u8(bda::SHIFT_FLAGS, f1)?;
    mem.write_u8(bda::SHIFT_FLAGS2, f2)?;
    mem.write_u8(bda::KBD_STATUS3, s3)?;
    Ok(event)
}

fn toggle(f1: &mut u8, f2: &mut u8, on_bit: u8, down_bit: u8, make: bool) {
    // Typematic repeats of a held lock key must not toggle again.
    if make && *f2 & down_bit == 0 {
        *f1 ^= on_bit;
    }
    set(f2, down_bit, make);
}

/// The key code for a make code under the current shift state.
pub fn translate(key: u8, extended: bool, f1: u8) -> Option<u16> {
    let shift = f1 & (LSHIFT | RSHIFT) != 0;
    let code = if extended {
        let [normal, ctrl, alt] = scancode::extended(key)?;
        if f1 & ALT != 0 {
            alt
        } else if f1 & CTRL != 0 {
            ctrl
        } else {
            normal
        }
    } else {
        let [normal, shifted, ctrl, alt] = *scancode::TABLE.get(key as usize)?;
        if f1 & ALT != 0 {
            alt
        } else if f1 & CTRL != 0 {
            ctrl
        } else {
            let ascii = normal as u8;
            let caps = f1 & CAPS_ON != 0 && ascii.is_ascii_lowercase();
            let num = f1 & NUM_ON != 0 && scancode::is_keypad_digit(key);
            if shift ^ caps ^ num { shifted } else { normal }
        }
    };
    (code != 0).then_some(code)
}

/// BDA buffer head/tail, validated against the buffer bounds (the guest can write them).
fn buffer_bounds(mem: &GuestMem) -> Result<(u16, u16), FirmwareError> {
    let start = mem.read_u16(bda::KBD_BUF_START)?;
    let end = mem.read_u16(bda::KBD_BUF_END)?;
    if start < end && end - start >= 4 && (end - start) % 2 == 0 {
        Ok((start, end))
    } else {
        Ok((bda::KBD_BUFFER_START_OFF, bda::KBD_BUFFER_END_OFF))
    }
}

fn advance(ptr: u16, start: u16, end: u16) -> u16 {
    if ptr + 2 >= end { start } else { ptr + 2 }
}

/// Appends a key code; false when the buffer is full.
pub fn enqueue(mem: &mut GuestMem, code: u16) -> Result<bool, FirmwareError> {
    let (start, end) = buffer_bounds(mem)?;
    let tail = mem.read_u16(bda::KBD_TAIL)?;
    if !(start..end).contains(&tail) {
        mem.write_u16(bda::KBD_HEAD, start)?;
        mem.write_u16(bda::KBD_TAIL, start)?;
        return enqueue(mem, code);
    }
    let next = advance(tail, start, end);
    if next == mem.read_u16(bda::KBD_HEAD)? {
        return Ok(false);
    }
    mem.write_u16(bda::BDA + tail as u64, code)?;
    mem.write_u16(bda::KBD_TAIL, next)?;
    Ok(true)
}

/// The next key code; removes it when `remove`.
pub fn peek_key(mem: &mut GuestMem, remove: bool) -> Result<Option<u16>, FirmwareError> {
    let (start, end) = buffer_bounds(mem)?;
    let head = mem.read_u16(bda::KBD_HEAD)?;
    let tail = mem.read_u16(bda::KBD_TAIL)?;
    if head == tail {
        return Ok(None);
    }
    if !(start..end).contains(&head) {
        mem.write_u16(bda::KBD_HEAD, tail)?;
        return Ok(None);
    }
    let code = mem.read_u16(bda::BDA + head as u64)?;
    if remove {
        mem.write_u16(bda::KBD_HEAD, advance(head, start, end))?;
    }
    Ok(Some(code))
}

/// Old-style (AH=00h/01h) callers never see the E0h ASCII of the gray keys.
fn legacy_code(code: u16) -> u16 {
    let (scan, ascii) = ((code >> 8) as u8, code as u8);
    match (scan, ascii) {
        (0xE0, 0x0D | 0x0A) => 0x1C00 | ascii as u16,
        (0xE0, _) => 0x3500 | ascii as u16,
        (s, 0xE0) if s != 0 => (s as u16) << 8,
        _ => code,
    }
}

impl Bios {
    /// IRQ1 (after INT 15h/4Fh kept the key): AL = scancode.
    pub(crate) fn keyboard_irq(&mut self, c: &mut Call) -> Result<Flow, FirmwareError> {
        let code = c.al();
        match process_scancode(&mut c.mem, code)? {
            KeyEvent::Reboot => {
                info!("Ctrl+Alt+Del: resetting through the keyboard controller");
                c.mem.write_u16(0x472, 0x1234)?;
                c.host.io_write(0x64, 1, 0xFE);
            }
            KeyEvent::BufferFull => debug!("keyboard buffer full, key dropped"),
            KeyEvent::None | KeyEvent::Queued(_) => {}
        }
        Ok(Flow::Return)
    }

    pub(crate) fn int16(&mut self, c: &mut Call) -> Result<Flow, FirmwareError> {
        let ah = c.ah();
        let extended = ah & 0x10 != 0;
        let fix = |code: u16| if extended { code } else { legacy_code(code) };
        match ah {
            0x00 | 0x10 => match peek_key(&mut c.mem, true)? {
                Some(code) => c.set_r16(Reg::Rax, fix(code)),
                None => return Ok(Flow::Retry),
            },
            0x01 | 0x11 => match peek_key(&mut c.mem, false)? {
                Some(code) => {
                    c.set_r16(Reg::Rax, fix(code));
                    c.set_zf(false)?;
                }
                None => c.set_zf(true)?,
            },
            0x02 => {
                let f1 = c.mem.read_u8(bda::SHIFT_FLAGS)?;
                c.set_al(f1);
            }
            0x12 => {
                let f1 = c.mem.read_u8(bda::SHIFT_FLAGS)?;
                let f2 = c.mem.read_u8(bda::SHIFT_FLAGS2)?;
                let s3 = c.mem.read_u8(bda::KBD_STATUS3)?;
                c.set_al(f1);
                c.set_ah((f2 & 0x73) | (s3 & (RCTRL_DOWN | RALT_DOWN)));
            }
            // Typematic rate: the emulated keyboard repeats at the host's pace.
            0x03 => {}
            0x05 => {
                let code = c.r16(Reg::Rcx);
                let ok = enqueue(&mut c.mem, code)?;
                c.set_al(if ok { 0 } else { 1 });
            }
            // Capabilities: 10h–12h supported.
            0x09 => c.set_al(0x20),
            // MF2 keyboard ID.
            0x0A => c.set_r16(Reg::Rbx, 0x41AB),
            _ => debug!(ah, "INT 16h function not supported"),
        }
        Ok(Flow::Return)
    }
}
