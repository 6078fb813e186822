/* Textured quad: a 4x4 texture (MANAGED, written through LockRect) drawn over the whole
 * 64x64 back buffer by vs_2_0/ps_2_0 (hand-assembled tokens) from a vertex buffer and a
 * declaration, once with point and once with linear filtering. The quad is moved by half
 * a pixel (D3D9's pixel-centre rule), so no pixel centre falls on a texel edge.
 * Writes textured_point.ppm, textured_linear.ppm, and tolerance.txt: D3D9 leaves the
 * sub-texel precision of bilinear weights to the implementation, and Mesa's llvmpipe (GL)
 * and lavapipe (Vulkan) round them differently by up to 2 of 255. */
#include "common.h"

static const DWORD vs_tokens[] = {
    0xFFFE0200,                                     /* vs_2_0 */
    0x0200001F, 0x80000000, 0x900F0000,             /* dcl_position v0 */
    0x0200001F, 0x80000005, 0x900F0001,             /* dcl_texcoord v1 */
    0x02000001, 0xC00F0000, 0x90E40000,             /* mov oPos, v0 */
    0x02000001, 0xE00F0000, 0x90E40001,             /* mov oT0, v1 */
    0x0000FFFF,
};
static const DWORD ps_tokens[] = {
    0xFFFF0200,                                     /* ps_2_0 */
    0x0200001F, 0x80000000, 0xB0030000,             /* dcl t0.xy */
    0x0200001F, 0x90000000, 0xA00F0800,             /* dcl_2d s0 */
    0x03000042, 0x800F0000, 0xB0E40000, 0xA0E40800, /* texld r0, t0, s0 */
    0x02000001, 0x800F0800, 0x80E40000,             /* mov oC0, r0 */
    0x0000FFFF,
};

struct vertex { float x, y, z, w, u, v; };

int main(void) {
    IDirect3DDevice9 *dev = make_device(64, 64, FALSE);
    IDirect3DTexture9 *tex = NULL;
    IDirect3DVertexBuffer9 *vb = NULL;
    IDirect3DVertexShader9 *vs = NULL;
    IDirect3DPixelShader9 *ps = NULL;
    IDirect3DVertexDeclaration9 *decl = NULL;
    D3DVERTEXELEMENT9 elements[] = {
        {0, 0, D3DDECLTYPE_FLOAT4, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_POSITION, 0},
        {0, 16, D3DDECLTYPE_FLOAT2, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_TEXCOORD, 0},
        D3DDECL_END(),
    };
    const float h = 1.0f / 64.0f; /* half a pixel in clip space */
    struct vertex quad[4] = {
        {-1 - h, 1 + h, 0.5f, 1, 0, 0}, {1 - h, 1 + h, 0.5f, 1, 1, 0},
        {-1 - h, -1 + h, 0.5f, 1, 0, 1}, {1 - h, -1 + h, 0.5f, 1, 1, 1},
    };
    static const DWORD texels[16] = {
        0xFFFF0000, 0xFF00FF00, 0xFF0000FF, 0xFFFFFFFF, 0xFF000000, 0xFFFFFF00, 0xFF00FFFF, 0xFFFF00FF,
        0xFF808080, 0xFF402010, 0xFF102040, 0xFF204010, 0xFFC0C0C0, 0xFF7F7F7F, 0xFF3F3F3F, 0xFFF0E0D0,
    };
    D3DLOCKED_RECT lr;
    void *p;
    int y, pass;

    CHECK(IDirect3DDevice9_CreateTexture(dev, 4, 4, 1, 0, D3DFMT_A8R8G8B8, D3DPOOL_MANAGED, &tex, NULL));
    CHECK(IDirect3DTexture9_LockRect(tex, 0, &lr, NULL, 0));
    for (y = 0; y < 4; y++) memcpy((BYTE *)lr.pBits + y * lr.Pitch, texels + y * 4, 16);
    CHECK(IDirect3DTexture9_UnlockRect(tex, 0));
    CHECK(IDirect3DDevice9_CreateVertexBuffer(dev, sizeof(quad), D3DUSAGE_WRITEONLY, 0, D3DPOOL_MANAGED, &vb, NULL));
    CHECK(IDirect3DVertexBuffer9_Lock(vb, 0, 0, &p, 0));
    memcpy(p, quad, sizeof(quad));
    CHECK(IDirect3DVertexBuffer9_Unlock(vb));
    CHECK(IDirect3DDevice9_CreateVertexShader(dev, vs_tokens, &vs));
    CHECK(IDirect3DDevice9_CreatePixelShader(dev, ps_tokens, &ps));
    CHECK(IDirect3DDevice9_CreateVertexDeclaration(dev, elements, &decl));

    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_CULLMODE, D3DCULL_NONE));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_ZENABLE, D3DZB_FALSE));
    CHECK(IDirect3DDevice9_SetVertexShader(dev, vs));
    CHECK(IDirect3DDevice9_SetPixelShader(dev, ps));
    CHECK(IDirect3DDevice9_SetVertexDeclaration(dev, decl));
    CHECK(IDirect3DDevice9_SetStreamSource(dev, 0, vb, 0, sizeof(struct vertex)));
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)tex));
    for (pass = 0; pass < 2; pass++) {
        DWORD filter = pass ? D3DTEXF_LINEAR : D3DTEXF_POINT;
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MAGFILTER, filter));
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MINFILTER, filter));
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_ADDRESSU, D3DTADDRESS_CLAMP));
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_ADDRESSV, D3DTADDRESS_CLAMP));
        CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0x30, 0x30, 0x30), 1.0f, 0));
        CHECK(IDirect3DDevice9_BeginScene(dev));
        CHECK(IDirect3DDevice9_DrawPrimitive(dev, D3DPT_TRIANGLESTRIP, 0, 2));
        CHECK(IDirect3DDevice9_EndScene(dev));
        save_back_buffer(dev, pass ? "textured_linear.ppm" : "textured_point.ppm");
    }
    CHECK(IDirect3DDevice9_Present(dev, NULL, NULL, NULL, NULL));
    CHECK(IDirect3DDevice9_SetTexture(dev, 0, NULL));
    IDirect3DVertexDeclaration9_Release(decl);
    IDirect3DPixelShader9_Release(ps);
    IDirect3DVertexShader9_Release(vs);
    IDirect3DVertexBuffer9_Release(vb);
    IDirect3DTexture9_Release(tex);
    IDirect3DDevice9_Release(dev);
    {
        FILE *t = fopen("tolerance.txt", "w");
        if (!t) return 1;
        fprintf(t, "textured_linear.ppm 2\n");
        fclose(t);
    }
    printf("textured_quad: done\n");
    return 0;
}
