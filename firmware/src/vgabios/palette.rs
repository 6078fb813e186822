//! Palette services: INT 10h AH=0Bh (CGA colour/palette) and AH=10h (attribute
//! controller and DAC subfunctions).

use iced_x86::code_asm::*;

use super::regs::{DAC_DATA, DAC_MASK, DAC_READ_INDEX, DAC_WRITE_INDEX};
use super::{VgaBiosError, bda, frame};
use crate::asm16::Asm;

pub(crate) fn emit(asm: &mut Asm) -> Result<(), VgaBiosError> {
    emit_cga_palette(asm)?;
    emit_palette_dispatch(asm)?;
    emit_attribute_functions(asm)?;
    emit_dac_functions(asm)?;
    Ok(())
}

/// AH=0Bh: BH=0 → BL = background/border colour; BH=1 → BL = CGA palette (0 or 1).
fn emit_cga_palette(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("int10_cga_palette")?;
    let mut select = asm.create_label();
    asm.test(bh, bh)?;
    asm.jnz(select)?;
    // Background: text modes set the border, graphics modes attribute 0 too; bit 4
    // picks the bright colours of palette entries 1–3.
    asm.mov(al, byte_ptr(u32::from(bda::CGA_PALETTE)))?;
    asm.and(al, 0xE0)?;
    asm.mov(ah, bl)?;
    asm.and(ah, 0x1F)?;
    asm.or(al, ah)?;
    asm.mov(byte_ptr(u32::from(bda::CGA_PALETTE)), al)?;
    asm.mov(ah, bl)?;
    asm.and(ah, 0x07)?;
    asm.test(bl, 0x08)?;
    let mut dim = asm.create_label();
    asm.jz(dim)?;
    asm.or(ah, 0x10)?;
    asm.set(&mut dim)?;
    asm.mov(al, 0x11)?;
    asm.call_sym("attr_write")?;
    asm.cmp(byte_ptr(u32::from(bda::MODE)), 3)?;
    let mut out = asm.create_label();
    asm.jbe(out)?;
    asm.cmp(byte_ptr(u32::from(bda::MODE)), 7)?;
    asm.je(out)?;
    asm.mov(al, 0)?;
    asm.call_sym("attr_write")?;
    asm.mov(bl, byte_ptr(u32::from(bda::CGA_PALETTE)))?;
    asm.jmp_sym("cga_palette_apply")?;

    asm.set(&mut select)?;
    asm.mov(al, byte_ptr(u32::from(bda::CGA_PALETTE)))?;
    asm.and(al, 0xDF)?;
    asm.test(bl, 1)?;
    let mut pal0 = asm.create_label();
    asm.jz(pal0)?;
    asm.or(al, 0x20)?;
    asm.set(&mut pal0)?;
    asm.mov(byte_ptr(u32::from(bda::CGA_PALETTE)), al)?;
    asm.mov(bl, al)?;
    // Attributes 1–3: palette 0 = green/red/brown, 1 = cyan/magenta/white; +10h
    // when the intensity bit (4) is set.
    asm.bind("cga_palette_apply")?;
    asm.mov(ah, 0x02)?;
    asm.test(bl, 0x20)?;
    let mut p0 = asm.create_label();
    asm.jz(p0)?;
    asm.mov(ah, 0x03)?;
    asm.set(&mut p0)?;
    asm.test(bl, 0x10)?;
    let mut no_int = asm.create_label();
    asm.jz(no_int)?;
    asm.or(ah, 0x10)?;
    asm.set(&mut no_int)?;
    asm.mov(al, 1)?;
    let mut each = asm.create_label();
    asm.set(&mut each)?;
    asm.call_sym("attr_write")?;
    asm.add(ah, 2)?;
    asm.inc(al)?;
    asm.cmp(al, 3)?;
    asm.jbe(each)?;
    asm.set(&mut out)?;
    asm.ret()?;
    Ok(())
}

fn emit_palette_dispatch(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("int10_palette")?;
    for (sub, name) in [
        (0x00, "pal_set_one"),
        (0x01, "pal_set_overscan"),
        (0x02, "pal_set_all"),
        (0x03, "pal_blink"),
        (0x07, "pal_get_one"),
        (0x08, "pal_get_overscan"),
        (0x09, "pal_get_all"),
        (0x10, "dac_set_one"),
        (0x12, "dac_set_block"),
        (0x13, "pal_colour_page"),
        (0x15, "dac_get_one"),
        (0x17, "dac_get_block"),
        (0x18, "dac_set_mask"),
        (0x19, "dac_get_mask"),
        (0x1A, "pal_get_page_state"),
        (0x1B, "dac_grey_sum"),
    ] {
        let target = asm.l(name);
        asm.cmp(al, sub)?;
        asm.je(target)?;
    }
    asm.ret()?;
    Ok(())
}

fn emit_attribute_functions(asm: &mut Asm) -> Result<(), VgaBiosError> {
    // AL=00h: attribute register BL = BH.
    asm.bind("pal_set_one")?;
    asm.mov(al, bl)?;
    asm.and(al, 0x1F)?;
    asm.mov(ah, bh)?;
    asm.call_sym("attr_write")?;
    asm.ret()?;
    // AL=01h: overscan (border) = BH.
    asm.bind("pal_set_overscan")?;
    asm.mov(al, 0x11)?;
    asm.mov(ah, bh)?;
    asm.call_sym("attr_write")?;
    asm.ret()?;
    // AL=02h: ES:DX → 16 palette registers + overscan.
    asm.bind("pal_set_all")?;
    asm.mov(si, dx)?;
    asm.xor(al, al)?;
    let mut each = asm.create_label();
    asm.set(&mut each)?;
    asm.mov(ah, byte_ptr(si).es())?;
    asm.inc(si)?;
    asm.call_sym("attr_write")?;
    asm.inc(al)?;
    asm.cmp(al, 16)?;
    asm.jb(each)?;
    asm.mov(ah, byte_ptr(si).es())?;
    asm.mov(al, 0x11)?;
    asm.call_sym("attr_write")?;
    asm.ret()?;
    // AL=03h: BL = 0 intensity, 1 blink (mode control bit 3).
    asm.bind("pal_blink")?;
    asm.mov(al, 0x10)?;
    asm.call_sym("attr_read")?;
    asm.and(al, 0xF7)?;
    asm.and(bl, 1)?;
    asm.shl(bl, 3)?;
    asm.or(al, bl)?;
    asm.mov(ah, al)?;
    asm.mov(al, 0x10)?;
    asm.call_sym("attr_write")?;
    asm.ret()?;
    // AL=07h: → BH = attribute register BL.
    asm.bind("pal_get_one")?;
    asm.mov(al, bl)?;
    asm.and(al, 0x1F)?;
    asm.call_sym("attr_read")?;
    asm.mov(byte_ptr(bp + frame::BH as i32), al)?;
    asm.ret()?;
    // AL=08h: → BH = overscan.
    asm.bind("pal_get_overscan")?;
    asm.mov(al, 0x11)?;
    asm.call_sym("attr_read")?;
    asm.mov(byte_ptr(bp + frame::BH as i32), al)?;
    asm.ret()?;
    // AL=09h: 16 palette registers + overscan → ES:DX.
    asm.bind("pal_get_all")?;
    asm.mov(di, dx)?;
    asm.xor(bl, bl)?;
    let mut each = asm.create_label();
    asm.set(&mut each)?;
    asm.mov(al, bl)?;
    asm.call_sym("attr_read")?;
    asm.stosb()?;
    asm.inc(bl)?;
    asm.cmp(bl, 16)?;
    asm.jb(each)?;
    asm.mov(al, 0x11)?;
    asm.call_sym("attr_read")?;
    asm.stosb()?;
    asm.ret()?;
    // AL=13h: BL=0 → paging mode BH (mode control bit 7); BL=1 → colour page BH.
    asm.bind("pal_colour_page")?;
    asm.test(bl, bl)?;
    let mut page = asm.create_label();
    asm.jnz(page)?;
    asm.mov(al, 0x10)?;
    asm.call_sym("attr_read")?;
    asm.and(al, 0x7F)?;
    asm.and(bh, 1)?;
    asm.shl(bh, 7)?;
    asm.or(al, bh)?;
    asm.mov(ah, al)?;
    asm.mov(al, 0x10)?;
    asm.call_sym("attr_write")?;
    asm.ret()?;
    asm.set(&mut page)?;
    asm.mov(al, 0x10)?;
    asm.call_sym("attr_read")?;
    asm.mov(ah, bh)?;
    asm.test(al, 0x80)?;
    let mut sixteen = asm.create_label();
    asm.jnz(sixteen)?;
    asm.shl(ah, 2)?; // 4 pages of 64 colours: page number goes to bits 3:2
    asm.set(&mut sixteen)?;
    asm.and(ah, 0x0F)?;
    asm.mov(al, 0x14)?;
    asm.call_sym("attr_write")?;
    asm.ret()?;
    // AL=1Ah: → BL = paging mode, BH = current colour page.
    asm.bind("pal_get_page_state")?;
    asm.mov(al, 0x10)?;
    asm.call_sym("attr_read")?;
    asm.shr(al, 7)?;
    asm.mov(byte_ptr(bp + frame::BL as i32), al)?;
    asm.mov(bl, al)?;
    asm.mov(al, 0x14)?;
    asm.call_sym("attr_read")?;
    asm.and(al, 0x0F)?;
    asm.test(bl, bl)?;
    let mut done = asm.create_label();
    asm.jnz(done)?;
    asm.shr(al, 2)?;
    asm.set(&mut done)?;
    asm.mov(byte_ptr(bp + frame::BH as i32), al)?;
    asm.ret()?;
    Ok(())
}

fn emit_dac_functions(asm: &mut Asm) -> Result<(), VgaBiosError> {
    // AL=10h: DAC register BX = DH red, CH green, CL blue.
    asm.bind("dac_set_one")?;
    asm.xchg(ax, dx)?; // AH = red, keep DX free for the port
    asm.mov(dx, DAC_WRITE_INDEX)?;
    asm.xchg(al, bl)?;
    asm.out(dx, al)?;
    asm.inc(dx)?;
    asm.mov(al, ah)?;
    asm.out(dx, al)?;
    asm.mov(al, ch)?;
    asm.out(dx, al)?;
    asm.mov(al, cl)?;
    asm.out(dx, al)?;
    asm.ret()?;
    // AL=12h: BX = first register, CX = count, ES:DX = table of R,G,B bytes.
    asm.bind("dac_set_block")?;
    asm.mov(si, dx)?;
    asm.mov(dx, DAC_WRITE_INDEX)?;
    asm.mov(al, bl)?;
    asm.out(dx, al)?;
    asm.inc(dx)?;
    asm.call_sym("dac_count_bytes")?;
    let mut out = asm.create_label();
    asm.jcxz(out)?;
    let mut each = asm.create_label();
    asm.set(&mut each)?;
    asm.mov(al, byte_ptr(si).es())?;
    asm.inc(si)?;
    asm.out(dx, al)?;
    asm.loop_(each)?;
    asm.set(&mut out)?;
    asm.ret()?;
    // AL=15h: → DH, CH, CL = DAC register BX.
    asm.bind("dac_get_one")?;
    asm.mov(dx, DAC_READ_INDEX)?;
    asm.mov(al, bl)?;
    asm.out(dx, al)?;
    asm.mov(dx, DAC_DATA)?;
    asm.in_(al, dx)?;
    asm.mov(byte_ptr(bp + frame::DH as i32), al)?;
    asm.in_(al, dx)?;
    asm.mov(byte_ptr(bp + frame::CH as i32), al)?;
    asm.in_(al, dx)?;
    asm.mov(byte_ptr(bp + frame::CL as i32), al)?;
    asm.ret()?;
    // AL=17h: BX = first, CX = count → ES:DX.
    asm.bind("dac_get_block")?;
    asm.mov(di, dx)?;
    asm.mov(dx, DAC_READ_INDEX)?;
    asm.mov(al, bl)?;
    asm.out(dx, al)?;
    asm.mov(dx, DAC_DATA)?;
    asm.call_sym("dac_count_bytes")?;
    let mut out = asm.create_label();
    asm.jcxz(out)?;
    let mut each = asm.create_label();
    asm.set(&mut each)?;
    asm.in_(al, dx)?;
    asm.stosb()?;
    asm.loop_(each)?;
    asm.set(&mut out)?;
    asm.ret()?;
    // CX = entries (clamped so BX + CX ≤ 256) × 3.
    asm.bind("dac_count_bytes")?;
    asm.mov(ax, 256)?;
    asm.sub(ax, bx)?;
    let mut clamp = asm.create_label();
    {
        let target = asm.l("dac_count_zero");
        asm.jbe(target)?;
    }
    asm.cmp(cx, ax)?;
    asm.jbe(clamp)?;
    asm.mov(cx, ax)?;
    asm.set(&mut clamp)?;
    asm.mov(ax, cx)?;
    asm.add(cx, cx)?;
    asm.add(cx, ax)?;
    asm.ret()?;
    asm.bind("dac_count_zero")?;
    asm.xor(cx, cx)?;
    asm.ret()?;
    // AL=18h / 19h: pixel mask = BL / → BL.
    asm.bind("dac_set_mask")?;
    asm.mov(dx, DAC_MASK)?;
    asm.mov(al, bl)?;
    asm.out(dx, al)?;
    asm.ret()?;
    asm.bind("dac_get_mask")?;
    asm.mov(dx, DAC_MASK)?;
    asm.in_(al, dx)?;
    asm.mov(byte_ptr(bp + frame::BL as i32), al)?;
    asm.ret()?;
    // AL=1Bh: BX = first, CX = count: replace colours by their luminance
    // (0.30 R + 0.59 G + 0.11 B, as 77/151/28 over 256).
    asm.bind("dac_grey_sum")?;
    let mut out = asm.create_label();
    asm.jcxz(out)?;
    let mut each = asm.create_label();
    asm.set(&mut each)?;
    asm.cmp(bx, 256)?;
    asm.jae(out)?;
    asm.mov(dx, DAC_READ_INDEX)?;
    asm.mov(al, bl)?;
    asm.out(dx, al)?;
    asm.mov(dx, DAC_DATA)?;
    asm.in_(al, dx)?;
    asm.mov(ah, 77)?;
    asm.mul(ah)?;
    asm.mov(si, ax)?;
    asm.in_(al, dx)?;
    asm.mov(ah, 151)?;
    asm.mul(ah)?;
    asm.add(si, ax)?;
    asm.in_(al, dx)?;
    asm.mov(ah, 28)?;
    asm.mul(ah)?;
    asm.add(ax, si)?;
    asm.add(ax, 0x80)?;
    asm.mov(al, ah)?;
    asm.mov(dx, DAC_WRITE_INDEX)?;
    asm.push(ax)?;
    asm.mov(al, bl)?;
    asm.out(dx, al)?;
    asm.pop(ax)?;
    asm.inc(dx)?;
    asm.out(dx, al)?;
    asm.out(dx, al)?;
    asm.out(dx, al)?;
    asm.inc(bx)?;
    asm.loop_(each)?;
    asm.set(&mut out)?;
    asm.ret()?;
    Ok(())
}
