// Host unit tests of the UMD translation core; run by guest-tools/tests/umd_core.rs.
#include <cstdio>
#include <cstring>
#include <vector>

#include "../src/aerogpu_umd_core.h"
#include "../../tests_host/agpu_check.h"

using namespace aerogpu;

// A sink that records batches; completion is controlled by the test.
struct FakeSink : SubmitSink {
    uint64_t next = 0, completed = 0;
    bool auto_complete = true;
    uint32_t waits = 0;
    bool has_vblank = false;
    uint64_t vblank_count = 0, vblank_time = 0;
    std::vector<std::vector<uint8_t>> streams;
    std::vector<std::vector<AllocRef>> lists;
    std::vector<bool> presents;
    uint64_t submit(const Submission &s) override {
        streams.emplace_back(s.cmd, s.cmd + s.cmd_bytes);
        lists.push_back(*s.allocs);
        presents.push_back(s.present);
        ++next;
        if (auto_complete) completed = next;
        return next;
    }
    uint64_t completed_fence() override { return completed; }
    bool wait_fence(uint64_t f, uint32_t) override {
        waits++;
        return completed >= f;
    }
    bool vblank(uint64_t *count, uint64_t *time) override {
        *count = vblank_count;
        *time = vblank_time;
        return has_vblank;
    }
};

static std::vector<uint32_t> opcodes(const std::vector<uint8_t> &s) {
    std::vector<uint32_t> ops;
    size_t off = sizeof(aerogpu_cmd_stream_header);
    while (off + 8 <= s.size()) {
        aerogpu_cmd_hdr h;
        std::memcpy(&h, s.data() + off, 8);
        if (h.size_bytes < 8 || h.size_bytes % 4) break;
        ops.push_back(h.opcode);
        off += h.size_bytes;
    }
    return ops;
}

static void test_writer() {
    CmdWriter v;
    uint8_t payload[5] = {1, 2, 3, 4, 5};
    auto *m = v.append<aerogpu_cmd_hdr>(AEROGPU_CMD_DEBUG_MARKER, payload, sizeof(payload));
    CHECK(m && m->size_bytes == 16); // 8 + 5 -> 13 -> padded 16
    const uint8_t *s = v.finish();
    uint32_t size;
    std::memcpy(&size, s + 8, 4);
    CHECK(size == 32 && v.size() == 32 && v.packet_count() == 1);
    CHECK(s[16 + 8 + 5] == 0); // NUL padding

    uint8_t buf[40];
    CmdWriter span(buf, sizeof(buf));
    CHECK(span.append<aerogpu_cmd_flush>(AEROGPU_CMD_FLUSH) != nullptr); // 16 + 16
    CHECK(span.append<aerogpu_cmd_flush>(AEROGPU_CMD_FLUSH) == nullptr); // 48 > 40
    CHECK(span.error() == CmdError::OutOfSpace && span.size() == 32);
    span.reset();
    CHECK(span.error() == CmdError::None && span.size() == 16);
}

static void test_tables() {
    CHECK(d3d_format_to_aerogpu(21) == AEROGPU_FORMAT_B8G8R8A8_UNORM);
    CHECK(d3d_format_to_aerogpu(22) == AEROGPU_FORMAT_B8G8R8X8_UNORM);
    CHECK(d3d_format_to_aerogpu(0x31545844) == AEROGPU_FORMAT_BC1_UNORM);
    CHECK(d3d_format_to_aerogpu(999) == 0);
    CHECK(row_pitch_for(21, 64) == 256 && row_pitch_for(0x31545844, 64) == 128);
    CHECK(vertex_count_for(4, 2) == 6 && vertex_count_for(5, 2) == 4 && vertex_count_for(3, 1) == 2);
    CHECK(vertex_count_for(5, 0) == 0 && vertex_count_for(9, 3) == 0);
}

static const uint32_t kVs[] = {0xFFFE0200u, 0x0000FFFFu};
static const uint32_t kPs[] = {0xFFFF0200u, 0x0000FFFFu};
static const uint8_t kDecl[] = {0, 0, 0, 0, 2, 0, 0, 0, 0xFF, 0, 0, 0, 17, 0, 0, 0};

static void test_draw_alloc_list() {
    FakeSink sink;
    Device d(sink, 100, 1);
    ResourceDesc rt;
    rt.kind = ResourceKind::Texture2D; rt.d3d_format = 21; rt.width = 32; rt.height = 32;
    rt.usage = AEROGPU_RESOURCE_USAGE_RENDER_TARGET;
    ResourceDesc vb; vb.size_bytes = 48; vb.usage = AEROGPU_RESOURCE_USAGE_VERTEX_BUFFER;
    uint32_t hrt = d.create_resource(rt), hvb = d.create_resource(vb);
    CHECK(hrt == 100 && hvb == 101);
    CHECK(d.resource(hrt)->alloc_id == 1 && d.resource(hvb)->alloc_id == 2);
    CHECK(d.resource(hrt)->backing_bytes == 32 * 32 * 4);
    d.flush();
    CHECK(sink.lists.size() == 1 && sink.lists[0].size() == 2);

    // Draw without shaders: refused, nothing emitted.
    CHECK(d.draw_primitive(4, 0, 1) == kD3DERR_INVALIDCALL);
    uint32_t vs = d.create_shader(AEROGPU_SHADER_STAGE_VERTEX, kVs, sizeof(kVs));
    uint32_t ps = d.create_shader(AEROGPU_SHADER_STAGE_PIXEL, kPs, sizeof(kPs));
    uint32_t decl = d.create_vertex_decl(kDecl, sizeof(kDecl));
    CHECK(vs && ps && decl && vs != ps && d.create_shader(0, kVs, 6) == 0);
    d.set_shaders(vs, ps);
    d.set_vertex_decl(decl);
    d.set_render_target(0, hrt);
    d.set_stream_source(0, hvb, 0, 16);
    CHECK(d.unlock(hvb, 0, 48) == kS_OK);
    CHECK(d.unlock(hvb, 40, 16) == kD3DERR_INVALIDCALL); // past the end
    CHECK(d.draw_primitive(4, 0, 1) == kS_OK);
    d.flush();
    const auto &list = sink.lists.back();
    CHECK(list.size() == 2);
    bool rt_written = false, vb_read = false;
    for (auto &a : list) {
        if (a.alloc_id == 1) rt_written = a.write;
        if (a.alloc_id == 2) vb_read = !a.write;
    }
    CHECK(rt_written && vb_read);
    auto ops = opcodes(sink.streams.back());
    bool has_blend = false, has_draw = false;
    for (auto op : ops) {
        has_blend |= op == AEROGPU_CMD_SET_BLEND_STATE;
        has_draw |= op == AEROGPU_CMD_DRAW;
    }
    CHECK(has_blend && has_draw);
    // Shared surfaces must be single-level.
    ResourceDesc sh = rt; sh.shared = true; sh.levels = 2;
    uint32_t shared_id = shared_alloc_id_from_counter(1);
    CHECK(d.create_resource(sh, shared_id, 77) == 0);
    sh.levels = 1;
    // Shared alloc_ids must come from the shared range (per-process IDs live below it).
    CHECK(d.create_resource(sh, 0x200, 77) == 0);
    uint32_t hk = d.create_resource(sh, AEROGPU_WDDM_ALLOC_ID_KMD_MIN + 5); // KMD-assigned
    CHECK(hk && d.resource(hk)->alloc_id == AEROGPU_WDDM_ALLOC_ID_KMD_MIN + 5);
    d.flush();
    uint32_t hs = d.create_resource(sh, shared_id, 77);
    CHECK(hs && d.resource(hs)->alloc_id == shared_id);
    aerogpu_wddm_alloc_priv p = d.alloc_priv(hs);
    CHECK(p.magic == AEROGPU_WDDM_ALLOC_PRIV_MAGIC && (p.flags & AEROGPU_WDDM_ALLOC_PRIV_FLAG_IS_SHARED));
    CHECK(p.share_token == 77 && p.size_bytes == 32 * 32 * 4);
    d.flush();
    ops = opcodes(sink.streams.back());
    CHECK(ops.size() == 2 && ops[1] == AEROGPU_CMD_EXPORT_SHARED_SURFACE);
    // The DDI flow: create first, export once the KMD has written the token.
    uint32_t hs2 = d.create_resource(sh, shared_alloc_id_from_counter(2));
    CHECK(hs2 && d.resource(hs2)->share_token == 0);
    CHECK(d.export_shared(hs2, 0) == kD3DERR_INVALIDCALL);
    CHECK(d.export_shared(hvb, 5) == kD3DERR_INVALIDCALL); // not shared
    CHECK(d.export_shared(hs2, 0xABCD) == kS_OK && d.resource(hs2)->share_token == 0xABCD);
    CHECK(d.export_shared(hs2, 0xABCE) == kD3DERR_INVALIDCALL); // exported once
    d.flush();
    ops = opcodes(sink.streams.back());
    CHECK(ops.size() == 2 && ops[0] == AEROGPU_CMD_CREATE_TEXTURE2D && ops[1] == AEROGPU_CMD_EXPORT_SHARED_SURFACE);
}

static void test_shared_alloc_ids() {
    // Never 0, always in [kSharedAllocIdMin, UMD_MAX], distinct for 2^30 consecutive values.
    CHECK(shared_alloc_id_from_counter(0) == kSharedAllocIdMin);
    CHECK(shared_alloc_id_from_counter(1) == kSharedAllocIdMin + 1);
    CHECK(shared_alloc_id_from_counter(0x3FFFFFFFu) == AEROGPU_WDDM_ALLOC_ID_UMD_MAX);
    CHECK(shared_alloc_id_from_counter(0x40000000u) == kSharedAllocIdMin); // wraps
    CHECK(shared_alloc_id_from_counter(~uint64_t(0)) == AEROGPU_WDDM_ALLOC_ID_UMD_MAX);
    // Per-process IDs wrap before reaching the shared range.
    FakeSink sink;
    Device d(sink, 1, kSharedAllocIdMin - 1);
    ResourceDesc vb; vb.size_bytes = 16;
    uint32_t a = d.create_resource(vb), b = d.create_resource(vb);
    CHECK(d.resource(a)->alloc_id == kSharedAllocIdMin - 1 && d.resource(b)->alloc_id == 1);
    Device e(sink, 1, kSharedAllocIdMin); // a base inside the shared range is not used
    CHECK(e.resource(e.create_resource(vb))->alloc_id == 1);
}

static void test_caps_limits_enforced() {
    FakeSink sink;
    Device d(sink, 1, 1);
    const uint32_t vs20[] = {kMaxVertexShaderVersion, 0x0000FFFFu};
    const uint32_t vs11[] = {0xFFFE0101u, 0x0000FFFFu};
    const uint32_t vs2x[] = {kMaxVertexShaderVersion + 1, 0x0000FFFFu};
    const uint32_t vs30[] = {0xFFFE0300u, 0x0000FFFFu};
    const uint32_t ps20[] = {kMaxPixelShaderVersion, 0x0000FFFFu};
    const uint32_t ps30[] = {0xFFFF0300u, 0x0000FFFFu};
    CHECK(d.create_shader(AEROGPU_SHADER_STAGE_VERTEX, vs20, sizeof(vs20)) != 0);
    CHECK(d.create_shader(AEROGPU_SHADER_STAGE_VERTEX, vs11, sizeof(vs11)) != 0);
    CHECK(d.create_shader(AEROGPU_SHADER_STAGE_VERTEX, vs2x, sizeof(vs2x)) == 0);
    CHECK(d.create_shader(AEROGPU_SHADER_STAGE_VERTEX, vs30, sizeof(vs30)) == 0);
    CHECK(d.create_shader(AEROGPU_SHADER_STAGE_VERTEX, ps20, sizeof(ps20)) == 0); // wrong stage
    CHECK(d.create_shader(AEROGPU_SHADER_STAGE_PIXEL, ps20, sizeof(ps20)) != 0);
    CHECK(d.create_shader(AEROGPU_SHADER_STAGE_PIXEL, ps30, sizeof(ps30)) == 0);
    ResourceDesc t;
    t.kind = ResourceKind::Texture2D; t.d3d_format = 21; t.width = kMaxTextureDim; t.height = 1;
    CHECK(d.create_resource(t) != 0);
    t.width = kMaxTextureDim + 1;
    CHECK(d.create_resource(t) == 0);
    t.width = 4; t.height = 4;
    uint32_t rt = d.create_resource(t);
    CHECK(d.set_render_target(kMaxSimultaneousRTs - 1, rt) == kS_OK);
    CHECK(d.set_render_target(kMaxSimultaneousRTs, rt) == kD3DERR_INVALIDCALL);
}

static void test_present_throttle_and_queries() {
    FakeSink sink;
    sink.auto_complete = false;
    Device d(sink, 1, 1);
    CHECK(d.max_frame_latency() == 3);
    for (int i = 0; i < 3; i++) CHECK(d.present_ex(0, true) == kS_OK);
    CHECK(d.presents_in_flight() == 3 && sink.waits == 0);
    // Three presents in flight: DONOTWAIT refuses without submitting anything.
    size_t submitted = sink.streams.size();
    CHECK(d.present_ex(kD3DPRESENT_DONOTWAIT, true) == kD3DERR_WASSTILLDRAWING);
    CHECK(sink.streams.size() == submitted && d.present_count() == 3 && sink.waits == 0);
    // Nothing completed yet: the stats still describe no present.
    CHECK(d.present_stats().present_count == 0);
    // One completes: DONOTWAIT now goes through without waiting.
    sink.completed = 1;
    CHECK(d.present_ex(kD3DPRESENT_DONOTWAIT, true) == kS_OK);
    CHECK(d.present_count() == 4 && sink.presents.back() && sink.waits == 0);
    PresentStats st = d.present_stats();
    CHECK(st.present_count == 1 && st.present_refresh_count == 1 && st.sync_refresh_count == 1);
    // Full again: a blocking present waits for the oldest, then (device stuck) submits
    // anyway rather than failing.
    CHECK(d.presents_in_flight() == 3);
    CHECK(d.present_ex(0, true) == kS_OK && sink.waits == 1 && d.present_count() == 5);
    CHECK(d.presents_in_flight() == 3);
    // A blocking present whose wait succeeds: the completed fence retires it.
    sink.completed = sink.next - 1;
    CHECK(d.present_ex(0, true) == kS_OK && d.present_count() == 6);
    // Stats come from the last completed present (ordinal 5) and stay monotonic; with a
    // vblank source the refresh counts are vblank counts.
    sink.has_vblank = true;
    sink.vblank_count = 100;
    sink.vblank_time = 5000;
    sink.completed = sink.next;
    st = d.present_stats();
    CHECK(st.present_count == 6 && st.present_count <= d.present_count());
    CHECK(st.present_refresh_count == 100 && st.sync_refresh_count == 100 && st.sync_qpc_time == 5000);
    sink.vblank_count = 103;
    sink.vblank_time = 5300;
    PresentStats st2 = d.present_stats();
    CHECK(st2.present_count == 6 && st2.present_refresh_count == 100);
    CHECK(st2.sync_refresh_count == 103 && st2.sync_qpc_time == 5300);
    CHECK(d.presents_in_flight() == 0);
    CHECK(d.set_max_frame_latency(1) == kS_OK && d.set_max_frame_latency(100) == kD3DERR_INVALIDCALL);

    uint32_t q = d.create_query();
    CHECK(d.get_query_data(q, 0) == kD3DERR_INVALIDCALL); // not issued
    float c[4] = {0, 0, 0, 1};
    d.clear(AEROGPU_CLEAR_COLOR, c, 1.0f, 0);
    CHECK(d.issue_query(q) == kS_OK);
    uint64_t fence = d.last_fence();
    CHECK(d.get_query_data(q, kD3DGETDATA_FLUSH) == kS_FALSE); // never blocks
    sink.completed = fence;
    CHECK(d.get_query_data(q, 0) == kS_OK);
}

int main() {
    test_writer();
    test_tables();
    test_draw_alloc_list();
    test_present_throttle_and_queries();
    test_shared_alloc_ids();
    test_caps_limits_enforced();
    return agpu_check_report();
}
