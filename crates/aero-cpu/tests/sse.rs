//! SSE/SSE2/SSE3/SSSE3 and MMX instructions run through `Cpu::run`, including the
//! #UD/#NM/#XM/#GP rules.

mod common;
use aero_cpu::{Reg, RunExit};
use common::*;

const DATA: u32 = 0x5000;
const HANDLER: u32 = 0x9000;

/// `prefix... opcode modrm(reg, disp32) addr [imm]` for 32-bit code.
fn op_m(opcode: &[u8], reg: u8, addr: u32) -> Vec<u8> {
    let mut v = opcode.to_vec();
    v.push((reg << 3) | 5);
    v.extend_from_slice(&addr.to_le_bytes());
    v
}

fn program(parts: &[&[u8]]) -> Vec<u8> {
    let mut code: Vec<u8> = parts.concat();
    code.push(0xF4);
    code
}

fn machine(code: &[u8]) -> Machine {
    let mut m = Machine::protected32_at(1 << 20, code, 0x8000);
    m.cpu.state.cr0 |= 0x20;
    m.cpu.state.cr4 |= 0x600; // OSFXSR | OSXMMEXCPT
    m.load(HANDLER as u64, &[0xF4]);
    for v in [6, 7, 13, 16, 19] {
        m.set_gate32(v, HANDLER, 0);
    }
    m
}

fn w128(m: &mut Machine, addr: u32, v: u128) {
    m.ram[addr as usize..addr as usize + 16].copy_from_slice(&v.to_le_bytes());
}
fn r128(m: &Machine, addr: u32) -> u128 {
    u128::from_le_bytes(m.ram[addr as usize..addr as usize + 16].try_into().unwrap())
}
fn ps(v: [f32; 4]) -> u128 {
    (0..4).fold(0, |acc, k| acc | ((v[k].to_bits() as u128) << (32 * k)))
}

/// Which exception handler ran: (vector guessed from the pushed return EIP is not
/// needed) — we check that execution stopped at the handler.
fn stopped_in_handler(m: &Machine) -> bool {
    m.cpu.state.rip == HANDLER as u64 + 1
}

#[test]
fn sse_packed_and_scalar_float() {
    let code = program(&[
        &op_m(&[0x0F, 0x28], 0, DATA),      // movaps xmm0, [a]
        &op_m(&[0x0F, 0x28], 1, DATA + 16), // movaps xmm1, [b]
        &[0x0F, 0x58, 0xC1],                // addps xmm0, xmm1
        &op_m(&[0x0F, 0x29], 0, DATA + 32), // movaps [r], xmm0
        &[0xF3, 0x0F, 0x5E, 0xC1],          // divss xmm0, xmm1
        &[0xF3, 0x0F, 0x2C, 0xC0],          // cvttss2si eax, xmm0
        &[0x0F, 0x2F, 0xC1],                // comiss xmm0, xmm1
        &[0xF2, 0x0F, 0x2A, 0xD0],          // cvtsi2sd xmm2, eax
        &[0xF2, 0x0F, 0x51, 0xD2],          // sqrtsd xmm2, xmm2
        &[0xF2, 0x0F, 0x7C, 0xC9],          // haddps xmm1, xmm1
    ]);
    let mut m = machine(&code);
    w128(&mut m, DATA, ps([1.5, 2.0, -3.0, 100.0]));
    w128(&mut m, DATA + 16, ps([0.25, 0.5, 3.0, 1e-3]));
    assert_eq!(m.run(100), RunExit::Halted);
    assert!(!stopped_in_handler(&m));
    assert_eq!(r128(&m, DATA + 32), ps([1.75, 2.5, 0.0, 100.001]));
    // 1.75 / 0.25 = 7
    assert_eq!(m.cpu.state.reg(Reg::Rax), 7);
    assert_eq!(m.cpu.state.rflags & 0x45, 0, "7 > 0.25: ZF=PF=CF=0");
    let x2 = m.cpu.sse_state().xmm[2] as u64;
    assert_eq!(x2, 7f64.sqrt().to_bits());
    assert_eq!(
        m.cpu.sse_state().xmm[1] as u32,
        0.75f32.to_bits(),
        "haddps low lane"
    );
}

#[test]
fn sse_unmasked_zero_divide_raises_xm_and_keeps_destination() {
    let code = program(&[
        &op_m(&[0x0F, 0xAE], 2, DATA), // ldmxcsr [DATA]
        &op_m(&[0x0F, 0x28], 0, DATA + 16),
        &[0x0F, 0x57, 0xC9],       // xorps xmm1, xmm1
        &[0xF3, 0x0F, 0x5E, 0xC1], // divss xmm0, xmm1 -> #XM
    ]);
    let mut m = machine(&code);
    m.w32(DATA as u64, 0x1F80 & !0x200);
    w128(&mut m, DATA + 16, ps([1.0, 2.0, 3.0, 4.0]));
    assert_eq!(m.run(100), RunExit::Halted);
    assert!(stopped_in_handler(&m));
    assert_eq!(
        m.cpu.sse_state().xmm[0],
        ps([1.0, 2.0, 3.0, 4.0]),
        "destination unchanged"
    );
    assert_eq!(m.cpu.sse_state().mxcsr & 0x3F, 0x04, "ZE recorded");
    // Return EIP pushed by the #XM (vector 19) is the DIVSS.
    assert_eq!(m.r32(0x9_0000 - 12), 0x8000 + code.len() as u32 - 5);

    // Without CR4.OSXMMEXCPT the same exception is #UD.
    let mut m2 = machine(&code);
    m2.cpu.state.cr4 &= !0x400;
    m2.w32(DATA as u64, 0x1F80 & !0x200);
    w128(&mut m2, DATA + 16, ps([1.0, 2.0, 3.0, 4.0]));
    assert_eq!(m2.run(100), RunExit::Halted);
    assert!(stopped_in_handler(&m2));
}

#[test]
fn sse_rules_ud_nm_alignment() {
    // OSFXSR clear: #UD.
    let code = program(&[&[0x0F, 0x58, 0xC1]]);
    let mut m = machine(&code);
    m.cpu.state.cr4 &= !0x200;
    assert_eq!(m.run(10), RunExit::Halted);
    assert!(stopped_in_handler(&m));
    // CR0.TS: #NM.
    let mut m = machine(&code);
    m.cpu.state.cr0 |= 8;
    assert_eq!(m.run(10), RunExit::Halted);
    assert!(stopped_in_handler(&m));
    // Misaligned MOVAPS: #GP; MOVUPS at the same address is fine.
    let code = program(&[
        &op_m(&[0x0F, 0x10], 0, DATA + 8),
        &op_m(&[0x0F, 0x28], 0, DATA + 8),
    ]);
    let mut m = machine(&code);
    w128(&mut m, DATA + 8, 0x1234);
    assert_eq!(m.run(10), RunExit::Halted);
    assert!(stopped_in_handler(&m));
    assert_eq!(m.r32(0x9_0000 - 12), 0x8000 + 7, "fault at the MOVAPS");
}

#[test]
fn sse2_integer_ops() {
    let code = program(&[
        &op_m(&[0x66, 0x0F, 0x6F], 0, DATA),      // movdqa xmm0, [a]
        &op_m(&[0x66, 0x0F, 0x6F], 1, DATA + 16), // movdqa xmm1, [b]
        &[0x66, 0x0F, 0xF5, 0xC1],                // pmaddwd xmm0, xmm1
        &[0x66, 0x0F, 0x70, 0xC0, 0x1B],          // pshufd xmm0, xmm0, 0x1B
        &op_m(&[0x66, 0x0F, 0x7F], 0, DATA + 32), // movdqa [r], xmm0
        &[0x66, 0x0F, 0xF6, 0xC9],                // psadbw xmm1, xmm1 -> 0
        &[0x66, 0x0F, 0x7E, 0xC8],                // movd eax, xmm1
        &[0x66, 0x0F, 0x73, 0xF8, 0x04],          // pslldq xmm0, 4
        &[0x66, 0x0F, 0xD7, 0xD8],                // pmovmskb ebx, xmm0
    ]);
    let mut m = machine(&code);
    // words: a = 1..8, b = 2 everywhere
    w128(
        &mut m,
        DATA,
        (0..8).fold(0u128, |acc, k| acc | (((k + 1) as u128) << (16 * k))),
    );
    w128(
        &mut m,
        DATA + 16,
        (0..8).fold(0u128, |acc, k| acc | (2u128 << (16 * k))),
    );
    assert_eq!(m.run(100), RunExit::Halted);
    assert!(!stopped_in_handler(&m));
    // pmaddwd: dwords (1+2)*2=6, (3+4)*2=14, 22, 30; reversed by pshufd 0x1B.
    assert_eq!(r128(&m, DATA + 32), 30 | 22 << 32 | 14 << 64 | 6u128 << 96);
    assert_eq!(m.cpu.state.reg(Reg::Rax), 0);
    assert_eq!(m.cpu.state.reg(Reg::Rbx), 0);
}

#[test]
fn mmx_ops_share_the_x87_registers() {
    let code = program(&[
        &[0xDB, 0xE3],                      // fninit
        &op_m(&[0x0F, 0x6F], 0, DATA),      // movq mm0, [a]
        &op_m(&[0x0F, 0xFC], 0, DATA + 8),  // paddb mm0, [b]
        &op_m(&[0x0F, 0x7F], 0, DATA + 16), // movq [r], mm0
        &[0x0F, 0x63, 0xC0],                // packsswb mm0, mm0
        &[0x0F, 0x7E, 0xC0],                // movd eax, mm0
        &op_m(&[0xD9], 6, DATA + 32),       // fnstenv [env]
        &[0x0F, 0x77],                      // emms
    ]);
    let mut m = machine(&code);
    m.w64(DATA as u64, 0x0102_0304_0506_07FF);
    m.w64(DATA as u64 + 8, 0x0101_0101_0101_0102);
    assert_eq!(m.run(100), RunExit::Halted);
    assert!(!stopped_in_handler(&m));
    assert_eq!(m.r64(DATA as u64 + 16), 0x0203_0405_0607_0801);
    // Words 0x0801, 0x0607, 0x0405, 0x0203 saturate to 0x7F each.
    assert_eq!(m.cpu.state.reg(Reg::Rax), 0x7F7F_7F7F);
    // While in MMX state the tag word shows every register in use, TOP = 0.
    // R0 holds an MMX value (exponent all ones: special), the others zeros.
    assert_eq!(m.r32(DATA as u64 + 32 + 8) & 0xFFFF, 0x5556);
    assert_eq!((m.r32(DATA as u64 + 32 + 4) >> 11) & 7, 0);
    assert_eq!(m.cpu.fpu().regs[0].sign_exp, 0xFFFF);
    assert_eq!(m.cpu.fpu().empty, 0xFF, "EMMS empties the tag word");
}

#[test]
fn ssse3_and_sse3_moves() {
    let code = program(&[
        &op_m(&[0x66, 0x0F, 0x6F], 0, DATA),      // movdqa xmm0, [a]
        &op_m(&[0x66, 0x0F, 0x6F], 1, DATA + 16), // movdqa xmm1, [mask]
        &[0x66, 0x0F, 0x38, 0x00, 0xC1],          // pshufb xmm0, xmm1
        &op_m(&[0x66, 0x0F, 0x7F], 0, DATA + 32),
        &op_m(&[0xF2, 0x0F, 0x12], 2, DATA), // movddup xmm2, [a]
        &op_m(&[0x66, 0x0F, 0x7F], 2, DATA + 48),
    ]);
    let mut m = machine(&code);
    w128(&mut m, DATA, 0x0F0E_0D0C_0B0A_0908_0706_0504_0302_0100);
    // Reverse the bytes, but zero byte 0 via bit 7.
    let mask: u128 = (0..16).fold(0, |acc, k| acc | (((15 - k) as u128) << (8 * k))) | 0x80;
    w128(&mut m, DATA + 16, mask);
    assert_eq!(m.run(100), RunExit::Halted);
    assert!(!stopped_in_handler(&m));
    assert_eq!(
        r128(&m, DATA + 32),
        0x0001_0203_0405_0607_0809_0A0B_0C0D_0E00
    );
    assert_eq!(
        r128(&m, DATA + 48),
        0x0706_0504_0302_0100_0706_0504_0302_0100
    );
}

#[test]
fn mmx_maskmovq_pinsrw_pextrw_cvtpi2ps() {
    let code = program(&[
        &[0xBF],
        &(DATA + 0x40).to_le_bytes(),      // mov edi, DATA+0x40
        &op_m(&[0x0F, 0x6F], 0, DATA),     // movq mm0, [data]
        &op_m(&[0x0F, 0x6F], 1, DATA + 8), // movq mm1, [mask]
        &[0x0F, 0xF7, 0xC1],               // maskmovq mm0, mm1
        &[0xB8, 0x34, 0x12, 0, 0],         // mov eax, 0x1234
        &[0x0F, 0xC4, 0xC0, 0x03],         // pinsrw mm0, eax, 3
        &[0x0F, 0xC5, 0xD8, 0x03],         // pextrw ebx, mm0, 3
        &[0x0F, 0x2A, 0xD0],               // cvtpi2ps xmm2, mm0
    ]);
    let mut m = machine(&code);
    m.w64(DATA as u64, 0x8877_6655_4433_2211);
    m.w64(DATA as u64 + 8, 0x8000_8000_0080_0080);
    m.w64(DATA as u64 + 0x40, 0xFFFF_FFFF_FFFF_FFFF);
    assert_eq!(m.run(100), RunExit::Halted);
    assert!(!stopped_in_handler(&m));
    assert_eq!(m.r64(DATA as u64 + 0x40), 0x88FF_66FF_FF33_FF11);
    assert_eq!(m.cpu.state.reg(Reg::Rbx), 0x1234);
    let x2 = m.cpu.sse_state().xmm[2];
    assert_eq!(x2 as u32, (0x4433_2211u32 as i32 as f32).to_bits());
    assert_eq!((x2 >> 32) as u32, (0x1234_6655u32 as i32 as f32).to_bits());
}

/// CVTPI2PS switches the x87 unit to MMX state (TOP = 0, all tags valid) with a memory
/// source too; CVTPI2PD with a memory source does not (SDM vol. 2A).
#[test]
fn cvtpi2ps_from_memory_enters_mmx_state_cvtpi2pd_does_not() {
    let code = program(&[
        &[0xDB, 0xE3],                       // fninit
        &[0xD9, 0xE8],                       // fld1: TOP = 7, R7 valid
        &op_m(&[0x66, 0x0F, 0x2A], 1, DATA), // cvtpi2pd xmm1, [a]
        &[0x0F, 0xAE, 0x05],                 // fxsave [save] (disp32)
        &(DATA + 0x100).to_le_bytes(),
        &op_m(&[0x0F, 0x2A], 0, DATA), // cvtpi2ps xmm0, [a]
    ]);
    let mut m = machine(&code);
    m.w64(DATA as u64, 0xFFFF_FFFD_0000_0007);
    assert_eq!(m.run(100), RunExit::Halted);
    assert!(!stopped_in_handler(&m));
    // After CVTPI2PD: still TOP = 7 with only R7 valid (abridged tag 0x80).
    assert_eq!((m.r32(DATA as u64 + 0x100) >> (16 + 11)) & 7, 7);
    assert_eq!(m.ram[DATA as usize + 0x104], 0x80);
    let x1 = m.cpu.sse_state().xmm[1];
    assert_eq!(x1 as u64, 7.0f64.to_bits());
    assert_eq!((x1 >> 64) as u64, (-3.0f64).to_bits());
    // After CVTPI2PS: MMX state.
    assert_eq!(m.cpu.fpu().top(), 0);
    assert_eq!(m.cpu.fpu().empty, 0);
    let x0 = m.cpu.sse_state().xmm[0];
    assert_eq!(x0 as u32, 7.0f32.to_bits());
    assert_eq!((x0 >> 32) as u32, (-3.0f32).to_bits());
}

#[test]
fn sse_unaligned_page_crossing_moves() {
    let code = program(&[
        &op_m(&[0x0F, 0x10], 0, DATA),         // movups xmm0, [DATA]
        &op_m(&[0x0F, 0x11], 0, 0x5FF9),       // movups [0x5FF9], xmm0 (crosses a page)
        &op_m(&[0xF3, 0x0F, 0x6F], 1, 0x5FF9), // movdqu xmm1, [0x5FF9]
        &op_m(&[0x0F, 0x29], 1, DATA + 0x20),  // movaps [DATA+0x20], xmm1
    ]);
    let mut m = machine(&code);
    let v = 0x0011_2233_4455_6677_8899_AABB_CCDD_EEFFu128;
    w128(&mut m, DATA, v);
    assert_eq!(m.run(100), RunExit::Halted);
    assert!(!stopped_in_handler(&m));
    assert_eq!(r128(&m, 0x5FF9), v);
    assert_eq!(r128(&m, DATA + 0x20), v);
}
