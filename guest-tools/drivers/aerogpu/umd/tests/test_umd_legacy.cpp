// Host unit tests of the UMD's cached legacy state (aerogpu_umd_legacy.cpp): Set/Get
// round-trips with D3D9 defaults, bounds on guest-chosen indices, and state blocks
// (record, snapshot by type, capture, apply). Run by guest-tools/tests/umd_legacy.rs.
#include <cstring>

#include "../src/aerogpu_umd_core.h"
#include "../src/aerogpu_umd_legacy.h"
#include "../../tests_host/agpu_check.h"

using namespace aerogpu;

static Matrix4 mat(float base) {
    Matrix4 m;
    for (int i = 0; i < 16; i++) m.m[i] = base + float(i);
    return m;
}

static bool same(const Matrix4 &a, const Matrix4 &b) { return std::memcmp(a.m, b.m, sizeof(a.m)) == 0; }

static bool is_identity(const Matrix4 &a) {
    for (int i = 0; i < 16; i++)
        if (a.m[i] != ((i % 5 == 0) ? 1.0f : 0.0f)) return false;
    return true;
}

static Light light(float x) {
    Light l;
    std::memset(&l, 0, sizeof(l));
    l.type = 1; // point
    l.diffuse = ColorValue{x, 0.5f, 0.25f, 1.0f};
    l.position = Vector3{x, 2.0f, 3.0f};
    l.range = 100.0f;
    l.attenuation1 = x;
    return l;
}

static void test_defaults_and_round_trip() {
    LegacyState s;
    // D3D9 defaults before any Set.
    CHECK(s.texture_stage_state(0, 1) == 4);  // COLOROP MODULATE on stage 0
    CHECK(s.texture_stage_state(1, 1) == 1);  // DISABLE elsewhere
    CHECK(s.texture_stage_state(0, 4) == 2);  // ALPHAOP SELECTARG1
    CHECK(s.texture_stage_state(3, 11) == 3); // TEXCOORDINDEX = stage
    CHECK(s.texture_stage_state(2, 13) == 1); // ADDRESSU WRAP
    CHECK(is_identity(s.transform(2)) && is_identity(s.transform(256 + 7)));
    CHECK(s.stream_source_freq(5) == 1);
    CHECK(s.autogen_filter(0x1000) == 2); // D3DTEXF_LINEAR
    float wn = -1, wf = -1;
    s.w_info(&wn, &wf);
    CHECK(wn == 0.0f && wf == 1.0f);

    CHECK(s.set_texture_stage_state(2, 1, 7) == kS_OK);
    CHECK(s.texture_stage_state(2, 1) == 7);
    CHECK(s.set_texture_stage_state(16, 1, 7) == kD3DERR_INVALIDCALL);
    CHECK(s.set_texture_stage_state(0, 33, 7) == kD3DERR_INVALIDCALL);

    CHECK(s.set_render_state(LegacyState::kRsPatchSegments, 0x40400000u) == kS_OK); // 3.0f
    CHECK(s.set_render_state(LegacyState::kRsSoftwareVertexProcessing, 1) == kS_OK);
    CHECK(s.render_state(LegacyState::kRsPatchSegments) == 0x40400000u);
    CHECK(s.render_state(LegacyState::kRsSoftwareVertexProcessing) == 1);
    CHECK(s.set_render_state(7, 1) == kD3DERR_INVALIDCALL); // ZENABLE belongs to the core
    CHECK(LegacyState::is_legacy_render_state(164) && !LegacyState::is_legacy_render_state(7));

    CHECK(s.set_transform(3, mat(10)) == kS_OK);
    CHECK(same(s.transform(3), mat(10)));
    CHECK(s.set_transform(512, mat(1)) == kD3DERR_INVALIDCALL);

    float plane[4] = {1.0f, -2.0f, 3.5f, 4.0f}, got[4] = {};
    CHECK(s.set_clip_plane(5, plane) == kS_OK);
    CHECK(s.clip_plane(5, got) && std::memcmp(got, plane, sizeof(plane)) == 0);
    CHECK(s.set_clip_plane(32, plane) == kD3DERR_INVALIDCALL);

    CHECK(s.set_stream_source_freq(1, 0x40000003u) == kS_OK); // D3DSTREAMSOURCE_INSTANCEDATA | 3
    CHECK(s.stream_source_freq(1) == 0x40000003u);
    CHECK(s.set_stream_source_freq(16, 2) == kD3DERR_INVALIDCALL);

    int32_t iv[8] = {1, -2, 3, -4, 5, 6, 7, 8}, io[4] = {};
    CHECK(s.set_const_i(kLegacyStageVertex, 14, iv, 2) == kS_OK);
    CHECK(s.const_i(kLegacyStageVertex, 15, io) && io[0] == 5 && io[3] == 8);
    CHECK(s.const_i(kLegacyStagePixel, 15, io) && io[0] == 0); // stages are separate
    CHECK(s.set_const_i(kLegacyStageVertex, 15, iv, 2) == kD3DERR_INVALIDCALL); // past register 15
    CHECK(s.set_const_i(kLegacyStagePixel, 0, nullptr, 1) == kD3DERR_INVALIDCALL);
    CHECK(s.set_const_i(kLegacyStagePixel, 0xFFFFFFFFu, iv, 2) == kD3DERR_INVALIDCALL); // no wrap
    uint32_t bv[3] = {0, 5, 1};
    CHECK(s.set_const_b(kLegacyStagePixel, 13, bv, 3) == kS_OK);
    CHECK(s.const_b(kLegacyStagePixel, 13) == 0 && s.const_b(kLegacyStagePixel, 14) == 1);
    CHECK(s.const_b(kLegacyStageVertex, 14) == 0);
    CHECK(s.set_const_b(2, 0, bv, 1) == kD3DERR_INVALIDCALL);

    Material m = {{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}, {13, 14, 15, 16}, 17};
    CHECK(s.set_material(m) == kS_OK);
    Material mg = s.material();
    CHECK(std::memcmp(&m, &mg, sizeof(m)) == 0);
    CHECK(s.material().emissive.g == 14.0f && s.material().power == 17.0f);

    s.set_w_info(0.5f, 200.0f);
    s.w_info(&wn, &wf);
    CHECK(wn == 0.5f && wf == 200.0f);
}

static void test_multiply_transform() {
    LegacyState s;
    // Identity * M = M.
    CHECK(s.multiply_transform(256, mat(1)) == kS_OK);
    CHECK(same(s.transform(256), mat(1)));
    // Current * M (row-vector D3D convention): translation then scale.
    Matrix4 t = {{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 5, 6, 7, 1}};
    Matrix4 sc = {{2, 0, 0, 0, 0, 3, 0, 0, 0, 0, 4, 0, 0, 0, 0, 1}};
    CHECK(s.set_transform(2, t) == kS_OK);
    CHECK(s.multiply_transform(2, sc) == kS_OK);
    Matrix4 r = s.transform(2);
    CHECK(r.m[0] == 2 && r.m[5] == 3 && r.m[10] == 4);
    CHECK(r.m[12] == 10 && r.m[13] == 18 && r.m[14] == 28 && r.m[15] == 1);
    CHECK(s.multiply_transform(600, sc) == kD3DERR_INVALIDCALL);
}

static void test_lights_and_bounds() {
    LegacyState s;
    Light got;
    CHECK(!s.light(7, &got));
    CHECK(s.create_light(7) == kS_OK);
    CHECK(s.light(7, &got) && got.type == 3 && got.direction.z == 1.0f); // default light
    CHECK(!s.light_enabled(7));
    CHECK(s.set_light(7, light(4.0f)) == kS_OK);
    Light want = light(4.0f);
    CHECK(s.light(7, &got) && std::memcmp(&got, &want, sizeof(got)) == 0);
    CHECK(s.set_light_enable(7, true) == kS_OK && s.light_enabled(7));
    // Enabling a light never set creates the default light.
    CHECK(s.set_light_enable(100000, true) == kS_OK);
    CHECK(s.light(100000, &got) && got.diffuse.r == 1.0f && s.light_enabled(100000));
    CHECK(s.destroy_light(7) == kS_OK && !s.light(7, &got) && !s.light_enabled(7));
    CHECK(s.destroy_light(7) == kD3DERR_INVALIDCALL);
    // Guest-chosen indices are bounded.
    for (uint32_t i = 0; s.light_count() < LegacyState::kMaxLights; i++) s.create_light(0x10000u + i);
    CHECK(s.create_light(0xFFFFFFFFu) == kE_OUTOFMEMORY);
    CHECK(s.set_light(0xFFFFFFFEu, light(1)) == kE_OUTOFMEMORY);
    CHECK(s.set_light(100000, light(1)) == kS_OK); // existing ones still take data
}

static void test_resource_properties() {
    LegacyState s;
    PaletteEntry e[3] = {{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}}, got;
    CHECK(s.update_palette(9, 254, 2, e) == kS_OK);
    CHECK(s.palette_entry(9, 255, &got) && got.red == 5 && got.flags == 8);
    CHECK(s.palette_entry(9, 0, &got) && got.red == 0);
    CHECK(!s.palette_entry(10, 0, &got));
    CHECK(s.update_palette(9, 254, 3, e) == kD3DERR_INVALIDCALL); // past entry 255
    CHECK(s.update_palette(9, 0xFFFFFFFFu, 2, e) == kD3DERR_INVALIDCALL);
    for (uint32_t p = 100; p < 100 + LegacyState::kMaxPalettes - 1; p++) CHECK(s.update_palette(p, 0, 1, e) == kS_OK);
    CHECK(s.update_palette(5000, 0, 1, e) == kE_OUTOFMEMORY);
    CHECK(s.update_palette(9, 0, 1, e) == kS_OK); // existing palettes still update

    uint32_t flags = 0;
    CHECK(s.set_palette(0x1000, 9, 0x2001) == kS_OK);
    CHECK(s.resource_palette(0x1000, &flags) == 9 && flags == 0x2001);
    CHECK(s.set_palette(0x1000, 0, 0x2001) == kS_OK);
    CHECK(s.resource_palette(0x1000, &flags) == 0 && flags == 0);
    s.set_priority(0x1000, 0xC0000000u);
    s.set_autogen_filter(0x1000, 1);
    CHECK(s.priority(0x1000) == 0xC0000000u && s.autogen_filter(0x1000) == 1);
    CHECK(s.priority(0x1001) == 0);
    s.forget_resource(0x1000);
    CHECK(s.priority(0x1000) == 0 && s.autogen_filter(0x1000) == 2);
}

static void test_record_and_apply() {
    LegacyState dev;
    LegacyBlock b;
    // A light created before recording; its enable is recorded, its data is not.
    dev.set_light(3, light(1.0f));
    dev.begin_record(&b);
    CHECK(dev.recording());
    dev.set_texture_stage_state(1, 1, 9);
    dev.set_transform(3, mat(100));
    dev.set_transform(3, mat(200)); // the last value wins
    const float p1234[4] = {1, 2, 3, 4}, p9[4] = {9, 9, 9, 9};
    const uint32_t b_true = 1, b_false = 0;
    dev.set_clip_plane(2, p1234);
    dev.set_const_b(kLegacyStageVertex, 4, &b_true, 1);
    dev.set_light_enable(3, true);
    dev.set_render_state(LegacyState::kRsPatchSegments, 0x40000000u);
    dev.multiply_transform(2, mat(1)); // not recorded (D3D9)
    dev.end_record();
    CHECK(!dev.recording());
    // Recording left the device as it was (D3D9), except for MultiplyTransform.
    float p0[4];
    CHECK(dev.texture_stage_state(1, 1) == 1 && same(dev.transform(3), LegacyState().transform(3)));
    CHECK(dev.clip_plane(2, p0) && p0[0] == 0 && dev.const_b(kLegacyStageVertex, 4) == 0);
    CHECK(!dev.light_enabled(3) && dev.render_state(LegacyState::kRsPatchSegments) == 0);
    CHECK(same(dev.transform(2), mat(1))); // identity * mat(1), applied while recording
    dev.set_texture_stage_state(0, 1, 8); // after the recording: not in the block

    CHECK(b.slots().size() == 6);
    CHECK(b.slots().count(LegacyKey{LegacyKind::Transform, 3}) == 1);
    CHECK(b.slots().count(LegacyKey{LegacyKind::Transform, 2}) == 0);
    CHECK(b.slots().count(LegacyKey{LegacyKind::LightEnable, 3}) == 1);
    CHECK(b.slots().count(LegacyKey{LegacyKind::LightData, 3}) == 0);
    CHECK(b.slots().count(LegacyKey{LegacyKind::TextureStage, 0 << 8 | 1}) == 0);

    // Change everything, then apply: the recorded slots come back, the rest stays.
    dev.set_texture_stage_state(1, 1, 2);
    dev.set_transform(3, mat(300));
    dev.set_transform(2, mat(400));
    dev.set_clip_plane(2, p9);
    dev.set_const_b(kLegacyStageVertex, 4, &b_false, 1);
    dev.set_light_enable(3, false);
    dev.set_light(3, light(7.0f));
    dev.set_render_state(LegacyState::kRsPatchSegments, 0);
    b.apply(dev);
    float p[4];
    CHECK(dev.texture_stage_state(1, 1) == 9);
    CHECK(same(dev.transform(3), mat(200)));
    CHECK(same(dev.transform(2), mat(400)));
    CHECK(dev.clip_plane(2, p) && p[0] == 1 && p[3] == 4);
    CHECK(dev.const_b(kLegacyStageVertex, 4) == 1);
    CHECK(dev.light_enabled(3));
    Light l;
    CHECK(dev.light(3, &l) && l.position.x == 7.0f); // data was not recorded
    CHECK(dev.render_state(LegacyState::kRsPatchSegments) == 0x40000000u);
    CHECK(dev.texture_stage_state(0, 1) == 8);

    // Capture refreshes only the held slots from the device.
    dev.set_transform(3, mat(500));
    dev.set_transform(2, mat(600));
    b.capture(dev);
    CHECK(b.slots().size() == 6);
    CHECK(same(b.values().transform(3), mat(500)));
    dev.set_transform(3, mat(700));
    b.apply(dev);
    CHECK(same(dev.transform(3), mat(500)) && same(dev.transform(2), mat(600)));

    // Applying is not recorded into a block being recorded.
    LegacyBlock other;
    dev.begin_record(&other);
    b.apply(dev);
    dev.end_record();
    CHECK(other.slots().empty());
}

static void test_snapshot_types() {
    LegacyState dev;
    dev.set_texture_stage_state(0, 1, 7);  // pixel stage state
    dev.set_texture_stage_state(0, 11, 5); // vertex stage state (TEXCOORDINDEX)
    dev.set_transform(2, mat(10));
    dev.set_transform(256 + 3, mat(20)); // a world matrix beyond 0
    const int32_t i1234[4] = {1, 2, 3, 4}, i5678[4] = {5, 6, 7, 8};
    dev.set_const_i(kLegacyStagePixel, 1, i1234, 1);
    dev.set_const_i(kLegacyStageVertex, 1, i5678, 1);
    dev.set_light(2, light(2.0f));
    dev.set_light_enable(2, true);
    dev.set_render_state(LegacyState::kRsPatchSegments, 0x40800000u);
    dev.set_render_state(LegacyState::kRsSoftwareVertexProcessing, 1);
    dev.set_stream_source_freq(0, 4);
    dev.set_material(Material{{1, 1, 1, 1}, {}, {}, {}, 3});

    LegacyBlock all, pixel, vertex;
    all.snapshot(dev, kStateBlockAll);
    pixel.snapshot(dev, kStateBlockPixel);
    vertex.snapshot(dev, kStateBlockVertex);
    auto has = [](const LegacyBlock &b, LegacyKind k, uint32_t i) { return b.slots().count(LegacyKey{k, i}) == 1; };
    CHECK(has(all, LegacyKind::TextureStage, 0 << 8 | 1) && has(all, LegacyKind::TextureStage, 0 << 8 | 11));
    CHECK(has(pixel, LegacyKind::TextureStage, 0 << 8 | 1) && !has(pixel, LegacyKind::TextureStage, 0 << 8 | 11));
    CHECK(!has(vertex, LegacyKind::TextureStage, 0 << 8 | 1) && has(vertex, LegacyKind::TextureStage, 0 << 8 | 11));
    CHECK(has(pixel, LegacyKind::ConstI, kLegacyStagePixel << 16 | 1) && !has(pixel, LegacyKind::ConstI, 1));
    CHECK(has(vertex, LegacyKind::ConstI, 1) && !has(vertex, LegacyKind::ConstI, kLegacyStagePixel << 16 | 1));
    CHECK(has(vertex, LegacyKind::LightData, 2) && has(vertex, LegacyKind::LightEnable, 2) && !has(pixel, LegacyKind::LightData, 2));
    CHECK(has(vertex, LegacyKind::RenderState, 164) && !has(pixel, LegacyKind::RenderState, 164));
    CHECK(has(all, LegacyKind::Transform, 2) && has(all, LegacyKind::Transform, 259) && has(all, LegacyKind::Transform, 3));
    CHECK(!has(vertex, LegacyKind::Transform, 2) && !has(pixel, LegacyKind::Transform, 2));
    CHECK(has(all, LegacyKind::RenderState, 153) && has(all, LegacyKind::Material, 0) && has(all, LegacyKind::StreamFreq, 0));
    CHECK(has(all, LegacyKind::ClipPlane, 31));
    // The snapshot holds the values of its creation.
    dev.set_texture_stage_state(0, 1, 1);
    dev.set_transform(259, mat(30));
    dev.set_transform(3, mat(40)); // projection was identity at creation
    dev.set_light_enable(2, false);
    dev.set_material(Material{});
    dev.set_stream_source_freq(0, 1);
    all.apply(dev);
    Light l;
    CHECK(dev.texture_stage_state(0, 1) == 7 && same(dev.transform(259), mat(20)) && is_identity(dev.transform(3)));
    CHECK(dev.light_enabled(2) && dev.light(2, &l) && l.position.x == 2.0f);
    CHECK(dev.material().power == 3 && dev.stream_source_freq(0) == 4);
    // A light created after the snapshot is left alone.
    dev.set_light_enable(9, true);
    vertex.apply(dev);
    CHECK(dev.light_enabled(9));
}

int main() {
    test_defaults_and_round_trip();
    test_multiply_transform();
    test_lights_and_bounds();
    test_resource_properties();
    test_record_and_apply();
    test_snapshot_types();
    return agpu_check_report();
}
