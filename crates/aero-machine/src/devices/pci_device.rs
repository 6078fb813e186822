//! One way in for PCI devices: a device is a [`PciDevice`] (its configuration space plus
//! BAR, interrupt and bus-master hooks) and the platform does the rest. It decodes the
//! BARs wherever the guest programs them (re-read after every configuration write, only
//! while the command register enables I/O or memory decoding), routes INTx through the
//! PIIX3's PIRQ swizzle to the PIC and IOAPIC (off while the command register's INTx
//! disable bit is set or MSI is on), delivers MSI when the device has the capability, and
//! hands the device guest RAM for bus-master DMA while bus mastering is enabled.
//!
//! A new device is a file implementing this trait and one `Platform::add_pci_device` call
//! where the machine is assembled.

use aero_storage::ide::GuestMemory;

use super::pci::{BarKind, COMMAND_INTX_DISABLE, PciAddress, PciFunction};

/// A PCI device with BARs, interrupts and (optionally) bus-master DMA.
pub trait PciDevice: PciFunction {
    /// A read of `size` bytes (1, 2, 4 or 8) at `offset` inside BAR `bar`.
    fn bar_read(&mut self, bar: usize, offset: u64, size: u8) -> u64;
    /// A write of the low `size` bytes of `value` at `offset` inside BAR `bar`.
    fn bar_write(&mut self, bar: usize, offset: u64, size: u8, value: u64);

    /// Level of the device's INTx output (the platform applies INTx disable and MSI).
    fn irq_level(&self) -> bool {
        false
    }

    /// With MSI enabled: whether an interrupt message is due (taken once).
    fn take_msi(&mut self) -> bool {
        false
    }

    /// Whether the device has bus-master work waiting (it needs guest RAM).
    fn dma_pending(&self) -> bool {
        false
    }

    /// Does the bus-master work; only called while the command register allows it.
    fn run_dma(&mut self, _ram: &mut dyn GuestMemory, _now_ns: u64) {}

    /// Brings the device's timers to `now_ns` (see `devices` for the convention).
    fn advance(&mut self, _now_ns: u64) {}

    fn next_deadline_ns(&self) -> Option<u64> {
        None
    }

    /// Platform reset (RESET#): registers back to power-on values.
    fn reset(&mut self);

    /// Network devices: the cable plugged in or pulled (others ignore it).
    fn set_link_up(&mut self, _up: bool) {}

    /// The concrete device, for host-side paths that need it (USB input).
    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        None
    }
}

/// Where one BAR of a plugged-in device currently decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarWindow {
    /// Index into the platform's device list.
    pub device: usize,
    pub bar: usize,
    pub io: bool,
    pub base: u64,
    pub size: u64,
}

impl BarWindow {
    /// Offset of `address` in this window, if it falls inside.
    pub fn offset(&self, io: bool, address: u64) -> Option<u64> {
        if io != self.io {
            return None;
        }
        address.checked_sub(self.base).filter(|&o| o < self.size)
    }
}

/// The decoding BAR windows of `device` (index `index`): assigned (non-zero) BARs whose
/// space the command register enables.
pub fn bar_windows(index: usize, device: &dyn PciDevice) -> Vec<BarWindow> {
    let config = device.config();
    (0..6)
        .filter_map(|bar| {
            let (kind, size, base) = config.bar(bar)?;
            let io = kind == BarKind::Io;
            let enabled = if io {
                config.io_enabled()
            } else {
                config.memory_enabled()
            };
            // I/O BARs decode 16-bit ports only.
            let in_range = !io || base.checked_add(size).is_some_and(|end| end <= 0x1_0000);
            (enabled && base != 0 && in_range).then_some(BarWindow {
                device: index,
                bar,
                io,
                base,
                size,
            })
        })
        .collect()
}

/// Whether the device's INTx reaches its pin: asserted, a pin declared, INTx not
/// disabled and MSI off.
pub fn intx_asserted(device: &dyn PciDevice) -> bool {
    let config = device.config();
    device.irq_level()
        && config.interrupt_pin() != 0
        && config.command() & COMMAND_INTX_DISABLE == 0
        && config.msi_message().is_none()
}

/// Runs the devices' bus-master work, for those allowed to master the bus.
pub fn run_dma(devices: &mut [PluggedDevice], ram: &mut dyn GuestMemory, now_ns: u64) {
    for plugged in devices {
        if plugged.device.config().bus_master() && plugged.device.dma_pending() {
            plugged.device.run_dma(ram, now_ns);
        }
    }
}

/// A device plugged into bus 0 at `address`.
pub struct PluggedDevice {
    pub address: PciAddress,
    pub device: Box<dyn PciDevice>,
}

impl std::fmt::Debug for PluggedDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluggedDevice")
            .field("address", &self.address)
            .finish()
    }
}
