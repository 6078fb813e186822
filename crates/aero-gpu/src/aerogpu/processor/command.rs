//! Validated commands, as the processor hands them to an executor: handles are resolved
//! to resource ids (aliases of a shared surface resolve to the same id), guest backings
//! are resolved through the current submission's allocation table.

use aero_protocol::Handle;

pub use super::shader_tokens::ConstantUse;
use aero_protocol::cmd::{self, IndexFormat, PrimitiveTopology, ShaderStage};
use aero_protocol::pci::Format;

/// D3DTEXTURESTAGESTATETYPE values SET_TEXTURE_STAGE_STATE accepts (up to D3DTSS_CONSTANT).
pub const TEXTURE_STAGE_STATES: u32 = aero_protocol::cmd::TEXTURE_STAGE_STATES;

/// Device-internal resource identity; never reused, stable across handle aliases.
pub type ResourceId = u64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferDesc {
    pub size_bytes: u64,
    pub usage_flags: u32,
}

/// The immutable properties of a texture (compared by the rebind rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextureDesc {
    pub format: Format,
    pub width: u32,
    pub height: u32,
    pub mip_levels: u32,
    pub array_layers: u32,
    pub row_pitch_bytes: u32,
    pub usage_flags: u32,
    pub flags: u32,
    /// Slices of a VOLUME texture; 1 for every other texture.
    pub depth: u32,
}

impl TextureDesc {
    pub fn is_volume(&self) -> bool {
        self.flags & cmd::TEXTURE_FLAG_VOLUME != 0
    }

    pub fn is_cube(&self) -> bool {
        self.flags & cmd::TEXTURE_FLAG_CUBE != 0
    }

    /// Depth slices of `mip` (1 unless a volume).
    pub fn depth_of_mip(&self, mip: u32) -> u32 {
        self.depth.checked_shr(mip).unwrap_or(0).max(1)
    }

    /// Subresources addressed as "layers" by copies: array layers, or a volume's slices
    /// of `mip`.
    pub fn layers_of_mip(&self, mip: u32) -> u32 {
        if self.is_volume() {
            self.depth_of_mip(mip)
        } else {
            self.array_layers
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceDesc {
    Buffer(BufferDesc),
    Texture2d(TextureDesc),
}

/// A resource's guest memory for this submission: `[gpa, gpa + size_bytes)` is inside
/// both the allocation and guest RAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResolvedBacking {
    pub alloc_id: u32,
    pub gpa: u64,
    pub size_bytes: u64,
    pub readonly: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConstantKind {
    /// float4 registers, 16 bytes each.
    Float,
    /// int4 registers, 16 bytes each.
    Int,
    /// bool registers, one u32 each.
    Bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VertexBufferBinding {
    pub buffer: Option<ResourceId>,
    pub stride_bytes: u32,
    pub offset_bytes: u32,
}

// Commands live on the stack for one executor call; boxing the big variants would
// allocate per packet.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command<'a> {
    Nop,
    DebugMarker(&'a [u8]),
    CreateResource {
        resource: ResourceId,
        desc: ResourceDesc,
        size_bytes: u64,
        backing: Option<ResolvedBacking>,
        rebind: bool,
    },
    /// One handle went away; `freed` when it was the last reference to the resource.
    DestroyResource {
        resource: ResourceId,
        freed: bool,
    },
    ResourceDirtyRange {
        resource: ResourceId,
        offset_bytes: u64,
        size_bytes: u64,
        backing: Option<ResolvedBacking>,
    },
    UploadResource {
        resource: ResourceId,
        offset_bytes: u64,
        data: &'a [u8],
    },
    CopyBuffer {
        dst: ResourceId,
        src: ResourceId,
        dst_offset_bytes: u64,
        src_offset_bytes: u64,
        size_bytes: u64,
        writeback: Option<ResolvedBacking>,
    },
    CopyTexture2d {
        dst: ResourceId,
        src: ResourceId,
        region: cmd::CopyTexture2d,
        writeback: Option<ResolvedBacking>,
    },
    CreateShader {
        handle: Handle,
        stage: ShaderStage,
        tokens: &'a [u8],
        /// The i#/b# registers the shader reads (its static flow control).
        constants: ConstantUse,
    },
    DestroyShader {
        handle: Handle,
    },
    BindShaders {
        vs: Handle,
        ps: Handle,
    },
    SetShaderConstants {
        kind: ConstantKind,
        stage: ShaderStage,
        start_register: u32,
        count: u32,
        data: &'a [u8],
    },
    /// `elements`: D3DVERTEXELEMENT9 records ending with D3DDECL_END.
    CreateInputLayout {
        handle: Handle,
        elements: &'a [u8],
    },
    DestroyInputLayout {
        handle: Handle,
    },
    SetInputLayout {
        handle: Handle,
    },
    SetBlendState(cmd::SetBlendState),
    SetDepthStencilState(cmd::SetDepthStencilState),
    SetRasterizerState(cmd::SetRasterizerState),
    SetRenderState {
        state: u32,
        value: u32,
    },
    SetSamplerState {
        stage: ShaderStage,
        slot: u32,
        state: u32,
        value: u32,
    },
    /// `stage` < MAX_TEXTURE_STAGES, `state` < [`TEXTURE_STAGE_STATES`].
    SetTextureStageState {
        stage: u32,
        state: u32,
        value: u32,
    },
    SetRenderTargets {
        colors: [Option<ResourceId>; 8],
        color_count: u32,
        depth_stencil: Option<ResourceId>,
    },
    SetViewport(cmd::SetViewport),
    SetScissor(cmd::SetScissor),
    SetVertexBuffers {
        start_slot: u32,
        count: u32,
        bindings: [VertexBufferBinding; 16],
    },
    SetIndexBuffer {
        buffer: Option<ResourceId>,
        format: IndexFormat,
        offset_bytes: u32,
    },
    SetPrimitiveTopology(PrimitiveTopology),
    SetTexture {
        stage: ShaderStage,
        slot: u32,
        texture: Option<ResourceId>,
    },
    Clear(cmd::Clear),
    /// `rects`: `clear.rect_count` [`cmd::ClearRect`] records (read them with
    /// [`clear_rect_records`]).
    ClearRects {
        clear: cmd::ClearRects,
        rects: &'a [u8],
    },
    Draw(cmd::Draw),
    DrawIndexed(cmd::DrawIndexed),
    /// PRESENT / PRESENT_EX: shows the context's render target 0 (`target`, `None` when
    /// nothing is bound) on the scanout. `target_backing` is its guest backing resolved
    /// through this submission's table (`None` when host-allocated or not listed).
    Present {
        scanout_id: u32,
        flags: u32,
        d3d9_present_flags: Option<u32>,
        target: Option<ResourceId>,
        target_backing: Option<ResolvedBacking>,
    },
    ExportSharedSurface {
        resource: ResourceId,
        share_token: u64,
    },
    ImportSharedSurface {
        handle: Handle,
        resource: ResourceId,
        share_token: u64,
    },
    ReleaseSharedSurface {
        share_token: u64,
    },
    Flush,
}

/// The rectangles of a validated [`Command::ClearRects`].
pub fn clear_rect_records(rects: &[u8]) -> impl Iterator<Item = cmd::ClearRect> + '_ {
    use aero_protocol::Wire;
    rects
        .chunks_exact(cmd::ClearRect::SIZE)
        .map(cmd::ClearRect::read_le)
}
