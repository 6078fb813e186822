use aero_cpu::Reg;

use super::*;

fn rig() -> Rig {
    let mut rig = Rig::new(FakeHost::new());
    rig.post();
    rig
}

fn key(rig: &mut Rig, code: u8) {
    rig.set(Reg::Rax, code as u64);
    assert_eq!(rig.internal(TrapId::KeyboardIrq), TrapOutcome::Resume);
    assert_eq!(
        rig.get(Reg::Rax) as u8,
        code,
        "AL restored for the ROM's EOI path"
    );
}

fn read_key(rig: &mut Rig, ah: u8) -> Option<u16> {
    rig.set(Reg::Rax, (ah as u64) << 8);
    match rig.int(0x16) {
        Ret::Retry => None,
        Ret::Iret { .. } => Some(rig.get(Reg::Rax) as u16),
        Ret::Jumped => panic!("INT 16h jumped"),
    }
}

#[test]
fn letters_shift_caps_ctrl() {
    let mut rig = rig();
    key(&mut rig, 0x1E); // a
    key(&mut rig, 0x9E);
    assert_eq!(read_key(&mut rig, 0x00), Some(0x1E61));
    key(&mut rig, 0x2A); // LShift down
    key(&mut rig, 0x1E);
    assert_eq!(rig.ram[0x417] & 2, 2, "shift flag in BDA");
    key(&mut rig, 0xAA); // LShift up
    assert_eq!(rig.ram[0x417] & 2, 0);
    assert_eq!(read_key(&mut rig, 0x10), Some(0x1E41));
    key(&mut rig, 0x3A); // Caps on
    key(&mut rig, 0xBA);
    key(&mut rig, 0x3A); // typematic would be a second make: must not toggle back
    key(&mut rig, 0xBA);
    assert_eq!(rig.ram[0x417] & 0x40, 0, "second press toggles off");
    key(&mut rig, 0x3A);
    key(&mut rig, 0xBA);
    key(&mut rig, 0x10); // q with caps
    key(&mut rig, 0x02); // 1 unaffected by caps
    assert_eq!(read_key(&mut rig, 0x00), Some(0x1051));
    assert_eq!(read_key(&mut rig, 0x00), Some(0x0231));
    key(&mut rig, 0x1D); // Ctrl
    key(&mut rig, 0x2E); // c
    key(&mut rig, 0x9D);
    assert_eq!(read_key(&mut rig, 0x00), Some(0x2E03));
    key(&mut rig, 0x38); // Alt
    key(&mut rig, 0x3B); // F1
    key(&mut rig, 0xB8);
    assert_eq!(read_key(&mut rig, 0x00), Some(0x6800));
}

#[test]
fn extended_keys_and_numlock() {
    let mut rig = rig();
    key(&mut rig, 0xE0);
    key(&mut rig, 0x48); // gray Up
    key(&mut rig, 0xE0);
    key(&mut rig, 0x48);
    assert_eq!(read_key(&mut rig, 0x10), Some(0x48E0));
    assert_eq!(
        read_key(&mut rig, 0x00),
        Some(0x4800),
        "legacy call hides E0"
    );
    key(&mut rig, 0x48); // keypad 8 without NumLock = Up
    assert_eq!(read_key(&mut rig, 0x10), Some(0x4800));
    key(&mut rig, 0x45); // NumLock
    key(&mut rig, 0xC5);
    key(&mut rig, 0x48);
    assert_eq!(read_key(&mut rig, 0x10), Some(0x4838));
    key(&mut rig, 0xE0);
    key(&mut rig, 0x1C); // keypad Enter
    assert_eq!(read_key(&mut rig, 0x00), Some(0x1C0D));
    // Right Ctrl sets the extended shift status bit.
    key(&mut rig, 0xE0);
    key(&mut rig, 0x1D);
    rig.set(Reg::Rax, 0x1200);
    rig.int(0x16);
    assert_eq!(rig.get(Reg::Rax) & 0x0404, 0x0404, "AL ctrl, AH right ctrl");
}

#[test]
fn peek_wait_and_full_buffer() {
    let mut rig = rig();
    rig.set(Reg::Rax, 0x0100);
    let ret = rig.int(0x16);
    assert!(zf(&ret), "empty buffer sets ZF");
    assert_eq!(
        read_key(&mut rig, 0x00),
        None,
        "blocking read idles and retries"
    );
    key(&mut rig, 0x39);
    rig.set(Reg::Rax, 0x0100);
    let ret = rig.int(0x16);
    assert!(!zf(&ret));
    assert_eq!(rig.get(Reg::Rax) as u16, 0x3920);
    assert_eq!(
        read_key(&mut rig, 0x00),
        Some(0x3920),
        "peek did not consume"
    );
    // The buffer holds 15 keys.
    for _ in 0..20 {
        key(&mut rig, 0x1E);
    }
    let mut n = 0;
    while read_key(&mut rig, 0x01).is_some() && read_key(&mut rig, 0x00).is_some() {
        n += 1;
    }
    assert_eq!(n, 15);
    // AH=05h stuffs a key.
    rig.set(Reg::Rcx, 0x1C0D);
    rig.set(Reg::Rax, 0x0500);
    rig.int(0x16);
    assert_eq!(rig.get(Reg::Rax) as u8, 0);
    assert_eq!(read_key(&mut rig, 0x00), Some(0x1C0D));
}

#[test]
fn corrupt_buffer_pointers_are_survivable() {
    let mut rig = rig();
    rig.ram[0x41A..0x41E].copy_from_slice(&[0xFF, 0xFF, 0x01, 0x00]);
    key(&mut rig, 0x1E);
    assert_eq!(read_key(&mut rig, 0x00), Some(0x1E61));
    rig.ram[0x480..0x484].copy_from_slice(&[0xF0, 0xFF, 0x02, 0x00]);
    key(&mut rig, 0x1E);
    assert_eq!(read_key(&mut rig, 0x00), Some(0x1E61));
}

#[test]
fn ctrl_alt_del_resets_through_the_kbc() {
    let mut rig = rig();
    key(&mut rig, 0x1D);
    key(&mut rig, 0x38);
    key(&mut rig, 0x53);
    assert!(rig.host.writes.contains(&(0x64, 1, 0xFE)));
    assert_eq!(&rig.ram[0x472..0x474], &[0x34, 0x12]);
}

#[test]
fn translation_table_spot_checks() {
    assert_eq!(translate(0x1C, false, 0), Some(0x1C0D));
    assert_eq!(translate(0x0E, false, 0), Some(0x0E08));
    assert_eq!(translate(0x0F, false, 0x02), Some(0x0F00), "shift-tab");
    assert_eq!(translate(0x35, false, 0x01), Some(0x353F), "?");
    assert_eq!(translate(0x57, false, 0), Some(0x8500), "F11");
    assert_eq!(
        translate(0x4B, true, 0x04),
        Some(0x73E0),
        "ctrl + gray left"
    );
    assert_eq!(translate(0x53, true, 0x08), Some(0xA300), "alt + gray del");
    assert_eq!(translate(0x7F, false, 0), None);
    assert_eq!(translate(0x2A, false, 0), None);
}
