/* User-mode thunks to dxgkrnl exported by gdi32.dll (subset, Windows 7): opening an
 * adapter from a DC and driver-private escapes (aerogpu_dbgctl). */
#ifndef AEROGPU_D3DKMTHK_H
#define AEROGPU_D3DKMTHK_H

#include <windows.h>

#define AEROGPU_HAVE_UINT
#include "d3dukmdt.h"

typedef LONG AEROGPU_NTSTATUS;

typedef struct _D3DKMT_OPENADAPTERFROMHDC {
    HDC hDc;
    D3DKMT_HANDLE hAdapter; /* out */
    LUID AdapterLuid;       /* out */
    D3DDDI_VIDEO_PRESENT_SOURCE_ID VidPnSourceId; /* out */
} D3DKMT_OPENADAPTERFROMHDC;
AEROGPU_DDI_ASSERT_SIZE(D3DKMT_OPENADAPTERFROMHDC, 20, 24);

typedef struct _D3DKMT_CLOSEADAPTER {
    D3DKMT_HANDLE hAdapter;
} D3DKMT_CLOSEADAPTER;

typedef enum _D3DKMT_ESCAPETYPE {
    D3DKMT_ESCAPE_DRIVERPRIVATE = 0
} D3DKMT_ESCAPETYPE;

typedef struct _D3DKMT_ESCAPE {
    D3DKMT_HANDLE hAdapter;
    D3DKMT_HANDLE hDevice;
    D3DKMT_ESCAPETYPE Type;
    D3DDDI_ESCAPEFLAGS Flags;
    void *pPrivateDriverData;
    UINT PrivateDriverDataSize;
    D3DKMT_HANDLE hContext;
} D3DKMT_ESCAPE;
AEROGPU_DDI_ASSERT_SIZE(D3DKMT_ESCAPE, 28, 32);
AEROGPU_DDI_ASSERT_OFFSET(D3DKMT_ESCAPE, pPrivateDriverData, 16, 16);

#ifdef __cplusplus
extern "C" {
#endif
AEROGPU_NTSTATUS APIENTRY D3DKMTOpenAdapterFromHdc(D3DKMT_OPENADAPTERFROMHDC *);
AEROGPU_NTSTATUS APIENTRY D3DKMTCloseAdapter(const D3DKMT_CLOSEADAPTER *);
AEROGPU_NTSTATUS APIENTRY D3DKMTEscape(const D3DKMT_ESCAPE *);
#ifdef __cplusplus
}
#endif

#endif /* AEROGPU_D3DKMTHK_H */
