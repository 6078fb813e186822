//! Runs the ROM on Aero's CPU against the real VGA model (aero-gpu): a tiny machine with
//! 1 MiB of RAM, the ROM shadowed at C0000, the VGA's ports and legacy window, and a
//! PCI configuration space holding just the VGA function.

use aero_cpu::{Bus, Cpu, PageMapping, Reg, RunExit, Seg};
use aero_gpu::Vga;

use super::build_vga_bios;
use super::edid::build_edid;
use super::test_rig::{
    LFB_BASE, RAM_SIZE, ROM_BASE, adapter_io_read, adapter_io_write, ram_calling_init,
};

const STUB: usize = 0x700;
const STACK_TOP: u64 = 0x7000;

struct TestBus {
    vga: Vga,
    pci_address: u32,
    rom_len: usize,
}

impl Bus for TestBus {
    fn map_page(&self, paddr: u64) -> PageMapping {
        let page = (paddr & !0xFFF) as usize;
        match page {
            0xA0000..=0xBFFFF => PageMapping::Mmio,
            p if (ROM_BASE..ROM_BASE + self.rom_len).contains(&p) => PageMapping::Rom { offset: p },
            p if p < RAM_SIZE => PageMapping::Ram { offset: p },
            _ => PageMapping::Mmio,
        }
    }
    fn mmio_read(&mut self, paddr: u64, size: u8) -> u64 {
        (0..u64::from(size)).fold(0, |acc, i| {
            let a = paddr + i;
            let byte = if (0xA0000..0xC0000).contains(&a) {
                self.vga.mem_read((a - 0xA0000) as u32)
            } else {
                0xFF
            };
            acc | (u64::from(byte) << (8 * i))
        })
    }
    fn mmio_write(&mut self, paddr: u64, size: u8, value: u64) {
        for i in 0..u64::from(size) {
            let a = paddr + i;
            if (0xA0000..0xC0000).contains(&a) {
                self.vga
                    .mem_write((a - 0xA0000) as u32, (value >> (8 * i)) as u8);
            }
        }
    }
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        adapter_io_read(&mut self.vga, self.pci_address, port, size)
    }
    fn io_write(&mut self, port: u16, size: u8, value: u32) {
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

struct Machine {
    cpu: Cpu,
    ram: Vec<u8>,
    bus: TestBus,
}

impl Machine {
    /// A machine whose POST has just far-called the VGA ROM's init entry.
    fn booted() -> Machine {
        let rom = build_vga_bios().expect("ROM builds");
        let mut cpu = Cpu::new();
        let ram = ram_calling_init(&rom, &mut cpu, STACK_TOP as usize);
        let mut m = Machine {
            cpu,
            ram,
            bus: TestBus {
                vga: Vga::new(),
                pci_address: 0,
                rom_len: rom.len(),
            },
        };
        m.run();
        assert_eq!(
            m.cpu.state.seg(Seg::Cs).selector,
            0,
            "init returned with RETF"
        );
        m
    }

    fn run(&mut self) {
        self.cpu.state.halted = false;
        self.cpu.flush_all_caches();
        let exit = self.cpu.run(&mut self.ram, &mut self.bus, 5_000_000);
        let (cs, ip) = (self.cpu.state.seg(Seg::Cs).selector, self.cpu.state.rip);
        let near = super::rom::build_with_symbols()
            .ok()
            .and_then(|(_, syms)| {
                syms.into_iter()
                    .filter(|(_, a)| u64::from(*a) <= ip)
                    .max_by_key(|(_, a)| *a)
            })
            .map(|(name, a)| format!("{name}+{:#x}", ip - u64::from(a)))
            .unwrap_or_default();
        assert_eq!(
            exit,
            RunExit::Halted,
            "ROM code did not reach the HLT; at {cs:04X}:{ip:04X} ({near})"
        );
    }

    /// Executes `INT 10h` with the given AX, BX, CX, DX, ES and DI; returns the CPU.
    fn int10(&mut self, ax: u16, bx: u16, cx: u16, dx: u16, es: u16, di: u16) -> &Cpu {
        self.ram[STUB..STUB + 3].copy_from_slice(&[0xCD, 0x10, 0xF4]);
        let s = &mut self.cpu.state;
        for (reg, value) in [
            (Reg::Rax, ax),
            (Reg::Rbx, bx),
            (Reg::Rcx, cx),
            (Reg::Rdx, dx),
            (Reg::Rdi, di),
        ] {
            s.set_reg(reg, u64::from(value));
        }
        s.load_seg_real(Seg::Es, es);
        s.load_seg_real(Seg::Ds, 0);
        s.load_seg_real(Seg::Ss, 0);
        s.set_reg(Reg::Rsp, STACK_TOP);
        s.load_seg_real(Seg::Cs, 0);
        s.rip = STUB as u64;
        self.run();
        &self.cpu
    }

    /// Executes `INT 10h` with the registers as they are (full 32-bit values).
    fn int10_raw(&mut self) {
        self.ram[STUB..STUB + 3].copy_from_slice(&[0xCD, 0x10, 0xF4]);
        let s = &mut self.cpu.state;
        s.load_seg_real(Seg::Ss, 0);
        s.set_reg(Reg::Rsp, STACK_TOP);
        s.load_seg_real(Seg::Cs, 0);
        s.rip = STUB as u64;
        self.run();
    }

    fn reg16(&self, r: Reg) -> u16 {
        self.cpu.state.reg(r) as u16
    }

    fn word(&self, addr: usize) -> u16 {
        u16::from_le_bytes([self.ram[addr], self.ram[addr + 1]])
    }

    fn vga_reg(&mut self, index_port: u16, index: u8) -> u8 {
        self.bus.vga.io_write(index_port, 1, u32::from(index));
        self.bus.vga.io_read(index_port + 1, 1) as u8
    }

    fn dispi(&mut self, index: u16) -> u16 {
        self.bus.vga.io_write(0x1CE, 2, u32::from(index));
        self.bus.vga.io_read(0x1CF, 2) as u16
    }

    fn teletype(&mut self, text: &str) {
        for b in text.bytes() {
            self.int10(0x0E00 | u16::from(b), 0x0007, 0, 0, 0, 0);
        }
    }
}

#[test]
fn vgabios_exec_init_sets_mode3_and_teletype_shows_text() {
    let mut m = Machine::booted();
    // Vectors and BDA.
    assert_eq!(m.word(0x10 * 4 + 2), 0xC000, "INT 10h hooked");
    assert_eq!(m.ram[0x449], 3);
    assert_eq!(m.word(0x44A), 80);
    assert_eq!(m.ram[0x484], 24);
    assert_eq!(m.word(0x485), 16);
    assert_eq!(m.word(0x463), 0x3D4);
    assert_eq!(m.word(0x4A8 + 2), 0xC000);
    m.teletype("Hello\r\nAero");
    let screen = m.bus.vga.text_screen().expect("text mode");
    let lines: Vec<&str> = screen.lines().collect();
    assert_eq!(lines.len(), 25);
    assert_eq!(lines[0], "Hello");
    assert_eq!(lines[1], "Aero");
    assert_eq!(m.word(0x450), 0x0104, "cursor row 1, column 4");
    // CRTC cursor location follows.
    let cursor = u16::from(m.vga_reg(0x3D4, 0x0E)) << 8 | u16::from(m.vga_reg(0x3D4, 0x0F));
    assert_eq!(cursor, 80 + 4);
    // The font went to plane 2: glyph 'H' row 5 is the ROM's 8×16 glyph.
    let font = aero_gpu::font::font_8x16();
    let plane2 = &m.bus.vga.planes()[2 * aero_gpu::vga::PLANE_SIZE..];
    assert_eq!(
        &plane2[usize::from(b'H') * 32..usize::from(b'H') * 32 + 16],
        font.glyph(b'H')
    );
}

#[test]
fn vgabios_exec_teletype_scrolls_and_write_string() {
    let mut m = Machine::booted();
    for i in 0..30 {
        m.teletype(&format!("line {i}\r\n"));
    }
    let screen = m.bus.vga.text_screen().unwrap();
    let lines: Vec<&str> = screen.lines().collect();
    assert_eq!(lines[0], "line 6");
    assert_eq!(lines[23], "line 29");
    assert_eq!(lines[24], "");
    // AH=13h with attributes in the string, cursor not moved.
    let text = [b'O', 0x1E, b'K', 0x4F];
    m.ram[0x5000..0x5004].copy_from_slice(&text);
    m.cpu.state.set_reg(Reg::Rbp, 0x5000);
    m.int10(0x1302, 0x0000, 2, 0x0A05, 0x0000, 0);
    let screen = m.bus.vga.text_screen().unwrap();
    assert_eq!(screen.lines().nth(10), Some("line OK"));
    assert_eq!(m.word(0x450), 0x1800, "AL bit 0 clear: cursor stays");
    // Read back with AH=08h after moving the cursor there: attributes came from the string.
    m.int10(0x0200, 0, 0, 0x0A05, 0, 0);
    m.int10(0x0800, 0, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rax), 0x1E4F);
    m.int10(0x0200, 0, 0, 0x0A06, 0, 0);
    m.int10(0x0800, 0, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rax), 0x4F4B);
}

#[test]
fn vgabios_exec_80x50_font_switch() {
    let mut m = Machine::booted();
    m.int10(0x1112, 0x0000, 0, 0, 0, 0);
    assert_eq!(m.ram[0x484], 49);
    assert_eq!(m.word(0x485), 8);
    assert_eq!(m.vga_reg(0x3D4, 0x09) & 0x1F, 7, "8-line cells");
    let screen = m.bus.vga.text_screen().unwrap();
    assert_eq!(screen.lines().count(), 50);
    // AX=1130h BH=6: pointer to the ROM 8×16 font, CX = height, DL = rows - 1.
    m.int10(0x1130, 0x0600, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rcx), 8);
    assert_eq!(m.reg16(Reg::Rdx) & 0xFF, 49);
    assert_eq!(m.cpu.state.seg(Seg::Es).selector, 0xC000);
}

#[test]
fn vgabios_exec_mode13h_registers_and_pixels() {
    let mut m = Machine::booted();
    m.int10(0x0013, 0, 0, 0, 0, 0);
    assert_eq!(m.ram[0x449], 0x13);
    assert_eq!(m.bus.vga.io_read(0x3CC, 1), 0x63, "misc output");
    assert_eq!(m.vga_reg(0x3C4, 0x04), 0x0E, "chain-4");
    assert_eq!(m.vga_reg(0x3CE, 0x05), 0x40, "256-colour shift");
    assert_eq!(m.vga_reg(0x3CE, 0x06), 0x05, "A0000 64K graphics");
    assert_eq!(m.vga_reg(0x3D4, 0x13), 0x28);
    m.bus.vga.io_read(0x3DA, 1);
    m.bus.vga.io_write(0x3C0, 1, 0x30);
    assert_eq!(m.bus.vga.io_read(0x3C1, 1), 0x41, "attribute mode control");
    // DAC entry 0x28 of the default palette is red.
    m.bus.vga.io_write(0x3C7, 1, 0x28);
    let rgb: Vec<u32> = (0..3).map(|_| m.bus.vga.io_read(0x3C9, 1)).collect();
    assert_eq!(rgb, [63, 0, 0]);
    m.int10(0x0C2A, 0, 10, 20, 0, 0);
    assert_eq!(m.bus.mmio_read(0xA0000 + 20 * 320 + 10, 1), 0x2A);
    m.int10(0x0D00, 0, 10, 20, 0, 0);
    assert_eq!(m.reg16(Reg::Rax) & 0xFF, 0x2A);
    // A character in colour 0x0F: the glyph's top-left pixel row is drawn in 8 bytes.
    m.teletype("");
    m.int10(0x0E41, 0x000F, 0, 0, 0, 0);
    // AH=08h finds it again by matching the font.
    m.int10(0x0200, 0, 0, 0, 0, 0);
    m.int10(0x0800, 0, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rax), u16::from(b'A'));
    let font = aero_gpu::font::font_8x8();
    let row = font.glyph(b'A')[3];
    for x in 0..8u64 {
        let expect = if row & (0x80 >> x) != 0 { 0x0F } else { 0 };
        assert_eq!(m.bus.mmio_read(0xA0000 + 3 * 320 + x, 1), expect);
    }
}

#[test]
fn vgabios_exec_mode12h_planar_text_and_pixels() {
    let mut m = Machine::booted();
    m.int10(0x0012, 0, 0, 0, 0, 0);
    assert_eq!(m.bus.vga.io_read(0x3CC, 1), 0xE3);
    assert_eq!(m.ram[0x484], 29);
    m.int10(0x0C09, 0, 100, 200, 0, 0);
    m.int10(0x0D00, 0, 100, 200, 0, 0);
    assert_eq!(m.reg16(Reg::Rax) & 0xFF, 9);
    m.int10(0x0D00, 0, 101, 200, 0, 0);
    assert_eq!(m.reg16(Reg::Rax) & 0xFF, 0);
    // Teletype in colour 14 (planes 1, 2, 3): glyph row bits appear in those planes only.
    m.int10(0x0E41, 0x000E, 0, 0, 0, 0);
    let font = aero_gpu::font::font_8x16();
    let planes = m.bus.vga.planes();
    let bits = font.glyph(b'A')[5];
    let offset = 5 * 80;
    assert_eq!(planes[offset], 0, "plane 0 clear for colour 14");
    for p in 1..4 {
        assert_eq!(planes[p * aero_gpu::vga::PLANE_SIZE + offset], bits);
    }
    m.int10(0x0200, 0, 0, 0, 0, 0);
    m.int10(0x0800, 0, 0, 0, 0, 0);
    assert_eq!(
        m.reg16(Reg::Rax),
        u16::from(b'A'),
        "AH=08h matches the glyph"
    );
    // Scroll the screen by writing past the last row: the glyph moves up 16 lines.
    m.int10(0x0200, 0, 0, 0x1D00, 0, 0);
    m.teletype("\n");
    let planes = m.bus.vga.planes();
    assert_eq!(
        planes[aero_gpu::vga::PLANE_SIZE + offset],
        0,
        "row 0 scrolled away"
    );
    assert_eq!(m.word(0x450), 0x1D00);
}

#[test]
fn vgabios_exec_vbe_controller_and_mode_info() {
    let mut m = Machine::booted();
    m.ram[0x1000..0x1004].copy_from_slice(b"VBE2");
    m.int10(0x4F00, 0, 0, 0, 0x0100, 0x0000);
    assert_eq!(m.reg16(Reg::Rax), 0x004F);
    assert_eq!(&m.ram[0x1000..0x1004], b"VESA");
    assert_eq!(m.word(0x1004), 0x0300);
    assert_eq!(m.word(0x1012), 256, "16 MiB in 64 KiB units");
    let list = usize::from(m.word(0x1010)) * 16 + usize::from(m.word(0x100E));
    let modes: Vec<u16> = (0..)
        .map(|i| m.word(list + 2 * i))
        .take_while(|&n| n != 0xFFFF)
        .take(100)
        .collect();
    assert!(modes.contains(&0x118) && modes.contains(&0x138) && modes.contains(&0x14D));
    let oem = usize::from(m.word(0x1008)) * 16 + usize::from(m.word(0x1006));
    assert!(m.ram[oem..].starts_with(b"Aero VGA BIOS\0"));

    m.int10(0x4F01, 0, 0x0138, 0, 0x0200, 0);
    assert_eq!(m.reg16(Reg::Rax), 0x004F);
    let info = 0x2000;
    assert_eq!(m.word(info + 0x12), 1024);
    assert_eq!(m.word(info + 0x14), 768);
    assert_eq!(m.ram[info + 0x19], 32);
    assert_eq!(m.word(info + 0x10), 4096);
    let lfb = u32::from(m.word(info + 0x28)) | u32::from(m.word(info + 0x2A)) << 16;
    assert_eq!(
        lfb, LFB_BASE,
        "PhysBasePtr from the display function's BAR2"
    );
    assert_eq!(m.word(info + 0x0E), 0xC000, "WinFuncPtr segment");
    assert_eq!(m.ram[info + 0x1D], 4, "16 MiB / 3 MiB frames - 1");
    // Unknown mode → failure status.
    m.int10(0x4F01, 0, 0x0199, 0, 0x0200, 0);
    assert_eq!(m.reg16(Reg::Rax), 0x014F);
}

#[test]
fn vgabios_exec_vbe_set_mode_programs_dispi() {
    let mut m = Machine::booted();
    m.int10(0x4F02, 0x4138, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rax), 0x004F);
    assert_eq!(m.dispi(1), 1024);
    assert_eq!(m.dispi(2), 768);
    assert_eq!(m.dispi(3), 32);
    assert_eq!(m.dispi(4) & 0x41, 0x41, "enabled with LFB");
    let mode = m.bus.vga.vbe_mode().expect("VBE mode active");
    assert_eq!((mode.width, mode.height, mode.bpp), (1024, 768, 32));
    m.int10(0x4F03, 0, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rbx), 0x4138);
    // Display start and bank switching through the far entry point's core.
    m.int10(0x4F07, 0x0000, 0, 100, 0, 0);
    assert_eq!(m.dispi(9), 100);
    m.int10(0x4F07, 0x0001, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rdx), 100);
    m.int10(0x4F05, 0x0000, 0, 7, 0, 0);
    assert_eq!(m.dispi(5), 7);
    m.int10(0x4F06, 0x0001, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rbx), 4096);
    assert_eq!(m.reg16(Reg::Rcx), 1024);
    // 1366×768: DISPI widths are multiples of 8, so the raster is 1368 pixels, matching
    // BytesPerScanLine; 4F03h still names the mode.
    m.int10(0x4F02, 0x4145, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rax), 0x004F);
    assert_eq!((m.dispi(1), m.dispi(2), m.dispi(6)), (1368, 768, 1368));
    assert_eq!(m.bus.vga.vbe_mode().map(|v| v.pitch), Some(1368 * 4));
    m.int10(0x4F03, 0, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rbx), 0x4145);
    // Back to text mode through the VGA path.
    m.int10(0x0003, 0, 0, 0, 0, 0);
    assert_eq!(m.dispi(4) & 1, 0);
    assert!(m.bus.vga.text_screen().is_some());
}

#[test]
fn vgabios_exec_preserves_upper_register_halves() {
    let mut m = Machine::booted();
    // 4F01h computes with EAX/EBX/EDX inside; the caller's upper halves must survive.
    for (reg, value) in [
        (Reg::Rax, 0xFFFF_4F01u64),
        (Reg::Rbx, 0xDEAD_AA00),
        (Reg::Rcx, 0xC0DE_0118),
        (Reg::Rdx, 0xBEEF_0000),
        (Reg::Rsi, 0x1234_5678),
        (Reg::Rdi, 0x5555_0000),
    ] {
        m.cpu.state.set_reg(reg, value);
    }
    m.cpu.state.load_seg_real(Seg::Es, 0x0200);
    m.int10_raw();
    let s = &m.cpu.state;
    assert_eq!(s.reg(Reg::Rax) as u32, 0xFFFF_004F);
    assert_eq!(s.reg(Reg::Rbx) as u32, 0xDEAD_AA00);
    assert_eq!(s.reg(Reg::Rcx) as u32, 0xC0DE_0118);
    assert_eq!(s.reg(Reg::Rdx) as u32, 0xBEEF_0000);
    assert_eq!(s.reg(Reg::Rsi) as u32, 0x1234_5678);
    assert_eq!(s.reg(Reg::Rdi) as u32, 0x5555_0000);
    assert_eq!(
        m.word(0x2000 + 0x12),
        1024,
        "mode 118h info written at ES:DI"
    );
}

#[test]
fn vgabios_exec_ddc_returns_the_edid() {
    let mut m = Machine::booted();
    m.int10(0x4F15, 0x0000, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rax), 0x004F);
    assert_eq!(m.reg16(Reg::Rbx) & 0x02, 0x02, "DDC2");
    m.int10(0x4F15, 0x0001, 0, 0, 0x0300, 0);
    assert_eq!(m.reg16(Reg::Rax), 0x004F);
    assert_eq!(&m.ram[0x3000..0x3080], &build_edid()[..]);
    m.int10(0x4F15, 0x0001, 0, 1, 0x0300, 0);
    assert_eq!(m.reg16(Reg::Rax), 0x014F, "no extension blocks");
}

#[test]
fn vgabios_exec_palette_and_state_services() {
    let mut m = Machine::booted();
    // AX=1010h set DAC 5, AX=1015h read it back.
    m.int10(0x1010, 5, 0x2A15, 0x3F00, 0, 0);
    m.int10(0x1015, 5, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rdx) >> 8, 0x3F);
    assert_eq!(m.reg16(Reg::Rcx), 0x2A15);
    // AX=1000h attribute register, AX=1007h read.
    m.int10(0x1000, 0x2D03, 0, 0, 0, 0);
    m.int10(0x1007, 0x0003, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rbx) >> 8, 0x2D);
    // AH=1Ah display combination, AH=12h BL=10h EGA info.
    m.int10(0x1A00, 0, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rax) & 0xFF, 0x1A);
    assert_eq!(m.reg16(Reg::Rbx), 0x0008);
    m.int10(0x1200, 0x0010, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rbx), 0x0003);
    // AH=1Bh state table.
    m.int10(0x1B00, 0, 0, 0, 0x0400, 0);
    assert_eq!(m.reg16(Reg::Rax) & 0xFF, 0x1B);
    assert_eq!(m.ram[0x4004], 3, "mode");
    assert_eq!(m.word(0x4005), 80);
    assert_eq!(m.ram[0x4022], 25, "rows");
    assert_eq!(m.word(0x4027), 16, "colours");
    assert_eq!(m.ram[0x402A], 2, "400 scan lines");
    // AH=0Fh.
    m.int10(0x0F00, 0, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rax), 0x5003);
    // AH=1Ch: size, save, change, restore.
    m.int10(0x1C00, 0, 7, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rbx), 16);
    m.cpu.state.set_reg(Reg::Rbx, 0);
    m.int10(0x1C01, 0x0000, 7, 0, 0x0600, 0);
    m.int10(0x0013, 0, 0, 0, 0, 0);
    m.int10(0x1C02, 0x0000, 7, 0, 0x0600, 0);
    assert_eq!(m.ram[0x449], 3, "BDA restored");
    assert_eq!(m.vga_reg(0x3CE, 0x06), 0x0E, "graphics registers restored");
    m.bus.vga.io_write(0x3C7, 1, 5);
    assert_eq!(m.bus.vga.io_read(0x3C9, 1), 0x3F, "DAC restored");
}

#[test]
fn vgabios_exec_cga_mode4_pixels_text_and_palette() {
    let mut m = Machine::booted();
    m.int10(0x0004, 0, 0, 0, 0, 0);
    assert_eq!(m.ram[0x449], 4);
    assert_eq!(m.word(0x44A), 40);
    // Pixel (5, 3): odd line → second bank; 2 bits per pixel, leftmost in the high bits.
    m.int10(0x0C02, 0, 5, 3, 0, 0);
    let byte = m.bus.mmio_read(0xB8000 + 0x2000 + 80 + 1, 1) as u8;
    assert_eq!(
        byte, 0b0010_0000,
        "pixel 1 of the byte (bits 5:4) = colour 2"
    );
    m.int10(0x0D00, 0, 5, 3, 0, 0);
    assert_eq!(m.reg16(Reg::Rax) & 0xFF, 2);
    // A glyph in colour 3 and its read-back.
    m.int10(0x0200, 0, 0, 0x0102, 0, 0);
    m.int10(0x0E5A, 0x0003, 0, 0, 0, 0);
    m.int10(0x0200, 0, 0, 0x0102, 0, 0);
    m.int10(0x0800, 0, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rax), u16::from(b'Z'));
    // AH=0Bh BH=1: palette 0 puts green/red/brown in attributes 1–3 (bright: the mode
    // set left the intensity bit on, as the BDA palette byte 30h says).
    m.int10(0x0B00, 0x0100, 0, 0, 0, 0);
    for (index, colour) in [(1u8, 0x12u8), (2, 0x14), (3, 0x16)] {
        m.int10(0x1007, u16::from(index), 0, 0, 0, 0);
        assert_eq!(m.reg16(Reg::Rbx) >> 8, u16::from(colour));
    }
    // BH=0 BL=01h: background blue, intensity off → attribute 0 = 1, palette dims.
    m.int10(0x0B00, 0x0001, 0, 0, 0, 0);
    m.int10(0x1007, 0x0000, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rbx) >> 8, 1);
    m.int10(0x1007, 0x0001, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rbx) >> 8, 2);
}

#[test]
fn vgabios_exec_user_font_and_dac_blocks() {
    let mut m = Machine::booted();
    // AX=1100h: one 16-line glyph for character 80h into map 0.
    let glyph: Vec<u8> = (0..16u8).map(|i| i.wrapping_mul(17)).collect();
    m.ram[0x5000..0x5010].copy_from_slice(&glyph);
    m.cpu.state.set_reg(Reg::Rbp, 0x5000);
    m.int10(0x1100, 0x1000, 1, 0x80, 0, 0);
    let plane2 = &m.bus.vga.planes()[2 * aero_gpu::vga::PLANE_SIZE..];
    assert_eq!(&plane2[0x80 * 32..0x80 * 32 + 16], &glyph[..]);
    assert!(
        plane2[0x80 * 32 + 16..0x81 * 32].iter().all(|&b| b == 0),
        "slot padding cleared"
    );
    assert_eq!(
        &plane2[b'A' as usize * 32..b'A' as usize * 32 + 16],
        aero_gpu::font::font_8x16().glyph(b'A')
    );
    // Text mode still works after the plane-2 access.
    m.teletype("ok");
    assert!(m.bus.vga.text_screen().unwrap().starts_with("ok"));
    // AX=1012h / 1017h: write three DAC entries from ES:DX, read them back.
    let colours = [1u8, 2, 3, 10, 20, 30, 63, 0, 63];
    m.ram[0x5100..0x5109].copy_from_slice(&colours);
    m.int10(0x1012, 0x0040, 3, 0x5100, 0, 0);
    m.int10(0x1017, 0x0040, 3, 0x5200, 0, 0);
    assert_eq!(&m.ram[0x5200..0x5209], &colours);
}

#[test]
fn vgabios_exec_vbe_palette_and_state_save_restore() {
    let mut m = Machine::booted();
    m.int10(0x4F02, 0x4101, 0, 0, 0, 0); // 640×480×8
    assert_eq!(m.reg16(Reg::Rax), 0x004F);
    // 4F09h: entries are blue, green, red, pad.
    m.ram[0x5000..0x5008].copy_from_slice(&[1, 2, 3, 0, 4, 5, 6, 0]);
    m.int10(0x4F09, 0x0000, 2, 0x10, 0, 0x5000);
    assert_eq!(m.reg16(Reg::Rax), 0x004F);
    m.bus.vga.io_write(0x3C7, 1, 0x11);
    let rgb: Vec<u32> = (0..3).map(|_| m.bus.vga.io_read(0x3C9, 1)).collect();
    assert_eq!(rgb, [6, 5, 4]);
    m.int10(0x4F09, 0x0001, 1, 0x10, 0, 0x5100);
    assert_eq!(&m.ram[0x5100..0x5104], &[1, 2, 3, 0]);
    m.int10(0x4F08, 0x0001, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rbx) >> 8, 6, "6-bit DAC after a mode set");
    m.int10(0x4F08, 0x0800, 0, 0, 0, 0);
    assert_eq!((m.reg16(Reg::Rax), m.reg16(Reg::Rbx) >> 8), (0x004F, 8));
    assert_eq!(
        m.dispi(4) & 0x21,
        0x21,
        "DISPI 8-bit DAC flag, mode still on"
    );
    m.int10(0x4F08, 0x0600, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rbx) >> 8, 6);
    assert_eq!(m.dispi(4) & 0x20, 0);
    // 4F04h: save everything (incl. DISPI), switch to text, restore the VBE mode.
    m.int10(0x4F04, 0, 0x000F, 0x0000, 0, 0);
    let blocks = m.reg16(Reg::Rbx);
    assert_eq!(blocks, 17);
    m.int10(0x4F04, 0x0000, 0x000F, 0x0001, 0x0600, 0);
    assert_eq!(m.reg16(Reg::Rax), 0x004F);
    m.int10(0x0003, 0, 0, 0, 0, 0);
    assert!(m.bus.vga.vbe_mode().is_none());
    m.int10(0x4F04, 0x0000, 0x000F, 0x0002, 0x0600, 0);
    assert_eq!(m.reg16(Reg::Rax), 0x004F);
    let mode = m.bus.vga.vbe_mode().expect("VBE mode restored");
    assert_eq!((mode.width, mode.height, mode.bpp), (640, 480, 8));
    m.bus.vga.io_write(0x3C7, 1, 0x11);
    assert_eq!(m.bus.vga.io_read(0x3C9, 1), 6, "DAC restored");
}

#[test]
fn vgabios_exec_scan_line_selection_for_text_modes() {
    let mut m = Machine::booted();
    // 350 lines: 8×14 cells.
    m.int10(0x1201, 0x0030, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rax) & 0xFF, 0x12);
    m.int10(0x0003, 0, 0, 0, 0, 0);
    assert_eq!(m.word(0x485), 14);
    assert_eq!(m.ram[0x484], 24);
    assert_eq!(m.bus.vga.io_read(0x3CC, 1), 0xA3);
    assert_eq!(m.vga_reg(0x3D4, 0x09), 0x4D);
    let plane2 = &m.bus.vga.planes()[2 * aero_gpu::vga::PLANE_SIZE..];
    assert_eq!(
        &plane2[usize::from(b'A') * 32..usize::from(b'A') * 32 + 14],
        &aero_gpu::font::font_8x16().glyph(b'A')[1..15]
    );
    m.teletype("x");
    assert_eq!(m.bus.vga.text_screen().unwrap().lines().count(), 25);
    // 200 lines: 8×8 cells, double-scanned.
    m.int10(0x1200, 0x0030, 0, 0, 0, 0);
    m.int10(0x0003, 0, 0, 0, 0, 0);
    assert_eq!(m.word(0x485), 8);
    assert_eq!(m.vga_reg(0x3D4, 0x09), 0xC7);
    // Back to 400 lines.
    m.int10(0x1202, 0x0030, 0, 0, 0, 0);
    m.int10(0x0003, 0, 0, 0, 0, 0);
    assert_eq!(m.word(0x485), 16);
    assert_eq!(m.bus.vga.io_read(0x3CC, 1), 0x67);
}

/// AH=03h after a colour text mode set reports the CGA-style cursor type 0607h (what
/// IBM's and SeaBIOS's VGA BIOS return), while the CRTC holds the mode table's cursor
/// for the cell: 0D/0E for 16 lines, 0B/0C for 14.
#[test]
fn vgabios_exec_mode_set_reports_the_cga_cursor_type() {
    let mut m = Machine::booted();
    m.int10(0x0300, 0, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rcx), 0x0607);
    assert_eq!(
        (m.vga_reg(0x3D4, 0x0A), m.vga_reg(0x3D4, 0x0B)),
        (0x0D, 0x0E)
    );
    m.int10(0x1201, 0x0030, 0, 0, 0, 0);
    m.int10(0x0003, 0, 0, 0, 0, 0);
    m.int10(0x0300, 0, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rcx), 0x0607, "350 lines");
    assert_eq!(
        (m.vga_reg(0x3D4, 0x0A) & 0x1F, m.vga_reg(0x3D4, 0x0B) & 0x1F),
        (0x0B, 0x0C)
    );
    // Mode 7 keeps the monochrome adapter's own type.
    m.int10(0x0007, 0, 0, 0, 0, 0);
    m.int10(0x0300, 0, 0, 0, 0, 0);
    assert_eq!(m.reg16(Reg::Rcx), 0x0B0C);
}
