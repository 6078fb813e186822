// GetCaps of the AeroGPU D3D9 UMD (see aerogpu_umd_caps.h).
//
// Conservative: a caps bit is set only when the core translates the state it advertises
// into the command stream (or the device accepts it as is). Fixed-function transform,
// lighting, texture stages and fog are generated shaders (aerogpu_umd_ff.cpp); clip planes,
// patches, cube/volume textures, MSAA, alpha test, stencil ops and blend factors are cached
// or refused by the core, so their caps stay off.
#include "aerogpu_umd_caps.h"

#include <cstring>

#include "aerogpu_umd_core.h"
#include "aerogpu_umd_ff.h"

namespace aerogpu {

namespace {

constexpr HRESULT kOk = 0;
constexpr HRESULT kEInvalidArg = HRESULT(0x80070057);

// Color formats the executor can render to (wgpu render-attachment formats).
// Sampled formats: 2D, cube (6 layers) and volume textures (the executor's 3D textures);
// block-compressed formats are 2D and cube only (volume locks address texels).
constexpr UINT kSampledOps = FORMATOP_TEXTURE | FORMATOP_CUBETEXTURE | FORMATOP_VOLUMETEXTURE;
constexpr UINT kRenderTargetOps = kSampledOps | FORMATOP_OFFSCREEN_RENDERTARGET |
                                  FORMATOP_SAME_FORMAT_RENDERTARGET | FORMATOP_OFFSCREENPLAIN;
constexpr UINT kDepthOps = FORMATOP_ZSTENCIL | FORMATOP_ZSTENCIL_WITH_ARBITRARY_COLOR_DEPTH;

const FORMATOP kFormats[] = {
    // The scanout formats (seed 000: X8R8G8B8, A8R8G8B8 with alpha ignored by scanout).
    {D3DDDIFMT_X8R8G8B8,
     kRenderTargetOps | FORMATOP_DISPLAYMODE | FORMATOP_3DACCELERATION | FORMATOP_MEMBEROFGROUP_ARGB, 0, 0, 0},
    {D3DDDIFMT_A8R8G8B8, kRenderTargetOps | FORMATOP_SAME_FORMAT_UP_TO_ALPHA_RENDERTARGET | FORMATOP_MEMBEROFGROUP_ARGB,
     0, 0, 0},
    {D3DDDIFMT_A8B8G8R8, kRenderTargetOps, 0, 0, 0},
    {D3DDDIFMT_X8B8G8R8, kRenderTargetOps, 0, 0, 0},
    // 16-bit formats: textures only (no wgpu render format for them).
    {D3DDDIFMT_R5G6B5, kSampledOps | FORMATOP_OFFSCREENPLAIN, 0, 0, 0},
    {D3DDDIFMT_A1R5G5B5, kSampledOps | FORMATOP_OFFSCREENPLAIN, 0, 0, 0},
    // Alpha and luminance-alpha: their own protocol formats, sampled (0,0,0,A) and (L,L,L,A).
    {D3DDDIFMT_A8, kSampledOps | FORMATOP_OFFSCREENPLAIN, 0, 0, 0},
    {D3DDDIFMT_A8L8, kSampledOps | FORMATOP_OFFSCREENPLAIN, 0, 0, 0},
    // Luminance: R8_UNORM, sampled (L,L,L,1) through the translator's per-sampler read variant.
    {D3DDDIFMT_L8, kSampledOps | FORMATOP_OFFSCREENPLAIN, 0, 0, 0},
    // Signed bump maps, never render targets: V8U8 as RG8_SNORM, sampled (u, v, 1, 1).
    {D3DDDIFMT_V8U8, kSampledOps | FORMATOP_BUMPMAP, 0, 0, 0},
    {D3DDDIFMT_Q8W8V8U8, kSampledOps | FORMATOP_BUMPMAP, 0, 0, 0}, // RGBA8_SNORM, (u, v, w, q)
    // Float formats: fp16 blends and filters; fp32 does neither in wgpu without features.
    {D3DDDIFMT_A16B16G16R16F, kRenderTargetOps, 0, 0, 0},
    {D3DDDIFMT_R32F, kRenderTargetOps | FORMATOP_NOFILTER | FORMATOP_NOALPHABLEND, 0, 0, 0},
    {D3DDDIFMT_A32B32G32R32F, kRenderTargetOps | FORMATOP_NOFILTER | FORMATOP_NOALPHABLEND, 0, 0, 0},
    {D3DDDIFMT_DXT1, FORMATOP_TEXTURE | FORMATOP_CUBETEXTURE, 0, 0, 0},
    {D3DDDIFMT_DXT3, FORMATOP_TEXTURE | FORMATOP_CUBETEXTURE, 0, 0, 0},
    {D3DDDIFMT_DXT5, FORMATOP_TEXTURE | FORMATOP_CUBETEXTURE, 0, 0, 0},
    {D3DDDIFMT_D24S8, kDepthOps, 0, 0, 0},
    {D3DDDIFMT_D24X8, kDepthOps, 0, 0, 0},
    {D3DDDIFMT_D16, kDepthOps, 0, 0, 0},
    {D3DDDIFMT_D32F_LOCKABLE, kDepthOps, 0, 0, 0},
};

constexpr uint32_t kBlendCaps = D3DPBLENDCAPS_ZERO | D3DPBLENDCAPS_ONE | D3DPBLENDCAPS_SRCCOLOR |
                                D3DPBLENDCAPS_INVSRCCOLOR | D3DPBLENDCAPS_SRCALPHA | D3DPBLENDCAPS_INVSRCALPHA |
                                D3DPBLENDCAPS_DESTALPHA | D3DPBLENDCAPS_INVDESTALPHA | D3DPBLENDCAPS_DESTCOLOR |
                                D3DPBLENDCAPS_INVDESTCOLOR;
constexpr uint32_t kFilterCaps = D3DPTFILTERCAPS_MINFPOINT | D3DPTFILTERCAPS_MINFLINEAR |
                                 D3DPTFILTERCAPS_MIPFPOINT | D3DPTFILTERCAPS_MIPFLINEAR |
                                 D3DPTFILTERCAPS_MAGFPOINT | D3DPTFILTERCAPS_MAGFLINEAR;

} // namespace

void fill_d3d9_caps(D3DCAPS9 *c) {
    std::memset(c, 0, sizeof(*c));
    c->DeviceType = D3DDEVTYPE_HAL;
    c->Caps = D3DCAPS_READ_SCANLINE; // DxgkDdiGetScanLine (seed 000)
    // D3D9Ex/DWM: shared surfaces (EXPORT/IMPORT_SHARED_SURFACE); lockable dynamic textures.
    c->Caps2 = D3DCAPS2_CANSHARERESOURCE | D3DCAPS2_DYNAMICTEXTURES;
    c->Caps3 = D3DCAPS3_ALPHA_FULLSCREEN_FLIP_OR_DISCARD;
    c->PresentationIntervals = D3DPRESENT_INTERVAL_IMMEDIATE | D3DPRESENT_INTERVAL_ONE; // PRESENT_FLAG_VSYNC
    c->DevCaps = D3DDEVCAPS_EXECUTEVIDEOMEMORY | D3DDEVCAPS_TLVERTEXVIDEOMEMORY | D3DDEVCAPS_TEXTUREVIDEOMEMORY |
                 D3DDEVCAPS_TEXTURENONLOCALVIDMEM | D3DDEVCAPS_DRAWPRIMTLVERTEX | D3DDEVCAPS_CANRENDERAFTERFLIP |
                 D3DDEVCAPS_DRAWPRIMITIVES2 | D3DDEVCAPS_DRAWPRIMITIVES2EX | D3DDEVCAPS_HWTRANSFORMANDLIGHT |
                 D3DDEVCAPS_HWRASTERIZATION;
    // All translated by emit_pipeline_state: Z write mask, cull modes, color write mask,
    // blend ops, separate alpha blend.
    c->PrimitiveMiscCaps = D3DPMISCCAPS_MASKZ | D3DPMISCCAPS_CULLNONE | D3DPMISCCAPS_CULLCW |
                           D3DPMISCCAPS_CULLCCW | D3DPMISCCAPS_COLORWRITEENABLE | D3DPMISCCAPS_BLENDOP |
                           D3DPMISCCAPS_SEPARATEALPHABLEND | D3DPMISCCAPS_TSSARGTEMP | D3DPMISCCAPS_PERSTAGECONSTANT;
    // Fog: vertex (per-vertex factor, eye z or range) and table (per pixel, W- or Z-based).
    c->RasterCaps = D3DPRASTERCAPS_ZTEST | D3DPRASTERCAPS_SCISSORTEST | D3DPRASTERCAPS_FOGVERTEX |
                    D3DPRASTERCAPS_FOGTABLE | D3DPRASTERCAPS_FOGRANGE | D3DPRASTERCAPS_WFOG | D3DPRASTERCAPS_ZFOG;
    c->ZCmpCaps = D3DPCMPCAPS_ALL;
    c->AlphaCmpCaps = D3DPCMPCAPS_ALWAYS; // alpha test is not translated
    c->SrcBlendCaps = kBlendCaps;
    c->DestBlendCaps = kBlendCaps;
    c->ShadeCaps = D3DPSHADECAPS_COLORGOURAUDRGB | D3DPSHADECAPS_ALPHAGOURAUDBLEND |
                   D3DPSHADECAPS_SPECULARGOURAUDRGB | D3DPSHADECAPS_FOGGOURAUD;
    // Full non-power-of-two 2D, cube and volume textures with mips (no *_POW2: the
    // executor's cube and 3D textures take any size).
    c->TextureCaps = D3DPTEXTURECAPS_PERSPECTIVE | D3DPTEXTURECAPS_ALPHA | D3DPTEXTURECAPS_MIPMAP |
                     D3DPTEXTURECAPS_CUBEMAP | D3DPTEXTURECAPS_MIPCUBEMAP | D3DPTEXTURECAPS_VOLUMEMAP |
                     D3DPTEXTURECAPS_MIPVOLUMEMAP;
    c->TextureFilterCaps = kFilterCaps;
    c->CubeTextureFilterCaps = kFilterCaps;
    c->VolumeTextureFilterCaps = kFilterCaps;
    c->MaxVolumeExtent = 2048; // wgpu's default max_texture_dimension_3d
    c->TextureAddressCaps = D3DPTADDRESSCAPS_WRAP | D3DPTADDRESSCAPS_MIRROR | D3DPTADDRESSCAPS_CLAMP |
                            D3DPTADDRESSCAPS_INDEPENDENTUV;
    c->VolumeTextureAddressCaps = c->TextureAddressCaps;
    c->LineCaps = D3DLINECAPS_TEXTURE | D3DLINECAPS_ZTEST | D3DLINECAPS_BLEND;
    c->MaxTextureWidth = kMaxTextureDim;
    c->MaxTextureHeight = kMaxTextureDim;
    c->MaxTextureRepeat = kMaxTextureDim;
    c->MaxTextureAspectRatio = kMaxTextureDim;
    c->MaxAnisotropy = 1;
    c->MaxVertexW = 1e10f;
    // The host rasterizer clips in hardware; a wide guard band spares the runtime clipping.
    c->GuardBandLeft = -32768.0f;
    c->GuardBandTop = -32768.0f;
    c->GuardBandRight = 32767.0f;
    c->GuardBandBottom = 32767.0f;
    c->StencilCaps = D3DSTENCILCAPS_KEEP; // stencil ops are not in SET_DEPTH_STENCIL_STATE
    c->FVFCaps = 8 & D3DFVFCAPS_TEXCOORDCOUNTMASK;
    // Fixed-function stages as generated pixel shaders: every op but PREMODULATE (bump
    // mapping included, as Wine's d3d9 lists it), eight stages, eight textures.
    c->TextureOpCaps = D3DTEXOPCAPS_ALL_OPS & ~D3DTEXOPCAPS_PREMODULATE;
    c->MaxTextureBlendStages = aerogpu::ff::kMaxStages;
    c->MaxSimultaneousTextures = aerogpu::ff::kMaxStages;
    // Fixed-function transform and lighting as generated vertex shaders: directional, point
    // and spot lights, D3DMCS_* material sources, local viewer; no texgen, tweening or
    // vertex blending.
    c->MaxActiveLights = aerogpu::ff::kMaxLights;
    c->VertexProcessingCaps = D3DVTXPCAPS_MATERIALSOURCE7 | D3DVTXPCAPS_DIRECTIONALLIGHTS |
                              D3DVTXPCAPS_POSITIONALLIGHTS | D3DVTXPCAPS_LOCALVIEWER;
    c->MaxPointSize = 1.0f;
    c->MaxPrimitiveCount = 0x000FFFFF;
    c->MaxVertexIndex = 0x00FFFFFF; // 32-bit index buffers (AEROGPU_INDEX_FORMAT_UINT32)
    c->MaxStreams = kMaxStreams;
    c->MaxStreamStride = 255;
    c->VertexShaderVersion = kMaxVertexShaderVersion;
    c->MaxVertexShaderConst = kMaxShaderConstantsF;
    c->PixelShaderVersion = kMaxPixelShaderVersion;
    c->PixelShader1xMaxValue = 65504.0f;
    // SET_VERTEX_BUFFERS carries an offset; Blt copies or stretches from any 2D color
    // surface (Device::blit). D3D9Ex clients (WPF, media players) take
    // CANSHARERESOURCE + CAN_STRETCHRECT_FROM_TEXTURES as "WDDM driver".
    c->DevCaps2 = D3DDEVCAPS2_STREAMOFFSET | D3DDEVCAPS2_CAN_STRETCHRECT_FROM_TEXTURES;
    c->NumberOfAdaptersInGroup = 1;
    // Vertex element types with a direct host vertex format (no UDEC3/DEC3N).
    c->DeclTypes = D3DDTCAPS_UBYTE4 | D3DDTCAPS_UBYTE4N | D3DDTCAPS_SHORT2N | D3DDTCAPS_SHORT4N |
                   D3DDTCAPS_USHORT2N | D3DDTCAPS_USHORT4N | D3DDTCAPS_FLOAT16_2 | D3DDTCAPS_FLOAT16_4;
    c->NumSimultaneousRTs = kMaxSimultaneousRTs;
    // Device::blit samples with D3DTEXF_POINT or D3DTEXF_LINEAR (the filters of TextureFilterCaps).
    c->StretchRectFilterCaps = D3DPTFILTERCAPS_MINFPOINT | D3DPTFILTERCAPS_MINFLINEAR | D3DPTFILTERCAPS_MAGFPOINT |
                               D3DPTFILTERCAPS_MAGFLINEAR;
    // Shader model 3.0 (Microsoft's vs_3_0/ps_3_0 requirements): the translator bounds
    // nesting at 64 blocks and shaders at 32768 instructions, takes r0-r31, predication,
    // dsx/dsy, texldl/texldd, arbitrary swizzles and any number of dependent reads.
    c->VS20Caps.Caps = D3DVS20CAPS_PREDICATION;
    c->VS20Caps.DynamicFlowControlDepth = D3DVS20_MAX_DYNAMICFLOWCONTROLDEPTH; // 24
    c->VS20Caps.NumTemps = D3DVS20_MAX_NUMTEMPS;                               // 32
    c->VS20Caps.StaticFlowControlDepth = D3DVS20_MAX_STATICFLOWCONTROLDEPTH;   // 4
    c->PS20Caps.Caps = D3DPS20CAPS_ARBITRARYSWIZZLE | D3DPS20CAPS_GRADIENTINSTRUCTIONS | D3DPS20CAPS_PREDICATION |
                       D3DPS20CAPS_NODEPENDENTREADLIMIT | D3DPS20CAPS_NOTEXINSTRUCTIONLIMIT;
    c->PS20Caps.DynamicFlowControlDepth = D3DPS20_MAX_DYNAMICFLOWCONTROLDEPTH; // 24
    c->PS20Caps.NumTemps = D3DPS20_MAX_NUMTEMPS;                               // 32
    c->PS20Caps.StaticFlowControlDepth = D3DPS20_MAX_STATICFLOWCONTROLDEPTH;   // 4
    c->PS20Caps.NumInstructionSlots = D3DPS20_MAX_NUMINSTRUCTIONSLOTS;         // 512
    c->MaxVShaderInstructionsExecuted = 65535;
    c->MaxPShaderInstructionsExecuted = 65535;
    c->MaxVertexShader30InstructionSlots = D3DMAX30SHADERINSTRUCTIONS; // 32768
    c->MaxPixelShader30InstructionSlots = D3DMAX30SHADERINSTRUCTIONS;
    // No vertex texture fetch: the UMD does not forward D3DVERTEXTEXTURESAMPLERn textures
    // yet, so VertexTextureFilterCaps stays 0 and no format offers D3DUSAGE_QUERY_VERTEXTEXTURE.
}

size_t format_op_count() { return sizeof(kFormats) / sizeof(kFormats[0]); }
const FORMATOP *format_ops() { return kFormats; }

HRESULT get_caps(const D3DDDIARG_GETCAPS *a, bool *known_type) {
    *known_type = true;
    if (!a->pData) return kEInvalidArg;
    switch (a->Type) {
    case D3DDDICAPS_GETD3D9CAPS: {
        if (a->DataSize < sizeof(D3DCAPS9)) return kEInvalidArg;
        D3DCAPS9 caps;
        fill_d3d9_caps(&caps);
        std::memcpy(a->pData, &caps, sizeof(caps));
        return kOk;
    }
    case D3DDDICAPS_GETFORMATCOUNT: {
        if (a->DataSize < sizeof(UINT)) return kEInvalidArg;
        UINT n = static_cast<UINT>(format_op_count());
        std::memcpy(a->pData, &n, sizeof(n));
        return kOk;
    }
    case D3DDDICAPS_GETFORMATDATA: {
        // The runtime sizes the buffer from GETFORMATCOUNT; a short buffer gets a prefix.
        size_t n = a->DataSize / sizeof(FORMATOP);
        if (n > format_op_count()) n = format_op_count();
        std::memset(a->pData, 0, a->DataSize);
        std::memcpy(a->pData, kFormats, n * sizeof(FORMATOP));
        return kOk;
    }
    case D3DDDICAPS_GETMULTISAMPLEQUALITYLEVELS: {
        // No MSAA (CreateResource refuses MultisampleType > 1): zero levels for every type.
        // The answer does not depend on the query, so both placements work: the struct in
        // pData (input and output), or the input in pInfo and a bare UINT count in pData.
        if (a->DataSize >= sizeof(UINT) && a->DataSize < sizeof(DDIMULTISAMPLEQUALITYLEVELSDATA)) {
            UINT zero = 0;
            std::memcpy(a->pData, &zero, sizeof(zero));
            return kOk;
        }
        if (a->DataSize < sizeof(DDIMULTISAMPLEQUALITYLEVELSDATA)) return kEInvalidArg;
        DDIMULTISAMPLEQUALITYLEVELSDATA d;
        std::memcpy(&d, a->pData, sizeof(d));
        d.QualityLevels = 0;
        std::memcpy(a->pData, &d, sizeof(d));
        return kOk;
    }
    case D3DDDICAPS_GETD3DQUERYCOUNT: {
        if (a->DataSize < sizeof(UINT)) return kEInvalidArg;
        UINT n = 1;
        std::memcpy(a->pData, &n, sizeof(n));
        return kOk;
    }
    case D3DDDICAPS_GETD3DQUERYDATA: {
        // EVENT only (fences): what CreateQuery accepts and what frame pacing needs.
        if (a->DataSize < sizeof(UINT)) return kEInvalidArg;
        std::memset(a->pData, 0, a->DataSize);
        UINT q = D3DDDIQUERYTYPE_EVENT;
        std::memcpy(a->pData, &q, sizeof(q));
        return kOk;
    }
    case D3DDDICAPS_DDRAW: {
        if (a->DataSize < sizeof(DDRAW_CAPS)) return kEInvalidArg;
        DDRAW_CAPS d;
        std::memset(&d, 0, sizeof(d));
        d.Caps2 = DDRAW_CAPS2_FLIPINTERVAL | DDRAW_CAPS2_FLIPNOVSYNC | DDRAW_CAPS2_DYNAMICTEXTURES;
        std::memcpy(a->pData, &d, sizeof(d));
        return kOk;
    }
    case D3DDDICAPS_DDRAW_MODE_SPECIFIC: {
        if (a->DataSize < sizeof(DDRAW_MODE_SPECIFIC_CAPS)) return kEInvalidArg;
        DDRAW_MODE_SPECIFIC_CAPS d;
        std::memset(&d, 0, sizeof(d));
        if (a->pInfo) std::memcpy(&d.Head, a->pInfo, sizeof(d.Head));
        d.Caps = MODE_CAPS_READSCANLINE; // no overlays
        std::memcpy(a->pData, &d, sizeof(d));
        return kOk;
    }
    default:
        // Counts of DXVA decoders/processors/extensions, gamma ramp caps, legacy D3D3..8
        // caps: "none".
        *known_type = a->Type == D3DDDICAPS_GETDECODEGUIDCOUNT ||
                      a->Type == D3DDDICAPS_GETVIDEOPROCESSORDEVICEGUIDCOUNT ||
                      a->Type == D3DDDICAPS_GETEXTENSIONGUIDCOUNT;
        std::memset(a->pData, 0, a->DataSize);
        return kOk;
    }
}

} // namespace aerogpu
