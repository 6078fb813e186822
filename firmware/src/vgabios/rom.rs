//! The option ROM image: header and PCI data structure, the init entry that POST
//! far-calls, the INT 10h dispatcher and the data tables; then length and checksum.

use std::collections::BTreeMap;

use iced_x86::code_asm::*;

use super::edid::build_edid;
use super::font::{RomFonts, rom_fonts};
use super::vbe_modes::{mode_info_template, vbe_modes};
use super::vga_modes::{DacSet, VgaMode, dac_table, vga_modes};
use super::{
    MAX_ROM_LEN, VGA_PCI_CLASS, VGA_PCI_DEVICE, VGA_PCI_VENDOR, VgaBiosError, bda, mode_rec,
};
use crate::asm16::{Asm, assemble};

/// Offset of the PCI data structure (DWORD aligned, after the "IBM" marker at 1Eh).
pub(crate) const PCIR_OFFSET: usize = 0x24;
const PCIR_LEN: u16 = 0x18;
/// Offset of the 16-bit image length (512-byte units) inside the PCIR structure.
const PCIR_IMAGE_LEN: usize = 0x10;
/// Offset of the PCI 3.0 "maximum run-time image length" (512-byte units).
const PCIR_RUNTIME_LEN: usize = 0x16;

pub(crate) fn build() -> Result<Vec<u8>, VgaBiosError> {
    build_with_symbols().map(|(image, _)| image)
}

/// The ROM image and the offsets of its symbols (routines and tables), for tests and
/// diagnostics.
pub(crate) fn build_with_symbols() -> Result<(Vec<u8>, BTreeMap<&'static str, u16>), VgaBiosError> {
    let fonts = rom_fonts()?;
    let modes = vga_modes();
    let assembled = assemble(0, |asm| emit_rom(asm, &fonts, &modes))?;
    let mut image = assembled.bytes;
    let assembled = AssembledInfo {
        bytes_len: image.len(),
        symbols: assembled.symbols,
    };
    let len = image.len().div_ceil(512) * 512;
    // One spare byte for the checksum if the code ends exactly on a boundary.
    let len = if len == image.len() { len + 512 } else { len };
    if len > MAX_ROM_LEN {
        return Err(VgaBiosError::TooLarge(len));
    }
    image.resize(len, 0);
    let blocks = len / 512;
    image[2] = blocks as u8; // 64 KiB = 128 blocks fits in a byte
    image[PCIR_OFFSET + PCIR_IMAGE_LEN..PCIR_OFFSET + PCIR_IMAGE_LEN + 2]
        .copy_from_slice(&(blocks as u16).to_le_bytes());
    // The whole image stays resident (the ROM keeps no init-only part to discard).
    image[PCIR_OFFSET + PCIR_RUNTIME_LEN..PCIR_OFFSET + PCIR_RUNTIME_LEN + 2]
        .copy_from_slice(&(blocks as u16).to_le_bytes());
    let sum = image.iter().fold(0u8, |s, b| s.wrapping_add(*b));
    let last = len - 1;
    image[last] = image[last].wrapping_sub(sum);
    tracing::debug!(
        bytes = len,
        code_and_data = assembled.bytes_len,
        "VGA BIOS assembled"
    );
    Ok((image, assembled.symbols))
}

/// What remains of the assembler output once the bytes became the image.
struct AssembledInfo {
    bytes_len: usize,
    symbols: BTreeMap<&'static str, u16>,
}

fn emit_rom(asm: &mut Asm, fonts: &RomFonts, modes: &[VgaMode]) -> Result<(), VgaBiosError> {
    emit_header(asm)?;
    emit_init(asm)?;
    emit_dispatch(asm)?;
    super::regs::emit(asm)?;
    super::modeset::emit(asm)?;
    super::text::emit(asm)?;
    super::gfx::emit(asm)?;
    super::palette::emit(asm)?;
    super::fonts::emit(asm)?;
    super::info::emit(asm)?;
    super::savestate::emit(asm)?;
    super::vbe::emit(asm)?;
    emit_data(asm, fonts, modes)?;
    Ok(())
}

fn emit_header(asm: &mut Asm) -> Result<(), VgaBiosError> {
    let init = asm.addr("init");
    let pcir = u16::try_from(PCIR_OFFSET).unwrap_or(0);
    let mut h = vec![0x55, 0xAA, 0x00];
    // Init entry at offset 3: a near jump with a fixed 16-bit displacement.
    h.push(0xE9);
    h.extend_from_slice(&init.wrapping_sub(6).to_le_bytes());
    h.resize(0x18, 0);
    h.extend_from_slice(&pcir.to_le_bytes()); // 18h: PCI data structure
    h.extend_from_slice(&0u16.to_le_bytes()); // 1Ah: no PnP header
    h.resize(0x1E, 0);
    h.extend_from_slice(b"IBM"); // VGA ROMs carry this marker; some software checks it
    h.resize(PCIR_OFFSET, 0);
    h.extend_from_slice(b"PCIR");
    h.extend_from_slice(&VGA_PCI_VENDOR.to_le_bytes());
    h.extend_from_slice(&VGA_PCI_DEVICE.to_le_bytes());
    h.extend_from_slice(&0u16.to_le_bytes()); // device list pointer
    h.extend_from_slice(&PCIR_LEN.to_le_bytes());
    h.push(3); // PCI 3.0 structure
    h.extend_from_slice(&VGA_PCI_CLASS.to_le_bytes()[..3]); // prog-if, subclass, class
    h.extend_from_slice(&0u16.to_le_bytes()); // image length, patched after assembly
    h.extend_from_slice(&0x0001u16.to_le_bytes()); // code revision
    h.push(0); // code type: x86 PC-AT
    h.push(0x80); // last image
    h.extend_from_slice(&0u16.to_le_bytes()); // max runtime length, patched after assembly
    h.extend_from_slice(&0u16.to_le_bytes()); // configuration utility
    h.extend_from_slice(&0u16.to_le_bytes()); // DMTF CLP entry
    asm.db(&h)?;
    Ok(())
}

/// Far-called by POST with the ROM at C000:0000: hooks the vectors, fills the BDA
/// video fields and sets mode 3.
fn emit_init(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("init")?;
    asm.pushf()?;
    asm.push(ds)?;
    asm.push(es)?;
    asm.pushad()?;
    asm.cld()?;
    asm.push(bda::SEGMENT)?;
    asm.pop(ds)?;
    asm.mov(dx, cs)?;
    let int10 = asm.addr("int10");
    let f8 = asm.addr("font8x8");
    for (vector, offset) in [
        (0x10u16, int10),
        (0x43, f8),
        (0x1F, f8.wrapping_add(128 * 8)),
    ] {
        asm.mov(ax, i32::from(offset))?;
        asm.mov(bx, i32::from(vector * 4))?;
        asm.call_sym("set_vector")?;
    }
    // VGA active with 256 KiB, feature/switch byte of a colour VGA, 400-line text,
    // default palette loading on, display combination = VGA colour.
    asm.mov(byte_ptr(u32::from(bda::VIDEO_CTL)), 0x60)?;
    asm.mov(byte_ptr(u32::from(bda::SWITCHES)), 0xF9)?;
    asm.mov(byte_ptr(u32::from(bda::VGA_FLAGS)), 0x51)?;
    asm.mov(byte_ptr(u32::from(bda::DCC_INDEX)), 0x08)?;
    let save = asm.addr("save_pointer_table");
    asm.mov(word_ptr(u32::from(bda::SAVE_POINTER)), i32::from(save))?;
    asm.mov(word_ptr(u32::from(bda::SAVE_POINTER) + 2), cs)?;
    // Equipment word bits 5:4 = 10b: 80×25 colour display.
    asm.and(
        word_ptr(u32::from(bda::EQUIPMENT)),
        0xFFCF_u16 as i16 as i32,
    )?;
    asm.or(word_ptr(u32::from(bda::EQUIPMENT)), 0x0020)?;
    asm.mov(ax, 0x0003)?;
    asm.int(0x10)?;
    asm.popad()?;
    asm.pop(es)?;
    asm.pop(ds)?;
    asm.popf()?;
    asm.retf()?;
    Ok(())
}

/// INT 10h entry: saves the caller's registers (all 32 bits: handlers use 32-bit
/// registers, callers may keep values in the upper halves) as a frame (see `frame`),
/// points DS at the BDA and calls the handler for AH. Unknown functions return unchanged.
fn emit_dispatch(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("int10")?;
    asm.cld()?;
    asm.push(ds)?;
    asm.push(es)?;
    asm.pushad()?;
    asm.mov(bp, sp)?;
    asm.push(bda::SEGMENT)?;
    asm.pop(ds)?;
    let mut done = asm.create_label();
    for (function, handler) in [
        (0x0E, "int10_teletype"),
        (0x02, "int10_set_cursor"),
        (0x03, "int10_get_cursor"),
        (0x09, "int10_write_char_attr"),
        (0x0A, "int10_write_char"),
        (0x06, "int10_scroll"),
        (0x07, "int10_scroll"),
        (0x4F, "int10_vbe"),
        (0x00, "int10_set_mode"),
        (0x01, "int10_cursor_shape"),
        (0x05, "int10_set_page"),
        (0x08, "int10_read_char"),
        (0x0B, "int10_cga_palette"),
        (0x0C, "int10_write_pixel"),
        (0x0D, "int10_read_pixel"),
        (0x0F, "int10_get_mode"),
        (0x10, "int10_palette"),
        (0x11, "int10_fonts"),
        (0x12, "int10_alt_select"),
        (0x13, "int10_write_string"),
        (0x1A, "int10_display_combination"),
        (0x1B, "int10_state_info"),
        (0x1C, "int10_save_restore"),
    ] {
        let mut next = asm.create_label();
        asm.cmp(ah, function)?;
        asm.jne(next)?;
        asm.call_sym(handler)?;
        asm.jmp(done)?;
        asm.set(&mut next)?;
    }
    asm.set(&mut done)?;
    asm.popad()?;
    asm.pop(es)?;
    asm.pop(ds)?;
    asm.iret()?;
    Ok(())
}

fn dac_symbol(set: DacSet) -> (&'static str, u16) {
    match set {
        DacSet::Ega => ("dac_ega", 64),
        DacSet::Cga => ("dac_cga", 64),
        DacSet::Mono => ("dac_mono", 64),
        DacSet::Vga256 => ("dac_vga256", 256),
    }
}

/// The CGA mode-control (3x8) and palette (3x9) values the BDA mirrors.
fn cga_registers(mode: u8) -> (u8, u8) {
    match mode {
        0 => (0x2C, 0x30),
        1 => (0x28, 0x30),
        2 => (0x2D, 0x30),
        3 => (0x29, 0x30),
        4 => (0x2A, 0x30),
        5 => (0x2E, 0x30),
        6 => (0x1E, 0x3F),
        _ => (0x29, 0x30),
    }
}

fn emit_data(asm: &mut Asm, fonts: &RomFonts, modes: &[VgaMode]) -> Result<(), VgaBiosError> {
    // VGA mode records, then their parameter tables back to back.
    let params_base = asm.addr("vga_params");
    // Parameter tables: every mode's own table (index i), then the text variants.
    let mut params: Vec<u8> = modes.iter().flat_map(|m| m.params).collect();
    let mut variant = |table: Option<[u8; 64]>| -> u16 {
        table.map_or(0, |t| {
            let offset = params_base.wrapping_add(params.len() as u16);
            params.extend_from_slice(&t);
            offset
        })
    };
    let variants: Vec<(u16, u16)> = modes
        .iter()
        .map(|m| (variant(m.params_350), variant(m.params_200)))
        .collect();
    let mut table = Vec::new();
    for (i, mode) in modes.iter().enumerate() {
        let (dac_name, dac_entries) = dac_symbol(mode.dac);
        let dac = asm.addr(dac_name);
        let (ctl, pal) = cga_registers(mode.number);
        let mut r = vec![0u8; usize::from(mode_rec::LEN)];
        r[mode_rec::NUMBER as usize] = mode.number;
        r[mode_rec::KIND as usize] = mode.kind as u8;
        r[mode_rec::COLUMN_BYTES as usize] = mode.column_bytes;
        r[mode_rec::PAGES as usize] = mode.pages;
        let mut put = |at: u16, v: u16| {
            r[usize::from(at)..usize::from(at) + 2].copy_from_slice(&v.to_le_bytes())
        };
        put(mode_rec::SEGMENT, mode.segment);
        put(mode_rec::STRIDE, mode.stride);
        put(mode_rec::PARAMS, params_base.wrapping_add(64 * i as u16));
        put(mode_rec::DAC, dac);
        put(mode_rec::DAC_ENTRIES, dac_entries);
        put(mode_rec::COLOURS, mode.colours);
        r[mode_rec::CGA_MODE_CTL as usize] = ctl;
        r[mode_rec::CGA_PALETTE as usize] = pal;
        let (p350, p200) = variants[i];
        r[usize::from(mode_rec::PARAMS_350)..usize::from(mode_rec::PARAMS_350) + 2]
            .copy_from_slice(&p350.to_le_bytes());
        r[usize::from(mode_rec::PARAMS_200)..usize::from(mode_rec::PARAMS_200) + 2]
            .copy_from_slice(&p200.to_le_bytes());
        table.extend_from_slice(&r);
    }
    table.push(0xFF);
    asm.bind("vga_mode_table")?;
    asm.db(&table)?;
    asm.bind("vga_params")?;
    asm.db(&params)?;
    for set in [DacSet::Ega, DacSet::Cga, DacSet::Mono, DacSet::Vga256] {
        asm.bind(dac_symbol(set).0)?;
        asm.db(&dac_table(set))?;
    }

    // VBE mode records: number, then the ModeInfoBlock template.
    let bank_far = asm.addr("vbe_bank_far");
    let mut vbe = Vec::new();
    for mode in vbe_modes() {
        vbe.extend_from_slice(&mode.number.to_le_bytes());
        vbe.extend_from_slice(&mode_info_template(&mode, bank_far));
    }
    vbe.extend_from_slice(&0xFFFFu16.to_le_bytes());
    asm.bind("vbe_mode_table")?;
    asm.db(&vbe)?;
    asm.bind("edid")?;
    asm.db(&build_edid())?;
    for (symbol, text) in [
        ("vbe_oem_string", "Aero VGA BIOS"),
        ("vbe_vendor_name", "Aero project"),
        ("vbe_product_name", "Aero VGA (Bochs DISPI)"),
        ("vbe_product_rev", "1.0"),
    ] {
        asm.bind(symbol)?;
        let mut bytes = text.as_bytes().to_vec();
        bytes.push(0);
        asm.db(&bytes)?;
    }

    // INT 10h AH=1Bh static functionality table.
    asm.bind("static_functionality")?;
    asm.db(&[
        0xFF, // modes 0–7
        0x60, // modes 0Dh, 0Eh
        0x0F, // modes 10h–13h
        0, 0, 0, 0,    // reserved
        0x07, // 200, 350, 400 scan lines
        8,    // character blocks in text modes
        2,    // blocks active at once
        0xFF, // misc functions (palette, cursor emulation, summing, ...)
        0x0E, // DCC, save/restore, ...
        0, 0,    // reserved
        0x00, // save pointer functions
        0,
    ])?;
    // Video save pointer table (BDA 4A8h): parameter table pointer, the rest unused.
    asm.bind("save_pointer_table")?;
    let mut spt = Vec::new();
    spt.extend_from_slice(&params_base.to_le_bytes());
    spt.extend_from_slice(&0xC000u16.to_le_bytes());
    spt.resize(7 * 4, 0);
    asm.db(&spt)?;
    asm.bind("font_alt_empty")?;
    asm.db(&[0])?;
    asm.bind("font8x8")?;
    asm.db(&fonts.f8x8)?;
    asm.bind("font8x14")?;
    asm.db(&fonts.f8x14)?;
    asm.bind("font8x16")?;
    asm.db(&fonts.f8x16)?;
    Ok(())
}
