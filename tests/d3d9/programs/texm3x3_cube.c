/* ps_1_1 environment mapping into a cube texture: texm3x3pad/texm3x3pad/texm3x3tex (the
 * normal from a 2D normal map, _bx2, through the 3x3 matrix in t1-t3) and texm3x3vspec
 * (the normal's reflection of the eye vector carried in t1-t3's w). The sampler type of
 * ps_1_x is the bound texture's: stage 3 holds a cube. Normals are chosen so every lookup
 * has one major axis and stays off face texel edges (no ties). Cells: texm3x3tex with the
 * identity, with the axes rotated (x->y->z->x), texm3x3vspec with eye (0, 0, 1) and with
 * eye (0, 1, 0). Writes texm3x3_cube.ppm. */
#include "cells.h"

#define W (4 * CELL)
#define H CELL
#define TEXM3X3VSPEC 0x4D

static DWORD cube_texel(UINT face, UINT x, UINT y) {
    return 0xFF000000u | ((DWORD)(x * 60 + 20) << 16) | ((DWORD)(y * 60 + 20) << 8) | (DWORD)(face * 40 + 30);
}

int main(void) {
    IDirect3DDevice9 *dev = make_device(W, H, FALSE);
    IDirect3DVertexDeclaration9 *decl = NULL;
    IDirect3DVertexShader9 *vs = NULL;
    IDirect3DPixelShader9 *ps[2] = {NULL, NULL};
    IDirect3DCubeTexture9 *cube = NULL;
    IDirect3DTexture9 *normal_map;
    D3DCAPS9 caps;
    D3DLOCKED_RECT lr;
    DWORD normals[16];
    UINT face, x, y, i;
    int cell;
    /* oT0 = uv; oT1-oT3 = c4-c6 (matrix rows, eye vector in w) */
    const DWORD vs_tokens[] = {
        VS(1, 1),
        INS1(DCL), DCL_USAGE(USAGE_POSITION, 0), DST(V, 0, WALL),
        INS1(DCL), DCL_USAGE(USAGE_TEXCOORD, 0), DST(V, 1, WALL),
        INS1(M4X4), DST(RASTOUT, 0, WALL), SRC(V, 0, XYZW), SRC(C, 0, XYZW),
        INS1(MOV), DST(TEXCRDOUT, 0, WALL), SRC(V, 1, XYZW),
        INS1(MOV), DST(TEXCRDOUT, 1, WALL), SRC(C, 4, XYZW),
        INS1(MOV), DST(TEXCRDOUT, 2, WALL), SRC(C, 5, XYZW),
        INS1(MOV), DST(TEXCRDOUT, 3, WALL), SRC(C, 6, XYZW),
        END,
    };
    const DWORD tex_tokens[] = {
        PS(1, 1), INS1(TEX), DST(T, 0, WALL),
        INS1(TEXM3X3PAD), DST(T, 1, WALL), SRC(T, 0, XYZW) | BX2,
        INS1(TEXM3X3PAD), DST(T, 2, WALL), SRC(T, 0, XYZW) | BX2,
        INS1(TEXM3X3TEX), DST(T, 3, WALL), SRC(T, 0, XYZW) | BX2,
        INS1(MOV), DST(R, 0, WALL), SRC(T, 3, XYZW), END,
    };
    const DWORD vspec_tokens[] = {
        PS(1, 1), INS1(TEX), DST(T, 0, WALL),
        INS1(TEXM3X3PAD), DST(T, 1, WALL), SRC(T, 0, XYZW) | BX2,
        INS1(TEXM3X3PAD), DST(T, 2, WALL), SRC(T, 0, XYZW) | BX2,
        INS1(TEXM3X3VSPEC), DST(T, 3, WALL), SRC(T, 0, XYZW) | BX2,
        INS1(MOV), DST(R, 0, WALL), SRC(T, 3, XYZW), END,
    };
    /* Matrix rows per cell; w of the three rows = the eye vector (vspec). */
    static const float rows[4][3][4] = {
        {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}},
        {{0, 0, 1, 0}, {1, 0, 0, 0}, {0, 1, 0, 0}},
        {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 1}},
        {{1, 0, 0, 0}, {0, 1, 0, 1}, {0, 0, 1, 0}},
    };
    /* Major component 0xF8 (0.945) or 0x08 (-0.937); minors off the ratios 0 and 0.5. */
    static const BYTE minors[4] = {0x60, 0xB0, 0x30, 0xC8};
    static const D3DCOLOR white[4] = {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF};

    CHECK(IDirect3DDevice9_GetDeviceCaps(dev, &caps));
    if (!(caps.TextureCaps & D3DPTEXTURECAPS_CUBEMAP)) {
        fprintf(stderr, "texm3x3_cube: no D3DPTEXTURECAPS_CUBEMAP\n");
        return 1;
    }
    for (i = 0; i < 16; i++) {
        BYTE c[3];
        UINT major = i % 3;
        c[major] = (i / 3) % 2 ? 0x08 : 0xF8;
        c[(major + 1) % 3] = minors[i % 4];
        c[(major + 2) % 3] = minors[(i / 4 + 1) % 4];
        normals[i] = 0xFF000000u | ((DWORD)c[0] << 16) | ((DWORD)c[1] << 8) | c[2];
    }
    normal_map = make_texture(dev, 4, normals);
    CHECK(IDirect3DDevice9_CreateCubeTexture(dev, 4, 1, 0, D3DFMT_A8R8G8B8, D3DPOOL_MANAGED, &cube, NULL));
    for (face = 0; face < 6; face++) {
        CHECK(IDirect3DCubeTexture9_LockRect(cube, (D3DCUBEMAP_FACES)face, 0, &lr, NULL, 0));
        for (y = 0; y < 4; y++)
            for (x = 0; x < 4; x++) ((DWORD *)((char *)lr.pBits + (size_t)y * lr.Pitch))[x] = cube_texel(face, x, y);
        CHECK(IDirect3DCubeTexture9_UnlockRect(cube, (D3DCUBEMAP_FACES)face, 0));
    }
    CHECK(IDirect3DDevice9_CreateVertexDeclaration(dev, cell_elements, &decl));
    CHECK(IDirect3DDevice9_CreateVertexShader(dev, vs_tokens, &vs));
    CHECK(IDirect3DDevice9_CreatePixelShader(dev, tex_tokens, &ps[0]));
    CHECK(IDirect3DDevice9_CreatePixelShader(dev, vspec_tokens, &ps[1]));
    plain_state(dev);
    point_clamp(dev, 0);
    point_clamp(dev, 3);
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)normal_map));
    CHECK(IDirect3DDevice9_SetTexture(dev, 3, (IDirect3DBaseTexture9 *)cube));
    CHECK(IDirect3DDevice9_SetVertexDeclaration(dev, decl));
    CHECK(IDirect3DDevice9_SetVertexShader(dev, vs));
    begin_cells(dev);
    for (cell = 0; cell < 4; cell++) {
        CHECK(IDirect3DDevice9_SetPixelShader(dev, ps[cell / 2]));
        CHECK(IDirect3DDevice9_SetVertexShaderConstantF(dev, 4, &rows[cell][0][0], 3));
        draw_cell(dev, cell, 0, W, H, white);
    }
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, "texm3x3_cube.ppm");
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, NULL));
    CHECK(IDirect3DDevice9_SetTexture(dev, 3, NULL));
    IDirect3DCubeTexture9_Release(cube);
    IDirect3DTexture9_Release(normal_map);
    IDirect3DPixelShader9_Release(ps[1]);
    IDirect3DPixelShader9_Release(ps[0]);
    IDirect3DVertexShader9_Release(vs);
    IDirect3DVertexDeclaration9_Release(decl);
    IDirect3DDevice9_Release(dev);
    return 0;
}
