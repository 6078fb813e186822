//! PRESENT of a host-only target without a read-back: the target's mip 0 is copied, GPU
//! to GPU, into the scanout texture, which a window on the same wgpu device samples
//! directly ([`Executor::presented_texture`](crate::aerogpu::Executor::presented_texture)).
//! Pixels come to the CPU only when someone asks ([`WgpuExecutor::presented_frame`]: a
//! screenshot, a watcher's look at a new frame), once per presented frame at most.
//!
//! Targets whose texels are not the guest's 8-bit RGBA/BGRA bytes (B5G6R5 and B5G5R5A1
//! expanded on the GPU, float formats) are read back at PRESENT as before: their bytes
//! only become the frame through the CPU executor's conversion.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use super::{Repr, WgpuError, WgpuExecutor, common};
use crate::Frame;
use crate::aerogpu::executor::PresentedTexture;
use crate::aerogpu::processor::{ResourceId, TextureDesc};

/// How long a finished read-back may take to report its mapping (another thread's poll
/// runs the callback when the device is shared).
const MAP_TIMEOUT: Duration = Duration::from_secs(10);

/// What scanout 0 shows after a present of a host-only target.
pub(super) struct Presented {
    /// [`ScanoutState::generation`] at this present.
    generation: u64,
    desc: TextureDesc,
    image: Image,
}

enum Image {
    /// On the GPU: the scanout texture (read back on demand).
    Texture(wgpu::Texture),
    /// Read back at PRESENT (formats the scanout texture cannot hold as they are).
    Frame(Frame),
}

/// The executor's scanout side.
#[derive(Default)]
pub(super) struct ScanoutState {
    pub(super) presented: Option<Presented>,
    /// Counts host-copy presents, across resets (a new frame never reuses a number).
    generation: u64,
    /// The texture presents copy into, kept while size and format stay.
    texture: Option<wgpu::Texture>,
    /// The last frame read back, by generation (repeated screenshots read once).
    read: RefCell<Option<(u64, Frame)>>,
    /// Read-backs from the GPU (any: presents, write-backs, partial writes).
    pub(super) readbacks: Cell<u64>,
}

impl ScanoutState {
    /// Device reset: nothing presented; the generation keeps counting.
    pub(super) fn reset(&mut self) {
        self.presented = None;
        self.texture = None;
        self.read.replace(None);
    }

    pub(super) fn generation(&self) -> Option<u64> {
        self.presented.as_ref().map(|p| p.generation)
    }

    pub(super) fn texture(&self) -> Option<PresentedTexture> {
        let p = self.presented.as_ref()?;
        match &p.image {
            Image::Texture(texture) => Some(PresentedTexture {
                texture: texture.clone(),
                generation: p.generation,
            }),
            Image::Frame(_) => None,
        }
    }
}

impl WgpuExecutor {
    /// The device features the executor uses when the adapter has them: a device made
    /// for it elsewhere (the window's, shared) asks for these.
    pub const FEATURES: wgpu::Features =
        wgpu::Features::TEXTURE_COMPRESSION_BC.union(wgpu::Features::DEPTH32FLOAT_STENCIL8);

    /// PRESENT of host-only target `id`: it becomes the presented frame.
    pub(super) fn present_host_copy(&mut self, id: ResourceId) -> Result<(), WgpuError> {
        let desc = self.texture_desc(id)?;
        common::presentable(&desc, id)?;
        let (target, repr) = self.texture_parts(id)?;
        let format = target.format().remove_srgb_suffix();
        let on_gpu = repr == Repr::Direct
            && self.bc_blocks(id).is_none()
            && matches!(
                format,
                wgpu::TextureFormat::Rgba8Unorm | wgpu::TextureFormat::Bgra8Unorm
            );
        let image = if on_gpu {
            self.flush_draws()?;
            let size = wgpu::Extent3d {
                width: desc.width,
                height: desc.height,
                depth_or_array_layers: 1,
            };
            let reuse = self
                .scanout
                .texture
                .take()
                .filter(|t| t.format() == format && t.size() == size);
            let (target, _) = self.texture_parts(id)?;
            let texture = reuse.unwrap_or_else(|| {
                self.device.create_texture(&wgpu::TextureDescriptor {
                    label: Some("aerogpu scanout"),
                    size,
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format,
                    usage: wgpu::TextureUsages::COPY_DST
                        | wgpu::TextureUsages::COPY_SRC
                        | wgpu::TextureUsages::TEXTURE_BINDING,
                    view_formats: &[format.add_srgb_suffix()],
                })
            });
            let mut enc = self.device.create_command_encoder(&Default::default());
            enc.copy_texture_to_texture(target.as_image_copy(), texture.as_image_copy(), size);
            self.queue.submit([enc.finish()]);
            self.take_gpu_errors()?;
            self.scanout.texture = Some(texture.clone());
            Image::Texture(texture)
        } else {
            Image::Frame(self.frame_of(id)?)
        };
        self.scanout.generation += 1;
        self.scanout.presented = Some(Presented {
            generation: self.scanout.generation,
            desc,
            image,
        });
        Ok(())
    }

    /// The frame scanout 0 shows instead of guest memory (a host-only target was
    /// presented), as RGBA8. Reads the scanout texture back the first time a frame is
    /// asked for.
    pub fn presented_frame(&self) -> Option<Frame> {
        let mut frame = Frame::new();
        match self.read_presented_into(&mut frame) {
            Ok(true) => Some(frame),
            Ok(false) => None,
            Err(e) => {
                tracing::warn!(error = %e, "aerogpu: presented frame not read back");
                None
            }
        }
    }

    pub(super) fn read_presented_into(&self, frame: &mut Frame) -> Result<bool, WgpuError> {
        let Some(p) = &self.scanout.presented else {
            return Ok(false);
        };
        let texture = match &p.image {
            Image::Frame(f) => {
                frame.clone_from(f);
                return Ok(true);
            }
            Image::Texture(t) => t,
        };
        if let Some((generation, cached)) = &*self.scanout.read.borrow()
            && *generation == p.generation
        {
            frame.clone_from(cached);
            return Ok(true);
        }
        // The scanout texture holds the guest's 8-bit texels as they are.
        let sub = common::presentable(&p.desc, 0)?;
        let rows = self.read_texture_rows(texture, Repr::Direct, (0, 0, &sub), 0, p.desc.height)?;
        let read = super::frame_of_rows(&p.desc, &sub, &rows);
        frame.clone_from(&read);
        self.scanout.read.replace(Some((p.generation, read)));
        Ok(true)
    }

    /// Records `copy` (into `staging`), submits it, waits and maps the first `len` bytes
    /// of `staging` (unmap it after use). Every read-back from the GPU goes through here
    /// and is counted ([`WgpuExecutor::readbacks`]).
    pub(super) fn read_back(
        &self,
        staging: &wgpu::Buffer,
        len: u64,
        copy: impl FnOnce(&mut wgpu::CommandEncoder),
    ) -> Result<wgpu::BufferView, WgpuError> {
        self.scanout.readbacks.set(self.scanout.readbacks.get() + 1);
        let mut enc = self.device.create_command_encoder(&Default::default());
        copy(&mut enc);
        self.queue.submit([enc.finish()]);
        self.take_gpu_errors()?;
        let slice = staging.slice(..len);
        let (done, mapped) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = done.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| WgpuError::Gpu(e.to_string()))?;
        // On a device shared with the window, the window thread's poll may be the one
        // running the callback, still at it when ours returns: wait for the callback.
        match mapped.recv_timeout(MAP_TIMEOUT) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(WgpuError::Gpu(e.to_string())),
            Err(_) => return Err(WgpuError::Gpu("read-back was not mapped".into())),
        }
        Ok(slice.get_mapped_range())
    }

    /// Read-backs from the GPU so far (presents, write-backs, partial writes, screenshots).
    pub fn readbacks(&self) -> u64 {
        self.scanout.readbacks.get()
    }
}

#[cfg(test)]
mod tests {
    use aero_protocol::cmd::{self, Opcode};
    use aero_protocol::pci::Format;
    use aero_protocol::writer::CmdStreamWriter;

    use crate::aerogpu::{
        AllocTable, CommandProcessor, Executor, Limits, SoftExecutorConfig, VecMemory, WgpuExecutor,
    };

    /// Runs `f`'s commands through the processor into `exec`.
    fn run(
        p: &mut CommandProcessor,
        exec: &mut WgpuExecutor,
        f: impl FnOnce(&mut CmdStreamWriter),
    ) {
        let mut w = CmdStreamWriter::new();
        f(&mut w);
        let mut mem = VecMemory::new(4096);
        p.process(&w.finish(), &AllocTable::new(), &mut mem, exec)
            .unwrap();
    }

    /// A host-only `format` render target `handle`, 5x3, bound.
    fn target(w: &mut CmdStreamWriter, handle: u32, format: Format) {
        let t = cmd::CreateTexture2d {
            texture_handle: handle,
            usage_flags: cmd::RESOURCE_USAGE_RENDER_TARGET,
            format: format as u32,
            width: 5,
            height: 3,
            mip_levels: 1,
            array_layers: 1,
            ..Default::default()
        };
        w.push(Opcode::CreateTexture2d, &t, &[]);
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
    fn presents_stay_on_the_gpu_until_the_frame_is_asked_for() {
        let Ok(mut exec) = WgpuExecutor::new_headless(SoftExecutorConfig::default()) else {
            panic!("no wgpu adapter (install mesa-vulkan-drivers)");
        };
        let mut p = CommandProcessor::new(Limits::default());
        run(&mut p, &mut exec, |w| target(w, 1, Format::B8G8R8X8Unorm));
        let before = exec.readbacks();
        let mut generations = Vec::new();
        for i in 0..20 {
            let red = if i % 2 == 0 { 1.0 } else { 0.0 };
            run(&mut p, &mut exec, |w| {
                w.clear([red, 0.0, 1.0, 0.5]).present(0);
            });
            let shown = exec.presented_texture().expect("the frame is on the GPU");
            assert_eq!(Some(shown.generation), exec.presented_generation());
            assert_eq!(shown.texture.size().width, 5);
            generations.push(shown.generation);
        }
        assert_eq!(exec.readbacks(), before, "no read-back per present");
        generations.dedup();
        assert_eq!(generations.len(), 20, "every present is a new generation");
        // Asked for: one read-back, X8's byte shown opaque; asked again: none.
        let frame = exec.presented_frame().unwrap();
        assert_eq!((frame.width, frame.height), (5, 3));
        assert_eq!(frame.pixel(4, 2), Some([0, 0, 255, 255]));
        assert_eq!(exec.readbacks(), before + 1);
        assert_eq!(exec.presented_frame(), Some(frame));
        assert_eq!(exec.readbacks(), before + 1);
        // The scanout moved on: nothing presented, nothing to draw.
        exec.scanout_reprogrammed();
        assert!(exec.presented_texture().is_none());
        assert_eq!(exec.presented_generation(), None);
    }

    #[test]
    fn expanded_formats_are_read_back_at_present() {
        let Ok(mut exec) = WgpuExecutor::new_headless(SoftExecutorConfig::default()) else {
            panic!("no wgpu adapter (install mesa-vulkan-drivers)");
        };
        let mut p = CommandProcessor::new(Limits::default());
        run(&mut p, &mut exec, |w| {
            target(w, 1, Format::B5G6R5Unorm);
            w.clear([0.0, 1.0, 0.0, 1.0]).present(0);
        });
        assert!(exec.presented_texture().is_none());
        assert!(exec.presented_generation().is_some());
        let frame = exec.presented_frame().unwrap();
        assert_eq!(frame.pixel(0, 0), Some([0, 255, 0, 255]));
    }

    /// Not a check (the figures depend on the host): what a 1280x1024 host-only present
    /// costs on the GPU path against the same present read back (the pre-hand-off path,
    /// which also uploaded the pixels to the window's device). Run it with
    /// `cargo test --profile ci -p aero-gpu --lib present_cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "timing figures, run by hand"]
    fn present_cost() {
        let mut exec = WgpuExecutor::new_headless(SoftExecutorConfig::default()).unwrap();
        let mut p = CommandProcessor::new(Limits::default());
        run(&mut p, &mut exec, |w| {
            w.create_texture2d(1, Format::B8G8R8X8Unorm as u32, 1280, 1024, 0);
            let mut colors = [0; 8];
            colors[0] = 1;
            let rt = cmd::SetRenderTargets {
                color_count: 1,
                colors,
                ..Default::default()
            };
            w.push(Opcode::SetRenderTargets, &rt, &[]);
        });
        let frames = 60;
        let mut time = |read_back: bool| {
            let start = std::time::Instant::now();
            for i in 0..frames {
                run(&mut p, &mut exec, |w| {
                    w.clear([i as f32 / 60.0, 0.0, 1.0, 1.0]).present(0);
                });
                if read_back {
                    assert!(exec.presented_frame().is_some());
                }
            }
            exec.device()
                .poll(wgpu::PollType::wait_indefinitely())
                .unwrap();
            start.elapsed().as_secs_f64() * 1000.0 / f64::from(frames)
        };
        let gpu = time(false);
        let read = time(true);
        println!(
            "1280x1024 clear + present: {gpu:.2} ms on the GPU path, {read:.2} ms read back \
             ({:.0} vs {:.0} presents/s)",
            1000.0 / gpu,
            1000.0 / read
        );
    }
}
