//! The AeroGPU device: BAR0 register file, doorbell-driven ring consumption, fences,
//! interrupts, error latching, vblank, scanout and cursor registers.
//!
//! Wiring (for the machine):
//! - PCI: [`AEROGPU_PCI_DESCRIPTION`](super::AEROGPU_PCI_DESCRIPTION); BAR0 accesses go
//!   to [`AeroGpu::mmio_read`] / [`AeroGpu::mmio_write`] with the offset inside BAR0.
//! - INTx: after every MMIO access and [`AeroGpu::tick`], drive the function's interrupt
//!   line with [`AeroGpu::irq_level`] (level-triggered).
//! - Time: call [`AeroGpu::tick`] with the machine's virtual time, at the latest at
//!   [`AeroGpu::next_deadline_ns`] (vblank) and before MMIO accesses if convenient.
//! - Display: [`AeroGpu::render_scanout`] fills the machine's current [`Frame`].

use aero_protocol::ABI_VERSION_U32;
use aero_protocol::pci::{
    self, ErrorCode, FEATURE_ERROR_INFO, FEATURE_FENCE_PAGE, FEATURE_VBLANK, reg,
};
use aero_protocol::ring::{FENCE_PAGE_MAGIC, FencePage, SUBMIT_FLAG_NO_IRQ, SubmitDesc};

use super::alloc_table::AllocTable;
use super::error::{AllocTableError, SubmitError};
use super::executor::{Executor, NullExecutor, SubmissionInfo};
use super::fence::{FenceQueue, PendingFence};
use super::irq::IrqState;
use super::memory::{DeviceMemory, DeviceMemoryRef, Gart, GuestMemory, GuestMemoryError};
use super::processor::{CommandProcessor, Limits, StreamSummary};
use super::ring::RingLayout;
use super::scanout::{CursorConfig, CursorImage, ScanoutConfig, ScanoutError};
use super::vblank::VblankClock;
use crate::Frame;

/// Device options (everything guest-visible is fixed by the ABI; these are host caps).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AeroGpuConfig {
    /// FEATURES_LO/HI.
    pub features: u64,
    pub limits: Limits,
    /// Largest command stream read per submission (the KMD clamps to 256 MiB).
    pub max_cmd_stream_bytes: u32,
    pub max_alloc_table_bytes: u32,
    /// VSYNC-held fences beyond this complete at once (a guest cannot grow the queue).
    pub max_pending_fences: usize,
    pub vblank_period_ns: u64,
}

impl Default for AeroGpuConfig {
    fn default() -> Self {
        Self {
            features: pci::FEATURE_FENCE_PAGE
                | pci::FEATURE_CURSOR
                | pci::FEATURE_SCANOUT
                | pci::FEATURE_VBLANK
                | pci::FEATURE_ERROR_INFO
                | pci::FEATURE_SHARED_SURFACE
                | pci::FEATURE_WRITEBACK
                | pci::FEATURE_GART,
            limits: Limits::default(),
            max_cmd_stream_bytes: 256 << 20,
            max_alloc_table_bytes: 4 << 20,
            max_pending_fences: 1024,
            vblank_period_ns: pci::VBLANK_PERIOD_NS_60HZ.into(),
        }
    }
}

/// The last error the device latched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ErrorLatch {
    pub code: u32,
    pub fence: u64,
    pub count: u32,
}

/// Counters for tests, benchmarks and debugging.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    pub doorbells: u64,
    pub submissions: u64,
    pub packets: u64,
    pub failed_submissions: u64,
}

pub struct AeroGpu<E: Executor = NullExecutor> {
    config: AeroGpuConfig,
    ring_gpa: u64,
    ring_size: u32,
    ring_enabled: bool,
    /// Device-owned consumer index (mirrored into the ring header).
    ring_head: u32,
    fence_gpa: u64,
    /// The aperture's page table (AEROGPU_FEATURE_GART); every DMA goes through it.
    gart: Gart,
    completed_fence: u64,
    fences: FenceQueue,
    irq: IrqState,
    error: ErrorLatch,
    scanout: ScanoutConfig,
    cursor: CursorConfig,
    vblank: VblankClock,
    now_ns: u64,
    processor: CommandProcessor,
    executor: E,
    alloc_table: AllocTable,
    table_buf: Vec<u8>,
    cmd_buf: Vec<u8>,
    released: Vec<PendingFence>,
    stats: DeviceStats,
}

impl<E: Executor> core::fmt::Debug for AeroGpu<E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AeroGpu")
            .field("ring_gpa", &format_args!("{:#x}", self.ring_gpa))
            .field("ring_enabled", &self.ring_enabled)
            .field("ring_head", &self.ring_head)
            .field("completed_fence", &self.completed_fence)
            .field("held_fences", &self.fences.len())
            .field("irq", &self.irq)
            .field("error", &self.error)
            .field("scanout", &self.scanout)
            .field("vblank_seq", &self.vblank.seq())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl AeroGpu<NullExecutor> {
    pub fn new(config: AeroGpuConfig) -> Self {
        Self::with_executor(config, NullExecutor::default())
    }
}

impl<E: Executor> AeroGpu<E> {
    pub fn with_executor(config: AeroGpuConfig, executor: E) -> Self {
        Self {
            config,
            ring_gpa: 0,
            ring_size: 0,
            ring_enabled: false,
            ring_head: 0,
            fence_gpa: 0,
            gart: Gart::default(),
            completed_fence: 0,
            fences: FenceQueue::default(),
            irq: IrqState::default(),
            error: ErrorLatch::default(),
            scanout: ScanoutConfig::default(),
            cursor: CursorConfig::default(),
            vblank: VblankClock::new(config.vblank_period_ns),
            now_ns: 0,
            processor: CommandProcessor::new(config.limits),
            executor,
            alloc_table: AllocTable::new(),
            table_buf: Vec::new(),
            cmd_buf: Vec::new(),
            released: Vec::new(),
            stats: DeviceStats::default(),
        }
    }

    /// Machine reset: back to power-on state (objects, fences, registers, counters).
    pub fn reset(&mut self) {
        self.ring_gpa = 0;
        self.ring_size = 0;
        self.ring_enabled = false;
        self.ring_head = 0;
        self.fence_gpa = 0;
        self.gart = Gart::default();
        self.completed_fence = 0;
        self.fences = FenceQueue::default();
        self.irq = IrqState::default();
        self.error = ErrorLatch::default();
        self.scanout = ScanoutConfig::default();
        self.cursor = CursorConfig::default();
        self.vblank = VblankClock::new(self.config.vblank_period_ns);
        self.now_ns = 0;
        self.processor.reset();
        self.executor.reset();
        self.alloc_table.clear();
        self.stats = DeviceStats::default();
    }

    pub fn executor(&self) -> &E {
        &self.executor
    }

    pub fn executor_mut(&mut self) -> &mut E {
        &mut self.executor
    }

    pub fn processor(&self) -> &CommandProcessor {
        &self.processor
    }

    pub fn stats(&self) -> DeviceStats {
        self.stats
    }

    pub fn completed_fence(&self) -> u64 {
        self.completed_fence
    }

    pub fn error(&self) -> ErrorLatch {
        self.error
    }

    pub fn irq_level(&self) -> bool {
        self.irq.level()
    }

    pub fn scanout(&self) -> ScanoutConfig {
        self.scanout
    }

    pub fn cursor(&self) -> CursorConfig {
        self.cursor
    }

    /// When the machine must call [`tick`](Self::tick) next (the coming vblank).
    pub fn next_deadline_ns(&self) -> Option<u64> {
        self.vblank.next_ns()
    }

    /// Renders scanout 0 (plus cursor) into `frame`. `Err(Disabled)` means the machine
    /// should show the legacy VGA output instead.
    pub fn render_scanout(
        &self,
        mem: &dyn GuestMemory,
        frame: &mut Frame,
    ) -> Result<(), ScanoutError> {
        let mem = DeviceMemoryRef {
            ram: mem,
            gart: self.gart,
        };
        if self.scanout.enable && self.executor.read_presented(frame) {
            // A host-only render target was presented (see the PRESENT rule).
            if self.cursor.enable
                && let Err(e) = self.cursor.composite(&mem, frame)
            {
                tracing::debug!(error = %e, "aerogpu: cursor not drawn");
            }
            return Ok(());
        }
        self.scanout.render(&self.cursor, &mem, frame)
    }

    /// The cursor while it is enabled and readable, for a window that draws scanout 0
    /// from [`Executor::presented_texture`] and the cursor over it.
    pub fn cursor_image(&self, mem: &dyn GuestMemory) -> Option<CursorImage> {
        if !self.cursor.enable {
            return None;
        }
        let mem = DeviceMemoryRef {
            ram: mem,
            gart: self.gart,
        };
        match self.cursor.image(&mem) {
            Ok(image) => Some(image),
            Err(e) => {
                tracing::debug!(error = %e, "aerogpu: cursor not drawn");
                None
            }
        }
    }

    /// What [`render_scanout`](Self::render_scanout) would show, as unconverted bytes
    /// written to `out` (replacing its contents, its allocation reused): the presented
    /// host-only frame's generation (not its pixels: those may be on the GPU) or the
    /// scanout rows in guest memory, then the cursor image. Equal bytes under equal
    /// [`scanout`](Self::scanout) and [`cursor`](Self::cursor) registers mean an equal
    /// picture, found without converting or reading back a pixel.
    pub fn scanout_raw_bytes(
        &self,
        mem: &dyn GuestMemory,
        out: &mut Vec<u8>,
    ) -> Result<(), ScanoutError> {
        let mem = DeviceMemoryRef {
            ram: mem,
            gart: self.gart,
        };
        out.clear();
        if !self.scanout.enable {
            return Err(ScanoutError::Disabled);
        }
        if let Some(generation) = self.executor.presented_generation() {
            // Tagged so a presented frame never equals guest bytes that happen to match.
            out.push(1);
            out.extend_from_slice(&generation.to_le_bytes());
        } else {
            out.push(0);
            self.scanout.append_raw_bytes(&mem, out)?;
        }
        self.cursor.append_raw_bytes(&mem, out);
        Ok(())
    }

    /// Advances virtual time: vblanks, vblank IRQ, VSYNC-held fences.
    pub fn tick(&mut self, now_ns: u64, mem: &mut dyn GuestMemory) {
        let mut mem = DeviceMemory {
            ram: mem,
            gart: self.gart,
        };
        let mem = &mut mem;
        self.now_ns = self.now_ns.max(now_ns);
        let vblanks = self.vblank.advance(self.now_ns);
        if vblanks == 0 {
            return;
        }
        self.irq.raise(pci::IRQ_SCANOUT_VBLANK);
        let mut released = std::mem::take(&mut self.released);
        for _ in 0..vblanks.min(self.fences.len() as u64) {
            self.fences.release_one_vblank(&mut released);
        }
        self.complete_all(&mut released, mem);
        self.released = released;
    }

    // ---- MMIO ---------------------------------------------------------------------

    /// Reads `size` (1, 2, 4 or 8) bytes at `offset` in BAR0.
    pub fn mmio_read(&mut self, offset: u64, size: usize) -> u64 {
        let dword = |this: &Self, off: u64| {
            u64::from(this.read_reg(u32::try_from(off).unwrap_or(u32::MAX)))
        };
        match size {
            8 => dword(self, offset) | dword(self, offset.wrapping_add(4)) << 32,
            1 | 2 | 4 => {
                let shift = (offset & 3) * 8;
                let mask = if size == 4 {
                    u32::MAX as u64
                } else {
                    (1u64 << (size * 8)) - 1
                };
                (dword(self, offset & !3) >> shift) & mask
            }
            _ => 0,
        }
    }

    /// Writes `size` bytes at `offset` in BAR0. Registers are 32-bit: 8-byte writes are
    /// split low then high, narrower writes are ignored.
    pub fn mmio_write(&mut self, offset: u64, size: usize, value: u64, mem: &mut dyn GuestMemory) {
        let Ok(off) = u32::try_from(offset) else {
            return;
        };
        let mut mem = DeviceMemory {
            ram: mem,
            gart: self.gart,
        };
        let mem = &mut mem;
        match size {
            4 if off % 4 == 0 => self.write_reg(off, value as u32, mem),
            8 if off % 4 == 0 => {
                self.write_reg(off, value as u32, mem);
                self.write_reg(off.wrapping_add(4), (value >> 32) as u32, mem);
            }
            _ => tracing::debug!(offset, size, "aerogpu: ignoring non-dword register write"),
        }
    }

    fn has(&self, feature: u64) -> bool {
        self.config.features & feature != 0
    }

    pub fn read_reg(&self, off: u32) -> u32 {
        let lo = |v: u64| v as u32;
        let hi = |v: u64| (v >> 32) as u32;
        match off {
            reg::MAGIC => pci::MMIO_MAGIC,
            reg::ABI_VERSION => ABI_VERSION_U32,
            reg::FEATURES_LO => lo(self.config.features),
            reg::FEATURES_HI => hi(self.config.features),
            reg::RING_GPA_LO => lo(self.ring_gpa),
            reg::RING_GPA_HI => hi(self.ring_gpa),
            reg::RING_SIZE_BYTES => self.ring_size,
            reg::RING_CONTROL => u32::from(self.ring_enabled) * pci::RING_CONTROL_ENABLE,
            reg::GART_GPA_LO if self.has(pci::FEATURE_GART) => lo(self.gart.table_gpa),
            reg::GART_GPA_HI if self.has(pci::FEATURE_GART) => hi(self.gart.table_gpa),
            reg::GART_ENTRIES if self.has(pci::FEATURE_GART) => self.gart.entries,
            reg::FENCE_GPA_LO => lo(self.fence_gpa),
            reg::FENCE_GPA_HI => hi(self.fence_gpa),
            reg::COMPLETED_FENCE_LO => lo(self.completed_fence),
            reg::COMPLETED_FENCE_HI => hi(self.completed_fence),
            reg::IRQ_STATUS => self.irq.status(),
            reg::IRQ_ENABLE => self.irq.enable(),
            reg::ERROR_CODE => self.error.code,
            reg::ERROR_FENCE_LO => lo(self.error.fence),
            reg::ERROR_FENCE_HI => hi(self.error.fence),
            reg::ERROR_COUNT => self.error.count,
            reg::SCANOUT0_ENABLE => u32::from(self.scanout.enable),
            reg::SCANOUT0_WIDTH => self.scanout.width,
            reg::SCANOUT0_HEIGHT => self.scanout.height,
            reg::SCANOUT0_FORMAT => self.scanout.format,
            reg::SCANOUT0_PITCH_BYTES => self.scanout.pitch_bytes,
            reg::SCANOUT0_FB_GPA_LO => lo(self.scanout.fb_gpa),
            reg::SCANOUT0_FB_GPA_HI => hi(self.scanout.fb_gpa),
            reg::SCANOUT0_VBLANK_SEQ_LO => lo(self.vblank.seq()),
            reg::SCANOUT0_VBLANK_SEQ_HI => hi(self.vblank.seq()),
            reg::SCANOUT0_VBLANK_TIME_NS_LO => lo(self.vblank.last_time_ns()),
            reg::SCANOUT0_VBLANK_TIME_NS_HI => hi(self.vblank.last_time_ns()),
            reg::SCANOUT0_VBLANK_PERIOD_NS => {
                u32::try_from(self.vblank.period_ns()).unwrap_or(u32::MAX)
            }
            reg::CURSOR_ENABLE => u32::from(self.cursor.enable),
            reg::CURSOR_X => self.cursor.x as u32,
            reg::CURSOR_Y => self.cursor.y as u32,
            reg::CURSOR_HOT_X => self.cursor.hot_x,
            reg::CURSOR_HOT_Y => self.cursor.hot_y,
            reg::CURSOR_WIDTH => self.cursor.width,
            reg::CURSOR_HEIGHT => self.cursor.height,
            reg::CURSOR_FORMAT => self.cursor.format,
            reg::CURSOR_FB_GPA_LO => lo(self.cursor.fb_gpa),
            reg::CURSOR_FB_GPA_HI => hi(self.cursor.fb_gpa),
            reg::CURSOR_PITCH_BYTES => self.cursor.pitch_bytes,
            _ => 0,
        }
    }

    pub fn write_reg(&mut self, off: u32, v: u32, mem: &mut dyn GuestMemory) {
        let scanout_before = self.scanout;
        self.write_reg_inner(off, v, mem);
        if self.scanout != scanout_before {
            // Reprogramming the scanout makes guest memory what it shows again.
            self.executor.scanout_reprogrammed();
        }
    }

    fn write_reg_inner(&mut self, off: u32, v: u32, mem: &mut dyn GuestMemory) {
        let set_lo = |r: &mut u64, v: u32| *r = (*r & !0xFFFF_FFFF) | u64::from(v);
        let set_hi = |r: &mut u64, v: u32| *r = (*r & 0xFFFF_FFFF) | (u64::from(v) << 32);
        match off {
            reg::RING_GPA_LO => set_lo(&mut self.ring_gpa, v),
            reg::RING_GPA_HI => set_hi(&mut self.ring_gpa, v),
            reg::RING_SIZE_BYTES => self.ring_size = v,
            reg::RING_CONTROL => self.write_ring_control(v, mem),
            reg::GART_GPA_LO if self.has(pci::FEATURE_GART) => set_lo(&mut self.gart.table_gpa, v),
            reg::GART_GPA_HI if self.has(pci::FEATURE_GART) => set_hi(&mut self.gart.table_gpa, v),
            reg::GART_ENTRIES if self.has(pci::FEATURE_GART) => {
                self.gart.entries = v.min(pci::GART_MAX_ENTRIES)
            }
            reg::FENCE_GPA_LO => set_lo(&mut self.fence_gpa, v),
            reg::FENCE_GPA_HI => set_hi(&mut self.fence_gpa, v),
            reg::DOORBELL => self.doorbell(mem),
            reg::IRQ_ENABLE => self.irq.set_enable(v),
            reg::IRQ_ACK => self.irq.ack(v),
            reg::SCANOUT0_ENABLE => self.set_scanout_enable(v & 1 != 0, mem),
            reg::SCANOUT0_WIDTH => self.scanout.width = v,
            reg::SCANOUT0_HEIGHT => self.scanout.height = v,
            reg::SCANOUT0_FORMAT => self.scanout.format = v,
            reg::SCANOUT0_PITCH_BYTES => self.scanout.pitch_bytes = v,
            reg::SCANOUT0_FB_GPA_LO => set_lo(&mut self.scanout.fb_gpa, v),
            reg::SCANOUT0_FB_GPA_HI => set_hi(&mut self.scanout.fb_gpa, v),
            reg::CURSOR_ENABLE => self.cursor.enable = v & 1 != 0,
            reg::CURSOR_X => self.cursor.x = v as i32,
            reg::CURSOR_Y => self.cursor.y = v as i32,
            reg::CURSOR_HOT_X => self.cursor.hot_x = v,
            reg::CURSOR_HOT_Y => self.cursor.hot_y = v,
            reg::CURSOR_WIDTH => self.cursor.width = v,
            reg::CURSOR_HEIGHT => self.cursor.height = v,
            reg::CURSOR_FORMAT => self.cursor.format = v,
            reg::CURSOR_FB_GPA_LO => set_lo(&mut self.cursor.fb_gpa, v),
            reg::CURSOR_FB_GPA_HI => set_hi(&mut self.cursor.fb_gpa, v),
            reg::CURSOR_PITCH_BYTES => self.cursor.pitch_bytes = v,
            _ => tracing::debug!(off, v, "aerogpu: write to read-only or unknown register"),
        }
    }

    fn write_ring_control(&mut self, v: u32, mem: &mut dyn GuestMemory) {
        if v & pci::RING_CONTROL_RESET != 0 {
            self.reset_ring(mem);
        }
        let enable = v & pci::RING_CONTROL_ENABLE != 0;
        if enable && !self.ring_enabled {
            // Start consuming where the driver initialised the ring.
            self.ring_head = RingLayout::read(mem, self.ring_gpa, self.ring_size)
                .ok()
                .and_then(|_| {
                    read_u32_at(
                        mem,
                        self.ring_gpa + aero_protocol::ring::RingHeader::HEAD_OFFSET,
                    )
                })
                .unwrap_or(0);
        }
        self.ring_enabled = enable;
    }

    /// RING_CONTROL.RESET: complete every accepted fence, drop unconsumed descriptors.
    fn reset_ring(&mut self, mem: &mut dyn GuestMemory) {
        let mut released = std::mem::take(&mut self.released);
        self.fences.drain_all(&mut released);
        for f in &mut released {
            f.irq = false;
        }
        self.complete_all(&mut released, mem);
        self.released = released;
        if let Ok(ring) = RingLayout::read(mem, self.ring_gpa, self.ring_size) {
            self.ring_head = ring.tail;
            if let Err(e) = ring.write_head(mem, ring.tail) {
                self.latch_error(&e, 0);
            }
        } else {
            self.ring_head = 0;
        }
        tracing::debug!("aerogpu: ring reset");
    }

    fn set_scanout_enable(&mut self, enable: bool, mem: &mut dyn GuestMemory) {
        self.scanout.enable = enable;
        if enable {
            if self.config.features & FEATURE_VBLANK != 0 {
                self.vblank.start(self.now_ns);
            }
        } else {
            // No more vblanks: fences held for one complete now.
            self.vblank.stop();
            let mut released = std::mem::take(&mut self.released);
            self.fences.drain_all(&mut released);
            self.complete_all(&mut released, mem);
            self.released = released;
        }
    }

    // ---- Submissions ---------------------------------------------------------------

    fn doorbell(&mut self, mem: &mut dyn GuestMemory) {
        self.stats.doorbells += 1;
        if !self.ring_enabled {
            tracing::debug!("aerogpu: doorbell while the ring is disabled");
            return;
        }
        let ring = match RingLayout::read(mem, self.ring_gpa, self.ring_size) {
            Ok(ring) => ring,
            Err(e) => return self.latch_error(&e, 0),
        };
        let pending = ring.tail.wrapping_sub(self.ring_head);
        if pending > ring.entry_count {
            return self.latch_error(&SubmitError::Ring("tail - head exceeds entry_count"), 0);
        }
        for _ in 0..pending {
            let desc = match ring.descriptor(mem, self.ring_head) {
                Ok(d) => d,
                Err(e) => return self.latch_error(&e, 0),
            };
            self.run_submission(&desc, mem);
            self.ring_head = self.ring_head.wrapping_add(1);
            if let Err(e) = ring.write_head(mem, self.ring_head) {
                return self.latch_error(&e, 0);
            }
        }
    }

    fn run_submission(&mut self, desc: &SubmitDesc, mem: &mut dyn GuestMemory) {
        self.stats.submissions += 1;
        let info = SubmissionInfo {
            context_id: desc.context_id,
            signal_fence: desc.signal_fence,
            flags: desc.flags,
        };
        self.executor.begin_submission(&info);
        self.processor.switch_context(desc.context_id);
        let result = self.process_submission(desc, mem);
        self.executor.end_submission();
        let vsync = match result {
            Ok(summary) => {
                self.stats.packets += u64::from(summary.packets);
                summary.vsync_present && self.vblank.next_ns().is_some()
            }
            Err(e) => {
                self.stats.failed_submissions += 1;
                self.latch_error(&e, desc.signal_fence);
                false
            }
        };
        // A failed submission still completes its fence: the guest must never hang.
        let pending = PendingFence {
            fence: desc.signal_fence,
            irq: desc.flags & SUBMIT_FLAG_NO_IRQ == 0,
            vsync,
        };
        if let Some(now) = self.fences.submit(pending) {
            self.complete(now, mem);
        } else if self.fences.len() > self.config.max_pending_fences
            && let Some(oldest) = self.fences.pop_oldest()
        {
            tracing::warn!("aerogpu: too many fences waiting for vblank, completing one early");
            self.complete(oldest, mem);
        }
    }

    fn process_submission(
        &mut self,
        desc: &SubmitDesc,
        mem: &mut dyn GuestMemory,
    ) -> Result<StreamSummary, SubmitError> {
        if (desc.desc_size_bytes as usize) < SubmitDesc::SIZE {
            return Err(SubmitError::Descriptor("desc_size_bytes too small"));
        }
        self.alloc_table.clear();
        if desc.alloc_table_gpa != 0 || desc.alloc_table_size_bytes != 0 {
            if desc.alloc_table_size_bytes > self.config.max_alloc_table_bytes {
                return Err(SubmitError::Limit {
                    what: "allocation table size",
                });
            }
            // Check RAM before allocating, so a bogus size costs the host nothing.
            if !mem.contains(desc.alloc_table_gpa, desc.alloc_table_size_bytes.into()) {
                let e = AllocTableError::Header("table outside guest RAM");
                return Err(SubmitError::AllocTable(e));
            }
            self.table_buf
                .resize(desc.alloc_table_size_bytes as usize, 0);
            mem.read(desc.alloc_table_gpa, &mut self.table_buf)?;
            self.alloc_table.parse(&self.table_buf, mem)?;
        }
        if desc.cmd_size_bytes == 0 {
            return Ok(StreamSummary::default());
        }
        if desc.cmd_size_bytes > self.config.max_cmd_stream_bytes {
            return Err(SubmitError::Limit {
                what: "command stream size",
            });
        }
        if !mem.contains(desc.cmd_gpa, desc.cmd_size_bytes.into()) {
            let len = desc.cmd_size_bytes.into();
            return Err(SubmitError::Memory(GuestMemoryError {
                gpa: desc.cmd_gpa,
                len,
            }));
        }
        self.cmd_buf.resize(desc.cmd_size_bytes as usize, 0);
        mem.read(desc.cmd_gpa, &mut self.cmd_buf)?;
        self.processor
            .process(&self.cmd_buf, &self.alloc_table, mem, &mut self.executor)
    }

    // ---- Fences and errors ------------------------------------------------------------

    fn complete_all(&mut self, fences: &mut Vec<PendingFence>, mem: &mut dyn GuestMemory) {
        for f in fences.drain(..) {
            self.complete(f, mem);
        }
    }

    /// Completes one fence: the completed value only moves forward (duplicate or older
    /// values leave it alone), the fence page mirrors it, IRQ_FENCE unless NO_IRQ.
    fn complete(&mut self, f: PendingFence, mem: &mut dyn GuestMemory) {
        if f.fence > self.completed_fence {
            self.completed_fence = f.fence;
            if self.fence_gpa != 0 && self.config.features & FEATURE_FENCE_PAGE != 0 {
                let page = FencePage {
                    magic: FENCE_PAGE_MAGIC,
                    abi_version: ABI_VERSION_U32,
                    completed_fence: self.completed_fence,
                    reserved0: [0; 6],
                };
                // Only the first 16 bytes: the rest of the page belongs to the driver.
                if let Err(e) = mem.write(self.fence_gpa, &page.to_bytes()[..16]) {
                    self.latch_error(&SubmitError::Memory(e), f.fence);
                }
            }
        }
        if f.irq {
            self.irq.raise(pci::IRQ_FENCE);
        }
    }

    fn latch_error(&mut self, e: &SubmitError, fence: u64) {
        tracing::warn!(error = %e, fence, "aerogpu: submission error");
        if self.config.features & FEATURE_ERROR_INFO != 0 {
            self.error.code = e.code() as u32;
            self.error.fence = fence;
            self.error.count = self.error.count.wrapping_add(1);
        }
        self.irq.raise(pci::IRQ_ERROR);
    }

    /// The last latched error code.
    pub fn error_code(&self) -> Option<ErrorCode> {
        ErrorCode::from_u32(self.error.code)
    }
}

fn read_u32_at(mem: &dyn GuestMemory, gpa: u64) -> Option<u32> {
    let mut b = [0u8; 4];
    mem.read(gpa, &mut b).ok()?;
    Some(u32::from_le_bytes(b))
}
