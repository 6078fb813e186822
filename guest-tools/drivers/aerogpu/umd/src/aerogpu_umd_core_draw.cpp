// Internal draws of the UMD core (see aerogpu_umd_core.h): the upload ring behind
// user-memory draws and blit quads, and Blt/ColorFill as draws with the UMD's own shaders,
// saving and restoring every device state they change.
#include "aerogpu_umd_core.h"

#include <cstring>
#include <utility>

namespace aerogpu {

// Token layout (D3D9 SM2): instruction token = opcode | (operand count << 24); register
// tokens carry bit 31, the register type in bits 28..30 (low bits) and 11..12 (high bits),
// the write mask in bits 16..19 (destinations) or the swizzle in bits 16..23 (sources).
const uint32_t kInternalVs[14] = {
    0xFFFE0200u,                          // vs_2_0
    0x0200001Fu, 0x80000000u, 0x900F0000u, // dcl_position v0
    0x0200001Fu, 0x80000005u, 0x900F0001u, // dcl_texcoord0 v1
    0x02000001u, 0xC00F0000u, 0x90E40000u, // mov oPos, v0
    0x02000001u, 0xE00F0000u, 0x90E40001u, // mov oT0, v1
    0x0000FFFFu,                          // end
};
const uint32_t kBlitPs[15] = {
    0xFFFF0200u,                                       // ps_2_0
    0x0200001Fu, 0x80000000u, 0xB0030000u,              // dcl t0.xy
    0x0200001Fu, 0x90000000u, 0xA00F0800u,              // dcl_2d s0
    0x03000042u, 0x800F0000u, 0xB0E40000u, 0xA0E40800u, // texld r0, t0, s0
    0x02000001u, 0x800F0800u, 0x80E40000u,              // mov oC0, r0
    0x0000FFFFu,                                       // end
};
const uint32_t kFillPs[8] = {
    0xFFFF0200u,                          // ps_2_0
    0x0200001Fu, 0x80000000u, 0xB00F0000u, // dcl t0
    0x02000001u, 0x800F0800u, 0xB0E40000u, // mov oC0, t0
    0x0000FFFFu,                          // end
};
// D3DVERTEXELEMENT9: {stream, offset, FLOAT4, DEFAULT, POSITION, 0}, {0, 16, FLOAT4,
// DEFAULT, TEXCOORD, 0}, D3DDECL_END.
const uint8_t kInternalDecl[24] = {0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 16, 0, 3, 0, 5, 0, 0xFF, 0, 0, 0, 17, 0, 0, 0};

namespace {

// Room an internal or user-memory draw needs in its batch besides its uploads: the state
// changes, the draw and the restore (under 60 packets of at most 56 bytes).
constexpr size_t kDrawReserveBytes = 4096;
constexpr size_t kUploadPacketBytes = sizeof(aerogpu_cmd_upload_resource);

// D3DRENDERSTATETYPE / D3DSAMPLERSTATETYPE values an internal draw overrides.
enum : uint32_t {
    RS_ZENABLE = 7, RS_FILLMODE = 8, RS_ZWRITEENABLE = 14, RS_ALPHATESTENABLE = 15, RS_CULLMODE = 22,
    RS_ALPHABLENDENABLE = 27, RS_FOGENABLE = 28, RS_STENCILENABLE = 52, RS_CLIPPLANEENABLE = 152,
    RS_COLORWRITEENABLE = 168, RS_SCISSORTESTENABLE = 174, RS_SRGBWRITEENABLE = 194,
};
enum : uint32_t {
    SAMP_ADDRESSU = 1, SAMP_ADDRESSV = 2, SAMP_MAGFILTER = 5, SAMP_MINFILTER = 6, SAMP_MIPFILTER = 7,
    SAMP_MIPMAPLODBIAS = 8, SAMP_MAXMIPLEVEL = 9, SAMP_SRGBTEXTURE = 11,
};
constexpr uint32_t kTexfNone = 0, kTexfPoint = 1, kTexfLinear = 2, kTaddressClamp = 3;

// A plain copy: no depth/stencil/alpha test/blend/fog/clip planes/sRGB write, no culling,
// solid fill, all channels written, scissor on (it clips the quad to the rectangle).
constexpr uint32_t kInternalRenderStates[][2] = {
    {RS_ZENABLE, 0},          {RS_ZWRITEENABLE, 0},     {RS_FILLMODE, 3 /* SOLID */},
    {RS_ALPHATESTENABLE, 0},  {RS_CULLMODE, 1 /* NONE */}, {RS_ALPHABLENDENABLE, 0},
    {RS_FOGENABLE, 0},        {RS_STENCILENABLE, 0},    {RS_CLIPPLANEENABLE, 0},
    {RS_COLORWRITEENABLE, 0xF}, {RS_SCISSORTESTENABLE, 1}, {RS_SRGBWRITEENABLE, 0},
};
constexpr size_t kInternalRenderStateCount = sizeof(kInternalRenderStates) / sizeof(kInternalRenderStates[0]);
constexpr size_t kInternalSamplerStateCount = 8;

bool is_block_compressed(uint32_t aerogpu_format) {
    return aerogpu_format == AEROGPU_FORMAT_BC1_UNORM || aerogpu_format == AEROGPU_FORMAT_BC2_UNORM ||
           aerogpu_format == AEROGPU_FORMAT_BC3_UNORM;
}

bool rect_in(const Rect &r, const Resource &res) {
    return r.left >= 0 && r.top >= 0 && r.left < r.right && r.top < r.bottom &&
           uint32_t(r.right) <= res.desc.width && uint32_t(r.bottom) <= res.desc.height;
}

} // namespace

void Device::ensure_room(size_t bytes) {
    if (defaults_pending_) emit_default_state();
    if (max_batch_bytes_ && !cmd_.empty() && cmd_.size() + bytes > max_batch_bytes_) flush();
}

int32_t Device::upload_transient(const void *data, uint32_t bytes, uint32_t *handle, uint32_t *offset) {
    if (!data || bytes == 0) return kD3DERR_INVALIDCALL;
    if (bytes > kUploadBufferBytes) return kE_OUTOFMEMORY;
    uint32_t aligned = (bytes + 15u) & ~15u; // keeps every binding offset 16-byte aligned
    if (max_batch_bytes_ &&
        sizeof(aerogpu_cmd_stream_header) + kUploadPacketBytes + aligned + kDrawReserveBytes > max_batch_bytes_)
        return kE_OUTOFMEMORY;
    if (ring_cursor_ + aligned > kUploadBufferBytes) {
        ring_index_ = (ring_index_ + 1) % kUploadRingBuffers;
        ring_cursor_ = 0;
        // Back at the first buffer: this batch may have uploaded there already.
        if (ring_index_ == 0) flush();
    }
    ensure_room(kUploadPacketBytes + aligned + kDrawReserveBytes);
    if (!ring_[ring_index_]) {
        ResourceDesc d;
        d.kind = ResourceKind::Buffer;
        d.size_bytes = kUploadBufferBytes;
        d.usage = AEROGPU_RESOURCE_USAGE_VERTEX_BUFFER | AEROGPU_RESOURCE_USAGE_INDEX_BUFFER;
        d.guest_backed = false; // filled by UPLOAD_RESOURCE, no WDDM allocation
        ring_[ring_index_] = create_resource(d);
        if (!ring_[ring_index_]) return kE_OUTOFMEMORY;
    }
    auto *p = emit<aerogpu_cmd_upload_resource>(AEROGPU_CMD_UPLOAD_RESOURCE, data, bytes);
    if (!p) return kE_OUTOFMEMORY;
    p->resource_handle = ring_[ring_index_];
    p->offset_bytes = ring_cursor_;
    p->size_bytes = bytes;
    *handle = ring_[ring_index_];
    *offset = ring_cursor_;
    ring_cursor_ += aligned;
    return kS_OK;
}

int32_t Device::draw_primitive_up(uint32_t prim, uint32_t count, const void *vertices, uint32_t stride) {
    uint32_t verts = vertex_count_for(prim, count);
    if (!verts || !vertices || !stride) return kD3DERR_INVALIDCALL;
    if (!vs_ || !ps_ || !decl_) return kD3DERR_INVALIDCALL; // before uploading anything
    uint64_t bytes = uint64_t(verts) * stride;
    if (bytes > kUploadBufferBytes) return kE_OUTOFMEMORY;
    uint32_t vb = 0, off = 0;
    int32_t hr = upload_transient(vertices, uint32_t(bytes), &vb, &off);
    if (hr != kS_OK) return hr;
    hr = set_stream_source(0, vb, off, stride);
    if (hr != kS_OK) return hr;
    return draw_primitive(prim, 0, count);
}

int32_t Device::draw_indexed_up(uint32_t prim, int32_t base_vertex, uint32_t min_index, uint32_t num_vertices,
                                uint32_t start_index, uint32_t count, const void *indices, bool index32,
                                const void *vertices, uint32_t stride) {
    uint32_t n = vertex_count_for(prim, count);
    if (!n || (!vertices && !indices) || (!indices && !ib_)) return kD3DERR_INVALIDCALL;
    if (!vs_ || !ps_ || !decl_) return kD3DERR_INVALIDCALL;
    int64_t first = int64_t(base_vertex) + min_index;
    uint64_t vbytes = 0, ibytes = 0;
    if (vertices) {
        // Vertex i of the draw is [first + (i - min_index)] of the uploaded range.
        if (!stride || !num_vertices || first < 0 || min_index > 0x7FFFFFFFu ||
            uint64_t(first) * stride > 0x7FFFFFFFu)
            return kD3DERR_INVALIDCALL;
        vbytes = uint64_t(num_vertices) * stride;
        if (vbytes > kUploadBufferBytes) return kE_OUTOFMEMORY;
    }
    uint32_t isize = index32 ? 4u : 2u;
    if (indices) {
        if (uint64_t(start_index) * isize > 0x7FFFFFFFu) return kD3DERR_INVALIDCALL;
        ibytes = uint64_t(n) * isize;
        if (ibytes > kUploadBufferBytes) return kE_OUTOFMEMORY;
    }
    // Both uploads and the draw in one batch.
    size_t total = 2 * kUploadPacketBytes + size_t(vbytes) + size_t(ibytes) + 32 + kDrawReserveBytes;
    if (max_batch_bytes_ && sizeof(aerogpu_cmd_stream_header) + total > max_batch_bytes_) return kE_OUTOFMEMORY;
    ensure_room(total);
    uint32_t vb = 0, voff = 0, ib = 0, ioff = 0;
    int32_t hr = kS_OK;
    if (vertices) {
        hr = upload_transient(static_cast<const uint8_t *>(vertices) + size_t(first) * stride, uint32_t(vbytes), &vb,
                              &voff);
        if (hr != kS_OK) return hr;
    }
    if (indices) {
        hr = upload_transient(static_cast<const uint8_t *>(indices) + size_t(start_index) * isize, uint32_t(ibytes),
                              &ib, &ioff);
        if (hr != kS_OK) return hr;
    }
    if (vertices && (hr = set_stream_source(0, vb, voff, stride)) != kS_OK) return hr;
    if (indices && (hr = set_indices(ib, index32, ioff)) != kS_OK) return hr;
    return draw_indexed(prim, vertices ? -int32_t(min_index) : base_vertex, indices ? 0 : start_index, count);
}

int32_t Device::ensure_internal_objects() {
    if (!int_vs_) int_vs_ = create_shader(AEROGPU_SHADER_STAGE_VERTEX, kInternalVs, sizeof(kInternalVs));
    if (!int_blit_ps_) int_blit_ps_ = create_shader(AEROGPU_SHADER_STAGE_PIXEL, kBlitPs, sizeof(kBlitPs));
    if (!int_fill_ps_) int_fill_ps_ = create_shader(AEROGPU_SHADER_STAGE_PIXEL, kFillPs, sizeof(kFillPs));
    if (!int_decl_) int_decl_ = create_vertex_decl(kInternalDecl, sizeof(kInternalDecl));
    return (int_vs_ && int_blit_ps_ && int_fill_ps_ && int_decl_) ? kS_OK : kE_OUTOFMEMORY;
}

void Device::release_internal_objects() {
    for (uint32_t &h : ring_) {
        if (h) destroy_resource(h);
        h = 0;
    }
    ring_index_ = ring_cursor_ = 0;
    for (uint32_t *h : {&int_vs_, &int_blit_ps_, &int_fill_ps_}) {
        if (*h) destroy_shader(*h);
        *h = 0;
    }
    if (int_decl_) destroy_vertex_decl(int_decl_);
    int_decl_ = 0;
}

// Draws a quad covering `rect` of `dst` (its only render target) with the internal vertex
// shader and either the blit pixel shader sampling `tex` or the fill one (tex == 0).
// attr: TEXCOORD0 of the corners (top-left, top-right, bottom-left, bottom-right) of the
// quad grown by one pixel on each side (see below).
int32_t Device::internal_quad(uint32_t dst, const Rect &rect, uint32_t tex, bool linear, const float attr[4][4]) {
    const Resource *d = find(dst);
    if (!d) return kD3DERR_INVALIDCALL;
    int32_t hr = ensure_internal_objects();
    if (hr != kS_OK) return hr;
    // D3D9 rasterization puts pixel centres at integer window coordinates, so the rectangle
    // spans [left - 0.5, right - 0.5). The quad is one pixel larger on each side (its
    // attributes extrapolated) and the scissor cuts it back to the rectangle: exactly its
    // pixels are written whichever pixel-centre convention the host rasterizer follows.
    const float w = float(d->desc.width), h = float(d->desc.height);
    const float xs[2] = {float(rect.left) - 1.5f, float(rect.right) + 0.5f};
    const float ys[2] = {float(rect.top) - 1.5f, float(rect.bottom) + 0.5f};
    float verts[4][8];
    for (int i = 0; i < 4; i++) {
        verts[i][0] = 2.0f * xs[i & 1] / w - 1.0f;
        verts[i][1] = 1.0f - 2.0f * ys[i >> 1] / h;
        verts[i][2] = 0.0f;
        verts[i][3] = 1.0f;
        std::memcpy(&verts[i][4], attr[i], 4 * sizeof(float));
    }
    static_assert(sizeof(verts) == 4 * kInternalVertexBytes, "vertex layout");
    uint32_t vb = 0, off = 0;
    hr = upload_transient(verts, sizeof(verts), &vb, &off);
    if (hr != kS_OK) return hr;

    // Save what is about to change.
    const uint32_t saved_vs = vs_, saved_ps = ps_, saved_decl = decl_, saved_tex0 = tex_[0], saved_ds = ds_;
    const StreamBinding saved_vb0 = vb_[0];
    uint32_t saved_rts[AEROGPU_MAX_RENDER_TARGETS];
    std::memcpy(saved_rts, rts_, sizeof(rts_));
    float saved_vp[6];
    std::memcpy(saved_vp, vp_, sizeof(vp_));
    int32_t saved_scissor[4];
    std::memcpy(saved_scissor, scissor_, sizeof(scissor_));
    const bool saved_has_vp = has_vp_, saved_has_scissor = has_scissor_;
    // Slots (other than the blit's source slot) holding the target: unbound meanwhile,
    // since one draw cannot sample the texture it renders to.
    bool unbound[AEROGPU_MAX_TEXTURE_SLOTS] = {};
    uint32_t rs_old[kInternalRenderStateCount][2], samp_old[kInternalSamplerStateCount][2];
    size_t n_rs = 0, n_samp = 0;

    // Apply. Only states that differ are touched (and later restored).
    auto keep = [&hr](int32_t r) {
        if (hr == kS_OK) hr = r;
    };
    for (const auto &s : kInternalRenderStates) {
        if (rs_[s[0]] == s[1]) continue;
        rs_old[n_rs][0] = s[0];
        rs_old[n_rs][1] = rs_[s[0]];
        n_rs++;
        keep(set_render_state(s[0], s[1]));
    }
    if (tex) {
        const uint32_t filter = linear ? kTexfLinear : kTexfPoint;
        const uint32_t want[kInternalSamplerStateCount][2] = {
            {SAMP_ADDRESSU, kTaddressClamp}, {SAMP_ADDRESSV, kTaddressClamp}, {SAMP_MAGFILTER, filter},
            {SAMP_MINFILTER, filter},        {SAMP_MIPFILTER, kTexfNone},     {SAMP_MIPMAPLODBIAS, 0},
            {SAMP_MAXMIPLEVEL, 0},           {SAMP_SRGBTEXTURE, 0},
        };
        for (const auto &s : want) {
            if (samp_[0][s[0]] == s[1]) continue;
            samp_old[n_samp][0] = s[0];
            samp_old[n_samp][1] = samp_[0][s[0]];
            n_samp++;
            keep(set_sampler_state(0, s[0], s[1]));
        }
        keep(set_texture(0, tex));
    }
    for (uint32_t slot = tex ? 1 : 0; slot < AEROGPU_MAX_TEXTURE_SLOTS; slot++) {
        if (tex_[slot] != dst) continue;
        unbound[slot] = true;
        keep(set_texture(slot, 0));
    }
    keep(set_shaders(int_vs_, tex ? int_blit_ps_ : int_fill_ps_));
    keep(set_vertex_decl(int_decl_));
    keep(set_stream_source(0, vb, off, kInternalVertexBytes));
    std::memset(rts_, 0, sizeof(rts_));
    rts_[0] = dst;
    ds_ = 0; // the depth buffer may be smaller than dst, and depth is off anyway
    keep(emit_render_targets());
    keep(set_viewport(0.0f, 0.0f, w, h, 0.0f, 1.0f));
    keep(set_scissor(rect.left, rect.top, rect.right - rect.left, rect.bottom - rect.top));
    if (hr == kS_OK) hr = draw_primitive(AEROGPU_TOPOLOGY_TRIANGLESTRIP, 0, 2);

    // Restore.
    std::memcpy(rts_, saved_rts, sizeof(rts_));
    ds_ = saved_ds;
    keep(emit_render_targets());
    // Never set: D3D9's default, the whole of render target 0 (nothing if there is none).
    const Resource *rt0 = saved_rts[0] ? find(saved_rts[0]) : nullptr;
    if (saved_has_vp) {
        keep(set_viewport(saved_vp[0], saved_vp[1], saved_vp[2], saved_vp[3], saved_vp[4], saved_vp[5]));
    } else if (rt0) {
        keep(set_viewport(0.0f, 0.0f, float(rt0->desc.width), float(rt0->desc.height), 0.0f, 1.0f));
    }
    has_vp_ = saved_has_vp;
    if (saved_has_scissor) {
        keep(set_scissor(saved_scissor[0], saved_scissor[1], saved_scissor[2], saved_scissor[3]));
    } else if (rt0) {
        keep(set_scissor(0, 0, int32_t(rt0->desc.width), int32_t(rt0->desc.height)));
    }
    has_scissor_ = saved_has_scissor;
    for (uint32_t slot = 0; slot < AEROGPU_MAX_TEXTURE_SLOTS; slot++)
        if (unbound[slot]) keep(set_texture(slot, dst));
    if (tex) {
        keep(set_texture(0, saved_tex0));
        for (size_t i = 0; i < n_samp; i++) keep(set_sampler_state(0, samp_old[i][0], samp_old[i][1]));
    }
    keep(set_stream_source(0, saved_vb0.handle, saved_vb0.offset, saved_vb0.stride));
    keep(set_vertex_decl(saved_decl));
    keep(set_shaders(saved_vs, saved_ps));
    for (size_t i = 0; i < n_rs; i++) keep(set_render_state(rs_old[i][0], rs_old[i][1]));
    return hr;
}

int32_t Device::blit(uint32_t dst, const Rect &dr, uint32_t src, const Rect &sr, uint32_t flags) {
    const Resource *d = find(dst), *s = find(src);
    if (!d || !s || d->desc.kind != ResourceKind::Texture2D || s->desc.kind != ResourceKind::Texture2D ||
        !rect_in(dr, *d) || !rect_in(sr, *s))
        return kD3DERR_INVALIDCALL;
    const uint32_t sw = uint32_t(sr.right - sr.left), sh = uint32_t(sr.bottom - sr.top);
    const uint32_t dw = uint32_t(dr.right - dr.left), dh = uint32_t(dr.bottom - dr.top);
    const uint32_t dfmt = d3d_format_to_aerogpu(d->desc.d3d_format), sfmt = d3d_format_to_aerogpu(s->desc.d3d_format);
    const bool mirror = flags & (kBlitMirrorLeftRight | kBlitMirrorUpDown);
    if (sw == dw && sh == dh && !mirror && dfmt == sfmt)
        return copy_texture2d(dst, uint32_t(dr.left), uint32_t(dr.top), src, uint32_t(sr.left), uint32_t(sr.top), sw,
                              sh);
    if (dst == src) return kD3DERR_INVALIDCALL; // D3D9: no stretching within one surface
    // Drawn into and sampled from: dst must be a color render target, src a color texture.
    const uint32_t depth = AEROGPU_RESOURCE_USAGE_DEPTH_STENCIL;
    if (!(d->desc.usage & AEROGPU_RESOURCE_USAGE_RENDER_TARGET) || (d->desc.usage & depth) ||
        is_block_compressed(dfmt) || !(s->desc.usage & AEROGPU_RESOURCE_USAGE_TEXTURE) || (s->desc.usage & depth))
        return kD3DERR_NOTAVAILABLE;
    // Texture coordinates at the grown quad's edges: one destination pixel (sx, sy source
    // texels) beyond the rectangle on each side. Mirroring swaps the edges.
    const float sx = float(sw) / float(dw), sy = float(sh) / float(dh);
    const float tw = float(s->desc.width), th = float(s->desc.height);
    float u[2] = {(float(sr.left) - sx) / tw, (float(sr.right) + sx) / tw};
    float v[2] = {(float(sr.top) - sy) / th, (float(sr.bottom) + sy) / th};
    if (flags & kBlitMirrorLeftRight) std::swap(u[0], u[1]);
    if (flags & kBlitMirrorUpDown) std::swap(v[0], v[1]);
    float attr[4][4];
    for (int i = 0; i < 4; i++) {
        attr[i][0] = u[i & 1];
        attr[i][1] = v[i >> 1];
        attr[i][2] = 0.0f;
        attr[i][3] = 1.0f;
    }
    return internal_quad(dst, dr, src, (flags & kBlitLinear) != 0, attr);
}

int32_t Device::color_fill(uint32_t dst, const Rect &rect, const float rgba[4]) {
    const Resource *d = find(dst);
    if (!d || !rgba || d->desc.kind != ResourceKind::Texture2D || !rect_in(rect, *d)) return kD3DERR_INVALIDCALL;
    if ((d->desc.usage & AEROGPU_RESOURCE_USAGE_DEPTH_STENCIL) || is_block_compressed(d3d_format_to_aerogpu(d->desc.d3d_format)))
        return kD3DERR_NOTAVAILABLE;
    float attr[4][4];
    for (auto &a : attr) std::memcpy(a, rgba, 4 * sizeof(float));
    return internal_quad(dst, rect, 0, false, attr);
}

} // namespace aerogpu
