/* Driver side of the AeroGPU submission ring (aerogpu_ring.h): header setup, descriptor
 * push, doorbell. The ring memory is driver-allocated, physically contiguous, and mapped
 * at `va` for the CPU and `gpa` for the device. */
#ifndef AGPU_RING_H
#define AGPU_RING_H

#include "agpu_portable.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct agpu_ring {
    uint8_t *va;
    uint64_t gpa;
    uint32_t size_bytes;
    uint32_t entry_count; /* power of two */
    uint32_t tail;        /* driver copy of the free-running producer counter */
} agpu_ring;

/* Bytes needed for a ring of `entry_count` descriptors. */
uint32_t agpu_ring_bytes_for(uint32_t entry_count);

/* Writes the ring header (head = tail = start) into memory [va, va + size_bytes).
 * entry_count must be a power of two in 1..AEROGPU_RING_MAX_ENTRIES that fits. */
agpu_status agpu_ring_init(agpu_ring *ring, void *va, uint64_t gpa, uint32_t size_bytes,
                           uint32_t entry_count, uint32_t start);

/* Programs RING_GPA/SIZE (and FENCE_GPA when fence_gpa != 0) and enables the ring with a
 * RESET so the device reloads head from the header. */
void agpu_ring_program(const agpu_ring *ring, const agpu_mmio_ops *mmio, uint64_t fence_gpa);

/* Clears the ring/fence registers so the device stops touching ring memory. */
void agpu_ring_stop(const agpu_mmio_ops *mmio);

/* Device's consumer counter as mirrored into the header. */
uint32_t agpu_ring_head(const agpu_ring *ring);

/* Descriptors the device has not consumed yet (tail - head), clamped to entry_count. */
uint32_t agpu_ring_pending(const agpu_ring *ring);

/* Copies `desc` into the slot at tail, publishes the new tail and rings the doorbell.
 * AGPU_ERR_RING_FULL when all entries are pending. */
agpu_status agpu_ring_push(agpu_ring *ring, const struct aerogpu_submit_desc *desc,
                           const agpu_mmio_ops *mmio);

/* Reads back the descriptor stored for counter value `n` (dbgctl ring dumps). */
void agpu_ring_peek(const agpu_ring *ring, uint32_t n, struct aerogpu_submit_desc *out);

#ifdef __cplusplus
}
#endif

#endif /* AGPU_RING_H */
