//! The EDID 1.3 block the VGA BIOS returns through VBE/DDC (INT 10h AX=4F15h).
//!
//! It describes a made-up "AER" flat panel whose preferred timing is 1024×768@60 Hz
//! (the VESA DMT timing) and which also accepts the VBE modes' common sizes.

pub const EDID_LEN: usize = 128;

/// A detailed timing descriptor for a VESA DMT mode.
struct DetailedTiming {
    pixel_clock_10khz: u16,
    h_active: u16,
    h_blank: u16,
    v_active: u16,
    v_blank: u16,
    h_sync_offset: u16,
    h_sync_width: u16,
    v_sync_offset: u8,
    v_sync_width: u8,
    h_mm: u16,
    v_mm: u16,
    /// Sync flags byte (bit 4:3 = 11 digital separate, bits 2/1 = polarities).
    flags: u8,
}

impl DetailedTiming {
    fn encode(&self) -> [u8; 18] {
        let mut d = [0u8; 18];
        d[0..2].copy_from_slice(&self.pixel_clock_10khz.to_le_bytes());
        d[2] = self.h_active as u8;
        d[3] = self.h_blank as u8;
        d[4] = (((self.h_active >> 8) as u8) << 4) | ((self.h_blank >> 8) as u8 & 0x0F);
        d[5] = self.v_active as u8;
        d[6] = self.v_blank as u8;
        d[7] = (((self.v_active >> 8) as u8) << 4) | ((self.v_blank >> 8) as u8 & 0x0F);
        d[8] = self.h_sync_offset as u8;
        d[9] = self.h_sync_width as u8;
        d[10] = ((self.v_sync_offset & 0x0F) << 4) | (self.v_sync_width & 0x0F);
        d[11] = (((self.h_sync_offset >> 8) as u8 & 3) << 6)
            | (((self.h_sync_width >> 8) as u8 & 3) << 4)
            | (((self.v_sync_offset >> 4) & 3) << 2)
            | ((self.v_sync_width >> 4) & 3);
        d[12] = self.h_mm as u8;
        d[13] = self.v_mm as u8;
        d[14] = (((self.h_mm >> 8) as u8) << 4) | ((self.v_mm >> 8) as u8 & 0x0F);
        d[17] = self.flags;
        d
    }
}

/// A display descriptor (monitor name, range limits, ...): tag then 13 bytes.
fn descriptor(tag: u8, payload: &[u8; 13]) -> [u8; 18] {
    let mut d = [0u8; 18];
    d[3] = tag;
    d[5..].copy_from_slice(payload);
    d
}

/// Text for a name/serial descriptor: up to 13 bytes, newline-terminated, space-padded.
fn descriptor_text(text: &str) -> [u8; 13] {
    let mut p = [b' '; 13];
    let bytes = text.as_bytes();
    let n = bytes.len().min(12);
    p[..n].copy_from_slice(&bytes[..n]);
    p[n] = b'\n';
    p
}

/// Standard timing code (EDID 1.3): width/8-31, aspect ratio bits, refresh-60.
fn standard_timing(width: u16, aspect: u8, refresh: u8) -> [u8; 2] {
    [(width / 8 - 31) as u8, (aspect << 6) | (refresh - 60)]
}

/// Manufacturer ID: three letters, 5 bits each ('A' = 1), big-endian.
fn manufacturer_id(id: &[u8; 3]) -> [u8; 2] {
    let v = id
        .iter()
        .fold(0u16, |acc, c| (acc << 5) | u16::from(c - b'A' + 1));
    v.to_be_bytes()
}

pub fn build_edid() -> [u8; EDID_LEN] {
    let mut e = [0u8; EDID_LEN];
    e[0..8].copy_from_slice(&[0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00]);
    e[8..10].copy_from_slice(&manufacturer_id(b"AER"));
    e[10..12].copy_from_slice(&0x0001u16.to_le_bytes()); // product code
    e[12..16].copy_from_slice(&1u32.to_le_bytes()); // serial
    e[16] = 1; // week
    e[17] = (2026 - 1990) as u8; // year of manufacture, counted from 1990
    e[18] = 1; // EDID 1.3
    e[19] = 3;
    e[20] = 0x80; // digital input
    e[21] = 34; // 34×27 cm
    e[22] = 27;
    e[23] = 120; // gamma 2.2
    e[24] = 0x0A; // RGB colour, preferred timing is the first detailed timing (bit 1)
    // Chromaticity: sRGB primaries, 10-bit fixed point (value × 1024).
    let xy = |v: f64| (v * 1024.0).round() as u16;
    let (rx, ry, gx, gy, bx, by, wx, wy) = (
        xy(0.640),
        xy(0.330),
        xy(0.300),
        xy(0.600),
        xy(0.150),
        xy(0.060),
        xy(0.3127),
        xy(0.3290),
    );
    e[25] = (((rx & 3) << 6) | ((ry & 3) << 4) | ((gx & 3) << 2) | (gy & 3)) as u8;
    e[26] = (((bx & 3) << 6) | ((by & 3) << 4) | ((wx & 3) << 2) | (wy & 3)) as u8;
    for (i, v) in [rx, ry, gx, gy, bx, by, wx, wy].iter().enumerate() {
        e[27 + i] = (v >> 2) as u8;
    }
    // Established timings: 640×480@60, 800×600@60 (byte 35 bit 5, byte 36 bit 0),
    // 1024×768@60 (byte 36 bit 3), 720×400@70 (byte 35 bit 7).
    e[35] = 0x80 | 0x20;
    e[36] = 0x01 | 0x08;
    e[37] = 0x00;
    // Standard timings: aspect codes 00 = 16:10, 01 = 4:3, 10 = 5:4, 11 = 16:9.
    let standard = [
        standard_timing(1280, 0b10, 60), // 1280×1024
        standard_timing(1280, 0b11, 60), // 1280×720
        standard_timing(1280, 0b00, 60), // 1280×800
        standard_timing(1440, 0b00, 60), // 1440×900
        standard_timing(1600, 0b11, 60), // 1600×900
        standard_timing(1680, 0b00, 60), // 1680×1050
        standard_timing(1920, 0b11, 60), // 1920×1080
        standard_timing(1024, 0b01, 60), // 1024×768
    ];
    for (i, st) in standard.iter().enumerate() {
        e[38 + 2 * i..40 + 2 * i].copy_from_slice(st);
    }
    // VESA DMT 1024×768@60: 65 MHz, htotal 1344, vtotal 806, both syncs negative.
    let preferred = DetailedTiming {
        pixel_clock_10khz: 6500,
        h_active: 1024,
        h_blank: 320,
        v_active: 768,
        v_blank: 38,
        h_sync_offset: 24,
        h_sync_width: 136,
        v_sync_offset: 3,
        v_sync_width: 6,
        h_mm: 340,
        v_mm: 270,
        flags: 0x18,
    };
    e[54..72].copy_from_slice(&preferred.encode());
    // Range limits: 50–75 Hz vertical, 30–80 kHz horizontal, 170 MHz max clock.
    let mut range = [0u8; 13];
    range[..5].copy_from_slice(&[50, 75, 30, 80, 17]);
    range[5] = 0x00; // no secondary timing formula
    range[6] = b'\n';
    range[7..].fill(b' ');
    e[72..90].copy_from_slice(&descriptor(0xFD, &range));
    e[90..108].copy_from_slice(&descriptor(0xFC, &descriptor_text("Aero Display")));
    e[108..126].copy_from_slice(&descriptor(0xFF, &descriptor_text("AERO0001")));
    e[126] = 0; // no extension blocks
    let sum = e[..127].iter().fold(0u8, |s, b| s.wrapping_add(*b));
    e[127] = 0u8.wrapping_sub(sum);
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vgabios_edid_header_checksum_and_preferred_mode() {
        let e = build_edid();
        assert_eq!(&e[..8], &[0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0]);
        assert_eq!(e.iter().fold(0u8, |s, b| s.wrapping_add(*b)), 0);
        // "AER": A=1, E=5, R=18 → 0 00001 00101 10010
        assert_eq!(u16::from_be_bytes([e[8], e[9]]), (1 << 10) | (5 << 5) | 18);
        let d = &e[54..72];
        assert_eq!(u16::from_le_bytes([d[0], d[1]]), 6500);
        assert_eq!(u16::from(d[2]) | (u16::from(d[4] >> 4) << 8), 1024);
        assert_eq!(u16::from(d[5]) | (u16::from(d[7] >> 4) << 8), 768);
        // Standard timing 1: 1280 wide at 60 Hz.
        assert_eq!((u16::from(e[38]) + 31) * 8, 1280);
        assert_eq!(e[39] & 0x3F, 0);
        assert_eq!(e[24] & 0x02, 0x02, "preferred timing flag");
    }
}
