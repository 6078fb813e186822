// Windows entry points of the AeroGPU D3D9 UMD (aerogpu_d3d9.dll / aerogpu_d3d9_x64.dll).
//
// STATUS (UNTESTED ON WINDOWS): the exports hand over to the portable DDI layer
// (aerogpu_umd_ddi.cpp: adapter table, the complete D3DDDI_DEVICEFUNCS table, WDDM
// submission through the runtime callbacks), which host tests drive with a fake runtime.
// Here: diagnostics to OutputDebugStringA, the process id as the handle-range tag, and the
// cross-process counter for shared alloc_ids.
#include <windows.h>

#include "aerogpu_umd_ddi.h"

namespace {

void debug_log(const char *msg) { OutputDebugStringA(msg); }

void sleep_ms(uint32_t ms) { Sleep(ms); }

// Shared alloc_ids: 8 bytes of a named pagefile-backed section in the session namespace,
// incremented atomically by every process (DWM and apps). Each process that opens the
// adapter keeps its view for its lifetime, so the counter lives as long as DWM does and a
// value is never handed out twice while an allocation carrying it can still be open.
// Default security: processes of the same user (DWM and apps) share it; a low-integrity
// process cannot open it for writing and falls back to KMD-assigned shared alloc_ids.
PVOID volatile g_shared_counter = nullptr; // the mapped LONG64

uint64_t next_shared_value() {
    return static_cast<uint64_t>(InterlockedIncrement64(static_cast<LONG64 volatile *>(g_shared_counter)));
}

void map_shared_counter() {
    if (g_shared_counter) return;
    HANDLE m = CreateFileMappingW(INVALID_HANDLE_VALUE, nullptr, PAGE_READWRITE, 0, sizeof(LONG64),
                                  L"Local\\AeroGPU.D3D9.SharedAllocId");
    if (!m) {
        OutputDebugStringA("aerogpu-d3d9: shared alloc_id counter unavailable: no shared resources\n");
        return;
    }
    void *view = MapViewOfFile(m, FILE_MAP_READ | FILE_MAP_WRITE, 0, 0, sizeof(LONG64));
    if (!view) {
        CloseHandle(m);
        OutputDebugStringA("aerogpu-d3d9: shared alloc_id counter not mappable: no shared resources\n");
        return;
    }
    // Two threads opening adapters at once: the first view wins, the other is released.
    if (InterlockedCompareExchangePointer(&g_shared_counter, view, nullptr)) {
        UnmapViewOfFile(view);
        CloseHandle(m);
        return;
    }
    // The mapping handle stays open with the view for the life of the process.
    aerogpu_umd_set_shared_counter(next_shared_value);
}

HRESULT open_adapter(D3DDDIARG_OPENADAPTER *args) {
    aerogpu_umd_set_log(debug_log);
    aerogpu_umd_set_sleep(sleep_ms);
    // AEROGPU_D3D9_TRACE=1: trace the device tables' calls (dumped at DestroyDevice).
    char trace[4] = {};
    if (GetEnvironmentVariableA("AEROGPU_D3D9_TRACE", trace, sizeof(trace)) == 1 && trace[0] == '1')
        aerogpu_umd_set_trace(1);
    aerogpu_umd_set_process_tag(GetCurrentProcessId());
    map_shared_counter();
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
