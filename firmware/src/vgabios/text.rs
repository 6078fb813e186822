//! Cursor, page, scrolling and character output: INT 10h AH=01h–03h, 05h–0Ah, 0Eh, 13h.
//!
//! Text modes write character/attribute cells directly; graphics modes draw glyphs
//! through `gfx`. Scrolling works on "lines": a character row in text modes and a pixel
//! row in graphics modes, so one routine serves both.

use iced_x86::code_asm::*;

use super::vga_modes::ModeKind;
use super::{VgaBiosError, bda, frame, mode_rec as m};
use crate::asm16::Asm;

fn bda_b(offset: u16) -> AsmMemoryOperand {
    byte_ptr(u32::from(offset))
}
fn bda_w(offset: u16) -> AsmMemoryOperand {
    word_ptr(u32::from(offset))
}
fn kind_is(asm: &mut Asm, kind: ModeKind) -> Result<(), VgaBiosError> {
    asm.cmp(byte_ptr(si + m::KIND as i32).cs(), kind as i32)?;
    Ok(())
}
/// Loads ES with the current mode's video segment (SI = mode record). Keeps AX.
fn load_video_segment(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.push(ax)?;
    asm.mov(ax, word_ptr(si + m::SEGMENT as i32).cs())?;
    asm.mov(es, ax)?;
    asm.pop(ax)?;
    Ok(())
}
/// SI = address of page BH's cursor slot in the BDA.
fn cursor_slot(asm: &mut Asm, reg: AsmRegister16) -> Result<(), VgaBiosError> {
    asm.movzx(reg, bh)?;
    asm.and(reg, 7)?;
    asm.shl(reg, 1)?;
    asm.add(reg, bda::CURSOR_POS as i32)?;
    Ok(())
}

pub(crate) fn emit(asm: &mut Asm) -> Result<(), VgaBiosError> {
    emit_cursor(asm)?;
    emit_scroll(asm)?;
    emit_char_output(asm)?;
    emit_teletype(asm)?;
    Ok(())
}

fn emit_cursor(asm: &mut Asm) -> Result<(), VgaBiosError> {
    // cursor_hw_update: CRTC cursor location from the active page's BDA cursor.
    asm.bind("cursor_hw_update")?;
    asm.pusha()?;
    asm.movzx(bx, bda_b(bda::ACTIVE_PAGE))?;
    asm.and(bx, 7)?;
    asm.shl(bx, 1)?;
    asm.mov(dx, word_ptr(bx + bda::CURSOR_POS as i32))?;
    asm.mov(al, dh)?;
    asm.mul(bda_b(bda::COLUMNS))?;
    asm.xor(dh, dh)?;
    asm.add(ax, dx)?;
    asm.mov(bx, bda_w(bda::PAGE_START))?;
    asm.shr(bx, 1)?;
    asm.add(bx, ax)?;
    asm.mov(al, 0x0E)?;
    asm.mov(ah, bh)?;
    asm.call_sym("crtc_write")?;
    asm.mov(al, 0x0F)?;
    asm.mov(ah, bl)?;
    asm.call_sym("crtc_write")?;
    asm.popa()?;
    asm.ret()?;

    // AH=01h: CH = start line (bit 5 hides), CL = end line. CGA-style shapes (lines
    // 0–7) are scaled to the character height unless emulation is off (0x487 bit 0).
    asm.bind("int10_cursor_shape")?;
    asm.mov(bda_w(bda::CURSOR_SHAPE), cx)?;
    let mut program = asm.create_label();
    asm.test(bda_b(bda::VIDEO_CTL), 0x01)?;
    asm.jnz(program)?;
    asm.test(ch, 0x60)?;
    asm.jnz(program)?;
    asm.cmp(ch, 8)?;
    asm.jae(program)?;
    asm.cmp(cl, 8)?;
    asm.jae(program)?;
    asm.mov(bl, bda_b(bda::CHAR_HEIGHT))?;
    asm.cmp(bl, 8)?;
    asm.jbe(program)?;
    asm.mov(al, ch)?;
    asm.mul(bl)?;
    asm.shr(ax, 3)?;
    asm.mov(ch, al)?;
    asm.mov(al, cl)?;
    asm.inc(al)?;
    asm.mul(bl)?;
    asm.shr(ax, 3)?;
    asm.dec(al)?;
    asm.mov(cl, al)?;
    asm.set(&mut program)?;
    asm.mov(al, 0x0A)?;
    asm.mov(ah, ch)?;
    asm.call_sym("crtc_write")?;
    asm.mov(al, 0x0B)?;
    asm.mov(ah, cl)?;
    asm.call_sym("crtc_write")?;
    asm.ret()?;

    // AH=02h: BH = page, DH/DL = row/column.
    asm.bind("int10_set_cursor")?;
    cursor_slot(asm, bx)?;
    asm.mov(word_ptr(bx), dx)?;
    asm.call_sym("cursor_hw_update")?;
    asm.ret()?;

    // AH=03h: → DX = position of page BH, CX = cursor shape.
    asm.bind("int10_get_cursor")?;
    cursor_slot(asm, bx)?;
    asm.mov(ax, word_ptr(bx))?;
    asm.mov(word_ptr(bp + frame::DX as i32), ax)?;
    asm.mov(ax, bda_w(bda::CURSOR_SHAPE))?;
    asm.mov(word_ptr(bp + frame::CX as i32), ax)?;
    asm.ret()?;

    // AH=05h: AL = page to display.
    asm.bind("int10_set_page")?;
    asm.call_sym("current_mode")?;
    let mut out = asm.create_label();
    asm.jc(out)?;
    asm.cmp(al, byte_ptr(si + m::PAGES as i32).cs())?;
    asm.jae(out)?;
    asm.mov(bda_b(bda::ACTIVE_PAGE), al)?;
    asm.xor(ah, ah)?;
    asm.mul(bda_w(bda::PAGE_SIZE))?;
    asm.mov(bda_w(bda::PAGE_START), ax)?;
    kind_is(asm, ModeKind::Text)?;
    let mut bytes = asm.create_label();
    asm.jne(bytes)?;
    asm.shr(ax, 1)?; // text start address counts character cells
    asm.set(&mut bytes)?;
    asm.mov(bx, ax)?;
    asm.mov(al, 0x0C)?;
    asm.mov(ah, bh)?;
    asm.call_sym("crtc_write")?;
    asm.mov(al, 0x0D)?;
    asm.mov(ah, bl)?;
    asm.call_sym("crtc_write")?;
    asm.call_sym("cursor_hw_update")?;
    asm.set(&mut out)?;
    asm.ret()?;

    // text_cell_addr: BH = page, DX = row/column → DI = byte offset of the cell.
    asm.bind("text_cell_addr")?;
    asm.push(ax)?;
    asm.push(dx)?;
    asm.mov(al, dh)?;
    asm.mul(bda_b(bda::COLUMNS))?;
    asm.xor(dh, dh)?;
    asm.add(ax, dx)?;
    asm.shl(ax, 1)?;
    asm.mov(di, ax)?;
    asm.movzx(ax, bh)?;
    asm.and(al, 7)?;
    asm.mul(bda_w(bda::PAGE_SIZE))?;
    asm.add(di, ax)?;
    asm.pop(dx)?;
    asm.pop(ax)?;
    asm.ret()?;
    Ok(())
}

/// scroll: AL = lines (0 = clear), AH = 6 up / 7 down, BH = fill attribute or colour,
/// CH/CL = top row/left column, DH/DL = bottom row/right column. Active page.
/// Preserves all registers.
fn emit_scroll(asm: &mut Asm) -> Result<(), VgaBiosError> {
    const LPR: i32 = -2; // lines per character row
    const TOP: i32 = -4; // first line of the window
    const HEIGHT: i32 = -6; // lines in the window
    const SHIFT: i32 = -8; // lines moved
    const XOFF: i32 = -10; // byte offset of the left column
    const WIDTH: i32 = -12; // bytes per line in the window
    const FILL: i32 = -14; // fill word
    const DIR: i32 = -16; // 6 or 7
    const INDEX: i32 = -18;
    const COUNT: i32 = -20;
    let loc = |off: i32| word_ptr(bp + off);

    asm.bind("int10_scroll")?;
    asm.call_sym("scroll")?;
    asm.ret()?;

    asm.bind("scroll")?;
    asm.pusha()?;
    asm.push(es)?;
    asm.mov(bp, sp)?;
    asm.sub(sp, 20)?;
    asm.mov(byte_ptr(bp + DIR), ah)?;
    asm.mov(byte_ptr(bp + COUNT), al)?;
    let mut out = asm.create_label();
    asm.call_sym("current_mode")?;
    asm.jc(out)?;
    load_video_segment(asm)?;
    // Clamp the window to the screen; an inverted window does nothing.
    asm.mov(ah, bda_b(bda::ROWS_MINUS_1))?;
    asm.cmp(dh, ah)?;
    let mut rows_ok = asm.create_label();
    asm.jbe(rows_ok)?;
    asm.mov(dh, ah)?;
    asm.set(&mut rows_ok)?;
    asm.mov(ah, bda_b(bda::COLUMNS))?;
    asm.dec(ah)?;
    asm.cmp(dl, ah)?;
    let mut cols_ok = asm.create_label();
    asm.jbe(cols_ok)?;
    asm.mov(dl, ah)?;
    asm.set(&mut cols_ok)?;
    asm.cmp(ch, dh)?;
    asm.ja(out)?;
    asm.cmp(cl, dl)?;
    asm.ja(out)?;

    asm.mov(loc(LPR), 1)?;
    kind_is(asm, ModeKind::Text)?;
    let mut lpr_done = asm.create_label();
    asm.je(lpr_done)?;
    asm.mov(ax, bda_w(bda::CHAR_HEIGHT))?;
    asm.mov(loc(LPR), ax)?;
    asm.set(&mut lpr_done)?;
    asm.push(dx)?;
    asm.movzx(ax, ch)?;
    asm.mul(loc(LPR))?;
    asm.mov(loc(TOP), ax)?;
    asm.pop(dx)?;
    asm.push(dx)?;
    asm.movzx(ax, dh)?;
    asm.sub(al, ch)?;
    asm.inc(ax)?;
    asm.mul(loc(LPR))?;
    asm.mov(loc(HEIGHT), ax)?;
    asm.movzx(ax, byte_ptr(bp + COUNT))?;
    asm.mul(loc(LPR))?;
    asm.pop(dx)?;
    let mut clear_all = asm.create_label();
    let mut shift_ok = asm.create_label();
    asm.test(ax, ax)?;
    asm.jz(clear_all)?;
    asm.cmp(ax, loc(HEIGHT))?;
    asm.jbe(shift_ok)?;
    asm.set(&mut clear_all)?;
    asm.mov(ax, loc(HEIGHT))?;
    asm.set(&mut shift_ok)?;
    asm.mov(loc(SHIFT), ax)?;
    asm.mov(al, cl)?;
    asm.mul(byte_ptr(si + m::COLUMN_BYTES as i32).cs())?;
    asm.mov(loc(XOFF), ax)?;
    asm.mov(al, dl)?;
    asm.sub(al, cl)?;
    asm.inc(al)?;
    asm.mul(byte_ptr(si + m::COLUMN_BYTES as i32).cs())?;
    asm.mov(loc(WIDTH), ax)?;

    // Fill pattern per memory layout.
    let mut fill_done = asm.create_label();
    asm.mov(ah, bh)?;
    asm.mov(al, 0x20)?;
    kind_is(asm, ModeKind::Text)?;
    asm.je(fill_done)?;
    asm.mov(al, bh)?;
    kind_is(asm, ModeKind::Linear8)?;
    asm.je(fill_done)?;
    asm.mov(al, 0xFF)?;
    kind_is(asm, ModeKind::Planar)?;
    asm.je(fill_done)?;
    kind_is(asm, ModeKind::Cga2)?;
    let mut cga4 = asm.create_label();
    asm.jne(cga4)?;
    asm.test(bh, 1)?;
    asm.jnz(fill_done)?;
    asm.xor(al, al)?;
    asm.jmp(fill_done)?;
    asm.set(&mut cga4)?;
    asm.mov(al, bh)?;
    asm.and(al, 3)?;
    asm.mov(ah, 0x55)?;
    asm.mul(ah)?;
    asm.set(&mut fill_done)?;
    asm.mov(ah, bh)?;
    asm.mov(loc(FILL), ax)?;

    asm.mov(loc(INDEX), 0)?;
    let mut top = asm.create_label();
    let mut next = asm.create_label();
    let mut fill = asm.create_label();
    let mut copy = asm.create_label();
    asm.set(&mut top)?;
    asm.mov(ax, loc(INDEX))?;
    asm.cmp(ax, loc(HEIGHT))?;
    asm.jae(out)?;
    let mut up = asm.create_label();
    asm.cmp(byte_ptr(bp + DIR), 6)?;
    asm.je(up)?;
    // Down: walk from the bottom line; line j copies from j - shift.
    asm.mov(bx, loc(HEIGHT))?;
    asm.dec(bx)?;
    asm.sub(bx, ax)?;
    asm.mov(cx, bx)?;
    asm.sub(cx, loc(SHIFT))?;
    asm.jb(fill)?;
    asm.jmp(copy)?;
    // Up: walk from the top line; line j copies from j + shift.
    asm.set(&mut up)?;
    asm.mov(bx, ax)?;
    asm.mov(cx, ax)?;
    asm.add(cx, loc(SHIFT))?;
    asm.cmp(cx, loc(HEIGHT))?;
    asm.jae(fill)?;

    asm.set(&mut copy)?; // BX = destination line, CX = source line (window-relative)
    asm.mov(ax, cx)?;
    asm.add(ax, loc(TOP))?;
    asm.call_sym("line_addr")?;
    asm.add(ax, loc(XOFF))?;
    asm.push(ax)?;
    asm.mov(ax, bx)?;
    asm.add(ax, loc(TOP))?;
    asm.call_sym("line_addr")?;
    asm.add(ax, loc(XOFF))?;
    asm.mov(di, ax)?;
    kind_is(asm, ModeKind::Planar)?;
    let mut not_planar_copy = asm.create_label();
    asm.jne(not_planar_copy)?;
    super::regs::write_const(asm, "gc_write", 5, 0x01)?; // copy all planes via the latches
    asm.set(&mut not_planar_copy)?;
    asm.pop(ax)?; // source offset
    asm.push(si)?;
    asm.push(ds)?;
    asm.mov(si, ax)?;
    asm.mov(cx, loc(WIDTH))?;
    asm.push(es)?;
    asm.pop(ds)?;
    asm.rep().movsb()?;
    asm.pop(ds)?;
    asm.pop(si)?;
    asm.jmp(next)?;

    asm.set(&mut fill)?; // BX = line to blank
    asm.mov(ax, bx)?;
    asm.add(ax, loc(TOP))?;
    asm.call_sym("line_addr")?;
    asm.add(ax, loc(XOFF))?;
    asm.mov(di, ax)?;
    asm.mov(cx, loc(WIDTH))?;
    asm.mov(ax, loc(FILL))?;
    let mut bytes = asm.create_label();
    kind_is(asm, ModeKind::Text)?;
    asm.jne(bytes)?;
    asm.shr(cx, 1)?;
    asm.rep().stosw()?;
    asm.jmp(next)?;
    asm.set(&mut bytes)?;
    kind_is(asm, ModeKind::Planar)?;
    let mut plain = asm.create_label();
    asm.jne(plain)?;
    // Planar: the set/reset registers supply the colour on all four planes.
    asm.push(ax)?;
    asm.mov(al, 0)?;
    asm.call_sym("gc_write")?; // set/reset = colour (AH)
    super::regs::write_const(asm, "gc_write", 1, 0x0F)?;
    super::regs::write_const(asm, "gc_write", 5, 0x00)?;
    asm.pop(ax)?;
    asm.rep().stosb()?;
    super::regs::write_const(asm, "gc_write", 1, 0x00)?;
    asm.jmp(next)?;
    asm.set(&mut plain)?;
    asm.rep().stosb()?;

    asm.set(&mut next)?;
    kind_is(asm, ModeKind::Planar)?;
    let mut no_restore = asm.create_label();
    asm.jne(no_restore)?;
    super::regs::write_const(asm, "gc_write", 5, 0x00)?;
    asm.set(&mut no_restore)?;
    asm.inc(loc(INDEX))?;
    asm.jmp(top)?;

    asm.set(&mut out)?;
    asm.mov(sp, bp)?;
    asm.pop(es)?;
    asm.popa()?;
    asm.ret()?;
    Ok(())
}

/// put_chars: AL = character, BL = attribute (text) or colour (graphics), BH = page,
/// CX = count, DX = row/column, AH = 1 to write the attribute too (text modes).
/// Preserves all registers.
fn emit_char_output(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("put_chars")?;
    asm.pusha()?;
    asm.push(es)?;
    let mut out = asm.create_label();
    asm.call_sym("current_mode")?;
    asm.jc(out)?;
    load_video_segment(asm)?;
    kind_is(asm, ModeKind::Text)?;
    let mut text = asm.create_label();
    asm.je(text)?;
    asm.call_sym("gfx_chars")?;
    asm.jmp(out)?;
    asm.set(&mut text)?;
    asm.call_sym("text_cell_addr")?;
    asm.test(ah, ah)?;
    let mut char_only = asm.create_label();
    asm.jz(char_only)?;
    asm.mov(ah, bl)?;
    asm.rep().stosw()?;
    asm.jmp(out)?;
    asm.set(&mut char_only)?;
    asm.jcxz(out)?;
    let mut each = asm.create_label();
    asm.set(&mut each)?;
    asm.stosb()?;
    asm.inc(di)?;
    asm.loop_(each)?;
    asm.set(&mut out)?;
    asm.pop(es)?;
    asm.popa()?;
    asm.ret()?;

    // AH=09h / 0Ah: at the cursor of page BH, CX times.
    for (name, with_attr) in [("int10_write_char_attr", 1), ("int10_write_char", 0)] {
        asm.bind(name)?;
        cursor_slot(asm, di)?;
        asm.mov(dx, word_ptr(di))?;
        asm.mov(ah, with_attr)?;
        asm.call_sym("put_chars")?;
        asm.ret()?;
    }

    // AH=08h: → AH = attribute, AL = character at the cursor of page BH. Graphics
    // modes match the cell against the INT 43h font (AH = 0).
    asm.bind("int10_read_char")?;
    asm.mov(word_ptr(bp + frame::AX as i32), 0)?;
    asm.call_sym("current_mode")?;
    let mut out = asm.create_label();
    asm.jc(out)?;
    load_video_segment(asm)?;
    cursor_slot(asm, di)?;
    asm.mov(dx, word_ptr(di))?;
    kind_is(asm, ModeKind::Text)?;
    let mut text = asm.create_label();
    asm.je(text)?;
    asm.push(bp)?;
    asm.call_sym("gfx_read_char")?;
    asm.pop(bp)?;
    asm.mov(word_ptr(bp + frame::AX as i32), ax)?;
    asm.ret()?;
    asm.set(&mut text)?;
    asm.call_sym("text_cell_addr")?;
    asm.mov(ax, word_ptr(di).es())?;
    asm.mov(word_ptr(bp + frame::AX as i32), ax)?;
    asm.set(&mut out)?;
    asm.ret()?;
    Ok(())
}

/// tty_out: AL = character, BL = attribute/colour, BH = page, AH = 1 to write the
/// attribute (text modes). Handles BEL, BS, CR, LF, wraps and scrolls. Preserves all.
fn emit_teletype(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("tty_out")?;
    asm.pusha()?;
    asm.push(es)?;
    cursor_slot(asm, si)?;
    asm.mov(dx, word_ptr(si))?;
    let mut store = asm.create_label();
    let mut check = asm.create_label();
    let mut out = asm.create_label();
    asm.cmp(al, 0x07)?;
    asm.je(out)?; // bell: no speaker on this path
    let mut not_bs = asm.create_label();
    asm.cmp(al, 0x08)?;
    asm.jne(not_bs)?;
    asm.test(dl, dl)?;
    asm.jz(store)?;
    asm.dec(dl)?;
    asm.jmp(store)?;
    asm.set(&mut not_bs)?;
    let mut not_cr = asm.create_label();
    asm.cmp(al, 0x0D)?;
    asm.jne(not_cr)?;
    asm.xor(dl, dl)?;
    asm.jmp(store)?;
    asm.set(&mut not_cr)?;
    let mut not_lf = asm.create_label();
    asm.cmp(al, 0x0A)?;
    asm.jne(not_lf)?;
    asm.inc(dh)?;
    asm.jmp(check)?;
    asm.set(&mut not_lf)?;
    asm.mov(cx, 1)?;
    asm.call_sym("put_chars")?;
    asm.inc(dl)?;
    asm.cmp(dl, bda_b(bda::COLUMNS))?;
    asm.jb(store)?;
    asm.xor(dl, dl)?;
    asm.inc(dh)?;
    asm.set(&mut check)?;
    asm.cmp(dh, bda_b(bda::ROWS_MINUS_1))?;
    asm.jbe(store)?;
    asm.mov(dh, bda_b(bda::ROWS_MINUS_1))?;
    // Scroll the whole page up one row; text modes keep the attribute found at the
    // cursor, graphics modes fill with colour 0.
    asm.push(si)?;
    asm.push(dx)?;
    asm.xor(cx, cx)?;
    asm.call_sym("current_mode")?;
    let mut scroll_now = asm.create_label();
    asm.mov(bl, 0)?;
    asm.jc(scroll_now)?;
    kind_is(asm, ModeKind::Text)?;
    asm.jne(scroll_now)?;
    load_video_segment(asm)?;
    asm.call_sym("text_cell_addr")?;
    asm.mov(bl, byte_ptr(di + 1).es())?;
    asm.set(&mut scroll_now)?;
    asm.mov(bh, bl)?;
    asm.mov(ax, 0x0601)?;
    asm.mov(dl, bda_b(bda::COLUMNS))?;
    asm.dec(dl)?;
    asm.call_sym("scroll")?;
    asm.pop(dx)?;
    asm.pop(si)?;
    asm.set(&mut store)?;
    asm.mov(word_ptr(si), dx)?;
    asm.call_sym("cursor_hw_update")?;
    asm.set(&mut out)?;
    asm.pop(es)?;
    asm.popa()?;
    asm.ret()?;

    // AH=0Eh: AL = character, BL = colour in graphics modes; active page.
    asm.bind("int10_teletype")?;
    asm.mov(bh, bda_b(bda::ACTIVE_PAGE))?;
    asm.xor(ah, ah)?;
    asm.call_sym("tty_out")?;
    asm.ret()?;

    // AH=13h: AL bit 0 = move cursor, bit 1 = string holds attributes; BH = page,
    // BL = attribute, CX = length, DH/DL = position, ES:BP = string.
    asm.bind("int10_write_string")?;
    cursor_slot(asm, si)?;
    asm.push(word_ptr(si))?;
    asm.push(si)?;
    asm.mov(word_ptr(si), dx)?;
    asm.mov(di, word_ptr(bp + frame::BP as i32))?;
    let mut done = asm.create_label();
    asm.jcxz(done)?;
    let mut each = asm.create_label();
    asm.set(&mut each)?;
    asm.mov(al, byte_ptr(di).es())?;
    asm.inc(di)?;
    asm.test(byte_ptr(bp + frame::AL as i32), 2)?;
    let mut no_attr = asm.create_label();
    asm.jz(no_attr)?;
    asm.mov(bl, byte_ptr(di).es())?;
    asm.inc(di)?;
    asm.set(&mut no_attr)?;
    asm.mov(ah, 1)?;
    asm.call_sym("tty_out")?;
    asm.loop_(each)?;
    asm.set(&mut done)?;
    asm.pop(si)?;
    asm.pop(ax)?;
    asm.test(byte_ptr(bp + frame::AL as i32), 1)?;
    let mut keep = asm.create_label();
    asm.jnz(keep)?;
    asm.mov(word_ptr(si), ax)?;
    asm.call_sym("cursor_hw_update")?;
    asm.set(&mut keep)?;
    asm.ret()?;
    Ok(())
}
