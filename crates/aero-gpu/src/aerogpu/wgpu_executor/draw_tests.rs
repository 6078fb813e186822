//! The draw path on lavapipe with its own textures and buffers (until it runs inside the
//! executor's store): pixels read back and compared with hand-computed D3D9 results.

use std::collections::HashMap;

use aero_protocol::cmd::{self, BlendFactor, BlendOp, IndexFormat, PrimitiveTopology, ShaderStage};

use super::pipeline::{self, rs, zeroed};
use super::{DrawPath, DrawResources, Target};
use crate::aerogpu::d3d9::asm::assemble;
use crate::aerogpu::processor::{Command, ConstantUse, ResourceId, VertexBufferBinding};

const W: u32 = 8;
const H: u32 = 8;
const COLOR: ResourceId = 100;
const DEPTH: ResourceId = 101;
const VB: ResourceId = 200;
const IB: ResourceId = 201;

struct Res {
    buffers: HashMap<ResourceId, (wgpu::Buffer, Vec<u8>)>,
    targets: HashMap<ResourceId, (wgpu::Texture, wgpu::TextureView)>,
}

impl DrawResources for Res {
    fn buffer(&self, id: ResourceId) -> Option<&wgpu::Buffer> {
        self.buffers.get(&id).map(|b| &b.0)
    }
    fn buffer_bytes(&self, id: ResourceId) -> Option<&[u8]> {
        self.buffers.get(&id).map(|b| b.1.as_slice())
    }
    fn target(&self, id: ResourceId) -> Option<Target<'_>> {
        self.targets.get(&id).map(|(t, v)| Target {
            view: v,
            format: t.format(),
            width: t.width(),
            height: t.height(),
        })
    }
    fn sampled_view(&self, id: ResourceId) -> Option<&wgpu::TextureView> {
        self.targets.get(&id).map(|t| &t.1)
    }
}

struct Rig {
    device: wgpu::Device,
    queue: wgpu::Queue,
    path: DrawPath,
    res: Res,
}

fn device() -> (wgpu::Device, wgpu::Queue) {
    crate::aerogpu::wgpu_executor::headless_device(wgpu::Features::empty())
        .expect("a wgpu device (lavapipe: mesa-vulkan-drivers, installed by tests/install-deps.sh)")
}

const VS: &str = "vs_2_0\ndcl_position v0\ndcl_color v1\nmov oPos, v0\nmov oD0, v1\n";
const PS: &str = "ps_2_0\ndcl v0\nmov oC0, v0\n";

/// A vertex: clip position (x, y, z, w) then a D3DCOLOR; 20 bytes.
fn vertex(x: f32, y: f32, z: f32, color: u32) -> Vec<u8> {
    [x, y, z, 1.0]
        .iter()
        .flat_map(|f| f.to_le_bytes())
        .chain(color.to_le_bytes())
        .collect()
}

/// D3D9 screen coordinates → clip space of a W×H viewport. D3D9 maps clip −1 to the
/// viewport's edge *and* puts pixel centres at integers, so pixel 0's centre is on the
/// edge (WebGPU puts it half a pixel inside).
fn clip(xs: f32, ys: f32) -> (f32, f32) {
    (xs / W as f32 * 2.0 - 1.0, 1.0 - ys / H as f32 * 2.0)
}

/// Corners of the screen rectangle [x0, x1) × [y0, y1), clockwise on screen from the
/// top left.
fn quad(x0: f32, y0: f32, x1: f32, y1: f32, z: f32, color: u32) -> Vec<u8> {
    [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
        .iter()
        .flat_map(|&(x, y)| {
            let (cx, cy) = clip(x, y);
            vertex(cx, cy, z, color)
        })
        .collect()
}

fn decl() -> Vec<u8> {
    let mut d = Vec::new();
    // POSITION FLOAT4 at 0, COLOR0 D3DCOLOR at 16, END.
    for (offset, ty, usage) in [(0u16, 3u8, 0u8), (16, 4, 10)] {
        d.extend_from_slice(&0u16.to_le_bytes());
        d.extend_from_slice(&offset.to_le_bytes());
        d.extend_from_slice(&[ty, 0, usage, 0]);
    }
    d.extend_from_slice(&[0xFF, 0, 0, 0, 17, 0, 0, 0]);
    d
}

impl Rig {
    fn new(depth: bool) -> Rig {
        let (device, queue) = device();
        let mut path = DrawPath::new(device.clone(), queue.clone());
        let tokens = |src: &str| -> Vec<u8> {
            assemble(src)
                .unwrap()
                .iter()
                .flat_map(|t| t.to_le_bytes())
                .collect()
        };
        let (vs, ps) = (tokens(VS), tokens(PS));
        for (handle, stage, t) in [(1, ShaderStage::Vertex, &vs), (2, ShaderStage::Pixel, &ps)] {
            path.apply(&Command::CreateShader {
                handle,
                stage,
                tokens: t,
                constants: ConstantUse::default(),
            })
            .unwrap();
        }
        let d = decl();
        path.apply(&Command::CreateInputLayout {
            handle: 3,
            elements: &d,
        })
        .unwrap();
        for c in [
            Command::BindShaders { vs: 1, ps: 2 },
            Command::SetInputLayout { handle: 3 },
            Command::SetRenderTargets {
                colors: [Some(COLOR), None, None, None, None, None, None, None],
                color_count: 1,
                depth_stencil: depth.then_some(DEPTH),
            },
        ] {
            assert!(path.apply(&c).unwrap());
        }
        let mut targets = HashMap::new();
        let make = |format, usage| {
            let t = device.create_texture(&wgpu::TextureDescriptor {
                label: None,
                size: wgpu::Extent3d {
                    width: W,
                    height: H,
                    depth_or_array_layers: 1,
                },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage: wgpu::TextureUsages::RENDER_ATTACHMENT
                    | wgpu::TextureUsages::COPY_SRC
                    | usage,
                view_formats: &[],
            });
            let v = t.create_view(&Default::default());
            (t, v)
        };
        targets.insert(
            COLOR,
            make(
                wgpu::TextureFormat::Rgba8Unorm,
                wgpu::TextureUsages::COPY_DST,
            ),
        );
        if depth {
            targets.insert(
                DEPTH,
                make(
                    wgpu::TextureFormat::Depth24PlusStencil8,
                    wgpu::TextureUsages::empty(),
                ),
            );
        }
        let mut rig = Rig {
            device,
            queue,
            path,
            res: Res {
                buffers: HashMap::new(),
                targets,
            },
        };
        rig.clear([0x10, 0x10, 0x10, 0x10], 1.0, 0);
        rig
    }

    /// Replaces the shader pair and declaration (handles 10, 11, 12).
    fn shaders(&mut self, vs: &str, ps: &str, decl: &[u8]) {
        for (handle, stage, src) in [(10, ShaderStage::Vertex, vs), (11, ShaderStage::Pixel, ps)] {
            let tokens: Vec<u8> = assemble(src)
                .unwrap()
                .iter()
                .flat_map(|t| t.to_le_bytes())
                .collect();
            self.apply(Command::CreateShader {
                handle,
                stage,
                tokens: &tokens,
                constants: ConstantUse::default(),
            });
        }
        self.apply(Command::CreateInputLayout {
            handle: 12,
            elements: decl,
        });
        self.apply(Command::BindShaders { vs: 10, ps: 11 });
        self.apply(Command::SetInputLayout { handle: 12 });
    }

    /// An RGBA8 texture (sampled, or a render target) of `w`×`h` texels.
    fn texture(&mut self, id: ResourceId, w: u32, h: u32, texels: &[[u8; 4]]) {
        let t = self.device.create_texture(&wgpu::TextureDescriptor {
            label: None,
            size: wgpu::Extent3d {
                width: w,
                height: h,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Rgba8Unorm,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT
                | wgpu::TextureUsages::COPY_SRC
                | wgpu::TextureUsages::COPY_DST
                | wgpu::TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        });
        let bytes: Vec<u8> = texels.iter().flatten().copied().collect();
        self.queue.write_texture(
            t.as_image_copy(),
            &bytes,
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(4 * w),
                rows_per_image: None,
            },
            t.size(),
        );
        let v = t.create_view(&Default::default());
        self.res.targets.insert(id, (t, v));
    }

    fn clear(&mut self, rgba: [u8; 4], depth: f32, stencil: u32) {
        // The queue writes below run ahead of batched draws.
        self.path.batch.flush().unwrap();
        let (t, _) = &self.res.targets[&COLOR];
        self.queue.write_texture(
            t.as_image_copy(),
            &rgba.repeat((W * H) as usize),
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(4 * W),
                rows_per_image: None,
            },
            t.size(),
        );
        if let Some((_, v)) = self.res.targets.get(&DEPTH) {
            let mut enc = self.device.create_command_encoder(&Default::default());
            enc.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: None,
                color_attachments: &[],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: v,
                    depth_ops: Some(wgpu::Operations {
                        load: wgpu::LoadOp::Clear(depth),
                        store: wgpu::StoreOp::Store,
                    }),
                    stencil_ops: Some(wgpu::Operations {
                        load: wgpu::LoadOp::Clear(stencil),
                        store: wgpu::StoreOp::Store,
                    }),
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            self.queue.submit([enc.finish()]);
        }
    }

    fn buffer(&mut self, id: ResourceId, bytes: Vec<u8>) {
        let b = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: bytes.len().next_multiple_of(4) as u64,
            usage: wgpu::BufferUsages::VERTEX
                | wgpu::BufferUsages::INDEX
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut padded = bytes.clone();
        padded.resize(bytes.len().next_multiple_of(4), 0);
        self.queue.write_buffer(&b, 0, &padded);
        self.res.buffers.insert(id, (b, bytes));
    }

    fn vertices(&mut self, bytes: Vec<u8>) {
        self.buffer(VB, bytes);
        self.bind_vertex_buffer(20, 0);
    }

    /// Binds VB alone, at slot 0.
    fn bind_vertex_buffer(&mut self, stride_bytes: u32, offset_bytes: u32) {
        let mut bindings = [VertexBufferBinding::default(); 16];
        bindings[0] = VertexBufferBinding {
            buffer: Some(VB),
            stride_bytes,
            offset_bytes,
        };
        self.apply(Command::SetVertexBuffers {
            start_slot: 0,
            count: 1,
            bindings,
        });
    }

    fn apply(&mut self, c: Command<'_>) {
        assert!(self.path.apply(&c).unwrap());
    }

    fn draw(&mut self, topology: PrimitiveTopology, count: u32) {
        self.apply(Command::SetPrimitiveTopology(topology));
        let changed = self
            .path
            .draw(
                &Command::Draw(cmd::Draw {
                    vertex_count: count,
                    instance_count: 1,
                    ..zeroed()
                }),
                &self.res,
            )
            .unwrap();
        assert!(changed.contains(&COLOR));
    }

    fn read(&self, id: ResourceId, aspect: wgpu::TextureAspect, bpp: u32) -> Vec<u8> {
        self.path.batch.flush().unwrap();
        let (t, _) = &self.res.targets[&id];
        let buf = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: u64::from(256 * H),
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
            mapped_at_creation: false,
        });
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.copy_texture_to_buffer(
            wgpu::TexelCopyTextureInfo {
                texture: t,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect,
            },
            wgpu::TexelCopyBufferInfo {
                buffer: &buf,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(256),
                    rows_per_image: None,
                },
            },
            t.size(),
        );
        self.queue.submit([enc.finish()]);
        buf.slice(..)
            .map_async(wgpu::MapMode::Read, |r| r.expect("map"));
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .expect("poll");
        let data = buf.slice(..).get_mapped_range();
        (0..H as usize)
            .flat_map(|y| data[y * 256..y * 256 + (W * bpp) as usize].to_vec())
            .collect()
    }

    fn pixels(&self) -> Vec<[u8; 4]> {
        self.pixels_of(COLOR)
    }

    fn pixels_of(&self, id: ResourceId) -> Vec<[u8; 4]> {
        self.read(id, wgpu::TextureAspect::All, 4)
            .chunks_exact(4)
            .map(|p| [p[0], p[1], p[2], p[3]])
            .collect()
    }
}

/// The expected image: `inside` where (x, y) is in [x0, x1) × [y0, y1), `outside` elsewhere.
fn rect_image(
    (x0, y0, x1, y1): (u32, u32, u32, u32),
    inside: [u8; 4],
    outside: [u8; 4],
) -> Vec<[u8; 4]> {
    (0..H)
        .flat_map(|y| (0..W).map(move |x| (x, y)))
        .map(|(x, y)| {
            if (x0..x1).contains(&x) && (y0..y1).contains(&y) {
                inside
            } else {
                outside
            }
        })
        .collect()
}

const BG: [u8; 4] = [0x10, 0x10, 0x10, 0x10];
/// D3DCOLOR 0xAARRGGBB.
const ARGB: u32 = 0x8020_4060;
const RGBA: [u8; 4] = [0x20, 0x40, 0x60, 0x80];

#[test]
fn fan_quad_covers_d3d9_pixel_centres_with_bgra_colours_and_clockwise_front_faces() {
    let mut rig = Rig::new(false);
    // Screen x 2.25..6.25, y 1.25..5.25: D3D9 centres (integers) 3..6 × 2..5 are inside;
    // without the half-pixel fix-up wgpu's centres (x.5) would give 2..5 × 1..4.
    rig.vertices(quad(2.25, 1.25, 6.25, 5.25, 0.5, ARGB));
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    assert_eq!(rig.pixels(), rect_image((3, 2, 7, 6), RGBA, BG));

    // The same quad counter-clockwise is a back face: D3DCULL_CCW (default) culls it.
    let mut rig = Rig::new(false);
    let v = quad(2.25, 1.25, 6.25, 5.25, 0.5, ARGB);
    let reversed: Vec<u8> = v.chunks_exact(20).rev().flatten().copied().collect();
    rig.vertices(reversed);
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    assert_eq!(rig.pixels(), rect_image((0, 0, 0, 0), RGBA, BG));
    // D3DCULL_NONE draws it.
    rig.apply(Command::SetRasterizerState(cmd::SetRasterizerState {
        cull_mode: cmd::CullMode::None as u32,
        ..pipeline::default_rasterizer()
    }));
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    assert_eq!(rig.pixels(), rect_image((3, 2, 7, 6), RGBA, BG));
}

#[test]
fn indexed_draw_uses_base_vertex_start_index_and_index_buffer_offset() {
    let mut rig = Rig::new(false);
    // Four vertices off to the top left, then the quad at 1..3 × 4..8 (edges on centres:
    // top-left rule takes x = 1, y = 4, drops x = 3).
    let mut v = quad(-4.0, -4.0, -2.0, -2.0, 0.5, 0xFFFF_FFFF);
    v.extend(quad(1.0, 4.0, 3.0, 8.0, 0.5, ARGB));
    rig.vertices(v);
    // Offset 4 bytes of padding, a junk index, then the list.
    let indices: Vec<u16> = vec![0xEEEE, 0xEEEE, 7, 0, 1, 2, 0, 2, 3];
    rig.buffer(IB, indices.iter().flat_map(|i| i.to_le_bytes()).collect());
    rig.apply(Command::SetIndexBuffer {
        buffer: Some(IB),
        format: IndexFormat::Uint16,
        offset_bytes: 4,
    });
    rig.apply(Command::SetPrimitiveTopology(
        PrimitiveTopology::TriangleList,
    ));
    rig.path
        .draw(
            &Command::DrawIndexed(cmd::DrawIndexed {
                index_count: 6,
                instance_count: 1,
                first_index: 1,
                base_vertex: 4,
                ..zeroed()
            }),
            &rig.res,
        )
        .unwrap();
    assert_eq!(rig.pixels(), rect_image((1, 4, 3, 8), RGBA, BG));

    // An indexed fan over the same indices 0, 1, 2, 3 (expanded on the CPU).
    rig.clear(BG, 1.0, 0);
    rig.buffer(
        IB,
        [0u16, 1, 2, 3]
            .iter()
            .flat_map(|i| i.to_le_bytes())
            .collect(),
    );
    rig.apply(Command::SetIndexBuffer {
        buffer: Some(IB),
        format: IndexFormat::Uint16,
        offset_bytes: 0,
    });
    rig.apply(Command::SetPrimitiveTopology(
        PrimitiveTopology::TriangleFan,
    ));
    rig.path
        .draw(
            &Command::DrawIndexed(cmd::DrawIndexed {
                index_count: 4,
                instance_count: 1,
                base_vertex: 4,
                ..zeroed()
            }),
            &rig.res,
        )
        .unwrap();
    assert_eq!(rig.pixels(), rect_image((1, 4, 3, 8), RGBA, BG));
}

#[test]
fn blend_separate_alpha_write_mask_and_scissor() {
    let mut rig = Rig::new(false);
    rig.vertices(quad(-0.5, -0.5, 7.5, 7.5, 0.5, ARGB));
    // Colour: dst − src reversed (src − dst) = 0x20−0x10 …; alpha: Zero/Zero → 0.
    rig.apply(Command::SetBlendState(cmd::SetBlendState {
        enable: 1,
        src_factor: BlendFactor::One as u32,
        dst_factor: BlendFactor::One as u32,
        blend_op: BlendOp::Subtract as u32,
        src_factor_alpha: BlendFactor::Zero as u32,
        dst_factor_alpha: BlendFactor::Zero as u32,
        blend_op_alpha: BlendOp::Add as u32,
        color_write_mask: 0xF,
        ..pipeline::default_blend()
    }));
    // Scissor 2..5 × 1..3, enabled through the rasterizer state.
    rig.apply(Command::SetScissor(cmd::SetScissor {
        x: 2,
        y: 1,
        width: 3,
        height: 2,
        ..zeroed()
    }));
    rig.apply(Command::SetRasterizerState(cmd::SetRasterizerState {
        scissor_enable: 1,
        ..pipeline::default_rasterizer()
    }));
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    assert_eq!(
        rig.pixels(),
        rect_image((2, 1, 5, 3), [0x10, 0x30, 0x50, 0x00], BG)
    );

    // Write mask red|alpha with additive blending, scissor off.
    rig.clear(BG, 1.0, 0);
    rig.apply(Command::SetRasterizerState(pipeline::default_rasterizer()));
    rig.apply(Command::SetBlendState(cmd::SetBlendState {
        enable: 1,
        src_factor: BlendFactor::One as u32,
        dst_factor: BlendFactor::One as u32,
        blend_op: BlendOp::Add as u32,
        src_factor_alpha: BlendFactor::One as u32,
        dst_factor_alpha: BlendFactor::One as u32,
        blend_op_alpha: BlendOp::Max as u32,
        color_write_mask: 0x9,
        ..pipeline::default_blend()
    }));
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    assert_eq!(
        rig.pixels(),
        rect_image((0, 0, 8, 8), [0x30, 0x10, 0x10, 0x80], BG)
    );
}

#[test]
fn depth_test_and_two_sided_stencil_count_by_winding() {
    let mut rig = Rig::new(true);
    rig.clear(BG, 0.5, 1);
    rig.apply(Command::SetRasterizerState(cmd::SetRasterizerState {
        cull_mode: cmd::CullMode::None as u32,
        ..pipeline::default_rasterizer()
    }));
    rig.apply(Command::SetDepthStencilState(cmd::SetDepthStencilState {
        stencil_enable: 1,
        ..pipeline::default_depth_stencil()
    }));
    for (state, value) in [
        (rs::TWOSIDEDSTENCILMODE, 1),
        (rs::STENCILPASS, 7),     // INCR for clockwise
        (rs::CCW_STENCILPASS, 3), // REPLACE for counter-clockwise
        (rs::STENCILREF, 9),
        (rs::STENCILZFAIL, 2), // ZERO when the depth test fails (clockwise)
    ] {
        rig.apply(Command::SetRenderState { state, value });
    }
    // Clockwise quad at z 0.25 (passes LESSEQUAL against 0.5) over 0..4 × 0..8;
    // counter-clockwise one at z 0.25 over 4..8 × 0..4; a clockwise quad at z 0.75
    // (fails: ZFAIL ZERO) over 4..8 × 4..8; the stencil starts at 1.
    let mut v = quad(0.0, 0.0, 4.0, 8.0, 0.25, ARGB);
    let ccw: Vec<u8> = quad(4.0, 0.0, 8.0, 4.0, 0.25, ARGB)
        .chunks_exact(20)
        .rev()
        .flatten()
        .copied()
        .collect();
    v.extend(ccw);
    v.extend(quad(4.0, 4.0, 8.0, 8.0, 0.75, ARGB));
    rig.vertices(v);
    rig.apply(Command::SetPrimitiveTopology(
        PrimitiveTopology::TriangleFan,
    ));
    for first in [0, 4, 8] {
        rig.path
            .draw(
                &Command::Draw(cmd::Draw {
                    vertex_count: 4,
                    instance_count: 1,
                    first_vertex: first,
                    ..zeroed()
                }),
                &rig.res,
            )
            .unwrap();
    }
    // A second clockwise pass over the left half: INCR again.
    rig.path
        .draw(
            &Command::Draw(cmd::Draw {
                vertex_count: 4,
                instance_count: 1,
                first_vertex: 0,
                ..zeroed()
            }),
            &rig.res,
        )
        .unwrap();
    let stencil = rig.read(DEPTH, wgpu::TextureAspect::StencilOnly, 1);
    let expect: Vec<u8> = (0..H)
        .flat_map(|y| {
            (0..W).map(move |x| {
                if x < 4 {
                    3
                } else if y < 4 {
                    9
                } else {
                    0
                }
            })
        })
        .collect();
    assert_eq!(stencil, expect);
    // Colour: the failed quad left the background.
    assert_eq!(
        rig.pixels(),
        (0..H)
            .flat_map(|y| (0..W).map(move |x| if x >= 4 && y >= 4 { BG } else { RGBA }))
            .collect::<Vec<_>>()
    );
}

/// A declaration of (stream 0, offset, D3DDECLTYPE, D3DDECLUSAGE) elements.
fn decl_of(elements: &[(u16, u8, u8)]) -> Vec<u8> {
    let mut d = Vec::new();
    for &(offset, ty, usage) in elements {
        d.extend_from_slice(&0u16.to_le_bytes());
        d.extend_from_slice(&offset.to_le_bytes());
        d.extend_from_slice(&[ty, 0, usage, 0]);
    }
    d.extend_from_slice(&[0xFF, 0, 0, 0, 17, 0, 0, 0]);
    d
}

#[test]
fn textured_quad_point_and_linear_filtering() {
    let mut rig = Rig::new(false);
    rig.shaders(
        "vs_2_0\ndcl_position v0\ndcl_texcoord v1\nmov oPos, v0\nmov oT0, v1\n",
        "ps_2_0\ndcl t0.xy\ndcl_2d s0\ntexld r0, t0, s0\nmov oC0, r0\n",
        &decl_of(&[(0, 3, 0), (16, 1, 5)]),
    );
    // A 2×1 texture: black, white; the quad covers the target with u 0..1 from the
    // left edge (screen −0.5) to the right (7.5).
    rig.texture(300, 2, 1, &[[0, 0, 0, 255], [255, 255, 255, 255]]);
    rig.apply(Command::SetTexture {
        stage: ShaderStage::Pixel,
        slot: 0,
        texture: Some(300),
    });
    let mut v = Vec::new();
    for (xs, ys, u, t) in [
        (-0.5, -0.5, 0.0, 0.0),
        (7.5, -0.5, 1.0, 0.0),
        (7.5, 7.5, 1.0, 1.0),
        (-0.5, 7.5, 0.0, 1.0),
    ] {
        let (x, y) = clip(xs, ys);
        for f in [x, y, 0.5, 1.0, u, t] {
            v.extend_from_slice(&f32::to_le_bytes(f));
        }
    }
    rig.buffer(VB, v);
    rig.bind_vertex_buffer(24, 0);
    // Point sampling (the default MAG/MINFILTER), clamped (ADDRESSU = CLAMP).
    rig.apply(Command::SetSamplerState {
        stage: ShaderStage::Pixel,
        slot: 0,
        state: 1,
        value: 3,
    });
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    let row: Vec<u8> = rig.pixels()[..8].iter().map(|p| p[0]).collect();
    assert_eq!(row, [0, 0, 0, 0, 255, 255, 255, 255]);
    // Linear: u = (x + 0.5) / 8, texel position 2u − 0.5, clamped at both ends; the
    // weights land on 1/8ths, so 255 × k/8 up to the filter's rounding.
    for state in [5, 6] {
        rig.apply(Command::SetSamplerState {
            stage: ShaderStage::Pixel,
            slot: 0,
            state,
            value: 2,
        });
    }
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    let row: Vec<u8> = rig.pixels()[..8].iter().map(|p| p[0]).collect();
    let expect = [0.0, 0.0, 31.875, 95.625, 159.375, 223.125, 255.0, 255.0];
    for (x, (got, want)) in row.iter().zip(expect).enumerate() {
        assert!(
            (f64::from(*got) - want).abs() <= 1.0,
            "pixel {x}: {got} vs {want} ({row:?})"
        );
    }
}

#[test]
fn two_targets_constants_and_alpha_test() {
    let mut rig = Rig::new(false);
    rig.shaders(VS, "ps_2_0\ndcl v0\nmov oC0, v0\nmov oC1, c1\n", &decl());
    rig.texture(102, W, H, &[[1, 2, 3, 4]; (W * H) as usize]);
    rig.apply(Command::SetRenderTargets {
        colors: [Some(COLOR), Some(102), None, None, None, None, None, None],
        color_count: 2,
        depth_stencil: None,
    });
    // c1 = (0, 1, 1, 0) through SET_SHADER_CONSTANTS_F.
    let c1: Vec<u8> = [0.0f32, 1.0, 1.0, 0.0]
        .iter()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    rig.apply(Command::SetShaderConstants {
        kind: crate::aerogpu::processor::ConstantKind::Float,
        stage: ShaderStage::Pixel,
        start_register: 1,
        count: 1,
        data: &c1,
    });
    rig.vertices(quad(0.0, 0.0, 4.0, 8.0, 0.5, ARGB));
    // Alpha test GREATER 0x80 against alpha 0x80: every pixel is discarded, in both
    // targets.
    for (state, value) in [
        (rs::ALPHATESTENABLE, 1),
        (rs::ALPHAFUNC, 5),
        (rs::ALPHAREF, 0x80),
    ] {
        rig.apply(Command::SetRenderState { state, value });
    }
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    assert_eq!(rig.pixels(), rect_image((0, 0, 0, 0), RGBA, BG));
    assert_eq!(
        rig.pixels_of(102),
        rect_image((0, 0, 0, 0), RGBA, [1, 2, 3, 4])
    );
    // GREATEREQUAL passes them; target 1 writes only green and blue
    // (D3DRS_COLORWRITEENABLE1).
    rig.apply(Command::SetRenderState {
        state: rs::ALPHAFUNC,
        value: 7,
    });
    rig.apply(Command::SetRenderState {
        state: rs::COLORWRITEENABLE1,
        value: 0x6,
    });
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    assert_eq!(rig.pixels(), rect_image((0, 0, 4, 8), RGBA, BG));
    assert_eq!(
        rig.pixels_of(102),
        rect_image((0, 0, 4, 8), [1, 255, 255, 4], [1, 2, 3, 4])
    );
}

#[test]
fn draw_state_is_per_context_and_pipelines_are_an_lru_cache() {
    let mut rig = Rig::new(false);
    rig.path.pipelines = super::PipelineCache::new(2);
    rig.vertices(quad(0.0, 0.0, 8.0, 8.0, 0.5, ARGB));
    let blend = |op: BlendOp| {
        Command::SetBlendState(cmd::SetBlendState {
            enable: 1,
            src_factor: BlendFactor::One as u32,
            dst_factor: BlendFactor::One as u32,
            blend_op: op as u32,
            src_factor_alpha: BlendFactor::One as u32,
            dst_factor_alpha: BlendFactor::Zero as u32,
            blend_op_alpha: BlendOp::Add as u32,
            color_write_mask: 0xF,
            ..pipeline::default_blend()
        })
    };
    // Context 0 adds; context 7 (its own state: shaders and targets too) draws unblended.
    rig.apply(blend(BlendOp::Add));
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    assert_eq!(rig.pixels()[0], [0x30, 0x50, 0x70, 0x80]);
    rig.path.set_context(7);
    assert!(
        rig.path
            .draw(
                &Command::Draw(cmd::Draw {
                    vertex_count: 4,
                    instance_count: 1,
                    ..zeroed()
                }),
                &rig.res,
            )
            .is_err(),
        "a fresh context has no shaders bound"
    );
    rig.apply(Command::BindShaders { vs: 1, ps: 2 });
    rig.apply(Command::SetInputLayout { handle: 3 });
    rig.apply(Command::SetRenderTargets {
        colors: [Some(COLOR), None, None, None, None, None, None, None],
        color_count: 1,
        depth_stencil: None,
    });
    rig.vertices(quad(0.0, 0.0, 8.0, 8.0, 0.5, ARGB));
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    assert_eq!(rig.pixels()[0], RGBA);
    // Back in context 0 the add is still set.
    rig.path.set_context(0);
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    assert_eq!(rig.pixels()[0], [0x40, 0x80, 0xC0, 0x80]);
    assert_eq!(rig.path.pipeline_misses(), 2);

    // A third state evicts the least recently used (context 7's unblended one).
    rig.apply(blend(BlendOp::Max));
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    assert_eq!(rig.path.pipeline_misses(), 3);
    assert_eq!(rig.path.pipelines.len(), 2);
    rig.apply(blend(BlendOp::Add));
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    assert_eq!(rig.path.pipeline_misses(), 3, "the add pipeline was kept");
    rig.path.set_context(7);
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    assert_eq!(
        rig.path.pipeline_misses(),
        4,
        "the unblended one was evicted"
    );
}

#[test]
fn ubyte4_and_short2_vertex_elements_read_unnormalized() {
    let mut rig = Rig::new(false);
    let mut decl = Vec::new();
    // POSITION FLOAT4 @0, TEXCOORD0 UBYTE4 @16, TEXCOORD1 SHORT2 @20.
    for (offset, ty, usage, index) in [(0u16, 3u8, 0u8, 0u8), (16, 5, 5, 0), (20, 6, 5, 1)] {
        decl.extend_from_slice(&0u16.to_le_bytes());
        decl.extend_from_slice(&offset.to_le_bytes());
        decl.extend_from_slice(&[ty, 0, usage, index]);
    }
    decl.extend_from_slice(&[0xFF, 0, 0, 0, 17, 0, 0, 0]);
    // oD0 = ubyte4 / 255 + short2 × (−8, 4, 0, 0) / 255.
    rig.shaders(
        "vs_2_0\n\
         def c0, 0.003921569, 0.003921569, 0.003921569, 0.003921569\n\
         def c1, -0.03137255, 0.01568627, 0, 0\n\
         dcl_position v0\ndcl_texcoord0 v1\ndcl_texcoord1 v2\n\
         mov oPos, v0\nmul r0, v1, c0\nmad oD0, v2, c1, r0\n",
        PS,
        &decl,
    );
    let mut v = Vec::new();
    for (xs, ys) in [(0.0, 0.0), (8.0, 0.0), (8.0, 8.0), (0.0, 8.0)] {
        let (x, y) = clip(xs, ys);
        for f in [x, y, 0.5, 1.0] {
            v.extend_from_slice(&f32::to_le_bytes(f));
        }
        v.extend_from_slice(&[16, 32, 48, 255]);
        v.extend_from_slice(&(-2i16).to_le_bytes());
        v.extend_from_slice(&3i16.to_le_bytes());
    }
    rig.buffer(VB, v);
    rig.bind_vertex_buffer(24, 0);
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    // R = 16 + 16, G = 32 + 12, B = 48, A = 255 (SHORT2's w is 1, times 0).
    assert_eq!(
        rig.pixels(),
        rect_image((0, 0, 8, 8), [32, 44, 48, 255], BG)
    );
}

#[test]
fn hostile_draws_fail_cleanly_and_destroyed_objects_unbind() {
    let mut rig = Rig::new(false);
    rig.vertices(quad(0.0, 0.0, 8.0, 8.0, 0.5, ARGB));
    rig.buffer(
        IB,
        [0u16, 1, 2, 0, 2, 3]
            .iter()
            .flat_map(|i| i.to_le_bytes())
            .collect(),
    );
    rig.apply(Command::SetIndexBuffer {
        buffer: Some(IB),
        format: IndexFormat::Uint16,
        offset_bytes: 0,
    });
    let indexed = |first_index: u32, index_count: u32| {
        Command::DrawIndexed(cmd::DrawIndexed {
            index_count,
            instance_count: 1,
            first_index,
            ..zeroed()
        })
    };
    let draw = |vertex_count: u32| {
        Command::Draw(cmd::Draw {
            vertex_count,
            instance_count: 1,
            ..zeroed()
        })
    };
    rig.apply(Command::SetPrimitiveTopology(
        PrimitiveTopology::TriangleList,
    ));
    let err = |rig: &mut Rig, c: Command<'_>| rig.path.draw(&c, &rig.res).unwrap_err();
    assert_eq!(err(&mut rig, indexed(4, 6)), super::DrawError::Resource(IB));
    assert_eq!(
        err(&mut rig, indexed(u32::MAX, 3)),
        super::DrawError::TooLarge("index range")
    );
    rig.apply(Command::SetPrimitiveTopology(
        PrimitiveTopology::TriangleFan,
    ));
    assert_eq!(
        err(&mut rig, draw(u32::MAX)),
        super::DrawError::TooLarge("triangle fan")
    );
    assert_eq!(err(&mut rig, indexed(0, 7)), super::DrawError::Resource(IB));
    // A vertex buffer offset at or past its end.
    rig.bind_vertex_buffer(20, 80);
    assert_eq!(err(&mut rig, draw(3)), super::DrawError::Resource(VB));
    // Destroying the vertex buffer unbinds it; destroying the layout unbinds it.
    rig.path
        .apply(&Command::DestroyResource {
            resource: VB,
            freed: true,
        })
        .unwrap();
    assert_eq!(
        err(&mut rig, draw(3)),
        super::DrawError::Missing("a vertex buffer")
    );
    rig.apply(Command::DestroyInputLayout { handle: 3 });
    assert_eq!(
        err(&mut rig, draw(3)),
        super::DrawError::Missing("an input layout")
    );
    assert_eq!(rig.path.draws, 0);
    assert_eq!(rig.pixels(), rect_image((0, 0, 0, 0), RGBA, BG));
}

#[test]
fn a_destroyed_texture_samples_as_unbound() {
    let mut rig = Rig::new(false);
    rig.shaders(
        "vs_2_0\ndcl_position v0\ndcl_texcoord v1\nmov oPos, v0\nmov oT0, v1\n",
        "ps_2_0\ndcl t0.xy\ndcl_2d s0\ntexld r0, t0, s0\nmov oC0, r0\n",
        &decl_of(&[(0, 3, 0), (16, 1, 5)]),
    );
    rig.texture(300, 1, 1, &[[10, 20, 30, 40]]);
    rig.apply(Command::SetTexture {
        stage: ShaderStage::Pixel,
        slot: 0,
        texture: Some(300),
    });
    let mut v = Vec::new();
    for (xs, ys) in [(0.0, 0.0), (8.0, 0.0), (8.0, 8.0), (0.0, 8.0)] {
        let (x, y) = clip(xs, ys);
        for f in [x, y, 0.5, 1.0, 0.5, 0.5] {
            v.extend_from_slice(&f32::to_le_bytes(f));
        }
    }
    rig.buffer(VB, v);
    rig.bind_vertex_buffer(24, 0);
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    assert_eq!(rig.pixels()[9], [10, 20, 30, 40]);
    assert!(
        !rig.path
            .apply(&Command::DestroyResource {
                resource: 300,
                freed: true,
            })
            .unwrap(),
        "the executor handles DESTROY_RESOURCE too"
    );
    rig.res.targets.remove(&300);
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    assert_eq!(rig.pixels()[9], [0, 0, 0, 255]);
}

#[test]
fn a_pipeline_wgpu_refuses_is_an_error_and_not_cached() {
    let mut rig = Rig::new(false);
    // Rgba32Float cannot blend without FLOAT32_BLENDABLE: the pipeline is invalid.
    let t = rig.device.create_texture(&wgpu::TextureDescriptor {
        label: None,
        size: wgpu::Extent3d {
            width: W,
            height: H,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba32Float,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
        view_formats: &[],
    });
    let v = t.create_view(&Default::default());
    rig.res.targets.insert(103, (t, v));
    rig.apply(Command::SetRenderTargets {
        colors: [Some(103), None, None, None, None, None, None, None],
        color_count: 1,
        depth_stencil: None,
    });
    rig.apply(Command::SetBlendState(cmd::SetBlendState {
        enable: 1,
        ..pipeline::default_blend()
    }));
    rig.vertices(quad(0.0, 0.0, 8.0, 8.0, 0.5, ARGB));
    rig.apply(Command::SetPrimitiveTopology(
        PrimitiveTopology::TriangleFan,
    ));
    let c = Command::Draw(cmd::Draw {
        vertex_count: 4,
        instance_count: 1,
        ..zeroed()
    });
    for _ in 0..2 {
        assert!(matches!(
            rig.path.draw(&c, &rig.res),
            Err(super::DrawError::Gpu(_))
        ));
    }
    assert_eq!(rig.path.pipelines.len(), 0);
    assert_eq!(rig.path.draws, 0);
    // The device is fine: the same draw into the RGBA8 target works.
    rig.apply(Command::SetRenderTargets {
        colors: [Some(COLOR), None, None, None, None, None, None, None],
        color_count: 1,
        depth_stencil: None,
    });
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    assert_eq!(rig.pixels()[0], RGBA, "blend One/Zero");
}

#[test]
fn viewport_rectangle_fix_up_and_depth_range() {
    let mut rig = Rig::new(true);
    rig.clear(BG, 0.6, 0);
    // Viewport (4, 4) 4×4, depth range 0.5..1.
    rig.apply(Command::SetViewport(cmd::SetViewport {
        x_f32: 4f32.to_bits(),
        y_f32: 4f32.to_bits(),
        width_f32: 4f32.to_bits(),
        height_f32: 4f32.to_bits(),
        min_depth_f32: 0.5f32.to_bits(),
        max_depth_f32: 1f32.to_bits(),
        ..zeroed()
    }));
    // Screen x 5.1..7.1, y 4.1..6.1 inside it: D3D9 centres 6..7 × 5..6. (A fix-up of
    // the target's size instead of the viewport's would give 5..6 × 4..5.)
    let ndc = |xs: f32, ys: f32| ((xs - 4.0) / 2.0 - 1.0, 1.0 - (ys - 4.0) / 2.0);
    let mut v = Vec::new();
    for (xs, ys) in [(5.1, 4.1), (7.1, 4.1), (7.1, 6.1), (5.1, 6.1)] {
        let (x, y) = ndc(xs, ys);
        v.extend(vertex(x, y, 0.0, ARGB));
    }
    // The same at z 0.4: 0.5 + 0.4 × 0.5 = 0.7 fails LESSEQUAL against 0.6.
    for (xs, ys) in [(4.0, 4.0), (8.0, 4.0), (8.0, 8.0), (4.0, 8.0)] {
        let (x, y) = ndc(xs, ys);
        v.extend(vertex(x, y, 0.4, 0xFFFF_FFFF));
    }
    rig.vertices(v);
    rig.apply(Command::SetPrimitiveTopology(
        PrimitiveTopology::TriangleFan,
    ));
    for first_vertex in [0, 4] {
        rig.path
            .draw(
                &Command::Draw(cmd::Draw {
                    vertex_count: 4,
                    instance_count: 1,
                    first_vertex,
                    ..zeroed()
                }),
                &rig.res,
            )
            .unwrap();
    }
    assert_eq!(rig.pixels(), rect_image((6, 5, 8, 7), RGBA, BG));
}

#[test]
fn depth_bias_moves_a_coplanar_quad_in_front() {
    let mut rig = Rig::new(true);
    rig.clear(BG, 0.5, 0);
    rig.apply(Command::SetDepthStencilState(cmd::SetDepthStencilState {
        depth_func: cmd::CompareFunc::Less as u32,
        ..pipeline::default_depth_stencil()
    }));
    rig.vertices(quad(0.0, 0.0, 8.0, 8.0, 0.5, ARGB));
    // z 0.5 is not LESS than the cleared 0.5.
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    assert_eq!(rig.pixels(), rect_image((0, 0, 0, 0), RGBA, BG));
    // D3DRS_DEPTHBIAS −0.01 (the float's bits, as the UMD sends it) passes.
    rig.apply(Command::SetRasterizerState(cmd::SetRasterizerState {
        depth_bias: (-0.01f32).to_bits() as i32,
        ..pipeline::default_rasterizer()
    }));
    rig.draw(PrimitiveTopology::TriangleFan, 4);
    assert_eq!(rig.pixels(), rect_image((0, 0, 8, 8), RGBA, BG));
}

#[test]
fn texture_stage_states_fill_the_bump_environment_binding() {
    let mut st = super::DrawState::default();
    let set = |st: &mut super::DrawState, stage, state, value: f32| {
        assert!(st.apply(&Command::SetTextureStageState {
            stage,
            state,
            value: value.to_bits(),
        }));
    };
    set(&mut st, 1, 7, 0.5); // BUMPENVMAT00
    set(&mut st, 1, 10, -0.25); // BUMPENVMAT11
    set(&mut st, 1, 22, 1.5); // BUMPENVLSCALE
    set(&mut st, 7, 23, -0.75); // BUMPENVLOFFSET
    set(&mut st, 2, 1, 3.0); // COLOROP: kept, not part of the binding
    let bytes = st.bump_env_bytes();
    assert_eq!(bytes.len(), 256, "8 matrices + 8 luminance vec4s");
    let f = |i: usize| f32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap());
    // Stage 1's matrix: (00, 01, 10, 11).
    assert_eq!([f(4), f(5), f(6), f(7)], [0.5, 0.0, 0.0, -0.25]);
    // Luminance block starts at vec4 8: stage 1 (scale, offset), stage 7's offset.
    assert_eq!([f(36), f(37)], [1.5, 0.0]);
    assert_eq!([f(60), f(61)], [0.0, -0.75]);
    assert!((0..256 / 4).all(|i| [4, 7, 36, 61].contains(&i) || f(i) == 0.0));
}
