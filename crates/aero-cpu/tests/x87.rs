//! x87 instructions run through `Cpu::run`: arithmetic, stores, compares, exceptions
//! (#MF, #NM), FXSAVE layout and FSTENV in real mode.

mod common;
use aero_cpu::{Reg, RunExit};
use common::*;

const DATA: u32 = 0x5000;

/// ModRM disp32 addressing in 32-bit code: opcode, /digit, absolute address.
fn m(op: u8, digit: u8, addr: u32) -> Vec<u8> {
    let mut v = vec![op, (digit << 3) | 5];
    v.extend_from_slice(&addr.to_le_bytes());
    v
}

fn program(parts: &[&[u8]]) -> Vec<u8> {
    let mut code: Vec<u8> = parts.concat();
    code.push(0xF4); // hlt
    code
}

fn machine(code: &[u8]) -> Machine {
    let mut m = Machine::protected32_at(1 << 20, code, 0x8000);
    m.cpu.state.cr0 |= 0x20; // NE: native #MF reporting
    m
}

fn f80_at(m: &Machine, addr: u32) -> (u16, u64) {
    let a = addr as usize;
    (
        u16::from_le_bytes([m.ram[a + 8], m.ram[a + 9]]),
        m.r64(addr as u64),
    )
}

#[test]
fn x87_divide_store_and_status() {
    let code = program(&[
        &[0xDB, 0xE3],             // fninit
        &m(0xDD, 0, DATA),         // fld qword [1.0]
        &m(0xDD, 0, DATA + 8),     // fld qword [3.0]
        &[0xDE, 0xF9],             // fdivp st(1), st
        &m(0xDB, 7, DATA + 0x10),  // fstp tbyte [..]
        &[0xD9, 0xE8, 0xD9, 0xEE], // fld1, fldz
        &[0xDE, 0xF9],             // fdivp: 1/0 -> +inf, #Z masked
        &[0xDF, 0xE0],             // fnstsw ax
        &m(0xDD, 3, DATA + 0x20),  // fstp qword [..]
    ]);
    let mut mc = machine(&code);
    mc.w64(DATA as u64, 1.0f64.to_bits());
    mc.w64(DATA as u64 + 8, 3.0f64.to_bits());
    assert_eq!(mc.run(100), RunExit::Halted);
    assert_eq!(f80_at(&mc, DATA + 0x10), (0x3FFD, 0xAAAA_AAAA_AAAA_AAAB));
    let sw = mc.cpu.state.reg(Reg::Rax) as u16;
    assert_eq!(sw & 0x3F, 0x24, "ZE and PE");
    assert_eq!((sw >> 11) & 7, 7, "one value on the stack");
    assert_eq!(mc.r64(DATA as u64 + 0x20), f64::INFINITY.to_bits());
    assert_eq!(mc.cpu.fpu().top(), 0);
}

#[test]
fn x87_precision_control_and_integer_store() {
    let code = program(&[
        &[0xDB, 0xE3],
        &m(0xD9, 5, DATA),        // fldcw [DATA] (PC = 53 bits, RC = nearest)
        &m(0xDD, 0, DATA + 8),    // fld qword 2.5
        &[0xD9, 0xE8],            // fld1
        &[0xDB, 0xF1],            // fcomi st, st(1): 1 < 2.5
        &[0xDD, 0xD8],            // fstp st(0)
        &[0xD9, 0xC0],            // fld st(0)
        &m(0xDB, 3, DATA + 0x10), // fistp dword: 2.5 -> 2 (nearest even)
        &m(0xDB, 1, DATA + 0x14), // fisttp dword: 2.5 -> 2
        &[0xD9, 0xE8, 0xD9, 0xE8, 0xDE, 0xC1], // fld1, fld1, faddp
        &m(0xD8, 6, DATA + 0x18), // fdiv dword [3.0f]
        &m(0xDD, 3, DATA + 0x20), // fstp qword
    ]);
    let mut mc = machine(&code);
    mc.w32(DATA as u64, 0x027F);
    mc.w64(DATA as u64 + 8, 2.5f64.to_bits());
    mc.w32(DATA as u64 + 0x18, 3.0f32.to_bits());
    assert_eq!(mc.run(100), RunExit::Halted);
    assert_eq!(mc.cpu.state.rflags & 0x45, 0x01, "CF set, ZF/PF clear");
    assert_eq!(mc.r32(DATA as u64 + 0x10), 2);
    assert_eq!(mc.r32(DATA as u64 + 0x14), 2);
    assert_eq!(mc.r64(DATA as u64 + 0x20), (2.0f64 / 3.0).to_bits());
}

#[test]
fn x87_unmasked_zero_divide_raises_mf_on_next_instruction() {
    let code = program(&[
        &[0xDB, 0xE3],
        &m(0xD9, 5, DATA), // fldcw: ZM clear
        &[0xD9, 0xE8, 0xD9, 0xEE],
        &[0xDE, 0xF9], // fdivp: unmasked #Z, destination untouched
        &[0x90],       // nop (not an x87 instruction)
        &[0x9B],       // fwait -> #MF
    ]);
    let mut mc = machine(&code);
    mc.w32(DATA as u64, 0x037B);
    let handler = 0x9000u32;
    mc.load(handler as u64, &[0xDF, 0xE0, 0xF4]); // fnstsw ax; hlt
    mc.set_gate32(16, handler, 0);
    assert_eq!(mc.run(100), RunExit::Halted);
    let sw = mc.cpu.state.reg(Reg::Rax) as u16;
    assert_eq!(sw & 0x80FF, 0x8084, "B, ES and ZE set");
    assert_eq!(mc.cpu.state.rip, handler as u64 + 3);
    // The faulting FWAIT's address was pushed as the return EIP.
    let fwait_at = 0x8000 + code.len() as u32 - 2;
    assert_eq!(mc.r32(0x9_0000 - 12), fwait_at);
    // FIP points at the FDIVP that raised the exception.
    assert_eq!(mc.cpu.fpu().fip, fwait_at as u64 - 3);
    assert_eq!(mc.cpu.fpu().fop, 0x6F9);
}

#[test]
fn x87_nm_when_task_switched() {
    let code = program(&[&[0xD9, 0xE8]]);
    let mut mc = machine(&code);
    mc.cpu.state.cr0 |= 8; // TS
    mc.load(0x9000, &[0xF4]);
    mc.set_gate32(7, 0x9000, 0);
    assert_eq!(mc.run(10), RunExit::Halted);
    assert_eq!(mc.cpu.state.rip, 0x9001);
    assert_eq!(mc.cpu.fpu().top(), 0, "FLD1 did not execute");
}

#[test]
fn x87_fxsave_layout_and_alignment() {
    let code = program(&[
        &[0xDB, 0xE3, 0xD9, 0xE8], // fninit; fld1
        &[0x0F, 0xAE, 0x05],
        &0x6000u32.to_le_bytes(), // fxsave [0x6000]
        &[0x0F, 0xAE, 0x05],
        &0x6108u32.to_le_bytes(), // fxsave [0x6108]: misaligned
    ]);
    let mut mc = machine(&code);
    mc.cpu.state.cr4 |= 0x200;
    mc.load(0x9000, &[0xF4]);
    mc.set_gate32(13, 0x9000, 0);
    assert_eq!(mc.run(100), RunExit::Halted);
    assert_eq!(mc.cpu.state.rip, 0x9001, "#GP for the misaligned FXSAVE");
    assert_eq!(mc.r32(0x6000) & 0xFFFF, 0x037F);
    assert_eq!(mc.r32(0x6000) >> 16, 0x3800, "TOP = 7");
    assert_eq!(mc.ram[0x6004], 0x80, "abridged tag: R7 in use");
    assert_eq!(mc.r32(0x6018), 0x1F80);
    assert_eq!(mc.r64(0x6020), 1 << 63);
    assert_eq!(mc.r32(0x6028) & 0xFFFF, 0x3FFF);
    assert_eq!(mc.r32(0x6008), 0x8002, "FIP of FLD1");
}

#[test]
fn x87_transcendentals_through_the_interpreter() {
    let code = program(&[
        &[0xDB, 0xE3],
        &[0xD9, 0xEB],                         // fldpi
        &m(0xDA, 6, DATA),                     // fidiv dword [6]
        &[0xD9, 0xFE],                         // fsin
        &m(0xDB, 7, DATA + 0x10),              // fstp tbyte
        &[0xD9, 0xE8, 0xD9, 0xE8, 0xD8, 0xC0], // fld1; fld1; fadd st, st -> 2
        &[0xD9, 0xFA],                         // fsqrt
        &m(0xDB, 7, DATA + 0x20),
        &m(0xDD, 0, DATA + 0x30), // fld qword 1e300 (64-bit mantissa), reduced mod 3
        &m(0xDD, 0, DATA + 0x38),
        &[0xD9, 0xF8],                               // fprem (partial steps)
        &[0xDF, 0xE0, 0xF6, 0xC4, 0x04, 0x75, 0xF7], // fnstsw ax; test ah, 4; jnz fprem
        &m(0xDD, 3, DATA + 0x40),
    ]);
    let mut mc = machine(&code);
    mc.w32(DATA as u64, 6);
    mc.w64(DATA as u64 + 0x30, 3.0f64.to_bits());
    mc.w64(DATA as u64 + 0x38, 1e300f64.to_bits());
    assert_eq!(mc.run(1000), RunExit::Halted);
    assert_eq!(
        f80_at(&mc, DATA + 0x10),
        (0x3FFE, 0x8000_0000_0000_0000),
        "sin(pi/6) = 0.5"
    );
    assert_eq!(
        f80_at(&mc, DATA + 0x20),
        (0x3FFF, 0xB504_F333_F9DE_6484),
        "sqrt(2)"
    );
    assert_eq!(mc.r64(DATA as u64 + 0x40), (1e300f64 % 3.0).to_bits());
}

#[test]
fn x87_fnstenv_real_mode_stores_linear_pointers() {
    // 16-bit real mode at 0x0700:0x0010: fninit; fld1; fnstenv [0x600]; hlt
    let code = [0xDB, 0xE3, 0xD9, 0xE8, 0xD9, 0x36, 0x00, 0x06, 0xF4];
    let mut mc = Machine::real_mode_at(1 << 20, &[], 0);
    mc.load(0x7010, &code);
    mc.cpu.state.load_seg_real(aero_cpu::Seg::Cs, 0x700);
    mc.cpu.state.rip = 0x10;
    assert_eq!(mc.run(10), RunExit::Halted);
    let w =
        |o: u64| u16::from_le_bytes([mc.ram[(0x600 + o) as usize], mc.ram[(0x601 + o) as usize]]);
    assert_eq!(w(0), 0x037F);
    assert_eq!(w(4), 0x3FFF, "tag word: R7 valid");
    assert_eq!(w(6), 0x7012, "FIP bits 15..0 of the linear address of FLD1");
    // FOP is only recorded for instructions that raise an unmasked exception.
    assert_eq!(
        w(8),
        0x0000,
        "FIP bits 19..16 = 0, FOP untouched since FNINIT"
    );
    assert_eq!(
        mc.cpu.fpu().control & 0x3F,
        0x3F,
        "FNSTENV masks all exceptions"
    );
}

#[test]
fn x87_fsave_frstor_fxch_fcmov_fxam_fbstp() {
    let code = program(&[
        &[0xDB, 0xE3],
        &m(0xDF, 4, DATA),         // fbld [bcd -1234]
        &[0xD9, 0xE8],             // fld1
        &[0xD9, 0xC9],             // fxch st(1): st0 = -1234, st1 = 1
        &[0xD9, 0xE5],             // fxam: negative normal -> C1, C2
        &[0xDF, 0xE0, 0x89, 0xC3], // fnstsw ax; mov ebx, eax
        &[0xF9],                   // stc
        &[0xDA, 0xC1],             // fcmovb st, st(1): CF=1 -> st0 = 1
        &m(0xDD, 6, DATA + 0x40),  // fnsave [0x5040] (108 bytes), FPU reinitialised
        &[0xD9, 0xEE],             // fldz (into the fresh state)
        &m(0xDD, 4, DATA + 0x40),  // frstor [0x5040]
        &m(0xDF, 6, DATA + 0x20),  // fbstp [..]: st0 = 1
        &m(0xDF, 6, DATA + 0x30),  // fbstp [..]: st0 = 1 (was st1)
    ]);
    let mut mc = machine(&code);
    mc.ram[DATA as usize..DATA as usize + 10]
        .copy_from_slice(&[0x34, 0x12, 0, 0, 0, 0, 0, 0, 0, 0x80]);
    assert_eq!(mc.run(100), RunExit::Halted);
    let sw = mc.cpu.state.reg(Reg::Rbx) as u16;
    assert_eq!(sw & 0x4700, 0x0600, "FXAM: C3=0 C2=1 C1=1 (negative) C0=0");
    assert_eq!(
        &mc.ram[DATA as usize + 0x20..DATA as usize + 0x2A],
        &[1, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(
        &mc.ram[DATA as usize + 0x30..DATA as usize + 0x3A],
        &[1, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    );
    // FSAVE image: control word, then ST(0) = 1.0 at offset 28.
    assert_eq!(mc.r32(DATA as u64 + 0x40) & 0xFFFF, 0x037F);
    assert_eq!(mc.r64(DATA as u64 + 0x40 + 28), 1 << 63);
    assert_eq!(mc.cpu.fpu().empty, 0xFF, "both values popped");
}

#[test]
fn x87_stack_overflow_masked_pushes_indefinite() {
    let mut parts: Vec<Vec<u8>> = vec![vec![0xDB, 0xE3]];
    for _ in 0..9 {
        parts.push(vec![0xD9, 0xE8]); // fld1 x9
    }
    parts.push(vec![0xDF, 0xE0]);
    parts.push(m(0xDB, 7, DATA)); // fstp tbyte: the indefinite
    let refs: Vec<&[u8]> = parts.iter().map(|p| p.as_slice()).collect();
    let mut mc = machine(&program(&refs));
    assert_eq!(mc.run(100), RunExit::Halted);
    let sw = mc.cpu.state.reg(Reg::Rax) as u16;
    assert_eq!(sw & 0x0241, 0x0241, "IE, SF and C1 (overflow)");
    assert_eq!(f80_at(&mc, DATA), (0xFFFF, 0xC000_0000_0000_0000));
}
