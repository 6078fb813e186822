/* Alpha blending: eight 16x16 cells of a 64x32 target, each an opaque quad (blending off)
 * under a half-transparent one drawn with one blend mode: src-alpha/inv-src-alpha, add,
 * modulate (DESTCOLOR, ZERO), reverse subtract, subtract, min, max and the blend factor.
 * Quads come from vs_2_0/ps_2_0 with a D3DCOLOR vertex colour, their edges half a pixel
 * off the pixel centres (no ties). Writes blending.ppm. */
#include "common.h"

static const DWORD vs_tokens[] = {
    0xFFFE0200,                                     /* vs_2_0 */
    0x0200001F, 0x80000000, 0x900F0000,             /* dcl_position v0 */
    0x0200001F, 0x8000000A, 0x900F0001,             /* dcl_color v1 */
    0x02000001, 0xC00F0000, 0x90E40000,             /* mov oPos, v0 */
    0x02000001, 0xD00F0000, 0x90E40001,             /* mov oD0, v1 */
    0x0000FFFF,
};
static const DWORD ps_tokens[] = {
    0xFFFF0200,                                     /* ps_2_0 */
    0x0200001F, 0x80000000, 0x900F0000,             /* dcl v0 */
    0x02000001, 0x800F0800, 0x90E40000,             /* mov oC0, v0 */
    0x0000FFFF,
};

struct vertex { float x, y, z, w; DWORD color; };

enum { W = 64, H = 32 };

static void quad(IDirect3DDevice9 *dev, int x0, int y0, int x1, int y1, DWORD color) {
    /* Screen edges at x - 0.5 (D3D9 pixel centres are integers) in clip space. */
    float l = (x0 - 0.5f) * 2 / W - 1, r = (x1 - 0.5f) * 2 / W - 1;
    float t = 1 - (y0 - 0.5f) * 2 / H, b = 1 - (y1 - 0.5f) * 2 / H;
    struct vertex v[4] = {{l, t, 0.5f, 1, color}, {r, t, 0.5f, 1, color}, {l, b, 0.5f, 1, color}, {r, b, 0.5f, 1, color}};
    CHECK(IDirect3DDevice9_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, 2, v, sizeof(v[0])));
}

int main(void) {
    static const DWORD modes[8][3] = {
        {D3DBLEND_SRCALPHA, D3DBLEND_INVSRCALPHA, D3DBLENDOP_ADD},
        {D3DBLEND_ONE, D3DBLEND_ONE, D3DBLENDOP_ADD},
        {D3DBLEND_DESTCOLOR, D3DBLEND_ZERO, D3DBLENDOP_ADD},
        {D3DBLEND_ONE, D3DBLEND_ONE, D3DBLENDOP_REVSUBTRACT},
        {D3DBLEND_SRCALPHA, D3DBLEND_ONE, D3DBLENDOP_SUBTRACT},
        {D3DBLEND_ONE, D3DBLEND_ONE, D3DBLENDOP_MIN},
        {D3DBLEND_ONE, D3DBLEND_ONE, D3DBLENDOP_MAX},
        {D3DBLEND_BLENDFACTOR, D3DBLEND_INVBLENDFACTOR, D3DBLENDOP_ADD},
    };
    IDirect3DDevice9 *dev = make_device(W, H, FALSE);
    IDirect3DVertexShader9 *vs = NULL;
    IDirect3DPixelShader9 *ps = NULL;
    IDirect3DVertexDeclaration9 *decl = NULL;
    D3DVERTEXELEMENT9 elements[] = {
        {0, 0, D3DDECLTYPE_FLOAT4, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_POSITION, 0},
        {0, 16, D3DDECLTYPE_D3DCOLOR, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_COLOR, 0},
        D3DDECL_END(),
    };
    int i;

    CHECK(IDirect3DDevice9_CreateVertexShader(dev, vs_tokens, &vs));
    CHECK(IDirect3DDevice9_CreatePixelShader(dev, ps_tokens, &ps));
    CHECK(IDirect3DDevice9_CreateVertexDeclaration(dev, elements, &decl));
    CHECK(IDirect3DDevice9_SetVertexShader(dev, vs));
    CHECK(IDirect3DDevice9_SetPixelShader(dev, ps));
    CHECK(IDirect3DDevice9_SetVertexDeclaration(dev, decl));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_CULLMODE, D3DCULL_NONE));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_ZENABLE, D3DZB_FALSE));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_BLENDFACTOR, D3DCOLOR_ARGB(0x40, 0x40, 0xC0, 0x80)));
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0, 0, 0), 1.0f, 0));
    CHECK(IDirect3DDevice9_BeginScene(dev));
    for (i = 0; i < 8; i++) {
        int x = (i % 4) * 16, y = (i / 4) * 16;
        CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_ALPHABLENDENABLE, FALSE));
        quad(dev, x, y, x + 16, y + 16, D3DCOLOR_ARGB(0xFF, 0x60, 0xA0, 0x30));
        CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_ALPHABLENDENABLE, TRUE));
        CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_SRCBLEND, modes[i][0]));
        CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_DESTBLEND, modes[i][1]));
        CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_BLENDOP, modes[i][2]));
        quad(dev, x + 4, y + 4, x + 16, y + 16, D3DCOLOR_ARGB(0x80, 0xF0, 0x40, 0x90));
    }
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, "blending.ppm");
    IDirect3DVertexDeclaration9_Release(decl);
    IDirect3DPixelShader9_Release(ps);
    IDirect3DVertexShader9_Release(vs);
    IDirect3DDevice9_Release(dev);
    printf("blending: done\n");
    return 0;
}
