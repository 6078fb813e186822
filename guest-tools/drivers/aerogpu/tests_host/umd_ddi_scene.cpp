// The UMD driven through its D3D9 DDI tables with a fake Windows 7 runtime: OpenAdapter ->
// pfnCreateDevice, every device-table entry non-NULL, a stub answering D3DERR_NOTAVAILABLE,
// exactly the documented entries left as stubs, the legacy fixed-function/resource state
// cached through the table and its state blocks (of it only the int/bool shader constants
// are emitted), the bring-up no-ops,
// then a small scene (VB/IB via CreateResource + Lock/Unlock, shaders, declaration, states,
// draws, Present, EVENT query) whose WDDM submissions (pfnRenderCb/pfnPresentCb with the
// allocation list) the fake runtime hands to the KMD's portable staging/ring code, recorded
// as a trace the Rust device replays.
//
// The scene runs with the runtime's three ways of handing out submission buffers
// (fake_runtime.h): the whole buffers at pfnCreateContextCb (full), none (none: the UMD asks
// pfnRenderCb for them) or a one-entry allocation list (small-list: asked for when a batch
// needs more).
//
// usage: umd_ddi_scene OUT.trace [full|none|small-list]
#include <string>
#include <vector>

#include "fake_runtime.h"
#include "../umd/src/aerogpu_umd_core.h"
#include "../umd/src/aerogpu_umd_ddi.h"
#include "../umd/src/aerogpu_umd_legacy.h"

static uint64_t g_counter;        // the cross-process shared alloc_id counter
static uint64_t next_shared() { return ++g_counter; }
static uint64_t g_handle_chunks;  // the cross-process protocol handle counter
static uint64_t next_handle_chunk() { return ++g_handle_chunks; }
static std::vector<std::string> g_logs;
static void capture_log(const char *m) { g_logs.push_back(m); }
static uint32_t g_slept_ms;
static void count_sleep(uint32_t ms) { g_slept_ms += ms; }

// vs_2_0 with static flow control: r0 = v0; rep i0 { r0 += c1 }; if b0 { r0 += c1 }; oPos = r0.
static const uint32_t kFlowVs[] = {
    0xFFFE0200u,
    0x0200001Fu, 0x80000000u, 0x900F0000u,              // dcl_position v0
    0x02000001u, 0x800F0000u, 0x90E40000u,              // mov r0, v0
    0x01000026u, 0xF0E40000u,                           // rep i0
    0x03000002u, 0x800F0000u, 0x80E40000u, 0xA0E40001u, //   add r0, r0, c1
    0x00000027u,                                        // endrep
    0x01000028u, 0xE0E40800u,                           // if b0
    0x03000002u, 0x800F0000u, 0x80E40000u, 0xA0E40001u, //   add r0, r0, c1
    0x0000002Bu,                                        // endif
    0x02000001u, 0xC00F0000u, 0x80E40000u,              // mov oPos, r0
    0x0000FFFFu,
};

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) return 2;
    const std::string mode = argc == 3 ? argv[2] : "full";
    if (mode == "none") {
        F.buffers = FakeRuntime::Buffers::None;
    } else if (mode == "small-list") {
        F.buffers = FakeRuntime::Buffers::SmallList;
    } else if (mode != "full") {
        return 2;
    }
    if (int e = start_trace(argv[1])) return e;
    aerogpu_umd_set_log(capture_log);
    aerogpu_umd_set_handle_counter(next_handle_chunk); // the app's handles: chunk 1, from 0x1000

    // OpenAdapter -> adapter table.
    D3DDDI_ADAPTERCALLBACKS acb;
    std::memset(&acb, 0, sizeof(acb));
    D3DDDI_ADAPTERFUNCS afuncs;
    std::memset(&afuncs, 0, sizeof(afuncs));
    D3DDDIARG_OPENADAPTER oa;
    std::memset(&oa, 0, sizeof(oa));
    oa.hAdapter = H(0xAD);
    oa.Interface = D3D_UMD_INTERFACE_VERSION_WIN7;
    oa.pAdapterCallbacks = &acb;
    oa.pAdapterFuncs = &afuncs;
    REQUIRE(aerogpu_umd_open_adapter(&oa) == 0);
    REQUIRE(afuncs.pfnCreateDevice && afuncs.pfnGetCaps && afuncs.pfnCloseAdapter);

    // CreateDevice through the adapter table, into a table poisoned with NULLs.
    D3DDDI_DEVICECALLBACKS cb = device_callbacks();
    D3DDDI_DEVICEFUNCS f;
    std::memset(&f, 0, sizeof(f));
    D3DDDIARG_CREATEDEVICE cd;
    std::memset(&cd, 0, sizeof(cd));
    cd.hDevice = H(0xDE);
    cd.Interface = D3D_UMD_INTERFACE_VERSION_WIN7;
    cd.pCallbacks = &cb;
    cd.pDeviceFuncs = &f;
    REQUIRE(afuncs.pfnCreateDevice(oa.hAdapter, &cd) == 0);
    HANDLE dev = cd.hDevice;
    REQUIRE(dev && dev != H(0xDE));
    REQUIRE(aerogpu_umd_first_null_entry(&f) == -1);
    // The check itself finds a NULL slot and names it.
    {
        D3DDDI_DEVICEFUNCS broken = f;
        broken.pfnGetQueryData = nullptr;
        int i = aerogpu_umd_first_null_entry(&broken);
        REQUIRE(i == 61 && std::strcmp(aerogpu_umd_func_name(i), "pfnGetQueryData") == 0);
    }
    // Stubs: D3DDERR_NOTAVAILABLE, logged once.
    REQUIRE(f.pfnDrawRectPatch(dev, nullptr, nullptr, nullptr) == HRESULT(0x8876086A));
    REQUIRE(f.pfnDecodeBeginFrame(dev, nullptr) == HRESULT(0x8876086A));
    REQUIRE(f.pfnDrawRectPatch(dev, nullptr, nullptr, nullptr) == HRESULT(0x8876086A));
    size_t stub_logs = 0;
    for (auto &l : g_logs) if (l.find("stub pfnDrawRectPatch") != std::string::npos) stub_logs++;
    REQUIRE(stub_logs == 1);
    // Exactly these entries are still stubs: the spec's patch DDIs and the video, overlay,
    // content-protection and not-yet-implemented entries the UMD documents a reason for.
    {
        static const char *const kExpectedStubs[] = {
            "pfnValidateDevice", "pfnDrawRectPatch", "pfnDrawTriPatch", "pfnComposeRects",
            "pfnCreateDecodeDevice", "pfnDestroyDecodeDevice", "pfnSetDecodeRenderTarget",
            "pfnDecodeBeginFrame", "pfnDecodeEndFrame", "pfnDecodeExecute", "pfnDecodeExtensionExecute",
            "pfnCreateVideoProcessDevice", "pfnDestroyVideoProcessDevice", "pfnVideoProcessBeginFrame",
            "pfnVideoProcessEndFrame", "pfnSetVideoProcessRenderTarget", "pfnVideoProcessBlt",
            "pfnCreateExtensionDevice", "pfnDestroyExtensionDevice", "pfnExtensionExecute", "pfnCreateOverlay",
            "pfnUpdateOverlay", "pfnFlipOverlay", "pfnGetOverlayColorControls", "pfnSetOverlayColorControls",
            "pfnDestroyOverlay", "pfnQueryResourceResidency", "pfnGetCaptureAllocationHandle",
            "pfnCaptureToSysMem", "pfnLockAsync", "pfnUnlockAsync", "pfnRename", "pfnCreateVideoProcessor",
            "pfnSetVideoProcessBltState", "pfnGetVideoProcessBltStatePrivate", "pfnSetVideoProcessStreamState",
            "pfnGetVideoProcessStreamStatePrivate", "pfnVideoProcessBltHD", "pfnDestroyVideoProcessor",
            "pfnCreateAuthenticatedChannel", "pfnAuthenticatedChannelKeyExchange",
            "pfnQueryAuthenticatedChannel", "pfnConfigureAuthenticatedChannel",
            "pfnDestroyAuthenticatedChannel", "pfnCreateCryptoSession", "pfnCryptoSessionKeyExchange",
            "pfnDestroyCryptoSession", "pfnEncryptionBlt", "pfnGetPitch", "pfnStartSessionKeyRefresh",
            "pfnFinishSessionKeyRefresh", "pfnGetEncryptionBltKey", "pfnDecryptionBlt",
            "pfnResolveSharedResource",
        };
        std::vector<std::string> stubs;
        for (int i = 0; i < AEROGPU_D3DDDI_DEVICEFUNCS_COUNT; i++) {
            bool stub = aerogpu_umd_is_stub(&f, i) != 0;
            if (stub != (aerogpu_umd_stub_reason(i) != nullptr)) {
                std::fprintf(stderr, "%s: stub %d but reason %s\n", aerogpu_umd_func_name(i), int(stub),
                             aerogpu_umd_stub_reason(i) ? "listed" : "missing");
                return 3;
            }
            if (stub) stubs.push_back(aerogpu_umd_func_name(i));
        }
        std::vector<std::string> want(std::begin(kExpectedStubs), std::end(kExpectedStubs));
        if (stubs != want) {
            for (auto &n : stubs) std::fprintf(stderr, "stub: %s\n", n.c_str());
            REQUIRE(stubs == want);
        }
        // The bring-up no-ops and the legacy-state entries are real (not stubs).
        REQUIRE(!aerogpu_umd_is_stub(&f, 53) && !aerogpu_umd_is_stub(&f, 64) && !aerogpu_umd_is_stub(&f, 26));
    }

    // Render target, VB, IB.
    D3DDDI_SURFACEINFO rt_surf = {256, 256, 1, nullptr, 0, 0};
    D3DDDIARG_CREATERESOURCE cr = one_surface(rt_surf, D3DDDIFMT_A8R8G8B8, H(0x501));
    cr.Flags.RenderTarget = 1;
    REQUIRE(f.pfnCreateResource(dev, &cr) == 0);
    HANDLE rt = cr.hResource;
    D3DDDI_SURFACEINFO vb_surf = {3 * 20, 1, 1, nullptr, 0, 0};
    cr = one_surface(vb_surf, D3DDDIFMT_VERTEXDATA, H(0x502));
    cr.Flags.VertexBuffer = 1;
    REQUIRE(f.pfnCreateResource(dev, &cr) == 0);
    HANDLE vb = cr.hResource;
    D3DDDI_SURFACEINFO ib_surf = {6, 1, 1, nullptr, 0, 0};
    cr.Format = D3DDDIFMT_INDEX16;
    cr.pSurfList = &ib_surf;
    cr.hResource = H(0x503);
    cr.Flags.Value = 0;
    cr.Flags.IndexBuffer = 1;
    REQUIRE(f.pfnCreateResource(dev, &cr) == 0);
    HANDLE ib = cr.hResource;
    REQUIRE(F.allocs.size() == 3);
    // Without the cross-process alloc_id counter the "KMD" assigns the shared alloc_id.
    agpu_share_init(&F.shares, 0x5EED);
    cr.Flags.Value = 0;
    cr.Flags.SharedResource = 1;
    cr.Flags.RenderTarget = 1;
    cr.Format = D3DDDIFMT_A8R8G8B8;
    cr.pSurfList = &rt_surf;
    cr.hResource = H(0x505);
    REQUIRE(f.pfnCreateResource(dev, &cr) == 0);
    REQUIRE(F.allocs.size() == 4 && F.shared_allocs == 1 && F.next_kmd_id == AEROGPU_WDDM_ALLOC_ID_KMD_MIN + 1);
    // Shared vertex buffers are not supported (MVP: single-texture shared surfaces).
    D3DDDIARG_CREATERESOURCE shared_vb;
    std::memset(&shared_vb, 0, sizeof(shared_vb));
    shared_vb.Format = D3DDDIFMT_VERTEXDATA;
    shared_vb.pSurfList = &vb_surf;
    shared_vb.SurfCount = 1;
    shared_vb.Flags.VertexBuffer = 1;
    shared_vb.Flags.SharedResource = 1;
    REQUIRE(f.pfnCreateResource(dev, &shared_vb) == HRESULT(0x8876086A));

    // Lock / write / Unlock.
    D3DDDIARG_LOCK lk;
    std::memset(&lk, 0, sizeof(lk));
    lk.hResource = vb;
    lk.Flags.Discard = 1;
    REQUIRE(f.pfnLock(dev, &lk) == 0 && lk.pSurfData);
    const float verts[15] = {-1, -1, 0, 1, 0, 0, 1, 0, 1, 0, 1, -1, 0, 1, 0};
    std::memcpy(lk.pSurfData, verts, sizeof(verts));
    D3DDDIARG_UNLOCK ul = {vb, 0, 0};
    REQUIRE(f.pfnUnlock(dev, &ul) == 0);
    std::memset(&lk, 0, sizeof(lk));
    lk.hResource = ib;
    lk.Flags.RangeValid = 1;
    lk.Range.Offset = 0;
    lk.Range.Size = 6;
    REQUIRE(f.pfnLock(dev, &lk) == 0 && lk.pSurfData);
    const uint16_t idx[3] = {0, 1, 2};
    std::memcpy(lk.pSurfData, idx, sizeof(idx));
    ul.hResource = ib;
    REQUIRE(f.pfnUnlock(dev, &ul) == 0);

    // Shaders, declaration, constants.
    D3DDDIARG_CREATEVERTEXSHADERFUNC vsa = {nullptr, sizeof(kVs)};
    REQUIRE(f.pfnCreateVertexShaderFunc(dev, &vsa, kVs) == 0 && vsa.ShaderHandle);
    D3DDDIARG_CREATEPIXELSHADER psa = {nullptr, sizeof(kPs)};
    REQUIRE(f.pfnCreatePixelShader(dev, &psa, kPs) == 0 && psa.ShaderHandle);
    D3DDDIVERTEXELEMENT el[2] = {{0, 0, 3, 0, 0, 0}, {0, 16, 4, 0, 10, 0}};
    D3DDDIARG_CREATEVERTEXSHADERDECL da = {nullptr, 2};
    REQUIRE(f.pfnCreateVertexShaderDecl(dev, &da, el) == 0 && da.ShaderHandle);
    REQUIRE(f.pfnSetVertexShaderFunc(dev, vsa.ShaderHandle) == 0);
    REQUIRE(f.pfnSetPixelShader(dev, psa.ShaderHandle) == 0);
    REQUIRE(f.pfnSetVertexShaderDecl(dev, da.ShaderHandle) == 0);
    const float consts[8] = {1, 0, 0, 0, 0, 1, 0, 0};
    D3DDDIARG_SETVERTEXSHADERCONST vc = {0, 2};
    REQUIRE(f.pfnSetVertexShaderConst(dev, &vc, consts) == 0);

    // Targets, viewport, states (some inside a state block), streams.
    D3DDDIARG_SETRENDERTARGET srt = {0, rt, 0};
    REQUIRE(f.pfnSetRenderTarget(dev, &srt) == 0);
    D3DDDIARG_VIEWPORTINFO vp = {0, 0, 256, 256};
    REQUIRE(f.pfnSetViewport(dev, &vp) == 0);
    D3DDDIARG_ZRANGE zr = {0.0f, 1.0f};
    REQUIRE(f.pfnSetZRange(dev, &zr) == 0);
    D3DDDIARG_STATESET ss = {D3DHAL_STATESETBEGIN, nullptr, 0};
    REQUIRE(f.pfnStateSet(dev, &ss) == 0);
    D3DDDIARG_RENDERSTATE rs = {27, 1}; // ALPHABLENDENABLE
    REQUIRE(f.pfnSetRenderState(dev, &rs) == 0);
    rs = {19, 5}; // SRCBLEND
    REQUIRE(f.pfnSetRenderState(dev, &rs) == 0);
    // LIGHTING = FALSE: a value the UMD's caches held before D3D9's defaults (all zero),
    // when applying it was skipped and the device never heard of it.
    rs = {137, 0};
    REQUIRE(f.pfnSetRenderState(dev, &rs) == 0);
    ss.Operation = D3DHAL_STATESETEND;
    REQUIRE(f.pfnStateSet(dev, &ss) == 0 && ss.hStateSet);
    rs = {22, 1}; // CULLMODE NONE
    REQUIRE(f.pfnSetRenderState(dev, &rs) == 0);
    D3DDDIARG_TEXTURESTAGESTATE ts = {0, 16, 2}; // MAGFILTER = LINEAR (sampler range)
    REQUIRE(f.pfnSetTextureStageState(dev, &ts) == 0);
    // D3DTSS_SRGBTEXTURE (29) of stage 1 is the device's D3DSAMP_SRGBTEXTURE (11).
    D3DDDIARG_TEXTURESTAGESTATE srgb = {1, 29, 1};
    REQUIRE(f.pfnSetTextureStageState(dev, &srgb) == 0 && aerogpu::umd_core(dev)->sampler_state(1, 11) == 1);
    ss.Operation = D3DHAL_STATESETEXECUTE;
    REQUIRE(f.pfnStateSet(dev, &ss) == 0);
    D3DDDIARG_SETSTREAMSOURCE sss = {0, vb, 0, 20};
    REQUIRE(f.pfnSetStreamSource(dev, &sss) == 0);
    D3DDDIARG_SETINDICES si = {ib, 2};
    REQUIRE(f.pfnSetIndices(dev, &si) == 0);
    RECT sc = {0, 0, 256, 256};
    REQUIRE(f.pfnSetScissorRect(dev, &sc) == 0);

    // Frames: clear, draw, draw indexed, present.
    D3DDDIARG_CREATEQUERY cq = {D3DDDIQUERYTYPE_EVENT, nullptr};
    REQUIRE(f.pfnCreateQuery(dev, &cq) == 0 && cq.hQuery);
    for (int frame = 0; frame < 3; frame++) {
        D3DDDIARG_CLEAR c = {1, 0xFF203040u + uint32_t(frame), 1.0f, 0};
        REQUIRE(f.pfnClear(dev, &c, 0, nullptr) == 0);
        D3DDDIARG_DRAWPRIMITIVE dp = {4, 0, 1};
        REQUIRE(f.pfnDrawPrimitive(dev, &dp, nullptr) == 0);
        D3DDDIARG_DRAWINDEXEDPRIMITIVE dip = {4, 0, 0, 3, 0, 1};
        REQUIRE(f.pfnDrawIndexedPrimitive(dev, &dip) == 0);
        D3DDDIARG_PRESENT pr;
        std::memset(&pr, 0, sizeof(pr));
        pr.hSrcResource = rt;
        pr.FlipInterval = 1;
        REQUIRE(f.pfnPresent(dev, &pr) == 0);
    }
    // A device falling behind (no present reported complete): the third present in flight
    // waits for the oldest, polling the KMD once a millisecond until kPresentWaitMs have
    // passed, then goes on (Present never fails for a slow device).
    {
        aerogpu_umd_set_sleep(count_sleep);
        F.completion_lag = 1000;
        D3DDDIARG_PRESENT pr;
        std::memset(&pr, 0, sizeof(pr));
        pr.hSrcResource = rt;
        for (int i = 0; i < 3; i++) {
            REQUIRE(g_slept_ms == 0 || i == 2);
            REQUIRE(f.pfnPresent(dev, &pr) == 0);
        }
        REQUIRE(g_slept_ms == aerogpu::Device::kPresentWaitMs);
        F.completion_lag = 0;
        aerogpu_umd_set_sleep(nullptr);
    }
    // Legacy state: cached through the table, recorded/applied/captured by state blocks;
    // of it only the int/bool shader constants are sent (the flush after it submits a
    // batch of SET_SHADER_CONSTANTS_I/_B packets and nothing else).
    {
        const uint32_t renders_before = F.renders;
        const aerogpu::LegacyState *L = aerogpu::umd_legacy_state(dev);
        REQUIRE(L);
        D3DDDIARG_SETTRANSFORM st;
        std::memset(&st, 0, sizeof(st));
        st.TransformType = 256; // WORLD
        for (int i = 0; i < 16; i++) st.Matrix.m[i / 4][i % 4] = float(i + 1);
        D3DDDIARG_TEXTURESTAGESTATE colorop = {1, 1, 7}; // stage 1 COLOROP (fixed function)
        D3DDDIARG_RENDERSTATE npatch = {164, 0x40400000u}; // N-patch segments 3.0
        const INT ivals[4] = {4, 3, 2, 1};
        D3DDDIARG_SETVERTEXSHADERCONSTI vci = {2, 1};
        D3DDDIARG_SETLIGHT enable = {5, D3DDDI_SETLIGHT_ENABLE};
        D3DDDIARG_CREATELIGHT cl = {5};
        REQUIRE(f.pfnCreateLight(dev, &cl) == 0);
        D3DDDIARG_STATESET lb = {D3DHAL_STATESETBEGIN, nullptr, 0};
        REQUIRE(f.pfnStateSet(dev, &lb) == 0);
        REQUIRE(f.pfnSetTransform(dev, &st) == 0);
        REQUIRE(f.pfnSetTextureStageState(dev, &colorop) == 0);
        REQUIRE(f.pfnSetRenderState(dev, &npatch) == 0);
        REQUIRE(f.pfnSetVertexShaderConstI(dev, &vci, ivals) == 0);
        REQUIRE(f.pfnSetLight(dev, &enable, nullptr) == 0);
        lb.Operation = D3DHAL_STATESETEND;
        REQUIRE(f.pfnStateSet(dev, &lb) == 0 && lb.hStateSet && lb.hStateSet != ss.hStateSet);
        // Change all of it, then apply the block.
        D3DDDIARG_SETTRANSFORM st2 = st;
        st2.Matrix.m[3][0] = 99.0f;
        REQUIRE(f.pfnSetTransform(dev, &st2) == 0);
        colorop.Value = 1;
        REQUIRE(f.pfnSetTextureStageState(dev, &colorop) == 0);
        npatch.Value = 0;
        REQUIRE(f.pfnSetRenderState(dev, &npatch) == 0);
        const INT zeros[4] = {0, 0, 0, 0};
        REQUIRE(f.pfnSetVertexShaderConstI(dev, &vci, zeros) == 0);
        D3DDDIARG_SETLIGHT disable = {5, D3DDDI_SETLIGHT_DISABLE};
        REQUIRE(f.pfnSetLight(dev, &disable, nullptr) == 0);
        REQUIRE(L->transform(256).m[12] == 99.0f && L->texture_stage_state(1, 1) == 1 && !L->light_enabled(5));
        lb.Operation = D3DHAL_STATESETEXECUTE;
        REQUIRE(f.pfnStateSet(dev, &lb) == 0);
        int32_t iv[4];
        REQUIRE(L->transform(256).m[12] == 13.0f && L->transform(256).m[15] == 16.0f);
        REQUIRE(L->texture_stage_state(1, 1) == 7 && L->render_state(164) == 0x40400000u);
        REQUIRE(L->const_i(aerogpu::kLegacyStageVertex, 2, iv) && iv[0] == 4 && iv[3] == 1);
        REQUIRE(L->light_enabled(5));
        // Capture takes the current values into the block.
        colorop.Value = 3;
        REQUIRE(f.pfnSetTextureStageState(dev, &colorop) == 0);
        lb.Operation = D3DHAL_STATESETCAPTURE;
        REQUIRE(f.pfnStateSet(dev, &lb) == 0);
        colorop.Value = 1;
        REQUIRE(f.pfnSetTextureStageState(dev, &colorop) == 0);
        lb.Operation = D3DHAL_STATESETEXECUTE;
        REQUIRE(f.pfnStateSet(dev, &lb) == 0);
        REQUIRE(L->texture_stage_state(1, 1) == 3);
        lb.Operation = D3DHAL_STATESETDELETE;
        REQUIRE(f.pfnStateSet(dev, &lb) == 0);
        // A predefined block of the vertex state snapshots the light.
        D3DDDIARG_STATESET vsb = {D3DHAL_STATESETCREATE, nullptr, 3};
        REQUIRE(f.pfnStateSet(dev, &vsb) == 0 && vsb.hStateSet);
        vsb.Operation = D3DHAL_STATESETDELETE;
        REQUIRE(f.pfnStateSet(dev, &vsb) == 0);

        // The other legacy entries round-trip into the cache.
        D3DDDIARG_MULTIPLYTRANSFORM mt;
        std::memset(&mt, 0, sizeof(mt));
        mt.TransformType = 256;
        for (int i = 0; i < 4; i++) mt.Matrix.m[i][i] = 2.0f;
        REQUIRE(f.pfnMultiplyTransform(dev, &mt) == 0);
        REQUIRE(L->transform(256).m[0] == 2.0f && L->transform(256).m[12] == 26.0f);
        D3DDDIARG_SETCLIPPLANE cp = {1, {0.5f, 0.0f, -1.0f, 2.0f}};
        REQUIRE(f.pfnSetClipPlane(dev, &cp) == 0);
        float plane[4];
        REQUIRE(L->clip_plane(1, plane) && plane[2] == -1.0f);
        cp.Index = 40;
        REQUIRE(f.pfnSetClipPlane(dev, &cp) == HRESULT(0x8876086C));
        D3DDDIARG_SETSTREAMSOURCEFREQ fq = {0, 0x80000002u}; // D3DSTREAMSOURCE_INDEXEDDATA | 2
        REQUIRE(f.pfnSetStreamSourceFreq(dev, &fq) == 0 && L->stream_source_freq(0) == 0x80000002u);
        const BOOL bools[2] = {1, 0};
        D3DDDIARG_SETPIXELSHADERCONSTB pcb = {7, 2};
        REQUIRE(f.pfnSetPixelShaderConstB(dev, &pcb, bools) == 0 && L->const_b(aerogpu::kLegacyStagePixel, 7) == 1);
        D3DDDIARG_SETVERTEXSHADERCONSTB vcb = {0, 1};
        REQUIRE(f.pfnSetVertexShaderConstB(dev, &vcb, bools) == 0 && L->const_b(aerogpu::kLegacyStageVertex, 0) == 1);
        D3DDDIARG_SETPIXELSHADERCONSTI pci = {15, 2}; // past register 15
        REQUIRE(f.pfnSetPixelShaderConstI(dev, &pci, ivals) == HRESULT(0x8876086C));
        D3DDDIARG_SETMATERIAL mat;
        std::memset(&mat, 0, sizeof(mat));
        mat.Diffuse = {0.25f, 0.5f, 0.75f, 1.0f};
        mat.Power = 8.0f;
        REQUIRE(f.pfnSetMaterial(dev, &mat) == 0 && L->material().diffuse.b == 0.75f && L->material().power == 8.0f);
        D3DDDI_LIGHT li;
        std::memset(&li, 0, sizeof(li));
        li.Type = 2; // spot
        li.Range = 50.0f;
        li.Phi = 1.5f;
        D3DDDIARG_SETLIGHT data = {5, D3DDDI_SETLIGHT_DATA};
        REQUIRE(f.pfnSetLight(dev, &data, &li) == 0);
        aerogpu::Light got;
        REQUIRE(L->light(5, &got) && got.type == 2 && got.range == 50.0f && got.phi == 1.5f);
        REQUIRE(f.pfnSetLight(dev, &data, nullptr) == HRESULT(0x8876086C));
        D3DDDIARG_DESTROYLIGHT dl = {5};
        REQUIRE(f.pfnDestroyLight(dev, &dl) == 0 && !L->light(5, &got));
        D3DDDIARG_WINFO wi = {1.0f, 1000.0f};
        REQUIRE(f.pfnUpdateWInfo(dev, &wi) == 0);
        float wn = 0, wf = 0;
        L->w_info(&wn, &wf);
        REQUIRE(wn == 1.0f && wf == 1000.0f);
        const PALETTEENTRY pal[2] = {{10, 20, 30, 0}, {40, 50, 60, 0}};
        D3DDDIARG_UPDATEPALETTE upd = {3, 0, 2};
        REQUIRE(f.pfnUpdatePalette(dev, &upd, pal) == 0);
        aerogpu::PaletteEntry pe;
        REQUIRE(L->palette_entry(3, 1, &pe) && pe.green == 50);
        D3DDDIARG_SETPALETTE sp = {3, 1, rt};
        REQUIRE(f.pfnSetPalette(dev, &sp) == 0 && L->resource_palette(uint32_t(uintptr_t(rt))) == 3);
        D3DDDIARG_SETPRIORITY pri = {rt, 0x78000000u};
        REQUIRE(f.pfnSetPriority(dev, &pri) == 0 && L->priority(uint32_t(uintptr_t(rt))) == 0x78000000u);
        pri.hResource = H(0x7777); // not a resource of this device
        REQUIRE(f.pfnSetPriority(dev, &pri) == HRESULT(0x8876086C));
        // Bring-up no-ops: S_OK, logged once as no-ops (not as stubs).
        D3DDDIARG_GENERATEMIPSUBLEVELS gm = {rt, 1}; // D3DTEXF_POINT
        REQUIRE(f.pfnGenerateMipSubLevels(dev, &gm) == 0 && f.pfnGenerateMipSubLevels(dev, &gm) == 0);
        REQUIRE(L->autogen_filter(uint32_t(uintptr_t(rt))) == 1);
        D3DDDIARG_SETCONVOLUTIONKERNELMONO ck = {3, 3, nullptr, nullptr};
        REQUIRE(f.pfnSetConvolutionKernelMono(dev, &ck) == 0 && f.pfnSetConvolutionKernelMono(dev, &ck) == 0);
        size_t noop_logs = 0;
        for (auto &l : g_logs) {
            REQUIRE(l.find("stub pfnGenerateMipSubLevels") == std::string::npos);
            REQUIRE(l.find("stub pfnSetConvolutionKernelMono") == std::string::npos);
            if (l.find("no-op pfn") != std::string::npos) noop_logs++;
        }
        REQUIRE(noop_logs == 2);
        REQUIRE(f.pfnFlush(dev) == 0 && F.renders == renders_before + 1);
        REQUIRE(!F.last_ops.empty());
        for (uint32_t op : F.last_ops)
            REQUIRE(op == AEROGPU_CMD_SET_SHADER_CONSTANTS_I || op == AEROGPU_CMD_SET_SHADER_CONSTANTS_B);
    }

    // Static flow control: a vertex shader looping i0.x times and branching on b0, drawn
    // with i0/b0 set through the table (3, TRUE as 5), again after resetting them by
    // hand, then with the values of a state block (1, FALSE). The Rust side checks what
    // the device held at each of these draws.
    {
        D3DDDIARG_CREATEVERTEXSHADERFUNC fva = {nullptr, sizeof(kFlowVs)};
        REQUIRE(f.pfnCreateVertexShaderFunc(dev, &fva, kFlowVs) == 0 && fva.ShaderHandle);
        REQUIRE(f.pfnSetVertexShaderFunc(dev, fva.ShaderHandle) == 0);
        const INT three[4] = {3, 0, 1, 0}, one[4] = {1, 0, 1, 0};
        const BOOL on[1] = {5}, off[1] = {0};
        D3DDDIARG_SETVERTEXSHADERCONSTI ci = {0, 1};
        D3DDDIARG_SETVERTEXSHADERCONSTB cb = {0, 1};
        REQUIRE(f.pfnSetVertexShaderConstI(dev, &ci, three) == 0);
        REQUIRE(f.pfnSetVertexShaderConstB(dev, &cb, on) == 0);
        D3DDDIARG_DRAWPRIMITIVE fdp = {4, 0, 1};
        REQUIRE(f.pfnDrawPrimitive(dev, &fdp, nullptr) == 0);
        D3DDDIARG_STATESET fb = {D3DHAL_STATESETBEGIN, nullptr, 0};
        REQUIRE(f.pfnStateSet(dev, &fb) == 0);
        REQUIRE(f.pfnSetVertexShaderConstI(dev, &ci, one) == 0);
        REQUIRE(f.pfnSetVertexShaderConstB(dev, &cb, off) == 0);
        fb.Operation = D3DHAL_STATESETEND;
        REQUIRE(f.pfnStateSet(dev, &fb) == 0 && fb.hStateSet);
        REQUIRE(f.pfnSetVertexShaderConstI(dev, &ci, three) == 0);
        REQUIRE(f.pfnSetVertexShaderConstB(dev, &cb, on) == 0);
        REQUIRE(f.pfnDrawPrimitive(dev, &fdp, nullptr) == 0);
        fb.Operation = D3DHAL_STATESETEXECUTE;
        REQUIRE(f.pfnStateSet(dev, &fb) == 0);
        REQUIRE(f.pfnDrawPrimitive(dev, &fdp, nullptr) == 0);
        fb.Operation = D3DHAL_STATESETDELETE;
        REQUIRE(f.pfnStateSet(dev, &fb) == 0);
        REQUIRE(f.pfnSetVertexShaderFunc(dev, vsa.ShaderHandle) == 0);
        REQUIRE(f.pfnDeleteVertexShaderFunc(dev, fva.ShaderHandle) == 0);
    }

    // State blocks with viewport, z range, scissor rect and float constants: a recorded
    // block (recording changes nothing) applied after changing them (draw 1), the same block after CAPTURE (draw 2), a
    // D3DSBT_ALL block (draw 3), and a PIXELSTATE block, which holds none of the viewport.
    // The Rust side checks the viewport/scissor/c5 the device held at the three draws.
    {
        aerogpu::UmdViewState v;
        float c[4];
        const float c5a[4] = {1, 2, 3, 4}, c5b[4] = {5, 6, 7, 8}, c5c[4] = {10, 11, 12, 13}, pc[4] = {9, 9, 9, 9};
        D3DDDIARG_SETVERTEXSHADERCONST c5 = {5, 1};
        D3DDDIARG_SETPIXELSHADERCONST p3 = {3, 1};
        D3DDDIARG_VIEWPORTINFO full = {0, 0, 256, 256}, small = {8, 8, 64, 64};
        D3DDDIARG_ZRANGE z01 = {0.0f, 1.0f}, zmid = {0.25f, 0.75f};
        RECT sfull = {0, 0, 256, 256}, ssmall = {4, 4, 100, 100};
        auto reset = [&]() -> bool {
            return f.pfnSetViewport(dev, &full) == 0 && f.pfnSetZRange(dev, &z01) == 0 &&
                   f.pfnSetScissorRect(dev, &sfull) == 0 && f.pfnSetVertexShaderConst(dev, &c5, c5a) == 0;
        };
        D3DDDIARG_DRAWPRIMITIVE dp = {4, 0, 1};
        REQUIRE(reset());
        D3DDDIARG_STATESET vb = {D3DHAL_STATESETBEGIN, nullptr, 0};
        REQUIRE(f.pfnStateSet(dev, &vb) == 0);
        REQUIRE(f.pfnSetViewport(dev, &small) == 0 && f.pfnSetZRange(dev, &zmid) == 0);
        REQUIRE(f.pfnSetScissorRect(dev, &ssmall) == 0);
        REQUIRE(f.pfnSetVertexShaderConst(dev, &c5, c5c) == 0); // replaced by the next one
        REQUIRE(f.pfnSetVertexShaderConst(dev, &c5, c5b) == 0);
        REQUIRE(f.pfnSetPixelShaderConst(dev, &p3, pc) == 0);
        vb.Operation = D3DHAL_STATESETEND;
        REQUIRE(f.pfnStateSet(dev, &vb) == 0 && vb.hStateSet);
        // Recording changed nothing (D3D9): the cached state is still the reset one.
        REQUIRE(aerogpu::umd_view_state(dev, &v) && v.vp[2] == 256 && v.zmin == 0.0f && v.scissor[2] == 256);
        REQUIRE(aerogpu::umd_const_f(dev, 0, 5, c) && c[0] == 1.0f);
        REQUIRE(reset());
        vb.Operation = D3DHAL_STATESETEXECUTE;
        REQUIRE(f.pfnStateSet(dev, &vb) == 0);
        REQUIRE(aerogpu::umd_view_state(dev, &v) && v.vp[0] == 8 && v.vp[2] == 64 && v.zmin == 0.25f);
        REQUIRE(v.scissor[0] == 4 && v.scissor[3] == 100);
        REQUIRE(aerogpu::umd_const_f(dev, 0, 5, c) && c[0] == 5.0f && c[3] == 8.0f);
        REQUIRE(aerogpu::umd_const_f(dev, 1, 3, c) && c[0] == 9.0f);
        REQUIRE(f.pfnDrawPrimitive(dev, &dp, nullptr) == 0); // draw 1: small, c5 = 5..8
        // CAPTURE takes the current c5 (the rest is unchanged) into the block.
        REQUIRE(f.pfnSetVertexShaderConst(dev, &c5, c5c) == 0);
        vb.Operation = D3DHAL_STATESETCAPTURE;
        REQUIRE(f.pfnStateSet(dev, &vb) == 0);
        REQUIRE(reset());
        vb.Operation = D3DHAL_STATESETEXECUTE;
        REQUIRE(f.pfnStateSet(dev, &vb) == 0);
        REQUIRE(f.pfnDrawPrimitive(dev, &dp, nullptr) == 0); // draw 2: small, c5 = 10..13
        // D3DSBT_ALL holds the viewport, scissor and every float constant.
        D3DDDIARG_STATESET all = {D3DHAL_STATESETCREATE, nullptr, 1};
        REQUIRE(f.pfnStateSet(dev, &all) == 0 && all.hStateSet);
        REQUIRE(reset());
        all.Operation = D3DHAL_STATESETEXECUTE;
        REQUIRE(f.pfnStateSet(dev, &all) == 0);
        REQUIRE(aerogpu::umd_view_state(dev, &v) && v.vp[1] == 8 && v.vp[3] == 64 && v.zmax == 0.75f);
        REQUIRE(f.pfnDrawPrimitive(dev, &dp, nullptr) == 0); // draw 3: as draw 2
        // D3DSBT_PIXELSTATE: the pixel constants, not the viewport or vertex constants.
        D3DDDIARG_STATESET pix = {D3DHAL_STATESETCREATE, nullptr, 2};
        REQUIRE(f.pfnStateSet(dev, &pix) == 0 && pix.hStateSet);
        REQUIRE(reset());
        const float pz[4] = {0, 0, 0, 0};
        REQUIRE(f.pfnSetPixelShaderConst(dev, &p3, pz) == 0);
        pix.Operation = D3DHAL_STATESETEXECUTE;
        REQUIRE(f.pfnStateSet(dev, &pix) == 0);
        REQUIRE(aerogpu::umd_view_state(dev, &v) && v.vp[2] == 256 && v.scissor[2] == 256);
        REQUIRE(aerogpu::umd_const_f(dev, 0, 5, c) && c[0] == 1.0f);
        REQUIRE(aerogpu::umd_const_f(dev, 1, 3, c) && c[0] == 9.0f);
        for (D3DDDIARG_STATESET *b : {&vb, &all, &pix}) {
            b->Operation = D3DHAL_STATESETDELETE;
            REQUIRE(f.pfnStateSet(dev, b) == 0);
        }
    }

    // State blocks holding bindings (texture 0, stream 1, the indices): CAPTURE re-reads
    // them (D3D9 Capture), EXECUTE binds what was captured, not what was recorded.
    {
        const aerogpu::Device *core = aerogpu::umd_core(dev);
        REQUIRE(core);
        auto stream1 = [&](uint32_t *h, uint32_t *off, uint32_t *stride) { return core->stream_source(1, h, off, stride); };
        D3DDDIARG_SETSTREAMSOURCE s1 = {1, vb, 0, 20};
        D3DDDIARG_SETINDICES ind = {ib, 2};
        D3DDDIARG_STATESET bb = {D3DHAL_STATESETBEGIN, nullptr, 0};
        REQUIRE(f.pfnStateSet(dev, &bb) == 0);
        REQUIRE(f.pfnSetTexture(dev, 0, nullptr) == 0);
        REQUIRE(f.pfnSetStreamSource(dev, &s1) == 0);
        REQUIRE(f.pfnSetIndices(dev, &ind) == 0);
        bb.Operation = D3DHAL_STATESETEND;
        REQUIRE(f.pfnStateSet(dev, &bb) == 0 && bb.hStateSet);
        // The current bindings when the block captures: rt as texture 0, stream 1 at another
        // offset and stride, the indices read as 32-bit.
        REQUIRE(f.pfnSetTexture(dev, 0, rt) == 0);
        s1 = {1, vb, 8, 12};
        REQUIRE(f.pfnSetStreamSource(dev, &s1) == 0);
        ind = {ib, 4};
        REQUIRE(f.pfnSetIndices(dev, &ind) == 0);
        bb.Operation = D3DHAL_STATESETCAPTURE;
        REQUIRE(f.pfnStateSet(dev, &bb) == 0);
        // Unbind all three, then apply.
        REQUIRE(f.pfnSetTexture(dev, 0, nullptr) == 0);
        s1 = {1, nullptr, 0, 0};
        REQUIRE(f.pfnSetStreamSource(dev, &s1) == 0);
        ind = {nullptr, 2};
        REQUIRE(f.pfnSetIndices(dev, &ind) == 0);
        uint32_t h = 1, off = 1, stride = 1;
        bool index32 = true;
        REQUIRE(core->texture(0) == 0 && stream1(&h, &off, &stride) && h == 0 && core->indices(&index32) == 0);
        bb.Operation = D3DHAL_STATESETEXECUTE;
        REQUIRE(f.pfnStateSet(dev, &bb) == 0);
        REQUIRE(core->texture(0) == uint32_t(uintptr_t(rt)));
        REQUIRE(stream1(&h, &off, &stride) && h == uint32_t(uintptr_t(vb)) && off == 8 && stride == 12);
        REQUIRE(core->indices(&index32) == uint32_t(uintptr_t(ib)) && index32);
        bb.Operation = D3DHAL_STATESETDELETE;
        REQUIRE(f.pfnStateSet(dev, &bb) == 0);
        // Back to the scene's bindings (rt is drawn into below).
        REQUIRE(f.pfnSetTexture(dev, 0, nullptr) == 0);
        s1 = {1, nullptr, 0, 0};
        REQUIRE(f.pfnSetStreamSource(dev, &s1) == 0);
        ind = {ib, 2};
        REQUIRE(f.pfnSetIndices(dev, &ind) == 0);
    }

    // More state than the 64 KiB command buffer holds (5000 render states, 80 KiB) between
    // two draws: the UMD ends each batch before a packet that would not fit, so every batch
    // fits the buffer (and the KMD's staging of it), nothing fails and all of it is replayed.
    {
        const uint32_t renders_before = F.renders;
        D3DDDIARG_DRAWPRIMITIVE dp = {4, 0, 1};
        REQUIRE(f.pfnDrawPrimitive(dev, &dp, nullptr) == 0);
        for (uint32_t i = 0; i < 5000; i++) {
            D3DDDIARG_RENDERSTATE ar = {24, i & 0xFF}; // ALPHAREF
            REQUIRE(f.pfnSetRenderState(dev, &ar) == 0);
        }
        D3DDDIARG_RENDERSTATE ar = {24, 0};
        REQUIRE(f.pfnSetRenderState(dev, &ar) == 0);
        REQUIRE(f.pfnDrawPrimitive(dev, &dp, nullptr) == 0);
        REQUIRE(f.pfnFlush(dev) == 0 && !F.failed);
        REQUIRE(F.renders == renders_before + 2 && F.max_render_bytes > sizeof(F.cmd) - 64);
    }

    // StretchRect into a second render target (linear), a ColorFill of part of it, and
    // DrawPrimitiveUP / DrawIndexedPrimitiveUP as the runtime sends them (user-memory stream 0
    // and indices, then ordinary draws); unsupported variants fail explicitly.
    D3DDDI_SURFACEINFO thumb_surf = {128, 128, 1, nullptr, 0, 0};
    cr = one_surface(thumb_surf, D3DDDIFMT_A8R8G8B8, H(0x506));
    cr.Flags.RenderTarget = 1; // a plain render target surface: still a Blt source
    REQUIRE(f.pfnCreateResource(dev, &cr) == 0);
    HANDLE thumb = cr.hResource;
    D3DDDIARG_BLT blt;
    std::memset(&blt, 0, sizeof(blt));
    blt.hSrcResource = rt;
    blt.SrcRect = {0, 0, 256, 256};
    blt.hDstResource = thumb;
    blt.DstRect = {0, 0, 128, 128};
    blt.Flags = AEROGPU_BLT_LINEAR;
    REQUIRE(f.pfnBlt(dev, &blt) == 0);
    blt.hSrcResource = thumb; // and back, mirrored, point-sampled
    blt.SrcRect = {0, 0, 128, 128};
    blt.hDstResource = rt;
    blt.DstRect = {0, 0, 256, 256};
    blt.Flags = AEROGPU_BLT_POINT | AEROGPU_BLT_MIRRORUPDOWN;
    REQUIRE(f.pfnBlt(dev, &blt) == 0);
    blt.Flags = AEROGPU_BLT_SRCCOLORKEY;
    REQUIRE(f.pfnBlt(dev, &blt) == HRESULT(0x8876086A));
    blt.Flags = 0;
    blt.SrcSubResourceIndex = 1;
    REQUIRE(f.pfnBlt(dev, &blt) == HRESULT(0x8876086A));
    D3DDDIARG_COLORFILL part;
    std::memset(&part, 0, sizeof(part));
    part.hResource = thumb;
    part.DstRect = {16, 16, 64, 48};
    part.Color = 0xFF336699u;
    REQUIRE(f.pfnColorFill(dev, &part) == 0);
    const float up_verts[15] = {-1, 1, 0, 1, 0, 1, 1, 0, 1, 0, 0, -1, 0, 1, 0};
    const uint16_t up_idx[3] = {2, 1, 0};
    D3DDDIARG_SETSTREAMSOURCEUM um = {0, 20};
    REQUIRE(f.pfnSetStreamSourceUm(dev, &um, up_verts) == 0);
    D3DDDIARG_DRAWPRIMITIVE up = {4, 0, 1};
    REQUIRE(f.pfnDrawPrimitive(dev, &up, nullptr) == 0);
    REQUIRE(f.pfnSetIndicesUm(dev, 2, up_idx) == 0);
    D3DDDIARG_DRAWINDEXEDPRIMITIVE upi = {4, 0, 0, 3, 0, 1};
    REQUIRE(f.pfnDrawIndexedPrimitive(dev, &upi) == 0);
    D3DDDIARG_SETSTREAMSOURCEUM um1 = {1, 20};
    REQUIRE(f.pfnSetStreamSourceUm(dev, &um1, up_verts) == HRESULT(0x8876086A));
    std::vector<uint8_t> huge(80 * 1024);
    D3DDDIARG_DRAWPRIMITIVE up_huge = {4, 0, 80 * 1024 / 60};
    REQUIRE(f.pfnSetStreamSourceUm(dev, &um, huge.data()) == 0);
    REQUIRE(f.pfnDrawPrimitive(dev, &up_huge, nullptr) == HRESULT(0x8007000E)); // larger than an upload
    REQUIRE(f.pfnSetStreamSource(dev, &sss) == 0); // back to the app's buffers
    REQUIRE(f.pfnSetIndices(dev, &si) == 0);
    D3DDDIARG_DRAWPRIMITIVE dp2 = {4, 0, 1};
    REQUIRE(f.pfnDrawPrimitive(dev, &dp2, nullptr) == 0);
    D3DDDIARG_DRAWINDEXEDPRIMITIVE dip2 = {4, 0, 0, 3, 0, 1};
    REQUIRE(f.pfnDrawIndexedPrimitive(dev, &dip2) == 0);

    // UpdateTexture (TexBlt): a system-memory texture's levels uploaded into a default-pool
    // one, which is then copied level by level (COPY_TEXTURE2D) into another.
    std::vector<uint8_t> sys0(16 * 16 * 4), sys1(8 * 8 * 4);
    for (size_t i = 0; i < sys0.size(); i++) sys0[i] = uint8_t(i);
    for (size_t i = 0; i < sys1.size(); i++) sys1[i] = uint8_t(255 - i);
    D3DDDI_SURFACEINFO sys_levels[2] = {{16, 16, 1, sys0.data(), 64, 0}, {8, 8, 1, sys1.data(), 32, 0}};
    D3DDDI_SURFACEINFO tex_levels[2] = {{16, 16, 1, nullptr, 0, 0}, {8, 8, 1, nullptr, 0, 0}};
    std::memset(&cr, 0, sizeof(cr));
    cr.Format = D3DDDIFMT_A8R8G8B8;
    cr.Pool = D3DDDIPOOL_SYSTEMMEM;
    cr.pSurfList = sys_levels;
    cr.SurfCount = 2;
    cr.MipLevels = 2;
    cr.hResource = H(0x507);
    cr.Flags.Texture = 1;
    REQUIRE(f.pfnCreateResource(dev, &cr) == 0);
    HANDLE sys_tex = cr.hResource;
    cr.Pool = D3DDDIPOOL_VIDEOMEMORY;
    cr.pSurfList = tex_levels;
    cr.hResource = H(0x508);
    REQUIRE(f.pfnCreateResource(dev, &cr) == 0);
    HANDLE tex_a = cr.hResource;
    cr.hResource = H(0x509);
    REQUIRE(f.pfnCreateResource(dev, &cr) == 0);
    HANDLE tex_b = cr.hResource;
    D3DDDIARG_TEXBLT tb;
    std::memset(&tb, 0, sizeof(tb));
    tb.hDstResource = tex_a;
    tb.hSrcResource = sys_tex;
    tb.SrcRect = {0, 0, 16, 16};
    REQUIRE(f.pfnTexBlt(dev, &tb) == 0);
    tb.hDstResource = tex_b;
    tb.hSrcResource = tex_a;
    tb.SrcRect = {4, 4, 12, 10}; // a dirty region, scaled for level 1
    tb.DstPoint = {4, 4};
    REQUIRE(f.pfnTexBlt(dev, &tb) == 0);
    tb.CubeMapFace = 1;
    REQUIRE(f.pfnTexBlt(dev, &tb) == HRESULT(0x8876086C)); // no cube maps
    tb.CubeMapFace = 0;
    tb.hDstResource = sys_tex; // into the runtime's memory: refused
    REQUIRE(f.pfnTexBlt(dev, &tb) == HRESULT(0x8876086A));
    // Area locks of level 1 (8x8, 32-byte rows): inside, the pointer moves to the rectangle;
    // empty or leaving the level, D3DERR_INVALIDCALL and no pointer, the allocation not locked.
    {
        D3DDDIARG_LOCK al;
        std::memset(&al, 0, sizeof(al));
        al.hResource = tex_a;
        al.SubResourceIndex = 1;
        REQUIRE(f.pfnLock(dev, &al) == 0 && al.pSurfData && al.Pitch == 32);
        uint8_t *level_base = static_cast<uint8_t *>(al.pSurfData);
        D3DDDIARG_UNLOCK aul = {tex_a, 1, 0};
        REQUIRE(f.pfnUnlock(dev, &aul) == 0);
        al.pSurfData = nullptr;
        al.Flags.AreaValid = 1;
        al.Area = {2, 3, 6, 5};
        REQUIRE(f.pfnLock(dev, &al) == 0 && al.pSurfData == level_base + 3 * 32 + 2 * 4);
        REQUIRE(f.pfnUnlock(dev, &aul) == 0);
        const RECT bad[] = {{4, 4, 9, 6}, {0, 7, 8, 9}, {-1, 0, 2, 2}, {3, 3, 3, 5}, {5, 2, 4, 3}};
        for (const RECT &b : bad) {
            al.pSurfData = nullptr;
            al.Area = b;
            REQUIRE(f.pfnLock(dev, &al) == HRESULT(0x8876086C) && !al.pSurfData);
        }
    }
    // BufBlt: buffer to buffer (COPY_BUFFER) and from a system-memory buffer (upload).
    std::vector<uint8_t> sys_vb(60);
    std::memcpy(sys_vb.data(), up_verts, sizeof(up_verts));
    D3DDDI_SURFACEINFO vb_sys_surf = {60, 1, 1, sys_vb.data(), 0, 0};
    cr = one_surface(vb_surf, D3DDDIFMT_VERTEXDATA, H(0x50A));
    cr.Flags.VertexBuffer = 1;
    REQUIRE(f.pfnCreateResource(dev, &cr) == 0);
    HANDLE vb2 = cr.hResource;
    cr.Pool = D3DDDIPOOL_SYSTEMMEM;
    cr.pSurfList = &vb_sys_surf;
    cr.hResource = H(0x50B);
    REQUIRE(f.pfnCreateResource(dev, &cr) == 0);
    HANDLE vb_sys = cr.hResource;
    D3DDDIARG_BUFFERBLT bb = {vb2, vb, 0, {0, 60}};
    REQUIRE(f.pfnBufBlt(dev, &bb) == 0);
    bb = {vb2, vb_sys, 20, {20, 40}};
    REQUIRE(f.pfnBufBlt(dev, &bb) == 0);
    bb = {vb_sys, vb, 0, {0, 20}};
    REQUIRE(f.pfnBufBlt(dev, &bb) == HRESULT(0x8876086A));
    bb = {vb2, vb, 40, {0, 40}};
    REQUIRE(f.pfnBufBlt(dev, &bb) == HRESULT(0x8876086C)); // past the end of vb2
    // DrawIndexedPrimitive2: indices by pointer (byte offset 2), vertices from the bound VB
    // and from user memory (byte offsets).
    const uint16_t dip2_idx[4] = {7, 0, 1, 2};
    D3DDDIARG_DRAWINDEXEDPRIMITIVE2 d2 = {4, 0, 0, 3, 2, 1};
    REQUIRE(f.pfnDrawIndexedPrimitive2(dev, &d2, 2, dip2_idx, nullptr) == 0);
    REQUIRE(f.pfnSetStreamSourceUm(dev, &um, up_verts) == 0);
    d2 = {4, -20, 1, 3, 2, 1}; // indices 0..2 -> 1..3 with the base one vertex back
    const uint16_t dip2_idx1[4] = {7, 1, 2, 3};
    REQUIRE(f.pfnDrawIndexedPrimitive2(dev, &d2, 2, dip2_idx1, nullptr) == 0);
    REQUIRE(f.pfnSetStreamSource(dev, &sss) == 0);
    d2 = {4, 10, 0, 3, 0, 1}; // half a vertex into a buffer
    REQUIRE(f.pfnDrawIndexedPrimitive2(dev, &d2, 2, dip2_idx, nullptr) == HRESULT(0x8876086C));
    // Clear with rectangles: color fills (the second clipped to the viewport).
    const RECT crects[2] = {{10, 10, 50, 50}, {200, 200, 300, 300}};
    D3DDDIARG_CLEAR rc = {1, 0xFF00FF00u, 1.0f, 0};
    REQUIRE(f.pfnClear(dev, &rc, 2, crects) == 0);
    // With a depth buffer bound and the scissor test on (scissor 0,0-40,40): color and
    // depth/stencil only in {10,10,40,40} (one fill, one CLEAR_RECTS); the second
    // rectangle falls outside the scissor. Without rectangles and scissor, a depth clear
    // of the whole viewport (= the whole buffer) is a plain CLEAR.
    D3DDDI_SURFACEINFO z_surf = {256, 256, 1, nullptr, 0, 0};
    cr = one_surface(z_surf, D3DDDIFMT_D24S8, H(0x50C));
    cr.Flags.ZBuffer = 1;
    cr.Flags.NotLockable = 1;
    REQUIRE(f.pfnCreateResource(dev, &cr) == 0);
    HANDLE zbuf = cr.hResource;
    D3DDDIARG_SETDEPTHSTENCIL sds = {zbuf};
    REQUIRE(f.pfnSetDepthStencil(dev, &sds) == 0);
    RECT small_scissor = {0, 0, 40, 40};
    REQUIRE(f.pfnSetScissorRect(dev, &small_scissor) == 0);
    D3DDDIARG_RENDERSTATE scissor_on = {174, 1}; // SCISSORTESTENABLE
    REQUIRE(f.pfnSetRenderState(dev, &scissor_on) == 0);
    rc.Flags = 7; // TARGET | ZBUFFER | STENCIL
    rc.FillDepth = 0.5f;
    rc.FillStencil = 3;
    REQUIRE(f.pfnClear(dev, &rc, 2, crects) == 0);
    scissor_on.Value = 0;
    REQUIRE(f.pfnSetRenderState(dev, &scissor_on) == 0);
    REQUIRE(f.pfnSetScissorRect(dev, &sc) == 0);
    rc.Flags = 2;
    REQUIRE(f.pfnClear(dev, &rc, 0, nullptr) == 0);
    sds.hZBuffer = nullptr;
    REQUIRE(f.pfnSetDepthStencil(dev, &sds) == 0);
    // DepthFill of a whole depth buffer (CLEAR) and of part of one (CLEAR_RECTS).
    D3DDDIARG_DEPTHFILL df;
    std::memset(&df, 0, sizeof(df));
    df.hResource = zbuf;
    df.DstRect = {0, 0, 256, 256};
    df.Depth = 0xFFFFFF00u; // depth 1.0, stencil 0
    REQUIRE(f.pfnDepthFill(dev, &df) == 0);
    df.DstRect = {0, 0, 16, 16};
    REQUIRE(f.pfnDepthFill(dev, &df) == 0);
    df.DstRect = {0, 0, 300, 16}; // past the surface
    REQUIRE(f.pfnDepthFill(dev, &df) == HRESULT(0x8876086C));
    // GetInfo: the vertex-cache answer; other types are not implemented.
    D3DDDIDEVINFO_VCACHE vcache;
    std::memset(&vcache, 0xCC, sizeof(vcache));
    REQUIRE(f.pfnGetInfo(dev, D3DDDIDEVINFOID_VCACHE, &vcache, sizeof(vcache)) == 0);
    REQUIRE(vcache.Pattern == 0x48434143u && vcache.OptMethod == 0 && vcache.CacheSize == 0);
    REQUIRE(f.pfnGetInfo(dev, D3DDDIDEVINFOID_VCACHE, &vcache, 8) == HRESULT(0x80070057));
    REQUIRE(f.pfnGetInfo(dev, 1, &vcache, sizeof(vcache)) == HRESULT(0x80004001));
    // SetDisplayMode: the primary's own mode is accepted; a plain render target is not a primary.
    cr = one_surface(rt_surf, D3DDDIFMT_A8R8G8B8, H(0x50D));
    cr.Flags.Primary = 1;
    cr.Flags.RenderTarget = 1;
    REQUIRE(f.pfnCreateResource(dev, &cr) == 0);
    HANDLE primary = cr.hResource;
    D3DDDIARG_SETDISPLAYMODE sdm = {primary, 0};
    REQUIRE(f.pfnSetDisplayMode(dev, &sdm) == 0);
    sdm.hResource = rt;
    REQUIRE(f.pfnSetDisplayMode(dev, &sdm) == HRESULT(0x8876086C));
    // ComposeRects stays refused: its A1 surfaces cannot be created.
    REQUIRE(f.pfnComposeRects(dev, nullptr) == HRESULT(0x8876086A));
    cr.Format = D3DDDIFMT_A1;
    cr.Flags.Value = 0;
    cr.Flags.Texture = 1;
    cr.Flags.TextApi = 1;
    cr.hResource = H(0x50E);
    REQUIRE(f.pfnCreateResource(dev, &cr) == HRESULT(0x8876086C));

    D3DDDIARG_ISSUEQUERY iq = {cq.hQuery, D3DDDIISSUE_END};
    REQUIRE(f.pfnIssueQuery(dev, &iq) == 0);
    BOOL done = 0;
    D3DDDIARG_GETQUERYDATA gq = {cq.hQuery, &done};
    REQUIRE(f.pfnGetQueryData(dev, &gq) == 0 && done);
    // Destroyed, the query is gone (INVALIDCALL) and the next one takes its handle.
    REQUIRE(f.pfnDestroyQuery(dev, cq.hQuery) == 0 && f.pfnDestroyQuery(dev, cq.hQuery) == HRESULT(0x8876086C));
    REQUIRE(f.pfnGetQueryData(dev, &gq) == HRESULT(0x8876086C));
    HANDLE old_query = cq.hQuery;
    REQUIRE(f.pfnCreateQuery(dev, &cq) == 0 && cq.hQuery == old_query);
    REQUIRE(f.pfnDestroyQuery(dev, cq.hQuery) == 0);
    // A draw without a bound index buffer fails cleanly instead of submitting garbage.
    D3DDDIARG_SETINDICES none = {nullptr, 2};
    REQUIRE(f.pfnSetIndices(dev, &none) == 0);
    D3DDDIARG_DRAWINDEXEDPRIMITIVE bad = {4, 0, 0, 3, 0, 1};
    REQUIRE(f.pfnDrawIndexedPrimitive(dev, &bad) == HRESULT(0x8876086C));

    // Shared surface: created here (alloc_id from the counter, token from the "KMD"),
    // opened by a second process (DWM) from the preserved private data, filled there.
    aerogpu_umd_set_shared_counter(next_shared);
    g_counter = 41; // other processes already took some values
    D3DDDI_SURFACEINFO sh_surf = {128, 64, 1, nullptr, 0, 0};
    cr = one_surface(sh_surf, D3DDDIFMT_A8R8G8B8, H(0x504));
    cr.Flags.RenderTarget = 1;
    cr.Flags.Texture = 1;
    cr.Flags.SharedResource = 1;
    REQUIRE(f.pfnCreateResource(dev, &cr) == 0);
    HANDLE shared = cr.hResource;
    REQUIRE(F.shared_allocs == 2 && g_counter == 42);
    D3DKMT_HANDLE sh_alloc = 0;
    for (auto &a : F.allocs)
        if (a.second.alloc_id == 0x40000000u + 42) sh_alloc = a.first;
    REQUIRE(sh_alloc != 0);
    // A multi-level shared texture would need several allocations: refused.
    cr.SurfCount = 2;
    D3DDDI_SURFACEINFO two[2] = {sh_surf, {64, 32, 1, nullptr, 0, 0}};
    cr.pSurfList = two;
    REQUIRE(f.pfnCreateResource(dev, &cr) == HRESULT(0x8876086C));
    REQUIRE(f.pfnFlush(dev) == 0); // CREATE_TEXTURE2D + EXPORT_SHARED_SURFACE

    // What dxgkrnl hands the opening process: the creator's blob (with the KMD's token),
    // under a new allocation handle.
    aerogpu_wddm_alloc_priv blob = F.allocs[sh_alloc].priv;
    REQUIRE(blob.share_token != 0 && agpu_share_refs(&F.shares, blob.share_token) == 1);
    REQUIRE(blob.flags & AEROGPU_WDDM_ALLOC_PRIV_FLAG_IS_SHARED);
    D3DKMT_HANDLE dwm_alloc = F.next_handle++;
    F.allocs[dwm_alloc] = F.allocs[sh_alloc];

    aerogpu_umd_set_process_tag(2);
    aerogpu_umd_set_trace(1); // DWM's device table is traced
    D3DDDI_DEVICEFUNCS g;
    std::memset(&g, 0, sizeof(g));
    cd.hDevice = H(0xDF);
    cd.pDeviceFuncs = &g;
    REQUIRE(afuncs.pfnCreateDevice(oa.hAdapter, &cd) == 0);
    HANDLE dwm = cd.hDevice;
    D3DDDI_OPENALLOCATIONINFO oai = {dwm_alloc, &blob, sizeof(blob)};
    D3DDDIARG_OPENRESOURCE orr;
    std::memset(&orr, 0, sizeof(orr));
    orr.NumAllocations = 1;
    orr.pOpenAllocationInfo = &oai;
    orr.hResource = H(0x601);
    REQUIRE(g.pfnOpenResource(dwm, &orr) == 0);
    HANDLE alias = orr.hResource;
    REQUIRE(uintptr_t(alias) == 0x2000); // DWM's first handle: the counter's next chunk
    D3DDDIARG_COLORFILL fill;
    std::memset(&fill, 0, sizeof(fill));
    fill.hResource = alias;
    fill.DstRect = {0, 0, 128, 64};
    fill.Color = 0xFF00FF00u;
    REQUIRE(g.pfnColorFill(dwm, &fill) == 0);
    REQUIRE(g.pfnFlush(dwm) == 0); // IMPORT_SHARED_SURFACE + CLEAR through the shared alloc_id
    // The same surface as a DXGI producer describes it (v2 blob: DXGI format and pitch,
    // reserved0 the producer's pitch encoding): opened as the D3D9 surface of that layout.
    // A pitch other than the D3D9 layout's, or a format without a D3D9 equivalent, is
    // refused before any packet.
    aerogpu_wddm_alloc_priv_v2 v2;
    std::memset(&v2, 0, sizeof(v2));
    std::memcpy(&v2, &blob, sizeof(blob));
    v2.version = AEROGPU_WDDM_ALLOC_PRIV_VERSION_2;
    v2.reserved0 = 512;
    v2.kind = AEROGPU_WDDM_ALLOC_KIND_TEXTURE2D;
    v2.width = 128;
    v2.height = 64;
    v2.format = 87; // DXGI_FORMAT_B8G8R8A8_UNORM
    v2.row_pitch_bytes = 512;
    oai = {dwm_alloc, &v2, sizeof(v2)};
    orr.hResource = H(0x602);
    REQUIRE(g.pfnOpenResource(dwm, &orr) == 0 && orr.hResource != alias);
    const aerogpu::Resource *opened = aerogpu::umd_core(dwm)->resource(uint32_t(uintptr_t(orr.hResource)));
    REQUIRE(opened && opened->desc.d3d_format == D3DDDIFMT_A8R8G8B8 && opened->desc.width == 128 &&
            opened->desc.height == 64 && opened->row_pitch == 512 && opened->alloc_id == blob.alloc_id);
    HANDLE alias2 = orr.hResource;
    v2.row_pitch_bytes = 640;
    REQUIRE(g.pfnOpenResource(dwm, &orr) == HRESULT(0x8876086A));
    v2.row_pitch_bytes = 512;
    v2.format = 10; // DXGI_FORMAT_R16G16B16A16_FLOAT
    REQUIRE(g.pfnOpenResource(dwm, &orr) == HRESULT(0x8876086A));
    REQUIRE(g.pfnDestroyResource(dwm, alias2) == 0);
    REQUIRE(g.pfnDestroyResource(dwm, alias) == 0);
    const size_t logs_before_destroy = g_logs.size();
    REQUIRE(g.pfnDestroyDevice(dwm) == 0);
    aerogpu_umd_set_trace(0);
    // DestroyDevice dumped the trace of DWM's calls, oldest first, with their results.
    {
        const std::vector<std::string> want = {
            "aerogpu-d3d9 trace: last 9 of 9 calls\n",
            "aerogpu-d3d9 trace: pfnOpenResource -> 0x00000000\n",
            "aerogpu-d3d9 trace: pfnColorFill -> 0x00000000\n",
            "aerogpu-d3d9 trace: pfnFlush -> 0x00000000\n",
            "aerogpu-d3d9 trace: pfnOpenResource -> 0x00000000\n",
            "aerogpu-d3d9 trace: pfnOpenResource -> 0x8876086a\n",
            "aerogpu-d3d9 trace: pfnOpenResource -> 0x8876086a\n",
            "aerogpu-d3d9 trace: pfnDestroyResource -> 0x00000000\n",
            "aerogpu-d3d9 trace: pfnDestroyResource -> 0x00000000\n",
            "aerogpu-d3d9 trace: pfnDestroyDevice -> 0x00000000\n",
        };
        std::vector<std::string> got;
        for (size_t i = logs_before_destroy; i < g_logs.size(); i++)
            if (g_logs[i].find("trace: ") != std::string::npos) got.push_back(g_logs[i]);
        if (got != want)
            for (auto &l : got) std::fprintf(stderr, "%s", l.c_str());
        REQUIRE(got == want);
    }
    std::printf("shared handle %u token %llu\n", unsigned(reinterpret_cast<uintptr_t>(shared)),
                (unsigned long long)blob.share_token);

    REQUIRE(f.pfnDestroyResource(dev, ib) == 0);
    REQUIRE(f.pfnFlush(dev) == 0);
    REQUIRE(f.pfnDestroyDevice(dev) == 0);
    REQUIRE(afuncs.pfnCloseAdapter(oa.hAdapter) == 0);
    if (F.failed) std::fprintf(stderr, "fake runtime: %s\n", F.why.c_str());
    REQUIRE(!F.failed);
    REQUIRE(F.presents == 6 && F.deallocs == 1 && F.locks == 4);
    // Buffers asked for (pfnRenderCb with Resize* flags): never when pfnCreateContextCb
    // handed out whole ones, else at least once (the Rust test checks how often).
    std::printf("buffer requests %u contexts %u\n", F.buffer_requests, unsigned(F.granted.size()));
    if (F.buffers == FakeRuntime::Buffers::Full) REQUIRE(F.buffer_requests == 0);
    if (F.buffers != FakeRuntime::Buffers::Full) REQUIRE(F.buffer_requests > 0);
    finish_trace();
    return 0;
}
