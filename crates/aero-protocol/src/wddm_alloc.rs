//! `aerogpu_wddm_alloc.h`: WDDM allocation private driver data.

use crate::{c_consts, c_enum, wire_struct};

c_consts! {
    CONSTANTS;
    pub const PRIV_MAGIC: u32 = 0x4F4C_4C41 => "AEROGPU_WDDM_ALLOC_PRIV_MAGIC";
    pub const PRIV_VERSION: u32 = 1 => "AEROGPU_WDDM_ALLOC_PRIV_VERSION";
    pub const PRIV_VERSION_2: u32 = 2 => "AEROGPU_WDDM_ALLOC_PRIV_VERSION_2";
    pub const ALLOC_ID_UMD_MAX: u32 = 0x7FFF_FFFF => "AEROGPU_WDDM_ALLOC_ID_UMD_MAX";
    pub const ALLOC_ID_KMD_MIN: u32 = 0x8000_0000 => "AEROGPU_WDDM_ALLOC_ID_KMD_MIN";
    pub const PRIV_FLAG_IS_SHARED: u32 = 1 << 0 => "AEROGPU_WDDM_ALLOC_PRIV_FLAG_IS_SHARED";
    pub const PRIV_FLAG_IS_PRIMARY: u32 = 1 << 1 => "AEROGPU_WDDM_ALLOC_PRIV_FLAG_IS_PRIMARY";
    pub const PRIV_FLAG_STAGING: u32 = 1 << 2 => "AEROGPU_WDDM_ALLOC_PRIV_FLAG_STAGING";
    pub const PRIV_FLAG_CPU_VISIBLE: u32 = 1 << 3 => "AEROGPU_WDDM_ALLOC_PRIV_FLAG_CPU_VISIBLE";
}

c_enum! {
    pub enum AllocKind = "aerogpu_wddm_alloc_kind" {
        Unknown = "AEROGPU_WDDM_ALLOC_KIND_UNKNOWN" 0,
        Buffer = "AEROGPU_WDDM_ALLOC_KIND_BUFFER" 1,
        Texture2d = "AEROGPU_WDDM_ALLOC_KIND_TEXTURE2D" 2,
    }
}

wire_struct! {
    pub struct WddmAllocPriv = "aerogpu_wddm_alloc_priv", size 40 {
        magic: u32 = 0,
        version: u32 = 4,
        alloc_id: u32 = 8,
        flags: u32 = 12,
        share_token: u64 = 16,
        size_bytes: u64 = 24,
        reserved0: u64 = 32,
    }
}

wire_struct! {
    pub struct WddmAllocPrivV2 = "aerogpu_wddm_alloc_priv_v2", size 64 {
        magic: u32 = 0,
        version: u32 = 4,
        alloc_id: u32 = 8,
        flags: u32 = 12,
        share_token: u64 = 16,
        size_bytes: u64 = 24,
        reserved0: u64 = 32,
        kind: u32 = 40,
        width: u32 = 44,
        height: u32 = 48,
        format: u32 = 52,
        row_pitch_bytes: u32 = 56,
        reserved1: u32 = 60,
    }
}
