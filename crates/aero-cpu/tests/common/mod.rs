//! A flat-RAM test machine for CPU tests.
#![allow(dead_code)]

use aero_cpu::{Bus, Cpu, PageMapping, RunExit, Seg, Segment};

pub struct TestBus {
    pub ram_size: u64,
    /// (port, size, value) of every OUT.
    pub outs: Vec<(u16, u8, u32)>,
    /// OUT to this port asks the CPU to stop (like a firmware trap).
    pub trap_port: Option<u16>,
    stop: bool,
    /// Pending external interrupt vector.
    pub irq: Option<u8>,
    pub tsc: u64,
    pub in_value: u32,
    /// Physical pages (addr >> 12) that are MMIO; reads return `mmio_value`.
    pub mmio_pages: Vec<u64>,
    pub mmio_writes: Vec<(u64, u8, u64)>,
    pub a20: bool,
}

impl TestBus {
    pub fn new(ram_size: u64) -> Self {
        TestBus {
            ram_size,
            outs: Vec::new(),
            trap_port: None,
            stop: false,
            irq: None,
            tsc: 0,
            in_value: 0,
            mmio_pages: Vec::new(),
            mmio_writes: Vec::new(),
            a20: true,
        }
    }
}

impl Bus for TestBus {
    fn map_page(&self, paddr: u64) -> PageMapping {
        if self.mmio_pages.contains(&(paddr >> 12)) {
            PageMapping::Mmio
        } else if paddr < self.ram_size {
            PageMapping::Ram {
                offset: (paddr & !0xFFF) as usize,
            }
        } else {
            PageMapping::Mmio
        }
    }
    fn mmio_read(&mut self, _paddr: u64, _size: u8) -> u64 {
        0x1234_5678_9ABC_DEF0
    }
    fn mmio_write(&mut self, paddr: u64, size: u8, value: u64) {
        self.mmio_writes.push((paddr, size, value));
    }
    fn io_read(&mut self, _port: u16, _size: u8) -> u32 {
        self.in_value
    }
    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        self.outs.push((port, size, value));
        if self.trap_port == Some(port) {
            self.stop = true;
        }
    }
    fn sync_time(&mut self, instructions_retired: u64) {
        self.tsc = instructions_retired * 3;
    }
    fn tsc(&mut self) -> u64 {
        self.tsc
    }
    fn interrupt_pending(&mut self) -> bool {
        self.irq.is_some()
    }
    fn acknowledge_interrupt(&mut self) -> u8 {
        self.irq.take().unwrap_or(0xFF)
    }
    fn stop_requested(&mut self) -> bool {
        std::mem::take(&mut self.stop)
    }
    fn a20_enabled(&self) -> bool {
        self.a20
    }
}

pub struct Machine {
    pub cpu: Cpu,
    pub ram: Vec<u8>,
    pub bus: TestBus,
}

impl Machine {
    pub fn new(ram_size: usize) -> Self {
        Machine {
            cpu: Cpu::new(),
            ram: vec![0; ram_size],
            bus: TestBus::new(ram_size as u64),
        }
    }

    /// Real mode, CS:IP = 0:`addr`, SS:SP = 0:0x7000, flat data segments at 0.
    pub fn real_mode_at(ram_size: usize, code: &[u8], addr: u64) -> Self {
        let mut m = Machine::new(ram_size);
        m.load(addr, code);
        let s = &mut m.cpu.state;
        for seg in [Seg::Es, Seg::Ss, Seg::Ds, Seg::Fs, Seg::Gs] {
            s.load_seg_real(seg, 0);
        }
        s.seg[Seg::Cs as usize] = Segment {
            selector: 0,
            base: 0,
            limit: 0xFFFF,
            attr: 0x9B,
        };
        s.rip = addr;
        s.gpr[4] = 0x7000;
        m
    }

    pub fn load(&mut self, addr: u64, bytes: &[u8]) {
        self.ram[addr as usize..addr as usize + bytes.len()].copy_from_slice(bytes);
        self.cpu.invalidate_code(addr, bytes.len() as u64);
    }

    pub fn run(&mut self, max: u64) -> RunExit {
        self.cpu.run(&mut self.ram, &mut self.bus, max)
    }

    pub fn r32(&self, addr: u64) -> u32 {
        let a = addr as usize;
        u32::from_le_bytes(self.ram[a..a + 4].try_into().unwrap())
    }
    pub fn w32(&mut self, addr: u64, v: u32) {
        let a = addr as usize;
        self.ram[a..a + 4].copy_from_slice(&v.to_le_bytes());
    }
    pub fn w64(&mut self, addr: u64, v: u64) {
        let a = addr as usize;
        self.ram[a..a + 8].copy_from_slice(&v.to_le_bytes());
    }
    pub fn r64(&self, addr: u64) -> u64 {
        let a = addr as usize;
        u64::from_le_bytes(self.ram[a..a + 8].try_into().unwrap())
    }
}

/// Assemble with iced's code assembler.
pub fn asm(
    bitness: u32,
    ip: u64,
    f: impl FnOnce(&mut iced_x86::code_asm::CodeAssembler) -> Result<(), iced_x86::IcedError>,
) -> Vec<u8> {
    let mut a = iced_x86::code_asm::CodeAssembler::new(bitness).unwrap();
    f(&mut a).unwrap();
    a.assemble(ip).unwrap()
}

/// Build a GDT descriptor.
pub fn descriptor(base: u32, limit: u32, access: u8, flags: u8) -> u64 {
    let mut d = (limit & 0xFFFF) as u64;
    d |= ((base & 0xFF_FFFF) as u64) << 16;
    d |= (access as u64) << 40;
    d |= (((limit >> 16) & 0xF) as u64) << 48;
    d |= ((flags & 0xF) as u64) << 52;
    d |= ((base >> 24) as u64) << 56;
    d
}

pub const GDT: u64 = 0x1000;
pub const IDT: u64 = 0x2000;
pub const TSS: u64 = 0x3000;
pub const KCODE: u16 = 0x08;
pub const KDATA: u16 = 0x10;
pub const UCODE: u16 = 0x1B;
pub const UDATA: u16 = 0x23;
pub const TSS_SEL: u16 = 0x28;
pub const CODE64: u16 = 0x30;

impl Machine {
    /// Standard GDT: flat ring-0 code/data, ring-3 code/data, a 32-bit TSS, 64-bit code.
    pub fn write_gdt(&mut self) {
        self.w64(GDT, 0);
        self.w64(GDT + 0x08, descriptor(0, 0xFFFFF, 0x9A, 0xC));
        self.w64(GDT + 0x10, descriptor(0, 0xFFFFF, 0x92, 0xC));
        self.w64(GDT + 0x18, descriptor(0, 0xFFFFF, 0xFA, 0xC));
        self.w64(GDT + 0x20, descriptor(0, 0xFFFFF, 0xF2, 0xC));
        self.w64(GDT + 0x28, descriptor(TSS as u32, 0x67, 0x89, 0x0));
        self.w64(GDT + 0x30, descriptor(0, 0xFFFFF, 0x9A, 0xA));
        self.w64(GDT + 0x38, 0);
    }

    /// Start in 32-bit protected mode, ring 0, flat segments, at `addr`.
    pub fn protected32_at(ram_size: usize, code: &[u8], addr: u64) -> Self {
        let mut m = Machine::new(ram_size);
        m.write_gdt();
        m.load(addr, code);
        let s = &mut m.cpu.state;
        s.gdtr = aero_cpu::DescriptorTable {
            base: GDT,
            limit: 0x3F,
        };
        s.idtr = aero_cpu::DescriptorTable {
            base: IDT,
            limit: 0x7FF,
        };
        s.cr0 = 0x11;
        s.seg[Seg::Cs as usize] = Segment {
            selector: KCODE,
            base: 0,
            limit: 0xFFFF_FFFF,
            attr: 0xC9B,
        };
        for sg in [Seg::Es, Seg::Ss, Seg::Ds, Seg::Fs, Seg::Gs] {
            s.seg[sg as usize] = Segment {
                selector: KDATA,
                base: 0,
                limit: 0xFFFF_FFFF,
                attr: 0xC93,
            };
        }
        s.tr = Segment {
            selector: TSS_SEL,
            base: TSS,
            limit: 0x67,
            attr: 0x8B,
        };
        s.rip = addr;
        s.gpr[4] = 0x9_0000;
        m
    }

    /// 32-bit interrupt gate for `vector` to KCODE:`handler`.
    pub fn set_gate32(&mut self, vector: u8, handler: u32, dpl: u8) {
        let lo = (handler & 0xFFFF) as u64 | ((KCODE as u64) << 16);
        let hi = (handler & 0xFFFF_0000) as u64 | (0x8E00 | ((dpl as u64) << 13));
        self.w64(IDT + vector as u64 * 8, lo | (hi << 32));
    }

    pub fn set_trap_gate32(&mut self, vector: u8, handler: u32, dpl: u8) {
        let lo = (handler & 0xFFFF) as u64 | ((KCODE as u64) << 16);
        let hi = (handler & 0xFFFF_0000) as u64 | (0x8F00 | ((dpl as u64) << 13));
        self.w64(IDT + vector as u64 * 8, lo | (hi << 32));
    }
}
