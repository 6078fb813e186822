/* Types shared by the user-mode and kernel-mode display driver interfaces (subset,
 * Windows 7 / WDDM 1.1). See aerogpu_ddi_common.h for the rules of this header set. */
#ifndef AEROGPU_D3DUKMDT_H
#define AEROGPU_D3DUKMDT_H

#include "aerogpu_ddi_common.h"

#ifndef AEROGPU_HAVE_UINT
#define AEROGPU_HAVE_UINT
#if !defined(_WINDEF_) && !defined(_WINDEF_H)
typedef unsigned int UINT;
#endif
#endif

typedef UINT D3DKMT_HANDLE;
typedef UINT D3DDDI_VIDEO_PRESENT_SOURCE_ID;
typedef UINT D3DDDI_VIDEO_PRESENT_TARGET_ID;

#define D3DDDI_ID_UNINITIALIZED ((UINT)(~0u))
#define D3DDDI_ID_NOTAPPLICABLE ((UINT)(0u))
#define D3DDDI_ID_ALL ((UINT)(~0u))

/* Pixel formats: values of D3DFORMAT; only the ones the drivers name. */
typedef enum _D3DDDIFORMAT {
    D3DDDIFMT_UNKNOWN = 0,
    D3DDDIFMT_R8G8B8 = 20,
    D3DDDIFMT_A8R8G8B8 = 21,
    D3DDDIFMT_X8R8G8B8 = 22,
    D3DDDIFMT_R5G6B5 = 23,
    D3DDDIFMT_X1R5G5B5 = 24,
    D3DDDIFMT_A1R5G5B5 = 25,
    D3DDDIFMT_A8 = 28,
    D3DDDIFMT_A8B8G8R8 = 32,
    D3DDDIFMT_X8B8G8R8 = 33,
    D3DDDIFMT_D16 = 80,
    D3DDDIFMT_D24S8 = 75,
    D3DDDIFMT_D24X8 = 77,
    D3DDDIFMT_D32F_LOCKABLE = 82,
    D3DDDIFMT_L8 = 50,
    D3DDDIFMT_A8L8 = 51,
    D3DDDIFMT_V8U8 = 60,
    D3DDDIFMT_Q8W8V8U8 = 63,
    D3DDDIFMT_INDEX16 = 101,
    D3DDDIFMT_INDEX32 = 102,
    D3DDDIFMT_VERTEXDATA = 100,
    D3DDDIFMT_A16B16G16R16F = 113,
    D3DDDIFMT_R32F = 114,
    D3DDDIFMT_A32B32G32R32F = 116,
    D3DDDIFMT_A1 = 118, /* ComposeRects operands (1 bit per pixel) */
    D3DDDIFMT_DXT1 = 0x31545844, /* 'DXT1' */
    D3DDDIFMT_DXT3 = 0x33545844,
    D3DDDIFMT_DXT5 = 0x35545844,
    D3DDDIFMT_FORCE_UINT = 0x7fffffff
} D3DDDIFORMAT;

typedef struct _D3DDDI_RATIONAL {
    UINT Numerator;
    UINT Denominator;
} D3DDDI_RATIONAL;

typedef enum _D3DDDI_VIDEO_SIGNAL_SCANLINE_ORDERING {
    D3DDDI_VSSLO_UNINITIALIZED = 0,
    D3DDDI_VSSLO_PROGRESSIVE = 1,
    D3DDDI_VSSLO_INTERLACED_UPPERFIELDFIRST = 2,
    D3DDDI_VSSLO_INTERLACED_LOWERFIELDFIRST = 3,
    D3DDDI_VSSLO_OTHER = 255
} D3DDDI_VIDEO_SIGNAL_SCANLINE_ORDERING;

typedef enum _D3DDDI_ROTATION {
    D3DDDI_ROTATION_IDENTITY = 1,
    D3DDDI_ROTATION_90 = 2,
    D3DDDI_ROTATION_180 = 3,
    D3DDDI_ROTATION_270 = 4
} D3DDDI_ROTATION;

/* One entry of the allocation list a submission references. */
typedef struct _D3DDDI_ALLOCATIONLIST {
    D3DKMT_HANDLE hAllocation;
    union {
        struct {
            UINT WriteOperation : 1;
            UINT DoNotRetireInstance : 1;
            UINT Reserved : 30;
        };
        UINT Value;
    };
} D3DDDI_ALLOCATIONLIST;
AEROGPU_DDI_ASSERT_SIZE(D3DDDI_ALLOCATIONLIST, 8, 8);

typedef struct _D3DDDI_PATCHLOCATIONLIST {
    UINT AllocationIndex;
    union {
        struct {
            UINT SlotId : 24;
            UINT Reserved : 8;
        };
        UINT Value;
    };
    UINT DriverId;
    UINT AllocationOffset;
    UINT PatchOffset;
    UINT SplitOffset;
} D3DDDI_PATCHLOCATIONLIST;
AEROGPU_DDI_ASSERT_SIZE(D3DDDI_PATCHLOCATIONLIST, 24, 24);

/* Per-allocation description the UMD passes through pfnAllocateCb. */
typedef struct _D3DDDI_ALLOCATIONINFO {
    D3DKMT_HANDLE hAllocation;          /* out */
    const void *pSystemMem;
    void *pPrivateDriverData;
    UINT PrivateDriverDataSize;
    D3DDDI_VIDEO_PRESENT_SOURCE_ID VidPnSourceId;
    union {
        struct {
            UINT Primary : 1;
            UINT Reserved : 31;
        };
        UINT Value;
    } Flags;
} D3DDDI_ALLOCATIONINFO;
AEROGPU_DDI_ASSERT_SIZE(D3DDDI_ALLOCATIONINFO, 24, 40);
AEROGPU_DDI_ASSERT_OFFSET(D3DDDI_ALLOCATIONINFO, PrivateDriverDataSize, 12, 24);

typedef struct _D3DDDI_ESCAPEFLAGS {
    union {
        struct {
            UINT HardwareAccess : 1;
            UINT Reserved : 31;
        };
        UINT Value;
    };
} D3DDDI_ESCAPEFLAGS;

typedef struct _D3DDDI_CREATECONTEXTFLAGS {
    union {
        struct {
            UINT NullRendering : 1;
            UINT Reserved : 31;
        };
        UINT Value;
    };
} D3DDDI_CREATECONTEXTFLAGS;

#endif /* AEROGPU_D3DUKMDT_H */
