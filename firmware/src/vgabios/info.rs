//! Status and configuration services: INT 10h AH=0Fh (current mode), 12h (alternate
//! select), 1Ah (display combination), 1Bh (functionality/state), 1Ch (save/restore).

use iced_x86::code_asm::*;

use super::regs::MISC_READ;
use super::{VgaBiosError, bda, frame, mode_rec as m};
use crate::asm16::Asm;

fn bda_b(offset: u16) -> AsmMemoryOperand {
    byte_ptr(u32::from(offset))
}

/// Display combination code: VGA with analog colour display.
const DCC_VGA_COLOUR: i32 = 0x08;

/// Size of each state group saved by AH=1Ch, in 64-byte blocks.
pub(crate) const SAVE_BLOCKS_HARDWARE: u16 = 2;
pub(crate) const SAVE_BLOCKS_BDA: u16 = 1;
pub(crate) const SAVE_BLOCKS_DAC: u16 = 13;

pub(crate) fn emit(asm: &mut Asm) -> Result<(), VgaBiosError> {
    // AH=0Fh: → AL = mode (bit 7 = memory kept), AH = columns, BH = active page.
    asm.bind("int10_get_mode")?;
    asm.mov(al, bda_b(bda::VIDEO_CTL))?;
    asm.and(al, 0x80)?;
    asm.or(al, bda_b(bda::MODE))?;
    asm.mov(ah, bda_b(bda::COLUMNS))?;
    asm.mov(word_ptr(bp + frame::AX as i32), ax)?;
    asm.mov(al, bda_b(bda::ACTIVE_PAGE))?;
    asm.mov(byte_ptr(bp + frame::BH as i32), al)?;
    asm.ret()?;

    emit_alternate_select(asm)?;

    // AH=1Ah: AL=0 → BX = display combination; AL=1 → set it from BL.
    asm.bind("int10_display_combination")?;
    let mut out = asm.create_label();
    asm.cmp(al, 1)?;
    asm.ja(out)?;
    asm.mov(byte_ptr(bp + frame::AL as i32), 0x1A)?;
    let mut set = asm.create_label();
    asm.je(set)?;
    asm.mov(word_ptr(bp + frame::BX as i32), DCC_VGA_COLOUR)?;
    asm.ret()?;
    asm.set(&mut set)?;
    asm.mov(bda_b(bda::DCC_INDEX), bl)?;
    asm.set(&mut out)?;
    asm.ret()?;

    emit_state_info(asm)?;
    emit_save_restore(asm)?;
    Ok(())
}

/// AH=12h, selected by BL.
fn emit_alternate_select(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("int10_alt_select")?;
    for (sub, name) in [
        (0x10, "alt_ega_info"),
        (0x30, "alt_scan_lines"),
        (0x31, "alt_palette_loading"),
        (0x32, "alt_video_enable"),
        (0x33, "alt_grey_summing"),
        (0x34, "alt_cursor_emulation"),
        (0x36, "alt_screen_enable"),
    ] {
        let l = asm.l(name);
        asm.cmp(bl, sub)?;
        asm.je(l)?;
    }
    asm.ret()?;

    // BL=10h: → BH = 0 colour, BL = 3 (256 KiB), CH = feature bits, CL = switches.
    asm.bind("alt_ega_info")?;
    asm.mov(word_ptr(bp + frame::BX as i32), 0x0003)?;
    asm.mov(cl, bda_b(bda::SWITCHES))?;
    asm.and(cl, 0x0F)?;
    asm.xor(ch, ch)?;
    asm.mov(word_ptr(bp + frame::CX as i32), cx)?;
    asm.ret()?;

    // BL=30h: AL = 0/1/2 → 200/350/400 scan lines for the next text mode set, recorded
    // in the BDA (0x489 bit 7 = 200, bit 4 = 400, neither = 350).
    asm.bind("alt_scan_lines")?;
    asm.cmp(al, 2)?;
    let mut bad = asm.create_label();
    asm.ja(bad)?;
    asm.mov(ah, bda_b(bda::VGA_FLAGS))?;
    asm.and(ah, 0x6F)?;
    let mut store = asm.create_label();
    asm.cmp(al, 1)?;
    asm.je(store)?; // 350: both clear
    asm.or(ah, 0x10)?; // 400
    asm.test(al, al)?;
    asm.jnz(store)?;
    asm.xor(ah, 0x90)?; // 200: bit 7 only
    asm.set(&mut store)?;
    asm.mov(bda_b(bda::VGA_FLAGS), ah)?;
    asm.jmp_sym("alt_ok")?;
    asm.set(&mut bad)?;
    asm.ret()?;

    // BL=31h: AL=0 enable / 1 disable default palette loading on mode sets.
    asm.bind("alt_palette_loading")?;
    flag_bit(asm, bda::VGA_FLAGS, 0x08, true)?;
    // BL=33h: AL=0 enable / 1 disable grey summing.
    asm.bind("alt_grey_summing")?;
    flag_bit(asm, bda::VGA_FLAGS, 0x02, false)?;
    // BL=34h: AL=0 enable / 1 disable cursor emulation.
    asm.bind("alt_cursor_emulation")?;
    flag_bit(asm, bda::VIDEO_CTL, 0x01, true)?;

    // BL=32h: AL=0 enable / 1 disable CPU access to video memory (misc output bit 1).
    asm.bind("alt_video_enable")?;
    asm.mov(ah, al)?;
    asm.mov(dx, MISC_READ)?;
    asm.in_(al, dx)?;
    asm.or(al, 0x02)?;
    asm.test(ah, ah)?;
    let mut write = asm.create_label();
    asm.jz(write)?;
    asm.and(al, 0xFD)?;
    asm.set(&mut write)?;
    asm.mov(dx, super::regs::MISC_WRITE)?;
    asm.out(dx, al)?;
    asm.jmp_sym("alt_ok")?;

    // BL=36h: AL=0 screen on / 1 off (sequencer clocking mode bit 5).
    asm.bind("alt_screen_enable")?;
    asm.mov(ah, al)?;
    asm.mov(al, 1)?;
    asm.call_sym("seq_read")?;
    asm.and(al, 0xDF)?;
    asm.test(ah, ah)?;
    let mut on = asm.create_label();
    asm.jz(on)?;
    asm.or(al, 0x20)?;
    asm.set(&mut on)?;
    asm.mov(ah, al)?;
    asm.mov(al, 1)?;
    asm.call_sym("seq_write")?;

    asm.bind("alt_ok")?;
    asm.mov(byte_ptr(bp + frame::AL as i32), 0x12)?;
    asm.ret()?;
    Ok(())
}

/// AL=0 clears (or, if `set_disables`, clears = enable) `mask` in the BDA byte; AL=1
/// the opposite. Ends with the AL=12h success return.
fn flag_bit(asm: &mut Asm, offset: u16, mask: i32, set_disables: bool) -> Result<(), VgaBiosError> {
    let mut set_it = asm.create_label();
    let mut done = asm.create_label();
    asm.cmp(al, 1)?;
    let mut bad = asm.create_label();
    asm.ja(bad)?;
    asm.test(al, al)?;
    if set_disables {
        asm.jnz(set_it)?;
    } else {
        asm.jz(set_it)?;
    }
    asm.and(bda_b(offset), !mask & 0xFF)?;
    asm.jmp(done)?;
    asm.set(&mut set_it)?;
    asm.or(bda_b(offset), mask)?;
    asm.set(&mut done)?;
    let ok = asm.l("alt_ok");
    asm.jmp(ok)?;
    asm.set(&mut bad)?;
    asm.ret()?;
    Ok(())
}

/// AH=1Bh, BX=0: 64-byte state table at ES:DI.
fn emit_state_info(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("int10_state_info")?;
    let mut out = asm.create_label();
    asm.test(bx, bx)?;
    asm.jnz(out)?;
    asm.push(di)?;
    asm.mov(cx, 32)?;
    asm.xor(ax, ax)?;
    asm.rep().stosw()?;
    asm.pop(di)?;
    let table = asm.addr("static_functionality");
    asm.mov(ax, i32::from(table))?;
    asm.stosw()?;
    asm.mov(ax, cs)?;
    asm.stosw()?;
    // BDA 0x49–0x66 has exactly the layout of table bytes 04h–21h.
    asm.mov(si, i32::from(bda::MODE))?;
    asm.mov(cx, 0x1E)?;
    asm.rep().movsb()?;
    asm.mov(al, bda_b(bda::ROWS_MINUS_1))?;
    asm.inc(al)?;
    asm.stosb()?; // 22h rows
    asm.mov(ax, word_ptr(u32::from(bda::CHAR_HEIGHT)))?;
    asm.stosw()?; // 23h character height
    asm.mov(al, DCC_VGA_COLOUR)?;
    asm.stosb()?; // 25h active display
    asm.xor(al, al)?;
    asm.stosb()?; // 26h alternate display
    asm.call_sym("current_mode")?;
    let mut after_mode = asm.create_label();
    asm.jc(after_mode)?;
    asm.mov(ax, word_ptr(si + m::COLOURS as i32).cs())?;
    asm.mov(word_ptr(di).es(), ax)?; // 27h colours
    asm.mov(al, byte_ptr(si + m::PAGES as i32).cs())?;
    asm.mov(byte_ptr(di + 2).es(), al)?; // 29h pages
    // 2Ah scan line code from rows × cell height: 200/350/400/480 → 0/1/2/3.
    asm.mov(al, bda_b(bda::ROWS_MINUS_1))?;
    asm.inc(al)?;
    asm.mul(bda_b(bda::CHAR_HEIGHT))?;
    asm.mov(bl, 0)?;
    for (limit, code) in [(200, 0), (350, 1), (400, 2)] {
        let mut next = asm.create_label();
        asm.cmp(ax, limit)?;
        asm.ja(next)?;
        asm.mov(bl, code)?;
        asm.jmp_sym("state_scan_done")?;
        asm.set(&mut next)?;
    }
    asm.mov(bl, 3)?;
    asm.bind("state_scan_done")?;
    asm.mov(byte_ptr(di + 3).es(), bl)?;
    asm.set(&mut after_mode)?;
    // 2Bh/2Ch font blocks from the character map select register.
    asm.mov(al, 3)?;
    asm.call_sym("seq_read")?;
    asm.mov(ah, al)?;
    asm.and(al, 0x03)?;
    asm.test(ah, 0x10)?;
    let mut p = asm.create_label();
    asm.jz(p)?;
    asm.or(al, 0x04)?;
    asm.set(&mut p)?;
    asm.mov(byte_ptr(di + 4).es(), al)?;
    asm.mov(al, ah)?;
    asm.shr(al, 2)?;
    asm.and(al, 0x03)?;
    asm.test(ah, 0x20)?;
    let mut s = asm.create_label();
    asm.jz(s)?;
    asm.or(al, 0x04)?;
    asm.set(&mut s)?;
    asm.mov(byte_ptr(di + 5).es(), al)?;
    // 2Dh misc flags: blink (bit 5), cursor emulation (bit 4... inverted 0x487 bit 0).
    asm.mov(al, 0x10)?;
    asm.call_sym("attr_read")?;
    asm.and(al, 0x08)?;
    asm.shl(al, 2)?;
    asm.test(bda_b(bda::VIDEO_CTL), 0x01)?;
    let mut no_emu = asm.create_label();
    asm.jnz(no_emu)?;
    asm.or(al, 0x10)?;
    asm.set(&mut no_emu)?;
    asm.mov(byte_ptr(di + 6).es(), al)?;
    asm.mov(byte_ptr(di + 10).es(), 3)?; // 31h: 256 KiB
    asm.mov(byte_ptr(bp + frame::AL as i32), 0x1B)?;
    asm.set(&mut out)?;
    asm.ret()?;
    Ok(())
}

/// AH=1Ch: AL=0 size query (CX = groups: bit 0 hardware, 1 BDA, 2 DAC → BX = 64-byte
/// blocks); AL=1 save / AL=2 restore to/from ES:BX.
fn emit_save_restore(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("int10_save_restore")?;
    let mut out = asm.create_label();
    asm.test(al, al)?;
    let mut not_size = asm.create_label();
    asm.jnz(not_size)?;
    asm.xor(bx, bx)?;
    for (bit, blocks) in [
        (1, SAVE_BLOCKS_HARDWARE),
        (2, SAVE_BLOCKS_BDA),
        (4, SAVE_BLOCKS_DAC),
    ] {
        let mut skip = asm.create_label();
        asm.test(cl, bit)?;
        asm.jz(skip)?;
        asm.add(bx, i32::from(blocks))?;
        asm.set(&mut skip)?;
    }
    asm.mov(word_ptr(bp + frame::BX as i32), bx)?;
    asm.mov(byte_ptr(bp + frame::AL as i32), 0x1C)?;
    asm.ret()?;
    asm.set(&mut not_size)?;
    asm.cmp(al, 2)?;
    asm.ja(out)?;
    asm.mov(di, bx)?;
    asm.call_sym("state_save_restore")?;
    asm.mov(byte_ptr(bp + frame::AL as i32), 0x1C)?;
    asm.set(&mut out)?;
    asm.ret()?;
    Ok(())
}
