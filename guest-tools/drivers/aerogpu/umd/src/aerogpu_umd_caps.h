// GetCaps of the AeroGPU D3D9 UMD (portable): D3DCAPS9, the format table, multisample
// levels, query types and the DirectDraw caps the Windows 7 D3D9 runtime asks for. The
// values are derived from what the translation core accepts (aerogpu_umd_core.h limits,
// d3d_format_to_aerogpu) so the runtime never hands the core something it refuses.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "../../include/d3d9caps.h"
#include "../../include/d3dumddi.h"

namespace aerogpu {

void fill_d3d9_caps(D3DCAPS9 *caps);

// The formats GETFORMATDATA reports, in order.
size_t format_op_count();
const FORMATOP *format_ops();

// D3DDDICAPS_* dispatch: S_OK with pData filled, E_INVALIDARG when pData is missing or
// too small. Types the UMD has nothing for (DXVA, overlays, pre-D3D9 caps) are answered
// with zeroed data ("none"), logged once by the caller.
HRESULT get_caps(const D3DDDIARG_GETCAPS *args, bool *known_type);

} // namespace aerogpu
