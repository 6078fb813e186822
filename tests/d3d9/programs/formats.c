/* Texture formats as pixel shaders read them: a 4x4 texture of each of A8R8G8B8,
 * X8R8G8B8 (alpha reads 1), A8B8G8R8, R5G6B5, A1R5G5B5 and L8 (luminance in r, g, b;
 * alpha 1), point sampled, each drawn twice into a 192x64 target: row 0 shows the texel's
 * colour, row 1 its alpha as grey. Texel bytes come from one generator for every format.
 * A format the device refuses is reported and its cells stay the clear colour. Writes
 * formats.ppm. Built with FORMATS_ALPHA (formats_alpha.c) it draws A8 (colour reads 0)
 * and A8L8 instead, into formats_alpha.ppm. */
#include "cells.h"
#include "shader_asm.h"

#ifndef FORMATS_ALPHA
#define FORMATS_ALPHA 0
#endif
#define W 192
#define H 64
#define MAX_FORMATS 6

static const D3DFORMAT format_lists[2][MAX_FORMATS] = {
    {D3DFMT_A8R8G8B8, D3DFMT_X8R8G8B8, D3DFMT_A8B8G8R8, D3DFMT_R5G6B5, D3DFMT_A1R5G5B5, D3DFMT_L8},
    {D3DFMT_A8, D3DFMT_A8L8},
};
static const UINT bytes_lists[2][MAX_FORMATS] = {{4, 4, 4, 2, 2, 1}, {1, 2}};
static const int format_counts[2] = {6, 2};

int main(void) {
    IDirect3DDevice9 *dev = make_device(W, H, FALSE);
    struct cell_shaders shaders;
    IDirect3DTexture9 *tex[MAX_FORMATS] = {0};
    const D3DFORMAT *formats = format_lists[FORMATS_ALPHA];
    const UINT *bytes_per_texel = bytes_lists[FORMATS_ALPHA];
    const int nformats = format_counts[FORMATS_ALPHA];
    int f, view;
    static const float views[2][2][4] = {{{1, 1, 1, 1}, {0, 0, 0, 0}}, {{0, 0, 0, 0}, {1, 1, 1, 1}}};
    static const D3DCOLOR corners[4] = {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF};

    for (f = 0; f < nformats; f++) {
        D3DLOCKED_RECT lr;
        UINT x, y, b;
        HRESULT hr = IDirect3DDevice9_CreateTexture(dev, 4, 4, 1, 0, formats[f], D3DPOOL_MANAGED, &tex[f], NULL);
        if (FAILED(hr)) {
            printf("formats: format %lu refused (0x%08lx)\n", (unsigned long)formats[f], (unsigned long)hr);
            tex[f] = NULL;
            continue;
        }
        CHECK(IDirect3DTexture9_LockRect(tex[f], 0, &lr, NULL, 0));
        for (y = 0; y < 4; y++) {
            unsigned char *row = (unsigned char *)lr.pBits + (size_t)y * lr.Pitch;
            for (x = 0; x < 4; x++)
                for (b = 0; b < bytes_per_texel[f]; b++)
                    row[x * bytes_per_texel[f] + b] = (unsigned char)(37 * (x + 4 * y) + 91 * b + 23 * f + 11);
        }
        CHECK(IDirect3DTexture9_UnlockRect(tex[f], 0));
    }
    shaders = bind_cell_shaders(dev, cell_vs_texcoord, cell_ps_colour_or_alpha);
    begin_cells(dev);
    for (view = 0; view < 2; view++) {
        CHECK(IDirect3DDevice9_SetPixelShaderConstantF(dev, 0, &views[view][0][0], 2));
        for (f = 0; f < nformats; f++) {
            if (!tex[f])
                continue;
            CHECK(IDirect3DDevice9_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)tex[f]));
            draw_cell(dev, f, view, W, H, corners);
        }
    }
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, FORMATS_ALPHA ? "formats_alpha.ppm" : "formats.ppm");
    for (f = 0; f < nformats; f++)
        if (tex[f])
            IDirect3DTexture9_Release(tex[f]);
    release_cell_shaders(&shaders);
    IDirect3DDevice9_Release(dev);
    printf("formats: done\n");
    return 0;
}
