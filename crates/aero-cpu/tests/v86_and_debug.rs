//! Virtual-8086 mode (IOPL-sensitive INT, monitor frame, IRET back) and single-step.

mod common;
use aero_cpu::{Reg, RunExit, Seg};
use common::*;
use iced_x86::code_asm::*;

/// Ring-0 code that IRETs into V86 mode at 2000:0100 with the given IOPL.
fn enter_v86(iopl: u32) -> Vec<u8> {
    asm(32, 0x8000, |a| {
        for v in [0x3000u32, 0x3000, 0x2000, 0x2000] {
            a.push(v)?; // GS, FS, DS, ES
        }
        a.push(0x3000u32)?; // SS
        a.push(0x0800u32)?; // SP
        a.push(0x2_0202u32 | (iopl << 12))?; // EFLAGS: VM | IF
        a.push(0x2000u32)?; // CS
        a.push(0x0100u32)?; // IP
        a.iretd()
    })
}

#[test]
fn v86_int_with_iopl0_traps_to_monitor_with_v86_frame() {
    let v86 = asm(16, 0x100, |a| {
        a.mov(ax, 0x1234u32)?;
        a.mov(word_ptr(0x10), ax)?; // DS=0x2000 -> linear 0x20010
        a.int(0x10)?;
        a.hlt()
    });
    let monitor = asm(32, 0x9000, |a| {
        a.mov(esi, esp)?;
        a.mov(edi, ds)?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(1 << 20, &enter_v86(0), 0x8000);
    m.load(0x20100, &v86);
    m.load(0x9000, &monitor);
    m.set_gate32(13, 0x9000, 0);
    m.w32(TSS + 4, 0x8_0000);
    m.w32(TSS + 8, KDATA as u32);
    assert_eq!(m.run(100), RunExit::Halted);
    let s = &m.cpu.state;
    assert_eq!(s.cpl, 0);
    assert_eq!(s.rflags & (1 << 17), 0, "VM cleared in the monitor");
    assert_eq!(
        m.r32(0x20010) & 0xFFFF,
        0x1234,
        "V86 addressing is seg*16+off"
    );
    // Frame: err, EIP, CS, EFLAGS, ESP, SS, ES, DS, FS, GS.
    let f = s.reg(Reg::Rsi);
    assert_eq!(f, 0x8_0000 - 40);
    assert_eq!(m.r32(f), 0, "#GP(0)");
    assert_eq!(m.r32(f + 4), 0x106, "EIP of the INT");
    assert_eq!(m.r32(f + 8), 0x2000);
    assert_ne!(m.r32(f + 12) & (1 << 17), 0, "saved EFLAGS.VM");
    assert_eq!(m.r32(f + 16), 0x800);
    assert_eq!(m.r32(f + 20), 0x3000);
    assert_eq!(m.r32(f + 24), 0x2000);
    assert_eq!(m.r32(f + 28), 0x2000);
    assert_eq!(m.r32(f + 36), 0x3000);
    assert_eq!(s.reg(Reg::Rdi), 0, "data segments nulled on entry");
}

#[test]
fn v86_int_with_iopl3_goes_through_idt_and_iret_returns() {
    let v86 = asm(16, 0x100, |a| {
        a.int(0x30)?;
        a.mov(bx, 0x55u32)?;
        a.out(0xE9u32, al)?; // IOPL 3: allowed
        a.hlt() // CPL 3: #GP
    });
    let handler = asm(32, 0x9000, |a| {
        a.mov(ecx, dword_ptr(esp + 8))?; // saved EFLAGS
        a.iretd()
    });
    let gp = asm(32, 0x9100, |a| {
        a.mov(edx, 0xBADu32)?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(1 << 20, &enter_v86(3), 0x8000);
    m.load(0x20100, &v86);
    m.load(0x9000, &handler);
    m.load(0x9100, &gp);
    m.set_gate32(0x30, 0x9000, 3);
    m.set_gate32(13, 0x9100, 0);
    m.w32(TSS + 4, 0x8_0000);
    m.w32(TSS + 8, KDATA as u32);
    assert_eq!(m.run(100), RunExit::Halted);
    let s = &m.cpu.state;
    assert_ne!(s.reg(Reg::Rcx) & (1 << 17), 0);
    assert_eq!(s.reg(Reg::Rbx) & 0xFFFF, 0x55, "IRET returned to V86 code");
    assert_eq!(m.bus.outs.len(), 1);
    assert_eq!(s.reg(Reg::Rdx), 0xBAD, "HLT in V86 is #GP");
}

#[test]
fn trap_flag_single_steps_each_instruction() {
    let code = asm(16, 0x7C00, |a| {
        a.pushf()?;
        a.pop(ax)?;
        a.or(ax, 0x100u32)?;
        a.push(ax)?;
        a.popf()?; // TF=1 from the next instruction on
        a.nop()?;
        a.nop()?;
        a.pushf()?;
        a.pop(ax)?;
        a.and(ax, 0xFEFFu32)?;
        a.push(ax)?;
        a.popf()?; // traps too: TF was set when it started
        a.hlt()
    });
    let handler = asm(16, 0x8000, |a| {
        a.inc(si)?;
        a.iret()
    });
    let mut m = Machine::real_mode_at(1 << 20, &code, 0x7C00);
    m.load(0x8000, &handler);
    m.w32(4, 0x0800_0000);
    assert_eq!(m.run(100), RunExit::Halted);
    // #DB after each of NOP, NOP, PUSHF, POP, AND, PUSH, POPF.
    assert_eq!(m.cpu.state.reg(Reg::Rsi) & 0xFFFF, 7);
    assert_ne!(m.cpu.state.dr[6] & (1 << 14), 0, "DR6.BS");
    assert_eq!(m.cpu.state.seg(Seg::Cs).selector, 0);
}

#[test]
fn a20_gate_wraps_at_1mib_when_disabled() {
    let code = asm(16, 0x7C00, |a| {
        a.mov(ax, 0xFFFFu32)?;
        a.mov(es, ax)?;
        a.mov(byte_ptr(0x10), 0x5Au32)?; // ES:0x10 with ES override below
        a.hlt()
    });
    // Make the store use ES.
    let mut code = code;
    let pos = code.iter().position(|&b| b == 0xC6).unwrap();
    code.insert(pos, 0x26);
    let mut m = Machine::real_mode_at(2 << 20, &code, 0x7C00);
    m.bus.a20 = false;
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.ram[0x0], 0x5A, "FFFF:0010 wraps to 0 with A20 off");
    assert_eq!(m.ram[0x10_0000], 0);
}

#[test]
fn mmio_reads_and_writes_reach_the_bus() {
    let code = asm(32, 0x8000, |a| {
        a.mov(eax, dword_ptr(0xFEE0_0030u32))?;
        a.mov(dword_ptr(0xFEE0_00B0u32), 0x1234u32)?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(1 << 20, &code, 0x8000);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rax), 0x9ABC_DEF0);
    assert_eq!(m.bus.mmio_writes, vec![(0xFEE0_00B0, 4, 0x1234)]);
}

#[test]
fn instruction_and_data_breakpoints() {
    let code = asm(32, 0x8000, |a| {
        a.mov(eax, 0x8100u32)?;
        a.mov(dr0, eax)?; // exec breakpoint at 0x8100
        a.mov(eax, 0x700u32)?;
        a.mov(dr1, eax)?; // write breakpoint on dword 0x700
        a.mov(eax, 0x00D0_000Au32)?; // L1 write len 4 (RW1=01 LEN1=11), G0... exec
        a.mov(dr7, eax)?;
        a.mov(dword_ptr(0x704), 1u32)?; // no hit
        a.mov(dword_ptr(0x702), 2u32)?; // overlaps: trap after it
        a.mov(edx, 0x8100u32)?;
        a.jmp(edx)
    });
    let target = asm(32, 0x8100, |a| {
        a.mov(esi, 0x5555u32)?;
        a.hlt()
    });
    let handler = asm(32, 0x9000, |a| {
        a.inc(ebp)?;
        a.mov(ecx, dr6)?;
        a.mov(dword_ptr(0x800), ecx)?; // overwritten by the second hit
        a.or(dword_ptr(esp + 8), 0x10000u32)?; // set RF in the saved EFLAGS
        a.iretd()
    });
    let mut m = Machine::protected32_at(1 << 20, &code, 0x8000);
    m.load(0x8100, &target);
    m.load(0x9000, &handler);
    m.set_gate32(1, 0x9000, 0);
    assert_eq!(m.run(200), RunExit::Halted);
    let s = &m.cpu.state;
    assert_eq!(s.reg(Reg::Rbp), 2, "one data hit, one instruction hit");
    assert_eq!(
        s.reg(Reg::Rsi),
        0x5555,
        "RF let the breakpointed instruction run"
    );
    assert_eq!(m.r32(0x800) & 0xF, 0b0001, "last hit was DR0 (instruction)");
}
