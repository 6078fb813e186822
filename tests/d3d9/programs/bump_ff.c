/* Signed V8U8 bump maps, one per 32x32 cell of a 128x64 target, pre-transformed quads (two
 * texture-coordinate sets). Top row, fixed function: stage 0 D3DTOP_BUMPENVMAP moving stage
 * 1's environment-map coordinates by stage 0's bump matrix (SELECTARG1 TEXTURE, then
 * MODULATE with the diffuse colour and another matrix), BUMPENVMAPLUMINANCE with LSCALE and
 * LOFFSET, and the V8U8 texels read as a colour. Bottom row, ps_1_1: texbem and texbeml
 * with stage 1's matrix and luminance, the signed texels shown as 0.5 t0 + 0.5, and texbem
 * with a matrix that swaps du and dv. The bump map is point-sampled (no pixel centre
 * on a texel edge); the 8x8 environment map is linear-filtered with wrap addressing.
 * Writes bump_ff.ppm. Then, when the device has Q8W8V8U8 bump maps, bump_q8.ppm: a 4x4
 * Q8W8V8U8 texture as 0.5 t0 + 0.5 (all four signed channels), as ps_1_1 texbem's and as
 * fixed-function BUMPENVMAPLUMINANCE's bump map (W the luminance). */
#include "common.h"
#include "shader_asm.h"

#define W 128
#define H 64

struct vertex { float x, y, z, rhw; DWORD diffuse; float u0, v0, u1, v1; };
#define FVF (D3DFVF_XYZRHW | D3DFVF_DIFFUSE | D3DFVF_TEX2)

static IDirect3DDevice9 *dev;

static void quad(int col, int row, DWORD top, DWORD bottom) {
    const float l = col * 32 - 0.5f, t = row * 32 - 0.5f;
    struct vertex v[4] = {
        {l, t, 0.5f, 1, top, 0, 0, 0.1f, 0.15f},           {l + 32, t, 0.5f, 1, top, 1, 0, 0.85f, 0.15f},
        {l, t + 32, 0.5f, 1, bottom, 0, 1, 0.1f, 0.8f},    {l + 32, t + 32, 0.5f, 1, bottom, 1, 1, 0.85f, 0.8f},
    };
    CHECK(IDirect3DDevice9_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, 2, v, sizeof(v[0])));
}

static void bump_matrix(DWORD stage, float m00, float m01, float m10, float m11, float lscale, float loffset) {
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, stage, D3DTSS_BUMPENVMAT00, fbits(m00)));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, stage, D3DTSS_BUMPENVMAT01, fbits(m01)));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, stage, D3DTSS_BUMPENVMAT10, fbits(m10)));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, stage, D3DTSS_BUMPENVMAT11, fbits(m11)));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, stage, D3DTSS_BUMPENVLSCALE, fbits(lscale)));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, stage, D3DTSS_BUMPENVLOFFSET, fbits(loffset)));
}

static void stage(DWORD s, DWORD cop, DWORD carg1, DWORD carg2, DWORD aop) {
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, s, D3DTSS_COLOROP, cop));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, s, D3DTSS_COLORARG1, carg1));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, s, D3DTSS_COLORARG2, carg2));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, s, D3DTSS_ALPHAOP, aop));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, s, D3DTSS_ALPHAARG1, D3DTA_DIFFUSE));
}

int main(void) {
    IDirect3D9 *d3d = Direct3DCreate9(D3D_SDK_VERSION);
    IDirect3DTexture9 *bump = NULL, *env = NULL, *q8 = NULL;
    BOOL q8_ok;
    IDirect3DPixelShader9 *ps[3] = {0};
    D3DLOCKED_RECT lr;
    D3DCAPS9 caps;
    DWORD texels[64];
    int x, y, i;
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
    /* The signed texel made visible: 0.5 t0 + 0.5. */
    const DWORD show[] = {
        PS(1, 1), INS1(DEF), DST(C, 0, WALL), F(0.5), F(0.5), F(0.5), F(0.5),
        INS1(TEX), DST(T, 0, WALL),
        INS1(MAD), DST(R, 0, WALL), SRC(T, 0, XYZW), SRC(C, 0, XYZW), SRC(C, 0, XYZW), END,
    };

    if (!d3d || FAILED(IDirect3D9_CheckDeviceFormat(d3d, 0, D3DDEVTYPE_HAL, D3DFMT_X8R8G8B8,
                                                    D3DUSAGE_QUERY_LEGACYBUMPMAP, D3DRTYPE_TEXTURE, D3DFMT_V8U8))) {
        printf("bump_ff: no V8U8 bump maps: nothing drawn\n");
        return 0;
    }
    q8_ok = SUCCEEDED(IDirect3D9_CheckDeviceFormat(d3d, 0, D3DDEVTYPE_HAL, D3DFMT_X8R8G8B8,
                                                   D3DUSAGE_QUERY_LEGACYBUMPMAP, D3DRTYPE_TEXTURE, D3DFMT_Q8W8V8U8));
    IDirect3D9_Release(d3d);
    dev = make_device(W, H, FALSE);
    CHECK(IDirect3DDevice9_GetDeviceCaps(dev, &caps));
    if (!(caps.TextureOpCaps & D3DTEXOPCAPS_BUMPENVMAP) || !(caps.TextureOpCaps & D3DTEXOPCAPS_BUMPENVMAPLUMINANCE)) {
        fprintf(stderr, "bump_ff: no BUMPENVMAP/BUMPENVMAPLUMINANCE in TextureOpCaps\n");
        return 1;
    }
    /* 4x4 signed (du, dv): byte 0 U, byte 1 V, including -128 and 127. */
    CHECK(IDirect3DDevice9_CreateTexture(dev, 4, 4, 1, 0, D3DFMT_V8U8, D3DPOOL_MANAGED, &bump, NULL));
    CHECK(IDirect3DTexture9_LockRect(bump, 0, &lr, NULL, 0));
    for (y = 0; y < 4; y++)
        for (x = 0; x < 4; x++) {
            signed char *p = (signed char *)lr.pBits + y * lr.Pitch + x * 2;
            static const signed char us[4] = {-128, -40, 30, 127}, vs[4] = {90, -100, 10, -60};
            p[0] = (signed char)(us[x] + (x == 0 || x == 3 ? 0 : y * 7));
            p[1] = (signed char)(vs[y] + (y == 1 ? 0 : x * 5));
        }
    CHECK(IDirect3DTexture9_UnlockRect(bump, 0));
    for (y = 0; y < 8; y++)
        for (x = 0; x < 8; x++)
            texels[y * 8 + x] = 0xFF000000u | (DWORD)(x * 32 + 16) << 16 | (DWORD)(y * 28 + 20) << 8 |
                                (DWORD)(((x + y) & 1) ? 200 : 60);
    CHECK(IDirect3DDevice9_CreateTexture(dev, 8, 8, 1, 0, D3DFMT_A8R8G8B8, D3DPOOL_MANAGED, &env, NULL));
    CHECK(IDirect3DTexture9_LockRect(env, 0, &lr, NULL, 0));
    for (y = 0; y < 8; y++)
        memcpy((char *)lr.pBits + y * lr.Pitch, texels + y * 8, 32);
    CHECK(IDirect3DTexture9_UnlockRect(env, 0));
    CHECK(IDirect3DDevice9_CreatePixelShader(dev, texbem, &ps[0]));
    CHECK(IDirect3DDevice9_CreatePixelShader(dev, texbeml, &ps[1]));
    CHECK(IDirect3DDevice9_CreatePixelShader(dev, show, &ps[2]));

    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_CULLMODE, D3DCULL_NONE));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_LIGHTING, FALSE));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_ZENABLE, D3DZB_FALSE));
    CHECK(IDirect3DDevice9_SetFVF(dev, FVF));
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)bump));
    CHECK(IDirect3DDevice9_SetTexture(dev, 1, (IDirect3DBaseTexture9 *)env));
    CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MAGFILTER, D3DTEXF_POINT));
    CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MINFILTER, D3DTEXF_POINT));
    CHECK(IDirect3DDevice9_SetSamplerState(dev, 1, D3DSAMP_MAGFILTER, D3DTEXF_LINEAR));
    CHECK(IDirect3DDevice9_SetSamplerState(dev, 1, D3DSAMP_MINFILTER, D3DTEXF_LINEAR));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, 0, D3DTSS_TEXCOORDINDEX, 0));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, 1, D3DTSS_TEXCOORDINDEX, 1));
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0, 0, 40), 1.0f, 0));
    CHECK(IDirect3DDevice9_BeginScene(dev));
    /* Top row: fixed function. */
    bump_matrix(0, 0.25f, 0.125f, -0.125f, 0.25f, 0.5f, 0.25f);
    stage(0, D3DTOP_BUMPENVMAP, D3DTA_TEXTURE, D3DTA_DIFFUSE, D3DTOP_SELECTARG1);
    stage(1, D3DTOP_SELECTARG1, D3DTA_TEXTURE, D3DTA_CURRENT, D3DTOP_SELECTARG1);
    quad(0, 0, 0xFFFFFFFF, 0xFFFFFFFF);
    bump_matrix(0, -0.375f, 0.0f, 0.25f, 0.5f, 0.5f, 0.25f);
    stage(1, D3DTOP_MODULATE, D3DTA_TEXTURE, D3DTA_CURRENT, D3DTOP_SELECTARG1);
    quad(1, 0, 0xFFFFC080, 0xFF80C0FF);
    bump_matrix(0, 0.25f, 0.125f, -0.125f, 0.25f, 0.5f, -0.125f);
    stage(0, D3DTOP_BUMPENVMAPLUMINANCE, D3DTA_TEXTURE, D3DTA_DIFFUSE, D3DTOP_SELECTARG1);
    stage(1, D3DTOP_SELECTARG1, D3DTA_TEXTURE, D3DTA_CURRENT, D3DTOP_SELECTARG1);
    quad(2, 0, 0xFFFFFFFF, 0xFFFFFFFF);
    stage(0, D3DTOP_SELECTARG1, D3DTA_TEXTURE, D3DTA_DIFFUSE, D3DTOP_SELECTARG1);
    stage(1, D3DTOP_DISABLE, D3DTA_TEXTURE, D3DTA_CURRENT, D3DTOP_DISABLE);
    quad(3, 0, 0xFFFFFFFF, 0xFFFFFFFF);
    /* Bottom row: ps_1_1 with stage 1's bump environment. */
    bump_matrix(1, 0.25f, 0.125f, -0.125f, 0.25f, 0.75f, 0.125f);
    for (i = 0; i < 3; i++) {
        CHECK(IDirect3DDevice9_SetPixelShader(dev, ps[i]));
        quad(i, 1, 0xFFFFFFFF, 0xFFFFFFFF);
    }
    bump_matrix(1, 0.0f, 0.3125f, 0.3125f, 0.0f, 1.0f, 0.0f);
    CHECK(IDirect3DDevice9_SetPixelShader(dev, ps[0]));
    quad(3, 1, 0xFFFFFFFF, 0xFFFFFFFF);
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, "bump_ff.ppm");

    if (q8_ok) {
        CHECK(IDirect3DDevice9_CreateTexture(dev, 4, 4, 1, 0, D3DFMT_Q8W8V8U8, D3DPOOL_MANAGED, &q8, NULL));
        CHECK(IDirect3DTexture9_LockRect(q8, 0, &lr, NULL, 0));
        for (y = 0; y < 4; y++)
            for (x = 0; x < 4; x++) {
                signed char *p = (signed char *)lr.pBits + y * lr.Pitch + x * 4;
                p[0] = (signed char)(x * 70 - 128), p[1] = (signed char)(100 - y * 60);
                p[2] = (signed char)(x * 30 + y * 20), p[3] = (signed char)(-90 + (x + y) * 25);
            }
        CHECK(IDirect3DTexture9_UnlockRect(q8, 0));
        CHECK(IDirect3DDevice9_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)q8));
        CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0, 0, 40), 1.0f, 0));
        CHECK(IDirect3DDevice9_BeginScene(dev));
        bump_matrix(1, 0.25f, 0.125f, -0.125f, 0.25f, 0.75f, 0.125f);
        CHECK(IDirect3DDevice9_SetPixelShader(dev, ps[2]));
        quad(0, 0, 0xFFFFFFFF, 0xFFFFFFFF);
        CHECK(IDirect3DDevice9_SetPixelShader(dev, ps[0]));
        quad(1, 0, 0xFFFFFFFF, 0xFFFFFFFF);
        CHECK(IDirect3DDevice9_SetPixelShader(dev, NULL));
        bump_matrix(0, -0.375f, 0.0f, 0.25f, 0.5f, 0.5f, 0.25f);
        stage(0, D3DTOP_BUMPENVMAPLUMINANCE, D3DTA_TEXTURE, D3DTA_DIFFUSE, D3DTOP_SELECTARG1);
        stage(1, D3DTOP_SELECTARG1, D3DTA_TEXTURE, D3DTA_CURRENT, D3DTOP_SELECTARG1);
        quad(2, 0, 0xFFFFFFFF, 0xFFFFFFFF);
        CHECK(IDirect3DDevice9_EndScene(dev));
        save_back_buffer(dev, "bump_q8.ppm");
        IDirect3DTexture9_Release(q8);
    }
    for (i = 0; i < 3; i++)
        IDirect3DPixelShader9_Release(ps[i]);
    IDirect3DTexture9_Release(env);
    IDirect3DTexture9_Release(bump);
    IDirect3DDevice9_Release(dev);
    printf("bump_ff: done\n");
    return 0;
}
