//! Long mode: entry from protected mode, 64-bit execution, RIP-relative addressing,
//! 64-bit interrupts with IST, SYSCALL/SYSRET, SYSENTER.

mod common;
use aero_cpu::{Reg, RunExit, Seg};
use common::*;
use iced_x86::code_asm::*;

const PML4: u64 = 0x20000;

/// Identity map the first 1 GiB with 2 MiB pages.
fn long_mode_tables(m: &mut Machine) {
    m.w64(PML4, 0x21000 | 7);
    m.w64(0x21000, 0x22000 | 7);
    for k in 0..512u64 {
        m.w64(0x22000 + k * 8, (k << 21) | 0x87);
    }
}

fn set_gate64(m: &mut Machine, vector: u8, handler: u64, ist: u8, dpl: u8) {
    let base = IDT + vector as u64 * 16;
    let lo = (handler & 0xFFFF)
        | ((CODE64 as u64) << 16)
        | ((ist as u64) << 32)
        | ((0x8E00u64 | ((dpl as u64) << 13)) << 32)
        | ((handler >> 16) & 0xFFFF) << 48;
    m.w64(base, lo);
    m.w64(base + 8, handler >> 32);
}

/// 32-bit PM code at 0x8000 that enters long mode and jumps to 0x10000.
fn enter_long_mode() -> Vec<u8> {
    asm(32, 0x8000, |a| {
        a.mov(eax, cr4)?;
        a.or(eax, 0x20u32)?;
        a.mov(cr4, eax)?;
        a.mov(eax, PML4 as u32)?;
        a.mov(cr3, eax)?;
        a.mov(ecx, 0xC000_0080u32)?;
        a.rdmsr()?;
        a.or(eax, 0x101u32)?; // LME | SCE
        a.wrmsr()?;
        a.mov(eax, cr0)?;
        a.or(eax, 0x8000_0000u32)?;
        a.mov(cr0, eax)?;
        a.jmp_far(CODE64, 0x10000)
    })
}

fn machine_with(code64: &[u8]) -> Machine {
    let mut m = Machine::protected32_at(4 << 20, &enter_long_mode(), 0x8000);
    long_mode_tables(&mut m);
    m.load(0x10000, code64);
    m.cpu.state.idtr.limit = 0xFFF;
    m
}

#[test]
fn enter_long_mode_and_run_64_bit_code() {
    let code = asm(64, 0x10000, |a| {
        let mut data = a.create_label();
        a.mov(rax, 0x1122_3344_5566_7788u64)?;
        a.mov(qword_ptr(data), rax)?; // RIP-relative
        a.mov(rbx, qword_ptr(data))?;
        a.mov(r9, rbx)?;
        a.shr(r9, 32u32)?;
        a.mov(ecx, 0xFFFF_FFFFu32)?;
        a.inc(ecx)?; // 32-bit op zero-extends
        a.push(r9)?;
        a.pop(r10)?;
        a.hlt()?;
        a.set_label(&mut data)?;
        a.dq(&[0])
    });
    let mut m = machine_with(&code);
    assert_eq!(m.run(200), RunExit::Halted);
    let s = &m.cpu.state;
    assert!(s.long_mode_active());
    assert!(s.seg(Seg::Cs).long());
    assert_eq!(s.reg(Reg::Rbx), 0x1122_3344_5566_7788);
    assert_eq!(s.gpr[10], 0x1122_3344);
    assert_eq!(s.reg(Reg::Rcx), 0);
}

#[test]
fn cet_hint_instructions_are_nops_without_cet() {
    // ENDBR64, ENDBR32, RDSSPQ RAX (F3 REX.W 0F 1E C8): NOPs on a CPU without CET.
    let code = [
        0xF3, 0x0F, 0x1E, 0xFA, 0xF3, 0x0F, 0x1E, 0xFB, 0x48, 0xC7, 0xC0, 0x05, 0, 0, 0, 0xF3,
        0x48, 0x0F, 0x1E, 0xC8, 0xF4,
    ];
    let mut m = machine_with(&code);
    assert_eq!(m.run(200), RunExit::Halted);
    assert_eq!(
        m.cpu.state.reg(Reg::Rax),
        5,
        "RDSSP must leave its operand alone"
    );
}

#[test]
fn interrupt_with_ist_and_iretq() {
    let code = asm(64, 0x10000, |a| {
        a.mov(rsp, 0x30_0000u64)?;
        a.int(0x40)?;
        a.mov(rdx, rax)?;
        a.hlt()
    });
    let handler = asm(64, 0x11000, |a| {
        a.mov(rax, rsp)?;
        a.mov(rbx, qword_ptr(rsp + 8))?; // saved CS
        a.mov(rax, 0x77u64)?;
        a.mov(rsi, rsp)?;
        a.iretq()
    });
    let mut m = machine_with(&code);
    m.load(0x11000, &handler);
    set_gate64(&mut m, 0x40, 0x11000, 1, 0);
    // IST1 in the 64-bit TSS at 0x24.
    m.w64(TSS + 0x24, 0x28_0008);
    assert_eq!(m.run(200), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rdx), 0x77);
    assert_eq!(m.cpu.state.reg(Reg::Rbx), CODE64 as u64);
    // IST stack aligned down to 16, five qwords pushed.
    assert_eq!(m.cpu.state.reg(Reg::Rsi), 0x28_0000 - 40);
    assert_eq!(m.cpu.state.reg(Reg::Rsp), 0x30_0000);
}

#[test]
fn page_fault_in_long_mode_reports_cr2_and_error_code() {
    let code = asm(64, 0x10000, |a| {
        a.mov(rsp, 0x30_0000u64)?;
        a.mov(rax, 0x7F00_0000_1000u64)?;
        a.mov(dword_ptr(rax), 1u32)?;
        a.hlt()
    });
    let handler = asm(64, 0x11000, |a| {
        a.pop(rcx)?;
        a.mov(rdx, cr2)?;
        a.hlt()
    });
    let mut m = machine_with(&code);
    m.load(0x11000, &handler);
    set_gate64(&mut m, 14, 0x11000, 0, 0);
    assert_eq!(m.run(200), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rcx), 0b010);
    assert_eq!(m.cpu.state.reg(Reg::Rdx), 0x7F00_0000_1000);
}

/// Non-canonical addresses fault through every memory fast path (flat forms skip the
/// segment arithmetic and rely on the TLB never holding a non-canonical page): #GP for
/// data, #SS for stack-segment accesses. Each access first runs once canonical, so the
/// aliased page (same low 48 bits) is in the TLB.
#[test]
fn non_canonical_accesses_fault_through_the_flat_forms() {
    type Access = fn(&mut CodeAssembler) -> Result<(), iced_x86::IcedError>;
    let accesses: [(Access, u64); 6] = [
        (|a| a.mov(rax, qword_ptr(rbx)), 13),
        (|a| a.mov(qword_ptr(rbx + 8), rax), 13),
        (|a| a.mov(eax, dword_ptr(rbx + rsi * 8)), 13),
        (|a| a.add(dword_ptr(rbx + 16), eax), 13),
        (|a| a.cmp(dword_ptr(rbx), 5u32), 13),
        (|a| a.mov(rax, qword_ptr(rbp + 8)), 12),
    ];
    for (k, (access, vector)) in accesses.into_iter().enumerate() {
        let code = asm(64, 0x10000, |a| {
            let mut again = a.create_label();
            a.mov(rsp, 0x30_0000u64)?;
            a.mov(rbx, 0x5000u64)?;
            a.mov(rbp, 0x5000u64)?;
            a.xor(esi, esi)?;
            a.xor(edi, edi)?;
            a.set_label(&mut again)?;
            access(a)?;
            a.inc(edi)?;
            a.mov(rbx, 0x8000_0000_5000u64)?;
            a.mov(rbp, rbx)?;
            a.jmp(again)
        });
        let handler = asm(64, 0x11000, |a| {
            a.pop(rcx)?;
            a.mov(edx, vector as u32)?;
            a.hlt()
        });
        let mut m = machine_with(&code);
        m.load(0x11000, &handler);
        set_gate64(&mut m, 12, 0x11000, 0, 0);
        set_gate64(&mut m, 13, 0x11000, 0, 0);
        assert_eq!(m.run(200), RunExit::Halted, "access {k}");
        let s = &m.cpu.state;
        assert_eq!(
            s.reg(Reg::Rdi),
            1,
            "access {k}: the canonical run completed"
        );
        assert_eq!(s.reg(Reg::Rdx), vector, "access {k}: fault vector");
        assert_eq!(s.reg(Reg::Rcx), 0, "access {k}: error code");
    }
}

#[test]
fn syscall_sysret_round_trip() {
    // STAR: kernel CS = 0x30 (SS 0x38); sysret base 0x13 -> CS = 0x23 (64-bit user), SS = 0x1B.
    let code = asm(64, 0x10000, |a| {
        a.mov(ecx, 0xC000_0081u32)?;
        a.xor(eax, eax)?;
        a.mov(edx, 0x0013_0030u32)?;
        a.wrmsr()?;
        a.mov(ecx, 0xC000_0082u32)?;
        a.mov(eax, 0x12000u32)?;
        a.xor(edx, edx)?;
        a.wrmsr()?;
        a.mov(ecx, 0xC000_0084u32)?;
        a.mov(eax, 0x200u32)?; // mask IF
        a.wrmsr()?;
        a.mov(rcx, 0x13000u64)?; // user RIP
        a.mov(r11, 0x202u64)?;
        a.sysretq()
    });
    let user = asm(64, 0x13000, |a| {
        a.mov(r12, 5u64)?;
        a.syscall()?;
        a.hlt()
    });
    let kernel = asm(64, 0x12000, |a| {
        a.mov(r13, rcx)?;
        a.mov(r14, r11)?;
        a.hlt()
    });
    let mut m = machine_with(&code);
    m.load(0x12000, &kernel);
    m.load(0x13000, &user);
    // GDT 0x20 must be a 64-bit user code segment for SYSRET's CS = base+16.
    m.w64(GDT + 0x20, descriptor(0, 0xFFFFF, 0xFA, 0xA));
    assert_eq!(m.run(200), RunExit::Halted);
    let s = &m.cpu.state;
    assert_eq!(s.gpr[12], 5);
    assert_eq!(
        s.gpr[13],
        0x13000 + 10 + 2,
        "RCX = return RIP after SYSCALL"
    );
    assert_eq!(s.gpr[14] & 0x200, 0x200, "R11 = user RFLAGS");
    assert_eq!(s.cpl, 0);
    assert_eq!(s.seg(Seg::Cs).selector, 0x30);
    assert_eq!(s.rflags & 0x200, 0, "SFMASK cleared IF");
}

#[test]
fn sysenter_from_ring3_in_protected_mode() {
    let kernel = asm(32, 0x8000, |a| {
        a.mov(ecx, 0x174u32)?;
        a.mov(eax, KCODE as u32)?;
        a.xor(edx, edx)?;
        a.wrmsr()?;
        a.mov(ecx, 0x175u32)?;
        a.mov(eax, 0x7_0000u32)?;
        a.wrmsr()?;
        a.mov(ecx, 0x176u32)?;
        a.mov(eax, 0x9000u32)?;
        a.wrmsr()?;
        a.push(UDATA as u32)?;
        a.push(0x40_2000u32)?;
        a.push(0x202u32)?;
        a.push(UCODE as u32)?;
        a.push(0x40_1000u32)?;
        a.iretd()
    });
    let user = asm(32, 0x40_1000, |a| {
        a.mov(ecx, esp)?;
        a.mov(edx, 0x40_1000u32 + 0x100)?;
        a.sysenter()
    });
    let entry = asm(32, 0x9000, |a| {
        a.mov(edi, esp)?;
        a.sysexit()
    });
    let back = asm(32, 0x40_1100, |a| {
        a.mov(ebp, 0x5Eu32)?;
        a.hlt() // ring 3: HLT raises #GP
    });
    let gp = asm(32, 0x9100, |a| {
        a.pop(esi)?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(8 << 20, &kernel, 0x8000);
    m.load(0x40_1000, &user);
    m.load(0x40_1100, &back);
    m.load(0x9000, &entry);
    m.load(0x9100, &gp);
    m.set_gate32(13, 0x9100, 0);
    m.w32(TSS + 4, 0x8_0000);
    m.w32(TSS + 8, KDATA as u32);
    assert_eq!(m.run(200), RunExit::Halted);
    let s = &m.cpu.state;
    assert_eq!(s.reg(Reg::Rdi), 0x7_0000, "SYSENTER loaded ESP");
    assert_eq!(s.reg(Reg::Rbp), 0x5E, "SYSEXIT returned to EDX in ring 3");
    assert_eq!(s.reg(Reg::Rsi), 0, "HLT at CPL 3 is #GP(0)");
}

#[test]
fn compatibility_mode_code_and_interrupt_to_64_bit_handler() {
    // 64-bit code far-returns into 32-bit compatibility code (KCODE has D=1, L=0).
    let code = asm(64, 0x10000, |a| {
        a.mov(rsp, 0x30_0000u64)?;
        a.push(KCODE as i32)?;
        a.push(0x14000i32)?;
        a.db(&[0x48, 0xCB]) // RETFQ
    });
    let compat = asm(32, 0x14000, |a| {
        a.mov(eax, 0xFFFF_FFFFu32)?;
        a.inc(eax)?; // 32-bit wrap
        a.mov(ebx, esp)?;
        a.int(0x41)?;
        a.mov(edi, 0xC0u32)?;
        a.hlt()
    });
    let handler = asm(64, 0x11000, |a| {
        a.mov(rsi, qword_ptr(rsp + 8))?; // saved CS
        a.iretq()
    });
    let mut m = machine_with(&code);
    m.load(0x14000, &compat);
    m.load(0x11000, &handler);
    set_gate64(&mut m, 0x41, 0x11000, 0, 0);
    assert_eq!(m.run(200), RunExit::Halted);
    let s = &m.cpu.state;
    assert_eq!(s.reg(Reg::Rax), 0);
    assert_eq!(
        s.reg(Reg::Rsi),
        KCODE as u64,
        "interrupted in compatibility mode"
    );
    assert_eq!(s.reg(Reg::Rdi), 0xC0, "IRETQ returned to 32-bit code");
    assert!(!s.seg(Seg::Cs).long() && s.long_mode_active());
    assert_eq!(s.reg(Reg::Rbx), 0x30_0000, "RETFQ popped two qwords");
}
