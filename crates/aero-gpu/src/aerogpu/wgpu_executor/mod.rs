//! The GPU executor: AeroGPU resources as wgpu textures and buffers (issue 17 §1). It is
//! the twin of the CPU executor ([`super::SoftExecutor`]) and must leave guest memory and
//! presented frames byte for byte as that one does (the tests in `aerogpu/tests/twin.rs` run the
//! same streams through both).
//!
//! Resources:
//! - Buffers are wgpu buffers with a host mirror: D3D9 buffers are only changed by the
//!   guest (uploads, dirty ranges) and by COPY_BUFFER, never by the GPU, so copies run on
//!   the mirror and the changed bytes go to the GPU buffer (wgpu copies need 4-byte
//!   alignment the ABI does not promise).
//! - Textures are GPU-only. Formats map to a wgpu format holding the same bytes, except
//!   B5G6R5/B5G5R5A1 (expanded to RGBA8 on upload, packed back on read-back) and the
//!   depth formats, stored raw as R32Uint (D24S8 word), R32Float and R16Uint so that
//!   uploads, copies and write-backs keep the guest's bits (wgpu cannot copy into
//!   Depth24Plus/Depth32Float); draws test against a depth/stencil attachment kept in
//!   step with the raw texture in both directions ([`depth`]). BC1-3 are wgpu BC
//!   textures (mip 0 rounded up to whole blocks, which keeps every mip's block count); without TEXTURE_COMPRESSION_BC
//!   (or [`WgpuExecutor::with_bc_fallback`]) they are RGBA8 textures of the texels
//!   `bc_decode` decodes, with the blocks kept on the host for copies and write-backs.
//! - Byte offsets (dirty ranges, UPLOAD_RESOURCE, write-back) are in the guest backing
//!   layout of `aerogpu_cmd.h`, as in the CPU executor; a range that covers only part of a
//!   row reads the rows back first. Row padding (`row_pitch_bytes` beyond the texels) is
//!   not stored: write-backs leave guest padding alone.
//!
//! Clears are written as the same encoded texels the CPU executor computes (no GPU float
//! conversion, so both executors agree to the bit); PRESENT follows the CPU executor's
//! rule (host-changed bytes of a guest-backed target written back, a host-only target
//! becomes the presented frame). Host memory is capped like the CPU executor's, counted
//! in guest layout bytes (expanded formats use up to twice that in VRAM, decoded BC
//! textures eight (BC1) or four times, on top of their blocks on the host; depth formats
//! add their attachment).
//!
//! Shader, input-layout and state commands and DRAW / DRAW_INDEXED go to the draw path
//! ([`draw`], [`pipeline`]), which renders into this store's textures and marks the
//! targets host-changed (written back at PRESENT like any host change).
//!
//! wgpu validation errors never panic: they are caught by the device's error handler and
//! fail the command as an executor error.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use aero_protocol::cmd;
use aero_protocol::pci::Format;
use thiserror::Error;

use super::bc_decode::{self, BcKind};
use super::executor::{Executor, SubmissionInfo};
pub use super::executor_common::Outputs;
use super::executor_common::{
    self as common, Clipped, GuestSync, PresentAction, Rect, ResourceCommands, Subresource,
    TexelFill, alloc_zeroed, range, subresource,
};
use super::memory::{GuestMemory, GuestMemoryError};
use super::processor::{
    Command, ContextParking, ResolvedBacking, ResourceDesc, ResourceId, TextureDesc,
};
use super::soft_executor::{SoftError, SoftExecutorConfig, SoftStats};
use crate::Frame;

// The draw path (pipelines from D3D9 state, vertex input, draws): its own helper's files.
pub mod batch;
mod depth;
pub mod draw;
pub mod pipeline;
mod present;

use depth::{DepthAttachment, DepthSync, Newer};

/// Why the GPU executor failed a command (reported as AEROGPU_ERROR_BACKEND).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum WgpuError {
    #[error("no wgpu adapter: {0}")]
    NoAdapter(String),
    #[error("wgpu device request failed: {0}")]
    Device(String),
    #[error("wgpu: {0}")]
    Gpu(String),
    #[error("{what} is not supported by this adapter")]
    Unsupported { what: String },
    #[error(transparent)]
    Shared(#[from] SoftError),
}

impl From<GuestMemoryError> for WgpuError {
    fn from(e: GuestMemoryError) -> Self {
        WgpuError::Shared(SoftError::Memory(e))
    }
}

/// How a texture's guest bytes become GPU texels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Repr {
    /// Same bytes.
    Direct,
    /// B5G6R5 as RGBA8.
    Rgb565,
    /// B5G5R5A1 as RGBA8.
    Rgba5551,
}

impl Repr {
    /// GPU bytes per guest texel byte pair (expanded formats double).
    fn gpu_bytes_per_block(self, guest: u32) -> u32 {
        match self {
            Repr::Direct => guest,
            Repr::Rgb565 | Repr::Rgba5551 => 4,
        }
    }

    fn to_gpu(self, guest: &[u8]) -> Vec<u8> {
        let expand5 = |v: u16| ((v << 3) | (v >> 2)) as u8;
        let expand6 = |v: u16| ((v << 2) | (v >> 4)) as u8;
        match self {
            Repr::Direct => guest.to_vec(),
            Repr::Rgb565 => guest
                .chunks_exact(2)
                .flat_map(|p| {
                    let v = u16::from_le_bytes([p[0], p[1]]);
                    [
                        expand5(v >> 11),
                        expand6((v >> 5) & 0x3F),
                        expand5(v & 0x1F),
                        0xFF,
                    ]
                })
                .collect(),
            Repr::Rgba5551 => guest
                .chunks_exact(2)
                .flat_map(|p| {
                    let v = u16::from_le_bytes([p[0], p[1]]);
                    [
                        expand5((v >> 10) & 0x1F),
                        expand5((v >> 5) & 0x1F),
                        expand5(v & 0x1F),
                        if v & 0x8000 != 0 { 0xFF } else { 0 },
                    ]
                })
                .collect(),
        }
    }

    /// Packs GPU texels back (rounding, so rendered values land on the nearest code and
    /// uploaded ones come back unchanged).
    fn to_guest(self, gpu: &[u8]) -> Vec<u8> {
        let q = |v: u8, max: u32| (u32::from(v) * max + 127) / 255;
        match self {
            Repr::Direct => gpu.to_vec(),
            Repr::Rgb565 => gpu
                .chunks_exact(4)
                .flat_map(|p| {
                    let v = q(p[0], 31) << 11 | q(p[1], 63) << 5 | q(p[2], 31);
                    (v as u16).to_le_bytes()
                })
                .collect(),
            Repr::Rgba5551 => gpu
                .chunks_exact(4)
                .flat_map(|p| {
                    let v = q(p[3], 1) << 15 | q(p[0], 31) << 10 | q(p[1], 31) << 5 | q(p[2], 31);
                    (v as u16).to_le_bytes()
                })
                .collect(),
        }
    }
}

/// The wgpu format storing an AeroGPU format, and how.
fn gpu_format(format: Format) -> Option<(wgpu::TextureFormat, Repr)> {
    use wgpu::TextureFormat as T;
    Some(match format {
        Format::B8G8R8A8Unorm | Format::B8G8R8X8Unorm => (T::Bgra8Unorm, Repr::Direct),
        Format::R8G8B8A8Unorm | Format::R8G8B8X8Unorm => (T::Rgba8Unorm, Repr::Direct),
        Format::B5G6R5Unorm => (T::Rgba8Unorm, Repr::Rgb565),
        Format::B5G5R5A1Unorm => (T::Rgba8Unorm, Repr::Rgba5551),
        // A8 and L8A8 keep their bytes; the pixel shader swizzles (TextureRead).
        Format::R8Unorm | Format::A8Unorm => (T::R8Unorm, Repr::Direct),
        Format::R8G8Unorm | Format::L8A8Unorm => (T::Rg8Unorm, Repr::Direct),
        // Signed bytes sample as D3D9 does (-128 and -127 both -1); blue and alpha read 1.
        Format::V8U8Snorm => (T::Rg8Snorm, Repr::Direct),
        Format::Q8W8V8U8Snorm => (T::Rgba8Snorm, Repr::Direct),
        Format::R16G16B16A16Float => (T::Rgba16Float, Repr::Direct),
        Format::R32G32B32A32Float => (T::Rgba32Float, Repr::Direct),
        Format::R32Float | Format::D32Float => (T::R32Float, Repr::Direct),
        Format::D24UnormS8Uint => (T::R32Uint, Repr::Direct),
        Format::D16Unorm => (T::R16Uint, Repr::Direct),
        Format::Bc1Unorm => (T::Bc1RgbaUnorm, Repr::Direct),
        Format::Bc2Unorm => (T::Bc2RgbaUnorm, Repr::Direct),
        Format::Bc3Unorm => (T::Bc3RgbaUnorm, Repr::Direct),
        Format::Invalid => return None,
    })
}

/// How a texture is sampled: a volume as 3D, one cube (6 faces) as a cube, other
/// textures as 2D (arrays when layered; cube arrays do not exist in D3D9).
fn sampled_dimension(d: &TextureDesc) -> wgpu::TextureViewDimension {
    if d.is_volume() {
        wgpu::TextureViewDimension::D3
    } else if d.is_cube() && d.array_layers == 6 {
        wgpu::TextureViewDimension::Cube
    } else if d.array_layers == 1 {
        wgpu::TextureViewDimension::D2
    } else {
        wgpu::TextureViewDimension::D2Array
    }
}

/// The translator's sampler kind of a texture ([`sampled_dimension`]).
fn texture_kind_of(d: &TextureDesc) -> crate::aerogpu::d3d9::TextureKind {
    use crate::aerogpu::d3d9::TextureKind;
    match sampled_dimension(d) {
        wgpu::TextureViewDimension::D3 => TextureKind::Volume,
        wgpu::TextureViewDimension::Cube => TextureKind::Cube,
        _ => TextureKind::Tex2d,
    }
}

// One per resource, in a map: boxing the texture variant would only add an allocation.
#[allow(clippy::large_enum_variant)]
enum Storage {
    Buffer {
        gpu: wgpu::Buffer,
        mirror: Vec<u8>,
    },
    Texture {
        gpu: wgpu::Texture,
        /// All mips and layers (D2 for one layer, D2Array otherwise), for sampling.
        view: wgpu::TextureView,
        /// Mip 0 of layer 0, the render target view.
        target_view: wgpu::TextureView,
        repr: Repr,
        /// Depth formats: the attachment draws test against (a real depth/stencil
        /// format; the raw texture above holds the guest's bits), kept in step with it
        /// by [`depth`].
        depth: Option<DepthAttachment>,
        /// BC1-3 on an adapter without TEXTURE_COMPRESSION_BC (or with the fallback
        /// forced): the guest's blocks (guest layout, the copy reads, copies and
        /// write-backs use), decoded into the RGBA8 texture above whenever they change.
        /// The GPU never writes a BC texture (it cannot be a render target), so these
        /// bytes stay current.
        bc_blocks: Option<(BcKind, RefCell<Vec<u8>>)>,
    },
}

/// A render target as the draw path needs it.
pub struct TargetView<'a> {
    pub view: &'a wgpu::TextureView,
    pub format: wgpu::TextureFormat,
    pub width: u32,
    pub height: u32,
}

struct GpuResource {
    desc: ResourceDesc,
    size_bytes: u64,
    /// Its guest backing, if any, and the bytes (guest layout) the host changed since.
    guest: GuestSync,
    storage: Storage,
}

/// The GPU executor (see the module documentation).
pub struct WgpuExecutor {
    device: wgpu::Device,
    queue: wgpu::Queue,
    bc: bool,
    config: SoftExecutorConfig,
    resources: HashMap<ResourceId, GpuResource>,
    host_bytes: u64,
    outputs: Outputs,
    context: u32,
    parked: BTreeMap<u32, (Outputs, u64)>,
    switches: u64,
    /// PRESENT's side: the presented frame, on the GPU when it can be ([`present`]).
    scanout: present::ScanoutState,
    stats: SoftStats,
    warned_draws: bool,
    /// wgpu validation errors caught by the device's handler since the last check.
    gpu_errors: Arc<Mutex<Vec<String>>>,
    /// Shaders, input layouts, draw state and pipelines (`draw.rs`); `None` only while a
    /// command runs through it (it reads this executor's resources).
    draw: Option<draw::DrawPath>,
    /// Conversions between depth surfaces' raw textures and attachments.
    depth_sync: DepthSync,
    /// Draws rendered.
    draws: u64,
    /// The staging buffer read-backs reuse (taken while one runs).
    readback: std::cell::Cell<Option<wgpu::Buffer>>,
}

impl std::fmt::Debug for WgpuExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WgpuExecutor")
            .field("resources", &self.resources.len())
            .field("host_bytes", &self.host_bytes)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// A device on whatever adapter wgpu finds (WGPU_BACKEND picks the backend; Vulkan by
/// default, Mesa lavapipe on machines without a GPU), with the adapter's own limits (D3D9
/// targets and samplers exceed WebGPU's defaults) and those of `wanted` it has.
pub fn headless_device(wanted: wgpu::Features) -> Result<(wgpu::Device, wgpu::Queue), WgpuError> {
    let backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::VULKAN);
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::LowPower,
        force_fallback_adapter: false,
        compatible_surface: None,
    }))
    .map_err(|e| WgpuError::NoAdapter(e.to_string()))?;
    let info = adapter.get_info();
    tracing::info!("aerogpu: wgpu device on {} ({:?})", info.name, info.backend);
    pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("aerogpu"),
        required_features: adapter.features() & wanted,
        required_limits: adapter.limits(),
        ..Default::default()
    }))
    .map_err(|e| WgpuError::Device(e.to_string()))
}

impl WgpuExecutor {
    /// Whatever adapter wgpu finds (WGPU_BACKEND picks the backend; Vulkan by default,
    /// Mesa lavapipe on machines without a GPU).
    pub fn new_headless(config: SoftExecutorConfig) -> Result<Self, WgpuError> {
        let (device, queue) = headless_device(
            wgpu::Features::TEXTURE_COMPRESSION_BC | wgpu::Features::DEPTH32FLOAT_STENCIL8,
        )?;
        Ok(Self::with_device(device, queue, config))
    }

    /// Shares a device (the window presenter's, for `aero run`).
    pub fn with_device(
        device: wgpu::Device,
        queue: wgpu::Queue,
        config: SoftExecutorConfig,
    ) -> Self {
        let gpu_errors: Arc<Mutex<Vec<String>>> = Arc::default();
        let sink = gpu_errors.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            tracing::error!("aerogpu: wgpu error: {e}");
            if let Ok(mut v) = sink.lock() {
                v.push(e.to_string());
            }
        }));
        let bc = device
            .features()
            .contains(wgpu::Features::TEXTURE_COMPRESSION_BC);
        let draw_path = draw::DrawPath::new(device.clone(), queue.clone());
        Self {
            device,
            queue,
            bc,
            config,
            resources: HashMap::new(),
            host_bytes: 0,
            outputs: Outputs::default(),
            context: 0,
            parked: BTreeMap::new(),
            switches: 0,
            scanout: present::ScanoutState::default(),
            stats: SoftStats::default(),
            warned_draws: false,
            gpu_errors,
            draw: Some(draw_path),
            depth_sync: DepthSync::default(),
            draws: 0,
            readback: std::cell::Cell::new(None),
        }
    }

    /// Decodes BC1-3 textures on the CPU even if the adapter has BC (what an adapter
    /// without TEXTURE_COMPRESSION_BC gets; tests compare it with the native path).
    /// Textures created before keep their storage.
    pub fn with_bc_fallback(mut self) -> Self {
        self.bc = false;
        self
    }

    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    pub fn stats(&self) -> SoftStats {
        self.stats
    }

    /// Draws rendered by the draw path.
    pub fn draws(&self) -> u64 {
        self.draws
    }

    pub fn host_bytes(&self) -> u64 {
        self.host_bytes
    }

    pub fn resource_count(&self) -> usize {
        self.resources.len()
    }

    /// The current context's bound render targets (for the draw path).
    pub fn outputs(&self) -> Outputs {
        self.outputs
    }

    /// A texture's view (all mips and layers), for binding.
    pub fn texture_view(&self, id: ResourceId) -> Option<&wgpu::TextureView> {
        match &self.resources.get(&id)?.storage {
            Storage::Texture { view, .. } => Some(view),
            Storage::Buffer { .. } => None,
        }
    }

    pub fn texture(&self, id: ResourceId) -> Option<&wgpu::Texture> {
        match &self.resources.get(&id)?.storage {
            Storage::Texture { gpu, .. } => Some(gpu),
            Storage::Buffer { .. } => None,
        }
    }

    /// A render target: mip 0 / layer 0 of a colour texture, or a depth format's
    /// depth/stencil attachment.
    pub fn target(&self, id: ResourceId) -> Option<TargetView<'_>> {
        let r = self.resources.get(&id)?;
        let Storage::Texture {
            gpu,
            target_view,
            depth,
            ..
        } = &r.storage
        else {
            return None;
        };
        let ResourceDesc::Texture2d(desc) = r.desc else {
            return None;
        };
        // A volume is sampled only (D3D9 cannot render into one).
        if desc.is_volume() {
            return None;
        }
        let (view, format) = match depth {
            Some(d) => {
                self.attachment_current(id);
                (&d.view, d.texture.format())
            }
            // Compressed, snorm and CPU-decoded BC textures are never attachments.
            None if !gpu.usage().contains(wgpu::TextureUsages::RENDER_ATTACHMENT) => {
                return None;
            }
            None => (target_view, gpu.format()),
        };
        Some(TargetView {
            view,
            format,
            width: desc.width,
            height: desc.height,
        })
    }

    /// The host mirror of a buffer's bytes.
    pub fn buffer_bytes(&self, id: ResourceId) -> Option<&[u8]> {
        match &self.resources.get(&id)?.storage {
            Storage::Buffer { mirror, .. } => Some(mirror),
            Storage::Texture { .. } => None,
        }
    }

    pub fn buffer(&self, id: ResourceId) -> Option<&wgpu::Buffer> {
        match &self.resources.get(&id)?.storage {
            Storage::Buffer { gpu, .. } => Some(gpu),
            Storage::Texture { .. } => None,
        }
    }

    /// The draw path rendered into mip 0 / layer 0 of `id`: its guest bytes changed.
    pub fn mark_render_target_changed(&mut self, id: ResourceId) {
        let Some(r) = self.resources.get_mut(&id) else {
            return;
        };
        if let Storage::Texture { depth: Some(d), .. } = &r.storage {
            d.newer.set(Newer::Attachment);
        }
        let ResourceDesc::Texture2d(desc) = r.desc else {
            return;
        };
        if let Some(sub) = subresource(&desc, 0, 0) {
            let rows = u64::from(sub.height.div_ceil(sub.block_height));
            r.guest
                .host_wrote([(sub.offset, sub.offset + sub.pitch * rows)]);
        }
    }

    /// A resource's bytes in the guest backing layout (row padding reads as zero).
    pub fn resource_bytes(&self, id: ResourceId) -> Option<Vec<u8>> {
        let r = self.resources.get(&id)?;
        match &r.storage {
            Storage::Buffer { mirror, .. } => Some(mirror.clone()),
            Storage::Texture { .. } => {
                let mut out = alloc_zeroed(r.size_bytes).ok()?;
                self.overlay_texels(id, &mut out).ok()?;
                Some(out)
            }
        }
    }

    fn get(&self, id: ResourceId) -> Result<&GpuResource, WgpuError> {
        self.resources
            .get(&id)
            .ok_or(WgpuError::Shared(SoftError::UnknownResource(id)))
    }

    fn texture_desc(&self, id: ResourceId) -> Result<TextureDesc, WgpuError> {
        match self.get(id)?.desc {
            ResourceDesc::Texture2d(d) => Ok(d),
            ResourceDesc::Buffer(_) => Err(SoftError::NotATexture(id).into()),
        }
    }

    fn texture_parts(&self, id: ResourceId) -> Result<(&wgpu::Texture, Repr), WgpuError> {
        match &self.get(id)?.storage {
            Storage::Texture { gpu, repr, .. } => Ok((gpu, *repr)),
            Storage::Buffer { .. } => Err(SoftError::NotATexture(id).into()),
        }
    }

    /// The host blocks of a BC texture decoded for an adapter without BC.
    fn bc_blocks(&self, id: ResourceId) -> Option<(BcKind, &RefCell<Vec<u8>>)> {
        match &self.resources.get(&id)?.storage {
            Storage::Texture {
                bc_blocks: Some((kind, blocks)),
                ..
            } => Some((*kind, blocks)),
            _ => None,
        }
    }

    /// [`Self::write_region`] of a decoded BC texture: the blocks are stored, then
    /// decoded into the texture's RGBA8 texels (cut to the mip's size on the GPU).
    #[allow(clippy::too_many_arguments)]
    fn write_bc_region(
        &self,
        id: ResourceId,
        kind: BcKind,
        blocks: &RefCell<Vec<u8>>,
        (mip, layer, sub): (u32, u32, &Subresource),
        (col0, row0): (u32, u32),
        (cols, rows): (u32, u32),
        guest: &[u8],
    ) -> Result<(), WgpuError> {
        self.flush_if_uses(id)?;
        let row_bytes = u64::from(cols) * u64::from(sub.bytes_per_block);
        {
            let mut blocks = blocks.borrow_mut();
            let len = blocks.len();
            for (i, src) in guest
                .chunks_exact(row_bytes as usize)
                .take(rows as usize)
                .enumerate()
            {
                let at = sub.offset
                    + (u64::from(row0) + i as u64) * sub.pitch
                    + u64::from(col0) * u64::from(sub.bytes_per_block);
                blocks[range(at, row_bytes, len, id)?].copy_from_slice(src);
            }
        }
        let rgba = bc_decode::decode(kind, guest, cols, rows)
            .map_err(|e| WgpuError::Gpu(e.to_string()))?;
        let (texture, _) = self.texture_parts(id)?;
        let mip_w = (texture.width() >> mip).max(1);
        let mip_h = (texture.height() >> mip).max(1);
        let (x0, y0) = (col0 * 4, row0 * 4);
        let w = (cols * 4).min(mip_w.saturating_sub(x0));
        let h = (rows * 4).min(mip_h.saturating_sub(y0));
        if w == 0 || h == 0 {
            return Ok(());
        }
        // Small mips are narrower than a block: keep each row's first `w` texels.
        let full_row = cols as usize * 16;
        let texels: Vec<u8> = rgba
            .chunks_exact(full_row)
            .take(h as usize)
            .flat_map(|row| &row[..w as usize * 4])
            .copied()
            .collect();
        self.queue.write_texture(
            wgpu::TexelCopyTextureInfo {
                texture,
                mip_level: mip,
                origin: wgpu::Origin3d {
                    x: x0,
                    y: y0,
                    z: layer,
                },
                aspect: wgpu::TextureAspect::All,
            },
            &texels,
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(w * 4),
                rows_per_image: Some(h),
            },
            wgpu::Extent3d {
                width: w,
                height: h,
                depth_or_array_layers: 1,
            },
        );
        self.take_gpu_errors()
    }

    /// A depth surface's format, raw texture view (mip 0 / layer 0) and attachment.
    fn depth_parts(
        &self,
        id: ResourceId,
    ) -> Option<(Format, &wgpu::TextureView, &DepthAttachment)> {
        let r = self.resources.get(&id)?;
        match (&r.storage, r.desc) {
            (
                Storage::Texture {
                    target_view,
                    depth: Some(att),
                    ..
                },
                ResourceDesc::Texture2d(desc),
            ) => Some((desc.format, target_view, att)),
            _ => None,
        }
    }

    /// Brings a depth surface's raw texture up to date (draws changed the attachment).
    fn raw_current(&self, id: ResourceId) {
        if let Some((format, raw, att)) = self.depth_parts(id)
            && att.newer.get() == Newer::Attachment
        {
            self.depth_sync
                .attachment_to_raw(&self.device, &self.queue, format, raw, att);
            att.newer.set(Newer::Neither);
        }
    }

    /// A whole-surface clear of a depth surface to a value the attachment stores and
    /// reads back exactly (see [`depth::exact_clear`]): the attachment is cleared the
    /// same way, sparing the conversion pass before the next draw.
    fn clear_attachment_exactly(
        &self,
        id: ResourceId,
        format: Format,
        texel: &[u8],
    ) -> Result<(), WgpuError> {
        let Some((_, _, att)) = self.depth_parts(id) else {
            return Ok(());
        };
        let Some((depth, stencil)) = depth::exact_clear(format, texel) else {
            return Ok(());
        };
        let mut enc = self.device.create_command_encoder(&Default::default());
        drop(enc.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("aerogpu depth clear"),
            color_attachments: &[],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &att.view,
                depth_ops: Some(wgpu::Operations {
                    load: wgpu::LoadOp::Clear(depth),
                    store: wgpu::StoreOp::Store,
                }),
                stencil_ops: att.texture.format().has_stencil_aspect().then_some(
                    wgpu::Operations {
                        load: wgpu::LoadOp::Clear(stencil),
                        store: wgpu::StoreOp::Store,
                    },
                ),
            }),
            ..Default::default()
        }));
        self.queue.submit([enc.finish()]);
        att.newer.set(Newer::Neither);
        self.take_gpu_errors()
    }

    /// A depth surface's raw texture changed: draws must see it.
    fn raw_changed(&self, id: ResourceId) {
        if let Some((_, _, att)) = self.depth_parts(id) {
            att.newer.set(Newer::Raw);
        }
    }

    /// Brings a depth surface's attachment up to date (the raw texture changed).
    fn attachment_current(&self, id: ResourceId) {
        if let Some((format, raw, att)) = self.depth_parts(id)
            && att.newer.get() == Newer::Raw
        {
            self.depth_sync
                .raw_to_attachment(&self.device, &self.queue, format, raw, att);
            att.newer.set(Newer::Neither);
        }
    }

    fn take_gpu_errors(&self) -> Result<(), WgpuError> {
        let mut errors = self
            .gpu_errors
            .lock()
            .map_err(|_| WgpuError::Gpu("error handler poisoned".into()))?;
        if errors.is_empty() {
            return Ok(());
        }
        let all = std::mem::take(&mut *errors).join("; ");
        Err(WgpuError::Gpu(all))
    }

    /// Submits the draws batched so far (before anything that must see their results or
    /// be ordered after them).
    fn flush_draws(&self) -> Result<(), WgpuError> {
        match &self.draw {
            Some(path) => path.batch.flush().map_err(WgpuError::Gpu),
            None => Ok(()),
        }
    }

    /// [`Self::flush_draws`] when a batched draw renders to or samples texture `id`
    /// (queue writes run ahead of the batch).
    fn flush_if_uses(&self, id: ResourceId) -> Result<(), WgpuError> {
        match &self.draw {
            Some(path) if path.batch.uses_texture(id) => self.flush_draws(),
            _ => Ok(()),
        }
    }

    /// Draw batches submitted, render passes and draws they held.
    pub fn batch_stats(&self) -> batch::BatchStats {
        self.draw
            .as_ref()
            .map(|p| *p.batch.stats.borrow())
            .unwrap_or_default()
    }

    fn switch_context(&mut self, context_id: u32) {
        ContextParking {
            current: &mut self.outputs,
            context: &mut self.context,
            parked: &mut self.parked,
            switches: &mut self.switches,
        }
        .switch_to(context_id);
    }

    fn make_storage(&self, desc: &ResourceDesc, size_bytes: u64) -> Result<Storage, WgpuError> {
        let limits = self.device.limits();
        match *desc {
            ResourceDesc::Buffer(_) => {
                if size_bytes > limits.max_buffer_size {
                    return Err(WgpuError::Unsupported {
                        what: format!("a {size_bytes}-byte buffer"),
                    });
                }
                let mirror = alloc_zeroed(size_bytes)?;
                let gpu = self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: None,
                    size: size_bytes.next_multiple_of(4).max(4),
                    usage: wgpu::BufferUsages::VERTEX
                        | wgpu::BufferUsages::INDEX
                        | wgpu::BufferUsages::COPY_DST
                        | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                });
                Ok(Storage::Buffer { gpu, mirror })
            }
            ResourceDesc::Texture2d(d) => {
                let (format, repr) = gpu_format(d.format).ok_or(SoftError::Format {
                    what: "texture",
                    format: d.format,
                })?;
                let block = format.block_dimensions();
                let (w, h) = (
                    d.width.next_multiple_of(block.0),
                    d.height.next_multiple_of(block.1),
                );
                // Without BC the texture holds the decoded texels (same size: whole
                // blocks), and the blocks live on the host.
                let (format, bc_blocks) = match BcKind::from_format(d.format) {
                    Some(kind) if !self.bc => (
                        wgpu::TextureFormat::Rgba8Unorm,
                        Some((kind, RefCell::new(alloc_zeroed(size_bytes)?))),
                    ),
                    _ => (format, None),
                };
                // Never a render target: the GPU must not change what the blocks hold.
                let compressed = bc_blocks.is_some() || format.block_dimensions().0 > 1;
                let volume = d.is_volume();
                let too_large = if volume {
                    w.max(h).max(d.depth) > limits.max_texture_dimension_3d
                } else {
                    w > limits.max_texture_dimension_2d
                        || h > limits.max_texture_dimension_2d
                        || d.array_layers > limits.max_texture_array_layers
                };
                if too_large {
                    return Err(WgpuError::Unsupported {
                        what: format!("a {w}x{h}x{} texture", d.array_layers.max(d.depth)),
                    });
                }
                let mut usage = wgpu::TextureUsages::TEXTURE_BINDING
                    | wgpu::TextureUsages::COPY_SRC
                    | wgpu::TextureUsages::COPY_DST;
                // Snorm formats are not renderable in WebGPU (nor render targets in D3D9).
                let snorm = matches!(d.format, Format::V8U8Snorm | Format::Q8W8V8U8Snorm);
                if !compressed && !volume && !snorm {
                    usage |= wgpu::TextureUsages::RENDER_ATTACHMENT;
                }
                let gpu = self.device.create_texture(&wgpu::TextureDescriptor {
                    label: None,
                    size: wgpu::Extent3d {
                        width: w,
                        height: h,
                        depth_or_array_layers: if volume { d.depth } else { d.array_layers },
                    },
                    mip_level_count: d.mip_levels,
                    sample_count: 1,
                    dimension: if volume {
                        wgpu::TextureDimension::D3
                    } else {
                        wgpu::TextureDimension::D2
                    },
                    format,
                    usage,
                    view_formats: &[],
                });
                let view = gpu.create_view(&wgpu::TextureViewDescriptor {
                    dimension: Some(sampled_dimension(&d)),
                    ..Default::default()
                });
                // A volume has no render target view: `target` refuses it.
                let target_view = gpu.create_view(&wgpu::TextureViewDescriptor {
                    dimension: Some(if volume {
                        wgpu::TextureViewDimension::D3
                    } else {
                        wgpu::TextureViewDimension::D2
                    }),
                    base_mip_level: 0,
                    mip_level_count: Some(1),
                    base_array_layer: 0,
                    array_layer_count: Some(1),
                    ..Default::default()
                });
                let depth = DepthAttachment::new(&self.device, d.format, w, h);
                Ok(Storage::Texture {
                    gpu,
                    view,
                    target_view,
                    repr,
                    depth,
                    bc_blocks,
                })
            }
        }
    }

    /// Every (mip, layer) of a texture with its layout; a volume's "layers" are the
    /// depth slices of each mip (the z of its copies).
    fn subresources(desc: &TextureDesc) -> impl Iterator<Item = (u32, u32, Subresource)> + '_ {
        (0..desc.layers_of_mip(0)).flat_map(move |layer| {
            (0..desc.mip_levels)
                .filter_map(move |mip| subresource(desc, mip, layer).map(|s| (mip, layer, s)))
        })
    }

    /// Reads block rows `[row0, row0 + rows)` of one subresource as tightly packed guest
    /// bytes.
    fn read_rows(
        &self,
        id: ResourceId,
        (mip, layer, sub): (u32, u32, &Subresource),
        row0: u32,
        rows: u32,
    ) -> Result<Vec<u8>, WgpuError> {
        if let Some((_, blocks)) = self.bc_blocks(id) {
            let blocks = blocks.borrow();
            let tight =
                u64::from(sub.width.div_ceil(sub.block_width)) * u64::from(sub.bytes_per_block);
            let mut out = Vec::new();
            for row in row0..row0.saturating_add(rows) {
                let at = sub.offset + u64::from(row) * sub.pitch;
                out.extend_from_slice(&blocks[range(at, tight, blocks.len(), id)?]);
            }
            return Ok(out);
        }
        self.flush_draws()?;
        self.raw_current(id);
        let (texture, repr) = self.texture_parts(id)?;
        self.read_texture_rows(texture, repr, (mip, layer, sub), row0, rows)
    }

    /// [`Self::read_rows`] from the GPU: block rows of one subresource of `texture`
    /// (texels as `repr` stores them), converted to tightly packed guest bytes.
    fn read_texture_rows(
        &self,
        texture: &wgpu::Texture,
        repr: Repr,
        (mip, layer, sub): (u32, u32, &Subresource),
        row0: u32,
        rows: u32,
    ) -> Result<Vec<u8>, WgpuError> {
        let blocks_w = sub.width.div_ceil(sub.block_width);
        let gpu_row =
            u64::from(blocks_w) * u64::from(repr.gpu_bytes_per_block(sub.bytes_per_block));
        let padded = gpu_row.next_multiple_of(u64::from(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT));
        // One staging buffer kept for every read-back (a fresh one per present cost
        // lavapipe a multi-megabyte allocation and its page faults each frame).
        let needed = (padded * u64::from(rows)).max(4);
        let staging = match self.readback.take() {
            Some(b) if b.size() >= needed => b,
            _ => self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("aerogpu read-back"),
                size: needed.next_multiple_of(1 << 20),
                usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
                mapped_at_creation: false,
            }),
        };
        let data = self.read_back(&staging, needed, |enc| {
            enc.copy_texture_to_buffer(
                wgpu::TexelCopyTextureInfo {
                    texture,
                    mip_level: mip,
                    origin: wgpu::Origin3d {
                        x: 0,
                        y: row0 * sub.block_height,
                        z: layer,
                    },
                    aspect: wgpu::TextureAspect::All,
                },
                wgpu::TexelCopyBufferInfo {
                    buffer: &staging,
                    layout: wgpu::TexelCopyBufferLayout {
                        offset: 0,
                        bytes_per_row: Some(padded as u32),
                        rows_per_image: Some(rows),
                    },
                },
                wgpu::Extent3d {
                    width: blocks_w * sub.block_width,
                    height: rows * sub.block_height,
                    depth_or_array_layers: 1,
                },
            );
        })?;
        let mut out = Vec::with_capacity(
            (u64::from(blocks_w) * u64::from(sub.bytes_per_block) * u64::from(rows)) as usize,
        );
        for row in data.chunks(padded as usize).take(rows as usize) {
            match repr {
                Repr::Direct => out.extend_from_slice(&row[..gpu_row as usize]),
                _ => out.extend(repr.to_guest(&row[..gpu_row as usize])),
            }
        }
        drop(data);
        staging.unmap();
        self.readback.set(Some(staging));
        Ok(out)
    }

    /// Writes tightly packed guest bytes over block rows `[row0, row0 + rows)`, block
    /// columns `[col0, col0 + cols)` of one subresource.
    #[allow(clippy::too_many_arguments)]
    fn write_region(
        &self,
        id: ResourceId,
        (mip, layer, sub): (u32, u32, &Subresource),
        (col0, row0): (u32, u32),
        (cols, rows): (u32, u32),
        guest: &[u8],
    ) -> Result<(), WgpuError> {
        if let Some((kind, blocks)) = self.bc_blocks(id) {
            return self.write_bc_region(
                id,
                kind,
                blocks,
                (mip, layer, sub),
                (col0, row0),
                (cols, rows),
                guest,
            );
        }
        self.flush_if_uses(id)?;
        // Texels outside this region keep what draws left there.
        let whole = mip == 0 && layer == 0 && col0 == 0 && row0 == 0;
        if !(whole && cols >= sub.width && rows >= sub.height) {
            self.raw_current(id);
        }
        self.raw_changed(id);
        let (texture, repr) = self.texture_parts(id)?;
        let gpu = repr.to_gpu(guest);
        let gpu_row = cols * repr.gpu_bytes_per_block(sub.bytes_per_block);
        self.queue.write_texture(
            wgpu::TexelCopyTextureInfo {
                texture,
                mip_level: mip,
                origin: wgpu::Origin3d {
                    x: col0 * sub.block_width,
                    y: row0 * sub.block_height,
                    z: layer,
                },
                aspect: wgpu::TextureAspect::All,
            },
            &gpu,
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(gpu_row),
                rows_per_image: Some(rows),
            },
            wgpu::Extent3d {
                width: cols * sub.block_width,
                height: rows * sub.block_height,
                depth_or_array_layers: 1,
            },
        );
        self.take_gpu_errors()
    }

    /// Loads a resource's `size` bytes from its guest backing (create and rebind: guest
    /// memory is the content).
    fn load_backing(
        &mut self,
        id: ResourceId,
        size: u64,
        backing: ResolvedBacking,
        mem: &dyn GuestMemory,
    ) -> Result<(), WgpuError> {
        let mut bytes = alloc_zeroed(size)?;
        mem.read(backing.gpa, &mut bytes)?;
        self.write_bytes(id, 0, &bytes)?;
        self.stats.uploaded_bytes += size;
        Ok(())
    }

    /// Writes guest-layout bytes at `offset` of a resource (partial rows are merged with
    /// the texture's current rows; row padding is dropped).
    fn write_bytes(&mut self, id: ResourceId, offset: u64, data: &[u8]) -> Result<(), WgpuError> {
        let end = offset.saturating_add(data.len() as u64);
        if let Some(path) = &self.draw
            && path.batch.reads_buffer(id, offset, end)
        {
            self.flush_draws()?;
        }
        let r = self
            .resources
            .get_mut(&id)
            .ok_or(SoftError::UnknownResource(id))?;
        if let Storage::Buffer { gpu, mirror } = &mut r.storage {
            let span = range(offset, data.len() as u64, mirror.len(), id)?;
            mirror[span].copy_from_slice(data);
            // Whole aligned words from the mirror (wgpu writes 4-byte multiples).
            let start = offset & !3;
            let stop = end.next_multiple_of(4);
            let mut words = mirror[start as usize..(stop as usize).min(mirror.len())].to_vec();
            words.resize((stop - start) as usize, 0);
            self.queue.write_buffer(gpu, start, &words);
            return self.take_gpu_errors();
        }
        let desc = self.texture_desc(id)?;
        range(
            offset,
            data.len() as u64,
            self.get(id)?.size_bytes as usize,
            id,
        )?;
        for (mip, layer, sub) in Self::subresources(&desc) {
            let rows_total = sub.height.div_ceil(sub.block_height);
            let sub_end = sub.offset + sub.pitch * u64::from(rows_total);
            let (s, e) = (offset.max(sub.offset), end.min(sub_end));
            if s >= e {
                continue;
            }
            let tight =
                u64::from(sub.width.div_ceil(sub.block_width)) * u64::from(sub.bytes_per_block);
            let row0 = ((s - sub.offset) / sub.pitch) as u32;
            let row1 = ((e - sub.offset).div_ceil(sub.pitch) as u32).min(rows_total);
            if row0 >= row1 {
                continue;
            }
            // Covered whole rows need no read-back.
            let whole = (row0..row1).all(|row| {
                let rs = sub.offset + u64::from(row) * sub.pitch;
                s <= rs && rs + tight <= e
            });
            let mut rows = if whole {
                vec![0u8; (tight * u64::from(row1 - row0)) as usize]
            } else {
                self.read_rows(id, (mip, layer, &sub), row0, row1 - row0)?
            };
            for row in row0..row1 {
                let rs = sub.offset + u64::from(row) * sub.pitch;
                let (cs, ce) = (s.max(rs), e.min(rs + tight));
                if cs >= ce {
                    continue;
                }
                let at = (u64::from(row - row0) * tight + (cs - rs)) as usize;
                let from = (cs - offset) as usize;
                let n = (ce - cs) as usize;
                rows[at..at + n].copy_from_slice(&data[from..from + n]);
            }
            let cols = sub.width.div_ceil(sub.block_width);
            self.write_region(
                id,
                (mip, layer, &sub),
                (0, row0),
                (cols, row1 - row0),
                &rows,
            )?;
        }
        Ok(())
    }

    /// Copies every texel of a texture over `image` (its guest layout).
    fn overlay_texels(&self, id: ResourceId, image: &mut [u8]) -> Result<(), WgpuError> {
        let desc = self.texture_desc(id)?;
        for (mip, layer, sub) in Self::subresources(&desc) {
            self.overlay_subresource(id, (mip, layer, &sub), 0..u32::MAX, image)?;
        }
        Ok(())
    }

    fn overlay_subresource(
        &self,
        id: ResourceId,
        (mip, layer, sub): (u32, u32, &Subresource),
        rows: std::ops::Range<u32>,
        image: &mut [u8],
    ) -> Result<(), WgpuError> {
        let rows = rows.start..rows.end.min(sub.height.div_ceil(sub.block_height));
        if rows.is_empty() {
            return Ok(());
        }
        let tight = (u64::from(sub.width.div_ceil(sub.block_width))
            * u64::from(sub.bytes_per_block)) as usize;
        let data = self.read_rows(id, (mip, layer, sub), rows.start, rows.len() as u32)?;
        for (i, bytes) in data.chunks_exact(tight).enumerate() {
            let at = sub.offset + (u64::from(rows.start) + i as u64) * sub.pitch;
            let span = range(at, tight as u64, image.len(), id)?;
            image[span].copy_from_slice(bytes);
        }
        Ok(())
    }

    /// Writes `ranges` of a resource into its backing (texture row padding keeps the
    /// guest's bytes).
    fn write_back(
        &mut self,
        id: ResourceId,
        backing: &ResolvedBacking,
        ranges: &[(u64, u64)],
        mem: &mut dyn GuestMemory,
    ) -> Result<(), WgpuError> {
        if ranges.is_empty() {
            return Ok(());
        }
        let r = self.get(id)?;
        let image = match &r.storage {
            Storage::Buffer { mirror, .. } => std::borrow::Cow::Borrowed(mirror.as_slice()),
            Storage::Texture { .. } => {
                let mut image = alloc_zeroed(r.size_bytes)?;
                mem.read(backing.gpa, &mut image)?;
                let desc = self.texture_desc(id)?;
                // Only the rows the ranges touch are read back.
                for (mip, layer, sub) in Self::subresources(&desc) {
                    let rows = u64::from(sub.height.div_ceil(sub.block_height));
                    let (s0, s1) = (sub.offset, sub.offset + sub.pitch * rows);
                    let touched = ranges
                        .iter()
                        .filter(|&&(s, e)| s < s1 && e > s0)
                        .map(|&(s, e)| {
                            let first = (s.max(s0) - s0) / sub.pitch;
                            let end = (e.min(s1) - s0).div_ceil(sub.pitch);
                            (first as u32, end as u32)
                        })
                        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
                    if let Some((first, end)) = touched {
                        self.overlay_subresource(id, (mip, layer, &sub), first..end, &mut image)?;
                    }
                }
                std::borrow::Cow::Owned(image)
            }
        };
        self.stats.written_back_bytes += common::write_ranges(&image, backing, ranges, mem)?;
        Ok(())
    }

    fn host_changed(
        &mut self,
        id: ResourceId,
        ranges: Vec<(u64, u64)>,
        writeback: Option<ResolvedBacking>,
        mem: &mut dyn GuestMemory,
    ) -> Result<(), WgpuError> {
        if let Some(b) = writeback {
            self.write_back(id, &b, &ranges, mem)?;
            if let Some(r) = self.resources.get_mut(&id) {
                r.guest.written_back(ranges);
            }
        } else if let Some(r) = self.resources.get_mut(&id) {
            r.guest.host_wrote(ranges);
        }
        Ok(())
    }

    /// The presented frame of a target: mip 0 / layer 0 as RGBA8.
    fn frame_of(&self, id: ResourceId) -> Result<Frame, WgpuError> {
        let desc = self.texture_desc(id)?;
        let sub = common::presentable(&desc, id)?;
        let rows = self.read_rows(id, (0, 0, &sub), 0, desc.height)?;
        Ok(frame_of_rows(&desc, &sub, &rows))
    }

    fn run(&mut self, command: &Command<'_>, mem: &mut dyn GuestMemory) -> Result<(), WgpuError> {
        // Commands that keep a draw batch going: draw-path state and draws, and those that
        // write through the queue (they flush when they touch what the batch uses).
        let keeps_batch = matches!(
            command,
            Command::CreateResource { .. }
                | Command::ResourceDirtyRange { .. }
                | Command::UploadResource { .. }
                | Command::Clear(_)
                | Command::ClearRects { .. }
                | Command::Draw(_)
                | Command::DrawIndexed(_)
                | Command::Nop
                | Command::DebugMarker(_)
                | Command::CreateShader { .. }
                | Command::DestroyShader { .. }
                | Command::BindShaders { .. }
                | Command::SetShaderConstants { .. }
                | Command::CreateInputLayout { .. }
                | Command::DestroyInputLayout { .. }
                | Command::SetInputLayout { .. }
                | Command::SetBlendState(_)
                | Command::SetDepthStencilState(_)
                | Command::SetRasterizerState(_)
                | Command::SetRenderState { .. }
                | Command::SetSamplerState { .. }
                | Command::SetTextureStageState { .. }
                | Command::SetRenderTargets { .. }
                | Command::SetViewport(_)
                | Command::SetScissor(_)
                | Command::SetVertexBuffers { .. }
                | Command::SetIndexBuffer { .. }
                | Command::SetPrimitiveTopology(_)
                | Command::SetTexture { .. }
        );
        if !keeps_batch {
            self.flush_draws()?;
        }
        // Draw-path commands (shaders, layouts, state, draws) go to the draw path;
        // SET_RENDER_TARGETS is state there and here.
        if let Some(mut path) = self.draw.take() {
            let result = draw::execute_draw(self, &mut path, command);
            self.draw = Some(path);
            let handled = result.map_err(|e| WgpuError::Gpu(e.to_string()))?;
            if matches!(command, Command::Draw(_) | Command::DrawIndexed(_)) {
                self.draws += 1;
            }
            if handled && !matches!(command, Command::SetRenderTargets { .. }) {
                return Ok(());
            }
        }
        common::dispatch(self, command, mem)
    }
}

impl ResourceCommands for WgpuExecutor {
    type Error = WgpuError;

    fn outputs_mut(&mut self) -> &mut Outputs {
        &mut self.outputs
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
    ) -> Result<(), WgpuError> {
        if let Some(r) = self.resources.get_mut(&id) {
            // Rebind: same properties, new backing; guest memory is the content again.
            r.guest = GuestSync::new(backing.is_some());
            let size = r.size_bytes;
            if let Some(b) = backing {
                self.load_backing(id, size, b, mem)?;
            }
            return Ok(());
        }
        common::check_host_cap(self.config.max_host_bytes, self.host_bytes, size_bytes)?;
        let storage = self.make_storage(&desc, size_bytes)?;
        self.host_bytes += size_bytes;
        self.resources.insert(
            id,
            GpuResource {
                desc,
                size_bytes,
                guest: GuestSync::new(backing.is_some()),
                storage,
            },
        );
        if let Some(b) = backing {
            self.load_backing(id, size_bytes, b, mem)?;
        }
        Ok(())
    }

    fn unbind(&mut self, id: ResourceId) {
        common::unbind_everywhere(&mut self.outputs, &mut self.parked, id);
    }

    fn destroy(&mut self, id: ResourceId) {
        if let Some(r) = self.resources.remove(&id) {
            self.host_bytes = self.host_bytes.saturating_sub(r.size_bytes);
            match r.storage {
                Storage::Buffer { gpu, .. } => gpu.destroy(),
                Storage::Texture { gpu, depth, .. } => {
                    gpu.destroy();
                    if let Some(d) = depth {
                        d.texture.destroy();
                    }
                }
            }
        }
    }

    fn dirty_range(
        &mut self,
        id: ResourceId,
        offset: u64,
        size: u64,
        backing: Option<ResolvedBacking>,
        mem: &dyn GuestMemory,
    ) -> Result<(), WgpuError> {
        let Some(b) = backing else {
            return Ok(());
        };
        let total = self.get(id)?.size_bytes;
        range(offset, size, total as usize, id)?;
        let mut bytes = alloc_zeroed(size)?;
        mem.read(b.gpa.wrapping_add(offset), &mut bytes)?;
        self.write_bytes(id, offset, &bytes)?;
        if let Some(r) = self.resources.get_mut(&id) {
            r.guest.read_in(offset, offset.saturating_add(size));
        }
        self.stats.uploaded_bytes += size;
        Ok(())
    }

    fn upload(&mut self, id: ResourceId, offset: u64, data: &[u8]) -> Result<(), WgpuError> {
        self.write_bytes(id, offset, data)?;
        if let Some(r) = self.resources.get_mut(&id) {
            r.guest.host_wrote([(offset, offset + data.len() as u64)]);
        }
        Ok(())
    }

    fn copy_buffer(
        &mut self,
        dst: ResourceId,
        src: ResourceId,
        (dst_offset, src_offset, size): (u64, u64, u64),
        writeback: Option<ResolvedBacking>,
        mem: &mut dyn GuestMemory,
    ) -> Result<(), WgpuError> {
        let bytes = match &self.get(src)?.storage {
            Storage::Buffer { mirror, .. } => {
                mirror[range(src_offset, size, mirror.len(), src)?].to_vec()
            }
            Storage::Texture { .. } => return Err(SoftError::OutOfRange(src).into()),
        };
        if !matches!(self.get(dst)?.storage, Storage::Buffer { .. }) {
            return Err(SoftError::OutOfRange(dst).into());
        }
        self.write_bytes(dst, dst_offset, &bytes)?;
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
    ) -> Result<(), WgpuError> {
        let (sd, dd) = (self.texture_desc(src)?, self.texture_desc(dst)?);
        let Some(plan) = common::texture_copy(&sd, &dd, c, dst)? else {
            return Ok(());
        };
        let (s, d) = (&plan.src, &plan.dst);
        let (bw, bh) = (s.block_width, s.block_height);
        let (cols, rows, row_bytes) = (plan.cols, plan.rows, plan.row_bytes);
        // Byte offsets the CPU executor copies, checked the same way.
        let (ssize, dsize) = (self.get(src)?.size_bytes, self.get(dst)?.size_bytes);
        for &(f, t) in &plan.pairs {
            range(f, row_bytes, ssize as usize, src)?;
            range(t, row_bytes, dsize as usize, dst)?;
        }
        let within = |sub: &Subresource, x: u32, y: u32| {
            x / bw + cols <= sub.width.div_ceil(bw) && y / bh + rows <= sub.height.div_ceil(bh)
        };
        // Decoded BC textures keep their blocks on the host: the byte copy below.
        let same_format = gpu_format(sd.format).map(|f| f.0) == gpu_format(dd.format).map(|f| f.0)
            && self.bc_blocks(src).is_none()
            && self.bc_blocks(dst).is_none();
        if src != dst && same_format && within(s, c.src_x, c.src_y) && within(d, c.dst_x, c.dst_y) {
            self.raw_current(src);
            self.raw_current(dst);
            self.raw_changed(dst);
            let (st, _) = self.texture_parts(src)?;
            let (dt, _) = self.texture_parts(dst)?;
            let mut enc = self.device.create_command_encoder(&Default::default());
            enc.copy_texture_to_texture(
                wgpu::TexelCopyTextureInfo {
                    texture: st,
                    mip_level: c.src_mip_level,
                    origin: wgpu::Origin3d {
                        x: c.src_x,
                        y: c.src_y,
                        z: c.src_array_layer,
                    },
                    aspect: wgpu::TextureAspect::All,
                },
                wgpu::TexelCopyTextureInfo {
                    texture: dt,
                    mip_level: c.dst_mip_level,
                    origin: wgpu::Origin3d {
                        x: c.dst_x,
                        y: c.dst_y,
                        z: c.dst_array_layer,
                    },
                    aspect: wgpu::TextureAspect::All,
                },
                wgpu::Extent3d {
                    width: cols * bw,
                    height: rows * bh,
                    depth_or_array_layers: 1,
                },
            );
            self.queue.submit([enc.finish()]);
            self.take_gpu_errors()?;
        } else {
            // Same texture (wgpu cannot copy a subresource onto itself) or formats that
            // differ: the CPU executor's byte copy, through read-back and upload.
            let mut src_image = alloc_zeroed(ssize)?;
            let src_sub = (c.src_mip_level, c.src_array_layer, s);
            self.overlay_subresource(src, src_sub, 0..u32::MAX, &mut src_image)?;
            let moved: Vec<(u64, Vec<u8>)> = plan
                .pairs
                .iter()
                .map(|&(f, t)| (t, src_image[f as usize..(f + row_bytes) as usize].to_vec()))
                .collect();
            for (t, bytes) in moved {
                self.write_bytes(dst, t, &bytes)?;
            }
        }
        self.stats.copies += 1;
        let ranges = plan
            .pairs
            .iter()
            .map(|&(_, t)| (t, t + row_bytes))
            .collect();
        self.host_changed(dst, ranges, writeback, mem)
    }

    fn fill(
        &mut self,
        id: ResourceId,
        rects: &[Rect],
        fill: &TexelFill,
        mem: &mut dyn GuestMemory,
    ) -> Result<(), WgpuError> {
        self.flush_if_uses(id)?;
        let desc = self.texture_desc(id)?;
        let sub = subresource(&desc, 0, 0).ok_or(SoftError::OutOfRange(id))?;
        let bpp = sub.bytes_per_block as usize;
        for &rect in rects {
            let Some(c) = Clipped::new(&sub, rect) else {
                continue;
            };
            let data = if fill.is_constant() {
                fill.value.repeat(c.cols as usize * c.rows as usize)
            } else {
                let old = self.read_rows(id, (0, 0, &sub), c.y, c.rows)?;
                let tight = sub.width as usize * bpp;
                let mut out = Vec::with_capacity(c.cols as usize * c.rows as usize * bpp);
                for row in old.chunks_exact(tight) {
                    out.extend_from_slice(&row[c.x as usize * bpp..(c.x + c.cols) as usize * bpp]);
                }
                out.chunks_exact_mut(bpp).for_each(|px| fill.apply(px));
                out
            };
            self.write_region(id, (0, 0, &sub), (c.x, c.y), (c.cols, c.rows), &data)?;
            let whole = c.x == 0 && c.y == 0 && c.cols == sub.width && c.rows == sub.height;
            if whole && fill.is_constant() {
                self.clear_attachment_exactly(id, desc.format, &fill.value)?;
            }
            self.host_changed(id, c.row_ranges(&sub), None, mem)?;
        }
        Ok(())
    }

    fn count_clear(&mut self) {
        self.stats.clears += 1;
    }

    fn skip_draw(&mut self) {
        if self.draw.is_none() && !self.warned_draws {
            self.warned_draws = true;
            tracing::warn!("aerogpu: GPU executor without a draw path; draws skipped");
        }
        self.stats.draws_skipped += u64::from(self.draw.is_none());
    }

    fn present(
        &mut self,
        target: Option<ResourceId>,
        backing: Option<ResolvedBacking>,
        mem: &mut dyn GuestMemory,
    ) -> Result<(), WgpuError> {
        self.stats.presents += 1;
        let Some(id) = target else {
            return Ok(());
        };
        let r = self.get(id)?;
        match r.guest.present_action(id, backing) {
            PresentAction::ShowHostCopy => {
                self.present_host_copy(id)?;
                self.stats.host_presents += 1;
            }
            PresentAction::GuestMatches => self.scanout.presented = None,
            PresentAction::WriteBack(b) => {
                self.scanout.presented = None;
                let ranges = self
                    .resources
                    .get_mut(&id)
                    .map(|r| r.guest.take_dirty())
                    .unwrap_or_default();
                self.write_back(id, &b, &ranges, mem)?;
            }
        }
        Ok(())
    }
}

impl Executor for WgpuExecutor {
    fn begin_submission(&mut self, info: &SubmissionInfo) {
        self.stats.submissions += 1;
        self.switch_context(info.context_id);
        if let Some(path) = &mut self.draw {
            path.set_context(info.context_id);
        }
    }

    fn execute(&mut self, command: &Command<'_>, mem: &mut dyn GuestMemory) -> Result<(), String> {
        self.stats.commands += 1;
        let result = self.run(command, mem).and_then(|()| self.take_gpu_errors());
        result.map_err(|e| e.to_string())
    }

    fn flush(&mut self) -> Result<(), String> {
        self.flush_draws().map_err(|e| e.to_string())
    }

    fn reset(&mut self) {
        if let Some(path) = &self.draw {
            path.batch.discard();
        }
        for id in self.resources.keys().copied().collect::<Vec<_>>() {
            self.destroy(id);
        }
        self.outputs = Outputs::default();
        self.parked.clear();
        self.context = 0;
        self.scanout.reset();
        self.stats = SoftStats::default();
        if let Some(path) = &mut self.draw {
            path.reset();
        }
    }

    fn presented_generation(&self) -> Option<u64> {
        self.scanout.generation()
    }

    fn read_presented(&self, frame: &mut Frame) -> bool {
        match self.read_presented_into(frame) {
            Ok(shown) => shown,
            Err(e) => {
                tracing::warn!(error = %e, "aerogpu: presented frame not read back");
                false
            }
        }
    }

    fn presented_texture(&self) -> Option<crate::aerogpu::PresentedTexture> {
        self.scanout.texture()
    }

    fn scanout_reprogrammed(&mut self) {
        self.scanout.presented = None;
    }
}

/// A presentable mip 0 ([`common::presentable`]'s `sub`) from its tightly packed guest
/// rows.
fn frame_of_rows(desc: &TextureDesc, sub: &Subresource, rows: &[u8]) -> Frame {
    let row_len = desc.width as usize * sub.bytes_per_block as usize;
    common::frame_from_rows(desc, sub, rows.chunks_exact(row_len))
}

// Draws through the processor into this executor: depth surfaces, the BC fallback.

#[cfg(test)]
#[path = "executor_draw_tests.rs"]
mod executor_draw_tests;

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn expanded_16_bit_formats_round_trip_every_value() {
        for v in 0..=u16::MAX {
            let bytes = v.to_le_bytes();
            assert_eq!(Repr::Rgb565.to_guest(&Repr::Rgb565.to_gpu(&bytes)), bytes);
            assert_eq!(
                Repr::Rgba5551.to_guest(&Repr::Rgba5551.to_gpu(&bytes)),
                bytes
            );
        }
    }
}
