//! The CPU executor behind the real processor: exact bytes in host copies and guest memory.

use aero_protocol::cmd::{
    self, CLEAR_COLOR, CLEAR_DEPTH, CLEAR_STENCIL, COPY_FLAG_WRITEBACK_DST, Opcode,
};
use aero_protocol::pci::{ErrorCode, Format};
use aero_protocol::ring::{ALLOC_FLAG_READONLY, AllocEntry};
use aero_protocol::writer::{CmdStreamWriter, encode_alloc_table};

use super::stream::{dirty, entry, targets};
use super::twin::Twin;
use crate::aerogpu::processor::ResourceId;
use crate::aerogpu::{
    AllocTable, CommandProcessor, Executor, GuestMemory, Limits, PacketError, SoftExecutorConfig,
    SubmitError, VecMemory,
};

const BGRA: u32 = Format::B8G8R8A8Unorm as u32;

struct Harness {
    p: CommandProcessor,
    mem: VecMemory,
    table: AllocTable,
    /// Both executors, compared after every command (`twin.rs`); reads go to the CPU one.
    exec: Twin,
}

impl Harness {
    fn new() -> Self {
        Self::with_config(SoftExecutorConfig::default())
    }

    fn with_config(config: SoftExecutorConfig) -> Self {
        Harness {
            p: CommandProcessor::new(Limits::default()),
            mem: VecMemory::new(1 << 20),
            table: AllocTable::new(),
            exec: Twin::new(config, 1 << 20),
        }
    }

    fn set_table(&mut self, entries: &[AllocEntry]) {
        self.table
            .parse(&encode_alloc_table(entries), &self.mem)
            .unwrap();
    }

    fn run(&mut self, f: impl FnOnce(&mut CmdStreamWriter)) -> Result<(), SubmitError> {
        let mut w = CmdStreamWriter::new();
        f(&mut w);
        let stream = w.finish();
        self.p
            .process(&stream, &self.table, &mut self.mem, &mut self.exec)
            .map(|_| ())
    }

    fn id(&self, handle: u32) -> ResourceId {
        self.p.objects().resource(handle).unwrap().0
    }

    fn bytes(&self, handle: u32) -> Vec<u8> {
        self.exec.resource_bytes(self.id(handle)).unwrap().to_vec()
    }

    fn guest(&self, gpa: u64, len: usize) -> Vec<u8> {
        self.mem.bytes[gpa as usize..gpa as usize + len].to_vec()
    }

    fn backend_error(&mut self, f: impl FnOnce(&mut CmdStreamWriter)) -> String {
        match self.run(f) {
            Err(SubmitError::Packet {
                kind: PacketError::Executor(e),
                ..
            }) => e,
            other => panic!("expected an executor error, got {other:?}"),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn texture(
    w: &mut CmdStreamWriter,
    handle: u32,
    format: Format,
    width: u32,
    height: u32,
    mips: u32,
    layers: u32,
    alloc_id: u32,
) {
    super::stream::texture(
        w,
        handle,
        format,
        (width, height),
        mips,
        layers,
        0,
        alloc_id,
    );
}

fn clear(w: &mut CmdStreamWriter, flags: u32, rgba: [f32; 4], depth: f32, stencil: u32) {
    let p = cmd::Clear {
        flags,
        color_rgba_f32: rgba.map(f32::to_bits),
        depth_f32: depth.to_bits(),
        stencil,
        ..Default::default()
    };
    w.push(Opcode::Clear, &p, &[]);
}

fn clear_rects(w: &mut CmdStreamWriter, flags: u32, rgba: [f32; 4], rects: &[[u32; 4]]) {
    super::stream::clear_rects(w, flags, rgba, 0.0, 0, rects);
}

fn copy_buffer(
    w: &mut CmdStreamWriter,
    dst: u32,
    src: u32,
    dst_off: u64,
    src_off: u64,
    size: u64,
    flags: u32,
) {
    let p = cmd::CopyBuffer {
        dst_buffer: dst,
        src_buffer: src,
        dst_offset_bytes: dst_off,
        src_offset_bytes: src_off,
        size_bytes: size,
        flags,
        ..Default::default()
    };
    w.push(Opcode::CopyBuffer, &p, &[]);
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed))
        .collect()
}

// ---- uploads ----------------------------------------------------------------------------

#[test]
fn create_uploads_the_backing_and_dirty_ranges_reupload_only_their_bytes() {
    let mut h = Harness::new();
    let data = pattern(256, 3);
    h.mem.write(0x8000, &data).unwrap();
    h.set_table(&[entry(5, 0x8000, 0x1000, 0)]);
    h.run(|w| {
        w.create_buffer(1, cmd::RESOURCE_USAGE_VERTEX_BUFFER, 256, 5, 0);
    })
    .unwrap();
    assert_eq!(h.bytes(1), data);

    // The guest rewrites the whole buffer but reports only bytes 16..48.
    h.mem.write(0x8000, &[0xEE; 256]).unwrap();
    h.run(|w| dirty(w, 1, 16, 32)).unwrap();
    let mut want = data.clone();
    want[16..48].fill(0xEE);
    assert_eq!(h.bytes(1), want);

    // UPLOAD_RESOURCE writes the host copy only (the backing keeps the guest's bytes).
    h.run(|w| {
        w.upload(1, 100, &[1, 2, 3, 4]);
    })
    .unwrap();
    want[100..104].copy_from_slice(&[1, 2, 3, 4]);
    assert_eq!(h.bytes(1), want);
    assert_eq!(h.guest(0x8000 + 100, 4), [0xEE; 4]);
    assert_eq!(h.exec.stats().uploaded_bytes, 256 + 32);
}

#[test]
fn rebind_reuploads_from_the_new_backing() {
    let mut h = Harness::new();
    h.mem.write(0x8000, &[0x11; 64]).unwrap();
    h.mem.write(0x9000, &[0x22; 64]).unwrap();
    h.set_table(&[entry(5, 0x8000, 0x1000, 0), entry(6, 0x9000, 0x1000, 0)]);
    h.run(|w| {
        w.create_buffer(1, 0, 64, 5, 0);
    })
    .unwrap();
    assert_eq!(h.bytes(1), [0x11; 64]);
    h.run(|w| {
        w.create_buffer(1, 0, 64, 6, 0);
    })
    .unwrap();
    assert_eq!(h.bytes(1), [0x22; 64]);
    assert_eq!(h.exec.resource_count(), 1);
}

// ---- copies -----------------------------------------------------------------------------

#[test]
fn copy_buffer_writes_back_into_guest_memory_and_readonly_is_refused() {
    let mut h = Harness::new();
    h.set_table(&[entry(5, 0x8000, 0x1000, 0)]);
    let src = pattern(64, 9);
    h.run(|w| {
        w.create_buffer(1, 0, 64, 0, 0); // host-allocated source
        w.upload(1, 0, &src);
        w.create_buffer(2, 0, 64, 5, 0);
        copy_buffer(w, 2, 1, 8, 16, 32, COPY_FLAG_WRITEBACK_DST);
    })
    .unwrap();
    // Written back before the command returned: exactly the copied bytes.
    assert_eq!(h.guest(0x8000 + 8, 32), src[16..48]);
    assert_eq!(h.guest(0x8000, 8), [0; 8]);
    assert_eq!(h.guest(0x8000 + 40, 24), [0; 24]);
    assert_eq!(h.exec.stats().written_back_bytes, 32);

    // The same copy in a submission that lists the backing READONLY fails validation
    // and leaves guest memory alone.
    h.mem.write(0x8000, &[0; 64]).unwrap();
    h.set_table(&[entry(5, 0x8000, 0x1000, ALLOC_FLAG_READONLY)]);
    let e = h.run(|w| copy_buffer(w, 2, 1, 0, 0, 64, COPY_FLAG_WRITEBACK_DST));
    assert!(
        matches!(
            e,
            Err(SubmitError::Packet {
                kind: PacketError::ReadonlyWriteback(5),
                ..
            })
        ),
        "{e:?}"
    );
    assert_eq!(h.guest(0x8000, 64), [0; 64]);

    // Overlapping copy inside one buffer (memmove semantics).
    h.run(|w| copy_buffer(w, 1, 1, 4, 0, 16, 0)).unwrap();
    let mut want = src.clone();
    want.copy_within(0..16, 4);
    assert_eq!(h.bytes(1), want);
}

/// 8x8 BGRA texture, 2 mips, 2 layers: texel (x, y) of (mip, layer) holds
/// [x, y, mip, layer].
fn labelled_texture_bytes() -> Vec<u8> {
    let mut out = Vec::new();
    for layer in 0..2u8 {
        for mip in 0..2u8 {
            let n = 8 >> mip;
            for y in 0..n {
                for x in 0..n {
                    out.extend([x, y, mip, layer]);
                }
            }
        }
    }
    out
}

#[test]
fn copy_texture2d_moves_sub_rectangles_between_mips_and_layers() {
    let mut h = Harness::new();
    let src = labelled_texture_bytes();
    assert_eq!(src.len(), 2 * (64 + 16) * 4);
    h.mem.write(0x8000, &src).unwrap();
    h.set_table(&[entry(5, 0x8000, 0x1000, 0), entry(6, 0xA000, 0x1000, 0)]);
    h.run(|w| {
        texture(w, 1, Format::B8G8R8A8Unorm, 8, 8, 2, 2, 5);
        texture(w, 2, Format::B8G8R8A8Unorm, 8, 8, 2, 2, 6);
        // src mip 1 layer 1, texels (1..4, 2..4) -> dst mip 0 layer 0 at (5, 6), written back.
        let p = cmd::CopyTexture2d {
            dst_texture: 2,
            src_texture: 1,
            dst_mip_level: 0,
            dst_array_layer: 0,
            src_mip_level: 1,
            src_array_layer: 1,
            dst_x: 5,
            dst_y: 6,
            src_x: 1,
            src_y: 2,
            width: 3,
            height: 2,
            flags: COPY_FLAG_WRITEBACK_DST,
            ..Default::default()
        };
        w.push(Opcode::CopyTexture2d, &p, &[]);
    })
    .unwrap();
    let dst = h.bytes(2);
    for y in 0..8u64 {
        for x in 0..8u64 {
            let at = ((y * 8 + x) * 4) as usize;
            let want = if (5..8).contains(&x) && (6..8).contains(&y) {
                [(x - 5 + 1) as u8, (y - 6 + 2) as u8, 1, 1]
            } else {
                [0; 4]
            };
            assert_eq!(dst[at..at + 4], want, "texel ({x}, {y})");
        }
    }
    // The backing got the same bytes.
    assert_eq!(h.guest(0xA000, dst.len()), dst);
}

#[test]
fn copy_texture2d_of_dxt_moves_whole_blocks() {
    dxt_copies(Harness::new());
}

/// The same with the GPU executor decoding BC on the CPU (an adapter without BC): the
/// blocks it keeps are what reads, copies and write-backs see.
#[test]
fn copy_texture2d_of_dxt_moves_whole_blocks_with_the_bc_fallback() {
    let mut h = Harness::new();
    h.exec = h.exec.with_bc_fallback();
    dxt_copies(h);
}

fn dxt_copies(mut h: Harness) {
    // BC1 16x8, 2 mips: mip 0 is 4x2 blocks of 8 bytes, mip 1 (8x4) is 2x1 blocks.
    let blocks: Vec<u8> = (0..(8 + 2) * 8).map(|i| i as u8).collect();
    h.run(|w| {
        texture(w, 1, Format::Bc1Unorm, 16, 8, 2, 1, 0);
        w.upload(1, 0, &blocks);
        texture(w, 2, Format::Bc1Unorm, 16, 8, 2, 1, 0);
        // Block (1, 1) .. (2, 1) of mip 0 -> blocks (0, 0) .. (1, 0) of mip 1.
        let p = cmd::CopyTexture2d {
            dst_texture: 2,
            src_texture: 1,
            dst_mip_level: 1,
            src_x: 4,
            src_y: 4,
            width: 8,
            height: 4,
            ..Default::default()
        };
        w.push(Opcode::CopyTexture2d, &p, &[]);
    })
    .unwrap();
    let dst = h.bytes(2);
    assert_eq!(dst[..64], [0; 64]);
    // Source row 1 (bytes 32..64), blocks 1 and 2 = bytes 40..56.
    assert_eq!(dst[64..80], blocks[40..56]);

    // Not on a block boundary: an executor error, not a panic, nothing copied.
    let e = h.backend_error(|w| {
        let p = cmd::CopyTexture2d {
            dst_texture: 2,
            src_texture: 1,
            src_x: 2,
            width: 4,
            height: 4,
            ..Default::default()
        };
        w.push(Opcode::CopyTexture2d, &p, &[]);
    });
    assert!(e.contains("whole blocks"), "{e}");
    // Between mips of one texture: mip 1's block (0, 0) to mip 0's block (3, 1).
    h.run(|w| {
        let p = cmd::CopyTexture2d {
            dst_texture: 2,
            src_texture: 2,
            dst_mip_level: 0,
            src_mip_level: 1,
            dst_x: 12,
            dst_y: 4,
            width: 4,
            height: 4,
            ..Default::default()
        };
        w.push(Opcode::CopyTexture2d, &p, &[]);
    })
    .unwrap();
    // Mip 1 block (0, 0) landed in mip 0 block (3, 1): bytes 32 + 24.
    assert_eq!(h.bytes(2)[56..64], blocks[40..48]);
    // Into a guest-backed BC1 texture with write-back: guest memory gets the blocks.
    h.set_table(&[entry(7, 0xC000, 0x1000, 0)]);
    h.run(|w| {
        texture(w, 3, Format::Bc1Unorm, 16, 8, 2, 1, 7);
        let p = cmd::CopyTexture2d {
            dst_texture: 3,
            src_texture: 1,
            width: 16,
            height: 8,
            flags: COPY_FLAG_WRITEBACK_DST,
            ..Default::default()
        };
        w.push(Opcode::CopyTexture2d, &p, &[]);
    })
    .unwrap();
    assert_eq!(h.guest(0xC000, 64), blocks[..64]);
    // Mips smaller than a block (4x4, 2x2, 1x1: one block each) keep their blocks.
    h.run(|w| {
        texture(w, 4, Format::Bc3Unorm, 4, 4, 3, 1, 0);
        w.upload(4, 0, &blocks[..48]);
    })
    .unwrap();
    assert_eq!(h.bytes(4), blocks[..48]);
}

// ---- clears -----------------------------------------------------------------------------

#[test]
fn clear_converts_the_colour_to_every_format() {
    let rgba = [1.0, 0.5, 0.25, 0.0];
    let cases: &[(Format, &[u8])] = &[
        (Format::B8G8R8A8Unorm, &[64, 128, 255, 0]),
        (Format::B8G8R8X8Unorm, &[64, 128, 255, 255]),
        (Format::R8G8B8A8Unorm, &[255, 128, 64, 0]),
        (Format::R8G8B8X8Unorm, &[255, 128, 64, 255]),
        // r=31, g=round(31.5)=32, b=round(7.75)=8: 0xF808.
        (Format::B5G6R5Unorm, &[0x08, 0xFC]),
        // a=0, r=31, g=16, b=8: 0x7E08.
        (Format::B5G5R5A1Unorm, &[0x08, 0x7E]),
        (Format::R8Unorm, &[255]),
        (Format::R8G8Unorm, &[255, 128]),
        // A8 keeps alpha, L8A8 (bytes l, a) red as luminance and alpha.
        (Format::A8Unorm, &[0]),
        (Format::L8A8Unorm, &[255, 0]),
        (
            Format::R16G16B16A16Float,
            &[0x00, 0x3C, 0x00, 0x38, 0x00, 0x34, 0x00, 0x00],
        ),
        (
            Format::R32G32B32A32Float,
            &[
                0, 0, 0x80, 0x3F, 0, 0, 0, 0x3F, 0, 0, 0x80, 0x3E, 0, 0, 0, 0,
            ],
        ),
        (Format::R32Float, &[0, 0, 0x80, 0x3F]),
    ];
    for &(format, texel) in cases {
        let mut h = Harness::new();
        h.run(|w| {
            texture(w, 1, format, 3, 2, 1, 1, 0);
            targets(w, &[1], 0);
            clear(w, CLEAR_COLOR, rgba, 0.0, 0);
        })
        .unwrap();
        assert_eq!(h.bytes(1), texel.repeat(6), "{format:?}");
    }
    // B5G6R5 green: 0x07E0 exactly, and B5G5R5A1 opaque white 0xFFFF.
    let mut h = Harness::new();
    h.run(|w| {
        texture(w, 1, Format::B5G6R5Unorm, 1, 1, 1, 1, 0);
        texture(w, 2, Format::B5G5R5A1Unorm, 1, 1, 1, 1, 0);
        targets(w, &[1], 0);
        clear(w, CLEAR_COLOR, [0.0, 1.0, 0.0, 1.0], 0.0, 0);
        targets(w, &[2], 0);
        clear(w, CLEAR_COLOR, [1.0; 4], 0.0, 0);
    })
    .unwrap();
    assert_eq!(h.bytes(1), [0xE0, 0x07]);
    assert_eq!(h.bytes(2), [0xFF, 0xFF]);
    // A block-compressed target cannot be cleared: an executor error.
    let e = h.backend_error(|w| {
        texture(w, 3, Format::Bc1Unorm, 4, 4, 1, 1, 0);
        targets(w, &[3], 0);
        clear(w, CLEAR_COLOR, [1.0; 4], 0.0, 0);
    });
    assert!(e.contains("colour clear"), "{e}");
}

#[test]
fn clear_fills_every_bound_target_and_ignores_the_scissor() {
    let mut h = Harness::new();
    h.run(|w| {
        texture(w, 1, Format::B8G8R8A8Unorm, 4, 4, 1, 1, 0);
        texture(w, 2, Format::R8G8B8A8Unorm, 2, 2, 1, 1, 0);
        targets(w, &[1, 2], 0);
        // D3D9 scissor on: CLEAR still covers whole targets (the ABI's rule; the UMD
        // cuts Clear rectangles to the scissor and sends CLEAR only when one covers all).
        let s = cmd::SetScissor {
            x: 1,
            y: 1,
            width: 1,
            height: 1,
            ..Default::default()
        };
        w.push(Opcode::SetScissor, &s, &[]);
        let rs = cmd::SetRenderState {
            state: 174,
            value: 1,
            ..Default::default()
        };
        w.push(Opcode::SetRenderState, &rs, &[]);
        clear(w, CLEAR_COLOR, [0.0, 0.0, 1.0, 1.0], 0.0, 0);
    })
    .unwrap();
    assert_eq!(h.bytes(1), [255, 0, 0, 255].repeat(16));
    assert_eq!(h.bytes(2), [0, 0, 255, 255].repeat(4));
}

#[test]
fn depth_stencil_clears_honour_the_flags() {
    let mut h = Harness::new();
    h.run(|w| {
        texture(w, 1, Format::D24UnormS8Uint, 2, 1, 1, 1, 0);
        texture(w, 2, Format::D16Unorm, 2, 1, 1, 1, 0);
        texture(w, 3, Format::D32Float, 2, 1, 1, 1, 0);
        targets(w, &[], 1);
        clear(w, CLEAR_DEPTH | CLEAR_STENCIL, [0.0; 4], 1.0, 0x5A);
    })
    .unwrap();
    // D3D9's D24S8 word: depth in bits 31..8, stencil in 7..0.
    assert_eq!(h.bytes(1), 0xFFFF_FF5Au32.to_le_bytes().repeat(2));
    h.run(|w| clear(w, CLEAR_STENCIL, [0.0; 4], 0.0, 0x33))
        .unwrap();
    assert_eq!(h.bytes(1), 0xFFFF_FF33u32.to_le_bytes().repeat(2));
    h.run(|w| clear(w, CLEAR_DEPTH, [0.0; 4], 0.5, 0x99))
        .unwrap();
    // round(0.5 * 0xFFFFFF) = 0x800000; stencil kept.
    assert_eq!(h.bytes(1), 0x8000_0033u32.to_le_bytes().repeat(2));
    // Colour flag with only a depth target bound: nothing else changes.
    h.run(|w| {
        targets(w, &[], 2);
        clear(w, CLEAR_DEPTH | CLEAR_COLOR, [1.0; 4], 0.25, 0);
        targets(w, &[], 3);
        clear(w, CLEAR_DEPTH | CLEAR_STENCIL, [0.0; 4], 0.75, 7);
    })
    .unwrap();
    assert_eq!(h.bytes(2), 0x4000u16.to_le_bytes().repeat(2));
    assert_eq!(h.bytes(3), 0.75f32.to_le_bytes().repeat(2));
    // Stencil alone on a format without stencil: nothing to do.
    h.run(|w| clear(w, CLEAR_STENCIL, [0.0; 4], 0.0, 1))
        .unwrap();
    assert_eq!(h.bytes(3), 0.75f32.to_le_bytes().repeat(2));
}

#[test]
fn depth_surfaces_take_dirty_ranges_rect_clears_copies_and_write_backs_byte_exact() {
    // Guest-backed D24S8 (4x2 at 0x8000), D16 (4x2 at 0x9000) and D32F (4x2 at 0xA000)
    // surfaces, and a host-only D24S8 copy target: both executors (twin.rs) must agree.
    let mut h = Harness::new();
    let words: Vec<u8> = (0..8u32)
        .flat_map(|i| (((i * 0x0012_3457) << 8) | (i * 31)).to_le_bytes())
        .collect();
    h.mem.write(0x8000, &words).unwrap();
    h.mem.write(0x9000, &pattern(16, 7)).unwrap();
    h.mem
        .write(
            0xA000,
            &[0.25f32.to_le_bytes(), 0.5f32.to_le_bytes()]
                .concat()
                .repeat(4),
        )
        .unwrap();
    h.set_table(&[
        entry(1, 0x8000, 0x1000, 0),
        entry(2, 0x9000, 0x1000, 0),
        entry(3, 0xA000, 0x1000, 0),
    ]);
    h.run(|w| {
        texture(w, 1, Format::D24UnormS8Uint, 4, 2, 1, 1, 1);
        texture(w, 2, Format::D16Unorm, 4, 2, 1, 1, 2);
        texture(w, 3, Format::D32Float, 4, 2, 1, 1, 3);
        texture(w, 4, Format::D24UnormS8Uint, 4, 2, 1, 1, 0);
    })
    .unwrap();
    assert_eq!(h.bytes(1), words);
    // The guest rewrites row 1 of the D24S8 surface and reports it.
    let row1: Vec<u8> = (0..4u32)
        .flat_map(|x| (0xABCD_EF00u32 | x).to_le_bytes())
        .collect();
    h.mem.write(0x8000 + 16, &row1).unwrap();
    h.run(|w| dirty(w, 1, 16, 16)).unwrap();
    let mut want = words.clone();
    want[16..].copy_from_slice(&row1);
    assert_eq!(h.bytes(1), want);
    // Rectangle clears: stencil alone on x 1..3 of row 0, depth alone on x 2.. of row 1.
    h.run(|w| {
        targets(w, &[], 1);
        super::stream::clear_rects(w, CLEAR_STENCIL, [0.0; 4], 0.0, 0x77, &[[1, 0, 2, 1]]);
        super::stream::clear_rects(w, CLEAR_DEPTH, [0.0; 4], 0.5, 0, &[[2, 1, 9, 9]]);
    })
    .unwrap();
    for x in 1..3 {
        want[x * 4] = 0x77;
    }
    for x in 2..4 {
        let at = 16 + x * 4;
        let stencil = want[at];
        want[at..at + 4].copy_from_slice(&(0x8000_0000u32 | u32::from(stencil)).to_le_bytes());
    }
    assert_eq!(h.bytes(1), want);
    // D16 and D32F: depth rectangles; their stencil-less formats ignore the stencil flag.
    for handle in [2, 3] {
        h.run(|w| {
            targets(w, &[], handle);
            super::stream::clear_rects(
                w,
                CLEAR_DEPTH | CLEAR_STENCIL,
                [0.0; 4],
                1.0,
                0xFF,
                &[[0, 1, 2, 1]],
            );
        })
        .unwrap();
    }
    let mut d16 = pattern(16, 7);
    d16[8..12].copy_from_slice(&[0xFF; 4]);
    assert_eq!(h.bytes(2), d16);
    assert_eq!(&h.bytes(3)[16..24], &[1.0f32.to_le_bytes(); 2].concat()[..]);
    // A copy into the host-only surface, then back over the guest-backed one with
    // write-back: guest memory gets the D24S8 words.
    h.run(|w| {
        for (dst, src, src_x, flags) in [(4, 1, 0, 0), (1, 4, 2, COPY_FLAG_WRITEBACK_DST)] {
            let p = cmd::CopyTexture2d {
                dst_texture: dst,
                src_texture: src,
                dst_x: 2,
                src_x,
                width: 2,
                height: 2,
                flags,
                ..Default::default()
            };
            w.push(Opcode::CopyTexture2d, &p, &[]);
        }
    })
    .unwrap();
    for y in 0..2 {
        let row = y * 16;
        let moved = want[row..row + 8].to_vec();
        want[row + 8..row + 16].copy_from_slice(&moved);
    }
    assert_eq!(h.bytes(1), want);
    // Only the copied texels are written back; the clears stay pending until a present.
    let mut guest = [&words[..16], &row1[..]].concat();
    for row in [0, 16] {
        guest[row + 8..row + 16].copy_from_slice(&want[row + 8..row + 16]);
    }
    assert_eq!(h.guest(0x8000, 32), guest);
}

#[test]
fn clear_rects_fill_only_their_clipped_rectangles() {
    let mut h = Harness::new();
    h.run(|w| {
        texture(w, 1, Format::R8Unorm, 4, 3, 1, 1, 0);
        targets(w, &[1], 0);
        // One inside, one running off the right and bottom edges, one outside.
        clear_rects(
            w,
            CLEAR_COLOR,
            [1.0; 4],
            &[[0, 0, 1, 1], [2, 1, 10, 10], [9, 9, 1, 1]],
        );
    })
    .unwrap();
    #[rustfmt::skip]
    let want = [
        255, 0, 0, 0,
        0, 0, 255, 255,
        0, 0, 255, 255,
    ];
    assert_eq!(h.bytes(1), want);
}

// ---- presents ---------------------------------------------------------------------------

#[test]
fn present_writes_back_only_what_the_host_changed() {
    let mut h = Harness::new();
    h.set_table(&[entry(1, 0x8000, 0x1000, 0)]);
    h.run(|w| {
        w.create_texture2d(1, BGRA, 4, 2, 1);
        targets(w, &[1], 0);
        clear_rects(w, CLEAR_COLOR, [1.0, 0.0, 0.0, 1.0], &[[0, 0, 2, 2]]);
    })
    .unwrap();
    // The guest's CPU draws into the right half meanwhile (no dirty range).
    for y in 0..2u64 {
        h.mem.write(0x8000 + y * 16 + 8, &[7; 8]).unwrap();
    }
    assert_eq!(h.guest(0x8000, 4), [0; 4], "nothing written before PRESENT");
    // The present's submission lists the target READONLY (as the UMD does): written anyway.
    h.set_table(&[entry(1, 0x8000, 0x1000, ALLOC_FLAG_READONLY)]);
    h.run(|w| {
        w.present(0);
    })
    .unwrap();
    for y in 0..2u64 {
        let row = h.guest(0x8000 + y * 16, 16);
        assert_eq!(row[..8], [0, 0, 255, 255, 0, 0, 255, 255], "row {y}");
        assert_eq!(row[8..], [7; 8], "the guest's pixels stay (row {y})");
    }
    assert_eq!(h.exec.stats().written_back_bytes, 16);
    assert!(h.exec.presented_frame().is_none());

    // Nothing changed since: a second present writes nothing.
    h.mem.write(0x8000, &[9; 4]).unwrap();
    h.run(|w| {
        w.present(0);
    })
    .unwrap();
    assert_eq!(h.guest(0x8000, 4), [9; 4]);
    assert_eq!(h.exec.stats().written_back_bytes, 16);
}

#[test]
fn host_only_target_becomes_the_presented_frame() {
    let mut h = Harness::new();
    h.run(|w| {
        texture(w, 1, Format::B5G6R5Unorm, 3, 2, 1, 1, 0);
        targets(w, &[1], 0);
        clear(w, CLEAR_COLOR, [0.0, 1.0, 0.0, 1.0], 0.0, 0);
        clear_rects(w, CLEAR_COLOR, [1.0, 0.0, 1.0, 1.0], &[[2, 1, 1, 1]]);
        w.present(0);
    })
    .unwrap();
    let f = h.exec.presented_frame().expect("a presented frame");
    assert_eq!((f.width, f.height), (3, 2));
    assert_eq!(f.pixel(0, 0), Some([0, 255, 0, 255]));
    assert_eq!(f.pixel(2, 1), Some([255, 0, 255, 255]));
    assert_eq!(h.exec.stats().host_presents, 1);
    h.exec.scanout_reprogrammed();
    assert!(h.exec.presented_frame().is_none());

    // Float and single-channel targets are shown too; a depth target cannot be.
    h.run(|w| {
        texture(w, 2, Format::R16G16B16A16Float, 1, 1, 1, 1, 0);
        targets(w, &[2], 0);
        clear(w, CLEAR_COLOR, [0.5, 1.0, 2.0, 1.0], 0.0, 0);
        w.present(0);
    })
    .unwrap();
    let f = h.exec.presented_frame().unwrap();
    assert_eq!(f.pixel(0, 0), Some([128, 255, 255, 255]));
    let e = h.backend_error(|w| {
        texture(w, 3, Format::D16Unorm, 1, 1, 1, 1, 0);
        targets(w, &[3], 0);
        w.present(0);
    });
    assert!(e.contains("present"), "{e}");
}

#[test]
fn draws_are_counted_and_skipped_without_failing_the_submission() {
    let mut h = Harness::new();
    h.run(|w| {
        w.draw(3).draw(6);
    })
    .unwrap();
    assert_eq!(h.exec.stats().draws_skipped, 2);
}

// ---- lifetime and limits ----------------------------------------------------------------

#[test]
fn destroy_frees_the_host_copy_and_the_cap_is_an_error_not_a_panic() {
    let mut h = Harness::with_config(SoftExecutorConfig {
        max_host_bytes: 4096,
    });
    h.run(|w| {
        w.create_buffer(1, 0, 3000, 0, 0);
    })
    .unwrap();
    assert_eq!(h.exec.host_bytes(), 3000);
    let e = h.backend_error(|w| {
        w.create_buffer(2, 0, 2000, 0, 0);
    });
    assert!(e.contains("host memory cap"), "{e}");
    assert_eq!(h.exec.host_bytes(), 3000);
    h.run(|w| {
        w.destroy_resource(1);
        w.destroy_resource(2);
        w.create_buffer(3, 0, 4096, 0, 0);
    })
    .unwrap();
    assert_eq!(h.exec.host_bytes(), 4096);
    assert_eq!(h.exec.resource_count(), 1);
    // Reset drops everything.
    h.exec.reset();
    assert_eq!((h.exec.host_bytes(), h.exec.resource_count()), (0, 0));
}

#[test]
fn shared_surface_aliases_free_on_the_last_reference() {
    let mut h = Harness::new();
    h.run(|w| {
        w.create_buffer(1, 0, 64, 0, 0);
        w.export_shared(1, 0x77);
        w.import_shared(2, 0x77);
        w.destroy_resource(1);
    })
    .unwrap();
    assert_eq!(h.exec.resource_count(), 1, "the alias keeps it");
    h.run(|w| {
        w.destroy_resource(2);
    })
    .unwrap();
    assert_eq!((h.exec.resource_count(), h.exec.host_bytes()), (0, 0));
}

#[test]
fn a_destroyed_target_handle_is_unbound_even_while_an_alias_keeps_the_surface() {
    let mut h = Harness::new();
    h.run(|w| {
        texture(w, 1, Format::R8Unorm, 2, 1, 1, 1, 0);
        w.export_shared(1, 0x55);
        w.import_shared(2, 0x55);
        targets(w, &[1], 0);
        w.destroy_resource(1);
        clear(w, CLEAR_COLOR, [1.0; 4], 0.0, 0);
    })
    .unwrap();
    assert_eq!(
        h.bytes(2),
        [0, 0],
        "nothing bound: the clear touched nothing"
    );
    h.run(|w| {
        targets(w, &[2], 0);
        clear(w, CLEAR_COLOR, [1.0; 4], 0.0, 0);
    })
    .unwrap();
    assert_eq!(h.bytes(2), [255, 255]);
}

#[test]
fn an_executor_error_reports_backend_to_the_guest() {
    let e = SubmitError::Packet {
        offset: 0,
        opcode: 0,
        kind: PacketError::Executor("x".into()),
    };
    assert_eq!(e.code(), ErrorCode::Backend);
}

// ---- through the device ---------------------------------------------------------------

mod device {
    use aero_protocol::cmd::CLEAR_COLOR;
    use aero_protocol::pci::{ErrorCode, Format, reg};
    use aero_protocol::writer::CmdStreamWriter;

    use super::super::guest::{BACKING_GPA, Guest};
    use super::{clear, entry, targets, texture};
    use crate::Frame;
    use crate::aerogpu::{GuestMemory, SoftExecutor, SoftExecutorConfig};

    const W: u32 = 4;
    const H: u32 = 2;

    fn guest() -> Guest<SoftExecutor> {
        let mut g = Guest::with_executor(
            8,
            0,
            SoftExecutor::new(SoftExecutorConfig {
                max_host_bytes: 1 << 20,
            }),
        );
        // Scanout 0: a 4x2 B8G8R8X8 framebuffer at BACKING_GPA.
        g.write(reg::SCANOUT0_WIDTH, W);
        g.write(reg::SCANOUT0_HEIGHT, H);
        g.write(reg::SCANOUT0_FORMAT, Format::B8G8R8X8Unorm as u32);
        g.write(reg::SCANOUT0_PITCH_BYTES, W * 4);
        g.write(reg::SCANOUT0_FB_GPA_LO, BACKING_GPA as u32);
        g.write(reg::SCANOUT0_ENABLE, 1);
        g
    }

    fn screen(g: &Guest<SoftExecutor>) -> Frame {
        let mut f = Frame::new();
        g.dev.render_scanout(&g.mem, &mut f).unwrap();
        f
    }

    fn stream(f: impl FnOnce(&mut CmdStreamWriter)) -> Vec<u8> {
        let mut w = CmdStreamWriter::new();
        f(&mut w);
        w.finish()
    }

    #[test]
    fn clear_and_present_through_the_ring_reach_the_scanout() {
        let mut g = guest();
        let fb_table = |g: &mut Guest<SoftExecutor>| {
            g.table(&[entry(1, BACKING_GPA, u64::from(W * H * 4), 0)])
        };
        let s = stream(|w| {
            texture(w, 1, Format::B8G8R8X8Unorm, W, H, 1, 1, 1);
            targets(w, &[1], 0);
            clear(w, CLEAR_COLOR, [0.0, 0.0, 1.0, 1.0], 0.0, 0);
            w.present(0);
        });
        let t = fb_table(&mut g);
        g.submit(&s, Some(t), 1, 0);
        assert_eq!(g.completed_fence(), 1);
        assert_eq!(g.read(reg::ERROR_CODE), 0);
        let f = screen(&g);
        assert_eq!((f.width, f.height), (W, H));
        for (x, y) in [(0, 0), (3, 1)] {
            assert_eq!(f.pixel(x, y), Some([0, 0, 255, 255]));
        }

        // The guest's CPU draws a pixel and presents again: its pixel stays.
        g.mem.write(BACKING_GPA + 4, &[0, 255, 0, 0]).unwrap();
        let s = stream(|w| {
            w.present(0);
        });
        g.submit(&s, None, 2, 0);
        assert_eq!(g.completed_fence(), 2);
        let f = screen(&g);
        assert_eq!(f.pixel(1, 0), Some([0, 255, 0, 255]));
        assert_eq!(f.pixel(0, 0), Some([0, 0, 255, 255]));
    }

    #[test]
    fn a_host_only_target_is_shown_until_the_scanout_is_reprogrammed() {
        let mut g = guest();
        g.mem
            .write(BACKING_GPA, &[0x40; (W * H * 4) as usize])
            .unwrap();
        let s = stream(|w| {
            texture(w, 7, Format::R8G8B8A8Unorm, 2, 2, 1, 1, 0);
            targets(w, &[7], 0);
            clear(w, CLEAR_COLOR, [1.0, 1.0, 0.0, 1.0], 0.0, 0);
            w.present(0);
        });
        g.submit(&s, None, 1, 0);
        let f = screen(&g);
        assert_eq!((f.width, f.height), (2, 2), "the presented surface's size");
        assert_eq!(f.pixel(1, 1), Some([255, 255, 0, 255]));
        // The same value written again changes nothing; a new framebuffer address does.
        g.write(reg::SCANOUT0_FB_GPA_LO, BACKING_GPA as u32);
        assert_eq!(screen(&g).width, 2);
        g.write(reg::SCANOUT0_FB_GPA_LO, BACKING_GPA as u32 + 4);
        g.write(reg::SCANOUT0_FB_GPA_LO, BACKING_GPA as u32);
        let f = screen(&g);
        assert_eq!((f.width, f.pixel(0, 0)), (W, Some([0x40, 0x40, 0x40, 255])));
    }

    #[test]
    fn each_context_clears_its_own_render_targets() {
        let mut g = guest();
        let submit_as = |g: &mut Guest<SoftExecutor>, context_id: u32, fence: u64, s: &[u8]| {
            let mut d = g.desc(s, None, fence, 0);
            d.context_id = context_id;
            g.push_desc(&d);
            g.doorbell();
        };
        // Context 1 binds texture 1, context 2 texture 2; then each clears in turn.
        let bind = |handle| {
            stream(|w| {
                texture(w, handle, Format::R8Unorm, 1, 1, 1, 1, 0);
                targets(w, &[handle], 0);
            })
        };
        submit_as(&mut g, 1, 1, &bind(1));
        submit_as(&mut g, 2, 2, &bind(2));
        let clear_to = |v: f32| stream(|w| clear(w, CLEAR_COLOR, [v; 4], 0.0, 0));
        submit_as(&mut g, 1, 3, &clear_to(1.0));
        submit_as(&mut g, 2, 4, &clear_to(0.2));
        assert_eq!(g.completed_fence(), 4);
        let bytes = |g: &Guest<SoftExecutor>, handle| {
            let id = g.dev.processor().objects().resource(handle).unwrap().0;
            g.dev.executor().resource_bytes(id).unwrap().to_vec()
        };
        assert_eq!(bytes(&g, 1), [255]);
        assert_eq!(bytes(&g, 2), [51]);
    }

    #[test]
    fn exceeding_the_host_memory_cap_is_a_backend_error_and_the_device_goes_on() {
        let mut g = guest();
        let s = stream(|w| {
            w.create_buffer(1, 0, 2 << 20, 0, 0);
        });
        g.submit(&s, None, 1, 0);
        assert_eq!(g.completed_fence(), 1, "the fence completes anyway");
        assert_eq!(g.read(reg::ERROR_CODE), ErrorCode::Backend as u32);
        let s = stream(|w| {
            w.create_buffer(2, 0, 1 << 20, 0, 0);
        });
        g.submit(&s, None, 2, 0);
        assert_eq!(g.completed_fence(), 2);
        assert_eq!(g.read(reg::ERROR_COUNT), 1);
        assert_eq!(g.dev.executor().host_bytes(), 1 << 20);
        // Device reset drops every host copy.
        g.dev.reset();
        assert_eq!(g.dev.executor().resource_count(), 0);
    }
}

/// A guest-backed 4x4x3 volume (2 mips) and a 4x4 cube (6 faces): COPY_TEXTURE2D reads a
/// volume slice / cube face and writes one back, both executors byte-exact (the twin).
#[test]
fn copies_address_volume_slices_and_cube_faces() {
    let mut h = Harness::new();
    // Volume: mip 0 is 3 slices of 4x4, mip 1 one slice of 2x2; texel = [x, y, z, mip].
    let mut vol = Vec::new();
    for (mip, (n, depth)) in [(4u8, 3u8), (2, 1)].into_iter().enumerate() {
        for z in 0..depth {
            for y in 0..n {
                for x in 0..n {
                    vol.extend([x, y, z, mip as u8]);
                }
            }
        }
    }
    assert_eq!(vol.len(), (48 + 4) * 4);
    // Cube: face f texel = [x, y, f, 0x40].
    let mut cube = Vec::new();
    for f in 0..6u8 {
        for y in 0..4u8 {
            for x in 0..4u8 {
                cube.extend([x, y, f, 0x40]);
            }
        }
    }
    h.mem.write(0x8000, &vol).unwrap();
    h.mem.write(0x9000, &cube).unwrap();
    h.set_table(&[
        entry(5, 0x8000, 0x1000, 0),
        entry(6, 0x9000, 0x1000, 0),
        entry(7, 0xA000, 0x1000, 0),
    ]);
    let copy = |dst, src, dst_layer, src_layer, flags| cmd::CopyTexture2d {
        dst_texture: dst,
        src_texture: src,
        dst_array_layer: dst_layer,
        src_array_layer: src_layer,
        width: 4,
        height: 4,
        flags,
        ..Default::default()
    };
    h.run(|w| {
        let volume = cmd::CreateTexture2d {
            texture_handle: 1,
            usage_flags: cmd::RESOURCE_USAGE_TEXTURE,
            format: BGRA,
            width: 4,
            height: 4,
            mip_levels: 2,
            array_layers: 1,
            backing_alloc_id: 5,
            flags: cmd::TEXTURE_FLAG_VOLUME,
            depth: 3,
            ..Default::default()
        };
        w.push(Opcode::CreateTexture2d, &volume, &[]);
        let faces = cmd::CreateTexture2d {
            texture_handle: 2,
            backing_alloc_id: 6,
            array_layers: 6,
            mip_levels: 1,
            flags: cmd::TEXTURE_FLAG_CUBE,
            depth: 0,
            ..volume
        };
        w.push(Opcode::CreateTexture2d, &faces, &[]);
        texture(w, 3, Format::B8G8R8A8Unorm, 4, 4, 1, 1, 7);
        // Volume slice 2 -> the 2D texture, written back.
        w.push(
            Opcode::CopyTexture2d,
            &copy(3, 1, 0, 2, COPY_FLAG_WRITEBACK_DST),
            &[],
        );
    })
    .unwrap();
    assert_eq!(h.guest(0xA000, 64), vol[2 * 64..3 * 64], "slice 2");
    h.run(|w| {
        // Cube face 4 (+Z) -> volume slice 1, written back.
        w.push(
            Opcode::CopyTexture2d,
            &copy(1, 2, 1, 4, COPY_FLAG_WRITEBACK_DST),
            &[],
        );
    })
    .unwrap();
    let mut want = vol.clone();
    want[64..128].copy_from_slice(&cube[4 * 64..5 * 64]);
    assert_eq!(
        h.guest(0x8000, want.len()),
        want,
        "face 4 in slice 1, the rest kept"
    );
    assert_eq!(h.bytes(1), want);
    // Slice 3 of mip 0 and slice 1 of mip 1 do not exist.
    assert!(
        h.run(|w| {
            w.push(Opcode::CopyTexture2d, &copy(3, 1, 0, 3, 0), &[]);
        })
        .is_err()
    );
}
