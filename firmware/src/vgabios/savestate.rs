//! State save/restore shared by INT 10h AH=1Ch and VBE 4F04h.
//!
//! Buffer layout: the selected groups back to back, in this order —
//! hardware (128 bytes: the registers in the 64-byte parameter-table layout, so the
//! mode-set register loader can restore them), BIOS data (64 bytes), DAC (832 bytes:
//! pixel mask + 256 × RGB), DISPI (64 bytes: registers 1–9).

use iced_x86::code_asm::*;

use super::regs::{DAC_DATA, DAC_MASK, DAC_READ_INDEX, DAC_WRITE_INDEX, MISC_READ, dispi};
use super::vga_modes::{P_ATTR, P_CRTC, P_GC, P_MISC, P_SEQ};
use super::{VgaBiosError, bda};
use crate::asm16::Asm;

pub(crate) const SAVE_BLOCKS_DISPI: u16 = 1;
const HARDWARE_BYTES: i32 = 128;
const BDA_BYTES: i32 = 64;
const DAC_BYTES: i32 = 832;
/// BIOS data ranges saved: (BDA offset, length).
const BDA_RANGES: [(u16, u16); 3] = [
    (bda::MODE, 0x1E),
    (bda::ROWS_MINUS_1, 7),
    (bda::SAVE_POINTER, 4),
];

/// Reads `count` registers with `routine` into `es:[di + offset + index]`.
fn read_loop(
    asm: &mut Asm,
    routine: &'static str,
    offset: u16,
    first: u8,
    count: u8,
) -> Result<(), VgaBiosError> {
    asm.xor(bx, bx)?;
    let mut each = asm.create_label();
    asm.set(&mut each)?;
    asm.mov(al, bl)?;
    if first != 0 {
        asm.add(al, i32::from(first))?;
    }
    asm.call_sym(routine)?;
    asm.mov(byte_ptr(bx + di + i32::from(offset)).es(), al)?;
    asm.inc(bx)?;
    asm.cmp(bx, i32::from(count))?;
    asm.jb(each)?;
    Ok(())
}

/// state_save_restore: AL = 1 save / 2 restore, CL = groups (bit 0 hardware, 1 BDA,
/// 2 DAC, 3 DISPI), ES:DI = buffer. DS = BDA.
pub(crate) fn emit(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("state_save_restore")?;
    asm.mov(ch, al)?; // CH = operation, CL = groups

    // Hardware registers.
    let mut no_hw = asm.create_label();
    asm.test(cl, 1)?;
    asm.jz(no_hw)?;
    let mut hw_restore = asm.create_label();
    let mut hw_done = asm.create_label();
    asm.cmp(ch, 1)?;
    asm.jne(hw_restore)?;
    read_loop(asm, "seq_read", P_SEQ, 1, 4)?;
    read_loop(asm, "crtc_read", P_CRTC, 0, 25)?;
    read_loop(asm, "attr_read", P_ATTR, 0, 20)?;
    read_loop(asm, "gc_read", P_GC, 0, 9)?;
    asm.mov(dx, MISC_READ)?;
    asm.in_(al, dx)?;
    asm.mov(byte_ptr(di + i32::from(P_MISC)).es(), al)?;
    asm.jmp(hw_done)?;
    asm.set(&mut hw_restore)?;
    asm.push(cx)?;
    asm.mov(bx, di)?;
    asm.call_sym("load_regs")?;
    asm.pop(cx)?;
    asm.set(&mut hw_done)?;
    asm.add(di, HARDWARE_BYTES)?;
    asm.set(&mut no_hw)?;

    // BIOS data area fields.
    let mut no_bda = asm.create_label();
    asm.test(cl, 2)?;
    asm.jz(no_bda)?;
    asm.push(cx)?;
    asm.push(di)?;
    let mut bda_restore = asm.create_label();
    let mut bda_done = asm.create_label();
    asm.cmp(ch, 1)?;
    asm.jne(bda_restore)?;
    for (start, len) in BDA_RANGES {
        asm.mov(si, i32::from(start))?;
        asm.mov(cx, i32::from(len))?;
        asm.rep().movsb()?;
    }
    asm.jmp(bda_done)?;
    asm.set(&mut bda_restore)?;
    asm.push(ds)?;
    asm.push(es)?;
    asm.push(es)?;
    asm.push(ds)?;
    asm.pop(es)?; // ES = BDA
    asm.pop(ds)?; // DS = buffer
    asm.mov(si, di)?;
    for (start, len) in BDA_RANGES {
        asm.mov(di, i32::from(start))?;
        asm.mov(cx, i32::from(len))?;
        asm.rep().movsb()?;
    }
    asm.pop(es)?;
    asm.pop(ds)?;
    asm.set(&mut bda_done)?;
    asm.pop(di)?;
    asm.pop(cx)?;
    asm.add(di, BDA_BYTES)?;
    asm.set(&mut no_bda)?;

    // DAC: pixel mask and all 256 entries.
    let mut no_dac = asm.create_label();
    asm.test(cl, 4)?;
    asm.jz(no_dac)?;
    asm.push(cx)?;
    asm.push(di)?;
    let mut dac_restore = asm.create_label();
    let mut dac_done = asm.create_label();
    asm.cmp(ch, 1)?;
    asm.jne(dac_restore)?;
    asm.mov(dx, DAC_MASK)?;
    asm.in_(al, dx)?;
    asm.stosb()?;
    asm.mov(dx, DAC_READ_INDEX)?;
    asm.xor(al, al)?;
    asm.out(dx, al)?;
    asm.mov(dx, DAC_DATA)?;
    asm.mov(cx, 768)?;
    let mut rd = asm.create_label();
    asm.set(&mut rd)?;
    asm.in_(al, dx)?;
    asm.stosb()?;
    asm.loop_(rd)?;
    asm.jmp(dac_done)?;
    asm.set(&mut dac_restore)?;
    asm.mov(dx, DAC_MASK)?;
    asm.mov(al, byte_ptr(di).es())?;
    asm.out(dx, al)?;
    asm.inc(di)?;
    asm.mov(dx, DAC_WRITE_INDEX)?;
    asm.xor(al, al)?;
    asm.out(dx, al)?;
    asm.mov(dx, DAC_DATA)?;
    asm.mov(cx, 768)?;
    let mut wr = asm.create_label();
    asm.set(&mut wr)?;
    asm.mov(al, byte_ptr(di).es())?;
    asm.out(dx, al)?;
    asm.inc(di)?;
    asm.loop_(wr)?;
    asm.set(&mut dac_done)?;
    asm.pop(di)?;
    asm.pop(cx)?;
    asm.add(di, DAC_BYTES)?;
    asm.set(&mut no_dac)?;

    // DISPI registers 1–9 (resolution, depth, enable, bank, virtual size, offsets).
    let mut out = asm.create_label();
    asm.test(cl, 8)?;
    asm.jz(out)?;
    let mut dispi_restore = asm.create_label();
    asm.cmp(ch, 1)?;
    asm.jne(dispi_restore)?;
    asm.mov(bx, 1)?;
    let mut rd = asm.create_label();
    asm.set(&mut rd)?;
    asm.call_sym("dispi_read")?;
    asm.stosw()?;
    asm.inc(bx)?;
    asm.cmp(bx, 9)?;
    asm.jbe(rd)?;
    asm.ret()?;
    asm.set(&mut dispi_restore)?;
    // Disabled while the geometry changes; enabled last, never clearing memory.
    asm.mov(bx, dispi::ENABLE)?;
    asm.xor(ax, ax)?;
    asm.call_sym("dispi_write")?;
    for index in [dispi::XRES, dispi::YRES, dispi::BPP] {
        asm.mov(bx, index)?;
        asm.mov(ax, word_ptr(di + (index - 1) * 2).es())?;
        asm.call_sym("dispi_write")?;
    }
    asm.mov(ax, word_ptr(di + (dispi::ENABLE - 1) * 2).es())?;
    asm.or(ax, dispi::NO_CLEAR_MEM)?;
    asm.mov(bx, dispi::ENABLE)?;
    asm.call_sym("dispi_write")?;
    for index in [
        dispi::BANK,
        dispi::VIRT_WIDTH,
        dispi::VIRT_HEIGHT,
        dispi::X_OFFSET,
        dispi::Y_OFFSET,
    ] {
        asm.mov(bx, index)?;
        asm.mov(ax, word_ptr(di + (index - 1) * 2).es())?;
        asm.call_sym("dispi_write")?;
    }
    asm.set(&mut out)?;
    asm.ret()?;
    Ok(())
}
