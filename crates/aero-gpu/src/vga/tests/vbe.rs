use super::*;
use crate::frame::Frame;
use crate::vga::vbe::*;
use crate::vga::{DisplayMode, LFB_SIZE, PCI_DESCRIPTION};

fn dispi_write(vga: &mut Vga, index: u16, value: u16) {
    vga.io_write(0x1CE, 2, u32::from(index));
    vga.io_write(0x1CF, 2, u32::from(value));
}

fn dispi_read(vga: &mut Vga, index: u16) -> u16 {
    vga.io_write(0x1CE, 2, u32::from(index));
    vga.io_read(0x1CF, 2) as u16
}

/// The framebuffer memory, kept by the owner of the adapter as the machine does.
fn framebuffer() -> Vec<u8> {
    vec![0; LFB_SIZE]
}

/// Does what the owner of the framebuffer must do after port writes: clear on request.
fn apply_clear(vga: &mut Vga, lfb: &mut [u8]) {
    if let Some(n) = vga.take_lfb_clear() {
        lfb[..n].fill(0);
    }
}

fn set_vbe_mode(vga: &mut Vga, lfb: &mut [u8], width: u16, height: u16, bpp: u16, flags: u16) {
    dispi_write(vga, DISPI_INDEX_ENABLE, 0);
    dispi_write(vga, DISPI_INDEX_XRES, width);
    dispi_write(vga, DISPI_INDEX_YRES, height);
    dispi_write(vga, DISPI_INDEX_BPP, bpp);
    dispi_write(vga, DISPI_INDEX_ENABLE, DISPI_ENABLED | flags);
    apply_clear(vga, lfb);
}

fn rendered(vga: &mut Vga, lfb: &[u8]) -> Frame {
    let mut frame = Frame::new();
    vga.render(lfb, &mut frame);
    frame
}

#[test]
fn dispi_id_and_capabilities() {
    let mut vga = Vga::new();
    assert_eq!(dispi_read(&mut vga, DISPI_INDEX_ID), 0xB0C5);
    dispi_write(&mut vga, DISPI_INDEX_ID, 0xB0C2);
    assert_eq!(dispi_read(&mut vga, DISPI_INDEX_ID), 0xB0C2);
    dispi_write(&mut vga, DISPI_INDEX_ID, 0x1234);
    assert_eq!(
        dispi_read(&mut vga, DISPI_INDEX_ID),
        0xB0C2,
        "unknown ids are ignored"
    );
    assert_eq!(dispi_read(&mut vga, DISPI_INDEX_VIDEO_MEMORY_64K), 256);
    dispi_write(&mut vga, DISPI_INDEX_ENABLE, DISPI_GETCAPS);
    assert_eq!(dispi_read(&mut vga, DISPI_INDEX_XRES), 1920);
    assert_eq!(dispi_read(&mut vga, DISPI_INDEX_YRES), 1200);
    assert_eq!(dispi_read(&mut vga, DISPI_INDEX_BPP), 32);
    dispi_write(&mut vga, DISPI_INDEX_ENABLE, 0);
    assert_eq!(dispi_read(&mut vga, DISPI_INDEX_XRES), 640);
    assert_eq!(vga.io_read(0x1CE, 2), u32::from(DISPI_INDEX_XRES));
}

#[test]
fn dispi_rejects_hostile_values() {
    let mut vga = Vga::new();
    dispi_write(&mut vga, DISPI_INDEX_XRES, 1928); // too wide
    dispi_write(&mut vga, DISPI_INDEX_XRES, 801); // not a multiple of 8
    assert_eq!(dispi_read(&mut vga, DISPI_INDEX_XRES), 640);
    dispi_write(&mut vga, DISPI_INDEX_YRES, 0xFFFF);
    assert_eq!(dispi_read(&mut vga, DISPI_INDEX_YRES), 480);
    dispi_write(&mut vga, DISPI_INDEX_BPP, 7);
    assert_eq!(dispi_read(&mut vga, DISPI_INDEX_BPP), 8);
    dispi_write(&mut vga, DISPI_INDEX_XRES, 0);
    dispi_write(&mut vga, DISPI_INDEX_ENABLE, DISPI_ENABLED);
    assert_eq!(vga.vbe_mode(), None, "a zero-width mode is not enabled");
    dispi_write(&mut vga, 0x7777, 0x1234); // unknown register
    assert_eq!(dispi_read(&mut vga, 0x7777), 0);

    let mut lfb = framebuffer();
    set_vbe_mode(&mut vga, &mut lfb, 800, 600, 32, DISPI_LFB_ENABLED);
    dispi_write(&mut vga, DISPI_INDEX_XRES, 1024); // ignored while enabled
    assert_eq!(vga.vbe_mode().unwrap().width, 800);
    dispi_write(&mut vga, DISPI_INDEX_VIRT_WIDTH, 100); // narrower than the mode
    assert_eq!(dispi_read(&mut vga, DISPI_INDEX_VIRT_WIDTH), 800);
    dispi_write(&mut vga, DISPI_INDEX_Y_OFFSET, 0xFFFF); // far past the memory
    lfb.fill(0x77);
    let frame = rendered(&mut vga, &lfb);
    assert_eq!((frame.width, frame.height), (800, 600));
    assert!(frame.pixels.chunks(4).all(|p| p == [0, 0, 0, 0xFF]));
    dispi_write(&mut vga, DISPI_INDEX_BANK, 0xFFFF);
    assert_eq!(dispi_read(&mut vga, DISPI_INDEX_BANK), 0xFF);
    assert_eq!(vga.vbe_bank_window(), Some(LFB_SIZE - BANK_SIZE));
    // A short framebuffer (a broken owner) shows black, never panics.
    assert!(
        rendered(&mut vga, &lfb[..100])
            .pixels
            .chunks(4)
            .all(|p| p == [0, 0, 0, 0xFF])
    );
}

#[test]
fn mode_set_32bpp_and_lfb_render() {
    let mut vga = Vga::new();
    let mut lfb = framebuffer();
    set_vbe_mode(&mut vga, &mut lfb, 1024, 768, 32, DISPI_LFB_ENABLED);
    assert_eq!(vga.text_screen(), None);
    let mode = vga.vbe_mode().unwrap();
    assert_eq!(
        (mode.width, mode.height, mode.bpp, mode.pitch),
        (1024, 768, 32, 4096)
    );
    assert_eq!(
        dispi_read(&mut vga, DISPI_INDEX_VIRT_HEIGHT),
        (LFB_SIZE / 4096) as u16
    );
    // Pixel (10, 20) = BGRX 0x11 0x22 0x33.
    let at = (20 * 1024 + 10) * 4;
    lfb[at..at + 4].copy_from_slice(&[0x11, 0x22, 0x33, 0x00]);
    let frame = rendered(&mut vga, &lfb);
    assert_eq!((frame.width, frame.height), (1024, 768));
    assert_eq!(frame.pixel(10, 20), Some([0x33, 0x22, 0x11, 0xFF]));
    assert_eq!(frame.pixel(11, 20), Some([0, 0, 0, 0xFF]));
    assert!(matches!(vga.display_mode(), DisplayMode::Vbe(_)));

    // Panning with the Y offset (double buffering): show the second page.
    let page = 1024 * 768 * 4;
    lfb[page + 4] = 0xFF;
    dispi_write(&mut vga, DISPI_INDEX_Y_OFFSET, 768);
    let frame = rendered(&mut vga, &lfb);
    assert_eq!(frame.pixel(1, 0), Some([0, 0, 0xFF, 0xFF]));
}

#[test]
fn mode_set_clears_memory_unless_asked_not_to() {
    let mut vga = Vga::new();
    let mut lfb = framebuffer();
    lfb[0] = 0x99;
    set_vbe_mode(&mut vga, &mut lfb, 640, 480, 8, DISPI_NOCLEARMEM);
    assert_eq!(lfb[0], 0x99);
    assert_eq!(vga.take_lfb_clear(), None);
    lfb[640 * 480] = 0x55; // just past the mode
    set_vbe_mode(&mut vga, &mut lfb, 640, 480, 8, 0);
    assert_eq!(lfb[0], 0x00);
    assert_eq!(lfb[640 * 480], 0x55, "only the mode's bytes are cleared");
    // Enabling while already on is no mode set.
    lfb[0] = 0x99;
    dispi_write(&mut vga, DISPI_INDEX_ENABLE, DISPI_ENABLED);
    assert_eq!(vga.take_lfb_clear(), None);
}

#[test]
fn packed_16_15_24_and_8_bpp_render() {
    let mut vga = Vga::new();
    let mut lfb = framebuffer();
    set_vbe_mode(&mut vga, &mut lfb, 64, 8, 16, 0);
    lfb[0] = 0x1F; // blue 5:6:5
    lfb[3] = 0xF8; // pixel 1 = red
    let frame = rendered(&mut vga, &lfb);
    assert_eq!(frame.pixel(0, 0), Some([0, 0, 0xFF, 0xFF]));
    assert_eq!(frame.pixel(1, 0), Some([0xFF, 0, 0, 0xFF]));

    set_vbe_mode(&mut vga, &mut lfb, 64, 8, 15, 0);
    lfb[..2].copy_from_slice(&[0xE0, 0x03]); // green 5:5:5
    assert_eq!(
        rendered(&mut vga, &lfb).pixel(0, 0),
        Some([0, 0xFF, 0, 0xFF])
    );

    set_vbe_mode(&mut vga, &mut lfb, 64, 8, 24, 0);
    let at = 64 * 3 + 3; // pixel (1, 1)
    lfb[at..at + 3].copy_from_slice(&[0x01, 0x02, 0x03]);
    assert_eq!(
        rendered(&mut vga, &lfb).pixel(1, 1),
        Some([0x03, 0x02, 0x01, 0xFF])
    );

    set_vbe_mode(&mut vga, &mut lfb, 64, 8, 8, 0);
    outb(&mut vga, 0x3C8, 200);
    for c in [0x3F, 0x3F, 0x00] {
        outb(&mut vga, 0x3C9, c);
    }
    lfb[5] = 200;
    assert_eq!(
        rendered(&mut vga, &lfb).pixel(5, 0),
        Some([0xFF, 0xFF, 0x00, 0xFF])
    );

    // The 8-bit DAC switch widens palette components.
    set_vbe_mode(
        &mut vga,
        &mut lfb,
        64,
        8,
        8,
        DISPI_8BIT_DAC | DISPI_NOCLEARMEM,
    );
    outb(&mut vga, 0x3C8, 200);
    for c in [0x80, 0x40, 0xC0] {
        outb(&mut vga, 0x3C9, c);
    }
    assert_eq!(
        rendered(&mut vga, &lfb).pixel(5, 0),
        Some([0x80, 0x40, 0xC0, 0xFF])
    );
}

#[test]
fn banked_window_maps_64k_of_the_framebuffer() {
    let mut vga = Vga::new();
    let mut lfb = framebuffer();
    assert_eq!(vga.vbe_bank_window(), None, "VGA modes own the window");
    set_vbe_mode(&mut vga, &mut lfb, 800, 600, 8, 0);
    assert_eq!(vga.vbe_bank_window(), Some(0));
    dispi_write(&mut vga, DISPI_INDEX_BANK, 3);
    assert_eq!(vga.vbe_bank_window(), Some(3 * BANK_SIZE));
    // The owner maps the bank; the planes are neither read nor written meanwhile.
    vga.mem_write(0x10, 0xAB);
    assert_eq!(vga.mem_read(0x10), 0xFF);
    assert_eq!(vga.mem_read(0x10000), 0xFF, "only 64 KiB are banked");
    assert!(vga.planes().iter().all(|&b| b == 0));
    // Disabling VBE gives the window back to the VGA planes.
    dispi_write(&mut vga, DISPI_INDEX_ENABLE, 0);
    assert_eq!(vga.vbe_mode(), None);
    assert_eq!(vga.vbe_bank_window(), None);
    assert!(vga.text_screen().is_some());
}

#[test]
fn pci_description_is_qemu_std_vga() {
    assert_eq!(
        (PCI_DESCRIPTION.vendor_id, PCI_DESCRIPTION.device_id),
        (0x1234, 0x1111)
    );
    assert_eq!(
        (PCI_DESCRIPTION.class, PCI_DESCRIPTION.subclass),
        (0x03, 0x00)
    );
    assert_eq!(PCI_DESCRIPTION.bar0_size as usize, LFB_SIZE);
    assert!(PCI_DESCRIPTION.bar0_size.is_power_of_two());
    const { assert!(LFB_SIZE >= 2 * 1920 * 1080 * 4) };
}

#[test]
fn hostile_port_and_memory_traffic_never_panics() {
    let mut vga = Vga::new();
    let mut lfb = framebuffer();
    let mut frame = Frame::new();
    let mut state = 0x1234_5678_u32;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    let ports: Vec<u16> = (0x3B0..=0x3DF).chain(0x1CE..=0x1D0).collect();
    for step in 0..20_000u32 {
        let r = next();
        let port = ports[(r as usize >> 8) % ports.len()];
        let size = [1u8, 2, 4][(r & 3) as usize % 3];
        match r % 5 {
            0 => {
                vga.io_read(port, size);
            }
            1 => vga.mem_write(next() % 0x30000, next() as u8),
            2 => {
                vga.mem_read(next() % 0x30000);
            }
            _ => vga.io_write(port, size, next()),
        }
        vga.advance(u64::from(step) * 10_000);
        apply_clear(&mut vga, &mut lfb);
        if step % 2_000 == 0 {
            vga.render(&lfb, &mut frame);
            assert!(frame.width <= 2048 && frame.height <= 2048);
            assert_eq!(
                frame.pixels.len(),
                (frame.width * frame.height * 4) as usize
            );
            let _ = vga.text_screen();
        }
    }
}

#[test]
fn hostile_dispi_register_values_never_panic_or_exceed_bounds() {
    let mut vga = Vga::new();
    let mut lfb = framebuffer();
    let mut frame = Frame::new();
    let mut state = 0x9E37_79B9_u32;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    for step in 0..3_000u32 {
        let r = next();
        let index = (r % 12) as u16;
        let value = match r >> 8 & 3 {
            0 => (next() & 0xFFFF) as u16,
            1 => [0, 8, 15, 16, 24, 32, 1920, 1200, 0xFFFF][(next() % 9) as usize],
            2 => (next() as u16 & 0xFF) | DISPI_ENABLED,
            _ => (next() % 2048) as u16 & !7,
        };
        dispi_write(&mut vga, index, value);
        vga.mem_write(next() % 0x20000, next() as u8);
        apply_clear(&mut vga, &mut lfb);
        assert!(
            vga.vbe_bank_window()
                .is_none_or(|o| o + BANK_SIZE <= LFB_SIZE)
        );
        if step % 100 == 0 {
            vga.render(&lfb, &mut frame);
            assert!(frame.width <= u32::from(VBE_MAX_XRES).max(2048));
            assert!(frame.height <= u32::from(VBE_MAX_YRES).max(2048));
            assert_eq!(
                frame.pixels.len(),
                (frame.width * frame.height * 4) as usize
            );
        }
    }
}
