//! Drawing the guest picture into the window with wgpu: one RGBA texture, scaled into the
//! letterboxed rectangle that `scaling::fit` chose, black around it.
//!
//! Why our own and not a framebuffer crate: when the window system resizes the window
//! between our last size query and the next frame (a window manager's live resize, a
//! fullscreen switch), the surface is out of date until it is configured for the new size.
//! A presenter that retries inside the draw call with the size it knows spins forever,
//! because the event that carries the new size can no longer be delivered. Here a frame
//! that cannot be drawn is skipped: the surface is reconfigured for the window's size as it
//! is now and the caller draws again later.

use std::sync::Arc;

use anyhow::Context as _;
use wgpu::{Backends, CurrentSurfaceTexture};
use winit::window::Window;

use super::scaling::Rect;

const SHADER: &str = r#"
@group(0) @binding(0) var picture: texture_2d<f32>;
@group(0) @binding(1) var picture_sampler: sampler;

struct Varyings {
    @builtin(position) position: vec4<f32>,
    @location(0) uv: vec2<f32>,
};

// One triangle that covers the viewport; uv (0,0) is the picture's top-left corner.
@vertex
fn vs_main(@builtin(vertex_index) index: u32) -> Varyings {
    let x = f32((index << 1u) & 2u);
    let y = f32(index & 2u);
    var out: Varyings;
    out.position = vec4<f32>(x * 2.0 - 1.0, 1.0 - y * 2.0, 0.0, 1.0);
    out.uv = vec2<f32>(x, y);
    return out;
}

// Sharp scaling: inside a texel the colour is flat; only across the one-screen-pixel band
// around the border of two texels is it blended (with the linear sampler). At whole-number
// scales this picks exactly one texel per screen pixel, like nearest sampling.
@fragment
fn fs_main(in: Varyings) -> @location(0) vec4<f32> {
    let size = vec2<f32>(textureDimensions(picture));
    let t = in.uv * size - vec2<f32>(0.5);
    let cell = floor(t);
    let texels_per_pixel = max(fwidth(t), vec2<f32>(1e-6));
    let blend = clamp(
        (t - cell - vec2<f32>(0.5)) / texels_per_pixel + vec2<f32>(0.5),
        vec2<f32>(0.0),
        vec2<f32>(1.0),
    );
    return textureSample(picture, picture_sampler, (cell + blend + vec2<f32>(0.5)) / size);
}
"#;

/// What happened to one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drawn {
    Shown,
    /// Not drawn (surface out of date, lost, occluded or timed out); draw again later.
    Skipped,
}

pub struct Presenter {
    adapter_name: String,
    device: wgpu::Device,
    queue: wgpu::Queue,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    /// The surface must be configured again before the next frame.
    reconfigure: bool,
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    nearest: wgpu::Sampler,
    linear: wgpu::Sampler,
    texture_format: wgpu::TextureFormat,
    picture: Option<Picture>,
    smooth: bool,
}

/// The guest picture on the GPU.
struct Picture {
    texture: wgpu::Texture,
    size: (u32, u32),
    nearest: wgpu::BindGroup,
    linear: wgpu::BindGroup,
}

impl Presenter {
    /// A presenter for `window`. Vulkan/Metal/DX12 first (Vulkan also runs on Mesa's
    /// software rasteriser where there is no GPU); OpenGL only if none of those works, so
    /// a working Vulkan does not log OpenGL probing errors. `WGPU_BACKEND` overrides it.
    pub fn new(window: Arc<Window>) -> anyhow::Result<Presenter> {
        let result = match Backends::from_env() {
            Some(chosen) => Self::with_backends(window, chosen),
            None => Self::with_backends(window.clone(), Backends::PRIMARY).or_else(|e| {
                tracing::info!("no Vulkan/Metal/DX12 adapter ({e:#}); trying OpenGL");
                Self::with_backends(window, Backends::all())
            }),
        };
        result.context("cannot draw into the window")
    }

    fn with_backends(window: Arc<Window>, backends: Backends) -> anyhow::Result<Presenter> {
        let size = window.inner_size();
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends,
            ..wgpu::InstanceDescriptor::new_without_display_handle().with_env()
        });
        let surface = instance.create_surface(window)?;
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            compatible_surface: Some(&surface),
            force_fallback_adapter: false,
            power_preference: wgpu::PowerPreference::from_env().unwrap_or_default(),
        }))
        .context("no graphics adapter for this window")?;
        let (device, queue) =
            pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default()))?;
        let caps = surface.get_capabilities(&adapter);
        let format = caps
            .formats
            .iter()
            .copied()
            .find(|f| f.is_srgb())
            .or_else(|| caps.formats.first().copied())
            .context("the window surface offers no format")?;
        // Tear-free without waiting for vblank where the surface has a mailbox; Mesa's X11
        // FIFO path can wait forever under Xvfb.
        let present_mode = if caps.present_modes.contains(&wgpu::PresentMode::Mailbox) {
            wgpu::PresentMode::Mailbox
        } else {
            wgpu::PresentMode::AutoVsync
        };
        let config = wgpu::SurfaceConfiguration {
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            format,
            width: size.width.max(1),
            height: size.height.max(1),
            present_mode,
            desired_maximum_frame_latency: 2,
            alpha_mode: caps
                .alpha_modes
                .first()
                .copied()
                .unwrap_or(wgpu::CompositeAlphaMode::Auto),
            view_formats: vec![],
        };
        // The guest's bytes are sRGB-encoded: sample them as such into an sRGB surface,
        // or pass them through unchanged into a linear one.
        let texture_format = if format.is_srgb() {
            wgpu::TextureFormat::Rgba8UnormSrgb
        } else {
            wgpu::TextureFormat::Rgba8Unorm
        };
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("aero picture"),
            source: wgpu::ShaderSource::Wgsl(SHADER.into()),
        });
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("aero picture"),
            entries: &[
                wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::FRAGMENT,
                    ty: wgpu::BindingType::Texture {
                        sample_type: wgpu::TextureSampleType::Float { filterable: true },
                        view_dimension: wgpu::TextureViewDimension::D2,
                        multisampled: false,
                    },
                    count: None,
                },
                wgpu::BindGroupLayoutEntry {
                    binding: 1,
                    visibility: wgpu::ShaderStages::FRAGMENT,
                    ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
                    count: None,
                },
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("aero picture"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("aero picture"),
            layout: Some(&pipeline_layout),
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs_main"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("fs_main"),
                compilation_options: Default::default(),
                targets: &[Some(wgpu::ColorTargetState {
                    format,
                    blend: None,
                    write_mask: wgpu::ColorWrites::ALL,
                })],
            }),
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: None,
            multisample: wgpu::MultisampleState::default(),
            multiview_mask: None,
            cache: None,
        });
        let sampler = |filter: wgpu::FilterMode| {
            device.create_sampler(&wgpu::SamplerDescriptor {
                label: Some("aero picture"),
                mag_filter: filter,
                min_filter: filter,
                ..Default::default()
            })
        };
        let (nearest, linear) = (
            sampler(wgpu::FilterMode::Nearest),
            sampler(wgpu::FilterMode::Linear),
        );
        surface.configure(&device, &config);
        Ok(Presenter {
            adapter_name: adapter.get_info().name,
            device,
            queue,
            surface,
            config,
            reconfigure: false,
            pipeline,
            layout,
            nearest,
            linear,
            texture_format,
            picture: None,
            smooth: false,
        })
    }

    pub fn adapter_name(&self) -> &str {
        &self.adapter_name
    }

    pub fn present_mode(&self) -> wgpu::PresentMode {
        self.config.present_mode
    }

    /// Filtered scaling (any scale) or sharp pixels (whole-number scales).
    pub fn set_smooth(&mut self, smooth: bool) {
        self.smooth = smooth;
    }

    /// Uploads the guest picture: `rgba` holds `size.0 * size.1` RGBA pixels.
    pub fn set_picture(&mut self, size: (u32, u32), rgba: &[u8]) {
        let (w, h) = (size.0.max(1), size.1.max(1));
        if rgba.len() as u64 != u64::from(w) * u64::from(h) * 4 {
            tracing::warn!(
                w,
                h,
                len = rgba.len(),
                "picture of the wrong size not shown"
            );
            return;
        }
        let limit = self.device.limits().max_texture_dimension_2d;
        if w > limit || h > limit {
            tracing::warn!(
                w,
                h,
                limit,
                "picture larger than the GPU's textures not shown"
            );
            return;
        }
        if self.picture.as_ref().is_none_or(|p| p.size != (w, h)) {
            self.picture = Some(self.new_picture((w, h)));
        }
        let Some(picture) = &self.picture else {
            return;
        };
        self.queue.write_texture(
            wgpu::TexelCopyTextureInfo {
                texture: &picture.texture,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            rgba,
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(4 * w),
                rows_per_image: Some(h),
            },
            wgpu::Extent3d {
                width: w,
                height: h,
                depth_or_array_layers: 1,
            },
        );
    }

    fn new_picture(&self, size: (u32, u32)) -> Picture {
        let texture = self.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("aero picture"),
            size: wgpu::Extent3d {
                width: size.0,
                height: size.1,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: self.texture_format,
            usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        });
        let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
        let bind = |sampler: &wgpu::Sampler| {
            self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("aero picture"),
                layout: &self.layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: wgpu::BindingResource::TextureView(&view),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: wgpu::BindingResource::Sampler(sampler),
                    },
                ],
            })
        };
        Picture {
            nearest: bind(&self.nearest),
            linear: bind(&self.linear),
            texture,
            size,
        }
    }

    /// Draws the picture into `target` (window pixels) of a window that is `window_size`
    /// now. Never waits for the window system to settle: an out-of-date surface is
    /// configured for `window_size` and the frame is skipped.
    pub fn draw(&mut self, window_size: (u32, u32), target: Rect) -> anyhow::Result<Drawn> {
        let size = (window_size.0.max(1), window_size.1.max(1));
        if self.reconfigure || size != (self.config.width, self.config.height) {
            self.config.width = size.0;
            self.config.height = size.1;
            self.surface.configure(&self.device, &self.config);
            self.reconfigure = false;
        }
        let frame = match self.surface.get_current_texture() {
            CurrentSurfaceTexture::Success(frame) => frame,
            // Still drawable; the next frame gets a fresh configuration.
            CurrentSurfaceTexture::Suboptimal(frame) => {
                self.reconfigure = true;
                frame
            }
            CurrentSurfaceTexture::Outdated | CurrentSurfaceTexture::Lost => {
                self.reconfigure = true;
                return Ok(Drawn::Skipped);
            }
            CurrentSurfaceTexture::Occluded | CurrentSurfaceTexture::Timeout => {
                return Ok(Drawn::Skipped);
            }
            CurrentSurfaceTexture::Validation => {
                anyhow::bail!("the window surface rejected the frame")
            }
        };
        let view = frame
            .texture
            .create_view(&wgpu::TextureViewDescriptor::default());
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("aero picture"),
            });
        {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("aero picture"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: &view,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                        store: wgpu::StoreOp::Store,
                    },
                    depth_slice: None,
                })],
                depth_stencil_attachment: None,
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            // The viewport must lie inside the surface, whatever the caller computed.
            let x = target.x.min(size.0 - 1);
            let y = target.y.min(size.1 - 1);
            let w = target.width.min(size.0 - x);
            let h = target.height.min(size.1 - y);
            if let Some(picture) = &self.picture
                && w > 0
                && h > 0
            {
                pass.set_pipeline(&self.pipeline);
                let group = if self.smooth {
                    &picture.linear
                } else {
                    &picture.nearest
                };
                pass.set_bind_group(0, group, &[]);
                pass.set_viewport(x as f32, y as f32, w as f32, h as f32, 0.0, 1.0);
                pass.draw(0..3, 0..1);
            }
        }
        self.queue.submit(Some(encoder.finish()));
        frame.present();
        Ok(Drawn::Shown)
    }
}
