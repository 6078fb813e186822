/* Clear: the back buffer cleared to a colour (whole-target Clear), read back with
 * GetRenderTargetData; then cleared again and presented. Writes clear.ppm, clear2.ppm. */
#include "common.h"

int main(void) {
    IDirect3DDevice9 *dev = make_device(64, 48, FALSE);
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0x20, 0x80, 0xE0), 1.0f, 0));
    save_back_buffer(dev, "clear.ppm");
    CHECK(IDirect3DDevice9_BeginScene(dev));
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0xFF, 0x01, 0x7F), 1.0f, 0));
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, "clear2.ppm");
    CHECK(IDirect3DDevice9_Present(dev, NULL, NULL, NULL, NULL));
    IDirect3DDevice9_Release(dev);
    printf("clear: done\n");
    return 0;
}
