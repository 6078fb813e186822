//! Corner cases of 386-era instructions that CPU test ROMs check (found by running an
//! external 386 test ROM as the system BIOS): each test pins one behaviour.

mod common;
use aero_cpu::{Reg, RunExit};
use common::*;
use iced_x86::code_asm::*;

const RO_DATA: u16 = 0x38;

/// ARPL writes its destination only when it raises the RPL: with an unchanged selector in
/// a read-only data segment it must not fault; raising the RPL there is a #GP(0).
#[test]
fn arpl_writes_memory_only_when_the_rpl_changes() {
    let code = asm(32, 0x8000, |a| {
        a.mov(ax, RO_DATA as u32)?;
        a.mov(ds, ax)?;
        a.mov(bx, 2u32)?;
        a.mov(ecx, 0u32)?;
        a.arpl(word_ptr(0x5000), bx)?; // [0x5000] = 0xfff3: RPL 3 >= 2, nothing to write
        a.setz(cl)?;
        a.mov(ch, 1u32)?; // got past the first ARPL
        a.mov(dx, word_ptr(0x5002))?; // 0xfff0: RPL 0 < 2, must write -> #GP
        a.arpl(word_ptr(0x5002), bx)?;
        a.hlt()
    });
    let handler = asm(32, 0x9000, |a| {
        a.pop(esi)?; // error code
        a.mov(edi, 0x1234u32)?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(1 << 20, &code, 0x8000);
    m.w64(GDT + RO_DATA as u64, descriptor(0, 0xFFFFF, 0x90, 0xC));
    m.w32(0x5000, 0xfff0_fff3);
    m.load(0x9000, &handler);
    m.set_gate32(13, 0x9000, 0);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(
        m.cpu.state.reg(Reg::Rcx),
        0x100,
        "no fault on the first ARPL, ZF=0: RPL already high enough"
    );
    assert_eq!(
        m.cpu.state.reg(Reg::Rdi),
        0x1234,
        "raising the RPL in a read-only segment faults"
    );
    assert_eq!(m.cpu.state.reg(Reg::Rsi), 0, "#GP(0)");
    assert_eq!(m.r32(0x5000), 0xfff0_fff3, "memory unchanged");
}

/// Identity-map the first 4 MiB (user, writable) with PD 0x10000 / PT 0x11000.
fn identity_paging(m: &mut Machine) {
    m.w32(0x10000, 0x11000 | 7);
    for p in 0..1024u32 {
        m.w32(0x11000 + p as u64 * 4, (p << 12) | 7);
    }
}

fn enable_paging(a: &mut CodeAssembler) -> Result<(), IcedError> {
    a.mov(eax, 0x10000u32)?;
    a.mov(cr3, eax)?;
    a.mov(eax, cr0)?;
    a.or(eax, 0x8000_0000u32)?;
    a.mov(cr0, eax)
}

/// ENTER faults when a write at the final stack pointer would: the #PF is a write fault
/// (error code W=1) at the new stack top, and ESP/EBP are left as they were.
#[test]
fn enter_probes_the_new_stack_top_as_a_write() {
    let prologue = |a: &mut CodeAssembler| -> Result<(), IcedError> {
        enable_paging(a)?;
        a.mov(esp, 0x51020u32)?;
        a.mov(ebp, 0x1234u32)
    };
    let enter_at = 0x8000 + asm(32, 0x8000, prologue).len() as u32;
    let code = asm(32, 0x8000, |a| {
        prologue(a)?;
        a.enter(0x100u32, 0u32)?; // frame at 0x5101c, new top 0x50f1c: page 0x50 absent
        a.hlt()
    });
    let handler = asm(32, 0x9000, |a| {
        a.pop(esi)?; // error code
        a.mov(edi, cr2)?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(1 << 22, &code, 0x8000);
    identity_paging(&mut m);
    m.w32(0x11000 + 0x50 * 4, 0x50000 | 6); // not present
    m.load(0x9000, &handler);
    m.set_gate32(14, 0x9000, 0);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(
        m.cpu.state.reg(Reg::Rsi),
        2,
        "#PF: not present, write, supervisor"
    );
    assert_eq!(
        m.cpu.state.reg(Reg::Rdi),
        0x50f1c,
        "CR2 = the new stack top"
    );
    assert_eq!(m.cpu.state.reg(Reg::Rbp), 0x1234, "EBP unchanged");
    // The exception frame sits right below the unchanged ESP: EIP of the ENTER.
    assert_eq!(m.r32(0x51020 - 12), enter_at);
}
