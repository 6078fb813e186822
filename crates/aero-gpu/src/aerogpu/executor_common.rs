//! What the CPU and GPU executors share: the guest backing layout of textures
//! (`aerogpu_cmd.h`), byte ranges the host changed, texel encodings of clears and
//! presents, the rows a texture copy moves, the present rule and the dispatch of resource
//! commands. Each executor keeps only how it stores resources (a host copy, or wgpu
//! textures and buffers).

use aero_protocol::cmd;
use aero_protocol::pci::Format;

use std::collections::BTreeMap;

use super::memory::GuestMemory;
use super::processor::{
    Command, ResolvedBacking, ResourceDesc, ResourceId, TextureDesc, clear_rect_records,
};
use super::scanout::MAX_SCANOUT_DIM;
use super::soft_executor::SoftError;
use crate::Frame;

/// Dirty ranges kept per resource before they collapse into one covering range (one
/// partial-width rectangle of the tallest texture stays exact).
const MAX_DIRTY_RANGES: usize = cmd::MAX_TEXTURE_DIM as usize;

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

/// How a resource's host copy stands against its guest backing: whether it has one, and
/// the bytes the host changed since guest memory last matched (tracked for guest-backed
/// resources only; a host-only one has no memory to match).
#[derive(Clone, Debug, Default)]
pub(crate) struct GuestSync {
    guest_backed: bool,
    dirty: DirtyRanges,
}

impl GuestSync {
    /// Created or rebound: guest memory, if any, is the content.
    pub(crate) fn new(guest_backed: bool) -> Self {
        GuestSync {
            guest_backed,
            dirty: DirtyRanges::default(),
        }
    }

    /// The host changed `ranges` of the resource.
    pub(crate) fn host_wrote(&mut self, ranges: impl IntoIterator<Item = (u64, u64)>) {
        if self.guest_backed {
            self.dirty.add(ranges);
        }
    }

    /// `ranges` were written back: guest memory matches the host copy there again.
    pub(crate) fn written_back(&mut self, ranges: Vec<(u64, u64)>) {
        self.dirty.remove_all(ranges);
    }

    /// `[start, end)` was read in from guest memory: the two match there again.
    pub(crate) fn read_in(&mut self, start: u64, end: u64) {
        self.dirty.remove(start, end);
    }

    /// Takes the host-changed ranges, to write them back.
    pub(crate) fn take_dirty(&mut self) -> Vec<(u64, u64)> {
        std::mem::take(&mut self.dirty.0)
    }

    /// What PRESENT does with this resource as the target.
    pub(crate) fn present_action(
        &self,
        id: ResourceId,
        backing: Option<ResolvedBacking>,
    ) -> PresentAction {
        present_action(id, self.guest_backed, self.dirty.is_empty(), backing)
    }
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

/// The layout `aerogpu_cmd.h` documents (and the processor's `texture_size` sizes):
/// `layer` is an array layer (cube face), or the depth slice of `mip` for a volume.
pub(crate) fn subresource(desc: &TextureDesc, mip: u32, layer: u32) -> Option<Subresource> {
    let layout = desc.format.block_layout()?;
    if mip >= desc.mip_levels || layer >= desc.layers_of_mip(mip) {
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
        let slice_bytes = pitch * u64::from(h.div_ceil(layout.block_height));
        if m == mip {
            // A volume's slices of this mip follow each other.
            let slice = if desc.is_volume() { layer } else { 0 };
            found = Some(Subresource {
                offset: layer_bytes + slice_bytes * u64::from(slice),
                pitch,
                width: w,
                height: h,
                block_width: layout.block_width,
                block_height: layout.block_height,
                bytes_per_block: layout.bytes_per_block,
            });
        }
        layer_bytes += slice_bytes * u64::from(desc.depth_of_mip(m));
    }
    let mut sub = found?;
    if !desc.is_volume() {
        sub.offset += layer_bytes * u64::from(layer);
    }
    Some(sub)
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
        Format::A8Unorm => vec![u8c(a)],
        Format::L8A8Unorm => vec![u8c(r), u8c(a)],
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
        Format::A8Unorm => [0, 0, 0, px[0]],
        Format::L8A8Unorm => [px[0], px[0], px[0], px[1]],
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

/// A rectangle in pixels (x, y, width, height).
pub(crate) type Rect = (u32, u32, u32, u32);

/// The bound outputs of one context (the processor keeps contexts apart the same way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outputs {
    pub colors: [Option<ResourceId>; 8],
    pub depth_stencil: Option<ResourceId>,
}

/// Unbinds `id` from the current context's outputs and every parked context's.
pub(crate) fn unbind_everywhere(
    current: &mut Outputs,
    parked: &mut BTreeMap<u32, (Outputs, u64)>,
    id: ResourceId,
) {
    for o in std::iter::once(current).chain(parked.values_mut().map(|(o, _)| o)) {
        for slot in o.colors.iter_mut().chain([&mut o.depth_stencil]) {
            if *slot == Some(id) {
                *slot = None;
            }
        }
    }
}

/// A clear's values (CLEAR and CLEAR_RECTS).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ClearValues {
    pub(crate) flags: u32,
    pub(crate) rgba: [f32; 4],
    pub(crate) depth: f32,
    pub(crate) stencil: u8,
}

impl ClearValues {
    fn new(flags: u32, color: [u32; 4], depth: u32, stencil: u32) -> Self {
        Self {
            flags,
            rgba: color.map(f32::from_bits),
            depth: f32::from_bits(depth),
            stencil: stencil as u8,
        }
    }
}

/// What a fill writes into each texel: every byte becomes `(old & !mask) | value`
/// (D24S8 clears of depth or stencil alone keep the other part).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TexelFill {
    pub(crate) value: Vec<u8>,
    pub(crate) mask: Vec<u8>,
}

impl TexelFill {
    fn constant(value: Vec<u8>) -> Self {
        let mask = vec![0xFF; value.len()];
        Self { value, mask }
    }

    /// The old texel does not matter.
    pub(crate) fn is_constant(&self) -> bool {
        self.mask.iter().all(|&m| m == 0xFF)
    }

    pub(crate) fn apply(&self, texel: &mut [u8]) {
        for ((t, v), m) in texel.iter_mut().zip(&self.value).zip(&self.mask) {
            *t = (*t & !m) | (v & m);
        }
    }
}

/// The fill of a colour clear of a `format` target.
pub(crate) fn color_fill(format: Format, rgba: [f32; 4]) -> Result<TexelFill, SoftError> {
    let texel = encode_color(format, rgba).ok_or(SoftError::Format {
        what: "colour clear",
        format,
    })?;
    Ok(TexelFill::constant(texel))
}

/// The fill of a depth/stencil clear (`flags` CLEAR_DEPTH / CLEAR_STENCIL) of a `format`
/// target; `None` when there is nothing to write (stencil alone on a format without).
pub(crate) fn depth_stencil_fill(
    format: Format,
    flags: u32,
    depth: f32,
    stencil: u8,
) -> Result<Option<TexelFill>, SoftError> {
    let (depth_on, stencil_on) = (
        flags & cmd::CLEAR_DEPTH != 0,
        flags & cmd::CLEAR_STENCIL != 0,
    );
    let d = depth.clamp(0.0, 1.0);
    Ok(match format {
        // D3D9's D24S8 word: depth in bits 31..8, stencil in bits 7..0.
        Format::D24UnormS8Uint => {
            let value = unorm(d, 0xFF_FFFF) << 8 | u32::from(stencil);
            let mask = if depth_on { !0xFF } else { 0 } | if stencil_on { 0xFF } else { 0 };
            Some(TexelFill {
                value: value.to_le_bytes().to_vec(),
                mask: (mask as u32).to_le_bytes().to_vec(),
            })
        }
        Format::D16Unorm if depth_on => Some(TexelFill::constant(
            (unorm(d, 0xFFFF) as u16).to_le_bytes().to_vec(),
        )),
        Format::D32Float if depth_on => Some(TexelFill::constant(d.to_le_bytes().to_vec())),
        Format::D16Unorm | Format::D32Float => None,
        format => {
            return Err(SoftError::Format {
                what: "depth/stencil clear",
                format,
            });
        }
    })
}

/// A fill rectangle clipped to a subresource (texels of an uncompressed format).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Clipped {
    pub(crate) x: u32,
    pub(crate) y: u32,
    pub(crate) cols: u32,
    pub(crate) rows: u32,
}

impl Clipped {
    pub(crate) fn new(sub: &Subresource, (x, y, w, h): Rect) -> Option<Self> {
        let x1 = x.saturating_add(w).min(sub.width);
        let y1 = y.saturating_add(h).min(sub.height);
        (x < x1 && y < y1).then(|| Self {
            x,
            y,
            cols: x1 - x,
            rows: y1 - y,
        })
    }

    /// The byte ranges (guest layout) of its rows.
    pub(crate) fn row_ranges(&self, sub: &Subresource) -> Vec<(u64, u64)> {
        let bpp = u64::from(sub.bytes_per_block);
        let len = u64::from(self.cols) * bpp;
        (self.y..self.y + self.rows)
            .map(|row| {
                let start = sub.offset + u64::from(row) * sub.pitch + u64::from(self.x) * bpp;
                (start, start + len)
            })
            .collect()
    }
}

/// The block rows a COPY_TEXTURE2D moves, in the guest layout.
#[derive(Clone, Debug)]
pub(crate) struct TextureCopy {
    pub(crate) src: Subresource,
    pub(crate) dst: Subresource,
    /// Blocks per row and block rows.
    pub(crate) cols: u32,
    pub(crate) rows: u32,
    pub(crate) row_bytes: u64,
    /// (source offset, destination offset) of each block row, top to bottom.
    pub(crate) pairs: Vec<(u64, u64)>,
}

/// Plans a texture copy: whole blocks only, a partial block allowed where it ends at both
/// mips' edges; `None` for an empty region.
pub(crate) fn texture_copy(
    sd: &TextureDesc,
    dd: &TextureDesc,
    c: &cmd::CopyTexture2d,
    dst: ResourceId,
) -> Result<Option<TextureCopy>, SoftError> {
    let missing = SoftError::OutOfRange(dst);
    let s = subresource(sd, c.src_mip_level, c.src_array_layer).ok_or(missing.clone())?;
    let d = subresource(dd, c.dst_mip_level, c.dst_array_layer).ok_or(missing)?;
    if c.width == 0 || c.height == 0 {
        return Ok(None);
    }
    let (bw, bh) = (s.block_width, s.block_height);
    let aligned = |v: u32, b: u32| v.is_multiple_of(b);
    let edge_ok = |len: u32, b: u32, s_at: u32, s_len: u32, d_at: u32, d_len: u32| {
        aligned(len, b) || (s_at.saturating_add(len) == s_len && d_at.saturating_add(len) == d_len)
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
    let (cols, rows) = (c.width.div_ceil(bw), c.height.div_ceil(bh));
    let row_at = |sub: &Subresource, x: u32, y: u32, i: u32| {
        sub.offset + u64::from(y / bh + i) * sub.pitch + u64::from(x / bw) * bpb
    };
    let pairs = (0..rows)
        .map(|i| {
            (
                row_at(&s, c.src_x, c.src_y, i),
                row_at(&d, c.dst_x, c.dst_y, i),
            )
        })
        .collect();
    Ok(Some(TextureCopy {
        src: s,
        dst: d,
        cols,
        rows,
        row_bytes: u64::from(cols) * bpb,
        pairs,
    }))
}

/// What PRESENT does with a bound target (the rule in the CPU executor's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PresentAction {
    /// Host-only target, or one whose allocation the guest did not list: its pixels
    /// become the presented frame.
    ShowHostCopy,
    /// Guest memory already holds the target: scanout 0 shows it.
    GuestMatches,
    /// Write the host-changed bytes into the backing, then scanout 0 shows guest memory.
    WriteBack(ResolvedBacking),
}

pub(crate) fn present_action(
    id: ResourceId,
    guest_backed: bool,
    clean: bool,
    backing: Option<ResolvedBacking>,
) -> PresentAction {
    match (guest_backed, clean, backing) {
        (false, _, _) => PresentAction::ShowHostCopy,
        (true, true, _) => PresentAction::GuestMatches,
        (true, false, Some(b)) => PresentAction::WriteBack(b),
        (true, false, None) => {
            // Its memory cannot be written, so show the host copy.
            tracing::debug!(
                id,
                "aerogpu: presented target not in the allocation table, shown from the host copy"
            );
            PresentAction::ShowHostCopy
        }
    }
}

/// Mip 0 / layer 0 of a target that can be presented (size and format checked).
pub(crate) fn presentable(desc: &TextureDesc, id: ResourceId) -> Result<Subresource, SoftError> {
    if desc.width > MAX_SCANOUT_DIM || desc.height > MAX_SCANOUT_DIM {
        return Err(SoftError::PresentTooLarge(desc.width, desc.height));
    }
    let sub = subresource(desc, 0, 0).ok_or(SoftError::OutOfRange(id))?;
    if sub.block_width != 1 || decode_rgba(desc.format, &[0; 16]).is_none() {
        return Err(SoftError::Format {
            what: "present",
            format: desc.format,
        });
    }
    Ok(sub)
}

/// The presented frame from mip 0's rows (each `width` texels, tightly packed).
pub(crate) fn frame_from_rows<'a>(
    desc: &TextureDesc,
    sub: &Subresource,
    rows: impl Iterator<Item = &'a [u8]>,
) -> Frame {
    let bpp = sub.bytes_per_block as usize;
    let mut frame = Frame::new();
    frame.reset(desc.width, desc.height);
    for (y, row) in rows.take(desc.height as usize).enumerate() {
        for (px, out) in row
            .chunks_exact(bpp)
            .zip(frame.row_mut(y as u32).chunks_exact_mut(4))
        {
            out.copy_from_slice(&decode_rgba(desc.format, px).unwrap_or([0, 0, 0, 0xFF]));
        }
    }
    frame
}

/// Refuses a new resource of `size` bytes beyond the host memory cap.
pub(crate) fn check_host_cap(cap: u64, in_use: u64, size: u64) -> Result<(), SoftError> {
    if in_use.saturating_add(size) > cap {
        return Err(SoftError::HostMemory {
            requested: size,
            in_use,
            cap,
        });
    }
    Ok(())
}

/// Writes `ranges` of `image` (a resource in its guest layout) into its backing; ranges
/// outside the image are skipped. Returns the bytes written.
pub(crate) fn write_ranges(
    image: &[u8],
    backing: &ResolvedBacking,
    ranges: &[(u64, u64)],
    mem: &mut dyn GuestMemory,
) -> Result<u64, SoftError> {
    let mut written = 0;
    for &(s, e) in ranges {
        let Some(bytes) = usize::try_from(s)
            .ok()
            .zip(usize::try_from(e).ok())
            .and_then(|(s, e)| image.get(s..e))
        else {
            continue;
        };
        mem.write(backing.gpa.wrapping_add(s), bytes)?;
        written += e - s;
    }
    Ok(written)
}

/// The resource commands both executors run the same way; each supplies how it stores
/// resources, [`dispatch`] and [`ResourceCommands::clear`] the rest.
pub(crate) trait ResourceCommands {
    type Error: From<SoftError>;

    fn outputs_mut(&mut self) -> &mut Outputs;
    /// The format of a texture (`None`: unknown, or a buffer).
    fn texture_format(&self, id: ResourceId) -> Option<Format>;
    fn create(
        &mut self,
        id: ResourceId,
        desc: ResourceDesc,
        size_bytes: u64,
        backing: Option<ResolvedBacking>,
        mem: &dyn GuestMemory,
    ) -> Result<(), Self::Error>;
    /// Unbinds `id` from every context's outputs.
    fn unbind(&mut self, id: ResourceId);
    /// Frees the resource's storage.
    fn destroy(&mut self, id: ResourceId);
    fn dirty_range(
        &mut self,
        id: ResourceId,
        offset: u64,
        size: u64,
        backing: Option<ResolvedBacking>,
        mem: &dyn GuestMemory,
    ) -> Result<(), Self::Error>;
    fn upload(&mut self, id: ResourceId, offset: u64, data: &[u8]) -> Result<(), Self::Error>;
    /// `(dst_offset, src_offset, size)` in bytes.
    fn copy_buffer(
        &mut self,
        dst: ResourceId,
        src: ResourceId,
        offsets: (u64, u64, u64),
        writeback: Option<ResolvedBacking>,
        mem: &mut dyn GuestMemory,
    ) -> Result<(), Self::Error>;
    fn copy_texture(
        &mut self,
        dst: ResourceId,
        src: ResourceId,
        c: &cmd::CopyTexture2d,
        writeback: Option<ResolvedBacking>,
        mem: &mut dyn GuestMemory,
    ) -> Result<(), Self::Error>;
    /// Fills `rects` of mip 0 / layer 0 of a target with `fill`, clipped to it.
    fn fill(
        &mut self,
        id: ResourceId,
        rects: &[Rect],
        fill: &TexelFill,
        mem: &mut dyn GuestMemory,
    ) -> Result<(), Self::Error>;
    /// Counts a clear.
    fn count_clear(&mut self);
    /// A draw the executor cannot render.
    fn skip_draw(&mut self);
    fn present(
        &mut self,
        target: Option<ResourceId>,
        backing: Option<ResolvedBacking>,
        mem: &mut dyn GuestMemory,
    ) -> Result<(), Self::Error>;

    /// CLEAR (`rects` None: whole targets) and CLEAR_RECTS: the same encoded texels in
    /// both executors, so they agree to the bit.
    fn clear(
        &mut self,
        v: ClearValues,
        rects: Option<&[Rect]>,
        mem: &mut dyn GuestMemory,
    ) -> Result<(), Self::Error> {
        let whole = [(0, 0, u32::MAX, u32::MAX)];
        let rects = rects.unwrap_or(&whole);
        let outputs = *self.outputs_mut();
        self.count_clear();
        if v.flags & cmd::CLEAR_COLOR != 0 {
            for id in outputs.colors.iter().flatten() {
                let Some(format) = self.texture_format(*id) else {
                    continue; // destroyed since it was bound
                };
                self.fill(*id, rects, &color_fill(format, v.rgba)?, mem)?;
            }
        }
        if v.flags & (cmd::CLEAR_DEPTH | cmd::CLEAR_STENCIL) != 0
            && let Some(id) = outputs.depth_stencil
            && let Some(format) = self.texture_format(id)
            && let Some(fill) = depth_stencil_fill(format, v.flags, v.depth, v.stencil)?
        {
            self.fill(id, rects, &fill, mem)?;
        }
        Ok(())
    }
}

/// Runs the resource commands of `command` (others are not for this store and are left
/// alone).
pub(crate) fn dispatch<E: ResourceCommands>(
    e: &mut E,
    command: &Command<'_>,
    mem: &mut dyn GuestMemory,
) -> Result<(), E::Error> {
    match *command {
        Command::CreateResource {
            resource,
            desc,
            size_bytes,
            backing,
            ..
        } => e.create(resource, desc, size_bytes, backing, mem)?,
        Command::DestroyResource { resource, freed } => {
            // The processor unbinds the destroyed handle in every context; outputs here
            // are resource ids, so unbind the resource (an alias handle bound as a target
            // elsewhere is the one case this unbinds more than it does).
            e.unbind(resource);
            // Only the last reference frees the storage.
            if freed {
                e.destroy(resource);
            }
        }
        Command::ResourceDirtyRange {
            resource,
            offset_bytes,
            size_bytes,
            backing,
        } => e.dirty_range(resource, offset_bytes, size_bytes, backing, mem)?,
        Command::UploadResource {
            resource,
            offset_bytes,
            data,
        } => e.upload(resource, offset_bytes, data)?,
        Command::CopyBuffer {
            dst,
            src,
            dst_offset_bytes,
            src_offset_bytes,
            size_bytes,
            writeback,
        } => e.copy_buffer(
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
        } => e.copy_texture(dst, src, region, writeback, mem)?,
        Command::SetRenderTargets {
            colors,
            depth_stencil,
            ..
        } => {
            *e.outputs_mut() = Outputs {
                colors,
                depth_stencil,
            };
        }
        Command::Clear(c) => {
            let v = ClearValues::new(c.flags, c.color_rgba_f32, c.depth_f32, c.stencil);
            e.clear(v, None, mem)?;
        }
        Command::ClearRects { clear: c, rects } => {
            let v = ClearValues::new(c.flags, c.color_rgba_f32, c.depth_f32, c.stencil);
            let rects: Vec<Rect> = clear_rect_records(rects)
                .map(|r| (r.x, r.y, r.width, r.height))
                .collect();
            e.clear(v, Some(&rects), mem)?;
        }
        Command::Draw(_) | Command::DrawIndexed(_) => e.skip_draw(),
        Command::Present {
            target,
            target_backing,
            ..
        } => e.present(target, target_backing, mem)?,
        _ => {}
    }
    Ok(())
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
            depth: 1,
        };
        // Mip 0: 4x2 blocks of 8 bytes (64), mip 1: 2x1 (16), mip 2 (4x2 texels): 1x1 (8).
        let s = subresource(&desc, 2, 1).unwrap();
        assert_eq!(
            (s.offset, s.pitch, s.width, s.height),
            (88 + 64 + 16, 8, 4, 2)
        );
        assert!(subresource(&desc, 3, 0).is_none());
    }

    #[test]
    fn volume_slices_follow_each_other_within_a_mip() {
        // 4x2x3 RGBA8 volume, rows 20 bytes apart at mip 0; mip 1 is 2x1x1.
        let desc = TextureDesc {
            format: Format::B8G8R8A8Unorm,
            width: 4,
            height: 2,
            mip_levels: 2,
            array_layers: 1,
            row_pitch_bytes: 20,
            usage_flags: 0,
            flags: aero_protocol::cmd::TEXTURE_FLAG_VOLUME,
            depth: 3,
        };
        let slice = |m, z| subresource(&desc, m, z).map(|s| (s.offset, s.pitch, s.width));
        assert_eq!(slice(0, 0), Some((0, 20, 4)));
        assert_eq!(slice(0, 2), Some((80, 20, 4)));
        assert_eq!(slice(1, 0), Some((120, 8, 2)));
        assert_eq!(slice(1, 1), None, "mip 1 has one slice");
        assert_eq!(slice(0, 3), None);
        let size = crate::aerogpu::processor::texture_size(&desc).unwrap();
        assert_eq!(size, 128, "the processor sizes the same layout");
    }
}
