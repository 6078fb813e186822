//! PCI configuration space, configuration mechanism #1 (ports 0xCF8/0xCFC–0xCFF) and a
//! simple bus of functions.
//!
//! Follows the PCI Local Bus Specification 3.0: the type-0 header (vendor/device IDs,
//! command, write-1-to-clear status, class code, BARs, expansion ROM, interrupt line/pin),
//! BAR sizing (writing all ones reads back the size mask with the type bits preserved) and
//! configuration mechanism #1 (enable bit 31, bus/device/function/register in 0xCF8, data
//! through 0xCFC–0xCFF with byte, word and dword accesses). Absent functions read as all
//! ones, which is how enumeration finds empty slots.
//!
//! Chipset choice: the machine models an **Intel 440FX host bridge with a PIIX3 ISA
//! bridge** (see `i440fx.rs`, `piix3.rs`). Windows 7 ships drivers for it (no vendor driver
//! needed: `pci.sys`, `intelide.sys`/`pciide.sys`, `isapnp`), it is QEMU's `pc` machine, so
//! Linux, Windows and SeaBIOS are all known to run on exactly this topology, and it needs
//! no PCIe/ECAM to boot. Q35/ICH9 would give ECAM and AHCI on the chipset; here AHCI is a
//! plain PCI function and the ECAM window ([`PciEcam`]) sits next to mechanism #1 (the
//! firmware describes it with an MCFG table), so Linux can reach it as MMCONFIG.
//!
//! Ownership: functions implement [`PciFunction`] and can live anywhere (the machine owns
//! devices that also have I/O or MMIO). [`PciConfigMechanism`] decodes port accesses and
//! reaches functions through [`PciFunctionLookup`], which the machine implements (a
//! [`PciBus`] of boxed functions is provided for pure-configuration functions).

use std::collections::BTreeMap;

use super::size_mask;

pub const CONFIG_ADDRESS_PORT: u16 = 0xCF8;
pub const CONFIG_DATA_PORT: u16 = 0xCFC;

pub const REG_VENDOR_ID: u8 = 0x00;
pub const REG_COMMAND: u8 = 0x04;
pub const REG_STATUS: u8 = 0x06;
pub const REG_REVISION: u8 = 0x08;
pub const REG_CACHE_LINE: u8 = 0x0C;
pub const REG_HEADER_TYPE: u8 = 0x0E;
pub const REG_BAR0: u8 = 0x10;
pub const REG_SUBSYSTEM_VENDOR: u8 = 0x2C;
pub const REG_ROM_BAR: u8 = 0x30;
pub const REG_CAPABILITIES: u8 = 0x34;
pub const REG_INTERRUPT_LINE: u8 = 0x3C;
pub const REG_INTERRUPT_PIN: u8 = 0x3D;

pub const COMMAND_IO: u16 = 1 << 0;
pub const COMMAND_MEMORY: u16 = 1 << 1;
pub const COMMAND_BUS_MASTER: u16 = 1 << 2;
pub const COMMAND_INTX_DISABLE: u16 = 1 << 10;
/// Command bits a simple function implements: I/O, memory, bus master, parity error
/// response, SERR#, INTx disable.
const COMMAND_WRITABLE: u16 = 0x0547;
/// Status bits that are write-1-to-clear (error reporting).
const STATUS_W1C: u16 = 0xF900;
pub const STATUS_CAPABILITIES: u16 = 1 << 4;

/// Bus/device/function of a PCI function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PciAddress {
    pub bus: u8,
    pub device: u8,
    pub function: u8,
}

impl PciAddress {
    pub const fn new(bus: u8, device: u8, function: u8) -> PciAddress {
        PciAddress {
            bus,
            device: device & 0x1F,
            function: function & 7,
        }
    }
}

/// What a BAR decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarKind {
    Io,
    Memory32 {
        prefetchable: bool,
    },
    /// Occupies this BAR and the next one.
    Memory64 {
        prefetchable: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Bar {
    kind: BarKind,
    size: u64,
}

/// A function's 256-byte configuration space with per-bit write masks.
#[derive(Clone, Debug)]
pub struct ConfigSpace {
    data: [u8; 256],
    writable: [u8; 256],
    /// Write-1-to-clear bits.
    clear_on_write: [u8; 256],
    bars: [Option<Bar>; 6],
    rom_size: u32,
    /// Offsets and lengths of the capabilities added, to place the next one.
    capability_lengths: Vec<(u8, u8)>,
    msi_offset: Option<u8>,
}

impl ConfigSpace {
    /// A type-0 header. `class_code` is `class << 16 | subclass << 8 | prog_if`.
    pub fn new(
        vendor: u16,
        device: u16,
        class_code: u32,
        revision: u8,
        header_type: u8,
    ) -> ConfigSpace {
        let mut space = ConfigSpace {
            data: [0; 256],
            writable: [0; 256],
            clear_on_write: [0; 256],
            bars: [None; 6],
            rom_size: 0,
            capability_lengths: Vec::new(),
            msi_offset: None,
        };
        space.set_u16(REG_VENDOR_ID, vendor);
        space.set_u16(0x02, device);
        space.set_u32(REG_REVISION, class_code << 8 | u32::from(revision));
        space.data[usize::from(REG_HEADER_TYPE)] = header_type;
        space.set_writable_u16(REG_COMMAND, COMMAND_WRITABLE);
        space.clear_on_write[usize::from(REG_STATUS) + 1] = (STATUS_W1C >> 8) as u8;
        space.writable[usize::from(REG_CACHE_LINE)] = 0xFF;
        space.writable[usize::from(REG_CACHE_LINE) + 1] = 0xFF; // latency timer
        space.writable[usize::from(REG_INTERRUPT_LINE)] = 0xFF;
        space
    }

    /// Declares BAR `index` (0–5) of `size` bytes (a power of two; I/O ≥ 4, memory ≥ 16).
    pub fn set_bar(&mut self, index: usize, kind: BarKind, size: u64) {
        let minimum = if kind == BarKind::Io { 4 } else { 16 };
        let size = size.clamp(minimum, 1 << 48).next_power_of_two();
        let last = if matches!(kind, BarKind::Memory64 { .. }) {
            index + 1
        } else {
            index
        };
        if last >= 6 {
            tracing::error!(index, "pci: BAR index out of range");
            return;
        }
        self.bars[index] = Some(Bar { kind, size });
        let offset = REG_BAR0 + (index as u8) * 4;
        let (type_bits, low_mask): (u32, u32) = match kind {
            BarKind::Io => (0x1, !((size as u32).wrapping_sub(1)) & 0xFFFF_FFFC),
            BarKind::Memory32 { prefetchable } => (
                u32::from(prefetchable) << 3,
                !((size - 1) as u32) & 0xFFFF_FFF0,
            ),
            BarKind::Memory64 { prefetchable } => (
                0x4 | u32::from(prefetchable) << 3,
                !((size - 1) as u32) & 0xFFFF_FFF0,
            ),
        };
        self.set_u32(offset, type_bits);
        self.set_writable_u32(offset, low_mask);
        if let BarKind::Memory64 { .. } = kind {
            self.set_u32(offset + 4, 0);
            self.set_writable_u32(offset + 4, !((size - 1) >> 32) as u32);
        }
    }

    /// Declares an expansion ROM of `size` bytes (enable bit 0 plus the address bits).
    pub fn set_rom(&mut self, size: u32) {
        let size = size.clamp(2048, 1 << 31).next_power_of_two();
        self.rom_size = size;
        self.set_writable_u32(REG_ROM_BAR, !(size - 1) | 1);
    }

    /// INTx pin: 1 = INTA# … 4 = INTD#, 0 = none.
    pub fn set_interrupt_pin(&mut self, pin: u8) {
        self.data[usize::from(REG_INTERRUPT_PIN)] = pin.min(4);
    }

    pub fn set_subsystem(&mut self, vendor: u16, device: u16) {
        self.set_u16(REG_SUBSYSTEM_VENDOR, vendor);
        self.set_u16(REG_SUBSYSTEM_VENDOR + 2, device);
    }

    /// Sets raw bytes (device initialisation; ignores write masks).
    pub fn set_u8(&mut self, offset: u8, value: u8) {
        self.data[usize::from(offset)] = value;
    }
    pub fn set_u16(&mut self, offset: u8, value: u16) {
        self.set_bytes(offset, &value.to_le_bytes());
    }
    pub fn set_u32(&mut self, offset: u8, value: u32) {
        self.set_bytes(offset, &value.to_le_bytes());
    }
    fn set_bytes(&mut self, offset: u8, bytes: &[u8]) {
        for (i, &byte) in bytes.iter().enumerate() {
            if let Some(slot) = self.data.get_mut(usize::from(offset) + i) {
                *slot = byte;
            }
        }
    }

    /// Makes bits guest-writable (device-specific registers).
    pub fn set_writable_u8(&mut self, offset: u8, mask: u8) {
        self.writable[usize::from(offset)] = mask;
    }
    pub fn set_writable_u16(&mut self, offset: u8, mask: u16) {
        for (i, byte) in mask.to_le_bytes().into_iter().enumerate() {
            if let Some(slot) = self.writable.get_mut(usize::from(offset) + i) {
                *slot = byte;
            }
        }
    }
    pub fn set_writable_u32(&mut self, offset: u8, mask: u32) {
        for (i, byte) in mask.to_le_bytes().into_iter().enumerate() {
            if let Some(slot) = self.writable.get_mut(usize::from(offset) + i) {
                *slot = byte;
            }
        }
    }
    /// Makes a byte range fully guest-writable (e.g. chipset scratch registers).
    pub fn set_writable_range(&mut self, start: u8, end_inclusive: u8) {
        for offset in start..=end_inclusive {
            self.writable[usize::from(offset)] = 0xFF;
        }
    }

    pub fn u8_at(&self, offset: u8) -> u8 {
        self.data[usize::from(offset)]
    }
    pub fn u16_at(&self, offset: u8) -> u16 {
        self.read(offset, 2) as u16
    }
    pub fn u32_at(&self, offset: u8) -> u32 {
        self.read(offset, 4)
    }

    /// Reads `size` bytes at `offset` (bytes beyond 0xFF read as ones).
    pub fn read(&self, offset: u8, size: u8) -> u32 {
        (0..size.clamp(1, 4)).fold(0u32, |value, i| {
            let byte = self
                .data
                .get(usize::from(offset) + usize::from(i))
                .copied()
                .unwrap_or(0xFF);
            value | u32::from(byte) << (8 * u32::from(i))
        })
    }

    /// A guest write: only writable bits change, W1C bits clear where ones are written.
    pub fn write(&mut self, offset: u8, size: u8, value: u32) {
        for i in 0..usize::from(size.clamp(1, 4)) {
            let index = usize::from(offset) + i;
            let Some(&mask) = self.writable.get(index) else {
                break;
            };
            let byte = (value >> (8 * i)) as u8;
            let current = self.data[index];
            let cleared = current & !(byte & self.clear_on_write[index]);
            self.data[index] = (cleared & !mask) | (byte & mask);
        }
    }

    pub fn command(&self) -> u16 {
        self.u16_at(REG_COMMAND)
    }
    pub fn io_enabled(&self) -> bool {
        self.command() & COMMAND_IO != 0
    }
    pub fn memory_enabled(&self) -> bool {
        self.command() & COMMAND_MEMORY != 0
    }
    pub fn bus_master(&self) -> bool {
        self.command() & COMMAND_BUS_MASTER != 0
    }
    pub fn interrupt_line(&self) -> u8 {
        self.u8_at(REG_INTERRUPT_LINE)
    }
    pub fn interrupt_pin(&self) -> u8 {
        self.u8_at(REG_INTERRUPT_PIN)
    }

    /// Sets status bits from the device side (e.g. interrupt status, master abort).
    pub fn set_status_bits(&mut self, bits: u16) {
        let status = self.u16_at(REG_STATUS) | bits;
        self.set_u16(REG_STATUS, status);
    }

    /// The BAR's kind, size and currently programmed base address (0 = unassigned).
    pub fn bar(&self, index: usize) -> Option<(BarKind, u64, u64)> {
        let bar = (*self.bars.get(index)?)?;
        let offset = REG_BAR0 + (index as u8) * 4;
        let low = u64::from(self.u32_at(offset));
        let base = match bar.kind {
            BarKind::Io => low & 0xFFFF_FFFC,
            BarKind::Memory32 { .. } => low & 0xFFFF_FFF0,
            BarKind::Memory64 { .. } => {
                (low & 0xFFFF_FFF0) | u64::from(self.u32_at(offset + 4)) << 32
            }
        };
        Some((bar.kind, bar.size, base))
    }

    /// The expansion ROM's base if enabled (bit 0) and declared.
    pub fn rom_base(&self) -> Option<u64> {
        let value = self.u32_at(REG_ROM_BAR);
        (self.rom_size != 0 && value & 1 != 0).then_some(u64::from(value & !(self.rom_size - 1)))
    }

    /// Appends a capability of `length` bytes (header included) with ID `id` to the
    /// capability list, after the header and any earlier capability; returns its offset,
    /// or `None` when configuration space is full.
    pub fn add_capability(&mut self, id: u8, length: u8) -> Option<u8> {
        let mut last_link = REG_CAPABILITIES;
        let mut end = 0x40u16;
        let mut cursor = self.u8_at(REG_CAPABILITIES);
        // The list is built by device code, but stay bounded regardless.
        for _ in 0..48 {
            if cursor == 0 {
                break;
            }
            last_link = cursor.wrapping_add(1);
            end = end.max(u16::from(cursor) + u16::from(self.capability_length(cursor)));
            cursor = self.u8_at(cursor.wrapping_add(1));
        }
        let offset = end.next_multiple_of(4);
        if offset + u16::from(length.max(2)) > 0x100 {
            tracing::error!(id, "pci: no room for capability");
            return None;
        }
        let offset = offset as u8;
        self.set_u8(offset, id);
        self.set_u8(offset + 1, 0);
        self.set_u8(last_link, offset);
        self.capability_lengths.push((offset, length.max(2)));
        let status = self.u16_at(REG_STATUS) | STATUS_CAPABILITIES;
        self.set_u16(REG_STATUS, status);
        Some(offset)
    }

    fn capability_length(&self, offset: u8) -> u8 {
        self.capability_lengths
            .iter()
            .find(|&&(o, _)| o == offset)
            .map_or(2, |&(_, len)| len)
    }

    /// Adds an MSI capability (single message, 64-bit address capable when `address64`)
    /// and returns its offset.
    pub fn add_msi(&mut self, address64: bool) -> Option<u8> {
        let offset = self.add_capability(CAP_ID_MSI, if address64 { 14 } else { 10 })?;
        self.set_u16(offset + 2, if address64 { MSI_CTRL_64BIT } else { 0 });
        self.set_writable_u16(offset + 2, MSI_CTRL_ENABLE | 0x0070);
        self.set_writable_u32(offset + 4, 0xFFFF_FFFC);
        let data = if address64 {
            self.set_writable_u32(offset + 8, 0xFFFF_FFFF);
            offset + 12
        } else {
            offset + 8
        };
        self.set_writable_u16(data, 0xFFFF);
        self.msi_offset = Some(offset);
        Some(offset)
    }

    /// The MSI message the function must send, when MSI is enabled.
    pub fn msi_message(&self) -> Option<MsiMessage> {
        let offset = self.msi_offset?;
        let control = self.u16_at(offset + 2);
        if control & MSI_CTRL_ENABLE == 0 {
            return None;
        }
        let low = u64::from(self.u32_at(offset + 4));
        let (address, data) = if control & MSI_CTRL_64BIT != 0 {
            (
                low | u64::from(self.u32_at(offset + 8)) << 32,
                self.u16_at(offset + 12),
            )
        } else {
            (low, self.u16_at(offset + 8))
        };
        Some(MsiMessage {
            address,
            data: u32::from(data),
        })
    }
}

pub const CAP_ID_MSI: u8 = 0x05;
const MSI_CTRL_ENABLE: u16 = 1 << 0;
const MSI_CTRL_64BIT: u16 = 1 << 7;

/// A message-signalled interrupt: a dword write of `data` to `address`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsiMessage {
    pub address: u64,
    pub data: u32,
}

impl MsiMessage {
    /// Decodes an x86 MSI aimed at the local APICs (address 0xFEEx_xxxx, SDM 10.11):
    /// `(destination APIC ID, logical destination, vector, delivery mode bits, level
    /// triggered)`, or `None` for an address outside the interrupt window.
    pub fn decode_x86(&self) -> Option<(u8, bool, u8, u32, bool)> {
        if self.address >> 20 != 0xFEE {
            return None;
        }
        let destination = (self.address >> 12) as u8;
        let logical = self.address & (1 << 2) != 0;
        let vector = self.data as u8;
        let mode = (self.data >> 8) & 7;
        let level = self.data & (1 << 15) != 0;
        Some((destination, logical, vector, mode, level))
    }
}

/// One PCI function. Config accesses arrive with a byte offset and size (1, 2, 4) that
/// never crosses a dword boundary.
pub trait PciFunction: Send {
    fn config(&self) -> &ConfigSpace;
    fn config_mut(&mut self) -> &mut ConfigSpace;

    fn config_read(&mut self, offset: u8, size: u8) -> u32 {
        self.config().read(offset, size)
    }

    fn config_write(&mut self, offset: u8, size: u8, value: u32) {
        self.config_mut().write(offset, size, value);
    }
}

/// How the configuration mechanism finds functions; implemented by the machine.
pub trait PciFunctionLookup {
    fn function_mut(&mut self, address: PciAddress) -> Option<&mut dyn PciFunction>;
}

/// Configuration mechanism #1: the CONFIG_ADDRESS latch and the data window.
#[derive(Clone, Debug, Default)]
pub struct PciConfigMechanism {
    address: u32,
    /// Incremented on every configuration write, so the machine knows when to re-read
    /// BARs, command registers and chipset mapping registers.
    write_generation: u64,
}

impl PciConfigMechanism {
    pub fn new() -> PciConfigMechanism {
        PciConfigMechanism::default()
    }

    /// Changes whenever the guest wrote any configuration register.
    pub fn write_generation(&self) -> u64 {
        self.write_generation
    }

    /// Target of a data-port access, or `None` when disabled or not bus 0 type-0 capable.
    fn target(&self, port: u16) -> Option<(PciAddress, u8)> {
        if self.address & 0x8000_0000 == 0 {
            return None;
        }
        let address = PciAddress::new(
            (self.address >> 16) as u8,
            (self.address >> 11) as u8,
            (self.address >> 8) as u8,
        );
        let offset = (self.address & 0xFC) as u8 | (port & 3) as u8;
        Some((address, offset))
    }

    /// Port read: 0xCF8 (dword only) or 0xCFC–0xCFF.
    pub fn io_read(&mut self, port: u16, size: u8, functions: &mut dyn PciFunctionLookup) -> u32 {
        let ones = size_mask(size) as u32;
        match port {
            CONFIG_ADDRESS_PORT if size == 4 => self.address,
            0xCFC..=0xCFF => {
                let size = size.min(4 - (port & 3) as u8);
                match self.target(port) {
                    Some((address, offset)) => match functions.function_mut(address) {
                        Some(function) => {
                            function.config_read(offset, size) & size_mask(size) as u32
                        }
                        None => ones,
                    },
                    None => ones,
                }
            }
            _ => ones,
        }
    }

    /// Port write: 0xCF8 (dword only) or 0xCFC–0xCFF.
    pub fn io_write(
        &mut self,
        port: u16,
        size: u8,
        value: u32,
        functions: &mut dyn PciFunctionLookup,
    ) {
        match port {
            CONFIG_ADDRESS_PORT if size == 4 => self.address = value & 0x80FF_FFFC,
            0xCFC..=0xCFF => {
                let size = size.min(4 - (port & 3) as u8);
                if let Some((address, offset)) = self.target(port)
                    && let Some(function) = functions.function_mut(address)
                {
                    function.config_write(offset, size, value & size_mask(size) as u32);
                    self.write_generation += 1;
                }
            }
            _ => {}
        }
    }
}

/// PCI Express enhanced configuration access (ECAM/MMCONFIG): a memory window where
/// `bus << 20 | device << 15 | function << 12 | register` addresses configuration space.
/// Our functions are conventional PCI, so the extended space (0x100–0xFFF) reads as 0
/// (an empty extended capability list) and ignores writes. Buses beyond the window's
/// size, and absent functions, read as all ones.
#[derive(Clone, Debug)]
pub struct PciEcam {
    bus_count: u16,
    write_generation: u64,
}

impl PciEcam {
    /// A window covering buses `0..bus_count` (1–256), 1 MiB per bus.
    pub fn new(bus_count: u16) -> PciEcam {
        PciEcam {
            bus_count: bus_count.clamp(1, 256),
            write_generation: 0,
        }
    }

    /// Size of the MMIO window in bytes.
    pub fn size(&self) -> u64 {
        u64::from(self.bus_count) << 20
    }

    /// Changes whenever the guest wrote a configuration register through the window.
    pub fn write_generation(&self) -> u64 {
        self.write_generation
    }

    fn decode(&self, offset: u64) -> Option<(PciAddress, u16)> {
        if offset >= self.size() {
            return None;
        }
        let address = PciAddress::new(
            (offset >> 20) as u8,
            (offset >> 15) as u8,
            (offset >> 12) as u8,
        );
        Some((address, (offset & 0xFFF) as u16))
    }

    /// Reads `size` bytes (1, 2, 4; 8 is split into two dwords) at `offset` in the window.
    pub fn mmio_read(
        &mut self,
        offset: u64,
        size: u8,
        functions: &mut dyn PciFunctionLookup,
    ) -> u64 {
        if size == 8 {
            let low = self.mmio_read(offset, 4, functions);
            let high = self.mmio_read(offset.wrapping_add(4), 4, functions);
            return low | high << 32;
        }
        let size = size.clamp(1, 4).min(4 - (offset & 3) as u8);
        let ones = size_mask(size);
        let Some((address, register)) = self.decode(offset) else {
            return ones;
        };
        match functions.function_mut(address) {
            None => ones,
            Some(_) if register >= 0x100 => 0,
            Some(function) => u64::from(function.config_read(register as u8, size)) & ones,
        }
    }

    /// Writes `size` bytes at `offset` in the window.
    pub fn mmio_write(
        &mut self,
        offset: u64,
        size: u8,
        value: u64,
        functions: &mut dyn PciFunctionLookup,
    ) {
        if size == 8 {
            self.mmio_write(offset, 4, value & 0xFFFF_FFFF, functions);
            self.mmio_write(offset.wrapping_add(4), 4, value >> 32, functions);
            return;
        }
        let size = size.clamp(1, 4).min(4 - (offset & 3) as u8);
        let Some((address, register)) = self.decode(offset) else {
            return;
        };
        if register >= 0x100 {
            return;
        }
        if let Some(function) = functions.function_mut(address) {
            function.config_write(register as u8, size, (value & size_mask(size)) as u32);
            self.write_generation += 1;
        }
    }
}

/// A bus of boxed functions, for functions that need nothing but configuration space.
#[derive(Default)]
pub struct PciBus {
    functions: BTreeMap<PciAddress, Box<dyn PciFunction>>,
}

impl PciBus {
    pub fn new() -> PciBus {
        PciBus::default()
    }

    /// Places `function` at `address`, replacing whatever was there.
    pub fn insert(&mut self, address: PciAddress, function: Box<dyn PciFunction>) {
        self.functions.insert(address, function);
    }

    pub fn get(&self, address: PciAddress) -> Option<&dyn PciFunction> {
        self.functions
            .get(&address)
            .map(|f| f.as_ref() as &dyn PciFunction)
    }

    /// Addresses of all functions, in bus/device/function order.
    pub fn addresses(&self) -> impl Iterator<Item = PciAddress> + '_ {
        self.functions.keys().copied()
    }
}

impl PciFunctionLookup for PciBus {
    fn function_mut(&mut self, address: PciAddress) -> Option<&mut dyn PciFunction> {
        match self.functions.get_mut(&address) {
            Some(function) => Some(function.as_mut()),
            None => None,
        }
    }
}

impl std::fmt::Debug for PciBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PciBus")
            .field("functions", &self.functions.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct TestFunction(ConfigSpace);

    impl PciFunction for TestFunction {
        fn config(&self) -> &ConfigSpace {
            &self.0
        }
        fn config_mut(&mut self) -> &mut ConfigSpace {
            &mut self.0
        }
    }

    fn test_bus() -> PciBus {
        let mut space = ConfigSpace::new(0x1234, 0x5678, 0x01_01_8A, 0x01, 0x00);
        space.set_bar(0, BarKind::Io, 8);
        space.set_bar(
            1,
            BarKind::Memory32 {
                prefetchable: false,
            },
            0x1000,
        );
        space.set_bar(2, BarKind::Memory64 { prefetchable: true }, 0x1_0000_0000);
        space.set_rom(0x10000);
        space.set_interrupt_pin(1);
        let mut bus = PciBus::new();
        bus.insert(PciAddress::new(0, 3, 0), Box::new(TestFunction(space)));
        bus
    }

    fn cf8(device: u32, offset: u32) -> u32 {
        0x8000_0000 | device << 11 | offset
    }

    fn read(
        mech: &mut PciConfigMechanism,
        bus: &mut PciBus,
        device: u32,
        offset: u32,
        size: u8,
    ) -> u32 {
        mech.io_write(0xCF8, 4, cf8(device, offset & 0xFC), bus);
        mech.io_read(0xCFC + (offset & 3) as u16, size, bus)
    }

    fn write(
        mech: &mut PciConfigMechanism,
        bus: &mut PciBus,
        device: u32,
        offset: u32,
        size: u8,
        value: u32,
    ) {
        mech.io_write(0xCF8, 4, cf8(device, offset & 0xFC), bus);
        mech.io_write(0xCFC + (offset & 3) as u16, size, value, bus);
    }

    #[test]
    fn ids_and_absent_functions() {
        let mut bus = test_bus();
        let mut mech = PciConfigMechanism::new();
        assert_eq!(read(&mut mech, &mut bus, 3, 0, 4), 0x5678_1234);
        assert_eq!(read(&mut mech, &mut bus, 3, 2, 2), 0x5678);
        assert_eq!(read(&mut mech, &mut bus, 3, 0x0B, 1), 0x01, "class byte");
        assert_eq!(read(&mut mech, &mut bus, 3, 0x08, 4), 0x0101_8A01);
        assert_eq!(read(&mut mech, &mut bus, 4, 0, 4), 0xFFFF_FFFF);
        assert_eq!(read(&mut mech, &mut bus, 4, 0, 2), 0xFFFF);
        assert_eq!(mech.io_read(0xCF8, 4, &mut bus), cf8(4, 0));
        // Enable bit clear: nothing answers.
        mech.io_write(0xCF8, 4, 0x0000_1800, &mut bus);
        assert_eq!(mech.io_read(0xCFC, 4, &mut bus), 0xFFFF_FFFF);
        // Byte writes to 0xCF8 are not config address writes.
        mech.io_write(0xCF8, 1, 0x12, &mut bus);
        assert_eq!(mech.io_read(0xCF8, 4, &mut bus), 0x0000_1800);
    }

    #[test]
    fn bar_sizing_semantics() {
        let mut bus = test_bus();
        let mut mech = PciConfigMechanism::new();
        write(&mut mech, &mut bus, 3, 0x10, 4, 0xFFFF_FFFF);
        assert_eq!(
            read(&mut mech, &mut bus, 3, 0x10, 4),
            0xFFFF_FFF9,
            "8-byte I/O BAR"
        );
        write(&mut mech, &mut bus, 3, 0x14, 4, 0xFFFF_FFFF);
        assert_eq!(
            read(&mut mech, &mut bus, 3, 0x14, 4),
            0xFFFF_F000,
            "4 KiB memory BAR"
        );
        write(&mut mech, &mut bus, 3, 0x18, 4, 0xFFFF_FFFF);
        write(&mut mech, &mut bus, 3, 0x1C, 4, 0xFFFF_FFFF);
        assert_eq!(
            read(&mut mech, &mut bus, 3, 0x18, 4),
            0x0000_000C,
            "64-bit prefetchable, 4 GiB"
        );
        assert_eq!(read(&mut mech, &mut bus, 3, 0x1C, 4), 0xFFFF_FFFF);
        write(&mut mech, &mut bus, 3, 0x20, 4, 0xFFFF_FFFF);
        assert_eq!(
            read(&mut mech, &mut bus, 3, 0x20, 4),
            0,
            "unimplemented BAR"
        );
        write(&mut mech, &mut bus, 3, 0x30, 4, 0xFFFF_FFFF);
        assert_eq!(read(&mut mech, &mut bus, 3, 0x30, 4), 0xFFFF_0001);
        // Assign addresses.
        write(&mut mech, &mut bus, 3, 0x10, 4, 0xC001);
        write(&mut mech, &mut bus, 3, 0x14, 4, 0xFEBF_0000);
        write(&mut mech, &mut bus, 3, 0x18, 4, 0x0);
        write(&mut mech, &mut bus, 3, 0x1C, 4, 0x8);
        write(&mut mech, &mut bus, 3, 0x30, 4, 0xFEB0_0001);
        let function = bus.get(PciAddress::new(0, 3, 0)).expect("function");
        let config = function.config();
        assert_eq!(config.bar(0), Some((BarKind::Io, 8, 0xC000)));
        assert_eq!(
            config.bar(1),
            Some((
                BarKind::Memory32 {
                    prefetchable: false
                },
                0x1000,
                0xFEBF_0000
            ))
        );
        assert_eq!(
            config.bar(2),
            Some((
                BarKind::Memory64 { prefetchable: true },
                0x1_0000_0000,
                0x8_0000_0000
            ))
        );
        assert_eq!(config.bar(3), None);
        assert_eq!(config.rom_base(), Some(0xFEB0_0000));
    }

    #[test]
    fn capability_list_and_msi() {
        let mut space = ConfigSpace::new(0xA3A0, 0x0001, 0x03_00_00, 0, 0);
        assert_eq!(space.u16_at(REG_STATUS) & STATUS_CAPABILITIES, 0);
        let vendor_cap = space.add_capability(0x09, 6).expect("room");
        let msi = space.add_msi(true).expect("room");
        assert_eq!((vendor_cap, msi), (0x40, 0x48));
        assert_eq!(space.u8_at(REG_CAPABILITIES), 0x40);
        assert_eq!(space.u8_at(0x41), 0x48, "linked");
        assert_eq!(space.u8_at(0x49), 0x00, "end of list");
        assert_ne!(space.u16_at(REG_STATUS) & STATUS_CAPABILITIES, 0);
        assert_eq!(space.u16_at(msi + 2), 0x0080, "64-bit capable, disabled");
        space.write(msi + 4, 4, 0xFEE0_100F);
        space.write(msi + 8, 4, 0);
        space.write(msi + 12, 2, 0x4041);
        assert_eq!(space.msi_message(), None, "not enabled");
        space.write(msi + 2, 2, 0xFFFF);
        assert_eq!(
            space.u16_at(msi + 2),
            0x00F1,
            "enable + MME; capability bits fixed"
        );
        let message = space.msi_message().expect("enabled");
        assert_eq!(
            message,
            MsiMessage {
                address: 0xFEE0_100C,
                data: 0x4041
            }
        );
        assert_eq!(message.decode_x86(), Some((1, true, 0x41, 0, false)));
        assert_eq!(
            MsiMessage {
                address: 0xFED0_0000,
                data: 0
            }
            .decode_x86(),
            None
        );
        // Space runs out eventually without panicking.
        while space.add_capability(0x09, 64).is_some() {}
        assert!(space.add_capability(0x09, 200).is_none());
    }

    #[test]
    fn ecam_window_reaches_the_same_functions() {
        let mut bus = test_bus();
        let mut ecam = PciEcam::new(1);
        assert_eq!(ecam.size(), 1 << 20);
        let function_base = 3u64 << 15;
        assert_eq!(ecam.mmio_read(function_base, 4, &mut bus), 0x5678_1234);
        assert_eq!(ecam.mmio_read(function_base + 2, 2, &mut bus), 0x5678);
        ecam.mmio_write(function_base + 4, 2, 0x0003, &mut bus);
        assert_eq!(
            ecam.mmio_read(function_base, 8, &mut bus),
            0x0000_0003_5678_1234,
            "8-byte read spans two dwords"
        );
        assert_eq!(
            ecam.mmio_read(4 << 15, 4, &mut bus),
            0xFFFF_FFFF,
            "empty slot"
        );
        assert_eq!(
            ecam.mmio_read(function_base + 0x100, 4, &mut bus),
            0,
            "no extended capabilities"
        );
        assert_eq!(
            ecam.mmio_read(1 << 20, 4, &mut bus),
            0xFFFF_FFFF,
            "outside the window"
        );
        ecam.mmio_write(function_base + 0x14, 4, 0xFFFF_FFFF, &mut bus);
        assert_eq!(
            ecam.mmio_read(function_base + 0x14, 4, &mut bus),
            0xFFFF_F000
        );
        assert_eq!(ecam.write_generation(), 2);
        ecam.mmio_write(function_base + 0x3C, 1, 0x0A, &mut bus);
        assert_eq!(ecam.mmio_read(function_base + 0x3C, 1, &mut bus), 0x0A);
    }

    #[test]
    fn command_status_and_interrupt_registers() {
        let mut bus = test_bus();
        let mut mech = PciConfigMechanism::new();
        let generation = mech.write_generation();
        write(&mut mech, &mut bus, 3, 0x04, 2, 0xFFFF);
        assert!(mech.write_generation() > generation);
        assert_eq!(read(&mut mech, &mut bus, 3, 0x04, 2), 0x0547);
        bus.function_mut(PciAddress::new(0, 3, 0))
            .expect("fn")
            .config_mut()
            .set_status_bits(0x2000 | 0x0010);
        assert_eq!(read(&mut mech, &mut bus, 3, 0x06, 2), 0x2010);
        write(&mut mech, &mut bus, 3, 0x06, 2, 0x2000);
        assert_eq!(
            read(&mut mech, &mut bus, 3, 0x06, 2),
            0x0010,
            "W1C error bit cleared, RO bit kept"
        );
        write(&mut mech, &mut bus, 3, 0x3C, 2, 0xFF0B);
        assert_eq!(
            read(&mut mech, &mut bus, 3, 0x3C, 2),
            0x010B,
            "line writable, pin fixed"
        );
        write(&mut mech, &mut bus, 3, 0x00, 4, 0);
        assert_eq!(
            read(&mut mech, &mut bus, 3, 0x00, 4),
            0x5678_1234,
            "IDs read-only"
        );
        // Dword access at 0xCFE is clipped to the dword.
        mech.io_write(0xCF8, 4, cf8(3, 0), &mut bus);
        assert_eq!(mech.io_read(0xCFE, 4, &mut bus), 0x5678);
    }
}
