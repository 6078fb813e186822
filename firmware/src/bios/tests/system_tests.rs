use aero_cpu::{Reg, Seg};

use super::*;

fn e820_all(rig: &mut Rig) -> Vec<E820Entry> {
    let mut out = Vec::new();
    let mut ebx = 0u64;
    loop {
        rig.set(Reg::Rax, 0xE820);
        rig.set(Reg::Rdx, 0x534D_4150);
        rig.set(Reg::Rcx, 24);
        rig.set(Reg::Rbx, ebx);
        rig.set(Reg::Rdi, 0x500);
        rig.seg_real(Seg::Es, 0);
        let ret = rig.int(0x15);
        assert!(!cf(&ret));
        assert_eq!(rig.get(Reg::Rax) as u32, 0x534D_4150);
        assert_eq!(rig.get(Reg::Rcx) as u32, 24);
        assert_eq!(
            &rig.ram[0x514..0x518],
            &[1, 0, 0, 0],
            "extended attributes: enabled"
        );
        let b = &rig.ram[0x500..0x514];
        let kind = match u32::from_le_bytes(b[16..20].try_into().unwrap()) {
            1 => E820Kind::Ram,
            2 => E820Kind::Reserved,
            3 => E820Kind::AcpiReclaim,
            4 => E820Kind::AcpiNvs,
            k => panic!("kind {k}"),
        };
        out.push(E820Entry {
            base: u64::from_le_bytes(b[0..8].try_into().unwrap()),
            len: u64::from_le_bytes(b[8..16].try_into().unwrap()),
            kind,
        });
        ebx = rig.get(Reg::Rbx) & 0xFFFF_FFFF;
        if ebx == 0 {
            break;
        }
        assert!(out.len() < 64);
    }
    out
}

#[test]
fn e820_through_int15_matches_the_plan() {
    let mut rig = Rig::new(FakeHost::new());
    rig.post();
    let entries = e820_all(&mut rig);
    assert_eq!(entries, rig.bios.memory_map());
    assert_eq!(
        entries[0],
        E820Entry {
            base: 0,
            len: 0x9FC00,
            kind: E820Kind::Ram
        }
    );
    // Bad signature / small buffer / index beyond the end fail.
    rig.set(Reg::Rax, 0xE820);
    rig.set(Reg::Rdx, 0);
    assert!(cf(&rig.int(0x15)));
    rig.set(Reg::Rax, 0xE820);
    rig.set(Reg::Rdx, 0x534D_4150);
    rig.set(Reg::Rbx, 999);
    rig.set(Reg::Rcx, 20);
    assert!(cf(&rig.int(0x15)));
}

#[test]
fn e801_and_88() {
    let mut rig = Rig::new(FakeHost::new());
    rig.set(Reg::Rax, 0xE801);
    assert!(!cf(&rig.int(0x15)));
    // 16 MiB machine: 128 KiB of ACPI at the top, nothing above 16 MiB usable.
    assert_eq!(rig.get(Reg::Rax) as u16, 15 * 1024 - 128);
    assert_eq!(rig.get(Reg::Rcx) as u16, 15 * 1024 - 128);
    assert_eq!(rig.get(Reg::Rbx) as u16, 0);
    rig.set(Reg::Rax, 0x8800);
    assert!(!cf(&rig.int(0x15)));
    assert_eq!(rig.get(Reg::Rax) as u16, (15 * 1024 - 128) as u16);
}

#[test]
fn a20_and_config_table() {
    let mut rig = Rig::new(FakeHost::new());
    rig.set(Reg::Rax, 0x2401);
    assert!(!cf(&rig.int(0x15)));
    assert_eq!(rig.host.port92 & 3, 2);
    rig.set(Reg::Rax, 0x2402);
    rig.int(0x15);
    assert_eq!(rig.get(Reg::Rax) as u16, 0x0001);
    rig.set(Reg::Rax, 0x2400);
    rig.int(0x15);
    assert_eq!(rig.host.port92 & 2, 0);
    rig.set(Reg::Rax, 0xC000);
    assert!(!cf(&rig.int(0x15)));
    assert_eq!(rig.cpu.seg(Seg::Es).selector, 0xF000);
    let ip = rig.get(Reg::Rbx) as u16 as usize;
    let t = &rig.bios.rom()[0x10000 + ip..0x10000 + ip + 8];
    assert_eq!(&t[..3], &[8, 0, 0xFC]);
    // Unknown function: CF + AH=86h.
    rig.set(Reg::Rax, 0x5300);
    assert!(cf(&rig.int(0x15)));
    assert_eq!(rig.ah(), 0x86);
    // 4Fh keeps CF set so IRQ1 processes the key.
    rig.set(Reg::Rax, 0x4F1E);
    rig.cpu.rflags &= !1;
    assert!(cf(&rig.int(0x15)));
}

#[test]
fn wait_uses_virtual_time() {
    let mut host = FakeHost::new();
    host.step_ns = 300_000; // every look at the clock costs 0.3 ms
    let mut rig = Rig::new(host);
    rig.set(Reg::Rax, 0x8600);
    rig.set(Reg::Rcx, 0);
    rig.set(Reg::Rdx, 1000); // 1 ms
    let mut retries = 0;
    loop {
        match rig.int(0x15) {
            Ret::Retry => retries += 1,
            ret => {
                assert!(!cf(&ret));
                break;
            }
        }
        assert_eq!(
            rig.get(Reg::Rdx) as u16,
            1000,
            "DX preserved across retries"
        );
        assert!(retries < 10);
    }
    // Clock reads at 0, 0.3, 0.6, 0.9 ms are early; 1.2 ms completes.
    assert_eq!(retries, 4);
}

#[test]
fn block_move_copies_between_descriptors() {
    let mut rig = Rig::new(FakeHost::new());
    let gdt = 0x800usize;
    let desc = |base: u32| {
        let mut d = [0u8; 8];
        d[0..2].copy_from_slice(&0xFFFFu16.to_le_bytes());
        d[2..5].copy_from_slice(&base.to_le_bytes()[..3]);
        d[5] = 0x93;
        d[7] = (base >> 24) as u8;
        d
    };
    rig.ram[gdt + 0x10..gdt + 0x18].copy_from_slice(&desc(0x3000));
    rig.ram[gdt + 0x18..gdt + 0x20].copy_from_slice(&desc(0x10_0000));
    rig.ram[0x3000..0x3010].copy_from_slice(b"0123456789abcdef");
    rig.set(Reg::Rax, 0x8700);
    rig.set(Reg::Rcx, 8);
    rig.set(Reg::Rsi, gdt as u64);
    rig.seg_real(Seg::Es, 0);
    assert!(!cf(&rig.int(0x15)));
    assert_eq!(&rig.ram[0x10_0000..0x10_0010], b"0123456789abcdef");
    // Destination outside RAM.
    rig.ram[gdt + 0x18..gdt + 0x20].copy_from_slice(&desc(0xFF00_0000));
    rig.set(Reg::Rax, 0x8700);
    assert!(cf(&rig.int(0x15)));
}

#[test]
fn rtc_time_and_ticks() {
    let mut rig = Rig::new(FakeHost::new());
    rig.post();
    rig.set(Reg::Rax, 0x0200);
    assert!(!cf(&rig.int(0x1A)));
    assert_eq!(rig.get(Reg::Rcx) as u16, 0x1234);
    assert_eq!(rig.get(Reg::Rdx) as u16 >> 8, 0x56);
    rig.set(Reg::Rax, 0x0400);
    assert!(!cf(&rig.int(0x1A)));
    assert_eq!(rig.get(Reg::Rcx) as u16, 0x2026);
    assert_eq!(rig.get(Reg::Rdx) as u16, 0x1122);
    // Binary-mode RTC is converted to BCD.
    rig.host.cmos[0x0B] |= 4;
    rig.host.cmos[0x04] = 23;
    rig.set(Reg::Rax, 0x0200);
    rig.int(0x1A);
    assert_eq!(rig.get(Reg::Rcx) as u16 >> 8, 0x23);
    // Set/get tick count.
    rig.set(Reg::Rax, 0x0100);
    rig.set(Reg::Rcx, 0x0012);
    rig.set(Reg::Rdx, 0x3456);
    rig.int(0x1A);
    rig.ram[0x470] = 1;
    rig.set(Reg::Rax, 0x0000);
    rig.int(0x1A);
    assert_eq!(
        (rig.get(Reg::Rcx) as u16, rig.get(Reg::Rdx) as u16),
        (0x0012, 0x3456)
    );
    assert_eq!(rig.get(Reg::Rax) as u8, 1, "midnight flag reported");
    assert_eq!(rig.ram[0x470], 0, "and cleared");
}
