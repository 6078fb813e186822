//! A tiny guest driver over [`VecMemory`]: ring setup, submissions, register access.

use aero_protocol::ABI_VERSION_U32;
use aero_protocol::pci::{self, reg};
use aero_protocol::ring::{AllocEntry, RING_MAGIC, RingHeader, SubmitDesc};
use aero_protocol::writer::encode_alloc_table;

use crate::aerogpu::{AeroGpu, AeroGpuConfig, Executor, GuestMemory, NullExecutor, VecMemory};

pub const RAM_SIZE: usize = 8 << 20;
pub const RING_GPA: u64 = 0x1000;
pub const FENCE_GPA: u64 = 0x800;
/// Command streams and allocation tables are bump-allocated here (wrapping).
pub const SCRATCH_START: u64 = 0x10_0000;
pub const SCRATCH_END: u64 = 0x40_0000;
/// Resource backings live here.
pub const BACKING_GPA: u64 = 0x40_0000;

pub struct Guest<E: Executor = NullExecutor> {
    pub dev: AeroGpu<E>,
    pub mem: VecMemory,
    pub entry_count: u32,
    pub tail: u32,
    scratch: u64,
}

impl Guest {
    /// Ring of `entry_count` entries at RING_GPA with head = tail = `start`, enabled,
    /// fence page programmed, all IRQs enabled.
    pub fn new(entry_count: u32, start: u32) -> Self {
        Guest::with_executor(entry_count, start, NullExecutor::default())
    }
}

impl<E: Executor> Guest<E> {
    /// What a driver does on resume: rewrite the ring header (head = tail = current
    /// tail), reprogram the registers, reset and enable the ring.
    pub fn reinit_ring(&mut self) {
        let start = self.tail;
        self.write_ring(start);
        self.write(
            reg::RING_CONTROL,
            pci::RING_CONTROL_RESET | pci::RING_CONTROL_ENABLE,
        );
        self.write(
            reg::IRQ_ENABLE,
            pci::IRQ_FENCE | pci::IRQ_SCANOUT_VBLANK | pci::IRQ_ERROR,
        );
    }

    fn write_ring(&mut self, start: u32) {
        let size = RingHeader::SIZE as u32 + self.entry_count * SubmitDesc::SIZE as u32;
        let header = RingHeader {
            magic: RING_MAGIC,
            abi_version: ABI_VERSION_U32,
            size_bytes: size,
            entry_count: self.entry_count,
            entry_stride_bytes: SubmitDesc::SIZE as u32,
            flags: 0,
            head: start,
            tail: start,
            reserved0: [0; 8],
        };
        self.mem.write(RING_GPA, &header.to_bytes()).unwrap();
        self.write(reg::RING_GPA_LO, RING_GPA as u32);
        self.write(reg::RING_GPA_HI, 0);
        self.write(reg::RING_SIZE_BYTES, size);
        self.write(reg::FENCE_GPA_LO, FENCE_GPA as u32);
    }

    /// [`Guest::new`] with the device running `executor`.
    pub fn with_executor(entry_count: u32, start: u32, executor: E) -> Self {
        let mut g = Guest {
            dev: AeroGpu::with_executor(AeroGpuConfig::default(), executor),
            mem: VecMemory::new(RAM_SIZE),
            entry_count,
            tail: start,
            scratch: SCRATCH_START,
        };
        g.write_ring(start);
        g.write(reg::RING_CONTROL, pci::RING_CONTROL_ENABLE);
        g.write(
            reg::IRQ_ENABLE,
            pci::IRQ_FENCE | pci::IRQ_SCANOUT_VBLANK | pci::IRQ_ERROR,
        );
        g
    }

    pub fn read(&mut self, off: u32) -> u32 {
        self.dev.mmio_read(off.into(), 4) as u32
    }

    pub fn write(&mut self, off: u32, v: u32) {
        self.dev.mmio_write(off.into(), 4, v.into(), &mut self.mem);
    }

    pub fn read64(&mut self, lo: u32) -> u64 {
        u64::from(self.read(lo)) | u64::from(self.read(lo + 4)) << 32
    }

    pub fn completed_fence(&mut self) -> u64 {
        self.read64(reg::COMPLETED_FENCE_LO)
    }

    pub fn ring_head_in_memory(&self) -> u32 {
        let mut b = [0u8; 4];
        self.mem
            .read(RING_GPA + RingHeader::HEAD_OFFSET, &mut b)
            .unwrap();
        u32::from_le_bytes(b)
    }

    /// Copies `bytes` into scratch memory, returns its GPA.
    pub fn place(&mut self, bytes: &[u8]) -> u64 {
        let len = (bytes.len() as u64).div_ceil(64) * 64;
        if self.scratch + len > SCRATCH_END {
            self.scratch = SCRATCH_START;
        }
        let gpa = self.scratch;
        self.mem.write(gpa, bytes).unwrap();
        self.scratch += len.max(64);
        gpa
    }

    pub fn table(&mut self, entries: &[AllocEntry]) -> (u64, u32) {
        let bytes = encode_alloc_table(entries);
        (self.place(&bytes), bytes.len() as u32)
    }

    /// Writes `desc` at the tail slot and bumps tail (no doorbell).
    pub fn push_desc(&mut self, desc: &SubmitDesc) {
        let slot = u64::from(self.tail % self.entry_count);
        let gpa = RING_GPA + RingHeader::SIZE as u64 + slot * SubmitDesc::SIZE as u64;
        self.mem.write(gpa, &desc.to_bytes()).unwrap();
        self.tail = self.tail.wrapping_add(1);
        self.mem
            .write(RING_GPA + RingHeader::TAIL_OFFSET, &self.tail.to_le_bytes())
            .unwrap();
    }

    pub fn desc(
        &mut self,
        stream: &[u8],
        table: Option<(u64, u32)>,
        fence: u64,
        flags: u32,
    ) -> SubmitDesc {
        let (cmd_gpa, cmd_size) = if stream.is_empty() {
            (0, 0)
        } else {
            (self.place(stream), stream.len() as u32)
        };
        let (alloc_table_gpa, alloc_table_size_bytes) = table.unwrap_or((0, 0));
        SubmitDesc {
            desc_size_bytes: SubmitDesc::SIZE as u32,
            flags,
            cmd_gpa,
            cmd_size_bytes: cmd_size,
            alloc_table_gpa,
            alloc_table_size_bytes,
            signal_fence: fence,
            ..Default::default()
        }
    }

    /// One submission + doorbell.
    pub fn submit(&mut self, stream: &[u8], table: Option<(u64, u32)>, fence: u64, flags: u32) {
        let d = self.desc(stream, table, fence, flags);
        self.push_desc(&d);
        self.doorbell();
    }

    pub fn doorbell(&mut self) {
        self.write(reg::DOORBELL, 1);
    }

    pub fn tick(&mut self, now_ns: u64) {
        self.dev.tick(now_ns, &mut self.mem);
    }
}
