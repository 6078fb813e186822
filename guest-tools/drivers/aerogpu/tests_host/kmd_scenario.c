/* KMD data path against the real device model: probe, ring setup (counter start near
 * 2^32 so the wrap is exercised), scanout, then submissions staged exactly like
 * DxgkDdiSubmitCommand does (stream check, copy to contiguous staging, allocation table
 * from the allocation list with READONLY/duplicate rules, descriptor, ring push).
 *
 * usage: kmd_scenario ok|readonly OUT.trace */
#include <stdio.h>
#include <string.h>

#include "agpu_trace.h"
#include "../kmd/portable/agpu_device.h"
#include "../kmd/portable/agpu_ring.h"
#include "../kmd/portable/agpu_submit.h"

#define RING_GPA 0x1000u
#define FENCE_GPA 0x800u
#define STAGE_GPA 0x100000u
#define VB_GPA 0x400000u  /* alloc_id 1 */
#define TEX_GPA 0x420000u /* alloc_id 2 */
#define FB_GPA 0x500000u

/* A tiny stream writer for hand-built streams (the UMD has the real one). */
typedef struct sw { uint8_t buf[4096]; uint32_t len; } sw;
static void sw_begin(sw *w)
{
    struct aerogpu_cmd_stream_header h = {AEROGPU_CMD_STREAM_MAGIC, AEROGPU_ABI_VERSION_U32, 0, 0};
    memcpy(w->buf, &h, sizeof(h));
    w->len = sizeof(h);
}
static void sw_put(sw *w, uint32_t opcode, void *pkt, uint32_t size)
{
    struct aerogpu_cmd_hdr *hdr = (struct aerogpu_cmd_hdr *)pkt;
    hdr->opcode = opcode;
    hdr->size_bytes = size;
    memcpy(w->buf + w->len, pkt, size);
    w->len += size;
}
static void sw_end(sw *w)
{
    memcpy(w->buf + 8, &w->len, 4);
}

static agpu_trace T;
static agpu_ring R;
static uint64_t g_fence;
static uint32_t g_stage_off;

static int submit(sw *w, const agpu_alloc_ref *refs, uint32_t n, int present)
{
    struct aerogpu_submit_desc d;
    agpu_staging st;
    uint32_t conflict = 0;
    agpu_status s;
    /* The runtime hands out a larger DMA buffer than the stream uses. */
    static uint8_t dma[8192];
    memset(dma, 0xCC, sizeof(dma));
    memcpy(dma, w->buf, w->len);
    st.va = T.ram + STAGE_GPA + g_stage_off;
    st.gpa = STAGE_GPA + g_stage_off;
    st.size_bytes = 0x2000;
    g_stage_off = (g_stage_off + 0x2000) % 0x100000;
    s = agpu_submit_stage(dma, sizeof(dma), 16u << 20, refs, n, &st, ++g_fence, present, &d, &conflict);
    if (s != AGPU_OK) { fprintf(stderr, "stage failed %d\n", (int)s); return 0; }
    s = agpu_ring_push(&R, &d, &T.ops);
    if (s != AGPU_OK) { fprintf(stderr, "push failed %d\n", (int)s); return 0; }
    return 1;
}

int main(int argc, char **argv)
{
    agpu_device_info info;
    agpu_scanout so = {1, 1024, 768, AEROGPU_FORMAT_B8G8R8X8_UNORM, 4096, FB_GPA};
    int readonly_case;
    sw w;
    int i;
    if (argc != 3) return 2;
    readonly_case = strcmp(argv[1], "readonly") == 0;
    if (!agpu_trace_open(&T, argv[2])) return 2;

    if (agpu_probe(&T.ops, &info) != AGPU_OK) return 3;
    if (agpu_ring_init(&R, T.ram + RING_GPA, RING_GPA, 0x1000, 8, 0xFFFFFFFAu) != AGPU_OK) return 3;
    agpu_ring_program(&R, &T.ops, FENCE_GPA);
    agpu_wr(&T.ops, AEROGPU_MMIO_REG_IRQ_ENABLE, agpu_irq_mask(info.features, 1));
    agpu_scanout_program(&T.ops, &so);

    /* 1: resources backed by two allocations, a dirty range upload; the allocation list
     * names alloc 1 twice (merged) and alloc 2 read-only. */
    {
        struct aerogpu_cmd_create_buffer cb;
        struct aerogpu_cmd_create_texture2d ct;
        struct aerogpu_cmd_resource_dirty_range dr;
        agpu_alloc_ref refs[3] = {
            {1, VB_GPA, 0x10000, 1, 0}, {2, TEX_GPA, 0x4000, 1, 0}, {1, VB_GPA, 0x10000, 1, 1}};
        sw_begin(&w);
        memset(&cb, 0, sizeof(cb));
        cb.buffer_handle = 1; cb.usage_flags = AEROGPU_RESOURCE_USAGE_VERTEX_BUFFER;
        cb.size_bytes = 0x1000; cb.backing_alloc_id = 1;
        sw_put(&w, AEROGPU_CMD_CREATE_BUFFER, &cb, sizeof(cb));
        memset(&ct, 0, sizeof(ct));
        ct.texture_handle = 2; ct.usage_flags = AEROGPU_RESOURCE_USAGE_TEXTURE;
        ct.format = AEROGPU_FORMAT_B8G8R8A8_UNORM; ct.width = 64; ct.height = 64;
        ct.mip_levels = 1; ct.array_layers = 1; ct.row_pitch_bytes = 256; ct.backing_alloc_id = 2;
        sw_put(&w, AEROGPU_CMD_CREATE_TEXTURE2D, &ct, sizeof(ct));
        memset(&dr, 0, sizeof(dr));
        dr.resource_handle = 1; dr.size_bytes = 0x100;
        sw_put(&w, AEROGPU_CMD_RESOURCE_DIRTY_RANGE, &dr, sizeof(dr));
        sw_end(&w);
        memset(T.ram + VB_GPA, 0x5A, 0x100);
        if (!submit(&w, refs, 3, 0)) return 4;
    }
    /* 2: a host buffer copied into the guest-backed one with writeback. In the readonly
     * case the allocation list says the submission does not write alloc 1, so the KMD
     * marks it READONLY and the device must refuse the writeback. */
    {
        struct aerogpu_cmd_create_buffer cb;
        struct aerogpu_cmd_copy_buffer cp;
        agpu_alloc_ref refs[1] = {{1, VB_GPA, 0x10000, 1, readonly_case ? 0 : 1}};
        sw_begin(&w);
        memset(&cb, 0, sizeof(cb));
        cb.buffer_handle = 3; cb.usage_flags = AEROGPU_RESOURCE_USAGE_STAGING; cb.size_bytes = 0x100;
        sw_put(&w, AEROGPU_CMD_CREATE_BUFFER, &cb, sizeof(cb));
        memset(&cp, 0, sizeof(cp));
        cp.dst_buffer = 1; cp.src_buffer = 3; cp.size_bytes = 0x100;
        cp.flags = AEROGPU_COPY_FLAG_WRITEBACK_DST;
        sw_put(&w, AEROGPU_CMD_COPY_BUFFER, &cp, sizeof(cp));
        sw_end(&w);
        if (!submit(&w, refs, 1, 0)) return 4;
    }
    /* 3..12: presents (more than the 8 ring entries: the ring wraps, the counter wraps). */
    for (i = 0; i < 10; i++) {
        struct aerogpu_cmd_present p;
        struct aerogpu_cmd_flush f;
        sw_begin(&w);
        memset(&f, 0, sizeof(f));
        sw_put(&w, AEROGPU_CMD_FLUSH, &f, sizeof(f));
        memset(&p, 0, sizeof(p));
        sw_put(&w, AEROGPU_CMD_PRESENT, &p, sizeof(p));
        sw_end(&w);
        if (!submit(&w, NULL, 0, 1)) return 4;
    }
    agpu_trace_expect(&T, g_fence, readonly_case ? 1 : 0,
                      readonly_case ? AEROGPU_ERROR_READONLY : AEROGPU_ERROR_NONE, 12);
    agpu_trace_close(&T);
    return 0;
}
