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

use aero_gpu::aerogpu::{GpuScanout, WgpuExecutor};

use super::scaling::Rect;

const SHADER: &str = r#"
@group(0) @binding(0) var picture: texture_2d<f32>;
@group(0) @binding(1) var picture_sampler: sampler;
// The cursor's rectangle in picture coordinates (0..1 = the picture): x0, y0, x1, y1.
@group(1) @binding(0) var<uniform> cursor_rect: vec4<f32>;

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

// The cursor's quad (a four-vertex strip) where cursor_rect puts it on the picture.
@vertex
fn vs_cursor(@builtin(vertex_index) index: u32) -> Varyings {
    let corner = vec2<f32>(f32(index & 1u), f32(index >> 1u));
    let at = mix(cursor_rect.xy, cursor_rect.zw, corner);
    var out: Varyings;
    out.position = vec4<f32>(at.x * 2.0 - 1.0, 1.0 - at.y * 2.0, 0.0, 1.0);
    out.uv = corner;
    return out;
}

// Sharp scaling: inside a texel the colour is flat; only across the one-screen-pixel band
// around the border of two texels is it blended (with the linear sampler). At whole-number
// scales this picks exactly one texel per screen pixel, like nearest sampling.
fn sharp(uv: vec2<f32>) -> vec4<f32> {
    let size = vec2<f32>(textureDimensions(picture));
    let t = uv * size - vec2<f32>(0.5);
    let cell = floor(t);
    let texels_per_pixel = max(fwidth(t), vec2<f32>(1e-6));
    let blend = clamp(
        (t - cell - vec2<f32>(0.5)) / texels_per_pixel + vec2<f32>(0.5),
        vec2<f32>(0.0),
        vec2<f32>(1.0),
    );
    return textureSample(picture, picture_sampler, (cell + blend + vec2<f32>(0.5)) / size);
}

// The screen is opaque (an X8 scanout's fourth byte is not alpha).
@fragment
fn fs_main(in: Varyings) -> @location(0) vec4<f32> {
    return vec4<f32>(sharp(in.uv).rgb, 1.0);
}

@fragment
fn fs_cursor(in: Varyings) -> @location(0) vec4<f32> {
    return sharp(in.uv);
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
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    /// The surface must be configured again before the next frame.
    reconfigure: bool,
    /// Draws on the AeroGPU executor's device ([`Presenter::shares_device`]).
    shared: bool,
    renderer: Renderer,
}

/// The device `aero run` creates before the window for both the window and the AeroGPU
/// executor: a scanout the executor presents is then a texture the window samples, with
/// no read-back. Made without a window (on an adapter that can draw into windows); the
/// window checks that its surface works with it and makes its own device if not.
pub struct SharedGpu {
    instance: wgpu::Instance,
    adapter: wgpu::Adapter,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
}

impl SharedGpu {
    /// Vulkan/Metal/DX12 (`WGPU_BACKEND` overrides), with the features the executor uses
    /// where the adapter has them and the adapter's own limits (D3D9 exceeds WebGPU's).
    pub fn new() -> anyhow::Result<SharedGpu> {
        let backends = Backends::from_env().unwrap_or(Backends::PRIMARY);
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends,
            ..wgpu::InstanceDescriptor::new_without_display_handle().with_env()
        });
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            compatible_surface: None,
            force_fallback_adapter: false,
            power_preference: wgpu::PowerPreference::from_env().unwrap_or_default(),
        }))
        .context("no graphics adapter")?;
        let (device, queue) =
            pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
                label: Some("aero"),
                required_features: adapter.features() & WgpuExecutor::FEATURES,
                required_limits: adapter.limits(),
                ..Default::default()
            }))?;
        Ok(SharedGpu {
            instance,
            adapter,
            device,
            queue,
        })
    }
}

/// Draws the picture (and the cursor) into a target view: the window's surface, or a
/// texture in tests.
pub struct Renderer {
    device: wgpu::Device,
    queue: wgpu::Queue,
    pipeline: wgpu::RenderPipeline,
    cursor_pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    cursor_rect_layout: wgpu::BindGroupLayout,
    nearest: wgpu::Sampler,
    linear: wgpu::Sampler,
    /// How the guest's bytes are sampled: as sRGB into an sRGB target, else unchanged.
    texture_format: wgpu::TextureFormat,
    picture: Option<Picture>,
    cursor: Option<Cursor>,
    smooth: bool,
}

/// The guest picture on the GPU.
struct Picture {
    /// Ours (uploaded), or the executor's scanout texture (sampled where it is).
    texture: wgpu::Texture,
    from_executor: bool,
    size: (u32, u32),
    nearest: wgpu::BindGroup,
    linear: wgpu::BindGroup,
}

/// AeroGPU's hardware cursor over a picture from the executor.
struct Cursor {
    image: aero_gpu::aerogpu::CursorImage,
    texture: wgpu::Texture,
    group: wgpu::BindGroup,
    rect: wgpu::Buffer,
    rect_group: wgpu::BindGroup,
    /// What `rect` holds: the cursor's rectangle in picture coordinates.
    rect_written: Option<[f32; 4]>,
}

impl Presenter {
    /// A presenter for `window`, on `shared`'s device when its adapter can draw into the
    /// window. Otherwise Vulkan/Metal/DX12 first (Vulkan also runs on Mesa's software
    /// rasteriser where there is no GPU); OpenGL only if none of those works, so a working
    /// Vulkan does not log OpenGL probing errors. `WGPU_BACKEND` overrides it.
    pub fn new(window: Arc<Window>, shared: Option<&SharedGpu>) -> anyhow::Result<Presenter> {
        if let Some(gpu) = shared {
            match Self::on_shared(window.clone(), gpu) {
                Ok(p) => return Ok(p),
                Err(e) => tracing::info!("the window cannot draw with AeroGPU's device ({e:#})"),
            }
        }
        let result = match Backends::from_env() {
            Some(chosen) => Self::with_backends(window, chosen),
            None => Self::with_backends(window.clone(), Backends::PRIMARY).or_else(|e| {
                tracing::info!("no Vulkan/Metal/DX12 adapter ({e:#}); trying OpenGL");
                Self::with_backends(window, Backends::all())
            }),
        };
        result.context("cannot draw into the window")
    }

    fn on_shared(window: Arc<Window>, gpu: &SharedGpu) -> anyhow::Result<Presenter> {
        let surface = gpu.instance.create_surface(window.clone())?;
        anyhow::ensure!(
            gpu.adapter.is_surface_supported(&surface),
            "its adapter cannot present to this window"
        );
        let mut p = Self::finish(
            window,
            surface,
            &gpu.adapter,
            gpu.device.clone(),
            gpu.queue.clone(),
        )?;
        p.shared = true;
        Ok(p)
    }

    fn with_backends(window: Arc<Window>, backends: Backends) -> anyhow::Result<Presenter> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends,
            ..wgpu::InstanceDescriptor::new_without_display_handle().with_env()
        });
        let surface = instance.create_surface(window.clone())?;
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            compatible_surface: Some(&surface),
            force_fallback_adapter: false,
            power_preference: wgpu::PowerPreference::from_env().unwrap_or_default(),
        }))
        .context("no graphics adapter for this window")?;
        let (device, queue) =
            pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default()))?;
        Self::finish(window, surface, &adapter, device, queue)
    }

    fn finish(
        window: Arc<Window>,
        surface: wgpu::Surface<'static>,
        adapter: &wgpu::Adapter,
        device: wgpu::Device,
        queue: wgpu::Queue,
    ) -> anyhow::Result<Presenter> {
        let size = window.inner_size();
        let caps = surface.get_capabilities(adapter);
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
        surface.configure(&device, &config);
        Ok(Presenter {
            adapter_name: adapter.get_info().name,
            surface,
            config,
            reconfigure: false,
            shared: false,
            renderer: Renderer::new(device, queue, format),
        })
    }

    pub fn adapter_name(&self) -> &str {
        &self.adapter_name
    }

    pub fn present_mode(&self) -> wgpu::PresentMode {
        self.config.present_mode
    }

    /// Whether the window draws with the AeroGPU executor's device, i.e. takes its
    /// presented scanout as a texture ([`Renderer::set_gpu_picture`]).
    pub fn shares_device(&self) -> bool {
        self.shared
    }

    pub fn renderer(&mut self) -> &mut Renderer {
        &mut self.renderer
    }

    /// Draws the picture into `target` (window pixels) of a window that is `window_size`
    /// now. Never waits for the window system to settle: an out-of-date surface is
    /// configured for `window_size` and the frame is skipped.
    pub fn draw(&mut self, window_size: (u32, u32), target: Rect) -> anyhow::Result<Drawn> {
        // On a shared device, the window's own mistakes (configure included) must not
        // reach the executor's error handler (which fails the guest's next command):
        // scoped to this thread.
        let device = self.renderer.device.clone();
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let drawn = self.draw_in_scope(&device, window_size, target);
        if let Some(e) = pollster::block_on(scope.pop()) {
            anyhow::bail!("drawing the frame: {e}");
        }
        drawn
    }

    fn draw_in_scope(
        &mut self,
        device: &wgpu::Device,
        window_size: (u32, u32),
        target: Rect,
    ) -> anyhow::Result<Drawn> {
        let size = (window_size.0.max(1), window_size.1.max(1));
        if self.reconfigure || size != (self.config.width, self.config.height) {
            self.config.width = size.0;
            self.config.height = size.1;
            self.surface.configure(device, &self.config);
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
        self.renderer.render(&view, size, target);
        frame.present();
        Ok(Drawn::Shown)
    }
}

impl Renderer {
    /// A renderer drawing into views of `target_format`.
    pub fn new(
        device: wgpu::Device,
        queue: wgpu::Queue,
        target_format: wgpu::TextureFormat,
    ) -> Renderer {
        // The guest's bytes are sRGB-encoded: sample them as such into an sRGB target,
        // or pass them through unchanged into a linear one.
        let texture_format = if target_format.is_srgb() {
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
        let cursor_rect_layout =
            device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some("aero cursor"),
                entries: &[wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::VERTEX,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                }],
            });
        let pipeline = |label, layouts: &[Option<&wgpu::BindGroupLayout>], vs, fs, blend| {
            let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(label),
                bind_group_layouts: layouts,
                immediate_size: 0,
            });
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(label),
                layout: Some(&pipeline_layout),
                vertex: wgpu::VertexState {
                    module: &module,
                    entry_point: Some(vs),
                    compilation_options: Default::default(),
                    buffers: &[],
                },
                fragment: Some(wgpu::FragmentState {
                    module: &module,
                    entry_point: Some(fs),
                    compilation_options: Default::default(),
                    targets: &[Some(wgpu::ColorTargetState {
                        format: target_format,
                        blend,
                        write_mask: wgpu::ColorWrites::ALL,
                    })],
                }),
                primitive: wgpu::PrimitiveState {
                    topology: if vs == "vs_cursor" {
                        wgpu::PrimitiveTopology::TriangleStrip
                    } else {
                        wgpu::PrimitiveTopology::TriangleList
                    },
                    ..Default::default()
                },
                depth_stencil: None,
                multisample: wgpu::MultisampleState::default(),
                multiview_mask: None,
                cache: None,
            })
        };
        let picture_pipeline =
            pipeline("aero picture", &[Some(&layout)], "vs_main", "fs_main", None);
        let cursor_pipeline = pipeline(
            "aero cursor",
            &[Some(&layout), Some(&cursor_rect_layout)],
            "vs_cursor",
            "fs_cursor",
            Some(wgpu::BlendState::ALPHA_BLENDING),
        );
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
        Renderer {
            device,
            queue,
            pipeline: picture_pipeline,
            cursor_pipeline,
            layout,
            cursor_rect_layout,
            nearest,
            linear,
            texture_format,
            picture: None,
            cursor: None,
            smooth: false,
        }
    }

    /// Runs `f` (uploads on the device) in a validation error scope: on a device shared
    /// with the executor its errors are the window's, not the guest's next command's.
    pub fn scoped<T>(&mut self, f: impl FnOnce(&mut Renderer) -> T) -> anyhow::Result<T> {
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f(self);
        match pollster::block_on(scope.pop()) {
            Some(e) => anyhow::bail!("uploading the picture: {e}"),
            None => Ok(out),
        }
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
        self.cursor = None;
        if self
            .picture
            .as_ref()
            .is_none_or(|p| p.from_executor || p.size != (w, h))
        {
            self.picture = Some(self.new_picture((w, h)));
        }
        let Some(picture) = &self.picture else {
            return;
        };
        self.queue.write_texture(
            picture.texture.as_image_copy(),
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

    /// Shows AeroGPU's presented scanout where it is, on the executor's device (which must
    /// be this renderer's), with the cursor drawn over it. Nothing is copied: the next
    /// draw samples the texture as the executor's queue left it.
    pub fn set_gpu_picture(&mut self, scanout: &GpuScanout) {
        let texture = &scanout.texture.texture;
        let same = self
            .picture
            .as_ref()
            .is_some_and(|p| p.from_executor && p.texture == *texture);
        if !same {
            let view_format = if self.texture_format.is_srgb() {
                texture.format().add_srgb_suffix()
            } else {
                texture.format().remove_srgb_suffix()
            };
            let view = texture.create_view(&wgpu::TextureViewDescriptor {
                format: Some(view_format),
                ..Default::default()
            });
            let (nearest, linear) = self.bind_picture(&view);
            self.picture = Some(Picture {
                texture: texture.clone(),
                from_executor: true,
                size: (texture.width(), texture.height()),
                nearest,
                linear,
            });
        }
        self.set_cursor(scanout.cursor.as_ref());
    }

    fn set_cursor(&mut self, cursor: Option<&aero_gpu::aerogpu::CursorImage>) {
        let Some(cursor) = cursor.filter(|c| c.image.width > 0 && c.image.height > 0) else {
            self.cursor = None;
            return;
        };
        if !self.cursor.as_ref().is_some_and(|c| c.image == *cursor) {
            self.upload_cursor(cursor);
        }
        self.place_cursor();
    }

    fn upload_cursor(&mut self, cursor: &aero_gpu::aerogpu::CursorImage) {
        let size = (cursor.image.width, cursor.image.height);
        let reuse = self
            .cursor
            .take()
            .filter(|c| (c.image.image.width, c.image.image.height) == size);
        let mut c = reuse.unwrap_or_else(|| {
            let texture = self.new_texture(size, "aero cursor");
            let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
            let group = self.bind_picture(&view).0;
            let rect = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("aero cursor"),
                size: 16,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let rect_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("aero cursor"),
                layout: &self.cursor_rect_layout,
                entries: &[wgpu::BindGroupEntry {
                    binding: 0,
                    resource: rect.as_entire_binding(),
                }],
            });
            Cursor {
                image: Default::default(),
                texture,
                group,
                rect,
                rect_group,
                rect_written: None,
            }
        });
        if c.image.image != cursor.image {
            self.queue.write_texture(
                c.texture.as_image_copy(),
                &cursor.image.pixels,
                wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(4 * size.0),
                    rows_per_image: Some(size.1),
                },
                c.texture.size(),
            );
        }
        c.image = cursor.clone();
        self.cursor = Some(c);
    }

    /// Writes the cursor's rectangle (picture coordinates) when it moved or the picture
    /// changed size; the viewport clips what lies outside.
    fn place_cursor(&mut self) {
        let (Some(picture), Some(cursor)) = (&self.picture, &mut self.cursor) else {
            return;
        };
        let (pw, ph) = (picture.size.0 as f32, picture.size.1 as f32);
        let (cx, cy) = (cursor.image.x as f32, cursor.image.y as f32);
        let rect = [
            cx / pw,
            cy / ph,
            (cx + cursor.image.image.width as f32) / pw,
            (cy + cursor.image.image.height as f32) / ph,
        ];
        if cursor.rect_written != Some(rect) {
            let bytes: Vec<u8> = rect.iter().flat_map(|v| v.to_le_bytes()).collect();
            self.queue.write_buffer(&cursor.rect, 0, &bytes);
            cursor.rect_written = Some(rect);
        }
    }

    fn new_texture(&self, size: (u32, u32), label: &str) -> wgpu::Texture {
        self.device.create_texture(&wgpu::TextureDescriptor {
            label: Some(label),
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
        })
    }

    /// Bind groups sampling `view` (nearest, linear).
    fn bind_picture(&self, view: &wgpu::TextureView) -> (wgpu::BindGroup, wgpu::BindGroup) {
        let bind = |sampler: &wgpu::Sampler| {
            self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("aero picture"),
                layout: &self.layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: wgpu::BindingResource::TextureView(view),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: wgpu::BindingResource::Sampler(sampler),
                    },
                ],
            })
        };
        (bind(&self.nearest), bind(&self.linear))
    }

    fn new_picture(&self, size: (u32, u32)) -> Picture {
        let texture = self.new_texture(size, "aero picture");
        let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
        let (nearest, linear) = self.bind_picture(&view);
        Picture {
            nearest,
            linear,
            texture,
            from_executor: false,
            size,
        }
    }

    /// Draws the picture into `target` (pixels of `view`, which is `size`) and black
    /// around it, then submits.
    pub fn render(&self, view: &wgpu::TextureView, size: (u32, u32), target: Rect) {
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("aero picture"),
            });
        {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("aero picture"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view,
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
                if let Some(cursor) = &self.cursor {
                    // Its rectangle was written by set_cursor (place_cursor).
                    pass.set_pipeline(&self.cursor_pipeline);
                    pass.set_bind_group(0, &cursor.group, &[]);
                    pass.set_bind_group(1, &cursor.rect_group, &[]);
                    pass.draw(0..4, 0..1);
                }
            }
        }
        self.queue.submit(Some(encoder.finish()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aero_gpu::Frame;
    use aero_gpu::aerogpu::{
        AllocTable, CommandProcessor, CursorImage, Executor, Limits, SoftExecutorConfig, VecMemory,
    };
    use aero_protocol::pci::Format;
    use aero_protocol::writer::CmdStreamWriter;

    const W: u32 = 61;
    const H: u32 = 37;

    /// Renders `scanout` with `renderer` 1:1 into a W x H RGBA8 texture and reads it back.
    fn render_offscreen(gpu: &SharedGpu, renderer: &Renderer) -> Vec<u8> {
        let size = wgpu::Extent3d {
            width: W,
            height: H,
            depth_or_array_layers: 1,
        };
        let target = gpu.device.create_texture(&wgpu::TextureDescriptor {
            label: None,
            size,
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Rgba8Unorm,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        });
        let view = target.create_view(&Default::default());
        let rect = Rect {
            x: 0,
            y: 0,
            width: W,
            height: H,
        };
        renderer.render(&view, (W, H), rect);
        let padded = (W * 4).next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
        let buffer = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: u64::from(padded * H),
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
            mapped_at_creation: false,
        });
        let mut enc = gpu.device.create_command_encoder(&Default::default());
        enc.copy_texture_to_buffer(
            target.as_image_copy(),
            wgpu::TexelCopyBufferInfo {
                buffer: &buffer,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(padded),
                    rows_per_image: Some(H),
                },
            },
            size,
        );
        gpu.queue.submit([enc.finish()]);
        buffer
            .slice(..)
            .map_async(wgpu::MapMode::Read, |r| r.unwrap());
        gpu.device
            .poll(wgpu::PollType::wait_indefinitely())
            .unwrap();
        let data = buffer.slice(..).get_mapped_range();
        data.chunks(padded as usize)
            .flat_map(|row| row[..W as usize * 4].to_vec())
            .collect()
    }

    /// The window's picture of a GPU-presented scanout with the cursor over it is the
    /// headless screenshot's (the executor's read-back with the cursor composited on the
    /// CPU), and drawing it reads nothing back.
    #[test]
    fn a_gpu_scanout_in_the_window_equals_the_headless_screenshot() {
        let gpu = SharedGpu::new().expect("no wgpu adapter (install mesa-vulkan-drivers)");
        let mut exec = WgpuExecutor::with_device(
            gpu.device.clone(),
            gpu.queue.clone(),
            SoftExecutorConfig::default(),
        );
        // A host-only B8G8R8X8 target with a pattern in it (X bytes zero), presented.
        let texels: Vec<u8> = (0..W * H)
            .flat_map(|i| [(i * 7) as u8, (i * 13 + i / W) as u8, (i * 3) as u8, 0])
            .collect();
        let mut w = CmdStreamWriter::new();
        w.create_texture2d(1, Format::B8G8R8X8Unorm as u32, W, H, 0)
            .upload(1, 0, &texels);
        let mut colors = [0; 8];
        colors[0] = 1;
        let targets = aero_protocol::cmd::SetRenderTargets {
            color_count: 1,
            colors,
            ..Default::default()
        };
        w.push(aero_protocol::cmd::Opcode::SetRenderTargets, &targets, &[]);
        w.present(0);
        let mut mem = VecMemory::new(4096);
        CommandProcessor::new(Limits::default())
            .process(&w.finish(), &AllocTable::new(), &mut mem, &mut exec)
            .unwrap();
        // A 9x7 cursor with opaque, clear and half-transparent pixels, partly outside.
        let mut image = Frame {
            width: 9,
            height: 7,
            pixels: Vec::new(),
        };
        image.pixels = (0..9 * 7u32)
            .flat_map(|i| [255, (i * 30) as u8, 40, [0, 255, 128][i as usize % 3]])
            .collect();
        let cursor = CursorImage {
            x: i64::from(W) - 5,
            y: -2,
            image,
        };
        let before = exec.readbacks();
        let scanout = GpuScanout {
            texture: exec.presented_texture().expect("presented on the GPU"),
            cursor: Some(cursor.clone()),
        };
        let mut renderer = Renderer::new(
            gpu.device.clone(),
            gpu.queue.clone(),
            wgpu::TextureFormat::Rgba8Unorm,
        );
        renderer.set_gpu_picture(&scanout);
        let window = render_offscreen(&gpu, &renderer);
        assert_eq!(exec.readbacks(), before, "the window read the scanout back");

        let mut headless = exec.presented_frame().unwrap();
        assert_eq!((headless.width, headless.height), (W, H));
        cursor.draw_over(&mut headless);
        let mut differ = 0;
        for (i, (a, b)) in window.chunks(4).zip(headless.pixels.chunks(4)).enumerate() {
            let (x, y) = (i as u32 % W, i as u32 / W);
            let under_cursor = x + 5 >= W && y < 5;
            let most = (0..3).map(|c| a[c].abs_diff(b[c])).max().unwrap();
            // Blending rounds on the GPU: at most one step; elsewhere exact.
            let allowed = if under_cursor { 1 } else { 0 };
            assert!(
                most <= allowed && a[3] == 255,
                "({x}, {y}): window {a:?}, headless {b:?}"
            );
            differ += usize::from(a[..3] != b[..3]);
        }
        assert!(differ < 20, "{differ} pixels off by one");
        // The cursor is there: its opaque pixel (1, 2) replaced the picture's at (W-4, 0).
        let at = ((W - 4) * 4) as usize;
        assert_eq!(window[at..at + 3], [255, (19 * 30) as u8, 40]);
    }

    /// An upload the device refuses while the window shows a picture is the window's
    /// error, inside its scope: the executor sharing the device runs its next command.
    #[test]
    fn a_refused_window_upload_does_not_fail_the_guests_next_command() {
        let gpu = SharedGpu::new().expect("no wgpu adapter (install mesa-vulkan-drivers)");
        let mut exec = WgpuExecutor::with_device(
            gpu.device.clone(),
            gpu.queue.clone(),
            SoftExecutorConfig::default(),
        );
        let mut p = CommandProcessor::new(Limits::default());
        let mut mem = VecMemory::new(4096);
        let mut w = CmdStreamWriter::new();
        w.create_texture2d(1, Format::B8G8R8X8Unorm as u32, W, H, 0);
        let mut colors = [0; 8];
        colors[0] = 1;
        let targets = aero_protocol::cmd::SetRenderTargets {
            color_count: 1,
            colors,
            ..Default::default()
        };
        w.push(aero_protocol::cmd::Opcode::SetRenderTargets, &targets, &[]);
        w.present(0);
        p.process(&w.finish(), &AllocTable::new(), &mut mem, &mut exec)
            .unwrap();
        // A cursor whose pixels are too few for its size: wgpu refuses the upload.
        let cursor = CursorImage {
            x: 0,
            y: 0,
            image: Frame {
                width: 4,
                height: 4,
                pixels: vec![255; 4],
            },
        };
        let scanout = GpuScanout {
            texture: exec.presented_texture().expect("presented on the GPU"),
            cursor: Some(cursor),
        };
        let mut renderer = Renderer::new(
            gpu.device.clone(),
            gpu.queue.clone(),
            wgpu::TextureFormat::Rgba8Unorm,
        );
        let shown = renderer.scoped(|r| r.set_gpu_picture(&scanout));
        assert!(shown.is_err(), "the refused upload is the window's error");
        let mut w = CmdStreamWriter::new();
        w.clear([0.0, 1.0, 0.0, 1.0]).present(0);
        p.process(&w.finish(), &AllocTable::new(), &mut mem, &mut exec)
            .expect("the guest's next command runs");
    }
}
