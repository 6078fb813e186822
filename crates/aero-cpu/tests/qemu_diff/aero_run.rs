//! Runs a test image on `aero_cpu::Cpu` with a minimal bus: flat RAM, the debug console
//! and the exit port. A case that crashes or hangs the CPU is reported and the image is
//! restarted after it, so one bad instruction does not hide the rest of the batch.

use aero_cpu::{Bus, Cpu, PageMapping, RunExit, Segment};

use super::image::Image;
use super::layout::*;
use super::record::{self, Record};

struct TestBus {
    ram_len: u64,
    out: Vec<u8>,
    exit: bool,
    tsc: u64,
}

impl Bus for TestBus {
    fn map_page(&self, paddr: u64) -> PageMapping {
        if paddr < self.ram_len {
            PageMapping::Ram {
                offset: (paddr & !0xFFF) as usize,
            }
        } else {
            PageMapping::Mmio
        }
    }
    fn mmio_read(&mut self, _paddr: u64, _size: u8) -> u64 {
        u64::MAX
    }
    fn mmio_write(&mut self, _paddr: u64, _size: u8, _value: u64) {}
    fn io_read(&mut self, _port: u16, _size: u8) -> u32 {
        u32::MAX
    }
    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        match port {
            DEBUGCON_PORT
                // Bounded: a runaway guest cannot grow this without limit.
                if self.out.len() < 256 << 20 => {
                    self.out
                        .extend_from_slice(&value.to_le_bytes()[..(size as usize).min(4)]);
                }
            EXIT_PORT => self.exit = true,
            _ => {}
        }
    }
    fn sync_time(&mut self, instructions_retired: u64) {
        self.tsc = instructions_retired;
    }
    fn tsc(&mut self) -> u64 {
        self.tsc
    }
    fn interrupt_pending(&mut self) -> bool {
        false
    }
    fn acknowledge_interrupt(&mut self) -> u8 {
        0
    }
    fn stop_requested(&mut self) -> bool {
        self.exit
    }
}

/// The state a multiboot loader hands over: flat 32-bit protected mode, paging off.
fn multiboot_cpu(entry: u32) -> Cpu {
    let mut cpu = Cpu::new();
    let code = Segment {
        selector: 0x08,
        base: 0,
        limit: 0xFFFF_FFFF,
        attr: 0xC9B,
    };
    let data = Segment {
        selector: 0x10,
        base: 0,
        limit: 0xFFFF_FFFF,
        attr: 0xC93,
    };
    let s = &mut cpu.state;
    s.seg = [data, code, data, data, data, data];
    s.cr0 = 0x11;
    s.rip = entry as u64;
    s.rflags = 0x2;
    s.gpr = [0; 16];
    s.gpr[0] = 0x2BAD_B002;
    s.cpl = 0;
    cpu
}

/// Why a run stopped before the END marker.
fn run_once(bytes: &[u8], entry: u32) -> (Vec<u8>, Option<String>) {
    let mut ram = vec![0u8; RAM_MIB << 20];
    let base = IMAGE_BASE as usize;
    ram[base..base + bytes.len()].copy_from_slice(bytes);
    let mut bus = TestBus {
        ram_len: ram.len() as u64,
        out: Vec::new(),
        exit: false,
        tsc: 0,
    };
    let mut cpu = multiboot_cpu(entry);
    const SLICE: u64 = 1_000_000;
    // A case plus its record is a few thousand instructions; no output for this long = hung.
    const STALL: u64 = 20_000_000;
    let mut last_len = 0;
    let mut idle = 0u64;
    let mut total = 0u64;
    loop {
        let exit = cpu.run(&mut ram, &mut bus, SLICE);
        total += SLICE;
        if bus.exit {
            return (bus.out, None);
        }
        match exit {
            RunExit::BudgetExhausted | RunExit::StopRequested => {}
            RunExit::Halted => {
                return (bus.out, Some(format!("CPU halted at {:#x}", cpu.state.rip)));
            }
            RunExit::Shutdown {
                reason,
                cs,
                rip,
                last_exception,
            } => {
                return (
                    bus.out,
                    Some(format!(
                        "shutdown at {cs:04x}:{rip:#x} ({reason}, last exception {last_exception:?})"
                    )),
                );
            }
        }
        if bus.out.len() == last_len {
            idle += SLICE;
            if idle >= STALL {
                return (
                    bus.out,
                    Some(format!(
                        "no progress for {STALL} instructions, RIP {:#x}",
                        cpu.state.rip
                    )),
                );
            }
        } else {
            last_len = bus.out.len();
            idle = 0;
        }
        if total > 4_000_000_000 {
            return (bus.out, Some("instruction budget exhausted".into()));
        }
    }
}

pub struct AeroResult {
    pub records: Vec<Record>,
    /// Cases after which Aero crashed or hung: (case id, what happened).
    pub crashed: Vec<(u32, String)>,
}

pub fn run(image: &Image) -> AeroResult {
    // Run order: (chunk, index in chunk, id).
    let order: Vec<(u32, u32, u32)> = image
        .chunks
        .iter()
        .enumerate()
        .flat_map(|(ci, c)| {
            c.ids
                .iter()
                .enumerate()
                .map(move |(k, &id)| (ci as u32, k as u32, id))
        })
        .collect();
    let mut records = Vec::new();
    let mut crashed = Vec::new();
    let mut pos = 0usize;
    while pos < order.len() {
        let (chunk, case, _) = order[pos];
        let (out, stop) = run_once(&image.with_start(chunk, case), image.entry);
        let parsed = record::parse(&out);
        let got = parsed.records.len();
        records.extend(parsed.records);
        if parsed.complete {
            break;
        }
        // The case after the last complete record is the one that broke the run.
        let bad = pos + got;
        let Some(&(_, _, id)) = order.get(bad) else {
            break;
        };
        let why = stop.unwrap_or_else(|| "output ended without the END marker".into());
        let why = match parsed.garbage_at {
            Some(at) => format!("{why}; unparsable output at byte {at}"),
            None => why,
        };
        crashed.push((id, why));
        pos = bad + 1;
    }
    AeroResult { records, crashed }
}
