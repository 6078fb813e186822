//! The stack-address size is SS.B: with a 16-bit stack segment only SP moves and ESP's
//! upper half keeps its value, whatever the operand size and whichever SS is loaded by
//! the instruction itself (POP SS, outer-level RETF/IRET, stack switches through gates).
//! Found by test386.asm (POST 09, its 16-bit-stack PUSH/POP tests).

mod common;
use aero_cpu::{DescriptorTable, Reg, RunExit, Seg};
use common::*;
use iced_x86::code_asm::*;

/// Ring-0 data, 16-bit stack (B=0), 4 GiB limit.
const STACK16: u16 = 0x40;
/// Ring-3 data, 16-bit stack (B=0), 4 GiB limit.
const USTACK16: u16 = 0x4B;

fn machine(code: &[u8]) -> Machine {
    let mut m = Machine::protected32_at(8 << 20, code, 0x8000);
    m.w64(GDT + 0x40, descriptor(0, 0xFFFFF, 0x92, 0x8));
    m.w64(GDT + 0x48, descriptor(0, 0xFFFFF, 0xF2, 0x8));
    m.cpu.state.gdtr = DescriptorTable {
        base: GDT,
        limit: 0x4F,
    };
    m
}

#[test]
fn pop_ss_steps_sp_with_the_stack_size_it_popped_from() {
    // 32-bit POP SS at SP=FFFC of a 16-bit stack, loading a 32-bit stack segment
    // (test386's testPushPopSR ss,16): SP wraps to 0, ESP's upper half stays 0x0002.
    let code = asm(32, 0x8000, |a| {
        a.mov(ax, STACK16 as u32)?;
        a.mov(ss, ax)?;
        a.mov(esp, 0x2_FFFCu32)?;
        a.mov(dword_ptr(0xFFFC), KDATA as u32)?;
        a.add_instruction(iced_x86::Instruction::with1(
            iced_x86::Code::Popd_SS,
            iced_x86::Register::SS,
        )?)?;
        a.mov(esi, esp)?;
        // 16-bit POP SS at SP=FFFE of the 16-bit stack, same selector.
        a.mov(ax, STACK16 as u32)?;
        a.mov(ss, ax)?;
        a.mov(esp, 0x5_FFFEu32)?;
        a.mov(word_ptr(0xFFFE), STACK16 as u32)?;
        a.add_instruction(iced_x86::Instruction::with1(
            iced_x86::Code::Popw_SS,
            iced_x86::Register::SS,
        )?)?;
        a.mov(edi, esp)?;
        a.hlt()
    });
    let mut m = machine(&code);
    assert_eq!(m.run(100), RunExit::Halted);
    let s = &m.cpu.state;
    assert_eq!(
        s.reg(Reg::Rsi),
        0x2_0000,
        "o32 pop ss: SP wrapped, upper half kept"
    );
    assert_eq!(
        s.reg(Reg::Rdi),
        0x5_0000,
        "o16 pop ss: SP wrapped, upper half kept"
    );
    assert_eq!(s.seg[Seg::Ss as usize].selector, STACK16);
}

/// Ring-0 code that leaves for ring 3 with RETF or IRETD from a frame on a 32-bit stack
/// whose outer SS is a 16-bit stack; returns ESP once in ring 3.
fn esp_after_return_to_16_bit_outer_stack(iret: bool) -> u64 {
    let kernel = asm(32, 0x8000, |a| {
        a.mov(esp, 0x0039_9000u32)?;
        a.push(USTACK16 as u32)?;
        a.push(0xABCD_5678u32)?;
        if iret {
            a.push(0x2u32)?;
        }
        a.push(UCODE as u32)?;
        a.push(0x40_1000u32)?;
        if iret { a.iretd() } else { a.retf() }
    });
    let user = asm(32, 0x40_1000, |a| a.nop());
    let mut m = machine(&kernel);
    m.load(0x40_1000, &user);
    let steps = if iret { 7 } else { 6 };
    assert_eq!(m.run(steps), RunExit::BudgetExhausted);
    let s = &m.cpu.state;
    assert_eq!(s.rip, 0x40_1000, "in ring 3");
    assert_eq!(s.seg[Seg::Ss as usize].selector, USTACK16);
    s.reg(Reg::Rsp)
}

#[test]
fn outer_retf_and_iret_load_only_sp_for_a_16_bit_stack() {
    // ESP's upper half is the one before the return (0x0039); only SP comes from the frame.
    assert_eq!(esp_after_return_to_16_bit_outer_stack(false), 0x0039_5678);
    assert_eq!(esp_after_return_to_16_bit_outer_stack(true), 0x0039_5678);
}

#[test]
fn interrupt_to_an_inner_16_bit_stack_keeps_esp_upper_half() {
    // Ring 3 (ESP 0x0012_0100) takes INT 0x80 to ring 0 whose TSS stack is 16-bit:
    // SS0:SP0 = STACK16:0x8000 (ESP0's upper half 0xBEEF is not used). The frame goes to
    // SS0:7FEC.., ESP keeps ring 3's upper half.
    let kernel = asm(32, 0x8000, |a| {
        a.push(UDATA as u32)?;
        a.push(0x0012_0100u32)?;
        a.push(0x2u32)?;
        a.push(UCODE as u32)?;
        a.push(0x40_1000u32)?;
        a.iretd()
    });
    let user = asm(32, 0x40_1000, |a| a.int(0x80));
    let handler = asm(32, 0x9000, |a| {
        a.mov(esi, esp)?;
        a.hlt()
    });
    let mut m = machine(&kernel);
    m.load(0x40_1000, &user);
    m.load(0x9000, &handler);
    m.set_gate32(0x80, 0x9000, 3);
    m.w32(TSS + 4, 0xBEEF_8000);
    m.w32(TSS + 8, STACK16 as u32);
    assert_eq!(m.run(100), RunExit::Halted);
    let s = &m.cpu.state;
    assert_eq!(s.reg(Reg::Rsi), 0x0012_7FEC);
    assert_eq!(m.r32(0x7FEC), 0x40_1002, "return EIP at SS0:7FEC");
    assert_eq!(m.r32(0x7FF8), 0x0012_0100, "old ESP pushed");
    assert_eq!(m.r32(0x7FFC), UDATA as u32, "old SS pushed");
}
