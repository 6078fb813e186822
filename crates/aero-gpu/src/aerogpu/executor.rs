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

    /// A presented frame guest memory does not hold (a host-only render target): scanout 0
    /// shows it instead of the guest framebuffer while enabled.
    fn presented_frame(&self) -> Option<&Frame> {
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

    fn presented_frame(&self) -> Option<&Frame> {
        (**self).presented_frame()
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
