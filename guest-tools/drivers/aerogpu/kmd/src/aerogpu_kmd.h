/* AeroGPU WDDM 1.1 miniport: adapter/device/allocation state shared by the DDI files.
 *
 * UNTESTED ON WINDOWS: this glue compiles for x86 and x64 with mingw-w64 against the
 * project's own DDI headers, but has never been loaded by the real dxgkrnl. The built
 * .sys files run on Aero's own CPU against the AeroGPU device model and a modelled
 * ntoskrnl/dxgkrnl (guest-tools/tests/kmd_on_aero_cpu.rs): DDIs in dxgkrnl's order,
 * submissions through the ring, display and power, escapes, and runtime presents (Blt,
 * ColorFill, multipass, Flip, hostile arguments) checked by the pixels the device's CPU
 * executor puts on the scanout. The OS-independent logic it calls (../portable) is also
 * unit-tested on the host. */
#ifndef AEROGPU_KMD_H
#define AEROGPU_KMD_H

#include <ntddk.h>

#include "../../include/dispmprt.h"
#include "../portable/agpu_config.h"
#include "../portable/agpu_device.h"
#include "../portable/agpu_escape.h"
#include "../portable/agpu_modes.h"
#include "../portable/agpu_present.h"
#include "../portable/agpu_ring.h"
#include "../portable/agpu_share.h"
#include "../portable/agpu_submit.h"

#define AGPU_POOL_TAG 0x55504741u /* 'AGPU' */
#define AGPU_RING_ENTRIES 256u
/* The ring header plus AGPU_RING_ENTRIES descriptors, in whole pages (5 pages: 4 were once
 * allocated, one descriptor short, and agpu_ring_init refused the ring). */
#define AGPU_RING_ALLOC_BYTES                                                                   \
    ((sizeof(struct aerogpu_ring_header) + AGPU_RING_ENTRIES * sizeof(struct aerogpu_submit_desc) + \
      PAGE_SIZE - 1) & ~((SIZE_T)PAGE_SIZE - 1))
#define AGPU_ALLOCATION_LIST_SIZE 256u
#define AGPU_PENDING_PER_CONTEXT 64u
#define AGPU_DMA_BUFFER_SIZE (256u * 1024u)
#define AGPU_MAX_MAPPED_HANDLES 64u /* MAP_SHARED_HANDLE token table */

#if DBG
#define AGPU_LOG(...) DbgPrintEx(DPFLTR_IHVVIDEO_ID, DPFLTR_ERROR_LEVEL, "aerogpu-kmd: " __VA_ARGS__)
#else
#define AGPU_LOG(...) ((void)0)
#endif

/* One WDDM allocation. */
typedef struct agpu_allocation {
    uint32_t alloc_id;
    uint32_t priv_flags;
    uint64_t share_token;
    uint64_t size_bytes;
    uint64_t gpa;        /* device address from MAP_APERTURE_SEGMENT (aperture with a GART); 0 unmapped */
    uint32_t pitch;
    uint32_t width, height; /* standard allocations (DescribeAllocation) */
} agpu_allocation;

/* A submission staged at Render/Present time, consumed by SubmitCommand in order. */
typedef struct agpu_pending {
    agpu_staging stage;
    struct aerogpu_submit_desc desc; /* signal_fence filled at SubmitCommand */
    int is_present;
    uint32_t present_handles; /* a runtime present's KMD handle slot, 0 if none */
} agpu_pending;

typedef struct agpu_context {
    struct agpu_adapter *adapter;
    /* aerogpu_submit_desc.context_id: the device keeps pipeline state per context, so
     * DWM's and each application's device never see each other's bindings. 0 is the
     * KMD's own (internal submissions). */
    uint32_t id;
    agpu_pending *pending[AGPU_PENDING_PER_CONTEXT];
    uint32_t head, tail; /* FIFO of staged submissions */
} agpu_context;

typedef struct agpu_device_ctx {
    struct agpu_adapter *adapter;
    HANDLE dxgk_device;
} agpu_device_ctx;

typedef struct agpu_adapter {
    PDEVICE_OBJECT pdo;
    DXGKRNL_INTERFACE dxgk;
    volatile uint32_t *bar0;
    PHYSICAL_ADDRESS bar0_pa;
    ULONG bar0_len;
    agpu_mmio_ops mmio;
    agpu_device_info info;
    agpu_config config;
    agpu_mode modes[AGPU_MAX_MODES];
    uint32_t mode_count;
    uint8_t edid[AGPU_EDID_SIZE];

    /* The aperture's page table (AEROGPU_FEATURE_GART): entry i maps aperture page i.
     * Without it, allocations need physically contiguous pages. */
    uint64_t *gart;
    PHYSICAL_ADDRESS gart_pa;
    uint32_t gart_entries;

    agpu_ring ring;
    void *ring_va;
    PHYSICAL_ADDRESS ring_pa;
    struct aerogpu_fence_page *fence_page;
    PHYSICAL_ADDRESS fence_pa;
    KSPIN_LOCK submit_lock;
    uint64_t last_submitted_fence, last_completed_fence;
    uint64_t error_irq_count, last_error_fence;

    uint32_t irq_mask;
    int vblank_requested;
    int in_d0;
    int started;

    agpu_scanout scanout;       /* last programmed (restored on resume) */
    int source_visible;
    agpu_cursor cursor;
    void *cursor_va;
    PHYSICAL_ADDRESS cursor_pa;

    /* Staged submissions the device may still read, freed once their fence completes. */
    agpu_pending *inflight[AGPU_RING_ENTRIES];
    uint32_t inflight_count;

    agpu_share_table *shares;
    agpu_createalloc_trace createalloc_trace;
    uint32_t createalloc_calls;
    uint32_t next_kmd_alloc_id;
    uint32_t next_context_id;
    agpu_present_slots present_slots; /* runtime presents' KMD handles (submit_lock) */
    /* MAP_SHARED_HANDLE (debug escape): object i's token is i + 1. Identity only: the
     * pointers are never dereferenced, and a freed object's slot may alias a new one. */
    PVOID mapped_objects[AGPU_MAX_MAPPED_HANDLES];
} agpu_adapter;

extern UNICODE_STRING g_agpu_registry_path;

/* DxgkDdiPresent's rectangles are read as agpu_rect. */
AEROGPU_DDI_STATIC_ASSERT(sizeof(RECT) == sizeof(agpu_rect) && offsetof(RECT, bottom) == offsetof(agpu_rect, bottom),
                          "RECT layout");

/* aerogpu_vidpn.c */
NTSTATUS AEROGPU_DDI AgpuIsSupportedVidPn(HANDLE hAdapter, void *pArgs);
NTSTATUS AEROGPU_DDI AgpuRecommendFunctionalVidPn(HANDLE hAdapter, const void *pArgs);
NTSTATUS AEROGPU_DDI AgpuEnumVidPnCofuncModality(HANDLE hAdapter, const void *pArgs);
NTSTATUS AEROGPU_DDI AgpuCommitVidPn(HANDLE hAdapter, const void *pArgs);
NTSTATUS AEROGPU_DDI AgpuUpdateActiveVidPnPresentPath(HANDLE hAdapter, const void *pArgs);
NTSTATUS AEROGPU_DDI AgpuRecommendMonitorModes(HANDLE hAdapter, const void *pArgs);
NTSTATUS AEROGPU_DDI AgpuRecommendVidPnTopology(HANDLE hAdapter, const void *pArgs);

/* aerogpu_memory.c */
NTSTATUS AEROGPU_DDI AgpuCreateAllocation(HANDLE hAdapter, void *pArgs);
NTSTATUS AEROGPU_DDI AgpuDestroyAllocation(HANDLE hAdapter, const void *pArgs);
NTSTATUS AEROGPU_DDI AgpuDescribeAllocation(HANDLE hAdapter, void *pArgs);
NTSTATUS AEROGPU_DDI AgpuGetStandardAllocationDriverData(HANDLE hAdapter, void *pArgs);
NTSTATUS AEROGPU_DDI AgpuOpenAllocation(HANDLE hDevice, void *pArgs);
NTSTATUS AEROGPU_DDI AgpuCloseAllocation(HANDLE hDevice, const void *pArgs);
NTSTATUS AEROGPU_DDI AgpuBuildPagingBuffer(HANDLE hAdapter, void *pArgs);
NTSTATUS AEROGPU_DDI AgpuCreateContext(HANDLE hDevice, void *pArgs);
NTSTATUS AEROGPU_DDI AgpuDestroyContext(HANDLE hContext);
NTSTATUS AEROGPU_DDI AgpuRender(HANDLE hContext, void *pArgs);
NTSTATUS AEROGPU_DDI AgpuPresent(HANDLE hContext, void *pArgs);
NTSTATUS AEROGPU_DDI AgpuSubmitCommand(HANDLE hAdapter, const void *pArgs);
NTSTATUS agpu_submit_internal(agpu_adapter *a, const void *stream, uint32_t bytes);
void agpu_retire_completed(agpu_adapter *a, int all);
agpu_allocation *agpu_allocation_from_handle(HANDLE h);

NTSTATUS agpu_status_to_nt(agpu_status s);

#endif /* AEROGPU_KMD_H */
