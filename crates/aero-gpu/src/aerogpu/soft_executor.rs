//! The CPU executor: AeroGPU's fallback when there is no GPU adapter, and the reference the
//! GPU executor is tested against. It keeps a host copy of every resource and performs
//! uploads, copies (with write-back), clears and presents; it does not rasterise (DRAW and
//! DRAW_INDEXED are counted and skipped, see [`SoftStats::draws_skipped`]).
//!
//! Host copies use the guest backing layout of `aerogpu_cmd.h` byte for byte (per layer,
//! mips back to back; mip 0 rows `row_pitch_bytes` apart; block formats as 4x4 blocks),
//! so uploads, dirty ranges and write-backs are plain byte copies at the same offsets.
//!
//! Presents (the rule in `aerogpu_cmd.h` next to PRESENT): PRESENT shows the submitting
//! context's render target 0.
//! - Guest-backed target: the bytes the host changed since guest memory last matched
//!   (clears, copies without write-back, uploads) are written into its backing before the
//!   command returns; scanout 0 then shows guest memory as usual. Bytes the host did not
//!   change are left alone, so a guest that draws with the CPU and presents keeps its
//!   pixels. The write-back ignores READONLY: it carries results of earlier commands that
//!   did write the target (the UMD lists the presented surface read-only because PRESENT
//!   itself renders nothing).
//! - Host-only target: its pixels become the presented frame
//!   ([`SoftExecutor::presented_frame`]), shown instead of guest memory while scanout 0 is
//!   enabled, until the guest changes a SCANOUT0 register or presents a guest-backed
//!   target.
//!
//! CLEAR and CLEAR_RECTS ignore the viewport and scissor, as `aerogpu_cmd.h` says: the UMD
//! applies D3D9's Clear rules (rectangles cut to the viewport, and to the scissor while
//! D3DRS_SCISSORTESTENABLE is set) before it sends them, and sends CLEAR only when one
//! rectangle covers every target.
//!
//! Formats: every `aerogpu_format`. D24_UNORM_S8_UINT is D3D9's D24S8 word (depth in
//! bits 31..8, stencil in bits 7..0, what a guest locking the surface sees). There are no
//! sRGB formats in the ABI: colours are stored as given.
//!
//! Memory stays bounded: each resource is capped by the processor's `Limits`, the sum of
//! host copies by [`SoftExecutorConfig::max_host_bytes`] (exceeding it is an executor
//! error: the submission ends, the device keeps running).

use std::collections::{BTreeMap, HashMap};

use aero_protocol::cmd;
use aero_protocol::pci::Format;
use thiserror::Error;

use super::executor::{Executor, SubmissionInfo};
use super::executor_common::{
    self as common, Clipped, GuestSync, Outputs, PresentAction, Rect, ResourceCommands, TexelFill,
    alloc_zeroed, range,
};
use super::memory::{GuestMemory, GuestMemoryError};
use super::processor::{
    Command, ContextParking, ResolvedBacking, ResourceDesc, ResourceId, TextureDesc,
};
use crate::Frame;

/// Default cap on the host copies of all resources together.
pub const DEFAULT_MAX_HOST_BYTES: u64 = 2 << 30;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoftExecutorConfig {
    /// Cap on the host copies of all live resources, in bytes.
    pub max_host_bytes: u64,
}

impl Default for SoftExecutorConfig {
    fn default() -> Self {
        Self {
            max_host_bytes: DEFAULT_MAX_HOST_BYTES,
        }
    }
}

/// What the executor did (for tests and logs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SoftStats {
    pub submissions: u64,
    pub commands: u64,
    /// DRAW / DRAW_INDEXED skipped: 3D draws need the GPU executor.
    pub draws_skipped: u64,
    pub presents: u64,
    /// Presents of a host-only render target (shown as the presented frame).
    pub host_presents: u64,
    pub clears: u64,
    pub copies: u64,
    /// Bytes read from guest memory (create, rebind, dirty ranges).
    pub uploaded_bytes: u64,
    /// Bytes written into guest memory (COPY_* write-back, presents).
    pub written_back_bytes: u64,
}

/// Why the executor failed a command (reported to the guest as AEROGPU_ERROR_BACKEND).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SoftError {
    #[error("resource {0} is unknown to the executor")]
    UnknownResource(ResourceId),
    #[error("resource {0} is not a texture")]
    NotATexture(ResourceId),
    #[error(
        "host memory cap: {requested} more bytes with {in_use} of {cap} in use (SoftExecutorConfig::max_host_bytes)"
    )]
    HostMemory {
        requested: u64,
        in_use: u64,
        cap: u64,
    },
    #[error("the host could not allocate {0} bytes")]
    Allocation(u64),
    #[error(transparent)]
    Memory(#[from] GuestMemoryError),
    #[error("copy of a block-compressed texture not on whole blocks")]
    BlockAlignment,
    #[error("{what} is not supported for format {format:?}")]
    Format { what: &'static str, format: Format },
    #[error("presented surface {0}x{1} is larger than the scanout limit")]
    PresentTooLarge(u32, u32),
    #[error("range outside the host copy of resource {0}")]
    OutOfRange(ResourceId),
}

struct HostResource {
    desc: ResourceDesc,
    bytes: Vec<u8>,
    guest: GuestSync,
}

/// The CPU executor (see the module documentation).
pub struct SoftExecutor {
    config: SoftExecutorConfig,
    resources: HashMap<ResourceId, HostResource>,
    host_bytes: u64,
    state: Outputs,
    context: u32,
    /// Other contexts' outputs, with the switch count of their last use.
    parked: BTreeMap<u32, (Outputs, u64)>,
    switches: u64,
    presented: Option<Frame>,
    /// Counts host-copy presents, across resets ([`Executor::presented_generation`]).
    present_generation: u64,
    stats: SoftStats,
    warned_draws: bool,
}

impl Default for SoftExecutor {
    fn default() -> Self {
        Self::new(SoftExecutorConfig::default())
    }
}

impl core::fmt::Debug for SoftExecutor {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SoftExecutor")
            .field("resources", &self.resources.len())
            .field("host_bytes", &self.host_bytes)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl SoftExecutor {
    pub fn new(config: SoftExecutorConfig) -> Self {
        Self {
            config,
            resources: HashMap::new(),
            host_bytes: 0,
            state: Outputs::default(),
            context: 0,
            parked: BTreeMap::new(),
            switches: 0,
            presented: None,
            present_generation: 0,
            stats: SoftStats::default(),
            warned_draws: false,
        }
    }

    /// The frame scanout 0 shows instead of guest memory, if a host-only target was
    /// presented (see [`Executor::presented_generation`]).
    pub fn presented_frame(&self) -> Option<&Frame> {
        self.presented.as_ref()
    }

    pub fn stats(&self) -> SoftStats {
        self.stats
    }

    /// Bytes of host copies in use.
    pub fn host_bytes(&self) -> u64 {
        self.host_bytes
    }

    pub fn resource_count(&self) -> usize {
        self.resources.len()
    }

    /// The host copy of a resource (guest backing layout), for tests and readbacks.
    pub fn resource_bytes(&self, id: ResourceId) -> Option<&[u8]> {
        self.resources.get(&id).map(|r| r.bytes.as_slice())
    }

    fn get(&self, id: ResourceId) -> Result<&HostResource, SoftError> {
        self.resources
            .get(&id)
            .ok_or(SoftError::UnknownResource(id))
    }

    fn get_mut(&mut self, id: ResourceId) -> Result<&mut HostResource, SoftError> {
        self.resources
            .get_mut(&id)
            .ok_or(SoftError::UnknownResource(id))
    }

    fn switch_context(&mut self, context_id: u32) {
        ContextParking {
            current: &mut self.state,
            context: &mut self.context,
            parked: &mut self.parked,
            switches: &mut self.switches,
        }
        .switch_to(context_id);
    }

    fn texture_desc(&self, id: ResourceId) -> Result<TextureDesc, SoftError> {
        match self.get(id)?.desc {
            ResourceDesc::Texture2d(d) => Ok(d),
            ResourceDesc::Buffer(_) => Err(SoftError::NotATexture(id)),
        }
    }

    /// After a host change of `ranges`: write them back now (`writeback`) or remember them.
    fn host_changed(
        &mut self,
        id: ResourceId,
        ranges: Vec<(u64, u64)>,
        writeback: Option<ResolvedBacking>,
        mem: &mut dyn GuestMemory,
    ) -> Result<(), SoftError> {
        let r = self
            .resources
            .get_mut(&id)
            .ok_or(SoftError::UnknownResource(id))?;
        if let Some(b) = writeback {
            let n = common::write_ranges(&r.bytes, &b, &ranges, mem)?;
            r.guest.written_back(ranges);
            self.stats.written_back_bytes += n;
        } else {
            r.guest.host_wrote(ranges);
        }
        Ok(())
    }

    /// The presented frame of a target: mip 0 of layer 0 as RGBA8.
    fn frame_of(&self, id: ResourceId) -> Result<Frame, SoftError> {
        let desc = self.texture_desc(id)?;
        let sub = common::presentable(&desc, id)?;
        let r = self.get(id)?;
        let row_len = u64::from(desc.width) * u64::from(sub.bytes_per_block);
        let rows = (0..desc.height)
            .map(|y| {
                let start = sub.offset + u64::from(y) * sub.pitch;
                range(start, row_len, r.bytes.len(), id).map(|span| &r.bytes[span])
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(common::frame_from_rows(&desc, &sub, rows.into_iter()))
    }

    fn run(&mut self, command: &Command<'_>, mem: &mut dyn GuestMemory) -> Result<(), SoftError> {
        common::dispatch(self, command, mem)
    }
}

impl ResourceCommands for SoftExecutor {
    type Error = SoftError;

    fn outputs_mut(&mut self) -> &mut Outputs {
        &mut self.state
    }

    fn texture_format(&self, id: ResourceId) -> Option<Format> {
        self.texture_desc(id).ok().map(|d| d.format)
    }

    fn create(
        &mut self,
        id: ResourceId,
        desc: ResourceDesc,
        size_bytes: u64,
        backing: Option<ResolvedBacking>,
        mem: &dyn GuestMemory,
    ) -> Result<(), SoftError> {
        if let Some(r) = self.resources.get_mut(&id) {
            // Rebind: same properties, new backing; guest memory is the content again.
            r.guest = GuestSync::new(backing.is_some());
            if let Some(b) = backing {
                mem.read(b.gpa, &mut r.bytes)?;
                self.stats.uploaded_bytes += r.bytes.len() as u64;
            }
            return Ok(());
        }
        common::check_host_cap(self.config.max_host_bytes, self.host_bytes, size_bytes)?;
        let mut bytes = alloc_zeroed(size_bytes)?;
        if let Some(b) = backing {
            mem.read(b.gpa, &mut bytes)?;
            self.stats.uploaded_bytes += size_bytes;
        }
        self.host_bytes += size_bytes;
        self.resources.insert(
            id,
            HostResource {
                desc,
                bytes,
                guest: GuestSync::new(backing.is_some()),
            },
        );
        Ok(())
    }

    fn unbind(&mut self, id: ResourceId) {
        common::unbind_everywhere(&mut self.state, &mut self.parked, id);
    }

    fn destroy(&mut self, id: ResourceId) {
        if let Some(r) = self.resources.remove(&id) {
            self.host_bytes = self.host_bytes.saturating_sub(r.bytes.len() as u64);
        }
    }

    fn dirty_range(
        &mut self,
        id: ResourceId,
        offset: u64,
        size: u64,
        backing: Option<ResolvedBacking>,
        mem: &dyn GuestMemory,
    ) -> Result<(), SoftError> {
        let Some(b) = backing else {
            return Ok(()); // host-allocated: nothing to read (the processor logged it)
        };
        let r = self.get_mut(id)?;
        let span = range(offset, size, r.bytes.len(), id)?;
        mem.read(b.gpa.wrapping_add(offset), &mut r.bytes[span])?;
        r.guest.read_in(offset, offset.saturating_add(size));
        self.stats.uploaded_bytes += size;
        Ok(())
    }

    fn upload(&mut self, id: ResourceId, offset: u64, data: &[u8]) -> Result<(), SoftError> {
        let r = self.get_mut(id)?;
        let span = range(offset, data.len() as u64, r.bytes.len(), id)?;
        r.bytes[span].copy_from_slice(data);
        r.guest.host_wrote([(offset, offset + data.len() as u64)]);
        Ok(())
    }

    fn copy_buffer(
        &mut self,
        dst: ResourceId,
        src: ResourceId,
        (dst_offset, src_offset, size): (u64, u64, u64),
        writeback: Option<ResolvedBacking>,
        mem: &mut dyn GuestMemory,
    ) -> Result<(), SoftError> {
        let src_len = self.get(src)?.bytes.len();
        let from = range(src_offset, size, src_len, src)?;
        let dst_len = self.get(dst)?.bytes.len();
        let to = range(dst_offset, size, dst_len, dst)?;
        if src == dst {
            self.get_mut(dst)?.bytes.copy_within(from, to.start);
        } else {
            let mut d = self
                .resources
                .remove(&dst)
                .ok_or(SoftError::UnknownResource(dst))?;
            let copied = self
                .get(src)
                .map(|s| d.bytes[to].copy_from_slice(&s.bytes[from]));
            self.resources.insert(dst, d);
            copied?;
        }
        self.stats.copies += 1;
        self.host_changed(dst, vec![(dst_offset, dst_offset + size)], writeback, mem)
    }

    fn copy_texture(
        &mut self,
        dst: ResourceId,
        src: ResourceId,
        c: &cmd::CopyTexture2d,
        writeback: Option<ResolvedBacking>,
        mem: &mut dyn GuestMemory,
    ) -> Result<(), SoftError> {
        let (sd, dd) = (self.texture_desc(src)?, self.texture_desc(dst)?);
        let Some(plan) = common::texture_copy(&sd, &dd, c, dst)? else {
            return Ok(());
        };
        let (pairs, row_bytes) = (&plan.pairs, plan.row_bytes);
        if src == dst {
            let r = self.get_mut(dst)?;
            let len = r.bytes.len();
            // Rows moving down in the same subresource are copied bottom-up.
            let ordered: Vec<_> = match pairs.first() {
                Some(&(f, t)) if t > f => pairs.iter().rev().copied().collect(),
                _ => pairs.clone(),
            };
            for (f, t) in ordered {
                let from = range(f, row_bytes, len, src)?;
                let to = range(t, row_bytes, len, dst)?;
                r.bytes.copy_within(from, to.start);
            }
        } else {
            let mut dr = self
                .resources
                .remove(&dst)
                .ok_or(SoftError::UnknownResource(dst))?;
            let result = (|| -> Result<(), SoftError> {
                let sr = self.get(src)?;
                for &(f, t) in pairs {
                    let from = range(f, row_bytes, sr.bytes.len(), src)?;
                    let to = range(t, row_bytes, dr.bytes.len(), dst)?;
                    dr.bytes[to].copy_from_slice(&sr.bytes[from]);
                }
                Ok(())
            })();
            self.resources.insert(dst, dr);
            result?;
        }
        self.stats.copies += 1;
        let ranges = pairs.iter().map(|&(_, t)| (t, t + row_bytes)).collect();
        self.host_changed(dst, ranges, writeback, mem)
    }

    fn fill(
        &mut self,
        id: ResourceId,
        rects: &[Rect],
        fill: &TexelFill,
        mem: &mut dyn GuestMemory,
    ) -> Result<(), SoftError> {
        let desc = self.texture_desc(id)?;
        let sub = common::subresource(&desc, 0, 0).ok_or(SoftError::OutOfRange(id))?;
        let bpp = sub.bytes_per_block as usize;
        // One row of a constant texel, copied into each row (the common case).
        let row_pattern = if fill.is_constant() {
            fill.value.repeat(sub.width as usize)
        } else {
            Vec::new()
        };
        for &rect in rects {
            let Some(clipped) = Clipped::new(&sub, rect) else {
                continue;
            };
            let changed = clipped.row_ranges(&sub);
            let r = self.get_mut(id)?;
            let len = r.bytes.len();
            for &(start, end) in &changed {
                let dst = &mut r.bytes[range(start, end - start, len, id)?];
                if fill.is_constant() {
                    dst.copy_from_slice(&row_pattern[..dst.len()]);
                } else {
                    dst.chunks_exact_mut(bpp).for_each(|px| fill.apply(px));
                }
            }
            // Per rectangle: the pending list stays one rectangle's rows long.
            self.host_changed(id, changed, None, mem)?;
        }
        Ok(())
    }

    fn count_clear(&mut self) {
        self.stats.clears += 1;
    }

    fn skip_draw(&mut self) {
        if !self.warned_draws {
            self.warned_draws = true;
            tracing::warn!("aerogpu: 3D draws need the GPU executor; the CPU executor skips them");
        }
        self.stats.draws_skipped += 1;
    }

    fn present(
        &mut self,
        target: Option<ResourceId>,
        backing: Option<ResolvedBacking>,
        mem: &mut dyn GuestMemory,
    ) -> Result<(), SoftError> {
        self.stats.presents += 1;
        let Some(id) = target else {
            tracing::debug!("aerogpu soft executor: PRESENT with no render target bound");
            return Ok(());
        };
        let r = self.get(id)?;
        match r.guest.present_action(id, backing) {
            PresentAction::ShowHostCopy => {
                self.presented = Some(self.frame_of(id)?);
                self.stats.host_presents += 1;
                self.present_generation += 1;
            }
            PresentAction::GuestMatches => self.presented = None,
            PresentAction::WriteBack(b) => {
                self.presented = None;
                let r = self.get_mut(id)?;
                let ranges = r.guest.take_dirty();
                let n = common::write_ranges(&r.bytes, &b, &ranges, mem)?;
                self.stats.written_back_bytes += n;
            }
        }
        Ok(())
    }
}

impl Executor for SoftExecutor {
    fn begin_submission(&mut self, info: &SubmissionInfo) {
        self.stats.submissions += 1;
        self.switch_context(info.context_id);
    }

    fn execute(&mut self, command: &Command<'_>, mem: &mut dyn GuestMemory) -> Result<(), String> {
        self.stats.commands += 1;
        self.run(command, mem).map_err(|e| e.to_string())
    }

    fn reset(&mut self) {
        let generation = self.present_generation;
        *self = Self::new(self.config);
        self.present_generation = generation;
    }

    fn presented_generation(&self) -> Option<u64> {
        self.presented.is_some().then_some(self.present_generation)
    }

    fn read_presented(&self, frame: &mut Frame) -> bool {
        match &self.presented {
            Some(p) => {
                frame.clone_from(p);
                true
            }
            None => false,
        }
    }

    fn scanout_reprogrammed(&mut self) {
        self.presented = None;
    }
}
