//! Depth/stencil surfaces keep two copies in the GPU executor: the guest's bits in a raw
//! colour texture (D24S8 words as R32Uint, D32F as R32Float, D16 as R16Uint), which
//! uploads, dirty ranges, copies, clears and write-backs use byte for byte, and a real
//! depth/stencil attachment that draws test against. Whichever copy changed last is
//! converted into the other before the other is used ([`Newer`]), with full-screen passes:
//! - raw → attachment: a fragment shader writes `frag_depth` from the raw texel; stencil
//!   (D24S8) is rebuilt bit by bit, one pass per bit that REPLACEs the stencil through a
//!   write mask of that bit where the raw stencil has it set (WGSL cannot export stencil);
//! - attachment → raw: a shader reads the depth and stencil aspects and writes the raw
//!   texel (D24 as round(z * (2^24 - 1)), exact for the values the first pass wrote).

use std::cell::Cell;
use std::sync::OnceLock;

use aero_protocol::pci::Format;

/// Which copy of a depth surface holds its current contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Newer {
    Neither,
    /// The raw texture (guest uploads, copies, clears).
    Raw,
    /// The attachment (draws).
    Attachment,
}

/// A depth format's render attachment and which copy is current.
pub(super) struct DepthAttachment {
    pub(super) texture: wgpu::Texture,
    /// Both aspects: the draw path's depth/stencil attachment.
    pub(super) view: wgpu::TextureView,
    depth_view: wgpu::TextureView,
    stencil_view: Option<wgpu::TextureView>,
    pub(super) newer: Cell<Newer>,
}

/// The attachment format draws use for a depth format. D24S8 is Depth32FloatStencil8
/// where the device has it (`float_stencil`): a float attachment stores the float the
/// raw → attachment pass writes exactly, so every 24-bit value comes back unchanged;
/// Depth24PlusStencil8's own float → 24-bit conversion differs between drivers (Mesa's
/// llvmpipe scales by 2^24, not 2^24 - 1) and moves some values by one.
pub(super) fn attachment_format(
    format: Format,
    float_stencil: bool,
) -> Option<wgpu::TextureFormat> {
    Some(match format {
        Format::D24UnormS8Uint if float_stencil => wgpu::TextureFormat::Depth32FloatStencil8,
        Format::D24UnormS8Uint => wgpu::TextureFormat::Depth24PlusStencil8,
        Format::D32Float => wgpu::TextureFormat::Depth32Float,
        Format::D16Unorm => wgpu::TextureFormat::Depth16Unorm,
        _ => return None,
    })
}

impl DepthAttachment {
    pub(super) fn new(
        device: &wgpu::Device,
        format: Format,
        width: u32,
        height: u32,
    ) -> Option<Self> {
        let format = attachment_format(format, float_stencil(device))?;
        let texture = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("aerogpu depth attachment"),
            size: wgpu::Extent3d {
                width,
                height,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        });
        let aspect_view = |aspect| {
            texture.create_view(&wgpu::TextureViewDescriptor {
                aspect,
                ..Default::default()
            })
        };
        Some(Self {
            view: texture.create_view(&Default::default()),
            depth_view: aspect_view(wgpu::TextureAspect::DepthOnly),
            stencil_view: format
                .has_stencil_aspect()
                .then(|| aspect_view(wgpu::TextureAspect::StencilOnly)),
            texture,
            newer: Cell::new(Newer::Neither),
        })
    }
}

/// The attachment clear equal to a whole surface of `texel` (guest bytes), where both
/// conversions are exact whatever the GPU's float rounding: depth 0 or 1 (D24S8, D16) or
/// any D32F value in [0, 1], with the D24S8 stencil.
pub(super) fn exact_clear(format: Format, texel: &[u8]) -> Option<(f32, u32)> {
    let word = texel
        .iter()
        .rev()
        .fold(0u32, |w, &b| (w << 8) | u32::from(b));
    let (z, max, stencil) = match format {
        Format::D24UnormS8Uint if texel.len() == 4 => (word >> 8, 0xFF_FFFF, word & 0xFF),
        Format::D16Unorm if texel.len() == 2 => (word, 0xFFFF, 0),
        Format::D32Float if texel.len() == 4 => {
            let d = f32::from_bits(word);
            return ((0.0..=1.0).contains(&d) && d.is_sign_positive()).then_some((d, 0));
        }
        _ => return None,
    };
    match z {
        0 => Some((0.0, stencil)),
        z if z == max => Some((1.0, stencil)),
        _ => None,
    }
}

const SHADER: &str = r#"
@vertex
fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
    let uv = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));
    return vec4<f32>(uv * 2.0 - 1.0, 0.0, 1.0);
}

// The float a D24 value z becomes (the attachment → raw pass inverts exactly this).
fn d24_float(z: u32) -> f32 {
    return f32(z) / 16777215.0;
}

fn d24_word(d: f32) -> u32 {
    let c = u32(clamp(round(d * 16777215.0), 0.0, 16777215.0));
    for (var k = max(c, 1u) - 1u; k <= min(c + 1u, 16777215u); k++) {
        if d24_float(k) == d {
            return k;
        }
    }
    return c;
}
"#;

const TO_ATTACHMENT_UINT: &str = r#"
@group(0) @binding(0) var raw: texture_2d<u32>;
override bit: u32 = 0u;

fn word(p: vec4<f32>) -> u32 {
    return textureLoad(raw, vec2<i32>(p.xy), 0).x;
}

@fragment
fn depth_d24(@builtin(position) p: vec4<f32>) -> @builtin(frag_depth) f32 {
    return d24_float(word(p) >> 8u);
}

@fragment
fn depth_d16(@builtin(position) p: vec4<f32>) -> @builtin(frag_depth) f32 {
    return f32(word(p) & 0xFFFFu) / 65535.0;
}

@fragment
fn stencil_bit(@builtin(position) p: vec4<f32>) {
    if ((word(p) >> bit) & 1u) == 0u {
        discard;
    }
}
"#;

const TO_ATTACHMENT_FLOAT: &str = r#"
@group(0) @binding(0) var raw: texture_2d<f32>;

@fragment
fn depth_d32(@builtin(position) p: vec4<f32>) -> @builtin(frag_depth) f32 {
    return clamp(textureLoad(raw, vec2<i32>(p.xy), 0).x, 0.0, 1.0);
}
"#;

const TO_RAW: &str = r#"
@group(0) @binding(0) var depth: texture_depth_2d;

fn depth_at(p: vec4<f32>) -> f32 {
    return textureLoad(depth, vec2<i32>(p.xy), 0);
}

@fragment
fn raw_d16(@builtin(position) p: vec4<f32>) -> @location(0) vec4<u32> {
    return vec4<u32>(u32(round(clamp(depth_at(p), 0.0, 1.0) * 65535.0)), 0u, 0u, 0u);
}

@fragment
fn raw_d32(@builtin(position) p: vec4<f32>) -> @location(0) vec4<f32> {
    return vec4<f32>(depth_at(p), 0.0, 0.0, 0.0);
}
"#;

const TO_RAW_D24S8: &str = r#"
@group(0) @binding(0) var depth: texture_depth_2d;
@group(0) @binding(1) var stencil: texture_2d<u32>;

@fragment
fn raw_d24s8(@builtin(position) p: vec4<f32>) -> @location(0) vec4<u32> {
    let c = vec2<i32>(p.xy);
    let s = textureLoad(stencil, c, 0).x & 0xFFu;
    return vec4<u32>((d24_word(textureLoad(depth, c, 0)) << 8u) | s, 0u, 0u, 0u);
}
"#;

/// The pipelines converting one depth format's copies (built on first use).
struct Converters {
    to_attachment_layout: wgpu::BindGroupLayout,
    to_attachment_depth: wgpu::RenderPipeline,
    /// D24S8: one per stencil bit.
    to_attachment_stencil: Vec<wgpu::RenderPipeline>,
    to_raw_layout: wgpu::BindGroupLayout,
    to_raw: wgpu::RenderPipeline,
}

/// The conversion passes of every depth format.
#[derive(Default)]
pub(super) struct DepthSync {
    d24s8: OnceLock<Converters>,
    d32: OnceLock<Converters>,
    d16: OnceLock<Converters>,
}

fn texture_entry(binding: u32, sample_type: wgpu::TextureSampleType) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::FRAGMENT,
        ty: wgpu::BindingType::Texture {
            sample_type,
            view_dimension: wgpu::TextureViewDimension::D2,
            multisampled: false,
        },
        count: None,
    }
}

/// The device can make Depth32FloatStencil8 attachments.
fn float_stencil(device: &wgpu::Device) -> bool {
    device
        .features()
        .contains(wgpu::Features::DEPTH32FLOAT_STENCIL8)
}

fn converters(device: &wgpu::Device, format: Format) -> Converters {
    let attachment = attachment_format(format, float_stencil(device))
        .unwrap_or(wgpu::TextureFormat::Depth32Float);
    let module = |body: &str| {
        device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("aerogpu depth sync"),
            source: wgpu::ShaderSource::Wgsl(format!("{SHADER}{body}").into()),
        })
    };
    let layout = |entries: &[wgpu::BindGroupLayoutEntry]| {
        device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: None,
            entries,
        })
    };
    let pipeline = |module: &wgpu::ShaderModule,
                    bgl: &wgpu::BindGroupLayout,
                    entry: &str,
                    constants: &[(&str, f64)],
                    color: Option<wgpu::TextureFormat>,
                    depth: Option<wgpu::DepthStencilState>| {
        let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: None,
            bind_group_layouts: &[Some(bgl)],
            immediate_size: 0,
        });
        let targets = [color.map(|format| wgpu::ColorTargetState {
            format,
            blend: None,
            write_mask: wgpu::ColorWrites::ALL,
        })];
        device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("aerogpu depth sync"),
            layout: Some(&pl),
            vertex: wgpu::VertexState {
                module,
                entry_point: Some("vs"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: depth,
            multisample: wgpu::MultisampleState::default(),
            fragment: Some(wgpu::FragmentState {
                module,
                entry_point: Some(entry),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants,
                    ..Default::default()
                },
                targets: if color.is_some() { &targets } else { &[] },
            }),
            multiview_mask: None,
            cache: None,
        })
    };
    let write_depth = wgpu::DepthStencilState {
        format: attachment,
        depth_write_enabled: Some(true),
        depth_compare: Some(wgpu::CompareFunction::Always),
        stencil: wgpu::StencilState::default(),
        bias: wgpu::DepthBiasState::default(),
    };
    let (raw_sample, raw_format, depth_entry, raw_entry) = match format {
        Format::D32Float => (
            wgpu::TextureSampleType::Float { filterable: false },
            wgpu::TextureFormat::R32Float,
            "depth_d32",
            "raw_d32",
        ),
        Format::D16Unorm => (
            wgpu::TextureSampleType::Uint,
            wgpu::TextureFormat::R16Uint,
            "depth_d16",
            "raw_d16",
        ),
        _ => (
            wgpu::TextureSampleType::Uint,
            wgpu::TextureFormat::R32Uint,
            "depth_d24",
            "raw_d24s8",
        ),
    };
    let to_attachment_layout = layout(&[texture_entry(0, raw_sample)]);
    let to_attachment_module = module(if format == Format::D32Float {
        TO_ATTACHMENT_FLOAT
    } else {
        TO_ATTACHMENT_UINT
    });
    let to_attachment_depth = pipeline(
        &to_attachment_module,
        &to_attachment_layout,
        depth_entry,
        &[],
        None,
        Some(write_depth.clone()),
    );
    let to_attachment_stencil = if attachment.has_stencil_aspect() {
        (0..8u32)
            .map(|bit| {
                let face = wgpu::StencilFaceState {
                    compare: wgpu::CompareFunction::Always,
                    fail_op: wgpu::StencilOperation::Keep,
                    depth_fail_op: wgpu::StencilOperation::Keep,
                    pass_op: wgpu::StencilOperation::Replace,
                };
                let state = wgpu::DepthStencilState {
                    depth_write_enabled: Some(false),
                    stencil: wgpu::StencilState {
                        front: face,
                        back: face,
                        read_mask: 0xFF,
                        write_mask: 1 << bit,
                    },
                    ..write_depth.clone()
                };
                pipeline(
                    &to_attachment_module,
                    &to_attachment_layout,
                    "stencil_bit",
                    &[("bit", f64::from(bit))],
                    None,
                    Some(state),
                )
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut raw_entries = vec![texture_entry(0, wgpu::TextureSampleType::Depth)];
    if attachment.has_stencil_aspect() {
        raw_entries.push(texture_entry(1, wgpu::TextureSampleType::Uint));
    }
    let to_raw_layout = layout(&raw_entries);
    let to_raw_module = module(if attachment.has_stencil_aspect() {
        TO_RAW_D24S8
    } else {
        TO_RAW
    });
    let to_raw = pipeline(
        &to_raw_module,
        &to_raw_layout,
        raw_entry,
        &[],
        Some(raw_format),
        None,
    );
    Converters {
        to_attachment_layout,
        to_attachment_depth,
        to_attachment_stencil,
        to_raw_layout,
        to_raw,
    }
}

impl DepthSync {
    fn get(&self, device: &wgpu::Device, format: Format) -> &Converters {
        let cell = match format {
            Format::D32Float => &self.d32,
            Format::D16Unorm => &self.d16,
            _ => &self.d24s8,
        };
        cell.get_or_init(|| converters(device, format))
    }

    /// Copies the raw texture (`raw_view`: mip 0 / layer 0) into the attachment.
    pub(super) fn raw_to_attachment(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        format: Format,
        raw_view: &wgpu::TextureView,
        att: &DepthAttachment,
    ) {
        let conv = self.get(device, format);
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &conv.to_attachment_layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::TextureView(raw_view),
            }],
        });
        let has_stencil = att.texture.format().has_stencil_aspect();
        let mut enc = device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("aerogpu depth raw to attachment"),
                color_attachments: &[],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: &att.view,
                    depth_ops: Some(wgpu::Operations {
                        load: wgpu::LoadOp::Clear(0.0),
                        store: wgpu::StoreOp::Store,
                    }),
                    stencil_ops: has_stencil.then_some(wgpu::Operations {
                        load: wgpu::LoadOp::Clear(0),
                        store: wgpu::StoreOp::Store,
                    }),
                }),
                ..Default::default()
            });
            pass.set_bind_group(0, &group, &[]);
            pass.set_pipeline(&conv.to_attachment_depth);
            pass.draw(0..3, 0..1);
            pass.set_stencil_reference(0xFF);
            for bit in &conv.to_attachment_stencil {
                pass.set_pipeline(bit);
                pass.draw(0..3, 0..1);
            }
        }
        queue.submit([enc.finish()]);
    }

    /// Copies the attachment into the raw texture (`raw_view`: mip 0 / layer 0).
    pub(super) fn attachment_to_raw(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        format: Format,
        raw_view: &wgpu::TextureView,
        att: &DepthAttachment,
    ) {
        let conv = self.get(device, format);
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::TextureView(&att.depth_view),
        }];
        if let Some(stencil) = &att.stencil_view {
            entries.push(wgpu::BindGroupEntry {
                binding: 1,
                resource: wgpu::BindingResource::TextureView(stencil),
            });
        }
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &conv.to_raw_layout,
            entries: &entries,
        });
        let mut enc = device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("aerogpu depth attachment to raw"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: raw_view,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Load,
                        store: wgpu::StoreOp::Store,
                    },
                })],
                ..Default::default()
            });
            pass.set_bind_group(0, &group, &[]);
            pass.set_pipeline(&conv.to_raw);
            pass.draw(0..3, 0..1);
        }
        queue.submit([enc.finish()]);
    }
}
