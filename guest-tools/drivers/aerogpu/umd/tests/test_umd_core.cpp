// Host unit tests of the UMD translation core; run by guest-tools/tests/umd_core.rs.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include "../src/aerogpu_umd_core.h"
#include "../../kmd/portable/agpu_present.h"
#include "../../tests_host/agpu_check.h"

using namespace aerogpu;

// The protocol handle namespace all the tests' devices share.
static CountingHandleChunks g_handles;

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
    // A8 and A8L8 have their own formats (not R8/R8G8, which sample differently).
    CHECK(d3d_format_to_aerogpu(28) == AEROGPU_FORMAT_A8_UNORM && row_pitch_for(28, 64) == 64);
    CHECK(d3d_format_to_aerogpu(51) == AEROGPU_FORMAT_L8A8_UNORM && row_pitch_for(51, 64) == 128);
    CHECK(d3d_format_to_aerogpu(60) == AEROGPU_FORMAT_V8U8_SNORM && row_pitch_for(60, 64) == 128);
    CHECK(d3d_format_to_aerogpu(63) == AEROGPU_FORMAT_Q8W8V8U8_SNORM && row_pitch_for(63, 64) == 256);
    CHECK(row_pitch_for(21, 64) == 256 && row_pitch_for(0x31545844, 64) == 128);
    CHECK(vertex_count_for(4, 2) == 6 && vertex_count_for(5, 2) == 4 && vertex_count_for(3, 1) == 2);
    CHECK(vertex_count_for(5, 0) == 0 && vertex_count_for(9, 3) == 0);
}

static const uint32_t kVs[] = {0xFFFE0200u, 0x0000FFFFu};
static const uint32_t kPs[] = {0xFFFF0200u, 0x0000FFFFu};
static const uint8_t kDecl[] = {0, 0, 0, 0, 2, 0, 0, 0, 0xFF, 0, 0, 0, 17, 0, 0, 0};

static void test_draw_alloc_list() {
    FakeSink sink;
    Device d(sink, g_handles, 1);
    ResourceDesc rt;
    rt.kind = ResourceKind::Texture2D; rt.d3d_format = 21; rt.width = 32; rt.height = 32;
    rt.usage = AEROGPU_RESOURCE_USAGE_RENDER_TARGET;
    ResourceDesc vb; vb.size_bytes = 48; vb.usage = AEROGPU_RESOURCE_USAGE_VERTEX_BUFFER;
    uint32_t hrt = d.create_resource(rt), hvb = d.create_resource(vb);
    CHECK(hrt && hvb == hrt + 1);
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
    Device d(sink, g_handles, kSharedAllocIdMin - 1);
    ResourceDesc vb; vb.size_bytes = 16;
    uint32_t a = d.create_resource(vb), b = d.create_resource(vb);
    CHECK(d.resource(a)->alloc_id == kSharedAllocIdMin - 1 && d.resource(b)->alloc_id == 1);
    Device e(sink, g_handles, kSharedAllocIdMin); // a base inside the shared range is not used
    CHECK(e.resource(e.create_resource(vb))->alloc_id == 1);
}

// Handle chunks a test hands out: the listed first handles, then none (0).
struct ListedChunks : HandleChunks {
    std::vector<uint32_t> firsts;
    size_t taken = 0;
    uint32_t reserve() override { return taken < firsts.size() ? firsts[taken++] : 0; }
};

static void test_handle_chunks() {
    // Values of the shared counter: chunk n from 1 up, 0 past the shared range.
    CHECK(handle_chunk_from_counter(0) == 0);
    CHECK(handle_chunk_from_counter(1) == kHandleChunk);
    CHECK(handle_chunk_from_counter(kFallbackHandleMin / kHandleChunk - 1) == kFallbackHandleMin - kHandleChunk);
    CHECK(handle_chunk_from_counter(kFallbackHandleMin / kHandleChunk) == 0);
    CHECK(handle_chunk_from_counter(uint64_t(1) << 32) == 0); // no wrap onto low chunks
    CHECK(handle_chunk_from_counter(~uint64_t(0)) == 0);
    // The KMD's own handles (runtime presents) lie below every chunk the UMD can take.
    CHECK(AGPU_KMD_HANDLE_FIRST > 0 && AGPU_KMD_HANDLE_LIMIT <= handle_chunk_from_counter(1));
    CHECK(AGPU_KMD_HANDLE_LIMIT <= kFallbackHandleMin);

    // Two devices of one namespace take turns at the counter: disjoint, sparse handles.
    FakeSink sink;
    CountingHandleChunks shared;
    Device a(sink, shared, 1), b(sink, shared, 1);
    ResourceDesc vb; vb.size_bytes = 16; vb.usage = AEROGPU_RESOURCE_USAGE_VERTEX_BUFFER;
    uint32_t a0 = a.create_resource(vb), b0 = b.create_resource(vb);
    CHECK(a0 == kHandleChunk && b0 == 2 * kHandleChunk);

    // A device runs through its chunk into the next, which lies far from the first: every
    // resource stays reachable by its handle. Then no chunk is left: every create fails
    // with out_of_handles() and emits nothing; what exists keeps working.
    ListedChunks listed;
    listed.firsts = {0x5000, 0x7FFFF000};
    Device d(sink, listed, 1);
    std::vector<uint32_t> handles;
    for (uint32_t i = 0; i < kHandleChunk; i++) handles.push_back(d.create_vertex_decl(kDecl, sizeof(kDecl)));
    CHECK(handles.front() == 0x5000 && handles.back() == 0x5FFF && listed.taken == 1);
    uint32_t first = d.create_resource(vb);
    CHECK(first == 0x7FFFF000 && listed.taken == 2 && !d.out_of_handles());
    for (uint32_t i = 1; i < kHandleChunk; i++) CHECK(d.create_shader(AEROGPU_SHADER_STAGE_VERTEX, kVs, sizeof(kVs)));
    d.flush();
    size_t batches = sink.streams.size();
    ResourceDesc tex;
    tex.kind = ResourceKind::Texture2D; tex.d3d_format = 21; tex.width = 4; tex.height = 4;
    CHECK(d.create_resource(tex) == 0 && d.out_of_handles());
    CHECK(d.create_shader(AEROGPU_SHADER_STAGE_PIXEL, kPs, sizeof(kPs)) == 0);
    CHECK(d.create_vertex_decl(kDecl, sizeof(kDecl)) == 0);
    CHECK(d.open_shared(77, tex, shared_alloc_id_from_counter(3)) == 0);
    CHECK(d.flush() == 0 && sink.streams.size() == batches); // nothing was emitted
    CHECK(d.resource(first) && d.resource(first)->desc.size_bytes == 16);
    CHECK(d.unlock(first, 0, 16) == kS_OK && d.destroy_resource(first) == kS_OK && !d.resource(first));
    CHECK(d.destroy_resource(first) == kD3DERR_INVALIDCALL);
    // A chunk granted again clears the state.
    listed.firsts.push_back(0x9000);
    CHECK(d.create_resource(vb) == 0x9000 && !d.out_of_handles());
}

static void test_caps_limits_enforced() {
    FakeSink sink;
    Device d(sink, g_handles, 1);
    // Every model the translator takes is accepted; others are refused.
    const uint32_t vs_ok[] = {0xFFFE0101u, 0xFFFE0200u, 0xFFFE0201u, 0xFFFE0300u};
    const uint32_t ps_ok[] = {0xFFFF0101u, 0xFFFF0102u, 0xFFFF0103u, 0xFFFF0104u,
                              0xFFFF0200u, 0xFFFF0201u, 0xFFFF0300u};
    const uint32_t vs_bad[] = {0xFFFE0100u, 0xFFFE0102u, 0xFFFE0104u, 0xFFFE0202u, 0xFFFE0301u,
                               0xFFFE0400u, 0xFFFF0200u /* a pixel version */};
    const uint32_t ps_bad[] = {0xFFFF0100u, 0xFFFF0105u, 0xFFFF0202u, 0xFFFF0301u, 0xFFFF0400u,
                               0xFFFE0300u /* a vertex version */};
    for (uint32_t v : vs_ok) {
        const uint32_t tokens[] = {v, 0x0000FFFFu};
        CHECK(d.create_shader(AEROGPU_SHADER_STAGE_VERTEX, tokens, sizeof(tokens)) != 0);
    }
    for (uint32_t v : ps_ok) {
        const uint32_t tokens[] = {v, 0x0000FFFFu};
        CHECK(d.create_shader(AEROGPU_SHADER_STAGE_PIXEL, tokens, sizeof(tokens)) != 0);
    }
    for (uint32_t v : vs_bad) {
        const uint32_t tokens[] = {v, 0x0000FFFFu};
        CHECK(d.create_shader(AEROGPU_SHADER_STAGE_VERTEX, tokens, sizeof(tokens)) == 0);
    }
    for (uint32_t v : ps_bad) {
        const uint32_t tokens[] = {v, 0x0000FFFFu};
        CHECK(d.create_shader(AEROGPU_SHADER_STAGE_PIXEL, tokens, sizeof(tokens)) == 0);
    }
    CHECK(kMaxVertexShaderVersion == 0xFFFE0300u && kMaxPixelShaderVersion == 0xFFFF0300u);
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
    Device d(sink, g_handles, 1);
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
    // Destroyed queries are gone and their ids come back: a query per frame does not grow
    // the table.
    uint32_t q2 = d.create_query();
    CHECK(q2 != q && d.destroy_query(q) == kS_OK && d.destroy_query(q) == kD3DERR_INVALIDCALL);
    CHECK(d.get_query_data(q, 0) == kD3DERR_INVALIDCALL && d.issue_query(q) == kD3DERR_INVALIDCALL);
    CHECK(d.destroy_query(0) == kD3DERR_INVALIDCALL && d.destroy_query(99) == kD3DERR_INVALIDCALL);
    for (int i = 0; i < 1000; i++) {
        uint32_t n = d.create_query();
        CHECK(n == q && !d.query_exists(3));
        d.destroy_query(n);
    }
    CHECK(d.query_exists(q2) && !d.query_exists(q));
}

// ---- Internal draws (blit, fill) and user-memory draws --------------------------------

struct Packet {
    uint32_t op;
    std::vector<uint8_t> bytes; // the whole packet
    template <class P> P as() const {
        P p;
        std::memset(&p, 0, sizeof(p));
        std::memcpy(&p, bytes.data(), bytes.size() < sizeof(p) ? bytes.size() : sizeof(p));
        return p;
    }
    const uint8_t *payload(size_t fixed) const { return bytes.data() + fixed; }
};

static std::vector<Packet> packets(const std::vector<uint8_t> &s) {
    std::vector<Packet> out;
    size_t off = sizeof(aerogpu_cmd_stream_header);
    while (off + 8 <= s.size()) {
        aerogpu_cmd_hdr h;
        std::memcpy(&h, s.data() + off, 8);
        if (h.size_bytes < 8 || h.size_bytes % 4 || off + h.size_bytes > s.size()) break;
        out.push_back(Packet{h.opcode, std::vector<uint8_t>(s.begin() + long(off), s.begin() + long(off + h.size_bytes))});
        off += h.size_bytes;
    }
    return out;
}

static std::vector<uint32_t> ops_of(const std::vector<Packet> &ps) {
    std::vector<uint32_t> v;
    for (auto &p : ps) v.push_back(p.op);
    return v;
}

// A device's first batch opens with its default state (render and sampler states): the
// packets after it.
static std::vector<Packet> without_default_state(std::vector<Packet> ps) {
    size_t n = 0;
    while (n < ps.size() && (ps[n].op == AEROGPU_CMD_SET_RENDER_STATE || ps[n].op == AEROGPU_CMD_SET_SAMPLER_STATE)) n++;
    ps.erase(ps.begin(), ps.begin() + long(n));
    return ps;
}

static const Packet *first_of(const std::vector<Packet> &ps, uint32_t op, size_t n = 0) {
    for (auto &p : ps)
        if (p.op == op && n-- == 0) return &p;
    return nullptr;
}

// What the device holds after the packets seen so far: the bindings and states an internal
// draw changes, as the command processor would track them.
struct Tracked {
    uint32_t vs = 0, ps = 0, decl = 0, tex0 = 0, topology = 0;
    aerogpu_vertex_buffer_binding vb0{};
    std::map<uint32_t, uint32_t> samp0, rs;
    std::vector<uint8_t> rts, vp, scissor, blend, depth, raster;

    void apply(const std::vector<Packet> &stream) {
        for (auto &p : stream) {
            switch (p.op) {
            case AEROGPU_CMD_BIND_SHADERS: {
                auto b = p.as<aerogpu_cmd_bind_shaders>();
                vs = b.vs;
                ps = b.ps;
                break;
            }
            case AEROGPU_CMD_SET_INPUT_LAYOUT: decl = p.as<aerogpu_cmd_set_input_layout>().input_layout_handle; break;
            case AEROGPU_CMD_SET_TEXTURE: {
                auto t = p.as<aerogpu_cmd_set_texture>();
                if (t.slot == 0) tex0 = t.texture;
                break;
            }
            case AEROGPU_CMD_SET_SAMPLER_STATE: {
                auto t = p.as<aerogpu_cmd_set_sampler_state>();
                if (t.slot == 0) samp0[t.state] = t.value;
                break;
            }
            case AEROGPU_CMD_SET_RENDER_STATE: {
                auto t = p.as<aerogpu_cmd_set_render_state>();
                rs[t.state] = t.value;
                break;
            }
            case AEROGPU_CMD_SET_VERTEX_BUFFERS: {
                auto t = p.as<aerogpu_cmd_set_vertex_buffers>();
                if (t.start_slot == 0 && t.buffer_count >= 1)
                    std::memcpy(&vb0, p.payload(sizeof(t)), sizeof(vb0));
                break;
            }
            case AEROGPU_CMD_SET_PRIMITIVE_TOPOLOGY: topology = p.as<aerogpu_cmd_set_primitive_topology>().topology; break;
            case AEROGPU_CMD_SET_RENDER_TARGETS: rts = p.bytes; break;
            case AEROGPU_CMD_SET_VIEWPORT: vp = p.bytes; break;
            case AEROGPU_CMD_SET_SCISSOR: scissor = p.bytes; break;
            case AEROGPU_CMD_SET_BLEND_STATE: blend = p.bytes; break;
            case AEROGPU_CMD_SET_DEPTH_STENCIL_STATE: depth = p.bytes; break;
            case AEROGPU_CMD_SET_RASTERIZER_STATE: raster = p.bytes; break;
            default: break;
            }
        }
    }
    // Bindings and raw states (restored by the internal draw itself).
    bool same_bindings(const Tracked &o) const {
        return vs == o.vs && ps == o.ps && decl == o.decl && tex0 == o.tex0 && vb0.buffer == o.vb0.buffer &&
               vb0.stride_bytes == o.vb0.stride_bytes && vb0.offset_bytes == o.vb0.offset_bytes &&
               samp0 == o.samp0 && rs == o.rs && rts == o.rts &&
               vp == o.vp && scissor == o.scissor;
    }
    // Derived pipeline packets and topology (re-emitted by the next draw).
    bool same_pipeline(const Tracked &o) const {
        return blend == o.blend && depth == o.depth && raster == o.raster && topology == o.topology;
    }
};

static float f32(const uint8_t *p) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
}

// App state used around the internal draws: shaders, declaration, a VB, a texture with
// linear magnification, alpha blending, a smaller viewport and scissor rect.
struct Scene {
    FakeSink sink;
    Device d{sink, g_handles, 1};
    uint32_t rt = 0, ds = 0, vb = 0, tex = 0, src = 0, dst = 0, vs = 0, ps = 0, decl = 0;
    Scene(bool set_viewport = true) {
        ResourceDesc t;
        t.kind = ResourceKind::Texture2D; t.d3d_format = 21; t.width = 128; t.height = 128;
        t.usage = AEROGPU_RESOURCE_USAGE_RENDER_TARGET | AEROGPU_RESOURCE_USAGE_TEXTURE;
        rt = d.create_resource(t);
        t.width = t.height = 64;
        dst = d.create_resource(t);
        t.width = t.height = 16;
        t.usage = AEROGPU_RESOURCE_USAGE_TEXTURE;
        src = d.create_resource(t);
        tex = d.create_resource(t);
        ResourceDesc z;
        z.kind = ResourceKind::Texture2D; z.d3d_format = 75; z.width = z.height = 128;
        z.usage = AEROGPU_RESOURCE_USAGE_DEPTH_STENCIL; z.guest_backed = false;
        ds = d.create_resource(z);
        ResourceDesc b; b.size_bytes = 60; b.usage = AEROGPU_RESOURCE_USAGE_VERTEX_BUFFER;
        vb = d.create_resource(b);
        vs = d.create_shader(AEROGPU_SHADER_STAGE_VERTEX, kVs, sizeof(kVs));
        ps = d.create_shader(AEROGPU_SHADER_STAGE_PIXEL, kPs, sizeof(kPs));
        decl = d.create_vertex_decl(kDecl, sizeof(kDecl));
        d.set_shaders(vs, ps);
        d.set_vertex_decl(decl);
        d.set_stream_source(0, vb, 4, 20);
        d.set_render_target(0, rt);
        d.set_depth_stencil(ds);
        d.set_texture(0, tex);
        d.set_sampler_state(0, 5 /* MAGFILTER */, 2 /* LINEAR */);
        d.set_render_state(27 /* ALPHABLENDENABLE */, 1);
        if (set_viewport) {
            d.set_viewport(8, 8, 100, 100, 0, 1);
            d.set_scissor(10, 10, 50, 50);
        }
        d.draw_primitive(4, 0, 1);
        d.flush();
    }
};

static void test_blit_stretch_packets_and_restore() {
    Scene sc;
    Tracked before;
    for (auto &s : sc.sink.streams) before.apply(packets(s));
    size_t base = sc.sink.streams.size();

    // 16x16 source -> 32x32 at (16,16) of the 64x64 destination, linear.
    Rect dr{16, 16, 48, 48}, sr{0, 0, 16, 16};
    CHECK(sc.d.blit(sc.dst, dr, sc.src, sr, kBlitLinear) == kS_OK);
    sc.d.flush();
    CHECK(sc.sink.streams.size() == base + 1);
    auto ps = packets(sc.sink.streams.back());
    // Expected stream: internal objects (first use), the upload, the states that differ
    // from the app's, the draw, then the restore.
    std::vector<uint32_t> want = {
        AEROGPU_CMD_CREATE_SHADER, AEROGPU_CMD_CREATE_SHADER, AEROGPU_CMD_CREATE_SHADER,
        AEROGPU_CMD_CREATE_INPUT_LAYOUT, AEROGPU_CMD_CREATE_BUFFER, AEROGPU_CMD_UPLOAD_RESOURCE,
        // ZENABLE, ZWRITEENABLE, CULLMODE, ALPHABLENDENABLE, SCISSORTESTENABLE
        AEROGPU_CMD_SET_RENDER_STATE, AEROGPU_CMD_SET_RENDER_STATE, AEROGPU_CMD_SET_RENDER_STATE,
        AEROGPU_CMD_SET_RENDER_STATE, AEROGPU_CMD_SET_RENDER_STATE,
        // ADDRESSU, ADDRESSV, MINFILTER (MAGFILTER already LINEAR)
        AEROGPU_CMD_SET_SAMPLER_STATE, AEROGPU_CMD_SET_SAMPLER_STATE, AEROGPU_CMD_SET_SAMPLER_STATE,
        AEROGPU_CMD_SET_TEXTURE, AEROGPU_CMD_BIND_SHADERS, AEROGPU_CMD_SET_INPUT_LAYOUT,
        AEROGPU_CMD_SET_VERTEX_BUFFERS, AEROGPU_CMD_SET_RENDER_TARGETS, AEROGPU_CMD_SET_VIEWPORT,
        AEROGPU_CMD_SET_SCISSOR, AEROGPU_CMD_SET_BLEND_STATE, AEROGPU_CMD_SET_DEPTH_STENCIL_STATE,
        AEROGPU_CMD_SET_RASTERIZER_STATE, AEROGPU_CMD_SET_PRIMITIVE_TOPOLOGY, AEROGPU_CMD_DRAW,
        // restore
        AEROGPU_CMD_SET_RENDER_TARGETS, AEROGPU_CMD_SET_VIEWPORT, AEROGPU_CMD_SET_SCISSOR,
        AEROGPU_CMD_SET_TEXTURE, AEROGPU_CMD_SET_SAMPLER_STATE, AEROGPU_CMD_SET_SAMPLER_STATE,
        AEROGPU_CMD_SET_SAMPLER_STATE, AEROGPU_CMD_SET_VERTEX_BUFFERS, AEROGPU_CMD_SET_INPUT_LAYOUT,
        AEROGPU_CMD_BIND_SHADERS, AEROGPU_CMD_SET_RENDER_STATE, AEROGPU_CMD_SET_RENDER_STATE,
        AEROGPU_CMD_SET_RENDER_STATE, AEROGPU_CMD_SET_RENDER_STATE, AEROGPU_CMD_SET_RENDER_STATE,
    };
    CHECK(ops_of(ps) == want);

    // The shaders are the core's SM2 tokens, the layout its declaration.
    const Packet *vsp = first_of(ps, AEROGPU_CMD_CREATE_SHADER), *bps = first_of(ps, AEROGPU_CMD_CREATE_SHADER, 1);
    CHECK(vsp && vsp->as<aerogpu_cmd_create_shader>().stage == AEROGPU_SHADER_STAGE_VERTEX &&
          vsp->as<aerogpu_cmd_create_shader>().bytecode_size_bytes == sizeof(kInternalVs) &&
          std::memcmp(vsp->payload(sizeof(aerogpu_cmd_create_shader)), kInternalVs, sizeof(kInternalVs)) == 0);
    CHECK(bps && bps->as<aerogpu_cmd_create_shader>().stage == AEROGPU_SHADER_STAGE_PIXEL &&
          std::memcmp(bps->payload(sizeof(aerogpu_cmd_create_shader)), kBlitPs, sizeof(kBlitPs)) == 0);
    uint32_t int_vs = vsp ? vsp->as<aerogpu_cmd_create_shader>().shader_handle : 0;
    uint32_t blit_ps = bps ? bps->as<aerogpu_cmd_create_shader>().shader_handle : 0;
    const Packet *bind = first_of(ps, AEROGPU_CMD_BIND_SHADERS);
    CHECK(bind && bind->as<aerogpu_cmd_bind_shaders>().vs == int_vs && bind->as<aerogpu_cmd_bind_shaders>().ps == blit_ps);

    // The ring buffer: host-allocated, vertex+index usage; the quad uploaded at offset 0.
    const Packet *cb = first_of(ps, AEROGPU_CMD_CREATE_BUFFER), *up = first_of(ps, AEROGPU_CMD_UPLOAD_RESOURCE);
    CHECK(cb && cb->as<aerogpu_cmd_create_buffer>().backing_alloc_id == 0 &&
          cb->as<aerogpu_cmd_create_buffer>().size_bytes == kUploadBufferBytes &&
          cb->as<aerogpu_cmd_create_buffer>().usage_flags ==
              (AEROGPU_RESOURCE_USAGE_VERTEX_BUFFER | AEROGPU_RESOURCE_USAGE_INDEX_BUFFER));
    uint32_t ring = cb ? cb->as<aerogpu_cmd_create_buffer>().buffer_handle : 0;
    CHECK(up && up->as<aerogpu_cmd_upload_resource>().resource_handle == ring &&
          up->as<aerogpu_cmd_upload_resource>().offset_bytes == 0 &&
          up->as<aerogpu_cmd_upload_resource>().size_bytes == 4 * kInternalVertexBytes);
    if (up) {
        // Corners in window coordinates (viewport = the 64x64 target) and texcoords: pixel
        // centres of the destination (D3D9: integer coordinates) land on the matching source
        // positions, half a destination pixel (1/4 texel) inside the source rectangle.
        const uint8_t *v = up->payload(sizeof(aerogpu_cmd_upload_resource));
        float x0 = (f32(v) + 1) * 32, x1 = (f32(v + 32) + 1) * 32;
        float y0 = (1 - f32(v + 4)) * 32, y2 = (1 - f32(v + 64 + 4)) * 32;
        float u0 = f32(v + 16) * 16, u1 = f32(v + 32 + 16) * 16, v0 = f32(v + 20) * 16, v2 = f32(v + 64 + 20) * 16;
        auto at = [](float a0, float a1, float p0, float p1, float p) { return a0 + (a1 - a0) * (p - p0) / (p1 - p0); };
        auto near = [](float a, float b) { return a - b < 1e-4f && b - a < 1e-4f; };
        CHECK(x0 < 16 - 0.5f && x1 > 48 - 0.5f && y0 < 16 - 0.5f && y2 > 48 - 0.5f); // covers the rect
        CHECK(near(at(u0, u1, x0, x1, 16), 0.25f) && near(at(u0, u1, x0, x1, 47), 15.75f));
        CHECK(near(at(v0, v2, y0, y2, 16), 0.25f) && near(at(v0, v2, y0, y2, 47), 15.75f));
        CHECK(f32(v + 12) == 1.0f && f32(v + 8) == 0.0f); // w = 1, z = 0
    }
    const Packet *vbp = first_of(ps, AEROGPU_CMD_SET_VERTEX_BUFFERS);
    aerogpu_vertex_buffer_binding vbb{};
    if (vbp) std::memcpy(&vbb, vbp->payload(sizeof(aerogpu_cmd_set_vertex_buffers)), sizeof(vbb));
    CHECK(vbb.buffer == ring && vbb.stride_bytes == kInternalVertexBytes && vbb.offset_bytes == 0);

    // Sampler 0: clamp, linear min/mag; the source on slot 0.
    Tracked during = before;
    std::vector<Packet> upto_draw;
    for (auto &p : ps) {
        upto_draw.push_back(p);
        if (p.op == AEROGPU_CMD_DRAW) break;
    }
    during.apply(upto_draw);
    CHECK(during.samp0[1] == 3 && during.samp0[2] == 3 && during.samp0[5] == 2 && during.samp0[6] == 2);
    CHECK(during.tex0 == sc.src && during.rs[174] == 1 && during.rs[27] == 0 && during.rs[7] == 0);
    auto rts = first_of(ps, AEROGPU_CMD_SET_RENDER_TARGETS)->as<aerogpu_cmd_set_render_targets>();
    CHECK(rts.color_count == 1 && rts.colors[0] == sc.dst && rts.depth_stencil == 0);
    auto vp = first_of(ps, AEROGPU_CMD_SET_VIEWPORT)->as<aerogpu_cmd_set_viewport>();
    CHECK(vp.x_f32 == 0 && f32(reinterpret_cast<const uint8_t *>(&vp.width_f32)) == 64.0f &&
          f32(reinterpret_cast<const uint8_t *>(&vp.height_f32)) == 64.0f);
    auto sci = first_of(ps, AEROGPU_CMD_SET_SCISSOR)->as<aerogpu_cmd_set_scissor>();
    CHECK(sci.x == 16 && sci.y == 16 && sci.width == 32 && sci.height == 32);
    auto bl = first_of(ps, AEROGPU_CMD_SET_BLEND_STATE)->as<aerogpu_cmd_set_blend_state>();
    auto dsp = first_of(ps, AEROGPU_CMD_SET_DEPTH_STENCIL_STATE)->as<aerogpu_cmd_set_depth_stencil_state>();
    auto ra = first_of(ps, AEROGPU_CMD_SET_RASTERIZER_STATE)->as<aerogpu_cmd_set_rasterizer_state>();
    CHECK(bl.enable == 0 && bl.color_write_mask == 0xF && dsp.depth_enable == 0 && dsp.depth_write_enable == 0);
    CHECK(ra.cull_mode == AEROGPU_CULL_NONE && ra.scissor_enable == 1 && ra.fill_mode == AEROGPU_FILL_SOLID);
    auto dr4 = first_of(ps, AEROGPU_CMD_DRAW)->as<aerogpu_cmd_draw>();
    CHECK(dr4.vertex_count == 4 && dr4.first_vertex == 0 &&
          first_of(ps, AEROGPU_CMD_SET_PRIMITIVE_TOPOLOGY)->as<aerogpu_cmd_set_primitive_topology>().topology ==
              AEROGPU_TOPOLOGY_TRIANGLESTRIP);
    // Allocation list: the destination written, the source read.
    bool dst_w = false, src_r = false;
    for (auto &a : sc.sink.lists.back()) {
        if (a.alloc_id == sc.d.resource(sc.dst)->alloc_id) dst_w = a.write;
        if (a.alloc_id == sc.d.resource(sc.src)->alloc_id) src_r = !a.write;
    }
    CHECK(dst_w && src_r);

    // Every binding and state is back; the next draw re-emits the app's pipeline state.
    Tracked after = before;
    after.apply(ps);
    CHECK(after.same_bindings(before));
    CHECK(!after.same_pipeline(before));
    CHECK(sc.d.draw_primitive(4, 0, 1) == kS_OK);
    sc.d.flush();
    after.apply(packets(sc.sink.streams.back()));
    CHECK(after.same_bindings(before) && after.same_pipeline(before));
    CHECK(sc.d.render_state(27) == 1 && sc.d.sampler_state(0, 1) == 1 && sc.d.sampler_state(0, 6) == 1);

    // A second blit (point, mirrored) reuses the objects: no CREATE_*, the quad goes to
    // the next ring slot (16-byte aligned), point filtering, mirrored texcoords.
    CHECK(sc.d.blit(sc.dst, Rect{0, 0, 64, 32}, sc.src, Rect{0, 0, 16, 16}, kBlitMirrorLeftRight) == kS_OK);
    sc.d.flush();
    ps = packets(sc.sink.streams.back());
    CHECK(!first_of(ps, AEROGPU_CMD_CREATE_SHADER) && !first_of(ps, AEROGPU_CMD_CREATE_BUFFER));
    up = first_of(ps, AEROGPU_CMD_UPLOAD_RESOURCE);
    CHECK(up && up->as<aerogpu_cmd_upload_resource>().offset_bytes == 128);
    if (up) {
        const uint8_t *v = up->payload(sizeof(aerogpu_cmd_upload_resource));
        CHECK(f32(v + 16) > f32(v + 32 + 16)); // u decreases left to right
    }
    bool point_min = false;
    for (auto &p : ps)
        if (p.op == AEROGPU_CMD_SET_SAMPLER_STATE && p.as<aerogpu_cmd_set_sampler_state>().state == 5)
            point_min |= p.as<aerogpu_cmd_set_sampler_state>().value == 1; // MAGFILTER LINEAR -> POINT
    CHECK(point_min);
    after.apply(ps);
    CHECK(after.same_bindings(before));

    // The target bound as a texture (slot 3): unbound for the draw, rebound after.
    CHECK(sc.d.set_texture(3, sc.dst) == kS_OK);
    CHECK(sc.d.blit(sc.dst, Rect{0, 0, 32, 32}, sc.src, Rect{0, 0, 16, 16}, 0) == kS_OK);
    sc.d.flush();
    ps = packets(sc.sink.streams.back());
    uint32_t slot3 = sc.dst;
    bool unbound_at_draw = false;
    for (auto &p : ps) {
        if (p.op == AEROGPU_CMD_SET_TEXTURE && p.as<aerogpu_cmd_set_texture>().slot == 3)
            slot3 = p.as<aerogpu_cmd_set_texture>().texture;
        if (p.op == AEROGPU_CMD_DRAW) unbound_at_draw = slot3 == 0;
    }
    CHECK(unbound_at_draw && slot3 == sc.dst);
}

static void test_blit_copy_path_and_errors() {
    Scene sc;
    size_t base = sc.sink.streams.size();
    // Same size, same format, no mirror: one COPY_TEXTURE2D.
    CHECK(sc.d.blit(sc.tex, Rect{0, 0, 8, 8}, sc.src, Rect{8, 8, 16, 16}, kBlitLinear) == kS_OK);
    sc.d.flush();
    auto ps = packets(sc.sink.streams.back());
    CHECK(sc.sink.streams.size() == base + 1 && ps.size() == 1 && ps[0].op == AEROGPU_CMD_COPY_TEXTURE2D);
    auto c = ps[0].as<aerogpu_cmd_copy_texture2d>();
    CHECK(c.dst_texture == sc.tex && c.src_texture == sc.src && c.src_x == 8 && c.width == 8 && c.dst_x == 0);
    base = sc.sink.streams.size();
    // Errors emit nothing.
    CHECK(sc.d.blit(sc.dst, Rect{0, 0, 64, 64}, sc.dst, Rect{0, 0, 32, 32}, 0) == kD3DERR_INVALIDCALL); // same surface
    CHECK(sc.d.blit(sc.dst, Rect{0, 0, 65, 64}, sc.src, Rect{0, 0, 16, 16}, 0) == kD3DERR_INVALIDCALL); // outside
    CHECK(sc.d.blit(sc.dst, Rect{8, 8, 8, 16}, sc.src, Rect{0, 0, 16, 16}, 0) == kD3DERR_INVALIDCALL);  // empty
    CHECK(sc.d.blit(sc.tex, Rect{0, 0, 8, 8}, sc.src, Rect{0, 0, 16, 16}, 0) == kD3DERR_NOTAVAILABLE);  // dst not RT
    CHECK(sc.d.blit(sc.dst, Rect{0, 0, 8, 8}, sc.ds, Rect{0, 0, 16, 16}, 0) == kD3DERR_NOTAVAILABLE);   // depth src
    CHECK(sc.d.blit(sc.dst, Rect{0, 0, 8, 8}, sc.vb, Rect{0, 0, 1, 1}, 0) == kD3DERR_INVALIDCALL);      // a buffer
    sc.d.flush();
    CHECK(sc.sink.streams.size() == base);
}

static void test_blit_restores_default_viewport() {
    // The app never set a viewport/scissor: they come back as D3D9's default (all of RT 0).
    Scene sc(false);
    CHECK(sc.d.blit(sc.dst, Rect{0, 0, 32, 32}, sc.src, Rect{0, 0, 16, 16}, 0) == kS_OK);
    sc.d.flush();
    auto ps = packets(sc.sink.streams.back());
    const Packet *vp = first_of(ps, AEROGPU_CMD_SET_VIEWPORT, 1), *sci = first_of(ps, AEROGPU_CMD_SET_SCISSOR, 1);
    CHECK(vp && sci);
    if (vp && sci) {
        auto v = vp->as<aerogpu_cmd_set_viewport>();
        CHECK(f32(reinterpret_cast<const uint8_t *>(&v.width_f32)) == 128.0f && v.x_f32 == 0);
        auto s = sci->as<aerogpu_cmd_set_scissor>();
        CHECK(s.x == 0 && s.y == 0 && s.width == 128 && s.height == 128);
    }
}

static void test_color_fill_rect() {
    Scene sc;
    Tracked before;
    for (auto &s : sc.sink.streams) before.apply(packets(s));
    const float rgba[4] = {0.25f, 0.5f, 0.75f, 1.0f};
    CHECK(sc.d.color_fill(sc.dst, Rect{4, 8, 20, 40}, rgba) == kS_OK);
    CHECK(sc.d.color_fill(sc.dst, Rect{4, 8, 70, 40}, rgba) == kD3DERR_INVALIDCALL);
    CHECK(sc.d.color_fill(sc.ds, Rect{0, 0, 4, 4}, rgba) == kD3DERR_NOTAVAILABLE);
    sc.d.flush();
    auto ps = packets(sc.sink.streams.back());
    // No texture or sampler involved; the fill pixel shader; the color in TEXCOORD0.
    CHECK(!first_of(ps, AEROGPU_CMD_SET_TEXTURE) && !first_of(ps, AEROGPU_CMD_SET_SAMPLER_STATE));
    const Packet *fps = first_of(ps, AEROGPU_CMD_CREATE_SHADER, 2), *bind = first_of(ps, AEROGPU_CMD_BIND_SHADERS);
    CHECK(fps && std::memcmp(fps->payload(sizeof(aerogpu_cmd_create_shader)), kFillPs, sizeof(kFillPs)) == 0);
    CHECK(fps && bind && bind->as<aerogpu_cmd_bind_shaders>().ps == fps->as<aerogpu_cmd_create_shader>().shader_handle);
    const Packet *up = first_of(ps, AEROGPU_CMD_UPLOAD_RESOURCE);
    CHECK(up != nullptr);
    if (up) {
        const uint8_t *v = up->payload(sizeof(aerogpu_cmd_upload_resource));
        for (int i = 0; i < 4; i++)
            CHECK(std::memcmp(v + i * 32 + 16, rgba, 16) == 0);
    }
    auto sci = first_of(ps, AEROGPU_CMD_SET_SCISSOR)->as<aerogpu_cmd_set_scissor>();
    CHECK(sci.x == 4 && sci.y == 8 && sci.width == 16 && sci.height == 32);
    CHECK(first_of(ps, AEROGPU_CMD_DRAW) && !first_of(ps, AEROGPU_CMD_CLEAR));
    Tracked after = before;
    after.apply(ps);
    CHECK(after.same_bindings(before));
    // Teardown destroys the internal objects (3 shaders, the layout, the ring buffer).
    sc.d.release_internal_objects();
    sc.d.flush();
    ps = packets(sc.sink.streams.back());
    CHECK(ops_of(ps) == (std::vector<uint32_t>{AEROGPU_CMD_DESTROY_RESOURCE, AEROGPU_CMD_DESTROY_SHADER,
                                                AEROGPU_CMD_DESTROY_SHADER, AEROGPU_CMD_DESTROY_SHADER,
                                                AEROGPU_CMD_DESTROY_INPUT_LAYOUT}));
}

static void test_user_memory_draws() {
    Scene sc;
    float verts[5 * 5];
    for (int i = 0; i < 25; i++) verts[i] = float(i);
    // DrawPrimitiveUP: the 3 vertices uploaded and bound to stream 0 (stride 20), DRAW from 0.
    CHECK(sc.d.draw_primitive_up(4, 1, verts, 20) == kS_OK);
    sc.d.flush();
    auto ps = packets(sc.sink.streams.back());
    const Packet *cb = first_of(ps, AEROGPU_CMD_CREATE_BUFFER), *up = first_of(ps, AEROGPU_CMD_UPLOAD_RESOURCE);
    uint32_t ring = cb ? cb->as<aerogpu_cmd_create_buffer>().buffer_handle : 0;
    CHECK(ring && up && up->as<aerogpu_cmd_upload_resource>().size_bytes == 60 &&
          std::memcmp(up->payload(sizeof(aerogpu_cmd_upload_resource)), verts, 60) == 0);
    CHECK(up && up->bytes.size() == sizeof(aerogpu_cmd_upload_resource) + 60);
    aerogpu_vertex_buffer_binding b{};
    const Packet *vbp = first_of(ps, AEROGPU_CMD_SET_VERTEX_BUFFERS);
    if (vbp) std::memcpy(&b, vbp->payload(sizeof(aerogpu_cmd_set_vertex_buffers)), sizeof(b));
    CHECK(b.buffer == ring && b.stride_bytes == 20 && b.offset_bytes == 0);
    auto dr = first_of(ps, AEROGPU_CMD_DRAW)->as<aerogpu_cmd_draw>();
    CHECK(dr.vertex_count == 3 && dr.first_vertex == 0);
    CHECK(!first_of(ps, AEROGPU_CMD_CREATE_SHADER)); // no internal shaders for UP draws

    // DrawIndexedPrimitiveUP: vertices [min_index, min_index + num) and the indices uploaded
    // (16-byte aligned offsets), base vertex -min_index so the app's indices still work.
    const uint16_t idx[3] = {2, 4, 3};
    CHECK(sc.d.draw_indexed_up(4, 0, 2, 3, 0, 1, idx, false, verts, 20) == kS_OK);
    sc.d.flush();
    ps = packets(sc.sink.streams.back());
    const Packet *uv = first_of(ps, AEROGPU_CMD_UPLOAD_RESOURCE), *ui = first_of(ps, AEROGPU_CMD_UPLOAD_RESOURCE, 1);
    CHECK(uv && ui && !first_of(ps, AEROGPU_CMD_CREATE_BUFFER));
    if (uv && ui) {
        auto a = uv->as<aerogpu_cmd_upload_resource>(), c = ui->as<aerogpu_cmd_upload_resource>();
        CHECK(a.offset_bytes == 64 && a.size_bytes == 60 &&
              std::memcmp(uv->payload(sizeof(a)), verts + 2 * 5, 60) == 0);
        CHECK(c.offset_bytes == 128 && c.size_bytes == 6 && std::memcmp(ui->payload(sizeof(c)), idx, 6) == 0);
    }
    auto ib = first_of(ps, AEROGPU_CMD_SET_INDEX_BUFFER)->as<aerogpu_cmd_set_index_buffer>();
    CHECK(ib.buffer == ring && ib.format == AEROGPU_INDEX_FORMAT_UINT16 && ib.offset_bytes == 128);
    auto di = first_of(ps, AEROGPU_CMD_DRAW_INDEXED)->as<aerogpu_cmd_draw_indexed>();
    CHECK(di.index_count == 3 && di.first_index == 0 && di.base_vertex == -2);

    // User-memory indices with the bound vertex buffer: the app's base vertex stays.
    const uint32_t idx32[3] = {0, 1, 2};
    sc.d.set_stream_source(0, sc.vb, 0, 20);
    CHECK(sc.d.draw_indexed_up(4, 1, 0, 3, 0, 1, idx32, true, nullptr, 0) == kS_OK);
    sc.d.flush();
    ps = packets(sc.sink.streams.back());
    CHECK(first_of(ps, AEROGPU_CMD_UPLOAD_RESOURCE, 1) == nullptr);
    di = first_of(ps, AEROGPU_CMD_DRAW_INDEXED)->as<aerogpu_cmd_draw_indexed>();
    CHECK(di.base_vertex == 1 && first_of(ps, AEROGPU_CMD_SET_INDEX_BUFFER)->as<aerogpu_cmd_set_index_buffer>().format ==
                                     AEROGPU_INDEX_FORMAT_UINT32);

    // Bounded: larger than one upload is E_OUTOFMEMORY with nothing emitted; bad arguments
    // are INVALIDCALL.
    std::vector<uint8_t> big(kUploadBufferBytes + 252);
    size_t before = sc.sink.streams.size();
    CHECK(sc.d.draw_primitive_up(4, (kUploadBufferBytes + 240) / 252, big.data(), 84) == kE_OUTOFMEMORY);
    CHECK(sc.d.draw_primitive_up(4, 1, nullptr, 20) == kD3DERR_INVALIDCALL);
    CHECK(sc.d.draw_primitive_up(4, 1, verts, 0) == kD3DERR_INVALIDCALL);
    CHECK(sc.d.draw_primitive_up(4, 0, verts, 20) == kD3DERR_INVALIDCALL);
    CHECK(sc.d.draw_indexed_up(4, -3, 2, 3, 0, 1, idx, false, verts, 20) == kD3DERR_INVALIDCALL); // first < 0
    sc.d.flush();
    CHECK(sc.sink.streams.size() == before);
}

static void test_upload_ring_wraps_and_batches() {
    Scene sc;
    std::vector<uint8_t> data(40000 - 40000 % 20, 0x5A);
    uint32_t prims = uint32_t(data.size() / 60);
    size_t base = sc.sink.streams.size();
    // 40 KB uploads: one per ring buffer; the 5th wraps to the first and ends the batch first.
    std::vector<uint32_t> handles;
    for (int i = 0; i < 5; i++) {
        CHECK(sc.d.draw_primitive_up(4, prims, data.data(), 20) == kS_OK);
        if (i == 3) CHECK(sc.sink.streams.size() == base); // nothing submitted yet
    }
    CHECK(sc.sink.streams.size() == base + 1);
    sc.d.flush();
    std::vector<Packet> all;
    for (size_t i = base; i < sc.sink.streams.size(); i++)
        for (auto &p : packets(sc.sink.streams[i])) all.push_back(p);
    size_t creates = 0;
    for (auto &p : all) {
        if (p.op == AEROGPU_CMD_CREATE_BUFFER) creates++;
        if (p.op == AEROGPU_CMD_UPLOAD_RESOURCE) {
            auto u = p.as<aerogpu_cmd_upload_resource>();
            CHECK(u.offset_bytes == 0);
            handles.push_back(u.resource_handle);
        }
    }
    CHECK(creates == kUploadRingBuffers && handles.size() == 5);
    CHECK(handles.size() == 5 && handles[4] == handles[0] && handles[1] != handles[0] && handles[3] != handles[2]);
    // The wrapped upload is in the second batch.
    CHECK(first_of(packets(sc.sink.streams.back()), AEROGPU_CMD_UPLOAD_RESOURCE) != nullptr);

    // A batch limit (the runtime's command buffer): uploads end the batch early, and one
    // that can never fit is E_OUTOFMEMORY.
    sc.d.set_max_batch_bytes(16384);
    CHECK(sc.d.draw_primitive_up(4, 250, data.data(), 20) == kE_OUTOFMEMORY); // 15000 + reserve > 16K
    base = sc.sink.streams.size();
    for (int i = 0; i < 6; i++) CHECK(sc.d.draw_primitive_up(4, 50, data.data(), 20) == kS_OK); // 3000 each
    sc.d.flush();
    CHECK(sc.sink.streams.size() >= base + 2);
    for (size_t i = base; i < sc.sink.streams.size(); i++) CHECK(sc.sink.streams[i].size() <= 16384);
}

// TexBlt (UpdateTexture) between video-memory textures: one COPY_TEXTURE2D per dst level,
// the rectangle scaled to each level and grown to whole texels.
// Cube and volume textures: CREATE_TEXTURE2D carries 6 cube layers / the volume's depth,
// the backing covers aerogpu_cmd.h's layout, and subresources land where the device reads
// them (cube face f mip m at face f's offset; volume slices slice_pitch apart).
static void test_cube_and_volume_resources() {
    FakeSink sink;
    Device d(sink, g_handles, 1);
    ResourceDesc cube;
    cube.kind = ResourceKind::Texture2D; cube.d3d_format = 21; cube.width = cube.height = 4; cube.levels = 2;
    cube.usage = AEROGPU_RESOURCE_USAGE_TEXTURE;
    cube.cube = true; cube.layers = 6;
    uint32_t c = d.create_resource(cube);
    ResourceDesc vol = cube;
    vol.cube = false; vol.layers = 1; vol.volume = true; vol.depth = 3; vol.width = 4; vol.height = 2;
    uint32_t v = d.create_resource(vol);
    CHECK(c && v);
    d.flush();
    auto ps = packets(sink.streams.back());
    std::vector<aerogpu_cmd_create_texture2d> created;
    for (auto &p : ps)
        if (p.op == AEROGPU_CMD_CREATE_TEXTURE2D) created.push_back(p.as<aerogpu_cmd_create_texture2d>());
    CHECK(created.size() == 2);
    if (created.size() == 2) {
        CHECK(created[0].array_layers == 6 && created[0].flags == AEROGPU_TEXTURE_FLAG_CUBE && created[0].depth == 0);
        CHECK(created[1].array_layers == 1 && created[1].flags == AEROGPU_TEXTURE_FLAG_VOLUME && created[1].depth == 3);
    }
    // Cube: (64 + 16) bytes per face; volume: 4x2x3 (96) + 2x1x1 (8).
    CHECK(d.resource(c)->backing_bytes == 6 * 80);
    CHECK(d.resource(v)->backing_bytes == 104);
    SubresourceLayout sl;
    CHECK(subresource_layout(d.resource(c)->desc, 2 * 2 + 1, &sl)); // face 2 (+Y), mip 1
    CHECK(sl.level.offset == 2 * 80 + 64 && sl.level.width == 2 && sl.size == 16);
    CHECK(!subresource_layout(d.resource(c)->desc, 12, &sl));
    CHECK(subresource_layout(d.resource(v)->desc, 0, &sl));
    CHECK(sl.level.offset == 0 && sl.depth == 3 && sl.slice_pitch == 32 && sl.size == 96);
    CHECK(subresource_layout(d.resource(v)->desc, 1, &sl));
    CHECK(sl.level.offset == 96 && sl.depth == 1 && sl.size == 8);
    // Not a cube: non-square faces; a volume deeper than the device's limit.
    ResourceDesc bad = cube;
    bad.height = 2;
    CHECK(d.create_resource(bad) == 0);
    bad = vol;
    bad.depth = AEROGPU_MAX_VOLUME_DEPTH + 1;
    CHECK(d.create_resource(bad) == 0);
    // UpdateTexture of a cube: the face the runtime names, every level, array layer = face.
    uint32_t c2 = d.create_resource(cube);
    d.flush();
    CHECK(d.tex_blt(c, 0, 0, c2, Rect{0, 0, 4, 4}, nullptr, 0, 3) == kS_OK);
    d.flush();
    ps = packets(sink.streams.back());
    CHECK(ops_of(ps) == std::vector<uint32_t>(2, AEROGPU_CMD_COPY_TEXTURE2D));
    for (uint32_t l = 0; l < 2 && l < ps.size(); l++) {
        auto k = ps[l].as<aerogpu_cmd_copy_texture2d>();
        CHECK(k.dst_texture == c && k.src_texture == c2 && k.dst_array_layer == 3 && k.src_array_layer == 3 &&
              k.dst_mip_level == l && k.width == (4u >> l));
    }
    // From system memory: face 1's levels (listed face by face) at face 1's offsets.
    std::vector<uint8_t> faces(6 * 80);
    for (size_t i = 0; i < faces.size(); i++) faces[i] = uint8_t(i);
    std::vector<Device::SysmemLevel> csm;
    for (uint32_t f = 0; f < 6; f++) {
        csm.push_back({faces.data() + f * 80, 16});
        csm.push_back({faces.data() + f * 80 + 64, 8});
    }
    CHECK(d.tex_blt(c, 0, 0, c2, Rect{0, 0, 4, 4}, csm.data(), 12, 1) == kS_OK);
    d.flush();
    ps = packets(sink.streams.back());
    CHECK(ps.size() == 2);
    if (ps.size() == 2) {
        auto a = ps[0].as<aerogpu_cmd_upload_resource>(), b = ps[1].as<aerogpu_cmd_upload_resource>();
        CHECK(a.offset_bytes == 80 && a.size_bytes == 64 && std::memcmp(ps[0].payload(sizeof(a)), &faces[80], 64) == 0);
        CHECK(b.offset_bytes == 80 + 64 && b.size_bytes == 16 &&
              std::memcmp(ps[1].payload(sizeof(b)), &faces[144], 16) == 0);
    }
    CHECK(d.tex_blt(c, 0, 0, c2, Rect{0, 0, 4, 4}, nullptr, 0, 6) == kD3DERR_INVALIDCALL); // no face 6
    CHECK(d.tex_blt(c, 0, 0, v, Rect{0, 0, 4, 2}, nullptr, 0) == kD3DERR_INVALIDCALL);     // a volume
    // VolBlt: one copy per depth slice and level, array layer = slice.
    uint32_t v2 = d.create_resource(vol);
    d.flush();
    Box whole;
    whole.right = 4; whole.bottom = 2; whole.back = 3;
    CHECK(d.vol_blt(v, 0, 0, 0, v2, whole, nullptr, 0) == kS_OK);
    d.flush();
    ps = packets(sink.streams.back());
    CHECK(ps.size() == 4); // 3 slices of level 0, 1 of level 1
    for (uint32_t i = 0; i < 4 && i < ps.size(); i++) {
        auto k = ps[i].as<aerogpu_cmd_copy_texture2d>();
        CHECK(k.dst_mip_level == (i / 3) && k.dst_array_layer == i % 3 && k.src_array_layer == i % 3 &&
              k.width == (i < 3 ? 4u : 2u) && k.height == (i < 3 ? 2u : 1u));
    }
    // A box: slices [1, 3) of level 0 to z 0; level 1 takes its one slice.
    Box part = whole;
    part.front = 1;
    CHECK(d.vol_blt(v, 0, 0, 0, v2, part, nullptr, 0) == kS_OK);
    d.flush();
    ps = packets(sink.streams.back());
    CHECK(ps.size() == 3);
    if (ps.size() == 3) {
        auto k0 = ps[0].as<aerogpu_cmd_copy_texture2d>(), k1 = ps[1].as<aerogpu_cmd_copy_texture2d>();
        CHECK(k0.src_array_layer == 1 && k0.dst_array_layer == 0 && k1.src_array_layer == 2 && k1.dst_array_layer == 1);
    }
    // From system memory: slices slice_pitch apart, uploaded at each slice's offset.
    std::vector<uint8_t> vbytes(104);
    for (size_t i = 0; i < vbytes.size(); i++) vbytes[i] = uint8_t(0x40 + i);
    const Device::SysmemLevel vsm[2] = {{vbytes.data(), 16, 32}, {vbytes.data() + 96, 8, 8}};
    CHECK(d.vol_blt(v, 0, 0, 0, v2, whole, vsm, 2) == kS_OK);
    d.flush();
    ps = packets(sink.streams.back());
    CHECK(ps.size() == 4);
    for (uint32_t i = 0; i < 4 && i < ps.size(); i++) {
        auto u = ps[i].as<aerogpu_cmd_upload_resource>();
        const uint32_t at = i < 3 ? i * 32 : 96, n = i < 3 ? 32 : 8;
        CHECK(u.offset_bytes == at && u.size_bytes == n && std::memcmp(ps[i].payload(sizeof(u)), &vbytes[at], n) == 0);
    }
    Box deep = whole;
    deep.back = 4;
    CHECK(d.vol_blt(v, 0, 0, 0, v2, deep, nullptr, 0) == kD3DERR_INVALIDCALL); // past the last slice
    CHECK(d.vol_blt(v, 0, 0, 0, c2, whole, nullptr, 0) == kD3DERR_INVALIDCALL); // not a volume
}

static void test_tex_blt_copy_levels() {
    FakeSink sink;
    Device d(sink, g_handles, 1);
    ResourceDesc t;
    t.kind = ResourceKind::Texture2D; t.d3d_format = 21; t.width = t.height = 16; t.levels = 3;
    t.usage = AEROGPU_RESOURCE_USAGE_TEXTURE;
    uint32_t dst = d.create_resource(t), src = d.create_resource(t);
    ResourceDesc big = t;
    big.width = big.height = 32; big.levels = 4;
    uint32_t src4 = d.create_resource(big);
    ResourceDesc other = t;
    other.d3d_format = 23;
    uint32_t r565 = d.create_resource(other);
    d.flush();
    CHECK(d.tex_blt(dst, 0, 0, src, Rect{0, 0, 16, 16}, nullptr, 0) == kS_OK);
    d.flush();
    auto ps = packets(sink.streams.back());
    CHECK(ops_of(ps) == std::vector<uint32_t>(3, AEROGPU_CMD_COPY_TEXTURE2D));
    for (uint32_t l = 0; l < 3 && l < ps.size(); l++) {
        auto c = ps[l].as<aerogpu_cmd_copy_texture2d>();
        CHECK(c.dst_texture == dst && c.src_texture == src && c.dst_mip_level == l && c.src_mip_level == l);
        CHECK(c.src_x == 0 && c.dst_y == 0 && c.width == (16u >> l) && c.height == (16u >> l));
    }
    // Both allocations listed; dst written.
    CHECK(sink.lists.back().size() == 2 && sink.lists.back()[0].alloc_id == d.resource(src)->alloc_id &&
          !sink.lists.back()[0].write && sink.lists.back()[1].write);
    // A dirty rectangle: level 0 as given, level 1 {1,1}-{5,5}, level 2 {0,0}-{3,3}.
    CHECK(d.tex_blt(dst, 2, 3, src, Rect{2, 3, 10, 9}, nullptr, 0) == kS_OK);
    d.flush();
    ps = packets(sink.streams.back());
    CHECK(ps.size() == 3);
    if (ps.size() == 3) {
        auto a = ps[0].as<aerogpu_cmd_copy_texture2d>(), b = ps[1].as<aerogpu_cmd_copy_texture2d>(),
             c = ps[2].as<aerogpu_cmd_copy_texture2d>();
        CHECK(a.src_x == 2 && a.src_y == 3 && a.dst_x == 2 && a.dst_y == 3 && a.width == 8 && a.height == 6);
        CHECK(b.dst_mip_level == 1 && b.src_x == 1 && b.src_y == 1 && b.dst_x == 1 && b.width == 4 && b.height == 4);
        CHECK(c.dst_mip_level == 2 && c.src_x == 0 && c.dst_x == 0 && c.width == 3 && c.height == 3);
    }
    // A source with more levels: dst level l from src level l + 1.
    CHECK(d.tex_blt(dst, 0, 0, src4, Rect{0, 0, 32, 32}, nullptr, 0) == kS_OK);
    d.flush();
    ps = packets(sink.streams.back());
    CHECK(ps.size() == 3 && ps[0].as<aerogpu_cmd_copy_texture2d>().src_mip_level == 1 &&
          ps[2].as<aerogpu_cmd_copy_texture2d>().src_mip_level == 3 &&
          ps[0].as<aerogpu_cmd_copy_texture2d>().width == 16);
    // Refusals emit nothing.
    size_t n = sink.streams.size();
    CHECK(d.tex_blt(dst, 0, 0, src4, Rect{0, 0, 8, 8}, nullptr, 0) == kD3DERR_NOTAVAILABLE); // region, skip 1
    CHECK(d.tex_blt(src4, 0, 0, dst, Rect{0, 0, 16, 16}, nullptr, 0) == kD3DERR_INVALIDCALL); // dst has more levels
    CHECK(d.tex_blt(dst, 0, 0, r565, Rect{0, 0, 16, 16}, nullptr, 0) == kD3DERR_INVALIDCALL); // formats differ
    CHECK(d.tex_blt(dst, 0, 0, src, Rect{0, 0, 17, 16}, nullptr, 0) == kD3DERR_INVALIDCALL);  // outside src
    CHECK(d.tex_blt(dst, 0, 0, dst, Rect{0, 0, 16, 16}, nullptr, 0) == kD3DERR_INVALIDCALL);  // itself
    d.flush();
    CHECK(sink.streams.size() == n);
}

// TexBlt from a system-memory texture: the runtime's bytes uploaded into dst's layout (row by
// row when the pitches differ, one span when they match), BC regions in whole blocks.
static void test_tex_blt_sysmem_upload() {
    FakeSink sink;
    Device d(sink, g_handles, 1);
    ResourceDesc t;
    t.kind = ResourceKind::Texture2D; t.d3d_format = 21; t.width = t.height = 16; t.levels = 2;
    t.usage = AEROGPU_RESOURCE_USAGE_TEXTURE;
    uint32_t dst = d.create_resource(t), src = d.create_resource(t);
    std::vector<uint8_t> l0(80 * 16), l1(32 * 8);
    for (size_t i = 0; i < l0.size(); i++) l0[i] = uint8_t(i * 7);
    for (size_t i = 0; i < l1.size(); i++) l1[i] = uint8_t(i * 3 + 1);
    const Device::SysmemLevel sm[2] = {{l0.data(), 80}, {l1.data(), 32}};
    d.flush();
    CHECK(d.tex_blt(dst, 0, 0, src, Rect{0, 0, 16, 16}, sm, 2) == kS_OK);
    d.flush();
    auto ps = packets(sink.streams.back());
    CHECK(ps.size() == 17);
    for (size_t r = 0; r < 16 && r < ps.size(); r++) {
        auto u = ps[r].as<aerogpu_cmd_upload_resource>();
        CHECK(ps[r].op == AEROGPU_CMD_UPLOAD_RESOURCE && u.resource_handle == dst && u.offset_bytes == r * 64 &&
              u.size_bytes == 64 && std::memcmp(ps[r].payload(sizeof(u)), l0.data() + r * 80, 64) == 0);
    }
    if (ps.size() == 17) {
        auto u = ps[16].as<aerogpu_cmd_upload_resource>();
        CHECK(u.offset_bytes == 16 * 64 && u.size_bytes == 256 &&
              std::memcmp(ps[16].payload(sizeof(u)), l1.data(), 256) == 0);
    }
    CHECK(sink.lists.back().empty()); // host data: no allocation needed
    // A region: rows 3..4 of level 0, texels 2..5, to (2,3); level 1 texels 1..2 of row 1..2.
    CHECK(d.tex_blt(dst, 2, 3, src, Rect{2, 3, 6, 5}, sm, 2) == kS_OK);
    d.flush();
    ps = packets(sink.streams.back());
    CHECK(ps.size() == 4);
    if (ps.size() == 4) {
        auto a = ps[0].as<aerogpu_cmd_upload_resource>(), c = ps[2].as<aerogpu_cmd_upload_resource>();
        CHECK(a.offset_bytes == 3 * 64 + 2 * 4 && a.size_bytes == 16 &&
              std::memcmp(ps[0].payload(sizeof(a)), l0.data() + 3 * 80 + 8, 16) == 0);
        CHECK(c.offset_bytes == 1024 + 1 * 32 + 1 * 4 && c.size_bytes == 8 &&
              std::memcmp(ps[2].payload(sizeof(c)), l1.data() + 32 + 4, 8) == 0);
    }
    // DXT1 (8-byte 4x4 blocks): the block at (4,4).
    ResourceDesc bc = t;
    bc.d3d_format = 0x31545844; bc.levels = 1;
    uint32_t bdst = d.create_resource(bc), bsrc = d.create_resource(bc);
    std::vector<uint8_t> blocks(32 * 4);
    for (size_t i = 0; i < blocks.size(); i++) blocks[i] = uint8_t(0xA0 + i);
    const Device::SysmemLevel bsm[1] = {{blocks.data(), 32}};
    d.flush();
    CHECK(d.tex_blt(bdst, 4, 4, bsrc, Rect{4, 4, 8, 8}, bsm, 1) == kS_OK);
    d.flush();
    ps = packets(sink.streams.back());
    CHECK(ps.size() == 1 && ps[0].as<aerogpu_cmd_upload_resource>().offset_bytes == 40 &&
          ps[0].as<aerogpu_cmd_upload_resource>().size_bytes == 8 &&
          std::memcmp(ps[0].payload(sizeof(aerogpu_cmd_upload_resource)), blocks.data() + 40, 8) == 0);
    CHECK(d.tex_blt(bdst, 8, 4, bsrc, Rect{4, 4, 8, 8}, bsm, 1) == kD3DERR_NOTAVAILABLE); // moved BC region
    CHECK(d.upload_texture(bdst, 0, 2, 0, 4, 4, blocks.data(), 32) == kD3DERR_INVALIDCALL); // off a block edge
    CHECK(d.tex_blt(dst, 0, 0, src, Rect{0, 0, 16, 16}, sm, 1) == kD3DERR_INVALIDCALL);   // levels missing
}

static void test_buffer_copy_and_upload() {
    FakeSink sink;
    Device d(sink, g_handles, 1);
    ResourceDesc b;
    b.size_bytes = 64; b.usage = AEROGPU_RESOURCE_USAGE_VERTEX_BUFFER;
    uint32_t dst = d.create_resource(b), src = d.create_resource(b);
    b.size_bytes = 200000;
    uint32_t big = d.create_resource(b);
    d.flush();
    CHECK(d.copy_buffer(dst, 8, src, 4, 16) == kS_OK);
    d.flush();
    auto ps = packets(sink.streams.back());
    CHECK(ps.size() == 1 && ps[0].op == AEROGPU_CMD_COPY_BUFFER);
    if (ps.size() == 1) {
        auto c = ps[0].as<aerogpu_cmd_copy_buffer>();
        CHECK(c.dst_buffer == dst && c.src_buffer == src && c.dst_offset_bytes == 8 && c.src_offset_bytes == 4 &&
              c.size_bytes == 16 && c.flags == 0);
    }
    CHECK(sink.lists.back().size() == 2 && sink.lists.back()[1].write);
    CHECK(d.copy_buffer(dst, 60, src, 0, 8) == kD3DERR_INVALIDCALL);   // past dst
    CHECK(d.copy_buffer(dst, 0, src, 0, 0) == kD3DERR_INVALIDCALL);    // empty
    CHECK(d.copy_buffer(dst, 0, 999, 0, 4) == kD3DERR_INVALIDCALL);    // not a resource
    std::vector<uint8_t> data(150000);
    for (size_t i = 0; i < data.size(); i++) data[i] = uint8_t(i / 3);
    CHECK(d.upload_buffer(dst, 0, data.data(), 40) == kS_OK);
    CHECK(d.upload_buffer(big, 1000, data.data(), data.size()) == kS_OK); // split at one upload's size
    d.flush();
    ps = packets(sink.streams.back());
    CHECK(ps.size() == 4);
    uint64_t off = 1000, total = 0;
    for (size_t i = 1; i < ps.size(); i++) {
        auto u = ps[i].as<aerogpu_cmd_upload_resource>();
        CHECK(u.resource_handle == big && u.offset_bytes == off && u.size_bytes <= kUploadBufferBytes &&
              std::memcmp(ps[i].payload(sizeof(u)), data.data() + total, size_t(u.size_bytes)) == 0);
        off += u.size_bytes;
        total += u.size_bytes;
    }
    CHECK(total == data.size());
    CHECK(d.upload_buffer(dst, 32, data.data(), 40) == kD3DERR_INVALIDCALL); // past the end
    // Batches the runtime's buffer can hold: packets shrink, batches end early.
    d.set_max_batch_bytes(16384);
    size_t base = sink.streams.size();
    CHECK(d.upload_buffer(big, 0, data.data(), 100000) == kS_OK);
    d.flush();
    CHECK(sink.streams.size() >= base + 7);
    for (size_t i = base; i < sink.streams.size(); i++) CHECK(sink.streams[i].size() <= 16384);
}

static void test_clear_rects_and_depth_fill() {
    Scene sc;
    Tracked before;
    for (auto &s : sc.sink.streams) before.apply(packets(s));
    const float rgba[4] = {1.0f, 0.0f, 0.5f, 1.0f};
    const Rect rects[3] = {{4, 4, 20, 12}, {100, 100, 200, 200}, {130, 0, 140, 10}};
    CHECK(sc.d.clear_color_rects(rgba, rects, 3) == kS_OK);
    sc.d.flush();
    auto ps = packets(sc.sink.streams.back());
    // One fill draw per rectangle inside render target 0 (the third lies outside it).
    const Packet *d0 = first_of(ps, AEROGPU_CMD_DRAW, 0), *d1 = first_of(ps, AEROGPU_CMD_DRAW, 1);
    CHECK(d0 && d1 && !first_of(ps, AEROGPU_CMD_DRAW, 2) && !first_of(ps, AEROGPU_CMD_CLEAR));
    std::vector<aerogpu_cmd_set_scissor> fills;
    for (size_t i = 0; i < ps.size(); i++)
        if (ps[i].op == AEROGPU_CMD_DRAW && i >= 1 && ps[i - 1].op == AEROGPU_CMD_SET_SCISSOR)
            fills.push_back(ps[i - 1].as<aerogpu_cmd_set_scissor>());
    // The scissor set right before each draw is the rectangle (clipped to the target).
    bool found0 = false, found1 = false;
    for (auto &p : ps)
        if (p.op == AEROGPU_CMD_SET_SCISSOR) {
            auto s = p.as<aerogpu_cmd_set_scissor>();
            found0 = found0 || (s.x == 4 && s.y == 4 && s.width == 16 && s.height == 8);
            found1 = found1 || (s.x == 100 && s.y == 100 && s.width == 28 && s.height == 28);
        }
    CHECK(found0 && found1);
    Tracked after = before;
    after.apply(ps);
    CHECK(after.same_bindings(before));

    // DepthFill of the D24S8 surface: bound alone, CLEAR of depth and stencil, rebound.
    CHECK(sc.d.depth_fill(sc.ds, 0x80000012u) == kS_OK);
    sc.d.flush();
    ps = packets(sc.sink.streams.back());
    CHECK(ops_of(ps) == (std::vector<uint32_t>{AEROGPU_CMD_SET_RENDER_TARGETS, AEROGPU_CMD_CLEAR,
                                                AEROGPU_CMD_SET_RENDER_TARGETS}));
    if (ps.size() == 3) {
        auto a = ps[0].as<aerogpu_cmd_set_render_targets>(), b = ps[2].as<aerogpu_cmd_set_render_targets>();
        CHECK(a.color_count == 0 && a.depth_stencil == sc.ds);
        CHECK(b.color_count == 1 && b.colors[0] == sc.rt && b.depth_stencil == sc.ds);
        auto c = ps[1].as<aerogpu_cmd_clear>();
        CHECK(c.flags == (AEROGPU_CLEAR_DEPTH | AEROGPU_CLEAR_STENCIL) && c.stencil == 0x12);
        CHECK(f32(reinterpret_cast<const uint8_t *>(&c.depth_f32)) == float(0x800000) / 16777215.0f);
    }
    CHECK(sc.d.depth_fill(sc.rt, 0) == kD3DERR_INVALIDCALL); // not a depth surface
}

static aerogpu_clear_rect clear_rect_of(const Packet &p, size_t i) {
    aerogpu_clear_rect r;
    std::memset(&r, 0, sizeof(r));
    const size_t off = sizeof(aerogpu_cmd_clear_rects) + i * sizeof(r);
    if (off + sizeof(r) <= p.bytes.size()) std::memcpy(&r, p.bytes.data() + off, sizeof(r));
    return r;
}

// D3D9 Clear: the viewport bounds it, the scissor rect too while the scissor test is on;
// depth/stencil in rectangles are CLEAR_RECTS, a rectangle covering every target a CLEAR.
static void test_clear_d3d9_viewport_and_scissor() {
    Scene sc; // viewport (8,8) 100x100, scissor (10,10) 50x50 with the test off
    const float rgba[4] = {0.0f, 1.0f, 0.0f, 1.0f};
    // No rectangles: the viewport's part of the 128x128 depth buffer.
    CHECK(sc.d.clear_d3d9(AEROGPU_CLEAR_DEPTH, rgba, 0.25f, 0, nullptr, 0) == kS_OK);
    sc.d.flush();
    auto ps = packets(sc.sink.streams.back());
    CHECK(ops_of(ps) == std::vector<uint32_t>{AEROGPU_CMD_CLEAR_RECTS});
    if (ps.size() == 1) {
        auto c = ps[0].as<aerogpu_cmd_clear_rects>();
        auto r = clear_rect_of(ps[0], 0);
        CHECK(c.flags == AEROGPU_CLEAR_DEPTH && c.rect_count == 1 && f32(reinterpret_cast<const uint8_t *>(&c.depth_f32)) == 0.25f);
        CHECK(r.x == 8 && r.y == 8 && r.width == 100 && r.height == 100);
    }
    // Scissor test on: color and depth in rectangle ∩ viewport ∩ scissor = (10,10)-(30,30);
    // the second rectangle lies outside the scissor rect.
    sc.d.set_render_state(174 /* SCISSORTESTENABLE */, 1);
    sc.d.flush();
    const Rect rects[2] = {{0, 0, 30, 30}, {70, 70, 90, 90}};
    CHECK(sc.d.clear_d3d9(AEROGPU_CLEAR_COLOR | AEROGPU_CLEAR_DEPTH, rgba, 1.0f, 0, rects, 2) == kS_OK);
    sc.d.flush();
    ps = packets(sc.sink.streams.back());
    CHECK(first_of(ps, AEROGPU_CMD_DRAW) && !first_of(ps, AEROGPU_CMD_DRAW, 1) && !first_of(ps, AEROGPU_CMD_CLEAR));
    // The fill's scissor (the last one set before its draw) is the cut rectangle.
    bool fill_scissor = false;
    for (const Packet &p : ps) {
        if (p.op == AEROGPU_CMD_DRAW) break;
        if (p.op != AEROGPU_CMD_SET_SCISSOR) continue;
        auto s = p.as<aerogpu_cmd_set_scissor>();
        fill_scissor = s.x == 10 && s.y == 10 && s.width == 20 && s.height == 20;
    }
    CHECK(fill_scissor);
    const Packet *cr = first_of(ps, AEROGPU_CMD_CLEAR_RECTS);
    CHECK(cr && !first_of(ps, AEROGPU_CMD_CLEAR_RECTS, 1));
    if (cr) {
        auto c = cr->as<aerogpu_cmd_clear_rects>();
        auto r = clear_rect_of(*cr, 0);
        CHECK(c.flags == AEROGPU_CLEAR_DEPTH && c.rect_count == 1);
        CHECK(r.x == 10 && r.y == 10 && r.width == 20 && r.height == 20);
    }
    // Rectangles wholly outside: nothing at all.
    const Rect outside = {200, 200, 210, 210};
    const size_t streams = sc.sink.streams.size();
    CHECK(sc.d.clear_d3d9(AEROGPU_CLEAR_COLOR | AEROGPU_CLEAR_DEPTH, rgba, 1.0f, 0, &outside, 1) == kS_OK);
    sc.d.flush();
    CHECK(sc.sink.streams.size() == streams); // empty batch: not submitted

    // Default viewport and scissor (never set): the whole targets, one CLEAR.
    Scene whole(false);
    CHECK(whole.d.clear_d3d9(7, rgba, 1.0f, 5, nullptr, 0) == kS_OK);
    whole.d.flush();
    ps = packets(whole.sink.streams.back());
    CHECK(ops_of(ps) == std::vector<uint32_t>{AEROGPU_CMD_CLEAR});
    if (ps.size() == 1) CHECK(ps[0].as<aerogpu_cmd_clear>().flags == 7 && ps[0].as<aerogpu_cmd_clear>().stencil == 5);

    // DepthFill of part of the surface: bound alone, CLEAR_RECTS, rebound.
    const Rect part = {4, 4, 20, 12};
    CHECK(sc.d.depth_fill(sc.ds, 0x80000012u, &part) == kS_OK);
    sc.d.flush();
    ps = packets(sc.sink.streams.back());
    CHECK(ops_of(ps) == (std::vector<uint32_t>{AEROGPU_CMD_SET_RENDER_TARGETS, AEROGPU_CMD_CLEAR_RECTS,
                                                AEROGPU_CMD_SET_RENDER_TARGETS}));
    if (ps.size() == 3) {
        auto c = ps[1].as<aerogpu_cmd_clear_rects>();
        auto r = clear_rect_of(ps[1], 0);
        CHECK(c.flags == (AEROGPU_CLEAR_DEPTH | AEROGPU_CLEAR_STENCIL) && c.stencil == 0x12 && c.rect_count == 1);
        CHECK(r.x == 4 && r.y == 4 && r.width == 16 && r.height == 8);
    }
    const Rect past = {100, 0, 129, 8};
    CHECK(sc.d.depth_fill(sc.ds, 0, &past) == kD3DERR_INVALIDCALL);

    // A device before ABI 1.4 (no CLEAR_RECTS): refused before any packet; whole clears
    // and color rectangles still work.
    sc.d.set_device_abi((AEROGPU_ABI_MAJOR << 16) | 3u);
    const size_t before_old = sc.sink.streams.size();
    CHECK(sc.d.depth_fill(sc.ds, 0, &part) == kD3DERR_NOTAVAILABLE);
    CHECK(sc.d.clear_d3d9(AEROGPU_CLEAR_COLOR | AEROGPU_CLEAR_DEPTH, rgba, 1.0f, 0, rects, 1) ==
          kD3DERR_NOTAVAILABLE);
    sc.d.flush();
    CHECK(sc.sink.streams.size() == before_old);
    CHECK(sc.d.clear_d3d9(AEROGPU_CLEAR_COLOR, rgba, 1.0f, 0, rects, 1) == kS_OK);
    CHECK(sc.d.depth_fill(sc.ds, 0) == kS_OK);
    sc.d.flush();
    CHECK(sc.sink.streams.size() == before_old + 1 && !first_of(packets(sc.sink.streams.back()), AEROGPU_CMD_CLEAR_RECTS));
    sc.d.set_device_abi(AEROGPU_ABI_VERSION_U32);

    // Many rectangles: packets of at most AEROGPU_MAX_CLEAR_RECTS.
    std::vector<Rect> many(AEROGPU_MAX_CLEAR_RECTS + 3);
    for (size_t i = 0; i < many.size(); i++) many[i] = Rect{0, int32_t(i % 100), 5, int32_t(i % 100) + 1};
    CHECK(sc.d.clear_rects(AEROGPU_CLEAR_STENCIL, nullptr, 0.0f, 1, many.data(), uint32_t(many.size())) == kS_OK);
    sc.d.flush();
    ps = packets(sc.sink.streams.back());
    CHECK(ops_of(ps) == (std::vector<uint32_t>{AEROGPU_CMD_CLEAR_RECTS, AEROGPU_CMD_CLEAR_RECTS}));
    if (ps.size() == 2)
        CHECK(ps[0].as<aerogpu_cmd_clear_rects>().rect_count == AEROGPU_MAX_CLEAR_RECTS &&
              ps[1].as<aerogpu_cmd_clear_rects>().rect_count == 3);
}

// Int/bool shader constants: SET_SHADER_CONSTANTS_I/_B, BOOLs sent as 0/1, ranges checked.
static void test_int_bool_constants() {
    FakeSink sink;
    Device d(sink, g_handles, 1);
    const int32_t iv[8] = {3, 0, 1, 0, -2, 7, 1, 0};
    const uint32_t bv[2] = {7, 0};
    CHECK(d.set_shader_constants_i(AEROGPU_SHADER_STAGE_PIXEL, 14, iv, 2) == kS_OK);
    CHECK(d.set_shader_constants_b(AEROGPU_SHADER_STAGE_VERTEX, 3, bv, 2) == kS_OK);
    CHECK(d.set_shader_constants_i(AEROGPU_SHADER_STAGE_VERTEX, 15, iv, 2) == kD3DERR_INVALIDCALL);
    CHECK(d.set_shader_constants_b(AEROGPU_SHADER_STAGE_VERTEX, 0, bv, 17) == kD3DERR_INVALIDCALL);
    CHECK(d.set_shader_constants_b(AEROGPU_SHADER_STAGE_VERTEX, 0, nullptr, 1) == kD3DERR_INVALIDCALL);
    d.flush();
    CHECK(sink.streams.size() == 1);
    if (sink.streams.size() != 1) return;
    auto ps = without_default_state(packets(sink.streams.back()));
    CHECK(ops_of(ps) == (std::vector<uint32_t>{AEROGPU_CMD_SET_SHADER_CONSTANTS_I, AEROGPU_CMD_SET_SHADER_CONSTANTS_B}));
    if (ps.size() != 2) return;
    const size_t fixed = sizeof(aerogpu_cmd_set_shader_constants);
    auto i = ps[0].as<aerogpu_cmd_set_shader_constants>();
    CHECK(i.stage == AEROGPU_SHADER_STAGE_PIXEL && i.start_register == 14 && i.count == 2);
    CHECK(ps[0].bytes.size() == fixed + 32 && std::memcmp(ps[0].payload(fixed), iv, 32) == 0);
    auto b = ps[1].as<aerogpu_cmd_set_shader_constants>();
    CHECK(b.stage == AEROGPU_SHADER_STAGE_VERTEX && b.start_register == 3 && b.count == 2);
    uint32_t sent[2] = {};
    if (ps[1].bytes.size() == fixed + 8) std::memcpy(sent, ps[1].payload(fixed), 8);
    CHECK(sent[0] == 1 && sent[1] == 0);
}

// DrawIndexedPrimitive2: byte offsets into stream 0 and the index data.
static void test_draw_indexed_primitive2() {
    Scene sc;
    float verts[6 * 5];
    for (int i = 0; i < 30; i++) verts[i] = float(i);
    // Indices at byte 2: {3, 5, 4}; BaseVertexOffset -20 bytes (index i is vertex i - 1).
    const uint16_t idx[4] = {0xFFFF, 3, 5, 4};
    CHECK(sc.d.draw_indexed_primitive2(4, -20, 3, 3, 2, 1, idx, 2, verts, 20) == kS_OK);
    sc.d.flush();
    auto ps = packets(sc.sink.streams.back());
    const Packet *uv = first_of(ps, AEROGPU_CMD_UPLOAD_RESOURCE), *ui = first_of(ps, AEROGPU_CMD_UPLOAD_RESOURCE, 1);
    CHECK(uv && ui);
    if (uv && ui) {
        CHECK(uv->as<aerogpu_cmd_upload_resource>().size_bytes == 60 &&
              std::memcmp(uv->payload(sizeof(aerogpu_cmd_upload_resource)), verts + 2 * 5, 60) == 0);
        CHECK(ui->as<aerogpu_cmd_upload_resource>().size_bytes == 6 &&
              std::memcmp(ui->payload(sizeof(aerogpu_cmd_upload_resource)), idx + 1, 6) == 0);
    }
    auto di = first_of(ps, AEROGPU_CMD_DRAW_INDEXED)->as<aerogpu_cmd_draw_indexed>();
    CHECK(di.index_count == 3 && di.first_index == 0 && di.base_vertex == -3);
    // Not a whole vertex: user memory still works (the upload starts at the byte).
    CHECK(sc.d.draw_indexed_primitive2(4, -10, 1, 3, 0, 1, idx + 1, 2, verts, 20) == kS_OK);
    sc.d.flush();
    ps = packets(sc.sink.streams.back());
    uv = first_of(ps, AEROGPU_CMD_UPLOAD_RESOURCE);
    CHECK(uv && std::memcmp(uv->payload(sizeof(aerogpu_cmd_upload_resource)),
                            reinterpret_cast<const uint8_t *>(verts) + 10, 60) == 0);
    // The bound vertex buffer: base vertex in whole vertices; 32-bit indices.
    const uint32_t idx32[3] = {0, 1, 2};
    CHECK(sc.d.draw_indexed_primitive2(4, 40, 0, 3, 0, 1, idx32, 4, nullptr, 20) == kS_OK);
    sc.d.flush();
    ps = packets(sc.sink.streams.back());
    di = first_of(ps, AEROGPU_CMD_DRAW_INDEXED)->as<aerogpu_cmd_draw_indexed>();
    CHECK(di.base_vertex == 2 && first_of(ps, AEROGPU_CMD_SET_INDEX_BUFFER)->as<aerogpu_cmd_set_index_buffer>().format ==
                                     AEROGPU_INDEX_FORMAT_UINT32);
    size_t n = sc.sink.streams.size();
    CHECK(sc.d.draw_indexed_primitive2(4, 30, 0, 3, 0, 1, idx32, 4, nullptr, 20) == kD3DERR_INVALIDCALL); // 1.5 vertices
    CHECK(sc.d.draw_indexed_primitive2(4, 0, 0, 3, 2, 1, idx32, 4, nullptr, 20) == kD3DERR_INVALIDCALL);  // mid-index
    CHECK(sc.d.draw_indexed_primitive2(4, 0, 0, 3, 0, 1, idx32, 3, nullptr, 20) == kD3DERR_INVALIDCALL);  // index size
    CHECK(sc.d.draw_indexed_primitive2(4, -60, 1, 3, 0, 1, idx, 2, verts, 20) == kD3DERR_INVALIDCALL);    // before data
    CHECK(sc.d.draw_indexed_primitive2(4, 0, 0, 3, 0, 1, nullptr, 2, verts, 20) == kD3DERR_INVALIDCALL);  // no indices
    sc.d.flush();
    CHECK(sc.sink.streams.size() == n);
}

// The device learns D3D9's default of every render and sampler state ahead of the first
// packet of the device, so a value equal to the cache is one it already holds: a first
// SetRenderState(X, 0) can never be a state the device has not heard of.
static void test_default_state_sent_first() {
    FakeSink sink;
    Device d(sink, g_handles, 1);
    d.flush();
    CHECK(sink.streams.empty()); // nothing to send yet
    CHECK(d.set_render_state(137 /* LIGHTING */, 0) == kS_OK);
    d.flush();
    CHECK(sink.streams.size() == 1);
    if (sink.streams.size() != 1) return;
    auto ps = packets(sink.streams[0]);
    std::map<uint32_t, uint32_t> rs, rs_count;
    std::map<uint32_t, uint32_t> samp[AEROGPU_MAX_TEXTURE_SLOTS];
    for (size_t i = 0; i + 1 < ps.size(); i++) {
        if (ps[i].op == AEROGPU_CMD_SET_RENDER_STATE) {
            auto r = ps[i].as<aerogpu_cmd_set_render_state>();
            rs[r.state] = r.value;
            rs_count[r.state]++;
        } else if (ps[i].op == AEROGPU_CMD_SET_SAMPLER_STATE) {
            auto r = ps[i].as<aerogpu_cmd_set_sampler_state>();
            if (r.slot < AEROGPU_MAX_TEXTURE_SLOTS) samp[r.slot][r.state] = r.value;
        } else {
            CHECK(false); // only the default state precedes the app's packet
        }
    }
    // The app's LIGHTING = FALSE comes last, after the default TRUE.
    CHECK(!ps.empty() && ps.back().op == AEROGPU_CMD_SET_RENDER_STATE &&
          ps.back().as<aerogpu_cmd_set_render_state>().state == 137 &&
          ps.back().as<aerogpu_cmd_set_render_state>().value == 0 && d.render_state(137) == 0);
    // A handful of D3D9's documented defaults (D3DRENDERSTATETYPE), floats as bits.
    const uint32_t want[][2] = {
        {137, 1},           {9, 2 /* GOURAUD */}, {16, 1},           {25, 8 /* ALWAYS */}, {56, 8},
        {60, 0xFFFFFFFFu},  {37, 0x3F800000u},    {38, 0x3F800000u}, {166, 0x42800000u},   {155, 0x3F800000u},
        {182, 0x3F800000u}, {183, 0},             {145, 1},          {146, 2},             {172, 3},
        {173, 1},           {189, 8},             {193, 0xFFFFFFFFu}, {162, 0xFFFFFFFFu},  {191, 0xF},
        {24, 0},            {36, 0},
    };
    for (const auto &w : want) {
        CHECK(rs.count(w[0]) && rs[w[0]] == w[1]);
        uint32_t v = 0;
        CHECK(d3d9_render_state_default(w[0], &v) && v == w[1]);
        if (w[0] != 137) CHECK(d.render_state(w[0]) == w[1]);
    }
    // Every state of the table sent once; the DDI layer's own states never.
    size_t table = 0;
    for (uint32_t st = 0; st < 256; st++) {
        uint32_t v = 0;
        if (!d3d9_render_state_default(st, &v)) {
            CHECK(!rs.count(st));
            continue;
        }
        table++;
        CHECK(rs_count[st] == 1 && rs[st] == v);
    }
    CHECK(table == rs.size() && table > 100 && !rs.count(153) && !rs.count(164));
    // Every sampler state of every slot: WRAP, point filtering, no mips, anisotropy 1.
    for (uint32_t slot = 0; slot < AEROGPU_MAX_TEXTURE_SLOTS; slot++) {
        CHECK(samp[slot].size() == 13);
        for (auto &kv : samp[slot]) CHECK(d.sampler_state(slot, kv.first) == kv.second);
        CHECK(samp[slot][1] == 1 && samp[slot][3] == 1 && samp[slot][5] == 1 && samp[slot][6] == 1 &&
              samp[slot][7] == 0 && samp[slot][10] == 1 && samp[slot][11] == 0);
    }
    // Once only: the next batch has just the app's packet.
    CHECK(d.set_render_state(24 /* ALPHAREF */, 0) == kS_OK);
    d.flush();
    CHECK(sink.streams.size() == 2 && packets(sink.streams[1]).size() == 1);
}

// A runtime command buffer smaller than the work: every packet that would not fit ends the
// batch first, nothing is lost or reordered, and a draw's batch lists what it references.
static void test_batches_end_before_overflow() {
    FakeSink sink;
    Device d(sink, g_handles, 1);
    const size_t kMax = 1024;
    d.set_max_batch_bytes(kMax);
    for (uint32_t i = 0; i < 300; i++) CHECK(d.set_render_state(0x1000 + i, i) == kS_OK);
    d.flush();
    CHECK(d.writer_error() == CmdError::None && sink.streams.size() > 8);
    std::vector<uint32_t> app;
    for (auto &st : sink.streams) {
        CHECK(st.size() <= kMax);
        for (auto &p : packets(st)) {
            auto r = p.as<aerogpu_cmd_set_render_state>();
            if (p.op == AEROGPU_CMD_SET_RENDER_STATE && r.state >= 0x1000) app.push_back(r.state - 0x1000);
        }
    }
    CHECK(app.size() == 300);
    for (uint32_t i = 0; i < app.size(); i++) CHECK(app[i] == i);

    // Draws behind a varying amount of filler: wherever the batch ends, the draw's packets
    // and its render target / vertex buffer share one batch.
    ResourceDesc rt;
    rt.kind = ResourceKind::Texture2D; rt.d3d_format = 21; rt.width = 16; rt.height = 16;
    rt.usage = AEROGPU_RESOURCE_USAGE_RENDER_TARGET;
    ResourceDesc vb; vb.size_bytes = 48; vb.usage = AEROGPU_RESOURCE_USAGE_VERTEX_BUFFER;
    uint32_t hrt = d.create_resource(rt), hvb = d.create_resource(vb);
    d.set_shaders(d.create_shader(AEROGPU_SHADER_STAGE_VERTEX, kVs, sizeof(kVs)),
                  d.create_shader(AEROGPU_SHADER_STAGE_PIXEL, kPs, sizeof(kPs)));
    d.set_vertex_decl(d.create_vertex_decl(kDecl, sizeof(kDecl)));
    d.set_render_target(0, hrt);
    d.set_stream_source(0, hvb, 0, 16);
    size_t first = sink.streams.size(), draws = 0;
    for (uint32_t filler = 0; filler < 64; filler++) {
        for (uint32_t i = 0; i < filler; i++) d.set_render_state(0x2000, i);
        d.set_render_state(22 /* CULLMODE */, filler % 2 ? 1 : 3); // re-emits the rasterizer state
        CHECK(d.draw_primitive(4, 0, 1) == kS_OK);
    }
    d.flush();
    for (size_t i = first; i < sink.streams.size(); i++) {
        CHECK(sink.streams[i].size() <= kMax);
        auto ps = packets(sink.streams[i]);
        bool draw = false, raster = false;
        for (auto &p : ps) {
            draw |= p.op == AEROGPU_CMD_DRAW;
            raster |= p.op == AEROGPU_CMD_SET_RASTERIZER_STATE;
        }
        CHECK(!raster || draw); // a derived state packet shares the batch of its draw
        if (!draw) continue;
        draws += std::count_if(ps.begin(), ps.end(), [](const Packet &p) { return p.op == AEROGPU_CMD_DRAW; });
        bool rt_w = false, vb_r = false;
        for (auto &a : sink.lists[i]) {
            rt_w |= a.alloc_id == d.resource(hrt)->alloc_id && a.write;
            vb_r |= a.alloc_id == d.resource(hvb)->alloc_id;
        }
        CHECK(rt_w && vb_r);
    }
    CHECK(draws == 64);
}

int main() {
    test_default_state_sent_first();
    test_batches_end_before_overflow();
    test_tex_blt_copy_levels();
    test_cube_and_volume_resources();
    test_tex_blt_sysmem_upload();
    test_buffer_copy_and_upload();
    test_clear_rects_and_depth_fill();
    test_clear_d3d9_viewport_and_scissor();
    test_int_bool_constants();
    test_draw_indexed_primitive2();
    test_blit_stretch_packets_and_restore();
    test_blit_copy_path_and_errors();
    test_blit_restores_default_viewport();
    test_color_fill_rect();
    test_user_memory_draws();
    test_upload_ring_wraps_and_batches();
    test_writer();
    test_tables();
    test_draw_alloc_list();
    test_present_throttle_and_queries();
    test_shared_alloc_ids();
    test_handle_chunks();
    test_caps_limits_enforced();
    return agpu_check_report();
}
