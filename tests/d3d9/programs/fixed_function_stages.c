/* Fixed-function texture stages: no shaders bound. 16 pre-transformed quads (XYZRHW,
 * diffuse and specular colours with alpha, two texture-coordinate sets), 32x32 pixels each
 * in a 128x128 back buffer, each with its own COLOROP/ALPHAOP setup: the modulate, add,
 * subtract and blend ops, DOTPRODUCT3, MULTIPLYADD/LERP with ARG0, COMPLEMENT and
 * ALPHAREPLICATE arguments, TFACTOR and per-stage CONSTANT, TEXCOORDINDEX, a second stage
 * and RESULTARG TEMP. Alpha blending (SRCALPHA, INVSRCALPHA) over a grey background makes
 * the alpha results visible. Point-sampled 8x8 and 4x4 textures; no pixel centre falls on a
 * texel or quad edge. Writes ff_stages.ppm.
 * Then ff_switch.ppm: app shaders reading constants set once (vs c0, ps c1), a fixed-function
 * draw in between (whose generated shaders use those registers too), and the app shaders
 * again, which must still see the app's values.
 * Then ff_texture_transform.ppm: texture matrices (D3DTSS_TEXTURETRANSFORMFLAGS) on
 * untransformed quads: none, COUNT2 scale and translate (a 2D set multiplies as (u, v, 1)),
 * COUNT2 shear, COUNT3 | PROJECTED on a 3D set. */
#include <string.h>

#include "common.h"

struct vertex { float x, y, z, rhw; DWORD diffuse, specular; float u0, v0, u1, v1; };
#define FVF (D3DFVF_XYZRHW | D3DFVF_DIFFUSE | D3DFVF_SPECULAR | D3DFVF_TEX2)

static IDirect3DDevice9 *dev;

/* vs_2_0: dcl_position v0; mov oPos, v0; mov oD0, c0. ps_2_0: dcl v0; add oC0, v0, c1. */
static const DWORD app_vs[] = {
    0xFFFE0200, 0x0200001F, 0x80000000, 0x900F0000, 0x02000001, 0xC00F0000, 0x90E40000,
    0x02000001, 0xD00F0000, 0xA0E40000, 0x0000FFFF,
};
static const DWORD app_ps[] = {
    0xFFFF0200, 0x0200001F, 0x80000000, 0x900F0000, 0x03000002, 0x800F0800, 0x90E40000, 0xA0E40001,
    0x0000FFFF,
};

/* A quad over pixel columns [x0, x0 + 32) of a 128x32 target, in clip space for app_vs. */
static void app_quad(IDirect3DVertexShader9 *vs, IDirect3DPixelShader9 *ps, IDirect3DVertexDeclaration9 *decl,
                     int x0) {
    const float l = (float)x0 / 64 - 1, r = (float)(x0 + 32) / 64 - 1, hx = 1.0f / 128, hy = 1.0f / 32;
    float v[4][4] = {{l - hx, 1 + hy, 0.5f, 1}, {r - hx, 1 + hy, 0.5f, 1}, {l - hx, -1 + hy, 0.5f, 1},
                     {r - hx, -1 + hy, 0.5f, 1}};
    CHECK(IDirect3DDevice9_SetVertexShader(dev, vs));
    CHECK(IDirect3DDevice9_SetPixelShader(dev, ps));
    CHECK(IDirect3DDevice9_SetVertexDeclaration(dev, decl));
    CHECK(IDirect3DDevice9_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, 2, v, sizeof(v[0])));
}

struct xyz_vertex { float x, y, z; DWORD diffuse; float u, v, q; };

/* A quad over pixel columns [x0, x0 + 32) of a 128x32 target through identity transforms;
 * texture coordinates (u q, v q, q). */
static void transformed_quad(int x0, float q, DWORD fvf) {
    const float l = (float)x0 / 64 - 1, r = (float)(x0 + 32) / 64 - 1, hx = 1.0f / 128, hy = 1.0f / 32;
    struct xyz_vertex v[4] = {
        {l - hx, 1 + hy, 0.5f, 0xFFFFFFFF, 0, 0, q},     {r - hx, 1 + hy, 0.5f, 0xFFFFFFFF, q, 0, q},
        {l - hx, -1 + hy, 0.5f, 0xFFFFFFFF, 0, q, q},    {r - hx, -1 + hy, 0.5f, 0xFFFFFFFF, q, q, q},
    };
    CHECK(IDirect3DDevice9_SetFVF(dev, fvf));
    if (fvf & D3DFVF_TEXCOORDSIZE3(0)) {
        CHECK(IDirect3DDevice9_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, 2, v, sizeof(v[0])));
    } else {
        /* The same vertices without q. */
        float p[4][6];
        int i;
        for (i = 0; i < 4; i++) {
            memcpy(p[i], &v[i], 4 * sizeof(float));
            p[i][4] = v[i].u, p[i][5] = v[i].v;
        }
        CHECK(IDirect3DDevice9_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, 2, p, sizeof(p[0])));
    }
}

static void texture_transforms(IDirect3DTexture9 *ta) {
    IDirect3DSurface9 *rt = NULL, *old = NULL;
    D3DMATRIX m;
    CHECK(IDirect3DDevice9_CreateRenderTarget(dev, 128, 32, D3DFMT_X8R8G8B8, D3DMULTISAMPLE_NONE, 0, FALSE, &rt, NULL));
    CHECK(IDirect3DDevice9_GetRenderTarget(dev, 0, &old));
    CHECK(IDirect3DDevice9_SetRenderTarget(dev, 0, rt));
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)ta));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, 0, D3DTSS_COLOROP, D3DTOP_SELECTARG1));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, 0, D3DTSS_COLORARG1, D3DTA_TEXTURE));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, 0, D3DTSS_TEXCOORDINDEX, 0));
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0x20, 0x20, 0x20), 1.0f, 0));
    CHECK(IDirect3DDevice9_BeginScene(dev));
    transformed_quad(0, 1, D3DFVF_XYZ | D3DFVF_DIFFUSE | D3DFVF_TEX1);
    memset(&m, 0, sizeof(m));
    m._11 = 2.0f, m._22 = 0.5f, m._31 = 0.25f, m._33 = 1.0f, m._44 = 1.0f;
    CHECK(IDirect3DDevice9_SetTransform(dev, D3DTS_TEXTURE0, &m));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, 0, D3DTSS_TEXTURETRANSFORMFLAGS, D3DTTFF_COUNT2));
    transformed_quad(32, 1, D3DFVF_XYZ | D3DFVF_DIFFUSE | D3DFVF_TEX1);
    memset(&m, 0, sizeof(m));
    m._11 = 1.0f, m._21 = 0.5f, m._22 = 1.0f, m._33 = 1.0f, m._44 = 1.0f;
    CHECK(IDirect3DDevice9_SetTransform(dev, D3DTS_TEXTURE0, &m));
    transformed_quad(64, 1, D3DFVF_XYZ | D3DFVF_DIFFUSE | D3DFVF_TEX1);
    memset(&m, 0, sizeof(m));
    m._11 = m._22 = m._33 = m._44 = 1.0f;
    CHECK(IDirect3DDevice9_SetTransform(dev, D3DTS_TEXTURE0, &m));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, 0, D3DTSS_TEXTURETRANSFORMFLAGS,
                                                D3DTTFF_COUNT3 | D3DTTFF_PROJECTED));
    transformed_quad(96, 2, D3DFVF_XYZ | D3DFVF_DIFFUSE | D3DFVF_TEX1 | D3DFVF_TEXCOORDSIZE3(0));
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_rt(dev, rt, "ff_texture_transform.ppm");
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, 0, D3DTSS_TEXTURETRANSFORMFLAGS, D3DTTFF_DISABLE));
    CHECK(IDirect3DDevice9_SetRenderTarget(dev, 0, old));
    IDirect3DSurface9_Release(old);
    IDirect3DSurface9_Release(rt);
}

static void switching(void) {
    static const D3DVERTEXELEMENT9 elements[] = {
        {0, 0, D3DDECLTYPE_FLOAT4, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_POSITION, 0},
        D3DDECL_END(),
    };
    const float vs_c0[4] = {0.2f, 0.4f, 0.1f, 1.0f}, ps_c1[4] = {0.3f, 0.0f, 0.5f, 0.0f};
    IDirect3DVertexShader9 *vs = NULL;
    IDirect3DPixelShader9 *ps = NULL;
    IDirect3DVertexDeclaration9 *decl = NULL;
    IDirect3DSurface9 *rt = NULL, *old = NULL;
    struct vertex ff[4] = {
        {31.5f, -0.5f, 0.5f, 1, 0xFFFF8000, 0, 0, 0, 0, 0}, {63.5f, -0.5f, 0.5f, 1, 0xFFFF8000, 0, 0, 0, 0, 0},
        {31.5f, 31.5f, 0.5f, 1, 0xFF0080FF, 0, 0, 0, 0, 0}, {63.5f, 31.5f, 0.5f, 1, 0xFF0080FF, 0, 0, 0, 0, 0},
    };
    CHECK(IDirect3DDevice9_CreateRenderTarget(dev, 128, 32, D3DFMT_X8R8G8B8, D3DMULTISAMPLE_NONE, 0, FALSE, &rt, NULL));
    CHECK(IDirect3DDevice9_GetRenderTarget(dev, 0, &old));
    CHECK(IDirect3DDevice9_SetRenderTarget(dev, 0, rt));
    CHECK(IDirect3DDevice9_CreateVertexShader(dev, app_vs, &vs));
    CHECK(IDirect3DDevice9_CreatePixelShader(dev, app_ps, &ps));
    CHECK(IDirect3DDevice9_CreateVertexDeclaration(dev, elements, &decl));
    CHECK(IDirect3DDevice9_SetVertexShaderConstantF(dev, 0, vs_c0, 1));
    CHECK(IDirect3DDevice9_SetPixelShaderConstantF(dev, 1, ps_c1, 1));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_ALPHABLENDENABLE, FALSE));
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0x20, 0x20, 0x20), 1.0f, 0));
    CHECK(IDirect3DDevice9_BeginScene(dev));
    app_quad(vs, ps, decl, 0);
    /* Fixed function (no shaders): diffuse only. */
    CHECK(IDirect3DDevice9_SetVertexShader(dev, NULL));
    CHECK(IDirect3DDevice9_SetPixelShader(dev, NULL));
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, NULL));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, 0, D3DTSS_COLOROP, D3DTOP_SELECTARG1));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, 0, D3DTSS_COLORARG1, D3DTA_DIFFUSE));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, 0, D3DTSS_RESULTARG, D3DTA_CURRENT));
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, 1, D3DTSS_COLOROP, D3DTOP_DISABLE));
    CHECK(IDirect3DDevice9_SetFVF(dev, FVF));
    CHECK(IDirect3DDevice9_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, 2, ff, sizeof(struct vertex)));
    /* The app's shaders again: the constants they read are the app's. */
    app_quad(vs, ps, decl, 64);
    /* Only the pixel stage fixed: the app's vertex shader with a generated pixel shader. */
    CHECK(IDirect3DDevice9_SetPixelShader(dev, NULL));
    {
        const float l = 0.5f, r = 1.0f, hx = 1.0f / 128, hy = 1.0f / 32;
        float v[4][4] = {{l - hx, 1 + hy, 0.5f, 1}, {r - hx, 1 + hy, 0.5f, 1}, {l - hx, -1 + hy, 0.5f, 1},
                         {r - hx, -1 + hy, 0.5f, 1}};
        CHECK(IDirect3DDevice9_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, 2, v, sizeof(v[0])));
    }
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_rt(dev, rt, "ff_switch.ppm");
    CHECK(IDirect3DDevice9_SetRenderTarget(dev, 0, old));
    CHECK(IDirect3DDevice9_SetVertexShader(dev, NULL));
    IDirect3DSurface9_Release(old);
    IDirect3DSurface9_Release(rt);
    IDirect3DVertexDeclaration9_Release(decl);
    IDirect3DPixelShader9_Release(ps);
    IDirect3DVertexShader9_Release(vs);
}

static void tss(DWORD stage, D3DTEXTURESTAGESTATETYPE t, DWORD v) {
    CHECK(IDirect3DDevice9_SetTextureStageState(dev, stage, t, v));
}

/* One stage's colour and alpha setup. */
static void stage(DWORD s, DWORD cop, DWORD c1, DWORD c2, DWORD aop, DWORD a1, DWORD a2) {
    tss(s, D3DTSS_COLOROP, cop);
    tss(s, D3DTSS_COLORARG1, c1);
    tss(s, D3DTSS_COLORARG2, c2);
    tss(s, D3DTSS_ALPHAOP, aop);
    tss(s, D3DTSS_ALPHAARG1, a1);
    tss(s, D3DTSS_ALPHAARG2, a2);
}

static IDirect3DTexture9 *texture(UINT n, DWORD (*texel)(UINT x, UINT y)) {
    IDirect3DTexture9 *t = NULL;
    D3DLOCKED_RECT lr;
    UINT x, y;
    CHECK(IDirect3DDevice9_CreateTexture(dev, n, n, 1, 0, D3DFMT_A8R8G8B8, D3DPOOL_MANAGED, &t, NULL));
    CHECK(IDirect3DTexture9_LockRect(t, 0, &lr, NULL, 0));
    for (y = 0; y < n; y++)
        for (x = 0; x < n; x++) ((DWORD *)((BYTE *)lr.pBits + y * lr.Pitch))[x] = texel(x, y);
    CHECK(IDirect3DTexture9_UnlockRect(t, 0));
    return t;
}
static DWORD texel_a(UINT x, UINT y) {
    return D3DCOLOR_ARGB(40 + 30 * x, 255 - 30 * x, 30 * y + 20, ((x ^ y) & 1) ? 220 : 60);
}
static DWORD texel_b(UINT x, UINT y) { return D3DCOLOR_ARGB(255 - 60 * y, 60 * x + 40, 200 - 40 * y, 90 + 50 * x); }

static void quad(int cell) {
    const float x0 = (float)(cell % 4) * 32 - 0.5f, y0 = (float)(cell / 4) * 32 - 0.5f;
    struct vertex v[4] = {
        {x0, y0, 0.5f, 1, D3DCOLOR_ARGB(255, 255, 64, 32), D3DCOLOR_ARGB(255, 20, 40, 90), 0, 0, 1, 0},
        {x0 + 32, y0, 0.5f, 1, D3DCOLOR_ARGB(128, 32, 255, 64), D3DCOLOR_ARGB(128, 20, 40, 90), 1, 0, 1, 1},
        {x0, y0 + 32, 0.5f, 1, D3DCOLOR_ARGB(200, 64, 32, 255), D3DCOLOR_ARGB(64, 90, 40, 20), 0, 1, 0, 0},
        {x0 + 32, y0 + 32, 0.5f, 1, D3DCOLOR_ARGB(30, 200, 200, 200), D3DCOLOR_ARGB(0, 90, 40, 20), 1, 1, 0, 1},
    };
    CHECK(IDirect3DDevice9_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, 2, v, sizeof(struct vertex)));
}

int main(void) {
    IDirect3DTexture9 *ta, *tb;
    const DWORD TEX = D3DTA_TEXTURE, DIF = D3DTA_DIFFUSE, CUR = D3DTA_CURRENT, TF = D3DTA_TFACTOR;
    const DWORD SPEC = D3DTA_SPECULAR;
    DWORD s;
    dev = make_device(128, 128, FALSE);
    ta = texture(8, texel_a);
    tb = texture(4, texel_b);
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)ta));
    CHECK(IDirect3DDevice9_SetTexture(dev, 1, (IDirect3DBaseTexture9 *)tb));
    for (s = 0; s < 2; s++) {
        CHECK(IDirect3DDevice9_SetSamplerState(dev, s, D3DSAMP_MAGFILTER, D3DTEXF_POINT));
        CHECK(IDirect3DDevice9_SetSamplerState(dev, s, D3DSAMP_MINFILTER, D3DTEXF_POINT));
    }
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_CULLMODE, D3DCULL_NONE));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_ZENABLE, D3DZB_FALSE));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_LIGHTING, FALSE));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_ALPHABLENDENABLE, TRUE));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_SRCBLEND, D3DBLEND_SRCALPHA));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_DESTBLEND, D3DBLEND_INVSRCALPHA));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_TEXTUREFACTOR, D3DCOLOR_ARGB(0x70, 0x30, 0xA0, 0xE0)));
    CHECK(IDirect3DDevice9_SetFVF(dev, FVF));
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0x60, 0x60, 0x60), 1.0f, 0));
    CHECK(IDirect3DDevice9_BeginScene(dev));

    /* Row 0: the default stage 0 (MODULATE texture x diffuse, alpha = texture), then the scaled modulates. */
    quad(0);
    stage(0, D3DTOP_MODULATE2X, TEX, DIF, D3DTOP_MODULATE, TEX, DIF);
    quad(1);
    stage(0, D3DTOP_MODULATE4X, TEX, DIF, D3DTOP_SELECTARG2, TEX, DIF);
    quad(2);
    stage(0, D3DTOP_ADD, TEX, DIF, D3DTOP_ADD, TEX, DIF);
    quad(3);
    /* Row 1: signed and smooth adds, subtract. */
    stage(0, D3DTOP_ADDSIGNED, TEX, DIF, D3DTOP_ADDSIGNED, TEX, DIF);
    quad(4);
    stage(0, D3DTOP_ADDSIGNED2X, TEX, DIF, D3DTOP_SUBTRACT, DIF, TEX);
    quad(5);
    stage(0, D3DTOP_SUBTRACT, TEX, DIF, D3DTOP_ADDSMOOTH, TEX, DIF);
    quad(6);
    stage(0, D3DTOP_ADDSMOOTH, TEX, DIF, D3DTOP_MODULATE, TEX, TF);
    quad(7);
    /* Row 2: the blends. */
    stage(0, D3DTOP_BLENDDIFFUSEALPHA, TEX, TF, D3DTOP_SELECTARG1, DIF, TEX);
    quad(8);
    stage(0, D3DTOP_BLENDTEXTUREALPHA, DIF, TF, D3DTOP_BLENDTEXTUREALPHA, DIF, TF);
    quad(9);
    stage(0, D3DTOP_BLENDFACTORALPHA, TEX, DIF, D3DTOP_BLENDFACTORALPHA, TEX, DIF);
    quad(10);
    /* Stage 1 reads texture B through coordinate set 1, blending by the current alpha. */
    stage(0, D3DTOP_SELECTARG1, DIF, TEX, D3DTOP_SELECTARG1, DIF, TEX);
    stage(1, D3DTOP_BLENDCURRENTALPHA, TEX, TF, D3DTOP_SELECTARG1, CUR, TEX);
    tss(1, D3DTSS_TEXCOORDINDEX, 1);
    quad(11);
    /* Row 3: DOTPRODUCT3 (all four channels), replicate/complement, MULTIPLYADD/LERP, TEMP. */
    tss(1, D3DTSS_COLOROP, D3DTOP_DISABLE);
    tss(1, D3DTSS_ALPHAOP, D3DTOP_DISABLE);
    stage(0, D3DTOP_DOTPRODUCT3, TEX, TF, D3DTOP_SELECTARG1, TEX, DIF);
    quad(12);
    stage(0, D3DTOP_SELECTARG1, TEX | D3DTA_ALPHAREPLICATE, DIF, D3DTOP_SELECTARG1, DIF | D3DTA_COMPLEMENT, TEX);
    quad(13);
    stage(0, D3DTOP_MULTIPLYADD, TEX, DIF, D3DTOP_LERP, TEX, DIF);
    tss(0, D3DTSS_COLORARG0, SPEC);
    tss(0, D3DTSS_ALPHAARG0, TF);
    quad(14);
    /* Stage 0 into TEMP; stage 1: (1 - temp) x CONSTANT + current (the diffuse, untouched). */
    stage(0, D3DTOP_MODULATE, TEX, DIF, D3DTOP_SELECTARG1, TEX, DIF);
    tss(0, D3DTSS_RESULTARG, D3DTA_TEMP);
    stage(1, D3DTOP_MULTIPLYADD, D3DTA_TEMP | D3DTA_COMPLEMENT, D3DTA_CONSTANT, D3DTOP_MODULATE, D3DTA_TEMP, CUR);
    tss(1, D3DTSS_COLORARG0, CUR);
    tss(1, D3DTSS_CONSTANT, D3DCOLOR_ARGB(0xFF, 0x80, 0x40, 0x20));
    quad(15);
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, "ff_stages.ppm");
    switching();
    texture_transforms(ta);

    CHECK(IDirect3DDevice9_Present(dev, NULL, NULL, NULL, NULL));
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, NULL));
    CHECK(IDirect3DDevice9_SetTexture(dev, 1, NULL));
    IDirect3DTexture9_Release(ta);
    IDirect3DTexture9_Release(tb);
    IDirect3DDevice9_Release(dev);
    printf("fixed_function_stages: done\n");
    return 0;
}
