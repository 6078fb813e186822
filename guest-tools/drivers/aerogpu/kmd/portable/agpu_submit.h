/* Per-submission work that does not depend on Windows: the allocation table built from
 * the WDDM allocation list, the submit descriptor, fence widening, DMA size caps. */
#ifndef AGPU_SUBMIT_H
#define AGPU_SUBMIT_H

#include "agpu_portable.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One DXGK_ALLOCATIONLIST entry, reduced to what the table needs. */
typedef struct agpu_alloc_ref {
    uint32_t alloc_id;       /* from the allocation's private data; 0 = not ours, skipped */
    uint64_t gpa;            /* segment address of the allocation */
    uint64_t size_bytes;
    int write_known;         /* 0 when the runtime gave no reliable write intent */
    int write_operation;     /* DXGK_ALLOCATIONLIST::WriteOperation */
} agpu_alloc_ref;

/* Bytes of an allocation table with `entries` entries. */
uint32_t agpu_alloc_table_bytes(uint32_t entries);

/* Builds an aerogpu_alloc_table into out[0..out_size) from `count` list entries.
 * - READONLY is set when the submission does not write the allocation (unknown write
 *   intent counts as written: fail open for compatibility).
 * - The same alloc_id listed twice with the same GPA is merged (max size, READONLY only if
 *   every listing is read-only); with a different GPA the submission is rejected
 *   (AGPU_ERR_CONFLICT, *conflict_alloc_id set) to avoid silent corruption.
 * *out_bytes receives the table size; *out_entries the number of entries. */
agpu_status agpu_alloc_table_build(const agpu_alloc_ref *refs, uint32_t count, void *out,
                                   uint32_t out_size, uint32_t *out_bytes,
                                   uint32_t *out_entries, uint32_t *conflict_alloc_id);

/* Fills a submit descriptor. table_gpa/table_bytes may be 0 (no table). */
void agpu_submit_desc_fill(struct aerogpu_submit_desc *desc, uint64_t cmd_gpa,
                           uint32_t cmd_bytes, uint64_t table_gpa, uint32_t table_bytes,
                           uint64_t fence, int is_present);

/* Widens a 32-bit fence id (Win7 DXGK submission fences are 32-bit) to the driver's
 * monotonic 64-bit fence space, given the last widened value. Values within 2^31 behind
 * `last` stay in the current epoch; anything else is taken as a wrap forward. */
uint64_t agpu_fence_widen(uint64_t last, uint32_t fence32);

/* Cmd stream checks before copying a DMA buffer: the effective size must be at least a
 * stream header, no larger than the cap, and the stream header's own size must fit. The
 * effective size (header size_bytes if smaller than the DMA size) goes to *effective. */
agpu_status agpu_cmd_stream_check(const void *dma, uint32_t dma_bytes, uint32_t max_bytes,
                                  uint32_t *effective);

/* Physically contiguous staging memory for one submission (the device reads it by GPA
 * while the runtime reuses the DMA buffer). */
typedef struct agpu_staging {
    uint8_t *va;
    uint64_t gpa;
    uint32_t size_bytes;
} agpu_staging;

/* Staging bytes needed for `cmd_bytes` of stream and `ref_count` list entries. */
uint32_t agpu_submit_stage_bytes(uint32_t cmd_bytes, uint32_t ref_count);

/* The whole DxgkDdiSubmitCommand data path minus the ring push: validates the stream in
 * the DMA buffer (size cap max_dma_bytes), copies it to staging offset 0, builds the
 * allocation table after it (8-aligned) and fills the descriptor. */
agpu_status agpu_submit_stage(const void *dma, uint32_t dma_bytes, uint32_t max_dma_bytes,
                              const agpu_alloc_ref *refs, uint32_t ref_count,
                              const agpu_staging *stage, uint64_t fence, int is_present,
                              struct aerogpu_submit_desc *desc, uint32_t *conflict_alloc_id);

#ifdef __cplusplus
}
#endif

#endif /* AGPU_SUBMIT_H */
