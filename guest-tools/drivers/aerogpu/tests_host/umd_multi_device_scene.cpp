// Several devices of ONE process through the DDI tables (an app with two devices, or DWM's
// own), their submissions interleaved in one trace the Rust device replays with zero
// errors. Protocol handles are one namespace on the device for all processes; each device
// takes them in chunks from the cross-process counter (aerogpu_umd_set_handle_counter), so
// the devices never share a handle. (Before, every device of a process started at the same
// per-process base: the second device re-created the first one's objects with another
// description, a validation error.) Then the same without the counter (the process-local
// fallback range), a device that runs through its first chunk into a second one, and the
// counter exhausted: creation fails with E_OUTOFMEMORY, nothing reaches the device.
//
// usage: umd_multi_device_scene OUT.trace
#include <set>
#include <string>
#include <vector>

#include "fake_runtime.h"
#include "../umd/src/aerogpu_umd_core.h"
#include "../umd/src/aerogpu_umd_ddi.h"

using aerogpu::kFallbackHandleMin;
using aerogpu::kHandleChunk;

static const HRESULT kOutOfMemory = HRESULT(0x8007000E), kInvalidCall = HRESULT(0x8876086C);
static uint64_t g_handle_chunks; // the cross-process protocol handle counter
static uint64_t next_handle_chunk() { return ++g_handle_chunks; }
static std::vector<std::string> g_logs;
static void capture_log(const char *m) { g_logs.push_back(m); }

static D3DDDI_ADAPTERFUNCS g_afuncs;
static D3DDDIARG_OPENADAPTER g_oa;
static D3DDDI_DEVICECALLBACKS g_cb;

// One device and the protocol handles it created (the DDI handles are the core's).
struct Dev {
    HANDLE h = nullptr;
    D3DDDI_DEVICEFUNCS f;
    HANDLE rt = nullptr, vb = nullptr;
    uint32_t size = 0;
    std::vector<uint32_t> handles;
};

static uint32_t u32(HANDLE h) { return uint32_t(uintptr_t(h)); }

static int open_device(Dev &d) {
    std::memset(&d.f, 0, sizeof(d.f));
    D3DDDIARG_CREATEDEVICE cd;
    std::memset(&cd, 0, sizeof(cd));
    cd.hDevice = H(0xDE);
    cd.Interface = D3D_UMD_INTERFACE_VERSION_WIN7;
    cd.pCallbacks = &g_cb;
    cd.pDeviceFuncs = &d.f;
    REQUIRE(g_afuncs.pfnCreateDevice(g_oa.hAdapter, &cd) == 0);
    d.h = cd.hDevice;
    return 0;
}

// A render target of `size` x `size` (devices differ in it, so a handle both of them used
// would be a CREATE that does not match), a vertex buffer with a triangle, shaders and a
// declaration, all bound.
static int set_up(Dev &d, uint32_t size) {
    d.size = size;
    D3DDDI_SURFACEINFO rt_surf = {size, size, 1, nullptr, 0, 0};
    D3DDDIARG_CREATERESOURCE cr = one_surface(rt_surf, D3DDDIFMT_A8R8G8B8, H(0x501));
    cr.Flags.RenderTarget = 1;
    REQUIRE(d.f.pfnCreateResource(d.h, &cr) == 0);
    d.rt = cr.hResource;
    D3DDDI_SURFACEINFO vb_surf = {3 * 20 + size, 1, 1, nullptr, 0, 0};
    cr = one_surface(vb_surf, D3DDDIFMT_VERTEXDATA, H(0x502));
    cr.Flags.VertexBuffer = 1;
    REQUIRE(d.f.pfnCreateResource(d.h, &cr) == 0);
    d.vb = cr.hResource;
    D3DDDIARG_LOCK lk;
    std::memset(&lk, 0, sizeof(lk));
    lk.hResource = d.vb;
    lk.Flags.Discard = 1;
    REQUIRE(d.f.pfnLock(d.h, &lk) == 0 && lk.pSurfData);
    const float verts[15] = {-1, -1, 0, 1, 0, 0, 1, 0, 1, 0, 1, -1, 0, 1, 0};
    std::memcpy(lk.pSurfData, verts, sizeof(verts));
    D3DDDIARG_UNLOCK ul = {d.vb, 0, 0};
    REQUIRE(d.f.pfnUnlock(d.h, &ul) == 0);
    D3DDDIARG_CREATEVERTEXSHADERFUNC vsa = {nullptr, sizeof(kVs)};
    REQUIRE(d.f.pfnCreateVertexShaderFunc(d.h, &vsa, kVs) == 0);
    D3DDDIARG_CREATEPIXELSHADER psa = {nullptr, sizeof(kPs)};
    REQUIRE(d.f.pfnCreatePixelShader(d.h, &psa, kPs) == 0);
    D3DDDIVERTEXELEMENT el[2] = {{0, 0, 3, 0, 0, 0}, {0, 16, 4, 0, 10, 0}};
    D3DDDIARG_CREATEVERTEXSHADERDECL da = {nullptr, 2};
    REQUIRE(d.f.pfnCreateVertexShaderDecl(d.h, &da, el) == 0);
    d.handles = {u32(d.rt), u32(d.vb), u32(vsa.ShaderHandle), u32(psa.ShaderHandle), u32(da.ShaderHandle)};
    REQUIRE(d.f.pfnSetVertexShaderFunc(d.h, vsa.ShaderHandle) == 0);
    REQUIRE(d.f.pfnSetPixelShader(d.h, psa.ShaderHandle) == 0);
    REQUIRE(d.f.pfnSetVertexShaderDecl(d.h, da.ShaderHandle) == 0);
    D3DDDIARG_SETRENDERTARGET srt = {0, d.rt, 0};
    REQUIRE(d.f.pfnSetRenderTarget(d.h, &srt) == 0);
    D3DDDIARG_VIEWPORTINFO vp = {0, 0, size, size};
    REQUIRE(d.f.pfnSetViewport(d.h, &vp) == 0);
    D3DDDIARG_SETSTREAMSOURCE sss = {0, d.vb, 0, 20};
    REQUIRE(d.f.pfnSetStreamSource(d.h, &sss) == 0);
    REQUIRE(d.f.pfnFlush(d.h) == 0);
    return 0;
}

// Clear, a draw, and the batch submitted (one submission per frame, so the devices'
// submissions alternate in the trace).
static int frame(Dev &d) {
    D3DDDIARG_CLEAR c = {1, 0xFF000000u | d.size, 1.0f, 0};
    REQUIRE(d.f.pfnClear(d.h, &c, 0, nullptr) == 0);
    D3DDDIARG_DRAWPRIMITIVE dp = {4, 0, 1};
    REQUIRE(d.f.pfnDrawPrimitive(d.h, &dp, nullptr) == 0);
    uint32_t before = F.submissions;
    REQUIRE(d.f.pfnFlush(d.h) == 0 && F.submissions == before + 1);
    return 0;
}

// No handle of `a` is one of `b`'s.
static bool disjoint(const Dev &a, const Dev &b) {
    std::set<uint32_t> s(a.handles.begin(), a.handles.end());
    for (uint32_t h : b.handles)
        if (s.count(h)) return false;
    return s.size() == a.handles.size();
}

// Every handle of `d` in [first, first + kHandleChunk).
static bool in_chunk(const Dev &d, uint32_t first) {
    for (uint32_t h : d.handles)
        if (h < first || h - first >= kHandleChunk) return false;
    return true;
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    if (int e = start_trace(argv[1])) return e;
    aerogpu_umd_set_log(capture_log);
    aerogpu_umd_set_process_tag(7); // every device below belongs to this one process
    aerogpu_umd_set_handle_counter(next_handle_chunk);
    g_handle_chunks = 4; // other processes took chunks 1..4

    D3DDDI_ADAPTERCALLBACKS acb;
    std::memset(&acb, 0, sizeof(acb));
    std::memset(&g_oa, 0, sizeof(g_oa));
    g_oa.hAdapter = H(0xAD);
    g_oa.Interface = D3D_UMD_INTERFACE_VERSION_WIN7;
    g_oa.pAdapterCallbacks = &acb;
    g_oa.pAdapterFuncs = &g_afuncs;
    REQUIRE(aerogpu_umd_open_adapter(&g_oa) == 0);
    g_cb = device_callbacks();

    // Two devices with the counter: chunks 5 and 6, submissions interleaved.
    Dev a, b;
    if (int e = open_device(a)) return e;
    if (int e = open_device(b)) return e;
    if (int e = set_up(a, 64)) return e;
    if (int e = set_up(b, 32)) return e;
    REQUIRE(in_chunk(a, 5 * kHandleChunk) && in_chunk(b, 6 * kHandleChunk) && disjoint(a, b));
    for (int i = 0; i < 2; i++) {
        if (int e = frame(a)) return e;
        if (int e = frame(b)) return e;
    }

    // Without the counter (a low-integrity process): the process's fallback window, one
    // chunk after the other for its devices, still disjoint from each other and from the
    // devices above.
    aerogpu_umd_set_handle_counter(nullptr);
    Dev c, d;
    if (int e = open_device(c)) return e;
    if (int e = open_device(d)) return e;
    if (int e = set_up(c, 48)) return e;
    if (int e = set_up(d, 16)) return e;
    const uint32_t window = kFallbackHandleMin + 7 * 256 * kHandleChunk;
    REQUIRE(in_chunk(c, window) && in_chunk(d, window + kHandleChunk) && disjoint(c, d));
    if (int e = frame(c)) return e;
    if (int e = frame(a)) return e;
    if (int e = frame(d)) return e;
    if (int e = frame(b)) return e;
    aerogpu_umd_set_handle_counter(next_handle_chunk);

    // A device that uses up its first chunk (declarations created and deleted again) goes
    // on in its next chunk; another device took the chunk in between.
    Dev e, f;
    if (int r = open_device(e)) return r;
    if (int r = open_device(f)) return r;
    D3DDDIVERTEXELEMENT el[2] = {{0, 0, 3, 0, 0, 0}, {0, 16, 4, 0, 10, 0}};
    uint32_t first_decl = 0, last_decl = 0;
    for (uint32_t i = 0; i < kHandleChunk; i++) {
        D3DDDIARG_CREATEVERTEXSHADERDECL da = {nullptr, 2};
        REQUIRE(e.f.pfnCreateVertexShaderDecl(e.h, &da, el) == 0);
        REQUIRE(e.f.pfnDeleteVertexShaderDecl(e.h, da.ShaderHandle) == 0);
        if (i == 0) first_decl = u32(da.ShaderHandle);
        last_decl = u32(da.ShaderHandle);
    }
    REQUIRE(first_decl == 7 * kHandleChunk && last_decl == 8 * kHandleChunk - 1);
    if (int r = set_up(f, 24)) return r; // chunk 8
    if (int r = set_up(e, 40)) return r; // chunk 9
    REQUIRE(in_chunk(f, 8 * kHandleChunk) && in_chunk(e, 9 * kHandleChunk));
    if (int r = frame(e)) return r;
    if (int r = frame(f)) return r;
    if (int r = frame(a)) return r;
    if (int r = frame(e)) return r;

    // The counter past the shared range: every creation fails with E_OUTOFMEMORY (logged
    // once), before any allocation or packet; the process's other devices go on.
    g_handle_chunks = kFallbackHandleMin / kHandleChunk - 1;
    Dev x;
    if (int r = open_device(x)) return r;
    size_t allocs = F.allocs.size(), logs = g_logs.size();
    uint32_t submissions = F.submissions;
    D3DDDI_SURFACEINFO surf = {16, 16, 1, nullptr, 0, 0};
    D3DDDIARG_CREATERESOURCE cr = one_surface(surf, D3DDDIFMT_A8R8G8B8, H(0x509));
    cr.Flags.RenderTarget = 1;
    REQUIRE(x.f.pfnCreateResource(x.h, &cr) == kOutOfMemory);
    D3DDDIARG_CREATEPIXELSHADER psa = {nullptr, sizeof(kPs)};
    REQUIRE(x.f.pfnCreatePixelShader(x.h, &psa, kPs) == kOutOfMemory);
    D3DDDIARG_CREATEVERTEXSHADERDECL da = {nullptr, 2};
    REQUIRE(x.f.pfnCreateVertexShaderDecl(x.h, &da, el) == kOutOfMemory);
    // Arguments the core refuses are still INVALIDCALL, not "out of handles".
    D3DDDIARG_CREATEPIXELSHADER bad = {nullptr, 6};
    REQUIRE(x.f.pfnCreatePixelShader(x.h, &bad, kPs) == kInvalidCall);
    REQUIRE(x.f.pfnFlush(x.h) == 0);
    REQUIRE(F.allocs.size() == allocs && F.submissions == submissions);
    size_t exhausted = 0;
    for (size_t i = logs; i < g_logs.size(); i++)
        exhausted += g_logs[i].find("protocol handles exhausted") != std::string::npos;
    REQUIRE(exhausted == 1);
    REQUIRE(x.f.pfnDestroyDevice(x.h) == 0);
    if (int r = frame(b)) return r;

    for (Dev *dv : {&a, &b, &c, &d, &e, &f}) {
        std::printf("device rt %u vb %u\n", u32(dv->rt), u32(dv->vb));
        REQUIRE(dv->f.pfnDestroyDevice(dv->h) == 0);
    }
    REQUIRE(g_afuncs.pfnCloseAdapter(g_oa.hAdapter) == 0);
    if (F.failed) std::fprintf(stderr, "fake runtime: %s\n", F.why.c_str());
    REQUIRE(!F.failed);
    finish_trace();
    return 0;
}
