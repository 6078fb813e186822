#include "agpu_escape.h"

void agpu_trace_createalloc(agpu_createalloc_trace *t,
                            const struct aerogpu_dbgctl_createallocation_desc *d)
{
    uint32_t slot = t->write_index % AEROGPU_DBGCTL_MAX_CREATEALLOCATION_ENTRIES;
    t->entries[slot] = *d;
    t->entries[slot].seq = t->write_index;
    t->write_index++;
}

static int in_regions(const agpu_escape_state *s, uint64_t gpa, uint32_t size)
{
    uint32_t i;
    uint64_t end = gpa + size;
    if (end < gpa) return 0;
    for (i = 0; i < s->region_count && i < AGPU_MAX_GPA_REGIONS; i++) {
        const agpu_gpa_region *r = &s->regions[i];
        uint64_t rend = r->gpa + r->size;
        if (rend >= r->gpa && gpa >= r->gpa && end <= rend) return 1;
    }
    return 0;
}

static void fill_hdr(struct aerogpu_escape_header *h, uint32_t op, uint32_t size)
{
    h->version = AEROGPU_ESCAPE_VERSION;
    h->op = op;
    h->size_bytes = size;
    h->reserved0 = 0;
}

#define NEED(type)                                                    \
    do {                                                              \
        if (size < sizeof(type)) return AGPU_ERR_BUFFER_TOO_SMALL;    \
    } while (0)

static agpu_status dump_ring(const agpu_escape_state *s, void *buf, uint32_t size, int v2)
{
    const agpu_ring *r = s->ring;
    uint32_t head = r ? agpu_ring_head(r) : 0, tail = r ? r->tail : 0, n = 0, i, first;
    /* Newest descriptors ending at tail - 1, consumed ones included (a tail window). */
    uint32_t window = r ? r->entry_count : 0;
    if (window > AEROGPU_DBGCTL_MAX_RING_DESCS) window = AEROGPU_DBGCTL_MAX_RING_DESCS;
    if (r && tail < window) window = tail; /* a ring started at 0 has no older slots */
    first = tail - window;
    if (v2) {
        struct aerogpu_escape_dump_ring_v2_inout *o = (struct aerogpu_escape_dump_ring_v2_inout *)buf;
        NEED(*o);
        agpu_zero(o, sizeof(*o));
        fill_hdr(&o->hdr, AEROGPU_ESCAPE_OP_DUMP_RING_V2, sizeof(*o));
        o->ring_format = r ? AEROGPU_DBGCTL_RING_FORMAT_AGPU : AEROGPU_DBGCTL_RING_FORMAT_UNKNOWN;
        o->ring_size_bytes = r ? r->size_bytes : 0;
        o->head = head;
        o->tail = tail;
        o->desc_capacity = AEROGPU_DBGCTL_MAX_RING_DESCS;
        for (i = 0; r && i < window; i++, n++) {
            struct aerogpu_submit_desc d;
            agpu_ring_peek(r, first + i, &d);
            o->desc[n].signal_fence = d.signal_fence;
            o->desc[n].cmd_gpa = d.cmd_gpa;
            o->desc[n].cmd_size_bytes = d.cmd_size_bytes;
            o->desc[n].flags = d.flags;
            o->desc[n].alloc_table_gpa = d.alloc_table_gpa;
            o->desc[n].alloc_table_size_bytes = d.alloc_table_size_bytes;
        }
        o->desc_count = n;
    } else {
        struct aerogpu_escape_dump_ring_inout *o = (struct aerogpu_escape_dump_ring_inout *)buf;
        NEED(*o);
        agpu_zero(o, sizeof(*o));
        fill_hdr(&o->hdr, AEROGPU_ESCAPE_OP_DUMP_RING, sizeof(*o));
        o->ring_size_bytes = r ? r->size_bytes : 0;
        o->head = head;
        o->tail = tail;
        o->desc_capacity = AEROGPU_DBGCTL_MAX_RING_DESCS;
        for (i = 0; r && i < window; i++, n++) {
            struct aerogpu_submit_desc d;
            agpu_ring_peek(r, first + i, &d);
            o->desc[n].signal_fence = d.signal_fence;
            o->desc[n].cmd_gpa = d.cmd_gpa;
            o->desc[n].cmd_size_bytes = d.cmd_size_bytes;
            o->desc[n].flags = d.flags;
        }
        o->desc_count = n;
    }
    return AGPU_OK;
}

agpu_status agpu_escape_handle(const agpu_escape_state *s, void *buf, uint32_t size)
{
    struct aerogpu_escape_header h;
    if (!s || !buf || size < sizeof(h)) return AGPU_ERR_INVALID_PARAMETER;
    agpu_copy(&h, buf, sizeof(h));
    if (h.version != AEROGPU_ESCAPE_VERSION) return AGPU_ERR_NOT_SUPPORTED;
    if (h.size_bytes > size) return AGPU_ERR_INVALID_PARAMETER;

    switch (h.op) {
    case AEROGPU_ESCAPE_OP_QUERY_DEVICE: {
        struct aerogpu_escape_query_device_out *o = (struct aerogpu_escape_query_device_out *)buf;
        NEED(*o);
        fill_hdr(&o->hdr, h.op, sizeof(*o));
        o->mmio_version = s->abi_version;
        o->reserved0 = 0;
        return AGPU_OK;
    }
    case AEROGPU_ESCAPE_OP_QUERY_DEVICE_V2: {
        struct aerogpu_escape_query_device_v2_out *o = (struct aerogpu_escape_query_device_v2_out *)buf;
        NEED(*o);
        agpu_zero(o, sizeof(*o));
        fill_hdr(&o->hdr, h.op, sizeof(*o));
        o->detected_mmio_magic = s->mmio_magic;
        o->abi_version_u32 = s->abi_version;
        o->features = s->features;
        return AGPU_OK;
    }
    case AEROGPU_ESCAPE_OP_QUERY_FENCE: {
        struct aerogpu_escape_query_fence_out *o = (struct aerogpu_escape_query_fence_out *)buf;
        NEED(*o);
        fill_hdr(&o->hdr, h.op, sizeof(*o));
        o->last_submitted_fence = s->last_submitted_fence;
        o->last_completed_fence = s->last_completed_fence;
        o->error_irq_count = s->error_irq_count;
        o->last_error_fence = s->last_error_fence;
        return AGPU_OK;
    }
    case AEROGPU_ESCAPE_OP_DUMP_RING:
        return dump_ring(s, buf, size, 0);
    case AEROGPU_ESCAPE_OP_DUMP_RING_V2:
        return dump_ring(s, buf, size, 1);
    case AEROGPU_ESCAPE_OP_QUERY_VBLANK: {
        struct aerogpu_escape_query_vblank_out *o = (struct aerogpu_escape_query_vblank_out *)buf;
        NEED(*o);
        if (!(s->features & AEROGPU_FEATURE_VBLANK)) return AGPU_ERR_NOT_SUPPORTED;
        agpu_zero(o, sizeof(*o));
        fill_hdr(&o->hdr, h.op, sizeof(*o));
        o->irq_enable = s->irq_enable;
        o->irq_status = s->irq_status;
        o->flags = AEROGPU_DBGCTL_QUERY_VBLANK_FLAG_VALID |
                   (s->vblank_interrupt_type_valid ? AEROGPU_DBGCTL_QUERY_VBLANK_FLAG_INTERRUPT_TYPE_VALID : 0);
        o->vblank_seq = s->vblank_seq;
        o->last_vblank_time_ns = s->vblank_time_ns;
        o->vblank_period_ns = s->vblank_period_ns;
        o->vblank_interrupt_type = s->vblank_interrupt_type;
        return AGPU_OK;
    }
    case AEROGPU_ESCAPE_OP_DUMP_CREATEALLOCATION: {
        struct aerogpu_escape_dump_createallocation_inout *o =
            (struct aerogpu_escape_dump_createallocation_inout *)buf;
        const agpu_createalloc_trace *t = s->createalloc;
        uint32_t count, i, first;
        NEED(*o);
        agpu_zero(o, sizeof(*o));
        fill_hdr(&o->hdr, h.op, sizeof(*o));
        o->entry_capacity = AEROGPU_DBGCTL_MAX_CREATEALLOCATION_ENTRIES;
        if (!t) return AGPU_OK;
        count = t->write_index < AEROGPU_DBGCTL_MAX_CREATEALLOCATION_ENTRIES
                    ? t->write_index : AEROGPU_DBGCTL_MAX_CREATEALLOCATION_ENTRIES;
        first = t->write_index - count;
        for (i = 0; i < count; i++)
            o->entries[i] = t->entries[(first + i) % AEROGPU_DBGCTL_MAX_CREATEALLOCATION_ENTRIES];
        o->write_index = t->write_index;
        o->entry_count = count;
        return AGPU_OK;
    }
    case AEROGPU_ESCAPE_OP_READ_GPA: {
        struct aerogpu_escape_read_gpa_inout *o = (struct aerogpu_escape_read_gpa_inout *)buf;
        uint64_t gpa;
        uint32_t want;
        NEED(*o);
        if (!s->read_gpa_enabled || !s->read_gpa) return AGPU_ERR_NOT_SUPPORTED;
        if (!s->caller_privileged) return AGPU_ERR_ACCESS_DENIED;
        gpa = o->gpa;
        want = o->size_bytes;
        if (want > AEROGPU_DBGCTL_READ_GPA_MAX_BYTES) return AGPU_ERR_INVALID_PARAMETER;
        fill_hdr(&o->hdr, h.op, sizeof(*o));
        o->bytes_copied = 0;
        if (!in_regions(s, gpa, want)) {
            o->status = (int32_t)0xC0000022; /* STATUS_ACCESS_DENIED */
            return AGPU_ERR_ACCESS_DENIED;
        }
        if (want && !s->read_gpa(s->read_gpa_ctx, gpa, o->data, want)) {
            o->status = (int32_t)0xC0000001; /* STATUS_UNSUCCESSFUL */
            return AGPU_OK;
        }
        o->status = 0;
        o->bytes_copied = want;
        return AGPU_OK;
    }
    case AEROGPU_ESCAPE_OP_MAP_SHARED_HANDLE: {
        struct aerogpu_escape_map_shared_handle_inout *o =
            (struct aerogpu_escape_map_shared_handle_inout *)buf;
        uint32_t token = 0;
        NEED(*o);
        if (!s->map_shared_handle_enabled || !s->map_shared_handle) return AGPU_ERR_NOT_SUPPORTED;
        if (!s->caller_privileged) return AGPU_ERR_ACCESS_DENIED;
        if (!s->map_shared_handle(s->map_ctx, o->shared_handle, &token))
            return AGPU_ERR_INVALID_PARAMETER;
        fill_hdr(&o->hdr, h.op, sizeof(*o));
        o->debug_token = token;
        o->reserved0 = 0;
        return AGPU_OK;
    }
    case AEROGPU_ESCAPE_OP_SELFTEST:
        /* Needs the live device (a ring round trip): the Windows glue runs it (selftest()
         * in aerogpu_kmd.c) before calling here. */
        return AGPU_ERR_DEVICE_NOT_READY;
    default:
        return AGPU_ERR_NOT_SUPPORTED;
    }
}
