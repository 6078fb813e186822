//! The draw path of the GPU executor: a per-context shadow of the D3D9 draw state the
//! processor hands over, D3D9 shaders translated to WGSL on first use (cached per
//! variant), pipelines from [`super::pipeline`], and DRAW / DRAW_INDEXED recorded into the
//! [`super::batch`]: consecutive draws into the same targets share a render pass (targets
//! loaded and stored, so draws compose with clears and copies), submitted at flush points.
//!
//! Resources come from the executor's store through [`DrawResources`]; a draw returns
//! the targets it rendered to so the store can mark their guest bytes host-changed.
//!
//! D3D9 rules carried over: pixel centres via the translator's half-pixel fix-up
//! (`(1/vw, -1/vh)` in the VS fix-up uniform), clockwise front faces, base vertex and
//! start index of DRAW_INDEXED, triangle fans expanded to lists on the CPU (bounded),
//! the viewport's depth range, the scissor only while D3DRS_SCISSORTESTENABLE is on.
//!
//! Not modelled yet (explicit errors or documented approximations): D3DDECLTYPE UDEC3 /
//! DEC3N (error, no wgpu format), MIPMAPLODBIAS on texldl and on vertex samplers (wgpu
//! samplers have no bias; pixel shaders add it through the translator's variant),
//! border colours other than transparent/opaque black and opaque white (nearest of the
//! three; without ADDRESS_MODE_CLAMP_TO_BORDER border addressing clamps to the edge),
//! D3DRS_SRGBWRITEENABLE and D3DSAMP_SRGBTEXTURE as shader conversions (sRGB decoded
//! after filtering, blending on encoded values), wireframe without POLYGON_MODE_LINE
//! (error), fixed-function fog and user clip planes (translator variants still to
//! come).

use std::collections::HashMap;

use aero_protocol::Handle;
use aero_protocol::cmd::{self, IndexFormat, PrimitiveTopology, ShaderStage};

use super::batch::{self, Batch, PassKey};
use super::pipeline::{
    self, PipelineCache, PipelineError, PipelineKey, RenderStates, VertexElement,
};
use crate::aerogpu::d3d9::{
    self, IntBoolConstants, TextureKind, TextureRead, Translated, VariantKey,
};
use crate::aerogpu::processor::{
    Command, ConstantKind, MAX_CONTEXTS, ResourceId, VertexBufferBinding,
};

/// Why a draw (or a state command) failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DrawError {
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    #[error("shader translation: {0}")]
    Translate(#[from] d3d9::TranslateError),
    #[error("draw without {0}")]
    Missing(&'static str),
    #[error("resource {0} is not usable here")]
    Resource(ResourceId),
    #[error("draw too large: {0}")]
    TooLarge(&'static str),
    #[error("render targets: {0}")]
    Targets(&'static str),
    #[error("vertex stream {slot} reads bytes up to {end} of a {size}-byte buffer")]
    VertexRange { slot: u32, end: u64, size: u64 },
    #[error("wgpu rejected the draw: {0}")]
    Gpu(String),
}

/// A render target as the store holds it.
pub struct Target<'a> {
    pub view: &'a wgpu::TextureView,
    pub format: wgpu::TextureFormat,
    pub width: u32,
    pub height: u32,
}

/// What the draw path needs from the executor's resource store.
pub trait DrawResources {
    fn buffer(&self, id: ResourceId) -> Option<&wgpu::Buffer>;
    /// The host copy of a buffer's bytes (indexed fans are expanded from it).
    fn buffer_bytes(&self, id: ResourceId) -> Option<&[u8]>;
    /// A colour or depth/stencil target (mip 0, layer 0).
    fn target(&self, id: ResourceId) -> Option<Target<'_>>;
    /// A texture to sample (all mips).
    fn sampled_view(&self, id: ResourceId) -> Option<&wgpu::TextureView>;
    /// The texture behind `sampled_view` (a draw sampling its own target copies it).
    fn texture(&self, _id: ResourceId) -> Option<&wgpu::Texture> {
        None
    }
    /// How a texture's format reads in a shader beyond its wgpu channels (X8 alpha,
    /// L8 luminance): the pixel shader applies it.
    fn texture_read(&self, _id: ResourceId) -> TextureRead {
        TextureRead::Rgba
    }
    /// What `sampled_view` is: 2D, cube or volume.
    fn texture_kind(&self, _id: ResourceId) -> TextureKind {
        TextureKind::Tex2d
    }
}

/// Most vertices a fan may have (its list has 3 × (n − 2) indices).
pub const MAX_FAN_VERTICES: u32 = 1 << 20;
/// Translated shader modules kept (cleared when full).
const MAX_MODULES: usize = 512;
const PIPELINE_CAPACITY: usize = 256;
const PS_SAMPLERS: usize = 16;
const VS_SAMPLERS: usize = 4;
/// D3DSAMPLERSTATETYPE values run 1..=13.
const SAMPLER_STATES: usize = 14;
const TEXTURE_STAGES: usize = aero_protocol::cmd::MAX_TEXTURE_STAGES as usize;
const TEXTURE_STAGE_STATES: usize = crate::aerogpu::processor::TEXTURE_STAGE_STATES as usize;
/// The bump environment block: a matrix and a luminance vec4 per stage.
const BUMP_ENV_BYTES: usize = TEXTURE_STAGES * 2 * 16;
/// VRAM the copies of sampled render targets may hold ([`Snapshots`]).
const SNAPSHOT_BYTES: u64 = 256 << 20;

/// One context's shadow of the D3D9 draw state.
#[derive(Clone)]
pub struct DrawState {
    pub blend: cmd::SetBlendState,
    pub depth_stencil: cmd::SetDepthStencilState,
    pub raster: cmd::SetRasterizerState,
    pub render_states: RenderStates,
    pub ps_samplers: [[u32; SAMPLER_STATES]; PS_SAMPLERS],
    pub vs_samplers: [[u32; SAMPLER_STATES]; VS_SAMPLERS],
    /// D3DTEXTURESTAGESTATETYPE values per stage (the bump environment is read).
    pub texture_stages: [[u32; TEXTURE_STAGE_STATES]; TEXTURE_STAGES],
    pub colors: [Option<ResourceId>; 8],
    pub color_count: u32,
    pub depth_target: Option<ResourceId>,
    pub viewport: Option<cmd::SetViewport>,
    pub scissor: Option<cmd::SetScissor>,
    pub vertex_buffers: [VertexBufferBinding; 16],
    pub index_buffer: Option<(ResourceId, IndexFormat, u32)>,
    pub topology: PrimitiveTopology,
    pub ps_textures: [Option<ResourceId>; PS_SAMPLERS],
    pub vs_textures: [Option<ResourceId>; VS_SAMPLERS],
    pub vs: Handle,
    pub ps: Handle,
    pub input_layout: Handle,
    /// Constant registers in the translator's uniform layout (float: 256 × 16 bytes;
    /// int/bool: [`IntBoolConstants`]).
    pub vs_float: Vec<u8>,
    pub ps_float: Vec<u8>,
    pub vs_int_bool: Vec<u8>,
    pub ps_int_bool: Vec<u8>,
}

/// D3D9's sampler-state defaults (index = D3DSAMPLERSTATETYPE).
fn default_sampler_states() -> [u32; SAMPLER_STATES] {
    let mut s = [0u32; SAMPLER_STATES];
    s[1] = 1; // ADDRESSU WRAP
    s[2] = 1;
    s[3] = 1;
    s[5] = 1; // MAGFILTER POINT
    s[6] = 1; // MINFILTER POINT
    s[10] = 1; // MAXANISOTROPY
    s
}

impl DrawState {
    /// The translator's ps_1_x bump binding ([`d3d9::bindings::PS_BUMP_ENV`]): per stage
    /// (BUMPENVMAT00, 01, 10, 11), then per stage (BUMPENVLSCALE, BUMPENVLOFFSET, 0, 0).
    fn bump_env_bytes(&self) -> [u8; BUMP_ENV_BYTES] {
        use aero_protocol::cmd::{TSS_BUMPENVLOFFSET, TSS_BUMPENVLSCALE, TSS_BUMPENVMAT00};
        let at = |t: &[u32; TEXTURE_STAGE_STATES], state: u32| t[state as usize];
        let matrices = self.texture_stages.iter().map(|t| {
            let m = TSS_BUMPENVMAT00;
            [at(t, m), at(t, m + 1), at(t, m + 2), at(t, m + 3)]
        });
        let luminance = self
            .texture_stages
            .iter()
            .map(|t| [at(t, TSS_BUMPENVLSCALE), at(t, TSS_BUMPENVLOFFSET), 0, 0]);
        let mut out = [0u8; BUMP_ENV_BYTES];
        for (dst, v) in out
            .chunks_exact_mut(4)
            .zip(matrices.chain(luminance).flatten())
        {
            dst.copy_from_slice(&v.to_le_bytes());
        }
        out
    }
}

impl Default for DrawState {
    fn default() -> Self {
        Self {
            blend: pipeline::default_blend(),
            depth_stencil: pipeline::default_depth_stencil(),
            raster: pipeline::default_rasterizer(),
            render_states: RenderStates::default(),
            ps_samplers: [default_sampler_states(); PS_SAMPLERS],
            vs_samplers: [default_sampler_states(); VS_SAMPLERS],
            texture_stages: [[0; TEXTURE_STAGE_STATES]; TEXTURE_STAGES],
            colors: [None; 8],
            color_count: 0,
            depth_target: None,
            viewport: None,
            scissor: None,
            vertex_buffers: [VertexBufferBinding::default(); 16],
            index_buffer: None,
            topology: PrimitiveTopology::TriangleList,
            ps_textures: [None; PS_SAMPLERS],
            vs_textures: [None; VS_SAMPLERS],
            vs: 0,
            ps: 0,
            input_layout: 0,
            vs_float: vec![0; 4096],
            ps_float: vec![0; 4096],
            vs_int_bool: vec![0; IntBoolConstants::SIZE],
            ps_int_bool: vec![0; IntBoolConstants::SIZE],
        }
    }
}

impl DrawState {
    /// Records a state command; false when `command` is not draw state.
    pub fn apply(&mut self, command: &Command<'_>) -> bool {
        match *command {
            Command::BindShaders { vs, ps } => {
                self.vs = vs;
                self.ps = ps;
            }
            Command::SetShaderConstants {
                kind,
                stage,
                start_register,
                count,
                data,
            } => self.set_constants(kind, stage, start_register, count, data),
            Command::SetInputLayout { handle } => self.input_layout = handle,
            Command::SetBlendState(b) => self.blend = b,
            Command::SetDepthStencilState(d) => self.depth_stencil = d,
            Command::SetRasterizerState(r) => self.raster = r,
            Command::SetRenderState { state, value } => self.render_states.set(state, value),
            Command::SetSamplerState {
                stage,
                slot,
                state,
                value,
            } => {
                let table: &mut [[u32; SAMPLER_STATES]] = match stage {
                    ShaderStage::Vertex => &mut self.vs_samplers,
                    ShaderStage::Pixel => &mut self.ps_samplers,
                };
                if let Some(s) = table
                    .get_mut(slot as usize)
                    .and_then(|t| t.get_mut(state as usize))
                {
                    *s = value;
                }
            }
            Command::SetTextureStageState {
                stage,
                state,
                value,
            } => {
                if let Some(s) = self
                    .texture_stages
                    .get_mut(stage as usize)
                    .and_then(|t| t.get_mut(state as usize))
                {
                    *s = value;
                }
            }
            Command::SetRenderTargets {
                colors,
                color_count,
                depth_stencil,
            } => {
                self.colors = colors;
                self.color_count = color_count.min(8);
                self.depth_target = depth_stencil;
            }
            Command::SetViewport(v) => self.viewport = Some(v),
            Command::SetScissor(s) => self.scissor = Some(s),
            Command::SetVertexBuffers {
                start_slot,
                count,
                bindings,
            } => {
                for i in 0..count.min(16) {
                    if let Some(slot) = self.vertex_buffers.get_mut((start_slot + i) as usize) {
                        *slot = bindings[i as usize];
                    }
                }
            }
            Command::SetIndexBuffer {
                buffer,
                format,
                offset_bytes,
            } => self.index_buffer = buffer.map(|b| (b, format, offset_bytes)),
            Command::SetPrimitiveTopology(t) => self.topology = t,
            Command::SetTexture {
                stage,
                slot,
                texture,
            } => {
                let table: &mut [Option<ResourceId>] = match stage {
                    ShaderStage::Vertex => &mut self.vs_textures,
                    ShaderStage::Pixel => &mut self.ps_textures,
                };
                if let Some(t) = table.get_mut(slot as usize) {
                    *t = texture;
                }
            }
            _ => return false,
        }
        true
    }

    fn set_constants(
        &mut self,
        kind: ConstantKind,
        stage: ShaderStage,
        start: u32,
        count: u32,
        data: &[u8],
    ) {
        let vs = stage == ShaderStage::Vertex;
        let (buf, base, size) = match kind {
            ConstantKind::Float => (
                if vs {
                    &mut self.vs_float
                } else {
                    &mut self.ps_float
                },
                start as usize * 16,
                count as usize * 16,
            ),
            ConstantKind::Int => (
                if vs {
                    &mut self.vs_int_bool
                } else {
                    &mut self.ps_int_bool
                },
                IntBoolConstants::int_offset(start as usize),
                count as usize * 16,
            ),
            ConstantKind::Bool => (
                if vs {
                    &mut self.vs_int_bool
                } else {
                    &mut self.ps_int_bool
                },
                IntBoolConstants::bool_offset(start as usize),
                count as usize * 4,
            ),
        };
        // Registers beyond the translator's buffers are dropped (the processor bounds
        // them by D3D9's limits already; int registers must not spill into the bools).
        let limit = match kind {
            ConstantKind::Int => 256,
            _ => buf.len(),
        };
        let end = base.saturating_add(size).min(limit).min(base + data.len());
        if base < end {
            buf[base..end].copy_from_slice(&data[..end - base]);
        }
    }
}

struct ShaderSource {
    stage: ShaderStage,
    tokens: Vec<u32>,
    id: u64,
}

struct Module {
    translated: Translated,
    module: wgpu::ShaderModule,
    id: u64,
}

struct Layouts {
    group1: wgpu::BindGroupLayout,
    pipeline: wgpu::PipelineLayout,
}

/// The draw path (see the module documentation).
pub struct DrawPath {
    device: wgpu::Device,
    queue: wgpu::Queue,
    line_fill: bool,
    border: bool,
    /// Per context: its state and when it was last used.
    states: HashMap<u32, (DrawState, u64)>,
    context: u32,
    clock: u64,
    shaders: HashMap<Handle, ShaderSource>,
    input_layouts: HashMap<Handle, Vec<VertexElement>>,
    next_id: u64,
    modules: HashMap<(u64, VariantKey), Module>,
    layouts: HashMap<(u64, u64), Layouts>,
    pipelines: PipelineCache,
    samplers: HashMap<[u32; SAMPLER_STATES], wgpu::Sampler>,
    group0_layout: wgpu::BindGroupLayout,
    group0: wgpu::BindGroup,
    /// Draws recorded but not yet submitted ([`batch`]).
    pub batch: Batch,
    dummies: [wgpu::TextureView; 3],
    snapshots: Snapshots,
    pub draws: u64,
}

/// Copies of render targets draws sample ([`DrawPath::feedback_view`]), one texture per
/// shape and place in a draw's feedback list (two targets of one shape sampled by the
/// same draw each need their own), reused: the batch's encoder runs each copy after the
/// draws recorded before it, so a later copy into the same texture lands only after the
/// draw that reads the earlier one. Bounded by [`SNAPSHOT_BYTES`] (all dropped when a new one would exceed
/// it; the draws recorded keep theirs alive until they ran).
#[derive(Default)]
struct Snapshots {
    pool: HashMap<SnapshotKey, wgpu::Texture>,
    bytes: u64,
}

/// Shape, and the copy's index among the draw's own feedback copies.
type SnapshotKey = (
    wgpu::TextureFormat,
    wgpu::Extent3d,
    u32,
    wgpu::TextureDimension,
    usize,
);

impl Snapshots {
    /// A texture of `of`'s shape to copy it into, the `nth` distinct texture the draw
    /// copies; `None` beyond the budget.
    fn get(
        &mut self,
        device: &wgpu::Device,
        of: &wgpu::Texture,
        nth: usize,
    ) -> Option<wgpu::Texture> {
        let key = (
            of.format(),
            of.size(),
            of.mip_level_count(),
            of.dimension(),
            nth,
        );
        if let Some(t) = self.pool.get(&key) {
            return Some(t.clone());
        }
        let size = of.size();
        // Every mip of a 2D or 3D texture together is under twice its top level.
        let bytes = u64::from(of.format().block_copy_size(None).unwrap_or(16))
            * u64::from(size.width)
            * u64::from(size.height)
            * u64::from(size.depth_or_array_layers)
            * 2;
        if bytes > SNAPSHOT_BYTES {
            return None;
        }
        if self.bytes + bytes > SNAPSHOT_BYTES {
            self.pool.clear();
            self.bytes = 0;
        }
        let t = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("aerogpu sampled render target copy"),
            size,
            mip_level_count: of.mip_level_count(),
            sample_count: 1,
            dimension: of.dimension(),
            format: of.format(),
            usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        });
        self.bytes += bytes;
        self.pool.insert(key, t.clone());
        Some(t)
    }
}

impl DrawPath {
    pub fn new(device: wgpu::Device, queue: wgpu::Queue) -> Self {
        let features = device.features();
        let sizes = batch::BLOCK_SIZES;
        // Every binding is a per-draw block in the batch's arena (dynamic offsets).
        let batch = Batch::new(device.clone(), queue.clone());
        let group0_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("aerogpu d3d9 group 0"),
            entries: &(0..batch::BLOCKS as u32)
                .map(|b| wgpu::BindGroupLayoutEntry {
                    binding: b,
                    visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: true,
                        min_binding_size: None,
                    },
                    count: None,
                })
                .collect::<Vec<_>>(),
        });
        let group0 = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("aerogpu d3d9 group 0"),
            layout: &group0_layout,
            entries: &sizes
                .iter()
                .enumerate()
                .map(|(i, &size)| wgpu::BindGroupEntry {
                    binding: i as u32,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: batch.arena(),
                        offset: 0,
                        size: wgpu::BufferSize::new(size as u64),
                    }),
                })
                .collect::<Vec<_>>(),
        });
        // Unbound samplers read (0, 0, 0, 1) as D3D9 drivers do.
        let dummy =
            |dimension: wgpu::TextureDimension, layers: u32, view: wgpu::TextureViewDimension| {
                let size = wgpu::Extent3d {
                    width: 1,
                    height: 1,
                    depth_or_array_layers: layers,
                };
                let t = device.create_texture(&wgpu::TextureDescriptor {
                    label: Some("aerogpu unbound sampler"),
                    size,
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension,
                    format: wgpu::TextureFormat::Rgba8Unorm,
                    usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
                    view_formats: &[],
                });
                let texels: Vec<u8> = [0u8, 0, 0, 255].repeat(layers as usize);
                queue.write_texture(
                    t.as_image_copy(),
                    &texels,
                    wgpu::TexelCopyBufferLayout {
                        offset: 0,
                        bytes_per_row: Some(4),
                        rows_per_image: Some(1),
                    },
                    size,
                );
                t.create_view(&wgpu::TextureViewDescriptor {
                    dimension: Some(view),
                    ..Default::default()
                })
            };
        let dummies = [
            dummy(
                wgpu::TextureDimension::D2,
                1,
                wgpu::TextureViewDimension::D2,
            ),
            dummy(
                wgpu::TextureDimension::D2,
                6,
                wgpu::TextureViewDimension::Cube,
            ),
            dummy(
                wgpu::TextureDimension::D3,
                1,
                wgpu::TextureViewDimension::D3,
            ),
        ];
        Self {
            line_fill: features.contains(wgpu::Features::POLYGON_MODE_LINE),
            border: features.contains(wgpu::Features::ADDRESS_MODE_CLAMP_TO_BORDER),
            device,
            queue,
            states: HashMap::new(),
            context: 0,
            clock: 0,
            shaders: HashMap::new(),
            input_layouts: HashMap::new(),
            next_id: 1,
            modules: HashMap::new(),
            layouts: HashMap::new(),
            pipelines: PipelineCache::new(PIPELINE_CAPACITY),
            samplers: HashMap::new(),
            group0_layout,
            group0,
            batch,
            dummies,
            snapshots: Snapshots::default(),
            draws: 0,
        }
    }

    /// The processor switched to `context` (SubmissionInfo.context_id).
    pub fn set_context(&mut self, context: u32) {
        self.context = context;
    }

    /// The current context's draw state. Like the processor, at most MAX_CONTEXTS idle
    /// contexts are remembered (the least recently used is forgotten).
    pub fn state(&mut self) -> &mut DrawState {
        self.clock += 1;
        if !self.states.contains_key(&self.context) && self.states.len() > MAX_CONTEXTS {
            let current = self.context;
            if let Some(oldest) = self
                .states
                .iter()
                .filter(|(c, _)| **c != current)
                .min_by_key(|(_, (_, used))| *used)
                .map(|(c, _)| *c)
            {
                self.states.remove(&oldest);
            }
        }
        let clock = self.clock;
        let entry = self.states.entry(self.context).or_default();
        entry.1 = clock;
        &mut entry.0
    }

    /// A destroyed resource is unbound everywhere (the processor unbinds its handle in
    /// every context; an alias handle still bound elsewhere is unbound too, as in the
    /// CPU executor).
    fn unbind_resource(&mut self, id: ResourceId) {
        for (st, _) in self.states.values_mut() {
            let clear = |slot: &mut Option<ResourceId>| {
                if *slot == Some(id) {
                    *slot = None;
                }
            };
            st.colors.iter_mut().for_each(clear);
            clear(&mut st.depth_target);
            st.ps_textures.iter_mut().for_each(clear);
            st.vs_textures.iter_mut().for_each(clear);
            for vb in &mut st.vertex_buffers {
                clear(&mut vb.buffer);
            }
            if st.index_buffer.is_some_and(|(b, _, _)| b == id) {
                st.index_buffer = None;
            }
        }
    }

    /// A destroyed shader or input layout is unbound everywhere (as the processor does).
    fn unbind_handle(&mut self, handle: Handle) {
        for (st, _) in self.states.values_mut() {
            for slot in [&mut st.vs, &mut st.ps, &mut st.input_layout] {
                if *slot == handle {
                    *slot = 0;
                }
            }
        }
    }

    pub fn reset(&mut self) {
        self.states.clear();
        self.shaders.clear();
        self.input_layouts.clear();
        self.modules.clear();
        self.layouts.clear();
        self.pipelines.clear();
        self.snapshots = Snapshots::default();
    }

    pub fn pipeline_misses(&self) -> u64 {
        self.pipelines.misses
    }

    /// Handles every draw-path command but the draws; Ok(false) when `command` is not
    /// one of them.
    pub fn apply(&mut self, command: &Command<'_>) -> Result<bool, DrawError> {
        match *command {
            Command::CreateShader {
                handle,
                stage,
                tokens,
                ..
            } => {
                if !tokens.len().is_multiple_of(4) {
                    return Err(d3d9::TranslateError::Malformed("not whole tokens").into());
                }
                let tokens: Vec<u32> = tokens
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                self.next_id += 1;
                let id = self.next_id;
                self.shaders
                    .insert(handle, ShaderSource { stage, tokens, id });
            }
            Command::DestroyShader { handle } => {
                self.shaders.remove(&handle);
                self.unbind_handle(handle);
            }
            Command::DestroyResource { resource, .. } => {
                self.unbind_resource(resource);
                // Not only draw state: the executor handles it too.
                return Ok(false);
            }
            Command::CreateInputLayout { handle, elements } => {
                let parsed = pipeline::parse_vertex_elements(elements)?;
                self.input_layouts.insert(handle, parsed);
            }
            Command::DestroyInputLayout { handle } => {
                self.input_layouts.remove(&handle);
                self.unbind_handle(handle);
            }
            _ => return Ok(self.state().apply(command)),
        }
        Ok(true)
    }

    fn module(
        &mut self,
        handle: Handle,
        stage: ShaderStage,
        key: VariantKey,
    ) -> Result<&Module, DrawError> {
        let src = self
            .shaders
            .get(&handle)
            .filter(|s| s.stage == stage)
            .ok_or(DrawError::Missing(match stage {
                ShaderStage::Vertex => "a vertex shader",
                ShaderStage::Pixel => "a pixel shader",
            }))?;
        let cache_key = (src.id, key);
        if !self.modules.contains_key(&cache_key) {
            let translated = d3d9::translate(&src.tokens, &key)?;
            if self.modules.len() >= MAX_MODULES {
                self.modules.clear();
                self.layouts.clear();
                self.pipelines.clear();
            }
            let module = self
                .device
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some("aerogpu d3d9 shader"),
                    source: wgpu::ShaderSource::Wgsl(translated.wgsl.clone().into()),
                });
            self.next_id += 1;
            self.modules.insert(
                cache_key,
                Module {
                    translated,
                    module,
                    id: self.next_id,
                },
            );
        }
        Ok(&self.modules[&cache_key])
    }

    fn sampler(&mut self, states: &[u32; SAMPLER_STATES]) -> wgpu::Sampler {
        let address = |v: u32| match v {
            2 => wgpu::AddressMode::MirrorRepeat,
            3 => wgpu::AddressMode::ClampToEdge,
            4 if self.border => wgpu::AddressMode::ClampToBorder,
            4 => wgpu::AddressMode::ClampToEdge,
            // MIRRORONCE: mirrored once then clamped; the mirror is the nearest.
            5 => wgpu::AddressMode::MirrorRepeat,
            _ => wgpu::AddressMode::Repeat,
        };
        let filter = |v: u32| {
            if v >= 2 {
                wgpu::FilterMode::Linear
            } else {
                wgpu::FilterMode::Nearest
            }
        };
        let (mag, min, mip) = (states[5], states[6], states[7]);
        let anisotropic = mag == 3 || min == 3;
        let max_aniso = states[10].clamp(1, 16) as u16;
        // wgpu's anisotropy needs linear filters everywhere.
        let aniso = if anisotropic && max_aniso > 1 {
            max_aniso
        } else {
            1
        };
        // Border colours: wgpu has three; take the nearest by alpha, then brightness.
        let c = states[4];
        let border = if (c >> 24) < 0x80 {
            wgpu::SamplerBorderColor::TransparentBlack
        } else if ((c >> 16) & 0xFF) + ((c >> 8) & 0xFF) + (c & 0xFF) >= 3 * 0x80 {
            wgpu::SamplerBorderColor::OpaqueWhite
        } else {
            wgpu::SamplerBorderColor::OpaqueBlack
        };
        let (mag_filter, min_filter, mipmap_filter, lod_max) = if aniso > 1 {
            (
                wgpu::FilterMode::Linear,
                wgpu::FilterMode::Linear,
                wgpu::MipmapFilterMode::Linear,
                32.0f32,
            )
        } else {
            (
                filter(mag),
                filter(min),
                if mip >= 2 {
                    wgpu::MipmapFilterMode::Linear
                } else {
                    wgpu::MipmapFilterMode::Nearest
                },
                // D3DTEXF_NONE: only the top level.
                if mip == 0 { 0.0 } else { 32.0 },
            )
        };
        let desc = wgpu::SamplerDescriptor {
            label: None,
            address_mode_u: address(states[1]),
            address_mode_v: address(states[2]),
            address_mode_w: address(states[3]),
            mag_filter,
            min_filter,
            mipmap_filter,
            // D3DSAMP_MAXMIPLEVEL is the most detailed level used.
            lod_min_clamp: (states[9].min(15)) as f32,
            lod_max_clamp: lod_max.max(states[9].min(15) as f32),
            compare: None,
            anisotropy_clamp: aniso,
            border_color: (states[1..4].contains(&4) && self.border).then_some(border),
        };
        if self.samplers.len() > 1024 {
            self.samplers.clear();
        }
        self.samplers
            .entry(*states)
            .or_insert_with(|| self.device.create_sampler(&desc))
            .clone()
    }

    /// What an unbound sampler of `kind` reads.
    fn dummy(&self, kind: TextureKind) -> wgpu::TextureView {
        match kind {
            TextureKind::Tex2d => self.dummies[0].clone(),
            TextureKind::Cube => self.dummies[1].clone(),
            TextureKind::Volume => self.dummies[2].clone(),
        }
    }

    /// A view of a copy of texture `id`, which the draw being recorded also renders into.
    /// D3D9 leaves such feedback undefined and runtimes let it through (hardware reads
    /// what the target held before the draw, or a mix); wgpu refuses a texture used as
    /// attachment and sampled in one pass, and reports it only when the pass ends, losing
    /// the whole batch. So the draw samples a copy made between the previous draws and
    /// this one: what the target held before it. Over the copies' VRAM budget the
    /// texture reads as unbound. `nth`: how many other textures this draw copied before.
    fn feedback_view(
        &mut self,
        id: ResourceId,
        kind: TextureKind,
        nth: usize,
        res: &dyn DrawResources,
    ) -> Result<wgpu::TextureView, DrawError> {
        let texture = res.texture(id).ok_or(DrawError::Resource(id))?;
        let Some(copy) = self.snapshots.get(&self.device, texture, nth) else {
            tracing::debug!("aerogpu: a draw samples its render target beyond the copy budget");
            return Ok(self.dummy(kind));
        };
        self.batch.between_passes(|encoder| {
            for mip in 0..texture.mip_level_count() {
                let at = |texture| wgpu::TexelCopyTextureInfo {
                    texture,
                    mip_level: mip,
                    origin: wgpu::Origin3d::ZERO,
                    aspect: wgpu::TextureAspect::All,
                };
                encoder.copy_texture_to_texture(
                    at(texture),
                    at(&copy),
                    texture.size().mip_level_size(mip, texture.dimension()),
                );
            }
        });
        let dimension = match (texture.dimension(), kind) {
            (wgpu::TextureDimension::D3, _) => wgpu::TextureViewDimension::D3,
            (_, TextureKind::Cube) => wgpu::TextureViewDimension::Cube,
            _ if texture.depth_or_array_layers() == 1 => wgpu::TextureViewDimension::D2,
            _ => wgpu::TextureViewDimension::D2Array,
        };
        Ok(copy.create_view(&wgpu::TextureViewDescriptor {
            dimension: Some(dimension),
            ..Default::default()
        }))
    }

    /// Runs a DRAW or DRAW_INDEXED; returns the targets it rendered to.
    pub fn draw(
        &mut self,
        command: &Command<'_>,
        res: &dyn DrawResources,
    ) -> Result<Vec<ResourceId>, DrawError> {
        let st = self.state().clone();
        let (indexed, count, instances, first, base_vertex, first_instance) = match *command {
            Command::Draw(d) => (
                false,
                d.vertex_count,
                d.instance_count,
                d.first_vertex,
                0,
                d.first_instance,
            ),
            Command::DrawIndexed(d) => (
                true,
                d.index_count,
                d.instance_count,
                d.first_index,
                d.base_vertex,
                d.first_instance,
            ),
            _ => return Ok(Vec::new()),
        };
        if count == 0 || instances == 0 {
            return Ok(Vec::new());
        }
        // wgpu validation errors of this draw (shader modules, pipeline, pass) come back
        // as this draw's error instead of reaching the device's handler; an early return
        // drops (pops) the scope.
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);

        // Shaders: the pixel shader first (its varyings select the vertex variant).
        let ps_key = VariantKey {
            // ps_1_x declares no sampler types: the bound textures' kinds say them.
            ps1_sampler_kinds: std::array::from_fn(|s| {
                st.ps_textures[s].map_or(TextureKind::Tex2d, |id| res.texture_kind(id))
            }),
            alpha_test: st.render_states.alpha_test(),
            // D3DSAMP_MIPMAPLODBIAS (8): wgpu samplers have no bias, the shader adds it.
            ps_lod_bias: std::array::from_fn(|s| st.ps_samplers[s][8]),
            ps_texture_reads: std::array::from_fn(|s| {
                st.ps_textures[s].map_or(TextureRead::Rgba, |id| res.texture_read(id))
            }),
            // D3DSAMP_SRGBTEXTURE (11) and D3DRS_SRGBWRITEENABLE (194), done in the shader.
            ps_srgb_read: (0..PS_SAMPLERS)
                .filter(|&s| st.ps_samplers[s][11] != 0)
                .fold(0, |bits, s| bits | 1 << s),
            srgb_write: st.render_states.get(194) != 0,
            ..VariantKey::default()
        };
        let (ps_id, varyings, ps_samplers, color_outputs) = {
            let m = self.module(st.ps, ShaderStage::Pixel, ps_key)?;
            (
                m.id,
                m.translated.varyings,
                m.translated.samplers.clone(),
                m.translated.color_outputs,
            )
        };
        let mut vs_key = VariantKey {
            vs_outputs: Some(varyings),
            ..VariantKey::default()
        };
        let vs_inputs = self
            .module(st.vs, ShaderStage::Vertex, vs_key)?
            .translated
            .vertex_inputs
            .clone();
        // The declaration's formats: integer ones need the integer-input variant.
        let elements = self
            .input_layouts
            .get(&st.input_layout)
            .ok_or(DrawError::Missing("an input layout"))?;
        let strides = st.vertex_buffers.map(|b| b.stride_bytes);
        let streams = pipeline::vertex_layouts(&vs_inputs, elements, &strides)?;
        (vs_key.vs_uint_inputs, vs_key.vs_sint_inputs) = pipeline::integer_inputs(&streams);
        let (vs_id, vs_samplers) = {
            let m = self.module(st.vs, ShaderStage::Vertex, vs_key)?;
            (m.id, m.translated.samplers.clone())
        };

        // Targets.
        let mut colors = Vec::new();
        let mut color_views = Vec::new();
        let mut size = None;
        // wgpu checks attachments only when the pass ends, failing every draw batched
        // with this one: what the guest binds is checked here instead.
        for slot in 0..st.color_count as usize {
            match st.colors[slot] {
                Some(id) => {
                    if colors.iter().flatten().any(|&(c, _)| c == id) {
                        return Err(DrawError::Targets("one texture bound twice"));
                    }
                    let t = res.target(id).ok_or(DrawError::Resource(id))?;
                    if *size.get_or_insert((t.width, t.height)) != (t.width, t.height) {
                        return Err(DrawError::Targets("render targets of different sizes"));
                    }
                    colors.push(Some((id, t.format)));
                    color_views.push(Some(t.view));
                }
                None => {
                    colors.push(None);
                    color_views.push(None);
                }
            }
        }
        let depth = match st.depth_target {
            Some(id) => {
                let t = res.target(id).ok_or(DrawError::Resource(id))?;
                if !t.format.is_depth_stencil_format() {
                    return Err(DrawError::Resource(id));
                }
                // D3D9 allows a larger depth buffer; wgpu attachments share one size.
                if *size.get_or_insert((t.width, t.height)) != (t.width, t.height) {
                    return Err(DrawError::Targets(
                        "a depth buffer of another size than the render target (not supported yet)",
                    ));
                }
                Some((id, t))
            }
            None => None,
        };
        let (width, height) = size.ok_or(DrawError::Missing("a render target"))?;

        // Pipeline.
        let fan = st.topology == PrimitiveTopology::TriangleFan;
        let index_format = match st.index_buffer {
            Some((_, IndexFormat::Uint32, _)) => wgpu::IndexFormat::Uint32,
            _ => wgpu::IndexFormat::Uint16,
        };
        let topology = pipeline::wgpu_topology(st.topology);
        let primitive = pipeline::primitive_state(
            &st.raster,
            topology,
            indexed.then_some(index_format),
            self.line_fill,
        )?;
        let depth_format = depth.as_ref().map(|(_, t)| t.format);
        let depth_stencil = pipeline::depth_stencil_state(
            &st.depth_stencil,
            &st.raster,
            &st.render_states,
            depth_format,
        )?;
        let (blend, mask) = pipeline::blend_state(&st.blend)?;
        let color_states: Vec<Option<wgpu::ColorTargetState>> = colors
            .iter()
            .enumerate()
            .map(|(i, c)| {
                c.map(|(_, format)| wgpu::ColorTargetState {
                    format,
                    // Integer targets cannot blend (D3D9 has none that could).
                    blend: blend.filter(|_| {
                        matches!(
                            format.sample_type(None, None),
                            Some(wgpu::TextureSampleType::Float { .. })
                        )
                    }),
                    // A target the pixel shader does not write keeps its contents.
                    write_mask: if color_outputs & (1 << i) == 0 {
                        wgpu::ColorWrites::empty()
                    } else if i == 0 {
                        mask
                    } else {
                        st.render_states.color_write_mask(i)
                    },
                })
            })
            .collect();
        let key = PipelineKey {
            vs: vs_id,
            ps: ps_id,
            streams: streams.clone(),
            primitive,
            depth_stencil: depth_stencil.clone(),
            colors: color_states.clone(),
        };
        let layout_key = (vs_id, ps_id);
        if !self.layouts.contains_key(&layout_key) && self.layouts.len() >= MAX_MODULES {
            self.layouts.clear();
        }
        if !self.layouts.contains_key(&layout_key) {
            let mut entries = Vec::new();
            let mut add = |binding: u32, kind: TextureKind| {
                let view_dimension = match kind {
                    TextureKind::Tex2d => wgpu::TextureViewDimension::D2,
                    TextureKind::Cube => wgpu::TextureViewDimension::Cube,
                    TextureKind::Volume => wgpu::TextureViewDimension::D3,
                };
                entries.push(wgpu::BindGroupLayoutEntry {
                    binding,
                    visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
                    ty: wgpu::BindingType::Texture {
                        sample_type: wgpu::TextureSampleType::Float { filterable: true },
                        view_dimension,
                        multisampled: false,
                    },
                    count: None,
                });
                entries.push(wgpu::BindGroupLayoutEntry {
                    binding: binding + 1,
                    visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
                    ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
                    count: None,
                });
            };
            for s in &ps_samplers {
                add(d3d9::bindings::ps_texture(s.slot), s.kind);
            }
            for s in &vs_samplers {
                add(d3d9::bindings::vs_texture(s.slot), s.kind);
            }
            let group1 = self
                .device
                .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: Some("aerogpu d3d9 group 1"),
                    entries: &entries,
                });
            let pipeline = self
                .device
                .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: Some("aerogpu d3d9"),
                    bind_group_layouts: &[Some(&self.group0_layout), Some(&group1)],
                    immediate_size: 0,
                });
            self.layouts
                .insert(layout_key, Layouts { group1, pipeline });
        }
        let layouts = &self.layouts[&layout_key];
        let vs_module = &self.modules[&(self.shaders[&st.vs].id, vs_key)].module;
        let ps_module = &self.modules[&(self.shaders[&st.ps].id, ps_key)].module;
        let device = &self.device;
        let render_pipeline = self.pipelines.get_or_build(&key, || {
            let buffers: Vec<wgpu::VertexBufferLayout> = key
                .streams
                .iter()
                .map(|s| wgpu::VertexBufferLayout {
                    array_stride: s.stride,
                    step_mode: wgpu::VertexStepMode::Vertex,
                    attributes: &s.attributes,
                })
                .collect();
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some("aerogpu d3d9"),
                layout: Some(&layouts.pipeline),
                vertex: wgpu::VertexState {
                    module: vs_module,
                    entry_point: Some("vs_main"),
                    compilation_options: Default::default(),
                    buffers: &buffers,
                },
                primitive: key.primitive,
                depth_stencil: key.depth_stencil.clone(),
                multisample: Default::default(),
                fragment: Some(wgpu::FragmentState {
                    module: ps_module,
                    entry_point: Some("fs_main"),
                    compilation_options: Default::default(),
                    targets: &key.colors,
                }),
                multiview_mask: None,
                cache: None,
            })
        });

        // Textures and samplers.
        let mut group1_entries_owned: Vec<(u32, wgpu::TextureView, wgpu::Sampler)> = Vec::new();
        // Textures this draw also renders into, read through a copy (see feedback_view).
        let mut feedback: Vec<(ResourceId, wgpu::TextureView)> = Vec::new();
        for (stage_vs, uses) in [(false, &ps_samplers), (true, &vs_samplers)] {
            for s in uses.iter() {
                let (texture, states, binding) = if stage_vs {
                    (
                        st.vs_textures.get(s.slot as usize).copied().flatten(),
                        st.vs_samplers
                            .get(s.slot as usize)
                            .copied()
                            .unwrap_or_default(),
                        d3d9::bindings::vs_texture(s.slot),
                    )
                } else {
                    (
                        st.ps_textures.get(s.slot as usize).copied().flatten(),
                        st.ps_samplers
                            .get(s.slot as usize)
                            .copied()
                            .unwrap_or_default(),
                        d3d9::bindings::ps_texture(s.slot),
                    )
                };
                let view = match (texture, s.kind) {
                    (Some(id), kind) if res.texture_kind(id) == kind => {
                        if colors.iter().flatten().any(|&(c, _)| c == id) {
                            // One copy per draw, however many samplers read it.
                            match feedback.iter().find(|(f, _)| *f == id) {
                                Some((_, v)) => v.clone(),
                                None => {
                                    let v = self.feedback_view(id, kind, feedback.len(), res)?;
                                    feedback.push((id, v.clone()));
                                    v
                                }
                            }
                        } else {
                            res.sampled_view(id).ok_or(DrawError::Resource(id))?.clone()
                        }
                    }
                    // Nothing bound, or a texture of another type than the sampler
                    // declares: read as unbound.
                    (_, kind) => self.dummy(kind),
                };
                let sampler = self.sampler(&states);
                group1_entries_owned.push((binding, view, sampler));
            }
        }
        let mut entries = Vec::new();
        for (binding, view, sampler) in &group1_entries_owned {
            entries.push(wgpu::BindGroupEntry {
                binding: *binding,
                resource: wgpu::BindingResource::TextureView(view),
            });
            entries.push(wgpu::BindGroupEntry {
                binding: binding + 1,
                resource: wgpu::BindingResource::Sampler(sampler),
            });
        }
        let group1 = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("aerogpu d3d9 textures"),
            layout: &self.layouts[&layout_key].group1,
            entries: &entries,
        });

        // Viewport (clamped to the targets, as D3D9 requires it inside them) and its
        // half-pixel fix-up.
        let (vx, vy, vw, vh, zmin, zmax) = match st.viewport {
            Some(v) => {
                let f = |b: u32| {
                    let x = f32::from_bits(b);
                    if x.is_finite() { x } else { 0.0 }
                };
                (
                    f(v.x_f32),
                    f(v.y_f32),
                    f(v.width_f32),
                    f(v.height_f32),
                    f(v.min_depth_f32),
                    f(v.max_depth_f32),
                )
            }
            None => (0.0, 0.0, width as f32, height as f32, 0.0, 1.0),
        };
        let vx = vx.clamp(0.0, width as f32);
        let vy = vy.clamp(0.0, height as f32);
        let vw = vw.clamp(0.0, width as f32 - vx);
        let vh = vh.clamp(0.0, height as f32 - vy);
        if vw < 1.0 || vh < 1.0 {
            return Ok(Vec::new());
        }
        let (zmin, zmax) = (zmin.clamp(0.0, 1.0), zmax.clamp(0.0, 1.0));
        let mut fixup = [0u8; 16];
        fixup[..4].copy_from_slice(&(1.0 / vw).to_le_bytes());
        fixup[4..8].copy_from_slice(&(-1.0 / vh).to_le_bytes());
        // This draw's constants in the batch's arena (a full arena submits the batch).
        let bump_env = st.bump_env_bytes();
        let blocks = [
            &st.vs_float[..],
            &st.vs_int_bool[..],
            &fixup[..],
            &st.ps_float[..],
            &st.ps_int_bool[..],
            &bump_env[..],
        ];
        let constant_offsets = match self.batch.constants(blocks) {
            Ok(offsets) => offsets,
            Err(batch::ConstantsError::Full) => {
                self.batch.flush().map_err(DrawError::Gpu)?;
                self.batch
                    .constants(blocks)
                    .map_err(|_| DrawError::TooLarge("shader constants"))?
            }
            Err(e) => return Err(DrawError::Gpu(format!("constant block: {e:?}"))),
        };

        // Fans become lists; an indexed fan is expanded from the index buffer's bytes.
        let fan_indices: Option<Vec<u32>> = if fan {
            if count < 3 {
                return Ok(Vec::new());
            }
            if count > MAX_FAN_VERTICES {
                return Err(DrawError::TooLarge("triangle fan"));
            }
            let source: Vec<u32> = if indexed {
                let (ib, format, offset) = st
                    .index_buffer
                    .ok_or(DrawError::Missing("an index buffer"))?;
                let bytes = res.buffer_bytes(ib).ok_or(DrawError::Resource(ib))?;
                let width = if format == IndexFormat::Uint32 { 4 } else { 2 };
                let start = u64::from(offset) + u64::from(first) * width;
                let end = start + u64::from(count) * width;
                let slice = usize::try_from(start)
                    .ok()
                    .zip(usize::try_from(end).ok())
                    .and_then(|(s, e)| bytes.get(s..e))
                    .ok_or(DrawError::Resource(ib))?;
                slice
                    .chunks_exact(width as usize)
                    .map(|c| {
                        if width == 4 {
                            u32::from_le_bytes([c[0], c[1], c[2], c[3]])
                        } else {
                            u32::from(u16::from_le_bytes([c[0], c[1]]))
                        }
                    })
                    .collect()
            } else {
                (first..first.saturating_add(count)).collect()
            };
            Some(fan_to_list(&source))
        } else {
            None
        };
        let fan_buffer = fan_indices.as_ref().map(|idx| {
            let bytes: Vec<u8> = idx.iter().flat_map(|i| i.to_le_bytes()).collect();
            let b = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("aerogpu fan indices"),
                size: bytes.len() as u64,
                usage: wgpu::BufferUsages::INDEX | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            self.queue.write_buffer(&b, 0, &bytes);
            b
        });

        // What wgpu refused so far (modules, pipeline, bind groups) fails this draw alone,
        // before it is recorded into the batch.
        if let Some(e) = pollster::block_on(scope.pop()) {
            // Do not keep a pipeline wgpu refused.
            self.pipelines.remove(&key);
            return Err(DrawError::Gpu(e.to_string()));
        }
        // Scissor (only while D3DRS_SCISSORTESTENABLE), cut to the targets.
        let (sx, sy, sw, sh) = match st.scissor {
            Some(s) if st.raster.scissor_enable != 0 => {
                let x0 = s.x.clamp(0, width as i32) as u32;
                let y0 = s.y.clamp(0, height as i32) as u32;
                let x1 = (i64::from(s.x) + i64::from(s.width))
                    .clamp(i64::from(x0), i64::from(width)) as u32;
                let y1 = (i64::from(s.y) + i64::from(s.height))
                    .clamp(i64::from(y0), i64::from(height)) as u32;
                (x0, y0, x1 - x0, y1 - y0)
            }
            _ => (0, 0, width, height),
        };
        if sw == 0 || sh == 0 {
            return Ok(Vec::new());
        }
        // Vertex and index ranges, checked before anything is recorded: wgpu checks
        // them when the pass ends, failing every draw batched with this one. The bytes
        // each draw reads are noted (writes to them flush the batch).
        let mut reads: Vec<(ResourceId, u64, u64)> = Vec::new();
        let mut vertex_buffers: Vec<(u32, &wgpu::Buffer, u64)> = Vec::new();
        for s in &streams {
            let b = st.vertex_buffers[s.slot as usize];
            let id = b.buffer.ok_or(DrawError::Missing("a vertex buffer"))?;
            let buf = res.buffer(id).ok_or(DrawError::Resource(id))?;
            let start = u64::from(b.offset_bytes);
            if start >= buf.size() || !start.is_multiple_of(4) {
                return Err(DrawError::Resource(id));
            }
            // Vertices first..first + count, or (indexed) wherever the indices point
            // (wgpu does not check those: out-of-range vertices read zeros or the
            // buffer's other bytes, as D3D9 leaves undefined).
            let attrs_end = s
                .attributes
                .iter()
                .map(|a| a.offset + a.format.size())
                .max()
                .unwrap_or(0);
            let (from, to) = if indexed {
                (start, buf.size())
            } else {
                let last = u64::from(first) + u64::from(count) - 1;
                let to = start
                    .saturating_add(last.saturating_mul(s.stride))
                    .saturating_add(attrs_end);
                if to > buf.size() {
                    return Err(DrawError::VertexRange {
                        slot: s.slot,
                        end: to,
                        size: buf.size(),
                    });
                }
                (
                    start.saturating_add(u64::from(first).saturating_mul(s.stride)),
                    to,
                )
            };
            vertex_buffers.push((s.slot, buf, start));
            reads.push((id, from, to.min(buf.size())));
        }
        let index_buffer = match (&fan_buffer, indexed) {
            (None, true) => {
                let (ib, _, offset) = st
                    .index_buffer
                    .ok_or(DrawError::Missing("an index buffer"))?;
                let buf = res.buffer(ib).ok_or(DrawError::Resource(ib))?;
                let width = index_format.byte_size() as u64;
                let end = first
                    .checked_add(count)
                    .ok_or(DrawError::TooLarge("index range"))?;
                let (offset, bytes_end) = (u64::from(offset), u64::from(end) * width);
                if !offset.is_multiple_of(width) || offset + bytes_end > buf.size() {
                    return Err(DrawError::Resource(ib));
                }
                reads.push((ib, offset + u64::from(first) * width, offset + bytes_end));
                Some((buf, offset, end))
            }
            _ => None,
        };
        // Recorded into the batch's pass for these attachments.
        {
            let key = PassKey {
                colors: colors.iter().map(|c| c.map(|(id, _)| id)).collect(),
                depth: depth.as_ref().map(|(id, _)| *id),
            };
            let mut pass = self.batch.pass(
                key,
                &color_views,
                depth.as_ref().map(|(_, t)| (t.view, t.format)),
            );
            pass.set_pipeline(&render_pipeline);
            pass.set_bind_group(0, &self.group0, &constant_offsets);
            pass.set_bind_group(1, &group1, &[]);
            pass.set_viewport(vx, vy, vw, vh, zmin, zmax.max(zmin));
            pass.set_scissor_rect(sx, sy, sw, sh);
            pass.set_stencil_reference(st.render_states.stencil_reference());
            pass.set_blend_constant(st.render_states.blend_constant());
            for &(slot, buf, offset) in &vertex_buffers {
                pass.set_vertex_buffer(slot, buf.slice(offset..));
            }
            let instances = first_instance..first_instance.saturating_add(instances);
            if let (Some(buf), Some(idx)) = (&fan_buffer, &fan_indices) {
                pass.set_index_buffer(buf.slice(..), wgpu::IndexFormat::Uint32);
                pass.draw_indexed(
                    0..idx.len() as u32,
                    if indexed { base_vertex } else { 0 },
                    instances,
                );
            } else if let Some((buf, offset, end)) = index_buffer {
                pass.set_index_buffer(buf.slice(offset..), index_format);
                pass.draw_indexed(first..end, base_vertex, instances);
            } else {
                pass.draw(first..first.saturating_add(count), instances);
            }
        }
        for (id, from, to) in reads {
            self.batch.read(id, from, to);
        }
        for id in st.ps_textures.iter().chain(&st.vs_textures).flatten() {
            self.batch.sample(*id);
        }
        self.batch.recorded();
        self.draws += 1;
        let mut changed: Vec<ResourceId> = colors
            .iter()
            .zip(&color_states)
            .filter(|(_, s)| s.as_ref().is_some_and(|s| !s.write_mask.is_empty()))
            .filter_map(|(c, _)| c.map(|(id, _)| id))
            .collect();
        if let Some((id, _)) = depth {
            changed.push(id);
        }
        Ok(changed)
    }
}

/// The executor's resource store as the draw path sees it.
impl DrawResources for super::WgpuExecutor {
    fn buffer(&self, id: ResourceId) -> Option<&wgpu::Buffer> {
        super::WgpuExecutor::buffer(self, id)
    }

    fn buffer_bytes(&self, id: ResourceId) -> Option<&[u8]> {
        super::WgpuExecutor::buffer_bytes(self, id)
    }

    fn target(&self, id: ResourceId) -> Option<Target<'_>> {
        super::WgpuExecutor::target(self, id).map(|t| Target {
            view: t.view,
            format: t.format,
            width: t.width,
            height: t.height,
        })
    }

    fn sampled_view(&self, id: ResourceId) -> Option<&wgpu::TextureView> {
        self.texture_view(id)
    }

    fn texture(&self, id: ResourceId) -> Option<&wgpu::Texture> {
        super::WgpuExecutor::texture(self, id)
    }

    fn texture_kind(&self, id: ResourceId) -> TextureKind {
        match self.resources.get(&id).map(|r| &r.desc) {
            Some(crate::aerogpu::processor::ResourceDesc::Texture2d(t)) => {
                super::texture_kind_of(t)
            }
            _ => TextureKind::Tex2d,
        }
    }

    /// As the CPU executor decodes them (executor_common::decode_rgba): X8 formats read
    /// alpha 1, R8 (the UMD's D3DFMT_L8) reads (l, l, l, 1), A8 (0, 0, 0, a), L8A8 (l, l, l, a),
    /// V8U8 (u, v, 1, 1).
    fn texture_read(&self, id: ResourceId) -> TextureRead {
        use crate::aerogpu::processor::ResourceDesc;
        match self.resources.get(&id).map(|r| &r.desc) {
            Some(ResourceDesc::Texture2d(t)) => match t.format {
                aero_protocol::pci::Format::B8G8R8X8Unorm
                | aero_protocol::pci::Format::R8G8B8X8Unorm => TextureRead::OneAlpha,
                aero_protocol::pci::Format::R8Unorm => TextureRead::Luminance,
                aero_protocol::pci::Format::A8Unorm => TextureRead::Alpha,
                aero_protocol::pci::Format::L8A8Unorm => TextureRead::LuminanceAlpha,
                aero_protocol::pci::Format::V8U8Snorm => TextureRead::SignedUv,
                _ => TextureRead::Rgba,
            },
            _ => TextureRead::Rgba,
        }
    }
}

/// Runs the draw-path part of one command on the executor: shader, input-layout and
/// state commands update the draw path (the current context's shadow), DRAW and
/// DRAW_INDEXED render and mark their targets host-changed. Ok(false): not a draw-path
/// command. SET_RENDER_TARGETS is draw state *and* executor state: the executor keeps
/// handling it too. The executor holds `path` apart from itself (e.g. taken out of an
/// `Option` for the call) since the draw reads the executor's resources.
pub fn execute_draw(
    exec: &mut super::WgpuExecutor,
    path: &mut DrawPath,
    command: &Command<'_>,
) -> Result<bool, DrawError> {
    match command {
        Command::Draw(_) | Command::DrawIndexed(_) => {
            for id in path.draw(command, exec)? {
                exec.mark_render_target_changed(id);
            }
            Ok(true)
        }
        _ => path.apply(command),
    }
}

/// A fan's vertex (or index) sequence as a triangle list: (v0, vi, vi+1), keeping the
/// fan's winding.
pub fn fan_to_list(fan: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(fan.len().saturating_sub(2) * 3);
    for w in fan.windows(2).skip(1) {
        out.extend_from_slice(&[fan[0], w[0], w[1]]);
    }
    out
}

#[cfg(test)]
#[path = "draw_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "draw_stream_tests.rs"]
mod stream_tests;
