/* Shader model 3 beyond shaders_3_0.c: a vs_3_0 (m4x4, loop aL over c[aL + 10], mova and
 * c[a0.x + 14], semantic outputs) and eight ps_3_0 cells of a 128x64 target: texldl with
 * an explicit level, texldd with explicit gradients (both on a 7-level mipmapped texture
 * with linear mip filtering), vPos, vFace on a front-facing and on a back-facing
 * (mirrored) quad, a loop aL with c[aL + 20] around a nested rep and a break_comp,
 * SM3's one-operand sincos, and the interpolated colour times a texel. Writes
 * shaders_3_0_flow.ppm; a device without vs_3_0/ps_3_0 writes nothing and says so. */
#include "cells.h"
#include "shader_asm.h"

#define W 128
#define H 64
#define NCELLS 8
#define SIZE 64
#define LEVELS 7

#define DEF4(reg, a, b, c, d) INS(DEF, 5), DST(C, reg, WALL), F(a), F(b), F(c), F(d)
/* ps_3_0 inputs: v0 texcoord0, v1 colour0; s0 2D. */
#define PS_DCLS                                                                            \
    INS(DCL, 2), DCL_USAGE(USAGE_TEXCOORD, 0), DST(V, 0, WALL), INS(DCL, 2),               \
        DCL_USAGE(USAGE_COLOR, 0), DST(V, 1, WALL), INS(DCL, 2), DCL_SAMPLER_2D, DST(S, 0, WALL)
#define OUTC(reg) INS(MOV, 2), DST(COLOROUT, 0, WALL), SRC(R, reg, XYZW)

int main(void) {
    IDirect3DDevice9 *dev = make_device(W, H, FALSE);
    IDirect3DVertexDeclaration9 *decl = NULL;
    IDirect3DVertexShader9 *vs = NULL;
    IDirect3DPixelShader9 *ps[NCELLS] = {0};
    IDirect3DTexture9 *tex = NULL;
    D3DCAPS9 caps;
    int i;
    const DWORD vs_tokens[] = {
        VS(3, 0),
        INS(DEFI, 5), DST(I, 0, WALL), 3, 0, 1, 0,
        INS(DCL, 2), DCL_USAGE(USAGE_POSITION, 0), DST(V, 0, WALL),
        INS(DCL, 2), DCL_USAGE(USAGE_TEXCOORD, 0), DST(V, 1, WALL),
        INS(DCL, 2), DCL_USAGE(USAGE_COLOR, 0), DST(V, 2, WALL),
        INS(DCL, 2), DCL_USAGE(USAGE_POSITION, 0), DST(O, 0, WALL),
        INS(DCL, 2), DCL_USAGE(USAGE_TEXCOORD, 0), DST(O, 1, WALL),
        INS(DCL, 2), DCL_USAGE(USAGE_COLOR, 0), DST(O, 2, WALL),
        INS(M4X4, 3), DST(O, 0, WALL), SRC(V, 0, XYZW), SRC(C, 0, XYZW),
        INS(MOV, 2), DST(O, 1, WALL), SRC(V, 1, XYZW),
        INS(MOV, 2), DST(R, 0, WALL), SRC(C, 8, XXXX),
        INS(LOOP, 2), SRC(AL, 0, XYZW), SRC(I, 0, XYZW),
        INS(ADD, 4), DST(R, 0, WALL), SRC(R, 0, XYZW), SRC(C, 10, XYZW) | REL, SRC(AL, 0, XXXX),
        INS(ENDLOOP, 0),
        INS(MOVA, 2), DST(A, 0, WX), SRC(C, 9, XXXX),
        INS(ADD, 4), DST(R, 0, WALL), SRC(R, 0, XYZW), SRC(C, 14, XYZW) | REL, SRC(A, 0, XXXX),
        INS(MUL, 3), DST(O, 2, WALL), SRC(V, 2, XYZW), SRC(R, 0, XYZW),
        END,
    };
    /* 0: texldl at level 1.6 of coordinates scaled by 1.5 */
    const DWORD ps0[] = {
        PS(3, 0), DEF4(0, 1.5, 1.5, 0.0, 1.6), PS_DCLS,
        INS(MUL, 3), DST(R, 1, WXY), SRC(V, 0, XYZW), SRC(C, 0, XYZW),
        INS(MOV, 2), DST(R, 1, WZW), SRC(C, 0, XYZW),
        INS(TEXLDL, 3), DST(R, 0, WALL), SRC(R, 1, XYZW), SRC(S, 0, XYZW),
        OUTC(0), END,
    };
    /* 1: texldd with gradients (5/64, 0) and (0, 3/64) in texture space per pixel */
    const DWORD ps1[] = {
        PS(3, 0), DEF4(0, 0.078125, 0.0, 0.0, 0.0), DEF4(1, 0.0, 0.046875, 0.0, 0.0), PS_DCLS,
        INS(TEXLDD, 5), DST(R, 0, WALL), SRC(V, 0, XYZW), SRC(S, 0, XYZW), SRC(C, 0, XYZW), SRC(C, 1, XYZW),
        OUTC(0), END,
    };
    /* 2: vPos: fractions of the pixel position over 8 and 16 pixels */
    const DWORD ps2[] = {
        PS(3, 0), DEF4(0, 0.125, 0.0625, 0.0, 1.0), PS_DCLS,
        INS(DCL, 2), 0x80000000u, DST(MISC, 0, WXY),
        INS(MUL, 3), DST(R, 0, WXY), SRC(MISC, 0, XYZW), SRC(C, 0, XYZW),
        INS(FRC, 2), DST(R, 0, WXY), SRC(R, 0, XYZW),
        INS(MOV, 2), DST(R, 0, WZW), SRC(C, 0, XYZW),
        OUTC(0), END,
    };
    /* 3 and 4: vFace picks c1 (front) or c2 (back), times the texel */
    const DWORD ps3[] = {
        PS(3, 0), DEF4(1, 1.0, 0.5, 0.25, 1.0), DEF4(2, 0.25, 0.5, 1.0, 1.0), PS_DCLS,
        INS(DCL, 2), 0x80000000u, DST(MISC, 1, WALL),
        INS(TEX, 3), DST(R, 0, WALL), SRC(V, 0, XYZW), SRC(S, 0, XYZW),
        INS(CMP, 4), DST(R, 1, WALL), SRC(MISC, 1, XXXX), SRC(C, 1, XYZW), SRC(C, 2, XYZW),
        INS(MUL, 3), DST(R, 0, WALL), SRC(R, 0, XYZW), SRC(R, 1, XYZW),
        OUTC(0), END,
    };
    /* 5: loop aL, i0 (4) { rep i1 (2) { r0 += c[aL + 20] }; break_gt r0.x, u }. c20-c23
     * come from SetPixelShaderConstantF: Wine 8 reads def'd constants through relative
     * addressing as the application's (unset) ones. */
    const DWORD ps5[] = {
        PS(3, 0), INS(DEFI, 5), DST(I, 0, WALL), 4, 0, 1, 0, INS(DEFI, 5), DST(I, 1, WALL), 2, 0, 0, 0,
        DEF4(0, 0.0, 0.0, 0.0, 1.0), PS_DCLS,
        INS(MOV, 2), DST(R, 0, WALL), SRC(C, 0, XYZW),
        INS(LOOP, 2), SRC(AL, 0, XYZW), SRC(I, 0, XYZW),
        INS(REP, 1), SRC(I, 1, XYZW),
        INS(ADD, 4), DST(R, 0, WXYZ), SRC(R, 0, XYZW), SRC(C, 20, XYZW) | REL, SRC(AL, 0, XXXX),
        INS(ENDREP, 0),
        INS(BREAKC, 2) | CMP_GT, SRC(R, 0, XXXX), SRC(V, 0, XXXX),
        INS(ENDLOOP, 0),
        OUTC(0), END,
    };
    /* 6: SM3 sincos of 6u: (cos, sin) mapped to [0, 1] */
    const DWORD ps6[] = {
        PS(3, 0), DEF4(0, 6.0, 0.5, 0.0, 1.0), PS_DCLS,
        INS(MUL, 3), DST(R, 1, WX), SRC(V, 0, XXXX), SRC(C, 0, XXXX),
        INS(SINCOS, 2), DST(R, 2, WXY), SRC(R, 1, XXXX),
        INS(MAD, 4), DST(R, 0, WXY), SRC(R, 2, XYZW), SRC(C, 0, YYYY), SRC(C, 0, YYYY),
        INS(MOV, 2), DST(R, 0, WZW), SRC(V, 0, SW(1, 1, 1, 3)),
        INS(MOV, 2), DST(R, 0, WW), SRC(C, 0, WWWW),
        OUTC(0), END,
    };
    /* 7: colour (from the vs loop) times a level-0 texel (texldl at 0) */
    const DWORD ps7[] = {
        PS(3, 0), DEF4(0, 0.0, 0.0, 0.0, 0.0), PS_DCLS,
        INS(MOV, 2), DST(R, 1, WALL), SRC(V, 0, XYZW),
        INS(MOV, 2), DST(R, 1, WW), SRC(C, 0, XXXX),
        INS(TEXLDL, 3), DST(R, 0, WALL), SRC(R, 1, XYZW), SRC(S, 0, XYZW),
        INS(MUL, 3), DST(R, 0, WALL), SRC(R, 0, XYZW), SRC(V, 1, XYZW),
        OUTC(0), END,
    };
    const DWORD *ps_tokens[NCELLS] = {ps0, ps1, ps2, ps3, ps3, ps5, ps6, ps7};
    static const D3DCOLOR corners[4] = {0xFFFF8040, 0xFF40FF80, 0xFF8040FF, 0xFFC0C0C0};
    /* vs: c8 = 0; c9.x = 1.6 (mova rounds to 2: c16); c10-12 summed; c13, c15 wrong answers */
    static const float ps_loop_consts[4][4] = {
        {0.05f, 0.1f, 0, 0}, {0.1f, 0, 0.1f, 0}, {0.15f, 0.05f, 0.05f, 0}, {0.2f, 0.05f, 0, 0},
    };
    static const float vs_consts[9][4] = {
        {0, 0, 0, 1}, {1.6f, 0, 0, 0}, {0.5f, 0.3f, 0.2f, 0.4f}, {0.3f, 0.4f, 0.2f, 0.3f},
        {0.1f, 0.2f, 0.5f, 0.3f}, {9, 9, 9, 9}, {0, 0, 0, 0}, {9, 0, 9, 9}, {0.1f, 0.05f, 0.05f, 0},
    };

    CHECK(IDirect3DDevice9_GetDeviceCaps(dev, &caps));
    if (caps.VertexShaderVersion < D3DVS_VERSION(3, 0) || caps.PixelShaderVersion < D3DPS_VERSION(3, 0)) {
        printf("shaders_3_0_flow: no vs_3_0/ps_3_0 (caps %08lx %08lx): nothing drawn\n",
               (unsigned long)caps.VertexShaderVersion, (unsigned long)caps.PixelShaderVersion);
        return 0;
    }
    tex = make_gradient_mips(dev, SIZE, LEVELS);
    CHECK(IDirect3DDevice9_CreateVertexDeclaration(dev, cell_elements, &decl));
    CHECK(IDirect3DDevice9_CreateVertexShader(dev, vs_tokens, &vs));
    for (i = 0; i < NCELLS; i++) {
        HRESULT hr = IDirect3DDevice9_CreatePixelShader(dev, ps_tokens[i], &ps[i]);
        if (FAILED(hr)) {
            fprintf(stderr, "shaders_3_0_flow: pixel shader %d: 0x%08lx\n", i, (unsigned long)hr);
            return 1;
        }
    }
    plain_state(dev);
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)tex));
    CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MINFILTER, D3DTEXF_LINEAR));
    CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MAGFILTER, D3DTEXF_LINEAR));
    CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MIPFILTER, D3DTEXF_LINEAR));
    CHECK(IDirect3DDevice9_SetVertexDeclaration(dev, decl));
    CHECK(IDirect3DDevice9_SetVertexShader(dev, vs));
    CHECK(IDirect3DDevice9_SetVertexShaderConstantF(dev, 8, &vs_consts[0][0], 9));
    CHECK(IDirect3DDevice9_SetPixelShaderConstantF(dev, 20, &ps_loop_consts[0][0], 4));
    begin_cells(dev);
    for (i = 0; i < NCELLS; i++) {
        CHECK(IDirect3DDevice9_SetPixelShader(dev, ps[i]));
        if (i == 4) {
            /* The same quad mirrored in x: its winding, and so its facing, flips. */
            float m[4][4];
            struct cell_vertex quad[4] = {
                {0, 0, 0.5f, 1, 0, 0, corners[0]}, {1, 0, 0.5f, 1, 1, 0, corners[1]},
                {0, 1, 0.5f, 1, 0, 1, corners[2]}, {1, 1, 0.5f, 1, 1, 1, corners[3]},
            };
            cell_matrix(m, i % 4, i / 4, W, H);
            m[0][3] += m[0][0];
            m[0][0] = -m[0][0];
            CHECK(IDirect3DDevice9_SetVertexShaderConstantF(dev, 0, &m[0][0], 4));
            CHECK(IDirect3DDevice9_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, 2, quad, sizeof(quad[0])));
        } else {
            draw_cell(dev, i % 4, i / 4, W, H, corners);
        }
    }
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, "shaders_3_0_flow.ppm");
    for (i = 0; i < NCELLS; i++)
        if (i != 4)
            IDirect3DPixelShader9_Release(ps[i]);
    IDirect3DPixelShader9_Release(ps[4]);
    IDirect3DTexture9_Release(tex);
    IDirect3DVertexShader9_Release(vs);
    IDirect3DVertexDeclaration9_Release(decl);
    IDirect3DDevice9_Release(dev);
    printf("shaders_3_0_flow: done\n");
    return 0;
}
