/* D3D user-mode display driver interface (subset, Windows 7 / D3D_UMD_INTERFACE_VERSION_WIN7):
 * the OpenAdapter handshake, the adapter table, the D3D9 device function table
 * (D3DDDI_DEVICEFUNCS), the runtime's device callbacks (D3DDDI_DEVICECALLBACKS) and the
 * argument structs of the DDIs the AeroGPU UMD implements.
 *
 * Source: Microsoft's public WDK documentation of d3dumddi.h (learn.microsoft.com,
 * "D3DDDI_DEVICEFUNCS structure", "D3DDDI_DEVICECALLBACKS structure", the PFND3DDDI_* and
 * PFND3DDDI_*CB pages and the D3DDDIARG_* / D3DDDICB_* structure pages). Member order is
 * the documented order; members the documentation marks "supported starting with Windows 8"
 * (or guarded by D3D_UMD_INTERFACE_VERSION_WIN8 / WDDM1_3 / WDDM2_0) are left out, because the
 * Windows 7 runtime allocates and reads the tables with the Windows 7 layout. Argument
 * structs whose layout could not be cross-checked against a Windows 7 WDK are marked
 * "unverified" (order and types from the public pages; sizes derived from them).
 *
 * Builds on Windows (mingw-w64) and on the host (Linux g++ unit tests): without <windows.h>
 * the few Win32 types used here are declared below with the Windows ABI sizes. */
#ifndef AEROGPU_D3DUMDDI_H
#define AEROGPU_D3DUMDDI_H

#if defined(_WIN32)
#include <windows.h>
#else
#include <stdint.h>
typedef void *HANDLE;
typedef int32_t HRESULT;
typedef unsigned int UINT;
typedef int INT;
typedef int BOOL;
typedef float FLOAT;
typedef uint8_t BYTE;
typedef uint16_t WORD;
typedef uint32_t DWORD;
typedef int32_t LONG;
typedef uint32_t ULONG;
typedef struct tagRECT { LONG left, top, right, bottom; } RECT;
typedef struct tagPOINT { LONG x, y; } POINT;
typedef struct tagPALETTEENTRY { BYTE peRed, peGreen, peBlue, peFlags; } PALETTEENTRY;
#define _WINDEF_ 1
#endif

#define AEROGPU_HAVE_UINT
#include "d3dukmdt.h"

/* D3D9 DDI interface/version the Windows 7 runtime passes to OpenAdapter. */
#define D3D_UMD_INTERFACE_VERSION_VISTA 0x000C
#define D3D_UMD_INTERFACE_VERSION_WIN7 0x2003

/* ---- Adapter ---------------------------------------------------------------------------- */

typedef struct _D3DDDIARG_GETCAPS {
    UINT Type; /* D3DDDICAPS_TYPE */
    void *pInfo;
    void *pData;
    UINT DataSize;
} D3DDDIARG_GETCAPS;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_GETCAPS, 16, 32);

/* D3DDDICAPS_TYPE (D3DDDIARG_GETCAPS.Type): numbered from 1 in the documented order. */
#define D3DDDICAPS_DDRAW 1
#define D3DDDICAPS_DDRAW_MODE_SPECIFIC 2
#define D3DDDICAPS_GETFORMATCOUNT 3
#define D3DDDICAPS_GETFORMATDATA 4
#define D3DDDICAPS_GETMULTISAMPLEQUALITYLEVELS 5
#define D3DDDICAPS_GETD3DQUERYCOUNT 6
#define D3DDDICAPS_GETD3DQUERYDATA 7
#define D3DDDICAPS_GETD3D3CAPS 8
#define D3DDDICAPS_GETD3D5CAPS 9
#define D3DDDICAPS_GETD3D6CAPS 10
#define D3DDDICAPS_GETD3D7CAPS 11
#define D3DDDICAPS_GETD3D8CAPS 12
#define D3DDDICAPS_GETD3D9CAPS 13
#define D3DDDICAPS_GETDECODEGUIDCOUNT 14
#define D3DDDICAPS_GETVIDEOPROCESSORDEVICEGUIDCOUNT 22
#define D3DDDICAPS_GETEXTENSIONGUIDCOUNT 31
#define D3DDDICAPS_GETGAMMARAMPCAPS 34

/* D3DDDICAPS_DDRAW */
typedef struct _DDRAW_CAPS {
    UINT Caps;
    UINT Caps2;
    UINT CKeyCaps;
    UINT FxCaps;
    UINT MaxVideoPorts;
} DDRAW_CAPS;
AEROGPU_DDI_ASSERT_SIZE(DDRAW_CAPS, 20, 20);
#define DDRAW_CAPS2_FLIPINTERVAL 0x00000004u
#define DDRAW_CAPS2_FLIPNOVSYNC 0x00000008u
#define DDRAW_CAPS2_DYNAMICTEXTURES 0x00000010u

/* D3DDDICAPS_DDRAW_MODE_SPECIFIC (pInfo: the head/VidPN source, UINT) */
typedef struct _DDRAW_MODE_SPECIFIC_CAPS {
    UINT Head;
    UINT Caps;
    UINT CKeyCaps;
    UINT FxCaps;
    UINT MaxVisibleOverlays;
    UINT MinOverlayStretch;
    UINT MaxOverlayStretch;
} DDRAW_MODE_SPECIFIC_CAPS;
AEROGPU_DDI_ASSERT_SIZE(DDRAW_MODE_SPECIFIC_CAPS, 28, 28);
#define MODE_CAPS_READSCANLINE 0x00000020u

/* D3DDDICAPS_GETFORMATDATA: an array of FORMATOP (GETFORMATCOUNT gives its length). */
typedef struct _FORMATOP {
    D3DDDIFORMAT Format;
    UINT Operations;
    UINT FlipMsTypes;
    UINT BltMsTypes;
    UINT PrivateFormatBitCount;
} FORMATOP;
AEROGPU_DDI_ASSERT_SIZE(FORMATOP, 20, 20);
#define FORMATOP_TEXTURE 0x00000001u
#define FORMATOP_VOLUMETEXTURE 0x00000002u
#define FORMATOP_CUBETEXTURE 0x00000004u
#define FORMATOP_OFFSCREEN_RENDERTARGET 0x00000008u
#define FORMATOP_SAME_FORMAT_RENDERTARGET 0x00000010u
#define FORMATOP_ZSTENCIL 0x00000040u
#define FORMATOP_ZSTENCIL_WITH_ARBITRARY_COLOR_DEPTH 0x00000080u
#define FORMATOP_SAME_FORMAT_UP_TO_ALPHA_RENDERTARGET 0x00000100u
#define FORMATOP_DISPLAYMODE 0x00000400u
#define FORMATOP_3DACCELERATION 0x00000800u
#define FORMATOP_OFFSCREENPLAIN 0x00004000u
#define FORMATOP_BUMPMAP 0x00010000u
#define FORMATOP_NOFILTER 0x00040000u
#define FORMATOP_MEMBEROFGROUP_ARGB 0x00080000u
#define FORMATOP_NOALPHABLEND 0x00200000u
#define FORMATOP_AUTOGENMIPMAP 0x00400000u
#define FORMATOP_VERTEXTEXTURE 0x00800000u

/* D3DDDICAPS_GETMULTISAMPLEQUALITYLEVELS: pInfo/pData point at this (in: Format, Flip,
 * MsType; out: QualityLevels). */
typedef struct _DDIMULTISAMPLEQUALITYLEVELSDATA {
    D3DDDIFORMAT Format;
    BOOL Flip;
    UINT MsType; /* D3DDDIMULTISAMPLE_TYPE */
    UINT QualityLevels;
} DDIMULTISAMPLEQUALITYLEVELSDATA;
AEROGPU_DDI_ASSERT_SIZE(DDIMULTISAMPLEQUALITYLEVELSDATA, 16, 16);

struct _D3DDDIARG_CREATEDEVICE;
typedef HRESULT (APIENTRY *PFND3DDDI_GETCAPS)(HANDLE hAdapter, const D3DDDIARG_GETCAPS *);
typedef HRESULT (APIENTRY *PFND3DDDI_CREATEDEVICE)(HANDLE hAdapter, struct _D3DDDIARG_CREATEDEVICE *);
typedef HRESULT (APIENTRY *PFND3DDDI_CLOSEADAPTER)(HANDLE hAdapter);

typedef struct _D3DDDI_ADAPTERFUNCS {
    PFND3DDDI_GETCAPS pfnGetCaps;
    PFND3DDDI_CREATEDEVICE pfnCreateDevice;
    PFND3DDDI_CLOSEADAPTER pfnCloseAdapter;
} D3DDDI_ADAPTERFUNCS;
AEROGPU_DDI_ASSERT_SIZE(D3DDDI_ADAPTERFUNCS, 12, 24);

typedef struct _D3DDDICB_QUERYADAPTERINFO {
    void *pPrivateDriverData;
    UINT PrivateDriverDataSize;
} D3DDDICB_QUERYADAPTERINFO;

typedef struct _D3DDDI_ADAPTERCALLBACKS {
    HRESULT (APIENTRY *pfnQueryAdapterInfoCb)(HANDLE hAdapter, const D3DDDICB_QUERYADAPTERINFO *);
    void *pfnGetMultisampleMethodListCb; /* Windows 7 */
} D3DDDI_ADAPTERCALLBACKS;

typedef struct _D3DDDIARG_OPENADAPTER {
    HANDLE hAdapter;                               /* in: runtime handle; out: driver's */
    UINT Interface;
    UINT Version;
    const D3DDDI_ADAPTERCALLBACKS *pAdapterCallbacks;
    D3DDDI_ADAPTERFUNCS *pAdapterFuncs;            /* out */
    UINT DriverVersion;                            /* out */
} D3DDDIARG_OPENADAPTER;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_OPENADAPTER, 24, 40);
AEROGPU_DDI_ASSERT_OFFSET(D3DDDIARG_OPENADAPTER, pAdapterFuncs, 16, 24);

/* ---- Runtime callbacks (D3DDDI_DEVICECALLBACKS) ----------------------------------------- */

/* pfnAllocateCb: allocations of one resource, each with the KMD's private data blob. */
typedef struct _D3DDDICB_ALLOCATE {
    const void *pPrivateDriverData; /* per-resource blob (may be NULL) */
    UINT PrivateDriverDataSize;
    HANDLE hResource;               /* runtime resource handle, NULL for device allocations */
    D3DKMT_HANDLE hKMResource;      /* out */
    UINT NumAllocations;
    D3DDDI_ALLOCATIONINFO *pAllocationInfo;
} D3DDDICB_ALLOCATE;
AEROGPU_DDI_ASSERT_SIZE(D3DDDICB_ALLOCATE, 24, 40);

typedef struct _D3DDDICB_DEALLOCATE {
    HANDLE hResource;
    UINT NumAllocations;
    const D3DKMT_HANDLE *HandleList;
} D3DDDICB_DEALLOCATE;
AEROGPU_DDI_ASSERT_SIZE(D3DDDICB_DEALLOCATE, 12, 24);

typedef struct _D3DDDICB_LOCKFLAGS {
    union {
        struct {
            UINT ReadOnly : 1;
            UINT WriteOnly : 1;
            UINT DonotWait : 1;
            UINT IgnoreSync : 1;
            UINT LockEntire : 1;
            UINT DonotEvict : 1;
            UINT AcquireAperture : 1;
            UINT Discard : 1;
            UINT NoExistingReference : 1;
            UINT UseAlternateVA : 1;
            UINT IgnoreReadSync : 1;
            UINT Reserved : 21;
        };
        UINT Value;
    };
} D3DDDICB_LOCKFLAGS;

typedef struct _D3DDDICB_LOCK {
    D3DKMT_HANDLE hAllocation;
    UINT PrivateDriverData;
    UINT NumPages;
    const UINT *pPages;
    void *pData; /* out: CPU address of the allocation */
    D3DDDICB_LOCKFLAGS Flags;
} D3DDDICB_LOCK;
AEROGPU_DDI_ASSERT_SIZE(D3DDDICB_LOCK, 24, 40);

typedef struct _D3DDDICB_UNLOCK {
    UINT NumAllocations;
    const D3DKMT_HANDLE *phAllocations;
} D3DDDICB_UNLOCK;

#define D3DDDI_MAX_BROADCAST_CONTEXT 64

typedef struct _D3DDDICB_RENDERFLAGS {
    union {
        struct {
            UINT ResizeCommandBuffer : 1;
            UINT ResizeAllocationList : 1;
            UINT ResizePatchLocationList : 1;
            UINT NullRendering : 1;
            UINT Reserved : 28;
        };
        UINT Value;
    };
} D3DDDICB_RENDERFLAGS;

/* pfnRenderCb (Windows 7 layout: the members after QueuedBufferCount are WDDM 2.0+; one old
 * MSDN revision shows NewCommandBuffer, pPrivateDriverData and PrivateDriverDataSize under a
 * WIN7 interface guard, but NewCommandBuffer's D3DGPU_VIRTUAL_ADDRESS is a WDDM 2.0 type:
 * unverified, left out, so the UMD sees no DMA buffer private data on Windows 7).
 * A missing or too small command buffer / allocation list is asked for with the Resize*
 * flags and the wanted sizes in NewCommandBufferSize / NewAllocationListSize. */
typedef struct _D3DDDICB_RENDER {
    UINT CommandLength;
    UINT CommandOffset;
    UINT NumAllocations;
    UINT NumPatchLocations;
    void *pNewCommandBuffer;          /* out */
    UINT NewCommandBufferSize;        /* in/out */
    D3DDDI_ALLOCATIONLIST *pNewAllocationList;         /* out */
    UINT NewAllocationListSize;       /* in/out */
    D3DDDI_PATCHLOCATIONLIST *pNewPatchLocationList;   /* out */
    UINT NewPatchLocationListSize;    /* in/out */
    D3DDDICB_RENDERFLAGS Flags;
    HANDLE hContext;
    UINT BroadcastContextCount;
    HANDLE BroadcastContext[D3DDDI_MAX_BROADCAST_CONTEXT];
    ULONG QueuedBufferCount;          /* out */
} D3DDDICB_RENDER;
AEROGPU_DDI_ASSERT_OFFSET(D3DDDICB_RENDER, hContext, 44, 64);
AEROGPU_DDI_ASSERT_SIZE(D3DDDICB_RENDER, 312, 600);

/* pfnPresentCb (Windows 7 layout, unverified: the members documented after BroadcastContext,
 * broadcast allocations, private driver data and composition hints, are left out; the public
 * page does not say which Windows added them). */
typedef struct _D3DDDICB_PRESENT {
    D3DKMT_HANDLE hSrcAllocation;
    D3DKMT_HANDLE hDstAllocation;
    HANDLE hContext;
    UINT BroadcastContextCount;
    HANDLE BroadcastContext[D3DDDI_MAX_BROADCAST_CONTEXT];
} D3DDDICB_PRESENT;
AEROGPU_DDI_ASSERT_SIZE(D3DDDICB_PRESENT, 272, 536);

/* pfnEscapeCb (unverified: hContext as documented for Windows 7). */
typedef struct _D3DDDICB_ESCAPE {
    HANDLE hDevice;
    D3DDDI_ESCAPEFLAGS Flags;
    void *pPrivateDriverData;
    UINT PrivateDriverDataSize;
    HANDLE hContext;
} D3DDDICB_ESCAPE;
AEROGPU_DDI_ASSERT_SIZE(D3DDDICB_ESCAPE, 20, 40);

/* pfnCreateContextCb: the context D3D9 submits on, with its first command buffer and
 * allocation list (Windows 7 layout: the GPU VA CommandBuffer member is Windows 8+). */
typedef struct _D3DDDICB_CREATECONTEXT {
    UINT NodeOrdinal;
    UINT EngineAffinity;
    D3DDDI_CREATECONTEXTFLAGS Flags;
    void *pPrivateDriverData;
    UINT PrivateDriverDataSize;
    HANDLE hContext;                          /* out */
    void *pCommandBuffer;                     /* out */
    UINT CommandBufferSize;                   /* out */
    D3DDDI_ALLOCATIONLIST *pAllocationList;   /* out */
    UINT AllocationListSize;                  /* out */
    D3DDDI_PATCHLOCATIONLIST *pPatchLocationList; /* out */
    UINT PatchLocationListSize;               /* out */
} D3DDDICB_CREATECONTEXT;
AEROGPU_DDI_ASSERT_SIZE(D3DDDICB_CREATECONTEXT, 48, 88);

typedef struct _D3DDDICB_DESTROYCONTEXT {
    HANDLE hContext;
} D3DDDICB_DESTROYCONTEXT;

/* Callbacks this UMD does not call are declared with their documented arity and an opaque
 * argument pointer. */
typedef HRESULT (APIENTRY *PFND3DDDI_OPAQUECB)(HANDLE hDevice, void *);

typedef struct _D3DDDI_DEVICECALLBACKS {
    HRESULT (APIENTRY *pfnAllocateCb)(HANDLE hDevice, D3DDDICB_ALLOCATE *);
    HRESULT (APIENTRY *pfnDeallocateCb)(HANDLE hDevice, const D3DDDICB_DEALLOCATE *);
    PFND3DDDI_OPAQUECB pfnSetPriorityCb;
    PFND3DDDI_OPAQUECB pfnQueryResidencyCb;
    PFND3DDDI_OPAQUECB pfnSetDisplayModeCb;
    HRESULT (APIENTRY *pfnPresentCb)(HANDLE hDevice, D3DDDICB_PRESENT *);
    HRESULT (APIENTRY *pfnRenderCb)(HANDLE hDevice, D3DDDICB_RENDER *);
    HRESULT (APIENTRY *pfnLockCb)(HANDLE hDevice, D3DDDICB_LOCK *);
    HRESULT (APIENTRY *pfnUnlockCb)(HANDLE hDevice, const D3DDDICB_UNLOCK *);
    HRESULT (APIENTRY *pfnEscapeCb)(HANDLE hAdapter, const D3DDDICB_ESCAPE *);
    PFND3DDDI_OPAQUECB pfnCreateOverlayCb;
    PFND3DDDI_OPAQUECB pfnUpdateOverlayCb;
    PFND3DDDI_OPAQUECB pfnFlipOverlayCb;
    PFND3DDDI_OPAQUECB pfnDestroyOverlayCb;
    HRESULT (APIENTRY *pfnCreateContextCb)(HANDLE hDevice, D3DDDICB_CREATECONTEXT *);
    HRESULT (APIENTRY *pfnDestroyContextCb)(HANDLE hDevice, const D3DDDICB_DESTROYCONTEXT *);
    PFND3DDDI_OPAQUECB pfnCreateSynchronizationObjectCb;
    PFND3DDDI_OPAQUECB pfnDestroySynchronizationObjectCb;
    PFND3DDDI_OPAQUECB pfnWaitForSynchronizationObjectCb;
    PFND3DDDI_OPAQUECB pfnSignalSynchronizationObjectCb;
    PFND3DDDI_OPAQUECB pfnSetAsyncCallbacksCb;
    PFND3DDDI_OPAQUECB pfnSetDisplayPrivateDriverFormatCb;
} D3DDDI_DEVICECALLBACKS;
/* 22 callbacks in Windows 7 (the offer/reclaim and later callbacks are Windows 8+). */
AEROGPU_DDI_ASSERT_SIZE(D3DDDI_DEVICECALLBACKS, 22 * 4, 22 * 8);
AEROGPU_DDI_ASSERT_OFFSET(D3DDDI_DEVICECALLBACKS, pfnRenderCb, 6 * 4, 6 * 8);

/* ---- Argument structs of the DDIs the UMD implements ------------------------------------ */

typedef struct _D3DDDIARG_RENDERSTATE {
    UINT State; /* D3DRENDERSTATETYPE */
    UINT Value;
} D3DDDIARG_RENDERSTATE;

typedef struct _D3DDDIARG_TEXTURESTAGESTATE {
    UINT Stage;
    UINT State; /* D3DDDITEXTURESTAGESTATETYPE (sampler states in the D3DTSS_ADDRESSU.. range) */
    UINT Value;
} D3DDDIARG_TEXTURESTAGESTATE;

typedef struct _D3DDDIARG_SETPIXELSHADERCONST {
    UINT Register;
    UINT Count;
} D3DDDIARG_SETPIXELSHADERCONST;

typedef struct _D3DDDIARG_SETVERTEXSHADERCONST {
    UINT Register;
    UINT Count;
} D3DDDIARG_SETVERTEXSHADERCONST;

typedef struct _D3DDDIARG_SETSTREAMSOURCEUM {
    UINT Stream;
    UINT Stride;
} D3DDDIARG_SETSTREAMSOURCEUM;

typedef struct _D3DDDIARG_SETINDICES {
    HANDLE hIndexBuffer;
    UINT Stride; /* 2 or 4 */
} D3DDDIARG_SETINDICES;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_SETINDICES, 8, 16);

typedef struct _D3DDDIARG_SETSTREAMSOURCE {
    UINT Stream;
    HANDLE hVertexBuffer;
    UINT Offset;
    UINT Stride;
} D3DDDIARG_SETSTREAMSOURCE;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_SETSTREAMSOURCE, 16, 24);

typedef struct _D3DDDIARG_DRAWPRIMITIVE {
    UINT PrimitiveType; /* D3DPRIMITIVETYPE */
    UINT VStart;
    UINT PrimitiveCount;
} D3DDDIARG_DRAWPRIMITIVE;

typedef struct _D3DDDIARG_DRAWINDEXEDPRIMITIVE {
    UINT PrimitiveType;
    INT BaseVertexIndex;
    UINT MinIndex;
    UINT NumVertices;
    UINT StartIndex;
    UINT PrimitiveCount;
} D3DDDIARG_DRAWINDEXEDPRIMITIVE;

typedef struct _D3DDDIARG_DRAWPRIMITIVE2 {
    UINT PrimitiveType;
    UINT FirstVertexOffset; /* bytes into stream 0 */
    UINT PrimitiveCount;
} D3DDDIARG_DRAWPRIMITIVE2;

/* Offsets in bytes (as DrawPrimitive2's FirstVertexOffset): BaseVertexOffset into stream 0
 * (may be negative as long as offset + index * stride is not), StartIndexOffset into the
 * index data passed by pointer with the call. */
typedef struct _D3DDDIARG_DRAWINDEXEDPRIMITIVE2 {
    UINT PrimitiveType;
    INT BaseVertexOffset;
    UINT MinIndex;
    UINT NumVertices;
    UINT StartIndexOffset;
    UINT PrimitiveCount;
} D3DDDIARG_DRAWINDEXEDPRIMITIVE2;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_DRAWINDEXEDPRIMITIVE2, 24, 24);

/* D3DHAL_STATESETOP values (unverified ordering, from the public d3dhal documentation). */
#define D3DHAL_STATESETBEGIN 0
#define D3DHAL_STATESETEND 1
#define D3DHAL_STATESETDELETE 2
#define D3DHAL_STATESETEXECUTE 3
#define D3DHAL_STATESETCAPTURE 4
#define D3DHAL_STATESETCREATE 5

/* unverified */
typedef struct _D3DDDIARG_STATESET {
    UINT Operation;      /* D3DHAL_STATESETOP */
    HANDLE hStateSet;
    UINT StateBlockType; /* D3DSTATEBLOCKTYPE: 1 ALL, 2 PIXELSTATE, 3 VERTEXSTATE */
} D3DDDIARG_STATESET;

typedef struct _D3DDDIARG_CLEAR {
    UINT Flags;      /* D3DCLEAR_TARGET 1, ZBUFFER 2, STENCIL 4 */
    UINT FillColor;  /* A8R8G8B8 */
    FLOAT FillDepth;
    UINT FillStencil;
} D3DDDIARG_CLEAR;

typedef struct _D3DDDIARG_VIEWPORTINFO {
    UINT X;
    UINT Y;
    UINT Width;
    UINT Height;
} D3DDDIARG_VIEWPORTINFO;

typedef struct _D3DDDIARG_ZRANGE {
    FLOAT MinZ;
    FLOAT MaxZ;
} D3DDDIARG_ZRANGE;

typedef struct _D3DDDIRANGE {
    UINT Offset;
    UINT Size;
} D3DDDIRANGE;

typedef struct _D3DDDIBOX {
    UINT Left, Top, Right, Bottom, Front, Back;
} D3DDDIBOX;

typedef struct _D3DDDI_LOCKFLAGS {
    union {
        struct {
            UINT ReadOnly : 1;
            UINT WriteOnly : 1;
            UINT NoOverwrite : 1;
            UINT Discard : 1;
            UINT RangeValid : 1;
            UINT AreaValid : 1;
            UINT BoxValid : 1;
            UINT NoSysLock : 1;
            UINT NotifyOnly : 1;
            UINT MightDrawFromLocked : 1;
            UINT DoNotWait : 1;
            UINT Reserved : 21;
        };
        UINT Value;
    };
} D3DDDI_LOCKFLAGS;

typedef struct _D3DDDIARG_LOCK {
    HANDLE hResource;
    UINT SubResourceIndex;
    union {
        D3DDDIRANGE Range; /* Flags.RangeValid */
        RECT Area;         /* Flags.AreaValid */
        D3DDDIBOX Box;     /* Flags.BoxValid */
    };
    void *pSurfData; /* out */
    UINT Pitch;      /* out */
    UINT SlicePitch; /* out */
    D3DDDI_LOCKFLAGS Flags;
} D3DDDIARG_LOCK;
AEROGPU_DDI_ASSERT_OFFSET(D3DDDIARG_LOCK, pSurfData, 32, 40);
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_LOCK, 48, 64);

typedef struct _D3DDDIARG_UNLOCK {
    HANDLE hResource;
    UINT SubResourceIndex;
    UINT Flags; /* D3DDDI_UNLOCKFLAGS */
} D3DDDIARG_UNLOCK;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_UNLOCK, 12, 16);

typedef enum _D3DDDI_POOL {
    D3DDDIPOOL_SYSTEMMEM = 1,
    D3DDDIPOOL_VIDEOMEMORY = 2,
    D3DDDIPOOL_LOCALVIDMEM = 3,
    D3DDDIPOOL_NONLOCALVIDMEM = 4
} D3DDDI_POOL;

typedef struct _D3DDDI_SURFACEINFO {
    UINT Width;
    UINT Height;
    UINT Depth;
    const void *pSysMem;
    UINT SysMemPitch;
    UINT SysMemSlicePitch;
} D3DDDI_SURFACEINFO;
AEROGPU_DDI_ASSERT_SIZE(D3DDDI_SURFACEINFO, 24, 32);

/* unverified bit order beyond the first members (public D3DDDI_RESOURCEFLAGS page). */
typedef struct _D3DDDI_RESOURCEFLAGS {
    union {
        struct {
            UINT RenderTarget : 1;
            UINT ZBuffer : 1;
            UINT Dynamic : 1;
            UINT HintStatic : 1;
            UINT AutogenMipmap : 1;
            UINT DMap : 1;
            UINT WriteOnly : 1;
            UINT NotLockable : 1;
            UINT Points : 1;
            UINT RtPatches : 1;
            UINT NPatches : 1;
            UINT SharedResource : 1;
            UINT DiscardRenderTarget : 1;
            UINT Video : 1;
            UINT CaptureBuffer : 1;
            UINT Primary : 1;
            UINT Texture : 1;
            UINT CubeMap : 1;
            UINT Volume : 1;
            UINT VertexBuffer : 1;
            UINT IndexBuffer : 1;
            UINT DecodeRenderTarget : 1;
            UINT DecodeCompressedBuffer : 1;
            UINT VideoProcessRenderTarget : 1;
            UINT CpuOptimized : 1;
            UINT MightDrawFromLocked : 1;
            UINT Overlay : 1;
            UINT MatchGdiPrimary : 1;
            UINT InterlacedRefresh : 1;
            UINT TextApi : 1;
            UINT RestrictedContent : 1;
            UINT RestrictSharedAccess : 1;
        };
        UINT Value;
    };
} D3DDDI_RESOURCEFLAGS;
AEROGPU_DDI_STATIC_ASSERT(sizeof(D3DDDI_RESOURCEFLAGS) == 4, "D3DDDI_RESOURCEFLAGS");

typedef struct _D3DDDIARG_CREATERESOURCE {
    D3DDDIFORMAT Format;
    D3DDDI_POOL Pool;
    UINT MultisampleType;
    UINT MultisampleQuality;
    const D3DDDI_SURFACEINFO *pSurfList;
    UINT SurfCount;
    UINT MipLevels;
    UINT Fvf;
    D3DDDI_VIDEO_PRESENT_SOURCE_ID VidPnSourceId;
    D3DDDI_RATIONAL RefreshRate;
    HANDLE hResource; /* in: runtime handle; out: driver handle */
    D3DDDI_RESOURCEFLAGS Flags;
    D3DDDI_ROTATION Rotation;
} D3DDDIARG_CREATERESOURCE;
AEROGPU_DDI_ASSERT_OFFSET(D3DDDIARG_CREATERESOURCE, hResource, 44, 48);
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_CREATERESOURCE, 56, 64);

typedef struct _D3DDDI_OPENALLOCATIONINFO {
    D3DKMT_HANDLE hAllocation;
    const void *pPrivateDriverData;
    UINT PrivateDriverDataSize;
} D3DDDI_OPENALLOCATIONINFO;
AEROGPU_DDI_ASSERT_SIZE(D3DDDI_OPENALLOCATIONINFO, 12, 24);

typedef struct _D3DDDIARG_OPENRESOURCE {
    UINT NumAllocations;
    D3DDDI_OPENALLOCATIONINFO *pOpenAllocationInfo;
    D3DKMT_HANDLE hKMResource;
    void *pPrivateDriverData;
    UINT PrivateDriverDataSize;
    HANDLE hResource; /* in: runtime handle; out: driver handle */
    D3DDDI_ROTATION Rotation;
    UINT Flags; /* D3DDDI_OPENRESOURCEFLAGS */
} D3DDDIARG_OPENRESOURCE;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_OPENRESOURCE, 32, 56);

typedef struct _D3DDDI_PRESENTFLAGS {
    union {
        struct {
            UINT Blt : 1;
            UINT ColorFill : 1;
            UINT Flip : 1;
            UINT Reserved : 29;
        };
        UINT Value;
    };
} D3DDDI_PRESENTFLAGS;

typedef struct _D3DDDIARG_PRESENT {
    HANDLE hSrcResource;
    UINT SrcSubResourceIndex;
    HANDLE hDstResource;
    UINT DstSubResourceIndex;
    D3DDDI_PRESENTFLAGS Flags;
    UINT FlipInterval; /* D3DDDI_FLIPINTERVAL_TYPE: 0 immediate, 1..4 vsync intervals */
} D3DDDIARG_PRESENT;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_PRESENT, 24, 40);

typedef struct _D3DDDIARG_CREATEVERTEXSHADERFUNC {
    HANDLE ShaderHandle; /* out */
    UINT Size;           /* bytes of the token stream */
} D3DDDIARG_CREATEVERTEXSHADERFUNC;

typedef struct _D3DDDIARG_CREATEPIXELSHADER {
    HANDLE ShaderHandle; /* out */
    UINT CodeSize;
} D3DDDIARG_CREATEPIXELSHADER;

typedef struct _D3DDDIARG_CREATEVERTEXSHADERDECL {
    HANDLE ShaderHandle; /* out */
    UINT NumVertexElements;
} D3DDDIARG_CREATEVERTEXSHADERDECL;

/* Same layout as D3DVERTEXELEMENT9; the DDI array has no D3DDECL_END terminator. */
typedef struct _D3DDDIVERTEXELEMENT {
    WORD Stream;
    WORD Offset;
    BYTE Type;
    BYTE Method;
    BYTE Usage;
    BYTE UsageIndex;
} D3DDDIVERTEXELEMENT;
AEROGPU_DDI_STATIC_ASSERT(sizeof(D3DDDIVERTEXELEMENT) == 8, "D3DDDIVERTEXELEMENT");

typedef struct _D3DDDIARG_BLT {
    HANDLE hSrcResource;
    UINT SrcSubResourceIndex;
    RECT SrcRect;
    HANDLE hDstResource;
    UINT DstSubResourceIndex;
    RECT DstRect;
    UINT ColorKey;
    UINT Flags; /* D3DDDI_BLTFLAGS */
} D3DDDIARG_BLT;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_BLT, 56, 72);

/* Bits of D3DDDI_BLTFLAGS.Value (the SDK declares them as bit-fields, in this order). */
#define AEROGPU_BLT_POINT 0x00000001u
#define AEROGPU_BLT_LINEAR 0x00000002u
#define AEROGPU_BLT_SRCCOLORKEY 0x00000004u
#define AEROGPU_BLT_DSTCOLORKEY 0x00000008u
#define AEROGPU_BLT_MIRRORLEFTRIGHT 0x00000010u
#define AEROGPU_BLT_MIRRORUPDOWN 0x00000020u
#define AEROGPU_BLT_LINEARTOSRGB 0x00000040u
#define AEROGPU_BLT_ROTATE 0x00000080u
#define AEROGPU_BLT_BEGINPRESENTTODWM 0x00000100u
#define AEROGPU_BLT_CONTINUEPRESENTTODWM 0x00000200u
#define AEROGPU_BLT_ENDPRESENTTODWM 0x00000400u

typedef struct _D3DDDIARG_COLORFILL {
    HANDLE hResource;
    UINT SubResourceIndex;
    RECT DstRect;
    UINT Color; /* A8R8G8B8 */
    UINT Flags; /* D3DDDI_COLORFILLFLAGS */
} D3DDDIARG_COLORFILL;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_COLORFILL, 32, 40);

#define D3DDDIQUERYTYPE_EVENT 8

typedef struct _D3DDDIARG_CREATEQUERY {
    UINT QueryType; /* D3DDDIQUERYTYPE */
    HANDLE hQuery;  /* out */
} D3DDDIARG_CREATEQUERY;

#define D3DDDIISSUE_END 0x1
#define D3DDDIISSUE_BEGIN 0x2

typedef struct _D3DDDIARG_ISSUEQUERY {
    HANDLE hQuery;
    UINT Flags; /* D3DDDI_ISSUEQUERYFLAGS: Begin/End bits (unverified bit order) */
} D3DDDIARG_ISSUEQUERY;

typedef struct _D3DDDIARG_GETQUERYDATA {
    HANDLE hQuery;
    void *pData; /* out: EVENT writes a BOOL */
} D3DDDIARG_GETQUERYDATA;

typedef struct _D3DDDIARG_SETRENDERTARGET {
    UINT RenderTargetIndex;
    HANDLE hRenderTarget;
    UINT SubResourceIndex;
} D3DDDIARG_SETRENDERTARGET;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_SETRENDERTARGET, 12, 24);

typedef struct _D3DDDIARG_SETDEPTHSTENCIL {
    HANDLE hZBuffer;
} D3DDDIARG_SETDEPTHSTENCIL;

/* UpdateTexture/UpdateSurface: the runtime copies SrcRect of hSrcResource (usually a
 * system-memory texture) to DstPoint of hDstResource. */
typedef struct _D3DDDIARG_TEXBLT {
    HANDLE hDstResource;
    HANDLE hSrcResource;
    UINT CubeMapFace;
    POINT DstPoint;
    RECT SrcRect;
} D3DDDIARG_TEXBLT;
AEROGPU_DDI_ASSERT_OFFSET(D3DDDIARG_TEXBLT, DstPoint, 12, 20);
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_TEXBLT, 36, 48);

/* UpdateTexture of volume textures: SrcBox of hSrcResource to (DstX, DstY, DstZ) of
 * hDstResource. */
typedef struct _D3DDDIARG_VOLUMEBLT {
    HANDLE hDstResource;
    HANDLE hSrcResource;
    UINT DstX;
    UINT DstY;
    UINT DstZ;
    D3DDDIBOX SrcBox;
} D3DDDIARG_VOLUMEBLT;
AEROGPU_DDI_ASSERT_OFFSET(D3DDDIARG_VOLUMEBLT, SrcBox, 20, 28);
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_VOLUMEBLT, 44, 56);

/* Vertex/index buffer copy: SrcRange (bytes) of hSrcResource to Offset (bytes) of hDstResource. */
typedef struct _D3DDDIARG_BUFFERBLT {
    HANDLE hDstResource;
    HANDLE hSrcResource;
    UINT Offset;
    D3DDDIRANGE SrcRange;
} D3DDDIARG_BUFFERBLT;
AEROGPU_DDI_ASSERT_OFFSET(D3DDDIARG_BUFFERBLT, SrcRange, 12, 20);
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_BUFFERBLT, 20, 32);

/* Depth is a pixel value in the depth surface's own format. */
typedef struct _D3DDDIARG_DEPTHFILL {
    HANDLE hResource;
    UINT SubResourceIndex;
    RECT DstRect;
    UINT Depth;
} D3DDDIARG_DEPTHFILL;
AEROGPU_DDI_ASSERT_OFFSET(D3DDDIARG_DEPTHFILL, Depth, 24, 28);
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_DEPTHFILL, 28, 32);

typedef struct _D3DDDIARG_SETDISPLAYMODE {
    HANDLE hResource; /* the primary whose mode becomes the display mode */
    UINT SubResourceIndex;
} D3DDDIARG_SETDISPLAYMODE;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_SETDISPLAYMODE, 8, 16);

/* pfnGetInfo: DevInfoID D3DDDIDEVINFOID_VCACHE fills D3DDDIDEVINFO_VCACHE. */
#define D3DDDIDEVINFOID_VCACHE 4
typedef struct _D3DDDIDEVINFO_VCACHE {
    UINT Pattern;     /* MAKEFOURCC('C','A','C','H') */
    UINT OptMethod;   /* 0: longest strips, 1: vertex-cache based */
    UINT CacheSize;   /* entries (OptMethod 1 only) */
    UINT MagicNumber; /* strip restart heuristic (OptMethod 1 only) */
} D3DDDIDEVINFO_VCACHE;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIDEVINFO_VCACHE, 16, 16);

/* ---- Legacy (fixed-function / resource) state: cached by the UMD, never emitted ---------- */

/* Same layouts as the SDK's d3d9types.h types (guarded by its own macros). */
#ifndef D3DCOLORVALUE_DEFINED
typedef struct _D3DCOLORVALUE {
    FLOAT r, g, b, a;
} D3DCOLORVALUE;
#define D3DCOLORVALUE_DEFINED
#endif
#ifndef D3DVECTOR_DEFINED
typedef struct _D3DVECTOR {
    FLOAT x, y, z;
} D3DVECTOR;
#define D3DVECTOR_DEFINED
#endif
#ifndef D3DMATRIX_DEFINED
typedef struct _D3DMATRIX {
    FLOAT m[4][4];
} D3DMATRIX;
#define D3DMATRIX_DEFINED
#endif

typedef struct _D3DDDIARG_WINFO {
    FLOAT WNear;
    FLOAT WFar;
} D3DDDIARG_WINFO;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_WINFO, 8, 8);

typedef struct _D3DDDIARG_SETPRIORITY {
    HANDLE hResource;
    UINT Priority;
} D3DDDIARG_SETPRIORITY;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_SETPRIORITY, 8, 16);

/* pfnUpdatePalette's third argument is NumEntries PALETTEENTRYs. */
typedef struct _D3DDDIARG_UPDATEPALETTE {
    UINT PaletteHandle;
    UINT StartIndex;
    UINT NumEntries;
} D3DDDIARG_UPDATEPALETTE;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_UPDATEPALETTE, 12, 12);

typedef struct _D3DDDIARG_SETPALETTE {
    UINT PaletteHandle; /* 0: detach hResource from its palette */
    UINT PaletteFlags;  /* D3DDDISETPALETTE_* */
    HANDLE hResource;
} D3DDDIARG_SETPALETTE;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_SETPALETTE, 12, 16);

typedef struct _D3DDDIARG_SETTRANSFORM {
    UINT TransformType; /* D3DTRANSFORMSTATETYPE */
    D3DMATRIX Matrix;
} D3DDDIARG_SETTRANSFORM;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_SETTRANSFORM, 68, 68);

typedef struct _D3DDDIARG_MULTIPLYTRANSFORM {
    UINT TransformType;
    D3DMATRIX Matrix;
} D3DDDIARG_MULTIPLYTRANSFORM;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_MULTIPLYTRANSFORM, 68, 68);

typedef struct _D3DDDIARG_SETMATERIAL {
    D3DCOLORVALUE Diffuse;
    D3DCOLORVALUE Ambient;
    D3DCOLORVALUE Specular;
    D3DCOLORVALUE Emissive;
    FLOAT Power;
} D3DDDIARG_SETMATERIAL;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_SETMATERIAL, 68, 68);

/* D3DDDI_SETLIGHT_TYPE */
#define D3DDDI_SETLIGHT_ENABLE 0
#define D3DDDI_SETLIGHT_DISABLE 1
#define D3DDDI_SETLIGHT_DATA 2

typedef struct _D3DDDIARG_SETLIGHT {
    UINT Index;
    UINT DataType; /* D3DDDI_SETLIGHT_TYPE; DATA: the light is the third argument */
} D3DDDIARG_SETLIGHT;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_SETLIGHT, 8, 8);

typedef struct _D3DDDI_LIGHT {
    UINT Type; /* D3DLIGHTTYPE */
    D3DCOLORVALUE Diffuse;
    D3DCOLORVALUE Specular;
    D3DCOLORVALUE Ambient;
    D3DVECTOR Position;
    D3DVECTOR Direction;
    FLOAT Range;
    FLOAT Falloff;
    FLOAT Attenuation0;
    FLOAT Attenuation1;
    FLOAT Attenuation2;
    FLOAT Theta;
    FLOAT Phi;
} D3DDDI_LIGHT;
AEROGPU_DDI_ASSERT_SIZE(D3DDDI_LIGHT, 104, 104);
AEROGPU_DDI_ASSERT_OFFSET(D3DDDI_LIGHT, Position, 52, 52);

typedef struct _D3DDDIARG_CREATELIGHT {
    UINT Index;
} D3DDDIARG_CREATELIGHT;

typedef struct _D3DDDIARG_DESTROYLIGHT {
    UINT Index;
} D3DDDIARG_DESTROYLIGHT;

typedef struct _D3DDDIARG_SETCLIPPLANE {
    UINT Index;
    FLOAT Plane[4]; /* A, B, C, D */
} D3DDDIARG_SETCLIPPLANE;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_SETCLIPPLANE, 20, 20);

/* Int constants: Count registers of 4 INTs; bool constants: Count BOOLs. */
typedef struct _D3DDDIARG_SETVERTEXSHADERCONSTI {
    UINT Register;
    UINT Count;
} D3DDDIARG_SETVERTEXSHADERCONSTI;
typedef struct _D3DDDIARG_SETVERTEXSHADERCONSTB {
    UINT Register;
    UINT Count;
} D3DDDIARG_SETVERTEXSHADERCONSTB;
typedef struct _D3DDDIARG_SETPIXELSHADERCONSTI {
    UINT Register;
    UINT Count;
} D3DDDIARG_SETPIXELSHADERCONSTI;
typedef struct _D3DDDIARG_SETPIXELSHADERCONSTB {
    UINT Register;
    UINT Count;
} D3DDDIARG_SETPIXELSHADERCONSTB;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_SETPIXELSHADERCONSTB, 8, 8);

typedef struct _D3DDDIARG_SETSTREAMSOURCEFREQ {
    UINT Stream;
    UINT Divider;
} D3DDDIARG_SETSTREAMSOURCEFREQ;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_SETSTREAMSOURCEFREQ, 8, 8);

typedef struct _D3DDDIARG_SETCONVOLUTIONKERNELMONO {
    UINT Width;
    UINT Height;
    FLOAT *pKernelRow;
    FLOAT *pKernelCol;
} D3DDDIARG_SETCONVOLUTIONKERNELMONO;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_SETCONVOLUTIONKERNELMONO, 16, 24);

typedef struct _D3DDDIARG_GENERATEMIPSUBLEVELS {
    HANDLE hResource;
    UINT Filter; /* D3DDDITEXTUREFILTERTYPE */
} D3DDDIARG_GENERATEMIPSUBLEVELS;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_GENERATEMIPSUBLEVELS, 8, 16);

/* ---- The D3D9 device function table ----------------------------------------------------- */

/* Argument structs of DDIs the UMD only stubs: opaque here. */
struct _D3DDDIARG_AUTHENTICATEDCHANNELKEYEXCHANGE;
struct _D3DDDIARG_CAPTURETOSYSMEM;
struct _D3DDDIARG_COMPOSERECTS;
struct _D3DDDIARG_CONFIGUREAUTHENTICATEDCHANNEL;
struct _D3DDDIARG_CREATEAUTHENTICATEDCHANNEL;
struct _D3DDDIARG_CREATECRYPTOSESSION;
struct _D3DDDIARG_CREATEDECODEDEVICE;
struct _D3DDDIARG_CREATEEXTENSIONDEVICE;
struct _D3DDDIARG_CREATEOVERLAY;
struct _D3DDDIARG_CREATEVIDEOPROCESSDEVICE;
struct _D3DDDIARG_CRYPTOSESSIONKEYEXCHANGE;
struct _D3DDDIARG_DECODEBEGINFRAME;
struct _D3DDDIARG_DECODEENDFRAME;
struct _D3DDDIARG_DECODEEXECUTE;
struct _D3DDDIARG_DECODEEXTENSIONEXECUTE;
struct _D3DDDIARG_DECRYPTIONBLT;
struct _D3DDDIARG_DESTROYAUTHENTICATEDCHANNEL;
struct _D3DDDIARG_DESTROYCRYPTOSESSION;
struct _D3DDDIARG_DESTROYOVERLAY;
struct _D3DDDIARG_DRAWRECTPATCH;
struct _D3DDDIARG_DRAWTRIPATCH;
struct _D3DDDIARG_DXVAHD_CREATEVIDEOPROCESSOR;
struct _D3DDDIARG_DXVAHD_GETVIDEOPROCESSBLTSTATEPRIVATE;
struct _D3DDDIARG_DXVAHD_GETVIDEOPROCESSSTREAMSTATEPRIVATE;
struct _D3DDDIARG_DXVAHD_SETVIDEOPROCESSBLTSTATE;
struct _D3DDDIARG_DXVAHD_SETVIDEOPROCESSSTREAMSTATE;
struct _D3DDDIARG_DXVAHD_VIDEOPROCESSBLTHD;
struct _D3DDDIARG_ENCRYPTIONBLT;
struct _D3DDDIARG_EXTENSIONEXECUTE;
struct _D3DDDIARG_FINISHSESSIONKEYREFRESH;
struct _D3DDDIARG_FLIPOVERLAY;
struct _D3DDDIARG_GETCAPTUREALLOCATIONHANDLE;
struct _D3DDDIARG_GETENCRYPTIONBLTKEY;
struct _D3DDDIARG_GETOVERLAYCOLORCONTROLS;
struct _D3DDDIARG_GETPITCH;
struct _D3DDDIARG_LOCKASYNC;
struct _D3DDDIARG_QUERYAUTHENTICATEDCHANNEL;
struct _D3DDDIARG_QUERYRESOURCERESIDENCY;
struct _D3DDDIARG_RENAME;
struct _D3DDDIARG_RESOLVESHAREDRESOURCE;
struct _D3DDDIARG_SETDECODERENDERTARGET;
struct _D3DDDIARG_SETOVERLAYCOLORCONTROLS;
struct _D3DDDIARG_SETVIDEOPROCESSRENDERTARGET;
struct _D3DDDIARG_STARTSESSIONKEYREFRESH;
struct _D3DDDIARG_UNLOCKASYNC;
struct _D3DDDIARG_UPDATEOVERLAY;
struct _D3DDDIARG_VALIDATETEXTURESTAGESTATE;
struct _D3DDDIARG_VIDEOPROCESSBLT;
struct _D3DDDIARG_VIDEOPROCESSENDFRAME;
struct _D3DDDIARG_VOLUMEBLT;
struct _D3DDDIRECTPATCH_INFO;
struct _D3DDDITRIPATCH_INFO;

/* X(member without the pfn prefix, PFND3DDDI_ suffix, parameter list), in the documented
 * Windows 7 order (index in the comment). The table, its typedefs, its member count and the
 * UMD's logging stubs are all generated from this one list. */
#define AEROGPU_D3DDDI_DEVICEFUNCS_LIST(X) \
    X(SetRenderState, SETRENDERSTATE, (HANDLE, const D3DDDIARG_RENDERSTATE *)) /* 0 */ \
    X(UpdateWInfo, UPDATEWINFO, (HANDLE, const struct _D3DDDIARG_WINFO *)) /* 1 */ \
    X(ValidateDevice, VALIDATEDEVICE, (HANDLE, struct _D3DDDIARG_VALIDATETEXTURESTAGESTATE *)) /* 2 */ \
    X(SetTextureStageState, SETTEXTURESTAGESTATE, (HANDLE, const D3DDDIARG_TEXTURESTAGESTATE *)) /* 3 */ \
    X(SetTexture, SETTEXTURE, (HANDLE, UINT, HANDLE)) /* 4 */ \
    X(SetPixelShader, SETPIXELSHADER, (HANDLE, HANDLE)) /* 5 */ \
    X(SetPixelShaderConst, SETPIXELSHADERCONST, (HANDLE, const D3DDDIARG_SETPIXELSHADERCONST *, const FLOAT *)) /* 6 */ \
    X(SetStreamSourceUm, SETSTREAMSOURCEUM, (HANDLE, const D3DDDIARG_SETSTREAMSOURCEUM *, const void *)) /* 7 */ \
    X(SetIndices, SETINDICES, (HANDLE, const D3DDDIARG_SETINDICES *)) /* 8 */ \
    X(SetIndicesUm, SETINDICESUM, (HANDLE, UINT, const void *)) /* 9 */ \
    X(DrawPrimitive, DRAWPRIMITIVE, (HANDLE, const D3DDDIARG_DRAWPRIMITIVE *, const UINT *)) /* 10 */ \
    X(DrawIndexedPrimitive, DRAWINDEXEDPRIMITIVE, (HANDLE, const D3DDDIARG_DRAWINDEXEDPRIMITIVE *)) /* 11 */ \
    X(DrawRectPatch, DRAWRECTPATCH, (HANDLE, const struct _D3DDDIARG_DRAWRECTPATCH *, const struct _D3DDDIRECTPATCH_INFO *, const FLOAT *)) /* 12 */ \
    X(DrawTriPatch, DRAWTRIPATCH, (HANDLE, const struct _D3DDDIARG_DRAWTRIPATCH *, const struct _D3DDDITRIPATCH_INFO *, const FLOAT *)) /* 13 */ \
    X(DrawPrimitive2, DRAWPRIMITIVE2, (HANDLE, const D3DDDIARG_DRAWPRIMITIVE2 *)) /* 14 */ \
    X(DrawIndexedPrimitive2, DRAWINDEXEDPRIMITIVE2, (HANDLE, const D3DDDIARG_DRAWINDEXEDPRIMITIVE2 *, UINT, const void *, const UINT *)) /* 15 */ \
    X(VolBlt, VOLBLT, (HANDLE, const struct _D3DDDIARG_VOLUMEBLT *)) /* 16 */ \
    X(BufBlt, BUFBLT, (HANDLE, const struct _D3DDDIARG_BUFFERBLT *)) /* 17 */ \
    X(TexBlt, TEXBLT, (HANDLE, const struct _D3DDDIARG_TEXBLT *)) /* 18 */ \
    X(StateSet, STATESET, (HANDLE, D3DDDIARG_STATESET *)) /* 19 */ \
    X(SetPriority, SETPRIORITY, (HANDLE, const struct _D3DDDIARG_SETPRIORITY *)) /* 20 */ \
    X(Clear, CLEAR, (HANDLE, const D3DDDIARG_CLEAR *, UINT, const RECT *)) /* 21 */ \
    X(UpdatePalette, UPDATEPALETTE, (HANDLE, const struct _D3DDDIARG_UPDATEPALETTE *, const PALETTEENTRY *)) /* 22 */ \
    X(SetPalette, SETPALETTE, (HANDLE, const struct _D3DDDIARG_SETPALETTE *)) /* 23 */ \
    X(SetVertexShaderConst, SETVERTEXSHADERCONST, (HANDLE, const D3DDDIARG_SETVERTEXSHADERCONST *, const void *)) /* 24 */ \
    X(MultiplyTransform, MULTIPLYTRANSFORM, (HANDLE, const struct _D3DDDIARG_MULTIPLYTRANSFORM *)) /* 25 */ \
    X(SetTransform, SETTRANSFORM, (HANDLE, const struct _D3DDDIARG_SETTRANSFORM *)) /* 26 */ \
    X(SetViewport, SETVIEWPORT, (HANDLE, const D3DDDIARG_VIEWPORTINFO *)) /* 27 */ \
    X(SetZRange, SETZRANGE, (HANDLE, const D3DDDIARG_ZRANGE *)) /* 28 */ \
    X(SetMaterial, SETMATERIAL, (HANDLE, const struct _D3DDDIARG_SETMATERIAL *)) /* 29 */ \
    X(SetLight, SETLIGHT, (HANDLE, const struct _D3DDDIARG_SETLIGHT *, const struct _D3DDDI_LIGHT *)) /* 30 */ \
    X(CreateLight, CREATELIGHT, (HANDLE, const struct _D3DDDIARG_CREATELIGHT *)) /* 31 */ \
    X(DestroyLight, DESTROYLIGHT, (HANDLE, const struct _D3DDDIARG_DESTROYLIGHT *)) /* 32 */ \
    X(SetClipPlane, SETCLIPPLANE, (HANDLE, const struct _D3DDDIARG_SETCLIPPLANE *)) /* 33 */ \
    X(GetInfo, GETINFO, (HANDLE, UINT, void *, UINT)) /* 34 */ \
    X(Lock, LOCK, (HANDLE, D3DDDIARG_LOCK *)) /* 35 */ \
    X(Unlock, UNLOCK, (HANDLE, const D3DDDIARG_UNLOCK *)) /* 36 */ \
    X(CreateResource, CREATERESOURCE, (HANDLE, D3DDDIARG_CREATERESOURCE *)) /* 37 */ \
    X(DestroyResource, DESTROYRESOURCE, (HANDLE, HANDLE)) /* 38 */ \
    X(SetDisplayMode, SETDISPLAYMODE, (HANDLE, const struct _D3DDDIARG_SETDISPLAYMODE *)) /* 39 */ \
    X(Present, PRESENT, (HANDLE, const D3DDDIARG_PRESENT *)) /* 40 */ \
    X(Flush, FLUSH, (HANDLE)) /* 41 */ \
    X(CreateVertexShaderFunc, CREATEVERTEXSHADERFUNC, (HANDLE, D3DDDIARG_CREATEVERTEXSHADERFUNC *, const UINT *)) /* 42 */ \
    X(DeleteVertexShaderFunc, DELETEVERTEXSHADERFUNC, (HANDLE, HANDLE)) /* 43 */ \
    X(SetVertexShaderFunc, SETVERTEXSHADERFUNC, (HANDLE, HANDLE)) /* 44 */ \
    X(CreateVertexShaderDecl, CREATEVERTEXSHADERDECL, (HANDLE, D3DDDIARG_CREATEVERTEXSHADERDECL *, const D3DDDIVERTEXELEMENT *)) /* 45 */ \
    X(DeleteVertexShaderDecl, DELETEVERTEXSHADERDECL, (HANDLE, HANDLE)) /* 46 */ \
    X(SetVertexShaderDecl, SETVERTEXSHADERDECL, (HANDLE, HANDLE)) /* 47 */ \
    X(SetVertexShaderConstI, SETVERTEXSHADERCONSTI, (HANDLE, const struct _D3DDDIARG_SETVERTEXSHADERCONSTI *, const INT *)) /* 48 */ \
    X(SetVertexShaderConstB, SETVERTEXSHADERCONSTB, (HANDLE, const struct _D3DDDIARG_SETVERTEXSHADERCONSTB *, const BOOL *)) /* 49 */ \
    X(SetScissorRect, SETSCISSORRECT, (HANDLE, const RECT *)) /* 50 */ \
    X(SetStreamSource, SETSTREAMSOURCE, (HANDLE, const D3DDDIARG_SETSTREAMSOURCE *)) /* 51 */ \
    X(SetStreamSourceFreq, SETSTREAMSOURCEFREQ, (HANDLE, const struct _D3DDDIARG_SETSTREAMSOURCEFREQ *)) /* 52 */ \
    X(SetConvolutionKernelMono, SETCONVOLUTIONKERNELMONO, (HANDLE, const struct _D3DDDIARG_SETCONVOLUTIONKERNELMONO *)) /* 53 */ \
    X(ComposeRects, COMPOSERECTS, (HANDLE, const struct _D3DDDIARG_COMPOSERECTS *)) /* 54 */ \
    X(Blt, BLT, (HANDLE, const D3DDDIARG_BLT *)) /* 55 */ \
    X(ColorFill, COLORFILL, (HANDLE, const D3DDDIARG_COLORFILL *)) /* 56 */ \
    X(DepthFill, DEPTHFILL, (HANDLE, const struct _D3DDDIARG_DEPTHFILL *)) /* 57 */ \
    X(CreateQuery, CREATEQUERY, (HANDLE, D3DDDIARG_CREATEQUERY *)) /* 58 */ \
    X(DestroyQuery, DESTROYQUERY, (HANDLE, HANDLE)) /* 59 */ \
    X(IssueQuery, ISSUEQUERY, (HANDLE, const D3DDDIARG_ISSUEQUERY *)) /* 60 */ \
    X(GetQueryData, GETQUERYDATA, (HANDLE, const D3DDDIARG_GETQUERYDATA *)) /* 61 */ \
    X(SetRenderTarget, SETRENDERTARGET, (HANDLE, const D3DDDIARG_SETRENDERTARGET *)) /* 62 */ \
    X(SetDepthStencil, SETDEPTHSTENCIL, (HANDLE, const D3DDDIARG_SETDEPTHSTENCIL *)) /* 63 */ \
    X(GenerateMipSubLevels, GENERATEMIPSUBLEVELS, (HANDLE, const struct _D3DDDIARG_GENERATEMIPSUBLEVELS *)) /* 64 */ \
    X(SetPixelShaderConstI, SETPIXELSHADERCONSTI, (HANDLE, const struct _D3DDDIARG_SETPIXELSHADERCONSTI *, const INT *)) /* 65 */ \
    X(SetPixelShaderConstB, SETPIXELSHADERCONSTB, (HANDLE, const struct _D3DDDIARG_SETPIXELSHADERCONSTB *, const BOOL *)) /* 66 */ \
    X(CreatePixelShader, CREATEPIXELSHADER, (HANDLE, D3DDDIARG_CREATEPIXELSHADER *, const UINT *)) /* 67 */ \
    X(DeletePixelShader, DELETEPIXELSHADER, (HANDLE, HANDLE)) /* 68 */ \
    X(CreateDecodeDevice, CREATEDECODEDEVICE, (HANDLE, struct _D3DDDIARG_CREATEDECODEDEVICE *)) /* 69 */ \
    X(DestroyDecodeDevice, DESTROYDECODEDEVICE, (HANDLE, HANDLE)) /* 70 */ \
    X(SetDecodeRenderTarget, SETDECODERENDERTARGET, (HANDLE, const struct _D3DDDIARG_SETDECODERENDERTARGET *)) /* 71 */ \
    X(DecodeBeginFrame, DECODEBEGINFRAME, (HANDLE, struct _D3DDDIARG_DECODEBEGINFRAME *)) /* 72 */ \
    X(DecodeEndFrame, DECODEENDFRAME, (HANDLE, struct _D3DDDIARG_DECODEENDFRAME *)) /* 73 */ \
    X(DecodeExecute, DECODEEXECUTE, (HANDLE, const struct _D3DDDIARG_DECODEEXECUTE *)) /* 74 */ \
    X(DecodeExtensionExecute, DECODEEXTENSIONEXECUTE, (HANDLE, const struct _D3DDDIARG_DECODEEXTENSIONEXECUTE *)) /* 75 */ \
    X(CreateVideoProcessDevice, CREATEVIDEOPROCESSDEVICE, (HANDLE, struct _D3DDDIARG_CREATEVIDEOPROCESSDEVICE *)) /* 76 */ \
    X(DestroyVideoProcessDevice, DESTROYVIDEOPROCESSDEVICE, (HANDLE, HANDLE)) /* 77 */ \
    X(VideoProcessBeginFrame, VIDEOPROCESSBEGINFRAME, (HANDLE, HANDLE)) /* 78 */ \
    X(VideoProcessEndFrame, VIDEOPROCESSENDFRAME, (HANDLE, struct _D3DDDIARG_VIDEOPROCESSENDFRAME *)) /* 79 */ \
    X(SetVideoProcessRenderTarget, SETVIDEOPROCESSRENDERTARGET, (HANDLE, const struct _D3DDDIARG_SETVIDEOPROCESSRENDERTARGET *)) /* 80 */ \
    X(VideoProcessBlt, VIDEOPROCESSBLT, (HANDLE, const struct _D3DDDIARG_VIDEOPROCESSBLT *)) /* 81 */ \
    X(CreateExtensionDevice, CREATEEXTENSIONDEVICE, (HANDLE, struct _D3DDDIARG_CREATEEXTENSIONDEVICE *)) /* 82 */ \
    X(DestroyExtensionDevice, DESTROYEXTENSIONDEVICE, (HANDLE, HANDLE)) /* 83 */ \
    X(ExtensionExecute, EXTENSIONEXECUTE, (HANDLE, const struct _D3DDDIARG_EXTENSIONEXECUTE *)) /* 84 */ \
    X(CreateOverlay, CREATEOVERLAY, (HANDLE, struct _D3DDDIARG_CREATEOVERLAY *)) /* 85 */ \
    X(UpdateOverlay, UPDATEOVERLAY, (HANDLE, const struct _D3DDDIARG_UPDATEOVERLAY *)) /* 86 */ \
    X(FlipOverlay, FLIPOVERLAY, (HANDLE, const struct _D3DDDIARG_FLIPOVERLAY *)) /* 87 */ \
    X(GetOverlayColorControls, GETOVERLAYCOLORCONTROLS, (HANDLE, struct _D3DDDIARG_GETOVERLAYCOLORCONTROLS *)) /* 88 */ \
    X(SetOverlayColorControls, SETOVERLAYCOLORCONTROLS, (HANDLE, const struct _D3DDDIARG_SETOVERLAYCOLORCONTROLS *)) /* 89 */ \
    X(DestroyOverlay, DESTROYOVERLAY, (HANDLE, const struct _D3DDDIARG_DESTROYOVERLAY *)) /* 90 */ \
    X(DestroyDevice, DESTROYDEVICE, (HANDLE)) /* 91 */ \
    X(QueryResourceResidency, QUERYRESOURCERESIDENCY, (HANDLE, const struct _D3DDDIARG_QUERYRESOURCERESIDENCY *)) /* 92 */ \
    X(OpenResource, OPENRESOURCE, (HANDLE, D3DDDIARG_OPENRESOURCE *)) /* 93 */ \
    X(GetCaptureAllocationHandle, GETCAPTUREALLOCATIONHANDLE, (HANDLE, struct _D3DDDIARG_GETCAPTUREALLOCATIONHANDLE *)) /* 94 */ \
    X(CaptureToSysMem, CAPTURETOSYSMEM, (HANDLE, const struct _D3DDDIARG_CAPTURETOSYSMEM *)) /* 95 */ \
    X(LockAsync, LOCKASYNC, (HANDLE, struct _D3DDDIARG_LOCKASYNC *)) /* 96 */ \
    X(UnlockAsync, UNLOCKASYNC, (HANDLE, const struct _D3DDDIARG_UNLOCKASYNC *)) /* 97 */ \
    X(Rename, RENAME, (HANDLE, const struct _D3DDDIARG_RENAME *)) /* 98 */ \
    X(CreateVideoProcessor, DXVAHD_CREATEVIDEOPROCESSOR, (HANDLE, struct _D3DDDIARG_DXVAHD_CREATEVIDEOPROCESSOR *)) /* 99 */ \
    X(SetVideoProcessBltState, DXVAHD_SETVIDEOPROCESSBLTSTATE, (HANDLE, const struct _D3DDDIARG_DXVAHD_SETVIDEOPROCESSBLTSTATE *)) /* 100 */ \
    X(GetVideoProcessBltStatePrivate, DXVAHD_GETVIDEOPROCESSBLTSTATEPRIVATE, (HANDLE, struct _D3DDDIARG_DXVAHD_GETVIDEOPROCESSBLTSTATEPRIVATE *)) /* 101 */ \
    X(SetVideoProcessStreamState, DXVAHD_SETVIDEOPROCESSSTREAMSTATE, (HANDLE, const struct _D3DDDIARG_DXVAHD_SETVIDEOPROCESSSTREAMSTATE *)) /* 102 */ \
    X(GetVideoProcessStreamStatePrivate, DXVAHD_GETVIDEOPROCESSSTREAMSTATEPRIVATE, (HANDLE, struct _D3DDDIARG_DXVAHD_GETVIDEOPROCESSSTREAMSTATEPRIVATE *)) /* 103 */ \
    X(VideoProcessBltHD, DXVAHD_VIDEOPROCESSBLTHD, (HANDLE, const struct _D3DDDIARG_DXVAHD_VIDEOPROCESSBLTHD *)) /* 104 */ \
    X(DestroyVideoProcessor, DXVAHD_DESTROYVIDEOPROCESSOR, (HANDLE, HANDLE)) /* 105 */ \
    X(CreateAuthenticatedChannel, CREATEAUTHENTICATEDCHANNEL, (HANDLE, struct _D3DDDIARG_CREATEAUTHENTICATEDCHANNEL *)) /* 106 */ \
    X(AuthenticatedChannelKeyExchange, AUTHENTICATEDCHANNELKEYEXCHANGE, (HANDLE, struct _D3DDDIARG_AUTHENTICATEDCHANNELKEYEXCHANGE *)) /* 107 */ \
    X(QueryAuthenticatedChannel, QUERYAUTHENTICATEDCHANNEL, (HANDLE, const struct _D3DDDIARG_QUERYAUTHENTICATEDCHANNEL *)) /* 108 */ \
    X(ConfigureAuthenticatedChannel, CONFIGUREAUTHENICATEDCHANNEL, (HANDLE, const struct _D3DDDIARG_CONFIGUREAUTHENTICATEDCHANNEL *)) /* 109 */ \
    X(DestroyAuthenticatedChannel, DESTROYAUTHENTICATEDCHANNEL, (HANDLE, const struct _D3DDDIARG_DESTROYAUTHENTICATEDCHANNEL *)) /* 110 */ \
    X(CreateCryptoSession, CREATECRYPTOSESSION, (HANDLE, struct _D3DDDIARG_CREATECRYPTOSESSION *)) /* 111 */ \
    X(CryptoSessionKeyExchange, CRYPTOSESSIONKEYEXCHANGE, (HANDLE, struct _D3DDDIARG_CRYPTOSESSIONKEYEXCHANGE *)) /* 112 */ \
    X(DestroyCryptoSession, DESTROYCRYPTOSESSION, (HANDLE, const struct _D3DDDIARG_DESTROYCRYPTOSESSION *)) /* 113 */ \
    X(EncryptionBlt, ENCRYPTIONBLT, (HANDLE, const struct _D3DDDIARG_ENCRYPTIONBLT *)) /* 114 */ \
    X(GetPitch, GETPITCH, (HANDLE, struct _D3DDDIARG_GETPITCH *)) /* 115 */ \
    X(StartSessionKeyRefresh, STARTSESSIONKEYREFRESH, (HANDLE, const struct _D3DDDIARG_STARTSESSIONKEYREFRESH *)) /* 116 */ \
    X(FinishSessionKeyRefresh, FINISHSESSIONKEYREFRESH, (HANDLE, const struct _D3DDDIARG_FINISHSESSIONKEYREFRESH *)) /* 117 */ \
    X(GetEncryptionBltKey, GETENCRYPTIONBLTKEY, (HANDLE, const struct _D3DDDIARG_GETENCRYPTIONBLTKEY *)) /* 118 */ \
    X(DecryptionBlt, DECRYPTIONBLT, (HANDLE, const struct _D3DDDIARG_DECRYPTIONBLT *)) /* 119 */ \
    X(ResolveSharedResource, RESOLVESHAREDRESOURCE, (HANDLE, const struct _D3DDDIARG_RESOLVESHAREDRESOURCE *)) /* 120 */ \
    /* end */

#define AEROGPU_D3DDDI_PFN_TYPEDEF(name, upper, params) typedef HRESULT (APIENTRY *PFND3DDDI_##upper) params;
AEROGPU_D3DDDI_DEVICEFUNCS_LIST(AEROGPU_D3DDDI_PFN_TYPEDEF)
#undef AEROGPU_D3DDDI_PFN_TYPEDEF

typedef struct _D3DDDI_DEVICEFUNCS {
#define AEROGPU_D3DDDI_PFN_MEMBER(name, upper, params) PFND3DDDI_##upper pfn##name;
    AEROGPU_D3DDDI_DEVICEFUNCS_LIST(AEROGPU_D3DDDI_PFN_MEMBER)
#undef AEROGPU_D3DDDI_PFN_MEMBER
} D3DDDI_DEVICEFUNCS;

#define AEROGPU_D3DDDI_COUNT_ONE(name, upper, params) +1
enum { AEROGPU_D3DDDI_DEVICEFUNCS_COUNT = 0 AEROGPU_D3DDDI_DEVICEFUNCS_LIST(AEROGPU_D3DDDI_COUNT_ONE) };
#undef AEROGPU_D3DDDI_COUNT_ONE

/* Windows 7: 99 Vista members (pfnSetRenderState .. pfnRename) + 22 Windows 7 members
 * (pfnCreateVideoProcessor .. pfnResolveSharedResource) = 121 pointers. */
AEROGPU_DDI_STATIC_ASSERT(AEROGPU_D3DDDI_DEVICEFUNCS_COUNT == 121, "D3DDDI_DEVICEFUNCS member count");
AEROGPU_DDI_ASSERT_SIZE(D3DDDI_DEVICEFUNCS, 121 * 4, 121 * 8);
AEROGPU_DDI_ASSERT_OFFSET(D3DDDI_DEVICEFUNCS, pfnPresent, 40 * 4, 40 * 8);
AEROGPU_DDI_ASSERT_OFFSET(D3DDDI_DEVICEFUNCS, pfnDestroyDevice, 91 * 4, 91 * 8);
AEROGPU_DDI_ASSERT_OFFSET(D3DDDI_DEVICEFUNCS, pfnResolveSharedResource, 120 * 4, 120 * 8);

typedef struct _D3DDDI_CREATEDEVICEFLAGS {
    union {
        struct {
            UINT AllowMultithreading : 1;
            UINT PointSpriteEnable : 1;
            UINT Reserved : 30;
        };
        UINT Value;
    };
} D3DDDI_CREATEDEVICEFLAGS;

/* Windows 7 layout (the CommandBuffer GPU VA member is Windows 8+). */
typedef struct _D3DDDIARG_CREATEDEVICE {
    HANDLE hDevice; /* in: runtime handle; out: driver handle */
    UINT Interface;
    UINT Version;
    const D3DDDI_DEVICECALLBACKS *pCallbacks;
    void *pCommandBuffer;
    UINT CommandBufferSize;
    D3DDDI_ALLOCATIONLIST *pAllocationList;
    UINT AllocationListSize;
    D3DDDI_PATCHLOCATIONLIST *pPatchLocationList;
    UINT PatchLocationListSize;
    D3DDDI_DEVICEFUNCS *pDeviceFuncs; /* out: filled by the driver */
    D3DDDI_CREATEDEVICEFLAGS Flags;
} D3DDDIARG_CREATEDEVICE;
AEROGPU_DDI_ASSERT_OFFSET(D3DDDIARG_CREATEDEVICE, pDeviceFuncs, 40, 72);
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_CREATEDEVICE, 48, 88);

#endif /* AEROGPU_D3DUMDDI_H */
