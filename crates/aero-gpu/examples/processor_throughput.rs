//! Command-processor throughput on a DWM-like stream: each submission is one frame of
//! 64 alpha-blended textured window quads at 1280x1024 (a dirty range over the vertex
//! buffer the guest rewrote, a clear, then per window a constant set, a texture bind and
//! a 4-vertex strip draw; one present), fed through the ring, the validating processor
//! and an executor, like a driver would. Reports validated commands/s, draws/s and
//! frames/s for the NullExecutor (processor cost alone) and for the wgpu executor
//! (WGPU_BACKEND picks the adapter; Mesa lavapipe on a machine without a GPU), the
//! latter also with the frames' PRESENT left out, which shows what presenting costs.
//!
//! `cargo run --release -p aero-gpu --example processor_throughput [null|wgpu|both] [frames]`
//! (defaults: both; 20000 frames on the NullExecutor, 200 on wgpu).

mod common;

use std::time::Instant;

use aero_gpu::aerogpu::{
    AeroGpu, AeroGpuConfig, Executor, GuestMemory, NullExecutor, SoftExecutorConfig, VecMemory,
    WgpuExecutor,
};
use aero_protocol::cmd::{self, BlendFactor, BlendOp, Opcode, PrimitiveTopology, ShaderStage};
use aero_protocol::pci::Format;
use aero_protocol::ring::AllocEntry;
use aero_protocol::writer::{CmdStreamWriter, encode_alloc_table};

const W: u32 = 1280;
const H: u32 = 1024;
const WINDOWS: u32 = 64;
const TEXTURES: u32 = 8;
const TEX_SIZE: u32 = 128;
/// Four vertices of (x, y, z, w, u, v) floats per window.
const VERTEX_STRIDE: u32 = 24;
const VB_BYTES: u64 = (WINDOWS * 4 * VERTEX_STRIDE) as u64;

const ENTRIES: u32 = 64;
const TABLE_GPA: u64 = 0x8_0000;
const SETUP_GPA: u64 = 0x10_0000;
const FRAME_GPA: u64 = 0x20_0000;
const VB_GPA: u64 = 0x30_0000;
const TEX_GPA: u64 = 0x40_0000;

// Handles.
const TARGET: u32 = 1;
const VB: u32 = 2;
const VS: u32 = 3;
const PS: u32 = 4;
const LAYOUT: u32 = 5;
const FIRST_TEXTURE: u32 = 10;

/// vs_2_0: dcl_position v0; dcl_texcoord v1; mov oPos, v0; mov oT0, v1.
const TEX_VS: [u32; 14] = [
    0xFFFE0200, 0x0200001F, 0x80000000, 0x900F0000, 0x0200001F, 0x80000005, 0x900F0001, 0x02000001,
    0xC00F0000, 0x90E40000, 0x02000001, 0xE00F0000, 0x90E40001, 0x0000FFFF,
];
/// ps_2_0: dcl t0.xy; dcl_2d s0; texld r0, t0, s0; mov oC0, r0.
const TEX_PS: [u32; 15] = [
    0xFFFF0200, 0x0200001F, 0x80000000, 0xB0030000, 0x0200001F, 0x90000000, 0xA00F0800, 0x03000042,
    0x800F0000, 0xB0E40000, 0xA0E40800, 0x02000001, 0x800F0800, 0x80E40000, 0x0000FFFF,
];

fn words(t: &[u32]) -> Vec<u8> {
    t.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Textures, vertex buffer, shaders, the vertex declaration and the fixed state.
fn setup_stream() -> Vec<u8> {
    let mut w = CmdStreamWriter::new();
    w.create_texture2d(TARGET, Format::B8G8R8A8Unorm as u32, W, H, 0);
    w.create_buffer(VB, cmd::RESOURCE_USAGE_VERTEX_BUFFER, VB_BYTES, 1, 0);
    for t in 0..TEXTURES {
        w.create_texture2d(
            FIRST_TEXTURE + t,
            Format::B8G8R8A8Unorm as u32,
            TEX_SIZE,
            TEX_SIZE,
            2 + t,
        );
    }
    for (handle, stage, t) in [
        (VS, ShaderStage::Vertex, &TEX_VS[..]),
        (PS, ShaderStage::Pixel, &TEX_PS[..]),
    ] {
        let bytes = words(t);
        let p = cmd::CreateShader {
            shader_handle: handle,
            stage: stage as u32,
            bytecode_size_bytes: bytes.len() as u32,
            ..Default::default()
        };
        w.push(Opcode::CreateShader, &p, &bytes);
    }
    // D3DVERTEXELEMENT9: FLOAT4 POSITION at 0, FLOAT2 TEXCOORD at 16, D3DDECL_END.
    let mut decl = Vec::new();
    for (offset, ty, usage) in [(0u16, 3u8, 0u8), (16, 1, 5)] {
        decl.extend_from_slice(&0u16.to_le_bytes());
        decl.extend_from_slice(&offset.to_le_bytes());
        decl.extend_from_slice(&[ty, 0, usage, 0]);
    }
    decl.extend_from_slice(&[0xFF, 0, 0, 0, 17, 0, 0, 0]);
    let p = cmd::CreateInputLayout {
        input_layout_handle: LAYOUT,
        blob_size_bytes: decl.len() as u32,
        ..Default::default()
    };
    w.push(Opcode::CreateInputLayout, &p, &decl);
    let p = cmd::BindShaders {
        vs: VS,
        ps: PS,
        ..Default::default()
    };
    w.push(Opcode::BindShaders, &p, &[]);
    let p = cmd::SetInputLayout {
        input_layout_handle: LAYOUT,
        ..Default::default()
    };
    w.push(Opcode::SetInputLayout, &p, &[]);
    let mut binding = [0u8; 16];
    binding[..4].copy_from_slice(&VB.to_le_bytes());
    binding[4..8].copy_from_slice(&VERTEX_STRIDE.to_le_bytes());
    let p = cmd::SetVertexBuffers {
        start_slot: 0,
        buffer_count: 1,
        ..Default::default()
    };
    w.push(Opcode::SetVertexBuffers, &p, &binding);
    let mut colors = [0u32; 8];
    colors[0] = TARGET;
    let p = cmd::SetRenderTargets {
        color_count: 1,
        colors,
        ..Default::default()
    };
    w.push(Opcode::SetRenderTargets, &p, &[]);
    let p = cmd::SetPrimitiveTopology {
        topology: PrimitiveTopology::TriangleStrip as u32,
        ..Default::default()
    };
    w.push(Opcode::SetPrimitiveTopology, &p, &[]);
    let p = cmd::SetRasterizerState {
        cull_mode: cmd::CullMode::None as u32,
        ..Default::default()
    };
    w.push(Opcode::SetRasterizerState, &p, &[]);
    let p = cmd::SetBlendState {
        enable: 1,
        src_factor: BlendFactor::SrcAlpha as u32,
        dst_factor: BlendFactor::InvSrcAlpha as u32,
        blend_op: BlendOp::Add as u32,
        src_factor_alpha: BlendFactor::SrcAlpha as u32,
        dst_factor_alpha: BlendFactor::InvSrcAlpha as u32,
        blend_op_alpha: BlendOp::Add as u32,
        color_write_mask: 0xF,
        ..Default::default()
    };
    w.push(Opcode::SetBlendState, &p, &[]);
    // D3DSAMP_MAGFILTER (5) and D3DSAMP_MINFILTER (6) = D3DTEXF_LINEAR (2).
    for state in [5, 6] {
        let p = cmd::SetSamplerState {
            shader_stage: ShaderStage::Pixel as u32,
            slot: 0,
            state,
            value: 2,
            ..Default::default()
        };
        w.push(Opcode::SetSamplerState, &p, &[]);
    }
    w.finish()
}

/// One frame: returns the stream and its packet count.
fn frame_stream(present: bool) -> (Vec<u8>, u32) {
    let mut w = CmdStreamWriter::new();
    let p = cmd::ResourceDirtyRange {
        resource_handle: VB,
        offset_bytes: 0,
        size_bytes: VB_BYTES,
        ..Default::default()
    };
    w.push(Opcode::ResourceDirtyRange, &p, &[]);
    w.clear([0.06, 0.31, 0.5, 1.0]);
    for i in 0..WINDOWS {
        // A per-window constant (DWM sets a transform per window; unused by the shader).
        let p = cmd::SetShaderConstants {
            stage: ShaderStage::Vertex as u32,
            start_register: 0,
            count: 1,
            ..Default::default()
        };
        w.push(Opcode::SetShaderConstantsF, &p, &[0u8; 16]);
        let p = cmd::SetTexture {
            shader_stage: ShaderStage::Pixel as u32,
            slot: 0,
            texture: FIRST_TEXTURE + i % TEXTURES,
            ..Default::default()
        };
        w.push(Opcode::SetTexture, &p, &[]);
        let p = cmd::Draw {
            vertex_count: 4,
            instance_count: 1,
            first_vertex: i * 4,
            ..Default::default()
        };
        w.push(Opcode::Draw, &p, &[]);
    }
    if present {
        w.present(0);
    }
    let packets = w.packet_count();
    (w.finish(), packets)
}

/// The guest's vertex buffer for frame `frame`: an 8x8 grid of overlapping 320x240
/// windows drifting a pixel a frame (as bench_dwm.c in tests/d3d9/programs).
fn vertices(frame: u32) -> Vec<u8> {
    let cx = |x: i32| (x as f32 - 0.5) * 2.0 / W as f32 - 1.0;
    let cy = |y: i32| 1.0 - (y as f32 - 0.5) * 2.0 / H as f32;
    let mut v = Vec::with_capacity(VB_BYTES as usize);
    for i in 0..WINDOWS as i32 {
        let f = frame as i32;
        let x0 = (i % 8) * 140 - 40 + (f + 3 * i) % 64;
        let y0 = (i / 8) * 110 - 20 + (f + 5 * i) % 48;
        for (x, y, u, t) in [
            (x0, y0, 0.0, 0.0),
            (x0 + 320, y0, 1.0, 0.0),
            (x0, y0 + 240, 0.0, 1.0),
            (x0 + 320, y0 + 240, 1.0, 1.0),
        ] {
            for c in [cx(x), cy(y), 0.5, 1.0, u, t] {
                v.extend_from_slice(&f32::to_le_bytes(c));
            }
        }
    }
    v
}

/// Reads the render target back, which waits for every queued GPU command, and checks
/// that the windows were drawn: the draw path ran and the centre is not the clear colour.
fn read_back_target(dev: &AeroGpu<WgpuExecutor>) {
    let (id, _) = dev.processor().objects().resource(TARGET).expect("target");
    let bytes = dev.executor().resource_bytes(id).expect("target bytes");
    assert_eq!(bytes.len(), (W * H * 4) as usize);
    assert!(dev.executor().draws() > 0, "the wgpu executor drew nothing");
    let centre = ((H / 2 * W + W / 2) * 4) as usize;
    let clear = [
        (0.5f32 * 255.0).round() as u8,
        (0.31f32 * 255.0).round() as u8,
    ];
    assert_ne!(
        [bytes[centre], bytes[centre + 1]],
        clear,
        "the centre shows the clear colour: no window was drawn"
    );
}

struct Figures {
    commands: u64,
    draws: u64,
    frames: u64,
    secs: f64,
}

/// `finish` waits until the executor's work is done (the timed interval includes it).
fn run<E: Executor>(exec: E, frames: u64, present: bool, finish: impl Fn(&AeroGpu<E>)) -> Figures {
    let mut mem = VecMemory::new(16 << 20);
    let mut dev = AeroGpu::with_executor(AeroGpuConfig::default(), exec);
    let setup = setup_stream();
    let (frame, packets) = frame_stream(present);
    mem.write(SETUP_GPA, &setup).unwrap();
    mem.write(FRAME_GPA, &frame).unwrap();
    mem.write(VB_GPA, &vertices(0)).unwrap();
    let tex_bytes = u64::from(TEX_SIZE * TEX_SIZE * 4);
    let mut entries = vec![AllocEntry {
        alloc_id: 1,
        flags: 0,
        gpa: VB_GPA,
        size_bytes: VB_BYTES,
        reserved0: 0,
    }];
    for t in 0..TEXTURES {
        let gpa = TEX_GPA + u64::from(t) * tex_bytes;
        // Window contents: alpha 0xC0, a title bar at 0xE0.
        let texels: Vec<u8> = (0..TEX_SIZE * TEX_SIZE)
            .flat_map(|n| {
                let (x, y) = (n % TEX_SIZE, n / TEX_SIZE);
                let a = if y < 12 { 0xE0 } else { 0xC0 };
                [
                    (0xE0 - 0x18 * t) as u8,
                    (0xF0 - y) as u8,
                    (0xF0 - x) as u8,
                    a,
                ]
            })
            .collect();
        mem.write(gpa, &texels).unwrap();
        entries.push(AllocEntry {
            alloc_id: 2 + t,
            flags: 0,
            gpa,
            size_bytes: tex_bytes,
            reserved0: 0,
        });
    }
    let table = encode_alloc_table(&entries);
    mem.write(TABLE_GPA, &table).unwrap();

    let mut ring = common::DriverRing::start(&mut dev, &mut mem, ENTRIES, TABLE_GPA, table.len());
    // One submission per frame, one doorbell each, like a D3D9Ex present.
    let mut submit = |dev: &mut AeroGpu<E>, mem: &mut VecMemory, gpa: u64, size: usize| {
        ring.queue(mem, gpa, size);
        ring.kick(dev, mem);
    };
    submit(&mut dev, &mut mem, SETUP_GPA, setup.len());
    // One untimed frame: shader translation and pipeline creation.
    submit(&mut dev, &mut mem, FRAME_GPA, frame.len());
    finish(&dev);
    let before = dev.stats().packets;
    let start = Instant::now();
    for f in 1..=frames {
        mem.write(VB_GPA, &vertices(f as u32)).unwrap();
        submit(&mut dev, &mut mem, FRAME_GPA, frame.len());
    }
    finish(&dev);
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(dev.completed_fence(), frames + 2, "every fence completed");
    let errors = dev.error();
    assert_eq!(
        errors.count, 0,
        "validation or execution errors: {errors:?}"
    );
    let commands = dev.stats().packets - before;
    assert_eq!(commands, frames * u64::from(packets));
    Figures {
        commands,
        draws: frames * u64::from(WINDOWS),
        frames,
        secs,
    }
}

fn report(name: &str, f: &Figures) {
    println!(
        "{name}: {} frames ({} draws, {} commands) in {:.3} s: {:.0} validated commands/s, {:.0} draws/s, {:.1} frames/s",
        f.frames,
        f.draws,
        f.commands,
        f.secs,
        f.commands as f64 / f.secs,
        f.draws as f64 / f.secs,
        f.frames as f64 / f.secs
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "both".into());
    let frames: Option<u64> = args.next().and_then(|s| s.parse().ok());
    if !["null", "wgpu", "both"].contains(&which.as_str()) {
        eprintln!("usage: processor_throughput [null|wgpu|both] [frames]");
        std::process::exit(2);
    }
    if which == "null" || which == "both" {
        let f = run(
            NullExecutor::default(),
            frames.unwrap_or(20_000),
            true,
            |_| {},
        );
        report("null executor", &f);
    }
    if which == "wgpu" || which == "both" {
        // The same frames without their PRESENT too: what the present path costs.
        for (name, present) in [
            ("wgpu executor", true),
            ("wgpu executor, no presents", false),
        ] {
            match WgpuExecutor::new_headless(SoftExecutorConfig::default()) {
                Ok(exec) => {
                    let f = run(exec, frames.unwrap_or(200), present, read_back_target);
                    report(name, &f);
                }
                Err(e) => {
                    eprintln!("processor_throughput: no wgpu adapter: {e}");
                    std::process::exit(1);
                }
            }
        }
    }
}
