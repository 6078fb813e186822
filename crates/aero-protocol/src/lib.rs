//! The AeroGPU guest/host ABI in Rust.
//!
//! Mirrors the C headers in `guest-tools/drivers/aerogpu/protocol/`, which are the source
//! of truth. Every struct is a plain Rust struct with explicit little-endian `decode` /
//! `encode` over byte slices; `tests/c_abi.rs` compiles a C program against the headers
//! and checks every size, offset and constant listed by [`all_layouts`] and
//! [`all_constants`].
#![forbid(unsafe_code)]

pub mod wire;

pub mod cmd;
pub mod escape;
pub mod pci;
pub mod ring;
pub mod wddm_alloc;
pub mod writer;

pub use wire::{StructLayout, Wire, WireError};

c_consts! {
    CONSTANTS;
    pub const ABI_MAJOR: u32 = 1 => "AEROGPU_ABI_MAJOR";
    pub const ABI_MINOR: u32 = 6 => "AEROGPU_ABI_MINOR";
    /// `major << 16 | minor`, as ABI_VERSION reports it.
    pub const ABI_VERSION_U32: u32 = (ABI_MAJOR << 16) | ABI_MINOR => "AEROGPU_ABI_VERSION_U32";
}

/// Major part of an ABI version word.
pub const fn abi_major(version: u32) -> u32 {
    version >> 16
}

/// Protocol object handle (`aerogpu_handle_t`): 0 means none.
pub type Handle = u32;

/// Every ABI struct's layout.
pub fn all_layouts() -> Vec<StructLayout> {
    use cmd::*;
    use escape::*;
    use ring::*;
    use wddm_alloc::*;
    vec![
        RingHeader::LAYOUT,
        SubmitDesc::LAYOUT,
        AllocTableHeader::LAYOUT,
        AllocEntry::LAYOUT,
        FencePage::LAYOUT,
        CmdStreamHeader::LAYOUT,
        CmdHdr::LAYOUT,
        CreateBuffer::LAYOUT,
        CreateTexture2d::LAYOUT,
        DestroyResource::LAYOUT,
        ResourceDirtyRange::LAYOUT,
        UploadResource::LAYOUT,
        CopyBuffer::LAYOUT,
        CopyTexture2d::LAYOUT,
        CreateShader::LAYOUT,
        DestroyShader::LAYOUT,
        BindShaders::LAYOUT,
        SetShaderConstants::LAYOUT,
        CreateInputLayout::LAYOUT,
        DestroyInputLayout::LAYOUT,
        SetInputLayout::LAYOUT,
        SetBlendState::LAYOUT,
        SetDepthStencilState::LAYOUT,
        SetRasterizerState::LAYOUT,
        SetRenderState::LAYOUT,
        SetSamplerState::LAYOUT,
        SetTextureStageState::LAYOUT,
        SetRenderTargets::LAYOUT,
        SetViewport::LAYOUT,
        SetScissor::LAYOUT,
        VertexBufferBinding::LAYOUT,
        SetVertexBuffers::LAYOUT,
        SetIndexBuffer::LAYOUT,
        SetPrimitiveTopology::LAYOUT,
        SetTexture::LAYOUT,
        Clear::LAYOUT,
        ClearRect::LAYOUT,
        ClearRects::LAYOUT,
        Draw::LAYOUT,
        DrawIndexed::LAYOUT,
        Present::LAYOUT,
        PresentEx::LAYOUT,
        ExportSharedSurface::LAYOUT,
        ImportSharedSurface::LAYOUT,
        ReleaseSharedSurface::LAYOUT,
        Flush::LAYOUT,
        WddmAllocPriv::LAYOUT,
        WddmAllocPrivV2::LAYOUT,
        EscapeHeader::LAYOUT,
        QueryDeviceOut::LAYOUT,
        QueryDeviceV2Out::LAYOUT,
        QueryFenceOut::LAYOUT,
        DbgctlRingDesc::LAYOUT,
        DumpRingInout::LAYOUT,
        DbgctlRingDescV2::LAYOUT,
        DumpRingV2Inout::LAYOUT,
        SelftestInout::LAYOUT,
        QueryVblankOut::LAYOUT,
        MapSharedHandleInout::LAYOUT,
        DbgctlCreateAllocationDesc::LAYOUT,
        DumpCreateAllocationInout::LAYOUT,
        ReadGpaInout::LAYOUT,
    ]
}

/// Every `#define` and enum value of the headers, by C name.
pub fn all_constants() -> Vec<(&'static str, u64)> {
    let tables: &[&[(&str, u64)]] = &[
        CONSTANTS,
        pci::CONSTANTS,
        pci::reg::CONSTANTS,
        pci::ErrorCode::C_VALUES,
        pci::Format::C_VALUES,
        ring::CONSTANTS,
        cmd::CONSTANTS,
        cmd::Opcode::C_VALUES,
        cmd::ShaderStage::C_VALUES,
        cmd::BlendFactor::C_VALUES,
        cmd::BlendOp::C_VALUES,
        cmd::CompareFunc::C_VALUES,
        cmd::FillMode::C_VALUES,
        cmd::CullMode::C_VALUES,
        cmd::IndexFormat::C_VALUES,
        cmd::PrimitiveTopology::C_VALUES,
        wddm_alloc::CONSTANTS,
        wddm_alloc::AllocKind::C_VALUES,
        escape::CONSTANTS,
    ];
    tables.iter().flat_map(|t| t.iter().copied()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Explicit padding means the fields of every struct tile it exactly: no gaps, no
    /// overlaps, 64-bit fields 8-aligned, and 8-multiple sizes for structs holding them.
    #[test]
    fn layouts_tile_without_gaps() {
        for layout in all_layouts() {
            let mut next = 0;
            for &(name, off, size) in layout.fields {
                assert_eq!(off, next, "{}.{name}: gap or overlap", layout.c_name);
                next = off + size;
            }
            assert_eq!(next, layout.size, "{}: trailing gap", layout.c_name);
        }
    }

    #[test]
    fn round_trip_and_short_buffers() {
        let desc = ring::SubmitDesc {
            desc_size_bytes: 64,
            flags: ring::SUBMIT_FLAG_NO_IRQ,
            cmd_gpa: 0x1122_3344_5566_7788,
            signal_fence: u64::MAX - 1,
            ..Default::default()
        };
        let bytes = desc.to_bytes();
        assert_eq!(&bytes[16..24], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(&bytes[48..56], &(u64::MAX - 1).to_le_bytes());
        assert_eq!(ring::SubmitDesc::decode(&bytes).unwrap(), desc);
        assert_eq!(
            ring::SubmitDesc::decode(&bytes[..63]),
            Err(WireError {
                what: "aerogpu_submit_desc",
                needed: 64,
                have: 63
            })
        );
        let mut small = [0u8; 10];
        assert!(desc.encode(&mut small).is_err());
        assert_eq!(small, [0u8; 10]);

        let mut rt = cmd::SetRenderTargets::default();
        rt.colors[7] = 0xDEAD_BEEF;
        let b = rt.to_bytes();
        assert_eq!(&b[44..48], &0xDEAD_BEEFu32.to_le_bytes());
        assert_eq!(
            cmd::SetRenderTargets::decode(&b).unwrap().colors[7],
            0xDEAD_BEEF
        );
    }

    #[test]
    fn enums_and_constant_names_are_unique() {
        assert_eq!(cmd::Opcode::from_u32(0x701), Some(cmd::Opcode::PresentEx));
        assert_eq!(cmd::Opcode::from_u32(0x702), None);
        let consts = all_constants();
        let mut names: Vec<_> = consts.iter().map(|c| c.0).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "duplicate C constant name");
        assert_eq!(ABI_VERSION_U32, 0x0001_0006);
    }
}
