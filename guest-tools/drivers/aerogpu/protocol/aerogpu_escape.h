/* DxgkDdiEscape packets shared by the KMD and user-mode tools: the common header and the
 * original QUERY_DEVICE op. Debug/tooling ops live in aerogpu_dbgctl_escape.h. */
#ifndef AEROGPU_ESCAPE_H
#define AEROGPU_ESCAPE_H

#include "aerogpu_abi_common.h"

#define AEROGPU_ESCAPE_VERSION 1u

#define AEROGPU_ESCAPE_OP_QUERY_DEVICE 1u

/* Every escape buffer starts with this header; size_bytes covers the whole buffer. */
struct aerogpu_escape_header {
    uint32_t version; /* AEROGPU_ESCAPE_VERSION */
    uint32_t op;      /* AEROGPU_ESCAPE_OP_* */
    uint32_t size_bytes;
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_escape_header, 16);

struct aerogpu_escape_query_device_out {
    struct aerogpu_escape_header hdr;
    uint32_t mmio_version; /* ABI_VERSION register (or legacy version) */
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_escape_query_device_out, 24);

#endif /* AEROGPU_ESCAPE_H */
