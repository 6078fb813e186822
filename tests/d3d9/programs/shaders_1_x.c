/* Shader model 1: a vs_1_1 (m4x4 position, texture coordinates, a colour through
 * c[a0.x + 5] relative addressing) and eight ps_1_1-1_4 pixel shaders, one per 32x32 cell
 * of a 128x64 target: tex, the _x2/_d2 result shifts, _bx2 and 1-x source modifiers, _sat,
 * dp3, cnd on r0.a, lrp, co-issue, texcoord, texreg2ar/texreg2gb dependent reads, and
 * ps_1_4's texld/texcrd, cmp and phase. Three 4x4 point-sampled textures whose component
 * bytes sit near texel centres (0x20, 0x60, 0xA0, 0xE0), so dependent reads never land on
 * a texel edge. Writes shaders_1_x.ppm. */
#include "cells.h"
#include "shader_asm.h"

#define W 128
#define H 64

int main(void) {
    IDirect3DDevice9 *dev = make_device(W, H, FALSE);
    IDirect3DVertexDeclaration9 *decl = NULL;
    IDirect3DVertexShader9 *vs = NULL;
    IDirect3DPixelShader9 *ps[8] = {0};
    IDirect3DTexture9 *tex[3];
    D3DCAPS9 caps;
    int i;
    const DWORD vs_tokens[] = {
        VS(1, 1),
        INS1(DCL), DCL_USAGE(USAGE_POSITION, 0), DST(V, 0, WALL),
        INS1(DCL), DCL_USAGE(USAGE_TEXCOORD, 0), DST(V, 1, WALL),
        INS1(DCL), DCL_USAGE(USAGE_COLOR, 0), DST(V, 2, WALL),
        INS1(M4X4), DST(RASTOUT, 0, WALL), SRC(V, 0, XYZW), SRC(C, 0, XYZW),
        INS1(MOV), DST(TEXCRDOUT, 0, WALL), SRC(V, 1, XYZW),
        INS1(MOV), DST(TEXCRDOUT, 1, WALL), SRC(V, 1, SW(1, 0, 2, 3)),
        INS1(MOV), DST(TEXCRDOUT, 2, WALL), SRC(V, 1, XYZW),
        INS1(MOV), DST(A, 0, WX), SRC(C, 4, XXXX),
        INS1(MUL), DST(ATTROUT, 0, WALL), SRC(V, 2, XYZW), SRC(C, 5, XYZW) | REL,
        END,
    };
    /* 0, ps_1_1: tex t0; mul_x2 r0, t0, v0 */
    const DWORD ps0[] = {
        PS(1, 1),
        INS1(TEX), DST(T, 0, WALL),
        INS1(MUL), DST(R, 0, WALL) | SHIFT_X2, SRC(T, 0, XYZW), SRC(V, 0, XYZW),
        END,
    };
    /* 1, ps_1_1: dp3_sat r1, t0_bx2, c0_bx2; mul r0, r1, v0 */
    const DWORD ps1[] = {
        PS(1, 1),
        INS1(DEF), DST(C, 0, WALL), F(1.0), F(0.25), F(0.75), F(1.0),
        INS1(TEX), DST(T, 0, WALL),
        INS1(DP3), DST(R, 1, WALL) | SAT, SRC(T, 0, XYZW) | BX2, SRC(C, 0, XYZW) | BX2,
        INS1(MUL), DST(R, 0, WALL), SRC(R, 1, XYZW), SRC(V, 0, XYZW),
        END,
    };
    /* 2, ps_1_1: mov r0, t0; cnd r0, r0.a, c1, v0 (r0.a > 0.5 picks c1) */
    const DWORD ps2[] = {
        PS(1, 1),
        INS1(DEF), DST(C, 1, WALL), F(0.9), F(0.5), F(0.1), F(1.0),
        INS1(TEX), DST(T, 0, WALL),
        INS1(MOV), DST(R, 0, WALL), SRC(T, 0, XYZW),
        INS1(CND), DST(R, 0, WALL), SRC(R, 0, WWWW), SRC(C, 1, XYZW), SRC(V, 0, XYZW),
        END,
    };
    /* 3, ps_1_3: texreg2ar t1, t0; texreg2gb t2, t0; add_d2 r0, t1, t2 */
    const DWORD ps3[] = {
        PS(1, 3),
        INS1(TEX), DST(T, 0, WALL),
        INS1(TEXREG2AR), DST(T, 1, WALL), SRC(T, 0, XYZW),
        INS1(TEXREG2GB), DST(T, 2, WALL), SRC(T, 0, XYZW),
        INS1(ADD), DST(R, 0, WALL) | SHIFT_D2, SRC(T, 1, XYZW), SRC(T, 2, XYZW),
        END,
    };
    /* 4, ps_1_4: texld r0, t0; texcrd r1.rgb, t1; add r1.rgb, r1, c0; cmp r0, r1.r, r0, c3 */
    const DWORD ps4[] = {
        PS(1, 4),
        INS1(DEF), DST(C, 0, WALL), F(-0.5), F(-0.5), F(-0.5), F(0.0),
        INS1(DEF), DST(C, 3, WALL), F(0.2), F(0.4), F(0.8), F(1.0),
        INS1(TEX), DST(R, 0, WALL), SRC(T, 0, XYZW),
        INS1(TEXCOORD), DST(R, 1, WXYZ), SRC(T, 1, XYZW),
        INS1(ADD), DST(R, 1, WXYZ), SRC(R, 1, XYZW), SRC(C, 0, XYZW),
        INS1(CMP), DST(R, 0, WALL), SRC(R, 1, XXXX), SRC(R, 0, XYZW), SRC(C, 3, XYZW),
        END,
    };
    /* 5, ps_1_4: texld r0, t0; phase; texld r2, r0 (dependent read); mul_x2 r0, r2, v0 */
    const DWORD ps5[] = {
        PS(1, 4),
        INS1(TEX), DST(R, 0, WALL), SRC(T, 0, XYZW),
        INS1(PHASE),
        INS1(TEX), DST(R, 2, WALL), SRC(R, 0, XYZW),
        INS1(MUL), DST(R, 0, WALL) | SHIFT_X2, SRC(R, 2, XYZW), SRC(V, 0, XYZW),
        END,
    };
    /* 6, ps_1_2: texcoord t0; tex t1; lrp r0, v0, t0, t1 */
    const DWORD ps6[] = {
        PS(1, 2),
        INS1(TEXCOORD), DST(T, 0, WALL),
        INS1(TEX), DST(T, 1, WALL),
        INS1(LRP), DST(R, 0, WALL), SRC(V, 0, XYZW), SRC(T, 0, XYZW), SRC(T, 1, XYZW),
        END,
    };
    /* 7, ps_1_1: add_d2 r0.rgb, 1-t0, t1 + mov r0.a, t1; mul r0.rgb, r0, r0.a */
    const DWORD ps7[] = {
        PS(1, 1),
        INS1(TEX), DST(T, 0, WALL),
        INS1(TEX), DST(T, 1, WALL),
        INS1(ADD), DST(R, 0, WXYZ) | SHIFT_D2, SRC(T, 0, XYZW) | COMP, SRC(T, 1, XYZW),
        INS1(MOV) | COISSUE, DST(R, 0, WW), SRC(T, 1, XYZW),
        INS1(MUL), DST(R, 0, WXYZ), SRC(R, 0, XYZW), SRC(R, 0, WWWW),
        END,
    };
    const DWORD *ps_tokens[8] = {ps0, ps1, ps2, ps3, ps4, ps5, ps6, ps7};
    /* Component bytes near 4-texel centres: 0x20, 0x60, 0xA0, 0xE0. */
    static const DWORD texels[3][16] = {
        {0x20E060A0, 0xA020E060, 0x60A020E0, 0xE060A020, 0xE0202060, 0x60E0A020, 0x2060E0A0, 0xA0A06020,
         0x6060E0E0, 0xE0A02060, 0xA0E06020, 0x2020A0E0, 0x60A0E020, 0xE02060A0, 0x20E0A060, 0xA06020E0},
        {0xFF1040F0, 0x80F01040, 0x4040F010, 0xC0F0F040, 0x20808080, 0xFF10F0F0, 0x60F04010, 0xA01010F0,
         0xE0C03070, 0x10307090, 0x9090C030, 0x50F0A0C0, 0x30A03090, 0xB070C010, 0x7010A0F0, 0xD0F07030},
        {0xFF202020, 0xFFE02020, 0xFF20E020, 0xFF2020E0, 0xFFE0E020, 0xFFE020E0, 0xFF20E0E0, 0xFFE0E0E0,
         0xFF806040, 0xFF408060, 0xFF604080, 0xFFC0A080, 0xFF80C0A0, 0xFFA080C0, 0xFF404040, 0xFFC0C0C0},
    };
    static const D3DCOLOR corners[4] = {0xFFFF8040, 0xFF40FF80, 0xFF8040FF, 0xFFC0C0C0};
    static const float vs_consts[2][4] = {{1.0f, 0, 0, 0}, {9.0f, 9.0f, 9.0f, 9.0f}};
    static const float vs_color_scale[4] = {1.0f, 0.75f, 0.5f, 1.0f};

    CHECK(IDirect3DDevice9_GetDeviceCaps(dev, &caps));
    if (caps.PixelShaderVersion < D3DPS_VERSION(1, 4)) {
        printf("shaders_1_x: no ps_1_4 (caps %08lx): nothing drawn\n", (unsigned long)caps.PixelShaderVersion);
        return 0;
    }
    CHECK(IDirect3DDevice9_CreateVertexDeclaration(dev, cell_elements, &decl));
    CHECK(IDirect3DDevice9_CreateVertexShader(dev, vs_tokens, &vs));
    for (i = 0; i < 8; i++)
        CHECK(IDirect3DDevice9_CreatePixelShader(dev, ps_tokens[i], &ps[i]));
    for (i = 0; i < 3; i++) {
        tex[i] = make_texture(dev, 4, texels[i]);
        CHECK(IDirect3DDevice9_SetTexture(dev, i, (IDirect3DBaseTexture9 *)tex[i]));
        point_clamp(dev, i);
    }
    plain_state(dev);
    CHECK(IDirect3DDevice9_SetVertexDeclaration(dev, decl));
    CHECK(IDirect3DDevice9_SetVertexShader(dev, vs));
    /* c4.x = 1 selects c6 through a0.x; c5 is a wrong answer (9s, saturating white). */
    CHECK(IDirect3DDevice9_SetVertexShaderConstantF(dev, 4, &vs_consts[0][0], 2));
    CHECK(IDirect3DDevice9_SetVertexShaderConstantF(dev, 6, vs_color_scale, 1));
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0, 0, 40), 1.0f, 0));
    CHECK(IDirect3DDevice9_BeginScene(dev));
    for (i = 0; i < 8; i++) {
        CHECK(IDirect3DDevice9_SetPixelShader(dev, ps[i]));
        draw_cell(dev, i % 4, i / 4, W, H, corners);
    }
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, "shaders_1_x.ppm");
    for (i = 0; i < 8; i++)
        IDirect3DPixelShader9_Release(ps[i]);
    for (i = 0; i < 3; i++)
        IDirect3DTexture9_Release(tex[i]);
    IDirect3DVertexShader9_Release(vs);
    IDirect3DVertexDeclaration9_Release(decl);
    IDirect3DDevice9_Release(dev);
    printf("shaders_1_x: done\n");
    return 0;
}
