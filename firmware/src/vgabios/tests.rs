//! Structural tests of the ROM image. Tests that execute the ROM live in `exec_tests`.

use super::edid::build_edid;
use super::rom::{PCIR_OFFSET, build_with_symbols};
use super::vbe_modes::{MODE_RECORD_LEN, vbe_modes};
use super::vga_modes::vga_modes;
use super::*;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

#[test]
fn vgabios_rom_header_length_and_checksum() {
    let (rom, symbols) = build_with_symbols().expect("ROM assembles");
    assert_eq!(&rom[..2], &[0x55, 0xAA]);
    assert_eq!(rom.len() % 512, 0);
    assert!(rom.len() <= MAX_ROM_LEN);
    assert_eq!(usize::from(rom[2]) * 512, rom.len());
    assert_eq!(
        rom.iter().fold(0u8, |s, b| s.wrapping_add(*b)),
        0,
        "checksum"
    );
    // Offset 3: near jump to the init routine.
    assert_eq!(rom[3], 0xE9);
    let target = 6u16.wrapping_add(u16_at(&rom, 4));
    assert_eq!(target, symbols["init"]);
    assert_eq!(&rom[0x1E..0x21], b"IBM");
}

#[test]
fn vgabios_pci_data_structure() {
    let rom = build_vga_bios().unwrap();
    let p = usize::from(u16_at(&rom, 0x18));
    assert_eq!(p, PCIR_OFFSET);
    assert_eq!(p % 4, 0);
    assert_eq!(&rom[p..p + 4], b"PCIR");
    assert_eq!(u16_at(&rom, p + 4), VGA_PCI_VENDOR);
    assert_eq!(u16_at(&rom, p + 6), VGA_PCI_DEVICE);
    assert_eq!(u16_at(&rom, p + 0x0A), 0x18);
    assert_eq!(
        &rom[p + 0x0D..p + 0x10],
        &[0x00, 0x00, 0x03],
        "class 030000"
    );
    assert_eq!(usize::from(u16_at(&rom, p + 0x10)) * 512, rom.len());
    assert_eq!(
        u16_at(&rom, p + 0x16),
        u16_at(&rom, p + 0x10),
        "run-time length = image"
    );
    assert_eq!(rom[p + 0x14], 0, "x86 code");
    assert_eq!(rom[p + 0x15] & 0x80, 0x80, "last image");
}

#[test]
fn vgabios_build_is_deterministic() {
    assert_eq!(build_vga_bios().unwrap(), build_vga_bios().unwrap());
}

#[test]
fn vgabios_fonts_and_edid_are_in_the_rom() {
    let (rom, symbols) = build_with_symbols().unwrap();
    let fonts = super::font::rom_fonts().unwrap();
    let at = |name: &str| usize::from(symbols[name]);
    assert_eq!(
        &rom[at("font8x16")..at("font8x16") + 4096],
        &fonts.f8x16[..]
    );
    assert_eq!(&rom[at("font8x8")..at("font8x8") + 2048], &fonts.f8x8[..]);
    assert_eq!(
        &rom[at("font8x14")..at("font8x14") + 256 * 14],
        &fonts.f8x14[..]
    );
    // 'A' has pixels in the 8x16 font and the 8x14 font is its middle rows.
    let a16 = &fonts.f8x16[0x41 * 16..0x42 * 16];
    assert!(a16.iter().any(|&r| r != 0));
    assert_eq!(&fonts.f8x14[0x41 * 14..0x42 * 14], &a16[1..15]);
    assert_eq!(&rom[at("edid")..at("edid") + EDID_LEN], &build_edid()[..]);
}

#[test]
fn vgabios_vbe_mode_records_describe_each_mode() {
    let (rom, symbols) = build_with_symbols().unwrap();
    let base = usize::from(symbols["vbe_mode_table"]);
    let modes = vbe_modes();
    assert_eq!(modes.len(), 4 * 5 + 4 + 7 * 2);
    let mut numbers: Vec<u16> = modes.iter().map(|m| m.number).collect();
    numbers.sort_unstable();
    numbers.dedup();
    assert_eq!(numbers.len(), modes.len(), "mode numbers are unique");
    for (i, mode) in modes.iter().enumerate() {
        let r = &rom[base + i * MODE_RECORD_LEN..base + (i + 1) * MODE_RECORD_LEN];
        let info = &r[2..];
        assert_eq!(u16_at(r, 0), mode.number);
        assert_eq!(u16_at(info, 0x12), mode.width);
        assert_eq!(u16_at(info, 0x14), mode.height);
        assert_eq!(info[0x19], mode.bpp);
        assert_eq!(u32::from(u16_at(info, 0x10)), mode.bytes_per_line());
        let bytes_per_pixel = u32::from(mode.bpp).div_ceil(8);
        let pitch_pixels = u32::from(u16_at(info, 0x10)) / bytes_per_pixel;
        assert!(
            pitch_pixels >= u32::from(mode.width)
                && pitch_pixels % 8 == 0
                && pitch_pixels - u32::from(mode.width) < 8
        );
        assert_eq!(
            u16_at(info, 0x32),
            u16_at(info, 0x10),
            "linear bytes per line"
        );
        assert_eq!(
            info[0], 0xBB,
            "supported, extended info, colour, graphics, not VGA compatible, LFB"
        );
        assert_eq!(
            u16_at(info, 0x0C),
            symbols["vbe_bank_far"],
            "WinFuncPtr offset"
        );
        if mode.bpp == 32 {
            assert_eq!(&info[0x1F..0x27], &[8, 16, 8, 8, 8, 0, 8, 24]);
            assert_eq!(info[0x1B], 6, "direct colour");
        }
        if mode.bpp == 16 {
            assert_eq!(&info[0x1F..0x25], &[5, 11, 6, 5, 5, 0]);
        }
        if mode.bpp == 8 {
            assert_eq!(info[0x1B], 4, "packed pixel");
        }
    }
    let end = base + modes.len() * MODE_RECORD_LEN;
    assert_eq!(u16_at(&rom, end), 0xFFFF);
    // The required standard numbers are present.
    for (n, w, h, bpp) in [
        (0x100, 640, 400, 8),
        (0x10E, 320, 200, 16),
        (0x101, 640, 480, 8),
        (0x118, 1024, 768, 24),
        (0x11A, 1280, 1024, 16),
    ] {
        assert!(modes.contains(&VbeMode {
            number: n,
            width: w,
            height: h,
            bpp
        }));
    }
    assert!(
        modes
            .iter()
            .filter(|m| m.number >= 0x140)
            .all(|m| m.bpp == 16 || m.bpp == 32)
    );
}

#[test]
fn vgabios_vga_mode_table_matches_parameters() {
    let (rom, symbols) = build_with_symbols().unwrap();
    let base = usize::from(symbols["vga_mode_table"]);
    let modes = vga_modes();
    let numbers: Vec<u8> = modes.iter().map(|m| m.number).collect();
    assert_eq!(
        numbers,
        [0, 1, 2, 3, 4, 5, 6, 7, 0x0D, 0x0E, 0x10, 0x11, 0x12, 0x13]
    );
    for (i, mode) in modes.iter().enumerate() {
        let r = &rom[base + i * usize::from(mode_rec::LEN)..];
        assert_eq!(r[0], mode.number);
        let params = usize::from(u16_at(r, usize::from(mode_rec::PARAMS)));
        assert_eq!(&rom[params..params + 64], &mode.params[..]);
        // CRTC horizontal display end + 1 = character columns (mode 13h's CRTC counts
        // 80 double-pixel columns while the BIOS reports 40 text columns).
        if mode.number != 0x13 {
            assert_eq!(
                mode.params[10 + 1] + 1,
                mode.params[0],
                "mode {:02X}",
                mode.number
            );
        }
    }
    assert_eq!(rom[base + modes.len() * usize::from(mode_rec::LEN)], 0xFF);
    // Mode 3: 80×25, 16-line cells, colour CRTC, odd/even text graphics setup.
    let m3 = &modes[3].params;
    assert_eq!((m3[0], m3[1], m3[2]), (80, 24, 16));
    assert_eq!(m3[9], 0x67);
    // Mode 13h: chain-4 sequencer memory mode and 256-colour shift.
    let m13 = &modes[13].params;
    assert_eq!(m13[8], 0x0E);
    assert_eq!(m13[55 + 5], 0x40);
}

#[test]
fn vgabios_default_palettes() {
    use super::vga_modes::{DacSet, dac_table};
    let ega = dac_table(DacSet::Ega);
    assert_eq!(ega.len(), 192);
    assert_eq!(&ega[0x14 * 3..0x14 * 3 + 3], &[42, 21, 0], "brown");
    assert_eq!(&ega[0x3F * 3..0x3F * 3 + 3], &[63, 63, 63]);
    let vga = dac_table(DacSet::Vga256);
    assert_eq!(vga.len(), 768);
    assert_eq!(&vga[15 * 3..16 * 3], &[63, 63, 63]);
    assert_eq!(&vga[32 * 3..33 * 3], &[0, 0, 63], "hue ring starts at blue");
    assert_eq!(&vga[40 * 3..41 * 3], &[63, 0, 0], "red");
    assert!(vga.iter().all(|&c| c <= 63));
}
