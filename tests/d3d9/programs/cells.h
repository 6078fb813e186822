/* Shared helpers of the shader programs: a target divided into 32x32 cells, each drawn as one
 * quad by the caller's shaders, and small MANAGED textures filled through LockRect.
 * Vertex layout: position (x, y in [0, 1] across the cell, z, w = 1), texcoord (u, v) equal
 * to (x, y), and a D3DCOLOR. Vertex shaders map position to the cell with c0..c3 (row-major
 * rows of a matrix, dp4/m4x4), which cell_matrix fills for D3D9's half-pixel rule. */
#ifndef D3D9_PROGRAMS_CELLS_H
#define D3D9_PROGRAMS_CELLS_H

#include "common.h"
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

#endif
