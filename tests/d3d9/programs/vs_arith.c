/* Vertex shader arithmetic: eight vertex shaders, one per 32x32 cell of a 128x64 target,
 * each computing a colour per vertex from r1 = uv * 1.5 + (0.2, 0.1, 0.3, 0.25) (so the
 * four corners see different inputs) that the rasterizer interpolates: vs_1_1 lit,
 * expp/logp, dst/sge/slt/min/max; vs_2_0 frc/rcp/rsq/exp/log, sgn/abs/nrm/crs,
 * pow/sincos, m3x3/m3x2/m4x3; vs_2_x rep with break_comp and if_comp/else. Each output is
 * scaled into [0, 1] (oD0 is clamped). A ps_2_0 writes the interpolated colour. Writes
 * vs_arith.ppm. */
#include "cells.h"
#include "shader_asm.h"

#define W 128
#define H 64
#define NCELLS 8

/* Common head: declarations, position, r1 = v1.xyxy * c20 + c21. */
#define HEAD1                                                                              \
    VS(1, 1), INS1(DCL), DCL_USAGE(USAGE_POSITION, 0), DST(V, 0, WALL), INS1(DCL),         \
        DCL_USAGE(USAGE_TEXCOORD, 0), DST(V, 1, WALL), INS1(M4X4), DST(RASTOUT, 0, WALL),  \
        SRC(V, 0, XYZW), SRC(C, 0, XYZW), INS1(MAD), DST(R, 1, WALL), SRC(V, 1, SW(0, 1, 0, 1)), \
        SRC(C, 20, XYZW), SRC(C, 21, XYZW)
#define HEAD2(minor)                                                                       \
    VS(2, minor), INS(DCL, 2), DCL_USAGE(USAGE_POSITION, 0), DST(V, 0, WALL), INS(DCL, 2), \
        DCL_USAGE(USAGE_TEXCOORD, 0), DST(V, 1, WALL), INS(M4X4, 3), DST(RASTOUT, 0, WALL), \
        SRC(V, 0, XYZW), SRC(C, 0, XYZW), INS(MAD, 4), DST(R, 1, WALL), SRC(V, 1, SW(0, 1, 0, 1)), \
        SRC(C, 20, XYZW), SRC(C, 21, XYZW)

int main(void) {
    IDirect3DDevice9 *dev = make_device(W, H, FALSE);
    IDirect3DVertexDeclaration9 *decl = NULL;
    IDirect3DVertexShader9 *vs[NCELLS] = {0};
    IDirect3DPixelShader9 *ps = NULL;
    D3DCAPS9 caps;
    int i;
    /* 0, vs_1_1: lit of (1.5u - 0.7, 1.5v - 0.5, 0, 6): oD0 = (y, z, x/2) */
    const DWORD vs0[] = {
        HEAD1,
        INS1(MAD), DST(R, 2, WALL), SRC(R, 1, XYZW), SRC(C, 22, XYZW), SRC(C, 23, XYZW),
        INS1(LIT), DST(R, 3, WALL), SRC(R, 2, XYZW),
        INS1(MUL), DST(ATTROUT, 0, WALL), SRC(R, 3, SW(1, 2, 0, 3)), SRC(C, 24, XYZW),
        END,
    };
    /* 1, vs_1_1: expp of x, logp of y: (frac, 2^x / 4, log2(y) / 2 + 1/2) */
    const DWORD vs1[] = {
        HEAD1,
        INS1(EXPP), DST(R, 3, WALL), SRC(R, 1, XXXX),
        INS1(LOGP), DST(R, 4, WALL), SRC(R, 1, YYYY),
        INS1(MOV), DST(R, 5, WX), SRC(R, 3, YYYY),
        INS1(MUL), DST(R, 5, WY), SRC(R, 3, ZZZZ), SRC(C, 25, XXXX),
        INS1(MAD), DST(R, 5, WZ), SRC(R, 4, ZZZZ), SRC(C, 24, ZZZZ), SRC(C, 24, ZZZZ),
        INS1(MOV), DST(R, 5, WW), SRC(C, 24, WWWW),
        INS1(MOV), DST(ATTROUT, 0, WALL), SRC(R, 5, XYZW),
        END,
    };
    /* 2, vs_1_1: dst, sge, slt, min, max */
    const DWORD vs2[] = {
        HEAD1,
        INS1(DST_OP), DST(R, 3, WALL), SRC(R, 1, XYZW), SRC(R, 1, SW(3, 2, 1, 0)),
        INS1(SGE), DST(R, 4, WALL), SRC(R, 1, XYZW), SRC(C, 26, XYZW),
        INS1(SLT), DST(R, 5, WALL), SRC(R, 1, XYZW), SRC(C, 26, XYZW),
        INS1(MIN), DST(R, 6, WALL), SRC(R, 3, XYZW), SRC(C, 24, XXXX),
        INS1(MAX), DST(R, 7, WALL), SRC(R, 1, XYZW), SRC(C, 26, XYZW),
        INS1(MUL), DST(R, 8, WALL), SRC(R, 3, XYZW), SRC(C, 25, XYZW),
        INS1(MAD), DST(R, 8, WX), SRC(R, 4, XXXX), SRC(C, 24, ZZZZ), SRC(R, 5, YYYY) | NEG,
        INS1(MAD), DST(R, 8, WZ), SRC(R, 6, WWWW), SRC(C, 24, ZZZZ), SRC(R, 7, ZZZZ) | NEG,
        INS1(ADD), DST(ATTROUT, 0, WALL), SRC(R, 8, XYZW), SRC(C, 24, ZZZZ),
        END,
    };
    /* 3, vs_2_0: frc, rcp, rsq, exp, log */
    const DWORD vs3[] = {
        HEAD2(0),
        INS(FRC, 2), DST(R, 3, WALL), SRC(R, 1, XYZW),
        INS(RCP, 2), DST(R, 4, WX), SRC(R, 1, XXXX),
        INS(RSQ, 2), DST(R, 4, WY), SRC(R, 1, YYYY),
        INS(EXP, 2), DST(R, 4, WZ), SRC(R, 1, ZZZZ),
        INS(LOG, 2), DST(R, 4, WW), SRC(R, 1, WWWW),
        INS(MUL, 3), DST(R, 5, WX), SRC(R, 3, YYYY), SRC(R, 4, XXXX),
        INS(MUL, 3), DST(R, 5, WY), SRC(R, 4, YYYY), SRC(C, 24, ZZZZ),
        INS(MAD, 4), DST(R, 5, WZ), SRC(R, 4, ZZZZ), SRC(C, 25, XXXX), SRC(R, 4, WWWW),
        INS(MOV, 2), DST(R, 5, WW), SRC(C, 24, WWWW),
        INS(MOV, 2), DST(ATTROUT, 0, WALL), SRC(R, 5, XYZW),
        END,
    };
    /* 4, vs_2_0: r2 = r1 - 1: sgn (with its two scratch registers), abs, nrm, crs */
    const DWORD vs4[] = {
        HEAD2(0),
        INS(ADD, 3), DST(R, 2, WALL), SRC(R, 1, XYZW), SRC(C, 24, WWWW) | NEG,
        INS(SGN, 4), DST(R, 3, WALL), SRC(R, 2, XYZW), SRC(R, 9, XYZW), SRC(R, 10, XYZW),
        INS(ABS_OP, 2), DST(R, 4, WALL), SRC(R, 2, XYZW),
        INS(NRM, 2), DST(R, 5, WALL), SRC(R, 2, XYZW),
        INS(CRS, 3), DST(R, 6, WXYZ), SRC(R, 5, XYZW), SRC(R, 1, XYZW),
        INS(MAD, 4), DST(R, 7, WALL), SRC(R, 3, XYZW), SRC(C, 25, XXXX), SRC(C, 24, ZZZZ),
        INS(MAD, 4), DST(R, 7, WALL), SRC(R, 4, XYZW), SRC(C, 24, ZZZZ), SRC(R, 7, XYZW),
        INS(MAD, 4), DST(R, 8, WALL), SRC(R, 5, XYZW), SRC(C, 25, XXXX), SRC(R, 7, SW(1, 2, 0, 3)),
        INS(MAD, 4), DST(ATTROUT, 0, WALL), SRC(R, 6, XYZW), SRC(C, 25, XXXX), SRC(R, 8, XYZW),
        END,
    };
    /* 5, vs_2_0: pow(x, y), sincos (vs_2_0 form with its two constants) of z */
    const DWORD vs5[] = {
        HEAD2(0),
        INS(POW, 3), DST(R, 3, WX), SRC(R, 1, XXXX), SRC(R, 1, YYYY),
        INS(MUL, 3), DST(R, 2, WX), SRC(R, 1, ZZZZ), SRC(C, 25, WWWW),
        INS(SINCOS, 4), DST(R, 4, WXY), SRC(R, 2, XXXX), SRC(C, 28, XYZW), SRC(C, 29, XYZW),
        INS(MUL, 3), DST(R, 5, WX), SRC(R, 3, XXXX), SRC(C, 25, XXXX),
        INS(MAD, 4), DST(R, 5, WY | WZ), SRC(R, 4, SW(0, 0, 1, 3)), SRC(C, 24, ZZZZ), SRC(C, 24, ZZZZ),
        INS(MOV, 2), DST(R, 5, WW), SRC(C, 24, WWWW),
        INS(MOV, 2), DST(ATTROUT, 0, WALL), SRC(R, 5, XYZW),
        END,
    };
    /* 6, vs_2_0: m3x3, m3x2, m4x3 */
    const DWORD vs6[] = {
        HEAD2(0),
        INS(M3X3, 3), DST(R, 3, WXYZ), SRC(R, 1, XYZW), SRC(C, 30, XYZW),
        INS(M3X2, 3), DST(R, 4, WXY), SRC(R, 1, XYZW), SRC(C, 33, XYZW),
        INS(M4X3, 3), DST(R, 5, WXYZ), SRC(R, 1, XYZW), SRC(C, 35, XYZW),
        INS(ADD, 3), DST(R, 3, WXYZ), SRC(R, 3, XYZW), SRC(R, 4, SW(0, 1, 0, 3)),
        INS(ADD, 3), DST(R, 3, WXYZ), SRC(R, 3, XYZW), SRC(R, 5, XYZW),
        INS(MUL, 3), DST(R, 3, WXYZ), SRC(R, 3, XYZW), SRC(C, 25, XXXX),
        INS(MOV, 2), DST(R, 3, WW), SRC(C, 24, WWWW),
        INS(MOV, 2), DST(ATTROUT, 0, WALL), SRC(R, 3, XYZW),
        END,
    };
    /* 7, vs_2_x: rep i0 (6) { r3 += c39; break_gt r3.x, r1.x }; if_lt r1.y, 1 { b = y/2 }
     * else { b = 1 - y/4 } */
    const DWORD vs7[] = {
        HEAD2(1),
        INS(DEFI, 5), DST(I, 0, WALL), 6, 0, 0, 0,
        INS(MOV, 2), DST(R, 3, WALL), SRC(C, 38, XYZW),
        INS(REP, 1), SRC(I, 0, XYZW),
        INS(ADD, 3), DST(R, 3, WALL), SRC(R, 3, XYZW), SRC(C, 39, XYZW),
        INS(BREAKC, 2) | CMP_GT, SRC(R, 3, XXXX), SRC(R, 1, XXXX),
        INS(ENDREP, 0),
        INS(IFC, 2) | CMP_LT, SRC(R, 1, YYYY), SRC(C, 24, WWWW),
        INS(MUL, 3), DST(R, 3, WZ), SRC(R, 1, YYYY), SRC(C, 24, ZZZZ),
        INS(ELSE, 0),
        INS(MAD, 4), DST(R, 3, WZ), SRC(R, 1, YYYY), SRC(C, 25, XXXX) | NEG, SRC(C, 24, WWWW),
        INS(ENDIF, 0),
        INS(MUL, 3), DST(R, 3, WX), SRC(R, 3, XXXX), SRC(C, 24, ZZZZ),
        INS(MOV, 2), DST(ATTROUT, 0, WALL), SRC(R, 3, XYZW),
        END,
    };
    const DWORD ps_tokens[] = {
        PS(2, 0), INS(DCL, 2), 0x80000000u, DST(V, 0, WALL),
        INS(MOV, 2), DST(COLOROUT, 0, WALL), SRC(V, 0, XYZW), END,
    };
    const DWORD *vs_tokens[NCELLS] = {vs0, vs1, vs2, vs3, vs4, vs5, vs6, vs7};
    /* c20..c39 */
    static const float consts[20][4] = {
        {1.5f, 1.5f, 1.5f, 1.5f},       /* c20 input scale */
        {0.2f, 0.1f, 0.3f, 0.25f},      /* c21 input offset */
        {1, 1, 0, 0},                   /* c22 */
        {-0.9f, -0.6f, 0, 6},           /* c23 */
        {1, 1, 0.5f, 1},                /* c24 */
        {0.25f, 0.5f, 0.75f, 2.0f},     /* c25 */
        {1.0f, 0.9f, 1.1f, 0.95f},      /* c26 thresholds */
        {0, 0, 0, 0},                   /* c27 */
        {-1.5500992e-006f, -2.1701389e-005f, 0.0026041667f, 0.00026041668f}, /* c28 D3DSINCOSCONST1 */
        {-0.020833334f, -0.125f, 1.0f, 0.5f},                               /* c29 D3DSINCOSCONST2 */
        {0.5f, -0.25f, 0.125f, 0}, {0.25f, 0.5f, -0.125f, 0}, {-0.125f, 0.25f, 0.5f, 0}, /* c30-32 */
        {0.3f, 0.2f, 0.1f, 0}, {-0.1f, 0.4f, 0.2f, 0},                            /* c33-34 */
        {0.2f, 0.1f, 0.1f, 0.3f}, {0.1f, 0.2f, 0.1f, -0.2f}, {0.1f, 0.1f, 0.2f, 0.1f}, /* c35-37 */
        {0, 0.2f, 0, 1},                /* c38 */
        {0.3f, 0.1f, 0, 0},             /* c39 */
    };
    static const D3DCOLOR corners[4] = {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF};

    CHECK(IDirect3DDevice9_GetDeviceCaps(dev, &caps));
    if (caps.VertexShaderVersion < D3DVS_VERSION(3, 0)) {
        printf("vs_arith: no vs_2_x (caps %08lx): nothing drawn\n", (unsigned long)caps.VertexShaderVersion);
        return 0;
    }
    CHECK(IDirect3DDevice9_CreateVertexDeclaration(dev, cell_elements, &decl));
    for (i = 0; i < NCELLS; i++) {
        HRESULT hr = IDirect3DDevice9_CreateVertexShader(dev, vs_tokens[i], &vs[i]);
        if (FAILED(hr)) {
            fprintf(stderr, "vs_arith: vertex shader %d: 0x%08lx\n", i, (unsigned long)hr);
            return 1;
        }
    }
    CHECK(IDirect3DDevice9_CreatePixelShader(dev, ps_tokens, &ps));
    plain_state(dev);
    CHECK(IDirect3DDevice9_SetVertexDeclaration(dev, decl));
    CHECK(IDirect3DDevice9_SetPixelShader(dev, ps));
    CHECK(IDirect3DDevice9_SetVertexShaderConstantF(dev, 20, &consts[0][0], 20));
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0, 0, 40), 1.0f, 0));
    CHECK(IDirect3DDevice9_BeginScene(dev));
    for (i = 0; i < NCELLS; i++) {
        CHECK(IDirect3DDevice9_SetVertexShader(dev, vs[i]));
        draw_cell(dev, i % 4, i / 4, W, H, corners);
    }
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, "vs_arith.ppm");
    for (i = 0; i < NCELLS; i++)
        IDirect3DVertexShader9_Release(vs[i]);
    IDirect3DPixelShader9_Release(ps);
    IDirect3DVertexDeclaration9_Release(decl);
    IDirect3DDevice9_Release(dev);
    printf("vs_arith: done\n");
    return 0;
}
