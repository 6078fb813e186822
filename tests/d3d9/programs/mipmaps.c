/* Mipmapped sampling: a 64x64 A8R8G8B8 texture with all 7 levels (each level a distinct
 * gradient: red across, green down, blue = 36 * level), drawn into eight 32x32 cells of a
 * 128x64 target with texture coordinates scaled per cell so the level of detail is not an
 * integer: mip filter none, point and linear, MAXMIPLEVEL 3 and 1, anisotropic
 * (MAXANISOTROPY 4) on coordinates stretched 8:1, ps_2_0 texldb (bias +1), and a linear
 * magnified level 0. Coordinates never sit on a texel edge of the levels point sampling
 * reads. Writes mipmaps.ppm. lod_bias.c builds it with MIPMAPS_LOD_BIAS: the same draws
 * with D3DSAMP_MIPMAPLODBIAS -1 and +1 in the cells, written to lod_bias.ppm. */
#include "cells.h"
#include "shader_asm.h"

#define W 128
#define H 64
#define SIZE 64
#define LEVELS 7

struct cell_setup {
    float scale_u, scale_v, bias_texldb;
    DWORD min, mag, mip, max_mip;
    float lod_bias;
    DWORD aniso;
};

int main(void) {
    IDirect3DDevice9 *dev = make_device(W, H, FALSE);
    IDirect3DVertexDeclaration9 *decl = NULL;
    IDirect3DVertexShader9 *vs = NULL;
    IDirect3DPixelShader9 *ps = NULL, *ps_bias = NULL;
    IDirect3DTexture9 *tex = NULL;
    D3DCAPS9 caps;
    int i;
    /* oT0 = v1 * c4 (the cell's coordinate scale); c5.x = the texldb bias in oT0.w */
    const DWORD vs_tokens[] = {
        VS(2, 0),
        INS(DCL, 2), DCL_USAGE(USAGE_POSITION, 0), DST(V, 0, WALL),
        INS(DCL, 2), DCL_USAGE(USAGE_TEXCOORD, 0), DST(V, 1, WALL),
        INS(M4X4, 3), DST(RASTOUT, 0, WALL), SRC(V, 0, XYZW), SRC(C, 0, XYZW),
        INS(MUL, 3), DST(TEXCRDOUT, 0, WXY), SRC(V, 1, XYZW), SRC(C, 4, XYZW),
        INS(MOV, 2), DST(TEXCRDOUT, 0, WZ), SRC(V, 1, ZZZZ),
        INS(MOV, 2), DST(TEXCRDOUT, 0, WW), SRC(C, 5, XXXX),
        END,
    };
    const DWORD ps_tokens[] = {
        PS(2, 0),
        INS(DCL, 2), 0x80000000u, DST(T, 0, WALL),
        INS(DCL, 2), DCL_SAMPLER_2D, DST(S, 0, WALL),
        INS(TEX, 3), DST(R, 0, WALL), SRC(T, 0, XYZW), SRC(S, 0, XYZW),
        INS(MOV, 2), DST(COLOROUT, 0, WALL), SRC(R, 0, XYZW),
        END,
    };
    const DWORD ps_bias_tokens[] = {
        PS(2, 0),
        INS(DCL, 2), 0x80000000u, DST(T, 0, WALL),
        INS(DCL, 2), DCL_SAMPLER_2D, DST(S, 0, WALL),
        INS(TEX, 3) | TEXLD_BIAS, DST(R, 0, WALL), SRC(T, 0, XYZW), SRC(S, 0, XYZW),
        INS(MOV, 2), DST(COLOROUT, 0, WALL), SRC(R, 0, XYZW),
        END,
    };
    /* Scale 2.5: 5 level-0 texels per pixel, LOD log2(5) = 2.32. */
#ifndef MIPMAPS_LOD_BIAS
#define MIPMAPS_LOD_BIAS 0
#endif
    static const struct cell_setup cells[8] = {
        {2.5f, 2.5f, 0, D3DTEXF_POINT, D3DTEXF_POINT, D3DTEXF_NONE, 0, 0, 1},
        {2.5f, 2.5f, 0, D3DTEXF_POINT, D3DTEXF_POINT, D3DTEXF_POINT, 0, 0, 1},
        {2.5f, 2.5f, 0, D3DTEXF_LINEAR, D3DTEXF_LINEAR, D3DTEXF_LINEAR, 0, 0, 1},
        {2.5f, 2.5f, 0, D3DTEXF_LINEAR, D3DTEXF_LINEAR, D3DTEXF_LINEAR, 1, 0, 1},
        {2.5f, 2.5f, 0, D3DTEXF_POINT, D3DTEXF_POINT, D3DTEXF_POINT, 3, 0, 1},
        {4.0f, 0.5f, 0, D3DTEXF_ANISOTROPIC, D3DTEXF_LINEAR, D3DTEXF_LINEAR, 0, 0, 4},
        {1.25f, 1.25f, 1.0f, D3DTEXF_LINEAR, D3DTEXF_LINEAR, D3DTEXF_LINEAR, 0, 0, 1},
        {0.3f, 0.3f, 0, D3DTEXF_LINEAR, D3DTEXF_LINEAR, D3DTEXF_POINT, 0, 0, 1},
    };
    static const D3DCOLOR corners[4] = {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF};

    CHECK(IDirect3DDevice9_GetDeviceCaps(dev, &caps));
    if (caps.PixelShaderVersion < D3DPS_VERSION(2, 0) || !(caps.TextureCaps & D3DPTEXTURECAPS_MIPMAP)) {
        printf("mipmaps: no ps_2_0 or no mipmaps: nothing drawn\n");
        return 0;
    }
    tex = make_gradient_mips(dev, SIZE, LEVELS);
    if (IDirect3DTexture9_GetLevelCount(tex) != LEVELS) {
        fprintf(stderr, "mipmaps: %lu levels, not %d\n", (unsigned long)IDirect3DTexture9_GetLevelCount(tex), LEVELS);
        return 1;
    }
    CHECK(IDirect3DDevice9_CreateVertexDeclaration(dev, cell_elements, &decl));
    CHECK(IDirect3DDevice9_CreateVertexShader(dev, vs_tokens, &vs));
    CHECK(IDirect3DDevice9_CreatePixelShader(dev, ps_tokens, &ps));
    CHECK(IDirect3DDevice9_CreatePixelShader(dev, ps_bias_tokens, &ps_bias));
    plain_state(dev);
    CHECK(IDirect3DDevice9_SetVertexDeclaration(dev, decl));
    CHECK(IDirect3DDevice9_SetVertexShader(dev, vs));
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)tex));
    CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_ADDRESSU, D3DTADDRESS_WRAP));
    CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_ADDRESSV, D3DTADDRESS_WRAP));
    begin_cells(dev);
    for (i = 0; i < 8; i++) {
        struct cell_setup c_ = cells[i], *c = &c_;
        if (MIPMAPS_LOD_BIAS) c->lod_bias = i % 2 ? 1.0f : -1.0f;
        float scale[4] = {c->scale_u, c->scale_v, 1, 1}, bias[4] = {c->bias_texldb, 0, 0, 0};
        CHECK(IDirect3DDevice9_SetVertexShaderConstantF(dev, 4, scale, 1));
        CHECK(IDirect3DDevice9_SetVertexShaderConstantF(dev, 5, bias, 1));
        CHECK(IDirect3DDevice9_SetPixelShader(dev, c->bias_texldb != 0 ? ps_bias : ps));
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MINFILTER, c->min));
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MAGFILTER, c->mag));
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MIPFILTER, c->mip));
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MAXMIPLEVEL, c->max_mip));
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MIPMAPLODBIAS, fbits(c->lod_bias)));
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MAXANISOTROPY, c->aniso));
        draw_cell(dev, i % 4, i / 4, W, H, corners);
    }
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, MIPMAPS_LOD_BIAS ? "lod_bias.ppm" : "mipmaps.ppm");
    IDirect3DPixelShader9_Release(ps_bias);
    IDirect3DPixelShader9_Release(ps);
    IDirect3DTexture9_Release(tex);
    IDirect3DVertexShader9_Release(vs);
    IDirect3DVertexDeclaration9_Release(decl);
    IDirect3DDevice9_Release(dev);
    printf("mipmaps: done\n");
    return 0;
}
