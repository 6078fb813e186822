//! CPUID, MSRs, RDTSC, LAR/LSL/VERR, CMPXCHG8B, I/O permission bitmap, call gates,
//! INIT/STARTUP.

mod common;
use aero_cpu::{Reg, RunExit, Seg};
use common::*;
use iced_x86::code_asm::*;

#[test]
fn cpuid_profile() {
    let code = asm(32, 0x8000, |a| {
        a.xor(eax, eax)?;
        a.cpuid()?;
        a.mov(dword_ptr(0x500), ebx)?;
        a.mov(dword_ptr(0x504), edx)?;
        a.mov(dword_ptr(0x508), ecx)?;
        a.mov(eax, 1u32)?;
        a.cpuid()?;
        a.mov(esi, edx)?;
        a.mov(edi, ecx)?;
        a.mov(eax, 0x8000_0001u32)?;
        a.cpuid()?;
        a.mov(ebp, edx)?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(1 << 20, &code, 0x8000);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(&m.ram[0x500..0x50C], b"GenuineIntel");
    let s = &m.cpu.state;
    let edx1 = s.reg(Reg::Rsi);
    for bit in [3, 4, 5, 6, 8, 9, 11, 13, 15, 16] {
        assert_ne!(edx1 & (1 << bit), 0, "CPUID.1:EDX bit {bit}");
    }
    assert_ne!(s.reg(Reg::Rdi) & (1 << 13), 0, "CX16");
    // SSE3 (bit 0) and SSSE3 (bit 9): both implemented.
    assert_eq!(s.reg(Reg::Rdi) & ((1 << 9) | 1), (1 << 9) | 1, "SSE3/SSSE3");
    for bit in [23, 24, 25, 26] {
        assert_ne!(
            edx1 & (1 << bit),
            0,
            "CPUID.1:EDX bit {bit} (MMX/FXSR/SSE/SSE2)"
        );
    }
    assert_eq!(
        s.reg(Reg::Rbp) & ((1 << 29) | (1 << 20) | (1 << 11)),
        (1 << 29) | (1 << 20) | (1 << 11)
    );
}

#[test]
fn unknown_msr_is_gp_and_known_msrs_round_trip() {
    let code = asm(32, 0x8000, |a| {
        a.mov(ecx, 0x277u32)?; // PAT
        a.mov(eax, 0x0006_0406u32)?;
        a.mov(edx, 0x0007_0106u32)?;
        a.wrmsr()?;
        a.xor(eax, eax)?;
        a.xor(edx, edx)?;
        a.rdmsr()?;
        a.mov(esi, eax)?;
        a.mov(edi, edx)?;
        a.mov(ecx, 0x1234_5678u32)?;
        a.rdmsr()?; // #GP
        a.hlt()
    });
    let gp = asm(32, 0x9000, |a| {
        a.pop(ebx)?;
        a.mov(ebp, 0x6Du32)?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(1 << 20, &code, 0x8000);
    m.load(0x9000, &gp);
    m.set_gate32(13, 0x9000, 0);
    assert_eq!(m.run(100), RunExit::Halted);
    let s = &m.cpu.state;
    assert_eq!(s.reg(Reg::Rsi), 0x0006_0406);
    assert_eq!(s.reg(Reg::Rdi), 0x0007_0106);
    assert_eq!(s.reg(Reg::Rbp), 0x6D);
    assert_eq!(s.reg(Reg::Rbx), 0, "#GP(0)");
}

#[test]
fn rdtsc_reads_bus_time() {
    let code = asm(32, 0x8000, |a| {
        a.nop()?;
        a.nop()?;
        a.rdtsc()?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(1 << 20, &code, 0x8000);
    assert_eq!(m.run(100), RunExit::Halted);
    // The test bus TSC is 3 * retired instructions at sync time (2 retired before RDTSC).
    assert_eq!(m.cpu.state.reg(Reg::Rax), 6);
    assert_eq!(m.cpu.state.reg(Reg::Rdx), 0);
}

#[test]
fn lar_lsl_verr_verw() {
    let code = asm(32, 0x8000, |a| {
        a.mov(ecx, KDATA as u32)?;
        a.lsl(eax, ecx)?;
        a.lar(ebx, ecx)?;
        a.verw(cx)?;
        a.setz(dl)?;
        a.mov(ecx, KCODE as u32)?;
        a.verw(cx)?; // code is never writable
        a.setz(dh)?;
        a.mov(ecx, 0x7F8u32)?; // beyond GDT limit
        a.lsl(esi, ecx)?;
        a.setz(ch)?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(1 << 20, &code, 0x8000);
    assert_eq!(m.run(100), RunExit::Halted);
    let s = &m.cpu.state;
    assert_eq!(s.reg(Reg::Rax), 0xFFFF_FFFF);
    assert_eq!(s.reg(Reg::Rbx), 0x00C0_9200, "limit 19:16 masked like QEMU");
    assert_eq!(s.reg(Reg::Rdx) & 0xFFFF, 0x0001);
    assert_eq!((s.reg(Reg::Rcx) >> 8) & 0xFF, 0);
}

#[test]
fn cmpxchg8b_success_and_failure() {
    let code = asm(32, 0x8000, |a| {
        a.mov(eax, 0x1111u32)?;
        a.mov(edx, 0x2222u32)?;
        a.mov(ebx, 0x3333u32)?;
        a.mov(ecx, 0x4444u32)?;
        a.cmpxchg8b(qword_ptr(0x600))?; // equal: store ECX:EBX
        a.setz(byte_ptr(0x610))?;
        a.cmpxchg8b(qword_ptr(0x600))?; // now differs: load into EDX:EAX
        a.setz(byte_ptr(0x611))?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(1 << 20, &code, 0x8000);
    m.w64(0x600, 0x0000_2222_0000_1111);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.r64(0x600), 0x0000_4444_0000_3333);
    assert_eq!(m.ram[0x610], 1);
    assert_eq!(m.ram[0x611], 0);
    assert_eq!(m.cpu.state.reg(Reg::Rax), 0x3333);
    assert_eq!(m.cpu.state.reg(Reg::Rdx), 0x4444);
}

#[test]
fn io_bitmap_controls_ring3_port_access() {
    let user = asm(32, 0x40_1000, |a| {
        a.mov(dx, 0x3F8u32)?;
        a.out(dx, al)?; // allowed by the bitmap
        a.mov(dx, 0x3F9u32)?;
        a.out(dx, al)?; // denied: #GP
        a.hlt()
    });
    let kernel = asm(32, 0x8000, |a| {
        a.push(UDATA as u32)?;
        a.push(0x40_2000u32)?;
        a.push(0x202u32)?; // IOPL 0
        a.push(UCODE as u32)?;
        a.push(0x40_1000u32)?;
        a.iretd()
    });
    let gp = asm(32, 0x9000, |a| {
        a.mov(ebp, 0x13u32)?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(8 << 20, &kernel, 0x8000);
    m.load(0x40_1000, &user);
    m.load(0x9000, &gp);
    m.set_gate32(13, 0x9000, 0);
    m.w32(TSS + 4, 0x8_0000);
    m.w32(TSS + 8, KDATA as u32);
    // TSS with an I/O bitmap at offset 0x68 covering ports 0..0x3FF; only 0x3F8 open.
    m.w64(GDT + 0x28, descriptor(TSS as u32, 0x68 + 0x80, 0x89, 0));
    m.cpu.state.tr.limit = 0x68 + 0x80;
    m.ram[TSS as usize + 0x66..TSS as usize + 0x68].copy_from_slice(&0x68u16.to_le_bytes());
    for b in 0..0x80 {
        m.ram[TSS as usize + 0x68 + b] = 0xFF;
    }
    m.ram[TSS as usize + 0x68 + 0x3F8 / 8] = 0xFE;
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.bus.outs.len(), 1);
    assert_eq!(m.bus.outs[0].0, 0x3F8);
    assert_eq!(m.cpu.state.reg(Reg::Rbp), 0x13);
}

#[test]
fn call_gate_to_ring0_and_far_return() {
    let user = asm(32, 0x40_1000, |a| {
        a.push(0xAAu32)?; // parameter
        a.call_far(0x3B, 0)?; // call gate selector 0x38 | RPL 3
        a.mov(edi, eax)?;
        a.int3()
    });
    let kernel = asm(32, 0x8000, |a| {
        a.push(UDATA as u32)?;
        a.push(0x40_2000u32)?;
        a.push(0x202u32)?;
        a.push(UCODE as u32)?;
        a.push(0x40_1000u32)?;
        a.iretd()
    });
    let gate_target = asm(32, 0x9000, |a| {
        a.mov(eax, dword_ptr(esp + 8))?; // copied parameter
        a.mov(esi, cs)?;
        a.retf_1(4u32)
    });
    let brk = asm(32, 0x9100, |a| a.hlt());
    let mut m = Machine::protected32_at(8 << 20, &kernel, 0x8000);
    m.load(0x40_1000, &user);
    m.load(0x9000, &gate_target);
    m.load(0x9100, &brk);
    m.set_gate32(3, 0x9100, 3);
    m.w32(TSS + 4, 0x8_0000);
    m.w32(TSS + 8, KDATA as u32);
    // 32-bit call gate, DPL 3, 1 parameter, target KCODE:0x9000.
    let gate = (0x9000u64 & 0xFFFF) | ((KCODE as u64) << 16) | (((0xEC00u64) | 1) << 32);
    m.w64(GDT + 0x38, gate);
    m.cpu.state.gdtr.limit = 0x3F;
    assert_eq!(m.run(100), RunExit::Halted);
    let s = &m.cpu.state;
    assert_eq!(s.reg(Reg::Rdi), 0xAA);
    assert_eq!(s.reg(Reg::Rsi) & 0xFFFF, KCODE as u64);
    assert_eq!(s.seg(Seg::Ss).selector, KDATA);
    // After RETF 4 back in ring 3 the user stack was popped by the parameter too.
    assert_eq!(
        m.r32(0x8_0000 - 4),
        UDATA as u32,
        "outer SS saved on the inner stack"
    );
}

#[test]
fn init_then_startup_ipi() {
    let mut m = Machine::new(1 << 20);
    m.load(0x9_A000, &[0xB8, 0x34, 0x12, 0xF4]); // mov ax, 0x1234; hlt
    m.cpu.init();
    assert_eq!(m.run(100), RunExit::Halted, "waits for SIPI");
    assert_eq!(m.cpu.instructions_retired(), 0);
    m.cpu.startup(0x9A);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rax) & 0xFFFF, 0x1234);
    assert_eq!(m.cpu.state.seg(Seg::Cs).selector, 0x9A00);
}
