/* sRGB: a 4x4 A8R8G8B8 texture point-sampled with D3DSAMP_SRGBTEXTURE off and on, and a
 * constant colour plus the texel written with D3DRS_SRGBWRITEENABLE off and on, one
 * 32x32 cell each of a 128x32 X8R8G8B8 back buffer (no blending: both conversions are
 * per texel / per pixel, with no filtering or blending between them). Writes srgb.ppm. */
#include "cells.h"
#include "shader_asm.h"

#define W 128
#define H 32

int main(void) {
    IDirect3DDevice9 *dev = make_device(W, H, FALSE);
    IDirect3D9 *d3d = NULL;
    struct cell_shaders shaders;
    IDirect3DTexture9 *tex;
    int i;
    /* oC0 = texel * c0 + c1 */
    const DWORD ps_tokens[] = {
        PS(2, 0),
        INS(DCL, 2), 0x80000000u, DST(T, 0, WXY),
        INS(DCL, 2), DCL_SAMPLER_2D, DST(S, 0, WALL),
        INS(TEX, 3), DST(R, 0, WALL), SRC(T, 0, XYZW), SRC(S, 0, XYZW),
        INS(MAD, 4), DST(R, 0, WALL), SRC(R, 0, XYZW), SRC(C, 0, XYZW), SRC(C, 1, XYZW),
        INS(MOV, 2), DST(COLOROUT, 0, WALL), SRC(R, 0, XYZW),
        END,
    };
    static const DWORD texels[16] = {
        0xFF102030, 0xFF405060, 0xFF708090, 0xFFA0B0C0, 0xFFD0E0F0, 0xFF0A1A2A, 0xFF3A4A5A, 0xFF6A7A8A,
        0xFF9AAABA, 0xFFCADAEA, 0xFF050F19, 0xFF23374B, 0xFF5F7387, 0xFF9BAFC3, 0xFFD7EBFF, 0xFF808080,
    };
    /* Per cell: SRGBTEXTURE, SRGBWRITEENABLE, texel scale, constant added. */
    static const struct { DWORD read, write; float scale, add[4]; } cells[4] = {
        {FALSE, FALSE, 1.0f, {0, 0, 0, 0}},
        {TRUE, FALSE, 1.0f, {0, 0, 0, 0}},
        {FALSE, TRUE, 0.5f, {0.1f, 0.2f, 0.05f, 0}},
        {TRUE, TRUE, 1.0f, {0, 0, 0, 0}},
    };
    static const D3DCOLOR corners[4] = {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF};

    IDirect3DDevice9_GetDirect3D(dev, &d3d);
    if (FAILED(IDirect3D9_CheckDeviceFormat(d3d, 0, D3DDEVTYPE_HAL, D3DFMT_X8R8G8B8, D3DUSAGE_QUERY_SRGBREAD,
                                            D3DRTYPE_TEXTURE, D3DFMT_A8R8G8B8)) ||
        FAILED(IDirect3D9_CheckDeviceFormat(d3d, 0, D3DDEVTYPE_HAL, D3DFMT_X8R8G8B8, D3DUSAGE_QUERY_SRGBWRITE,
                                            D3DRTYPE_SURFACE, D3DFMT_X8R8G8B8)))
        printf("srgb: the device does not report sRGB read/write for A8R8G8B8/X8R8G8B8; drawing anyway\n");
    IDirect3D9_Release(d3d);
    tex = make_texture(dev, 4, texels);
    shaders = bind_cell_shaders(dev, cell_vs_texcoord, ps_tokens);
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)tex));
    begin_cells(dev);
    for (i = 0; i < 4; i++) {
        float scale[4] = {cells[i].scale, cells[i].scale, cells[i].scale, 1};
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_SRGBTEXTURE, cells[i].read));
        CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_SRGBWRITEENABLE, cells[i].write));
        CHECK(IDirect3DDevice9_SetPixelShaderConstantF(dev, 0, scale, 1));
        CHECK(IDirect3DDevice9_SetPixelShaderConstantF(dev, 1, cells[i].add, 1));
        draw_cell(dev, i, 0, W, H, corners);
    }
    CHECK(IDirect3DDevice9_EndScene(dev));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_SRGBWRITEENABLE, FALSE));
    save_back_buffer(dev, "srgb.ppm");
    IDirect3DTexture9_Release(tex);
    release_cell_shaders(&shaders);
    IDirect3DDevice9_Release(dev);
    printf("srgb: done\n");
    return 0;
}
