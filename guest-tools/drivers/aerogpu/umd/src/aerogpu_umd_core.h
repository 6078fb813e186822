// The OS-independent translation core of the AeroGPU D3D9/D3D9Ex UMD: D3D9 DDI semantics
// in, AeroGPU command streams (with backing_alloc_id and shared surfaces) and per-batch
// allocation lists out. The Windows layer (aerogpu_umd_win.cpp) adapts the runtime's DDI
// structs and WDDM callbacks to this; host tests drive it directly.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "aerogpu_cmd_writer.h"

extern "C" {
#include "../../protocol/aerogpu_pci.h"
#include "../../protocol/aerogpu_wddm_alloc.h"
}

namespace aerogpu {

// HRESULT values the core returns (same numbers as the D3D9 headers).
enum : int32_t {
    kS_OK = 0,
    kS_FALSE = 1,
    kE_INVALIDARG = int32_t(0x80070057),
    kE_OUTOFMEMORY = int32_t(0x8007000E),
    kD3DERR_NOTAVAILABLE = int32_t(0x8876086A),
    kD3DERR_INVALIDCALL = int32_t(0x8876086C),
    kD3DERR_WASSTILLDRAWING = int32_t(0x8876021C),
};

constexpr uint32_t kD3DPRESENT_DONOTWAIT = 0x00000001u;

// What the core translates; GetCaps (aerogpu_umd_caps.cpp) reports exactly these, so the
// runtime never hands the core something it would refuse.
// The device's translator (crates/aero-gpu/src/aerogpu/d3d9) takes vs_1_1, vs_2_0, vs_2_x,
// vs_3_0 and ps_1_1-ps_1_4, ps_2_0, ps_2_x (2.1), ps_3_0; create_shader accepts exactly those.
constexpr uint32_t kMaxVertexShaderVersion = 0xFFFE0300u; // vs_3_0
constexpr uint32_t kMaxPixelShaderVersion = 0xFFFF0300u;  // ps_3_0
// Whether the version token (D3DVS_VERSION/D3DPS_VERSION) names a model the device translates.
constexpr bool shader_version_supported(bool pixel, uint32_t version) {
    if ((version >> 16) != (pixel ? 0xFFFFu : 0xFFFEu)) return false;
    uint32_t major = (version >> 8) & 0xFF, minor = version & 0xFF;
    if (major == 1) return minor >= 1 && minor <= (pixel ? 4u : 1u);
    if (major == 2) return minor <= 1;
    return major == 3 && minor == 0;
}
// wgpu's default max_texture_dimension_2d (the executor's limit), below the protocol's.
constexpr uint32_t kMaxTextureDim = 8192u;
constexpr uint32_t kMaxSimultaneousRTs = 4u;
constexpr uint32_t kMaxStreams = AEROGPU_MAX_VERTEX_BUFFERS;
constexpr uint32_t kMaxShaderConstantsF = AEROGPU_MAX_SHADER_CONSTANTS_F;
// alloc_id ranges: per-process IDs of non-shared allocations stay below kSharedAllocIdMin;
// shared allocations take [kSharedAllocIdMin, AEROGPU_WDDM_ALLOC_ID_UMD_MAX] from the
// cross-process counter, so the two can never collide in one submission's table. Without
// the counter the KMD assigns shared IDs from its adapter-global range (>= KMD_MIN).
constexpr uint32_t kSharedAllocIdMin = 0x40000000u;

// The alloc_id for the n-th value of the cross-process shared counter (never 0, always in
// the shared range; wraps after 2^30 shared allocations).
uint32_t shared_alloc_id_from_counter(uint64_t counter_value);
constexpr uint32_t kD3DGETDATA_FLUSH = 0x00000001u;

// Protocol handles (resources, shaders, input layouts) form ONE namespace on the device for
// all guest processes, and re-creating a live handle is an error there. So a device takes
// its handles in chunks of kHandleChunk that no other device (of any process) ever gets,
// and a new chunk when its chunk is used up: a device's handles are sparse, never 0.
// The u32 space is split in two: handles below kFallbackHandleMin come from a counter all
// processes share (value n: [n, n + 1) * kHandleChunk, see handle_chunk_from_counter); the
// rest is the fallback of processes without that counter (aerogpu_umd_ddi.cpp).
constexpr uint32_t kHandleChunk = 0x1000u;
constexpr uint32_t kFallbackHandleMin = 0x80000000u;
// First handle of the chunk a value of the shared counter stands for (values from 1); 0 when
// the value lies past the shared range: the space is exhausted and creation fails from then
// on (handles are never reused, so they cannot collide).
uint32_t handle_chunk_from_counter(uint64_t counter_value);

// Where a device gets its handle chunks.
class HandleChunks {
public:
    virtual ~HandleChunks() = default;
    // First handle of a chunk of kHandleChunk handles no device has had, 0 when none is left.
    virtual uint32_t reserve() = 0;
};

// Chunks from a counter of its own (values 1, 2, ...): one namespace for the devices given
// it and nobody else (host tests).
class CountingHandleChunks : public HandleChunks {
public:
    uint32_t reserve() override { return handle_chunk_from_counter(++counter_); }

private:
    uint64_t counter_ = 0;
};

// One allocation the current batch references (becomes the WDDM allocation list).
struct AllocRef {
    uint32_t alloc_id;
    bool write;
};

struct Submission {
    const uint8_t *cmd;
    size_t cmd_bytes;
    const std::vector<AllocRef> *allocs;
    bool present;
};

// Where finished batches go: WDDM Render/Present callbacks on Windows, the KMD staging +
// ring path in host tests. submit() returns the batch's fence (the runtime's
// SubmissionFenceId on Windows), 0 on failure.
class SubmitSink {
public:
    virtual ~SubmitSink() = default;
    virtual uint64_t submit(const Submission &s) = 0;
    virtual uint64_t completed_fence() = 0;
    // Bounded wait for `fence`; false on timeout. Host sinks complete synchronously.
    virtual bool wait_fence(uint64_t fence, uint32_t timeout_ms) = 0;
    // Latest vblank sample (count and a timestamp in the sink's clock, QPC ticks on
    // Windows); false when the device has no vblank source.
    virtual bool vblank(uint64_t *count, uint64_t *timestamp) {
        (void)count;
        (void)timestamp;
        return false;
    }
};

// D3DPRESENTSTATS as D3D9Ex defines it, for the last *completed* present: PresentCount is
// that present's ordinal (never above last_present_count()), PresentRefreshCount the vblank
// count when its completion was first seen, SyncRefreshCount/SyncQPCTime the latest vblank
// sample. Without a vblank source the refresh counts fall back to present ordinals. All
// fields are monotonic.
struct PresentStats {
    uint32_t present_count = 0;
    uint32_t present_refresh_count = 0;
    uint32_t sync_refresh_count = 0;
    uint64_t sync_qpc_time = 0;
    uint64_t sync_gpu_time = 0;
};

enum class ResourceKind { Buffer, Texture2D };

struct ResourceDesc {
    ResourceKind kind = ResourceKind::Buffer;
    uint32_t d3d_format = 0; // D3DFORMAT
    uint32_t width = 0, height = 0, levels = 1;
    // Cube textures: 6 layers (faces in D3DCUBEMAP_FACES order); volume textures: `depth`
    // slices (aerogpu_cmd.h's subresource layout). 1 and 1 for plain 2D textures.
    uint32_t layers = 1, depth = 1;
    bool cube = false, volume = false;
    uint64_t size_bytes = 0; // buffers
    uint32_t usage = 0;      // AEROGPU_RESOURCE_USAGE_*
    bool guest_backed = true;
    bool shared = false;
};

struct Resource {
    uint32_t handle = 0;
    ResourceDesc desc;
    uint32_t alloc_id = 0;     // 0 = host allocated
    uint64_t backing_bytes = 0;
    uint32_t row_pitch = 0;
    uint64_t share_token = 0;
};

// AEROGPU_FORMAT for a D3DFORMAT (0 = unsupported).
uint32_t d3d_format_to_aerogpu(uint32_t d3dfmt);
// Bytes of one mip-0 row (block rows for BC formats), 0 if unsupported.
uint32_t row_pitch_for(uint32_t d3dfmt, uint32_t width);
// Validates a resource description and computes its backing size (all mips) and mip-0
// row pitch; false if the core cannot create it.
bool resource_layout(const ResourceDesc &d, uint64_t *backing_bytes, uint32_t *row_pitch);
// The WDDM private-data blob for an allocation of `d`.
aerogpu_wddm_alloc_priv make_alloc_priv(const ResourceDesc &d, uint32_t alloc_id, uint64_t share_token,
                                        uint64_t backing_bytes);
// Where mip `level` of a 2D texture lives in its backing (and UPLOAD_RESOURCE offsets):
// size in texels, byte offset of the level, row pitch and rows (block rows for BC formats).
struct LevelLayout {
    uint32_t width = 0, height = 0;
    uint64_t offset = 0;
    uint32_t row_pitch = 0, rows = 0;
    uint32_t block = 1; // texels per block edge (4 for BC formats)
};
// Plain 2D textures only (cube and volume textures: layer_level_layout).
bool level_layout(const ResourceDesc &d, uint32_t level, LevelLayout *out);
// Where D3D9 subresource `sub` (cube: face * levels + mip; others: mip) lives: its mip's
// layout at the face's offset, `depth` slices `slice_pitch` bytes apart for volumes.
struct SubresourceLayout {
    LevelLayout level;
    uint32_t depth = 1;
    uint64_t slice_pitch = 0, size = 0;
};
bool subresource_layout(const ResourceDesc &d, uint32_t sub, SubresourceLayout *out);
// Mip `level` of cube face `layer`, of volume depth slice `layer`, or (layer 0) of a 2D
// texture: what COPY_TEXTURE2D's *_array_layer and *_mip_level address.
bool layer_level_layout(const ResourceDesc &d, uint32_t layer, uint32_t level, LevelLayout *out);
// D3D9's default of a render state the core sends at device creation; false for states
// outside its table (unknown ones, and those the DDI layer keeps itself).
bool d3d9_render_state_default(uint32_t state, uint32_t *value);
// Vertex count of a D3D9 DrawPrimitive call.
uint32_t vertex_count_for(uint32_t prim_type, uint32_t prim_count);

// A rectangle in texels, [left, right) x [top, bottom) (D3D9 RECT semantics).
struct Rect {
    int32_t left = 0, top = 0, right = 0, bottom = 0;
};
// A box of a volume: a Rect over slices [front, back).
struct Box {
    int32_t left = 0, top = 0, right = 0, bottom = 0;
    uint32_t front = 0, back = 1;
};

// Blit (StretchRect) options.
constexpr uint32_t kBlitLinear = 1u << 0;       // linear filtering (default: point)
constexpr uint32_t kBlitMirrorLeftRight = 1u << 1;
constexpr uint32_t kBlitMirrorUpDown = 1u << 2;

// Internal draws (blits, fills): D3D9 SM2 bytecode the core builds itself, for the
// device's D3D9 shader translator. One vertex layout: float4 POSITION (clip space) and
// float4 TEXCOORD0 (texture coordinates for the blit, the color for the fill).
//   vs_2_0: dcl_position v0; dcl_texcoord v1; mov oPos, v0; mov oT0, v1
//   ps_2_0 (blit): dcl t0.xy; dcl_2d s0; texld r0, t0, s0; mov oC0, r0
//   ps_2_0 (fill): dcl t0; mov oC0, t0
extern const uint32_t kInternalVs[14];
extern const uint32_t kBlitPs[15];
extern const uint32_t kFillPs[8];
extern const uint8_t kInternalDecl[24];
constexpr uint32_t kInternalVertexBytes = 32;

// Transient uploads (user-memory draws, blit quads) go into a ring of host-allocated
// buffers through UPLOAD_RESOURCE packets. One upload is at most kUploadBufferBytes (and
// must fit a batch, see set_max_batch_bytes); wrapping the ring ends the batch first, so
// a submission never overwrites bytes it already uploaded.
constexpr uint32_t kUploadBufferBytes = 64u * 1024u;
constexpr uint32_t kUploadRingBuffers = 4;

class Device {
public:
    // handles: where protocol handles come from (shared by every device of the namespace);
    // alloc_id_base: first UMD alloc_id for non-shared resources.
    Device(SubmitSink &sink, HandleChunks &handles, uint32_t alloc_id_base);

    // Resources. Returns the protocol handle, 0 on failure. For shared resources the
    // caller (KMD via private data) supplies share_token; shared_alloc_id comes from the
    // cross-process counter.
    uint32_t create_resource(const ResourceDesc &d, uint32_t shared_alloc_id = 0, uint64_t share_token = 0);
    int32_t destroy_resource(uint32_t handle);
    const Resource *resource(uint32_t handle) const;
    // The WDDM private-data blob for a resource's allocation.
    aerogpu_wddm_alloc_priv alloc_priv(uint32_t handle) const;
    // CPU wrote [offset, offset+size) of a guest-backed resource (Unlock).
    int32_t unlock(uint32_t handle, uint64_t offset, uint64_t size);
    // Exports a shared resource once the KMD has assigned its share_token (the token only
    // exists after the allocation is created): EXPORT_SHARED_SURFACE.
    int32_t export_shared(uint32_t handle, uint64_t share_token);
    // Opens a resource another process shared (IMPORT_SHARED_SURFACE).
    uint32_t open_shared(uint64_t share_token, const ResourceDesc &d, uint32_t alloc_id);

    // Shaders and declarations (tokens / D3DVERTEXELEMENT9 blobs copied).
    uint32_t create_shader(uint32_t stage, const void *tokens, size_t bytes);
    int32_t destroy_shader(uint32_t handle);
    int32_t set_shaders(uint32_t vs, uint32_t ps);
    int32_t set_shader_constants_f(uint32_t stage, uint32_t start, const float *v, uint32_t count);
    // Integer (4 ints per register) and boolean constants (nonzero = true, sent as 0/1),
    // which shaders read for loop/rep counts and static branches (SET_SHADER_CONSTANTS_I/_B).
    int32_t set_shader_constants_i(uint32_t stage, uint32_t start, const int32_t *v, uint32_t count);
    int32_t set_shader_constants_b(uint32_t stage, uint32_t start, const uint32_t *v, uint32_t count);
    uint32_t create_vertex_decl(const void *elements, size_t bytes);
    int32_t set_vertex_decl(uint32_t handle);

    // State.
    // Render and sampler states: the caches start at D3D9's documented defaults, and the
    // device's first batch sends every one of them (see emit_default_state), so the device
    // always holds what the cache says and callers may skip a value equal to the cache.
    int32_t set_render_state(uint32_t state, uint32_t value);
    uint32_t render_state(uint32_t state) const;
    int32_t set_sampler_state(uint32_t stage, uint32_t state, uint32_t value);
    // Last value set for a D3DSAMPLERSTATETYPE (1..13) of a stage (D3D9 defaults before).
    uint32_t sampler_state(uint32_t stage, uint32_t state) const;
    // D3DTSS_* values the device reads itself (the ps_1_x bump environment:
    // BUMPENVMAT00-11, BUMPENVLSCALE, BUMPENVLOFFSET), as SET_TEXTURE_STAGE_STATE; the
    // device starts them at 0 like D3D9. Other states are the fixed-function generator's.
    static bool device_texture_stage_state(uint32_t state) {
        return (state >= AEROGPU_TSS_BUMPENVMAT00 && state <= AEROGPU_TSS_BUMPENVMAT00 + 3) ||
               state == AEROGPU_TSS_BUMPENVLSCALE || state == AEROGPU_TSS_BUMPENVLOFFSET;
    }
    int32_t set_texture_stage_state(uint32_t stage, uint32_t state, uint32_t value);
    int32_t set_texture(uint32_t stage, uint32_t handle);
    int32_t set_stream_source(uint32_t stream, uint32_t handle, uint32_t offset, uint32_t stride);
    int32_t set_indices(uint32_t handle, bool index32, uint32_t offset = 0);
    // The bindings as last sent (state-block CAPTURE reads them).
    uint32_t texture(uint32_t stage) const { return stage < AEROGPU_MAX_TEXTURE_SLOTS ? tex_[stage] : 0; }
    bool stream_source(uint32_t stream, uint32_t *handle, uint32_t *offset, uint32_t *stride) const {
        if (stream >= AEROGPU_MAX_VERTEX_BUFFERS) return false;
        *handle = vb_[stream].handle, *offset = vb_[stream].offset, *stride = vb_[stream].stride;
        return true;
    }
    uint32_t indices(bool *index32) const {
        *index32 = ib32_;
        return ib_;
    }
    int32_t set_render_target(uint32_t index, uint32_t handle);
    int32_t set_depth_stencil(uint32_t handle);
    int32_t set_viewport(float x, float y, float w, float h, float zmin, float zmax);
    int32_t set_scissor(int32_t x, int32_t y, int32_t w, int32_t h);
    int32_t destroy_vertex_decl(uint32_t handle);
    // Same-size copy between two textures (Blt without stretching), mip 0 or given levels.
    int32_t copy_texture2d(uint32_t dst, uint32_t dst_x, uint32_t dst_y, uint32_t src, uint32_t src_x,
                           uint32_t src_y, uint32_t w, uint32_t h) {
        return copy_texture_level(dst, 0, dst_x, dst_y, src, 0, src_x, src_y, w, h);
    }
    int32_t copy_texture_level(uint32_t dst, uint32_t dst_level, uint32_t dst_x, uint32_t dst_y, uint32_t src,
                               uint32_t src_level, uint32_t src_x, uint32_t src_y, uint32_t w, uint32_t h,
                               uint32_t dst_layer = 0, uint32_t src_layer = 0);
    // BufBlt between two buffers: COPY_BUFFER, ranges checked against the buffers' sizes.
    int32_t copy_buffer(uint32_t dst, uint64_t dst_offset, uint32_t src, uint64_t src_offset, uint64_t size);
    // Host copies of CPU data (system-memory sources of BufBlt/TexBlt): UPLOAD_RESOURCE
    // packets of at most kUploadBufferBytes. A guest-backed destination's backing is not
    // written (it keeps what the guest last wrote there).
    int32_t upload_buffer(uint32_t dst, uint64_t offset, const void *data, uint64_t size);
    // Texels [x, x+w) x [y, y+h) of mip `level` from `data` (rows `pitch` bytes apart, first
    // row at data). BC formats: the rectangle must be on 4x4 block edges (or the level's edge).
    int32_t upload_texture(uint32_t dst, uint32_t level, uint32_t x, uint32_t y, uint32_t w, uint32_t h,
                           const void *data, uint32_t pitch, uint32_t layer = 0);
    // TexBlt (UpdateTexture/UpdateSurface) between two textures of one format: src_rect of
    // the top level to dst_point, and the same region scaled down in every lower level dst
    // has (dst level l takes src level l + src.levels - dst.levels). `sysmem` (nullable)
    // gives each src level's CPU data and pitch: uploaded from there; otherwise COPY_TEXTURE2D.
    // Cube textures: face `face` of both (`sysmem` lists every face's levels, face by face).
    struct SysmemLevel {
        const void *data;
        uint32_t pitch;
        uint32_t slice_pitch = 0; // volumes
    };
    int32_t tex_blt(uint32_t dst, int32_t dst_x, int32_t dst_y, uint32_t src, const Rect &src_rect,
                    const SysmemLevel *sysmem, uint32_t sysmem_levels, uint32_t face = 0);
    // VolBlt (UpdateTexture of volume textures): `box` of the top level to (dst_x, dst_y,
    // dst_z), scaled to every level as tex_blt does, one depth slice per copy.
    int32_t vol_blt(uint32_t dst, uint32_t dst_x, uint32_t dst_y, uint32_t dst_z, uint32_t src, const Box &box,
                    const SysmemLevel *sysmem, uint32_t sysmem_levels);
    uint32_t render_target(uint32_t index) const { return index < AEROGPU_MAX_RENDER_TARGETS ? rts_[index] : 0; }
    uint32_t depth_stencil() const { return ds_; }

    // Blt / StretchRect of mip 0 between 2D textures. Same size, same format and no
    // mirroring: COPY_TEXTURE2D. Otherwise a draw into `dst` (render-target usage)
    // sampling `src` (texture usage) with point or linear filtering, clipped to dst_rect
    // by the scissor; every state it changes is restored afterwards.
    int32_t blit(uint32_t dst, const Rect &dst_rect, uint32_t src, const Rect &src_rect, uint32_t flags);
    // ColorFill of a sub-rectangle (a draw, like blit). CLEAR clears whole targets.
    int32_t color_fill(uint32_t dst, const Rect &rect, const float rgba[4]);
    // Clear of the color targets inside rectangles (clipped to each target; empty ones
    // skipped): a color fill per bound render target and rectangle.
    int32_t clear_color_rects(const float rgba[4], const Rect *rects, uint32_t n);
    // CLEAR_RECTS (ABI 1.4): `flags` (AEROGPU_CLEAR_*) of the bound targets inside the
    // rectangles (negative edges cut at 0, empty rectangles skipped), in packets of at most
    // AEROGPU_MAX_CLEAR_RECTS. Used for depth/stencil, which a fill draw cannot write.
    int32_t clear_rects(uint32_t flags, const float rgba[4], float z, uint32_t stencil, const Rect *rects,
                        uint32_t n);
    // The device's ABI_VERSION as the KMD reported it (0: unknown, taken as this header
    // set's). Devices before ABI 1.4 skip CLEAR_RECTS as an unknown packet, so against
    // them every clear that needs it is refused (D3DERR_NOTAVAILABLE) before any packet.
    void set_device_abi(uint32_t abi_version_u32) { device_abi_ = abi_version_u32; }
    bool has_clear_rects() const { return device_abi_ == 0 || (device_abi_ & 0xFFFFu) >= kAbiMinorClearRects; }
    static constexpr uint32_t kAbiMinorClearRects = 4;
    // D3D9 Clear: `flags` inside the rectangles (n == 0: the whole viewport), each cut to
    // the viewport and, with D3DRS_SCISSORTESTENABLE, to the scissor rect (D3D9 defaults:
    // all of render target 0). A rectangle covering every bound target: one CLEAR;
    // otherwise color through fill draws and depth/stencil through CLEAR_RECTS.
    int32_t clear_d3d9(uint32_t flags, const float rgba[4], float z, uint32_t stencil, const Rect *rects,
                       uint32_t n);
    // DepthFill of a depth surface (all of it, or `rect` inside it) with a value in its
    // own format (D16, D24S8/D24X8: depth in the top 24 bits, stencil in the low 8, D32F):
    // CLEAR (or CLEAR_RECTS) with it bound alone.
    int32_t depth_fill(uint32_t ds, uint32_t native_value, const Rect *rect = nullptr);
    // Destroys the internal shaders, declaration and upload buffers (device teardown).
    void release_internal_objects();
    // Largest batch the sink takes (the runtime's command buffer); 0 = unlimited. A packet
    // that would not fit ends the batch first (every packet goes through emit()).
    void set_max_batch_bytes(size_t n) { max_batch_bytes_ = n; }

    // Drawing.
    int32_t clear(uint32_t flags, const float rgba[4], float z, uint32_t stencil);
    int32_t draw_primitive(uint32_t prim_type, uint32_t start_vertex, uint32_t prim_count);
    int32_t draw_indexed(uint32_t prim_type, int32_t base_vertex, uint32_t start_index, uint32_t prim_count);
    // Draws from user memory (DrawPrimitiveUP; SetStreamSourceUm + DrawPrimitive): the
    // vertices are copied into the upload ring and bound to stream 0. E_OUTOFMEMORY when
    // the data exceeds one upload.
    int32_t draw_primitive_up(uint32_t prim_type, uint32_t prim_count, const void *vertices, uint32_t stride);
    // DrawIndexedPrimitive with user-memory stream 0 (`vertices`, nullptr = the bound
    // stream 0) and/or user-memory indices (`indices`, nullptr = the bound index buffer).
    // Uploaded vertices are [base_vertex + min_index, + num_vertices) of `vertices`.
    int32_t draw_indexed_up(uint32_t prim_type, int32_t base_vertex, uint32_t min_index, uint32_t num_vertices,
                            uint32_t start_index, uint32_t prim_count, const void *indices, bool index32,
                            const void *vertices, uint32_t stride);
    // DrawIndexedPrimitive2: indices from `indices` (index_size 2 or 4, the first at byte
    // start_index_offset), vertices from stream 0 (user memory `vertices` or the bound
    // buffer) with base_vertex_offset in bytes; the buffer case needs it to be a multiple
    // of the stream's stride.
    int32_t draw_indexed_primitive2(uint32_t prim_type, int32_t base_vertex_offset, uint32_t min_index,
                                    uint32_t num_vertices, uint32_t start_index_offset, uint32_t prim_count,
                                    const void *indices, uint32_t index_size, const void *vertices,
                                    uint32_t stride);

    // Presentation (D3D9Ex): at most max_frame_latency() presents in flight. With
    // D3DPRESENT_DONOTWAIT a full queue returns D3DERR_WASSTILLDRAWING (nothing submitted);
    // without it the call waits for the oldest present, bounded by kPresentWaitMs, and then
    // submits anyway (DWM must not see spurious failures from a slow device).
    static constexpr uint32_t kPresentWaitMs = 2000;
    int32_t present_ex(uint32_t d3d9_flags, bool vsync);
    int32_t set_max_frame_latency(uint32_t n);
    uint32_t max_frame_latency() const { return max_latency_; }
    // GetLastPresentCount: ordinal of the last accepted present.
    uint32_t present_count() const { return present_count_; }
    // Presents submitted whose fence has not completed (after retiring completed ones).
    uint32_t presents_in_flight();
    PresentStats present_stats();

    // EVENT queries: issue ends the batch, get_data never blocks.
    // Query ids are reused after destroy_query (apps and DWM may create one per frame).
    uint32_t create_query();
    int32_t destroy_query(uint32_t query);
    bool query_exists(uint32_t query) const { return query && query <= queries_.size() && queries_[query - 1].live; }
    int32_t issue_query(uint32_t query);
    int32_t get_query_data(uint32_t query, uint32_t flags);

    // Submits the open batch (no-op if empty). Returns the fence (0 if none).
    uint64_t flush(bool present = false);
    uint64_t last_fence() const { return last_fence_; }
    CmdError writer_error() const { return cmd_.error(); }
    // The last create_* / open_shared failed because no handle chunk was left (see
    // HandleChunks), rather than for its arguments.
    bool out_of_handles() const { return out_of_handles_; }

private:
    // tex_blt and vol_blt: every dst level from its src level, face `face` of cubes.
    int32_t blt_levels(uint32_t dst, uint32_t dst_x, uint32_t dst_y, uint32_t dst_z, uint32_t src, const Box &box,
                       uint32_t face, const SysmemLevel *sysmem, uint32_t sysmem_levels);
    // The next handle of the device's chunk (a new chunk when it is used up), 0 if none.
    uint32_t new_handle();
    void reference(uint32_t handle, bool write);
    void emit_pipeline_state();
    Resource *find(uint32_t handle);
    int32_t draw_checks();
    int32_t emit_render_targets();
    int32_t upload_transient(const void *data, uint32_t bytes, uint32_t *handle, uint32_t *offset);
    int32_t upload_range(uint32_t dst, uint64_t offset, const uint8_t *data, uint64_t size);
    // Ends the open batch if `bytes` more would not fit it (sends the pending default
    // state first). Multi-packet operations reserve their whole size up front, so that the
    // allocations they reference land in the batch that holds their packets.
    void ensure_room(size_t bytes);
    // Every packet goes through here: room for it first, then the writer.
    template <class P> P *emit(uint32_t opcode, const void *payload = nullptr, size_t payload_len = 0) {
        ensure_room((sizeof(P) + payload_len + 3) & ~size_t(3));
        return cmd_.append<P>(opcode, payload, payload_len);
    }
    void emit_default_state();
    int32_t emit_constants(uint32_t opcode, uint32_t stage, uint32_t start, uint32_t count, uint32_t max,
                           const void *data, size_t bytes);
    int32_t ensure_internal_objects();
    int32_t internal_quad(uint32_t dst, const Rect &rect, uint32_t tex, bool linear, const float attr[4][4]);

    SubmitSink &sink_;
    CmdWriter cmd_;
    std::vector<AllocRef> allocs_;
    std::map<uint32_t, Resource> resources_; // live resources by handle
    HandleChunks &handles_;
    uint32_t next_handle_ = 0, handles_left_ = 0, next_alloc_id_;
    bool out_of_handles_ = false;

    uint32_t rs_[256] = {};
    bool defaults_pending_ = true; // the default state is not in a batch yet
    bool blend_dirty_ = true, depth_dirty_ = true, raster_dirty_ = true;
    static constexpr uint32_t kSamplerStates = 14; // D3DSAMP_ADDRESSU (1) .. DMAPOFFSET (13)
    uint32_t samp_[AEROGPU_MAX_TEXTURE_SLOTS][kSamplerStates] = {};
    uint32_t rts_[AEROGPU_MAX_RENDER_TARGETS] = {};
    uint32_t ds_ = 0;
    struct StreamBinding {
        uint32_t handle = 0, offset = 0, stride = 0;
    };
    StreamBinding vb_[AEROGPU_MAX_VERTEX_BUFFERS] = {};
    uint32_t ib_ = 0;
    bool ib32_ = false;
    uint32_t tex_[AEROGPU_MAX_TEXTURE_SLOTS] = {};
    uint32_t topology_ = 0;
    uint32_t vs_ = 0, ps_ = 0, decl_ = 0;
    // Viewport and scissor as last set (has_* false: never set, D3D9's default is the
    // whole render target 0).
    float vp_[6] = {};
    bool has_vp_ = false;
    int32_t scissor_[4] = {};
    bool has_scissor_ = false;

    // Internal draw objects (created on first use) and the upload ring.
    uint32_t int_vs_ = 0, int_blit_ps_ = 0, int_fill_ps_ = 0, int_decl_ = 0;
    uint32_t ring_[kUploadRingBuffers] = {};
    uint32_t ring_index_ = 0, ring_cursor_ = 0;
    size_t max_batch_bytes_ = 0;
    uint32_t device_abi_ = 0;

    void retire_presents();
    struct InflightPresent {
        uint64_t fence;
        uint32_t ordinal;
    };
    uint32_t max_latency_ = 3;
    std::vector<InflightPresent> inflight_presents_;
    uint32_t present_count_ = 0;
    PresentStats stats_;
    struct Query {
        uint64_t fence = 0; // the fence it waits for once issued
        bool live = false, issued = false;
    };
    std::vector<Query> queries_; // query id - 1
    uint64_t last_fence_ = 0;
};

} // namespace aerogpu
