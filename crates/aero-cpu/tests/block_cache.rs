//! The block cache: it holds a large working set of code, and blocks it reuses across
//! TLB flushes still follow the current page mapping.

mod common;
use aero_cpu::{Reg, RunExit};
use common::*;
use iced_x86::code_asm::*;

/// 40 000 one-instruction blocks run twice: the second pass decodes nothing (a cache
/// with fewer places than blocks, as the old direct-mapped one with 16 384 slots, decodes
/// them all again), not even the 20 jumps that cross a page boundary.
#[test]
fn a_large_working_set_stays_decoded() {
    const BLOCKS: usize = 40_000;
    const BASE: u64 = 0x10_0000;
    let mut code = vec![0xB9, 2, 0, 0, 0]; // mov ecx, 2
    let top = BASE + code.len() as u64;
    for _ in 0..BLOCKS {
        code.extend_from_slice(&[0xEB, 0x00]); // jmp $+2: a block each
    }
    code.push(0x49); // dec ecx
    let after_jnz = BASE + code.len() as u64 + 6;
    code.extend_from_slice(&[0x0F, 0x85]); // jnz top (rel32)
    code.extend_from_slice(&((top.wrapping_sub(after_jnz)) as u32).to_le_bytes());
    code.push(0xF4); // hlt
    let mut m = Machine::protected32_at(4 << 20, &code, BASE);
    assert_eq!(m.run(200_000), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rcx), 0);
    let decoded = m.cpu.blocks_decoded();
    assert!(
        decoded >= BLOCKS as u64 && decoded < BLOCKS as u64 + 8,
        "{decoded} blocks decoded for {BLOCKS} blocks run twice"
    );
}

/// A CR3 write inside a block, then a jump within the same linear page: the jump target
/// must come from the page the new CR3 maps there, although a link from the same block
/// to the old page's code exists (made on the iterations that reload the same CR3).
#[test]
fn a_link_within_a_page_follows_a_cr3_switch() {
    const PD_A: u32 = 0x10000;
    const PD_B: u32 = 0x13000;
    let code = asm(32, 0x8000, |a| {
        a.mov(eax, PD_A)?;
        a.mov(cr3, eax)?;
        a.mov(eax, cr0)?;
        a.or(eax, 0x8000_0000u32)?;
        a.mov(cr0, eax)?;
        a.xor(esi, esi)?;
        a.mov(edi, 6u32)?;
        let mut top = a.create_label();
        let mut same = a.create_label();
        a.set_label(&mut top)?;
        a.mov(ebx, PD_A)?;
        a.mov(cr3, ebx)?;
        a.mov(eax, PD_A)?; // even iterations: reload A
        a.test(edi, 1u32)?;
        a.jz(same)?;
        a.mov(eax, PD_B)?; // odd ones: switch to B
        a.set_label(&mut same)?;
        a.mov(edx, 0x40_0000u32)?;
        a.call(edx)?; // ECX = 1 (A's page) or 2 (B's page)
        a.add(esi, ecx)?;
        a.dec(edi)?;
        a.jnz(top)?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(8 << 20, &code, 0x8000);
    // Both directories identity-map 0..4M; linear 4M maps to 5M (A) or 6M (B).
    m.w32(PD_A as u64, 0x11000 | 3);
    m.w32(PD_B as u64, 0x11000 | 3);
    for p in 0..1024u32 {
        m.w32(0x11000 + p as u64 * 4, (p << 12) | 3);
    }
    m.w32(PD_A as u64 + 4, 0x12000 | 3);
    m.w32(0x12000, 0x50_0000 | 3);
    m.w32(PD_B as u64 + 4, 0x14000 | 3);
    m.w32(0x14000, 0x60_0000 | 3);
    // Both pages: mov cr3, eax; jmp to +0x10. There: mov ecx, 1 (A) or 2 (B); ret.
    for (page, value) in [(0x50_0000u64, 1u8), (0x60_0000, 2)] {
        m.load(page, &[0x0F, 0x22, 0xD8, 0xEB, 0x0B]);
        m.load(page + 0x10, &[0xB9, value, 0, 0, 0, 0xC3]);
    }
    assert_eq!(m.run(1000), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rsi), 2 + 1 + 2 + 1 + 2 + 1);
}

/// A block whose first instruction crosses into the next page is cached, and a write to
/// its bytes on the second page is seen at the next run.
#[test]
fn a_block_crossing_a_page_is_cached_and_sees_writes_to_its_second_page() {
    let code = asm(32, 0x8000, |a| {
        a.mov(edx, 0x10FFEu32)?;
        a.call(edx)?;
        a.mov(ebx, eax)?;
        a.call(edx)?; // the cached block
        a.mov(ecx, eax)?;
        a.mov(byte_ptr(0x11001), 0x99u32)?; // third immediate byte, second page
        a.call(edx)?;
        a.mov(esi, eax)?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(1 << 20, &code, 0x8000);
    // 10FFE: mov eax, 0x44332211 (two bytes on the first page); ret.
    m.load(0x10FFE, &[0xB8, 0x11, 0x22, 0x33, 0x44, 0xC3]);
    let before = m.cpu.blocks_decoded();
    assert_eq!(m.run(100), RunExit::Halted);
    assert_eq!(m.cpu.state.reg(Reg::Rbx), 0x4433_2211);
    assert_eq!(m.cpu.state.reg(Reg::Rcx), 0x4433_2211);
    assert_eq!(m.cpu.state.reg(Reg::Rsi), 0x4499_2211);
    // The caller's 5 blocks (the store to code ends one) and the crossing block twice
    // (decoded, then again after the write): decoded on every call it would be 5 + 3.
    assert_eq!(m.cpu.blocks_decoded() - before, 5 + 2);
}
