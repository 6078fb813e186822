// The shipped x64 UMD (aerogpu_d3d9_x64.dll, as build.sh makes it) loaded by a Windows
// program and run under Wine: LoadLibrary, the exported OpenAdapter, GetCaps,
// CreateDevice through the adapter table, a complete device table, then a small scene
// (render target, VB via Lock/Unlock, shaders, a declaration, Clear, DrawPrimitive,
// Present) whose WDDM submissions a fake runtime hands to the KMD's portable staging and
// ring code, recorded as a trace the Rust device replays (as umd_ddi_scene does with the
// host build of the same sources). What only the DLL does is exercised here: its Win32
// code (aerogpu_umd_win.cpp), the Windows x64 calling convention at the DDI boundary, and
// the cross-process shared alloc_id counter in a named section, which a second instance of
// this program (started with "child") draws from while the first keeps it open.
//
// usage: umd_wine_scene OUT.trace DLL            (parent: the scene)
//        umd_wine_scene child DLL                (prints one shared alloc_id)
#include <windows.h>

#include <cstdio>
#include <cstring>
#include <map>

extern "C" {
#include "agpu_trace.h"
#include "../kmd/portable/agpu_device.h"
#include "../kmd/portable/agpu_ring.h"
#include "../kmd/portable/agpu_share.h"
#include "../kmd/portable/agpu_submit.h"
#include "../protocol/aerogpu_dbgctl_escape.h"
}
#include "../include/d3d9caps.h"
#include "../include/d3dumddi.h"

#define REQUIRE(c)                                                          \
    do {                                                                    \
        if (!(c)) {                                                         \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c);    \
            return 3;                                                       \
        }                                                                   \
    } while (0)

typedef HRESULT(APIENTRY *OpenAdapterFn)(D3DDDIARG_OPENADAPTER *);

static agpu_trace T;
static agpu_ring R;
static bool g_trace = false; // the child only allocates

// dxgkrnl + the KMD for one device, reduced to what the scene submits.
struct Runtime {
    struct Alloc { uint32_t alloc_id; uint64_t gpa, size; };
    std::map<D3DKMT_HANDLE, Alloc> allocs;
    D3DKMT_HANDLE next_handle = 0x40;
    uint32_t next_kmd_id = AEROGPU_WDDM_ALLOC_ID_KMD_MIN;
    uint64_t next_gpa = 0x400000, fence = 0, stage_off = 0;
    uint32_t renders = 0, presents = 0, submissions = 0, shared = 0, last_shared_id = 0;
    bool failed = false;
    uint8_t cmd[64 * 1024];
    D3DDDI_ALLOCATIONLIST list[128];
    D3DDDI_PATCHLOCATIONLIST patches[4];
    agpu_share_table shares;

    bool push(const void *stream, uint32_t bytes, const D3DDDI_ALLOCATIONLIST *l, uint32_t n, bool present) {
        if (!g_trace) return true;
        agpu_alloc_ref refs[128];
        for (uint32_t i = 0; i < n; i++) {
            auto it = allocs.find(l[i].hAllocation);
            if (it == allocs.end()) return false;
            refs[i] = agpu_alloc_ref{it->second.alloc_id, it->second.gpa, it->second.size, 1, int(l[i].WriteOperation)};
        }
        agpu_staging st;
        st.va = T.ram + 0x100000 + stage_off;
        st.gpa = 0x100000 + stage_off;
        st.size_bytes = 0x4000;
        stage_off = (stage_off + 0x4000) % 0x200000;
        struct aerogpu_submit_desc d;
        uint32_t conflict = 0;
        if (agpu_submit_stage(stream, bytes, 16u << 20, refs, n, &st, fence + 1, present ? 1 : 0, &d, &conflict) != AGPU_OK ||
            agpu_ring_push(&R, &d, &T.ops) != AGPU_OK)
            return false;
        fence++;
        submissions++;
        return true;
    }
};
static Runtime F;
static uint8_t g_lock_ram[1 << 20]; // Lock target for the child (no trace RAM)

static HRESULT APIENTRY cb_allocate(HANDLE, D3DDDICB_ALLOCATE *a) {
    if (!a || a->NumAllocations != 1) return E_INVALIDARG;
    D3DDDI_ALLOCATIONINFO &ai = a->pAllocationInfo[0];
    aerogpu_wddm_alloc_priv p;
    if (ai.PrivateDriverDataSize != sizeof(p)) return E_INVALIDARG;
    std::memcpy(&p, ai.pPrivateDriverData, sizeof(p));
    if (p.magic != AEROGPU_WDDM_ALLOC_PRIV_MAGIC || !p.size_bytes) return E_INVALIDARG;
    if (!p.alloc_id) {
        p.alloc_id = F.next_kmd_id++;
        std::memcpy(ai.pPrivateDriverData, &p, sizeof(p));
    }
    uint64_t gpa = F.next_gpa;
    F.next_gpa += (p.size_bytes + 0xFFF) & ~uint64_t(0xFFF);
    if (F.next_gpa > AGPU_TRACE_RAM_BYTES) return E_INVALIDARG;
    if (p.flags & AEROGPU_WDDM_ALLOC_PRIV_FLAG_IS_SHARED) {
        p.share_token = agpu_share_new_token(&F.shares);
        if (agpu_share_open(&F.shares, p.share_token) != AGPU_OK) return E_INVALIDARG;
        std::memcpy(ai.pPrivateDriverData, &p, sizeof(p));
        F.shared++;
        F.last_shared_id = p.alloc_id;
    }
    ai.hAllocation = F.next_handle++;
    F.allocs[ai.hAllocation] = {p.alloc_id, gpa, p.size_bytes};
    return S_OK;
}
static HRESULT APIENTRY cb_deallocate(HANDLE, const D3DDDICB_DEALLOCATE *d) {
    for (UINT i = 0; i < d->NumAllocations; i++) F.allocs.erase(d->HandleList[i]);
    return S_OK;
}
static HRESULT APIENTRY cb_render(HANDLE, D3DDDICB_RENDER *r) {
    F.renders++;
    if (r->CommandOffset != 0 || r->CommandLength > sizeof(F.cmd) || r->NumAllocations > 128 ||
        !F.push(F.cmd, r->CommandLength, F.list, r->NumAllocations, false)) {
        F.failed = true;
        return E_INVALIDARG;
    }
    r->pNewCommandBuffer = F.cmd;
    r->NewCommandBufferSize = sizeof(F.cmd);
    r->pNewAllocationList = F.list;
    r->NewAllocationListSize = 128;
    return S_OK;
}
static HRESULT APIENTRY cb_present(HANDLE, D3DDDICB_PRESENT *p) {
    F.presents++;
    if (!F.allocs.count(p->hSrcAllocation)) { F.failed = true; return E_INVALIDARG; }
    struct aerogpu_cmd_stream_header h;
    std::memset(&h, 0, sizeof(h));
    h.magic = AEROGPU_CMD_STREAM_MAGIC;
    h.abi_version = AEROGPU_ABI_VERSION_U32;
    h.size_bytes = sizeof(h);
    if (!F.push(&h, sizeof(h), nullptr, 0, true)) { F.failed = true; return E_INVALIDARG; }
    return S_OK;
}
static HRESULT APIENTRY cb_lock(HANDLE, D3DDDICB_LOCK *l) {
    auto it = F.allocs.find(l->hAllocation);
    if (it == F.allocs.end()) return E_INVALIDARG;
    if (g_trace) {
        l->pData = T.ram + it->second.gpa;
    } else {
        if (it->second.gpa + it->second.size > sizeof(g_lock_ram) + 0x400000) return E_INVALIDARG;
        l->pData = g_lock_ram + (it->second.gpa - 0x400000);
    }
    return S_OK;
}
static HRESULT APIENTRY cb_unlock(HANDLE, const D3DDDICB_UNLOCK *u) {
    return (u->NumAllocations == 1 && F.allocs.count(u->phAllocations[0])) ? S_OK : E_INVALIDARG;
}
static HRESULT APIENTRY cb_escape(HANDLE, const D3DDDICB_ESCAPE *e) {
    aerogpu_escape_query_fence_out *q = static_cast<aerogpu_escape_query_fence_out *>(e->pPrivateDriverData);
    if (e->PrivateDriverDataSize != sizeof(*q) || q->hdr.op != AEROGPU_ESCAPE_OP_QUERY_FENCE) return E_INVALIDARG;
    q->last_submitted_fence = F.fence; // the device model completes synchronously
    q->last_completed_fence = F.fence;
    return S_OK;
}
static HRESULT APIENTRY cb_create_context(HANDLE, D3DDDICB_CREATECONTEXT *c) {
    c->hContext = reinterpret_cast<HANDLE>(uintptr_t(0xC0));
    c->pCommandBuffer = F.cmd;
    c->CommandBufferSize = sizeof(F.cmd);
    c->pAllocationList = F.list;
    c->AllocationListSize = 128;
    c->pPatchLocationList = F.patches;
    c->PatchLocationListSize = 4;
    return S_OK;
}
static HRESULT APIENTRY cb_destroy_context(HANDLE, const D3DDDICB_DESTROYCONTEXT *) { return S_OK; }

static HANDLE H(uintptr_t v) { return reinterpret_cast<HANDLE>(v); }

static const uint32_t kVs[] = {0xFFFE0200u, 0x0200001Fu, 0x80000000u, 0x900F0000u,
                               0x02000001u, 0xC00F0000u, 0x90E40000u, 0x0000FFFFu};
static const uint32_t kPs[] = {0xFFFF0200u, 0x02000001u, 0x800F0800u, 0xA0E40000u, 0x0000FFFFu};

// An adapter and a device of the DLL through its exported OpenAdapter.
struct Opened {
    D3DDDIARG_OPENADAPTER oa;
    D3DDDI_ADAPTERFUNCS afuncs;
    D3DDDI_ADAPTERCALLBACKS acb;
    D3DDDI_DEVICECALLBACKS cb;
    D3DDDI_DEVICEFUNCS f;
    HANDLE dev;
};

static int open_device(HMODULE dll, Opened &o) {
    OpenAdapterFn open = reinterpret_cast<OpenAdapterFn>(reinterpret_cast<void *>(GetProcAddress(dll, "OpenAdapter")));
    REQUIRE(open);
    std::memset(&o, 0, sizeof(o));
    o.oa.hAdapter = H(0xAD);
    o.oa.Interface = D3D_UMD_INTERFACE_VERSION_WIN7;
    o.oa.pAdapterCallbacks = &o.acb;
    o.oa.pAdapterFuncs = &o.afuncs;
    REQUIRE(open(&o.oa) == S_OK);
    REQUIRE(o.afuncs.pfnCreateDevice && o.afuncs.pfnGetCaps && o.afuncs.pfnCloseAdapter);
    o.cb.pfnAllocateCb = cb_allocate;
    o.cb.pfnDeallocateCb = cb_deallocate;
    o.cb.pfnRenderCb = cb_render;
    o.cb.pfnPresentCb = cb_present;
    o.cb.pfnLockCb = cb_lock;
    o.cb.pfnUnlockCb = cb_unlock;
    o.cb.pfnEscapeCb = cb_escape;
    o.cb.pfnCreateContextCb = cb_create_context;
    o.cb.pfnDestroyContextCb = cb_destroy_context;
    D3DDDIARG_CREATEDEVICE cd;
    std::memset(&cd, 0, sizeof(cd));
    cd.hDevice = H(0xDE);
    cd.Interface = D3D_UMD_INTERFACE_VERSION_WIN7;
    cd.pCallbacks = &o.cb;
    cd.pDeviceFuncs = &o.f;
    REQUIRE(o.afuncs.pfnCreateDevice(o.oa.hAdapter, &cd) == S_OK);
    o.dev = cd.hDevice;
    REQUIRE(o.dev && o.dev != H(0xDE));
    return 0;
}

// A shared render target; returns its alloc_id through F.last_shared_id.
static int create_shared_rt(Opened &o, HANDLE handle) {
    D3DDDI_SURFACEINFO surf = {64, 64, 1, nullptr, 0, 0};
    D3DDDIARG_CREATERESOURCE cr;
    std::memset(&cr, 0, sizeof(cr));
    cr.Format = D3DDDIFMT_A8R8G8B8;
    cr.Pool = D3DDDIPOOL_VIDEOMEMORY;
    cr.pSurfList = &surf;
    cr.SurfCount = 1;
    cr.hResource = handle;
    cr.Flags.RenderTarget = 1;
    cr.Flags.SharedResource = 1;
    uint32_t before = F.shared;
    REQUIRE(o.f.pfnCreateResource(o.dev, &cr) == S_OK);
    REQUIRE(F.shared == before + 1);
    return 0;
}

static int child(HMODULE dll) {
    Opened o;
    agpu_share_init(&F.shares, 0xC41D);
    if (int e = open_device(dll, o)) return e;
    if (int e = create_shared_rt(o, H(0x701))) return e;
    std::printf("child shared alloc_id %u\n", F.last_shared_id);
    REQUIRE(o.f.pfnDestroyDevice(o.dev) == S_OK);
    REQUIRE(o.afuncs.pfnCloseAdapter(o.oa.hAdapter) == S_OK);
    return 0;
}

// Runs this program again as "child" and returns the shared alloc_id it printed.
static int run_child(const char *dll_path, uint32_t *id) {
    char self[MAX_PATH];
    REQUIRE(GetModuleFileNameA(nullptr, self, sizeof(self)) > 0);
    char cmdline[3 * MAX_PATH];
    std::snprintf(cmdline, sizeof(cmdline), "\"%s\" child \"%s\"", self, dll_path);
    SECURITY_ATTRIBUTES sa = {sizeof(sa), nullptr, TRUE};
    HANDLE rd, wr;
    REQUIRE(CreatePipe(&rd, &wr, &sa, 0));
    SetHandleInformation(rd, HANDLE_FLAG_INHERIT, 0);
    STARTUPINFOA si;
    std::memset(&si, 0, sizeof(si));
    si.cb = sizeof(si);
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdOutput = wr;
    si.hStdError = GetStdHandle(STD_ERROR_HANDLE);
    PROCESS_INFORMATION pi;
    REQUIRE(CreateProcessA(nullptr, cmdline, nullptr, nullptr, TRUE, 0, nullptr, nullptr, &si, &pi));
    CloseHandle(wr);
    char out[256] = {0};
    DWORD got = 0, n = 0;
    while (got < sizeof(out) - 1 && ReadFile(rd, out + got, DWORD(sizeof(out) - 1 - got), &n, nullptr) && n) got += n;
    CloseHandle(rd);
    WaitForSingleObject(pi.hProcess, INFINITE);
    DWORD code = 1;
    GetExitCodeProcess(pi.hProcess, &code);
    CloseHandle(pi.hProcess);
    CloseHandle(pi.hThread);
    REQUIRE(code == 0);
    unsigned v = 0;
    REQUIRE(std::sscanf(out, "child shared alloc_id %u", &v) == 1);
    *id = v;
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    HMODULE dll = LoadLibraryA(argv[2]);
    REQUIRE(dll);
    for (const char *name : {"OpenAdapter", "OpenAdapter2", "OpenAdapterFromHdc", "OpenAdapterFromLuid"})
        REQUIRE(GetProcAddress(dll, name));
    if (std::strcmp(argv[1], "child") == 0) return child(dll);

    g_trace = true;
    if (!agpu_trace_open(&T, argv[1])) return 2;
    agpu_device_info info;
    REQUIRE(agpu_probe(&T.ops, &info) == AGPU_OK);
    REQUIRE(agpu_ring_init(&R, T.ram + 0x1000, 0x1000, 0x2000, 64, 0) == AGPU_OK);
    agpu_ring_program(&R, &T.ops, 0x800);
    agpu_wr(&T.ops, AEROGPU_MMIO_REG_IRQ_ENABLE, agpu_irq_mask(info.features, 1));
    agpu_share_init(&F.shares, 0x5EED);

    Opened o;
    if (int e = open_device(dll, o)) return e;
    // The runtime would have gathered the caps first.
    D3DCAPS9 caps;
    std::memset(&caps, 0, sizeof(caps));
    D3DDDIARG_GETCAPS gc;
    std::memset(&gc, 0, sizeof(gc));
    gc.Type = D3DDDICAPS_GETD3D9CAPS;
    gc.pData = &caps;
    gc.DataSize = sizeof(caps);
    REQUIRE(o.afuncs.pfnGetCaps(o.oa.hAdapter, &gc) == S_OK);
    REQUIRE(caps.MaxTextureWidth >= 2048 && caps.VertexShaderVersion >= 0xFFFE0200u);
    // Every entry of the device table is filled.
    const void *const *entries = reinterpret_cast<const void *const *>(&o.f);
    size_t count = sizeof(o.f) / sizeof(void *);
    for (size_t i = 0; i < count; i++) {
        if (!entries[i]) std::fprintf(stderr, "device table entry %u is NULL\n", unsigned(i));
        REQUIRE(entries[i]);
    }
    HANDLE dev = o.dev;
    D3DDDI_DEVICEFUNCS &f = o.f;

    D3DDDI_SURFACEINFO rt_surf = {128, 128, 1, nullptr, 0, 0};
    D3DDDIARG_CREATERESOURCE cr;
    std::memset(&cr, 0, sizeof(cr));
    cr.Format = D3DDDIFMT_A8R8G8B8;
    cr.Pool = D3DDDIPOOL_VIDEOMEMORY;
    cr.pSurfList = &rt_surf;
    cr.SurfCount = 1;
    cr.hResource = H(0x501);
    cr.Flags.RenderTarget = 1;
    REQUIRE(f.pfnCreateResource(dev, &cr) == S_OK);
    HANDLE rt = cr.hResource;
    D3DDDI_SURFACEINFO vb_surf = {3 * 20, 1, 1, nullptr, 0, 0};
    std::memset(&cr, 0, sizeof(cr));
    cr.Format = D3DDDIFMT_VERTEXDATA;
    cr.Pool = D3DDDIPOOL_VIDEOMEMORY;
    cr.pSurfList = &vb_surf;
    cr.SurfCount = 1;
    cr.hResource = H(0x502);
    cr.Flags.VertexBuffer = 1;
    REQUIRE(f.pfnCreateResource(dev, &cr) == S_OK);
    HANDLE vb = cr.hResource;

    D3DDDIARG_LOCK lk;
    std::memset(&lk, 0, sizeof(lk));
    lk.hResource = vb;
    lk.Flags.Discard = 1;
    REQUIRE(f.pfnLock(dev, &lk) == S_OK && lk.pSurfData);
    const float verts[15] = {-1, -1, 0, 1, 0, 0, 1, 0, 1, 0, 1, -1, 0, 1, 0};
    std::memcpy(lk.pSurfData, verts, sizeof(verts));
    D3DDDIARG_UNLOCK ul = {vb, 0, 0};
    REQUIRE(f.pfnUnlock(dev, &ul) == S_OK);

    D3DDDIARG_CREATEVERTEXSHADERFUNC vsa = {nullptr, sizeof(kVs)};
    REQUIRE(f.pfnCreateVertexShaderFunc(dev, &vsa, kVs) == S_OK && vsa.ShaderHandle);
    D3DDDIARG_CREATEPIXELSHADER psa = {nullptr, sizeof(kPs)};
    REQUIRE(f.pfnCreatePixelShader(dev, &psa, kPs) == S_OK && psa.ShaderHandle);
    D3DDDIVERTEXELEMENT el[2] = {{0, 0, 3, 0, 0, 0}, {0, 16, 4, 0, 10, 0}};
    D3DDDIARG_CREATEVERTEXSHADERDECL da = {nullptr, 2};
    REQUIRE(f.pfnCreateVertexShaderDecl(dev, &da, el) == S_OK && da.ShaderHandle);
    REQUIRE(f.pfnSetVertexShaderFunc(dev, vsa.ShaderHandle) == S_OK);
    REQUIRE(f.pfnSetPixelShader(dev, psa.ShaderHandle) == S_OK);
    REQUIRE(f.pfnSetVertexShaderDecl(dev, da.ShaderHandle) == S_OK);
    const float consts[4] = {0, 1, 0, 1};
    D3DDDIARG_SETPIXELSHADERCONST pc = {0, 1};
    REQUIRE(f.pfnSetPixelShaderConst(dev, &pc, consts) == S_OK);
    D3DDDIARG_SETRENDERTARGET srt = {0, rt, 0};
    REQUIRE(f.pfnSetRenderTarget(dev, &srt) == S_OK);
    D3DDDIARG_VIEWPORTINFO vp = {0, 0, 128, 128};
    REQUIRE(f.pfnSetViewport(dev, &vp) == S_OK);
    D3DDDIARG_RENDERSTATE rs = {22, 1}; // CULLMODE NONE
    REQUIRE(f.pfnSetRenderState(dev, &rs) == S_OK);
    D3DDDIARG_SETSTREAMSOURCE sss = {0, vb, 0, 20};
    REQUIRE(f.pfnSetStreamSource(dev, &sss) == S_OK);
    for (int frame = 0; frame < 2; frame++) {
        D3DDDIARG_CLEAR c = {1, 0xFF102030u + uint32_t(frame), 1.0f, 0};
        REQUIRE(f.pfnClear(dev, &c, 0, nullptr) == S_OK);
        D3DDDIARG_DRAWPRIMITIVE dp = {4, 0, 1};
        REQUIRE(f.pfnDrawPrimitive(dev, &dp, nullptr) == S_OK);
        D3DDDIARG_PRESENT pr;
        std::memset(&pr, 0, sizeof(pr));
        pr.hSrcResource = rt;
        pr.FlipInterval = 1;
        REQUIRE(f.pfnPresent(dev, &pr) == S_OK);
    }

    // Shared alloc_ids from the named section: this process, another one, this one again.
    if (int e = create_shared_rt(o, H(0x505))) return e;
    uint32_t mine = F.last_shared_id, theirs = 0;
    if (int e = run_child(argv[2], &theirs)) return e;
    if (int e = create_shared_rt(o, H(0x506))) return e;
    uint32_t again = F.last_shared_id;
    std::printf("shared alloc_ids %u %u %u\n", mine, theirs, again);
    REQUIRE(mine < AEROGPU_WDDM_ALLOC_ID_KMD_MIN && theirs == mine + 1 && again == mine + 2);

    REQUIRE(f.pfnFlush(dev) == S_OK);
    REQUIRE(f.pfnDestroyDevice(dev) == S_OK);
    REQUIRE(o.afuncs.pfnCloseAdapter(o.oa.hAdapter) == S_OK);
    REQUIRE(!F.failed && F.presents == 2);
    agpu_trace_expect(&T, F.fence, 0, 0, F.submissions);
    agpu_trace_close(&T);
    std::printf("submissions %u renders %u presents %u fence %llu\n", F.submissions, F.renders, F.presents,
                (unsigned long long)F.fence);
    return 0;
}
