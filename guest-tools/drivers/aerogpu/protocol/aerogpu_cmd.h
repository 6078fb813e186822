/* AeroGPU command stream (what the UMD writes, what the device validates and executes).
 *
 * A stream is an aerogpu_cmd_stream_header followed by packets. Every packet starts with
 * aerogpu_cmd_hdr { opcode, size_bytes }: size_bytes counts the header, the fixed fields
 * and any trailing payload, is >= 8 and a multiple of 4. The device skips packets with an
 * unknown opcode by size_bytes, and reads only the fields it knows from a longer packet
 * (later minor versions append fields). A packet shorter than its opcode's fixed part, or
 * one running past the stream end, is a decode error.
 *
 * Handles (aerogpu_handle_t) are guest-chosen, nonzero, and share one global namespace
 * per device: a resource, a shader and an input layout can never have the same handle.
 * The guest drivers split that namespace: [1, 0x1000) is the KMD's (the textures it
 * creates for runtime presents and destroys in the same stream, kmd/portable/
 * agpu_present.h); the UMD takes 0x1000-handle chunks from 0x1000 up.
 * backing_alloc_id refers to the stable alloc_id of the per-submit allocation table
 * (aerogpu_ring.h), never to a table position; 0 means "host-allocated".
 */
#ifndef AEROGPU_CMD_H
#define AEROGPU_CMD_H

#include "aerogpu_abi_common.h"

#define AEROGPU_CMD_STREAM_MAGIC 0x444D4341u /* "ACMD" */

struct aerogpu_cmd_stream_header {
    uint32_t magic;       /* AEROGPU_CMD_STREAM_MAGIC */
    uint32_t abi_version; /* AEROGPU_ABI_VERSION_U32 */
    uint32_t size_bytes;  /* header + packets; <= the descriptor's cmd_size_bytes */
    uint32_t flags;       /* reserved, 0 */
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_stream_header, 16);

struct aerogpu_cmd_hdr {
    uint32_t opcode;     /* enum aerogpu_cmd_opcode */
    uint32_t size_bytes; /* whole packet, multiple of 4 */
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_hdr, 8);

enum aerogpu_cmd_opcode {
    AEROGPU_CMD_NOP = 0x000,
    AEROGPU_CMD_DEBUG_MARKER = 0x001, /* trailing UTF-8 text (padded with NULs) */

    AEROGPU_CMD_CREATE_BUFFER = 0x100,
    AEROGPU_CMD_CREATE_TEXTURE2D = 0x101,
    AEROGPU_CMD_DESTROY_RESOURCE = 0x102,
    AEROGPU_CMD_RESOURCE_DIRTY_RANGE = 0x103,
    AEROGPU_CMD_UPLOAD_RESOURCE = 0x104,
    AEROGPU_CMD_COPY_BUFFER = 0x105,
    AEROGPU_CMD_COPY_TEXTURE2D = 0x106,

    AEROGPU_CMD_CREATE_SHADER = 0x200,
    AEROGPU_CMD_DESTROY_SHADER = 0x201,
    AEROGPU_CMD_BIND_SHADERS = 0x202,
    AEROGPU_CMD_SET_SHADER_CONSTANTS_F = 0x203,
    AEROGPU_CMD_SET_SHADER_CONSTANTS_I = 0x204,
    AEROGPU_CMD_SET_SHADER_CONSTANTS_B = 0x205,
    AEROGPU_CMD_CREATE_INPUT_LAYOUT = 0x206,
    AEROGPU_CMD_DESTROY_INPUT_LAYOUT = 0x207,
    AEROGPU_CMD_SET_INPUT_LAYOUT = 0x208,

    AEROGPU_CMD_SET_BLEND_STATE = 0x300,
    AEROGPU_CMD_SET_DEPTH_STENCIL_STATE = 0x301,
    AEROGPU_CMD_SET_RASTERIZER_STATE = 0x302,
    AEROGPU_CMD_SET_RENDER_STATE = 0x303,
    AEROGPU_CMD_SET_SAMPLER_STATE = 0x304,
    AEROGPU_CMD_SET_TEXTURE_STAGE_STATE = 0x305, /* ABI 1.6+ */

    AEROGPU_CMD_SET_RENDER_TARGETS = 0x400,
    AEROGPU_CMD_SET_VIEWPORT = 0x401,
    AEROGPU_CMD_SET_SCISSOR = 0x402,

    AEROGPU_CMD_SET_VERTEX_BUFFERS = 0x500,
    AEROGPU_CMD_SET_INDEX_BUFFER = 0x501,
    AEROGPU_CMD_SET_PRIMITIVE_TOPOLOGY = 0x502,
    AEROGPU_CMD_SET_TEXTURE = 0x510,

    AEROGPU_CMD_CLEAR = 0x600,
    AEROGPU_CMD_DRAW = 0x601,
    AEROGPU_CMD_DRAW_INDEXED = 0x602,
    AEROGPU_CMD_CLEAR_RECTS = 0x603, /* ABI 1.4+ */

    AEROGPU_CMD_PRESENT = 0x700,
    AEROGPU_CMD_PRESENT_EX = 0x701,

    AEROGPU_CMD_EXPORT_SHARED_SURFACE = 0x710,
    AEROGPU_CMD_IMPORT_SHARED_SURFACE = 0x711,
    AEROGPU_CMD_RELEASE_SHARED_SURFACE = 0x712,

    AEROGPU_CMD_FLUSH = 0x720
};

/* ---- Limits the device enforces (validation errors beyond them) -------------------- */
#define AEROGPU_MAX_RENDER_TARGETS 8u
#define AEROGPU_MAX_VERTEX_BUFFERS 16u
#define AEROGPU_MAX_TEXTURE_SLOTS 16u
#define AEROGPU_MAX_SHADER_CONSTANTS_F 256u /* vec4 registers */
#define AEROGPU_MAX_SHADER_CONSTANTS_I 16u  /* int4 registers */
#define AEROGPU_MAX_SHADER_CONSTANTS_B 16u  /* bool registers (one uint32 each) */
#define AEROGPU_MAX_TEXTURE_DIM 16384u
#define AEROGPU_MAX_MIP_LEVELS 15u
#define AEROGPU_MAX_ARRAY_LAYERS 2048u
#define AEROGPU_MAX_VOLUME_DEPTH 2048u /* depth of a VOLUME texture */
#define AEROGPU_MAX_TEXTURE_STAGES 8u  /* D3D9 texture stages of SET_TEXTURE_STAGE_STATE */
#define AEROGPU_MAX_SHADER_BYTES 0x100000u
#define AEROGPU_MAX_INPUT_LAYOUT_ELEMENTS 65u /* D3D9 MAXD3DDECLLENGTH + D3DDECL_END */
#define AEROGPU_MAX_CLEAR_RECTS 256u           /* rectangles of one CLEAR_RECTS packet */

/* ---- Resources ---------------------------------------------------------------------- */
/* usage_flags (immutable: part of the rebind check) */
#define AEROGPU_RESOURCE_USAGE_VERTEX_BUFFER (1u << 0)
#define AEROGPU_RESOURCE_USAGE_INDEX_BUFFER (1u << 1)
#define AEROGPU_RESOURCE_USAGE_CONSTANT_BUFFER (1u << 2)
#define AEROGPU_RESOURCE_USAGE_TEXTURE (1u << 3)
#define AEROGPU_RESOURCE_USAGE_RENDER_TARGET (1u << 4)
#define AEROGPU_RESOURCE_USAGE_DEPTH_STENCIL (1u << 5)
#define AEROGPU_RESOURCE_USAGE_SCANOUT (1u << 6)
#define AEROGPU_RESOURCE_USAGE_STAGING (1u << 7)

/* CREATE_BUFFER on a handle that already names a buffer with the same size_bytes and
 * usage_flags rebinds its backing; any other existing handle is a validation error. */
struct aerogpu_cmd_create_buffer {
    struct aerogpu_cmd_hdr hdr;
    aerogpu_handle_t buffer_handle;
    uint32_t usage_flags;
    uint64_t size_bytes;
    uint32_t backing_alloc_id;     /* 0 = host allocated */
    uint32_t backing_offset_bytes; /* offset + size_bytes <= alloc size_bytes */
    uint64_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_create_buffer, 40);
AEROGPU_ASSERT_OFFSET(struct aerogpu_cmd_create_buffer, size_bytes, 16);
AEROGPU_ASSERT_OFFSET(struct aerogpu_cmd_create_buffer, backing_alloc_id, 24);

#define AEROGPU_TEXTURE_FLAG_CUBE (1u << 0)   /* array_layers is a multiple of 6 */
#define AEROGPU_TEXTURE_FLAG_VOLUME (1u << 1) /* ABI 1.6+: a 3D texture of `depth` slices */

/* Guest backing layout: for each array layer, mips 0..mip_levels-1 back to back. Mip 0
 * rows are row_pitch_bytes apart (0 = tightly packed), later mips are tightly packed;
 * block-compressed formats count rows of 4x4 blocks. The rebind check compares format,
 * width, height, depth, mip_levels, array_layers, row_pitch_bytes, usage_flags and flags.
 *
 * Subresources (what uploads, dirty ranges, copies and write-back address):
 * - 2D: layer L, mip M. A cube (FLAG_CUBE, width == height) is 6 * n layers, face F of
 *   cube n being layer 6n + F in D3DCUBEMAP_FACES order (+X, -X, +Y, -Y, +Z, -Z); each
 *   face is laid out like a 2D layer (its mips back to back).
 * - VOLUME (FLAG_VOLUME, array_layers == 1, not CUBE, depth >= 1; 0 reads as 1 for
 *   other textures, which must leave it 0 or 1): mips back to back, mip M being
 *   max(1, depth >> M) slices. A slice of mip 0 is its rows (row_pitch_bytes apart, or
 *   packed), a slice of a later mip its packed rows; slices of a mip follow each other
 *   with no gap. COPY_TEXTURE2D's *_array_layer selects the depth slice of the mip. */
struct aerogpu_cmd_create_texture2d {
    struct aerogpu_cmd_hdr hdr;
    aerogpu_handle_t texture_handle;
    uint32_t usage_flags;
    uint32_t format; /* enum aerogpu_format */
    uint32_t width;
    uint32_t height;
    uint32_t mip_levels;   /* >= 1 */
    uint32_t array_layers; /* >= 1; 6 * n for cubes */
    uint32_t row_pitch_bytes;
    uint32_t backing_alloc_id;
    uint32_t backing_offset_bytes;
    uint32_t flags; /* AEROGPU_TEXTURE_FLAG_* */
    uint32_t depth; /* ABI 1.6+: VOLUME slices; 0 or 1 otherwise */
    uint64_t reserved1;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_create_texture2d, 64);
AEROGPU_ASSERT_OFFSET(struct aerogpu_cmd_create_texture2d, depth, 52);
AEROGPU_ASSERT_OFFSET(struct aerogpu_cmd_create_texture2d, backing_alloc_id, 40);
AEROGPU_ASSERT_OFFSET(struct aerogpu_cmd_create_texture2d, reserved1, 56);

/* Destroys a handle of any resource; for shared surfaces it drops one reference and the
 * last reference frees the resource and forgets its share tokens. */
struct aerogpu_cmd_destroy_resource {
    struct aerogpu_cmd_hdr hdr;
    aerogpu_handle_t resource_handle;
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_destroy_resource, 16);

/* The guest CPU wrote [offset, offset+size) of a guest-backed resource's memory. */
struct aerogpu_cmd_resource_dirty_range {
    struct aerogpu_cmd_hdr hdr;
    aerogpu_handle_t resource_handle;
    uint32_t reserved0;
    uint64_t offset_bytes;
    uint64_t size_bytes;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_resource_dirty_range, 32);
AEROGPU_ASSERT_OFFSET(struct aerogpu_cmd_resource_dirty_range, offset_bytes, 16);

/* Followed by size_bytes of data (then NUL padding to a multiple of 4). */
struct aerogpu_cmd_upload_resource {
    struct aerogpu_cmd_hdr hdr;
    aerogpu_handle_t resource_handle;
    uint32_t reserved0;
    uint64_t offset_bytes;
    uint64_t size_bytes;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_upload_resource, 32);
AEROGPU_ASSERT_OFFSET(struct aerogpu_cmd_upload_resource, size_bytes, 24);

/* COPY_* flags: also write the destination's new contents back into its guest backing
 * (staging readback). Requires a guest-backed destination whose alloc_id is in this
 * submission's table and not READONLY. */
#define AEROGPU_COPY_FLAG_WRITEBACK_DST (1u << 0)

struct aerogpu_cmd_copy_buffer {
    struct aerogpu_cmd_hdr hdr;
    aerogpu_handle_t dst_buffer;
    aerogpu_handle_t src_buffer;
    uint64_t dst_offset_bytes;
    uint64_t src_offset_bytes;
    uint64_t size_bytes;
    uint32_t flags; /* AEROGPU_COPY_FLAG_* */
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_copy_buffer, 48);
AEROGPU_ASSERT_OFFSET(struct aerogpu_cmd_copy_buffer, size_bytes, 32);

struct aerogpu_cmd_copy_texture2d {
    struct aerogpu_cmd_hdr hdr;
    aerogpu_handle_t dst_texture;
    aerogpu_handle_t src_texture;
    uint32_t dst_mip_level;
    uint32_t dst_array_layer;
    uint32_t src_mip_level;
    uint32_t src_array_layer;
    uint32_t dst_x;
    uint32_t dst_y;
    uint32_t src_x;
    uint32_t src_y;
    uint32_t width;
    uint32_t height;
    uint32_t flags; /* AEROGPU_COPY_FLAG_* */
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_copy_texture2d, 64);

/* ---- Shaders and input layouts -------------------------------------------------------- */
enum aerogpu_shader_stage {
    AEROGPU_SHADER_STAGE_VERTEX = 0,
    AEROGPU_SHADER_STAGE_PIXEL = 1
};

/* Followed by bytecode_size_bytes of D3D9 SM2/SM3 tokens (version token first: 0xFFFE
 * vs_x_y / 0xFFFF ps_x_y in the high word). */
struct aerogpu_cmd_create_shader {
    struct aerogpu_cmd_hdr hdr;
    aerogpu_handle_t shader_handle;
    uint32_t stage; /* enum aerogpu_shader_stage */
    uint32_t bytecode_size_bytes;
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_create_shader, 24);

struct aerogpu_cmd_destroy_shader {
    struct aerogpu_cmd_hdr hdr;
    aerogpu_handle_t shader_handle;
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_destroy_shader, 16);

/* 0 unbinds a stage. */
struct aerogpu_cmd_bind_shaders {
    struct aerogpu_cmd_hdr hdr;
    aerogpu_handle_t vs;
    aerogpu_handle_t ps;
    uint32_t reserved0;
    uint32_t reserved1;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_bind_shaders, 24);

/* SET_SHADER_CONSTANTS_F / _I: followed by count * 16 bytes (float4 / int4).
 * SET_SHADER_CONSTANTS_B: followed by count * 4 bytes (one uint32 per bool register). */
struct aerogpu_cmd_set_shader_constants {
    struct aerogpu_cmd_hdr hdr;
    uint32_t stage; /* enum aerogpu_shader_stage */
    uint32_t start_register;
    uint32_t count;
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_set_shader_constants, 24);

/* Followed by blob_size_bytes of D3DVERTEXELEMENT9 records (8 bytes each), the last one
 * being D3DDECL_END. */
struct aerogpu_cmd_create_input_layout {
    struct aerogpu_cmd_hdr hdr;
    aerogpu_handle_t input_layout_handle;
    uint32_t blob_size_bytes;
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_create_input_layout, 20);

struct aerogpu_cmd_destroy_input_layout {
    struct aerogpu_cmd_hdr hdr;
    aerogpu_handle_t input_layout_handle;
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_destroy_input_layout, 16);

struct aerogpu_cmd_set_input_layout {
    struct aerogpu_cmd_hdr hdr;
    aerogpu_handle_t input_layout_handle; /* 0 unbinds */
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_set_input_layout, 16);

/* ---- Fixed-function state ------------------------------------------------------------- */
enum aerogpu_blend_factor {
    AEROGPU_BLEND_ZERO = 0,
    AEROGPU_BLEND_ONE = 1,
    AEROGPU_BLEND_SRC_ALPHA = 2,
    AEROGPU_BLEND_INV_SRC_ALPHA = 3,
    AEROGPU_BLEND_DEST_ALPHA = 4,
    AEROGPU_BLEND_INV_DEST_ALPHA = 5,
    AEROGPU_BLEND_CONSTANT = 6,
    AEROGPU_BLEND_INV_CONSTANT = 7,
    AEROGPU_BLEND_SRC_COLOR = 8,
    AEROGPU_BLEND_INV_SRC_COLOR = 9,
    AEROGPU_BLEND_DEST_COLOR = 10,
    AEROGPU_BLEND_INV_DEST_COLOR = 11
};

enum aerogpu_blend_op {
    AEROGPU_BLEND_OP_ADD = 0,
    AEROGPU_BLEND_OP_SUBTRACT = 1,
    AEROGPU_BLEND_OP_REV_SUBTRACT = 2,
    AEROGPU_BLEND_OP_MIN = 3,
    AEROGPU_BLEND_OP_MAX = 4
};

enum aerogpu_compare_func {
    AEROGPU_COMPARE_NEVER = 0,
    AEROGPU_COMPARE_LESS = 1,
    AEROGPU_COMPARE_EQUAL = 2,
    AEROGPU_COMPARE_LESS_EQUAL = 3,
    AEROGPU_COMPARE_GREATER = 4,
    AEROGPU_COMPARE_NOT_EQUAL = 5,
    AEROGPU_COMPARE_GREATER_EQUAL = 6,
    AEROGPU_COMPARE_ALWAYS = 7
};

enum aerogpu_fill_mode {
    AEROGPU_FILL_SOLID = 0,
    AEROGPU_FILL_WIREFRAME = 1
};

enum aerogpu_cull_mode {
    AEROGPU_CULL_NONE = 0,
    AEROGPU_CULL_FRONT = 1,
    AEROGPU_CULL_BACK = 2
};

struct aerogpu_cmd_set_blend_state {
    struct aerogpu_cmd_hdr hdr;
    uint32_t enable;
    uint32_t src_factor;       /* enum aerogpu_blend_factor */
    uint32_t dst_factor;
    uint32_t blend_op;         /* enum aerogpu_blend_op */
    uint32_t src_factor_alpha;
    uint32_t dst_factor_alpha;
    uint32_t blend_op_alpha;
    uint32_t color_write_mask; /* bits 0..3 = R, G, B, A */
    uint32_t blend_constant_rgba_f32[4];
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_set_blend_state, 56);

struct aerogpu_cmd_set_depth_stencil_state {
    struct aerogpu_cmd_hdr hdr;
    uint32_t depth_enable;
    uint32_t depth_write_enable;
    uint32_t depth_func; /* enum aerogpu_compare_func */
    uint32_t stencil_enable;
    uint32_t stencil_read_mask;  /* low 8 bits */
    uint32_t stencil_write_mask; /* low 8 bits */
    uint32_t reserved0;
    uint32_t reserved1;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_set_depth_stencil_state, 40);

struct aerogpu_cmd_set_rasterizer_state {
    struct aerogpu_cmd_hdr hdr;
    uint32_t fill_mode; /* enum aerogpu_fill_mode */
    uint32_t cull_mode; /* enum aerogpu_cull_mode */
    uint32_t front_ccw;
    uint32_t scissor_enable;
    int32_t depth_bias;
    uint32_t flags; /* reserved, 0 */
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_set_rasterizer_state, 32);

/* Raw D3D9 D3DRENDERSTATETYPE / value, forwarded for the executor to interpret. */
struct aerogpu_cmd_set_render_state {
    struct aerogpu_cmd_hdr hdr;
    uint32_t state;
    uint32_t value;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_set_render_state, 16);

/* Raw D3D9 D3DSAMPLERSTATETYPE / value for one sampler slot. */
struct aerogpu_cmd_set_sampler_state {
    struct aerogpu_cmd_hdr hdr;
    uint32_t shader_stage; /* enum aerogpu_shader_stage */
    uint32_t slot;         /* < AEROGPU_MAX_TEXTURE_SLOTS */
    uint32_t state;
    uint32_t value;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_set_sampler_state, 24);

/* Raw D3D9 D3DTEXTURESTAGESTATETYPE / value for one texture stage (ABI 1.6+). The device
 * uses the bump environment of ps_1_x texbem/texbeml/bem: D3DTSS_BUMPENVMAT00/01/10/11
 * (7-10) and BUMPENVLSCALE/LOFFSET (22, 23), as f32 bits, all 0 until set. Other states
 * (< 33) are accepted and ignored: fixed function is the driver's generated shaders. */
struct aerogpu_cmd_set_texture_stage_state {
    struct aerogpu_cmd_hdr hdr;
    uint32_t stage; /* < AEROGPU_MAX_TEXTURE_STAGES */
    uint32_t state; /* < 33 (D3DTSS_CONSTANT + 1) */
    uint32_t value;
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_set_texture_stage_state, 24);
/* The D3DTSS_* states the device reads (BUMPENVMAT01, 10, 11 follow 00), and the bound
 * of `state`. */
#define AEROGPU_TSS_BUMPENVMAT00 7u
#define AEROGPU_TSS_BUMPENVLSCALE 22u
#define AEROGPU_TSS_BUMPENVLOFFSET 23u
#define AEROGPU_TEXTURE_STAGE_STATES 33u

/* ---- Output merger / viewport ---------------------------------------------------------- */
struct aerogpu_cmd_set_render_targets {
    struct aerogpu_cmd_hdr hdr;
    uint32_t color_count; /* <= AEROGPU_MAX_RENDER_TARGETS */
    aerogpu_handle_t depth_stencil; /* 0 = none */
    aerogpu_handle_t colors[8];     /* entries >= color_count must be 0 */
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_set_render_targets, 48);

/* Floats are IEEE-754 binary32 bit patterns. */
struct aerogpu_cmd_set_viewport {
    struct aerogpu_cmd_hdr hdr;
    uint32_t x_f32;
    uint32_t y_f32;
    uint32_t width_f32;
    uint32_t height_f32;
    uint32_t min_depth_f32;
    uint32_t max_depth_f32;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_set_viewport, 32);

struct aerogpu_cmd_set_scissor {
    struct aerogpu_cmd_hdr hdr;
    int32_t x;
    int32_t y;
    int32_t width;
    int32_t height;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_set_scissor, 24);

/* ---- Input assembler / textures --------------------------------------------------------- */
struct aerogpu_vertex_buffer_binding {
    aerogpu_handle_t buffer; /* 0 unbinds the slot */
    uint32_t stride_bytes;
    uint32_t offset_bytes;
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_vertex_buffer_binding, 16);

/* Followed by buffer_count aerogpu_vertex_buffer_binding records. */
struct aerogpu_cmd_set_vertex_buffers {
    struct aerogpu_cmd_hdr hdr;
    uint32_t start_slot;
    uint32_t buffer_count; /* start_slot + buffer_count <= AEROGPU_MAX_VERTEX_BUFFERS */
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_set_vertex_buffers, 16);

enum aerogpu_index_format {
    AEROGPU_INDEX_FORMAT_UINT16 = 0,
    AEROGPU_INDEX_FORMAT_UINT32 = 1
};

struct aerogpu_cmd_set_index_buffer {
    struct aerogpu_cmd_hdr hdr;
    aerogpu_handle_t buffer; /* 0 unbinds */
    uint32_t format;         /* enum aerogpu_index_format */
    uint32_t offset_bytes;
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_set_index_buffer, 24);

/* Values match D3DPRIMITIVETYPE. */
enum aerogpu_primitive_topology {
    AEROGPU_TOPOLOGY_POINTLIST = 1,
    AEROGPU_TOPOLOGY_LINELIST = 2,
    AEROGPU_TOPOLOGY_LINESTRIP = 3,
    AEROGPU_TOPOLOGY_TRIANGLELIST = 4,
    AEROGPU_TOPOLOGY_TRIANGLESTRIP = 5,
    AEROGPU_TOPOLOGY_TRIANGLEFAN = 6
};

struct aerogpu_cmd_set_primitive_topology {
    struct aerogpu_cmd_hdr hdr;
    uint32_t topology; /* enum aerogpu_primitive_topology */
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_set_primitive_topology, 16);

struct aerogpu_cmd_set_texture {
    struct aerogpu_cmd_hdr hdr;
    uint32_t shader_stage;    /* enum aerogpu_shader_stage */
    uint32_t slot;            /* < AEROGPU_MAX_TEXTURE_SLOTS */
    aerogpu_handle_t texture; /* 0 unbinds */
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_set_texture, 24);

/* ---- Drawing ------------------------------------------------------------------------- */
#define AEROGPU_CLEAR_COLOR (1u << 0)
#define AEROGPU_CLEAR_DEPTH (1u << 1)
#define AEROGPU_CLEAR_STENCIL (1u << 2)

struct aerogpu_cmd_clear {
    struct aerogpu_cmd_hdr hdr;
    uint32_t flags; /* AEROGPU_CLEAR_* */
    uint32_t color_rgba_f32[4];
    uint32_t depth_f32;
    uint32_t stencil;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_clear, 36);

/* CLEAR_RECTS (ABI 1.4+): like CLEAR, but only inside the rectangles (pixels of the bound
 * targets; each clipped to every target's extent). Like CLEAR it ignores the viewport,
 * scissor and write masks: the guest intersects (D3D9 Clear does so with the viewport and
 * scissor). Followed by rect_count aerogpu_clear_rect; rect_count <= AEROGPU_MAX_CLEAR_RECTS
 * (0 is a no-op); flags holds only AEROGPU_CLEAR_* bits. */
struct aerogpu_clear_rect {
    uint32_t x;
    uint32_t y;
    uint32_t width;
    uint32_t height;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_clear_rect, 16);

struct aerogpu_cmd_clear_rects {
    struct aerogpu_cmd_hdr hdr;
    uint32_t flags; /* AEROGPU_CLEAR_* */
    uint32_t color_rgba_f32[4];
    uint32_t depth_f32;
    uint32_t stencil;
    uint32_t rect_count;
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_clear_rects, 44);

struct aerogpu_cmd_draw {
    struct aerogpu_cmd_hdr hdr;
    uint32_t vertex_count;
    uint32_t instance_count;
    uint32_t first_vertex;
    uint32_t first_instance;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_draw, 24);

struct aerogpu_cmd_draw_indexed {
    struct aerogpu_cmd_hdr hdr;
    uint32_t index_count;
    uint32_t instance_count;
    uint32_t first_index;
    int32_t base_vertex;
    uint32_t first_instance;
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_draw_indexed, 32);

/* ---- Presentation ------------------------------------------------------------------- */
/* PRESENT / PRESENT_EX show the submitting context's render target 0 on the scanout:
 * - a guest-backed target: what the device changed in it since its backing last matched
 *   (clears, draws, copies without WRITEBACK_DST, uploads) is written into the backing
 *   before the fence completes (through the GART; READONLY does not stop it, the data are
 *   results of earlier commands that wrote the target), bytes the device did not change
 *   are left as the guest wrote them; scanout 0 shows guest memory at SCANOUT0_FB_GPA;
 * - a host-allocated target: the device shows its pixels on scanout 0 instead of guest
 *   memory while scanout 0 is enabled, until the guest changes a SCANOUT0 register or
 *   presents a guest-backed target.
 * With VSYNC the submission's fence completes at the next vblank of the scanout (at once
 * when the scanout is disabled). */
#define AEROGPU_PRESENT_FLAG_VSYNC (1u << 0)

struct aerogpu_cmd_present {
    struct aerogpu_cmd_hdr hdr;
    uint32_t scanout_id; /* 0 */
    uint32_t flags;      /* AEROGPU_PRESENT_FLAG_* */
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_present, 16);

struct aerogpu_cmd_present_ex {
    struct aerogpu_cmd_hdr hdr;
    uint32_t scanout_id;
    uint32_t flags;
    uint32_t d3d9_present_flags; /* raw IDirect3DDevice9Ex::PresentEx dwFlags */
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_present_ex, 24);

/* ---- Shared surfaces (D3D9Ex / DWM) --------------------------------------------------
 * EXPORT maps a nonzero share_token to the resource behind resource_handle (exporting the
 * same pair again is a no-op; a token already mapped to another resource is rejected).
 * IMPORT creates out_resource_handle as an alias of the exported resource; every handle
 * (original or alias) holds one reference, DESTROY_RESOURCE drops it, the last one frees
 * the resource and its tokens. RELEASE drops the token mapping only (unknown tokens are
 * ignored: the KMD sends it best-effort). */
struct aerogpu_cmd_export_shared_surface {
    struct aerogpu_cmd_hdr hdr;
    aerogpu_handle_t resource_handle;
    uint32_t reserved0;
    uint64_t share_token;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_export_shared_surface, 24);
AEROGPU_ASSERT_OFFSET(struct aerogpu_cmd_export_shared_surface, share_token, 16);

struct aerogpu_cmd_import_shared_surface {
    struct aerogpu_cmd_hdr hdr;
    aerogpu_handle_t out_resource_handle;
    uint32_t reserved0;
    uint64_t share_token;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_import_shared_surface, 24);
AEROGPU_ASSERT_OFFSET(struct aerogpu_cmd_import_shared_surface, share_token, 16);

struct aerogpu_cmd_release_shared_surface {
    struct aerogpu_cmd_hdr hdr;
    uint64_t share_token;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_release_shared_surface, 16);
AEROGPU_ASSERT_OFFSET(struct aerogpu_cmd_release_shared_surface, share_token, 8);

/* Ensures everything before it is scheduled; no payload. */
struct aerogpu_cmd_flush {
    struct aerogpu_cmd_hdr hdr;
    uint32_t reserved0;
    uint32_t reserved1;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_cmd_flush, 16);

#endif /* AEROGPU_CMD_H */
