/* Depth and two-sided stencil on a D24S8 auto depth buffer (64x32, 4 cells):
 * 1. depth LESS: a far quad then a nearer overlapping one, then a farther one that must fail;
 * 2. depth write off: a near quad that does not write depth, a farther one still drawn;
 * 3. two-sided stencil: a clockwise quad increments, a counter-clockwise one decrements
 *    (CCW_STENCIL*) the stencil, then a full-cell quad draws only where stencil == 1;
 * 4. depth GREATER after clearing depth to 0.5.
 * Triangle edges are half a pixel off the pixel centres. Writes depth_stencil.ppm. */
#include "common.h"

static const DWORD vs_tokens[] = {
    0xFFFE0200, 0x0200001F, 0x80000000, 0x900F0000, 0x0200001F, 0x8000000A, 0x900F0001,
    0x02000001, 0xC00F0000, 0x90E40000, 0x02000001, 0xD00F0000, 0x90E40001, 0x0000FFFF,
};
static const DWORD ps_tokens[] = {
    0xFFFF0200, 0x0200001F, 0x80000000, 0x900F0000, 0x02000001, 0x800F0800, 0x90E40000, 0x0000FFFF,
};

struct vertex { float x, y, z, w; DWORD color; };
enum { W = 64, H = 32 };

/* A quad over pixels [x0,x1) x [y0,y1) at depth z; clockwise unless ccw. */
static void quad(IDirect3DDevice9 *dev, int x0, int y0, int x1, int y1, float z, DWORD c, BOOL ccw) {
    float l = (x0 - 0.5f) * 2 / W - 1, r = (x1 - 0.5f) * 2 / W - 1;
    float t = 1 - (y0 - 0.5f) * 2 / H, b = 1 - (y1 - 0.5f) * 2 / H;
    struct vertex cw[4] = {{l, t, z, 1, c}, {r, t, z, 1, c}, {l, b, z, 1, c}, {r, b, z, 1, c}};
    struct vertex cc[4] = {{l, t, z, 1, c}, {l, b, z, 1, c}, {r, t, z, 1, c}, {r, b, z, 1, c}};
    CHECK(IDirect3DDevice9_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, 2, ccw ? cc : cw, sizeof(struct vertex)));
}

#define RS(s, v) CHECK(IDirect3DDevice9_SetRenderState(dev, s, v))

int main(void) {
    IDirect3DDevice9 *dev = make_device(W, H, TRUE);
    IDirect3DVertexShader9 *vs = NULL;
    IDirect3DPixelShader9 *ps = NULL;
    IDirect3DVertexDeclaration9 *decl = NULL;
    D3DVERTEXELEMENT9 elements[] = {
        {0, 0, D3DDECLTYPE_FLOAT4, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_POSITION, 0},
        {0, 16, D3DDECLTYPE_D3DCOLOR, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_COLOR, 0},
        D3DDECL_END(),
    };
    D3DRECT cell4 = {48, 0, 64, 32};

    CHECK(IDirect3DDevice9_CreateVertexShader(dev, vs_tokens, &vs));
    CHECK(IDirect3DDevice9_CreatePixelShader(dev, ps_tokens, &ps));
    CHECK(IDirect3DDevice9_CreateVertexDeclaration(dev, elements, &decl));
    CHECK(IDirect3DDevice9_SetVertexShader(dev, vs));
    CHECK(IDirect3DDevice9_SetPixelShader(dev, ps));
    CHECK(IDirect3DDevice9_SetVertexDeclaration(dev, decl));
    RS(D3DRS_CULLMODE, D3DCULL_NONE);
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET | D3DCLEAR_ZBUFFER | D3DCLEAR_STENCIL,
                                 D3DCOLOR_XRGB(0x10, 0x10, 0x10), 1.0f, 0));
    CHECK(IDirect3DDevice9_BeginScene(dev));
    RS(D3DRS_ZENABLE, D3DZB_TRUE);
    RS(D3DRS_ZFUNC, D3DCMP_LESS);
    RS(D3DRS_ZWRITEENABLE, TRUE);
    /* 1 */
    quad(dev, 0, 0, 12, 24, 0.75f, D3DCOLOR_XRGB(0xFF, 0, 0), FALSE);
    quad(dev, 4, 8, 16, 32, 0.25f, D3DCOLOR_XRGB(0, 0xFF, 0), FALSE);
    quad(dev, 2, 4, 14, 28, 0.5f, D3DCOLOR_XRGB(0, 0, 0xFF), FALSE);
    /* 2 */
    RS(D3DRS_ZWRITEENABLE, FALSE);
    quad(dev, 16, 0, 28, 24, 0.25f, D3DCOLOR_XRGB(0xFF, 0xFF, 0), FALSE);
    RS(D3DRS_ZWRITEENABLE, TRUE);
    quad(dev, 20, 8, 32, 32, 0.5f, D3DCOLOR_XRGB(0, 0xFF, 0xFF), FALSE);
    /* 3 */
    RS(D3DRS_ZENABLE, D3DZB_FALSE);
    RS(D3DRS_STENCILENABLE, TRUE);
    RS(D3DRS_TWOSIDEDSTENCILMODE, TRUE);
    RS(D3DRS_STENCILFUNC, D3DCMP_ALWAYS);
    RS(D3DRS_STENCILPASS, D3DSTENCILOP_INCR);
    RS(D3DRS_CCW_STENCILFUNC, D3DCMP_ALWAYS);
    RS(D3DRS_CCW_STENCILPASS, D3DSTENCILOP_DECRSAT);
    RS(D3DRS_COLORWRITEENABLE, 0);
    quad(dev, 32, 0, 44, 24, 0.5f, 0, FALSE);
    quad(dev, 32, 0, 44, 24, 0.5f, 0, FALSE);
    quad(dev, 36, 8, 48, 32, 0.5f, 0, TRUE);
    RS(D3DRS_COLORWRITEENABLE, 0xF);
    RS(D3DRS_TWOSIDEDSTENCILMODE, FALSE);
    RS(D3DRS_STENCILFUNC, D3DCMP_EQUAL);
    RS(D3DRS_STENCILREF, 1);
    RS(D3DRS_STENCILPASS, D3DSTENCILOP_KEEP);
    quad(dev, 32, 0, 48, 32, 0.5f, D3DCOLOR_XRGB(0xFF, 0x80, 0x40), FALSE);
    RS(D3DRS_STENCILENABLE, FALSE);
    /* 4 */
    CHECK(IDirect3DDevice9_Clear(dev, 1, &cell4, D3DCLEAR_ZBUFFER, 0, 0.5f, 0));
    RS(D3DRS_ZENABLE, D3DZB_TRUE);
    RS(D3DRS_ZFUNC, D3DCMP_GREATER);
    quad(dev, 48, 0, 64, 16, 0.25f, D3DCOLOR_XRGB(0xFF, 0, 0xFF), FALSE);
    quad(dev, 48, 16, 64, 32, 0.75f, D3DCOLOR_XRGB(0x80, 0xFF, 0x80), FALSE);
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, "depth_stencil.ppm");
    IDirect3DVertexDeclaration9_Release(decl);
    IDirect3DPixelShader9_Release(ps);
    IDirect3DVertexShader9_Release(vs);
    IDirect3DDevice9_Release(dev);
    printf("depth_stencil: done\n");
    return 0;
}
