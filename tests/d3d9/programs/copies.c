/* Copies without draws: ColorFill of whole surfaces, StretchRect of same-size rectangles
 * between render targets (a copy, point filter), an offscreen plain surface written
 * through LockRect and copied into the back buffer, and GetRenderTargetData of each.
 * Writes copies_rt.ppm, copies_back.ppm, copies_locked.ppm. */
#include "common.h"

int main(void) {
    IDirect3DDevice9 *dev = make_device(64, 48, FALSE);
    IDirect3DSurface9 *rt = NULL, *bb = NULL, *plain = NULL;
    D3DLOCKED_RECT lr;
    RECT src = {0, 0, 32, 24}, dst = {16, 8, 48, 32}, whole = {0, 0, 64, 48};
    UINT x, y;

    CHECK(IDirect3DDevice9_GetBackBuffer(dev, 0, 0, D3DBACKBUFFER_TYPE_MONO, &bb));
    CHECK(IDirect3DDevice9_CreateRenderTarget(dev, 64, 48, D3DFMT_X8R8G8B8, D3DMULTISAMPLE_NONE, 0, FALSE, &rt, NULL));
    CHECK(IDirect3DDevice9_ColorFill(dev, rt, NULL, D3DCOLOR_XRGB(0xC0, 0x30, 0x10)));
    save_rt(dev, rt, "copies_rt.ppm");

    /* Back buffer: clear, then a 32x24 piece of the render target copied in the middle. */
    CHECK(IDirect3DDevice9_ColorFill(dev, bb, NULL, D3DCOLOR_XRGB(0x10, 0x20, 0x30)));
    CHECK(IDirect3DDevice9_StretchRect(dev, rt, &src, bb, &dst, D3DTEXF_POINT));
    save_rt(dev, bb, "copies_back.ppm");

    /* A gradient written by the CPU into an offscreen plain surface, copied to the back buffer. */
    CHECK(IDirect3DDevice9_CreateOffscreenPlainSurface(dev, 64, 48, D3DFMT_X8R8G8B8, D3DPOOL_DEFAULT, &plain, NULL));
    CHECK(IDirect3DSurface9_LockRect(plain, &lr, NULL, 0));
    for (y = 0; y < 48; y++)
        for (x = 0; x < 64; x++)
            ((DWORD *)((BYTE *)lr.pBits + y * lr.Pitch))[x] = D3DCOLOR_XRGB(x * 4, y * 5, (x ^ y) * 3);
    CHECK(IDirect3DSurface9_UnlockRect(plain));
    CHECK(IDirect3DDevice9_StretchRect(dev, plain, &whole, bb, &whole, D3DTEXF_NONE));
    save_rt(dev, bb, "copies_locked.ppm");
    CHECK(IDirect3DDevice9_Present(dev, NULL, NULL, NULL, NULL));

    IDirect3DSurface9_Release(plain);
    IDirect3DSurface9_Release(rt);
    IDirect3DSurface9_Release(bb);
    IDirect3DDevice9_Release(dev);
    printf("copies: done\n");
    return 0;
}
