/* DXT1/DXT3/DXT5 textures (8x8, 2x2 blocks, MANAGED, written through LockRect), drawn into
 * 32x32 cells of a 128x64 target with a ps_2_0 that shows either the texel's colour or its
 * alpha as grey: row 0 DXT1 colour, DXT1 alpha, DXT3 colour, DXT3 alpha; row 1 DXT5
 * colour, DXT5 alpha, DXT1 colour with linear filtering, DXT5 alpha with linear filtering.
 * The blocks cover DXT1's 4-colour mode and its 3-colour mode (1/2 blend, transparent
 * black), DXT3's explicit 4-bit alpha and DXT5's 8-value and 6-value alpha modes. Colour
 * indices 2 and 3 of 4-colour blocks (the 1/3 and 2/3 blends) are not used: llvmpipe, the
 * reference, decodes them one off on rising channels. Writes dxt.ppm. */
#include "cells.h"
#include "shader_asm.h"

#define W 128
#define H 64

/* Colour half of a block: c0, c1 (RGB565) and the 2-bit index of each texel. */
static void colour_block(unsigned char *b, WORD c0, WORD c1, const int idx[16]) {
    DWORD bits = 0;
    int i;
    for (i = 0; i < 16; i++)
        bits |= (DWORD)(idx[i] & 3) << (2 * i);
    b[0] = c0 & 0xFF, b[1] = c0 >> 8, b[2] = c1 & 0xFF, b[3] = c1 >> 8;
    for (i = 0; i < 4; i++)
        b[4 + i] = (bits >> (8 * i)) & 0xFF;
}

/* Index patterns: checker of 0/1, and all four codes. */
static void checker(int idx[16]) {
    int i;
    for (i = 0; i < 16; i++)
        idx[i] = ((i % 4) + (i / 4)) & 1;
}

static void all_codes(int idx[16]) {
    int i;
    for (i = 0; i < 16; i++)
        idx[i] = ((i % 4) + 2 * (i / 4)) & 3;
}

/* 8x8 texture of format fmt with 4 blocks from fill(block number, bytes). */
static IDirect3DTexture9 *make_dxt(IDirect3DDevice9 *dev, D3DFORMAT fmt, int block_bytes,
                                   void (*fill)(int, unsigned char *)) {
    IDirect3DTexture9 *tex = NULL;
    D3DLOCKED_RECT lr;
    int bx, by;
    CHECK(IDirect3DDevice9_CreateTexture(dev, 8, 8, 1, 0, fmt, D3DPOOL_MANAGED, &tex, NULL));
    CHECK(IDirect3DTexture9_LockRect(tex, 0, &lr, NULL, 0));
    for (by = 0; by < 2; by++)
        for (bx = 0; bx < 2; bx++)
            fill(by * 2 + bx, (unsigned char *)lr.pBits + (size_t)by * lr.Pitch + bx * block_bytes);
    CHECK(IDirect3DTexture9_UnlockRect(tex, 0));
    return tex;
}

static void fill_dxt1(int n, unsigned char *b) {
    int idx[16];
    switch (n) {
    case 0: /* 4-colour mode (c0 > c1), red/blue checker */
        checker(idx);
        colour_block(b, 0xF800, 0x001F, idx);
        break;
    case 1: /* 3-colour mode (c0 <= c1): c0, c1, their exact half, transparent black */
        all_codes(idx);
        colour_block(b, (8 << 11) | (16 << 5) | 4, (24 << 11) | (48 << 5) | 28, idx);
        break;
    case 2: /* 4-colour, white/black */
        checker(idx);
        idx[5] = idx[6] = 1;
        colour_block(b, 0xFFFF, 0x0000, idx);
        break;
    default: /* c0 == c1 (3-colour mode): c0 and transparent black */
        checker(idx);
        for (n = 0; n < 16; n++)
            idx[n] *= 3;
        colour_block(b, 0x07E0, 0x07E0, idx);
        break;
    }
}

static void fill_dxt3(int n, unsigned char *b) {
    int idx[16], i;
    for (i = 0; i < 8; i++) /* alpha nibbles, texel 2i low */
        b[i] = (unsigned char)(((2 * i + n) & 15) | (((2 * i + 1 + 3 * n) & 15) << 4));
    checker(idx);
    colour_block(b + 8, n & 1 ? 0x07FF : 0xFFE0, n & 2 ? 0x001F : 0x8010, idx);
}

static void fill_dxt5(int n, unsigned char *b) {
    static const unsigned char ends[4][2] = {{255, 0}, {40, 200}, {128, 128}, {0, 255}};
    unsigned long long bits = 0;
    int idx[16], i;
    b[0] = ends[n][0], b[1] = ends[n][1];
    for (i = 0; i < 16; i++)
        bits |= (unsigned long long)((i + n) & 7) << (3 * i);
    for (i = 0; i < 6; i++)
        b[2 + i] = (bits >> (8 * i)) & 0xFF;
    checker(idx);
    colour_block(b + 8, n & 1 ? 0xF81F : 0xFFFF, n & 2 ? 0x0400 : 0x0010, idx);
}

int main(void) {
    IDirect3DDevice9 *dev = make_device(W, H, FALSE);
    struct cell_shaders shaders;
    IDirect3DTexture9 *tex[3];
    int i;
    /* Per cell: texture, alpha view, linear filtering. */
    static const int cell_tex[8] = {0, 0, 1, 1, 2, 2, 0, 2};
    static const int cell_alpha[8] = {0, 1, 0, 1, 0, 1, 0, 1};
    static const int cell_linear[8] = {0, 0, 0, 0, 0, 0, 1, 1};
    static const D3DCOLOR corners[4] = {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF};
    static const float colour_view[2][4] = {{1, 1, 1, 1}, {0, 0, 0, 0}};
    static const float alpha_view[2][4] = {{0, 0, 0, 0}, {1, 1, 1, 1}};

    tex[0] = make_dxt(dev, D3DFMT_DXT1, 8, fill_dxt1);
    tex[1] = make_dxt(dev, D3DFMT_DXT3, 16, fill_dxt3);
    tex[2] = make_dxt(dev, D3DFMT_DXT5, 16, fill_dxt5);
    shaders = bind_cell_shaders(dev, cell_vs_texcoord, cell_ps_colour_or_alpha);
    begin_cells(dev);
    for (i = 0; i < 8; i++) {
        DWORD filter = cell_linear[i] ? D3DTEXF_LINEAR : D3DTEXF_POINT;
        CHECK(IDirect3DDevice9_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)tex[cell_tex[i]]));
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MAGFILTER, filter));
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MINFILTER, filter));
        CHECK(IDirect3DDevice9_SetPixelShaderConstantF(dev, 0, cell_alpha[i] ? &alpha_view[0][0] : &colour_view[0][0], 2));
        draw_cell(dev, i % 4, i / 4, W, H, corners);
    }
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, "dxt.ppm");
    for (i = 0; i < 3; i++)
        IDirect3DTexture9_Release(tex[i]);
    release_cell_shaders(&shaders);
    IDirect3DDevice9_Release(dev);
    printf("dxt: done\n");
    return 0;
}
