use super::*;
use crate::vga::PLANE_SIZE;

/// Planar 16-colour addressing at A0000 (mode 12h), all planes writable.
fn planar() -> Vga {
    let mut vga = Vga::new();
    set_mode(&mut vga, &MODE_12);
    vga
}

fn planes_at(vga: &Vga, offset: usize) -> [u8; 4] {
    std::array::from_fn(|p| vga.planes()[p * PLANE_SIZE + offset])
}

/// Fills all four planes at `offset` with the given bytes (write mode 0, one plane at a time).
fn fill(vga: &mut Vga, offset: u32, bytes: [u8; 4]) {
    for (plane, &b) in bytes.iter().enumerate() {
        set_seq(vga, 2, 1 << plane);
        vga.mem_write(offset, b);
    }
    set_seq(vga, 2, 0x0F);
}

#[test]
fn write_mode_0_set_reset_rotate_function_and_bit_mask() {
    let mut vga = planar();
    // Set/reset colour 0b0101 on all planes: planes 0 and 2 become ones.
    set_gc(&mut vga, 0, 0x05);
    set_gc(&mut vga, 1, 0x0F);
    vga.mem_write(0x10, 0x00);
    assert_eq!(planes_at(&vga, 0x10), [0xFF, 0x00, 0xFF, 0x00]);

    // Bit mask keeps latched bits: latch the old bytes by reading, then write.
    set_gc(&mut vga, 1, 0x00);
    fill(&mut vga, 0x20, [0xAA, 0x55, 0xF0, 0x0F]);
    set_gc(&mut vga, 8, 0x0F);
    vga.mem_read(0x20);
    vga.mem_write(0x20, 0x33);
    assert_eq!(planes_at(&vga, 0x20), [0xA3, 0x53, 0xF3, 0x03]);

    // Rotate right by 4 and XOR with the latches, full bit mask.
    set_gc(&mut vga, 8, 0xFF);
    set_gc(&mut vga, 3, 0x18 | 4);
    vga.mem_read(0x20);
    vga.mem_write(0x20, 0x0F); // rotated: 0xF0
    assert_eq!(planes_at(&vga, 0x20), [0x53, 0xA3, 0x03, 0xF3]);

    // AND and OR functions.
    set_gc(&mut vga, 3, 0x08);
    vga.mem_read(0x20);
    vga.mem_write(0x20, 0x0F);
    assert_eq!(planes_at(&vga, 0x20), [0x03, 0x03, 0x03, 0x03]);
    set_gc(&mut vga, 3, 0x10);
    vga.mem_read(0x20);
    vga.mem_write(0x20, 0x80);
    assert_eq!(planes_at(&vga, 0x20), [0x83, 0x83, 0x83, 0x83]);
}

#[test]
fn write_mode_1_copies_the_latches() {
    let mut vga = planar();
    fill(&mut vga, 0x100, [0x12, 0x34, 0x56, 0x78]);
    set_gc(&mut vga, 5, 0x01);
    vga.mem_read(0x100);
    vga.mem_write(0x200, 0xFF); // the data byte is ignored
    assert_eq!(planes_at(&vga, 0x200), [0x12, 0x34, 0x56, 0x78]);
}

#[test]
fn write_mode_2_spreads_colour_bits_under_the_bit_mask() {
    let mut vga = planar();
    fill(&mut vga, 0x40, [0x00, 0xFF, 0x00, 0xFF]);
    set_gc(&mut vga, 5, 0x02);
    set_gc(&mut vga, 8, 0x81);
    vga.mem_read(0x40);
    vga.mem_write(0x40, 0x0B); // colour 1011
    assert_eq!(planes_at(&vga, 0x40), [0x81, 0xFF, 0x00, 0xFF]);
}

#[test]
fn write_mode_3_uses_rotated_data_as_mask_for_set_reset() {
    let mut vga = planar();
    fill(&mut vga, 0x60, [0x00, 0x00, 0xFF, 0xFF]);
    set_gc(&mut vga, 5, 0x03);
    set_gc(&mut vga, 0, 0x03); // colour: planes 0 and 1 set
    set_gc(&mut vga, 8, 0x3C);
    vga.mem_read(0x60);
    vga.mem_write(0x60, 0xF0); // effective mask 0xF0 & 0x3C = 0x30
    assert_eq!(planes_at(&vga, 0x60), [0x30, 0x30, 0xCF, 0xCF]);
}

#[test]
fn read_mode_0_selects_a_plane_and_read_mode_1_compares_colours() {
    let mut vga = planar();
    // Pixels (msb first): colours 5, 5, 1, 0, 4, 5, 13, 15.
    fill(
        &mut vga,
        0x80,
        [0b1110_0111, 0b0000_0001, 0b1100_1111, 0b0000_0011],
    );
    set_gc(&mut vga, 4, 2);
    assert_eq!(vga.mem_read(0x80), 0b1100_1111);
    set_gc(&mut vga, 5, 0x08);
    set_gc(&mut vga, 2, 0x05);
    set_gc(&mut vga, 7, 0x0F);
    assert_eq!(vga.mem_read(0x80), 0b1100_0100, "exact colour 5");
    set_gc(&mut vga, 7, 0x07); // ignore plane 3: 13 matches 5 too
    assert_eq!(vga.mem_read(0x80), 0b1100_0110);
    set_gc(&mut vga, 7, 0x00);
    assert_eq!(vga.mem_read(0x80), 0xFF, "nothing compared: all match");
}

#[test]
fn chain4_addresses_planes_by_the_low_address_bits() {
    let mut vga = Vga::new();
    set_mode(&mut vga, &MODE_13);
    for addr in 0..8u32 {
        vga.mem_write(addr, 0x10 + addr as u8);
    }
    assert_eq!(planes_at(&vga, 0), [0x10, 0x11, 0x12, 0x13]);
    assert_eq!(planes_at(&vga, 4), [0x14, 0x15, 0x16, 0x17]);
    assert_eq!(vga.mem_read(6), 0x16);
    vga.mem_write(0xF9FF, 0xEE);
    assert_eq!(vga.planes()[3 * PLANE_SIZE + 0xF9FC], 0xEE);
    // Mode 13h maps only the 64 KiB at A0000.
    assert_eq!(vga.mem_read(0x10000), 0xFF);
}

#[test]
fn odd_even_text_addressing_splits_characters_and_attributes() {
    let mut vga = Vga::new();
    set_mode(&mut vga, &MODE_03);
    vga.mem_write(0x18000, b'A');
    vga.mem_write(0x18001, 0x1E);
    vga.mem_write(0x18002, b'B');
    assert_eq!(planes_at(&vga, 0)[..2], [b'A', 0x1E]);
    assert_eq!(planes_at(&vga, 2)[0], b'B');
    assert_eq!(vga.mem_read(0x18001), 0x1E);
    assert_eq!(vga.mem_read(0x18002), b'B');
    // B8000 mapping: A0000 and B0000 are not decoded.
    assert_eq!(vga.mem_read(0x0000), 0xFF);
    vga.mem_write(0x10000, 0x77);
    assert!(vga.planes().iter().all(|&b| b != 0x77));
}

#[test]
fn misc_ram_disable_blocks_cpu_access() {
    let mut vga = planar();
    outb(&mut vga, 0x3C2, 0xE1);
    vga.mem_write(0, 0x55);
    assert_eq!(vga.mem_read(0), 0xFF);
    outb(&mut vga, 0x3C2, 0xE3);
    assert_eq!(vga.mem_read(0), 0x00);
}
