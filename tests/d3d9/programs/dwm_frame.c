/* A DWM-like frame on a D3D9Ex device (Direct3DCreate9Ex, CreateDeviceEx, PresentEx):
 * over a cleared desktop, 12 overlapping "windows", each a drop shadow (a black quad at
 * alpha 0x40) and a textured quad whose 8x8 A8R8G8B8 texture has alpha 0xC0, blended
 * SRCALPHA/INVSRCALPHA, point sampled; edges and texel edges off the pixel centres.
 * Writes dwm_frame.ppm (read back before PresentEx), then presents three frames. */
#include "dwm.h"

enum { W = 128, H = 96, WINDOW_TEXTURES = 3 };

/* Textures 0-2: windows (title row alpha 0xE0, body 0xC0); 3: the shadow. */
static DWORD texel(int n, int x, int y) {
    if (n == WINDOW_TEXTURES)
        return D3DCOLOR_ARGB(0x40, 0, 0, 0);
    return y == 0 ? D3DCOLOR_ARGB(0xE0, 0x30 + 0x40 * n, 0x50, 0xA0 - 0x20 * n)
                  : D3DCOLOR_ARGB(0xC0, 0xF0 - 8 * x, 0xF0 - 8 * y, 0xE0 - 0x30 * n);
}

int main(void) {
    struct dwm d = dwm_device(W, H);
    IDirect3DTexture9 *tex[WINDOW_TEXTURES + 1];
    IDirect3DSurface9 *bb = NULL;
    int i, frame;

    for (i = 0; i <= WINDOW_TEXTURES; i++)
        tex[i] = dwm_texture(&d, 8, i, texel);
    dwm_bind(&d, D3DTEXF_POINT);
    CHECK(IDirect3DDevice9Ex_GetBackBuffer(d.dev, 0, 0, D3DBACKBUFFER_TYPE_MONO, &bb));
    for (frame = 0; frame < 3; frame++) {
        dwm_begin(&d);
        for (i = 0; i < 12; i++) {
            int x0 = 4 + (i % 4) * 26 + frame * 2, y0 = 4 + (i / 4) * 26 + (i % 3) * 3;
            dwm_quad(&d, tex[WINDOW_TEXTURES], x0 + 3, y0 + 3, x0 + 3 + 40, y0 + 3 + 32);
            dwm_quad(&d, tex[i % WINDOW_TEXTURES], x0, y0, x0 + 40, y0 + 32);
        }
        CHECK(IDirect3DDevice9Ex_EndScene(d.dev));
        if (frame == 0) save_rt((IDirect3DDevice9 *)d.dev, bb, "dwm_frame.ppm");
        CHECK(IDirect3DDevice9Ex_PresentEx(d.dev, NULL, NULL, NULL, NULL, 0));
    }
    IDirect3DSurface9_Release(bb);
    dwm_release(&d, tex, WINDOW_TEXTURES + 1);
    printf("dwm_frame: done\n");
    return 0;
}
