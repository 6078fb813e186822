/* WDDM 1.1 display miniport DDI argument types (subset, Windows 7 layouts). Members
 * that later Windows versions append are omitted; where this header only declares the
 * Windows 7 prefix of a struct that dxgkrnl allocates (so its tail is never touched by
 * the driver) the comment says so. See aerogpu_ddi_common.h. */
#ifndef AEROGPU_D3DKMDDI_H
#define AEROGPU_D3DKMDDI_H

#include "d3dkmdt.h"

/* ---- Adapter info (DxgkDdiQueryAdapterInfo) --------------------------------------- */
typedef enum _DXGK_QUERYADAPTERINFOTYPE {
    DXGKQAITYPE_UMDRIVERPRIVATE = 0,
    DXGKQAITYPE_DRIVERCAPS = 1,
    DXGKQAITYPE_QUERYSEGMENT = 2,
    DXGKQAITYPE_ALLOCATIONGROUP = 3,
    DXGKQAITYPE_QUERYSEGMENT2 = 4
} DXGK_QUERYADAPTERINFOTYPE;

typedef struct _DXGKARG_QUERYADAPTERINFO {
    DXGK_QUERYADAPTERINFOTYPE Type;
    void *pInputData;
    UINT InputDataSize;
    void *pOutputData;
    UINT OutputDataSize;
} DXGKARG_QUERYADAPTERINFO;
AEROGPU_DDI_ASSERT_SIZE(DXGKARG_QUERYADAPTERINFO, 20, 40);

/* The Windows 7 DXGK_DRIVERCAPS prefix through GpuEngineTopology. dxgkrnl passes its own
 * size in OutputDataSize; the driver zeroes all of it and fills this prefix. */
typedef struct _DXGK_DRIVERCAPS {
    PHYSICAL_ADDRESS HighestAcceptableAddress;
    UINT MaxAllocationListSlotId;
    SIZE_T ApertureSegmentCommitLimit;
    UINT MaxPointerWidth;
    UINT MaxPointerHeight;
    UINT PointerCaps;          /* DXGK_POINTERFLAGS: Monochrome, Color, MaskedColor */
    UINT InterruptMessageNumber;
    UINT NumberOfSwizzlingRanges;
    UINT MaxOverlays;
    UINT GammaRampCaps;        /* DXGK_GAMMARAMPCAPS */
    UINT PresentationCaps;     /* DXGK_PRESENTATIONCAPS */
    UINT MaxQueuedFlipOnVSync;
    UINT FlipCaps;             /* DXGK_FLIPCAPS */
    UINT SchedulingCaps;       /* DXGK_VIDSCHCAPS */
    UINT MemoryManagementCaps; /* DXGK_VIDMMCAPS */
    UINT GpuEngineTopology;    /* DXGK_GPUENGINETOPOLOGY.NbAsymetricProcessingNodes */
} DXGK_DRIVERCAPS;
AEROGPU_DDI_ASSERT_OFFSET(DXGK_DRIVERCAPS, MaxPointerWidth, 16, 24);
AEROGPU_DDI_ASSERT_OFFSET(DXGK_DRIVERCAPS, GpuEngineTopology, 64, 72);

#define DXGK_POINTERFLAGS_MONOCHROME 0x1u
#define DXGK_POINTERFLAGS_COLOR 0x2u
#define DXGK_POINTERFLAGS_MASKEDCOLOR 0x4u
#define DXGK_PRESENTATIONCAPS_NOSCREENTOSCREENBLT 0x1u
#define DXGK_PRESENTATIONCAPS_NOOVERLAPSCREENBLT 0x2u

/* DXGK_SEGMENTFLAGS bits */
#define DXGK_SEGMENTFLAGS_APERTURE 0x1u
#define DXGK_SEGMENTFLAGS_AGP 0x2u
#define DXGK_SEGMENTFLAGS_CPUVISIBLE 0x4u
#define DXGK_SEGMENTFLAGS_USEBANKING 0x8u
#define DXGK_SEGMENTFLAGS_CACHECOHERENT 0x10u

typedef struct _DXGK_SEGMENTDESCRIPTOR {
    PHYSICAL_ADDRESS BaseAddress;
    PHYSICAL_ADDRESS CpuTranslatedAddress;
    SIZE_T Size;
    UINT NbOfBanks;
    SIZE_T *pBankRangeTable;
    SIZE_T CommitLimit;
    UINT Flags; /* DXGK_SEGMENTFLAGS */
} DXGK_SEGMENTDESCRIPTOR;
AEROGPU_DDI_ASSERT_SIZE(DXGK_SEGMENTDESCRIPTOR, 40, 56);

typedef struct _DXGK_QUERYSEGMENTOUT {
    UINT NbSegment;
    DXGK_SEGMENTDESCRIPTOR *pSegmentDescriptor;
    UINT PagingBufferSegmentId;
    UINT PagingBufferSize;
    UINT PagingBufferPrivateDataSize;
} DXGK_QUERYSEGMENTOUT;
AEROGPU_DDI_ASSERT_SIZE(DXGK_QUERYSEGMENTOUT, 20, 32);

/* ---- Devices and contexts ------------------------------------------------------------ */
typedef struct _DXGK_DEVICEINFO {
    UINT DmaBufferSize;
    UINT DmaBufferSegmentSet;
    UINT DmaBufferPrivateDataSize;
    UINT AllocationListSize;
    UINT PatchLocationListSize;
    UINT Flags; /* DXGK_DEVICEINFOFLAGS */
} DXGK_DEVICEINFO;

typedef struct _DXGKARG_CREATEDEVICE {
    HANDLE hDevice; /* in: dxgkrnl's handle; out: the driver's device */
    UINT Flags;     /* DXGK_CREATEDEVICEFLAGS (SystemDevice, GdiDevice) */
    DXGK_DEVICEINFO *pInfo;
} DXGKARG_CREATEDEVICE;
AEROGPU_DDI_ASSERT_SIZE(DXGKARG_CREATEDEVICE, 12, 24);

typedef struct _DXGK_CONTEXTINFO {
    UINT DmaBufferSize;
    UINT DmaBufferSegmentSet;
    UINT DmaBufferPrivateDataSize;
    UINT AllocationListSize;
    UINT PatchLocationListSize;
    UINT Reserved;
} DXGK_CONTEXTINFO;

typedef struct _DXGKARG_CREATECONTEXT {
    HANDLE hContext; /* out */
    UINT NodeOrdinal;
    UINT EngineAffinity;
    UINT Flags; /* DXGK_CREATECONTEXTFLAGS */
    void *pPrivateDriverData;
    UINT PrivateDriverDataSize;
    DXGK_CONTEXTINFO ContextInfo;
} DXGKARG_CREATECONTEXT;
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_CREATECONTEXT, ContextInfo, 24, 36);

/* ---- Allocations -------------------------------------------------------------------- */
#define DXGK_ALLOCATIONINFOFLAGS_CPUVISIBLE 0x1u

typedef struct _DXGK_ALLOCATIONINFO {
    void *pPrivateDriverData;
    UINT PrivateDriverDataSize;
    UINT Alignment;
    SIZE_T Size;
    SIZE_T PitchAlignedSize;
    UINT HintedBank;              /* DXGK_SEGMENTBANKPREFERENCE */
    UINT PreferredSegment;        /* DXGK_SEGMENTPREFERENCE */
    UINT SupportedReadSegmentSet;
    UINT SupportedWriteSegmentSet;
    UINT EvictionSegmentSet;
    UINT MaximumRenamingListLength;
    HANDLE hAllocation;           /* out: the driver's allocation */
    UINT Flags;                   /* DXGK_ALLOCATIONINFOFLAGS */
    void *pAllocationUsageHint;
    UINT AllocationPriority;
} DXGK_ALLOCATIONINFO;
AEROGPU_DDI_ASSERT_SIZE(DXGK_ALLOCATIONINFO, 60, 88);
AEROGPU_DDI_ASSERT_OFFSET(DXGK_ALLOCATIONINFO, hAllocation, 44, 56);

typedef struct _DXGKARG_CREATEALLOCATION {
    const void *pPrivateDriverData; /* resource-level */
    UINT PrivateDriverDataSize;
    UINT NumAllocations;
    DXGK_ALLOCATIONINFO *pAllocationInfo;
    HANDLE hResource;
    UINT Flags; /* DXGK_CREATEALLOCATIONFLAGS: Resource, StandardAllocation, ... */
} DXGKARG_CREATEALLOCATION;
AEROGPU_DDI_ASSERT_SIZE(DXGKARG_CREATEALLOCATION, 24, 40);

typedef struct _DXGKARG_DESTROYALLOCATION {
    UINT NumAllocations;
    const HANDLE *pAllocationList;
    HANDLE hResource;
    UINT Flags;
} DXGKARG_DESTROYALLOCATION;

typedef struct _D3DDDI_MULTISAMPLINGMETHOD {
    UINT NumSamples;
    UINT NumQualityLevels;
} D3DDDI_MULTISAMPLINGMETHOD;

/* Windows 7 prefix (Windows 8 appends Flags and Rotation). */
typedef struct _DXGKARG_DESCRIBEALLOCATION {
    HANDLE hAllocation;
    UINT Width;
    UINT Height;
    D3DDDIFORMAT Format;
    D3DDDI_MULTISAMPLINGMETHOD MultisampleMethod;
    D3DDDI_RATIONAL RefreshRate;
    UINT PrivateDriverFormatAttribute;
} DXGKARG_DESCRIBEALLOCATION;

typedef enum _D3DKMDT_STANDARDALLOCATION_TYPE {
    D3DKMDT_STANDARDALLOCATION_SHAREDPRIMARYSURFACE = 1,
    D3DKMDT_STANDARDALLOCATION_SHADOWSURFACE = 2,
    D3DKMDT_STANDARDALLOCATION_STAGINGSURFACE = 3,
    D3DKMDT_STANDARDALLOCATION_GDISURFACE = 4
} D3DKMDT_STANDARDALLOCATION_TYPE;

typedef struct _D3DKMDT_SHAREDPRIMARYSURFACEDATA {
    UINT Width, Height;
    D3DDDIFORMAT Format;
    D3DDDI_RATIONAL RefreshRate;
    D3DDDI_VIDEO_PRESENT_SOURCE_ID VidPnSourceId;
} D3DKMDT_SHAREDPRIMARYSURFACEDATA;

typedef struct _D3DKMDT_SHADOWSURFACEDATA {
    UINT Width, Height;
    D3DDDIFORMAT Format;
    UINT Pitch; /* out */
} D3DKMDT_SHADOWSURFACEDATA;

typedef struct _D3DKMDT_STAGINGSURFACEDATA {
    UINT Width, Height;
    UINT Pitch; /* out */
} D3DKMDT_STAGINGSURFACEDATA;

typedef struct _D3DKMDT_GDISURFACEDATA {
    UINT Width, Height;
    D3DDDIFORMAT Format;
    UINT Type;  /* D3DKMDT_GDISURFACETYPE */
    UINT Flags;
    UINT Pitch; /* out */
} D3DKMDT_GDISURFACEDATA;

typedef struct _DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA {
    D3DKMDT_STANDARDALLOCATION_TYPE StandardAllocationType;
    union {
        D3DKMDT_SHAREDPRIMARYSURFACEDATA *pCreateSharedPrimarySurfaceData;
        D3DKMDT_SHADOWSURFACEDATA *pCreateShadowSurfaceData;
        D3DKMDT_STAGINGSURFACEDATA *pCreateStagingSurfaceData;
        D3DKMDT_GDISURFACEDATA *pCreateGdiSurfaceData;
    };
    void *pAllocationPrivateDriverData;
    UINT AllocationPrivateDriverDataSize;
    void *pResourcePrivateDriverData;
    UINT ResourcePrivateDriverDataSize;
} DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA;
AEROGPU_DDI_ASSERT_SIZE(DXGKARG_GETSTANDARDALLOCATIONDRIVERDATA, 24, 48);

/* Per-open allocation info in DxgkDdiOpenAllocation. */
typedef struct _DXGK_OPENALLOCATIONINFO {
    D3DKMT_HANDLE hAllocation;
    void *pPrivateDriverData;
    UINT PrivateDriverDataSize;
    HANDLE hDeviceSpecificAllocation; /* out */
} DXGK_OPENALLOCATIONINFO;
AEROGPU_DDI_ASSERT_SIZE(DXGK_OPENALLOCATIONINFO, 16, 32);

typedef struct _DXGKARG_OPENALLOCATION {
    UINT NumAllocations;
    DXGK_OPENALLOCATIONINFO *pOpenAllocation;
    void *pPrivateDriverData; /* resource-level */
    UINT PrivateDriverDataSize;
    UINT Flags; /* DXGK_OPENALLOCATIONFLAGS */
} DXGKARG_OPENALLOCATION;

typedef struct _DXGKARG_CLOSEALLOCATION {
    UINT NumAllocations;
    const HANDLE *pOpenHandleList;
} DXGKARG_CLOSEALLOCATION;

/* ---- Submission ------------------------------------------------------------------- */
typedef struct _DXGK_ALLOCATIONLIST {
    HANDLE hDeviceSpecificAllocation;
    union {
        struct {
            UINT WriteOperation : 1;
            UINT Reserved : 31;
        };
        UINT Value;
    };
    UINT SegmentId;
    PHYSICAL_ADDRESS PhysicalAddress;
} DXGK_ALLOCATIONLIST;
AEROGPU_DDI_ASSERT_SIZE(DXGK_ALLOCATIONLIST, 24, 24);
AEROGPU_DDI_ASSERT_OFFSET(DXGK_ALLOCATIONLIST, PhysicalAddress, 16, 16);

typedef struct _DXGKARG_RENDER {
    const void *pCommand;
    const UINT CommandLength;
    void *pDmaBuffer;
    UINT DmaSize;
    void *pDmaBufferPrivateData;
    UINT DmaBufferPrivateDataSize;
    DXGK_ALLOCATIONLIST *pAllocationList;
    UINT AllocationListSize;
    D3DDDI_PATCHLOCATIONLIST *pPatchLocationListIn;
    UINT PatchLocationListInSize;
    D3DDDI_PATCHLOCATIONLIST *pPatchLocationListOut;
    UINT PatchLocationListOutSize;
    UINT MultipassOffset;
    UINT DmaBufferSegmentId;
    PHYSICAL_ADDRESS DmaBufferPhysicalAddress;
} DXGKARG_RENDER;
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_RENDER, pAllocationList, 24, 48);
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_RENDER, DmaBufferPhysicalAddress, 56, 104);

/* RECT as windef.h declares it (kernel-mode headers do not). */
#if !defined(_WINDEF_) && !defined(_WINDEF_H)
typedef struct tagRECT {
    LONG left, top, right, bottom;
} RECT;
#endif

/* DxgkDdiPresent's allocation list: the source and destination at these fixed indices
 * (the list has no size member; index 0 is not used by a present). */
#define DXGK_PRESENT_SOURCE_INDEX 1u
#define DXGK_PRESENT_DESTINATION_INDEX 2u
#define DXGK_PRESENT_MAX_INDEX DXGK_PRESENT_DESTINATION_INDEX

typedef struct _DXGK_PRESENTFLAGS {
    union {
        struct {
            UINT Blt : 1;            /* 0x01 */
            UINT ColorFill : 1;      /* 0x02 */
            UINT Flip : 1;           /* 0x04 */
            UINT FlipWithNoWait : 1; /* 0x08 */
            UINT SrcColorKey : 1;    /* 0x10 */
            UINT DstColorKey : 1;    /* 0x20 */
            UINT LinearToSrgb : 1;   /* 0x40 */
            UINT Rotate : 1;         /* 0x80 */
            UINT Reserved : 24;      /* later Windows versions define more bits */
        };
        UINT Value;
    };
} DXGK_PRESENTFLAGS;
AEROGPU_DDI_ASSERT_SIZE(DXGK_PRESENTFLAGS, 4, 4);
#define DXGK_PRESENTFLAGS_BLT 0x1u
#define DXGK_PRESENTFLAGS_COLORFILL 0x2u
#define DXGK_PRESENTFLAGS_FLIP 0x4u
#define DXGK_PRESENTFLAGS_FLIPWITHNOWAIT 0x8u

/* DxgkDdiPresent's argument, Windows 7 members only (WDDM 1.3 appends Reserved and WDDM
 * 2.0 more; dxgkrnl on Windows 7 allocates exactly this). Unlike DXGKARG_RENDER it has no
 * allocation list size and no patch list input: the list holds the source and destination
 * at DXGK_PRESENT_*_INDEX. MultipassOffset is the driver's: dxgkrnl passes it back
 * unchanged when the driver returned STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER after
 * writing part of the present (it starts at 0). pDstSubRects are in destination space
 * (inside DstRect); SubRectCnt 0 means DstRect alone. Color is a D3DCOLOR (A8R8G8B8). */
typedef struct _DXGKARG_PRESENT {
    void *pDmaBuffer; /* in/out: advanced past what the driver wrote */
    UINT DmaSize;
    void *pDmaBufferPrivateData;
    UINT DmaBufferPrivateDataSize;
    DXGK_ALLOCATIONLIST *pAllocationList;
    D3DDDI_PATCHLOCATIONLIST *pPatchLocationListOut;
    UINT PatchLocationListOutSize;
    UINT MultipassOffset; /* in/out */
    UINT Color;
    RECT DstRect;
    RECT SrcRect;
    UINT SubRectCnt;
    const RECT *pDstSubRects;
    UINT FlipInterval; /* D3DDDI_FLIPINTERVAL_TYPE */
    DXGK_PRESENTFLAGS Flags;
    UINT DmaBufferSegmentId;
    PHYSICAL_ADDRESS DmaBufferPhysicalAddress;
} DXGKARG_PRESENT;
AEROGPU_DDI_ASSERT_SIZE(RECT, 16, 16);
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_PRESENT, pAllocationList, 16, 32);
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_PRESENT, PatchLocationListOutSize, 24, 48);
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_PRESENT, MultipassOffset, 28, 52);
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_PRESENT, Color, 32, 56);
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_PRESENT, DstRect, 36, 60);
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_PRESENT, SrcRect, 52, 76);
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_PRESENT, SubRectCnt, 68, 92);
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_PRESENT, pDstSubRects, 72, 96);
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_PRESENT, FlipInterval, 76, 104);
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_PRESENT, Flags, 80, 108);
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_PRESENT, DmaBufferPhysicalAddress, 88, 120);
AEROGPU_DDI_ASSERT_SIZE(DXGKARG_PRESENT, 96, 128);

typedef struct _DXGKARG_SUBMITCOMMAND {
    HANDLE hContext;
    UINT DmaBufferSegmentId;
    PHYSICAL_ADDRESS DmaBufferPhysicalAddress;
    UINT DmaBufferSize;
    UINT DmaBufferSubmissionStartOffset;
    UINT DmaBufferSubmissionEndOffset;
    void *pDmaBufferPrivateData;
    UINT DmaBufferPrivateDataSize;
    UINT DmaBufferPrivateDataSubmissionStartOffset;
    UINT DmaBufferPrivateDataSubmissionEndOffset;
    UINT SubmissionFenceId;
    D3DDDI_VIDEO_PRESENT_SOURCE_ID VidPnSourceId;
    UINT FlipInterval; /* D3DDDI_FLIPINTERVAL_TYPE */
    UINT Flags;        /* DXGK_SUBMITCOMMANDFLAGS: Paging, Present, RedirectedPresent */
    ULONG EngineOrdinal;
    ULONG NodeOrdinal;
} DXGKARG_SUBMITCOMMAND;
AEROGPU_DDI_ASSERT_SIZE(DXGKARG_SUBMITCOMMAND, 72, 88);
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_SUBMITCOMMAND, pDmaBufferPrivateData, 28, 40);
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_SUBMITCOMMAND, SubmissionFenceId, 44, 60);

#define DXGK_SUBMITCOMMANDFLAGS_PAGING 0x1u
#define DXGK_SUBMITCOMMANDFLAGS_PRESENT 0x2u

typedef struct _DXGKARG_PATCH DXGKARG_PATCH;                 /* unused: no patching */
typedef struct _DXGKARG_PREEMPTCOMMAND {
    UINT PreemptionFenceId;
    UINT EngineOrdinal;
    UINT NodeOrdinal;
} DXGKARG_PREEMPTCOMMAND;

typedef struct _DXGKARG_QUERYCURRENTFENCE {
    UINT CurrentFence; /* out */
    UINT NodeOrdinal;
    UINT EngineOrdinal;
} DXGKARG_QUERYCURRENTFENCE;

/* Paging operations (DxgkDdiBuildPagingBuffer). Only the operation code and the
 * aperture-mapping variant are read. */
typedef enum _DXGK_BUILDPAGINGBUFFER_OPERATION {
    DXGK_OPERATION_TRANSFER = 0,
    DXGK_OPERATION_FILL = 1,
    DXGK_OPERATION_DISCARD_CONTENT = 2,
    DXGK_OPERATION_READ_PHYSICAL = 3,
    DXGK_OPERATION_WRITE_PHYSICAL = 4,
    DXGK_OPERATION_MAP_APERTURE_SEGMENT = 5,
    DXGK_OPERATION_UNMAP_APERTURE_SEGMENT = 6,
    DXGK_OPERATION_SPECIAL_LOCK_TRANSFER = 7
} DXGK_BUILDPAGINGBUFFER_OPERATION;

typedef struct _DXGK_BUILDPAGINGBUFFER_MAPAPERTURESEGMENT {
    HANDLE hDevice;
    HANDLE hAllocation;
    UINT SegmentId;
    SIZE_T OffsetInPages;
    SIZE_T NumberOfPages;
    PMDL pMdl;
    UINT Flags; /* DXGK_MAPAPERTUREFLAGS */
    ULONG MdlOffset;
} DXGK_BUILDPAGINGBUFFER_MAPAPERTURESEGMENT;

typedef struct _DXGKARG_BUILDPAGINGBUFFER {
    union {
        DXGK_BUILDPAGINGBUFFER_MAPAPERTURESEGMENT MapApertureSegment;
        /* Transfer/Fill/... are larger in the real header; reserve the space. */
        UINT_PTR Space[16];
    };
    void *pDmaBuffer;
    UINT DmaSize;
    void *pDmaBufferPrivateData;
    UINT DmaBufferPrivateDataSize;
    DXGK_BUILDPAGINGBUFFER_OPERATION Operation;
    UINT MultipassOffset;
} DXGKARG_BUILDPAGINGBUFFER; /* unverified: union size */

/* ---- Display: pointer, scanout, vblank ---------------------------------------------- */
typedef struct _DXGKARG_SETPOINTERPOSITION {
    D3DDDI_VIDEO_PRESENT_SOURCE_ID VidPnSourceId;
    INT X;
    INT Y;
    UINT Flags; /* bit0 Visible */
} DXGKARG_SETPOINTERPOSITION;

typedef struct _DXGKARG_SETPOINTERSHAPE {
    UINT Flags; /* DXGK_POINTERFLAGS */
    D3DDDI_VIDEO_PRESENT_SOURCE_ID VidPnSourceId;
    UINT Width;
    UINT Height;
    UINT Pitch;
    const void *pPixels;
    UINT XHot;
    UINT YHot;
} DXGKARG_SETPOINTERSHAPE;
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_SETPOINTERSHAPE, pPixels, 20, 24);

typedef struct _DXGKARG_SETVIDPNSOURCEADDRESS {
    D3DDDI_VIDEO_PRESENT_SOURCE_ID VidPnSourceId;
    UINT PrimarySegment;
    PHYSICAL_ADDRESS PrimaryAddress;
    HANDLE hAllocation;
    UINT ContextCount;
    HANDLE Context[1 + 64]; /* 1 + D3DDDI_MAX_BROADCAST_CONTEXT */
    UINT Flags; /* DXGK_SETVIDPNSOURCEADDRESS_FLAGS (not read by the driver) */
} DXGKARG_SETVIDPNSOURCEADDRESS; /* unverified: broadcast array length; only the prefix is read */
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_SETVIDPNSOURCEADDRESS, PrimaryAddress, 8, 8);
AEROGPU_DDI_ASSERT_OFFSET(DXGKARG_SETVIDPNSOURCEADDRESS, hAllocation, 16, 16);

typedef struct _DXGKARG_SETVIDPNSOURCEVISIBILITY {
    D3DDDI_VIDEO_PRESENT_SOURCE_ID VidPnSourceId;
    BOOLEAN Visible;
} DXGKARG_SETVIDPNSOURCEVISIBILITY;

typedef struct _DXGKARG_GETSCANLINE {
    D3DDDI_VIDEO_PRESENT_TARGET_ID VidPnTargetId;
    BOOLEAN InVerticalBlank; /* out */
    UINT ScanLine;           /* out */
} DXGKARG_GETSCANLINE;
AEROGPU_DDI_ASSERT_SIZE(DXGKARG_GETSCANLINE, 12, 12);

typedef enum _DXGK_INTERRUPT_TYPE {
    DXGK_INTERRUPT_DMA_COMPLETED = 1,
    DXGK_INTERRUPT_DMA_PREEMPTED = 2,
    DXGK_INTERRUPT_CRTC_VSYNC = 3,
    DXGK_INTERRUPT_DMA_FAULTED = 4
} DXGK_INTERRUPT_TYPE;

typedef struct _DXGKARGCB_NOTIFY_INTERRUPT_DATA {
    DXGK_INTERRUPT_TYPE InterruptType;
    union {
        struct {
            UINT SubmissionFenceId;
            UINT NodeOrdinal;
            UINT EngineOrdinal;
        } DmaCompleted;
        struct {
            D3DDDI_VIDEO_PRESENT_SOURCE_ID VidPnSourceId;
            PHYSICAL_ADDRESS PhysicalAddress;
            UINT PhysicalAdapterMask;
        } CrtcVsync;
        struct {
            UINT FaultedFenceId;
            NTSTATUS Status;
            UINT NodeOrdinal;
            UINT EngineOrdinal;
        } DmaFaulted;
        UINT Reserved[16];
    };
    UINT Flags; /* DXGK_INTERRUPT_NOTIFICATION_FLAGS */
} DXGKARGCB_NOTIFY_INTERRUPT_DATA; /* unverified: reserved union size */

/* ---- Escape --------------------------------------------------------------------------- */
typedef struct _DXGKARG_ESCAPE {
    HANDLE hDevice;
    D3DDDI_ESCAPEFLAGS Flags;
    void *pPrivateDriverData;
    UINT PrivateDriverDataSize;
    HANDLE hContext;
} DXGKARG_ESCAPE;
AEROGPU_DDI_ASSERT_SIZE(DXGKARG_ESCAPE, 20, 40);

/* ---- VidPN DDI arguments ----------------------------------------------------------- */
typedef struct _DXGKARG_ISSUPPORTEDVIDPN {
    D3DKMDT_HVIDPN hDesiredVidPn;
    BOOLEAN IsVidPnSupported; /* out */
} DXGKARG_ISSUPPORTEDVIDPN;

typedef enum _D3DKMDT_ENUMCOFUNCMODALITY_PIVOT_TYPE {
    D3DKMDT_EPT_UNINITIALIZED = 0,
    D3DKMDT_EPT_VIDPNSOURCE = 1,
    D3DKMDT_EPT_VIDPNTARGET = 2,
    D3DKMDT_EPT_SCALING = 3,
    D3DKMDT_EPT_ROTATION = 4,
    D3DKMDT_EPT_NOPIVOT = 5
} D3DKMDT_ENUMCOFUNCMODALITY_PIVOT_TYPE;

typedef struct _DXGK_ENUM_PIVOT {
    D3DDDI_VIDEO_PRESENT_SOURCE_ID VidPnSourceId;
    D3DDDI_VIDEO_PRESENT_TARGET_ID VidPnTargetId;
} DXGK_ENUM_PIVOT;

typedef struct _DXGKARG_ENUMVIDPNCOFUNCMODALITY {
    D3DKMDT_HVIDPN hConstrainingVidPn;
    D3DKMDT_ENUMCOFUNCMODALITY_PIVOT_TYPE EnumPivotType;
    DXGK_ENUM_PIVOT EnumPivot;
} DXGKARG_ENUMVIDPNCOFUNCMODALITY;

typedef struct _DXGKARG_COMMITVIDPN {
    D3DKMDT_HVIDPN hFunctionalVidPn;
    D3DDDI_VIDEO_PRESENT_SOURCE_ID AffectedVidPnSourceId;
    UINT MonitorConnectivityChecks; /* D3DKMDT_MONITOR_CONNECTIVITY_CHECKS */
    HANDLE hPrimaryAllocation;
    UINT Flags; /* DXGKARG_COMMITVIDPN_FLAGS */
} DXGKARG_COMMITVIDPN;

typedef struct _DXGKARG_RECOMMENDFUNCTIONALVIDPN {
    UINT NumberOfVidPnTargets;
    const void *pVidPnTargetPrioritizationVector;
    D3DKMDT_HVIDPN hRecommendedFunctionalVidPn;
    UINT RequestReason;
    void *pPrivateDriverData;
    UINT PrivateDriverDataSize;
} DXGKARG_RECOMMENDFUNCTIONALVIDPN;

typedef struct _DXGKARG_RECOMMENDVIDPNTOPOLOGY DXGKARG_RECOMMENDVIDPNTOPOLOGY;

struct _DXGK_MONITORSOURCEMODESET_INTERFACE;
typedef struct _DXGKARG_RECOMMENDMONITORMODES {
    D3DDDI_VIDEO_PRESENT_TARGET_ID VideoPresentTargetId;
    D3DKMDT_HMONITORSOURCEMODESET hMonitorSourceModeSet;
    const struct _DXGK_MONITORSOURCEMODESET_INTERFACE *pMonitorSourceModeSetInterface;
} DXGKARG_RECOMMENDMONITORMODES;

/* ---- VidPN interfaces dxgkrnl hands out (DxgkCbQueryVidPnInterface) -------------- */
typedef enum _DXGK_VIDPN_INTERFACE_VERSION {
    DXGK_VIDPN_INTERFACE_VERSION_UNINITIALIZED = 0,
    DXGK_VIDPN_INTERFACE_VERSION_V1 = 1
} DXGK_VIDPN_INTERFACE_VERSION;

typedef struct _DXGK_VIDPNTOPOLOGY_INTERFACE {
    NTSTATUS (AEROGPU_DDI *pfnGetNumPaths)(D3DKMDT_HVIDPNTOPOLOGY, SIZE_T *);
    NTSTATUS (AEROGPU_DDI *pfnGetNumPathsFromSource)(D3DKMDT_HVIDPNTOPOLOGY, D3DDDI_VIDEO_PRESENT_SOURCE_ID, SIZE_T *);
    NTSTATUS (AEROGPU_DDI *pfnEnumPathTargetsFromSource)(D3DKMDT_HVIDPNTOPOLOGY, D3DDDI_VIDEO_PRESENT_SOURCE_ID, SIZE_T, D3DDDI_VIDEO_PRESENT_TARGET_ID *);
    NTSTATUS (AEROGPU_DDI *pfnGetPathSourceFromTarget)(D3DKMDT_HVIDPNTOPOLOGY, D3DDDI_VIDEO_PRESENT_TARGET_ID, D3DDDI_VIDEO_PRESENT_SOURCE_ID *);
    NTSTATUS (AEROGPU_DDI *pfnAcquirePathInfo)(D3DKMDT_HVIDPNTOPOLOGY, D3DDDI_VIDEO_PRESENT_SOURCE_ID, D3DDDI_VIDEO_PRESENT_TARGET_ID, const D3DKMDT_VIDPN_PRESENT_PATH **);
    NTSTATUS (AEROGPU_DDI *pfnAcquireFirstPathInfo)(D3DKMDT_HVIDPNTOPOLOGY, const D3DKMDT_VIDPN_PRESENT_PATH **);
    NTSTATUS (AEROGPU_DDI *pfnAcquireNextPathInfo)(D3DKMDT_HVIDPNTOPOLOGY, const D3DKMDT_VIDPN_PRESENT_PATH *, const D3DKMDT_VIDPN_PRESENT_PATH **);
    NTSTATUS (AEROGPU_DDI *pfnUpdatePathSupportInfo)(D3DKMDT_HVIDPNTOPOLOGY, const D3DKMDT_VIDPN_PRESENT_PATH *);
    NTSTATUS (AEROGPU_DDI *pfnReleasePathInfo)(D3DKMDT_HVIDPNTOPOLOGY, const D3DKMDT_VIDPN_PRESENT_PATH *);
    NTSTATUS (AEROGPU_DDI *pfnCreateNewPathInfo)(D3DKMDT_HVIDPNTOPOLOGY, D3DKMDT_VIDPN_PRESENT_PATH **);
    NTSTATUS (AEROGPU_DDI *pfnAddPath)(D3DKMDT_HVIDPNTOPOLOGY, D3DKMDT_VIDPN_PRESENT_PATH *);
    NTSTATUS (AEROGPU_DDI *pfnRemovePath)(D3DKMDT_HVIDPNTOPOLOGY, D3DDDI_VIDEO_PRESENT_SOURCE_ID, D3DDDI_VIDEO_PRESENT_TARGET_ID);
} DXGK_VIDPNTOPOLOGY_INTERFACE;

typedef struct _DXGK_VIDPNSOURCEMODESET_INTERFACE {
    NTSTATUS (AEROGPU_DDI *pfnGetNumModes)(D3DKMDT_HVIDPNSOURCEMODESET, SIZE_T *);
    NTSTATUS (AEROGPU_DDI *pfnAcquireFirstModeInfo)(D3DKMDT_HVIDPNSOURCEMODESET, const D3DKMDT_VIDPN_SOURCE_MODE **);
    NTSTATUS (AEROGPU_DDI *pfnAcquireNextModeInfo)(D3DKMDT_HVIDPNSOURCEMODESET, const D3DKMDT_VIDPN_SOURCE_MODE *, const D3DKMDT_VIDPN_SOURCE_MODE **);
    NTSTATUS (AEROGPU_DDI *pfnAcquirePinnedModeInfo)(D3DKMDT_HVIDPNSOURCEMODESET, const D3DKMDT_VIDPN_SOURCE_MODE **);
    NTSTATUS (AEROGPU_DDI *pfnReleaseModeInfo)(D3DKMDT_HVIDPNSOURCEMODESET, const D3DKMDT_VIDPN_SOURCE_MODE *);
    NTSTATUS (AEROGPU_DDI *pfnCreateNewModeInfo)(D3DKMDT_HVIDPNSOURCEMODESET, D3DKMDT_VIDPN_SOURCE_MODE **);
    NTSTATUS (AEROGPU_DDI *pfnAddMode)(D3DKMDT_HVIDPNSOURCEMODESET, const D3DKMDT_VIDPN_SOURCE_MODE *);
    NTSTATUS (AEROGPU_DDI *pfnPinMode)(D3DKMDT_HVIDPNSOURCEMODESET, D3DKMDT_VIDEO_PRESENT_SOURCE_MODE_ID);
} DXGK_VIDPNSOURCEMODESET_INTERFACE;

typedef struct _DXGK_VIDPNTARGETMODESET_INTERFACE {
    NTSTATUS (AEROGPU_DDI *pfnGetNumModes)(D3DKMDT_HVIDPNTARGETMODESET, SIZE_T *);
    NTSTATUS (AEROGPU_DDI *pfnAcquireFirstModeInfo)(D3DKMDT_HVIDPNTARGETMODESET, const D3DKMDT_VIDPN_TARGET_MODE **);
    NTSTATUS (AEROGPU_DDI *pfnAcquireNextModeInfo)(D3DKMDT_HVIDPNTARGETMODESET, const D3DKMDT_VIDPN_TARGET_MODE *, const D3DKMDT_VIDPN_TARGET_MODE **);
    NTSTATUS (AEROGPU_DDI *pfnAcquirePinnedModeInfo)(D3DKMDT_HVIDPNTARGETMODESET, const D3DKMDT_VIDPN_TARGET_MODE **);
    NTSTATUS (AEROGPU_DDI *pfnReleaseModeInfo)(D3DKMDT_HVIDPNTARGETMODESET, const D3DKMDT_VIDPN_TARGET_MODE *);
    NTSTATUS (AEROGPU_DDI *pfnCreateNewModeInfo)(D3DKMDT_HVIDPNTARGETMODESET, D3DKMDT_VIDPN_TARGET_MODE **);
    NTSTATUS (AEROGPU_DDI *pfnAddMode)(D3DKMDT_HVIDPNTARGETMODESET, const D3DKMDT_VIDPN_TARGET_MODE *);
    NTSTATUS (AEROGPU_DDI *pfnPinMode)(D3DKMDT_HVIDPNTARGETMODESET, D3DKMDT_VIDEO_PRESENT_TARGET_MODE_ID);
} DXGK_VIDPNTARGETMODESET_INTERFACE;

typedef struct _DXGK_MONITORSOURCEMODESET_INTERFACE {
    NTSTATUS (AEROGPU_DDI *pfnCreateNewModeInfo)(D3DKMDT_HMONITORSOURCEMODESET, D3DKMDT_MONITOR_SOURCE_MODE **);
    NTSTATUS (AEROGPU_DDI *pfnReleaseModeInfo)(D3DKMDT_HMONITORSOURCEMODESET, const D3DKMDT_MONITOR_SOURCE_MODE *);
    NTSTATUS (AEROGPU_DDI *pfnAddMode)(D3DKMDT_HMONITORSOURCEMODESET, const D3DKMDT_MONITOR_SOURCE_MODE *);
    NTSTATUS (AEROGPU_DDI *pfnPinMode)(D3DKMDT_HMONITORSOURCEMODESET, D3DKMDT_MONITOR_SOURCE_MODE_ID);
    NTSTATUS (AEROGPU_DDI *pfnGetNumModes)(D3DKMDT_HMONITORSOURCEMODESET, SIZE_T *);
    NTSTATUS (AEROGPU_DDI *pfnAcquirePreferredModeInfo)(D3DKMDT_HMONITORSOURCEMODESET, const D3DKMDT_MONITOR_SOURCE_MODE **);
    NTSTATUS (AEROGPU_DDI *pfnAcquireFirstModeInfo)(D3DKMDT_HMONITORSOURCEMODESET, const D3DKMDT_MONITOR_SOURCE_MODE **);
    NTSTATUS (AEROGPU_DDI *pfnAcquireNextModeInfo)(D3DKMDT_HMONITORSOURCEMODESET, const D3DKMDT_MONITOR_SOURCE_MODE *, const D3DKMDT_MONITOR_SOURCE_MODE **);
} DXGK_MONITORSOURCEMODESET_INTERFACE; /* unverified: member order */

typedef struct _DXGK_VIDPN_INTERFACE {
    DXGK_VIDPN_INTERFACE_VERSION Version;
    NTSTATUS (AEROGPU_DDI *pfnGetTopology)(D3DKMDT_HVIDPN, D3DKMDT_HVIDPNTOPOLOGY *, const DXGK_VIDPNTOPOLOGY_INTERFACE **);
    NTSTATUS (AEROGPU_DDI *pfnAcquireSourceModeSet)(D3DKMDT_HVIDPN, D3DDDI_VIDEO_PRESENT_SOURCE_ID, D3DKMDT_HVIDPNSOURCEMODESET *, const DXGK_VIDPNSOURCEMODESET_INTERFACE **);
    NTSTATUS (AEROGPU_DDI *pfnReleaseSourceModeSet)(D3DKMDT_HVIDPN, D3DKMDT_HVIDPNSOURCEMODESET);
    NTSTATUS (AEROGPU_DDI *pfnCreateNewSourceModeSet)(D3DKMDT_HVIDPN, D3DDDI_VIDEO_PRESENT_SOURCE_ID, D3DKMDT_HVIDPNSOURCEMODESET *, const DXGK_VIDPNSOURCEMODESET_INTERFACE **);
    NTSTATUS (AEROGPU_DDI *pfnAssignSourceModeSet)(D3DKMDT_HVIDPN, D3DDDI_VIDEO_PRESENT_SOURCE_ID, D3DKMDT_HVIDPNSOURCEMODESET);
    NTSTATUS (AEROGPU_DDI *pfnAssignMultisamplingMethodSet)(D3DKMDT_HVIDPN, D3DDDI_VIDEO_PRESENT_SOURCE_ID, SIZE_T, const void *);
    NTSTATUS (AEROGPU_DDI *pfnAcquireTargetModeSet)(D3DKMDT_HVIDPN, D3DDDI_VIDEO_PRESENT_TARGET_ID, D3DKMDT_HVIDPNTARGETMODESET *, const DXGK_VIDPNTARGETMODESET_INTERFACE **);
    NTSTATUS (AEROGPU_DDI *pfnReleaseTargetModeSet)(D3DKMDT_HVIDPN, D3DKMDT_HVIDPNTARGETMODESET);
    NTSTATUS (AEROGPU_DDI *pfnCreateNewTargetModeSet)(D3DKMDT_HVIDPN, D3DDDI_VIDEO_PRESENT_TARGET_ID, D3DKMDT_HVIDPNTARGETMODESET *, const DXGK_VIDPNTARGETMODESET_INTERFACE **);
    NTSTATUS (AEROGPU_DDI *pfnAssignTargetModeSet)(D3DKMDT_HVIDPN, D3DDDI_VIDEO_PRESENT_TARGET_ID, D3DKMDT_HVIDPNTARGETMODESET);
} DXGK_VIDPN_INTERFACE;
AEROGPU_DDI_ASSERT_SIZE(DXGK_VIDPN_INTERFACE, 44, 88);

#endif /* AEROGPU_D3DKMDDI_H */
