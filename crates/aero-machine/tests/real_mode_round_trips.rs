//! Real mode from long mode and from PAE paging, the way Windows' boot loader calls the
//! BIOS: every disk read and video call leaves paged protected mode (winload x86) or long
//! mode (winload x64) for real mode, runs the BIOS interrupt and goes back.
//!
//! A boot-disk program does it 1000 times from 32-bit PAE paging (paging off, PAE off,
//! 16-bit protected mode, PE off) and 1000 times from long mode (far return to
//! compatibility mode, paging off → LMA clear, LME off, PAE off, 16-bit protected mode, PE
//! off); each visit to real mode reads 8 sectors with INT 13h AH=42h and checksums them,
//! walks the whole INT 15h E820 map, and writes a character with INT 10h 0Eh and reads the
//! cursor with 03h. It prints one line per phase on COM1. The sector and cursor checksums
//! are computed here too; on Aero's BIOS, on SeaBIOS (on Aero) and on QEMU TCG (SeaBIOS,
//! for reference) everything but the BIOS's own map checksum must be identical: the map
//! differs between firmwares (where the ACPI tables go), so of it we compare the end of
//! the RAM above 1 MiB, in MiB, and that all 2000 walks returned the same map.

use std::time::Duration;

use iced_x86::BlockEncoderOptions;
use iced_x86::code_asm::*;

mod common;
use common::{loader, serial_out};

/// Where the pieces of the program are loaded (sector 2 on, by the boot sector).
const RM16: u64 = 0x7E00;
const PM32: u64 = 0x9000;
const LM64: u64 = 0x9800;
const PROGRAM_END: u64 = 0xA000;
const PROGRAM_SECTORS: u32 = ((PROGRAM_END - RM16) / 512) as u32;

/// Variables (below the program, above the BDA).
const RETURN_TO: u32 = 0x600; // byte: 1 = PAE phase, 2 = long-mode phase, 3 = print
const COUNT: u32 = 0x604; // dword: visits in the current phase
const FIRST_MAP: u32 = 0x608; // dword: the first map's checksum
const HAVE_MAP: u32 = 0x60C; // byte
/// Per phase (1, 2), 32 bytes from PHASE_SUMS + 32 * phase.
const PHASE_SUMS: u32 = 0x620;
const DISK_SUM: u32 = 0;
const VIDEO_SUM: u32 = 4;
const SAME_MAP: u32 = 8;
const ERRORS: u32 = 12;
const RAM_TOP: u32 = 16;
const MAP_ENTRIES: u32 = 20;
const MAP_SUM: u32 = 24;
/// Scratch for one E820 walk.
const WALK_SUM: u32 = 0x6A0;
const WALK_TOP: u32 = 0x6A4;
const WALK_ENTRIES: u32 = 0x6A8;
const PHASE_BASE: u32 = 0x6B0; // word: this phase's PHASE_SUMS slot
const DAP: u32 = 0x6C0;
const E820_BUF: u32 = 0x6E0;
/// INT 13h reads land at 3000:0000.
const READ_SEG: u32 = 0x3000;
const READ_SECTORS: u32 = 8;
/// Page tables: long-mode PML4, PDPT, a shared page directory (2 MiB identity page), and
/// the PAE PDPT.
const PML4: u32 = 0x10000;
const LM_PDPT: u32 = 0x11000;
const PD: u32 = 0x12000;
const PAE_PDPT: u32 = 0x13000;
/// The GDT and the pseudo-descriptors for LGDT/LIDT, written at start-up.
const GDT_AT: u32 = 0x580;
const GDTR_AT: u32 = 0x5B0;
const IDTR_AT: u32 = 0x5B8;
const RM_STACK: u32 = 0x7000;
const PM_STACK: u32 = 0x70000;

const CODE64: u32 = 0x08;
const CODE32: u32 = 0x10;
const DATA32: u32 = 0x18;
const CODE16: u32 = 0x20;
const DATA16: u32 = 0x28;
const GDT: [u64; 6] = [
    0,
    0x00AF_9A00_0000_FFFF,
    0x00CF_9A00_0000_FFFF,
    0x00CF_9200_0000_FFFF,
    0x0000_9A00_0000_FFFF,
    0x0000_9200_0000_FFFF,
];

const ROUNDS: u32 = 1000;
/// The data sectors the program reads: LBA 64 + (visit × 37 mod 1024), 8 at a time.
const DATA_LBA: u32 = 64;
const DISK_SECTORS: usize = 2048;
const DONE: &str = "RT-DONE";

/// Entry points each piece jumps to in another one (a first assembly pass finds them).
#[derive(Clone, Copy, Default)]
struct Entries {
    real_landing: u64,
    pm16_entry: u64,
    pm32_from_real: u64,
    compat_entry: u64,
    lm_entry: u64,
}

fn far_jmp16(a: &mut CodeAssembler, selector: u32, offset: u64) {
    let mut b = vec![0xEA];
    b.extend_from_slice(&(offset as u16).to_le_bytes());
    b.extend_from_slice(&(selector as u16).to_le_bytes());
    a.db(&b).unwrap();
}

fn far_jmp32(a: &mut CodeAssembler, selector: u32, offset: u64) {
    let mut b = vec![0xEA];
    b.extend_from_slice(&(offset as u32).to_le_bytes());
    b.extend_from_slice(&(selector as u16).to_le_bytes());
    a.db(&b).unwrap();
}

/// The real-mode piece: start-up, the BIOS work of one visit, the final report.
fn real_mode_piece(e: &Entries) -> (Vec<u8>, Entries) {
    let mut a = CodeAssembler::new(16).unwrap();
    let mut real_landing = a.create_label();
    let mut pm16_entry = a.create_label();
    let mut to_pm = a.create_label();
    let mut bios_work = a.create_label();
    let mut report = a.create_label();
    let mut print_hex = a.create_label();

    // Start: segments, a clean 80x25 screen, page tables, state.
    a.cli().unwrap();
    a.xor(ax, ax).unwrap();
    a.mov(ds, ax).unwrap();
    a.mov(es, ax).unwrap();
    a.mov(ss, ax).unwrap();
    a.mov(sp, RM_STACK).unwrap();
    a.sti().unwrap();
    a.mov(ax, 0x0003u32).unwrap();
    a.int(0x10).unwrap();
    a.cli().unwrap();
    // Zero 0x600–0x6FF and the page tables (0x10000–0x13FFF).
    a.xor(eax, eax).unwrap();
    a.mov(di, 0x600u32).unwrap();
    a.mov(cx, 0x40u32).unwrap();
    a.rep().stosd().unwrap();
    a.mov(ax, 0x1000u32).unwrap();
    a.mov(es, ax).unwrap();
    a.xor(eax, eax).unwrap();
    a.xor(di, di).unwrap();
    a.mov(cx, 0x1000u32).unwrap();
    a.rep().stosd().unwrap();
    a.mov(dword_ptr(PML4 - 0x10000).es(), LM_PDPT | 3).unwrap();
    a.mov(dword_ptr(LM_PDPT - 0x10000).es(), PD | 3).unwrap();
    a.mov(dword_ptr(PD - 0x10000).es(), 0x83u32).unwrap();
    a.mov(dword_ptr(PAE_PDPT - 0x10000).es(), PD | 1).unwrap();
    a.xor(ax, ax).unwrap();
    a.mov(es, ax).unwrap();
    for (i, d) in GDT.iter().enumerate() {
        let at = GDT_AT + 8 * i as u32;
        a.mov(dword_ptr(at), *d as u32).unwrap();
        a.mov(dword_ptr(at + 4), (*d >> 32) as u32).unwrap();
    }
    a.mov(word_ptr(GDTR_AT), (GDT.len() * 8 - 1) as u32)
        .unwrap();
    a.mov(dword_ptr(GDTR_AT + 2), GDT_AT).unwrap();
    a.mov(word_ptr(IDTR_AT), 0x3FFu32).unwrap();
    a.mov(dword_ptr(IDTR_AT + 2), 0u32).unwrap();
    a.mov(byte_ptr(RETURN_TO), 1u32).unwrap();
    a.jmp(to_pm).unwrap();

    // Back from 16-bit protected mode with PE clear: real-mode segments, IVT, BIOS work.
    a.set_label(&mut real_landing).unwrap();
    a.xor(ax, ax).unwrap();
    a.mov(ds, ax).unwrap();
    a.mov(es, ax).unwrap();
    a.mov(fs, ax).unwrap();
    a.mov(gs, ax).unwrap();
    a.mov(ss, ax).unwrap();
    a.mov(sp, RM_STACK).unwrap();
    a.lidt(ptr(IDTR_AT)).unwrap();
    a.cmp(byte_ptr(RETURN_TO), 3u32).unwrap();
    a.je(report).unwrap();
    a.sti().unwrap();
    a.call(bios_work).unwrap();
    a.cli().unwrap();

    a.set_label(&mut to_pm).unwrap();
    a.lgdt(ptr(GDTR_AT)).unwrap();
    a.mov(eax, cr0).unwrap();
    a.or(eax, 1u32).unwrap();
    a.mov(cr0, eax).unwrap();
    far_jmp16(&mut a, CODE32, e.pm32_from_real);

    // 16-bit protected mode (CS = CODE16): 64 KiB data segments, then PE off.
    a.set_label(&mut pm16_entry).unwrap();
    a.mov(ax, DATA16).unwrap();
    a.mov(ds, ax).unwrap();
    a.mov(es, ax).unwrap();
    a.mov(fs, ax).unwrap();
    a.mov(gs, ax).unwrap();
    a.mov(ss, ax).unwrap();
    a.mov(eax, cr0).unwrap();
    a.and(eax, 0xFFFF_FFFEu32 as i32).unwrap();
    a.mov(cr0, eax).unwrap();
    far_jmp16(&mut a, 0, e.real_landing);

    // One visit: BX = this phase's sums.
    a.set_label(&mut bios_work).unwrap();
    a.movzx(bx, byte_ptr(RETURN_TO)).unwrap();
    a.shl(bx, 5).unwrap();
    a.add(bx, PHASE_SUMS).unwrap();
    a.mov(word_ptr(PHASE_BASE), bx).unwrap();
    // INT 13h AH=42h: 8 sectors at 64 + (visit * 37 mod 1024) into 3000:0000.
    {
        let mut read_ok = a.create_label();
        let mut sum_loop = a.create_label();
        a.mov(byte_ptr(DAP), 0x10u32).unwrap();
        a.mov(byte_ptr(DAP + 1), 0u32).unwrap();
        a.mov(word_ptr(DAP + 2), READ_SECTORS).unwrap();
        a.mov(word_ptr(DAP + 4), 0u32).unwrap();
        a.mov(word_ptr(DAP + 6), READ_SEG).unwrap();
        a.mov(ax, word_ptr(COUNT)).unwrap();
        a.mov(cx, 37u32).unwrap();
        a.mul(cx).unwrap();
        a.and(ax, 1023u32).unwrap();
        a.add(ax, DATA_LBA).unwrap();
        a.mov(word_ptr(DAP + 8), ax).unwrap();
        a.mov(word_ptr(DAP + 10), 0u32).unwrap();
        a.mov(dword_ptr(DAP + 12), 0u32).unwrap();
        a.push(bx).unwrap();
        a.mov(ah, 0x42u32).unwrap();
        a.mov(dl, 0x80u32).unwrap();
        a.mov(si, DAP).unwrap();
        a.int(0x13).unwrap();
        a.pop(bx).unwrap();
        a.jnc(read_ok).unwrap();
        a.inc(dword_ptr(bx + ERRORS)).unwrap();
        a.set_label(&mut read_ok).unwrap();
        a.mov(eax, dword_ptr(bx + DISK_SUM)).unwrap();
        a.push(ds).unwrap();
        a.mov(cx, READ_SEG).unwrap();
        a.mov(ds, cx).unwrap();
        a.xor(si, si).unwrap();
        a.mov(cx, READ_SECTORS * 128).unwrap();
        a.set_label(&mut sum_loop).unwrap();
        a.rol(eax, 5).unwrap();
        a.add(eax, dword_ptr(si)).unwrap();
        a.add(si, 4u32).unwrap();
        a.loop_(sum_loop).unwrap();
        a.pop(ds).unwrap();
        a.mov(dword_ptr(bx + DISK_SUM), eax).unwrap();
    }
    // INT 15h E820: the whole map, checksummed; the end of the RAM range holding 1 MiB.
    {
        let mut next = a.create_label();
        let mut not_top = a.create_label();
        let mut end_cf = a.create_label();
        let mut walked = a.create_label();
        let mut bad = a.create_label();
        let mut same = a.create_label();
        let mut after = a.create_label();
        let mut video = a.create_label();
        a.mov(dword_ptr(WALK_SUM), 0u32).unwrap();
        a.mov(dword_ptr(WALK_TOP), 0u32).unwrap();
        a.mov(dword_ptr(WALK_ENTRIES), 0u32).unwrap();
        a.xor(ebx, ebx).unwrap();
        a.set_label(&mut next).unwrap();
        a.mov(eax, 0xE820u32).unwrap();
        a.mov(edx, 0x534D_4150u32).unwrap();
        a.mov(ecx, 20u32).unwrap();
        a.mov(di, E820_BUF).unwrap();
        a.int(0x15).unwrap();
        a.jc(end_cf).unwrap();
        a.cmp(eax, 0x534D_4150u32).unwrap();
        a.jne(bad).unwrap();
        a.mov(eax, dword_ptr(WALK_SUM)).unwrap();
        for off in (0..20).step_by(4) {
            a.rol(eax, 7).unwrap();
            a.add(eax, dword_ptr(E820_BUF + off)).unwrap();
        }
        a.mov(dword_ptr(WALK_SUM), eax).unwrap();
        // RAM (type 1) below 4 GiB with base <= 1 MiB < base + length: its end.
        a.cmp(dword_ptr(E820_BUF + 16), 1u32).unwrap();
        a.jne(not_top).unwrap();
        a.cmp(dword_ptr(E820_BUF + 4), 0u32).unwrap();
        a.jne(not_top).unwrap();
        a.mov(eax, dword_ptr(E820_BUF)).unwrap();
        a.cmp(eax, 0x10_0000u32).unwrap();
        a.ja(not_top).unwrap();
        a.add(eax, dword_ptr(E820_BUF + 8)).unwrap();
        a.cmp(eax, 0x10_0000u32).unwrap();
        a.jbe(not_top).unwrap();
        a.mov(dword_ptr(WALK_TOP), eax).unwrap();
        a.set_label(&mut not_top).unwrap();
        a.inc(dword_ptr(WALK_ENTRIES)).unwrap();
        a.cmp(dword_ptr(WALK_ENTRIES), 64u32).unwrap();
        a.jae(bad).unwrap();
        a.test(ebx, ebx).unwrap();
        a.jnz(next).unwrap();
        a.jmp(walked).unwrap();
        // CF set ends the walk too, after at least one entry.
        a.set_label(&mut end_cf).unwrap();
        a.cmp(dword_ptr(WALK_ENTRIES), 0u32).unwrap();
        a.jne(walked).unwrap();
        a.set_label(&mut bad).unwrap();
        a.mov(bx, word_ptr(PHASE_BASE)).unwrap();
        a.inc(dword_ptr(bx + ERRORS)).unwrap();
        a.jmp(video).unwrap();
        a.set_label(&mut walked).unwrap();
        a.mov(bx, word_ptr(PHASE_BASE)).unwrap();
        a.mov(eax, dword_ptr(WALK_SUM)).unwrap();
        a.cmp(byte_ptr(HAVE_MAP), 0u32).unwrap();
        a.jne(same).unwrap();
        a.mov(byte_ptr(HAVE_MAP), 1u32).unwrap();
        a.mov(dword_ptr(FIRST_MAP), eax).unwrap();
        a.set_label(&mut same).unwrap();
        a.cmp(eax, dword_ptr(FIRST_MAP)).unwrap();
        a.jne(after).unwrap();
        a.inc(dword_ptr(bx + SAME_MAP)).unwrap();
        a.set_label(&mut after).unwrap();
        a.mov(dword_ptr(bx + MAP_SUM), eax).unwrap();
        a.mov(eax, dword_ptr(WALK_TOP)).unwrap();
        a.add(eax, 0xF_FFFFu32).unwrap();
        a.shr(eax, 20).unwrap();
        a.mov(dword_ptr(bx + RAM_TOP), eax).unwrap();
        a.mov(eax, dword_ptr(WALK_ENTRIES)).unwrap();
        a.mov(dword_ptr(bx + MAP_ENTRIES), eax).unwrap();
        a.set_label(&mut video).unwrap();
    }
    // INT 10h: teletype a character, read the cursor back.
    a.push(bx).unwrap();
    a.mov(ax, 0x0E2Eu32).unwrap();
    a.xor(bx, bx).unwrap();
    a.int(0x10).unwrap();
    a.mov(ah, 0x03u32).unwrap();
    a.xor(bx, bx).unwrap();
    a.int(0x10).unwrap();
    a.pop(bx).unwrap();
    a.mov(eax, dword_ptr(bx + VIDEO_SUM)).unwrap();
    a.rol(eax, 3).unwrap();
    a.movzx(edx, dx).unwrap();
    a.add(eax, edx).unwrap();
    a.mov(dword_ptr(bx + VIDEO_SUM), eax).unwrap();
    a.ret().unwrap();

    // The report: one line per phase.
    a.set_label(&mut report).unwrap();
    for (phase, name) in [(1u32, b"RT-PAE".as_slice()), (2, b"RT-LM")] {
        let base = PHASE_SUMS + 32 * phase;
        serial_out(&mut a, name);
        for (off, key) in [
            (DISK_SUM, b" disk=".as_slice()),
            (VIDEO_SUM, b" video="),
            (SAME_MAP, b" same="),
            (ERRORS, b" err="),
            (RAM_TOP, b" top="),
            (MAP_ENTRIES, b" entries="),
            (MAP_SUM, b" map="),
        ] {
            serial_out(&mut a, key);
            a.mov(eax, dword_ptr(base + off)).unwrap();
            a.call(print_hex).unwrap();
        }
        serial_out(&mut a, b"\n");
    }
    serial_out(&mut a, format!("{DONE}\n").as_bytes());
    let mut halt = a.create_label();
    a.set_label(&mut halt).unwrap();
    a.hlt().unwrap();
    a.jmp(halt).unwrap();

    // EAX as 8 hex digits on COM1.
    a.set_label(&mut print_hex).unwrap();
    {
        let mut digit = a.create_label();
        let mut decimal = a.create_label();
        a.mov(cx, 8u32).unwrap();
        a.mov(dx, 0x3F8u32).unwrap();
        a.set_label(&mut digit).unwrap();
        a.rol(eax, 4).unwrap();
        a.push(eax).unwrap();
        a.and(al, 0x0Fu32).unwrap();
        a.add(al, u32::from(b'0')).unwrap();
        a.cmp(al, u32::from(b'9')).unwrap();
        a.jbe(decimal).unwrap();
        a.add(al, 7u32).unwrap();
        a.set_label(&mut decimal).unwrap();
        a.out(dx, al).unwrap();
        a.pop(eax).unwrap();
        a.loop_(digit).unwrap();
        a.ret().unwrap();
    }

    let r = a
        .assemble_options(RM16, BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS)
        .unwrap();
    let found = Entries {
        real_landing: r.label_ip(&real_landing).unwrap(),
        pm16_entry: r.label_ip(&pm16_entry).unwrap(),
        ..*e
    };
    (r.inner.code_buffer, found)
}

/// Clears CR0.PG (and so, in long mode, EFER.LMA), then CR4.PAE.
fn paging_off(a: &mut CodeAssembler) {
    a.mov(eax, cr0).unwrap();
    a.and(eax, 0x7FFF_FFFFu32 as i32).unwrap();
    a.mov(cr0, eax).unwrap();
    a.mov(eax, cr4).unwrap();
    a.and(eax, !0x20i32).unwrap();
    a.mov(cr4, eax).unwrap();
}

fn flat_data_segments(a: &mut CodeAssembler) {
    a.mov(ax, DATA32).unwrap();
    a.mov(ds, ax).unwrap();
    a.mov(es, ax).unwrap();
    a.mov(fs, ax).unwrap();
    a.mov(gs, ax).unwrap();
    a.mov(ss, ax).unwrap();
}

/// The 32-bit piece: arrival from real mode, the PAE-paging phase, entering long mode,
/// and compatibility mode on the way down from long mode.
fn protected_mode_piece(e: &Entries) -> (Vec<u8>, Entries) {
    let mut a = CodeAssembler::new(32).unwrap();
    let mut pm32_from_real = a.create_label();
    let mut compat_entry = a.create_label();
    let mut to_long = a.create_label();
    let mut to_real = a.create_label();
    let mut pae_done = a.create_label();

    a.set_label(&mut pm32_from_real).unwrap();
    flat_data_segments(&mut a);
    a.mov(esp, PM_STACK).unwrap();
    a.cmp(byte_ptr(RETURN_TO), 1u32).unwrap();
    a.jne(to_long).unwrap();
    // PAE paging on (EFER.LME clear): this is where winload x86 runs.
    a.mov(eax, PAE_PDPT).unwrap();
    a.mov(cr3, eax).unwrap();
    a.mov(eax, cr4).unwrap();
    a.or(eax, 0x20u32).unwrap();
    a.mov(cr4, eax).unwrap();
    a.mov(eax, cr0).unwrap();
    a.or(eax, 0x8000_0000u32 as i32).unwrap();
    a.mov(cr0, eax).unwrap();
    a.inc(dword_ptr(COUNT)).unwrap();
    a.cmp(dword_ptr(COUNT), ROUNDS).unwrap();
    a.ja(pae_done).unwrap();
    paging_off(&mut a);
    a.jmp(to_real).unwrap();
    // PAE phase over: paging off, on to long mode.
    a.set_label(&mut pae_done).unwrap();
    paging_off(&mut a);
    a.mov(dword_ptr(COUNT), 0u32).unwrap();
    a.mov(byte_ptr(RETURN_TO), 2u32).unwrap();

    a.set_label(&mut to_long).unwrap();
    a.mov(eax, PML4).unwrap();
    a.mov(cr3, eax).unwrap();
    a.mov(eax, cr4).unwrap();
    a.or(eax, 0x20u32).unwrap();
    a.mov(cr4, eax).unwrap();
    a.mov(ecx, 0xC000_0080u32).unwrap();
    a.rdmsr().unwrap();
    a.or(eax, 0x100u32).unwrap();
    a.wrmsr().unwrap();
    a.mov(eax, cr0).unwrap();
    a.or(eax, 0x8000_0000u32 as i32).unwrap();
    a.mov(cr0, eax).unwrap();
    far_jmp32(&mut a, CODE64, e.lm_entry);

    // Compatibility mode (CS = CODE32 while EFER.LMA = 1): paging off, LME off.
    a.set_label(&mut compat_entry).unwrap();
    flat_data_segments(&mut a);
    paging_off(&mut a);
    a.mov(ecx, 0xC000_0080u32).unwrap();
    a.rdmsr().unwrap();
    a.and(eax, !0x100i32).unwrap();
    a.wrmsr().unwrap();

    // Down to 16-bit protected mode, with a stack its 64 KiB segment reaches.
    a.set_label(&mut to_real).unwrap();
    a.mov(esp, RM_STACK).unwrap();
    far_jmp32(&mut a, CODE16, e.pm16_entry);

    let r = a
        .assemble_options(PM32, BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS)
        .unwrap();
    let found = Entries {
        pm32_from_real: r.label_ip(&pm32_from_real).unwrap(),
        compat_entry: r.label_ip(&compat_entry).unwrap(),
        ..*e
    };
    (r.inner.code_buffer, found)
}

/// The 64-bit piece: count the visit, then far-return to compatibility mode.
fn long_mode_piece(e: &Entries) -> (Vec<u8>, Entries) {
    let mut a = CodeAssembler::new(64).unwrap();
    let mut lm_entry = a.create_label();
    let mut go_down = a.create_label();
    a.set_label(&mut lm_entry).unwrap();
    a.mov(ax, DATA32).unwrap();
    a.mov(ds, ax).unwrap();
    a.mov(es, ax).unwrap();
    a.mov(ss, ax).unwrap();
    a.mov(rsp, u64::from(PM_STACK)).unwrap();
    a.inc(dword_ptr(u64::from(COUNT))).unwrap();
    a.cmp(dword_ptr(u64::from(COUNT)), ROUNDS).unwrap();
    a.jbe(go_down).unwrap();
    a.mov(byte_ptr(u64::from(RETURN_TO)), 3u32).unwrap();
    a.set_label(&mut go_down).unwrap();
    a.mov(eax, CODE32).unwrap();
    a.push(rax).unwrap();
    a.mov(rax, e.compat_entry).unwrap();
    a.push(rax).unwrap();
    a.retf().unwrap();
    let r = a
        .assemble_options(LM64, BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS)
        .unwrap();
    let found = Entries {
        lm_entry: r.label_ip(&lm_entry).unwrap(),
        ..*e
    };
    (r.inner.code_buffer, found)
}

/// The data sectors' contents: a fixed pseudo-random pattern.
fn data_sector(lba: usize) -> Vec<u8> {
    let mut x = (lba as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..512)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The disk: boot sector, the three pieces, the data sectors.
fn disk() -> Vec<u8> {
    // Two passes: the first finds where every entry point lands.
    let mut e = Entries::default();
    for _ in 0..2 {
        e = real_mode_piece(&e).1;
        e = protected_mode_piece(&e).1;
        e = long_mode_piece(&e).1;
    }
    let mut image = vec![0u8; DISK_SECTORS * 512];
    image[..512].copy_from_slice(&loader(RM16, PROGRAM_SECTORS));
    for (at, (code, _)) in [
        (RM16, real_mode_piece(&e)),
        (PM32, protected_mode_piece(&e)),
        (LM64, long_mode_piece(&e)),
    ] {
        let end =
            [PM32, LM64, PROGRAM_END][[RM16, PM32, LM64].iter().position(|&p| p == at).unwrap()];
        assert!(code.len() as u64 <= end - at, "piece at {at:#x} too long");
        let off = (at - RM16) as usize + 512;
        image[off..off + code.len()].copy_from_slice(&code);
    }
    for lba in DATA_LBA as usize..DISK_SECTORS {
        image[lba * 512..(lba + 1) * 512].copy_from_slice(&data_sector(lba));
    }
    image
}

/// The sums the program must print.
fn expected_disk_sum() -> u32 {
    let mut sum = 0u32;
    for visit in 1..=ROUNDS {
        let lba = (DATA_LBA + (visit * 37) % 1024) as usize;
        for s in lba..lba + READ_SECTORS as usize {
            for d in data_sector(s).chunks(4) {
                sum = sum
                    .rotate_left(5)
                    .wrapping_add(u32::from_le_bytes(d.try_into().unwrap()));
            }
        }
    }
    sum
}

/// Cursor (row << 8 | column) after `n` teletyped characters on a cleared 80x25 screen.
fn cursor_after(n: u32) -> u32 {
    let row = (n / 80).min(24);
    (row << 8) | (n % 80)
}

fn expected_video_sum(first_char: u32) -> u32 {
    (first_char..first_char + ROUNDS)
        .fold(0u32, |v, n| v.rotate_left(3).wrapping_add(cursor_after(n)))
}

/// The report lines' fields by phase.
fn parse(serial: &str) -> Vec<(String, Vec<(String, u32)>)> {
    serial
        .lines()
        .filter(|l| l.starts_with("RT-PAE") || l.starts_with("RT-LM"))
        .map(|l| {
            let mut parts = l.split(' ');
            let phase = parts.next().unwrap().to_string();
            let fields = parts
                .filter_map(|p| p.split_once('='))
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        u32::from_str_radix(v.trim(), 16).unwrap_or(u32::MAX),
                    )
                })
                .collect();
            (phase, fields)
        })
        .collect()
}

fn field(fields: &[(String, u32)], key: &str) -> u32 {
    fields
        .iter()
        .find(|(k, _)| k == key)
        .map(|f| f.1)
        .unwrap_or_else(|| panic!("no {key} in {fields:?}"))
}

/// Checks one firmware's report; returns what must agree across firmwares.
fn check(serial: &str, who: &str) -> Vec<(String, Vec<(String, u32)>)> {
    assert!(serial.contains(DONE), "{who}: no report:\n{serial}");
    let report = parse(serial);
    assert_eq!(report.len(), 2, "{who}:\n{serial}");
    let disk = expected_disk_sum();
    for ((phase, fields), first_char) in report.iter().zip([1, ROUNDS + 1]) {
        assert_eq!(
            field(fields, "err"),
            0,
            "{who} {phase}: failed BIOS calls:\n{serial}"
        );
        assert_eq!(
            field(fields, "disk"),
            disk,
            "{who} {phase}: sector checksum:\n{serial}"
        );
        assert_eq!(
            field(fields, "video"),
            expected_video_sum(first_char),
            "{who} {phase}: cursor checksum:\n{serial}"
        );
        assert_eq!(
            field(fields, "same"),
            ROUNDS,
            "{who} {phase}: E820 map changed:\n{serial}"
        );
        assert_eq!(
            field(fields, "top"),
            64,
            "{who} {phase}: RAM top (MiB):\n{serial}"
        );
        assert!(field(fields, "entries") >= 3, "{who} {phase}:\n{serial}");
    }
    assert_eq!(
        field(&report[0].1, "map"),
        field(&report[1].1, "map"),
        "{who}: the map differs between the phases"
    );
    // The map's own checksum and entry count are the firmware's; the rest must agree.
    report
        .into_iter()
        .map(|(p, f)| {
            (
                p,
                f.into_iter()
                    .filter(|(k, _)| k != "map" && k != "entries")
                    .collect(),
            )
        })
        .collect()
}

fn run_on_aero(image: Vec<u8>, bios: Option<Vec<u8>>) -> String {
    common::run_on_aero(image, bios, DONE, Duration::from_secs(90)).1
}

fn run_on_qemu(image: &[u8]) -> Option<String> {
    let dir = common::out_dir("real_mode_round_trips");
    common::run_on_qemu(image, &dir, "disk", DONE, false).map(|(serial, _)| serial)
}

#[test]
fn bios_calls_from_pae_paging_and_long_mode_agree_on_aero_seabios_and_qemu() {
    let image = disk();
    let aero = run_on_aero(image.clone(), None);
    let ours = check(&aero, "Aero's BIOS");
    let seabios = std::fs::read("/usr/share/seabios/bios.bin")
        .expect("/usr/share/seabios/bios.bin (tests/install-deps.sh installs seabios)");
    let sea = run_on_aero(image.clone(), Some(seabios));
    assert_eq!(
        check(&sea, "SeaBIOS on Aero"),
        ours,
        "SeaBIOS on Aero vs Aero's BIOS"
    );
    if let Some(qemu) = run_on_qemu(&image) {
        assert_eq!(check(&qemu, "QEMU"), ours, "QEMU vs Aero's BIOS");
    }
}
