//! Interpreter throughput on small CPU-bound guest loops (32-bit protected mode, flat).
//! Run with `cargo run --release -p aero-cpu --example mips`.

use aero_cpu::{Bus, Cpu, PageMapping, RunExit, Seg, Segment};
use iced_x86::code_asm::*;
use std::time::Instant;

struct FlatBus;

impl Bus for FlatBus {
    fn map_page(&self, paddr: u64) -> PageMapping {
        if paddr < (16 << 20) { PageMapping::Ram { offset: (paddr & !0xFFF) as usize } } else { PageMapping::Mmio }
    }
    fn mmio_read(&mut self, _: u64, _: u8) -> u64 {
        u64::MAX
    }
    fn mmio_write(&mut self, _: u64, _: u8, _: u64) {}
    fn io_read(&mut self, _: u16, _: u8) -> u32 {
        0xFFFF_FFFF
    }
    fn io_write(&mut self, _: u16, _: u8, _: u32) {}
    fn tsc(&mut self) -> u64 {
        0
    }
    fn interrupt_pending(&mut self) -> bool {
        false
    }
    fn acknowledge_interrupt(&mut self) -> u8 {
        0
    }
    fn stop_requested(&mut self) -> bool {
        false
    }
}

fn bench(name: &str, f: impl FnOnce(&mut CodeAssembler) -> Result<(), iced_x86::IcedError>) {
    // AERO_MIPS_ONLY=<name prefix> runs one benchmark (e.g. under callgrind).
    if let Ok(only) = std::env::var("AERO_MIPS_ONLY") {
        if !name.starts_with(only.as_str()) {
            return;
        }
    }
    let mut a = CodeAssembler::new(32).unwrap();
    f(&mut a).unwrap();
    let code = a.assemble(0x1000).unwrap();
    let mut ram = vec![0u8; 16 << 20];
    ram[0x1000..0x1000 + code.len()].copy_from_slice(&code);
    let mut cpu = Cpu::new();
    let s = &mut cpu.state;
    s.cr0 = 0x11;
    s.seg[Seg::Cs as usize] = Segment { selector: 8, base: 0, limit: 0xFFFF_FFFF, attr: 0xC9B };
    for sg in [Seg::Es, Seg::Ss, Seg::Ds, Seg::Fs, Seg::Gs] {
        s.seg[sg as usize] = Segment { selector: 0x10, base: 0, limit: 0xFFFF_FFFF, attr: 0xC93 };
    }
    s.rip = 0x1000;
    s.gpr[4] = 0x80000;
    let mut bus = FlatBus;
    let budget: u64 = std::env::var("AERO_MIPS_BUDGET").ok().and_then(|v| v.parse().ok()).unwrap_or(200_000_000);
    let t = Instant::now();
    let exit = cpu.run(&mut ram, &mut bus, budget);
    let dt = t.elapsed().as_secs_f64();
    let n = cpu.instructions_retired();
    println!("{name:<14} {:>8.1} MIPS  ({n} instructions in {dt:.2}s, exit {exit:?})", n as f64 / dt / 1e6);
    assert_eq!(exit, RunExit::BudgetExhausted);
}

fn main() {
    bench("integer loop", |a| {
        let mut top = a.create_label();
        a.xor(eax, eax)?;
        a.mov(ebx, 3u32)?;
        a.set_label(&mut top)?;
        a.add(eax, ebx)?;
        a.xor(edx, eax)?;
        a.inc(ecx)?;
        a.cmp(ecx, 0x7FFF_FFFFu32)?;
        a.jne(top)
    });
    bench("memory copy", |a| {
        let mut top = a.create_label();
        a.set_label(&mut top)?;
        a.mov(esi, 0x10_0000u32)?;
        a.mov(edi, 0x20_0000u32)?;
        a.mov(ecx, 256u32)?;
        let mut inner = a.create_label();
        a.set_label(&mut inner)?;
        a.mov(eax, dword_ptr(esi))?;
        a.mov(dword_ptr(edi), eax)?;
        a.add(esi, 4u32)?;
        a.add(edi, 4u32)?;
        a.dec(ecx)?;
        a.jnz(inner)?;
        a.jmp(top)
    });
    bench("branchy", |a| {
        let mut top = a.create_label();
        let mut odd = a.create_label();
        let mut join = a.create_label();
        let mut sub = a.create_label();
        a.set_label(&mut top)?;
        a.inc(ecx)?;
        a.test(ecx, 1u32)?;
        a.jnz(odd)?;
        a.add(eax, ecx)?;
        a.jmp(join)?;
        a.set_label(&mut odd)?;
        a.sub(ebx, ecx)?;
        a.set_label(&mut join)?;
        a.push(eax)?;
        a.pop(edx)?;
        a.call(sub)?;
        a.jmp(top)?;
        a.set_label(&mut sub)?;
        a.ret()
    });
}
