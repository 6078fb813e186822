/* Shader model 1 texture-addressing instructions, one per 32x32 cell of a 128x64 target:
 * texm3x2pad/texm3x2tex with and without _bx2, texdp3tex, texreg2rgb, texm3x3 and texdp3
 * (their vectors as colours), ps_1_4 texld with _dz and texcrd with _dw. Stage 0 holds a
 * 4x4 point-sampled "normal map"; the dependent reads sample smooth 8x8 gradients with
 * linear filtering and wrap addressing, so no computed coordinate falls on a
 * point-sampling tie. A vs_1_1 feeds oT0-oT3. Writes shaders_1_x_texaddr.ppm.
 *
 * Built with BUMP_ENV (bump_env.c) it draws the bump-mapping forms instead, with stage 1's
 * D3DTSS_BUMPENVMAT00-11, BUMPENVLSCALE and BUMPENVLOFFSET: texbem, texbeml and ps_1_4's
 * bem with a phase-2 dependent read, written to bump_env.ppm. (texm3x3tex is not drawn:
 * Wine 8 draws nothing for it with a 2D texture bound.) */
#include "cells.h"
#include "shader_asm.h"

#define W 128
#define H 64
#define NCELLS 8
#ifndef BUMP_ENV
#define BUMP_ENV 0
#endif

int main(void) {
    IDirect3DDevice9 *dev = make_device(W, H, FALSE);
    IDirect3DVertexDeclaration9 *decl = NULL;
    IDirect3DVertexShader9 *vs = NULL;
    IDirect3DPixelShader9 *ps[NCELLS] = {0};
    IDirect3DTexture9 *normal_map, *gradient[3];
    D3DCAPS9 caps;
    DWORD texels[64];
    int i, s, x, y;
    /* oT0 = uv; oT1 = (u, v, 0.5, 1); oT2 = (v + 0.1, u + 0.3, 0.7, 1);
     * oT3 = (u/2 + 0.2, v/2 + 0.6, 0.4, 1) */
    const DWORD vs_tokens[] = {
        VS(1, 1),
        INS1(DCL), DCL_USAGE(USAGE_POSITION, 0), DST(V, 0, WALL),
        INS1(DCL), DCL_USAGE(USAGE_TEXCOORD, 0), DST(V, 1, WALL),
        INS1(M4X4), DST(RASTOUT, 0, WALL), SRC(V, 0, XYZW), SRC(C, 0, XYZW),
        INS1(MOV), DST(TEXCRDOUT, 0, WALL), SRC(V, 1, XYZW),
        INS1(MAD), DST(TEXCRDOUT, 1, WALL), SRC(V, 1, XYZW), SRC(C, 4, XYZW), SRC(C, 5, XYZW),
        INS1(MAD), DST(TEXCRDOUT, 2, WALL), SRC(V, 1, SW(1, 0, 2, 3)), SRC(C, 4, XYZW), SRC(C, 6, XYZW),
        INS1(MAD), DST(TEXCRDOUT, 3, WALL), SRC(V, 1, XYZW), SRC(C, 7, XYZW), SRC(C, 8, XYZW),
        END,
    };
    static const float vs_consts[5][4] = {
        {1, 1, 0, 0}, {0, 0, 0.5f, 1}, {0.1f, 0.3f, 0.7f, 1}, {0.5f, 0.5f, 0, 0}, {0.2f, 0.6f, 0.4f, 1},
    };
    /* Bump mapping (BUMP_ENV): texbem, texbeml, bem. */
    const DWORD texbem[] = {
        PS(1, 1), INS1(TEX), DST(T, 0, WALL),
        INS1(TEXBEM), DST(T, 1, WALL), SRC(T, 0, XYZW),
        INS1(MOV), DST(R, 0, WALL), SRC(T, 1, XYZW), END,
    };
    const DWORD texbeml[] = {
        PS(1, 1), INS1(TEX), DST(T, 0, WALL),
        INS1(TEXBEML), DST(T, 1, WALL), SRC(T, 0, XYZW),
        INS1(MOV), DST(R, 0, WALL), SRC(T, 1, XYZW), END,
    };
    /* ps_1_4: texld r0, t0; texcrd r1.rgb, t1; bem r1.rg, r1, r0; phase; texld r1, r1 */
    const DWORD bem[] = {
        PS(1, 4),
        INS1(TEX), DST(R, 0, WALL), SRC(T, 0, XYZW),
        INS1(TEXCOORD), DST(R, 1, WXYZ), SRC(T, 1, XYZW),
        INS1(BEM), DST(R, 1, WXY), SRC(R, 1, XYZW), SRC(R, 0, XYZW),
        INS1(PHASE),
        INS1(TEX), DST(R, 1, WALL), SRC(R, 1, XYZW),
        INS1(MOV), DST(R, 0, WALL), SRC(R, 1, XYZW), END,
    };
    /* The addressing forms. */
    const DWORD m3x2_bx2[] = {
        PS(1, 1), INS1(TEX), DST(T, 0, WALL),
        INS1(TEXM3X2PAD), DST(T, 1, WALL), SRC(T, 0, XYZW) | BX2,
        INS1(TEXM3X2TEX), DST(T, 2, WALL), SRC(T, 0, XYZW) | BX2,
        INS1(MOV), DST(R, 0, WALL), SRC(T, 2, XYZW), END,
    };
    const DWORD m3x2[] = {
        PS(1, 1), INS1(TEX), DST(T, 0, WALL),
        INS1(TEXM3X2PAD), DST(T, 1, WALL), SRC(T, 0, XYZW),
        INS1(TEXM3X2TEX), DST(T, 2, WALL), SRC(T, 0, XYZW),
        INS1(MOV), DST(R, 0, WALL), SRC(T, 2, XYZW), END,
    };
    const DWORD dp3tex[] = {
        PS(1, 2), INS1(TEX), DST(T, 0, WALL),
        INS1(TEXDP3TEX), DST(T, 1, WALL), SRC(T, 0, XYZW),
        INS1(MOV), DST(R, 0, WALL), SRC(T, 1, XYZW), END,
    };
    const DWORD reg2rgb[] = {
        PS(1, 2), INS1(TEX), DST(T, 0, WALL),
        INS1(TEXREG2RGB), DST(T, 1, WALL), SRC(T, 0, XYZW),
        INS1(MOV), DST(R, 0, WALL), SRC(T, 1, XYZW), END,
    };
    /* texm3x3: the three dot products as a colour, halved to stay in range */
    const DWORD m3x3[] = {
        PS(1, 2), INS1(DEF), DST(C, 0, WALL), F(0.5), F(0.5), F(0.5), F(1.0),
        INS1(TEX), DST(T, 0, WALL),
        INS1(TEXM3X3PAD), DST(T, 1, WALL), SRC(T, 0, XYZW),
        INS1(TEXM3X3PAD), DST(T, 2, WALL), SRC(T, 0, XYZW),
        INS1(TEXM3X3), DST(T, 3, WALL), SRC(T, 0, XYZW),
        INS1(MUL), DST(R, 0, WALL), SRC(T, 3, XYZW), SRC(C, 0, XYZW), END,
    };
    /* texdp3: the dot product replicated, times the normal map */
    const DWORD dp3[] = {
        PS(1, 2), INS1(TEX), DST(T, 0, WALL),
        INS1(TEXDP3), DST(T, 1, WALL), SRC(T, 0, XYZW),
        INS1(MUL), DST(R, 0, WALL) | SHIFT_D2, SRC(T, 1, XYZW), SRC(T, 0, XYZW), END,
    };
    /* ps_1_4: texld r0, t1_dz (projective by z = 0.5) and texcrd r1.rgb, t3_dw; add */
    const DWORD proj14[] = {
        PS(1, 4),
        INS1(TEX), DST(R, 0, WALL), SRC(T, 1, XYZW) | DZ,
        INS1(TEXCOORD), DST(R, 1, WXYZ), SRC(T, 3, XYZW) | DW,
        INS1(ADD), DST(R, 0, WALL) | SHIFT_D2, SRC(R, 0, XYZW), SRC(R, 1, XYZW), END,
    };
    const DWORD *all_tokens[2][NCELLS] = {
        {m3x2_bx2, m3x2, dp3tex, reg2rgb, m3x3, dp3, proj14, m3x2_bx2},
        {texbem, texbeml, bem, texbem, texbeml, bem, texbem, bem},
    };
    const DWORD *const *ps_tokens = all_tokens[BUMP_ENV];
    const char *image = BUMP_ENV ? "bump_env.ppm" : "shaders_1_x_texaddr.ppm";
    static const DWORD normals[16] = {
        0xFF8080FF, 0xFFA060E0, 0xFF60A0C0, 0xFFC0C080, 0xFF40C0A0, 0xFF8040E0, 0xFFE08060, 0xFF20A0C0,
        0xFF9090A0, 0xFF70B0D0, 0xFFB07090, 0xFF5060F0, 0xFFD0D040, 0xFF3090B0, 0xFF60E070, 0xFFA0A0A0,
    };
    static const D3DCOLOR corners[4] = {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF};

    CHECK(IDirect3DDevice9_GetDeviceCaps(dev, &caps));
    if (caps.PixelShaderVersion < D3DPS_VERSION(1, 4)) {
        printf("shaders_1_x_texaddr: no ps_1_4: nothing drawn\n");
        return 0;
    }
    normal_map = make_texture(dev, 4, normals);
    for (s = 0; s < 3; s++) {
        for (y = 0; y < 8; y++)
            for (x = 0; x < 8; x++)
                texels[y * 8 + x] = 0xFF000000u | ((DWORD)(x * 32 + 16) << (8 * ((s + 2) % 3))) |
                                    ((DWORD)(y * 28 + 20) << (8 * ((s + 1) % 3))) | ((DWORD)(160 - 16 * s) << (8 * s));
        gradient[s] = make_texture(dev, 8, texels);
    }
    CHECK(IDirect3DDevice9_CreateVertexDeclaration(dev, cell_elements, &decl));
    CHECK(IDirect3DDevice9_CreateVertexShader(dev, vs_tokens, &vs));
    for (i = 0; i < NCELLS; i++) {
        HRESULT hr = IDirect3DDevice9_CreatePixelShader(dev, ps_tokens[i], &ps[i]);
        if (FAILED(hr)) {
            fprintf(stderr, "shaders_1_x_texaddr: pixel shader %d: 0x%08lx\n", i, (unsigned long)hr);
            return 1;
        }
    }
    plain_state(dev);
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)normal_map));
    point_clamp(dev, 0);
    for (s = 1; s < 4; s++) {
        CHECK(IDirect3DDevice9_SetTexture(dev, s, (IDirect3DBaseTexture9 *)gradient[s - 1]));
        CHECK(IDirect3DDevice9_SetSamplerState(dev, s, D3DSAMP_MAGFILTER, D3DTEXF_LINEAR));
        CHECK(IDirect3DDevice9_SetSamplerState(dev, s, D3DSAMP_MINFILTER, D3DTEXF_LINEAR));
    }
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, 1, D3DTSS_BUMPENVMAT00, fbits(0.5f)));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, 1, D3DTSS_BUMPENVMAT01, fbits(0.25f)));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, 1, D3DTSS_BUMPENVMAT10, fbits(-0.25f)));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, 1, D3DTSS_BUMPENVMAT11, fbits(0.5f)));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, 1, D3DTSS_BUMPENVLSCALE, fbits(1.5f)));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, 1, D3DTSS_BUMPENVLOFFSET, fbits(-0.25f)));
    CHECK(IDirect3DDevice9_SetVertexDeclaration(dev, decl));
    CHECK(IDirect3DDevice9_SetVertexShader(dev, vs));
    CHECK(IDirect3DDevice9_SetVertexShaderConstantF(dev, 4, &vs_consts[0][0], 5));
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0, 0, 40), 1.0f, 0));
    CHECK(IDirect3DDevice9_BeginScene(dev));
    for (i = 0; i < NCELLS; i++) {
        CHECK(IDirect3DDevice9_SetPixelShader(dev, ps[i]));
        /* The second row's bump matrix is another one (BUMP_ENV). */
        if (i == 4) {
            CHECK(IDirect3DDevice9_SetTextureStageState(dev, 1, D3DTSS_BUMPENVMAT00, fbits(-0.5f)));
            CHECK(IDirect3DDevice9_SetTextureStageState(dev, 1, D3DTSS_BUMPENVMAT11, fbits(0.75f)));
            CHECK(IDirect3DDevice9_SetTextureStageState(dev, 1, D3DTSS_BUMPENVLSCALE, fbits(0.5f)));
        }
        draw_cell(dev, i % 4, i / 4, W, H, corners);
    }
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, image);
    for (i = 0; i < NCELLS; i++)
        IDirect3DPixelShader9_Release(ps[i]);
    for (s = 0; s < 3; s++)
        IDirect3DTexture9_Release(gradient[s]);
    IDirect3DTexture9_Release(normal_map);
    IDirect3DVertexShader9_Release(vs);
    IDirect3DVertexDeclaration9_Release(decl);
    IDirect3DDevice9_Release(dev);
    printf("shaders_1_x_texaddr: done\n");
    return 0;
}
