/* DxgkDdiEscape parsing and answering for the dbgctl ops (aerogpu_escape.h,
 * aerogpu_dbgctl_escape.h). The glue fills an agpu_escape_state snapshot (cached values
 * when the adapter is not in D0) and supplies a bounded GPA reader. */
#ifndef AGPU_ESCAPE_H
#define AGPU_ESCAPE_H

#include "agpu_portable.h"
#include "agpu_ring.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AGPU_MAX_GPA_REGIONS 8u

typedef struct agpu_gpa_region {
    uint64_t gpa, size;
} agpu_gpa_region;

/* CreateAllocation trace ring (DUMP_CREATEALLOCATION). */
typedef struct agpu_createalloc_trace {
    struct aerogpu_dbgctl_createallocation_desc entries[AEROGPU_DBGCTL_MAX_CREATEALLOCATION_ENTRIES];
    uint32_t write_index; /* total records written (free-running) */
} agpu_createalloc_trace;

void agpu_trace_createalloc(agpu_createalloc_trace *t,
                            const struct aerogpu_dbgctl_createallocation_desc *d);

typedef struct agpu_escape_state {
    uint32_t mmio_magic, abi_version;
    uint64_t features;
    uint64_t last_submitted_fence, last_completed_fence;
    uint64_t error_irq_count, last_error_fence;
    const agpu_ring *ring; /* NULL if not set up */
    uint32_t irq_enable, irq_status;
    uint64_t vblank_seq, vblank_time_ns;
    uint32_t vblank_period_ns;
    int vblank_interrupt_type_valid;
    uint32_t vblank_interrupt_type;
    const agpu_createalloc_trace *createalloc;
    /* Privileged ops: enabled by registry and the caller must be privileged. */
    int read_gpa_enabled, map_shared_handle_enabled, caller_privileged;
    agpu_gpa_region regions[AGPU_MAX_GPA_REGIONS]; /* what READ_GPA may touch */
    uint32_t region_count;
    /* Bounded physical read (driver: MmMapIoSpace/copy; tests: a buffer). */
    int (*read_gpa)(void *ctx, uint64_t gpa, void *dst, uint32_t size);
    void *read_gpa_ctx;
    /* MAP_SHARED_HANDLE: handle -> debug token (driver: ObReferenceObjectByHandle). */
    int (*map_shared_handle)(void *ctx, uint64_t handle, uint32_t *token);
    void *map_ctx;
} agpu_escape_state;

/* Validates the header of buf[0..size) and answers the op in place. */
agpu_status agpu_escape_handle(const agpu_escape_state *s, void *buf, uint32_t size);

#ifdef __cplusplus
}
#endif

#endif /* AGPU_ESCAPE_H */
