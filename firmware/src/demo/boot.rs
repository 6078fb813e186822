//! The demo disk's boot sector: loads the payload from LBA 1 with INT 13h (EDD AH=42h
//! when the BIOS has it, CHS AH=02h otherwise) and jumps to it with DL = boot drive.

use iced_x86::code_asm::*;

use super::{DemoError, LOAD_SEGMENT};
use crate::asm16::{Asm, assemble};

/// Where every PC BIOS loads a boot sector.
const ORIGIN: u16 = 0x7C00;
/// Boot code must leave room for the partition table (0x1BE) and the signature.
const CODE_LIMIT: usize = 0x1BE;

/// The 512-byte boot sector for a payload of `payload_sectors` sectors at LBA 1.
pub(crate) fn boot_sector(payload_sectors: u8) -> Result<Vec<u8>, DemoError> {
    let mut code = assemble(ORIGIN, |a| emit(a, payload_sectors))?.bytes;
    if code.len() > CODE_LIMIT {
        return Err(DemoError::TooLarge(code.len()));
    }
    code.resize(512, 0);
    code[510] = 0x55;
    code[511] = 0xAA;
    Ok(code)
}

fn emit(a: &mut Asm, sectors: u8) -> Result<(), DemoError> {
    let load_seg = i32::from(LOAD_SEGMENT);
    a.cli()?;
    a.xor(ax, ax)?;
    a.mov(ds, ax)?;
    a.mov(es, ax)?;
    a.mov(ss, ax)?;
    a.mov(sp, i32::from(ORIGIN))?;
    // Some BIOSes enter at 07C0:0000; make CS:IP match the origin.
    let main = a.addr("mbr_main");
    a.jmp_far(0, u32::from(main))?;
    a.bind("mbr_main")?;
    a.sti()?;
    a.cld()?;
    let drive = u32::from(a.addr("mbr_drive"));
    a.mov(byte_ptr(drive), dl)?;

    // EDD: AH=41h must answer BX=AA55h with "fixed disk access subset" (CX bit 0).
    let chs = a.l("mbr_chs");
    a.mov(ah, 0x41)?;
    a.mov(bx, 0x55AA)?;
    a.int(0x13)?;
    a.jc(chs)?;
    a.cmp(bx, 0xAA55)?;
    a.jne(chs)?;
    a.test(cl, 1)?;
    a.jz(chs)?;
    // Disk address packet on the stack: size 16, count, buffer offset:segment, LBA 1.
    for word in [0, 0, 0, 1, load_seg, 0, i32::from(sectors), 0x0010] {
        a.push(word)?;
    }
    a.mov(si, sp)?;
    a.mov(ah, 0x42)?;
    a.mov(dl, byte_ptr(drive))?;
    a.int(0x13)?;
    // MOV keeps CF; the packet is dropped either way.
    a.mov(sp, i32::from(ORIGIN))?;
    let loaded = a.l("mbr_loaded");
    a.jnc(loaded)?;

    // CHS: cylinder 0, head 0, sectors 2.. — the payload stays inside the first track.
    a.bind("mbr_chs")?;
    a.mov(di, 3)?;
    let mut retry = a.create_label();
    a.set(&mut retry)?;
    a.mov(ax, load_seg)?;
    a.mov(es, ax)?;
    a.xor(bx, bx)?;
    a.mov(ax, 0x0200 | i32::from(sectors))?;
    a.mov(cx, 0x0002)?;
    a.xor(dh, dh)?;
    a.mov(dl, byte_ptr(drive))?;
    a.int(0x13)?;
    a.jnc(loaded)?;
    a.xor(ah, ah)?;
    a.mov(dl, byte_ptr(drive))?;
    a.int(0x13)?;
    a.dec(di)?;
    a.jnz(retry)?;

    // Both methods failed: say so on the screen and stop.
    let msg = a.addr("mbr_msg");
    a.mov(si, i32::from(msg))?;
    let mut print = a.create_label();
    let mut halt = a.create_label();
    a.set(&mut print)?;
    a.lodsb()?;
    a.test(al, al)?;
    a.jz(halt)?;
    a.mov(ah, 0x0E)?;
    a.mov(bx, 0x0007)?;
    a.int(0x10)?;
    a.jmp(print)?;
    a.set(&mut halt)?;
    a.cli()?;
    a.hlt()?;
    a.jmp(halt)?;

    a.bind("mbr_loaded")?;
    a.mov(dl, byte_ptr(drive))?;
    a.jmp_far(LOAD_SEGMENT, 0)?;

    a.bind("mbr_drive")?;
    a.db(&[0x80])?;
    a.bind("mbr_msg")?;
    a.db(b"AERO-DEMO: cannot read the demo payload from disk\r\n\0")?;
    Ok(())
}
