/* Benchmark, not a test (not in guest-tools/tests/d3d9_suite.rs): a DWM-like scene on a
 * D3D9Ex device at 1280x1024. Each frame clears the desktop and draws 64 "windows", each
 * a textured quad (one of 8 128x128 A8R8G8B8 textures, alpha 0xC0 inside and 0xE0 in the
 * title bar, linear filtering) blended SRCALPHA/INVSRCALPHA at a position that moves from
 * frame to frame, then presents once (PresentEx). Run: bench_dwm.exe [FRAMES] (default 200).
 * One untimed warm-up frame (shader and pipeline creation); the timed frames end with a
 * back-buffer read-back so that every draw has executed. Prints frames/s and draws/s
 * measured with QueryPerformanceCounter, then writes the last frame as bench_dwm.ppm
 * (untimed), so that `tests/d3d9/compare.sh bench_dwm.exe OUT` shows both runtimes drew
 * the same scene (last check, wgpu executor: max difference 3 in 4.6% of the pixels,
 * linear-filter rounding through up to four blended layers; beyond compare.sh's default
 * tolerance of 1, hence not in the suite). Driven by tests/bench/gpu-dwm.sh. */
#include "common.h"

static const DWORD tex_vs[] = {
    0xFFFE0200, 0x0200001F, 0x80000000, 0x900F0000, 0x0200001F, 0x80000005, 0x900F0001,
    0x02000001, 0xC00F0000, 0x90E40000, 0x02000001, 0xE00F0000, 0x90E40001, 0x0000FFFF,
};
static const DWORD tex_ps[] = {
    0xFFFF0200, 0x0200001F, 0x80000000, 0xB0030000, 0x0200001F, 0x90000000, 0xA00F0800,
    0x03000042, 0x800F0000, 0xB0E40000, 0xA0E40800, 0x02000001, 0x800F0800, 0x80E40000, 0x0000FFFF,
};

struct tvertex { float x, y, z, w, u, v; };
enum { W = 1280, H = 1024, WINDOWS = 64, TEXTURES = 8, TS = 128 };

static void quad(IDirect3DDevice9Ex *dev, int x0, int y0, int x1, int y1) {
    float l = (x0 - 0.5f) * 2 / W - 1, r = (x1 - 0.5f) * 2 / W - 1;
    float t = 1 - (y0 - 0.5f) * 2 / H, b = 1 - (y1 - 0.5f) * 2 / H;
    struct tvertex v[4] = {{l, t, 0.5f, 1, 0, 0}, {r, t, 0.5f, 1, 1, 0}, {l, b, 0.5f, 1, 0, 1}, {r, b, 0.5f, 1, 1, 1}};
    CHECK(IDirect3DDevice9Ex_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, 2, v, sizeof(v[0])));
}

static void draw_frame(IDirect3DDevice9Ex *dev, IDirect3DTexture9 **tex, int frame) {
    int i;
    CHECK(IDirect3DDevice9Ex_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0x10, 0x50, 0x80), 1.0f, 0));
    CHECK(IDirect3DDevice9Ex_BeginScene(dev));
    for (i = 0; i < WINDOWS; i++) {
        /* An 8x8 grid of 320x240 windows 140 pixels apart: they overlap (about 3.8 layers
         * per pixel) and drift by a pixel a frame. */
        int x0 = (i % 8) * 140 - 40 + (frame + 3 * i) % 64, y0 = (i / 8) * 110 - 20 + (frame + 5 * i) % 48;
        CHECK(IDirect3DDevice9Ex_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)tex[i % TEXTURES]));
        quad(dev, x0, y0, x0 + 320, y0 + 240);
    }
    CHECK(IDirect3DDevice9Ex_EndScene(dev));
    CHECK(IDirect3DDevice9Ex_PresentEx(dev, NULL, NULL, NULL, NULL, 0));
}

int main(int argc, char **argv) {
    IDirect3D9Ex *d3d = NULL;
    IDirect3DDevice9Ex *dev = NULL;
    IDirect3DTexture9 *tex[TEXTURES];
    IDirect3DVertexShader9 *vs = NULL;
    IDirect3DPixelShader9 *ps = NULL;
    IDirect3DVertexDeclaration9 *decl = NULL;
    IDirect3DSurface9 *bb = NULL, *sys = NULL;
    D3DVERTEXELEMENT9 te[] = {
        {0, 0, D3DDECLTYPE_FLOAT4, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_POSITION, 0},
        {0, 16, D3DDECLTYPE_FLOAT2, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_TEXCOORD, 0},
        D3DDECL_END(),
    };
    D3DPRESENT_PARAMETERS pp = {0};
    D3DLOCKED_RECT lr;
    LARGE_INTEGER freq, t0, t1;
    HWND wnd = make_window(W, H);
    int frames = argc > 1 ? atoi(argv[1]) : 200;
    int i, x, y, frame;
    double secs;

    if (frames <= 0) {
        fprintf(stderr, "usage: bench_dwm.exe [FRAMES > 0]\n");
        return 2;
    }
    CHECK(Direct3DCreate9Ex(D3D_SDK_VERSION, &d3d));
    pp.BackBufferWidth = W;
    pp.BackBufferHeight = H;
    pp.BackBufferFormat = D3DFMT_X8R8G8B8;
    pp.BackBufferCount = 1;
    pp.SwapEffect = D3DSWAPEFFECT_FLIPEX;
    pp.hDeviceWindow = wnd;
    pp.Windowed = TRUE;
    pp.PresentationInterval = D3DPRESENT_INTERVAL_IMMEDIATE;
    CHECK(IDirect3D9Ex_CreateDeviceEx(d3d, D3DADAPTER_DEFAULT, D3DDEVTYPE_HAL, wnd, D3DCREATE_HARDWARE_VERTEXPROCESSING,
                                      &pp, NULL, &dev));
    for (i = 0; i < TEXTURES; i++) {
        /* D3D9Ex has no MANAGED pool: fill a SYSTEMMEM texture and UpdateTexture. */
        IDirect3DTexture9 *stage = NULL;
        CHECK(IDirect3DDevice9Ex_CreateTexture(dev, TS, TS, 1, 0, D3DFMT_A8R8G8B8, D3DPOOL_DEFAULT, &tex[i], NULL));
        CHECK(IDirect3DDevice9Ex_CreateTexture(dev, TS, TS, 1, 0, D3DFMT_A8R8G8B8, D3DPOOL_SYSTEMMEM, &stage, NULL));
        CHECK(IDirect3DTexture9_LockRect(stage, 0, &lr, NULL, 0));
        for (y = 0; y < TS; y++)
            for (x = 0; x < TS; x++) {
                DWORD c = y < 12 ? D3DCOLOR_ARGB(0xE0, 0x30 + 0x18 * i, 0x50, 0xA0 - 0x10 * i)
                                 : D3DCOLOR_ARGB(0xC0, 0xF0 - x, 0xF0 - y, 0xE0 - 0x18 * i);
                ((DWORD *)((BYTE *)lr.pBits + y * lr.Pitch))[x] = c;
            }
        CHECK(IDirect3DTexture9_UnlockRect(stage, 0));
        CHECK(IDirect3DDevice9Ex_UpdateTexture(dev, (IDirect3DBaseTexture9 *)stage, (IDirect3DBaseTexture9 *)tex[i]));
        IDirect3DTexture9_Release(stage);
    }
    CHECK(IDirect3DDevice9Ex_CreateVertexShader(dev, tex_vs, &vs));
    CHECK(IDirect3DDevice9Ex_CreatePixelShader(dev, tex_ps, &ps));
    CHECK(IDirect3DDevice9Ex_CreateVertexDeclaration(dev, te, &decl));
    CHECK(IDirect3DDevice9Ex_SetVertexShader(dev, vs));
    CHECK(IDirect3DDevice9Ex_SetPixelShader(dev, ps));
    CHECK(IDirect3DDevice9Ex_SetVertexDeclaration(dev, decl));
    CHECK(IDirect3DDevice9Ex_SetRenderState(dev, D3DRS_CULLMODE, D3DCULL_NONE));
    CHECK(IDirect3DDevice9Ex_SetRenderState(dev, D3DRS_ZENABLE, D3DZB_FALSE));
    CHECK(IDirect3DDevice9Ex_SetRenderState(dev, D3DRS_ALPHABLENDENABLE, TRUE));
    CHECK(IDirect3DDevice9Ex_SetRenderState(dev, D3DRS_SRCBLEND, D3DBLEND_SRCALPHA));
    CHECK(IDirect3DDevice9Ex_SetRenderState(dev, D3DRS_DESTBLEND, D3DBLEND_INVSRCALPHA));
    CHECK(IDirect3DDevice9Ex_SetSamplerState(dev, 0, D3DSAMP_MAGFILTER, D3DTEXF_LINEAR));
    CHECK(IDirect3DDevice9Ex_SetSamplerState(dev, 0, D3DSAMP_MINFILTER, D3DTEXF_LINEAR));
    CHECK(IDirect3DDevice9Ex_GetBackBuffer(dev, 0, 0, D3DBACKBUFFER_TYPE_MONO, &bb));
    CHECK(IDirect3DDevice9Ex_CreateOffscreenPlainSurface(dev, W, H, D3DFMT_X8R8G8B8, D3DPOOL_SYSTEMMEM, &sys, NULL));

    draw_frame(dev, tex, 0);
    CHECK(IDirect3DDevice9Ex_GetRenderTargetData(dev, bb, sys));
    QueryPerformanceFrequency(&freq);
    QueryPerformanceCounter(&t0);
    for (frame = 1; frame <= frames; frame++) draw_frame(dev, tex, frame);
    /* Waits for the last frame's draws. */
    CHECK(IDirect3DDevice9Ex_GetRenderTargetData(dev, bb, sys));
    QueryPerformanceCounter(&t1);
    secs = (double)(t1.QuadPart - t0.QuadPart) / (double)freq.QuadPart;
    printf("bench_dwm: %d frames of %d draws at %dx%d in %.3f s\n", frames, WINDOWS, W, H, secs);
    printf("frames/s %.2f\n", frames / secs);
    printf("draws/s %.0f\n", (double)frames * WINDOWS / secs);
    save_rt((IDirect3DDevice9 *)dev, bb, "bench_dwm.ppm");

    CHECK(IDirect3DDevice9Ex_SetTexture(dev, 0, NULL));
    IDirect3DSurface9_Release(sys);
    IDirect3DSurface9_Release(bb);
    for (i = 0; i < TEXTURES; i++) IDirect3DTexture9_Release(tex[i]);
    IDirect3DVertexDeclaration9_Release(decl);
    IDirect3DPixelShader9_Release(ps);
    IDirect3DVertexShader9_Release(vs);
    IDirect3DDevice9Ex_Release(dev);
    IDirect3D9Ex_Release(d3d);
    return 0;
}
