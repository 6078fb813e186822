/* Fixed-function transform and lighting: no shaders bound, so the driver generates them
 * from the legacy state. Four lit spheres (FVF XYZ|NORMAL[|DIFFUSE], world/view/projection,
 * one 64x64 viewport each) in a 128x128 back buffer:
 *   1. a directional light, material diffuse/ambient and the global ambient;
 *   2. a point light with attenuation and range, specular with D3DRS_LOCALVIEWER TRUE;
 *   3. a spot light (theta/phi/falloff) plus a dim directional one, non-local specular;
 *   4. per-vertex colours as diffuse and ambient sources (D3DMCS_COLOR1), material emissive,
 *      a scaled world matrix with D3DRS_NORMALIZENORMALS.
 * Then pre-transformed vertices (XYZRHW|DIFFUSE, never lit) with a depth test, and two
 * quads with vertex alpha from 0 to 1 across 32 pixels, alpha tested (GREATER 0x80, no pixel
 * near the threshold) with the default stage 0 (no texture bound) and with the alpha
 * explicitly from the diffuse colour. Then texture-coordinate generation: an unlit sphere
 * textured through D3DTSS_TCI_CAMERASPACENORMAL and a COUNT2 scale/offset texture matrix
 * (a sphere map), linear filtering. Writes ff_lit.ppm, ff_pretransformed.ppm, ff_texgen.ppm
 * and tolerance.txt (bilinear weights: see textured_quad.c). */
#include <math.h>
#include <string.h>

#include "common.h"

#define STACKS 12
#define SLICES 16
#define NVERT ((STACKS + 1) * (SLICES + 1))
#define NIDX (STACKS * SLICES * 6)

struct lit_vertex { float x, y, z, nx, ny, nz; DWORD color; };
struct rhw_vertex { float x, y, z, rhw; DWORD color; };

static struct lit_vertex verts[NVERT];
static WORD indices[NIDX];

static void make_sphere(void) {
    int i, j, n = 0;
    for (i = 0; i <= STACKS; i++) {
        float t = 3.14159265f * (float)i / STACKS;
        for (j = 0; j <= SLICES; j++) {
            float p = 2.0f * 3.14159265f * (float)j / SLICES;
            struct lit_vertex *v = &verts[i * (SLICES + 1) + j];
            v->nx = sinf(t) * cosf(p);
            v->ny = cosf(t);
            v->nz = sinf(t) * sinf(p);
            v->x = v->nx, v->y = v->ny, v->z = v->nz;
            v->color = D3DCOLOR_ARGB(255, (int)(127.5f + 127 * v->nx), (int)(127.5f + 127 * v->ny), 200);
        }
    }
    for (i = 0; i < STACKS; i++)
        for (j = 0; j < SLICES; j++) {
            WORD a = (WORD)(i * (SLICES + 1) + j), b = (WORD)(a + SLICES + 1);
            /* Clockwise seen from outside: D3D9's default CCW culling keeps the front. */
            indices[n++] = a, indices[n++] = (WORD)(a + 1), indices[n++] = b;
            indices[n++] = (WORD)(a + 1), indices[n++] = (WORD)(b + 1), indices[n++] = b;
        }
}

static D3DMATRIX identity(void) {
    D3DMATRIX m;
    memset(&m, 0, sizeof(m));
    m._11 = m._22 = m._33 = m._44 = 1.0f;
    return m;
}

static void viewport(IDirect3DDevice9 *dev, DWORD x, DWORD y, DWORD w, DWORD h) {
    D3DVIEWPORT9 vp = {x, y, w, h, 0.0f, 1.0f};
    CHECK(IDirect3DDevice9_SetViewport(dev, &vp));
}

static void draw_sphere(IDirect3DDevice9 *dev) {
    CHECK(IDirect3DDevice9_DrawIndexedPrimitiveUP(dev, D3DPT_TRIANGLELIST, 0, NVERT, NIDX / 3, indices,
                                                  D3DFMT_INDEX16, verts, sizeof(struct lit_vertex)));
}

static D3DCOLORVALUE rgba(float r, float g, float b, float a) {
    D3DCOLORVALUE c = {r, g, b, a};
    return c;
}

int main(void) {
    IDirect3DDevice9 *dev = make_device(128, 128, TRUE);
    D3DMATRIX world = identity(), view = identity(), proj;
    D3DMATERIAL9 mat;
    D3DLIGHT9 light;
    const float zn = 1.0f, zf = 10.0f, ys = 1.0f / tanf(3.14159265f / 8); /* 45 degrees */
    int i;
    struct rhw_vertex tri[6] = {
        {10.5f, 10.5f, 0.5f, 1.0f, 0xFFFF0000}, {110.5f, 20.5f, 0.5f, 1.0f, 0xFF00FF00},
        {30.5f, 115.5f, 0.5f, 1.0f, 0xFF0000FF}, {100.5f, 100.5f, 0.2f, 0.5f, 0xFFFFFF00},
        {20.5f, 60.5f, 0.8f, 0.5f, 0xFF00FFFF}, {120.5f, 50.5f, 0.8f, 2.0f, 0x80FF00FF},
    };

    make_sphere();
    memset(&proj, 0, sizeof(proj));
    proj._11 = ys, proj._22 = ys, proj._33 = zf / (zf - zn), proj._34 = 1.0f, proj._43 = -zn * zf / (zf - zn);
    world._43 = 3.2f; /* the sphere 3.2 units in front of the camera */
    CHECK(IDirect3DDevice9_SetTransform(dev, D3DTS_WORLD, &world));
    CHECK(IDirect3DDevice9_SetTransform(dev, D3DTS_VIEW, &view));
    CHECK(IDirect3DDevice9_SetTransform(dev, D3DTS_PROJECTION, &proj));
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET | D3DCLEAR_ZBUFFER, D3DCOLOR_XRGB(0x20, 0x20, 0x40),
                                 1.0f, 0));
    CHECK(IDirect3DDevice9_BeginScene(dev));
    CHECK(IDirect3DDevice9_SetFVF(dev, D3DFVF_XYZ | D3DFVF_NORMAL));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_LIGHTING, TRUE));

    /* 1: directional light, diffuse + ambient. */
    viewport(dev, 0, 0, 64, 64);
    memset(&mat, 0, sizeof(mat));
    mat.Diffuse = rgba(0.8f, 0.3f, 0.2f, 1.0f);
    mat.Ambient = rgba(0.2f, 0.2f, 0.6f, 1.0f);
    CHECK(IDirect3DDevice9_SetMaterial(dev, &mat));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_AMBIENT, D3DCOLOR_XRGB(0x30, 0x30, 0x30)));
    memset(&light, 0, sizeof(light));
    light.Type = D3DLIGHT_DIRECTIONAL;
    light.Diffuse = rgba(1.0f, 1.0f, 0.9f, 1.0f);
    light.Ambient = rgba(0.1f, 0.1f, 0.1f, 1.0f);
    light.Direction.x = 1.0f, light.Direction.y = -1.0f, light.Direction.z = 1.0f;
    CHECK(IDirect3DDevice9_SetLight(dev, 0, &light));
    CHECK(IDirect3DDevice9_LightEnable(dev, 0, TRUE));
    draw_sphere(dev);

    /* 2: point light with attenuation, local-viewer specular. */
    viewport(dev, 64, 0, 64, 64);
    mat.Specular = rgba(1.0f, 1.0f, 1.0f, 1.0f);
    mat.Power = 16.0f;
    CHECK(IDirect3DDevice9_SetMaterial(dev, &mat));
    memset(&light, 0, sizeof(light));
    light.Type = D3DLIGHT_POINT;
    light.Diffuse = rgba(1.0f, 0.9f, 0.8f, 1.0f);
    light.Specular = rgba(0.9f, 0.9f, 1.0f, 1.0f);
    light.Position.x = 2.0f, light.Position.y = 2.0f, light.Position.z = 0.5f;
    light.Range = 20.0f;
    light.Attenuation0 = 0.2f, light.Attenuation1 = 0.25f;
    CHECK(IDirect3DDevice9_SetLight(dev, 0, &light));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_SPECULARENABLE, TRUE));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_LOCALVIEWER, TRUE));
    draw_sphere(dev);

    /* 3: spot light and a dim directional light, non-local specular. */
    viewport(dev, 0, 64, 64, 64);
    memset(&light, 0, sizeof(light));
    light.Type = D3DLIGHT_SPOT;
    light.Diffuse = rgba(0.9f, 0.9f, 0.4f, 1.0f);
    light.Specular = rgba(1.0f, 1.0f, 1.0f, 1.0f);
    light.Position.x = -0.5f, light.Position.y = 0.5f, light.Position.z = 0.0f;
    light.Direction.x = 0.15f, light.Direction.y = -0.15f, light.Direction.z = 1.0f;
    light.Range = 50.0f;
    light.Attenuation0 = 1.0f;
    light.Theta = 0.25f, light.Phi = 0.6f, light.Falloff = 1.0f;
    CHECK(IDirect3DDevice9_SetLight(dev, 0, &light));
    memset(&light, 0, sizeof(light));
    light.Type = D3DLIGHT_DIRECTIONAL;
    light.Diffuse = rgba(0.1f, 0.2f, 0.3f, 1.0f);
    light.Direction.x = -1.0f, light.Direction.z = 0.5f;
    CHECK(IDirect3DDevice9_SetLight(dev, 3, &light));
    CHECK(IDirect3DDevice9_LightEnable(dev, 3, TRUE));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_LOCALVIEWER, FALSE));
    draw_sphere(dev);

    /* 4: vertex colours as diffuse and ambient material, emissive, scaled world + normalize. */
    viewport(dev, 64, 64, 64, 64);
    CHECK(IDirect3DDevice9_LightEnable(dev, 3, FALSE));
    memset(&light, 0, sizeof(light));
    light.Type = D3DLIGHT_DIRECTIONAL;
    light.Diffuse = rgba(0.8f, 0.8f, 0.8f, 1.0f);
    light.Ambient = rgba(0.3f, 0.3f, 0.3f, 1.0f);
    light.Direction.x = 0.5f, light.Direction.y = -0.3f, light.Direction.z = 1.0f;
    CHECK(IDirect3DDevice9_SetLight(dev, 0, &light));
    mat.Emissive = rgba(0.1f, 0.0f, 0.15f, 1.0f);
    CHECK(IDirect3DDevice9_SetMaterial(dev, &mat));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_SPECULARENABLE, FALSE));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_DIFFUSEMATERIALSOURCE, D3DMCS_COLOR1));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_AMBIENTMATERIALSOURCE, D3DMCS_COLOR1));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_NORMALIZENORMALS, TRUE));
    world._11 = world._22 = world._33 = 0.8f;
    CHECK(IDirect3DDevice9_SetTransform(dev, D3DTS_WORLD, &world));
    CHECK(IDirect3DDevice9_SetFVF(dev, D3DFVF_XYZ | D3DFVF_NORMAL | D3DFVF_DIFFUSE));
    draw_sphere(dev);
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, "ff_lit.ppm");

    /* Pre-transformed: screen-space triangles, lighting on but ignored, depth tested. */
    viewport(dev, 0, 0, 128, 128);
    CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET | D3DCLEAR_ZBUFFER, D3DCOLOR_XRGB(0x10, 0x10, 0x10),
                                 1.0f, 0));
    CHECK(IDirect3DDevice9_BeginScene(dev));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_CULLMODE, D3DCULL_NONE));
    CHECK(IDirect3DDevice9_SetFVF(dev, D3DFVF_XYZRHW | D3DFVF_DIFFUSE));
    CHECK(IDirect3DDevice9_DrawPrimitiveUP(dev, D3DPT_TRIANGLELIST, 2, tri, sizeof(struct rhw_vertex)));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_ZENABLE, D3DZB_FALSE));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_ALPHATESTENABLE, TRUE));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_ALPHAFUNC, D3DCMP_GREATER));
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_ALPHAREF, 0x80));
    for (i = 0; i < 2; i++) {
        const float x0 = 40.0f * (float)i - 0.5f, y0 = 90.0f - 0.5f;
        struct rhw_vertex q[4] = {
            {x0, y0, 0.1f, 1.0f, 0x00FFFFFF}, {x0 + 32, y0, 0.1f, 1.0f, 0xFFFFFFFF},
            {x0, y0 + 32, 0.1f, 1.0f, 0x0000FF80}, {x0 + 32, y0 + 32, 0.1f, 1.0f, 0xFF0000FF},
        };
        if (i == 1) {
            CHECK(IDirect3DDevice9_SetTextureStageState(dev, 0, D3DTSS_ALPHAOP, D3DTOP_SELECTARG1));
            CHECK(IDirect3DDevice9_SetTextureStageState(dev, 0, D3DTSS_ALPHAARG1, D3DTA_DIFFUSE));
        }
        CHECK(IDirect3DDevice9_DrawPrimitiveUP(dev, D3DPT_TRIANGLESTRIP, 2, q, sizeof(struct rhw_vertex)));
    }
    CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_ALPHATESTENABLE, FALSE));
    CHECK(IDirect3DDevice9_EndScene(dev));
    save_back_buffer(dev, "ff_pretransformed.ppm");

    /* Texgen: camera-space normals through a scale/offset matrix into a smooth texture. */
    {
        IDirect3DTexture9 *tex = NULL;
        D3DLOCKED_RECT lr;
        D3DMATRIX tm;
        UINT x, y;
        FILE *t;
        CHECK(IDirect3DDevice9_CreateTexture(dev, 4, 4, 1, 0, D3DFMT_A8R8G8B8, D3DPOOL_MANAGED, &tex, NULL));
        CHECK(IDirect3DTexture9_LockRect(tex, 0, &lr, NULL, 0));
        for (y = 0; y < 4; y++)
            for (x = 0; x < 4; x++)
                ((DWORD *)((BYTE *)lr.pBits + y * lr.Pitch))[x] = D3DCOLOR_XRGB(40 + 70 * x, 40 + 70 * y, 200 - 40 * x);
        CHECK(IDirect3DTexture9_UnlockRect(tex, 0));
        world._11 = world._22 = world._33 = 1.0f;
        CHECK(IDirect3DDevice9_SetTransform(dev, D3DTS_WORLD, &world));
        memset(&tm, 0, sizeof(tm));
        tm._11 = 0.5f, tm._22 = -0.5f, tm._33 = 1.0f, tm._41 = 0.5f, tm._42 = 0.5f, tm._44 = 1.0f;
        CHECK(IDirect3DDevice9_SetTransform(dev, D3DTS_TEXTURE0, &tm));
        CHECK(IDirect3DDevice9_SetTexture(dev, 0, (IDirect3DBaseTexture9 *)tex));
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MAGFILTER, D3DTEXF_LINEAR));
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_MINFILTER, D3DTEXF_LINEAR));
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_ADDRESSU, D3DTADDRESS_CLAMP));
        CHECK(IDirect3DDevice9_SetSamplerState(dev, 0, D3DSAMP_ADDRESSV, D3DTADDRESS_CLAMP));
        CHECK(IDirect3DDevice9_SetTextureStageState(dev, 0, D3DTSS_COLOROP, D3DTOP_SELECTARG1));
        CHECK(IDirect3DDevice9_SetTextureStageState(dev, 0, D3DTSS_COLORARG1, D3DTA_TEXTURE));
        CHECK(IDirect3DDevice9_SetTextureStageState(dev, 0, D3DTSS_TEXCOORDINDEX, D3DTSS_TCI_CAMERASPACENORMAL));
        CHECK(IDirect3DDevice9_SetTextureStageState(dev, 0, D3DTSS_TEXTURETRANSFORMFLAGS, D3DTTFF_COUNT2));
        CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_LIGHTING, FALSE));
        CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_ZENABLE, D3DZB_TRUE));
        CHECK(IDirect3DDevice9_SetRenderState(dev, D3DRS_CULLMODE, D3DCULL_CCW));
        CHECK(IDirect3DDevice9_Clear(dev, 0, NULL, D3DCLEAR_TARGET | D3DCLEAR_ZBUFFER,
                                     D3DCOLOR_XRGB(0x10, 0x10, 0x10), 1.0f, 0));
        viewport(dev, 32, 32, 64, 64);
        CHECK(IDirect3DDevice9_BeginScene(dev));
        CHECK(IDirect3DDevice9_SetFVF(dev, D3DFVF_XYZ | D3DFVF_NORMAL));
        draw_sphere(dev);
        CHECK(IDirect3DDevice9_EndScene(dev));
        save_back_buffer(dev, "ff_texgen.ppm");
        CHECK(IDirect3DDevice9_SetTexture(dev, 0, NULL));
        IDirect3DTexture9_Release(tex);
        t = fopen("tolerance.txt", "w");
        if (!t) return 1;
        fprintf(t, "ff_texgen.ppm 2\n");
        fclose(t);
    }

    CHECK(IDirect3DDevice9_Present(dev, NULL, NULL, NULL, NULL));
    IDirect3DDevice9_Release(dev);
    printf("fixed_function_lit: done\n");
    return 0;
}
