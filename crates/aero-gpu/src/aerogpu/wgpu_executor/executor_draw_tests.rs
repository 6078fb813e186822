//! Draws through the processor into the GPU executor.
//! - Depth/stencil surfaces: what the guest puts in one (uploads, dirty ranges,
//!   rectangle clears, copies) is what draws test against, and what draws write comes
//!   back in the guest's layout (D24S8 words, D16, D32F) through reads, copies and
//!   write-backs.
//! - BC textures decoded on the CPU (the fallback for adapters without BC) sample as the
//!   native BC textures do.

use aero_protocol::Wire;
use aero_protocol::cmd::{self, CompareFunc, Opcode, PrimitiveTopology, ShaderStage};
use aero_protocol::pci::Format;
use aero_protocol::ring::AllocEntry;
use aero_protocol::writer::{CmdStreamWriter, encode_alloc_table};

use super::pipeline::rs;
use crate::aerogpu::bc_decode::{self, BcKind};
use crate::aerogpu::d3d9::asm::assemble;
use crate::aerogpu::{
    AllocTable, CommandProcessor, Limits, SoftExecutorConfig, VecMemory, WgpuExecutor,
};

const W: u32 = 8;
const H: u32 = 4;
const COLOR: u32 = 1;
const DEPTH: u32 = 2;
const BG: [u8; 4] = [0, 0, 0, 0xFF];
/// Raw render states take D3DCMPFUNC values (1-based), not `aerogpu_compare_func`.
const D3DCMP_EQUAL: u32 = 3;
const DRAWN: [u8; 4] = [0x33, 0x22, 0x11, 0xFF]; // BGRA of ARGB 0xFF112233

struct Rig {
    p: CommandProcessor,
    mem: VecMemory,
    table: AllocTable,
    exec: WgpuExecutor,
}

fn push<T: Wire>(w: &mut CmdStreamWriter, op: Opcode, p: T) {
    w.push(op, &p, &[]);
}

fn tokens(src: &str) -> Vec<u8> {
    assemble(src)
        .unwrap()
        .iter()
        .flat_map(|t| t.to_le_bytes())
        .collect()
}

/// Creates and binds shaders `(vs, ps, input layout)` handles from assembly and stream 0
/// declaration elements `(offset, D3DDECLTYPE, D3DDECLUSAGE)`.
pub(super) fn program(
    w: &mut CmdStreamWriter,
    (vs, ps, layout): (u32, u32, u32),
    vs_src: &str,
    ps_src: &str,
    elements: &[(u16, u8, u8)],
) {
    for (handle, stage, src) in [
        (vs, ShaderStage::Vertex, vs_src),
        (ps, ShaderStage::Pixel, ps_src),
    ] {
        let t = tokens(src);
        let p = cmd::CreateShader {
            shader_handle: handle,
            stage: stage as u32,
            bytecode_size_bytes: t.len() as u32,
            ..Default::default()
        };
        w.push(Opcode::CreateShader, &p, &t);
    }
    let mut decl = Vec::new();
    for &(offset, ty, usage) in elements {
        decl.extend_from_slice(&0u16.to_le_bytes());
        decl.extend_from_slice(&offset.to_le_bytes());
        decl.extend_from_slice(&[ty, 0, usage, 0]);
    }
    decl.extend_from_slice(&[0xFF, 0, 0, 0, 17, 0, 0, 0]); // D3DDECL_END
    let p = cmd::CreateInputLayout {
        input_layout_handle: layout,
        blob_size_bytes: decl.len() as u32,
        ..Default::default()
    };
    w.push(Opcode::CreateInputLayout, &p, &decl);
    push(
        w,
        Opcode::BindShaders,
        cmd::BindShaders {
            vs,
            ps,
            ..Default::default()
        },
    );
    push(
        w,
        Opcode::SetInputLayout,
        cmd::SetInputLayout {
            input_layout_handle: layout,
            ..Default::default()
        },
    );
}

/// Binds buffer `handle` as vertex stream 0 with `stride` bytes per vertex.
pub(super) fn vertex_buffer(w: &mut CmdStreamWriter, handle: u32, stride: u32) {
    let mut binding = [0u8; 16];
    binding[..4].copy_from_slice(&handle.to_le_bytes());
    binding[4..8].copy_from_slice(&stride.to_le_bytes());
    let p = cmd::SetVertexBuffers {
        start_slot: 0,
        buffer_count: 1,
        ..Default::default()
    };
    w.push(Opcode::SetVertexBuffers, &p, &binding);
}

/// A quad over pixels [x0, x1) × [y0, y1) at depth z (clockwise, as a triangle strip).
fn quad(x0: u32, y0: u32, x1: u32, y1: u32, z: f32) -> Vec<u8> {
    let cx = |x: u32| (x as f32 - 0.5) * 2.0 / W as f32 - 1.0;
    let cy = |y: u32| 1.0 - (y as f32 - 0.5) * 2.0 / H as f32;
    let mut v = Vec::new();
    for (x, y) in [(x0, y0), (x1, y0), (x0, y1), (x1, y1)] {
        for f in [cx(x), cy(y), z, 1.0] {
            v.extend_from_slice(&f.to_le_bytes());
        }
        v.extend_from_slice(&0xFF11_2233u32.to_le_bytes());
    }
    v
}

impl Rig {
    /// A B8G8R8A8 target and a `format` depth surface (guest-backed at 0x1000 when
    /// `backed`), shaders, a vertex buffer and culling off.
    fn new(format: Format, backed: bool) -> Rig {
        let exec = WgpuExecutor::new_headless(SoftExecutorConfig::default()).expect("wgpu device");
        Rig::with_executor(exec, format, backed)
    }

    fn with_executor(exec: WgpuExecutor, format: Format, backed: bool) -> Rig {
        let mut rig = Rig {
            p: CommandProcessor::new(Limits::default()),
            mem: VecMemory::new(1 << 16),
            table: AllocTable::new(),
            exec,
        };
        let entries = [
            AllocEntry {
                alloc_id: 1,
                flags: 0,
                gpa: 0x1000,
                size_bytes: 0x1000,
                reserved0: 0,
            },
            AllocEntry {
                alloc_id: 2,
                flags: 0,
                gpa: 0x2000,
                size_bytes: 0x1000,
                reserved0: 0,
            },
        ];
        rig.table
            .parse(&encode_alloc_table(&entries), &rig.mem)
            .unwrap();
        rig.run(|w| {
            w.create_texture2d(COLOR, Format::B8G8R8A8Unorm as u32, W, H, 0);
            w.create_texture2d(DEPTH, format as u32, W, H, u32::from(backed));
            w.create_buffer(3, cmd::RESOURCE_USAGE_VERTEX_BUFFER, 4096, 0, 0);
            program(
                w,
                (4, 5, 6),
                "vs_2_0\ndcl_position v0\ndcl_color v1\nmov oPos, v0\nmov oD0, v1\n",
                "ps_2_0\ndcl v0\nmov oC0, v0\n",
                &[(0, 3, 0), (16, 4, 10)],
            );
            vertex_buffer(w, 3, 20);
            push(
                w,
                Opcode::SetRenderTargets,
                cmd::SetRenderTargets {
                    color_count: 1,
                    colors: [COLOR, 0, 0, 0, 0, 0, 0, 0],
                    depth_stencil: DEPTH,
                    ..Default::default()
                },
            );
            push(
                w,
                Opcode::SetPrimitiveTopology,
                cmd::SetPrimitiveTopology {
                    topology: PrimitiveTopology::TriangleStrip as u32,
                    ..Default::default()
                },
            );
            push(
                w,
                Opcode::SetRasterizerState,
                cmd::SetRasterizerState {
                    cull_mode: cmd::CullMode::None as u32,
                    ..Default::default()
                },
            );
        });
        rig
    }

    fn run(&mut self, f: impl FnOnce(&mut CmdStreamWriter)) {
        let mut w = CmdStreamWriter::new();
        f(&mut w);
        let stream = w.finish();
        self.p
            .process(&stream, &self.table, &mut self.mem, &mut self.exec)
            .unwrap();
    }

    fn bytes(&self, handle: u32) -> Vec<u8> {
        let id = self.p.objects().resource(handle).unwrap().0;
        self.exec.resource_bytes(id).unwrap()
    }

    fn pixels(&self) -> Vec<[u8; 4]> {
        self.bytes(COLOR)
            .chunks_exact(4)
            .map(|p| [p[0], p[1], p[2], p[3]])
            .collect()
    }

    /// Clears colour to black, then draws a quad with depth func `func`, depth writes
    /// `write`, and stencil `func EQUAL ref` when `stencil_ref` is set.
    #[allow(clippy::too_many_arguments)]
    fn draw(
        &mut self,
        rect: (u32, u32, u32, u32),
        z: f32,
        func: CompareFunc,
        write: bool,
        stencil_ref: Option<u32>,
    ) {
        let v = quad(rect.0, rect.1, rect.2, rect.3, z);
        self.run(|w| {
            w.upload(3, 0, &v);
            push(
                w,
                Opcode::SetDepthStencilState,
                cmd::SetDepthStencilState {
                    depth_enable: 1,
                    depth_write_enable: u32::from(write),
                    depth_func: func as u32,
                    stencil_enable: u32::from(stencil_ref.is_some()),
                    stencil_read_mask: 0xFF,
                    stencil_write_mask: 0xFF,
                    ..Default::default()
                },
            );
            for (state, value) in [
                (rs::STENCILFUNC, D3DCMP_EQUAL),
                (rs::STENCILREF, stencil_ref.unwrap_or(0)),
            ] {
                push(
                    w,
                    Opcode::SetRenderState,
                    cmd::SetRenderState {
                        state,
                        value,
                        ..Default::default()
                    },
                );
            }
            w.draw(4);
        });
    }

    fn clear_color(&mut self) {
        self.run(|w| {
            w.clear([0.0, 0.0, 0.0, 1.0]);
        });
    }
}

/// The colour image: `DRAWN` where `inside(x, y)`, black elsewhere.
fn image(inside: impl Fn(u32, u32) -> bool) -> Vec<[u8; 4]> {
    (0..H)
        .flat_map(|y| (0..W).map(move |x| (x, y)))
        .map(|(x, y)| if inside(x, y) { DRAWN } else { BG })
        .collect()
}

fn d24s8(z: f32, stencil: u32) -> u32 {
    ((z as f64 * 16_777_215.0).round() as u32) << 8 | stencil
}

#[test]
fn d24s8_uploads_reach_draws_and_drawn_depth_comes_back_as_d24s8_words() {
    let mut rig = Rig::new(Format::D24UnormS8Uint, false);
    // Left half at depth 0.25, right half at 0.75; the stencil is the column index.
    let words: Vec<u8> = (0..H)
        .flat_map(|_| (0..W).map(|x| d24s8(if x < W / 2 { 0.25 } else { 0.75 }, x)))
        .flat_map(u32::to_le_bytes)
        .collect();
    rig.run(|w| {
        w.upload(DEPTH, 0, &words);
    });
    rig.clear_color();
    // LESS at 0.5 without depth writes: only the right half is farther.
    rig.draw((0, 0, W, H), 0.5, CompareFunc::Less, false, None);
    assert_eq!(rig.pixels(), image(|x, _| x >= W / 2));
    assert_eq!(rig.bytes(DEPTH), words, "a draw without depth writes");
    // Stencil EQUAL 5 (depth ALWAYS): column 5 only; every stencil bit made it across.
    rig.clear_color();
    rig.draw((0, 0, W, H), 0.5, CompareFunc::Always, false, Some(5));
    assert_eq!(rig.pixels(), image(|x, _| x == 5));
    // A depth-writing draw over the top two rows: those words get z 0.5, stencil kept.
    rig.draw((0, 0, W, 2), 0.5, CompareFunc::Always, true, None);
    let expect: Vec<u8> = (0..H)
        .flat_map(|y| {
            (0..W).map(move |x| match (y < 2, x < W / 2) {
                (true, _) => d24s8(0.5, x),
                (false, true) => d24s8(0.25, x),
                (false, false) => d24s8(0.75, x),
            })
        })
        .flat_map(u32::to_le_bytes)
        .collect();
    assert_eq!(rig.bytes(DEPTH), expect);
    // Exactly 0x800000 (round(0.5 * 0xFFFFFF)) in bits 31..8, stencil 0 in column 0.
    assert_eq!(&rig.bytes(DEPTH)[..4], &0x8000_0000u32.to_le_bytes());
}

#[test]
fn rectangle_depth_clears_reach_draws() {
    // The D3D9 suite's depth_stencil cell 4: a depth Clear of a rectangle, then
    // GREATER-tested draws.
    for format in [Format::D24UnormS8Uint, Format::D16Unorm, Format::D32Float] {
        let mut rig = Rig::new(format, false);
        rig.run(|w| {
            push(
                w,
                Opcode::Clear,
                cmd::Clear {
                    flags: cmd::CLEAR_DEPTH | cmd::CLEAR_STENCIL,
                    depth_f32: 1.0f32.to_bits(),
                    ..Default::default()
                },
            );
        });
        // Whole-surface depth drawn first (the attachment is newer than the raw copy).
        rig.draw((0, 0, W, H), 0.0, CompareFunc::Always, true, None);
        let mut rect = [0u8; cmd::ClearRect::SIZE];
        cmd::ClearRect {
            x: 4,
            y: 0,
            width: 4,
            height: 4,
        }
        .write_le(&mut rect);
        rig.run(|w| {
            let p = cmd::ClearRects {
                flags: cmd::CLEAR_DEPTH,
                depth_f32: 0.5f32.to_bits(),
                rect_count: 1,
                ..Default::default()
            };
            w.push(Opcode::ClearRects, &p, &rect);
        });
        rig.clear_color();
        rig.draw((0, 0, W, 2), 0.25, CompareFunc::Greater, false, None);
        rig.draw((0, 2, W, H), 0.75, CompareFunc::Greater, false, None);
        // Left: depth 0 from the draw, both pass; right: 0.5, only 0.75 passes.
        assert_eq!(rig.pixels(), image(|x, y| x < 4 || y >= 2), "{format:?}");
    }
}

#[test]
fn d16_and_d32f_drawn_depth_reads_back_in_guest_layout() {
    let mut rig = Rig::new(Format::D16Unorm, false);
    rig.run(|w| {
        w.upload(DEPTH, 0, &0xFFFFu16.to_le_bytes().repeat((W * H) as usize));
    });
    rig.draw((0, 0, W, H), 0.5, CompareFunc::Less, true, None);
    assert_eq!(
        rig.bytes(DEPTH),
        0x8000u16.to_le_bytes().repeat((W * H) as usize)
    );

    let mut rig = Rig::new(Format::D32Float, false);
    let values: Vec<u8> = (0..W * H)
        .flat_map(|i| if i % 2 == 0 { 0.125f32 } else { 0.875 }.to_le_bytes())
        .collect();
    rig.run(|w| {
        w.upload(DEPTH, 0, &values);
    });
    rig.clear_color();
    rig.draw((0, 0, W, H), 0.5, CompareFunc::Less, false, None);
    assert_eq!(rig.pixels(), image(|x, y| (y * W + x) % 2 == 1));
    rig.draw((0, 0, W, H), 0.375, CompareFunc::Always, true, None);
    assert_eq!(
        rig.bytes(DEPTH),
        0.375f32.to_le_bytes().repeat((W * H) as usize)
    );
}

#[test]
fn drawn_depth_copies_and_writes_back_and_dirty_ranges_reach_draws() {
    // The depth surface is guest-backed (alloc 1 at 0x1000); a second D24S8 surface is
    // guest-backed at 0x2000.
    let mut rig = Rig::new(Format::D24UnormS8Uint, true);
    rig.run(|w| {
        w.create_texture2d(7, Format::D24UnormS8Uint as u32, W, H, 2);
        push(
            w,
            Opcode::Clear,
            cmd::Clear {
                flags: cmd::CLEAR_DEPTH | cmd::CLEAR_STENCIL,
                depth_f32: 1.0f32.to_bits(),
                stencil: 0x5A,
                ..Default::default()
            },
        );
    });
    rig.draw((2, 1, 6, 3), 0.25, CompareFunc::Less, true, None);
    // COPY_TEXTURE2D with write-back: the drawn words land in guest memory at 0x2000.
    rig.run(|w| {
        push(
            w,
            Opcode::CopyTexture2d,
            cmd::CopyTexture2d {
                dst_texture: 7,
                src_texture: DEPTH,
                width: W,
                height: H,
                flags: cmd::COPY_FLAG_WRITEBACK_DST,
                ..Default::default()
            },
        );
    });
    let expect: Vec<u8> = (0..H)
        .flat_map(|y| {
            (0..W).map(move |x| {
                let inside = (2..6).contains(&x) && (1..3).contains(&y);
                d24s8(if inside { 0.25 } else { 1.0 }, 0x5A)
            })
        })
        .flat_map(u32::to_le_bytes)
        .collect();
    assert_eq!(rig.mem.bytes[0x2000..0x2000 + expect.len()], expect[..]);
    // The guest rewrites row 3 of the depth surface (depth 0) and says so: draws see it.
    let row: Vec<u8> = (0..W).flat_map(|_| d24s8(0.0, 0).to_le_bytes()).collect();
    let at = 0x1000 + (3 * W * 4) as usize;
    rig.mem.bytes[at..at + row.len()].copy_from_slice(&row);
    rig.run(|w| {
        push(
            w,
            Opcode::ResourceDirtyRange,
            cmd::ResourceDirtyRange {
                resource_handle: DEPTH,
                offset_bytes: u64::from(3 * W * 4),
                size_bytes: row.len() as u64,
                ..Default::default()
            },
        );
    });
    rig.clear_color();
    rig.draw((0, 0, W, H), 0.5, CompareFunc::Less, false, None);
    assert_eq!(
        rig.pixels(),
        image(|x, y| y < 3 && !((2..6).contains(&x) && (1..3).contains(&y)))
    );
}

#[test]
fn d24s8_words_survive_the_attachment_round_trip_exactly() {
    let mut rig = Rig::new(Format::D24UnormS8Uint, false);
    // Edge values and a spread over the 24-bit range, each with its own stencil.
    let mut zs = vec![0u32, 1, 2, 0x7F_FFFF, 0x80_0000, 0xFF_FFFE, 0xFF_FFFF];
    zs.extend((0..(W * H) - zs.len() as u32).map(|i| i.wrapping_mul(0x09E3_779B) & 0xFF_FFFF));
    let words: Vec<u8> = zs
        .iter()
        .enumerate()
        .flat_map(|(i, z)| (z << 8 | (i as u32 * 37) & 0xFF).to_le_bytes())
        .collect();
    rig.run(|w| {
        w.upload(DEPTH, 0, &words);
    });
    // A draw that tests but writes nothing: the attachment is read back afterwards.
    rig.draw((0, 0, W, H), 0.5, CompareFunc::Never, false, None);
    assert_eq!(rig.bytes(DEPTH), words);
}

#[test]
fn d16_values_survive_the_attachment_round_trip_exactly() {
    let mut rig = Rig::new(Format::D16Unorm, false);
    let mut zs = vec![0u16, 1, 2, 0x7FFF, 0x8000, 0xFFFE, 0xFFFF];
    zs.extend((0..(W * H) as usize - zs.len()).map(|i| (i as u16).wrapping_mul(0x9E37)));
    let bytes: Vec<u8> = zs.iter().flat_map(|z| z.to_le_bytes()).collect();
    rig.run(|w| {
        w.upload(DEPTH, 0, &bytes);
    });
    rig.draw((0, 0, W, H), 0.5, CompareFunc::Never, false, None);
    assert_eq!(rig.bytes(DEPTH), bytes);
}

/// A W x H `format` texture of `blocks`, point-sampled over the whole target (texel
/// centres on pixel centres), by the native BC path or the CPU-decoding fallback.
fn sample_bc(format: Format, blocks: &[u8], fallback: bool) -> Vec<[u8; 4]> {
    let mut exec = WgpuExecutor::new_headless(SoftExecutorConfig::default()).expect("wgpu device");
    if fallback {
        exec = exec.with_bc_fallback();
    }
    let mut rig = Rig::with_executor(exec, Format::D24UnormS8Uint, false);
    let mut v = Vec::new();
    for (x, y) in [(0, 0), (W, 0), (0, H), (W, H)] {
        let cx = (x as f32 - 0.5) * 2.0 / W as f32 - 1.0;
        let cy = 1.0 - (y as f32 - 0.5) * 2.0 / H as f32;
        let (u, t) = (x as f32 / W as f32, y as f32 / H as f32);
        for f in [cx, cy, 0.5, 1.0, u, t] {
            v.extend_from_slice(&f.to_le_bytes());
        }
    }
    rig.run(|w| {
        w.create_texture2d(8, format as u32, W, H, 0);
        w.upload(8, 0, blocks);
        program(
            w,
            (9, 10, 11),
            "vs_2_0\ndcl_position v0\ndcl_texcoord v1\nmov oPos, v0\nmov oT0, v1\n",
            "ps_2_0\ndcl t0.xy\ndcl_2d s0\ntexld r0, t0, s0\nmov oC0, r0\n",
            &[(0, 3, 0), (16, 1, 5)],
        );
        vertex_buffer(w, 3, 24);
        push(
            w,
            Opcode::SetTexture,
            cmd::SetTexture {
                shader_stage: ShaderStage::Pixel as u32,
                slot: 0,
                texture: 8,
                ..Default::default()
            },
        );
        push(
            w,
            Opcode::SetDepthStencilState,
            cmd::SetDepthStencilState::default(),
        );
        w.upload(3, 0, &v);
        w.draw(4);
    });
    rig.pixels()
}

#[test]
fn bc_textures_decoded_on_the_cpu_sample_like_native_bc() {
    for (format, kind) in [
        (Format::Bc1Unorm, BcKind::Bc1),
        (Format::Bc2Unorm, BcKind::Bc2),
        (Format::Bc3Unorm, BcKind::Bc3),
    ] {
        // Two blocks of varied bytes (BC1's first block in 4-colour mode, the second in
        // 3-colour mode with transparent black).
        let mut blocks: Vec<u8> = (0..2 * kind.block_bytes() as u32)
            .map(|i| (i.wrapping_mul(0x9E37_79B9) >> 13) as u8)
            .collect();
        if kind == BcKind::Bc1 {
            blocks[..4].copy_from_slice(&[0x00, 0xF8, 0x1F, 0x00]); // c0 red > c1 blue
            blocks[8..12].copy_from_slice(&[0x1F, 0x00, 0xE0, 0x07]); // c0 blue <= c1 green
        }
        let fallback = sample_bc(format, &blocks, true);
        let native = sample_bc(format, &blocks, false);
        // The fallback shows exactly what bc_decode decodes (BGRA target).
        let decoded = bc_decode::decode(kind, &blocks, 2, 1).unwrap();
        let expect: Vec<[u8; 4]> = decoded
            .chunks_exact(4)
            .map(|p| [p[2], p[1], p[0], p[3]])
            .collect();
        assert_eq!(fallback, expect, "{format:?}");
        // Native BC agrees up to the last bit of interpolated values (llvmpipe rounds
        // DXT blends differently).
        for (i, (n, f)) in native.iter().zip(&fallback).enumerate() {
            assert!(
                n.iter().zip(f).all(|(a, b)| a.abs_diff(*b) <= 1),
                "{format:?} texel {i}: native {n:?} fallback {f:?}"
            );
        }
    }
}

/// Samples texture handle 8 (created by `create`) at constant coordinate `coord` with
/// `ps` (reading c0 through s0) over the whole target; returns pixel (0, 0), BGRA.
fn sample_at(create: impl Fn(&mut CmdStreamWriter), ps: &str, coords: &[[f32; 4]]) -> Vec<[u8; 4]> {
    let mut rig = Rig::new(Format::D24UnormS8Uint, false);
    rig.run(|w| {
        create(w);
        program(
            w,
            (9, 10, 11),
            "vs_2_0\ndcl_position v0\nmov oPos, v0\n",
            ps,
            &[(0, 3, 0)],
        );
        push(
            w,
            Opcode::SetTexture,
            cmd::SetTexture {
                shader_stage: ShaderStage::Pixel as u32,
                slot: 0,
                texture: 8,
                ..Default::default()
            },
        );
        push(
            w,
            Opcode::SetDepthStencilState,
            cmd::SetDepthStencilState::default(),
        );
        w.upload(3, 0, &quad(0, 0, W, H, 0.5));
    });
    coords
        .iter()
        .map(|c| {
            rig.run(|w| {
                let data: Vec<u8> = c.iter().flat_map(|f| f.to_le_bytes()).collect();
                let p = cmd::SetShaderConstants {
                    stage: ShaderStage::Pixel as u32,
                    start_register: 0,
                    count: 1,
                    ..Default::default()
                };
                w.push(Opcode::SetShaderConstantsF, &p, &data);
                w.draw(4);
            });
            rig.pixels()[0]
        })
        .collect()
}

fn bgra(c: u32) -> [u8; 4] {
    c.to_le_bytes()
}

#[test]
fn cube_faces_upload_in_face_order_and_sample_by_direction() {
    // 2x2 faces with 2 mips: each face's mip 0 is one colour, its 1x1 mip another.
    let faces = [
        0xFFFF_0000u32,
        0xFF00_FF00,
        0xFF00_00FF,
        0xFFFF_FF00,
        0xFF00_FFFF,
        0xFFFF_00FF,
    ];
    let create = |w: &mut CmdStreamWriter| {
        let p = cmd::CreateTexture2d {
            texture_handle: 8,
            usage_flags: cmd::RESOURCE_USAGE_TEXTURE,
            format: Format::B8G8R8A8Unorm as u32,
            width: 2,
            height: 2,
            mip_levels: 2,
            array_layers: 6,
            flags: cmd::TEXTURE_FLAG_CUBE,
            ..Default::default()
        };
        w.push(Opcode::CreateTexture2d, &p, &[]);
        let mut bytes = Vec::new();
        for c in faces {
            for _ in 0..4 {
                bytes.extend_from_slice(&c.to_le_bytes());
            }
            bytes.extend_from_slice(&0xFF80_8080u32.to_le_bytes()); // mip 1
        }
        w.upload(8, 0, &bytes);
    };
    let ps = "ps_2_0\ndcl_cube s0\ntexld r0, c0, s0\nmov oC0, r0\n";
    let dirs = [
        [1.0, 0.2, 0.1, 0.0],
        [-1.0, 0.2, 0.1, 0.0],
        [0.1, 1.0, 0.2, 0.0],
        [0.1, -1.0, 0.2, 0.0],
        [0.2, 0.1, 1.0, 0.0],
        [0.2, 0.1, -1.0, 0.0],
    ];
    let got = sample_at(create, ps, &dirs);
    let want: Vec<[u8; 4]> = faces.iter().map(|&c| bgra(c)).collect();
    assert_eq!(got, want, "+X -X +Y -Y +Z -Z");
}

#[test]
fn volume_slices_upload_in_layout_order_and_sample_by_depth() {
    // 2x2x3 with 2 mips: slice z of mip 0 is one colour; mip 1 (1x1x1) another.
    let slices = [0xFFFF_0000u32, 0xFF00_FF00, 0xFF00_00FF];
    let create = |w: &mut CmdStreamWriter| {
        let p = cmd::CreateTexture2d {
            texture_handle: 8,
            usage_flags: cmd::RESOURCE_USAGE_TEXTURE,
            format: Format::B8G8R8A8Unorm as u32,
            width: 2,
            height: 2,
            mip_levels: 2,
            array_layers: 1,
            flags: cmd::TEXTURE_FLAG_VOLUME,
            depth: 3,
            ..Default::default()
        };
        w.push(Opcode::CreateTexture2d, &p, &[]);
        let mut bytes = Vec::new();
        for c in slices {
            for _ in 0..4 {
                bytes.extend_from_slice(&c.to_le_bytes());
            }
        }
        bytes.extend_from_slice(&0xFF80_8080u32.to_le_bytes());
        w.upload(8, 0, &bytes);
    };
    let ps = "ps_2_0\ndcl_volume s0\ntexld r0, c0, s0\nmov oC0, r0\n";
    let coords: Vec<[f32; 4]> = (0..3)
        .map(|z| [0.25, 0.75, (z as f32 + 0.5) / 3.0, 0.0])
        .collect();
    let got = sample_at(create, ps, &coords);
    let want: Vec<[u8; 4]> = slices.iter().map(|&c| bgra(c)).collect();
    assert_eq!(got, want, "slices 0, 1, 2");
    // A 2D sampler over a volume reads as unbound (0, 0, 0, 1), never another view.
    let got = sample_at(
        create,
        "ps_2_0\ndcl_2d s0\ntexld r0, c0, s0\nmov oC0, r0\n",
        &coords[..1],
    );
    assert_eq!(got, vec![[0, 0, 0, 0xFF]]);
}
