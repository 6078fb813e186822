/* Host unit tests of the portable KMD core. Built and run by
 * guest-tools/tests/kmd_portable.rs (cargo test -p aero-guest-tools). */
#include <stdio.h>
#include <string.h>

#include "../portable/agpu_config.h"
#include "../portable/agpu_device.h"
#include "../portable/agpu_escape.h"
#include "../portable/agpu_modes.h"
#include "../portable/agpu_present.h"
#include "../portable/agpu_ring.h"
#include "../portable/agpu_share.h"
#include "../portable/agpu_submit.h"
#include "../../tests_host/agpu_check.h"

/* ---- fake MMIO -------------------------------------------------------------------- */
typedef struct fake_mmio {
    uint32_t regs[0x1000 / 4];
    uint32_t writes, doorbells, acked;
} fake_mmio;

static uint32_t f_rd(void *c, uint32_t off) { return ((fake_mmio *)c)->regs[(off & 0xFFF) / 4]; }
static void f_wr(void *c, uint32_t off, uint32_t v)
{
    fake_mmio *m = (fake_mmio *)c;
    m->writes++;
    if (off == AEROGPU_MMIO_REG_DOORBELL) m->doorbells++;
    if (off == AEROGPU_MMIO_REG_IRQ_ACK) { m->acked |= v; m->regs[AEROGPU_MMIO_REG_IRQ_STATUS / 4] &= ~v; return; }
    m->regs[(off & 0xFFF) / 4] = v;
}

static void test_config(void)
{
    agpu_registry_raw raw;
    agpu_config c;
    memset(&raw, 0, sizeof(raw));
    agpu_config_from_registry(&raw, 1, &c);
    CHECK(c.max_dma_buffer_bytes == 32u << 20);
    CHECK(c.non_local_memory_size_mb == 512);
    CHECK(c.preferred_width == 0 && !c.enable_read_gpa_escape);
    agpu_config_from_registry(&raw, 0, &c);
    CHECK(c.max_dma_buffer_bytes == 16u << 20);
    raw.max_dma_buffer_bytes = 1; raw.non_local_memory_size_mb = 4096;
    raw.preferred_width = 1280; /* height missing: ignored */
    agpu_config_from_registry(&raw, 0, &c);
    CHECK(c.max_dma_buffer_bytes == 256u << 10);
    CHECK(c.non_local_memory_size_mb == 1024);
    CHECK(c.preferred_width == 0 && c.preferred_height == 0);
    agpu_config_from_registry(&raw, 1, &c);
    CHECK(c.non_local_memory_size_mb == 2048);
    raw.max_dma_buffer_bytes = 0xFFFFFFFFu; raw.non_local_memory_size_mb = 5;
    raw.preferred_height = 720; raw.enable_read_gpa_escape = 1;
    agpu_config_from_registry(&raw, 1, &c);
    CHECK(c.max_dma_buffer_bytes == 256u << 20);
    CHECK(c.non_local_memory_size_mb == 128);
    CHECK(c.preferred_width == 1280 && c.preferred_height == 720);
    CHECK(c.enable_read_gpa_escape == 1 && c.enable_map_shared_handle_escape == 0);
}

static int has_mode(const agpu_mode *m, uint32_t n, uint32_t w, uint32_t h)
{
    uint32_t i;
    for (i = 0; i < n; i++) if (m[i].width == w && m[i].height == h) return 1;
    return 0;
}

static void test_edid_and_modes(void)
{
    static const agpu_mode expected[] = {
        {1920, 1080}, {640, 480}, {800, 600}, {1024, 768}, {1280, 720},
        {1280, 800}, {1366, 768}, {1368, 768}, {1600, 900},
    };
    uint8_t e[AGPU_EDID_SIZE];
    agpu_edid_modes em;
    agpu_mode list[AGPU_MAX_MODES];
    uint32_t n, i, sum = 0;
    agpu_edid_builtin(e);
    for (i = 0; i < 128; i++) sum += e[i];
    CHECK((sum & 0xFF) == 0);
    CHECK(agpu_edid_parse(e, sizeof(e), &em) == AGPU_OK);
    CHECK(em.preferred.width == 1920 && em.preferred.height == 1080);
    CHECK(has_mode(em.modes, em.count, 1368, 768));
    CHECK(has_mode(em.modes, em.count, 1280, 800));
    CHECK(has_mode(em.modes, em.count, 640, 480));

    n = agpu_build_mode_list(&em, 0, 0, 0, 0, list, AGPU_MAX_MODES);
    CHECK(n == sizeof(expected) / sizeof(expected[0]));
    for (i = 0; i < n && i < sizeof(expected) / sizeof(expected[0]); i++)
        CHECK(list[i].width == expected[i].width && list[i].height == expected[i].height);

    /* Registry preferred mode first; caps filter larger modes. */
    n = agpu_build_mode_list(&em, 1280, 720, 1366, 768, list, AGPU_MAX_MODES);
    CHECK(n >= 1 && list[0].width == 1280 && list[0].height == 720);
    CHECK(!has_mode(list, n, 1920, 1080) && !has_mode(list, n, 1600, 900));
    CHECK(!has_mode(list, n, 1368, 768) && has_mode(list, n, 1366, 768));
    /* A preferred pair beyond the cap falls back to the EDID preferred mode (also capped
     * here) and then to 1024x768. */
    n = agpu_build_mode_list(&em, 1920, 1080, 1280, 1024, list, AGPU_MAX_MODES);
    CHECK(list[0].width == 1024 && list[0].height == 768);
    /* Absurd caps still keep 640x480. */
    n = agpu_build_mode_list(&em, 0, 0, 1, 1, list, AGPU_MAX_MODES);
    CHECK(n == 1 && list[0].width == 640 && list[0].height == 480);
    /* No EDID at all. */
    n = agpu_build_mode_list(NULL, 0, 0, 0, 0, list, AGPU_MAX_MODES);
    CHECK(list[0].width == 1024 && list[0].height == 768 && n == 8);

    /* Corrupt EDIDs are rejected without reading past the buffer. */
    e[127] ^= 1;
    CHECK(agpu_edid_parse(e, sizeof(e), &em) == AGPU_ERR_INVALID_PARAMETER);
    CHECK(agpu_edid_parse(e, 64, &em) == AGPU_ERR_BUFFER_TOO_SMALL);
    e[127] ^= 1; e[0] = 1;
    CHECK(agpu_edid_parse(e, sizeof(e), &em) == AGPU_ERR_INVALID_PARAMETER);

    CHECK(agpu_vblank_lines(1080) == 40 && agpu_vblank_lines(480) == 20);
    CHECK(agpu_total_width(1920) > 1920);
    CHECK(agpu_refresh_acceptable(60, 1) && agpu_refresh_acceptable(59940, 1000));
    CHECK(!agpu_refresh_acceptable(75, 1) && !agpu_refresh_acceptable(60, 0));
    {
        uint32_t line; int vb;
        agpu_scanline(1080, 0, 0, &line, &vb);
        CHECK(line == 0 && !vb);
        agpu_scanline(1080, 16666667 - 1000, 16666667, &line, &vb);
        CHECK(vb && line >= 1080 && line < 1120);
        agpu_scanline(1080, 16666667 + 5, 16666667, &line, &vb);
        CHECK(line == 0);
    }
}

static void test_alloc_table(void)
{
    uint8_t buf[512];
    uint32_t bytes, entries, conflict;
    struct aerogpu_alloc_table_header h;
    struct aerogpu_alloc_entry e[3];
    agpu_alloc_ref refs[5] = {
        {7, 0x10000, 4096, 1, 0},  /* read-only */
        {9, 0x20000, 8192, 1, 1},  /* written */
        {7, 0x10000, 8192, 1, 1},  /* same id + gpa, written: merged, READONLY cleared, max size */
        {0, 0x30000, 4096, 1, 1},  /* not ours: skipped */
        {11, 0x40000, 64, 0, 0},   /* write intent unknown: fail open (not READONLY) */
    };
    CHECK(agpu_alloc_table_build(refs, 5, buf, sizeof(buf), &bytes, &entries, &conflict) == AGPU_OK);
    CHECK(entries == 3 && bytes == 24 + 3 * 32);
    memcpy(&h, buf, sizeof(h));
    memcpy(e, buf + sizeof(h), sizeof(e));
    CHECK(h.magic == AEROGPU_ALLOC_TABLE_MAGIC && h.entry_count == 3 && h.size_bytes == bytes);
    CHECK(h.entry_stride_bytes == 32);
    CHECK(e[0].alloc_id == 7 && e[0].flags == 0 && e[0].size_bytes == 8192);
    CHECK(e[1].alloc_id == 9 && e[1].flags == 0);
    CHECK(e[2].alloc_id == 11 && e[2].flags == 0);
    refs[2].write_operation = 0; /* both listings read-only: stays READONLY */
    CHECK(agpu_alloc_table_build(refs, 3, buf, sizeof(buf), &bytes, &entries, &conflict) == AGPU_OK);
    memcpy(e, buf + sizeof(h), sizeof(e));
    CHECK(e[0].flags == AEROGPU_ALLOC_FLAG_READONLY);
    refs[2].gpa = 0x50000; /* same alloc_id, different GPA */
    CHECK(agpu_alloc_table_build(refs, 3, buf, sizeof(buf), &bytes, &entries, &conflict) == AGPU_ERR_CONFLICT);
    CHECK(conflict == 7);
    refs[2].gpa = 0x10000;
    CHECK(agpu_alloc_table_build(refs, 3, buf, 24 + 32, &bytes, &entries, &conflict) == AGPU_ERR_BUFFER_TOO_SMALL);
    CHECK(agpu_alloc_table_build(refs, 0, buf, sizeof(buf), &bytes, &entries, &conflict) == AGPU_OK && entries == 0);
}

static void test_fence_widen(void)
{
    CHECK(agpu_fence_widen(0, 1) == 1);
    CHECK(agpu_fence_widen(5, 3) == 3);                 /* stale completion, same epoch */
    CHECK(agpu_fence_widen(0xFFFFFFF0ull, 5) == 0x100000005ull); /* wrap forward */
    CHECK(agpu_fence_widen(0x100000005ull, 0xFFFFFFF0u) == 0xFFFFFFF0ull); /* pre-wrap value */
    CHECK(agpu_fence_widen(0x100000005ull, 9) == 0x100000009ull);
}

static void test_cmd_check(void)
{
    struct aerogpu_cmd_stream_header h = {AEROGPU_CMD_STREAM_MAGIC, AEROGPU_ABI_VERSION_U32, 64, 0};
    uint8_t dma[256] = {0};
    uint32_t eff = 0;
    memcpy(dma, &h, sizeof(h));
    CHECK(agpu_cmd_stream_check(dma, sizeof(dma), 1 << 20, &eff) == AGPU_OK && eff == 64);
    CHECK(agpu_cmd_stream_check(dma, sizeof(dma), 32, &eff) == AGPU_ERR_TOO_LARGE);
    CHECK(agpu_cmd_stream_check(dma, 32, 1 << 20, &eff) == AGPU_ERR_INVALID_PARAMETER);
    h.abi_version = (2u << 16);
    memcpy(dma, &h, sizeof(h));
    CHECK(agpu_cmd_stream_check(dma, sizeof(dma), 1 << 20, &eff) == AGPU_ERR_ABI_MISMATCH);
}

static agpu_share_table g_share;
static void test_share(void)
{
    int last = -1;
    uint64_t a, b;
    uint8_t out[64];
    struct aerogpu_cmd_release_shared_surface p;
    agpu_share_init(&g_share, 1234);
    a = agpu_share_new_token(&g_share);
    b = agpu_share_new_token(&g_share);
    CHECK(a != 0 && b != 0 && a != b);
    CHECK(agpu_share_open(&g_share, a) == AGPU_OK);      /* create */
    CHECK(agpu_share_open(&g_share, a) == AGPU_OK);      /* DWM opens it */
    CHECK(agpu_share_refs(&g_share, a) == 2);
    CHECK(agpu_share_close(&g_share, a, &last) == AGPU_OK && last == 0);
    CHECK(agpu_share_close(&g_share, a, &last) == AGPU_OK && last == 1);
    CHECK(agpu_share_close(&g_share, a, &last) == AGPU_ERR_INVALID_PARAMETER && last == 0);
    CHECK(agpu_share_open(&g_share, 0) == AGPU_ERR_INVALID_PARAMETER);
    CHECK(agpu_build_release_stream(b, out, sizeof(out)) == 32);
    memcpy(&p, out + 16, sizeof(p));
    CHECK(p.hdr.opcode == AEROGPU_CMD_RELEASE_SHARED_SURFACE && p.share_token == b);
    CHECK(agpu_build_release_stream(b, out, 16) == 0);
}

static void test_ring(void)
{
    static uint8_t mem[4096];
    fake_mmio m;
    agpu_mmio_ops ops = {&m, f_rd, f_wr};
    agpu_ring r;
    struct aerogpu_submit_desc d, back;
    struct aerogpu_ring_header h;
    int i;
    memset(&m, 0, sizeof(m));
    CHECK(agpu_ring_init(&r, mem, 0x1000, sizeof(mem), 3, 0) == AGPU_ERR_INVALID_PARAMETER);
    CHECK(agpu_ring_init(&r, mem, 0x1000, 100, 4, 0) == AGPU_ERR_BUFFER_TOO_SMALL);
    CHECK(agpu_ring_init(&r, mem, 0x1000, sizeof(mem), 4, 0xFFFFFFFEu) == AGPU_OK);
    memcpy(&h, mem, sizeof(h));
    CHECK(h.magic == AEROGPU_RING_MAGIC && h.entry_count == 4 && h.head == 0xFFFFFFFEu);
    agpu_ring_program(&r, &ops, 0x800);
    CHECK(m.regs[AEROGPU_MMIO_REG_RING_GPA_LO / 4] == 0x1000);
    CHECK(m.regs[AEROGPU_MMIO_REG_RING_CONTROL / 4] == (AEROGPU_RING_CONTROL_RESET | AEROGPU_RING_CONTROL_ENABLE));
    for (i = 0; i < 4; i++) {
        agpu_submit_desc_fill(&d, 0x2000, 64, 0, 0, (uint64_t)i + 1, i == 3);
        CHECK(agpu_ring_push(&r, &d, &ops) == AGPU_OK);
    }
    CHECK(m.doorbells == 4 && r.tail == 2); /* wrapped past 2^32 */
    CHECK(agpu_ring_push(&r, &d, &ops) == AGPU_ERR_RING_FULL);
    agpu_ring_peek(&r, r.tail - 1, &back);
    CHECK(back.signal_fence == 4 && back.flags == AEROGPU_SUBMIT_FLAG_PRESENT);
    /* Device consumed everything: header head = tail. */
    memcpy(mem + offsetof(struct aerogpu_ring_header, head), &r.tail, 4);
    CHECK(agpu_ring_pending(&r) == 0);
    CHECK(agpu_ring_push(&r, &d, &ops) == AGPU_OK);
    /* A hostile head ahead of tail never reads as free space. */
    {
        uint32_t bogus = r.tail + 100;
        memcpy(mem + offsetof(struct aerogpu_ring_header, head), &bogus, 4);
        CHECK(agpu_ring_pending(&r) == 4);
    }
}

static void test_device(void)
{
    fake_mmio m;
    agpu_mmio_ops ops = {&m, f_rd, f_wr};
    agpu_device_info info;
    agpu_irq_result ir;
    memset(&m, 0, sizeof(m));
    CHECK(agpu_probe(&ops, &info) == AGPU_ERR_NOT_SUPPORTED);
    m.regs[0] = AEROGPU_MMIO_MAGIC;
    m.regs[1] = (2u << 16) | 0;
    CHECK(agpu_probe(&ops, &info) == AGPU_ERR_ABI_MISMATCH);
    m.regs[1] = AEROGPU_ABI_VERSION_U32;
    m.regs[AEROGPU_MMIO_REG_FEATURES_LO / 4] = (uint32_t)(AEROGPU_FEATURE_VBLANK | AEROGPU_FEATURE_ERROR_INFO);
    CHECK(agpu_probe(&ops, &info) == AGPU_OK && (info.features & AEROGPU_FEATURE_VBLANK));
    CHECK(agpu_irq_mask(info.features, 1) == (AEROGPU_IRQ_FENCE | AEROGPU_IRQ_ERROR | AEROGPU_IRQ_SCANOUT_VBLANK));
    CHECK(agpu_irq_mask(0, 1) == (AEROGPU_IRQ_FENCE | AEROGPU_IRQ_ERROR));
    CHECK(agpu_isr(&ops, 0xFFFFFFFFu, info.features, &ir) == 0);
    m.regs[AEROGPU_MMIO_REG_IRQ_STATUS / 4] = AEROGPU_IRQ_FENCE | AEROGPU_IRQ_ERROR | AEROGPU_IRQ_SCANOUT_VBLANK;
    m.regs[AEROGPU_MMIO_REG_COMPLETED_FENCE_LO / 4] = 7;
    m.regs[AEROGPU_MMIO_REG_COMPLETED_FENCE_HI / 4] = 1;
    m.regs[AEROGPU_MMIO_REG_ERROR_CODE / 4] = AEROGPU_ERROR_OOB;
    CHECK(agpu_isr(&ops, AEROGPU_IRQ_FENCE | AEROGPU_IRQ_ERROR, info.features, &ir) == 1);
    CHECK(ir.status == (AEROGPU_IRQ_FENCE | AEROGPU_IRQ_ERROR));
    CHECK(ir.completed_fence == 0x100000007ull && ir.error_code == AEROGPU_ERROR_OOB);
    CHECK(m.regs[AEROGPU_MMIO_REG_IRQ_STATUS / 4] == AEROGPU_IRQ_SCANOUT_VBLANK); /* not ours: untouched */
    agpu_power_down(&ops, AEROGPU_FEATURE_CURSOR);
    CHECK(m.regs[AEROGPU_MMIO_REG_IRQ_ENABLE / 4] == 0 && m.regs[AEROGPU_MMIO_REG_RING_CONTROL / 4] == 0);
    CHECK(m.regs[AEROGPU_MMIO_REG_SCANOUT0_ENABLE / 4] == 0 && m.regs[AEROGPU_MMIO_REG_CURSOR_FB_GPA_LO / 4] == 0);
}

static uint8_t g_phys[0x10000];
static int read_phys(void *ctx, uint64_t gpa, void *dst, uint32_t size)
{
    (void)ctx;
    if (gpa + size > sizeof(g_phys)) return 0;
    memcpy(dst, g_phys + gpa, size);
    return 1;
}

static void test_escape(void)
{
    static uint8_t buf[8192];
    agpu_escape_state s;
    agpu_createalloc_trace trace;
    struct aerogpu_escape_header h = {AEROGPU_ESCAPE_VERSION, AEROGPU_ESCAPE_OP_QUERY_FENCE, 48, 0};
    struct aerogpu_escape_query_fence_out fo;
    struct aerogpu_escape_read_gpa_inout *rg = (struct aerogpu_escape_read_gpa_inout *)buf;
    struct aerogpu_escape_dump_createallocation_inout *ca = (struct aerogpu_escape_dump_createallocation_inout *)buf;
    struct aerogpu_dbgctl_createallocation_desc d;
    int i;
    memset(&s, 0, sizeof(s));
    s.last_submitted_fence = 10; s.last_completed_fence = 8;
    memcpy(buf, &h, sizeof(h));
    CHECK(agpu_escape_handle(&s, buf, 48) == AGPU_OK);
    memcpy(&fo, buf, sizeof(fo));
    CHECK(fo.last_submitted_fence == 10 && fo.last_completed_fence == 8);
    h.size_bytes = 40; memcpy(buf, &h, sizeof(h));
    CHECK(agpu_escape_handle(&s, buf, 40) == AGPU_ERR_BUFFER_TOO_SMALL);
    CHECK(agpu_escape_handle(&s, buf, 8) == AGPU_ERR_INVALID_PARAMETER);
    h.size_bytes = 4096; memcpy(buf, &h, sizeof(h));
    CHECK(agpu_escape_handle(&s, buf, 48) == AGPU_ERR_INVALID_PARAMETER); /* claims more than given */
    h.op = 999; h.size_bytes = 16; memcpy(buf, &h, sizeof(h));
    CHECK(agpu_escape_handle(&s, buf, 16) == AGPU_ERR_NOT_SUPPORTED);
    h.op = AEROGPU_ESCAPE_OP_QUERY_VBLANK; h.size_bytes = 56; memcpy(buf, &h, sizeof(h));
    CHECK(agpu_escape_handle(&s, buf, 56) == AGPU_ERR_NOT_SUPPORTED); /* no VBLANK feature */

    /* READ_GPA: off by default, then privilege, then regions. */
    memset(buf, 0, sizeof(buf));
    h.op = AEROGPU_ESCAPE_OP_READ_GPA; h.size_bytes = sizeof(*rg); memcpy(buf, &h, sizeof(h));
    rg->gpa = 0x100; rg->size_bytes = 16;
    s.read_gpa = read_phys;
    CHECK(agpu_escape_handle(&s, buf, sizeof(*rg)) == AGPU_ERR_NOT_SUPPORTED);
    s.read_gpa_enabled = 1;
    CHECK(agpu_escape_handle(&s, buf, sizeof(*rg)) == AGPU_ERR_ACCESS_DENIED);
    s.caller_privileged = 1;
    CHECK(agpu_escape_handle(&s, buf, sizeof(*rg)) == AGPU_ERR_ACCESS_DENIED); /* no region */
    s.regions[0].gpa = 0x100; s.regions[0].size = 0x100; s.region_count = 1;
    g_phys[0x100] = 0xAB;
    CHECK(agpu_escape_handle(&s, buf, sizeof(*rg)) == AGPU_OK);
    CHECK(rg->bytes_copied == 16 && rg->data[0] == 0xAB && rg->status == 0);
    rg->gpa = 0x1F8; /* crosses the region end */
    CHECK(agpu_escape_handle(&s, buf, sizeof(*rg)) == AGPU_ERR_ACCESS_DENIED);
    rg->gpa = 0xFFFFFFFFFFFFFFF8ull; /* overflowing end */
    CHECK(agpu_escape_handle(&s, buf, sizeof(*rg)) == AGPU_ERR_ACCESS_DENIED);
    rg->gpa = 0x100; rg->size_bytes = 5000;
    CHECK(agpu_escape_handle(&s, buf, sizeof(*rg)) == AGPU_ERR_INVALID_PARAMETER);

    /* MAP_SHARED_HANDLE is off by default. */
    memset(buf, 0, 64);
    h.op = AEROGPU_ESCAPE_OP_MAP_SHARED_HANDLE; h.size_bytes = 32; memcpy(buf, &h, sizeof(h));
    CHECK(agpu_escape_handle(&s, buf, 32) == AGPU_ERR_NOT_SUPPORTED);

    /* CreateAllocation trace ring keeps the newest 32 in order. */
    memset(&trace, 0, sizeof(trace));
    memset(&d, 0, sizeof(d));
    for (i = 0; i < 40; i++) { d.alloc_id = (uint32_t)i + 1; agpu_trace_createalloc(&trace, &d); }
    s.createalloc = &trace;
    memset(buf, 0, sizeof(*ca));
    h.op = AEROGPU_ESCAPE_OP_DUMP_CREATEALLOCATION; h.size_bytes = sizeof(*ca); memcpy(buf, &h, sizeof(h));
    CHECK(agpu_escape_handle(&s, buf, sizeof(*ca)) == AGPU_OK);
    CHECK(ca->entry_count == 32 && ca->write_index == 40);
    CHECK(ca->entries[0].alloc_id == 9 && ca->entries[31].alloc_id == 40 && ca->entries[31].seq == 39);
}

/* ---- runtime presents ------------------------------------------------------------------ */
/* Opcodes of a stream's packets in order (at most max); returns the count, -1 if malformed. */
static int stream_ops(const uint8_t *s, uint32_t bytes, uint32_t *ops, uint32_t *offs, int max)
{
    struct aerogpu_cmd_stream_header h;
    uint32_t off = sizeof(h);
    int n = 0;
    memcpy(&h, s, sizeof(h));
    if (h.magic != AEROGPU_CMD_STREAM_MAGIC || h.size_bytes != bytes) return -1;
    while (off < bytes) {
        struct aerogpu_cmd_hdr p;
        memcpy(&p, s + off, sizeof(p));
        if (p.size_bytes < 8 || p.size_bytes % 4 || p.size_bytes > bytes - off || n >= max) return -1;
        ops[n] = p.opcode;
        offs[n++] = off;
        off += p.size_bytes;
    }
    return n;
}

static agpu_present_req blt_req(const agpu_rect *subs, uint32_t n)
{
    agpu_present_req r;
    memset(&r, 0, sizeof(r));
    r.op = AGPU_PRESENT_BLT;
    r.src.alloc_id = 7; r.src.width = 640; r.src.height = 480; r.src.pitch = 2560; r.src.size_bytes = 2560 * 480;
    r.dst.alloc_id = 0x80000001u; r.dst.width = 1024; r.dst.height = 768; r.dst.pitch = 4096;
    r.dst.size_bytes = 4096 * 768;
    r.src_rect.left = 10; r.src_rect.top = 20; r.src_rect.right = 110; r.src_rect.bottom = 70;
    r.dst_rect.left = 500; r.dst_rect.top = 600; r.dst_rect.right = 600; r.dst_rect.bottom = 650;
    r.sub_rects = subs; r.sub_rect_count = n;
    r.handle_base = 1 + 5 * AGPU_PRESENT_HANDLES;
    return r;
}

static void test_present(void)
{
    agpu_rect subs[3] = {{490, 590, 520, 610}, {550, 620, 560, 640}, {0, 0, 10, 10}};
    agpu_present_req r = blt_req(subs, 3), bad;
    uint8_t buf[2048];
    uint32_t ops[16], offs[16], bytes = 0, next = 0, i, base;
    struct aerogpu_cmd_create_texture2d ct;
    struct aerogpu_cmd_copy_texture2d cp;
    struct aerogpu_cmd_clear cl;
    int n, ok = 1;

    /* Colour channels as floats, exactly what the compiler's division gives. */
    for (i = 0; i <= 255; i++) {
        float f = (float)i / 255.0f;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        if (agpu_unorm8_to_f32_bits(i) != bits) ok = 0;
    }
    CHECK(ok);
    /* KMD handle slots stay in [1, 0x1000), go round, and skip lost slots. */
    {
        agpu_present_slots slots;
        uint32_t first, prev = 0;
        memset(&slots, 0, sizeof(slots));
        ok = 1;
        for (i = 0; i < 5000; i++) {
            base = agpu_present_slots_take(&slots);
            if (base < AGPU_KMD_HANDLE_FIRST || base + AGPU_PRESENT_HANDLES > AGPU_KMD_HANDLE_LIMIT || base == prev) ok = 0;
            prev = base;
        }
        CHECK(ok);
        CHECK(AGPU_PRESENT_SLOTS == 1365);
        memset(&slots, 0, sizeof(slots));
        first = agpu_present_slots_take(&slots);
        CHECK(first == 1 && agpu_present_slots_take(&slots) == 4);
        agpu_present_slots_lose(&slots, 4);
        agpu_present_slots_lose(&slots, 4); /* twice: counted once */
        agpu_present_slots_lose(&slots, 0); /* not a KMD handle */
        agpu_present_slots_lose(&slots, 0x1000);
        CHECK(slots.lost_count == 1);
        ok = 1;
        for (i = 0; i < 3 * AGPU_PRESENT_SLOTS; i++)
            if (agpu_present_slots_take(&slots) == 4) ok = 0;
        CHECK(ok); /* never handed out again */
        for (i = 0; i < AGPU_PRESENT_SLOTS; i++) agpu_present_slots_lose(&slots, 1 + i * AGPU_PRESENT_HANDLES);
        CHECK(slots.lost_count == AGPU_PRESENT_SLOTS && agpu_present_slots_take(&slots) == 0);
    }

    /* Checks. */
    CHECK(agpu_present_check(&r) == AGPU_OK);
    bad = r; bad.src.alloc_id = 0; CHECK(agpu_present_check(&bad) == AGPU_ERR_INVALID_PARAMETER);
    bad = r; bad.dst.alloc_id = 0; CHECK(agpu_present_check(&bad) == AGPU_ERR_INVALID_PARAMETER);
    bad = r; bad.src.width = 0; CHECK(agpu_present_check(&bad) == AGPU_ERR_NOT_SUPPORTED);
    bad = r; bad.dst.size_bytes = 4096; CHECK(agpu_present_check(&bad) == AGPU_ERR_NOT_SUPPORTED);
    bad = r; bad.dst.pitch = 1000; CHECK(agpu_present_check(&bad) == AGPU_ERR_NOT_SUPPORTED);
    bad = r; bad.dst_rect.right = 1025; bad.src_rect.right = 110 + 525; /* outside dst */
    CHECK(agpu_present_check(&bad) == AGPU_ERR_INVALID_PARAMETER);
    bad = r; bad.src_rect.left = -1; bad.src_rect.right = 99; CHECK(agpu_present_check(&bad) == AGPU_ERR_INVALID_PARAMETER);
    bad = r; bad.dst_rect.left = 601; CHECK(agpu_present_check(&bad) == AGPU_ERR_INVALID_PARAMETER);
    bad = r; bad.src_rect.right = 111; CHECK(agpu_present_check(&bad) == AGPU_ERR_NOT_SUPPORTED); /* stretch */
    bad = r; bad.sub_rect_count = AGPU_PRESENT_MAX_SUBRECTS + 1; CHECK(agpu_present_check(&bad) == AGPU_ERR_INVALID_PARAMETER);
    bad = r; bad.sub_rect_count = 0xFFFFFFFFu; CHECK(agpu_present_check(&bad) == AGPU_ERR_INVALID_PARAMETER);
    bad = r; bad.sub_rects = NULL; CHECK(agpu_present_check(&bad) == AGPU_ERR_INVALID_PARAMETER);
    bad = r; bad.op = 9; CHECK(agpu_present_check(&bad) == AGPU_ERR_NOT_SUPPORTED);
    bad = r; bad.handle_base = 0x0FFE; CHECK(agpu_present_check(&bad) == AGPU_ERR_INVALID_PARAMETER);
    subs[1].right = 540; /* inverted */
    CHECK(agpu_present_check(&r) == AGPU_ERR_INVALID_PARAMETER);
    subs[1].right = 560;

    /* Blt: the first sub-rect is clipped to DstRect, the third lies outside it (skipped). */
    CHECK(agpu_present_build(&r, 0, buf, sizeof(buf), &bytes, &next) == AGPU_OK);
    CHECK(next == 3);
    n = stream_ops(buf, bytes, ops, offs, 16);
    CHECK(n == 6 && bytes == 16 + 2 * 64 + 2 * 64 + 2 * 16);
    if (n == 6) {
        CHECK(ops[0] == AEROGPU_CMD_CREATE_TEXTURE2D && ops[1] == AEROGPU_CMD_CREATE_TEXTURE2D &&
              ops[2] == AEROGPU_CMD_COPY_TEXTURE2D && ops[3] == AEROGPU_CMD_COPY_TEXTURE2D &&
              ops[4] == AEROGPU_CMD_DESTROY_RESOURCE && ops[5] == AEROGPU_CMD_DESTROY_RESOURCE);
        memcpy(&ct, buf + offs[0], sizeof(ct));
        CHECK(ct.texture_handle == r.handle_base + 1 && ct.backing_alloc_id == 0x80000001u && ct.width == 1024 &&
              ct.height == 768 && ct.row_pitch_bytes == 4096 && ct.format == AEROGPU_FORMAT_B8G8R8A8_UNORM &&
              ct.mip_levels == 1 && ct.array_layers == 1);
        memcpy(&ct, buf + offs[1], sizeof(ct));
        CHECK(ct.texture_handle == r.handle_base && ct.backing_alloc_id == 7 && ct.width == 640 &&
              ct.row_pitch_bytes == 2560);
        memcpy(&cp, buf + offs[2], sizeof(cp));
        CHECK(cp.dst_texture == r.handle_base + 1 && cp.src_texture == r.handle_base);
        CHECK(cp.dst_x == 500 && cp.dst_y == 600 && cp.width == 20 && cp.height == 10);
        CHECK(cp.src_x == 10 && cp.src_y == 20 && cp.flags == AEROGPU_COPY_FLAG_WRITEBACK_DST);
        memcpy(&cp, buf + offs[3], sizeof(cp));
        CHECK(cp.dst_x == 550 && cp.dst_y == 620 && cp.src_x == 60 && cp.src_y == 40 && cp.width == 10 &&
              cp.height == 20);
    }
    /* No sub-rects: DstRect whole. */
    r.sub_rect_count = 0;
    CHECK(agpu_present_build(&r, 0, buf, sizeof(buf), &bytes, &next) == AGPU_OK && next == 1);
    n = stream_ops(buf, bytes, ops, offs, 16);
    CHECK(n == 5);
    if (n == 5) {
        memcpy(&cp, buf + offs[2], sizeof(cp));
        CHECK(cp.dst_x == 500 && cp.dst_y == 600 && cp.src_x == 10 && cp.src_y == 20 && cp.width == 100 &&
              cp.height == 50);
    }
    CHECK(agpu_present_build(&r, 2, buf, sizeof(buf), &bytes, &next) == AGPU_ERR_INVALID_PARAMETER);

    /* Multipass: room for one copy per stream. */
    r.sub_rect_count = 3;
    CHECK(agpu_present_build(&r, 0, buf, 16 + 160 + 64 + 63, &bytes, &next) == AGPU_OK);
    CHECK(next == 1 && bytes == 16 + 160 + 64);
    CHECK(agpu_present_build(&r, next, buf, 16 + 160 + 64, &bytes, &next) == AGPU_OK);
    CHECK(next == 3 && bytes == 16 + 160 + 64); /* the empty third one costs nothing */
    CHECK(agpu_present_build(&r, 0, buf, 16 + 160 + 63, &bytes, &next) == AGPU_ERR_BUFFER_TOO_SMALL);
    CHECK(agpu_present_build(&r, 0, buf, 8, &bytes, &next) == AGPU_ERR_BUFFER_TOO_SMALL);
    CHECK(agpu_present_build(&r, 4, buf, sizeof(buf), &bytes, &next) == AGPU_ERR_INVALID_PARAMETER);
    /* Only empty rectangles left: a header-only stream. */
    CHECK(agpu_present_build(&r, 2, buf, 16, &bytes, &next) == AGPU_OK && next == 3 && bytes == 16);

    /* ColorFill: a host texture as big as the largest rectangle, cleared, copied from (0,0). */
    r.op = AGPU_PRESENT_COLORFILL;
    r.src.alloc_id = 0;
    r.color = 0x80FF4000u;
    CHECK(agpu_present_check(&r) == AGPU_OK);
    CHECK(agpu_present_build(&r, 0, buf, sizeof(buf), &bytes, &next) == AGPU_OK && next == 3);
    n = stream_ops(buf, bytes, ops, offs, 16);
    CHECK(n == 8);
    if (n == 8) {
        CHECK(ops[0] == AEROGPU_CMD_CREATE_TEXTURE2D && ops[1] == AEROGPU_CMD_CREATE_TEXTURE2D &&
              ops[2] == AEROGPU_CMD_SET_RENDER_TARGETS && ops[3] == AEROGPU_CMD_CLEAR &&
              ops[4] == AEROGPU_CMD_COPY_TEXTURE2D && ops[5] == AEROGPU_CMD_COPY_TEXTURE2D &&
              ops[6] == AEROGPU_CMD_DESTROY_RESOURCE && ops[7] == AEROGPU_CMD_DESTROY_RESOURCE);
        memcpy(&ct, buf + offs[1], sizeof(ct));
        CHECK(ct.texture_handle == r.handle_base + 2 && ct.backing_alloc_id == 0 && ct.width == 20 &&
              ct.height == 20 && ct.row_pitch_bytes == 0);
        memcpy(&cl, buf + offs[3], sizeof(cl));
        CHECK(cl.flags == AEROGPU_CLEAR_COLOR && cl.color_rgba_f32[0] == 0x3F800000u &&
              cl.color_rgba_f32[1] == agpu_unorm8_to_f32_bits(0x40) && cl.color_rgba_f32[2] == 0 &&
              cl.color_rgba_f32[3] == agpu_unorm8_to_f32_bits(0x80));
        memcpy(&cp, buf + offs[5], sizeof(cp));
        CHECK(cp.src_texture == r.handle_base + 2 && cp.src_x == 0 && cp.src_y == 0 && cp.dst_x == 550 &&
              cp.width == 10 && cp.height == 20 && cp.flags == AEROGPU_COPY_FLAG_WRITEBACK_DST);
    }

    /* Flip: nothing to draw (see AgpuPresent), only the source must exist. */
    r.op = AGPU_PRESENT_FLIP;
    r.src.alloc_id = 9;
    CHECK(agpu_present_check(&r) == AGPU_OK && agpu_present_rect_count(&r) == 0);
    CHECK(agpu_present_build(&r, 0, buf, sizeof(buf), &bytes, &next) == AGPU_OK && bytes == 16 && next == 0);
    r.src.alloc_id = 0;
    CHECK(agpu_present_check(&r) == AGPU_ERR_INVALID_PARAMETER);
}

int main(void)
{
    test_config();
    test_edid_and_modes();
    test_alloc_table();
    test_fence_widen();
    test_cmd_check();
    test_share();
    test_ring();
    test_device();
    test_escape();
    test_present();
    return agpu_check_report();
}
