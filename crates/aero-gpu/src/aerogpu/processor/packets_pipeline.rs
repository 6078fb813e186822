//! Pipeline-state, binding and draw packets.

use aero_protocol::Wire;
use aero_protocol::cmd::{
    self, BlendFactor, BlendOp, CompareFunc, CullMode, FillMode, IndexFormat, PrimitiveTopology,
};

use super::{
    Command, CommandProcessor, ResourceDesc, ResourceId, TEXTURE_STAGE_STATES, VertexBufferBinding,
    decode, payload, shader_stage,
};
use crate::aerogpu::error::PacketError;

fn check_enum<T>(parsed: Option<T>, what: &'static str, value: u32) -> Result<T, PacketError> {
    parsed.ok_or(PacketError::InvalidValue {
        what,
        value: value.into(),
    })
}

impl CommandProcessor {
    /// `handle` as a bindable resource of the given kind (`None` for 0 = unbind).
    fn bindable(&self, handle: u32, want_texture: bool) -> Result<Option<ResourceId>, PacketError> {
        let Some((id, r)) = self.objects.optional_resource(handle)? else {
            return Ok(None);
        };
        match (&r.desc, want_texture) {
            (ResourceDesc::Texture2d(_), true) | (ResourceDesc::Buffer(_), false) => Ok(Some(id)),
            _ => Err(PacketError::WrongKind {
                handle,
                expected: if want_texture { "texture" } else { "buffer" },
            }),
        }
    }

    pub(super) fn set_blend_state<'a>(&mut self, p: &'a [u8]) -> Result<Command<'a>, PacketError> {
        let c: cmd::SetBlendState = decode(p)?;
        for f in [
            c.src_factor,
            c.dst_factor,
            c.src_factor_alpha,
            c.dst_factor_alpha,
        ] {
            check_enum(BlendFactor::from_u32(f), "blend factor", f)?;
        }
        for op in [c.blend_op, c.blend_op_alpha] {
            check_enum(BlendOp::from_u32(op), "blend op", op)?;
        }
        Ok(Command::SetBlendState(c))
    }

    pub(super) fn set_depth_stencil_state<'a>(
        &mut self,
        p: &'a [u8],
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::SetDepthStencilState = decode(p)?;
        check_enum(
            CompareFunc::from_u32(c.depth_func),
            "depth func",
            c.depth_func,
        )?;
        Ok(Command::SetDepthStencilState(c))
    }

    pub(super) fn set_rasterizer_state<'a>(
        &mut self,
        p: &'a [u8],
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::SetRasterizerState = decode(p)?;
        check_enum(FillMode::from_u32(c.fill_mode), "fill mode", c.fill_mode)?;
        check_enum(CullMode::from_u32(c.cull_mode), "cull mode", c.cull_mode)?;
        Ok(Command::SetRasterizerState(c))
    }

    pub(super) fn set_render_state<'a>(&mut self, p: &'a [u8]) -> Result<Command<'a>, PacketError> {
        let c: cmd::SetRenderState = decode(p)?;
        Ok(Command::SetRenderState {
            state: c.state,
            value: c.value,
        })
    }

    pub(super) fn set_sampler_state<'a>(
        &mut self,
        p: &'a [u8],
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::SetSamplerState = decode(p)?;
        let stage = shader_stage(c.shader_stage)?;
        if c.slot >= cmd::MAX_TEXTURE_SLOTS {
            return Err(PacketError::InvalidValue {
                what: "sampler slot",
                value: c.slot.into(),
            });
        }
        Ok(Command::SetSamplerState {
            stage,
            slot: c.slot,
            state: c.state,
            value: c.value,
        })
    }

    pub(super) fn set_texture_stage_state<'a>(
        &mut self,
        p: &'a [u8],
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::SetTextureStageState = decode(p)?;
        if c.stage >= cmd::MAX_TEXTURE_STAGES {
            return Err(PacketError::InvalidValue {
                what: "texture stage",
                value: c.stage.into(),
            });
        }
        if c.state >= TEXTURE_STAGE_STATES {
            return Err(PacketError::InvalidValue {
                what: "texture stage state",
                value: c.state.into(),
            });
        }
        Ok(Command::SetTextureStageState {
            stage: c.stage,
            state: c.state,
            value: c.value,
        })
    }

    pub(super) fn set_render_targets<'a>(
        &mut self,
        p: &'a [u8],
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::SetRenderTargets = decode(p)?;
        if c.color_count > cmd::MAX_RENDER_TARGETS {
            return Err(PacketError::InvalidValue {
                what: "render target count",
                value: c.color_count.into(),
            });
        }
        let mut colors = [None; 8];
        for (i, (&handle, out)) in c.colors.iter().zip(colors.iter_mut()).enumerate() {
            if i as u32 >= c.color_count {
                if handle != 0 {
                    return Err(PacketError::InvalidValue {
                        what: "render target beyond color_count",
                        value: i as u64,
                    });
                }
                continue;
            }
            *out = self.bindable(handle, true)?;
        }
        let depth_stencil = self.bindable(c.depth_stencil, true)?;
        self.bindings.render_targets = c.colors;
        self.bindings.depth_stencil = c.depth_stencil;
        Ok(Command::SetRenderTargets {
            colors,
            color_count: c.color_count,
            depth_stencil,
        })
    }

    pub(super) fn set_vertex_buffers<'a>(
        &mut self,
        p: &'a [u8],
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::SetVertexBuffers = decode(p)?;
        let end = u64::from(c.start_slot) + u64::from(c.buffer_count);
        if end > u64::from(cmd::MAX_VERTEX_BUFFERS) {
            return Err(PacketError::InvalidValue {
                what: "vertex buffer slots",
                value: end,
            });
        }
        let record = cmd::VertexBufferBinding::WIRE_SIZE;
        let data = payload(
            p,
            cmd::SetVertexBuffers::SIZE,
            u64::from(c.buffer_count) * record as u64,
        )?;
        let mut bindings = [VertexBufferBinding::default(); 16];
        let mut handles = [0u32; 16];
        for (i, (raw, out)) in data
            .chunks_exact(record)
            .zip(bindings.iter_mut())
            .enumerate()
        {
            let b = cmd::VertexBufferBinding::read_le(raw);
            *out = VertexBufferBinding {
                buffer: self.bindable(b.buffer, false)?,
                stride_bytes: b.stride_bytes,
                offset_bytes: b.offset_bytes,
            };
            if let Some(h) = handles.get_mut(i) {
                *h = b.buffer;
            }
        }
        let start = c.start_slot as usize;
        for (slot, &h) in self
            .bindings
            .vertex_buffers
            .iter_mut()
            .skip(start)
            .zip(handles.iter().take(c.buffer_count as usize))
        {
            *slot = h;
        }
        Ok(Command::SetVertexBuffers {
            start_slot: c.start_slot,
            count: c.buffer_count,
            bindings,
        })
    }

    pub(super) fn set_index_buffer<'a>(&mut self, p: &'a [u8]) -> Result<Command<'a>, PacketError> {
        let c: cmd::SetIndexBuffer = decode(p)?;
        let format = check_enum(IndexFormat::from_u32(c.format), "index format", c.format)?;
        let buffer = self.bindable(c.buffer, false)?;
        self.bindings.index_buffer = c.buffer;
        Ok(Command::SetIndexBuffer {
            buffer,
            format,
            offset_bytes: c.offset_bytes,
        })
    }

    pub(super) fn set_primitive_topology<'a>(
        &mut self,
        p: &'a [u8],
    ) -> Result<Command<'a>, PacketError> {
        let c: cmd::SetPrimitiveTopology = decode(p)?;
        let topology = check_enum(
            PrimitiveTopology::from_u32(c.topology),
            "primitive topology",
            c.topology,
        )?;
        Ok(Command::SetPrimitiveTopology(topology))
    }

    pub(super) fn set_texture<'a>(&mut self, p: &'a [u8]) -> Result<Command<'a>, PacketError> {
        let c: cmd::SetTexture = decode(p)?;
        let stage = shader_stage(c.shader_stage)?;
        if c.slot >= cmd::MAX_TEXTURE_SLOTS {
            return Err(PacketError::InvalidValue {
                what: "texture slot",
                value: c.slot.into(),
            });
        }
        let texture = self.bindable(c.texture, true)?;
        if let Some(slot) = self
            .bindings
            .textures
            .get_mut(stage as usize)
            .and_then(|s| s.get_mut(c.slot as usize))
        {
            *slot = c.texture;
        }
        Ok(Command::SetTexture {
            stage,
            slot: c.slot,
            texture,
        })
    }

    pub(super) fn draw<'a>(&mut self, p: &'a [u8]) -> Result<Command<'a>, PacketError> {
        let c: cmd::Draw = decode(p)?;
        Ok(Command::Draw(c))
    }

    pub(super) fn draw_indexed<'a>(&mut self, p: &'a [u8]) -> Result<Command<'a>, PacketError> {
        let c: cmd::DrawIndexed = decode(p)?;
        if self.bindings.index_buffer == 0 {
            return Err(PacketError::InvalidValue {
                what: "DRAW_INDEXED without an index buffer",
                value: 0,
            });
        }
        Ok(Command::DrawIndexed(c))
    }

    /// CLEAR_RECTS: known clear bits only, a bounded rectangle count whose records are all
    /// present, and rectangles whose far edges fit in u32 (the executor clips them to each
    /// target).
    pub(super) fn clear_rects<'a>(&mut self, p: &'a [u8]) -> Result<Command<'a>, PacketError> {
        let c: cmd::ClearRects = decode(p)?;
        let known = cmd::CLEAR_COLOR | cmd::CLEAR_DEPTH | cmd::CLEAR_STENCIL;
        if c.flags & !known != 0 {
            return Err(PacketError::InvalidValue {
                what: "CLEAR_RECTS flags",
                value: c.flags.into(),
            });
        }
        if c.rect_count > cmd::MAX_CLEAR_RECTS {
            return Err(PacketError::Limit {
                what: "CLEAR_RECTS rectangles",
            });
        }
        let rects = payload(
            p,
            cmd::ClearRects::SIZE,
            u64::from(c.rect_count) * cmd::ClearRect::SIZE as u64,
        )?;
        for r in rects.chunks_exact(cmd::ClearRect::SIZE) {
            let r = cmd::ClearRect::read_le(r);
            let right = u64::from(r.x) + u64::from(r.width);
            let bottom = u64::from(r.y) + u64::from(r.height);
            if right > u64::from(u32::MAX) || bottom > u64::from(u32::MAX) {
                return Err(PacketError::InvalidValue {
                    what: "CLEAR_RECTS rectangle",
                    value: right.max(bottom),
                });
            }
        }
        Ok(Command::ClearRects { clear: c, rects })
    }
}
