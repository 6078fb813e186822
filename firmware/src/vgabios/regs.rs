//! ROM subroutines that access the adapter's registers. Index/data pairs are written
//! with byte accesses (two `out`s), which every VGA implementation accepts.
//!
//! Conventions: AL = register index, AH = value (writes) or AL = result (reads); all
//! other registers are preserved. CRTC and attribute access read the CRTC base port from
//! the BDA, so DS must be 0x40.

use iced_x86::code_asm::*;

use super::{VgaBiosError, bda};
use crate::asm16::Asm;

pub(crate) const SEQ_INDEX: i32 = 0x3C4;
pub(crate) const GC_INDEX: i32 = 0x3CE;
pub(crate) const ATTR_INDEX: i32 = 0x3C0;
pub(crate) const ATTR_READ: i32 = 0x3C1;
pub(crate) const MISC_WRITE: i32 = 0x3C2;
pub(crate) const MISC_READ: i32 = 0x3CC;
pub(crate) const DAC_MASK: i32 = 0x3C6;
pub(crate) const DAC_READ_INDEX: i32 = 0x3C7;
pub(crate) const DAC_WRITE_INDEX: i32 = 0x3C8;
pub(crate) const DAC_DATA: i32 = 0x3C9;
pub(crate) const DISPI_INDEX: i32 = 0x1CE;

/// Bochs DISPI register indices and enable bits.
pub(crate) mod dispi {
    pub const ID: i32 = 0;
    pub const XRES: i32 = 1;
    pub const YRES: i32 = 2;
    pub const BPP: i32 = 3;
    pub const ENABLE: i32 = 4;
    pub const BANK: i32 = 5;
    pub const VIRT_WIDTH: i32 = 6;
    pub const VIRT_HEIGHT: i32 = 7;
    pub const X_OFFSET: i32 = 8;
    pub const Y_OFFSET: i32 = 9;
    pub const VIDEO_MEMORY_64K: i32 = 10;
    pub const ENABLED: i32 = 0x01;
    pub const DAC_8BIT: i32 = 0x20;
    pub const LFB_ENABLED: i32 = 0x40;
    pub const NO_CLEAR_MEM: i32 = 0x80;
}

/// Index/data write at a fixed index port: AL = index, AH = value.
fn emit_indexed_write(asm: &mut Asm, name: &'static str, port: i32) -> Result<(), VgaBiosError> {
    asm.bind(name)?;
    asm.push(dx)?;
    asm.mov(dx, port)?;
    asm.out(dx, al)?;
    asm.inc(dx)?;
    asm.xchg(al, ah)?;
    asm.out(dx, al)?;
    asm.xchg(al, ah)?;
    asm.pop(dx)?;
    asm.ret()?;
    Ok(())
}

/// Index/data read at a fixed index port: AL = index → AL = value.
fn emit_indexed_read(asm: &mut Asm, name: &'static str, port: i32) -> Result<(), VgaBiosError> {
    asm.bind(name)?;
    asm.push(dx)?;
    asm.mov(dx, port)?;
    asm.out(dx, al)?;
    asm.inc(dx)?;
    asm.in_(al, dx)?;
    asm.pop(dx)?;
    asm.ret()?;
    Ok(())
}

/// DX = CRTC index port (3B4h or 3D4h) from the BDA.
fn load_crtc_port(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.mov(dx, word_ptr(bda::CRTC_PORT as u32))?;
    Ok(())
}

/// Resets the attribute controller's index/data flip-flop by reading Input Status 1.
fn reset_attr_flipflop(asm: &mut Asm) -> Result<(), VgaBiosError> {
    load_crtc_port(asm)?;
    asm.add(dx, 6)?;
    asm.push(ax)?;
    asm.in_(al, dx)?;
    asm.pop(ax)?;
    Ok(())
}

pub(crate) fn emit(asm: &mut Asm) -> Result<(), VgaBiosError> {
    emit_indexed_write(asm, "seq_write", SEQ_INDEX)?;
    emit_indexed_read(asm, "seq_read", SEQ_INDEX)?;
    emit_indexed_write(asm, "gc_write", GC_INDEX)?;
    emit_indexed_read(asm, "gc_read", GC_INDEX)?;

    asm.bind("crtc_write")?;
    asm.push(dx)?;
    load_crtc_port(asm)?;
    asm.out(dx, al)?;
    asm.inc(dx)?;
    asm.xchg(al, ah)?;
    asm.out(dx, al)?;
    asm.xchg(al, ah)?;
    asm.pop(dx)?;
    asm.ret()?;

    asm.bind("crtc_read")?;
    asm.push(dx)?;
    load_crtc_port(asm)?;
    asm.out(dx, al)?;
    asm.inc(dx)?;
    asm.in_(al, dx)?;
    asm.pop(dx)?;
    asm.ret()?;

    // Attribute writes leave the palette address source bit (0x20) set so the display
    // stays on.
    asm.bind("attr_write")?;
    asm.push(dx)?;
    reset_attr_flipflop(asm)?;
    asm.mov(dx, ATTR_INDEX)?;
    asm.out(dx, al)?;
    asm.xchg(al, ah)?;
    asm.out(dx, al)?;
    asm.xchg(al, ah)?;
    asm.push(ax)?;
    asm.mov(al, 0x20)?;
    asm.out(dx, al)?;
    asm.pop(ax)?;
    asm.pop(dx)?;
    asm.ret()?;

    asm.bind("attr_read")?;
    asm.push(dx)?;
    reset_attr_flipflop(asm)?;
    asm.mov(dx, ATTR_INDEX)?;
    asm.out(dx, al)?;
    asm.mov(dx, ATTR_READ)?;
    asm.in_(al, dx)?;
    asm.push(ax)?;
    reset_attr_flipflop(asm)?;
    asm.mov(dx, ATTR_INDEX)?;
    asm.mov(al, 0x20)?;
    asm.out(dx, al)?;
    asm.pop(ax)?;
    asm.pop(dx)?;
    asm.ret()?;

    // DISPI: BX = index, AX = value (write) / AX = result (read).
    asm.bind("dispi_write")?;
    asm.push(dx)?;
    asm.mov(dx, DISPI_INDEX)?;
    asm.xchg(ax, bx)?;
    asm.out(dx, ax)?;
    asm.xchg(ax, bx)?;
    asm.inc(dx)?;
    asm.out(dx, ax)?;
    asm.pop(dx)?;
    asm.ret()?;

    asm.bind("dispi_read")?;
    asm.push(dx)?;
    asm.mov(dx, DISPI_INDEX)?;
    asm.mov(ax, bx)?;
    asm.out(dx, ax)?;
    asm.inc(dx)?;
    asm.in_(ax, dx)?;
    asm.pop(dx)?;
    asm.ret()?;
    Ok(())
}

/// Emits `mov al, index; mov ah, value; call routine` for a constant register write.
pub(crate) fn write_const(
    asm: &mut Asm,
    routine: &'static str,
    index: u8,
    value: u8,
) -> Result<(), VgaBiosError> {
    asm.mov(ax, (i32::from(value) << 8) | i32::from(index))?;
    Ok(asm.call_sym(routine)?)
}
