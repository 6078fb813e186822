//! The validating command processor: parses a submission's command stream, enforces the
//! contracts of the seeds (alloc_id resolution through the per-submit table only,
//! READONLY, rebind rules, shared-surface refcounts, one global handle namespace, capped
//! sizes), keeps the object table, and hands each validated [`Command`] to an
//! [`Executor`].
//!
//! Packets are validated and executed one at a time; the first invalid packet ends the
//! submission (earlier packets stay executed), the error is reported to the device.

mod bindings;
mod command;
mod objects;
mod packets_pipeline;
mod packets_present;
mod packets_resource;
mod packets_shader;
mod shader_tokens;

pub use bindings::Bindings;
pub use command::*;
pub use objects::{GuestBacking, ObjectTable, Resource};
pub use packets_resource::texture_size;

use std::collections::BTreeMap;

use aero_protocol::cmd::{CMD_STREAM_MAGIC, CmdHdr, CmdStreamHeader, Opcode};
use aero_protocol::{ABI_MAJOR, abi_major};

use super::alloc_table::AllocTable;
use super::error::{PacketError, SubmitError};
use super::executor::Executor;
use super::memory::GuestMemory;

/// Caps on guest-controlled sizes and counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Live handles of all kinds.
    pub max_handles: usize,
    pub max_buffer_bytes: u64,
    pub max_texture_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_handles: 65536,
            max_buffer_bytes: 1 << 30,
            max_texture_bytes: 1 << 30,
        }
    }
}

/// What a processed stream asks of the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamSummary {
    pub packets: u32,
    pub unknown_packets: u32,
    pub presents: u32,
    /// A PRESENT/PRESENT_EX with VSYNC: the fence waits for the next vblank.
    pub vsync_present: bool,
}

/// Contexts whose pipeline bindings are kept while another context submits. Beyond this
/// the least recently used one is forgotten (a guest cannot grow the table).
pub const MAX_CONTEXTS: usize = 1024;

/// Per-context state kept by the processor (bindings) and both executors (bound outputs):
/// the current context's state plus the others' parked with the switch count of their last
/// use, so that at most [`MAX_CONTEXTS`] idle contexts are remembered (least recently
/// used forgotten first).
pub(crate) struct ContextParking<'a, T> {
    pub current: &'a mut T,
    pub context: &'a mut u32,
    pub parked: &'a mut BTreeMap<u32, (T, u64)>,
    pub switches: &'a mut u64,
}

impl<T: Default> ContextParking<'_, T> {
    /// Makes `context_id`'s state current (a context never seen starts from the default);
    /// returns the idle context forgotten to stay within [`MAX_CONTEXTS`], if any.
    pub fn switch_to(self, context_id: u32) -> Option<u32> {
        if context_id == *self.context {
            return None;
        }
        *self.switches += 1;
        let incoming = self
            .parked
            .remove(&context_id)
            .map(|(s, _)| s)
            .unwrap_or_default();
        let outgoing = std::mem::replace(self.current, incoming);
        self.parked
            .insert(*self.context, (outgoing, *self.switches));
        *self.context = context_id;
        if self.parked.len() <= MAX_CONTEXTS {
            return None;
        }
        let oldest = self
            .parked
            .iter()
            .min_by_key(|(_, (_, used))| *used)
            .map(|(c, _)| *c)?;
        self.parked.remove(&oldest);
        Some(oldest)
    }
}

/// Objects (resources, shaders, input layouts) live in one global handle namespace, but
/// pipeline bindings belong to the submitting context (`aerogpu_submit_desc.context_id`):
/// DWM and each application's device keep their own state however their submissions
/// interleave.
#[derive(Clone, Debug, Default)]
pub struct CommandProcessor {
    limits: Limits,
    objects: ObjectTable,
    /// The bindings of `context`, the context that submitted last.
    bindings: Bindings,
    context: u32,
    /// Other contexts' bindings, with the switch count of their last use.
    parked: BTreeMap<u32, (Bindings, u64)>,
    switches: u64,
}

/// Per-packet inputs shared by the handlers.
pub(crate) struct PacketCtx<'t> {
    pub table: &'t AllocTable,
}

impl CommandProcessor {
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            ..Default::default()
        }
    }

    pub fn objects(&self) -> &ObjectTable {
        &self.objects
    }

    /// The bindings of the context that submitted last.
    pub fn bindings(&self) -> &Bindings {
        &self.bindings
    }

    /// The context that submitted last.
    pub fn context(&self) -> u32 {
        self.context
    }

    /// Makes `context_id`'s bindings current (a context never seen starts with nothing
    /// bound).
    pub fn switch_context(&mut self, context_id: u32) {
        let parking = ContextParking {
            current: &mut self.bindings,
            context: &mut self.context,
            parked: &mut self.parked,
            switches: &mut self.switches,
        };
        if let Some(c) = parking.switch_to(context_id) {
            tracing::debug!(
                context = c,
                "aerogpu: forgetting the bindings of an idle context"
            );
        }
    }

    /// A destroyed object is unbound in every context.
    pub(crate) fn forget(&mut self, handle: aero_protocol::Handle) {
        self.bindings.forget(handle);
        for (b, _) in self.parked.values_mut() {
            b.forget(handle);
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Forgets every object (device reset).
    pub fn reset(&mut self) {
        self.objects.clear();
        self.bindings = Bindings::default();
        self.parked.clear();
    }

    /// Validates and executes one command stream (header + packets).
    pub fn process(
        &mut self,
        stream: &[u8],
        table: &AllocTable,
        mem: &mut dyn GuestMemory,
        executor: &mut dyn Executor,
    ) -> Result<StreamSummary, SubmitError> {
        let header = CmdStreamHeader::decode(stream)
            .map_err(|_| SubmitError::StreamHeader("shorter than its header"))?;
        if header.magic != CMD_STREAM_MAGIC {
            return Err(SubmitError::StreamHeader("bad magic"));
        }
        if abi_major(header.abi_version) != ABI_MAJOR {
            return Err(SubmitError::StreamHeader("ABI major mismatch"));
        }
        let end = header.size_bytes as usize;
        if end < CmdStreamHeader::SIZE || end > stream.len() {
            return Err(SubmitError::StreamHeader(
                "size_bytes outside the command buffer",
            ));
        }

        let ctx = PacketCtx { table };
        let mut summary = StreamSummary::default();
        let mut offset = CmdStreamHeader::SIZE;
        while offset < end {
            let remaining = stream.get(offset..end).unwrap_or(&[]);
            let fail = |opcode, kind| SubmitError::Packet {
                offset,
                opcode,
                kind,
            };
            let hdr = CmdHdr::decode(remaining).map_err(|_| fail(0, PacketError::Truncated))?;
            let size = hdr.size_bytes as usize;
            if size < CmdHdr::SIZE || !size.is_multiple_of(4) {
                return Err(fail(hdr.opcode, PacketError::BadSize(hdr.size_bytes)));
            }
            let packet = remaining
                .get(..size)
                .ok_or(fail(hdr.opcode, PacketError::Truncated))?;
            summary.packets += 1;
            match Opcode::from_u32(hdr.opcode) {
                Some(op) => {
                    let command = self
                        .validate(op, packet, &ctx)
                        .map_err(|k| fail(hdr.opcode, k))?;
                    if let Command::Present { flags, .. } = command {
                        summary.presents += 1;
                        summary.vsync_present |=
                            flags & aero_protocol::cmd::PRESENT_FLAG_VSYNC != 0;
                    }
                    executor
                        .execute(&command, mem)
                        .map_err(|e| fail(hdr.opcode, PacketError::Executor(e)))?;
                }
                None => {
                    // Newer guests may send opcodes this device does not know: skip them.
                    summary.unknown_packets += 1;
                    tracing::debug!(
                        opcode = hdr.opcode,
                        size,
                        "aerogpu: skipping unknown packet"
                    );
                }
            }
            offset += size;
        }
        // Work the executor batched is submitted with its submission; what fails then is
        // reported at the stream's end.
        executor.flush().map_err(|e| SubmitError::Packet {
            offset: end,
            opcode: 0,
            kind: PacketError::Executor(e),
        })?;
        Ok(summary)
    }

    /// Decodes and validates one packet, updating the object table and bindings.
    fn validate<'a>(
        &mut self,
        op: Opcode,
        p: &'a [u8],
        ctx: &PacketCtx<'_>,
    ) -> Result<Command<'a>, PacketError> {
        match op {
            Opcode::Nop => Ok(Command::Nop),
            Opcode::DebugMarker => Ok(Command::DebugMarker(p.get(CmdHdr::SIZE..).unwrap_or(&[]))),
            Opcode::Flush => Ok(Command::Flush),
            Opcode::CreateBuffer => self.create_buffer(p, ctx),
            Opcode::CreateTexture2d => self.create_texture2d(p, ctx),
            Opcode::DestroyResource => self.destroy_resource(p),
            Opcode::ResourceDirtyRange => self.resource_dirty_range(p, ctx),
            Opcode::UploadResource => self.upload_resource(p),
            Opcode::CopyBuffer => self.copy_buffer(p, ctx),
            Opcode::CopyTexture2d => self.copy_texture2d(p, ctx),
            Opcode::CreateShader => self.create_shader(p),
            Opcode::DestroyShader => self.destroy_shader(p),
            Opcode::BindShaders => self.bind_shaders(p),
            Opcode::SetShaderConstantsF => self.set_shader_constants(p, ConstantKind::Float),
            Opcode::SetShaderConstantsI => self.set_shader_constants(p, ConstantKind::Int),
            Opcode::SetShaderConstantsB => self.set_shader_constants(p, ConstantKind::Bool),
            Opcode::CreateInputLayout => self.create_input_layout(p),
            Opcode::DestroyInputLayout => self.destroy_input_layout(p),
            Opcode::SetInputLayout => self.set_input_layout(p),
            Opcode::SetBlendState => self.set_blend_state(p),
            Opcode::SetDepthStencilState => self.set_depth_stencil_state(p),
            Opcode::SetRasterizerState => self.set_rasterizer_state(p),
            Opcode::SetRenderState => self.set_render_state(p),
            Opcode::SetSamplerState => self.set_sampler_state(p),
            Opcode::SetTextureStageState => self.set_texture_stage_state(p),
            Opcode::SetRenderTargets => self.set_render_targets(p),
            Opcode::SetViewport => decode(p).map(Command::SetViewport),
            Opcode::SetScissor => decode(p).map(Command::SetScissor),
            Opcode::SetVertexBuffers => self.set_vertex_buffers(p),
            Opcode::SetIndexBuffer => self.set_index_buffer(p),
            Opcode::SetPrimitiveTopology => self.set_primitive_topology(p),
            Opcode::SetTexture => self.set_texture(p),
            Opcode::Clear => decode(p).map(Command::Clear),
            Opcode::Draw => self.draw(p),
            Opcode::DrawIndexed => self.draw_indexed(p),
            Opcode::ClearRects => self.clear_rects(p),
            Opcode::Present => self.present(p, ctx),
            Opcode::PresentEx => self.present_ex(p, ctx),
            Opcode::ExportSharedSurface => self.export_shared_surface(p),
            Opcode::ImportSharedSurface => self.import_shared_surface(p),
            Opcode::ReleaseSharedSurface => self.release_shared_surface(p),
        }
    }
}

/// Decodes a packet's fixed part (longer packets from newer minor versions are fine).
pub(crate) fn decode<T: aero_protocol::Wire>(p: &[u8]) -> Result<T, PacketError> {
    if p.len() < T::WIRE_SIZE {
        return Err(PacketError::TooShort);
    }
    Ok(T::read_le(p))
}

/// The `len` payload bytes that follow a fixed part of `fixed` bytes.
pub(crate) fn payload(p: &[u8], fixed: usize, len: u64) -> Result<&[u8], PacketError> {
    let len = usize::try_from(len).map_err(|_| PacketError::PayloadTruncated)?;
    let end = fixed
        .checked_add(len)
        .ok_or(PacketError::PayloadTruncated)?;
    p.get(fixed..end).ok_or(PacketError::PayloadTruncated)
}

/// Checks `[offset, offset + size)` against a resource of `resource_size` bytes.
pub(crate) fn check_range(offset: u64, size: u64, resource_size: u64) -> Result<(), PacketError> {
    match offset.checked_add(size) {
        Some(end) if end <= resource_size => Ok(()),
        _ => Err(PacketError::RangeOutOfBounds {
            offset,
            size,
            resource_size,
        }),
    }
}

pub(crate) fn shader_stage(value: u32) -> Result<aero_protocol::cmd::ShaderStage, PacketError> {
    aero_protocol::cmd::ShaderStage::from_u32(value).ok_or(PacketError::InvalidValue {
        what: "shader stage",
        value: value.into(),
    })
}
