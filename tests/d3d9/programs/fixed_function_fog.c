/* Fixed-function fog: no shaders bound. A floor plane receding from z = 1.5 to 9.5 under a
 * perspective projection (FVF XYZ|DIFFUSE, 16 rows), one 64x64 viewport per mode in a
 * 128x128 back buffer:
 *   1. vertex fog, LINEAR (start 2, end 8, eye-space distance);
 *   2. vertex fog, EXP (density 0.2);
 *   3. table (per-pixel) fog, EXP2 (density 0.15), W-based as the projection is perspective;
 *   4. table fog, LINEAR on pre-transformed vertices (XYZRHW, Z-based: start 0.2, end 0.9).
 * Writes ff_fog.ppm. */
#include <math.h>
#include <string.h>

#include "common.h"

#define ROWS 16
struct vertex { float x, y, z; DWORD color; };
struct rhw_vertex { float x, y, z, rhw; DWORD color; };

static IDirect3DDevice9 *dev;

static void rs(D3DRENDERSTATETYPE s, DWORD v) { CHECK(IDirect3DDevice9_SetRenderState(dev, s, v)); }
static void viewport(DWORD x, DWORD y) {
    D3DVIEWPORT9 vp = {x, y, 64, 64, 0.0f, 1.0f};
    CHECK(IDirect3DDevice9_SetViewport(dev, &vp));
}

static void floor_plane(void) {
    struct vertex v[(ROWS + 1) * 2];
    int i;
    for (i = 0; i <= ROWS; i++) {
        float z = 1.5f + 8.0f * (float)i / ROWS;
        DWORD c = D3DCOLOR_XRGB(255 - 12 * i, 80 + 8 * i, 40 + 10 * i);
        v[2 * i].x = -3.0f, v[2 * i].y = -1.0f, v[2 * i].z = z, v[2 * i].color = c;
        v[2 * i + 1].x = 3.0f, v[2 * i + 1].y = -1.0f, v[2 * i + 1].z = z, v[2 * i + 1].color = c ^ 0x00303030;
    }
    CHECK(IDirect3DDevice9_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, ROWS * 2, v, sizeof(struct vertex)));
}

int main(void) {
    D3DMATRIX proj;
    const float zn = 1.0f, zf = 20.0f, ys = 1.0f / tanf(3.14159265f / 8);
    struct rhw_vertex q[4] = {
        {63.5f, 63.5f, 0.0f, 1.0f, 0xFF20C040}, {127.5f, 63.5f, 0.0f, 1.0f, 0xFF2040C0},
        {63.5f, 127.5f, 1.0f, 1.0f, 0xFFC04020}, {127.5f, 127.5f, 1.0f, 1.0f, 0xFFC0C0C0},
    };
    dev = make_device(128, 128, FALSE);
    memset(&proj, 0, sizeof(proj));
    proj._11 = ys, proj._22 = ys, proj._33 = zf / (zf - zn), proj._34 = 1.0f, proj._43 = -zn * zf / (zf - zn);
    CHECK(IDirect3DDevice9_SetTransform(dev, D3DTS_PROJECTION, &proj));
    rs(D3DRS_CULLMODE, D3DCULL_NONE);
    rs(D3DRS_ZENABLE, D3DZB_FALSE);
    rs(D3DRS_LIGHTING, FALSE);
    rs(D3DRS_FOGENABLE, TRUE);
    rs(D3DRS_FOGCOLOR, D3DCOLOR_XRGB(0xB0, 0xC0, 0xE0));
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0x10, 0x10, 0x30), 1.0f, 0));
    CHECK(IDirect3DDevice9_BeginScene(dev));
    CHECK(IDirect3DDevice9_SetFVF(dev, D3DFVF_XYZ | D3DFVF_DIFFUSE));

    viewport(0, 0);
    rs(D3DRS_FOGVERTEXMODE, D3DFOG_LINEAR);
    rs(D3DRS_FOGSTART, fbits(2.0f));
    rs(D3DRS_FOGEND, fbits(8.0f));
    floor_plane();

    viewport(64, 0);
    rs(D3DRS_FOGVERTEXMODE, D3DFOG_EXP);
    rs(D3DRS_FOGDENSITY, fbits(0.2f));
    floor_plane();

    viewport(0, 64);
    rs(D3DRS_FOGVERTEXMODE, D3DFOG_NONE);
    rs(D3DRS_FOGTABLEMODE, D3DFOG_EXP2);
    rs(D3DRS_FOGDENSITY, fbits(0.15f));
    floor_plane();

    /* Pre-transformed: table fog on z (0 at the top edge, 1 at the bottom). */
    viewport(0, 0);
    {
        D3DVIEWPORT9 vp = {0, 0, 128, 128, 0.0f, 1.0f};
        CHECK(IDirect3DDevice9_SetViewport(dev, &vp));
    }
    rs(D3DRS_FOGTABLEMODE, D3DFOG_LINEAR);
    rs(D3DRS_FOGSTART, fbits(0.2f));
    rs(D3DRS_FOGEND, fbits(0.9f));
    CHECK(IDirect3DDevice9_SetFVF(dev, D3DFVF_XYZRHW | D3DFVF_DIFFUSE));
    CHECK(IDirect3DDevice9_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, 2, q, sizeof(struct rhw_vertex)));
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, "ff_fog.ppm");

    CHECK(IDirect3DDevice9_Present(dev, NULL, NULL, NULL, NULL));
    IDirect3DDevice9_Release(dev);
    printf("fixed_function_fog: done\n");
    return 0;
}
