/* Shared helpers of the tests/d3d9 programs: a window, a device, PPM output of a render
 * target read back through GetRenderTargetData. Each program prints what failed and
 * exits non-zero; the images it writes are compared between runtimes by compare.sh. */
#ifndef D3D9_PROGRAMS_COMMON_H
#define D3D9_PROGRAMS_COMMON_H

#define COBJMACROS
#include <windows.h>
#include <d3d9.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(hr_expr)                                                                     \
    do {                                                                                   \
        HRESULT hr_ = (hr_expr);                                                           \
        if (FAILED(hr_)) {                                                                 \
            fprintf(stderr, "%s:%d: %s failed: 0x%08lx\n", __FILE__, __LINE__, #hr_expr,   \
                    (unsigned long)hr_);                                                   \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static inline HWND make_window(int w, int h) {
    WNDCLASSA wc = {0};
    RECT r = {0, 0, w, h};
    wc.lpfnWndProc = DefWindowProcA;
    wc.hInstance = GetModuleHandleA(NULL);
    wc.lpszClassName = "d3d9test";
    RegisterClassA(&wc);
    AdjustWindowRect(&r, WS_OVERLAPPEDWINDOW, FALSE);
    return CreateWindowA("d3d9test", "d3d9test", WS_OVERLAPPEDWINDOW, 0, 0, r.right - r.left,
                         r.bottom - r.top, NULL, NULL, wc.hInstance, NULL);
}

/* Present parameters of one w x h X8R8G8B8 back buffer of window `wnd`, windowed, no
 * vsync, swap effect DISCARD. */
static inline D3DPRESENT_PARAMETERS windowed_present_params(HWND wnd, int w, int h) {
    D3DPRESENT_PARAMETERS pp = {0};
    pp.BackBufferWidth = w;
    pp.BackBufferHeight = h;
    pp.BackBufferFormat = D3DFMT_X8R8G8B8;
    pp.BackBufferCount = 1;
    pp.SwapEffect = D3DSWAPEFFECT_DISCARD;
    pp.hDeviceWindow = wnd;
    pp.Windowed = TRUE;
    pp.PresentationInterval = D3DPRESENT_INTERVAL_IMMEDIATE;
    return pp;
}

/* A windowed HAL device with a w x h X8R8G8B8 back buffer (D24S8 depth when depth). */
static inline IDirect3DDevice9 *make_device(int w, int h, BOOL depth) {
    IDirect3D9 *d3d = Direct3DCreate9(D3D_SDK_VERSION);
    D3DPRESENT_PARAMETERS pp;
    IDirect3DDevice9 *dev = NULL;
    HWND wnd = make_window(w, h);
    if (!d3d || !wnd) {
        fprintf(stderr, "no Direct3D 9 or no window\n");
        exit(1);
    }
    pp = windowed_present_params(wnd, w, h);
    pp.EnableAutoDepthStencil = depth;
    pp.AutoDepthStencilFormat = D3DFMT_D24S8;
    CHECK(IDirect3D9_CreateDevice(d3d, D3DADAPTER_DEFAULT, D3DDEVTYPE_HAL, wnd,
                                  D3DCREATE_HARDWARE_VERTEXPROCESSING, &pp, &dev));
    IDirect3D9_Release(d3d);
    return dev;
}

/* A float's bits, for the DWORD render, sampler and stage states that hold floats. */
static inline DWORD fbits(float f) {
    DWORD d;
    memcpy(&d, &f, 4);
    return d;
}

/* Writes a locked X8R8G8B8/A8R8G8B8 surface as a binary PPM (alpha dropped). */
static inline void write_locked_ppm(const char *path, const D3DLOCKED_RECT *lr, UINT w, UINT h) {
    FILE *f = fopen(path, "wb");
    UINT x, y;
    if (!f) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    fprintf(f, "P6\n%u %u\n255\n", w, h);
    for (y = 0; y < h; y++) {
        const unsigned char *row = (const unsigned char *)lr->pBits + (size_t)y * lr->Pitch;
        for (x = 0; x < w; x++) {
            unsigned char rgb[3] = {row[x * 4 + 2], row[x * 4 + 1], row[x * 4 + 0]};
            fwrite(rgb, 1, 3, f);
        }
    }
    fclose(f);
}

/* Reads render target `rt` back through a system-memory surface and writes it as PPM. */
static inline void save_rt(IDirect3DDevice9 *dev, IDirect3DSurface9 *rt, const char *path) {
    D3DSURFACE_DESC d;
    IDirect3DSurface9 *sys = NULL;
    D3DLOCKED_RECT lr;
    CHECK(IDirect3DSurface9_GetDesc(rt, &d));
    CHECK(IDirect3DDevice9_CreateOffscreenPlainSurface(dev, d.Width, d.Height, d.Format, D3DPOOL_SYSTEMMEM,
                                                       &sys, NULL));
    CHECK(IDirect3DDevice9_GetRenderTargetData(dev, rt, sys));
    CHECK(IDirect3DSurface9_LockRect(sys, &lr, NULL, D3DLOCK_READONLY));
    write_locked_ppm(path, &lr, d.Width, d.Height);
    CHECK(IDirect3DSurface9_UnlockRect(sys));
    IDirect3DSurface9_Release(sys);
}

/* The back buffer as PPM. */
static inline void save_back_buffer(IDirect3DDevice9 *dev, const char *path) {
    IDirect3DSurface9 *bb = NULL;
    CHECK(IDirect3DDevice9_GetBackBuffer(dev, 0, 0, D3DBACKBUFFER_TYPE_MONO, &bb));
    save_rt(dev, bb, path);
    IDirect3DSurface9_Release(bb);
}

#endif
