// See kmd.h. Guest RAM layout of the session (mirrored in the host's VecMemory):
//   0x800        fence page          0x1000  ring (8 KiB, 64 entries)
//   1..3 MiB     KMD staging slots   4 MiB.. allocations (first fit, 4 KiB granules)
// What the runtime changed is sent before each BAR0 write: the low 4 MiB by comparing
// with a shadow copy, allocations whole when they were locked for writing. What the device
// wrote (ring head, PRESENT and copy write-backs) is fetched when the UMD locks.
#include <winsock2.h>

#include "kmd.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <vector>

extern "C" {
#include "kmd/portable/agpu_device.h"
#include "kmd/portable/agpu_ring.h"
#include "kmd/portable/agpu_submit.h"
#include "protocol/aerogpu_dbgctl_escape.h"
}

namespace rt {

namespace {

constexpr uint64_t kRamBytes = 256ull << 20; // = d3d9_host::LIVE_RAM_BYTES
constexpr uint64_t kSystemBytes = 4ull << 20;
constexpr uint64_t kRingGpa = 0x1000, kRingBytes = 0x2000, kFenceGpa = 0x800;
constexpr uint64_t kStageGpa = 1ull << 20, kStageEnd = 3ull << 20;
constexpr uint32_t kCmdBytes = 256 * 1024, kListEntries = 256;
constexpr HRESULT kInvalidArg = HRESULT(0x80070057), kOutOfMemory = HRESULT(0x8007000E);
constexpr HRESULT kDeviceLost = HRESULT(0x88760868); // D3DERR_DEVICELOST

struct Alloc {
    uint32_t alloc_id;
    uint64_t gpa, size;
};

struct Kmd {
    SOCKET sock = INVALID_SOCKET;
    bool broken = false;
    uint8_t *ram = nullptr, *shadow = nullptr;
    agpu_mmio_ops ops;
    agpu_ring ring;
    uint64_t fence = 0, stage_off = 0;
    std::map<D3DKMT_HANDLE, Alloc> allocs;
    D3DKMT_HANDLE next_handle = 0x40;
    uint32_t next_kmd_id = AEROGPU_WDDM_ALLOC_ID_KMD_MIN;
    std::map<uint64_t, uint64_t> free_ranges; // gpa -> size
    std::set<D3DKMT_HANDLE> dirty;            // locked for writing since the last send
    D3DKMT_HANDLE presented = 0;
    std::vector<uint8_t> presented_bytes;
    std::vector<uint8_t> cmd = std::vector<uint8_t>(kCmdBytes);
    D3DDDI_ALLOCATIONLIST list[kListEntries];
    D3DDDI_PATCHLOCATIONLIST patches[4];
    std::vector<uint8_t> out; // bytes not yet sent
};
Kmd K;

bool send_all(const void *p, size_t n) {
    const char *c = static_cast<const char *>(p);
    while (n && !K.broken) {
        int w = send(K.sock, c, int(n > (1 << 20) ? (1 << 20) : n), 0);
        if (w <= 0) {
            log("host connection lost (send)");
            K.broken = true;
            return false;
        }
        c += w;
        n -= size_t(w);
    }
    return !K.broken;
}
bool recv_all(void *p, size_t n) {
    char *c = static_cast<char *>(p);
    while (n && !K.broken) {
        int r = recv(K.sock, c, int(n > (1 << 20) ? (1 << 20) : n), 0);
        if (r <= 0) {
            log("host connection lost (recv)");
            K.broken = true;
            return false;
        }
        c += r;
        n -= size_t(r);
    }
    return !K.broken;
}
void put(const void *p, size_t n) {
    const uint8_t *b = static_cast<const uint8_t *>(p);
    K.out.insert(K.out.end(), b, b + n);
}
void put_u8(uint8_t v) { put(&v, 1); }
void put_u32(uint32_t v) { put(&v, 4); }
void put_u64(uint64_t v) { put(&v, 8); }
bool flush_out() {
    bool ok = send_all(K.out.data(), K.out.size());
    K.out.clear();
    return ok;
}
void put_mem(uint64_t gpa, uint64_t len) {
    while (len) {
        uint32_t n = uint32_t(len > (32u << 20) ? (32u << 20) : len);
        put_u8('M');
        put_u64(gpa);
        put_u32(n);
        put(K.ram + gpa, n);
        if (K.out.size() > (8u << 20)) flush_out();
        gpa += n;
        len -= n;
    }
}

// Everything the runtime changed, before the device may look at it.
void send_memory() {
    constexpr uint32_t chunk = 64;
    uint64_t off = 0;
    while (off < kSystemBytes) {
        if (std::memcmp(K.ram + off, K.shadow + off, chunk) == 0) {
            off += chunk;
            continue;
        }
        uint64_t end = off + chunk;
        while (end < kSystemBytes && std::memcmp(K.ram + end, K.shadow + end, chunk) != 0) end += chunk;
        put_mem(off, end - off);
        std::memcpy(K.shadow + off, K.ram + off, end - off);
        off = end;
    }
    for (D3DKMT_HANDLE h : K.dirty) {
        auto it = K.allocs.find(h);
        if (it != K.allocs.end()) put_mem(it->second.gpa, it->second.size);
    }
    K.dirty.clear();
}

// Device memory into ours (and the shadow, when in the compared range).
bool fetch(uint64_t gpa, uint64_t len) {
    put_u8('G');
    put_u64(gpa);
    put_u32(uint32_t(len));
    if (!flush_out() || !recv_all(K.ram + gpa, len)) return false;
    if (gpa < kSystemBytes) std::memcpy(K.shadow + gpa, K.ram + gpa, len);
    return true;
}

uint32_t mmio_read(void *, uint32_t off) {
    send_memory();
    put_u8('R');
    put_u32(off);
    uint32_t v = 0;
    if (!flush_out() || !recv_all(&v, 4)) return 0xFFFFFFFFu;
    return v;
}
void mmio_write(void *, uint32_t off, uint32_t v) {
    send_memory();
    put_u8('W');
    put_u32(off);
    put_u32(v);
    flush_out();
    // The device consumed the ring and advanced its head: our copy must see it.
    if (off == AEROGPU_MMIO_REG_DOORBELL) fetch(kRingGpa, sizeof(struct aerogpu_ring_header));
}

uint64_t completed_fence() {
    for (;;) {
        uint32_t hi = mmio_read(nullptr, AEROGPU_MMIO_REG_COMPLETED_FENCE_HI);
        uint32_t lo = mmio_read(nullptr, AEROGPU_MMIO_REG_COMPLETED_FENCE_LO);
        if (mmio_read(nullptr, AEROGPU_MMIO_REG_COMPLETED_FENCE_HI) == hi) return uint64_t(hi) << 32 | lo;
    }
}

// First-fit guest RAM for allocations, 4 KiB granules; 0 when full.
uint64_t ram_alloc(uint64_t size) {
    size = (size + 0xFFF) & ~uint64_t(0xFFF);
    for (auto it = K.free_ranges.begin(); it != K.free_ranges.end(); ++it) {
        if (it->second < size) continue;
        uint64_t gpa = it->first, left = it->second - size;
        K.free_ranges.erase(it);
        if (left) K.free_ranges[gpa + size] = left;
        return gpa;
    }
    return 0;
}
void ram_free(uint64_t gpa, uint64_t size) {
    size = (size + 0xFFF) & ~uint64_t(0xFFF);
    auto next = K.free_ranges.lower_bound(gpa);
    if (next != K.free_ranges.end() && next->first == gpa + size) {
        size += next->second;
        K.free_ranges.erase(next);
    }
    auto prev = K.free_ranges.lower_bound(gpa);
    if (prev != K.free_ranges.begin()) {
        --prev;
        if (prev->first + prev->second == gpa) {
            prev->second += size;
            return;
        }
    }
    K.free_ranges[gpa] = size;
}

// The KMD's DxgkDdiRender/SubmitCommand work for one batch: stage it, push the ring,
// ring the doorbell.
bool submit(const void *stream, uint32_t bytes, const D3DDDI_ALLOCATIONLIST *l, uint32_t n, bool present) {
    if (K.broken) return false;
    std::vector<agpu_alloc_ref> refs(n ? n : 1);
    for (uint32_t i = 0; i < n; i++) {
        auto it = K.allocs.find(l[i].hAllocation);
        if (it == K.allocs.end()) {
            log("submission names an unknown allocation %u", unsigned(l[i].hAllocation));
            return false;
        }
        refs[i] = agpu_alloc_ref{it->second.alloc_id, it->second.gpa, it->second.size, 1, int(l[i].WriteOperation)};
    }
    const uint64_t slot = (agpu_submit_stage_bytes(kCmdBytes, kListEntries) + 0xFFFu) & ~uint64_t(0xFFF);
    if (kStageGpa + K.stage_off + slot > kStageEnd) K.stage_off = 0;
    agpu_staging st;
    st.va = K.ram + kStageGpa + K.stage_off;
    st.gpa = kStageGpa + K.stage_off;
    st.size_bytes = uint32_t(slot);
    K.stage_off += slot;
    struct aerogpu_submit_desc d;
    uint32_t conflict = 0;
    if (agpu_submit_stage(stream, bytes, 16u << 20, refs.data(), n, &st, K.fence + 1, present ? 1 : 0, &d, &conflict) !=
            AGPU_OK ||
        agpu_ring_push(&K.ring, &d, &K.ops) != AGPU_OK) {
        log("KMD staging/ring refused a submission of %u bytes, %u allocations", bytes, n);
        return false;
    }
    K.fence++;
    return !K.broken;
}

HRESULT APIENTRY cb_allocate(HANDLE, D3DDDICB_ALLOCATE *a) {
    if (!a) return kInvalidArg;
    for (UINT i = 0; i < a->NumAllocations; i++) {
        D3DDDI_ALLOCATIONINFO &ai = a->pAllocationInfo[i];
        aerogpu_wddm_alloc_priv p;
        if (ai.PrivateDriverDataSize != sizeof(p)) return kInvalidArg;
        std::memcpy(&p, ai.pPrivateDriverData, sizeof(p));
        if (p.magic != AEROGPU_WDDM_ALLOC_PRIV_MAGIC || !p.size_bytes || p.size_bytes > kRamBytes) return kInvalidArg;
        if (p.flags & AEROGPU_WDDM_ALLOC_PRIV_FLAG_IS_SHARED) {
            log("shared allocations (share tokens across processes) are not implemented");
            return E_NOTIMPL;
        }
        uint64_t gpa = ram_alloc(p.size_bytes);
        if (!gpa) {
            log("guest RAM of the session (%llu MiB) is full", (unsigned long long)(kRamBytes >> 20));
            return kOutOfMemory;
        }
        if (!p.alloc_id) {
            // DxgkDdiCreateAllocation assigns an ID from its own range, written back.
            p.alloc_id = K.next_kmd_id++;
            std::memcpy(ai.pPrivateDriverData, &p, sizeof(p));
        }
        // A new allocation reads as zeros on both sides.
        std::memset(K.ram + gpa, 0, p.size_bytes);
        ai.hAllocation = K.next_handle++;
        K.allocs[ai.hAllocation] = Alloc{p.alloc_id, gpa, p.size_bytes};
        K.dirty.insert(ai.hAllocation);
    }
    return S_OK;
}
HRESULT APIENTRY cb_deallocate(HANDLE, const D3DDDICB_DEALLOCATE *d) {
    if (!d) return kInvalidArg;
    for (UINT i = 0; i < d->NumAllocations; i++) {
        auto it = K.allocs.find(d->HandleList[i]);
        if (it == K.allocs.end()) continue;
        ram_free(it->second.gpa, it->second.size);
        K.dirty.erase(it->first);
        if (K.presented == it->first) K.presented = 0;
        K.allocs.erase(it);
    }
    return S_OK;
}
void hand_out(D3DDDICB_RENDER *r) {
    r->pNewCommandBuffer = K.cmd.data();
    r->NewCommandBufferSize = kCmdBytes;
    r->pNewAllocationList = K.list;
    r->NewAllocationListSize = kListEntries;
    r->pNewPatchLocationList = K.patches;
    r->NewPatchLocationListSize = 4;
}
HRESULT APIENTRY cb_render(HANDLE, D3DDDICB_RENDER *r) {
    if (!r) return kInvalidArg;
    if (r->CommandLength) {
        if (r->CommandOffset || r->CommandLength > kCmdBytes || r->NumAllocations > kListEntries) return kInvalidArg;
        if (!submit(K.cmd.data(), r->CommandLength, K.list, r->NumAllocations, false)) return kDeviceLost;
    }
    hand_out(r);
    return S_OK;
}
HRESULT APIENTRY cb_present(HANDLE, D3DDDICB_PRESENT *p) {
    // DxgkDdiPresent in our KMD: an empty, present-flagged submission.
    if (!p || !K.allocs.count(p->hSrcAllocation)) return kInvalidArg;
    struct aerogpu_cmd_stream_header h;
    std::memset(&h, 0, sizeof(h));
    h.magic = AEROGPU_CMD_STREAM_MAGIC;
    h.abi_version = AEROGPU_ABI_VERSION_U32;
    h.size_bytes = sizeof(h);
    if (!submit(&h, sizeof(h), nullptr, 0, true)) return kDeviceLost;
    K.presented = p->hSrcAllocation;
    return S_OK;
}
HRESULT APIENTRY cb_lock(HANDLE, D3DDDICB_LOCK *l) {
    if (!l) return kInvalidArg;
    auto it = K.allocs.find(l->hAllocation);
    if (it == K.allocs.end()) return kInvalidArg;
    // The CPU sees what the device wrote: wait for it, then fetch the allocation.
    kmd_wait_idle();
    if (!l->Flags.Discard && !l->Flags.WriteOnly && !fetch(it->second.gpa, it->second.size)) return kDeviceLost;
    if (!l->Flags.ReadOnly) K.dirty.insert(l->hAllocation);
    l->pData = K.ram + it->second.gpa;
    return S_OK;
}
HRESULT APIENTRY cb_unlock(HANDLE, const D3DDDICB_UNLOCK *u) {
    if (!u) return kInvalidArg;
    for (UINT i = 0; i < u->NumAllocations; i++)
        if (!K.allocs.count(u->phAllocations[i])) return kInvalidArg;
    return S_OK;
}
HRESULT APIENTRY cb_escape(HANDLE, const D3DDDICB_ESCAPE *e) {
    if (!e || !e->pPrivateDriverData) return kInvalidArg;
    auto *q = static_cast<aerogpu_escape_query_fence_out *>(e->pPrivateDriverData);
    if (e->PrivateDriverDataSize != sizeof(*q) || q->hdr.op != AEROGPU_ESCAPE_OP_QUERY_FENCE) {
        log("escape op %u not implemented", unsigned(q->hdr.op));
        return E_NOTIMPL;
    }
    q->last_submitted_fence = K.fence;
    q->last_completed_fence = completed_fence();
    return S_OK;
}
HRESULT APIENTRY cb_create_context(HANDLE, D3DDDICB_CREATECONTEXT *c) {
    if (!c) return kInvalidArg;
    c->hContext = reinterpret_cast<HANDLE>(uintptr_t(0xC0));
    c->pCommandBuffer = K.cmd.data();
    c->CommandBufferSize = kCmdBytes;
    c->pAllocationList = K.list;
    c->AllocationListSize = kListEntries;
    c->pPatchLocationList = K.patches;
    c->PatchLocationListSize = 4;
    return S_OK;
}
HRESULT APIENTRY cb_destroy_context(HANDLE, const D3DDDICB_DESTROYCONTEXT *) { return S_OK; }

} // namespace

void log(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "d3d9(aero): ");
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
}

bool kmd_start() {
    if (K.ram) return !K.broken;
    char port[32] = {0};
    if (!GetEnvironmentVariableA("AERO_D3D9_HOST", port, sizeof(port))) {
        log("AERO_D3D9_HOST (the aero-d3d9-host port) is not set: no device");
        return false;
    }
    WSADATA wsa;
    if (WSAStartup(MAKEWORD(2, 2), &wsa)) return false;
    K.sock = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
    sockaddr_in sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons(u_short(std::atoi(port)));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (K.sock == INVALID_SOCKET || connect(K.sock, reinterpret_cast<sockaddr *>(&sa), sizeof(sa))) {
        log("cannot connect to aero-d3d9-host on port %s", port);
        return false;
    }
    BOOL nodelay = TRUE;
    setsockopt(K.sock, IPPROTO_TCP, TCP_NODELAY, reinterpret_cast<const char *>(&nodelay), sizeof(nodelay));
    K.ram = static_cast<uint8_t *>(VirtualAlloc(nullptr, kRamBytes, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE));
    K.shadow = static_cast<uint8_t *>(VirtualAlloc(nullptr, kSystemBytes, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE));
    if (!K.ram || !K.shadow) return false;
    K.free_ranges[kSystemBytes] = kRamBytes - kSystemBytes;
    K.ops.ctx = &K;
    K.ops.read32 = mmio_read;
    K.ops.write32 = mmio_write;
    agpu_device_info info;
    if (agpu_probe(&K.ops, &info) != AGPU_OK) {
        log("the host's device did not probe as AeroGPU");
        return false;
    }
    if (agpu_ring_init(&K.ring, K.ram + kRingGpa, kRingGpa, kRingBytes, 64, 0) != AGPU_OK) return false;
    agpu_ring_program(&K.ring, &K.ops, kFenceGpa);
    return !K.broken;
}

D3DDDI_DEVICECALLBACKS kmd_device_callbacks() {
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

void kmd_wait_idle() {
    // VSYNC presents complete at the host's next vblank (wall clock): poll briefly.
    for (int i = 0; i < 2000 && !K.broken && completed_fence() < K.fence; i++) Sleep(1);
}

const uint8_t *kmd_presented(uint64_t *size) {
    auto it = K.allocs.find(K.presented);
    if (!K.presented || it == K.allocs.end()) return nullptr;
    kmd_wait_idle();
    if (!fetch(it->second.gpa, it->second.size)) return nullptr;
    *size = it->second.size;
    return K.ram + it->second.gpa;
}

void kmd_stop() {
    if (K.sock == INVALID_SOCKET) return;
    put_u8('E');
    flush_out();
    closesocket(K.sock);
    K.sock = INVALID_SOCKET;
}

} // namespace rt
