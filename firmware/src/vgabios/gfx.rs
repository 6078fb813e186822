//! Graphics-mode drawing: scan-line addressing, glyphs (for AH=09h/0Ah/0Eh/13h in
//! graphics modes) and pixels (AH=0Ch/0Dh) for the CGA, planar and 256-colour layouts.

use iced_x86::code_asm::*;

use super::regs::write_const;
use super::vga_modes::ModeKind;
use super::{VgaBiosError, bda, frame, mode_rec as m};
use crate::asm16::Asm;

fn kind_is(asm: &mut Asm, kind: ModeKind) -> Result<(), VgaBiosError> {
    asm.cmp(byte_ptr(si + m::KIND as i32).cs(), kind as i32)?;
    Ok(())
}

pub(crate) fn emit(asm: &mut Asm) -> Result<(), VgaBiosError> {
    emit_line_addr(asm)?;
    emit_glyphs(asm)?;
    emit_pixels(asm)?;
    emit_read_char(asm)?;
    Ok(())
}

/// line_addr: AX = scan line (text: character row), SI = mode record → AX = offset in
/// the video segment, including the active page's start. Preserves other registers.
fn emit_line_addr(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("line_addr")?;
    asm.push(dx)?;
    let mut cga = asm.create_label();
    kind_is(asm, ModeKind::Cga4)?;
    asm.je(cga)?;
    kind_is(asm, ModeKind::Cga2)?;
    asm.je(cga)?;
    asm.mul(word_ptr(si + m::STRIDE as i32).cs())?;
    asm.add(ax, word_ptr(u32::from(bda::PAGE_START)))?;
    asm.pop(dx)?;
    asm.ret()?;
    // CGA: even lines in the first 8 KiB bank, odd lines in the second.
    asm.set(&mut cga)?;
    asm.push(ax)?;
    asm.shr(ax, 1)?;
    asm.mul(word_ptr(si + m::STRIDE as i32).cs())?;
    asm.pop(dx)?;
    asm.test(dl, 1)?;
    let mut even = asm.create_label();
    asm.jz(even)?;
    asm.add(ax, 0x2000)?;
    asm.set(&mut even)?;
    asm.pop(dx)?;
    asm.ret()?;
    Ok(())
}

/// gfx_chars: AL = character, BL = colour (bit 7 = XOR), CX = count, DX = row/column,
/// SI = mode record, ES = video segment. Uses the INT 43h font. Preserves all.
fn emit_glyphs(asm: &mut Asm) -> Result<(), VgaBiosError> {
    const GLYPH: i32 = -16;
    const Y0: i32 = -18;
    const X0: i32 = -20;
    const ROW: i32 = -22;

    asm.bind("gfx_chars")?;
    asm.pusha()?;
    let mut out = asm.create_label();
    asm.jcxz(out)?;
    let mut each = asm.create_label();
    asm.set(&mut each)?;
    asm.cmp(dl, byte_ptr(u32::from(bda::COLUMNS)))?;
    asm.jae(out)?;
    asm.call_sym("gfx_glyph")?;
    asm.inc(dl)?;
    asm.loop_(each)?;
    asm.set(&mut out)?;
    asm.popa()?;
    asm.ret()?;

    asm.bind("gfx_glyph")?;
    asm.pusha()?;
    asm.mov(bp, sp)?;
    asm.sub(sp, 22)?;
    // Copy the glyph to the stack so DS can stay on the BDA while drawing.
    asm.mov(cx, word_ptr(u32::from(bda::CHAR_HEIGHT)))?;
    asm.and(cx, 0x1F)?;
    asm.cmp(cx, 16)?;
    let mut height_ok = asm.create_label();
    asm.jbe(height_ok)?;
    asm.mov(cx, 16)?;
    asm.set(&mut height_ok)?;
    asm.push(dx)?;
    asm.xor(ah, ah)?;
    asm.mul(word_ptr(u32::from(bda::CHAR_HEIGHT)))?;
    asm.pop(dx)?;
    asm.push(si)?;
    asm.push(ds)?;
    asm.xor(di, di)?;
    asm.mov(ds, di)?;
    asm.lds(si, dword_ptr(0x43u32 * 4))?;
    asm.add(si, ax)?;
    asm.push(cx)?;
    let mut copy = asm.create_label();
    asm.set(&mut copy)?;
    asm.lodsb()?;
    asm.mov(byte_ptr(bp + di + GLYPH), al)?;
    asm.inc(di)?;
    asm.loop_(copy)?;
    asm.pop(cx)?;
    asm.pop(ds)?;
    asm.pop(si)?;
    // Top line and left byte of the cell.
    asm.push(dx)?;
    asm.mov(al, dh)?;
    asm.mul(cl)?;
    asm.mov(word_ptr(bp + Y0), ax)?;
    asm.pop(dx)?;
    asm.mov(al, dl)?;
    asm.mul(byte_ptr(si + m::COLUMN_BYTES as i32).cs())?;
    asm.mov(word_ptr(bp + X0), ax)?;
    kind_is(asm, ModeKind::Planar)?;
    let mut rows = asm.create_label();
    asm.jne(rows)?;
    write_const(asm, "gc_write", 5, 0x02)?;
    asm.mov(ax, 0x0003)?;
    asm.test(bl, 0x80)?;
    let mut set_op = asm.create_label();
    asm.jz(set_op)?;
    asm.mov(ah, 0x18)?;
    asm.set(&mut set_op)?;
    asm.call_sym("gc_write")?;
    asm.set(&mut rows)?;
    asm.mov(word_ptr(bp + ROW), 0)?;
    let mut row = asm.create_label();
    let mut done = asm.create_label();
    asm.set(&mut row)?;
    asm.cmp(word_ptr(bp + ROW), cx)?;
    asm.jae(done)?;
    asm.mov(ax, word_ptr(bp + Y0))?;
    asm.add(ax, word_ptr(bp + ROW))?;
    asm.call_sym("line_addr")?;
    asm.add(ax, word_ptr(bp + X0))?;
    asm.mov(di, ax)?;
    asm.push(si)?;
    asm.mov(si, word_ptr(bp + ROW))?;
    asm.mov(al, byte_ptr(bp + si + GLYPH))?;
    asm.pop(si)?;
    asm.push(cx)?;
    let mut next = asm.create_label();
    for (kind, routine) in [
        (ModeKind::Planar, "glyph_row_planar"),
        (ModeKind::Linear8, "glyph_row_linear8"),
        (ModeKind::Cga4, "glyph_row_cga4"),
        (ModeKind::Cga2, "glyph_row_cga2"),
    ] {
        let mut skip = asm.create_label();
        kind_is(asm, kind)?;
        asm.jne(skip)?;
        asm.call_sym(routine)?;
        asm.jmp(next)?;
        asm.set(&mut skip)?;
    }
    asm.set(&mut next)?;
    asm.pop(cx)?;
    asm.inc(word_ptr(bp + ROW))?;
    asm.jmp(row)?;
    asm.set(&mut done)?;
    kind_is(asm, ModeKind::Planar)?;
    let mut finish = asm.create_label();
    asm.jne(finish)?;
    write_const(asm, "gc_write", 3, 0x00)?;
    write_const(asm, "gc_write", 5, 0x00)?;
    write_const(asm, "gc_write", 8, 0xFF)?;
    asm.set(&mut finish)?;
    asm.mov(sp, bp)?;
    asm.popa()?;
    asm.ret()?;

    // Row writers: AL = glyph bits, BL = colour, ES:DI = destination. May clobber
    // AX, CX, DX.
    asm.bind("glyph_row_planar")?;
    asm.push(ax)?;
    asm.mov(ah, al)?;
    asm.mov(al, 8)?;
    asm.call_sym("gc_write")?; // bit mask = foreground pixels
    asm.pop(ax)?;
    asm.mov(ah, byte_ptr(di).es())?; // load latches
    asm.mov(byte_ptr(di).es(), bl)?;
    let mut xor_done = asm.create_label();
    asm.test(bl, 0x80)?;
    asm.jnz(xor_done)?;
    asm.not(al)?;
    asm.mov(ah, al)?;
    asm.mov(al, 8)?;
    asm.call_sym("gc_write")?; // background pixels get colour 0
    asm.mov(ah, byte_ptr(di).es())?;
    asm.mov(byte_ptr(di).es(), 0)?;
    asm.set(&mut xor_done)?;
    asm.ret()?;

    asm.bind("glyph_row_linear8")?;
    asm.mov(cx, 8)?;
    let mut px = asm.create_label();
    asm.set(&mut px)?;
    asm.xor(ah, ah)?;
    asm.shl(al, 1)?;
    let mut bg = asm.create_label();
    asm.jnc(bg)?;
    asm.mov(ah, bl)?;
    asm.set(&mut bg)?;
    asm.mov(byte_ptr(di).es(), ah)?;
    asm.inc(di)?;
    asm.loop_(px)?;
    asm.ret()?;

    asm.bind("glyph_row_cga4")?;
    asm.mov(cx, 8)?;
    asm.xor(dx, dx)?;
    asm.mov(ah, bl)?;
    asm.and(ah, 3)?;
    let mut bit = asm.create_label();
    asm.set(&mut bit)?;
    asm.shl(dx, 2)?;
    asm.shl(al, 1)?;
    let mut clear = asm.create_label();
    asm.jnc(clear)?;
    asm.or(dl, ah)?;
    asm.set(&mut clear)?;
    asm.loop_(bit)?;
    let mut xor4 = asm.create_label();
    asm.test(bl, 0x80)?;
    asm.jnz(xor4)?;
    asm.mov(byte_ptr(di).es(), dh)?;
    asm.mov(byte_ptr(di + 1).es(), dl)?;
    asm.ret()?;
    asm.set(&mut xor4)?;
    asm.xor(byte_ptr(di).es(), dh)?;
    asm.xor(byte_ptr(di + 1).es(), dl)?;
    asm.ret()?;

    asm.bind("glyph_row_cga2")?;
    asm.test(bl, 1)?;
    let mut fg = asm.create_label();
    asm.jnz(fg)?;
    asm.xor(al, al)?;
    asm.set(&mut fg)?;
    asm.test(bl, 0x80)?;
    let mut xor2 = asm.create_label();
    asm.jnz(xor2)?;
    asm.mov(byte_ptr(di).es(), al)?;
    asm.ret()?;
    asm.set(&mut xor2)?;
    asm.xor(byte_ptr(di).es(), al)?;
    asm.ret()?;
    Ok(())
}

/// AH=0Ch (write pixel: AL = colour, bit 7 = XOR) and AH=0Dh (read pixel → AL);
/// CX = column, DX = row, on the active page.
fn emit_pixels(asm: &mut Asm) -> Result<(), VgaBiosError> {
    // pixel_addr: CX = x, DX = y, SI = record → ES:DI = byte, CL = bit shift of the
    // pixel's lowest bit, AH = pixel mask (unshifted: 1, 3 or FFh). Carry set in text
    // modes. Keeps AL.
    asm.bind("pixel_addr")?;
    asm.call_sym("current_mode")?;
    let mut fail = asm.create_label();
    asm.jc(fail)?;
    kind_is(asm, ModeKind::Text)?;
    asm.je(fail)?;
    asm.push(ax)?;
    asm.mov(ax, word_ptr(si + m::SEGMENT as i32).cs())?;
    asm.mov(es, ax)?;
    asm.mov(ax, dx)?;
    asm.call_sym("line_addr")?;
    asm.mov(di, ax)?;
    asm.pop(ax)?;
    let mut not_linear = asm.create_label();
    kind_is(asm, ModeKind::Linear8)?;
    asm.jne(not_linear)?;
    asm.add(di, cx)?;
    asm.xor(cl, cl)?;
    asm.mov(ah, 0xFF)?;
    asm.clc()?;
    asm.ret()?;
    asm.set(&mut not_linear)?;
    asm.mov(bx, cx)?;
    let mut not_cga4 = asm.create_label();
    kind_is(asm, ModeKind::Cga4)?;
    asm.jne(not_cga4)?;
    asm.shr(bx, 2)?;
    asm.add(di, bx)?;
    asm.and(cl, 3)?;
    asm.xor(cl, 3)?;
    asm.shl(cl, 1)?;
    asm.mov(ah, 3)?;
    asm.clc()?;
    asm.ret()?;
    asm.set(&mut not_cga4)?;
    // Planar and CGA 2-colour: one bit per pixel per byte (plane).
    asm.shr(bx, 3)?;
    asm.add(di, bx)?;
    asm.and(cl, 7)?;
    asm.xor(cl, 7)?;
    asm.mov(ah, 1)?;
    asm.clc()?;
    asm.ret()?;
    asm.set(&mut fail)?;
    asm.stc()?;
    asm.ret()?;

    asm.bind("int10_write_pixel")?;
    asm.call_sym("pixel_addr")?;
    let mut out = asm.create_label();
    asm.jc(out)?;
    let mut not_planar = asm.create_label();
    kind_is(asm, ModeKind::Planar)?;
    asm.jne(not_planar)?;
    asm.mov(bl, al)?;
    asm.mov(ah, 1)?;
    asm.shl(ah, cl)?;
    asm.mov(al, 8)?;
    asm.call_sym("gc_write")?;
    write_const(asm, "gc_write", 5, 0x02)?;
    asm.mov(ax, 0x0003)?;
    asm.test(bl, 0x80)?;
    let mut op = asm.create_label();
    asm.jz(op)?;
    asm.mov(ah, 0x18)?;
    asm.set(&mut op)?;
    asm.call_sym("gc_write")?;
    asm.mov(al, byte_ptr(di).es())?;
    asm.mov(byte_ptr(di).es(), bl)?;
    write_const(asm, "gc_write", 3, 0x00)?;
    write_const(asm, "gc_write", 5, 0x00)?;
    write_const(asm, "gc_write", 8, 0xFF)?;
    asm.ret()?;
    asm.set(&mut not_planar)?;
    let mut not_linear = asm.create_label();
    kind_is(asm, ModeKind::Linear8)?;
    asm.jne(not_linear)?;
    asm.mov(byte_ptr(di).es(), al)?;
    asm.ret()?;
    asm.set(&mut not_linear)?;
    // CGA: read-modify-write of the pixel's bits.
    asm.mov(bl, al)?;
    asm.and(al, ah)?;
    asm.shl(al, cl)?;
    asm.shl(ah, cl)?;
    asm.test(bl, 0x80)?;
    let mut xor = asm.create_label();
    asm.jnz(xor)?;
    asm.not(ah)?;
    asm.and(byte_ptr(di).es(), ah)?;
    asm.or(byte_ptr(di).es(), al)?;
    asm.ret()?;
    asm.set(&mut xor)?;
    asm.xor(byte_ptr(di).es(), al)?;
    asm.set(&mut out)?;
    asm.ret()?;

    asm.bind("int10_read_pixel")?;
    asm.call_sym("pixel_addr")?;
    let mut out = asm.create_label();
    asm.jc(out)?;
    let mut not_planar = asm.create_label();
    kind_is(asm, ModeKind::Planar)?;
    asm.jne(not_planar)?;
    // Gather the pixel's bit from planes 3..0.
    asm.xor(bl, bl)?;
    asm.mov(bh, 3)?;
    let mut plane = asm.create_label();
    asm.set(&mut plane)?;
    asm.mov(al, 4)?;
    asm.mov(ah, bh)?;
    asm.call_sym("gc_write")?;
    asm.mov(al, byte_ptr(di).es())?;
    asm.shr(al, cl)?;
    asm.and(al, 1)?;
    asm.shl(bl, 1)?;
    asm.or(bl, al)?;
    asm.dec(bh)?;
    asm.jns(plane)?;
    write_const(asm, "gc_write", 4, 0x00)?;
    asm.mov(byte_ptr(bp + frame::AL as i32), bl)?;
    asm.ret()?;
    asm.set(&mut not_planar)?;
    asm.mov(al, byte_ptr(di).es())?;
    asm.shr(al, cl)?;
    asm.and(al, ah)?;
    asm.mov(byte_ptr(bp + frame::AL as i32), al)?;
    asm.set(&mut out)?;
    asm.ret()?;
    Ok(())
}

/// gfx_read_char: DX = row/column, SI = mode record, ES = video segment → AL = the
/// character whose INT 43h glyph matches the cell's foreground pixels (0 if none).
fn emit_read_char(asm: &mut Asm) -> Result<(), VgaBiosError> {
    const PATTERN: i32 = -16;
    const Y0: i32 = -18;
    const ROW: i32 = -20;
    const HEIGHT: i32 = -22;
    asm.bind("gfx_read_char")?;
    asm.push(bp)?;
    asm.mov(bp, sp)?;
    asm.sub(sp, 22)?;
    asm.mov(cx, word_ptr(u32::from(bda::CHAR_HEIGHT)))?;
    asm.and(cx, 0x1F)?;
    asm.cmp(cx, 16)?;
    let mut height_ok = asm.create_label();
    asm.jbe(height_ok)?;
    asm.mov(cx, 16)?;
    asm.set(&mut height_ok)?;
    asm.mov(word_ptr(bp + HEIGHT), cx)?;
    asm.mov(al, dh)?;
    asm.mul(cl)?;
    asm.mov(word_ptr(bp + Y0), ax)?;
    asm.mov(al, dl)?;
    asm.mul(byte_ptr(si + m::COLUMN_BYTES as i32).cs())?;
    asm.mov(bx, ax)?; // BX = byte offset of the cell's left edge
    kind_is(asm, ModeKind::Planar)?;
    let mut rows = asm.create_label();
    asm.jne(rows)?;
    // Read mode 1 against colour 0 on all planes: set bits = background pixels.
    write_const(asm, "gc_write", 2, 0x00)?;
    write_const(asm, "gc_write", 7, 0x0F)?;
    write_const(asm, "gc_write", 5, 0x08)?;
    asm.set(&mut rows)?;
    asm.mov(word_ptr(bp + ROW), 0)?;
    let mut row = asm.create_label();
    let mut rows_done = asm.create_label();
    asm.set(&mut row)?;
    asm.mov(ax, word_ptr(bp + ROW))?;
    asm.cmp(ax, word_ptr(bp + HEIGHT))?;
    asm.jae(rows_done)?;
    asm.add(ax, word_ptr(bp + Y0))?;
    asm.call_sym("line_addr")?;
    asm.add(ax, bx)?;
    asm.mov(di, ax)?;
    // AL = the row's foreground bits, one per pixel.
    let mut stored = asm.create_label();
    let mut not_planar = asm.create_label();
    kind_is(asm, ModeKind::Planar)?;
    asm.jne(not_planar)?;
    asm.mov(al, byte_ptr(di).es())?;
    asm.not(al)?;
    asm.jmp(stored)?;
    asm.set(&mut not_planar)?;
    let mut not_cga2 = asm.create_label();
    kind_is(asm, ModeKind::Cga2)?;
    asm.jne(not_cga2)?;
    asm.mov(al, byte_ptr(di).es())?;
    asm.jmp(stored)?;
    asm.set(&mut not_cga2)?;
    // Linear8: 8 bytes; CGA4: 2 bytes of 2-bit pixels. Pixel != 0 → bit set.
    asm.xor(ax, ax)?;
    asm.mov(cx, 8)?;
    let mut px = asm.create_label();
    asm.set(&mut px)?;
    asm.shl(ah, 1)?;
    kind_is(asm, ModeKind::Linear8)?;
    let mut cga4 = asm.create_label();
    asm.jne(cga4)?;
    asm.mov(dl, byte_ptr(di).es())?;
    asm.inc(di)?;
    let mut next_px = asm.create_label();
    asm.test(dl, dl)?;
    asm.je(next_px)?;
    asm.or(ah, 1)?;
    asm.jmp(next_px)?;
    asm.set(&mut cga4)?;
    // Pixel index 8 - CX: byte (7 - (CX-1)) / 4, bits from the top.
    asm.push(cx)?;
    asm.mov(dx, 8)?;
    asm.sub(dx, cx)?; // pixel 0..7
    asm.push(bx)?;
    asm.mov(bx, dx)?;
    asm.shr(bx, 2)?;
    asm.mov(al, byte_ptr(bx + di).es())?;
    asm.pop(bx)?;
    asm.and(dl, 3)?;
    asm.mov(cl, dl)?;
    asm.shl(cl, 1)?;
    asm.shl(al, cl)?;
    asm.pop(cx)?;
    asm.test(al, 0xC0)?;
    asm.je(next_px)?;
    asm.or(ah, 1)?;
    asm.set(&mut next_px)?;
    asm.loop_(px)?;
    asm.mov(al, ah)?;
    asm.set(&mut stored)?;
    asm.push(si)?;
    asm.mov(si, word_ptr(bp + ROW))?;
    asm.mov(byte_ptr(bp + si + PATTERN), al)?;
    asm.pop(si)?;
    asm.inc(word_ptr(bp + ROW))?;
    asm.jmp(row)?;
    asm.set(&mut rows_done)?;
    kind_is(asm, ModeKind::Planar)?;
    let mut compare = asm.create_label();
    asm.jne(compare)?;
    write_const(asm, "gc_write", 5, 0x00)?;
    write_const(asm, "gc_write", 7, 0x00)?;
    asm.set(&mut compare)?;
    // Search the INT 43h font for the pattern.
    asm.push(ds)?;
    asm.push(es)?;
    asm.xor(ax, ax)?;
    asm.mov(ds, ax)?;
    asm.lds(si, dword_ptr(0x43u32 * 4))?;
    asm.push(ss)?;
    asm.pop(es)?;
    asm.xor(bx, bx)?; // candidate character
    let mut candidate = asm.create_label();
    let mut found = asm.create_label();
    let mut none = asm.create_label();
    asm.set(&mut candidate)?;
    asm.push(si)?;
    asm.lea(di, word_ptr(bp + PATTERN))?;
    asm.mov(cx, word_ptr(bp + HEIGHT))?;
    asm.repe().cmpsb()?;
    asm.pop(si)?;
    asm.je(found)?;
    asm.add(si, word_ptr(bp + HEIGHT))?;
    asm.inc(bx)?;
    asm.cmp(bx, 256)?;
    asm.jb(candidate)?;
    asm.set(&mut none)?;
    asm.xor(bx, bx)?;
    asm.set(&mut found)?;
    asm.pop(es)?;
    asm.pop(ds)?;
    asm.mov(ax, bx)?;
    asm.xor(ah, ah)?;
    asm.mov(sp, bp)?;
    asm.pop(bp)?;
    asm.ret()?;
    Ok(())
}
