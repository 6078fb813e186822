/* Shared helpers of the shader programs: a target divided into 32x32 cells, each drawn as one
 * quad by the caller's shaders, and small MANAGED textures filled through LockRect.
 * Vertex layout: position (x, y in [0, 1] across the cell, z, w = 1), texcoord (u, v) equal
 * to (x, y), and a D3DCOLOR. Vertex shaders map position to the cell with c0..c3 (row-major
 * rows of a matrix, dp4/m4x4), which cell_matrix fills for D3D9's half-pixel rule. */
#ifndef D3D9_PROGRAMS_CELLS_H
#define D3D9_PROGRAMS_CELLS_H

#include "common.h"
#include "shader_asm.h"
#include <string.h>

#define CELL 32

struct cell_vertex {
    float x, y, z, w, u, v;
    D3DCOLOR color;
};

static const D3DVERTEXELEMENT9 cell_elements[] = {
    {0, 0, D3DDECLTYPE_FLOAT4, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_POSITION, 0},
    {0, 16, D3DDECLTYPE_FLOAT2, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_TEXCOORD, 0},
    {0, 24, D3DDECLTYPE_D3DCOLOR, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_COLOR, 0},
    D3DDECL_END(),
};

/* Rows of the matrix taking the unit square to cell (col, row) of a w x h target in clip
 * space, D3D9 pixel centres on integers (so the quad's edges lie on pixel edges). */
static inline void cell_matrix(float m[4][4], int col, int row, int w, int h) {
    float sx = 2.0f * CELL / w, sy = -2.0f * CELL / h;
    float tx = (col * CELL - 0.5f) * 2.0f / w - 1.0f, ty = 1.0f - (row * CELL - 0.5f) * 2.0f / h;
    float rows[4][4] = {{sx, 0, 0, tx}, {0, sy, 0, ty}, {0, 0, 1, 0}, {0, 0, 0, 1}};
    memcpy(m, rows, sizeof(rows));
}

/* Draws the unit quad into cell (col, row) with the bound shaders (c0..c3 set here), corner
 * colours top-left, top-right, bottom-left, bottom-right. */
static inline void draw_cell(IDirect3DDevice9 *dev, int col, int row, int w, int h, const D3DCOLOR corners[4]) {
    float m[4][4];
    struct cell_vertex quad[4] = {
        {0, 0, 0.5f, 1, 0, 0, corners[0]},
        {1, 0, 0.5f, 1, 1, 0, corners[1]},
        {0, 1, 0.5f, 1, 0, 1, corners[2]},
        {1, 1, 0.5f, 1, 1, 1, corners[3]},
    };
    cell_matrix(m, col, row, w, h);
    CHECK(IDirect3DDevice9_SetVertexShaderConstantF(dev, 0, &m[0][0], 4));
    CHECK(IDirect3DDevice9_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, 2, quad, sizeof(quad[0])));
}

/* A size x size A8R8G8B8 MANAGED texture with one level from `texels` (row-major ARGB). */
static inline IDirect3DTexture9 *make_texture(IDirect3DDevice9 *dev, UINT size, const DWORD *texels) {
    IDirect3DTexture9 *tex = NULL;
    D3DLOCKED_RECT lr;
    UINT y;
    CHECK(IDirect3DDevice9_CreateTexture(dev, size, size, 1, 0, D3DFMT_A8R8G8B8, D3DPOOL_MANAGED, &tex, NULL));
    CHECK(IDirect3DTexture9_LockRect(tex, 0, &lr, NULL, 0));
    for (y = 0; y < size; y++)
        memcpy((char *)lr.pBits + (size_t)y * lr.Pitch, texels + (size_t)y * size, size * 4);
    CHECK(IDirect3DTexture9_UnlockRect(tex, 0));
    return tex;
}

/* Point sampling, clamped, on sampler `s`. */
static inline void point_clamp(IDirect3DDevice9 *dev, DWORD s) {
    CHECK(IDirect3DDevice9_SetSamplerState(dev, s, D3DSAMP_MAGFILTER, D3DTEXF_POINT));
    CHECK(IDirect3DDevice9_SetSamplerState(dev, s, D3DSAMP_MINFILTER, D3DTEXF_POINT));
    CHECK(IDirect3DDevice9_SetSamplerState(dev, s, D3DSAMP_MIPFILTER, D3DTEXF_NONE));
    CHECK(IDirect3DDevice9_SetSamplerState(dev, s, D3DSAMP_ADDRESSU, D3DTADDRESS_CLAMP));
    CHECK(IDirect3DDevice9_SetSamplerState(dev, s, D3DSAMP_ADDRESSV, D3DTADDRESS_CLAMP));
}

/* Common render state of the shader programs: no culling, no depth, no lighting. */
static inline void plain_state(IDirect3DDevice9 *dev) {
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_CULLMODE, D3DCULL_NONE));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_ZENABLE, D3DZB_FALSE));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_LIGHTING, FALSE));
}

/* vs_2_0 of the textured cells: position through c0..c3 (cell_matrix), texcoord 0 on. */
static const DWORD cell_vs_texcoord[] = {
    VS(2, 0),
    INS(DCL, 2), DCL_USAGE(USAGE_POSITION, 0), DST(V, 0, WALL),
    INS(DCL, 2), DCL_USAGE(USAGE_TEXCOORD, 0), DST(V, 1, WALL),
    INS(M4X4, 3), DST(RASTOUT, 0, WALL), SRC(V, 0, XYZW), SRC(C, 0, XYZW),
    INS(MOV, 2), DST(TEXCRDOUT, 0, WALL), SRC(V, 1, XYZW),
    END,
};

/* ps_2_0 showing a texel's colour or its alpha: oC0 = texel * c0 + texel.a * c1
 * (c0 = 1, c1 = 0: colour; c0 = 0, c1 = 1: alpha as grey). */
static const DWORD cell_ps_colour_or_alpha[] = {
    PS(2, 0),
    INS(DCL, 2), 0x80000000u, DST(T, 0, WXY),
    INS(DCL, 2), DCL_SAMPLER_2D, DST(S, 0, WALL),
    INS(TEX, 3), DST(R, 0, WALL), SRC(T, 0, XYZW), SRC(S, 0, XYZW),
    INS(MUL, 3), DST(R, 1, WALL), SRC(R, 0, XYZW), SRC(C, 0, XYZW),
    INS(MAD, 4), DST(R, 1, WALL), SRC(R, 0, WWWW), SRC(C, 1, XYZW), SRC(R, 1, XYZW),
    INS(MOV, 2), DST(COLOROUT, 0, WALL), SRC(R, 1, XYZW),
    END,
};

/* The declaration and shaders one cell program draws with. */
struct cell_shaders {
    IDirect3DVertexDeclaration9 *decl;
    IDirect3DVertexShader9 *vs;
    IDirect3DPixelShader9 *ps;
};

/* Creates the cell declaration and the two shaders and binds them, with plain_state and
 * point sampling on sampler 0. */
static inline struct cell_shaders bind_cell_shaders(IDirect3DDevice9 *dev, const DWORD *vs_tokens,
                                                    const DWORD *ps_tokens) {
    struct cell_shaders s = {0};
    CHECK(IDirect3DDevice9_CreateVertexDeclaration(dev, cell_elements, &s.decl));
    CHECK(IDirect3DDevice9_CreateVertexShader(dev, vs_tokens, &s.vs));
    CHECK(IDirect3DDevice9_CreatePixelShader(dev, ps_tokens, &s.ps));
    plain_state(dev);
    point_clamp(dev, 0);
    CHECK(IDirect3DDevice9_SetVertexDeclaration(dev, s.decl));
    CHECK(IDirect3DDevice9_SetVertexShader(dev, s.vs));
    CHECK(IDirect3DDevice9_SetPixelShader(dev, s.ps));
    return s;
}

static inline void release_cell_shaders(struct cell_shaders *s) {
    IDirect3DPixelShader9_Release(s->ps);
    IDirect3DVertexShader9_Release(s->vs);
    IDirect3DVertexDeclaration9_Release(s->decl);
}

/* Clears the target to the cell programs' dark blue and begins the scene. */
static inline void begin_cells(IDirect3DDevice9 *dev) {
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0, 0, 40), 1.0f, 0));
    CHECK(IDirect3DDevice9_BeginScene(dev));
}

/* A size x size A8R8G8B8 MANAGED texture with `levels` levels, each a red (x) / green (y)
 * gradient with blue 36 * level, so the level sampled shows in the picture. */
static inline IDirect3DTexture9 *make_gradient_mips(IDirect3DDevice9 *dev, UINT size, UINT levels) {
    IDirect3DTexture9 *tex = NULL;
    UINT level, x, y;
    CHECK(IDirect3DDevice9_CreateTexture(dev, size, size, levels, 0, D3DFMT_A8R8G8B8, D3DPOOL_MANAGED, &tex, NULL));
    for (level = 0; level < levels && level < IDirect3DTexture9_GetLevelCount(tex); level++) {
        UINT n = size >> level;
        D3DLOCKED_RECT lr;
        CHECK(IDirect3DTexture9_LockRect(tex, level, &lr, NULL, 0));
        for (y = 0; y < n; y++) {
            DWORD *row = (DWORD *)((char *)lr.pBits + (size_t)y * lr.Pitch);
            for (x = 0; x < n; x++)
                row[x] = 0xFF000000u | ((x * 256 / n) << 16) | ((y * 256 / n) << 8) | (36 * level);
        }
        CHECK(IDirect3DTexture9_UnlockRect(tex, level));
    }
    return tex;
}

#endif
