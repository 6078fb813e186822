//! Resource packets: CREATE_*, DESTROY_RESOURCE, RESOURCE_DIRTY_RANGE, UPLOAD_RESOURCE,
//! COPY_* — and the `backing_alloc_id` contract of seed 002.

use aero_protocol::cmd::{self, COPY_FLAG_WRITEBACK_DST};
use aero_protocol::pci::Format;

use super::objects::{GuestBacking, Resource};
use super::{
    BufferDesc, Command, CommandProcessor, PacketCtx, ResolvedBacking, ResourceDesc, TextureDesc,
    check_range, decode, payload,
};
use crate::aerogpu::alloc_table::AllocTable;
use crate::aerogpu::error::PacketError;

/// Resolves a guest backing through this submission's table: the alloc_id must be
/// listed and `offset + size <= alloc.size_bytes` (seed 002 rule 3).
pub(super) fn resolve(
    table: &AllocTable,
    backing: GuestBacking,
    size_bytes: u64,
) -> Result<ResolvedBacking, PacketError> {
    let alloc = table
        .get(backing.alloc_id)
        .ok_or(PacketError::MissingAllocId(backing.alloc_id))?;
    let out_of_bounds = PacketError::BackingOutOfBounds {
        alloc_id: backing.alloc_id,
        offset: backing.offset_bytes,
        size: size_bytes,
        alloc_size: alloc.size_bytes,
    };
    match backing.offset_bytes.checked_add(size_bytes) {
        Some(end) if end <= alloc.size_bytes => {}
        _ => return Err(out_of_bounds),
    }
    // The table already checked [gpa, gpa + alloc size) is RAM, so this cannot overflow.
    let gpa = alloc
        .gpa
        .checked_add(backing.offset_bytes)
        .ok_or(out_of_bounds)?;
    Ok(ResolvedBacking {
        alloc_id: alloc.alloc_id,
        gpa,
        size_bytes,
        readonly: alloc.readonly,
    })
}

fn resolve_resource(
    table: &AllocTable,
    r: &Resource,
) -> Result<Option<ResolvedBacking>, PacketError> {
    r.backing
        .map(|b| resolve(table, b, r.size_bytes))
        .transpose()
}

/// A writeback target: guest-backed, listed, and not READONLY in this submission.
fn writeback_target(
    table: &AllocTable,
    handle: u32,
    r: &Resource,
) -> Result<ResolvedBacking, PacketError> {
    let backing = resolve_resource(table, r)?.ok_or(PacketError::NotGuestBacked(handle))?;
    if backing.readonly {
        return Err(PacketError::ReadonlyWriteback(backing.alloc_id));
    }
    Ok(backing)
}

/// Bytes of guest backing a texture covers (layout documented in `aerogpu_cmd.h`).
pub fn texture_size(desc: &TextureDesc) -> Result<u64, PacketError> {
    let invalid = |what, value: u32| PacketError::InvalidValue {
        what,
        value: value.into(),
    };
    let layout = desc
        .format
        .block_layout()
        .ok_or(invalid("texture format", desc.format as u32))?;
    if desc.width == 0
        || desc.height == 0
        || desc.width > cmd::MAX_TEXTURE_DIM
        || desc.height > cmd::MAX_TEXTURE_DIM
    {
        return Err(invalid("texture size", desc.width.max(desc.height)));
    }
    if desc.is_volume() {
        if desc.is_cube() || desc.array_layers != 1 {
            return Err(invalid("volume texture layers", desc.array_layers));
        }
        if desc.depth == 0 || desc.depth > cmd::MAX_VOLUME_DEPTH {
            return Err(invalid("volume depth", desc.depth));
        }
    } else if desc.depth != 1 {
        return Err(invalid("depth of a 2D texture", desc.depth));
    }
    let largest = desc.width.max(desc.height).max(desc.depth);
    let max_mips = 32 - largest.leading_zeros();
    if desc.mip_levels == 0 || desc.mip_levels > max_mips.min(cmd::MAX_MIP_LEVELS) {
        return Err(invalid("mip_levels", desc.mip_levels));
    }
    if desc.array_layers == 0 || desc.array_layers > cmd::MAX_ARRAY_LAYERS {
        return Err(invalid("array_layers", desc.array_layers));
    }
    if desc.is_cube() && (!desc.array_layers.is_multiple_of(6) || desc.width != desc.height) {
        return Err(invalid("cube texture layers", desc.array_layers));
    }
    let mut layer_bytes: u64 = 0;
    for mip in 0..desc.mip_levels {
        let w = (desc.width >> mip).max(1);
        let h = (desc.height >> mip).max(1);
        let tight_row =
            u64::from(w.div_ceil(layout.block_width)) * u64::from(layout.bytes_per_block);
        let rows = u64::from(h.div_ceil(layout.block_height));
        let pitch = if mip == 0 && desc.row_pitch_bytes != 0 {
            if u64::from(desc.row_pitch_bytes) < tight_row {
                return Err(invalid("row_pitch_bytes", desc.row_pitch_bytes));
            }
            u64::from(desc.row_pitch_bytes)
        } else {
            tight_row
        };
        layer_bytes += pitch * rows * u64::from(desc.depth_of_mip(mip));
    }
    // Dimensions are capped above, so this fits easily in u64 (the processor's texture
    // byte limit then bounds what an executor allocates).
    Ok(layer_bytes * u64::from(desc.array_layers))
}

impl CommandProcessor {
    pub(super) fn create_buffer<'a>(
        &mut self,
        p: &'a [u8],
        ctx: &PacketCtx<'_>,
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::CreateBuffer = decode(p)?;
        if c.size_bytes == 0 {
            return Err(PacketError::InvalidValue {
                what: "buffer size",
                value: 0,
            });
        }
        if c.size_bytes > self.limits.max_buffer_bytes {
            return Err(PacketError::Limit {
                what: "buffer size",
            });
        }
        let desc = ResourceDesc::Buffer(BufferDesc {
            size_bytes: c.size_bytes,
            usage_flags: c.usage_flags,
        });
        let backing = (c.backing_alloc_id != 0).then(|| GuestBacking {
            alloc_id: c.backing_alloc_id,
            offset_bytes: c.backing_offset_bytes.into(),
        });
        self.create_resource(c.buffer_handle, desc, c.size_bytes, backing, ctx)
    }

    pub(super) fn create_texture2d<'a>(
        &mut self,
        p: &'a [u8],
        ctx: &PacketCtx<'_>,
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::CreateTexture2d = decode(p)?;
        let format = Format::from_u32(c.format).ok_or(PacketError::InvalidValue {
            what: "texture format",
            value: c.format.into(),
        })?;
        let desc = TextureDesc {
            format,
            width: c.width,
            height: c.height,
            mip_levels: c.mip_levels,
            array_layers: c.array_layers,
            row_pitch_bytes: c.row_pitch_bytes,
            usage_flags: c.usage_flags,
            flags: c.flags,
            // 2D textures of older streams leave it 0; a volume must say its depth.
            depth: if c.flags & cmd::TEXTURE_FLAG_VOLUME != 0 {
                c.depth
            } else {
                c.depth.max(1)
            },
        };
        let size = texture_size(&desc)?;
        if size > self.limits.max_texture_bytes {
            return Err(PacketError::Limit {
                what: "texture size",
            });
        }
        let backing = (c.backing_alloc_id != 0).then(|| GuestBacking {
            alloc_id: c.backing_alloc_id,
            offset_bytes: c.backing_offset_bytes.into(),
        });
        self.create_resource(
            c.texture_handle,
            ResourceDesc::Texture2d(desc),
            size,
            backing,
            ctx,
        )
    }

    fn create_resource<'a>(
        &mut self,
        handle: u32,
        desc: ResourceDesc,
        size: u64,
        backing: Option<GuestBacking>,
        ctx: &PacketCtx<'_>,
    ) -> Result<Command<'a>, PacketError> {
        // Validate everything before touching the table so a failure changes nothing.
        self.objects.existing_for_create(handle)?;
        let resolved = backing.map(|b| resolve(ctx.table, b, size)).transpose()?;
        let created =
            self.objects
                .create_resource(handle, desc, size, backing, self.limits.max_handles)?;
        Ok(Command::CreateResource {
            resource: created.resource,
            desc,
            size_bytes: size,
            backing: resolved,
            rebind: created.rebind,
        })
    }

    pub(super) fn destroy_resource<'a>(&mut self, p: &'a [u8]) -> Result<Command<'a>, PacketError> {
        let c: cmd::DestroyResource = decode(p)?;
        let (resource, freed) = self.objects.destroy_resource(c.resource_handle)?;
        self.forget(c.resource_handle);
        Ok(Command::DestroyResource { resource, freed })
    }

    pub(super) fn resource_dirty_range<'a>(
        &mut self,
        p: &'a [u8],
        ctx: &PacketCtx<'_>,
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::ResourceDirtyRange = decode(p)?;
        let (resource, r) = self.objects.resource(c.resource_handle)?;
        check_range(c.offset_bytes, c.size_bytes, r.size_bytes)?;
        let backing = resolve_resource(ctx.table, r)?;
        if backing.is_none() {
            tracing::debug!(
                handle = c.resource_handle,
                "aerogpu: dirty range on a host-allocated resource"
            );
        }
        Ok(Command::ResourceDirtyRange {
            resource,
            offset_bytes: c.offset_bytes,
            size_bytes: c.size_bytes,
            backing,
        })
    }

    pub(super) fn upload_resource<'a>(&mut self, p: &'a [u8]) -> Result<Command<'a>, PacketError> {
        let c: cmd::UploadResource = decode(p)?;
        let (resource, r) = self.objects.resource(c.resource_handle)?;
        check_range(c.offset_bytes, c.size_bytes, r.size_bytes)?;
        let data = payload(p, cmd::UploadResource::SIZE, c.size_bytes)?;
        Ok(Command::UploadResource {
            resource,
            offset_bytes: c.offset_bytes,
            data,
        })
    }

    pub(super) fn copy_buffer<'a>(
        &mut self,
        p: &'a [u8],
        ctx: &PacketCtx<'_>,
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::CopyBuffer = decode(p)?;
        let (src, src_r) = self.objects.resource(c.src_buffer)?;
        if !matches!(src_r.desc, ResourceDesc::Buffer(_)) {
            return Err(PacketError::WrongKind {
                handle: c.src_buffer,
                expected: "buffer",
            });
        }
        check_range(c.src_offset_bytes, c.size_bytes, src_r.size_bytes)?;
        let (dst, dst_r) = self.objects.resource(c.dst_buffer)?;
        if !matches!(dst_r.desc, ResourceDesc::Buffer(_)) {
            return Err(PacketError::WrongKind {
                handle: c.dst_buffer,
                expected: "buffer",
            });
        }
        check_range(c.dst_offset_bytes, c.size_bytes, dst_r.size_bytes)?;
        let writeback = if c.flags & COPY_FLAG_WRITEBACK_DST != 0 {
            Some(writeback_target(ctx.table, c.dst_buffer, dst_r)?)
        } else {
            None
        };
        Ok(Command::CopyBuffer {
            dst,
            src,
            dst_offset_bytes: c.dst_offset_bytes,
            src_offset_bytes: c.src_offset_bytes,
            size_bytes: c.size_bytes,
            writeback,
        })
    }

    pub(super) fn copy_texture2d<'a>(
        &mut self,
        p: &'a [u8],
        ctx: &PacketCtx<'_>,
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::CopyTexture2d = decode(p)?;
        let texture = |handle| -> Result<_, PacketError> {
            let (id, r) = self.objects.resource(handle)?;
            match r.desc {
                ResourceDesc::Texture2d(desc) => Ok((id, desc, r)),
                ResourceDesc::Buffer(_) => Err(PacketError::WrongKind {
                    handle,
                    expected: "texture",
                }),
            }
        };
        let (src, src_desc, _) = texture(c.src_texture)?;
        let (dst, dst_desc, dst_r) = texture(c.dst_texture)?;
        if src_desc.format != dst_desc.format {
            return Err(PacketError::InvalidValue {
                what: "copy between formats",
                value: dst_desc.format as u64,
            });
        }
        let check_region =
            |d: &TextureDesc, mip: u32, layer: u32, x: u32, y: u32| -> Result<(), PacketError> {
                if mip >= d.mip_levels || layer >= d.layers_of_mip(mip) {
                    return Err(PacketError::InvalidValue {
                        what: "copy subresource",
                        value: mip.into(),
                    });
                }
                let w = u64::from((d.width >> mip).max(1));
                let h = u64::from((d.height >> mip).max(1));
                check_range(x.into(), c.width.into(), w)?;
                check_range(y.into(), c.height.into(), h)
            };
        check_region(
            &src_desc,
            c.src_mip_level,
            c.src_array_layer,
            c.src_x,
            c.src_y,
        )?;
        check_region(
            &dst_desc,
            c.dst_mip_level,
            c.dst_array_layer,
            c.dst_x,
            c.dst_y,
        )?;
        let writeback = if c.flags & COPY_FLAG_WRITEBACK_DST != 0 {
            Some(writeback_target(ctx.table, c.dst_texture, dst_r)?)
        } else {
            None
        };
        Ok(Command::CopyTexture2d {
            dst,
            src,
            region: c,
            writeback,
        })
    }
}
