/* aerogpu_dbgctl: queries the AeroGPU KMD through driver-private escapes.
 *
 *   aerogpu_dbgctl --status | --dump-ring | --dump-createalloc | --query-vblank
 *                  | --read-gpa <gpa> <bytes> | --selftest
 *
 * UNTESTED ON WINDOWS: builds for x86/x64 with mingw-w64; the escape layouts it uses are
 * the shared protocol headers the KMD's portable escape code is unit-tested with. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "../../include/d3dkmthk.h"
#include "../../protocol/aerogpu_dbgctl_escape.h"

static D3DKMT_HANDLE g_adapter;

static int open_adapter(void)
{
    D3DKMT_OPENADAPTERFROMHDC o;
    memset(&o, 0, sizeof(o));
    o.hDc = GetDC(NULL);
    if (!o.hDc) return 0;
    if (D3DKMTOpenAdapterFromHdc(&o) != 0) {
        ReleaseDC(NULL, o.hDc);
        return 0;
    }
    ReleaseDC(NULL, o.hDc);
    g_adapter = o.hAdapter;
    return 1;
}

static long escape(void *buf, UINT size, UINT op)
{
    D3DKMT_ESCAPE e;
    struct aerogpu_escape_header *h = (struct aerogpu_escape_header *)buf;
    h->version = AEROGPU_ESCAPE_VERSION;
    h->op = op;
    h->size_bytes = size;
    h->reserved0 = 0;
    memset(&e, 0, sizeof(e));
    e.hAdapter = g_adapter;
    e.Type = D3DKMT_ESCAPE_DRIVERPRIVATE;
    e.pPrivateDriverData = buf;
    e.PrivateDriverDataSize = size;
    return D3DKMTEscape(&e);
}

static int cmd_status(void)
{
    struct aerogpu_escape_query_device_v2_out d;
    struct aerogpu_escape_query_fence_out f;
    long s;
    memset(&d, 0, sizeof(d));
    if ((s = escape(&d, sizeof(d), AEROGPU_ESCAPE_OP_QUERY_DEVICE_V2)) != 0) {
        printf("QUERY_DEVICE_V2 failed: 0x%08lx\n", (unsigned long)s);
        return 1;
    }
    printf("mmio magic 0x%08x abi %u.%u features 0x%016llx\n", d.detected_mmio_magic,
           d.abi_version_u32 >> 16, d.abi_version_u32 & 0xFFFF, (unsigned long long)d.features);
    memset(&f, 0, sizeof(f));
    if ((s = escape(&f, sizeof(f), AEROGPU_ESCAPE_OP_QUERY_FENCE)) != 0) {
        printf("QUERY_FENCE failed: 0x%08lx\n", (unsigned long)s);
        return 1;
    }
    printf("fences: submitted %llu completed %llu; error irqs %llu (last error fence %llu)\n",
           (unsigned long long)f.last_submitted_fence, (unsigned long long)f.last_completed_fence,
           (unsigned long long)f.error_irq_count, (unsigned long long)f.last_error_fence);
    return 0;
}

static int cmd_dump_ring(void)
{
    static struct aerogpu_escape_dump_ring_v2_inout r;
    UINT i;
    long s;
    memset(&r, 0, sizeof(r));
    r.desc_capacity = AEROGPU_DBGCTL_MAX_RING_DESCS;
    if ((s = escape(&r, sizeof(r), AEROGPU_ESCAPE_OP_DUMP_RING_V2)) != 0) {
        printf("DUMP_RING_V2 failed: 0x%08lx\n", (unsigned long)s);
        return 1;
    }
    printf("ring: format %u size %u head %u tail %u (%u descriptors)\n", r.ring_format,
           r.ring_size_bytes, r.head, r.tail, r.desc_count);
    for (i = 0; i < r.desc_count && i < AEROGPU_DBGCTL_MAX_RING_DESCS; i++)
        printf("  fence %llu cmd 0x%llx+%u table 0x%llx+%u flags 0x%x\n",
               (unsigned long long)r.desc[i].signal_fence, (unsigned long long)r.desc[i].cmd_gpa,
               r.desc[i].cmd_size_bytes, (unsigned long long)r.desc[i].alloc_table_gpa,
               r.desc[i].alloc_table_size_bytes, r.desc[i].flags);
    return 0;
}

static int cmd_dump_createalloc(void)
{
    static struct aerogpu_escape_dump_createallocation_inout c;
    UINT i;
    long s;
    memset(&c, 0, sizeof(c));
    if ((s = escape(&c, sizeof(c), AEROGPU_ESCAPE_OP_DUMP_CREATEALLOCATION)) != 0) {
        printf("DUMP_CREATEALLOCATION failed: 0x%08lx\n", (unsigned long)s);
        return 1;
    }
    printf("%u of %u CreateAllocation records\n", c.entry_count, c.write_index);
    for (i = 0; i < c.entry_count && i < AEROGPU_DBGCTL_MAX_CREATEALLOCATION_ENTRIES; i++)
        printf("  #%u call %u idx %u alloc_id 0x%x priv 0x%x size %llu share 0x%llx flags_in 0x%x flags_out 0x%x\n",
               c.entries[i].seq, c.entries[i].call_seq, c.entries[i].alloc_index, c.entries[i].alloc_id,
               c.entries[i].priv_flags, (unsigned long long)c.entries[i].size_bytes,
               (unsigned long long)c.entries[i].share_token, c.entries[i].flags_in, c.entries[i].flags_out);
    return 0;
}

static int cmd_query_vblank(void)
{
    struct aerogpu_escape_query_vblank_out v;
    long s;
    memset(&v, 0, sizeof(v));
    if ((s = escape(&v, sizeof(v), AEROGPU_ESCAPE_OP_QUERY_VBLANK)) != 0) {
        printf("QUERY_VBLANK failed: 0x%08lx\n", (unsigned long)s);
        return 1;
    }
    printf("vblank seq %llu time %llu ns period %u ns irq enable 0x%x status 0x%x\n",
           (unsigned long long)v.vblank_seq, (unsigned long long)v.last_vblank_time_ns,
           v.vblank_period_ns, v.irq_enable, v.irq_status);
    return 0;
}

static int cmd_read_gpa(const wchar_t *gpa_s, const wchar_t *len_s)
{
    static struct aerogpu_escape_read_gpa_inout r;
    UINT i;
    long s;
    memset(&r, 0, sizeof(r));
    r.gpa = wcstoull(gpa_s, NULL, 0);
    r.size_bytes = (uint32_t)wcstoul(len_s, NULL, 0);
    if (r.size_bytes > AEROGPU_DBGCTL_READ_GPA_MAX_BYTES) r.size_bytes = AEROGPU_DBGCTL_READ_GPA_MAX_BYTES;
    if ((s = escape(&r, sizeof(r), AEROGPU_ESCAPE_OP_READ_GPA)) != 0) {
        printf("READ_GPA failed: 0x%08lx (disabled unless EnableReadGpaEscape=1 and privileged)\n",
               (unsigned long)s);
        return 1;
    }
    for (i = 0; i < r.bytes_copied && i < sizeof(r.data); i++)
        printf("%02x%s", r.data[i], (i % 16 == 15) ? "\n" : " ");
    printf("\n");
    return 0;
}

static int cmd_selftest(void)
{
    struct aerogpu_escape_selftest_inout t;
    static const char *why[] = {"", "device not started or not in D0", "ring refused the submission",
                                "device did not consume the submission in time", "device latched an error"};
    long s;
    memset(&t, 0, sizeof(t));
    t.timeout_ms = 1000;
    if ((s = escape(&t, sizeof(t), AEROGPU_ESCAPE_OP_SELFTEST)) != 0) {
        printf("SELFTEST failed: 0x%08lx\n", (unsigned long)s);
        return 1;
    }
    if (t.passed) {
        printf("selftest passed\n");
        return 0;
    }
    printf("selftest FAILED: %s (code %u)\n", t.error_code < 5 ? why[t.error_code] : "unknown", t.error_code);
    return 1;
}

int wmain(int argc, wchar_t **argv)
{
    int rc;
    if (argc < 2) {
        printf("usage: aerogpu_dbgctl --status | --dump-ring | --dump-createalloc | --query-vblank |"
               " --read-gpa <gpa> <bytes> | --selftest\n");
        return 2;
    }
    if (!open_adapter()) {
        printf("cannot open the display adapter (is the AeroGPU driver active?)\n");
        return 1;
    }
    if (!wcscmp(argv[1], L"--status")) rc = cmd_status();
    else if (!wcscmp(argv[1], L"--dump-ring")) rc = cmd_dump_ring();
    else if (!wcscmp(argv[1], L"--dump-createalloc")) rc = cmd_dump_createalloc();
    else if (!wcscmp(argv[1], L"--query-vblank")) rc = cmd_query_vblank();
    else if (!wcscmp(argv[1], L"--read-gpa") && argc >= 4) rc = cmd_read_gpa(argv[2], argv[3]);
    else if (!wcscmp(argv[1], L"--selftest")) rc = cmd_selftest();
    else { printf("unknown command\n"); rc = 2; }
    {
        D3DKMT_CLOSEADAPTER c;
        c.hAdapter = g_adapter;
        D3DKMTCloseAdapter(&c);
    }
    return rc;
}
