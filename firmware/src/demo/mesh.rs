//! The demo's 3D part (AeroGPU path only): a textured cube rotating in a 176×176 box at
//! the right of the title, drawn by the device every frame the demo presents.
//!
//! Everything the device needs is built here on the host and shipped in the payload:
//! D3D9 vs_2_0/ps_2_0 token streams (from the project's D3D9 assembler), a vertex
//! declaration, the cube's vertices and indices (uploaded inline), and one model-view-
//! projection matrix per frame of a [`FRAMES`]-frame turn. The guest only generates the
//! checker texture (a loop over its texels), picks the matrix of its frame counter and
//! patches it into the frame stream's SET_SHADER_CONSTANTS_F. The rotation therefore
//! depends on the number of frames presented, never on a clock, so a `--deterministic`
//! run shows the same picture at the same frame.
//!
//! A frame renders into a host-only colour target with a D24S8 depth buffer (both
//! cleared whole), then COPY_TEXTURE2D with WRITEBACK_DST puts the box into the
//! framebuffer's guest memory: only the box's bytes are written, so the CPU's drawing
//! around it stays. The first frame is checked by reading the box's centre back: an
//! executor that skips draws (the CPU one) leaves the clear colour there, and the demo
//! then says so on COM1 and in the box instead of animating an empty square.

use std::f64::consts::PI;

use aero_gpu::aerogpu::d3d9::asm::assemble;
use aero_protocol::cmd::{
    self, CompareFunc, CullMode, FillMode, IndexFormat, Opcode, PrimitiveTopology, ShaderStage,
};
use aero_protocol::pci::Format;
use aero_protocol::ring::{SUBMIT_FLAG_NO_IRQ, SUBMIT_FLAG_PRESENT};
use aero_protocol::writer::CmdStreamWriter;
use iced_x86::code_asm::*;

use super::DemoError;
use super::aerogpu::{FB, FB_TEXTURE, FB_W};
use super::payload::{b, d, puts, strings, variables};
use crate::asm16::Asm;

/// Frames per full turn of the cube (one frame per BIOS tick: about 6.6 s).
pub(crate) const FRAMES: u32 = 120;
/// The box in physical pixels of the 640×480 framebuffer (right of the "Aero" title,
/// above the divider).
pub(crate) const BOX_X: u32 = 456;
pub(crate) const BOX_Y: u32 = 40;
pub(crate) const BOX_SIZE: u32 = 176;
/// The box's background: the key panel's colour (00RRGGBB), also the render target's clear.
pub(crate) const BOX_BACKGROUND: u32 = 0x0A1838;
/// The checker texture: 64×64 B8G8R8A8 in guest RAM (conventional memory, free).
pub(crate) const CHECKER: u32 = 0x4_0000;
pub(crate) const CHECKER_ALLOC_ID: u32 = 2;
const CHECKER_SIZE: u32 = 64;
pub(crate) const CHECKER_BYTES: u32 = CHECKER_SIZE * CHECKER_SIZE * 4;
/// The two checker colours (A8R8G8B8); a vertical gradient is added to blue.
const CHECK_LIGHT: u32 = 0xFFF0_B040;
const CHECK_DARK: u32 = 0xFF30_3870;
/// Each square of the checker is this many texels wide (a power of two).
const CHECK_SQUARE: u32 = 16;
/// Every this many frames the demo prints `AERO-DEMO-FRAME=N` (tests stop on it).
pub(crate) const FRAME_REPORT_EVERY: u32 = 16;

/// Device object handles (the framebuffer texture is [`FB_TEXTURE`]).
const RT: u32 = 10;
const DEPTH: u32 = 11;
const TEXTURE: u32 = 12;
const VB: u32 = 13;
const IB: u32 = 14;
const VS: u32 = 15;
const PS: u32 = 16;
const LAYOUT: u32 = 17;

/// Position (float4), diffuse (D3DCOLOR), texture coordinate (float2).
const VERTEX_STRIDE: u32 = 28;

const VERTEX_SHADER: &str = "vs_2_0
dcl_position v0
dcl_color v1
dcl_texcoord0 v2
dp4 oPos.x, v0, c0   // c0..c3: the frame's model-view-projection rows
dp4 oPos.y, v0, c1
dp4 oPos.z, v0, c2
dp4 oPos.w, v0, c3
mov oD0, v1
mov oT0, v2
";

const PIXEL_SHADER: &str = "ps_2_0
dcl v0
dcl t0.xy
dcl_2d s0
texld r0, t0, s0
mul r0, r0, v0       // the face's shade
mov oC0, r0
";

/// sin and cos by their series after reducing to [-π, π]: plain IEEE arithmetic, so the
/// table (and the shipped binary) is the same whatever libm the build host has.
fn sin_cos(angle: f64) -> (f64, f64) {
    let x = angle - (2.0 * PI) * ((angle + PI) / (2.0 * PI)).floor();
    let (mut sin, mut cos) = (0.0, 0.0);
    let (mut s_term, mut c_term) = (x, 1.0);
    for n in 0..20 {
        sin += s_term;
        cos += c_term;
        let k = f64::from(2 * n + 2);
        s_term *= -x * x / (k * (k + 1.0));
        c_term *= -x * x / ((k - 1.0) * k);
    }
    (sin, cos)
}

type Mat4 = [[f64; 4]; 4];

fn mul(a: &Mat4, b: &Mat4) -> Mat4 {
    let mut m = [[0.0; 4]; 4];
    for (r, row) in m.iter_mut().enumerate() {
        for (c, v) in row.iter_mut().enumerate() {
            *v = (0..4).map(|k| a[r][k] * b[k][c]).sum();
        }
    }
    m
}

/// The matrix of `frame` (column vectors, rows = c0..c3): yaw one turn per [`FRAMES`],
/// pitch two, the cube 5 units in front of a 60° perspective camera, depth 1..10.
pub(crate) fn frame_matrix(frame: u32) -> [f32; 16] {
    let t = 2.0 * PI * f64::from(frame % FRAMES) / f64::from(FRAMES);
    // Offsets keep frame 0 off the axes: no face is seen edge-on or exactly square.
    let (sy, cy) = sin_cos(t + 0.6);
    let (sin_p, cos_p) = sin_cos(2.0 * t + 0.45);
    let yaw = [
        [cy, 0.0, sy, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [-sy, 0.0, cy, 0.0],
        [0.0, 0.0, 0.0, 1.0],
    ];
    let pitch = [
        [1.0, 0.0, 0.0, 0.0],
        [0.0, cos_p, -sin_p, 0.0],
        [0.0, sin_p, cos_p, 0.0],
        [0.0, 0.0, 0.0, 1.0],
    ];
    let (near, far, distance) = (1.0, 10.0, 5.0);
    let focal = 3.0f64.sqrt(); // 1 / tan(30°)
    let q = far / (far - near);
    let view_projection = [
        [focal, 0.0, 0.0, 0.0],
        [0.0, focal, 0.0, 0.0],
        [0.0, 0.0, q, q * (distance - near)],
        [0.0, 0.0, 1.0, distance],
    ];
    let m = mul(&view_projection, &mul(&pitch, &yaw));
    let mut out = [0.0f32; 16];
    for (i, v) in m.iter().flatten().enumerate() {
        out[i] = *v as f32;
    }
    out
}

/// The cube: 6 faces × 4 vertices (own texture coordinates and shade each), 36 indices.
fn cube() -> (Vec<u8>, Vec<u8>) {
    // Per face: its centre (the outward normal), the two in-face axes and its shade.
    type Face = ([f32; 3], [f32; 3], [f32; 3], u32);
    let faces: [Face; 6] = [
        (
            [0.0, 0.0, -1.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            0xFFFF_FFFF,
        ),
        (
            [0.0, 0.0, 1.0],
            [-1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            0xFFA0_A0C8,
        ),
        (
            [1.0, 0.0, 0.0],
            [0.0, 0.0, 1.0],
            [0.0, 1.0, 0.0],
            0xFFD0_D8FF,
        ),
        (
            [-1.0, 0.0, 0.0],
            [0.0, 0.0, -1.0],
            [0.0, 1.0, 0.0],
            0xFFC0_FFC0,
        ),
        (
            [0.0, 1.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 0.0, 1.0],
            0xFFFF_E0B0,
        ),
        (
            [0.0, -1.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 0.0, -1.0],
            0xFF80_8098,
        ),
    ];
    let mut vertices = Vec::new();
    let mut indices = Vec::new();
    for (f, (n, u, v, shade)) in faces.iter().enumerate() {
        for (du, dv) in [(-1.0f32, -1.0f32), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
            for axis in 0..3 {
                let p = n[axis] + du * u[axis] + dv * v[axis];
                vertices.extend_from_slice(&p.to_le_bytes());
            }
            vertices.extend_from_slice(&1.0f32.to_le_bytes());
            vertices.extend_from_slice(&shade.to_le_bytes());
            for t in [(du + 1.0) / 2.0, (1.0 - dv) / 2.0] {
                vertices.extend_from_slice(&t.to_le_bytes());
            }
        }
        let base = 4 * f as u16;
        for i in [0, 1, 2, 0, 2, 3] {
            indices.extend_from_slice(&(base + i).to_le_bytes());
        }
    }
    (vertices, indices)
}

/// D3DVERTEXELEMENT9 records for [`VERTEX_STRIDE`] vertices, D3DDECL_END last.
fn vertex_declaration() -> Vec<u8> {
    const FLOAT2: u8 = 1;
    const FLOAT4: u8 = 3;
    const D3DCOLOR: u8 = 4;
    const UNUSED: u8 = 17;
    const POSITION: u8 = 0;
    const TEXCOORD: u8 = 5;
    const COLOR: u8 = 10;
    let mut decl = Vec::new();
    for (offset, ty, usage) in [
        (0u16, FLOAT4, POSITION),
        (16, D3DCOLOR, COLOR),
        (20, FLOAT2, TEXCOORD),
    ] {
        decl.extend_from_slice(&0u16.to_le_bytes());
        decl.extend_from_slice(&offset.to_le_bytes());
        decl.extend_from_slice(&[ty, 0, usage, 0]);
    }
    decl.extend_from_slice(&[0xFF, 0, 0, 0, UNUSED, 0, 0, 0]);
    decl
}

fn shader_bytes(text: &str) -> Vec<u8> {
    // The sources are constants of this file; the unit tests assemble them too.
    assemble(text)
        .expect("the demo's shaders assemble")
        .iter()
        .flat_map(|t| t.to_le_bytes())
        .collect()
}

fn texture(handle: u32, usage: u32, format: Format, size: u32, alloc: u32) -> cmd::CreateTexture2d {
    cmd::CreateTexture2d {
        texture_handle: handle,
        usage_flags: usage,
        format: format as u32,
        width: size,
        height: size,
        mip_levels: 1,
        array_layers: 1,
        row_pitch_bytes: if alloc == 0 { 0 } else { size * 4 },
        backing_alloc_id: alloc,
        ..Default::default()
    }
}

/// Created once: the targets, the checker texture (from its guest allocation), the
/// geometry (inline), the shaders and the vertex declaration.
pub(crate) fn stream_setup() -> Vec<u8> {
    let mut w = CmdStreamWriter::new();
    let rt_usage = cmd::RESOURCE_USAGE_RENDER_TARGET | cmd::RESOURCE_USAGE_TEXTURE;
    w.push(
        Opcode::CreateTexture2d,
        &texture(RT, rt_usage, Format::B8G8R8X8Unorm, BOX_SIZE, 0),
        &[],
    );
    let depth_usage = cmd::RESOURCE_USAGE_DEPTH_STENCIL;
    w.push(
        Opcode::CreateTexture2d,
        &texture(DEPTH, depth_usage, Format::D24UnormS8Uint, BOX_SIZE, 0),
        &[],
    );
    let tex_usage = cmd::RESOURCE_USAGE_TEXTURE;
    let checker = texture(
        TEXTURE,
        tex_usage,
        Format::B8G8R8A8Unorm,
        CHECKER_SIZE,
        CHECKER_ALLOC_ID,
    );
    w.push(Opcode::CreateTexture2d, &checker, &[]);
    let (vertices, indices) = cube();
    for (handle, usage, data) in [
        (VB, cmd::RESOURCE_USAGE_VERTEX_BUFFER, &vertices),
        (IB, cmd::RESOURCE_USAGE_INDEX_BUFFER, &indices),
    ] {
        w.create_buffer(handle, usage, data.len() as u64, 0, 0);
        w.upload(handle, 0, data);
    }
    for (handle, stage, text) in [
        (VS, ShaderStage::Vertex, VERTEX_SHADER),
        (PS, ShaderStage::Pixel, PIXEL_SHADER),
    ] {
        let tokens = shader_bytes(text);
        let p = cmd::CreateShader {
            shader_handle: handle,
            stage: stage as u32,
            bytecode_size_bytes: tokens.len() as u32,
            ..Default::default()
        };
        w.push(Opcode::CreateShader, &p, &tokens);
    }
    let decl = vertex_declaration();
    let p = cmd::CreateInputLayout {
        input_layout_handle: LAYOUT,
        blob_size_bytes: decl.len() as u32,
        ..Default::default()
    };
    w.push(Opcode::CreateInputLayout, &p, &decl);
    w.finish()
}

/// One frame; the second value is the offset of the 64 matrix bytes the guest patches.
/// Every frame sets all the state it draws with, so it does not depend on earlier ones.
pub(crate) fn stream_frame() -> (Vec<u8>, usize) {
    let mut w = CmdStreamWriter::new();
    let mut colors = [0; 8];
    colors[0] = RT;
    let targets = cmd::SetRenderTargets {
        color_count: 1,
        depth_stencil: DEPTH,
        colors,
        ..Default::default()
    };
    w.push(Opcode::SetRenderTargets, &targets, &[]);
    let channel = |shift: u32| ((BOX_BACKGROUND >> shift) & 0xFF) as f32 / 255.0;
    let clear = cmd::Clear {
        flags: cmd::CLEAR_COLOR | cmd::CLEAR_DEPTH,
        color_rgba_f32: [channel(16), channel(8), channel(0), 1.0].map(f32::to_bits),
        depth_f32: 1.0f32.to_bits(),
        ..Default::default()
    };
    w.push(Opcode::Clear, &clear, &[]);
    let size = BOX_SIZE as f32;
    let viewport = cmd::SetViewport {
        width_f32: size.to_bits(),
        height_f32: size.to_bits(),
        max_depth_f32: 1.0f32.to_bits(),
        ..Default::default()
    };
    w.push(Opcode::SetViewport, &viewport, &[]);
    let depth = cmd::SetDepthStencilState {
        depth_enable: 1,
        depth_write_enable: 1,
        depth_func: CompareFunc::Less as u32,
        ..Default::default()
    };
    w.push(Opcode::SetDepthStencilState, &depth, &[]);
    // No culling: the far faces are hidden by the depth test alone.
    let raster = cmd::SetRasterizerState {
        fill_mode: FillMode::Solid as u32,
        cull_mode: CullMode::None as u32,
        ..Default::default()
    };
    w.push(Opcode::SetRasterizerState, &raster, &[]);
    let shaders = cmd::BindShaders {
        vs: VS,
        ps: PS,
        ..Default::default()
    };
    w.push(Opcode::BindShaders, &shaders, &[]);
    let layout = cmd::SetInputLayout {
        input_layout_handle: LAYOUT,
        ..Default::default()
    };
    w.push(Opcode::SetInputLayout, &layout, &[]);
    let binding = cmd::VertexBufferBinding {
        buffer: VB,
        stride_bytes: VERTEX_STRIDE,
        ..Default::default()
    };
    let mut binding_bytes = [0u8; 16];
    aero_protocol::wire::Wire::write_le(&binding, &mut binding_bytes);
    let buffers = cmd::SetVertexBuffers {
        start_slot: 0,
        buffer_count: 1,
        ..Default::default()
    };
    w.push(Opcode::SetVertexBuffers, &buffers, &binding_bytes);
    let index = cmd::SetIndexBuffer {
        buffer: IB,
        format: IndexFormat::Uint16 as u32,
        ..Default::default()
    };
    w.push(Opcode::SetIndexBuffer, &index, &[]);
    let topology = cmd::SetPrimitiveTopology {
        topology: PrimitiveTopology::TriangleList as u32,
        ..Default::default()
    };
    w.push(Opcode::SetPrimitiveTopology, &topology, &[]);
    let tex = cmd::SetTexture {
        shader_stage: ShaderStage::Pixel as u32,
        slot: 0,
        texture: TEXTURE,
        ..Default::default()
    };
    w.push(Opcode::SetTexture, &tex, &[]);
    let constants = cmd::SetShaderConstants {
        stage: ShaderStage::Vertex as u32,
        start_register: 0,
        count: 4,
        ..Default::default()
    };
    // The matrix follows the packet; the guest overwrites it with its frame's.
    let matrix_at = w.clone().finish().len()
        + <cmd::SetShaderConstants as aero_protocol::wire::Wire>::WIRE_SIZE;
    let matrix: Vec<u8> = frame_matrix(0)
        .iter()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    w.push(Opcode::SetShaderConstantsF, &constants, &matrix);
    let draw = cmd::DrawIndexed {
        index_count: 36,
        instance_count: 1,
        ..Default::default()
    };
    w.push(Opcode::DrawIndexed, &draw, &[]);
    let copy = cmd::CopyTexture2d {
        dst_texture: FB_TEXTURE,
        src_texture: RT,
        dst_x: BOX_X,
        dst_y: BOX_Y,
        width: BOX_SIZE,
        height: BOX_SIZE,
        flags: cmd::COPY_FLAG_WRITEBACK_DST,
        ..Default::default()
    };
    w.push(Opcode::CopyTexture2d, &copy, &[]);
    // PRESENT shows the bound render target: the framebuffer again.
    let mut colors = [0; 8];
    colors[0] = FB_TEXTURE;
    let framebuffer = cmd::SetRenderTargets {
        color_count: 1,
        colors,
        ..Default::default()
    };
    w.push(Opcode::SetRenderTargets, &framebuffer, &[]);
    w.present(cmd::PRESENT_FLAG_VSYNC);
    (w.finish(), matrix_at)
}

/// The checker's texels as the guest's loop makes them (for tests).
#[cfg(test)]
pub(crate) fn checker_texels() -> Vec<u8> {
    (0..CHECKER_SIZE * CHECKER_SIZE)
        .flat_map(|i| {
            let (x, y) = (i % CHECKER_SIZE, i / CHECKER_SIZE);
            let base = if (x ^ y) & CHECK_SQUARE != 0 {
                CHECK_LIGHT
            } else {
                CHECK_DARK
            };
            (base + 2 * y).to_le_bytes()
        })
        .collect()
}

/// The matrices of every frame, 64 bytes each.
fn matrix_table() -> Vec<u8> {
    (0..FRAMES)
        .flat_map(frame_matrix)
        .flat_map(f32::to_le_bytes)
        .collect()
}

pub(crate) fn emit(a: &mut Asm) -> Result<(), DemoError> {
    emit_start(a)?;
    emit_prepare(a)?;
    Ok(())
}

/// mesh_start (after the CPU drew the screen): texture, setup, frame 0 and its check.
/// Sets g_mesh when the device drew the cube; otherwise explains in the box why not.
fn emit_start(a: &mut Asm) -> Result<(), DemoError> {
    a.bind("mesh_start")?;
    let mut out = a.create_label();
    let on = b(a, "g_on");
    a.cmp(on, 0)?;
    a.je(out)?;
    a.pushad()?;

    // The checker: texel (x, y) light or dark by bit log2(CHECK_SQUARE) of x ^ y, plus
    // 2·y in blue (a gradient the texture coordinates make visible).
    a.call_sym("enter_flat")?;
    a.xor(ecx, ecx)?;
    let mut texel = a.create_label();
    let mut dark = a.create_label();
    a.set(&mut texel)?;
    a.mov(ebx, ecx)?;
    a.shr(ebx, CHECKER_SIZE.trailing_zeros())?;
    a.mov(edx, ecx)?;
    a.xor(edx, ebx)?;
    a.mov(eax, CHECK_DARK)?;
    a.test(edx, CHECK_SQUARE as i32)?;
    a.jz(dark)?;
    a.mov(eax, CHECK_LIGHT)?;
    a.set(&mut dark)?;
    a.lea(eax, ptr(eax + ebx * 2))?;
    a.mov(dword_ptr(ecx * 4 + CHECKER).es(), eax)?;
    a.inc(ecx)?;
    a.cmp(ecx, (CHECKER_SIZE * CHECKER_SIZE) as i32)?;
    a.jb(texel)?;
    a.sti()?;

    let mut failed = a.create_label();
    let table = a.addr("gpu_alloc_table");
    let alloc = d(a, "g_alloc");
    a.mov(alloc, u32::from(table))?;
    let setup = a.addr("mesh_stream_setup");
    a.mov(si, i32::from(setup))?;
    a.mov(cx, stream_setup().len() as i32)?;
    a.mov(edx, 0)?;
    a.call_sym("gpu_submit_wait")?;
    a.jc(failed)?;
    a.call_sym("mesh_prepare")?;
    a.mov(edx, SUBMIT_FLAG_PRESENT)?;
    a.call_sym("gpu_submit_wait")?;
    a.jc(failed)?;

    // Did the device draw? The box's centre is on the cube in frame 0.
    let centre = FB + ((BOX_Y + BOX_SIZE / 2) * FB_W + BOX_X + BOX_SIZE / 2) * 4;
    a.call_sym("enter_flat")?;
    a.mov(edi, centre)?;
    a.mov(eax, dword_ptr(edi).es())?;
    a.sti()?;
    a.and(eax, 0x00FF_FFFF)?;
    a.cmp(eax, BOX_BACKGROUND as i32)?;
    let mut drawn = a.create_label();
    a.jne(drawn)?;
    puts(a, "s_mesh_no_draws")?;
    a.set(&mut failed)?;
    puts(a, "s_mesh_off")?;
    a.call_sym("mesh_explain")?;
    let mut done = a.create_label();
    a.jmp(done)?;
    a.set(&mut drawn)?;
    let mesh = b(a, "g_mesh");
    a.mov(mesh, 1)?;
    puts(a, "s_mesh_on")?;
    a.call_sym("mesh_count")?;
    a.set(&mut done)?;
    a.popad()?;
    a.set(&mut out)?;
    a.ret()?;

    // The box without a cube: its background and three lines of text, presented with
    // the next flip.
    a.bind("mesh_explain")?;
    a.pushad()?;
    a.call_sym("enter_flat")?;
    let (x, y, size) = (BOX_X as u16 / 2, BOX_Y as u16 / 2, BOX_SIZE as u16 / 2);
    let colour = d(a, "v_color");
    a.mov(colour, BOX_BACKGROUND)?;
    a.mov(bx, i32::from(x))?;
    a.mov(cx, i32::from(y))?;
    a.mov(dx, i32::from(size))?;
    a.mov(si, i32::from(size))?;
    a.call_sym("fill_rect_l")?;
    let colour = d(a, "v_color");
    a.mov(colour, 0x80C8FFu32)?;
    for (i, name) in ["s_box1", "s_box2", "s_box3"].into_iter().enumerate() {
        let at = a.addr(name);
        a.mov(si, i32::from(at))?;
        a.mov(bx, i32::from(x + 4))?;
        a.mov(cx, i32::from(y + 20 + 16 * i as u16))?;
        a.mov(di, 1)?;
        a.call_sym("draw_string_l")?;
    }
    let dirty = b(a, "v_dirty");
    a.mov(dirty, 1)?;
    a.sti()?;
    a.popad()?;
    a.ret()?;

    // After frame g_mesh_frame was submitted: AERO-DEMO-FRAME=N every
    // FRAME_REPORT_EVERY frames, then the counter moves on.
    a.bind("mesh_count")?;
    a.pushad()?;
    let frame = d(a, "g_mesh_frame");
    a.mov(eax, frame)?;
    a.test(eax, (FRAME_REPORT_EVERY - 1) as i32)?;
    let mut quiet = a.create_label();
    a.jnz(quiet)?;
    puts(a, "s_mesh_frame")?;
    a.call_sym("serial_dec")?;
    puts(a, "s_crlf")?;
    a.set(&mut quiet)?;
    let frame = d(a, "g_mesh_frame");
    a.inc(frame)?;
    a.popad()?;
    a.ret()?;
    Ok(())
}

/// mesh_prepare: patches frame g_mesh_frame's matrix into the frame stream, names the
/// allocation table for the submission; SI, CX = the stream for gpu_submit(_wait).
fn emit_prepare(a: &mut Asm) -> Result<(), DemoError> {
    a.bind("mesh_prepare")?;
    a.push(eax)?;
    a.push(edx)?;
    a.push(edi)?;
    a.push(es)?;
    let frame = d(a, "g_mesh_frame");
    a.mov(eax, frame)?;
    a.xor(edx, edx)?;
    a.mov(ecx, FRAMES)?;
    a.div(ecx)?;
    a.shl(dx, 6)?;
    let table = a.addr("mesh_matrices");
    a.mov(si, i32::from(table))?;
    a.add(si, dx)?;
    let (stream, matrix_at) = stream_frame();
    let frame_stream = a.addr("mesh_stream_frame");
    a.mov(di, i32::from(frame_stream) + matrix_at as i32)?;
    a.push(ds)?;
    a.pop(es)?;
    a.mov(cx, 16)?;
    let mut copy = a.create_label();
    a.set(&mut copy)?;
    a.mov(eax, dword_ptr(si))?;
    a.mov(dword_ptr(di).es(), eax)?;
    a.add(si, 4)?;
    a.add(di, 4)?;
    a.dec(cx)?;
    a.jnz(copy)?;
    let table = a.addr("gpu_alloc_table");
    let alloc = d(a, "g_alloc");
    a.mov(alloc, u32::from(table))?;
    a.mov(si, i32::from(frame_stream))?;
    a.mov(cx, stream.len() as i32)?;
    a.pop(es)?;
    a.pop(edi)?;
    a.pop(edx)?;
    a.pop(eax)?;
    a.ret()?;
    Ok(())
}

/// Submit flags of a later frame: presented, not waited for.
pub(crate) const FRAME_FLAGS: u32 = SUBMIT_FLAG_PRESENT | SUBMIT_FLAG_NO_IRQ;

pub(crate) fn emit_data(a: &mut Asm) -> Result<(), DemoError> {
    strings(
        a,
        &[
            (
                "s_mesh_on",
                "AERO-DEMO: mesh on: a textured cube drawn by aerogpu\r\n",
            ),
            (
                "s_mesh_no_draws",
                "AERO-DEMO: aerogpu drew nothing: this executor has no 3D (use --gpu wgpu)\r\n",
            ),
            ("s_mesh_off", "AERO-DEMO: mesh off\r\n"),
            ("s_mesh_frame", "AERO-DEMO-FRAME="),
            ("s_box1", "No 3D on"),
            ("s_box2", "this GPU"),
            ("s_box3", "executor"),
        ],
    )?;
    variables(a, &[("g_mesh", 1), ("g_mesh_frame", 4)])?;
    super::aerogpu::align(a, "mesh_pad_setup", 8)?;
    a.bind("mesh_stream_setup")?;
    a.db(&stream_setup())?;
    super::aerogpu::align(a, "mesh_pad_frame", 8)?;
    a.bind("mesh_stream_frame")?;
    a.db(&stream_frame().0)?;
    super::aerogpu::align(a, "mesh_pad_matrices", 8)?;
    a.bind("mesh_matrices")?;
    a.db(&matrix_table())?;
    Ok(())
}
