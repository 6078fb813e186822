/* Shared by the DWM-like programs (dwm_frame.c, bench_dwm.c): a D3D9Ex device, textures
 * filled through a SYSTEMMEM copy, and "window" quads drawn with a textured pass-through
 * shader pair, blended SRCALPHA/INVSRCALPHA as DWM composes windows. */
#ifndef D3D9_PROGRAMS_DWM_H
#define D3D9_PROGRAMS_DWM_H

#include "common.h"

/* vs_2_0: position and texcoord 0 passed on. */
static const DWORD dwm_vs[] = {
    0xFFFE0200, 0x0200001F, 0x80000000, 0x900F0000, 0x0200001F, 0x80000005, 0x900F0001,
    0x02000001, 0xC00F0000, 0x90E40000, 0x02000001, 0xE00F0000, 0x90E40001, 0x0000FFFF,
};
/* ps_2_0: the texel of t0 from s0. */
static const DWORD dwm_ps[] = {
    0xFFFF0200, 0x0200001F, 0x80000000, 0xB0030000, 0x0200001F, 0x90000000, 0xA00F0800,
    0x03000042, 0x800F0000, 0xB0E40000, 0xA0E40800, 0x02000001, 0x800F0800, 0x80E40000, 0x0000FFFF,
};

struct dwm_vertex {
    float x, y, z, w, u, v;
};

/* The device and what dwm_bind created, for dwm_release. */
struct dwm {
    IDirect3D9Ex *d3d;
    IDirect3DDevice9Ex *dev;
    IDirect3DVertexShader9 *vs;
    IDirect3DPixelShader9 *ps;
    IDirect3DVertexDeclaration9 *decl;
    int w, h;
};

/* A windowed D3D9Ex HAL device with a w x h X8R8G8B8 back buffer, FLIPEX, no vsync. */
static inline struct dwm dwm_device(int w, int h) {
    struct dwm d = {0};
    HWND wnd = make_window(w, h);
    D3DPRESENT_PARAMETERS pp = windowed_present_params(wnd, w, h);
    d.w = w;
    d.h = h;
    CHECK(Direct3DCreate9Ex(D3D_SDK_VERSION, &d.d3d));
    pp.SwapEffect = D3DSWAPEFFECT_FLIPEX;
    CHECK(IDirect3D9Ex_CreateDeviceEx(d.d3d, D3DADAPTER_DEFAULT, D3DDEVTYPE_HAL, wnd, D3DCREATE_HARDWARE_VERTEXPROCESSING,
                                      &pp, NULL, &d.dev));
    return d;
}

/* A size x size A8R8G8B8 DEFAULT-pool texture whose texel (x, y) is texel(n, x, y). D3D9Ex
 * has no MANAGED pool and DEFAULT textures cannot be locked, so it is filled through a
 * SYSTEMMEM texture and UpdateTexture. */
static inline IDirect3DTexture9 *dwm_texture(struct dwm *d, int size, int n, DWORD (*texel)(int n, int x, int y)) {
    IDirect3DTexture9 *tex = NULL, *stage = NULL;
    D3DLOCKED_RECT lr;
    int x, y;
    CHECK(IDirect3DDevice9Ex_CreateTexture(d->dev, size, size, 1, 0, D3DFMT_A8R8G8B8, D3DPOOL_DEFAULT, &tex, NULL));
    CHECK(IDirect3DDevice9Ex_CreateTexture(d->dev, size, size, 1, 0, D3DFMT_A8R8G8B8, D3DPOOL_SYSTEMMEM, &stage, NULL));
    CHECK(IDirect3DTexture9_LockRect(stage, 0, &lr, NULL, 0));
    for (y = 0; y < size; y++)
        for (x = 0; x < size; x++)
            ((DWORD *)((BYTE *)lr.pBits + y * lr.Pitch))[x] = texel(n, x, y);
    CHECK(IDirect3DTexture9_UnlockRect(stage, 0));
    CHECK(IDirect3DDevice9Ex_UpdateTexture(d->dev, (IDirect3DBaseTexture9 *)stage, (IDirect3DBaseTexture9 *)tex));
    IDirect3DTexture9_Release(stage);
    return tex;
}

/* Creates and binds the shaders and declaration; no culling, no depth, alpha blending
 * SRCALPHA/INVSRCALPHA, sampler 0 filtering with `filter`. */
static inline void dwm_bind(struct dwm *d, D3DTEXTUREFILTERTYPE filter) {
    static const D3DVERTEXELEMENT9 elements[] = {
        {0, 0, D3DDECLTYPE_FLOAT4, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_POSITION, 0},
        {0, 16, D3DDECLTYPE_FLOAT2, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_TEXCOORD, 0},
        D3DDECL_END(),
    };
    CHECK(IDirect3DDevice9Ex_CreateVertexShader(d->dev, dwm_vs, &d->vs));
    CHECK(IDirect3DDevice9Ex_CreatePixelShader(d->dev, dwm_ps, &d->ps));
    CHECK(IDirect3DDevice9Ex_CreateVertexDeclaration(d->dev, elements, &d->decl));
    CHECK(IDirect3DDevice9Ex_SetVertexShader(d->dev, d->vs));
    CHECK(IDirect3DDevice9Ex_SetPixelShader(d->dev, d->ps));
    CHECK(IDirect3DDevice9Ex_SetVertexDeclaration(d->dev, d->decl));
    CHECK(IDirect3DDevice9Ex_SetRenderState(d->dev, D3DRS_CULLMODE, D3DCULL_NONE));
    CHECK(IDirect3DDevice9Ex_SetRenderState(d->dev, D3DRS_ZENABLE, D3DZB_FALSE));
    CHECK(IDirect3DDevice9Ex_SetRenderState(d->dev, D3DRS_ALPHABLENDENABLE, TRUE));
    CHECK(IDirect3DDevice9Ex_SetRenderState(d->dev, D3DRS_SRCBLEND, D3DBLEND_SRCALPHA));
    CHECK(IDirect3DDevice9Ex_SetRenderState(d->dev, D3DRS_DESTBLEND, D3DBLEND_INVSRCALPHA));
    CHECK(IDirect3DDevice9Ex_SetSamplerState(d->dev, 0, D3DSAMP_MAGFILTER, filter));
    CHECK(IDirect3DDevice9Ex_SetSamplerState(d->dev, 0, D3DSAMP_MINFILTER, filter));
}

/* Draws texture `tex` over pixels [x0, x1) x [y0, y1) (D3D9 pixel centres on integers). */
static inline void dwm_quad(struct dwm *d, IDirect3DTexture9 *tex, int x0, int y0, int x1, int y1) {
    float l = (x0 - 0.5f) * 2 / d->w - 1, r = (x1 - 0.5f) * 2 / d->w - 1;
    float t = 1 - (y0 - 0.5f) * 2 / d->h, b = 1 - (y1 - 0.5f) * 2 / d->h;
    struct dwm_vertex v[4] = {{l, t, 0.5f, 1, 0, 0}, {r, t, 0.5f, 1, 1, 0}, {l, b, 0.5f, 1, 0, 1}, {r, b, 0.5f, 1, 1, 1}};
    CHECK(IDirect3DDevice9Ex_SetTexture(d->dev, 0, (IDirect3DBaseTexture9 *)tex));
    CHECK(IDirect3DDevice9Ex_DrawPrimitiveUP(d->dev, D3DPT_TRIANGLESTRIP, 2, v, sizeof(v[0])));
}

/* Clears the desktop and begins the scene. */
static inline void dwm_begin(struct dwm *d) {
    CHECK(IDirect3DDevice9Ex_Clear(d->dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0x10, 0x50, 0x80), 1.0f, 0));
    CHECK(IDirect3DDevice9Ex_BeginScene(d->dev));
}

/* Unbinds and releases the `n` textures, then what dwm_device and dwm_bind created. */
static inline void dwm_release(struct dwm *d, IDirect3DTexture9 **tex, int n) {
    int i;
    CHECK(IDirect3DDevice9Ex_SetTexture(d->dev, 0, NULL));
    for (i = 0; i < n; i++)
        IDirect3DTexture9_Release(tex[i]);
    IDirect3DVertexDeclaration9_Release(d->decl);
    IDirect3DPixelShader9_Release(d->ps);
    IDirect3DVertexShader9_Release(d->vs);
    IDirect3DDevice9Ex_Release(d->dev);
    IDirect3D9Ex_Release(d->d3d);
}

#endif
