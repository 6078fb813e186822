//! PIIX3-style IDE controller: two ATA channels (legacy ports 0x1F0–0x1F7/0x3F6 with IRQ 14
//! and 0x170–0x177/0x376 with IRQ 15), ATA disks and ATAPI CD/DVD drives, PIO and
//! bus-master DMA. The PCI function (config space, BAR decoding) lives in the machine
//! crate; this is the device logic behind the ports.
//!
//! Commands complete synchronously (BSY is never observable); the interrupt line of each
//! channel is a level, see [`IdeController::irq_level`].

pub(crate) mod ata;
pub(crate) mod atapi;
pub(crate) mod busmaster;
pub(crate) mod channel;
#[cfg(test)]
mod tests;

pub use atapi::{CdStatus, MediaError};
pub use busmaster::{DmaError, GuestMemory};
pub use channel::{IdeChannel, IdeDrive};

/// Legacy I/O bases: (command block, control block) per channel.
pub const LEGACY_PORTS: [(u16, u16); 2] = [(0x1F0, 0x3F6), (0x170, 0x376)];
/// Legacy ISA interrupt lines per channel.
pub const LEGACY_IRQS: [u8; 2] = [14, 15];

/// Both channels of the controller plus the bus-master register block (BMIBA, 16 bytes:
/// channel 0 at offsets 0–7, channel 1 at 8–15).
pub struct IdeController {
    pub channels: [IdeChannel; 2],
}

impl Default for IdeController {
    fn default() -> Self {
        Self::new()
    }
}

impl IdeController {
    pub fn new() -> Self {
        IdeController {
            channels: [IdeChannel::new(), IdeChannel::new()],
        }
    }

    /// Attaches a drive to `channel` (0 primary, 1 secondary) as master (`slave == false`).
    pub fn attach(&mut self, channel: usize, slave: bool, drive: IdeDrive) {
        if let Some(ch) = self.channels.get_mut(channel) {
            ch.attach(slave, drive);
        }
    }

    /// Which channel and register a legacy port belongs to: (channel, false, 0..8) for the
    /// command block, (channel, true, 0) for the control block.
    fn decode(port: u16) -> Option<(usize, bool, u16)> {
        LEGACY_PORTS
            .iter()
            .enumerate()
            .find_map(|(i, &(cmd, ctl))| {
                if (cmd..cmd + 8).contains(&port) {
                    Some((i, false, port - cmd))
                } else if port == ctl {
                    Some((i, true, 0))
                } else {
                    None
                }
            })
    }

    /// Handles a read of a legacy port; `None` when the port is not ours.
    pub fn io_read(&mut self, port: u16, size: u8) -> Option<u32> {
        let (ch, control, reg) = Self::decode(port)?;
        Some(if control {
            self.control_read(ch)
        } else {
            self.command_read(ch, reg, size)
        })
    }

    /// Handles a write of a legacy port; false when the port is not ours.
    pub fn io_write(&mut self, port: u16, size: u8, value: u32) -> bool {
        let Some((ch, control, reg)) = Self::decode(port) else {
            return false;
        };
        if control {
            self.control_write(ch, value);
        } else {
            self.command_write(ch, reg, size, value);
        }
        true
    }

    /// Reads command block register `offset` (0..8, 0 = data) of `channel`, wherever the
    /// PCI function decodes it (legacy ports or a native-mode BAR). Out of range: all ones.
    pub fn command_read(&mut self, channel: usize, offset: u16, size: u8) -> u32 {
        match self.channels.get_mut(channel) {
            Some(ch) if offset == 0 => ch.read_data(size),
            Some(ch) if offset < 8 => u32::from(ch.read_register(offset as u8)),
            _ => u32::MAX >> (32 - 8 * u32::from(size.clamp(1, 4))),
        }
    }

    /// Writes command block register `offset` (0..8) of `channel`.
    pub fn command_write(&mut self, channel: usize, offset: u16, size: u8, value: u32) {
        match self.channels.get_mut(channel) {
            Some(ch) if offset == 0 => ch.write_data(size, value),
            Some(ch) if offset < 8 => ch.write_register(offset as u8, value as u8),
            _ => {}
        }
    }

    /// Reads the alternate status register of `channel` (control block).
    pub fn control_read(&mut self, channel: usize) -> u32 {
        self.channels
            .get_mut(channel)
            .map_or(0xFF, |ch| u32::from(ch.read_alt_status()))
    }

    /// Writes the device control register of `channel` (control block).
    pub fn control_write(&mut self, channel: usize, value: u32) {
        if let Some(ch) = self.channels.get_mut(channel) {
            ch.write_device_control(value as u8);
        }
    }

    /// Reads the bus-master block at `offset` (0..16).
    pub fn bus_master_read(&mut self, offset: u16, size: u8) -> u32 {
        match self.channels.get_mut((offset / 8) as usize) {
            Some(ch) => ch.bus_master_read((offset % 8) as u8, size),
            None => 0xFFFF_FFFF,
        }
    }

    /// Writes the bus-master block; setting the start bit runs a pending DMA transfer against
    /// `memory` immediately.
    pub fn bus_master_write(
        &mut self,
        offset: u16,
        size: u8,
        value: u32,
        memory: &mut dyn GuestMemory,
    ) {
        if let Some(ch) = self.channels.get_mut((offset / 8) as usize) {
            ch.bus_master_write((offset % 8) as u8, size, value, memory);
        }
    }

    /// Register half of [`IdeController::bus_master_write`]; see
    /// [`IdeChannel::bus_master_write_registers`].
    pub fn bus_master_write_registers(&mut self, offset: u16, size: u8, value: u32) {
        if let Some(ch) = self.channels.get_mut((offset / 8) as usize) {
            ch.bus_master_write_registers((offset % 8) as u8, size, value);
        }
    }

    /// Some channel has a started DMA transfer waiting for [`IdeController::service_dma`].
    pub fn dma_pending(&self) -> bool {
        self.channels.iter().any(|c| c.dma_pending())
    }

    /// Runs every waiting DMA transfer against `memory`.
    pub fn service_dma(&mut self, memory: &mut dyn GuestMemory) {
        for ch in &mut self.channels {
            ch.service_dma(memory);
        }
    }

    /// Level of the channel's interrupt (IRQ 14 / 15 in legacy mode, the PCI function's
    /// INTx pin in native mode: the machine routes it).
    pub fn irq_level(&self, channel: usize) -> bool {
        self.channels.get(channel).is_some_and(|c| c.irq_level())
    }

    /// Hardware reset (RESET# from the chipset).
    pub fn reset(&mut self) {
        for ch in &mut self.channels {
            ch.reset();
        }
    }
}
