//! The device driven like the guest driver drives it.

use aero_protocol::ABI_VERSION_U32;
use aero_protocol::cmd::{self, Opcode};
use aero_protocol::pci::{self, ErrorCode, Format, reg};
use aero_protocol::ring::{AllocEntry, FENCE_PAGE_MAGIC, RingHeader, SUBMIT_FLAG_NO_IRQ};
use aero_protocol::writer::CmdStreamWriter;

use super::guest::{BACKING_GPA, FENCE_GPA, Guest, RAM_SIZE, RING_GPA};
use crate::Frame;
use crate::aerogpu::{AEROGPU_PCI_DESCRIPTION, GuestMemory, ScanoutError};

const PERIOD: u64 = pci::VBLANK_PERIOD_NS_60HZ as u64;

fn stream(f: impl FnOnce(&mut CmdStreamWriter)) -> Vec<u8> {
    let mut w = CmdStreamWriter::new();
    f(&mut w);
    w.finish()
}

fn nop_stream() -> Vec<u8> {
    stream(|w| {
        w.push_bare(Opcode::Nop as u32, &[]);
    })
}

fn fence_page(g: &Guest) -> (u32, u64) {
    let mut b = [0u8; 16];
    g.mem.read(FENCE_GPA, &mut b).unwrap();
    (
        u32::from_le_bytes(b[0..4].try_into().unwrap()),
        u64::from_le_bytes(b[8..16].try_into().unwrap()),
    )
}

#[test]
fn identity_registers_and_pci_description() {
    let mut g = Guest::new(8, 0);
    assert_eq!(g.read(reg::MAGIC), 0x5550_4741);
    assert_eq!(&g.read(reg::MAGIC).to_le_bytes(), b"AGPU");
    assert_eq!(g.read(reg::ABI_VERSION), ABI_VERSION_U32);
    assert_eq!(g.read(reg::ABI_VERSION) >> 16, 1);
    let features = g.read64(reg::FEATURES_LO);
    for f in [
        pci::FEATURE_FENCE_PAGE,
        pci::FEATURE_VBLANK,
        pci::FEATURE_CURSOR,
        pci::FEATURE_SCANOUT,
        pci::FEATURE_ERROR_INFO,
    ] {
        assert_ne!(features & f, 0);
    }
    // Identity registers are read-only.
    g.write(reg::MAGIC, 0);
    g.write(reg::ABI_VERSION, 0);
    assert_eq!(g.read(reg::MAGIC), pci::MMIO_MAGIC);
    assert_eq!(g.read(reg::ABI_VERSION), ABI_VERSION_U32);
    assert_eq!(g.read(0xFFC), 0, "unknown registers read as 0");

    let d = AEROGPU_PCI_DESCRIPTION;
    assert_eq!((d.vendor_id, d.device_id), (0xA3A0, 0x0001));
    assert_eq!(
        (d.class, d.subclass, d.prog_if),
        (0x03, 0x00, 0x00),
        "VGA-compatible display controller"
    );
    assert_eq!(d.bar0_size, 0x1000);
}

#[test]
fn programmable_registers_read_back() {
    let mut g = Guest::new(8, 0);
    let regs = [
        (reg::RING_GPA_HI, 0),
        (reg::RING_SIZE_BYTES, 0x240),
        (reg::FENCE_GPA_LO, 0x1234_5678),
        (reg::FENCE_GPA_HI, 0x9),
        (reg::SCANOUT0_WIDTH, 1024),
        (reg::SCANOUT0_HEIGHT, 768),
        (reg::SCANOUT0_FORMAT, Format::B8G8R8X8Unorm as u32),
        (reg::SCANOUT0_PITCH_BYTES, 4096),
        (reg::SCANOUT0_FB_GPA_LO, 0x20_0000),
        (reg::SCANOUT0_FB_GPA_HI, 0x1),
        (reg::CURSOR_ENABLE, 1),
        (reg::CURSOR_X, (-5i32) as u32),
        (reg::CURSOR_Y, 300),
        (reg::CURSOR_HOT_X, 3),
        (reg::CURSOR_HOT_Y, 4),
        (reg::CURSOR_WIDTH, 32),
        (reg::CURSOR_HEIGHT, 32),
        (reg::CURSOR_FORMAT, Format::B8G8R8A8Unorm as u32),
        (reg::CURSOR_FB_GPA_LO, 0x30_0000),
        (reg::CURSOR_FB_GPA_HI, 0x2),
        (reg::CURSOR_PITCH_BYTES, 128),
        (reg::IRQ_ENABLE, pci::IRQ_FENCE),
    ];
    for (off, v) in regs {
        g.write(off, v);
    }
    for (off, v) in regs {
        assert_eq!(g.read(off), v, "register {off:#x}");
    }
    assert_eq!(g.dev.cursor().x, -5);
    assert_eq!(g.dev.scanout().fb_gpa, 0x1_0020_0000);
    // Read-only status registers ignore writes.
    for off in [
        reg::COMPLETED_FENCE_LO,
        reg::IRQ_STATUS,
        reg::ERROR_CODE,
        reg::ERROR_COUNT,
        reg::SCANOUT0_VBLANK_SEQ_LO,
    ] {
        g.write(off, 0xFFFF_FFFF);
        assert_eq!(g.read(off), 0, "register {off:#x}");
    }
    assert_eq!(
        g.read(reg::SCANOUT0_VBLANK_PERIOD_NS),
        pci::VBLANK_PERIOD_NS_60HZ
    );
    // 64-bit and narrow accesses.
    assert_eq!(g.dev.mmio_read(reg::FENCE_GPA_LO.into(), 8), 0x9_1234_5678);
    assert_eq!(
        g.dev.mmio_read(u64::from(reg::MAGIC) + 1, 2),
        0x5047,
        "bytes 'G','P'"
    );
    g.dev.mmio_write(
        reg::SCANOUT0_FB_GPA_LO.into(),
        8,
        0xAB_0000_1000,
        &mut g.mem,
    );
    assert_eq!(g.dev.scanout().fb_gpa, 0xAB_0000_1000);
    g.dev
        .mmio_write(reg::SCANOUT0_WIDTH.into(), 2, 7, &mut g.mem);
    assert_eq!(
        g.read(reg::SCANOUT0_WIDTH),
        1024,
        "narrow writes are ignored"
    );
    assert_eq!(
        g.read(reg::RING_CONTROL),
        pci::RING_CONTROL_ENABLE,
        "RESET reads as 0"
    );
}

#[test]
fn fences_complete_in_order_with_fence_page_and_irq() {
    let mut g = Guest::new(8, 0);
    assert!(!g.dev.irq_level());
    g.submit(&nop_stream(), None, 1, 0);
    assert_eq!(g.completed_fence(), 1);
    assert_eq!(fence_page(&g), (FENCE_PAGE_MAGIC, 1));
    assert_eq!(g.read(reg::IRQ_STATUS), pci::IRQ_FENCE);
    assert!(g.dev.irq_level());
    assert_eq!(g.ring_head_in_memory(), 1);
    g.write(reg::IRQ_ACK, pci::IRQ_FENCE);
    assert!(!g.dev.irq_level());

    // Several descriptors per doorbell, one with NO_IRQ.
    for (fence, flags) in [(2, SUBMIT_FLAG_NO_IRQ), (3, SUBMIT_FLAG_NO_IRQ)] {
        let d = g.desc(&nop_stream(), None, fence, flags);
        g.push_desc(&d);
    }
    g.doorbell();
    assert_eq!(g.completed_fence(), 3);
    assert_eq!(g.read(reg::IRQ_STATUS), 0, "NO_IRQ completes silently");
    assert_eq!(fence_page(&g).1, 3);

    // Duplicate and older fence values never move the completed value back.
    g.submit(&nop_stream(), None, 10, 0);
    g.submit(&nop_stream(), None, 5, 0);
    g.submit(&nop_stream(), None, 10, 0);
    assert_eq!(g.completed_fence(), 10);
    assert_eq!(fence_page(&g).1, 10);
    // 64-bit values cross the LO/HI split.
    g.submit(&[], None, 0x1_0000_0002, 0);
    assert_eq!(g.read(reg::COMPLETED_FENCE_HI), 1);
    assert_eq!(g.read(reg::COMPLETED_FENCE_LO), 2);
    assert_eq!(g.dev.stats().submissions, 7);
}

#[test]
fn irq_enable_gates_latching_and_the_line() {
    let mut g = Guest::new(8, 0);
    g.write(reg::IRQ_ENABLE, 0);
    g.submit(&nop_stream(), None, 1, 0);
    assert_eq!(g.read(reg::IRQ_STATUS), 0);
    assert!(!g.dev.irq_level());
    g.write(reg::IRQ_ENABLE, pci::IRQ_FENCE);
    assert!(!g.dev.irq_level(), "no stale event after enabling");
    g.submit(&nop_stream(), None, 2, 0);
    assert!(g.dev.irq_level());
    // Power-down sequence: disable + ack leaves the line low.
    g.write(reg::IRQ_ENABLE, 0);
    g.write(reg::IRQ_ACK, 0xFFFF_FFFF);
    assert!(!g.dev.irq_level());
    assert_eq!(g.read(reg::IRQ_STATUS), 0);
}

#[test]
fn ring_wraps_around_slots_and_counters() {
    // Counters start just below 2^32 so both the slot index and the u32 wrap.
    let mut g = Guest::new(4, u32::MAX - 5);
    let mut fence = 0;
    for batch in [3usize, 4, 1, 4, 2, 3] {
        for _ in 0..batch {
            fence += 1;
            let d = g.desc(&nop_stream(), None, fence, 0);
            g.push_desc(&d);
        }
        g.doorbell();
        assert_eq!(g.completed_fence(), fence);
        assert_eq!(g.ring_head_in_memory(), g.tail);
    }
    assert_eq!(g.tail, (u32::MAX - 5).wrapping_add(17));
    assert_eq!(g.dev.stats().submissions, 17);
    assert_eq!(g.read(reg::ERROR_COUNT), 0);
}

#[test]
fn ring_errors_are_latched_without_consuming() {
    let mut g = Guest::new(4, 0);
    // tail - head > entry_count
    g.mem
        .write(RING_GPA + RingHeader::TAIL_OFFSET, &9u32.to_le_bytes())
        .unwrap();
    g.doorbell();
    assert_eq!(g.dev.error_code(), Some(ErrorCode::Ring));
    assert_eq!(g.dev.stats().submissions, 0);
    assert_eq!(g.read(reg::IRQ_STATUS) & pci::IRQ_ERROR, pci::IRQ_ERROR);
    // Broken header magic.
    g.mem
        .write(RING_GPA + RingHeader::TAIL_OFFSET, &0u32.to_le_bytes())
        .unwrap();
    g.mem.write(RING_GPA, &[0; 4]).unwrap();
    g.doorbell();
    assert_eq!(g.read(reg::ERROR_COUNT), 2);
    // Ring entries larger than RING_SIZE_BYTES.
    let mut g = Guest::new(4, 0);
    g.write(reg::RING_SIZE_BYTES, 100);
    g.submit(&nop_stream(), None, 1, 0);
    assert_eq!(g.dev.error_code(), Some(ErrorCode::Ring));
    assert_eq!(g.completed_fence(), 0);
    // Ring outside guest RAM.
    let mut g = Guest::new(4, 0);
    g.write(reg::RING_GPA_LO, (RAM_SIZE - 32) as u32);
    g.doorbell();
    assert_eq!(g.dev.error_code(), Some(ErrorCode::Oob));
    // Doorbells while the ring is disabled do nothing.
    let mut g = Guest::new(4, 0);
    g.write(reg::RING_CONTROL, 0);
    g.submit(&nop_stream(), None, 1, 0);
    assert_eq!(g.completed_fence(), 0);
    assert_eq!(g.read(reg::ERROR_COUNT), 0);
    g.write(reg::RING_CONTROL, pci::RING_CONTROL_ENABLE);
    g.doorbell();
    assert_eq!(
        g.completed_fence(),
        1,
        "enabling picks up from the header's head"
    );
}

#[test]
fn validation_errors_latch_and_the_device_keeps_running() {
    let mut g = Guest::new(8, 0);
    let mut bad = nop_stream();
    bad[0] = 0; // stream magic
    g.submit(&bad, None, 7, 0);
    assert_eq!(g.read(reg::ERROR_CODE), ErrorCode::CmdDecode as u32);
    assert_eq!(g.read64(reg::ERROR_FENCE_LO), 7);
    assert_eq!(g.read(reg::ERROR_COUNT), 1);
    assert_eq!(g.read(reg::IRQ_STATUS), pci::IRQ_ERROR | pci::IRQ_FENCE);
    assert_eq!(
        g.completed_fence(),
        7,
        "a failed submission still completes its fence"
    );
    g.write(reg::IRQ_ACK, pci::IRQ_ERROR | pci::IRQ_FENCE);
    assert_eq!(
        g.read(reg::ERROR_CODE),
        ErrorCode::CmdDecode as u32,
        "ack keeps the payload"
    );

    // Later submissions work.
    let s = stream(|w| {
        w.create_buffer(1, cmd::RESOURCE_USAGE_VERTEX_BUFFER, 64, 0, 0);
    });
    g.submit(&s, None, 8, 0);
    assert_eq!(g.completed_fence(), 8);
    assert_eq!(g.read(reg::ERROR_COUNT), 1);
    assert_eq!(g.dev.processor().objects().handle_count(), 1);

    // A missing alloc_id, a command stream outside RAM, a duplicate alloc_id table.
    let s = stream(|w| {
        w.create_buffer(2, cmd::RESOURCE_USAGE_VERTEX_BUFFER, 64, 5, 0);
    });
    g.submit(&s, None, 9, 0);
    assert_eq!(g.read(reg::ERROR_CODE), ErrorCode::AllocTable as u32);
    assert_eq!(g.read64(reg::ERROR_FENCE_LO), 9);
    let mut d = g.desc(&nop_stream(), None, 11, 0);
    d.cmd_gpa = (RAM_SIZE - 8) as u64;
    g.push_desc(&d);
    g.doorbell();
    assert_eq!(g.read(reg::ERROR_CODE), ErrorCode::Oob as u32);
    let e = AllocEntry {
        alloc_id: 3,
        flags: 0,
        gpa: BACKING_GPA,
        size_bytes: 64,
        reserved0: 0,
    };
    let table = g.table(&[e, e]);
    g.submit(&nop_stream(), Some(table), 12, 0);
    assert_eq!(g.read(reg::ERROR_CODE), ErrorCode::AllocTable as u32);
    let mut d = g.desc(&nop_stream(), None, 13, 0);
    d.cmd_size_bytes = u32::MAX;
    g.push_desc(&d);
    g.doorbell();
    assert_eq!(
        g.read(reg::ERROR_CODE),
        ErrorCode::ResourceLimit as u32,
        "no unbounded allocation"
    );
    // Within the size cap but beyond guest RAM: refused before any host allocation.
    let mut d = g.desc(&nop_stream(), None, 14, 0);
    d.cmd_size_bytes = 200 << 20;
    g.push_desc(&d);
    g.doorbell();
    assert_eq!(g.read(reg::ERROR_CODE), ErrorCode::Oob as u32);
    assert_eq!(g.read(reg::ERROR_COUNT), 6);
    assert_eq!(g.completed_fence(), 14);
    assert_eq!(g.dev.stats().failed_submissions, 6);
}

#[test]
fn guest_backed_resources_through_the_ring() {
    let mut g = Guest::new(8, 0);
    let table = g.table(&[AllocEntry {
        alloc_id: 42,
        flags: 0,
        gpa: BACKING_GPA,
        size_bytes: 4096,
        reserved0: 0,
    }]);
    let s = stream(|w| {
        w.create_texture2d(1, Format::B8G8R8X8Unorm as u32, 16, 16, 42);
        w.clear([0.0, 0.0, 1.0, 1.0]);
        w.present(0);
    });
    g.submit(&s, Some(table), 1, 0);
    assert_eq!(g.read(reg::ERROR_COUNT), 0);
    assert_eq!(g.completed_fence(), 1);
    assert_eq!(g.dev.executor().presents, 1);
    assert_eq!(g.dev.executor().commands, 3);
}

#[test]
fn vblank_pacing_sequence_and_status_latching() {
    let mut g = Guest::new(8, 0);
    g.tick(5 * PERIOD + 100);
    assert_eq!(
        g.dev.next_deadline_ns(),
        None,
        "no vblank while scanout is off"
    );
    g.write(reg::SCANOUT0_ENABLE, 1);
    assert_eq!(g.dev.next_deadline_ns(), Some(6 * PERIOD));
    g.tick(6 * PERIOD - 1);
    assert_eq!(g.read64(reg::SCANOUT0_VBLANK_SEQ_LO), 0);
    g.tick(6 * PERIOD);
    assert_eq!(g.read64(reg::SCANOUT0_VBLANK_SEQ_LO), 1);
    assert_eq!(g.read64(reg::SCANOUT0_VBLANK_TIME_NS_LO), 6 * PERIOD);
    assert_eq!(g.read(reg::IRQ_STATUS), pci::IRQ_SCANOUT_VBLANK);
    assert!(g.dev.irq_level());
    g.write(reg::IRQ_ACK, pci::IRQ_SCANOUT_VBLANK);
    assert!(!g.dev.irq_level());

    // Status latches only while enabled; counters run regardless.
    g.write(reg::IRQ_ENABLE, pci::IRQ_FENCE);
    g.tick(7 * PERIOD);
    assert_eq!(g.read(reg::IRQ_STATUS), 0);
    assert_eq!(g.read64(reg::SCANOUT0_VBLANK_SEQ_LO), 2);
    g.write(reg::IRQ_ENABLE, pci::IRQ_FENCE | pci::IRQ_SCANOUT_VBLANK);
    assert_eq!(
        g.read(reg::IRQ_STATUS),
        0,
        "the missed vblank is not delivered late"
    );
    // A long gap counts every missed vblank; timestamps stay on the grid.
    g.tick(20 * PERIOD + 5);
    assert_eq!(g.read64(reg::SCANOUT0_VBLANK_SEQ_LO), 15);
    assert_eq!(g.read64(reg::SCANOUT0_VBLANK_TIME_NS_LO), 20 * PERIOD);
    // Time never goes backwards.
    g.tick(3);
    assert_eq!(g.read64(reg::SCANOUT0_VBLANK_SEQ_LO), 15);
    // Scanout off: the counter stops.
    g.write(reg::SCANOUT0_ENABLE, 0);
    g.tick(40 * PERIOD);
    assert_eq!(g.read64(reg::SCANOUT0_VBLANK_SEQ_LO), 15);
}

#[test]
fn vsync_present_completes_on_the_next_vblank() {
    let vsync = stream(|w| {
        w.present(cmd::PRESENT_FLAG_VSYNC);
    });
    let mut g = Guest::new(8, 0);
    // Scanout off: nothing to wait for.
    g.submit(&vsync, None, 1, 0);
    assert_eq!(g.completed_fence(), 1);

    g.write(reg::SCANOUT0_ENABLE, 1);
    g.tick(PERIOD / 2);
    g.write(reg::IRQ_ACK, 0xFFFF_FFFF);
    g.submit(&vsync, None, 2, 0);
    g.submit(&nop_stream(), None, 3, 0);
    g.submit(&vsync, None, 4, 0);
    assert_eq!(
        g.completed_fence(),
        1,
        "held until the vblank; later fences wait in order"
    );
    assert_eq!(g.read(reg::IRQ_STATUS), 0);
    g.tick(PERIOD);
    assert_eq!(g.completed_fence(), 3, "one flip per vblank");
    assert_eq!(
        g.read(reg::IRQ_STATUS),
        pci::IRQ_FENCE | pci::IRQ_SCANOUT_VBLANK
    );
    assert_eq!(fence_page(&g).1, 3);
    g.tick(2 * PERIOD);
    assert_eq!(g.completed_fence(), 4);
    // PRESENT_EX with VSYNC behaves the same; disabling scanout releases held fences.
    let ex = stream(|w| {
        let p = cmd::PresentEx {
            flags: cmd::PRESENT_FLAG_VSYNC,
            ..Default::default()
        };
        w.push(Opcode::PresentEx, &p, &[]);
    });
    g.submit(&ex, None, 5, 0);
    assert_eq!(g.completed_fence(), 4);
    g.write(reg::SCANOUT0_ENABLE, 0);
    assert_eq!(g.completed_fence(), 5);
}

#[test]
fn ring_reset_completes_held_fences_and_drops_pending_descriptors() {
    let mut g = Guest::new(8, 0);
    g.write(reg::SCANOUT0_ENABLE, 1);
    let vsync = stream(|w| {
        w.present(cmd::PRESENT_FLAG_VSYNC);
    });
    g.submit(&vsync, None, 1, 0);
    assert_eq!(g.completed_fence(), 0);
    // Two descriptors written without a doorbell, then a reset.
    for fence in [2, 3] {
        let d = g.desc(&nop_stream(), None, fence, 0);
        g.push_desc(&d);
    }
    g.write(reg::IRQ_ACK, 0xFFFF_FFFF);
    g.write(
        reg::RING_CONTROL,
        pci::RING_CONTROL_RESET | pci::RING_CONTROL_ENABLE,
    );
    assert_eq!(g.completed_fence(), 1, "accepted work completes");
    assert_eq!(
        g.ring_head_in_memory(),
        g.tail,
        "unconsumed descriptors are dropped"
    );
    assert_eq!(g.read(reg::IRQ_STATUS), 0, "reset completion raises no IRQ");
    g.doorbell();
    assert_eq!(g.dev.stats().submissions, 1);
    // The ring keeps working after the reset.
    g.submit(&nop_stream(), None, 4, 0);
    assert_eq!(g.completed_fence(), 4);
    // Objects survive a ring reset; a machine reset clears everything.
    g.submit(
        &stream(|w| {
            w.create_buffer(1, 1, 16, 0, 0);
        }),
        None,
        5,
        0,
    );
    assert_eq!(g.dev.processor().objects().handle_count(), 1);
    g.dev.reset();
    assert_eq!(g.dev.processor().objects().handle_count(), 0);
    assert_eq!(g.read(reg::RING_CONTROL), 0);
    assert_eq!(g.completed_fence(), 0);
}

#[test]
fn scanout_and_cursor_build_the_frame() {
    let mut g = Guest::new(8, 0);
    let (w, h, pitch) = (8u32, 4u32, 64u32);
    let fb = BACKING_GPA;
    for y in 0..h {
        for x in 0..w {
            // B, G, R, X
            let px = [x as u8 * 10, y as u8 * 20, 0x80, 0x00];
            g.mem.write(fb + u64::from(y * pitch + x * 4), &px).unwrap();
        }
    }
    let mut frame = Frame::new();
    assert_eq!(
        g.dev.render_scanout(&g.mem, &mut frame),
        Err(ScanoutError::Disabled)
    );
    for (off, v) in [
        (reg::SCANOUT0_WIDTH, w),
        (reg::SCANOUT0_HEIGHT, h),
        (reg::SCANOUT0_FORMAT, Format::B8G8R8X8Unorm as u32),
        (reg::SCANOUT0_PITCH_BYTES, pitch),
        (reg::SCANOUT0_FB_GPA_LO, fb as u32),
        (reg::SCANOUT0_ENABLE, 1),
    ] {
        g.write(off, v);
    }
    g.dev.render_scanout(&g.mem, &mut frame).unwrap();
    assert_eq!((frame.width, frame.height), (8, 4));
    assert_eq!(frame.pixel(3, 2), Some([0x80, 40, 30, 0xFF]));

    // A 2x2 cursor: one opaque white pixel, one half-transparent black, two clear.
    let cursor_gpa = BACKING_GPA + 0x1000;
    let px: [[u8; 4]; 4] = [
        [255, 255, 255, 255],
        [0, 0, 0, 128],
        [9, 9, 9, 0],
        [9, 9, 9, 0],
    ];
    for (i, p) in px.iter().enumerate() {
        g.mem.write(cursor_gpa + i as u64 * 4, p).unwrap();
    }
    for (off, v) in [
        (reg::CURSOR_WIDTH, 2),
        (reg::CURSOR_HEIGHT, 2),
        (reg::CURSOR_FORMAT, Format::B8G8R8A8Unorm as u32),
        (reg::CURSOR_PITCH_BYTES, 8),
        (reg::CURSOR_FB_GPA_LO, cursor_gpa as u32),
        (reg::CURSOR_X, 6),
        (reg::CURSOR_Y, 1),
        (reg::CURSOR_HOT_X, 1),
        (reg::CURSOR_HOT_Y, 0),
        (reg::CURSOR_ENABLE, 1),
    ] {
        g.write(off, v);
    }
    g.dev.render_scanout(&g.mem, &mut frame).unwrap();
    assert_eq!(frame.pixel(5, 1), Some([255, 255, 255, 255]));
    let under = [0x80u32, 20, 60];
    let half: Vec<u8> = under
        .iter()
        .map(|&c| ((c * 127 + 127) / 255) as u8)
        .collect();
    assert_eq!(frame.pixel(6, 1), Some([half[0], half[1], half[2], 0xFF]));
    assert_eq!(
        frame.pixel(5, 2),
        Some([0x80, 40, 50, 0xFF]),
        "transparent cursor pixels"
    );
    // Cursor hanging off the edge, and a cursor pointing outside RAM, never break the frame.
    g.write(reg::CURSOR_X, (-100i32) as u32);
    g.dev.render_scanout(&g.mem, &mut frame).unwrap();
    g.write(reg::CURSOR_FB_GPA_LO, u32::MAX);
    g.dev.render_scanout(&g.mem, &mut frame).unwrap();
    assert_eq!(frame.pixel(5, 1), Some([0x80, 20, 50, 0xFF]), "cursor gone");

    // Invalid scanout configurations are errors, not panics.
    g.write(reg::SCANOUT0_PITCH_BYTES, 4);
    assert!(matches!(
        g.dev.render_scanout(&g.mem, &mut frame),
        Err(ScanoutError::BadConfig(_))
    ));
    g.write(reg::SCANOUT0_PITCH_BYTES, pitch);
    g.write(reg::SCANOUT0_FORMAT, Format::Bc1Unorm as u32);
    assert!(matches!(
        g.dev.render_scanout(&g.mem, &mut frame),
        Err(ScanoutError::BadConfig(_))
    ));
    g.write(reg::SCANOUT0_FORMAT, Format::B8G8R8X8Unorm as u32);
    g.write(reg::SCANOUT0_FB_GPA_LO, (RAM_SIZE - 64) as u32);
    assert!(matches!(
        g.dev.render_scanout(&g.mem, &mut frame),
        Err(ScanoutError::Memory(_))
    ));
}

/// The KMD's DxgkDdiSetPowerState sequence (seed 000): leave D0 with work in flight,
/// come back with a virtual reset; no IRQ storm, fences keep advancing.
#[test]
fn power_cycle_as_the_kmd_does_it() {
    let mut g = Guest::new(8, 0);
    g.write(reg::SCANOUT0_ENABLE, 1);
    g.write(reg::CURSOR_ENABLE, 1);
    g.submit(
        &stream(|w| {
            w.present(cmd::PRESENT_FLAG_VSYNC);
        }),
        None,
        1,
        0,
    );
    assert_eq!(g.completed_fence(), 0);

    // Away from D0.
    g.write(reg::IRQ_ENABLE, 0);
    g.write(reg::IRQ_ACK, 0xFFFF_FFFF);
    g.write(reg::CURSOR_ENABLE, 0);
    g.write(reg::CURSOR_FB_GPA_LO, 0);
    g.write(reg::SCANOUT0_ENABLE, 0);
    g.write(reg::SCANOUT0_FB_GPA_LO, 0);
    g.write(reg::RING_CONTROL, 0);
    g.write(reg::RING_GPA_LO, 0);
    g.write(reg::FENCE_GPA_LO, 0);
    assert_eq!(
        g.completed_fence(),
        1,
        "stopping scanout releases the held present"
    );
    assert!(!g.dev.irq_level());
    g.tick(100 * PERIOD);
    assert!(!g.dev.irq_level(), "no vblank IRQs while powered down");
    assert_eq!(g.dev.next_deadline_ns(), None);

    // Back to D0: reprogram, reset the ring, restore IRQs and scanout.
    g.reinit_ring();
    g.write(reg::SCANOUT0_ENABLE, 1);
    assert_eq!(g.read(reg::IRQ_STATUS), 0);
    g.submit(&nop_stream(), None, 2, 0);
    assert_eq!(g.completed_fence(), 2);
    assert_eq!(fence_page(&g).1, 2);
    g.tick(102 * PERIOD);
    assert_eq!(
        g.read(reg::IRQ_STATUS),
        pci::IRQ_FENCE | pci::IRQ_SCANOUT_VBLANK
    );
}

#[test]
fn fence_page_outside_ram_and_held_fence_cap() {
    let mut g = Guest::new(8, 0);
    g.write(reg::FENCE_GPA_LO, (RAM_SIZE - 4) as u32);
    g.submit(&nop_stream(), None, 1, 0);
    assert_eq!(g.completed_fence(), 1, "the register still advances");
    assert_eq!(g.dev.error_code(), Some(ErrorCode::Oob));

    // A guest flooding VSYNC presents without vblanks cannot grow the queue unboundedly.
    let mut g = Guest::new(8, 0);
    g.write(reg::SCANOUT0_ENABLE, 1);
    let vsync = stream(|w| {
        w.present(cmd::PRESENT_FLAG_VSYNC);
    });
    let cap = crate::aerogpu::AeroGpuConfig::default().max_pending_fences as u64;
    for fence in 1..=cap + 5 {
        g.submit(&vsync, None, fence, SUBMIT_FLAG_NO_IRQ);
    }
    assert_eq!(
        g.completed_fence(),
        5,
        "the oldest beyond the cap complete early, in order"
    );
}

/// GART (ABI 1.5): aperture addresses reach scattered guest pages, page by page, for
/// allocation tables, DMA and scanout; invalid or out-of-range entries are DMA errors.
#[test]
fn gart_maps_the_aperture_onto_scattered_pages() {
    use crate::aerogpu::{DeviceMemory, Gart};
    const TABLE: u64 = 0x60_0000;
    let ap = pci::APERTURE_BASE;
    let mut g = Guest::new(8, 0);
    assert_ne!(
        g.read64(reg::FEATURES_LO) & pci::FEATURE_GART,
        0,
        "the device offers a GART"
    );
    // Aperture pages 0..3 -> 0x70_3000, 0x70_1000, 0x70_2000; page 3 invalid.
    let pages = [0x70_3000u64, 0x70_1000, 0x70_2000];
    for (i, p) in pages.iter().enumerate() {
        g.mem
            .write(
                TABLE + 8 * i as u64,
                &(p | pci::GART_ENTRY_VALID).to_le_bytes(),
            )
            .unwrap();
    }
    g.write(reg::GART_GPA_LO, TABLE as u32);
    g.write(reg::GART_GPA_HI, 0);
    g.write(reg::GART_ENTRIES, 4);
    assert_eq!(g.read(reg::GART_ENTRIES), 4);
    let gart = Gart {
        table_gpa: TABLE,
        entries: 4,
    };

    // A write across the page 0/1 boundary lands in two unrelated pages, and reads back.
    let mut view = DeviceMemory {
        ram: &mut g.mem,
        gart,
    };
    view.write(ap + 4090, b"0123456789ab").unwrap();
    let mut back = [0u8; 12];
    view.read(ap + 4090, &mut back).unwrap();
    assert_eq!(&back, b"0123456789ab");
    assert!(view.contains(ap, 3 * 4096));
    assert!(!view.contains(ap, 3 * 4096 + 1), "page 3 is not mapped");
    assert!(
        view.read(ap + 5 * 4096, &mut back).is_err(),
        "past GART_ENTRIES"
    );
    assert!(
        view.write(ap + 3 * 4096 - 4, &[1; 8]).is_err(),
        "half into an invalid page"
    );
    assert!(
        view.read(ap - 4, &mut back).is_err(),
        "a range straddling the aperture base"
    );
    let mut b = [0u8; 6];
    g.mem.read(0x70_3000 + 4090, &mut b).unwrap();
    assert_eq!(&b, b"012345");
    g.mem.read(0x70_1000, &mut b).unwrap();
    assert_eq!(&b, b"6789ab");
    // The failed half-invalid write wrote nothing.
    g.mem.read(0x70_2000 + 4092, &mut b[..4]).unwrap();
    assert_eq!(&b[..4], &[0; 4]);

    // An allocation in the aperture backs a buffer; one over the invalid page is refused.
    let good = g.table(&[AllocEntry {
        alloc_id: 1,
        gpa: ap,
        size_bytes: 3 * 4096,
        ..Default::default()
    }]);
    let s = stream(|w| {
        w.create_buffer(1, cmd::RESOURCE_USAGE_VERTEX_BUFFER, 3 * 4096, 1, 0);
    });
    g.submit(&s, Some(good), 1, 0);
    assert_eq!(g.completed_fence(), 1);
    assert_eq!(g.read(reg::ERROR_COUNT), 0, "aperture backing accepted");
    let bad = g.table(&[AllocEntry {
        alloc_id: 2,
        gpa: ap,
        size_bytes: 4 * 4096,
        ..Default::default()
    }]);
    g.submit(&[], Some(bad), 2, 0);
    assert_eq!(
        g.read(reg::ERROR_COUNT),
        1,
        "an allocation over an unmapped page is refused"
    );

    // Scanout from the aperture.
    g.write(reg::SCANOUT0_WIDTH, 2);
    g.write(reg::SCANOUT0_HEIGHT, 2);
    g.write(reg::SCANOUT0_FORMAT, Format::B8G8R8X8Unorm as u32);
    g.write(reg::SCANOUT0_PITCH_BYTES, 4096);
    g.write(reg::SCANOUT0_FB_GPA_LO, ap as u32);
    g.write(reg::SCANOUT0_FB_GPA_HI, (ap >> 32) as u32);
    g.write(reg::SCANOUT0_ENABLE, 1);
    g.mem.write(0x70_3000, &[0x10, 0x20, 0x30, 0]).unwrap(); // row 0, pixel 0
    g.mem.write(0x70_1000, &[0x40, 0x50, 0x60, 0]).unwrap(); // row 1, pixel 0
    let mut frame = Frame::default();
    g.dev.render_scanout(&g.mem, &mut frame).unwrap();
    assert_eq!((frame.width, frame.height), (2, 2));
    // BGRX in memory, RGBA in the frame: row 0 from page 0x70_3000, row 1 from 0x70_1000.
    assert_eq!(frame.pixel(0, 0), Some([0x30, 0x20, 0x10, 0xFF]));
    assert_eq!(frame.pixel(0, 1), Some([0x60, 0x50, 0x40, 0xFF]));

    // GART_ENTRIES = 0 turns the aperture off.
    g.write(reg::GART_ENTRIES, 0);
    assert!(g.dev.render_scanout(&g.mem, &mut frame).is_err());
}
