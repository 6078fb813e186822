/* Render to texture and StretchRect: coloured quads drawn into level 0 of a 32x32
 * render-target texture, which is then (1) sampled (point) by a quad covering the left
 * half of the 64x32 back buffer, and (2) StretchRect-ed (point) from a 16x16 corner to
 * the 32x32 right half, a 2x scale. Edges are half a pixel off the centres.
 * Writes render_to_texture.ppm. */
#include "common.h"

static const DWORD color_vs[] = {
    0xFFFE0200, 0x0200001F, 0x80000000, 0x900F0000, 0x0200001F, 0x8000000A, 0x900F0001,
    0x02000001, 0xC00F0000, 0x90E40000, 0x02000001, 0xD00F0000, 0x90E40001, 0x0000FFFF,
};
static const DWORD color_ps[] = {
    0xFFFF0200, 0x0200001F, 0x80000000, 0x900F0000, 0x02000001, 0x800F0800, 0x90E40000, 0x0000FFFF,
};
static const DWORD tex_vs[] = {
    0xFFFE0200, 0x0200001F, 0x80000000, 0x900F0000, 0x0200001F, 0x80000005, 0x900F0001,
    0x02000001, 0xC00F0000, 0x90E40000, 0x02000001, 0xE00F0000, 0x90E40001, 0x0000FFFF,
};
static const DWORD tex_ps[] = {
    0xFFFF0200, 0x0200001F, 0x80000000, 0xB0030000, 0x0200001F, 0x90000000, 0xA00F0800,
    0x03000042, 0x800F0000, 0xB0E40000, 0xA0E40800, 0x02000001, 0x800F0800, 0x80E40000, 0x0000FFFF,
};

struct cvertex { float x, y, z, w; DWORD color; };
struct tvertex { float x, y, z, w, u, v; };

/* Clip-space edges of pixels [x0,x1) x [y0,y1) in a w x h target. */
static void edges(int w, int h, int x0, int y0, int x1, int y1, float *l, float *t, float *r, float *b) {
    *l = (x0 - 0.5f) * 2 / w - 1;
    *r = (x1 - 0.5f) * 2 / w - 1;
    *t = 1 - (y0 - 0.5f) * 2 / h;
    *b = 1 - (y1 - 0.5f) * 2 / h;
}

static void color_quad(IDirect3DDevice9 *dev, int w, int h, int x0, int y0, int x1, int y1, DWORD c) {
    float l, t, r, b;
    struct cvertex v[4];
    edges(w, h, x0, y0, x1, y1, &l, &t, &r, &b);
    v[0] = (struct cvertex){l, t, 0.5f, 1, c};
    v[1] = (struct cvertex){r, t, 0.5f, 1, c};
    v[2] = (struct cvertex){l, b, 0.5f, 1, c};
    v[3] = (struct cvertex){r, b, 0.5f, 1, c};
    CHECK(IDirect3DDevice9_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, 2, v, sizeof(v[0])));
}

int main(void) {
    IDirect3DDevice9 *dev = make_device(64, 32, FALSE);
    IDirect3DTexture9 *tex = NULL;
    IDirect3DSurface9 *level = NULL, *bb = NULL;
    IDirect3DVertexShader9 *cvs = NULL, *tvs = NULL;
    IDirect3DPixelShader9 *cps = NULL, *tps = NULL;
    IDirect3DVertexDeclaration9 *color_decl = NULL, *tex_decl = NULL;
    D3DVERTEXELEMENT9 ce[] = {
        {0, 0, D3DDECLTYPE_FLOAT4, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_POSITION, 0},
        {0, 16, D3DDECLTYPE_D3DCOLOR, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_COLOR, 0},
        D3DDECL_END(),
    };
    D3DVERTEXELEMENT9 te[] = {
        {0, 0, D3DDECLTYPE_FLOAT4, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_POSITION, 0},
        {0, 16, D3DDECLTYPE_FLOAT2, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_TEXCOORD, 0},
        D3DDECL_END(),
    };
    RECT corner = {0, 0, 16, 16}, right = {32, 0, 64, 32};
    float l, t, r, b;
    struct tvertex q[4];

    CHECK(IDirect3DDevice9_CreateVertexShader(dev, color_vs, &cvs));
    CHECK(IDirect3DDevice9_CreatePixelShader(dev, color_ps, &cps));
    CHECK(IDirect3DDevice9_CreateVertexShader(dev, tex_vs, &tvs));
    CHECK(IDirect3DDevice9_CreatePixelShader(dev, tex_ps, &tps));
    CHECK(IDirect3DDevice9_CreateVertexDeclaration(dev, ce, &color_decl));
    CHECK(IDirect3DDevice9_CreateVertexDeclaration(dev, te, &tex_decl));
    CHECK(IDirect3DDevice9_CreateTexture(dev, 32, 32, 1, D3DUSAGE_RENDERTARGET, D3DFMT_X8R8G8B8, D3DPOOL_DEFAULT,
                                         &tex, NULL));
    CHECK(IDirect3DTexture9_GetSurfaceLevel(tex, 0, &level));
    CHECK(IDirect3DDevice9_GetBackBuffer(dev, 0, 0, D3DBACKBUFFER_TYPE_MONO, &bb));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_CULLMODE, D3DCULL_NONE));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_ZENABLE, D3DZB_FALSE));

    /* Into the texture. */
    CHECK(IDirect3DDevice9_SetRenderTarget(dev, 0, level));
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0x20, 0x40, 0x60), 1.0f, 0));
    CHECK(IDirect3DDevice9_BeginScene(dev));
    CHECK(IDirect3DDevice9_SetVertexShader(dev, cvs));
    CHECK(IDirect3DDevice9_SetPixelShader(dev, cps));
    CHECK(IDirect3DDevice9_SetVertexDeclaration(dev, color_decl));
    color_quad(dev, 32, 32, 2, 2, 12, 10, D3DCOLOR_XRGB(0xFF, 0x20, 0x20));
    color_quad(dev, 32, 32, 6, 6, 15, 15, D3DCOLOR_XRGB(0x20, 0xFF, 0x20));
    color_quad(dev, 32, 32, 16, 3, 30, 29, D3DCOLOR_XRGB(0xE0, 0xE0, 0x20));
    CHECK(IDirect3DDevice9_EndScene(dev));

    /* Into the back buffer: sampled on the left, stretched on the right. */
    CHECK(IDirect3DDevice9_SetRenderTarget(dev, 0, bb));
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0, 0, 0), 1.0f, 0));
    CHECK(IDirect3DDevice9_BeginScene(dev));
    CHECK(IDirect3DDevice9_SetVertexShader(dev, tvs));
    CHECK(IDirect3DDevice9_SetPixelShader(dev, tps));
    CHECK(IDirect3DDevice9_SetVertexDeclaration(dev, tex_decl));
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)tex));
    CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MAGFILTER, D3DTEXF_POINT));
    CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MINFILTER, D3DTEXF_POINT));
    edges(64, 32, 0, 0, 32, 32, &l, &t, &r, &b);
    q[0] = (struct tvertex){l, t, 0.5f, 1, 0, 0};
    q[1] = (struct tvertex){r, t, 0.5f, 1, 1, 0};
    q[2] = (struct tvertex){l, b, 0.5f, 1, 0, 1};
    q[3] = (struct tvertex){r, b, 0.5f, 1, 1, 1};
    CHECK(IDirect3DDevice9_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, 2, q, sizeof(q[0])));
    CHECK(IDirect3DDevice9_EndScene(dev));
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, NULL));
    CHECK(IDirect3DDevice9_StretchRect(dev, level, &corner, bb, &right, D3DTEXF_POINT));
    save_rt(dev, bb, "render_to_texture.ppm");

    IDirect3DSurface9_Release(bb);
    IDirect3DSurface9_Release(level);
    IDirect3DTexture9_Release(tex);
    IDirect3DVertexDeclaration9_Release(tex_decl);
    IDirect3DVertexDeclaration9_Release(color_decl);
    IDirect3DPixelShader9_Release(tps);
    IDirect3DPixelShader9_Release(cps);
    IDirect3DVertexShader9_Release(tvs);
    IDirect3DVertexShader9_Release(cvs);
    IDirect3DDevice9_Release(dev);
    printf("render_to_texture: done\n");
    return 0;
}
