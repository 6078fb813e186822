/* Allocations (private-data blob, share tokens), paging, contexts, and the submission
 * path Render/Present -> SubmitCommand -> ring. UNTESTED ON WINDOWS (aerogpu_kmd.h). */
#include "aerogpu_kmd.h"

agpu_allocation *agpu_allocation_from_handle(HANDLE h)
{
    return (agpu_allocation *)h;
}

static agpu_adapter *adapter_of_device(HANDLE hDevice)
{
    return ((agpu_device_ctx *)hDevice)->adapter;
}

static void trace_createalloc(agpu_adapter *a, uint32_t index, const agpu_allocation *al,
                              uint32_t flags_in, uint32_t flags_out)
{
    struct aerogpu_dbgctl_createallocation_desc d;
    RtlZeroMemory(&d, sizeof(d));
    d.call_seq = a->createalloc_calls;
    d.alloc_index = index;
    d.alloc_id = al->alloc_id;
    d.priv_flags = al->priv_flags;
    d.pitch_bytes = al->pitch;
    d.share_token = al->share_token;
    d.size_bytes = al->size_bytes;
    d.flags_in = flags_in;
    d.flags_out = flags_out;
    agpu_trace_createalloc(&a->createalloc_trace, &d);
}

/* The pixel layout of an allocation, for DescribeAllocation, the scanout pitch of primaries
 * and runtime presents. Standard allocations carry what GetStandardAllocationDriverData
 * chose (pitch << 32 | width); the UMD's 2D textures its D3D9 descriptor (format | width
 * << 32 | height << 48), whose 32-bit formats have rows of width * 4 bytes. Anything else
 * keeps width 0: no known layout. */
static void set_layout(agpu_allocation *al, const struct aerogpu_wddm_alloc_priv *priv, int standard)
{
    uint32_t format = (uint32_t)priv->reserved0;
    if (!priv->reserved0) return;
    if (standard) {
        al->width = (uint32_t)priv->reserved0;
        al->pitch = (uint32_t)(priv->reserved0 >> 32);
        al->height = al->pitch ? (uint32_t)(priv->size_bytes / al->pitch) : 0;
    } else if (format == D3DDDIFMT_A8R8G8B8 || format == D3DDDIFMT_X8R8G8B8) {
        uint32_t w = (uint32_t)(priv->reserved0 >> 32) & 0xFFFFu, h = (uint32_t)(priv->reserved0 >> 48);
        if (w && h && (uint64_t)w * 4u * h <= al->size_bytes) {
            al->width = w;
            al->height = h;
            al->pitch = w * 4u;
        }
    }
}

NTSTATUS AEROGPU_DDI AgpuCreateAllocation(HANDLE hAdapter, void *pArgs)
{
    agpu_adapter *a = (agpu_adapter *)hAdapter;
    DXGKARG_CREATEALLOCATION *c = (DXGKARG_CREATEALLOCATION *)pArgs;
    UINT i;
    a->createalloc_calls++;
    for (i = 0; i < c->NumAllocations; i++) {
        DXGK_ALLOCATIONINFO *info = &c->pAllocationInfo[i];
        struct aerogpu_wddm_alloc_priv priv;
        agpu_allocation *al;
        uint32_t flags_in = info->Flags;
        int standard;
        if (!info->pPrivateDriverData || info->PrivateDriverDataSize < sizeof(priv))
            return STATUS_INVALID_PARAMETER;
        RtlCopyMemory(&priv, info->pPrivateDriverData, sizeof(priv));
        if (priv.magic != AEROGPU_WDDM_ALLOC_PRIV_MAGIC) return STATUS_INVALID_PARAMETER;
        standard = priv.alloc_id == 0;
        if (standard) {
            /* KMD-owned IDs (standard allocations: primaries, shadows, staging). */
            priv.alloc_id = a->next_kmd_alloc_id++;
            if (a->next_kmd_alloc_id == 0) a->next_kmd_alloc_id = AEROGPU_WDDM_ALLOC_ID_KMD_MIN;
        } else if (priv.alloc_id > AEROGPU_WDDM_ALLOC_ID_UMD_MAX) {
            return STATUS_INVALID_PARAMETER;
        }
        if ((priv.flags & AEROGPU_WDDM_ALLOC_PRIV_FLAG_IS_SHARED) && c->NumAllocations != 1)
            return STATUS_NOT_SUPPORTED; /* MVP: shared surfaces are single-allocation */
        al = (agpu_allocation *)ExAllocatePoolWithTag(NonPagedPool, sizeof(*al), AGPU_POOL_TAG);
        if (!al) return STATUS_NO_MEMORY;
        RtlZeroMemory(al, sizeof(*al));
        al->alloc_id = priv.alloc_id;
        al->priv_flags = priv.flags;
        al->size_bytes = (info->Size + PAGE_SIZE - 1) & ~((SIZE_T)PAGE_SIZE - 1);
        if (al->size_bytes == 0) al->size_bytes = priv.size_bytes;
        set_layout(al, &priv, standard);
        if (priv.flags & AEROGPU_WDDM_ALLOC_PRIV_FLAG_IS_SHARED) {
            al->share_token = agpu_share_new_token(a->shares);
            if (agpu_share_open(a->shares, al->share_token) != AGPU_OK) {
                ExFreePoolWithTag(al, AGPU_POOL_TAG);
                return STATUS_INSUFFICIENT_RESOURCES;
            }
        }
        /* Write back what every process must see (dxgkrnl preserves the blob). */
        priv.share_token = al->share_token;
        priv.size_bytes = al->size_bytes;
        RtlCopyMemory(info->pPrivateDriverData, &priv, sizeof(priv));
        if (info->Size == 0) info->Size = (SIZE_T)al->size_bytes;
        info->Alignment = 0;
        info->SupportedReadSegmentSet = 1u << 0;  /* segment 1 */
        info->SupportedWriteSegmentSet = 1u << 0;
        info->Flags |= DXGK_ALLOCATIONINFOFLAGS_CPUVISIBLE;
        info->hAllocation = al;
        trace_createalloc(a, i, al, flags_in, info->Flags);
    }
    return STATUS_SUCCESS;
}

static void release_share(agpu_adapter *a, agpu_allocation *al)
{
    int last = 0;
    if (!al->share_token) return;
    if (agpu_share_close(a->shares, al->share_token, &last) == AGPU_OK && last) {
        uint8_t stream[64];
        uint32_t n = agpu_build_release_stream(al->share_token, stream, sizeof(stream));
        if (n) agpu_submit_internal(a, stream, n); /* best effort */
    }
}

NTSTATUS AEROGPU_DDI AgpuDestroyAllocation(HANDLE hAdapter, const void *pArgs)
{
    agpu_adapter *a = (agpu_adapter *)hAdapter;
    const DXGKARG_DESTROYALLOCATION *d = (const DXGKARG_DESTROYALLOCATION *)pArgs;
    UINT i;
    for (i = 0; i < d->NumAllocations; i++) {
        agpu_allocation *al = agpu_allocation_from_handle(d->pAllocationList[i]);
        if (!al) continue;
        release_share(a, al);
        ExFreePoolWithTag(al, AGPU_POOL_TAG);
    }
    return STATUS_SUCCESS;
}

NTSTATUS AEROGPU_DDI AgpuDescribeAllocation(HANDLE hAdapter, void *pArgs)
{
    DXGKARG_DESCRIBEALLOCATION *d = (DXGKARG_DESCRIBEALLOCATION *)pArgs;
    agpu_allocation *al = agpu_allocation_from_handle(d->hAllocation);
    (void)hAdapter;
    if (!al) return STATUS_INVALID_PARAMETER;
    d->Width = al->width;
    d->Height = al->height;
    d->Format = D3DDDIFMT_X8R8G8B8; /* the only format standard allocations get */
    d->MultisampleMethod.NumSamples = 0;
    d->MultisampleMethod.NumQualityLevels = 0;
    d->RefreshRate.Numerator = 60;
    d->RefreshRate.Denominator = 1;
    return STATUS_SUCCESS;
}

NTSTATUS AEROGPU_DDI AgpuGetStandardAllocationDriverData(HANDLE hAdapter, void *pArgs)
{
    DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA *g = (DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA *)pArgs;
    struct aerogpu_wddm_alloc_priv priv;
    UINT w = 0, h = 0, pitch;
    (void)hAdapter;
    switch (g->StandardAllocationType) {
    case D3DKMDT_STANDARDALLOCATION_SHAREDPRIMARYSURFACE:
        w = g->pCreateSharedPrimarySurfaceData->Width;
        h = g->pCreateSharedPrimarySurfaceData->Height;
        break;
    case D3DKMDT_STANDARDALLOCATION_SHADOWSURFACE:
        w = g->pCreateShadowSurfaceData->Width;
        h = g->pCreateShadowSurfaceData->Height;
        break;
    case D3DKMDT_STANDARDALLOCATION_STAGINGSURFACE:
        w = g->pCreateStagingSurfaceData->Width;
        h = g->pCreateStagingSurfaceData->Height;
        break;
    case D3DKMDT_STANDARDALLOCATION_GDISURFACE:
        w = g->pCreateGdiSurfaceData->Width;
        h = g->pCreateGdiSurfaceData->Height;
        break;
    default:
        return STATUS_NOT_SUPPORTED;
    }
    if (w == 0 || h == 0 || w > AGPU_MAX_MODE_DIM || h > AGPU_MAX_MODE_DIM) return STATUS_INVALID_PARAMETER;
    pitch = (w * 4 + 255) & ~255u;
    if (g->StandardAllocationType == D3DKMDT_STANDARDALLOCATION_SHADOWSURFACE)
        g->pCreateShadowSurfaceData->Pitch = pitch;
    if (g->StandardAllocationType == D3DKMDT_STANDARDALLOCATION_STAGINGSURFACE)
        g->pCreateStagingSurfaceData->Pitch = pitch;
    if (g->StandardAllocationType == D3DKMDT_STANDARDALLOCATION_GDISURFACE)
        g->pCreateGdiSurfaceData->Pitch = pitch;
    g->ResourcePrivateDriverDataSize = 0;
    if (!g->pAllocationPrivateDriverData) {
        g->AllocationPrivateDriverDataSize = sizeof(priv); /* size query */
        return STATUS_SUCCESS;
    }
    if (g->AllocationPrivateDriverDataSize < sizeof(priv)) return STATUS_BUFFER_TOO_SMALL;
    RtlZeroMemory(&priv, sizeof(priv));
    priv.magic = AEROGPU_WDDM_ALLOC_PRIV_MAGIC;
    priv.version = AEROGPU_WDDM_ALLOC_PRIV_VERSION;
    priv.alloc_id = 0; /* CreateAllocation assigns a KMD-range ID */
    priv.flags = g->StandardAllocationType == D3DKMDT_STANDARDALLOCATION_SHAREDPRIMARYSURFACE
                     ? AEROGPU_WDDM_ALLOC_PRIV_FLAG_IS_PRIMARY : 0;
    priv.size_bytes = (uint64_t)pitch * h;
    priv.reserved0 = ((uint64_t)pitch << 32) | w; /* pitch + width for Describe/scanout */
    RtlCopyMemory(g->pAllocationPrivateDriverData, &priv, sizeof(priv));
    return STATUS_SUCCESS;
}

NTSTATUS AEROGPU_DDI AgpuOpenAllocation(HANDLE hDevice, void *pArgs)
{
    agpu_adapter *a = adapter_of_device(hDevice);
    DXGKARG_OPENALLOCATION *o = (DXGKARG_OPENALLOCATION *)pArgs;
    UINT i;
    if (o->NumAllocations != 1) return STATUS_NOT_SUPPORTED; /* shared: single allocation */
    for (i = 0; i < o->NumAllocations; i++) {
        DXGK_OPENALLOCATIONINFO *info = &o->pOpenAllocation[i];
        struct aerogpu_wddm_alloc_priv priv;
        agpu_allocation *al;
        if (!info->pPrivateDriverData || info->PrivateDriverDataSize < sizeof(priv))
            return STATUS_INVALID_PARAMETER;
        RtlCopyMemory(&priv, info->pPrivateDriverData, sizeof(priv));
        if (priv.magic != AEROGPU_WDDM_ALLOC_PRIV_MAGIC || priv.alloc_id == 0) return STATUS_INVALID_PARAMETER;
        al = (agpu_allocation *)ExAllocatePoolWithTag(NonPagedPool, sizeof(*al), AGPU_POOL_TAG);
        if (!al) return STATUS_NO_MEMORY;
        RtlZeroMemory(al, sizeof(*al));
        al->alloc_id = priv.alloc_id;
        al->priv_flags = priv.flags;
        al->share_token = priv.share_token;
        al->size_bytes = priv.size_bytes;
        set_layout(al, &priv, priv.alloc_id >= AEROGPU_WDDM_ALLOC_ID_KMD_MIN);
        if (al->share_token && agpu_share_open(a->shares, al->share_token) != AGPU_OK) {
            ExFreePoolWithTag(al, AGPU_POOL_TAG);
            return STATUS_INSUFFICIENT_RESOURCES;
        }
        info->hDeviceSpecificAllocation = al;
    }
    return STATUS_SUCCESS;
}

NTSTATUS AEROGPU_DDI AgpuCloseAllocation(HANDLE hDevice, const void *pArgs)
{
    agpu_adapter *a = adapter_of_device(hDevice);
    const DXGKARG_CLOSEALLOCATION *c = (const DXGKARG_CLOSEALLOCATION *)pArgs;
    UINT i;
    for (i = 0; i < c->NumAllocations; i++) {
        agpu_allocation *al = agpu_allocation_from_handle(c->pOpenHandleList[i]);
        if (!al) continue;
        release_share(a, al);
        ExFreePoolWithTag(al, AGPU_POOL_TAG);
    }
    return STATUS_SUCCESS;
}

/* The aperture segment is backed by the MDL dxgkrnl maps here. With the device's GART the
 * KMD writes one entry per page and the allocation's device address is its place in the
 * aperture window, however scattered the pages are. Without it (an older device) the
 * device needs one contiguous GPA: recorded when the pages are contiguous, else gpa = 0
 * and submissions naming the allocation are rejected. */
NTSTATUS AEROGPU_DDI AgpuBuildPagingBuffer(HANDLE hAdapter, void *pArgs)
{
    agpu_adapter *a = (agpu_adapter *)hAdapter;
    DXGKARG_BUILDPAGINGBUFFER *b = (DXGKARG_BUILDPAGINGBUFFER *)pArgs;
    const DXGK_BUILDPAGINGBUFFER_MAPAPERTURESEGMENT *m = &b->MapApertureSegment;
    agpu_allocation *al;
    SIZE_T i, n = m->NumberOfPages;
    if (b->Operation != DXGK_OPERATION_MAP_APERTURE_SEGMENT &&
        b->Operation != DXGK_OPERATION_UNMAP_APERTURE_SEGMENT)
        return STATUS_SUCCESS; /* nothing for the GPU to do: the paging buffer stays empty */
    al = agpu_allocation_from_handle(m->hAllocation);
    if (a->gart && (m->OffsetInPages > a->gart_entries || n > a->gart_entries - m->OffsetInPages))
        return STATUS_INVALID_PARAMETER;
    if (b->Operation == DXGK_OPERATION_UNMAP_APERTURE_SEGMENT) {
        if (a->gart)
            for (i = 0; i < n; i++) a->gart[m->OffsetInPages + i] = 0;
        if (al) al->gpa = 0;
        return STATUS_SUCCESS;
    }
    if (!al || !m->pMdl || !n) return STATUS_SUCCESS;
    {
        PPFN_NUMBER pfn = MmGetMdlPfnArray(m->pMdl) + m->MdlOffset;
        if (a->gart) {
            for (i = 0; i < n; i++)
                a->gart[m->OffsetInPages + i] = ((uint64_t)pfn[i] << PAGE_SHIFT) | AEROGPU_GART_ENTRY_VALID;
            al->gpa = AEROGPU_APERTURE_BASE + (uint64_t)m->OffsetInPages * PAGE_SIZE;
        } else {
            int contiguous = 1;
            for (i = 1; i < n; i++)
                if (pfn[i] != pfn[0] + i) { contiguous = 0; break; }
            al->gpa = contiguous ? ((uint64_t)pfn[0] << PAGE_SHIFT) : 0;
        }
    }
    return STATUS_SUCCESS;
}

NTSTATUS AEROGPU_DDI AgpuCreateContext(HANDLE hDevice, void *pArgs)
{
    DXGKARG_CREATECONTEXT *c = (DXGKARG_CREATECONTEXT *)pArgs;
    agpu_context *ctx = (agpu_context *)ExAllocatePoolWithTag(NonPagedPool, sizeof(*ctx), AGPU_POOL_TAG);
    if (!ctx) return STATUS_NO_MEMORY;
    RtlZeroMemory(ctx, sizeof(*ctx));
    ctx->adapter = adapter_of_device(hDevice);
    ctx->id = ++ctx->adapter->next_context_id;
    if (ctx->id == 0) ctx->id = ++ctx->adapter->next_context_id; /* 0 is the KMD's */
    c->hContext = ctx;
    c->ContextInfo.DmaBufferSize = AGPU_DMA_BUFFER_SIZE;
    c->ContextInfo.DmaBufferSegmentSet = 0;
    c->ContextInfo.DmaBufferPrivateDataSize = 16;
    c->ContextInfo.AllocationListSize = AGPU_ALLOCATION_LIST_SIZE;
    c->ContextInfo.PatchLocationListSize = 0;
    return STATUS_SUCCESS;
}

static void free_pending(agpu_pending *p)
{
    if (!p) return;
    if (p->stage.va) MmFreeContiguousMemory(p->stage.va);
    ExFreePoolWithTag(p, AGPU_POOL_TAG);
}

NTSTATUS AEROGPU_DDI AgpuDestroyContext(HANDLE hContext)
{
    agpu_context *ctx = (agpu_context *)hContext;
    while (ctx->head != ctx->tail) free_pending(ctx->pending[ctx->head++ % AGPU_PENDING_PER_CONTEXT]);
    ExFreePoolWithTag(ctx, AGPU_POOL_TAG);
    return STATUS_SUCCESS;
}

/* Queues `stream` (eff bytes, already in the DMA buffer) and the allocation table built
 * from refs for SubmitCommand: staged in contiguous memory, since the runtime reuses the
 * DMA buffer. context_id is the device context whose bindings the stream uses. */
static NTSTATUS stage_stream(agpu_context *ctx, const void *stream, UINT eff, const agpu_alloc_ref *refs,
                             UINT nrefs, int is_present, uint32_t context_id, uint32_t present_handles)
{
    agpu_adapter *a = ctx->adapter;
    agpu_pending *p;
    PHYSICAL_ADDRESS pa;
    UINT i;
    uint32_t conflict = 0, bytes;
    agpu_status st;
    if (ctx->tail - ctx->head >= AGPU_PENDING_PER_CONTEXT) return STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER;
    for (i = 0; i < nrefs; i++) {
        if (refs[i].alloc_id && refs[i].gpa == 0) {
            AGPU_LOG("alloc_id %u has no contiguous backing\n", refs[i].alloc_id);
            return STATUS_INVALID_PARAMETER;
        }
    }
    p = (agpu_pending *)ExAllocatePoolWithTag(NonPagedPool, sizeof(*p), AGPU_POOL_TAG);
    if (!p) return STATUS_NO_MEMORY;
    RtlZeroMemory(p, sizeof(*p));
    bytes = agpu_submit_stage_bytes(eff, nrefs);
    p->stage.va = (uint8_t *)MmAllocateContiguousMemory(bytes, (PHYSICAL_ADDRESS){.QuadPart = -1});
    if (!p->stage.va) { ExFreePoolWithTag(p, AGPU_POOL_TAG); return STATUS_NO_MEMORY; }
    pa = MmGetPhysicalAddress(p->stage.va);
    p->stage.gpa = (uint64_t)pa.QuadPart;
    p->stage.size_bytes = bytes;
    p->is_present = is_present;
    st = agpu_submit_stage(stream, eff, a->config.max_dma_buffer_bytes, refs, nrefs, &p->stage, 0,
                           is_present, &p->desc, &conflict);
    if (st != AGPU_OK) {
        AGPU_LOG("stage failed %d (conflicting alloc_id %u)\n", (int)st, conflict);
        free_pending(p);
        return agpu_status_to_nt(st);
    }
    p->desc.context_id = context_id;
    p->present_handles = present_handles;
    ctx->pending[ctx->tail++ % AGPU_PENDING_PER_CONTEXT] = p;
    return STATUS_SUCCESS;
}

static void fill_ref(agpu_alloc_ref *r, const agpu_allocation *al, int written)
{
    r->alloc_id = al ? al->alloc_id : 0;
    r->gpa = al ? al->gpa : 0;
    r->size_bytes = al ? al->size_bytes : 0;
    r->write_known = 1;
    r->write_operation = written;
}

/* Render: copy the UMD stream into the DMA buffer (dxgkrnl requires it) and stage it. */
static NTSTATUS stage_submission(agpu_context *ctx, const void *cmd, UINT cmd_len, void *dma,
                                 UINT dma_size, const DXGK_ALLOCATIONLIST *list, UINT list_size)
{
    agpu_adapter *a = ctx->adapter;
    agpu_alloc_ref *refs = NULL;
    UINT i, eff = 0;
    agpu_status st;
    NTSTATUS s;
    if (list_size > AGPU_ALLOCATION_LIST_SIZE) return STATUS_INVALID_PARAMETER;
    st = agpu_cmd_stream_check(cmd, cmd_len, a->config.max_dma_buffer_bytes, &eff);
    if (st != AGPU_OK) return agpu_status_to_nt(st);
    if (eff > dma_size) return STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER;
    RtlCopyMemory(dma, cmd, eff);
    if (list_size) {
        refs = (agpu_alloc_ref *)ExAllocatePoolWithTag(NonPagedPool, sizeof(*refs) * list_size, AGPU_POOL_TAG);
        if (!refs) return STATUS_NO_MEMORY;
        for (i = 0; i < list_size; i++)
            fill_ref(&refs[i], agpu_allocation_from_handle(list[i].hDeviceSpecificAllocation),
                     list[i].WriteOperation);
    }
    s = stage_stream(ctx, dma, eff, refs, list_size, 0, ctx->id, 0);
    if (refs) ExFreePoolWithTag(refs, AGPU_POOL_TAG);
    return s;
}

NTSTATUS AEROGPU_DDI AgpuRender(HANDLE hContext, void *pArgs)
{
    DXGKARG_RENDER *r = (DXGKARG_RENDER *)pArgs;
    NTSTATUS s = stage_submission((agpu_context *)hContext, r->pCommand, r->CommandLength, r->pDmaBuffer,
                                  r->DmaSize, r->pAllocationList, r->AllocationListSize);
    if (NT_SUCCESS(s)) {
        /* Everything was consumed: advance the output pointers past the copied bytes. */
        r->pDmaBuffer = (UCHAR *)r->pDmaBuffer + r->CommandLength;
    }
    return s;
}

static void surface_of(const agpu_allocation *al, agpu_surface *s)
{
    if (!al) return;
    s->alloc_id = al->alloc_id;
    s->width = al->width;
    s->height = al->height;
    s->pitch = al->pitch;
    s->size_bytes = al->size_bytes;
}

static agpu_rect rect_of(const RECT *r)
{
    agpu_rect a;
    a.left = r->left;
    a.top = r->top;
    a.right = r->right;
    a.bottom = r->bottom;
    return a;
}

/* DxgkDdiPresent: the runtime's own presents (GDI without DWM: blits from GDI's shadow
 * surface or a windowed application's back buffer to the primary, colour fills, flips),
 * written into the DMA buffer as AeroGPU commands (agpu_present.h) and staged like a
 * Render. They run in the KMD's device context 0, whose bindings no UMD context sees, so
 * ColorFill's render target binding disturbs nobody and nothing is restored.
 * - Patch locations: none. Streams name allocations by alloc_id, resolved through the
 *   submission's allocation table, which lists the present's source (read) and
 *   destination (written) from DXGK_PRESENT_*_INDEX, so nothing depends on where VidMm
 *   puts the allocations.
 * - Multipass: when the DMA buffer holds only part of the rectangles, the part is staged,
 *   MultipassOffset names the first rectangle left and STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER
 *   makes dxgkrnl submit it and call again. A buffer too small for even one rectangle is
 *   an error (the same call would never make progress).
 * - Flip: the new primary already holds its pixels (the UMD's PRESENT_EX wrote them back
 *   into its guest memory before this present was queued behind it), and the flip itself
 *   is dxgkrnl calling DxgkDdiSetVidPnSourceAddress, paced by the vsync interrupts that
 *   report the new address. So a flip is a header-only stream whose fence orders it.
 * - Not supported (explicit errors): stretching blits, colour keys, rotation,
 *   linear-to-sRGB; the driver advertises none of them. */
NTSTATUS AEROGPU_DDI AgpuPresent(HANDLE hContext, void *pArgs)
{
    agpu_context *ctx = (agpu_context *)hContext;
    DXGKARG_PRESENT *p = (DXGKARG_PRESENT *)pArgs;
    const UINT supported = DXGK_PRESENTFLAGS_BLT | DXGK_PRESENTFLAGS_COLORFILL | DXGK_PRESENTFLAGS_FLIP |
                           DXGK_PRESENTFLAGS_FLIPWITHNOWAIT;
    agpu_allocation *src = NULL, *dst = NULL;
    agpu_present_req req;
    agpu_alloc_ref refs[2];
    UINT nrefs = 0;
    uint32_t bytes = 0, next = 0;
    agpu_status st;
    NTSTATUS s;
    KIRQL irql;
    if (!p->pDmaBuffer) return STATUS_INVALID_PARAMETER;
    if (p->Flags.Value & ~supported) return STATUS_NOT_SUPPORTED;
    RtlZeroMemory(&req, sizeof(req));
    req.op = p->Flags.Flip ? AGPU_PRESENT_FLIP
             : p->Flags.Blt ? AGPU_PRESENT_BLT
             : p->Flags.ColorFill ? AGPU_PRESENT_COLORFILL : 0;
    if (p->pAllocationList) {
        src = agpu_allocation_from_handle(p->pAllocationList[DXGK_PRESENT_SOURCE_INDEX].hDeviceSpecificAllocation);
        dst = agpu_allocation_from_handle(p->pAllocationList[DXGK_PRESENT_DESTINATION_INDEX].hDeviceSpecificAllocation);
    }
    if (req.op != AGPU_PRESENT_COLORFILL) surface_of(src, &req.src);
    if (req.op != AGPU_PRESENT_FLIP) surface_of(dst, &req.dst);
    req.src_rect = rect_of(&p->SrcRect);
    req.dst_rect = rect_of(&p->DstRect);
    /* RECT and agpu_rect are the same four 32-bit LONGs. */
    req.sub_rects = (const agpu_rect *)p->pDstSubRects;
    req.sub_rect_count = p->SubRectCnt;
    req.color = p->Color;
    KeAcquireSpinLock(&ctx->adapter->submit_lock, &irql);
    req.handle_base = agpu_present_slots_take(&ctx->adapter->present_slots);
    KeReleaseSpinLock(&ctx->adapter->submit_lock, irql);
    if (!req.handle_base) return STATUS_INSUFFICIENT_RESOURCES; /* every slot lost (agpu_present.h) */
    st = agpu_present_check(&req);
    if (st != AGPU_OK) return agpu_status_to_nt(st);
    st = agpu_present_build(&req, p->MultipassOffset, p->pDmaBuffer, p->DmaSize, &bytes, &next);
    if (st != AGPU_OK) return st == AGPU_ERR_BUFFER_TOO_SMALL ? STATUS_INVALID_PARAMETER : agpu_status_to_nt(st);
    if (req.op == AGPU_PRESENT_BLT) fill_ref(&refs[nrefs++], src, 0);
    if (req.op != AGPU_PRESENT_FLIP) fill_ref(&refs[nrefs++], dst, 1);
    s = stage_stream(ctx, p->pDmaBuffer, bytes, refs, nrefs, 1, 0,
                     bytes > sizeof(struct aerogpu_cmd_stream_header) ? req.handle_base : 0);
    if (!NT_SUCCESS(s)) return s;
    p->pDmaBuffer = (UCHAR *)p->pDmaBuffer + bytes;
    if (next < agpu_present_rect_count(&req)) {
        p->MultipassOffset = next;
        return STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER;
    }
    return STATUS_SUCCESS;
}

/* Frees staged submissions whose fence completed (all = teardown/reset). Caller holds
 * submit_lock. */
void agpu_retire_completed(agpu_adapter *a, int all)
{
    uint32_t i = 0;
    while (i < a->inflight_count) {
        agpu_pending *p = a->inflight[i];
        if (all || p->desc.signal_fence <= a->last_completed_fence) {
            /* A runtime present the device refused may have left textures behind. */
            if (p->present_handles && a->error_irq_count && p->desc.signal_fence == a->last_error_fence)
                agpu_present_slots_lose(&a->present_slots, p->present_handles);
            free_pending(p);
            a->inflight[i] = a->inflight[--a->inflight_count];
        } else {
            i++;
        }
    }
}

/* Pushes desc; on success the staging p (may be NULL) is owned by the in-flight list. */
static NTSTATUS push_locked(agpu_adapter *a, struct aerogpu_submit_desc *desc, agpu_pending *p)
{
    agpu_status st;
    if (!a->in_d0 || !a->ring_va) return STATUS_DEVICE_NOT_READY;
    agpu_retire_completed(a, 0);
    if (p && a->inflight_count >= AGPU_RING_ENTRIES) return STATUS_DEVICE_BUSY;
    st = agpu_ring_push(&a->ring, desc, &a->mmio);
    if (st != AGPU_OK) return agpu_status_to_nt(st);
    if (desc->signal_fence > a->last_submitted_fence) a->last_submitted_fence = desc->signal_fence;
    if (p) {
        p->desc.signal_fence = desc->signal_fence;
        a->inflight[a->inflight_count++] = p;
    }
    return STATUS_SUCCESS;
}

NTSTATUS AEROGPU_DDI AgpuSubmitCommand(HANDLE hAdapter, const void *pArgs)
{
    agpu_adapter *a = (agpu_adapter *)hAdapter;
    const DXGKARG_SUBMITCOMMAND *s = (const DXGKARG_SUBMITCOMMAND *)pArgs;
    agpu_context *ctx = (agpu_context *)s->hContext;
    agpu_pending *p = NULL;
    struct aerogpu_submit_desc desc;
    KIRQL irql;
    NTSTATUS st;
    uint64_t fence;
    KeAcquireSpinLock(&a->submit_lock, &irql);
    fence = agpu_fence_widen(a->last_submitted_fence, s->SubmissionFenceId);
    if (ctx && !(s->Flags & DXGK_SUBMITCOMMANDFLAGS_PAGING) && ctx->head != ctx->tail)
        p = ctx->pending[ctx->head++ % AGPU_PENDING_PER_CONTEXT];
    if (p) {
        desc = p->desc;
    } else {
        /* Paging buffers (always empty) and submissions without staged work: an empty
         * descriptor still completes the fence. */
        agpu_submit_desc_fill(&desc, 0, 0, 0, 0, 0, 0);
        if (ctx) desc.context_id = ctx->id;
    }
    desc.signal_fence = fence;
    st = push_locked(a, &desc, p);
    KeReleaseSpinLock(&a->submit_lock, irql);
    if (!NT_SUCCESS(st) && p) free_pending(p);
    return st;
}

NTSTATUS agpu_submit_internal(agpu_adapter *a, const void *stream, uint32_t bytes)
{
    PHYSICAL_ADDRESS pa;
    struct aerogpu_submit_desc desc;
    agpu_pending *p;
    KIRQL irql;
    NTSTATUS st;
    uint32_t conflict;
    p = (agpu_pending *)ExAllocatePoolWithTag(NonPagedPool, sizeof(*p), AGPU_POOL_TAG);
    if (!p) return STATUS_NO_MEMORY;
    RtlZeroMemory(p, sizeof(*p));
    p->stage.size_bytes = agpu_submit_stage_bytes(bytes, 0);
    p->stage.va = (uint8_t *)MmAllocateContiguousMemory(p->stage.size_bytes, (PHYSICAL_ADDRESS){.QuadPart = -1});
    if (!p->stage.va) { free_pending(p); return STATUS_NO_MEMORY; }
    pa = MmGetPhysicalAddress(p->stage.va);
    p->stage.gpa = (uint64_t)pa.QuadPart;
    if (agpu_submit_stage(stream, bytes, a->config.max_dma_buffer_bytes, NULL, 0, &p->stage, 0, 0, &desc,
                          &conflict) != AGPU_OK) {
        free_pending(p);
        return STATUS_INVALID_PARAMETER;
    }
    KeAcquireSpinLock(&a->submit_lock, &irql);
    /* Internal submissions reuse the last fence value with NO_IRQ: dxgkrnl never sees
     * them, and the staging retires with that fence (completion is in order). */
    desc.signal_fence = a->last_submitted_fence;
    desc.flags |= AEROGPU_SUBMIT_FLAG_NO_IRQ;
    st = push_locked(a, &desc, p);
    KeReleaseSpinLock(&a->submit_lock, irql);
    if (!NT_SUCCESS(st)) free_pending(p);
    return st;
}
