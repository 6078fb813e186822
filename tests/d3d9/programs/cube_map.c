/* Cube textures: a 4x4 A8R8G8B8 cube with two levels, every texel of every face its own
 * colour (face in blue, texel column/row in red/green, level in alpha-free brightness).
 * Each cell looks at one face (+X, -X, +Y, -Y, +Z, -Z): the vertex shader sweeps the
 * direction over 90% of the face (never reaching an edge, so no face ties), point sampled,
 * so the picture shows D3D9's face selection and per-face (s, t) orientation. Row 0 samples
 * level 0, row 1 level 1 (D3DSAMP_MAXMIPLEVEL 1). The faces are filled through
 * GetCubeMapSurface + LockRect (level 0) and the texture's LockRect (level 1).
 * Writes cube_map.ppm, then cube_map_update.ppm: the same picture of a default-pool cube
 * filled by UpdateTexture from a system-memory one holding the faces swapped in pairs
 * (every face and level copied, TexBlt face by face). */
#include "cells.h"

#define W (6 * CELL)
#define H (2 * CELL)

static DWORD texel(UINT face, UINT level, UINT x, UINT y) {
    return 0xFF000000u | ((DWORD)(x * 60 + 20 + level * 10) << 16) | ((DWORD)(y * 60 + 20 + level * 10) << 8) |
           (DWORD)(face * 40 + 30);
}

/* Face f of `cube` gets face (f ^ flip)'s texels. */
static void fill_cube(IDirect3DCubeTexture9 *cube, UINT flip) {
    IDirect3DSurface9 *face_surface = NULL;
    D3DLOCKED_RECT lr;
    UINT face, level, x, y;
    for (face = 0; face < 6; face++) {
        /* Level 0 through the face's surface, level 1 through the texture. */
        CHECK(IDirect3DCubeTexture9_GetCubeMapSurface(cube, (D3DCUBEMAP_FACES)face, 0, &face_surface));
        CHECK(IDirect3DSurface9_LockRect(face_surface, &lr, NULL, 0));
        for (y = 0; y < 4; y++)
            for (x = 0; x < 4; x++)
                ((DWORD *)((char *)lr.pBits + (size_t)y * lr.Pitch))[x] = texel(face ^ flip, 0, x, y);
        CHECK(IDirect3DSurface9_UnlockRect(face_surface));
        IDirect3DSurface9_Release(face_surface);
        level = 1;
        CHECK(IDirect3DCubeTexture9_LockRect(cube, (D3DCUBEMAP_FACES)face, level, &lr, NULL, 0));
        for (y = 0; y < 2; y++)
            for (x = 0; x < 2; x++)
                ((DWORD *)((char *)lr.pBits + (size_t)y * lr.Pitch))[x] = texel(face ^ flip, 1, x, y);
        CHECK(IDirect3DCubeTexture9_UnlockRect(cube, (D3DCUBEMAP_FACES)face, level));
    }
}

/* Per face: major axis, then two axes spanning it. */
static const float axes[6][3][3] = {
    {{1, 0, 0}, {0, 0, 1}, {0, 1, 0}},  {{-1, 0, 0}, {0, 0, 1}, {0, 1, 0}},
    {{0, 1, 0}, {1, 0, 0}, {0, 0, 1}},  {{0, -1, 0}, {1, 0, 0}, {0, 0, 1}},
    {{0, 0, 1}, {1, 0, 0}, {0, 1, 0}},  {{0, 0, -1}, {1, 0, 0}, {0, 1, 0}},
};

/* Row 0 samples level 0, row 1 level 1; one cell per face. */
static void draw_cube(IDirect3DDevice9 *dev, IDirect3DCubeTexture9 *cube, const char *name) {
    static const D3DCOLOR white[4] = {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF};
    UINT face;
    int row;
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)cube));
    begin_cells(dev);
    for (row = 0; row < 2; row++) {
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MAXMIPLEVEL, (DWORD)row));
        for (face = 0; face < 6; face++) {
            float c[3][4] = {{0}};
            int k;
            for (k = 0; k < 3; k++) {
                c[0][k] = axes[face][0][k] - 0.9f * axes[face][1][k] - 0.9f * axes[face][2][k];
                c[1][k] = 1.8f * axes[face][1][k];
                c[2][k] = 1.8f * axes[face][2][k];
            }
            CHECK(IDirect3DDevice9_SetVertexShaderConstantF(dev, 4, &c[0][0], 3));
            draw_cell(dev, (int)face, row, W, H, white);
        }
    }
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, name);
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, NULL));
}

int main(void) {
    IDirect3DDevice9 *dev = make_device(W, H, FALSE);
    IDirect3DCubeTexture9 *cube = NULL, *staging = NULL, *updated = NULL;
    D3DCAPS9 caps;
    /* dir(u, v) = c4 + u * c5 + v * c6 */
    const DWORD vs_tokens[] = {
        VS(2, 0),
        INS(DCL, 2), DCL_USAGE(USAGE_POSITION, 0), DST(V, 0, WALL),
        INS(DCL, 2), DCL_USAGE(USAGE_TEXCOORD, 0), DST(V, 1, WALL),
        INS(M4X4, 3), DST(RASTOUT, 0, WALL), SRC(V, 0, XYZW), SRC(C, 0, XYZW),
        INS(MAD, 4), DST(R, 0, WALL), SRC(V, 1, XXXX), SRC(C, 5, XYZW), SRC(C, 4, XYZW),
        INS(MAD, 4), DST(TEXCRDOUT, 0, WALL), SRC(V, 1, YYYY), SRC(C, 6, XYZW), SRC(R, 0, XYZW),
        END,
    };
    const DWORD ps_tokens[] = {
        PS(2, 0),
        INS(DCL, 2), 0x80000000u, DST(T, 0, WXYZ),
        INS(DCL, 2), DCL_SAMPLER_CUBE, DST(S, 0, WALL),
        INS(TEX, 3), DST(R, 0, WALL), SRC(T, 0, XYZW), SRC(S, 0, XYZW),
        INS(MOV, 2), DST(COLOROUT, 0, WALL), SRC(R, 0, XYZW),
        END,
    };
    struct cell_shaders shaders;

    CHECK(IDirect3DDevice9_GetDeviceCaps(dev, &caps));
    if (!(caps.TextureCaps & D3DPTEXTURECAPS_CUBEMAP)) {
        fprintf(stderr, "cube_map: no D3DPTEXTURECAPS_CUBEMAP\n");
        return 1;
    }
    CHECK(IDirect3DDevice9_CreateCubeTexture(dev, 4, 2, 0, D3DFMT_A8R8G8B8, D3DPOOL_MANAGED, &cube, NULL));
    fill_cube(cube, 0);
    shaders = bind_cell_shaders(dev, vs_tokens, ps_tokens);
    CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MIPFILTER, D3DTEXF_POINT));
    draw_cube(dev, cube, "cube_map.ppm");
    CHECK(IDirect3DDevice9_CreateCubeTexture(dev, 4, 2, 0, D3DFMT_A8R8G8B8, D3DPOOL_SYSTEMMEM, &staging, NULL));
    CHECK(IDirect3DDevice9_CreateCubeTexture(dev, 4, 2, 0, D3DFMT_A8R8G8B8, D3DPOOL_DEFAULT, &updated, NULL));
    fill_cube(staging, 1);
    CHECK(IDirect3DDevice9_UpdateTexture(dev, (IDirect3DBaseTexture9 *)staging, (IDirect3DBaseTexture9 *)updated));
    draw_cube(dev, updated, "cube_map_update.ppm");
    IDirect3DCubeTexture9_Release(staging);
    IDirect3DCubeTexture9_Release(updated);
    IDirect3DCubeTexture9_Release(cube);
    release_cell_shaders(&shaders);
    IDirect3DDevice9_Release(dev);
    return 0;
}
