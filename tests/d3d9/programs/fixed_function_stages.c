/* Fixed-function texture stages: no shaders bound. 16 pre-transformed quads (XYZRHW,
 * diffuse and specular colours with alpha, two texture-coordinate sets), 32x32 pixels each
 * in a 128x128 back buffer, each with its own COLOROP/ALPHAOP setup: the modulate, add,
 * subtract and blend ops, DOTPRODUCT3, MULTIPLYADD/LERP with ARG0, COMPLEMENT and
 * ALPHAREPLICATE arguments, TFACTOR and per-stage CONSTANT, TEXCOORDINDEX, a second stage
 * and RESULTARG TEMP. Alpha blending (SRCALPHA, INVSRCALPHA) over a grey background makes
 * the alpha results visible. Point-sampled 8x8 and 4x4 textures; no pixel centre falls on a
 * texel or quad edge. Writes ff_stages.ppm. */
#include <string.h>

#include "common.h"

struct vertex { float x, y, z, rhw; DWORD diffuse, specular; float u0, v0, u1, v1; };
#define FVF (D3DFVF_XYZRHW | D3DFVF_DIFFUSE | D3DFVF_SPECULAR | D3DFVF_TEX2)

static IDirect3DDevice9 *dev;

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

    CHECK(IDirect3DDevice9_Present(dev, NULL, NULL, NULL, NULL));
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, NULL));
    CHECK(IDirect3DDevice9_SetTexture(dev, 1, NULL));
    IDirect3DTexture9_Release(ta);
    IDirect3DTexture9_Release(tb);
    IDirect3DDevice9_Release(dev);
    printf("fixed_function_stages: done\n");
    return 0;
}
