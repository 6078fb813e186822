//! Replays a driver trace (format in `drivers/aerogpu/tests_host/agpu_trace.h`) into an
//! [`AeroGpu`] over [`VecMemory`]: guest-RAM writes and BAR0 writes in program order, then
//! reports what the device did next to what the C scenario expected.

use aero_gpu::aerogpu::{
    AeroGpu, AeroGpuConfig, DeviceStats, ErrorLatch, Executor, GuestMemory, NullExecutor, VecMemory,
};
use thiserror::Error;

/// Guest RAM size the C recorder uses (`AGPU_TRACE_RAM_BYTES`).
pub const TRACE_RAM_BYTES: usize = 8 << 20;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ReplayError {
    #[error("not a trace file (bad magic or version)")]
    BadHeader,
    #[error("trace truncated at byte {0}")]
    Truncated(usize),
    #[error("unknown record tag {tag:#x} at byte {offset}")]
    UnknownRecord { tag: u8, offset: usize },
    #[error("memory record {gpa:#x}+{len:#x} outside the trace RAM")]
    MemoryOutOfRange { gpa: u64, len: u64 },
    #[error("trace has no end record")]
    NoEnd,
}

/// What the scenario expected ('F', 'C', 'S' records).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Expectations {
    pub completed_fence: u64,
    pub error_count: u32,
    pub error_code: u32,
    pub submissions: u32,
}

#[derive(Debug)]
pub struct ReplayOutcome<E: Executor = NullExecutor> {
    pub expected: Expectations,
    pub completed_fence: u64,
    pub error: ErrorLatch,
    pub stats: DeviceStats,
    pub mmio_writes: u32,
    pub device: AeroGpu<E>,
    pub memory: VecMemory,
}

impl<E: Executor> ReplayOutcome<E> {
    /// Checks the device against the expectations; the message names every mismatch.
    pub fn check(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        if self.completed_fence != self.expected.completed_fence {
            problems.push(format!(
                "completed fence {} != expected {}",
                self.completed_fence, self.expected.completed_fence
            ));
        }
        if self.error.count != self.expected.error_count {
            problems.push(format!(
                "error count {} != expected {} (last code {}, fence {})",
                self.error.count, self.expected.error_count, self.error.code, self.error.fence
            ));
        }
        if self.expected.error_count > 0 && self.error.code != self.expected.error_code {
            problems.push(format!(
                "error code {} != expected {}",
                self.error.code, self.expected.error_code
            ));
        }
        if self.stats.submissions != u64::from(self.expected.submissions) {
            problems.push(format!(
                "submissions {} != expected {}",
                self.stats.submissions, self.expected.submissions
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], ReplayError> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or(ReplayError::Truncated(self.pos))?;
        let s = self
            .bytes
            .get(self.pos..end)
            .ok_or(ReplayError::Truncated(self.pos))?;
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, ReplayError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, ReplayError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, ReplayError> {
        let lo = u64::from(self.u32()?);
        let hi = u64::from(self.u32()?);
        Ok(lo | hi << 32)
    }
}

/// Replays `trace` into a fresh device with the default configuration.
pub fn replay(trace: &[u8]) -> Result<ReplayOutcome, ReplayError> {
    replay_with(trace, NullExecutor::default())
}

/// Replays `trace` into a fresh device that runs its commands on `executor`.
pub fn replay_with<E: Executor>(
    trace: &[u8],
    executor: E,
) -> Result<ReplayOutcome<E>, ReplayError> {
    let mut r = Reader {
        bytes: trace,
        pos: 0,
    };
    if r.take(4).map_err(|_| ReplayError::BadHeader)? != b"AGTR"
        || r.u32().map_err(|_| ReplayError::BadHeader)? != 1
    {
        return Err(ReplayError::BadHeader);
    }
    let mut dev = AeroGpu::with_executor(AeroGpuConfig::default(), executor);
    let mut mem = VecMemory::new(TRACE_RAM_BYTES);
    let mut expected = Expectations::default();
    let mut mmio_writes = 0u32;
    loop {
        let offset = r.pos;
        if offset >= trace.len() {
            return Err(ReplayError::NoEnd);
        }
        match r.u8()? {
            b'M' => {
                let gpa = r.u64()?;
                let len = r.u32()?;
                let data = r.take(len as usize)?;
                mem.write(gpa, data)
                    .map_err(|_| ReplayError::MemoryOutOfRange {
                        gpa,
                        len: len.into(),
                    })?;
            }
            b'W' => {
                let off = r.u32()?;
                let value = r.u32()?;
                dev.write_reg(off, value, &mut mem);
                mmio_writes += 1;
            }
            b'F' => expected.completed_fence = r.u64()?,
            b'C' => {
                expected.error_count = r.u32()?;
                expected.error_code = r.u32()?;
            }
            b'S' => expected.submissions = r.u32()?,
            b'E' => break,
            tag => return Err(ReplayError::UnknownRecord { tag, offset }),
        }
    }
    Ok(ReplayOutcome {
        expected,
        completed_fence: dev.completed_fence(),
        error: dev.error(),
        stats: dev.stats(),
        mmio_writes,
        device: dev,
        memory: mem,
    })
}
