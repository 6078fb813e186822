//! `aerogpu_pci.h`: PCI identity, BAR0 register map, feature and IRQ bits, error codes,
//! pixel formats.

use crate::{c_consts, c_enum};

c_consts! {
    CONSTANTS;
    pub const VENDOR_ID: u16 = 0xA3A0 => "AEROGPU_PCI_VENDOR_ID";
    pub const DEVICE_ID: u16 = 0x0001 => "AEROGPU_PCI_DEVICE_ID";
    pub const SUBSYSTEM_VENDOR_ID: u16 = 0xA3A0 => "AEROGPU_PCI_SUBSYSTEM_VENDOR_ID";
    pub const SUBSYSTEM_ID: u16 = 0x0001 => "AEROGPU_PCI_SUBSYSTEM_ID";
    pub const REVISION_ID: u8 = 0x01 => "AEROGPU_PCI_REVISION_ID";
    pub const CLASS_CODE: u8 = 0x03 => "AEROGPU_PCI_CLASS_CODE";
    pub const SUBCLASS: u8 = 0x00 => "AEROGPU_PCI_SUBCLASS";
    pub const PROG_IF: u8 = 0x00 => "AEROGPU_PCI_PROG_IF";
    pub const BAR0_INDEX: u32 = 0 => "AEROGPU_PCI_BAR0_INDEX";
    pub const BAR0_SIZE_BYTES: u32 = 0x1000 => "AEROGPU_PCI_BAR0_SIZE_BYTES";
    /// The legacy VGA/VBE linear framebuffer, once VGA lives in this function.
    pub const LFB_BAR_INDEX: u32 = 2 => "AEROGPU_PCI_LFB_BAR_INDEX";

    /// "AGPU" as little-endian bytes.
    pub const MMIO_MAGIC: u32 = 0x5550_4741 => "AEROGPU_MMIO_MAGIC";

    pub const FEATURE_FENCE_PAGE: u64 = 1 << 0 => "AEROGPU_FEATURE_FENCE_PAGE";
    pub const FEATURE_CURSOR: u64 = 1 << 1 => "AEROGPU_FEATURE_CURSOR";
    pub const FEATURE_SCANOUT: u64 = 1 << 2 => "AEROGPU_FEATURE_SCANOUT";
    pub const FEATURE_VBLANK: u64 = 1 << 3 => "AEROGPU_FEATURE_VBLANK";
    pub const FEATURE_ERROR_INFO: u64 = 1 << 4 => "AEROGPU_FEATURE_ERROR_INFO";
    pub const FEATURE_SHARED_SURFACE: u64 = 1 << 5 => "AEROGPU_FEATURE_SHARED_SURFACE";
    pub const FEATURE_WRITEBACK: u64 = 1 << 6 => "AEROGPU_FEATURE_WRITEBACK";
    pub const FEATURE_GART: u64 = 1 << 7 => "AEROGPU_FEATURE_GART";
    pub const GART_ENTRY_VALID: u64 = 1 => "AEROGPU_GART_ENTRY_VALID";
    pub const GART_MAX_ENTRIES: u32 = 1 << 20 => "AEROGPU_GART_MAX_ENTRIES";
    pub const APERTURE_BASE: u64 = 0x0000_0100_0000_0000 => "AEROGPU_APERTURE_BASE";

    pub const RING_CONTROL_ENABLE: u32 = 1 << 0 => "AEROGPU_RING_CONTROL_ENABLE";
    pub const RING_CONTROL_RESET: u32 = 1 << 1 => "AEROGPU_RING_CONTROL_RESET";

    pub const IRQ_FENCE: u32 = 1 << 0 => "AEROGPU_IRQ_FENCE";
    pub const IRQ_SCANOUT_VBLANK: u32 = 1 << 1 => "AEROGPU_IRQ_SCANOUT_VBLANK";
    pub const IRQ_ERROR: u32 = 1 << 31 => "AEROGPU_IRQ_ERROR";

    pub const VBLANK_PERIOD_NS_60HZ: u32 = 16_666_667 => "AEROGPU_VBLANK_PERIOD_NS_60HZ";
    pub const CURSOR_MAX_DIM: u32 = 256 => "AEROGPU_CURSOR_MAX_DIM";
}

/// BAR0 register offsets (`AEROGPU_MMIO_REG_*`).
pub mod reg {
    use crate::c_consts;

    c_consts! {
        CONSTANTS;
        pub const MAGIC: u32 = 0x000 => "AEROGPU_MMIO_REG_MAGIC";
        pub const ABI_VERSION: u32 = 0x004 => "AEROGPU_MMIO_REG_ABI_VERSION";
        pub const FEATURES_LO: u32 = 0x008 => "AEROGPU_MMIO_REG_FEATURES_LO";
        pub const FEATURES_HI: u32 = 0x00C => "AEROGPU_MMIO_REG_FEATURES_HI";
        pub const RING_GPA_LO: u32 = 0x100 => "AEROGPU_MMIO_REG_RING_GPA_LO";
        pub const RING_GPA_HI: u32 = 0x104 => "AEROGPU_MMIO_REG_RING_GPA_HI";
        pub const RING_SIZE_BYTES: u32 = 0x108 => "AEROGPU_MMIO_REG_RING_SIZE_BYTES";
        pub const RING_CONTROL: u32 = 0x10C => "AEROGPU_MMIO_REG_RING_CONTROL";
        pub const FENCE_GPA_LO: u32 = 0x120 => "AEROGPU_MMIO_REG_FENCE_GPA_LO";
        pub const FENCE_GPA_HI: u32 = 0x124 => "AEROGPU_MMIO_REG_FENCE_GPA_HI";
        pub const COMPLETED_FENCE_LO: u32 = 0x130 => "AEROGPU_MMIO_REG_COMPLETED_FENCE_LO";
        pub const COMPLETED_FENCE_HI: u32 = 0x134 => "AEROGPU_MMIO_REG_COMPLETED_FENCE_HI";
        pub const GART_GPA_LO: u32 = 0x140 => "AEROGPU_MMIO_REG_GART_GPA_LO";
        pub const GART_GPA_HI: u32 = 0x144 => "AEROGPU_MMIO_REG_GART_GPA_HI";
        pub const GART_ENTRIES: u32 = 0x148 => "AEROGPU_MMIO_REG_GART_ENTRIES";
        pub const DOORBELL: u32 = 0x200 => "AEROGPU_MMIO_REG_DOORBELL";
        pub const IRQ_STATUS: u32 = 0x300 => "AEROGPU_MMIO_REG_IRQ_STATUS";
        pub const IRQ_ENABLE: u32 = 0x304 => "AEROGPU_MMIO_REG_IRQ_ENABLE";
        pub const IRQ_ACK: u32 = 0x308 => "AEROGPU_MMIO_REG_IRQ_ACK";
        pub const ERROR_CODE: u32 = 0x310 => "AEROGPU_MMIO_REG_ERROR_CODE";
        pub const ERROR_FENCE_LO: u32 = 0x314 => "AEROGPU_MMIO_REG_ERROR_FENCE_LO";
        pub const ERROR_FENCE_HI: u32 = 0x318 => "AEROGPU_MMIO_REG_ERROR_FENCE_HI";
        pub const ERROR_COUNT: u32 = 0x31C => "AEROGPU_MMIO_REG_ERROR_COUNT";
        pub const SCANOUT0_ENABLE: u32 = 0x400 => "AEROGPU_MMIO_REG_SCANOUT0_ENABLE";
        pub const SCANOUT0_WIDTH: u32 = 0x404 => "AEROGPU_MMIO_REG_SCANOUT0_WIDTH";
        pub const SCANOUT0_HEIGHT: u32 = 0x408 => "AEROGPU_MMIO_REG_SCANOUT0_HEIGHT";
        pub const SCANOUT0_FORMAT: u32 = 0x40C => "AEROGPU_MMIO_REG_SCANOUT0_FORMAT";
        pub const SCANOUT0_PITCH_BYTES: u32 = 0x410 => "AEROGPU_MMIO_REG_SCANOUT0_PITCH_BYTES";
        pub const SCANOUT0_FB_GPA_LO: u32 = 0x414 => "AEROGPU_MMIO_REG_SCANOUT0_FB_GPA_LO";
        pub const SCANOUT0_FB_GPA_HI: u32 = 0x418 => "AEROGPU_MMIO_REG_SCANOUT0_FB_GPA_HI";
        pub const SCANOUT0_VBLANK_SEQ_LO: u32 = 0x420 => "AEROGPU_MMIO_REG_SCANOUT0_VBLANK_SEQ_LO";
        pub const SCANOUT0_VBLANK_SEQ_HI: u32 = 0x424 => "AEROGPU_MMIO_REG_SCANOUT0_VBLANK_SEQ_HI";
        pub const SCANOUT0_VBLANK_TIME_NS_LO: u32 = 0x428 => "AEROGPU_MMIO_REG_SCANOUT0_VBLANK_TIME_NS_LO";
        pub const SCANOUT0_VBLANK_TIME_NS_HI: u32 = 0x42C => "AEROGPU_MMIO_REG_SCANOUT0_VBLANK_TIME_NS_HI";
        pub const SCANOUT0_VBLANK_PERIOD_NS: u32 = 0x430 => "AEROGPU_MMIO_REG_SCANOUT0_VBLANK_PERIOD_NS";
        pub const CURSOR_ENABLE: u32 = 0x500 => "AEROGPU_MMIO_REG_CURSOR_ENABLE";
        pub const CURSOR_X: u32 = 0x504 => "AEROGPU_MMIO_REG_CURSOR_X";
        pub const CURSOR_Y: u32 = 0x508 => "AEROGPU_MMIO_REG_CURSOR_Y";
        pub const CURSOR_HOT_X: u32 = 0x50C => "AEROGPU_MMIO_REG_CURSOR_HOT_X";
        pub const CURSOR_HOT_Y: u32 = 0x510 => "AEROGPU_MMIO_REG_CURSOR_HOT_Y";
        pub const CURSOR_WIDTH: u32 = 0x514 => "AEROGPU_MMIO_REG_CURSOR_WIDTH";
        pub const CURSOR_HEIGHT: u32 = 0x518 => "AEROGPU_MMIO_REG_CURSOR_HEIGHT";
        pub const CURSOR_FORMAT: u32 = 0x51C => "AEROGPU_MMIO_REG_CURSOR_FORMAT";
        pub const CURSOR_FB_GPA_LO: u32 = 0x520 => "AEROGPU_MMIO_REG_CURSOR_FB_GPA_LO";
        pub const CURSOR_FB_GPA_HI: u32 = 0x524 => "AEROGPU_MMIO_REG_CURSOR_FB_GPA_HI";
        pub const CURSOR_PITCH_BYTES: u32 = 0x528 => "AEROGPU_MMIO_REG_CURSOR_PITCH_BYTES";
    }
}

c_enum! {
    /// `enum aerogpu_error_code`: what ERROR_CODE reports.
    pub enum ErrorCode = "aerogpu_error_code" {
        None = "AEROGPU_ERROR_NONE" 0,
        Internal = "AEROGPU_ERROR_INTERNAL" 1,
        CmdDecode = "AEROGPU_ERROR_CMD_DECODE" 2,
        Oob = "AEROGPU_ERROR_OOB" 3,
        Backend = "AEROGPU_ERROR_BACKEND" 4,
        Ring = "AEROGPU_ERROR_RING" 5,
        AllocTable = "AEROGPU_ERROR_ALLOC_TABLE" 6,
        Validation = "AEROGPU_ERROR_VALIDATION" 7,
        ResourceLimit = "AEROGPU_ERROR_RESOURCE_LIMIT" 8,
        Readonly = "AEROGPU_ERROR_READONLY" 9,
    }
}

c_enum! {
    /// `enum aerogpu_format`; names give the byte order in memory.
    pub enum Format = "aerogpu_format" {
        Invalid = "AEROGPU_FORMAT_INVALID" 0,
        B8G8R8A8Unorm = "AEROGPU_FORMAT_B8G8R8A8_UNORM" 1,
        B8G8R8X8Unorm = "AEROGPU_FORMAT_B8G8R8X8_UNORM" 2,
        R8G8B8A8Unorm = "AEROGPU_FORMAT_R8G8B8A8_UNORM" 3,
        R8G8B8X8Unorm = "AEROGPU_FORMAT_R8G8B8X8_UNORM" 4,
        B5G6R5Unorm = "AEROGPU_FORMAT_B5G6R5_UNORM" 5,
        B5G5R5A1Unorm = "AEROGPU_FORMAT_B5G5R5A1_UNORM" 6,
        R8Unorm = "AEROGPU_FORMAT_R8_UNORM" 7,
        R8G8Unorm = "AEROGPU_FORMAT_R8G8_UNORM" 8,
        R16G16B16A16Float = "AEROGPU_FORMAT_R16G16B16A16_FLOAT" 9,
        R32G32B32A32Float = "AEROGPU_FORMAT_R32G32B32A32_FLOAT" 10,
        R32Float = "AEROGPU_FORMAT_R32_FLOAT" 11,
        A8Unorm = "AEROGPU_FORMAT_A8_UNORM" 12,
        L8A8Unorm = "AEROGPU_FORMAT_L8A8_UNORM" 13,
        V8U8Snorm = "AEROGPU_FORMAT_V8U8_SNORM" 14,
        Q8W8V8U8Snorm = "AEROGPU_FORMAT_Q8W8V8U8_SNORM" 15,
        D24UnormS8Uint = "AEROGPU_FORMAT_D24_UNORM_S8_UINT" 32,
        D32Float = "AEROGPU_FORMAT_D32_FLOAT" 33,
        D16Unorm = "AEROGPU_FORMAT_D16_UNORM" 34,
        Bc1Unorm = "AEROGPU_FORMAT_BC1_UNORM" 64,
        Bc2Unorm = "AEROGPU_FORMAT_BC2_UNORM" 65,
        Bc3Unorm = "AEROGPU_FORMAT_BC3_UNORM" 66,
    }
}

/// How a format is laid out in memory: `block_width` x `block_height` texels per block of
/// `bytes_per_block` bytes (1x1 for uncompressed formats).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockLayout {
    pub block_width: u32,
    pub block_height: u32,
    pub bytes_per_block: u32,
}

impl Format {
    /// The memory layout; `None` for `Invalid`.
    pub fn block_layout(self) -> Option<BlockLayout> {
        let texel = |bytes| BlockLayout {
            block_width: 1,
            block_height: 1,
            bytes_per_block: bytes,
        };
        let bc = |bytes| BlockLayout {
            block_width: 4,
            block_height: 4,
            bytes_per_block: bytes,
        };
        Some(match self {
            Format::Invalid => return None,
            Format::R8Unorm | Format::A8Unorm => texel(1),
            Format::R8G8Unorm
            | Format::L8A8Unorm
            | Format::V8U8Snorm
            | Format::B5G6R5Unorm
            | Format::B5G5R5A1Unorm
            | Format::D16Unorm => texel(2),
            Format::B8G8R8A8Unorm
            | Format::B8G8R8X8Unorm
            | Format::R8G8B8A8Unorm
            | Format::R8G8B8X8Unorm
            | Format::R32Float
            | Format::Q8W8V8U8Snorm
            | Format::D24UnormS8Uint
            | Format::D32Float => texel(4),
            Format::R16G16B16A16Float => texel(8),
            Format::R32G32B32A32Float => texel(16),
            Format::Bc1Unorm => bc(8),
            Format::Bc2Unorm | Format::Bc3Unorm => bc(16),
        })
    }

    /// Formats scanout and cursor can show (32-bit, BGRA/RGBA byte order).
    pub fn is_scanout_capable(self) -> bool {
        matches!(
            self,
            Format::B8G8R8A8Unorm
                | Format::B8G8R8X8Unorm
                | Format::R8G8B8A8Unorm
                | Format::R8G8B8X8Unorm
        )
    }
}
