//! The demo program the boot sector loads (real mode, CS = DS = [`LOAD_SEGMENT`]):
//! COM1 greeting, AeroGPU scanout 640×480×32 (else VBE 640×480×32, else VGA mode 13h),
//! the Aero screen, then an idle loop that HLTs until an interrupt, echoes keys
//! (INT 16h), moves the bar on every BIOS timer tick (BDA 0:046Ch) and presents each
//! change through AeroGPU.
//!
//! Serial protocol (COM1, 115200 8N1), one line each:
//! `AERO-DEMO: booting`; with AeroGPU `AERO-DEMO: aerogpu abi M.m, irq N`,
//! `AERO-DEMO: fence 1 done`, `AERO-DEMO: video aerogpu scanout 640x480x32`,
//! `AERO-DEMO: fence 2 done` (a fence is "done" when its interrupt arrived), the mesh
//! setup and its frame 0 (`fence 3 done`, `fence 4 done`), then either
//! `AERO-DEMO: mesh on: a textured cube drawn by aerogpu` and `AERO-DEMO-FRAME=0`, or
//! `AERO-DEMO: aerogpu drew nothing: this executor has no 3D (use --gpu wgpu)` and
//! `AERO-DEMO: mesh off`; otherwise `AERO-DEMO: video VBE mode 0xNNNN 640x480x32` or
//! `AERO-DEMO: video VGA mode 13h`; `AERO-DEMO-READY` once the first frame is shown,
//! then `AERO-DEMO-KEY=<c>` per key (printable ASCII as is, others as `0xNN`) and
//! `AERO-DEMO-FRAME=N` after every 16th cube frame. Driver problems print
//! `AERO-DEMO: aerogpu …` lines (no usable IRQ, ABI mismatch, fence timeout, error code,
//! ring stalled).

use iced_x86::code_asm::*;

use super::{BUF_SEGMENT, DemoError};
use super::{aerogpu, draw};
use crate::asm16::Asm;

const COM1: i32 = 0x3F8;

/// VbeInfoBlock at BUF_SEGMENT:0000, ModeInfoBlock at BUF_SEGMENT:0200.
const MODE_INFO: u16 = 0x200;
/// ModeAttributes: supported, colour, graphics, linear framebuffer.
const MODE_ATTRS_NEEDED: i32 = 0x01 | 0x08 | 0x10 | 0x80;
/// A BIOS with more modes than this in its list is broken; stop looking.
const MAX_MODES: i32 = 256;

pub(crate) fn b(a: &mut Asm, name: &'static str) -> AsmMemoryOperand {
    byte_ptr(u32::from(a.addr(name)))
}
pub(crate) fn w(a: &mut Asm, name: &'static str) -> AsmMemoryOperand {
    word_ptr(u32::from(a.addr(name)))
}
pub(crate) fn d(a: &mut Asm, name: &'static str) -> AsmMemoryOperand {
    dword_ptr(u32::from(a.addr(name)))
}
/// SI = offset of symbol `name`.
pub(crate) fn load_si(a: &mut Asm, name: &'static str) -> Result<(), DemoError> {
    let at = a.addr(name);
    a.mov(si, i32::from(at))?;
    Ok(())
}
/// NUL-terminated strings, each under its symbol.
pub(crate) fn strings(a: &mut Asm, table: &[(&'static str, &str)]) -> Result<(), DemoError> {
    for &(name, text) in table {
        a.bind(name)?;
        a.db(text.as_bytes())?;
        a.db(&[0])?;
    }
    Ok(())
}
/// Variables of `size` bytes each, all starting as zero.
pub(crate) fn variables(a: &mut Asm, table: &[(&'static str, usize)]) -> Result<(), DemoError> {
    for &(name, size) in table {
        a.bind(name)?;
        a.db(&vec![0u8; size])?;
    }
    Ok(())
}
pub(crate) fn puts(a: &mut Asm, name: &'static str) -> Result<(), DemoError> {
    a.push(si)?;
    load_si(a, name)?;
    a.call_sym("serial_puts")?;
    a.pop(si)?;
    Ok(())
}

pub(crate) fn emit(a: &mut Asm) -> Result<(), DemoError> {
    emit_main(a)?;
    emit_serial(a)?;
    emit_video_init(a)?;
    emit_keys(a)?;
    draw::emit(a)?;
    aerogpu::emit(a)?;
    emit_data(a)?;
    Ok(())
}

fn emit_main(a: &mut Asm) -> Result<(), DemoError> {
    a.bind("entry")?;
    a.cli()?;
    a.mov(ax, cs)?;
    a.mov(ds, ax)?;
    a.xor(ax, ax)?;
    a.mov(ss, ax)?;
    a.mov(sp, 0x7C00)?;
    a.sti()?;
    a.cld()?;
    let drive = b(a, "v_drive");
    a.mov(drive, dl)?;
    a.call_sym("serial_init")?;
    puts(a, "s_booting")?;
    a.call_sym("a20_enable")?;
    // AeroGPU's scanout when the device is there, else VBE (or VGA mode 13h).
    a.call_sym("gpu_init")?;
    let mut have_video = a.create_label();
    a.jnc(have_video)?;
    a.call_sym("video_init")?;
    a.set(&mut have_video)?;
    // The device's first frame (clear + present, written into the framebuffer by an
    // executor) comes before the CPU draws the picture over it.
    a.call_sym("gpu_first_frame")?;
    a.call_sym("draw_all")?;
    // The device's cube in its box (AeroGPU only), frame 0 before the ready marker.
    a.call_sym("mesh_start")?;
    puts(a, "s_ready")?;

    // Idle: sleep until the next interrupt (timer tick or key), then look at both.
    let mut idle = a.create_label();
    a.set(&mut idle)?;
    a.sti()?;
    a.hlt()?;
    a.call_sym("poll_keys")?;
    a.call_sym("poll_tick")?;
    a.call_sym("gpu_flip")?;
    a.jmp(idle)?;

    // The framebuffer may cross odd megabytes: A20 must be on (INT 15h, else port 92h).
    a.bind("a20_enable")?;
    a.pushad()?;
    a.mov(ax, 0x2401)?;
    a.int(0x15)?;
    let mut done = a.create_label();
    a.jnc(done)?;
    a.in_(al, 0x92)?;
    a.or(al, 0x02)?;
    a.and(al, 0xFE)?; // bit 0 would reset the machine
    a.out(0x92, al)?;
    a.set(&mut done)?;
    a.popad()?;
    a.ret()?;
    Ok(())
}

fn emit_serial(a: &mut Asm) -> Result<(), DemoError> {
    // 16550: no interrupts, DLAB divisor 1 (115200), 8N1, FIFOs on and cleared, DTR+RTS.
    a.bind("serial_init")?;
    a.push(ax)?;
    a.push(dx)?;
    for (reg, val) in [
        (1, 0x00),
        (3, 0x80),
        (0, 0x01),
        (1, 0x00),
        (3, 0x03),
        (2, 0xC7),
        (4, 0x03),
    ] {
        a.mov(dx, COM1 + reg)?;
        a.mov(al, val)?;
        a.out(dx, al)?;
    }
    a.pop(dx)?;
    a.pop(ax)?;
    a.ret()?;

    // AL = byte. Waits (bounded) for the transmitter holding register to be empty.
    a.bind("serial_putc")?;
    a.push(ax)?;
    a.push(cx)?;
    a.push(dx)?;
    a.mov(ah, al)?;
    a.mov(cx, 0xFFFF)?;
    a.mov(dx, COM1 + 5)?;
    let mut wait = a.create_label();
    let mut ready = a.create_label();
    a.set(&mut wait)?;
    a.in_(al, dx)?;
    a.test(al, 0x20)?;
    a.jnz(ready)?;
    a.dec(cx)?;
    a.jnz(wait)?;
    a.set(&mut ready)?;
    a.mov(al, ah)?;
    a.mov(dx, COM1)?;
    a.out(dx, al)?;
    a.pop(dx)?;
    a.pop(cx)?;
    a.pop(ax)?;
    a.ret()?;

    // DS:SI = NUL-terminated string.
    a.bind("serial_puts")?;
    a.push(ax)?;
    a.push(si)?;
    let mut next = a.create_label();
    let mut end = a.create_label();
    a.set(&mut next)?;
    a.lodsb()?;
    a.test(al, al)?;
    a.jz(end)?;
    a.call_sym("serial_putc")?;
    a.jmp(next)?;
    a.set(&mut end)?;
    a.pop(si)?;
    a.pop(ax)?;
    a.ret()?;

    // AL / AX as hex digits.
    a.bind("serial_hex16")?;
    a.push(ax)?;
    a.mov(al, ah)?;
    a.call_sym("serial_hex8")?;
    a.pop(ax)?;
    a.bind("serial_hex8")?;
    a.push(ax)?;
    a.shr(al, 4)?;
    a.call_sym("serial_nibble")?;
    a.pop(ax)?;
    a.push(ax)?;
    a.call_sym("serial_nibble")?;
    a.pop(ax)?;
    a.ret()?;
    // AX as an unsigned decimal number.
    a.bind("serial_dec")?;
    a.pushad()?;
    a.xor(cx, cx)?;
    a.mov(bx, 10)?;
    let mut divide = a.create_label();
    let mut digits = a.create_label();
    a.set(&mut divide)?;
    a.xor(dx, dx)?;
    a.div(bx)?;
    a.push(dx)?;
    a.inc(cx)?;
    a.test(ax, ax)?;
    a.jnz(divide)?;
    a.set(&mut digits)?;
    a.pop(ax)?;
    a.add(al, b'0' as i32)?;
    a.call_sym("serial_putc")?;
    a.dec(cx)?;
    a.jnz(digits)?;
    a.popad()?;
    a.ret()?;

    a.bind("serial_nibble")?;
    a.and(al, 0x0F)?;
    a.add(al, b'0' as i32)?;
    a.cmp(al, b'9' as i32)?;
    let mut digit = a.create_label();
    a.jbe(digit)?;
    a.add(al, 7)?;
    a.set(&mut digit)?;
    a.call_sym("serial_putc")?;
    a.ret()?;
    Ok(())
}

fn emit_video_init(a: &mut Asm) -> Result<(), DemoError> {
    let vga = a.l("video_vga");
    let next_mode = a.l("video_next_mode");
    let mi = |off: u16| u32::from(MODE_INFO + off);

    a.bind("video_init")?;
    a.pushad()?;
    a.push(es)?;
    a.push(fs)?;
    a.mov(ax, i32::from(BUF_SEGMENT))?;
    a.mov(es, ax)?;
    a.xor(di, di)?;
    // Ask for VBE 2.0+ information (a 512-byte block).
    a.mov(dword_ptr(di).es(), u32::from_le_bytes(*b"VBE2") as i32)?;
    a.mov(ax, 0x4F00)?;
    a.int(0x10)?;
    a.cmp(ax, 0x004F)?;
    a.jne(vga)?;
    a.cmp(dword_ptr(0u32).es(), u32::from_le_bytes(*b"VESA") as i32)?;
    a.jne(vga)?;
    // The mode list is a far pointer at offset 0Eh, terminated by FFFFh.
    a.mov(ax, word_ptr(0x0Eu32).es())?;
    let list_off = w(a, "v_list_off");
    a.mov(list_off, ax)?;
    a.mov(ax, word_ptr(0x10u32).es())?;
    let list_seg = w(a, "v_list_seg");
    a.mov(list_seg, ax)?;
    a.mov(bp, MAX_MODES)?;

    a.bind("video_next_mode")?;
    a.dec(bp)?;
    a.jz(vga)?;
    let list_seg = w(a, "v_list_seg");
    a.mov(ax, list_seg)?;
    a.mov(fs, ax)?;
    let list_off = w(a, "v_list_off");
    a.mov(si, list_off)?;
    a.mov(cx, word_ptr(si).fs())?;
    let list_off = w(a, "v_list_off");
    a.add(list_off, 2)?;
    a.cmp(cx, 0xFFFF)?;
    a.je(vga)?;
    a.mov(ax, 0x4F01)?;
    a.mov(di, i32::from(MODE_INFO))?;
    a.push(cx)?;
    a.int(0x10)?;
    a.pop(cx)?;
    a.cmp(ax, 0x004F)?;
    a.jne(next_mode)?;
    a.mov(ax, word_ptr(mi(0x00)).es())?;
    a.and(ax, MODE_ATTRS_NEEDED)?;
    a.cmp(ax, MODE_ATTRS_NEEDED)?;
    a.jne(next_mode)?;
    // 640×480, 32 bpp direct colour laid out as 00RRGGBB.
    for (off, val, word) in [
        (0x12, 640, true),
        (0x14, 480, true),
        (0x19, 32, false),
        (0x1B, 6, false),
        (0x20, 16, false),
        (0x22, 8, false),
        (0x24, 0, false),
    ] {
        if word {
            a.cmp(word_ptr(mi(off)).es(), val)?;
        } else {
            a.cmp(byte_ptr(mi(off)).es(), val)?;
        }
        a.jne(next_mode)?;
    }
    a.mov(eax, dword_ptr(mi(0x28)).es())?;
    a.test(eax, eax)?;
    a.jz(next_mode)?;
    let fb = d(a, "v_fb");
    a.mov(fb, eax)?;
    a.movzx(eax, word_ptr(mi(0x10)).es())?;
    let pitch = d(a, "v_pitch");
    a.mov(pitch, eax)?;
    // Set it with the linear framebuffer (bit 14).
    a.mov(bx, cx)?;
    a.or(bx, 0x4000)?;
    a.push(cx)?;
    a.mov(ax, 0x4F02)?;
    a.int(0x10)?;
    a.pop(cx)?;
    a.cmp(ax, 0x004F)?;
    a.jne(vga)?;
    for (name, val) in [("v_w", 640), ("v_h", 480)] {
        let m = w(a, name);
        a.mov(m, val)?;
    }
    let bpp = b(a, "v_bpp");
    a.mov(bpp, 32)?;
    let shift = b(a, "v_shift");
    a.mov(shift, 1)?;
    puts(a, "s_vbe")?;
    a.mov(ax, cx)?;
    a.call_sym("serial_hex16")?;
    puts(a, "s_vbe_tail")?;
    let mut done = a.create_label();
    a.jmp(done)?;

    // No usable VBE mode: VGA mode 13h, 320×200 with an RGB 3-3-2 palette.
    a.bind("video_vga")?;
    a.mov(ax, 0x0013)?;
    a.int(0x10)?;
    let fb = d(a, "v_fb");
    a.mov(fb, 0xA0000)?;
    let pitch = d(a, "v_pitch");
    a.mov(pitch, 320)?;
    for (name, val) in [("v_w", 320), ("v_h", 200)] {
        let m = w(a, name);
        a.mov(m, val)?;
    }
    let bpp = b(a, "v_bpp");
    a.mov(bpp, 8)?;
    let shift = b(a, "v_shift");
    a.mov(shift, 0)?;
    a.mov(dx, 0x3C8)?;
    a.xor(al, al)?;
    a.out(dx, al)?;
    a.inc(dx)?;
    load_si(a, "palette332")?;
    a.mov(cx, 768)?;
    let mut dac = a.create_label();
    a.set(&mut dac)?;
    a.lodsb()?;
    a.out(dx, al)?;
    a.dec(cx)?;
    a.jnz(dac)?;
    puts(a, "s_vga")?;

    a.set(&mut done)?;
    // The bar sits 24 logical pixels above the bottom (logical = physical >> shift).
    let h = w(a, "v_h");
    a.mov(ax, h)?;
    let shift = b(a, "v_shift");
    a.mov(cl, shift)?;
    a.shr(ax, cl)?;
    a.sub(ax, 24)?;
    let bar = w(a, "v_bar_y");
    a.mov(bar, ax)?;
    a.pop(fs)?;
    a.pop(es)?;
    a.popad()?;
    a.ret()?;
    Ok(())
}

fn emit_keys(a: &mut Asm) -> Result<(), DemoError> {
    // Drains the BIOS keyboard buffer.
    a.bind("poll_keys")?;
    a.pushad()?;
    let mut again = a.create_label();
    let mut none = a.create_label();
    a.set(&mut again)?;
    a.mov(ah, 0x01)?;
    a.int(0x16)?;
    a.jz(none)?;
    a.xor(ah, ah)?;
    a.int(0x16)?;
    a.call_sym("key_echo")?;
    a.jmp(again)?;
    a.set(&mut none)?;
    a.popad()?;
    a.ret()?;

    // AL = ASCII: report on COM1, then draw it (BS erases, CR clears the line).
    a.bind("key_echo")?;
    a.pushad()?;
    puts(a, "s_key")?;
    let mut hex = a.create_label();
    let mut line_end = a.create_label();
    a.cmp(al, 0x20)?;
    a.jb(hex)?;
    a.cmp(al, 0x7E)?;
    a.ja(hex)?;
    a.call_sym("serial_putc")?;
    a.jmp(line_end)?;
    a.set(&mut hex)?;
    a.push(ax)?;
    a.mov(al, b'0' as i32)?;
    a.call_sym("serial_putc")?;
    a.mov(al, b'x' as i32)?;
    a.call_sym("serial_putc")?;
    a.pop(ax)?;
    a.call_sym("serial_hex8")?;
    a.set(&mut line_end)?;
    puts(a, "s_crlf")?;
    a.call_sym("draw_key")?;
    a.popad()?;
    a.ret()?;
    Ok(())
}

fn emit_data(a: &mut Asm) -> Result<(), DemoError> {
    strings(
        a,
        &[
            ("s_booting", "AERO-DEMO: booting\r\n"),
            ("s_ready", "AERO-DEMO-READY\r\n"),
            ("s_vbe", "AERO-DEMO: video VBE mode 0x"),
            ("s_vbe_tail", " 640x480x32\r\n"),
            ("s_vga", "AERO-DEMO: video VGA mode 13h\r\n"),
            ("s_key", "AERO-DEMO-KEY="),
            ("s_crlf", "\r\n"),
        ],
    )?;
    variables(
        a,
        &[
            ("v_drive", 1),
            ("v_bpp", 1),
            ("v_shift", 1),
            ("v_list_off", 2),
            ("v_list_seg", 2),
            ("v_w", 2),
            ("v_h", 2),
            ("v_bar_y", 2),
            ("v_key_col", 2),
            ("v_fb", 4),
            ("v_pitch", 4),
            ("v_color", 4),
            ("v_start_tick", 4),
            ("v_last_tick", 4),
        ],
    )?;
    // 256 DAC entries (6-bit) for mode 13h: index = RRRGGGBB.
    let palette: Vec<u8> = (0..=255u8)
        .flat_map(|i| {
            let r = (i >> 5) & 7;
            let g = (i >> 2) & 7;
            let b = i & 3;
            [r * 9, g * 9, b * 21]
        })
        .collect();
    a.bind("palette332")?;
    a.db(&palette)?;
    draw::emit_data(a)?;
    aerogpu::emit_data(a)?;
    Ok(())
}
