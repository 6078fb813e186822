//! Text-mode fonts in the project's plain-text glyph format (see `assets/fonts/README.md`).
//!
//! The VGA BIOS copies these glyphs into plane 2; the display model itself only reads
//! whatever software loaded there. The parser is shared with the firmware crate.

use std::sync::LazyLock;

/// Number of glyphs in a code page 437 font.
pub const GLYPH_COUNT: usize = 256;
/// Tallest glyph the format (and the VGA's 32-byte glyph slots) can hold here.
pub const MAX_GLYPH_HEIGHT: usize = 16;

/// The project's 8x16 font source text.
pub const FONT_8X16_TEXT: &str = include_str!("../../../assets/fonts/aero-8x16.txt");
/// The project's 8x8 font source text.
pub const FONT_8X8_TEXT: &str = include_str!("../../../assets/fonts/aero-8x8.txt");

/// Why a font file was rejected; line numbers count from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FontError {
    #[error("glyph height {0} is not supported (1..=16)")]
    UnsupportedHeight(usize),
    #[error("line {line}: expected `glyph 0xNN`")]
    BadGlyphHeader { line: usize },
    #[error("line {line}: glyph 0x{code:02X} defined twice")]
    DuplicateGlyph { line: usize, code: u8 },
    #[error("line {line}: a glyph row must be exactly 8 characters of '#' or '.'")]
    BadRow { line: usize },
    #[error("glyph 0x{code:02X} has {rows} rows, expected {expected}")]
    WrongRowCount {
        code: u8,
        rows: usize,
        expected: usize,
    },
    #[error("glyph 0x{code:02X} is missing")]
    MissingGlyph { code: u8 },
}

/// A parsed 256-glyph font. Each glyph is stored as 16 row bytes (bit 7 = leftmost
/// pixel); rows at and beyond `height` are zero.
#[derive(Clone, PartialEq, Eq)]
pub struct Font {
    height: usize,
    glyphs: Vec<[u8; MAX_GLYPH_HEIGHT]>,
}

impl std::fmt::Debug for Font {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Font")
            .field("height", &self.height)
            .finish_non_exhaustive()
    }
}

impl Font {
    /// Rows per glyph (8 or 16 for the built-in fonts).
    pub fn height(&self) -> usize {
        self.height
    }

    /// The `height` row bytes of glyph `code`.
    pub fn glyph(&self, code: u8) -> &[u8] {
        &self.glyphs[usize::from(code)][..self.height]
    }

    /// All 256 glyphs, each padded to 16 rows.
    pub fn glyphs(&self) -> &[[u8; MAX_GLYPH_HEIGHT]] {
        &self.glyphs
    }

    /// The font as the BIOS stores it in ROM: 256 × `height` bytes, glyph after glyph.
    pub fn to_packed_bytes(&self) -> Vec<u8> {
        self.glyphs
            .iter()
            .flat_map(|g| g[..self.height].iter().copied())
            .collect()
    }
}

/// Parses the glyph text format: optional `#` comment lines at the top, then for every
/// code 0x00..=0xFF a `glyph 0xNN` line followed by exactly `height` rows of 8 `#`/`.`.
pub fn parse_font(text: &str, height: usize) -> Result<Font, FontError> {
    if height == 0 || height > MAX_GLYPH_HEIGHT {
        return Err(FontError::UnsupportedHeight(height));
    }
    let mut glyphs = vec![[0u8; MAX_GLYPH_HEIGHT]; GLYPH_COUNT];
    let mut defined = [false; GLYPH_COUNT];
    // The glyph being filled: (code, rows seen so far).
    let mut current: Option<(u8, usize)> = None;
    let mut in_header = true;

    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.trim_end();
        if in_header && (line.starts_with('#') && !is_row(line) || line.is_empty()) {
            continue;
        }
        in_header = false;
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("glyph ") {
            if let Some((code, rows)) = current
                && rows != height
            {
                return Err(FontError::WrongRowCount {
                    code,
                    rows,
                    expected: height,
                });
            }
            let code = parse_code(rest).ok_or(FontError::BadGlyphHeader { line: line_no })?;
            if defined[usize::from(code)] {
                return Err(FontError::DuplicateGlyph {
                    line: line_no,
                    code,
                });
            }
            defined[usize::from(code)] = true;
            current = Some((code, 0));
            continue;
        }
        let Some((code, rows)) = current.as_mut() else {
            return Err(FontError::BadGlyphHeader { line: line_no });
        };
        if !is_row(line) {
            return Err(FontError::BadRow { line: line_no });
        }
        if *rows >= height {
            return Err(FontError::WrongRowCount {
                code: *code,
                rows: *rows + 1,
                expected: height,
            });
        }
        glyphs[usize::from(*code)][*rows] = row_bits(line);
        *rows += 1;
    }
    if let Some((code, rows)) = current
        && rows != height
    {
        return Err(FontError::WrongRowCount {
            code,
            rows,
            expected: height,
        });
    }
    if let Some(missing) = defined.iter().position(|&d| !d) {
        return Err(FontError::MissingGlyph {
            code: missing as u8,
        });
    }
    Ok(Font { height, glyphs })
}

fn is_row(line: &str) -> bool {
    line.len() == 8 && line.bytes().all(|b| b == b'#' || b == b'.')
}

fn row_bits(line: &str) -> u8 {
    line.bytes()
        .fold(0u8, |acc, b| (acc << 1) | u8::from(b == b'#'))
}

fn parse_code(text: &str) -> Option<u8> {
    let hex = text
        .trim()
        .strip_prefix("0x")
        .or_else(|| text.trim().strip_prefix("0X"))?;
    if hex.is_empty() || hex.len() > 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// The built-in 8x16 font, parsed on first use.
pub static FONT_8X16: LazyLock<Font> =
    LazyLock::new(|| parse_font(FONT_8X16_TEXT, 16).expect("built-in 8x16 font is valid"));

/// The built-in 8x8 font, parsed on first use.
pub static FONT_8X8: LazyLock<Font> =
    LazyLock::new(|| parse_font(FONT_8X8_TEXT, 8).expect("built-in 8x8 font is valid"));

/// The built-in 8x16 font.
pub fn font_8x16() -> &'static Font {
    &FONT_8X16
}

/// The built-in 8x8 font.
pub fn font_8x8() -> &'static Font {
    &FONT_8X8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_fonts_parse_with_256_glyphs() {
        let big = parse_font(FONT_8X16_TEXT, 16).unwrap();
        let small = parse_font(FONT_8X8_TEXT, 8).unwrap();
        assert_eq!(big.glyphs().len(), 256);
        assert_eq!(small.glyphs().len(), 256);
        assert_eq!(big.to_packed_bytes().len(), 4096);
        assert_eq!(small.to_packed_bytes().len(), 2048);
        assert_eq!(font_8x16().height(), 16);
        assert_eq!(font_8x8().height(), 8);
        // Every printable ASCII glyph except space draws something, in both fonts.
        for code in 0x21u8..0x7F {
            assert!(
                big.glyph(code).iter().any(|&r| r != 0),
                "8x16 glyph {code:#x} empty"
            );
            assert!(
                small.glyph(code).iter().any(|&r| r != 0),
                "8x8 glyph {code:#x} empty"
            );
        }
        assert!(big.glyph(b' ').iter().all(|&r| r == 0));
        // Full block and lower half block.
        assert!(big.glyph(0xDB).iter().all(|&r| r == 0xFF));
        assert_eq!(small.glyph(0xDC), &[0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]);
    }

    #[test]
    fn letter_a_has_the_designed_shape() {
        let a = font_8x16().glyph(b'A');
        assert_eq!(&a[..4], &[0, 0, 0b0011_1000, 0b0110_1100]);
        assert_eq!(a[7], 0b1111_1110, "crossbar row");
        assert_eq!(a[11], 0b1100_0110, "legs at the baseline");
        assert_eq!(&a[12..], &[0, 0, 0, 0]);
    }

    #[test]
    fn box_drawing_reaches_column_7_for_the_9th_dot_rule() {
        // ─ (0xC4) must span the full cell width so 9-dot modes join it to the next cell.
        let dash = font_8x16().glyph(0xC4);
        assert_eq!(dash.iter().filter(|&&r| r == 0xFF).count(), 1);
        // │ (0xB3) is one pixel wide on every row.
        assert!(font_8x16().glyph(0xB3).iter().all(|&r| r.count_ones() == 1));
    }

    #[test]
    fn malformed_fonts_are_rejected_with_line_numbers() {
        assert_eq!(parse_font("", 17), Err(FontError::UnsupportedHeight(17)));
        assert_eq!(
            parse_font("# only a comment\n", 8),
            Err(FontError::MissingGlyph { code: 0 })
        );
        let bad_row = "glyph 0x00\n#.#.\n";
        assert_eq!(parse_font(bad_row, 1), Err(FontError::BadRow { line: 2 }));
        let short = "glyph 0x00\n........\nglyph 0x01\n";
        assert_eq!(
            parse_font(short, 2),
            Err(FontError::WrongRowCount {
                code: 0,
                rows: 1,
                expected: 2
            })
        );
        let dup = "glyph 0x00\n........\nglyph 0x00\n........\n";
        assert_eq!(
            parse_font(dup, 1),
            Err(FontError::DuplicateGlyph { line: 3, code: 0 })
        );
        assert_eq!(
            parse_font("glyph 0x100\n", 1),
            Err(FontError::BadGlyphHeader { line: 1 })
        );
        let too_many = "glyph 0x00\n........\n########\n";
        assert!(matches!(
            parse_font(too_many, 1),
            Err(FontError::WrongRowCount { .. })
        ));
    }
}
