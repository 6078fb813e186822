//! The machine: CPU + memory + platform, and the run loop with its virtual clock.

use aero_cpu::{Cpu, RunExit};
pub use aero_gpu::Frame;
use aero_gpu::vga::BANK_SIZE;
use aero_storage::ide::IdeDrive;
use aero_storage::{BlockDevice, SharedDisk};

pub use aero_firmware::bios::BootDevice;
pub use aero_firmware::bios::linux::{LinuxBoot, LinuxBootError};
use aero_firmware::bios::{Bios, BiosConfig, TrapOutcome, mem::WrittenRanges};
use aero_firmware::tables::acpi::EcamWindow;

use crate::audio::AudioBackend;
use crate::clock::Clock;
use crate::devices::ahci_pci::AhciConfig;
use crate::devices::e1000::E1000;
use crate::devices::hda::Hda;
use crate::devices::pci::{PciAddress, PciFunction};
use crate::firmware_host::{Disks, Host};
use crate::guest_ram::GuestRam;
use crate::memory_map::{self, MemoryError, MemoryMap};
use crate::net::NetBackend;
use crate::platform::Platform;
#[cfg(test)]
#[path = "ahci_tests.rs"]
mod ahci_tests;
#[path = "display.rs"]
mod display;
#[path = "floppy_media.rs"]
pub(crate) mod floppy_media;
#[cfg(test)]
#[path = "floppy_tests.rs"]
mod floppy_tests;
#[path = "host_gamepad.rs"]
pub(crate) mod host_gamepad;
#[path = "host_io.rs"]
pub(crate) mod host_io;
#[cfg(test)]
#[path = "ide_tests.rs"]
mod ide_tests;
#[path = "media.rs"]
pub(crate) mod media;
#[cfg(test)]
#[path = "media_tests.rs"]
mod media_tests;

/// Guest RAM through the memory map, for the device test modules.
#[cfg(test)]
fn ram_write(m: &mut Machine, addr: u64, data: &[u8]) {
    use aero_storage::ide::GuestMemory;
    GuestRam::new(&mut m.memory, &m.platform.map)
        .write(addr, data)
        .unwrap();
}

#[cfg(test)]
fn ram_read(m: &mut Machine, addr: u64, len: usize) -> Vec<u8> {
    use aero_storage::ide::GuestMemory;
    let mut buf = vec![0u8; len];
    GuestRam::new(&mut m.memory, &m.platform.map)
        .read(addr, &mut buf)
        .unwrap();
    buf
}

pub struct MachineConfig {
    pub memory_bytes: u64,
    pub hda: Option<Box<dyn BlockDevice>>,
    pub cdrom: Option<Box<dyn BlockDevice>>,
    pub fda: Option<Box<dyn BlockDevice>>,
    pub boot_order: Vec<BootDevice>,
    /// A system BIOS image to use instead of Aero's own (e.g. SeaBIOS).
    pub external_bios: Option<Vec<u8>>,
    pub deterministic: bool,
    /// Where `hda` is plugged in; our BIOS boots it from any slot. (`cdrom` is the IDE
    /// secondary master, as Windows 7 setup expects.)
    pub hda_slot: DriveSlot,
    /// More drives on the storage controllers. Our BIOS's INT 13h sees their hard disks
    /// as 81h, 82h, ... (after `hda`, in slot order: IDE, then AHCI); CD drives other
    /// than the IDE secondary master are left to the guest's drivers.
    pub extra_drives: Vec<(DriveSlot, IdeDrive)>,
    /// An e1000 NIC at 00:03.0 (as in QEMU's `pc`), with its MAC address and host side.
    pub nic: Option<(MacAddress, Box<dyn NetBackend>)>,
    /// An HD Audio controller at 00:1B.0 (where ICH chipsets have it) and its host side.
    pub audio: Option<Box<dyn AudioBackend>>,
    /// ICH9 USB: EHCI at 00:1D.7 over six ports, its UHCI companions at 00:1D.0-2 (two
    /// ports each), tablet, keyboard and mouse on ports 1-3, as QEMU's `ich9-usb-ehci1`
    /// and `ich9-usb-uhci1`-`3` with `usb-tablet` etc.
    pub usb: bool,
    /// A Linux kernel our BIOS boots directly at INT 19h (`--kernel`), before the boot order.
    pub linux: Option<std::sync::Arc<LinuxBoot>>,
}

/// An Ethernet MAC address.
pub type MacAddress = [u8; 6];

impl Default for MachineConfig {
    fn default() -> Self {
        MachineConfig {
            memory_bytes: 512 << 20,
            hda: None,
            cdrom: None,
            fda: None,
            boot_order: vec![BootDevice::HardDisk, BootDevice::Cdrom, BootDevice::Floppy],
            external_bios: None,
            deterministic: true,
            hda_slot: DriveSlot::default(),
            extra_drives: Vec::new(),
            nic: None,
            audio: None,
            usb: false,
            linux: None,
        }
    }
}

/// A place for a drive on the storage controllers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DriveSlot {
    /// PIIX3 IDE: channel 0 (primary) or 1 (secondary), master or slave.
    Ide { channel: u8, slave: bool },
    /// ICH9 AHCI port 0–5.
    Ahci(u8),
}

impl std::fmt::Display for DriveSlot {
    /// For messages: "IDE secondary master", "AHCI port 2".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DriveSlot::Ide { channel, slave } => {
                let ch = ["primary", "secondary"].get(*channel as usize).copied();
                let unit = if *slave { "slave" } else { "master" };
                match ch {
                    Some(ch) => write!(f, "IDE {ch} {unit}"),
                    None => write!(f, "IDE channel {channel} {unit}"),
                }
            }
            DriveSlot::Ahci(port) => write!(f, "AHCI port {port}"),
        }
    }
}

impl Default for DriveSlot {
    /// The IDE primary master.
    fn default() -> Self {
        DriveSlot::Ide {
            channel: 0,
            slave: false,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error("firmware: {0}")]
    Firmware(String),
    #[error("configuration: {0}")]
    Config(String),
    #[error("disk: {0}")]
    Disk(#[from] aero_storage::StorageError),
    #[error("{0}: {1}")]
    Media(DriveSlot, aero_storage::ide::MediaError),
}

/// What ended a call to [`Machine::run_for`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEvent {
    /// The time slice is used up; the guest is still running.
    Running,
    /// The guest powered off (ACPI S5).
    PoweredOff,
    /// The CPU shut down (triple fault); the message names CS:RIP and the last exception.
    Shutdown(String),
}

/// Where the NIC plugs in (QEMU's `pc` puts its first NIC in slot 3 too).
pub const NIC_ADDRESS: PciAddress = PciAddress::new(0, 3, 0);

/// Where the HD Audio controller plugs in (device 27, as on ICH6–ICH10).
pub const HDA_ADDRESS: PciAddress = PciAddress::new(0, 0x1B, 0);

/// Where option ROMs live: the VGA BIOS is the first.
const VGA_BIOS_BASE: u64 = 0xC0000;

/// Copies the VGA BIOS into shadow RAM at 0xC0000; returns how many 16 KiB PAM segments
/// it covers (the caller write-protects them).
fn install_vga_bios(map: &MemoryMap, memory: &mut [u8], rom: &[u8]) -> Result<usize, MachineError> {
    let range = map
        .ram_range(VGA_BIOS_BASE, rom.len())
        .filter(|_| rom.len() <= 0x20000)
        .ok_or_else(|| {
            MachineError::Firmware(format!(
                "VGA BIOS of {} bytes does not fit at 0xC0000",
                rom.len()
            ))
        })?;
    tracing::debug!(bytes = rom.len(), "VGA BIOS installed at 0xC0000");
    memory[range].copy_from_slice(rom);
    Ok(rom.len().div_ceil(0x4000))
}

/// Fixed wall-clock start for the RTC in deterministic mode (2024-01-01 00:00:00 UTC).
const DETERMINISTIC_EPOCH: i64 = 1_704_067_200;

/// Upper bound on one CPU slice, so host-side work (output, screen checks) stays responsive.
const MAX_SLICE_NS: u64 = 1_000_000;

pub struct Machine {
    cpu: Cpu,
    /// Guest RAM, the BIOS image and the framebuffer (see `memory_map`).
    memory: Vec<u8>,
    platform: Platform,
    disks: Disks,
    /// Our own BIOS (None with an external ROM).
    bios: Option<Bios>,
    /// Instruction trace window (`AERO_TRACE=START,COUNT`), a debugging aid.
    trace: Option<crate::trace::TraceWindow>,
    powered_off: bool,
    /// The screen as of the last `display_generation` call (scanout-changed signal).
    screen_history: display::ScreenHistory,
}

impl Machine {
    pub fn new(config: MachineConfig) -> Result<Machine, MachineError> {
        let (bios, rom) = match &config.external_bios {
            Some(_) if config.linux.is_some() => {
                // SeaBIOS would need QEMU's fw_cfg kernel items and a linuxboot option
                // ROM; Aero offers neither.
                return Err(MachineError::Config(
                    "direct kernel boot (--kernel) needs Aero's own BIOS; with --bios boot \
                     the kernel from a disk instead"
                        .into(),
                ));
            }
            Some(rom) => (None, rom.clone()),
            None => {
                let mut bios_config = BiosConfig::new(config.memory_bytes);
                bios_config.boot_order = config.boot_order.clone();
                // The firmware describes the machine's ECAM window and keeps BARs out of it.
                bios_config.pci_mmio_start = memory_map::PCI_MMIO_START;
                bios_config.pci_ecam = Some(EcamWindow {
                    base: memory_map::ECAM_BASE,
                    end_bus: (memory_map::ECAM_BUSES - 1) as u8,
                });
                bios_config.floppy_controller = config.fda.is_some();
                bios_config.linux = config.linux.clone();
                // SMBIOS and the MP table name the CPU the way CPUID does.
                let leaf1 = aero_cpu::exec::cpuid::cpuid_values(
                    &aero_cpu::exec::cpuid::Wired::probe(),
                    1,
                    0,
                );
                bios_config.cpuid_signature = leaf1[0];
                bios_config.cpuid_features_edx = leaf1[3];
                let bios =
                    Bios::new(bios_config).map_err(|e| MachineError::Firmware(e.to_string()))?;
                let rom = bios.rom().to_vec();
                (Some(bios), rom)
            }
        };
        let (map, mut memory) = MemoryMap::allocate(config.memory_bytes, &rom)?;
        let vga_rom = aero_firmware::vgabios::build_vga_bios()
            .map_err(|e| MachineError::Firmware(format!("VGA BIOS: {e}")))?;
        let vga_rom_segments = match bios {
            Some(_) => install_vga_bios(&map, &mut memory, &vga_rom)?,
            None => 0,
        };
        let clock = Clock::new(config.deterministic);
        let rtc_start = if config.deterministic {
            DETERMINISTIC_EPOCH
        } else {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(DETERMINISTIC_EPOCH, |d| d.as_secs() as i64)
        };
        let mut platform = Platform::new(clock, map, rtc_start);
        if let Some((mac, backend)) = config.nic {
            platform.add_pci_device(NIC_ADDRESS, Box::new(E1000::new(mac, backend)));
        }
        if config.usb {
            host_io::plug_usb(&mut platform);
        }
        if let Some(backend) = config.audio {
            platform.add_pci_device(HDA_ADDRESS, Box::new(Hda::new(backend)));
        }
        platform.vga_rom = vga_rom;
        if vga_rom_segments > 0 {
            // Shadow the VGA BIOS read-only, as a system BIOS does before running it.
            let mut pam = [0u8; 7];
            for seg in 0..vga_rom_segments.min(12) {
                pam[1 + seg / 2] |= 1 << (4 * (seg % 2));
            }
            platform.pci.set_pam_registers(pam);
            platform.apply_pci_decoding();
        }
        if bios.is_some() {
            platform.firmware_trap_port = Bios::TRAP_PORT;
            // Our BIOS describes the ECAM window (MCFG) and keeps BARs out of it.
            platform.set_ecam_enabled(true);
        }
        // The floppy controller and the BIOS (INT 13h) share the one --fda image.
        let fda = config.fda.map(SharedDisk::new);
        if let Some(disk) = &fda {
            platform
                .fdc
                .insert_disk(0, Box::new(disk.clone()))
                .map_err(MachineError::Config)?;
        }
        // CMOS 0x10: drive types; 0x14 bit 0: diskette drives installed (one).
        platform.rtc.set_cmos(0x10, platform.fdc.cmos_drive_types());
        let equipment = platform.rtc.cmos(0x14) & !0xC1;
        platform
            .rtc
            .set_cmos(0x14, equipment | u8::from(fda.is_some()));
        // The boot order where QEMU keeps it for SeaBIOS (which has no fw_cfg here): one
        // nibble per device (1 floppy, 2 hard disk, 3 CD), first two in 0x3D, third in
        // 0x38's high nibble. Our BIOS takes `boot_order` directly.
        let nibble = |i: usize| match config.boot_order.get(i) {
            Some(BootDevice::Floppy) => 1u8,
            Some(BootDevice::HardDisk) => 2,
            Some(BootDevice::Cdrom) => 3,
            None => 0,
        };
        platform.rtc.set_cmos(0x3D, nibble(0) | nibble(1) << 4);
        let flags = platform.rtc.cmos(0x38) & 0x0F;
        platform.rtc.set_cmos(0x38, flags | nibble(2) << 4);
        platform
            .rtc
            .set_memory_size(platform.map.ram_below_4g(), platform.map.ram_above_4g());
        platform.rtc.update_checksum();
        // The BIOS (INT 13h) and the storage controllers use the same disks: the hard disk
        // in `hda_slot`, the CD drive (present even when empty) on the IDE secondary master.
        let share = |d: Option<Box<dyn BlockDevice>>| d.map(SharedDisk::new);
        let (hda, cdrom) = (share(config.hda), share(config.cdrom));
        let cd_slot = media::BIOS_CD_SLOT;
        let mut drives: Vec<(DriveSlot, IdeDrive)> = Vec::new();
        if let Some(disk) = &hda {
            drives.push((config.hda_slot, IdeDrive::Disk(Box::new(disk.clone()))));
        }
        // Extra hard disks are shared with INT 13h too.
        let mut extra = Vec::new();
        let mut extra_hard = Vec::new();
        for (slot, drive) in config.extra_drives {
            match drive {
                IdeDrive::Disk(d) => {
                    let d = SharedDisk::new(d);
                    extra_hard.push((slot, d.clone()));
                    extra.push((slot, IdeDrive::Disk(Box::new(d))));
                }
                cd => extra.push((slot, cd)),
            }
        }
        extra_hard.sort_by_key(|(slot, _)| match *slot {
            DriveSlot::Ide { channel, slave } => u16::from(channel) * 2 + u16::from(slave),
            DriveSlot::Ahci(port) => 0x100 + u16::from(port),
        });
        // The CD drive is there even when empty, unless the user put something else in its slot.
        if cdrom.is_some()
            || !drives
                .iter()
                .chain(extra.iter())
                .any(|(slot, _)| *slot == cd_slot)
        {
            drives.push((
                cd_slot,
                IdeDrive::Cdrom(cdrom.clone().map(|d| Box::new(d) as Box<dyn BlockDevice>)),
            ));
        }
        drives.append(&mut extra);
        for (i, (slot, _)) in drives.iter().enumerate() {
            if drives[..i].iter().any(|(other, _)| other == slot) {
                return Err(MachineError::Config(format!(
                    "two drives in the same slot {slot:?}"
                )));
            }
        }
        for (slot, drive) in drives {
            match slot {
                DriveSlot::Ide { channel, slave } if channel < 2 => {
                    platform.ide.attach(channel as usize, slave, drive)
                }
                DriveSlot::Ahci(port) if (port as usize) < platform.ahci.port_count() => {
                    platform.ahci.attach(port as usize, drive)
                }
                other => {
                    return Err(MachineError::Config(format!(
                        "no drive slot {other:?} (IDE channels 0-1, AHCI ports 0-{})",
                        platform.ahci.port_count() - 1
                    )));
                }
            }
        }
        let boxed = |d: Option<SharedDisk>| d.map(|d| Box::new(d) as Box<dyn BlockDevice>);
        Ok(Machine {
            cpu: Cpu::new(),
            memory,
            platform,
            disks: Disks {
                hard_slots: hda
                    .as_ref()
                    .map(|_| config.hda_slot)
                    .into_iter()
                    .chain(extra_hard.iter().map(|(slot, _)| *slot))
                    .collect(),
                hard: boxed(hda)
                    .into_iter()
                    .chain(
                        extra_hard
                            .into_iter()
                            .map(|(_, d)| Box::new(d) as Box<dyn BlockDevice>),
                    )
                    .collect(),
                cdrom: boxed(cdrom),
                fda: fda.map(|d| Box::new(d) as Box<dyn BlockDevice>),
                fda_changed: false,
            },
            bios,
            trace: crate::trace::TraceWindow::from_env(),
            powered_off: false,
            screen_history: Default::default(),
        })
    }

    /// Virtual time in nanoseconds.
    pub fn now_ns(&self) -> u64 {
        self.platform.clock.now()
    }

    /// Runs the guest for `duration_ns` of virtual time (or until it stops).
    pub fn run_for(&mut self, duration_ns: u64) -> RunEvent {
        if self.powered_off {
            return RunEvent::PoweredOff;
        }
        let end = self.now_ns().saturating_add(duration_ns);
        while self.now_ns() < end {
            let now = self.platform.clock.at(self.cpu.instructions_retired());
            self.tick_display(now);
            self.platform.advance(now);
            let deadline = self
                .platform
                .next_deadline()
                .unwrap_or(u64::MAX)
                .min(end)
                .min(now + MAX_SLICE_NS);
            let mut budget = self.platform.clock.instructions_until(now, deadline);
            if let Some(window) = &mut self.trace {
                budget = window.limit_budget(self.cpu.instructions_retired(), budget);
                window.log(&self.cpu, &self.memory, &self.platform.map);
            }
            // Devices with work that arrived from the host (received frames) get RAM
            // before the CPU runs on.
            if self.platform.pci_dma_pending() {
                self.platform.requests.dma = true;
                if let Some(event) = self.handle_requests() {
                    return event;
                }
            }
            let exit = self.cpu.run(&mut self.memory, &mut self.platform, budget);
            self.platform.clock.at(self.cpu.instructions_retired());
            tracing::trace!(target: "aero::run", now, deadline, budget, ?exit, at = %self.cpu_location());
            match exit {
                RunExit::BudgetExhausted => {}
                RunExit::Halted => self.platform.clock.idle_until(deadline),
                RunExit::StopRequested => {
                    if let Some(event) = self.handle_requests() {
                        return event;
                    }
                }
                RunExit::Shutdown {
                    reason,
                    cs,
                    rip,
                    last_exception,
                } => {
                    let exc = last_exception.map_or("none".to_string(), |v| format!("#{v}"));
                    return RunEvent::Shutdown(format!(
                        "guest CPU shut down at {cs:04x}:{rip:x} ({reason}); last exception: {exc}"
                    ));
                }
            }
        }
        RunEvent::Running
    }

    fn handle_requests(&mut self) -> Option<RunEvent> {
        let req = std::mem::take(&mut self.platform.requests);
        if req.power_off {
            self.powered_off = true;
            return Some(RunEvent::PoweredOff);
        }
        if req.reset {
            self.reset();
            return None;
        }
        if req.mappings_changed {
            self.cpu.flush_all_caches();
        } else if req.vga_window_moved {
            // Other framebuffer bytes under 0xA0000: stale TLB entries, and code decoded
            // there (unlikely, but possible) is stale too.
            self.cpu.flush_tlb();
            self.cpu
                .invalidate_code(memory_map::VGA_WINDOW.start, BANK_SIZE as u64);
        }
        if let Some(n) = req.lfb_clear {
            let lfb = self.platform.map.lfb_range();
            let n = n.min(lfb.len());
            self.memory[lfb.start..lfb.start + n].fill(0);
            if let Some(base) = self.platform.map.lfb_base() {
                self.cpu.invalidate_code(base, n as u64);
            }
        }
        if req.nmi && std::mem::take(&mut self.platform.nmi_pending) {
            self.cpu.raise_nmi();
        }
        if req.dma {
            let mut ram = GuestRam::new(&mut self.memory, &self.platform.map);
            self.platform.ide.service_dma(&mut ram);
            self.platform
                .fdc
                .service_dma(&mut self.platform.dma, &mut ram);
            // AHCI commands run only while the function may master the bus.
            if self.platform.pci.pci.functions.ahci.config().dma_enabled() {
                self.platform.ahci.process(&mut ram);
            }
            let now = self.platform.clock.now();
            crate::devices::pci_device::run_dma(
                &mut self.platform.pci.pci.functions.devices,
                &mut ram,
                now,
            );
            for (addr, len) in ram.written_pages() {
                self.cpu.invalidate_code(addr, len);
            }
            let now = self.platform.clock.now();
            self.platform.advance(now);
        }
        if req.display {
            self.apply_display_writes();
            let now = self.platform.clock.now();
            self.platform.advance(now);
        }
        if let Some(value) = req.firmware_trap
            && let Some(bios) = self.bios.as_mut()
        {
            let mut host = Host {
                platform: &mut self.platform,
                disks: &mut self.disks,
            };
            match bios.handle_trap(value, &mut self.cpu.state, &mut self.memory, &mut host) {
                // The handler may have edited registers and any RAM (boot sectors, tables).
                // Only RAM the handler wrote can hold stale decoded code.
                Ok(TrapOutcome::Resume) => match bios.written_ranges() {
                    WrittenRanges::None => {}
                    WrittenRanges::Some(ranges) => {
                        for &(addr, len) in ranges {
                            self.cpu.invalidate_code(addr, len);
                        }
                    }
                    WrittenRanges::All => self.cpu.flush_all_caches(),
                },
                Ok(_) => {}
                Err(e) => {
                    let cs = self.cpu.state.seg[aero_cpu::Seg::Cs as usize].selector;
                    return Some(RunEvent::Shutdown(format!(
                        "BIOS failure at {cs:04x}:{:x}: {e}",
                        self.cpu.state.rip
                    )));
                }
            }
        }
        None
    }

    /// Where the CPU is, for messages: "CS:RIP (mode)".
    pub fn cpu_location(&self) -> String {
        let st = &self.cpu.state;
        let mode = if st.long_mode_active() {
            "long mode"
        } else if st.protected_mode() {
            "protected mode"
        } else {
            "real mode"
        };
        let halted = if st.halted { ", halted" } else { "" };
        format!(
            "{:04x}:{:x} ({mode}{halted}, {} instructions)",
            st.seg[aero_cpu::Seg::Cs as usize].selector,
            st.rip,
            self.cpu.instructions_retired()
        )
    }

    /// Hardware reset (keyboard controller pulse, port 0x92, 0xCF9, triple fault policy).
    pub fn reset(&mut self) {
        self.cpu.reset();
        self.platform.reset_devices();
        self.platform.ide.reset();
        self.platform.ahci.reset();
        self.platform.aerogpu.reset();
        self.platform.aerogpu_writes.clear();
    }

    pub fn take_serial_output(&mut self) -> Vec<u8> {
        self.platform.com1.take_output()
    }

    /// Bytes written to port 0xE9, and to port 0x402 where SeaBIOS logs.
    pub fn take_debugcon_output(&mut self) -> Vec<u8> {
        let mut out = self.platform.debugcon.take_output();
        out.extend(self.platform.firmware_log.take_output());
        out
    }

    pub fn take_post_codes(&mut self) -> Vec<u8> {
        self.platform.post.take_codes()
    }

    /// The text-mode screen as characters, if the display is in a text mode.
    pub fn text_screen(&self) -> Option<String> {
        self.platform.vga.text_screen()
    }

    /// Flushes all disks; call before exiting.
    pub fn shutdown(&mut self) -> Result<(), MachineError> {
        self.platform.ahci.flush_all()?;
        Ok(self.disks.flush()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aero_cpu::Bus;

    #[test]
    fn ecam_decodes_only_under_the_bios_that_describes_it() {
        let config = || MachineConfig {
            memory_bytes: 32 << 20,
            boot_order: Vec::new(),
            ..Default::default()
        };
        let mut ours = Machine::new(config()).unwrap();
        assert_eq!(
            ours.platform.mmio_read(memory_map::ECAM_BASE, 4),
            0x1237_8086,
            "host bridge ID through ECAM"
        );
        let mut external = Machine::new(MachineConfig {
            external_bios: Some(vec![0xFF; 0x20000]),
            ..config()
        })
        .unwrap();
        assert_eq!(
            external.platform.mmio_read(memory_map::ECAM_BASE, 4),
            0xFFFF_FFFF
        );
    }
}
