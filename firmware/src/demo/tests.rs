use super::*;

#[test]
fn image_layout() {
    let disk = build_demo_disk().unwrap();
    assert_eq!(disk.len(), DEMO_DISK_SECTORS * SECTOR_SIZE);
    assert_eq!(&disk[510..512], &[0x55, 0xAA], "boot signature");
    // The partition table stays empty: the demo is a whole-disk boot sector.
    assert!(disk[0x1BE..0x1FE].iter().all(|&b| b == 0));
    // The boot sector asks for exactly the sectors the payload occupies.
    let used = disk.iter().rposition(|&b| b != 0).unwrap();
    let payload_sectors = used / SECTOR_SIZE;
    assert!(
        (1..=MAX_PAYLOAD_SECTORS).contains(&payload_sectors),
        "{payload_sectors} payload sectors"
    );
    let boot = &disk[..0x1BE];
    let count = payload_sectors as u8;
    // CHS fallback: MOV AX, 0200h | count.
    assert!(
        boot.windows(3).any(|w| w == [0xB8, count, 0x02]),
        "no AH=02h read of {count} sectors"
    );
    // EDD packet: PUSH count, PUSH 10h (size) right before MOV SI, SP.
    assert!(
        boot.windows(4).any(|w| w == [0x6A, count, 0x6A, 0x10]),
        "no EDD packet for {count} sectors"
    );
    // The payload carries its serial greeting and the ready marker.
    let payload = &disk[SECTOR_SIZE..(payload_sectors + 1) * SECTOR_SIZE];
    for needle in [
        &b"AERO-DEMO: booting"[..],
        b"AERO-DEMO-READY",
        b"AERO-DEMO-KEY=",
    ] {
        assert!(
            payload.windows(needle.len()).any(|w| w == needle),
            "{:?} missing",
            String::from_utf8_lossy(needle)
        );
    }
}

#[test]
fn image_is_deterministic() {
    let a = build_demo_disk().unwrap();
    let b = build_demo_disk().unwrap();
    assert!(a == b, "two builds differ");
}

#[test]
fn shipped_demo_is_built_from_this_source() {
    let built = build_demo_program().unwrap();
    assert!(
        SHIPPED_DEMO_PROGRAM == built.as_slice(),
        "assets/demo/aero-demo.bin is stale: run `cargo run -p aero -- demo build`"
    );
    assert!(demo_disk_image() == build_demo_disk().unwrap());
}

/// The demo's ABI numbers agree with the device model it drives.
#[test]
fn aerogpu_registers_match_the_device() {
    use aero_gpu::aerogpu::{AeroGpu, AeroGpuConfig, VecMemory};
    use aerogpu::reg;
    let mut gpu = AeroGpu::new(AeroGpuConfig::default());
    assert_eq!(
        gpu.mmio_read(reg::MAGIC.into(), 4),
        u64::from(aerogpu::MMIO_MAGIC)
    );
    let abi = gpu.mmio_read(reg::ABI_VERSION.into(), 4) as u32;
    assert_eq!(abi >> 16, aerogpu::ABI_MAJOR);
    assert!(abi & 0xFFFF >= aerogpu::ABI_MINOR, "device ABI {abi:#x}");
    let mut mem = VecMemory::new(4 << 20);
    for (off, v) in [
        (reg::SCANOUT0_WIDTH, aerogpu::FB_W),
        (reg::SCANOUT0_HEIGHT, aerogpu::FB_H),
        (reg::SCANOUT0_FORMAT, aerogpu::FORMAT_B8G8R8X8),
        (reg::SCANOUT0_PITCH_BYTES, aerogpu::FB_W * 4),
        (reg::SCANOUT0_FB_GPA_LO, aerogpu::FB),
        (reg::SCANOUT0_FB_GPA_HI, 0),
        (reg::SCANOUT0_ENABLE, 1),
    ] {
        gpu.mmio_write(off.into(), 4, v.into(), &mut mem);
    }
    let s = gpu.scanout();
    assert!(s.enable);
    assert_eq!(
        (s.width, s.height, s.format, s.pitch_bytes, s.fb_gpa),
        (640, 480, 2, 2560, u64::from(aerogpu::FB))
    );
}

/// Every command stream the demo submits passes the device's validating processor.
#[test]
fn aerogpu_streams_validate() {
    use aero_gpu::aerogpu::{AllocTable, CommandProcessor, Limits, NullExecutor, VecMemory};
    let mut exec = NullExecutor::default();
    let mut cp = CommandProcessor::new(Limits::default());
    let none = AllocTable::new();
    // The first frame's table names the framebuffer; the memory model must hold it.
    let mut mem = VecMemory::new((aerogpu::FB as usize) + 640 * 480 * 4);
    let table_bytes = aerogpu::alloc_table();
    let mut fb_table = AllocTable::new();
    fb_table
        .parse(&table_bytes, &mem)
        .expect("the demo's allocation table is valid");
    let mut run = |s: Vec<u8>, table: &AllocTable| {
        assert_eq!(s.len() % 4, 0, "packets are 4-byte multiples");
        cp.process(&s, table, &mut mem, &mut exec).unwrap()
    };
    let hello = run(aerogpu::stream_hello(), &none);
    assert_eq!(
        (hello.packets, hello.unknown_packets, hello.presents),
        (2, 0, 0)
    );
    let first = run(aerogpu::stream_first_frame(), &fb_table);
    assert_eq!(
        (first.packets, first.unknown_packets, first.presents),
        (4, 0, 1)
    );
    assert!(first.vsync_present);
    // Without the table the texture's backing is unknown: the stream is rejected.
    let mut fresh = CommandProcessor::new(Limits::default());
    let mut scratch = VecMemory::new(1 << 20);
    assert!(
        fresh
            .process(
                &aerogpu::stream_first_frame(),
                &AllocTable::new(),
                &mut scratch,
                &mut NullExecutor::default()
            )
            .is_err()
    );
    let present = run(aerogpu::stream_present(), &none);
    assert_eq!((present.packets, present.presents), (1, 1));
    assert!(present.vsync_present);
    assert_eq!(exec.presents, 2);
    // The streams are in the payload, 8-byte aligned in guest memory.
    let disk = build_demo_disk().unwrap();
    for s in [
        aerogpu::stream_hello(),
        aerogpu::stream_first_frame(),
        aerogpu::stream_present(),
        aerogpu::alloc_table(),
    ] {
        let at = disk[SECTOR_SIZE..]
            .windows(s.len())
            .position(|w| w == s.as_slice())
            .expect("stream in the payload");
        assert_eq!((usize::from(LOAD_SEGMENT) * 16 + at) % 8, 0);
    }
}

/// With the CPU executor the first frame's clear reaches the framebuffer at PRESENT; a later
/// present (after the CPU drew) leaves the CPU's pixels alone.
#[test]
fn aerogpu_first_frame_is_written_back_and_later_presents_keep_cpu_pixels() {
    use aero_gpu::aerogpu::{
        AllocTable, CommandProcessor, Executor, GuestMemory, Limits, SoftExecutor, VecMemory,
    };
    let fb = u64::from(aerogpu::FB);
    let fb_bytes = 640 * 480 * 4;
    let mut exec = SoftExecutor::default();
    let mut cp = CommandProcessor::new(Limits::default());
    let mut mem = VecMemory::new(fb as usize + fb_bytes);
    mem.write(fb, &vec![0x11; fb_bytes]).unwrap();
    let mut fb_table = AllocTable::new();
    fb_table.parse(&aerogpu::alloc_table(), &mem).unwrap();
    cp.process(
        &aerogpu::stream_first_frame(),
        &fb_table,
        &mut mem,
        &mut exec,
    )
    .unwrap();
    let top: Vec<u8> = super::draw::GRADIENT.iter().map(|g| g.1 as u8).collect();
    let cleared = [top[2], top[1], top[0], 0xFF];
    let pixel = |mem: &VecMemory, i: u64| {
        let mut p = [0u8; 4];
        mem.read(fb + 4 * i, &mut p).unwrap();
        p
    };
    assert_eq!(pixel(&mem, 0), cleared);
    assert_eq!(pixel(&mem, 640 * 480 - 1), cleared);
    // The CPU draws; the next present (no allocation table) changes nothing in memory.
    mem.write(fb, &[1, 2, 3, 4]).unwrap();
    cp.process(
        &aerogpu::stream_present(),
        &AllocTable::new(),
        &mut mem,
        &mut exec,
    )
    .unwrap();
    assert_eq!(pixel(&mem, 0), [1, 2, 3, 4]);
    assert_eq!(pixel(&mem, 1), cleared);
    assert!(exec.presented_frame().is_none());
}
