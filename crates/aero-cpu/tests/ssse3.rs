//! SSSE3 instructions (0F 38 00..0B, 1C..1E and 0F 3A 0F) run through `Cpu::run` in
//! both forms: MMX (64-bit mm) and XMM (66 prefix), register and memory sources, plus
//! the #UD/#NM/#MF/#GP rules. Expected values are worked out by hand from the SDM.

mod common;
use aero_cpu::{Reg, RunExit};
use common::*;

const CODE: u32 = 0x8000;
const DATA: u32 = 0x5000;
const HANDLERS: u32 = 0x9000;
const STACK_TOP: u64 = 0x9_0000;
const NO_FAULT: u64 = 0xFFFF;

/// Each of #UD, #NM, #GP, #MF has a handler that records its vector in EBP and halts.
fn machine(code: &[u8]) -> Machine {
    let mut m = Machine::protected32_at(1 << 20, code, CODE as u64);
    m.cpu.state.cr0 |= 0x22; // MP | NE
    m.cpu.state.cr4 |= 0x600; // OSFXSR | OSXMMEXCPT
    m.cpu.state.set_reg(Reg::Rbp, NO_FAULT);
    for v in [6u8, 7, 13, 16, 19] {
        let at = HANDLERS + 16 * v as u32;
        let mut h = vec![0xBD];
        h.extend_from_slice(&(v as u32).to_le_bytes());
        h.push(0xF4);
        m.load(at as u64, &h);
        m.set_gate32(v, at, 0);
    }
    m
}

/// Vector of the exception taken, or NO_FAULT.
fn fault(m: &Machine) -> u64 {
    m.cpu.state.reg(Reg::Rbp)
}

/// `66? 0F map op modrm [disp32] [imm8]` with ModRM reg = 0 and rm = register 1
/// (`mem` = None) or [disp32].
fn encode(xmm: bool, map: u8, op: u8, mem: Option<u32>, imm: Option<u8>) -> Vec<u8> {
    let mut v = Vec::new();
    if xmm {
        v.push(0x66);
    }
    v.extend_from_slice(&[0x0F, map, op]);
    match mem {
        Some(a) => {
            v.push(0x05);
            v.extend_from_slice(&a.to_le_bytes());
        }
        None => v.push(0xC1),
    }
    v.extend(imm);
    v.push(0xF4);
    v
}

fn bytes(b: [u8; 16]) -> u128 {
    u128::from_le_bytes(b)
}
fn words(w: [u16; 8]) -> u128 {
    (0..8).fold(0, |r, k| r | (w[k] as u128) << (16 * k))
}
fn dwords(d: [u32; 4]) -> u128 {
    (0..4).fold(0, |r, k| r | (d[k] as u128) << (32 * k))
}
fn seq(base: u8) -> u128 {
    bytes(core::array::from_fn(|k| base + k as u8))
}
const LOW: u128 = u64::MAX as u128;

/// One hand-computed case per instruction: opcode map and byte, immediate,
/// destination and source inputs, expected XMM result, expected MMX result (the MMX
/// form runs on the low 64 bits of both inputs).
struct Case {
    name: &'static str,
    map: u8,
    op: u8,
    imm: Option<u8>,
    dst: u128,
    src: u128,
    xmm: u128,
    mm: u128,
}

fn cases() -> Vec<Case> {
    let shuf = bytes([
        0x0F, 0x80, 0x01, 0x11, 0xFF, 0x7E, 0x00, 0x08, 0x90, 0x03, 0x13, 0x23, 0x7F, 0x40, 0x05,
        0x0A,
    ]);
    let hadd_a = words([1, 2, 3, 4, 0x7FFF, 1, 0x8000, 0xFFFF]);
    let hadd_b = words([10, 20, 0xFFFF, 0xFFFF, 0x1234, 1, 0x8000, 0x8000]);
    let hsub_a = words([0x8000, 1, 0x7FFF, 0xFFFF, 5, 7, 0, 0x8000]);
    let hsub_b = words([0, 0, 0xFFFF, 0x7FFF, 100, 0xFF9C, 0x4000, 0xC000]);
    let hd_a = dwords([0xFFFF_FFFF, 1, 0x7FFF_FFFF, 1]);
    let hd_b = dwords([2, 3, 0x8000_0000, 0x8000_0000]);
    let mad_a = bytes([
        0xFF, 0xFF, 0xFF, 0xFF, 0x02, 0x03, 0x80, 0x01, 0x00, 0x00, 0xFF, 0x00, 0x10, 0x20, 0x7F,
        0x80,
    ]);
    let mad_b = bytes([
        0x7F, 0x7F, 0x80, 0x80, 0x04, 0xFB, 0xFF, 0x10, 0x80, 0x7F, 0x80, 0x7F, 0x10, 0x20, 0x01,
        0xFF,
    ]);
    let mad = words([0x7FFF, 0x8000, 0xFFF9, 0xFF90, 0, 0x8080, 0x0500, 0xFFFF]);
    let sgb = bytes([
        0xFB, 0x80, 0x7F, 0, 3, 0, 0xFD, 0x80, 0, 0, 0, 0, 0xF7, 9, 0xF7, 0,
    ]);
    let sgw = words([0xFFFB, 0x8000, 0, 0xFFFF, 0xFFFE, 2, 0, 2]);
    let sgd = dwords([0xFFFF_FFFB, 0x8000_0000, 0, 0x1234_5678]);
    let mulhrs = words([0x2000, 0x8000, 0x8001, 0, 1, 0, 0x0C4C, 0xFFFE]);
    let absb = bytes([
        0x80, 1, 0x7F, 0, 1, 0x7F, 0x40, 0x40, 0, 0, 0, 0, 0, 0, 0, 2,
    ]);
    let absw = words([0x8000, 1, 0x7FFF, 0x7FFF, 0, 1, 0x0100, 0x00FF]);
    let absd = dwords([0x8000_0000, 2, 5, 0x7FFF_FFFF]);
    let c = |name, map, op, imm, dst, src, xmm, mm| Case {
        name,
        map,
        op,
        imm,
        dst,
        src,
        xmm,
        mm,
    };
    vec![
        c(
            "pshufb",
            0x38,
            0x00,
            None,
            seq(0xA0),
            shuf,
            bytes([
                0xAF, 0x00, 0xA1, 0xA1, 0x00, 0xAE, 0xA0, 0xA8, 0x00, 0xA3, 0xA3, 0xA3, 0xAF, 0xA0,
                0xA5, 0xAA,
            ]),
            // MMX: index = low 3 bits.
            u64::from_le_bytes([0xA7, 0x00, 0xA1, 0xA1, 0x00, 0xA6, 0xA0, 0xA0]) as u128,
        ),
        c(
            "phaddw",
            0x38,
            0x01,
            None,
            hadd_a,
            hadd_b,
            words([3, 7, 0x8000, 0x7FFF, 30, 0xFFFE, 0x1235, 0]),
            words([3, 7, 30, 0xFFFE, 0, 0, 0, 0]),
        ),
        c(
            "phaddd",
            0x38,
            0x02,
            None,
            hd_a,
            hd_b,
            dwords([0, 0x8000_0000, 5, 0]),
            dwords([0, 5, 0, 0]),
        ),
        c(
            "phaddsw",
            0x38,
            0x03,
            None,
            hadd_a,
            hadd_b,
            words([3, 7, 0x7FFF, 0x8000, 30, 0xFFFE, 0x1235, 0x8000]),
            words([3, 7, 30, 0xFFFE, 0, 0, 0, 0]),
        ),
        c("pmaddubsw", 0x38, 0x04, None, mad_a, mad_b, mad, mad & LOW),
        c(
            "phsubw",
            0x38,
            0x05,
            None,
            hsub_a,
            hsub_b,
            words([0x7FFF, 0x8000, 0xFFFE, 0x8000, 0, 0x8000, 0xC8, 0x8000]),
            words([0x7FFF, 0x8000, 0, 0x8000, 0, 0, 0, 0]),
        ),
        c(
            "phsubd",
            0x38,
            0x06,
            None,
            hd_a,
            hd_b,
            dwords([0xFFFF_FFFE, 0x7FFF_FFFE, 0xFFFF_FFFF, 0]),
            dwords([0xFFFF_FFFE, 0xFFFF_FFFF, 0, 0]),
        ),
        c(
            "phsubsw",
            0x38,
            0x07,
            None,
            hsub_a,
            hsub_b,
            words([0x8000, 0x7FFF, 0xFFFE, 0x7FFF, 0, 0x8000, 0xC8, 0x7FFF]),
            words([0x8000, 0x7FFF, 0, 0x8000, 0, 0, 0, 0]),
        ),
        c(
            "psignb",
            0x38,
            0x08,
            None,
            bytes([5, 0x80, 0x7F, 0xFF, 3, 3, 3, 0x80, 9, 9, 9, 9, 9, 9, 9, 9]),
            bytes([
                0x80, 0xFF, 1, 0, 0x7F, 0, 0xFE, 1, 0, 0, 0, 0, 0xFF, 1, 0x80, 0,
            ]),
            sgb,
            sgb & LOW,
        ),
        c(
            "psignw",
            0x38,
            0x09,
            None,
            words([5, 0x8000, 7, 0xFFFF, 2, 2, 2, 2]),
            words([0x8000, 0xFFFF, 0, 0x0100, 0xFF00, 1, 0, 0x7FFF]),
            sgw,
            sgw & LOW,
        ),
        c(
            "psignd",
            0x38,
            0x0A,
            None,
            dwords([5, 0x8000_0000, 7, 0x1234_5678]),
            dwords([0xFFFF_FFFF, 0x8000_0000, 0, 0x0000_0100]),
            sgd,
            sgd & LOW,
        ),
        c(
            "pmulhrsw",
            0x38,
            0x0B,
            None,
            words([0x4000, 0x8000, 0x8000, 0xFFFF, 1, 1, 0x1234, 0xFFFE]),
            words([0x4000, 0x8000, 0x7FFF, 1, 0x4000, 0x2000, 0x5678, 0x7FFF]),
            mulhrs,
            mulhrs & LOW,
        ),
        // PABS*: the destination's old value does not matter.
        c(
            "pabsb",
            0x38,
            0x1C,
            None,
            seq(0x11),
            bytes([
                0x80, 0xFF, 0x7F, 0, 1, 0x81, 0xC0, 0x40, 0, 0, 0, 0, 0, 0, 0, 0xFE,
            ]),
            absb,
            absb & LOW,
        ),
        c(
            "pabsw",
            0x38,
            0x1D,
            None,
            seq(0x11),
            words([0x8000, 0xFFFF, 0x7FFF, 0x8001, 0, 1, 0xFF00, 0x00FF]),
            absw,
            absw & LOW,
        ),
        c(
            "pabsd",
            0x38,
            0x1E,
            None,
            seq(0x11),
            dwords([0x8000_0000, 0xFFFF_FFFE, 5, 0x8000_0001]),
            absd,
            absd & LOW,
        ),
        c(
            "palignr",
            0x3A,
            0x0F,
            Some(5),
            seq(0xA0),
            seq(0xB0),
            bytes([
                0xB5, 0xB6, 0xB7, 0xB8, 0xB9, 0xBA, 0xBB, 0xBC, 0xBD, 0xBE, 0xBF, 0xA0, 0xA1, 0xA2,
                0xA3, 0xA4,
            ]),
            u64::from_le_bytes([0xB5, 0xB6, 0xB7, 0xA0, 0xA1, 0xA2, 0xA3, 0xA4]) as u128,
        ),
    ]
}

#[test]
fn ssse3_xmm_forms_register_and_aligned_memory() {
    for c in cases() {
        for mem in [None, Some(DATA + 0x40)] {
            let mut m = machine(&encode(true, c.map, c.op, mem, c.imm));
            m.cpu.sse_mut().xmm[0] = c.dst;
            m.cpu.sse_mut().xmm[1] = if mem.is_some() { 0 } else { c.src };
            m.ram[DATA as usize + 0x40..DATA as usize + 0x50].copy_from_slice(&c.src.to_le_bytes());
            assert_eq!(m.run(10), RunExit::Halted);
            assert_eq!(fault(&m), NO_FAULT, "{} xmm {mem:?}", c.name);
            assert_eq!(
                m.cpu.sse().xmm[0],
                c.xmm,
                "{} xmm0, {}: {:#034x}",
                c.name,
                if mem.is_some() { "m128" } else { "xmm1" },
                m.cpu.sse().xmm[0]
            );
        }
    }
}

#[test]
fn ssse3_mmx_forms_register_and_unaligned_memory() {
    for c in cases() {
        // m64 operands of MMX forms have no alignment requirement.
        for mem in [None, Some(DATA + 0x43)] {
            let mut m = machine(&encode(false, c.map, c.op, mem, c.imm));
            m.cpu.fpu_mut().set_mmx(0, c.dst as u64);
            m.cpu
                .fpu_mut()
                .set_mmx(1, if mem.is_some() { 0 } else { c.src as u64 });
            // The x87 view before the instruction: TOP = 5, registers empty.
            m.cpu.fpu_mut().set_top(5);
            m.cpu.fpu_mut().empty = 0xFF;
            m.cpu.sse_mut().xmm[0] = 0x5555;
            m.w64(DATA as u64 + 0x43, c.src as u64);
            assert_eq!(m.run(10), RunExit::Halted);
            assert_eq!(fault(&m), NO_FAULT, "{} mm {mem:?}", c.name);
            let f = m.cpu.fpu();
            assert_eq!(
                f.mmx(0) as u128,
                c.mm,
                "{} mm0, {}: {:#018x}",
                c.name,
                if mem.is_some() { "m64" } else { "mm1" },
                f.mmx(0)
            );
            assert_eq!(
                f.regs[0].sign_exp, 0xFFFF,
                "{}: MMX write sets bits 79:64",
                c.name
            );
            assert_eq!(
                (f.top(), f.empty),
                (0, 0),
                "{}: MMX state (TOP 0, all valid)",
                c.name
            );
            assert_eq!(m.cpu.sse().xmm[0], 0x5555, "{}: XMM0 untouched", c.name);
        }
    }
}

#[test]
fn ssse3_palignr_immediates() {
    let run = |xmm: bool, imm: u8| {
        let mut m = machine(&encode(xmm, 0x3A, 0x0F, None, Some(imm)));
        if xmm {
            m.cpu.sse_mut().xmm[0] = seq(0xA0);
            m.cpu.sse_mut().xmm[1] = seq(0xB0);
        } else {
            m.cpu.fpu_mut().set_mmx(0, seq(0xA0) as u64);
            m.cpu.fpu_mut().set_mmx(1, seq(0xB0) as u64);
        }
        assert_eq!(m.run(10), RunExit::Halted);
        if xmm {
            m.cpu.sse().xmm[0]
        } else {
            m.cpu.fpu().mmx(0) as u128
        }
    };
    assert_eq!(run(true, 0), seq(0xB0));
    assert_eq!(run(true, 16), seq(0xA0));
    assert_eq!(run(true, 31), 0xAF);
    assert_eq!(run(true, 32), 0);
    assert_eq!(run(true, 0xFF), 0);
    assert_eq!(run(false, 0), seq(0xB0) & LOW);
    assert_eq!(run(false, 8), seq(0xA0) & LOW);
    assert_eq!(run(false, 15), 0xA7);
    assert_eq!(run(false, 16), 0);
    assert_eq!(run(false, 0x80), 0);
}

#[test]
fn ssse3_misaligned_m128_is_gp_and_keeps_the_destination() {
    for (map, op, imm) in [
        (0x38, 0x00, None),
        (0x38, 0x1E, None),
        (0x3A, 0x0F, Some(3)),
    ] {
        let code = encode(true, map, op, Some(DATA + 8), imm);
        let mut m = machine(&code);
        m.cpu.sse_mut().xmm[0] = 0x1234;
        assert_eq!(m.run(10), RunExit::Halted);
        assert_eq!(fault(&m), 13, "{map:02x} {op:02x}: #GP");
        // Pushed: EFLAGS, CS, EIP of the faulting instruction, error code 0.
        assert_eq!(m.r32(STACK_TOP - 12), CODE, "fault at the instruction");
        assert_eq!(m.r32(STACK_TOP - 16), 0, "error code 0");
        assert_eq!(m.cpu.sse().xmm[0], 0x1234, "destination unchanged");
    }
}

#[test]
fn ssse3_ud_nm_mf_rules() {
    let xmm = encode(true, 0x38, 0x00, None, None);
    let mmx = encode(false, 0x38, 0x00, None, None);
    let run = |code: &[u8], cr0_set: u64, cr4_clear: u64| {
        let mut m = machine(code);
        m.cpu.state.cr0 |= cr0_set;
        m.cpu.state.cr4 &= !cr4_clear;
        assert_eq!(m.run(10), RunExit::Halted);
        fault(&m)
    };
    // CR4.OSFXSR = 0: #UD for the XMM form; the MMX form does not depend on it.
    assert_eq!(run(&xmm, 0, 0x200), 6);
    assert_eq!(run(&mmx, 0, 0x200), NO_FAULT);
    // CR0.TS: #NM for both.
    assert_eq!(run(&xmm, 8, 0), 7);
    assert_eq!(run(&mmx, 8, 0), 7);
    // CR0.EM: #UD for both, even with TS set.
    assert_eq!(run(&xmm, 4, 0), 6);
    assert_eq!(run(&mmx, 4 | 8, 0), 6);
}

#[test]
fn ssse3_mmx_form_reports_pending_x87_exception() {
    // fninit; fldcw [cw] (ZE unmasked); fld1; fldz; fdivp st1, st0 -> pending #Z.
    let prefix: Vec<u8> = [
        &[0xDB, 0xE3][..],
        &[0xD9, 0x2D],
        &(DATA).to_le_bytes(),
        &[0xD9, 0xE8, 0xD9, 0xEE, 0xDE, 0xF9],
    ]
    .concat();
    for (xmm, want) in [(false, 16), (true, NO_FAULT)] {
        let mut code = prefix.clone();
        code.extend(encode(xmm, 0x38, 0x1C, None, None)); // pabsb
        let mut m = machine(&code);
        m.w32(DATA as u64, 0x037B);
        assert_eq!(m.run(20), RunExit::Halted);
        assert_eq!(fault(&m), want, "xmm form: {xmm}");
        if !xmm {
            // #MF is reported at the PABSB, which has not run.
            let pabsb = CODE + prefix.len() as u32;
            assert_eq!(m.r32(STACK_TOP - 12), pabsb);
            assert_ne!(m.cpu.fpu().top(), 0, "no switch to MMX state");
        }
    }
}
