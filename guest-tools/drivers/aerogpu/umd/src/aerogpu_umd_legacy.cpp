// Cached legacy D3D9 state (portable; see aerogpu_umd_legacy.h).
#include "aerogpu_umd_legacy.h"

#include <cstring>

#include "aerogpu_umd_core.h"

namespace aerogpu {

namespace {

// D3DTEXTURESTAGESTATETYPE values with non-zero defaults, and D3DTEXTUREOP/D3DTA values.
enum : uint32_t {
    TSS_COLOROP = 1, TSS_COLORARG1 = 2, TSS_COLORARG2 = 3, TSS_ALPHAOP = 4, TSS_ALPHAARG1 = 5,
    TSS_ALPHAARG2 = 6, TSS_TEXCOORDINDEX = 11, TSS_ADDRESSU = 13, TSS_ADDRESSV = 14, TSS_MAGFILTER = 16,
    TSS_MINFILTER = 17, TSS_MAXANISOTROPY = 21, TSS_TEXTURETRANSFORMFLAGS = 24, TSS_ADDRESSW = 25,
    TSS_COLORARG0 = 26, TSS_ALPHAARG0 = 27, TSS_RESULTARG = 28,
    TOP_DISABLE = 1, TOP_SELECTARG1 = 2, TOP_MODULATE = 4, TA_CURRENT = 1, TA_TEXTURE = 2,
    TADDRESS_WRAP = 1, TEXF_POINT = 1, LIGHT_DIRECTIONAL = 3,
};

Matrix4 identity() {
    Matrix4 m = {};
    m.m[0] = m.m[5] = m.m[10] = m.m[15] = 1.0f;
    return m;
}

Light default_light() {
    Light l;
    std::memset(&l, 0, sizeof(l));
    l.type = LIGHT_DIRECTIONAL;
    l.diffuse = ColorValue{1.0f, 1.0f, 1.0f, 0.0f};
    l.direction = Vector3{0.0f, 0.0f, 1.0f};
    return l;
}

// Vertex-pipeline texture stage states (the rest belong to the pixel state).
bool vertex_stage_state(uint32_t state) { return state == TSS_TEXCOORDINDEX || state == TSS_TEXTURETRANSFORMFLAGS; }

} // namespace

LegacyState::LegacyState() {
    std::memset(tss_, 0, sizeof(tss_));
    for (uint32_t s = 0; s < kStages; s++) {
        uint32_t *t = tss_[s];
        t[TSS_COLOROP] = s == 0 ? TOP_MODULATE : TOP_DISABLE;
        t[TSS_ALPHAOP] = s == 0 ? TOP_SELECTARG1 : TOP_DISABLE;
        t[TSS_COLORARG1] = t[TSS_ALPHAARG1] = TA_TEXTURE;
        t[TSS_COLORARG2] = t[TSS_ALPHAARG2] = TA_CURRENT;
        t[TSS_COLORARG0] = t[TSS_ALPHAARG0] = t[TSS_RESULTARG] = TA_CURRENT;
        t[TSS_TEXCOORDINDEX] = s;
        t[TSS_ADDRESSU] = t[TSS_ADDRESSV] = t[TSS_ADDRESSW] = TADDRESS_WRAP;
        t[TSS_MAGFILTER] = t[TSS_MINFILTER] = TEXF_POINT;
        t[TSS_MAXANISOTROPY] = 1;
    }
    for (uint32_t &f : stream_freq_) f = 1;
}

void LegacyState::record(LegacyKind kind, uint32_t index) {
    if (recording_) recording_->slots_.insert(LegacyKey{kind, index});
}

LegacyState &LegacyState::target() { return recording_ ? recording_->values_ : *this; }

int32_t LegacyState::set_texture_stage_state(uint32_t stage, uint32_t state, uint32_t value) {
    if (stage >= kStages || state >= kStageStates) return kD3DERR_INVALIDCALL;
    target().tss_[stage][state] = value;
    record(LegacyKind::TextureStage, stage << 8 | state);
    return kS_OK;
}

uint32_t LegacyState::texture_stage_state(uint32_t stage, uint32_t state) const {
    return (stage < kStages && state < kStageStates) ? tss_[stage][state] : 0;
}

int32_t LegacyState::set_render_state(uint32_t state, uint32_t value) {
    if (state == kRsSoftwareVertexProcessing) target().rs_swvp_ = value;
    else if (state == kRsPatchSegments) target().rs_patch_segments_ = value;
    else return kD3DERR_INVALIDCALL;
    record(LegacyKind::RenderState, state);
    return kS_OK;
}

uint32_t LegacyState::render_state(uint32_t state) const {
    return state == kRsSoftwareVertexProcessing ? rs_swvp_ : state == kRsPatchSegments ? rs_patch_segments_ : 0;
}

int32_t LegacyState::set_transform(uint32_t type, const Matrix4 &m) {
    if (type >= kTransformTypes) return kD3DERR_INVALIDCALL;
    target().transforms_[type] = m;
    record(LegacyKind::Transform, type);
    return kS_OK;
}

int32_t LegacyState::multiply_transform(uint32_t type, const Matrix4 &m) {
    if (type >= kTransformTypes) return kD3DERR_INVALIDCALL;
    Matrix4 a = transform(type), r;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            float s = 0.0f;
            for (int k = 0; k < 4; k++) s += a.m[i * 4 + k] * m.m[k * 4 + j];
            r.m[i * 4 + j] = s;
        }
    transforms_[type] = r;
    return kS_OK;
}

Matrix4 LegacyState::transform(uint32_t type) const {
    auto it = transforms_.find(type);
    return it == transforms_.end() ? identity() : it->second;
}

int32_t LegacyState::set_clip_plane(uint32_t index, const float plane[4]) {
    if (index >= kClipPlanes || !plane) return kD3DERR_INVALIDCALL;
    std::memcpy(target().clip_planes_[index], plane, sizeof(clip_planes_[index]));
    record(LegacyKind::ClipPlane, index);
    return kS_OK;
}

bool LegacyState::clip_plane(uint32_t index, float plane[4]) const {
    if (index >= kClipPlanes) return false;
    std::memcpy(plane, clip_planes_[index], sizeof(clip_planes_[index]));
    return true;
}

int32_t LegacyState::set_stream_source_freq(uint32_t stream, uint32_t divider) {
    if (stream >= kStreams) return kD3DERR_INVALIDCALL;
    target().stream_freq_[stream] = divider;
    record(LegacyKind::StreamFreq, stream);
    return kS_OK;
}

uint32_t LegacyState::stream_source_freq(uint32_t stream) const { return stream < kStreams ? stream_freq_[stream] : 0; }

int32_t LegacyState::set_const_i(uint32_t stage, uint32_t start, const int32_t *v, uint32_t count) {
    if (stage > 1 || start > kConstIRegisters || count > kConstIRegisters - start || (count && !v))
        return kD3DERR_INVALIDCALL;
    for (uint32_t i = 0; i < count; i++) {
        std::memcpy(target().const_i_[stage][start + i], v + 4 * i, sizeof(const_i_[stage][start + i]));
        record(LegacyKind::ConstI, stage << 16 | (start + i));
    }
    return kS_OK;
}

bool LegacyState::const_i(uint32_t stage, uint32_t reg, int32_t out[4]) const {
    if (stage > 1 || reg >= kConstIRegisters) return false;
    std::memcpy(out, const_i_[stage][reg], sizeof(const_i_[stage][reg]));
    return true;
}

int32_t LegacyState::set_const_b(uint32_t stage, uint32_t start, const uint32_t *v, uint32_t count) {
    if (stage > 1 || start > kConstBRegisters || count > kConstBRegisters - start || (count && !v))
        return kD3DERR_INVALIDCALL;
    for (uint32_t i = 0; i < count; i++) {
        target().const_b_[stage][start + i] = v[i] ? 1u : 0u; // BOOL: any non-zero is TRUE
        record(LegacyKind::ConstB, stage << 16 | (start + i));
    }
    return kS_OK;
}

uint32_t LegacyState::const_b(uint32_t stage, uint32_t reg) const {
    return (stage <= 1 && reg < kConstBRegisters) ? const_b_[stage][reg] : 0;
}

int32_t LegacyState::ensure_light(uint32_t index, LightSlot **out) {
    auto it = lights_.find(index);
    if (it == lights_.end()) {
        if (lights_.size() >= kMaxLights) return kE_OUTOFMEMORY;
        it = lights_.emplace(index, LightSlot{default_light(), false}).first;
    }
    *out = &it->second;
    return kS_OK;
}

int32_t LegacyState::create_light(uint32_t index) {
    LightSlot *s = nullptr;
    return ensure_light(index, &s);
}

int32_t LegacyState::destroy_light(uint32_t index) { return lights_.erase(index) ? kS_OK : kD3DERR_INVALIDCALL; }

int32_t LegacyState::set_light(uint32_t index, const Light &l) {
    LightSlot *s = nullptr;
    int32_t r = target().ensure_light(index, &s);
    if (r != kS_OK) return r;
    s->light = l;
    record(LegacyKind::LightData, index);
    return kS_OK;
}

int32_t LegacyState::set_light_enable(uint32_t index, bool enable) {
    LightSlot *s = nullptr;
    int32_t r = target().ensure_light(index, &s);
    if (r != kS_OK) return r;
    s->enabled = enable;
    record(LegacyKind::LightEnable, index);
    return kS_OK;
}

bool LegacyState::light(uint32_t index, Light *out) const {
    auto it = lights_.find(index);
    if (it == lights_.end()) return false;
    *out = it->second.light;
    return true;
}

bool LegacyState::light_enabled(uint32_t index) const {
    auto it = lights_.find(index);
    return it != lights_.end() && it->second.enabled;
}

uint32_t LegacyState::enabled_lights(uint32_t *indices, uint32_t max) const {
    uint32_t n = 0;
    for (const auto &l : lights_)
        if (l.second.enabled && n < max) indices[n++] = l.first;
    return n;
}

int32_t LegacyState::set_material(const Material &m) {
    target().material_ = m;
    record(LegacyKind::Material, 0);
    return kS_OK;
}

void LegacyState::set_w_info(float wnear, float wfar) {
    w_near_ = wnear;
    w_far_ = wfar;
}

void LegacyState::w_info(float *wnear, float *wfar) const {
    *wnear = w_near_;
    *wfar = w_far_;
}

int32_t LegacyState::update_palette(uint32_t palette, uint32_t start, uint32_t count, const PaletteEntry *entries) {
    if (start > kPaletteEntries || count > kPaletteEntries - start || (count && !entries))
        return kD3DERR_INVALIDCALL;
    auto it = palettes_.find(palette);
    if (it == palettes_.end()) {
        if (palettes_.size() >= kMaxPalettes) return kE_OUTOFMEMORY;
        it = palettes_.emplace(palette, Palette{}).first;
    }
    std::memcpy(it->second.e + start, entries, count * sizeof(PaletteEntry));
    return kS_OK;
}

bool LegacyState::palette_entry(uint32_t palette, uint32_t index, PaletteEntry *out) const {
    auto it = palettes_.find(palette);
    if (it == palettes_.end() || index >= kPaletteEntries) return false;
    *out = it->second.e[index];
    return true;
}

int32_t LegacyState::set_palette(uint32_t resource, uint32_t palette, uint32_t flags) {
    ResourceProps &p = resources_[resource];
    p.palette = palette; // 0 detaches the texture from its palette
    p.palette_flags = palette ? flags : 0;
    return kS_OK;
}

uint32_t LegacyState::resource_palette(uint32_t resource, uint32_t *flags) const {
    auto it = resources_.find(resource);
    if (flags) *flags = it == resources_.end() ? 0 : it->second.palette_flags;
    return it == resources_.end() ? 0 : it->second.palette;
}

void LegacyState::set_priority(uint32_t resource, uint32_t priority) { resources_[resource].priority = priority; }

uint32_t LegacyState::priority(uint32_t resource) const {
    auto it = resources_.find(resource);
    return it == resources_.end() ? 0 : it->second.priority;
}

void LegacyState::set_autogen_filter(uint32_t resource, uint32_t filter) {
    resources_[resource].autogen_filter = filter;
}

uint32_t LegacyState::autogen_filter(uint32_t resource) const {
    auto it = resources_.find(resource);
    return it == resources_.end() ? ResourceProps{}.autogen_filter : it->second.autogen_filter;
}

void LegacyState::forget_resource(uint32_t resource) { resources_.erase(resource); }

void LegacyState::copy_slot(const LegacyState &src, LegacyKey k) {
    const uint32_t i = k.index;
    switch (k.kind) {
    case LegacyKind::TextureStage:
        if ((i >> 8) < kStages && (i & 0xFF) < kStageStates) tss_[i >> 8][i & 0xFF] = src.tss_[i >> 8][i & 0xFF];
        break;
    case LegacyKind::RenderState:
        if (is_legacy_render_state(i)) {
            if (i == kRsSoftwareVertexProcessing) rs_swvp_ = src.rs_swvp_;
            else rs_patch_segments_ = src.rs_patch_segments_;
        }
        break;
    case LegacyKind::Transform:
        if (i < kTransformTypes) transforms_[i] = src.transform(i);
        break;
    case LegacyKind::ClipPlane:
        if (i < kClipPlanes) std::memcpy(clip_planes_[i], src.clip_planes_[i], sizeof(clip_planes_[i]));
        break;
    case LegacyKind::StreamFreq:
        if (i < kStreams) stream_freq_[i] = src.stream_freq_[i];
        break;
    case LegacyKind::ConstI:
        if ((i >> 16) <= 1 && (i & 0xFFFF) < kConstIRegisters)
            std::memcpy(const_i_[i >> 16][i & 0xFFFF], src.const_i_[i >> 16][i & 0xFFFF], sizeof(const_i_[0][0]));
        break;
    case LegacyKind::ConstB:
        if ((i >> 16) <= 1 && (i & 0xFFFF) < kConstBRegisters)
            const_b_[i >> 16][i & 0xFFFF] = src.const_b_[i >> 16][i & 0xFFFF];
        break;
    case LegacyKind::LightData:
    case LegacyKind::LightEnable: {
        auto from = src.lights_.find(i);
        LightSlot *to = nullptr;
        if (from == src.lights_.end() || ensure_light(i, &to) != kS_OK) break;
        if (k.kind == LegacyKind::LightData) to->light = from->second.light;
        else to->enabled = from->second.enabled;
        break;
    }
    case LegacyKind::Material:
        material_ = src.material_;
        break;
    }
}

std::set<LegacyKey> LegacyState::slots_of_type(uint32_t type) const {
    // D3D9's lists: the pixel state holds the pixel-pipeline texture stage states and the
    // pixel shader's int/bool constants; the vertex state the vertex-pipeline stage states,
    // N-patch mode, lights and the vertex shader's constants; ALL holds everything.
    const bool all = type != kStateBlockPixel && type != kStateBlockVertex;
    const bool pixel = all || type == kStateBlockPixel, vertex = all || type == kStateBlockVertex;
    std::set<LegacyKey> s;
    for (uint32_t st = 0; st < kStages; st++)
        for (uint32_t t = 1; t < kStageStates; t++)
            if (vertex_stage_state(t) ? vertex : pixel) s.insert(LegacyKey{LegacyKind::TextureStage, st << 8 | t});
    if (vertex) {
        s.insert(LegacyKey{LegacyKind::RenderState, kRsPatchSegments});
        for (const auto &l : lights_) {
            s.insert(LegacyKey{LegacyKind::LightData, l.first});
            s.insert(LegacyKey{LegacyKind::LightEnable, l.first});
        }
    }
    for (uint32_t stage = 0; stage < 2; stage++) {
        if (stage == kLegacyStageVertex ? !vertex : !pixel) continue;
        for (uint32_t r = 0; r < kConstIRegisters; r++) s.insert(LegacyKey{LegacyKind::ConstI, stage << 16 | r});
        for (uint32_t r = 0; r < kConstBRegisters; r++) s.insert(LegacyKey{LegacyKind::ConstB, stage << 16 | r});
    }
    if (all) {
        s.insert(LegacyKey{LegacyKind::RenderState, kRsSoftwareVertexProcessing});
        s.insert(LegacyKey{LegacyKind::Material, 0});
        for (uint32_t p = 0; p < kClipPlanes; p++) s.insert(LegacyKey{LegacyKind::ClipPlane, p});
        for (uint32_t st = 0; st < kStreams; st++) s.insert(LegacyKey{LegacyKind::StreamFreq, st});
        // View, projection, the 8 texture transforms and world matrix 0, plus every other
        // world matrix ever set (the rest are identity).
        for (uint32_t t : {2u, 3u, 16u, 17u, 18u, 19u, 20u, 21u, 22u, 23u, 256u})
            s.insert(LegacyKey{LegacyKind::Transform, t});
        for (const auto &t : transforms_) s.insert(LegacyKey{LegacyKind::Transform, t.first});
    }
    return s;
}

void LegacyBlock::add(const LegacyState &dev, LegacyKey k) {
    slots_.insert(k);
    values_.copy_slot(dev, k);
}

void LegacyBlock::snapshot(const LegacyState &dev, uint32_t type) {
    for (const LegacyKey &k : dev.slots_of_type(type)) add(dev, k);
}

void LegacyBlock::capture(const LegacyState &dev) {
    for (const LegacyKey &k : slots_) values_.copy_slot(dev, k);
}

void LegacyBlock::apply(LegacyState &dev) const {
    for (const LegacyKey &k : slots_) dev.copy_slot(values_, k);
}

} // namespace aerogpu
