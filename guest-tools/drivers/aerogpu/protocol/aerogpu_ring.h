/* AeroGPU submission ring, submit descriptors, per-submit allocation table, fence page.
 *
 * Ring memory (guest RAM, physically contiguous, programmed via RING_GPA/RING_SIZE_BYTES):
 *
 *   [aerogpu_ring_header][entry 0][entry 1]...[entry entry_count-1]
 *
 * head and tail are free-running uint32 counters (they wrap at 2^32); the slot of counter
 * value n is (n % entry_count), at byte offset
 * sizeof(aerogpu_ring_header) + slot * entry_stride_bytes. The driver writes descriptors
 * at tail, bumps tail, then writes DOORBELL. The device consumes descriptors from head to
 * tail, in order, and writes head back after each one. tail - head > entry_count is a
 * ring error (AEROGPU_ERROR_RING); the device then stops consuming until the next
 * doorbell.
 *
 * The device keeps its own copy of head: it loads it from the header when
 * RING_CONTROL.ENABLE goes from 0 to 1, and RING_CONTROL.RESET sets it to the header's
 * tail. A driver that rewrites head/tail must therefore reset or re-enable the ring.
 */
#ifndef AEROGPU_RING_H
#define AEROGPU_RING_H

#include "aerogpu_abi_common.h"

#define AEROGPU_RING_MAGIC 0x474E5241u /* "ARNG" */
#define AEROGPU_RING_MAX_ENTRIES 4096u

struct aerogpu_ring_header {
    uint32_t magic;              /* AEROGPU_RING_MAGIC */
    uint32_t abi_version;        /* AEROGPU_ABI_VERSION_U32 (major must match) */
    uint32_t size_bytes;         /* bytes of ring memory, <= RING_SIZE_BYTES register */
    uint32_t entry_count;        /* power of two, 1..AEROGPU_RING_MAX_ENTRIES */
    uint32_t entry_stride_bytes; /* >= sizeof(aerogpu_submit_desc), multiple of 8 */
    uint32_t flags;              /* reserved, 0 */
    uint32_t head;               /* written by the device */
    uint32_t tail;               /* written by the driver */
    uint32_t reserved0[8];
};
AEROGPU_ASSERT_SIZE(struct aerogpu_ring_header, 64);
AEROGPU_ASSERT_OFFSET(struct aerogpu_ring_header, head, 24);
AEROGPU_ASSERT_OFFSET(struct aerogpu_ring_header, tail, 28);

/* aerogpu_submit_desc.flags */
#define AEROGPU_SUBMIT_FLAG_PRESENT (1u << 0) /* the submission presents (for accounting) */
#define AEROGPU_SUBMIT_FLAG_NO_IRQ (1u << 1)  /* complete the fence without AEROGPU_IRQ_FENCE */

struct aerogpu_submit_desc {
    uint32_t desc_size_bytes; /* sizeof(struct aerogpu_submit_desc) or larger (minor ext) */
    uint32_t flags;           /* AEROGPU_SUBMIT_FLAG_* */
    uint32_t context_id;      /* whose pipeline state (bindings) applies; handles are global */
    uint32_t engine_id;       /* 0 */
    uint64_t cmd_gpa;         /* command stream (aerogpu_cmd.h); 0 with cmd_size 0 = empty */
    uint32_t cmd_size_bytes;
    uint32_t reserved0;
    uint64_t alloc_table_gpa; /* optional aerogpu_alloc_table_header, 0 = none */
    uint32_t alloc_table_size_bytes;
    uint32_t reserved1;
    uint64_t signal_fence;    /* completed (monotonically) once this submission is done */
    uint64_t reserved2;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_submit_desc, 64);
AEROGPU_ASSERT_OFFSET(struct aerogpu_submit_desc, cmd_gpa, 16);
AEROGPU_ASSERT_OFFSET(struct aerogpu_submit_desc, cmd_size_bytes, 24);
AEROGPU_ASSERT_OFFSET(struct aerogpu_submit_desc, alloc_table_gpa, 32);
AEROGPU_ASSERT_OFFSET(struct aerogpu_submit_desc, alloc_table_size_bytes, 40);
AEROGPU_ASSERT_OFFSET(struct aerogpu_submit_desc, signal_fence, 48);

/* ---- Per-submit allocation table -------------------------------------------------
 * Maps the stable alloc_id of each WDDM allocation referenced by one submission to its
 * guest physical backing. Resolution is by alloc_id only: the order of entries is not
 * stable between submissions. alloc_id 0 is invalid; an alloc_id appearing twice in one
 * table is an error. */
#define AEROGPU_ALLOC_TABLE_MAGIC 0x434F4C41u /* "ALOC" */
#define AEROGPU_ALLOC_TABLE_MAX_ENTRIES 65536u

#define AEROGPU_ALLOC_FLAG_READONLY (1u << 0) /* not written by this submission: no writeback */

struct aerogpu_alloc_table_header {
    uint32_t magic;              /* AEROGPU_ALLOC_TABLE_MAGIC */
    uint32_t abi_version;        /* AEROGPU_ABI_VERSION_U32 */
    uint32_t size_bytes;         /* header + entries, <= alloc_table_size_bytes */
    uint32_t entry_count;
    uint32_t entry_stride_bytes; /* >= sizeof(aerogpu_alloc_entry), multiple of 8 */
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_alloc_table_header, 24);

struct aerogpu_alloc_entry {
    uint32_t alloc_id;   /* nonzero, stable for the allocation's lifetime */
    uint32_t flags;      /* AEROGPU_ALLOC_FLAG_* */
    uint64_t gpa;        /* physically contiguous backing */
    uint64_t size_bytes;
    uint64_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_alloc_entry, 32);
AEROGPU_ASSERT_OFFSET(struct aerogpu_alloc_entry, gpa, 8);
AEROGPU_ASSERT_OFFSET(struct aerogpu_alloc_entry, size_bytes, 16);

/* ---- Optional fence page (AEROGPU_FEATURE_FENCE_PAGE) -----------------------------
 * When FENCE_GPA is nonzero the device writes this struct there every time the completed
 * fence advances, so the driver can poll memory instead of MMIO. */
#define AEROGPU_FENCE_PAGE_MAGIC 0x434E4546u /* "FENC" */

struct aerogpu_fence_page {
    uint32_t magic;       /* AEROGPU_FENCE_PAGE_MAGIC */
    uint32_t abi_version; /* AEROGPU_ABI_VERSION_U32 */
    uint64_t completed_fence;
    uint64_t reserved0[6];
};
AEROGPU_ASSERT_SIZE(struct aerogpu_fence_page, 64);
AEROGPU_ASSERT_OFFSET(struct aerogpu_fence_page, completed_fence, 8);

#endif /* AEROGPU_RING_H */
