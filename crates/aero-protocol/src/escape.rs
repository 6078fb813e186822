//! `aerogpu_escape.h` and `aerogpu_dbgctl_escape.h`: DxgkDdiEscape packets.

use crate::{c_consts, wire_struct};

c_consts! {
    CONSTANTS;
    pub const ESCAPE_VERSION: u32 = 1 => "AEROGPU_ESCAPE_VERSION";
    pub const OP_QUERY_DEVICE: u32 = 1 => "AEROGPU_ESCAPE_OP_QUERY_DEVICE";
    pub const OP_QUERY_FENCE: u32 = 2 => "AEROGPU_ESCAPE_OP_QUERY_FENCE";
    pub const OP_DUMP_RING: u32 = 3 => "AEROGPU_ESCAPE_OP_DUMP_RING";
    pub const OP_SELFTEST: u32 = 4 => "AEROGPU_ESCAPE_OP_SELFTEST";
    pub const OP_QUERY_VBLANK: u32 = 5 => "AEROGPU_ESCAPE_OP_QUERY_VBLANK";
    pub const OP_MAP_SHARED_HANDLE: u32 = 6 => "AEROGPU_ESCAPE_OP_MAP_SHARED_HANDLE";
    pub const OP_DUMP_RING_V2: u32 = 7 => "AEROGPU_ESCAPE_OP_DUMP_RING_V2";
    pub const OP_QUERY_DEVICE_V2: u32 = 8 => "AEROGPU_ESCAPE_OP_QUERY_DEVICE_V2";
    pub const OP_DUMP_CREATEALLOCATION: u32 = 9 => "AEROGPU_ESCAPE_OP_DUMP_CREATEALLOCATION";
    pub const OP_READ_GPA: u32 = 10 => "AEROGPU_ESCAPE_OP_READ_GPA";
    pub const DBGCTL_MAX_RING_DESCS: u32 = 32 => "AEROGPU_DBGCTL_MAX_RING_DESCS";
    pub const DBGCTL_MAX_CREATEALLOCATION_ENTRIES: u32 = 32 => "AEROGPU_DBGCTL_MAX_CREATEALLOCATION_ENTRIES";
    pub const DBGCTL_READ_GPA_MAX_BYTES: u32 = 4096 => "AEROGPU_DBGCTL_READ_GPA_MAX_BYTES";
    pub const DBGCTL_RING_FORMAT_UNKNOWN: u32 = 0 => "AEROGPU_DBGCTL_RING_FORMAT_UNKNOWN";
    pub const DBGCTL_RING_FORMAT_LEGACY: u32 = 1 => "AEROGPU_DBGCTL_RING_FORMAT_LEGACY";
    pub const DBGCTL_RING_FORMAT_AGPU: u32 = 2 => "AEROGPU_DBGCTL_RING_FORMAT_AGPU";
    pub const DBGCTL_QUERY_VBLANK_FLAG_VALID: u32 = 1 << 0 => "AEROGPU_DBGCTL_QUERY_VBLANK_FLAG_VALID";
    pub const DBGCTL_QUERY_VBLANK_FLAG_INTERRUPT_TYPE_VALID: u32 = 1 << 1 => "AEROGPU_DBGCTL_QUERY_VBLANK_FLAG_INTERRUPT_TYPE_VALID";
    pub const DBGCTL_SELFTEST_ERR_NOT_READY: u32 = 1 => "AEROGPU_DBGCTL_SELFTEST_ERR_NOT_READY";
    pub const DBGCTL_SELFTEST_ERR_SUBMIT: u32 = 2 => "AEROGPU_DBGCTL_SELFTEST_ERR_SUBMIT";
    pub const DBGCTL_SELFTEST_ERR_TIMEOUT: u32 = 3 => "AEROGPU_DBGCTL_SELFTEST_ERR_TIMEOUT";
    pub const DBGCTL_SELFTEST_ERR_DEVICE_ERROR: u32 = 4 => "AEROGPU_DBGCTL_SELFTEST_ERR_DEVICE_ERROR";
    pub const DBGCTL_SELFTEST_MAX_TIMEOUT_MS: u32 = 2000 => "AEROGPU_DBGCTL_SELFTEST_MAX_TIMEOUT_MS";
}

wire_struct! {
    pub struct EscapeHeader = "aerogpu_escape_header", size 16 {
        version: u32 = 0,
        op: u32 = 4,
        size_bytes: u32 = 8,
        reserved0: u32 = 12,
    }
}

wire_struct! {
    pub struct QueryDeviceOut = "aerogpu_escape_query_device_out", size 24 {
        hdr: EscapeHeader = 0,
        mmio_version: u32 = 16,
        reserved0: u32 = 20,
    }
}

wire_struct! {
    pub struct QueryDeviceV2Out = "aerogpu_escape_query_device_v2_out", size 40 {
        hdr: EscapeHeader = 0,
        detected_mmio_magic: u32 = 16,
        abi_version_u32: u32 = 20,
        features: u64 = 24,
        reserved0: u64 = 32,
    }
}

wire_struct! {
    pub struct QueryFenceOut = "aerogpu_escape_query_fence_out", size 48 {
        hdr: EscapeHeader = 0,
        last_submitted_fence: u64 = 16,
        last_completed_fence: u64 = 24,
        error_irq_count: u64 = 32,
        last_error_fence: u64 = 40,
    }
}

wire_struct! {
    pub struct DbgctlRingDesc = "aerogpu_dbgctl_ring_desc", size 24 {
        signal_fence: u64 = 0,
        cmd_gpa: u64 = 8,
        cmd_size_bytes: u32 = 16,
        flags: u32 = 20,
    }
}

wire_struct! {
    pub struct DumpRingInout = "aerogpu_escape_dump_ring_inout", size 808 {
        hdr: EscapeHeader = 0,
        ring_id: u32 = 16,
        ring_size_bytes: u32 = 20,
        head: u32 = 24,
        tail: u32 = 28,
        desc_count: u32 = 32,
        desc_capacity: u32 = 36,
        desc: [DbgctlRingDesc; 32] = 40,
    }
}

wire_struct! {
    pub struct DbgctlRingDescV2 = "aerogpu_dbgctl_ring_desc_v2", size 40 {
        signal_fence: u64 = 0,
        cmd_gpa: u64 = 8,
        cmd_size_bytes: u32 = 16,
        flags: u32 = 20,
        alloc_table_gpa: u64 = 24,
        alloc_table_size_bytes: u32 = 32,
        reserved0: u32 = 36,
    }
}

wire_struct! {
    pub struct DumpRingV2Inout = "aerogpu_escape_dump_ring_v2_inout", size 1328 {
        hdr: EscapeHeader = 0,
        ring_id: u32 = 16,
        ring_format: u32 = 20,
        ring_size_bytes: u32 = 24,
        head: u32 = 28,
        tail: u32 = 32,
        desc_count: u32 = 36,
        desc_capacity: u32 = 40,
        reserved0: u32 = 44,
        desc: [DbgctlRingDescV2; 32] = 48,
    }
}

wire_struct! {
    pub struct SelftestInout = "aerogpu_escape_selftest_inout", size 32 {
        hdr: EscapeHeader = 0,
        timeout_ms: u32 = 16,
        passed: u32 = 20,
        error_code: u32 = 24,
        reserved0: u32 = 28,
    }
}

wire_struct! {
    pub struct QueryVblankOut = "aerogpu_escape_query_vblank_out", size 56 {
        hdr: EscapeHeader = 0,
        vidpn_source_id: u32 = 16,
        irq_enable: u32 = 20,
        irq_status: u32 = 24,
        flags: u32 = 28,
        vblank_seq: u64 = 32,
        last_vblank_time_ns: u64 = 40,
        vblank_period_ns: u32 = 48,
        vblank_interrupt_type: u32 = 52,
    }
}

wire_struct! {
    pub struct MapSharedHandleInout = "aerogpu_escape_map_shared_handle_inout", size 32 {
        hdr: EscapeHeader = 0,
        shared_handle: u64 = 16,
        debug_token: u32 = 24,
        reserved0: u32 = 28,
    }
}

wire_struct! {
    pub struct DbgctlCreateAllocationDesc = "aerogpu_dbgctl_createallocation_desc", size 48 {
        seq: u32 = 0,
        call_seq: u32 = 4,
        alloc_index: u32 = 8,
        alloc_id: u32 = 12,
        priv_flags: u32 = 16,
        pitch_bytes: u32 = 20,
        share_token: u64 = 24,
        size_bytes: u64 = 32,
        flags_in: u32 = 40,
        flags_out: u32 = 44,
    }
}

wire_struct! {
    pub struct DumpCreateAllocationInout = "aerogpu_escape_dump_createallocation_inout", size 1568 {
        hdr: EscapeHeader = 0,
        write_index: u32 = 16,
        entry_count: u32 = 20,
        entry_capacity: u32 = 24,
        reserved0: u32 = 28,
        entries: [DbgctlCreateAllocationDesc; 32] = 32,
    }
}

wire_struct! {
    pub struct ReadGpaInout = "aerogpu_escape_read_gpa_inout", size 4136 {
        hdr: EscapeHeader = 0,
        gpa: u64 = 16,
        size_bytes: u32 = 24,
        reserved0: u32 = 28,
        status: i32 = 32,
        bytes_copied: u32 = 36,
        data: [u8; 4096] = 40,
    }
}
