//! Batched draws through the processor: one submission and one render pass for a run of
//! draws into the same target, each draw still seeing its own constants and vertices.

use aero_protocol::Wire;
use aero_protocol::cmd::{self, Opcode, PrimitiveTopology, ShaderStage};
use aero_protocol::pci::Format;
use aero_protocol::writer::CmdStreamWriter;

use super::super::executor_draw_tests::program;
use crate::aerogpu::{
    AllocTable, CommandProcessor, Limits, SoftExecutorConfig, VecMemory, WgpuExecutor,
};

const W: u32 = 8;
const H: u32 = 2;
const COLOR: u32 = 1;
const VB: u32 = 2;
const OTHER: u32 = 3;
/// Bytes of one quad: four (x, y, z, w) positions.
const QUAD: u32 = 64;

struct Rig {
    p: CommandProcessor,
    mem: VecMemory,
    table: AllocTable,
    exec: WgpuExecutor,
}

fn push<T: Wire>(w: &mut CmdStreamWriter, op: Opcode, p: T) {
    w.push(op, &p, &[]);
}

/// Columns [x0, x1) over the whole height, as a triangle strip.
fn columns(x0: u32, x1: u32) -> Vec<u8> {
    let cx = |x: u32| (x as f32 - 0.5) * 2.0 / W as f32 - 1.0;
    let (top, bottom) = (1.0 + 1.0 / H as f32, -1.0 - 1.0 / H as f32);
    [(x0, top), (x1, top), (x0, bottom), (x1, bottom)]
        .iter()
        .flat_map(|&(x, y)| [cx(x), y, 0.5, 1.0])
        .flat_map(f32::to_le_bytes)
        .collect()
}

/// The colour draw `i` uses (pixel shader constant c0), as BGRA bytes.
fn colour(i: u32) -> [u8; 4] {
    [0x10 * i as u8, 0x40, 0xFF - 0x20 * i as u8, 0xFF]
}

impl Rig {
    fn new() -> Rig {
        Rig::with(WgpuExecutor::new_headless(SoftExecutorConfig::default()).expect("wgpu device"))
    }

    fn with(exec: WgpuExecutor) -> Rig {
        let mut rig = Rig {
            p: CommandProcessor::new(Limits::default()),
            mem: VecMemory::new(1 << 16),
            table: AllocTable::new(),
            exec,
        };
        rig.run(|w| {
            w.create_texture2d(COLOR, Format::B8G8R8A8Unorm as u32, W, H, 0);
            w.create_texture2d(OTHER, Format::B8G8R8A8Unorm as u32, W, H, 0);
            w.create_buffer(VB, cmd::RESOURCE_USAGE_VERTEX_BUFFER, 4096, 0, 0);
            program(
                w,
                (4, 5, 6),
                "vs_2_0\ndcl_position v0\nmov oPos, v0\n",
                "ps_2_0\nmov oC0, c0\n",
                &[(0, 3, 0)],
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
        self.try_run(f).unwrap();
    }

    /// The stream's result: the first failed command's error.
    fn try_run(&mut self, f: impl FnOnce(&mut CmdStreamWriter)) -> Result<(), String> {
        let mut w = CmdStreamWriter::new();
        f(&mut w);
        let stream = w.finish();
        self.p
            .process(&stream, &self.table, &mut self.mem, &mut self.exec)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn pixels(&self, handle: u32) -> Vec<[u8; 4]> {
        let id = self.p.objects().resource(handle).unwrap().0;
        self.exec
            .resource_bytes(id)
            .unwrap()
            .chunks_exact(4)
            .map(|p| [p[0], p[1], p[2], p[3]])
            .collect()
    }
}

fn target(w: &mut CmdStreamWriter, handle: u32) {
    push(
        w,
        Opcode::SetRenderTargets,
        cmd::SetRenderTargets {
            color_count: 1,
            colors: [handle, 0, 0, 0, 0, 0, 0, 0],
            ..Default::default()
        },
    );
}

/// Draw `i`: columns [2i, 2i + 2) from vertices uploaded at `offset`, colour `i` in c0.
fn draw_columns(w: &mut CmdStreamWriter, i: u32, offset: u32) {
    w.upload(VB, u64::from(offset), &columns(2 * i, 2 * i + 2));
    let mut binding = [0u8; 16];
    binding[..4].copy_from_slice(&VB.to_le_bytes());
    binding[4..8].copy_from_slice(&16u32.to_le_bytes());
    binding[8..12].copy_from_slice(&offset.to_le_bytes());
    let p = cmd::SetVertexBuffers {
        start_slot: 0,
        buffer_count: 1,
        ..Default::default()
    };
    w.push(Opcode::SetVertexBuffers, &p, &binding);
    let [b, g, r, a] = colour(i);
    let c0: Vec<u8> = [r, g, b, a]
        .iter()
        .flat_map(|&v| (f32::from(v) / 255.0).to_le_bytes())
        .collect();
    let p = cmd::SetShaderConstants {
        stage: ShaderStage::Pixel as u32,
        start_register: 0,
        count: 1,
        ..Default::default()
    };
    w.push(Opcode::SetShaderConstantsF, &p, &c0);
    w.draw(4);
}

/// Every pixel of the target: draw x / 2's colour.
fn expected() -> Vec<[u8; 4]> {
    (0..H).flat_map(|_| (0..W).map(|x| colour(x / 2))).collect()
}

#[test]
fn a_run_of_draws_into_one_target_is_one_pass_and_one_submission() {
    let mut rig = Rig::new();
    let before = rig.exec.batch_stats();
    rig.run(|w| {
        target(w, COLOR);
        w.clear([0.0, 0.0, 0.0, 1.0]);
        // Vertices at fresh offsets (as the UMD's upload ring writes them).
        for i in 0..4 {
            draw_columns(w, i, i * QUAD);
        }
    });
    let after = rig.exec.batch_stats();
    assert_eq!(after.draws - before.draws, 4);
    assert_eq!(after.passes - before.passes, 1, "one render pass");
    assert_eq!(after.submits - before.submits, 1, "one submission");
    assert_eq!(
        rig.pixels(COLOR),
        expected(),
        "each draw kept its constants"
    );
}

#[test]
fn rewriting_vertices_a_batched_draw_reads_submits_it_first() {
    let mut rig = Rig::new();
    let before = rig.exec.batch_stats();
    rig.run(|w| {
        target(w, COLOR);
        w.clear([0.0, 0.0, 0.0, 1.0]);
        // Every draw's vertices at offset 0: each upload overwrites what the previous
        // draw reads, so the batch must be submitted before the upload lands.
        for i in 0..4 {
            draw_columns(w, i, 0);
        }
    });
    let after = rig.exec.batch_stats();
    assert_eq!(after.submits - before.submits, 4);
    assert_eq!(rig.pixels(COLOR), expected());
}

#[test]
fn a_clear_of_a_batched_target_and_a_new_target_keep_their_order() {
    let mut rig = Rig::new();
    let before = rig.exec.batch_stats();
    rig.run(|w| {
        target(w, COLOR);
        w.clear([0.0, 0.0, 0.0, 1.0]);
        draw_columns(w, 0, 0);
        // Another target: a second pass in the same batch.
        target(w, OTHER);
        w.clear([0.0, 0.0, 0.0, 1.0]);
        draw_columns(w, 1, QUAD);
        // Back to the first target, cleared again: the clear (a queue write) must come
        // after draw 0, so the batch is submitted first.
        target(w, COLOR);
        w.clear([0.0, 0.0, 0.0, 1.0]);
        draw_columns(w, 2, 2 * QUAD);
    });
    let after = rig.exec.batch_stats();
    assert_eq!(after.submits - before.submits, 2);
    assert_eq!(after.passes - before.passes, 3);
    let black = [0, 0, 0, 0xFF];
    let row = |x: u32, lit: u32| if x / 2 == lit { colour(lit) } else { black };
    let want = |lit| -> Vec<[u8; 4]> {
        (0..H)
            .flat_map(|_| (0..W).map(move |x| row(x, lit)))
            .collect()
    };
    assert_eq!(rig.pixels(COLOR), want(2));
    assert_eq!(rig.pixels(OTHER), want(1));
}

/// Binds the pixel shader that writes what sampler 0 reads at texel (0, 0) (coordinates
/// in c1), with `texture` on sampler 0.
fn sample_texel_0(w: &mut CmdStreamWriter, texture: u32) {
    program(
        w,
        (8, 7, 10),
        "vs_2_0\ndcl_position v0\nmov oPos, v0\n",
        "ps_2_0\ndcl_2d s0\ntexld r0, c1, s0\nmov oC0, r0\n",
        &[(0, 3, 0)],
    );
    let c1: Vec<u8> = [0.5 / W as f32, 0.5 / H as f32, 0.0, 1.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let p = cmd::SetShaderConstants {
        stage: ShaderStage::Pixel as u32,
        start_register: 1,
        count: 1,
        ..Default::default()
    };
    w.push(Opcode::SetShaderConstantsF, &p, &c1);
    push(
        w,
        Opcode::SetTexture,
        cmd::SetTexture {
            shader_stage: ShaderStage::Pixel as u32,
            slot: 0,
            texture,
            ..Default::default()
        },
    );
}

/// Binds the shader that writes c0 (the rig's own) again.
fn write_c0(w: &mut CmdStreamWriter) {
    let p = cmd::BindShaders {
        vs: 4,
        ps: 5,
        ..Default::default()
    };
    push(w, Opcode::BindShaders, p);
}

#[test]
fn a_draw_sampling_its_own_target_reads_what_the_target_held_before_it() {
    let mut rig = Rig::new();
    let before = rig.exec.batch_stats();
    rig.run(|w| {
        target(w, COLOR);
        w.clear([0.0, 0.0, 0.0, 1.0]);
        draw_columns(w, 0, 0);
        // Columns 2-3 from texel (0, 0) of the target itself: draw 0's colour.
        sample_texel_0(w, COLOR);
        draw_columns(w, 1, QUAD);
        write_c0(w);
        draw_columns(w, 2, 2 * QUAD);
        draw_columns(w, 3, 3 * QUAD);
    });
    let after = rig.exec.batch_stats();
    assert_eq!(after.draws - before.draws, 4);
    assert_eq!(
        after.submits - before.submits,
        1,
        "the copy rides in the batch"
    );
    let want: Vec<[u8; 4]> = (0..H)
        .flat_map(|_| (0..W).map(|x| colour(if x / 2 == 1 { 0 } else { x / 2 })))
        .collect();
    assert_eq!(rig.pixels(COLOR), want, "no draw lost");
}

#[test]
fn a_draw_sampling_two_of_its_targets_reads_each_ones_own_copy() {
    let mut rig = Rig::new();
    let black = [0, 0, 0, 0xFF];
    let white = [0xFF; 4];
    rig.run(|w| {
        target(w, COLOR);
        w.clear([0.0, 0.0, 0.0, 1.0]);
        target(w, OTHER);
        w.clear([1.0, 1.0, 1.0, 1.0]);
        // Both targets of one shape bound and sampled by one draw: s0 reads COLOR,
        // s1 reads OTHER, and each target gets back what it held at texel (0, 0).
        push(
            w,
            Opcode::SetRenderTargets,
            cmd::SetRenderTargets {
                color_count: 2,
                colors: [COLOR, OTHER, 0, 0, 0, 0, 0, 0],
                ..Default::default()
            },
        );
        program(
            w,
            (11, 12, 13),
            "vs_2_0\ndcl_position v0\nmov oPos, v0\n",
            "ps_2_0\ndcl_2d s0\ndcl_2d s1\ntexld r0, c1, s0\ntexld r1, c1, s1\n\
             mov oC0, r0\nmov oC1, r1\n",
            &[(0, 3, 0)],
        );
        let c1: Vec<u8> = [0.5 / W as f32, 0.5 / H as f32, 0.0, 1.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let p = cmd::SetShaderConstants {
            stage: ShaderStage::Pixel as u32,
            start_register: 1,
            count: 1,
            ..Default::default()
        };
        w.push(Opcode::SetShaderConstantsF, &p, &c1);
        for (slot, texture) in [(0, COLOR), (1, OTHER)] {
            push(
                w,
                Opcode::SetTexture,
                cmd::SetTexture {
                    shader_stage: ShaderStage::Pixel as u32,
                    slot,
                    texture,
                    ..Default::default()
                },
            );
        }
        draw_columns(w, 0, 0);
    });
    // A shared copy would hold OTHER's white in both.
    assert_eq!(rig.pixels(COLOR), vec![black; (W * H) as usize]);
    assert_eq!(rig.pixels(OTHER), vec![white; (W * H) as usize]);
}

/// Draw 0 batched, then `hostile` (a draw wgpu would refuse only when the pass ends):
/// the hostile draw fails alone with `error`, and draw 0 still lands.
fn fails_alone(hostile: impl FnOnce(&mut CmdStreamWriter), error: &str) {
    fails_alone_on(Rig::new(), hostile, error);
}

fn fails_alone_on(mut rig: Rig, hostile: impl FnOnce(&mut CmdStreamWriter), error: &str) {
    let result = rig.try_run(|w| {
        target(w, COLOR);
        w.clear([0.0, 0.0, 0.0, 1.0]);
        draw_columns(w, 0, 0);
        hostile(w);
    });
    let e = result.expect_err("the hostile draw fails");
    assert!(e.contains(error), "{e}");
    // The device goes on: the batch still holds draw 0, and later streams draw.
    rig.run(|w| {
        target(w, COLOR);
        write_c0(w);
        draw_columns(w, 1, QUAD);
    });
    let black = [0, 0, 0, 0xFF];
    let want: Vec<[u8; 4]> = (0..H)
        .flat_map(|_| (0..W).map(|x| if x / 2 < 2 { colour(x / 2) } else { black }))
        .collect();
    assert_eq!(rig.pixels(COLOR), want);
}

#[test]
fn a_draw_past_the_end_of_its_vertex_buffer_fails_alone() {
    // 4096 bytes of 16-byte vertices: 256 of them; 257 from offset 0 read past it.
    fails_alone(
        |w| {
            w.draw(257);
        },
        "vertex stream 0",
    );
}

#[test]
fn a_depth_buffer_of_another_size_fails_alone() {
    fails_alone(
        |w| {
            w.create_texture2d(9, Format::D24UnormS8Uint as u32, W * 2, H, 0);
            push(
                w,
                Opcode::SetRenderTargets,
                cmd::SetRenderTargets {
                    color_count: 1,
                    colors: [COLOR, 0, 0, 0, 0, 0, 0, 0],
                    depth_stencil: 9,
                    ..Default::default()
                },
            );
            w.draw(4);
        },
        "another size",
    );
}

#[test]
fn render_targets_of_different_sizes_or_bound_twice_fail_alone() {
    for (colors, error) in [
        ([COLOR, 9], "different sizes"),
        ([COLOR, COLOR], "bound twice"),
    ] {
        fails_alone(
            |w| {
                w.create_texture2d(9, Format::B8G8R8A8Unorm as u32, W, H * 2, 0);
                push(
                    w,
                    Opcode::SetRenderTargets,
                    cmd::SetRenderTargets {
                        color_count: 2,
                        colors: [colors[0], colors[1], 0, 0, 0, 0, 0, 0],
                        ..Default::default()
                    },
                );
                w.draw(4);
            },
            error,
        );
    }
}

#[test]
fn a_texture_that_cannot_be_rendered_to_as_target_fails_alone() {
    // A DXT1 texture decoded on the CPU: an RGBA8 texture the GPU must never write (its
    // blocks live on the host), so it has no attachment usage; the pipeline for RGBA8
    // builds, only the pass would fail.
    let exec = WgpuExecutor::new_headless(SoftExecutorConfig::default())
        .expect("wgpu device")
        .with_bc_fallback();
    fails_alone_on(
        Rig::with(exec),
        |w| {
            w.create_texture2d(9, Format::Bc1Unorm as u32, W, 4, 0);
            target(w, 9);
            w.draw(4);
        },
        "not usable",
    );
}
