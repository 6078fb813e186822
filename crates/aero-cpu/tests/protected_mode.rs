//! Protected mode: the real→protected switch, privilege checks, interrupts through the
//! IDT with stack switches, paging (#PF error code, CR2, A/D bits), triple fault.

mod common;
use aero_cpu::{Reg, RunExit, Seg};
use common::*;
use iced_x86::code_asm::*;

#[test]
fn switch_from_real_to_protected_mode() {
    let mut m = Machine::new(2 << 20);
    m.write_gdt();
    // GDTR image at 0x900: limit, base.
    m.ram[0x900..0x902].copy_from_slice(&0x3Fu16.to_le_bytes());
    m.ram[0x902..0x906].copy_from_slice(&(GDT as u32).to_le_bytes());
    let pm = asm(32, 0x8000, |a| {
        a.mov(ax, KDATA as u32)?;
        a.mov(ds, ax)?;
        a.mov(ss, ax)?;
        a.mov(esp, 0x9_0000u32)?;
        a.mov(dword_ptr(0x50_0000 - 0x40_0000 + 0x1000), 0xCAFEBABEu32)?;
        a.mov(eax, 0x1234_5678u32)?;
        a.push(eax)?;
        a.pop(ebx)?;
        a.hlt()
    });
    m.load(0x8000, &pm);
    let rm = asm(16, 0x7C00, |a| {
        a.cli()?;
        a.lgdt(ptr(0x900))?;
        a.mov(eax, cr0)?;
        a.or(eax, 1u32)?;
        a.mov(cr0, eax)?;
        a.jmp_far(KCODE, 0x8000)
    });
    m.load(0x7C00, &rm);
    m.cpu.state.rip = 0x7C00;
    m.cpu.state.seg[Seg::Cs as usize] = aero_cpu::Segment {
        selector: 0,
        base: 0,
        limit: 0xFFFF,
        attr: 0x9B,
    };
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rbx), 0x1234_5678);
    assert_eq!(m.r32(0x10_1000), 0xCAFEBABE);
    assert_eq!(m.cpu.state.seg(Seg::Cs).selector, KCODE);
    assert!(m.cpu.state.seg(Seg::Cs).db());
    // The accessed bit was set in the GDT entry of the data segment.
    assert_ne!(m.ram[GDT as usize + 0x10 + 5] & 1, 0);
}

#[test]
fn unreal_mode_keeps_4g_limit_after_return_to_real_mode() {
    let mut m = Machine::new(2 << 20);
    m.write_gdt();
    m.ram[0x900..0x902].copy_from_slice(&0x3Fu16.to_le_bytes());
    m.ram[0x902..0x906].copy_from_slice(&(GDT as u32).to_le_bytes());
    let rm = asm(16, 0x7C00, |a| {
        a.cli()?;
        a.lgdt(ptr(0x900))?;
        a.mov(eax, cr0)?;
        a.or(al, 1u32)?;
        a.mov(cr0, eax)?;
        a.mov(bx, KDATA as u32)?;
        a.mov(ds, bx)?;
        a.and(al, 0xFEu32)?;
        a.mov(cr0, eax)?;
        a.xor(ax, ax)?;
        a.mov(ds, ax)?;
        a.mov(esi, 0x10_0000u32)?;
        a.mov(dword_ptr(esi), 0x55AA_55AAu32)?;
        a.hlt()
    });
    let mut mm = Machine::real_mode_at(2 << 20, &rm, 0x7C00);
    mm.write_gdt();
    mm.ram[0x900..0x906].copy_from_slice(&m.ram[0x900..0x906]);
    assert_eq!(mm.run(100), RunExit::Halted);
    assert_eq!(mm.r32(0x10_0000), 0x55AA_55AA);
    assert_eq!(mm.cpu.state.cr0 & 1, 0);
}

#[test]
fn gp_fault_with_error_code_for_bad_selector() {
    let code = asm(32, 0x8000, |a| {
        a.mov(ax, 0x78u32)?; // beyond the GDT limit
        a.mov(ds, ax)?;
        a.hlt()
    });
    let handler = asm(32, 0x9000, |a| {
        a.pop(ecx)?; // error code
        a.hlt()
    });
    let mut m = Machine::protected32_at(1 << 20, &code, 0x8000);
    m.load(0x9000, &handler);
    m.set_gate32(13, 0x9000, 0);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rcx), 0x78);
    // Return address = faulting MOV DS.
    assert_eq!(m.r32(0x9_0000 - 12), 0x8004);
}

/// Identity-map the first 4 MiB with 4 KiB pages at PD 0x10000 / PT 0x11000.
/// Guest code: CR3 = 0x10000 (the tables `identity_paging` builds), then CR0.PG (and WP).
fn paging_on(a: &mut CodeAssembler, wp: bool) -> Result<(), IcedError> {
    a.mov(eax, 0x10000u32)?;
    a.mov(cr3, eax)?;
    a.mov(eax, cr0)?;
    a.or(eax, if wp { 0x8001_0000u32 } else { 0x8000_0000 })?;
    a.mov(cr0, eax)
}

fn identity_paging(m: &mut Machine, user: bool) {
    let u = if user { 4 } else { 0 };
    m.w32(0x10000, 0x11000 | 3 | u);
    for p in 0..1024u32 {
        m.w32(0x11000 + p as u64 * 4, (p << 12) | 3 | u);
    }
}

#[test]
fn page_fault_error_code_cr2_and_accessed_dirty_bits() {
    let code = asm(32, 0x8000, |a| {
        paging_on(a, false)?;
        a.mov(dword_ptr(0x20_0000), 0x1111u32)?; // write: sets A and D
        a.mov(ebx, dword_ptr(0x30_0000))?; // read: sets A only
        a.mov(dword_ptr(0x1FF_0004), 7u32)?; // not mapped: #PF
        a.hlt()
    });
    let handler = asm(32, 0x9000, |a| {
        a.pop(ecx)?;
        a.mov(edx, cr2)?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(32 << 20, &code, 0x8000);
    m.load(0x9000, &handler);
    m.set_gate32(14, 0x9000, 0);
    identity_paging(&mut m, false);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(
        m.cpu.state.reg(Reg::Rcx),
        0b010,
        "not-present write, supervisor"
    );
    assert_eq!(m.cpu.state.reg(Reg::Rdx), 0x1FF_0004);
    assert_eq!(m.cpu.state.cr2, 0x1FF_0004);
    let pte_w = m.r32(0x11000 + 0x200 * 4);
    let pte_r = m.r32(0x11000 + 0x300 * 4);
    assert_eq!(pte_w & 0x60, 0x60, "write sets accessed+dirty");
    assert_eq!(pte_r & 0x60, 0x20, "read sets accessed only");
    assert_ne!(m.r32(0x10000) & 0x20, 0, "PDE accessed");
}

#[test]
fn write_protect_and_user_faults() {
    // Ring-3 code writing to a supervisor page.
    let user = asm(32, 0x40_1000, |a| {
        a.mov(ax, UDATA as u32)?;
        a.mov(ds, ax)?;
        a.mov(dword_ptr(0x8000), 1u32)?;
        a.hlt()
    });
    let kernel = asm(32, 0x8000, |a| {
        paging_on(a, true)?;
        a.push(UDATA as u32)?;
        a.push(0x40_2000u32)?;
        a.push(0x202u32)?;
        a.push(UCODE as u32)?;
        a.push(0x40_1000u32)?;
        a.iretd()
    });
    let handler = asm(32, 0x9000, |a| {
        a.pop(ecx)?;
        a.mov(edx, cr2)?;
        a.mov(esi, esp)?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(32 << 20, &kernel, 0x8000);
    m.load(0x40_1000, &user);
    m.load(0x9000, &handler);
    m.set_gate32(14, 0x9000, 0);
    identity_paging(&mut m, false);
    // User-accessible mapping for 4..8 MiB.
    m.w32(0x10004, 0x12000 | 7);
    for p in 0..1024u32 {
        m.w32(0x12000 + p as u64 * 4, (0x40_0000 + (p << 12)) | 7);
    }
    // Ring-0 stack in the TSS.
    m.w32(TSS + 4, 0x8_0000);
    m.w32(TSS + 8, KDATA as u32);
    let r = m.run(100);
    assert_eq!(r, RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rcx), 0b111, "present, write, user");
    assert_eq!(m.cpu.state.reg(Reg::Rdx), 0x8000);
    // Inner stack: err, EIP, CS, EFLAGS, ESP, SS pushed on the TSS stack.
    assert_eq!(m.cpu.state.reg(Reg::Rsi), 0x8_0000 - 20);
    assert_eq!(m.r32(0x8_0000 - 4), UDATA as u32);
    assert_eq!(m.r32(0x8_0000 - 8), 0x40_2000);
    assert_eq!(m.r32(0x8_0000 - 16), UCODE as u32);
    assert_eq!(m.r32(0x8_0000 - 20), 0x40_1007);
    assert_eq!(m.cpu.state.cpl, 0);
}

/// 2-level paging: the PTE's R/W bit counts even when the PDE allows writes (Linux
/// i386 checks this with its "honours the WP bit" test and panics otherwise).
#[test]
fn read_only_pte_under_writable_pde_faults_with_wp() {
    let kernel = asm(32, 0x8000, |a| {
        paging_on(a, true)?;
        a.mov(ebx, dword_ptr(0x5000))?; // a read fills the TLB entry first
        a.mov(dword_ptr(0x5000), 1u32)?;
        a.mov(edi, 0x600Du32)?;
        a.hlt()
    });
    let handler = asm(32, 0x9000, |a| {
        a.pop(ecx)?;
        a.mov(edx, cr2)?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(32 << 20, &kernel, 0x8000);
    m.load(0x9000, &handler);
    m.set_gate32(14, 0x9000, 0);
    identity_paging(&mut m, false);
    m.w32(0x11000 + 5 * 4, 0x5000 | 1); // present, read-only, supervisor
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(
        m.cpu.state.reg(Reg::Rcx),
        0b011,
        "present, write, supervisor"
    );
    assert_eq!(m.cpu.state.reg(Reg::Rdx), 0x5000);
    assert_ne!(
        m.cpu.state.reg(Reg::Rdi),
        0x600D,
        "the write must not complete"
    );
    assert_eq!(m.r32(0x5000), 0);
}

/// A walk that faults sets no accessed bit, not even in the PDE it went through (the 386
/// sets A in both levels only for an access that succeeds; test386 POST 11 checks it).
#[test]
fn faulting_walks_leave_accessed_bits_clear() {
    // (PTE for 4 MiB + 0x1000, write?, expected error code)
    for (pte, write, code) in [(0u32, false, 0b000), (1, true, 0b011)] {
        let kernel = asm(32, 0x8000, |a| {
            paging_on(a, true)?;
            if write {
                a.mov(dword_ptr(0x40_1000), 1u32)?;
            } else {
                a.mov(ebx, dword_ptr(0x40_1000))?;
            }
            a.hlt()
        });
        let handler = asm(32, 0x9000, |a| {
            a.pop(ecx)?;
            a.hlt()
        });
        let mut m = Machine::protected32_at(32 << 20, &kernel, 0x8000);
        m.load(0x9000, &handler);
        m.set_gate32(14, 0x9000, 0);
        identity_paging(&mut m, false);
        // 4..8 MiB: a present PDE (A clear) over a page table whose one entry is
        // not present or read-only.
        m.w32(0x10004, 0x12000 | 3);
        m.w32(0x12000 + 4, pte.wrapping_mul(0x40_1000) | pte);
        assert_eq!(m.run(100), RunExit::Halted);
        assert_eq!(m.cpu.state.reg(Reg::Rcx), code, "#PF error code");
        assert_eq!(m.r32(0x10004) & 0x20, 0, "PDE accessed bit after a fault");
        assert_eq!(m.r32(0x12004) & 0x60, 0, "PTE accessed/dirty after a fault");
        assert_ne!(
            m.r32(0x10000) & 0x20,
            0,
            "the code's PDE was used and is accessed"
        );
    }
}

/// INVLPG of any address inside a 4 MiB page forgets every 4 KiB piece of it the TLB holds.
#[test]
fn invlpg_drops_all_pieces_of_a_large_page() {
    let kernel = asm(32, 0x8000, |a| {
        a.mov(eax, cr4)?;
        a.or(eax, 0x10u32)?; // PSE
        a.mov(cr4, eax)?;
        paging_on(a, false)?;
        // Linear 4 MiB..8 MiB -> physical 8 MiB (a 4 MiB page); read two pieces of it.
        a.mov(ebx, dword_ptr(0x40_0000))?;
        a.mov(ecx, dword_ptr(0x40_5000))?;
        // Remap it to physical 12 MiB, invalidate through the first piece only.
        a.mov(dword_ptr(0x10004), 0xC0_0000u32 | 0x83)?;
        a.invlpg(dword_ptr(0x40_0000))?;
        a.mov(edx, dword_ptr(0x40_5000))?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(16 << 20, &kernel, 0x8000);
    identity_paging(&mut m, false);
    m.w32(0x10004, 0x80_0000 | 0x83); // present, writable, 4 MiB
    m.w32(0x80_5000, 0x1111);
    m.w32(0xC0_5000, 0x2222);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rcx), 0x1111);
    assert_eq!(
        m.cpu.state.reg(Reg::Rdx),
        0x2222,
        "a stale piece of the old large page was used"
    );
}

#[test]
fn pae_with_nx_faults_on_fetch() {
    let code = asm(32, 0x8000, |a| {
        a.mov(eax, cr4)?;
        a.or(eax, 0x20u32)?; // PAE
        a.mov(cr4, eax)?;
        a.mov(ecx, 0xC000_0080u32)?;
        a.rdmsr()?;
        a.or(eax, 0x800u32)?; // NXE
        a.wrmsr()?;
        a.mov(eax, 0x20000u32)?;
        a.mov(cr3, eax)?;
        a.mov(eax, cr0)?;
        a.or(eax, 0x8000_0000u32)?;
        a.mov(cr0, eax)?;
        a.mov(eax, 0x20_0000u32)?;
        a.jmp(eax)
    });
    let handler = asm(32, 0x9000, |a| {
        a.pop(ecx)?;
        a.mov(edx, cr2)?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(8 << 20, &code, 0x8000);
    m.load(0x9000, &handler);
    m.set_gate32(14, 0x9000, 0);
    // PDPT at 0x20000 -> PD at 0x21000; PD[0] = 2 MiB page at 0 (executable),
    // PD[1] = 2 MiB page at 2 MiB with NX.
    m.w64(0x20000, 0x21000 | 1);
    m.w64(0x21000, 0x83);
    m.w64(0x21008, 0x20_0000 | 0x83 | (1u64 << 63));
    m.ram[0x20_0000] = 0xF4;
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(
        m.cpu.state.reg(Reg::Rcx),
        0x11,
        "present + instruction fetch"
    );
    assert_eq!(m.cpu.state.reg(Reg::Rdx), 0x20_0000);
}

#[test]
fn triple_fault_shuts_down() {
    let code = asm(32, 0x8000, |a| {
        a.xor(eax, eax)?;
        a.div(eax)
    });
    let mut m = Machine::protected32_at(1 << 20, &code, 0x8000);
    m.cpu.state.idtr.limit = 0; // every delivery fails
    match m.run(100) {
        RunExit::Shutdown { last_exception, .. } => assert_eq!(last_exception, Some(13)),
        other => panic!("expected shutdown, got {other:?}"),
    }
}

#[test]
fn int_from_ring3_respects_gate_dpl() {
    let user = asm(32, 0x40_1000, |a| {
        a.int(0x80)?; // DPL 3 gate: allowed
        a.int(0x81)?; // DPL 0 gate: #GP(0x81*8+2)
        a.hlt()
    });
    let kernel = asm(32, 0x8000, |a| {
        a.push(UDATA as u32)?;
        a.push(0x40_2000u32)?;
        a.push(0x202u32)?;
        a.push(UCODE as u32)?;
        a.push(0x40_1000u32)?;
        a.iretd()
    });
    let h80 = asm(32, 0x9000, |a| {
        a.inc(edi)?;
        a.iretd()
    });
    let hgp = asm(32, 0x9100, |a| {
        a.pop(ecx)?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(8 << 20, &kernel, 0x8000);
    m.load(0x40_1000, &user);
    m.load(0x9000, &h80);
    m.load(0x9100, &hgp);
    m.set_trap_gate32(0x80, 0x9000, 3);
    m.set_gate32(0x81, 0x9000, 0);
    m.set_gate32(13, 0x9100, 0);
    m.w32(TSS + 4, 0x8_0000);
    m.w32(TSS + 8, KDATA as u32);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rdi), 1);
    assert_eq!(m.cpu.state.reg(Reg::Rcx), 0x81 * 8 + 2);
}

#[test]
fn double_fault_through_task_gate() {
    // #GP with a not-present #GP gate -> #NP escalates? No: #GP then #NP = contributory
    // pair -> #DF, which is delivered through a task gate to a fresh TSS.
    let code = asm(32, 0x8000, |a| {
        a.mov(ax, 0x78u32)?;
        a.mov(ds, ax)?; // #GP
        a.hlt()
    });
    let df_task = asm(32, 0xA000, |a| {
        a.mov(ebp, 0xDFu32)?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(1 << 20, &code, 0x8000);
    m.load(0xA000, &df_task);
    // Vector 13: not present interrupt gate.
    m.w64(IDT + 13 * 8, 0);
    m.w64(IDT + 13 * 8, (KCODE as u64) << 16 | (0x0E00u64 << 32));
    // Second TSS (selector 0x38) at 0x3100, task gate for #DF.
    m.w64(GDT + 0x38, descriptor(0x3100, 0x67, 0x89, 0));
    m.cpu.state.gdtr.limit = 0x3F;
    m.w64(IDT + 8 * 8, (0x38u64 << 16) | (0x8500u64 << 32));
    // Incoming task state.
    m.w32(0x3100 + 0x20, 0xA000); // EIP
    m.w32(0x3100 + 0x24, 0x2); // EFLAGS
    m.w32(0x3100 + 0x38, 0x7_0000); // ESP
    m.w32(0x3100 + 0x48, KDATA as u32);
    m.w32(0x3100 + 0x4C, KCODE as u32);
    m.w32(0x3100 + 0x50, KDATA as u32);
    m.w32(0x3100 + 0x54, KDATA as u32);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rbp), 0xDF);
    assert_eq!(m.cpu.state.tr.selector, 0x38);
    // Error code 0 pushed on the new task's stack, back link = old TSS, NT set.
    assert_eq!(m.r32(0x7_0000 - 4), 0);
    assert_eq!(m.r32(0x3100) & 0xFFFF, TSS_SEL as u32);
    assert_ne!(m.cpu.state.rflags & (1 << 14), 0);
    // The outgoing task's EIP was saved (the faulting MOV DS).
    assert_eq!(m.r32(TSS + 0x20), 0x8004);
}

#[test]
fn exception_storm_on_code_fetch_still_respects_the_budget() {
    // The #GP handler lies beyond the CS limit: every delivery faults again on fetch.
    let code = asm(32, 0x8000, |a| {
        a.mov(ax, 0x78u32)?;
        a.mov(ds, ax)
    });
    let mut m = Machine::protected32_at(1 << 20, &code, 0x8000);
    m.set_gate32(13, 0x9000, 0);
    m.w64(GDT + 0x08, descriptor(0, 0x8FFF, 0x9A, 0x4)); // byte-granular limit below 0x9000
    m.cpu.state.seg[Seg::Cs as usize].limit = 0x8FFF;
    assert_eq!(m.run(1000), RunExit::BudgetExhausted);
    assert_eq!(m.cpu.instructions_retired(), 1000);
    assert_eq!(m.cpu.state.rip, 0x9000);
}

#[test]
fn call_to_tss_and_iret_back_through_the_nested_task_link() {
    let task_a = asm(32, 0x8000, |a| {
        a.mov(esi, 0x11u32)?;
        a.call_far(0x38, 0)?; // TSS descriptor: task switch
        a.add(esi, 1u32)?; // resumes here after task B's IRET
        a.hlt()
    });
    let task_b = asm(32, 0xA000, |a| {
        a.mov(dword_ptr(0x700), 0xB0B0u32)?;
        a.pushfd()?;
        a.pop(ecx)?;
        a.mov(dword_ptr(0x704), ecx)?; // NT is set inside the nested task
        a.iretd()
    });
    let mut m = Machine::protected32_at(1 << 20, &task_a, 0x8000);
    m.load(0xA000, &task_b);
    // Mark task A's TSS busy, as LTR would have.
    m.w64(GDT + 0x28, descriptor(TSS as u32, 0x67, 0x8B, 0));
    m.w64(GDT + 0x38, descriptor(0x3100, 0x67, 0x89, 0));
    m.w32(0x3100 + 0x20, 0xA000);
    m.w32(0x3100 + 0x24, 0x2);
    m.w32(0x3100 + 0x38, 0x7_0000);
    for off in [0x48, 0x50, 0x54, 0x58, 0x5C] {
        m.w32(0x3100 + off, KDATA as u32);
    }
    m.w32(0x3100 + 0x4C, KCODE as u32);
    assert_eq!(m.run(100), RunExit::Halted);
    let s = &m.cpu.state;
    assert_eq!(m.r32(0x700), 0xB0B0);
    assert_ne!(m.r32(0x704) & (1 << 14), 0, "NT inside the called task");
    assert_eq!(s.reg(Reg::Rsi), 0x12, "task A resumed after the CALL");
    assert_eq!(s.tr.selector, TSS_SEL);
    assert_eq!(s.rflags & (1 << 14), 0, "NT clear again in task A");
    assert_eq!(
        m.ram[GDT as usize + 0x38 + 5] & 0x0F,
        0x9,
        "task B's busy bit cleared by IRET"
    );
    assert_eq!(m.r32(0x3100) & 0xFFFF, TSS_SEL as u32, "back link");
    assert_ne!(s.cr0 & 8, 0, "CR0.TS set by the task switch");
}

/// A 16-bit (286) TSS: CALL from a 32-bit task loads the word registers with ones in
/// the upper halves and FS/GS null; IRET back saves the 286 task in its word layout
/// (test386 POST 22, which also runs 286 tasks).
#[test]
fn call_to_a_16_bit_tss_and_iret_back() {
    let task_a = asm(32, 0x8000, |a| {
        a.mov(eax, 0xAAAA_0001u32)?;
        a.call_far(0x38, 0)?; // 16-bit TSS descriptor
        a.hlt()
    });
    let task_b = asm(32, 0xA000, |a| {
        a.mov(dword_ptr(0x700), eax)?;
        a.mov(dword_ptr(0x704), esp)?;
        a.mov(dword_ptr(0x708), edi)?;
        a.mov(ax, fs)?;
        a.mov(word_ptr(0x70C), ax)?;
        a.mov(ax, ss)?;
        a.mov(word_ptr(0x70E), ax)?;
        a.mov(ax, 0x5555u32)?;
        a.iretd()
    });
    let mut m = Machine::protected32_at(1 << 20, &task_a, 0x8000);
    m.load(0xA000, &task_b);
    m.w64(GDT + 0x28, descriptor(TSS as u32, 0x67, 0x8B, 0));
    m.w64(GDT + 0x38, descriptor(0x3100, 0x2B, 0x81, 0));
    let t16: [(u64, u16); 12] = [
        (0x0E, 0xA000), // IP
        (0x10, 0x0002), // FLAGS
        (0x12, 0x1234), // AX
        (0x1A, 0x7000), // SP
        (0x20, 0x7788), // DI
        (0x22, KDATA),  // ES
        (0x24, KCODE),  // CS
        (0x26, KDATA),  // SS
        (0x28, KDATA),  // DS
        (0x2A, 0),      // LDT
        (0x14, 0x5678), // CX
        (0x1C, 0x3344), // BP
    ];
    for (off, v) in t16 {
        m.ram[0x3100 + off as usize..0x3102 + off as usize].copy_from_slice(&v.to_le_bytes());
    }
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.r32(0x700), 0xFFFF_1234, "EAX from a 286 TSS");
    assert_eq!(m.r32(0x704), 0xFFFF_7000, "ESP from a 286 TSS");
    assert_eq!(m.r32(0x708), 0xFFFF_7788, "EDI from a 286 TSS");
    assert_eq!(m.r32(0x70C) & 0xFFFF, 0, "FS is null in a 286 task");
    assert_eq!(m.r32(0x70C) >> 16, KDATA as u32, "SS");
    let w =
        |m: &Machine, off: usize| u16::from_le_bytes([m.ram[0x3100 + off], m.ram[0x3101 + off]]);
    assert_eq!(w(&m, 0), TSS_SEL, "back link");
    assert_eq!(w(&m, 0x12), 0x5555, "AX saved as a word at 0x12");
    assert_eq!(
        w(&m, 0x0E) as u64,
        0xA000 + task_b.len() as u64,
        "IP after IRET"
    );
    assert_eq!(
        w(&m, 0x10) & (1 << 14),
        0,
        "IRET clears NT in the saved FLAGS"
    );
    assert_eq!(w(&m, 0x24), KCODE, "CS saved at 0x24");
    let s = &m.cpu.state;
    assert_eq!(s.reg(Reg::Rax), 0xAAAA_0001, "task A's EAX back");
    assert_eq!(s.tr.selector, TSS_SEL);
    assert_eq!(
        m.ram[GDT as usize + 0x38 + 5] & 0x0F,
        0x1,
        "286 TSS no longer busy"
    );
}

/// JMP to another task leaves NT as it was in the outgoing task's saved EFLAGS; only
/// IRET clears it (SDM "Task Switching"; test386 POST 22).
#[test]
fn jmp_task_switch_keeps_nt_in_the_saved_eflags() {
    let task_a = asm(32, 0x8000, |a| {
        a.pushfd()?;
        a.or(dword_ptr(esp), 1 << 14)?;
        a.popfd()?;
        a.jmp_far(0x38, 0)
    });
    let task_c = asm(32, 0xA000, |a| a.hlt());
    let mut m = Machine::protected32_at(1 << 20, &task_a, 0x8000);
    m.load(0xA000, &task_c);
    m.w64(GDT + 0x28, descriptor(TSS as u32, 0x67, 0x8B, 0));
    m.w64(GDT + 0x38, descriptor(0x3200, 0x67, 0x89, 0));
    m.w32(0x3200 + 0x20, 0xA000);
    m.w32(0x3200 + 0x24, 0x2);
    m.w32(0x3200 + 0x38, 0x7_0000);
    for off in [0x48, 0x50, 0x54, 0x58, 0x5C] {
        m.w32(0x3200 + off, KDATA as u32);
    }
    m.w32(0x3200 + 0x4C, KCODE as u32);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.tr.selector, 0x38);
    assert_ne!(m.r32(TSS + 0x24) & (1 << 14), 0, "NT kept in task A's TSS");
    assert_eq!(
        m.ram[GDT as usize + 0x28 + 5] & 0x0F,
        0x9,
        "task A not busy"
    );
}

#[test]
fn cr3_edited_between_runs_takes_effect_without_a_flush() {
    let code = asm(32, 0x8000, |a| {
        a.mov(eax, dword_ptr(0x40_0000))?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(8 << 20, &code, 0x8000);
    identity_paging(&mut m, false);
    // Two page directories: both identity-map 0..4M; 4M maps to 5M or 6M.
    for (pd, pt, target) in [
        (0x10000u64, 0x12000u64, 0x50_0000u32),
        (0x13000, 0x14000, 0x60_0000),
    ] {
        if pd != 0x10000 {
            m.w32(pd, 0x11000 | 3);
        }
        m.w32(pd + 4, pt as u32 | 3);
        m.w32(pt, target | 3);
    }
    m.w32(0x50_0000, 0x5555);
    m.w32(0x60_0000, 0x6666);
    m.cpu.state.cr3 = 0x10000;
    m.cpu.state.cr0 |= 0x8000_0000;
    assert_eq!(m.run(10), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rax), 0x5555);
    // Firmware-style edit: new CR3, restart, no flush_all_caches().
    m.cpu.state.cr3 = 0x13000;
    m.cpu.state.rip = 0x8000;
    m.cpu.state.halted = false;
    assert_eq!(m.run(10), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rax), 0x6666);
}

#[test]
fn remapping_a_code_page_with_invlpg_runs_the_new_code() {
    // Linear 0x40_0000 maps to 0x50_0000 first, then (after INVLPG) to 0x60_0000.
    let code = asm(32, 0x8000, |a| {
        paging_on(a, false)?;
        a.mov(ebx, 0x40_0000u32)?;
        a.call(ebx)?; // returns ECX = 1
        a.mov(edx, ecx)?;
        a.mov(dword_ptr(0x12000), 0x60_0000u32 | 3)?; // PTE for 0x40_0000
        a.invlpg(byte_ptr(0x40_0000))?;
        a.call(ebx)?; // returns ECX = 2
        a.hlt()
    });
    let mut m = Machine::protected32_at(8 << 20, &code, 0x8000);
    identity_paging(&mut m, false);
    m.w32(0x10004, 0x12000 | 3);
    m.w32(0x12000, 0x50_0000 | 3);
    m.load(0x50_0000, &[0xB9, 1, 0, 0, 0, 0xC3]); // mov ecx, 1; ret
    m.load(0x60_0000, &[0xB9, 2, 0, 0, 0, 0xC3]); // mov ecx, 2; ret
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rdx), 1);
    assert_eq!(m.cpu.state.reg(Reg::Rcx), 2);
}

/// Read-modify-write ALU ops on memory under paging: a TLB miss (slow path), the same
/// op again (in place), a page whose TLB entry came from a read (the write must set the
/// dirty bit), a page-crossing operand, flags, and a read-only page: #PF with a write
/// error code after the read, memory and flags unchanged.
#[test]
fn read_modify_write_on_memory_under_paging() {
    let code = asm(32, 0x8000, |a| {
        paging_on(a, true)?;
        a.mov(ecx, 2u32)?;
        let mut again = a.create_label();
        a.set_label(&mut again)?;
        a.add(dword_ptr(0x20_0000), 0x10u32)?; // miss, then in place
        a.dec(ecx)?;
        a.jnz(again)?;
        a.mov(eax, dword_ptr(0x30_0000))?; // read fills the TLB entry
        a.sub(dword_ptr(0x30_0000), 1u32)?; // 0 - 1: CF, SF set
        a.setc(bl)?;
        a.sets(bh)?;
        a.mov(edx, 0x8000_0001u32)?;
        a.xor(dword_ptr(0x20_0FFE), edx)?; // crosses into the next page
        a.not(word_ptr(0x20_0008))?;
        a.neg(byte_ptr(0x20_000C))?;
        a.stc()?;
        a.adc(dword_ptr(0x20_0010), 0u32)?; // + carry
        a.inc(dword_ptr(0x20_0014))?; // keeps the CF (1) of the ADC
        a.setc(dh)?;
        a.stc()?;
        a.mov(ebp, dword_ptr(0x5000))?; // read-only page, readable
        a.add(dword_ptr(0x5000), ebp)?; // #PF (write) after the read
        a.mov(edi, 0x600Du32)?;
        a.hlt()
    });
    let handler = asm(32, 0x9000, |a| {
        a.pop(ecx)?;
        a.mov(esi, cr2)?;
        a.setc(al)?; // CF still from the STC before the faulting ADD
        a.hlt()
    });
    let mut m = Machine::protected32_at(32 << 20, &code, 0x8000);
    m.load(0x9000, &handler);
    m.set_gate32(14, 0x9000, 0);
    identity_paging(&mut m, false);
    m.w32(0x11000 + 5 * 4, 0x5000 | 1); // present, read-only, supervisor
    m.w32(0x5000, 0x1234);
    m.w32(0x20_0000, 5);
    m.w32(0x20_0FFC, 0xAABB_CCDD);
    m.w32(0x20_1000, 0x1122_3344);
    m.w32(0x20_0008, 0x00FF_0F0F);
    m.w32(0x20_000C, 1);
    m.w32(0x20_0010, 0xFFFF_FFFF);
    m.w32(0x20_0014, 7);
    assert_eq!(m.run(200), RunExit::Halted);
    assert_eq!(m.r32(0x20_0000), 5 + 0x20);
    assert_eq!(m.r32(0x30_0000), 0xFFFF_FFFF);
    assert_eq!(m.cpu.state.reg(Reg::Rbx) & 0xFFFF, 0x0101, "SUB: CF and SF");
    assert_eq!(
        m.r32(0x11000 + 0x300 * 4) & 0x60,
        0x60,
        "the write after a read sets dirty"
    );
    // XOR of 0x8000_0001 at 0x20_0FFE: bytes FFE..1001.
    assert_eq!(m.r32(0x20_0FFC), 0xAABB_CCDD ^ 0x0001_0000);
    assert_eq!(m.r32(0x20_1000), 0x1122_3344 ^ 0x0000_8000);
    assert_eq!(m.r32(0x20_0008), 0x00FF_F0F0, "NOT word");
    assert_eq!(m.r32(0x20_000C), 0xFF, "NEG byte");
    assert_eq!(m.r32(0x20_0010), 0, "ADC with carry wraps");
    assert_eq!(m.r32(0x20_0014), 8);
    assert_eq!(
        (m.cpu.state.reg(Reg::Rdx) >> 8) & 0xFF,
        1,
        "INC keeps the CF that ADC produced"
    );
    assert_eq!(
        m.cpu.state.reg(Reg::Rcx),
        0b011,
        "present, write, supervisor"
    );
    assert_eq!(m.cpu.state.reg(Reg::Rsi), 0x5000);
    assert_eq!(m.r32(0x5000), 0x1234, "memory unchanged");
    assert_eq!(m.cpu.state.reg(Reg::Rax) & 0xFF, 1, "flags unchanged");
    assert_ne!(m.cpu.state.reg(Reg::Rdi), 0x600D);
}

/// A read-modify-write on the instruction bytes of the same block (self-modifying code):
/// the patched instruction runs with its new immediate.
#[test]
fn read_modify_write_patches_code_in_the_same_block() {
    let code = asm(32, 0x8000, |a| {
        a.add(byte_ptr(0x8000 + 9), 0x10u32)?; // 7 bytes: 80 05 <addr32> 10
        a.nop()?;
        a.mov(al, 0x01u32)?; // at 0x8008: b0 01, the imm8 at 0x8009
        a.hlt()
    });
    let mut m = Machine::protected32_at(1 << 20, &code, 0x8000);
    assert_eq!(&m.ram[0x8008..0x800A], &[0xB0, 0x01]);
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rax) & 0xFF, 0x11);
}
