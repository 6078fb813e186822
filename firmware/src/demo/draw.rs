//! Drawing: a flat 4 GiB ES ("unreal mode") reaches the linear framebuffer from real
//! mode, so BIOS services keep working between frames.
//!
//! Layout is in logical pixels of a 320-wide screen; the 640×480 mode doubles every
//! coordinate (`v_shift` = 1), VGA mode 13h draws them 1:1. Colours are 00RRGGBB and
//! become RGB 3-3-2 palette indices in mode 13h. Every rectangle is clipped to the
//! screen, so no write ever leaves the framebuffer.

use iced_x86::code_asm::*;

use super::payload::{b, d, load_si, strings, w};
use super::{DemoError, LOAD_SEGMENT};
use crate::asm16::Asm;

const SHADOW: u32 = 0x0A1A40;
const TITLE: u32 = 0xFFFFFF;
const SUBTITLE: u32 = 0xD0ECFF;
const DIVIDER: u32 = 0x90C8F0;
const PANEL: u32 = 0x0A1838;
const PROMPT: u32 = 0x80C8FF;
const KEY_TEXT: u32 = 0xFFFFFF;
const TRACK: u32 = 0x0A1838;
const BLOCK: u32 = 0x70E8FF;
/// Background gradient, top to bottom, per channel (shift, top value, increase).
pub(crate) const GRADIENT: [(u32, i32, i32); 3] =
    [(16, 0x10, 0x28), (8, 0x28, 0x70), (0, 0x68, 0x70)];

/// Logical screen width every layout position is designed for.
const LOGICAL_WIDTH: u16 = 320;
const TITLE_TEXT: &str = "Aero";
const TITLE_SCALE: u16 = 4;
const TITLE_Y: u16 = 20;
const LINES: [(&str, &str, u16); 2] = [
    ("s_line1", "x86 PC emulator", 96),
    ("s_line2", "built-in demo guest", 114),
];
const DIVIDER_Y: u16 = 138;
const PANEL_X: u16 = 16;
const PANEL_Y: u16 = 146;
const PANEL_W: u16 = 288;
const PANEL_H: u16 = 24;
const PROMPT_TEXT: &str = "Keys:";
const TEXT_Y: u16 = PANEL_Y + 4;
const PROMPT_X: u16 = PANEL_X + 8;
const KEYS_X: u16 = PROMPT_X + 6 * 8;
const KEY_COLUMNS: u16 = (PANEL_X + PANEL_W - 8 - KEYS_X) / 8;
const BAR_X: u16 = 16;
const BAR_W: u16 = 288;
const BAR_H: u16 = 8;
const BLOCK_W: u16 = 48;
/// Logical pixels the block moves per timer tick; it bounces between the bar's ends.
const BLOCK_STEP: u8 = 2;

fn centred(text: &str, scale: u16) -> u16 {
    (LOGICAL_WIDTH - text.len() as u16 * 8 * scale) / 2
}

fn set_colour(a: &mut Asm, colour: u32) -> Result<(), DemoError> {
    let c = d(a, "v_color");
    a.mov(c, colour as i32)?;
    Ok(())
}

/// fill_rect_l(x, y, w, h) in `colour`.
fn rect(a: &mut Asm, x: u16, y: u16, wd: u16, h: u16, colour: u32) -> Result<(), DemoError> {
    set_colour(a, colour)?;
    a.mov(bx, i32::from(x))?;
    a.mov(cx, i32::from(y))?;
    a.mov(dx, i32::from(wd))?;
    a.mov(si, i32::from(h))?;
    a.call_sym("fill_rect_l")?;
    Ok(())
}

/// draw_string_l(symbol, x, y, scale) in `colour`.
fn text(
    a: &mut Asm,
    name: &'static str,
    x: u16,
    y: u16,
    scale: u16,
    colour: u32,
) -> Result<(), DemoError> {
    set_colour(a, colour)?;
    load_si(a, name)?;
    a.mov(bx, i32::from(x))?;
    a.mov(cx, i32::from(y))?;
    a.mov(di, i32::from(scale))?;
    a.call_sym("draw_string_l")?;
    Ok(())
}

/// BX, CX = logical position of key column v_key_col.
fn key_cell(a: &mut Asm) -> Result<(), DemoError> {
    let col = w(a, "v_key_col");
    a.mov(bx, col)?;
    a.shl(bx, 3)?;
    a.add(bx, i32::from(KEYS_X))?;
    a.mov(cx, i32::from(TEXT_Y))?;
    Ok(())
}

/// The picture changed: AeroGPU presents it on the next idle pass.
fn mark_dirty(a: &mut Asm) -> Result<(), DemoError> {
    let dirty = b(a, "v_dirty");
    a.mov(dirty, 1)?;
    Ok(())
}

/// EAX = BIOS tick count (BDA 0:046Ch).
pub(crate) fn read_ticks(a: &mut Asm) -> Result<(), DemoError> {
    a.push(ds)?;
    a.xor(ax, ax)?;
    a.mov(ds, ax)?;
    a.mov(eax, dword_ptr(0x46Cu32))?;
    a.pop(ds)?;
    Ok(())
}

pub(crate) fn emit(a: &mut Asm) -> Result<(), DemoError> {
    emit_flat(a)?;
    emit_fill(a)?;
    emit_glyphs(a)?;
    emit_screen(a)?;
    emit_bar_and_keys(a)?;
    Ok(())
}

fn emit_flat(a: &mut Asm) -> Result<(), DemoError> {
    // ES gets base 0 and a 4 GiB limit through a protected-mode load; back in real mode
    // the limit stays. Interrupts stay off until the caller's drawing is done (STI),
    // because a BIOS interrupt handler may reload ES. Redone before every drawing since
    // BIOS calls (e.g. SeaBIOS's 32-bit handlers) reset segment limits.
    a.bind("enter_flat")?;
    a.push(eax)?;
    a.push(bx)?;
    a.cli()?;
    let gdtr = u32::from(a.addr("gdt_ptr"));
    a.lgdt(ptr(gdtr))?;
    a.mov(eax, cr0)?;
    a.or(al, 1)?;
    a.mov(cr0, eax)?;
    let mut pm = a.create_label();
    a.jmp(pm)?;
    a.set(&mut pm)?;
    a.mov(bx, 8)?;
    a.mov(es, bx)?;
    a.and(al, 0xFE)?;
    a.mov(cr0, eax)?;
    let mut rm = a.create_label();
    a.jmp(rm)?;
    a.set(&mut rm)?;
    a.xor(bx, bx)?;
    a.mov(es, bx)?;
    a.pop(bx)?;
    a.pop(eax)?;
    a.ret()?;
    Ok(())
}

fn emit_fill(a: &mut Asm) -> Result<(), DemoError> {
    // BX = x, CX = y, DX = width, SI = height (physical pixels), colour in v_color.
    a.bind("fill_rect")?;
    a.pushad()?;
    let mut done = a.create_label();
    let vw = w(a, "v_w");
    a.cmp(bx, vw)?;
    a.jae(done)?;
    let vh = w(a, "v_h");
    a.cmp(cx, vh)?;
    a.jae(done)?;
    for (coord, size, limit) in [(bx, dx, "v_w"), (cx, si, "v_h")] {
        let lim = w(a, limit);
        a.mov(ax, lim)?;
        a.sub(ax, coord)?;
        a.cmp(size, ax)?;
        let mut fits = a.create_label();
        a.jbe(fits)?;
        a.mov(size, ax)?;
        a.set(&mut fits)?;
        a.test(size, size)?;
        a.jz(done)?;
    }
    a.movzx(eax, cx)?;
    let pitch = d(a, "v_pitch");
    a.imul_2(eax, pitch)?;
    a.mov(edi, eax)?;
    let fb = d(a, "v_fb");
    a.add(edi, fb)?;
    a.movzx(ebx, bx)?;
    let bpp = b(a, "v_bpp");
    a.cmp(bpp, 8)?;
    let mut bpp8 = a.create_label();
    a.je(bpp8)?;

    a.shl(ebx, 2)?;
    a.add(edi, ebx)?;
    let colour = d(a, "v_color");
    a.mov(eax, colour)?;
    let mut row32 = a.create_label();
    let mut px32 = a.create_label();
    a.set(&mut row32)?;
    a.push(edi)?;
    a.movzx(ecx, dx)?;
    a.set(&mut px32)?;
    a.mov(dword_ptr(edi).es(), eax)?;
    a.add(edi, 4)?;
    a.dec(ecx)?;
    a.jnz(px32)?;
    a.pop(edi)?;
    let pitch = d(a, "v_pitch");
    a.add(edi, pitch)?;
    a.dec(si)?;
    a.jnz(row32)?;
    a.jmp(done)?;

    // 00RRGGBB -> RRRGGGBB.
    a.set(&mut bpp8)?;
    a.add(edi, ebx)?;
    let colour = d(a, "v_color");
    a.mov(eax, colour)?;
    a.mov(ecx, eax)?;
    a.shr(ecx, 16)?;
    a.and(cl, 0xE0)?;
    a.mov(bl, ah)?;
    a.shr(bl, 3)?;
    a.and(bl, 0x1C)?;
    a.or(cl, bl)?;
    a.mov(bl, al)?;
    a.shr(bl, 6)?;
    a.or(cl, bl)?;
    a.mov(al, cl)?;
    let mut row8 = a.create_label();
    let mut px8 = a.create_label();
    a.set(&mut row8)?;
    a.push(edi)?;
    a.movzx(ecx, dx)?;
    a.set(&mut px8)?;
    a.mov(byte_ptr(edi).es(), al)?;
    a.inc(edi)?;
    a.dec(ecx)?;
    a.jnz(px8)?;
    a.pop(edi)?;
    let pitch = d(a, "v_pitch");
    a.add(edi, pitch)?;
    a.dec(si)?;
    a.jnz(row8)?;
    a.set(&mut done)?;
    a.popad()?;
    a.ret()?;

    // The same in logical pixels.
    a.bind("fill_rect_l")?;
    a.pushad()?;
    a.mov(ax, cx)?;
    let shift = b(a, "v_shift");
    a.mov(cl, shift)?;
    for r in [bx, ax, dx, si] {
        a.shl(r, cl)?;
    }
    a.mov(cx, ax)?;
    a.call_sym("fill_rect")?;
    a.popad()?;
    a.ret()?;
    Ok(())
}

fn emit_glyphs(a: &mut Asm) -> Result<(), DemoError> {
    // AL = character, BX = x, CX = y, DI = size of one font pixel (physical pixels).
    a.bind("draw_char")?;
    a.pushad()?;
    let mut unknown = a.create_label();
    let mut known = a.create_label();
    a.cmp(al, 0x20)?;
    a.jb(unknown)?;
    a.cmp(al, 0x7E)?;
    a.jbe(known)?;
    a.set(&mut unknown)?;
    a.mov(al, b'?' as i32)?;
    a.set(&mut known)?;
    a.sub(al, 0x20)?;
    a.movzx(si, al)?;
    a.shl(si, 4)?;
    let font = a.addr("font");
    a.add(si, i32::from(font))?;
    a.mov(bp, 16)?;
    let mut row = a.create_label();
    let mut col = a.create_label();
    let mut next = a.create_label();
    let mut row_done = a.create_label();
    a.set(&mut row)?;
    a.mov(ah, byte_ptr(si))?;
    a.push(bx)?;
    a.set(&mut col)?;
    a.test(ah, ah)?;
    a.jz(row_done)?;
    a.test(ah, 0x80)?;
    a.jz(next)?;
    a.push(si)?;
    a.mov(dx, di)?;
    a.mov(si, di)?;
    a.call_sym("fill_rect")?;
    a.pop(si)?;
    a.set(&mut next)?;
    a.shl(ah, 1)?;
    a.add(bx, di)?;
    a.jmp(col)?;
    a.set(&mut row_done)?;
    a.pop(bx)?;
    a.inc(si)?;
    a.add(cx, di)?;
    a.dec(bp)?;
    a.jnz(row)?;
    a.popad()?;
    a.ret()?;

    // DS:SI = NUL-terminated string, BX/CX/DI as for draw_char.
    a.bind("draw_string")?;
    a.pushad()?;
    let mut next = a.create_label();
    let mut end = a.create_label();
    a.set(&mut next)?;
    a.lodsb()?;
    a.test(al, al)?;
    a.jz(end)?;
    a.call_sym("draw_char")?;
    a.mov(ax, di)?;
    a.shl(ax, 3)?;
    a.add(bx, ax)?;
    a.jmp(next)?;
    a.set(&mut end)?;
    a.popad()?;
    a.ret()?;

    // Logical-pixel versions: BX, CX and DI scaled by v_shift.
    for (name, target) in [
        ("draw_char_l", "draw_char"),
        ("draw_string_l", "draw_string"),
    ] {
        a.bind(name)?;
        a.pushad()?;
        a.mov(dx, cx)?;
        let shift = b(a, "v_shift");
        a.mov(cl, shift)?;
        a.shl(bx, cl)?;
        a.shl(dx, cl)?;
        a.shl(di, cl)?;
        a.mov(cx, dx)?;
        a.call_sym(target)?;
        a.popad()?;
        a.ret()?;
    }
    Ok(())
}

fn emit_screen(a: &mut Asm) -> Result<(), DemoError> {
    a.bind("draw_all")?;
    a.pushad()?;
    a.call_sym("enter_flat")?;
    // Gradient: channel = top + increase * y / height, one row at a time.
    a.xor(cx, cx)?;
    let mut row = a.create_label();
    a.set(&mut row)?;
    set_colour(a, 0)?;
    for (shift, top, increase) in GRADIENT {
        a.mov(ax, increase)?;
        a.mul(cx)?;
        let vh = w(a, "v_h");
        a.div(vh)?;
        a.add(ax, top)?;
        a.movzx(eax, ax)?;
        a.shl(eax, shift)?;
        let c = d(a, "v_color");
        a.or(c, eax)?;
    }
    a.xor(bx, bx)?;
    let vw = w(a, "v_w");
    a.mov(dx, vw)?;
    a.mov(si, 1)?;
    a.call_sym("fill_rect")?;
    a.inc(cx)?;
    let vh = w(a, "v_h");
    a.cmp(cx, vh)?;
    a.jb(row)?;

    let title_x = centred(TITLE_TEXT, TITLE_SCALE);
    text(a, "s_title", title_x + 2, TITLE_Y + 2, TITLE_SCALE, SHADOW)?;
    text(a, "s_title", title_x, TITLE_Y, TITLE_SCALE, TITLE)?;
    for (name, line, y) in LINES {
        text(a, name, centred(line, 1) + 1, y + 1, 1, SHADOW)?;
        text(a, name, centred(line, 1), y, 1, SUBTITLE)?;
    }
    rect(a, PANEL_X, DIVIDER_Y, PANEL_W, 1, DIVIDER)?;
    rect(a, PANEL_X, PANEL_Y, PANEL_W, PANEL_H, PANEL)?;
    text(a, "s_prompt", PROMPT_X, TEXT_Y, 1, PROMPT)?;
    a.sti()?;

    // The animation counts ticks from here, so the first frame is the same everywhere.
    read_ticks(a)?;
    let start = d(a, "v_start_tick");
    a.mov(start, eax)?;
    let last = d(a, "v_last_tick");
    a.mov(last, eax)?;
    a.call_sym("draw_bar")?;
    a.popad()?;
    a.ret()?;
    Ok(())
}

fn emit_bar_and_keys(a: &mut Asm) -> Result<(), DemoError> {
    // Redraws the bar when the BIOS tick count moved.
    a.bind("poll_tick")?;
    a.pushad()?;
    read_ticks(a)?;
    let last = d(a, "v_last_tick");
    a.cmp(eax, last)?;
    let mut same = a.create_label();
    a.je(same)?;
    let last = d(a, "v_last_tick");
    a.mov(last, eax)?;
    a.call_sym("draw_bar")?;
    a.set(&mut same)?;
    a.popad()?;
    a.ret()?;

    // Block position bounces: p = (ticks * step) mod 2·range, mirrored above range.
    let range = i32::from(BAR_W - BLOCK_W);
    a.bind("draw_bar")?;
    a.pushad()?;
    a.call_sym("enter_flat")?;
    let last = d(a, "v_last_tick");
    a.mov(eax, last)?;
    let start = d(a, "v_start_tick");
    a.sub(eax, start)?;
    a.mov(ecx, i32::from(BLOCK_STEP))?;
    a.mul(ecx)?;
    a.xor(edx, edx)?;
    a.mov(ecx, 2 * range)?;
    a.div(ecx)?;
    a.cmp(dx, range)?;
    let mut forward = a.create_label();
    a.jbe(forward)?;
    a.mov(ax, 2 * range)?;
    a.sub(ax, dx)?;
    a.mov(dx, ax)?;
    a.set(&mut forward)?;
    a.mov(bp, dx)?;
    set_colour(a, TRACK)?;
    a.mov(bx, i32::from(BAR_X))?;
    let bar_y = w(a, "v_bar_y");
    a.mov(cx, bar_y)?;
    a.mov(dx, i32::from(BAR_W))?;
    a.mov(si, i32::from(BAR_H))?;
    a.call_sym("fill_rect_l")?;
    set_colour(a, BLOCK)?;
    a.lea(bx, word_ptr(bp + i32::from(BAR_X)))?;
    a.mov(dx, i32::from(BLOCK_W))?;
    a.call_sym("fill_rect_l")?;
    mark_dirty(a)?;
    a.sti()?;
    a.popad()?;
    a.ret()?;

    // AL = ASCII from INT 16h: printable keys are appended, BS erases, CR clears.
    a.bind("draw_key")?;
    a.pushad()?;
    a.call_sym("enter_flat")?;
    let mut backspace = a.create_label();
    let mut clear = a.create_label();
    let mut out = a.create_label();
    let mut put = a.create_label();
    a.cmp(al, 0x08)?;
    a.je(backspace)?;
    a.cmp(al, 0x0D)?;
    a.je(clear)?;
    a.cmp(al, 0x20)?;
    a.jb(out)?;
    a.cmp(al, 0x7E)?;
    a.ja(out)?;
    let col = w(a, "v_key_col");
    a.cmp(col, i32::from(KEY_COLUMNS))?;
    a.jb(put)?;
    a.call_sym("clear_keys")?;
    a.set(&mut put)?;
    key_cell(a)?;
    a.mov(di, 1)?;
    set_colour(a, KEY_TEXT)?;
    a.call_sym("draw_char_l")?;
    let col = w(a, "v_key_col");
    a.inc(col)?;
    a.jmp(out)?;
    a.set(&mut backspace)?;
    let col = w(a, "v_key_col");
    a.cmp(col, 0)?;
    a.je(out)?;
    let col = w(a, "v_key_col");
    a.dec(col)?;
    key_cell(a)?;
    a.mov(dx, 8)?;
    a.mov(si, 16)?;
    set_colour(a, PANEL)?;
    a.call_sym("fill_rect_l")?;
    a.jmp(out)?;
    a.set(&mut clear)?;
    a.call_sym("clear_keys")?;
    a.set(&mut out)?;
    mark_dirty(a)?;
    a.sti()?;
    a.popad()?;
    a.ret()?;

    a.bind("clear_keys")?;
    a.pushad()?;
    rect(a, KEYS_X, TEXT_Y, KEY_COLUMNS * 8, 16, PANEL)?;
    let col = w(a, "v_key_col");
    a.mov(col, 0)?;
    a.popad()?;
    a.ret()?;
    Ok(())
}

pub(crate) fn emit_data(a: &mut Asm) -> Result<(), DemoError> {
    let lines = LINES.map(|(name, line, _)| (name, line));
    let texts = [("s_title", TITLE_TEXT)].into_iter().chain(lines);
    strings(
        a,
        &texts.chain([("s_prompt", PROMPT_TEXT)]).collect::<Vec<_>>(),
    )?;
    // Null descriptor, then flat data: base 0, limit 4 GiB, writable.
    a.bind("gdt")?;
    a.dd(&[0, 0, 0x0000_FFFF, 0x00CF_9200])?;
    let gdt = u32::from(a.addr("gdt"));
    a.bind("gdt_ptr")?;
    a.dw(&[15])?;
    a.dd(&[u32::from(LOAD_SEGMENT) * 16 + gdt])?;
    // Glyphs 20h–7Eh (and 7Fh) of the project's own 8×16 font, bit 7 = leftmost pixel.
    let font = &aero_gpu::font::font_8x16().to_packed_bytes();
    let glyphs = font.get(0x20 * 16..0x80 * 16).ok_or(DemoError::Font)?;
    a.bind("font")?;
    a.db(glyphs)?;
    Ok(())
}
