// Legacy D3D9 state the UMD caches but never emits: fixed-function texture stage states,
// transforms, clip planes, W-buffer range, N-patch segments, software vertex processing,
// stream source frequency, shader int/bool constants, lights and material (device state,
// part of state blocks), and palettes, resource priority and the autogen mip filter
// (resource properties, outside state blocks as in D3D9). None of this reaches the AeroGPU
// command stream as such: the fixed-function part is read at draws without app shaders to
// generate the shaders that stand in for it (aerogpu_umd_ff.cpp).
//
// Not here because no Windows 7 D3DDDI_DEVICEFUNCS entry carries them (the D3D9 runtime
// keeps them itself): clip status, gamma ramp (D3DKMTSetGammaRamp), cursor and dialog-box
// mode.
//
// Portable: unit-tested natively by umd/tests/test_umd_legacy.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>

namespace aerogpu {

struct Matrix4 {
    float m[16]; // D3DMATRIX, row-major
};
struct ColorValue {
    float r, g, b, a;
};
struct Vector3 {
    float x, y, z;
};
// D3DLIGHT9 / D3DDDI_LIGHT.
struct Light {
    uint32_t type; // D3DLIGHTTYPE
    ColorValue diffuse, specular, ambient;
    Vector3 position, direction;
    float range, falloff, attenuation0, attenuation1, attenuation2, theta, phi;
};
static_assert(sizeof(Light) == 104, "D3DLIGHT9 layout");
// D3DMATERIAL9 / D3DDDIARG_SETMATERIAL.
struct Material {
    ColorValue diffuse, ambient, specular, emissive;
    float power;
};
static_assert(sizeof(Material) == 68, "D3DMATERIAL9 layout");
struct PaletteEntry {
    uint8_t red, green, blue, flags; // PALETTEENTRY
};

// What a state block can hold of the legacy state; `index` names the slot (see LegacyState).
enum class LegacyKind : uint8_t {
    TextureStage, // stage << 8 | D3DTEXTURESTAGESTATETYPE
    RenderState,  // D3DRS_SOFTWAREVERTEXPROCESSING or D3DRS_PATCHSEGMENTS
    Transform,    // D3DTRANSFORMSTATETYPE
    ClipPlane,    // plane index
    StreamFreq,   // stream
    ConstI,       // shader stage << 16 | register
    ConstB,       // shader stage << 16 | register
    LightData,    // light index
    LightEnable,  // light index
    Material,     // 0
};

struct LegacyKey {
    LegacyKind kind;
    uint32_t index;
    bool operator<(const LegacyKey &o) const {
        return kind != o.kind ? kind < o.kind : index < o.index;
    }
};

// D3DSTATEBLOCKTYPE.
constexpr uint32_t kStateBlockAll = 1, kStateBlockPixel = 2, kStateBlockVertex = 3;
// Shader stages of the int/bool constants (AEROGPU_SHADER_STAGE_* numbering).
constexpr uint32_t kLegacyStageVertex = 0, kLegacyStagePixel = 1;

class LegacyBlock;

class LegacyState {
public:
    static constexpr uint32_t kStages = 16;           // texture stages (sampler range included)
    static constexpr uint32_t kStageStates = 33;      // D3DTSS_COLOROP (1) .. D3DTSS_CONSTANT (32)
    static constexpr uint32_t kTransformTypes = 512;  // up to D3DTS_WORLDMATRIX(255)
    static constexpr uint32_t kClipPlanes = 32;       // D3DMAXUSERCLIPPLANES
    static constexpr uint32_t kStreams = 16;
    static constexpr uint32_t kConstIRegisters = 16;  // int4 registers per stage (vs/ps 2.0+)
    static constexpr uint32_t kConstBRegisters = 16;
    static constexpr uint32_t kMaxLights = 4096;      // distinct light indices (guest-chosen)
    static constexpr uint32_t kMaxPalettes = 1024;    // distinct palette handles (guest-chosen)
    static constexpr uint32_t kPaletteEntries = 256;
    static constexpr uint32_t kRsSoftwareVertexProcessing = 153;
    static constexpr uint32_t kRsPatchSegments = 164; // N-patch mode (SetNPatchMode)

    LegacyState();

    // Render states held here instead of being forwarded to the core.
    static bool is_legacy_render_state(uint32_t state) {
        return state == kRsSoftwareVertexProcessing || state == kRsPatchSegments;
    }

    // Setters return an HRESULT (kS_OK, kD3DERR_INVALIDCALL for out-of-range slots,
    // kE_OUTOFMEMORY past the light/palette bounds); getters return D3D9's defaults for
    // slots never set. While a recording block is attached, every successful device-state
    // setter writes its slot into the block instead of the device (D3D9: recording does not
    // change the device state).
    int32_t set_texture_stage_state(uint32_t stage, uint32_t state, uint32_t value);
    uint32_t texture_stage_state(uint32_t stage, uint32_t state) const;
    int32_t set_render_state(uint32_t state, uint32_t value);
    uint32_t render_state(uint32_t state) const;
    int32_t set_transform(uint32_t type, const Matrix4 &m);
    // transform(type) := transform(type) * m (D3D9 MultiplyTransform). Like D3D9, not
    // recorded into a state block being recorded; the result is what blocks capture.
    int32_t multiply_transform(uint32_t type, const Matrix4 &m);
    Matrix4 transform(uint32_t type) const;
    int32_t set_clip_plane(uint32_t index, const float plane[4]);
    bool clip_plane(uint32_t index, float plane[4]) const;
    int32_t set_stream_source_freq(uint32_t stream, uint32_t divider);
    uint32_t stream_source_freq(uint32_t stream) const;
    // `count` registers of 4 ints (ConstI) or 1 BOOL (ConstB) from `start`.
    int32_t set_const_i(uint32_t stage, uint32_t start, const int32_t *v, uint32_t count);
    bool const_i(uint32_t stage, uint32_t reg, int32_t out[4]) const;
    int32_t set_const_b(uint32_t stage, uint32_t start, const uint32_t *v, uint32_t count);
    uint32_t const_b(uint32_t stage, uint32_t reg) const;
    int32_t create_light(uint32_t index);
    int32_t destroy_light(uint32_t index);
    int32_t set_light(uint32_t index, const Light &l);
    // Enabling a light that was never set creates D3D9's default light (white directional
    // light along +z).
    int32_t set_light_enable(uint32_t index, bool enable);
    bool light(uint32_t index, Light *out) const;
    bool light_enabled(uint32_t index) const;
    // Indices of the enabled lights in ascending order, at most `max` of them.
    uint32_t enabled_lights(uint32_t *indices, uint32_t max) const;
    size_t light_count() const { return lights_.size(); }
    int32_t set_material(const Material &m);
    Material material() const { return material_; }
    void set_w_info(float wnear, float wfar);
    void w_info(float *wnear, float *wfar) const;

    // Resource properties (never in state blocks). `resource` is the driver's handle.
    int32_t update_palette(uint32_t palette, uint32_t start, uint32_t count, const PaletteEntry *entries);
    bool palette_entry(uint32_t palette, uint32_t index, PaletteEntry *out) const;
    int32_t set_palette(uint32_t resource, uint32_t palette, uint32_t flags);
    uint32_t resource_palette(uint32_t resource, uint32_t *flags = nullptr) const;
    void set_priority(uint32_t resource, uint32_t priority);
    uint32_t priority(uint32_t resource) const;
    void set_autogen_filter(uint32_t resource, uint32_t filter);
    uint32_t autogen_filter(uint32_t resource) const; // D3DTEXF_LINEAR (2) by default
    // A destroyed resource's properties go with it.
    void forget_resource(uint32_t resource);

    // State-block recording (BeginStateBlock .. EndStateBlock): the block collects the
    // slots set meanwhile, the device keeps its values. The block must outlive the recording.
    void begin_record(LegacyBlock *block) { recording_ = block; }
    void end_record() { recording_ = nullptr; }
    bool recording() const { return recording_ != nullptr; }

    // Copies one slot's value from `src` (a light missing from `src` is left as it is).
    void copy_slot(const LegacyState &src, LegacyKey k);
    // The slots a predefined block of `type` holds now (CreateStateBlock).
    std::set<LegacyKey> slots_of_type(uint32_t type) const;

private:
    struct LightSlot {
        Light light;
        bool enabled;
    };
    void record(LegacyKind kind, uint32_t index);
    // Where setters write: the recording block's values, else this state.
    LegacyState &target();
    int32_t ensure_light(uint32_t index, LightSlot **out);

    uint32_t tss_[kStages][kStageStates];
    uint32_t rs_swvp_ = 0, rs_patch_segments_ = 0;
    std::map<uint32_t, Matrix4> transforms_; // absent: identity
    float clip_planes_[kClipPlanes][4] = {};
    uint32_t stream_freq_[kStreams];
    int32_t const_i_[2][kConstIRegisters][4] = {};
    uint32_t const_b_[2][kConstBRegisters] = {};
    std::map<uint32_t, LightSlot> lights_;
    Material material_ = {};
    float w_near_ = 0.0f, w_far_ = 1.0f;
    struct Palette {
        PaletteEntry e[kPaletteEntries];
    };
    std::map<uint32_t, Palette> palettes_;
    struct ResourceProps {
        uint32_t palette = 0, palette_flags = 0, priority = 0, autogen_filter = 2;
    };
    std::map<uint32_t, ResourceProps> resources_;
    LegacyBlock *recording_ = nullptr;
};

// The legacy part of one state block: the slots it holds and their values.
class LegacyBlock {
public:
    // Holds slot `k` with its current value in `dev` (recording, creation).
    void add(const LegacyState &dev, LegacyKey k);
    // CreateStateBlock: every slot of `type` with the device's values.
    void snapshot(const LegacyState &dev, uint32_t type);
    // CaptureStateBlock: re-reads every held slot from the device.
    void capture(const LegacyState &dev);
    // ApplyStateBlock: writes every held slot into the device (not recorded).
    void apply(LegacyState &dev) const;
    const std::set<LegacyKey> &slots() const { return slots_; }
    const LegacyState &values() const { return values_; }

private:
    friend class LegacyState; // recording writes into the block directly
    std::set<LegacyKey> slots_;
    LegacyState values_;
};

} // namespace aerogpu
