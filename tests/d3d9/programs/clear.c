/* Clear: the back buffer cleared to a colour (whole-target Clear), read back with
 * GetRenderTargetData; then cleared again, waited for with an event query, and presented.
 * Writes clear.ppm, clear2.ppm. */
#include "common.h"

int main(void) {
    IDirect3DDevice9 *dev = make_device(64, 48, FALSE);
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0x20, 0x80, 0xE0), 1.0f, 0));
    save_back_buffer(dev, "clear.ppm");
    CHECK(IDirect3DDevice9_BeginScene(dev));
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0xFF, 0x01, 0x7F), 1.0f, 0));
    CHECK(IDirect3DDevice9_EndScene(dev));
    {
        IDirect3DQuery9 *q = NULL;
        BOOL done = FALSE;
        HRESULT hr = S_FALSE;
        int i;
        CHECK(IDirect3DDevice9_CreateQuery(dev, D3DQUERYTYPE_EVENT, &q));
        CHECK(IDirect3DQuery9_Issue(q, D3DISSUE_END));
        for (i = 0; i < 2000 && hr == S_FALSE; i++) {
            hr = IDirect3DQuery9_GetData(q, &done, sizeof(done), D3DGETDATA_FLUSH);
            if (hr == S_FALSE) Sleep(1);
        }
        if (hr != S_OK || !done) {
            fprintf(stderr, "event query: 0x%08lx done %d\n", (unsigned long)hr, done);
            return 1;
        }
        IDirect3DQuery9_Release(q);
    }
    save_back_buffer(dev, "clear2.ppm");
    CHECK(IDirect3DDevice9_Present(dev, NULL, NULL, NULL, NULL));
    IDirect3DDevice9_Release(dev);
    printf("clear: done\n");
    return 0;
}
