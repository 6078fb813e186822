// Windows entry points of the AeroGPU D3D9 UMD (aerogpu_d3d9.dll / aerogpu_d3d9_x64.dll).
//
// STATUS (UNTESTED ON WINDOWS): the exports hand over to the portable DDI layer
// (aerogpu_umd_ddi.cpp: adapter table, the complete D3DDDI_DEVICEFUNCS table, WDDM
// submission through the runtime callbacks), which host tests drive with a fake runtime.
// Here: diagnostics to OutputDebugStringA and the process id as the handle-range tag.
#include <windows.h>

#include "aerogpu_umd_ddi.h"

namespace {

void debug_log(const char *msg) { OutputDebugStringA(msg); }

HRESULT open_adapter(D3DDDIARG_OPENADAPTER *args) {
    aerogpu_umd_set_log(debug_log);
    aerogpu_umd_set_process_tag(GetCurrentProcessId());
    return aerogpu_umd_open_adapter(args);
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
    OutputDebugStringA("aerogpu-d3d9: OpenAdapterFromHdc not implemented\n");
    return E_NOTIMPL;
}
HRESULT APIENTRY OpenAdapterFromLuid(void *args) {
    (void)args;
    OutputDebugStringA("aerogpu-d3d9: OpenAdapterFromLuid not implemented\n");
    return E_NOTIMPL;
}

BOOL WINAPI DllMain(HINSTANCE, DWORD, LPVOID) { return TRUE; }

} // extern "C"
