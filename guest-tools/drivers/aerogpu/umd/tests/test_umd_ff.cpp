// Host unit tests of the fixed-function shader generator (aerogpu_umd_ff.cpp): keys from
// the cached state, and the generated tokens run on a small D3D9 bytecode interpreter here
// against D3D9's lighting, texture-stage and fog equations computed by hand. Run by
// guest-tools/tests/umd_ff.rs, which also runs `test_umd_ff dump DIR` and translates the
// dumped token streams with the device's translator (naga-validated).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "../src/aerogpu_umd_core.h"
#include "../src/aerogpu_umd_ff.h"
#include "../src/aerogpu_umd_legacy.h"
#include "../../tests_host/agpu_check.h"

using namespace aerogpu;

namespace {

// ---- A D3D9 vs_2_0/ps_2_0 interpreter for the instructions the generator emits ----------
struct Vec {
    float v[4] = {0, 0, 0, 0};
};
Vec vec(float x, float y, float z, float w) {
    Vec r;
    r.v[0] = x, r.v[1] = y, r.v[2] = z, r.v[3] = w;
    return r;
}

struct Machine {
    Vec r[32], c[256], in[16], t[8], pos, od[2], ot[8], oc;
    std::function<Vec(uint32_t sampler, const Vec &coord)> sample;
    bool bad = false; // an instruction or register the interpreter does not know
};

uint32_t reg_type(uint32_t tok) { return ((tok >> 28) & 7) | ((tok >> 8) & 0x18); }

Vec read(Machine &m, uint32_t tok) {
    uint32_t n = tok & 0x7FF;
    Vec base;
    switch (reg_type(tok)) {
    case 0: base = m.r[n % 32]; break;
    case 1: base = m.in[n % 16]; break;
    case 2: base = m.c[n % 256]; break;
    case 3: base = m.t[n % 8]; break;
    default: m.bad = true;
    }
    Vec out;
    for (int i = 0; i < 4; i++) out.v[i] = base.v[(tok >> (16 + 2 * i)) & 3];
    uint32_t mod = (tok >> 24) & 0xF;
    if (mod == 1)
        for (float &f : out.v) f = -f;
    else if (mod != 0)
        m.bad = true;
    return out;
}

void write(Machine &m, uint32_t tok, const Vec &val) {
    uint32_t n = tok & 0x7FF, mask = (tok >> 16) & 0xF;
    bool sat = (tok >> 20) & 1;
    Vec *d = nullptr;
    switch (reg_type(tok)) {
    case 0: d = &m.r[n % 32]; break;
    case 4: d = n == 0 ? &m.pos : nullptr; break;
    case 5: d = n < 2 ? &m.od[n] : nullptr; break;
    case 6: d = n < 8 ? &m.ot[n] : nullptr; break;
    case 8: d = n == 0 ? &m.oc : nullptr; break;
    default: break;
    }
    if (!d) {
        m.bad = true;
        return;
    }
    for (int i = 0; i < 4; i++) {
        if (!(mask >> i & 1)) continue;
        float f = val.v[i];
        if (sat) f = f < 0 ? 0 : f > 1 ? 1 : f;
        d->v[i] = f;
    }
}

float dot(const Vec &a, const Vec &b, int n) {
    float s = 0;
    for (int i = 0; i < n; i++) s += a.v[i] * b.v[i];
    return s;
}

void run(Machine &m, const std::vector<uint32_t> &t) {
    size_t i = 1;
    while (i < t.size() && t[i] != 0xFFFF) {
        uint32_t op = t[i] & 0xFFFF, len = (t[i] >> 24) & 0xF, control = (t[i] >> 16) & 0xFF;
        if (i + 1 + len > t.size()) {
            m.bad = true;
            return;
        }
        const uint32_t *p = &t[i + 1];
        i += 1 + len;
        if (op == 31) continue; // dcl
        if (op == 81) {         // def
            std::memcpy(m.c[p[0] & 0x7FF].v, &p[1], 16);
            continue;
        }
        const bool texld = op == 66; // its second source is a sampler, not a value
        Vec a = len > 1 ? read(m, p[1]) : Vec(), b = len > 2 && !texld ? read(m, p[2]) : Vec(),
            c = len > 3 ? read(m, p[3]) : Vec(), d;
        auto each = [&](auto f) {
            for (int k = 0; k < 4; k++) d.v[k] = f(k);
        };
        switch (op) {
        case 1: d = a; break;
        case 2: each([&](int k) { return a.v[k] + b.v[k]; }); break;
        case 4: each([&](int k) { return a.v[k] * b.v[k] + c.v[k]; }); break;
        case 5: each([&](int k) { return a.v[k] * b.v[k]; }); break;
        case 6: each([&](int) { return 1.0f / a.v[0]; }); break;
        case 7: each([&](int) { return 1.0f / std::sqrt(std::fabs(a.v[0])); }); break;
        case 8: each([&](int) { return dot(a, b, 3); }); break;
        case 9: each([&](int) { return dot(a, b, 4); }); break;
        case 11: each([&](int k) { return a.v[k] > b.v[k] ? a.v[k] : b.v[k]; }); break;
        case 12: each([&](int k) { return a.v[k] < b.v[k] ? 1.0f : 0.0f; }); break;
        case 14: each([&](int) { return std::exp2(a.v[0]); }); break;
        case 18: each([&](int k) { return a.v[k] * b.v[k] + (1 - a.v[k]) * c.v[k]; }); break;
        case 20:
        case 23: { // m4x4 / m3x3: rows are consecutive constants
            const int n = op == 20 ? 4 : 3;
            for (int k = 0; k < n; k++) d.v[k] = dot(a, read(m, p[2] + k), n);
            break;
        }
        case 32: each([&](int) { return std::pow(std::fabs(a.v[0]), b.v[0]); }); break;
        case 36: {
            float l = std::sqrt(dot(a, a, 3));
            each([&](int k) { return l > 0 ? a.v[k] / l : 0.0f; });
            break;
        }
        case 66: // texld, texldp (control 1) divides by w
            if (control == 1)
                for (float &f : a.v) f /= a.v[3];
            d = m.sample ? m.sample(p[2] & 0x7FF, a) : Vec();
            break;
        default: m.bad = true; return;
        }
        write(m, p[0], d);
    }
}

bool well_formed(const std::vector<uint32_t> &t, uint32_t version) {
    if (t.size() < 2 || t[0] != version || t.back() != 0xFFFF) return false;
    size_t i = 1;
    while (i < t.size() - 1) i += 1 + ((t[i] >> 24) & 0xF);
    return i == t.size() - 1;
}

bool near(float a, float b, float eps = 1e-4f) { return std::fabs(a - b) <= eps; }
bool near(const Vec &a, float x, float y, float z, float w, float eps = 1e-4f) {
    return near(a.v[0], x, eps) && near(a.v[1], y, eps) && near(a.v[2], z, eps) && near(a.v[3], w, eps);
}
uint32_t fbits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// ---- A device's worth of state ---------------------------------------------------------
struct Rig {
    LegacyState legacy;
    uint32_t rs[256] = {};
    std::vector<ff::DeclElement> decl;
    ff::Inputs in;
    Rig() {
        for (uint32_t s = 0; s < 256; s++) d3d9_render_state_default(s, &rs[s]);
        decl = {{0, 0, 2, 0, 0, 0}, {0, 12, 2, 0, 3, 0}}; // FLOAT3 POSITION, FLOAT3 NORMAL
    }
    ff::Inputs &inputs() {
        in.legacy = &legacy;
        in.render_states = rs;
        in.decl = decl.data();
        in.decl_count = uint32_t(decl.size());
        return in;
    }
    // Runs the generated vertex shader on one vertex (v0..: position, normal, colours, sets).
    Machine vertex(const Vec &pos, const Vec &normal = Vec(), const Vec &diffuse = Vec(), const Vec &specular = Vec(),
                   const Vec &tex0 = Vec()) {
        ff::VsKey k;
        Machine m;
        if (!ff::vertex_key(inputs(), &k)) {
            m.bad = true;
            return m;
        }
        std::vector<float> cs = ff::vertex_constants(in, k);
        for (size_t i = 0; i < cs.size() / 4; i++) std::memcpy(m.c[i].v, &cs[i * 4], 16);
        m.in[0] = pos, m.in[1] = normal, m.in[2] = diffuse, m.in[3] = specular, m.in[4] = tex0;
        std::vector<uint32_t> t = ff::vertex_shader(k);
        CHECK(well_formed(t, 0xFFFE0200u));
        run(m, t);
        return m;
    }
    // Runs the generated pixel shader with interpolated inputs (diffuse, specular, t#) and
    // a sampler that returns `texel(sampler)`.
    Machine pixel(const Vec &diffuse, const Vec &specular, const Vec *t, std::function<Vec(uint32_t)> texel) {
        ff::PsKey k;
        ff::pixel_key(inputs(), &k);
        Machine m;
        std::vector<float> cs = ff::pixel_constants(in, k);
        for (size_t i = 0; i < cs.size() / 4; i++) std::memcpy(m.c[i].v, &cs[i * 4], 16);
        m.in[0] = diffuse, m.in[1] = specular;
        for (int i = 0; i < 8; i++) m.t[i] = t ? t[i] : Vec();
        m.sample = [&](uint32_t s, const Vec &) { return texel(s); };
        std::vector<uint32_t> tokens = ff::pixel_shader(k);
        CHECK(well_formed(tokens, 0xFFFF0200u));
        run(m, tokens);
        return m;
    }
};

Light light(uint32_t type, Vector3 pos, Vector3 dir) {
    Light l;
    std::memset(&l, 0, sizeof(l));
    l.type = type;
    l.diffuse = ColorValue{1, 1, 1, 1};
    l.position = pos;
    l.direction = dir;
    l.range = 100;
    l.attenuation0 = 1;
    return l;
}

Matrix4 translation(float x, float y, float z) {
    Matrix4 m = {};
    m.m[0] = m.m[5] = m.m[10] = m.m[15] = 1;
    m.m[12] = x, m.m[13] = y, m.m[14] = z;
    return m;
}

enum : uint32_t { RS_LIGHTING = 137, RS_SPECULARENABLE = 29, RS_LOCALVIEWER = 142, RS_AMBIENT = 139 };

// ---- Tests -------------------------------------------------------------------------------

void test_keys() {
    Rig g;
    ff::VsKey k;
    CHECK(ff::vertex_key(g.inputs(), &k));
    // D3D9 defaults: lighting on, no lights, material colours (no vertex colours), stage 0
    // MODULATE with no texture coordinates in the declaration.
    CHECK(k.lighting == 1 && k.light_count == 0 && k.has_normal == 1 && k.diffuse_src == 0);
    CHECK(k.stage_count == 1 && k.stage_coord[0] == 0xFF && k.fog == ff::kFogNone);
    // No position: no key (the draw fails).
    g.decl = {{0, 0, 2, 0, 3, 0}};
    CHECK(!ff::vertex_key(g.inputs(), &k));
    // Pre-transformed vertices are never lit.
    g.decl = {{0, 0, 3, 0, 9, 0}, {0, 16, 4, 0, 10, 0}};
    CHECK(ff::vertex_key(g.inputs(), &k) && k.position_t == 1 && k.lighting == 0 && k.has_diffuse == 1);
    // Lights by type in index order, at most 8; a disabled one is left out.
    Rig h;
    for (uint32_t i = 0; i < 10; i++) {
        h.legacy.set_light(i * 3, light(1 + i % 3, Vector3{0, 0, 0}, Vector3{0, 0, 1}));
        h.legacy.set_light_enable(i * 3, i != 1);
    }
    CHECK(ff::vertex_key(h.inputs(), &k) && k.light_count == 8);
    CHECK(k.light_type[0] == 1 && k.light_type[1] == 3 && k.light_type[2] == 1 && k.light_type[3] == 2);
    // Values never change the key: matrices, colours, positions, fog range.
    ff::VsKey before = k;
    h.legacy.set_transform(256, translation(1, 2, 3));
    h.rs[RS_AMBIENT] = 0xFF102030;
    h.legacy.set_light(0, light(1, Vector3{5, 5, 5}, Vector3{0, 0, 1}));
    CHECK(ff::vertex_key(h.inputs(), &k) && std::memcmp(&k, &before, sizeof(k)) == 0);
    // Stages run up to the first disabled one; ops the generator does not model select ARG1.
    Rig s;
    s.in.textures_bound = 0xFF;
    s.legacy.set_texture_stage_state(1, 1, 7);  // stage 1 ADD
    s.legacy.set_texture_stage_state(2, 1, 17); // stage 2 PREMODULATE
    s.legacy.set_texture_stage_state(4, 1, 4);  // stage 4 after a disabled stage 3
    ff::PsKey pk;
    ff::pixel_key(s.inputs(), &pk);
    CHECK(pk.stage_count == 3 && pk.stage[1].colorop == 7 && pk.stage[2].colorop == 2);
    CHECK(!ff::stage_op_supported(17) && ff::stage_op_supported(22) && ff::stage_op_supported(23) &&
          ff::stage_op_supported(24) && !ff::stage_op_supported(0));
    // BUMPENVMAP without a bump map bound passes CURRENT on; with one it stays.
    s.in.textures_bound = 0xFB;
    s.legacy.set_texture_stage_state(2, 1, 22);
    ff::pixel_key(s.inputs(), &pk);
    CHECK(pk.stage[2].colorop == 2);
    s.in.textures_bound = 0xFF;
    ff::pixel_key(s.inputs(), &pk);
    CHECK(pk.stage[2].colorop == 22);
}

void test_transforms() {
    Rig g;
    // WVP: world translation, view translation, a projection scaling x.
    g.legacy.set_transform(256, translation(1, 2, 3));
    g.legacy.set_transform(2, translation(0, 0, 4));
    Matrix4 p = translation(0, 0, 0);
    p.m[0] = 2;
    g.legacy.set_transform(3, p);
    Machine m = g.vertex(vec(1, 1, 1, 1), vec(0, 0, -1, 0));
    CHECK(!m.bad && near(m.pos, (1 + 1) * 2, 1 + 2, 1 + 3 + 4, 1));
    // Pre-transformed: screen position back to clip space through the viewport, w = 1/rhw.
    Rig t;
    t.decl = {{0, 0, 3, 0, 9, 0}};
    const float vp[6] = {10, 20, 100, 50, 0, 1};
    std::memcpy(t.in.viewport, vp, sizeof(vp));
    m = t.vertex(vec(10, 20, 0.25f, 0.5f));
    CHECK(!m.bad && near(m.pos, -1 * 2, 1 * 2, 0.25f * 2, 2));
    m = t.vertex(vec(110, 70, 1, 1));
    CHECK(!m.bad && near(m.pos, 1, -1, 1, 1));
}

void test_lighting() {
    // Directional light along +z onto a normal facing the camera (-z): N.L = 1.
    Rig g;
    Material mat = {};
    mat.diffuse = ColorValue{0.5f, 0.25f, 1, 0.75f};
    mat.ambient = ColorValue{0.1f, 0.2f, 0.3f, 1};
    mat.emissive = ColorValue{0.05f, 0, 0, 0};
    g.legacy.set_material(mat);
    g.rs[RS_AMBIENT] = 0x00808080; // 128/255 global ambient
    Light l = light(3, Vector3{0, 0, 0}, Vector3{0, 0, 1});
    l.ambient = ColorValue{0.2f, 0.2f, 0.2f, 1};
    g.legacy.set_light(0, l);
    g.legacy.set_light_enable(0, true);
    const float amb = 128.0f / 255 + 0.2f;
    Machine m = g.vertex(vec(0, 0, 5, 1), vec(0, 0, -1, 0));
    CHECK(!m.bad && near(m.od[0], 0.05f + 0.1f * amb + 0.5f, 0.2f * amb + 0.25f, 1, 0.75f)); // blue saturates
    // Facing away: no diffuse, ambient stays.
    m = g.vertex(vec(0, 0, 5, 1), vec(0, 0, 1, 0));
    CHECK(!m.bad && near(m.od[0], 0.05f + 0.1f * amb, 0.2f * amb, 0.3f * amb, 0.75f));
    // COLOR1 as the diffuse source when the declaration has it.
    g.decl.push_back({0, 24, 4, 0, 10, 0});
    m = g.vertex(vec(0, 0, 5, 1), vec(0, 0, -1, 0), vec(0.25f, 0.5f, 0, 0.5f));
    CHECK(!m.bad && near(m.od[0], 0.05f + 0.1f * amb + 0.25f, 0.2f * amb + 0.5f, 0.3f * amb, 0.5f));
    // Lighting off: the vertex colour as it is.
    g.rs[RS_LIGHTING] = 0;
    m = g.vertex(vec(0, 0, 5, 1), vec(0, 0, -1, 0), vec(0.25f, 0.5f, 0, 0.5f));
    CHECK(!m.bad && near(m.od[0], 0.25f, 0.5f, 0, 0.5f));

    // Point light: attenuation 1/(a0 + a1 d + a2 d^2), nothing beyond the range.
    Rig p;
    p.legacy.set_material(Material{{1, 1, 1, 1}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, 0});
    Light pl = light(1, Vector3{0, 0, 0}, Vector3{0, 0, 1});
    pl.attenuation0 = 1, pl.attenuation1 = 0.5f, pl.attenuation2 = 0.25f;
    p.legacy.set_light(2, pl);
    p.legacy.set_light_enable(2, true);
    m = p.vertex(vec(0, 0, 2, 1), vec(0, 0, -1, 0));
    CHECK(!m.bad && near(m.od[0].v[0], 1.0f / (1 + 1 + 1)));
    pl.range = 1.5f;
    p.legacy.set_light(2, pl);
    m = p.vertex(vec(0, 0, 2, 1), vec(0, 0, -1, 0));
    CHECK(!m.bad && near(m.od[0].v[0], 0));

    // Spot light at the origin along +z: full inside theta/2, none outside phi/2, and
    // ((rho - cos(phi/2)) / (cos(theta/2) - cos(phi/2)))^falloff between.
    Rig s;
    s.legacy.set_material(Material{{1, 1, 1, 1}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, 0});
    Light sl = light(2, Vector3{0, 0, 0}, Vector3{0, 0, 1});
    sl.theta = 0.4f, sl.phi = 1.0f, sl.falloff = 2.0f;
    s.legacy.set_light(0, sl);
    s.legacy.set_light_enable(0, true);
    m = s.vertex(vec(0, 0, 4, 1), vec(0, 0, -1, 0));
    CHECK(!m.bad && near(m.od[0].v[0], 1));
    m = s.vertex(vec(4, 0, 4, 1), vec(-1, 0, 0, 0)); // 45 degrees off the axis
    CHECK(!m.bad && near(m.od[0].v[0], 0));
    const float angle = 0.4f, rho = std::cos(angle), x = 4 * std::tan(angle);
    const float spot = std::pow((rho - std::cos(0.5f)) / (std::cos(0.2f) - std::cos(0.5f)), 2.0f);
    const float nl = std::sin(angle); // normal (-1, 0, 0) against L = -(sin, 0, cos)
    m = s.vertex(vec(x, 0, 4, 1), vec(-1, 0, 0, 0));
    CHECK(!m.bad && near(m.od[0].v[0], spot * nl, 1e-3f));

    // Specular: H = normalize(L + V), V towards the eye (local viewer) or (0, 0, -1).
    Rig h;
    h.legacy.set_material(Material{{0, 0, 0, 1}, {0, 0, 0, 0}, {1, 0.5f, 0.25f, 1}, {0, 0, 0, 0}, 4});
    h.legacy.set_light(0, light(3, Vector3{0, 0, 0}, Vector3{0, 0, 1}));
    Light hl;
    h.legacy.light(0, &hl);
    hl.specular = ColorValue{1, 1, 1, 1};
    h.legacy.set_light(0, hl);
    h.legacy.set_light_enable(0, true);
    h.rs[RS_SPECULARENABLE] = 1;
    h.rs[RS_LOCALVIEWER] = 0;
    m = h.vertex(vec(2, 0, 2, 1), vec(0, 0, -1, 0));
    CHECK(!m.bad && near(m.od[1], 1, 0.5f, 0.25f, 1)); // H = (0, 0, -1) = N
    h.rs[RS_LOCALVIEWER] = 1;
    m = h.vertex(vec(2, 0, 2, 1), vec(0, 0, -1, 0));
    // V = (-1, 0, -1)/sqrt2, L = (0, 0, -1): N.H = cos(22.5 degrees).
    const float nh4 = std::pow(std::cos(3.14159265f / 8), 4.0f);
    CHECK(!m.bad && near(m.od[1], nh4, 0.5f * nh4, 0.25f * nh4, 1, 1e-3f));
    // The light behind the surface: no specular.
    m = h.vertex(vec(2, 0, 2, 1), vec(0, 0, 1, 0));
    CHECK(!m.bad && near(m.od[1], 0, 0, 0, 1));
}

void test_stages() {
    Rig g;
    g.rs[RS_LIGHTING] = 0;
    g.in.textures_bound = 0x3;
    const Vec diffuse = vec(0.5f, 0.25f, 1, 0.5f), spec = vec(0.1f, 0.2f, 0.3f, 0.4f);
    auto texel = [](uint32_t s) { return s == 0 ? vec(0.5f, 1, 0.25f, 0.75f) : vec(0.2f, 0.4f, 0.6f, 0.8f); };
    // Default stage 0: MODULATE(texture, diffuse), alpha SELECTARG1 texture.
    Machine m = g.pixel(diffuse, spec, nullptr, texel);
    CHECK(!m.bad && near(m.oc, 0.25f, 0.25f, 0.25f, 0.75f));
    // Without a texture, an op reading D3DTA_TEXTURE passes CURRENT on (colour and alpha).
    g.in.textures_bound = 0;
    m = g.pixel(diffuse, spec, nullptr, texel);
    CHECK(!m.bad && near(m.oc, 0.5f, 0.25f, 1, 0.5f));
    g.in.textures_bound = 0x3;
    // ADDSIGNED (clamped), alpha SUBTRACT.
    g.legacy.set_texture_stage_state(0, 1, 8);
    g.legacy.set_texture_stage_state(0, 4, 10);
    g.legacy.set_texture_stage_state(0, 6, 0); // ALPHAARG2 diffuse
    m = g.pixel(diffuse, spec, nullptr, texel);
    CHECK(!m.bad && near(m.oc, 0.5f, 0.75f, 0.75f, 0.25f));
    // DOTPRODUCT3 fills all four channels: dot(2t-1, 2d-1) = 0*0 + 1*(-0.5) + (-0.5)*1.
    g.legacy.set_texture_stage_state(0, 1, 24);
    m = g.pixel(diffuse, spec, nullptr, texel);
    CHECK(!m.bad && near(m.oc, 0, 0, 0, 0));
    g.legacy.set_texture_stage_state(0, 3, 3); // COLORARG2 TFACTOR
    g.rs[60] = 0xFFFF8080;                     // (1, 128/255, 128/255)
    m = g.pixel(diffuse, spec, nullptr, texel);
    const float e = 2 * 128.0f / 255 - 1, d3 = 0 * 1 + 1 * e + (-0.5f) * e;
    CHECK(!m.bad && near(m.oc, d3, d3, d3, d3));
    // ALPHAREPLICATE and COMPLEMENT arguments.
    g.legacy.set_texture_stage_state(0, 1, 2);        // SELECTARG1
    g.legacy.set_texture_stage_state(0, 2, 2 | 0x20); // texture alpha replicated
    g.legacy.set_texture_stage_state(0, 4, 2);
    g.legacy.set_texture_stage_state(0, 5, 0 | 0x10); // 1 - diffuse alpha
    m = g.pixel(diffuse, spec, nullptr, texel);
    CHECK(!m.bad && near(m.oc, 0.75f, 0.75f, 0.75f, 0.5f));
    // Two stages: stage 0 into TEMP (current stays the diffuse), stage 1 LERP(temp alpha,
    // texture 1, current) reading t1.
    g.legacy.set_texture_stage_state(0, 1, 4); // MODULATE texture x diffuse
    g.legacy.set_texture_stage_state(0, 2, 2);
    g.legacy.set_texture_stage_state(0, 3, 0);
    g.legacy.set_texture_stage_state(0, 4, 2);
    g.legacy.set_texture_stage_state(0, 5, 2);
    g.legacy.set_texture_stage_state(0, 28, 5); // RESULTARG TEMP
    g.legacy.set_texture_stage_state(1, 1, 26); // LERP
    g.legacy.set_texture_stage_state(1, 26, 5 | 0x20);
    g.legacy.set_texture_stage_state(1, 2, 2);
    g.legacy.set_texture_stage_state(1, 3, 1);
    g.legacy.set_texture_stage_state(1, 4, 3); // alpha SELECTARG2 current
    g.legacy.set_texture_stage_state(1, 6, 1);
    m = g.pixel(diffuse, spec, nullptr, texel);
    const float a = 0.75f; // temp alpha = texture 0 alpha
    CHECK(!m.bad && near(m.oc, a * 0.2f + (1 - a) * 0.5f, a * 0.4f + (1 - a) * 0.25f, a * 0.6f + (1 - a) * 1, 0.5f));
    // Specular added when enabled.
    Rig s;
    s.rs[RS_SPECULARENABLE] = 1;
    s.legacy.set_texture_stage_state(0, 1, 2);
    s.legacy.set_texture_stage_state(0, 2, 0);
    m = s.pixel(diffuse, spec, nullptr, texel);
    CHECK(!m.bad && near(m.oc, 0.6f, 0.45f, 1, 0.5f)); // alpha: no texture, so the diffuse's
}

void test_texture_transform() {
    Rig g;
    g.rs[RS_LIGHTING] = 0;
    g.decl = {{0, 0, 2, 0, 0, 0}, {0, 12, 1, 0, 5, 0}}; // FLOAT3 POSITION, FLOAT2 TEXCOORD0
    // COUNT2: a 2D set goes in as (u, v, 1), so _31/_32 translate.
    Matrix4 t = translation(0, 0, 0);
    t.m[0] = 2, t.m[5] = 0.5f, t.m[8] = 0.25f, t.m[9] = 0.125f;
    g.legacy.set_transform(16, t);
    g.legacy.set_texture_stage_state(0, 24, 2);
    Machine m = g.vertex(vec(0, 0, 1, 1), Vec(), Vec(), Vec(), vec(0.5f, 0.25f, 0, 1));
    CHECK(!m.bad && near(m.ot[0].v[0], 2 * 0.5f + 0.25f) && near(m.ot[0].v[1], 0.5f * 0.25f + 0.125f));
    // Off: the set as it is.
    g.legacy.set_texture_stage_state(0, 24, 0);
    m = g.vertex(vec(0, 0, 1, 1), Vec(), Vec(), Vec(), vec(0.5f, 0.25f, 0, 1));
    CHECK(!m.bad && near(m.ot[0], 0.5f, 0.25f, 0, 1));
    // COUNT3 | PROJECTED on a 3D set: the third component moves to w, and the pixel shader
    // samples with texldp.
    g.decl[1].type = 2;
    g.legacy.set_transform(16, translation(0, 0, 0));
    g.legacy.set_texture_stage_state(0, 24, 3 | 0x100);
    m = g.vertex(vec(0, 0, 1, 1), Vec(), Vec(), Vec(), vec(1, 3, 2, 1));
    CHECK(!m.bad && near(m.ot[0].v[0], 1) && near(m.ot[0].v[1], 3) && near(m.ot[0].v[3], 2));
    g.in.textures_bound = 1;
    ff::PsKey pk;
    ff::pixel_key(g.inputs(), &pk);
    CHECK(pk.stage[0].projected == 1);
    bool texldp = false;
    for (uint32_t tok : ff::pixel_shader(pk)) texldp |= tok == (66u | 1u << 16 | 3u << 24);
    CHECK(texldp);
}

void test_texgen() {
    // Camera-space position and normal as texture coordinates (lighting off; the view
    // matrix moves the eye space), optionally through a texture matrix.
    Rig g;
    g.rs[RS_LIGHTING] = 0;
    g.legacy.set_transform(2, translation(0, 0, 4));
    g.legacy.set_texture_stage_state(0, 11, 0x20000); // CAMERASPACEPOSITION
    Machine m = g.vertex(vec(1, 2, 3, 1), vec(0, 1, 0, 0));
    CHECK(!m.bad && near(m.ot[0], 1, 2, 7, 1));
    g.legacy.set_texture_stage_state(0, 11, 0x10000); // CAMERASPACENORMAL
    m = g.vertex(vec(1, 2, 3, 1), vec(0, 1, 0, 0));
    CHECK(!m.bad && near(m.ot[0], 0, 1, 0, 1));
    // COUNT2 with a scale/offset matrix: a generated 3D vector multiplies as (x, y, z, 1).
    Matrix4 t = translation(0.5f, 0.5f, 0);
    t.m[0] = t.m[5] = 0.5f;
    g.legacy.set_transform(16, t);
    g.legacy.set_texture_stage_state(0, 24, 2);
    m = g.vertex(vec(1, 2, 3, 1), vec(0.6f, 0.8f, 0, 0));
    CHECK(!m.bad && near(m.ot[0].v[0], 0.8f) && near(m.ot[0].v[1], 0.9f));
}

void test_fog() {
    enum : uint32_t { FOGENABLE = 28, FOGCOLOR = 34, FOGTABLEMODE = 35, FOGSTART = 36, FOGEND = 37,
                      FOGDENSITY = 38, FOGVERTEXMODE = 140 };
    // Vertex LINEAR fog: factor (end - z) / (end - start) per vertex, into the first free oT.
    Rig g;
    g.rs[RS_LIGHTING] = 0;
    g.rs[FOGENABLE] = 1;
    g.rs[FOGVERTEXMODE] = 3;
    g.rs[FOGSTART] = fbits(2), g.rs[FOGEND] = fbits(8);
    g.rs[FOGCOLOR] = 0x00FF0000;
    ff::VsKey k;
    CHECK(ff::vertex_key(g.inputs(), &k) && k.fog == ff::kFogVertexLinear && k.fog_reg == 1);
    Machine m = g.vertex(vec(0, 0, 5, 1));
    CHECK(!m.bad && near(m.ot[1].v[0], 0.5f));
    m = g.vertex(vec(0, 0, 12, 1));
    CHECK(!m.bad && near(m.ot[1].v[0], 0));
    // The pixel shader blends towards the fog colour by the interpolated factor.
    Vec t[8];
    t[1] = vec(0.25f, 0, 0, 0);
    m = g.pixel(vec(0, 0.5f, 1, 1), Vec(), t, [](uint32_t) { return vec(1, 1, 1, 1); });
    CHECK(!m.bad && near(m.oc, 0.75f, 0.125f, 0.25f, 1));
    // Range fog: the eye distance |P| instead of z.
    g.rs[48] = 1; // RANGEFOGENABLE
    m = g.vertex(vec(3, 0, 4, 1));
    CHECK(!m.bad && near(m.ot[1].v[0], (8 - 5) / 6.0f));
    g.rs[48] = 0;
    // Vertex EXP: exp(-density * z).
    g.rs[FOGVERTEXMODE] = 1;
    g.rs[FOGDENSITY] = fbits(0.25f);
    m = g.vertex(vec(0, 0, 4, 1));
    CHECK(!m.bad && near(m.ot[1].v[0], std::exp(-1.0f)));
    // Table EXP2 with a perspective projection: W-based, computed per pixel from (z, w).
    g.rs[FOGTABLEMODE] = 2;
    Matrix4 p = translation(0, 0, 0);
    p.m[11] = 1, p.m[15] = 0;
    g.legacy.set_transform(3, p);
    ff::PsKey pk;
    ff::pixel_key(g.inputs(), &pk);
    CHECK(pk.fog == ff::kFogTableExp2 && pk.fog_w == 1);
    m = g.vertex(vec(0, 0, 4, 1));
    CHECK(!m.bad && near(m.ot[1], 4, 4, 4, 4)); // clip z and w (z = w for this projection)
    t[1] = vec(3, 4, 0, 0);
    m = g.pixel(vec(0, 0, 0, 1), Vec(), t, [](uint32_t) { return vec(1, 1, 1, 1); });
    const float f = std::exp(-(0.25f * 4) * (0.25f * 4));
    CHECK(!m.bad && near(m.oc.v[0], 1 - f));
    // Z-based with an affine projection: z / w.
    g.legacy.set_transform(3, translation(0, 0, 0));
    g.rs[FOGTABLEMODE] = 3;
    g.rs[FOGSTART] = fbits(0), g.rs[FOGEND] = fbits(1);
    ff::pixel_key(g.inputs(), &pk);
    CHECK(pk.fog == ff::kFogTableLinear && pk.fog_w == 0);
    t[1] = vec(0.5f, 2, 0, 0);
    m = g.pixel(vec(0, 0, 0, 1), Vec(), t, [](uint32_t) { return vec(1, 1, 1, 1); });
    CHECK(!m.bad && near(m.oc.v[0], 0.25f));
}

// Writes token streams of varied states for the translator test (guest-tools/tests/umd_ff.rs):
// DIR/N.vs and DIR/N.ps, one pair per state (a vertex and pixel shader drawn together).
int dump(const char *dir) {
    int n = 0;
    auto save = [&](const std::vector<uint32_t> &t, const char *ext) {
        std::string path = std::string(dir) + "/" + std::to_string(n) + ext;
        FILE *f = std::fopen(path.c_str(), "wb");
        if (!f) return false;
        bool ok = std::fwrite(t.data(), 4, t.size(), f) == t.size();
        return std::fclose(f) == 0 && ok;
    };
    for (int variant = 0; variant < 12; variant++) {
        Rig g;
        g.decl = {{0, 0, 2, 0, 0, 0}, {0, 12, 2, 0, 3, 0}, {0, 24, 4, 0, 10, 0}, {0, 28, 4, 0, 10, 1},
                  {0, 32, 1, 0, 5, 0},  {0, 40, 1, 0, 5, 1}};
        if (variant == 1) g.decl = {{0, 0, 3, 0, 9, 0}, {0, 16, 4, 0, 10, 0}, {0, 20, 1, 0, 5, 0}};
        for (uint32_t i = 0; i < 3; i++) {
            g.legacy.set_light(i, light(1 + (i + variant) % 3, Vector3{1, 2, 3}, Vector3{0, 0, 1}));
            g.legacy.set_light_enable(i, variant % 3 != 2 || i == 0);
        }
        g.rs[RS_SPECULARENABLE] = variant % 2;
        g.rs[RS_LOCALVIEWER] = variant % 4 < 2;
        g.rs[28] = variant >= 4;                           // FOGENABLE
        g.rs[140] = variant >= 4 && variant < 8 ? variant - 4 : 0; // vertex modes, NONE
        g.rs[35] = variant >= 8 ? variant - 8 : 0;         // table modes
        g.in.textures_bound = variant == 3 ? 0 : 0xFF;
        // Stage ops round-robin over every D3DTOP, eight stages at most.
        for (uint32_t s = 0; s < 8; s++) {
            uint32_t op = 2 + (variant * 8 + s) % 25;
            g.legacy.set_texture_stage_state(s, 1, op);
            g.legacy.set_texture_stage_state(s, 4, 2 + (variant * 5 + s) % 25);
            g.legacy.set_texture_stage_state(s, 26, (s + 4) % 7 | (s & 1 ? 0x10 : 0x20));
            g.legacy.set_texture_stage_state(s, 2, s % 7 | (s & 2 ? 0x30 : 0));
            g.legacy.set_texture_stage_state(s, 3, (s + 2) % 7);
            g.legacy.set_texture_stage_state(s, 11, s % 2 | (variant % 5 == 0 ? (s % 3) << 16 : 0));
            g.legacy.set_texture_stage_state(s, 28, s == 3 ? 5 : 1);
            g.legacy.set_texture_stage_state(s, 24, variant % 3 == 1 ? (2 + s % 3) | (s & 1 ? 0x100 : 0) : 0);
        }
        if (variant % 4 == 3) g.legacy.set_texture_stage_state(2 + variant / 4, 1, 1); // fewer stages
        ff::VsKey vk;
        ff::PsKey pk;
        if (!ff::vertex_key(g.inputs(), &vk)) return 1;
        ff::pixel_key(g.in, &pk);
        if (!save(ff::vertex_shader(vk), ".vs") || !save(ff::pixel_shader(pk), ".ps")) return 1;
        n++;
    }
    std::printf("dumped %d\n", n);
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    if (argc == 3 && std::strcmp(argv[1], "dump") == 0) return dump(argv[2]);
    test_keys();
    test_transforms();
    test_lighting();
    test_stages();
    test_texture_transform();
    test_texgen();
    test_fog();
    return agpu_check_report();
}
