//! The real-mode code of the system ROM. Everything that must run as real x86 code lives
//! here: the reset path, the option-ROM scan (option ROMs are real code), the timer and
//! keyboard IRQ handlers, and the trap stubs that hand services over to Rust.

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use super::TrapSite;
use crate::bios::trap::{TRAP_PORT, TrapId};

type R<T = ()> = Result<T, IcedError>;

pub(crate) struct Labels {
    pub traps: Vec<TrapSite>,
    pub vectors: Vec<(u8, CodeLabel)>,
    pub idle_reenter: CodeLabel,
    pub boot_fail: CodeLabel,
    pub diskette_params: CodeLabel,
    pub config_table: CodeLabel,
    pub post_entry: CodeLabel,
}

/// Standard 1.44 MB diskette parameter table (INT 1Eh vector, INT 13h/08h ES:DI).
const DISKETTE_PARAMS: [u8; 11] = [
    0xDF, 0x02, 0x25, 0x02, 0x12, 0x1B, 0xFF, 0x6C, 0xF6, 0x0F, 0x08,
];
/// INT 15h/C0h system configuration table: length 8, model FCh (AT), submodel 0, rev 0,
/// feature byte 1 = EBDA allocated | INT 9 calls INT 15h/4Fh | RTC | second 8259.
const CONFIG_TABLE: [u8; 10] = [0x08, 0x00, 0xFC, 0x00, 0x00, 0x74, 0x00, 0x00, 0x00, 0x00];
const BOOT_FAIL_MESSAGE: &[u8] = b"\r\nNo bootable device.\r\n\0";

fn here(a: &mut CodeAssembler) -> CodeLabel {
    a.create_label()
}

fn bind(a: &mut CodeAssembler, l: &mut CodeLabel) -> R {
    a.set_label(l)
}

/// `push dx; push ax; mov dx, TRAP_PORT; mov ax, id; out dx, ax`, binding `after_out` to
/// the instruction after the OUT (the caller must emit one).
fn trap_to(
    a: &mut CodeAssembler,
    traps: &mut Vec<TrapSite>,
    id: TrapId,
    entry: Option<CodeLabel>,
    mut after_out: CodeLabel,
) -> R {
    a.push(dx)?;
    a.push(ax)?;
    a.mov(dx, TRAP_PORT as i32)?;
    a.mov(ax, id.code() as i32)?;
    a.out(dx, ax)?;
    bind(a, &mut after_out)?;
    traps.push(TrapSite {
        id,
        entry,
        after_out,
    });
    Ok(())
}

fn trap(
    a: &mut CodeAssembler,
    traps: &mut Vec<TrapSite>,
    id: TrapId,
    entry: Option<CodeLabel>,
) -> R {
    let after_out = here(a);
    trap_to(a, traps, id, entry, after_out)
}

/// A software-interrupt service handled in Rust: trap, then IRET.
fn service_stub(a: &mut CodeAssembler, traps: &mut Vec<TrapSite>, vector: u8) -> R<CodeLabel> {
    let mut entry = here(a);
    bind(a, &mut entry)?;
    trap(a, traps, TrapId::Int(vector), Some(entry))?;
    a.iret()?;
    Ok(entry)
}

pub(crate) fn emit(a: &mut CodeAssembler) -> R<Labels> {
    let mut traps = Vec::new();
    let mut vectors: Vec<(u8, CodeLabel)> = Vec::new();

    let mut boot_fail = here(a);
    let post_entry = emit_post(a, &mut traps, boot_fail)?;

    // Default handlers.
    let mut iret_only = here(a);
    bind(a, &mut iret_only)?;
    a.iret()?;

    let mut master_eoi = here(a);
    bind(a, &mut master_eoi)?;
    a.push(ax)?;
    a.mov(al, 0x20)?;
    a.out(0x20, al)?;
    a.pop(ax)?;
    a.iret()?;

    let mut slave_eoi = here(a);
    bind(a, &mut slave_eoi)?;
    a.push(ax)?;
    a.mov(al, 0x20)?;
    a.out(0xA0, al)?;
    a.out(0x20, al)?;
    a.pop(ax)?;
    a.iret()?;

    for v in 0..=255u8 {
        let target = match v {
            0x08..=0x0F => master_eoi,
            0x70..=0x77 => slave_eoi,
            // Data pointers and user vectors stay null; the VGA BIOS fills 1Dh/1Fh/43h.
            0x1D | 0x1F | 0x41 | 0x43 | 0x46 | 0x60..=0x67 => continue,
            _ => iret_only,
        };
        vectors.push((v, target));
    }

    let irq0 = emit_irq0(a)?;
    let irq1 = emit_irq1(a, &mut traps)?;
    let irq8 = emit_irq8(a)?;
    let int11 = emit_bda_word_reader(a, 0x410)?;
    let int12 = emit_bda_word_reader(a, 0x413)?;

    let int10 = service_stub(a, &mut traps, 0x10)?;
    let int13 = service_stub(a, &mut traps, 0x13)?;
    let int15 = service_stub(a, &mut traps, 0x15)?;
    let int16 = service_stub(a, &mut traps, 0x16)?;
    let int18 = service_stub(a, &mut traps, 0x18)?;
    let int19 = service_stub(a, &mut traps, 0x19)?;
    let int1a = service_stub(a, &mut traps, 0x1A)?;

    // `sti; hlt; ret`: a waiting service pushed its stub entry, so after any interrupt
    // the service is simply called again.
    let mut idle_reenter = here(a);
    bind(a, &mut idle_reenter)?;
    a.sti()?;
    a.hlt()?;
    a.ret()?;

    emit_boot_fail(a, &mut boot_fail)?;

    let mut diskette_params = here(a);
    bind(a, &mut diskette_params)?;
    a.db(&DISKETTE_PARAMS)?;
    let mut config_table = here(a);
    bind(a, &mut config_table)?;
    a.db(&CONFIG_TABLE)?;

    for (v, l) in [
        (0x08, irq0),
        (0x09, irq1),
        (0x70, irq8),
        (0x10, int10),
        (0x11, int11),
        (0x12, int12),
        (0x13, int13),
        (0x40, int13),
        (0x15, int15),
        (0x16, int16),
        (0x18, int18),
        (0x19, int19),
        (0x1A, int1a),
        (0x1E, diskette_params),
    ] {
        vectors.retain(|(x, _)| *x != v);
        vectors.push((v, l));
    }

    Ok(Labels {
        traps,
        vectors,
        idle_reenter,
        boot_fail,
        diskette_params,
        config_table,
        post_entry,
    })
}

/// The MTRR writes POST listed at `mtrr::MSR_LIST` (index, value; index 0 ends), done
/// with WRMSR so that the CPU takes them as from any firmware; skipped without MTRRs.
fn emit_mtrr_setup(a: &mut CodeAssembler) -> R {
    let mut next = here(a);
    let mut done = here(a);
    a.mov(eax, 1)?;
    a.cpuid()?;
    a.test(edx, 1 << 12)?;
    a.jz(done)?;
    a.xor(ax, ax)?;
    a.mov(ds, ax)?;
    a.mov(si, i32::from(crate::bios::mtrr::MSR_LIST))?;
    bind(a, &mut next)?;
    a.mov(ecx, dword_ptr(si))?;
    a.test(ecx, ecx)?;
    a.jz(done)?;
    a.mov(eax, dword_ptr(si + 4))?;
    a.mov(edx, dword_ptr(si + 8))?;
    a.wrmsr()?;
    a.add(si, 12)?;
    a.jmp(next)?;
    bind(a, &mut done)?;
    Ok(())
}

/// Reset path: set up a stack, let Rust do POST, run option ROMs, boot.
fn emit_post(
    a: &mut CodeAssembler,
    traps: &mut Vec<TrapSite>,
    boot_fail: CodeLabel,
) -> R<CodeLabel> {
    let mut entry = here(a);
    bind(a, &mut entry)?;
    a.cli()?;
    a.cld()?;
    a.xor(ax, ax)?;
    a.mov(ss, ax)?;
    a.mov(sp, 0x7C00)?;
    a.mov(ds, ax)?;
    a.mov(es, ax)?;
    trap(a, traps, TrapId::Post, None)?;
    emit_mtrr_setup(a)?;
    // The keyboard controller answers at its own pace (virtual time must pass between
    // bytes), so it is initialised by real code rather than inside the POST trap.
    let kbd_init = a.create_label();
    a.call(kbd_init)?;

    // Option ROMs at C000..DFFF in 2 KiB steps: 55 AA, size in 512-byte blocks at +2,
    // byte sum zero, init entry at +3 (far call).
    let mut scan = here(a);
    let mut next = here(a);
    let mut done = here(a);
    let mut block = here(a);
    let mut byte_loop = here(a);
    a.mov(bx, 0xC000)?;
    bind(a, &mut scan)?;
    a.cmp(bx, 0xE000)?;
    a.jae(done)?;
    a.mov(ds, bx)?;
    a.cmp(word_ptr(0), 0xAA55)?;
    a.jne(next)?;
    a.mov(dl, byte_ptr(2))?;
    a.test(dl, dl)?;
    a.jz(next)?;
    a.push(ds)?;
    a.xor(al, al)?;
    bind(a, &mut block)?;
    a.xor(si, si)?;
    a.mov(cx, 512)?;
    bind(a, &mut byte_loop)?;
    a.add(al, byte_ptr(si))?;
    a.inc(si)?;
    a.loop_(byte_loop)?;
    a.mov(si, ds)?;
    a.add(si, 0x20)?;
    a.mov(ds, si)?;
    a.dec(dl)?;
    a.jnz(block)?;
    a.pop(ds)?;
    a.test(al, al)?;
    a.jnz(next)?;
    // Far call BX:0003 through a pointer on the stack.
    a.push(bx)?;
    a.push(bx)?;
    a.push(3)?;
    a.mov(bp, sp)?;
    a.call(dword_ptr(bp))?;
    a.cli()?;
    a.cld()?;
    a.add(sp, 4)?;
    a.pop(bx)?;
    // Skip the ROM's (possibly shrunk) size rounded up to 2 KiB.
    a.mov(ds, bx)?;
    a.xor(ax, ax)?;
    a.mov(al, byte_ptr(2))?;
    a.add(ax, 3)?;
    a.shr(ax, 2)?;
    a.shl(ax, 7)?;
    a.test(ax, ax)?;
    a.jz(next)?;
    a.add(bx, ax)?;
    a.jc(done)?;
    a.jmp(scan)?;
    bind(a, &mut next)?;
    a.add(bx, 0x80)?;
    a.jmp(scan)?;
    bind(a, &mut done)?;
    a.xor(ax, ax)?;
    a.mov(ds, ax)?;
    a.mov(es, ax)?;
    a.sti()?;
    a.int(0x19)?;
    a.jmp(boot_fail)?;
    emit_kbd_init(a, kbd_init)?;
    Ok(entry)
}

/// i8042 self test, keyboard reset, scanning on; then the final command byte: keyboard
/// IRQ on, system flag, mouse port off, translation to set 1 on. Every wait is bounded,
/// so a missing or silent controller only costs time. Answers are not checked: a
/// keyboard that misbehaves here cannot be helped by the BIOS.
fn emit_kbd_init(a: &mut CodeAssembler, mut entry: CodeLabel) -> R {
    let mut wait_in = here(a);
    let mut read_out = here(a);
    bind(a, &mut entry)?;
    // Drain stale bytes.
    let mut flush = here(a);
    let mut flushed = here(a);
    a.mov(bx, 16)?;
    bind(a, &mut flush)?;
    a.in_(al, 0x64)?;
    a.test(al, 1)?;
    a.jz(flushed)?;
    a.in_(al, 0x60)?;
    a.dec(bx)?;
    a.jnz(flush)?;
    bind(a, &mut flushed)?;
    let steps: [(u8, u8, u8); 8] = [
        // (port, value, answers to read)
        (0x64, 0xAA, 1), // controller self test → 55
        (0x64, 0x60, 0), // write command byte:
        (0x60, 0x64, 0), //   interrupts off, translation on
        (0x64, 0xAE, 0), // enable keyboard interface
        (0x60, 0xFF, 2), // keyboard reset → FA AA
        (0x60, 0xF4, 1), // enable scanning → FA
        (0x64, 0x60, 0), // write command byte:
        (0x60, 0x65, 0), //   final value
    ];
    for (port, value, answers) in steps {
        a.call(wait_in)?;
        a.mov(al, value as i32)?;
        a.out(port as i32, al)?;
        for _ in 0..answers {
            a.call(read_out)?;
        }
    }
    a.ret()?;

    // wait_in: until the input buffer is empty (status bit 1 clear).
    let mut wait_loop = here(a);
    let mut wait_done = here(a);
    bind(a, &mut wait_in)?;
    a.mov(cx, 0xFFFF)?;
    bind(a, &mut wait_loop)?;
    a.in_(al, 0x64)?;
    a.test(al, 2)?;
    a.jz(wait_done)?;
    a.loop_(wait_loop)?;
    bind(a, &mut wait_done)?;
    a.ret()?;

    // read_out: one byte from the output buffer (status bit 0), or give up.
    let mut read_loop = here(a);
    let mut read_got = here(a);
    bind(a, &mut read_out)?;
    a.mov(cx, 0xFFFF)?;
    bind(a, &mut read_loop)?;
    a.in_(al, 0x64)?;
    a.test(al, 1)?;
    a.jnz(read_got)?;
    a.loop_(read_loop)?;
    a.ret()?;
    bind(a, &mut read_got)?;
    a.in_(al, 0x60)?;
    a.ret()?;
    Ok(())
}

/// IRQ0: BIOS tick count at 0040:006C with midnight rollover (1800B0h ticks), INT 1Ch.
fn emit_irq0(a: &mut CodeAssembler) -> R<CodeLabel> {
    let mut entry = here(a);
    let mut ok = here(a);
    let mut roll = here(a);
    bind(a, &mut entry)?;
    a.push(ds)?;
    a.push(ax)?;
    a.xor(ax, ax)?;
    a.mov(ds, ax)?;
    a.add(word_ptr(0x46C), 1)?;
    a.adc(word_ptr(0x46E), 0)?;
    a.cmp(word_ptr(0x46E), 0x18)?;
    a.jb(ok)?;
    a.ja(roll)?;
    a.cmp(word_ptr(0x46C), 0xB0)?;
    a.jb(ok)?;
    bind(a, &mut roll)?;
    a.mov(word_ptr(0x46C), 0)?;
    a.mov(word_ptr(0x46E), 0)?;
    a.mov(byte_ptr(0x470), 1)?;
    bind(a, &mut ok)?;
    a.int(0x1C)?;
    a.mov(al, 0x20)?;
    a.out(0x20, al)?;
    a.pop(ax)?;
    a.pop(ds)?;
    a.iret()?;
    Ok(entry)
}

/// IRQ1: read the scancode, offer it to INT 15h/4Fh, let Rust translate it.
fn emit_irq1(a: &mut CodeAssembler, traps: &mut Vec<TrapSite>) -> R<CodeLabel> {
    let mut entry = here(a);
    let skip = here(a);
    bind(a, &mut entry)?;
    a.push(ax)?;
    a.in_(al, 0x60)?;
    a.mov(ah, 0x4F)?;
    a.stc()?;
    a.int(0x15)?;
    a.jnc(skip)?;
    // Both paths continue at the EOI right after the OUT.
    trap_to(a, traps, TrapId::KeyboardIrq, None, skip)?;
    a.mov(al, 0x20)?;
    a.out(0x20, al)?;
    a.pop(ax)?;
    a.iret()?;
    Ok(entry)
}

/// IRQ8: acknowledge the RTC (read register C) and EOI both PICs.
fn emit_irq8(a: &mut CodeAssembler) -> R<CodeLabel> {
    let mut entry = here(a);
    bind(a, &mut entry)?;
    a.push(ax)?;
    a.mov(al, 0x0C)?;
    a.out(0x70, al)?;
    a.in_(al, 0x71)?;
    a.mov(al, 0x20)?;
    a.out(0xA0, al)?;
    a.out(0x20, al)?;
    a.pop(ax)?;
    a.iret()?;
    Ok(entry)
}

/// INT 11h / INT 12h: return one BDA word in AX.
fn emit_bda_word_reader(a: &mut CodeAssembler, addr: u32) -> R<CodeLabel> {
    let mut entry = here(a);
    bind(a, &mut entry)?;
    a.push(ds)?;
    a.xor(ax, ax)?;
    a.mov(ds, ax)?;
    a.mov(ax, word_ptr(addr))?;
    a.pop(ds)?;
    a.iret()?;
    Ok(entry)
}

/// Prints the message on the screen (INT 10h teletype) and the debug port, then idles.
fn emit_boot_fail(a: &mut CodeAssembler, entry: &mut CodeLabel) -> R {
    let mut after_msg = here(a);
    let mut print = here(a);
    let mut halt = here(a);
    bind(a, entry)?;
    a.push(cs)?;
    a.pop(ds)?;
    // The CALL pushes the address of the inline message that follows it.
    a.call(after_msg)?;
    a.db(BOOT_FAIL_MESSAGE)?;
    bind(a, &mut after_msg)?;
    a.pop(si)?;
    bind(a, &mut print)?;
    a.lodsb()?;
    a.test(al, al)?;
    a.jz(halt)?;
    a.out(0xE9, al)?;
    a.push(si)?;
    a.mov(ah, 0x0E)?;
    a.mov(bx, 0x0007)?;
    a.int(0x10)?;
    a.pop(si)?;
    a.jmp(print)?;
    bind(a, &mut halt)?;
    a.sti()?;
    a.hlt()?;
    a.jmp(halt)?;
    Ok(())
}
