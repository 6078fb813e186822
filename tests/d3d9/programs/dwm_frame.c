/* A DWM-like frame on a D3D9Ex device (Direct3DCreate9Ex, CreateDeviceEx, PresentEx):
 * over a cleared desktop, 12 overlapping "windows", each a drop shadow (a black quad at
 * alpha 0x40) and a textured quad whose 8x8 A8R8G8B8 texture has alpha 0xC0, blended
 * SRCALPHA/INVSRCALPHA, point sampled; edges and texel edges off the pixel centres.
 * Writes dwm_frame.ppm (read back before PresentEx), then presents three frames. */
#include "common.h"

static const DWORD tex_vs[] = {
    0xFFFE0200, 0x0200001F, 0x80000000, 0x900F0000, 0x0200001F, 0x80000005, 0x900F0001,
    0x02000001, 0xC00F0000, 0x90E40000, 0x02000001, 0xE00F0000, 0x90E40001, 0x0000FFFF,
};
static const DWORD tex_ps[] = {
    0xFFFF0200, 0x0200001F, 0x80000000, 0xB0030000, 0x0200001F, 0x90000000, 0xA00F0800,
    0x03000042, 0x800F0000, 0xB0E40000, 0xA0E40800, 0x02000001, 0x800F0800, 0x80E40000, 0x0000FFFF,
};

struct tvertex { float x, y, z, w, u, v; };
enum { W = 128, H = 96 };

static void quad(IDirect3DDevice9Ex *dev, int x0, int y0, int x1, int y1) {
    float l = (x0 - 0.5f) * 2 / W - 1, r = (x1 - 0.5f) * 2 / W - 1;
    float t = 1 - (y0 - 0.5f) * 2 / H, b = 1 - (y1 - 0.5f) * 2 / H;
    struct tvertex v[4] = {{l, t, 0.5f, 1, 0, 0}, {r, t, 0.5f, 1, 1, 0}, {l, b, 0.5f, 1, 0, 1}, {r, b, 0.5f, 1, 1, 1}};
    CHECK(IDirect3DDevice9Ex_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, 2, v, sizeof(v[0])));
}

int main(void) {
    IDirect3D9Ex *d3d = NULL;
    IDirect3DDevice9Ex *dev = NULL;
    IDirect3DTexture9 *win[3], *shadow = NULL;
    IDirect3DVertexShader9 *vs = NULL;
    IDirect3DPixelShader9 *ps = NULL;
    IDirect3DVertexDeclaration9 *decl = NULL;
    IDirect3DSurface9 *bb = NULL;
    D3DVERTEXELEMENT9 te[] = {
        {0, 0, D3DDECLTYPE_FLOAT4, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_POSITION, 0},
        {0, 16, D3DDECLTYPE_FLOAT2, D3DDECLMETHOD_DEFAULT, D3DDECLUSAGE_TEXCOORD, 0},
        D3DDECL_END(),
    };
    D3DPRESENT_PARAMETERS pp = {0};
    D3DLOCKED_RECT lr;
    HWND wnd = make_window(W, H);
    int i, x, y, frame;

    CHECK(Direct3DCreate9Ex(D3D_SDK_VERSION, &d3d));
    pp.BackBufferWidth = W;
    pp.BackBufferHeight = H;
    pp.BackBufferFormat = D3DFMT_X8R8G8B8;
    pp.BackBufferCount = 1;
    pp.SwapEffect = D3DSWAPEFFECT_FLIPEX;
    pp.hDeviceWindow = wnd;
    pp.Windowed = TRUE;
    pp.PresentationInterval = D3DPRESENT_INTERVAL_IMMEDIATE;
    CHECK(IDirect3D9Ex_CreateDeviceEx(d3d, D3DADAPTER_DEFAULT, D3DDEVTYPE_HAL, wnd, D3DCREATE_HARDWARE_VERTEXPROCESSING,
                                      &pp, NULL, &dev));
    for (i = 0; i < 4; i++) {
        IDirect3DTexture9 **t = i < 3 ? &win[i] : &shadow;
        CHECK(IDirect3DDevice9Ex_CreateTexture(dev, 8, 8, 1, 0, D3DFMT_A8R8G8B8, D3DPOOL_DEFAULT, t, NULL));
        /* D3D9Ex has no MANAGED pool: written through a lock of the DEFAULT texture is
         * not allowed either, so fill it through a SYSTEMMEM texture and UpdateTexture. */
        {
            IDirect3DTexture9 *sys = NULL;
            CHECK(IDirect3DDevice9Ex_CreateTexture(dev, 8, 8, 1, 0, D3DFMT_A8R8G8B8, D3DPOOL_SYSTEMMEM, &sys, NULL));
            CHECK(IDirect3DTexture9_LockRect(sys, 0, &lr, NULL, 0));
            for (y = 0; y < 8; y++)
                for (x = 0; x < 8; x++) {
                    DWORD c = i == 3 ? D3DCOLOR_ARGB(0x40, 0, 0, 0)
                              : y == 0 ? D3DCOLOR_ARGB(0xE0, 0x30 + 0x40 * i, 0x50, 0xA0 - 0x20 * i)
                                       : D3DCOLOR_ARGB(0xC0, 0xF0 - 8 * x, 0xF0 - 8 * y, 0xE0 - 0x30 * i);
                    ((DWORD *)((BYTE *)lr.pBits + y * lr.Pitch))[x] = c;
                }
            CHECK(IDirect3DTexture9_UnlockRect(sys, 0));
            CHECK(IDirect3DDevice9Ex_UpdateTexture(dev, (IDirect3DBaseTexture9 *)sys, (IDirect3DBaseTexture9 *)*t));
            IDirect3DTexture9_Release(sys);
        }
    }
    CHECK(IDirect3DDevice9Ex_CreateVertexShader(dev, tex_vs, &vs));
    CHECK(IDirect3DDevice9Ex_CreatePixelShader(dev, tex_ps, &ps));
    CHECK(IDirect3DDevice9Ex_CreateVertexDeclaration(dev, te, &decl));
    CHECK(IDirect3DDevice9Ex_SetVertexShader(dev, vs));
    CHECK(IDirect3DDevice9Ex_SetPixelShader(dev, ps));
    CHECK(IDirect3DDevice9Ex_SetVertexDeclaration(dev, decl));
    CHECK(IDirect3DDevice9Ex_SetRenderState(dev, D3DRS_CULLMODE, D3DCULL_NONE));
    CHECK(IDirect3DDevice9Ex_SetRenderState(dev, D3DRS_ZENABLE, D3DZB_FALSE));
    CHECK(IDirect3DDevice9Ex_SetRenderState(dev, D3DRS_ALPHABLENDENABLE, TRUE));
    CHECK(IDirect3DDevice9Ex_SetRenderState(dev, D3DRS_SRCBLEND, D3DBLEND_SRCALPHA));
    CHECK(IDirect3DDevice9Ex_SetRenderState(dev, D3DRS_DESTBLEND, D3DBLEND_INVSRCALPHA));
    CHECK(IDirect3DDevice9Ex_SetSamplerState(dev, 0, D3DSAMP_MAGFILTER, D3DTEXF_POINT));
    CHECK(IDirect3DDevice9Ex_SetSamplerState(dev, 0, D3DSAMP_MINFILTER, D3DTEXF_POINT));
    CHECK(IDirect3DDevice9Ex_GetBackBuffer(dev, 0, 0, D3DBACKBUFFER_TYPE_MONO, &bb));
    for (frame = 0; frame < 3; frame++) {
        CHECK(IDirect3DDevice9Ex_Clear(dev, 0, NULL, D3DCLEAR_TARGET, D3DCOLOR_XRGB(0x10, 0x50, 0x80), 1.0f, 0));
        CHECK(IDirect3DDevice9Ex_BeginScene(dev));
        for (i = 0; i < 12; i++) {
            int x0 = 4 + (i % 4) * 26 + frame * 2, y0 = 4 + (i / 4) * 26 + (i % 3) * 3;
            CHECK(IDirect3DDevice9Ex_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)shadow));
            quad(dev, x0 + 3, y0 + 3, x0 + 3 + 40, y0 + 3 + 32);
            CHECK(IDirect3DDevice9Ex_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)win[i % 3]));
            quad(dev, x0, y0, x0 + 40, y0 + 32);
        }
        CHECK(IDirect3DDevice9Ex_EndScene(dev));
        if (frame == 0) save_rt((IDirect3DDevice9 *)dev, bb, "dwm_frame.ppm");
        CHECK(IDirect3DDevice9Ex_PresentEx(dev, NULL, NULL, NULL, NULL, 0));
    }
    CHECK(IDirect3DDevice9Ex_SetTexture(dev, 0, NULL));
    IDirect3DSurface9_Release(bb);
    for (i = 0; i < 3; i++) IDirect3DTexture9_Release(win[i]);
    IDirect3DTexture9_Release(shadow);
    IDirect3DVertexDeclaration9_Release(decl);
    IDirect3DPixelShader9_Release(ps);
    IDirect3DVertexShader9_Release(vs);
    IDirect3DDevice9Ex_Release(dev);
    IDirect3D9Ex_Release(d3d);
    printf("dwm_frame: done\n");
    return 0;
}
