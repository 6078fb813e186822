//! Both executors on one stream: the CPU executor runs on the test's guest memory, the GPU
//! executor on a copy of it taken before each command, and after every command guest
//! memory, presented frames, statistics and resource bytes must be equal byte for byte.
//! The CPU executor tests (`soft.rs`) run through this, so each of their streams checks
//! the GPU executor too.

use std::ops::Deref;

use crate::Frame;
use crate::aerogpu::processor::{Command, ResourceDesc, ResourceId};
use crate::aerogpu::{
    Executor, GuestMemory, SoftExecutor, SoftExecutorConfig, SubmissionInfo, VecMemory,
    WgpuExecutor,
};

pub(super) struct Twin {
    soft: SoftExecutor,
    gpu: WgpuExecutor,
    /// The GPU executor's guest memory (the test's memory before each command).
    gpu_mem: VecMemory,
    /// Resources the stream created (compared after every command).
    live: Vec<(ResourceId, bool)>,
}

pub(super) fn gpu_executor(config: SoftExecutorConfig) -> WgpuExecutor {
    WgpuExecutor::new_headless(config).unwrap_or_else(|e| {
        panic!(
            "\n\n*** NO WGPU ADAPTER ({e}) ***\nThe GPU executor tests need a Vulkan device; on \
             Debian that is Mesa lavapipe: apt-get install mesa-vulkan-drivers \
             (tests/install-deps.sh installs it).\n"
        )
    })
}

impl Twin {
    pub(super) fn new(config: SoftExecutorConfig, mem_size: usize) -> Self {
        Twin {
            soft: SoftExecutor::new(config),
            gpu: gpu_executor(config),
            gpu_mem: VecMemory::new(mem_size),
            live: Vec::new(),
        }
    }

    /// The GPU executor decodes BC textures on the CPU (as without TEXTURE_COMPRESSION_BC).
    pub(super) fn with_bc_fallback(mut self) -> Self {
        self.gpu = self.gpu.with_bc_fallback();
        self
    }

    fn compare(&self, after: &str) {
        // The CPU executor skips draws, the GPU one renders them.
        let mut gpu_stats = self.gpu.stats();
        gpu_stats.draws_skipped = self.soft.stats().draws_skipped;
        assert_eq!(self.soft.stats(), gpu_stats, "stats after {after}");
        assert_eq!(
            self.soft.host_bytes(),
            self.gpu.host_bytes(),
            "host bytes after {after}"
        );
        assert_eq!(
            self.soft.resource_count(),
            self.gpu.resource_count(),
            "resources after {after}"
        );
        assert_eq!(
            self.soft.presented_frame().map(frame_key),
            self.gpu.presented_frame().as_ref().map(frame_key),
            "presented frame after {after}"
        );
        for &(id, padded) in &self.live {
            let (Some(soft), Some(gpu)) =
                (self.soft.resource_bytes(id), self.gpu.resource_bytes(id))
            else {
                continue;
            };
            // Row padding is not stored on the GPU (it reads as zero there).
            if !padded {
                assert!(
                    soft == gpu.as_slice(),
                    "resource {id} bytes differ after {after}"
                );
            }
        }
    }
}

fn frame_key(f: &Frame) -> (u32, u32, Vec<u8>) {
    (f.width, f.height, f.pixels.clone())
}

impl Deref for Twin {
    type Target = SoftExecutor;

    fn deref(&self) -> &SoftExecutor {
        &self.soft
    }
}

impl Executor for Twin {
    fn begin_submission(&mut self, info: &SubmissionInfo) {
        self.soft.begin_submission(info);
        self.gpu.begin_submission(info);
    }

    fn execute(&mut self, command: &Command<'_>, mem: &mut dyn GuestMemory) -> Result<(), String> {
        mem.read(0, &mut self.gpu_mem.bytes)
            .expect("test memory size");
        if let Command::CreateResource { resource, desc, .. } = *command {
            let padded = matches!(desc, ResourceDesc::Texture2d(t) if t.row_pitch_bytes != 0);
            self.live.push((resource, padded));
        }
        let soft = self.soft.execute(command, mem);
        let gpu = self.gpu.execute(command, &mut self.gpu_mem);
        let what = format!("{command:?}");
        let what = &what[..what.len().min(200)];
        // Draws: the CPU executor skips them, the GPU one refuses what it cannot render
        // (the streams here draw nothing into a target they compare).
        let draw = matches!(command, Command::Draw(_) | Command::DrawIndexed(_));
        assert!(
            draw || soft.is_ok() == gpu.is_ok(),
            "{what}: CPU {soft:?}, GPU {gpu:?}"
        );
        let mut after = vec![0u8; self.gpu_mem.bytes.len()];
        mem.read(0, &mut after).expect("test memory size");
        assert!(
            after == self.gpu_mem.bytes,
            "guest memory differs after {what}"
        );
        self.compare(what);
        soft
    }

    fn flush(&mut self) -> Result<(), String> {
        self.soft.flush()?;
        self.gpu.flush()
    }

    fn end_submission(&mut self) {
        self.soft.end_submission();
        self.gpu.end_submission();
    }

    fn reset(&mut self) {
        self.soft.reset();
        self.gpu.reset();
        self.live.clear();
        self.compare("reset");
    }

    fn presented_generation(&self) -> Option<u64> {
        self.soft.presented_generation()
    }

    fn read_presented(&self, frame: &mut Frame) -> bool {
        self.soft.read_presented(frame)
    }

    fn scanout_reprogrammed(&mut self) {
        self.soft.scanout_reprogrammed();
        self.gpu.scanout_reprogrammed();
        self.compare("scanout reprogrammed");
    }
}

// ---- streams the CPU executor tests do not cover: GPU-side paths of the GPU executor ----

mod streams {
    use aero_protocol::cmd::{
        self, CLEAR_COLOR, CLEAR_DEPTH, CLEAR_STENCIL, COPY_FLAG_WRITEBACK_DST, Opcode,
    };
    use aero_protocol::pci::Format;
    use aero_protocol::ring::AllocEntry;
    use aero_protocol::writer::{CmdStreamWriter, encode_alloc_table};

    use super::Twin;
    use crate::aerogpu::tests::stream::{clear_rects, dirty, targets, texture};
    use crate::aerogpu::{
        AllocTable, CommandProcessor, GuestMemory, Limits, SoftExecutorConfig, VecMemory,
    };

    struct Run {
        p: CommandProcessor,
        mem: VecMemory,
        table: AllocTable,
        exec: Twin,
    }

    impl Run {
        fn new(allocs: &[(u32, u64, u64)]) -> Run {
            let mem = VecMemory::new(1 << 20);
            let entries: Vec<AllocEntry> = allocs
                .iter()
                .map(|&(alloc_id, gpa, size_bytes)| AllocEntry {
                    alloc_id,
                    flags: 0,
                    gpa,
                    size_bytes,
                    reserved0: 0,
                })
                .collect();
            let mut table = AllocTable::new();
            table.parse(&encode_alloc_table(&entries), &mem).unwrap();
            Run {
                p: CommandProcessor::new(Limits::default()),
                mem,
                table,
                exec: Twin::new(SoftExecutorConfig::default(), 1 << 20),
            }
        }

        /// Runs a stream on both executors (compared after every command); whether it
        /// succeeded.
        fn run(&mut self, f: impl FnOnce(&mut CmdStreamWriter)) -> bool {
            let mut w = CmdStreamWriter::new();
            f(&mut w);
            self.p
                .process(&w.finish(), &self.table, &mut self.mem, &mut self.exec)
                .inspect_err(|e| eprintln!("stream failed: {e}"))
                .is_ok()
        }
    }

    fn pattern(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(13).wrapping_add(seed))
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn copy(
        w: &mut CmdStreamWriter,
        (dst, dst_mip, dst_layer, dst_x, dst_y): (u32, u32, u32, u32, u32),
        (src, src_mip, src_layer, src_x, src_y): (u32, u32, u32, u32, u32),
        (width, height): (u32, u32),
        flags: u32,
    ) {
        let p = cmd::CopyTexture2d {
            dst_texture: dst,
            src_texture: src,
            dst_mip_level: dst_mip,
            dst_array_layer: dst_layer,
            src_mip_level: src_mip,
            src_array_layer: src_layer,
            dst_x,
            dst_y,
            src_x,
            src_y,
            width,
            height,
            flags,
            ..Default::default()
        };
        w.push(Opcode::CopyTexture2d, &p, &[]);
    }

    /// 16-bit formats live expanded on the GPU: uploads and dirty ranges over part of a
    /// row merge with the GPU's rows, clears, copies and presents pack back exactly.
    #[test]
    fn expanded_formats_and_partial_rows_match_the_cpu_executor() {
        let mut r = Run::new(&[(1, 0x1_0000, 0x1000), (2, 0x2_0000, 0x1000)]);
        // 565 8x4 with 2 mips (64 + 16 bytes) and 8x4; a host-only 5551 8x4.
        r.mem.write(0x1_0000, &pattern(80, 3)).unwrap();
        r.mem.write(0x2_0000, &pattern(64, 90)).unwrap();
        assert!(r.run(|w| {
            texture(w, 1, Format::B5G6R5Unorm, (8, 4), 2, 1, 0, 1);
            texture(w, 2, Format::B5G6R5Unorm, (8, 4), 1, 1, 0, 2);
            texture(w, 3, Format::B5G5R5A1Unorm, (8, 4), 1, 1, 0, 0);
            w.upload(3, 6, &pattern(50, 9));
            w.upload(1, 5, &[0xAB; 9]); // odd offset, part of row 0
            targets(w, &[1, 2, 3], 0);
            clear_rects(
                w,
                CLEAR_COLOR,
                [0.2, 0.7, 0.9, 0.4],
                0.0,
                0,
                &[[1, 1, 3, 2], [6, 0, 9, 9]],
            );
        }));
        // The guest rewrites part of two rows and says so.
        r.mem.write(0x1_0000 + 14, &pattern(6, 200)).unwrap();
        r.mem.write(0x1_0000 + 66, &pattern(10, 77)).unwrap();
        assert!(r.run(|w| {
            dirty(w, 1, 14, 6);
            dirty(w, 1, 66, 10); // mip 1
            copy(
                w,
                (2, 0, 0, 2, 1),
                (1, 0, 0, 0, 0),
                (5, 3),
                COPY_FLAG_WRITEBACK_DST,
            );
            w.present(0);
            targets(w, &[3], 0);
            w.present(0);
        }));
    }

    /// Copies the GPU cannot do directly (inside one texture) and a padded row pitch.
    #[test]
    fn same_texture_and_padded_copies_match_the_cpu_executor() {
        let mut r = Run::new(&[(1, 0x1_0000, 0x1000), (2, 0x2_0000, 0x1000)]);
        r.mem.write(0x1_0000, &pattern(0x400, 1)).unwrap();
        r.mem.write(0x2_0000, &pattern(0x400, 50)).unwrap();
        assert!(r.run(|w| {
            // BGRA 8x8, 2 layers; RGBA 8x8 with a 40-byte row pitch.
            texture(w, 1, Format::B8G8R8A8Unorm, (8, 8), 1, 2, 0, 1);
            texture(w, 2, Format::B8G8R8A8Unorm, (8, 8), 1, 1, 40, 2);
            // Overlapping rows of one layer moving down, then across layers.
            copy(w, (1, 0, 0, 1, 2), (1, 0, 0, 0, 0), (6, 5), 0);
            copy(w, (1, 0, 1, 0, 0), (1, 0, 0, 2, 2), (4, 4), 0);
            copy(
                w,
                (2, 0, 0, 3, 3),
                (1, 0, 1, 0, 0),
                (5, 5),
                COPY_FLAG_WRITEBACK_DST,
            );
            targets(w, &[2], 0);
            clear_rects(
                w,
                CLEAR_COLOR,
                [1.0, 0.0, 0.5, 1.0],
                0.0,
                0,
                &[[0, 0, 2, 8]],
            );
            w.present(0);
            targets(w, &[1], 0);
            w.present(0);
        }));
    }

    /// BC1 with a size that is not whole blocks (the GPU texture is rounded up), copies
    /// ending at the mip edge, and depth-only / stencil-only clears of D24S8.
    #[test]
    fn odd_sized_bc_and_depth_stencil_parts_match_the_cpu_executor() {
        let mut r = Run::new(&[
            (1, 0x1_0000, 0x1000),
            (2, 0x2_0000, 0x1000),
            (3, 0x3_0000, 0x1000),
        ]);
        // BC1 6x6, 2 mips: mip 0 is 2x2 blocks (32 bytes), mip 1 (3x3) one block.
        r.mem.write(0x1_0000, &pattern(40, 7)).unwrap();
        r.mem.write(0x3_0000, &pattern(16 * 4 * 4, 33)).unwrap();
        assert!(r.run(|w| {
            texture(w, 1, Format::Bc1Unorm, (6, 6), 2, 1, 0, 1);
            texture(w, 2, Format::Bc1Unorm, (6, 6), 2, 1, 0, 2);
            copy(
                w,
                (2, 0, 0, 4, 4),
                (1, 0, 0, 4, 4),
                (2, 2),
                COPY_FLAG_WRITEBACK_DST,
            );
            copy(w, (2, 1, 0, 0, 0), (1, 1, 0, 0, 0), (3, 3), 0);
            copy(
                w,
                (2, 0, 0, 0, 0),
                (1, 0, 0, 0, 0),
                (4, 4),
                COPY_FLAG_WRITEBACK_DST,
            );
            texture(w, 3, Format::D24UnormS8Uint, (16, 4), 1, 1, 0, 3);
            targets(w, &[], 3);
            clear_rects(w, CLEAR_DEPTH, [0.0; 4], 0.25, 0x55, &[[1, 1, 5, 2]]);
            clear_rects(w, CLEAR_STENCIL, [0.0; 4], 0.75, 0xA7, &[[3, 0, 20, 3]]);
            clear_rects(
                w,
                CLEAR_DEPTH | CLEAR_STENCIL,
                [0.0; 4],
                1.0,
                1,
                &[[0, 3, 16, 1]],
            );
            copy(
                w,
                (3, 0, 0, 0, 0),
                (3, 0, 0, 8, 0),
                (8, 4),
                COPY_FLAG_WRITEBACK_DST,
            );
        }));
        // A guest-backed depth target's present writes back its cleared bytes.
        assert!(r.run(|w| {
            targets(w, &[3], 0);
            w.present(0);
        }));
    }
}
