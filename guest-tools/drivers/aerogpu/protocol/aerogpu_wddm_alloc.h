/* WDDM allocation private driver data (UMD -> KMD at CreateAllocation, preserved by
 * dxgkrnl and returned unchanged on OpenAllocation in other processes).
 *
 * alloc_id: stable 32-bit allocation ID (not a handle, not a list index). UMD-chosen IDs
 * stay in [1, AEROGPU_WDDM_ALLOC_ID_UMD_MAX]; IDs the KMD creates itself (e.g. primaries
 * it allocates) use [AEROGPU_WDDM_ALLOC_ID_KMD_MIN, 0xFFFFFFFF].
 * share_token: 64-bit token written by the KMD for shared allocations (never derived from
 * a process-local HANDLE value); the key of EXPORT/IMPORT_SHARED_SURFACE.
 * size_bytes: written back by the KMD.
 */
#ifndef AEROGPU_WDDM_ALLOC_H
#define AEROGPU_WDDM_ALLOC_H

#include "aerogpu_abi_common.h"

#define AEROGPU_WDDM_ALLOC_PRIV_MAGIC 0x4F4C4C41u /* "ALLO" */
#define AEROGPU_WDDM_ALLOC_PRIV_VERSION 1u
#define AEROGPU_WDDM_ALLOC_PRIV_VERSION_2 2u

#define AEROGPU_WDDM_ALLOC_ID_UMD_MAX 0x7FFFFFFFu
#define AEROGPU_WDDM_ALLOC_ID_KMD_MIN 0x80000000u

#define AEROGPU_WDDM_ALLOC_PRIV_FLAG_IS_SHARED (1u << 0)
#define AEROGPU_WDDM_ALLOC_PRIV_FLAG_IS_PRIMARY (1u << 1)
#define AEROGPU_WDDM_ALLOC_PRIV_FLAG_STAGING (1u << 2)
#define AEROGPU_WDDM_ALLOC_PRIV_FLAG_CPU_VISIBLE (1u << 3)

struct aerogpu_wddm_alloc_priv {
    uint32_t magic;   /* AEROGPU_WDDM_ALLOC_PRIV_MAGIC */
    uint32_t version; /* AEROGPU_WDDM_ALLOC_PRIV_VERSION */
    uint32_t alloc_id;
    uint32_t flags;   /* AEROGPU_WDDM_ALLOC_PRIV_FLAG_* */
    uint64_t share_token; /* KMD-written, 0 for non-shared allocations */
    uint64_t size_bytes;  /* KMD-written */
    uint64_t reserved0;   /* UMD descriptor (D3D9 format/width/height marker) or 0 */
};
AEROGPU_ASSERT_SIZE(struct aerogpu_wddm_alloc_priv, 40);
AEROGPU_ASSERT_OFFSET(struct aerogpu_wddm_alloc_priv, share_token, 16);
AEROGPU_ASSERT_OFFSET(struct aerogpu_wddm_alloc_priv, size_bytes, 24);

enum aerogpu_wddm_alloc_kind {
    AEROGPU_WDDM_ALLOC_KIND_UNKNOWN = 0,
    AEROGPU_WDDM_ALLOC_KIND_BUFFER = 1,
    AEROGPU_WDDM_ALLOC_KIND_TEXTURE2D = 2
};

/* v2 appends texture metadata so a consumer (e.g. DWM opening a DXGI shared surface) can
 * derive the layout; reserved0 may then carry a pitch encoding. */
struct aerogpu_wddm_alloc_priv_v2 {
    uint32_t magic;
    uint32_t version; /* AEROGPU_WDDM_ALLOC_PRIV_VERSION_2 */
    uint32_t alloc_id;
    uint32_t flags;
    uint64_t share_token;
    uint64_t size_bytes;
    uint64_t reserved0;
    uint32_t kind;   /* enum aerogpu_wddm_alloc_kind */
    uint32_t width;
    uint32_t height;
    uint32_t format; /* DXGI_FORMAT or D3DFORMAT value, as the producer API defines */
    uint32_t row_pitch_bytes;
    uint32_t reserved1;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_wddm_alloc_priv_v2, 64);
AEROGPU_ASSERT_OFFSET(struct aerogpu_wddm_alloc_priv_v2, kind, 40);

#endif /* AEROGPU_WDDM_ALLOC_H */
