//! CPU benchmark against QEMU TCG: the same guest program (integer loop, memory copy,
//! branchy code with calls, x87 loop, read-modify-write on memory) runs on `aero_cpu::Cpu` and, as a boot sector, in
//! `qemu-system-x86_64 -accel tcg`. Each loop ends with a marker byte on COM1; the host
//! times the markers. Prints instructions, MIPS and the Aero/QEMU time ratio per loop.
//!
//!   cargo run --release -p aero-cpu --example vs_qemu
//!
//! Without QEMU installed it prints the Aero figures only (a quick MIPS check).
//!
//! For profiling (`tests/bench/cpu-callgrind.sh`): `VS_QEMU_LOOPS=1,3` runs only those
//! loops (the others keep their markers), `VS_QEMU_SCALE=100` divides every iteration
//! count by 100, `VS_QEMU_NO_QEMU=1` skips QEMU.

use aero_cpu::{Bus, Cpu, PageMapping, RunExit, Seg, Segment};
use iced_x86::code_asm::*;
use std::io::Read;
use std::time::{Duration, Instant};

const LOOPS: [&str; 5] = [
    "integer loop",
    "memory copy",
    "branchy+calls",
    "x87 loop",
    "memory RMW",
];
const PM_ENTRY: u64 = 0x7E00;

/// Which loops run (1-based, all by default) and the iteration divisor, from the
/// environment (see the module comment).
struct Selection {
    loops: Vec<usize>,
    scale: u32,
}

impl Selection {
    fn from_env() -> Selection {
        let loops = std::env::var("VS_QEMU_LOOPS")
            .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
            .unwrap_or_else(|_| (1..=LOOPS.len()).collect());
        let scale = std::env::var("VS_QEMU_SCALE")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1u32)
            .max(1);
        Selection { loops, scale }
    }
    fn runs(&self, n: usize) -> bool {
        self.loops.contains(&n)
    }
    /// An iteration count, scaled (at least 1).
    fn count(&self, n: u32) -> u32 {
        (n / self.scale).max(1)
    }
}

/// The 32-bit program: five loops, each followed by `out 0x3F8, '1'..'5'`; starts with 'S'.
fn program(sel: &Selection) -> Result<Vec<u8>, IcedError> {
    let mut a = CodeAssembler::new(32)?;
    let marker = |a: &mut CodeAssembler, c: u8| -> Result<(), IcedError> {
        a.mov(dx, 0x3F8u32)?;
        a.mov(al, c as u32)?;
        a.out(dx, al)
    };
    a.mov(eax, 0x10u32)?;
    a.mov(ds, ax)?;
    a.mov(es, ax)?;
    a.mov(ss, ax)?;
    a.mov(esp, 0x9_0000u32)?;
    marker(&mut a, b'S')?;
    if sel.runs(1) {
        // 1: integer ALU, 5 instructions per iteration.
        let mut top = a.create_label();
        a.xor(eax, eax)?;
        a.mov(ebx, 3u32)?;
        a.xor(ecx, ecx)?;
        a.set_label(&mut top)?;
        a.add(eax, ebx)?;
        a.xor(edx, eax)?;
        a.inc(ecx)?;
        a.cmp(ecx, sel.count(60_000_000))?;
        a.jne(top)?;
    }
    marker(&mut a, b'1')?;
    if sel.runs(2) {
        // 2: copy 1 KiB dword by dword, many times.
        let mut outer = a.create_label();
        let mut inner = a.create_label();
        a.mov(ebp, sel.count(200_000))?;
        a.set_label(&mut outer)?;
        a.mov(esi, 0x10_0000u32)?;
        a.mov(edi, 0x20_0000u32)?;
        a.mov(ecx, 256u32)?;
        a.set_label(&mut inner)?;
        a.mov(eax, dword_ptr(esi))?;
        a.mov(dword_ptr(edi), eax)?;
        a.add(esi, 4u32)?;
        a.add(edi, 4u32)?;
        a.dec(ecx)?;
        a.jnz(inner)?;
        a.dec(ebp)?;
        a.jnz(outer)?;
    }
    marker(&mut a, b'2')?;
    if sel.runs(3) {
        // 3: data-dependent branches, push/pop, call/ret.
        let mut top = a.create_label();
        let mut odd = a.create_label();
        let mut join = a.create_label();
        let mut sub = a.create_label();
        let mut done = a.create_label();
        a.xor(ecx, ecx)?;
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
        a.cmp(ecx, sel.count(30_000_000))?;
        a.jne(top)?;
        a.jmp(done)?;
        a.set_label(&mut sub)?;
        a.ret()?;
        a.set_label(&mut done)?;
    }
    marker(&mut a, b'3')?;
    if sel.runs(4) {
        // 4: x87 adds.
        let mut top = a.create_label();
        a.fninit()?;
        a.fld1()?;
        a.fldz()?;
        a.mov(ecx, sel.count(40_000_000))?;
        a.set_label(&mut top)?;
        a.fadd_2(st0, st1)?;
        a.dec(ecx)?;
        a.jnz(top)?;
    }
    marker(&mut a, b'4')?;
    if sel.runs(5) {
        // 5: read-modify-write ALU ops on memory (counters, bitmaps), 8 instructions per
        // iteration over 4 KiB.
        let mut outer = a.create_label();
        let mut inner = a.create_label();
        a.mov(ebp, sel.count(100_000))?;
        a.mov(ebx, 0x0101_0101u32)?;
        a.set_label(&mut outer)?;
        a.mov(esi, 0x30_0000u32)?;
        a.mov(ecx, 256u32)?;
        a.set_label(&mut inner)?;
        a.add(dword_ptr(esi), ebx)?;
        a.sub(dword_ptr(esi + 4), ecx)?;
        a.xor(dword_ptr(esi + 8), ebx)?;
        a.or(dword_ptr(esi + 12), 0x10u32)?;
        a.inc(dword_ptr(esi))?;
        a.add(esi, 16u32)?;
        a.dec(ecx)?;
        a.jnz(inner)?;
        a.dec(ebp)?;
        a.jnz(outer)?;
    }
    marker(&mut a, b'5')?;
    a.cli()?;
    let mut halt = a.create_label();
    a.set_label(&mut halt)?;
    a.hlt()?;
    a.jmp(halt)?;
    a.assemble(PM_ENTRY)
}

/// A boot sector that enters 32-bit protected mode (flat GDT) and jumps to the program,
/// which follows it on the disk (loaded with INT 13h).
fn boot_disk(program: &[u8]) -> Result<Vec<u8>, IcedError> {
    let sectors = program.len().div_ceil(512) as u32;
    // The GDT and its descriptor sit at fixed places in the sector (iced has no 16-bit
    // label-relative memory operands).
    const GDT_OFF: usize = 0x1C0;
    const DESC_OFF: usize = 0x1E0;
    let mut a = CodeAssembler::new(16)?;
    a.cli()?;
    a.xor(ax, ax)?;
    a.mov(ds, ax)?;
    a.mov(es, ax)?;
    a.mov(ss, ax)?;
    a.mov(sp, 0x7C00u32)?;
    // INT 13h AH=02h: read `sectors` sectors from C0/H0/S2 to 0:7E00 (DL = boot drive).
    a.mov(ax, 0x0200 | sectors)?;
    a.mov(cx, 2u32)?;
    a.xor(dh, dh)?;
    a.mov(bx, PM_ENTRY as u32)?;
    a.int(0x13)?;
    a.lgdt(ptr(0x7C00 + DESC_OFF as u32))?;
    a.mov(eax, cr0)?;
    a.or(al, 1)?;
    a.mov(cr0, eax)?;
    a.db(&[0x66, 0xEA])?; // jmp dword 08:PM_ENTRY
    a.dd(&[PM_ENTRY as u32])?;
    a.dw(&[0x08])?;
    let mut sector = a.assemble(0x7C00)?;
    assert!(sector.len() <= GDT_OFF, "boot code too large");
    sector.resize(512, 0);
    for (i, d) in [0u64, 0x00CF_9A00_0000_FFFF, 0x00CF_9200_0000_FFFF]
        .iter()
        .enumerate()
    {
        sector[GDT_OFF + 8 * i..GDT_OFF + 8 * i + 8].copy_from_slice(&d.to_le_bytes());
    }
    sector[DESC_OFF..DESC_OFF + 2].copy_from_slice(&23u16.to_le_bytes());
    sector[DESC_OFF + 2..DESC_OFF + 6].copy_from_slice(&(0x7C00 + GDT_OFF as u32).to_le_bytes());
    sector[510] = 0x55;
    sector[511] = 0xAA;
    let mut disk = sector;
    disk.extend_from_slice(program);
    disk.resize(512 * (1 + sectors as usize).max(64), 0);
    Ok(disk)
}

/// Aero side: RAM and the markers (with their retired-instruction counts and times).
struct MarkerBus {
    marks: Vec<(u8, u64, Instant)>,
    retired: u64,
}

impl Bus for MarkerBus {
    fn map_page(&self, paddr: u64) -> PageMapping {
        if paddr < (16 << 20) {
            PageMapping::Ram {
                offset: (paddr & !0xFFF) as usize,
            }
        } else {
            PageMapping::Mmio
        }
    }
    fn mmio_read(&mut self, _: u64, _: u8) -> u64 {
        u64::MAX
    }
    fn mmio_write(&mut self, _: u64, _: u8, _: u64) {}
    fn io_read(&mut self, _: u16, _: u8) -> u32 {
        0xFFFF_FFFF
    }
    fn io_write(&mut self, port: u16, _: u8, value: u32) {
        if port == 0x3F8 {
            self.marks.push((value as u8, self.retired, Instant::now()));
        }
    }
    fn sync_time(&mut self, retired: u64) {
        self.retired = retired;
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

fn run_aero(program: &[u8]) -> Vec<(u8, u64, Instant)> {
    let mut ram = vec![0u8; 16 << 20];
    ram[PM_ENTRY as usize..PM_ENTRY as usize + program.len()].copy_from_slice(program);
    // The same flat GDT the boot sector loads, at 0x500.
    for (i, d) in [0u64, 0x00CF_9A00_0000_FFFF, 0x00CF_9200_0000_FFFF]
        .iter()
        .enumerate()
    {
        ram[0x500 + 8 * i..0x508 + 8 * i].copy_from_slice(&d.to_le_bytes());
    }
    let mut cpu = Cpu::new();
    let s = &mut cpu.state;
    s.gdtr.base = 0x500;
    s.gdtr.limit = 23;
    s.cr0 = 0x11;
    s.seg[Seg::Cs as usize] = Segment {
        selector: 8,
        base: 0,
        limit: 0xFFFF_FFFF,
        attr: 0xC9B,
    };
    for sg in [Seg::Es, Seg::Ss, Seg::Ds, Seg::Fs, Seg::Gs] {
        s.seg[sg as usize] = Segment {
            selector: 0x10,
            base: 0,
            limit: 0xFFFF_FFFF,
            attr: 0xC93,
        };
    }
    s.rip = PM_ENTRY;
    let mut bus = MarkerBus {
        marks: Vec::new(),
        retired: 0,
    };
    loop {
        match cpu.run(&mut ram, &mut bus, 10_000_000) {
            RunExit::BudgetExhausted => continue,
            RunExit::Halted => break,
            other => panic!("benchmark program stopped: {other:?}"),
        }
    }
    bus.marks
}

/// QEMU side: host times at which each marker byte appeared on the serial file.
fn run_qemu(disk: &[u8]) -> Option<Vec<(u8, Instant)>> {
    let dir = std::env::temp_dir().join(format!("aero-vs-qemu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let img = dir.join("bench.img");
    let serial = dir.join("serial.txt");
    std::fs::write(&img, disk).ok()?;
    std::fs::write(&serial, b"").ok()?;
    let mut child = std::process::Command::new("qemu-system-x86_64")
        .args([
            "-accel", "tcg", "-M", "pc", "-smp", "1", "-m", "64", "-display", "none", "-monitor",
            "none",
        ])
        .arg("-drive")
        .arg(format!("file={},format=raw", img.display()))
        .arg("-serial")
        .arg(format!("file:{}", serial.display()))
        .spawn()
        .ok()?;
    let mut marks = Vec::new();
    let start = Instant::now();
    let mut seen = 0;
    while marks.len() < 1 + LOOPS.len() && start.elapsed() < Duration::from_secs(300) {
        let mut text = Vec::new();
        std::fs::File::open(&serial)
            .ok()?
            .read_to_end(&mut text)
            .ok()?;
        let now = Instant::now();
        for &c in &text[seen..] {
            if c == b'S' || (b'1'..=b'5').contains(&c) {
                marks.push((c, now));
            }
        }
        seen = text.len();
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    (marks.len() == 1 + LOOPS.len()).then_some(marks)
}

fn main() {
    let sel = Selection::from_env();
    let program = program(&sel).expect("assemble the program");
    let disk = boot_disk(&program).expect("assemble the boot sector");
    let aero = run_aero(&program);
    assert_eq!(
        aero.len(),
        1 + LOOPS.len(),
        "markers on Aero: {:?}",
        aero.iter().map(|m| m.0 as char).collect::<String>()
    );
    let qemu = if std::env::var_os("VS_QEMU_NO_QEMU").is_some() {
        None
    } else {
        run_qemu(&disk)
    };
    if qemu.is_none() {
        println!(
            "(qemu-system-x86_64 not found or the program did not finish there: Aero figures only)"
        );
    }
    println!(
        "{:<14} {:>13} {:>10} {:>10} {:>10} {:>10}",
        "loop", "instructions", "aero s", "aero MIPS", "qemu s", "aero/qemu"
    );
    for (i, name) in LOOPS.iter().enumerate() {
        let (n0, t0) = (aero[i].1, aero[i].2);
        let (n1, t1) = (aero[i + 1].1, aero[i + 1].2);
        let n = n1 - n0;
        let at = (t1 - t0).as_secs_f64();
        let (qt, ratio) = match &qemu {
            Some(q) => {
                let qt = (q[i + 1].1 - q[i].1).as_secs_f64().max(1e-3);
                (format!("{qt:.3}"), format!("{:.2}", at / qt))
            }
            None => ("-".into(), "-".into()),
        };
        println!(
            "{name:<14} {n:>13} {at:>10.3} {:>10.1} {qt:>10} {ratio:>10}",
            n as f64 / at / 1e6
        );
    }
}
