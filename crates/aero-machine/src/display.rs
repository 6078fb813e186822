//! Machine-side glue of the display function: AeroGPU work that needs guest RAM (register
//! writes queued by the platform, vblank ticks) and the choice of the current frame.
//!
//! Bus callbacks cannot reach RAM (the CPU holds it), so the platform queues every BAR0
//! write and asks the CPU to stop after the instruction; the machine applies the queue
//! here through [`GuestRam`], then drops decoded code in the ranges the device wrote
//! (ring head, fence page, writebacks).

use aero_gpu::Frame;
use aero_gpu::aerogpu::{CursorConfig, Executor, GpuScanout, ScanoutConfig, ScanoutError};
use aero_gpu::vga::{PictureKey, VbeMode};

use super::Machine;
use crate::guest_ram::GuestRam;

/// The last picture `display_generation` saw, so the next call knows whether it changed.
#[derive(Default)]
pub(super) struct ScreenHistory {
    last: Frame,
    /// Rendered into by the next call (its allocation reused).
    scratch: Frame,
    generation: u64,
    /// What the picture is made of, without rendering it: while the key and the raw bytes
    /// stay equal the picture is the same (no render); `None` when there is no such key.
    key: Option<ScreenKey>,
    raw: Vec<u8>,
    /// The next call's raw bytes (its allocation reused).
    raw_scratch: Vec<u8>,
}

/// Everything besides the raw bytes that makes up the picture, per source.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ScreenKey {
    /// AeroGPU scanout 0; raw bytes: [`aero_gpu::aerogpu::AeroGpu::scanout_raw_bytes`].
    Scanout(ScanoutConfig, CursorConfig),
    /// A VBE mode; raw bytes: the displayed framebuffer. The VGA key (DAC writes) counts
    /// only in palette (8-bit) modes.
    Vbe(VbeMode, Option<PictureKey>),
    /// A VGA mode: the picture is the adapter's (VRAM, registers, blink phases).
    Vga(PictureKey),
}

impl Machine {
    /// Applies the queued AeroGPU register writes in order, with RAM access.
    pub(super) fn apply_display_writes(&mut self) {
        let writes = std::mem::take(&mut self.platform.aerogpu_writes);
        let now = self.platform.clock.now();
        let mut ram = GuestRam::new(&mut self.memory, &self.platform.map);
        // Vblank state first, so a write sees the device as of now.
        self.platform.aerogpu.tick(now, &mut ram);
        for w in &writes {
            self.platform
                .aerogpu
                .mmio_write(w.offset, usize::from(w.size), w.value, &mut ram);
        }
        for (addr, len) in ram.written {
            self.cpu.invalidate_code(addr, len);
        }
        // Reuse the queue's allocation.
        self.platform.aerogpu_writes = writes;
        self.platform.aerogpu_writes.clear();
    }

    /// Runs AeroGPU's vblank clock up to `now` when it is due (vblank IRQ, VSYNC fences).
    pub(super) fn tick_display(&mut self, now: u64) {
        if self
            .platform
            .aerogpu
            .next_deadline_ns()
            .is_none_or(|d| d > now)
        {
            return;
        }
        let mut ram = GuestRam::new(&mut self.memory, &self.platform.map);
        self.platform.aerogpu.tick(now, &mut ram);
        for (addr, len) in ram.written {
            self.cpu.invalidate_code(addr, len);
        }
    }

    /// Replaces AeroGPU's executor (the CPU one, `SoftExecutor`, by default): a GPU
    /// executor, or `NullExecutor` for tests that want nothing drawn. Call it before the
    /// guest uses the device: objects the previous executor held are not carried over.
    pub fn set_aerogpu_executor(&mut self, executor: Box<dyn Executor + Send>) {
        *self.platform.aerogpu.executor_mut() = executor;
    }

    /// The screen as a GPU texture while AeroGPU's scanout 0 shows a frame the GPU
    /// executor presented from a host-only render target; `None` otherwise (then
    /// [`Machine::screen`] is the picture). Reads no pixels back (the cursor image, at
    /// most 256x256, comes from guest memory).
    pub fn gpu_scanout(&mut self) -> Option<GpuScanout> {
        let aerogpu = &self.platform.aerogpu;
        if !aerogpu.scanout().enable {
            return None;
        }
        let texture = aerogpu.executor().presented_texture()?;
        let ram = GuestRam::new(&mut self.memory, &self.platform.map);
        Some(GpuScanout {
            texture,
            cursor: aerogpu.cursor_image(&ram),
        })
    }

    /// The current screen as RGBA pixels: AeroGPU's scanout 0 (with the cursor composited)
    /// while the guest has it enabled — guest memory at SCANOUT0_FB_GPA, or the frame the
    /// executor presented from a host-only render target — otherwise the VGA/VBE output.
    pub fn screen(&mut self) -> Frame {
        let mut frame = Frame::new();
        self.render_screen(&mut frame);
        frame
    }

    fn render_screen(&mut self, frame: &mut Frame) {
        if self.platform.aerogpu.scanout().enable {
            let ram = GuestRam::new(&mut self.memory, &self.platform.map);
            match self.platform.aerogpu.render_scanout(&ram, frame) {
                Ok(()) => return,
                Err(ScanoutError::Disabled) => {}
                // A scanout the device cannot show: say why and keep the VGA picture.
                Err(e) => tracing::debug!(error = %e, "aerogpu scanout not shown"),
            }
            *frame = Frame::new();
        }
        let lfb = &self.memory[self.platform.map.lfb_range()];
        self.platform.vga.render(lfb, frame);
    }

    /// The scanout-changed signal: a counter that moves whenever the screen differs from
    /// what the previous call saw (mode, size or any pixel), so watchers look at a picture
    /// only when it changed. Guest writes to RAM are not tracked, so each call first
    /// collects what the picture is made of without converting it ([`ScreenKey`] plus
    /// raw bytes: AeroGPU's scanout rows or presented frame and cursor, the VBE
    /// framebuffer; in VGA modes only the adapter's write count): one copy and memcmp.
    /// Only when that differs does it render and compare pixels (no allocation either
    /// way). [`Machine::last_screen`] is the picture it saw.
    pub fn display_generation(&mut self) -> u64 {
        if self.same_picture_as_last_look() {
            return self.screen_history.generation;
        }
        let mut frame = std::mem::take(&mut self.screen_history.scratch);
        self.render_screen(&mut frame);
        let history = &mut self.screen_history;
        if frame != history.last {
            std::mem::swap(&mut frame, &mut history.last);
            history.generation += 1;
        }
        history.scratch = frame;
        history.generation
    }

    /// Whether the picture is certainly the one the last look saw: the same
    /// [`ScreenKey`] and raw bytes (which become the history's either way).
    fn same_picture_as_last_look(&mut self) -> bool {
        let history = &mut self.screen_history;
        let aerogpu = &self.platform.aerogpu;
        if aerogpu.scanout().enable {
            let ram = GuestRam::new(&mut self.memory, &self.platform.map);
            let mut raw = std::mem::take(&mut history.raw_scratch);
            let key = match aerogpu.scanout_raw_bytes(&ram, &mut raw) {
                Ok(()) => Some(ScreenKey::Scanout(aerogpu.scanout(), aerogpu.cursor())),
                // Not shown: the VGA picture is, below.
                Err(ScanoutError::Disabled) => None,
                // Shown as VGA too, but only a render says so: no key.
                Err(_) => {
                    history.key = None;
                    history.raw_scratch = raw;
                    return false;
                }
            };
            if let Some(key) = key {
                let same = history.key == Some(key) && history.raw == raw;
                history.key = Some(key);
                history.raw_scratch = std::mem::replace(&mut history.raw, raw);
                return same;
            }
            history.raw_scratch = raw;
        }
        let vga = &self.platform.vga;
        let Some(mode) = vga.vbe_mode() else {
            let key = Some(ScreenKey::Vga(vga.picture_key()));
            let same = history.key == key;
            history.key = key;
            history.raw.clear();
            return same;
        };
        // Compared in place, copied only when different (8 MB at 1080p).
        let lfb = &self.memory[self.platform.map.lfb_range()];
        let len = mode.pitch.saturating_mul(mode.height as usize);
        let shown = lfb
            .get(mode.start..)
            .map_or(&[][..], |rest| &rest[..len.min(rest.len())]);
        let key = Some(ScreenKey::Vbe(
            mode,
            (mode.bpp < 15).then(|| vga.picture_key()),
        ));
        if history.key == key && history.raw == shown {
            return true;
        }
        history.key = key;
        history.raw.clear();
        history.raw.extend_from_slice(shown);
        false
    }

    /// The screen as of the last [`Machine::display_generation`] call (empty before it).
    pub fn last_screen(&self) -> &Frame {
        &self.screen_history.last
    }
}

#[cfg(test)]
mod tests {
    use aero_gpu::aerogpu::GuestMemory;
    use aero_protocol::ABI_VERSION_U32;
    use aero_protocol::cmd::{self, Opcode};
    use aero_protocol::pci::{Format, reg};
    use aero_protocol::ring::{AllocEntry, RING_MAGIC, RingHeader, SubmitDesc};
    use aero_protocol::writer::{CmdStreamWriter, encode_alloc_table};

    use crate::guest_ram::GuestRam;
    use crate::machine::{Machine, MachineConfig};
    use crate::platform::RegisterWrite;

    const RING: u64 = 0x9000;
    const STREAM: u64 = 0xA000;
    const TABLE: u64 = 0xB000;
    const FB: u64 = 0x10_0000;

    fn machine() -> Machine {
        Machine::new(MachineConfig {
            memory_bytes: 16 << 20,
            boot_order: Vec::new(),
            ..Default::default()
        })
        .unwrap()
    }

    fn ram_write(m: &mut Machine, gpa: u64, bytes: &[u8]) {
        let mut ram = GuestRam::new(&mut m.memory, &m.platform.map);
        GuestMemory::write(&mut ram, gpa, bytes).unwrap();
    }

    fn ram_read(m: &mut Machine, gpa: u64, len: usize) -> Vec<u8> {
        let ram = GuestRam::new(&mut m.memory, &m.platform.map);
        let mut out = vec![0; len];
        GuestMemory::read(&ram, gpa, &mut out).unwrap();
        out
    }

    /// Register writes as the guest's MMIO would queue them, then applied.
    fn regs(m: &mut Machine, writes: &[(u32, u32)]) {
        for &(offset, value) in writes {
            m.platform.aerogpu_writes.push(RegisterWrite {
                offset: offset.into(),
                size: 4,
                value: value.into(),
            });
        }
        m.apply_display_writes();
    }

    /// Scanout 0 on a 4x2 BGRX framebuffer at FB, a one-entry ring at RING, then one
    /// submission of `stream` with FB as alloc_id 1.
    fn submit(m: &mut Machine, stream: &[u8]) {
        let header = RingHeader {
            magic: RING_MAGIC,
            abi_version: ABI_VERSION_U32,
            size_bytes: (RingHeader::SIZE + SubmitDesc::SIZE) as u32,
            entry_count: 1,
            entry_stride_bytes: SubmitDesc::SIZE as u32,
            tail: 1,
            ..Default::default()
        };
        let table = encode_alloc_table(&[AllocEntry {
            alloc_id: 1,
            flags: 0,
            gpa: FB,
            size_bytes: 0x1000,
            reserved0: 0,
        }]);
        let desc = SubmitDesc {
            desc_size_bytes: SubmitDesc::SIZE as u32,
            cmd_gpa: STREAM,
            cmd_size_bytes: stream.len() as u32,
            alloc_table_gpa: TABLE,
            alloc_table_size_bytes: table.len() as u32,
            signal_fence: 1,
            ..Default::default()
        };
        ram_write(m, RING, &header.to_bytes());
        ram_write(m, RING + RingHeader::SIZE as u64, &desc.to_bytes());
        ram_write(m, STREAM, stream);
        ram_write(m, TABLE, &table);
        regs(
            m,
            &[
                (reg::SCANOUT0_WIDTH, 4),
                (reg::SCANOUT0_HEIGHT, 2),
                (reg::SCANOUT0_FORMAT, Format::B8G8R8X8Unorm as u32),
                (reg::SCANOUT0_PITCH_BYTES, 16),
                (reg::SCANOUT0_FB_GPA_LO, FB as u32),
                (reg::SCANOUT0_ENABLE, 1),
                (reg::RING_GPA_LO, RING as u32),
                (reg::RING_SIZE_BYTES, header.size_bytes),
                (reg::RING_CONTROL, aero_protocol::pci::RING_CONTROL_ENABLE),
                (reg::DOORBELL, 1),
            ],
        );
        assert_eq!(m.platform.aerogpu.completed_fence(), 1);
        assert_eq!(m.platform.aerogpu.error().code, 0);
    }

    fn texture(w: &mut CmdStreamWriter, handle: u32, alloc_id: u32) {
        let p = cmd::CreateTexture2d {
            texture_handle: handle,
            usage_flags: cmd::RESOURCE_USAGE_RENDER_TARGET,
            format: Format::B8G8R8X8Unorm as u32,
            width: 4,
            height: 2,
            mip_levels: 1,
            array_layers: 1,
            backing_alloc_id: alloc_id,
            ..Default::default()
        };
        w.push(Opcode::CreateTexture2d, &p, &[]);
        let mut colors = [0; 8];
        colors[0] = handle;
        let rt = cmd::SetRenderTargets {
            color_count: 1,
            colors,
            ..Default::default()
        };
        w.push(Opcode::SetRenderTargets, &rt, &[]);
    }

    #[test]
    fn the_cpu_executor_writes_a_presented_clear_into_guest_ram_and_the_screen_shows_it() {
        let mut m = machine();
        let mut w = CmdStreamWriter::new();
        texture(&mut w, 1, 1);
        w.clear([1.0, 0.0, 0.0, 1.0]).present(0);
        submit(&mut m, &w.finish());
        assert_eq!(ram_read(&mut m, FB, 4), [0, 0, 255, 255]);
        let screen = m.screen();
        assert_eq!((screen.width, screen.height), (4, 2));
        assert_eq!(screen.pixel(3, 1), Some([255, 0, 0, 255]));
    }

    #[test]
    fn display_generation_moves_only_when_the_picture_changes() {
        let mut m = machine();
        let first = m.display_generation();
        assert_eq!(m.display_generation(), first, "nothing drawn in between");
        let mut w = CmdStreamWriter::new();
        texture(&mut w, 1, 1);
        w.clear([0.0, 1.0, 0.0, 1.0]).present(0);
        submit(&mut m, &w.finish());
        let shown = m.display_generation();
        assert_eq!(shown, first + 1);
        assert_eq!(m.last_screen().pixel(0, 0), Some([0, 255, 0, 255]));
        assert_eq!(m.display_generation(), shown);
        // One pixel written by the "CPU" into the scanned-out framebuffer is a change.
        ram_write(&mut m, FB + 4, &[0xFF, 0, 0, 0]);
        assert_eq!(m.display_generation(), shown + 1);
        assert_eq!(m.last_screen().pixel(1, 0), Some([0, 0, 255, 255]));
    }

    #[test]
    fn display_generation_in_a_vbe_mode_sees_framebuffer_writes_and_mode_changes() {
        let mut m = machine();
        let dispi = |m: &mut Machine, index: u32, value: u32| {
            m.platform.vga.io_write(0x1CE, 2, index);
            m.platform.vga.io_write(0x1CF, 2, value);
        };
        for (index, value) in [(1, 64), (2, 32), (3, 32), (4, 0x41)] {
            dispi(&mut m, index, value);
        }
        let first = m.display_generation();
        assert_eq!(m.last_screen().width, 64);
        assert_eq!(m.display_generation(), first);
        let lfb = m.platform.map.lfb_range().start;
        m.memory[lfb + 4 * 65] = 0xFF; // blue of pixel (1, 1)
        let changed = m.display_generation();
        assert_eq!(changed, first + 1);
        assert_eq!(m.last_screen().pixel(1, 1), Some([0, 0, 255, 255]));
        assert_eq!(m.display_generation(), changed);
        // Same bytes, narrower mode.
        for (index, value) in [(4, 0), (1, 32), (4, 0x41)] {
            dispi(&mut m, index, value);
        }
        assert_eq!(m.display_generation(), changed + 1);
        assert_eq!(m.last_screen().width, 32);
    }

    #[test]
    fn scanout_generation_is_found_from_raw_bytes_and_moves_with_writes_presents_and_registers() {
        let mut m = machine();
        let mut w = CmdStreamWriter::new();
        texture(&mut w, 1, 1);
        w.clear([0.0, 1.0, 0.0, 1.0]).present(0);
        submit(&mut m, &w.finish());
        let shown = m.display_generation();
        assert!(
            matches!(m.screen_history.key, Some(super::ScreenKey::Scanout(..))),
            "the scanout is compared raw, not rendered"
        );
        assert_eq!(m.screen_history.raw.len(), 1 + 4 * 4 * 2);
        // RAM outside the scanout rows is not the picture.
        ram_write(&mut m, FB + 0x800, &[0xAB; 16]);
        assert_eq!(m.display_generation(), shown);
        // Scanout-range write by the CPU.
        ram_write(&mut m, FB + 16 + 8, &[0, 0xFF, 0xFF, 0]);
        let written = m.display_generation();
        assert_eq!(written, shown + 1);
        assert_eq!(m.last_screen().pixel(2, 1), Some([255, 255, 0, 255]));
        // A register change: the same bytes, one row shown.
        regs(&mut m, &[(reg::SCANOUT0_HEIGHT, 1)]);
        let shorter = m.display_generation();
        assert_eq!(shorter, written + 1);
        assert_eq!(m.last_screen().height, 1);
        assert_eq!(m.display_generation(), shorter);
    }

    #[test]
    fn a_present_of_a_host_only_target_moves_the_generation() {
        let mut m = machine();
        let mut w = CmdStreamWriter::new();
        texture(&mut w, 1, 0);
        w.clear([0.0, 0.0, 1.0, 1.0]).present(0);
        submit(&mut m, &w.finish());
        let blue = m.display_generation();
        assert!(matches!(
            m.screen_history.key,
            Some(super::ScreenKey::Scanout(..))
        ));
        assert_eq!(m.display_generation(), blue);
        let mut w = CmdStreamWriter::new();
        w.clear([1.0, 1.0, 1.0, 1.0]).present(0);
        let stream = w.finish();
        // A second submission through the same one-entry ring.
        ram_write(&mut m, STREAM, &stream);
        let desc = SubmitDesc {
            desc_size_bytes: SubmitDesc::SIZE as u32,
            cmd_gpa: STREAM,
            cmd_size_bytes: stream.len() as u32,
            signal_fence: 2,
            ..Default::default()
        };
        ram_write(&mut m, RING + RingHeader::SIZE as u64, &desc.to_bytes());
        const TAIL_OFFSET: u64 = 28; // aerogpu_ring_header.tail
        ram_write(&mut m, RING + TAIL_OFFSET, &2u32.to_le_bytes());
        regs(&mut m, &[(reg::DOORBELL, 1)]);
        assert_eq!(m.platform.aerogpu.completed_fence(), 2);
        assert_eq!(m.display_generation(), blue + 1);
        assert_eq!(m.last_screen().pixel(0, 0), Some([255, 255, 255, 255]));
    }

    #[test]
    fn vga_text_generation_moves_with_vram_and_register_writes_only() {
        let mut m = machine();
        let first = m.display_generation();
        assert!(
            matches!(m.screen_history.key, Some(super::ScreenKey::Vga(_))),
            "VGA modes are keyed by the adapter, not rendered"
        );
        assert_eq!(m.display_generation(), first, "nothing written");
        // Attribute of the first cell (0xB8001): blue background.
        m.platform.vga.mem_write(0x1_8001, 0x10);
        let blue = m.display_generation();
        assert_eq!(blue, first + 1);
        assert_eq!(m.last_screen().pixel(0, 0), Some([0, 0, 0xAA, 255]));
        // DAC entry 1 (blue) becomes pure red.
        for (port, value) in [(0x3C8, 1), (0x3C9, 63), (0x3C9, 0), (0x3C9, 0)] {
            m.platform.vga.io_write(port, 1, value);
        }
        let red = m.display_generation();
        assert_eq!(red, blue + 1);
        assert_eq!(m.last_screen().pixel(0, 0), Some([255, 0, 0, 255]));
        // A write of the same value: the key moves, the picture (and generation) not.
        m.platform.vga.mem_write(0x1_8001, 0x10);
        assert_eq!(m.display_generation(), red);
    }

    /// Not a check (the figures depend on the host): what watching an unchanged 1080p
    /// AeroGPU scanout costs per look, against a render. Run it with
    /// `cargo test --profile ci -p aero-machine --lib scanout_generation_cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "timing figures, run by hand"]
    fn scanout_generation_cost() {
        let mut m = Machine::new(MachineConfig {
            memory_bytes: 64 << 20,
            boot_order: Vec::new(),
            ..Default::default()
        })
        .unwrap();
        let (width, height) = (1920u32, 1080u32);
        let fb = 16u64 << 20;
        regs(
            &mut m,
            &[
                (reg::SCANOUT0_WIDTH, width),
                (reg::SCANOUT0_HEIGHT, height),
                (reg::SCANOUT0_FORMAT, Format::B8G8R8X8Unorm as u32),
                (reg::SCANOUT0_PITCH_BYTES, width * 4),
                (reg::SCANOUT0_FB_GPA_LO, fb as u32),
                (reg::SCANOUT0_ENABLE, 1),
            ],
        );
        let time_ms = |runs: u32, f: &mut dyn FnMut()| {
            f();
            let start = std::time::Instant::now();
            for _ in 0..runs {
                f();
            }
            start.elapsed().as_secs_f64() * 1000.0 / f64::from(runs)
        };
        let first = m.display_generation();
        let unchanged = time_ms(50, &mut || assert_eq!(m.display_generation(), first));
        let render = time_ms(10, &mut || {
            m.screen();
        });
        println!(
            "{width}x{height} AeroGPU scanout: display_generation (unchanged) {unchanged:.2} ms, render {render:.2} ms"
        );
    }

    /// On the GPU executor a host-only present is handed over as the executor's texture
    /// (with the cursor image beside it), while screenshots still get its pixels.
    #[test]
    fn a_gpu_presented_scanout_is_handed_over_as_a_texture_with_the_cursor() {
        use aero_gpu::aerogpu::{SoftExecutorConfig, WgpuExecutor};
        let exec = WgpuExecutor::new_headless(SoftExecutorConfig::default())
            .expect("no wgpu adapter (install mesa-vulkan-drivers)");
        let mut m = machine();
        m.set_aerogpu_executor(Box::new(exec));
        assert!(m.gpu_scanout().is_none(), "nothing presented yet");
        let mut w = CmdStreamWriter::new();
        texture(&mut w, 1, 0);
        w.clear([1.0, 1.0, 0.0, 1.0]).present(0);
        submit(&mut m, &w.finish());
        // A 2x1 cursor at (3, 1) with hot spot (1, 0): its corner lands at (2, 1).
        const CURSOR: u64 = 0x2_0000;
        ram_write(&mut m, CURSOR, &[0, 0, 0xFF, 0xFF, 0xFF, 0, 0, 0xFF]);
        regs(
            &mut m,
            &[
                (reg::CURSOR_X, 3),
                (reg::CURSOR_Y, 1),
                (reg::CURSOR_HOT_X, 1),
                (reg::CURSOR_WIDTH, 2),
                (reg::CURSOR_HEIGHT, 1),
                (reg::CURSOR_FORMAT, Format::B8G8R8A8Unorm as u32),
                (reg::CURSOR_PITCH_BYTES, 8),
                (reg::CURSOR_FB_GPA_LO, CURSOR as u32),
                (reg::CURSOR_ENABLE, 1),
            ],
        );
        let shown = m.gpu_scanout().expect("the present is on the GPU");
        let size = shown.texture.texture.size();
        assert_eq!((size.width, size.height), (4, 2));
        let cursor = shown.cursor.expect("the cursor");
        assert_eq!((cursor.x, cursor.y), (2, 1));
        assert_eq!(cursor.image.pixel(1, 0), Some([0, 0, 255, 255]));
        // The screenshot path reads it back, cursor composited.
        let screen = m.screen();
        assert_eq!(screen.pixel(0, 0), Some([255, 255, 0, 255]));
        assert_eq!(screen.pixel(2, 1), Some([255, 0, 0, 255]));
        assert_eq!(screen.pixel(3, 1), Some([0, 0, 255, 255]));
        // Guest memory is shown again once the scanout moves: no texture to hand over.
        regs(&mut m, &[(reg::SCANOUT0_FB_GPA_LO, FB as u32 + 0x1000)]);
        assert!(m.gpu_scanout().is_none());
    }

    #[test]
    fn a_host_only_render_target_is_the_screen_until_the_scanout_moves() {
        let mut m = machine();
        let mut w = CmdStreamWriter::new();
        texture(&mut w, 1, 0);
        w.clear([0.0, 0.0, 1.0, 1.0]).present(0);
        submit(&mut m, &w.finish());
        assert_eq!(ram_read(&mut m, FB, 4), [0; 4], "guest RAM untouched");
        assert_eq!(m.screen().pixel(0, 0), Some([0, 0, 255, 255]));
        regs(&mut m, &[(reg::SCANOUT0_FB_GPA_LO, FB as u32 + 0x1000)]);
        assert_eq!(m.screen().pixel(0, 0), Some([0, 0, 0, 255]));
    }
}
