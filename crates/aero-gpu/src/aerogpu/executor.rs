//! What runs validated commands. The processor has already checked every handle, range
//! and guest backing, so an executor only translates (to wgpu, a software renderer, ...).

use super::memory::GuestMemory;
use super::processor::Command;
use crate::Frame;

/// Facts about the submission being executed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubmissionInfo {
    pub context_id: u32,
    pub signal_fence: u64,
    pub flags: u32,
}

/// A presented frame on the GPU: mip 0 of a 2D texture, `Rgba8Unorm` or `Bgra8Unorm`
/// holding the guest's bytes (sRGB-encoded; its sRGB variant is an allowed view format),
/// usable as `TEXTURE_BINDING` and `COPY_SRC`. The executor writes each new present into it
/// through its queue, so a draw submitted later on the same queue sees a whole frame.
/// X8 formats' fourth byte is not alpha: a window shows the texture opaque.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PresentedTexture {
    pub texture: wgpu::Texture,
    /// [`Executor::presented_generation`] of this frame.
    pub generation: u64,
}

/// Scanout 0 as a texture on the GPU executor's device, and the cursor to draw over it:
/// what a window sharing that device shows without reading pixels back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuScanout {
    pub texture: PresentedTexture,
    pub cursor: Option<super::CursorImage>,
}

pub trait Executor {
    fn begin_submission(&mut self, _info: &SubmissionInfo) {}

    /// Runs one command. An error is reported to the guest as AEROGPU_ERROR_BACKEND and
    /// ends the submission; the device keeps running.
    fn execute(&mut self, command: &Command<'_>, mem: &mut dyn GuestMemory) -> Result<(), String>;

    /// Submits work the executor batched (the end of each command stream). An error is
    /// reported to the guest like one of `execute`.
    fn flush(&mut self) -> Result<(), String> {
        Ok(())
    }

    fn end_submission(&mut self) {}

    /// The device was reset: drop every object.
    fn reset(&mut self) {}

    /// Set while a present of a frame guest memory does not hold (a host-only render
    /// target) is what scanout 0 shows instead of the guest framebuffer; the number moves
    /// with every such present, so a watcher learns of a new frame without its pixels.
    fn presented_generation(&self) -> Option<u64> {
        None
    }

    /// Writes that presented frame into `frame` as RGBA8 (false when there is none, or it
    /// could not be read). A GPU executor reads the pixels back here, and only here: call
    /// it when the pixels are needed (a screenshot, a watcher's look at a new frame).
    fn read_presented(&self, _frame: &mut Frame) -> bool {
        false
    }

    /// The presented frame as a texture on the executor's wgpu device, for a window that
    /// draws with the same device (no read-back); `None` for CPU executors.
    fn presented_texture(&self) -> Option<PresentedTexture> {
        None
    }

    /// The guest changed a SCANOUT0 register: guest memory is shown again (until the next
    /// present of a host-only target).
    fn scanout_reprogrammed(&mut self) {}
}

/// Boxed executors (the machine picks one at run time).
impl<E: Executor + ?Sized> Executor for Box<E> {
    fn begin_submission(&mut self, info: &SubmissionInfo) {
        (**self).begin_submission(info)
    }

    fn execute(&mut self, command: &Command<'_>, mem: &mut dyn GuestMemory) -> Result<(), String> {
        (**self).execute(command, mem)
    }

    fn flush(&mut self) -> Result<(), String> {
        (**self).flush()
    }

    fn end_submission(&mut self) {
        (**self).end_submission()
    }

    fn reset(&mut self) {
        (**self).reset()
    }

    fn presented_generation(&self) -> Option<u64> {
        (**self).presented_generation()
    }

    fn read_presented(&self, frame: &mut Frame) -> bool {
        (**self).read_presented(frame)
    }

    fn presented_texture(&self) -> Option<PresentedTexture> {
        (**self).presented_texture()
    }

    fn scanout_reprogrammed(&mut self) {
        (**self).scanout_reprogrammed()
    }
}

/// Executes nothing: fences complete, nothing is drawn. Counts what it saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NullExecutor {
    pub submissions: u64,
    pub commands: u64,
    pub draws: u64,
    pub presents: u64,
}

impl Executor for NullExecutor {
    fn begin_submission(&mut self, _info: &SubmissionInfo) {
        self.submissions += 1;
    }

    fn execute(&mut self, command: &Command<'_>, _mem: &mut dyn GuestMemory) -> Result<(), String> {
        self.commands += 1;
        match command {
            Command::Draw(_) | Command::DrawIndexed(_) => self.draws += 1,
            Command::Present { .. } => self.presents += 1,
            _ => {}
        }
        Ok(())
    }
}
