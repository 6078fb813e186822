//! Batched draws: consecutive draws into the same attachments are recorded into one render
//! pass, and every pass until the next flush point into one command encoder, submitted
//! once (issue 17, executor speed). A submission and a render pass per draw cost lavapipe
//! a full load and store of the targets each time; a DWM frame has 64 draws.
//!
//! What keeps a batch correct:
//! - Shader constants: each draw's constant blocks are appended to a CPU copy of one
//!   uniform arena (a block equal to the previous draw's is shared) and bound with dynamic
//!   offsets; the arena is written just before the batch is submitted, so every draw
//!   reads its own constants although `queue.write_buffer` runs ahead of the encoder.
//! - Other queue writes (uploads, dirty ranges, clears) also run ahead of the encoder, so
//!   the executor flushes before writing a texture the batch renders to or samples, or a
//!   buffer range a batched draw reads ([`Batch::uses_texture`], [`Batch::reads_buffer`]).
//!   Writes elsewhere (the UMD's upload ring never rewrites bytes a submission already
//!   used) keep the batch going.
//! - Every other command that reads or orders GPU work (copies, present, write-back,
//!   read-back, destroy, end of a submission) flushes first.
//!
//! Errors: device-object creation (shaders, pipelines, bind groups) is checked per draw as
//! before; what wgpu only validates when a pass ends or the encoder is finished is caught
//! by an error scope around that and reported by the command that flushed the batch (or
//! the end of the submission), naming how many draws the batch held. A failed batch
//! loses all of its draws (wgpu invalidates the whole encoder).

use std::cell::{RefCell, RefMut};
use std::collections::{HashMap, HashSet};

use crate::aerogpu::processor::ResourceId;

/// Bytes of the uniform arena: ~480 draws that each change every constant block, far
/// more when constants repeat. A draw that does not fit flushes the batch first.
const ARENA_BYTES: u64 = 4 << 20;
/// Constant blocks bound with dynamic offsets (group 0, bindings 0..BLOCKS: VS float,
/// VS int/bool, the half-pixel fix-up, PS float, PS int/bool, the bump environment).
pub const BLOCKS: usize = 6;
/// Bytes of each block: group 0's binding sizes, and the length every draw's block must
/// have (a shorter block at the arena's end would put its binding past the buffer, which
/// wgpu only reports when the pass ends, failing the whole batch).
pub const BLOCK_SIZES: [usize; BLOCKS] = [
    4096,
    crate::aerogpu::d3d9::IntBoolConstants::SIZE,
    16,
    4096,
    crate::aerogpu::d3d9::IntBoolConstants::SIZE,
    256,
];

/// Why a draw's constants could not be placed in the arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConstantsError {
    /// The arena is full: flush, then ask again.
    Full,
    /// Block `block` is `len` bytes instead of its binding's size.
    Size { block: usize, len: usize },
}

/// The attachments of a render pass: draws with the same ones share it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassKey {
    pub colors: Vec<Option<ResourceId>>,
    pub depth: Option<ResourceId>,
}

#[derive(Default)]
struct Pending {
    encoder: Option<wgpu::CommandEncoder>,
    pass: Option<(PassKey, wgpu::RenderPass<'static>)>,
    /// The arena's bytes for this batch and where each block kind was last appended.
    uniforms: Vec<u8>,
    last: [Option<usize>; BLOCKS],
    /// Textures the batch renders to or samples.
    textures: HashSet<ResourceId>,
    /// Buffer byte ranges batched draws read.
    buffers: HashMap<ResourceId, Vec<(u64, u64)>>,
    draws: u32,
    /// The first error of a pass ended before the flush.
    failed: Option<String>,
}

/// The batch being recorded (interior mutability: the executor's read and write paths,
/// which take `&self`, flush it).
pub struct Batch {
    device: wgpu::Device,
    queue: wgpu::Queue,
    arena: wgpu::Buffer,
    align: usize,
    pending: RefCell<Pending>,
    /// Batches submitted and draws they held (for benchmarks and tests).
    pub stats: RefCell<BatchStats>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchStats {
    pub submits: u64,
    pub passes: u64,
    pub draws: u64,
}

impl Batch {
    pub fn new(device: wgpu::Device, queue: wgpu::Queue) -> Self {
        let arena = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("aerogpu constants arena"),
            size: ARENA_BYTES,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let align = device.limits().min_uniform_buffer_offset_alignment.max(16) as usize;
        Self {
            device,
            queue,
            arena,
            align,
            pending: RefCell::default(),
            stats: RefCell::default(),
        }
    }

    /// The buffer group 0's dynamic bindings point into.
    pub fn arena(&self) -> &wgpu::Buffer {
        &self.arena
    }

    pub fn is_empty(&self) -> bool {
        self.pending.borrow().encoder.is_none()
    }

    /// Dynamic offsets of a draw's constant blocks, appending those that differ from the
    /// previous draw's.
    pub fn constants(&self, blocks: [&[u8]; BLOCKS]) -> Result<[u32; BLOCKS], ConstantsError> {
        if let Some((block, b)) = blocks
            .iter()
            .enumerate()
            .find(|(i, b)| b.len() != BLOCK_SIZES[*i])
        {
            return Err(ConstantsError::Size {
                block,
                len: b.len(),
            });
        }
        let mut p = self.pending.borrow_mut();
        let p = &mut *p;
        let mut offsets = [0u32; BLOCKS];
        let mut end = p.uniforms.len();
        // Where each block that differs from the previous draw's goes (no allocation: a
        // batch places hundreds of draws).
        let mut fresh: [Option<usize>; BLOCKS] = [None; BLOCKS];
        for (i, block) in blocks.iter().enumerate() {
            let reuse = p.last[i].filter(|&at| p.uniforms.get(at..at + block.len()) == Some(block));
            offsets[i] = match reuse {
                Some(at) => at as u32,
                None => {
                    let at = end.next_multiple_of(self.align);
                    end = at + block.len();
                    fresh[i] = Some(at);
                    at as u32
                }
            };
        }
        if end as u64 > ARENA_BYTES {
            return Err(ConstantsError::Full);
        }
        for (i, at) in fresh.iter().enumerate() {
            if let Some(at) = *at {
                p.uniforms.resize(at, 0);
                p.uniforms.extend_from_slice(blocks[i]);
                p.last[i] = Some(at);
            }
        }
        Ok(offsets)
    }

    /// Records `commands` into the batch's encoder between render passes (the current
    /// pass ends; the next draw begins a new one): copies that must run after the draws
    /// batched so far and before the next.
    pub fn between_passes(&self, commands: impl FnOnce(&mut wgpu::CommandEncoder)) {
        let mut p = self.pending.borrow_mut();
        self.end_pass(&mut p);
        commands(self.encoder(&mut p));
    }

    /// The batch's encoder, created by the first thing recorded.
    fn encoder<'p>(&self, p: &'p mut Pending) -> &'p mut wgpu::CommandEncoder {
        p.encoder.get_or_insert_with(|| {
            self.device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("aerogpu batch"),
                })
        })
    }

    /// The render pass for `key`, begun (and the previous one ended) when the batch has no
    /// pass with these attachments. Attachments load and store: draws compose with
    /// whatever clears, copies and earlier batches left.
    pub fn pass(
        &self,
        key: PassKey,
        colors: &[Option<&wgpu::TextureView>],
        depth: Option<(&wgpu::TextureView, wgpu::TextureFormat)>,
    ) -> RefMut<'_, wgpu::RenderPass<'static>> {
        let mut p = self.pending.borrow_mut();
        if p.pass.as_ref().is_none_or(|(k, _)| *k != key) {
            self.end_pass(&mut p);
            let encoder = self.encoder(&mut p);
            let load = wgpu::Operations {
                load: wgpu::LoadOp::Load,
                store: wgpu::StoreOp::Store,
            };
            let attachments: Vec<Option<wgpu::RenderPassColorAttachment>> = colors
                .iter()
                .map(|v| {
                    v.map(|view| wgpu::RenderPassColorAttachment {
                        view,
                        depth_slice: None,
                        resolve_target: None,
                        ops: load,
                    })
                })
                .collect();
            let pass = encoder
                .begin_render_pass(&wgpu::RenderPassDescriptor {
                    label: Some("aerogpu draws"),
                    color_attachments: &attachments,
                    depth_stencil_attachment: depth.map(|(view, format)| {
                        wgpu::RenderPassDepthStencilAttachment {
                            view,
                            depth_ops: format.has_depth_aspect().then_some(wgpu::Operations {
                                load: wgpu::LoadOp::Load,
                                store: wgpu::StoreOp::Store,
                            }),
                            stencil_ops: format.has_stencil_aspect().then_some(wgpu::Operations {
                                load: wgpu::LoadOp::Load,
                                store: wgpu::StoreOp::Store,
                            }),
                        }
                    }),
                    timestamp_writes: None,
                    occlusion_query_set: None,
                    multiview_mask: None,
                })
                .forget_lifetime();
            p.textures.extend(key.colors.iter().flatten().copied());
            p.textures.extend(key.depth);
            p.pass = Some((key, pass));
            self.stats.borrow_mut().passes += 1;
        }
        RefMut::map(p, |p| match &mut p.pass {
            Some((_, pass)) => pass,
            None => unreachable!("a pass was begun above"),
        })
    }

    /// A batched draw samples `id`.
    pub fn sample(&self, id: ResourceId) {
        self.pending.borrow_mut().textures.insert(id);
    }

    /// A batched draw reads bytes `[start, end)` of buffer `id`.
    pub fn read(&self, id: ResourceId, start: u64, end: u64) {
        let mut p = self.pending.borrow_mut();
        let ranges = p.buffers.entry(id).or_default();
        // Extend an adjacent or overlapping range (the upload ring reads ascending ranges).
        match ranges.last_mut() {
            Some(last) if start <= last.1 && end >= last.0 => {
                *last = (last.0.min(start), last.1.max(end));
            }
            _ => ranges.push((start, end)),
        }
    }

    /// A draw was recorded.
    pub fn recorded(&self) {
        self.pending.borrow_mut().draws += 1;
        self.stats.borrow_mut().draws += 1;
    }

    pub fn uses_texture(&self, id: ResourceId) -> bool {
        self.pending.borrow().textures.contains(&id)
    }

    /// Whether a batched draw reads any of bytes `[start, end)` of buffer `id`.
    pub fn reads_buffer(&self, id: ResourceId, start: u64, end: u64) -> bool {
        self.pending
            .borrow()
            .buffers
            .get(&id)
            .is_some_and(|r| r.iter().any(|&(s, e)| s < end && start < e))
    }

    /// Ends the current pass, keeping the first error wgpu reports for it.
    fn end_pass(&self, p: &mut Pending) {
        if let Some((_, pass)) = p.pass.take() {
            let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
            drop(pass);
            if let Some(e) = pollster::block_on(scope.pop()) {
                p.failed.get_or_insert(e.to_string());
            }
        }
    }

    /// Submits the batch (nothing when empty). Errors: what wgpu reported for its passes
    /// or the encoder.
    pub fn flush(&self) -> Result<(), String> {
        let mut p = self.pending.borrow_mut();
        if p.encoder.is_none() {
            return Ok(());
        }
        self.end_pass(&mut p);
        let pending = std::mem::take(&mut *p);
        drop(p);
        let Some(encoder) = pending.encoder else {
            return Ok(());
        };
        if !pending.uniforms.is_empty() {
            self.queue.write_buffer(&self.arena, 0, &pending.uniforms);
        }
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let commands = encoder.finish();
        self.queue.submit([commands]);
        let error = pollster::block_on(scope.pop());
        self.stats.borrow_mut().submits += 1;
        match pending.failed.or(error.map(|e| e.to_string())) {
            None => Ok(()),
            Some(e) => Err(format!("a batch of {} draws failed: {e}", pending.draws)),
        }
    }

    /// Drops the batch unsubmitted (device reset).
    pub fn discard(&self) {
        let mut p = self.pending.borrow_mut();
        if let Some((_, pass)) = p.pass.take() {
            let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
            drop(pass);
            drop(scope);
        }
        *p = Pending::default();
    }
}

#[cfg(test)]
#[path = "batch_tests.rs"]
mod tests;
