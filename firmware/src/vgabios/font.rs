//! The fonts the VGA BIOS carries in its ROM: the project's 8×16 and 8×8 fonts
//! (assets/fonts), and an 8×14 font derived from the 8×16 one.

use super::VgaBiosError;

const FONT_8X16_TEXT: &str = include_str!("../../../assets/fonts/aero-8x16.txt");
const FONT_8X8_TEXT: &str = include_str!("../../../assets/fonts/aero-8x8.txt");

/// Packed fonts: 256 glyphs × height bytes, bit 7 = leftmost pixel.
pub(crate) struct RomFonts {
    pub f8x16: Vec<u8>,
    pub f8x14: Vec<u8>,
    pub f8x8: Vec<u8>,
}

// TODO(aero-gpu): switch to `aero_gpu::font::parse_font` once aero-gpu exports it, so the
// project has a single parser for the glyph format.
fn parse(text: &str, height: usize) -> Result<Vec<u8>, VgaBiosError> {
    let bad = |what: &str| VgaBiosError::Font(format!("{height}-line font: {what}"));
    let mut out = vec![0u8; 256 * height];
    let mut seen = [false; 256];
    // Comments start with '#' too, but a glyph row is exactly 8 of '#'/'.'.
    let is_row = |l: &str| l.len() == 8 && l.bytes().all(|b| b == b'#' || b == b'.');
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty() && (is_row(l) || !l.starts_with('#')));
    while let Some(header) = lines.next() {
        let code = header
            .strip_prefix("glyph 0x")
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .ok_or_else(|| bad(&format!("bad glyph header {header:?}")))?;
        if std::mem::replace(&mut seen[usize::from(code)], true) {
            return Err(bad(&format!("glyph 0x{code:02X} twice")));
        }
        for row in 0..height {
            let line = lines.next().ok_or_else(|| bad("truncated glyph"))?;
            if !is_row(line) {
                return Err(bad(&format!("bad row {line:?}")));
            }
            let bits = line.bytes().fold(0u8, |acc, b| (acc << 1) | u8::from(b == b'#'));
            out[usize::from(code) * height + row] = bits;
        }
    }
    if let Some(missing) = seen.iter().position(|s| !s) {
        return Err(bad(&format!("glyph 0x{missing:02X} missing")));
    }
    Ok(out)
}

/// 8×14 from 8×16: the top and bottom rows of the project's glyphs are spacing, so
/// dropping them keeps every glyph intact.
fn derive_8x14(f8x16: &[u8]) -> Vec<u8> {
    f8x16.chunks_exact(16).flat_map(|g| g[1..15].iter().copied()).collect()
}

pub(crate) fn rom_fonts() -> Result<RomFonts, VgaBiosError> {
    let f8x16 = parse(FONT_8X16_TEXT, 16)?;
    let f8x8 = parse(FONT_8X8_TEXT, 8)?;
    let f8x14 = derive_8x14(&f8x16);
    Ok(RomFonts { f8x16, f8x14, f8x8 })
}
