/* Shader model 2: a vs_2_0 (m4x4 position, a loop over aL summing c[aL + 10], mova with
 * round-to-nearest and c[a0.x + 14]) and eight ps_2_0/ps_2_x pixel shaders, one per 32x32
 * cell of a 128x64 target: arithmetic (dp2add, pow, rsq, nrm, exp/log, frc, lrp, cmp,
 * ps_2_0's sincos), texldp, texkill, and ps_2_x's arbitrary swizzles, if_comp/else
 * nesting, rep with break_comp, dsx/dsy, if/else on boolean constants and rep with break. One 4x4
 * point-sampled texture. Cell edges and the shaders' thresholds avoid ties (no pixel
 * centre or coordinate exactly on a texel edge or a comparison's boundary). Writes
 * shaders_2_x.ppm. */
#include "cells.h"
#include "shader_asm.h"

#define W 128
#define H 64
#define NCELLS 8

/* Shared declarations of the pixel shaders: t0.xy, t1, v0, s0 as a 2D sampler. */
#define PS_DCLS                                                                            \
    INS(DCL, 2), 0x80000000u, DST(T, 0, WXY), INS(DCL, 2), 0x80000000u, DST(T, 1, WALL),   \
        INS(DCL, 2), 0x80000000u, DST(V, 0, WALL), INS(DCL, 2), DCL_SAMPLER_2D, DST(S, 0, WALL)
#define DEF4(reg, a, b, c, d) INS(DEF, 5), DST(C, reg, WALL), F(a), F(b), F(c), F(d)
#define TEXLD(dst, coord) INS(TEX, 3), DST(R, dst, WALL), SRC(T, coord, XYZW), SRC(S, 0, XYZW)
#define OUTC(reg) INS(MOV, 2), DST(COLOROUT, 0, WALL), SRC(R, reg, XYZW)

int main(void) {
    IDirect3DDevice9 *dev = make_device(W, H, FALSE);
    IDirect3DVertexDeclaration9 *decl = NULL;
    IDirect3DVertexShader9 *vs = NULL;
    IDirect3DPixelShader9 *ps[NCELLS] = {0};
    IDirect3DTexture9 *tex;
    D3DCAPS9 caps;
    int i;
    const DWORD vs_tokens[] = {
        VS(2, 0),
        INS(DEFI, 5), DST(I, 0, WALL), 3, 0, 1, 0,
        INS(DCL, 2), DCL_USAGE(USAGE_POSITION, 0), DST(V, 0, WALL),
        INS(DCL, 2), DCL_USAGE(USAGE_TEXCOORD, 0), DST(V, 1, WALL),
        INS(DCL, 2), DCL_USAGE(USAGE_COLOR, 0), DST(V, 2, WALL),
        INS(M4X4, 3), DST(RASTOUT, 0, WALL), SRC(V, 0, XYZW), SRC(C, 0, XYZW),
        INS(MOV, 2), DST(TEXCRDOUT, 0, WALL), SRC(V, 1, XYZW),
        /* oT1 = (u, v, 0, 1 + u): projective for texldp */
        INS(MOV, 2), DST(TEXCRDOUT, 1, WXYZ), SRC(V, 1, XYZW),
        INS(ADD, 3), DST(TEXCRDOUT, 1, WW), SRC(V, 1, XXXX), SRC(C, 8, WWWW),
        INS(MOV, 2), DST(R, 0, WALL), SRC(C, 8, XXXX),
        INS(LOOP, 2), SRC(AL, 0, XYZW), SRC(I, 0, XYZW),
        INS(ADD, 4), DST(R, 0, WALL), SRC(R, 0, XYZW), SRC(C, 10, XYZW) | REL, SRC(AL, 0, XXXX),
        INS(ENDLOOP, 0),
        INS(MOVA, 2), DST(A, 0, WX), SRC(C, 9, XXXX),
        INS(ADD, 4), DST(R, 0, WALL), SRC(R, 0, XYZW), SRC(C, 14, XYZW) | REL, SRC(A, 0, XXXX),
        INS(MUL, 3), DST(ATTROUT, 0, WALL), SRC(V, 2, XYZW), SRC(R, 0, XYZW),
        END,
    };
    /* 0, ps_2_0: dp2add, mul, pow, rsq */
    const DWORD ps0[] = {
        PS(2, 0), DEF4(0, 0.5, -0.25, 0.3, 1.0), DEF4(1, 2.2, 0.25, 4.0, 0.0), PS_DCLS,
        TEXLD(0, 0),
        INS(DP2ADD, 4), DST(R, 1, WX), SRC(R, 0, XYZW), SRC(C, 0, XYZW), SRC(C, 0, ZZZZ),
        INS(MUL, 3), DST(R, 1, WY), SRC(T, 0, XXXX), SRC(T, 0, YYYY),
        INS(POW, 3), DST(R, 1, WZ), SRC(T, 0, YYYY), SRC(C, 1, XXXX),
        INS(ADD, 3), DST(R, 2, WX), SRC(T, 0, XXXX), SRC(C, 1, YYYY),
        INS(RSQ, 2), DST(R, 2, WX), SRC(R, 2, XXXX),
        INS(MUL, 3), DST(R, 1, WW), SRC(R, 2, XXXX), SRC(C, 1, YYYY),
        INS(ADD, 3), DST(R, 1, WZ), SRC(R, 1, ZZZZ), SRC(R, 1, WWWW),
        OUTC(1), END,
    };
    /* 1, ps_2_0: sincos (with its two constants), nrm, exp, log, frc */
    const DWORD ps1[] = {
        PS(2, 0), DEF4(0, -1.5500992e-006, -2.1701389e-005, 0.0026041667, 0.00026041668),
        DEF4(1, -0.020833334, -0.125, 1.0, 0.5), DEF4(2, 6.0, 3.0, 0.5, -0.5), PS_DCLS,
        TEXLD(0, 0),
        INS(MUL, 3), DST(R, 1, WX), SRC(T, 0, XXXX), SRC(C, 2, XXXX),
        INS(SINCOS, 4), DST(R, 2, WXY), SRC(R, 1, XXXX), SRC(C, 0, XYZW), SRC(C, 1, XYZW),
        INS(MAD, 4), DST(R, 3, WXY), SRC(R, 2, XYZW), SRC(C, 2, ZZZZ), SRC(C, 2, ZZZZ),
        INS(ADD, 3), DST(R, 4, WALL), SRC(R, 0, XYZW), SRC(C, 2, WWWW),
        INS(NRM, 2), DST(R, 4, WXYZ), SRC(R, 4, XYZW),
        INS(MUL, 3), DST(R, 1, WY), SRC(T, 0, YYYY), SRC(C, 2, YYYY),
        INS(FRC, 2), DST(R, 1, WY), SRC(R, 1, YYYY),
        INS(EXP, 2), DST(R, 3, WZ), SRC(T, 0, YYYY) | NEG,
        INS(LOG, 2), DST(R, 1, WW), SRC(R, 0, ZZZZ),
        INS(MAD, 4), DST(R, 3, WZ), SRC(R, 4, XXXX), SRC(R, 1, YYYY), SRC(R, 3, ZZZZ),
        INS(MAD, 4), DST(R, 3, WZ) | SAT, SRC(R, 1, WWWW), SRC(C, 2, ZZZZ) | NEG, SRC(R, 3, ZZZZ),
        INS(MOV, 2), DST(R, 3, WW), SRC(C, 1, ZZZZ),
        OUTC(3), END,
    };
    /* 2, ps_2_0: texldp on t1 = (u, v, 0, 1 + u); lrp by v0.g; cmp on u - 0.6 */
    const DWORD ps2[] = {
        PS(2, 0), DEF4(0, -0.6, 0.2, 0.9, 1.0), PS_DCLS,
        INS(TEX, 3) | TEXLD_PROJECT, DST(R, 0, WALL), SRC(T, 1, XYZW), SRC(S, 0, XYZW),
        TEXLD(1, 0),
        INS(LRP, 4), DST(R, 2, WALL), SRC(V, 0, YYYY), SRC(R, 0, XYZW), SRC(R, 1, XYZW),
        INS(ADD, 3), DST(R, 3, WX), SRC(T, 0, XXXX), SRC(C, 0, XXXX),
        INS(CMP, 4), DST(R, 2, WX), SRC(R, 3, XXXX), SRC(C, 0, YYYY), SRC(R, 2, XXXX),
        OUTC(2), END,
    };
    /* 3, ps_2_0: texkill where u < 0.3 or v < 0.3 (the clear colour shows), v0 elsewhere */
    const DWORD ps3[] = {
        PS(2, 0), DEF4(0, -0.3, -0.3, 0.0, 0.0), PS_DCLS,
        INS(ADD, 3), DST(R, 0, WALL), SRC(T, 0, SW(0, 1, 1, 1)), SRC(C, 0, XYZW),
        INS(TEXKILL, 1), DST(R, 0, WALL),
        TEXLD(1, 0),
        INS(MUL, 3), DST(R, 1, WALL), SRC(R, 1, XYZW), SRC(V, 0, XYZW),
        OUTC(1), END,
    };
    /* 4, ps_2_x: arbitrary swizzles on every source */
    const DWORD ps4[] = {
        PS(2, 1), DEF4(0, 0.9, 0.6, 0.3, 0.1), PS_DCLS,
        TEXLD(0, 0),
        INS(MUL, 3), DST(R, 1, WALL), SRC(R, 0, SW(2, 0, 1, 3)), SRC(C, 0, SW(3, 2, 1, 0)),
        INS(ADD, 3), DST(R, 1, WALL), SRC(R, 1, SW(1, 1, 3, 0)), SRC(R, 0, SW(0, 2, 2, 1)),
        INS(MAD, 4), DST(R, 1, WXY), SRC(T, 0, SW(1, 0, 0, 1)), SRC(C, 0, SW(2, 3, 0, 1)), SRC(R, 1, SW(2, 2, 0, 0)),
        OUTC(1), END,
    };
    /* 5, ps_2_x: if_gt u, 0.45 { if_lt v, 0.55 { texel } else { v0 } } else { texel.bgra } */
    const DWORD ps5[] = {
        PS(2, 1), DEF4(0, 0.45, 0.55, 0.0, 1.0), PS_DCLS,
        TEXLD(0, 0),
        INS(IFC, 2) | CMP_GT, SRC(T, 0, XXXX), SRC(C, 0, XXXX),
        INS(IFC, 2) | CMP_LT, SRC(T, 0, YYYY), SRC(C, 0, YYYY),
        INS(MOV, 2), DST(R, 1, WALL), SRC(R, 0, XYZW),
        INS(ELSE, 0),
        INS(MOV, 2), DST(R, 1, WALL), SRC(V, 0, XYZW),
        INS(ENDIF, 0),
        INS(ELSE, 0),
        INS(MOV, 2), DST(R, 1, WALL), SRC(R, 0, SW(2, 1, 0, 3)),
        INS(ENDIF, 0),
        OUTC(1), END,
    };
    /* 6, ps_2_x: rep i0 (8) { r0 += c1; break_ge r0.x, u }, then dsx/dsy of t0 scaled */
    const DWORD ps6[] = {
        PS(2, 1), INS(DEFI, 5), DST(I, 0, WALL), 8, 0, 0, 0,
        DEF4(0, 0.0, 0.0, 0.0, 1.0), DEF4(1, 0.125, 0.0625, 0.03125, 0.0), DEF4(2, 16.0, 16.0, 0.0, 0.0), PS_DCLS,
        INS(MOV, 2), DST(R, 0, WALL), SRC(C, 0, XYZW),
        INS(REP, 1), SRC(I, 0, XYZW),
        INS(ADD, 3), DST(R, 0, WXYZ), SRC(R, 0, XYZW), SRC(C, 1, XYZW),
        INS(BREAKC, 2) | CMP_GE, SRC(R, 0, XXXX), SRC(T, 0, XXXX),
        INS(ENDREP, 0),
        INS(DSX, 2), DST(R, 1, WALL), SRC(T, 0, SW(0, 1, 0, 1)),
        INS(DSY, 2), DST(R, 2, WALL), SRC(T, 0, SW(0, 1, 0, 1)),
        INS(ADD, 3), DST(R, 1, WALL), SRC(R, 1, XYZW), SRC(R, 2, SW(1, 0, 1, 0)),
        INS(MAD, 4), DST(R, 0, WZ), SRC(R, 1, XXXX), SRC(C, 2, XXXX), SRC(R, 0, ZZZZ),
        OUTC(0), END,
    };
    /* 7, ps_2_x: if b0 / else / if b1 on boolean constants, then rep i0 (6) adding c1
     * with a break inside if_gt r1.x, v. (Subroutines are not compared: Wine 8 writes a
     * pixel shader's colour output at the end of its last subroutine instead of main's.) */
    const DWORD ps7[] = {
        PS(2, 1), INS(DEFI, 5), DST(I, 0, WALL), 6, 0, 1, 0,
        DEF4(0, 0.5, 0.75, 1.5, 1.0), DEF4(1, 0.1, 0.05, 0.15, 0.0), DEF4(2, 0.0, 0.0, 0.0, 0.0), PS_DCLS,
        TEXLD(0, 0),
        INS(IF, 1), SRC(B, 0, XXXX),
        INS(MUL, 3), DST(R, 0, WALL), SRC(R, 0, XYZW), SRC(C, 0, SW(1, 2, 0, 3)),
        INS(ELSE, 0),
        INS(MOV, 2), DST(R, 0, WALL), SRC(C, 0, WWWW),
        INS(ENDIF, 0),
        INS(IF, 1), SRC(B, 1, XXXX),
        INS(MOV, 2), DST(R, 0, WALL), SRC(C, 0, WWWW),
        INS(ENDIF, 0),
        INS(MOV, 2), DST(R, 1, WALL), SRC(C, 2, XYZW),
        INS(REP, 1), SRC(I, 0, XYZW),
        INS(ADD, 3), DST(R, 1, WALL), SRC(R, 1, XYZW), SRC(C, 1, XYZW),
        INS(IFC, 2) | CMP_GT, SRC(R, 1, XXXX), SRC(T, 0, YYYY),
        INS(BREAK, 0),
        INS(ENDIF, 0),
        INS(ENDREP, 0),
        INS(MAD, 4), DST(R, 0, WALL), SRC(V, 0, XYZW), SRC(C, 0, XXXX), SRC(R, 0, XYZW),
        INS(MUL, 3), DST(R, 0, WALL), SRC(R, 0, XYZW), SRC(R, 1, SW(0, 0, 2, 3)),
        OUTC(0), END,
    };
    const DWORD *ps_tokens[NCELLS] = {ps0, ps1, ps2, ps3, ps4, ps5, ps6, ps7};
    static const DWORD texels[16] = {
        0xFF2060A0, 0xFFA020E0, 0xFF60A020, 0xFFE060A0, 0xFFE02060, 0xFF60E0A0, 0xFF2060E0, 0xFFA0A060,
        0xFF6060E0, 0xFFE0A020, 0xFFA0E060, 0xFF2020A0, 0xFF60A0E0, 0xFFE02060, 0xFF20E0A0, 0xFFA06020,
    };
    static const D3DCOLOR corners[4] = {0xFFFF8040, 0xFF40FF80, 0xFF8040FF, 0xFFC0C0C0};
    /* vs: c8 = (0, 0, 0, 1); c9.x = 1.6 (mova rounds to 2: c16); c10-12 summed by the loop,
     * c13 and c15 wrong answers (a fourth iteration, or mova truncating). */
    static const float vs_consts[9][4] = {
        {0, 0, 0, 1}, {1.6f, 0, 0, 0}, {0.5f, 0.3f, 0.2f, 0.4f}, {0.3f, 0.4f, 0.2f, 0.3f},
        {0.1f, 0.2f, 0.5f, 0.3f}, {9, 9, 9, 9}, {0, 0, 0, 0}, {9, 0, 9, 9}, {0.1f, 0.05f, 0.05f, 0},
    };
    static const BOOL bools[2] = {TRUE, FALSE};

    CHECK(IDirect3DDevice9_GetDeviceCaps(dev, &caps));
    if (caps.VertexShaderVersion < D3DVS_VERSION(2, 0) || caps.PixelShaderVersion < D3DPS_VERSION(3, 0)) {
        printf("shaders_2_x: no vs_2_0/ps_2_x (caps %08lx %08lx): nothing drawn\n",
               (unsigned long)caps.VertexShaderVersion, (unsigned long)caps.PixelShaderVersion);
        return 0;
    }
    CHECK(IDirect3DDevice9_CreateVertexDeclaration(dev, cell_elements, &decl));
    CHECK(IDirect3DDevice9_CreateVertexShader(dev, vs_tokens, &vs));
    for (i = 0; i < NCELLS; i++) {
        HRESULT hr = IDirect3DDevice9_CreatePixelShader(dev, ps_tokens[i], &ps[i]);
        if (FAILED(hr)) {
            fprintf(stderr, "shaders_2_x: pixel shader %d: 0x%08lx\n", i, (unsigned long)hr);
            return 1;
        }
    }
    tex = make_texture(dev, 4, texels);
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)tex));
    point_clamp(dev, 0);
    plain_state(dev);
    CHECK(IDirect3DDevice9_SetVertexDeclaration(dev, decl));
    CHECK(IDirect3DDevice9_SetVertexShader(dev, vs));
    CHECK(IDirect3DDevice9_SetVertexShaderConstantF(dev, 8, &vs_consts[0][0], 9));
    CHECK(IDirect3DDevice9_SetPixelShaderConstantB(dev, 0, bools, 2));
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0, 0, 40), 1.0f, 0));
    CHECK(IDirect3DDevice9_BeginScene(dev));
    for (i = 0; i < NCELLS; i++) {
        CHECK(IDirect3DDevice9_SetPixelShader(dev, ps[i]));
        draw_cell(dev, i % 4, i / 4, W, H, corners);
    }
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, "shaders_2_x.ppm");
    for (i = 0; i < NCELLS; i++)
        IDirect3DPixelShader9_Release(ps[i]);
    IDirect3DTexture9_Release(tex);
    IDirect3DVertexShader9_Release(vs);
    IDirect3DVertexDeclaration9_Release(decl);
    IDirect3DDevice9_Release(dev);
    printf("shaders_2_x: done\n");
    return 0;
}
