//! Scancode set 1 → BIOS key code (scan code << 8 | ASCII) for the PC/AT 101-key layout.
//! Each entry is (normal, shift, ctrl, alt); 0 means "no key code".

pub type KeyCodes = [u16; 4];

const fn letter(scan: u8, lower: u8) -> KeyCodes {
    let s = (scan as u16) << 8;
    [
        s | lower as u16,
        s | (lower - 0x20) as u16,
        s | (lower - 0x60) as u16,
        s,
    ]
}

const fn plain(scan: u8, normal: u8, shifted: u8, ctrl: u16, alt: u16) -> KeyCodes {
    let s = (scan as u16) << 8;
    [s | normal as u16, s | shifted as u16, ctrl, alt]
}

/// Function keys have no ASCII; each modifier selects another scan code.
const fn fkey(normal: u8, shift: u8, ctrl: u8, alt: u8) -> KeyCodes {
    [
        (normal as u16) << 8,
        (shift as u16) << 8,
        (ctrl as u16) << 8,
        (alt as u16) << 8,
    ]
}

/// Keypad keys: (scan, navigation ASCII 0, digit, ctrl code).
const fn keypad(scan: u8, digit: u8, ctrl: u8) -> KeyCodes {
    let s = (scan as u16) << 8;
    [s, s | digit as u16, (ctrl as u16) << 8, 0]
}

pub const NONE: KeyCodes = [0; 4];

/// Indexed by make code 0x00..=0x58. Modifier and lock keys are handled separately.
pub static TABLE: [KeyCodes; 0x59] = [
    NONE,                                    // 00
    [0x011B, 0x011B, 0x011B, 0x0100],        // 01 Esc
    plain(0x02, b'1', b'!', 0, 0x7800),      // 02
    plain(0x03, b'2', b'@', 0x0300, 0x7900), // 03
    plain(0x04, b'3', b'#', 0, 0x7A00),      // 04
    plain(0x05, b'4', b'$', 0, 0x7B00),      // 05
    plain(0x06, b'5', b'%', 0, 0x7C00),      // 06
    plain(0x07, b'6', b'^', 0x071E, 0x7D00), // 07
    plain(0x08, b'7', b'&', 0, 0x7E00),      // 08
    plain(0x09, b'8', b'*', 0, 0x7F00),      // 09
    plain(0x0A, b'9', b'(', 0, 0x8000),      // 0A
    plain(0x0B, b'0', b')', 0, 0x8100),      // 0B
    plain(0x0C, b'-', b'_', 0x0C1F, 0x8200), // 0C
    plain(0x0D, b'=', b'+', 0, 0x8300),      // 0D
    [0x0E08, 0x0E08, 0x0E7F, 0x0E00],        // 0E Backspace
    [0x0F09, 0x0F00, 0x9400, 0xA500],        // 0F Tab
    letter(0x10, b'q'),
    letter(0x11, b'w'),
    letter(0x12, b'e'),
    letter(0x13, b'r'),
    letter(0x14, b't'),
    letter(0x15, b'y'),
    letter(0x16, b'u'),
    letter(0x17, b'i'),
    letter(0x18, b'o'),
    letter(0x19, b'p'),
    plain(0x1A, b'[', b'{', 0x1A1B, 0x1A00), // 1A
    plain(0x1B, b']', b'}', 0x1B1D, 0x1B00), // 1B
    [0x1C0D, 0x1C0D, 0x1C0A, 0x1C00],        // 1C Enter
    NONE,                                    // 1D Ctrl
    letter(0x1E, b'a'),
    letter(0x1F, b's'),
    letter(0x20, b'd'),
    letter(0x21, b'f'),
    letter(0x22, b'g'),
    letter(0x23, b'h'),
    letter(0x24, b'j'),
    letter(0x25, b'k'),
    letter(0x26, b'l'),
    plain(0x27, b';', b':', 0, 0x2700),       // 27
    plain(0x28, b'\'', b'"', 0, 0x2800),      // 28
    plain(0x29, b'`', b'~', 0, 0x2900),       // 29
    NONE,                                     // 2A LShift
    plain(0x2B, b'\\', b'|', 0x2B1C, 0x2B00), // 2B
    letter(0x2C, b'z'),
    letter(0x2D, b'x'),
    letter(0x2E, b'c'),
    letter(0x2F, b'v'),
    letter(0x30, b'b'),
    letter(0x31, b'n'),
    letter(0x32, b'm'),
    plain(0x33, b',', b'<', 0, 0x3300), // 33
    plain(0x34, b'.', b'>', 0, 0x3400), // 34
    plain(0x35, b'/', b'?', 0, 0x3500), // 35
    NONE,                               // 36 RShift
    [0x372A, 0x372A, 0x9600, 0x3700],   // 37 keypad *
    NONE,                               // 38 Alt
    [0x3920, 0x3920, 0x3920, 0x3920],   // 39 Space
    NONE,                               // 3A CapsLock
    fkey(0x3B, 0x54, 0x5E, 0x68),       // F1
    fkey(0x3C, 0x55, 0x5F, 0x69),
    fkey(0x3D, 0x56, 0x60, 0x6A),
    fkey(0x3E, 0x57, 0x61, 0x6B),
    fkey(0x3F, 0x58, 0x62, 0x6C),
    fkey(0x40, 0x59, 0x63, 0x6D),
    fkey(0x41, 0x5A, 0x64, 0x6E),
    fkey(0x42, 0x5B, 0x65, 0x6F),
    fkey(0x43, 0x5C, 0x66, 0x70),
    fkey(0x44, 0x5D, 0x67, 0x71),     // F10
    NONE,                             // 45 NumLock
    NONE,                             // 46 ScrollLock
    keypad(0x47, b'7', 0x77),         // Home
    keypad(0x48, b'8', 0x8D),         // Up
    keypad(0x49, b'9', 0x84),         // PgUp
    [0x4A2D, 0x4A2D, 0x8E00, 0x4A00], // keypad -
    keypad(0x4B, b'4', 0x73),         // Left
    keypad(0x4C, b'5', 0x8F),         // keypad 5
    keypad(0x4D, b'6', 0x74),         // Right
    [0x4E2B, 0x4E2B, 0x9000, 0x4E00], // keypad +
    keypad(0x4F, b'1', 0x75),         // End
    keypad(0x50, b'2', 0x91),         // Down
    keypad(0x51, b'3', 0x76),         // PgDn
    keypad(0x52, b'0', 0x92),         // Ins
    keypad(0x53, b'.', 0x93),         // Del
    NONE,                             // 54 SysRq
    NONE,                             // 55
    NONE,                             // 56 (102nd key, not on US layout)
    fkey(0x85, 0x87, 0x89, 0x8B),     // F11
    fkey(0x86, 0x88, 0x8A, 0x8C),     // F12
];

/// Keys whose second code comes from NumLock (keypad digits and the decimal point).
pub fn is_keypad_digit(scan: u8) -> bool {
    matches!(scan, 0x47..=0x49 | 0x4B..=0x4D | 0x4F..=0x53)
}

/// E0-prefixed keys: (normal, ctrl, alt); the gray navigation keys carry E0h as ASCII.
pub fn extended(scan: u8) -> Option<[u16; 3]> {
    let s = (scan as u16) << 8;
    Some(match scan {
        0x1C => [0xE00D, 0xE00A, 0xA600],
        0x35 => [0xE02F, 0x9500, 0xA400],
        0x47..=0x53 if is_keypad_digit(scan) => {
            let ctrl = TABLE[scan as usize][2];
            [s | 0xE0, ctrl | 0xE0, (scan as u16 + 0x50) << 8]
        }
        _ => return None,
    })
}
