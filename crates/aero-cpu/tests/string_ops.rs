//! String instructions in protected mode: bulk REP paths against element semantics.

mod common;
use aero_cpu::{Reg, RunExit};
use common::*;
use iced_x86::code_asm::*;

#[test]
fn rep_stosd_and_movsd_bulk_paths_match_element_semantics() {
    // 32-bit protected mode, flat: fill 3 pages + a bit, copy across page boundaries,
    // and an overlapping forward copy that must replicate the pattern.
    let code = asm(32, 0x8000, |a| {
        a.cld()?;
        a.mov(edi, 0x10_0FF0u32)?;
        a.mov(eax, 0xA1B2_C3D4u32)?;
        a.mov(ecx, 3100u32)?;
        a.rep().stosd()?;
        a.mov(esi, 0x10_0FF0u32)?;
        a.mov(edi, 0x20_0001u32)?;
        a.mov(ecx, 12345u32)?;
        a.rep().movsb()?;
        a.mov(dword_ptr(0x30_0000), 0x0403_0201u32)?;
        a.mov(esi, 0x30_0000u32)?;
        a.mov(edi, 0x30_0004u32)?;
        a.mov(ecx, 100u32)?;
        a.rep().movsd()?;
        a.hlt()
    });
    let mut m = Machine::protected32_at(4 << 20, &code, 0x8000);
    assert_eq!(m.run(1000), RunExit::Halted);
    let s = &m.cpu.state;
    assert_eq!(s.reg(Reg::Rcx), 0);
    for k in 0..3100u64 {
        assert_eq!(m.r32(0x10_0FF0 + 4 * k), 0xA1B2_C3D4);
    }
    assert_eq!(m.r32(0x10_0FF0 + 4 * 3100), 0);
    assert_eq!(
        &m.ram[0x20_0001..0x20_0001 + 12345],
        &m.ram[0x10_0FF0..0x10_0FF0 + 12345].to_vec()[..]
    );
    assert_eq!(m.ram[0x20_0001 + 12345], 0);
    for k in 0..101u64 {
        assert_eq!(m.r32(0x30_0000 + 4 * k), 0x0403_0201, "overlap replicates");
    }
    assert_eq!(s.reg(Reg::Rdi), 0x30_0004 + 400);
}
