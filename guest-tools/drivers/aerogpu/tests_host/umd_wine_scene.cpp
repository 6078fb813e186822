// The shipped x64 UMD (aerogpu_d3d9_x64.dll, as build.sh makes it) loaded by a Windows
// program and run under Wine: LoadLibrary, the exported OpenAdapter, GetCaps,
// CreateDevice through the adapter table, a complete device table, then a small scene
// (render target, VB via Lock/Unlock, shaders, a declaration, Clear, DrawPrimitive,
// Present) whose WDDM submissions the fake runtime (fake_runtime.h, as in umd_ddi_scene
// with the host build of the same sources) records as a trace the Rust device replays.
// What only the DLL does is exercised here: its Win32 code (aerogpu_umd_win.cpp), the
// Windows x64 calling convention at the DDI boundary, and the cross-process shared
// alloc_id counter in a named section, which a second instance of this program (started
// with "child") draws from while the first keeps it open.
//
// usage: umd_wine_scene OUT.trace DLL            (parent: the scene)
//        umd_wine_scene child DLL                (prints one shared alloc_id)
#include <windows.h>

#include "fake_runtime.h"
#include "../include/d3d9caps.h"

typedef HRESULT(APIENTRY *OpenAdapterFn)(D3DDDIARG_OPENADAPTER *);

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
    o.cb = device_callbacks();
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
    D3DDDIARG_CREATERESOURCE cr = one_surface(surf, D3DDDIFMT_A8R8G8B8, handle);
    cr.Flags.RenderTarget = 1;
    cr.Flags.SharedResource = 1;
    uint32_t before = F.shared_allocs;
    REQUIRE(o.f.pfnCreateResource(o.dev, &cr) == S_OK);
    REQUIRE(F.shared_allocs == before + 1);
    return 0;
}

static int child(HMODULE dll) {
    Opened o;
    F.recording = false; // only the parent records a trace
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

    if (int e = start_trace(argv[1])) return e;
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
    D3DDDIARG_CREATERESOURCE cr = one_surface(rt_surf, D3DDDIFMT_A8R8G8B8, H(0x501));
    cr.Flags.RenderTarget = 1;
    REQUIRE(f.pfnCreateResource(dev, &cr) == S_OK);
    HANDLE rt = cr.hResource;
    D3DDDI_SURFACEINFO vb_surf = {3 * 20, 1, 1, nullptr, 0, 0};
    cr = one_surface(vb_surf, D3DDDIFMT_VERTEXDATA, H(0x502));
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
    finish_trace();
    return 0;
}
