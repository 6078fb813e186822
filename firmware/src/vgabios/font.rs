//! The fonts the VGA BIOS carries in its ROM: the project's 8×16 and 8×8 fonts
//! (assets/fonts, parsed by `aero_gpu::font`), and an 8×14 font derived from the 8×16.

use aero_gpu::font::{FONT_8X8_TEXT, FONT_8X16_TEXT, parse_font};

use super::VgaBiosError;

/// Packed fonts: 256 glyphs × height bytes, bit 7 = leftmost pixel.
pub(crate) struct RomFonts {
    pub f8x16: Vec<u8>,
    pub f8x14: Vec<u8>,
    pub f8x8: Vec<u8>,
}

fn packed(text: &str, height: usize) -> Result<Vec<u8>, VgaBiosError> {
    parse_font(text, height)
        .map(|f| f.to_packed_bytes())
        .map_err(|e| VgaBiosError::Font(format!("{height}-line font: {e}")))
}

/// 8×14 from 8×16: the top and bottom rows of the project's glyphs are spacing, so
/// dropping them keeps every glyph intact.
fn derive_8x14(f8x16: &[u8]) -> Vec<u8> {
    f8x16
        .chunks_exact(16)
        .flat_map(|g| g[1..15].iter().copied())
        .collect()
}

pub(crate) fn rom_fonts() -> Result<RomFonts, VgaBiosError> {
    let f8x16 = packed(FONT_8X16_TEXT, 16)?;
    let f8x8 = packed(FONT_8X8_TEXT, 8)?;
    let f8x14 = derive_8x14(&f8x16);
    Ok(RomFonts { f8x16, f8x14, f8x8 })
}
