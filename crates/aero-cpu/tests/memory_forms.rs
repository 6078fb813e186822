//! Memory fast paths specialised at decode time (`exec::F_FLAT*`): code decoded while DS
//! is flat (base 0, 4 GiB) skips the segment arithmetic, so it must never run once DS is
//! not flat any more, whether DS changes inside the block or between two runs of it.

mod common;
use aero_cpu::{DescriptorTable, Reg, RunExit};
use common::*;
use iced_x86::code_asm::*;

/// Ring-0 data, base 0, limit 0xFFF (byte granular).
const SMALL: u16 = 0x40;
/// Ring-0 data, base 0x10_0000, 4 GiB.
const BASED: u16 = 0x48;
const GP_HANDLER: u64 = 0xA000;
const SUB: u64 = 0x9000;
const STACK_SUB: u64 = 0x9800;
const SS_HANDLER: u64 = 0xA800;
const POPPER: u64 = 0x9C00;

fn machine(code: &[u8]) -> Machine {
    let mut m = Machine::protected32_at(8 << 20, code, 0x8000);
    m.w64(GDT + 0x40, descriptor(0, 0xFFF, 0x92, 0x4));
    m.w64(GDT + 0x48, descriptor(0x10_0000, 0xFFFFF, 0x92, 0xC));
    m.cpu.state.gdtr = DescriptorTable {
        base: GDT,
        limit: 0x4F,
    };
    // #GP: EDX = 13, error code in ECX, halt.
    let gp = asm(32, GP_HANDLER, |a| {
        a.pop(ecx)?;
        a.mov(edx, 13u32)?;
        a.hlt()
    });
    m.load(GP_HANDLER, &gp);
    m.set_gate32(13, GP_HANDLER as u32, 0);
    // #SS: EDX = 12, halt.
    let ss_handler = asm(32, SS_HANDLER, |a| {
        a.mov(edx, 12u32)?;
        a.hlt()
    });
    m.load(SS_HANDLER, &ss_handler);
    m.set_gate32(12, SS_HANDLER as u32, 0);
    // POP ECX, then on to EBP.
    let popper = asm(32, POPPER, |a| {
        a.pop(ecx)?;
        a.jmp(ebp)
    });
    m.load(POPPER, &popper);
    // The stack subroutine: PUSH/POP and a nested CALL/RET.
    let stack_sub = asm(32, STACK_SUB, |a| {
        let mut inner = a.create_label();
        a.push(ebx)?;
        a.pop(ecx)?;
        a.call(inner)?;
        a.ret()?;
        a.set_label(&mut inner)?;
        a.ret()
    });
    m.load(STACK_SUB, &stack_sub);
    // The subroutine every test calls: load, store, read-modify-write, compare and LEA
    // through [ebx+esi*4+8] and [ebx+8] (the base+index and base+displacement forms).
    let sub = asm(32, SUB, |a| {
        a.mov(eax, dword_ptr(ebx + esi * 4 + 8))?;
        a.mov(dword_ptr(ebx + 8), eax)?;
        a.add(dword_ptr(ebx + 12), eax)?;
        a.cmp(dword_ptr(ebx + 12), 0u32)?;
        a.lea(edi, dword_ptr(ebx + esi * 4 + 8))?;
        a.ret()
    });
    m.load(SUB, &sub);
    m
}

#[test]
fn code_decoded_with_a_flat_ds_uses_the_base_of_a_later_ds() {
    let code = asm(32, 0x8000, |a| {
        a.mov(ebx, 0x2000u32)?;
        a.xor(esi, esi)?;
        a.call(SUB)?;
        a.mov(ebp, eax)?;
        a.mov(ax, BASED as u32)?;
        a.mov(ds, ax)?;
        a.call(SUB)?;
        a.hlt()
    });
    let mut m = machine(&code);
    m.w32(0x2008, 0x1111);
    m.w32(0x10_2008, 0x2222);
    assert_eq!(m.run(100), RunExit::Halted);
    let s = &m.cpu.state;
    assert_eq!(s.reg(Reg::Rbp), 0x1111, "flat DS reads 0x2008");
    assert_eq!(s.reg(Reg::Rax), 0x2222, "DS based at 1 MiB reads 0x10_2008");
    assert_eq!(m.r32(0x10_200C), 0x2222, "the RMW adds at 0x10_200C");
    assert_eq!(m.r32(0x200C), 0x1111, "and at 0x200C before");
    assert_eq!(s.reg(Reg::Rdi), 0x2008, "LEA ignores the segment");
}

#[test]
fn code_decoded_with_a_flat_ds_checks_the_limit_of_a_later_ds() {
    let code = asm(32, 0x8000, |a| {
        a.mov(ebx, 0x2000u32)?;
        a.xor(esi, esi)?;
        a.call(SUB)?;
        a.mov(ax, SMALL as u32)?;
        a.mov(ds, ax)?;
        a.call(SUB)?;
        a.mov(edx, 1u32)?;
        a.hlt()
    });
    let mut m = machine(&code);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(
        m.cpu.state.reg(Reg::Rdx),
        13,
        "offset 0x2008 beyond DS's limit"
    );
}

#[test]
fn loading_ds_ends_the_flat_forms_of_the_same_block() {
    // MOV DS and the access after it in one block: the access was decoded with DS flat.
    let code = asm(32, 0x8000, |a| {
        a.mov(ax, SMALL as u32)?;
        a.mov(ebx, 0x2000u32)?;
        a.mov(ds, ax)?;
        a.mov(eax, dword_ptr(ebx))?;
        a.mov(edx, 1u32)?;
        a.hlt()
    });
    let mut m = machine(&code);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rdx), 13);
}

#[test]
fn flat_forms_fault_at_the_4_gib_limit() {
    // A dword at 0xFFFF_FFFE crosses the 4 GiB limit of a flat segment: #GP, not a wrap.
    let code = asm(32, 0x8000, |a| {
        a.mov(ebx, 0xFFFF_FFF6u32)?;
        a.xor(esi, esi)?;
        a.call(SUB)?;
        a.mov(edx, 1u32)?;
        a.hlt()
    });
    let mut m = machine(&code);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rdx), 13);
}

#[test]
fn stack_code_decoded_with_a_flat_ss_uses_the_base_of_a_later_ss() {
    let code = asm(32, 0x8000, |a| {
        a.mov(ebx, 0x1234u32)?;
        a.call(STACK_SUB)?;
        a.mov(ax, BASED as u32)?;
        a.mov(ss, ax)?;
        a.mov(esp, 0x7000u32)?;
        a.mov(ebx, 0x5678u32)?;
        a.call(STACK_SUB)?;
        a.hlt()
    });
    let mut m = machine(&code);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rcx), 0x5678);
    assert_ne!(m.r32(0x10_6FFC), 0, "CALL pushed at SS base + ESP - 4");
    // PUSH EBX wrote there first, then the inner CALL its return address (after PUSH,
    // POP and the 5-byte CALL).
    assert_eq!(
        m.r32(0x10_6FF8),
        STACK_SUB as u32 + 7,
        "inner CALL pushed at SS base + ESP - 8"
    );
    assert_eq!(m.r32(0x6FF8), 0, "nothing at ESP - 8 without the base");
}

#[test]
fn stack_code_decoded_with_a_flat_ss_checks_the_limit_of_a_later_ss() {
    const FIRST: u64 = 0x8800;
    const SECOND: u64 = 0x8C00;
    let code = asm(32, 0x8000, |a| {
        a.push(0x1234u32)?;
        a.mov(ebp, FIRST as u32)?;
        a.jmp(POPPER)
    });
    let first = asm(32, FIRST, |a| {
        a.mov(ax, SMALL as u32)?;
        a.mov(ss, ax)?;
        // POP at 0x1000..0x1003, beyond the limit; the fault frame fits below.
        a.mov(esp, 0x1000u32)?;
        a.mov(ebp, SECOND as u32)?;
        a.jmp(POPPER)
    });
    let second = asm(32, SECOND, |a| {
        a.mov(edx, 1u32)?;
        a.hlt()
    });
    let mut m = machine(&code);
    m.load(FIRST, &first);
    m.load(SECOND, &second);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rcx), 0x1234, "the flat run popped");
    assert_eq!(m.cpu.state.reg(Reg::Rdx), 12, "POP beyond SS's limit: #SS");
}
