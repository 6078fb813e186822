//! Host keys (winit physical key codes) → PS/2 scancode set 2, the set the keyboard
//! sends; the i8042 translates to set 1 when the guest wants that.
//!
//! Set 2 in short: a key's make code is one byte, or `E0` + byte for the keys added with
//! the enhanced 101-key keyboard (right Ctrl/Alt, the cursor block, keypad Enter and /,
//! Windows keys, media keys). The break code puts `F0` before the last byte. Two keys
//! are special: PrintScreen sends a fake left Shift (`E0 12`) with its code `E0 7C`
//! (Alt+PrintScreen is SysRq, `84`), and Pause sends `E1 14 77 E1 F0 14 F0 77` on press
//! and nothing on release (Ctrl+Pause is Break, `E0 7E`).

use winit::keyboard::KeyCode;

/// How a key is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// One-byte code.
    Plain(u8),
    /// `E0`-prefixed code.
    Extended(u8),
    PrintScreen,
    Pause,
}

/// Every key we send, with its set-2 code.
pub const KEYMAP: &[(KeyCode, Key)] = {
    use Key::{Extended as E, Plain as P};
    use KeyCode::*;
    &[
        (Escape, P(0x76)),
        (F1, P(0x05)),
        (F2, P(0x06)),
        (F3, P(0x04)),
        (F4, P(0x0C)),
        (F5, P(0x03)),
        (F6, P(0x0B)),
        (F7, P(0x83)),
        (F8, P(0x0A)),
        (F9, P(0x01)),
        (F10, P(0x09)),
        (F11, P(0x78)),
        (F12, P(0x07)),
        (PrintScreen, Key::PrintScreen),
        (ScrollLock, P(0x7E)),
        (Pause, Key::Pause),
        // Typewriter block, row by row.
        (Backquote, P(0x0E)),
        (Digit1, P(0x16)),
        (Digit2, P(0x1E)),
        (Digit3, P(0x26)),
        (Digit4, P(0x25)),
        (Digit5, P(0x2E)),
        (Digit6, P(0x36)),
        (Digit7, P(0x3D)),
        (Digit8, P(0x3E)),
        (Digit9, P(0x46)),
        (Digit0, P(0x45)),
        (Minus, P(0x4E)),
        (Equal, P(0x55)),
        (IntlYen, P(0x6A)),
        (Backspace, P(0x66)),
        (Tab, P(0x0D)),
        (KeyQ, P(0x15)),
        (KeyW, P(0x1D)),
        (KeyE, P(0x24)),
        (KeyR, P(0x2D)),
        (KeyT, P(0x2C)),
        (KeyY, P(0x35)),
        (KeyU, P(0x3C)),
        (KeyI, P(0x43)),
        (KeyO, P(0x44)),
        (KeyP, P(0x4D)),
        (BracketLeft, P(0x54)),
        (BracketRight, P(0x5B)),
        (Backslash, P(0x5D)),
        (CapsLock, P(0x58)),
        (KeyA, P(0x1C)),
        (KeyS, P(0x1B)),
        (KeyD, P(0x23)),
        (KeyF, P(0x2B)),
        (KeyG, P(0x34)),
        (KeyH, P(0x33)),
        (KeyJ, P(0x3B)),
        (KeyK, P(0x42)),
        (KeyL, P(0x4B)),
        (Semicolon, P(0x4C)),
        (Quote, P(0x52)),
        (Enter, P(0x5A)),
        (ShiftLeft, P(0x12)),
        (IntlBackslash, P(0x61)),
        (KeyZ, P(0x1A)),
        (KeyX, P(0x22)),
        (KeyC, P(0x21)),
        (KeyV, P(0x2A)),
        (KeyB, P(0x32)),
        (KeyN, P(0x31)),
        (KeyM, P(0x3A)),
        (Comma, P(0x41)),
        (Period, P(0x49)),
        (Slash, P(0x4A)),
        (IntlRo, P(0x51)),
        (ShiftRight, P(0x59)),
        (ControlLeft, P(0x14)),
        (SuperLeft, E(0x1F)),
        (AltLeft, P(0x11)),
        (NonConvert, P(0x67)),
        (Space, P(0x29)),
        (Convert, P(0x64)),
        (KanaMode, P(0x13)),
        (AltRight, E(0x11)),
        (SuperRight, E(0x27)),
        (ContextMenu, E(0x2F)),
        (ControlRight, E(0x14)),
        // Editing and cursor blocks.
        (Insert, E(0x70)),
        (Home, E(0x6C)),
        (PageUp, E(0x7D)),
        (Delete, E(0x71)),
        (End, E(0x69)),
        (PageDown, E(0x7A)),
        (ArrowUp, E(0x75)),
        (ArrowLeft, E(0x6B)),
        (ArrowDown, E(0x72)),
        (ArrowRight, E(0x74)),
        // Keypad.
        (NumLock, P(0x77)),
        (NumpadDivide, E(0x4A)),
        (NumpadMultiply, P(0x7C)),
        (NumpadSubtract, P(0x7B)),
        (NumpadAdd, P(0x79)),
        (NumpadEnter, E(0x5A)),
        (NumpadDecimal, P(0x71)),
        (NumpadComma, P(0x6D)),
        (NumpadEqual, P(0x0F)),
        (Numpad0, P(0x70)),
        (Numpad1, P(0x69)),
        (Numpad2, P(0x72)),
        (Numpad3, P(0x7A)),
        (Numpad4, P(0x6B)),
        (Numpad5, P(0x73)),
        (Numpad6, P(0x74)),
        (Numpad7, P(0x6C)),
        (Numpad8, P(0x75)),
        (Numpad9, P(0x7D)),
        // Media, browser and power keys (Windows-logo keyboards).
        (AudioVolumeMute, E(0x23)),
        (AudioVolumeDown, E(0x21)),
        (AudioVolumeUp, E(0x32)),
        (MediaPlayPause, E(0x34)),
        (MediaStop, E(0x3B)),
        (MediaTrackPrevious, E(0x15)),
        (MediaTrackNext, E(0x4D)),
        (MediaSelect, E(0x50)),
        (LaunchMail, E(0x48)),
        (LaunchApp1, E(0x40)),
        (LaunchApp2, E(0x2B)),
        (BrowserSearch, E(0x10)),
        (BrowserHome, E(0x3A)),
        (BrowserBack, E(0x38)),
        (BrowserForward, E(0x30)),
        (BrowserStop, E(0x28)),
        (BrowserRefresh, E(0x20)),
        (BrowserFavorites, E(0x18)),
        (Power, E(0x37)),
        (Sleep, E(0x3F)),
        (WakeUp, E(0x5E)),
    ]
};

/// The set-2 code of a host key, if it has one.
pub fn lookup(code: KeyCode) -> Option<Key> {
    KEYMAP.iter().find(|(c, _)| *c == code).map(|&(_, k)| k)
}

/// QEMU's key names (its monitor's `sendkey`), for our monitor's `sendkey`.
const QEMU_NAMES: &[(&str, KeyCode)] = {
    use KeyCode::*;
    &[
        ("shift", ShiftLeft),
        ("shift_r", ShiftRight),
        ("alt", AltLeft),
        ("alt_r", AltRight),
        ("altgr", AltRight),
        ("ctrl", ControlLeft),
        ("ctrl_r", ControlRight),
        ("menu", ContextMenu),
        ("meta_l", SuperLeft),
        ("meta_r", SuperRight),
        ("esc", Escape),
        ("1", Digit1),
        ("2", Digit2),
        ("3", Digit3),
        ("4", Digit4),
        ("5", Digit5),
        ("6", Digit6),
        ("7", Digit7),
        ("8", Digit8),
        ("9", Digit9),
        ("0", Digit0),
        ("minus", Minus),
        ("equal", Equal),
        ("backspace", Backspace),
        ("tab", Tab),
        ("q", KeyQ),
        ("w", KeyW),
        ("e", KeyE),
        ("r", KeyR),
        ("t", KeyT),
        ("y", KeyY),
        ("u", KeyU),
        ("i", KeyI),
        ("o", KeyO),
        ("p", KeyP),
        ("bracket_left", BracketLeft),
        ("bracket_right", BracketRight),
        ("ret", Enter),
        ("a", KeyA),
        ("s", KeyS),
        ("d", KeyD),
        ("f", KeyF),
        ("g", KeyG),
        ("h", KeyH),
        ("j", KeyJ),
        ("k", KeyK),
        ("l", KeyL),
        ("semicolon", Semicolon),
        ("apostrophe", Quote),
        ("grave_accent", Backquote),
        ("backslash", Backslash),
        ("less", IntlBackslash),
        ("z", KeyZ),
        ("x", KeyX),
        ("c", KeyC),
        ("v", KeyV),
        ("b", KeyB),
        ("n", KeyN),
        ("m", KeyM),
        ("comma", Comma),
        ("dot", Period),
        ("slash", Slash),
        ("spc", Space),
        ("caps_lock", CapsLock),
        ("f1", F1),
        ("f2", F2),
        ("f3", F3),
        ("f4", F4),
        ("f5", F5),
        ("f6", F6),
        ("f7", F7),
        ("f8", F8),
        ("f9", F9),
        ("f10", F10),
        ("f11", F11),
        ("f12", F12),
        ("num_lock", NumLock),
        ("scroll_lock", ScrollLock),
        ("kp_divide", NumpadDivide),
        ("kp_multiply", NumpadMultiply),
        ("asterisk", NumpadMultiply),
        ("kp_subtract", NumpadSubtract),
        ("kp_add", NumpadAdd),
        ("kp_enter", NumpadEnter),
        ("kp_decimal", NumpadDecimal),
        ("kp_0", Numpad0),
        ("kp_1", Numpad1),
        ("kp_2", Numpad2),
        ("kp_3", Numpad3),
        ("kp_4", Numpad4),
        ("kp_5", Numpad5),
        ("kp_6", Numpad6),
        ("kp_7", Numpad7),
        ("kp_8", Numpad8),
        ("kp_9", Numpad9),
        ("print", PrintScreen),
        ("sysrq", PrintScreen),
        ("pause", Pause),
        ("home", Home),
        ("end", End),
        ("pgup", PageUp),
        ("pgdn", PageDown),
        ("up", ArrowUp),
        ("down", ArrowDown),
        ("left", ArrowLeft),
        ("right", ArrowRight),
        ("insert", Insert),
        ("delete", Delete),
    ]
};

/// The key QEMU calls `name` (`ctrl`, `ret`, `f1`, `kp_5`, ...).
pub fn qemu_key(name: &str) -> Option<KeyCode> {
    QEMU_NAMES.iter().find(|(n, _)| *n == name).map(|&(_, c)| c)
}

/// The key that types `c` on a US keyboard, and whether Shift is held for it.
pub fn typed_char(c: char) -> Option<(KeyCode, bool)> {
    use KeyCode::*;
    const SHIFTED: &[(char, char)] = &[
        ('!', '1'),
        ('@', '2'),
        ('#', '3'),
        ('$', '4'),
        ('%', '5'),
        ('^', '6'),
        ('&', '7'),
        ('*', '8'),
        ('(', '9'),
        (')', '0'),
        ('_', '-'),
        ('+', '='),
        ('{', '['),
        ('}', ']'),
        ('|', '\\'),
        (':', ';'),
        ('"', '\''),
        ('~', '`'),
        ('<', ','),
        ('>', '.'),
        ('?', '/'),
    ];
    if let Some(&(_, base)) = SHIFTED.iter().find(|(s, _)| *s == c) {
        return typed_char(base).map(|(k, _)| (k, true));
    }
    if c.is_ascii_uppercase() {
        return typed_char(c.to_ascii_lowercase()).map(|(k, _)| (k, true));
    }
    let code = match c {
        '\n' => Enter,
        '\t' => Tab,
        ' ' => Space,
        '-' => Minus,
        '=' => Equal,
        '[' => BracketLeft,
        ']' => BracketRight,
        '\\' => Backslash,
        ';' => Semicolon,
        '\'' => Quote,
        '`' => Backquote,
        ',' => Comma,
        '.' => Period,
        '/' => Slash,
        'a'..='z' | '0'..='9' => return qemu_key(c.encode_utf8(&mut [0; 4])).map(|k| (k, false)),
        _ => return None,
    };
    Some((code, false))
}

/// Modifier state that changes what PrintScreen and Pause send.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mods {
    pub ctrl: bool,
    pub alt: bool,
}

/// The byte sequences for pressing `key`, each one keyboard event (PrintScreen is two:
/// the fake shift and the key, so typematic repeat and its break pair up as on hardware).
pub fn press(key: Key, mods: Mods) -> Vec<Vec<u8>> {
    match key {
        Key::Plain(b) => vec![vec![b]],
        Key::Extended(b) => vec![vec![0xE0, b]],
        Key::PrintScreen if mods.alt => vec![vec![0x84]],
        Key::PrintScreen => vec![vec![0xE0, 0x12], vec![0xE0, 0x7C]],
        // Break: press and release at once (Pause has no release code at all).
        Key::Pause if mods.ctrl => vec![vec![0xE0, 0x7E], vec![0xE0, 0xF0, 0x7E]],
        Key::Pause => vec![vec![0xE1, 0x14, 0x77, 0xE1, 0xF0, 0x14, 0xF0, 0x77]],
    }
}

/// The byte sequences for releasing `key`.
pub fn release(key: Key, mods: Mods) -> Vec<Vec<u8>> {
    match key {
        Key::Plain(b) => vec![vec![0xF0, b]],
        Key::Extended(b) => vec![vec![0xE0, 0xF0, b]],
        Key::PrintScreen if mods.alt => vec![vec![0xF0, 0x84]],
        Key::PrintScreen => vec![vec![0xE0, 0xF0, 0x7C], vec![0xE0, 0xF0, 0x12]],
        Key::Pause => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use KeyCode::*;

    /// Make and break codes of every key, written out from the set-2 scancode tables
    /// (IBM PS/2 keyboard reference; Microsoft's keyboard scan code specification for the
    /// Windows, media and international keys), independently of `KEYMAP`.
    const EXPECTED: &[(KeyCode, &[u8], &[u8])] = &[
        (Escape, &[0x76], &[0xF0, 0x76]),
        (F1, &[0x05], &[0xF0, 0x05]),
        (F2, &[0x06], &[0xF0, 0x06]),
        (F3, &[0x04], &[0xF0, 0x04]),
        (F4, &[0x0C], &[0xF0, 0x0C]),
        (F5, &[0x03], &[0xF0, 0x03]),
        (F6, &[0x0B], &[0xF0, 0x0B]),
        (F7, &[0x83], &[0xF0, 0x83]),
        (F8, &[0x0A], &[0xF0, 0x0A]),
        (F9, &[0x01], &[0xF0, 0x01]),
        (F10, &[0x09], &[0xF0, 0x09]),
        (F11, &[0x78], &[0xF0, 0x78]),
        (F12, &[0x07], &[0xF0, 0x07]),
        (
            PrintScreen,
            &[0xE0, 0x12, 0xE0, 0x7C],
            &[0xE0, 0xF0, 0x7C, 0xE0, 0xF0, 0x12],
        ),
        (ScrollLock, &[0x7E], &[0xF0, 0x7E]),
        (
            Pause,
            &[0xE1, 0x14, 0x77, 0xE1, 0xF0, 0x14, 0xF0, 0x77],
            &[],
        ),
        (Backquote, &[0x0E], &[0xF0, 0x0E]),
        (Digit1, &[0x16], &[0xF0, 0x16]),
        (Digit2, &[0x1E], &[0xF0, 0x1E]),
        (Digit3, &[0x26], &[0xF0, 0x26]),
        (Digit4, &[0x25], &[0xF0, 0x25]),
        (Digit5, &[0x2E], &[0xF0, 0x2E]),
        (Digit6, &[0x36], &[0xF0, 0x36]),
        (Digit7, &[0x3D], &[0xF0, 0x3D]),
        (Digit8, &[0x3E], &[0xF0, 0x3E]),
        (Digit9, &[0x46], &[0xF0, 0x46]),
        (Digit0, &[0x45], &[0xF0, 0x45]),
        (Minus, &[0x4E], &[0xF0, 0x4E]),
        (Equal, &[0x55], &[0xF0, 0x55]),
        (IntlYen, &[0x6A], &[0xF0, 0x6A]),
        (Backspace, &[0x66], &[0xF0, 0x66]),
        (Tab, &[0x0D], &[0xF0, 0x0D]),
        (KeyQ, &[0x15], &[0xF0, 0x15]),
        (KeyW, &[0x1D], &[0xF0, 0x1D]),
        (KeyE, &[0x24], &[0xF0, 0x24]),
        (KeyR, &[0x2D], &[0xF0, 0x2D]),
        (KeyT, &[0x2C], &[0xF0, 0x2C]),
        (KeyY, &[0x35], &[0xF0, 0x35]),
        (KeyU, &[0x3C], &[0xF0, 0x3C]),
        (KeyI, &[0x43], &[0xF0, 0x43]),
        (KeyO, &[0x44], &[0xF0, 0x44]),
        (KeyP, &[0x4D], &[0xF0, 0x4D]),
        (BracketLeft, &[0x54], &[0xF0, 0x54]),
        (BracketRight, &[0x5B], &[0xF0, 0x5B]),
        (Backslash, &[0x5D], &[0xF0, 0x5D]),
        (CapsLock, &[0x58], &[0xF0, 0x58]),
        (KeyA, &[0x1C], &[0xF0, 0x1C]),
        (KeyS, &[0x1B], &[0xF0, 0x1B]),
        (KeyD, &[0x23], &[0xF0, 0x23]),
        (KeyF, &[0x2B], &[0xF0, 0x2B]),
        (KeyG, &[0x34], &[0xF0, 0x34]),
        (KeyH, &[0x33], &[0xF0, 0x33]),
        (KeyJ, &[0x3B], &[0xF0, 0x3B]),
        (KeyK, &[0x42], &[0xF0, 0x42]),
        (KeyL, &[0x4B], &[0xF0, 0x4B]),
        (Semicolon, &[0x4C], &[0xF0, 0x4C]),
        (Quote, &[0x52], &[0xF0, 0x52]),
        (Enter, &[0x5A], &[0xF0, 0x5A]),
        (ShiftLeft, &[0x12], &[0xF0, 0x12]),
        (IntlBackslash, &[0x61], &[0xF0, 0x61]),
        (KeyZ, &[0x1A], &[0xF0, 0x1A]),
        (KeyX, &[0x22], &[0xF0, 0x22]),
        (KeyC, &[0x21], &[0xF0, 0x21]),
        (KeyV, &[0x2A], &[0xF0, 0x2A]),
        (KeyB, &[0x32], &[0xF0, 0x32]),
        (KeyN, &[0x31], &[0xF0, 0x31]),
        (KeyM, &[0x3A], &[0xF0, 0x3A]),
        (Comma, &[0x41], &[0xF0, 0x41]),
        (Period, &[0x49], &[0xF0, 0x49]),
        (Slash, &[0x4A], &[0xF0, 0x4A]),
        (IntlRo, &[0x51], &[0xF0, 0x51]),
        (ShiftRight, &[0x59], &[0xF0, 0x59]),
        (ControlLeft, &[0x14], &[0xF0, 0x14]),
        (SuperLeft, &[0xE0, 0x1F], &[0xE0, 0xF0, 0x1F]),
        (AltLeft, &[0x11], &[0xF0, 0x11]),
        (NonConvert, &[0x67], &[0xF0, 0x67]),
        (Space, &[0x29], &[0xF0, 0x29]),
        (Convert, &[0x64], &[0xF0, 0x64]),
        (KanaMode, &[0x13], &[0xF0, 0x13]),
        (AltRight, &[0xE0, 0x11], &[0xE0, 0xF0, 0x11]),
        (SuperRight, &[0xE0, 0x27], &[0xE0, 0xF0, 0x27]),
        (ContextMenu, &[0xE0, 0x2F], &[0xE0, 0xF0, 0x2F]),
        (ControlRight, &[0xE0, 0x14], &[0xE0, 0xF0, 0x14]),
        (Insert, &[0xE0, 0x70], &[0xE0, 0xF0, 0x70]),
        (Home, &[0xE0, 0x6C], &[0xE0, 0xF0, 0x6C]),
        (PageUp, &[0xE0, 0x7D], &[0xE0, 0xF0, 0x7D]),
        (Delete, &[0xE0, 0x71], &[0xE0, 0xF0, 0x71]),
        (End, &[0xE0, 0x69], &[0xE0, 0xF0, 0x69]),
        (PageDown, &[0xE0, 0x7A], &[0xE0, 0xF0, 0x7A]),
        (ArrowUp, &[0xE0, 0x75], &[0xE0, 0xF0, 0x75]),
        (ArrowLeft, &[0xE0, 0x6B], &[0xE0, 0xF0, 0x6B]),
        (ArrowDown, &[0xE0, 0x72], &[0xE0, 0xF0, 0x72]),
        (ArrowRight, &[0xE0, 0x74], &[0xE0, 0xF0, 0x74]),
        (NumLock, &[0x77], &[0xF0, 0x77]),
        (NumpadDivide, &[0xE0, 0x4A], &[0xE0, 0xF0, 0x4A]),
        (NumpadMultiply, &[0x7C], &[0xF0, 0x7C]),
        (NumpadSubtract, &[0x7B], &[0xF0, 0x7B]),
        (NumpadAdd, &[0x79], &[0xF0, 0x79]),
        (NumpadEnter, &[0xE0, 0x5A], &[0xE0, 0xF0, 0x5A]),
        (NumpadDecimal, &[0x71], &[0xF0, 0x71]),
        (NumpadComma, &[0x6D], &[0xF0, 0x6D]),
        (NumpadEqual, &[0x0F], &[0xF0, 0x0F]),
        (Numpad0, &[0x70], &[0xF0, 0x70]),
        (Numpad1, &[0x69], &[0xF0, 0x69]),
        (Numpad2, &[0x72], &[0xF0, 0x72]),
        (Numpad3, &[0x7A], &[0xF0, 0x7A]),
        (Numpad4, &[0x6B], &[0xF0, 0x6B]),
        (Numpad5, &[0x73], &[0xF0, 0x73]),
        (Numpad6, &[0x74], &[0xF0, 0x74]),
        (Numpad7, &[0x6C], &[0xF0, 0x6C]),
        (Numpad8, &[0x75], &[0xF0, 0x75]),
        (Numpad9, &[0x7D], &[0xF0, 0x7D]),
        (AudioVolumeMute, &[0xE0, 0x23], &[0xE0, 0xF0, 0x23]),
        (AudioVolumeDown, &[0xE0, 0x21], &[0xE0, 0xF0, 0x21]),
        (AudioVolumeUp, &[0xE0, 0x32], &[0xE0, 0xF0, 0x32]),
        (MediaPlayPause, &[0xE0, 0x34], &[0xE0, 0xF0, 0x34]),
        (MediaStop, &[0xE0, 0x3B], &[0xE0, 0xF0, 0x3B]),
        (MediaTrackPrevious, &[0xE0, 0x15], &[0xE0, 0xF0, 0x15]),
        (MediaTrackNext, &[0xE0, 0x4D], &[0xE0, 0xF0, 0x4D]),
        (MediaSelect, &[0xE0, 0x50], &[0xE0, 0xF0, 0x50]),
        (LaunchMail, &[0xE0, 0x48], &[0xE0, 0xF0, 0x48]),
        (LaunchApp1, &[0xE0, 0x40], &[0xE0, 0xF0, 0x40]),
        (LaunchApp2, &[0xE0, 0x2B], &[0xE0, 0xF0, 0x2B]),
        (BrowserSearch, &[0xE0, 0x10], &[0xE0, 0xF0, 0x10]),
        (BrowserHome, &[0xE0, 0x3A], &[0xE0, 0xF0, 0x3A]),
        (BrowserBack, &[0xE0, 0x38], &[0xE0, 0xF0, 0x38]),
        (BrowserForward, &[0xE0, 0x30], &[0xE0, 0xF0, 0x30]),
        (BrowserStop, &[0xE0, 0x28], &[0xE0, 0xF0, 0x28]),
        (BrowserRefresh, &[0xE0, 0x20], &[0xE0, 0xF0, 0x20]),
        (BrowserFavorites, &[0xE0, 0x18], &[0xE0, 0xF0, 0x18]),
        (Power, &[0xE0, 0x37], &[0xE0, 0xF0, 0x37]),
        (Sleep, &[0xE0, 0x3F], &[0xE0, 0xF0, 0x3F]),
        (WakeUp, &[0xE0, 0x5E], &[0xE0, 0xF0, 0x5E]),
    ];

    fn flat(seqs: Vec<Vec<u8>>) -> Vec<u8> {
        seqs.concat()
    }

    #[test]
    fn every_key_sends_its_set2_make_and_break_codes() {
        for &(code, make, brk) in EXPECTED {
            let key = lookup(code).unwrap_or_else(|| panic!("{code:?} is not mapped"));
            assert_eq!(flat(press(key, Mods::default())), make, "make of {code:?}");
            assert_eq!(
                flat(release(key, Mods::default())),
                brk,
                "break of {code:?}"
            );
        }
        // Nothing mapped that the table above does not check.
        assert_eq!(KEYMAP.len(), EXPECTED.len());
    }

    #[test]
    fn no_key_or_code_appears_twice() {
        for (i, (code, key)) in KEYMAP.iter().enumerate() {
            for (other_code, other_key) in &KEYMAP[i + 1..] {
                assert_ne!(code, other_code, "{code:?} mapped twice");
                assert_ne!(
                    key, other_key,
                    "{code:?} and {other_code:?} send the same code"
                );
            }
        }
    }

    #[test]
    fn modifier_variants_of_printscreen_and_pause() {
        let alt = Mods {
            alt: true,
            ctrl: false,
        };
        let ctrl = Mods {
            alt: false,
            ctrl: true,
        };
        assert_eq!(flat(press(Key::PrintScreen, alt)), [0x84]);
        assert_eq!(flat(release(Key::PrintScreen, alt)), [0xF0, 0x84]);
        assert_eq!(
            flat(press(Key::Pause, ctrl)),
            [0xE0, 0x7E, 0xE0, 0xF0, 0x7E]
        );
        assert!(release(Key::Pause, ctrl).is_empty());
        // PrintScreen goes out as two keyboard events so the keyboard's typematic repeat
        // stops on its break.
        assert_eq!(press(Key::PrintScreen, Mods::default()).len(), 2);
    }

    #[test]
    fn qemu_names_and_typed_characters() {
        assert_eq!(qemu_key("ret"), Some(Enter));
        assert_eq!(qemu_key("ctrl"), Some(ControlLeft));
        assert_eq!(qemu_key("kp_5"), Some(Numpad5));
        assert_eq!(qemu_key("Ret"), None);
        // Every name maps to a key we can send.
        for (name, code) in QEMU_NAMES {
            assert!(lookup(*code).is_some(), "{name}");
        }
        assert_eq!(typed_char('a'), Some((KeyA, false)));
        assert_eq!(typed_char('A'), Some((KeyA, true)));
        assert_eq!(typed_char('7'), Some((Digit7, false)));
        assert_eq!(typed_char('&'), Some((Digit7, true)));
        assert_eq!(typed_char('"'), Some((Quote, true)));
        assert_eq!(typed_char('|'), Some((Backslash, true)));
        assert_eq!(typed_char('\n'), Some((Enter, false)));
        assert_eq!(typed_char(' '), Some((Space, false)));
        assert_eq!(typed_char('é'), None);
        // All printable ASCII can be typed.
        assert!((' '..='~').all(|c| typed_char(c).is_some()));
    }

    #[test]
    fn unmapped_keys_are_none() {
        assert_eq!(lookup(KeyCode::F24), None);
        assert_eq!(lookup(KeyCode::Fn), None);
    }
}
