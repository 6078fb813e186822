/* Bring-up / debug escapes used by aerogpu_dbgctl (all start with aerogpu_escape_header). */
#ifndef AEROGPU_DBGCTL_ESCAPE_H
#define AEROGPU_DBGCTL_ESCAPE_H

#include "aerogpu_escape.h"

#define AEROGPU_ESCAPE_OP_QUERY_FENCE 2u
#define AEROGPU_ESCAPE_OP_DUMP_RING 3u
#define AEROGPU_ESCAPE_OP_SELFTEST 4u
#define AEROGPU_ESCAPE_OP_QUERY_VBLANK 5u
#define AEROGPU_ESCAPE_OP_MAP_SHARED_HANDLE 6u
#define AEROGPU_ESCAPE_OP_DUMP_RING_V2 7u
#define AEROGPU_ESCAPE_OP_QUERY_DEVICE_V2 8u
#define AEROGPU_ESCAPE_OP_DUMP_CREATEALLOCATION 9u
#define AEROGPU_ESCAPE_OP_READ_GPA 10u

#define AEROGPU_DBGCTL_MAX_RING_DESCS 32u
#define AEROGPU_DBGCTL_MAX_CREATEALLOCATION_ENTRIES 32u
#define AEROGPU_DBGCTL_READ_GPA_MAX_BYTES 4096u

/* QUERY_DEVICE_V2: which MMIO ABI the KMD detected and what it advertises. */
struct aerogpu_escape_query_device_v2_out {
    struct aerogpu_escape_header hdr;
    uint32_t detected_mmio_magic; /* AEROGPU_MMIO_MAGIC or the legacy magic */
    uint32_t abi_version_u32;
    uint64_t features; /* FEATURES_LO | FEATURES_HI << 32 (0 on legacy devices) */
    uint64_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_escape_query_device_v2_out, 40);
AEROGPU_ASSERT_OFFSET(struct aerogpu_escape_query_device_v2_out, features, 24);

struct aerogpu_escape_query_fence_out {
    struct aerogpu_escape_header hdr;
    uint64_t last_submitted_fence;
    uint64_t last_completed_fence;
    uint64_t error_irq_count;
    uint64_t last_error_fence;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_escape_query_fence_out, 48);

#define AEROGPU_DBGCTL_RING_FORMAT_UNKNOWN 0u
#define AEROGPU_DBGCTL_RING_FORMAT_LEGACY 1u
#define AEROGPU_DBGCTL_RING_FORMAT_AGPU 2u

struct aerogpu_dbgctl_ring_desc {
    uint64_t signal_fence;
    uint64_t cmd_gpa;
    uint32_t cmd_size_bytes;
    uint32_t flags;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_dbgctl_ring_desc, 24);

struct aerogpu_escape_dump_ring_inout {
    struct aerogpu_escape_header hdr;
    uint32_t ring_id;
    uint32_t ring_size_bytes;
    uint32_t head;
    uint32_t tail;
    uint32_t desc_count;
    uint32_t desc_capacity;
    struct aerogpu_dbgctl_ring_desc desc[32];
};
AEROGPU_ASSERT_SIZE(struct aerogpu_escape_dump_ring_inout, 808);
AEROGPU_ASSERT_OFFSET(struct aerogpu_escape_dump_ring_inout, desc, 40);

struct aerogpu_dbgctl_ring_desc_v2 {
    uint64_t signal_fence;
    uint64_t cmd_gpa;
    uint32_t cmd_size_bytes;
    uint32_t flags;
    uint64_t alloc_table_gpa;
    uint32_t alloc_table_size_bytes;
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_dbgctl_ring_desc_v2, 40);

/* DUMP_RING_V2: for AGPU rings, a tail window ending at tail - 1 (newest last). */
struct aerogpu_escape_dump_ring_v2_inout {
    struct aerogpu_escape_header hdr;
    uint32_t ring_id;
    uint32_t ring_format; /* AEROGPU_DBGCTL_RING_FORMAT_* */
    uint32_t ring_size_bytes;
    uint32_t head;
    uint32_t tail;
    uint32_t desc_count;
    uint32_t desc_capacity;
    uint32_t reserved0;
    struct aerogpu_dbgctl_ring_desc_v2 desc[32];
};
AEROGPU_ASSERT_SIZE(struct aerogpu_escape_dump_ring_v2_inout, 1328);
AEROGPU_ASSERT_OFFSET(struct aerogpu_escape_dump_ring_v2_inout, desc, 48);

/* SELFTEST: one empty submission through the ring; `passed` once the device consumed it
 * without latching an error within timeout_ms (0 = 1000, at most 2000). */
#define AEROGPU_DBGCTL_SELFTEST_ERR_NOT_READY 1u    /* not started or not in D0 */
#define AEROGPU_DBGCTL_SELFTEST_ERR_SUBMIT 2u       /* the ring refused the submission */
#define AEROGPU_DBGCTL_SELFTEST_ERR_TIMEOUT 3u      /* the device did not consume it in time */
#define AEROGPU_DBGCTL_SELFTEST_ERR_DEVICE_ERROR 4u /* the device latched an error */
#define AEROGPU_DBGCTL_SELFTEST_MAX_TIMEOUT_MS 2000u

struct aerogpu_escape_selftest_inout {
    struct aerogpu_escape_header hdr;
    uint32_t timeout_ms;
    uint32_t passed;     /* out: 1 = passed */
    uint32_t error_code; /* out: test-specific failure code */
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_escape_selftest_inout, 32);

#define AEROGPU_DBGCTL_QUERY_VBLANK_FLAG_VALID (1u << 0)
#define AEROGPU_DBGCTL_QUERY_VBLANK_FLAG_INTERRUPT_TYPE_VALID (1u << 1)

struct aerogpu_escape_query_vblank_out {
    struct aerogpu_escape_header hdr;
    uint32_t vidpn_source_id;
    uint32_t irq_enable;
    uint32_t irq_status;
    uint32_t flags; /* AEROGPU_DBGCTL_QUERY_VBLANK_FLAG_* */
    uint64_t vblank_seq;
    uint64_t last_vblank_time_ns;
    uint32_t vblank_period_ns;
    uint32_t vblank_interrupt_type;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_escape_query_vblank_out, 56);
AEROGPU_ASSERT_OFFSET(struct aerogpu_escape_query_vblank_out, vblank_seq, 32);

/* MAP_SHARED_HANDLE (debug only, off by default): a process-local shared HANDLE in, a
 * stable debug token out. The handle is carried as 64 bits on x86 and x64 alike. */
struct aerogpu_escape_map_shared_handle_inout {
    struct aerogpu_escape_header hdr;
    uint64_t shared_handle;
    uint32_t debug_token;
    uint32_t reserved0;
};
AEROGPU_ASSERT_SIZE(struct aerogpu_escape_map_shared_handle_inout, 32);

struct aerogpu_dbgctl_createallocation_desc {
    uint32_t seq;
    uint32_t call_seq;
    uint32_t alloc_index;
    uint32_t alloc_id;
    uint32_t priv_flags;
    uint32_t pitch_bytes;
    uint64_t share_token;
    uint64_t size_bytes;
    uint32_t flags_in;  /* DXGK_ALLOCATIONINFO::Flags.Value from dxgkrnl */
    uint32_t flags_out; /* after the miniport's required bits */
};
AEROGPU_ASSERT_SIZE(struct aerogpu_dbgctl_createallocation_desc, 48);

struct aerogpu_escape_dump_createallocation_inout {
    struct aerogpu_escape_header hdr;
    uint32_t write_index;
    uint32_t entry_count;
    uint32_t entry_capacity;
    uint32_t reserved0;
    struct aerogpu_dbgctl_createallocation_desc entries[32];
};
AEROGPU_ASSERT_SIZE(struct aerogpu_escape_dump_createallocation_inout, 1568);

/* READ_GPA (debug only, off by default, privileged, bounded to GPU-owned regions). */
struct aerogpu_escape_read_gpa_inout {
    struct aerogpu_escape_header hdr;
    uint64_t gpa;
    uint32_t size_bytes; /* <= AEROGPU_DBGCTL_READ_GPA_MAX_BYTES */
    uint32_t reserved0;
    int32_t status;      /* out: NTSTATUS */
    uint32_t bytes_copied;
    uint8_t data[4096];
};
AEROGPU_ASSERT_SIZE(struct aerogpu_escape_read_gpa_inout, 4136);
AEROGPU_ASSERT_OFFSET(struct aerogpu_escape_read_gpa_inout, data, 40);

#endif /* AEROGPU_DBGCTL_ESCAPE_H */
