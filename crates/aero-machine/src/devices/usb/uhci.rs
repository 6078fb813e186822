//! Intel UHCI USB 1.1 host controller as in ICH9 (uhci1 8086:2934, uhci2 8086:2935),
//! QEMU's `ich9-usb-uhci1`/`uhci2`: two root ports, registers in I/O BAR4 (32 bytes).
//! Linux's `uhci_hcd` and Windows 7's inbox `usbuhci` drive it.
//!
//! From Intel's "Universal Host Controller Interface (UHCI) Design Guide" rev 1.1: every
//! millisecond of virtual time the controller takes the frame list entry for FRNUM, walks
//! the transfer descriptors (TDs) and queue heads (QHs) it links to — horizontally from
//! QH to QH, vertically down a QH's element list, depth first where a TD's link asks for
//! it — and runs each active TD as one token on the device with the TD's address. Done
//! TDs get their status and actual length written back; IOC, short packets and errors
//! raise USBINT / USBERRINT, which drive INTA# when USBINTR enables them.
//!
//! The root ports live in [`RootPorts`], shared with the EHCI function when the
//! controller is one of its companions (`Uhci::companion`): a port routed to EHCI looks
//! empty here.
//!
//! Hostile schedules: the work per frame is bounded ([`MAX_ELEMENTS_PER_FRAME`] list
//! elements and a QH visited once per frame), and missed frames are skipped, not
//! replayed, so a looping or enormous schedule costs a bounded amount per millisecond.

use std::any::Any;

use aero_storage::ide::GuestMemory;

use super::root_ports::{RootPort, RootPorts};
use super::{UsbDevice, UsbPid, UsbResponse, UsbSpeed, read_u32, write_u32};
use crate::devices::pci::{BarKind, ConfigSpace, PciFunction};
use crate::devices::pci_device::PciDevice;

pub const VENDOR_ID: u16 = 0x8086;
/// ICH9 UHCI functions #1 and #2.
pub const DEVICE_ID_UHCI1: u16 = 0x2934;
pub const DEVICE_ID_UHCI2: u16 = 0x2935;
pub const DEVICE_ID_UHCI3: u16 = 0x2936;
/// The register window in BAR4.
pub const IO_SIZE: u64 = 0x20;
pub const PORTS: usize = 2;
pub const FRAME_NS: u64 = 1_000_000;
/// List elements (TDs and QHs) looked at per frame, at most.
pub const MAX_ELEMENTS_PER_FRAME: usize = 1024;
/// Frames run in one call when the machine fell behind; older ones are skipped.
const MAX_FRAMES_PER_CALL: u64 = 4;
/// Largest TD data length (MaxLen 0x4FF + 1).
const MAX_TD_LENGTH: usize = 1280;

// Registers (offsets in the I/O window).
const USBCMD: u64 = 0x00;
const USBSTS: u64 = 0x02;
const USBINTR: u64 = 0x04;
const FRNUM: u64 = 0x06;
const FLBASEADD: u64 = 0x08;
const SOFMOD: u64 = 0x0C;
const PORTSC1: u64 = 0x10;

const CMD_RS: u16 = 1 << 0;
const CMD_HCRESET: u16 = 1 << 1;
const CMD_GRESET: u16 = 1 << 2;
const CMD_WRITABLE: u16 = 0xFF;

const STS_USBINT: u16 = 1 << 0;
const STS_USBERRINT: u16 = 1 << 1;
const STS_RESUME: u16 = 1 << 2;
const STS_HOST_ERROR: u16 = 1 << 3;
const STS_PROCESS_ERROR: u16 = 1 << 4;
const STS_HALTED: u16 = 1 << 5;

const INTR_TIMEOUT_CRC: u16 = 1 << 0;
const INTR_RESUME: u16 = 1 << 1;
const INTR_IOC: u16 = 1 << 2;
const INTR_SHORT_PACKET: u16 = 1 << 3;

const PORT_CONNECTED: u16 = 1 << 0;
const PORT_CONNECT_CHANGE: u16 = 1 << 1;
const PORT_ENABLED: u16 = 1 << 2;
const PORT_ENABLE_CHANGE: u16 = 1 << 3;
/// Line status: D+ (full-speed idle J) and D- (low-speed idle J).
const PORT_LINE_DPLUS: u16 = 1 << 4;
const PORT_LINE_DMINUS: u16 = 1 << 5;
const PORT_RESUME_DETECT: u16 = 1 << 6;
/// Always reads 1 (drivers count ports by it).
const PORT_ALWAYS_ONE: u16 = 1 << 7;
const PORT_LOW_SPEED: u16 = 1 << 8;
const PORT_RESET: u16 = 1 << 9;
const PORT_SUSPEND: u16 = 1 << 12;
/// Bits the driver writes as plain bits.
const PORT_WRITABLE: u16 = PORT_ENABLED | PORT_RESUME_DETECT | PORT_RESET | PORT_SUSPEND;

// Link pointers.
const LINK_TERMINATE: u32 = 1 << 0;
const LINK_QH: u32 = 1 << 1;
const LINK_DEPTH_FIRST: u32 = 1 << 2;
const LINK_ADDRESS: u32 = !0xF;

// TD control/status word.
const TD_ACTLEN: u32 = 0x7FF;
const TD_BITSTUFF: u32 = 1 << 17;
const TD_CRC_TIMEOUT: u32 = 1 << 18;
const TD_NAK: u32 = 1 << 19;
const TD_BABBLE: u32 = 1 << 20;
const TD_BUFFER_ERROR: u32 = 1 << 21;
const TD_STALLED: u32 = 1 << 22;
const TD_ACTIVE: u32 = 1 << 23;
const TD_IOC: u32 = 1 << 24;
const TD_ERROR_COUNT_SHIFT: u32 = 27;
const TD_SHORT_PACKET_DETECT: u32 = 1 << 29;
const TD_STATUS_BITS: u32 = 0xFF << 16;

const PID_SETUP: u8 = 0x2D;
const PID_IN: u8 = 0x69;
const PID_OUT: u8 = 0xE1;

/// This controller's state of one root port (the device is in [`RootPorts`]).
#[derive(Default)]
struct Port {
    /// PORTSC's stored bits (enable, change bits, reset, suspend, resume detect).
    status: u16,
    /// The shared port's generation last seen (see [`Uhci::sync_ports`]).
    seen_generation: u64,
}

impl Port {
    /// PORTSC, with `device` the one plugged in if the port is routed here.
    fn read(&self, device: Option<&dyn UsbDevice>) -> u16 {
        let mut value = self.status | PORT_ALWAYS_ONE;
        if let Some(device) = device {
            value |= PORT_CONNECTED;
            if self.status & PORT_RESET == 0 {
                value |= match device.speed() {
                    UsbSpeed::Low => PORT_LINE_DMINUS,
                    _ => PORT_LINE_DPLUS,
                };
            }
            if device.speed() == UsbSpeed::Low {
                value |= PORT_LOW_SPEED;
            }
        }
        value
    }
}

/// What running one TD did.
enum TdOutcome {
    /// Completed (data moved, possibly short): the queue advances unless `stop_queue`.
    Done { stop_queue: bool },
    /// NAK, stall or error: the queue stays where it is.
    NotDone,
}

/// An ICH9 UHCI controller (see the module documentation).
pub struct Uhci {
    config: ConfigSpace,
    command: u16,
    status: u16,
    interrupt_enable: u16,
    frame_number: u16,
    frame_list_base: u32,
    sof_modify: u8,
    ports: [Port; PORTS],
    /// The devices: ours are `root[first_port..first_port + PORTS]`.
    root: RootPorts,
    first_port: usize,
    /// `root.changes()` when the ports were last synchronised.
    seen_changes: u64,
    /// IOC and short-packet interrupts waiting for USBINT to be cleared.
    ioc_pending: bool,
    short_packet_pending: bool,
    now_ns: u64,
    /// While running: virtual time of the next frame.
    next_frame_ns: u64,
    /// Scratch kept between frames so walking the schedule allocates nothing: the QHs
    /// seen this frame and one TD's data.
    visited_qhs: Vec<u32>,
    td_buffer: Vec<u8>,
}

impl Uhci {
    /// `device_id`: [`DEVICE_ID_UHCI1`] or [`DEVICE_ID_UHCI2`]; `pin`: its INTx pin (ICH9
    /// gives uhci1 INTA#, uhci2 INTB#); `multifunction` for function 0 of a slot with more.
    pub fn new(device_id: u16, pin: u8, multifunction: bool) -> Uhci {
        Uhci::companion(device_id, pin, multifunction, RootPorts::new(PORTS), 0)
    }

    /// A companion of an EHCI function: its two ports are `root`'s `first_port` and the
    /// next, shown here while EHCI routes them to the companion.
    pub fn companion(
        device_id: u16,
        pin: u8,
        multifunction: bool,
        root: RootPorts,
        first_port: usize,
    ) -> Uhci {
        let header = if multifunction { 0x80 } else { 0x00 };
        let mut config = ConfigSpace::new(VENDOR_ID, device_id, 0x0C_03_00, 0x03, header);
        config.set_bar(4, BarKind::Io, IO_SIZE);
        config.set_interrupt_pin(pin);
        config.set_subsystem(0x1AF4, 0x1100);
        // Serial bus release number: USB 1.0.
        config.set_u8(0x60, 0x10);
        // USBLEGSUP: legacy (SMI) emulation off, PIRQ enabled; drivers write it.
        config.set_u16(0xC0, 0x2000);
        config.set_writable_u16(0xC0, 0xBFFF);
        Uhci {
            config,
            command: 0,
            status: STS_HALTED,
            interrupt_enable: 0,
            frame_number: 0,
            frame_list_base: 0,
            sof_modify: 64,
            ports: Default::default(),
            root,
            first_port,
            seen_changes: 0,
            ioc_pending: false,
            short_packet_pending: false,
            now_ns: 0,
            next_frame_ns: 0,
            visited_qhs: Vec::new(),
            td_buffer: vec![0; MAX_TD_LENGTH],
        }
    }

    /// The shared root ports (host input finds its devices there).
    pub fn root_ports(&self) -> RootPorts {
        self.root.clone()
    }

    /// Takes in plugs, pulls and routing changes on our ports: each shows as a connect
    /// change (and a disabled port, since the device seen before is gone), as on a real
    /// unplug and replug; a connect wakes a suspended controller.
    fn sync_ports(&mut self) {
        let changes = self.root.changes();
        if changes == self.seen_changes {
            return;
        }
        self.seen_changes = changes;
        let mut connected = false;
        {
            let root = self.root.lock();
            for (port, shared) in self.ports.iter_mut().zip(root.iter().skip(self.first_port)) {
                if shared.generation == port.seen_generation {
                    continue;
                }
                port.seen_generation = shared.generation;
                let enable_change = if port.status & PORT_ENABLED != 0 {
                    PORT_ENABLE_CHANGE
                } else {
                    0
                };
                port.status = enable_change | PORT_CONNECT_CHANGE;
                connected |= shared.companion_owned && shared.device.is_some();
            }
        }
        if connected {
            self.signal_resume();
        }
    }

    /// Calls `f` with each of our ports and the shared port behind it (the device only if
    /// the port is routed to us).
    fn with_ports<R>(
        &mut self,
        mut f: impl FnMut(&mut Port, Option<&mut Box<dyn UsbDevice>>) -> Option<R>,
    ) -> Option<R> {
        let mut root = self.root.lock();
        let shared = root.iter_mut().skip(self.first_port);
        self.ports
            .iter_mut()
            .zip(shared)
            .find_map(|(port, shared): (&mut Port, &mut RootPort)| f(port, shared.device_for(true)))
    }

    /// Calls `f` with our port `index` and its device (if routed to us).
    fn with_port<R>(
        &mut self,
        index: usize,
        f: impl FnOnce(&mut Port, Option<&mut Box<dyn UsbDevice>>) -> R,
    ) -> Option<R> {
        let mut root = self.root.lock();
        let shared = root.get_mut(self.first_port.checked_add(index)?)?;
        Some(f(self.ports.get_mut(index)?, shared.device_for(true)))
    }

    /// A suspended controller wakes on a connect (resume detect).
    fn signal_resume(&mut self) {
        if self.command & (1 << 3) != 0 {
            self.status |= STS_RESUME;
        }
    }

    fn running(&self) -> bool {
        self.command & CMD_RS != 0
    }

    /// HCRESET: registers to defaults, ports disabled (devices stay connected).
    fn reset_controller(&mut self) {
        self.command = 0;
        self.status = STS_HALTED;
        self.interrupt_enable = 0;
        self.frame_number = 0;
        self.frame_list_base = 0;
        self.sof_modify = 64;
        self.ioc_pending = false;
        self.short_packet_pending = false;
        self.with_ports(|port, device| {
            port.status = if device.is_some() {
                PORT_CONNECT_CHANGE
            } else {
                0
            };
            if let Some(device) = device {
                device.reset();
            }
            None::<()>
        });
    }

    fn register_read(&mut self, offset: u64, size: u8) -> u32 {
        let value = match offset {
            USBCMD => u32::from(self.command),
            USBSTS => u32::from(self.status),
            USBINTR => u32::from(self.interrupt_enable),
            FRNUM => u32::from(self.frame_number),
            FLBASEADD => self.frame_list_base,
            SOFMOD => u32::from(self.sof_modify),
            o @ (PORTSC1 | 0x12) => {
                let index = ((o - PORTSC1) / 2) as usize;
                let value = self.with_port(index, |port, device| {
                    port.read(device.map(|d| &**d as &dyn UsbDevice))
                });
                u32::from(value.unwrap_or(PORT_ALWAYS_ONE))
            }
            // Beyond the two ports: bit 7 clear, so drivers stop counting ports here.
            _ => 0,
        };
        // A dword read at USBCMD/USBINTR/PORTSC1 also sees the next register.
        if size == 4 && matches!(offset, USBCMD | USBINTR | PORTSC1) {
            return value | self.register_read(offset + 2, 2) << 16;
        }
        value
    }

    fn register_write(&mut self, offset: u64, size: u8, value: u32) {
        if size == 4 && matches!(offset, USBCMD | USBINTR | PORTSC1) {
            self.register_write(offset, 2, value & 0xFFFF);
            self.register_write(offset + 2, 2, value >> 16);
            return;
        }
        let value16 = value as u16;
        match offset {
            USBCMD => self.command_write(value16),
            USBSTS => {
                self.status &= !(value16 & 0x1F);
                if value16 & STS_USBINT != 0 {
                    self.ioc_pending = false;
                    self.short_packet_pending = false;
                }
            }
            USBINTR => self.interrupt_enable = value16 & 0xF,
            // Writable only while halted.
            FRNUM if !self.running() => self.frame_number = value16 & 0x7FF,
            FLBASEADD if size == 4 => self.frame_list_base = value & !0xFFF,
            SOFMOD => self.sof_modify = value as u8 & 0x7F,
            o @ (PORTSC1 | 0x12) => self.port_write(((o - PORTSC1) / 2) as usize, value16),
            _ => {}
        }
    }

    fn command_write(&mut self, value: u16) {
        if value & CMD_HCRESET != 0 {
            self.reset_controller();
            return;
        }
        let was_running = self.running();
        // Global reset: the bus is reset while the bit is set; devices return to address 0.
        if value & CMD_GRESET != 0 {
            self.with_ports(|port, device| {
                if let Some(device) = device {
                    device.reset();
                }
                port.status &= !(PORT_ENABLED | PORT_SUSPEND);
                None::<()>
            });
        }
        self.command = value & CMD_WRITABLE;
        if self.running() {
            self.status &= !STS_HALTED;
            if !was_running {
                self.next_frame_ns = self.now_ns.saturating_add(FRAME_NS);
            }
        } else {
            self.status |= STS_HALTED;
        }
    }

    fn port_write(&mut self, index: usize, value: u16) {
        self.with_port(index, |port, device| {
            let old = port.status;
            // Change bits are write-one-to-clear.
            let mut status = old & !(value & (PORT_CONNECT_CHANGE | PORT_ENABLE_CHANGE));
            status = (status & !PORT_WRITABLE) | (value & PORT_WRITABLE);
            if device.is_none() {
                status &= !PORT_ENABLED;
            }
            // Reset asserted: the device is reset and the port disabled while it lasts.
            if status & PORT_RESET != 0 {
                if old & PORT_RESET == 0
                    && let Some(device) = device
                {
                    device.reset();
                }
                status &= !PORT_ENABLED;
            }
            port.status = status;
        });
    }

    fn irq_asserted(&self) -> bool {
        let e = self.interrupt_enable;
        (self.ioc_pending && e & INTR_IOC != 0)
            || (self.short_packet_pending && e & INTR_SHORT_PACKET != 0)
            || (self.status & STS_USBERRINT != 0 && e & INTR_TIMEOUT_CRC != 0)
            || (self.status & STS_RESUME != 0 && e & INTR_RESUME != 0)
            || self.status & (STS_HOST_ERROR | STS_PROCESS_ERROR) != 0
    }

    /// Runs the frames due by `now_ns` (at most [`MAX_FRAMES_PER_CALL`]; older ones are
    /// skipped, FRNUM still counting them).
    fn run_frames(&mut self, ram: &mut dyn GuestMemory, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        self.sync_ports();
        if !self.running() || self.now_ns < self.next_frame_ns {
            return;
        }
        let due = (self.now_ns - self.next_frame_ns) / FRAME_NS + 1;
        let skipped = due.saturating_sub(MAX_FRAMES_PER_CALL);
        self.frame_number = (u64::from(self.frame_number) + skipped) as u16 & 0x7FF;
        for _ in 0..due.min(MAX_FRAMES_PER_CALL) {
            self.run_frame(ram);
            self.frame_number = (self.frame_number + 1) & 0x7FF;
            if !self.running() {
                break;
            }
        }
        self.next_frame_ns = self
            .next_frame_ns
            .saturating_add(due.saturating_mul(FRAME_NS));
    }

    /// Walks one frame's schedule.
    fn run_frame(&mut self, ram: &mut dyn GuestMemory) {
        let entry = u64::from(self.frame_list_base) + u64::from(self.frame_number & 0x3FF) * 4;
        let Some(link) = read_u32(ram, entry) else {
            self.host_system_error();
            return;
        };
        let mut visited_qhs = std::mem::take(&mut self.visited_qhs);
        visited_qhs.clear();
        self.walk_frame(ram, link, &mut visited_qhs);
        self.visited_qhs = visited_qhs;
    }

    /// Follows the schedule from the frame list entry `link`.
    fn walk_frame(&mut self, ram: &mut dyn GuestMemory, mut link: u32, visited_qhs: &mut Vec<u32>) {
        let mut elements = 0usize;
        while link & LINK_TERMINATE == 0 && elements < MAX_ELEMENTS_PER_FRAME {
            elements += 1;
            let address = link & LINK_ADDRESS;
            if link & LINK_QH == 0 {
                // A TD straight in the horizontal list: run it and move on whatever it did.
                let Some(td) = Td::read(ram, address) else {
                    self.host_system_error();
                    return;
                };
                if td.status & TD_ACTIVE != 0 {
                    self.run_td(ram, address, td);
                }
                link = td.link;
                continue;
            }
            // Each QH once per frame: a schedule that loops back (Linux's full-speed
            // bandwidth reclamation does on purpose) ends the frame there.
            if visited_qhs.contains(&address) {
                break;
            }
            visited_qhs.push(address);
            let (Some(head), Some(mut element)) = (
                read_u32(ram, u64::from(address)),
                read_u32(ram, u64::from(address) + 4),
            ) else {
                self.host_system_error();
                return;
            };
            // Down the queue while TDs complete and ask for depth first.
            while element & (LINK_TERMINATE | LINK_QH) == 0 && elements < MAX_ELEMENTS_PER_FRAME {
                elements += 1;
                let td_address = element & LINK_ADDRESS;
                let Some(td) = Td::read(ram, td_address) else {
                    self.host_system_error();
                    return;
                };
                if td.status & TD_ACTIVE == 0 {
                    break;
                }
                match self.run_td(ram, td_address, td) {
                    TdOutcome::Done { stop_queue } => {
                        if stop_queue {
                            break;
                        }
                        element = td.link;
                        if write_u32(ram, u64::from(address) + 4, element).is_none() {
                            self.host_system_error();
                            return;
                        }
                        if td.link & LINK_DEPTH_FIRST == 0 {
                            break;
                        }
                    }
                    TdOutcome::NotDone => break,
                }
            }
            link = head;
        }
    }

    /// One token to the device answering to `address` on an enabled port; None when no
    /// device answers.
    fn token_to(
        &mut self,
        address: u8,
        pid: UsbPid,
        endpoint: u8,
        data: &mut [u8],
    ) -> Option<UsbResponse> {
        self.with_ports(|port, device| {
            let device = device?;
            (port.status & (PORT_ENABLED | PORT_RESET | PORT_SUSPEND) == PORT_ENABLED
                && device.address() == address)
                .then(|| device.handle_token(pid, endpoint, data))
        })
    }

    /// Runs one active TD and writes its status back.
    fn run_td(&mut self, ram: &mut dyn GuestMemory, td_address: u32, td: Td) -> TdOutcome {
        let max_len = ((td.token >> 21) + 1) as usize & 0x7FF;
        let pid = match td.token as u8 {
            PID_SETUP => Some(UsbPid::Setup),
            PID_IN => Some(UsbPid::In),
            PID_OUT => Some(UsbPid::Out),
            _ => None,
        };
        let Some(pid) = pid.filter(|_| max_len <= MAX_TD_LENGTH) else {
            // Not a token this controller sends: the schedule is broken.
            self.status |= STS_PROCESS_ERROR;
            self.command &= !CMD_RS;
            self.status |= STS_HALTED;
            return TdOutcome::NotDone;
        };
        let mut scratch = std::mem::take(&mut self.td_buffer);
        let outcome = self.run_td_with(ram, td_address, td, pid, &mut scratch[..max_len]);
        self.td_buffer = scratch;
        outcome
    }

    /// [`Uhci::run_td`] past decoding: `buffer` is the TD's MaxLen bytes of scratch.
    fn run_td_with(
        &mut self,
        ram: &mut dyn GuestMemory,
        td_address: u32,
        td: Td,
        pid: UsbPid,
        buffer: &mut [u8],
    ) -> TdOutcome {
        let max_len = buffer.len();
        let device_address = (td.token >> 8 & 0x7F) as u8;
        let endpoint = (td.token >> 15 & 0xF) as u8;
        let mut status = td.status & !(TD_STATUS_BITS | TD_ACTLEN);
        if pid == UsbPid::In {
            buffer.fill(0);
        } else if ram.read(u64::from(td.buffer), buffer).is_err() {
            self.host_system_error();
            return TdOutcome::NotDone;
        }
        let response = match self.token_to(device_address, pid, endpoint, buffer) {
            Some(response) => response,
            None => {
                // Nobody answers: a timeout, retired at once (error counter to zero).
                let failed = status | TD_CRC_TIMEOUT | TD_ACTLEN;
                return self.td_failed(ram, td_address, td, failed & !(3 << TD_ERROR_COUNT_SHIFT));
            }
        };
        match response {
            UsbResponse::Nak => {
                status |= TD_ACTIVE | TD_NAK | TD_ACTLEN;
                if write_u32(ram, u64::from(td_address) + 4, status).is_none() {
                    self.host_system_error();
                }
                TdOutcome::NotDone
            }
            UsbResponse::Stall => {
                self.td_failed(ram, td_address, td, status | TD_STALLED | TD_ACTLEN)
            }
            UsbResponse::Ack(n) => {
                let n = n.min(max_len);
                if pid == UsbPid::In
                    && n > 0
                    && ram.write(u64::from(td.buffer), &buffer[..n]).is_err()
                {
                    self.host_system_error();
                    return TdOutcome::NotDone;
                }
                status |= (n as u32).wrapping_sub(1) & TD_ACTLEN;
                if write_u32(ram, u64::from(td_address) + 4, status).is_none() {
                    self.host_system_error();
                    return TdOutcome::NotDone;
                }
                if td.status & TD_IOC != 0 {
                    self.ioc_pending = true;
                    self.status |= STS_USBINT;
                }
                let short = pid == UsbPid::In && n < max_len;
                let stop_queue = short && td.status & TD_SHORT_PACKET_DETECT != 0;
                if stop_queue {
                    self.short_packet_pending = true;
                    self.status |= STS_USBINT;
                }
                TdOutcome::Done { stop_queue }
            }
        }
    }

    /// A TD retired with an error: status written, USBERRINT raised.
    fn td_failed(
        &mut self,
        ram: &mut dyn GuestMemory,
        td_address: u32,
        td: Td,
        status: u32,
    ) -> TdOutcome {
        if write_u32(ram, u64::from(td_address) + 4, status & !TD_ACTIVE).is_none() {
            self.host_system_error();
            return TdOutcome::NotDone;
        }
        self.status |= STS_USBERRINT;
        if td.status & TD_IOC != 0 {
            self.ioc_pending = true;
            self.status |= STS_USBINT;
        }
        TdOutcome::NotDone
    }

    /// A schedule pointer outside RAM: the controller stops, as on a PCI master abort.
    fn host_system_error(&mut self) {
        tracing::debug!(
            frame = self.frame_number,
            "UHCI: schedule outside RAM, halting"
        );
        self.status |= STS_HOST_ERROR | STS_HALTED;
        self.command &= !CMD_RS;
    }
}

/// The three words of a TD the controller reads (the fourth is the driver's).
#[derive(Clone, Copy, Debug)]
struct Td {
    link: u32,
    status: u32,
    token: u32,
    buffer: u32,
}

impl Td {
    fn read(ram: &mut dyn GuestMemory, address: u32) -> Option<Td> {
        let mut b = [0u8; 16];
        ram.read(u64::from(address), &mut b).ok()?;
        let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Some(Td {
            link: word(0),
            status: word(4),
            token: word(8),
            buffer: word(12),
        })
    }
}

impl PciFunction for Uhci {
    fn config(&self) -> &ConfigSpace {
        &self.config
    }
    fn config_mut(&mut self) -> &mut ConfigSpace {
        &mut self.config
    }
}

impl PciDevice for Uhci {
    fn bar_read(&mut self, bar: usize, offset: u64, size: u8) -> u64 {
        if bar != 4 {
            return u64::MAX;
        }
        self.sync_ports();
        // Byte reads of the high half of a 16-bit register.
        let value = if offset & 1 != 0 {
            self.register_read(offset & !1, 2) >> 8
        } else {
            self.register_read(offset, size)
        };
        u64::from(value) & crate::devices::size_mask(size.min(4))
    }

    fn bar_write(&mut self, bar: usize, offset: u64, size: u8, value: u64) {
        if bar != 4 {
            return;
        }
        self.sync_ports();
        if offset == SOFMOD || size >= 2 || offset & 1 != 0 {
            if offset & 1 == 0 {
                self.register_write(offset, size.min(4), value as u32);
            }
            return;
        }
        // A byte write to the low half of a 16-bit register keeps the high half.
        let old = self.register_read(offset, 2);
        self.register_write(offset, 2, (old & 0xFF00) | (value as u32 & 0xFF));
    }

    fn irq_level(&self) -> bool {
        self.irq_asserted()
    }

    fn dma_pending(&self) -> bool {
        self.running() && self.now_ns >= self.next_frame_ns
    }

    fn run_dma(&mut self, ram: &mut dyn GuestMemory, now_ns: u64) {
        self.run_frames(ram, now_ns);
    }

    fn advance(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        self.sync_ports();
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        self.running().then_some(self.next_frame_ns)
    }

    fn reset(&mut self) {
        self.reset_controller();
        self.config.set_u16(0xC0, 0x2000);
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn Any> {
        Some(self)
    }
}

#[cfg(test)]
#[path = "uhci_tests.rs"]
mod tests;
