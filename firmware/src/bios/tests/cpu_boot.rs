//! The ROM running on Aero's real CPU: reset vector → POST trap → option ROM scan →
//! INT 19h → a boot sector that uses INT 13h, INT 16h (with a keyboard IRQ) and INT 15h.

use aero_cpu::{Bus, Cpu, PageMapping, RunExit};
use iced_x86::code_asm::*;

use super::*;

const RAM: usize = 16 << 20;

struct TestBus {
    host: FakeHost,
    trap: Option<u32>,
    irq: Option<u8>,
}

impl Bus for TestBus {
    fn map_page(&self, paddr: u64) -> PageMapping {
        // Mappings describe the whole 4 KiB page.
        let paddr = paddr & !0xFFF;
        let rom_at = |base: u64| PageMapping::Rom {
            offset: RAM + (paddr - base) as usize,
        };
        match paddr {
            0xA0000..=0xBFFFF => PageMapping::Mmio,
            0xE0000..=0xFFFFF => rom_at(0xE0000),
            0xFFFE_0000..=0xFFFF_FFFF => rom_at(0xFFFE_0000),
            p if (p as usize) < RAM => PageMapping::Ram { offset: p as usize },
            _ => PageMapping::Mmio,
        }
    }
    fn mmio_read(&mut self, _paddr: u64, size: u8) -> u64 {
        u64::MAX >> (64 - 8 * size as u32)
    }
    fn mmio_write(&mut self, _paddr: u64, _size: u8, _value: u64) {}
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        self.host.io_read(port, size)
    }
    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        if port == Bios::TRAP_PORT {
            self.trap = Some(value);
        } else {
            self.host.io_write(port, size, value);
        }
    }
    fn tsc(&mut self) -> u64 {
        0
    }
    fn interrupt_pending(&mut self) -> bool {
        self.irq.is_some()
    }
    fn acknowledge_interrupt(&mut self) -> u8 {
        self.irq.take().unwrap_or(0x0F)
    }
    fn stop_requested(&mut self) -> bool {
        self.trap.is_some()
    }
}

/// Boot sector: read LBA 1 with CHS, print its tag; wait for a key, print it; check
/// E820 entry 0; print "OK" and halt.
fn boot_sector() -> Vec<u8> {
    let mut a = CodeAssembler::new(16).unwrap();
    let mut fail = a.create_label();
    let mut halt = a.create_label();
    a.xor(ax, ax).unwrap();
    a.mov(es, ax).unwrap();
    a.mov(ds, ax).unwrap();
    a.mov(ax, 0x0201).unwrap();
    a.mov(cx, 0x0002).unwrap();
    a.mov(dh, 0).unwrap();
    a.mov(bx, 0x8000).unwrap();
    a.int(0x13).unwrap();
    a.jc(fail).unwrap();
    a.mov(al, byte_ptr(0x8000)).unwrap();
    a.add(al, b'0' as i32).unwrap();
    a.out(0xE9, al).unwrap();
    a.mov(ah, 0x00).unwrap();
    a.int(0x16).unwrap();
    a.out(0xE9, al).unwrap();
    a.mov(eax, 0xE820).unwrap();
    a.mov(edx, 0x534D_4150).unwrap();
    a.xor(ebx, ebx).unwrap();
    a.mov(ecx, 20).unwrap();
    a.mov(di, 0x9000).unwrap();
    a.int(0x15).unwrap();
    a.jc(fail).unwrap();
    a.cmp(dword_ptr(0x9008), 0x9FC00).unwrap();
    a.jne(fail).unwrap();
    a.mov(al, b'O' as i32).unwrap();
    a.out(0xE9, al).unwrap();
    a.mov(al, b'K' as i32).unwrap();
    a.out(0xE9, al).unwrap();
    a.jmp(halt).unwrap();
    a.set_label(&mut fail).unwrap();
    a.mov(al, b'F' as i32).unwrap();
    a.out(0xE9, al).unwrap();
    a.set_label(&mut halt).unwrap();
    a.cli().unwrap();
    a.hlt().unwrap();
    let mut code = a.assemble(0x7C00).unwrap();
    code.resize(512, 0);
    code[510] = 0x55;
    code[511] = 0xAA;
    code
}

/// A 512-byte option ROM whose init prints 'V' and returns far.
fn option_rom() -> Vec<u8> {
    let mut a = CodeAssembler::new(16).unwrap();
    a.mov(al, b'V' as i32).unwrap();
    a.out(0xE9, al).unwrap();
    a.retf().unwrap();
    let code = a.assemble(3).unwrap();
    let mut rom = vec![0u8; 512];
    rom[0] = 0x55;
    rom[1] = 0xAA;
    rom[2] = 1;
    rom[3..3 + code.len()].copy_from_slice(&code);
    let sum = rom.iter().fold(0u8, |s, b| s.wrapping_add(*b));
    rom[511] = 0u8.wrapping_sub(sum);
    rom
}

#[test]
fn reset_to_boot_sector_on_the_real_cpu() {
    let mut host = FakeHost::new();
    host.add_disk(DiskId::HardDisk(0), 2048, 512);
    host.sector_mut(DiskId::HardDisk(0), 0)
        .copy_from_slice(&boot_sector());
    let mut bios = Bios::new(BiosConfig::new(RAM as u64)).unwrap();
    let mut memory = vec![0u8; RAM];
    memory.extend_from_slice(bios.rom());
    memory[0xC0000..0xC0200].copy_from_slice(&option_rom());
    let mut bus = TestBus {
        host,
        trap: None,
        irq: None,
    };
    let mut cpu = Cpu::new();
    let mut key_sent = false;
    let mut traps = 0;
    for _ in 0..10_000 {
        match cpu.run(&mut memory, &mut bus, 1_000_000) {
            RunExit::StopRequested => {
                let value = bus.trap.take().expect("stop without trap");
                let out = bios
                    .handle_trap(value, &mut cpu.state, &mut memory[..RAM], &mut bus.host)
                    .unwrap();
                assert_eq!(out, TrapOutcome::Resume);
                cpu.flush_all_caches();
                traps += 1;
            }
            RunExit::Halted if !key_sent => {
                // INT 16h is idling: press 'a' (IRQ1 → vector 09h).
                bus.host.queue_scancode(0x1E);
                bus.irq = Some(0x09);
                key_sent = true;
            }
            RunExit::Halted => break,
            other => panic!(
                "unexpected exit {other:?} at {:04x}:{:04x} traps {traps} out {:?}",
                cpu.state.seg[1].selector,
                cpu.state.rip,
                String::from_utf8_lossy(&bus.host.debug_out)
            ),
        }
    }
    let out = String::from_utf8_lossy(&bus.host.debug_out).to_string();
    assert_eq!(out, "VBooting from Hard Disk...\n1aOK", "traps: {traps}");
    assert!(key_sent);
    // The ROM initialised the keyboard controller: reset, scanning on, final command byte.
    assert!(bus.host.writes.contains(&(0x60, 1, 0xFF)));
    assert!(bus.host.writes.contains(&(0x60, 1, 0xF4)));
    assert_eq!(bus.host.kbc_cmd_byte, 0x65);
}

/// Boots `sector` from the hard disk; `on_halt(bus, n)` runs at the n-th HLT without a
/// pending interrupt and returns false to stop.
fn boot(sector: &[u8], mut on_halt: impl FnMut(&mut TestBus, usize) -> bool) -> TestBus {
    let mut host = FakeHost::new();
    host.add_disk(DiskId::HardDisk(0), 64, 512);
    host.sector_mut(DiskId::HardDisk(0), 0)
        .copy_from_slice(sector);
    let mut bios = Bios::new(BiosConfig::new(RAM as u64)).unwrap();
    let mut memory = vec![0u8; RAM];
    memory.extend_from_slice(bios.rom());
    let mut bus = TestBus {
        host,
        trap: None,
        irq: None,
    };
    let mut cpu = Cpu::new();
    let mut halts = 0;
    for _ in 0..10_000 {
        match cpu.run(&mut memory, &mut bus, 1_000_000) {
            RunExit::StopRequested => {
                let value = bus.trap.take().unwrap();
                bios.handle_trap(value, &mut cpu.state, &mut memory[..RAM], &mut bus.host)
                    .unwrap();
                cpu.flush_all_caches();
            }
            RunExit::Halted => {
                halts += 1;
                if !on_halt(&mut bus, halts) {
                    return bus;
                }
            }
            other => panic!("unexpected exit {other:?}"),
        }
    }
    panic!("guest did not finish");
}

fn finish(mut a: CodeAssembler, fail: &mut CodeLabel) -> Vec<u8> {
    let mut halt = a.create_label();
    a.jmp(halt).unwrap();
    a.set_label(fail).unwrap();
    a.mov(al, b'F' as i32).unwrap();
    a.out(0xE9, al).unwrap();
    a.set_label(&mut halt).unwrap();
    a.cli().unwrap();
    a.hlt().unwrap();
    let mut code = a.assemble(0x7C00).unwrap();
    code.resize(512, 0);
    code[510] = 0x55;
    code[511] = 0xAA;
    code
}

#[test]
fn timer_irq_advances_the_bios_tick_count() {
    let mut a = CodeAssembler::new(16).unwrap();
    let mut fail = a.create_label();
    a.mov(ah, 0).unwrap();
    a.int(0x1A).unwrap();
    a.mov(si, dx).unwrap();
    a.sti().unwrap();
    a.hlt().unwrap();
    a.mov(ah, 0).unwrap();
    a.int(0x1A).unwrap();
    a.sub(dx, si).unwrap();
    a.cmp(dx, 1).unwrap();
    a.jne(fail).unwrap();
    a.mov(al, b'T' as i32).unwrap();
    a.out(0xE9, al).unwrap();
    let sector = finish(a, &mut fail);
    let bus = boot(&sector, |bus, n| {
        if n == 1 {
            bus.irq = Some(0x08);
        }
        n == 1
    });
    let out = String::from_utf8_lossy(&bus.host.debug_out).to_string();
    assert!(out.ends_with('T'), "{out:?}");
    assert_eq!(bus.host.writes.last(), Some(&(0xE9, 1, b'T' as u32)));
    assert!(
        bus.host
            .writes
            .iter()
            .rev()
            .take(3)
            .any(|w| *w == (0x20, 1, 0x20)),
        "EOI to the master PIC"
    );
}

#[test]
fn int15_wait_idles_until_virtual_time_passes() {
    let mut a = CodeAssembler::new(16).unwrap();
    let mut fail = a.create_label();
    a.mov(ah, 0x86).unwrap();
    a.mov(cx, 0).unwrap();
    a.mov(dx, 50_000).unwrap(); // 50 ms
    a.int(0x15).unwrap();
    a.jc(fail).unwrap();
    a.mov(al, b'W' as i32).unwrap();
    a.out(0xE9, al).unwrap();
    let sector = finish(a, &mut fail);
    let mut bus_halts = 0;
    let bus = boot(&sector, |bus, n| {
        bus_halts = n;
        // Each idle HLT lets 10 ms pass (as the timer IRQ would), then wakes the CPU.
        bus.host.step_ns = 10_000_000;
        bus.irq = Some(0x08);
        !String::from_utf8_lossy(&bus.host.debug_out).ends_with('W')
    });
    assert!(String::from_utf8_lossy(&bus.host.debug_out).ends_with('W'));
    assert!((2..=8).contains(&bus_halts), "idled {bus_halts} times");
}

#[test]
fn no_bootable_device_message_on_the_real_cpu() {
    let mut bios = Bios::new(BiosConfig::new(RAM as u64)).unwrap();
    let mut memory = vec![0u8; RAM];
    memory.extend_from_slice(bios.rom());
    let mut bus = TestBus {
        host: FakeHost::new(),
        trap: None,
        irq: None,
    };
    let mut cpu = Cpu::new();
    for _ in 0..1000 {
        match cpu.run(&mut memory, &mut bus, 1_000_000) {
            RunExit::StopRequested => {
                let value = bus.trap.take().unwrap();
                bios.handle_trap(value, &mut cpu.state, &mut memory[..RAM], &mut bus.host)
                    .unwrap();
                cpu.flush_all_caches();
            }
            RunExit::Halted => break,
            other => panic!("unexpected exit {other:?}"),
        }
    }
    let out = String::from_utf8_lossy(&bus.host.debug_out).to_string();
    // Each character goes to port 0xE9 from the ROM, then through INT 10h teletype, which
    // without a VGA BIOS is the placeholder that echoes to 0xE9 as well.
    let doubled: String = "\r\nNo bootable device.\r\n"
        .chars()
        .flat_map(|c| [c, c])
        .collect();
    assert_eq!(out, doubled);
}

/// POST runs our real VGA option ROM: it hooks INT 10h, sets mode 3 and returns.
#[test]
fn vga_option_rom_hooks_int10_before_boot() {
    let vga = crate::vgabios::build_vga_bios().unwrap();
    let mut bios = Bios::new(BiosConfig::new(RAM as u64)).unwrap();
    let mut memory = vec![0u8; RAM];
    memory.extend_from_slice(bios.rom());
    memory[0xC0000..0xC0000 + vga.len()].copy_from_slice(&vga);
    let mut bus = TestBus {
        host: FakeHost::new(),
        trap: None,
        irq: None,
    };
    let mut cpu = Cpu::new();
    let int19 = TrapId::Int(0x19).code() as u32;
    for _ in 0..100 {
        match cpu.run(&mut memory, &mut bus, 1_000_000) {
            RunExit::StopRequested => {
                let value = bus.trap.take().unwrap();
                if value == int19 {
                    break;
                }
                bios.handle_trap(value, &mut cpu.state, &mut memory[..RAM], &mut bus.host)
                    .unwrap();
                cpu.flush_all_caches();
            }
            RunExit::BudgetExhausted => {}
            other => panic!(
                "unexpected exit {other:?} at {:04x}:{:04x}",
                cpu.state.seg[1].selector, cpu.state.rip
            ),
        }
    }
    assert_eq!(
        &memory[0x42..0x44],
        &[0x00, 0xC0],
        "INT 10h now points into the VGA ROM"
    );
    assert_eq!(
        cpu.state.seg[1].selector, 0xF000,
        "INT 19h reached from the ROM"
    );
    assert_eq!(memory[0x449], 3, "VGA BIOS set mode 3");
}

/// POST programs the MTRRs through the CPU's own WRMSR (SeaBIOS's layout): the boot
/// sector reads them back with RDMSR and prints the raw values on port E9h.
#[test]
fn post_programs_the_mtrrs_like_seabios() {
    const MSRS: [u32; 9] = [
        0x2FF, 0x250, 0x258, 0x259, 0x268, 0x26F, 0x200, 0x201, 0x277,
    ];
    let mut a = CodeAssembler::new(16).unwrap();
    let mut fail = a.create_label();
    a.xor(ax, ax).unwrap();
    a.mov(ds, ax).unwrap();
    a.mov(di, 0x9000).unwrap();
    for msr in MSRS {
        a.mov(ecx, msr).unwrap();
        a.rdmsr().unwrap();
        a.mov(dword_ptr(di), eax).unwrap();
        a.mov(dword_ptr(di + 4), edx).unwrap();
        a.add(di, 8).unwrap();
    }
    let mut out = a.create_label();
    a.mov(si, 0x9000).unwrap();
    a.mov(cx, (MSRS.len() * 8) as i32).unwrap();
    a.set_label(&mut out).unwrap();
    a.lodsb().unwrap();
    a.out(0xE9, al).unwrap();
    a.loop_(out).unwrap();
    let sector = finish(a, &mut fail);
    let bus = boot(&sector, |_, _| false);
    let out = &bus.host.debug_out;
    let raw = &out[out.len() - MSRS.len() * 8..];
    let values: Vec<u64> = raw
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(
        values,
        [
            0xC06,                 // MTRRs and fixed ranges on, default write-back
            0x0606_0606_0606_0606, // 0-7FFFF WB
            0x0606_0606_0606_0606, // 80000-9FFFF WB
            0,                     // A0000-BFFFF UC
            0x0505_0505_0505_0505, // C0000-C7FFF WP
            0x0505_0505_0505_0505, // F8000-FFFFF WP
            0x8000_0000,           // above RAM (16 MiB): from 2 GiB ...
            0xFF_8000_0800,        // ... 2 GiB, uncachable
            0x0007_0406_0007_0406, // PAT at its reset value
        ],
        "{values:x?}"
    );
}
