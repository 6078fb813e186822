//! The CPU's only window onto the machine.

pub const PAGE_SIZE: u64 = 4096;

/// What backs one 4 KiB physical page, as seen by the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageMapping {
    /// Guest RAM at this byte offset in the `ram` slice given to `Cpu::run`.
    Ram { offset: usize },
    /// Readable RAM (e.g. BIOS ROM shadow) whose writes are ignored.
    Rom { offset: usize },
    /// Anything else: device MMIO or unbacked (reads all-ones, writes dropped).
    Mmio,
}

/// The machine as seen from the CPU. Every method may be called with guest-controlled
/// values and must not panic.
pub trait Bus {
    /// Where the 4 KiB page containing `paddr` lives. Must be stable until
    /// `mappings_changed` tells the CPU otherwise (the TLB caches the answer).
    fn map_page(&self, paddr: u64) -> PageMapping;
    fn mmio_read(&mut self, paddr: u64, size: u8) -> u64;
    fn mmio_write(&mut self, paddr: u64, size: u8, value: u64);
    fn io_read(&mut self, port: u16, size: u8) -> u32;
    fn io_write(&mut self, port: u16, size: u8, value: u32);
    /// Called before each `io_*`/`mmio_*` call and RDTSC with the CPU's retired
    /// instruction count, so time-dependent devices read the exact virtual time.
    fn sync_time(&mut self, _instructions_retired: u64) {}
    /// The time stamp counter at the last `sync_time`.
    fn tsc(&mut self) -> u64;
    /// Level of the INTR line (PIC/LAPIC has a deliverable interrupt).
    fn interrupt_pending(&mut self) -> bool;
    /// INTA cycle: the vector of the interrupt being accepted.
    fn acknowledge_interrupt(&mut self) -> u8;
    /// The machine wants control back (device work, firmware trap, reset, A20 change).
    /// Checked after every I/O or MMIO access and at block boundaries.
    fn stop_requested(&mut self) -> bool;
    /// The guest wrote IA32_APIC_BASE (the local APIC is the machine's device).
    fn apic_base_written(&mut self, _value: u64) {}
    /// The guest wrote CR8 (64-bit mode): the LAPIC TPR becomes `cr8 << 4`.
    fn task_priority_written(&mut self, _cr8: u8) {}
    /// CR8 as seen by MOV from CR8: the LAPIC's TPR >> 4, if the machine has a LAPIC.
    fn task_priority(&mut self) -> Option<u8> {
        None
    }
    /// A20 gate state: when false, physical address bit 20 is forced to zero.
    fn a20_enabled(&self) -> bool {
        true
    }
}
