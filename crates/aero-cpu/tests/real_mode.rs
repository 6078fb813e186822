//! Real-mode execution: arithmetic, flags, stack, string ops, interrupts via the IVT,
//! firmware traps, unreal mode.

mod common;
use aero_cpu::{Reg, RunExit, Seg};
use common::*;
use iced_x86::code_asm::*;

#[test]
fn arithmetic_and_halt() {
    let code = asm(16, 0x7C00, |a| {
        a.mov(ax, 5u32)?;
        a.add(ax, 3u32)?;
        a.mov(bx, ax)?;
        a.shl(bx, 2u32)?;
        a.sub(bx, 1u32)?;
        a.hlt()
    });
    let mut m = Machine::real_mode_at(1 << 20, &code, 0x7C00);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rax) & 0xFFFF, 8);
    assert_eq!(m.cpu.state.reg(Reg::Rbx) & 0xFFFF, 31);
    assert_eq!(m.cpu.instructions_retired(), 6);
}

#[test]
fn flags_after_sub_and_adc_chain() {
    let code = asm(16, 0x7C00, |a| {
        a.mov(al, 0x80u32)?;
        a.sub(al, 1u32)?; // 0x7F: OF, AF
        a.pushf()?;
        a.mov(ax, 0xFFFFu32)?;
        a.add(ax, 1u32)?; // CF, ZF, PF, AF
        a.mov(dx, 0u32)?;
        a.adc(dx, 0u32)?; // dx = 1
        a.hlt()
    });
    let mut m = Machine::real_mode_at(1 << 20, &code, 0x7C00);
    assert_eq!(m.run(100), RunExit::Halted);
    let pushed = u16::from_le_bytes([m.ram[0x6FFE], m.ram[0x6FFF]]);
    assert_eq!(pushed & 0x8D5, 0x800 | 0x10, "OF and AF after 0x80-1");
    assert_eq!(m.cpu.state.reg(Reg::Rdx) & 0xFFFF, 1);
    // ADC dx,0 with CF=1 gives 1: CF=0 ZF=0.
    assert_eq!(m.cpu.state.rflags & 0x41, 0);
}

#[test]
fn loop_call_ret_and_memory() {
    let code = asm(16, 0x7C00, |a| {
        let mut sub = a.create_label();
        let mut top = a.create_label();
        a.mov(cx, 10u32)?;
        a.xor(ax, ax)?;
        a.set_label(&mut top)?;
        a.call(sub)?;
        a.loop_(top)?;
        a.mov(word_ptr(0x500), ax)?;
        a.hlt()?;
        a.set_label(&mut sub)?;
        a.add(ax, cx)?;
        a.ret()
    });
    let mut m = Machine::real_mode_at(1 << 20, &code, 0x7C00);
    assert_eq!(m.run(1000), RunExit::Halted);
    assert_eq!(m.ram[0x500] as u32 | (m.ram[0x501] as u32) << 8, 55);
    assert_eq!(m.cpu.state.reg(Reg::Rsp), 0x7000);
}

#[test]
fn rep_movsb_and_cmpsb() {
    let code = asm(16, 0x7C00, |a| {
        a.cld()?;
        a.mov(si, 0x600u32)?;
        a.mov(di, 0x700u32)?;
        a.mov(cx, 16u32)?;
        a.rep().movsb()?;
        a.mov(si, 0x600u32)?;
        a.mov(di, 0x700u32)?;
        a.mov(cx, 16u32)?;
        a.repe().cmpsb()?;
        a.hlt()
    });
    let mut m = Machine::real_mode_at(1 << 20, &code, 0x7C00);
    for k in 0..16 {
        m.ram[0x600 + k] = k as u8 * 3;
    }
    assert_eq!(m.run(1000), RunExit::Halted);
    assert_eq!(&m.ram[0x700..0x710], &m.ram[0x600..0x610].to_vec()[..]);
    assert_eq!(m.cpu.state.reg(Reg::Rcx) & 0xFFFF, 0);
    assert_ne!(m.cpu.state.rflags & 0x40, 0, "all equal: ZF=1");
}

#[test]
fn software_interrupt_through_ivt_and_iret() {
    let code = asm(16, 0x7C00, |a| {
        a.mov(ax, 1u32)?;
        a.int(0x21)?;
        a.add(ax, 0x100u32)?;
        a.hlt()
    });
    let handler = asm(16, 0x8000, |a| {
        a.mov(bx, 0x4242u32)?;
        a.add(ax, 1u32)?;
        a.iret()
    });
    let mut m = Machine::real_mode_at(1 << 20, &code, 0x7C00);
    m.load(0x8000, &handler);
    // IVT entry 0x21 -> 0800:0000
    m.w32(0x21 * 4, 0x0800_0000);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rax) & 0xFFFF, 0x102);
    assert_eq!(m.cpu.state.reg(Reg::Rbx) & 0xFFFF, 0x4242);
    assert_eq!(m.cpu.state.seg(Seg::Cs).selector, 0);
}

#[test]
fn external_interrupt_wakes_hlt() {
    let code = asm(16, 0x7C00, |a| {
        a.sti()?;
        a.hlt()?;
        a.mov(cx, 7u32)?;
        a.hlt()
    });
    let handler = asm(16, 0x8000, |a| {
        a.mov(dx, 0x99u32)?;
        a.iret()
    });
    let mut m = Machine::real_mode_at(1 << 20, &code, 0x7C00);
    m.load(0x8000, &handler);
    m.w32(0x08 * 4, 0x0800_0000);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.rip, 0x7C02, "halted after the first HLT");
    m.bus.irq = Some(0x08);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rdx) & 0xFFFF, 0x99);
    assert_eq!(m.cpu.state.reg(Reg::Rcx) & 0xFFFF, 7);
}

#[test]
fn firmware_trap_stops_after_out_and_resumes_with_edited_state() {
    let code = asm(16, 0x7C00, |a| {
        a.mov(al, 0x13u32)?;
        a.out(0xEFu32, al)?;
        a.jc(0x7C00 + 0x40)?;
        a.mov(bx, 1u32)?;
        a.hlt()
    });
    let mut m = Machine::real_mode_at(1 << 20, &code, 0x7C00);
    m.bus.trap_port = Some(0xEF);
    assert_eq!(m.run(100), RunExit::StopRequested);
    assert_eq!(m.cpu.state.rip, 0x7C04, "RIP is past the OUT");
    assert_eq!(m.bus.outs, vec![(0xEF, 1, 0x13)]);
    // Firmware clears CF and sets ES like a BIOS service would.
    m.cpu.state.rflags &= !1;
    m.cpu.state.load_seg_real(Seg::Es, 0x1234);
    m.cpu.flush_all_caches();
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rbx) & 0xFFFF, 1);
    assert_eq!(m.cpu.state.seg(Seg::Es).base, 0x12340);
}

#[test]
fn divide_error_goes_through_vector_0() {
    let code = asm(16, 0x7C00, |a| {
        a.xor(bl, bl)?;
        a.mov(ax, 10u32)?;
        a.div(bl)?;
        a.hlt()
    });
    let handler = asm(16, 0x8000, |a| {
        a.mov(si, 0xDEu32)?;
        a.hlt()
    });
    let mut m = Machine::real_mode_at(1 << 20, &code, 0x7C00);
    m.load(0x8000, &handler);
    m.w32(0, 0x0800_0000);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rsi) & 0xFFFF, 0xDE);
    // Faults push the address of the faulting instruction.
    let ret_ip = u16::from_le_bytes([m.ram[0x6FFA], m.ram[0x6FFB]]);
    assert_eq!(ret_ip, 0x7C05);
}

#[test]
fn self_modifying_code_is_seen() {
    // Overwrites the immediate of a later instruction in the same block.
    let code = asm(16, 0x7C00, |a| {
        a.mov(byte_ptr(0x7C00 + 0x0C), 0x77u32)?; // 5 bytes: c6 06 0c 7c 77
        a.nop()?;
        a.nop()?;
        a.nop()?;
        a.nop()?;
        a.nop()?;
        a.nop()?;
        a.mov(al, 0x11u32)?; // at 0x7C0B: b0 11
        a.hlt()
    });
    let mut m = Machine::real_mode_at(1 << 20, &code, 0x7C00);
    assert_eq!(&m.ram[0x7C0B..0x7C0D], &[0xB0, 0x11]);
    // Run it twice: the second time the block is already cached.
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rax) & 0xFF, 0x77);
}

/// A loop patches the immediate of a subroutine and stores a variable in the same page
/// (as GRUB's `grub_bios_interrupt` does): the patched block must be re-decoded every
/// time, the unchanged blocks are kept.
#[test]
fn patched_immediate_in_a_loop_is_seen_every_time() {
    #[rustfmt::skip]
    let code = [
        0x31, 0xDB,             // 7C00 xor bx,bx
        0xB9, 0x05, 0x00,       // 7C02 mov cx,5
        0x88, 0x0E, 0x1A, 0x7C, // 7C05 top: mov [7C1A],cl   (the imm8 below)
        0x89, 0x0E, 0x1D, 0x7C, // 7C09 mov [7C1D],cx        (a variable)
        0xE8, 0x09, 0x00,       // 7C0D call 7C19
        0x00, 0xD3,             // 7C10 add bl,dl
        0xE2, 0xF1,             // 7C12 loop top
        0xF4,                   // 7C14 hlt
        0x90, 0x90, 0x90, 0x90, // 7C15
        0xB2, 0x00,             // 7C19 mov dl,imm8
        0xC3,                   // 7C1B ret
        0x90, 0x00, 0x00,       // 7C1C, variable at 7C1D
    ];
    let mut m = Machine::real_mode_at(1 << 20, &code, 0x7C00);
    assert_eq!(m.run(1000), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rbx) & 0xFF, 5 + 4 + 3 + 2 + 1);
    assert_eq!(m.ram[0x7C1D], 1);
    assert_eq!(m.ram[0x7C1A], 1);
}

#[test]
fn dma_write_invalidates_cached_block() {
    let code = asm(16, 0x7C00, |a| {
        a.mov(al, 1u32)?;
        a.hlt()
    });
    let mut m = Machine::real_mode_at(1 << 20, &code, 0x7C00);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rax) & 0xFF, 1);
    // "DMA" rewrites the code; the CPU is told via invalidate_code.
    m.ram[0x7C01] = 2;
    m.cpu.invalidate_code(0x7C01, 1);
    m.cpu.state.rip = 0x7C00;
    m.cpu.state.halted = false;
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rax) & 0xFF, 2);
}

#[test]
fn budget_is_exact() {
    let code = asm(16, 0x7C00, |a| {
        let mut top = a.create_label();
        a.set_label(&mut top)?;
        a.inc(ax)?;
        a.jmp(top)
    });
    let mut m = Machine::real_mode_at(1 << 20, &code, 0x7C00);
    assert_eq!(m.run(1001), RunExit::BudgetExhausted);
    assert_eq!(m.cpu.instructions_retired(), 1001);
    assert_eq!(m.cpu.state.reg(Reg::Rax) & 0xFFFF, 501);
}
