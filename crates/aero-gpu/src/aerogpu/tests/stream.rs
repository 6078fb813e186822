//! Command-stream builders the processor, CPU-executor and twin-executor tests share.

use aero_protocol::Wire;
use aero_protocol::cmd::{self, Opcode};
use aero_protocol::pci::Format;
use aero_protocol::ring::AllocEntry;
use aero_protocol::writer::CmdStreamWriter;

pub(super) fn entry(alloc_id: u32, gpa: u64, size: u64, flags: u32) -> AllocEntry {
    AllocEntry {
        alloc_id,
        flags,
        gpa,
        size_bytes: size,
        reserved0: 0,
    }
}

pub(super) fn targets(w: &mut CmdStreamWriter, colors: &[u32], depth_stencil: u32) {
    let mut c = [0u32; 8];
    c[..colors.len()].copy_from_slice(colors);
    let p = cmd::SetRenderTargets {
        color_count: colors.len() as u32,
        depth_stencil,
        colors: c,
        ..Default::default()
    };
    w.push(Opcode::SetRenderTargets, &p, &[]);
}

pub(super) fn dirty(w: &mut CmdStreamWriter, handle: u32, offset: u64, size: u64) {
    let p = cmd::ResourceDirtyRange {
        resource_handle: handle,
        offset_bytes: offset,
        size_bytes: size,
        ..Default::default()
    };
    w.push(Opcode::ResourceDirtyRange, &p, &[]);
}

pub(super) fn clear_rects(
    w: &mut CmdStreamWriter,
    flags: u32,
    rgba: [f32; 4],
    z: f32,
    s: u32,
    rects: &[[u32; 4]],
) {
    let mut payload = vec![0u8; rects.len() * cmd::ClearRect::SIZE];
    for (r, out) in rects
        .iter()
        .zip(payload.chunks_exact_mut(cmd::ClearRect::SIZE))
    {
        cmd::ClearRect {
            x: r[0],
            y: r[1],
            width: r[2],
            height: r[3],
        }
        .write_le(out);
    }
    let p = cmd::ClearRects {
        flags,
        color_rgba_f32: rgba.map(f32::to_bits),
        depth_f32: z.to_bits(),
        stencil: s,
        rect_count: rects.len() as u32,
        ..Default::default()
    };
    w.push(Opcode::ClearRects, &p, &payload);
}

/// CREATE_TEXTURE2D of a sampled render target.
#[allow(clippy::too_many_arguments)]
pub(super) fn texture(
    w: &mut CmdStreamWriter,
    handle: u32,
    format: Format,
    (width, height): (u32, u32),
    mips: u32,
    layers: u32,
    row_pitch_bytes: u32,
    alloc_id: u32,
) {
    let p = cmd::CreateTexture2d {
        texture_handle: handle,
        usage_flags: cmd::RESOURCE_USAGE_TEXTURE | cmd::RESOURCE_USAGE_RENDER_TARGET,
        format: format as u32,
        width,
        height,
        mip_levels: mips,
        array_layers: layers,
        row_pitch_bytes,
        backing_alloc_id: alloc_id,
        ..Default::default()
    };
    w.push(Opcode::CreateTexture2d, &p, &[]);
}
