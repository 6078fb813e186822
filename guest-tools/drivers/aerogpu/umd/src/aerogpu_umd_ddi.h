// The AeroGPU D3D9 UMD's DDI layer (aerogpu_umd_ddi.cpp): OpenAdapter's work, the device
// table check and the log hook. aerogpu_umd_win.cpp exports it; host tests call it directly.
#pragma once

#include <stdint.h>

#include "../../include/d3dumddi.h"

extern "C" {
// Where the UMD's diagnostics go (OutputDebugStringA on Windows); NULL drops them.
void aerogpu_umd_set_log(void (*fn)(const char *));
// Per-process tag (the process id on Windows) that spreads non-shared alloc_ids, and
// protocol handles without the handle counter.
void aerogpu_umd_set_process_tag(uint32_t tag);
// The cross-process counter protocol handles come from, in chunks: a new value on every
// call, unique across all processes of the session (Windows: InterlockedIncrement64 on a
// second named file mapping); value n is handles [n, n + 1) * 0x1000 (kHandleChunk), and
// values past the shared range fail creation with E_OUTOFMEMORY. NULL: a process-local
// fallback range (see aerogpu_umd_ddi.cpp).
void aerogpu_umd_set_handle_counter(uint64_t (*next)(void));
// The cross-process counter shared alloc_ids come from: returns a new value on every
// call, unique across all processes of the session (Windows: InterlockedIncrement64 on a
// named file mapping). NULL: shared resources are refused with D3DERR_NOTAVAILABLE.
void aerogpu_umd_set_shared_counter(uint64_t (*next)(void));
// Call tracing of the device tables CreateDevice fills from now on (off by default): the
// last 128 calls (entry, HRESULT), written to the log by aerogpu_umd_dump_trace and at
// each DestroyDevice.
void aerogpu_umd_set_trace(int enabled);
void aerogpu_umd_dump_trace(void);
// How fence waits pause between polls of the KMD (Sleep on Windows); NULL: no pause.
void aerogpu_umd_set_sleep(void (*sleep_ms)(uint32_t));
// OpenAdapter/OpenAdapter2: fills the adapter table (GetCaps, CreateDevice, CloseAdapter).
HRESULT aerogpu_umd_open_adapter(D3DDDIARG_OPENADAPTER *args);
// Index of the first NULL entry of a device table, -1 if complete.
int aerogpu_umd_first_null_entry(const D3DDDI_DEVICEFUNCS *funcs);
const char *aerogpu_umd_func_name(int index);
// 1 if entry `index` of a filled table is the logging stub (D3DERR_NOTAVAILABLE).
int aerogpu_umd_is_stub(const D3DDDI_DEVICEFUNCS *funcs, int index);
// Why entry `index` is left a stub (the UMD's documented list), NULL if it is not meant to be.
const char *aerogpu_umd_stub_reason(int index);
}

#ifdef __cplusplus
namespace aerogpu {
class LegacyState;
class Device;
// The portable core of a device from pfnCreateDevice (host tests read its caches: bindings,
// render and sampler states as last sent).
const Device *umd_core(HANDLE device);
// The cached legacy state of a device from pfnCreateDevice (host tests inspect it: the
// D3D9 runtime answers Get* itself, so no DDI reads it back).
const LegacyState *umd_legacy_state(HANDLE device);
// The viewport/scissor/float-constant state the DDI layer caches (host tests inspect it).
struct UmdViewState {
    uint32_t vp[4];    // X, Y, Width, Height
    float zmin, zmax;
    int32_t scissor[4]; // left, top, right, bottom
    uint32_t vs, ps, decl;
};
bool umd_view_state(HANDLE device, UmdViewState *out);
// Float constant register `reg` of `stage` (0 vertex, 1 pixel) as cached; false if out of range.
bool umd_const_f(HANDLE device, uint32_t stage, uint32_t reg, float out[4]);
} // namespace aerogpu
#endif
