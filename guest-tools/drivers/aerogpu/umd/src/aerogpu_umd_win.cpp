// Windows entry points of the AeroGPU D3D9 UMD (aerogpu_d3d9.dll / aerogpu_d3d9_x64.dll).
//
// STATUS (UNTESTED ON WINDOWS, INCOMPLETE): OpenAdapter and the adapter table (GetCaps,
// CreateDevice, CloseAdapter) are implemented against the project's d3dumddi.h subset.
// The D3D9 device function table (D3DDDI_DEVICEFUNCS, ~120 slots in the Windows 7
// order) and the WDDM submission callbacks are not declared yet, so CreateDevice fails
// cleanly with E_NOTIMPL instead of handing the runtime a partial vtable; the D3D9
// runtime then reports no hardware device. The translation core
// (aerogpu_umd_core.cpp) that the device table will call is complete and tested.
#include <windows.h>

#include <cstring>
#include <new>

#include "../../include/d3dumddi.h"
#include "aerogpu_umd_core.h"

extern "C" {
#include "../../protocol/aerogpu_dbgctl_escape.h"
}

namespace {

struct Adapter {
    HANDLE runtime_handle;
    D3DDDI_ADAPTERCALLBACKS callbacks;
    aerogpu_escape_query_device_v2_out device_info;
};

void log_once(const char *msg) {
    OutputDebugStringA(msg);
}

HRESULT APIENTRY GetCaps(HANDLE hAdapter, const D3DDDIARG_GETCAPS *args) {
    if (!hAdapter || !args) return E_INVALIDARG;
    // Conservative: every caps query answers "nothing" (zeroed), which is consistent
    // across types until the device table exists.
    if (args->pData && args->DataSize) std::memset(args->pData, 0, args->DataSize);
    return S_OK;
}

HRESULT APIENTRY CreateDevice(HANDLE hAdapter, struct _D3DDDIARG_CREATEDEVICE *args) {
    (void)hAdapter;
    (void)args;
    log_once("aerogpu-d3d9: CreateDevice: D3D9 device table not implemented yet\n");
    return E_NOTIMPL;
}

HRESULT APIENTRY CloseAdapter(HANDLE hAdapter) {
    delete static_cast<Adapter *>(hAdapter);
    return S_OK;
}

HRESULT open_adapter(D3DDDIARG_OPENADAPTER *args) {
    if (!args || !args->pAdapterFuncs || !args->pAdapterCallbacks) return E_INVALIDARG;
    Adapter *a = new (std::nothrow) Adapter();
    if (!a) return E_OUTOFMEMORY;
    a->runtime_handle = args->hAdapter;
    a->callbacks = *args->pAdapterCallbacks;
    // Ask the KMD (DXGKQAITYPE_UMDRIVERPRIVATE) which device ABI it found.
    if (a->callbacks.pfnQueryAdapterInfoCb) {
        D3DDDICB_QUERYADAPTERINFO q;
        q.pPrivateDriverData = &a->device_info;
        q.PrivateDriverDataSize = sizeof(a->device_info);
        if (FAILED(a->callbacks.pfnQueryAdapterInfoCb(args->hAdapter, &q)) ||
            (a->device_info.abi_version_u32 >> 16) != AEROGPU_ABI_MAJOR) {
            delete a;
            return E_FAIL;
        }
    }
    args->hAdapter = a;
    args->pAdapterFuncs->pfnGetCaps = GetCaps;
    args->pAdapterFuncs->pfnCreateDevice = CreateDevice;
    args->pAdapterFuncs->pfnCloseAdapter = CloseAdapter;
    args->DriverVersion = D3D_UMD_INTERFACE_VERSION_WIN7;
    return S_OK;
}

} // namespace

extern "C" {

HRESULT APIENTRY OpenAdapter(D3DDDIARG_OPENADAPTER *args);
HRESULT APIENTRY OpenAdapter2(D3DDDIARG_OPENADAPTER *args);
HRESULT APIENTRY OpenAdapterFromHdc(void *args);
HRESULT APIENTRY OpenAdapterFromLuid(void *args);

HRESULT APIENTRY OpenAdapter(D3DDDIARG_OPENADAPTER *args) { return open_adapter(args); }
HRESULT APIENTRY OpenAdapter2(D3DDDIARG_OPENADAPTER *args) { return open_adapter(args); }

// Entry points some test tools probe; the D3D9 runtime does not call them.
HRESULT APIENTRY OpenAdapterFromHdc(void *args) {
    (void)args;
    log_once("aerogpu-d3d9: OpenAdapterFromHdc not implemented\n");
    return E_NOTIMPL;
}
HRESULT APIENTRY OpenAdapterFromLuid(void *args) {
    (void)args;
    log_once("aerogpu-d3d9: OpenAdapterFromLuid not implemented\n");
    return E_NOTIMPL;
}

BOOL WINAPI DllMain(HINSTANCE, DWORD, LPVOID) { return TRUE; }

} // extern "C"
