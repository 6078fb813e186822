#include "agpu_ring.h"

uint64_t agpu_read_reg64_stable(const agpu_mmio_ops *m, uint32_t lo_off, uint32_t hi_off)
{
    int tries;
    uint32_t hi = agpu_rd(m, hi_off);
    uint32_t lo = 0;
    for (tries = 0; tries < 4; tries++) {
        uint32_t hi2;
        lo = agpu_rd(m, lo_off);
        hi2 = agpu_rd(m, hi_off);
        if (hi2 == hi) break;
        hi = hi2;
    }
    return ((uint64_t)hi << 32) | lo;
}

static uint32_t hdr_u32(const agpu_ring *ring, size_t off)
{
    uint32_t v;
    agpu_copy(&v, ring->va + off, 4);
    return v;
}

static void hdr_set_u32(agpu_ring *ring, size_t off, uint32_t v)
{
    /* A volatile store: the device may read the header concurrently. */
    *(volatile uint32_t *)(void *)(ring->va + off) = v;
}

uint32_t agpu_ring_bytes_for(uint32_t entry_count)
{
    return (uint32_t)sizeof(struct aerogpu_ring_header) +
           entry_count * (uint32_t)sizeof(struct aerogpu_submit_desc);
}

agpu_status agpu_ring_init(agpu_ring *ring, void *va, uint64_t gpa, uint32_t size_bytes,
                           uint32_t entry_count, uint32_t start)
{
    struct aerogpu_ring_header h;
    if (!ring || !va || entry_count == 0 || entry_count > AEROGPU_RING_MAX_ENTRIES ||
        (entry_count & (entry_count - 1)) != 0)
        return AGPU_ERR_INVALID_PARAMETER;
    if (agpu_ring_bytes_for(entry_count) > size_bytes) return AGPU_ERR_BUFFER_TOO_SMALL;
    ring->va = (uint8_t *)va;
    ring->gpa = gpa;
    ring->size_bytes = agpu_ring_bytes_for(entry_count);
    ring->entry_count = entry_count;
    ring->tail = start;
    agpu_zero(va, ring->size_bytes);
    agpu_zero(&h, sizeof(h));
    h.magic = AEROGPU_RING_MAGIC;
    h.abi_version = AEROGPU_ABI_VERSION_U32;
    h.size_bytes = ring->size_bytes;
    h.entry_count = entry_count;
    h.entry_stride_bytes = (uint32_t)sizeof(struct aerogpu_submit_desc);
    h.head = start;
    h.tail = start;
    agpu_copy(va, &h, sizeof(h));
    return AGPU_OK;
}

void agpu_ring_program(const agpu_ring *ring, const agpu_mmio_ops *mmio, uint64_t fence_gpa)
{
    agpu_wr(mmio, AEROGPU_MMIO_REG_RING_CONTROL, 0);
    agpu_wr(mmio, AEROGPU_MMIO_REG_RING_GPA_LO, (uint32_t)ring->gpa);
    agpu_wr(mmio, AEROGPU_MMIO_REG_RING_GPA_HI, (uint32_t)(ring->gpa >> 32));
    agpu_wr(mmio, AEROGPU_MMIO_REG_RING_SIZE_BYTES, ring->size_bytes);
    agpu_wr(mmio, AEROGPU_MMIO_REG_FENCE_GPA_LO, (uint32_t)fence_gpa);
    agpu_wr(mmio, AEROGPU_MMIO_REG_FENCE_GPA_HI, (uint32_t)(fence_gpa >> 32));
    agpu_wr(mmio, AEROGPU_MMIO_REG_RING_CONTROL,
            AEROGPU_RING_CONTROL_RESET | AEROGPU_RING_CONTROL_ENABLE);
}

void agpu_ring_stop(const agpu_mmio_ops *mmio)
{
    agpu_wr(mmio, AEROGPU_MMIO_REG_RING_CONTROL, 0);
    agpu_wr(mmio, AEROGPU_MMIO_REG_RING_GPA_LO, 0);
    agpu_wr(mmio, AEROGPU_MMIO_REG_RING_GPA_HI, 0);
    agpu_wr(mmio, AEROGPU_MMIO_REG_RING_SIZE_BYTES, 0);
    agpu_wr(mmio, AEROGPU_MMIO_REG_FENCE_GPA_LO, 0);
    agpu_wr(mmio, AEROGPU_MMIO_REG_FENCE_GPA_HI, 0);
}

uint32_t agpu_ring_head(const agpu_ring *ring)
{
    return hdr_u32(ring, offsetof(struct aerogpu_ring_header, head));
}

uint32_t agpu_ring_pending(const agpu_ring *ring)
{
    uint32_t pending = ring->tail - agpu_ring_head(ring);
    /* A head beyond tail (device bug or hostile memory) must not look like free space. */
    return pending > ring->entry_count ? ring->entry_count : pending;
}

static uint8_t *slot_ptr(const agpu_ring *ring, uint32_t n)
{
    uint32_t slot = n & (ring->entry_count - 1);
    return ring->va + sizeof(struct aerogpu_ring_header) +
           (size_t)slot * sizeof(struct aerogpu_submit_desc);
}

agpu_status agpu_ring_push(agpu_ring *ring, const struct aerogpu_submit_desc *desc,
                           const agpu_mmio_ops *mmio)
{
    if (agpu_ring_pending(ring) >= ring->entry_count) return AGPU_ERR_RING_FULL;
    agpu_copy(slot_ptr(ring, ring->tail), desc, sizeof(*desc));
    AGPU_WRITE_BARRIER();
    ring->tail++;
    hdr_set_u32(ring, offsetof(struct aerogpu_ring_header, tail), ring->tail);
    AGPU_WRITE_BARRIER();
    agpu_wr(mmio, AEROGPU_MMIO_REG_DOORBELL, 1);
    return AGPU_OK;
}

void agpu_ring_peek(const agpu_ring *ring, uint32_t n, struct aerogpu_submit_desc *out)
{
    agpu_copy(out, slot_ptr(ring, n), sizeof(*out));
}
