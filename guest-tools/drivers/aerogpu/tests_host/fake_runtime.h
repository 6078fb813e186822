// A fake Windows 7 runtime for the UMD scenes: plays dxgkrnl and the KMD for one device.
// Allocations get guest addresses in the trace RAM (the KMD's CreateAllocation work:
// alloc_ids from its range when the UMD left none, share tokens for shared ones), and the
// pfnRenderCb / pfnPresentCb submissions go through the KMD's portable staging and ring
// code into an agpu_trace that the Rust device model replays. Header-only: each scene
// program includes it once.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

extern "C" {
#include "agpu_trace.h"
#include "../kmd/portable/agpu_device.h"
#include "../kmd/portable/agpu_ring.h"
#include "../kmd/portable/agpu_share.h"
#include "../kmd/portable/agpu_submit.h"
#include "../protocol/aerogpu_dbgctl_escape.h"
}
#include "../include/d3dumddi.h"

inline agpu_trace T;
inline agpu_ring R;

struct FakeRuntime {
    struct Alloc { uint32_t alloc_id; uint64_t gpa, size; aerogpu_wddm_alloc_priv priv; };
    std::map<D3DKMT_HANDLE, Alloc> allocs;
    D3DKMT_HANDLE next_handle = 0x40;
    uint32_t next_kmd_id = AEROGPU_WDDM_ALLOC_ID_KMD_MIN;
    uint64_t next_gpa = 0x400000, fence = 0, stage_off = 0;
    uint32_t renders = 0, presents = 0, submissions = 0, locks = 0, deallocs = 0;
    uint32_t shared_allocs = 0, last_shared_id = 0;
    uint64_t completion_lag = 0; // fences the device is reported behind (slow GPU)
    // false: nothing is recorded (no trace open); Lock hands out `scratch` instead.
    bool recording = true;
    std::vector<uint8_t> scratch;
    bool failed = false;
    std::string why;
    uint8_t cmd[64 * 1024];
    std::vector<uint32_t> last_ops; // opcodes of the last pfnRenderCb batch
    uint32_t max_render_bytes = 0;  // largest pfnRenderCb batch
    D3DDDI_ALLOCATIONLIST list[128];
    D3DDDI_PATCHLOCATIONLIST patches[4];
    // What pfnCreateContextCb hands out: the whole buffers (Full), no buffers at all (None),
    // or a one-entry allocation list (SmallList). pfnRenderCb grants what the UMD asks for
    // with the Resize* flags (up to the arrays above) and counts those requests.
    enum class Buffers { Full, None, SmallList } buffers = Buffers::Full;
    // The sizes last handed out to each context (they share the arrays; contexts are
    // 0xC0, 0xC1, ...).
    struct Granted { uint32_t cmd, list; };
    std::map<HANDLE, Granted> granted;
    uint32_t buffer_requests = 0;
    agpu_share_table shares; // the KMD's share_token table

    bool push(const void *stream, uint32_t bytes, const D3DDDI_ALLOCATIONLIST *l, uint32_t n, bool present) {
        if (!recording) return true;
        agpu_alloc_ref refs[128];
        for (uint32_t i = 0; i < n; i++) {
            auto it = allocs.find(l[i].hAllocation);
            if (it == allocs.end()) { why = "unknown hAllocation"; return false; }
            refs[i] = agpu_alloc_ref{it->second.alloc_id, it->second.gpa, it->second.size, 1, int(l[i].WriteOperation)};
        }
        // Staging slots in [1 MiB, 3 MiB) of guest RAM, each as large as the KMD's staging
        // of the fullest batch this runtime allows (the whole command buffer and list).
        // (They were a fixed 16 KiB, a quarter of the buffer: a batch above that failed.)
        // Reusing a slot is safe: the device consumes each submission at its doorbell.
        const uint64_t slot = (agpu_submit_stage_bytes(sizeof(cmd), 128) + 0xFFFu) & ~uint64_t(0xFFF);
        if (stage_off + slot > 0x200000) stage_off = 0;
        agpu_staging st;
        st.va = T.ram + 0x100000 + stage_off;
        st.gpa = 0x100000 + stage_off;
        st.size_bytes = uint32_t(slot);
        stage_off += slot;
        struct aerogpu_submit_desc d;
        uint32_t conflict = 0;
        if (agpu_submit_stage(stream, bytes, 16u << 20, refs, n, &st, fence + 1, present ? 1 : 0, &d, &conflict) != AGPU_OK ||
            agpu_ring_push(&R, &d, &T.ops) != AGPU_OK) {
            why = "stage/ring";
            return false;
        }
        fence++;
        submissions++;
        return true;
    }
};
inline FakeRuntime F;

// Opens the trace and brings the device up as the KMD's StartDevice does.
inline int start_trace(const char *path) {
    if (!agpu_trace_open(&T, path)) return 2;
    agpu_device_info info;
    REQUIRE(agpu_probe(&T.ops, &info) == AGPU_OK);
    REQUIRE(agpu_ring_init(&R, T.ram + 0x1000, 0x1000, 0x2000, 64, 0) == AGPU_OK);
    agpu_ring_program(&R, &T.ops, 0x800);
    agpu_wr(&T.ops, AEROGPU_MMIO_REG_IRQ_ENABLE, agpu_irq_mask(info.features, 1));
    return 0;
}

// The final expectations for the replay, and the summary line the Rust tests read.
inline void finish_trace() {
    agpu_trace_expect(&T, F.fence, 0, 0, F.submissions);
    agpu_trace_close(&T);
    std::printf("submissions %u renders %u presents %u fence %llu\n", F.submissions, F.renders, F.presents,
                (unsigned long long)F.fence);
}

inline HRESULT APIENTRY cb_allocate(HANDLE, D3DDDICB_ALLOCATE *a) {
    if (!a || a->NumAllocations != 1) return HRESULT(0x80070057);
    D3DDDI_ALLOCATIONINFO &ai = a->pAllocationInfo[0];
    aerogpu_wddm_alloc_priv p;
    if (ai.PrivateDriverDataSize != sizeof(p)) return HRESULT(0x80070057);
    std::memcpy(&p, ai.pPrivateDriverData, sizeof(p));
    if (p.magic != AEROGPU_WDDM_ALLOC_PRIV_MAGIC || !p.size_bytes) return HRESULT(0x80070057);
    if (!p.alloc_id) {
        // DxgkDdiCreateAllocation assigns an ID from its own range, written back.
        p.alloc_id = F.next_kmd_id++;
        std::memcpy(ai.pPrivateDriverData, &p, sizeof(p));
    }
    uint64_t gpa = F.next_gpa;
    F.next_gpa += (p.size_bytes + 0xFFF) & ~uint64_t(0xFFF);
    if (F.next_gpa > AGPU_TRACE_RAM_BYTES) return HRESULT(0x80070057);
    if (p.flags & AEROGPU_WDDM_ALLOC_PRIV_FLAG_IS_SHARED) {
        // DxgkDdiCreateAllocation: a new token, written back into the preserved blob.
        p.share_token = agpu_share_new_token(&F.shares);
        if (agpu_share_open(&F.shares, p.share_token) != AGPU_OK) return HRESULT(0x80070057);
        std::memcpy(ai.pPrivateDriverData, &p, sizeof(p));
        F.shared_allocs++;
        F.last_shared_id = p.alloc_id;
    }
    ai.hAllocation = F.next_handle++;
    F.allocs[ai.hAllocation] = {p.alloc_id, gpa, p.size_bytes, p}; // dxgkrnl keeps the blob
    return 0;
}
inline HRESULT APIENTRY cb_deallocate(HANDLE, const D3DDDICB_DEALLOCATE *d) {
    for (UINT i = 0; i < d->NumAllocations; i++) F.allocs.erase(d->HandleList[i]);
    F.deallocs++;
    return 0;
}
inline std::vector<uint32_t> opcodes_of(const uint8_t *stream, uint32_t bytes) {
    std::vector<uint32_t> ops;
    uint32_t off = sizeof(aerogpu_cmd_stream_header);
    while (off + sizeof(aerogpu_cmd_hdr) <= bytes) {
        aerogpu_cmd_hdr h;
        std::memcpy(&h, stream + off, sizeof(h));
        if (h.size_bytes < sizeof(h)) break;
        ops.push_back(h.opcode);
        off += h.size_bytes;
    }
    return ops;
}
// Hands out the command buffer and allocation list for the next batch, as dxgkrnl does at
// each pfnRenderCb: the sizes asked for when the UMD set a Resize* flag, else the current
// ones. The command buffer comes back filled with garbage, so a batch relying on stale
// bytes of an earlier one fails to replay.
inline void hand_out_buffers(D3DDDICB_RENDER *r, FakeRuntime::Granted &g) {
    if (r->Flags.ResizeCommandBuffer) g.cmd = std::min<uint32_t>(r->NewCommandBufferSize, sizeof(F.cmd));
    if (r->Flags.ResizeAllocationList) g.list = std::min<uint32_t>(r->NewAllocationListSize, 128);
    std::memset(F.cmd, 0xCD, sizeof(F.cmd));
    r->pNewCommandBuffer = F.cmd;
    r->NewCommandBufferSize = g.cmd;
    r->pNewAllocationList = F.list;
    r->NewAllocationListSize = g.list;
}
inline HRESULT APIENTRY cb_render(HANDLE, D3DDDICB_RENDER *r) {
    auto ctx = F.granted.find(r->hContext);
    if (ctx == F.granted.end()) {
        F.failed = true;
        F.why = "render on an unknown context";
        return HRESULT(0x80070057);
    }
    FakeRuntime::Granted &g = ctx->second;
    if (r->Flags.ResizeCommandBuffer || r->Flags.ResizeAllocationList) {
        // A request for buffers: it carries no work (an empty stream, or nothing when the
        // context has no buffer yet: then dxgkrnl has nothing to hand the KMD).
        F.buffer_requests++;
        if (r->CommandLength && (r->CommandLength > g.cmd || r->NumAllocations ||
                                 !opcodes_of(F.cmd, r->CommandLength).empty() ||
                                 !F.push(F.cmd, r->CommandLength, F.list, 0, false))) {
            F.failed = true;
            F.why = "buffer request with work";
            return HRESULT(0x80070057);
        }
        hand_out_buffers(r, g);
        return 0;
    }
    F.renders++;
    if (r->CommandLength > F.max_render_bytes) F.max_render_bytes = r->CommandLength;
    if (r->CommandLength <= sizeof(F.cmd)) F.last_ops = opcodes_of(F.cmd, r->CommandLength);
    if (r->CommandOffset != 0 || r->CommandLength > g.cmd || r->NumAllocations > g.list ||
        !F.push(F.cmd, r->CommandLength, F.list, r->NumAllocations, false)) {
        F.failed = true;
        if (F.why.empty()) F.why = "render beyond the buffers handed out";
        return HRESULT(0x80070057);
    }
    hand_out_buffers(r, g);
    return 0;
}
inline HRESULT APIENTRY cb_present(HANDLE, D3DDDICB_PRESENT *p) {
    // DxgkDdiPresent in our KMD: an empty present-flagged submission.
    F.presents++;
    if (!F.allocs.count(p->hSrcAllocation)) { F.failed = true; F.why = "present src"; return HRESULT(0x80070057); }
    struct aerogpu_cmd_stream_header h;
    std::memset(&h, 0, sizeof(h));
    h.magic = AEROGPU_CMD_STREAM_MAGIC;
    h.abi_version = AEROGPU_ABI_VERSION_U32;
    h.size_bytes = sizeof(h);
    if (!F.push(&h, sizeof(h), nullptr, 0, true)) { F.failed = true; return HRESULT(0x80070057); }
    return 0;
}
inline HRESULT APIENTRY cb_lock(HANDLE, D3DDDICB_LOCK *l) {
    auto it = F.allocs.find(l->hAllocation);
    if (it == F.allocs.end()) return HRESULT(0x80070057);
    F.locks++;
    if (F.recording) {
        l->pData = T.ram + it->second.gpa;
    } else {
        F.scratch.resize(AGPU_TRACE_RAM_BYTES);
        l->pData = F.scratch.data() + it->second.gpa;
    }
    return 0;
}
inline HRESULT APIENTRY cb_unlock(HANDLE, const D3DDDICB_UNLOCK *u) {
    return (u->NumAllocations == 1 && F.allocs.count(u->phAllocations[0])) ? 0 : HRESULT(0x80070057);
}
inline HRESULT APIENTRY cb_escape(HANDLE, const D3DDDICB_ESCAPE *e) {
    aerogpu_escape_query_fence_out *q = static_cast<aerogpu_escape_query_fence_out *>(e->pPrivateDriverData);
    if (e->PrivateDriverDataSize != sizeof(*q) || q->hdr.op != AEROGPU_ESCAPE_OP_QUERY_FENCE) return HRESULT(0x80070057);
    q->last_submitted_fence = F.fence; // the device model completes synchronously (unless lagging)
    q->last_completed_fence = F.fence > F.completion_lag ? F.fence - F.completion_lag : 0;
    return 0;
}
inline HRESULT APIENTRY cb_create_context(HANDLE, D3DDDICB_CREATECONTEXT *c) {
    c->hContext = reinterpret_cast<HANDLE>(uintptr_t(0xC0 + F.granted.size()));
    FakeRuntime::Granted &g = F.granted[c->hContext];
    if (F.buffers == FakeRuntime::Buffers::None) {
        g = {0, 0}; // buffers come with the first pfnRenderCb
        return 0;
    }
    g = {uint32_t(sizeof(F.cmd)), F.buffers == FakeRuntime::Buffers::SmallList ? 1u : 128u};
    c->pCommandBuffer = F.cmd;
    c->CommandBufferSize = g.cmd;
    c->pAllocationList = F.list;
    c->AllocationListSize = g.list;
    c->pPatchLocationList = F.patches;
    c->PatchLocationListSize = 4;
    return 0;
}
inline HRESULT APIENTRY cb_destroy_context(HANDLE, const D3DDDICB_DESTROYCONTEXT *) { return 0; }

// The device callbacks the scenes hand to pfnCreateDevice.
inline D3DDDI_DEVICECALLBACKS device_callbacks() {
    D3DDDI_DEVICECALLBACKS cb;
    std::memset(&cb, 0, sizeof(cb));
    cb.pfnAllocateCb = cb_allocate;
    cb.pfnDeallocateCb = cb_deallocate;
    cb.pfnRenderCb = cb_render;
    cb.pfnPresentCb = cb_present;
    cb.pfnLockCb = cb_lock;
    cb.pfnUnlockCb = cb_unlock;
    cb.pfnEscapeCb = cb_escape;
    cb.pfnCreateContextCb = cb_create_context;
    cb.pfnDestroyContextCb = cb_destroy_context;
    return cb;
}

inline HANDLE H(uintptr_t v) { return reinterpret_cast<HANDLE>(v); }

// pfnCreateResource arguments for one surface in video memory; `surf` must outlive them.
inline D3DDDIARG_CREATERESOURCE one_surface(const D3DDDI_SURFACEINFO &surf, D3DDDIFORMAT format, HANDLE handle) {
    D3DDDIARG_CREATERESOURCE cr;
    std::memset(&cr, 0, sizeof(cr));
    cr.Format = format;
    cr.Pool = D3DDDIPOOL_VIDEOMEMORY;
    cr.pSurfList = &surf;
    cr.SurfCount = 1;
    cr.hResource = handle;
    return cr;
}

// The scenes' minimal shaders: vs_2_0 passing the position through, ps_2_0 writing c0.
inline const uint32_t kVs[] = {0xFFFE0200u, 0x0200001Fu, 0x80000000u, 0x900F0000u,
                               0x02000001u, 0xC00F0000u, 0x90E40000u, 0x0000FFFFu};
inline const uint32_t kPs[] = {0xFFFF0200u, 0x02000001u, 0x800F0800u, 0xA0E40000u, 0x0000FFFFu};
