/* Runtime presents as AeroGPU command streams (see agpu_present.h). */
#include "agpu_present.h"

/* Pieces of a stream, in bytes. */
#define HEADER_BYTES ((uint32_t)sizeof(struct aerogpu_cmd_stream_header))
#define CREATE_BYTES ((uint32_t)sizeof(struct aerogpu_cmd_create_texture2d))
#define DESTROY_BYTES ((uint32_t)sizeof(struct aerogpu_cmd_destroy_resource))
#define COPY_BYTES ((uint32_t)sizeof(struct aerogpu_cmd_copy_texture2d))
#define SET_RT_BYTES ((uint32_t)sizeof(struct aerogpu_cmd_set_render_targets))
#define CLEAR_BYTES ((uint32_t)sizeof(struct aerogpu_cmd_clear))

/* Every KMD texture is B8G8R8A8: a copy moves the four bytes of a pixel unchanged whatever
 * the allocation calls its fourth byte (X8R8G8B8 primaries ignore it). */
#define PRESENT_FORMAT AEROGPU_FORMAT_B8G8R8A8_UNORM

uint32_t agpu_present_slots_take(agpu_present_slots *s)
{
    uint32_t i;
    if (s->lost_count >= AGPU_PRESENT_SLOTS) return 0;
    for (i = 0; i < AGPU_PRESENT_SLOTS; i++) {
        uint32_t slot = s->next % AGPU_PRESENT_SLOTS;
        s->next = slot + 1;
        if (!(s->lost[slot / 8] & (1u << (slot % 8))))
            return AGPU_KMD_HANDLE_FIRST + slot * AGPU_PRESENT_HANDLES;
    }
    return 0;
}

void agpu_present_slots_lose(agpu_present_slots *s, uint32_t handle_base)
{
    uint32_t slot;
    if (handle_base < AGPU_KMD_HANDLE_FIRST) return;
    slot = (handle_base - AGPU_KMD_HANDLE_FIRST) / AGPU_PRESENT_HANDLES;
    if (slot >= AGPU_PRESENT_SLOTS || (s->lost[slot / 8] & (1u << (slot % 8)))) return;
    s->lost[slot / 8] |= (uint8_t)(1u << (slot % 8));
    s->lost_count++;
}

uint32_t agpu_unorm8_to_f32_bits(uint32_t v)
{
    uint32_t num = v, mant, rem;
    int32_t shift = 0;
    if (v == 0) return 0;
    if (v >= 255) return 0x3F800000u; /* 1.0f */
    /* v/255 = (num/255) * 2^-shift with num/255 in [1, 2). */
    while (num < 255) { num <<= 1; shift++; }
    /* 24 significant bits: num * 2^23 / 255 in [2^23, 2^24), rounded to nearest (255 is
     * odd, so there are no ties). num < 510, so num << 23 fits in 32 bits. */
    mant = (num << 23) / 255u;
    rem = (num << 23) % 255u;
    if (rem * 2u > 255u) mant++;
    if (mant == (1u << 24)) { mant >>= 1; shift--; }
    return ((uint32_t)(127 - shift) << 23) | (mant & 0x7FFFFFu);
}

uint32_t agpu_present_rect_count(const agpu_present_req *r)
{
    if (r->op == AGPU_PRESENT_FLIP) return 0;
    return r->sub_rect_count ? r->sub_rect_count : 1u;
}

static int rect_well_formed(const agpu_rect *r)
{
    return r->left <= r->right && r->top <= r->bottom;
}

static int rect_inside(const agpu_rect *r, const agpu_surface *s)
{
    return rect_well_formed(r) && r->left >= 0 && r->top >= 0 && (uint32_t)r->right <= s->width &&
           (uint32_t)r->bottom <= s->height;
}

/* A surface the KMD can put a texture over. */
static agpu_status check_surface(const agpu_surface *s)
{
    if (!s->alloc_id) return AGPU_ERR_INVALID_PARAMETER;
    if (!s->width || !s->height || s->width > AEROGPU_MAX_TEXTURE_DIM || s->height > AEROGPU_MAX_TEXTURE_DIM ||
        s->pitch / 4u < s->width || (uint64_t)s->pitch * s->height > s->size_bytes)
        return AGPU_ERR_NOT_SUPPORTED;
    return AGPU_OK;
}

agpu_status agpu_present_check(const agpu_present_req *r)
{
    agpu_status st;
    uint32_t i;
    if (!r) return AGPU_ERR_INVALID_PARAMETER;
    if (r->op == AGPU_PRESENT_FLIP) return r->src.alloc_id ? AGPU_OK : AGPU_ERR_INVALID_PARAMETER;
    if (r->op != AGPU_PRESENT_BLT && r->op != AGPU_PRESENT_COLORFILL) return AGPU_ERR_NOT_SUPPORTED;
    if (r->sub_rect_count > AGPU_PRESENT_MAX_SUBRECTS || (r->sub_rect_count && !r->sub_rects))
        return AGPU_ERR_INVALID_PARAMETER;
    if (r->handle_base < AGPU_KMD_HANDLE_FIRST ||
        r->handle_base > AGPU_KMD_HANDLE_LIMIT - AGPU_PRESENT_HANDLES)
        return AGPU_ERR_INVALID_PARAMETER;
    if (r->op == AGPU_PRESENT_BLT) {
        if (!r->src.alloc_id) return AGPU_ERR_INVALID_PARAMETER;
        if ((st = check_surface(&r->src)) != AGPU_OK) return st;
    }
    if (!r->dst.alloc_id) return AGPU_ERR_INVALID_PARAMETER;
    if ((st = check_surface(&r->dst)) != AGPU_OK) return st;
    if (!rect_inside(&r->dst_rect, &r->dst)) return AGPU_ERR_INVALID_PARAMETER;
    if (r->op == AGPU_PRESENT_BLT) {
        if (!rect_inside(&r->src_rect, &r->src)) return AGPU_ERR_INVALID_PARAMETER;
        /* Both rectangles are inside surfaces of at most 16384 pixels: no overflow. */
        if (r->src_rect.right - r->src_rect.left != r->dst_rect.right - r->dst_rect.left ||
            r->src_rect.bottom - r->src_rect.top != r->dst_rect.bottom - r->dst_rect.top)
            return AGPU_ERR_NOT_SUPPORTED; /* stretching: COPY_TEXTURE2D cannot scale */
    }
    for (i = 0; i < r->sub_rect_count; i++)
        if (!rect_well_formed(&r->sub_rects[i])) return AGPU_ERR_INVALID_PARAMETER;
    return AGPU_OK;
}

/* Rectangle i clipped to dst_rect; 0 when empty. */
static int clipped_rect(const agpu_present_req *r, uint32_t i, agpu_rect *out)
{
    agpu_rect c = r->sub_rect_count ? r->sub_rects[i] : r->dst_rect;
    if (c.left < r->dst_rect.left) c.left = r->dst_rect.left;
    if (c.top < r->dst_rect.top) c.top = r->dst_rect.top;
    if (c.right > r->dst_rect.right) c.right = r->dst_rect.right;
    if (c.bottom > r->dst_rect.bottom) c.bottom = r->dst_rect.bottom;
    if (c.left >= c.right || c.top >= c.bottom) return 0;
    *out = c;
    return 1;
}

typedef struct stream_out {
    uint8_t *base;
    uint32_t used;
} stream_out;

static void put(stream_out *s, const void *packet, uint32_t bytes)
{
    agpu_copy(s->base + s->used, packet, bytes);
    s->used += bytes;
}

/* A texture over a whole allocation (host-allocated when s is NULL: width x height). */
static void put_create(stream_out *o, uint32_t handle, const agpu_surface *s, uint32_t width, uint32_t height)
{
    struct aerogpu_cmd_create_texture2d c;
    agpu_zero(&c, sizeof(c));
    c.hdr.opcode = AEROGPU_CMD_CREATE_TEXTURE2D;
    c.hdr.size_bytes = CREATE_BYTES;
    c.texture_handle = handle;
    c.usage_flags = AEROGPU_RESOURCE_USAGE_TEXTURE | AEROGPU_RESOURCE_USAGE_RENDER_TARGET;
    c.format = PRESENT_FORMAT;
    c.width = s ? s->width : width;
    c.height = s ? s->height : height;
    c.mip_levels = 1;
    c.array_layers = 1;
    c.row_pitch_bytes = s ? s->pitch : 0;
    c.backing_alloc_id = s ? s->alloc_id : 0;
    put(o, &c, CREATE_BYTES);
}

static void put_destroy(stream_out *o, uint32_t handle)
{
    struct aerogpu_cmd_destroy_resource d;
    agpu_zero(&d, sizeof(d));
    d.hdr.opcode = AEROGPU_CMD_DESTROY_RESOURCE;
    d.hdr.size_bytes = DESTROY_BYTES;
    d.resource_handle = handle;
    put(o, &d, DESTROY_BYTES);
}

static void put_copy(stream_out *o, uint32_t dst, uint32_t src, uint32_t dst_x, uint32_t dst_y, uint32_t src_x,
                     uint32_t src_y, uint32_t w, uint32_t h)
{
    struct aerogpu_cmd_copy_texture2d c;
    agpu_zero(&c, sizeof(c));
    c.hdr.opcode = AEROGPU_CMD_COPY_TEXTURE2D;
    c.hdr.size_bytes = COPY_BYTES;
    c.dst_texture = dst;
    c.src_texture = src;
    c.dst_x = dst_x;
    c.dst_y = dst_y;
    c.src_x = src_x;
    c.src_y = src_y;
    c.width = w;
    c.height = h;
    c.flags = AEROGPU_COPY_FLAG_WRITEBACK_DST;
    put(o, &c, COPY_BYTES);
}

/* The fill texture as the only render target, cleared to the D3DCOLOR. */
static void put_fill(stream_out *o, uint32_t fill, uint32_t color)
{
    struct aerogpu_cmd_set_render_targets rt;
    struct aerogpu_cmd_clear c;
    agpu_zero(&rt, sizeof(rt));
    rt.hdr.opcode = AEROGPU_CMD_SET_RENDER_TARGETS;
    rt.hdr.size_bytes = SET_RT_BYTES;
    rt.color_count = 1;
    rt.colors[0] = fill;
    put(o, &rt, SET_RT_BYTES);
    agpu_zero(&c, sizeof(c));
    c.hdr.opcode = AEROGPU_CMD_CLEAR;
    c.hdr.size_bytes = CLEAR_BYTES;
    c.flags = AEROGPU_CLEAR_COLOR;
    c.color_rgba_f32[0] = agpu_unorm8_to_f32_bits((color >> 16) & 0xFFu);
    c.color_rgba_f32[1] = agpu_unorm8_to_f32_bits((color >> 8) & 0xFFu);
    c.color_rgba_f32[2] = agpu_unorm8_to_f32_bits(color & 0xFFu);
    c.color_rgba_f32[3] = agpu_unorm8_to_f32_bits(color >> 24);
    put(o, &c, CLEAR_BYTES);
}

agpu_status agpu_present_build(const agpu_present_req *r, uint32_t first, void *out, uint32_t out_size,
                               uint32_t *out_bytes, uint32_t *next)
{
    struct aerogpu_cmd_stream_header h;
    uint32_t total, src_h, dst_h, fill_h, fixed, i, end, copies = 0, max_w = 0, max_h = 0;
    int fill;
    agpu_rect c;
    stream_out o;
    if (!r || !out || !out_bytes || !next) return AGPU_ERR_INVALID_PARAMETER;
    total = agpu_present_rect_count(r);
    if (first > total) return AGPU_ERR_INVALID_PARAMETER;
    src_h = r->handle_base;
    dst_h = r->handle_base + 1;
    fill_h = r->handle_base + 2;
    /* ColorFill: a host texture cleared to the colour is the copy source (COPY_TEXTURE2D
     * with WRITEBACK_DST is the device's way to put results into guest memory). */
    fill = r->op == AGPU_PRESENT_COLORFILL;
    fixed = 2 * CREATE_BYTES + 2 * DESTROY_BYTES + (fill ? SET_RT_BYTES + CLEAR_BYTES : 0);
    if (out_size < HEADER_BYTES) return AGPU_ERR_BUFFER_TOO_SMALL;
    /* How far this stream gets: every non-empty rectangle costs one copy. */
    for (end = first; end < total; end++) {
        if (!clipped_rect(r, end, &c)) continue;
        if (out_size - HEADER_BYTES < fixed || (out_size - HEADER_BYTES - fixed) / COPY_BYTES <= copies) break;
        copies++;
        if ((uint32_t)(c.right - c.left) > max_w) max_w = (uint32_t)(c.right - c.left);
        if ((uint32_t)(c.bottom - c.top) > max_h) max_h = (uint32_t)(c.bottom - c.top);
    }
    if (!copies && end < total) return AGPU_ERR_BUFFER_TOO_SMALL;
    o.base = (uint8_t *)out;
    o.used = HEADER_BYTES;
    if (copies) {
        put_create(&o, dst_h, &r->dst, 0, 0);
        if (fill) {
            put_create(&o, fill_h, NULL, max_w, max_h);
            put_fill(&o, fill_h, r->color);
        } else {
            put_create(&o, src_h, &r->src, 0, 0);
        }
        for (i = first; i < end; i++) {
            uint32_t sx, sy;
            if (!clipped_rect(r, i, &c)) continue;
            /* Source position: the same offset from SrcRect as from DstRect (1:1). */
            sx = fill ? 0 : (uint32_t)(c.left - r->dst_rect.left + r->src_rect.left);
            sy = fill ? 0 : (uint32_t)(c.top - r->dst_rect.top + r->src_rect.top);
            put_copy(&o, dst_h, fill ? fill_h : src_h, (uint32_t)c.left, (uint32_t)c.top, sx, sy,
                     (uint32_t)(c.right - c.left), (uint32_t)(c.bottom - c.top));
        }
        put_destroy(&o, fill ? fill_h : src_h);
        put_destroy(&o, dst_h);
    }
    agpu_zero(&h, sizeof(h));
    h.magic = AEROGPU_CMD_STREAM_MAGIC;
    h.abi_version = AEROGPU_ABI_VERSION_U32;
    h.size_bytes = o.used;
    agpu_copy(o.base, &h, sizeof(h));
    *out_bytes = o.used;
    *next = end;
    return AGPU_OK;
}
