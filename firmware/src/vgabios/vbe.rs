//! VBE 3.0 (INT 10h AH=4Fh) on the Bochs DISPI interface, and VBE/DDC (AX=4F15h).
//!
//! Everything is read from or written to the adapter: the current mode is recovered
//! from the DISPI registers, the framebuffer address from the device's PCI LFB BAR (BAR2), the
//! memory size from the DISPI video-memory register. The ROM keeps no writable state.

use iced_x86::code_asm::*;

use super::regs::{DAC_DATA, DAC_READ_INDEX, DAC_WRITE_INDEX, dispi};
use super::vbe_modes::{
    MI_BANK_IMAGE_PAGES, MI_BPP, MI_BYTES_PER_LINE, MI_LIN_IMAGE_PAGES, MI_PHYS_BASE,
    MI_WIN_FUNC_SEG, MI_XRES, MI_YRES, MODE_INFO_TEMPLATE_LEN, MODE_RECORD_LEN,
};
use super::{VGA_PCI_DEVICE, VGA_PCI_LFB_BAR, VGA_PCI_VENDOR, VgaBiosError, bda, frame};
use crate::asm16::Asm;

/// Bochs' default LFB address, used if the PCI device cannot be found.
const FALLBACK_LFB: i32 = 0xE000_0000_u32 as i32;
/// DISPI interface versions: ID0 is the oldest, ID5 adds the video memory size.
const DISPI_ID0: i32 = 0xB0C0;
const DISPI_ID5: i32 = 0xB0C5;
/// Memory assumed when the adapter does not report its size: 16 MiB.
const FALLBACK_MEMORY_64K: i32 = 256;

/// Offset of a ModeInfoBlock field inside a ROM mode record.
fn rec(field: u16) -> i32 {
    2 + i32::from(field)
}

fn result(asm: &mut Asm, status: i32) -> Result<(), VgaBiosError> {
    asm.mov(word_ptr(bp + frame::AX as i32), status)?;
    asm.ret()?;
    Ok(())
}

pub(crate) fn emit(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("int10_vbe")?;
    // Everything but DDC needs the Bochs DISPI interface: announce the newest interface
    // version (ID5, which has the video memory register) and check the adapter answers.
    asm.cmp(al, 0x15)?;
    let mut present = asm.create_label();
    asm.je(present)?;
    asm.push(ax)?;
    asm.push(bx)?;
    asm.mov(bx, dispi::ID)?;
    asm.mov(ax, DISPI_ID5)?;
    asm.call_sym("dispi_write")?;
    asm.call_sym("dispi_read")?;
    asm.and(ax, 0xFFF0)?;
    asm.cmp(ax, DISPI_ID0)?;
    asm.pop(bx)?;
    asm.pop(ax)?;
    let fail = asm.l("vbe_fail");
    asm.jne(fail)?;
    asm.set(&mut present)?;
    for (sub, name) in [
        (0x00, "vbe_controller_info"),
        (0x01, "vbe_mode_info"),
        (0x02, "vbe_set_mode"),
        (0x03, "vbe_get_mode"),
        (0x04, "vbe_state"),
        (0x05, "vbe_window"),
        (0x06, "vbe_scanline"),
        (0x07, "vbe_display_start"),
        (0x08, "vbe_dac_width"),
        (0x09, "vbe_palette"),
        (0x0A, "vbe_fail"),
        (0x15, "vbe_ddc"),
    ] {
        let l = asm.l(name);
        asm.cmp(al, sub)?;
        asm.je(l)?;
    }
    // Unknown function: AL != 4Fh tells the caller it is not supported.
    result(asm, 0x0100)?;
    asm.bind("vbe_ok")?;
    result(asm, 0x004F)?;
    asm.bind("vbe_fail")?;
    result(asm, 0x014F)?;
    asm.bind("vbe_invalid_in_mode")?;
    result(asm, 0x034F)?;

    emit_helpers(asm)?;
    emit_controller_info(asm)?;
    emit_mode_info(asm)?;
    emit_set_get_mode(asm)?;
    emit_state(asm)?;
    emit_window(asm)?;
    emit_scanline_and_start(asm)?;
    emit_palette(asm)?;
    emit_ddc(asm)?;
    Ok(())
}

fn emit_helpers(asm: &mut Asm) -> Result<(), VgaBiosError> {
    // vbe_memory_64k: → AX = video memory in 64 KiB units.
    asm.bind("vbe_memory_64k")?;
    asm.push(bx)?;
    asm.mov(bx, dispi::VIDEO_MEMORY_64K)?;
    asm.call_sym("dispi_read")?;
    asm.pop(bx)?;
    let mut bad = asm.create_label();
    asm.test(ax, ax)?;
    asm.jz(bad)?;
    asm.cmp(ax, 0x1000)?; // more than 256 MiB: not a real answer
    asm.ja(bad)?;
    asm.ret()?;
    asm.set(&mut bad)?;
    asm.mov(ax, FALLBACK_MEMORY_64K)?;
    asm.ret()?;

    // vbe_find_mode: CX = mode number (flags ignored) → SI = record, CF if unknown or
    // too large for the adapter's memory. Preserves other registers.
    asm.bind("vbe_find_mode")?;
    asm.push(eax)?;
    asm.push(ebx)?;
    asm.push(cx)?;
    asm.push(edx)?;
    asm.and(cx, 0x1FF)?;
    let table = asm.addr("vbe_mode_table");
    asm.mov(si, i32::from(table))?;
    let mut scan = asm.create_label();
    let mut fail = asm.create_label();
    let mut found = asm.create_label();
    let mut done = asm.create_label();
    asm.set(&mut scan)?;
    asm.mov(ax, word_ptr(si).cs())?;
    asm.cmp(ax, 0xFFFF)?;
    asm.je(fail)?;
    asm.cmp(ax, cx)?;
    asm.je(found)?;
    asm.add(si, MODE_RECORD_LEN as i32)?;
    asm.jmp(scan)?;
    asm.set(&mut found)?;
    asm.call_sym("vbe_mode_fits")?;
    asm.jmp(done)?;
    asm.set(&mut fail)?;
    asm.stc()?;
    asm.set(&mut done)?;
    asm.pop(edx)?;
    asm.pop(cx)?;
    asm.pop(ebx)?;
    asm.pop(eax)?;
    asm.ret()?;

    // vbe_mode_fits: SI = record → CF if one frame exceeds video memory; EAX = frame
    // bytes, EBX = memory bytes. Clobbers EDX.
    asm.bind("vbe_mode_fits")?;
    asm.movzx(eax, word_ptr(si + rec(MI_BYTES_PER_LINE)).cs())?;
    asm.movzx(edx, word_ptr(si + rec(MI_YRES)).cs())?;
    asm.imul_2(eax, edx)?;
    asm.push(eax)?;
    asm.call_sym("vbe_memory_64k")?;
    asm.movzx(ebx, ax)?;
    asm.shl(ebx, 16)?;
    asm.pop(eax)?;
    asm.cmp(ebx, eax)?; // CF when memory < frame
    asm.ret()?;

    // vbe_lfb_base: → EAX = the LFB BAR of the first display function on bus 0.
    asm.bind("vbe_lfb_base")?;
    asm.push(ebx)?;
    asm.push(dx)?;
    asm.mov(ebx, 0x8000_0000_u32 as i32)?;
    let mut next = asm.create_label();
    let mut found = asm.create_label();
    let mut out = asm.create_label();
    asm.set(&mut next)?;
    asm.mov(eax, ebx)?;
    asm.mov(dx, 0xCF8)?;
    asm.out(dx, eax)?;
    asm.mov(dx, 0xCFC)?;
    asm.in_(eax, dx)?;
    asm.cmp(
        eax,
        ((u32::from(VGA_PCI_DEVICE) << 16) | u32::from(VGA_PCI_VENDOR)) as i32,
    )?;
    asm.je(found)?;
    asm.add(ebx, 0x800)?; // next device, function 0
    asm.cmp(ebx, 0x8001_0000_u32 as i32)?;
    asm.jb(next)?;
    asm.mov(eax, FALLBACK_LFB)?;
    asm.jmp(out)?;
    asm.set(&mut found)?;
    asm.lea(
        eax,
        dword_ptr(ebx + (0x10 + 4 * i32::from(VGA_PCI_LFB_BAR))),
    )?;
    asm.mov(dx, 0xCF8)?;
    asm.out(dx, eax)?;
    asm.mov(dx, 0xCFC)?;
    asm.in_(eax, dx)?;
    asm.and(al, 0xF0)?;
    asm.set(&mut out)?;
    asm.pop(dx)?;
    asm.pop(ebx)?;
    asm.ret()?;

    // copy_cstr: CS:SI → ES:DI including the NUL; DI ends after it.
    asm.bind("copy_cstr")?;
    let mut each = asm.create_label();
    asm.set(&mut each)?;
    asm.mov(al, byte_ptr(si).cs())?;
    asm.inc(si)?;
    asm.stosb()?;
    asm.test(al, al)?;
    asm.jnz(each)?;
    asm.ret()?;
    Ok(())
}

/// 4F00h: VbeInfoBlock at ES:DI (512 bytes if the caller put "VBE2" there, else 256).
fn emit_controller_info(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("vbe_controller_info")?;
    asm.xor(bx, bx)?; // BX = 1 for a VBE 2.0+ request
    asm.cmp(dword_ptr(di).es(), 0x3245_4256)?; // "VBE2"
    let mut v1 = asm.create_label();
    asm.jne(v1)?;
    asm.inc(bx)?;
    asm.set(&mut v1)?;
    asm.push(di)?;
    asm.mov(cx, 128)?; // words
    asm.test(bx, bx)?;
    let mut small = asm.create_label();
    asm.jz(small)?;
    asm.mov(cx, 256)?;
    asm.set(&mut small)?;
    asm.xor(ax, ax)?;
    asm.rep().stosw()?;
    asm.pop(di)?;
    asm.mov(dword_ptr(di).es(), 0x4153_4556)?; // "VESA"
    asm.mov(word_ptr(di + 4).es(), 0x0300)?;
    // Capabilities: DAC switchable to 8 bits, VGA compatible, normal RAMDAC.
    asm.mov(dword_ptr(di + 0x0A).es(), 1)?;
    asm.lea(ax, word_ptr(di + 0x22))?; // mode list in the reserved area
    asm.mov(word_ptr(di + 0x0E).es(), ax)?;
    asm.mov(word_ptr(di + 0x10).es(), es)?;
    asm.call_sym("vbe_memory_64k")?;
    asm.mov(word_ptr(di + 0x12).es(), ax)?;
    asm.mov(word_ptr(di + 0x14).es(), 0x0100)?; // OEM software revision 1.0

    // Mode list: every mode that fits in video memory, then FFFFh.
    asm.push(di)?;
    asm.add(di, 0x22)?;
    let table = asm.addr("vbe_mode_table");
    asm.mov(si, i32::from(table))?;
    let mut scan = asm.create_label();
    let mut end = asm.create_label();
    asm.set(&mut scan)?;
    asm.mov(cx, word_ptr(si).cs())?;
    asm.cmp(cx, 0xFFFF)?;
    asm.je(end)?;
    asm.push(bx)?;
    asm.call_sym("vbe_mode_fits")?;
    asm.pop(bx)?;
    let mut skip = asm.create_label();
    asm.jc(skip)?;
    asm.mov(ax, cx)?;
    asm.stosw()?;
    asm.set(&mut skip)?;
    asm.add(si, MODE_RECORD_LEN as i32)?;
    asm.jmp(scan)?;
    asm.set(&mut end)?;
    asm.mov(ax, 0xFFFF)?;
    asm.stosw()?;
    asm.pop(di)?;

    let strings = [
        (0x06, "vbe_oem_string"),
        (0x16, "vbe_vendor_name"),
        (0x1A, "vbe_product_name"),
        (0x1E, "vbe_product_rev"),
    ];
    asm.test(bx, bx)?;
    let mut rom_strings = asm.create_label();
    asm.jz(rom_strings)?;
    // VBE 2.0+: strings go to the OemData area so the block is self-contained.
    asm.mov(bx, di)?;
    asm.add(di, 0x100)?;
    for (field, symbol) in strings {
        asm.mov(word_ptr(bx + field).es(), di)?;
        asm.mov(word_ptr(bx + field + 2).es(), es)?;
        let addr = asm.addr(symbol);
        asm.mov(si, i32::from(addr))?;
        asm.call_sym("copy_cstr")?;
    }
    asm.jmp_sym("vbe_ok")?;
    // VBE 1.x callers get the OEM string in the ROM.
    asm.set(&mut rom_strings)?;
    let addr = asm.addr("vbe_oem_string");
    asm.mov(word_ptr(di + 0x06).es(), i32::from(addr))?;
    asm.mov(word_ptr(di + 0x08).es(), cs)?;
    asm.jmp_sym("vbe_ok")?;
    Ok(())
}

/// 4F01h: CX = mode → 256-byte ModeInfoBlock at ES:DI.
fn emit_mode_info(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("vbe_mode_info")?;
    asm.call_sym("vbe_find_mode")?;
    let fail = asm.l("vbe_fail");
    asm.jc(fail)?;
    asm.push(di)?;
    asm.mov(cx, 128)?;
    asm.xor(ax, ax)?;
    asm.rep().stosw()?;
    asm.pop(di)?;
    asm.push(di)?;
    asm.push(si)?;
    asm.push(ds)?;
    asm.push(cs)?;
    asm.pop(ds)?;
    asm.add(si, 2)?;
    asm.mov(cx, MODE_INFO_TEMPLATE_LEN as i32)?;
    asm.rep().movsb()?;
    asm.pop(ds)?;
    asm.pop(si)?;
    asm.pop(di)?;
    asm.mov(word_ptr(di + MI_WIN_FUNC_SEG as i32).es(), cs)?;
    asm.call_sym("vbe_lfb_base")?;
    asm.mov(dword_ptr(di + MI_PHYS_BASE as i32).es(), eax)?;
    // Image pages beyond the first that fit in memory (capped at 255).
    asm.call_sym("vbe_mode_fits")?;
    asm.xchg(eax, ebx)?;
    asm.xor(edx, edx)?;
    asm.div(ebx)?;
    asm.dec(eax)?;
    asm.cmp(eax, 255)?;
    let mut ok = asm.create_label();
    asm.jbe(ok)?;
    asm.mov(al, 255)?;
    asm.set(&mut ok)?;
    asm.mov(byte_ptr(di + MI_BANK_IMAGE_PAGES as i32).es(), al)?;
    asm.mov(byte_ptr(di + MI_LIN_IMAGE_PAGES as i32).es(), al)?;
    asm.mov(byte_ptr(di + MI_LIN_IMAGE_PAGES as i32 + 1).es(), al)?;
    asm.jmp_sym("vbe_ok")?;
    Ok(())
}

/// 4F02h (BX = mode, bit 14 = LFB, bit 15 = keep memory) and 4F03h.
fn emit_set_get_mode(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("vbe_set_mode")?;
    asm.mov(ax, bx)?;
    asm.and(ax, 0x1FF)?;
    asm.cmp(ax, 0x100)?;
    let mut vesa = asm.create_label();
    asm.jae(vesa)?;
    // A VGA mode number: the ordinary mode set.
    asm.test(bh, 0x80)?;
    let mut clear = asm.create_label();
    asm.jz(clear)?;
    asm.or(al, 0x80)?;
    asm.set(&mut clear)?;
    asm.call_sym("set_mode")?;
    let fail = asm.l("vbe_fail");
    asm.jc(fail)?;
    asm.jmp_sym("vbe_ok")?;

    asm.set(&mut vesa)?;
    asm.mov(cx, ax)?;
    asm.call_sym("vbe_find_mode")?;
    asm.jc(fail)?;
    asm.push(bx)?; // keep the flags (bit 14 LFB, bit 15 keep memory)
    // Put the VGA into a flat 256-colour graphics state (A0000 64 KiB window for banked
    // access) before the DISPI interface takes over the display.
    asm.mov(bx, dispi::ENABLE)?;
    asm.xor(ax, ax)?;
    asm.call_sym("dispi_write")?;
    asm.push(si)?;
    asm.mov(al, 0x13)?;
    asm.call_sym("find_mode")?;
    asm.push(es)?;
    asm.push(cs)?;
    asm.pop(es)?;
    asm.mov(bx, word_ptr(si + super::mode_rec::PARAMS as i32).cs())?;
    asm.mov(word_ptr(u32::from(bda::CRTC_PORT)), 0x3D4)?;
    asm.call_sym("load_regs")?;
    asm.pop(es)?;
    asm.mov(di, si)?;
    asm.pop(si)?;
    asm.cmp(byte_ptr(si + rec(MI_BPP)).cs(), 8)?;
    let mut no_palette = asm.create_label();
    asm.jne(no_palette)?;
    asm.push(si)?;
    asm.mov(si, di)?;
    asm.call_sym("load_dac")?;
    asm.pop(si)?;
    asm.set(&mut no_palette)?;
    // DISPI takes widths in multiples of 8 pixels (as Bochs and QEMU do): a 1366-wide
    // mode runs on a 1368-pixel raster whose last two columns stay black.
    asm.mov(ax, word_ptr(si + rec(MI_XRES)).cs())?;
    asm.add(ax, 7)?;
    asm.and(ax, 0xFFF8_u16 as i16 as i32)?;
    asm.mov(bx, dispi::XRES)?;
    asm.call_sym("dispi_write")?;
    asm.mov(ax, word_ptr(si + rec(MI_YRES)).cs())?;
    asm.mov(bx, dispi::YRES)?;
    asm.call_sym("dispi_write")?;
    asm.movzx(ax, byte_ptr(si + rec(MI_BPP)).cs())?;
    asm.mov(bx, dispi::BPP)?;
    asm.call_sym("dispi_write")?;
    asm.xor(ax, ax)?;
    for index in [dispi::BANK, dispi::X_OFFSET, dispi::Y_OFFSET] {
        asm.mov(bx, index)?;
        asm.call_sym("dispi_write")?;
    }
    asm.pop(dx)?;
    asm.mov(ax, dispi::ENABLED)?;
    asm.test(dh, 0x40)?;
    let mut no_lfb = asm.create_label();
    asm.jz(no_lfb)?;
    asm.or(al, dispi::LFB_ENABLED as u8 as i32)?;
    asm.set(&mut no_lfb)?;
    asm.test(dh, 0x80)?;
    let mut clear_mem = asm.create_label();
    asm.jz(clear_mem)?;
    asm.or(al, dispi::NO_CLEAR_MEM as u8 as i32)?;
    asm.set(&mut clear_mem)?;
    asm.mov(bx, dispi::ENABLE)?;
    asm.call_sym("dispi_write")?;
    // Line pitch as the ModeInfoBlock reports it (width padded to 8 pixels).
    asm.movzx(cx, byte_ptr(si + rec(MI_BPP)).cs())?;
    asm.add(cx, 7)?;
    asm.shr(cx, 3)?;
    asm.mov(ax, word_ptr(si + rec(MI_BYTES_PER_LINE)).cs())?;
    asm.xor(dx, dx)?;
    asm.div(cx)?;
    asm.mov(bx, dispi::VIRT_WIDTH)?;
    asm.call_sym("dispi_write")?;
    // No VGA mode is current: INT 10h text/pixel services become no-ops.
    asm.mov(byte_ptr(u32::from(bda::MODE)), 0x7F)?;
    asm.jmp_sym("vbe_ok")?;

    // 4F03h: → BX = current mode (with bit 14 when the LFB is on).
    asm.bind("vbe_get_mode")?;
    asm.mov(bx, dispi::ENABLE)?;
    asm.call_sym("dispi_read")?;
    asm.test(al, dispi::ENABLED)?;
    let mut vga = asm.create_label();
    asm.jz(vga)?;
    asm.mov(di, ax)?;
    asm.mov(bx, dispi::XRES)?;
    asm.call_sym("dispi_read")?;
    asm.mov(cx, ax)?;
    asm.mov(bx, dispi::YRES)?;
    asm.call_sym("dispi_read")?;
    asm.mov(dx, ax)?;
    asm.mov(bx, dispi::BPP)?;
    asm.call_sym("dispi_read")?;
    let table = asm.addr("vbe_mode_table");
    asm.mov(si, i32::from(table))?;
    let mut scan = asm.create_label();
    let mut next = asm.create_label();
    let mut found = asm.create_label();
    asm.set(&mut scan)?;
    asm.cmp(word_ptr(si).cs(), 0xFFFF)?;
    let fail = asm.l("vbe_fail");
    asm.je(fail)?;
    asm.mov(bx, word_ptr(si + rec(MI_XRES)).cs())?;
    asm.add(bx, 7)?;
    asm.and(bx, 0xFFF8_u16 as i16 as i32)?;
    asm.cmp(bx, cx)?;
    asm.jne(next)?;
    asm.cmp(word_ptr(si + rec(MI_YRES)).cs(), dx)?;
    asm.jne(next)?;
    asm.cmp(byte_ptr(si + rec(MI_BPP)).cs(), al)?;
    asm.je(found)?;
    asm.set(&mut next)?;
    asm.add(si, MODE_RECORD_LEN as i32)?;
    asm.jmp(scan)?;
    asm.set(&mut found)?;
    asm.mov(bx, word_ptr(si).cs())?;
    asm.test(di, dispi::LFB_ENABLED)?;
    let mut store = asm.create_label();
    asm.jz(store)?;
    asm.or(bx, 0x4000)?;
    asm.jmp(store)?;
    asm.set(&mut vga)?;
    asm.movzx(bx, byte_ptr(u32::from(bda::MODE)))?;
    asm.and(bl, 0x7F)?;
    asm.set(&mut store)?;
    asm.mov(word_ptr(bp + frame::BX as i32), bx)?;
    asm.jmp_sym("vbe_ok")?;
    Ok(())
}

/// 4F04h: DL=0 size (CX = state groups → BX blocks), DL=1 save, DL=2 restore (ES:BX).
fn emit_state(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("vbe_state")?;
    asm.test(dl, dl)?;
    let mut not_size = asm.create_label();
    asm.jnz(not_size)?;
    asm.xor(bx, bx)?;
    for (bit, blocks) in [
        (1, super::info::SAVE_BLOCKS_HARDWARE),
        (2, super::info::SAVE_BLOCKS_BDA),
        (4, super::info::SAVE_BLOCKS_DAC),
        (8, super::savestate::SAVE_BLOCKS_DISPI),
    ] {
        let mut skip = asm.create_label();
        asm.test(cl, bit)?;
        asm.jz(skip)?;
        asm.add(bx, i32::from(blocks))?;
        asm.set(&mut skip)?;
    }
    asm.mov(word_ptr(bp + frame::BX as i32), bx)?;
    asm.jmp_sym("vbe_ok")?;
    asm.set(&mut not_size)?;
    asm.cmp(dl, 2)?;
    let fail = asm.l("vbe_fail");
    asm.ja(fail)?;
    asm.mov(al, dl)?;
    asm.mov(di, bx)?;
    asm.call_sym("state_save_restore")?;
    asm.jmp_sym("vbe_ok")?;
    Ok(())
}

/// 4F05h (BH=0 set window BL to bank DX, BH=1 get → DX), also reachable by far call
/// through the ModeInfoBlock's WinFuncPtr.
fn emit_window(asm: &mut Asm) -> Result<(), VgaBiosError> {
    // bank_core: BH/BL/DX as above → AX = VBE status, DX = bank.
    asm.bind("vbe_bank_core")?;
    asm.push(bx)?;
    let mut fail = asm.create_label();
    let mut out = asm.create_label();
    asm.test(bl, bl)?; // only window A exists
    asm.jnz(fail)?;
    asm.cmp(bh, 1)?;
    let mut get = asm.create_label();
    asm.je(get)?;
    asm.ja(fail)?;
    asm.mov(ax, dx)?;
    asm.mov(bx, dispi::BANK)?;
    asm.call_sym("dispi_write")?;
    asm.mov(ax, 0x004F)?;
    asm.jmp(out)?;
    asm.set(&mut get)?;
    asm.mov(bx, dispi::BANK)?;
    asm.call_sym("dispi_read")?;
    asm.mov(dx, ax)?;
    asm.mov(ax, 0x004F)?;
    asm.jmp(out)?;
    asm.set(&mut fail)?;
    asm.mov(ax, 0x014F)?;
    asm.set(&mut out)?;
    asm.pop(bx)?;
    asm.ret()?;

    asm.bind("vbe_window")?;
    asm.call_sym("vbe_bank_core")?;
    asm.mov(word_ptr(bp + frame::AX as i32), ax)?;
    asm.mov(word_ptr(bp + frame::DX as i32), dx)?;
    asm.ret()?;

    asm.bind("vbe_bank_far")?;
    asm.call_sym("vbe_bank_core")?;
    asm.retf()?;
    Ok(())
}

/// DISPI bytes per pixel of the current mode → CX (15 bpp counts as 2).
fn bytes_per_pixel(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.mov(bx, dispi::BPP)?;
    asm.call_sym("dispi_read")?;
    asm.add(ax, 7)?;
    asm.shr(ax, 3)?;
    asm.mov(cx, ax)?;
    Ok(())
}

/// 4F06h (logical scan line length) and 4F07h (display start).
fn emit_scanline_and_start(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("vbe_require_mode")?; // CF if no VBE mode is active
    asm.push(bx)?;
    asm.mov(bx, dispi::ENABLE)?;
    asm.call_sym("dispi_read")?;
    asm.pop(bx)?;
    asm.test(al, dispi::ENABLED)?;
    let mut on = asm.create_label();
    asm.jnz(on)?;
    asm.stc()?;
    asm.ret()?;
    asm.set(&mut on)?;
    asm.clc()?;
    asm.ret()?;

    asm.bind("vbe_scanline")?;
    asm.call_sym("vbe_require_mode")?;
    let invalid = asm.l("vbe_invalid_in_mode");
    asm.jc(invalid)?;
    asm.mov(si, cx)?; // requested length
    asm.mov(di, bx)?; // subfunction in DI's low byte
    bytes_per_pixel(asm)?; // CX = bytes per pixel
    asm.mov(ax, di)?;
    let mut get = asm.create_label();
    let mut set_bytes = asm.create_label();
    let mut max = asm.create_label();
    let fail = asm.l("vbe_fail");
    asm.cmp(al, 1)?;
    asm.je(get)?;
    asm.cmp(al, 2)?;
    asm.je(set_bytes)?;
    asm.cmp(al, 3)?;
    asm.je(max)?;
    asm.test(al, al)?;
    asm.jnz(fail)?;
    asm.mov(ax, si)?;
    let mut write = asm.create_label();
    asm.jmp(write)?;
    asm.set(&mut set_bytes)?;
    asm.mov(ax, si)?;
    asm.xor(dx, dx)?;
    asm.div(cx)?;
    asm.set(&mut write)?;
    asm.mov(bx, dispi::VIRT_WIDTH)?;
    asm.call_sym("dispi_write")?;
    asm.set(&mut get)?;
    // → CX = pixels, BX = bytes per line, DX = lines that fit in memory.
    asm.mov(bx, dispi::VIRT_WIDTH)?;
    asm.call_sym("dispi_read")?;
    asm.mov(word_ptr(bp + frame::CX as i32), ax)?;
    asm.mul(cx)?;
    asm.mov(word_ptr(bp + frame::BX as i32), ax)?;
    asm.movzx(ebx, ax)?;
    asm.call_sym("vbe_memory_64k")?;
    asm.movzx(eax, ax)?;
    asm.shl(eax, 16)?;
    asm.xor(edx, edx)?;
    asm.test(ebx, ebx)?;
    let mut zero = asm.create_label();
    asm.jz(zero)?;
    asm.div(ebx)?;
    asm.cmp(eax, 0xFFFF)?;
    asm.jbe(zero)?;
    asm.mov(ax, 0xFFFF)?;
    asm.set(&mut zero)?;
    asm.mov(word_ptr(bp + frame::DX as i32), ax)?;
    asm.jmp_sym("vbe_ok")?;
    asm.set(&mut max)?;
    // Longest line: all memory over the current height, limited to 16 bits.
    asm.mov(bx, dispi::YRES)?;
    asm.call_sym("dispi_read")?;
    asm.movzx(ebx, ax)?;
    asm.call_sym("vbe_memory_64k")?;
    asm.movzx(eax, ax)?;
    asm.shl(eax, 16)?;
    asm.xor(edx, edx)?;
    asm.test(ebx, ebx)?;
    let mut zero2 = asm.create_label();
    asm.jz(zero2)?;
    asm.div(ebx)?;
    asm.cmp(eax, 0xFFFF)?;
    asm.jbe(zero2)?;
    asm.mov(ax, 0xFFFF)?;
    asm.set(&mut zero2)?;
    asm.mov(word_ptr(bp + frame::BX as i32), ax)?;
    asm.xor(dx, dx)?;
    asm.div(cx)?;
    asm.mov(word_ptr(bp + frame::CX as i32), ax)?;
    asm.jmp_sym("vbe_ok")?;

    // 4F07h: BL=00h/80h set CX = first pixel, DX = first line; BL=01h get;
    // BL=02h/82h set from the byte address in ECX.
    asm.bind("vbe_display_start")?;
    asm.call_sym("vbe_require_mode")?;
    asm.jc(invalid)?;
    asm.mov(al, bl)?;
    asm.and(al, 0x7F)?;
    let mut get = asm.create_label();
    let mut by_address = asm.create_label();
    let mut set = asm.create_label();
    asm.cmp(al, 1)?;
    asm.je(get)?;
    asm.cmp(al, 2)?;
    asm.je(by_address)?;
    asm.test(al, al)?;
    asm.jnz(fail)?;
    asm.set(&mut set)?;
    asm.mov(ax, cx)?;
    asm.mov(bx, dispi::X_OFFSET)?;
    asm.call_sym("dispi_write")?;
    asm.mov(ax, dx)?;
    asm.mov(bx, dispi::Y_OFFSET)?;
    asm.call_sym("dispi_write")?;
    asm.jmp_sym("vbe_ok")?;
    asm.set(&mut by_address)?;
    // line = address / bytes per line, pixel = remainder / bytes per pixel
    asm.mov(esi, ecx)?;
    bytes_per_pixel(asm)?;
    asm.mov(bx, dispi::VIRT_WIDTH)?;
    asm.call_sym("dispi_read")?;
    asm.mul(cx)?;
    asm.movzx(ebx, ax)?;
    asm.mov(eax, esi)?;
    asm.xor(edx, edx)?;
    asm.test(ebx, ebx)?;
    asm.jz(fail)?;
    asm.div(ebx)?;
    asm.push(ax)?; // line
    asm.mov(ax, dx)?;
    asm.xor(dx, dx)?;
    asm.div(cx)?;
    asm.mov(cx, ax)?;
    asm.pop(dx)?;
    asm.jmp(set)?;
    asm.set(&mut get)?;
    asm.mov(bx, dispi::X_OFFSET)?;
    asm.call_sym("dispi_read")?;
    asm.mov(word_ptr(bp + frame::CX as i32), ax)?;
    asm.mov(bx, dispi::Y_OFFSET)?;
    asm.call_sym("dispi_read")?;
    asm.mov(word_ptr(bp + frame::DX as i32), ax)?;
    asm.mov(byte_ptr(bp + frame::BH as i32), 0)?;
    asm.jmp_sym("vbe_ok")?;
    Ok(())
}

/// 4F08h (DAC width: 6 bits, or 8 bits while a VBE mode is on — the DISPI 8-bit DAC
/// flag) and 4F09h (palette data, written at the current width).
fn emit_palette(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("vbe_dac_width")?;
    let fail = asm.l("vbe_fail");
    asm.cmp(bl, 1)?;
    asm.ja(fail)?;
    let mut report = asm.create_label();
    asm.je(report)?;
    asm.call_sym("vbe_require_mode")?;
    let invalid = asm.l("vbe_invalid_in_mode");
    asm.jc(invalid)?;
    asm.mov(cl, bh)?;
    asm.mov(bx, dispi::ENABLE)?;
    asm.call_sym("dispi_read")?;
    asm.and(ax, !(dispi::DAC_8BIT | dispi::NO_CLEAR_MEM) & 0xFFFF)?;
    asm.or(ax, dispi::NO_CLEAR_MEM)?; // already on: must not wipe the screen
    asm.cmp(cl, 8)?;
    let mut six = asm.create_label();
    asm.jb(six)?;
    asm.or(ax, dispi::DAC_8BIT)?;
    asm.set(&mut six)?;
    asm.call_sym("dispi_write")?;
    asm.set(&mut report)?;
    asm.mov(bx, dispi::ENABLE)?;
    asm.call_sym("dispi_read")?;
    asm.mov(byte_ptr(bp + frame::BH as i32), 6)?;
    asm.test(al, dispi::DAC_8BIT)?;
    let ok = asm.l("vbe_ok");
    asm.jz(ok)?;
    asm.mov(byte_ptr(bp + frame::BH as i32), 8)?;
    asm.jmp_sym("vbe_ok")?;

    // BL=00h/80h set, 01h get: CX entries from DX, ES:DI = (blue, green, red, pad).
    asm.bind("vbe_palette")?;
    asm.mov(al, bl)?;
    asm.and(al, 0x7F)?;
    asm.cmp(al, 1)?;
    asm.ja(fail)?;
    asm.cmp(dx, 256)?;
    asm.jae(fail)?;
    asm.mov(bx, 256)?;
    asm.sub(bx, dx)?;
    asm.cmp(cx, bx)?;
    asm.ja(fail)?;
    asm.mov(ah, al)?;
    asm.mov(al, dl)?;
    asm.test(ah, ah)?;
    let mut get = asm.create_label();
    asm.jnz(get)?;
    asm.mov(dx, DAC_WRITE_INDEX)?;
    asm.out(dx, al)?;
    asm.mov(dx, DAC_DATA)?;
    let mut done = asm.create_label();
    asm.jcxz(done)?;
    let mut set_each = asm.create_label();
    asm.set(&mut set_each)?;
    for offset in [2, 1, 0] {
        asm.mov(al, byte_ptr(di + offset).es())?;
        asm.out(dx, al)?;
    }
    asm.add(di, 4)?;
    asm.loop_(set_each)?;
    asm.jmp(done)?;
    asm.set(&mut get)?;
    asm.mov(dx, DAC_READ_INDEX)?;
    asm.out(dx, al)?;
    asm.mov(dx, DAC_DATA)?;
    asm.jcxz(done)?;
    let mut get_each = asm.create_label();
    asm.set(&mut get_each)?;
    for offset in [2, 1, 0] {
        asm.in_(al, dx)?;
        asm.mov(byte_ptr(di + offset).es(), al)?;
    }
    asm.mov(byte_ptr(di + 3).es(), 0)?;
    asm.add(di, 4)?;
    asm.loop_(get_each)?;
    asm.set(&mut done)?;
    asm.jmp_sym("vbe_ok")?;
    Ok(())
}

/// 4F15h: BL=00h capabilities, BL=01h read EDID block DX (only block 0) to ES:DI.
fn emit_ddc(asm: &mut Asm) -> Result<(), VgaBiosError> {
    asm.bind("vbe_ddc")?;
    let fail = asm.l("vbe_fail");
    let mut read = asm.create_label();
    asm.cmp(bl, 1)?;
    asm.je(read)?;
    asm.test(bl, bl)?;
    asm.jnz(fail)?;
    // DDC2 supported, no transfer delay.
    asm.mov(word_ptr(bp + frame::BX as i32), 0x0002)?;
    asm.jmp_sym("vbe_ok")?;
    asm.set(&mut read)?;
    asm.test(cx, cx)?;
    asm.jnz(fail)?;
    asm.test(dx, dx)?;
    asm.jnz(fail)?;
    let edid = asm.addr("edid");
    asm.mov(si, i32::from(edid))?;
    asm.push(ds)?;
    asm.push(cs)?;
    asm.pop(ds)?;
    asm.mov(cx, super::EDID_LEN as i32)?;
    asm.rep().movsb()?;
    asm.pop(ds)?;
    asm.jmp_sym("vbe_ok")?;
    Ok(())
}
