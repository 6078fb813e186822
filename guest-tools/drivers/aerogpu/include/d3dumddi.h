/* D3D user-mode display driver adapter interface (subset, Windows 7): the OpenAdapter
 * handshake and the adapter function table. The D3D9 device function table
 * (D3DDDI_DEVICEFUNCS) is NOT declared yet: see umd/src/aerogpu_umd_win.cpp. */
#ifndef AEROGPU_D3DUMDDI_H
#define AEROGPU_D3DUMDDI_H

#include <windows.h>

#define AEROGPU_HAVE_UINT
#include "d3dukmdt.h"

/* D3D9 DDI interface/version the Windows 7 runtime passes to OpenAdapter. */
#define D3D_UMD_INTERFACE_VERSION_VISTA 0x000C
#define D3D_UMD_INTERFACE_VERSION_WIN7 0x2003

typedef struct _D3DDDIARG_GETCAPS {
    UINT Type; /* D3DDDICAPS_TYPE */
    void *pInfo;
    void *pData;
    UINT DataSize;
} D3DDDIARG_GETCAPS;
AEROGPU_DDI_ASSERT_SIZE(D3DDDIARG_GETCAPS, 16, 32);

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

#endif /* AEROGPU_D3DUMDDI_H */
