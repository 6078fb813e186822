//! `aerogpu_ring.h`: ring header, submit descriptor, allocation table, fence page.

use crate::{c_consts, wire_struct};

c_consts! {
    CONSTANTS;
    pub const RING_MAGIC: u32 = 0x474E_5241 => "AEROGPU_RING_MAGIC";
    pub const RING_MAX_ENTRIES: u32 = 4096 => "AEROGPU_RING_MAX_ENTRIES";
    pub const SUBMIT_FLAG_PRESENT: u32 = 1 << 0 => "AEROGPU_SUBMIT_FLAG_PRESENT";
    pub const SUBMIT_FLAG_NO_IRQ: u32 = 1 << 1 => "AEROGPU_SUBMIT_FLAG_NO_IRQ";
    pub const ALLOC_TABLE_MAGIC: u32 = 0x434F_4C41 => "AEROGPU_ALLOC_TABLE_MAGIC";
    pub const ALLOC_TABLE_MAX_ENTRIES: u32 = 65536 => "AEROGPU_ALLOC_TABLE_MAX_ENTRIES";
    pub const ALLOC_FLAG_READONLY: u32 = 1 << 0 => "AEROGPU_ALLOC_FLAG_READONLY";
    pub const FENCE_PAGE_MAGIC: u32 = 0x434E_4546 => "AEROGPU_FENCE_PAGE_MAGIC";
}

wire_struct! {
    /// Start of ring memory; descriptors follow at `SIZE + slot * entry_stride_bytes`.
    pub struct RingHeader = "aerogpu_ring_header", size 64 {
        magic: u32 = 0,
        abi_version: u32 = 4,
        size_bytes: u32 = 8,
        entry_count: u32 = 12,
        entry_stride_bytes: u32 = 16,
        flags: u32 = 20,
        /// Written by the device.
        head: u32 = 24,
        /// Written by the driver.
        tail: u32 = 28,
        reserved0: [u32; 8] = 32,
    }
}

impl RingHeader {
    pub const HEAD_OFFSET: u64 = 24;
    pub const TAIL_OFFSET: u64 = 28;
}

wire_struct! {
    /// One submission.
    pub struct SubmitDesc = "aerogpu_submit_desc", size 64 {
        desc_size_bytes: u32 = 0,
        flags: u32 = 4,
        context_id: u32 = 8,
        engine_id: u32 = 12,
        cmd_gpa: u64 = 16,
        cmd_size_bytes: u32 = 24,
        reserved0: u32 = 28,
        alloc_table_gpa: u64 = 32,
        alloc_table_size_bytes: u32 = 40,
        reserved1: u32 = 44,
        signal_fence: u64 = 48,
        reserved2: u64 = 56,
    }
}

wire_struct! {
    /// Header of the per-submit allocation table; entries follow at `SIZE + i * stride`.
    pub struct AllocTableHeader = "aerogpu_alloc_table_header", size 24 {
        magic: u32 = 0,
        abi_version: u32 = 4,
        size_bytes: u32 = 8,
        entry_count: u32 = 12,
        entry_stride_bytes: u32 = 16,
        reserved0: u32 = 20,
    }
}

wire_struct! {
    /// `alloc_id -> gpa, size_bytes, flags` for one submission.
    pub struct AllocEntry = "aerogpu_alloc_entry", size 32 {
        alloc_id: u32 = 0,
        flags: u32 = 4,
        gpa: u64 = 8,
        size_bytes: u64 = 16,
        reserved0: u64 = 24,
    }
}

wire_struct! {
    /// What the device writes at FENCE_GPA when the completed fence advances.
    pub struct FencePage = "aerogpu_fence_page", size 64 {
        magic: u32 = 0,
        abi_version: u32 = 4,
        completed_fence: u64 = 8,
        reserved0: [u64; 6] = 16,
    }
}
