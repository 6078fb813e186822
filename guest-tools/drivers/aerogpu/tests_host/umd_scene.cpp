// A scripted D3D9Ex scene through the UMD core, submitted through the KMD's portable
// staging/ring path into a trace the Rust device replays: resources with guest backing
// (backing_alloc_id), CPU uploads (dirty ranges), shaders, declarations, states, draws,
// clears, StretchRect/ColorFill draws, user-memory draws, PresentEx, an EVENT query, and a
// shared surface exported by one "process" and imported by another (DWM-style).
//
// usage: umd_scene OUT.trace
#include <cstdio>
#include <cstring>
#include <map>

extern "C" {
#include "agpu_trace.h"
#include "../kmd/portable/agpu_device.h"
#include "../kmd/portable/agpu_ring.h"
#include "../kmd/portable/agpu_submit.h"
}
#include "../umd/src/aerogpu_umd_core.h"

using namespace aerogpu;

static agpu_trace T;
static agpu_ring R;

// Plays dxgkrnl + the KMD: allocations get contiguous guest RAM, batches are staged with
// their allocation table and pushed to the ring. The device completes synchronously.
struct TraceSink : SubmitSink {
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> allocs; // alloc_id -> (gpa, size)
    uint64_t next_gpa = 0x400000, fence = 0, stage_off = 0;
    uint32_t submissions = 0;
    bool failed = false;

    uint64_t add_alloc(uint32_t alloc_id, uint64_t size) {
        uint64_t gpa = next_gpa;
        next_gpa += (size + 0xFFF) & ~uint64_t(0xFFF);
        allocs[alloc_id] = {gpa, size};
        return gpa;
    }

    uint64_t submit(const Submission &s) override {
        agpu_alloc_ref refs[64];
        uint32_t n = 0;
        for (const AllocRef &a : *s.allocs) {
            auto it = allocs.find(a.alloc_id);
            if (it == allocs.end() || n >= 64) { failed = true; return 0; }
            refs[n++] = agpu_alloc_ref{a.alloc_id, it->second.first, it->second.second, 1, a.write ? 1 : 0};
        }
        agpu_staging st;
        st.va = T.ram + 0x100000 + stage_off;
        st.gpa = 0x100000 + stage_off;
        st.size_bytes = 0x4000;
        stage_off = (stage_off + 0x4000) % 0x200000;
        struct aerogpu_submit_desc d;
        uint32_t conflict = 0;
        if (agpu_submit_stage(s.cmd, (uint32_t)s.cmd_bytes, 16u << 20, refs, n, &st, fence + 1,
                              s.present, &d, &conflict) != AGPU_OK ||
            agpu_ring_push(&R, &d, &T.ops) != AGPU_OK) {
            failed = true;
            return 0;
        }
        submissions++;
        return ++fence;
    }
    uint64_t completed_fence() override { return fence; }
    bool wait_fence(uint64_t f, uint32_t) override { return fence >= f; }
};

static const uint32_t kVs[] = {0xFFFE0200u, 0x0200001Fu, 0x80000000u, 0x900F0000u,
                               0x02000001u, 0xC00F0000u, 0x90E40000u, 0x0000FFFFu};
static const uint32_t kPs[] = {0xFFFF0200u, 0x02000001u, 0x800F0800u, 0xA0E40000u, 0x0000FFFFu};
// position float4 @0, color D3DCOLOR @16, END
static const uint8_t kDecl[] = {0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 16, 0, 4, 0, 10, 0,
                                0xFF, 0, 0, 0, 17, 0, 0, 0};

int main(int argc, char **argv) {
    if (argc != 2 || !agpu_trace_open(&T, argv[1])) return 2;
    agpu_device_info info;
    REQUIRE(agpu_probe(&T.ops, &info) == AGPU_OK);
    REQUIRE(agpu_ring_init(&R, T.ram + 0x1000, 0x1000, 0x2000, 64, 0) == AGPU_OK);
    agpu_ring_program(&R, &T.ops, 0x800);
    agpu_wr(&T.ops, AEROGPU_MMIO_REG_IRQ_ENABLE, agpu_irq_mask(info.features, 1));

    TraceSink sink;
    CountingHandleChunks handles;           // the cross-process handle counter
    Device app(sink, handles, 1);           // process 1 (the app): handles from 0x1000
    Device dwm(sink, handles, 0x10000);     // process 2 (DWM), its own alloc_id range

    ResourceDesc rt;
    rt.kind = ResourceKind::Texture2D; rt.d3d_format = 21; rt.width = 256; rt.height = 256;
    rt.usage = AEROGPU_RESOURCE_USAGE_RENDER_TARGET | AEROGPU_RESOURCE_USAGE_TEXTURE;
    rt.shared = true;
    const uint64_t token = 0x1122334455667788ull; // what the KMD wrote into the private data
    uint32_t hrt = app.create_resource(rt, shared_alloc_id_from_counter(1), token);
    REQUIRE(hrt);
    sink.add_alloc(shared_alloc_id_from_counter(1), app.resource(hrt)->backing_bytes);

    ResourceDesc ds;
    ds.kind = ResourceKind::Texture2D; ds.d3d_format = 75; ds.width = 256; ds.height = 256;
    ds.usage = AEROGPU_RESOURCE_USAGE_DEPTH_STENCIL; ds.guest_backed = false;
    uint32_t hds = app.create_resource(ds);
    REQUIRE(hds && app.resource(hds)->alloc_id == 0);

    ResourceDesc vb; vb.size_bytes = 3 * 20; vb.usage = AEROGPU_RESOURCE_USAGE_VERTEX_BUFFER;
    uint32_t hvb = app.create_resource(vb);
    uint64_t vb_gpa = sink.add_alloc(app.resource(hvb)->alloc_id, app.resource(hvb)->backing_bytes);
    ResourceDesc ib; ib.size_bytes = 6; ib.usage = AEROGPU_RESOURCE_USAGE_INDEX_BUFFER;
    uint32_t hib = app.create_resource(ib);
    uint64_t ib_gpa = sink.add_alloc(app.resource(hib)->alloc_id, app.resource(hib)->backing_bytes);
    ResourceDesc tex;
    tex.kind = ResourceKind::Texture2D; tex.d3d_format = 0x31545844; tex.width = 64; tex.height = 64;
    tex.levels = 3; tex.usage = AEROGPU_RESOURCE_USAGE_TEXTURE;
    uint32_t htex = app.create_resource(tex);
    uint64_t tex_gpa = sink.add_alloc(app.resource(htex)->alloc_id, app.resource(htex)->backing_bytes);
    REQUIRE(hvb && hib && htex);

    // Lock/write/Unlock through guest memory.
    const float verts[15] = {-1, -1, 0, 1, 0, 0, 1, 0, 1, 0, 1, -1, 0, 1, 0};
    std::memcpy(T.ram + vb_gpa, verts, sizeof(verts));
    const uint16_t idx[3] = {0, 1, 2};
    std::memcpy(T.ram + ib_gpa, idx, sizeof(idx));
    std::memset(T.ram + tex_gpa, 0x77, (size_t)app.resource(htex)->backing_bytes);
    REQUIRE(app.unlock(hvb, 0, 0) == kS_OK);
    REQUIRE(app.unlock(hib, 0, 0) == kS_OK);
    REQUIRE(app.unlock(htex, 0, 0) == kS_OK);
    REQUIRE(app.flush() != 0);

    uint32_t vs = app.create_shader(AEROGPU_SHADER_STAGE_VERTEX, kVs, sizeof(kVs));
    uint32_t ps = app.create_shader(AEROGPU_SHADER_STAGE_PIXEL, kPs, sizeof(kPs));
    uint32_t decl = app.create_vertex_decl(kDecl, sizeof(kDecl));
    REQUIRE(vs && ps && decl);
    app.set_shaders(vs, ps);
    app.set_vertex_decl(decl);
    const float consts[8] = {1, 0, 0, 0, 0, 1, 0, 0};
    REQUIRE(app.set_shader_constants_f(AEROGPU_SHADER_STAGE_VERTEX, 0, consts, 2) == kS_OK);
    REQUIRE(app.set_render_target(0, hrt) == kS_OK);
    REQUIRE(app.set_depth_stencil(hds) == kS_OK);
    app.set_viewport(0, 0, 256, 256, 0, 1);
    app.set_render_state(27, 1);  // ALPHABLENDENABLE
    app.set_render_state(19, 5);  // SRCBLEND = SRCALPHA
    app.set_render_state(20, 6);  // DESTBLEND = INVSRCALPHA
    app.set_render_state(22, 1);  // CULLMODE = NONE
    app.set_render_state(137, 0); // LIGHTING: forwarded raw
    app.set_sampler_state(0, 5, 2); // MAGFILTER = LINEAR
    REQUIRE(app.set_texture(0, htex) == kS_OK);
    REQUIRE(app.set_stream_source(0, hvb, 0, 20) == kS_OK);
    REQUIRE(app.set_indices(hib, false) == kS_OK);

    uint32_t q = app.create_query();
    for (int frame = 0; frame < 5; frame++) {
        float color[4] = {0.1f * frame, 0.2f, 0.3f, 1.0f};
        REQUIRE(app.clear(AEROGPU_CLEAR_COLOR | AEROGPU_CLEAR_DEPTH, color, 1.0f, 0) == kS_OK);
        REQUIRE(app.draw_primitive(4, 0, 1) == kS_OK);
        REQUIRE(app.draw_indexed(4, 0, 0, 1) == kS_OK);
        REQUIRE(app.present_ex(0, false) == kS_OK);
    }
    // A frame with StretchRect (linear shrink of the shared RT, a mirrored BC1 -> ARGB
    // conversion, a same-size copy), a ColorFill of a sub-rectangle, DrawPrimitiveUP and
    // DrawIndexedPrimitiveUP (internal draws and the upload ring), then ordinary draws
    // again with the app's bindings.
    ResourceDesc thumb;
    thumb.kind = ResourceKind::Texture2D; thumb.d3d_format = 21; thumb.width = 128; thumb.height = 128;
    thumb.usage = AEROGPU_RESOURCE_USAGE_RENDER_TARGET | AEROGPU_RESOURCE_USAGE_TEXTURE;
    uint32_t hthumb = app.create_resource(thumb);
    REQUIRE(hthumb);
    sink.add_alloc(app.resource(hthumb)->alloc_id, app.resource(hthumb)->backing_bytes);
    Rect all_thumb{0, 0, 128, 128}, all_rt{0, 0, 256, 256}, quarter{0, 0, 64, 64}, small{0, 0, 16, 16};
    REQUIRE(app.blit(hthumb, all_thumb, hrt, all_rt, kBlitLinear) == kS_OK);
    REQUIRE(app.blit(hthumb, quarter, htex, quarter, kBlitMirrorLeftRight | kBlitMirrorUpDown) == kS_OK);
    REQUIRE(app.blit(hthumb, small, hrt, small, 0) == kS_OK); // COPY_TEXTURE2D
    const float fill[4] = {1.0f, 0.5f, 0.0f, 1.0f};
    REQUIRE(app.color_fill(hthumb, Rect{32, 32, 96, 96}, fill) == kS_OK);
    const float up_verts[15] = {-1, 1, 0, 1, 0, 1, 1, 0, 1, 0, 0, -1, 0, 1, 0};
    const uint16_t up_idx[3] = {0, 2, 1};
    REQUIRE(app.draw_primitive_up(4, 1, up_verts, 20) == kS_OK);
    REQUIRE(app.draw_indexed_up(4, 0, 0, 3, 0, 1, up_idx, false, up_verts, 20) == kS_OK);
    REQUIRE(app.set_stream_source(0, hvb, 0, 20) == kS_OK);
    REQUIRE(app.set_indices(hib, false) == kS_OK);
    REQUIRE(app.draw_primitive(4, 0, 1) == kS_OK);
    REQUIRE(app.draw_indexed(4, 0, 0, 1) == kS_OK);
    REQUIRE(app.present_ex(0, false) == kS_OK);
    std::printf("thumb handle %u\n", hthumb);

    REQUIRE(app.issue_query(q) == kS_OK);
    REQUIRE(app.get_query_data(q, 0) == kS_OK);

    // DWM opens the shared surface (same token from the preserved private data).
    uint32_t alias = dwm.open_shared(token, rt, shared_alloc_id_from_counter(1));
    REQUIRE(alias);
    REQUIRE(dwm.set_texture(0, alias) == kS_OK);
    REQUIRE(dwm.flush() != 0);
    REQUIRE(dwm.destroy_resource(alias) == kS_OK);
    REQUIRE(dwm.present_ex(0, false) == kS_OK);

    REQUIRE(app.destroy_resource(htex) == kS_OK);
    app.release_internal_objects(); // device teardown: internal shaders, layout, ring
    REQUIRE(app.flush() != 0);
    REQUIRE(!sink.failed);
    agpu_trace_expect(&T, sink.fence, 0, 0, sink.submissions);
    agpu_trace_close(&T);
    std::printf("submissions %u fence %llu\n", sink.submissions, (unsigned long long)sink.fence);
    return 0;
}
