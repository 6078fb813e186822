//! Everything the CPU reaches through its bus: port and MMIO dispatch to the devices,
//! interrupt routing, and the requests the machine must act on between CPU slices.

use crate::devices::ahci_pci::AhciConfig;
use crate::devices::lapic::DeliveryMode;
use crate::devices::pc_pci::{AHCI, IDE};
use crate::devices::pci::{PciAddress, PciFunction};
use crate::devices::pci_device::{BarWindow, PciDevice, PluggedDevice, intx_asserted};
use aero_cpu::{Bus, PageMapping};
use aero_gpu::Vga;
use aero_gpu::aerogpu::{AeroGpu, AeroGpuConfig, Executor, SoftExecutor};
use aero_storage::ahci::{ABAR_SIZE, Ahci, ICH9_PORTS};
use aero_storage::ide::IdeController;

use crate::clock::Clock;
use crate::devices::acpi_pm::{AcpiPm, AcpiPmLayout, SleepRequest};
use crate::devices::debug_port::DebugPort;
use crate::devices::display_pci::VGA_ROM_BAR_SIZE;
use crate::devices::dma::Dma8237;
use crate::devices::fdc::{FDC_IRQ, Fdc};
use crate::devices::fw_cfg::FwCfg;
use crate::devices::hpet::{self, Hpet};
use crate::devices::i8042::I8042;
use crate::devices::ioapic::{self, IoApic};
use crate::devices::lapic::LocalApic;
use crate::devices::pc_pci::DISPLAY;
use crate::devices::pic::DualPic;
use crate::devices::piix3::{PIRQ_GSI_BASE, pirq_for};
use crate::devices::piix3_ide::{ChannelInterrupt, ChannelPorts};
use crate::devices::pit::Pit;
use crate::devices::port92::Port92;
use crate::devices::post_port::PostPort;
use crate::devices::reset_control::ResetControl;
use crate::devices::rtc::Rtc;
use crate::devices::serial::{COM1_BASE, Serial};
use crate::devices::{IrqLines, Mmio, PortIo, Timed};
use crate::memory_map::{ECAM_BASE, MemoryMap};
use crate::pci_bus::PciBus;
use aero_gpu::aerogpu::AEROGPU_PCI_DESCRIPTION;

/// Things the machine has to handle outside the CPU loop.
#[derive(Default, Debug)]
pub struct Requests {
    /// The guest wrote the firmware trap port with this value.
    pub firmware_trap: Option<u32>,
    pub reset: bool,
    pub power_off: bool,
    /// Page mappings changed (PAM, A20, BARs): the CPU must drop its caches.
    pub mappings_changed: bool,
    /// An NMI must be raised on the CPU.
    pub nmi: bool,
    /// A storage controller started a DMA transfer (port handlers cannot reach RAM).
    pub dma: bool,
    /// AeroGPU register writes are queued in [`Platform::aerogpu_writes`] (they may touch RAM).
    pub display: bool,
    /// A VBE mode set: framebuffer bytes `0..n` must be zeroed (they live with RAM).
    pub lfb_clear: Option<usize>,
    /// The VBE bank window at 0xA0000 moved: the CPU's TLB must drop those pages.
    pub vga_window_moved: bool,
}

impl Requests {
    fn any(&self) -> bool {
        self.firmware_trap.is_some()
            || self.reset
            || self.power_off
            || self.mappings_changed
            || self.nmi
            || self.dma
            || self.display
            || self.lfb_clear.is_some()
            || self.vga_window_moved
    }
}

pub struct Platform {
    pub clock: Clock,
    pub map: MemoryMap,
    pub requests: Requests,
    /// Port the firmware's ROM stubs write to trap into the host (0 = none).
    pub firmware_trap_port: u16,
    pub pic: DualPic,
    pub pit: Pit,
    pub rtc: Rtc,
    pub com1: Serial,
    pub i8042: I8042,
    pub port92: Port92,
    /// QEMU's fw_cfg ports, so SeaBIOS takes RAM above 4 GiB from CMOS (see fw_cfg.rs).
    pub fw_cfg: FwCfg,
    pub reset_control: ResetControl,
    /// Port 0xE9 (QEMU-style debug console).
    pub debugcon: DebugPort,
    /// Port 0x402, where SeaBIOS builds for QEMU write their log; shown with debugcon.
    pub firmware_log: DebugPort,
    pub post: PostPort,
    /// The PIIX3's 8237 pair (the floppy controller's DMA).
    pub dma: Dma8237,
    /// Floppy controller at 0x3F0 (IRQ 6, DMA channel 2).
    pub fdc: Fdc,
    pub lapic: LocalApic,
    pub ioapic: IoApic,
    pub hpet: Hpet,
    pub vga: Vga,
    pub pci: PciBus,
    pub acpi_pm: AcpiPm,
    /// PIIX3 IDE (the PCI face is `pci.pci.functions.ide`).
    pub ide: IdeController,
    /// Where each IDE channel decodes (legacy ports or native BARs), and where the
    /// bus-master block is.
    ide_channels: [Option<ChannelPorts>; 2],
    ide_bus_master: Option<u16>,
    /// ICH9 AHCI HBA (the PCI face is `pci.pci.functions.ahci`) and where ABAR maps it.
    pub ahci: Ahci,
    ahci_abar: Option<u64>,
    /// Where the plugged-in PCI devices' BARs decode (`pci.pci.functions.devices`).
    pci_bar_windows: Vec<BarWindow>,
    /// Where the display function's BAR2 maps the VGA linear framebuffer.
    /// AeroGPU, the display function's BAR0 (see `display.rs` for the RAM side). The
    /// executor is chosen at run time; the CPU one by default.
    pub aerogpu: AeroGpu<Box<dyn Executor + Send>>,
    aerogpu_base: Option<u64>,
    /// BAR0 writes waiting for the machine, in guest order.
    pub aerogpu_writes: Vec<RegisterWrite>,
    /// The VGA BIOS image behind the VGA function's expansion ROM BAR.
    pub vga_rom: Vec<u8>,
    /// The USB root ports (with their devices) when USB controllers are plugged in, for
    /// host input.
    pub usb_ports: Option<crate::devices::usb::root_ports::RootPorts>,
    vga_rom_base: Option<u64>,
    /// An NMI for the CPU arrived (LAPIC LINT1/IPI); the machine raises it.
    pub nmi_pending: bool,
    /// Whether the ECAM window decodes. Off until the firmware that describes it (our
    /// BIOS: MCFG, E820, PNP0C02) is in charge: an external BIOS knows nothing of it and
    /// may put BARs there (SeaBIOS's i440FX window starts at 0x80000000).
    ecam_enabled: bool,
    /// The display's framebuffer BAR while memory decoding is on (mapped through `map`).
    lfb_bar: Option<u64>,
    a20: bool,
    /// Last ISA line levels given to the interrupt controllers.
    isa_levels: IrqLines,
}

impl Platform {
    pub fn new(clock: Clock, map: MemoryMap, rtc_start_unix: i64) -> Platform {
        Platform {
            clock,
            map,
            requests: Requests::default(),
            firmware_trap_port: 0,
            pic: DualPic::new(),
            pit: Pit::new(),
            rtc: Rtc::new(rtc_start_unix),
            com1: Serial::new(COM1_BASE),
            i8042: I8042::new(),
            port92: Port92::new(),
            fw_cfg: FwCfg::new(),
            reset_control: ResetControl::new(),
            debugcon: DebugPort::new(),
            firmware_log: DebugPort::at(0x402),
            post: PostPort::new(),
            dma: Dma8237::new(),
            fdc: Fdc::new(),
            lapic: LocalApic::new(0, true),
            // The IOAPIC's ID follows the CPUs' (what the MADT says).
            ioapic: IoApic::new(1),
            hpet: Hpet::new(),
            vga: Vga::new(),
            pci: PciBus::new(),
            acpi_pm: AcpiPm::new(AcpiPmLayout::default()),
            ide: IdeController::new(),
            ahci: Ahci::new(ICH9_PORTS),
            ahci_abar: None,
            pci_bar_windows: Vec::new(),
            ide_channels: [None; 2],
            ide_bus_master: None,
            aerogpu: AeroGpu::with_executor(
                AeroGpuConfig::default(),
                Box::new(SoftExecutor::default()),
            ),
            aerogpu_base: None,
            aerogpu_writes: Vec::new(),
            vga_rom: Vec::new(),
            usb_ports: None,
            vga_rom_base: None,
            nmi_pending: false,
            ecam_enabled: false,
            lfb_bar: None,
            a20: true,
            isa_levels: IrqLines::NONE,
        }
    }

    /// What RESET# does to the platform devices (like QEMU, every reset source is a full
    /// platform reset): LAPIC back to its power-on state (software-disabled, timer
    /// stopped), IOAPIC pins masked, HPET and PIT stopped, PICs uninitialised, ACPI events
    /// off (SCI_EN clear; the PM base stays where PCI put it), RTC interrupt enables off,
    /// keyboard controller and PS/2 devices, UART registers and the VGA (back to text
    /// mode, VBE off) at power-on values. Without this a rebooting guest's firmware would
    /// take the old OS's timer interrupts or find the old OS's video mode. Kept: CMOS RAM
    /// and time (battery), port 0x92's A20 bit, COM1 output already sent, PCI
    /// configuration (the firmware reprograms it) except the IDE channel modes, which go
    /// back to compatibility (our BIOS's disk services use the legacy ports). Storage and
    /// AeroGPU are reset by the machine.
    pub fn reset_devices(&mut self) {
        self.rtc.reset();
        self.port92.reset();
        self.i8042 = I8042::new();
        self.com1.reset();
        self.vga = Vga::new();
        self.lapic = LocalApic::new(0, true);
        self.ioapic = IoApic::new(1);
        self.hpet = Hpet::new();
        self.pic = DualPic::new();
        self.pit = Pit::new();
        self.acpi_pm = AcpiPm::new(self.acpi_pm.layout());
        self.dma = Dma8237::new();
        self.fdc.reset();
        for plugged in &mut self.pci.pci.functions.devices {
            plugged.device.reset();
        }
        self.nmi_pending = false;
        self.isa_levels = IrqLines::NONE;
        self.requests = Requests::default();
        self.pci.reset_ide_mode();
        self.apply_pci_decoding();
        // The new VGA is in text mode: the 0xA0000 window is the VGA's again.
        if self.map.set_vga_bank(None) {
            self.requests.vga_window_moved = true;
        }
        self.update_interrupts();
    }

    /// Follows the VGA's view of the framebuffer after a register write: the VBE bank
    /// window's mapping and clears asked for by a mode set (both need the machine).
    fn sync_vga_memory(&mut self) {
        if let Some(n) = self.vga.take_lfb_clear() {
            let n = n.max(self.requests.lfb_clear.unwrap_or(0));
            self.requests.lfb_clear = Some(n);
        }
        if self.map.set_vga_bank(self.vga.vbe_bank_window()) {
            self.requests.vga_window_moved = true;
        }
    }

    /// Brings every timed device to `now` and refreshes the interrupt lines.
    pub fn advance(&mut self, now: u64) {
        self.pit.advance(now);
        self.rtc.advance(now);
        self.i8042.advance(now);
        self.lapic.advance(now);
        self.hpet.advance(now);
        self.vga.advance(now);
        self.acpi_pm.advance(now);
        for plugged in &mut self.pci.pci.functions.devices {
            plugged.device.advance(now);
        }
        self.update_interrupts();
    }

    /// Plugs `device` into bus 0 at `address` (the firmware finds it when it enumerates).
    pub fn add_pci_device(&mut self, address: PciAddress, device: Box<dyn PciDevice>) {
        let devices = &mut self.pci.pci.functions.devices;
        devices.retain(|d| d.address != address);
        devices.push(PluggedDevice { address, device });
        self.pci.invalidate_decoding();
        self.apply_pci_decoding();
    }

    /// Whether a plugged-in device has bus-master work and may master the bus.
    pub fn pci_dma_pending(&self) -> bool {
        self.pci
            .pci
            .functions
            .devices
            .iter()
            .any(|d| d.device.dma_pending() && d.device.config().bus_master())
    }

    /// The earliest time a device needs attention.
    pub fn next_deadline(&self) -> Option<u64> {
        // The VGA's retrace timing is derived on access; it needs no slice boundary.
        [
            self.pit.next_deadline_ns(),
            self.rtc.next_deadline_ns(),
            self.i8042.next_deadline_ns(),
            self.lapic.next_deadline_ns(),
            self.hpet.next_deadline_ns(),
            self.acpi_pm.next_deadline_ns(),
            self.aerogpu.next_deadline_ns(),
        ]
        .into_iter()
        .chain(
            self.pci
                .pci
                .functions
                .devices
                .iter()
                .map(|d| d.device.next_deadline_ns()),
        )
        .flatten()
        .min()
    }

    /// ISA IRQ `line`'s input pin on the IOAPIC (IRQ0 is wired to pin 2, as the MADT says).
    fn ioapic_pin(line: u8) -> u8 {
        if line == 0 { 2 } else { line }
    }

    /// Recomputes every interrupt line and routes IOAPIC messages to the LAPIC.
    fn update_interrupts(&mut self) {
        // ISA lines; with HPET legacy replacement its timers 0/1 take over IRQ0/IRQ8.
        let legacy = self.hpet.legacy_replacement();
        let mut levels = self.i8042.irq_lines() | self.hpet.isa_irq_lines();
        if !legacy {
            levels.set(0, self.pit.irq_level());
            levels.set(8, self.rtc.irq_level());
        }
        levels.set(4, self.com1.irq_level());
        levels.set(FDC_IRQ, self.fdc.irq_level());
        let ide = &self.pci.pci.functions.ide;
        for channel in 0..2 {
            if let ChannelInterrupt::Isa(irq) = ide.channel_interrupt(channel == 1)
                && self.ide.irq_level(channel)
            {
                levels.set(irq, true);
            }
        }
        if self.acpi_pm.sci_level() {
            levels.set(crate::devices::acpi_pm::SCI_IRQ, true);
        }
        // PCI INTx: PIRQA–D reach the ISA IRQs the PIIX3 routes them to (PIC mode, and the
        // IOAPIC's ISA pins as the ACPI link devices say) and IOAPIC inputs 16–19.
        let pirqs = self.pirq_levels();
        levels = levels | self.pci.pci.functions.isa_bridge.isa_lines(pirqs);
        // Edges that happened inside one slice must not be lost to level sampling.
        let pit_pulses = self.pit.take_irq_pulses();
        let mut pulses = self.hpet.take_isa_pulses();
        if !legacy {
            pulses = pulses | pit_pulses;
        }
        if self.fdc.take_irq_pulse() {
            pulses.set(FDC_IRQ, true);
        }
        for line in pulses.iter().filter(|&l| l < 16) {
            self.pic.set_irq(line, false);
            self.pic.set_irq(line, true);
            self.ioapic.set_irq(Self::ioapic_pin(line), false);
            self.ioapic.set_irq(Self::ioapic_pin(line), true);
        }
        for line in 0..16 {
            let level = levels.contains(line);
            if level != self.isa_levels.contains(line) || pulses.contains(line) {
                self.pic.set_irq(line, level);
                self.ioapic.set_irq(Self::ioapic_pin(line), level);
            }
        }
        self.isa_levels = levels;
        // HPET timers routed straight to IOAPIC pins (non-legacy mode).
        for pin in self.hpet.take_ioapic_pulses().iter() {
            self.ioapic.set_irq(pin, false);
            self.ioapic.set_irq(pin, true);
        }
        let hpet_pins = self.hpet.ioapic_irq_lines();
        for pin in 16..ioapic::PINS as u8 {
            let pirq = pin
                .checked_sub(PIRQ_GSI_BASE)
                .and_then(|p| pirqs.get(usize::from(p)));
            self.ioapic
                .set_irq(pin, hpet_pins.contains(pin) || pirq == Some(&true));
        }
        self.deliver_msi();
        self.route_apic_messages();
    }

    /// Message-signalled interrupts of functions that have MSI enabled, straight to the
    /// local APIC.
    fn deliver_msi(&mut self) {
        // Events while MSI is off are dropped (INTx carries them).
        let mut messages = Vec::new();
        if self.ahci.take_msi()
            && let Some(message) = self.pci.pci.functions.ahci.config().msi_message()
        {
            messages.push(message);
        }
        for plugged in &mut self.pci.pci.functions.devices {
            if plugged.device.take_msi()
                && let Some(message) = plugged.device.config().msi_message()
            {
                messages.push(message);
            }
        }
        for message in messages {
            self.deliver_msi_message(message);
        }
    }

    fn deliver_msi_message(&mut self, message: crate::devices::pci::MsiMessage) {
        match message.decode_x86() {
            Some((destination, logical, vector, mode, level)) => {
                if self.lapic.matches_destination(destination, logical) {
                    self.lapic
                        .deliver(DeliveryMode::from_bits(mode), vector, level);
                }
            }
            None => tracing::debug!(
                address = message.address,
                "MSI outside the interrupt window dropped"
            ),
        }
    }

    /// Levels of PIRQA–D: every PCI function's INTx, through the chipset's swizzle.
    fn pirq_levels(&self) -> [bool; 4] {
        let mut pirqs = [false; 4];
        let display = &self.pci.pci.functions.display;
        if self.aerogpu.irq_level() && display.interrupt_pin() != 0 {
            pirqs[usize::from(pirq_for(DISPLAY.device, display.interrupt_pin()))] = true;
        }
        // Native-mode IDE channels share the IDE function's pin.
        let ide = &self.pci.pci.functions.ide;
        if (0..2).any(|channel| {
            ide.channel_interrupt(channel == 1) == ChannelInterrupt::Intx
                && self.ide.irq_level(channel)
        }) && ide.interrupt_pin() != 0
        {
            pirqs[usize::from(pirq_for(IDE.device, ide.interrupt_pin()))] = true;
        }
        let ahci = self.pci.pci.functions.ahci.config();
        if self.ahci.irq_level() && ahci.intx_enabled() {
            pirqs[usize::from(pirq_for(AHCI.device, ahci.interrupt_pin()))] = true;
        }
        for plugged in &self.pci.pci.functions.devices {
            if intx_asserted(plugged.device.as_ref()) {
                let pin = plugged.device.config().interrupt_pin();
                pirqs[usize::from(pirq_for(plugged.address.device, pin))] = true;
            }
        }
        pirqs
    }

    /// IOAPIC → LAPIC messages and LAPIC EOI broadcasts → IOAPIC, until nothing moves.
    fn route_apic_messages(&mut self) {
        // Each round either delivers a message or clears a remote IRR; both are bounded
        // by the pin count, so this terminates.
        for _ in 0..4 * ioapic::PINS {
            let mut moved = false;
            while let Some(m) = self.ioapic.take_message() {
                moved = true;
                if self.lapic.matches_destination(m.destination, m.logical) {
                    self.lapic.deliver(m.mode, m.vector, m.level_triggered);
                }
            }
            while let Some(vector) = self.lapic.take_eoi_broadcast() {
                moved = true;
                self.ioapic.end_of_interrupt(vector);
            }
            if !moved {
                break;
            }
        }
        if self.lapic.take_nmi() {
            self.nmi_pending = true;
            self.requests.nmi = true;
        }
    }

    /// Offset of `paddr` in the ECAM window. The host bridge claims the window before
    /// anything is forwarded to PCI, so a BAR a guest moves on top of it is shadowed.
    fn ecam_offset(&self, paddr: u64) -> Option<u64> {
        if !self.ecam_enabled {
            return None;
        }
        offset_in(paddr, ECAM_BASE, self.pci.pci.ecam_size())
    }

    /// Turns ECAM decoding at `ECAM_BASE` on or off (see `ecam_enabled`).
    pub fn set_ecam_enabled(&mut self, on: bool) {
        self.ecam_enabled = on;
        self.map_framebuffer();
    }

    /// Maps the framebuffer at its BAR, unless ECAM decoding shadows that address (as it
    /// shadows any BAR; the BAR and the window are both aligned, so overlap is all or
    /// nothing).
    fn map_framebuffer(&mut self) {
        let base = self
            .lfb_bar
            .filter(|&b| !(self.ecam_enabled && self.ecam_offset(b).is_some()));
        if self.map.set_lfb_base(base) {
            self.requests.mappings_changed = true;
        }
    }

    /// Offset of `paddr` in AeroGPU's register block, if BAR0 maps it there.
    fn aerogpu_offset(&self, paddr: u64) -> Option<u64> {
        offset_in(
            paddr,
            self.aerogpu_base?,
            u64::from(AEROGPU_PCI_DESCRIPTION.bar0_size),
        )
    }

    /// The register-block device at `paddr` and the offset into it.
    fn mmio_device(&self, paddr: u64) -> Option<(MmioDevice, u64)> {
        if let Some(off) = offset_in(paddr, self.lapic.mmio_base(), 0x1000) {
            Some((MmioDevice::Lapic, off))
        } else if let Some(off) = offset_in(paddr, ioapic::DEFAULT_BASE, 0x1000) {
            Some((MmioDevice::IoApic, off))
        } else {
            offset_in(paddr, hpet::DEFAULT_BASE, 0x400)
                .map(|off| (MmioDevice::Hpet, off))
                .or_else(|| {
                    Some((
                        MmioDevice::Ahci,
                        offset_in(paddr, self.ahci_abar?, ABAR_SIZE)?,
                    ))
                })
                .or_else(|| {
                    let (window, off) = self.pci_bar_at(false, paddr)?;
                    Some((MmioDevice::Pci(window), off))
                })
        }
    }

    fn port_read(&mut self, port: u16, size: u8) -> u32 {
        match port {
            0x20 | 0x21 | 0xA0 | 0xA1 | 0x4D0 | 0x4D1 => self.pic.io_read(port, size),
            0x40..=0x43 | 0x61 => self.pit.io_read(port, size),
            0x70 | 0x71 => self.rtc.io_read(port, size),
            0x3F8..=0x3FF => self.com1.io_read(port, size),
            0x60 | 0x64 => self.i8042.io_read(port, size),
            // Firmware probes the debug ports by reading them (QEMU answers 0xE9).
            0xE9 => self.debugcon.io_read(port, size),
            0x402 => self.firmware_log.io_read(port, size),
            0x92 => self.port92.io_read(port, size),
            0x510 | 0x511 => self.fw_cfg.io_read(port, size),
            0x00..=0x0F | 0x81..=0x8F | 0xC0..=0xDF => self.dma.io_read(port, size),
            // 0x3F6 is the IDE primary channel's control register.
            0x3F0..=0x3F5 | 0x3F7 => self.fdc.io_read(port, size),
            0x3B0..=0x3DF | 0x1CE..=0x1D0 => self.vga.io_read(port, size),
            0xCF8..=0xCFF => self.pci.io_read(port, size),
            p if let Some(register) = self.ide_register(p) => match register {
                IdeRegister::Command(ch, offset) => self.ide.command_read(ch, offset, size),
                IdeRegister::Control(ch) => self.ide.control_read(ch),
            },
            p if let Some(off) = self.ide_bus_master_offset(p) => {
                self.ide.bus_master_read(off, size)
            }
            p if self.acpi_pm_claims(p) => self.acpi_pm.io_read(port, size),
            p if let Some((window, off)) = self.pci_bar_at(true, u64::from(p)) => {
                self.pci_bar_read(window, off, size) as u32
            }
            _ => {
                tracing::trace!(port, size, "read from unclaimed port");
                u32::MAX >> (32 - 8 * u32::from(size.clamp(1, 4)))
            }
        }
    }

    fn port_write(&mut self, port: u16, size: u8, value: u32) {
        match port {
            p if p == self.firmware_trap_port && p != 0 => {
                self.requests.firmware_trap = Some(value)
            }
            0x20 | 0x21 | 0xA0 | 0xA1 | 0x4D0 | 0x4D1 => self.pic.io_write(port, size, value),
            0x40..=0x43 | 0x61 => self.pit.io_write(port, size, value),
            0x70 | 0x71 => self.rtc.io_write(port, size, value),
            0x3F8..=0x3FF => self.com1.io_write(port, size, value),
            0x60 | 0x64 => self.i8042.io_write(port, size, value),
            0x80 => self.post.io_write(port, size, value),
            0xE9 => self.debugcon.io_write(port, size, value),
            0x402 => self.firmware_log.io_write(port, size, value),
            0x92 => self.port92.io_write(port, size, value),
            0x510 | 0x511 => self.fw_cfg.io_write(port, size, value),
            0xCF9 => self.reset_control.io_write(port, size, value),
            0x00..=0x0F | 0x81..=0x8F | 0xC0..=0xDF => {
                self.dma.io_write(port, size, value);
                self.requests.dma |= self.fdc.dma_pending();
            }
            0x3F0..=0x3F5 | 0x3F7 => {
                self.fdc.io_write(port, size, value);
                // A DMA-mode transfer needs guest RAM: the machine runs it.
                self.requests.dma |= self.fdc.dma_pending();
            }
            0x3B0..=0x3DF => self.vga.io_write(port, size, value),
            // Only the DISPI registers move the bank window or set a mode.
            0x1CE..=0x1D0 => {
                self.vga.io_write(port, size, value);
                self.sync_vga_memory();
            }
            0xCF8..=0xCFF => {
                self.pci.io_write(port, size, value);
                self.apply_pci_decoding();
            }
            p if let Some(register) = self.ide_register(p) => {
                match register {
                    IdeRegister::Command(ch, offset) => {
                        self.ide.command_write(ch, offset, size, value)
                    }
                    IdeRegister::Control(ch) => self.ide.control_write(ch, value),
                }
                self.requests.dma |= self.ide.dma_pending();
            }
            p if let Some(off) = self.ide_bus_master_offset(p) => {
                self.ide.bus_master_write_registers(off, size, value);
                self.requests.dma |= self.ide.dma_pending();
            }
            p if self.acpi_pm_claims(p) => self.acpi_pm.io_write(port, size, value),
            p if let Some((window, off)) = self.pci_bar_at(true, u64::from(p)) => {
                self.pci_bar_write(window, off, size, u64::from(value))
            }
            _ => tracing::trace!(port, size, value, "write to unclaimed port"),
        }
        self.collect_requests();
    }

    /// The IDE register at `port`, in whichever channel decodes it (legacy ports or native
    /// BARs; the primary wins where a guest made them overlap).
    fn ide_register(&self, port: u16) -> Option<IdeRegister> {
        self.ide_channels
            .iter()
            .enumerate()
            .find_map(|(ch, ports)| {
                let ports = (*ports)?;
                match port.checked_sub(ports.command) {
                    Some(offset) if offset < 8 => Some(IdeRegister::Command(ch, offset)),
                    _ => (port == ports.control).then_some(IdeRegister::Control(ch)),
                }
            })
    }

    /// Offset into the IDE bus-master block, when `port` is in it.
    fn ide_bus_master_offset(&self, port: u16) -> Option<u16> {
        let base = self.ide_bus_master?;
        port.checked_sub(base).filter(|&o| o < 16)
    }

    /// The plugged-in device BAR that decodes `address` (a port when `io`), and the
    /// offset in it.
    fn pci_bar_at(&self, io: bool, address: u64) -> Option<(BarWindow, u64)> {
        self.pci_bar_windows
            .iter()
            .find_map(|w| Some((*w, w.offset(io, address)?)))
    }

    fn pci_bar_read(&mut self, window: BarWindow, offset: u64, size: u8) -> u64 {
        match self.pci.pci.functions.devices.get_mut(window.device) {
            Some(plugged) => plugged.device.bar_read(window.bar, offset, size),
            None => u64::MAX >> (64 - 8 * u32::from(size.clamp(1, 8))),
        }
    }

    fn pci_bar_write(&mut self, window: BarWindow, offset: u64, size: u8, value: u64) {
        if let Some(plugged) = self.pci.pci.functions.devices.get_mut(window.device) {
            plugged.device.bar_write(window.bar, offset, size, value);
            // Bus-master work needs guest RAM: the machine runs it after this instruction.
            self.requests.dma |=
                plugged.device.dma_pending() && plugged.device.config().bus_master();
        }
    }

    /// Whether `port` is one of the ACPI PM block's registers.
    fn acpi_pm_claims(&self, port: u16) -> bool {
        let l = self.acpi_pm.layout();
        let within = |base: u16, len: u16| base != 0 && port >= base && port - base < len;
        within(l.pm1a_evt, 4)
            || within(l.pm1a_cnt, 2)
            || within(l.pm_tmr, 4)
            || within(l.gpe0, 2 * u16::from(l.gpe0_half_len))
            || (l.smi_cmd != 0 && port == l.smi_cmd)
    }

    /// Applies what the PCI configuration says about address decoding (PAM shadowing,
    /// BARs, the PM I/O base).
    pub fn apply_pci_decoding(&mut self) {
        let Some(d) = self.pci.decode_if_changed() else {
            return;
        };
        if self.map.set_pam(d.pam) {
            self.requests.mappings_changed = true;
        }
        self.lfb_bar = d.vga_lfb;
        self.map_framebuffer();
        self.vga_rom_base = d.vga_rom;
        self.aerogpu_base = d.aerogpu_mmio;
        self.ide_channels = d.ide_channels;
        self.ide_bus_master = d.ide_bus_master;
        self.ahci_abar = d.ahci_abar;
        self.pci_bar_windows = d.device_bars;
        if let Some(base) = d.pm_io_base
            && base != self.acpi_pm.layout().pm1a_evt
        {
            self.acpi_pm.relocate_pm_base(base);
        }
    }

    /// Turns device-side reset and A20 changes into machine requests.
    fn collect_requests(&mut self) {
        let a20 = self.port92.a20_enabled() || self.i8042.a20_enabled();
        if a20 != self.a20 {
            self.a20 = a20;
            self.requests.mappings_changed = true;
        }
        match self.acpi_pm.take_sleep_request() {
            Some(SleepRequest::PowerOff) => self.requests.power_off = true,
            Some(SleepRequest::Sleep { slp_typ }) => {
                tracing::warn!(
                    slp_typ,
                    "guest asked for a sleep state Aero does not model; ignored"
                )
            }
            None => {}
        }
        if self.port92.take_reset_request()
            | self.i8042.take_reset_request()
            | self.reset_control.take_reset_request().is_some()
        {
            self.requests.reset = true;
        }
    }
}

impl Bus for Platform {
    fn map_page(&self, paddr: u64) -> PageMapping {
        self.map.map_page(paddr)
    }

    fn mmio_read(&mut self, paddr: u64, size: u8) -> u64 {
        let size = size.clamp(1, 8);
        if let Some(off) = vga_offset(paddr) {
            return (0..u64::from(size)).fold(0, |v, i| {
                v | u64::from(self.vga.mem_read(off + i as u32)) << (8 * i)
            });
        }
        if let Some(off) = self.ecam_offset(paddr) {
            return self.pci.ecam_read(off, size);
        }
        if let Some(off) = self
            .vga_rom_base
            .and_then(|b| offset_in(paddr, b, u64::from(VGA_ROM_BAR_SIZE)))
        {
            let byte = |i: u64| {
                self.vga_rom
                    .get((off + i) as usize)
                    .copied()
                    .unwrap_or(0xFF)
            };
            return (0..u64::from(size)).fold(0, |v, i| v | u64::from(byte(i)) << (8 * i));
        }
        if let Some(off) = self.aerogpu_offset(paddr) {
            // Registers never need RAM to be read.
            return self.aerogpu.mmio_read(off, usize::from(size));
        }
        let Some(device) = self.mmio_device(paddr) else {
            tracing::trace!(paddr, size, "read from unclaimed MMIO");
            return u64::MAX >> (64 - 8 * u32::from(size));
        };
        // Timer and interrupt registers must show the exact current time.
        let now = self.clock.now();
        self.advance(now);
        let value = match device {
            (MmioDevice::Lapic, off) => self.lapic.mmio_read(off, size),
            (MmioDevice::IoApic, off) => self.ioapic.mmio_read(off, size),
            (MmioDevice::Hpet, off) => self.hpet.mmio_read(off, size),
            (MmioDevice::Ahci, off) => self.ahci.mmio_read(off, size),
            (MmioDevice::Pci(window), off) => self.pci_bar_read(window, off, size),
        };
        self.update_interrupts();
        value
    }

    fn mmio_write(&mut self, paddr: u64, size: u8, value: u64) {
        let size = size.clamp(1, 8);
        if let Some(off) = vga_offset(paddr) {
            for i in 0..u32::from(size) {
                self.vga.mem_write(off + i, (value >> (8 * i)) as u8);
            }
            return;
        }
        if let Some(off) = self.ecam_offset(paddr) {
            // Same consequences as a write through 0xCFC (see port_write): decoding
            // (PAM, BARs, PM base, IDE) re-read, then requests and interrupt lines.
            let now = self.clock.now();
            self.advance(now);
            self.pci.ecam_write(off, size, value);
            self.apply_pci_decoding();
            self.collect_requests();
            self.update_interrupts();
            return;
        }
        if let Some(offset) = self.aerogpu_offset(paddr) {
            // The CPU stops after this instruction; the machine applies the queue. The cap
            // only matters for a string instruction aimed at the registers.
            if self.aerogpu_writes.len() < MAX_QUEUED_REGISTER_WRITES {
                self.aerogpu_writes.push(RegisterWrite {
                    offset,
                    size,
                    value,
                });
            } else {
                tracing::debug!(offset, "aerogpu: register write queue full, write dropped");
            }
            self.requests.display = true;
            return;
        }
        let Some(device) = self.mmio_device(paddr) else {
            tracing::trace!(paddr, size, value, "write to unclaimed MMIO");
            return;
        };
        let now = self.clock.now();
        self.advance(now);
        match device {
            (MmioDevice::Lapic, off) => self.lapic.mmio_write(off, size, value),
            (MmioDevice::IoApic, off) => self.ioapic.mmio_write(off, size, value),
            (MmioDevice::Hpet, off) => self.hpet.mmio_write(off, size, value),
            (MmioDevice::Ahci, off) => {
                self.ahci.mmio_write(off, size, value);
                // Commands need guest RAM: the CPU stops after this instruction and the
                // machine runs them (Machine::handle_requests).
                self.requests.dma |= self.ahci.command_pending();
            }
            (MmioDevice::Pci(window), off) => self.pci_bar_write(window, off, size, value),
        }
        self.update_interrupts();
    }

    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        let now = self.clock.now();
        self.advance(now);
        let v = self.port_read(port, size);
        tracing::trace!(target: "aero::io", "in {port:#x} -> {v:#x}");
        self.update_interrupts();
        v
    }

    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        let now = self.clock.now();
        self.advance(now);
        tracing::trace!(target: "aero::io", "out {port:#x} <- {value:#x}");
        self.port_write(port, size, value);
        self.update_interrupts();
    }

    fn sync_time(&mut self, instructions_retired: u64) {
        self.clock.at(instructions_retired);
    }

    fn tsc(&mut self) -> u64 {
        // A 1 GHz TSC keeps guest TSC calibration simple and exact.
        self.clock.now()
    }

    fn interrupt_pending(&mut self) -> bool {
        self.lapic.pending_vector().is_some()
            || (self.lapic.pic_passthrough() && self.pic.interrupt_pending())
    }

    fn acknowledge_interrupt(&mut self) -> u8 {
        let v = if self.lapic.pending_vector().is_some() {
            self.lapic.acknowledge()
        } else {
            self.pic.acknowledge()
        };
        self.update_interrupts();
        v
    }

    fn apic_base_written(&mut self, value: u64) {
        self.lapic.set_apic_base_msr(value);
        self.update_interrupts();
    }

    /// CR8 is an alias of the LAPIC TPR's priority class (64-bit Windows raises IRQL
    /// through it).
    fn task_priority_written(&mut self, cr8: u8) {
        self.lapic.set_tpr((cr8 & 0xF) << 4);
        self.update_interrupts();
    }

    fn task_priority(&mut self) -> Option<u8> {
        Some(self.lapic.tpr() >> 4)
    }

    fn stop_requested(&mut self) -> bool {
        self.requests.any()
    }

    fn a20_enabled(&self) -> bool {
        self.a20
    }
}

/// One MMIO write to a device register block, replayed by the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterWrite {
    pub offset: u64,
    pub size: u8,
    pub value: u64,
}

const MAX_QUEUED_REGISTER_WRITES: usize = 4096;

/// An IDE register a port decodes to: command block (channel, offset 0..8) or the control
/// register (channel).
#[derive(Clone, Copy)]
enum IdeRegister {
    Command(usize, u16),
    Control(usize),
}

#[derive(Clone, Copy)]
enum MmioDevice {
    Lapic,
    IoApic,
    Hpet,
    Ahci,
    /// A plugged-in PCI device's memory BAR (index into `pci_bar_windows`).
    Pci(BarWindow),
}

/// Offset of `paddr` in the legacy VGA window.
fn vga_offset(paddr: u64) -> Option<u32> {
    offset_in(paddr, crate::memory_map::VGA_WINDOW.start, 0x20000).map(|o| o as u32)
}

fn offset_in(paddr: u64, base: u64, len: u64) -> Option<u64> {
    paddr.checked_sub(base).filter(|&o| o < len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::lapic::DeliveryMode;

    #[test]
    fn reset_returns_the_legacy_devices_to_power_on() {
        let (map, _) = MemoryMap::allocate(16 << 20, &[0u8; 0x20000]).unwrap();
        let mut p = Platform::new(Clock::new(true), map, 0);
        let cmos = |p: &mut Platform, index: u32| {
            p.io_write(0x70, 1, index);
            p.io_read(0x71, 1)
        };
        // The old OS: RTC periodic interrupts on, CMOS byte stored, VBE 800x600x32 on,
        // keyboard controller command byte changed, UART interrupts on, port 0x92 A20 on.
        p.io_write(0x70, 1, 0x0B);
        p.io_write(0x71, 1, 0x42);
        p.io_write(0x70, 1, 0x40);
        p.io_write(0x71, 1, 0x5A);
        for (index, value) in [(1, 800), (2, 600), (3, 32), (4, 0x41)] {
            p.io_write(0x1CE, 2, index);
            p.io_write(0x1CF, 2, value);
        }
        p.io_write(0x64, 1, 0x60);
        p.io_write(0x60, 1, 0x00);
        p.io_write(0x3F9, 1, 0x0F);
        p.io_write(0x92, 1, 0x02);
        p.io_write(0x3F8, 1, u32::from(b'x'));

        p.reset_devices();

        assert_eq!(
            cmos(&mut p, 0x0B) & 0x70,
            0,
            "RTC interrupt enables survived"
        );
        assert_eq!(cmos(&mut p, 0x40), 0x5A, "CMOS RAM is battery-backed");
        p.io_write(0x1CE, 2, 4);
        assert_eq!(p.io_read(0x1CF, 2) & 1, 0, "VBE still enabled after reset");
        assert!(p.vga.text_screen().is_some(), "VGA not back in text mode");
        p.io_write(0x64, 1, 0x20);
        assert_eq!(p.io_read(0x60, 1), u32::from(I8042::new().command_byte()));
        assert_eq!(p.io_read(0x3F9, 1), 0, "UART interrupt enables survived");
        assert_eq!(
            p.io_read(0x92, 1) & 3,
            2,
            "port 0x92 keeps A20, drops fast reset"
        );
        assert_eq!(p.com1.take_output(), b"x", "sent serial output is kept");
    }

    #[test]
    fn reset_silences_the_old_interrupt_setup() {
        let (map, _) = MemoryMap::allocate(16 << 20, &[0u8; 0x20000]).unwrap();
        let mut p = Platform::new(Clock::new(true), map, 0);
        p.mmio_write(0xFEE0_00F0, 4, 0x1FF); // LAPIC software-enabled
        p.lapic.deliver(DeliveryMode::Fixed, 0x61, false);
        assert!(p.interrupt_pending());
        // IOAPIC pin 4 unmasked to vector 0x30.
        p.mmio_write(0xFEC0_0000, 4, 0x18);
        p.mmio_write(0xFEC0_0010, 4, 0x30);
        p.reset_devices();
        assert!(
            !p.interrupt_pending(),
            "a pending LAPIC vector survived the reset"
        );
        p.mmio_write(0xFEC0_0000, 4, 0x18);
        assert_ne!(
            p.mmio_read(0xFEC0_0010, 4) & 0x1_0000,
            0,
            "IOAPIC pin not masked after reset"
        );
        // The LAPIC is software-disabled again: a fixed interrupt is not accepted.
        p.lapic.deliver(DeliveryMode::Fixed, 0x62, false);
        assert!(!p.interrupt_pending());
    }

    #[test]
    fn cr8_is_the_lapic_task_priority_class() {
        let (map, _) = MemoryMap::allocate(16 << 20, &[0u8; 0x20000]).unwrap();
        let mut p = Platform::new(Clock::new(true), map, 0);
        // Software-enable the LAPIC (spurious vector register, bit 8).
        p.mmio_write(0xFEE0_00F0, 4, 0x1FF);
        p.task_priority_written(5);
        assert_eq!(p.lapic.tpr(), 0x50);
        assert_eq!(p.task_priority(), Some(5));
        // A vector in class 5 is held back, class 6 gets through.
        p.lapic.deliver(DeliveryMode::Fixed, 0x55, false);
        assert!(!p.interrupt_pending(), "class 5 must be masked by CR8 = 5");
        p.lapic.deliver(DeliveryMode::Fixed, 0x61, false);
        assert!(p.interrupt_pending());
        assert_eq!(p.acknowledge_interrupt(), 0x61);
        // The TPR written through MMIO reads back through CR8.
        p.mmio_write(0xFEE0_0080, 4, 0x30);
        assert_eq!(p.task_priority(), Some(3));
    }

    fn platform() -> Platform {
        let (map, _) = MemoryMap::allocate(16 << 20, &[0u8; 0x20000]).unwrap();
        let mut p = Platform::new(Clock::new(true), map, 0);
        p.set_ecam_enabled(true);
        p
    }

    /// ECAM address of `bus:device.function` register `reg`.
    fn ecam(bus: u64, device: u64, function: u64, reg: u64) -> u64 {
        ECAM_BASE + (bus << 20 | device << 15 | function << 12 | reg)
    }

    fn cf8_read(p: &mut Platform, device: u32, function: u32, reg: u32) -> u32 {
        p.io_write(0xCF8, 4, 0x8000_0000 | device << 11 | function << 8 | reg);
        p.io_read(0xCFC, 4)
    }

    #[test]
    fn ecam_reads_the_same_functions_as_cf8() {
        let mut p = platform();
        for (device, function) in [(0, 0), (1, 0), (1, 1), (1, 3), (2, 0), (5, 0), (3, 0)] {
            for reg in [0x00, 0x08, 0x0C, 0x10, 0x3C] {
                let by_port = cf8_read(&mut p, device, function, reg);
                let by_ecam = p.mmio_read(ecam(0, device.into(), function.into(), reg.into()), 4);
                assert_eq!(
                    by_ecam,
                    u64::from(by_port),
                    "00:{device:02x}.{function} {reg:#x}"
                );
            }
        }
        assert_eq!(p.mmio_read(ecam(0, 0, 0, 0), 4), 0x1237_8086);
        assert_eq!(p.mmio_read(ecam(0, 0, 0, 2), 2), 0x1237);
        // 8-byte reads are two dwords: vendor/device, then command/status.
        let qword = p.mmio_read(ecam(0, 1, 0, 0), 8);
        assert_eq!(qword as u32, 0x7000_8086);
        assert_eq!(qword >> 32, u64::from(cf8_read(&mut p, 1, 0, 4)));
        // Buses other than 0 and empty slots: nothing answers, all ones.
        for bus in [1, 0x80, 0xFF] {
            assert_eq!(p.mmio_read(ecam(bus, 0, 0, 0), 4), 0xFFFF_FFFF, "bus {bus}");
            assert_eq!(p.mmio_read(ecam(bus, 31, 7, 0xFFC), 2), 0xFFFF);
        }
        assert_eq!(p.mmio_read(ecam(0, 3, 0, 0), 4), 0xFFFF_FFFF);
        // Conventional functions have no extended capabilities.
        assert_eq!(p.mmio_read(ecam(0, 0, 0, 0x100), 4), 0);
        // The window ends after bus FF.
        assert_eq!(p.pci.pci.ecam_size(), 256 << 20);
    }

    #[test]
    fn ecam_writes_have_the_side_effects_of_cf8_writes() {
        let mut p = platform();
        // PAM0 (00:00.0 0x59) = 0x30: F0000-FFFFF shadow RAM read/write, a new page mapping.
        p.mmio_write(ecam(0, 0, 0, 0x59), 1, 0x30);
        assert!(p.requests.mappings_changed, "PAM change not signalled");
        assert_eq!(p.map_page(0xF0000), PageMapping::Ram { offset: 0xF0000 });
        assert_eq!(cf8_read(&mut p, 0, 0, 0x58) >> 8 & 0xFF, 0x30);
        // PIRQ routes written by ECAM are the ISA bridge's.
        p.mmio_write(ecam(0, 1, 0, 0x60), 4, 0x0B0A_0B0A);
        assert_eq!(p.pci.pci.functions.isa_bridge.pirq_route(1), Some(11));
        // Moving the display's LFB BAR and turning on memory decoding through ECAM moves
        // the framebuffer, exactly as through 0xCFC.
        p.mmio_write(ecam(0, 2, 0, 0x18), 4, 0xF400_0000);
        p.mmio_write(ecam(0, 2, 0, 0x04), 2, 0x0003);
        assert_eq!(cf8_read(&mut p, 2, 0, 0x18) & !0xF, 0xF400_0000);
        assert_eq!(
            p.map_page(0xF400_0010),
            PageMapping::Ram {
                offset: p.map.lfb_range().start
            }
        );
        // Extended registers ignore writes.
        p.mmio_write(ecam(0, 0, 0, 0x104), 4, 0x1234);
        assert_eq!(p.mmio_read(ecam(0, 0, 0, 0x104), 4), 0);
    }

    #[test]
    fn without_ecam_decoding_the_window_is_plain_pci_space() {
        let mut p = platform();
        p.set_ecam_enabled(false);
        assert_eq!(p.mmio_read(ECAM_BASE, 4), 0xFFFF_FFFF);
        // A BAR there (as an external BIOS may place it) is reached.
        p.io_write(0xCF8, 4, 0x8000_1018); // 00:02.0 BAR2 (LFB)
        p.io_write(0xCFC, 4, ECAM_BASE as u32);
        p.io_write(0xCF8, 4, 0x8000_1004);
        p.io_write(0xCFC, 2, 0x0003);
        assert_eq!(
            p.map_page(ECAM_BASE + 0x3C),
            PageMapping::Ram {
                offset: p.map.lfb_range().start
            }
        );
        p.set_ecam_enabled(true);
        assert_eq!(p.map_page(ECAM_BASE), PageMapping::Mmio);
        assert_eq!(p.mmio_read(ECAM_BASE, 4), 0x1237_8086);
    }

    #[test]
    fn a_bar_moved_onto_the_ecam_window_is_shadowed() {
        let mut p = platform();
        p.io_write(0xCF8, 4, 0x8000_1018); // 00:02.0 BAR2 (LFB)
        p.io_write(0xCFC, 4, ECAM_BASE as u32);
        p.io_write(0xCF8, 4, 0x8000_1004);
        p.io_write(0xCFC, 2, 0x0003);
        assert_eq!(
            p.mmio_read(ECAM_BASE, 4),
            0x1237_8086,
            "host bridge ID via ECAM"
        );
        assert_eq!(
            p.map_page(ECAM_BASE + 0x3C),
            PageMapping::Mmio,
            "the framebuffer hides ECAM"
        );
    }

    /// Config write through 0xCF8/0xCFC to 00:03.0.
    fn slot3_write(p: &mut Platform, reg: u32, size: u8, value: u32) {
        p.io_write(0xCF8, 4, 0x8000_1800 | (reg & 0xFC));
        p.io_write(0xCFC + (reg & 3) as u16, size, value);
    }

    fn plugged_e1000() -> (Platform, crate::net::LoopbackBackend) {
        use crate::devices::e1000::{DEFAULT_MAC, E1000};
        let mut p = platform();
        let backend = crate::net::LoopbackBackend::new();
        let nic = E1000::new(DEFAULT_MAC, Box::new(backend.clone()));
        p.add_pci_device(PciAddress::new(0, 3, 0), Box::new(nic));
        (p, backend)
    }

    #[test]
    fn plugged_device_bars_decode_where_the_guest_moves_them() {
        let (mut p, _) = plugged_e1000();
        assert_eq!(
            cf8_read(&mut p, 3, 0, 0),
            0x100E_8086,
            "found by enumeration"
        );
        // Sizing: 128 KiB memory BAR0, 64-byte I/O BAR1.
        slot3_write(&mut p, 0x10, 4, 0xFFFF_FFFF);
        assert_eq!(cf8_read(&mut p, 3, 0, 0x10), 0xFFFE_0000);
        slot3_write(&mut p, 0x14, 4, 0xFFFF_FFFF);
        assert_eq!(cf8_read(&mut p, 3, 0, 0x14), 0xFFFF_FFC1);
        slot3_write(&mut p, 0x10, 4, 0xFEB0_0000);
        slot3_write(&mut p, 0x14, 4, 0xC040);
        // Nothing decodes until the command register enables it.
        assert_eq!(p.mmio_read(0xFEB0_0008, 4), 0xFFFF_FFFF);
        assert_eq!(p.io_read(0xC040, 4), 0xFFFF_FFFF);
        slot3_write(&mut p, 0x04, 2, 0x0003);
        let status = p.mmio_read(0xFEB0_0008, 4);
        assert_eq!(status & 0x3, 0x3, "STATUS: link up, full duplex");
        p.io_write(0xC040, 4, 0x0008); // IOADDR = STATUS
        assert_eq!(u64::from(p.io_read(0xC044, 4)), status);
        // Moved: the old addresses are unclaimed, the new ones answer.
        slot3_write(&mut p, 0x10, 4, 0xFEA0_0000);
        slot3_write(&mut p, 0x14, 4, 0xD000);
        assert_eq!(p.mmio_read(0xFEB0_0008, 4), 0xFFFF_FFFF);
        assert_eq!(p.io_read(0xC044, 4), 0xFFFF_FFFF);
        assert_eq!(p.mmio_read(0xFEA0_0008, 4), status);
        p.io_write(0xD000, 4, 0x0008);
        assert_eq!(u64::from(p.io_read(0xD004, 4)), status);
        // Memory decoding off: gone again; I/O stays.
        slot3_write(&mut p, 0x04, 2, 0x0001);
        assert_eq!(p.mmio_read(0xFEA0_0008, 4), 0xFFFF_FFFF);
        assert_eq!(u64::from(p.io_read(0xD004, 4)), status);
    }

    #[test]
    fn plugged_device_intx_reaches_the_ioapic_through_its_pirq() {
        let (mut p, _) = plugged_e1000();
        slot3_write(&mut p, 0x10, 4, 0xFEB0_0000);
        slot3_write(&mut p, 0x04, 2, 0x0006);
        // Slot 3 INTA# is PIRQC: IOAPIC input 18 (16 + 2). Route it to vector 0x51,
        // level-triggered, active low, as Linux does for PCI interrupts.
        p.mmio_write(0xFEE0_00F0, 4, 0x1FF);
        p.mmio_write(0xFEC0_0000, 4, 0x10 + 2 * 18);
        p.mmio_write(0xFEC0_0010, 4, 0x51 | 1 << 15 | 1 << 13);
        p.mmio_write(0xFEC0_0000, 4, 0x11 + 2 * 18);
        p.mmio_write(0xFEC0_0010, 4, 0);
        assert_eq!(p.pirq_levels(), [false; 4]);
        // Unmask TXDW (IMS) and set it (ICS): INTA# asserts.
        p.mmio_write(0xFEB0_00D0, 4, 1);
        p.mmio_write(0xFEB0_00C8, 4, 1);
        assert_eq!(p.pirq_levels(), [false, false, true, false]);
        assert!(p.interrupt_pending());
        assert_eq!(p.acknowledge_interrupt(), 0x51);
        // INTx disable in the command register keeps the pin quiet.
        slot3_write(&mut p, 0x04, 2, 0x0406);
        assert_eq!(p.pirq_levels(), [false; 4]);
        slot3_write(&mut p, 0x04, 2, 0x0006);
        assert_eq!(p.pirq_levels(), [false, false, true, false]);
        // Reading ICR deasserts it.
        p.mmio_read(0xFEB0_00C0, 4);
        assert_eq!(p.pirq_levels(), [false; 4]);
        // Through the PIIX3's PIRQC route to ISA IRQ 11 (PIC mode).
        p.mmio_write(0xFEB0_00C8, 4, 1);
        slot3_write(&mut p, 0x04, 2, 0x0006);
        p.io_write(0xCF8, 4, 0x8000_0860);
        p.io_write(0xCFE, 1, 11);
        let isa = p.pci.pci.functions.isa_bridge.isa_lines(p.pirq_levels());
        assert!(isa.contains(11));
    }

    #[test]
    fn vbe_mode_sets_remap_the_bank_window_and_ask_for_a_clear() {
        let mut p = platform();
        assert_eq!(p.map_page(0xA0000), PageMapping::Mmio);
        let dispi = |p: &mut Platform, index: u32, value: u32| {
            p.io_write(0x1CE, 2, index);
            p.io_write(0x1CF, 2, value);
        };
        dispi(&mut p, 1, 640); // XRES
        dispi(&mut p, 2, 480); // YRES
        dispi(&mut p, 3, 8); // BPP
        dispi(&mut p, 4, 0x01); // ENABLE
        assert!(p.requests.vga_window_moved);
        assert_eq!(p.requests.lfb_clear, Some(640 * 480));
        let lfb = p.map.lfb_range().start;
        assert_eq!(
            p.map_page(0xA1000),
            PageMapping::Ram {
                offset: lfb + 0x1000
            }
        );
        p.requests = Requests::default();
        dispi(&mut p, 5, 2); // BANK
        assert!(p.requests.vga_window_moved);
        assert_eq!(p.requests.lfb_clear, None);
        assert_eq!(
            p.map_page(0xA0000),
            PageMapping::Ram {
                offset: lfb + 0x20000
            }
        );
        // A reset gives the window back to the VGA.
        p.reset_devices();
        assert!(p.requests.vga_window_moved);
        assert_eq!(p.map_page(0xA0000), PageMapping::Mmio);
    }
}
