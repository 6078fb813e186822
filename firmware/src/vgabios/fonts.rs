//! INT 10h AH=11h: character generator (font) services.

use iced_x86::code_asm::*;

use super::{VgaBiosError, bda, frame};
use crate::asm16::Asm;

/// ROM fonts: (symbol, bytes per glyph).
const ROM_FONTS: [(u8, &str, u8); 3] = [
    (0x01, "font8x14", 14),
    (0x02, "font8x8", 8),
    (0x04, "font8x16", 16),
];

pub(crate) fn emit(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("int10_fonts")?;
    let table: [(u8, &'static str); 16] = [
        (0x00, "font_user"),
        (0x10, "font_user_recalc"),
        (0x01, "font_rom14"),
        (0x11, "font_rom14_recalc"),
        (0x02, "font_rom8"),
        (0x12, "font_rom8_recalc"),
        (0x04, "font_rom16"),
        (0x14, "font_rom16_recalc"),
        (0x03, "font_block_select"),
        (0x20, "font_set_int1f"),
        (0x21, "font_set_int43_user"),
        (0x22, "font_set_int43_14"),
        (0x23, "font_set_int43_8"),
        (0x24, "font_set_int43_16"),
        (0x30, "font_info"),
        (0xFF, "font_unsupported"),
    ];
    for (sub, name) in table.iter().take(15) {
        let l = asm.l(name);
        asm.cmp(al, i32::from(*sub))?;
        asm.je(l)?;
    }
    asm.bind("font_unsupported")?;
    asm.ret()?;

    // AL=00h/10h: ES:BP = glyphs, CX = count, DX = first, BL = block, BH = bytes/glyph.
    for (name, recalc) in [("font_user", false), ("font_user_recalc", true)] {
        asm.bind(name)?;
        asm.mov(di, word_ptr(bp + frame::BP as i32))?;
        asm.and(bl, 7)?;
        asm.cmp(bh, 32)?;
        let mut ok = asm.create_label();
        asm.jbe(ok)?;
        asm.mov(bh, 32)?;
        asm.set(&mut ok)?;
        asm.push(bx)?;
        asm.call_sym("load_font")?;
        asm.pop(bx)?;
        if recalc {
            asm.mov(al, bh)?;
            asm.call_sym("font_recalc")?;
        }
        asm.ret()?;
    }

    // AL=01h/02h/04h (+10h): a ROM font into block BL.
    for (sub, symbol, height) in ROM_FONTS {
        for recalc in [false, true] {
            let name: &'static str = match (sub, recalc) {
                (0x01, false) => "font_rom14",
                (0x01, true) => "font_rom14_recalc",
                (0x02, false) => "font_rom8",
                (0x02, true) => "font_rom8_recalc",
                (_, false) => "font_rom16",
                (_, true) => "font_rom16_recalc",
            };
            asm.bind(name)?;
            asm.push(cs)?;
            asm.pop(es)?;
            let addr = asm.addr(symbol);
            asm.mov(di, i32::from(addr))?;
            asm.mov(cx, 256)?;
            asm.xor(dx, dx)?;
            asm.and(bl, 7)?;
            asm.mov(bh, i32::from(height))?;
            asm.call_sym("load_font")?;
            if recalc {
                asm.mov(al, i32::from(height))?;
                asm.call_sym("font_recalc")?;
            }
            asm.ret()?;
        }
    }

    // AL=03h: BL = character map select (sequencer register 3).
    asm.bind("font_block_select")?;
    asm.mov(al, 3)?;
    asm.mov(ah, bl)?;
    asm.call_sym("seq_write")?;
    asm.ret()?;

    // font_recalc: AL = glyph height. Re-derives rows, cell height, cursor and page size
    // from the displayed scan lines (CRTC vertical display end).
    asm.bind("font_recalc")?;
    asm.movzx(bx, al)?;
    asm.test(bx, bx)?;
    let mut out = asm.create_label();
    asm.jz(out)?;
    asm.mov(word_ptr(u32::from(bda::CHAR_HEIGHT)), bx)?;
    asm.mov(al, 0x07)?;
    asm.call_sym("crtc_read")?;
    asm.mov(cl, al)?;
    asm.mov(al, 0x12)?;
    asm.call_sym("crtc_read")?;
    asm.xor(ah, ah)?;
    asm.test(cl, 0x02)?;
    let mut no8 = asm.create_label();
    asm.jz(no8)?;
    asm.or(ah, 1)?;
    asm.set(&mut no8)?;
    asm.test(cl, 0x40)?;
    let mut no9 = asm.create_label();
    asm.jz(no9)?;
    asm.or(ah, 2)?;
    asm.set(&mut no9)?;
    asm.inc(ax)?; // displayed scan lines
    asm.xor(dx, dx)?;
    asm.div(bx)?;
    asm.test(ax, ax)?;
    asm.jz(out)?;
    asm.push(ax)?;
    asm.dec(al)?;
    asm.mov(byte_ptr(u32::from(bda::ROWS_MINUS_1)), al)?;
    asm.pop(ax)?;
    asm.mul(word_ptr(u32::from(bda::COLUMNS)))?;
    asm.shl(ax, 1)?;
    asm.mov(word_ptr(u32::from(bda::PAGE_SIZE)), ax)?;
    asm.mov(al, 0x09)?;
    asm.call_sym("crtc_read")?;
    asm.and(al, 0xE0)?;
    asm.mov(ah, bl)?;
    asm.dec(ah)?;
    asm.or(ah, al)?;
    asm.mov(al, 0x09)?;
    asm.call_sym("crtc_write")?;
    // Underline-style cursor on the last two lines of the new cell.
    asm.mov(ch, bl)?;
    asm.sub(ch, 2)?;
    asm.mov(cl, bl)?;
    asm.dec(cl)?;
    asm.mov(word_ptr(u32::from(bda::CURSOR_SHAPE)), cx)?;
    asm.mov(al, 0x0A)?;
    asm.mov(ah, ch)?;
    asm.call_sym("crtc_write")?;
    asm.mov(al, 0x0B)?;
    asm.mov(ah, cl)?;
    asm.call_sym("crtc_write")?;
    asm.set(&mut out)?;
    asm.ret()?;

    // AL=20h: INT 1Fh = ES:BP.
    asm.bind("font_set_int1f")?;
    asm.mov(ax, word_ptr(bp + frame::BP as i32))?;
    asm.mov(bx, 0x1F * 4)?;
    asm.mov(dx, es)?;
    asm.call_sym("set_vector")?;
    asm.ret()?;

    // AL=21h–24h: INT 43h = font; BL = rows (0: DL, 1: 14, 2: 25, 3: 43).
    asm.bind("font_set_int43_user")?;
    asm.mov(ax, word_ptr(bp + frame::BP as i32))?;
    asm.mov(word_ptr(u32::from(bda::CHAR_HEIGHT)), cx)?;
    asm.mov(cx, es)?;
    asm.jmp_sym("font_set_int43_common")?;
    for (name, symbol, height) in [
        ("font_set_int43_14", "font8x14", 14),
        ("font_set_int43_8", "font8x8", 8),
        ("font_set_int43_16", "font8x16", 16),
    ] {
        asm.bind(name)?;
        let addr = asm.addr(symbol);
        asm.mov(ax, i32::from(addr))?;
        asm.mov(word_ptr(u32::from(bda::CHAR_HEIGHT)), height)?;
        asm.mov(cx, cs)?;
        asm.jmp_sym("font_set_int43_common")?;
    }
    asm.bind("font_set_int43_common")?;
    asm.push(dx)?;
    asm.mov(dx, cx)?;
    asm.push(bx)?;
    asm.mov(bx, 0x43 * 4)?;
    asm.call_sym("set_vector")?;
    asm.pop(bx)?;
    asm.pop(dx)?;
    asm.mov(al, dl)?;
    asm.dec(al)?;
    asm.cmp(bl, 1)?;
    let mut store = asm.create_label();
    asm.jb(store)?;
    asm.mov(al, 13)?;
    asm.je(store)?;
    asm.mov(al, 24)?;
    asm.cmp(bl, 2)?;
    asm.je(store)?;
    asm.mov(al, 42)?;
    asm.set(&mut store)?;
    asm.mov(byte_ptr(u32::from(bda::ROWS_MINUS_1)), al)?;
    asm.ret()?;

    // set_vector: BX = IVT offset, DX:AX = handler/pointer.
    asm.bind("set_vector")?;
    asm.push(ds)?;
    asm.push(0)?;
    asm.pop(ds)?;
    asm.mov(word_ptr(bx), ax)?;
    asm.mov(word_ptr(bx + 2), dx)?;
    asm.pop(ds)?;
    asm.ret()?;

    // AL=30h: BH = which pointer → ES:BP, CX = character height, DL = rows - 1.
    asm.bind("font_info")?;
    asm.mov(ax, word_ptr(u32::from(bda::CHAR_HEIGHT)))?;
    asm.mov(word_ptr(bp + frame::CX as i32), ax)?;
    asm.mov(al, byte_ptr(u32::from(bda::ROWS_MINUS_1)))?;
    asm.mov(byte_ptr(bp + frame::DL as i32), al)?;
    let mut vector = asm.create_label();
    asm.cmp(bh, 1)?;
    asm.jbe(vector)?;
    let f14 = asm.addr("font8x14");
    let f8 = asm.addr("font8x8");
    let f16 = asm.addr("font8x16");
    let alt = asm.addr("font_alt_empty");
    let mut store = asm.create_label();
    asm.mov(word_ptr(bp + frame::ES as i32), cs)?;
    for (selector, offset) in [(2, f14), (3, f8), (4, f8.wrapping_add(128 * 8)), (6, f16)] {
        asm.mov(ax, i32::from(offset))?;
        asm.cmp(bh, selector)?;
        asm.je(store)?;
    }
    // 5 and 7: the 9-dot alternate tables; this ROM has none (empty list).
    asm.mov(ax, i32::from(alt))?;
    asm.jmp(store)?;
    asm.set(&mut vector)?;
    asm.push(ds)?;
    asm.push(0)?;
    asm.pop(ds)?;
    asm.mov(bx, 0x1F * 4)?;
    let mut v1f = asm.create_label();
    asm.cmp(byte_ptr(bp + frame::BH as i32), 0)?;
    asm.je(v1f)?;
    asm.mov(bx, 0x43 * 4)?;
    asm.set(&mut v1f)?;
    asm.mov(ax, word_ptr(bx + 2))?;
    asm.mov(word_ptr(bp + frame::ES as i32), ax)?;
    asm.mov(ax, word_ptr(bx))?;
    asm.pop(ds)?;
    asm.set(&mut store)?;
    asm.mov(word_ptr(bp + frame::BP as i32), ax)?;
    asm.ret()?;
    Ok(())
}
