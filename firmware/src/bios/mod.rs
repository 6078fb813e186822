//! The system BIOS: a ROM image of small real-mode stubs plus Rust handlers they trap
//! into (see [`trap`] for the protocol and [`rom`] for the ROM layout).
//!
//! # How the machine uses it
//! 1. `Bios::new(BiosConfig::new(ram_bytes))` (set `boot_order`, `cpu_count`, … first);
//!    map [`Bios::rom`] (128 KiB) at 0xE0000–0xFFFFF and at 0xFFFE0000–0xFFFFFFFF.
//! 2. Start the CPU at the reset vector. When the guest writes [`Bios::TRAP_PORT`] (16-bit
//!    OUT), stop the CPU after that instruction and call [`Bios::handle_trap`] with the
//!    value, the CPU state, the RAM slice (below-hole RAM at offset 0, RAM remapped above
//!    4 GiB right after it; extra bytes after `ram_size` are ignored) and a
//!    [`FirmwareHost`]. On `Resume`, drop decoded code: the handler may have written RAM
//!    (boot sectors, tables, BDA) and changed CS:IP.
//! 3. Make option ROMs (the VGA BIOS) readable at 0xC0000 before POST runs; the ROM scans
//!    0xC0000–0xDFFFF every 2 KiB for 55 AA with a valid checksum and far-calls offset 3.
//!
//! # Drives
//! DL 00h/01h = `DiskId::Floppy(n)`, 80h.. = `DiskId::HardDisk(n)` (consecutive from 0),
//! E0h = `DiskId::Cdrom(0)` (2048-byte sectors, EDD 42h reads, El Torito no-emulation boot).
//!
//! # Memory the BIOS claims (all reported in E820)
//! EBDA 0x9FC00 (1 KiB, MP table inside), ROM 0xE0000–0xFFFFF (RSDP at 0xFC000, SMBIOS
//! entry 0xFC040, SMBIOS structures 0xE0000), ACPI tables in the top 128 KiB of RAM below
//! the PCI hole (first 4 KiB NVS with the FACS, rest reclaimable), IOAPIC/HPET/LAPIC pages
//! and the BIOS alias below 4 GiB as reserved.

mod boot;
mod call;
mod clock;
mod config;
mod disk;
mod e820;
mod eltorito;
mod geometry;
mod keyboard;
pub mod linux;
pub(crate) mod mtrr;
mod pcibios;
mod post;
pub mod pvh;
mod scancode;
mod system;
mod tables_glue;

pub mod bda;
pub mod error;
pub mod host;
pub mod mem;
pub mod pci;
pub mod rom;
pub mod trap;

use aero_cpu::{CpuState, Reg, Seg};
use tracing::{debug, warn};

pub use call::Flow;
pub use config::{BiosConfig, BootDevice};
pub use disk::{CDROM_DRIVE, drive_id, edd_drive_parameters};
pub use e820::{E820Entry, E820Kind, MemoryPlan};
pub use eltorito::{BootImage, ElToritoError, catalog_lba, parse_catalog};
pub use error::{DiskIoError, FirmwareError};
pub use host::{DiskId, DiskInfo, DiskLocation, DiskPort, FirmwareHost};
pub use keyboard::{KeyEvent, process_scancode, translate};
pub use trap::{TrapId, TrapOutcome};

use call::Call;
use mem::GuestMem;
use rom::{BIOS_SEGMENT_BASE, Rom};

/// Mutable state that services keep between calls. Reset by POST.
#[derive(Clone, Debug, Default)]
pub(crate) struct RuntimeState {
    /// The El Torito image we booted from (INT 13h 4B01h reports it).
    pub cd_boot: Option<BootImage>,
    /// The El Torito emulation in force (drive 00h or 80h is an image on the CD).
    pub emulation: Option<eltorito::Emulation>,
    /// Deadline of an INT 15h/86h wait in progress.
    pub wait_deadline: Option<u64>,
    pub pci: pci::PciSummary,
    /// Index in the boot order of the device booted last (INT 18h tries the next one).
    pub boot_index: Option<usize>,
}

pub struct Bios {
    config: BiosConfig,
    rom: Rom,
    memory: MemoryPlan,
    tables: tables_glue::PlacedTables,
    state: RuntimeState,
    /// What the last trap wrote to guest RAM (see [`Bios::written_ranges`]).
    written: mem::WrittenRanges,
}

impl Bios {
    /// The port ROM stubs write to; see [`trap`].
    pub const TRAP_PORT: u16 = trap::TRAP_PORT;

    pub fn new(config: BiosConfig) -> Result<Bios, FirmwareError> {
        if config.cpu_count == 0 || config.cpu_count > 255 {
            return Err(FirmwareError::Config(format!("{} CPUs", config.cpu_count)));
        }
        let memory = MemoryPlan::new(&config)?;
        let mut rom = Rom::build()?;
        let tables = tables_glue::build(&config, &memory, &mut rom)?;
        // A kernel that cannot be placed is a configuration error now, not at INT 19h.
        if let Some(linux) = &config.linux {
            linux.plan(memory.extended_top())?;
        }
        Ok(Bios {
            config,
            rom,
            memory,
            tables,
            state: RuntimeState::default(),
            written: mem::WrittenRanges::None,
        })
    }

    /// The 128 KiB system ROM (0xE0000–0xFFFFF; its top is also the reset vector page).
    pub fn rom(&self) -> &[u8] {
        &self.rom.image
    }

    /// The map INT 15h/E820 reports.
    pub fn memory_map(&self) -> &[E820Entry] {
        &self.memory.map
    }

    pub fn layout(&self) -> &rom::RomLayout {
        &self.rom.layout
    }

    /// Guest RAM the last [`Bios::handle_trap`] wrote: the machine drops decoded code
    /// there (boot sectors, loaded files) rather than every decoded block.
    pub fn written_ranges(&self) -> &mem::WrittenRanges {
        &self.written
    }

    /// Handles a guest write of `value` to [`Bios::TRAP_PORT`]. The OUT has completed (RIP
    /// is past it). Returns [`TrapOutcome::Ignored`] for writes that did not come from one
    /// of our stubs. `Err` means the BIOS cannot continue (e.g. its stack is not in RAM).
    pub fn handle_trap(
        &mut self,
        value: u32,
        cpu: &mut CpuState,
        ram: &mut [u8],
        host: &mut dyn FirmwareHost,
    ) -> Result<TrapOutcome, FirmwareError> {
        let Some(id) = TrapId::from_value(value & 0xFFFF) else {
            debug!(value, "trap port write with unknown id");
            return Ok(TrapOutcome::Ignored);
        };
        let Some(&return_ip) = self.rom.layout.trap_return.get(&id.code()) else {
            return Ok(TrapOutcome::Ignored);
        };
        let cs = cpu.seg(Seg::Cs);
        let from_stub = cpu.rip == return_ip as u64
            && cs.base.wrapping_add(cpu.rip) == BIOS_SEGMENT_BASE + return_ip as u64;
        if !from_stub {
            debug!(
                ?id,
                rip = cpu.rip,
                "trap port write from outside the ROM stubs ignored"
            );
            return Ok(TrapOutcome::Ignored);
        }
        let v86 = cpu.rflags & (1 << 17) != 0;
        if cpu.protected_mode() && !v86 {
            warn!(?id, "BIOS service called in protected mode");
            return Err(FirmwareError::UnsupportedMode);
        }

        let mem = GuestMem::new(ram, self.config.ram_size, self.config.pci_hole_start);
        // Take back the AX and DX the stub pushed, so the service sees the caller's values.
        let ss = cpu.seg(Seg::Ss).base;
        let sp = cpu.reg(Reg::Rsp) as u16;
        let stack = |off: u16| ss.wrapping_add(sp.wrapping_add(off) as u64);
        let ax = mem.read_u16(stack(0))?;
        let dx = mem.read_u16(stack(2))?;
        let sp = sp.wrapping_add(4);
        let set16 =
            |cpu: &mut CpuState, r: Reg, v: u16| cpu.set_reg(r, (cpu.reg(r) & !0xFFFF) | v as u64);
        set16(cpu, Reg::Rax, ax);
        set16(cpu, Reg::Rdx, dx);
        set16(cpu, Reg::Rsp, sp);
        // INT n frame: IP, CS, FLAGS.
        let flags_addr =
            matches!(id, TrapId::Int(_)).then(|| ss.wrapping_add(sp.wrapping_add(4) as u64));

        tracing::trace!(
            ?id,
            ax,
            bx = cpu.reg(Reg::Rbx) as u16,
            cx = cpu.reg(Reg::Rcx) as u16,
            dx,
            "BIOS service"
        );
        let mut c = Call::new(cpu, mem, host, flags_addr);
        let flow = match id {
            TrapId::Post => self.post(&mut c)?,
            TrapId::KeyboardIrq => self.keyboard_irq(&mut c)?,
            TrapId::Int(0x10) => {
                // TODO(vgabios): the VGA option ROM replaces this vector; until it exists
                // output is only logged (teletype text also goes to port 0xE9).
                debug!(ax = c.r16(Reg::Rax), "INT 10h without a VGA BIOS");
                if c.ah() == 0x0E {
                    let ch = c.al();
                    c.host.io_write(0xE9, 1, ch as u32);
                }
                Flow::Return
            }
            TrapId::Int(0x13) => self.int13(&mut c)?,
            TrapId::Int(0x15) => self.int15(&mut c)?,
            TrapId::Int(0x16) => self.int16(&mut c)?,
            TrapId::Int(0x18) => self.int18(&mut c)?,
            TrapId::Int(0x19) => self.int19(&mut c)?,
            TrapId::Int(0x1A) => self.int1a(&mut c)?,
            TrapId::Int(n) => {
                warn!(vector = n, "trap from a stub without a handler");
                Flow::Return
            }
        };
        if flow == Flow::Retry {
            let Some(&entry) = self.rom.layout.trap_entry.get(&id.code()) else {
                return Err(FirmwareError::Layout(format!(
                    "{id:?} cannot be re-entered"
                )));
            };
            let sp = (c.cpu.reg(Reg::Rsp) as u16).wrapping_sub(2);
            c.mem.write_u16(ss.wrapping_add(sp as u64), entry)?;

            set16(c.cpu, Reg::Rsp, sp);
            c.cpu.rip = self.rom.layout.idle_reenter as u64;
        }
        self.written = c.mem.take_written();
        Ok(TrapOutcome::Resume)
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
use eltorito::test_data as eltorito_test_data;
