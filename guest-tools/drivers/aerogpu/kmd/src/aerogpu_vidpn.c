/* VidPN: one source (0), one target (0), identity path, 32bpp, 60 Hz modes from the
 * portable mode list. UNTESTED ON WINDOWS (aerogpu_kmd.h). */
#include "aerogpu_kmd.h"

static const DXGK_VIDPN_INTERFACE *vidpn_if(agpu_adapter *a, D3DKMDT_HVIDPN h)
{
    const DXGK_VIDPN_INTERFACE *vi = NULL;
    if (!NT_SUCCESS(a->dxgk.DxgkCbQueryVidPnInterface(h, DXGK_VIDPN_INTERFACE_VERSION_V1, &vi))) return NULL;
    return vi;
}

static int format_ok(D3DDDIFORMAT f)
{
    return f == D3DDDIFMT_X8R8G8B8 || f == D3DDDIFMT_A8R8G8B8;
}

static int mode_listed(agpu_adapter *a, UINT w, UINT h)
{
    UINT i;
    for (i = 0; i < a->mode_count; i++)
        if (a->modes[i].width == w && a->modes[i].height == h) return 1;
    return 0;
}

static void fill_signal(D3DKMDT_VIDEO_SIGNAL_INFO *s, UINT w, UINT h)
{
    UINT total_w = agpu_total_width(w), total_h = h + agpu_vblank_lines(h);
    RtlZeroMemory(s, sizeof(*s));
    s->VideoStandard = D3DKMDT_VSS_OTHER;
    s->TotalSize.cx = total_w;
    s->TotalSize.cy = total_h;
    s->ActiveSize.cx = w;
    s->ActiveSize.cy = h;
    s->VSyncFreq.Numerator = 60;
    s->VSyncFreq.Denominator = 1;
    s->HSyncFreq.Numerator = total_h * 60;
    s->HSyncFreq.Denominator = 1;
    s->PixelRate = (SIZE_T)total_w * total_h * 60;
    s->ScanLineOrdering = D3DDDI_VSSLO_PROGRESSIVE;
}

NTSTATUS AEROGPU_DDI AgpuIsSupportedVidPn(HANDLE hAdapter, void *pArgs)
{
    agpu_adapter *a = (agpu_adapter *)hAdapter;
    DXGKARG_ISSUPPORTEDVIDPN *s = (DXGKARG_ISSUPPORTEDVIDPN *)pArgs;
    const DXGK_VIDPN_INTERFACE *vi = vidpn_if(a, s->hDesiredVidPn);
    D3DKMDT_HVIDPNTOPOLOGY topo;
    const DXGK_VIDPNTOPOLOGY_INTERFACE *ti;
    D3DKMDT_HVIDPNSOURCEMODESET sms;
    const DXGK_VIDPNSOURCEMODESET_INTERFACE *si;
    const D3DKMDT_VIDPN_SOURCE_MODE *pinned = NULL;
    SIZE_T paths = 0;
    s->IsVidPnSupported = FALSE;
    if (!vi) return STATUS_SUCCESS;
    if (!NT_SUCCESS(vi->pfnGetTopology(s->hDesiredVidPn, &topo, &ti))) return STATUS_SUCCESS;
    if (!NT_SUCCESS(ti->pfnGetNumPaths(topo, &paths))) return STATUS_SUCCESS;
    if (paths > 1) return STATUS_SUCCESS; /* single head */
    if (paths == 0) { s->IsVidPnSupported = TRUE; return STATUS_SUCCESS; }
    if (NT_SUCCESS(vi->pfnAcquireSourceModeSet(s->hDesiredVidPn, 0, &sms, &si))) {
        if (NT_SUCCESS(si->pfnAcquirePinnedModeInfo(sms, &pinned)) && pinned) {
            s->IsVidPnSupported = pinned->Type == D3DKMDT_RMT_GRAPHICS &&
                                  format_ok(pinned->Format.Graphics.PixelFormat) &&
                                  mode_listed(a, pinned->Format.Graphics.PrimSurfSize.cx,
                                              pinned->Format.Graphics.PrimSurfSize.cy);
            si->pfnReleaseModeInfo(sms, pinned);
        } else {
            s->IsVidPnSupported = TRUE;
        }
        vi->pfnReleaseSourceModeSet(s->hDesiredVidPn, sms);
    } else {
        s->IsVidPnSupported = TRUE;
    }
    return STATUS_SUCCESS;
}

NTSTATUS AEROGPU_DDI AgpuRecommendFunctionalVidPn(HANDLE hAdapter, const void *pArgs)
{
    (void)hAdapter; (void)pArgs;
    return STATUS_GRAPHICS_NO_RECOMMENDED_FUNCTIONAL_VIDPN;
}

NTSTATUS AEROGPU_DDI AgpuRecommendVidPnTopology(HANDLE hAdapter, const void *pArgs)
{
    (void)hAdapter; (void)pArgs;
    return STATUS_GRAPHICS_NO_RECOMMENDED_VIDPN_TOPOLOGY;
}

NTSTATUS AEROGPU_DDI AgpuUpdateActiveVidPnPresentPath(HANDLE hAdapter, const void *pArgs)
{
    (void)hAdapter; (void)pArgs;
    return STATUS_SUCCESS; /* identity scaling/rotation only; nothing to change */
}

static void add_source_modes(agpu_adapter *a, D3DKMDT_HVIDPN h, const DXGK_VIDPN_INTERFACE *vi,
                             UINT only_w, UINT only_h)
{
    D3DKMDT_HVIDPNSOURCEMODESET set;
    const DXGK_VIDPNSOURCEMODESET_INTERFACE *si;
    UINT i;
    if (!NT_SUCCESS(vi->pfnCreateNewSourceModeSet(h, 0, &set, &si))) return;
    for (i = 0; i < a->mode_count; i++) {
        D3DKMDT_VIDPN_SOURCE_MODE *m;
        if (only_w && (a->modes[i].width != only_w || a->modes[i].height != only_h)) continue;
        if (!NT_SUCCESS(si->pfnCreateNewModeInfo(set, &m))) continue;
        m->Type = D3DKMDT_RMT_GRAPHICS;
        m->Format.Graphics.PrimSurfSize.cx = a->modes[i].width;
        m->Format.Graphics.PrimSurfSize.cy = a->modes[i].height;
        m->Format.Graphics.VisibleRegionSize = m->Format.Graphics.PrimSurfSize;
        m->Format.Graphics.Stride = a->modes[i].width * 4;
        m->Format.Graphics.PixelFormat = D3DDDIFMT_X8R8G8B8;
        m->Format.Graphics.ColorBasis = D3DKMDT_CB_SRGB;
        m->Format.Graphics.PixelValueAccessMode = D3DKMDT_PVAM_DIRECT;
        if (!NT_SUCCESS(si->pfnAddMode(set, m))) si->pfnReleaseModeInfo(set, m);
    }
    vi->pfnAssignSourceModeSet(h, 0, set);
}

static void add_target_modes(agpu_adapter *a, D3DKMDT_HVIDPN h, const DXGK_VIDPN_INTERFACE *vi,
                             UINT only_w, UINT only_h)
{
    D3DKMDT_HVIDPNTARGETMODESET set;
    const DXGK_VIDPNTARGETMODESET_INTERFACE *ti;
    UINT i;
    if (!NT_SUCCESS(vi->pfnCreateNewTargetModeSet(h, 0, &set, &ti))) return;
    for (i = 0; i < a->mode_count; i++) {
        D3DKMDT_VIDPN_TARGET_MODE *m;
        if (only_w && (a->modes[i].width != only_w || a->modes[i].height != only_h)) continue;
        if (!NT_SUCCESS(ti->pfnCreateNewModeInfo(set, &m))) continue;
        fill_signal(&m->VideoSignalInfo, a->modes[i].width, a->modes[i].height);
        m->Preference = i == 0 ? D3DKMDT_MP_PREFERRED : D3DKMDT_MP_NOTPREFERRED;
        if (!NT_SUCCESS(ti->pfnAddMode(set, m))) ti->pfnReleaseModeInfo(set, m);
    }
    vi->pfnAssignTargetModeSet(h, 0, set);
}

static int scaling_pinned(D3DKMDT_VIDPN_PRESENT_PATH_SCALING s)
{
    return s == D3DKMDT_VPPS_IDENTITY || s == D3DKMDT_VPPS_CENTERED || s == D3DKMDT_VPPS_STRETCHED ||
           s == D3DKMDT_VPPS_ASPECTRATIOCENTEREDMAX || s == D3DKMDT_VPPS_CUSTOM;
}

static int rotation_pinned(D3DKMDT_VIDPN_PRESENT_PATH_ROTATION r)
{
    return r == D3DKMDT_VPPR_IDENTITY || r == D3DKMDT_VPPR_ROTATE90 || r == D3DKMDT_VPPR_ROTATE180 ||
           r == D3DKMDT_VPPR_ROTATE270;
}

/* EnumVidPnCofuncModality reports each path's transformation and copy-protection support
 * through pfnUpdatePathSupportInfo: the one path supports identity scaling and rotation
 * only, and no copy protection. */
static void report_path_support(const DXGK_VIDPN_INTERFACE *vi, D3DKMDT_HVIDPN h)
{
    D3DKMDT_HVIDPNTOPOLOGY topo;
    const DXGK_VIDPNTOPOLOGY_INTERFACE *ti;
    const D3DKMDT_VIDPN_PRESENT_PATH *path = NULL;
    D3DKMDT_VIDPN_PRESENT_PATH update;
    int changed = 0;
    if (!NT_SUCCESS(vi->pfnGetTopology(h, &topo, &ti))) return;
    if (!NT_SUCCESS(ti->pfnAcquirePathInfo(topo, 0, 0, &path)) || !path) return;
    update = *path;
    if (!scaling_pinned(update.ContentTransformation.Scaling)) {
        RtlZeroMemory(&update.ContentTransformation.ScalingSupport, sizeof(update.ContentTransformation.ScalingSupport));
        update.ContentTransformation.ScalingSupport.Identity = 1;
        changed = 1;
    }
    if (!rotation_pinned(update.ContentTransformation.Rotation)) {
        RtlZeroMemory(&update.ContentTransformation.RotationSupport, sizeof(update.ContentTransformation.RotationSupport));
        update.ContentTransformation.RotationSupport.Identity = 1;
        changed = 1;
    }
    if (!update.CopyProtection.CopyProtectionSupport.NoProtection) {
        RtlZeroMemory(&update.CopyProtection.CopyProtectionSupport, sizeof(update.CopyProtection.CopyProtectionSupport));
        update.CopyProtection.CopyProtectionSupport.NoProtection = 1;
        changed = 1;
    }
    if (changed) ti->pfnUpdatePathSupportInfo(topo, &update);
    ti->pfnReleasePathInfo(topo, path);
}

NTSTATUS AEROGPU_DDI AgpuEnumVidPnCofuncModality(HANDLE hAdapter, const void *pArgs)
{
    agpu_adapter *a = (agpu_adapter *)hAdapter;
    const DXGKARG_ENUMVIDPNCOFUNCMODALITY *e = (const DXGKARG_ENUMVIDPNCOFUNCMODALITY *)pArgs;
    D3DKMDT_HVIDPN h = e->hConstrainingVidPn;
    const DXGK_VIDPN_INTERFACE *vi = vidpn_if(a, h);
    D3DKMDT_HVIDPNSOURCEMODESET sms;
    const DXGK_VIDPNSOURCEMODESET_INTERFACE *si;
    D3DKMDT_HVIDPNTARGETMODESET tms;
    const DXGK_VIDPNTARGETMODESET_INTERFACE *ti;
    const D3DKMDT_VIDPN_SOURCE_MODE *ps = NULL;
    const D3DKMDT_VIDPN_TARGET_MODE *pt = NULL;
    UINT sw = 0, sh = 0, tw = 0, th = 0;
    if (!vi) return STATUS_INVALID_PARAMETER;
    if (NT_SUCCESS(vi->pfnAcquireSourceModeSet(h, 0, &sms, &si))) {
        if (NT_SUCCESS(si->pfnAcquirePinnedModeInfo(sms, &ps)) && ps) {
            sw = ps->Format.Graphics.PrimSurfSize.cx;
            sh = ps->Format.Graphics.PrimSurfSize.cy;
            si->pfnReleaseModeInfo(sms, ps);
        }
        vi->pfnReleaseSourceModeSet(h, sms);
    }
    if (NT_SUCCESS(vi->pfnAcquireTargetModeSet(h, 0, &tms, &ti))) {
        if (NT_SUCCESS(ti->pfnAcquirePinnedModeInfo(tms, &pt)) && pt) {
            tw = pt->VideoSignalInfo.ActiveSize.cx;
            th = pt->VideoSignalInfo.ActiveSize.cy;
            ti->pfnReleaseModeInfo(tms, pt);
        }
        vi->pfnReleaseTargetModeSet(h, tms);
    }
    report_path_support(vi, h);
    /* Unpinned sides get the modes cofunctional with the other side (identity path: the
     * same size), or the whole list. */
    if (!sw && !(e->EnumPivotType == D3DKMDT_EPT_VIDPNSOURCE && e->EnumPivot.VidPnSourceId == 0))
        add_source_modes(a, h, vi, tw, th);
    if (!tw && !(e->EnumPivotType == D3DKMDT_EPT_VIDPNTARGET && e->EnumPivot.VidPnTargetId == 0))
        add_target_modes(a, h, vi, sw, sh);
    return STATUS_SUCCESS;
}

NTSTATUS AEROGPU_DDI AgpuCommitVidPn(HANDLE hAdapter, const void *pArgs)
{
    agpu_adapter *a = (agpu_adapter *)hAdapter;
    const DXGKARG_COMMITVIDPN *c = (const DXGKARG_COMMITVIDPN *)pArgs;
    const DXGK_VIDPN_INTERFACE *vi = vidpn_if(a, c->hFunctionalVidPn);
    D3DKMDT_HVIDPNSOURCEMODESET sms;
    const DXGK_VIDPNSOURCEMODESET_INTERFACE *si;
    const D3DKMDT_VIDPN_SOURCE_MODE *m = NULL;
    if (!vi) return STATUS_INVALID_PARAMETER;
    if (c->AffectedVidPnSourceId != 0 && c->AffectedVidPnSourceId != D3DDDI_ID_ALL) return STATUS_SUCCESS;
    if (!NT_SUCCESS(vi->pfnAcquireSourceModeSet(c->hFunctionalVidPn, 0, &sms, &si))) {
        /* Source without a mode set: the path was removed, turn the scanout off. */
        a->scanout.enable = 0;
        if (a->in_d0) agpu_scanout_program(&a->mmio, &a->scanout);
        return STATUS_SUCCESS;
    }
    if (NT_SUCCESS(si->pfnAcquirePinnedModeInfo(sms, &m)) && m) {
        a->scanout.width = m->Format.Graphics.PrimSurfSize.cx;
        a->scanout.height = m->Format.Graphics.PrimSurfSize.cy;
        a->scanout.pitch = m->Format.Graphics.Stride ? m->Format.Graphics.Stride : a->scanout.width * 4;
        a->scanout.format = AEROGPU_FORMAT_B8G8R8X8_UNORM;
        si->pfnReleaseModeInfo(sms, m);
    }
    vi->pfnReleaseSourceModeSet(c->hFunctionalVidPn, sms);
    {
        agpu_allocation *al = agpu_allocation_from_handle(c->hPrimaryAllocation);
        if (al && al->gpa) a->scanout.fb_gpa = al->gpa;
    }
    a->scanout.enable = a->source_visible && a->scanout.fb_gpa != 0;
    if (a->in_d0) agpu_scanout_program(&a->mmio, &a->scanout);
    return STATUS_SUCCESS;
}

NTSTATUS AEROGPU_DDI AgpuRecommendMonitorModes(HANDLE hAdapter, const void *pArgs)
{
    agpu_adapter *a = (agpu_adapter *)hAdapter;
    const DXGKARG_RECOMMENDMONITORMODES *r = (const DXGKARG_RECOMMENDMONITORMODES *)pArgs;
    const DXGK_MONITORSOURCEMODESET_INTERFACE *mi = r->pMonitorSourceModeSetInterface;
    UINT i;
    for (i = 0; i < a->mode_count; i++) {
        D3DKMDT_MONITOR_SOURCE_MODE *m;
        if (!NT_SUCCESS(mi->pfnCreateNewModeInfo(r->hMonitorSourceModeSet, &m))) continue;
        fill_signal(&m->VideoSignalInfo, a->modes[i].width, a->modes[i].height);
        m->ColorBasis = D3DKMDT_CB_SRGB;
        m->ColorCoeffDynamicRanges.FirstChannel = 8;
        m->ColorCoeffDynamicRanges.SecondChannel = 8;
        m->ColorCoeffDynamicRanges.ThirdChannel = 8;
        m->Origin = D3DKMDT_MCO_DRIVER;
        m->Preference = i == 0 ? D3DKMDT_MP_PREFERRED : D3DKMDT_MP_NOTPREFERRED;
        /* Modes the EDID already contributed come back as "already in mode set". */
        if (!NT_SUCCESS(mi->pfnAddMode(r->hMonitorSourceModeSet, m)))
            mi->pfnReleaseModeInfo(r->hMonitorSourceModeSet, m);
    }
    return STATUS_SUCCESS;
}
