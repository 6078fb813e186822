/* CPU reads of video-memory surfaces: a lockable render target after Clear, and an
 * offscreen plain surface after a whole-surface ColorFill, both read with LockRect.
 * Writes lockable_rt.ppm, lockable_plain.ppm. */
#include "common.h"

int main(void) {
    IDirect3DDevice9 *dev = make_device(32, 32, FALSE);
    IDirect3DSurface9 *rt = NULL, *plain = NULL;
    D3DLOCKED_RECT lr;

    CHECK(IDirect3DDevice9_CreateRenderTarget(dev, 40, 24, D3DFMT_A8R8G8B8, D3DMULTISAMPLE_NONE, 0, TRUE, &rt, NULL));
    CHECK(IDirect3DDevice9_SetRenderTarget(dev, 0, rt));
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_ARGB(0x80, 0x11, 0x99, 0xEE), 1.0f, 0));
    CHECK(IDirect3DSurface9_LockRect(rt, &lr, NULL, D3DLOCK_READONLY));
    write_locked_ppm("lockable_rt.ppm", &lr, 40, 24);
    CHECK(IDirect3DSurface9_UnlockRect(rt));

    CHECK(IDirect3DDevice9_CreateOffscreenPlainSurface(dev, 24, 16, D3DFMT_X8R8G8B8, D3DPOOL_DEFAULT, &plain, NULL));
    CHECK(IDirect3DDevice9_ColorFill(dev, plain, NULL, D3DCOLOR_XRGB(0x5A, 0xA5, 0x0F)));
    CHECK(IDirect3DSurface9_LockRect(plain, &lr, NULL, D3DLOCK_READONLY));
    write_locked_ppm("lockable_plain.ppm", &lr, 24, 16);
    CHECK(IDirect3DSurface9_UnlockRect(plain));

    IDirect3DSurface9_Release(plain);
    IDirect3DSurface9_Release(rt);
    IDirect3DDevice9_Release(dev);
    printf("lockable: done\n");
    return 0;
}
