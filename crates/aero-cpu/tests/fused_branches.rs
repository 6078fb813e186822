//! CMP/TEST + Jcc pairs, which the decoder fuses into one handler: every condition, size
//! and source kind against flags computed here from the x86 definitions, and the same
//! program run one instruction per `run` call (the pair is then split, each half runs
//! alone) must end in the same state with the same instruction count.

mod common;
use common::*;
use iced_x86::code_asm::*;

const CODE: u64 = 0x1_0000;
const DATA: u64 = 0x8000;
const HANDLER: u64 = 0x2_0000;

#[derive(Clone, Copy, Debug)]
enum Src {
    Reg,
    Imm,
    Mem,
}

/// `cmp|test <size> a, src` then `j<cc> taken`; ECX = 1 when not taken, 2 when taken.
fn program(test: bool, size: u32, src: Src, b: u64, cc: u8) -> Vec<u8> {
    asm(32, CODE, |a| {
        let mut taken = a.create_label();
        let imm = b as u32;
        match (test, size, src) {
            (false, 1, Src::Reg) => a.cmp(al, bl)?,
            (false, 1, Src::Imm) => a.cmp(al, imm)?,
            (false, 1, Src::Mem) => a.cmp(al, byte_ptr(DATA))?,
            (false, 2, Src::Reg) => a.cmp(ax, bx)?,
            (false, 2, Src::Imm) => a.cmp(ax, imm)?,
            (false, 2, Src::Mem) => a.cmp(ax, word_ptr(DATA))?,
            (false, _, Src::Reg) => a.cmp(eax, ebx)?,
            (false, _, Src::Imm) => a.cmp(eax, imm)?,
            (false, _, Src::Mem) => a.cmp(eax, dword_ptr(DATA))?,
            (true, 1, Src::Reg) => a.test(al, bl)?,
            (true, 1, Src::Imm) => a.test(al, imm)?,
            (true, 1, Src::Mem) => a.test(byte_ptr(DATA), al)?,
            (true, 2, Src::Reg) => a.test(ax, bx)?,
            (true, 2, Src::Imm) => a.test(ax, imm)?,
            (true, 2, Src::Mem) => a.test(word_ptr(DATA), ax)?,
            (true, _, Src::Reg) => a.test(eax, ebx)?,
            (true, _, Src::Imm) => a.test(eax, imm)?,
            (true, _, Src::Mem) => a.test(dword_ptr(DATA), eax)?,
        }
        jcc(a, cc, taken)?;
        a.mov(ecx, 1u32)?;
        a.hlt()?;
        a.set_label(&mut taken)?;
        a.mov(ecx, 2u32)?;
        a.hlt()
    })
}

/// `j<cc> taken`.
fn jcc(a: &mut CodeAssembler, cc: u8, taken: CodeLabel) -> Result<(), iced_x86::IcedError> {
    match cc {
        0 => a.jo(taken)?,
        1 => a.jno(taken)?,
        2 => a.jb(taken)?,
        3 => a.jae(taken)?,
        4 => a.je(taken)?,
        5 => a.jne(taken)?,
        6 => a.jbe(taken)?,
        7 => a.ja(taken)?,
        8 => a.js(taken)?,
        9 => a.jns(taken)?,
        10 => a.jp(taken)?,
        11 => a.jnp(taken)?,
        12 => a.jl(taken)?,
        13 => a.jge(taken)?,
        14 => a.jle(taken)?,
        _ => a.jg(taken)?,
    }
    Ok(())
}

/// Status flags (CF PF AF ZF SF OF) after CMP/TEST a, b at `size` bytes.
fn expected_flags(test: bool, size: u32, a: u64, b: u64) -> u64 {
    let bits = size * 8;
    let m = if bits == 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    };
    let (a, b) = (a & m, b & m);
    let res = if test { a & b } else { a.wrapping_sub(b) & m };
    let sign = |v: u64| (v >> (bits - 1)) & 1;
    let cf = !test && a < b;
    let of = !test && sign((a ^ b) & (a ^ res)) == 1;
    let af = !test && (a ^ b ^ res) & 0x10 != 0;
    let pf = (res as u8).count_ones().is_multiple_of(2);
    let mut f = 0;
    for (on, bit) in [
        (cf, 0),
        (pf, 2),
        (af, 4),
        (res == 0, 6),
        (sign(res) == 1, 7),
        (of, 11),
    ] {
        if on {
            f |= 1 << bit;
        }
    }
    f
}

fn condition(flags: u64, cc: u8) -> bool {
    let f = |bit: u32| flags >> bit & 1 == 1;
    let (cf, pf, zf, sf, of) = (f(0), f(2), f(6), f(7), f(11));
    let r = match cc >> 1 {
        0 => of,
        1 => cf,
        2 => zf,
        3 => cf || zf,
        4 => sf,
        5 => pf,
        6 => sf != of,
        _ => zf || sf != of,
    };
    r ^ (cc & 1 == 1)
}

const STATUS: u64 = 0x8D5;

fn machine(code: &[u8], a: u64, b: u64) -> Machine {
    let mut m = Machine::protected32_at(0x10_0000, code, CODE);
    m.cpu.state.gpr[0] = a;
    m.cpu.state.gpr[3] = b;
    m.w64(DATA, b);
    m
}

/// Runs to HLT in one call (fused) and one instruction per call (split); both must agree.
fn run_both(code: &[u8], a: u64, b: u64) -> (Machine, Machine) {
    let mut fused = machine(code, a, b);
    assert_eq!(fused.run(1000), aero_cpu::RunExit::Halted);
    let mut split = machine(code, a, b);
    for _ in 0..100 {
        if split.run(1) == aero_cpu::RunExit::Halted {
            break;
        }
    }
    assert!(split.cpu.state.halted, "split run did not reach HLT");
    (fused, split)
}

#[test]
fn fused_compare_and_branch_matches_the_definition_and_the_split_run() {
    let values: [(u64, u64); 9] = [
        (0, 0),
        (1, 2),
        (2, 1),
        (0x80, 0x7F),
        (0x7F, 0x80),
        (0x8000_0000, 1),
        (0xFFFF_FFFF, 0xFFFF_FFFF),
        (0x1234_5678, 0x0000_8001),
        (0xFFFF_FF00, 0x0000_00FF),
    ];
    let mut checked = 0;
    for test in [false, true] {
        for size in [1u32, 2, 4] {
            for src in [Src::Reg, Src::Imm, Src::Mem] {
                for &(a, b) in &values {
                    // The assembler takes immediates of the operand size.
                    let b = if matches!(src, Src::Imm) && size < 4 {
                        b & ((1 << (size * 8)) - 1)
                    } else {
                        b
                    };
                    let flags = expected_flags(test, size, a, b);
                    for cc in 0..16u8 {
                        let code = program(test, size, src, b, cc);
                        let (fused, split) = run_both(&code, a, b);
                        let what =
                            format!("test={test} size={size} {src:?} a={a:#x} b={b:#x} cc={cc}");
                        let want_ecx = if condition(flags, cc) { 2 } else { 1 };
                        assert_eq!(fused.cpu.state.gpr[1], want_ecx, "branch: {what}");
                        let mut status = fused.cpu.state.rflags & STATUS;
                        if test {
                            status &= !0x10; // AF is undefined after TEST
                        }
                        let mut want = flags;
                        if test {
                            want &= !0x10;
                        }
                        assert_eq!(status, want, "flags: {what}");
                        assert_eq!(fused.cpu.state.rflags, split.cpu.state.rflags, "{what}");
                        assert_eq!(fused.cpu.state.gpr, split.cpu.state.gpr, "{what}");
                        assert_eq!(fused.cpu.state.rip, split.cpu.state.rip, "{what}");
                        assert_eq!(
                            fused.cpu.instructions_retired(),
                            split.cpu.instructions_retired(),
                            "instruction count: {what}"
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked, 2 * 3 * 3 * 9 * 16);
}

/// A taken branch beyond the CS limit raises #GP at the Jcc, after the CMP completed.
#[test]
fn fused_branch_fault_is_reported_at_the_jcc() {
    // cmp eax, ebx; je +0x100 (beyond the limit); mov ecx, 1; hlt
    let code = asm(32, CODE, |a| {
        a.cmp(eax, ebx)?;
        a.db(&[0x0F, 0x84])?;
        a.dd(&[0x100])?;
        a.mov(ecx, 1u32)?;
        a.hlt()
    });
    let jcc_at = CODE + 2;
    let handler = asm(32, HANDLER, |a| {
        a.mov(ecx, 0xDEADu32)?;
        a.hlt()
    });
    for budget in [1000u64, 1] {
        let mut m = machine(&code, 5, 5);
        m.load(HANDLER, &handler);
        m.set_gate32(13, HANDLER as u32, 0);
        // The limit covers the code but not the branch target.
        m.cpu.state.seg[aero_cpu::Seg::Cs as usize].limit = (CODE + 0x40) as u32;
        let mut runs = 0;
        while !m.cpu.state.halted && runs < 100 {
            m.run(budget);
            runs += 1;
        }
        assert_eq!(
            m.cpu.state.gpr[1], 0xDEAD,
            "budget {budget}: no #GP handler"
        );
        let top = m.cpu.state.gpr[4];
        // Error code, then EIP of the faulting instruction.
        assert_eq!(m.r32(top + 4) as u64, jcc_at, "budget {budget}: fault EIP");
        // The CMP completed: ZF from 5 - 5 in the flags the handler saw.
        assert_ne!(m.r32(top + 12) & 0x40, 0, "budget {budget}: ZF");
    }
}

/// `stc|clc`, `inc|dec <size> a`, `j<cc> taken` (fused like CMP/TEST + Jcc): the fused run
/// and the split run agree on the branch, flags (CF kept), registers and count.
#[test]
fn fused_inc_dec_and_branch_match_the_split_run() {
    let values = [
        0u64,
        1,
        0x7F,
        0x80,
        0xFF,
        0x7FFF,
        0xFFFF,
        0x7FFF_FFFF,
        0xFFFF_FFFF,
    ];
    let mut checked = 0;
    for inc in [false, true] {
        for size in [1u32, 2, 4] {
            for carry in [false, true] {
                for &a in &values {
                    for cc in 0..16u8 {
                        let code = asm(32, CODE, |asm| {
                            let mut taken = asm.create_label();
                            if carry {
                                asm.stc()?;
                            } else {
                                asm.clc()?;
                            }
                            match (inc, size) {
                                (true, 1) => asm.inc(al)?,
                                (true, 2) => asm.inc(ax)?,
                                (true, _) => asm.inc(eax)?,
                                (false, 1) => asm.dec(al)?,
                                (false, 2) => asm.dec(ax)?,
                                (false, _) => asm.dec(eax)?,
                            }
                            jcc(asm, cc, taken)?;
                            asm.mov(ecx, 1u32)?;
                            asm.hlt()?;
                            asm.set_label(&mut taken)?;
                            asm.mov(ecx, 2u32)?;
                            asm.hlt()
                        });
                        let (fused, split) = run_both(&code, a, 0);
                        let what = format!("inc={inc} size={size} cf={carry} a={a:#x} cc={cc}");
                        let flags = fused.cpu.state.rflags;
                        assert_eq!(flags & 1 == 1, carry, "CF kept: {what}");
                        let want_ecx = if condition(flags, cc) { 2 } else { 1 };
                        assert_eq!(fused.cpu.state.gpr[1], want_ecx, "branch: {what}");
                        assert_eq!(flags, split.cpu.state.rflags, "{what}");
                        assert_eq!(fused.cpu.state.gpr, split.cpu.state.gpr, "{what}");
                        assert_eq!(fused.cpu.state.rip, split.cpu.state.rip, "{what}");
                        assert_eq!(
                            fused.cpu.instructions_retired(),
                            split.cpu.instructions_retired(),
                            "instruction count: {what}"
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked, 2 * 3 * 2 * 9 * 16);
}
