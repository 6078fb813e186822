/* vs_3_0/ps_3_0 (hand-assembled tokens): a full-target quad whose pixel shader sums
 * c1..c4 in a loop over aL (loop aL, i0 with c1[aL] relative addressing), scales the sum
 * by c5 and adds the interpolated texture coordinate (o1 of the vs_3_0) times c6.
 * Writes shaders_3_0.ppm; a device whose caps lack vs_3_0/ps_3_0 writes nothing and says so. */
#include "common.h"

static const DWORD vs_tokens[] = {
    0xFFFE0300,                                     /* vs_3_0 */
    0x0200001F, 0x80000000, 0x900F0000,             /* dcl_position v0 */
    0x0200001F, 0x80000005, 0x900F0001,             /* dcl_texcoord v1 */
    0x0200001F, 0x80000000, 0xE00F0000,             /* dcl_position o0 */
    0x0200001F, 0x80000005, 0xE00F0001,             /* dcl_texcoord o1 */
    0x02000001, 0xE00F0000, 0x90E40000,             /* mov o0, v0 */
    0x02000001, 0xE00F0001, 0x90E40001,             /* mov o1, v1 */
    0x0000FFFF,
};
static const DWORD ps_tokens[] = {
    0xFFFF0300,                                     /* ps_3_0 */
    0x05000051, 0xA00F0000, 0, 0, 0, 0,             /* def c0, 0, 0, 0, 0 */
    0x05000030, 0xF00F0000, 4, 0, 1, 0,             /* defi i0, 4, 0, 1, 0 */
    0x0200001F, 0x80000005, 0x90030000,             /* dcl_texcoord v0.xy */
    0x02000001, 0x800F0000, 0xA0E40000,             /* mov r0, c0 */
    0x0200001B, 0xF0E40800, 0xF0E40000,             /* loop aL, i0 */
    0x04000002, 0x800F0000, 0x80E40000, 0xA0E42001, 0xF0000800, /* add r0, r0, c1[aL] */
    0x0000001D,                                     /* endloop */
    0x03000005, 0x800F0000, 0x80E40000, 0xA0E40005, /* mul r0, r0, c5 */
    0x03000005, 0x800F0001, 0x90440000, 0xA0E40006, /* mul r1, v0.xyxy, c6 */
    0x03000002, 0x800F0000, 0x80E40000, 0x80E40001, /* add r0, r0, r1 */
    0x02000001, 0x800F0800, 0x80E40000,             /* mov oC0, r0 */
    0x0000FFFF,
};

struct vertex { float x, y, z, w, u, v; };

int main(void) {
    IDirect3DDevice9 *dev = make_device(64, 32, FALSE);
    IDirect3DVertexShader9 *vs = NULL;
    IDirect3DPixelShader9 *ps = NULL;
    IDirect3DVertexDeclaration9 *decl = NULL;
    D3DVERTEXELEMENT9 elements[] = {
        {0, 0, D3DDECLTYPE_FLOAT4, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_POSITION, 0},
        {0, 16, D3DDECLTYPE_FLOAT2, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_TEXCOORD, 0},
        D3DDECL_END(),
    };
    const float hx = 1.0f / 64, hy = 1.0f / 32; /* half a pixel */
    struct vertex quad[4] = {
        {-1 - hx, 1 + hy, 0.5f, 1, 0, 0}, {1 - hx, 1 + hy, 0.5f, 1, 1, 0},
        {-1 - hx, -1 + hy, 0.5f, 1, 0, 1}, {1 - hx, -1 + hy, 0.5f, 1, 1, 1},
    };
    static const float consts[6][4] = {
        {0.05f, 0.10f, 0.00f, 1.0f}, {0.10f, 0.00f, 0.05f, 0.0f}, {0.00f, 0.05f, 0.10f, 0.0f},
        {0.05f, 0.05f, 0.05f, 0.0f}, {1.5f, 1.0f, 0.5f, 1.0f}, {0.25f, 0.5f, 0.75f, 0.0f},
    };

    D3DCAPS9 caps;
    CHECK(IDirect3DDevice9_GetDeviceCaps(dev, &caps));
    if (caps.VertexShaderVersion < D3DVS_VERSION(3, 0) || caps.PixelShaderVersion < D3DPS_VERSION(3, 0)) {
        printf("shaders_3_0: the device has no vs_3_0/ps_3_0 (caps %08lx %08lx): nothing drawn\n",
               (unsigned long)caps.VertexShaderVersion, (unsigned long)caps.PixelShaderVersion);
        IDirect3DDevice9_Release(dev);
        return 0;
    }
    CHECK(IDirect3DDevice9_CreateVertexShader(dev, vs_tokens, &vs));
    CHECK(IDirect3DDevice9_CreatePixelShader(dev, ps_tokens, &ps));
    CHECK(IDirect3DDevice9_CreateVertexDeclaration(dev, elements, &decl));
    CHECK(IDirect3DDevice9_SetVertexShader(dev, vs));
    CHECK(IDirect3DDevice9_SetPixelShader(dev, ps));
    CHECK(IDirect3DDevice9_SetVertexDeclaration(dev, decl));
    CHECK(IDirect3DDevice9_SetPixelShaderConstantF(dev, 1, &consts[0][0], 6));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_CULLMODE, D3DCULL_NONE));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_ZENABLE, D3DZB_FALSE));
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0, 0, 0), 1.0f, 0));
    CHECK(IDirect3DDevice9_BeginScene(dev));
    CHECK(IDirect3DDevice9_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, 2, quad, sizeof(quad[0])));
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, "shaders_3_0.ppm");
    IDirect3DVertexDeclaration9_Release(decl);
    IDirect3DPixelShader9_Release(ps);
    IDirect3DVertexShader9_Release(vs);
    IDirect3DDevice9_Release(dev);
    printf("shaders_3_0: done\n");
    return 0;
}
