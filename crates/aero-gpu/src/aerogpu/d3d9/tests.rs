//! Translator tests: every module through naga's validator, shaders executed on a
//! wgpu device (Mesa lavapipe in CI) with exact pixel read-back, malformed streams.

use std::sync::OnceLock;

use super::asm::assemble;
use super::*;

// ---- translation + naga ---------------------------------------------------------------

fn validate(wgsl: &str) {
    let module = naga::front::wgsl::parse_str(wgsl)
        .unwrap_or_else(|e| panic!("WGSL parse: {}\n{wgsl}", e.emit_to_string(wgsl)));
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::default(),
    )
    .validate(&module)
    .unwrap_or_else(|e| panic!("naga validation: {e:?}\n{wgsl}"));
}

fn translate_with(src: &str, key: &VariantKey) -> Translated {
    let tokens = assemble(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let t = translate(&tokens, key).unwrap_or_else(|e| panic!("{e}\n{src}"));
    validate(&t.wgsl);
    t
}

fn tr(src: &str) -> Translated {
    translate_with(src, &VariantKey::default())
}

// ---- the wgpu harness -------------------------------------------------------------------

struct Gpu {
    device: wgpu::Device,
    queue: wgpu::Queue,
}

fn gpu() -> &'static Gpu {
    static GPU: OnceLock<Gpu> = OnceLock::new();
    GPU.get_or_init(|| {
        let (device, queue) = crate::aerogpu::wgpu_executor::headless_device(
            wgpu::Features::empty(),
        )
        .unwrap_or_else(|e| {
            panic!(
                "\n\n*** NO WGPU DEVICE ({e}) ***\nThe D3D9 shader execution tests need a Vulkan \
                 device; on Debian that is Mesa lavapipe: apt-get install mesa-vulkan-drivers \
                 (tests/install-deps.sh installs it).\n"
            )
        });
        Gpu { device, queue }
    })
}

struct Texture {
    slot: u32,
    kind: TextureKind,
    /// Width, height, depth (or 6 faces for cubes).
    size: [u32; 3],
    /// Mip levels, each texel RGBA8, level 0 first; layers/slices in order.
    levels: Vec<Vec<[u8; 4]>>,
}

/// One draw into a `SIZE`×`SIZE` Rgba32Float target (cleared to CLEAR).
struct Draw<'a> {
    vs: &'a Translated,
    ps: &'a Translated,
    /// Per vertex location, one vec4 per vertex.
    attributes: Vec<(u32, Vec<[f32; 4]>)>,
    vs_consts: Vec<(usize, [f32; 4])>,
    ps_consts: Vec<(usize, [f32; 4])>,
    vs_int_bool: [u8; IntBoolConstants::SIZE],
    ps_int_bool: [u8; IntBoolConstants::SIZE],
    fixup: [f32; 4],
    /// ps_1_x bump environment (group 0 binding 5).
    bump: [f32; 64],
    textures: Vec<Texture>,
    linear: bool,
    targets: u32,
    /// Some(clear value): a Depth32Float attachment, test Less.
    depth: Option<f32>,
}

const SIZE: u32 = 4;
const CLEAR: [f32; 4] = [9.0, 9.0, 9.0, 9.0];

fn quad() -> Vec<[f32; 4]> {
    let (a, b, c, d) = (
        [-1.0, -1.0, 0.0, 1.0],
        [1.0, -1.0, 0.0, 1.0],
        [1.0, 1.0, 0.0, 1.0],
        [-1.0, 1.0, 0.0, 1.0],
    );
    vec![a, b, c, a, c, d]
}

/// Texture coordinates of `quad`'s vertices: (0, 0) top left to (1, 1) bottom right.
fn quad_uv() -> Vec<[f32; 4]> {
    quad()
        .iter()
        .map(|p| [(p[0] + 1.0) / 2.0, (1.0 - p[1]) / 2.0, 0.0, 0.0])
        .collect()
}

impl<'a> Draw<'a> {
    fn new(vs: &'a Translated, ps: &'a Translated) -> Self {
        Draw {
            vs,
            ps,
            attributes: vec![(0, quad())],
            vs_consts: Vec::new(),
            ps_consts: Vec::new(),
            vs_int_bool: [0; IntBoolConstants::SIZE],
            ps_int_bool: [0; IntBoolConstants::SIZE],
            fixup: [0.0; 4],
            bump: [0.0; 64],
            textures: Vec::new(),
            linear: false,
            targets: 1,
            depth: None,
        }
    }

    fn int(mut self, ps: bool, n: usize, v: [i32; 4]) -> Self {
        let buf = if ps {
            &mut self.ps_int_bool
        } else {
            &mut self.vs_int_bool
        };
        for (k, x) in v.iter().enumerate() {
            let o = IntBoolConstants::int_offset(n) + 4 * k;
            buf[o..o + 4].copy_from_slice(&x.to_le_bytes());
        }
        self
    }

    fn bool(mut self, ps: bool, n: usize, v: bool) -> Self {
        let buf = if ps {
            &mut self.ps_int_bool
        } else {
            &mut self.vs_int_bool
        };
        let o = IntBoolConstants::bool_offset(n);
        buf[o..o + 4].copy_from_slice(&u32::from(v).to_le_bytes());
        self
    }

    /// Renders and returns each target's pixels, row by row.
    fn run(&self) -> Vec<Vec<[f32; 4]>> {
        let g = gpu();
        let dev = &g.device;
        let uniform = |data: &[u8]| {
            let buf = dev.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: data.len() as u64,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            g.queue.write_buffer(&buf, 0, data);
            buf
        };
        let floats = |consts: &[(usize, [f32; 4])]| {
            let mut data = vec![0u8; 4096];
            for (n, v) in consts {
                for (k, x) in v.iter().enumerate() {
                    data[n * 16 + k * 4..n * 16 + k * 4 + 4].copy_from_slice(&x.to_le_bytes());
                }
            }
            data
        };
        let fixup: Vec<u8> = self.fixup.iter().flat_map(|x| x.to_le_bytes()).collect();
        let bump: Vec<u8> = self.bump.iter().flat_map(|x| x.to_le_bytes()).collect();
        let buffers = [
            uniform(&floats(&self.vs_consts)),
            uniform(&self.vs_int_bool),
            uniform(&fixup),
            uniform(&floats(&self.ps_consts)),
            uniform(&self.ps_int_bool),
            uniform(&bump),
        ];
        let group0_layout = dev.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: None,
            entries: &(0..6)
                .map(|b| wgpu::BindGroupLayoutEntry {
                    binding: b,
                    visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                })
                .collect::<Vec<_>>(),
        });
        let group0 = dev.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &group0_layout,
            entries: &buffers
                .iter()
                .enumerate()
                .map(|(i, b)| wgpu::BindGroupEntry {
                    binding: i as u32,
                    resource: b.as_entire_binding(),
                })
                .collect::<Vec<_>>(),
        });
        // Group 1: the textures both shaders name.
        let mut layout_entries = Vec::new();
        let mut views = Vec::new();
        for (stage_vs, t) in [(true, self.vs), (false, self.ps)] {
            for s in &t.samplers {
                let tex = self
                    .textures
                    .iter()
                    .find(|x| x.slot == s.slot && x.kind == s.kind)
                    .expect("test supplies every sampled texture");
                let binding = if stage_vs {
                    bindings::vs_texture(s.slot)
                } else {
                    bindings::ps_texture(s.slot)
                };
                let dim = match s.kind {
                    TextureKind::Tex2d => wgpu::TextureViewDimension::D2,
                    TextureKind::Cube => wgpu::TextureViewDimension::Cube,
                    TextureKind::Volume => wgpu::TextureViewDimension::D3,
                };
                layout_entries.push(wgpu::BindGroupLayoutEntry {
                    binding,
                    visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
                    ty: wgpu::BindingType::Texture {
                        sample_type: wgpu::TextureSampleType::Float { filterable: true },
                        view_dimension: dim,
                        multisampled: false,
                    },
                    count: None,
                });
                layout_entries.push(wgpu::BindGroupLayoutEntry {
                    binding: binding + 1,
                    visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
                    ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
                    count: None,
                });
                views.push((binding, self.upload(tex, dim)));
            }
        }
        let filter = if self.linear {
            wgpu::FilterMode::Linear
        } else {
            wgpu::FilterMode::Nearest
        };
        let sampler = dev.create_sampler(&wgpu::SamplerDescriptor {
            mag_filter: filter,
            min_filter: filter,
            mipmap_filter: wgpu::MipmapFilterMode::Nearest,
            ..Default::default()
        });
        let group1_layout = dev.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: None,
            entries: &layout_entries,
        });
        let mut group1_entries = Vec::new();
        for (binding, view) in &views {
            group1_entries.push(wgpu::BindGroupEntry {
                binding: *binding,
                resource: wgpu::BindingResource::TextureView(view),
            });
            group1_entries.push(wgpu::BindGroupEntry {
                binding: binding + 1,
                resource: wgpu::BindingResource::Sampler(&sampler),
            });
        }
        let group1 = dev.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &group1_layout,
            entries: &group1_entries,
        });
        let layout = dev.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: None,
            bind_group_layouts: &[Some(&group0_layout), Some(&group1_layout)],
            immediate_size: 0,
        });
        let module = |t: &Translated| {
            dev.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: None,
                source: wgpu::ShaderSource::Wgsl(t.wgsl.clone().into()),
            })
        };
        let (vs_module, ps_module) = (module(self.vs), module(self.ps));
        let vertex_count = self.attributes[0].1.len() as u32;
        let attribute_descs: Vec<[wgpu::VertexAttribute; 1]> = self
            .attributes
            .iter()
            .map(|(loc, _)| {
                [wgpu::VertexAttribute {
                    format: wgpu::VertexFormat::Float32x4,
                    offset: 0,
                    shader_location: *loc,
                }]
            })
            .collect();
        let vertex_layouts: Vec<wgpu::VertexBufferLayout> = attribute_descs
            .iter()
            .map(|a| wgpu::VertexBufferLayout {
                array_stride: 16,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: a,
            })
            .collect();
        let format = wgpu::TextureFormat::Rgba32Float;
        // Targets the pixel shader does not write keep their contents (write mask 0).
        let color_targets: Vec<Option<wgpu::ColorTargetState>> = (0..self.targets)
            .map(|i| {
                let written = self.ps.color_outputs & (1 << i) != 0;
                Some(wgpu::ColorTargetState {
                    format,
                    blend: None,
                    write_mask: if written {
                        wgpu::ColorWrites::ALL
                    } else {
                        wgpu::ColorWrites::empty()
                    },
                })
            })
            .collect();
        let pipeline = dev.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: None,
            layout: Some(&layout),
            vertex: wgpu::VertexState {
                module: &vs_module,
                entry_point: Some("vs_main"),
                compilation_options: Default::default(),
                buffers: &vertex_layouts,
            },
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: self.depth.map(|_| wgpu::DepthStencilState {
                format: wgpu::TextureFormat::Depth32Float,
                depth_write_enabled: Some(true),
                depth_compare: Some(wgpu::CompareFunction::Less),
                stencil: Default::default(),
                bias: Default::default(),
            }),
            multisample: Default::default(),
            fragment: Some(wgpu::FragmentState {
                module: &ps_module,
                entry_point: Some("fs_main"),
                compilation_options: Default::default(),
                targets: &color_targets,
            }),
            multiview_mask: None,
            cache: None,
        });
        let vertex_buffers: Vec<wgpu::Buffer> = self
            .attributes
            .iter()
            .map(|(_, data)| {
                let bytes: Vec<u8> = data
                    .iter()
                    .flatten()
                    .flat_map(|x| x.to_le_bytes())
                    .collect();
                let buf = dev.create_buffer(&wgpu::BufferDescriptor {
                    label: None,
                    size: bytes.len() as u64,
                    usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                g.queue.write_buffer(&buf, 0, &bytes);
                buf
            })
            .collect();
        let extent = wgpu::Extent3d {
            width: SIZE,
            height: SIZE,
            depth_or_array_layers: 1,
        };
        let targets: Vec<wgpu::Texture> = (0..self.targets)
            .map(|_| {
                dev.create_texture(&wgpu::TextureDescriptor {
                    label: None,
                    size: extent,
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format,
                    usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
                    view_formats: &[],
                })
            })
            .collect();
        let target_views: Vec<wgpu::TextureView> = targets
            .iter()
            .map(|t| t.create_view(&Default::default()))
            .collect();
        let depth_view = self.depth.map(|_| {
            dev.create_texture(&wgpu::TextureDescriptor {
                label: None,
                size: extent,
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: wgpu::TextureFormat::Depth32Float,
                usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
                view_formats: &[],
            })
            .create_view(&Default::default())
        });
        let mut encoder = dev.create_command_encoder(&Default::default());
        {
            let attachments: Vec<Option<wgpu::RenderPassColorAttachment>> = target_views
                .iter()
                .map(|view| {
                    Some(wgpu::RenderPassColorAttachment {
                        view,
                        depth_slice: None,
                        resolve_target: None,
                        ops: wgpu::Operations {
                            load: wgpu::LoadOp::Clear(wgpu::Color {
                                r: CLEAR[0].into(),
                                g: CLEAR[1].into(),
                                b: CLEAR[2].into(),
                                a: CLEAR[3].into(),
                            }),
                            store: wgpu::StoreOp::Store,
                        },
                    })
                })
                .collect();
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: None,
                color_attachments: &attachments,
                depth_stencil_attachment: depth_view.as_ref().map(|view| {
                    wgpu::RenderPassDepthStencilAttachment {
                        view,
                        depth_ops: Some(wgpu::Operations {
                            load: wgpu::LoadOp::Clear(self.depth.unwrap_or(1.0)),
                            store: wgpu::StoreOp::Store,
                        }),
                        stencil_ops: None,
                    }
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &group0, &[]);
            pass.set_bind_group(1, &group1, &[]);
            for (i, b) in vertex_buffers.iter().enumerate() {
                pass.set_vertex_buffer(i as u32, b.slice(..));
            }
            pass.draw(0..vertex_count, 0..1);
        }
        let row_bytes = 256u32; // SIZE * 16 rounded to the copy alignment
        let readbacks: Vec<wgpu::Buffer> = targets
            .iter()
            .map(|t| {
                let buf = dev.create_buffer(&wgpu::BufferDescriptor {
                    label: None,
                    size: u64::from(row_bytes * SIZE),
                    usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
                    mapped_at_creation: false,
                });
                encoder.copy_texture_to_buffer(
                    t.as_image_copy(),
                    wgpu::TexelCopyBufferInfo {
                        buffer: &buf,
                        layout: wgpu::TexelCopyBufferLayout {
                            offset: 0,
                            bytes_per_row: Some(row_bytes),
                            rows_per_image: None,
                        },
                    },
                    extent,
                );
                buf
            })
            .collect();
        g.queue.submit([encoder.finish()]);
        readbacks
            .iter()
            .map(|buf| {
                buf.slice(..)
                    .map_async(wgpu::MapMode::Read, |r| r.expect("map"));
                dev.poll(wgpu::PollType::wait_indefinitely()).expect("poll");
                let data = buf.slice(..).get_mapped_range();
                let mut pixels = Vec::new();
                for y in 0..SIZE as usize {
                    for x in 0..SIZE as usize {
                        let o = y * row_bytes as usize + x * 16;
                        let f = |k: usize| {
                            f32::from_le_bytes(data[o + 4 * k..o + 4 * k + 4].try_into().unwrap())
                        };
                        pixels.push([f(0), f(1), f(2), f(3)]);
                    }
                }
                pixels
            })
            .collect()
    }

    fn upload(&self, tex: &Texture, dim: wgpu::TextureViewDimension) -> wgpu::TextureView {
        let g = gpu();
        let dimension = if tex.kind == TextureKind::Volume {
            wgpu::TextureDimension::D3
        } else {
            wgpu::TextureDimension::D2
        };
        let texture = g.device.create_texture(&wgpu::TextureDescriptor {
            label: None,
            size: wgpu::Extent3d {
                width: tex.size[0],
                height: tex.size[1],
                depth_or_array_layers: tex.size[2],
            },
            mip_level_count: tex.levels.len() as u32,
            sample_count: 1,
            dimension,
            format: wgpu::TextureFormat::Rgba8Unorm,
            usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        });
        for (level, texels) in tex.levels.iter().enumerate() {
            let w = (tex.size[0] >> level).max(1);
            let h = (tex.size[1] >> level).max(1);
            let d = if tex.kind == TextureKind::Volume {
                (tex.size[2] >> level).max(1)
            } else {
                tex.size[2]
            };
            let bytes: Vec<u8> = texels.iter().flatten().copied().collect();
            g.queue.write_texture(
                wgpu::TexelCopyTextureInfo {
                    texture: &texture,
                    mip_level: level as u32,
                    origin: wgpu::Origin3d::ZERO,
                    aspect: wgpu::TextureAspect::All,
                },
                &bytes,
                wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(4 * w),
                    rows_per_image: Some(h),
                },
                wgpu::Extent3d {
                    width: w,
                    height: h,
                    depth_or_array_layers: d,
                },
            );
        }
        texture.create_view(&wgpu::TextureViewDescriptor {
            dimension: Some(dim),
            ..Default::default()
        })
    }
}

/// vs_2_0 passing position and texture coordinate 0 (`quad_uv`) on.
const TEXCOORD_VS: &str = "vs_2_0\ndcl_position v0\ndcl_texcoord0 v1\nmov oPos, v0\nmov oT0, v1\n";
/// The vertex shader for pixel-shader tests: a full-screen quad.
const PASS_VS: &str = "vs_2_0\ndcl_position v0\nmov oPos, v0\n";

fn assert_close(got: [f32; 4], want: [f32; 4], tolerance: f32, what: &str) {
    for k in 0..4 {
        let ok = if want[k].is_infinite() {
            got[k] == want[k]
        } else {
            (got[k] - want[k]).abs() <= tolerance * want[k].abs().max(1.0)
        };
        assert!(ok, "{what}: got {got:?}, want {want:?}");
    }
}

/// Runs a pixel shader over the quad; every pixel must equal the first.
fn run_ps(ps: &str, consts: &[(usize, [f32; 4])]) -> [f32; 4] {
    let vs = tr(PASS_VS);
    let ps = tr(ps);
    let mut d = Draw::new(&vs, &ps);
    d.ps_consts = consts.to_vec();
    let pixels = d.run().remove(0);
    for p in &pixels {
        assert_eq!(p, &pixels[0], "pixels differ for\n{}", ps.wgsl);
    }
    pixels[0]
}

// ---- 1. arithmetic ----------------------------------------------------------------------

const C0: [f32; 4] = [1.5, -2.0, 0.25, 4.0];
const C1: [f32; 4] = [0.5, 3.0, -1.0, 2.0];
const C2: [f32; 4] = [2.0, 0.5, 8.0, -0.25];

#[test]
fn ps_2_0_arithmetic_on_the_gpu() {
    let consts = [
        (0, C0),
        (1, C1),
        (2, C2),
        (3, [0.5, 2.0, 0.0, 3.0]),
        (4, [0.25; 4]),
        (5, [1.0, 0.0, 0.0, 0.0]),
        (6, [0.0, 1.0, 0.0, 0.0]),
        (7, [3.0, 0.0, 4.0, 10.0]),
        (8, [0.0; 4]),
        (9, [-0.5, 0.0, 0.0, 0.0]),
    ];
    // (body writing r0, expected r0), each computed by hand from c0..c9.
    let cases: &[(&str, [f32; 4])] = &[
        ("add r0, c0, c1", [2.0, 1.0, -0.75, 6.0]),
        ("sub r0, c0, c1", [1.0, -5.0, 1.25, 2.0]),
        ("mul r0, c0, c1", [0.75, -6.0, -0.25, 8.0]),
        ("mad r0, c0, c1, c2", [2.75, -5.5, 7.75, 7.75]),
        ("dp3 r0, c0, c1", [-5.5; 4]),
        ("dp4 r0, c0, c1", [2.5; 4]),
        ("rcp r0, c0.w", [0.25; 4]),
        ("rcp r0, c8.x", [f32::INFINITY; 4]),
        ("rsq r0, -c0.w", [0.5; 4]),
        ("min r0, c0, c1", [0.5, -2.0, -1.0, 2.0]),
        ("max r0, c0, c1", [1.5, 3.0, 0.25, 4.0]),
        ("slt r0, c0, c1", [0.0, 1.0, 0.0, 0.0]),
        ("sge r0, c0, c1", [1.0, 0.0, 1.0, 1.0]),
        ("exp r0, c2.x", [4.0; 4]),
        ("log r0, c2.z", [3.0; 4]),
        ("log r0, -c2.z", [3.0; 4]),
        ("dst r0, c0, c1", [1.0, -6.0, 0.25, 2.0]),
        ("lrp r0, c4, c0, c1", [0.75, 1.75, -0.6875, 2.5]),
        ("frc r0, c0", [0.5, 0.0, 0.25, 0.0]),
        ("pow r0, c2.x, c2.z", [256.0; 4]),
        ("mov r0, c0\ncrs r0.xyz, c5, c6", [0.0, 0.0, 1.0, 4.0]),
        ("abs r0, c0", [1.5, 2.0, 0.25, 4.0]),
        ("nrm r0, c7", [0.6, 0.0, 0.8, 2.0]),
        (
            "mov r0, c0\nsincos r0.xy, c8.x, c8, c8",
            [1.0, 0.0, 0.25, 4.0],
        ),
        ("cmp r0, c1, c0, c2", [1.5, -2.0, 8.0, 4.0]),
        ("dp2add r0, c0, c1, c2.x", [-3.25; 4]),
        // Source modifiers and swizzles.
        ("mov r0, -c0", [-1.5, 2.0, -0.25, -4.0]),
        ("mov r0, c0_abs", [1.5, 2.0, 0.25, 4.0]),
        ("mov r0, -c0_abs", [-1.5, -2.0, -0.25, -4.0]),
        ("mov r0, c1_bias", [0.0, 2.5, -1.5, 1.5]),
        ("mov r0, c1_bx2", [0.0, 5.0, -3.0, 3.0]),
        ("mov r0, 1-c1", [0.5, -2.0, 2.0, -1.0]),
        ("mov r0, c1_x2", [1.0, 6.0, -2.0, 4.0]),
        ("mov r0, c0.wzyx", [4.0, 0.25, -2.0, 1.5]),
        ("mov r0, c0.y", [-2.0; 4]),
        ("mov r0, c0.xy", [1.5, -2.0, -2.0, -2.0]),
        // Write masks and saturate.
        ("mov r0, c1\nmov r0.yw, c0", [0.5, -2.0, -1.0, 4.0]),
        ("mov_sat r0, c0", [1.0, 0.0, 0.25, 1.0]),
        ("mov r0, c0\nmul_sat r0.xz, c0, c1", [0.75, -2.0, 0.0, 4.0]),
    ];
    for (body, want) in cases {
        let ps = format!("ps_2_0\n{body}\nmov oC0, r0\n");
        let got = run_ps(&ps, &consts);
        assert_close(got, *want, 1e-6, body);
    }
}

#[test]
fn ps_3_0_arithmetic_forms_and_def() {
    // SM3's one-operand sincos and sgn; def overrides the constant buffer.
    let ps = "ps_3_0\ndef c0, 0, 0.5, -3, 2\nsincos r0.xy, c0.x\nmov r0.zw, c0\nmov oC0, r0\n";
    let got = run_ps(ps, &[(0, [7.0; 4])]);
    assert_close(got, [1.0, 0.0, -3.0, 2.0], 1e-6, "sincos/def");
}

#[test]
fn vs_matrix_ops_and_outputs_reach_the_pixel_shader() {
    // Rows c4..c7 = a matrix with distinct rows; v1 = (1, 2, 3, 4) from the vertices.
    let rows = [
        [1.0, 0.0, 0.0, 1.0],
        [0.0, 2.0, 0.0, 0.0],
        [0.0, 0.0, 1.0, -1.0],
        [1.0, 1.0, 1.0, 1.0],
    ];
    let cases: &[(&str, [f32; 4])] = &[
        ("m4x4 oT0, v1, c4", [5.0, 4.0, -1.0, 10.0]),
        ("mov oT0, c8\nm4x3 oT0.xyz, v1, c4", [5.0, 4.0, -1.0, 0.5]),
        ("m3x4 oT0, v1, c4", [1.0, 4.0, 3.0, 6.0]),
        ("mov oT0, c8\nm3x3 oT0.xyz, v1, c4", [1.0, 4.0, 3.0, 0.5]),
        ("mov oT0, c8\nm3x2 oT0.xy, v1, c4", [1.0, 4.0, 0.5, 0.5]),
        // vs_2_0 relative addressing: a0.x = round(1.6) = 2 → c[a0.x + 4] = c6.
        (
            "mova a0.x, c9.x\nmov oT0, c[a0.x + 4]",
            [0.0, 0.0, 1.0, -1.0],
        ),
        // expp/logp in vs_2_0 are exp/log.
        ("expp oT0, c9.y", [8.0; 4]),
        ("lit oT0, c11", [1.0, 0.5, 8.0, 1.0]),
        ("lit oT0, c12", [1.0, 0.0, 0.0, 1.0]),
        // vs_2_0 sgn has two scratch temps.
        ("sgn r2, c13, r0, r1\nmov oT0, r2", [0.0, 1.0, -1.0, 1.0]),
    ];
    for (body, want) in cases {
        let vs = tr(&format!(
            "vs_2_0\ndcl_position v0\ndcl_texcoord0 v1\nmov oPos, v0\n{body}\n"
        ));
        let ps = tr("ps_2_0\ndcl t0\nmov oC0, t0\n");
        let mut d = Draw::new(&vs, &ps);
        d.attributes.push((1, vec![[1.0, 2.0, 3.0, 4.0]; 6]));
        d.vs_consts = (0..4).map(|k| (4 + k, rows[k])).collect();
        d.vs_consts.push((8, [0.5; 4]));
        d.vs_consts.push((9, [1.6, 3.0, 0.0, 0.0]));
        d.vs_consts.push((11, [0.5, 2.0, 0.0, 3.0]));
        d.vs_consts.push((12, [-0.5, 0.0, 0.0, 0.0]));
        d.vs_consts.push((13, [0.0, 2.0, -3.0, 0.5]));
        let got = d.run().remove(0)[5];
        assert_close(got, *want, 1e-5, body);
    }
}

#[test]
fn vertex_inputs_use_their_register_number_and_colours_are_clamped() {
    let vs = tr(
        "vs_2_0\ndcl_position v0\ndcl_color0 v3\ndcl_texcoord2 v7\nmov oPos, v0\nmov oD0, v3\nmov oT2, v7\n",
    );
    assert_eq!(
        vs.vertex_inputs,
        vec![
            VertexInput {
                location: 0,
                usage: Usage::Position,
                usage_index: 0
            },
            VertexInput {
                location: 3,
                usage: Usage::Color,
                usage_index: 0
            },
            VertexInput {
                location: 7,
                usage: Usage::TexCoord,
                usage_index: 2
            },
        ]
    );
    assert_eq!(vs.varyings, 1 << 0 | 1 << 4);
    let ps = tr("ps_2_0\ndcl v0\ndcl t2\nadd oC0, v0, t2\n");
    assert_eq!(ps.varyings, 1 << 0 | 1 << 4);
    let mut d = Draw::new(&vs, &ps);
    d.attributes.push((3, vec![[2.0, 0.25, -1.0, 0.5]; 6]));
    d.attributes.push((7, vec![[10.0, 20.0, 30.0, 40.0]; 6]));
    let got = d.run().remove(0)[0];
    assert_close(got, [11.0, 20.25, 30.0, 40.5], 1e-5, "v3 clamped + v7");
}

#[test]
fn vs_3_0_semantics_link_to_ps_3_0_and_key_fills_unwritten_outputs() {
    let vs = "vs_3_0\ndcl_position v0\ndcl_position o0\ndcl_texcoord3 o5\ndcl_normal o2\nmov o0, v0\nmov o5, c0\nmov o2, c1\n";
    let ps = tr(
        "ps_3_0\ndcl_normal v0\ndcl_texcoord3 v1\ndcl_color1 v2\nadd r0, v0, v1\nadd oC0, r0, v2\n",
    );
    // The pixel shader also reads COLOR1, which the vertex shader never writes: the
    // key makes the VS output it as zero so the stages link.
    let vs = translate_with(
        vs,
        &VariantKey {
            vs_outputs: Some(ps.varyings),
            ..Default::default()
        },
    );
    assert_eq!(ps.varyings, 1 << 11 | 1 << 5 | 1 << 1);
    assert_eq!(vs.varyings, ps.varyings);
    let mut d = Draw::new(&vs, &ps);
    d.vs_consts = vec![(0, [1.0, 2.0, 3.0, 4.0]), (1, [0.5, 0.25, 0.125, 2.0])];
    let got = d.run().remove(0)[9];
    assert_close(got, [1.5, 2.25, 3.125, 6.0], 1e-5, "semantic linking");
}

#[test]
fn half_pixel_offset_moves_geometry_to_d3d9_pixel_centres() {
    // A quad from window x = 0.25 to 2.25 (width 4): D3D9 samples pixel centres at
    // x = 0, 1, 2, 3, so it covers pixels 1 and 2. WebGPU's centres are at +0.5,
    // so without the fix-up it would cover pixels 0 and 1.
    let vs = tr("vs_2_0\ndcl_position v0\nmov oPos, v0\n");
    let ps = tr("ps_2_0\ndef c0, 1, 1, 1, 1\nmov oC0, c0\n");
    let x0 = 0.25 / 4.0 * 2.0 - 1.0;
    let x1 = 2.25 / 4.0 * 2.0 - 1.0;
    let (a, b, c, e) = (
        [x0, -1.0, 0.0, 1.0],
        [x1, -1.0, 0.0, 1.0],
        [x1, 1.0, 0.0, 1.0],
        [x0, 1.0, 0.0, 1.0],
    );
    let mut d = Draw::new(&vs, &ps);
    d.attributes = vec![(0, vec![a, b, c, a, c, e])];
    let covered =
        |d: &Draw| -> Vec<bool> { d.run().remove(0)[..4].iter().map(|p| p[0] == 1.0).collect() };
    assert_eq!(
        covered(&d),
        [true, true, false, false],
        "no fix-up: WebGPU rule"
    );
    d.fixup = [1.0 / SIZE as f32, -1.0 / SIZE as f32, 0.0, 0.0];
    assert_eq!(covered(&d), [false, true, true, false], "fix-up: D3D9 rule");
}

// ---- 1. textures and pixel-shader specials ------------------------------------------------

const RED: [u8; 4] = [255, 0, 0, 255];
const GREEN: [u8; 4] = [0, 255, 0, 255];
const BLUE: [u8; 4] = [0, 0, 255, 255];
const WHITE: [u8; 4] = [255, 255, 255, 255];
const GREY: [u8; 4] = [51, 102, 153, 204];

fn unorm(t: [u8; 4]) -> [f32; 4] {
    t.map(|x| f32::from(x) / 255.0)
}

fn mipped_2d(slot: u32) -> Texture {
    Texture {
        slot,
        kind: TextureKind::Tex2d,
        size: [2, 2, 1],
        levels: vec![vec![RED, GREEN, BLUE, WHITE], vec![GREY]],
    }
}

fn run_tex(ps: &str, consts: &[(usize, [f32; 4])], textures: Vec<Texture>) -> [f32; 4] {
    let vs = tr(PASS_VS);
    let ps = tr(ps);
    let mut d = Draw::new(&vs, &ps);
    d.ps_consts = consts.to_vec();
    d.textures = textures;
    d.run().remove(0)[0]
}

#[test]
fn texld_variants_sample_the_right_texel_and_level() {
    let c = [
        (0, [0.75, 0.25, 0.0, 0.0]), // texel (1, 0): green
        (1, [1.5, 1.5, 0.0, 2.0]),   // projected: (0.75, 0.75) → white
        (2, [0.25, 0.75, 0.0, 1.0]), // LOD/bias 1 → the 1×1 level
        (3, [4.0, 4.0, 0.0, 0.0]),   // gradients spanning the texture → level 1
    ];
    let cases: &[(&str, [u8; 4])] = &[
        ("texld r0, c0, s0", GREEN),
        ("texldp r0, c1, s0", WHITE),
        ("texld r0, c2, s0", BLUE),
        // The sampler's swizzle applies to the result (ps_2_x and up).
        ("texld r0, c0, s0.yxzw", [255, 0, 0, 255]),
    ];
    for (body, want) in cases {
        let version = if body.contains("s0.") {
            "ps_2_x"
        } else {
            "ps_2_0"
        };
        let ps = format!("{version}\ndcl_2d s0\n{body}\nmov oC0, r0\n");
        let got = run_tex(&ps, &c, vec![mipped_2d(0)]);
        assert_close(got, unorm(*want), 1e-6, body);
    }
    let ps3: &[(&str, [u8; 4])] = &[
        ("texldl r0, c2, s0", GREY),
        ("texldd r0, c0, s0, c3, c3", GREY),
        ("texldd r0, c0, s0, c8, c8", GREEN),
    ];
    for (body, want) in ps3 {
        let ps = format!("ps_3_0\ndcl_2d s0\n{body}\nmov oC0, r0\n");
        let got = run_tex(&ps, &c, vec![mipped_2d(0)]);
        assert_close(got, unorm(*want), 1e-6, body);
    }
}

#[test]
fn cube_and_volume_samplers() {
    // Cube faces +X -X +Y -Y +Z -Z, 1×1 each.
    let cube = Texture {
        slot: 1,
        kind: TextureKind::Cube,
        size: [1, 1, 6],
        levels: vec![vec![RED, GREEN, BLUE, WHITE, GREY, [1, 2, 3, 4]]],
    };
    // 2×2×2 volume: slice 0 red/green/blue/white, slice 1 grey everywhere.
    let volume = Texture {
        slot: 2,
        kind: TextureKind::Volume,
        size: [2, 2, 2],
        levels: vec![vec![RED, GREEN, BLUE, WHITE, GREY, GREY, GREY, GREY]],
    };
    let ps = "ps_2_0\ndcl_cube s1\ndcl_volume s2\ntexld r0, c0, s1\ntexld r1, c1, s1\ntexld r2, c2, s2\nmov oC0, r0\nmov oC1, r1\nmov oC2, r2\n";
    let vs = tr(PASS_VS);
    let ps = tr(ps);
    let mut d = Draw::new(&vs, &ps);
    d.targets = 3;
    d.ps_consts = vec![
        (0, [-1.0, 0.1, 0.2, 0.0]),   // -X face
        (1, [0.1, -0.2, -1.0, 0.0]),  // -Z face
        (2, [0.75, 0.75, 0.25, 0.0]), // slice 0, texel (1, 1)
    ];
    d.textures = vec![cube, volume];
    let out = d.run();
    assert_close(out[0][0], unorm(GREEN), 1e-6, "cube -X");
    assert_close(out[1][0], unorm([1, 2, 3, 4]), 1e-6, "cube -Z");
    assert_close(out[2][0], unorm(WHITE), 1e-6, "volume");
}

#[test]
fn texkill_discards_and_keeps_the_clear_colour() {
    let body = |r0: [f32; 4]| {
        let ps = "ps_2_0\nmov r0, c0\ntexkill r0\nmov oC0, c1\n";
        run_ps(ps, &[(0, r0), (1, [1.0; 4])])
    };
    assert_eq!(body([0.0, 1.0, 2.0, 3.0]), [1.0; 4], "nothing negative");
    assert_eq!(body([0.0, -0.5, 2.0, 1.0]), CLEAR, "negative y kills");
    // SM2+ tests all four components (shader model 1 only x, y, z).
    assert_eq!(body([0.0, 1.0, 2.0, -5.0]), CLEAR, "negative w kills");
    // With a write mask only the named components count.
    let masked = run_ps(
        "ps_2_0\nmov r0, c0\ntexkill r0.xw\nmov oC0, c1\n",
        &[(0, [1.0, -1.0, -1.0, 1.0]), (1, [1.0; 4])],
    );
    assert_eq!(masked, [1.0; 4]);
}

#[test]
fn vpos_vface_and_derivatives() {
    let vs = tr(PASS_VS);
    let ps = tr(
        "ps_3_0\ndcl vPos.xy\ndcl vFace\nmov r0, vPos\nmov r0.z, vFace\ndsx r1, vPos.x\ndsy r2, vPos.y\nmov r0.w, r1.x\nadd r0.w, r0.w, r2.x\nmov oC0, r0\n",
    );
    let d = Draw::new(&vs, &ps);
    let px = d.run().remove(0);
    for y in 0..SIZE as usize {
        for x in 0..SIZE as usize {
            // Integer pixel centres, front facing, d/dx + d/dy = 2.
            assert_eq!(
                px[y * 4 + x],
                [x as f32, y as f32, 1.0, 2.0],
                "pixel {x},{y}"
            );
        }
    }
    // A clockwise quad is back facing for WebGPU's default (CCW front).
    let mut d = Draw::new(&vs, &ps);
    let mut q = quad();
    q.reverse();
    d.attributes = vec![(0, q)];
    assert_eq!(d.run().remove(0)[0][2], -1.0);
}

#[test]
fn multiple_render_targets_and_depth_output() {
    let vs = tr(PASS_VS);
    let ps = tr("ps_2_0\nmov oC0, c0\nmov oC1, c1\nmov oC3, c2\nmov oDepth, c3.x\n");
    assert_eq!(ps.color_outputs, 0b1011);
    assert!(ps.writes_depth);
    let mut d = Draw::new(&vs, &ps);
    d.targets = 4;
    d.ps_consts = vec![(0, C0), (1, C1), (2, C2), (3, [0.25; 4])];
    d.depth = Some(0.5);
    let out = d.run();
    assert_eq!(out[0][0], C0);
    assert_eq!(out[1][0], C1);
    assert_eq!(out[2][0], CLEAR, "oC2 not written");
    assert_eq!(out[3][0], C2);
    // oDepth 0.75 fails the Less test against 0.5 (the vertices' z of 0 would pass).
    d.ps_consts[3] = (3, [0.75; 4]);
    assert_eq!(d.run()[0][0], CLEAR);
}

#[test]
fn texldb_biases_the_computed_lod() {
    // A 4×4 texture over the 4×4 target: one texel per pixel, LOD 0. Levels: red,
    // green, blue.
    let tex = Texture {
        slot: 0,
        kind: TextureKind::Tex2d,
        size: [4, 4, 1],
        levels: vec![vec![RED; 16], vec![GREEN; 4], vec![BLUE]],
    };
    let vs = tr(TEXCOORD_VS);
    for (body, want) in [
        ("texld r0, t0, s0", RED),
        ("mov r1, t0\nmov r1.w, c0.x\ntexldb r0, r1, s0", GREEN),
        ("mov r1, t0\nmov r1.w, c0.y\ntexldb r0, r1, s0", BLUE),
    ] {
        let ps = tr(&format!("ps_2_0\ndcl t0\ndcl_2d s0\n{body}\nmov oC0, r0\n"));
        let mut d = Draw::new(&vs, &ps);
        d.attributes.push((1, quad_uv()));
        d.ps_consts = vec![(0, [1.0, 2.0, 0.0, 0.0])];
        d.textures = vec![Texture {
            levels: tex.levels.clone(),
            ..tex
        }];
        for p in d.run().remove(0) {
            assert_close(p, unorm(want), 1e-6, body);
        }
    }
}

#[test]
fn sampler_lod_bias_variant_shifts_implicit_and_gradient_lods() {
    // texldb_biases_the_computed_lod's set-up (LOD 0 everywhere, levels red, green,
    // blue) with D3DSAMP_MIPMAPLODBIAS in the variant key.
    let vs = tr(TEXCOORD_VS);
    let texld = "texld r0, t0, s0";
    let texldb = "mov r1, t0\nmov r1.w, c0.x\ntexldb r0, r1, s0";
    // Gradients of one texel per pixel (LOD 0) given explicitly, and level 0 explicitly.
    let texldd = "texldd r0, t0, s0, c1, c2";
    let texldl = "mov r1, t0\nmov r1.w, c0.z\ntexldl r0, r1, s0";
    for (body, bias, want) in [
        (texld, 1.0f32, GREEN),
        (texld, 2.0, BLUE),
        (texld, -1.0, RED),
        (texld, f32::NAN, RED),
        (texldb, 1.0, BLUE),
        (texldd, 1.0, GREEN),
        (texldd, 0.0, RED),
        (texldl, 2.0, RED),
    ] {
        let mut key = VariantKey::default();
        key.ps_lod_bias[0] = bias.to_bits();
        let ps = translate_with(
            &format!(
                "ps_3_0\ndcl_texcoord0 v0\ndcl_2d s0\nmov r2, v0\n{}\nmov oC0, r0\n",
                body.replace("t0", "r2")
            ),
            &key,
        );
        let mut d = Draw::new(&vs, &ps);
        d.attributes.push((1, quad_uv()));
        d.ps_consts = vec![
            (0, [1.0, 0.0, 0.0, 0.0]),
            (1, [0.25, 0.0, 0.0, 0.0]),
            (2, [0.0, 0.25, 0.0, 0.0]),
        ];
        d.textures = vec![Texture {
            slot: 0,
            kind: TextureKind::Tex2d,
            size: [4, 4, 1],
            levels: vec![vec![RED; 16], vec![GREEN; 4], vec![BLUE]],
        }];
        for p in d.run().remove(0) {
            assert_close(p, unorm(want), 1e-6, &format!("{body} with bias {bias}"));
        }
    }
}

/// ps_2_0 writing the texel of sampler 0 at c0's coordinates.
const TEXLD_C0_PS: &str = "ps_2_0\ndcl_2d s0\ntexld r0, c0, s0\nmov oC0, r0\n";

#[test]
fn texture_read_variant_forces_alpha_and_replicates_luminance() {
    // One texel (200, 50, 10, 77): as stored, with alpha read as 1 (X8 formats), and as
    // the luminance of a one-channel L8 texture, the alpha of A8 and the (l, a) of A8L8;
    // ps_2_0 texld and ps_1_1 tex alike.
    let stored = [200u8, 50, 10, 77];
    for (read, want) in [
        (TextureRead::Rgba, stored),
        (TextureRead::OneAlpha, [200, 50, 10, 255]),
        (TextureRead::Luminance, [200, 200, 200, 255]),
        // A8 in a one-channel texture, A8L8 in a two-channel (l, a) one.
        (TextureRead::Alpha, [0, 0, 0, 200]),
        (TextureRead::LuminanceAlpha, [200, 200, 200, 50]),
        // V8U8 in a two-channel (u, v) texture: blue and alpha read 1.
        (TextureRead::SignedUv, [200, 50, 255, 255]),
    ] {
        let mut key = VariantKey::default();
        key.ps_texture_reads[0] = read;
        for ps in [TEXLD_C0_PS, "ps_1_1\ntex t0\nmov r0, t0\n"] {
            let vs = tr(if ps.starts_with("ps_1") {
                "vs_1_1\ndcl_position v0\nmov oPos, v0\nmov oT0, c0\n"
            } else {
                PASS_VS
            });
            let ps_t = translate_with(ps, &key);
            let mut d = Draw::new(&vs, &ps_t);
            d.ps_consts = vec![(0, [0.5, 0.5, 0.0, 0.0])];
            d.vs_consts = vec![(0, [0.5, 0.5, 0.0, 1.0])];
            d.textures = vec![texel(0, stored)];
            let got = d.run().remove(0)[0];
            assert_close(got, unorm(want), 1e-6, &format!("{read:?}: {ps}"));
        }
    }
}

#[test]
fn srgb_read_decodes_samples_and_srgb_write_encodes_outputs() {
    // sRGB 188/255 is linear 0.5029 (IEC 61966-2-1); linear 0.5 encodes to 0.7354.
    let stored = [188u8, 10, 255, 77];
    let dec = |v: f32| {
        if v <= 0.04045 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        }
    };
    let enc = |v: f32| {
        if v <= 0.0031308 {
            v * 12.92
        } else {
            1.055 * v.powf(1.0 / 2.4) - 0.055
        }
    };
    let t = unorm(stored);
    for (read, write, want) in [
        (false, false, t),
        (true, false, [dec(t[0]), dec(t[1]), dec(t[2]), t[3]]),
        (false, true, [enc(t[0]), enc(t[1]), enc(t[2]), t[3]]),
        (true, true, t),
    ] {
        let key = VariantKey {
            ps_srgb_read: u16::from(read),
            srgb_write: write,
            ..VariantKey::default()
        };
        let vs = tr(PASS_VS);
        let ps = translate_with(TEXLD_C0_PS, &key);
        let mut d = Draw::new(&vs, &ps);
        d.ps_consts = vec![(0, [0.5, 0.5, 0.0, 0.0])];
        d.textures = vec![texel(0, stored)];
        let got = d.run().remove(0)[0];
        assert_close(got, want, 1e-4, &format!("read {read} write {write}"));
    }
}

// ---- 2. flow control ----------------------------------------------------------------------

/// A pixel shader run with int/bool constants set by `setup`.
fn run_ps_with(ps: &str, consts: &[(usize, [f32; 4])], setup: impl Fn(Draw) -> Draw) -> [f32; 4] {
    let vs = tr(PASS_VS);
    let ps = tr(ps);
    let mut d = Draw::new(&vs, &ps);
    d.ps_consts = consts.to_vec();
    let d = setup(d);
    let pixels = d.run().remove(0);
    assert!(pixels.iter().all(|p| *p == pixels[0]));
    pixels[0]
}

#[test]
fn if_else_on_bool_constants() {
    let ps = "ps_3_0\nif b3\nmov r0, c0\nelse\nmov r0, c1\nendif\nmov oC0, r0\n";
    let consts = [(0, C0), (1, C1)];
    assert_eq!(run_ps_with(ps, &consts, |d| d.bool(true, 3, true)), C0);
    assert_eq!(run_ps_with(ps, &consts, |d| d.bool(true, 3, false)), C1);
    // A bool the shader defines wins over the buffer.
    let defined =
        "ps_3_0\ndefb b3, false\nif b3\nmov r0, c0\nelse\nmov r0, c1\nendif\nmov oC0, r0\n";
    assert_eq!(run_ps_with(defined, &consts, |d| d.bool(true, 3, true)), C1);
}

#[test]
fn loop_with_al_relative_constants_and_nesting() {
    // c10+k = (k, k², 1, 0); i0 = (count 3, start 1, step 2): aL = 1, 3, 5.
    let consts: Vec<(usize, [f32; 4])> = (0..8)
        .map(|k| (10 + k, [k as f32, (k * k) as f32, 1.0, 0.0]))
        .collect();
    let ps = "ps_3_0\nmov r0, c0\nloop aL, i0\nadd r0, r0, c[aL + 10]\nendloop\nmov oC0, r0\n";
    let got = run_ps_with(ps, &consts, |d| d.int(true, 0, [3, 1, 2, 0]));
    assert_eq!(got, [9.0, 35.0, 3.0, 0.0]);
    // Zero iterations, and counts past 255 are clamped (not run forever).
    assert_eq!(
        run_ps_with(ps, &consts, |d| d.int(true, 0, [0, 1, 2, 0])),
        [0.0; 4]
    );
    // Nested: the inner loop (aL = 0, 1) restores the outer aL (= 4, then 5) after it.
    let nested = "ps_3_0\ndefi i1, 2, 0, 1, 0\nmov r0, c0\nloop aL, i0\nloop aL, i1\nadd r0, r0, c[aL + 10]\nendloop\nadd r0, r0, c[aL + 10]\nendloop\nmov oC0, r0\n";
    let got = run_ps_with(nested, &consts, |d| d.int(true, 0, [2, 4, 1, 0]));
    // Inner twice: 2 × (c10 + c11) = (2, 2, 4, 0); outer: c14 + c15 = (9, 41, 2, 0).
    assert_eq!(got, [11.0, 43.0, 6.0, 0.0]);
}

#[test]
fn rep_break_and_breakc() {
    let consts = [(1, [1.0; 4]), (2, [2.5; 4])];
    let rep = "ps_2_x\nmov r0, c0\nrep i1\nadd r0, r0, c1\nendrep\nmov oC0, r0\n";
    assert_eq!(
        run_ps_with(rep, &consts, |d| d.int(true, 1, [4, 0, 0, 0])),
        [4.0; 4]
    );
    assert_eq!(
        run_ps_with(rep, &consts, |d| d.int(true, 1, [-3, 0, 0, 0])),
        [0.0; 4]
    );
    assert_eq!(
        run_ps_with(rep, &consts, |d| d.int(true, 1, [1000, 0, 0, 0])),
        [255.0; 4]
    );
    let breakc =
        "ps_2_x\nmov r0, c0\nrep i1\nadd r0, r0, c1\nbreak_ge r0.x, c2.x\nendrep\nmov oC0, r0\n";
    assert_eq!(
        run_ps_with(breakc, &consts, |d| d.int(true, 1, [10, 0, 0, 0])),
        [3.0; 4]
    );
    let brk = "ps_2_x\nmov r0, c0\nrep i1\nif_lt r0.x, c2.x\nadd r0, r0, c1\nelse\nbreak\nendif\nendrep\nmov oC0, r0\n";
    assert_eq!(
        run_ps_with(brk, &consts, |d| d.int(true, 1, [10, 0, 0, 0])),
        [3.0; 4]
    );
}

#[test]
fn subroutines_call_callnz_and_ret() {
    let ps = "ps_3_0\nmov r0, c0\ncall l0\ncallnz l1, b1\ncall l0\nmov oC0, r0\nret\nlabel l0\nadd r0, r0, c1\nret\nlabel l1\nmul r0, r0, c2\ncall l0\nret\n";
    let consts = [(0, [1.0; 4]), (1, [1.0; 4]), (2, [10.0; 4])];
    // (1 + 1) × 10 + 1 + 1 = 22 with b1; 1 + 1 + 1 = 3 without.
    assert_eq!(
        run_ps_with(ps, &consts, |d| d.bool(true, 1, true)),
        [22.0; 4]
    );
    assert_eq!(
        run_ps_with(ps, &consts, |d| d.bool(true, 1, false)),
        [3.0; 4]
    );
}

#[test]
fn setp_predication_and_breakp() {
    let consts = [(0, C0), (1, C1), (2, [7.0; 4])];
    // p0 = c0 > c1 = (true, false, true, true).
    let ps = "ps_3_0\nmov r0, c0\nsetp_gt p0, c0, c1\n(p0) mov r0, c2\n(!p0.y) add r0.xy, r0, c2\nmov oC0, r0\n";
    // (7, -2, 7, 7) then xy += 7 where !p0.y (true): (14, 5).
    assert_eq!(run_ps_with(ps, &consts, |d| d), [14.0, 5.0, 7.0, 7.0]);
    let brk = "ps_3_0\nmov r0, c3\nrep i0\nadd r0, r0, c4\nsetp_ge p0, r0, c5\nbreakp p0.x\nendrep\nif p0.x\nadd r0, r0, c4\nendif\nmov oC0, r0\n";
    let consts = [(3, [0.0; 4]), (4, [1.0; 4]), (5, [3.0; 4])];
    assert_eq!(
        run_ps_with(brk, &consts, |d| d.int(true, 0, [10, 0, 0, 0])),
        [4.0; 4]
    );
}

#[test]
fn relative_addressing_out_of_range_reads_zero() {
    let vs = tr("vs_2_0\ndcl_position v0\nmova a0.x, c0.x\nmov oPos, v0\nmov oT0, c[a0.x + 250]\n");
    let ps = tr("ps_2_0\ndcl t0\nmov oC0, t0\n");
    for (index, want) in [(5.0, [5.0; 4]), (6.0, [0.0; 4]), (-300.0, [0.0; 4])] {
        let mut d = Draw::new(&vs, &ps);
        d.vs_consts = vec![(0, [index; 4]), (255, [5.0; 4])];
        assert_close(d.run().remove(0)[0], want, 1e-6, "c[a0.x + 250]");
    }
}

// ---- malformed streams ----------------------------------------------------------------------

/// Shaders covering most of the translator, the seeds of the fuzz loop.
const SEEDS: &[&str] = &[
    "ps_2_0\ndef c0, 1, 0.5, -2, 4\ndcl t0.xy\ndcl v0\ndcl_2d s0\ntexld r0, t0, s0\nmad_sat r1, r0, c0, v0\ntexkill t0\ncmp r1.xy, -r1, c0, c1_abs\nmov oC0, r1\n",
    "ps_3_0\ndefi i0, 3, 0, 1, 0\ndefb b2, true\ndcl_texcoord0 v0\ndcl_cube s1\ndcl vPos.xy\nloop aL, i0\nadd r0, r0, c[aL + 2]\nbreak_gt r0.x, c1.x\nendloop\nif b2\ntexldl r1, v0, s1\nelse\nsetp_lt p0, r0, c3\n(p0) mov r1, vPos\nendif\ncall l3\nmov oC0, r1\nmov oDepth, r0.x\nret\nlabel l3\ndsx r2, r1\nrep i1\nbreakp !p0.y\nendrep\nret\n",
    "vs_2_0\ndcl_position v0\ndcl_normal v3\ndcl_texcoord1 v4\nmova a0.x, v3.x\nm4x4 oPos, v0, c[a0.x + 4]\nlit r0, v3\nsincos r1.xy, v4.x, c0, c1\nsgn r2, v3, r3, r4\nmov oD0, r0\nmov oT1, r1\nexpp oFog, r2.x\n",
    "vs_3_0\ndcl_position v0\ndcl_2d s0\ndcl_position o0\ndcl_texcoord2 o3\ndcl_psize o4\ntexldl r0, v0, s0\nmov o0, v0\nmov o3, r0\nmov o4, c0.x\n",
    "vs_1_1\ndcl_position v0\ndcl_color v1\nmov a0.x, v1.x\nm4x4 oPos, v0, c[a0.x + 2]\nexpp r0, v1.y\nlogp r1, v1.z\nadd oD0, r0, r1\n",
    "ps_1_4\ntexld r0, t0\ntexcrd r1.xyz, t1_dz\nphase\nmul r0.rgb, r0, r1_bx2\n+mov r0.a, c0\ncnd r0, r1, r0, c1\n",
    "ps_1_1\ntex t0\ntexcoord t1\nmul_x2 r0, t0, t1\nadd_sat r0.rgb, r0, v0\n+mul r0.a, 1-r0, v1\n",
];

/// Translating must never panic; what translates must pass naga.
fn check_stream(tokens: &[u32]) {
    if let Ok(t) = translate(tokens, &VariantKey::default()) {
        validate(&t.wgsl);
    }
}

#[test]
fn seeds_translate_and_validate() {
    for s in SEEDS {
        tr(s);
    }
}

#[test]
fn malformed_streams_are_errors() {
    let ps = assemble(SEEDS[1]).unwrap();
    // Every truncation loses END (or cuts an instruction): an error, never a panic.
    for len in 0..ps.len() {
        assert!(
            translate(&ps[..len], &VariantKey::default()).is_err(),
            "prefix {len}"
        );
        let mut cut = ps[..len].to_vec();
        cut.push(0xFFFF);
        check_stream(&cut);
    }
    let err = |src: &str| {
        let tokens = assemble(src).unwrap();
        translate(&tokens, &VariantKey::default()).unwrap_err()
    };
    for src in [
        "ps_2_0\nmov r40, c0\n",
        "ps_2_0\nmov r0, c300\n",
        "ps_3_0\nif b16\nendif\n",
    ] {
        assert!(matches!(err(src), TranslateError::Register { .. }), "{src}");
    }
    for src in [
        "ps_2_0\ntexld r0, t0, s0\n",
        "ps_3_0\ncall l1\nret\nlabel l1\ncall l2\nret\nlabel l2\ncall l1\nret\n",
        "ps_2_x\nbreak\n",
        "ps_2_x\nrep i0\n",
        "ps_2_x\nendif\n",
        "ps_3_0\nmov p0, c0\n",
    ] {
        assert!(matches!(err(src), TranslateError::Malformed(_)), "{src}");
    }
    assert!(
        matches!(err("vs_2_0\nmov r0, c0\n"), TranslateError::Malformed(_)),
        "no oPos"
    );
    assert!(
        matches!(err("ps_2_0\nlit r0, c0\n"), TranslateError::Opcode(_)),
        "lit is vs-only"
    );
    // loop exists in vs_2_0+ and ps_3_0, not in ps_2_0/ps_2_x (D3D9 and Wine refuse it).
    for version in ["ps_2_0", "ps_2_x"] {
        let src = format!("{version}\ndefi i0, 2, 0, 1, 0\nloop aL, i0\nendloop\nmov oC0, c0\n");
        assert!(matches!(err(&src), TranslateError::Opcode(_)), "{src}");
    }
    assert!(matches!(
        err("ps_3_0\nmov r0[aL], c0\nmov oC0, c0\n"),
        TranslateError::Unsupported(_)
    ));
    let raw = |tokens: &[u32]| translate(tokens, &VariantKey::default()).unwrap_err();
    assert!(matches!(
        raw(&[0xFFFF_0400, 0xFFFF]),
        TranslateError::Version(_)
    ));
    assert!(matches!(
        raw(&[0xFFFF_0200, 0x0000_0077, 0xFFFF]),
        TranslateError::Opcode(0x77)
    ));
    // Lengths and comment sizes past the end.
    assert!(matches!(
        raw(&[0xFFFF_0200, 0x0F00_0001, 0xFFFF]),
        TranslateError::Malformed(_)
    ));
    assert!(matches!(
        raw(&[0xFFFF_0200, 0x7FFF_FFFE, 0xFFFF]),
        TranslateError::Malformed(_)
    ));
    // An instruction length shorter than its operands.
    assert!(matches!(
        raw(&[0xFFFF_0200, 0x0100_0002, 0x800F_0000, 0xFFFF]),
        TranslateError::Malformed(_)
    ));
    // Tokens after END, odd byte counts, and a huge stream.
    assert!(
        raw(&[0xFFFF_0200, 0xFFFF, 0])
            .to_string()
            .contains("after END")
    );
    assert!(translate_bytes(&[0, 2, 0xFF, 0xFF, 0xFF], &VariantKey::default()).is_err());
    let mut huge = vec![0xFFFF_0200];
    huge.extend(std::iter::repeat_n(0u32, 40_000)); // 40000 NOPs
    huge.push(0xFFFF);
    assert_eq!(raw(&huge), TranslateError::TooLarge("instruction count"));
}

#[test]
fn fuzzed_streams_never_panic_and_valid_output_passes_naga() {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let seeds: Vec<Vec<u32>> = SEEDS.iter().map(|s| assemble(s).unwrap()).collect();
    let mut translated = 0;
    for round in 0..3000 {
        let mut t = seeds[round % seeds.len()].clone();
        for _ in 0..1 + next() % 3 {
            let i = 1 + (next() as usize) % (t.len() - 1);
            match next() % 4 {
                0 => t[i] ^= 1 << (next() % 32),
                1 => t[i] = next() as u32,
                2 => t[i] = (t[i] & !0x7FF) | (next() as u32 & 0x7FF), // register number
                _ => t[i] = (t[i] & 0xF000_0000) | (next() as u32 & 0x0FFF_FFFF),
            }
        }
        if translate(&t, &VariantKey::default()).is_ok() {
            translated += 1;
        }
        check_stream(&t);
    }
    // The mutations are mostly small: a good share still translates (and validated).
    assert!(
        translated > 100,
        "only {translated} mutated streams translated"
    );
}

// ---- 3. shader model 1 ------------------------------------------------------------------------

/// vs_1_1 feeding oT0–oT3 from c0–c3 and oD0 from c4; then a ps_1_x.
fn run_sm1(ps: &str, vs_consts: &[(usize, [f32; 4])], setup: impl Fn(&mut Draw)) -> [f32; 4] {
    run_sm1_key(ps, &VariantKey::default(), vs_consts, setup)
}

fn run_sm1_key(
    ps: &str,
    key: &VariantKey,
    vs_consts: &[(usize, [f32; 4])],
    setup: impl Fn(&mut Draw),
) -> [f32; 4] {
    let ps = translate_with(ps, key);
    let vs = translate_with(
        "vs_1_1\ndcl_position v0\nmov oPos, v0\nmov oT0, c0\nmov oT1, c1\nmov oT2, c2\nmov oT3, c3\nmov oD0, c4\n",
        &VariantKey {
            vs_outputs: Some(ps.varyings),
            ..Default::default()
        },
    );
    let mut d = Draw::new(&vs, &ps);
    d.vs_consts = vs_consts.to_vec();
    setup(&mut d);
    d.run().remove(0)[0]
}

/// A 1×1 texture holding `texel`.
fn texel(slot: u32, texel: [u8; 4]) -> Texture {
    Texture {
        slot,
        kind: TextureKind::Tex2d,
        size: [1, 1, 1],
        levels: vec![vec![texel]],
    }
}

fn quadrants(slot: u32) -> Texture {
    Texture {
        slot,
        kind: TextureKind::Tex2d,
        size: [2, 2, 1],
        levels: vec![vec![RED, GREEN, BLUE, WHITE]],
    }
}

#[test]
fn ps_1_1_tex_texcoord_arithmetic_and_cnd() {
    let tc = [(0, [0.75, 0.25, 0.0, 1.0]), (1, [0.5, 2.0, -1.0, 7.0])];
    let got = run_sm1("ps_1_1\ntex t0\nmov r0, t0\n", &tc, |d| {
        d.textures = vec![quadrants(0)]
    });
    assert_close(got, unorm(GREEN), 1e-6, "tex t0");
    let got = run_sm1("ps_1_1\ntexcoord t1\nmov r0, t1\n", &tc, |_| {});
    assert_close(
        got,
        [0.5, 1.0, 0.0, 1.0],
        1e-6,
        "texcoord clamps to [0, 1], w = 1",
    );
    // Constants are clamped to [-1, 1]; _x2 shift; co-issued alpha; bx2 and 1-x sources.
    let ps =
        "ps_1_1\ndef c0, 0.125, 0.25, -0.5, 2\nadd_x2 r0.rgb, v0, c0\n+mul r0.a, 1-v0, c0_bx2\n";
    let got = run_sm1(ps, &[(4, [0.25, 0.5, 0.125, 0.25])], |_| {});
    assert_close(got, [0.75, 1.5, -0.75, 0.75], 1e-6, "ps_1_1 arithmetic");
    // cnd on r0.a > 0.5.
    let cnd = "ps_1_1\ndef c1, 1, 0, 0, 1\ndef c2, 0, 1, 0, 1\nmov r0, v0\ncnd r0, r0.a, c1, c2\n";
    assert_close(
        run_sm1(cnd, &[(4, [0.0, 0.0, 0.0, 0.75])], |_| {}),
        [1.0, 0.0, 0.0, 1.0],
        1e-6,
        "cnd >",
    );
    assert_close(
        run_sm1(cnd, &[(4, [0.0, 0.0, 0.0, 0.25])], |_| {}),
        [0.0, 1.0, 0.0, 1.0],
        1e-6,
        "cnd <=",
    );
}

#[test]
fn ps_1_x_texture_address_instructions() {
    // t0 samples (r, g, b, a) = (191, 64, 0, 64)/255 ≈ (0.749, 0.251, 0, 0.251).
    let lookup = [191, 64, 0, 64];
    let tc = [
        (0, [0.5, 0.5, 0.0, 0.0]),
        (1, [1.0, 0.0, 0.0, 0.0]),
        (2, [0.0, 1.0, 0.0, 0.0]),
        (3, [0.0, 0.0, 1.0, 0.0]),
    ];
    let textures = |d: &mut Draw| {
        d.textures = vec![texel(0, lookup), quadrants(1), quadrants(2), quadrants(3)];
    };
    // texreg2ar: (a, r) = (0.251, 0.749) → texel (0, 1) blue; texreg2gb: (g, b) → red.
    let got = run_sm1(
        "ps_1_1\ntex t0\ntexreg2ar t1, t0\nmov r0, t1\n",
        &tc,
        textures,
    );
    assert_close(got, unorm(BLUE), 1e-6, "texreg2ar");
    let got = run_sm1(
        "ps_1_1\ntex t0\ntexreg2gb t1, t0\nmov r0, t1\n",
        &tc,
        textures,
    );
    assert_close(got, unorm(RED), 1e-6, "texreg2gb");
    // texm3x2: (dot(tc1, t0), dot(tc2, t0)) = (0.749, 0.251) → green from stage 2.
    let got = run_sm1(
        "ps_1_1\ntex t0\ntexm3x2pad t1, t0\ntexm3x2tex t2, t0\nmov r0, t2\n",
        &tc,
        textures,
    );
    assert_close(got, unorm(GREEN), 1e-6, "texm3x2tex");
    // texm3x3 (no lookup): the three dot products and 1.
    let got = run_sm1(
        "ps_1_2\ntex t0\ntexm3x3pad t1, t0\ntexm3x3pad t2, t0\ntexm3x3 t3, t0\nmov r0, t3\n",
        &tc,
        textures,
    );
    assert_close(
        got,
        [191.0 / 255.0, 64.0 / 255.0, 0.0, 1.0],
        1e-6,
        "texm3x3",
    );
    // texdp3: dot(tc1, t0) replicated.
    let got = run_sm1("ps_1_2\ntex t0\ntexdp3 t1, t0\nmov r0, t1\n", &tc, textures);
    assert_close(got, [191.0 / 255.0; 4], 1e-6, "texdp3");
    // texbem: tc1 = (0, 0.5) plus the matrix times (0.749, 0.251). Identity: (0.749,
    // 0.751), white from stage 1; a zero matrix leaves (0, 0.5): blue.
    let bem = "ps_1_1\ntex t0\ntexbem t1, t0\nmov r0, t1\n";
    let bem_tc = [(0, [0.5, 0.5, 0.0, 0.0]), (1, [0.0, 0.5, 0.0, 0.0])];
    let identity = |d: &mut Draw| {
        textures(d);
        d.bump[4..8].copy_from_slice(&[1.0, 0.0, 0.0, 1.0]);
    };
    assert_close(
        run_sm1(bem, &bem_tc, identity),
        unorm(WHITE),
        1e-6,
        "texbem identity",
    );
    assert_close(
        run_sm1(bem, &bem_tc, textures),
        unorm(BLUE),
        1e-6,
        "texbem zero matrix",
    );
}

#[test]
fn ps_1_4_phases_dependent_reads_and_vs_1_1() {
    let tc = [(0, [0.75, 0.75, 0.0, 0.0]), (1, [0.25, 0.75, 0.0, 2.0])];
    let ps = "ps_1_4\ntexcrd r1.xyz, t1\ntexld r0, t0\nphase\ntexld r2, r1\nadd r0, r0, r2\n";
    let got = run_sm1(ps, &tc, |d| d.textures = vec![quadrants(0), quadrants(2)]);
    // white (stage 0 at (0.75, 0.75)) + blue (stage 2 at (0.25, 0.75)).
    assert_close(got, [1.0, 1.0, 2.0, 2.0], 1e-6, "ps_1_4 phase 2 read");
    // _dw projection: (0.25, 0.75) / 2 → (0.125, 0.375): red.
    let got = run_sm1("ps_1_4\ntexld r0, t1_dw\n", &tc, |d| {
        d.textures = vec![quadrants(0)]
    });
    assert_close(got, unorm(RED), 1e-6, "texld _dw");
    // ps_1_4 cnd compares every component with 0.5.
    let cnd = "ps_1_4\ndef c0, 0.75, 0.25, 0.5, 1\ndef c1, 1, 1, 1, 1\ndef c2, -1, -1, -1, -1\ncnd r0, c0, c1, c2\n";
    assert_close(
        run_sm1(cnd, &[], |_| {}),
        [1.0, -1.0, -1.0, 1.0],
        1e-6,
        "ps_1_4 cnd",
    );
    // vs_1_1: mov to a0 floors; expp/logp are the four-component forms.
    let vs = tr(
        "vs_1_1\ndcl_position v0\nmov a0.x, c0.x\nmov oPos, v0\nmov oT0, c[a0.x + 2]\nexpp oT1, c1.x\nlogp oT2, c1.y\n",
    );
    let ps = tr("ps_2_0\ndcl t0\ndcl t1\ndcl t2\nmov oC0, t0\nmov oC1, t1\nmov oC2, t2\n");
    let mut d = Draw::new(&vs, &ps);
    d.targets = 3;
    d.vs_consts = vec![(0, [1.7; 4]), (1, [2.5, 8.0, 0.0, 0.0]), (3, C1)];
    let out = d.run();
    assert_close(out[0][0], C1, 1e-6, "c[a0.x + 2] with a0.x = floor(1.7)");
    assert_close(out[1][0], [4.0, 0.5, 2f32.powf(2.5), 1.0], 1e-5, "expp");
    assert_close(out[2][0], [3.0, 1.0, 3.0, 1.0], 1e-5, "logp");
}

#[test]
fn ps_1_x_reflection_depth_and_bump_luminance() {
    // t0 = normal (0, 0, 1); rows tc1..tc3 = identity with the eye vector in .w.
    let tc = [
        (0, [0.5, 0.5, 0.0, 0.0]),
        (1, [1.0, 0.0, 0.0, 2.0]),
        (2, [0.0, 1.0, 0.0, 0.0]),
        (3, [0.0, 0.0, 1.0, 1.0]),
    ];
    let mut kinds = [TextureKind::Tex2d; 8];
    kinds[3] = TextureKind::Cube;
    let key = VariantKey {
        ps1_sampler_kinds: kinds,
        ..Default::default()
    };
    let cube = Texture {
        slot: 3,
        kind: TextureKind::Cube,
        size: [1, 1, 6],
        levels: vec![vec![RED, GREEN, BLUE, WHITE, GREY, [1, 2, 3, 4]]],
    };
    let setup = |d: &mut Draw| {
        d.textures = vec![
            texel(0, [0, 0, 255, 255]),
            Texture {
                levels: cube.levels.clone(),
                ..cube
            },
        ];
        d.ps_consts = vec![(0, [2.0, 0.0, 1.0, 0.0])];
    };
    let pads = "ps_1_1\ntex t0\ntexm3x3pad t1, t0\ntexm3x3pad t2, t0\n";
    // The normal itself: +Z (grey).
    let got = run_sm1_key(
        &format!("{pads}texm3x3tex t3, t0\nmov r0, t3\n"),
        &key,
        &tc,
        setup,
    );
    assert_close(got, unorm(GREY), 1e-6, "texm3x3tex");
    // vspec: the eye (2, 0, 1) from the rows' w reflects about +Z to (-2, 0, 1): -X.
    let got = run_sm1_key(
        &format!("{pads}texm3x3vspec t3, t0\nmov r0, t3\n"),
        &key,
        &tc,
        setup,
    );
    assert_close(got, unorm(GREEN), 1e-6, "texm3x3vspec");
    let spec = |d: &mut Draw| {
        setup(d);
        d.ps_consts = vec![(0, [0.5, 0.0, 0.25, 0.0])]; // reflects to (-0.5, 0, 0.25): -X
    };
    let got = run_sm1_key(
        &format!("{pads}texm3x3spec t3, t0, c0\nmov r0, t3\n"),
        &key,
        &tc,
        spec,
    );
    assert_close(got, unorm(GREEN), 1e-6, "texm3x3spec");

    // texm3x2depth: depth = dot(tc1, t0) / dot(tc2, t0) against a 0.5 depth buffer.
    let lookup = [191, 64, 0, 64];
    let depth_ps =
        "ps_1_3\ndef c0, 1, 1, 1, 1\ntex t0\ntexm3x2pad t1, t0\ntexm3x2depth t2, t0\nmov r0, c0\n";
    let depth = |row1: [f32; 4]| {
        let tc = [(1, row1), (2, [1.0, 1.0, 0.0, 0.0])];
        run_sm1(depth_ps, &tc, |d| {
            d.textures = vec![texel(0, lookup)];
            d.depth = Some(0.5);
        })
    };
    assert_eq!(
        depth([0.0, 1.0, 0.0, 0.0]),
        [1.0; 4],
        "0.251 passes Less 0.5"
    );
    assert_eq!(depth([1.0, 0.0, 0.0, 0.0]), CLEAR, "0.749 fails");
    // texdepth (ps_1_4): r5.r / r5.g.
    let texdepth = |r: f32| {
        let ps = "ps_1_4\ndef c0, 1, 1, 1, 1\ntexcrd r5.rgb, t0\ntexdepth r5\nphase\nmov r0, c0\n";
        run_sm1(ps, &[(0, [r, 1.0, 0.0, 0.0])], |d| d.depth = Some(0.5))
    };
    assert_eq!(texdepth(0.25), [1.0; 4]);
    assert_eq!(texdepth(0.75), CLEAR);

    // texdp3tex: (dot(tc1, t0), 0) = (0.749, 0) → green; texreg2rgb: (0.749, 0.251) → green.
    let tc2 = [(0, [0.5, 0.5, 0.0, 0.0]), (1, [1.0, 0.0, 0.0, 0.0])];
    let two = |d: &mut Draw| d.textures = vec![texel(0, lookup), quadrants(1)];
    let got = run_sm1("ps_1_2\ntex t0\ntexdp3tex t1, t0\nmov r0, t1\n", &tc2, two);
    assert_close(got, unorm(GREEN), 1e-6, "texdp3tex");
    let got = run_sm1("ps_1_2\ntex t0\ntexreg2rgb t1, t0\nmov r0, t1\n", &tc2, two);
    assert_close(got, unorm(GREEN), 1e-6, "texreg2rgb");
    // texbeml: the identity bump matrix, luminance scale 0, offset 0.5: half of white.
    let bem_tc = [(0, [0.5, 0.5, 0.0, 0.0]), (1, [0.0, 0.5, 0.0, 0.0])];
    let got = run_sm1(
        "ps_1_1\ntex t0\ntexbeml t1, t0\nmov r0, t1\n",
        &bem_tc,
        |d| {
            d.textures = vec![texel(0, lookup), quadrants(1)];
            d.bump[4..8].copy_from_slice(&[1.0, 0.0, 0.0, 1.0]);
            d.bump[32 + 4..32 + 6].copy_from_slice(&[0.0, 0.5]);
        },
    );
    assert_close(got, [0.5, 0.5, 0.5, 1.0], 1e-6, "texbeml");
    // The luminance is not clamped (D3D9's formula, and Wine's d3d9): offset 1.5 brightens.
    let got = run_sm1(
        "ps_1_1\ntex t0\ntexbeml t1, t0\nmov r0, t1\n",
        &bem_tc,
        |d| {
            d.textures = vec![texel(0, lookup), quadrants(1)];
            d.bump[4..8].copy_from_slice(&[1.0, 0.0, 0.0, 1.0]);
            d.bump[32 + 4..32 + 6].copy_from_slice(&[0.0, 1.5]);
        },
    );
    assert_close(got, [1.5, 1.5, 1.5, 1.0], 1e-6, "texbeml above 1");
    // bem (ps_1_4): r1.xy = r0.xy + M(stage 1) · r2.xy with M = [[1, 0], [0, 2]].
    let bem = "ps_1_4\ntexcrd r0.xyz, t0\ntexcrd r2.xyz, t1\nbem r1.xy, r0, r2\nmov r0, r1\n";
    let got = run_sm1(
        bem,
        &[(0, [0.25, 0.5, 0.0, 0.0]), (1, [0.5, 0.125, 0.0, 0.0])],
        |d| {
            d.bump[4..8].copy_from_slice(&[1.0, 0.0, 0.0, 2.0]);
        },
    );
    assert_close(got, [0.75, 0.75, 0.0, 0.0], 1e-6, "bem");
    // ps_1_x texkill tests the coordinate, not the sampled colour.
    let kill = "ps_1_1\ndef c0, 1, 1, 1, 1\ntex t0\ntexkill t0\nmov r0, c0\n";
    let k = |tc0: [f32; 4]| run_sm1(kill, &[(0, tc0)], |d| d.textures = vec![texel(0, WHITE)]);
    assert_eq!(
        k([0.5, 0.5, 0.5, -1.0]),
        [1.0; 4],
        "w is not tested in ps_1_x"
    );
    assert_eq!(k([0.5, -0.5, 0.5, 1.0]), CLEAR);
}

#[test]
fn predicated_texkill_and_negated_callnz() {
    // p0 = (c0 > 0) = (false, true, false, false): only y's test counts.
    let ps = "ps_3_0\nmov r1, c1\nsetp_gt p0, c0, c2\n(p0) texkill r1\nmov oC0, c3\n";
    let run = |c1: [f32; 4]| {
        run_ps_with(
            ps,
            &[(0, [-1.0, 1.0, -1.0, -1.0]), (1, c1), (3, [1.0; 4])],
            |d| d,
        )
    };
    assert_eq!(
        run([-1.0, 1.0, 1.0, 1.0]),
        [1.0; 4],
        "x negative but not predicated"
    );
    assert_eq!(
        run([1.0, -1.0, 1.0, 1.0]),
        CLEAR,
        "y negative and predicated"
    );
    let call =
        "ps_3_0\nmov r0, c0\ncallnz l2, !b0\nmov oC0, r0\nret\nlabel l2\nadd r0, r0, c1\nret\n";
    let consts = [(0, [1.0; 4]), (1, [2.0; 4])];
    assert_eq!(
        run_ps_with(call, &consts, |d| d.bool(true, 0, false)),
        [3.0; 4]
    );
    assert_eq!(
        run_ps_with(call, &consts, |d| d.bool(true, 0, true)),
        [1.0; 4]
    );
    // A predicate on a flow-control instruction is refused, not ignored.
    let tokens = assemble("ps_3_0\nrep i0\n(p0) break\nendrep\nmov oC0, c0\n").unwrap();
    assert!(matches!(
        translate(&tokens, &VariantKey::default()),
        Err(TranslateError::Unsupported(_))
    ));
}

#[test]
fn sm3_relative_inputs_and_outputs_through_al() {
    // The VS writes o[aL + 1] = c[aL + 4] for aL = 0..2 (texcoords 0..2); the PS sums
    // v[aL] × c[aL] with weights 1, 10, 100, so each register must land in its place.
    let vs = tr(
        "vs_3_0\ndefi i0, 3, 0, 1, 0\ndcl_position v0\ndcl_position o0\ndcl_texcoord0 o1\ndcl_texcoord1 o2\ndcl_texcoord2 o3\nmov o0, v0\nloop aL, i0\nmov o[aL + 1].xy, c[aL + 4]\nendloop\n",
    );
    let ps = tr(
        "ps_3_0\ndefi i0, 3, 0, 1, 0\ndcl_texcoord0 v0\ndcl_texcoord1 v1\ndcl_texcoord2 v2\nmov r0, c3\nloop aL, i0\nmad r0, v[aL], c[aL], r0\nendloop\nmov oC0, r0\n",
    );
    let mut d = Draw::new(&vs, &ps);
    d.vs_consts = vec![
        (4, [1.0, 2.0, 5.0, 5.0]),
        (5, [3.0, 4.0, 5.0, 5.0]),
        (6, [5.0, 6.0, 5.0, 5.0]),
    ];
    d.ps_consts = vec![(0, [1.0; 4]), (1, [10.0; 4]), (2, [100.0; 4])];
    // x: 1 + 30 + 500, y: 2 + 40 + 600; z, w were never written (masked .xy).
    assert_close(
        d.run().remove(0)[0],
        [531.0, 642.0, 0.0, 0.0],
        1e-5,
        "o[aL]/v[aL]",
    );
}

/// The assembler's encodings against the D3D9 token format (tokens as the Microsoft
/// assembler emits them), so the translator is not only tested against itself.
#[test]
fn assembler_matches_the_d3d9_token_format() {
    let cases: &[(&str, &[u32])] = &[
        (
            "ps_2_0\nmov oC0, c0\n",
            &[0xFFFF_0200, 0x0200_0001, 0x800F_0800, 0xA0E4_0000],
        ),
        (
            "ps_2_0\ndcl_cube s1\ntexldp r0, t1, s1\n",
            &[
                0xFFFF_0200,
                0x0200_001F,
                0x9800_0000,
                0xA00F_0801,
                0x0301_0042,
                0x800F_0000,
                0xB0E4_0001,
                0xA0E4_0801,
            ],
        ),
        (
            "ps_1_3\nmov_x4_sat r0.a, -r1_bx2.a\n",
            &[0xFFFF_0103, 0x0000_0001, 0x8218_0000, 0x85FF_0001],
        ),
        (
            "ps_1_3\ntexbem_d4 t1, t0\n",
            &[0xFFFF_0103, 0x0000_0043, 0xBE0F_0001, 0xB0E4_0000],
        ),
        (
            "ps_1_4\nadd r0.rgb, r1, r2\n+add r0.a, r1, r2_dz\n",
            &[
                0xFFFF_0104,
                0x0000_0002,
                0x8007_0000,
                0x80E4_0001,
                0x80E4_0002,
                0x4000_0002,
                0x8008_0000,
                0x80E4_0001,
                0x89E4_0002,
            ],
        ),
        (
            "vs_2_0\nmov r0, -c[a0.w + 5].x\n",
            &[
                0xFFFE_0200,
                0x0300_0001,
                0x800F_0000,
                0xA100_2005,
                0xB0FF_0000,
            ],
        ),
        (
            "vs_2_0\ndefi i1, -1, 40, 30, 10\nloop aL, i1\nendloop\ncallnz l3, !b2\n",
            &[
                0xFFFE_0200,
                0x0500_0030,
                0xF00F_0001,
                0xFFFF_FFFF,
                40,
                30,
                10,
                0x0200_001B,
                0xF0E4_0800,
                0xF0E4_0001,
                0x0000_001D,
                0x0200_001A,
                0xA0E4_1003,
                0xEDE4_0802,
            ],
        ),
        (
            "vs_2_x\nsetp_le p0, r0, r1\n(!p0.y) add r2.xz, r2, r3\nif_ne r0.x, c0.y\nendif\n",
            &[
                0xFFFE_0201,
                0x0306_005E,
                0xB00F_1000,
                0x80E4_0000,
                0x80E4_0001,
                0x1400_0002,
                0x8005_0002,
                0xBD55_1000,
                0x80E4_0002,
                0x80E4_0003,
                0x0205_0029,
                0x8000_0000,
                0xA055_0000,
                0x0000_002B,
            ],
        ),
        (
            "vs_1_1\ndcl_position v0\nmov oPos, v0\n",
            &[
                0xFFFE_0101,
                0x0000_001F,
                0x8000_0000,
                0x900F_0000,
                0x0000_0001,
                0xC00F_0000,
                0x90E4_0000,
            ],
        ),
    ];
    for (src, want) in cases {
        let mut want = want.to_vec();
        want.push(0x0000_FFFF);
        assert_eq!(assemble(src).unwrap(), want, "{src}");
    }
}

#[test]
fn alpha_test_variant_discards_by_the_8_bit_alpha() {
    // oC0.a = 0.5 is 128 in 8 bits (127.5 rounds up).
    let vs = tr(PASS_VS);
    let run = |func: CompareFunc, reference: u8| {
        let key = VariantKey {
            alpha_test: Some(AlphaTest { func, reference }),
            ..Default::default()
        };
        let ps = translate_with("ps_2_0\nmov oC0, c0\n", &key);
        let mut d = Draw::new(&vs, &ps);
        d.ps_consts = vec![(0, [1.0, 1.0, 1.0, 0.5])];
        d.run().remove(0)[0] != CLEAR
    };
    assert!(run(CompareFunc::Equal, 128));
    assert!(!run(CompareFunc::Equal, 127));
    assert!(run(CompareFunc::Greater, 127));
    assert!(!run(CompareFunc::Greater, 128));
    assert!(run(CompareFunc::LessEqual, 128));
    assert!(!run(CompareFunc::Less, 128));
    assert!(!run(CompareFunc::Never, 0));
    assert!(run(CompareFunc::Always, 255));
    // ps_1_x tests r0.a.
    let key = VariantKey {
        alpha_test: Some(AlphaTest {
            func: CompareFunc::GreaterEqual,
            reference: 200,
        }),
        ..Default::default()
    };
    let ps = translate_with("ps_1_1\nmov r0, c0\n", &key);
    let mut d = Draw::new(&vs, &ps);
    d.ps_consts = vec![(0, [1.0, 1.0, 1.0, 0.75])];
    assert_eq!(d.run().remove(0)[0], CLEAR, "191 < 200");
}

#[test]
fn sm3_semantics_packed_in_one_register_keep_their_components() {
    // The VS packs TEXCOORD0 into o1.xy and TEXCOORD1 into o1.zw; the PS reads them
    // back unpacked (v0.xy, v1.zw) and packed again (v2.xy/.zw): positions are kept.
    let vs = "vs_3_0\ndcl_position v0\ndcl_position o0\ndcl_texcoord0 o1.xy\ndcl_texcoord1 o1.zw\nmov o0, v0\nmov o1, c0\n";
    for (ps, want) in [
        (
            "ps_3_0\ndcl_texcoord0 v0.xy\ndcl_texcoord1 v1.zw\nadd oC0, v0, v1\n",
            [1.0, 2.0, 3.0, 4.0],
        ),
        (
            "ps_3_0\ndcl_texcoord0 v2.xy\ndcl_texcoord1 v2.zw\nmov oC0, v2\n",
            [1.0, 2.0, 3.0, 4.0],
        ),
        (
            "ps_3_0\ndcl_texcoord1 v0\nmov oC0, v0\n",
            [0.0, 0.0, 3.0, 4.0],
        ),
    ] {
        let ps = tr(ps);
        let vs = translate_with(
            vs,
            &VariantKey {
                vs_outputs: Some(ps.varyings),
                ..Default::default()
            },
        );
        let mut d = Draw::new(&vs, &ps);
        d.vs_consts = vec![(0, [1.0, 2.0, 3.0, 4.0])];
        assert_close(d.run().remove(0)[0], want, 1e-5, &ps.wgsl);
    }
}

#[test]
fn vs_3_0_samples_a_vertex_texture_with_texldl() {
    // Vertex texture fetch (D3DVERTEXTEXTURESAMPLER1): level 1 of the mipped texture
    // at LOD 1 is grey, level 0 at (0.75, 0.25) green.
    let vs = tr(
        "vs_3_0\ndcl_position v0\ndcl_2d s1\ndcl_position o0\ndcl_texcoord0 o1\ndcl_texcoord1 o2\nmov o0, v0\ntexldl o1, c0, s1\ntexldl o2, c1, s1\n",
    );
    assert_eq!(
        vs.samplers,
        vec![SamplerUse {
            slot: 1,
            kind: TextureKind::Tex2d
        }]
    );
    let ps = tr("ps_3_0\ndcl_texcoord0 v0\ndcl_texcoord1 v1\nmov oC0, v0\nmov oC1, v1\n");
    let mut d = Draw::new(&vs, &ps);
    d.targets = 2;
    d.vs_consts = vec![(0, [0.75, 0.25, 0.0, 0.0]), (1, [0.25, 0.25, 0.0, 1.0])];
    d.textures = vec![mipped_2d(1)];
    let out = d.run();
    assert_close(out[0][0], unorm(GREEN), 1e-5, "vertex texldl level 0");
    assert_close(out[1][0], unorm(GREY), 1e-5, "vertex texldl level 1");
}

#[test]
fn largest_streams_are_bounded() {
    // 32767 four-row matrix products with relative addressing: the biggest output
    // per token the translator writes. It must stop at the WGSL cap, quickly.
    let mut src = String::from("vs_2_0\ndcl_position v0\nmov oPos, v0\n");
    for _ in 0..32_000 {
        src.push_str("m4x4 r0, r1, c[a0.x + 4]\n");
    }
    let tokens = assemble(&src).unwrap();
    let start = std::time::Instant::now();
    let result = translate(&tokens, &VariantKey::default());
    assert_eq!(result.unwrap_err(), TranslateError::TooLarge("WGSL output"));
    assert!(start.elapsed().as_secs() < 5, "took {:?}", start.elapsed());
    // The same count of small instructions fits, and naga accepts it.
    let mut src = String::from("ps_2_0\n");
    for _ in 0..8_000 {
        src.push_str("add r0, r0, c1\n");
    }
    src.push_str("mov oC0, r0\n");
    let t = tr(&src);
    assert!(t.wgsl.len() < MAX_WGSL_BYTES);
}

#[test]
fn integer_vertex_inputs_are_declared_as_integers_and_converted() {
    let src = "vs_2_0\ndcl_position v0\ndcl_blendindices v1\ndcl_texcoord v2\n\
               mov oPos, v0\nadd oT0, v1, v2\n";
    let plain = tr(src);
    assert!(plain.wgsl.contains("@location(1) in_v1: vec4<f32>"));
    let t = translate_with(
        src,
        &VariantKey {
            vs_uint_inputs: 1 << 1,
            vs_sint_inputs: 1 << 2,
            ..Default::default()
        },
    );
    assert!(
        t.wgsl.contains("@location(1) in_v1: vec4<u32>"),
        "{}",
        t.wgsl
    );
    assert!(
        t.wgsl.contains("@location(2) in_v2: vec4<i32>"),
        "{}",
        t.wgsl
    );
    assert_eq!(t.vertex_inputs, plain.vertex_inputs);
}
