#include "agpu_trace.h"

#include <stdlib.h>
#include <string.h>

static void put(agpu_trace *t, const void *p, size_t n) { fwrite(p, 1, n, t->out); }
static void put_u8(agpu_trace *t, uint8_t v) { put(t, &v, 1); }
static void put_u32(agpu_trace *t, uint32_t v) { put(t, &v, 4); }
static void put_u64(agpu_trace *t, uint64_t v) { put(t, &v, 8); }

#define CHUNK 64u

static void flush_diffs(agpu_trace *t)
{
    uint32_t off = 0;
    while (off < AGPU_TRACE_RAM_BYTES) {
        uint32_t end;
        if (memcmp(t->ram + off, t->shadow + off, CHUNK) == 0) { off += CHUNK; continue; }
        end = off + CHUNK;
        while (end < AGPU_TRACE_RAM_BYTES && memcmp(t->ram + end, t->shadow + end, CHUNK) != 0)
            end += CHUNK;
        put_u8(t, 'M');
        put_u64(t, off);
        put_u32(t, end - off);
        put(t, t->ram + off, end - off);
        memcpy(t->shadow + off, t->ram + off, end - off);
        off = end;
    }
}

static uint32_t rec_read(void *ctx, uint32_t off)
{
    (void)ctx;
    switch (off) {
    case AEROGPU_MMIO_REG_MAGIC: return AEROGPU_MMIO_MAGIC;
    case AEROGPU_MMIO_REG_ABI_VERSION: return AEROGPU_ABI_VERSION_U32;
    case AEROGPU_MMIO_REG_FEATURES_LO: return 0x7F;
    default: return 0;
    }
}

static void rec_write(void *ctx, uint32_t off, uint32_t v)
{
    agpu_trace *t = (agpu_trace *)ctx;
    flush_diffs(t);
    put_u8(t, 'W');
    put_u32(t, off);
    put_u32(t, v);
    if (off == AEROGPU_MMIO_REG_RING_GPA_LO) t->ring_gpa = v;
    if (off == AEROGPU_MMIO_REG_DOORBELL && t->ring_gpa &&
        t->ring_gpa + sizeof(struct aerogpu_ring_header) <= AGPU_TRACE_RAM_BYTES) {
        /* The device consumes synchronously and writes head = tail; mirror it in both
         * copies so it is not replayed as a guest write. */
        uint8_t *h = t->ram + t->ring_gpa;
        memcpy(h + offsetof(struct aerogpu_ring_header, head),
               h + offsetof(struct aerogpu_ring_header, tail), 4);
        memcpy(t->shadow + t->ring_gpa, h, sizeof(struct aerogpu_ring_header));
    }
}

int agpu_trace_open(agpu_trace *t, const char *path)
{
    memset(t, 0, sizeof(*t));
    t->ram = (uint8_t *)calloc(1, AGPU_TRACE_RAM_BYTES);
    t->shadow = (uint8_t *)calloc(1, AGPU_TRACE_RAM_BYTES);
    t->out = fopen(path, "wb");
    if (!t->ram || !t->shadow || !t->out) return 0;
    put(t, "AGTR", 4);
    put_u32(t, 1);
    t->ops.ctx = t;
    t->ops.read32 = rec_read;
    t->ops.write32 = rec_write;
    return 1;
}

void agpu_trace_expect(agpu_trace *t, uint64_t fence, uint32_t err_count, uint32_t err_code,
                       uint32_t submissions)
{
    put_u8(t, 'F');
    put_u64(t, fence);
    put_u8(t, 'C');
    put_u32(t, err_count);
    put_u32(t, err_code);
    put_u8(t, 'S');
    put_u32(t, submissions);
}

void agpu_trace_close(agpu_trace *t)
{
    put_u8(t, 'E');
    fclose(t->out);
    free(t->ram);
    free(t->shadow);
}
