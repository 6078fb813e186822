//! Bounded fuzz run: random code and random (often inconsistent) CPU state must never
//! panic the host. `AERO_CPU_FUZZ_ITERS` runs more iterations.

mod common;
use aero_cpu::{Cpu, Segment};
use common::TestBus;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn pick(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_segment(r: &mut Rng) -> Segment {
    let attr = match r.pick(4) {
        0 => 0x93,
        1 => 0xC93,
        2 => 0xF3,
        _ => r.next() as u16,
    };
    Segment {
        selector: r.next() as u16,
        base: r.pick(0x10_0000),
        limit: if r.pick(2) == 0 { 0xFFFF } else { 0xFFFF_FFFF },
        attr,
    }
}

#[test]
fn random_code_and_state_never_panic() {
    let iters: u64 = std::env::var("AERO_CPU_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let seed = std::env::var("AERO_CPU_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x00C0_FFEE_1234_5678u64);
    let mut r = Rng(seed | 1);
    let mut ram = vec![0u8; 1 << 20];
    let mut outcomes = [0u32; 4];
    for _ in 0..iters {
        // Fresh random memory in a few regions (code, tables, stack).
        for _ in 0..64 {
            let base = r.pick((1 << 20) - 4096) as usize;
            for b in &mut ram[base..base + 64] {
                *b = r.next() as u8;
            }
        }
        let mut cpu = Cpu::new();
        let s = &mut cpu.state;
        for g in s.gpr.iter_mut() {
            *g = if r.pick(2) == 0 {
                r.pick(0x10_0000)
            } else {
                r.next()
            };
        }
        s.rip = r.pick(0x10_0000);
        for k in 0..6 {
            s.seg[k] = random_segment(&mut r);
        }
        let mode = r.pick(5);
        s.cr0 = match mode {
            0 => 0x10,
            1 => 0x11,
            2 => 0x8000_0011,
            _ => 0x8000_0011 | (r.next() & 0x6005_002E),
        };
        if mode >= 3 {
            s.cr4 = r.next() & 0x7FF;
            s.efer = r.next() & 0xD01;
            if s.efer & 0x400 != 0 {
                s.cr4 |= 0x20;
            }
        }
        s.cr3 = r.pick(0x10_0000) & !0xFFF;
        s.gdtr.base = r.pick(0x10_0000);
        s.gdtr.limit = r.next() as u16;
        s.idtr.base = r.pick(0x10_0000);
        s.idtr.limit = r.next() as u16;
        s.tr = random_segment(&mut r);
        s.ldtr = random_segment(&mut r);
        s.rflags = (r.next() & 0x3F_7FD7) | 2;
        s.cpl = (r.pick(4)) as u8;
        let mut bus = TestBus::new(1 << 20);
        if r.pick(4) == 0 {
            bus.irq = Some(r.next() as u8);
        }
        cpu.flush_all_caches();
        let exit = cpu.run(&mut ram, &mut bus, 200);
        let k = match exit {
            aero_cpu::RunExit::BudgetExhausted => 0,
            aero_cpu::RunExit::Halted => 1,
            aero_cpu::RunExit::StopRequested => 2,
            aero_cpu::RunExit::Shutdown { .. } => 3,
        };
        outcomes[k] += 1;
        assert!(cpu.instructions_retired() <= 200 + 1);
    }
    // The generator must exercise more than one outcome to be meaningful.
    assert!(
        outcomes.iter().filter(|&&n| n > 0).count() >= 2,
        "outcomes {outcomes:?}"
    );
}
