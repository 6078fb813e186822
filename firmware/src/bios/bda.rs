//! BIOS Data Area (segment 0040h) and EBDA offsets used by the services.

pub const BDA: u64 = 0x400;
pub const COM_PORTS: u64 = 0x400;
pub const LPT_PORTS: u64 = 0x408;
pub const EBDA_SEGMENT: u64 = 0x40E;
pub const EQUIPMENT: u64 = 0x410;
pub const BASE_MEMORY_KIB: u64 = 0x413;
pub const SHIFT_FLAGS: u64 = 0x417;
pub const SHIFT_FLAGS2: u64 = 0x418;
pub const KBD_HEAD: u64 = 0x41A;
pub const KBD_TAIL: u64 = 0x41C;
pub const KBD_BUFFER: u64 = 0x41E;
pub const FLOPPY_LAST_STATUS: u64 = 0x441;
pub const TIMER_TICKS: u64 = 0x46C;
pub const TIMER_ROLLOVER: u64 = 0x470;
pub const HDD_LAST_STATUS: u64 = 0x474;
pub const HDD_COUNT: u64 = 0x475;
pub const KBD_BUF_START: u64 = 0x480;
pub const KBD_BUF_END: u64 = 0x482;
pub const KBD_STATUS3: u64 = 0x496;
pub const KBD_LEDS: u64 = 0x497;

/// Keyboard buffer bounds as offsets in segment 0040h.
pub const KBD_BUFFER_START_OFF: u16 = 0x1E;
pub const KBD_BUFFER_END_OFF: u16 = 0x3E;

/// Ticks per day of the 18.2 Hz timer (1800B0h).
pub const TICKS_PER_DAY: u32 = 0x1800B0;
