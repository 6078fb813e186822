use super::*;

#[test]
fn sequencer_registers_read_back_with_implemented_bits() {
    let mut vga = Vga::new();
    outb(&mut vga, 0x3C4, 0x02);
    assert_eq!(inb(&mut vga, 0x3C4), 0x02);
    outb(&mut vga, 0x3C5, 0xFA);
    assert_eq!(inb(&mut vga, 0x3C5), 0x0A, "map mask keeps 4 bits");
    let expected = [
        (0, 0xFF, 0x03),
        (1, 0xFF, 0x3D),
        (3, 0xFF, 0x3F),
        (4, 0xFF, 0x0E),
    ];
    for (index, write, read) in expected {
        set_seq(&mut vga, index, write);
        outb(&mut vga, 0x3C4, index);
        assert_eq!(inb(&mut vga, 0x3C5), read, "SR{index}");
    }
    // A word write sets index and data at once.
    vga.io_write(0x3C4, 2, 0x0502);
    outb(&mut vga, 0x3C4, 2);
    assert_eq!(inb(&mut vga, 0x3C5), 0x05);
}

#[test]
fn graphics_controller_registers_read_back() {
    let mut vga = Vga::new();
    let masks = [0x0F, 0x0F, 0x0F, 0x1F, 0x03, 0x7B, 0x0F, 0x0F, 0xFF];
    for (index, &mask) in masks.iter().enumerate() {
        set_gc(&mut vga, index as u8, 0xFF);
        set_gc(&mut vga, index as u8, 0xA5);
        outb(&mut vga, 0x3CE, index as u8);
        assert_eq!(inb(&mut vga, 0x3CF), 0xA5 & mask, "GR{index}");
    }
    // Indices past the file read zero and ignore writes.
    set_gc(&mut vga, 0x0C, 0x55);
    assert_eq!(inb(&mut vga, 0x3CF), 0);
}

#[test]
fn crtc_registers_read_back_and_honour_protection() {
    let mut vga = Vga::new();
    set_crtc(&mut vga, 0x11, 0x0E); // unprotect
    for index in 0..0x19u8 {
        set_crtc(&mut vga, index, index ^ 0x5A);
    }
    for index in 0..0x19u8 {
        outb(&mut vga, 0x3D4, index);
        assert_eq!(inb(&mut vga, 0x3D5), index ^ 0x5A, "CR{index:02X}");
    }
    set_crtc(&mut vga, 0x11, 0x80); // protect CR00-CR07
    set_crtc(&mut vga, 0x01, 0x11);
    outb(&mut vga, 0x3D4, 0x01);
    assert_eq!(inb(&mut vga, 0x3D5), 0x01 ^ 0x5A, "protected");
    set_crtc(&mut vga, 0x07, 0xFF);
    outb(&mut vga, 0x3D4, 0x07);
    assert_eq!(
        inb(&mut vga, 0x3D5),
        (0x07 ^ 0x5A) | 0x10,
        "only line compare bit 8"
    );
    set_crtc(&mut vga, 0x0E, 0x07);
    set_crtc(&mut vga, 0x0F, 0xD0);
    assert_eq!(vga.crtc.cursor_location(), 0x07D0);
}

#[test]
fn crtc_moves_between_mono_and_colour_ports_with_misc_bit_0() {
    let mut vga = Vga::new();
    outb(&mut vga, 0x3C2, 0x66); // monochrome addressing
    assert_eq!(inb(&mut vga, 0x3CC), 0x66);
    outb(&mut vga, 0x3B4, 0x0C);
    outb(&mut vga, 0x3B5, 0x12);
    assert_eq!(inb(&mut vga, 0x3D4), 0xFF, "colour CRTC port not decoded");
    outb(&mut vga, 0x3C2, 0x67);
    outb(&mut vga, 0x3D4, 0x0C);
    assert_eq!(inb(&mut vga, 0x3D5), 0x12);
    assert_eq!(inb(&mut vga, 0x3BA), 0xFF);
}

#[test]
fn attribute_controller_flip_flop_and_read_back() {
    let mut vga = Vga::new();
    inb(&mut vga, 0x3DA); // reset flip-flop to "index"
    outb(&mut vga, 0x3C0, 0x03);
    outb(&mut vga, 0x3C0, 0xFF);
    assert_eq!(inb(&mut vga, 0x3C0), 0x03, "index read back, PAS clear");
    assert_eq!(inb(&mut vga, 0x3C1), 0x3F, "palette entries are 6 bits");
    // The flip-flop is now at "index": this write selects register 0x13.
    outb(&mut vga, 0x3C0, 0x33);
    outb(&mut vga, 0x3C0, 0xF7);
    assert_eq!(inb(&mut vga, 0x3C0), 0x33);
    assert_eq!(inb(&mut vga, 0x3C1), 0x07, "panning keeps 4 bits");
    // Half-way through a pair, reading input status 1 resets to "index".
    outb(&mut vga, 0x3C0, 0x30);
    inb(&mut vga, 0x3DA);
    outb(&mut vga, 0x3C0, 0x32);
    outb(&mut vga, 0x3C0, 0x05);
    assert_eq!(inb(&mut vga, 0x3C0), 0x32);
    assert_eq!(inb(&mut vga, 0x3C1), 0x05);
    outb(&mut vga, 0x3C0, 0x10);
    outb(&mut vga, 0x3C0, 0xFF);
    assert_eq!(inb(&mut vga, 0x3C1), 0xEF, "mode control bit 4 is reserved");
}

#[test]
fn dac_auto_increments_and_keeps_six_bits() {
    let mut vga = Vga::new();
    outb(&mut vga, 0x3C8, 0x10);
    for v in [0x3F, 0x40 | 0x20, 0x01, 0x02, 0x03, 0x04] {
        outb(&mut vga, 0x3C9, v);
    }
    assert_eq!(
        inb(&mut vga, 0x3C8),
        0x12,
        "write index advanced past two entries"
    );
    assert_eq!(inb(&mut vga, 0x3C7), 0x00, "state: writing");
    outb(&mut vga, 0x3C7, 0x10);
    assert_eq!(inb(&mut vga, 0x3C7), 0x03, "state: reading");
    let read: Vec<u8> = (0..6).map(|_| inb(&mut vga, 0x3C9)).collect();
    assert_eq!(read, vec![0x3F, 0x20, 0x01, 0x02, 0x03, 0x04]);
    outb(&mut vga, 0x3C6, 0x0F);
    assert_eq!(inb(&mut vga, 0x3C6), 0x0F);
    assert_eq!(
        vga.dac.rgba(0x10),
        [0, 0, 0, 0xFF],
        "the pel mask turns 0x10 into entry 0"
    );
    outb(&mut vga, 0x3C6, 0xFF);
    assert_eq!(vga.dac.rgba(0x10), [0xFF, 0x82, 0x04, 0xFF]);
    assert_eq!(vga.dac.rgba(0x11), [0x08, 0x0C, 0x10, 0xFF]);
}

/// The RAMDAC latches red and green and writes the entry with blue (as QEMU's std-vga
/// does): an unfinished write leaves the entry as it was, and a new index drops it.
#[test]
fn dac_entry_changes_only_when_all_three_components_arrived() {
    let mut vga = Vga::new();
    let before = vga.dac.rgba(0x80);
    outb(&mut vga, 0x3C8, 0x80);
    outb(&mut vga, 0x3C9, 0x3F);
    outb(&mut vga, 0x3C9, 0x3F);
    assert_eq!(
        vga.dac.rgba(0x80),
        before,
        "red and green alone change nothing"
    );
    outb(&mut vga, 0x3C7, 0x80);
    let read: Vec<u8> = (0..3).map(|_| inb(&mut vga, 0x3C9)).collect();
    assert_eq!(read, vec![0, 0, 0], "nor read back");
    outb(&mut vga, 0x3C8, 0x80);
    outb(&mut vga, 0x3C9, 0x01);
    outb(&mut vga, 0x3C9, 0x02);
    assert_eq!(vga.dac.rgba(0x80), before);
    outb(&mut vga, 0x3C9, 0x03);
    assert_eq!(
        vga.dac.rgba(0x80),
        [0x04, 0x08, 0x0C, 0xFF],
        "blue writes all three"
    );
    assert_eq!(inb(&mut vga, 0x3C8), 0x81);
}

#[test]
fn misc_feature_and_enable_ports_read_back() {
    let mut vga = Vga::new();
    outb(&mut vga, 0x3C2, 0xE3);
    assert_eq!(inb(&mut vga, 0x3CC), 0xE3);
    outb(&mut vga, 0x3DA, 0x01);
    assert_eq!(inb(&mut vga, 0x3CA), 0x01);
    outb(&mut vga, 0x3C3, 0xFE);
    assert_eq!(inb(&mut vga, 0x3C3), 0x00);
    assert_eq!(inb(&mut vga, 0x3DF), 0xFF, "unassigned port floats high");
    assert_eq!(
        vga.io_read(0x3C4, 2) & 0xFF,
        u32::from(inb(&mut vga, 0x3C4))
    );
}

#[test]
fn input_status_follows_virtual_time_deterministically() {
    let mut vga = Vga::new();
    let timing = vga.frame_timing();
    // Mode 3: 900 dots per line at 28.322 MHz, 449 lines: ~70 Hz.
    assert_eq!(timing.total_lines, 449);
    assert_eq!(timing.display_lines, 400);
    let frame_ns = timing.frame_ns();
    assert!((14_200_000..14_400_000).contains(&frame_ns), "{frame_ns}");
    let status_at = |vga: &mut Vga, ns: u64| {
        vga.advance(ns);
        inb(vga, 0x3DA)
    };
    assert_eq!(
        status_at(&mut vga, 0) & 0x09,
        0x00,
        "top of frame: displaying"
    );
    let hblank = timing.line_ns * 10 + timing.line_ns - 2;
    assert_eq!(
        status_at(&mut vga, hblank) & 0x09,
        0x01,
        "horizontal blanking only"
    );
    let retrace = timing.retrace_start * timing.line_ns + 1;
    assert_eq!(
        status_at(&mut vga, retrace) & 0x09,
        0x09,
        "vertical retrace"
    );
    let after = (timing.retrace_start + timing.retrace_lines) * timing.line_ns + 1;
    assert_eq!(
        status_at(&mut vga, after) & 0x09,
        0x01,
        "retrace over, still blanking"
    );
    // Virtual time never runs backwards.
    assert_eq!(status_at(&mut vga, 0) & 0x09, 0x01);
    // Same time, same answer; the next frame repeats the pattern.
    let mut other = Vga::new();
    assert_eq!(status_at(&mut other, retrace + frame_ns) & 0x09, 0x09);
}
