//! The JIT tier against the interpreter: the same programs run with the JIT off, on and
//! in verify mode (which re-runs every compiled block on the interpreter and panics at
//! the first difference) must end in the same state, RAM, retired count and device
//! timing; compiled code must actually have run. (x86-64 Linux hosts: elsewhere there is
//! no JIT.)
#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

mod common;
use aero_cpu::jit::JitMode;
use aero_cpu::{RunExit, Seg, Segment};
use common::{Machine, asm};
use iced_x86::code_asm::*;

const DATA: u64 = 0x2_0000;
const CODE: u64 = 0x1_0000;

struct Outcome {
    exit: RunExit,
    state: aero_cpu::CpuState,
    retired: u64,
    ram: Vec<u8>,
    tsc: u64,
    stats: aero_cpu::jit::JitStats,
}

fn run_mode(make: &dyn Fn() -> Machine, mode: JitMode, budget: u64) -> Outcome {
    let mut m = make();
    m.cpu.set_jit_mode(mode);
    m.cpu.set_jit_threshold(2);
    m.cpu.set_jit_min_insns(1);
    let exit = m.run(budget);
    Outcome {
        exit,
        state: m.cpu.state.clone(),
        retired: m.cpu.instructions_retired(),
        ram: m.ram.clone(),
        tsc: m.bus.tsc,
        stats: m.cpu.jit_stats(),
    }
}

/// Runs `make`'s machine under all three modes; returns the JIT's stats.
fn same_under_all_engines(make: &dyn Fn() -> Machine, budget: u64) -> aero_cpu::jit::JitStats {
    let off = run_mode(make, JitMode::Off, budget);
    assert_eq!(off.stats.native_runs, 0);
    let mut on_stats = None;
    for mode in [JitMode::On, JitMode::Verify] {
        let on = run_mode(make, mode, budget);
        assert_eq!(on.exit, off.exit, "{mode:?}: exit");
        assert_eq!(on.state, off.state, "{mode:?}: state");
        assert_eq!(on.retired, off.retired, "{mode:?}: retired");
        assert_eq!(
            on.tsc, off.tsc,
            "{mode:?}: device-visible instruction count"
        );
        if let Some(at) = (0..on.ram.len()).find(|&a| on.ram[a] != off.ram[a]) {
            panic!("{mode:?}: RAM differs at {at:#x}");
        }
        if mode == JitMode::On {
            assert!(
                on.stats.compiled > 0 && on.stats.native_runs > 0,
                "{:?}",
                on.stats
            );
            on_stats = Some(on.stats);
        }
    }
    on_stats.expect("the On run")
}

fn fill_data(m: &mut Machine) {
    for k in 0..0x4000u64 {
        m.ram[(DATA + k) as usize] = (k.wrapping_mul(0x9E37_79B9) >> 7) as u8;
    }
}

fn pm32(code: &[u8]) -> Machine {
    let mut m = Machine::protected32_at(1 << 20, code, CODE);
    fill_data(&mut m);
    m
}

/// The integer subset: ALU with register, immediate and memory operands, RMW memory,
/// flags consumers (ADC, SETcc, CMOVcc, Jcc), handler-run instructions (PUSH/POP/LEA).
fn integer_loop32() -> Vec<u8> {
    asm(32, CODE, |a| {
        let mut top = a.create_label();
        a.mov(esi, DATA as u32)?;
        a.mov(ecx, 300u32)?;
        a.xor(eax, eax)?;
        a.mov(edx, 1u32)?;
        a.set_label(&mut top)?;
        a.add(eax, dword_ptr(esi + ecx * 4))?;
        a.adc(edx, eax)?;
        a.mov(ebx, eax)?;
        a.xor(ebx, ecx)?;
        a.and(ebx, 0xFFu32)?;
        a.sub(dword_ptr(esi + ebx * 4), edx)?;
        a.cmp(eax, edx)?;
        a.setb(bl)?;
        a.movzx(edi, bl)?;
        a.cmovg(eax, edx)?;
        a.inc(dword_ptr(esi + 0x800))?;
        a.neg(edx)?;
        a.not(edi)?;
        a.push(eax)?;
        a.pop(ebp)?;
        a.lea(ebp, dword_ptr(ebp + edi * 2 + 3))?;
        a.test(ebp, 4u32)?;
        a.movsx(ebp, bp)?;
        a.add(dl, 0x7Fu32)?;
        a.sbb(dx, cx)?;
        a.or(word_ptr(esi + 0x900), dx)?;
        a.cmp(byte_ptr(esi + 0x901), 0x40u32)?;
        a.sete(byte_ptr(esi + 0x902))?;
        a.dec(ecx)?;
        a.jnz(top)?;
        a.hlt()
    })
}

#[test]
fn integer_loop_matches_the_interpreter() {
    let code = integer_loop32();
    let stats = same_under_all_engines(&|| pm32(&code), 100_000);
    // The loop closes on its own start: its iterations run in host code, one entry.
    assert!(
        stats.native_loops > 250 && stats.native_runs < 10,
        "{stats:?}"
    );
}

/// Memory operands through flat segments take the inline TLB hit path: a copy loop with
/// read-modify-write and byte/word accesses calls back into the interpreter only for
/// TLB misses (the first touch of each page), not once per access.
#[test]
fn flat_memory_accesses_stay_in_host_code() {
    let code = asm(32, CODE, |a| {
        let mut top = a.create_label();
        a.mov(esi, DATA as u32)?;
        a.mov(edi, DATA as u32 + 0x2000)?;
        a.mov(ecx, 1000u32)?;
        a.set_label(&mut top)?;
        a.mov(eax, dword_ptr(esi + ecx * 4))?;
        a.mov(dword_ptr(edi + ecx * 4), eax)?;
        a.add(dword_ptr(edi), eax)?;
        a.inc(word_ptr(edi + 6))?;
        a.mov(byte_ptr(edi + 9), 0x5Au32)?;
        a.cmp(byte_ptr(edi + 9), 0x5Au32)?;
        a.sete(byte_ptr(edi + 10))?;
        a.dec(ecx)?;
        a.jnz(top)?;
        a.hlt()
    });
    let stats = same_under_all_engines(&|| pm32(&code), 100_000);
    assert!(stats.native_loops > 900, "{stats:?}");
    assert!(stats.helper_calls < 100, "{stats:?}");
}

/// At the default threshold, hot blocks too short to repay entering host code (two
/// blocks jumping on) stay interpreted; a long one (not looping on itself) is compiled.
/// A low threshold alone does not change that.
#[test]
fn short_blocks_stay_interpreted_at_the_default_threshold() {
    let code = asm(32, CODE, |a| {
        let mut first = a.create_label();
        let mut second = a.create_label();
        let mut long = a.create_label();
        a.mov(ecx, 300u32)?;
        a.set_label(&mut first)?;
        a.inc(eax)?;
        a.jmp(second)?;
        a.set_label(&mut second)?;
        a.inc(esi)?;
        a.jmp(long)?;
        a.set_label(&mut long)?;
        a.add(ebx, 3u32)?;
        a.xor(edx, ebx)?;
        a.mov(edi, edx)?;
        a.and(edi, 0xFFu32)?;
        a.add(ebp, edi)?;
        a.sub(ebx, 1u32)?;
        a.dec(ecx)?;
        a.jnz(first)?;
        a.hlt()
    });
    for threshold in [50, 2] {
        let mut m = pm32(&code);
        m.cpu.set_jit_mode(JitMode::On);
        m.cpu.set_jit_threshold(threshold);
        assert_eq!(m.run(10_000), RunExit::Halted);
        let stats = m.cpu.jit_stats();
        assert_eq!(stats.compiled, 1, "threshold {threshold}: {stats:?}");
        assert!(stats.refused >= 2, "threshold {threshold}: {stats:?}");
        assert!(stats.native_runs >= 300 - threshold as u64, "{stats:?}");
        assert_eq!(m.cpu.state.gpr[0], 300);
        assert_eq!(m.cpu.state.gpr[6], 300);
    }
}

/// More hot blocks than 2^14 (the block cache holds up to 128k): each keeps its own JIT
/// entry, so all of them compile (entries shared by blocks that run in turn would reset
/// each other's counts and never compile).
#[test]
fn many_hot_blocks_all_compile() {
    const N: usize = (1 << 14) + 500;
    let code = asm(32, CODE, |a| {
        let mut top = a.create_label();
        a.mov(ecx, 4u32)?;
        a.set_label(&mut top)?;
        for _ in 0..N {
            let mut next = a.create_label();
            a.jmp(next)?;
            a.set_label(&mut next)?;
        }
        a.dec(ecx)?;
        a.jnz(top)?;
        a.hlt()
    });
    let mut m = pm32(&code);
    m.cpu.set_jit_mode(JitMode::On);
    m.cpu.set_jit_threshold(2);
    m.cpu.set_jit_min_insns(1);
    assert_eq!(m.run(1_000_000), RunExit::Halted);
    let stats = m.cpu.jit_stats();
    assert!(stats.compiled >= N as u64, "{stats:?}");
    assert_eq!(stats.cache_flushes, 0, "{stats:?}");
}

/// A budget that ends inside a self-loop block's iterations (and one that ends inside
/// an iteration): compiled code stops where the interpreter's run loop stops.
#[test]
fn budget_ends_inside_a_native_loop() {
    let code = integer_loop32();
    for budget in [1_000, 1_001, 2_777, 4_004] {
        let off = run_mode(&|| pm32(&code), JitMode::Off, budget);
        assert_eq!(off.exit, RunExit::BudgetExhausted);
        let stats = same_under_all_engines(&|| pm32(&code), budget);
        assert!(stats.native_loops > 0, "{stats:?}");
    }
}

#[test]
fn real_mode_loop_matches_the_interpreter() {
    let code = asm(16, 0x1000, |a| {
        let mut top = a.create_label();
        a.mov(si, 0x2000u32)?;
        a.mov(cx, 200u32)?;
        a.set_label(&mut top)?;
        a.add(ax, word_ptr(si))?;
        a.xor(word_ptr(si + 2), ax)?;
        a.adc(dx, cx)?;
        a.shl(ax, 1)?; // not compiled: the interpreter finishes the block
        a.dec(cx)?;
        a.jnz(top)?;
        a.hlt()
    });
    same_under_all_engines(
        &|| {
            let mut m = Machine::real_mode_at(1 << 20, &code, 0x1000);
            fill_data(&mut m);
            m
        },
        100_000,
    );
}

/// A #GP in the middle of a compiled block (a load past the DS limit): the exception
/// frame (EIP, EFLAGS from before the faulting instruction), the registers and the
/// retired count match the interpreter's.
#[test]
fn fault_inside_a_compiled_block_is_exact() {
    let code = asm(32, CODE, |a| {
        let mut top = a.create_label();
        a.mov(esi, DATA as u32)?;
        a.set_label(&mut top)?;
        a.add(eax, 3u32)?;
        a.cmp(eax, 7u32)?;
        a.add(edx, dword_ptr(esi))?;
        a.add(esi, 0x1000u32)?;
        a.jmp(top)
    });
    let handler = asm(32, 0x9000, |a| a.hlt());
    same_under_all_engines(
        &|| {
            let mut m = pm32(&code);
            m.load(0x9000, &handler);
            m.set_gate32(13, 0x9000, 0);
            m.cpu.state.seg[Seg::Ds as usize] = Segment {
                selector: 0x10,
                base: 0,
                limit: 0x3_0000,
                attr: 0x93,
            };
            m
        },
        10_000,
    );
}

/// MMIO reads inside a compiled block see the exact instruction count (the test bus
/// records `retired` at each access as its TSC).
#[test]
fn mmio_inside_a_compiled_block_sees_exact_time() {
    let code = asm(32, CODE, |a| {
        let mut top = a.create_label();
        a.mov(ecx, 50u32)?;
        a.set_label(&mut top)?;
        a.add(eax, ecx)?;
        a.xor(eax, dword_ptr(0x3_0000))?;
        a.mov(dword_ptr(0x3_0010), eax)?;
        a.add(edx, eax)?;
        a.dec(ecx)?;
        a.jnz(top)?;
        a.hlt()
    });
    same_under_all_engines(
        &|| {
            let mut m = pm32(&code);
            m.bus.mmio_pages.push(0x30);
            m
        },
        10_000,
    );
}

/// Self-modifying code: a block rewrites the immediate of one of its own instructions
/// every iteration (it never gets hot), and every fourth iteration the immediate of
/// another block, which is hot and compiled in between: the compiled code must be
/// dropped and the block recompiled each time.
#[test]
fn self_modifying_code_invalidates_compiled_blocks() {
    // Block A at CODE: `add edx, imm32` (immediate at CODE + 2), then back to the loop.
    let main_at = CODE + 0x100;
    let mut a = CodeAssembler::new(32).unwrap();
    let mut top = a.create_label();
    let mut back = a.create_label();
    let mut skip = a.create_label();
    a.mov(ecx, 100u32).unwrap();
    a.set_label(&mut top).unwrap();
    a.add(eax, 0x1111_1111u32).unwrap();
    // The immediate of the ADD just above (after the 5-byte MOV at main_at).
    a.inc(dword_ptr(main_at as u32 + 6)).unwrap();
    a.jmp(CODE).unwrap();
    a.set_label(&mut back).unwrap();
    a.test(ecx, 3u32).unwrap();
    a.jnz(skip).unwrap();
    a.add(dword_ptr(CODE as u32 + 2), ecx).unwrap();
    a.set_label(&mut skip).unwrap();
    a.dec(ecx).unwrap();
    a.jnz(top).unwrap();
    a.hlt().unwrap();
    let res = a
        .assemble_options(
            main_at,
            iced_x86::BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS,
        )
        .unwrap();
    let back_ip = res.label_ip(&back).unwrap();
    let main = res.inner.code_buffer;
    let block_a = asm(32, CODE, |a| {
        a.add(edx, 0x100u32)?;
        a.xor(edx, 0x5555u32)?;
        a.jmp(back_ip)
    });
    let make = || {
        let mut m = pm32(&block_a);
        m.load(main_at, &main);
        m.cpu.state.rip = main_at;
        m
    };
    let off = run_mode(&make, JitMode::Off, 100_000);
    assert_eq!(off.exit, RunExit::Halted);
    let stats = same_under_all_engines(&make, 100_000);
    assert!(
        stats.compiled >= 20,
        "block A recompiled after each patch: {stats:?}"
    );
}

/// Code at CODE that needs the address X of its own label `at_x` (it writes to X):
/// assembled until X stops moving (the second pass sees the final encoding sizes).
fn assemble_with_own_address(emit: impl Fn(&mut CodeAssembler, u64, &mut CodeLabel)) -> Vec<u8> {
    let build = |x: u64| {
        let mut a = CodeAssembler::new(32).unwrap();
        let mut at_x = a.create_label();
        emit(&mut a, x, &mut at_x);
        let res = a
            .assemble_options(
                CODE,
                iced_x86::BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS,
            )
            .unwrap();
        (res.inner.code_buffer.clone(), res.label_ip(&at_x).unwrap())
    };
    let (_, x) = build(CODE + 0x100);
    let (code, x2) = build(x);
    assert_eq!(x, x2);
    code
}

/// A compiled store that rewrites the next instruction of its own block ends the block
/// there (the rest is stale) with the guest flags intact, though the instruction it
/// overwrote would have set them all: the new one (PUSHFD) reads them.
#[test]
fn code_write_ending_a_block_keeps_the_flags() {
    let code = assemble_with_own_address(|a, x, at_x| {
        let mut top = a.create_label();
        let mut block = a.create_label();
        a.mov(esi, DATA as u32).unwrap();
        a.mov(ecx, 40u32).unwrap();
        a.mov(eax, 1u32).unwrap();
        a.mov(ebx, 0x8000_0000u32).unwrap();
        a.set_label(&mut top).unwrap();
        // Put back `xor edx, edx` at X (the block below stays the one decoded).
        a.mov(word_ptr(x as u32), 0xD231u32).unwrap();
        a.jmp(block).unwrap();
        a.set_label(&mut block).unwrap();
        a.cmp(eax, ebx).unwrap();
        // X becomes `pushfd; nop`.
        a.mov(word_ptr(x as u32), 0x909Cu32).unwrap();
        a.set_label(at_x).unwrap();
        a.xor(edx, edx).unwrap();
        a.pop(edx).unwrap();
        a.mov(dword_ptr(esi + ecx * 4), edx).unwrap();
        a.add(eax, 0x0123_4567u32).unwrap();
        a.dec(ecx).unwrap();
        a.jnz(top).unwrap();
        a.hlt().unwrap();
    });
    let stats = same_under_all_engines(&|| pm32(&code), 100_000);
    assert!(stats.native_runs >= 30, "{stats:?}");
}

/// The same through an instruction run by its interpreter handler: a PUSH whose stack
/// write lands on the next instruction (`xor edx, edx` becomes `lahf; nop`; the PUSH's own
/// bytes it overwrites stay as they were).
#[test]
fn handler_code_write_ending_a_block_keeps_the_flags() {
    let code = assemble_with_own_address(|a, x, at_x| {
        let mut top = a.create_label();
        let mut block = a.create_label();
        a.mov(esi, DATA as u32).unwrap();
        a.mov(ecx, 40u32).unwrap();
        a.mov(eax, 1u32).unwrap();
        a.mov(ebx, 0x8000_0000u32).unwrap();
        a.set_label(&mut top).unwrap();
        a.mov(word_ptr(x as u32), 0xD231u32).unwrap();
        a.jmp(block).unwrap();
        a.set_label(&mut block).unwrap();
        a.cmp(eax, ebx).unwrap();
        a.mov(esp, x as u32 + 2).unwrap();
        a.push(0x909F_909Fu32 as i32).unwrap();
        a.set_label(at_x).unwrap();
        a.xor(edx, edx).unwrap();
        a.mov(esp, DATA as u32 + 0x3000).unwrap();
        a.mov(dword_ptr(esi + ecx * 4), eax).unwrap();
        a.add(eax, 0x0123_4567u32).unwrap();
        a.dec(ecx).unwrap();
        a.jnz(top).unwrap();
        a.hlt().unwrap();
    });
    let stats = same_under_all_engines(&|| pm32(&code), 100_000);
    assert!(stats.native_runs >= 30, "{stats:?}");
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn pick(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// SETcc / CMOVcc by condition number.
macro_rules! by_cc {
    ($cc:expr, $a:expr, set, $($o:expr),*) => {
        match $cc {
            0 => $a.seto($($o),*), 1 => $a.setno($($o),*), 2 => $a.setb($($o),*),
            3 => $a.setae($($o),*), 4 => $a.sete($($o),*), 5 => $a.setne($($o),*),
            6 => $a.setbe($($o),*), 7 => $a.seta($($o),*), 8 => $a.sets($($o),*),
            9 => $a.setns($($o),*), 10 => $a.setp($($o),*), 11 => $a.setnp($($o),*),
            12 => $a.setl($($o),*), 13 => $a.setge($($o),*), 14 => $a.setle($($o),*),
            _ => $a.setg($($o),*),
        }
    };
    ($cc:expr, $a:expr, cmov, $($o:expr),*) => {
        match $cc {
            0 => $a.cmovo($($o),*), 1 => $a.cmovno($($o),*), 2 => $a.cmovb($($o),*),
            3 => $a.cmovae($($o),*), 4 => $a.cmove($($o),*), 5 => $a.cmovne($($o),*),
            6 => $a.cmovbe($($o),*), 7 => $a.cmova($($o),*), 8 => $a.cmovs($($o),*),
            9 => $a.cmovns($($o),*), 10 => $a.cmovp($($o),*), 11 => $a.cmovnp($($o),*),
            12 => $a.cmovl($($o),*), 13 => $a.cmovge($($o),*), 14 => $a.cmovle($($o),*),
            _ => $a.cmovg($($o),*),
        }
    };
}

/// One random instruction for the lockstep fuzz: EBX is the data pointer and ECX the
/// loop counter, so neither is a destination.
fn random_insn(a: &mut CodeAssembler, r: &mut Rng) -> Result<(), IcedError> {
    let d32 = [eax, edx, esi, edi, ebp];
    let s32 = [eax, ebx, ecx, edx, esi, edi, ebp];
    let d16 = [ax, dx, si, di, bp];
    let d8 = [al, dl, ah, dh];
    let dst = d32[r.pick(5) as usize];
    let src = s32[r.pick(7) as usize];
    let mem = dword_ptr(ebx + (r.pick(64) as i32) * 4);
    let mem16 = word_ptr(ebx + (r.pick(64) as i32) * 4 + 1);
    let mem8 = byte_ptr(ebx + r.pick(256) as i32);
    let imm = r.next() as u32;
    let imm8 = r.next() as u8 as u32;
    match r.pick(30) {
        0 => a.add(dst, src),
        1 => a.sub(dst, imm),
        2 => a.adc(dst, mem),
        3 => a.sbb(mem, dst),
        4 => a.and(dst, src),
        5 => a.or(mem, imm),
        6 => a.xor(dst, mem),
        7 => a.cmp(dst, src),
        8 => a.test(mem, dst),
        9 => a.inc(dst),
        10 => a.dec(mem),
        11 => a.neg(dst),
        12 => a.not(mem),
        13 => a.mov(dst, mem),
        14 => a.mov(mem, src),
        15 => a.movzx(dst, d8[r.pick(4) as usize]),
        16 => a.movsx(dst, d16[r.pick(5) as usize]),
        17 => a.lea(dst, dword_ptr(src + dst * 4 + 0x1234)),
        18 => {
            let cc = r.pick(16);
            if r.pick(2) == 0 {
                by_cc!(cc, a, set, d8[r.pick(4) as usize])
            } else {
                by_cc!(cc, a, set, mem8)
            }
        }
        19 => {
            let cc = r.pick(16);
            if r.pick(2) == 0 {
                by_cc!(cc, a, cmov, dst, src)
            } else {
                by_cc!(cc, a, cmov, dst, mem)
            }
        }
        20 => a.add(d16[r.pick(5) as usize], imm8),
        21 => a.sub(mem16, d16[r.pick(5) as usize]),
        22 => a.xor(d8[r.pick(4) as usize], d8[r.pick(4) as usize]),
        23 => a.adc(mem8, imm8),
        24 => {
            a.push(src)?;
            a.pop(dst)
        }
        25 => a.mov(dst, imm),
        26 => a.cmp(mem8, imm8),
        27 => a.shl(dst, imm8 & 7), // ends the compiled prefix
        28 => a.sbb(d16[r.pick(5) as usize], mem16),
        _ => a.neg(mem16),
    }
}

/// Lockstep fuzz: random blocks of the compiled subset (plus a few it does not compile)
/// in a loop, in 32-bit protected and 16-bit real mode, under verify mode (every native
/// run re-checked by the interpreter) and against a pure interpreter run.
#[test]
fn random_blocks_match_the_interpreter() {
    let iters: u64 = std::env::var("AERO_JIT_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150);
    let mut r = Rng(0x5EED_1234_ABCD_0001);
    let mut native = 0;
    for it in 0..iters {
        let bitness = if it % 3 == 2 { 16 } else { 32 };
        let len = 1 + r.pick(20);
        let seed = r.next();
        let mut g = Rng(seed | 1);
        let base = if bitness == 16 { 0x1000u64 } else { CODE };
        let code = asm(bitness, base, |a| {
            let mut top = a.create_label();
            a.mov(ecx, 40u32)?;
            a.mov(
                ebx,
                if bitness == 16 {
                    0x2000u32
                } else {
                    DATA as u32
                },
            )?;
            a.set_label(&mut top)?;
            for _ in 0..len {
                random_insn(a, &mut g)?;
            }
            a.dec(ecx)?;
            a.jnz(top)?;
            a.hlt()
        });
        let regs: Vec<u64> = (0..8).map(|_| r.next() & 0xFFFF_FFFF).collect();
        let flags = r.next() & 0x8D5;
        let make = || {
            let mut m = if bitness == 16 {
                Machine::real_mode_at(1 << 20, &code, base)
            } else {
                pm32(&code)
            };
            fill_data(&mut m);
            for (k, v) in regs.iter().enumerate() {
                if k != 4 {
                    m.cpu.state.gpr[k] = if bitness == 16 { v & 0xFFFF } else { *v };
                }
            }
            m.cpu.state.rflags = 2 | flags;
            m
        };
        if std::env::var("AERO_JIT_FUZZ_ONLY").is_ok_and(|v| v.parse::<u64>().ok() != Some(it)) {
            continue;
        }
        let off = run_mode(&make, JitMode::Off, 20_000);
        let ver = run_mode(&make, JitMode::Verify, 20_000);
        native += ver.stats.native_runs;
        assert_eq!(
            ver.state, off.state,
            "iteration {it} (seed {seed:#x}): state"
        );
        assert_eq!(ver.retired, off.retired, "iteration {it}: retired");
        assert!(ver.ram == off.ram, "iteration {it}: RAM");
        assert_eq!(ver.exit, off.exit, "iteration {it}: exit");
    }
    assert!(native > iters * 10, "compiled code ran only {native} times");
}
