/* D3DCAPS9 (subset header): the structure the D3D9 runtime asks the UMD for with
 * D3DDDICAPS_GETD3D9CAPS, and the capability bits the AeroGPU UMD reports.
 *
 * Source: Microsoft's public documentation of d3d9caps.h ("D3DCAPS9 structure",
 * "D3DVSHADERCAPS2_0", "D3DPSHADERCAPS2_0" and the capability constant pages). Only the
 * bits the UMD sets or tests check are defined. All members are 32-bit, so the layout is
 * the same on x86 and x64 (304 bytes). */
#ifndef AEROGPU_D3D9CAPS_H
#define AEROGPU_D3D9CAPS_H

#include <stdint.h>

#include "aerogpu_ddi_common.h"

typedef struct _D3DVSHADERCAPS2_0 {
    uint32_t Caps;
    int32_t DynamicFlowControlDepth;
    int32_t NumTemps;
    int32_t StaticFlowControlDepth;
} D3DVSHADERCAPS2_0;

typedef struct _D3DPSHADERCAPS2_0 {
    uint32_t Caps;
    int32_t DynamicFlowControlDepth;
    int32_t NumTemps;
    int32_t StaticFlowControlDepth;
    int32_t NumInstructionSlots;
} D3DPSHADERCAPS2_0;

typedef struct _D3DCAPS9 {
    uint32_t DeviceType; /* D3DDEVTYPE: 1 = HAL */
    uint32_t AdapterOrdinal;
    uint32_t Caps;
    uint32_t Caps2;
    uint32_t Caps3;
    uint32_t PresentationIntervals;
    uint32_t CursorCaps;
    uint32_t DevCaps;
    uint32_t PrimitiveMiscCaps;
    uint32_t RasterCaps;
    uint32_t ZCmpCaps;
    uint32_t SrcBlendCaps;
    uint32_t DestBlendCaps;
    uint32_t AlphaCmpCaps;
    uint32_t ShadeCaps;
    uint32_t TextureCaps;
    uint32_t TextureFilterCaps;
    uint32_t CubeTextureFilterCaps;
    uint32_t VolumeTextureFilterCaps;
    uint32_t TextureAddressCaps;
    uint32_t VolumeTextureAddressCaps;
    uint32_t LineCaps;
    uint32_t MaxTextureWidth;
    uint32_t MaxTextureHeight;
    uint32_t MaxVolumeExtent;
    uint32_t MaxTextureRepeat;
    uint32_t MaxTextureAspectRatio;
    uint32_t MaxAnisotropy;
    float MaxVertexW;
    float GuardBandLeft;
    float GuardBandTop;
    float GuardBandRight;
    float GuardBandBottom;
    float ExtentsAdjust;
    uint32_t StencilCaps;
    uint32_t FVFCaps;
    uint32_t TextureOpCaps;
    uint32_t MaxTextureBlendStages;
    uint32_t MaxSimultaneousTextures;
    uint32_t VertexProcessingCaps;
    uint32_t MaxActiveLights;
    uint32_t MaxUserClipPlanes;
    uint32_t MaxVertexBlendMatrices;
    uint32_t MaxVertexBlendMatrixIndex;
    float MaxPointSize;
    uint32_t MaxPrimitiveCount;
    uint32_t MaxVertexIndex;
    uint32_t MaxStreams;
    uint32_t MaxStreamStride;
    uint32_t VertexShaderVersion;
    uint32_t MaxVertexShaderConst;
    uint32_t PixelShaderVersion;
    float PixelShader1xMaxValue;
    uint32_t DevCaps2;
    float MaxNpatchTessellationLevel;
    uint32_t Reserved5;
    uint32_t MasterAdapterOrdinal;
    uint32_t AdapterOrdinalInGroup;
    uint32_t NumberOfAdaptersInGroup;
    uint32_t DeclTypes;
    uint32_t NumSimultaneousRTs;
    uint32_t StretchRectFilterCaps;
    D3DVSHADERCAPS2_0 VS20Caps;
    D3DPSHADERCAPS2_0 PS20Caps;
    uint32_t VertexTextureFilterCaps;
    uint32_t MaxVShaderInstructionsExecuted;
    uint32_t MaxPShaderInstructionsExecuted;
    uint32_t MaxVertexShader30InstructionSlots;
    uint32_t MaxPixelShader30InstructionSlots;
} D3DCAPS9;
AEROGPU_DDI_ASSERT_SIZE(D3DCAPS9, 304, 304);
AEROGPU_DDI_ASSERT_OFFSET(D3DCAPS9, MaxTextureWidth, 88, 88);
AEROGPU_DDI_ASSERT_OFFSET(D3DCAPS9, VertexShaderVersion, 196, 196);
AEROGPU_DDI_ASSERT_OFFSET(D3DCAPS9, PixelShaderVersion, 204, 204);
AEROGPU_DDI_ASSERT_OFFSET(D3DCAPS9, NumSimultaneousRTs, 240, 240);
AEROGPU_DDI_ASSERT_OFFSET(D3DCAPS9, VS20Caps, 248, 248);
AEROGPU_DDI_ASSERT_OFFSET(D3DCAPS9, PS20Caps, 264, 264);

#define D3DDEVTYPE_HAL 1u

#define D3DVS_VERSION(major, minor) (0xFFFE0000u | ((uint32_t)(major) << 8) | (uint32_t)(minor))
#define D3DPS_VERSION(major, minor) (0xFFFF0000u | ((uint32_t)(major) << 8) | (uint32_t)(minor))

/* VS20Caps / PS20Caps (shader model 2.x/3.0) */
#define D3DVS20CAPS_PREDICATION 0x00000001u
#define D3DVS20_MAX_DYNAMICFLOWCONTROLDEPTH 24u
#define D3DVS20_MAX_NUMTEMPS 32u
#define D3DVS20_MAX_STATICFLOWCONTROLDEPTH 4u
#define D3DPS20CAPS_ARBITRARYSWIZZLE 0x00000001u
#define D3DPS20CAPS_GRADIENTINSTRUCTIONS 0x00000002u
#define D3DPS20CAPS_PREDICATION 0x00000004u
#define D3DPS20CAPS_NODEPENDENTREADLIMIT 0x00000008u
#define D3DPS20CAPS_NOTEXINSTRUCTIONLIMIT 0x00000010u
#define D3DPS20_MAX_DYNAMICFLOWCONTROLDEPTH 24u
#define D3DPS20_MAX_NUMTEMPS 32u
#define D3DPS20_MAX_STATICFLOWCONTROLDEPTH 4u
#define D3DPS20_MAX_NUMINSTRUCTIONSLOTS 512u
#define D3DMAX30SHADERINSTRUCTIONS 32768u

/* Caps */
#define D3DCAPS_READ_SCANLINE 0x00020000u
/* Caps2 */
#define D3DCAPS2_FULLSCREENGAMMA 0x00020000u
#define D3DCAPS2_CANMANAGERESOURCE 0x10000000u
#define D3DCAPS2_DYNAMICTEXTURES 0x20000000u
#define D3DCAPS2_CANAUTOGENMIPMAP 0x40000000u
#define D3DCAPS2_CANSHARERESOURCE 0x80000000u
/* Caps3 */
#define D3DCAPS3_ALPHA_FULLSCREEN_FLIP_OR_DISCARD 0x00000020u
#define D3DCAPS3_COPY_TO_VIDMEM 0x00000100u
#define D3DCAPS3_COPY_TO_SYSTEMMEM 0x00000200u
/* PresentationIntervals */
#define D3DPRESENT_INTERVAL_ONE 0x00000001u
#define D3DPRESENT_INTERVAL_IMMEDIATE 0x80000000u
/* DevCaps */
#define D3DDEVCAPS_EXECUTESYSTEMMEMORY 0x00000010u
#define D3DDEVCAPS_EXECUTEVIDEOMEMORY 0x00000020u
#define D3DDEVCAPS_TLVERTEXSYSTEMMEMORY 0x00000040u
#define D3DDEVCAPS_TLVERTEXVIDEOMEMORY 0x00000080u
#define D3DDEVCAPS_TEXTURESYSTEMMEMORY 0x00000100u
#define D3DDEVCAPS_TEXTUREVIDEOMEMORY 0x00000200u
#define D3DDEVCAPS_DRAWPRIMTLVERTEX 0x00000400u
#define D3DDEVCAPS_CANRENDERAFTERFLIP 0x00000800u
#define D3DDEVCAPS_TEXTURENONLOCALVIDMEM 0x00001000u
#define D3DDEVCAPS_DRAWPRIMITIVES2 0x00002000u
#define D3DDEVCAPS_DRAWPRIMITIVES2EX 0x00008000u
#define D3DDEVCAPS_HWTRANSFORMANDLIGHT 0x00010000u
#define D3DDEVCAPS_HWRASTERIZATION 0x00080000u
#define D3DDEVCAPS_PUREDEVICE 0x00100000u
#define D3DDEVCAPS_RTPATCHES 0x00400000u
#define D3DDEVCAPS_NPATCHES 0x01000000u
/* PrimitiveMiscCaps */
#define D3DPMISCCAPS_MASKZ 0x00000002u
#define D3DPMISCCAPS_CULLNONE 0x00000010u
#define D3DPMISCCAPS_CULLCW 0x00000020u
#define D3DPMISCCAPS_CULLCCW 0x00000040u
#define D3DPMISCCAPS_COLORWRITEENABLE 0x00000080u
#define D3DPMISCCAPS_BLENDOP 0x00000800u
#define D3DPMISCCAPS_SEPARATEALPHABLEND 0x00020000u
/* RasterCaps */
#define D3DPRASTERCAPS_ZTEST 0x00000010u
#define D3DPRASTERCAPS_SCISSORTEST 0x01000000u
#define D3DPRASTERCAPS_DEPTHBIAS 0x04000000u
/* ZCmpCaps / AlphaCmpCaps: every D3DCMPFUNC */
#define D3DPCMPCAPS_ALL 0x000000FFu
#define D3DPCMPCAPS_ALWAYS 0x00000080u
/* Src/DestBlendCaps */
#define D3DPBLENDCAPS_ZERO 0x00000001u
#define D3DPBLENDCAPS_ONE 0x00000002u
#define D3DPBLENDCAPS_SRCCOLOR 0x00000004u
#define D3DPBLENDCAPS_INVSRCCOLOR 0x00000008u
#define D3DPBLENDCAPS_SRCALPHA 0x00000010u
#define D3DPBLENDCAPS_INVSRCALPHA 0x00000020u
#define D3DPBLENDCAPS_DESTALPHA 0x00000040u
#define D3DPBLENDCAPS_INVDESTALPHA 0x00000080u
#define D3DPBLENDCAPS_DESTCOLOR 0x00000100u
#define D3DPBLENDCAPS_INVDESTCOLOR 0x00000200u
#define D3DPBLENDCAPS_SRCALPHASAT 0x00000400u
#define D3DPBLENDCAPS_BLENDFACTOR 0x00002000u
/* ShadeCaps */
#define D3DPSHADECAPS_COLORGOURAUDRGB 0x00000008u
#define D3DPSHADECAPS_ALPHAGOURAUDBLEND 0x00004000u
/* TextureCaps */
#define D3DPTEXTURECAPS_PERSPECTIVE 0x00000001u
#define D3DPTEXTURECAPS_POW2 0x00000002u
#define D3DPTEXTURECAPS_ALPHA 0x00000004u
#define D3DPTEXTURECAPS_NONPOW2CONDITIONAL 0x00000100u
#define D3DPTEXTURECAPS_CUBEMAP 0x00000800u
#define D3DPTEXTURECAPS_VOLUMEMAP 0x00002000u
#define D3DPTEXTURECAPS_MIPMAP 0x00004000u
/* TextureFilterCaps / StretchRectFilterCaps */
#define D3DPTFILTERCAPS_MINFPOINT 0x00000100u
#define D3DPTFILTERCAPS_MINFLINEAR 0x00000200u
#define D3DPTFILTERCAPS_MIPFPOINT 0x00010000u
#define D3DPTFILTERCAPS_MIPFLINEAR 0x00020000u
#define D3DPTFILTERCAPS_MAGFPOINT 0x01000000u
#define D3DPTFILTERCAPS_MAGFLINEAR 0x02000000u
/* TextureAddressCaps */
#define D3DPTADDRESSCAPS_WRAP 0x00000001u
#define D3DPTADDRESSCAPS_MIRROR 0x00000002u
#define D3DPTADDRESSCAPS_CLAMP 0x00000004u
#define D3DPTADDRESSCAPS_INDEPENDENTUV 0x00000010u
/* LineCaps */
#define D3DLINECAPS_TEXTURE 0x00000001u
#define D3DLINECAPS_ZTEST 0x00000002u
#define D3DLINECAPS_BLEND 0x00000004u
/* StencilCaps */
#define D3DSTENCILCAPS_KEEP 0x00000001u
#define D3DSTENCILCAPS_ZERO 0x00000002u
#define D3DSTENCILCAPS_REPLACE 0x00000004u
#define D3DSTENCILCAPS_INCRSAT 0x00000008u
#define D3DSTENCILCAPS_DECRSAT 0x00000010u
#define D3DSTENCILCAPS_INVERT 0x00000020u
#define D3DSTENCILCAPS_INCR 0x00000040u
#define D3DSTENCILCAPS_DECR 0x00000080u
/* FVFCaps */
#define D3DFVFCAPS_TEXCOORDCOUNTMASK 0x0000FFFFu
/* TextureOpCaps */
#define D3DTEXOPCAPS_DISABLE 0x00000001u
#define D3DTEXOPCAPS_SELECTARG1 0x00000002u
#define D3DTEXOPCAPS_SELECTARG2 0x00000004u
#define D3DTEXOPCAPS_MODULATE 0x00000008u
/* DevCaps2 */
#define D3DDEVCAPS2_STREAMOFFSET 0x00000001u
#define D3DDEVCAPS2_CAN_STRETCHRECT_FROM_TEXTURES 0x00000010u
/* DeclTypes (beyond the always-supported FLOAT1..4 / D3DCOLOR) */
#define D3DDTCAPS_UBYTE4 0x00000001u
#define D3DDTCAPS_UBYTE4N 0x00000002u
#define D3DDTCAPS_SHORT2N 0x00000004u
#define D3DDTCAPS_SHORT4N 0x00000008u
#define D3DDTCAPS_USHORT2N 0x00000010u
#define D3DDTCAPS_USHORT4N 0x00000020u
#define D3DDTCAPS_UDEC3 0x00000040u
#define D3DDTCAPS_DEC3N 0x00000080u
#define D3DDTCAPS_FLOAT16_2 0x00000100u
#define D3DDTCAPS_FLOAT16_4 0x00000200u

#endif /* AEROGPU_D3D9CAPS_H */
