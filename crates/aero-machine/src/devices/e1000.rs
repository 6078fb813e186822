//! Intel 82540EM Gigabit Ethernet controller (8086:100E), the NIC of QEMU's `e1000` and
//! VirtualBox's default for Windows 7 guests. Linux's `e1000` and Windows 7's inbox
//! `e1g60` drive it.
//!
//! From Intel's "PCI/PCI-X Family of Gigabit Ethernet Controllers Software Developer's
//! Manual" (8254x): BAR0 is the 128 KiB register file, BAR1 an I/O window onto it
//! (IOADDR/IODATA). Modelled: the 93C46 Microwire EEPROM (bit-banged through EECD as
//! Linux reads it, and EERD), the M88E1011 PHY behind MDIC (link up at 1000 Mb/s full
//! duplex, autonegotiation completes at once), CTRL/STATUS, receive and transmit rings
//! (legacy descriptors, context + data descriptors with IP/TCP/UDP checksum insertion
//! and TCP segmentation), receive address/multicast filtering, the interrupt cause/mask
//! registers, link-change interrupts and interrupt moderation as Linux's `e1000` and
//! Windows' inbox driver program it: the receive packet and absolute delay timers
//! (RDTR/RADV, with RDTR's flush bit), the transmit ones for descriptors asking for a
//! delayed interrupt (TIDV/TADV, IDE), and ITR's minimum interval between interrupts.
//! All timers run on the machine's clock (`now_ns`), so deterministic runs stay exact.
//!
//! Guest values are bounded: ring lengths come from 20-bit registers, a packet being
//! assembled is capped at 64 KiB plus headers, received frames wait in a queue of at most
//! [`RX_QUEUE_LIMIT`] frames, and descriptor or buffer addresses outside RAM only drop the
//! frame.

use std::collections::VecDeque;

use aero_storage::ide::GuestMemory;

use super::pci::{BarKind, ConfigSpace, PciFunction};
use super::pci_device::PciDevice;
use crate::net::NetBackend;

pub const VENDOR_ID: u16 = 0x8086;
pub const DEVICE_ID: u16 = 0x100E;
/// Register file (BAR0) and I/O window (BAR1) sizes.
pub const MMIO_SIZE: u64 = 0x2_0000;
pub const IO_SIZE: u64 = 0x40;
/// QEMU's default MAC address.
pub const DEFAULT_MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];
/// Received frames waiting for descriptors, at most.
pub const RX_QUEUE_LIMIT: usize = 256;

// Register offsets (dword index = offset / 4).
const CTRL: u32 = 0x0000;
const STATUS: u32 = 0x0008;
const EECD: u32 = 0x0010;
const EERD: u32 = 0x0014;
const MDIC: u32 = 0x0020;
const ICR: u32 = 0x00C0;
const ITR: u32 = 0x00C4;
const ICS: u32 = 0x00C8;
const IMS: u32 = 0x00D0;
const IMC: u32 = 0x00D8;
const RCTL: u32 = 0x0100;
const TCTL: u32 = 0x0400;
const PBA: u32 = 0x1000;
const RDBAL: u32 = 0x2800;
const RDBAH: u32 = 0x2804;
const RDLEN: u32 = 0x2808;
const RDH: u32 = 0x2810;
const RDT: u32 = 0x2818;
/// Receive packet timer (1.024 µs units; bit 31 flushes a pending delay).
const RDTR: u32 = 0x2820;
/// Receive absolute delay timer (1.024 µs units).
const RADV: u32 = 0x282C;
const TDBAL: u32 = 0x3800;
const TDBAH: u32 = 0x3804;
const TDLEN: u32 = 0x3808;
const TDH: u32 = 0x3810;
const TDT: u32 = 0x3818;
/// Transmit interrupt delay and its absolute cap (1.024 µs units).
const TIDV: u32 = 0x3820;
const TADV: u32 = 0x382C;
/// Statistics registers, clear on read.
const STATS: std::ops::Range<u32> = 0x4000..0x4100;
const GPRC: u32 = 0x4074;
const GPTC: u32 = 0x4080;
const TPR: u32 = 0x40D0;
const TPT: u32 = 0x40D4;
const MTA: u32 = 0x5200;
const RA: u32 = 0x5400;

const CTRL_SLU: u32 = 1 << 6;
const CTRL_RST: u32 = 1 << 26;
const CTRL_PHY_RST: u32 = 1 << 31;
const STATUS_FD: u32 = 1 << 0;
const STATUS_LU: u32 = 1 << 1;
const STATUS_SPEED_1000: u32 = 1 << 7;

const EECD_SK: u32 = 1 << 0;
const EECD_CS: u32 = 1 << 1;
const EECD_DI: u32 = 1 << 2;
const EECD_DO: u32 = 1 << 3;
const EECD_REQ: u32 = 1 << 6;
const EECD_GNT: u32 = 1 << 7;
const EECD_PRES: u32 = 1 << 8;
/// Bits the driver owns (SK, CS, DI, flash write enable, request).
const EECD_WRITABLE: u32 = EECD_SK | EECD_CS | EECD_DI | 0x30 | EECD_REQ;
const EERD_START: u32 = 1 << 0;
const EERD_DONE: u32 = 1 << 4;
/// Microwire READ opcode (with its start bit): 1 10.
const EEPROM_READ_OPCODE: u32 = 0b110;
const EEPROM_WORDS: usize = 64;
/// The EEPROM's words add up to this (Intel's checksum rule).
const EEPROM_SUM: u16 = 0xBABA;

const MDIC_OP_WRITE: u32 = 1 << 26;
const MDIC_OP_READ: u32 = 2 << 26;
const MDIC_READY: u32 = 1 << 28;
const MDIC_ERROR: u32 = 1 << 30;
const PHY_ADDRESS: u32 = 1;

pub const ICR_TXDW: u32 = 1 << 0;
pub const ICR_TXQE: u32 = 1 << 1;
pub const ICR_LSC: u32 = 1 << 2;
pub const ICR_RXDMT0: u32 = 1 << 4;
pub const ICR_RXO: u32 = 1 << 6;
pub const ICR_RXT0: u32 = 1 << 7;
pub const ICR_MDAC: u32 = 1 << 9;

const RCTL_EN: u32 = 1 << 1;
const RCTL_UPE: u32 = 1 << 3;
const RCTL_MPE: u32 = 1 << 4;
const RCTL_BAM: u32 = 1 << 15;
const RCTL_BSEX: u32 = 1 << 25;
const RCTL_SECRC: u32 = 1 << 26;
const TCTL_EN: u32 = 1 << 1;

// Descriptor bits.
const TXD_CMD_EOP: u8 = 1 << 0;
const TXD_CMD_RS: u8 = 1 << 3;
const TXD_CMD_DEXT: u8 = 1 << 5;
const TXD_CMD_TSE: u8 = 1 << 2;
/// Interrupt delay enable: this descriptor's TXDW waits for TIDV/TADV.
const TXD_CMD_IDE: u8 = 1 << 7;
const TXD_STA_DD: u8 = 1 << 0;
const TXD_POPTS_IXSM: u8 = 1 << 0;
const TXD_POPTS_TXSM: u8 = 1 << 1;
const TUCMD_TCP: u8 = 1 << 0;
const TUCMD_IP: u8 = 1 << 1;
const RXD_STA_DD: u8 = 1 << 0;
const RXD_STA_EOP: u8 = 1 << 1;
/// "Ignore checksum indication": no receive checksum offload.
const RXD_STA_IXSM: u8 = 1 << 2;

/// Largest packet assembled from transmit descriptors (TSO payload plus headers).
const TX_PACKET_LIMIT: usize = 0x1_0000 + 256;
/// Descriptors handled per `run_dma` call in each direction, so a guest cannot keep the
/// machine in one call forever.
const DESCRIPTORS_PER_CALL: usize = 4096;
/// Frame bytes sent per `run_dma` call, at most (finishing the packet under way).
const TX_BYTES_PER_CALL: usize = 4 << 20;
/// Smallest TSO segment size taken: a guest asking for 1-byte segments of 64 KiB would
/// have the machine build 65536 frames for one packet.
const MIN_MSS: usize = 64;
/// One ITR unit.
const ITR_UNIT_NS: u64 = 256;
/// One RDTR/RADV/TIDV/TADV unit (1.024 µs).
const DELAY_UNIT_NS: u64 = 1024;
/// RDTR/TIDV bit 31: flush partial descriptor block (fire the pending delay now).
const DELAY_FLUSH: u32 = 1 << 31;

/// A delayed interrupt cause: the packet timer restarts with every packet, the absolute
/// timer runs from the first one, whichever expires first raises the cause.
#[derive(Clone, Copy, Debug, Default)]
struct DelayTimers {
    packet_at: Option<u64>,
    absolute_at: Option<u64>,
}

impl DelayTimers {
    /// A packet completed at `now` under `delay`/`absolute` (register units); whether the
    /// cause is due at once (no delay programmed).
    fn packet(&mut self, now: u64, delay: u32, absolute: u32) -> bool {
        let delay = u64::from(delay & 0xFFFF);
        if delay == 0 {
            *self = DelayTimers::default();
            return true;
        }
        self.packet_at = Some(now.saturating_add(delay * DELAY_UNIT_NS));
        let absolute = u64::from(absolute & 0xFFFF);
        if self.absolute_at.is_none() && absolute != 0 {
            self.absolute_at = Some(now.saturating_add(absolute * DELAY_UNIT_NS));
        }
        false
    }

    fn deadline(&self) -> Option<u64> {
        match (self.packet_at, self.absolute_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether a timer expired by `now` (both stop).
    fn expired(&mut self, now: u64) -> bool {
        let due = self.deadline().is_some_and(|at| at <= now);
        if due {
            *self = DelayTimers::default();
        }
        due
    }

    /// Stops the timers; whether one was running (the cause is due).
    fn flush(&mut self) -> bool {
        let running = self.deadline().is_some();
        *self = DelayTimers::default();
        running
    }
}

/// Where the Microwire EEPROM's serial interface is.
#[derive(Clone, Copy, Debug, Default)]
struct EepromWire {
    /// Bits clocked in since chip select (opcode and address).
    bits_in: u32,
    value_in: u32,
    /// While reading: the bit position in the EEPROM (word * 16 + bit), output on DO.
    out_position: Option<u32>,
    last_eecd: u32,
}

/// The transmit context (from a context descriptor).
#[derive(Clone, Copy, Debug, Default)]
struct TxContext {
    ipcss: usize,
    ipcso: usize,
    ipcse: usize,
    tucss: usize,
    tucso: usize,
    tucse: usize,
    tucmd: u8,
    mss: usize,
    hdr_len: usize,
}

/// The packet being gathered from data descriptors.
#[derive(Clone, Debug, Default)]
struct TxPacket {
    data: Vec<u8>,
    /// Checksum options of its first data descriptor.
    popts: u8,
    tse: bool,
    /// Too large or unreadable: dropped at end of packet.
    broken: bool,
}

pub struct E1000 {
    config: ConfigSpace,
    mac: [u8; 6],
    /// The register file, one dword per 4 bytes of BAR0.
    regs: Vec<u32>,
    eeprom: [u16; EEPROM_WORDS],
    wire: EepromWire,
    phy: [u16; 32],
    link_up: bool,
    /// BAR1's address latch.
    io_address: u32,
    context: TxContext,
    packet: TxPacket,
    rx_queue: VecDeque<Vec<u8>>,
    backend: Box<dyn NetBackend>,
    now_ns: u64,
    /// Bytes sent in the current `run_dma` call (see [`TX_BYTES_PER_CALL`]).
    tx_bytes_this_call: usize,
    /// The INTx output: asserted when an unmasked cause is set (and ITR allows it),
    /// deasserted when none is left.
    line: bool,
    /// ITR: the next assertion happens at this time at the earliest.
    next_assert_ns: u64,
    /// RXT0 delayed by RDTR/RADV.
    rx_delay: DelayTimers,
    /// TXDW delayed by TIDV/TADV.
    tx_delay: DelayTimers,
}

impl E1000 {
    pub fn new(mac: [u8; 6], backend: Box<dyn NetBackend>) -> E1000 {
        let mut config = ConfigSpace::new(VENDOR_ID, DEVICE_ID, 0x02_00_00, 0x03, 0x00);
        config.set_bar(
            0,
            BarKind::Memory32 {
                prefetchable: false,
            },
            MMIO_SIZE,
        );
        config.set_bar(1, BarKind::Io, IO_SIZE);
        config.set_interrupt_pin(1);
        // Intel PRO/1000 MT Desktop Adapter.
        config.set_subsystem(0x8086, 0x001E);
        let mut nic = E1000 {
            config,
            mac,
            regs: vec![0; (MMIO_SIZE / 4) as usize],
            eeprom: eeprom_image(mac),
            wire: EepromWire::default(),
            phy: [0; 32],
            link_up: true,
            io_address: 0,
            context: TxContext::default(),
            packet: TxPacket::default(),
            rx_queue: VecDeque::new(),
            backend,
            now_ns: 0,
            tx_bytes_this_call: 0,
            line: false,
            next_assert_ns: 0,
            rx_delay: DelayTimers::default(),
            tx_delay: DelayTimers::default(),
        };
        nic.reset_registers();
        nic
    }

    /// Power-on / CTRL.RST state of the registers (the PCI side is kept).
    fn reset_registers(&mut self) {
        self.regs.fill(0);
        self.regs[reg(CTRL)] = CTRL_SLU | (1 << 3); // link up, ASDE-less full duplex default
        self.regs[reg(PBA)] = 0x0010_0030;
        self.regs[reg(EECD)] = EECD_PRES;
        // The EEPROM's MAC address is loaded into receive address 0.
        let m = self.mac;
        self.regs[reg(RA)] = u32::from_le_bytes([m[0], m[1], m[2], m[3]]);
        self.regs[reg(RA) + 1] = u32::from(u16::from_le_bytes([m[4], m[5]])) | 1 << 31;
        self.phy = phy_defaults();
        self.wire = EepromWire::default();
        self.context = TxContext::default();
        self.packet = TxPacket::default();
        self.line = false;
        self.next_assert_ns = 0;
        self.rx_delay = DelayTimers::default();
        self.tx_delay = DelayTimers::default();
        self.update_status();
    }

    /// Plugs or unplugs the cable: STATUS.LU and the PHY follow, and the guest gets a
    /// link-status-change interrupt.
    pub fn set_link(&mut self, up: bool) {
        if up != self.link_up {
            self.link_up = up;
            self.update_status();
            self.raise(ICR_LSC);
        }
    }

    fn update_status(&mut self) {
        let link = self.link_up && self.regs[reg(CTRL)] & CTRL_SLU != 0;
        let mut status = self.regs[reg(STATUS)] & !(STATUS_LU | STATUS_FD | 0xC0);
        if link {
            status |= STATUS_LU | STATUS_FD | STATUS_SPEED_1000;
        }
        self.regs[reg(STATUS)] = status;
        let bmsr = self.phy[1] & !((1 << 2) | (1 << 5));
        self.phy[1] = if self.link_up {
            bmsr | (1 << 2) | (1 << 5)
        } else {
            bmsr
        };
        // M88 PHY specific status: 1000 Mb/s, full duplex, resolved, link.
        self.phy[17] = if self.link_up { 0xAC00 } else { 0x0000 };
    }

    /// Sets interrupt causes.
    fn raise(&mut self, causes: u32) {
        self.regs[reg(ICR)] |= causes;
        self.update_line();
    }

    /// Follows the causes with the INTx output: it drops when no unmasked cause is left
    /// and rises again no sooner than ITR × 256 ns after it last rose (ITR's minimum
    /// interval between interrupts; causes set meanwhile wait).
    fn update_line(&mut self) {
        if self.interrupt_causes() == 0 {
            self.line = false;
        } else if !self.line && self.now_ns >= self.next_assert_ns {
            self.line = true;
            let itr = u64::from(self.regs[reg(ITR)] & 0xFFFF);
            self.next_assert_ns = self.now_ns.saturating_add(itr * ITR_UNIT_NS);
        }
    }

    /// Raises the delayed causes whose timers expired by now.
    fn run_delay_timers(&mut self) {
        if self.rx_delay.expired(self.now_ns) {
            self.raise(ICR_RXT0);
        }
        if self.tx_delay.expired(self.now_ns) {
            self.raise(ICR_TXDW);
        }
        self.update_line();
    }

    fn interrupt_causes(&self) -> u32 {
        self.regs[reg(ICR)] & self.regs[reg(IMS)]
    }

    fn register_read(&mut self, offset: u32) -> u32 {
        let offset = offset & !3;
        let Some(&value) = self.regs.get(reg(offset)) else {
            return 0;
        };
        match offset {
            ICR => {
                // Read-to-clear.
                self.regs[reg(ICR)] = 0;
                self.update_line();
                value
            }
            EECD => {
                let out = match self.wire.out_position {
                    Some(position) if value & EECD_CS != 0 => self.eeprom_bit(position),
                    _ => false,
                };
                (value & !EECD_DO) | if out { EECD_DO } else { 0 }
            }
            o if STATS.contains(&o) => {
                self.regs[reg(o)] = 0;
                value
            }
            _ => value,
        }
    }

    fn register_write(&mut self, offset: u32, value: u32) {
        let offset = offset & !3;
        if reg(offset) >= self.regs.len() {
            return;
        }
        match offset {
            CTRL => {
                if value & CTRL_RST != 0 {
                    self.reset_registers();
                    return;
                }
                if value & CTRL_PHY_RST != 0 {
                    self.phy = phy_defaults();
                }
                self.regs[reg(CTRL)] = value & !(CTRL_RST | CTRL_PHY_RST);
                self.update_status();
            }
            STATUS => {}
            EECD => self.eecd_write(value),
            EERD => {
                if value & EERD_START != 0 {
                    let address = (value >> 8) & 0xFF;
                    let data = self.eeprom.get(address as usize).copied().unwrap_or(0xFFFF);
                    self.regs[reg(EERD)] = u32::from(data) << 16 | address << 8 | EERD_DONE;
                }
            }
            MDIC => self.mdic_write(value),
            ICR => {
                self.regs[reg(ICR)] &= !value;
                self.update_line();
            }
            ICS => self.raise(value),
            IMS => {
                self.regs[reg(IMS)] |= value;
                self.update_line();
            }
            IMC => {
                self.regs[reg(IMS)] &= !value;
                self.update_line();
            }
            // The flush bit fires a pending delay now and is not kept.
            RDTR => {
                self.regs[reg(RDTR)] = value & 0xFFFF;
                if value & DELAY_FLUSH != 0 && self.rx_delay.flush() {
                    self.raise(ICR_RXT0);
                }
            }
            TIDV => {
                self.regs[reg(TIDV)] = value & 0xFFFF;
                if value & DELAY_FLUSH != 0 && self.tx_delay.flush() {
                    self.raise(ICR_TXDW);
                }
            }
            RADV | TADV => self.regs[reg(offset)] = value & 0xFFFF,
            RDLEN | TDLEN => self.regs[reg(offset)] = value & 0x000F_FF80,
            RDH | RDT | TDH | TDT => self.regs[reg(offset)] = value & 0xFFFF,
            o if STATS.contains(&o) => {}
            _ => self.regs[reg(offset)] = value,
        }
    }

    /// The driver bit-bangs the EEPROM: chip select, clock, data in; DO is read back.
    fn eecd_write(&mut self, value: u32) {
        let old = self.wire.last_eecd;
        let mut eecd = (self.regs[reg(EECD)] & !EECD_WRITABLE) | (value & EECD_WRITABLE);
        // The EEPROM is granted whenever it is requested (no firmware competes for it).
        if value & EECD_REQ != 0 {
            eecd |= EECD_GNT;
        } else {
            eecd &= !EECD_GNT;
        }
        self.regs[reg(EECD)] = eecd;
        self.wire.last_eecd = value;
        if value & EECD_CS == 0 {
            self.wire = EepromWire {
                last_eecd: value,
                ..EepromWire::default()
            };
            return;
        }
        let rising = value & EECD_SK != 0 && old & EECD_SK == 0;
        let falling = value & EECD_SK == 0 && old & EECD_SK != 0;
        if falling {
            // The next bit is presented after the falling edge.
            if let Some(position) = &mut self.wire.out_position {
                *position = position.wrapping_add(1);
            }
            return;
        }
        if !rising || self.wire.out_position.is_some() {
            return;
        }
        self.wire.value_in = self.wire.value_in << 1 | u32::from(value & EECD_DI != 0);
        self.wire.bits_in += 1;
        // Opcode (3 bits with the start bit) and a 6-bit address.
        if self.wire.bits_in == 9 {
            let opcode = self.wire.value_in >> 6 & 7;
            let address = self.wire.value_in & 0x3F;
            if opcode == EEPROM_READ_OPCODE {
                // The falling edge after the address moves to the word's first bit.
                self.wire.out_position = Some((address * 16).wrapping_sub(1));
            }
        }
    }

    fn eeprom_bit(&self, position: u32) -> bool {
        let word = self.eeprom[(position / 16) as usize % EEPROM_WORDS];
        word >> (15 - position % 16) & 1 != 0
    }

    /// MDI control: one PHY register read or write, done at once.
    fn mdic_write(&mut self, value: u32) {
        let register = (value >> 16 & 0x1F) as usize;
        let phy = value >> 21 & 0x1F;
        let mut result = value & !(MDIC_READY | MDIC_ERROR);
        if phy != PHY_ADDRESS {
            result |= MDIC_ERROR;
        } else if value & MDIC_OP_READ != 0 {
            result = (result & !0xFFFF) | u32::from(self.phy[register]);
        } else if value & MDIC_OP_WRITE != 0 {
            self.phy_write(register, value as u16);
        }
        self.regs[reg(MDIC)] = result | MDIC_READY;
        self.raise(ICR_MDAC);
    }

    fn phy_write(&mut self, register: usize, value: u16) {
        match register {
            0 => {
                // Reset and restart-autonegotiation self-clear; autonegotiation
                // completes at once.
                if value & 0x8000 != 0 {
                    self.phy = phy_defaults();
                }
                self.phy[0] = value & !(0x8000 | 0x0200);
                self.update_status();
            }
            // Read-only: status, IDs, partner ability, expansion, 1000T status,
            // extended status, PHY specific status.
            1 | 2 | 3 | 5 | 6 | 10 | 15 | 17 => {}
            r => self.phy[r] = value,
        }
    }

    fn ring(&self, base_lo: u32, base_hi: u32, len: u32) -> (u64, u32) {
        let base = u64::from(self.regs[reg(base_hi)]) << 32 | u64::from(self.regs[reg(base_lo)]);
        (base & !0xF, self.regs[reg(len)] / 16)
    }

    /// Transmits descriptors from TDH up to TDT.
    fn transmit(&mut self, ram: &mut dyn GuestMemory) {
        if self.regs[reg(TCTL)] & TCTL_EN == 0 {
            return;
        }
        let (base, count) = self.ring(TDBAL, TDBAH, TDLEN);
        let mut done_any = false;
        let mut written_back = false;
        self.tx_bytes_this_call = 0;
        for _ in 0..DESCRIPTORS_PER_CALL {
            // The rest waits for the next call (the CPU runs in between).
            if self.tx_bytes_this_call >= TX_BYTES_PER_CALL {
                break;
            }
            let head = self.regs[reg(TDH)];
            let tail = self.regs[reg(TDT)];
            if head == tail || count == 0 || head >= count || tail >= count {
                break;
            }
            let address = base.wrapping_add(u64::from(head) * 16);
            let mut descriptor = [0u8; 16];
            if ram.read(address, &mut descriptor).is_err() {
                tracing::debug!(address, "e1000: transmit descriptor outside RAM");
                break;
            }
            self.transmit_descriptor(&descriptor, ram);
            let command = descriptor[11];
            if command & TXD_CMD_RS != 0 {
                descriptor[12] |= TXD_STA_DD;
                // Write back only the status byte (the driver owns the rest).
                let _ = ram.write(address + 12, &descriptor[12..13]);
                // TXDW at once, or after TIDV/TADV for descriptors asking for a delay.
                let delay = if command & TXD_CMD_IDE != 0 {
                    self.regs[reg(TIDV)]
                } else {
                    0
                };
                written_back |= self
                    .tx_delay
                    .packet(self.now_ns, delay, self.regs[reg(TADV)]);
            }
            self.regs[reg(TDH)] = (head + 1) % count;
            done_any = true;
        }
        let empty = self.regs[reg(TDH)] == self.regs[reg(TDT)];
        let causes =
            if written_back { ICR_TXDW } else { 0 } | if done_any && empty { ICR_TXQE } else { 0 };
        if causes != 0 {
            self.raise(causes);
        }
    }

    fn transmit_descriptor(&mut self, d: &[u8; 16], ram: &mut dyn GuestMemory) {
        let command = d[11];
        let extended = command & TXD_CMD_DEXT != 0;
        let dtyp = d[10] >> 4 & 0xF;
        if extended && dtyp == 0 {
            // Context descriptor: offsets for checksums and segmentation.
            self.context = TxContext {
                ipcss: usize::from(d[0]),
                ipcso: usize::from(d[1]),
                ipcse: usize::from(u16::from_le_bytes([d[2], d[3]])),
                tucss: usize::from(d[4]),
                tucso: usize::from(d[5]),
                tucse: usize::from(u16::from_le_bytes([d[6], d[7]])),
                tucmd: d[11],
                hdr_len: usize::from(d[13]),
                mss: usize::from(u16::from_le_bytes([d[14], d[15]])),
            };
            return;
        }
        let address = u64::from_le_bytes(d[0..8].try_into().unwrap_or_default());
        let (length, popts, tse) = if extended {
            let length = u32::from_le_bytes([d[8], d[9], d[10] & 0xF, 0]) as usize;
            (length, d[13], command & TXD_CMD_TSE != 0)
        } else {
            // Legacy descriptor: CSO/CSS checksum insertion is not used by the drivers.
            (usize::from(u16::from_le_bytes([d[8], d[9]])), 0, false)
        };
        if self.packet.data.is_empty() && !self.packet.broken {
            self.packet.popts = popts;
            self.packet.tse = tse;
        }
        let start = self.packet.data.len();
        if start + length > TX_PACKET_LIMIT {
            self.packet.broken = true;
        } else if length > 0 {
            self.packet.data.resize(start + length, 0);
            if ram.read(address, &mut self.packet.data[start..]).is_err() {
                tracing::debug!(address, "e1000: transmit buffer outside RAM");
                self.packet.broken = true;
            }
        }
        if command & TXD_CMD_EOP != 0 {
            let packet = std::mem::take(&mut self.packet);
            if packet.broken {
                tracing::debug!("e1000: oversized or unreadable packet dropped");
            } else if packet.tse {
                self.send_segments(&packet.data, packet.popts);
            } else {
                let mut frame = packet.data;
                self.insert_checksums(&mut frame, packet.popts);
                self.send_frame(&frame);
            }
        }
    }

    /// Inserts the IP and TCP/UDP checksums the context describes (the TCP/UDP field
    /// holds the pseudo-header sum the driver seeded).
    fn insert_checksums(&self, frame: &mut [u8], popts: u8) {
        let c = self.context;
        if popts & TXD_POPTS_IXSM != 0 {
            let end = if c.ipcse == 0 {
                frame.len()
            } else {
                c.ipcse + 1
            };
            put_checksum(frame, c.ipcss, end, c.ipcso);
        }
        if popts & TXD_POPTS_TXSM != 0 {
            let end = if c.tucse == 0 {
                frame.len()
            } else {
                c.tucse + 1
            };
            put_checksum(frame, c.tucss, end, c.tucso);
        }
    }

    /// TCP segmentation: the header (HDRLEN bytes) repeated before each MSS of payload,
    /// with lengths, IP ID, sequence number, flags and checksums fixed up per segment.
    fn send_segments(&mut self, packet: &[u8], popts: u8) {
        let c = self.context;
        let header_len = c.hdr_len.min(packet.len());
        let payload = &packet[header_len..];
        if c.mss < MIN_MSS || header_len < c.tucss + 20 || c.tucss < c.ipcss + 20 {
            tracing::debug!(?c, "e1000: TSO context unusable, packet dropped");
            return;
        }
        let ipv4 = c.tucmd & TUCMD_IP != 0;
        let tcp = c.tucmd & TUCMD_TCP != 0;
        let chunks = payload.chunks(c.mss).count().max(1);
        let mut sequence_offset = 0u32;
        for (index, chunk) in payload
            .chunks(c.mss)
            .chain(
                // A header-only packet is sent once as is.
                std::iter::once(&[][..]).filter(|_| payload.is_empty()),
            )
            .enumerate()
        {
            let last = index + 1 == chunks;
            let mut frame = Vec::with_capacity(header_len + chunk.len());
            frame.extend_from_slice(&packet[..header_len]);
            frame.extend_from_slice(chunk);
            let ip = c.ipcss;
            if ipv4 {
                let total = (frame.len() - ip) as u16;
                put_u16_be(&mut frame, ip + 2, total);
                let id = get_u16_be(&frame, ip + 4).wrapping_add(index as u16);
                put_u16_be(&mut frame, ip + 4, id);
            } else {
                let payload = frame.len().saturating_sub(ip + 40) as u16;
                put_u16_be(&mut frame, ip + 4, payload);
            }
            let l4 = c.tucss;
            let l4_len = (frame.len() - l4) as u32;
            if tcp {
                let seq = get_u32_be(&frame, l4 + 4).wrapping_add(sequence_offset);
                put_u32_be(&mut frame, l4 + 4, seq);
                if !last {
                    frame[l4 + 13] &= !(0x01 | 0x08); // FIN, PSH only on the last
                }
            } else {
                put_u16_be(&mut frame, l4 + 4, l4_len as u16);
            }
            // The seeded pseudo-header sum lacks the length: add it.
            if popts & TXD_POPTS_TXSM != 0 && c.tucso + 1 < frame.len() {
                let seed = u32::from(get_u16_be(&frame, c.tucso)) + l4_len;
                put_u16_be(&mut frame, c.tucso, fold(seed));
            }
            if ipv4 && popts & TXD_POPTS_IXSM != 0 {
                put_u16_be(&mut frame, c.ipcso, 0);
            }
            self.insert_checksums(&mut frame, popts);
            self.send_frame(&frame);
            sequence_offset = sequence_offset.wrapping_add(chunk.len() as u32);
        }
    }

    fn send_frame(&mut self, frame: &[u8]) {
        self.tx_bytes_this_call += frame.len();
        self.backend.send(frame);
        count(&mut self.regs, GPTC);
        count(&mut self.regs, TPT);
    }

    /// Whether the receive filters pass a frame with this destination.
    fn accepts(&self, destination: &[u8]) -> bool {
        let rctl = self.regs[reg(RCTL)];
        if destination.iter().all(|&b| b == 0xFF) {
            return rctl & RCTL_BAM != 0 || rctl & RCTL_MPE != 0;
        }
        if destination[0] & 1 != 0 {
            if rctl & RCTL_MPE != 0 {
                return true;
            }
            let v = u16::from_le_bytes([destination[4], destination[5]]);
            let hash = match rctl >> 12 & 3 {
                0 => v >> 4,
                1 => v >> 3,
                2 => v >> 2,
                _ => v,
            } & 0xFFF;
            let word = self.regs[reg(MTA) + usize::from(hash >> 5)];
            return word >> (hash & 31) & 1 != 0;
        }
        if rctl & RCTL_UPE != 0 {
            return true;
        }
        (0..16).any(|i| {
            let low = self.regs[reg(RA) + 2 * i];
            let high = self.regs[reg(RA) + 2 * i + 1];
            let address = [
                low as u8,
                (low >> 8) as u8,
                (low >> 16) as u8,
                (low >> 24) as u8,
                high as u8,
                (high >> 8) as u8,
            ];
            high & 1 << 31 != 0 && address == destination[..6]
        })
    }

    fn receive_buffer_size(&self) -> usize {
        let rctl = self.regs[reg(RCTL)];
        let code = rctl >> 16 & 3;
        if rctl & RCTL_BSEX != 0 {
            [2048, 16384, 8192, 4096][code as usize]
        } else {
            [2048, 1024, 512, 256][code as usize]
        }
    }

    /// Puts queued frames into the receive ring while it has free descriptors.
    fn receive(&mut self, ram: &mut dyn GuestMemory) {
        if self.regs[reg(RCTL)] & RCTL_EN == 0 {
            return;
        }
        let (base, count) = self.ring(RDBAL, RDBAH, RDLEN);
        let buffer_size = self.receive_buffer_size();
        let mut delivered = false;
        let mut descriptors_used = 0;
        // Frames carry their FCS unless the driver asked for it to be stripped.
        let with_fcs = self.regs[reg(RCTL)] & RCTL_SECRC == 0;
        while let Some(frame) = self.rx_queue.front() {
            let needed = (frame.len() + if with_fcs { 4 } else { 0 }).div_ceil(buffer_size);
            let head = self.regs[reg(RDH)];
            let tail = self.regs[reg(RDT)];
            if count == 0 || head >= count || tail >= count {
                break;
            }
            let free = (tail + count - head) % count;
            if (free as usize) < needed || descriptors_used + needed > DESCRIPTORS_PER_CALL {
                break;
            }
            let Some(mut frame) = self.rx_queue.pop_front() else {
                break;
            };
            if with_fcs {
                let fcs = crc32(&frame);
                frame.extend_from_slice(&fcs.to_le_bytes());
            }
            let mut head = head;
            for (i, piece) in frame.chunks(buffer_size).enumerate() {
                let address = base.wrapping_add(u64::from(head) * 16);
                let mut descriptor = [0u8; 16];
                if ram.read(address, &mut descriptor).is_err() {
                    tracing::debug!(address, "e1000: receive descriptor outside RAM");
                    return;
                }
                let buffer = u64::from_le_bytes(descriptor[0..8].try_into().unwrap_or_default());
                let mut status = RXD_STA_DD | RXD_STA_IXSM;
                if i + 1 == needed {
                    status |= RXD_STA_EOP;
                }
                if ram.write(buffer, piece).is_err() {
                    tracing::debug!(buffer, "e1000: receive buffer outside RAM");
                }
                descriptor[8..10].copy_from_slice(&(piece.len() as u16).to_le_bytes());
                descriptor[10..12].fill(0);
                descriptor[12] = status;
                descriptor[13] = 0;
                let _ = ram.write(address + 8, &descriptor[8..16]);
                head = (head + 1) % count;
                descriptors_used += 1;
            }
            self.regs[reg(RDH)] = head;
            count_frame(&mut self.regs);
            delivered = true;
        }
        if delivered {
            // RXT0 at once, or when the packet (RDTR) or absolute (RADV) timer expires.
            if self
                .rx_delay
                .packet(self.now_ns, self.regs[reg(RDTR)], self.regs[reg(RADV)])
            {
                self.raise(ICR_RXT0);
            }
            let head = self.regs[reg(RDH)];
            let free = (self.regs[reg(RDT)] + count - head) % count.max(1);
            let threshold = match self.regs[reg(RCTL)] >> 8 & 3 {
                0 => count / 2,
                1 => count / 4,
                _ => count / 8,
            };
            if free <= threshold {
                self.raise(ICR_RXDMT0);
            }
        }
    }

    /// Frames from the backend, filtered, into the bounded receive queue.
    fn poll_backend(&mut self) {
        while let Some(frame) = self.backend.receive() {
            if frame.len() < 14 || self.regs[reg(RCTL)] & RCTL_EN == 0 {
                continue;
            }
            if !self.accepts(&frame[..6]) {
                continue;
            }
            if self.rx_queue.len() >= RX_QUEUE_LIMIT {
                self.raise(ICR_RXO);
                continue;
            }
            // Short frames are padded to the Ethernet minimum, as a switch would see them.
            let mut frame = frame;
            if frame.len() < 60 {
                frame.resize(60, 0);
            }
            self.rx_queue.push_back(frame);
        }
    }

    fn tx_pending(&self) -> bool {
        self.regs[reg(TCTL)] & TCTL_EN != 0 && self.regs[reg(TDH)] != self.regs[reg(TDT)]
    }

    fn rx_pending(&self) -> bool {
        self.regs[reg(RCTL)] & RCTL_EN != 0
            && !self.rx_queue.is_empty()
            && self.regs[reg(RDH)] != self.regs[reg(RDT)]
    }
}

impl PciFunction for E1000 {
    fn config(&self) -> &ConfigSpace {
        &self.config
    }
    fn config_mut(&mut self) -> &mut ConfigSpace {
        &mut self.config
    }
}

impl PciDevice for E1000 {
    fn bar_read(&mut self, bar: usize, offset: u64, size: u8) -> u64 {
        let value = match (bar, offset) {
            (0, o) => self.register_read(o as u32),
            (1, 0..=3) => self.io_address,
            (1, 4..=7) => self.register_read(self.io_address),
            _ => u32::MAX,
        };
        // Sub-dword reads take the addressed bytes of the dword.
        let shift = 8 * (offset & 3) as u32;
        let value = u64::from(value >> shift);
        match size {
            8 if bar == 0 => value | u64::from(self.register_read(offset as u32 + 4)) << 32,
            s => value & super::size_mask(s.min(4)),
        }
    }

    fn bar_write(&mut self, bar: usize, offset: u64, size: u8, value: u64) {
        let write_dword = |nic: &mut E1000, register: u32, value: u64| {
            // Narrow writes merge into the dword (drivers write whole dwords).
            let shift = 8 * (register & 3);
            let mask = (super::size_mask(size.min(4)) as u32) << shift;
            let old = nic.regs.get(reg(register & !3)).copied().unwrap_or(0);
            let merged = (old & !mask) | ((value as u32) << shift & mask);
            nic.register_write(register & !3, merged);
        };
        match (bar, offset) {
            (0, o) => {
                write_dword(self, o as u32, value);
                if size == 8 {
                    self.register_write(o as u32 + 4, (value >> 32) as u32);
                }
            }
            (1, 0..=3) => self.io_address = value as u32 & 0x1_FFFC,
            (1, 4..=7) => {
                let register = self.io_address;
                write_dword(self, register, value)
            }
            _ => {}
        }
    }

    fn irq_level(&self) -> bool {
        self.line
    }

    fn dma_pending(&self) -> bool {
        self.tx_pending() || self.rx_pending()
    }

    fn run_dma(&mut self, ram: &mut dyn GuestMemory, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        self.transmit(ram);
        self.poll_backend();
        self.receive(ram);
        self.run_delay_timers();
    }

    fn advance(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        self.poll_backend();
        self.run_delay_timers();
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        let itr = (self.interrupt_causes() != 0 && !self.line).then_some(self.next_assert_ns);
        [itr, self.rx_delay.deadline(), self.tx_delay.deadline()]
            .into_iter()
            .flatten()
            .min()
    }

    fn reset(&mut self) {
        self.reset_registers();
        self.rx_queue.clear();
    }

    fn set_link_up(&mut self, up: bool) {
        self.set_link(up);
    }
}

fn reg(offset: u32) -> usize {
    (offset / 4) as usize
}

fn count(regs: &mut [u32], offset: u32) {
    if let Some(r) = regs.get_mut(reg(offset)) {
        *r = r.saturating_add(1);
    }
}

fn count_frame(regs: &mut [u32]) {
    count(regs, GPRC);
    count(regs, TPR);
}

/// The EEPROM as Intel's 8254x manual lays it out: MAC address in words 0–2, IDs in
/// 0x0B–0x0E, and word 0x3F making the sum 0xBABA.
fn eeprom_image(mac: [u8; 6]) -> [u16; EEPROM_WORDS] {
    let mut words = [0u16; EEPROM_WORDS];
    for i in 0..3 {
        words[i] = u16::from_le_bytes([mac[2 * i], mac[2 * i + 1]]);
    }
    words[0x0A] = 0x64C0; // init control 1: valid signature, PHY in D3 allowed
    words[0x0B] = 0x001E; // subsystem ID
    words[0x0C] = 0x8086; // subsystem vendor
    words[0x0D] = DEVICE_ID;
    words[0x0E] = VENDOR_ID;
    words[0x0F] = 0x3040; // init control 2
    let sum = words[..EEPROM_WORDS - 1]
        .iter()
        .fold(0u16, |s, &w| s.wrapping_add(w));
    words[EEPROM_WORDS - 1] = EEPROM_SUM.wrapping_sub(sum);
    words
}

/// The M88E1011 PHY after reset: autonegotiation on and complete, link up at
/// 1000 Mb/s full duplex.
fn phy_defaults() -> [u16; 32] {
    let mut phy = [0u16; 32];
    phy[0] = 0x1140; // autoneg enable, full duplex, 1000 Mb/s
    phy[1] = 0x796D; // capabilities, autoneg complete, link up
    phy[2] = 0x0141; // M88E1011 identifier
    phy[3] = 0x0C20;
    phy[4] = 0x0DE1; // advertised: 10/100 half/full, pause
    phy[5] = 0x41E1; // partner: the same, acknowledged
    phy[6] = 0x0001; // partner autoneg capable
    phy[9] = 0x0E00; // 1000BASE-T advertised
    phy[10] = 0x3C00; // partner 1000BASE-T full/half, local/remote receiver OK
    phy[15] = 0x3000; // 1000BASE-T full/half capable
    phy[16] = 0x0068; // M88 PHY specific control
    phy[17] = 0xAC00; // M88 specific status: 1000 FD, resolved, link
    phy
}

fn get_u16_be(b: &[u8], at: usize) -> u16 {
    match b.get(at..at + 2) {
        Some(s) => u16::from_be_bytes([s[0], s[1]]),
        None => 0,
    }
}

fn put_u16_be(b: &mut [u8], at: usize, v: u16) {
    if let Some(s) = b.get_mut(at..at + 2) {
        s.copy_from_slice(&v.to_be_bytes());
    }
}

fn get_u32_be(b: &[u8], at: usize) -> u32 {
    match b.get(at..at + 4) {
        Some(s) => u32::from_be_bytes([s[0], s[1], s[2], s[3]]),
        None => 0,
    }
}

fn put_u32_be(b: &mut [u8], at: usize, v: u32) {
    if let Some(s) = b.get_mut(at..at + 4) {
        s.copy_from_slice(&v.to_be_bytes());
    }
}

/// Folds a one's-complement sum into 16 bits.
fn fold(mut sum: u32) -> u16 {
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    sum as u16
}

/// The Internet checksum of `frame[start..end]` written at `at` (bounds clipped; a
/// checksum field outside the frame is skipped).
fn put_checksum(frame: &mut [u8], start: usize, end: usize, at: usize) {
    let end = end.min(frame.len());
    if start >= end || at + 2 > frame.len() {
        return;
    }
    let sum = frame[start..end].chunks(2).fold(0u32, |s, pair| {
        let word = u16::from_be_bytes([pair[0], pair.get(1).copied().unwrap_or(0)]);
        s + u32::from(word)
    });
    put_u16_be(frame, at, !fold(sum));
}

/// IEEE 802.3 CRC-32 (the FCS a real controller leaves in the buffer).
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                crc >> 1 ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(test)]
#[path = "e1000_tests.rs"]
mod tests;
