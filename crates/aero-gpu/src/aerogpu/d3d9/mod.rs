//! D3D9 shader bytecode (vs_1_1, ps_1_1–1_4, vs/ps_2_0, 2_x, 3_0) → WGSL.
//!
//! [`translate`] is a pure function of the token stream and a small [`VariantKey`]; it
//! returns one WGSL module per shader (entry point `vs_main` or `fs_main`) plus the
//! reflection an executor needs to build a pipeline. Every malformed or not yet
//! supported stream is a [`TranslateError`], never a panic: token counts, register
//! numbers, nesting, call graphs and the output size are all bounded.
//!
//! # Supported
//! - Arithmetic: mov add sub mul mad dp3 dp4 rcp rsq min max slt sge exp log expp logp
//!   lit dst lrp frc pow crs sgn abs nrm sincos m4x4 m4x3 m3x4 m3x3 m3x2 mova cmp cnd
//!   dp2add dsx dsy setp; source modifiers (negate, abs, bias, bx2, comp, x2, dz, dw,
//!   not), swizzles, write masks, saturate, the ps_1_x result shifts; def/defi/defb.
//! - Textures: texld/texldp/texldb/texldl/texldd, texkill, 2D/cube/volume samplers.
//! - Flow control: if/else/endif on b# or p0, ifc, loop (aL) / rep with i#, break,
//!   breakc, breakp, call/callnz/label/ret (each label a WGSL function; recursion is an
//!   error), predication (`(p0) op`, predicated texkill), relative addressing
//!   `c[a0.x + n]`, `c[aL + n]` (out-of-range reads are zero) and SM3's `v[aL + n]`,
//!   `o[aL + n]`.
//! - vPos, vFace, oC0–oC3, oDepth; D3D9's alpha test as a pixel-shader variant
//!   ([`VariantKey::alpha_test`]).
//! - Shader model 1: vs_1_1 (a0 by `mov`, four-component expp/logp), ps_1_1–1_3 (tex,
//!   texcoord, texkill, texreg2ar/gb/rgb, texm3x2pad/tex/depth, texm3x3pad/tex/spec/
//!   vspec, texm3x3, texdp3, texdp3tex, texbem/texbeml, cnd on r0.a, result shifts,
//!   constants clamped to [-1, 1]) and ps_1_4 (texld/texcrd with _dz/_dw, phase, bem,
//!   texdepth); r0 is the colour output. Sampler kinds come from [`VariantKey`].
//!   Co-issued (`+`) pairs run one after the other (they write disjoint components);
//!   register values are not clamped to the ps_1_x range.
//!
//! # Not modelled (yet)
//! - `_centroid` and `_pp` are ignored; colours interpolate smoothly (flat shading,
//!   D3DRS_SHADEMODE, would be a variant); oPts/PSIZE and SM1/2 fog are dropped.
//! - vFace is +1 where WebGPU reports front facing: the executor's `front_face` must
//!   follow D3D9's winding rule (D3DCULL) for the sign to match.
//! - log(0) and logp(0) give -FLT_MAX rather than -infinity; pow(x, 0) is 1; nrm of
//!   a zero vector is zero.
//! - Relative addressing of temps, and of o# or v# before SM3, is
//!   [`TranslateError::Unsupported`] (D3D9 has none of them either).
//!
//! # Binding contract (the executor creates its pipeline layout from this)
//! - `@group(0)`: binding 0 = VS float constants (`array<vec4<f32>, 256>`, 4096 bytes),
//!   binding 1 = VS int/bool constants ([`IntBoolConstants`] layout: 16 × `vec4<i32>`
//!   then 16 × `u32` booleans, 320 bytes), binding 2 = VS viewport fix-up (one
//!   `vec4<f32>`: see below); binding 3 = PS float constants, binding 4 = PS int/bool,
//!   binding 5 = ps_1_x bump environment ([`bindings::PS_BUMP_ENV`]).
//!   Constants a shader defines with def/defi/defb take precedence over these buffers.
//! - `@group(1)`: pixel sampler slot s at binding 2s (texture) and 2s+1 (sampler);
//!   vertex sampler slot s (D3DVERTEXTEXTURESAMPLERs) at 32+2s and 33+2s. Texture view
//!   dimensions follow [`Translated::samplers`].
//! - Vertex inputs: `@location(n)` = the shader's input register v#n, a `vec4<f32>`
//!   (missing components of narrower vertex formats expand to 0,0,0,1 as in D3D9), or an
//!   integer vector for the locations [`VariantKey::vs_uint_inputs`] / `vs_sint_inputs`
//!   name. The
//!   executor feeds location n from the D3DVERTEXELEMENT9 whose (usage, usage index)
//!   matches [`Translated::vertex_inputs`].
//! - Between stages, by semantic ([`varying_location`]): COLOR0/1 → 0/1 (oD0/oD1, ps
//!   v0/v1), TEXCOORD0–7 → 2–9 (oT#, ps t#), FOG → 10, NORMAL0 11, TANGENT0 12, BINORMAL0
//!   13, BLENDWEIGHT0 14, BLENDINDICES0 15. A ps_3_0 input of another semantic is an
//!   error; a vs_3_0 output of another semantic cannot reach any pixel shader and is
//!   dropped. SM3 may pack semantics into one register by write mask (`dcl_texcoord1
//!   o1.zw`): each keeps its component positions on its location, on both sides.
//!   [`VariantKey::vs_outputs`] makes a vertex shader write exactly the
//!   locations its pixel shader reads (zero where it writes nothing), so stages link.
//! - Position: D3D9 samples pixels at integer window coordinates, WebGPU at +0.5. The
//!   vertex epilogue adds `fixup.xy * w` to the clip position; the executor stores
//!   `(1/viewport_width, -1/viewport_height, 0, 0)` in group 0 binding 2. D3D9's clip
//!   z range is [0, 1] like WebGPU's: z is passed through. In pixel shaders vPos is
//!   `position.xy - 0.5` (integer pixel centres again).
//! - Point size (oPts / PSIZE) and fog outputs of SM1/2 vertex shaders are not
//!   consumed here (FOG reaches the pixel shader only as a varying).

pub mod asm;
mod parse;
mod wgsl;

#[cfg(test)]
mod tests;

use thiserror::Error;

pub use parse::{Stage, TextureKind, Usage, Version};

/// Largest WGSL module the translator writes.
pub const MAX_WGSL_BYTES: usize = 4 << 20;

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum TranslateError {
    #[error("not a D3D9 shader version token: {0:#010x}")]
    Version(u32),
    #[error("unknown or misplaced opcode {0:#x}")]
    Opcode(u32),
    #[error("register type {ty} number {number} out of range")]
    Register { ty: u32, number: u32 },
    #[error("malformed shader: {0}")]
    Malformed(&'static str),
    #[error("not supported yet: {0}")]
    Unsupported(&'static str),
    #[error("too large: {0}")]
    TooLarge(&'static str),
}

/// Draw-time facts a translation depends on (part of the executor's shader-cache key).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct VariantKey {
    /// Texture kind of each pixel sampler, for ps_1_x (which has no sampler DCLs).
    pub ps1_sampler_kinds: [TextureKind; 8],
    /// Vertex shaders: the varying locations to write (bit n = location n), normally
    /// the pixel shader's [`Translated::varyings`]. None: the ones the shader writes.
    pub vs_outputs: Option<u16>,
    /// Pixel shaders: D3DRS_ALPHATESTENABLE with its function and reference.
    pub alpha_test: Option<AlphaTest>,
    /// Vertex shaders: input locations (bit n = v#n) the executor feeds from unsigned
    /// integer vertex formats (D3DDECLTYPE_UBYTE4 as Uint8x4) and from signed ones
    /// (SHORT2/SHORT4 as Sint16x2/x4). They are declared `vec4<u32>` / `vec4<i32>` and
    /// converted to float unnormalized, as D3D9 reads them.
    pub vs_uint_inputs: u16,
    pub vs_sint_inputs: u16,
    /// Pixel shaders: D3DSAMP_MIPMAPLODBIAS of each pixel sampler, as the f32 bits the
    /// guest sent (wgpu samplers have no bias). Implicit-LOD samples add it
    /// (`textureSampleBias`), texldd scales its gradients by 2^bias; texldl's explicit
    /// level is not biased. Zero and non-finite biases change nothing; others are
    /// clamped to [-16, 15.99] as WGSL's bias range requires.
    pub ps_lod_bias: [u32; 16],
    /// Pixel shaders: how each pixel sampler's texture format reads back, for formats
    /// whose wgpu storage cannot say it (wgpu views have no component swizzle).
    pub ps_texture_reads: [TextureRead; 16],
    /// Pixel shaders: D3DSAMP_SRGBTEXTURE per pixel sampler (bit s): the sampled rgb is
    /// decoded from sRGB to linear after the texture unit's filtering (exact for point
    /// sampling; linear filtering of sRGB texels would decode first).
    pub ps_srgb_read: u16,
    /// Pixel shaders: D3DRS_SRGBWRITEENABLE: every colour output's rgb is encoded to
    /// sRGB as the shader writes it (blending then happens on encoded values).
    pub srgb_write: bool,
}

/// What a sample of a texture returns beyond the stored channels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TextureRead {
    /// The stored (r, g, b, a).
    #[default]
    Rgba,
    /// X8R8G8B8-style formats: alpha reads 1 whatever the unused byte holds.
    OneAlpha,
    /// D3DFMT_L8 stored in a one-channel texture: (l, l, l, 1).
    Luminance,
    /// D3DFMT_A8 stored in a one-channel texture: (0, 0, 0, a).
    Alpha,
    /// D3DFMT_A8L8 stored in a two-channel texture (l, a): (l, l, l, a).
    LuminanceAlpha,
    /// D3DFMT_V8U8 stored in a two-channel signed texture (u, v): (u, v, 1, 1).
    SignedUv,
}

/// D3D9's alpha test: the pixel survives when `alpha FUNC reference`, alpha taken as
/// the 8-bit value of oC0.a (r0.a in ps_1_x) as the D3DRS_ALPHAREF scale is 0–255.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AlphaTest {
    pub func: CompareFunc,
    pub reference: u8,
}

/// D3DCMPFUNC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompareFunc {
    Never,
    Less,
    Equal,
    LessEqual,
    Greater,
    NotEqual,
    GreaterEqual,
    Always,
}

/// Layout of the int/bool constant buffer (group 0 binding 1 or 4), as bytes.
pub struct IntBoolConstants;

impl IntBoolConstants {
    pub const SIZE: usize = 16 * 16 + 16 * 4;
    /// Byte offset of i#n (four i32).
    pub const fn int_offset(n: usize) -> usize {
        n * 16
    }
    /// Byte offset of b#n (one u32, nonzero = true).
    pub const fn bool_offset(n: usize) -> usize {
        256 + n * 4
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VertexInput {
    pub location: u32,
    pub usage: Usage,
    pub usage_index: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SamplerUse {
    pub slot: u32,
    pub kind: TextureKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Translated {
    pub version: Version,
    pub wgsl: String,
    /// Vertex shaders: the inputs, by location.
    pub vertex_inputs: Vec<VertexInput>,
    /// Varying locations written (VS) or read (PS), bit n = location n.
    pub varyings: u16,
    pub samplers: Vec<SamplerUse>,
    /// Pixel shaders: colour targets written (bit n = oC#n).
    pub color_outputs: u8,
    pub writes_depth: bool,
}

/// Group/binding numbers of the contract above.
pub mod bindings {
    pub const CONSTANTS_GROUP: u32 = 0;
    pub const VS_FLOAT: u32 = 0;
    pub const VS_INT_BOOL: u32 = 1;
    pub const VS_FIXUP: u32 = 2;
    pub const PS_FLOAT: u32 = 3;
    pub const PS_INT_BOOL: u32 = 4;
    /// ps_1_x bump mapping (texbem/texbeml/bem): per texture stage s, `m[s]` =
    /// (BUMPENVMAT00, 01, 10, 11) then `l[s]` = (BUMPENVLSCALE, BUMPENVLOFFSET, 0, 0);
    /// 8 + 8 vec4<f32>, 256 bytes.
    pub const PS_BUMP_ENV: u32 = 5;
    pub const TEXTURE_GROUP: u32 = 1;
    pub const fn ps_texture(slot: u32) -> u32 {
        2 * slot
    }
    pub const fn vs_texture(slot: u32) -> u32 {
        32 + 2 * slot
    }
}

/// The location a semantic travels on between the stages, if it has one.
pub fn varying_location(usage: Usage, index: u8) -> Option<u32> {
    Some(match (usage, index) {
        (Usage::Color, 0 | 1) => u32::from(index),
        (Usage::TexCoord, 0..=7) => 2 + u32::from(index),
        (Usage::Fog, 0) => 10,
        (Usage::Normal, 0) => 11,
        (Usage::Tangent, 0) => 12,
        (Usage::Binormal, 0) => 13,
        (Usage::BlendWeight, 0) => 14,
        (Usage::BlendIndices, 0) => 15,
        _ => return None,
    })
}

/// Translates one shader (its tokens, version first and END last).
pub fn translate(tokens: &[u32], key: &VariantKey) -> Result<Translated, TranslateError> {
    let shader = parse::parse(tokens)?;
    wgsl::write(&shader, key)
}

/// [`translate`] over little-endian bytes (as CREATE_SHADER carries them).
pub fn translate_bytes(bytes: &[u8], key: &VariantKey) -> Result<Translated, TranslateError> {
    if !bytes.len().is_multiple_of(4) {
        return Err(TranslateError::Malformed("not whole tokens"));
    }
    if bytes.len() / 4 > parse::MAX_INSTRUCTIONS * 8 {
        return Err(TranslateError::TooLarge("token count"));
    }
    let tokens: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    translate(&tokens, key)
}
