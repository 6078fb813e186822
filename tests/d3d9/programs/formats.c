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
    IDirect3DVertexDeclaration9 *decl = NULL;
    IDirect3DVertexShader9 *vs = NULL;
    IDirect3DPixelShader9 *ps = NULL;
    IDirect3DTexture9 *tex[MAX_FORMATS] = {0};
    const D3DFORMAT *formats = format_lists[FORMATS_ALPHA];
    const UINT *bytes_per_texel = bytes_lists[FORMATS_ALPHA];
    const int nformats = format_counts[FORMATS_ALPHA];
    int f, view;
    const DWORD vs_tokens[] = {
        VS(2, 0),
        INS(DCL, 2), DCL_USAGE(USAGE_POSITION, 0), DST(V, 0, WALL),
        INS(DCL, 2), DCL_USAGE(USAGE_TEXCOORD, 0), DST(V, 1, WALL),
        INS(M4X4, 3), DST(RASTOUT, 0, WALL), SRC(V, 0, XYZW), SRC(C, 0, XYZW),
        INS(MOV, 2), DST(TEXCRDOUT, 0, WALL), SRC(V, 1, XYZW),
        END,
    };
    /* oC0 = texel * c0 + texel.a * c1 */
    const DWORD ps_tokens[] = {
        PS(2, 0),
        INS(DCL, 2), 0x80000000u, DST(T, 0, WXY),
        INS(DCL, 2), DCL_SAMPLER_2D, DST(S, 0, WALL),
        INS(TEX, 3), DST(R, 0, WALL), SRC(T, 0, XYZW), SRC(S, 0, XYZW),
        INS(MUL, 3), DST(R, 1, WALL), SRC(R, 0, XYZW), SRC(C, 0, XYZW),
        INS(MAD, 4), DST(R, 1, WALL), SRC(R, 0, WWWW), SRC(C, 1, XYZW), SRC(R, 1, XYZW),
        INS(MOV, 2), DST(COLOROUT, 0, WALL), SRC(R, 1, XYZW),
        END,
    };
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
    CHECK(IDirect3DDevice9_CreateVertexDeclaration(dev, cell_elements, &decl));
    CHECK(IDirect3DDevice9_CreateVertexShader(dev, vs_tokens, &vs));
    CHECK(IDirect3DDevice9_CreatePixelShader(dev, ps_tokens, &ps));
    plain_state(dev);
    point_clamp(dev, 0);
    CHECK(IDirect3DDevice9_SetVertexDeclaration(dev, decl));
    CHECK(IDirect3DDevice9_SetVertexShader(dev, vs));
    CHECK(IDirect3DDevice9_SetPixelShader(dev, ps));
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0, 0, 40), 1.0f, 0));
    CHECK(IDirect3DDevice9_BeginScene(dev));
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
    IDirect3DPixelShader9_Release(ps);
    IDirect3DVertexShader9_Release(vs);
    IDirect3DVertexDeclaration9_Release(decl);
    IDirect3DDevice9_Release(dev);
    printf("formats: done\n");
    return 0;
}
