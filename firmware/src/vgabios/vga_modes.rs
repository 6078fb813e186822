//! Register sets of the standard VGA modes, in the IBM "video parameter table" layout
//! (64 bytes per mode), plus the per-mode facts the INT 10h code needs.
//!
//! The values are the documented register programming of the VGA modes (IBM VGA
//! technical reference); they are written here as plain data, one mode per entry.

/// How the BIOS draws in a mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum ModeKind {
    /// Character/attribute cells in odd/even memory.
    Text = 0,
    /// CGA 320×200 2-bit pixels, banks interleaved by scan line.
    Cga4 = 1,
    /// CGA 640×200 1-bit pixels, banks interleaved by scan line.
    Cga2 = 2,
    /// EGA/VGA four-plane 16-colour modes.
    Planar = 3,
    /// Mode 13h, one byte per pixel.
    Linear8 = 4,
}

/// Which default DAC contents a mode set loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DacSet {
    /// 64 EGA colours (rgbRGB index bits), for 350/400/480-line modes.
    Ega,
    /// 16 CGA colours repeated, for 200-line modes (index bit 4 = intensity).
    Cga,
    /// Grey levels for the monochrome mode 7.
    Mono,
    /// The 256-colour default of mode 13h.
    Vga256,
}

pub(crate) struct VgaMode {
    pub number: u8,
    pub kind: ModeKind,
    pub dac: DacSet,
    /// Video memory segment the CPU uses (B800, B000 or A000).
    pub segment: u16,
    /// Bytes from one scan line (text: character row) to the next.
    pub stride: u16,
    /// Bytes per character column in graphics modes (text: 2 = char + attribute).
    pub column_bytes: u8,
    /// Colours, as reported by INT 10h AH=1Bh (0 = monochrome).
    pub colours: u16,
    /// Display pages the mode has.
    pub pages: u8,
    pub params: [u8; 64],
    /// Text modes: the 350- and 200-line variants chosen by INT 10h AH=12h BL=30h.
    pub params_350: Option<[u8; 64]>,
    pub params_200: Option<[u8; 64]>,
}

/// Builds the 64-byte parameter table: columns, rows-1, character height, page size,
/// sequencer 1–4, misc output, CRTC 0–24, attribute 0–19, graphics 0–8.
#[allow(clippy::too_many_arguments)] // one argument per field of the table, in order
const fn params(
    columns: u8,
    rows_minus_1: u8,
    char_height: u8,
    page_size: u16,
    seq: [u8; 4],
    misc: u8,
    crtc: [u8; 25],
    attr: [u8; 20],
    gc: [u8; 9],
) -> [u8; 64] {
    let mut p = [0u8; 64];
    p[0] = columns;
    p[1] = rows_minus_1;
    p[2] = char_height;
    p[3] = page_size as u8;
    p[4] = (page_size >> 8) as u8;
    let mut i = 0;
    while i < 4 {
        p[5 + i] = seq[i];
        i += 1;
    }
    p[9] = misc;
    i = 0;
    while i < 25 {
        p[10 + i] = crtc[i];
        i += 1;
    }
    i = 0;
    while i < 20 {
        p[35 + i] = attr[i];
        i += 1;
    }
    i = 0;
    while i < 9 {
        p[55 + i] = gc[i];
        i += 1;
    }
    p
}

/// Offsets inside a parameter table, used by the ROM code.
pub(crate) const P_COLUMNS: u16 = 0;
pub(crate) const P_ROWS: u16 = 1;
pub(crate) const P_CHAR_HEIGHT: u16 = 2;
pub(crate) const P_PAGE_SIZE: u16 = 3;
pub(crate) const P_SEQ: u16 = 5;
pub(crate) const P_MISC: u16 = 9;
pub(crate) const P_CRTC: u16 = 10;
pub(crate) const P_ATTR: u16 = 35;
pub(crate) const P_GC: u16 = 55;

const TEXT_ATTR: [u8; 20] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x14, 0x07, 0x38, 0x39, 0x3A, 0x3B, 0x3C, 0x3D, 0x3E, 0x3F,
    0x0C, 0x00, 0x0F, 0x08,
];
const TEXT_GC: [u8; 9] = [0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x0E, 0x00, 0xFF];
/// 8-dot text (350/200-line variants): no line-graphics extension into a 9th column.
const ATTR_8DOT: [u8; 20] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x14, 0x07, 0x38, 0x39, 0x3A, 0x3B, 0x3C, 0x3D, 0x3E, 0x3F,
    0x08, 0x00, 0x0F, 0x00,
];
/// 350 lines: 14-line cells.
const CRTC_80COL_350: [u8; 25] = [
    0x5F, 0x4F, 0x50, 0x82, 0x55, 0x81, 0xBF, 0x1F, 0x00, 0x4D, 0x0B, 0x0C, 0x00, 0x00, 0x00, 0x00,
    0x83, 0x85, 0x5D, 0x28, 0x1F, 0x63, 0xBA, 0xA3, 0xFF,
];
const CRTC_40COL_350: [u8; 25] = [
    0x2D, 0x27, 0x28, 0x90, 0x2B, 0xA0, 0xBF, 0x1F, 0x00, 0x4D, 0x0B, 0x0C, 0x00, 0x00, 0x00, 0x00,
    0x83, 0x85, 0x5D, 0x14, 0x1F, 0x63, 0xBA, 0xA3, 0xFF,
];
/// 200 lines: 8-line cells, each scan line shown twice (400-line timing).
const CRTC_80COL_200: [u8; 25] = [
    0x5F, 0x4F, 0x50, 0x82, 0x55, 0x81, 0xBF, 0x1F, 0x00, 0xC7, 0x06, 0x07, 0x00, 0x00, 0x00, 0x00,
    0x9C, 0x8E, 0x8F, 0x28, 0x1F, 0x96, 0xB9, 0xA3, 0xFF,
];
const CRTC_40COL_200: [u8; 25] = [
    0x2D, 0x27, 0x28, 0x90, 0x2B, 0xA0, 0xBF, 0x1F, 0x00, 0xC7, 0x06, 0x07, 0x00, 0x00, 0x00, 0x00,
    0x9C, 0x8E, 0x8F, 0x14, 0x1F, 0x96, 0xB9, 0xA3, 0xFF,
];
const PLANAR_GC: [u8; 9] = [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x0F, 0xFF];
const CRTC_40COL_TEXT: [u8; 25] = [
    0x2D, 0x27, 0x28, 0x90, 0x2B, 0xA0, 0xBF, 0x1F, 0x00, 0x4F, 0x0D, 0x0E, 0x00, 0x00, 0x00, 0x00,
    0x9C, 0x8E, 0x8F, 0x14, 0x1F, 0x96, 0xB9, 0xA3, 0xFF,
];
const CRTC_80COL_TEXT: [u8; 25] = [
    0x5F, 0x4F, 0x50, 0x82, 0x55, 0x81, 0xBF, 0x1F, 0x00, 0x4F, 0x0D, 0x0E, 0x00, 0x00, 0x00, 0x00,
    0x9C, 0x8E, 0x8F, 0x28, 0x1F, 0x96, 0xB9, 0xA3, 0xFF,
];
const PLANAR16_ATTR_200: [u8; 20] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
    0x01, 0x00, 0x0F, 0x00,
];
const PLANAR16_ATTR_EGA: [u8; 20] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x14, 0x07, 0x38, 0x39, 0x3A, 0x3B, 0x3C, 0x3D, 0x3E, 0x3F,
    0x01, 0x00, 0x0F, 0x00,
];
const CRTC_480: [u8; 25] = [
    0x5F, 0x4F, 0x50, 0x82, 0x54, 0x80, 0x0B, 0x3E, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xEA, 0x8C, 0xDF, 0x28, 0x00, 0xE7, 0x04, 0xE3, 0xFF,
];

fn text40(number: u8) -> VgaMode {
    VgaMode {
        number,
        kind: ModeKind::Text,
        dac: DacSet::Ega,
        segment: 0xB800,
        stride: 80,
        column_bytes: 2,
        colours: 16,
        pages: 8,
        params: params(
            40,
            24,
            16,
            0x0800,
            [0x08, 0x03, 0x00, 0x02],
            0x67,
            CRTC_40COL_TEXT,
            TEXT_ATTR,
            TEXT_GC,
        ),
        params_350: Some(params(
            40,
            24,
            14,
            0x0800,
            [0x09, 0x03, 0x00, 0x02],
            0xA3,
            CRTC_40COL_350,
            ATTR_8DOT,
            TEXT_GC,
        )),
        params_200: Some(params(
            40,
            24,
            8,
            0x0800,
            [0x09, 0x03, 0x00, 0x02],
            0x63,
            CRTC_40COL_200,
            ATTR_8DOT,
            TEXT_GC,
        )),
    }
}

fn text80(number: u8) -> VgaMode {
    VgaMode {
        number,
        kind: ModeKind::Text,
        dac: DacSet::Ega,
        segment: 0xB800,
        stride: 160,
        column_bytes: 2,
        colours: 16,
        pages: 8,
        params: params(
            80,
            24,
            16,
            0x1000,
            [0x00, 0x03, 0x00, 0x02],
            0x67,
            CRTC_80COL_TEXT,
            TEXT_ATTR,
            TEXT_GC,
        ),
        params_350: Some(params(
            80,
            24,
            14,
            0x1000,
            [0x01, 0x03, 0x00, 0x02],
            0xA3,
            CRTC_80COL_350,
            ATTR_8DOT,
            TEXT_GC,
        )),
        params_200: Some(params(
            80,
            24,
            8,
            0x1000,
            [0x01, 0x03, 0x00, 0x02],
            0x63,
            CRTC_80COL_200,
            ATTR_8DOT,
            TEXT_GC,
        )),
    }
}

/// Every mode INT 10h AH=00h accepts, in table order.
pub(crate) fn vga_modes() -> Vec<VgaMode> {
    let mut mono_crtc_350 = CRTC_80COL_350;
    mono_crtc_350[0x14] = 0x0D; // underline on the cell's last line
    let mut mono_crtc = CRTC_80COL_TEXT;
    mono_crtc[0x14] = 0x0F; // underline on the last scan line of the cell
    let mut cga2_crtc = [
        0x5F, 0x4F, 0x50, 0x82, 0x54, 0x80, 0xBF, 0x1F, 0x00, 0xC1, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x9C, 0x8E, 0x8F, 0x28, 0x00, 0x96, 0xB9, 0xC2, 0xFF,
    ];
    let cga4_crtc = [
        0x2D, 0x27, 0x28, 0x90, 0x2B, 0x80, 0xBF, 0x1F, 0x00, 0xC1, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x9C, 0x8E, 0x8F, 0x14, 0x00, 0x96, 0xB9, 0xA2, 0xFF,
    ];
    let crtc_320x200_planar = [
        0x2D, 0x27, 0x28, 0x90, 0x2B, 0x80, 0xBF, 0x1F, 0x00, 0xC0, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x9C, 0x8E, 0x8F, 0x14, 0x00, 0x96, 0xB9, 0xE3, 0xFF,
    ];
    let mut crtc_640x200_planar = cga2_crtc;
    crtc_640x200_planar[9] = 0xC0;
    crtc_640x200_planar[0x17] = 0xE3;
    cga2_crtc[0x17] = 0xC2;
    let crtc_350 = [
        0x5F, 0x4F, 0x50, 0x82, 0x54, 0x80, 0xBF, 0x1F, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x83, 0x85, 0x5D, 0x28, 0x0F, 0x63, 0xBA, 0xE3, 0xFF,
    ];
    let mut crtc_480_mono = CRTC_480;
    crtc_480_mono[0x17] = 0xC3;
    let crtc_13 = [
        0x5F, 0x4F, 0x50, 0x82, 0x54, 0x80, 0xBF, 0x1F, 0x00, 0x41, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x9C, 0x8E, 0x8F, 0x28, 0x40, 0x96, 0xB9, 0xA3, 0xFF,
    ];
    let cga4_attr = [
        0x00, 0x13, 0x15, 0x17, 0x02, 0x04, 0x06, 0x07, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,
        0x17, 0x01, 0x00, 0x03, 0x00,
    ];
    let mut cga2_attr = [0x17u8; 20];
    cga2_attr[0] = 0x00;
    cga2_attr[16..].copy_from_slice(&[0x01, 0x00, 0x01, 0x00]);
    let mut mode11_attr = [0x3Fu8; 20];
    mode11_attr[0] = 0x00;
    mode11_attr[16..].copy_from_slice(&[0x01, 0x00, 0x0F, 0x00]);
    let mode13_attr = [
        0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E,
        0x0F, 0x41, 0x00, 0x0F, 0x00,
    ];
    let mono_attr = [
        0x00, 0x08, 0x08, 0x08, 0x08, 0x08, 0x08, 0x08, 0x10, 0x18, 0x18, 0x18, 0x18, 0x18, 0x18,
        0x18, 0x0E, 0x00, 0x0F, 0x08,
    ];
    let cga_gc4 = [0x00, 0x00, 0x00, 0x00, 0x00, 0x30, 0x0F, 0x00, 0xFF];
    let cga_gc2 = [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0D, 0x00, 0xFF];
    let mono_gc = [0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x0A, 0x00, 0xFF];
    let mode13_gc = [0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x05, 0x0F, 0xFF];

    let cga4 = |number| VgaMode {
        number,
        kind: ModeKind::Cga4,
        dac: DacSet::Cga,
        segment: 0xB800,
        stride: 80,
        column_bytes: 2,
        colours: 4,
        pages: 1,
        params: params(
            40,
            24,
            8,
            0x4000,
            [0x09, 0x03, 0x00, 0x02],
            0x63,
            cga4_crtc,
            cga4_attr,
            cga_gc4,
        ),
        params_350: None,
        params_200: None,
    };
    vec![
        text40(0x00),
        text40(0x01),
        text80(0x02),
        text80(0x03),
        cga4(0x04),
        cga4(0x05),
        VgaMode {
            number: 0x06,
            kind: ModeKind::Cga2,
            dac: DacSet::Cga,
            segment: 0xB800,
            stride: 80,
            column_bytes: 1,
            colours: 2,
            pages: 1,
            params: params(
                80,
                24,
                8,
                0x4000,
                [0x01, 0x01, 0x00, 0x06],
                0x63,
                cga2_crtc,
                cga2_attr,
                cga_gc2,
            ),
            params_350: None,
            params_200: None,
        },
        VgaMode {
            number: 0x07,
            kind: ModeKind::Text,
            dac: DacSet::Mono,
            segment: 0xB000,
            stride: 160,
            column_bytes: 2,
            colours: 0,
            pages: 8,
            params: params(
                80,
                24,
                16,
                0x1000,
                [0x00, 0x03, 0x00, 0x02],
                0x66,
                mono_crtc,
                mono_attr,
                mono_gc,
            ),
            params_350: Some(params(
                80,
                24,
                14,
                0x1000,
                [0x00, 0x03, 0x00, 0x02],
                0xA6,
                mono_crtc_350,
                mono_attr,
                mono_gc,
            )),
            params_200: None,
        },
        VgaMode {
            number: 0x0D,
            kind: ModeKind::Planar,
            dac: DacSet::Cga,
            segment: 0xA000,
            stride: 40,
            column_bytes: 1,
            colours: 16,
            pages: 8,
            params: params(
                40,
                24,
                8,
                0x2000,
                [0x09, 0x0F, 0x00, 0x06],
                0x63,
                crtc_320x200_planar,
                PLANAR16_ATTR_200,
                PLANAR_GC,
            ),
            params_350: None,
            params_200: None,
        },
        VgaMode {
            number: 0x0E,
            kind: ModeKind::Planar,
            dac: DacSet::Cga,
            segment: 0xA000,
            stride: 80,
            column_bytes: 1,
            colours: 16,
            pages: 4,
            params: params(
                80,
                24,
                8,
                0x4000,
                [0x01, 0x0F, 0x00, 0x06],
                0x63,
                crtc_640x200_planar,
                PLANAR16_ATTR_200,
                PLANAR_GC,
            ),
            params_350: None,
            params_200: None,
        },
        VgaMode {
            number: 0x10,
            kind: ModeKind::Planar,
            dac: DacSet::Ega,
            segment: 0xA000,
            stride: 80,
            column_bytes: 1,
            colours: 16,
            pages: 2,
            params: params(
                80,
                24,
                14,
                0x8000,
                [0x01, 0x0F, 0x00, 0x06],
                0xA3,
                crtc_350,
                PLANAR16_ATTR_EGA,
                PLANAR_GC,
            ),
            params_350: None,
            params_200: None,
        },
        VgaMode {
            number: 0x11,
            kind: ModeKind::Planar,
            dac: DacSet::Ega,
            segment: 0xA000,
            stride: 80,
            column_bytes: 1,
            colours: 2,
            pages: 1,
            params: params(
                80,
                29,
                16,
                0xA000,
                [0x01, 0x0F, 0x00, 0x06],
                0xE3,
                crtc_480_mono,
                mode11_attr,
                PLANAR_GC,
            ),
            params_350: None,
            params_200: None,
        },
        VgaMode {
            number: 0x12,
            kind: ModeKind::Planar,
            dac: DacSet::Ega,
            segment: 0xA000,
            stride: 80,
            column_bytes: 1,
            colours: 16,
            pages: 1,
            params: params(
                80,
                29,
                16,
                0xA000,
                [0x01, 0x0F, 0x00, 0x06],
                0xE3,
                CRTC_480,
                PLANAR16_ATTR_EGA,
                PLANAR_GC,
            ),
            params_350: None,
            params_200: None,
        },
        VgaMode {
            number: 0x13,
            kind: ModeKind::Linear8,
            dac: DacSet::Vga256,
            segment: 0xA000,
            stride: 320,
            column_bytes: 8,
            colours: 256,
            pages: 1,
            params: params(
                40,
                24,
                8,
                0x0000,
                [0x01, 0x0F, 0x00, 0x0E],
                0x63,
                crtc_13,
                mode13_attr,
                mode13_gc,
            ),
            params_350: None,
            params_200: None,
        },
    ]
}

/// The default DAC contents (6-bit R, G, B triplets) for each [`DacSet`].
pub(crate) fn dac_table(set: DacSet) -> Vec<u8> {
    match set {
        DacSet::Ega => (0..64u8)
            .flat_map(|i| {
                let level = |low: u8, high: u8| 42 * ((i >> low) & 1) + 21 * ((i >> high) & 1);
                [level(2, 5), level(1, 4), level(0, 3)]
            })
            .collect(),
        DacSet::Cga => (0..64u8)
            .flat_map(|i| cga_colour(i & 0x07 | ((i & 0x10) >> 1)))
            .collect(),
        DacSet::Mono => (0..64u8)
            .flat_map(|i| {
                let v = 42 * ((i >> 3) & 1) + 21 * ((i >> 4) & 1);
                [v, v, v]
            })
            .collect(),
        DacSet::Vga256 => vga256_palette(),
    }
}

/// The 16 CGA colours (index bits: 0 blue, 1 green, 2 red, 3 intensity); colour 6 is
/// brown rather than dark yellow, as on a real CGA monitor.
pub(crate) fn cga_colour(index: u8) -> [u8; 3] {
    let i = 21 * ((index >> 3) & 1);
    let c = |bit: u8| 42 * ((index >> bit) & 1) + i;
    if index == 6 {
        [42, 21, 0]
    } else {
        [c(2), c(1), c(0)]
    }
}

/// Mode 13h's default palette: 16 CGA colours, 16 grey levels, then 9 rings of 24 hues
/// (3 intensities × 3 saturations), then black.
pub(crate) fn vga256_palette() -> Vec<u8> {
    let mut p = Vec::with_capacity(768);
    for i in 0..16 {
        p.extend_from_slice(&cga_colour(i));
    }
    for g in [
        0u8, 5, 8, 11, 14, 17, 20, 24, 28, 32, 36, 40, 45, 50, 56, 63,
    ] {
        p.extend_from_slice(&[g, g, g]);
    }
    let rings: [[u8; 5]; 9] = [
        [0, 16, 31, 47, 63],
        [31, 39, 47, 55, 63],
        [45, 49, 54, 58, 63],
        [0, 7, 14, 21, 28],
        [14, 17, 21, 24, 28],
        [20, 22, 24, 26, 28],
        [0, 4, 8, 12, 16],
        [8, 10, 12, 14, 16],
        [11, 12, 13, 15, 16],
    ];
    for levels in rings {
        for hue in 0..24usize {
            let (sector, pos) = (hue / 4, hue % 4);
            let (r, g, b) = match sector {
                0 => (pos, 0, 4),
                1 => (4, 0, 4 - pos),
                2 => (4, pos, 0),
                3 => (4 - pos, 4, 0),
                4 => (0, 4, pos),
                _ => (0, 4 - pos, 4),
            };
            p.extend_from_slice(&[levels[r], levels[g], levels[b]]);
        }
    }
    p.resize(768, 0);
    p
}
