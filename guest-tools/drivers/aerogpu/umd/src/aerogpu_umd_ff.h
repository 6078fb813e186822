// The D3D9 fixed-function pipeline as generated shaders. When the application has no
// vertex shader (or no pixel shader) bound, the UMD builds a vs_2_0 (ps_2_0) token stream
// from the cached fixed-function state (LegacyState: transforms, lights, material, texture
// stage states; the core's render states: lighting, material sources, fog, texture factor)
// and the bound vertex declaration, as real D3D9 drivers do. The device and its executors
// see ordinary shaders and constants; nothing new reaches the protocol.
//
// A generated shader depends only on its key (VsKey/PsKey: which inputs, lights by type,
// ops and arguments of each stage, fog mode); values (matrices, colours, light positions,
// fog range, texture factor) go in float constants, so changing them never makes a new
// shader. The DDI layer caches the shaders by key.
//
// Portable: unit-tested natively by umd/tests/test_umd_ff.cpp.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "aerogpu_umd_legacy.h"

namespace aerogpu {
namespace ff {

constexpr uint32_t kMaxStages = 8; // D3D9 texture blend stages
constexpr uint32_t kMaxLights = 8; // active lights (GetCaps MaxActiveLights)

// D3DVERTEXELEMENT9 / D3DDDIVERTEXELEMENT (8 bytes).
struct DeclElement {
    uint16_t stream, offset;
    uint8_t type, method, usage, usage_index;
};
static_assert(sizeof(DeclElement) == 8, "D3DVERTEXELEMENT9 layout");

// Everything the fixed-function pipeline reads at a draw.
struct Inputs {
    const LegacyState *legacy = nullptr;
    const uint32_t *render_states = nullptr; // D3DRENDERSTATETYPE 0..255
    const DeclElement *decl = nullptr;       // up to its D3DDECL_END (stream 0xFF) or decl_count
    uint32_t decl_count = 0;
    float viewport[6] = {0, 0, 1, 1, 0, 1}; // X, Y, Width, Height, MinZ, MaxZ
    uint32_t textures_bound = 0;            // bit s: stage s has a texture
    bool vertex_ff = true;                  // the vertex stage is ours too (fog needs it)
    bool pixel_ff = true;                   // the pixel stage is ours (else an app shader)
};

// What a generated vertex shader depends on. Plain bytes (zeroed, compared with memcmp).
struct VsKey {
    uint8_t position_t;    // D3DDECLUSAGE_POSITIONT: pre-transformed (XYZRHW) vertices
    uint8_t has_normal, has_diffuse, has_specular;
    uint8_t texcoord_sets; // bit n: TEXCOORDn in the declaration
    uint8_t lighting;
    uint8_t light_count;
    uint8_t light_type[kMaxLights]; // D3DLIGHTTYPE of the enabled lights, index order
    uint8_t local_viewer, normalize_normals, specular;
    // Effective D3DMCS_* sources (a vertex colour the declaration lacks is the material's).
    uint8_t diffuse_src, ambient_src, specular_src, emissive_src;
    uint8_t fog;       // Fog below
    uint8_t range_fog; // D3DRS_RANGEFOGENABLE (vertex fog distance from the eye, not z)
    uint8_t stage_count;
    uint8_t stage_coord[kMaxStages]; // TEXCOORDINDEX set per stage (0xFF: none in the decl)
    // D3DTSS_TEXTURETRANSFORMFLAGS of a stage whose set is in the declaration: D3DTTFF_COUNT1..4
    // (0: no transform) | 0x80 for D3DTTFF_PROJECTED; and the set's component count.
    uint8_t stage_transform[kMaxStages];
    uint8_t stage_coord_size[kMaxStages];
    // Texture-coordinate generation (TEXCOORDINDEX high word): 1 = D3DTSS_TCI_CAMERASPACENORMAL,
    // 2 = CAMERASPACEPOSITION, 0 = the set itself (reflection vectors and sphere maps are not
    // generated: they read the set).
    uint8_t stage_texgen[kMaxStages];
    uint8_t fog_reg; // oT# carrying fog (0xFF: none)
};

// Fog as the two stages split it.
enum Fog : uint8_t {
    kFogNone = 0,
    kFogVertexLinear = 1, // factor computed per vertex (D3DRS_FOGVERTEXMODE)
    kFogVertexExp = 2,
    kFogVertexExp2 = 3,
    kFogVertexSpecular = 4, // factor = specular alpha (pre-transformed vertices, mode NONE)
    kFogTableLinear = 5,    // per pixel from depth (D3DRS_FOGTABLEMODE): VS passes z and w
    kFogTableExp = 6,
    kFogTableExp2 = 7,
};

struct PsStage {
    uint8_t colorop, colorarg[3]; // arg[0] = ARG0, [1] = ARG1, [2] = ARG2 (D3DTA_*)
    uint8_t alphaop, alphaarg[3];
    uint8_t result_temp; // D3DTSS_RESULTARG is D3DTA_TEMP
    // A texture is bound. Without one, an op reading D3DTA_TEXTURE becomes SELECTARG1
    // CURRENT; what still reads it (BLENDTEXTUREALPHA's factor) reads opaque white.
    uint8_t texture;
    uint8_t projected;   // D3DTTFF_PROJECTED: the coordinates are divided by their w (texldp)
};

struct PsKey {
    uint8_t stage_count;
    PsStage stage[kMaxStages];
    uint8_t specular; // D3DRS_SPECULARENABLE: add the specular colour
    uint8_t fog;      // Fog
    uint8_t fog_w;    // table fog on eye-space w (perspective projection), else on z
    uint8_t fog_reg;  // t# carrying the fog factor / (z, w)
};

template <class K> struct KeyLess {
    bool operator()(const K &a, const K &b) const { return std::memcmp(&a, &b, sizeof(K)) < 0; }
};

// Keys of the current state. vertex_key fails (false) without a POSITION/POSITIONT element.
bool vertex_key(const Inputs &in, VsKey *out);
void pixel_key(const Inputs &in, PsKey *out);

// Token streams (version token first, END last).
std::vector<uint32_t> vertex_shader(const VsKey &k);
std::vector<uint32_t> pixel_shader(const PsKey &k);

// Float constants of the generated shaders for the current state: 4 floats per register,
// from register 0.
std::vector<float> vertex_constants(const Inputs &in, const VsKey &k);
std::vector<float> pixel_constants(const Inputs &in, const PsKey &k);

// Stage ops/args the generator does not model (BUMPENVMAP*, PREMODULATE): they select ARG1.
bool stage_op_supported(uint32_t op);

} // namespace ff
} // namespace aerogpu
