// The D3D9 fixed-function pipeline as generated vs_2_0/ps_2_0 shaders (portable; see
// aerogpu_umd_ff.h). The lighting and blending follow D3D9's documented equations (and
// Wine's d3d9, the suite's reference, where D3D9 leaves a choice: the non-local viewer
// looks along -z, specular needs N.L > 0).
#include "aerogpu_umd_ff.h"

#include <cmath>

extern "C" {
#include "../../protocol/aerogpu_cmd.h"
}

namespace aerogpu {
namespace ff {

namespace {

// D3D9 enumerations used here.
enum : uint32_t {
    RS_SPECULARENABLE = 29, RS_FOGENABLE = 28, RS_FOGCOLOR = 34, RS_FOGTABLEMODE = 35, RS_FOGSTART = 36,
    RS_FOGEND = 37, RS_FOGDENSITY = 38, RS_RANGEFOGENABLE = 48, RS_TEXTUREFACTOR = 60, RS_LIGHTING = 137,
    RS_AMBIENT = 139, RS_FOGVERTEXMODE = 140, RS_COLORVERTEX = 141, RS_LOCALVIEWER = 142,
    RS_NORMALIZENORMALS = 143, RS_DIFFUSEMATERIALSOURCE = 145, RS_SPECULARMATERIALSOURCE = 146,
    RS_AMBIENTMATERIALSOURCE = 147, RS_EMISSIVEMATERIALSOURCE = 148,
    FOG_NONE = 0, FOG_EXP = 1, FOG_EXP2 = 2, FOG_LINEAR = 3,
    TSS_COLOROP = 1, TSS_COLORARG1 = 2, TSS_COLORARG2 = 3, TSS_ALPHAOP = 4, TSS_ALPHAARG1 = 5,
    TSS_ALPHAARG2 = 6, TSS_TEXCOORDINDEX = 11, TSS_TEXTURETRANSFORMFLAGS = 24, TSS_COLORARG0 = 26, TSS_ALPHAARG0 = 27, TSS_RESULTARG = 28,
    TSS_CONSTANT = 32,
    TS_VIEW = 2, TS_PROJECTION = 3, TS_TEXTURE0 = 16, TS_WORLD = 256, TTFF_PROJECTED = 0x100,
    DECLUSAGE_POSITION = 0, DECLUSAGE_NORMAL = 3, DECLUSAGE_TEXCOORD = 5, DECLUSAGE_POSITIONT = 9,
    DECLUSAGE_COLOR = 10, DECLTYPE_UNUSED = 17,
    LIGHT_POINT = 1, LIGHT_SPOT = 2, LIGHT_DIRECTIONAL = 3,
};
// D3DTEXTUREOP.
enum : uint8_t {
    TOP_DISABLE = 1, TOP_SELECTARG1, TOP_SELECTARG2, TOP_MODULATE, TOP_MODULATE2X, TOP_MODULATE4X, TOP_ADD,
    TOP_ADDSIGNED, TOP_ADDSIGNED2X, TOP_SUBTRACT, TOP_ADDSMOOTH, TOP_BLENDDIFFUSEALPHA, TOP_BLENDTEXTUREALPHA,
    TOP_BLENDFACTORALPHA, TOP_BLENDTEXTUREALPHAPM, TOP_BLENDCURRENTALPHA, TOP_PREMODULATE,
    TOP_MODULATEALPHA_ADDCOLOR, TOP_MODULATECOLOR_ADDALPHA, TOP_MODULATEINVALPHA_ADDCOLOR,
    TOP_MODULATEINVCOLOR_ADDALPHA, TOP_BUMPENVMAP, TOP_BUMPENVMAPLUMINANCE, TOP_DOTPRODUCT3, TOP_MULTIPLYADD,
    TOP_LERP,
};
// D3DTA_*.
enum : uint8_t {
    TA_DIFFUSE = 0, TA_CURRENT = 1, TA_TEXTURE = 2, TA_TFACTOR = 3, TA_SPECULAR = 4, TA_TEMP = 5,
    TA_CONSTANT = 6, TA_SELECTMASK = 0xF, TA_COMPLEMENT = 0x10, TA_ALPHAREPLICATE = 0x20,
};

// ---- Token encoding (D3D9 shader bytecode) ----------------------------------------------
enum : uint32_t {
    OP_MOV = 1, OP_ADD = 2, OP_MAD = 4, OP_MUL = 5, OP_RCP = 6, OP_RSQ = 7, OP_DP3 = 8, OP_MAX = 11,
    OP_SLT = 12, OP_EXP = 14, OP_LRP = 18, OP_M4x4 = 20, OP_M3x3 = 23, OP_DCL = 31, OP_POW = 32, OP_NRM = 36,
    OP_DEF = 81, OP_TEXLD = 66, OP_END = 0xFFFF,
    R_TEMP = 0, R_INPUT = 1, R_CONST = 2, R_TEXTURE = 3, R_RASTOUT = 4, R_ATTROUT = 5, R_TEXCRDOUT = 6,
    R_COLOROUT = 8, R_SAMPLER = 10,
};
constexpr uint32_t X = 0x1, Y = 0x2, Z = 0x4, W = 0x8, XYZ = 0x7, XYZW = 0xF;
constexpr uint32_t SW_XYZW = 0xE4, SW_XXXX = 0x00, SW_YYYY = 0x55, SW_ZZZZ = 0xAA, SW_WWWW = 0xFF;
constexpr uint32_t sw(uint32_t x, uint32_t y, uint32_t z, uint32_t w) { return x | y << 2 | z << 4 | w << 6; }

constexpr uint32_t reg_bits(uint32_t type, uint32_t n) { return ((type & 7) << 28) | ((type & 0x18) << 8) | n; }
constexpr uint32_t dst(uint32_t type, uint32_t n, uint32_t mask = XYZW, bool sat = false) {
    return 0x80000000u | reg_bits(type, n) | mask << 16 | (sat ? 1u << 20 : 0);
}
constexpr uint32_t src(uint32_t type, uint32_t n, uint32_t swizzle = SW_XYZW, bool neg = false) {
    return 0x80000000u | reg_bits(type, n) | swizzle << 16 | (neg ? 1u << 24 : 0);
}
constexpr uint32_t neg(uint32_t s) { return s ^ (1u << 24); }
constexpr uint32_t with_swizzle(uint32_t s, uint32_t swizzle) { return (s & ~(0xFFu << 16)) | swizzle << 16; }
constexpr uint32_t r(uint32_t n, uint32_t swizzle = SW_XYZW) { return src(R_TEMP, n, swizzle); }
constexpr uint32_t c(uint32_t n, uint32_t swizzle = SW_XYZW) { return src(R_CONST, n, swizzle); }
constexpr uint32_t v(uint32_t n, uint32_t swizzle = SW_XYZW) { return src(R_INPUT, n, swizzle); }
constexpr uint32_t t(uint32_t n, uint32_t swizzle = SW_XYZW) { return src(R_TEXTURE, n, swizzle); }
constexpr uint32_t rd(uint32_t n, uint32_t mask = XYZW, bool sat = false) { return dst(R_TEMP, n, mask, sat); }

struct Asm {
    std::vector<uint32_t> t;
    void op(uint32_t opcode, std::initializer_list<uint32_t> params) {
        t.push_back(opcode | uint32_t(params.size()) << 24);
        t.insert(t.end(), params.begin(), params.end());
    }
    void dcl(uint32_t usage_token, uint32_t reg) { op(OP_DCL, {usage_token, reg}); }
    void def(uint32_t reg, float a, float b, float c, float d) {
        uint32_t f[4];
        const float in[4] = {a, b, c, d};
        std::memcpy(f, in, sizeof(f));
        op(OP_DEF, {dst(R_CONST, reg), f[0], f[1], f[2], f[3]});
    }
};

// ---- Vertex shader ----------------------------------------------------------------------
// Input registers by semantic.
constexpr uint32_t V_POS = 0, V_NORMAL = 1, V_DIFFUSE = 2, V_SPECULAR = 3, V_TEX0 = 4;
// Constants (see vertex_constants).
constexpr uint32_t C_WVP = 0, C_WV = 4, C_NORMAL = 8, C_MAT_DIFFUSE = 11, C_MAT_AMBIENT = 12,
                   C_MAT_SPECULAR = 13, C_MAT_EMISSIVE = 14, C_AMBIENT = 15, C_MISC = 16, C_FOG = 17,
                   C_MISC2 = 18, C_LIGHTS = 20, kLightRegs = 7;
constexpr uint32_t C_TEXTURE = C_LIGHTS + kLightRegs * kMaxLights; // 4 per stage
constexpr uint32_t kVsConstRegs = C_TEXTURE + 4 * kMaxStages;
// C_MISC = (power, 0, 1, 0.5); C_MISC2 = (log2(e), 0, 0, 0).
constexpr float kLog2E = 1.44269504088896340736f;

uint32_t material_src(uint8_t source, uint32_t material_reg) {
    return source == 1 ? v(V_DIFFUSE) : source == 2 ? v(V_SPECULAR) : c(material_reg);
}

// Temps: r0 eye position, r1 normal, r2 diffuse sum, r3 specular sum, r4 ambient sum,
// r5 viewer vector, r6 scratch, r7 light vector, r8 distance terms, r9 attenuation,
// r10 half vector / spot, r11 clip position and fog.
void emit_lighting(Asm &a, const VsKey &k) {
    a.op(OP_M4x4, {rd(0), v(V_POS), c(C_WV)});
    if (k.has_normal) {
        a.op(OP_M3x3, {rd(1, XYZ), v(V_NORMAL), c(C_NORMAL)});
        if (k.normalize_normals) a.op(OP_NRM, {rd(1, XYZ), r(1)});
    } else {
        a.op(OP_MOV, {rd(1, XYZ), c(C_MISC, SW_YYYY)}); // no normal: (0, 0, 0)
    }
    for (uint32_t reg : {2u, 3u, 4u}) a.op(OP_MOV, {rd(reg), c(C_MISC, SW_YYYY)});
    if (k.specular) {
        if (k.local_viewer) {
            a.op(OP_NRM, {rd(5, XYZ), neg(r(0))});
        } else {
            a.op(OP_MOV, {rd(5, XYZ), c(C_MISC, SW_YYYY)});
            a.op(OP_MOV, {rd(5, Z), neg(c(C_MISC, SW_ZZZZ))}); // (0, 0, -1)
        }
    }
    for (uint32_t i = 0; i < k.light_count; i++) {
        const uint32_t base = C_LIGHTS + kLightRegs * i;
        const uint32_t diffuse = base, specular = base + 1, ambient = base + 2, position = base + 3,
                       direction = base + 4, atten = base + 5, spot = base + 6;
        if (k.light_type[i] == LIGHT_DIRECTIONAL) {
            a.op(OP_MOV, {rd(7, XYZ), c(direction)});
            a.op(OP_MOV, {rd(9, W), c(C_MISC, SW_ZZZZ)}); // attenuation 1
        } else {
            a.op(OP_ADD, {rd(7, XYZ), c(position), neg(r(0))});
            a.op(OP_DP3, {rd(7, W), r(7), r(7)});                         // d^2
            a.op(OP_RSQ, {rd(8, W), r(7, SW_WWWW)});                       // 1/d
            a.op(OP_MUL, {rd(7, XYZ), r(7), r(8, SW_WWWW)});               // L
            a.op(OP_MOV, {rd(9, X), c(C_MISC, SW_ZZZZ)});                  // 1
            a.op(OP_MUL, {rd(9, Y), r(7, SW_WWWW), r(8, SW_WWWW)});        // d
            a.op(OP_MOV, {rd(9, Z), r(7, SW_WWWW)});                       // d^2
            a.op(OP_DP3, {rd(9, W), r(9), c(atten)});                      // a0 + a1 d + a2 d^2
            a.op(OP_RCP, {rd(9, W), r(9, SW_WWWW)});
            a.op(OP_SLT, {rd(9, X), r(9, SW_YYYY), c(atten, SW_WWWW)});   // inside the range
            a.op(OP_MUL, {rd(9, W), r(9, SW_WWWW), r(9, SW_XXXX)});
            if (k.light_type[i] == LIGHT_SPOT) {
                a.op(OP_DP3, {rd(10, X), r(7), c(direction)});                        // rho
                a.op(OP_SLT, {rd(10, Y), c(spot, SW_XXXX), r(10, SW_XXXX)});         // inside phi
                a.op(OP_ADD, {rd(10, X), r(10, SW_XXXX), neg(c(spot, SW_XXXX))});
                a.op(OP_MUL, {dst(R_TEMP, 10, X, true), r(10, SW_XXXX), c(spot, SW_YYYY)});
                a.op(OP_POW, {rd(10, X), r(10, SW_XXXX), c(spot, SW_ZZZZ)});
                a.op(OP_MUL, {rd(10, X), r(10, SW_XXXX), r(10, SW_YYYY)});
                a.op(OP_MUL, {rd(9, W), r(9, SW_WWWW), r(10, SW_XXXX)});
            }
        }
        a.op(OP_MAD, {rd(4, XYZ), c(ambient), r(9, SW_WWWW), r(4)});
        a.op(OP_DP3, {rd(6, X), r(1), r(7)});                       // N.L
        a.op(OP_MAX, {rd(6, Y), r(6, SW_XXXX), c(C_MISC, SW_YYYY)}); // max(N.L, 0)
        a.op(OP_MUL, {rd(6, Y), r(6, SW_YYYY), r(9, SW_WWWW)});
        a.op(OP_MAD, {rd(2, XYZ), c(diffuse), r(6, SW_YYYY), r(2)});
        if (k.specular) {
            a.op(OP_ADD, {rd(10, XYZ), r(7), r(5)});
            a.op(OP_NRM, {rd(10, XYZ), r(10)});
            a.op(OP_DP3, {rd(6, Z), r(1), r(10)});                        // N.H
            a.op(OP_SLT, {rd(6, W), c(C_MISC, SW_YYYY), r(6, SW_XXXX)});   // N.L > 0
            a.op(OP_SLT, {rd(10, W), c(C_MISC, SW_YYYY), r(6, SW_ZZZZ)});  // N.H > 0
            a.op(OP_MUL, {rd(6, W), r(6, SW_WWWW), r(10, SW_WWWW)});
            a.op(OP_MAX, {rd(6, Z), r(6, SW_ZZZZ), c(C_MISC, SW_YYYY)});
            a.op(OP_POW, {rd(6, Z), r(6, SW_ZZZZ), c(C_MISC, SW_XXXX)});
            a.op(OP_MUL, {rd(6, Z), r(6, SW_ZZZZ), r(6, SW_WWWW)});
            a.op(OP_MUL, {rd(6, Z), r(6, SW_ZZZZ), r(9, SW_WWWW)});
            a.op(OP_MAD, {rd(3, XYZ), c(specular), r(6, SW_ZZZZ), r(3)});
        }
    }
    // diffuse = emissive + ambient_src * (global ambient + lights' ambient) + diffuse_src * sum.
    const uint32_t d = material_src(k.diffuse_src, C_MAT_DIFFUSE), am = material_src(k.ambient_src, C_MAT_AMBIENT),
                   s = material_src(k.specular_src, C_MAT_SPECULAR), e = material_src(k.emissive_src, C_MAT_EMISSIVE);
    a.op(OP_ADD, {rd(4, XYZ), r(4), c(C_AMBIENT)});
    a.op(OP_MAD, {rd(6, XYZ), am, r(4), e});
    a.op(OP_MAD, {dst(R_ATTROUT, 0, XYZ, true), d, r(2), r(6)});
    a.op(OP_MOV, {dst(R_ATTROUT, 0, W, true), d});
    if (k.specular) {
        a.op(OP_MUL, {dst(R_ATTROUT, 1, XYZ, true), s, r(3)});
        a.op(OP_MOV, {dst(R_ATTROUT, 1, W, true), s});
    } else {
        a.op(OP_MOV, {dst(R_ATTROUT, 1), c(C_MISC, SW_YYYY)});
    }
}

} // namespace

bool stage_op_supported(uint32_t op) {
    return op >= TOP_DISABLE && op <= TOP_LERP && op != TOP_PREMODULATE;
}

namespace {

uint8_t fog_of(const Inputs &in, bool position_t) {
    const uint32_t *rs = in.render_states;
    if (!rs[RS_FOGENABLE] || !in.vertex_ff) return kFogNone;
    switch (rs[RS_FOGTABLEMODE]) {
    case FOG_LINEAR: return kFogTableLinear;
    case FOG_EXP: return kFogTableExp;
    case FOG_EXP2: return kFogTableExp2;
    default: break;
    }
    if (position_t) return kFogVertexSpecular;
    switch (rs[RS_FOGVERTEXMODE]) {
    case FOG_LINEAR: return kFogVertexLinear;
    case FOG_EXP: return kFogVertexExp;
    case FOG_EXP2: return kFogVertexExp2;
    default: return kFogVertexSpecular;
    }
}

// Stages that run: up to the first with COLOROP DISABLE.
uint32_t stage_count_of(const Inputs &in) {
    uint32_t n = 0;
    while (n < kMaxStages && in.legacy->texture_stage_state(n, TSS_COLOROP) != TOP_DISABLE) n++;
    return n;
}

} // namespace

bool vertex_key(const Inputs &in, VsKey *out) {
    VsKey k;
    std::memset(&k, 0, sizeof(k));
    bool has_position = false;
    for (uint32_t i = 0; i < in.decl_count && in.decl[i].stream != 0xFF; i++) {
        const DeclElement &e = in.decl[i];
        if (e.type == DECLTYPE_UNUSED) continue;
        if (e.usage == DECLUSAGE_POSITION && e.usage_index == 0) has_position = true;
        if (e.usage == DECLUSAGE_POSITIONT && e.usage_index == 0) has_position = true, k.position_t = 1;
        if (e.usage == DECLUSAGE_NORMAL && e.usage_index == 0) k.has_normal = 1;
        if (e.usage == DECLUSAGE_COLOR && e.usage_index == 0) k.has_diffuse = 1;
        if (e.usage == DECLUSAGE_COLOR && e.usage_index == 1) k.has_specular = 1;
        if (e.usage == DECLUSAGE_TEXCOORD && e.usage_index < 8) k.texcoord_sets |= uint8_t(1u << e.usage_index);
    }
    if (!has_position) return false;
    const uint32_t *rs = in.render_states;
    // Pre-transformed vertices are never lit (D3D9).
    k.lighting = rs[RS_LIGHTING] && !k.position_t;
    if (k.lighting) {
        uint32_t idx[kMaxLights];
        uint32_t n = in.legacy->enabled_lights(idx, kMaxLights);
        for (uint32_t i = 0; i < n; i++) {
            Light l;
            if (!in.legacy->light(idx[i], &l)) continue;
            if (l.type < LIGHT_POINT || l.type > LIGHT_DIRECTIONAL) continue;
            k.light_type[k.light_count++] = uint8_t(l.type);
        }
        k.local_viewer = rs[RS_LOCALVIEWER] != 0;
        k.normalize_normals = rs[RS_NORMALIZENORMALS] != 0;
        k.specular = rs[RS_SPECULARENABLE] != 0;
        const bool colors = rs[RS_COLORVERTEX] != 0;
        auto source = [&](uint32_t state) -> uint8_t {
            uint32_t s = rs[state];
            if (!colors || (s == 1 && !k.has_diffuse) || (s == 2 && !k.has_specular) || s > 2) return 0;
            return uint8_t(s);
        };
        k.diffuse_src = source(RS_DIFFUSEMATERIALSOURCE);
        k.ambient_src = source(RS_AMBIENTMATERIALSOURCE);
        k.specular_src = source(RS_SPECULARMATERIALSOURCE);
        k.emissive_src = source(RS_EMISSIVEMATERIALSOURCE);
    }
    k.fog = fog_of(in, k.position_t);
    k.range_fog = rs[RS_RANGEFOGENABLE] != 0 && k.fog >= kFogVertexLinear && k.fog <= kFogVertexExp2;
    // An app pixel shader reads any t# whatever the stages' colour ops (Wine's d3d9 feeds
    // every stage's coordinates); generated pixel shaders read the stages that run.
    k.stage_count = uint8_t(in.pixel_ff ? stage_count_of(in) : kMaxStages);
    for (uint32_t s = 0; s < k.stage_count; s++) {
        // The low word names the coordinate set, the high word generates coordinates instead
        // (camera-space normal or position, three components).
        const uint32_t tci = in.legacy->texture_stage_state(s, TSS_TEXCOORDINDEX);
        const uint32_t set = tci & 0xFFFF, gen = tci >> 16;
        k.stage_coord[s] = (set < 8 && (k.texcoord_sets >> set & 1)) ? uint8_t(set) : 0xFF;
        if ((gen == 1 || gen == 2) && !k.position_t) {
            k.stage_texgen[s] = uint8_t(gen);
            k.stage_coord[s] = 0;
        }
        if (k.stage_coord[s] == 0xFF) continue;
        const uint32_t ttff = in.legacy->texture_stage_state(s, TSS_TEXTURETRANSFORMFLAGS);
        const uint32_t count = ttff & 0xFF;
        if (count >= 1 && count <= 4) k.stage_transform[s] = uint8_t(count | (ttff & TTFF_PROJECTED ? 0x80 : 0));
        k.stage_coord_size[s] = k.stage_texgen[s] ? 3 : 4;
        for (uint32_t i = 0; i < in.decl_count && in.decl[i].stream != 0xFF && !k.stage_texgen[s]; i++)
            if (in.decl[i].usage == DECLUSAGE_TEXCOORD && in.decl[i].usage_index == set && in.decl[i].type <= 3)
                k.stage_coord_size[s] = uint8_t(in.decl[i].type + 1); // FLOAT1..FLOAT4
    }
    for (uint32_t s = 0; s < k.stage_count; s++)
        if (k.stage_texgen[s] == 1) k.normalize_normals = rs[RS_NORMALIZENORMALS] != 0;
    k.fog_reg = (k.fog != kFogNone && k.stage_count < kMaxStages) ? k.stage_count : 0xFF;
    if (k.fog_reg == 0xFF) k.fog = kFogNone;
    *out = k;
    return true;
}

std::vector<uint32_t> vertex_shader(const VsKey &k) {
    Asm a;
    a.t.push_back(0xFFFE0200u); // vs_2_0
    a.dcl(0x80000000u | (k.position_t ? DECLUSAGE_POSITIONT : DECLUSAGE_POSITION), dst(R_INPUT, V_POS));
    if (k.has_normal) a.dcl(0x80000000u | DECLUSAGE_NORMAL, dst(R_INPUT, V_NORMAL));
    if (k.has_diffuse) a.dcl(0x80000000u | DECLUSAGE_COLOR, dst(R_INPUT, V_DIFFUSE));
    if (k.has_specular) a.dcl(0x80000000u | DECLUSAGE_COLOR | 1u << 16, dst(R_INPUT, V_SPECULAR));
    for (uint32_t n = 0; n < 8; n++)
        if (k.texcoord_sets >> n & 1) a.dcl(0x80000000u | DECLUSAGE_TEXCOORD | n << 16, dst(R_INPUT, V_TEX0 + n));

    // Position into r11 (clip space) and oPos.
    if (k.position_t) {
        // Screen x, y, z and 1/w back to clip space through the viewport (c0 scale, c1
        // offset), so the rasterizer's viewport transform lands them where D3D9 puts them.
        a.op(OP_MAD, {rd(11, XYZ), v(V_POS), c(C_WVP), c(C_WVP + 1)});
        a.op(OP_RCP, {rd(11, W), v(V_POS, SW_WWWW)});
        a.op(OP_MUL, {rd(11, XYZ), r(11), r(11, SW_WWWW)});
    } else {
        a.op(OP_M4x4, {rd(11), v(V_POS), c(C_WVP)});
    }
    a.op(OP_MOV, {dst(R_RASTOUT, 0), r(11)});

    // Colours.
    if (k.lighting) {
        emit_lighting(a, k);
    } else {
        a.op(OP_MOV, {dst(R_ATTROUT, 0), k.has_diffuse ? v(V_DIFFUSE) : c(C_MISC, SW_ZZZZ)});
        a.op(OP_MOV, {dst(R_ATTROUT, 1), k.has_specular ? v(V_SPECULAR) : c(C_MISC, SW_YYYY)});
    }

    // Texture coordinates: oT<stage> carries the set the stage reads (or generates).
    bool texgen = false;
    for (uint32_t s = 0; s < k.stage_count; s++) texgen |= k.stage_texgen[s] != 0;
    if (texgen) {
        if (!k.lighting) { // eye-space position and normal as the lighting has them
            a.op(OP_M4x4, {rd(0), v(V_POS), c(C_WV)});
            if (k.has_normal) {
                a.op(OP_M3x3, {rd(1, XYZ), v(V_NORMAL), c(C_NORMAL)});
                if (k.normalize_normals) a.op(OP_NRM, {rd(1, XYZ), r(1)});
            } else {
                a.op(OP_MOV, {rd(1, XYZ), c(C_MISC, SW_YYYY)});
            }
        }
        a.op(OP_MOV, {rd(1, W), c(C_MISC, SW_ZZZZ)}); // (normal, 1), like a 3D set
    }
    for (uint32_t s = 0; s < k.stage_count; s++) {
        const uint32_t coord = k.stage_texgen[s] == 1   ? r(1)
                               : k.stage_texgen[s] == 2 ? r(0)
                                                        : v(V_TEX0 + (k.stage_coord[s] & 7));
        if (k.stage_coord[s] == 0xFF) {
            a.op(OP_MOV, {dst(R_TEXCRDOUT, s), c(C_MISC, sw(1, 1, 1, 2))}); // (0, 0, 0, 1)
        } else if (const uint32_t count = k.stage_transform[s] & 7) {
            // Through the stage's texture matrix (rows rearranged in vertex_constants); the
            // projected form divides by component count - 1, which texldp takes from w.
            a.op(OP_M4x4, {rd(6), coord, c(C_TEXTURE + 4 * s)});
            if (k.stage_transform[s] & 0x80) {
                const uint32_t last = count - 1;
                a.op(OP_MOV, {rd(6, W), r(6, sw(last, last, last, last))});
            }
            a.op(OP_MOV, {dst(R_TEXCRDOUT, s), r(6)});
        } else {
            a.op(OP_MOV, {dst(R_TEXCRDOUT, s), coord});
        }
    }

    // Fog: the factor per vertex, or clip z and w for the pixel shader's table fog.
    if (k.fog != kFogNone) {
        const uint32_t out = dst(R_TEXCRDOUT, k.fog_reg);
        switch (k.fog) {
        case kFogVertexSpecular:
            a.op(OP_MOV, {out, k.has_specular ? v(V_SPECULAR, SW_WWWW) : c(C_MISC, SW_ZZZZ)});
            break;
        case kFogTableLinear:
        case kFogTableExp:
        case kFogTableExp2: a.op(OP_MOV, {out, r(11, sw(2, 3, 2, 3))}); break;
        default: {
            // Eye-space distance: z, or |P| with range fog.
            if (!k.lighting) a.op(OP_M4x4, {rd(0), v(V_POS), c(C_WV)});
            if (k.range_fog) {
                a.op(OP_DP3, {rd(6, X), r(0), r(0)});
                a.op(OP_RSQ, {rd(6, Y), r(6, SW_XXXX)});
                a.op(OP_RCP, {rd(6, X), r(6, SW_YYYY)});
            } else {
                a.op(OP_MOV, {rd(6, X), r(0, SW_ZZZZ)});
            }
            if (k.fog == kFogVertexLinear) {
                a.op(OP_ADD, {rd(6, Y), c(C_FOG, SW_YYYY), neg(r(6, SW_XXXX))});
                a.op(OP_MUL, {dst(R_TEMP, 6, Y, true), r(6, SW_YYYY), c(C_FOG, SW_ZZZZ)});
            } else {
                a.op(OP_MUL, {rd(6, Y), r(6, SW_XXXX), c(C_FOG, SW_WWWW)});
                if (k.fog == kFogVertexExp2) a.op(OP_MUL, {rd(6, Y), r(6, SW_YYYY), r(6, SW_YYYY)});
                a.op(OP_MUL, {rd(6, Y), r(6, SW_YYYY), c(C_MISC2, SW_XXXX)});
                a.op(OP_EXP, {dst(R_TEMP, 6, Y, true), neg(r(6, SW_YYYY))});
            }
            a.op(OP_MOV, {out, r(6, SW_YYYY)});
            break;
        }
        }
    }
    a.t.push_back(OP_END);
    return a.t;
}

namespace {

struct Mat {
    float m[4][4];
};
Mat mat_of(const Matrix4 &x) {
    Mat r;
    std::memcpy(r.m, x.m, sizeof(r.m));
    return r;
}
Mat mul(const Mat &a, const Mat &b) {
    Mat r;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            float s = 0;
            for (int k = 0; k < 4; k++) s += a.m[i][k] * b.m[k][j];
            r.m[i][j] = s;
        }
    return r;
}
void put(std::vector<float> &cs, uint32_t reg, float a, float b, float c, float d) {
    cs[reg * 4] = a, cs[reg * 4 + 1] = b, cs[reg * 4 + 2] = c, cs[reg * 4 + 3] = d;
}
void put_columns(std::vector<float> &cs, uint32_t reg, const Mat &m) {
    for (int col = 0; col < 4; col++) put(cs, reg + col, m.m[0][col], m.m[1][col], m.m[2][col], m.m[3][col]);
}
void put_color(std::vector<float> &cs, uint32_t reg, const ColorValue &cv) { put(cs, reg, cv.r, cv.g, cv.b, cv.a); }
void put_argb(std::vector<float> &cs, uint32_t reg, uint32_t argb) {
    put(cs, reg, float(argb >> 16 & 0xFF) / 255.0f, float(argb >> 8 & 0xFF) / 255.0f, float(argb & 0xFF) / 255.0f,
        float(argb >> 24) / 255.0f);
}
float f32(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}
// A row vector times the upper 3x3 of m (w = 0) or the whole of m (w = 1).
void transform(const Mat &m, const Vector3 &p, float w, float out[3]) {
    for (int j = 0; j < 3; j++) out[j] = p.x * m.m[0][j] + p.y * m.m[1][j] + p.z * m.m[2][j] + w * m.m[3][j];
}

} // namespace

std::vector<float> vertex_constants(const Inputs &in, const VsKey &k) {
    std::vector<float> cs(size_t(kVsConstRegs) * 4, 0.0f);
    const LegacyState &L = *in.legacy;
    const uint32_t *rs = in.render_states;
    const Mat view = mat_of(L.transform(TS_VIEW));
    const Mat wv = mul(mat_of(L.transform(TS_WORLD)), view);
    if (k.position_t) {
        const float *vp = in.viewport;
        const float w = vp[2] > 0 ? vp[2] : 1, h = vp[3] > 0 ? vp[3] : 1;
        const float zr = vp[5] != vp[4] ? 1.0f / (vp[5] - vp[4]) : 0.0f;
        put(cs, C_WVP, 2.0f / w, -2.0f / h, zr, 0);
        put(cs, C_WVP + 1, -1.0f - 2.0f * vp[0] / w, 1.0f + 2.0f * vp[1] / h, vp[5] != vp[4] ? -vp[4] * zr : 0.0f, 0);
    } else {
        put_columns(cs, C_WVP, mul(wv, mat_of(L.transform(TS_PROJECTION))));
    }
    put_columns(cs, C_WV, wv);
    // Normals: row vector times the inverse transpose of WV's 3x3, so register j (a
    // column of that) is row j of the inverse.
    const float(*m)[4] = wv.m;
    const float det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
                      m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
                      m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
    const float id = det != 0.0f ? 1.0f / det : 0.0f;
    float inv[3][3] = {
        {(m[1][1] * m[2][2] - m[1][2] * m[2][1]) * id, (m[0][2] * m[2][1] - m[0][1] * m[2][2]) * id,
         (m[0][1] * m[1][2] - m[0][2] * m[1][1]) * id},
        {(m[1][2] * m[2][0] - m[1][0] * m[2][2]) * id, (m[0][0] * m[2][2] - m[0][2] * m[2][0]) * id,
         (m[0][2] * m[1][0] - m[0][0] * m[1][2]) * id},
        {(m[1][0] * m[2][1] - m[1][1] * m[2][0]) * id, (m[0][1] * m[2][0] - m[0][0] * m[2][1]) * id,
         (m[0][0] * m[1][1] - m[0][1] * m[1][0]) * id},
    };
    for (int j = 0; j < 3; j++) put(cs, C_NORMAL + j, inv[j][0], inv[j][1], inv[j][2], 0);
    const Material mat = L.material();
    put_color(cs, C_MAT_DIFFUSE, mat.diffuse);
    put_color(cs, C_MAT_AMBIENT, mat.ambient);
    put_color(cs, C_MAT_SPECULAR, mat.specular);
    put_color(cs, C_MAT_EMISSIVE, mat.emissive);
    put_argb(cs, C_AMBIENT, rs[RS_AMBIENT]);
    put(cs, C_MISC, mat.power, 0.0f, 1.0f, 0.5f);
    const float start = f32(rs[RS_FOGSTART]), end = f32(rs[RS_FOGEND]);
    put(cs, C_FOG, start, end, end != start ? 1.0f / (end - start) : 0.0f, f32(rs[RS_FOGDENSITY]));
    put(cs, C_MISC2, kLog2E, 0, 0, 0);
    if (k.lighting) {
        uint32_t idx[kMaxLights];
        uint32_t n = L.enabled_lights(idx, kMaxLights), slot = 0;
        for (uint32_t i = 0; i < n && slot < k.light_count; i++) {
            Light l;
            if (!L.light(idx[i], &l) || l.type < LIGHT_POINT || l.type > LIGHT_DIRECTIONAL) continue;
            const uint32_t base = C_LIGHTS + kLightRegs * slot++;
            put_color(cs, base, l.diffuse);
            put_color(cs, base + 1, l.specular);
            put_color(cs, base + 2, l.ambient);
            // Lights are in world space: into eye space by the view matrix.
            float p[3], d[3];
            transform(view, l.position, 1.0f, p);
            transform(view, l.direction, 0.0f, d);
            float len = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            float s = len > 0 ? -1.0f / len : 0.0f; // towards the light
            put(cs, base + 3, p[0], p[1], p[2], 1);
            put(cs, base + 4, d[0] * s, d[1] * s, d[2] * s, 0);
            put(cs, base + 5, l.attenuation0, l.attenuation1, l.attenuation2, l.range);
            const float cos_phi = std::cos(l.phi * 0.5f), cos_theta = std::cos(l.theta * 0.5f);
            put(cs, base + 6, cos_phi, cos_theta > cos_phi ? 1.0f / (cos_theta - cos_phi) : 1e30f, l.falloff, 0);
        }
    }
    // Texture matrices. D3D9 multiplies a set of n < 4 components as (coords, 1, 0...): the
    // 1 sits in component n, so row n acts as the translation. The shader's input is
    // expanded as (coords, 0..., 1) instead, so that row moves to row 3.
    for (uint32_t s = 0; s < k.stage_count; s++) {
        if (!(k.stage_transform[s] & 7)) continue;
        Mat t = mat_of(L.transform(TS_TEXTURE0 + s));
        const uint32_t n = k.stage_coord_size[s];
        if (n < 3) {
            std::memcpy(t.m[3], t.m[n], sizeof(t.m[3]));
            for (uint32_t row = n; row < 3; row++) std::memset(t.m[row], 0, sizeof(t.m[row]));
        }
        put_columns(cs, C_TEXTURE + 4 * s, t);
    }
    return cs;
}

// ---- Pixel shader -----------------------------------------------------------------------
namespace {

// Constants: c0 texture factor, c2+s stage s's D3DTSS_CONSTANT, c10 fog colour, c11 fog
// (start, end, 1/(end - start), density), c12+s stage s's bump matrix (00, 01, 10, 11),
// c20+s its luminance (scale, offset, 0, 0); defined: c30 (4, log2(e), 0, 0), c31 (0, 0.5, 1, 2).
constexpr uint32_t P_TFACTOR = 0, P_STAGE_CONST = 2, P_FOG_COLOR = 10, P_FOG = 11, P_BUMP_MAT = 12, P_BUMP_LUM = 20,
                   P_DEF4 = 30, P_DEF = 31;
constexpr uint32_t kPsConstRegs = 28;
// D3DTSS_BUMPENVMAT00, 01, 10, 11 and BUMPENVLSCALE / BUMPENVLOFFSET (float bits).
constexpr uint32_t TSS_BUMPENVMAT00 = AEROGPU_TSS_BUMPENVMAT00, TSS_BUMPENVLSCALE = AEROGPU_TSS_BUMPENVLSCALE,
                   TSS_BUMPENVLOFFSET = AEROGPU_TSS_BUMPENVLOFFSET;

bool is_bump(uint8_t op) { return op == TOP_BUMPENVMAP || op == TOP_BUMPENVMAPLUMINANCE; }
// Temps: r0 current, r1 temp, r2 this stage's texture, r3-r5 arguments 0-2, r6 result,
// r7-r8 scratch.
constexpr uint32_t T_CUR = 0, T_TEMP = 1, T_TEX = 2, T_ARG = 3, T_RES = 6, T_S1 = 7, T_S2 = 8;

bool op_uses(uint8_t op, uint32_t arg) {
    if (op == TOP_DISABLE) return false;
    if (arg == 1) return true;
    if (arg == 2) return op != TOP_SELECTARG1;
    return op == TOP_MULTIPLYADD || op == TOP_LERP; // ARG0
}

bool reads_missing_texture(uint8_t op, const uint8_t arg[3]) {
    if (op == TOP_DISABLE) return false;
    auto tex = [&](uint32_t i) { return (arg[i] & TA_SELECTMASK) == TA_TEXTURE; };
    return (tex(1) && op != TOP_SELECTARG2) || (tex(2) && op != TOP_SELECTARG1) ||
           (tex(0) && (op == TOP_MULTIPLYADD || op == TOP_LERP));
}

bool stage_reads_texture(const PsStage &s) {
    if (is_bump(s.colorop)) return true; // the bump map: (du, dv, luminance)
    for (uint32_t i = 0; i < 3; i++) {
        if (op_uses(s.colorop, i) && (s.colorarg[i] & TA_SELECTMASK) == TA_TEXTURE) return true;
        if (op_uses(s.alphaop, i) && (s.alphaarg[i] & TA_SELECTMASK) == TA_TEXTURE) return true;
    }
    return s.colorop == TOP_BLENDTEXTUREALPHA || s.colorop == TOP_BLENDTEXTUREALPHAPM ||
           s.alphaop == TOP_BLENDTEXTUREALPHA || s.alphaop == TOP_BLENDTEXTUREALPHAPM;
}

// Source token for a D3DTA argument of stage `s` (emitting the complement into `scratch`).
uint32_t arg_src(Asm &a, const PsStage &st, uint32_t s, uint8_t arg, uint32_t scratch) {
    uint32_t base;
    switch (arg & TA_SELECTMASK) {
    case TA_DIFFUSE: base = v(0); break;
    case TA_CURRENT: base = r(T_CUR); break;
    case TA_TEXTURE: base = st.texture ? r(T_TEX) : c(P_DEF, SW_ZZZZ); break;
    case TA_TFACTOR: base = c(P_TFACTOR); break;
    case TA_SPECULAR: base = v(1); break;
    case TA_TEMP: base = r(T_TEMP); break;
    case TA_CONSTANT: base = c(P_STAGE_CONST + s); break;
    default: base = r(T_CUR); break;
    }
    if (arg & TA_ALPHAREPLICATE) base = with_swizzle(base, SW_WWWW);
    if (arg & TA_COMPLEMENT) {
        a.op(OP_ADD, {rd(scratch), c(P_DEF, SW_ZZZZ), neg(base)});
        return r(scratch);
    }
    return base;
}

// One stage op into r6 under `mask`.
void emit_op(Asm &a, uint8_t op, uint32_t mask, const uint32_t arg[3], const PsStage &st, bool alpha) {
    (void)alpha;
    const uint32_t d = rd(T_RES, mask);
    const uint32_t one = c(P_DEF, SW_ZZZZ);
    switch (op) {
    case TOP_SELECTARG2: a.op(OP_MOV, {d, arg[2]}); break;
    case TOP_MODULATE: a.op(OP_MUL, {d, arg[1], arg[2]}); break;
    case TOP_MODULATE2X:
        a.op(OP_MUL, {d, arg[1], arg[2]});
        a.op(OP_ADD, {d, r(T_RES), r(T_RES)});
        break;
    case TOP_MODULATE4X:
        a.op(OP_MUL, {d, arg[1], arg[2]});
        a.op(OP_MUL, {d, r(T_RES), c(P_DEF4, SW_XXXX)});
        break;
    case TOP_ADD: a.op(OP_ADD, {d, arg[1], arg[2]}); break;
    case TOP_ADDSIGNED:
    case TOP_ADDSIGNED2X:
        a.op(OP_ADD, {d, arg[1], arg[2]});
        a.op(OP_ADD, {d, r(T_RES), neg(c(P_DEF, SW_YYYY))});
        if (op == TOP_ADDSIGNED2X) a.op(OP_ADD, {d, r(T_RES), r(T_RES)});
        break;
    case TOP_SUBTRACT: a.op(OP_ADD, {d, arg[1], neg(arg[2])}); break;
    case TOP_ADDSMOOTH: // a1 + a2 (1 - a1)
        a.op(OP_ADD, {rd(T_S1, mask), one, neg(arg[1])});
        a.op(OP_MAD, {d, arg[2], r(T_S1), arg[1]});
        break;
    case TOP_BLENDDIFFUSEALPHA: a.op(OP_LRP, {d, v(0, SW_WWWW), arg[1], arg[2]}); break;
    case TOP_BLENDTEXTUREALPHA:
        a.op(OP_LRP, {d, st.texture ? r(T_TEX, SW_WWWW) : one, arg[1], arg[2]});
        break;
    case TOP_BLENDFACTORALPHA: a.op(OP_LRP, {d, c(P_TFACTOR, SW_WWWW), arg[1], arg[2]}); break;
    case TOP_BLENDCURRENTALPHA: a.op(OP_LRP, {d, r(T_CUR, SW_WWWW), arg[1], arg[2]}); break;
    case TOP_BLENDTEXTUREALPHAPM: // a1 + a2 (1 - texture alpha)
        a.op(OP_ADD, {rd(T_S1, mask), one, neg(st.texture ? r(T_TEX, SW_WWWW) : one)});
        a.op(OP_MAD, {d, arg[2], r(T_S1), arg[1]});
        break;
    case TOP_MODULATEALPHA_ADDCOLOR: a.op(OP_MAD, {d, with_swizzle(arg[1], SW_WWWW), arg[2], arg[1]}); break;
    case TOP_MODULATECOLOR_ADDALPHA: a.op(OP_MAD, {d, arg[1], arg[2], with_swizzle(arg[1], SW_WWWW)}); break;
    case TOP_MODULATEINVALPHA_ADDCOLOR:
        a.op(OP_ADD, {rd(T_S1, mask), one, neg(with_swizzle(arg[1], SW_WWWW))});
        a.op(OP_MAD, {d, r(T_S1), arg[2], arg[1]});
        break;
    case TOP_MODULATEINVCOLOR_ADDALPHA:
        a.op(OP_ADD, {rd(T_S1, mask), one, neg(arg[1])});
        a.op(OP_MAD, {d, r(T_S1), arg[2], with_swizzle(arg[1], SW_WWWW)});
        break;
    case TOP_DOTPRODUCT3: // signed dot of the colours, in every channel
        a.op(OP_MAD, {rd(T_S1), arg[1], c(P_DEF, SW_WWWW), neg(one)});
        a.op(OP_MAD, {rd(T_S2), arg[2], c(P_DEF, SW_WWWW), neg(one)});
        a.op(OP_DP3, {d, r(T_S1), r(T_S2)});
        break;
    case TOP_MULTIPLYADD: a.op(OP_MAD, {d, arg[1], arg[2], arg[0]}); break;
    case TOP_LERP: a.op(OP_LRP, {d, arg[0], arg[1], arg[2]}); break;
    default: a.op(OP_MOV, {d, arg[1]}); break; // SELECTARG1, and the ops not modelled
    }
}

} // namespace

void pixel_key(const Inputs &in, PsKey *out) {
    PsKey k;
    std::memset(&k, 0, sizeof(k));
    const LegacyState &L = *in.legacy;
    k.stage_count = uint8_t(stage_count_of(in));
    for (uint32_t s = 0; s < k.stage_count; s++) {
        PsStage &st = k.stage[s];
        st.colorop = uint8_t(L.texture_stage_state(s, TSS_COLOROP));
        st.alphaop = uint8_t(L.texture_stage_state(s, TSS_ALPHAOP));
        const uint32_t cargs[3] = {TSS_COLORARG0, TSS_COLORARG1, TSS_COLORARG2};
        const uint32_t aargs[3] = {TSS_ALPHAARG0, TSS_ALPHAARG1, TSS_ALPHAARG2};
        for (uint32_t i = 0; i < 3; i++) {
            st.colorarg[i] = uint8_t(L.texture_stage_state(s, cargs[i]) & 0x3F);
            st.alphaarg[i] = uint8_t(L.texture_stage_state(s, aargs[i]) & 0x3F);
        }
        st.result_temp = (L.texture_stage_state(s, TSS_RESULTARG) & TA_SELECTMASK) == TA_TEMP;
        st.texture = (in.textures_bound >> s) & 1;
        const uint32_t ttff = L.texture_stage_state(s, TSS_TEXTURETRANSFORMFLAGS);
        st.projected = (ttff & TTFF_PROJECTED) && (ttff & 0xFF) >= 1 && (ttff & 0xFF) <= 4;
        if (!stage_op_supported(st.colorop)) st.colorop = TOP_SELECTARG1;
        if (!stage_op_supported(st.alphaop)) st.alphaop = TOP_SELECTARG1;
        // A stage without a texture whose op reads D3DTA_TEXTURE passes CURRENT on (what
        // D3D9 drivers and Wine's d3d9 do: the default stage 0 draws untextured geometry in
        // its vertex colour and alpha).
        if (!st.texture) {
            // No bump map: nothing perturbs the next stage, CURRENT passes on.
            if (is_bump(st.colorop)) st.colorop = TOP_SELECTARG1, st.colorarg[1] = TA_CURRENT;
            if (reads_missing_texture(st.colorop, st.colorarg)) st.colorop = TOP_SELECTARG1, st.colorarg[1] = TA_CURRENT;
            if (reads_missing_texture(st.alphaop, st.alphaarg)) st.alphaop = TOP_SELECTARG1, st.alphaarg[1] = TA_CURRENT;
        }
    }
    k.specular = in.render_states[RS_SPECULARENABLE] != 0;
    // Fog as the vertex stage sets it up (only when that stage is ours).
    VsKey vk;
    if (in.vertex_ff && vertex_key(in, &vk)) {
        k.fog = vk.fog;
        k.fog_reg = vk.fog_reg;
        if (k.fog >= kFogTableLinear) {
            // D3D9: W-based fog when the projection is perspective (its fourth column is not
            // (0, 0, 0, 1)), Z-based otherwise and for pre-transformed vertices.
            const Matrix4 p = L.transform(TS_PROJECTION);
            k.fog_w = !vk.position_t && !(p.m[3] == 0 && p.m[7] == 0 && p.m[11] == 0 && p.m[15] == 1);
        }
    }
    *out = k;
}

std::vector<uint32_t> pixel_shader(const PsKey &k) {
    Asm a;
    a.t.push_back(0xFFFF0200u); // ps_2_0
    a.dcl(0x80000000u, dst(R_INPUT, 0));
    a.dcl(0x80000000u, dst(R_INPUT, 1));
    for (uint32_t s = 0; s < k.stage_count; s++) {
        if (!k.stage[s].texture || !stage_reads_texture(k.stage[s])) continue;
        a.dcl(0x80000000u, dst(R_TEXTURE, s));
        a.dcl(0x90000000u, dst(R_SAMPLER, s)); // 2D
    }
    if (k.fog != kFogNone) a.dcl(0x80000000u, dst(R_TEXTURE, k.fog_reg));
    a.def(P_DEF4, 4.0f, kLog2E, 0.0f, 0.0f);
    a.def(P_DEF, 0.0f, 0.5f, 1.0f, 2.0f);
    a.op(OP_MOV, {rd(T_CUR), v(0)}); // stage 0's CURRENT is the diffuse colour
    a.op(OP_MOV, {rd(T_TEMP), c(P_DEF, SW_XXXX)});
    for (uint32_t s = 0; s < k.stage_count; s++) {
        const PsStage &st = k.stage[s];
        const bool bumped = s > 0 && is_bump(k.stage[s - 1].colorop);
        if (st.texture && stage_reads_texture(st) && bumped) {
            // After a BUMPENVMAP stage: this stage's coordinates moved by that stage's bump
            // matrix times its bump map's (du, dv) (still in r2), u' = u + du M00 + dv M10,
            // v' = v + du M01 + dv M11; BUMPENVMAPLUMINANCE scales the texel by the bump
            // map's third channel times LSCALE plus LOFFSET, clamped to [0, 1].
            a.op(OP_MOV, {rd(T_S1), t(s)});
            a.op(OP_MAD, {rd(T_S1, X | Y), r(T_TEX, SW_XXXX), c(P_BUMP_MAT + s - 1, sw(0, 1, 0, 1)), r(T_S1)});
            a.op(OP_MAD, {rd(T_S1, X | Y), r(T_TEX, SW_YYYY), c(P_BUMP_MAT + s - 1, sw(2, 3, 2, 3)), r(T_S1)});
            if (k.stage[s - 1].colorop == TOP_BUMPENVMAPLUMINANCE)
                a.op(OP_MAD, {dst(R_TEMP, T_S2, X, true), r(T_TEX, SW_ZZZZ), c(P_BUMP_LUM + s - 1, SW_XXXX),
                              c(P_BUMP_LUM + s - 1, SW_YYYY)});
            a.op(OP_TEXLD, {rd(T_TEX), r(T_S1), src(R_SAMPLER, s)});
            if (k.stage[s - 1].colorop == TOP_BUMPENVMAPLUMINANCE)
                a.op(OP_MUL, {rd(T_TEX, X | Y | Z), r(T_TEX), r(T_S2, SW_XXXX)});
        } else if (st.texture && stage_reads_texture(st)) {
            a.op(OP_TEXLD | (st.projected ? 1u << 16 : 0), {rd(T_TEX), t(s), src(R_SAMPLER, s)}); // texldp
        }
        uint32_t args[3];
        for (uint32_t i = 0; i < 3; i++)
            args[i] = op_uses(st.colorop, i) ? arg_src(a, st, s, st.colorarg[i], T_ARG + i) : c(P_DEF, SW_XXXX);
        if (is_bump(st.colorop)) {
            // The bump stage itself leaves the colour as it was (its map moves the next
            // stage's coordinates); its alpha op applies as usual.
            a.op(OP_MOV, {rd(T_RES, XYZ), r(T_CUR)});
            for (uint32_t i = 0; i < 3; i++)
                args[i] = op_uses(st.alphaop, i) ? arg_src(a, st, s, st.alphaarg[i], T_ARG + i) : c(P_DEF, SW_XXXX);
            if (st.alphaop == TOP_DISABLE) a.op(OP_MOV, {rd(T_RES, W), r(T_CUR)});
            else emit_op(a, st.alphaop, W, args, st, true);
        } else if (st.colorop == TOP_DOTPRODUCT3) {
            emit_op(a, st.colorop, XYZW, args, st, false);
        } else {
            emit_op(a, st.colorop, XYZ, args, st, false);
            if (st.alphaop == TOP_DISABLE) {
                a.op(OP_MOV, {rd(T_RES, W), r(T_CUR)});
            } else {
                for (uint32_t i = 0; i < 3; i++)
                    args[i] =
                        op_uses(st.alphaop, i) ? arg_src(a, st, s, st.alphaarg[i], T_ARG + i) : c(P_DEF, SW_XXXX);
                emit_op(a, st.alphaop, W, args, st, true);
            }
        }
        a.op(OP_MOV, {rd(st.result_temp ? T_TEMP : T_CUR, XYZW, true), r(T_RES)});
    }
    if (k.specular) a.op(OP_ADD, {rd(T_CUR, XYZ, true), r(T_CUR), v(1)});
    if (k.fog != kFogNone) {
        uint32_t f;
        if (k.fog >= kFogTableLinear) {
            // Depth: eye-space w, or z / w.
            if (k.fog_w) {
                a.op(OP_MOV, {rd(T_S1, X), t(k.fog_reg, SW_YYYY)});
            } else {
                a.op(OP_RCP, {rd(T_S1, X), t(k.fog_reg, SW_YYYY)});
                a.op(OP_MUL, {rd(T_S1, X), t(k.fog_reg, SW_XXXX), r(T_S1, SW_XXXX)});
            }
            if (k.fog == kFogTableLinear) {
                a.op(OP_ADD, {rd(T_S1, Y), c(P_FOG, SW_YYYY), neg(r(T_S1, SW_XXXX))});
                a.op(OP_MUL, {dst(R_TEMP, T_S1, Y, true), r(T_S1, SW_YYYY), c(P_FOG, SW_ZZZZ)});
            } else {
                a.op(OP_MUL, {rd(T_S1, Y), r(T_S1, SW_XXXX), c(P_FOG, SW_WWWW)});
                if (k.fog == kFogTableExp2) a.op(OP_MUL, {rd(T_S1, Y), r(T_S1, SW_YYYY), r(T_S1, SW_YYYY)});
                a.op(OP_MUL, {rd(T_S1, Y), r(T_S1, SW_YYYY), c(P_DEF4, SW_YYYY)});
                a.op(OP_EXP, {dst(R_TEMP, T_S1, Y, true), neg(r(T_S1, SW_YYYY))});
            }
            f = r(T_S1, SW_YYYY);
        } else {
            a.op(OP_MOV, {dst(R_TEMP, T_S1, X, true), t(k.fog_reg, SW_XXXX)});
            f = r(T_S1, SW_XXXX);
        }
        a.op(OP_LRP, {rd(T_CUR, XYZ), f, r(T_CUR), c(P_FOG_COLOR)});
    }
    a.op(OP_MOV, {dst(R_COLOROUT, 0), r(T_CUR)});
    a.t.push_back(OP_END);
    return a.t;
}

std::vector<float> pixel_constants(const Inputs &in, const PsKey &k) {
    (void)k;
    std::vector<float> cs(size_t(kPsConstRegs) * 4, 0.0f);
    const uint32_t *rs = in.render_states;
    put_argb(cs, P_TFACTOR, rs[RS_TEXTUREFACTOR]);
    for (uint32_t s = 0; s < kMaxStages; s++) put_argb(cs, P_STAGE_CONST + s, in.legacy->texture_stage_state(s, TSS_CONSTANT));
    put_argb(cs, P_FOG_COLOR, rs[RS_FOGCOLOR]);
    for (uint32_t s = 0; s < kMaxStages; s++) {
        auto st = [&](uint32_t n) { return f32(in.legacy->texture_stage_state(s, n)); };
        put(cs, P_BUMP_MAT + s, st(TSS_BUMPENVMAT00), st(TSS_BUMPENVMAT00 + 1), st(TSS_BUMPENVMAT00 + 2),
            st(TSS_BUMPENVMAT00 + 3));
        put(cs, P_BUMP_LUM + s, st(TSS_BUMPENVLSCALE), st(TSS_BUMPENVLOFFSET), 0.0f, 0.0f);
    }
    const float start = f32(rs[RS_FOGSTART]), end = f32(rs[RS_FOGEND]);
    put(cs, P_FOG, start, end, end != start ? 1.0f / (end - start) : 0.0f, f32(rs[RS_FOGDENSITY]));
    return cs;
}

} // namespace ff
} // namespace aerogpu
