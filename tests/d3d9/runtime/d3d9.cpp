// A test-only Direct3D 9 runtime (d3d9.dll, x64, mingw) on our UMD, for running D3D9
// programs under Wine against the AeroGPU device model (tests/d3d9/run.sh --aero).
// It does what Windows' d3d9.dll does for a WDDM driver: loads aerogpu_d3d9_x64.dll,
// calls its OpenAdapter, creates devices and resources through the UMD's tables and hands
// it the runtime callbacks (kmd.cpp), which submit to aero-d3d9-host over a socket.
//
// Implemented: IDirect3D9(Ex) adapter queries and device creation; IDirect3DDevice9(Ex)
// with the implicit swap chain (back buffer, auto depth-stencil), render targets, depth
// surfaces, offscreen plain surfaces, Clear, ColorFill, StretchRect, GetRenderTargetData,
// GetFrontBufferData, Present/PresentEx, render states, viewport, LockRect/UnlockRect;
// the draw path (draw.inc, objects.inc): 2D textures with mips, vertex/index buffers,
// vs/ps shaders, vertex declarations, samplers and texture stage states, float shader
// constants, scissor, DrawPrimitive/DrawIndexedPrimitive and their UP forms,
// UpdateTexture, event queries; the fixed-function state (fixed_function.inc: FVF as a
// vertex declaration, transforms, lights, material).
// Cube textures (faces as surfaces) and volume textures (LockBox) are sampled textures.
// Everything else (cube render targets, state blocks, other queries, int/bool
// constants, UpdateSurface, Reset, additional swap chains...) is a logged
// D3DERR_NOTAVAILABLE from the generated stubs (stubs.h), never a crash.
#include <windows.h>

#include <d3d9.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kmd.h"

void rt_unimplemented(const char *name) {
    static std::set<std::string> seen;
    if (seen.insert(name).second) rt::log("%s: not implemented (D3DERR_NOTAVAILABLE)", name);
}

#include "stubs.h"

namespace rt {
namespace {

typedef HRESULT(APIENTRY *OpenAdapterFn)(D3DDDIARG_OPENADAPTER *);

// The UMD, opened once per process.
struct Umd {
    bool tried = false, ok = false;
    HMODULE dll = nullptr;
    D3DDDIARG_OPENADAPTER oa;
    D3DDDI_ADAPTERFUNCS af;
    D3DDDI_ADAPTERCALLBACKS acb;
    D3DCAPS9 caps;
    std::vector<FORMATOP> formats; // what the UMD reports through GETFORMATCOUNT/GETFORMATDATA
};
Umd U;
HMODULE g_self;

bool umd_open() {
    if (U.tried) return U.ok;
    U.tried = true;
    // AERO_D3D9_UMD, else aerogpu_d3d9_x64.dll beside this d3d9.dll.
    char path[MAX_PATH] = {0};
    if (!GetEnvironmentVariableA("AERO_D3D9_UMD", path, sizeof(path))) {
        DWORD n = GetModuleFileNameA(g_self, path, sizeof(path));
        while (n && path[n - 1] != '\\' && path[n - 1] != '/') n--;
        path[n] = 0;
        std::strncat(path, "aerogpu_d3d9_x64.dll", sizeof(path) - std::strlen(path) - 1);
    }
    U.dll = LoadLibraryA(path);
    if (!U.dll) {
        log("cannot load the UMD %s", path);
        return false;
    }
    auto open = reinterpret_cast<OpenAdapterFn>(reinterpret_cast<void *>(GetProcAddress(U.dll, "OpenAdapter")));
    if (!open) {
        log("the UMD exports no OpenAdapter");
        return false;
    }
    std::memset(&U.oa, 0, sizeof(U.oa));
    std::memset(&U.af, 0, sizeof(U.af));
    std::memset(&U.acb, 0, sizeof(U.acb));
    U.oa.hAdapter = reinterpret_cast<HANDLE>(uintptr_t(0xAD));
    U.oa.Interface = D3D_UMD_INTERFACE_VERSION_WIN7;
    U.oa.pAdapterCallbacks = &U.acb;
    U.oa.pAdapterFuncs = &U.af;
    if (open(&U.oa) != S_OK || !U.af.pfnCreateDevice || !U.af.pfnGetCaps) {
        log("OpenAdapter failed");
        return false;
    }
    std::memset(&U.caps, 0, sizeof(U.caps));
    D3DDDIARG_GETCAPS gc;
    std::memset(&gc, 0, sizeof(gc));
    gc.Type = D3DDDICAPS_GETD3D9CAPS;
    gc.pData = &U.caps;
    gc.DataSize = sizeof(U.caps);
    if (U.af.pfnGetCaps(U.oa.hAdapter, &gc) != S_OK) {
        log("GetCaps(D3D9CAPS) failed");
        return false;
    }
    U.caps.DeviceType = D3DDEVTYPE(1); // HAL
    U.caps.AdapterOrdinal = 0;
    // The format list, as Windows' runtime reads it: count, then the FORMATOP array.
    UINT count = 0;
    gc.Type = D3DDDICAPS_GETFORMATCOUNT;
    gc.pData = &count;
    gc.DataSize = sizeof(count);
    if (U.af.pfnGetCaps(U.oa.hAdapter, &gc) != S_OK || count == 0 || count > 256) {
        log("GetCaps(GETFORMATCOUNT) failed or out of range");
        return false;
    }
    U.formats.resize(count);
    gc.Type = D3DDDICAPS_GETFORMATDATA;
    gc.pData = U.formats.data();
    gc.DataSize = UINT(count * sizeof(FORMATOP));
    if (U.af.pfnGetCaps(U.oa.hAdapter, &gc) != S_OK) {
        log("GetCaps(GETFORMATDATA) failed");
        return false;
    }
    U.ok = true;
    return true;
}

// Formats the UMD reports in its FORMATOP list (what CheckDeviceFormat asks of a real driver).
bool umd_format(D3DFORMAT f) {
    if (!umd_open()) return false;
    for (const FORMATOP &op : U.formats)
        if (uint32_t(op.Format) == uint32_t(f)) return true;
    return false;
}
// The UMD's FORMATOP_* for a format (0 when it does not list it).
UINT umd_format_ops(D3DFORMAT f) {
    if (!umd_open()) return 0;
    for (const FORMATOP &op : U.formats)
        if (uint32_t(op.Format) == uint32_t(f)) return op.Operations;
    return 0;
}
bool depth_format(D3DFORMAT f) {
    return f == D3DFMT_D24S8 || f == D3DFMT_D24X8 || f == D3DFMT_D16 || f == D3DFMT_D32F_LOCKABLE;
}

const D3DDISPLAYMODE kMode = {1024, 768, 60, D3DFMT_X8R8G8B8};

struct Device;

// A surface: a UMD resource (or one level of a texture's).
struct Surface final : StubIDirect3DSurface9 {
    LONG refs = 1;
    Device *dev;
    HANDLE res;
    D3DSURFACE_DESC desc;
    bool owns;                     // destroys the resource on its last release
    UINT sub = 0;                  // sub-resource (mip level) of a texture's surface
    IUnknown *container = nullptr; // a texture level lives as long as its texture
    Surface(Device *d, HANDLE r, const D3DSURFACE_DESC &de, bool own) : dev(d), res(r), desc(de), owns(own) {}
    ~Surface();
    STDMETHODIMP QueryInterface(REFIID riid, void **out) override {
        if (!out) return E_POINTER;
        if (riid == IID_IUnknown || riid == IID_IDirect3DResource9 || riid == IID_IDirect3DSurface9) {
            AddRef();
            *out = this;
            return S_OK;
        }
        *out = nullptr;
        return E_NOINTERFACE;
    }
    STDMETHODIMP_(ULONG) AddRef() override {
        if (container) return container->AddRef();
        return ULONG(InterlockedIncrement(&refs));
    }
    STDMETHODIMP_(ULONG) Release() override {
        if (container) return container->Release();
        LONG n = InterlockedDecrement(&refs);
        if (n == 0) delete this;
        return ULONG(n);
    }
    STDMETHODIMP GetDevice(IDirect3DDevice9 **out) override;
    STDMETHODIMP_(D3DRESOURCETYPE) GetType() override { return D3DRTYPE_SURFACE; }
    STDMETHODIMP GetDesc(D3DSURFACE_DESC *d) override {
        if (!d) return D3DERR_INVALIDCALL;
        *d = desc;
        return S_OK;
    }
    STDMETHODIMP GetContainer(REFIID riid, void **out) override;
    STDMETHODIMP LockRect(D3DLOCKED_RECT *lr, const RECT *rect, DWORD flags) override;
    STDMETHODIMP UnlockRect() override;
};

struct Direct3D;

#include "objects.inc"

struct Device final : StubIDirect3DDevice9Ex {
    LONG refs = 1;
    Direct3D *d3d;
    bool ex;
    D3DDEVICE_CREATION_PARAMETERS cp;
    D3DPRESENT_PARAMETERS pp;
    D3DDDI_DEVICECALLBACKS cb;
    D3DDDI_DEVICEFUNCS f;
    HANDLE hdev = nullptr;
    uintptr_t next_runtime_handle = 0x1000;
    Surface *back = nullptr, *auto_ds = nullptr;
    Surface *rts[4] = {nullptr, nullptr, nullptr, nullptr};
    Surface *ds = nullptr;
    D3DVIEWPORT9 vp;
    std::map<DWORD, DWORD> rs;

    ~Device() {
        unbind_draw_objects();
        release_fvf_decls();
        for (auto &r : rts)
            if (r) r->Release();
        if (ds) ds->Release();
        if (back) back->Release();
        if (auto_ds) auto_ds->Release();
        if (hdev && f.pfnDestroyDevice) f.pfnDestroyDevice(hdev);
    }

    HRESULT init(HWND focus, DWORD behaviour, D3DPRESENT_PARAMETERS *p);
    HRESULT create_resource(UINT w, UINT h, D3DFORMAT fmt, D3DPOOL pool, DWORD usage, bool lockable, HANDLE *out);
    HRESULT new_surface(UINT w, UINT h, D3DFORMAT fmt, D3DPOOL pool, DWORD usage, bool lockable, Surface **out);
    void destroy_resource(HANDLE r) {
        if (r && hdev) f.pfnDestroyResource(hdev, r);
    }
    HRESULT bind_rt(DWORD i, Surface *s) {
        D3DDDIARG_SETRENDERTARGET a = {i, s ? s->res : nullptr, 0};
        return f.pfnSetRenderTarget(hdev, &a);
    }
    HRESULT apply_viewport() {
        D3DDDIARG_VIEWPORTINFO v = {vp.X, vp.Y, vp.Width, vp.Height};
        HRESULT hr = f.pfnSetViewport(hdev, &v);
        if (hr < 0) return hr;
        D3DDDIARG_ZRANGE z = {vp.MinZ, vp.MaxZ};
        return f.pfnSetZRange(hdev, &z);
    }

    STDMETHODIMP QueryInterface(REFIID riid, void **out) override {
        if (!out) return E_POINTER;
        if (riid == IID_IUnknown || riid == IID_IDirect3DDevice9 || (ex && riid == IID_IDirect3DDevice9Ex)) {
            AddRef();
            *out = this;
            return S_OK;
        }
        *out = nullptr;
        return E_NOINTERFACE;
    }
    STDMETHODIMP_(ULONG) AddRef() override { return ULONG(InterlockedIncrement(&refs)); }
    STDMETHODIMP_(ULONG) Release() override {
        LONG n = InterlockedDecrement(&refs);
        if (n == 0) delete this;
        return ULONG(n);
    }
#include "draw.inc"
#include "fixed_function.inc"
    STDMETHODIMP TestCooperativeLevel() override { return S_OK; }
    STDMETHODIMP CheckDeviceState(HWND) override { return S_OK; }
    STDMETHODIMP_(UINT) GetAvailableTextureMem() override { return 192u << 20; }
    STDMETHODIMP EvictManagedResources() override { return S_OK; }
    STDMETHODIMP GetDirect3D(IDirect3D9 **out) override;
    STDMETHODIMP GetDeviceCaps(D3DCAPS9 *caps) override {
        if (!caps) return D3DERR_INVALIDCALL;
        *caps = U.caps;
        return S_OK;
    }
    STDMETHODIMP GetDisplayMode(UINT sc, D3DDISPLAYMODE *m) override {
        if (sc || !m) return D3DERR_INVALIDCALL;
        *m = kMode;
        return S_OK;
    }
    STDMETHODIMP GetCreationParameters(D3DDEVICE_CREATION_PARAMETERS *p) override {
        if (!p) return D3DERR_INVALIDCALL;
        *p = cp;
        return S_OK;
    }
    STDMETHODIMP_(UINT) GetNumberOfSwapChains() override { return 1; }
    STDMETHODIMP GetBackBuffer(UINT sc, UINT i, D3DBACKBUFFER_TYPE, IDirect3DSurface9 **out) override {
        if (!out) return D3DERR_INVALIDCALL;
        *out = nullptr;
        if (sc || i) return D3DERR_INVALIDCALL;
        back->AddRef();
        *out = back;
        return S_OK;
    }
    STDMETHODIMP BeginScene() override { return S_OK; }
    STDMETHODIMP EndScene() override { return S_OK; }
    STDMETHODIMP Clear(DWORD n, const D3DRECT *rects, DWORD flags, D3DCOLOR color, float z, DWORD stencil) override {
        D3DDDIARG_CLEAR c = {flags, color, z, stencil};
        if (n && !rects) return D3DERR_INVALIDCALL;
        std::vector<RECT> r(n);
        for (DWORD i = 0; i < n; i++) r[i] = RECT{rects[i].x1, rects[i].y1, rects[i].x2, rects[i].y2};
        return f.pfnClear(hdev, &c, rects ? n : 0, rects ? r.data() : nullptr);
    }
    STDMETHODIMP Present(const RECT *, const RECT *, HWND, const RGNDATA *) override { return PresentEx(nullptr, nullptr, nullptr, nullptr, 0); }
    STDMETHODIMP PresentEx(const RECT *, const RECT *, HWND, const RGNDATA *, DWORD) override {
        D3DDDIARG_PRESENT p;
        std::memset(&p, 0, sizeof(p));
        p.hSrcResource = back->res;
        p.FlipInterval = pp.PresentationInterval == D3DPRESENT_INTERVAL_IMMEDIATE ? 0 : 1;
        return f.pfnPresent(hdev, &p);
    }
    STDMETHODIMP SetRenderTarget(DWORD i, IDirect3DSurface9 *s) override {
        if (i >= 4 || (i == 0 && !s)) return D3DERR_INVALIDCALL;
        Surface *surf = static_cast<Surface *>(s);
        HRESULT hr = bind_rt(i, surf);
        if (hr < 0) return hr;
        if (surf) surf->AddRef();
        if (rts[i]) rts[i]->Release();
        rts[i] = surf;
        if (i == 0) {
            // D3D9: setting render target 0 resets the viewport to it.
            vp = D3DVIEWPORT9{0, 0, surf->desc.Width, surf->desc.Height, 0.0f, 1.0f};
            return apply_viewport();
        }
        return S_OK;
    }
    STDMETHODIMP GetRenderTarget(DWORD i, IDirect3DSurface9 **out) override {
        if (!out || i >= 4) return D3DERR_INVALIDCALL;
        *out = rts[i];
        if (!rts[i]) return D3DERR_NOTFOUND;
        rts[i]->AddRef();
        return S_OK;
    }
    STDMETHODIMP SetDepthStencilSurface(IDirect3DSurface9 *s) override {
        Surface *surf = static_cast<Surface *>(s);
        D3DDDIARG_SETDEPTHSTENCIL a = {surf ? surf->res : nullptr};
        HRESULT hr = f.pfnSetDepthStencil(hdev, &a);
        if (hr < 0) return hr;
        if (surf) surf->AddRef();
        if (ds) ds->Release();
        ds = surf;
        return S_OK;
    }
    STDMETHODIMP GetDepthStencilSurface(IDirect3DSurface9 **out) override {
        if (!out) return D3DERR_INVALIDCALL;
        *out = ds;
        if (!ds) return D3DERR_NOTFOUND;
        ds->AddRef();
        return S_OK;
    }
    STDMETHODIMP SetViewport(const D3DVIEWPORT9 *v) override {
        if (!v) return D3DERR_INVALIDCALL;
        vp = *v;
        return apply_viewport();
    }
    STDMETHODIMP GetViewport(D3DVIEWPORT9 *v) override {
        if (!v) return D3DERR_INVALIDCALL;
        *v = vp;
        return S_OK;
    }
    STDMETHODIMP SetRenderState(D3DRENDERSTATETYPE s, DWORD v) override {
        D3DDDIARG_RENDERSTATE a = {UINT(s), v};
        HRESULT hr = f.pfnSetRenderState(hdev, &a);
        if (hr >= 0) rs[s] = v;
        return hr;
    }
    STDMETHODIMP GetRenderState(D3DRENDERSTATETYPE s, DWORD *v) override {
        if (!v) return D3DERR_INVALIDCALL;
        auto it = rs.find(s);
        *v = it == rs.end() ? 0 : it->second;
        return S_OK;
    }
    STDMETHODIMP CreateRenderTarget(UINT w, UINT h, D3DFORMAT fmt, D3DMULTISAMPLE_TYPE ms, DWORD, WINBOOL lockable,
                                    IDirect3DSurface9 **out, HANDLE *shared) override {
        if (!out || shared) return shared ? D3DERR_NOTAVAILABLE : D3DERR_INVALIDCALL;
        if (ms > D3DMULTISAMPLE_NONMASKABLE) return D3DERR_NOTAVAILABLE;
        Surface *s;
        HRESULT hr = new_surface(w, h, fmt, D3DPOOL_DEFAULT, D3DUSAGE_RENDERTARGET, lockable, &s);
        *out = hr < 0 ? nullptr : s;
        return hr;
    }
    STDMETHODIMP CreateDepthStencilSurface(UINT w, UINT h, D3DFORMAT fmt, D3DMULTISAMPLE_TYPE ms, DWORD, WINBOOL,
                                           IDirect3DSurface9 **out, HANDLE *shared) override {
        if (!out || shared) return shared ? D3DERR_NOTAVAILABLE : D3DERR_INVALIDCALL;
        if (ms > D3DMULTISAMPLE_NONMASKABLE) return D3DERR_NOTAVAILABLE;
        Surface *s;
        HRESULT hr = new_surface(w, h, fmt, D3DPOOL_DEFAULT, D3DUSAGE_DEPTHSTENCIL, fmt == D3DFMT_D32F_LOCKABLE, &s);
        *out = hr < 0 ? nullptr : s;
        return hr;
    }
    STDMETHODIMP CreateOffscreenPlainSurface(UINT w, UINT h, D3DFORMAT fmt, D3DPOOL pool, IDirect3DSurface9 **out,
                                             HANDLE *shared) override {
        if (!out || shared) return shared ? D3DERR_NOTAVAILABLE : D3DERR_INVALIDCALL;
        Surface *s;
        HRESULT hr = new_surface(w, h, fmt, pool, 0, true, &s);
        *out = hr < 0 ? nullptr : s;
        return hr;
    }
    STDMETHODIMP GetRenderTargetData(IDirect3DSurface9 *rt, IDirect3DSurface9 *dst) override {
        Surface *s = static_cast<Surface *>(rt), *d = static_cast<Surface *>(dst);
        if (!s || !d || s->desc.Width != d->desc.Width || s->desc.Height != d->desc.Height ||
            s->desc.Format != d->desc.Format || d->desc.Pool != D3DPOOL_SYSTEMMEM)
            return D3DERR_INVALIDCALL;
        return blt(s, nullptr, d, nullptr, 0);
    }
    STDMETHODIMP GetFrontBufferData(UINT sc, IDirect3DSurface9 *dst) override;
    STDMETHODIMP StretchRect(IDirect3DSurface9 *src, const RECT *sr, IDirect3DSurface9 *dst, const RECT *dr,
                             D3DTEXTUREFILTERTYPE filter) override {
        Surface *s = static_cast<Surface *>(src), *d = static_cast<Surface *>(dst);
        if (!s || !d || s->desc.Pool != D3DPOOL_DEFAULT || d->desc.Pool != D3DPOOL_DEFAULT) return D3DERR_INVALIDCALL;
        UINT flags = filter == D3DTEXF_LINEAR ? AEROGPU_BLT_LINEAR : filter == D3DTEXF_POINT ? AEROGPU_BLT_POINT : 0;
        return blt(s, sr, d, dr, flags);
    }
    HRESULT blt(Surface *s, const RECT *sr, Surface *d, const RECT *dr, UINT flags) {
        D3DDDIARG_BLT b;
        std::memset(&b, 0, sizeof(b));
        b.hSrcResource = s->res;
        b.SrcRect = sr ? *sr : RECT{0, 0, LONG(s->desc.Width), LONG(s->desc.Height)};
        b.hDstResource = d->res;
        b.DstRect = dr ? *dr : RECT{0, 0, LONG(d->desc.Width), LONG(d->desc.Height)};
        b.Flags = flags;
        return f.pfnBlt(hdev, &b);
    }
    STDMETHODIMP ColorFill(IDirect3DSurface9 *surface, const RECT *rect, D3DCOLOR color) override {
        Surface *s = static_cast<Surface *>(surface);
        if (!s || s->desc.Pool != D3DPOOL_DEFAULT) return D3DERR_INVALIDCALL;
        D3DDDIARG_COLORFILL c;
        std::memset(&c, 0, sizeof(c));
        c.hResource = s->res;
        c.DstRect = rect ? *rect : RECT{0, 0, LONG(s->desc.Width), LONG(s->desc.Height)};
        c.Color = color;
        return f.pfnColorFill(hdev, &c);
    }
    // D3D9Ex
    STDMETHODIMP SetMaximumFrameLatency(UINT) override { return S_OK; }
    STDMETHODIMP GetMaximumFrameLatency(UINT *n) override {
        if (!n) return D3DERR_INVALIDCALL;
        *n = 3;
        return S_OK;
    }
    STDMETHODIMP GetDisplayModeEx(UINT sc, D3DDISPLAYMODEEX *m, D3DDISPLAYROTATION *rot) override {
        if (sc || !m) return D3DERR_INVALIDCALL;
        m->Width = kMode.Width;
        m->Height = kMode.Height;
        m->RefreshRate = kMode.RefreshRate;
        m->Format = kMode.Format;
        m->ScanLineOrdering = D3DSCANLINEORDERING_PROGRESSIVE;
        if (rot) *rot = D3DDISPLAYROTATION_IDENTITY;
        return S_OK;
    }
};

struct Direct3D final : StubIDirect3D9Ex {
    LONG refs = 1;
    bool ex;
    explicit Direct3D(bool e) : ex(e) {}
    STDMETHODIMP QueryInterface(REFIID riid, void **out) override {
        if (!out) return E_POINTER;
        if (riid == IID_IUnknown || riid == IID_IDirect3D9 || (ex && riid == IID_IDirect3D9Ex)) {
            AddRef();
            *out = this;
            return S_OK;
        }
        *out = nullptr;
        return E_NOINTERFACE;
    }
    STDMETHODIMP_(ULONG) AddRef() override { return ULONG(InterlockedIncrement(&refs)); }
    STDMETHODIMP_(ULONG) Release() override {
        LONG n = InterlockedDecrement(&refs);
        if (n == 0) delete this;
        return ULONG(n);
    }
    STDMETHODIMP_(UINT) GetAdapterCount() override { return 1; }
    STDMETHODIMP GetAdapterIdentifier(UINT a, DWORD, D3DADAPTER_IDENTIFIER9 *id) override {
        if (a || !id) return D3DERR_INVALIDCALL;
        std::memset(id, 0, sizeof(*id));
        std::strcpy(id->Driver, "aerogpu_d3d9_x64.dll");
        std::strcpy(id->Description, "AeroGPU (Aero test D3D9 runtime)");
        std::strcpy(id->DeviceName, "\\\\.\\DISPLAY1");
        id->VendorId = 0xA3A0;
        id->DeviceId = 0x0001;
        id->WHQLLevel = 0;
        return S_OK;
    }
    STDMETHODIMP_(UINT) GetAdapterModeCount(UINT a, D3DFORMAT f) override { return a == 0 && f == kMode.Format ? 1 : 0; }
    STDMETHODIMP EnumAdapterModes(UINT a, D3DFORMAT f, UINT i, D3DDISPLAYMODE *m) override {
        if (a || i || !m || f != kMode.Format) return D3DERR_INVALIDCALL;
        *m = kMode;
        return S_OK;
    }
    STDMETHODIMP GetAdapterDisplayMode(UINT a, D3DDISPLAYMODE *m) override {
        if (a || !m) return D3DERR_INVALIDCALL;
        *m = kMode;
        return S_OK;
    }
    STDMETHODIMP CheckDeviceType(UINT a, D3DDEVTYPE t, D3DFORMAT disp, D3DFORMAT bb, WINBOOL) override {
        if (a || t != D3DDEVTYPE_HAL) return D3DERR_NOTAVAILABLE;
        bool ok_bb = bb == D3DFMT_UNKNOWN || bb == D3DFMT_X8R8G8B8 || bb == D3DFMT_A8R8G8B8;
        return disp == D3DFMT_X8R8G8B8 && ok_bb ? S_OK : D3DERR_NOTAVAILABLE;
    }
    STDMETHODIMP CheckDeviceFormat(UINT a, D3DDEVTYPE t, D3DFORMAT, DWORD usage, D3DRESOURCETYPE type, D3DFORMAT f) override {
        if (a || t != D3DDEVTYPE_HAL || !umd_format(f)) return D3DERR_NOTAVAILABLE;
        if ((usage & D3DUSAGE_DEPTHSTENCIL) != 0 && !depth_format(f)) return D3DERR_NOTAVAILABLE;
        if ((usage & D3DUSAGE_RENDERTARGET) != 0 && (depth_format(f) || !(umd_format_ops(f) & FORMATOP_OFFSCREEN_RENDERTARGET)))
            return D3DERR_NOTAVAILABLE;
        // Bump-map formats for fixed-function BUMPENVMAP and ps_1_x texbem.
        if ((usage & D3DUSAGE_QUERY_LEGACYBUMPMAP) != 0 && !(umd_format_ops(f) & FORMATOP_BUMPMAP)) return D3DERR_NOTAVAILABLE;
        // Cube and volume textures: what the UMD's format operations say (sampled only).
        if (type == D3DRTYPE_CUBETEXTURE)
            return (umd_format_ops(f) & FORMATOP_CUBETEXTURE) && !(usage & (D3DUSAGE_RENDERTARGET | D3DUSAGE_DEPTHSTENCIL))
                       ? S_OK
                       : D3DERR_NOTAVAILABLE;
        if (type == D3DRTYPE_VOLUMETEXTURE || type == D3DRTYPE_VOLUME)
            return (umd_format_ops(f) & FORMATOP_VOLUMETEXTURE) && !(usage & (D3DUSAGE_RENDERTARGET | D3DUSAGE_DEPTHSTENCIL))
                       ? S_OK
                       : D3DERR_NOTAVAILABLE;
        return S_OK;
    }
    STDMETHODIMP CheckDeviceMultiSampleType(UINT a, D3DDEVTYPE, D3DFORMAT, WINBOOL, D3DMULTISAMPLE_TYPE ms, DWORD *q) override {
        if (a) return D3DERR_INVALIDCALL;
        if (q) *q = ms == D3DMULTISAMPLE_NONE ? 1 : 0;
        return ms == D3DMULTISAMPLE_NONE ? S_OK : D3DERR_NOTAVAILABLE;
    }
    STDMETHODIMP CheckDepthStencilMatch(UINT a, D3DDEVTYPE, D3DFORMAT, D3DFORMAT, D3DFORMAT ds) override {
        return a == 0 && depth_format(ds) ? S_OK : D3DERR_NOTAVAILABLE;
    }
    STDMETHODIMP CheckDeviceFormatConversion(UINT a, D3DDEVTYPE, D3DFORMAT s, D3DFORMAT d) override {
        return a == 0 && s == d && umd_format(s) ? S_OK : D3DERR_NOTAVAILABLE;
    }
    STDMETHODIMP GetDeviceCaps(UINT a, D3DDEVTYPE t, D3DCAPS9 *caps) override {
        if (a || !caps) return D3DERR_INVALIDCALL;
        if (t != D3DDEVTYPE_HAL || !umd_open()) return D3DERR_NOTAVAILABLE;
        *caps = U.caps;
        return S_OK;
    }
    STDMETHODIMP_(HMONITOR) GetAdapterMonitor(UINT a) override {
        POINT p = {0, 0};
        return a ? nullptr : MonitorFromPoint(p, MONITOR_DEFAULTTOPRIMARY);
    }
    STDMETHODIMP CreateDevice(UINT a, D3DDEVTYPE t, HWND focus, DWORD flags, D3DPRESENT_PARAMETERS *p,
                              IDirect3DDevice9 **out) override {
        IDirect3DDevice9Ex *d = nullptr;
        HRESULT hr = create(a, t, focus, flags, p, false, &d);
        if (out) *out = d;
        return hr;
    }
    HRESULT create(UINT a, D3DDEVTYPE t, HWND focus, DWORD flags, D3DPRESENT_PARAMETERS *p, bool dev_ex,
                   IDirect3DDevice9Ex **out) {
        if (!out || !p || a) return D3DERR_INVALIDCALL;
        *out = nullptr;
        if (t != D3DDEVTYPE_HAL) return D3DERR_NOTAVAILABLE;
        if (!umd_open() || !kmd_start()) return D3DERR_NOTAVAILABLE;
        Device *d = new Device();
        d->d3d = this;
        d->ex = dev_ex;
        AddRef();
        HRESULT hr = d->init(focus, flags, p);
        if (hr < 0) {
            d->Release();
            return hr;
        }
        *out = d;
        return S_OK;
    }
    STDMETHODIMP_(UINT) GetAdapterModeCountEx(UINT a, const D3DDISPLAYMODEFILTER *) override { return a == 0 ? 1 : 0; }
    STDMETHODIMP GetAdapterDisplayModeEx(UINT a, D3DDISPLAYMODEEX *m, D3DDISPLAYROTATION *rot) override {
        if (a || !m) return D3DERR_INVALIDCALL;
        m->Width = kMode.Width;
        m->Height = kMode.Height;
        m->RefreshRate = kMode.RefreshRate;
        m->Format = kMode.Format;
        m->ScanLineOrdering = D3DSCANLINEORDERING_PROGRESSIVE;
        if (rot) *rot = D3DDISPLAYROTATION_IDENTITY;
        return S_OK;
    }
    STDMETHODIMP EnumAdapterModesEx(UINT a, const D3DDISPLAYMODEFILTER *, UINT i, D3DDISPLAYMODEEX *m) override {
        if (i) return D3DERR_INVALIDCALL;
        return GetAdapterDisplayModeEx(a, m, nullptr);
    }
    STDMETHODIMP CreateDeviceEx(UINT a, D3DDEVTYPE t, HWND focus, DWORD flags, D3DPRESENT_PARAMETERS *p, D3DDISPLAYMODEEX *,
                                IDirect3DDevice9Ex **out) override {
        return create(a, t, focus, flags, p, true, out);
    }
    STDMETHODIMP GetAdapterLUID(UINT a, LUID *luid) override {
        if (a || !luid) return D3DERR_INVALIDCALL;
        luid->LowPart = 0xAE0;
        luid->HighPart = 0;
        return S_OK;
    }
};

Surface::~Surface() {
    if (owns) dev->destroy_resource(res);
}
STDMETHODIMP Surface::GetDevice(IDirect3DDevice9 **out) {
    if (!out) return D3DERR_INVALIDCALL;
    dev->AddRef();
    *out = dev;
    return S_OK;
}
STDMETHODIMP Surface::GetContainer(REFIID riid, void **out) {
    // A standalone surface's container is its device.
    if (container) return container->QueryInterface(riid, out);
    return dev->QueryInterface(riid, out);
}
// A video-memory surface's allocation holds what the device last wrote back, not what
// clears and draws made since: before a CPU read, copy the surface through the device into
// a system-memory surface (a copy writes its destination back) and refresh our allocation
// from it.
HRESULT refresh_from_device(Surface *s) {
    const D3DFORMAT f = s->desc.Format;
    if (f == D3DFMT_DXT1 || f == D3DFMT_DXT3 || f == D3DFMT_DXT5) return S_OK; // (block rows)
    Surface *tmp = nullptr;
    HRESULT hr = s->dev->new_surface(s->desc.Width, s->desc.Height, f, D3DPOOL_SYSTEMMEM, 0, true, &tmp);
    if (hr < 0) return hr;
    hr = s->dev->blt(s, nullptr, tmp, nullptr, 0);
    D3DDDIARG_LOCK from, to;
    std::memset(&from, 0, sizeof(from));
    std::memset(&to, 0, sizeof(to));
    from.hResource = tmp->res;
    from.Flags.ReadOnly = 1;
    to.hResource = s->res;
    to.SubResourceIndex = s->sub;
    if (hr >= 0) hr = s->dev->f.pfnLock(s->dev->hdev, &from);
    if (hr >= 0) {
        hr = s->dev->f.pfnLock(s->dev->hdev, &to);
        if (hr >= 0) {
            const UINT row = from.Pitch < to.Pitch ? from.Pitch : to.Pitch;
            for (UINT y = 0; y < s->desc.Height; y++)
                std::memcpy(static_cast<uint8_t *>(to.pSurfData) + size_t(y) * to.Pitch,
                            static_cast<const uint8_t *>(from.pSurfData) + size_t(y) * from.Pitch, row);
            D3DDDIARG_UNLOCK u = {s->res, s->sub, 0};
            s->dev->f.pfnUnlock(s->dev->hdev, &u);
        }
        D3DDDIARG_UNLOCK u = {tmp->res, 0, 0};
        s->dev->f.pfnUnlock(s->dev->hdev, &u);
    }
    tmp->Release();
    return hr;
}

STDMETHODIMP Surface::LockRect(D3DLOCKED_RECT *lr, const RECT *rect, DWORD flags) {
    if (!lr) return D3DERR_INVALIDCALL;
    if (desc.Pool == D3DPOOL_DEFAULT && !container && !(flags & D3DLOCK_DISCARD) &&
        !(desc.Usage & D3DUSAGE_DEPTHSTENCIL)) {
        HRESULT hr = refresh_from_device(this);
        if (hr < 0) return hr;
    }
    D3DDDIARG_LOCK l;
    std::memset(&l, 0, sizeof(l));
    l.hResource = res;
    l.SubResourceIndex = sub;
    if (rect) {
        l.Area = *rect;
        l.Flags.AreaValid = 1;
    }
    l.Flags.ReadOnly = (flags & D3DLOCK_READONLY) != 0;
    l.Flags.Discard = (flags & D3DLOCK_DISCARD) != 0;
    l.Flags.NoOverwrite = (flags & D3DLOCK_NOOVERWRITE) != 0;
    l.Flags.DoNotWait = (flags & D3DLOCK_DONOTWAIT) != 0;
    HRESULT hr = dev->f.pfnLock(dev->hdev, &l);
    if (hr < 0) return hr;
    lr->pBits = l.pSurfData;
    lr->Pitch = INT(l.Pitch);
    return S_OK;
}
STDMETHODIMP Surface::UnlockRect() {
    D3DDDIARG_UNLOCK u = {res, sub, 0};
    return dev->f.pfnUnlock(dev->hdev, &u);
}

HRESULT Device::init(HWND focus, DWORD behaviour, D3DPRESENT_PARAMETERS *p) {
    std::memset(&f, 0, sizeof(f));
    cb = kmd_device_callbacks();
    D3DDDIARG_CREATEDEVICE cd;
    std::memset(&cd, 0, sizeof(cd));
    cd.hDevice = reinterpret_cast<HANDLE>(this);
    cd.Interface = D3D_UMD_INTERFACE_VERSION_WIN7;
    cd.pCallbacks = &cb;
    cd.pDeviceFuncs = &f;
    HRESULT hr = U.af.pfnCreateDevice(U.oa.hAdapter, &cd);
    if (hr < 0) return hr;
    hdev = cd.hDevice;
    cp.AdapterOrdinal = 0;
    cp.DeviceType = D3DDEVTYPE(1); // HAL (d3dumddi.h redefines the name)
    cp.hFocusWindow = focus;
    cp.BehaviorFlags = behaviour;
    pp = *p;
    HWND w = pp.hDeviceWindow ? pp.hDeviceWindow : focus;
    if (pp.Windowed && (!pp.BackBufferWidth || !pp.BackBufferHeight)) {
        RECT r = {0, 0, 0, 0};
        if (w) GetClientRect(w, &r);
        if (!pp.BackBufferWidth) pp.BackBufferWidth = r.right > 0 ? UINT(r.right) : 1;
        if (!pp.BackBufferHeight) pp.BackBufferHeight = r.bottom > 0 ? UINT(r.bottom) : 1;
    }
    if (pp.BackBufferFormat == D3DFMT_UNKNOWN) pp.BackBufferFormat = kMode.Format;
    if (!pp.BackBufferCount) pp.BackBufferCount = 1;
    if (pp.BackBufferCount > 1) log("%u back buffers requested: one is used", unsigned(pp.BackBufferCount));
    pp.BackBufferCount = 1;
    *p = pp;
    bool lockable = (pp.Flags & D3DPRESENTFLAG_LOCKABLE_BACKBUFFER) != 0;
    hr = new_surface(pp.BackBufferWidth, pp.BackBufferHeight, pp.BackBufferFormat, D3DPOOL_DEFAULT, D3DUSAGE_RENDERTARGET,
                     lockable, &back);
    if (hr < 0) return hr;
    hr = SetRenderTarget(0, back);
    if (hr < 0) return hr;
    if (pp.EnableAutoDepthStencil) {
        hr = new_surface(pp.BackBufferWidth, pp.BackBufferHeight, pp.AutoDepthStencilFormat, D3DPOOL_DEFAULT,
                         D3DUSAGE_DEPTHSTENCIL, pp.AutoDepthStencilFormat == D3DFMT_D32F_LOCKABLE, &auto_ds);
        if (hr < 0) return hr;
        hr = SetDepthStencilSurface(auto_ds);
        if (hr < 0) return hr;
        // D3D9's default for a device with a depth buffer.
        SetRenderState(D3DRS_ZENABLE, D3DZB_TRUE);
    }
    return S_OK;
}

HRESULT Device::create_resource(UINT w, UINT h, D3DFORMAT fmt, D3DPOOL pool, DWORD usage, bool lockable, HANDLE *out) {
    if (!w || !h || w > 16384 || h > 16384) return D3DERR_INVALIDCALL;
    if (!umd_format(fmt)) return D3DERR_NOTAVAILABLE;
    D3DDDI_SURFACEINFO surf = {w, h, 1, nullptr, 0, 0};
    D3DDDIARG_CREATERESOURCE cr;
    std::memset(&cr, 0, sizeof(cr));
    cr.Format = D3DDDIFORMAT(fmt);
    cr.Pool = pool == D3DPOOL_SYSTEMMEM ? D3DDDIPOOL_SYSTEMMEM : D3DDDIPOOL_VIDEOMEMORY;
    cr.pSurfList = &surf;
    cr.SurfCount = 1;
    cr.MipLevels = 1;
    cr.hResource = reinterpret_cast<HANDLE>(next_runtime_handle++);
    cr.Flags.RenderTarget = (usage & D3DUSAGE_RENDERTARGET) != 0;
    cr.Flags.ZBuffer = (usage & D3DUSAGE_DEPTHSTENCIL) != 0;
    cr.Flags.NotLockable = !lockable;
    HRESULT hr = f.pfnCreateResource(hdev, &cr);
    if (hr < 0) return hr;
    *out = cr.hResource;
    return S_OK;
}

HRESULT Device::new_surface(UINT w, UINT h, D3DFORMAT fmt, D3DPOOL pool, DWORD usage, bool lockable, Surface **out) {
    HANDLE r = nullptr;
    HRESULT hr = create_resource(w, h, fmt, pool, usage, lockable, &r);
    if (hr < 0) return hr;
    D3DSURFACE_DESC d;
    std::memset(&d, 0, sizeof(d));
    d.Format = fmt;
    d.Type = D3DRTYPE_SURFACE;
    d.Usage = usage;
    d.Pool = pool;
    d.MultiSampleType = D3DMULTISAMPLE_NONE;
    d.Width = w;
    d.Height = h;
    *out = new Surface(this, r, d, true);
    return S_OK;
}

STDMETHODIMP Device::GetDirect3D(IDirect3D9 **out) {
    if (!out) return D3DERR_INVALIDCALL;
    d3d->AddRef();
    *out = d3d;
    return S_OK;
}

STDMETHODIMP Device::GetFrontBufferData(UINT sc, IDirect3DSurface9 *dst) {
    // The front buffer is what the last present showed: the device wrote the back buffer's
    // pixels into its allocation at PRESENT. The destination is A8R8G8B8 in system memory.
    Surface *d = static_cast<Surface *>(dst);
    if (sc || !d || d->desc.Format != D3DFMT_A8R8G8B8 || d->desc.Pool != D3DPOOL_SYSTEMMEM) return D3DERR_INVALIDCALL;
    uint64_t size = 0;
    const uint8_t *src = kmd_presented(&size);
    if (!src) return D3DERR_INVALIDCALL;
    const UINT bw = back->desc.Width, bh = back->desc.Height;
    if (size < uint64_t(bw) * bh * 4 || (back->desc.Format != D3DFMT_X8R8G8B8 && back->desc.Format != D3DFMT_A8R8G8B8))
        return D3DERR_NOTAVAILABLE;
    D3DLOCKED_RECT lr;
    HRESULT hr = d->LockRect(&lr, nullptr, 0);
    if (hr < 0) return hr;
    // Windowed programs get the desktop; ours is the back buffer at the origin, black around.
    for (UINT y = 0; y < d->desc.Height; y++) {
        uint32_t *row = reinterpret_cast<uint32_t *>(static_cast<uint8_t *>(lr.pBits) + size_t(y) * lr.Pitch);
        for (UINT x = 0; x < d->desc.Width; x++) {
            uint32_t v = 0xFF000000u;
            if (x < bw && y < bh) {
                std::memcpy(&v, src + (size_t(y) * bw + x) * 4, 4);
                v |= 0xFF000000u;
            }
            row[x] = v;
        }
    }
    return d->UnlockRect();
}

#include "objects_impl.inc"

} // namespace
} // namespace rt

extern "C" {

__declspec(dllexport) IDirect3D9 *WINAPI Direct3DCreate9(UINT sdk) {
    (void)sdk;
    return new rt::Direct3D(false);
}

__declspec(dllexport) HRESULT WINAPI Direct3DCreate9Ex(UINT sdk, IDirect3D9Ex **out) {
    (void)sdk;
    if (!out) return D3DERR_INVALIDCALL;
    *out = new rt::Direct3D(true);
    return S_OK;
}

BOOL WINAPI DllMain(HINSTANCE self, DWORD reason, LPVOID) {
    if (reason == DLL_PROCESS_ATTACH) rt::g_self = self;
    if (reason == DLL_PROCESS_DETACH) rt::kmd_stop();
    return TRUE;
}
}
