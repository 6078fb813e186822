//! The guest-driver side the benchmark examples share: a submission ring in guest memory,
//! the MMIO writes that start it, and submissions queued and kicked as a driver does.

use aero_gpu::aerogpu::{AeroGpu, Executor, GuestMemory, VecMemory};
use aero_protocol::ABI_VERSION_U32;
use aero_protocol::pci::{self, reg};
use aero_protocol::ring::{RING_MAGIC, RingHeader, SubmitDesc};

const RING_GPA: u64 = 0x1000;

/// A ring of `entries` submission descriptors at `RING_GPA` and the driver's tail and
/// fence counters; every submission uses the allocation table at `table_gpa`.
pub struct DriverRing {
    entries: u32,
    table_gpa: u64,
    table_len: u32,
    tail: u32,
    /// The fence of the last queued submission.
    pub fence: u64,
}

impl DriverRing {
    /// Writes the ring header, then programs the ring's place and size and enables it and
    /// the fence and error interrupts, like a driver's start-up.
    pub fn start<E: Executor>(
        dev: &mut AeroGpu<E>,
        mem: &mut VecMemory,
        entries: u32,
        table_gpa: u64,
        table_len: usize,
    ) -> Self {
        let ring_size = RingHeader::SIZE as u32 + entries * SubmitDesc::SIZE as u32;
        let header = RingHeader {
            magic: RING_MAGIC,
            abi_version: ABI_VERSION_U32,
            size_bytes: ring_size,
            entry_count: entries,
            entry_stride_bytes: SubmitDesc::SIZE as u32,
            ..Default::default()
        };
        mem.write(RING_GPA, &header.to_bytes()).unwrap();
        for (offset, value) in [
            (reg::RING_GPA_LO, RING_GPA as u32),
            (reg::RING_SIZE_BYTES, ring_size),
            (reg::RING_CONTROL, pci::RING_CONTROL_ENABLE),
            (reg::IRQ_ENABLE, pci::IRQ_FENCE | pci::IRQ_ERROR),
        ] {
            dev.mmio_write(offset.into(), 4, value.into(), mem);
        }
        DriverRing {
            entries,
            table_gpa,
            table_len: table_len as u32,
            tail: 0,
            fence: 0,
        }
    }

    /// Writes the next descriptor: the command stream at `cmd_gpa`, signalling the next fence.
    pub fn queue(&mut self, mem: &mut VecMemory, cmd_gpa: u64, cmd_len: usize) {
        self.fence += 1;
        let desc = SubmitDesc {
            desc_size_bytes: SubmitDesc::SIZE as u32,
            cmd_gpa,
            cmd_size_bytes: cmd_len as u32,
            alloc_table_gpa: self.table_gpa,
            alloc_table_size_bytes: self.table_len,
            signal_fence: self.fence,
            ..Default::default()
        };
        let slot = u64::from(self.tail % self.entries);
        let at = RING_GPA + RingHeader::SIZE as u64 + slot * SubmitDesc::SIZE as u64;
        mem.write(at, &desc.to_bytes()).unwrap();
        self.tail = self.tail.wrapping_add(1);
    }

    /// Publishes the tail, rings the doorbell and acknowledges the fence interrupt.
    pub fn kick<E: Executor>(&self, dev: &mut AeroGpu<E>, mem: &mut VecMemory) {
        mem.write(RING_GPA + RingHeader::TAIL_OFFSET, &self.tail.to_le_bytes())
            .unwrap();
        dev.mmio_write(reg::DOORBELL.into(), 4, 1, mem);
        dev.mmio_write(reg::IRQ_ACK.into(), 4, pci::IRQ_FENCE.into(), mem);
    }
}
