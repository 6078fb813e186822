// Copies and fills of the UMD core (see aerogpu_umd_core.h): BufBlt/TexBlt as COPY_* packets
// or UPLOAD_RESOURCE of system-memory data, Clear with rectangles, DepthFill and
// DrawIndexedPrimitive2's byte offsets.
#include "aerogpu_umd_core.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <vector>

namespace aerogpu {

namespace {

constexpr size_t kUploadPacketBytes = sizeof(aerogpu_cmd_upload_resource);

bool is_bc(uint32_t aerogpu_format) {
    return aerogpu_format == AEROGPU_FORMAT_BC1_UNORM || aerogpu_format == AEROGPU_FORMAT_BC2_UNORM ||
           aerogpu_format == AEROGPU_FORMAT_BC3_UNORM;
}

// D3DFORMAT values of the depth formats DepthFill understands.
enum : uint32_t { FMT_D24S8 = 75, FMT_D24X8 = 77, FMT_D16 = 80, FMT_D32F_LOCKABLE = 82 };
constexpr uint32_t RS_SCISSORTESTENABLE = 174;

uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
constexpr uint32_t kClearDepthStencil = AEROGPU_CLEAR_DEPTH | AEROGPU_CLEAR_STENCIL;

// A viewport coordinate (D3D9 sets them from DWORDs) as a pixel edge; NaN and huge values
// are pinned so the integer math below cannot overflow.
int64_t pixel_edge(float f) {
    if (!(f > -2147483648.0f)) return f != f ? 0 : INT32_MIN;
    if (f > 2147483647.0f) return INT32_MAX;
    return int64_t(f);
}

Rect intersect(const Rect &a, int64_t l, int64_t t, int64_t r, int64_t b) {
    Rect o;
    o.left = int32_t(std::max<int64_t>(a.left, l));
    o.top = int32_t(std::max<int64_t>(a.top, t));
    o.right = int32_t(std::min<int64_t>(a.right, r));
    o.bottom = int32_t(std::min<int64_t>(a.bottom, b));
    return o;
}

bool covers(const Rect &r, const Resource *res) {
    return !res || (r.left <= 0 && r.top <= 0 && int64_t(r.right) >= int64_t(res->desc.width) &&
                    int64_t(r.bottom) >= int64_t(res->desc.height));
}

} // namespace

bool subresource_layout(const ResourceDesc &d, uint32_t sub, SubresourceLayout *out) {
    if (d.kind != ResourceKind::Texture2D || d.levels == 0 || sub / d.levels >= d.layers) return false;
    const uint32_t layer = sub / d.levels, mip = sub % d.levels;
    const uint32_t fmt = d3d_format_to_aerogpu(d.d3d_format);
    if (!fmt) return false;
    SubresourceLayout s;
    s.level.block = is_bc(fmt) ? 4 : 1;
    uint64_t off = 0;
    for (uint32_t i = 0; i < d.levels; i++) {
        const uint32_t w = std::max(d.width >> i, 1u), h = std::max(d.height >> i, 1u);
        const uint32_t pitch = row_pitch_for(d.d3d_format, w), rows = (h + s.level.block - 1) / s.level.block;
        const uint32_t slices = d.volume ? std::max(d.depth >> i, 1u) : 1u;
        if (i == mip) {
            s.level.width = w;
            s.level.height = h;
            s.level.offset = off;
            s.level.row_pitch = pitch;
            s.level.rows = rows;
            s.depth = slices;
            s.slice_pitch = uint64_t(pitch) * rows;
            s.size = s.slice_pitch * slices;
        }
        off += uint64_t(pitch) * rows * slices;
    }
    s.level.offset += off * layer; // `off` is now one layer's bytes
    *out = s;
    return true;
}

bool layer_level_layout(const ResourceDesc &d, uint32_t layer, uint32_t level, LevelLayout *out) {
    SubresourceLayout s;
    if (level >= d.levels || !subresource_layout(d, d.cube ? layer * d.levels + level : level, &s)) return false;
    if (d.volume) {
        if (layer >= s.depth) return false;
        s.level.offset += uint64_t(layer) * s.slice_pitch;
    } else if (!d.cube && layer) {
        return false;
    }
    *out = s.level;
    return true;
}

bool level_layout(const ResourceDesc &d, uint32_t level, LevelLayout *out) {
    return !d.cube && !d.volume && layer_level_layout(d, 0, level, out);
}

int32_t Device::copy_texture_level(uint32_t dst, uint32_t dst_level, uint32_t dst_x, uint32_t dst_y, uint32_t src,
                                   uint32_t src_level, uint32_t src_x, uint32_t src_y, uint32_t w, uint32_t h,
                                   uint32_t dst_layer, uint32_t src_layer) {
    Resource *d = find(dst), *s = find(src);
    LevelLayout dl, sl;
    if (!d || !s || !layer_level_layout(d->desc, dst_layer, dst_level, &dl) ||
        !layer_level_layout(s->desc, src_layer, src_level, &sl) || w == 0 ||
        h == 0 || dst_x > dl.width || w > dl.width - dst_x || dst_y > dl.height || h > dl.height - dst_y ||
        src_x > sl.width || w > sl.width - src_x || src_y > sl.height || h > sl.height - src_y ||
        d3d_format_to_aerogpu(d->desc.d3d_format) != d3d_format_to_aerogpu(s->desc.d3d_format))
        return kD3DERR_INVALIDCALL;
    auto *p = emit<aerogpu_cmd_copy_texture2d>(AEROGPU_CMD_COPY_TEXTURE2D);
    if (!p) return kE_OUTOFMEMORY;
    p->dst_texture = dst;
    p->src_texture = src;
    p->dst_mip_level = dst_level;
    p->src_mip_level = src_level;
    p->dst_array_layer = dst_layer;
    p->src_array_layer = src_layer;
    p->dst_x = dst_x;
    p->dst_y = dst_y;
    p->src_x = src_x;
    p->src_y = src_y;
    p->width = w;
    p->height = h;
    // A guest-backed destination gets the pixels in its backing too: the CPU may lock it
    // next (GetRenderTargetData into system memory, a lockable surface), and Lock reads
    // the allocation.
    if (d->alloc_id) p->flags = AEROGPU_COPY_FLAG_WRITEBACK_DST;
    reference(src, false);
    reference(dst, true);
    return kS_OK;
}

int32_t Device::copy_buffer(uint32_t dst, uint64_t dst_offset, uint32_t src, uint64_t src_offset, uint64_t size) {
    Resource *d = find(dst), *s = find(src);
    if (!d || !s || d->desc.kind != ResourceKind::Buffer || s->desc.kind != ResourceKind::Buffer || size == 0 ||
        dst_offset > d->desc.size_bytes || size > d->desc.size_bytes - dst_offset || src_offset > s->desc.size_bytes ||
        size > s->desc.size_bytes - src_offset)
        return kD3DERR_INVALIDCALL;
    auto *p = emit<aerogpu_cmd_copy_buffer>(AEROGPU_CMD_COPY_BUFFER);
    if (!p) return kE_OUTOFMEMORY;
    p->dst_buffer = dst;
    p->src_buffer = src;
    p->dst_offset_bytes = dst_offset;
    p->src_offset_bytes = src_offset;
    p->size_bytes = size;
    reference(src, false);
    reference(dst, true);
    return kS_OK;
}

int32_t Device::upload_range(uint32_t dst, uint64_t offset, const uint8_t *data, uint64_t size) {
    // One packet must fit an empty batch (the runtime's command buffer).
    uint64_t chunk_max = kUploadBufferBytes;
    if (max_batch_bytes_) {
        const size_t fixed = sizeof(aerogpu_cmd_stream_header) + kUploadPacketBytes + 64;
        if (max_batch_bytes_ <= fixed + 256) return kE_OUTOFMEMORY;
        chunk_max = std::min<uint64_t>(chunk_max, (max_batch_bytes_ - fixed) & ~uint64_t(3));
    }
    while (size) {
        const uint64_t n = std::min(size, chunk_max);
        ensure_room(kUploadPacketBytes + size_t(n) + 4);
        auto *p = emit<aerogpu_cmd_upload_resource>(AEROGPU_CMD_UPLOAD_RESOURCE, data, size_t(n));
        if (!p) return kE_OUTOFMEMORY;
        p->resource_handle = dst;
        p->offset_bytes = offset;
        p->size_bytes = n;
        data += n;
        offset += n;
        size -= n;
    }
    return kS_OK;
}

int32_t Device::upload_buffer(uint32_t dst, uint64_t offset, const void *data, uint64_t size) {
    Resource *d = find(dst);
    if (!d || !data || d->desc.kind != ResourceKind::Buffer || size == 0 || offset > d->desc.size_bytes ||
        size > d->desc.size_bytes - offset)
        return kD3DERR_INVALIDCALL;
    return upload_range(dst, offset, static_cast<const uint8_t *>(data), size);
}

int32_t Device::upload_texture(uint32_t dst, uint32_t level, uint32_t x, uint32_t y, uint32_t w, uint32_t h,
                               const void *data, uint32_t pitch, uint32_t layer) {
    Resource *d = find(dst);
    LevelLayout l;
    if (!d || !data || !layer_level_layout(d->desc, layer, level, &l) || w == 0 || h == 0 || x > l.width || w > l.width - x ||
        y > l.height || h > l.height - y)
        return kD3DERR_INVALIDCALL;
    const uint32_t b = l.block;
    if (x % b || y % b || ((x + w) % b && x + w != l.width) || ((y + h) % b && y + h != l.height))
        return kD3DERR_INVALIDCALL;
    const uint32_t elem = row_pitch_for(d->desc.d3d_format, b); // bytes per texel (per block for BC)
    const uint32_t bx = x / b, by = y / b, bw = (w + b - 1) / b, bh = (h + b - 1) / b;
    const uint64_t row_bytes = uint64_t(bw) * elem;
    if (pitch < row_bytes) return kD3DERR_INVALIDCALL;
    const uint8_t *src = static_cast<const uint8_t *>(data);
    if (bx == 0 && row_bytes == l.row_pitch && pitch == l.row_pitch)
        return upload_range(dst, l.offset + uint64_t(by) * l.row_pitch, src, uint64_t(bh) * l.row_pitch);
    for (uint32_t r = 0; r < bh; r++) {
        int32_t hr = upload_range(dst, l.offset + uint64_t(by + r) * l.row_pitch + uint64_t(bx) * elem,
                                  src + uint64_t(r) * pitch, row_bytes);
        if (hr != kS_OK) return hr;
    }
    return kS_OK;
}

int32_t Device::tex_blt(uint32_t dst, int32_t dst_x, int32_t dst_y, uint32_t src, const Rect &sr,
                        const SysmemLevel *sysmem, uint32_t sysmem_levels, uint32_t face) {
    const Resource *d = find(dst), *s = find(src);
    if (!d || !s || d->desc.volume || s->desc.volume || d->desc.cube != s->desc.cube || (d->desc.cube && face >= 6) ||
        (!d->desc.cube && face))
        return kD3DERR_INVALIDCALL;
    if (dst_x < 0 || dst_y < 0) return kD3DERR_INVALIDCALL;
    Box box;
    box.left = sr.left;
    box.top = sr.top;
    box.right = sr.right;
    box.bottom = sr.bottom;
    return blt_levels(dst, uint32_t(dst_x), uint32_t(dst_y), 0, src, box, face, sysmem, sysmem_levels);
}

int32_t Device::vol_blt(uint32_t dst, uint32_t dst_x, uint32_t dst_y, uint32_t dst_z, uint32_t src, const Box &box,
                        const SysmemLevel *sysmem, uint32_t sysmem_levels) {
    const Resource *d = find(dst), *s = find(src);
    if (!d || !s || !d->desc.volume || !s->desc.volume) return kD3DERR_INVALIDCALL;
    return blt_levels(dst, dst_x, dst_y, dst_z, src, box, 0, sysmem, sysmem_levels);
}

int32_t Device::blt_levels(uint32_t dst, uint32_t dst_x, uint32_t dst_y, uint32_t dst_z, uint32_t src, const Box &box,
                           uint32_t face, const SysmemLevel *sysmem, uint32_t sysmem_levels) {
    const Resource *d = find(dst), *s = find(src);
    if (!d || !s || dst == src || d->desc.kind != ResourceKind::Texture2D || s->desc.kind != ResourceKind::Texture2D ||
        d3d_format_to_aerogpu(d->desc.d3d_format) != d3d_format_to_aerogpu(s->desc.d3d_format) ||
        s->desc.levels < d->desc.levels || (sysmem && sysmem_levels < s->desc.layers * s->desc.levels))
        return kD3DERR_INVALIDCALL;
    // UpdateTexture: dst level l corresponds to src level l + skip, of the same size.
    const uint32_t skip = s->desc.levels - d->desc.levels;
    SubresourceLayout src_top, dst_top, src0;
    // Sizes from face 0 (a cube's faces share them): subresource l is mip l.
    if (!subresource_layout(s->desc, skip, &src_top) || !subresource_layout(d->desc, 0, &dst_top) ||
        !subresource_layout(s->desc, 0, &src0))
        return kD3DERR_INVALIDCALL;
    if (src_top.level.width != dst_top.level.width || src_top.level.height != dst_top.level.height ||
        src_top.depth != dst_top.depth)
        return kD3DERR_INVALIDCALL;
    if (box.left < 0 || box.top < 0 || box.left >= box.right || box.top >= box.bottom || box.front >= box.back ||
        uint32_t(box.right) > src0.level.width || uint32_t(box.bottom) > src0.level.height || box.back > src0.depth)
        return kD3DERR_INVALIDCALL;
    const bool whole = box.left == 0 && box.top == 0 && uint32_t(box.right) == src0.level.width &&
                       uint32_t(box.bottom) == src0.level.height && box.front == 0 && box.back == src0.depth &&
                       dst_x == 0 && dst_y == 0 && dst_z == 0;
    // A region of a texture whose levels do not line up with dst's, or a block-compressed
    // region moved elsewhere: no defined per-level mapping.
    const uint32_t block = src_top.level.block;
    if (!whole && (skip || (block > 1 && (dst_x != uint32_t(box.left) || dst_y != uint32_t(box.top)))))
        return kD3DERR_NOTAVAILABLE;
    for (uint32_t lv = 0; lv < d->desc.levels; lv++) {
        SubresourceLayout dl, sl;
        subresource_layout(d->desc, lv, &dl);
        subresource_layout(s->desc, lv + skip, &sl);
        uint32_t x0 = 0, y0 = 0, z0 = 0, x1 = sl.level.width, y1 = sl.level.height, z1 = sl.depth, dx = 0, dy = 0,
                 dz = 0;
        if (!whole) {
            // The box scaled to the level, grown to whole texels (and BC blocks).
            const uint32_t round = (1u << lv) - 1;
            x0 = uint32_t(box.left) >> lv;
            y0 = uint32_t(box.top) >> lv;
            z0 = box.front >> lv;
            x1 = std::min((uint32_t(box.right) + round) >> lv, sl.level.width);
            y1 = std::min((uint32_t(box.bottom) + round) >> lv, sl.level.height);
            z1 = std::min((box.back + round) >> lv, sl.depth);
            if (block > 1) {
                x0 &= ~3u;
                y0 &= ~3u;
                x1 = std::min((x1 + 3) & ~3u, sl.level.width);
                y1 = std::min((y1 + 3) & ~3u, sl.level.height);
                dx = x0;
                dy = y0;
            } else {
                dx = dst_x >> lv;
                dy = dst_y >> lv;
            }
            dz = dst_z >> lv;
            if (x1 <= x0) x1 = x0 + 1;
            if (y1 <= y0) y1 = y0 + 1;
            if (z1 <= z0) z1 = z0 + 1;
            if (dx >= dl.level.width || dy >= dl.level.height || dz >= dl.depth) return kD3DERR_INVALIDCALL;
        }
        const uint32_t w = std::min(x1 - x0, dl.level.width - dx), h = std::min(y1 - y0, dl.level.height - dy);
        const uint32_t depth = std::min(z1 - z0, dl.depth - dz);
        for (uint32_t z = 0; z < depth; z++) {
            // A cube copies within one face; a volume one depth slice at a time.
            const uint32_t dst_layer = d->desc.cube ? face : dz + z, src_layer = d->desc.cube ? face : z0 + z;
            int32_t hr;
            if (sysmem) {
                // The runtime lists a cube's levels face by face.
                const SysmemLevel &m = sysmem[(d->desc.cube ? face * s->desc.levels : 0) + lv + skip];
                if (!m.data || (s->desc.volume && !m.slice_pitch)) return kD3DERR_INVALIDCALL;
                const uint32_t elem = row_pitch_for(s->desc.d3d_format, block);
                const uint8_t *p = static_cast<const uint8_t *>(m.data) + uint64_t(z0 + z) * m.slice_pitch +
                                   uint64_t(y0 / block) * m.pitch + uint64_t(x0 / block) * elem;
                hr = upload_texture(dst, lv, dx, dy, w, h, p, m.pitch, dst_layer);
            } else {
                hr = copy_texture_level(dst, lv, dx, dy, src, lv + skip, x0, y0, w, h, dst_layer, src_layer);
            }
            if (hr != kS_OK) return hr;
        }
    }
    return kS_OK;
}

int32_t Device::clear_color_rects(const float rgba[4], const Rect *rects, uint32_t n) {
    if (!rgba || (n && !rects)) return kD3DERR_INVALIDCALL;
    uint32_t targets[AEROGPU_MAX_RENDER_TARGETS];
    std::memcpy(targets, rts_, sizeof(targets)); // color_fill rebinds and restores rts_
    for (uint32_t t : targets) {
        const Resource *r = t ? find(t) : nullptr;
        if (!r) continue;
        // Copied: the fills may create internal resources (and move the resource table).
        const int64_t w = r->desc.width, h = r->desc.height;
        for (uint32_t i = 0; i < n; i++) {
            Rect c = rects[i];
            c.left = std::max(c.left, 0);
            c.top = std::max(c.top, 0);
            c.right = int32_t(std::min<int64_t>(c.right, w));
            c.bottom = int32_t(std::min<int64_t>(c.bottom, h));
            if (c.left >= c.right || c.top >= c.bottom) continue;
            int32_t hr = color_fill(t, c, rgba);
            if (hr != kS_OK) return hr;
        }
    }
    return kS_OK;
}

int32_t Device::clear_rects(uint32_t flags, const float rgba[4], float z, uint32_t stencil, const Rect *rects,
                            uint32_t n) {
    if (n && !rects) return kD3DERR_INVALIDCALL;
    if (!has_clear_rects()) return kD3DERR_NOTAVAILABLE;
    flags &= AEROGPU_CLEAR_COLOR | kClearDepthStencil;
    std::vector<aerogpu_clear_rect> out;
    for (uint32_t i = 0; i < n; i++) {
        const Rect c = intersect(rects[i], 0, 0, INT32_MAX, INT32_MAX);
        if (c.left >= c.right || c.top >= c.bottom) continue;
        out.push_back(aerogpu_clear_rect{uint32_t(c.left), uint32_t(c.top), uint32_t(c.right - c.left),
                                         uint32_t(c.bottom - c.top)});
    }
    if (!flags || out.empty()) return kS_OK;
    for (size_t first = 0; first < out.size(); first += AEROGPU_MAX_CLEAR_RECTS) {
        const uint32_t count = uint32_t(std::min<size_t>(out.size() - first, AEROGPU_MAX_CLEAR_RECTS));
        auto *p = emit<aerogpu_cmd_clear_rects>(AEROGPU_CMD_CLEAR_RECTS, &out[first],
                                                size_t(count) * sizeof(aerogpu_clear_rect));
        if (!p) return kE_OUTOFMEMORY;
        p->flags = flags;
        for (int i = 0; i < 4; i++) p->color_rgba_f32[i] = float_bits(rgba ? rgba[i] : 0.0f);
        p->depth_f32 = float_bits(z);
        p->stencil = stencil;
        p->rect_count = count;
        // Each packet may start a new batch: list the targets in the one that holds it.
        for (uint32_t h : rts_) if (h && (flags & AEROGPU_CLEAR_COLOR)) reference(h, true);
        if (ds_ && (flags & kClearDepthStencil)) reference(ds_, true);
    }
    return kS_OK;
}

int32_t Device::clear_d3d9(uint32_t flags, const float rgba[4], float z, uint32_t stencil, const Rect *rects,
                           uint32_t n) {
    if (n && !rects) return kD3DERR_INVALIDCALL;
    flags &= AEROGPU_CLEAR_COLOR | kClearDepthStencil;
    if (!flags) return kS_OK;
    // D3D9's default viewport and scissor: all of render target 0 (or of the depth
    // surface when no color target is bound).
    const Resource *base = rts_[0] ? find(rts_[0]) : (ds_ ? find(ds_) : nullptr);
    if (!base) return kS_OK; // nothing bound: nothing to clear
    int64_t l = 0, t = 0, r = base->desc.width, b = base->desc.height;
    if (has_vp_) {
        l = pixel_edge(vp_[0]);
        t = pixel_edge(vp_[1]);
        r = l + pixel_edge(vp_[2]);
        b = t + pixel_edge(vp_[3]);
    }
    if (rs_[RS_SCISSORTESTENABLE] && has_scissor_) {
        l = std::max<int64_t>(l, scissor_[0]);
        t = std::max<int64_t>(t, scissor_[1]);
        r = std::min<int64_t>(r, int64_t(scissor_[0]) + scissor_[2]);
        b = std::min<int64_t>(b, int64_t(scissor_[1]) + scissor_[3]);
    }
    // Kept in int32 range (the edges are narrowed below).
    l = std::clamp<int64_t>(l, INT32_MIN, INT32_MAX);
    t = std::clamp<int64_t>(t, INT32_MIN, INT32_MAX);
    r = std::clamp<int64_t>(r, INT32_MIN, INT32_MAX);
    b = std::clamp<int64_t>(b, INT32_MIN, INT32_MAX);
    std::vector<Rect> clipped;
    if (n == 0) {
        Rect all;
        all.left = INT32_MIN;
        all.top = INT32_MIN;
        all.right = INT32_MAX;
        all.bottom = INT32_MAX;
        clipped.push_back(intersect(all, l, t, r, b));
    } else {
        for (uint32_t i = 0; i < n; i++) clipped.push_back(intersect(rects[i], l, t, r, b));
    }
    clipped.erase(std::remove_if(clipped.begin(), clipped.end(),
                                 [](const Rect &c) { return c.left >= c.right || c.top >= c.bottom; }),
                  clipped.end());
    if (clipped.empty()) return kS_OK;
    // One rectangle covering every target the flags touch: a plain CLEAR.
    for (const Rect &c : clipped) {
        bool all = true;
        if (flags & AEROGPU_CLEAR_COLOR)
            for (uint32_t h : rts_) all = all && (!h || covers(c, find(h)));
        if (flags & kClearDepthStencil) all = all && (!ds_ || covers(c, find(ds_)));
        if (all) return clear(flags, rgba, z, stencil);
    }
    // Refused whole rather than half done.
    if ((flags & kClearDepthStencil) && ds_ && !has_clear_rects()) return kD3DERR_NOTAVAILABLE;
    int32_t hr = kS_OK;
    if (flags & AEROGPU_CLEAR_COLOR) hr = clear_color_rects(rgba, clipped.data(), uint32_t(clipped.size()));
    if (hr == kS_OK && (flags & kClearDepthStencil) && ds_)
        hr = clear_rects(flags & kClearDepthStencil, rgba, z, stencil, clipped.data(), uint32_t(clipped.size()));
    return hr;
}

int32_t Device::depth_fill(uint32_t ds, uint32_t v, const Rect *rect) {
    const Resource *r = find(ds);
    if (!r || r->desc.kind != ResourceKind::Texture2D || !(r->desc.usage & AEROGPU_RESOURCE_USAGE_DEPTH_STENCIL))
        return kD3DERR_INVALIDCALL;
    if (rect) {
        if (rect->left < 0 || rect->top < 0 || rect->left > rect->right || rect->top > rect->bottom ||
            uint32_t(rect->right) > r->desc.width || uint32_t(rect->bottom) > r->desc.height)
            return kD3DERR_INVALIDCALL;
        if (rect->left == rect->right || rect->top == rect->bottom) return kS_OK;
        if (covers(*rect, r)) rect = nullptr; // the whole surface: CLEAR
        else if (!has_clear_rects()) return kD3DERR_NOTAVAILABLE;
    }
    uint32_t flags = AEROGPU_CLEAR_DEPTH, stencil = 0;
    float z;
    switch (r->desc.d3d_format) {
    case FMT_D16: z = float(v & 0xFFFFu) / 65535.0f; break;
    case FMT_D24S8:
        flags |= AEROGPU_CLEAR_STENCIL;
        stencil = v & 0xFFu;
        z = float(v >> 8) / 16777215.0f;
        break;
    case FMT_D24X8: z = float(v >> 8) / 16777215.0f; break;
    case FMT_D32F_LOCKABLE: std::memcpy(&z, &v, 4); break;
    default: return kD3DERR_NOTAVAILABLE;
    }
    // Bound alone: the color targets may differ in size from the depth surface.
    uint32_t saved_rts[AEROGPU_MAX_RENDER_TARGETS];
    std::memcpy(saved_rts, rts_, sizeof(rts_));
    const uint32_t saved_ds = ds_;
    std::memset(rts_, 0, sizeof(rts_));
    ds_ = ds;
    int32_t hr = emit_render_targets();
    if (hr == kS_OK) hr = rect ? clear_rects(flags, nullptr, z, stencil, rect, 1) : clear(flags, nullptr, z, stencil);
    std::memcpy(rts_, saved_rts, sizeof(rts_));
    ds_ = saved_ds;
    const int32_t hr2 = emit_render_targets();
    return hr != kS_OK ? hr : hr2;
}

int32_t Device::draw_indexed_primitive2(uint32_t prim, int32_t base_vertex_offset, uint32_t min_index,
                                        uint32_t num_vertices, uint32_t start_index_offset, uint32_t count,
                                        const void *indices, uint32_t index_size, const void *vertices,
                                        uint32_t stride) {
    if (!indices || (index_size != 2 && index_size != 4) || start_index_offset % index_size || !stride ||
        stride > 0xFFFFu || min_index > 0x7FFFFFFFu)
        return kD3DERR_INVALIDCALL;
    const uint8_t *idx = static_cast<const uint8_t *>(indices) + start_index_offset;
    if (vertices) {
        // Vertex `i` is at vertices + base_vertex_offset + i * stride: upload from vertex
        // min_index on, drawn with base vertex -min_index (any byte offset works here).
        const int64_t first = int64_t(base_vertex_offset) + int64_t(min_index) * stride;
        if (first < 0 || first > 0x7FFFFFFF) return kD3DERR_INVALIDCALL;
        const uint8_t *v = static_cast<const uint8_t *>(vertices) + first;
        return draw_indexed_up(prim, -int32_t(min_index), min_index, num_vertices, 0, count, idx, index_size == 4, v,
                               stride);
    }
    // A buffer on stream 0: the offset must be whole vertices (DRAW_INDEXED's base_vertex).
    if (base_vertex_offset % int32_t(stride)) return kD3DERR_INVALIDCALL;
    return draw_indexed_up(prim, base_vertex_offset / int32_t(stride), min_index, num_vertices, 0, count, idx,
                           index_size == 4, nullptr, stride);
}

} // namespace aerogpu
