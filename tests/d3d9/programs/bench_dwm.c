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
#include "dwm.h"

enum { W = 1280, H = 1024, WINDOWS = 64, TEXTURES = 8, TS = 128 };

/* Window n's texture: a 12-row title bar at alpha 0xE0, the body at 0xC0. */
static DWORD texel(int n, int x, int y) {
    return y < 12 ? D3DCOLOR_ARGB(0xE0, 0x30 + 0x18 * n, 0x50, 0xA0 - 0x10 * n)
                  : D3DCOLOR_ARGB(0xC0, 0xF0 - x, 0xF0 - y, 0xE0 - 0x18 * n);
}

static void draw_frame(struct dwm *d, IDirect3DTexture9 **tex, int frame) {
    int i;
    dwm_begin(d);
    for (i = 0; i < WINDOWS; i++) {
        /* An 8x8 grid of 320x240 windows 140 pixels apart: they overlap (about 3.8 layers
         * per pixel) and drift by a pixel a frame. */
        int x0 = (i % 8) * 140 - 40 + (frame + 3 * i) % 64, y0 = (i / 8) * 110 - 20 + (frame + 5 * i) % 48;
        dwm_quad(d, tex[i % TEXTURES], x0, y0, x0 + 320, y0 + 240);
    }
    CHECK(IDirect3DDevice9Ex_EndScene(d->dev));
    CHECK(IDirect3DDevice9Ex_PresentEx(d->dev, NULL, NULL, NULL, NULL, 0));
}

int main(int argc, char **argv) {
    struct dwm d;
    IDirect3DTexture9 *tex[TEXTURES];
    IDirect3DSurface9 *bb = NULL, *sys = NULL;
    LARGE_INTEGER freq, t0, t1;
    int frames = argc > 1 ? atoi(argv[1]) : 200;
    int i, frame;
    double secs;

    if (frames <= 0) {
        fprintf(stderr, "usage: bench_dwm.exe [FRAMES > 0]\n");
        return 2;
    }
    d = dwm_device(W, H);
    for (i = 0; i < TEXTURES; i++)
        tex[i] = dwm_texture(&d, TS, i, texel);
    dwm_bind(&d, D3DTEXF_LINEAR);
    CHECK(IDirect3DDevice9Ex_GetBackBuffer(d.dev, 0, 0, D3DBACKBUFFER_TYPE_MONO, &bb));
    CHECK(IDirect3DDevice9Ex_CreateOffscreenPlainSurface(d.dev, W, H, D3DFMT_X8R8G8B8, D3DPOOL_SYSTEMMEM, &sys, NULL));

    draw_frame(&d, tex, 0);
    CHECK(IDirect3DDevice9Ex_GetRenderTargetData(d.dev, bb, sys));
    QueryPerformanceFrequency(&freq);
    QueryPerformanceCounter(&t0);
    for (frame = 1; frame <= frames; frame++) draw_frame(&d, tex, frame);
    /* Waits for the last frame's draws. */
    CHECK(IDirect3DDevice9Ex_GetRenderTargetData(d.dev, bb, sys));
    QueryPerformanceCounter(&t1);
    secs = (double)(t1.QuadPart - t0.QuadPart) / (double)freq.QuadPart;
    printf("bench_dwm: %d frames of %d draws at %dx%d in %.3f s\n", frames, WINDOWS, W, H, secs);
    printf("frames/s %.2f\n", frames / secs);
    printf("draws/s %.0f\n", (double)frames * WINDOWS / secs);
    save_rt((IDirect3DDevice9 *)d.dev, bb, "bench_dwm.ppm");

    IDirect3DSurface9_Release(sys);
    IDirect3DSurface9_Release(bb);
    dwm_release(&d, tex, TEXTURES);
    return 0;
}
