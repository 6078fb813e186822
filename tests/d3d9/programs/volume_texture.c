/* Volume textures: a 4x4x4 A8R8G8B8 volume with two levels, every texel its own colour
 * (x, y in red/green, slice in blue). Row 0: one cell per slice of level 0 (w at the
 * slice's centre), point sampled; row 1: level 1's two slices (D3DSAMP_MAXMIPLEVEL 1),
 * twice. Level 0 is filled with LockBox(NULL), then a 2x2x1 box of slice 2 is rewritten
 * through LockBox with a box; level 1 through GetVolumeLevel + IDirect3DVolume9_LockBox.
 * Writes volume_texture.ppm, then volume_update.ppm: the same picture of a default-pool
 * volume filled by UpdateTexture (VolBlt, one copy per slice and level) from a
 * system-memory one whose slices are swapped in pairs. */
#include "cells.h"

#define W (4 * CELL)
#define H (2 * CELL)

static DWORD texel(UINT level, UINT x, UINT y, UINT z) {
    return 0xFF000000u | ((DWORD)(x * 60 + 20 + level * 10) << 16) | ((DWORD)(y * 60 + 20) << 8) |
           (DWORD)(z * 60 + 20 + level * 5);
}

/* Slice z gets slice (z ^ flip)'s texels. */
static void fill(const D3DLOCKED_BOX *lb, UINT level, UINT size, UINT flip) {
    UINT x, y, z;
    for (z = 0; z < size; z++)
        for (y = 0; y < size; y++)
            for (x = 0; x < size; x++)
                ((DWORD *)((char *)lb->pBits + (size_t)z * lb->SlicePitch + (size_t)y * lb->RowPitch))[x] =
                    texel(level, x, y, z ^ flip);
}

static void draw_volume(IDirect3DDevice9 *dev, IDirect3DVolumeTexture9 *vol, const char *name) {
    static const D3DCOLOR white[4] = {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF};
    int row, cell;
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)vol));
    begin_cells(dev);
    for (row = 0; row < 2; row++) {
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MAXMIPLEVEL, (DWORD)row));
        for (cell = 0; cell < 4; cell++) {
            /* Row 0: slices 0-3 of 4; row 1: slices 0, 1 of level 1's 2, twice. */
            float w = row == 0 ? (cell + 0.5f) / 4.0f : ((cell % 2) + 0.5f) / 2.0f;
            float c[3][4] = {{0, 0, w, 0}, {1, 0, 0, 0}, {0, 1, 0, 0}};
            CHECK(IDirect3DDevice9_SetVertexShaderConstantF(dev, 4, &c[0][0], 3));
            draw_cell(dev, cell, row, W, H, white);
        }
    }
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, name);
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, NULL));
}

int main(void) {
    IDirect3DDevice9 *dev = make_device(W, H, FALSE);
    IDirect3DVolumeTexture9 *vol = NULL, *staging = NULL, *updated = NULL;
    IDirect3DVolume9 *level1 = NULL;
    D3DCAPS9 caps;
    D3DLOCKED_BOX lb;
    const D3DBOX box = {1, 1, 3, 3, 2, 3};
    UINT x, y;
    /* texcoord = c4 + u * c5 + v * c6 = (u, v, w) */
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
        INS(DCL, 2), DCL_SAMPLER_VOLUME, DST(S, 0, WALL),
        INS(TEX, 3), DST(R, 0, WALL), SRC(T, 0, XYZW), SRC(S, 0, XYZW),
        INS(MOV, 2), DST(COLOROUT, 0, WALL), SRC(R, 0, XYZW),
        END,
    };
    struct cell_shaders shaders;

    CHECK(IDirect3DDevice9_GetDeviceCaps(dev, &caps));
    if (!(caps.TextureCaps & D3DPTEXTURECAPS_VOLUMEMAP)) {
        fprintf(stderr, "volume_texture: no D3DPTEXTURECAPS_VOLUMEMAP\n");
        return 1;
    }
    CHECK(IDirect3DDevice9_CreateVolumeTexture(dev, 4, 4, 4, 2, 0, D3DFMT_A8R8G8B8, D3DPOOL_MANAGED, &vol, NULL));
    CHECK(IDirect3DVolumeTexture9_LockBox(vol, 0, &lb, NULL, 0));
    fill(&lb, 0, 4, 0);
    CHECK(IDirect3DVolumeTexture9_UnlockBox(vol, 0));
    CHECK(IDirect3DVolumeTexture9_LockBox(vol, 0, &lb, &box, 0));
    for (y = 0; y < 2; y++)
        for (x = 0; x < 2; x++) ((DWORD *)((char *)lb.pBits + (size_t)y * lb.RowPitch))[x] = 0xFFF0F0F0u - x * 0x400000u;
    CHECK(IDirect3DVolumeTexture9_UnlockBox(vol, 0));
    CHECK(IDirect3DVolumeTexture9_GetVolumeLevel(vol, 1, &level1));
    CHECK(IDirect3DVolume9_LockBox(level1, &lb, NULL, 0));
    fill(&lb, 1, 2, 0);
    CHECK(IDirect3DVolume9_UnlockBox(level1));
    IDirect3DVolume9_Release(level1);

    shaders = bind_cell_shaders(dev, vs_tokens, ps_tokens);
    CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MIPFILTER, D3DTEXF_POINT));
    CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_ADDRESSW, D3DTADDRESS_CLAMP));
    draw_volume(dev, vol, "volume_texture.ppm");
    CHECK(IDirect3DDevice9_CreateVolumeTexture(dev, 4, 4, 4, 2, 0, D3DFMT_A8R8G8B8, D3DPOOL_SYSTEMMEM, &staging,
                                               NULL));
    CHECK(IDirect3DDevice9_CreateVolumeTexture(dev, 4, 4, 4, 2, 0, D3DFMT_A8R8G8B8, D3DPOOL_DEFAULT, &updated, NULL));
    CHECK(IDirect3DVolumeTexture9_LockBox(staging, 0, &lb, NULL, 0));
    fill(&lb, 0, 4, 1);
    CHECK(IDirect3DVolumeTexture9_UnlockBox(staging, 0));
    CHECK(IDirect3DVolumeTexture9_LockBox(staging, 1, &lb, NULL, 0));
    fill(&lb, 1, 2, 1);
    CHECK(IDirect3DVolumeTexture9_UnlockBox(staging, 1));
    CHECK(IDirect3DDevice9_UpdateTexture(dev, (IDirect3DBaseTexture9 *)staging, (IDirect3DBaseTexture9 *)updated));
    draw_volume(dev, updated, "volume_update.ppm");
    IDirect3DVolumeTexture9_Release(staging);
    IDirect3DVolumeTexture9_Release(updated);
    IDirect3DVolumeTexture9_Release(vol);
    release_cell_shaders(&shaders);
    IDirect3DDevice9_Release(dev);
    return 0;
}
