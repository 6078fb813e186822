#include "agpu_submit.h"

uint32_t agpu_alloc_table_bytes(uint32_t entries)
{
    return (uint32_t)sizeof(struct aerogpu_alloc_table_header) +
           entries * (uint32_t)sizeof(struct aerogpu_alloc_entry);
}

static uint8_t *entry_ptr(void *out, uint32_t i)
{
    return (uint8_t *)out + sizeof(struct aerogpu_alloc_table_header) +
           (size_t)i * sizeof(struct aerogpu_alloc_entry);
}

agpu_status agpu_alloc_table_build(const agpu_alloc_ref *refs, uint32_t count, void *out,
                                   uint32_t out_size, uint32_t *out_bytes,
                                   uint32_t *out_entries, uint32_t *conflict_alloc_id)
{
    struct aerogpu_alloc_table_header h;
    uint32_t n = 0, i, j;
    if (conflict_alloc_id) *conflict_alloc_id = 0;
    if (!out || !out_bytes || !out_entries || (count && !refs)) return AGPU_ERR_INVALID_PARAMETER;
    if (count > AEROGPU_ALLOC_TABLE_MAX_ENTRIES) return AGPU_ERR_TOO_LARGE;
    if (out_size < agpu_alloc_table_bytes(0)) return AGPU_ERR_BUFFER_TOO_SMALL;

    for (i = 0; i < count; i++) {
        const agpu_alloc_ref *r = &refs[i];
        int readonly = r->write_known && !r->write_operation;
        struct aerogpu_alloc_entry e;
        if (r->alloc_id == 0) continue;
        /* Merge with an earlier listing of the same alloc_id. Lists are short (the
         * runtime caps them), so the quadratic scan is fine. */
        for (j = 0; j < n; j++) {
            agpu_copy(&e, entry_ptr(out, j), sizeof(e));
            if (e.alloc_id != r->alloc_id) continue;
            if (e.gpa != r->gpa) {
                if (conflict_alloc_id) *conflict_alloc_id = r->alloc_id;
                return AGPU_ERR_CONFLICT;
            }
            if (r->size_bytes > e.size_bytes) e.size_bytes = r->size_bytes;
            if (!readonly) e.flags &= ~AEROGPU_ALLOC_FLAG_READONLY;
            agpu_copy(entry_ptr(out, j), &e, sizeof(e));
            break;
        }
        if (j < n) continue;
        if (agpu_alloc_table_bytes(n + 1) > out_size) return AGPU_ERR_BUFFER_TOO_SMALL;
        agpu_zero(&e, sizeof(e));
        e.alloc_id = r->alloc_id;
        e.flags = readonly ? AEROGPU_ALLOC_FLAG_READONLY : 0;
        e.gpa = r->gpa;
        e.size_bytes = r->size_bytes;
        agpu_copy(entry_ptr(out, n), &e, sizeof(e));
        n++;
    }
    agpu_zero(&h, sizeof(h));
    h.magic = AEROGPU_ALLOC_TABLE_MAGIC;
    h.abi_version = AEROGPU_ABI_VERSION_U32;
    h.size_bytes = agpu_alloc_table_bytes(n);
    h.entry_count = n;
    h.entry_stride_bytes = (uint32_t)sizeof(struct aerogpu_alloc_entry);
    agpu_copy(out, &h, sizeof(h));
    *out_bytes = h.size_bytes;
    *out_entries = n;
    return AGPU_OK;
}

void agpu_submit_desc_fill(struct aerogpu_submit_desc *desc, uint64_t cmd_gpa,
                           uint32_t cmd_bytes, uint64_t table_gpa, uint32_t table_bytes,
                           uint64_t fence, int is_present)
{
    agpu_zero(desc, sizeof(*desc));
    desc->desc_size_bytes = (uint32_t)sizeof(*desc);
    desc->flags = is_present ? AEROGPU_SUBMIT_FLAG_PRESENT : 0;
    desc->cmd_gpa = cmd_bytes ? cmd_gpa : 0;
    desc->cmd_size_bytes = cmd_bytes;
    desc->alloc_table_gpa = table_bytes ? table_gpa : 0;
    desc->alloc_table_size_bytes = table_bytes;
    desc->signal_fence = fence;
}

uint64_t agpu_fence_widen(uint64_t last, uint32_t fence32)
{
    uint64_t candidate = (last & ~(uint64_t)0xFFFFFFFFu) | fence32;
    uint32_t last32 = (uint32_t)last;
    if (fence32 >= last32) {
        /* Forward in this epoch, unless it is really an old value from before a wrap. */
        if (fence32 - last32 > 0x80000000u && candidate >= 0x100000000ull)
            return candidate - 0x100000000ull;
        return candidate;
    }
    /* fence32 < last32: a small step back stays in this epoch, a large one wrapped. */
    if (last32 - fence32 < 0x80000000u) return candidate;
    return candidate + 0x100000000ull;
}

agpu_status agpu_cmd_stream_check(const void *dma, uint32_t dma_bytes, uint32_t max_bytes,
                                  uint32_t *effective)
{
    struct aerogpu_cmd_stream_header h;
    uint32_t size;
    if (!dma || !effective) return AGPU_ERR_INVALID_PARAMETER;
    if (dma_bytes < sizeof(h)) return AGPU_ERR_INVALID_PARAMETER;
    agpu_copy(&h, dma, sizeof(h));
    if (h.magic != AEROGPU_CMD_STREAM_MAGIC) return AGPU_ERR_INVALID_PARAMETER;
    if ((h.abi_version >> 16) != AEROGPU_ABI_MAJOR) return AGPU_ERR_ABI_MISMATCH;
    if (h.size_bytes < sizeof(h) || h.size_bytes > dma_bytes) return AGPU_ERR_INVALID_PARAMETER;
    /* Copy only what the stream says it uses: runtimes hand out large DMA buffers. */
    size = h.size_bytes;
    if (size > max_bytes) return AGPU_ERR_TOO_LARGE;
    *effective = size;
    return AGPU_OK;
}

uint32_t agpu_submit_stage_bytes(uint32_t cmd_bytes, uint32_t ref_count)
{
    uint64_t n = (((uint64_t)cmd_bytes + 7u) & ~7ull) + agpu_alloc_table_bytes(0) +
                 (uint64_t)ref_count * sizeof(struct aerogpu_alloc_entry);
    return n > 0xFFFFFFFFull ? 0xFFFFFFFFu : (uint32_t)n;
}

agpu_status agpu_submit_stage(const void *dma, uint32_t dma_bytes, uint32_t max_dma_bytes,
                              const agpu_alloc_ref *refs, uint32_t ref_count,
                              const agpu_staging *stage, uint64_t fence, int is_present,
                              struct aerogpu_submit_desc *desc, uint32_t *conflict_alloc_id)
{
    uint32_t eff = 0, table_off, table_bytes = 0, entries = 0;
    agpu_status st;
    if (!stage || !stage->va || !desc) return AGPU_ERR_INVALID_PARAMETER;
    st = agpu_cmd_stream_check(dma, dma_bytes, max_dma_bytes, &eff);
    if (st != AGPU_OK) return st;
    if (ref_count > AEROGPU_ALLOC_TABLE_MAX_ENTRIES) return AGPU_ERR_TOO_LARGE;
    if (agpu_submit_stage_bytes(eff, ref_count) > stage->size_bytes) return AGPU_ERR_BUFFER_TOO_SMALL;
    agpu_copy(stage->va, dma, eff);
    table_off = (eff + 7u) & ~7u;
    agpu_zero(stage->va + eff, table_off - eff);
    st = agpu_alloc_table_build(refs, ref_count, stage->va + table_off,
                                stage->size_bytes - table_off, &table_bytes, &entries,
                                conflict_alloc_id);
    if (st != AGPU_OK) return st;
    /* An empty table is omitted: the device then needs no alloc_id resolution. */
    agpu_submit_desc_fill(desc, stage->gpa, eff, stage->gpa + table_off,
                          entries ? table_bytes : 0, fence, is_present);
    return AGPU_OK;
}
