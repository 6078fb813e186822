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
        mesh::stream_setup(),
        mesh::stream_frame().0,
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
        AllocTable, CommandProcessor, GuestMemory, Limits, SoftExecutor, VecMemory,
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

/// Guest memory with the checker texture generated (as the guest's loop does).
#[cfg(test)]
fn mesh_memory() -> aero_gpu::aerogpu::VecMemory {
    use aero_gpu::aerogpu::{GuestMemory, VecMemory};
    let fb = u64::from(aerogpu::FB);
    let mut mem = VecMemory::new(fb as usize + 640 * 480 * 4);
    mem.write(u64::from(mesh::CHECKER), &mesh::checker_texels())
        .unwrap();
    mem
}

/// The box's pixels in the framebuffer (B8G8R8X8 rows).
#[cfg(test)]
fn mesh_box(mem: &aero_gpu::aerogpu::VecMemory) -> Vec<u8> {
    use aero_gpu::aerogpu::GuestMemory;
    let mut out = Vec::new();
    for y in mesh::BOX_Y..mesh::BOX_Y + mesh::BOX_SIZE {
        let at = aerogpu::FB + (y * aerogpu::FB_W + mesh::BOX_X) * 4;
        let mut row = vec![0u8; (mesh::BOX_SIZE * 4) as usize];
        mem.read(u64::from(at), &mut row).unwrap();
        out.extend_from_slice(&row);
    }
    out
}

/// The demo's order: first frame, the CPU draws (the framebuffer filled with `fill`),
/// mesh setup, then `frames` (their matrices patched in as the guest does).
#[cfg(test)]
fn run_mesh_frames(
    exec: &mut dyn aero_gpu::aerogpu::Executor,
    mem: &mut aero_gpu::aerogpu::VecMemory,
    fill: u8,
    frames: &[u32],
) {
    use aero_gpu::aerogpu::{AllocTable, CommandProcessor, GuestMemory, Limits};
    let mut cp = CommandProcessor::new(Limits::default());
    let mut table = AllocTable::new();
    table.parse(&aerogpu::alloc_table(), mem).unwrap();
    cp.process(&aerogpu::stream_first_frame(), &table, mem, exec)
        .unwrap();
    mem.write(u64::from(aerogpu::FB), &vec![fill; 640 * 480 * 4])
        .unwrap();
    let setup = cp
        .process(&mesh::stream_setup(), &table, mem, exec)
        .unwrap();
    assert_eq!(setup.unknown_packets, 0);
    for &frame in frames {
        let (mut stream, at) = mesh::stream_frame();
        let matrix: Vec<u8> = mesh::frame_matrix(frame)
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        stream[at..at + 64].copy_from_slice(&matrix);
        let s = cp.process(&stream, &table, mem, exec).unwrap();
        assert_eq!((s.unknown_packets, s.presents), (0, 1));
        // The framebuffer is presented (guest memory shown), not the box's target.
        assert!(exec.presented_generation().is_none());
    }
}

/// The CPU draws around the box: pixels outside it keep their bytes after mesh frames.
#[cfg(test)]
fn assert_outside_box_untouched(mem: &aero_gpu::aerogpu::VecMemory, fill: u8) {
    use aero_gpu::aerogpu::GuestMemory;
    for (x, y) in [
        (0, 0),
        (mesh::BOX_X - 1, mesh::BOX_Y),
        (639, 479),
        (mesh::BOX_X, mesh::BOX_Y + mesh::BOX_SIZE),
    ] {
        let mut p = [0u8; 4];
        mem.read(u64::from(aerogpu::FB + (y * 640 + x) * 4), &mut p)
            .unwrap();
        assert_eq!(p, [fill; 4], "pixel ({x}, {y}) outside the box changed");
    }
}

/// On the GPU executor the cube is drawn into the box: its centre is not the
/// background, frames differ as it turns, the far faces are hidden by depth (the box
/// has exactly the pixels of a convex shape: every row is one run), and the CPU's
/// pixels around the box stay.
#[test]
fn mesh_frames_draw_a_turning_cube_on_the_gpu_executor() {
    use aero_gpu::aerogpu::{SoftExecutorConfig, WgpuExecutor};
    let mut exec = WgpuExecutor::new_headless(SoftExecutorConfig::default())
        .expect("a wgpu adapter (lavapipe: mesa-vulkan-drivers)");
    let mut mem = mesh_memory();
    run_mesh_frames(&mut exec, &mut mem, 0x55, &[0]);
    let first = mesh_box(&mem);
    assert_outside_box_untouched(&mem, 0x55);
    let background = mesh::BOX_BACKGROUND.to_le_bytes();
    let is_background = |p: &[u8]| p[..3] == background[..3];
    let size = mesh::BOX_SIZE as usize;
    let centre = (size / 2 * size + size / 2) * 4;
    assert!(
        !is_background(&first[centre..centre + 4]),
        "no cube at the centre"
    );
    let covered = first.chunks(4).filter(|p| !is_background(p)).count();
    assert!(
        covered > size * size / 8 && covered < size * size * 3 / 4,
        "{covered} cube pixels"
    );
    // Convex: each row's cube pixels form one run.
    for row in first.chunks(size * 4) {
        let inside: Vec<bool> = row.chunks(4).map(|p| !is_background(p)).collect();
        let starts = inside.windows(2).filter(|w| !w[0] && w[1]).count();
        assert!(starts <= 1, "a row crosses the cube twice");
    }
    run_mesh_frames(&mut exec, &mut mem, 0x55, &[30]);
    assert!(mesh_box(&mem) != first, "frame 30 looks like frame 0");
}

/// The depth test is what hides the far faces: the same frame with the depth test
/// switched off in its stream (draw order wins) gives a different picture.
#[test]
fn mesh_far_faces_are_hidden_by_the_depth_test() {
    use aero_gpu::aerogpu::{
        AllocTable, CommandProcessor, GuestMemory, Limits, SoftExecutorConfig, WgpuExecutor,
    };
    use aero_protocol::cmd::Opcode;
    let draw = |depth_enable: u32| {
        let mut exec = WgpuExecutor::new_headless(SoftExecutorConfig::default())
            .expect("a wgpu adapter (lavapipe: mesa-vulkan-drivers)");
        let mut mem = mesh_memory();
        let mut cp = CommandProcessor::new(Limits::default());
        let mut table = AllocTable::new();
        table.parse(&aerogpu::alloc_table(), &mem).unwrap();
        cp.process(&aerogpu::stream_first_frame(), &table, &mut mem, &mut exec)
            .unwrap();
        mem.write(u64::from(aerogpu::FB), &vec![0x55; 640 * 480 * 4])
            .unwrap();
        cp.process(&mesh::stream_setup(), &table, &mut mem, &mut exec)
            .unwrap();
        let (mut stream, _) = mesh::stream_frame();
        // Walk the packets to SET_DEPTH_STENCIL_STATE and set its depth_enable.
        let mut at = 16;
        let mut patched = false;
        while at + 8 <= stream.len() {
            let word = |i: usize| u32::from_le_bytes(stream[i..i + 4].try_into().unwrap());
            let (op, size) = (word(at), word(at + 4) as usize);
            if op == Opcode::SetDepthStencilState as u32 {
                stream[at + 8..at + 12].copy_from_slice(&depth_enable.to_le_bytes());
                patched = true;
            }
            at += size;
        }
        assert!(patched);
        cp.process(&stream, &table, &mut mem, &mut exec).unwrap();
        mesh_box(&mem)
    };
    let with_depth = draw(1);
    let without = draw(0);
    let differ = with_depth
        .chunks(4)
        .zip(without.chunks(4))
        .filter(|(a, b)| a != b)
        .count();
    assert!(differ > 500, "{differ} pixels depend on the depth test");
}

/// The CPU executor skips draws: the box holds only the clear colour, which is what the
/// guest checks at its centre before it says "no 3D" and stops drawing the mesh.
#[test]
fn mesh_frame_on_the_cpu_executor_leaves_the_background() {
    use aero_gpu::aerogpu::SoftExecutor;
    let mut exec = SoftExecutor::default();
    let mut mem = mesh_memory();
    run_mesh_frames(&mut exec, &mut mem, 0x55, &[0]);
    let background = mesh::BOX_BACKGROUND.to_le_bytes();
    assert!(mesh_box(&mem).chunks(4).all(|p| p[..3] == background[..3]));
    assert_outside_box_untouched(&mem, 0x55);
}

/// The guest's copy of the matrices is the table the streams were tested with, and one
/// turn ends where it began.
#[test]
fn mesh_matrices_repeat_every_turn() {
    assert_eq!(mesh::frame_matrix(0), mesh::frame_matrix(mesh::FRAMES));
    assert_ne!(mesh::frame_matrix(0), mesh::frame_matrix(1));
    let disk = build_demo_disk().unwrap();
    let m7: Vec<u8> = mesh::frame_matrix(7)
        .iter()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    assert!(disk.windows(64).any(|w| w == m7.as_slice()));
}
