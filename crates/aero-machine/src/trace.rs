//! Instruction tracing for debugging guests: `AERO_TRACE=START,COUNT` logs CPU state
//! before each of COUNT instructions starting at retired-instruction number START;
//! `AERO_TRACE=sample,N` logs where the CPU is every N instructions (a cheap profile).

use aero_cpu::{Cpu, PageMapping, Reg, Seg};
use iced_x86::{Decoder, DecoderOptions, FastFormatter, Instruction};

use crate::memory_map::MemoryMap;

pub struct TraceWindow {
    start: u64,
    end: u64,
    /// Sampling mode: the period and the next retired count to log at.
    sample: Option<(u64, u64)>,
}

impl TraceWindow {
    pub fn from_env() -> Option<TraceWindow> {
        let spec = std::env::var("AERO_TRACE").ok()?;
        let (a, b) = spec.split_once(',')?;
        if a.trim() == "sample" {
            let every: u64 = b.trim().parse().ok().filter(|&n| n > 0)?;
            return Some(TraceWindow {
                start: u64::MAX,
                end: u64::MAX,
                sample: Some((every, every)),
            });
        }
        let start: u64 = a.trim().parse().ok()?;
        let count: u64 = b.trim().parse().ok()?;
        Some(TraceWindow {
            start,
            end: start.saturating_add(count),
            sample: None,
        })
    }

    /// Inside the window the CPU runs one instruction at a time; before it, up to START.
    pub fn limit_budget(&self, retired: u64, budget: u64) -> u64 {
        if let Some((_, next)) = self.sample {
            return budget.min(next.saturating_sub(retired).max(1));
        }
        if retired >= self.start && retired < self.end {
            1
        } else if retired < self.start {
            budget.min(self.start - retired)
        } else {
            budget
        }
    }

    pub fn log(&mut self, cpu: &Cpu, memory: &[u8], map: &MemoryMap) {
        let retired = cpu.instructions_retired();
        if let Some((every, next)) = &mut self.sample {
            if retired >= *next {
                let st = &cpu.state;
                eprintln!(
                    "[{retired}] {:04x}:{:016x}",
                    st.seg[Seg::Cs as usize].selector,
                    st.rip
                );
                *next = (retired / *every + 1) * *every;
            }
            return;
        }
        if retired < self.start || retired >= self.end {
            return;
        }
        let st = &cpu.state;
        let cs = st.seg[Seg::Cs as usize];
        let bitness = if cs.long() {
            64
        } else if cs.db() {
            32
        } else {
            16
        };
        let linear = cs.base.wrapping_add(st.rip);
        let phys = |a: u64| -> Option<u8> {
            match map.map_page(a) {
                PageMapping::Ram { offset } | PageMapping::Rom { offset } => {
                    memory.get(offset + (a & 0xFFF) as usize).copied()
                }
                PageMapping::Mmio => None,
            }
        };
        let mut bytes = [0u8; 15];
        for (i, b) in bytes.iter_mut().enumerate() {
            let a = linear.wrapping_add(i as u64);
            *b = peek_translate(cpu, a, &phys)
                .and_then(&phys)
                .unwrap_or(0xFF);
        }
        let mut decoder = Decoder::with_ip(bitness, &bytes, st.rip, DecoderOptions::NONE);
        let mut insn = Instruction::default();
        decoder.decode_out(&mut insn);
        let mut text = String::new();
        FastFormatter::new().format(&insn, &mut text);
        let r = |x: Reg| st.reg(x);
        let mut regs = String::new();
        if bitness == 64 {
            let all = [
                ("rax", Reg::Rax),
                ("rbx", Reg::Rbx),
                ("rcx", Reg::Rcx),
                ("rdx", Reg::Rdx),
                ("rsi", Reg::Rsi),
                ("rdi", Reg::Rdi),
                ("rbp", Reg::Rbp),
                ("rsp", Reg::Rsp),
                ("r8", Reg::R8),
                ("r9", Reg::R9),
                ("r10", Reg::R10),
                ("r11", Reg::R11),
                ("r12", Reg::R12),
                ("r13", Reg::R13),
                ("r14", Reg::R14),
                ("r15", Reg::R15),
            ];
            for (name, reg) in all {
                regs.push_str(&format!(" {name}={:x}", r(reg)));
            }
            regs.push_str(&format!(" fl={:05x} cr3={:x}", st.rflags, st.cr3));
        } else {
            let all = [
                ("eax", Reg::Rax),
                ("ebx", Reg::Rbx),
                ("ecx", Reg::Rcx),
                ("edx", Reg::Rdx),
                ("esi", Reg::Rsi),
                ("edi", Reg::Rdi),
                ("ebp", Reg::Rbp),
                ("esp", Reg::Rsp),
            ];
            for (name, reg) in all {
                regs.push_str(&format!(" {name}={:08x}", r(reg) as u32));
            }
            regs.push_str(&format!(" fl={:05x}", st.rflags));
        }
        let width = if bitness == 64 { 16 } else { 8 };
        eprintln!(
            "[{retired}] {:04x}:{:0width$x} {text:<32}{regs}",
            cs.selector, st.rip
        );
    }
}

/// Linear → physical for display only: reads the page tables without setting accessed
/// bits or checking permissions. None when the address is not mapped.
fn peek_translate(cpu: &Cpu, lin: u64, phys: &dyn Fn(u64) -> Option<u8>) -> Option<u64> {
    let st = &cpu.state;
    if st.cr0 & (1 << 31) == 0 {
        return Some(lin);
    }
    let read = |a: u64, n: usize| -> Option<u64> {
        let mut v = 0u64;
        for i in 0..n {
            v |= u64::from(phys(a + i as u64)?) << (8 * i);
        }
        Some(v)
    };
    let addr_mask = 0x000F_FFFF_FFFF_F000u64;
    if st.cr4 & (1 << 5) == 0 {
        // 2-level, 4 KiB and PSE 4 MiB pages.
        let pde = read((st.cr3 & 0xFFFF_F000) + ((lin >> 22) & 0x3FF) * 4, 4)?;
        if pde & 1 == 0 {
            return None;
        }
        if pde & 0x80 != 0 && st.cr4 & (1 << 4) != 0 {
            return Some((pde & 0xFFC0_0000) | (lin & 0x3F_FFFF));
        }
        let pte = read((pde & 0xFFFF_F000) + ((lin >> 12) & 0x3FF) * 4, 4)?;
        return (pte & 1 != 0).then_some((pte & 0xFFFF_F000) | (lin & 0xFFF));
    }
    let long = st.efer & (1 << 10) != 0;
    let mut table;
    let levels: &[u32] = if long {
        table = st.cr3 & addr_mask;
        &[39, 30, 21, 12]
    } else {
        let pdpte = read((st.cr3 & 0xFFFF_FFE0) + ((lin >> 30) & 3) * 8, 8)?;
        if pdpte & 1 == 0 {
            return None;
        }
        table = pdpte & addr_mask;
        &[21, 12]
    };
    for &shift in levels {
        let e = read(table + ((lin >> shift) & 0x1FF) * 8, 8)?;
        if e & 1 == 0 {
            return None;
        }
        if shift != 12 && shift != 39 && e & 0x80 != 0 {
            let size = 1u64 << shift;
            return Some((e & addr_mask & !(size - 1)) | (lin & (size - 1)));
        }
        table = e & addr_mask;
    }
    Some(table | (lin & 0xFFF))
}
