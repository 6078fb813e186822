//! D3D9 draw state → wgpu render pipeline state, and a bounded LRU cache of pipelines.
//!
//! The processor hands over the UMD's packed states (SET_BLEND_STATE,
//! SET_DEPTH_STENCIL_STATE, SET_RASTERIZER_STATE) plus every D3DRS_* value raw
//! (SET_RENDER_STATE); states the packed packets do not carry (stencil functions and
//! ops, two-sided stencil, blend factor, slope-scaled bias, alpha test) are read from the
//! raw render states here. Everything is a pure mapping into wgpu descriptor values so
//! that the pipeline key is simply the descriptor (wgpu's state types hash).

use std::collections::HashMap;

use aero_protocol::Wire;
use aero_protocol::cmd::{self, BlendFactor, BlendOp, CompareFunc, CullMode, FillMode};

use crate::aerogpu::d3d9::{self, AlphaTest, Usage};

/// D3DRENDERSTATETYPE values the executor reads from SET_RENDER_STATE.
pub mod rs {
    pub const ALPHATESTENABLE: u32 = 15;
    pub const ALPHAREF: u32 = 24;
    pub const ALPHAFUNC: u32 = 25;
    pub const STENCILFAIL: u32 = 53;
    pub const STENCILZFAIL: u32 = 54;
    pub const STENCILPASS: u32 = 55;
    pub const STENCILFUNC: u32 = 56;
    pub const STENCILREF: u32 = 57;
    pub const SLOPESCALEDEPTHBIAS: u32 = 175;
    pub const TWOSIDEDSTENCILMODE: u32 = 185;
    pub const CCW_STENCILFAIL: u32 = 186;
    pub const CCW_STENCILZFAIL: u32 = 187;
    pub const CCW_STENCILPASS: u32 = 188;
    pub const CCW_STENCILFUNC: u32 = 189;
    pub const COLORWRITEENABLE1: u32 = 190;
    pub const COLORWRITEENABLE2: u32 = 191;
    pub const COLORWRITEENABLE3: u32 = 192;
    pub const BLENDFACTOR: u32 = 193;
}

/// The D3D9 render-state table (index = D3DRS_*), with D3D9's defaults for the states
/// read here (the UMD also sends its defaults ahead of the first draw).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderStates(Box<[u32; 256]>);

impl Default for RenderStates {
    fn default() -> Self {
        let mut t = Box::new([0u32; 256]);
        for s in [
            rs::STENCILFAIL,
            rs::STENCILZFAIL,
            rs::STENCILPASS,
            rs::CCW_STENCILFAIL,
            rs::CCW_STENCILZFAIL,
            rs::CCW_STENCILPASS,
        ] {
            t[s as usize] = 1; // D3DSTENCILOP_KEEP
        }
        for s in [rs::STENCILFUNC, rs::CCW_STENCILFUNC, rs::ALPHAFUNC] {
            t[s as usize] = 8; // D3DCMP_ALWAYS
        }
        t[rs::BLENDFACTOR as usize] = 0xFFFF_FFFF;
        for s in [
            rs::COLORWRITEENABLE1,
            rs::COLORWRITEENABLE2,
            rs::COLORWRITEENABLE3,
        ] {
            t[s as usize] = 0xF;
        }
        RenderStates(t)
    }
}

impl RenderStates {
    /// Records one SET_RENDER_STATE (states beyond the table are ignored: D3D9 has none).
    pub fn set(&mut self, state: u32, value: u32) {
        if let Some(slot) = self.0.get_mut(state as usize) {
            *slot = value;
        }
    }

    pub fn get(&self, state: u32) -> u32 {
        self.0.get(state as usize).copied().unwrap_or(0)
    }

    /// D3DRS_BLENDFACTOR (a D3DCOLOR, ARGB) as the pass's blend constant.
    pub fn blend_constant(&self) -> wgpu::Color {
        let c = self.get(rs::BLENDFACTOR);
        let ch = |shift: u32| f64::from((c >> shift) & 0xFF) / 255.0;
        wgpu::Color {
            r: ch(16),
            g: ch(8),
            b: ch(0),
            a: ch(24),
        }
    }

    /// The write mask of colour target `slot` ≥ 1 (D3DRS_COLORWRITEENABLE1-3; targets
    /// beyond 3 have none in D3D9 and take target 3's). Target 0's mask is in the
    /// blend state.
    pub fn color_write_mask(&self, slot: usize) -> wgpu::ColorWrites {
        let state = rs::COLORWRITEENABLE1 + (slot.clamp(1, 3) as u32 - 1);
        wgpu::ColorWrites::from_bits_truncate(self.get(state) & 0xF)
    }

    pub fn stencil_reference(&self) -> u32 {
        self.get(rs::STENCILREF) & 0xFF
    }

    /// The pixel-shader variant D3DRS_ALPHATESTENABLE/ALPHAFUNC/ALPHAREF select.
    pub fn alpha_test(&self) -> Option<AlphaTest> {
        if self.get(rs::ALPHATESTENABLE) == 0 {
            return None;
        }
        let func = d3d_compare(self.get(rs::ALPHAFUNC)).unwrap_or(wgpu::CompareFunction::Always);
        let func = match func {
            wgpu::CompareFunction::Never => d3d9::CompareFunc::Never,
            wgpu::CompareFunction::Less => d3d9::CompareFunc::Less,
            wgpu::CompareFunction::Equal => d3d9::CompareFunc::Equal,
            wgpu::CompareFunction::LessEqual => d3d9::CompareFunc::LessEqual,
            wgpu::CompareFunction::Greater => d3d9::CompareFunc::Greater,
            wgpu::CompareFunction::NotEqual => d3d9::CompareFunc::NotEqual,
            wgpu::CompareFunction::GreaterEqual => d3d9::CompareFunc::GreaterEqual,
            wgpu::CompareFunction::Always => return None,
        };
        Some(AlphaTest {
            func,
            reference: (self.get(rs::ALPHAREF) & 0xFF) as u8,
        })
    }
}

/// Why a draw state cannot become a wgpu pipeline.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PipelineError {
    #[error("invalid {what} value {value}")]
    Invalid { what: &'static str, value: u32 },
    #[error("not expressible in wgpu yet: {0}")]
    Unsupported(String),
}

fn invalid(what: &'static str, value: u32) -> PipelineError {
    PipelineError::Invalid { what, value }
}

fn blend_factor(v: u32) -> Result<wgpu::BlendFactor, PipelineError> {
    use wgpu::BlendFactor as F;
    Ok(
        match BlendFactor::from_u32(v).ok_or(invalid("blend factor", v))? {
            BlendFactor::Zero => F::Zero,
            BlendFactor::One => F::One,
            BlendFactor::SrcAlpha => F::SrcAlpha,
            BlendFactor::InvSrcAlpha => F::OneMinusSrcAlpha,
            BlendFactor::DestAlpha => F::DstAlpha,
            BlendFactor::InvDestAlpha => F::OneMinusDstAlpha,
            BlendFactor::Constant => F::Constant,
            BlendFactor::InvConstant => F::OneMinusConstant,
            BlendFactor::SrcColor => F::Src,
            BlendFactor::InvSrcColor => F::OneMinusSrc,
            BlendFactor::DestColor => F::Dst,
            BlendFactor::InvDestColor => F::OneMinusDst,
        },
    )
}

fn blend_component(src: u32, dst: u32, op: u32) -> Result<wgpu::BlendComponent, PipelineError> {
    let operation = match BlendOp::from_u32(op).ok_or(invalid("blend op", op))? {
        BlendOp::Add => wgpu::BlendOperation::Add,
        BlendOp::Subtract => wgpu::BlendOperation::Subtract,
        BlendOp::RevSubtract => wgpu::BlendOperation::ReverseSubtract,
        BlendOp::Min => wgpu::BlendOperation::Min,
        BlendOp::Max => wgpu::BlendOperation::Max,
    };
    // WebGPU requires factors of One for min/max (D3D9 ignores them there).
    let (src_factor, dst_factor) = match operation {
        wgpu::BlendOperation::Min | wgpu::BlendOperation::Max => {
            (wgpu::BlendFactor::One, wgpu::BlendFactor::One)
        }
        _ => (blend_factor(src)?, blend_factor(dst)?),
    };
    Ok(wgpu::BlendComponent {
        src_factor,
        dst_factor,
        operation,
    })
}

/// SET_BLEND_STATE → blend state (None = disabled) and write mask.
pub fn blend_state(
    b: &cmd::SetBlendState,
) -> Result<(Option<wgpu::BlendState>, wgpu::ColorWrites), PipelineError> {
    let mask = wgpu::ColorWrites::from_bits_truncate(b.color_write_mask & 0xF);
    if b.enable == 0 {
        return Ok((None, mask));
    }
    Ok((
        Some(wgpu::BlendState {
            color: blend_component(b.src_factor, b.dst_factor, b.blend_op)?,
            alpha: blend_component(b.src_factor_alpha, b.dst_factor_alpha, b.blend_op_alpha)?,
        }),
        mask,
    ))
}

/// The packed blend state the UMD sends before its first draw: blending off, all
/// channels written (D3D9's defaults).
pub fn default_blend() -> cmd::SetBlendState {
    cmd::SetBlendState {
        enable: 0,
        src_factor: BlendFactor::One as u32,
        dst_factor: BlendFactor::Zero as u32,
        blend_op: BlendOp::Add as u32,
        src_factor_alpha: BlendFactor::One as u32,
        dst_factor_alpha: BlendFactor::Zero as u32,
        blend_op_alpha: BlendOp::Add as u32,
        color_write_mask: 0xF,
        ..zeroed()
    }
}

fn compare(v: u32) -> Result<wgpu::CompareFunction, PipelineError> {
    use wgpu::CompareFunction as C;
    Ok(
        match CompareFunc::from_u32(v).ok_or(invalid("compare func", v))? {
            CompareFunc::Never => C::Never,
            CompareFunc::Less => C::Less,
            CompareFunc::Equal => C::Equal,
            CompareFunc::LessEqual => C::LessEqual,
            CompareFunc::Greater => C::Greater,
            CompareFunc::NotEqual => C::NotEqual,
            CompareFunc::GreaterEqual => C::GreaterEqual,
            CompareFunc::Always => C::Always,
        },
    )
}

/// A raw D3DCMPFUNC (1 = NEVER … 8 = ALWAYS).
fn d3d_compare(v: u32) -> Result<wgpu::CompareFunction, PipelineError> {
    match v {
        1..=8 => compare(v - 1),
        _ => Err(invalid("D3DCMPFUNC", v)),
    }
}

/// A raw D3DSTENCILOP.
fn stencil_op(v: u32) -> Result<wgpu::StencilOperation, PipelineError> {
    use wgpu::StencilOperation as S;
    Ok(match v {
        1 => S::Keep,
        2 => S::Zero,
        3 => S::Replace,
        4 => S::IncrementClamp,
        5 => S::DecrementClamp,
        6 => S::Invert,
        7 => S::IncrementWrap,
        8 => S::DecrementWrap,
        _ => return Err(invalid("D3DSTENCILOP", v)),
    })
}

fn stencil_face(
    states: &RenderStates,
    func: u32,
    fail: u32,
    zfail: u32,
    pass: u32,
) -> Result<wgpu::StencilFaceState, PipelineError> {
    Ok(wgpu::StencilFaceState {
        compare: d3d_compare(states.get(func))?,
        fail_op: stencil_op(states.get(fail))?,
        depth_fail_op: stencil_op(states.get(zfail))?,
        pass_op: stencil_op(states.get(pass))?,
    })
}

/// SET_DEPTH_STENCIL_STATE + the raw stencil states → the pipeline's depth/stencil
/// state for a target of `format` (None when no depth target is bound).
///
/// Two-sided stencil: D3D9's plain stencil ops apply to clockwise triangles, the CCW_
/// ones to counter-clockwise ones; the pipeline's front face is clockwise (see
/// [`primitive_state`]), so front = the plain ops, back = the CCW ones.
pub fn depth_stencil_state(
    ds: &cmd::SetDepthStencilState,
    raster: &cmd::SetRasterizerState,
    states: &RenderStates,
    format: Option<wgpu::TextureFormat>,
) -> Result<Option<wgpu::DepthStencilState>, PipelineError> {
    let Some(format) = format else {
        return Ok(None);
    };
    let (depth_compare, depth_write) = if ds.depth_enable != 0 {
        (compare(ds.depth_func)?, ds.depth_write_enable != 0)
    } else {
        // D3DZB_FALSE: neither tested nor written.
        (wgpu::CompareFunction::Always, false)
    };
    let mut stencil = wgpu::StencilState::default();
    if ds.stencil_enable != 0 && format.has_stencil_aspect() {
        let front = stencil_face(
            states,
            rs::STENCILFUNC,
            rs::STENCILFAIL,
            rs::STENCILZFAIL,
            rs::STENCILPASS,
        )?;
        let back = if states.get(rs::TWOSIDEDSTENCILMODE) != 0 {
            stencil_face(
                states,
                rs::CCW_STENCILFUNC,
                rs::CCW_STENCILFAIL,
                rs::CCW_STENCILZFAIL,
                rs::CCW_STENCILPASS,
            )?
        } else {
            front
        };
        stencil = wgpu::StencilState {
            front,
            back,
            read_mask: ds.stencil_read_mask & 0xFF,
            write_mask: ds.stencil_write_mask & 0xFF,
        };
    }
    // D3DRS_DEPTHBIAS is a depth offset (the UMD passes the float's bits); wgpu's constant
    // is in units of the format's resolution.
    let bias = f32::from_bits(raster.depth_bias as u32);
    let units = match format {
        wgpu::TextureFormat::Depth16Unorm => 65535.0,
        _ => 16_777_215.0,
    };
    let constant = if bias.is_finite() {
        (bias * units)
            .round()
            .clamp(i32::MIN as f32, i32::MAX as f32) as i32
    } else {
        0
    };
    let slope = f32::from_bits(states.get(rs::SLOPESCALEDEPTHBIAS));
    Ok(Some(wgpu::DepthStencilState {
        format,
        depth_write_enabled: Some(depth_write),
        depth_compare: Some(depth_compare),
        stencil,
        bias: wgpu::DepthBiasState {
            constant,
            slope_scale: if slope.is_finite() { slope } else { 0.0 },
            clamp: 0.0,
        },
    }))
}

/// A draw's primitive topology as wgpu draws it (fans are expanded to lists first).
pub fn wgpu_topology(t: cmd::PrimitiveTopology) -> wgpu::PrimitiveTopology {
    use cmd::PrimitiveTopology as T;
    match t {
        T::PointList => wgpu::PrimitiveTopology::PointList,
        T::LineList => wgpu::PrimitiveTopology::LineList,
        T::LineStrip => wgpu::PrimitiveTopology::LineStrip,
        T::TriangleList | T::TriangleFan => wgpu::PrimitiveTopology::TriangleList,
        T::TriangleStrip => wgpu::PrimitiveTopology::TriangleStrip,
    }
}

/// SET_RASTERIZER_STATE → primitive state. D3D9 windings are in screen space (y down)
/// and clockwise is the front (the UMD sends front_ccw = 0); wgpu's winding is in
/// framebuffer coordinates, also y down, so the rule carries over unchanged.
pub fn primitive_state(
    r: &cmd::SetRasterizerState,
    topology: wgpu::PrimitiveTopology,
    strip_index: Option<wgpu::IndexFormat>,
    line_fill: bool,
) -> Result<wgpu::PrimitiveState, PipelineError> {
    let cull_mode =
        match CullMode::from_u32(r.cull_mode).ok_or(invalid("cull mode", r.cull_mode))? {
            CullMode::None => None,
            CullMode::Front => Some(wgpu::Face::Front),
            CullMode::Back => Some(wgpu::Face::Back),
        };
    let polygon_mode =
        match FillMode::from_u32(r.fill_mode).ok_or(invalid("fill mode", r.fill_mode))? {
            FillMode::Solid => wgpu::PolygonMode::Fill,
            FillMode::Wireframe if line_fill => wgpu::PolygonMode::Line,
            FillMode::Wireframe => {
                return Err(PipelineError::Unsupported(
                    "wireframe fill without POLYGON_MODE_LINE".into(),
                ));
            }
        };
    let strip = matches!(
        topology,
        wgpu::PrimitiveTopology::LineStrip | wgpu::PrimitiveTopology::TriangleStrip
    );
    Ok(wgpu::PrimitiveState {
        topology,
        // D3D9 has no primitive restart; the format must still be named for strips.
        strip_index_format: if strip { strip_index } else { None },
        front_face: if r.front_ccw != 0 {
            wgpu::FrontFace::Ccw
        } else {
            wgpu::FrontFace::Cw
        },
        cull_mode,
        polygon_mode,
        ..Default::default()
    })
}

/// The rasterizer state D3D9 starts with: solid, D3DCULL_CCW (back faces culled).
pub fn default_rasterizer() -> cmd::SetRasterizerState {
    cmd::SetRasterizerState {
        fill_mode: FillMode::Solid as u32,
        cull_mode: CullMode::Back as u32,
        ..zeroed()
    }
}

/// D3DZB_TRUE, ZWRITEENABLE TRUE, D3DCMP_LESSEQUAL, no stencil (D3D9's defaults).
pub fn default_depth_stencil() -> cmd::SetDepthStencilState {
    cmd::SetDepthStencilState {
        depth_enable: 1,
        depth_write_enable: 1,
        depth_func: CompareFunc::LessEqual as u32,
        stencil_read_mask: 0xFF,
        stencil_write_mask: 0xFF,
        ..zeroed()
    }
}

/// A packet structure with every field zero (the wire structs have no Default).
pub fn zeroed<T: Wire>() -> T {
    T::read_le(&[0u8; 256][..T::WIRE_SIZE.min(256)])
}

/// One D3DVERTEXELEMENT9.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VertexElement {
    pub stream: u16,
    pub offset: u16,
    pub decl_type: u8,
    pub usage: u8,
    pub usage_index: u8,
}

/// Most elements a declaration may have (D3D9's MAXD3DDECLLENGTH is 64).
pub const MAX_VERTEX_ELEMENTS: usize = 64;

/// Parses D3DVERTEXELEMENT9 records up to D3DDECL_END (stream 0xFF).
pub fn parse_vertex_elements(bytes: &[u8]) -> Result<Vec<VertexElement>, PipelineError> {
    let mut out = Vec::new();
    for rec in bytes.chunks_exact(8) {
        let stream = u16::from_le_bytes([rec[0], rec[1]]);
        if stream == 0xFF {
            return Ok(out);
        }
        if out.len() == MAX_VERTEX_ELEMENTS {
            return Err(invalid("vertex element count", out.len() as u32 + 1));
        }
        if stream >= 16 {
            return Err(invalid("vertex stream", u32::from(stream)));
        }
        out.push(VertexElement {
            stream,
            offset: u16::from_le_bytes([rec[2], rec[3]]),
            decl_type: rec[4],
            usage: rec[6],
            usage_index: rec[7],
        });
    }
    Err(PipelineError::Unsupported(
        "vertex declaration without D3DDECL_END".into(),
    ))
}

/// D3DDECLTYPE → the wgpu vertex format that yields the same vec4<f32> in the shader
/// (missing components read 0,0,0,1 in both APIs).
pub fn vertex_format(decl_type: u8) -> Result<wgpu::VertexFormat, PipelineError> {
    use wgpu::VertexFormat as V;
    Ok(match decl_type {
        0 => V::Float32,
        1 => V::Float32x2,
        2 => V::Float32x3,
        3 => V::Float32x4,
        // D3DCOLOR: bytes B, G, R, A in memory; the shader sees (R, G, B, A).
        4 => V::Unorm8x4Bgra,
        // UBYTE4, SHORT2, SHORT4: unnormalized integers, read through the translator's
        // integer-input variant (see [`integer_inputs`]).
        5 => V::Uint8x4,
        6 => V::Sint16x2,
        7 => V::Sint16x4,
        8 => V::Unorm8x4, // UBYTE4N
        9 => V::Snorm16x2,
        10 => V::Snorm16x4,
        11 => V::Unorm16x2,
        12 => V::Unorm16x4,
        15 => V::Float16x2,
        16 => V::Float16x4,
        // UDEC3 / DEC3N (10:10:10 packed) have no wgpu format.
        13 | 14 => {
            return Err(PipelineError::Unsupported(format!(
                "D3DDECLTYPE {decl_type} vertex elements"
            )));
        }
        _ => return Err(invalid("D3DDECLTYPE", u32::from(decl_type))),
    })
}

/// D3DDECLUSAGE → the translator's usage.
pub fn decl_usage(u: u8) -> Option<Usage> {
    Usage::from_d3d(u32::from(u))
}

/// One vertex stream of a pipeline (owned, so it can be part of the cache key).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StreamLayout {
    pub slot: u32,
    pub stride: u64,
    pub attributes: Vec<wgpu::VertexAttribute>,
}

/// Matches the vertex shader's inputs to the declaration's elements, per stream.
/// `strides[s]` is stream s's SET_VERTEX_BUFFERS stride.
pub fn vertex_layouts(
    inputs: &[d3d9::VertexInput],
    elements: &[VertexElement],
    strides: &[u32; 16],
) -> Result<Vec<StreamLayout>, PipelineError> {
    let mut streams: Vec<StreamLayout> = Vec::new();
    for input in inputs {
        let el = elements
            .iter()
            .find(|e| {
                decl_usage(e.usage) == Some(input.usage) && e.usage_index == input.usage_index
            })
            .ok_or_else(|| {
                PipelineError::Unsupported(format!(
                    "vertex shader input {:?}{} missing from the declaration",
                    input.usage, input.usage_index
                ))
            })?;
        let format = vertex_format(el.decl_type)?;
        let stride = strides[usize::from(el.stream)];
        let offset = u64::from(el.offset);
        // WebGPU's alignment rules (D3D9 has none; real drivers align anyway).
        if !stride.is_multiple_of(4) || !offset.is_multiple_of(4) {
            return Err(PipelineError::Unsupported(format!(
                "vertex stride {stride} / offset {offset} not 4-byte aligned"
            )));
        }
        if stride != 0 && offset + format.size() > u64::from(stride) {
            return Err(PipelineError::Unsupported(format!(
                "vertex element at {offset} beyond stride {stride}"
            )));
        }
        let slot = u32::from(el.stream);
        let attribute = wgpu::VertexAttribute {
            format,
            offset,
            shader_location: input.location,
        };
        match streams.iter_mut().find(|s| s.slot == slot) {
            Some(s) => s.attributes.push(attribute),
            None => streams.push(StreamLayout {
                slot,
                stride: u64::from(stride),
                attributes: vec![attribute],
            }),
        }
    }
    streams.sort_by_key(|s| s.slot);
    Ok(streams)
}

/// The input locations fed from unsigned and signed integer formats (the vertex
/// shader's [`d3d9::VariantKey::vs_uint_inputs`] / `vs_sint_inputs`).
pub fn integer_inputs(streams: &[StreamLayout]) -> (u16, u16) {
    let (mut uint, mut sint) = (0u16, 0u16);
    for a in streams.iter().flat_map(|s| &s.attributes) {
        let bit = 1u16.checked_shl(a.shader_location).unwrap_or(0);
        match a.format {
            wgpu::VertexFormat::Uint8x4 => uint |= bit,
            wgpu::VertexFormat::Sint16x2 | wgpu::VertexFormat::Sint16x4 => sint |= bit,
            _ => {}
        }
    }
    (uint, sint)
}

/// Everything a render pipeline is built from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PipelineKey {
    /// Shader-cache ids of the translated modules.
    pub vs: u64,
    pub ps: u64,
    pub streams: Vec<StreamLayout>,
    pub primitive: wgpu::PrimitiveState,
    pub depth_stencil: Option<wgpu::DepthStencilState>,
    pub colors: Vec<Option<wgpu::ColorTargetState>>,
}

/// Render pipelines by key, at most `capacity`, least recently used evicted.
pub struct PipelineCache {
    capacity: usize,
    clock: u64,
    entries: HashMap<PipelineKey, (wgpu::RenderPipeline, u64)>,
    pub misses: u64,
}

impl PipelineCache {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            clock: 0,
            entries: HashMap::new(),
            misses: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The pipeline for `key`, built by `build` on a miss.
    pub fn get_or_build(
        &mut self,
        key: &PipelineKey,
        build: impl FnOnce() -> wgpu::RenderPipeline,
    ) -> wgpu::RenderPipeline {
        self.clock += 1;
        if let Some((p, used)) = self.entries.get_mut(key) {
            *used = self.clock;
            return p.clone();
        }
        self.misses += 1;
        if self.entries.len() >= self.capacity
            && let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
        {
            self.entries.remove(&oldest);
        }
        let p = build();
        self.entries.insert(key.clone(), (p.clone(), self.clock));
        p
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    pub fn remove(&mut self, key: &PipelineKey) {
        self.entries.remove(key);
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn vertex_elements_parse_to_end_and_refuse_hostile_ones() {
        let mut decl = Vec::new();
        for (stream, offset, ty, usage, idx) in [(0u16, 0u16, 2u8, 0u8, 0u8), (1, 4, 4, 10, 0)] {
            decl.extend_from_slice(&stream.to_le_bytes());
            decl.extend_from_slice(&offset.to_le_bytes());
            decl.extend_from_slice(&[ty, 0, usage, idx]);
        }
        decl.extend_from_slice(&[0xFF, 0, 0, 0, 17, 0, 0, 0]);
        let els = parse_vertex_elements(&decl).unwrap();
        assert_eq!(els.len(), 2);
        assert_eq!(els[1].stream, 1);
        assert_eq!(decl_usage(els[1].usage), Some(Usage::Color));
        assert!(parse_vertex_elements(&decl[..16]).is_err(), "no END");
        assert!(parse_vertex_elements(&[16, 0, 0, 0, 2, 0, 0, 0]).is_err());
        assert_eq!(vertex_format(4).unwrap(), wgpu::VertexFormat::Unorm8x4Bgra);
        assert!(matches!(
            vertex_format(13),
            Err(PipelineError::Unsupported(_))
        ));
        assert!(matches!(
            vertex_format(200),
            Err(PipelineError::Invalid { .. })
        ));
    }

    #[test]
    fn two_sided_stencil_maps_ccw_ops_to_the_back_face() {
        let mut states = RenderStates::default();
        states.set(rs::STENCILFUNC, 3); // EQUAL
        states.set(rs::STENCILPASS, 7); // INCR
        states.set(rs::TWOSIDEDSTENCILMODE, 1);
        states.set(rs::CCW_STENCILPASS, 8); // DECR
        let ds = cmd::SetDepthStencilState {
            stencil_enable: 1,
            stencil_read_mask: 0xFF,
            stencil_write_mask: 0x0F,
            ..default_depth_stencil()
        };
        let st = depth_stencil_state(
            &ds,
            &default_rasterizer(),
            &states,
            Some(wgpu::TextureFormat::Depth24PlusStencil8),
        )
        .unwrap()
        .unwrap();
        assert_eq!(st.stencil.front.compare, wgpu::CompareFunction::Equal);
        assert_eq!(
            st.stencil.front.pass_op,
            wgpu::StencilOperation::IncrementWrap
        );
        assert_eq!(st.stencil.back.compare, wgpu::CompareFunction::Always);
        assert_eq!(
            st.stencil.back.pass_op,
            wgpu::StencilOperation::DecrementWrap
        );
        assert_eq!(st.stencil.write_mask, 0x0F);
        assert_eq!(st.depth_compare, Some(wgpu::CompareFunction::LessEqual));
    }

    #[test]
    fn min_max_blend_ignores_factors_and_alpha_test_reads_render_states() {
        let b = cmd::SetBlendState {
            enable: 1,
            blend_op: BlendOp::Max as u32,
            src_factor: BlendFactor::SrcAlpha as u32,
            dst_factor_alpha: BlendFactor::DestColor as u32,
            ..default_blend()
        };
        let (state, mask) = blend_state(&b).unwrap();
        let state = state.unwrap();
        assert_eq!(state.color.src_factor, wgpu::BlendFactor::One);
        assert_eq!(state.alpha.dst_factor, wgpu::BlendFactor::Dst);
        assert_eq!(mask, wgpu::ColorWrites::ALL);
        let mut states = RenderStates::default();
        assert_eq!(states.alpha_test(), None);
        states.set(rs::ALPHATESTENABLE, 1);
        states.set(rs::ALPHAFUNC, 7); // GREATEREQUAL
        states.set(rs::ALPHAREF, 0x180);
        assert_eq!(
            states.alpha_test(),
            Some(AlphaTest {
                func: d3d9::CompareFunc::GreaterEqual,
                reference: 0x80
            })
        );
    }
}
