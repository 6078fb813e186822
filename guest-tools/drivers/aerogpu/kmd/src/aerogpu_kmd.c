/* DriverEntry, adapter lifetime, interrupts, power, adapter info, display (scanout,
 * cursor, scanline), escapes, and the remaining DDI table slots.
 * UNTESTED ON WINDOWS (see aerogpu_kmd.h). */
#include "aerogpu_kmd.h"

UNICODE_STRING g_agpu_registry_path;
static WCHAR g_registry_path_buf[260];

NTSTATUS agpu_status_to_nt(agpu_status s)
{
    switch (s) {
    case AGPU_OK: return STATUS_SUCCESS;
    case AGPU_ERR_BUFFER_TOO_SMALL: return STATUS_BUFFER_TOO_SMALL;
    case AGPU_ERR_NOT_SUPPORTED: return STATUS_NOT_SUPPORTED;
    case AGPU_ERR_ACCESS_DENIED: return STATUS_ACCESS_DENIED;
    case AGPU_ERR_RING_FULL: return STATUS_DEVICE_BUSY;
    case AGPU_ERR_DEVICE_NOT_READY: return STATUS_DEVICE_NOT_READY;
    case AGPU_ERR_NO_RESOURCES: return STATUS_INSUFFICIENT_RESOURCES;
    case AGPU_ERR_ABI_MISMATCH: return STATUS_NOT_SUPPORTED;
    default: return STATUS_INVALID_PARAMETER;
    }
}

/* ---- BAR0 access ---------------------------------------------------------------------- */
static uint32_t mmio_read(void *ctx, uint32_t off)
{
    agpu_adapter *a = (agpu_adapter *)ctx;
    if (!a->bar0 || off + 4 > a->bar0_len) return 0;
    return a->bar0[off / 4];
}

static void mmio_write(void *ctx, uint32_t off, uint32_t v)
{
    agpu_adapter *a = (agpu_adapter *)ctx;
    if (!a->bar0 || off + 4 > a->bar0_len) return;
    a->bar0[off / 4] = v;
}

/* ---- Registry ------------------------------------------------------------------------ */
static ULONG read_param(HANDLE key, PCWSTR name)
{
    UNICODE_STRING n;
    UCHAR buf[sizeof(KEY_VALUE_PARTIAL_INFORMATION) + sizeof(ULONG)];
    PKEY_VALUE_PARTIAL_INFORMATION info = (PKEY_VALUE_PARTIAL_INFORMATION)buf;
    ULONG got = 0;
    RtlInitUnicodeString(&n, name);
    if (!NT_SUCCESS(ZwQueryValueKey(key, &n, KeyValuePartialInformation, info, sizeof(buf), &got)))
        return 0;
    if (info->Type != REG_DWORD || info->DataLength != sizeof(ULONG)) return 0;
    return *(ULONG *)info->Data;
}

static HANDLE open_subkey(HANDLE parent, PCWSTR name, PUNICODE_STRING abs_path)
{
    OBJECT_ATTRIBUTES oa;
    UNICODE_STRING n;
    HANDLE h = NULL;
    if (abs_path) {
        InitializeObjectAttributes(&oa, abs_path, OBJ_CASE_INSENSITIVE | OBJ_KERNEL_HANDLE, NULL, NULL);
    } else {
        RtlInitUnicodeString(&n, name);
        InitializeObjectAttributes(&oa, &n, OBJ_CASE_INSENSITIVE | OBJ_KERNEL_HANDLE, parent, NULL);
    }
    if (!NT_SUCCESS(ZwOpenKey(&h, KEY_READ, &oa))) return NULL;
    return h;
}

static void load_config(agpu_adapter *a)
{
    agpu_registry_raw raw;
    HANDLE svc, params, hkr, hkr_params;
    RtlZeroMemory(&raw, sizeof(raw));
    svc = open_subkey(NULL, NULL, &g_agpu_registry_path);
    if (svc) {
        params = open_subkey(svc, L"Parameters", NULL);
        if (params) {
            raw.preferred_width = read_param(params, L"PreferredWidth");
            raw.preferred_height = read_param(params, L"PreferredHeight");
            raw.max_width = read_param(params, L"MaxWidth");
            raw.max_height = read_param(params, L"MaxHeight");
            raw.max_dma_buffer_bytes = read_param(params, L"MaxDmaBufferBytes");
            raw.enable_read_gpa_escape = read_param(params, L"EnableReadGpaEscape");
            raw.enable_map_shared_handle_escape = read_param(params, L"EnableMapSharedHandleEscape");
            ZwClose(params);
        }
        ZwClose(svc);
    }
    if (NT_SUCCESS(IoOpenDeviceRegistryKey(a->pdo, PLUGPLAY_REGKEY_DRIVER, KEY_READ, &hkr))) {
        hkr_params = open_subkey(hkr, L"Parameters", NULL);
        if (hkr_params) {
            raw.non_local_memory_size_mb = read_param(hkr_params, L"NonLocalMemorySizeMB");
            ZwClose(hkr_params);
        }
        ZwClose(hkr);
    }
    agpu_config_from_registry(&raw, sizeof(void *) == 8, &a->config);
}

/* ---- Lifetime -------------------------------------------------------------------------- */
static NTSTATUS AEROGPU_DDI AgpuAddDevice(PDEVICE_OBJECT pdo, PVOID *ctx)
{
    agpu_adapter *a;
    if (!pdo || !ctx) return STATUS_INVALID_PARAMETER;
    a = (agpu_adapter *)ExAllocatePoolWithTag(NonPagedPool, sizeof(*a), AGPU_POOL_TAG);
    if (!a) return STATUS_INSUFFICIENT_RESOURCES;
    RtlZeroMemory(a, sizeof(*a));
    a->pdo = pdo;
    a->mmio.ctx = a;
    a->mmio.read32 = mmio_read;
    a->mmio.write32 = mmio_write;
    a->next_kmd_alloc_id = AEROGPU_WDDM_ALLOC_ID_KMD_MIN;
    KeInitializeSpinLock(&a->submit_lock);
    *ctx = a;
    return STATUS_SUCCESS;
}

static void *alloc_contiguous(SIZE_T bytes, PHYSICAL_ADDRESS *pa)
{
    PHYSICAL_ADDRESS high;
    void *va;
    high.QuadPart = -1;
    va = MmAllocateContiguousMemory(bytes, high);
    if (!va) return NULL;
    RtlZeroMemory(va, bytes);
    *pa = MmGetPhysicalAddress(va);
    return va;
}

static void free_resources(agpu_adapter *a)
{
    if (a->bar0 && a->in_d0) agpu_power_down(&a->mmio, a->info.features);
    agpu_retire_completed(a, 1); /* the device is stopped: nothing reads staging now */
    if (a->ring_va) MmFreeContiguousMemory(a->ring_va);
    if (a->fence_page) MmFreeContiguousMemory(a->fence_page);
    if (a->cursor_va) MmFreeContiguousMemory(a->cursor_va);
    if (a->gart) MmFreeContiguousMemory(a->gart);
    a->gart = NULL;
    a->gart_entries = 0;
    if (a->bar0) MmUnmapIoSpace((PVOID)a->bar0, a->bar0_len);
    if (a->shares) ExFreePoolWithTag(a->shares, AGPU_POOL_TAG);
    a->ring_va = NULL; a->fence_page = NULL; a->cursor_va = NULL; a->bar0 = NULL; a->shares = NULL;
    a->started = 0;
}

/* Walks the translated resource list as it lies in memory: each full descriptor is
 * followed directly by its Count partial descriptors. Both arrays are declared with one
 * element, so indexing them past [0] is undefined and GCC really does drop the inner loop
 * (found by running this driver on Aero's CPU): walk with a byte pointer instead. */
static NTSTATUS find_bar0(agpu_adapter *a, PCM_RESOURCE_LIST list)
{
    const UCHAR *p;
    ULONG i, j, n;
    if (!list) return STATUS_DEVICE_CONFIGURATION_ERROR;
    p = (const UCHAR *)list + FIELD_OFFSET(CM_RESOURCE_LIST, List);
    for (i = 0; i < list->Count; i++) {
        n = ((const CM_FULL_RESOURCE_DESCRIPTOR *)p)->PartialResourceList.Count;
        p += FIELD_OFFSET(CM_FULL_RESOURCE_DESCRIPTOR, PartialResourceList.PartialDescriptors);
        for (j = 0; j < n; j++, p += sizeof(CM_PARTIAL_RESOURCE_DESCRIPTOR)) {
            const CM_PARTIAL_RESOURCE_DESCRIPTOR *d = (const CM_PARTIAL_RESOURCE_DESCRIPTOR *)p;
            /* BAR0 is the memory range of exactly the register block's size; the LFB BAR
             * and the legacy VGA window (0xA0000, 128 KiB) are larger. */
            if (d->Type == CmResourceTypeMemory && d->u.Memory.Length == AEROGPU_PCI_BAR0_SIZE_BYTES) {
                a->bar0_pa = d->u.Memory.Start;
                a->bar0_len = AEROGPU_PCI_BAR0_SIZE_BYTES;
                return STATUS_SUCCESS;
            }
        }
    }
    return STATUS_DEVICE_CONFIGURATION_ERROR;
}

static NTSTATUS program_device(agpu_adapter *a)
{
    uint32_t start = a->ring.tail;
    agpu_status st = agpu_ring_init(&a->ring, a->ring_va, (uint64_t)a->ring_pa.QuadPart,
                                    (uint32_t)AGPU_RING_ALLOC_BYTES, AGPU_RING_ENTRIES, start);
    if (st != AGPU_OK) return agpu_status_to_nt(st);
    agpu_ring_program(&a->ring, &a->mmio,
                      (a->info.features & AEROGPU_FEATURE_FENCE_PAGE) ? (uint64_t)a->fence_pa.QuadPart : 0);
    if (a->gart) {
        agpu_wr(&a->mmio, AEROGPU_MMIO_REG_GART_GPA_LO, (uint32_t)a->gart_pa.QuadPart);
        agpu_wr(&a->mmio, AEROGPU_MMIO_REG_GART_GPA_HI, (uint32_t)((uint64_t)a->gart_pa.QuadPart >> 32));
        agpu_wr(&a->mmio, AEROGPU_MMIO_REG_GART_ENTRIES, a->gart_entries);
    }
    agpu_wr(&a->mmio, AEROGPU_MMIO_REG_IRQ_ENABLE, a->irq_mask);
    return STATUS_SUCCESS;
}

static NTSTATUS AEROGPU_DDI AgpuStartDevice(PVOID ctx, DXGK_START_INFO *start, DXGKRNL_INTERFACE *dxgk,
                                            PULONG sources, PULONG children)
{
    agpu_adapter *a = (agpu_adapter *)ctx;
    DXGK_DEVICE_INFO di;
    agpu_edid_modes em;
    agpu_status st;
    NTSTATUS s;
    (void)start;
    if (!a || !dxgk || !sources || !children) return STATUS_INVALID_PARAMETER;
    a->dxgk = *dxgk;
    RtlZeroMemory(&di, sizeof(di));
    s = a->dxgk.DxgkCbGetDeviceInformation(a->dxgk.DeviceHandle, &di);
    if (!NT_SUCCESS(s)) return s;
    s = find_bar0(a, di.TranslatedResourceList);
    if (!NT_SUCCESS(s)) return s;
    a->bar0 = (volatile uint32_t *)MmMapIoSpace(a->bar0_pa, a->bar0_len, MmNonCached);
    if (!a->bar0) return STATUS_INSUFFICIENT_RESOURCES;
    st = agpu_probe(&a->mmio, &a->info);
    if (st != AGPU_OK) {
        /* Foreign magic or a different ABI major: refuse (the legacy ABI is not built). */
        AGPU_LOG("probe failed: magic %08x abi %08x\n", a->info.magic, a->info.abi_version);
        free_resources(a);
        return STATUS_NOT_SUPPORTED;
    }
    load_config(a);
    agpu_edid_builtin(a->edid);
    agpu_edid_parse(a->edid, sizeof(a->edid), &em);
    a->mode_count = agpu_build_mode_list(&em, a->config.preferred_width, a->config.preferred_height,
                                         a->config.max_width, a->config.max_height, a->modes, AGPU_MAX_MODES);
    a->shares = (agpu_share_table *)ExAllocatePoolWithTag(NonPagedPool, sizeof(agpu_share_table), AGPU_POOL_TAG);
    a->ring_va = alloc_contiguous(AGPU_RING_ALLOC_BYTES, &a->ring_pa);
    a->fence_page = (struct aerogpu_fence_page *)alloc_contiguous(PAGE_SIZE, &a->fence_pa);
    a->cursor_va = alloc_contiguous(AEROGPU_CURSOR_MAX_DIM * AEROGPU_CURSOR_MAX_DIM * 4, &a->cursor_pa);
    if (a->info.features & AEROGPU_FEATURE_GART) {
        /* One entry per page of the aperture segment (NonLocalMemorySizeMB). */
        uint32_t entries = a->config.non_local_memory_size_mb * (1024u * 1024u / PAGE_SIZE);
        if (entries > AEROGPU_GART_MAX_ENTRIES) entries = AEROGPU_GART_MAX_ENTRIES;
        a->gart = (uint64_t *)alloc_contiguous((SIZE_T)entries * sizeof(uint64_t), &a->gart_pa);
        a->gart_entries = a->gart ? entries : 0;
    }
    if (!a->shares || !a->ring_va || !a->fence_page || !a->cursor_va ||
        ((a->info.features & AEROGPU_FEATURE_GART) && !a->gart)) {
        free_resources(a);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    {
        LARGE_INTEGER t;
        KeQuerySystemTime(&t);
        agpu_share_init(a->shares, (uint64_t)t.QuadPart ^ (uint64_t)(ULONG_PTR)a);
    }
    a->irq_mask = agpu_irq_mask(a->info.features, 0);
    a->in_d0 = 1;
    s = program_device(a);
    if (!NT_SUCCESS(s)) {
        free_resources(a);
        return s;
    }
    a->started = 1;
    *sources = 1;
    *children = 1;
    return STATUS_SUCCESS;
}

static NTSTATUS AEROGPU_DDI AgpuStopDevice(PVOID ctx)
{
    agpu_adapter *a = (agpu_adapter *)ctx;
    if (a) free_resources(a);
    return STATUS_SUCCESS;
}

static NTSTATUS AEROGPU_DDI AgpuRemoveDevice(PVOID ctx)
{
    agpu_adapter *a = (agpu_adapter *)ctx;
    if (a) {
        free_resources(a);
        ExFreePoolWithTag(a, AGPU_POOL_TAG);
    }
    return STATUS_SUCCESS;
}

static NTSTATUS AEROGPU_DDI AgpuDispatchIoRequest(PVOID ctx, ULONG source, PVOID vrp)
{
    (void)ctx; (void)source; (void)vrp;
    return STATUS_NOT_SUPPORTED;
}

/* ---- Interrupts ---------------------------------------------------------------------- */
static BOOLEAN AEROGPU_DDI AgpuInterruptRoutine(PVOID ctx, ULONG message)
{
    agpu_adapter *a = (agpu_adapter *)ctx;
    agpu_irq_result r;
    DXGKARGCB_NOTIFY_INTERRUPT_DATA n;
    (void)message;
    if (!a || !a->started || !a->in_d0) return FALSE;
    if (!agpu_isr(&a->mmio, a->irq_mask, a->info.features, &r)) return FALSE;
    if (r.status & AEROGPU_IRQ_ERROR) {
        /* The device completed the failing submission's fence anyway and keeps running:
         * record it for dbgctl instead of faulting (which would trigger a TDR). */
        a->error_irq_count++;
        a->last_error_fence = r.error_fence;
    }
    if (r.status & (AEROGPU_IRQ_FENCE | AEROGPU_IRQ_ERROR)) {
        if (r.completed_fence > a->last_completed_fence) a->last_completed_fence = r.completed_fence;
        RtlZeroMemory(&n, sizeof(n));
        n.InterruptType = DXGK_INTERRUPT_DMA_COMPLETED;
        n.DmaCompleted.SubmissionFenceId = (UINT)a->last_completed_fence;
        a->dxgk.DxgkCbNotifyInterrupt(a->dxgk.DeviceHandle, &n);
    }
    if ((r.status & AEROGPU_IRQ_SCANOUT_VBLANK) && a->vblank_requested) {
        RtlZeroMemory(&n, sizeof(n));
        n.InterruptType = DXGK_INTERRUPT_CRTC_VSYNC;
        n.CrtcVsync.VidPnSourceId = 0;
        n.CrtcVsync.PhysicalAddress.QuadPart = (LONGLONG)a->scanout.fb_gpa;
        a->dxgk.DxgkCbNotifyInterrupt(a->dxgk.DeviceHandle, &n);
    }
    a->dxgk.DxgkCbQueueDpc(a->dxgk.DeviceHandle);
    return TRUE;
}

static VOID AEROGPU_DDI AgpuDpcRoutine(PVOID ctx)
{
    agpu_adapter *a = (agpu_adapter *)ctx;
    KIRQL irql;
    if (!a || !a->started) return;
    a->dxgk.DxgkCbNotifyDpc(a->dxgk.DeviceHandle);
    KeAcquireSpinLock(&a->submit_lock, &irql);
    agpu_retire_completed(a, 0);
    KeReleaseSpinLock(&a->submit_lock, irql);
}

static NTSTATUS AEROGPU_DDI AgpuControlInterrupt(HANDLE hAdapter, DXGK_INTERRUPT_TYPE type, BOOLEAN enable)
{
    agpu_adapter *a = (agpu_adapter *)hAdapter;
    if (type != DXGK_INTERRUPT_CRTC_VSYNC) return STATUS_NOT_IMPLEMENTED;
    if (!(a->info.features & AEROGPU_FEATURE_VBLANK)) return STATUS_NOT_SUPPORTED;
    a->vblank_requested = enable ? 1 : 0;
    a->irq_mask = agpu_irq_mask(a->info.features, a->vblank_requested);
    if (a->in_d0) agpu_wr(&a->mmio, AEROGPU_MMIO_REG_IRQ_ENABLE, a->irq_mask);
    return STATUS_SUCCESS;
}

/* ---- Children ------------------------------------------------------------------------- */
static NTSTATUS AEROGPU_DDI AgpuQueryChildRelations(PVOID ctx, DXGK_CHILD_DESCRIPTOR *rel, ULONG size)
{
    (void)ctx;
    if (!rel || size < 2 * sizeof(DXGK_CHILD_DESCRIPTOR)) return STATUS_BUFFER_TOO_SMALL;
    RtlZeroMemory(rel, sizeof(DXGK_CHILD_DESCRIPTOR));
    rel[0].ChildDeviceType = TypeVideoOutput;
    rel[0].ChildCapabilities.Type.VideoOutput.InterfaceTechnology = D3DKMDT_VOT_HD15;
    rel[0].ChildCapabilities.Type.VideoOutput.MonitorOrientationAwareness = D3DKMDT_MOA_NONE;
    rel[0].ChildCapabilities.HpdAwareness = HpdAwarenessAlwaysConnected;
    rel[0].AcpiUid = 0;
    rel[0].ChildUid = 0;
    return STATUS_SUCCESS;
}

static NTSTATUS AEROGPU_DDI AgpuQueryChildStatus(PVOID ctx, DXGK_CHILD_STATUS *cs, BOOLEAN nondestructive)
{
    (void)ctx; (void)nondestructive;
    if (!cs || cs->ChildUid != 0) return STATUS_INVALID_PARAMETER;
    if (cs->Type == StatusConnection) { cs->HotPlug.Connected = TRUE; return STATUS_SUCCESS; }
    if (cs->Type == StatusRotation) { cs->Rotation.Angle = 0; return STATUS_SUCCESS; }
    return STATUS_NOT_SUPPORTED;
}

static NTSTATUS AEROGPU_DDI AgpuQueryDeviceDescriptor(PVOID ctx, ULONG child, DXGK_DEVICE_DESCRIPTOR *d)
{
    agpu_adapter *a = (agpu_adapter *)ctx;
    if (!d || child != 0) return STATUS_INVALID_PARAMETER;
    if (d->DescriptorOffset >= AGPU_EDID_SIZE) return STATUS_MONITOR_NO_MORE_DESCRIPTOR_DATA;
    {
        ULONG n = AGPU_EDID_SIZE - d->DescriptorOffset;
        if (n > d->DescriptorLength) n = d->DescriptorLength;
        RtlCopyMemory(d->DescriptorBuffer, a->edid + d->DescriptorOffset, n);
        d->DescriptorLength = n;
    }
    return STATUS_SUCCESS;
}

/* ---- Power --------------------------------------------------------------------------- */
static NTSTATUS AEROGPU_DDI AgpuSetPowerState(PVOID ctx, ULONG uid, DEVICE_POWER_STATE state, POWER_ACTION action)
{
    agpu_adapter *a = (agpu_adapter *)ctx;
    KIRQL irql;
    (void)action;
    if (!a || !a->started) return STATUS_SUCCESS;
    if (uid != 0xFFFFFFFFu) return STATUS_SUCCESS; /* DISPLAY_ADAPTER_HW_ID; else the monitor child */
    KeAcquireSpinLock(&a->submit_lock, &irql);
    if (state != PowerDeviceD0) {
        a->in_d0 = 0; /* blocks ring pushes */
        agpu_power_down(&a->mmio, a->info.features);
    } else if (!a->in_d0) {
        /* Virtual reset: in-flight work counts as done, the ring starts over at tail. */
        a->last_completed_fence = a->last_submitted_fence;
        agpu_retire_completed(a, 1);
        (void)program_device(a); /* cannot fail: the same ring StartDevice accepted */
        agpu_wr(&a->mmio, AEROGPU_MMIO_REG_RING_CONTROL, AEROGPU_RING_CONTROL_RESET | AEROGPU_RING_CONTROL_ENABLE);
        agpu_scanout_program(&a->mmio, &a->scanout);
        if (a->info.features & AEROGPU_FEATURE_CURSOR) agpu_cursor_program(&a->mmio, &a->cursor);
        a->in_d0 = 1;
    }
    KeReleaseSpinLock(&a->submit_lock, irql);
    return STATUS_SUCCESS;
}

static NTSTATUS AEROGPU_DDI AgpuNotifyAcpiEvent(PVOID ctx, DXGK_EVENT_TYPE t, ULONG e, PVOID arg, PULONG flags)
{
    (void)ctx; (void)t; (void)e; (void)arg;
    if (flags) *flags = 0;
    return STATUS_SUCCESS;
}

static VOID AEROGPU_DDI AgpuResetDevice(PVOID ctx)
{
    /* Bugcheck path: stop DMA, nothing else (no locks, no allocation). */
    agpu_adapter *a = (agpu_adapter *)ctx;
    if (a && a->bar0) agpu_power_down(&a->mmio, a->info.features);
}

static VOID AEROGPU_DDI AgpuUnload(VOID) {}

static NTSTATUS AEROGPU_DDI AgpuQueryInterface(PVOID ctx, PVOID qi)
{
    (void)ctx; (void)qi;
    return STATUS_NOT_SUPPORTED;
}

static VOID AEROGPU_DDI AgpuControlEtwLogging(BOOLEAN enable, ULONG flags, UCHAR level)
{
    (void)enable; (void)flags; (void)level;
}

/* ---- Adapter info ----------------------------------------------------------------------- */
static NTSTATUS AEROGPU_DDI AgpuQueryAdapterInfo(HANDLE hAdapter, const void *pArgs)
{
    agpu_adapter *a = (agpu_adapter *)hAdapter;
    const DXGKARG_QUERYADAPTERINFO *q = (const DXGKARG_QUERYADAPTERINFO *)pArgs;
    switch (q->Type) {
    case DXGKQAITYPE_DRIVERCAPS: {
        DXGK_DRIVERCAPS *c = (DXGK_DRIVERCAPS *)q->pOutputData;
        if (q->OutputDataSize < sizeof(*c)) return STATUS_BUFFER_TOO_SMALL;
        RtlZeroMemory(q->pOutputData, q->OutputDataSize);
        c->HighestAcceptableAddress.QuadPart = -1;
        c->MaxAllocationListSlotId = AGPU_ALLOCATION_LIST_SIZE;
        c->ApertureSegmentCommitLimit = (SIZE_T)a->config.non_local_memory_size_mb << 20;
        if (a->info.features & AEROGPU_FEATURE_CURSOR) {
            c->MaxPointerWidth = AEROGPU_CURSOR_MAX_DIM;
            c->MaxPointerHeight = AEROGPU_CURSOR_MAX_DIM;
            c->PointerCaps = DXGK_POINTERFLAGS_COLOR | DXGK_POINTERFLAGS_MASKEDCOLOR;
        }
        c->PresentationCaps = DXGK_PRESENTATIONCAPS_NOSCREENTOSCREENBLT | DXGK_PRESENTATIONCAPS_NOOVERLAPSCREENBLT;
        c->MaxQueuedFlipOnVSync = 1;
        c->GpuEngineTopology = 1;
        return STATUS_SUCCESS;
    }
    case DXGKQAITYPE_QUERYSEGMENT: {
        DXGK_QUERYSEGMENTOUT *o = (DXGK_QUERYSEGMENTOUT *)q->pOutputData;
        if (q->OutputDataSize < sizeof(*o)) return STATUS_BUFFER_TOO_SMALL;
        if (!o->pSegmentDescriptor) {
            o->NbSegment = 1;
            return STATUS_SUCCESS;
        }
        /* One aperture segment backed by guest RAM: the budget is NonLocalMemorySizeMB. */
        RtlZeroMemory(o->pSegmentDescriptor, sizeof(DXGK_SEGMENTDESCRIPTOR));
        /* With a GART the segment's GPU addresses are the device's aperture window. */
        o->pSegmentDescriptor[0].BaseAddress.QuadPart =
            a->gart ? (LONGLONG)AEROGPU_APERTURE_BASE : 0x100000000LL;
        o->pSegmentDescriptor[0].Size = (SIZE_T)a->config.non_local_memory_size_mb << 20;
        o->pSegmentDescriptor[0].CommitLimit = o->pSegmentDescriptor[0].Size;
        o->pSegmentDescriptor[0].Flags = DXGK_SEGMENTFLAGS_APERTURE | DXGK_SEGMENTFLAGS_CPUVISIBLE |
                                         DXGK_SEGMENTFLAGS_CACHECOHERENT;
        o->NbSegment = 1;
        o->PagingBufferSegmentId = 0;
        o->PagingBufferSize = PAGE_SIZE;
        o->PagingBufferPrivateDataSize = 0;
        return STATUS_SUCCESS;
    }
    case DXGKQAITYPE_UMDRIVERPRIVATE: {
        /* The UMD learns the device ABI and features. */
        struct aerogpu_escape_query_device_v2_out *o = (struct aerogpu_escape_query_device_v2_out *)q->pOutputData;
        if (q->OutputDataSize < sizeof(*o)) return STATUS_BUFFER_TOO_SMALL;
        RtlZeroMemory(o, sizeof(*o));
        o->hdr.version = AEROGPU_ESCAPE_VERSION;
        o->hdr.op = AEROGPU_ESCAPE_OP_QUERY_DEVICE_V2;
        o->hdr.size_bytes = sizeof(*o);
        o->detected_mmio_magic = a->info.magic;
        o->abi_version_u32 = a->info.abi_version;
        o->features = a->info.features;
        return STATUS_SUCCESS;
    }
    default:
        return STATUS_NOT_SUPPORTED;
    }
}

/* ---- Devices ------------------------------------------------------------------------- */
static NTSTATUS AEROGPU_DDI AgpuCreateDevice(HANDLE hAdapter, void *pArgs)
{
    DXGKARG_CREATEDEVICE *c = (DXGKARG_CREATEDEVICE *)pArgs;
    agpu_device_ctx *d = (agpu_device_ctx *)ExAllocatePoolWithTag(NonPagedPool, sizeof(*d), AGPU_POOL_TAG);
    if (!d) return STATUS_NO_MEMORY;
    d->adapter = (agpu_adapter *)hAdapter;
    d->dxgk_device = c->hDevice;
    c->hDevice = d;
    if (c->pInfo) {
        RtlZeroMemory(c->pInfo, sizeof(*c->pInfo));
        c->pInfo->DmaBufferSize = AGPU_DMA_BUFFER_SIZE;
        c->pInfo->AllocationListSize = AGPU_ALLOCATION_LIST_SIZE;
        c->pInfo->DmaBufferPrivateDataSize = 16;
    }
    return STATUS_SUCCESS;
}

static NTSTATUS AEROGPU_DDI AgpuDestroyDevice(HANDLE hDevice)
{
    if (hDevice) ExFreePoolWithTag(hDevice, AGPU_POOL_TAG);
    return STATUS_SUCCESS;
}

/* ---- Display: scanout, visibility, cursor, scanline ------------------------------------ */
static NTSTATUS AEROGPU_DDI AgpuSetVidPnSourceAddress(HANDLE hAdapter, const void *pArgs)
{
    agpu_adapter *a = (agpu_adapter *)hAdapter;
    const DXGKARG_SETVIDPNSOURCEADDRESS *s = (const DXGKARG_SETVIDPNSOURCEADDRESS *)pArgs;
    agpu_allocation *alloc = agpu_allocation_from_handle(s->hAllocation);
    if (s->VidPnSourceId != 0) return STATUS_INVALID_PARAMETER;
    a->scanout.fb_gpa = alloc ? alloc->gpa : 0;
    if (alloc && alloc->pitch) a->scanout.pitch = alloc->pitch;
    a->scanout.enable = a->source_visible && a->scanout.fb_gpa != 0;
    if (a->in_d0) agpu_scanout_program(&a->mmio, &a->scanout);
    return STATUS_SUCCESS;
}

static NTSTATUS AEROGPU_DDI AgpuSetVidPnSourceVisibility(HANDLE hAdapter, const void *pArgs)
{
    agpu_adapter *a = (agpu_adapter *)hAdapter;
    const DXGKARG_SETVIDPNSOURCEVISIBILITY *v = (const DXGKARG_SETVIDPNSOURCEVISIBILITY *)pArgs;
    if (v->VidPnSourceId != 0) return STATUS_INVALID_PARAMETER;
    a->source_visible = v->Visible ? 1 : 0;
    a->scanout.enable = a->source_visible && a->scanout.fb_gpa != 0;
    if (a->in_d0) agpu_scanout_program(&a->mmio, &a->scanout);
    return STATUS_SUCCESS;
}

static NTSTATUS AEROGPU_DDI AgpuSetPointerPosition(HANDLE hAdapter, const void *pArgs)
{
    agpu_adapter *a = (agpu_adapter *)hAdapter;
    const DXGKARG_SETPOINTERPOSITION *p = (const DXGKARG_SETPOINTERPOSITION *)pArgs;
    if (!(a->info.features & AEROGPU_FEATURE_CURSOR)) return STATUS_NOT_SUPPORTED;
    a->cursor.x = p->X;
    a->cursor.y = p->Y;
    a->cursor.enable = (p->Flags & 1) ? 1 : 0;
    if (a->in_d0) agpu_cursor_program(&a->mmio, &a->cursor);
    return STATUS_SUCCESS;
}

static NTSTATUS AEROGPU_DDI AgpuSetPointerShape(HANDLE hAdapter, const void *pArgs)
{
    agpu_adapter *a = (agpu_adapter *)hAdapter;
    const DXGKARG_SETPOINTERSHAPE *p = (const DXGKARG_SETPOINTERSHAPE *)pArgs;
    UINT y;
    if (!(a->info.features & AEROGPU_FEATURE_CURSOR)) return STATUS_NOT_SUPPORTED;
    /* Colour cursors only (ARGB 32bpp); monochrome falls back to the software cursor. */
    if (!(p->Flags & (DXGK_POINTERFLAGS_COLOR | DXGK_POINTERFLAGS_MASKEDCOLOR))) return STATUS_NOT_SUPPORTED;
    if (p->Width == 0 || p->Height == 0 || p->Width > AEROGPU_CURSOR_MAX_DIM ||
        p->Height > AEROGPU_CURSOR_MAX_DIM || p->Pitch < p->Width * 4 || !p->pPixels)
        return STATUS_INVALID_PARAMETER;
    for (y = 0; y < p->Height; y++)
        RtlCopyMemory((UCHAR *)a->cursor_va + y * AEROGPU_CURSOR_MAX_DIM * 4,
                      (const UCHAR *)p->pPixels + (SIZE_T)y * p->Pitch, p->Width * 4);
    a->cursor.width = p->Width;
    a->cursor.height = p->Height;
    a->cursor.hot_x = p->XHot;
    a->cursor.hot_y = p->YHot;
    a->cursor.pitch = AEROGPU_CURSOR_MAX_DIM * 4;
    a->cursor.format = AEROGPU_FORMAT_B8G8R8A8_UNORM;
    a->cursor.fb_gpa = (uint64_t)a->cursor_pa.QuadPart;
    if (a->in_d0) agpu_cursor_program(&a->mmio, &a->cursor);
    return STATUS_SUCCESS;
}

static NTSTATUS AEROGPU_DDI AgpuGetScanLine(HANDLE hAdapter, void *pArgs)
{
    agpu_adapter *a = (agpu_adapter *)hAdapter;
    DXGKARG_GETSCANLINE *g = (DXGKARG_GETSCANLINE *)pArgs;
    uint64_t now_ns, elapsed;
    uint32_t period = AEROGPU_VBLANK_PERIOD_NS_60HZ, line;
    int vb;
    if (g->VidPnTargetId != 0) return STATUS_INVALID_PARAMETER;
    if ((a->info.features & AEROGPU_FEATURE_VBLANK) && a->in_d0 && a->scanout.enable) {
        /* Device time is not readable directly: estimate from the last vblank stamp and
         * the interrupt-time delta since we sampled it (approximate, as documented). */
        uint64_t last = agpu_read_reg64_stable(&a->mmio, AEROGPU_MMIO_REG_SCANOUT0_VBLANK_TIME_NS_LO,
                                               AEROGPU_MMIO_REG_SCANOUT0_VBLANK_TIME_NS_HI);
        uint32_t p = agpu_rd(&a->mmio, AEROGPU_MMIO_REG_SCANOUT0_VBLANK_PERIOD_NS);
        if (p) period = p;
        now_ns = (uint64_t)KeQueryInterruptTime() * 100u;
        elapsed = now_ns >= last ? now_ns - last : 0;
    } else {
        elapsed = (uint64_t)KeQueryInterruptTime() * 100u; /* synthetic cadence */
    }
    agpu_scanline(a->scanout.height ? a->scanout.height : 768, elapsed, period, &line, &vb);
    g->ScanLine = line;
    g->InVerticalBlank = vb ? TRUE : FALSE;
    return STATUS_SUCCESS;
}

/* ---- Fences, escape ----------------------------------------------------------------- */
static NTSTATUS AEROGPU_DDI AgpuQueryCurrentFence(HANDLE hAdapter, void *pArgs)
{
    agpu_adapter *a = (agpu_adapter *)hAdapter;
    DXGKARG_QUERYCURRENTFENCE *q = (DXGKARG_QUERYCURRENTFENCE *)pArgs;
    if (a->in_d0) {
        uint64_t f = agpu_read_reg64_stable(&a->mmio, AEROGPU_MMIO_REG_COMPLETED_FENCE_LO,
                                            AEROGPU_MMIO_REG_COMPLETED_FENCE_HI);
        if (f > a->last_completed_fence) a->last_completed_fence = f;
    }
    q->CurrentFence = (UINT)a->last_completed_fence;
    return STATUS_SUCCESS;
}

static int read_phys(uint64_t gpa, void *dst, uint32_t size)
{
    PHYSICAL_ADDRESS pa;
    void *va;
    pa.QuadPart = (LONGLONG)gpa;
    va = MmMapIoSpace(pa, size, MmCached);
    if (!va) return 0;
    RtlCopyMemory(dst, va, size);
    MmUnmapIoSpace(va, size);
    return 1;
}

/* READ_GPA: device addresses, so aperture ones (a primary's scanout) go through the GART
 * page by page, as the device reads them. */
static int read_gpa_cb(void *ctx, uint64_t gpa, void *dst, uint32_t size)
{
    agpu_adapter *a = (agpu_adapter *)ctx;
    uint8_t *out = (uint8_t *)dst;
    if (gpa < AEROGPU_APERTURE_BASE) return read_phys(gpa, dst, size);
    while (size) {
        uint64_t page = (gpa - AEROGPU_APERTURE_BASE) / PAGE_SIZE, entry;
        uint32_t in_page = (uint32_t)(gpa % PAGE_SIZE), n = PAGE_SIZE - in_page;
        if (!a->gart || page >= a->gart_entries) return 0;
        entry = a->gart[page];
        if (!(entry & AEROGPU_GART_ENTRY_VALID)) return 0;
        if (n > size) n = size;
        if (!read_phys((entry & ~(uint64_t)(PAGE_SIZE - 1)) + in_page, out, n)) return 0;
        out += n;
        gpa += n;
        size -= n;
    }
    return 1;
}

/* SELFTEST needs the live device, so the glue runs it: an empty internal submission,
 * then a wait (polling the ring head the device writes) until the device consumed it. */
static NTSTATUS selftest(agpu_adapter *a, void *buf, UINT size)
{
    struct aerogpu_escape_selftest_inout *o = (struct aerogpu_escape_selftest_inout *)buf;
    struct aerogpu_cmd_stream_header h;
    volatile const uint32_t *head;
    uint32_t errors, target, timeout_ms;
    uint64_t deadline;
    if (size < sizeof(*o)) return STATUS_BUFFER_TOO_SMALL;
    timeout_ms = o->timeout_ms ? o->timeout_ms : 1000u;
    if (timeout_ms > AEROGPU_DBGCTL_SELFTEST_MAX_TIMEOUT_MS) timeout_ms = AEROGPU_DBGCTL_SELFTEST_MAX_TIMEOUT_MS;
    o->hdr.size_bytes = sizeof(*o);
    o->passed = 0;
    o->error_code = 0;
    if (!a->started || !a->in_d0 || !a->ring_va) {
        o->error_code = AEROGPU_DBGCTL_SELFTEST_ERR_NOT_READY;
        return STATUS_SUCCESS;
    }
    errors = agpu_rd(&a->mmio, AEROGPU_MMIO_REG_ERROR_COUNT);
    RtlZeroMemory(&h, sizeof(h));
    h.magic = AEROGPU_CMD_STREAM_MAGIC;
    h.abi_version = AEROGPU_ABI_VERSION_U32;
    h.size_bytes = sizeof(h);
    if (!NT_SUCCESS(agpu_submit_internal(a, &h, sizeof(h)))) {
        o->error_code = AEROGPU_DBGCTL_SELFTEST_ERR_SUBMIT;
        return STATUS_SUCCESS;
    }
    target = a->ring.tail;
    /* Volatile: the device writes the head; the compiler must re-read it every pass. */
    head = (volatile const uint32_t *)((const uint8_t *)a->ring_va + offsetof(struct aerogpu_ring_header, head));
    deadline = (uint64_t)KeQueryInterruptTime() + (uint64_t)timeout_ms * 10000u;
    while (*head != target) {
        if ((uint64_t)KeQueryInterruptTime() > deadline) {
            o->error_code = AEROGPU_DBGCTL_SELFTEST_ERR_TIMEOUT;
            return STATUS_SUCCESS;
        }
    }
    if (agpu_rd(&a->mmio, AEROGPU_MMIO_REG_ERROR_COUNT) != errors) {
        o->error_code = AEROGPU_DBGCTL_SELFTEST_ERR_DEVICE_ERROR;
        return STATUS_SUCCESS;
    }
    o->passed = 1;
    return STATUS_SUCCESS;
}

/* MAP_SHARED_HANDLE: the object behind a handle of the calling process (the escape runs
 * in its context) gets a small token that is the same from every process holding a
 * handle to it, so bring-up tools can match shared surfaces across DWM and apps. */
static int map_shared_handle_cb(void *ctx, uint64_t handle, uint32_t *token)
{
    agpu_adapter *a = (agpu_adapter *)ctx;
    PVOID object = NULL;
    uint32_t i, slot = AGPU_MAX_MAPPED_HANDLES;
    if (handle == 0 || handle != (uint64_t)(ULONG_PTR)handle) return 0;
    if (!NT_SUCCESS(ObReferenceObjectByHandle((HANDLE)(ULONG_PTR)handle, 0, NULL, UserMode, &object, NULL)))
        return 0;
    for (i = 0; i < AGPU_MAX_MAPPED_HANDLES; i++) {
        if (a->mapped_objects[i] == object) { slot = i; break; }
        if (!a->mapped_objects[i] && slot == AGPU_MAX_MAPPED_HANDLES) slot = i;
    }
    if (slot < AGPU_MAX_MAPPED_HANDLES) {
        a->mapped_objects[slot] = object;
        *token = slot + 1;
    }
    ObDereferenceObject(object);
    return slot < AGPU_MAX_MAPPED_HANDLES;
}

static NTSTATUS AEROGPU_DDI AgpuEscape(HANDLE hAdapter, const void *pArgs)
{
    agpu_adapter *a = (agpu_adapter *)hAdapter;
    const DXGKARG_ESCAPE *e = (const DXGKARG_ESCAPE *)pArgs;
    agpu_escape_state s;
    LUID debug_priv;
    RtlZeroMemory(&s, sizeof(s));
    s.mmio_magic = a->info.magic;
    s.abi_version = a->info.abi_version;
    s.features = a->info.features;
    s.last_submitted_fence = a->last_submitted_fence;
    s.last_completed_fence = a->last_completed_fence;
    s.error_irq_count = a->error_irq_count;
    s.last_error_fence = a->last_error_fence;
    s.ring = a->ring_va ? &a->ring : NULL;
    s.irq_enable = a->irq_mask;
    if (a->in_d0) {
        /* Only touch MMIO in D0; otherwise answer from cached state. */
        s.irq_status = agpu_rd(&a->mmio, AEROGPU_MMIO_REG_IRQ_STATUS);
        s.vblank_seq = agpu_read_reg64_stable(&a->mmio, AEROGPU_MMIO_REG_SCANOUT0_VBLANK_SEQ_LO,
                                              AEROGPU_MMIO_REG_SCANOUT0_VBLANK_SEQ_HI);
        s.vblank_time_ns = agpu_read_reg64_stable(&a->mmio, AEROGPU_MMIO_REG_SCANOUT0_VBLANK_TIME_NS_LO,
                                                  AEROGPU_MMIO_REG_SCANOUT0_VBLANK_TIME_NS_HI);
        s.vblank_period_ns = agpu_rd(&a->mmio, AEROGPU_MMIO_REG_SCANOUT0_VBLANK_PERIOD_NS);
    }
    s.vblank_interrupt_type_valid = 1;
    s.vblank_interrupt_type = DXGK_INTERRUPT_CRTC_VSYNC;
    s.createalloc = &a->createalloc_trace;
    s.read_gpa_enabled = a->config.enable_read_gpa_escape;
    s.map_shared_handle_enabled = a->config.enable_map_shared_handle_escape;
    s.map_shared_handle = map_shared_handle_cb;
    s.map_ctx = a;
    debug_priv.LowPart = 20; /* SE_DEBUG_PRIVILEGE */
    debug_priv.HighPart = 0;
    s.caller_privileged = SeSinglePrivilegeCheck(debug_priv, UserMode) ? 1 : 0;
    if (a->ring_va) {
        s.regions[s.region_count].gpa = (uint64_t)a->ring_pa.QuadPart;
        s.regions[s.region_count++].size = a->ring.size_bytes;
    }
    if (a->scanout.fb_gpa) {
        s.regions[s.region_count].gpa = a->scanout.fb_gpa;
        s.regions[s.region_count++].size = (uint64_t)a->scanout.pitch * a->scanout.height;
    }
    if (a->cursor_va) {
        s.regions[s.region_count].gpa = (uint64_t)a->cursor_pa.QuadPart;
        s.regions[s.region_count++].size = AEROGPU_CURSOR_MAX_DIM * AEROGPU_CURSOR_MAX_DIM * 4;
    }
    s.read_gpa = read_gpa_cb;
    s.read_gpa_ctx = a;
    if (!e->pPrivateDriverData) return STATUS_INVALID_PARAMETER;
    if (e->PrivateDriverDataSize >= sizeof(struct aerogpu_escape_header)) {
        const struct aerogpu_escape_header *h = (const struct aerogpu_escape_header *)e->pPrivateDriverData;
        if (h->version == AEROGPU_ESCAPE_VERSION && h->op == AEROGPU_ESCAPE_OP_SELFTEST)
            return selftest(a, e->pPrivateDriverData, e->PrivateDriverDataSize);
    }
    return agpu_status_to_nt(agpu_escape_handle(&s, e->pPrivateDriverData, e->PrivateDriverDataSize));
}

/* ---- Slots AeroGPU does not use (each with the exact DDI signature) ------------------- */
static NTSTATUS AEROGPU_DDI AgpuNotSupportedArgs(HANDLE h, void *p) { (void)h; (void)p; return STATUS_NOT_SUPPORTED; }
static NTSTATUS AEROGPU_DDI AgpuNotSupportedConstArgs(HANDLE h, const void *p) { (void)h; (void)p; return STATUS_NOT_SUPPORTED; }
static NTSTATUS AEROGPU_DDI AgpuSuccessConstArgs(HANDLE h, const void *p) { (void)h; (void)p; return STATUS_SUCCESS; }
static NTSTATUS AEROGPU_DDI AgpuSuccessArgs(HANDLE h, void *p) { (void)h; (void)p; return STATUS_SUCCESS; }
static NTSTATUS AEROGPU_DDI AgpuNotSupportedHandle(HANDLE h) { (void)h; return STATUS_NOT_SUPPORTED; }
static NTSTATUS AEROGPU_DDI AgpuResetFromTimeout(HANDLE h)
{
    agpu_adapter *a = (agpu_adapter *)h;
    if (a->bar0) agpu_wr(&a->mmio, AEROGPU_MMIO_REG_RING_CONTROL, AEROGPU_RING_CONTROL_RESET | AEROGPU_RING_CONTROL_ENABLE);
    return STATUS_SUCCESS;
}
static NTSTATUS AEROGPU_DDI AgpuRestartFromTimeout(HANDLE h) { (void)h; return STATUS_SUCCESS; }
static NTSTATUS AEROGPU_DDI AgpuLinkDevice(PDEVICE_OBJECT pdo, PVOID ctx, PVOID linked)
{
    (void)pdo; (void)ctx; (void)linked;
    return STATUS_NOT_SUPPORTED;
}

NTSTATUS AEROGPU_DDI DriverEntry(PDRIVER_OBJECT drv, PUNICODE_STRING reg);

NTSTATUS AEROGPU_DDI DriverEntry(PDRIVER_OBJECT drv, PUNICODE_STRING reg)
{
    DRIVER_INITIALIZATION_DATA d;
    if (!drv || !reg) return STATUS_INVALID_PARAMETER;
    g_agpu_registry_path.Buffer = g_registry_path_buf;
    g_agpu_registry_path.Length = 0;
    g_agpu_registry_path.MaximumLength = sizeof(g_registry_path_buf);
    RtlCopyUnicodeString(&g_agpu_registry_path, reg);

    RtlZeroMemory(&d, sizeof(d));
    d.Version = DXGKDDI_INTERFACE_VERSION_WIN7;
    d.DxgkDdiAddDevice = AgpuAddDevice;
    d.DxgkDdiStartDevice = AgpuStartDevice;
    d.DxgkDdiStopDevice = AgpuStopDevice;
    d.DxgkDdiRemoveDevice = AgpuRemoveDevice;
    d.DxgkDdiDispatchIoRequest = AgpuDispatchIoRequest;
    d.DxgkDdiInterruptRoutine = AgpuInterruptRoutine;
    d.DxgkDdiDpcRoutine = AgpuDpcRoutine;
    d.DxgkDdiQueryChildRelations = AgpuQueryChildRelations;
    d.DxgkDdiQueryChildStatus = AgpuQueryChildStatus;
    d.DxgkDdiQueryDeviceDescriptor = AgpuQueryDeviceDescriptor;
    d.DxgkDdiSetPowerState = AgpuSetPowerState;
    d.DxgkDdiNotifyAcpiEvent = AgpuNotifyAcpiEvent;
    d.DxgkDdiResetDevice = AgpuResetDevice;
    d.DxgkDdiUnload = AgpuUnload;
    d.DxgkDdiQueryInterface = AgpuQueryInterface;
    d.DxgkDdiControlEtwLogging = AgpuControlEtwLogging;
    d.DxgkDdiQueryAdapterInfo = AgpuQueryAdapterInfo;
    d.DxgkDdiCreateDevice = AgpuCreateDevice;
    d.DxgkDdiCreateAllocation = AgpuCreateAllocation;
    d.DxgkDdiDestroyAllocation = AgpuDestroyAllocation;
    d.DxgkDdiDescribeAllocation = AgpuDescribeAllocation;
    d.DxgkDdiGetStandardAllocationDriverData = AgpuGetStandardAllocationDriverData;
    d.DxgkDdiAcquireSwizzlingRange = AgpuNotSupportedArgs;
    d.DxgkDdiReleaseSwizzlingRange = AgpuNotSupportedConstArgs;
    d.DxgkDdiPatch = AgpuSuccessConstArgs; /* no patch locations are ever emitted */
    d.DxgkDdiSubmitCommand = AgpuSubmitCommand;
    d.DxgkDdiPreemptCommand = AgpuSuccessConstArgs;
    d.DxgkDdiBuildPagingBuffer = AgpuBuildPagingBuffer;
    d.DxgkDdiSetPalette = AgpuNotSupportedConstArgs;
    d.DxgkDdiSetPointerPosition = AgpuSetPointerPosition;
    d.DxgkDdiSetPointerShape = AgpuSetPointerShape;
    d.DxgkDdiResetFromTimeout = AgpuResetFromTimeout;
    d.DxgkDdiRestartFromTimeout = AgpuRestartFromTimeout;
    d.DxgkDdiEscape = AgpuEscape;
    d.DxgkDdiCollectDbgInfo = AgpuSuccessArgs;
    d.DxgkDdiQueryCurrentFence = AgpuQueryCurrentFence;
    d.DxgkDdiIsSupportedVidPn = AgpuIsSupportedVidPn;
    d.DxgkDdiRecommendFunctionalVidPn = AgpuRecommendFunctionalVidPn;
    d.DxgkDdiEnumVidPnCofuncModality = AgpuEnumVidPnCofuncModality;
    d.DxgkDdiSetVidPnSourceAddress = AgpuSetVidPnSourceAddress;
    d.DxgkDdiSetVidPnSourceVisibility = AgpuSetVidPnSourceVisibility;
    d.DxgkDdiCommitVidPn = AgpuCommitVidPn;
    d.DxgkDdiUpdateActiveVidPnPresentPath = AgpuUpdateActiveVidPnPresentPath;
    d.DxgkDdiRecommendMonitorModes = AgpuRecommendMonitorModes;
    d.DxgkDdiRecommendVidPnTopology = AgpuRecommendVidPnTopology;
    d.DxgkDdiGetScanLine = AgpuGetScanLine;
    d.DxgkDdiStopCapture = AgpuSuccessConstArgs;
    d.DxgkDdiControlInterrupt = AgpuControlInterrupt;
    d.DxgkDdiCreateOverlay = AgpuNotSupportedArgs;
    d.DxgkDdiDestroyDevice = AgpuDestroyDevice;
    d.DxgkDdiOpenAllocation = AgpuOpenAllocation;
    d.DxgkDdiCloseAllocation = AgpuCloseAllocation;
    d.DxgkDdiRender = AgpuRender;
    d.DxgkDdiPresent = AgpuPresent;
    d.DxgkDdiUpdateOverlay = AgpuNotSupportedConstArgs;
    d.DxgkDdiFlipOverlay = AgpuNotSupportedConstArgs;
    d.DxgkDdiDestroyOverlay = AgpuNotSupportedHandle;
    d.DxgkDdiCreateContext = AgpuCreateContext;
    d.DxgkDdiDestroyContext = AgpuDestroyContext;
    d.DxgkDdiLinkDevice = AgpuLinkDevice;
    d.DxgkDdiSetDisplayPrivateDriverFormat = AgpuNotSupportedArgs;
    d.DxgkDdiRenderKm = AgpuNotSupportedArgs;
    d.DxgkDdiQueryVidPnHWCapability = AgpuNotSupportedArgs;
    return DxgkInitialize(drv, reg, &d);
}
