// AeroGPU D3D9 UMD translation core (portable; see aerogpu_umd_core.h).
#include "aerogpu_umd_core.h"

#include <cstring>

extern "C" {
#include "../../protocol/aerogpu_pci.h"
}

namespace aerogpu {

namespace {

// D3DRENDERSTATETYPE values the core derives pipeline packets from.
enum : uint32_t {
    RS_ZENABLE = 7, RS_FILLMODE = 8, RS_ZWRITEENABLE = 14, RS_SRCBLEND = 19, RS_DESTBLEND = 20,
    RS_CULLMODE = 22, RS_ZFUNC = 23, RS_ALPHABLENDENABLE = 27, RS_STENCILENABLE = 52,
    RS_STENCILMASK = 58, RS_STENCILWRITEMASK = 59, RS_COLORWRITEENABLE = 168, RS_BLENDOP = 171,
    RS_SCISSORTESTENABLE = 174, RS_DEPTHBIAS = 195, RS_SEPARATEALPHABLENDENABLE = 206,
    RS_SRCBLENDALPHA = 207, RS_DESTBLENDALPHA = 208, RS_BLENDOPALPHA = 209,
    RS_ALPHATESTENABLE = 15, RS_FOGENABLE = 28, RS_CLIPPLANEENABLE = 152, RS_SRGBWRITEENABLE = 194,
};

// D3DSAMPLERSTATETYPE values.
enum : uint32_t {
    SAMP_ADDRESSU = 1, SAMP_ADDRESSV = 2, SAMP_ADDRESSW = 3, SAMP_MAGFILTER = 5, SAMP_MINFILTER = 6,
    SAMP_MIPFILTER = 7, SAMP_MIPMAPLODBIAS = 8, SAMP_MAXMIPLEVEL = 9, SAMP_MAXANISOTROPY = 10,
    SAMP_SRGBTEXTURE = 11,
};

// D3D9's documented default of every render state the core forwards (Microsoft's
// D3DRENDERSTATETYPE reference; floats as their bit patterns). Left out: the two states the
// DDI layer keeps itself (D3DRS_SOFTWAREVERTEXPROCESSING 153, N-patch segments 164) and
// D3DRS_DEBUGMONITORTOKEN (165, debug runtime only). D3DRS_ZENABLE defaults to TRUE only
// with an automatic depth buffer; the runtime sends the application's setting.
constexpr uint32_t kF1 = 0x3F800000u, kF64 = 0x42800000u; // 1.0f, 64.0f
constexpr uint32_t kRenderStateDefaults[][2] = {
    {7, 1},      {8, 3},      {9, 2},      {14, 1},     {15, 0},     {16, 1},     {19, 2},     {20, 1},
    {22, 3},     {23, 4},     {24, 0},     {25, 8},     {26, 0},     {27, 0},     {28, 0},     {29, 0},
    {34, 0},     {35, 0},     {36, 0},     {37, kF1},   {38, kF1},   {48, 0},     {52, 0},     {53, 1},
    {54, 1},     {55, 1},     {56, 8},     {57, 0},     {58, ~0u},   {59, ~0u},   {60, ~0u},   {128, 0},
    {129, 0},    {130, 0},    {131, 0},    {132, 0},    {133, 0},    {134, 0},    {135, 0},    {136, 1},
    {137, 1},    {139, 0},    {140, 0},    {141, 1},    {142, 1},    {143, 0},    {145, 1},    {146, 2},
    {147, 0},    {148, 0},    {151, 0},    {152, 0},    {154, kF1},  {155, kF1},  {156, 0},    {157, 0},
    {158, kF1},  {159, 0},    {160, 0},    {161, 1},    {162, ~0u},  {163, 0},    {166, kF64}, {167, 0},
    {168, 0xF},  {170, 0},    {171, 1},    {172, 3},    {173, 1},    {174, 0},    {175, 0},    {176, 0},
    {178, kF1},  {179, kF1},  {180, 0},    {181, 0},    {182, kF1},  {183, 0},    {184, 0},    {185, 0},
    {186, 1},    {187, 1},    {188, 1},    {189, 8},    {190, 0xF},  {191, 0xF},  {192, 0xF},  {193, ~0u},
    {194, 0},    {195, 0},    {198, 0},    {199, 0},    {200, 0},    {201, 0},    {202, 0},    {203, 0},
    {204, 0},    {205, 0},    {206, 0},    {207, 2},    {208, 1},    {209, 1},
};

// D3DSAMPLERSTATETYPE defaults, indexed by the state (0 unused): WRAP addressing, no
// border color, point min/mag filtering, no mipmapping, anisotropy 1.
constexpr uint32_t kSamplerStateDefaults[] = {0, 1, 1, 1, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0};

uint32_t f32_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

uint32_t map_blend(uint32_t d3d) {
    switch (d3d) {
    case 1: return AEROGPU_BLEND_ZERO;
    case 2: return AEROGPU_BLEND_ONE;
    case 3: return AEROGPU_BLEND_SRC_COLOR;
    case 4: return AEROGPU_BLEND_INV_SRC_COLOR;
    case 5: return AEROGPU_BLEND_SRC_ALPHA;
    case 6: return AEROGPU_BLEND_INV_SRC_ALPHA;
    case 7: return AEROGPU_BLEND_DEST_ALPHA;
    case 8: return AEROGPU_BLEND_INV_DEST_ALPHA;
    case 9: return AEROGPU_BLEND_DEST_COLOR;
    case 10: return AEROGPU_BLEND_INV_DEST_COLOR;
    case 14: return AEROGPU_BLEND_CONSTANT;
    case 15: return AEROGPU_BLEND_INV_CONSTANT;
    default: return AEROGPU_BLEND_ONE;
    }
}

uint32_t map_blend_op(uint32_t d3d) {
    return (d3d >= 1 && d3d <= 5) ? d3d - 1 : uint32_t(AEROGPU_BLEND_OP_ADD);
}

uint32_t map_cmp(uint32_t d3d) {
    return (d3d >= 1 && d3d <= 8) ? d3d - 1 : uint32_t(AEROGPU_COMPARE_ALWAYS);
}

} // namespace

uint32_t d3d_format_to_aerogpu(uint32_t f) {
    switch (f) {
    case 21: return AEROGPU_FORMAT_B8G8R8A8_UNORM;  // A8R8G8B8
    case 22: return AEROGPU_FORMAT_B8G8R8X8_UNORM;  // X8R8G8B8
    case 32: return AEROGPU_FORMAT_R8G8B8A8_UNORM;  // A8B8G8R8
    case 33: return AEROGPU_FORMAT_R8G8B8X8_UNORM;  // X8B8G8R8
    case 23: return AEROGPU_FORMAT_B5G6R5_UNORM;    // R5G6B5
    case 25: return AEROGPU_FORMAT_B5G5R5A1_UNORM;  // A1R5G5B5
    case 50: return AEROGPU_FORMAT_R8_UNORM;        // L8
    case 28: return AEROGPU_FORMAT_A8_UNORM;        // A8
    case 51: return AEROGPU_FORMAT_L8A8_UNORM;      // A8L8
    case 60: return AEROGPU_FORMAT_V8U8_SNORM;      // V8U8
    case 63: return AEROGPU_FORMAT_Q8W8V8U8_SNORM;  // Q8W8V8U8
    case 75: return AEROGPU_FORMAT_D24_UNORM_S8_UINT;
    case 77: return AEROGPU_FORMAT_D24_UNORM_S8_UINT; // D24X8
    case 80: return AEROGPU_FORMAT_D16_UNORM;
    case 82: return AEROGPU_FORMAT_D32_FLOAT;       // D32F_LOCKABLE
    case 113: return AEROGPU_FORMAT_R16G16B16A16_FLOAT;
    case 114: return AEROGPU_FORMAT_R32_FLOAT;
    case 116: return AEROGPU_FORMAT_R32G32B32A32_FLOAT;
    case 0x31545844: return AEROGPU_FORMAT_BC1_UNORM;
    case 0x33545844: return AEROGPU_FORMAT_BC2_UNORM;
    case 0x35545844: return AEROGPU_FORMAT_BC3_UNORM;
    default: return 0;
    }
}

uint32_t row_pitch_for(uint32_t f, uint32_t width) {
    switch (d3d_format_to_aerogpu(f)) {
    case 0: return 0;
    case AEROGPU_FORMAT_BC1_UNORM: return ((width + 3) / 4) * 8;
    case AEROGPU_FORMAT_BC2_UNORM:
    case AEROGPU_FORMAT_BC3_UNORM: return ((width + 3) / 4) * 16;
    case AEROGPU_FORMAT_B5G6R5_UNORM:
    case AEROGPU_FORMAT_B5G5R5A1_UNORM:
    case AEROGPU_FORMAT_D16_UNORM:
    case AEROGPU_FORMAT_L8A8_UNORM:
    case AEROGPU_FORMAT_V8U8_SNORM: return width * 2;
    case AEROGPU_FORMAT_R8_UNORM:
    case AEROGPU_FORMAT_A8_UNORM: return width;
    case AEROGPU_FORMAT_R16G16B16A16_FLOAT: return width * 8;
    case AEROGPU_FORMAT_R32G32B32A32_FLOAT: return width * 16;
    default: return width * 4;
    }
}

uint32_t vertex_count_for(uint32_t prim, uint32_t n) {
    switch (prim) {
    case AEROGPU_TOPOLOGY_POINTLIST: return n;
    case AEROGPU_TOPOLOGY_LINELIST: return n * 2;
    case AEROGPU_TOPOLOGY_LINESTRIP: return n ? n + 1 : 0;
    case AEROGPU_TOPOLOGY_TRIANGLELIST: return n * 3;
    case AEROGPU_TOPOLOGY_TRIANGLESTRIP:
    case AEROGPU_TOPOLOGY_TRIANGLEFAN: return n ? n + 2 : 0;
    default: return 0;
    }
}

uint32_t shared_alloc_id_from_counter(uint64_t counter_value) {
    return kSharedAllocIdMin | uint32_t(counter_value & (AEROGPU_WDDM_ALLOC_ID_UMD_MAX - kSharedAllocIdMin));
}

uint32_t handle_chunk_from_counter(uint64_t counter_value) {
    if (counter_value == 0 || counter_value >= kFallbackHandleMin / kHandleChunk) return 0;
    return uint32_t(counter_value) * kHandleChunk;
}

Device::Device(SubmitSink &sink, HandleChunks &handles, uint32_t alloc_id_base)
    : sink_(sink), handles_(handles),
      next_alloc_id_((alloc_id_base && alloc_id_base < kSharedAllocIdMin) ? alloc_id_base : 1) {
    // Choice: the caches start at D3D9's defaults and the device is told all of them before
    // its first packet (emit_default_state), rather than caches marked "never sent". So
    // the device never depends on defaults of its own, and the stream is the same for every
    // device: a value equal to the cache is one the device already holds, never one it has
    // not heard of (internal draws can also restore a state the app never set).
    for (const auto &d : kRenderStateDefaults) rs_[d[0]] = d[1];
    static_assert(sizeof(kSamplerStateDefaults) == sizeof(samp_[0]), "one default per sampler state");
    for (auto &stage : samp_) std::memcpy(stage, kSamplerStateDefaults, sizeof(stage));
}

bool d3d9_render_state_default(uint32_t state, uint32_t *value) {
    for (const auto &d : kRenderStateDefaults)
        if (d[0] == state) {
            *value = d[1];
            return true;
        }
    return false;
}

// The default state, once, ahead of the device's first packet: every render state of the
// table and every sampler state of every slot, as SET_RENDER_STATE / SET_SAMPLER_STATE
// (about 7 KiB, split over batches like any other packets).
void Device::emit_default_state() {
    defaults_pending_ = false;
    for (const auto &d : kRenderStateDefaults) set_render_state(d[0], d[1]);
    for (uint32_t slot = 0; slot < AEROGPU_MAX_TEXTURE_SLOTS; slot++)
        for (uint32_t state = 1; state < kSamplerStates; state++)
            set_sampler_state(slot, state, kSamplerStateDefaults[state]);
}

uint32_t Device::new_handle() {
    if (handles_left_ == 0) {
        uint32_t first = handles_.reserve();
        if (!first) {
            out_of_handles_ = true;
            return 0;
        }
        next_handle_ = first;
        handles_left_ = kHandleChunk;
    }
    handles_left_--;
    return next_handle_++;
}

Resource *Device::find(uint32_t handle) {
    auto it = resources_.find(handle);
    return it == resources_.end() ? nullptr : &it->second;
}

const Resource *Device::resource(uint32_t handle) const {
    return const_cast<Device *>(this)->find(handle);
}

void Device::reference(uint32_t handle, bool write) {
    Resource *r = find(handle);
    if (!r || !r->alloc_id) return;
    for (auto &a : allocs_) {
        if (a.alloc_id == r->alloc_id) {
            a.write = a.write || write;
            return;
        }
    }
    allocs_.push_back(AllocRef{r->alloc_id, write});
}

bool resource_layout(const ResourceDesc &d, uint64_t *backing_bytes, uint32_t *row_pitch) {
    if (d.kind == ResourceKind::Buffer) {
        if (d.size_bytes == 0 || d.size_bytes > (uint64_t(1) << 31)) return false;
        *backing_bytes = (d.size_bytes + 3) & ~uint64_t(3);
        *row_pitch = 0;
        return true;
    }
    uint32_t fmt = d3d_format_to_aerogpu(d.d3d_format);
    if (!fmt || d.width == 0 || d.height == 0 || d.width > kMaxTextureDim || d.height > kMaxTextureDim ||
        d.levels == 0 || d.levels > AEROGPU_MAX_MIP_LEVELS)
        return false;
    // MVP: shared surfaces are single-allocation, single-level.
    if (d.shared && d.levels != 1) return false;
    if (d.cube && (d.volume || d.layers != 6 || d.width != d.height)) return false;
    if (!d.cube && d.layers != 1) return false;
    if (d.volume ? (d.depth == 0 || d.depth > AEROGPU_MAX_VOLUME_DEPTH) : d.depth != 1) return false;
    if ((d.cube || d.volume) && d.shared) return false;
    *row_pitch = row_pitch_for(d.d3d_format, d.width);
    uint64_t per_layer = 0;
    for (uint32_t l = 0; l < d.levels; l++) {
        uint32_t w = d.width >> l ? d.width >> l : 1, h = d.height >> l ? d.height >> l : 1;
        uint32_t rows = (fmt >= AEROGPU_FORMAT_BC1_UNORM) ? (h + 3) / 4 : h;
        uint32_t slices = d.depth >> l ? d.depth >> l : 1;
        per_layer += uint64_t(row_pitch_for(d.d3d_format, w)) * rows * slices;
    }
    *backing_bytes = per_layer * d.layers;
    return true;
}

aerogpu_wddm_alloc_priv make_alloc_priv(const ResourceDesc &d, uint32_t alloc_id, uint64_t share_token,
                                        uint64_t backing_bytes) {
    aerogpu_wddm_alloc_priv p{};
    p.magic = AEROGPU_WDDM_ALLOC_PRIV_MAGIC;
    p.version = AEROGPU_WDDM_ALLOC_PRIV_VERSION;
    p.alloc_id = alloc_id;
    p.flags = (d.shared ? AEROGPU_WDDM_ALLOC_PRIV_FLAG_IS_SHARED : 0) | AEROGPU_WDDM_ALLOC_PRIV_FLAG_CPU_VISIBLE;
    p.share_token = share_token;
    p.size_bytes = backing_bytes;
    // D3D9 descriptor marker: format in the low word, width/height above (OpenResource).
    p.reserved0 = d.kind == ResourceKind::Texture2D
                      ? (uint64_t(d.d3d_format) | (uint64_t(d.width & 0xFFFF) << 32) |
                         (uint64_t(d.height & 0xFFFF) << 48))
                      : 0;
    return p;
}

uint32_t Device::create_resource(const ResourceDesc &d, uint32_t shared_alloc_id, uint64_t share_token) {
    out_of_handles_ = false;
    Resource r;
    r.desc = d;
    if (!resource_layout(d, &r.backing_bytes, &r.row_pitch)) return 0;
    // Shared alloc_ids come from the cross-process counter or the KMD's range: never a
    // per-process ID.
    if (d.guest_backed && d.shared && shared_alloc_id < kSharedAllocIdMin) return 0;
    r.handle = new_handle();
    if (!r.handle) return 0;
    if (d.guest_backed) {
        if (d.shared) {
            r.alloc_id = shared_alloc_id;
        } else {
            r.alloc_id = next_alloc_id_++;
            if (next_alloc_id_ >= kSharedAllocIdMin) next_alloc_id_ = 1;
        }
    }
    r.share_token = share_token;
    if (d.kind == ResourceKind::Buffer) {
        auto *p = emit<aerogpu_cmd_create_buffer>(AEROGPU_CMD_CREATE_BUFFER);
        if (!p) return 0;
        p->buffer_handle = r.handle;
        p->usage_flags = d.usage;
        p->size_bytes = r.backing_bytes;
        p->backing_alloc_id = r.alloc_id;
    } else {
        auto *p = emit<aerogpu_cmd_create_texture2d>(AEROGPU_CMD_CREATE_TEXTURE2D);
        if (!p) return 0;
        p->texture_handle = r.handle;
        p->usage_flags = d.usage;
        p->format = d3d_format_to_aerogpu(d.d3d_format);
        p->width = d.width;
        p->height = d.height;
        p->mip_levels = d.levels;
        p->array_layers = d.layers;
        p->flags = (d.cube ? AEROGPU_TEXTURE_FLAG_CUBE : 0u) | (d.volume ? AEROGPU_TEXTURE_FLAG_VOLUME : 0u);
        p->depth = d.volume ? d.depth : 0;
        p->row_pitch_bytes = r.row_pitch;
        p->backing_alloc_id = r.alloc_id;
    }
    resources_[r.handle] = r;
    reference(r.handle, true);
    if (d.shared && share_token) {
        auto *e = emit<aerogpu_cmd_export_shared_surface>(AEROGPU_CMD_EXPORT_SHARED_SURFACE);
        if (!e) return 0;
        e->resource_handle = r.handle;
        e->share_token = share_token;
    }
    return r.handle;
}

int32_t Device::export_shared(uint32_t handle, uint64_t share_token) {
    Resource *r = find(handle);
    if (!r || !r->desc.shared || !share_token || r->share_token) return kD3DERR_INVALIDCALL;
    auto *e = emit<aerogpu_cmd_export_shared_surface>(AEROGPU_CMD_EXPORT_SHARED_SURFACE);
    if (!e) return kE_OUTOFMEMORY;
    e->resource_handle = handle;
    e->share_token = share_token;
    r->share_token = share_token;
    return kS_OK;
}

uint32_t Device::open_shared(uint64_t share_token, const ResourceDesc &d, uint32_t alloc_id) {
    out_of_handles_ = false;
    if (!share_token) return 0;
    Resource r;
    r.desc = d;
    r.alloc_id = alloc_id;
    r.share_token = share_token;
    if (!resource_layout(d, &r.backing_bytes, &r.row_pitch)) return 0;
    r.handle = new_handle();
    if (!r.handle) return 0;
    auto *p = emit<aerogpu_cmd_import_shared_surface>(AEROGPU_CMD_IMPORT_SHARED_SURFACE);
    if (!p) return 0;
    p->out_resource_handle = r.handle;
    p->share_token = share_token;
    resources_[r.handle] = r;
    return r.handle;
}

aerogpu_wddm_alloc_priv Device::alloc_priv(uint32_t handle) const {
    const Resource *r = resource(handle);
    if (!r) return make_alloc_priv(ResourceDesc{}, 0, 0, 0);
    return make_alloc_priv(r->desc, r->alloc_id, r->share_token, r->backing_bytes);
}

int32_t Device::destroy_resource(uint32_t handle) {
    Resource *r = find(handle);
    if (!r) return kD3DERR_INVALIDCALL;
    // Shared surfaces: the KMD sends RELEASE on the last close across processes; the
    // per-process handle still drops its own reference.
    auto *p = emit<aerogpu_cmd_destroy_resource>(AEROGPU_CMD_DESTROY_RESOURCE);
    if (!p) return kE_OUTOFMEMORY;
    p->resource_handle = handle;
    resources_.erase(handle);
    for (auto &v : vb_) if (v.handle == handle) v = StreamBinding{};
    for (auto &t : tex_) if (t == handle) t = 0;
    for (auto &t : rts_) if (t == handle) t = 0;
    if (ib_ == handle) ib_ = 0;
    if (ds_ == handle) ds_ = 0;
    return kS_OK;
}

int32_t Device::unlock(uint32_t handle, uint64_t offset, uint64_t size) {
    Resource *r = find(handle);
    if (!r) return kD3DERR_INVALIDCALL;
    if (!r->alloc_id) return kS_OK; // host-allocated: uploads go through UPLOAD_RESOURCE
    if (offset > r->backing_bytes || size > r->backing_bytes - offset) return kD3DERR_INVALIDCALL;
    if (size == 0) size = r->backing_bytes - offset;
    auto *p = emit<aerogpu_cmd_resource_dirty_range>(AEROGPU_CMD_RESOURCE_DIRTY_RANGE);
    if (!p) return kE_OUTOFMEMORY;
    p->resource_handle = handle;
    p->offset_bytes = offset;
    p->size_bytes = size;
    // The dirty range needs alloc_id resolution: list the allocation in this batch.
    reference(handle, false);
    return kS_OK;
}

uint32_t Device::create_shader(uint32_t stage, const void *tokens, size_t bytes) {
    out_of_handles_ = false;
    if (!tokens || bytes < 8 || bytes % 4 || bytes > AEROGPU_MAX_SHADER_BYTES) return 0;
    // Only the models the device translates (GetCaps reports the highest of them).
    uint32_t version;
    std::memcpy(&version, tokens, 4);
    if (stage != AEROGPU_SHADER_STAGE_VERTEX && stage != AEROGPU_SHADER_STAGE_PIXEL) return 0;
    if (!shader_version_supported(stage == AEROGPU_SHADER_STAGE_PIXEL, version)) return 0;
    uint32_t h = new_handle();
    if (!h) return 0;
    auto *p = emit<aerogpu_cmd_create_shader>(AEROGPU_CMD_CREATE_SHADER, tokens, bytes);
    if (!p) return 0;
    p->shader_handle = h;
    p->stage = stage;
    p->bytecode_size_bytes = static_cast<uint32_t>(bytes);
    return h;
}

int32_t Device::destroy_shader(uint32_t handle) {
    auto *p = emit<aerogpu_cmd_destroy_shader>(AEROGPU_CMD_DESTROY_SHADER);
    if (!p) return kE_OUTOFMEMORY;
    p->shader_handle = handle;
    // The device unbinds a destroyed shader; so does the core (never rebinds it later).
    if (vs_ == handle) vs_ = 0;
    if (ps_ == handle) ps_ = 0;
    return kS_OK;
}

int32_t Device::set_shaders(uint32_t vs, uint32_t ps) {
    auto *p = emit<aerogpu_cmd_bind_shaders>(AEROGPU_CMD_BIND_SHADERS);
    if (!p) return kE_OUTOFMEMORY;
    p->vs = vs;
    p->ps = ps;
    vs_ = vs;
    ps_ = ps;
    return kS_OK;
}

// One SET_SHADER_CONSTANTS_* packet: `count` registers from `start` of `stage`, `bytes` of
// payload. `max` is the register file's size; a range outside it is INVALIDCALL.
int32_t Device::emit_constants(uint32_t opcode, uint32_t stage, uint32_t start, uint32_t count, uint32_t max,
                               const void *data, size_t bytes) {
    if (!data || count == 0 || start > max || count > max - start) return kD3DERR_INVALIDCALL;
    auto *p = emit<aerogpu_cmd_set_shader_constants>(opcode, data, bytes);
    if (!p) return kE_OUTOFMEMORY;
    p->stage = stage;
    p->start_register = start;
    p->count = count;
    return kS_OK;
}

int32_t Device::set_shader_constants_f(uint32_t stage, uint32_t start, const float *v, uint32_t count) {
    // Up to 4 KiB (a state block applies whole register files): ends a batch that would
    // not take it rather than overflow the runtime's command buffer.
    if (v && count != 0 && start <= AEROGPU_MAX_SHADER_CONSTANTS_F && count <= AEROGPU_MAX_SHADER_CONSTANTS_F - start)
        ensure_room(sizeof(aerogpu_cmd_set_shader_constants) + size_t(count) * 16);
    return emit_constants(AEROGPU_CMD_SET_SHADER_CONSTANTS_F, stage, start, count, AEROGPU_MAX_SHADER_CONSTANTS_F, v,
                          size_t(count) * 16);
}

int32_t Device::set_shader_constants_i(uint32_t stage, uint32_t start, const int32_t *v, uint32_t count) {
    return emit_constants(AEROGPU_CMD_SET_SHADER_CONSTANTS_I, stage, start, count, AEROGPU_MAX_SHADER_CONSTANTS_I, v,
                          size_t(count) * 16);
}

int32_t Device::set_shader_constants_b(uint32_t stage, uint32_t start, const uint32_t *v, uint32_t count) {
    // BOOL registers go out as 0/1.
    uint32_t bits[AEROGPU_MAX_SHADER_CONSTANTS_B];
    const uint32_t *data = nullptr;
    if (v && count <= AEROGPU_MAX_SHADER_CONSTANTS_B) {
        for (uint32_t i = 0; i < count; i++) bits[i] = v[i] ? 1u : 0u;
        data = bits;
    }
    return emit_constants(AEROGPU_CMD_SET_SHADER_CONSTANTS_B, stage, start, count, AEROGPU_MAX_SHADER_CONSTANTS_B, data,
                          size_t(count) * 4);
}

uint32_t Device::create_vertex_decl(const void *elements, size_t bytes) {
    out_of_handles_ = false;
    if (!elements || bytes == 0 || bytes % 8 || bytes > AEROGPU_MAX_INPUT_LAYOUT_ELEMENTS * 8) return 0;
    uint32_t h = new_handle();
    if (!h) return 0;
    auto *p = emit<aerogpu_cmd_create_input_layout>(AEROGPU_CMD_CREATE_INPUT_LAYOUT, elements, bytes);
    if (!p) return 0;
    p->input_layout_handle = h;
    p->blob_size_bytes = static_cast<uint32_t>(bytes);
    return h;
}

int32_t Device::set_vertex_decl(uint32_t handle) {
    auto *p = emit<aerogpu_cmd_set_input_layout>(AEROGPU_CMD_SET_INPUT_LAYOUT);
    if (!p) return kE_OUTOFMEMORY;
    p->input_layout_handle = handle;
    decl_ = handle;
    return kS_OK;
}

int32_t Device::set_render_state(uint32_t state, uint32_t value) {
    // Unknown/unsupported states are forwarded raw for the executor to interpret. The
    // packet first: the first packet of a device sends the defaults, cache included.
    auto *p = emit<aerogpu_cmd_set_render_state>(AEROGPU_CMD_SET_RENDER_STATE);
    if (!p) return kE_OUTOFMEMORY;
    p->state = state;
    p->value = value;
    if (state < 256) {
        rs_[state] = value;
        switch (state) {
        case RS_ALPHABLENDENABLE: case RS_SRCBLEND: case RS_DESTBLEND: case RS_BLENDOP:
        case RS_COLORWRITEENABLE: case RS_SEPARATEALPHABLENDENABLE: case RS_SRCBLENDALPHA:
        case RS_DESTBLENDALPHA: case RS_BLENDOPALPHA:
            blend_dirty_ = true; break;
        case RS_ZENABLE: case RS_ZWRITEENABLE: case RS_ZFUNC: case RS_STENCILENABLE:
        case RS_STENCILMASK: case RS_STENCILWRITEMASK:
            depth_dirty_ = true; break;
        case RS_FILLMODE: case RS_CULLMODE: case RS_SCISSORTESTENABLE: case RS_DEPTHBIAS:
            raster_dirty_ = true; break;
        default: break;
        }
    }
    return kS_OK;
}

uint32_t Device::render_state(uint32_t state) const { return state < 256 ? rs_[state] : 0; }

int32_t Device::set_sampler_state(uint32_t stage, uint32_t state, uint32_t value) {
    if (stage >= AEROGPU_MAX_TEXTURE_SLOTS) return kD3DERR_INVALIDCALL;
    auto *p = emit<aerogpu_cmd_set_sampler_state>(AEROGPU_CMD_SET_SAMPLER_STATE);
    if (!p) return kE_OUTOFMEMORY;
    p->shader_stage = AEROGPU_SHADER_STAGE_PIXEL;
    p->slot = stage;
    p->state = state;
    p->value = value;
    if (state < kSamplerStates) samp_[stage][state] = value;
    return kS_OK;
}

int32_t Device::set_texture_stage_state(uint32_t stage, uint32_t state, uint32_t value) {
    if (stage >= AEROGPU_MAX_TEXTURE_STAGES || !device_texture_stage_state(state)) return kD3DERR_INVALIDCALL;
    auto *p = emit<aerogpu_cmd_set_texture_stage_state>(AEROGPU_CMD_SET_TEXTURE_STAGE_STATE);
    if (!p) return kE_OUTOFMEMORY;
    p->stage = stage;
    p->state = state;
    p->value = value;
    return kS_OK;
}

uint32_t Device::sampler_state(uint32_t stage, uint32_t state) const {
    return (stage < AEROGPU_MAX_TEXTURE_SLOTS && state < kSamplerStates) ? samp_[stage][state] : 0;
}

int32_t Device::set_texture(uint32_t stage, uint32_t handle) {
    if (stage >= AEROGPU_MAX_TEXTURE_SLOTS || (handle && !find(handle))) return kD3DERR_INVALIDCALL;
    auto *p = emit<aerogpu_cmd_set_texture>(AEROGPU_CMD_SET_TEXTURE);
    if (!p) return kE_OUTOFMEMORY;
    p->shader_stage = AEROGPU_SHADER_STAGE_PIXEL;
    p->slot = stage;
    p->texture = handle;
    tex_[stage] = handle;
    return kS_OK;
}

int32_t Device::set_stream_source(uint32_t stream, uint32_t handle, uint32_t offset, uint32_t stride) {
    if (stream >= AEROGPU_MAX_VERTEX_BUFFERS || (handle && !find(handle))) return kD3DERR_INVALIDCALL;
    aerogpu_vertex_buffer_binding b{};
    b.buffer = handle;
    b.stride_bytes = stride;
    b.offset_bytes = offset;
    auto *p = emit<aerogpu_cmd_set_vertex_buffers>(AEROGPU_CMD_SET_VERTEX_BUFFERS, &b, sizeof(b));
    if (!p) return kE_OUTOFMEMORY;
    p->start_slot = stream;
    p->buffer_count = 1;
    vb_[stream] = StreamBinding{handle, offset, stride};
    return kS_OK;
}

int32_t Device::set_indices(uint32_t handle, bool index32, uint32_t offset) {
    if (handle && !find(handle)) return kD3DERR_INVALIDCALL;
    auto *p = emit<aerogpu_cmd_set_index_buffer>(AEROGPU_CMD_SET_INDEX_BUFFER);
    if (!p) return kE_OUTOFMEMORY;
    p->buffer = handle;
    p->format = index32 ? AEROGPU_INDEX_FORMAT_UINT32 : AEROGPU_INDEX_FORMAT_UINT16;
    p->offset_bytes = offset;
    ib_ = handle;
    ib32_ = index32;
    return kS_OK;
}

int32_t Device::set_render_target(uint32_t index, uint32_t handle) {
    if (index >= kMaxSimultaneousRTs || (handle && !find(handle))) return kD3DERR_INVALIDCALL;
    rts_[index] = handle;
    return emit_render_targets();
}

int32_t Device::emit_render_targets() {
    uint32_t count = 0;
    for (uint32_t i = 0; i < AEROGPU_MAX_RENDER_TARGETS; i++) if (rts_[i]) count = i + 1;
    auto *p = emit<aerogpu_cmd_set_render_targets>(AEROGPU_CMD_SET_RENDER_TARGETS);
    if (!p) return kE_OUTOFMEMORY;
    p->color_count = count;
    p->depth_stencil = ds_;
    for (uint32_t i = 0; i < count; i++) p->colors[i] = rts_[i];
    return kS_OK;
}

int32_t Device::set_depth_stencil(uint32_t handle) {
    if (handle && !find(handle)) return kD3DERR_INVALIDCALL;
    ds_ = handle;
    return set_render_target(0, rts_[0]);
}

int32_t Device::set_viewport(float x, float y, float w, float h, float zmin, float zmax) {
    auto *p = emit<aerogpu_cmd_set_viewport>(AEROGPU_CMD_SET_VIEWPORT);
    if (!p) return kE_OUTOFMEMORY;
    p->x_f32 = f32_bits(x);
    p->y_f32 = f32_bits(y);
    p->width_f32 = f32_bits(w);
    p->height_f32 = f32_bits(h);
    p->min_depth_f32 = f32_bits(zmin);
    p->max_depth_f32 = f32_bits(zmax);
    const float v[6] = {x, y, w, h, zmin, zmax};
    std::memcpy(vp_, v, sizeof(vp_));
    has_vp_ = true;
    return kS_OK;
}

int32_t Device::set_scissor(int32_t x, int32_t y, int32_t w, int32_t h) {
    if (w < 0 || h < 0) return kD3DERR_INVALIDCALL;
    auto *p = emit<aerogpu_cmd_set_scissor>(AEROGPU_CMD_SET_SCISSOR);
    if (!p) return kE_OUTOFMEMORY;
    p->x = x;
    p->y = y;
    p->width = w;
    p->height = h;
    scissor_[0] = x;
    scissor_[1] = y;
    scissor_[2] = w;
    scissor_[3] = h;
    has_scissor_ = true;
    return kS_OK;
}

int32_t Device::destroy_vertex_decl(uint32_t handle) {
    auto *p = emit<aerogpu_cmd_destroy_input_layout>(AEROGPU_CMD_DESTROY_INPUT_LAYOUT);
    if (!p) return kE_OUTOFMEMORY;
    p->input_layout_handle = handle;
    if (decl_ == handle) decl_ = 0;
    return kS_OK;
}

void Device::emit_pipeline_state() {
    if (blend_dirty_) {
        auto *p = emit<aerogpu_cmd_set_blend_state>(AEROGPU_CMD_SET_BLEND_STATE);
        if (p) {
            bool sep = rs_[RS_SEPARATEALPHABLENDENABLE] != 0;
            p->enable = rs_[RS_ALPHABLENDENABLE] ? 1 : 0;
            p->src_factor = map_blend(rs_[RS_SRCBLEND]);
            p->dst_factor = map_blend(rs_[RS_DESTBLEND]);
            p->blend_op = map_blend_op(rs_[RS_BLENDOP]);
            p->src_factor_alpha = map_blend(sep ? rs_[RS_SRCBLENDALPHA] : rs_[RS_SRCBLEND]);
            p->dst_factor_alpha = map_blend(sep ? rs_[RS_DESTBLENDALPHA] : rs_[RS_DESTBLEND]);
            p->blend_op_alpha = map_blend_op(sep ? rs_[RS_BLENDOPALPHA] : rs_[RS_BLENDOP]);
            p->color_write_mask = rs_[RS_COLORWRITEENABLE] & 0xF;
            blend_dirty_ = false;
        }
    }
    if (depth_dirty_) {
        auto *p = emit<aerogpu_cmd_set_depth_stencil_state>(AEROGPU_CMD_SET_DEPTH_STENCIL_STATE);
        if (p) {
            p->depth_enable = rs_[RS_ZENABLE] ? 1 : 0;
            p->depth_write_enable = rs_[RS_ZWRITEENABLE] ? 1 : 0;
            p->depth_func = map_cmp(rs_[RS_ZFUNC]);
            p->stencil_enable = rs_[RS_STENCILENABLE] ? 1 : 0;
            p->stencil_read_mask = rs_[RS_STENCILMASK] & 0xFF;
            p->stencil_write_mask = rs_[RS_STENCILWRITEMASK] & 0xFF;
            depth_dirty_ = false;
        }
    }
    if (raster_dirty_) {
        auto *p = emit<aerogpu_cmd_set_rasterizer_state>(AEROGPU_CMD_SET_RASTERIZER_STATE);
        if (p) {
            p->fill_mode = rs_[RS_FILLMODE] == 2 ? AEROGPU_FILL_WIREFRAME : AEROGPU_FILL_SOLID;
            // D3D9: clockwise triangles are front-facing; D3DCULL_CCW culls the back.
            p->cull_mode = rs_[RS_CULLMODE] == 1 ? AEROGPU_CULL_NONE
                           : rs_[RS_CULLMODE] == 2 ? AEROGPU_CULL_FRONT : AEROGPU_CULL_BACK;
            p->front_ccw = 0;
            p->scissor_enable = rs_[RS_SCISSORTESTENABLE] ? 1 : 0;
            int32_t bias;
            std::memcpy(&bias, &rs_[RS_DEPTHBIAS], 4);
            p->depth_bias = bias;
            raster_dirty_ = false;
        }
    }
}

int32_t Device::draw_checks() {
    if (!vs_ || !ps_ || !decl_) return kD3DERR_INVALIDCALL;
    // The pipeline state, topology and draw packets in one batch with the references below.
    ensure_room(sizeof(aerogpu_cmd_set_blend_state) + sizeof(aerogpu_cmd_set_depth_stencil_state) +
                sizeof(aerogpu_cmd_set_rasterizer_state) + sizeof(aerogpu_cmd_set_primitive_topology) +
                sizeof(aerogpu_cmd_draw_indexed));
    emit_pipeline_state();
    // Everything the draw touches must be resolvable in this batch's allocation table.
    for (uint32_t h : rts_) if (h) reference(h, true);
    if (ds_) reference(ds_, true);
    for (const StreamBinding &b : vb_) if (b.handle) reference(b.handle, false);
    for (uint32_t h : tex_) if (h) reference(h, false);
    return kS_OK;
}

int32_t Device::clear(uint32_t flags, const float rgba[4], float z, uint32_t stencil) {
    auto *p = emit<aerogpu_cmd_clear>(AEROGPU_CMD_CLEAR);
    if (!p) return kE_OUTOFMEMORY;
    p->flags = flags;
    for (int i = 0; i < 4; i++) p->color_rgba_f32[i] = f32_bits(rgba ? rgba[i] : 0.0f);
    p->depth_f32 = f32_bits(z);
    p->stencil = stencil;
    for (uint32_t h : rts_) if (h) reference(h, true);
    if (ds_) reference(ds_, true);
    return kS_OK;
}

int32_t Device::draw_primitive(uint32_t prim, uint32_t start, uint32_t count) {
    uint32_t verts = vertex_count_for(prim, count);
    if (!verts) return kD3DERR_INVALIDCALL;
    int32_t hr = draw_checks();
    if (hr != kS_OK) return hr;
    if (topology_ != prim) {
        auto *t = emit<aerogpu_cmd_set_primitive_topology>(AEROGPU_CMD_SET_PRIMITIVE_TOPOLOGY);
        if (!t) return kE_OUTOFMEMORY;
        t->topology = prim;
        topology_ = prim;
    }
    auto *p = emit<aerogpu_cmd_draw>(AEROGPU_CMD_DRAW);
    if (!p) return kE_OUTOFMEMORY;
    p->vertex_count = verts;
    p->instance_count = 1;
    p->first_vertex = start;
    return kS_OK;
}

int32_t Device::draw_indexed(uint32_t prim, int32_t base_vertex, uint32_t start_index, uint32_t count) {
    uint32_t idx = vertex_count_for(prim, count);
    if (!idx || !ib_) return kD3DERR_INVALIDCALL;
    int32_t hr = draw_checks();
    if (hr != kS_OK) return hr;
    reference(ib_, false);
    if (topology_ != prim) {
        auto *t = emit<aerogpu_cmd_set_primitive_topology>(AEROGPU_CMD_SET_PRIMITIVE_TOPOLOGY);
        if (!t) return kE_OUTOFMEMORY;
        t->topology = prim;
        topology_ = prim;
    }
    auto *p = emit<aerogpu_cmd_draw_indexed>(AEROGPU_CMD_DRAW_INDEXED);
    if (!p) return kE_OUTOFMEMORY;
    p->index_count = idx;
    p->instance_count = 1;
    p->first_index = start_index;
    p->base_vertex = base_vertex;
    return kS_OK;
}

uint64_t Device::flush(bool present) {
    if (cmd_.error() != CmdError::None) {
        // A failed append left the batch incomplete: drop it rather than submit half.
        cmd_.reset();
        allocs_.clear();
        return 0;
    }
    if (cmd_.empty()) return 0;
    Submission s{cmd_.finish(), cmd_.size(), &allocs_, present};
    uint64_t fence = sink_.submit(s);
    if (fence) last_fence_ = fence;
    cmd_.reset();
    allocs_.clear();
    return fence;
}

int32_t Device::set_max_frame_latency(uint32_t n) {
    if (n > 16) return kD3DERR_INVALIDCALL;
    max_latency_ = n ? n : 3; // 0 restores the default
    return kS_OK;
}

void Device::retire_presents() {
    uint64_t done = sink_.completed_fence();
    size_t n = 0;
    while (n < inflight_presents_.size() && inflight_presents_[n].fence <= done) n++;
    if (n == 0) return;
    // Presents complete in submission order: the newest retired one is what the screen shows.
    const InflightPresent &last = inflight_presents_[n - 1];
    uint64_t vb = 0, ts = 0;
    bool have_vblank = sink_.vblank(&vb, &ts);
    stats_.present_count = last.ordinal;
    stats_.present_refresh_count = have_vblank ? uint32_t(vb) : last.ordinal;
    if (have_vblank) {
        stats_.sync_refresh_count = uint32_t(vb);
        stats_.sync_qpc_time = ts;
    } else {
        stats_.sync_refresh_count = last.ordinal;
    }
    inflight_presents_.erase(inflight_presents_.begin(), inflight_presents_.begin() + long(n));
}

uint32_t Device::presents_in_flight() {
    retire_presents();
    return static_cast<uint32_t>(inflight_presents_.size());
}

PresentStats Device::present_stats() {
    retire_presents();
    uint64_t vb = 0, ts = 0;
    // The sync sample advances with the vblank counter even without new presents.
    if (sink_.vblank(&vb, &ts) && uint32_t(vb) >= stats_.sync_refresh_count && ts >= stats_.sync_qpc_time) {
        stats_.sync_refresh_count = uint32_t(vb);
        stats_.sync_qpc_time = ts;
    }
    return stats_;
}

int32_t Device::present_ex(uint32_t d3d9_flags, bool vsync) {
    retire_presents();
    if (inflight_presents_.size() >= max_latency_) {
        if (d3d9_flags & kD3DPRESENT_DONOTWAIT) return kD3DERR_WASSTILLDRAWING;
        // Wait for the oldest present; on timeout stop tracking it and go on.
        while (inflight_presents_.size() >= max_latency_) {
            sink_.wait_fence(inflight_presents_.front().fence, kPresentWaitMs);
            size_t before = inflight_presents_.size();
            retire_presents();
            if (inflight_presents_.size() == before) inflight_presents_.erase(inflight_presents_.begin());
        }
    }
    auto *p = emit<aerogpu_cmd_present_ex>(AEROGPU_CMD_PRESENT_EX);
    if (!p) return kE_OUTOFMEMORY;
    p->scanout_id = 0;
    p->flags = vsync ? AEROGPU_PRESENT_FLAG_VSYNC : 0;
    p->d3d9_present_flags = d3d9_flags;
    for (uint32_t h : rts_) if (h) reference(h, false);
    uint64_t fence = flush(true);
    if (!fence) return kD3DERR_INVALIDCALL;
    present_count_++;
    inflight_presents_.push_back(InflightPresent{fence, present_count_});
    return kS_OK;
}

uint32_t Device::create_query() {
    size_t i = 0;
    while (i < queries_.size() && queries_[i].live) i++;
    if (i == queries_.size()) queries_.emplace_back();
    queries_[i] = Query{0, true, false};
    return static_cast<uint32_t>(i + 1);
}

int32_t Device::destroy_query(uint32_t q) {
    if (!query_exists(q)) return kD3DERR_INVALIDCALL;
    queries_[q - 1] = Query{};
    return kS_OK;
}

int32_t Device::issue_query(uint32_t q) {
    if (!query_exists(q)) return kD3DERR_INVALIDCALL;
    // EVENT: completes when everything submitted so far completes.
    uint64_t f = flush();
    queries_[q - 1].fence = f ? f : last_fence_;
    queries_[q - 1].issued = true;
    return kS_OK;
}

int32_t Device::get_query_data(uint32_t q, uint32_t flags) {
    if (!query_exists(q) || !queries_[q - 1].issued) return kD3DERR_INVALIDCALL;
    if (flags & kD3DGETDATA_FLUSH) flush();
    // Never blocks: DWM polls this while holding compositor locks.
    return sink_.completed_fence() >= queries_[q - 1].fence ? kS_OK : kS_FALSE;
}

} // namespace aerogpu
