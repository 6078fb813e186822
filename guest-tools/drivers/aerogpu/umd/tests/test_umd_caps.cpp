// Host test of the UMD's GetCaps through the adapter table (OpenAdapter -> pfnGetCaps), and
// of its consistency with what the translation core and the DDI layer accept: shader
// versions, texture size, render targets, streams, constants, formats, multisampling,
// query types, and the caps DWM relies on for D3D9Ex (seed 003). Run by
// guest-tools/tests/umd_caps.rs.
#include <cstdio>
#include <cstring>
#include <vector>

#include "../src/aerogpu_umd_caps.h"
#include "../src/aerogpu_umd_core.h"
#include "../src/aerogpu_umd_ddi.h"
#include "../src/aerogpu_umd_ff.h"
#include "../../tests_host/agpu_check.h"

using namespace aerogpu;

// The protocol handle namespace all the tests' devices share.
static CountingHandleChunks g_handles;

struct NullSink : SubmitSink {
    uint64_t n = 0;
    std::vector<std::vector<uint8_t>> streams;
    uint64_t submit(const Submission &s) override {
        streams.emplace_back(s.cmd, s.cmd + s.cmd_bytes);
        return ++n;
    }
    uint64_t completed_fence() override { return n; }
    bool wait_fence(uint64_t, uint32_t) override { return true; }
};

static D3DDDI_ADAPTERFUNCS g_afuncs;
static HANDLE g_adapter;

static HRESULT caps(UINT type, void *data, UINT size, void *info = nullptr) {
    D3DDDIARG_GETCAPS a = {type, info, data, size};
    return g_afuncs.pfnGetCaps(g_adapter, &a);
}

// The first packet of the last submitted stream of a given opcode (nullptr if none).
static const uint8_t *find_packet(const std::vector<uint8_t> &s, uint32_t opcode) {
    size_t off = sizeof(aerogpu_cmd_stream_header);
    while (off + 8 <= s.size()) {
        aerogpu_cmd_hdr h;
        std::memcpy(&h, s.data() + off, 8);
        if (h.size_bytes < 8 || off + h.size_bytes > s.size()) return nullptr;
        if (h.opcode == opcode) return s.data() + off;
        off += h.size_bytes;
    }
    return nullptr;
}

static void test_d3d9_caps() {
    D3DCAPS9 c;
    std::memset(&c, 0xCD, sizeof(c));
    CHECK(caps(D3DDDICAPS_GETD3D9CAPS, &c, sizeof(c) - 1) == HRESULT(0x80070057)); // too small
    CHECK(caps(D3DDDICAPS_GETD3D9CAPS, nullptr, sizeof(c)) == HRESULT(0x80070057));
    CHECK(caps(D3DDDICAPS_GETD3D9CAPS, &c, sizeof(c)) == 0);
    CHECK(c.DeviceType == D3DDEVTYPE_HAL && c.NumberOfAdaptersInGroup == 1);

    // Shader models: exactly what the core takes.
    CHECK(c.VertexShaderVersion == kMaxVertexShaderVersion && c.PixelShaderVersion == kMaxPixelShaderVersion);
    CHECK(c.VertexShaderVersion == D3DVS_VERSION(3, 0) && c.PixelShaderVersion == D3DPS_VERSION(3, 0));
    NullSink sink;
    Device d(sink, g_handles, 1);
    const uint32_t vs[] = {c.VertexShaderVersion, 0x0000FFFFu};
    const uint32_t vs_above[] = {c.VertexShaderVersion + 1, 0x0000FFFFu};
    const uint32_t ps[] = {c.PixelShaderVersion, 0x0000FFFFu};
    const uint32_t ps_above[] = {c.PixelShaderVersion + 1, 0x0000FFFFu};
    CHECK(d.create_shader(AEROGPU_SHADER_STAGE_VERTEX, vs, sizeof(vs)) != 0);
    CHECK(d.create_shader(AEROGPU_SHADER_STAGE_VERTEX, vs_above, sizeof(vs_above)) == 0);
    CHECK(d.create_shader(AEROGPU_SHADER_STAGE_PIXEL, ps, sizeof(ps)) != 0);
    CHECK(d.create_shader(AEROGPU_SHADER_STAGE_PIXEL, ps_above, sizeof(ps_above)) == 0);
    // Microsoft's vs_3_0/ps_3_0 requirements.
    CHECK(c.VS20Caps.NumTemps >= 32 && c.PS20Caps.NumTemps >= 32);
    CHECK(c.VS20Caps.DynamicFlowControlDepth >= 24 && c.PS20Caps.DynamicFlowControlDepth >= 24);
    CHECK(c.VS20Caps.StaticFlowControlDepth >= 4 && c.PS20Caps.StaticFlowControlDepth >= 4);
    CHECK(c.VS20Caps.Caps & D3DVS20CAPS_PREDICATION);
    const DWORD ps30_caps = D3DPS20CAPS_ARBITRARYSWIZZLE | D3DPS20CAPS_GRADIENTINSTRUCTIONS |
                            D3DPS20CAPS_PREDICATION | D3DPS20CAPS_NODEPENDENTREADLIMIT |
                            D3DPS20CAPS_NOTEXINSTRUCTIONLIMIT;
    CHECK((c.PS20Caps.Caps & ps30_caps) == ps30_caps && c.PS20Caps.NumInstructionSlots >= 512);
    CHECK(c.MaxVShaderInstructionsExecuted >= 65535 && c.MaxPShaderInstructionsExecuted >= 65535);
    CHECK(c.MaxVertexShader30InstructionSlots >= 512 && c.MaxPixelShader30InstructionSlots >= 512);
    CHECK(c.MaxVertexShader30InstructionSlots <= 32768 && c.MaxPixelShader30InstructionSlots <= 32768);
    CHECK(c.MaxVertexShaderConst == 256);
    CHECK(c.VertexTextureFilterCaps == 0); // no vertex texture fetch advertised

    // Limits within the protocol, and the core accepts the advertised maximum.
    CHECK(c.MaxTextureWidth <= AEROGPU_MAX_TEXTURE_DIM && c.MaxTextureHeight <= AEROGPU_MAX_TEXTURE_DIM);
    CHECK(c.MaxTextureWidth >= 2048 && c.MaxTextureAspectRatio <= c.MaxTextureWidth);
    ResourceDesc t;
    t.kind = ResourceKind::Texture2D;
    t.d3d_format = D3DDDIFMT_A8R8G8B8;
    t.width = c.MaxTextureWidth;
    t.height = c.MaxTextureHeight;
    CHECK(d.create_resource(t) != 0);
    t.width = c.MaxTextureWidth + 1;
    CHECK(d.create_resource(t) == 0);
    CHECK(c.NumSimultaneousRTs >= 1 && c.NumSimultaneousRTs <= AEROGPU_MAX_RENDER_TARGETS);
    t.width = t.height = 16;
    uint32_t rt = d.create_resource(t);
    CHECK(d.set_render_target(c.NumSimultaneousRTs - 1, rt) == kS_OK);
    CHECK(d.set_render_target(c.NumSimultaneousRTs, rt) == kD3DERR_INVALIDCALL);
    CHECK(c.MaxStreams >= 1 && c.MaxStreams <= AEROGPU_MAX_VERTEX_BUFFERS);
    ResourceDesc vb;
    vb.size_bytes = 64;
    uint32_t hvb = d.create_resource(vb);
    CHECK(d.set_stream_source(c.MaxStreams - 1, hvb, 0, c.MaxStreamStride) == kS_OK);
    CHECK(d.set_stream_source(c.MaxStreams, hvb, 0, 16) == kD3DERR_INVALIDCALL);
    std::vector<float> consts(size_t(c.MaxVertexShaderConst + 1) * 4, 0.0f);
    CHECK(c.MaxVertexShaderConst >= 256 && c.MaxVertexShaderConst <= AEROGPU_MAX_SHADER_CONSTANTS_F);
    CHECK(d.set_shader_constants_f(AEROGPU_SHADER_STAGE_VERTEX, 0, consts.data(), c.MaxVertexShaderConst) == kS_OK);
    CHECK(d.set_shader_constants_f(AEROGPU_SHADER_STAGE_VERTEX, 0, consts.data(), c.MaxVertexShaderConst + 1) ==
          kD3DERR_INVALIDCALL);
    CHECK(c.MaxVertexIndex > 0xFFFF); // 32-bit index buffers are translated
    // Features the core does not translate stay off.
    // Cube and volume textures: the core creates them (aerogpu_cmd.h's CUBE/VOLUME layout).
    CHECK((c.TextureCaps & (D3DPTEXTURECAPS_CUBEMAP | D3DPTEXTURECAPS_VOLUMEMAP)) ==
          (D3DPTEXTURECAPS_CUBEMAP | D3DPTEXTURECAPS_VOLUMEMAP));
    CHECK(c.MaxVolumeExtent > 0 && c.MaxVolumeExtent <= AEROGPU_MAX_VOLUME_DEPTH);
    CHECK(!(c.DevCaps & (D3DDEVCAPS_RTPATCHES | D3DDEVCAPS_NPATCHES | D3DDEVCAPS_PUREDEVICE)));
    CHECK(c.MaxUserClipPlanes == 0 && !(c.VertexProcessingCaps & 0x1 /* TEXGEN */));
    // The fixed-function generator's limits and ops (aerogpu_umd_ff.h).
    CHECK(c.MaxActiveLights == ff::kMaxLights && c.MaxTextureBlendStages == ff::kMaxStages);
    for (uint32_t op = 1; op <= 26; op++)
        CHECK(((c.TextureOpCaps >> (op - 1)) & 1) == (ff::stage_op_supported(op) ? 1u : 0u));
    CHECK(c.MaxAnisotropy == 1 && !(c.SrcBlendCaps & D3DPBLENDCAPS_BLENDFACTOR));

    // Every advertised blend factor reaches the blend-state packet as itself, not as the
    // fallback the core uses for unknown values (ONE).
    for (uint32_t bit = 0; bit < 16; bit++) {
        if (!(c.SrcBlendCaps & (1u << bit))) continue;
        uint32_t blend = bit + 1; // D3DBLEND value of D3DPBLENDCAPS bit `bit`
        NullSink s2;
        Device e(s2, g_handles, 1);
        uint32_t hvs = e.create_shader(AEROGPU_SHADER_STAGE_VERTEX, vs, sizeof(vs));
        uint32_t hps = e.create_shader(AEROGPU_SHADER_STAGE_PIXEL, ps, sizeof(ps));
        const uint8_t decl[] = {0, 0, 0, 0, 2, 0, 0, 0, 0xFF, 0, 0, 0, 17, 0, 0, 0};
        uint32_t hdecl = e.create_vertex_decl(decl, sizeof(decl));
        e.set_shaders(hvs, hps);
        e.set_vertex_decl(hdecl);
        e.set_render_state(19 /* SRCBLEND */, blend);
        e.draw_primitive(AEROGPU_TOPOLOGY_TRIANGLELIST, 0, 1);
        e.flush();
        const uint8_t *p = s2.streams.empty() ? nullptr : find_packet(s2.streams.back(), AEROGPU_CMD_SET_BLEND_STATE);
        CHECK(p != nullptr);
        if (!p) continue;
        aerogpu_cmd_set_blend_state b;
        std::memcpy(&b, p, sizeof(b));
        CHECK(blend == 2 /* D3DBLEND_ONE */ ? b.src_factor == AEROGPU_BLEND_ONE : b.src_factor != AEROGPU_BLEND_ONE);
    }

    // What DWM's D3D9Ex composition needs (seed 003): a HAL with hardware vertex processing
    // and ps_2_0, shared resources, vsync'd and immediate presents, scanline reads.
    CHECK(c.Caps2 & D3DCAPS2_CANSHARERESOURCE);
    CHECK(c.DevCaps2 & D3DDEVCAPS2_CAN_STRETCHRECT_FROM_TEXTURES);
    CHECK((c.DevCaps & (D3DDEVCAPS_HWTRANSFORMANDLIGHT | D3DDEVCAPS_HWRASTERIZATION)) ==
          (D3DDEVCAPS_HWTRANSFORMANDLIGHT | D3DDEVCAPS_HWRASTERIZATION));
    CHECK(c.PixelShaderVersion >= D3DPS_VERSION(2, 0));
    CHECK((c.PresentationIntervals & (D3DPRESENT_INTERVAL_ONE | D3DPRESENT_INTERVAL_IMMEDIATE)) ==
          (D3DPRESENT_INTERVAL_ONE | D3DPRESENT_INTERVAL_IMMEDIATE));
    CHECK(c.Caps & D3DCAPS_READ_SCANLINE);
    CHECK((c.SrcBlendCaps & (D3DPBLENDCAPS_SRCALPHA | D3DPBLENDCAPS_INVSRCALPHA | D3DPBLENDCAPS_ONE)) ==
          (D3DPBLENDCAPS_SRCALPHA | D3DPBLENDCAPS_INVSRCALPHA | D3DPBLENDCAPS_ONE));
    CHECK((c.TextureFilterCaps & (D3DPTFILTERCAPS_MINFLINEAR | D3DPTFILTERCAPS_MAGFLINEAR)) ==
          (D3DPTFILTERCAPS_MINFLINEAR | D3DPTFILTERCAPS_MAGFLINEAR));
    CHECK(c.TextureAddressCaps & D3DPTADDRESSCAPS_CLAMP);

    // StretchRect filters: point and linear, minifying and magnifying (the sampler filters
    // the blit draw uses, so within TextureFilterCaps), and a stretching blit with each
    // samples with exactly that filter.
    const uint32_t stretch = D3DPTFILTERCAPS_MINFPOINT | D3DPTFILTERCAPS_MINFLINEAR | D3DPTFILTERCAPS_MAGFPOINT |
                             D3DPTFILTERCAPS_MAGFLINEAR;
    CHECK(c.StretchRectFilterCaps == stretch && (c.TextureFilterCaps & stretch) == stretch);
    for (int linear = 0; linear < 2; linear++) {
        NullSink s3;
        Device e(s3, g_handles, 1);
        ResourceDesc src, dst;
        src.kind = dst.kind = ResourceKind::Texture2D;
        src.d3d_format = dst.d3d_format = D3DDDIFMT_A8R8G8B8;
        src.width = src.height = 32;
        src.usage = AEROGPU_RESOURCE_USAGE_TEXTURE;
        dst.width = dst.height = 64;
        dst.usage = AEROGPU_RESOURCE_USAGE_RENDER_TARGET;
        uint32_t hs = e.create_resource(src), hd = e.create_resource(dst);
        CHECK(e.blit(hd, Rect{0, 0, 64, 64}, hs, Rect{0, 0, 32, 32}, linear ? kBlitLinear : 0) == kS_OK); // mag
        CHECK(e.blit(hd, Rect{0, 0, 8, 8}, hs, Rect{0, 0, 32, 32}, linear ? kBlitLinear : 0) == kS_OK);   // min
        e.flush();
        uint32_t want = linear ? 2u /* D3DTEXF_LINEAR */ : 1u /* D3DTEXF_POINT */, mag = 0, min = 0;
        const std::vector<uint8_t> &st = s3.streams.back();
        bool past_defaults = false; // the device's default state opens its first batch
        for (size_t off = sizeof(aerogpu_cmd_stream_header); off + 8 <= st.size();) {
            aerogpu_cmd_hdr h;
            std::memcpy(&h, st.data() + off, 8);
            if (h.size_bytes < 8) break;
            past_defaults |= h.opcode != AEROGPU_CMD_SET_SAMPLER_STATE && h.opcode != AEROGPU_CMD_SET_RENDER_STATE;
            if (past_defaults && h.opcode == AEROGPU_CMD_SET_SAMPLER_STATE && mag + min < 2) {
                aerogpu_cmd_set_sampler_state ss;
                std::memcpy(&ss, st.data() + off, sizeof(ss));
                if (ss.state == 5 /* MAGFILTER */ && ss.value == want) mag = 1;
                if (ss.state == 6 /* MINFILTER */ && ss.value == want) min = 1;
            }
            off += h.size_bytes;
        }
        // Point is the sampler default: only linear needs packets to switch.
        CHECK(linear ? (mag && min) : (!mag && !min && find_packet(st, AEROGPU_CMD_DRAW) != nullptr));
    }
}

static void test_formats() {
    UINT n = 0;
    CHECK(caps(D3DDDICAPS_GETFORMATCOUNT, &n, sizeof(n)) == 0);
    CHECK(n == format_op_count() && n > 0);
    std::vector<FORMATOP> ops(n + 1);
    std::memset(ops.data(), 0xEE, ops.size() * sizeof(FORMATOP));
    CHECK(caps(D3DDDICAPS_GETFORMATDATA, ops.data(), UINT(n * sizeof(FORMATOP))) == 0);
    uint32_t past;
    std::memcpy(&past, &ops[n], sizeof(past));
    CHECK(past == 0xEEEEEEEEu); // nothing written past the size
    bool x8r8g8b8_display = false, a8r8g8b8_rt_tex = false;
    NullSink sink;
    Device d(sink, g_handles, 1);
    for (UINT i = 0; i < n; i++) {
        const FORMATOP &f = ops[i];
        uint32_t agpu = d3d_format_to_aerogpu(f.Format);
        // Every listed format is one the protocol maps, listed once.
        CHECK(agpu != 0 && row_pitch_for(f.Format, 16) != 0);
        for (UINT j = 0; j < i; j++) CHECK(ops[j].Format != f.Format);
        bool depth_fmt = agpu == AEROGPU_FORMAT_D24_UNORM_S8_UINT || agpu == AEROGPU_FORMAT_D16_UNORM ||
                         agpu == AEROGPU_FORMAT_D32_FLOAT;
        CHECK(((f.Operations & FORMATOP_ZSTENCIL) != 0) == depth_fmt);
        CHECK(!depth_fmt || !(f.Operations & (FORMATOP_TEXTURE | FORMATOP_OFFSCREEN_RENDERTARGET)));
        // No MSAA, no vertex textures; cube and volume textures only of sampled formats,
        // and the core creates them.
        CHECK(f.FlipMsTypes == 0 && f.BltMsTypes == 0);
        CHECK(!(f.Operations & FORMATOP_VERTEXTEXTURE));
        CHECK(!(f.Operations & (FORMATOP_CUBETEXTURE | FORMATOP_VOLUMETEXTURE)) || (f.Operations & FORMATOP_TEXTURE));
        for (UINT kind = 0; kind < 2; kind++) {
            if (!(f.Operations & (kind ? FORMATOP_VOLUMETEXTURE : FORMATOP_CUBETEXTURE))) continue;
            ResourceDesc t;
            t.kind = ResourceKind::Texture2D;
            t.d3d_format = f.Format;
            t.width = t.height = 8;
            t.levels = 2;
            t.usage = AEROGPU_RESOURCE_USAGE_TEXTURE;
            if (kind) t.volume = true, t.depth = 4;
            else t.cube = true, t.layers = 6;
            CHECK(d.create_resource(t) != 0);
        }
        // The core creates what the operations promise.
        ResourceDesc t;
        t.kind = ResourceKind::Texture2D;
        t.d3d_format = f.Format;
        t.width = 64;
        t.height = 64;
        t.usage = (f.Operations & FORMATOP_TEXTURE ? AEROGPU_RESOURCE_USAGE_TEXTURE : 0) |
                  (f.Operations & FORMATOP_OFFSCREEN_RENDERTARGET ? AEROGPU_RESOURCE_USAGE_RENDER_TARGET : 0) |
                  (depth_fmt ? AEROGPU_RESOURCE_USAGE_DEPTH_STENCIL : 0);
        CHECK(d.create_resource(t) != 0);
        if (f.Operations & FORMATOP_TEXTURE) {
            t.levels = 7; // full chain of a 64x64 texture
            CHECK(d.create_resource(t) != 0);
        }
        if (f.Format == D3DDDIFMT_X8R8G8B8)
            x8r8g8b8_display = (f.Operations & (FORMATOP_DISPLAYMODE | FORMATOP_3DACCELERATION)) ==
                               (FORMATOP_DISPLAYMODE | FORMATOP_3DACCELERATION);
        if (f.Format == D3DDDIFMT_A8R8G8B8)
            a8r8g8b8_rt_tex = (f.Operations & (FORMATOP_TEXTURE | FORMATOP_OFFSCREEN_RENDERTARGET)) ==
                              (FORMATOP_TEXTURE | FORMATOP_OFFSCREEN_RENDERTARGET);
    }
    // The scanout mode format is 3D-accelerated; DWM's redirected surfaces are A8R8G8B8
    // render targets it samples as textures.
    CHECK(x8r8g8b8_display && a8r8g8b8_rt_tex);
    // A short buffer gets a prefix, never an overrun.
    std::vector<FORMATOP> two(3);
    std::memset(two.data(), 0xEE, two.size() * sizeof(FORMATOP));
    CHECK(caps(D3DDDICAPS_GETFORMATDATA, two.data(), 2 * sizeof(FORMATOP) + 3) == 0);
    CHECK(two[0].Format == ops[0].Format && two[1].Format == ops[1].Format);
    CHECK(reinterpret_cast<uint8_t *>(two.data())[2 * sizeof(FORMATOP) + 3] == 0xEE);
}

static void test_msaa_queries_ddraw() {
    for (UINT ms = 2; ms <= 16; ms++) {
        DDIMULTISAMPLEQUALITYLEVELSDATA q = {D3DDDIFMT_A8R8G8B8, 0, ms, 99};
        CHECK(caps(D3DDDICAPS_GETMULTISAMPLEQUALITYLEVELS, &q, sizeof(q)) == 0 && q.QualityLevels == 0);
        CHECK(q.Format == D3DDDIFMT_A8R8G8B8 && q.MsType == ms);
        UINT levels = 5;
        CHECK(caps(D3DDDICAPS_GETMULTISAMPLEQUALITYLEVELS, &levels, sizeof(levels), &q) == 0 && levels == 0);
    }
    UINT count = 0;
    CHECK(caps(D3DDDICAPS_GETD3DQUERYCOUNT, &count, sizeof(count)) == 0 && count == 1);
    UINT types[2] = {0, 0xEEEEEEEEu};
    CHECK(caps(D3DDDICAPS_GETD3DQUERYDATA, types, sizeof(UINT) * count) == 0);
    CHECK(types[0] == D3DDDIQUERYTYPE_EVENT && types[1] == 0xEEEEEEEEu);
    DDRAW_CAPS dd;
    CHECK(caps(D3DDDICAPS_DDRAW, &dd, sizeof(dd)) == 0);
    CHECK(dd.Caps2 & DDRAW_CAPS2_FLIPNOVSYNC);
    DDRAW_MODE_SPECIFIC_CAPS m;
    UINT head = 0;
    CHECK(caps(D3DDDICAPS_DDRAW_MODE_SPECIFIC, &m, sizeof(m), &head) == 0);
    CHECK(m.Head == 0 && m.Caps == MODE_CAPS_READSCANLINE && m.MaxVisibleOverlays == 0);
    // Types with nothing to offer: zero counts.
    UINT decoders = 7;
    CHECK(caps(D3DDDICAPS_GETDECODEGUIDCOUNT, &decoders, sizeof(decoders)) == 0 && decoders == 0);
}

// The DDI device agrees: every listed query type can be created, others cannot; MSAA
// resources (no quality levels advertised) are refused.
static HRESULT APIENTRY cb_noop_ctx(HANDLE, D3DDDICB_CREATECONTEXT *c) {
    c->hContext = reinterpret_cast<HANDLE>(uintptr_t(0xC0));
    return 0;
}

static void test_ddi_device_agrees() {
    D3DDDI_DEVICECALLBACKS cb;
    std::memset(&cb, 0, sizeof(cb));
    cb.pfnCreateContextCb = cb_noop_ctx;
    D3DDDI_DEVICEFUNCS f;
    std::memset(&f, 0, sizeof(f));
    D3DDDIARG_CREATEDEVICE cd;
    std::memset(&cd, 0, sizeof(cd));
    cd.hDevice = reinterpret_cast<HANDLE>(uintptr_t(0xDE));
    cd.pCallbacks = &cb;
    cd.pDeviceFuncs = &f;
    CHECK(g_afuncs.pfnCreateDevice(g_adapter, &cd) == 0);
    HANDLE dev = cd.hDevice;
    UINT types[4] = {};
    CHECK(caps(D3DDDICAPS_GETD3DQUERYDATA, types, sizeof(types)) == 0);
    D3DDDIARG_CREATEQUERY q = {types[0], nullptr};
    CHECK(f.pfnCreateQuery(dev, &q) == 0 && q.hQuery);
    D3DDDIARG_CREATEQUERY occl = {9 /* OCCLUSION */, nullptr};
    CHECK(f.pfnCreateQuery(dev, &occl) == HRESULT(0x8876086A));
    D3DDDI_SURFACEINFO surf = {64, 64, 1, nullptr, 0, 0};
    D3DDDIARG_CREATERESOURCE cr;
    std::memset(&cr, 0, sizeof(cr));
    cr.Format = D3DDDIFMT_A8R8G8B8;
    cr.Pool = D3DDDIPOOL_VIDEOMEMORY;
    cr.pSurfList = &surf;
    cr.SurfCount = 1;
    cr.MultisampleType = 4;
    cr.Flags.RenderTarget = 1;
    CHECK(f.pfnCreateResource(dev, &cr) == HRESULT(0x8876086A));
    CHECK(f.pfnDestroyDevice(dev) == 0);
}

int main() {
    D3DDDI_ADAPTERCALLBACKS acb;
    std::memset(&acb, 0, sizeof(acb));
    D3DDDIARG_OPENADAPTER oa;
    std::memset(&oa, 0, sizeof(oa));
    oa.hAdapter = reinterpret_cast<HANDLE>(uintptr_t(0xAD));
    oa.Interface = D3D_UMD_INTERFACE_VERSION_WIN7;
    oa.pAdapterCallbacks = &acb;
    oa.pAdapterFuncs = &g_afuncs;
    if (aerogpu_umd_open_adapter(&oa) != 0 || !g_afuncs.pfnGetCaps) {
        std::printf("OpenAdapter failed\n");
        return 1;
    }
    g_adapter = oa.hAdapter;
    test_d3d9_caps();
    test_formats();
    test_msaa_queries_ddraw();
    test_ddi_device_agrees();
    g_afuncs.pfnCloseAdapter(g_adapter);
    return agpu_check_report();
}
