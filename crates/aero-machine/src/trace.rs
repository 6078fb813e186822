//! Instruction tracing for debugging guests: `AERO_TRACE=START,COUNT` logs CPU state
//! before each of COUNT instructions starting at retired-instruction number START.

use aero_cpu::{Cpu, PageMapping, Reg, Seg};
use iced_x86::{Decoder, DecoderOptions, FastFormatter, Instruction};

use crate::memory_map::MemoryMap;

pub struct TraceWindow {
    start: u64,
    end: u64,
}

impl TraceWindow {
    pub fn from_env() -> Option<TraceWindow> {
        let spec = std::env::var("AERO_TRACE").ok()?;
        let (a, b) = spec.split_once(',')?;
        let start: u64 = a.trim().parse().ok()?;
        let count: u64 = b.trim().parse().ok()?;
        Some(TraceWindow { start, end: start.saturating_add(count) })
    }

    /// Inside the window the CPU runs one instruction at a time; before it, up to START.
    pub fn limit_budget(&self, retired: u64, budget: u64) -> u64 {
        if retired >= self.start && retired < self.end {
            1
        } else if retired < self.start {
            budget.min(self.start - retired)
        } else {
            budget
        }
    }

    pub fn log(&self, cpu: &Cpu, memory: &[u8], map: &MemoryMap) {
        let retired = cpu.instructions_retired();
        if retired < self.start || retired >= self.end {
            return;
        }
        let st = &cpu.state;
        let cs = st.seg[Seg::Cs as usize];
        let bitness = if cs.long() { 64 } else if cs.db() { 32 } else { 16 };
        // Paging is not walked here: the bytes shown are those at the linear address
        // taken as physical, which is right for real mode and identity-mapped code.
        let linear = cs.base.wrapping_add(st.rip);
        let mut bytes = [0u8; 15];
        for (i, b) in bytes.iter_mut().enumerate() {
            let a = linear.wrapping_add(i as u64);
            *b = match map.map_page(a) {
                PageMapping::Ram { offset } | PageMapping::Rom { offset } => {
                    memory.get(offset + (a & 0xFFF) as usize).copied().unwrap_or(0xFF)
                }
                PageMapping::Mmio => 0xFF,
            };
        }
        let mut decoder = Decoder::with_ip(bitness, &bytes, st.rip, DecoderOptions::NONE);
        let mut insn = Instruction::default();
        decoder.decode_out(&mut insn);
        let mut text = String::new();
        FastFormatter::new().format(&insn, &mut text);
        let r = |x: Reg| st.reg(x);
        eprintln!(
            "[{retired}] {:04x}:{:08x} {text:<32} eax={:08x} ebx={:08x} ecx={:08x} edx={:08x} esi={:08x} edi={:08x} ebp={:08x} esp={:08x} fl={:05x}",
            cs.selector,
            st.rip,
            r(Reg::Rax),
            r(Reg::Rbx),
            r(Reg::Rcx),
            r(Reg::Rdx),
            r(Reg::Rsi),
            r(Reg::Rdi),
            r(Reg::Rbp),
            r(Reg::Rsp),
            st.rflags
        );
    }
}
