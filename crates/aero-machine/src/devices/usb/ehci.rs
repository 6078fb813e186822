//! Intel ICH9 EHCI USB 2.0 host controller #1 (8086:293A), QEMU's `ich9-usb-ehci1`: six
//! root ports, registers in a 1 KiB memory BAR0, function 7 of device 29 with the UHCI
//! companions (`uhci.rs`, 8086:2934/2935/2936) as functions 0–2, two ports each. Linux's
//! `ehci_hcd`/`ehci-pci` and Windows 7's inbox `usbehci` drive it.
//!
//! From the "Enhanced Host Controller Interface Specification for USB" rev 1.0:
//! - Port routing (§4.2): while CONFIGFLAG is clear every port belongs to the companions;
//!   setting it gives them all to EHCI, and a driver hands a port back by setting its
//!   PORTSC Port Owner bit, which it does for any device that is not high speed (low
//!   speed: seen in the line status at connect; full speed: the port stays disabled
//!   after reset). The ports and their devices are shared through [`RootPorts`].
//! - Schedules (§4.8–4.10): every millisecond of virtual time (a frame; FRINDEX counts
//!   its eight microframes) the periodic schedule's frame list entry and then the
//!   circular asynchronous list are walked. Queue heads (QHs) run their transfer
//!   descriptors (qTDs) through the QH's overlay, packet by packet, to the device with
//!   the QH's address; completed qTDs get their token written back and raise USBINT
//!   (IOC, short packet) or USBERRINT (halted). Only high-speed devices are reachable
//!   (no transaction translator): full/low-speed ones belong to the companions.
//!   Isochronous descriptors (iTD, siTD) and FSTNs are stepped over, not run.
//!
//! Hostile schedules: each frame looks at most [`MAX_ELEMENTS_PER_FRAME`] descriptors
//! and sends at most [`MAX_PACKETS_PER_FRAME`] packets (a transfer cut short carries on
//! next frame from its overlay), each QH runs once per frame, missed frames are skipped,
//! and a descriptor outside RAM is a host system error (USBSTS HSE, controller halted).

use std::any::Any;

use aero_storage::ide::GuestMemory;

use super::root_ports::RootPorts;
use super::{UsbPid, UsbResponse, UsbSpeed, read_u32, write_u32};
use crate::devices::pci::{BarKind, ConfigSpace, PciFunction};
use crate::devices::pci_device::PciDevice;

pub const VENDOR_ID: u16 = 0x8086;
pub const DEVICE_ID_EHCI1: u16 = 0x293A;
/// The register window in BAR0.
pub const MMIO_SIZE: u64 = 0x400;
pub const PORTS: usize = 6;
/// Ports per companion controller and companions (HCSPARAMS N_PCC, N_CC).
pub const PORTS_PER_COMPANION: usize = 2;
pub const COMPANIONS: usize = 3;
pub const FRAME_NS: u64 = 1_000_000;
const MICROFRAME_NS: u64 = 125_000;
/// Descriptors (QHs, qTDs, skipped isochronous ones) looked at per frame and schedule,
/// at most.
pub const MAX_ELEMENTS_PER_FRAME: usize = 1024;
/// Packets sent to devices per frame and schedule, at most.
pub const MAX_PACKETS_PER_FRAME: usize = 1024;
/// Frames run in one call when the machine fell behind; older ones are skipped.
const MAX_FRAMES_PER_CALL: u64 = 4;
/// Largest packet a QH may declare (Maximum Packet Length is 11 bits).
const MAX_PACKET: usize = 0x7FF;
/// A qTD moves at most five 4 KiB pages.
const MAX_QTD_BYTES: u32 = 0x5000;

// Capability registers.
const CAPLENGTH: u64 = 0x20;
const HCIVERSION: u32 = 0x0100;
/// N_CC 3, N_PCC 2, no port power switches, six ports.
const HCSPARAMS: u32 = (COMPANIONS as u32) << 12 | (PORTS_PER_COMPANION as u32) << 8 | PORTS as u32;
/// 32-bit addressing, 1024-entry frame list, no park mode, isochronous threshold 1
/// microframe, no extended capabilities.
const HCCPARAMS: u32 = 1 << 4;

// Operational registers (offsets from CAPLENGTH).
const USBCMD: u64 = 0x00;
const USBSTS: u64 = 0x04;
const USBINTR: u64 = 0x08;
const FRINDEX: u64 = 0x0C;
const CTRLDSSEGMENT: u64 = 0x10;
const PERIODICLISTBASE: u64 = 0x14;
const ASYNCLISTADDR: u64 = 0x18;
const CONFIGFLAG: u64 = 0x40;
const PORTSC: u64 = 0x44;

const CMD_RS: u32 = 1 << 0;
const CMD_HCRESET: u32 = 1 << 1;
const CMD_PSE: u32 = 1 << 4;
const CMD_ASE: u32 = 1 << 5;
const CMD_IAAD: u32 = 1 << 6;
const CMD_ITC: u32 = 0xFF << 16;
const CMD_DEFAULT: u32 = 0x08 << 16;
const CMD_WRITABLE: u32 = CMD_RS | CMD_PSE | CMD_ASE | CMD_ITC;

const STS_USBINT: u32 = 1 << 0;
const STS_USBERRINT: u32 = 1 << 1;
const STS_PCD: u32 = 1 << 2;
const STS_FLR: u32 = 1 << 3;
const STS_HSE: u32 = 1 << 4;
const STS_IAA: u32 = 1 << 5;
const STS_EVENTS: u32 = 0x3F;
const STS_HALTED: u32 = 1 << 12;
const STS_PSS: u32 = 1 << 14;
const STS_ASS: u32 = 1 << 15;

const PORT_CCS: u32 = 1 << 0;
const PORT_CSC: u32 = 1 << 1;
const PORT_PE: u32 = 1 << 2;
const PORT_PEC: u32 = 1 << 3;
const PORT_OCC: u32 = 1 << 5;
const PORT_FPR: u32 = 1 << 6;
const PORT_SUSPEND: u32 = 1 << 7;
const PORT_RESET: u32 = 1 << 8;
/// Line status: K (low-speed idle) and J (full/high-speed idle before reset).
const PORT_LINE_K: u32 = 1 << 10;
const PORT_LINE_J: u32 = 1 << 11;
const PORT_POWER: u32 = 1 << 12;
const PORT_OWNER: u32 = 1 << 13;
const PORT_CHANGES: u32 = PORT_CSC | PORT_PEC | PORT_OCC;
/// Port indicator, test control and wake enables: stored as written.
const PORT_PLAIN: u32 = 0x3 << 14 | 0xF << 16 | 0x7 << 20;

// Link pointers.
const LINK_TERMINATE: u32 = 1 << 0;
const LINK_TYPE_SHIFT: u32 = 1;
const TYPE_ITD: u32 = 0;
const TYPE_QH: u32 = 1;
const LINK_ADDRESS: u32 = !0x1F;

// QH endpoint characteristics.
const QH_DTC: u32 = 1 << 14;
const SPEED_HIGH: u32 = 2;

// qTD token.
const TOKEN_PING: u32 = 1 << 0;
const TOKEN_XACT_ERROR: u32 = 1 << 3;
const TOKEN_BABBLE: u32 = 1 << 4;
const TOKEN_BUFFER_ERROR: u32 = 1 << 5;
const TOKEN_HALTED: u32 = 1 << 6;
const TOKEN_ACTIVE: u32 = 1 << 7;
const TOKEN_PID_SHIFT: u32 = 8;
const TOKEN_CERR_SHIFT: u32 = 10;
const TOKEN_CERR: u32 = 3 << TOKEN_CERR_SHIFT;
const TOKEN_CPAGE_SHIFT: u32 = 12;
const TOKEN_CPAGE: u32 = 7 << TOKEN_CPAGE_SHIFT;
const TOKEN_IOC: u32 = 1 << 15;
const TOKEN_BYTES_SHIFT: u32 = 16;
const TOKEN_BYTES: u32 = 0x7FFF << TOKEN_BYTES_SHIFT;
const TOKEN_TOGGLE: u32 = 1 << 31;

/// QH dwords: horizontal link, characteristics, capabilities, current qTD, then the
/// overlay (next, alternate next, token, five buffer pointers).
const QH_DWORDS: usize = 12;
const QH_CAPS: usize = 2;
const QH_CURRENT: usize = 3;
const QH_NEXT: usize = 4;
const QH_ALT_NEXT: usize = 5;
const QH_TOKEN: usize = 6;
const QH_BUFFER: usize = 7;

/// This controller's state of one root port (the device is in [`RootPorts`]).
#[derive(Default)]
struct Port {
    /// PORTSC's stored bits: enable, change bits, suspend, reset, resume, plain bits.
    status: u32,
    /// The shared port's generation last seen, and whether it then had a device routed
    /// to EHCI.
    seen_generation: u64,
    had_device: bool,
}

/// Work left in the current frame.
struct Budget {
    elements: usize,
    packets: usize,
}

impl Budget {
    /// Counts one more descriptor; false when the frame has looked at its share.
    fn take_element(&mut self) -> bool {
        let left = self.elements > 0;
        self.elements = self.elements.saturating_sub(1);
        left
    }
}

/// What running a QH's active overlay did.
enum Transfer {
    /// The qTD finished (all bytes, or a short IN packet).
    Completed,
    /// The qTD stopped with an error (stall, errors used up, bad buffer).
    Halted,
    /// Still active: NAK, a retried error, or the frame's packet budget ran out.
    Pending,
    /// Guest memory could not be reached.
    SystemError,
}

/// An ICH9 EHCI controller (see the module documentation).
pub struct Ehci {
    config: ConfigSpace,
    root: RootPorts,
    ports: [Port; PORTS],
    /// `root.changes()` when the ports were last synchronised.
    seen_changes: u64,
    command: u32,
    /// USBSTS's event bits (HCHalted and the schedule status bits are derived).
    status: u32,
    interrupt_enable: u32,
    /// FRINDEX counts microframes from `frindex_base` at `frindex_base_ns` while running.
    frindex_base: u32,
    frindex_base_ns: u64,
    /// Frame list rollovers (FRINDEX bit 13 flips) counted so far, for FLR.
    rollovers_seen: u64,
    periodic_base: u32,
    async_address: u32,
    configured: bool,
    now_ns: u64,
    /// While a schedule runs: virtual time of the next frame.
    next_frame_ns: u64,
    /// Scratch kept between frames: QHs seen this frame, one packet's data.
    visited_qhs: Vec<u32>,
    packet: Vec<u8>,
}

impl Ehci {
    /// EHCI over `root` (at least [`PORTS`] ports, shared with the companions).
    pub fn new(root: RootPorts) -> Ehci {
        let mut config = ConfigSpace::new(VENDOR_ID, DEVICE_ID_EHCI1, 0x0C_03_20, 0x03, 0x00);
        config.set_bar(
            0,
            BarKind::Memory32 {
                prefetchable: false,
            },
            MMIO_SIZE,
        );
        // INTD#, as ICH9 and QEMU wire EHCI #1.
        config.set_interrupt_pin(4);
        config.set_subsystem(0x1AF4, 0x1100);
        Ehci::init_config(&mut config);
        let mut ehci = Ehci {
            config,
            root,
            ports: Default::default(),
            seen_changes: 0,
            command: CMD_DEFAULT,
            status: 0,
            interrupt_enable: 0,
            frindex_base: 0,
            frindex_base_ns: 0,
            rollovers_seen: 0,
            periodic_base: 0,
            async_address: 0,
            configured: false,
            now_ns: 0,
            next_frame_ns: 0,
            visited_qhs: Vec::new(),
            packet: vec![0; MAX_PACKET],
        };
        ehci.reset_controller();
        ehci
    }

    fn init_config(config: &mut ConfigSpace) {
        // Serial bus release number: USB 2.0; frame length adjustment (driver-writable).
        config.set_u8(0x60, 0x20);
        config.set_u8(0x61, 0x20);
        config.set_writable_u8(0x61, 0x3F);
    }

    fn running(&self) -> bool {
        self.command & CMD_RS != 0
    }

    fn schedules_on(&self) -> bool {
        self.running() && self.command & (CMD_PSE | CMD_ASE) != 0
    }

    /// Microframes counted since FRINDEX was last set.
    fn microframes(&self) -> u64 {
        let elapsed = if self.running() {
            self.now_ns.saturating_sub(self.frindex_base_ns) / MICROFRAME_NS
        } else {
            0
        };
        u64::from(self.frindex_base) + elapsed
    }

    fn frindex(&self) -> u32 {
        (self.microframes() & 0x3FFF) as u32
    }

    /// HCRESET: registers to defaults, every port back to the companions.
    fn reset_controller(&mut self) {
        self.command = CMD_DEFAULT;
        self.status = 0;
        self.interrupt_enable = 0;
        self.frindex_base = 0;
        self.rollovers_seen = 0;
        self.periodic_base = 0;
        self.async_address = 0;
        self.set_configured(false);
        for port in &mut self.ports {
            port.status = 0;
        }
        self.sync_ports();
    }

    /// CONFIGFLAG: set routes every port to EHCI, clear to the companions (§4.2).
    fn set_configured(&mut self, configured: bool) {
        self.configured = configured;
        self.root.lock().set_configured(configured);
    }

    /// Takes in plugs, pulls and routing changes: a device appearing on or leaving an
    /// EHCI-owned port is a connect change (port disabled) and a port change event.
    fn sync_ports(&mut self) {
        let changes = self.root.changes();
        if changes == self.seen_changes {
            return;
        }
        self.seen_changes = changes;
        let root = self.root.lock();
        for (port, shared) in self.ports.iter_mut().zip(root.iter()) {
            if shared.generation == port.seen_generation {
                continue;
            }
            port.seen_generation = shared.generation;
            let has_device = !shared.companion_owned && shared.device.is_some();
            if has_device || port.had_device {
                port.status &= !(PORT_PE | PORT_SUSPEND | PORT_RESET | PORT_FPR);
                port.status |= PORT_CSC;
                self.status |= STS_PCD;
            }
            port.had_device = has_device;
        }
    }

    fn port_read(&mut self, index: usize) -> u32 {
        let root = self.root.lock();
        let (Some(port), Some(shared)) = (self.ports.get(index), root.get(index)) else {
            return 0;
        };
        let mut value = port.status | PORT_POWER;
        if shared.companion_owned {
            // The companion drives the port: only ownership, power and old changes show.
            return value & (PORT_CHANGES | PORT_POWER | PORT_PLAIN) | PORT_OWNER;
        }
        if let Some(device) = &shared.device {
            value |= PORT_CCS;
            if value & (PORT_PE | PORT_RESET) == 0 {
                value |= match device.speed() {
                    UsbSpeed::Low => PORT_LINE_K,
                    _ => PORT_LINE_J,
                };
            }
        }
        value
    }

    fn port_write(&mut self, index: usize, value: u32) {
        let configured = self.configured;
        let mut root = self.root.lock();
        let (Some(port), Some(shared)) = (self.ports.get_mut(index), root.get_mut(index)) else {
            return;
        };
        let old = port.status;
        let mut status = old & !(value & PORT_CHANGES);
        status = (status & !PORT_PLAIN) | (value & PORT_PLAIN);
        // Software can only disable the port; reset enables it.
        if value & PORT_PE == 0 {
            status &= !PORT_PE;
        }
        if value & PORT_SUSPEND != 0 && status & PORT_PE != 0 {
            status |= PORT_SUSPEND;
        }
        // Force port resume: the resume ends when software clears the bit.
        if value & PORT_FPR != 0 && status & PORT_SUSPEND != 0 {
            status |= PORT_FPR;
        } else if old & PORT_FPR != 0 && value & PORT_FPR == 0 {
            status &= !(PORT_FPR | PORT_SUSPEND);
        }
        let device = shared.device_for(false);
        if value & PORT_RESET != 0 {
            if old & PORT_RESET == 0
                && let Some(device) = device
            {
                device.reset();
            }
            status = (status | PORT_RESET) & !(PORT_PE | PORT_SUSPEND | PORT_FPR);
        } else if old & PORT_RESET != 0 {
            // Reset done: only a high-speed device enables the port (§4.2.2); the driver
            // hands anything slower to the companion.
            status &= !PORT_RESET;
            if device.is_some_and(|d| d.speed() == UsbSpeed::High) {
                status |= PORT_PE;
            }
        }
        port.status = status;
        // Port Owner: writable while CONFIGFLAG is set (else the companions own all).
        let to_companion = value & PORT_OWNER != 0 || !configured;
        if to_companion != shared.companion_owned {
            port.status &= !(PORT_PE | PORT_SUSPEND | PORT_RESET | PORT_FPR);
            root.route(index, to_companion);
        }
        drop(root);
        self.sync_ports();
    }

    fn operational_read(&mut self, offset: u64) -> u32 {
        match offset {
            USBCMD => self.command,
            USBSTS => {
                let mut value = self.status;
                if !self.running() {
                    value |= STS_HALTED;
                } else {
                    if self.command & CMD_PSE != 0 {
                        value |= STS_PSS;
                    }
                    if self.command & CMD_ASE != 0 {
                        value |= STS_ASS;
                    }
                }
                value
            }
            USBINTR => self.interrupt_enable,
            FRINDEX => self.frindex(),
            CTRLDSSEGMENT => 0,
            PERIODICLISTBASE => self.periodic_base,
            ASYNCLISTADDR => self.async_address,
            CONFIGFLAG => u32::from(self.configured),
            o if o >= PORTSC && o < PORTSC + 4 * PORTS as u64 => {
                self.port_read(((o - PORTSC) / 4) as usize)
            }
            _ => 0,
        }
    }

    fn operational_write(&mut self, offset: u64, value: u32) {
        match offset {
            USBCMD => self.command_write(value),
            USBSTS => self.status &= !(value & STS_EVENTS),
            USBINTR => self.interrupt_enable = value & STS_EVENTS,
            FRINDEX if !self.running() => self.frindex_base = value & 0x3FFF,
            PERIODICLISTBASE => self.periodic_base = value & !0xFFF,
            ASYNCLISTADDR => self.async_address = value & LINK_ADDRESS,
            CONFIGFLAG => {
                let configured = value & 1 != 0;
                if configured != self.configured {
                    self.set_configured(configured);
                    self.sync_ports();
                }
            }
            o if o >= PORTSC && o < PORTSC + 4 * PORTS as u64 => {
                self.port_write(((o - PORTSC) / 4) as usize, value)
            }
            _ => {}
        }
    }

    fn command_write(&mut self, value: u32) {
        if value & CMD_HCRESET != 0 {
            self.reset_controller();
            return;
        }
        let was_running = self.running();
        let was_scheduling = self.schedules_on();
        if was_running && value & CMD_RS == 0 {
            // Halting freezes FRINDEX where it is.
            self.frindex_base = self.frindex();
        }
        self.command = value & CMD_WRITABLE;
        if self.running() && !was_running {
            self.frindex_base_ns = self.now_ns;
            self.rollovers_seen = self.microframes() >> 13;
        }
        if self.schedules_on() && !was_scheduling {
            self.next_frame_ns = self.now_ns.saturating_add(FRAME_NS);
        }
        // Nothing of the asynchronous schedule is cached between frames, so the doorbell
        // is answered at once.
        if value & CMD_IAAD != 0 {
            self.status |= STS_IAA;
        }
    }

    fn irq_asserted(&self) -> bool {
        self.status & self.interrupt_enable & STS_EVENTS != 0
    }

    /// Brings time to `now_ns`: FRINDEX moves on, a frame list rollover sets FLR.
    fn advance_time(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        if self.running() {
            let rollovers = self.microframes() >> 13;
            if rollovers != self.rollovers_seen {
                self.rollovers_seen = rollovers;
                self.status |= STS_FLR;
            }
        }
    }

    /// Runs the frames due by `now_ns` (at most [`MAX_FRAMES_PER_CALL`], older ones
    /// skipped).
    fn run_frames(&mut self, ram: &mut dyn GuestMemory, now_ns: u64) {
        self.advance_time(now_ns);
        self.sync_ports();
        if !self.schedules_on() || self.now_ns < self.next_frame_ns {
            return;
        }
        let due = (self.now_ns - self.next_frame_ns) / FRAME_NS + 1;
        let run = due.min(MAX_FRAMES_PER_CALL);
        let current = (self.frindex() >> 3) & 0x3FF;
        for i in 0..run {
            let frame = (current + 1024 - (run - 1 - i) as u32) & 0x3FF;
            self.run_frame(ram, frame);
            if !self.schedules_on() {
                break;
            }
        }
        self.next_frame_ns = self
            .next_frame_ns
            .saturating_add(due.saturating_mul(FRAME_NS));
    }

    fn run_frame(&mut self, ram: &mut dyn GuestMemory, frame: u32) {
        // Each schedule has its own budget, so a looping periodic list cannot starve the
        // asynchronous one.
        let budget = || Budget {
            elements: MAX_ELEMENTS_PER_FRAME,
            packets: MAX_PACKETS_PER_FRAME,
        };
        let mut visited = std::mem::take(&mut self.visited_qhs);
        visited.clear();
        if self.command & CMD_PSE != 0 {
            self.run_periodic(ram, frame, &mut budget(), &mut visited);
        }
        visited.clear();
        if self.running() && self.command & CMD_ASE != 0 {
            self.run_async(ram, &mut budget(), &mut visited);
        }
        self.visited_qhs = visited;
    }

    /// The periodic schedule: frame list entry `frame`, then its linked list.
    fn run_periodic(
        &mut self,
        ram: &mut dyn GuestMemory,
        frame: u32,
        budget: &mut Budget,
        visited: &mut Vec<u32>,
    ) {
        let entry = u64::from(self.periodic_base) + u64::from(frame) * 4;
        let Some(mut link) = read_u32(ram, entry) else {
            return self.host_system_error();
        };
        while link & LINK_TERMINATE == 0 && budget.take_element() {
            let address = link & LINK_ADDRESS;
            if (link >> LINK_TYPE_SHIFT) & 3 != TYPE_QH {
                // iTD, siTD and FSTN all start with the next link: step over them.
                let Some(next) = read_u32(ram, u64::from(address)) else {
                    return self.host_system_error();
                };
                if (link >> LINK_TYPE_SHIFT) & 3 == TYPE_ITD {
                    tracing::trace!(address, "EHCI: isochronous iTD skipped");
                }
                link = next;
                continue;
            }
            // Interrupt QHs are shared between frames (a tree): each runs once.
            if visited.contains(&address) {
                break;
            }
            visited.push(address);
            let Some(mut qh) = read_qh(ram, address) else {
                return self.host_system_error();
            };
            // An S-mask of 0 means no start microframe: not run from the periodic list.
            if qh[QH_CAPS] & 0xFF != 0 && !self.run_qh(ram, address, &mut qh, budget) {
                return;
            }
            link = qh[0];
        }
    }

    /// The asynchronous schedule: one pass round the circular QH list.
    fn run_async(
        &mut self,
        ram: &mut dyn GuestMemory,
        budget: &mut Budget,
        visited: &mut Vec<u32>,
    ) {
        let mut address = self.async_address;
        while budget.take_element() && !visited.contains(&address) {
            visited.push(address);
            let Some(mut qh) = read_qh(ram, address) else {
                return self.host_system_error();
            };
            if !self.run_qh(ram, address, &mut qh, budget) {
                return;
            }
            let link = qh[0];
            if link & LINK_TERMINATE != 0 || (link >> LINK_TYPE_SHIFT) & 3 != TYPE_QH {
                break;
            }
            address = link & LINK_ADDRESS;
        }
    }

    /// Runs one QH: its active overlay, then further qTDs while they complete. False
    /// after a host system error.
    fn run_qh(
        &mut self,
        ram: &mut dyn GuestMemory,
        address: u32,
        qh: &mut [u32; QH_DWORDS],
        budget: &mut Budget,
    ) -> bool {
        let mut overlay_changed = false;
        loop {
            let token = qh[QH_TOKEN];
            if token & TOKEN_HALTED != 0 {
                break;
            }
            if token & TOKEN_ACTIVE == 0 {
                // Advance the queue (§4.10.2): after a short packet to the alternate next
                // qTD if there is one, else to the next.
                let left = token & TOKEN_BYTES;
                let next = if left != 0 && qh[QH_ALT_NEXT] & LINK_TERMINATE == 0 {
                    qh[QH_ALT_NEXT]
                } else {
                    qh[QH_NEXT]
                };
                if next & LINK_TERMINATE != 0 || !budget.take_element() {
                    break;
                }
                let qtd_address = next & LINK_ADDRESS;
                let Some(qtd) = read_dwords::<8>(ram, qtd_address) else {
                    self.host_system_error();
                    return false;
                };
                if qtd[2] & TOKEN_ACTIVE == 0 {
                    break;
                }
                // Load the qTD into the overlay; without DTC the QH keeps the toggle.
                let toggle = if qh[1] & QH_DTC == 0 {
                    qh[QH_TOKEN] & TOKEN_TOGGLE
                } else {
                    qtd[2] & TOKEN_TOGGLE
                };
                qh[QH_CURRENT] = qtd_address;
                qh[QH_NEXT] = qtd[0];
                qh[QH_ALT_NEXT] = qtd[1];
                qh[QH_TOKEN] = (qtd[2] & !(TOKEN_TOGGLE | TOKEN_PING)) | toggle;
                qh[QH_BUFFER..QH_DWORDS].copy_from_slice(&qtd[3..8]);
                overlay_changed = true;
                continue;
            }
            // A NAK changes nothing: the overlay is written back only when it moved.
            let before = *qh;
            let outcome = self.run_transfer(ram, qh, budget);
            overlay_changed |= *qh != before;
            if matches!(outcome, Transfer::SystemError) {
                self.host_system_error();
                return false;
            }
            if matches!(outcome, Transfer::Completed | Transfer::Halted) {
                // The qTD's token gets the result.
                let token = qh[QH_TOKEN];
                if write_u32(ram, u64::from(qh[QH_CURRENT] & LINK_ADDRESS) + 8, token).is_none() {
                    self.host_system_error();
                    return false;
                }
                if token & TOKEN_IOC != 0 {
                    self.status |= STS_USBINT;
                }
            }
            match outcome {
                Transfer::Completed => {
                    let pid = (qh[QH_TOKEN] >> TOKEN_PID_SHIFT) & 3;
                    if pid == 1 && qh[QH_TOKEN] & TOKEN_BYTES != 0 {
                        // Short packet.
                        self.status |= STS_USBINT;
                    }
                }
                Transfer::Halted => {
                    self.status |= STS_USBERRINT;
                    break;
                }
                _ => break,
            }
        }
        if overlay_changed {
            for (i, &word) in qh.iter().enumerate().skip(QH_CURRENT) {
                if write_u32(ram, u64::from(address) + 4 * i as u64, word).is_none() {
                    self.host_system_error();
                    return false;
                }
            }
        }
        true
    }

    /// Sends the overlay's packets until the qTD is done, stops, or the budget is used.
    fn run_transfer(
        &mut self,
        ram: &mut dyn GuestMemory,
        qh: &mut [u32; QH_DWORDS],
        budget: &mut Budget,
    ) -> Transfer {
        let characteristics = qh[1];
        let device_address = (characteristics & 0x7F) as u8;
        let endpoint = (characteristics >> 8 & 0xF) as u8;
        let high_speed = characteristics >> 12 & 3 == SPEED_HIGH;
        let max_packet = ((characteristics >> 16) as usize & MAX_PACKET).max(1);
        let pid = match (qh[QH_TOKEN] >> TOKEN_PID_SHIFT) & 3 {
            0 => UsbPid::Out,
            1 => UsbPid::In,
            2 => UsbPid::Setup,
            _ => return halt(qh, TOKEN_XACT_ERROR),
        };
        if (qh[QH_TOKEN] & TOKEN_BYTES) >> TOKEN_BYTES_SHIFT > MAX_QTD_BYTES {
            return halt(qh, TOKEN_BUFFER_ERROR);
        }
        let mut packet = std::mem::take(&mut self.packet);
        let outcome = loop {
            if budget.packets == 0 {
                break Transfer::Pending;
            }
            budget.packets -= 1;
            let token = qh[QH_TOKEN];
            let left = ((token & TOKEN_BYTES) >> TOKEN_BYTES_SHIFT) as usize;
            let len = left.min(max_packet);
            let data = &mut packet[..len];
            if pid == UsbPid::In {
                data.fill(0);
            } else {
                match buffer_io(ram, qh, data, false) {
                    Some(true) => {}
                    Some(false) => break halt(qh, TOKEN_BUFFER_ERROR),
                    None => break Transfer::SystemError,
                }
            }
            let response = high_speed
                .then(|| self.token_to(device_address, pid, endpoint, data))
                .flatten();
            let moved = match response {
                None => {
                    // Nobody answers: a transaction error, retried until CERR runs out
                    // (0: retried forever).
                    let errors = (token & TOKEN_CERR) >> TOKEN_CERR_SHIFT;
                    qh[QH_TOKEN] |= TOKEN_XACT_ERROR;
                    if errors == 1 {
                        qh[QH_TOKEN] &= !TOKEN_CERR;
                        break halt(qh, 0);
                    }
                    if errors > 1 {
                        qh[QH_TOKEN] =
                            (qh[QH_TOKEN] & !TOKEN_CERR) | (errors - 1) << TOKEN_CERR_SHIFT;
                    }
                    break Transfer::Pending;
                }
                Some(UsbResponse::Nak) => break Transfer::Pending,
                Some(UsbResponse::Stall) => break halt(qh, 0),
                Some(UsbResponse::Ack(n)) if pid == UsbPid::In && n > len => {
                    break halt(qh, TOKEN_BABBLE);
                }
                Some(UsbResponse::Ack(n)) => {
                    if pid == UsbPid::In {
                        n
                    } else {
                        len
                    }
                }
            };
            if pid == UsbPid::In {
                match buffer_io(ram, qh, &mut packet[..moved], true) {
                    Some(true) => {}
                    Some(false) => break halt(qh, TOKEN_BUFFER_ERROR),
                    None => break Transfer::SystemError,
                }
            }
            // Bytes left, current page and offset move on; the data toggle flips.
            let left = left - moved;
            let position = (qh[QH_BUFFER] & 0xFFF) as usize
                + 4096 * ((token & TOKEN_CPAGE) >> TOKEN_CPAGE_SHIFT) as usize
                + moved;
            qh[QH_BUFFER] = (qh[QH_BUFFER] & !0xFFF) | (position & 0xFFF) as u32;
            let page = (position / 4096).min(7) as u32;
            qh[QH_TOKEN] = (token & !(TOKEN_BYTES | TOKEN_CPAGE))
                | (left as u32) << TOKEN_BYTES_SHIFT
                | page << TOKEN_CPAGE_SHIFT;
            qh[QH_TOKEN] ^= TOKEN_TOGGLE;
            let short = pid == UsbPid::In && moved < len;
            if left == 0 || short {
                qh[QH_TOKEN] &= !TOKEN_ACTIVE;
                break Transfer::Completed;
            }
        };
        self.packet = packet;
        outcome
    }

    /// One packet to the high-speed device answering to `address` on an enabled EHCI
    /// port; None when nobody answers.
    fn token_to(
        &mut self,
        address: u8,
        pid: UsbPid,
        endpoint: u8,
        data: &mut [u8],
    ) -> Option<UsbResponse> {
        let mut root = self.root.lock();
        self.ports
            .iter()
            .zip(root.iter_mut())
            .filter(|(port, _)| port.status & (PORT_PE | PORT_SUSPEND | PORT_RESET) == PORT_PE)
            .filter_map(|(_, shared)| shared.device_for(false))
            .find(|d| d.speed() == UsbSpeed::High && d.address() == address)
            .map(|d| d.handle_token(pid, endpoint, data))
    }

    /// A descriptor or buffer outside RAM: the controller halts (§2.3.2 HSE).
    fn host_system_error(&mut self) {
        tracing::debug!("EHCI: schedule outside RAM, halting");
        self.status |= STS_HSE;
        if self.running() {
            self.frindex_base = self.frindex();
        }
        self.command &= !CMD_RS;
    }
}

/// Retires the overlay's qTD as halted with `error` added.
fn halt(qh: &mut [u32; QH_DWORDS], error: u32) -> Transfer {
    qh[QH_TOKEN] = (qh[QH_TOKEN] & !TOKEN_ACTIVE) | TOKEN_HALTED | error;
    Transfer::Halted
}

/// Moves `data` between the overlay's buffer (at its current page and offset) and RAM:
/// `to_ram` writes it, else reads it. Some(false) when the transfer runs past the fifth
/// page, None when RAM cannot be reached.
fn buffer_io(
    ram: &mut dyn GuestMemory,
    qh: &[u32; QH_DWORDS],
    data: &mut [u8],
    to_ram: bool,
) -> Option<bool> {
    let mut page = ((qh[QH_TOKEN] & TOKEN_CPAGE) >> TOKEN_CPAGE_SHIFT) as usize;
    let mut offset = (qh[QH_BUFFER] & 0xFFF) as usize;
    let mut done = 0;
    while done < data.len() {
        let Some(pointer) = qh.get(QH_BUFFER + page).filter(|_| page < 5) else {
            return Some(false);
        };
        let n = (4096 - offset).min(data.len() - done);
        let address = u64::from(pointer & !0xFFF) + offset as u64;
        let chunk = &mut data[done..done + n];
        let result = if to_ram {
            ram.write(address, chunk)
        } else {
            ram.read(address, chunk)
        };
        result.ok()?;
        done += n;
        offset = 0;
        page += 1;
    }
    Some(true)
}

fn read_dwords<const N: usize>(ram: &mut dyn GuestMemory, address: u32) -> Option<[u32; N]> {
    let mut bytes = [0u8; 64];
    let bytes = bytes.get_mut(..N * 4)?;
    ram.read(u64::from(address), bytes).ok()?;
    let mut words = [0u32; N];
    for (word, b) in words.iter_mut().zip(bytes.chunks_exact(4)) {
        *word = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    Some(words)
}

fn read_qh(ram: &mut dyn GuestMemory, address: u32) -> Option<[u32; QH_DWORDS]> {
    read_dwords::<QH_DWORDS>(ram, address)
}

impl PciFunction for Ehci {
    fn config(&self) -> &ConfigSpace {
        &self.config
    }
    fn config_mut(&mut self) -> &mut ConfigSpace {
        &mut self.config
    }
}

impl PciDevice for Ehci {
    fn bar_read(&mut self, bar: usize, offset: u64, size: u8) -> u64 {
        if bar != 0 {
            return u64::MAX;
        }
        self.sync_ports();
        let aligned = offset & !3;
        let dword = if aligned < CAPLENGTH {
            match aligned {
                0x00 => CAPLENGTH as u32 | HCIVERSION << 16,
                0x04 => HCSPARAMS,
                0x08 => HCCPARAMS,
                _ => 0,
            }
        } else {
            self.operational_read(aligned - CAPLENGTH)
        };
        let value = u64::from(dword) >> (8 * (offset & 3));
        value & crate::devices::size_mask(size.min(4))
    }

    fn bar_write(&mut self, bar: usize, offset: u64, size: u8, value: u64) {
        if bar != 0 || offset < CAPLENGTH {
            return;
        }
        self.sync_ports();
        let aligned = offset & !3;
        let register = aligned - CAPLENGTH;
        let shift = 8 * (offset & 3);
        let mask = (crate::devices::size_mask(size.min(4)) << shift) as u32;
        let value = ((value << shift) as u32) & mask;
        let value = if mask == u32::MAX {
            value
        } else {
            // A partial write keeps the other bytes, but never writes their
            // write-one-to-clear bits back.
            let keep = match register {
                USBSTS => 0,
                r if r >= PORTSC => self.operational_read(register) & !(PORT_CHANGES | PORT_CCS),
                _ => self.operational_read(register),
            };
            (keep & !mask) | value
        };
        self.operational_write(register, value);
    }

    fn irq_level(&self) -> bool {
        self.irq_asserted()
    }

    fn dma_pending(&self) -> bool {
        self.schedules_on() && self.now_ns >= self.next_frame_ns
    }

    fn run_dma(&mut self, ram: &mut dyn GuestMemory, now_ns: u64) {
        self.run_frames(ram, now_ns);
    }

    fn advance(&mut self, now_ns: u64) {
        self.advance_time(now_ns);
        self.sync_ports();
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        let frame = self.schedules_on().then_some(self.next_frame_ns);
        // The rollover interrupt, when enabled, at the next FRINDEX bit 13 flip.
        let rollover = (self.running() && self.interrupt_enable & STS_FLR != 0).then(|| {
            let next = (self.microframes() >> 13) + 1;
            let microframes = (next << 13).saturating_sub(u64::from(self.frindex_base));
            self.frindex_base_ns
                .saturating_add(microframes.saturating_mul(MICROFRAME_NS))
        });
        [frame, rollover].into_iter().flatten().min()
    }

    /// A machine reset: the controller, and every device on the shared ports once (the
    /// companions reset only the devices routed to them, EHCI's own would keep their
    /// addresses).
    fn reset(&mut self) {
        self.reset_controller();
        self.root.reset_devices();
        Ehci::init_config(&mut self.config);
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn Any> {
        Some(self)
    }
}

#[cfg(test)]
#[path = "ehci_tests.rs"]
mod tests;
