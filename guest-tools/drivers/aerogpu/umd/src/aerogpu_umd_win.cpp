// Windows entry points of the AeroGPU D3D9 UMD (aerogpu_d3d9.dll / aerogpu_d3d9_x64.dll).
//
// STATUS (UNTESTED ON WINDOWS): the exports hand over to the portable DDI layer
// (aerogpu_umd_ddi.cpp: adapter table, the complete D3DDDI_DEVICEFUNCS table, WDDM
// submission through the runtime callbacks), which host tests drive with a fake runtime.
// Here: diagnostics to OutputDebugStringA, the process id as the alloc_id-range tag, and
// the cross-process counters for shared alloc_ids and protocol handle chunks.
#include <windows.h>

#include "aerogpu_umd_ddi.h"

namespace {

void debug_log(const char *msg) { OutputDebugStringA(msg); }

void sleep_ms(uint32_t ms) { Sleep(ms); }

// Two counters all processes (DWM and apps) increment atomically, each 8 bytes of a named
// pagefile-backed section in the session namespace: shared alloc_ids, and the chunks of
// protocol handles every device takes (aerogpu_umd_set_handle_counter). Two sections rather
// than one larger one: an existing section keeps the size it was created with. Each process
// that opens the adapter keeps its views for its lifetime, so the counters live as long as
// DWM does and a value is never handed out twice while something carrying it can be in use.
// Default security: processes of the same user share them; a low-integrity process cannot
// open them for writing and falls back to KMD-assigned shared alloc_ids and a process-local
// handle range.
PVOID volatile g_shared_counter = nullptr; // the mapped LONG64s
PVOID volatile g_handle_counter = nullptr;

uint64_t next_shared_value() {
    return static_cast<uint64_t>(InterlockedIncrement64(static_cast<LONG64 volatile *>(g_shared_counter)));
}

uint64_t next_handle_chunk() {
    return static_cast<uint64_t>(InterlockedIncrement64(static_cast<LONG64 volatile *>(g_handle_counter)));
}

// Maps the counter section `name` into *slot once per process; false if it is unavailable.
bool map_counter(PVOID volatile *slot, const wchar_t *name) {
    if (*slot) return true;
    HANDLE m = CreateFileMappingW(INVALID_HANDLE_VALUE, nullptr, PAGE_READWRITE, 0, sizeof(LONG64), name);
    if (!m) return false;
    void *view = MapViewOfFile(m, FILE_MAP_READ | FILE_MAP_WRITE, 0, 0, sizeof(LONG64));
    if (!view) {
        CloseHandle(m);
        return false;
    }
    // Two threads opening adapters at once: the first view wins, the other is released.
    if (InterlockedCompareExchangePointer(slot, view, nullptr)) {
        UnmapViewOfFile(view);
        CloseHandle(m);
    }
    // The mapping handle stays open with the view for the life of the process.
    return true;
}

void map_counters() {
    if (map_counter(&g_shared_counter, L"Local\\AeroGPU.D3D9.SharedAllocId"))
        aerogpu_umd_set_shared_counter(next_shared_value);
    else
        OutputDebugStringA("aerogpu-d3d9: shared alloc_id counter unavailable: no shared resources\n");
    if (map_counter(&g_handle_counter, L"Local\\AeroGPU.D3D9.HandleChunks"))
        aerogpu_umd_set_handle_counter(next_handle_chunk);
    else
        OutputDebugStringA("aerogpu-d3d9: handle chunk counter unavailable: process-local handle range\n");
}

HRESULT open_adapter(D3DDDIARG_OPENADAPTER *args) {
    aerogpu_umd_set_log(debug_log);
    aerogpu_umd_set_sleep(sleep_ms);
    // AEROGPU_D3D9_TRACE=1: trace the device tables' calls (dumped at DestroyDevice).
    char trace[4] = {};
    if (GetEnvironmentVariableA("AEROGPU_D3D9_TRACE", trace, sizeof(trace)) == 1 && trace[0] == '1')
        aerogpu_umd_set_trace(1);
    aerogpu_umd_set_process_tag(GetCurrentProcessId());
    map_counters();
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
