//! INT 10h AH=00h (set VGA mode) and the routines it is built from: mode lookup,
//! register loading, DAC loading and font loading into plane 2.

use iced_x86::code_asm::*;

use super::regs::{DAC_DATA, DAC_MASK, DAC_WRITE_INDEX, MISC_READ, MISC_WRITE, dispi, write_const};
use super::vga_modes::{
    ModeKind, P_ATTR, P_CHAR_HEIGHT, P_COLUMNS, P_CRTC, P_GC, P_MISC, P_PAGE_SIZE, P_ROWS, P_SEQ,
};
use super::{VgaBiosError, bda, frame, mode_rec as m};
use crate::asm16::Asm;

fn cs_byte(base: AsmMemoryOperand) -> AsmMemoryOperand {
    byte_ptr(base).cs()
}

pub(crate) fn emit(asm: &mut Asm) -> Result<(), VgaBiosError> {
    emit_find_mode(asm)?;
    emit_load_regs(asm)?;
    emit_load_dac(asm)?;
    emit_load_font(asm)?;
    emit_set_mode(asm)?;
    Ok(())
}

/// find_mode: AL = mode number → SI = mode record, CF clear; CF set if unknown.
/// current_mode: the same for the mode in the BDA. Both preserve other registers.
fn emit_find_mode(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("current_mode")?;
    asm.push(ax)?;
    asm.mov(al, byte_ptr(bda::MODE as u32))?;
    asm.and(al, 0x7F)?;
    asm.call_sym("find_mode")?;
    asm.pop(ax)?;
    asm.ret()?;

    asm.bind("find_mode")?;
    let table = asm.addr("vga_mode_table");
    asm.mov(si, table as i32)?;
    let mut next = asm.create_label();
    let mut found = asm.create_label();
    asm.set(&mut next)?;
    asm.cmp(cs_byte(si + m::NUMBER as i32), 0xFF)?;
    let mut missing = asm.create_label();
    asm.je(missing)?;
    asm.cmp(cs_byte(si + m::NUMBER as i32), al)?;
    asm.je(found)?;
    asm.add(si, m::LEN as i32)?;
    asm.jmp(next)?;
    asm.set(&mut missing)?;
    asm.stc()?;
    asm.ret()?;
    asm.set(&mut found)?;
    asm.clc()?;
    asm.ret()?;
    Ok(())
}

/// load_regs: ES:BX = 64-byte parameter table. Programs misc, sequencer, CRTC, attribute
/// and graphics registers. The BDA CRTC port must already match the misc value.
fn emit_load_regs(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("load_regs")?;
    asm.push(di)?;
    write_const(asm, "seq_write", 0, 0x01)?; // synchronous reset while clocks change
    indexed_loop(asm, "seq_write", P_SEQ, 1, 4)?;
    asm.mov(dx, MISC_WRITE)?;
    asm.mov(al, byte_ptr(bx + P_MISC as i32).es())?;
    asm.out(dx, al)?;
    write_const(asm, "seq_write", 0, 0x03)?;
    // CRTC registers 0–7 are write-protected by bit 7 of register 11h.
    asm.mov(ah, byte_ptr(bx + (P_CRTC + 0x11) as i32).es())?;
    asm.and(ah, 0x7F)?;
    asm.mov(al, 0x11)?;
    asm.call_sym("crtc_write")?;
    indexed_loop(asm, "crtc_write", P_CRTC, 0, 25)?;
    indexed_loop(asm, "attr_write", P_ATTR, 0, 20)?;
    indexed_loop(asm, "gc_write", P_GC, 0, 9)?;
    asm.pop(di)?;
    asm.ret()?;
    Ok(())
}

/// Writes `count` registers starting at index `first` from `cs:[bx + table_offset]`.
fn indexed_loop(
    asm: &mut Asm,
    routine: &'static str,
    table_offset: u16,
    first: u8,
    count: u8,
) -> Result<(), VgaBiosError> {
    asm.xor(di, di)?;
    let mut top = asm.create_label();
    asm.set(&mut top)?;
    asm.mov(ax, di)?;
    if first != 0 {
        asm.add(al, i32::from(first))?;
    }
    asm.mov(ah, byte_ptr(bx + di + table_offset as i32).es())?;
    asm.call_sym(routine)?;
    asm.inc(di)?;
    asm.cmp(di, i32::from(count))?;
    asm.jb(top)?;
    Ok(())
}

/// load_dac: SI = mode record. Loads the mode's default DAC contents (entries beyond
/// the table are set to black) and opens the pixel mask.
fn emit_load_dac(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("load_dac")?;
    asm.push(si)?;
    asm.mov(dx, DAC_MASK)?;
    asm.mov(al, 0xFF)?;
    asm.out(dx, al)?;
    asm.mov(dx, DAC_WRITE_INDEX)?;
    asm.xor(al, al)?;
    asm.out(dx, al)?;
    asm.mov(dx, DAC_DATA)?;
    asm.mov(cx, word_ptr(si + m::DAC_ENTRIES as i32).cs())?;
    asm.mov(bx, 256)?;
    asm.sub(bx, cx)?; // entries left to blank
    asm.mov(ax, cx)?;
    asm.add(cx, cx)?;
    asm.add(cx, ax)?;
    asm.mov(si, word_ptr(si + m::DAC as i32).cs())?;
    let mut copy = asm.create_label();
    asm.set(&mut copy)?;
    asm.mov(al, cs_byte(si.into()))?;
    asm.out(dx, al)?;
    asm.inc(si)?;
    asm.loop_(copy)?;
    asm.mov(cx, bx)?;
    asm.add(cx, bx)?;
    asm.add(cx, bx)?;
    let mut done = asm.create_label();
    asm.jcxz(done)?;
    asm.xor(al, al)?;
    let mut blank = asm.create_label();
    asm.set(&mut blank)?;
    asm.out(dx, al)?;
    asm.loop_(blank)?;
    asm.set(&mut done)?;
    asm.pop(si)?;
    asm.ret()?;
    Ok(())
}

/// load_font: ES:DI = glyphs, CX = glyph count, DX = first character, BH = bytes per
/// glyph, BL = character map (0–7). Copies into plane 2 (32-byte slots) and zero-fills
/// each slot's remaining rows. Preserves DS; clobbers AX, CX, DX, SI, DI.
fn emit_load_font(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("load_font")?;
    asm.push(es)?;
    asm.push(ds)?;
    asm.push(bx)?;
    // Plane 2 only, linear addressing at A0000.
    write_const(asm, "seq_write", 2, 0x04)?;
    write_const(asm, "seq_write", 4, 0x07)?;
    write_const(asm, "gc_write", 4, 0x02)?;
    write_const(asm, "gc_write", 5, 0x00)?;
    write_const(asm, "gc_write", 6, 0x04)?;
    // Destination offset: maps 0–3 at 16 KiB steps, maps 4–7 at +8 KiB.
    asm.mov(al, bl)?;
    asm.and(ax, 0x03)?;
    asm.shl(ax, 14)?;
    asm.test(bl, 0x04)?;
    let mut low_map = asm.create_label();
    asm.jz(low_map)?;
    asm.or(ax, 0x2000)?;
    asm.set(&mut low_map)?;
    asm.shl(dx, 5)?;
    asm.add(ax, dx)?;
    asm.push(es)?;
    asm.pop(ds)?;
    asm.mov(si, di)?;
    asm.mov(di, ax)?;
    asm.mov(ax, 0xA000)?;
    asm.mov(es, ax)?;
    let done = asm.l("load_font_done");
    asm.jcxz(done)?;
    let mut glyph = asm.create_label();
    asm.set(&mut glyph)?;
    asm.push(cx)?;
    asm.movzx(cx, bh)?;
    asm.rep().movsb()?;
    asm.mov(cl, 32)?;
    asm.sub(cl, bh)?;
    asm.xor(al, al)?;
    asm.rep().stosb()?;
    asm.pop(cx)?;
    asm.loop_(glyph)?;
    asm.bind("load_font_done")?;
    // Back to odd/even text addressing; the memory map depends on colour/mono.
    write_const(asm, "seq_write", 2, 0x03)?;
    write_const(asm, "seq_write", 4, 0x02)?;
    write_const(asm, "gc_write", 4, 0x00)?;
    write_const(asm, "gc_write", 5, 0x10)?;
    asm.mov(dx, MISC_READ)?;
    asm.in_(al, dx)?;
    asm.mov(ah, 0x0E)?;
    asm.test(al, 0x01)?;
    let mut colour = asm.create_label();
    asm.jnz(colour)?;
    asm.mov(ah, 0x0A)?;
    asm.set(&mut colour)?;
    asm.mov(al, 6)?;
    asm.call_sym("gc_write")?;
    asm.pop(bx)?;
    asm.pop(ds)?;
    asm.pop(es)?;
    asm.ret()?;
    Ok(())
}

/// Points INT 43h at the ROM font matching character height AL (8, 14 or 16).
fn emit_set_int43_for_height(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("set_int43_for_height")?;
    asm.push(ds)?;
    let f8 = asm.addr("font8x8");
    let f14 = asm.addr("font8x14");
    let f16 = asm.addr("font8x16");
    asm.mov(bx, f8 as i32)?;
    asm.cmp(al, 14)?;
    let mut store = asm.create_label();
    asm.jb(store)?;
    asm.mov(bx, f14 as i32)?;
    asm.je(store)?;
    asm.mov(bx, f16 as i32)?;
    asm.set(&mut store)?;
    asm.xor(ax, ax)?;
    asm.mov(ds, ax)?;
    asm.mov(word_ptr(0x43u32 * 4), bx)?;
    asm.mov(word_ptr(0x43u32 * 4 + 2), cs)?;
    asm.pop(ds)?;
    asm.ret()?;
    Ok(())
}

/// int10_set_mode (AH=00h): AL = mode, bit 7 = keep video memory.
/// set_mode: the same, callable from other handlers; CF set if the mode is unknown.
fn emit_set_mode(asm: &mut Asm) -> Result<(), VgaBiosError> {
    emit_set_int43_for_height(asm)?;
    asm.bind("set_mode")?;
    asm.mov(ah, al)?;
    asm.and(al, 0x7F)?;
    asm.call_sym("find_mode")?;
    let mut known = asm.create_label();
    asm.jnc(known)?;
    asm.ret()?;
    asm.set(&mut known)?;
    asm.and(byte_ptr(bda::VIDEO_CTL as u32), 0x7F)?;
    asm.and(ah, 0x80)?;
    asm.or(byte_ptr(bda::VIDEO_CTL as u32), ah)?;

    // Leave any VBE mode: the legacy VGA pipeline takes over again.
    asm.mov(bx, dispi::ENABLE)?;
    asm.xor(ax, ax)?;
    asm.call_sym("dispi_write")?;

    // Parameter table: text modes honour the scan-line choice of AH=12h BL=30h
    // (BDA 0x489 bit 7 = 200 lines, bit 4 clear = 350 lines).
    asm.mov(bx, word_ptr(si + m::PARAMS as i32).cs())?;
    let mut params_chosen = asm.create_label();
    asm.test(byte_ptr(bda::VGA_FLAGS as u32), 0x80)?;
    let mut not_200 = asm.create_label();
    asm.jz(not_200)?;
    asm.cmp(word_ptr(si + m::PARAMS_200 as i32).cs(), 0)?;
    asm.je(params_chosen)?;
    asm.mov(bx, word_ptr(si + m::PARAMS_200 as i32).cs())?;
    asm.jmp(params_chosen)?;
    asm.set(&mut not_200)?;
    asm.test(byte_ptr(bda::VGA_FLAGS as u32), 0x10)?;
    asm.jnz(params_chosen)?;
    asm.cmp(word_ptr(si + m::PARAMS_350 as i32).cs(), 0)?;
    asm.je(params_chosen)?;
    asm.mov(bx, word_ptr(si + m::PARAMS_350 as i32).cs())?;
    asm.set(&mut params_chosen)?;
    asm.push(bx)?; // kept for the font choice below

    // BDA video state.
    asm.mov(al, cs_byte(si + m::NUMBER as i32))?;
    asm.mov(byte_ptr(bda::MODE as u32), al)?;
    asm.movzx(ax, cs_byte(bx + P_COLUMNS as i32))?;
    asm.mov(word_ptr(bda::COLUMNS as u32), ax)?;
    asm.mov(ax, word_ptr(bx + P_PAGE_SIZE as i32).cs())?;
    asm.mov(word_ptr(bda::PAGE_SIZE as u32), ax)?;
    asm.xor(ax, ax)?;
    asm.mov(word_ptr(bda::PAGE_START as u32), ax)?;
    asm.mov(byte_ptr(bda::ACTIVE_PAGE as u32), al)?;
    for page in 0..8u32 {
        asm.mov(word_ptr(bda::CURSOR_POS as u32 + 2 * page), ax)?;
    }
    asm.mov(al, cs_byte(bx + P_ROWS as i32))?;
    asm.mov(byte_ptr(bda::ROWS_MINUS_1 as u32), al)?;
    asm.movzx(ax, cs_byte(bx + P_CHAR_HEIGHT as i32))?;
    asm.mov(word_ptr(bda::CHAR_HEIGHT as u32), ax)?;
    asm.mov(ax, 0x3D4)?;
    asm.test(cs_byte(bx + P_MISC as i32), 0x01)?;
    let mut colour = asm.create_label();
    asm.jnz(colour)?;
    asm.mov(ax, 0x3B4)?;
    asm.set(&mut colour)?;
    asm.mov(word_ptr(bda::CRTC_PORT as u32), ax)?;
    // The BDA cursor type is what AH=03h returns: the CGA-style request 0607h that the
    // colour text modes' tables scale to their cell (as IBM's and SeaBIOS's VGA BIOS
    // report it); mode 7 and the graphics modes keep their table's CRTC values.
    asm.mov(al, cs_byte(bx + (P_CRTC + 0x0B) as i32))?;
    asm.mov(ah, cs_byte(bx + (P_CRTC + 0x0A) as i32))?;
    let mut shape_done = asm.create_label();
    asm.cmp(byte_ptr(si + m::KIND as i32).cs(), ModeKind::Text as i32)?;
    asm.jne(shape_done)?;
    asm.test(cs_byte(bx + P_MISC as i32), 0x01)?;
    asm.jz(shape_done)?;
    asm.mov(ax, 0x0607)?;
    asm.set(&mut shape_done)?;
    asm.mov(word_ptr(bda::CURSOR_SHAPE as u32), ax)?;
    asm.mov(al, cs_byte(si + m::CGA_MODE_CTL as i32))?;
    asm.mov(byte_ptr(bda::CGA_MODE_CTL as u32), al)?;
    asm.mov(al, cs_byte(si + m::CGA_PALETTE as i32))?;
    asm.mov(byte_ptr(bda::CGA_PALETTE as u32), al)?;

    asm.push(es)?;
    asm.push(cs)?;
    asm.pop(es)?;
    asm.call_sym("load_regs")?;
    asm.pop(es)?;
    asm.test(byte_ptr(bda::VGA_FLAGS as u32), 0x08)?;
    let mut no_dac = asm.create_label();
    asm.jnz(no_dac)?;
    asm.call_sym("load_dac")?;
    asm.set(&mut no_dac)?;

    asm.mov(ax, word_ptr(si + m::SEGMENT as i32).cs())?;
    asm.mov(es, ax)?;
    asm.cmp(cs_byte(si + m::KIND as i32), ModeKind::Text as i32)?;
    let mut graphics = asm.create_label();
    asm.jne(graphics)?;

    // Text: the font matching the cell height into map 0, then blank cells.
    asm.pop(bx)?;
    asm.push(es)?;
    asm.push(si)?;
    asm.push(cs)?;
    asm.pop(es)?;
    let f8 = asm.addr("font8x8");
    let f14 = asm.addr("font8x14");
    let f16 = asm.addr("font8x16");
    asm.mov(bh, cs_byte(bx + P_CHAR_HEIGHT as i32))?;
    asm.mov(di, f16 as i32)?;
    let mut font_chosen = asm.create_label();
    asm.cmp(bh, 14)?;
    asm.ja(font_chosen)?;
    asm.mov(di, f14 as i32)?;
    asm.je(font_chosen)?;
    asm.mov(di, f8 as i32)?;
    asm.set(&mut font_chosen)?;
    asm.mov(cx, 256)?;
    asm.xor(dx, dx)?;
    asm.xor(bl, bl)?;
    asm.call_sym("load_font")?;
    asm.pop(si)?;
    asm.pop(es)?;
    asm.test(byte_ptr(bda::VIDEO_CTL as u32), 0x80)?;
    let mut done = asm.create_label();
    asm.jnz(done)?;
    asm.xor(di, di)?;
    asm.mov(cx, 0x4000)?;
    asm.mov(ax, 0x0720)?;
    asm.rep().stosw()?;
    asm.jmp(done)?;

    asm.set(&mut graphics)?;
    asm.pop(bx)?;
    asm.mov(al, byte_ptr(bda::CHAR_HEIGHT as u32))?;
    asm.call_sym("set_int43_for_height")?;
    asm.test(byte_ptr(bda::VIDEO_CTL as u32), 0x80)?;
    asm.jnz(done)?;
    // 64 KiB at A000 covers every page of the planar modes and mode 13h; B800 holds
    // the 16 KiB CGA buffer. Planar modes are loaded with map mask 0Fh and write
    // mode 0, so one pass clears all planes.
    asm.xor(di, di)?;
    asm.xor(ax, ax)?;
    asm.mov(cx, 0x8000)?;
    asm.cmp(word_ptr(si + m::SEGMENT as i32).cs(), 0xA000)?;
    let mut clear = asm.create_label();
    asm.je(clear)?;
    asm.mov(cx, 0x2000)?;
    asm.set(&mut clear)?;
    asm.rep().stosw()?;

    asm.set(&mut done)?;
    // Cursor at the top-left of page 0.
    asm.call_sym("cursor_hw_update")?;
    asm.clc()?;
    asm.ret()?;

    asm.bind("int10_set_mode")?;
    asm.call_sym("set_mode")?;
    let mut out = asm.create_label();
    asm.jc(out)?;
    // AL returns the CGA mode-control style byte IBM BIOSes report.
    asm.mov(al, 0x20)?;
    asm.mov(ah, byte_ptr(bda::MODE as u32))?;
    let mut store = asm.create_label();
    asm.cmp(ah, 7)?;
    asm.ja(store)?;
    asm.mov(al, 0x30)?;
    asm.cmp(ah, 6)?;
    asm.jne(store)?;
    asm.mov(al, 0x3F)?;
    asm.set(&mut store)?;
    asm.mov(byte_ptr(bp + frame::AL as i32), al)?;
    asm.set(&mut out)?;
    asm.ret()?;
    Ok(())
}
