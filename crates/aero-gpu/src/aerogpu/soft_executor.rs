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
//!   ([`Executor::presented_frame`]), shown instead of guest memory while scanout 0 is
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

use aero_protocol::cmd::{self, CLEAR_COLOR, CLEAR_DEPTH, CLEAR_STENCIL};
use aero_protocol::pci::Format;
use thiserror::Error;

use super::executor::{Executor, SubmissionInfo};
use super::memory::{GuestMemory, GuestMemoryError};
use super::processor::{
    Command, ContextParking, ResolvedBacking, ResourceDesc, ResourceId, TextureDesc,
    clear_rect_records,
};
use super::scanout::MAX_SCANOUT_DIM;
use crate::Frame;

/// Default cap on the host copies of all resources together.
pub const DEFAULT_MAX_HOST_BYTES: u64 = 2 << 30;

/// D3DRS_SCISSORTESTENABLE (tracked; CLEAR and CLEAR_RECTS ignore the scissor by ABI,
/// the UMD cuts D3D9 Clear rectangles to it).
const RS_SCISSORTESTENABLE: u32 = 174;

/// Dirty ranges kept per resource before they collapse into one covering range (one
/// partial-width rectangle of the tallest texture stays exact).
const MAX_DIRTY_RANGES: usize = cmd::MAX_TEXTURE_DIM as usize;

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

/// Sorted, disjoint byte ranges `[start, end)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DirtyRanges(pub(crate) Vec<(u64, u64)>);

impl DirtyRanges {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sorted, disjoint form of `ranges` (overlapping and adjacent ones merged).
    fn normalized(mut ranges: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
        ranges.retain(|(s, e)| s < e);
        ranges.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
        for (s, e) in ranges {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        merged
    }

    /// Adds ranges (any order).
    pub(crate) fn add(&mut self, ranges: impl IntoIterator<Item = (u64, u64)>) {
        let mut all = std::mem::take(&mut self.0);
        all.extend(ranges);
        let mut merged = Self::normalized(all);
        // Bounded whatever the guest does: too many pieces become one covering range.
        if merged.len() > MAX_DIRTY_RANGES
            && let (Some(first), Some(last)) = (merged.first(), merged.last())
        {
            merged = vec![(first.0, last.1)];
        }
        self.0 = merged;
    }

    /// Removes `[start, end)` (guest memory matches the host copy there again).
    pub(crate) fn remove(&mut self, start: u64, end: u64) {
        self.remove_all(vec![(start, end)]);
    }

    /// Removes every range of `cut` (any order), in one pass over both lists.
    pub(crate) fn remove_all(&mut self, cut: Vec<(u64, u64)>) {
        let cut = Self::normalized(cut);
        let mut out = Vec::with_capacity(self.0.len() + 1);
        let mut c = cut.iter().peekable();
        for &(mut s, e) in &self.0 {
            // Cuts ending before this range cannot touch later ones either.
            while c.peek().is_some_and(|&&(_, ce)| ce <= s) {
                c.next();
            }
            let mut rest = c.clone();
            while let Some(&&(cs, ce)) = rest.peek() {
                if cs >= e {
                    break;
                }
                if cs > s {
                    out.push((s, cs));
                }
                s = s.max(ce);
                if ce >= e {
                    break;
                }
                rest.next();
            }
            if s < e {
                out.push((s, e));
            }
        }
        self.0 = out;
    }
}

struct HostResource {
    desc: ResourceDesc,
    bytes: Vec<u8>,
    guest_backed: bool,
    /// Bytes the host changed since guest memory last matched (guest-backed only).
    dirty: DirtyRanges,
}

/// Where one mip of one layer lives in the backing layout, in blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Subresource {
    pub(crate) offset: u64,
    pub(crate) pitch: u64,
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) block_width: u32,
    pub(crate) block_height: u32,
    pub(crate) bytes_per_block: u32,
}

/// The layout `aerogpu_cmd.h` documents (and the processor's `texture_size` sizes).
pub(crate) fn subresource(desc: &TextureDesc, mip: u32, layer: u32) -> Option<Subresource> {
    let layout = desc.format.block_layout()?;
    if mip >= desc.mip_levels || layer >= desc.array_layers {
        return None;
    }
    let mut layer_bytes = 0u64;
    let mut found = None;
    for m in 0..desc.mip_levels {
        let w = (desc.width >> m).max(1);
        let h = (desc.height >> m).max(1);
        let tight = u64::from(w.div_ceil(layout.block_width)) * u64::from(layout.bytes_per_block);
        let pitch = if m == 0 && desc.row_pitch_bytes != 0 {
            u64::from(desc.row_pitch_bytes)
        } else {
            tight
        };
        if m == mip {
            found = Some(Subresource {
                offset: layer_bytes,
                pitch,
                width: w,
                height: h,
                block_width: layout.block_width,
                block_height: layout.block_height,
                bytes_per_block: layout.bytes_per_block,
            });
        }
        layer_bytes += pitch * u64::from(h.div_ceil(layout.block_height));
    }
    let mut sub = found?;
    sub.offset += layer_bytes * u64::from(layer);
    Some(sub)
}

/// The bound outputs of one context (the processor keeps contexts apart the same way).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct OutputState {
    colors: [Option<ResourceId>; 8],
    depth_stencil: Option<ResourceId>,
    viewport: Option<cmd::SetViewport>,
    scissor: Option<cmd::SetScissor>,
    scissor_test: bool,
}

/// A clear's values (CLEAR and CLEAR_RECTS).
#[derive(Clone, Copy, Debug)]
struct ClearValues {
    flags: u32,
    rgba: [f32; 4],
    depth: f32,
    stencil: u8,
}

/// A rectangle in pixels (x, y, width, height).
type Rect = (u32, u32, u32, u32);

/// What a fill writes into each texel.
#[derive(Clone, Copy)]
enum Texel<'a> {
    Constant(&'a [u8]),
    /// `update(old, new)`.
    Update(&'a dyn Fn(&[u8], &mut [u8])),
}

/// The CPU executor (see the module documentation).
pub struct SoftExecutor {
    config: SoftExecutorConfig,
    resources: HashMap<ResourceId, HostResource>,
    host_bytes: u64,
    state: OutputState,
    context: u32,
    /// Other contexts' outputs, with the switch count of their last use.
    parked: BTreeMap<u32, (OutputState, u64)>,
    switches: u64,
    presented: Option<Frame>,
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

pub(crate) fn alloc_zeroed(len: u64) -> Result<Vec<u8>, SoftError> {
    let n = usize::try_from(len).map_err(|_| SoftError::Allocation(len))?;
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| SoftError::Allocation(len))?;
    v.resize(n, 0);
    Ok(v)
}

pub(crate) fn range(
    offset: u64,
    len: u64,
    total: usize,
    id: ResourceId,
) -> Result<core::ops::Range<usize>, SoftError> {
    let start = usize::try_from(offset).map_err(|_| SoftError::OutOfRange(id))?;
    let len = usize::try_from(len).map_err(|_| SoftError::OutOfRange(id))?;
    match start.checked_add(len) {
        Some(end) if end <= total => Ok(start..end),
        _ => Err(SoftError::OutOfRange(id)),
    }
}

pub(crate) fn unorm(c: f32, max: u32) -> u32 {
    // In f64: 24-bit maxima do not fit an f32 product. NaN becomes 0 (saturating cast).
    ((f64::from(c.clamp(0.0, 1.0)) * f64::from(max) + 0.5) as u32).min(max)
}

/// IEEE binary16 of `v`, rounded to nearest even.
fn f16_bits(v: f32) -> u16 {
    let x = v.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = ((x >> 23) & 0xFF) as i32;
    let man = x & 0x7F_FFFF;
    if exp == 0xFF {
        return sign | 0x7C00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1F {
        return sign | 0x7C00;
    }
    let round = |value: u32, rem: u32, halfway: u32| {
        value + u32::from(rem > halfway || (rem == halfway && value & 1 == 1))
    };
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let value = m >> shift;
        let rem = m & ((1 << shift) - 1);
        return sign | round(value, rem, 1 << (shift - 1)) as u16;
    }
    let value = ((e as u32) << 10) | (man >> 13);
    sign | round(value, man & 0x1FFF, 0x1000) as u16
}

/// The value of an IEEE binary16.
fn f16_value(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let man = f32::from(h & 0x3FF);
    match (h >> 10) & 0x1F {
        0 => sign * man * 2f32.powi(-24),
        0x1F if man == 0.0 => sign * f32::INFINITY,
        0x1F => f32::NAN,
        e => sign * (1.0 + man / 1024.0) * 2f32.powi(i32::from(e) - 15),
    }
}

/// One texel of `format` holding `rgba`; `None` for formats a colour clear cannot fill.
pub(crate) fn encode_color(format: Format, rgba: [f32; 4]) -> Option<Vec<u8>> {
    let [r, g, b, a] = rgba;
    let u8c = |c| unorm(c, 255) as u8;
    Some(match format {
        Format::B8G8R8A8Unorm => vec![u8c(b), u8c(g), u8c(r), u8c(a)],
        Format::B8G8R8X8Unorm => vec![u8c(b), u8c(g), u8c(r), 0xFF],
        Format::R8G8B8A8Unorm => vec![u8c(r), u8c(g), u8c(b), u8c(a)],
        Format::R8G8B8X8Unorm => vec![u8c(r), u8c(g), u8c(b), 0xFF],
        Format::B5G6R5Unorm => {
            let v = unorm(r, 31) << 11 | unorm(g, 63) << 5 | unorm(b, 31);
            (v as u16).to_le_bytes().to_vec()
        }
        Format::B5G5R5A1Unorm => {
            let v = unorm(a, 1) << 15 | unorm(r, 31) << 10 | unorm(g, 31) << 5 | unorm(b, 31);
            (v as u16).to_le_bytes().to_vec()
        }
        Format::R8Unorm => vec![u8c(r)],
        Format::R8G8Unorm => vec![u8c(r), u8c(g)],
        Format::R16G16B16A16Float => rgba
            .iter()
            .flat_map(|&c| f16_bits(c).to_le_bytes())
            .collect(),
        Format::R32G32B32A32Float => rgba.iter().flat_map(|c| c.to_le_bytes()).collect(),
        Format::R32Float => r.to_le_bytes().to_vec(),
        _ => return None,
    })
}

/// RGBA8 of one texel for the presented frame; `None` for formats that cannot be shown.
pub(crate) fn decode_rgba(format: Format, px: &[u8]) -> Option<[u8; 4]> {
    let expand5 = |v: u16| ((v << 3) | (v >> 2)) as u8;
    let expand6 = |v: u16| ((v << 2) | (v >> 4)) as u8;
    let float = |v: f32| unorm(v, 255) as u8;
    let word = |i: usize| u16::from_le_bytes([px[i], px[i + 1]]);
    let f32_at = |i: usize| f32::from_le_bytes([px[i], px[i + 1], px[i + 2], px[i + 3]]);
    Some(match format {
        Format::B8G8R8A8Unorm => [px[2], px[1], px[0], px[3]],
        Format::B8G8R8X8Unorm => [px[2], px[1], px[0], 0xFF],
        Format::R8G8B8A8Unorm => [px[0], px[1], px[2], px[3]],
        Format::R8G8B8X8Unorm => [px[0], px[1], px[2], 0xFF],
        Format::B5G6R5Unorm => {
            let v = word(0);
            [
                expand5(v >> 11),
                expand6((v >> 5) & 0x3F),
                expand5(v & 0x1F),
                0xFF,
            ]
        }
        Format::B5G5R5A1Unorm => {
            let v = word(0);
            let a = if v & 0x8000 != 0 { 0xFF } else { 0 };
            [
                expand5((v >> 10) & 0x1F),
                expand5((v >> 5) & 0x1F),
                expand5(v & 0x1F),
                a,
            ]
        }
        Format::R8Unorm => [px[0], px[0], px[0], 0xFF],
        Format::R8G8Unorm => [px[0], px[1], 0, 0xFF],
        Format::R16G16B16A16Float => [0, 2, 4, 6].map(|i| float(f16_value(word(i)))),
        Format::R32G32B32A32Float => [
            float(f32_at(0)),
            float(f32_at(4)),
            float(f32_at(8)),
            float(f32_at(12)),
        ],
        Format::R32Float => {
            let v = float(f32_at(0));
            [v, v, v, 0xFF]
        }
        _ => return None,
    })
}

impl SoftExecutor {
    pub fn new(config: SoftExecutorConfig) -> Self {
        Self {
            config,
            resources: HashMap::new(),
            host_bytes: 0,
            state: OutputState::default(),
            context: 0,
            parked: BTreeMap::new(),
            switches: 0,
            presented: None,
            stats: SoftStats::default(),
            warned_draws: false,
        }
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
            r.guest_backed = backing.is_some();
            r.dirty = DirtyRanges::default();
            if let Some(b) = backing {
                mem.read(b.gpa, &mut r.bytes)?;
                self.stats.uploaded_bytes += r.bytes.len() as u64;
            }
            return Ok(());
        }
        let in_use = self.host_bytes;
        if in_use.saturating_add(size_bytes) > self.config.max_host_bytes {
            return Err(SoftError::HostMemory {
                requested: size_bytes,
                in_use,
                cap: self.config.max_host_bytes,
            });
        }
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
                guest_backed: backing.is_some(),
                dirty: DirtyRanges::default(),
            },
        );
        Ok(())
    }

    fn unbind(&mut self, id: ResourceId) {
        let states =
            std::iter::once(&mut self.state).chain(self.parked.values_mut().map(|(s, _)| s));
        for state in states {
            for slot in state.colors.iter_mut().chain([&mut state.depth_stencil]) {
                if *slot == Some(id) {
                    *slot = None;
                }
            }
        }
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
        r.dirty.remove(offset, offset.saturating_add(size));
        self.stats.uploaded_bytes += size;
        Ok(())
    }

    fn upload(&mut self, id: ResourceId, offset: u64, data: &[u8]) -> Result<(), SoftError> {
        let r = self.get_mut(id)?;
        let span = range(offset, data.len() as u64, r.bytes.len(), id)?;
        r.bytes[span].copy_from_slice(data);
        if r.guest_backed {
            r.dirty.add([(offset, offset + data.len() as u64)]);
        }
        Ok(())
    }

    /// Writes `ranges` of a resource's host copy into its backing.
    fn write_back(
        r: &HostResource,
        backing: &ResolvedBacking,
        ranges: &[(u64, u64)],
        mem: &mut dyn GuestMemory,
    ) -> Result<u64, SoftError> {
        let mut written = 0;
        for &(s, e) in ranges {
            let Some(bytes) = usize::try_from(s)
                .ok()
                .zip(usize::try_from(e).ok())
                .and_then(|(s, e)| r.bytes.get(s..e))
            else {
                continue;
            };
            mem.write(backing.gpa.wrapping_add(s), bytes)?;
            written += e - s;
        }
        Ok(written)
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
            let n = Self::write_back(r, &b, &ranges, mem)?;
            r.dirty.remove_all(ranges);
            self.stats.written_back_bytes += n;
        } else if r.guest_backed {
            r.dirty.add(ranges);
        }
        Ok(())
    }

    /// `(dst_offset, src_offset, size)` in bytes.
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

    fn texture_desc(&self, id: ResourceId) -> Result<TextureDesc, SoftError> {
        match self.get(id)?.desc {
            ResourceDesc::Texture2d(d) => Ok(d),
            ResourceDesc::Buffer(_) => Err(SoftError::NotATexture(id)),
        }
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
        let missing = SoftError::OutOfRange(dst);
        let s = subresource(&sd, c.src_mip_level, c.src_array_layer).ok_or(missing.clone())?;
        let d = subresource(&dd, c.dst_mip_level, c.dst_array_layer).ok_or(missing)?;
        if c.width == 0 || c.height == 0 {
            return Ok(());
        }
        // Whole blocks only: a partial block is allowed where it ends at the mip's edge.
        let (bw, bh) = (s.block_width, s.block_height);
        let aligned = |v: u32, b: u32| v.is_multiple_of(b);
        let edge_ok = |len: u32, b: u32, s_at: u32, s_len: u32, d_at: u32, d_len: u32| {
            aligned(len, b) || (s_at + len == s_len && d_at + len == d_len)
        };
        if !aligned(c.src_x, bw)
            || !aligned(c.src_y, bh)
            || !aligned(c.dst_x, bw)
            || !aligned(c.dst_y, bh)
            || !edge_ok(c.width, bw, c.src_x, s.width, c.dst_x, d.width)
            || !edge_ok(c.height, bh, c.src_y, s.height, c.dst_y, d.height)
        {
            return Err(SoftError::BlockAlignment);
        }
        let bpb = u64::from(s.bytes_per_block);
        let row_bytes = u64::from(c.width.div_ceil(bw)) * bpb;
        let rows = c.height.div_ceil(bh);
        let row_at = |sub: &Subresource, x: u32, y: u32, i: u32| {
            sub.offset + u64::from(y / bh + i) * sub.pitch + u64::from(x / bw) * bpb
        };
        let pairs: Vec<(u64, u64)> = (0..rows)
            .map(|i| {
                (
                    row_at(&s, c.src_x, c.src_y, i),
                    row_at(&d, c.dst_x, c.dst_y, i),
                )
            })
            .collect();
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
                for &(f, t) in &pairs {
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

    /// Fills `rects` (clipped to mip 0 of layer 0, the render target view) of one target:
    /// every texel becomes `texel`, or `update(old, new)` of itself (D24S8 keeping one part).
    fn fill(
        &mut self,
        id: ResourceId,
        rects: &[Rect],
        texel: Texel<'_>,
        mem: &mut dyn GuestMemory,
    ) -> Result<(), SoftError> {
        let desc = self.texture_desc(id)?;
        let sub = subresource(&desc, 0, 0).ok_or(SoftError::OutOfRange(id))?;
        let bpp = u64::from(sub.bytes_per_block);
        let mut scratch = vec![0u8; bpp as usize];
        // One row of the constant texel, copied into each row (the common case).
        let row_pattern = match texel {
            Texel::Constant(t) => t.repeat(sub.width as usize),
            Texel::Update(_) => Vec::new(),
        };
        for &(x, y, w, h) in rects {
            let x1 = x.saturating_add(w).min(sub.width);
            let y1 = y.saturating_add(h).min(sub.height);
            if x >= x1 || y >= y1 {
                continue;
            }
            let row_len = u64::from(x1 - x) * bpp;
            let r = self.get_mut(id)?;
            let len = r.bytes.len();
            let mut changed = Vec::new();
            for row in y..y1 {
                let start = sub.offset + u64::from(row) * sub.pitch + u64::from(x) * bpp;
                let span = range(start, row_len, len, id)?;
                let dst = &mut r.bytes[span];
                match texel {
                    Texel::Constant(_) => dst.copy_from_slice(&row_pattern[..dst.len()]),
                    Texel::Update(update) => {
                        for px in dst.chunks_exact_mut(bpp as usize) {
                            update(px, &mut scratch);
                            px.copy_from_slice(&scratch);
                        }
                    }
                }
                changed.push((start, start + row_len));
            }
            // Per rectangle: the pending list stays one rectangle's rows long.
            self.host_changed(id, changed, None, mem)?;
        }
        Ok(())
    }

    fn clear(
        &mut self,
        v: ClearValues,
        rects: Option<&[Rect]>,
        mem: &mut dyn GuestMemory,
    ) -> Result<(), SoftError> {
        let whole = [(0, 0, u32::MAX, u32::MAX)];
        let rects = rects.unwrap_or(&whole);
        let state = self.state;
        self.stats.clears += 1;
        if v.flags & CLEAR_COLOR != 0 {
            for id in state.colors.iter().flatten() {
                let Ok(desc) = self.texture_desc(*id) else {
                    continue; // destroyed since it was bound
                };
                let texel = encode_color(desc.format, v.rgba).ok_or(SoftError::Format {
                    what: "colour clear",
                    format: desc.format,
                })?;
                self.fill(*id, rects, Texel::Constant(&texel), mem)?;
            }
        }
        if v.flags & (CLEAR_DEPTH | CLEAR_STENCIL) != 0
            && let Some(id) = state.depth_stencil
            && let Ok(desc) = self.texture_desc(id)
        {
            let (depth, stencil) = (v.flags & CLEAR_DEPTH != 0, v.flags & CLEAR_STENCIL != 0);
            let d = v.depth.clamp(0.0, 1.0);
            match desc.format {
                Format::D24UnormS8Uint => {
                    let z = unorm(d, 0xFF_FFFF);
                    let s = u32::from(v.stencil);
                    self.fill(
                        id,
                        rects,
                        Texel::Update(&|old, out| {
                            let mut word = u32::from_le_bytes([old[0], old[1], old[2], old[3]]);
                            if depth {
                                word = (word & 0xFF) | z << 8;
                            }
                            if stencil {
                                word = (word & !0xFF) | s;
                            }
                            out.copy_from_slice(&word.to_le_bytes());
                        }),
                        mem,
                    )?;
                }
                Format::D16Unorm if depth => {
                    let z = (unorm(d, 0xFFFF) as u16).to_le_bytes();
                    self.fill(id, rects, Texel::Constant(&z), mem)?;
                }
                Format::D32Float if depth => {
                    let z = d.to_le_bytes();
                    self.fill(id, rects, Texel::Constant(&z), mem)?;
                }
                // No stencil in these formats: a stencil-only clear has nothing to do.
                Format::D16Unorm | Format::D32Float => {}
                format => {
                    return Err(SoftError::Format {
                        what: "depth/stencil clear",
                        format,
                    });
                }
            }
        }
        Ok(())
    }

    /// The presented frame of a host-only target: mip 0 of layer 0 as RGBA8.
    fn frame_of(&self, id: ResourceId) -> Result<Frame, SoftError> {
        let desc = self.texture_desc(id)?;
        let r = self.get(id)?;
        if desc.width > MAX_SCANOUT_DIM || desc.height > MAX_SCANOUT_DIM {
            return Err(SoftError::PresentTooLarge(desc.width, desc.height));
        }
        let sub = subresource(&desc, 0, 0).ok_or(SoftError::OutOfRange(id))?;
        let unsupported = SoftError::Format {
            what: "present",
            format: desc.format,
        };
        if sub.block_width != 1 || decode_rgba(desc.format, &[0; 16]).is_none() {
            return Err(unsupported);
        }
        let bpp = sub.bytes_per_block as usize;
        let mut frame = Frame::new();
        frame.reset(desc.width, desc.height);
        for y in 0..desc.height {
            let start = sub.offset + u64::from(y) * sub.pitch;
            let span = range(start, u64::from(desc.width) * bpp as u64, r.bytes.len(), id)?;
            for (px, out) in r.bytes[span]
                .chunks_exact(bpp)
                .zip(frame.row_mut(y).chunks_exact_mut(4))
            {
                out.copy_from_slice(&decode_rgba(desc.format, px).unwrap_or([0, 0, 0, 0xFF]));
            }
        }
        Ok(frame)
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
        let (guest_backed, clean) = (r.guest_backed, r.dirty.is_empty());
        if !guest_backed {
            self.presented = Some(self.frame_of(id)?);
            self.stats.host_presents += 1;
            return Ok(());
        }
        self.presented = None;
        if clean {
            return Ok(());
        }
        match backing {
            Some(b) => {
                let r = self.get_mut(id)?;
                let ranges = std::mem::take(&mut r.dirty.0);
                let r = self.get(id)?;
                let n = Self::write_back(r, &b, &ranges, mem)?;
                self.stats.written_back_bytes += n;
            }
            None => {
                // The guest did not list the target's allocation: its memory cannot be
                // written, so show the host copy.
                tracing::debug!(
                    id,
                    "aerogpu soft executor: presented target not in the allocation table, shown from the host copy"
                );
                self.presented = Some(self.frame_of(id)?);
                self.stats.host_presents += 1;
            }
        }
        Ok(())
    }

    fn run(&mut self, command: &Command<'_>, mem: &mut dyn GuestMemory) -> Result<(), SoftError> {
        match *command {
            Command::CreateResource {
                resource,
                desc,
                size_bytes,
                backing,
                ..
            } => self.create(resource, desc, size_bytes, backing, mem)?,
            Command::DestroyResource { resource, freed } => {
                // The processor unbinds the destroyed handle in every context; outputs
                // here are resource ids, so unbind the resource (an alias handle bound as
                // a target elsewhere is the one case this unbinds more than it does).
                self.unbind(resource);
                // Only the last reference frees the host copy.
                if freed {
                    self.destroy(resource);
                }
            }
            Command::ResourceDirtyRange {
                resource,
                offset_bytes,
                size_bytes,
                backing,
            } => self.dirty_range(resource, offset_bytes, size_bytes, backing, mem)?,
            Command::UploadResource {
                resource,
                offset_bytes,
                data,
            } => self.upload(resource, offset_bytes, data)?,
            Command::CopyBuffer {
                dst,
                src,
                dst_offset_bytes,
                src_offset_bytes,
                size_bytes,
                writeback,
            } => self.copy_buffer(
                dst,
                src,
                (dst_offset_bytes, src_offset_bytes, size_bytes),
                writeback,
                mem,
            )?,
            Command::CopyTexture2d {
                dst,
                src,
                ref region,
                writeback,
            } => self.copy_texture(dst, src, region, writeback, mem)?,
            Command::SetRenderTargets {
                colors,
                depth_stencil,
                ..
            } => {
                self.state.colors = colors;
                self.state.depth_stencil = depth_stencil;
            }
            Command::SetViewport(v) => self.state.viewport = Some(v),
            Command::SetScissor(s) => self.state.scissor = Some(s),
            Command::SetRenderState { state, value } if state == RS_SCISSORTESTENABLE => {
                self.state.scissor_test = value != 0;
            }
            Command::Clear(c) => {
                let v = ClearValues {
                    flags: c.flags,
                    rgba: c.color_rgba_f32.map(f32::from_bits),
                    depth: f32::from_bits(c.depth_f32),
                    stencil: c.stencil as u8,
                };
                self.clear(v, None, mem)?;
            }
            Command::ClearRects { clear, rects } => {
                let v = ClearValues {
                    flags: clear.flags,
                    rgba: clear.color_rgba_f32.map(f32::from_bits),
                    depth: f32::from_bits(clear.depth_f32),
                    stencil: clear.stencil as u8,
                };
                let rects: Vec<Rect> = clear_rect_records(rects)
                    .map(|r| (r.x, r.y, r.width, r.height))
                    .collect();
                self.clear(v, Some(&rects), mem)?;
            }
            Command::Draw(_) | Command::DrawIndexed(_) => {
                if !self.warned_draws {
                    self.warned_draws = true;
                    tracing::warn!(
                        "aerogpu: 3D draws need the GPU executor; the CPU executor skips them"
                    );
                }
                self.stats.draws_skipped += 1;
            }
            Command::Present {
                target,
                target_backing,
                ..
            } => self.present(target, target_backing, mem)?,
            _ => {}
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
        *self = Self::new(self.config);
    }

    fn presented_frame(&self) -> Option<&Frame> {
        self.presented.as_ref()
    }

    fn scanout_reprogrammed(&mut self) {
        self.presented = None;
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn half_floats_round_to_nearest_even() {
        assert_eq!(f16_bits(0.0), 0);
        assert_eq!(f16_bits(-0.0), 0x8000);
        assert_eq!(f16_bits(1.0), 0x3C00);
        assert_eq!(f16_bits(0.5), 0x3800);
        assert_eq!(f16_bits(-2.0), 0xC000);
        assert_eq!(f16_bits(65504.0), 0x7BFF);
        assert_eq!(f16_bits(1e6), 0x7C00);
        assert_eq!(f16_bits(f32::NAN) & 0x7E00, 0x7E00);
        // Smallest subnormal and a value halfway between 1 and the next half.
        assert_eq!(f16_bits(2f32.powi(-24)), 1);
        assert_eq!(f16_bits(1.0 + 2f32.powi(-11)), 0x3C00);
        assert_eq!(f16_bits(1.0 + 3.0 * 2f32.powi(-11)), 0x3C02);
        for v in [
            0.0,
            0.25,
            0.5,
            1.0,
            -2.0,
            65504.0,
            2f32.powi(-24),
            1.0 + 2f32.powi(-10),
        ] {
            assert_eq!(f16_value(f16_bits(v)), v, "{v}");
        }
        assert!(f16_value(0x7E00).is_nan());
    }

    #[test]
    fn dirty_ranges_merge_subtract_and_stay_bounded() {
        let mut d = DirtyRanges::default();
        d.add([(10, 20), (0, 5), (5, 8), (15, 30)]);
        assert_eq!(d.0, vec![(0, 8), (10, 30)]);
        d.remove(12, 14);
        assert_eq!(d.0, vec![(0, 8), (10, 12), (14, 30)]);
        d.remove(0, 100);
        assert!(d.is_empty());
        // Several cuts at once, overlapping ranges and each other, any order.
        d.add([(0, 10), (20, 30), (40, 50)]);
        d.remove_all(vec![(45, 60), (2, 4), (8, 22), (3, 5), (25, 26)]);
        assert_eq!(d.0, vec![(0, 2), (5, 8), (22, 25), (26, 30), (40, 45)]);
        d.add((0..20_000u64).map(|i| (i * 4, i * 4 + 1)));
        assert_eq!(d.0, vec![(0, 79_997)]);
    }

    #[test]
    fn subresources_follow_the_backing_layout() {
        let desc = TextureDesc {
            format: Format::Bc1Unorm,
            width: 16,
            height: 8,
            mip_levels: 3,
            array_layers: 2,
            row_pitch_bytes: 0,
            usage_flags: 0,
            flags: 0,
        };
        // Mip 0: 4x2 blocks of 8 bytes (64), mip 1: 2x1 (16), mip 2 (4x2 texels): 1x1 (8).
        let s = subresource(&desc, 2, 1).unwrap();
        assert_eq!(
            (s.offset, s.pitch, s.width, s.height),
            (88 + 64 + 16, 8, 4, 2)
        );
        assert!(subresource(&desc, 3, 0).is_none());
    }
}
