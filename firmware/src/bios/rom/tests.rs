use iced_x86::{Code, Decoder, DecoderOptions, Instruction, Mnemonic};

use super::*;

fn decode_at(rom: &Rom, ip: u16) -> Instruction {
    let start = 0x10000 + ip as usize;
    let mut d = Decoder::with_ip(16, &rom.image[start..], ip as u64, DecoderOptions::NONE);
    d.decode()
}

#[test]
fn reset_vector_jumps_to_post() {
    let rom = Rom::build().unwrap();
    assert_eq!(rom.image.len(), ROM_SIZE);
    // Physical 0xFFFF0 is the 16th byte from the end.
    let reset = decode_at(&rom, 0xFFF0);
    assert_eq!(reset.code(), Code::Jmp_ptr1616);
    assert_eq!(reset.far_branch_selector(), 0xF000);
    assert_eq!(reset.far_branch16(), 0xE05B);
    let compat = decode_at(&rom, 0xE05B);
    assert_eq!(compat.code(), Code::Jmp_ptr1616);
    assert_eq!(compat.far_branch16(), rom.layout.post_entry);
    assert_eq!(&rom.image[0x1FFF5..0x1FFFD], b"11/22/26");
    assert_eq!(rom.image[0x1FFFE], 0xFC);
}

#[test]
fn every_trap_site_follows_an_out_to_the_trap_port() {
    let rom = Rom::build().unwrap();
    assert!(rom.layout.trap_return.len() >= 8);
    for (&code, &after) in &rom.layout.trap_return {
        // The OUT DX,AX is one byte; before it `mov ax, code` and `mov dx, TRAP_PORT`.
        let out = decode_at(&rom, after - 1);
        assert_eq!(out.code(), Code::Out_DX_AX, "trap {code:#x}");
        let mov_ax = decode_at(&rom, after - 4);
        assert_eq!(mov_ax.mnemonic(), Mnemonic::Mov);
        assert_eq!(mov_ax.immediate16(), code);
        let mov_dx = decode_at(&rom, after - 7);
        assert_eq!(mov_dx.immediate16(), crate::bios::trap::TRAP_PORT);
    }
    for (&code, &entry) in &rom.layout.trap_entry {
        assert_eq!(
            rom.layout.trap_return[&code],
            entry + 9,
            "stub layout for {code:#x}"
        );
    }
}

#[test]
fn vectors_point_into_code_and_service_vectors_trap() {
    let rom = Rom::build().unwrap();
    let v = &rom.layout.vectors;
    for vector in [0x13u8, 0x15, 0x16, 0x19, 0x1A] {
        assert_eq!(
            v[vector as usize],
            rom.layout.trap_entry.get(&(vector as u16)).copied()
        );
    }
    assert_eq!(v[0x40], v[0x13]);
    assert_eq!(v[0x1E], Some(rom.layout.diskette_params));
    assert_eq!(v[0x1D], None);
    for ip in v.iter().flatten() {
        assert!(*ip < TABLE_AREA.start);
    }
    // IRQ handlers end with IRET after an EOI.
    let irq3 = v[0x0B].unwrap();
    assert_eq!(decode_at(&rom, irq3).code(), Code::Push_r16);
    let dp = 0x10000 + rom.layout.diskette_params as usize;
    assert_eq!(rom.image[dp + 4], 18, "1.44 MB: 18 sectors per track");
}

#[test]
fn placing_tables_is_bounds_checked() {
    let mut rom = Rom::build().unwrap();
    assert!(rom.place(TABLE_AREA.start, b"RSD PTR ").is_ok());
    assert!(rom.place(TABLE_AREA.end - 2, b"xyz").is_err());
    assert!(rom.place(0x100, b"x").is_err(), "code area is not writable");
    assert!(rom.place_low(0xFFFF, b"ab").is_err());
}

#[test]
fn absolute_bda_operands_use_16_bit_addressing() {
    let rom = Rom::build().unwrap();
    let int12 = rom.layout.vectors[0x12].unwrap();
    // push ds; xor ax,ax; mov ds,ax; mov ax,[0413h]
    let mut ip = int12;
    let mut found = false;
    for _ in 0..4 {
        let ins = decode_at(&rom, ip);
        if ins.code() == Code::Mov_AX_moffs16 || ins.code() == Code::Mov_r16_rm16 {
            assert_eq!(ins.memory_displacement32(), 0x413);
            assert_eq!(ins.len(), 3, "A1 13 04");
            found = true;
        }
        ip += ins.len() as u16;
    }
    assert!(found);
}
