//! `aerogpu_cmd.h`: command stream header, packet header, opcodes and packets.

use crate::{c_consts, c_enum, wire_struct};

c_consts! {
    CONSTANTS;
    pub const CMD_STREAM_MAGIC: u32 = 0x444D_4341 => "AEROGPU_CMD_STREAM_MAGIC";
    pub const MAX_RENDER_TARGETS: u32 = 8 => "AEROGPU_MAX_RENDER_TARGETS";
    pub const MAX_VERTEX_BUFFERS: u32 = 16 => "AEROGPU_MAX_VERTEX_BUFFERS";
    pub const MAX_TEXTURE_SLOTS: u32 = 16 => "AEROGPU_MAX_TEXTURE_SLOTS";
    pub const MAX_SHADER_CONSTANTS_F: u32 = 256 => "AEROGPU_MAX_SHADER_CONSTANTS_F";
    pub const MAX_SHADER_CONSTANTS_I: u32 = 16 => "AEROGPU_MAX_SHADER_CONSTANTS_I";
    pub const MAX_SHADER_CONSTANTS_B: u32 = 16 => "AEROGPU_MAX_SHADER_CONSTANTS_B";
    pub const MAX_TEXTURE_DIM: u32 = 16384 => "AEROGPU_MAX_TEXTURE_DIM";
    pub const MAX_MIP_LEVELS: u32 = 15 => "AEROGPU_MAX_MIP_LEVELS";
    pub const MAX_ARRAY_LAYERS: u32 = 2048 => "AEROGPU_MAX_ARRAY_LAYERS";
    pub const MAX_VOLUME_DEPTH: u32 = 2048 => "AEROGPU_MAX_VOLUME_DEPTH";
    pub const MAX_TEXTURE_STAGES: u32 = 8 => "AEROGPU_MAX_TEXTURE_STAGES";
    pub const TSS_BUMPENVMAT00: u32 = 7 => "AEROGPU_TSS_BUMPENVMAT00";
    pub const TSS_BUMPENVLSCALE: u32 = 22 => "AEROGPU_TSS_BUMPENVLSCALE";
    pub const TSS_BUMPENVLOFFSET: u32 = 23 => "AEROGPU_TSS_BUMPENVLOFFSET";
    pub const TEXTURE_STAGE_STATES: u32 = 33 => "AEROGPU_TEXTURE_STAGE_STATES";
    pub const MAX_SHADER_BYTES: u32 = 0x10_0000 => "AEROGPU_MAX_SHADER_BYTES";
    pub const MAX_INPUT_LAYOUT_ELEMENTS: u32 = 65 => "AEROGPU_MAX_INPUT_LAYOUT_ELEMENTS";
    pub const MAX_CLEAR_RECTS: u32 = 256 => "AEROGPU_MAX_CLEAR_RECTS";

    pub const RESOURCE_USAGE_VERTEX_BUFFER: u32 = 1 << 0 => "AEROGPU_RESOURCE_USAGE_VERTEX_BUFFER";
    pub const RESOURCE_USAGE_INDEX_BUFFER: u32 = 1 << 1 => "AEROGPU_RESOURCE_USAGE_INDEX_BUFFER";
    pub const RESOURCE_USAGE_CONSTANT_BUFFER: u32 = 1 << 2 => "AEROGPU_RESOURCE_USAGE_CONSTANT_BUFFER";
    pub const RESOURCE_USAGE_TEXTURE: u32 = 1 << 3 => "AEROGPU_RESOURCE_USAGE_TEXTURE";
    pub const RESOURCE_USAGE_RENDER_TARGET: u32 = 1 << 4 => "AEROGPU_RESOURCE_USAGE_RENDER_TARGET";
    pub const RESOURCE_USAGE_DEPTH_STENCIL: u32 = 1 << 5 => "AEROGPU_RESOURCE_USAGE_DEPTH_STENCIL";
    pub const RESOURCE_USAGE_SCANOUT: u32 = 1 << 6 => "AEROGPU_RESOURCE_USAGE_SCANOUT";
    pub const RESOURCE_USAGE_STAGING: u32 = 1 << 7 => "AEROGPU_RESOURCE_USAGE_STAGING";

    pub const TEXTURE_FLAG_CUBE: u32 = 1 << 0 => "AEROGPU_TEXTURE_FLAG_CUBE";
    pub const TEXTURE_FLAG_VOLUME: u32 = 1 << 1 => "AEROGPU_TEXTURE_FLAG_VOLUME";
    pub const COPY_FLAG_WRITEBACK_DST: u32 = 1 << 0 => "AEROGPU_COPY_FLAG_WRITEBACK_DST";
    pub const CLEAR_COLOR: u32 = 1 << 0 => "AEROGPU_CLEAR_COLOR";
    pub const CLEAR_DEPTH: u32 = 1 << 1 => "AEROGPU_CLEAR_DEPTH";
    pub const CLEAR_STENCIL: u32 = 1 << 2 => "AEROGPU_CLEAR_STENCIL";
    pub const PRESENT_FLAG_VSYNC: u32 = 1 << 0 => "AEROGPU_PRESENT_FLAG_VSYNC";
}

c_enum! {
    /// `enum aerogpu_cmd_opcode`.
    pub enum Opcode = "aerogpu_cmd_opcode" {
        Nop = "AEROGPU_CMD_NOP" 0x000,
        DebugMarker = "AEROGPU_CMD_DEBUG_MARKER" 0x001,
        CreateBuffer = "AEROGPU_CMD_CREATE_BUFFER" 0x100,
        CreateTexture2d = "AEROGPU_CMD_CREATE_TEXTURE2D" 0x101,
        DestroyResource = "AEROGPU_CMD_DESTROY_RESOURCE" 0x102,
        ResourceDirtyRange = "AEROGPU_CMD_RESOURCE_DIRTY_RANGE" 0x103,
        UploadResource = "AEROGPU_CMD_UPLOAD_RESOURCE" 0x104,
        CopyBuffer = "AEROGPU_CMD_COPY_BUFFER" 0x105,
        CopyTexture2d = "AEROGPU_CMD_COPY_TEXTURE2D" 0x106,
        CreateShader = "AEROGPU_CMD_CREATE_SHADER" 0x200,
        DestroyShader = "AEROGPU_CMD_DESTROY_SHADER" 0x201,
        BindShaders = "AEROGPU_CMD_BIND_SHADERS" 0x202,
        SetShaderConstantsF = "AEROGPU_CMD_SET_SHADER_CONSTANTS_F" 0x203,
        SetShaderConstantsI = "AEROGPU_CMD_SET_SHADER_CONSTANTS_I" 0x204,
        SetShaderConstantsB = "AEROGPU_CMD_SET_SHADER_CONSTANTS_B" 0x205,
        CreateInputLayout = "AEROGPU_CMD_CREATE_INPUT_LAYOUT" 0x206,
        DestroyInputLayout = "AEROGPU_CMD_DESTROY_INPUT_LAYOUT" 0x207,
        SetInputLayout = "AEROGPU_CMD_SET_INPUT_LAYOUT" 0x208,
        SetBlendState = "AEROGPU_CMD_SET_BLEND_STATE" 0x300,
        SetDepthStencilState = "AEROGPU_CMD_SET_DEPTH_STENCIL_STATE" 0x301,
        SetRasterizerState = "AEROGPU_CMD_SET_RASTERIZER_STATE" 0x302,
        SetRenderState = "AEROGPU_CMD_SET_RENDER_STATE" 0x303,
        SetSamplerState = "AEROGPU_CMD_SET_SAMPLER_STATE" 0x304,
        SetTextureStageState = "AEROGPU_CMD_SET_TEXTURE_STAGE_STATE" 0x305,
        SetRenderTargets = "AEROGPU_CMD_SET_RENDER_TARGETS" 0x400,
        SetViewport = "AEROGPU_CMD_SET_VIEWPORT" 0x401,
        SetScissor = "AEROGPU_CMD_SET_SCISSOR" 0x402,
        SetVertexBuffers = "AEROGPU_CMD_SET_VERTEX_BUFFERS" 0x500,
        SetIndexBuffer = "AEROGPU_CMD_SET_INDEX_BUFFER" 0x501,
        SetPrimitiveTopology = "AEROGPU_CMD_SET_PRIMITIVE_TOPOLOGY" 0x502,
        SetTexture = "AEROGPU_CMD_SET_TEXTURE" 0x510,
        Clear = "AEROGPU_CMD_CLEAR" 0x600,
        Draw = "AEROGPU_CMD_DRAW" 0x601,
        DrawIndexed = "AEROGPU_CMD_DRAW_INDEXED" 0x602,
        ClearRects = "AEROGPU_CMD_CLEAR_RECTS" 0x603,
        Present = "AEROGPU_CMD_PRESENT" 0x700,
        PresentEx = "AEROGPU_CMD_PRESENT_EX" 0x701,
        ExportSharedSurface = "AEROGPU_CMD_EXPORT_SHARED_SURFACE" 0x710,
        ImportSharedSurface = "AEROGPU_CMD_IMPORT_SHARED_SURFACE" 0x711,
        ReleaseSharedSurface = "AEROGPU_CMD_RELEASE_SHARED_SURFACE" 0x712,
        Flush = "AEROGPU_CMD_FLUSH" 0x720,
    }
}

c_enum! {
    pub enum ShaderStage = "aerogpu_shader_stage" {
        Vertex = "AEROGPU_SHADER_STAGE_VERTEX" 0,
        Pixel = "AEROGPU_SHADER_STAGE_PIXEL" 1,
    }
}

c_enum! {
    pub enum BlendFactor = "aerogpu_blend_factor" {
        Zero = "AEROGPU_BLEND_ZERO" 0,
        One = "AEROGPU_BLEND_ONE" 1,
        SrcAlpha = "AEROGPU_BLEND_SRC_ALPHA" 2,
        InvSrcAlpha = "AEROGPU_BLEND_INV_SRC_ALPHA" 3,
        DestAlpha = "AEROGPU_BLEND_DEST_ALPHA" 4,
        InvDestAlpha = "AEROGPU_BLEND_INV_DEST_ALPHA" 5,
        Constant = "AEROGPU_BLEND_CONSTANT" 6,
        InvConstant = "AEROGPU_BLEND_INV_CONSTANT" 7,
        SrcColor = "AEROGPU_BLEND_SRC_COLOR" 8,
        InvSrcColor = "AEROGPU_BLEND_INV_SRC_COLOR" 9,
        DestColor = "AEROGPU_BLEND_DEST_COLOR" 10,
        InvDestColor = "AEROGPU_BLEND_INV_DEST_COLOR" 11,
    }
}

c_enum! {
    pub enum BlendOp = "aerogpu_blend_op" {
        Add = "AEROGPU_BLEND_OP_ADD" 0,
        Subtract = "AEROGPU_BLEND_OP_SUBTRACT" 1,
        RevSubtract = "AEROGPU_BLEND_OP_REV_SUBTRACT" 2,
        Min = "AEROGPU_BLEND_OP_MIN" 3,
        Max = "AEROGPU_BLEND_OP_MAX" 4,
    }
}

c_enum! {
    pub enum CompareFunc = "aerogpu_compare_func" {
        Never = "AEROGPU_COMPARE_NEVER" 0,
        Less = "AEROGPU_COMPARE_LESS" 1,
        Equal = "AEROGPU_COMPARE_EQUAL" 2,
        LessEqual = "AEROGPU_COMPARE_LESS_EQUAL" 3,
        Greater = "AEROGPU_COMPARE_GREATER" 4,
        NotEqual = "AEROGPU_COMPARE_NOT_EQUAL" 5,
        GreaterEqual = "AEROGPU_COMPARE_GREATER_EQUAL" 6,
        Always = "AEROGPU_COMPARE_ALWAYS" 7,
    }
}

c_enum! {
    pub enum FillMode = "aerogpu_fill_mode" {
        Solid = "AEROGPU_FILL_SOLID" 0,
        Wireframe = "AEROGPU_FILL_WIREFRAME" 1,
    }
}

c_enum! {
    pub enum CullMode = "aerogpu_cull_mode" {
        None = "AEROGPU_CULL_NONE" 0,
        Front = "AEROGPU_CULL_FRONT" 1,
        Back = "AEROGPU_CULL_BACK" 2,
    }
}

c_enum! {
    pub enum IndexFormat = "aerogpu_index_format" {
        Uint16 = "AEROGPU_INDEX_FORMAT_UINT16" 0,
        Uint32 = "AEROGPU_INDEX_FORMAT_UINT32" 1,
    }
}

c_enum! {
    /// Values match D3DPRIMITIVETYPE.
    pub enum PrimitiveTopology = "aerogpu_primitive_topology" {
        PointList = "AEROGPU_TOPOLOGY_POINTLIST" 1,
        LineList = "AEROGPU_TOPOLOGY_LINELIST" 2,
        LineStrip = "AEROGPU_TOPOLOGY_LINESTRIP" 3,
        TriangleList = "AEROGPU_TOPOLOGY_TRIANGLELIST" 4,
        TriangleStrip = "AEROGPU_TOPOLOGY_TRIANGLESTRIP" 5,
        TriangleFan = "AEROGPU_TOPOLOGY_TRIANGLEFAN" 6,
    }
}

wire_struct! {
    pub struct CmdStreamHeader = "aerogpu_cmd_stream_header", size 16 {
        magic: u32 = 0,
        abi_version: u32 = 4,
        size_bytes: u32 = 8,
        flags: u32 = 12,
    }
}

wire_struct! {
    /// Every packet starts with this; `size_bytes` covers the whole packet.
    pub struct CmdHdr = "aerogpu_cmd_hdr", size 8 {
        opcode: u32 = 0,
        size_bytes: u32 = 4,
    }
}

wire_struct! {
    pub struct CreateBuffer = "aerogpu_cmd_create_buffer", size 40 {
        hdr: CmdHdr = 0,
        buffer_handle: u32 = 8,
        usage_flags: u32 = 12,
        size_bytes: u64 = 16,
        backing_alloc_id: u32 = 24,
        backing_offset_bytes: u32 = 28,
        reserved0: u64 = 32,
    }
}

wire_struct! {
    pub struct CreateTexture2d = "aerogpu_cmd_create_texture2d", size 64 {
        hdr: CmdHdr = 0,
        texture_handle: u32 = 8,
        usage_flags: u32 = 12,
        format: u32 = 16,
        width: u32 = 20,
        height: u32 = 24,
        mip_levels: u32 = 28,
        array_layers: u32 = 32,
        row_pitch_bytes: u32 = 36,
        backing_alloc_id: u32 = 40,
        backing_offset_bytes: u32 = 44,
        flags: u32 = 48,
        /// VOLUME textures: slices (ABI 1.6+); 0 or 1 otherwise.
        depth: u32 = 52,
        reserved1: u64 = 56,
    }
}

wire_struct! {
    pub struct DestroyResource = "aerogpu_cmd_destroy_resource", size 16 {
        hdr: CmdHdr = 0,
        resource_handle: u32 = 8,
        reserved0: u32 = 12,
    }
}

wire_struct! {
    pub struct ResourceDirtyRange = "aerogpu_cmd_resource_dirty_range", size 32 {
        hdr: CmdHdr = 0,
        resource_handle: u32 = 8,
        reserved0: u32 = 12,
        offset_bytes: u64 = 16,
        size_bytes: u64 = 24,
    }
}

wire_struct! {
    /// Followed by `size_bytes` of data.
    pub struct UploadResource = "aerogpu_cmd_upload_resource", size 32 {
        hdr: CmdHdr = 0,
        resource_handle: u32 = 8,
        reserved0: u32 = 12,
        offset_bytes: u64 = 16,
        size_bytes: u64 = 24,
    }
}

wire_struct! {
    pub struct CopyBuffer = "aerogpu_cmd_copy_buffer", size 48 {
        hdr: CmdHdr = 0,
        dst_buffer: u32 = 8,
        src_buffer: u32 = 12,
        dst_offset_bytes: u64 = 16,
        src_offset_bytes: u64 = 24,
        size_bytes: u64 = 32,
        flags: u32 = 40,
        reserved0: u32 = 44,
    }
}

wire_struct! {
    pub struct CopyTexture2d = "aerogpu_cmd_copy_texture2d", size 64 {
        hdr: CmdHdr = 0,
        dst_texture: u32 = 8,
        src_texture: u32 = 12,
        dst_mip_level: u32 = 16,
        dst_array_layer: u32 = 20,
        src_mip_level: u32 = 24,
        src_array_layer: u32 = 28,
        dst_x: u32 = 32,
        dst_y: u32 = 36,
        src_x: u32 = 40,
        src_y: u32 = 44,
        width: u32 = 48,
        height: u32 = 52,
        flags: u32 = 56,
        reserved0: u32 = 60,
    }
}

wire_struct! {
    /// Followed by `bytecode_size_bytes` of D3D9 shader tokens.
    pub struct CreateShader = "aerogpu_cmd_create_shader", size 24 {
        hdr: CmdHdr = 0,
        shader_handle: u32 = 8,
        stage: u32 = 12,
        bytecode_size_bytes: u32 = 16,
        reserved0: u32 = 20,
    }
}

wire_struct! {
    pub struct DestroyShader = "aerogpu_cmd_destroy_shader", size 16 {
        hdr: CmdHdr = 0,
        shader_handle: u32 = 8,
        reserved0: u32 = 12,
    }
}

wire_struct! {
    pub struct BindShaders = "aerogpu_cmd_bind_shaders", size 24 {
        hdr: CmdHdr = 0,
        vs: u32 = 8,
        ps: u32 = 12,
        reserved0: u32 = 16,
        reserved1: u32 = 20,
    }
}

wire_struct! {
    /// SET_SHADER_CONSTANTS_F/_I (16 bytes per register) and _B (4 bytes per register).
    pub struct SetShaderConstants = "aerogpu_cmd_set_shader_constants", size 24 {
        hdr: CmdHdr = 0,
        stage: u32 = 8,
        start_register: u32 = 12,
        count: u32 = 16,
        reserved0: u32 = 20,
    }
}

wire_struct! {
    /// Followed by `blob_size_bytes` of D3DVERTEXELEMENT9 records.
    pub struct CreateInputLayout = "aerogpu_cmd_create_input_layout", size 20 {
        hdr: CmdHdr = 0,
        input_layout_handle: u32 = 8,
        blob_size_bytes: u32 = 12,
        reserved0: u32 = 16,
    }
}

wire_struct! {
    pub struct DestroyInputLayout = "aerogpu_cmd_destroy_input_layout", size 16 {
        hdr: CmdHdr = 0,
        input_layout_handle: u32 = 8,
        reserved0: u32 = 12,
    }
}

wire_struct! {
    pub struct SetInputLayout = "aerogpu_cmd_set_input_layout", size 16 {
        hdr: CmdHdr = 0,
        input_layout_handle: u32 = 8,
        reserved0: u32 = 12,
    }
}

wire_struct! {
    pub struct SetBlendState = "aerogpu_cmd_set_blend_state", size 56 {
        hdr: CmdHdr = 0,
        enable: u32 = 8,
        src_factor: u32 = 12,
        dst_factor: u32 = 16,
        blend_op: u32 = 20,
        src_factor_alpha: u32 = 24,
        dst_factor_alpha: u32 = 28,
        blend_op_alpha: u32 = 32,
        color_write_mask: u32 = 36,
        blend_constant_rgba_f32: [u32; 4] = 40,
    }
}

wire_struct! {
    pub struct SetDepthStencilState = "aerogpu_cmd_set_depth_stencil_state", size 40 {
        hdr: CmdHdr = 0,
        depth_enable: u32 = 8,
        depth_write_enable: u32 = 12,
        depth_func: u32 = 16,
        stencil_enable: u32 = 20,
        stencil_read_mask: u32 = 24,
        stencil_write_mask: u32 = 28,
        reserved0: u32 = 32,
        reserved1: u32 = 36,
    }
}

wire_struct! {
    pub struct SetRasterizerState = "aerogpu_cmd_set_rasterizer_state", size 32 {
        hdr: CmdHdr = 0,
        fill_mode: u32 = 8,
        cull_mode: u32 = 12,
        front_ccw: u32 = 16,
        scissor_enable: u32 = 20,
        depth_bias: i32 = 24,
        flags: u32 = 28,
    }
}

wire_struct! {
    pub struct SetRenderState = "aerogpu_cmd_set_render_state", size 16 {
        hdr: CmdHdr = 0,
        state: u32 = 8,
        value: u32 = 12,
    }
}

wire_struct! {
    pub struct SetSamplerState = "aerogpu_cmd_set_sampler_state", size 24 {
        hdr: CmdHdr = 0,
        shader_stage: u32 = 8,
        slot: u32 = 12,
        state: u32 = 16,
        value: u32 = 20,
    }
}

wire_struct! {
    /// Raw D3DTEXTURESTAGESTATETYPE / value; the device uses the bump environment.
    pub struct SetTextureStageState = "aerogpu_cmd_set_texture_stage_state", size 24 {
        hdr: CmdHdr = 0,
        stage: u32 = 8,
        state: u32 = 12,
        value: u32 = 16,
        reserved0: u32 = 20,
    }
}

wire_struct! {
    pub struct SetRenderTargets = "aerogpu_cmd_set_render_targets", size 48 {
        hdr: CmdHdr = 0,
        color_count: u32 = 8,
        depth_stencil: u32 = 12,
        colors: [u32; 8] = 16,
    }
}

wire_struct! {
    pub struct SetViewport = "aerogpu_cmd_set_viewport", size 32 {
        hdr: CmdHdr = 0,
        x_f32: u32 = 8,
        y_f32: u32 = 12,
        width_f32: u32 = 16,
        height_f32: u32 = 20,
        min_depth_f32: u32 = 24,
        max_depth_f32: u32 = 28,
    }
}

wire_struct! {
    pub struct SetScissor = "aerogpu_cmd_set_scissor", size 24 {
        hdr: CmdHdr = 0,
        x: i32 = 8,
        y: i32 = 12,
        width: i32 = 16,
        height: i32 = 20,
    }
}

wire_struct! {
    pub struct VertexBufferBinding = "aerogpu_vertex_buffer_binding", size 16 {
        buffer: u32 = 0,
        stride_bytes: u32 = 4,
        offset_bytes: u32 = 8,
        reserved0: u32 = 12,
    }
}

wire_struct! {
    /// Followed by `buffer_count` [`VertexBufferBinding`]s.
    pub struct SetVertexBuffers = "aerogpu_cmd_set_vertex_buffers", size 16 {
        hdr: CmdHdr = 0,
        start_slot: u32 = 8,
        buffer_count: u32 = 12,
    }
}

wire_struct! {
    pub struct SetIndexBuffer = "aerogpu_cmd_set_index_buffer", size 24 {
        hdr: CmdHdr = 0,
        buffer: u32 = 8,
        format: u32 = 12,
        offset_bytes: u32 = 16,
        reserved0: u32 = 20,
    }
}

wire_struct! {
    pub struct SetPrimitiveTopology = "aerogpu_cmd_set_primitive_topology", size 16 {
        hdr: CmdHdr = 0,
        topology: u32 = 8,
        reserved0: u32 = 12,
    }
}

wire_struct! {
    pub struct SetTexture = "aerogpu_cmd_set_texture", size 24 {
        hdr: CmdHdr = 0,
        shader_stage: u32 = 8,
        slot: u32 = 12,
        texture: u32 = 16,
        reserved0: u32 = 20,
    }
}

wire_struct! {
    pub struct Clear = "aerogpu_cmd_clear", size 36 {
        hdr: CmdHdr = 0,
        flags: u32 = 8,
        color_rgba_f32: [u32; 4] = 12,
        depth_f32: u32 = 28,
        stencil: u32 = 32,
    }
}

wire_struct! {
    /// One rectangle of CLEAR_RECTS, in pixels.
    pub struct ClearRect = "aerogpu_clear_rect", size 16 {
        x: u32 = 0,
        y: u32 = 4,
        width: u32 = 8,
        height: u32 = 12,
    }
}

wire_struct! {
    /// CLEAR inside rectangles (ABI 1.4+); followed by `rect_count` [`ClearRect`]s.
    pub struct ClearRects = "aerogpu_cmd_clear_rects", size 44 {
        hdr: CmdHdr = 0,
        flags: u32 = 8,
        color_rgba_f32: [u32; 4] = 12,
        depth_f32: u32 = 28,
        stencil: u32 = 32,
        rect_count: u32 = 36,
        reserved0: u32 = 40,
    }
}

wire_struct! {
    pub struct Draw = "aerogpu_cmd_draw", size 24 {
        hdr: CmdHdr = 0,
        vertex_count: u32 = 8,
        instance_count: u32 = 12,
        first_vertex: u32 = 16,
        first_instance: u32 = 20,
    }
}

wire_struct! {
    pub struct DrawIndexed = "aerogpu_cmd_draw_indexed", size 32 {
        hdr: CmdHdr = 0,
        index_count: u32 = 8,
        instance_count: u32 = 12,
        first_index: u32 = 16,
        base_vertex: i32 = 20,
        first_instance: u32 = 24,
        reserved0: u32 = 28,
    }
}

wire_struct! {
    pub struct Present = "aerogpu_cmd_present", size 16 {
        hdr: CmdHdr = 0,
        scanout_id: u32 = 8,
        flags: u32 = 12,
    }
}

wire_struct! {
    pub struct PresentEx = "aerogpu_cmd_present_ex", size 24 {
        hdr: CmdHdr = 0,
        scanout_id: u32 = 8,
        flags: u32 = 12,
        d3d9_present_flags: u32 = 16,
        reserved0: u32 = 20,
    }
}

wire_struct! {
    pub struct ExportSharedSurface = "aerogpu_cmd_export_shared_surface", size 24 {
        hdr: CmdHdr = 0,
        resource_handle: u32 = 8,
        reserved0: u32 = 12,
        share_token: u64 = 16,
    }
}

wire_struct! {
    pub struct ImportSharedSurface = "aerogpu_cmd_import_shared_surface", size 24 {
        hdr: CmdHdr = 0,
        out_resource_handle: u32 = 8,
        reserved0: u32 = 12,
        share_token: u64 = 16,
    }
}

wire_struct! {
    pub struct ReleaseSharedSurface = "aerogpu_cmd_release_shared_surface", size 16 {
        hdr: CmdHdr = 0,
        share_token: u64 = 8,
    }
}

wire_struct! {
    pub struct Flush = "aerogpu_cmd_flush", size 16 {
        hdr: CmdHdr = 0,
        reserved0: u32 = 8,
        reserved1: u32 = 12,
    }
}
