//! INT 10h the way Windows x64 runs it: the HAL's own 386-class real-mode emulator sees
//! only the IVT/BDA copy (0–7FFh), a transfer page at 20000h, 90000h–FFFFFh and the
//! adapter's ports and legacy memory; its stack is 0000:0800 and the call starts and ends
//! at a stub at 0000:0500. Every INT 10h function the ROM offers runs twice on Aero's CPU:
//! on a bus with exactly that memory model (any other access fails the test, naming the
//! address and the function) and on a normal one (all of the first MiB, the LFB); the
//! registers, buffers, low memory, VGA register file, planes and framebuffer must agree.
//!
//! A second test decodes the whole code section of the ROM and checks it needs nothing
//! beyond a 386 in real mode and calls no interrupt but 10h (the HAL's emulator has no
//! BIOS behind INT 13h/15h/1Ah).

use std::collections::BTreeSet;

use aero_cpu::{Bus, Cpu, PageMapping, Reg, RunExit, Seg};
use aero_gpu::Vga;
use aero_gpu::vga::LFB_SIZE;
use iced_x86::{CpuidFeature, Decoder, DecoderOptions, Mnemonic, OpKind};

use super::rom::build_with_symbols;
use super::test_rig::{
    self, RAM_SIZE, ROM_BASE, adapter_io_read, adapter_io_write, ram_calling_init,
};

const LFB_BASE: u64 = test_rig::LFB_BASE as u64;
/// The HAL emulator's visible memory, besides the ROM and the VGA window.
const LOW_COPY_END: u64 = 0x800;
const TRANSFER_PAGE: u64 = 0x20000;
const TRANSFER_SEGMENT: u16 = 0x2000;
const HIGH_RAM: u64 = 0x90000;
/// The stub the call starts from (INT 10h; HLT) and the stack the HAL gives it.
const HAL_STUB: u64 = 0x500;
const HAL_STACK: u64 = 0x800;
/// The normal run's stub and stack: well away from the HAL's.
const FULL_STUB: u64 = 0x7000;
const FULL_STACK: u64 = 0x8000;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Model {
    /// A PC: the whole first MiB is RAM, the LFB is mapped.
    Full,
    /// The x64 HAL's emulator.
    HalEmulator,
}

struct EmuBus {
    model: Model,
    vga: Vga,
    lfb: Vec<u8>,
    /// Page 0 in the HAL model (the CPU sees it as MMIO so every access is checked).
    low_page: Vec<u8>,
    pci_address: u32,
    rom_len: usize,
    /// The INT 10h function being run, for violation messages.
    function: String,
    violations: BTreeSet<String>,
    /// Lowest address written in the HAL stack area 500h–7FFh (stack depth).
    lowest_stack_write: u64,
}

impl EmuBus {
    fn violation(&mut self, what: String) {
        if self.violations.len() < 64 {
            self.violations
                .insert(format!("{what} during {}", self.function));
        }
    }

    /// The adapter's legacy window, or (in a VBE mode) the framebuffer bank it shows.
    fn bank_index(&self, a: u64) -> Option<usize> {
        let offset = (a - 0xA0000) as usize;
        match self.vga.vbe_bank_window() {
            Some(bank) if offset < aero_gpu::vga::BANK_SIZE => {
                Some(bank + offset).filter(|&i| i < self.lfb.len())
            }
            _ => None,
        }
    }

    fn read_byte(&mut self, a: u64) -> u8 {
        match a {
            0xA0000..=0xBFFFF => match self.bank_index(a) {
                Some(i) => self.lfb[i],
                None => self.vga.mem_read((a - 0xA0000) as u32),
            },
            _ if (LFB_BASE..LFB_BASE + LFB_SIZE as u64).contains(&a) => {
                if self.model == Model::HalEmulator {
                    self.violation(format!("LFB read {a:#x}"));
                }
                self.lfb[(a - LFB_BASE) as usize]
            }
            _ if self.model == Model::HalEmulator && a < LOW_COPY_END => self.low_page[a as usize],
            _ => {
                self.violation(format!("read of unmapped {a:#x}"));
                0xFF
            }
        }
    }

    fn write_byte(&mut self, a: u64, v: u8) {
        match a {
            0xA0000..=0xBFFFF => match self.bank_index(a) {
                Some(i) => self.lfb[i] = v,
                None => self.vga.mem_write((a - 0xA0000) as u32, v),
            },
            _ if (LFB_BASE..LFB_BASE + LFB_SIZE as u64).contains(&a) => {
                if self.model == Model::HalEmulator {
                    self.violation(format!("LFB write {a:#x}"));
                }
                self.lfb[(a - LFB_BASE) as usize] = v;
            }
            _ if self.model == Model::HalEmulator && a < LOW_COPY_END => {
                if a >= HAL_STUB {
                    self.lowest_stack_write = self.lowest_stack_write.min(a);
                }
                self.low_page[a as usize] = v;
            }
            _ => self.violation(format!("write of unmapped {a:#x}")),
        }
    }

    fn port_allowed(port: u16) -> bool {
        // The adapter's ports, DISPI and PCI configuration (the HAL passes port I/O
        // through to the hardware); nothing else (no PIT, speaker, POST port delays).
        matches!(port, 0x3B0..=0x3DF | 0x1CE..=0x1D0 | 0xCF8..=0xCFF)
    }
}

impl Bus for EmuBus {
    fn map_page(&self, paddr: u64) -> PageMapping {
        let page = paddr & !0xFFF;
        let rom = ROM_BASE as u64..(ROM_BASE + self.rom_len) as u64;
        match self.model {
            _ if (0xA0000..0xC0000).contains(&page) => PageMapping::Mmio,
            _ if rom.contains(&page) => PageMapping::Rom {
                offset: page as usize,
            },
            Model::Full if page < RAM_SIZE as u64 => PageMapping::Ram {
                offset: page as usize,
            },
            Model::HalEmulator
                if page == TRANSFER_PAGE || (HIGH_RAM..RAM_SIZE as u64).contains(&page) =>
            {
                PageMapping::Ram {
                    offset: page as usize,
                }
            }
            _ => PageMapping::Mmio,
        }
    }
    fn mmio_read(&mut self, paddr: u64, size: u8) -> u64 {
        (0..u64::from(size)).fold(0, |acc, i| {
            acc | u64::from(self.read_byte(paddr + i)) << (8 * i)
        })
    }
    fn mmio_write(&mut self, paddr: u64, size: u8, value: u64) {
        for i in 0..u64::from(size) {
            self.write_byte(paddr + i, (value >> (8 * i)) as u8);
        }
    }
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        if !Self::port_allowed(port) {
            self.violation(format!("IN from port {port:#x}"));
        }
        adapter_io_read(&mut self.vga, self.pci_address, port, size)
    }
    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        if !Self::port_allowed(port) {
            self.violation(format!("OUT to port {port:#x}"));
        }
        adapter_io_write(&mut self.vga, &mut self.pci_address, port, size, value)
    }
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

struct Emu {
    cpu: Cpu,
    ram: Vec<u8>,
    bus: EmuBus,
}

/// The caller's registers for one call (the HAL's X86_BIOS_REGISTERS).
#[derive(Clone, Copy, Default)]
struct Regs {
    ax: u16,
    bx: u16,
    cx: u16,
    dx: u16,
    si: u16,
    di: u16,
    bp: u16,
    ds: u16,
    es: u16,
}

fn r(ax: u16, bx: u16, cx: u16, dx: u16) -> Regs {
    Regs {
        ax,
        bx,
        cx,
        dx,
        ds: TRANSFER_SEGMENT,
        es: TRANSFER_SEGMENT,
        ..Regs::default()
    }
}

impl Regs {
    fn di(self, di: u16) -> Regs {
        Regs { di, ..self }
    }
    fn bp(self, bp: u16) -> Regs {
        Regs { bp, ..self }
    }
}

/// Everything a caller or the screen could see after a call.
#[derive(PartialEq, Debug)]
struct Outcome {
    regs: [u32; 7],
    segs: [u16; 2],
    flags: u16,
    low_memory: Vec<u8>,
    transfer_page: Vec<u8>,
}

impl Emu {
    /// POST ran the ROM's init on a normal PC; the HAL model then takes a copy of the
    /// first 800h bytes, as Windows does at boot.
    fn booted(model: Model) -> Emu {
        let (rom, _) = build_with_symbols().expect("ROM builds");
        let mut cpu = Cpu::new();
        let ram = ram_calling_init(&rom, &mut cpu, 0x8000);
        let mut e = Emu {
            cpu,
            ram,
            bus: EmuBus {
                model: Model::Full,
                vga: Vga::new(),
                lfb: vec![0; LFB_SIZE],
                low_page: vec![0; 0x1000],
                pci_address: 0,
                rom_len: rom.len(),
                function: "init".into(),
                violations: BTreeSet::new(),
                lowest_stack_write: HAL_STACK,
            },
        };
        e.run();
        if model == Model::HalEmulator {
            e.bus.low_page[..LOW_COPY_END as usize]
                .copy_from_slice(&e.ram[..LOW_COPY_END as usize]);
            // What the HAL model cannot see is not there.
            e.ram[0..TRANSFER_PAGE as usize].fill(0xCC);
            e.ram[TRANSFER_PAGE as usize + 0x1000..HIGH_RAM as usize].fill(0xCC);
            e.bus.model = model;
            e.cpu.flush_all_caches();
        }
        e
    }

    fn run(&mut self) {
        self.cpu.state.halted = false;
        self.cpu.flush_all_caches();
        let exit = self.cpu.run(&mut self.ram, &mut self.bus, 20_000_000);
        let (cs, ip) = (self.cpu.state.seg(Seg::Cs).selector, self.cpu.state.rip);
        assert_eq!(
            exit,
            RunExit::Halted,
            "{:?} run of {} did not return; at {cs:04X}:{ip:04X}",
            self.bus.model,
            self.bus.function
        );
    }

    fn mem(&self, a: u64) -> u8 {
        if self.bus.model == Model::HalEmulator && a < LOW_COPY_END {
            self.bus.low_page[a as usize]
        } else {
            self.ram[a as usize]
        }
    }

    fn write_mem(&mut self, a: u64, bytes: &[u8]) {
        for (i, &b) in bytes.iter().enumerate() {
            let at = a + i as u64;
            if self.bus.model == Model::HalEmulator && at < LOW_COPY_END {
                self.bus.low_page[at as usize] = b;
            } else {
                self.ram[at as usize] = b;
            }
        }
    }

    /// Runs INT 10h from the model's stub with the given registers.
    fn call(&mut self, name: &str, regs: Regs) -> Outcome {
        self.bus.function = name.to_string();
        let (stub, stack) = match self.bus.model {
            Model::Full => (FULL_STUB, FULL_STACK),
            Model::HalEmulator => (HAL_STUB, HAL_STACK),
        };
        self.write_mem(stub, &[0xCD, 0x10, 0xF4]);
        let s = &mut self.cpu.state;
        for (reg, v) in [
            (Reg::Rax, regs.ax),
            (Reg::Rbx, regs.bx),
            (Reg::Rcx, regs.cx),
            (Reg::Rdx, regs.dx),
            (Reg::Rsi, regs.si),
            (Reg::Rdi, regs.di),
            (Reg::Rbp, regs.bp),
        ] {
            s.set_reg(reg, u64::from(v));
        }
        s.load_seg_real(Seg::Ds, regs.ds);
        s.load_seg_real(Seg::Es, regs.es);
        s.load_seg_real(Seg::Ss, 0);
        s.set_reg(Reg::Rsp, stack);
        s.load_seg_real(Seg::Cs, 0);
        s.rip = stub;
        s.rflags = 0x0002;
        self.run();
        if let Some(n) = self.bus.vga.take_lfb_clear() {
            let n = n.min(self.bus.lfb.len());
            self.bus.lfb[..n].fill(0);
        }
        let s = &self.cpu.state;
        assert_eq!(
            (s.seg(Seg::Cs).selector, s.rip, s.reg(Reg::Rsp)),
            (0, stub + 3, stack),
            "{name}: returned to its stub with the stack balanced"
        );
        Outcome {
            regs: [
                Reg::Rax,
                Reg::Rbx,
                Reg::Rcx,
                Reg::Rdx,
                Reg::Rsi,
                Reg::Rdi,
                Reg::Rbp,
            ]
            .map(|r| s.reg(r) as u32),
            segs: [s.seg(Seg::Ds).selector, s.seg(Seg::Es).selector],
            flags: s.rflags as u16,
            // IVT and BDA; 500h up is the stubs' and the HAL stack's.
            low_memory: (0..HAL_STUB).map(|a| self.mem(a)).collect(),
            transfer_page: self.ram[TRANSFER_PAGE as usize..TRANSFER_PAGE as usize + 0x1000]
                .to_vec(),
        }
    }
}

/// The adapter's register file as software reads it back (on a copy: reading moves
/// the DAC and attribute index state).
fn vga_registers(vga: &Vga) -> Vec<(String, u32)> {
    let mut v = vga.clone();
    let mut out = Vec::new();
    let mut indexed = |v: &mut Vga, name: &str, port: u16, count: u8| {
        for i in 0..count {
            v.io_write(port, 1, u32::from(i));
            out.push((format!("{name}[{i:#x}]"), v.io_read(port + 1, 1) & 0xFF));
        }
    };
    indexed(&mut v, "SEQ", 0x3C4, 5);
    indexed(&mut v, "GC", 0x3CE, 9);
    let crtc = if v.io_read(0x3CC, 1) & 1 != 0 {
        0x3D4
    } else {
        0x3B4
    };
    indexed(&mut v, "CRTC", crtc, 0x19);
    for i in 0..0x15u32 {
        v.io_read(crtc + 6, 1);
        v.io_write(0x3C0, 1, i | 0x20);
        out.push((format!("ATTR[{i:#x}]"), v.io_read(0x3C1, 1) & 0xFF));
    }
    v.io_read(crtc + 6, 1);
    out.push(("MISC".into(), v.io_read(0x3CC, 1) & 0xFF));
    out.push(("PEL mask".into(), v.io_read(0x3C6, 1) & 0xFF));
    v.io_write(0x3C7, 1, 0);
    for i in 0..768 {
        out.push((
            format!("DAC[{}].{}", i / 3, i % 3),
            v.io_read(0x3C9, 1) & 0xFF,
        ));
    }
    for i in 0..10u32 {
        v.io_write(0x1CE, 2, i);
        out.push((format!("DISPI[{i}]"), v.io_read(0x1CF, 2) & 0xFFFF));
    }
    out
}

fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y)
}

/// One call: its name, the registers and what the caller put in the transfer page first.
type Step = (&'static str, Regs, Option<(u16, Vec<u8>)>);

/// Every function and subfunction the ROM dispatches, with buffers in the transfer
/// page (ES = DS = 2000h). Inputs: (offset in the transfer page, bytes).
fn script() -> Vec<Step> {
    let text = b"Hello".to_vec();
    let palette: Vec<u8> = (0..17u8).map(|i| (i * 3) & 0x3F).collect();
    let dac: Vec<u8> = vec![1, 2, 3, 10, 20, 30, 63, 0, 63];
    let glyph: Vec<u8> = (0..16u8).map(|i| i.wrapping_mul(17)).collect();
    let vbe_palette: Vec<u8> = vec![1, 2, 3, 0, 4, 5, 6, 0];
    let none = None;
    vec![
        ("00h mode 3", r(0x0003, 0, 0, 0), none.clone()),
        ("01h cursor shape", r(0x0100, 0, 0x0607, 0), None),
        ("02h set cursor", r(0x0200, 0, 0, 0x0510), None),
        ("03h get cursor", r(0x0300, 0, 0, 0), None),
        ("09h char+attr", r(0x0941, 0x001E, 5, 0), None),
        ("0Ah char", r(0x0A42, 0, 3, 0), None),
        ("08h read char", r(0x0800, 0, 0, 0), None),
        ("0Eh teletype", r(0x0E48, 0x0007, 0, 0), None),
        ("0Eh CR", r(0x0E0D, 0x0007, 0, 0), None),
        ("0Eh LF", r(0x0E0A, 0x0007, 0, 0), None),
        ("0Eh BS", r(0x0E08, 0x0007, 0, 0), None),
        ("0Eh BEL", r(0x0E07, 0x0007, 0, 0), None),
        (
            "13h write string",
            r(0x1301, 0x0007, 5, 0x0A00).bp(0x100),
            Some((0x100, text.clone())),
        ),
        (
            "13h write string with attributes",
            r(0x1302, 0, 2, 0x0B00).bp(0x100),
            Some((0x100, vec![b'A', 0x1F, b'B', 0x2E])),
        ),
        ("06h scroll up", r(0x0602, 0x0700, 0x0000, 0x184F), None),
        ("07h scroll down", r(0x0701, 0x1700, 0x0203, 0x1040), None),
        ("06h clear window", r(0x0600, 0x0700, 0x0101, 0x0303), None),
        ("05h page 1", r(0x0501, 0, 0, 0), None),
        ("0Eh on page 1", r(0x0E50, 0x0107, 0, 0), None),
        ("05h page 0", r(0x0500, 0, 0, 0), None),
        ("0Fh get mode", r(0x0F00, 0, 0, 0), None),
        ("10h/00 attribute", r(0x1000, 0x2D03, 0, 0), None),
        ("10h/01 overscan", r(0x1001, 0x0500, 0, 0), None),
        ("10h/02 all", r(0x1002, 0, 0, 0x200), Some((0x200, palette))),
        ("10h/03 blink off", r(0x1003, 0, 0, 0), None),
        ("10h/03 blink on", r(0x1003, 1, 0, 0), None),
        ("10h/07 get attribute", r(0x1007, 3, 0, 0), None),
        ("10h/08 get overscan", r(0x1008, 0, 0, 0), None),
        ("10h/09 get all", r(0x1009, 0, 0, 0x300), None),
        ("10h/10 DAC one", r(0x1010, 5, 0x2A15, 0x3F00), None),
        (
            "10h/12 DAC block",
            r(0x1012, 0x40, 3, 0x400),
            Some((0x400, dac)),
        ),
        ("10h/13 paging mode", r(0x1013, 0x0100, 0, 0), None),
        ("10h/13 colour page", r(0x1013, 0x0201, 0, 0), None),
        ("10h/15 DAC get one", r(0x1015, 5, 0, 0), None),
        ("10h/17 DAC get block", r(0x1017, 0x40, 3, 0x500), None),
        ("10h/18 PEL mask", r(0x1018, 0x00FE, 0, 0), None),
        ("10h/19 get PEL mask", r(0x1019, 0, 0, 0), None),
        ("10h/18 PEL mask back", r(0x1018, 0x00FF, 0, 0), None),
        ("10h/1A page state", r(0x101A, 0, 0, 0), None),
        ("10h/13 paging back", r(0x1013, 0x0000, 0, 0), None),
        ("10h/1B grey sum", r(0x101B, 0x20, 4, 0), None),
        ("11h/30 font info", r(0x1130, 0x0600, 0, 0), None),
        ("11h/30 INT 43h", r(0x1130, 0x0100, 0, 0), None),
        (
            "11h/00 user font",
            r(0x1100, 0x1000, 1, 0x80).bp(0x600),
            Some((0x600, glyph.clone())),
        ),
        (
            "11h/10 user font recalc",
            r(0x1110, 0x1000, 1, 0x81).bp(0x600),
            None,
        ),
        ("11h/01 ROM 8x14", r(0x1101, 0, 0, 0), None),
        ("11h/02 ROM 8x8", r(0x1102, 0, 0, 0), None),
        ("11h/04 ROM 8x16", r(0x1104, 0, 0, 0), None),
        ("11h/03 block select", r(0x1103, 0, 0, 0), None),
        ("11h/12 80x50", r(0x1112, 0, 0, 0), None),
        ("0Eh in 80x50", r(0x0E58, 0x0007, 0, 0), None),
        ("11h/11 8x14 recalc", r(0x1111, 0, 0, 0), None),
        ("11h/14 8x16 recalc", r(0x1114, 0, 0, 0), None),
        ("12h/10 EGA info", r(0x1200, 0x0010, 0, 0), None),
        ("12h/30 350 lines", r(0x1201, 0x0030, 0, 0), None),
        ("00h mode 3 at 350", r(0x0003, 0, 0, 0), None),
        ("12h/30 400 lines", r(0x1202, 0x0030, 0, 0), None),
        ("12h/31 palette loading", r(0x1200, 0x0031, 0, 0), None),
        ("12h/32 video enable", r(0x1200, 0x0032, 0, 0), None),
        ("12h/33 grey summing off", r(0x1201, 0x0033, 0, 0), None),
        ("12h/34 cursor emulation", r(0x1200, 0x0034, 0, 0), None),
        ("12h/36 screen off", r(0x1201, 0x0036, 0, 0), None),
        ("12h/36 screen on", r(0x1200, 0x0036, 0, 0), None),
        ("1Ah/00 get DCC", r(0x1A00, 0, 0, 0), None),
        ("1Ah/01 set DCC", r(0x1A01, 0x0008, 0, 0), None),
        ("1Bh state", r(0x1B00, 0, 0, 0).di(0x700), None),
        ("1Ch/00 size", r(0x1C00, 0, 7, 0), None),
        ("1Ch/01 save", r(0x1C01, 0x800, 7, 0), None),
        ("00h mode 13h", r(0x0013, 0, 0, 0), None),
        ("0Ch pixel 13h", r(0x0C2A, 0, 100, 50), None),
        ("0Dh pixel 13h", r(0x0D00, 0, 100, 50), None),
        ("0Eh in 13h", r(0x0E41, 0x000E, 0, 0), None),
        ("09h in 13h", r(0x0942, 0x0009, 2, 0), None),
        ("08h in 13h", r(0x0800, 0, 0, 0), None),
        ("1Ch/02 restore", r(0x1C02, 0x800, 7, 0), None),
        ("00h mode 12h", r(0x0012, 0, 0, 0), None),
        ("0Ch pixel 12h", r(0x0C05, 0, 100, 50), None),
        ("0Ch pixel 12h XOR", r(0x0C83, 0, 100, 50), None),
        ("0Dh pixel 12h", r(0x0D00, 0, 100, 50), None),
        ("0Eh in 12h", r(0x0E41, 0x000E, 0, 0), None),
        ("09h in 12h", r(0x0942, 0x0009, 2, 0), None),
        ("0Ah in 12h", r(0x0A43, 0x0001, 1, 0), None),
        ("02h in 12h", r(0x0200, 0, 0, 0x0000), None),
        ("08h in 12h", r(0x0800, 0, 0, 0), None),
        ("06h scroll in 12h", r(0x0601, 0x0100, 0, 0x1D4F), None),
        ("0Bh border 12h", r(0x0B00, 0x0001, 0, 0), None),
        ("11h/20 INT 1Fh", r(0x1120, 0, 0, 0).bp(0x600), None),
        ("11h/21 INT 43h user", r(0x1121, 0, 16, 25).bp(0x600), None),
        ("11h/22 INT 43h 8x14", r(0x1122, 0x0002, 0, 0), None),
        ("11h/23 INT 43h 8x8", r(0x1123, 0x0002, 0, 0), None),
        ("11h/24 INT 43h 8x16", r(0x1124, 0x0002, 0, 0), None),
        ("0Eh with ROM 8x16", r(0x0E42, 0x000F, 0, 0), None),
        ("00h mode 4", r(0x0004, 0, 0, 0), None),
        ("0Bh palette 1", r(0x0B00, 0x0101, 0, 0), None),
        ("0Bh background", r(0x0B00, 0x0001, 0, 0), None),
        ("0Ch pixel 4", r(0x0C02, 0, 5, 3), None),
        ("0Dh pixel 4", r(0x0D00, 0, 5, 3), None),
        ("0Eh in mode 4", r(0x0E5A, 0x0003, 0, 0), None),
        ("08h in mode 4", r(0x0800, 0, 0, 0), None),
        ("00h mode 6", r(0x0006, 0, 0, 0), None),
        ("0Ch pixel 6", r(0x0C01, 0, 7, 9), None),
        ("0Eh in mode 6", r(0x0E5A, 0x0001, 0, 0), None),
        ("00h mode 0Dh", r(0x000D, 0, 0, 0), None),
        ("0Eh in mode 0Dh", r(0x0E5A, 0x0004, 0, 0), None),
        ("00h mode 0Eh", r(0x000E, 0, 0, 0), None),
        ("00h mode 10h", r(0x0010, 0, 0, 0), None),
        ("0Ch pixel 10h", r(0x0C07, 0, 300, 200), None),
        ("00h mode 11h", r(0x0011, 0, 0, 0), None),
        ("0Ch pixel 11h", r(0x0C01, 0, 300, 200), None),
        ("00h mode 1", r(0x0001, 0, 0, 0), None),
        ("0Eh in mode 1", r(0x0E5A, 0x0007, 0, 0), None),
        ("00h mode 7", r(0x0007, 0, 0, 0), None),
        ("0Eh in mode 7", r(0x0E5A, 0x0007, 0, 0), None),
        ("00h mode 3 no clear", r(0x0083, 0, 0, 0), None),
        ("unknown AH=FEh", r(0xFE00, 0, 0, 0), None),
        (
            "4F00 controller info",
            r(0x4F00, 0, 0, 0).di(0),
            Some((0, b"VBE2".to_vec())),
        ),
        ("4F01 mode 101h", r(0x4F01, 0, 0x101, 0).di(0x200), None),
        ("4F01 mode 118h", r(0x4F01, 0, 0x118, 0).di(0x300), None),
        ("4F01 bad mode", r(0x4F01, 0, 0x199, 0).di(0x300), None),
        ("4F02 118h LFB", r(0x4F02, 0x4118, 0, 0), None),
        ("4F03 get mode", r(0x4F03, 0, 0, 0), None),
        ("4F06 set width", r(0x4F06, 0x0000, 1024, 0), None),
        ("4F06 get width", r(0x4F06, 0x0001, 0, 0), None),
        ("4F06 set bytes", r(0x4F06, 0x0002, 4096, 0), None),
        ("4F06 max", r(0x4F06, 0x0003, 0, 0), None),
        ("4F07 set start", r(0x4F07, 0x0000, 0, 10), None),
        ("4F07 get start", r(0x4F07, 0x0001, 0, 0), None),
        ("4F05 bank 1", r(0x4F05, 0x0000, 0, 1), None),
        ("4F05 get bank", r(0x4F05, 0x0100, 0, 0), None),
        ("4F02 101h banked", r(0x4F02, 0x0101, 0, 0), None),
        (
            "4F09 set palette",
            r(0x4F09, 0, 2, 0x10).di(0x900),
            Some((0x900, vbe_palette)),
        ),
        (
            "4F09 get palette",
            r(0x4F09, 0x0001, 2, 0x10).di(0xA00),
            None,
        ),
        ("4F08 8-bit DAC", r(0x4F08, 0x0800, 0, 0), None),
        ("4F08 get DAC", r(0x4F08, 0x0001, 0, 0), None),
        ("4F08 6-bit DAC", r(0x4F08, 0x0600, 0, 0), None),
        ("4F04 size", r(0x4F04, 0, 0x000F, 0), None),
        ("4F04 save", r(0x4F04, 0, 0x000F, 1), None),
        ("4F02 118h no clear", r(0x4F02, 0xC118, 0, 0), None),
        ("4F04 restore", r(0x4F04, 0, 0x000F, 2), None),
        ("4F0A protected-mode interface", r(0x4F0A, 0, 0, 0), None),
        ("4F15 DDC capabilities", r(0x4F15, 0, 0, 0), None),
        ("4F15 read EDID", r(0x4F15, 1, 0, 0).di(0xB00), None),
        ("4F15 EDID block 1", r(0x4F15, 1, 0, 1).di(0xB00), None),
        ("4FFF unknown", r(0x4FFF, 0, 0, 0), None),
        ("00h mode 3 after VBE", r(0x0003, 0, 0, 0), None),
        ("0Eh after VBE", r(0x0E4F, 0x0007, 0, 0), None),
    ]
}

/// One call on both machines: nothing outside the HAL's model touched, and everything
/// a caller or the screen sees the same. Returns the outcome.
fn step(full: &mut Emu, hal: &mut Emu, name: &str, regs: Regs) -> Outcome {
    let expected = full.call(name, regs);
    let got = hal.call(name, regs);
    assert!(
        hal.bus.violations.is_empty(),
        "outside the HAL emulator's memory model: {:#?}",
        hal.bus.violations
    );
    assert!(
        full.bus.violations.is_empty(),
        "ports the video BIOS has no business with: {:#?}",
        full.bus.violations
    );
    assert_eq!(expected.regs, got.regs, "{name}: EAX..EBP");
    assert_eq!(expected.segs, got.segs, "{name}: DS, ES");
    assert_eq!(expected.flags, got.flags, "{name}: FLAGS");
    assert_eq!(
        first_difference(&expected.low_memory, &got.low_memory),
        None,
        "{name}: IVT/BDA byte differs"
    );
    assert_eq!(
        first_difference(&expected.transfer_page, &got.transfer_page),
        None,
        "{name}: transfer page byte differs"
    );
    let (a, b) = (vga_registers(&full.bus.vga), vga_registers(&hal.bus.vga));
    let differing: Vec<_> = a.iter().zip(&b).filter(|(x, y)| x != y).take(8).collect();
    assert!(differing.is_empty(), "{name}: VGA registers {differing:?}");
    assert_eq!(
        first_difference(full.bus.vga.planes(), hal.bus.vga.planes()),
        None,
        "{name}: VGA memory byte differs"
    );
    assert_eq!(
        first_difference(&full.bus.lfb, &hal.bus.lfb),
        None,
        "{name}: framebuffer byte differs"
    );
    expected
}

#[test]
fn vgabios_runs_in_the_x64_hal_emulator_memory_model() {
    let mut full = Emu::booted(Model::Full);
    let mut hal = Emu::booted(Model::HalEmulator);
    assert!(
        hal.bus.violations.is_empty() && full.bus.violations.is_empty(),
        "init: {:?}",
        full.bus.violations
    );
    for (name, regs, input) in script() {
        if let Some((offset, bytes)) = &input {
            let at = TRANSFER_PAGE + u64::from(*offset);
            full.write_mem(at, bytes);
            hal.write_mem(at, bytes);
        }
        step(&mut full, &mut hal, name, regs);
    }
    // Every mode of 4F00h's list, as a video driver enumerates them: mode info, then a
    // mode set with the linear framebuffer (or without, for the 4-bit planar modes).
    for e in [&mut full, &mut hal] {
        e.write_mem(TRANSFER_PAGE, b"VBE2");
    }
    step(&mut full, &mut hal, "4F00 again", r(0x4F00, 0, 0, 0));
    let list = {
        let ptr = |o: usize| u16::from_le_bytes([full.ram[o], full.ram[o + 1]]);
        let base = TRANSFER_PAGE as usize;
        let at = usize::from(ptr(base + 0x10)) * 16 + usize::from(ptr(base + 0x0E));
        let modes: Vec<u16> = (0..)
            .map(|i| ptr(at + 2 * i))
            .take_while(|&m| m != 0xFFFF)
            .take(256)
            .collect();
        assert!(modes.len() > 20, "4F00h mode list: {modes:x?}");
        modes
    };
    for mode in list {
        let info = step(
            &mut full,
            &mut hal,
            &format!("4F01 mode {mode:#x}"),
            r(0x4F01, 0, mode, 0).di(0xC00),
        );
        assert_eq!(info.regs[0] as u16, 0x004F, "4F01 mode {mode:#x}");
        let attributes = full.ram[TRANSFER_PAGE as usize + 0xC00];
        let lfb = if attributes & 0x80 != 0 { 0x4000 } else { 0 };
        let set = step(
            &mut full,
            &mut hal,
            &format!("4F02 mode {mode:#x}"),
            r(0x4F02, lfb | mode, 0, 0),
        );
        assert_eq!(set.regs[0] as u16, 0x004F, "4F02 mode {mode:#x}");
    }
    step(
        &mut full,
        &mut hal,
        "00h mode 3 at the end",
        r(0x0003, 0, 0, 0),
    );
    step(
        &mut full,
        &mut hal,
        "0Eh at the end",
        r(0x0E4F, 0x0007, 0, 0),
    );
    // The stack stayed clear of the stub at 500h..502h (the HAL's 0800h stack is short).
    assert!(
        hal.bus.lowest_stack_write >= HAL_STUB + 3,
        "INT 10h used the HAL stack down to {:#x}",
        hal.bus.lowest_stack_write
    );
    // The script did what it says: spot checks that the calls were real.
    let edid = &hal.ram[TRANSFER_PAGE as usize + 0xB00..TRANSFER_PAGE as usize + 0xB80];
    assert_eq!(
        edid,
        &super::edid::build_edid()[..],
        "4F15 EDID in the transfer page"
    );
    assert_eq!(
        &hal.ram[TRANSFER_PAGE as usize..TRANSFER_PAGE as usize + 4],
        b"VESA"
    );
    assert!(
        hal.bus
            .vga
            .text_screen()
            .is_some_and(|s| s.starts_with('O'))
    );
}

/// The harness catches an access outside the model: a 4F00h buffer outside the
/// transfer page (0100:0000 = 1000h) is fine on a PC and a violation here.
#[test]
fn hal_memory_model_flags_a_buffer_outside_the_transfer_page() {
    let mut hal = Emu::booted(Model::HalEmulator);
    let regs = Regs {
        es: 0x0100,
        ..r(0x4F00, 0, 0, 0)
    };
    hal.call("4F00 into 0100:0000", regs);
    let v: Vec<_> = hal.bus.violations.iter().collect();
    assert!(
        v.iter()
            .any(|m| *m == "write of unmapped 0x1000 during 4F00 into 0100:0000"),
        "{v:?}"
    );
    let mut full = Emu::booted(Model::Full);
    full.call("4F00 into 0100:0000", regs);
    assert!(full.bus.violations.is_empty());
    assert_eq!(&full.ram[0x1000..0x1004], b"VESA");
}

/// Why a piece of code would not run in the HAL's 386 real-mode emulator (or under a
/// V86 monitor that reflects only INT 10h); `names` turns an offset into a symbol.
fn check_386_real_mode(
    code: &[u8],
    base: u16,
    names: &dyn Fn(u64) -> String,
) -> Result<(usize, usize), String> {
    let mut decoder = Decoder::with_ip(16, code, u64::from(base), DecoderOptions::NONE);
    let allowed = [
        CpuidFeature::INTEL8086,
        CpuidFeature::INTEL186,
        CpuidFeature::INTEL286,
        CpuidFeature::INTEL386,
    ];
    // Valid only in protected mode: #UD in real and V86 mode.
    let protected_only = [
        Mnemonic::Arpl,
        Mnemonic::Lar,
        Mnemonic::Lsl,
        Mnemonic::Verr,
        Mnemonic::Verw,
        Mnemonic::Lldt,
        Mnemonic::Sldt,
        Mnemonic::Ltr,
        Mnemonic::Str,
    ];
    let (mut count, mut int10) = (0, 0);
    for ins in &mut decoder {
        count += 1;
        let at = ins.ip();
        let m = ins.mnemonic();
        let here = || format!("{m:?} at {at:#06x} ({})", names(at));
        if ins.is_invalid() {
            return Err(format!("undecodable bytes at {at:#06x} ({})", names(at)));
        }
        if let Some(f) = ins.cpuid_features().iter().find(|f| !allowed.contains(f)) {
            return Err(format!("{} needs {f:?}", here()));
        }
        if protected_only.contains(&m) {
            return Err(format!("{} is protected-mode only", here()));
        }
        match m {
            Mnemonic::Int if ins.immediate8() == 0x10 => int10 += 1,
            Mnemonic::Int => return Err(format!("{} calls INT {:#x}", here(), ins.immediate8())),
            // No other interrupt, nothing that waits for hardware but port I/O.
            Mnemonic::Int1 | Mnemonic::Int3 | Mnemonic::Into | Mnemonic::Hlt | Mnemonic::Wait => {
                return Err(here());
            }
            _ => {}
        }
        // Far transfers would leave the ROM (into a system BIOS the HAL does not have).
        if matches!(ins.op0_kind(), OpKind::FarBranch16 | OpKind::FarBranch32) {
            return Err(format!("{} is a far branch", here()));
        }
    }
    Ok((count, int10))
}

/// The ROM's whole code section (from `init` to the data tables; the code has no data
/// inside it, so a linear sweep sees every instruction) needs a 386 in real mode at
/// most and calls no interrupt but 10h.
#[test]
fn vgabios_code_is_386_real_mode_and_calls_only_int_10h() {
    let (rom, symbols) = build_with_symbols().expect("ROM builds");
    let (start, end) = (symbols["init"], symbols["vga_mode_table"]);
    assert!(start < end && usize::from(end) <= rom.len());
    let names = |at: u64| {
        symbols
            .iter()
            .filter(|(_, a)| u64::from(**a) <= at)
            .max_by_key(|(_, a)| **a)
            .map(|(n, a)| format!("{n}+{:#x}", at - u64::from(*a)))
            .unwrap_or_default()
    };
    let code = &rom[usize::from(start)..usize::from(end)];
    let (count, int10) = check_386_real_mode(code, start, &names).unwrap();
    assert!(count > 2000, "decoded {count} instructions");
    assert_eq!(int10, 1, "init's mode set is the only INT (10h)");

    // The checker itself catches what it is for.
    let no_names = |_: u64| String::new();
    for (bytes, why) in [
        (&[0x66, 0x0F, 0xC8][..], "INTEL486"),  // bswap eax
        (&[0x0F, 0xA2][..], "CPUID"),           // cpuid
        (&[0xCD, 0x15][..], "INT 0x15"),        // int 15h
        (&[0xCD, 0x1A][..], "INT 0x1a"),        // int 1Ah
        (&[0x0F, 0x00, 0xC8][..], "protected"), // str ax
        (&[0x9A, 0, 0, 0, 0xF0][..], "far"),    // call far F000:0000
        (&[0x0F, 0x44, 0xC1][..], "CMOV"),      // cmove ax, cx
    ] {
        let err = check_386_real_mode(bytes, 0, &no_names).unwrap_err();
        assert!(err.contains(why), "{bytes:02X?}: {err}");
    }
}
