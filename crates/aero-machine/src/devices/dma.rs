//! The PC/AT pair of Intel 8237A DMA controllers with their page registers, as contained in
//! the PIIX3: DMA1 (8-bit channels 0–3, ports 0x00–0x0F), DMA2 (16-bit channels 4–7, ports
//! 0xC0–0xDE at even addresses, channel 4 cascades DMA1), page registers 0x81–0x8F.
//!
//! Follows the 8237A datasheet: base/current address and count registers through the byte
//! pointer flip-flop, command, mode (verify/write/read, autoinitialise, decrement), single
//! and all-channel mask, request, status (terminal count and request bits, TC cleared on
//! read), master clear and clear-mask. Port 0x80 (POST codes) is not part of this device.
//!
//! The controller never touches memory itself: a device that uses a channel (e.g. a floppy
//! controller) asks [`Dma8237::transfer`] where the next bytes go, moves them, and reports
//! them with [`Dma8237::complete`], which advances address and count and sets terminal count.

use super::{PortIo, read_bytes, write_bytes};

/// Page register port of each channel (channel 4 has none: it is the cascade).
const PAGE_PORTS: [(u16, usize); 7] = [
    (0x87, 0),
    (0x83, 1),
    (0x81, 2),
    (0x82, 3),
    (0x8B, 5),
    (0x89, 6),
    (0x8A, 7),
];

/// What a channel's transfer does to memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DmaDirection {
    /// "Write transfer": the device writes to memory.
    ToMemory,
    /// "Read transfer": the device reads from memory.
    FromMemory,
    /// Verify: addresses and counts move, no data.
    Verify,
}

/// Where the next bytes of a programmed transfer go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaTransfer {
    /// Physical address of the next byte (for decrementing transfers, of the next byte
    /// to move downwards).
    pub address: u64,
    /// Bytes left until terminal count.
    pub remaining: usize,
    pub direction: DmaDirection,
    pub decrement: bool,
    /// 1 for DMA1 channels, 2 for DMA2 channels (counts are in words there).
    pub unit: usize,
}

#[derive(Clone, Copy, Debug, Default)]
struct Channel {
    base_address: u16,
    base_count: u16,
    current_address: u16,
    current_count: u16,
    mode: u8,
}

#[derive(Clone, Debug, Default)]
struct Controller {
    channels: [Channel; 4],
    command: u8,
    status: u8,
    mask: u8,
    request: u8,
    flip_flop: bool,
    temporary: u8,
}

impl Controller {
    /// Master clear resets the 8237 (the page registers are outside it and survive).
    fn master_clear(&mut self) {
        *self = Controller {
            mask: 0x0F,
            ..Controller::default()
        };
    }

    fn read(&mut self, register: u16) -> u8 {
        match register {
            0..=7 => {
                let channel = &self.channels[usize::from(register / 2)];
                let word = if register & 1 == 0 {
                    channel.current_address
                } else {
                    channel.current_count
                };
                let high = self.flip_flop;
                self.flip_flop = !high;
                (if high { word >> 8 } else { word }) as u8
            }
            8 => std::mem::take(&mut self.status) & 0x0F | self.request << 4,
            0xD => self.temporary,
            0xF => self.mask | 0xF0,
            _ => 0xFF,
        }
    }

    fn write(&mut self, register: u16, value: u8) {
        match register {
            0..=7 => {
                let high = self.flip_flop;
                self.flip_flop = !high;
                let channel = &mut self.channels[usize::from(register / 2)];
                let set = |word: u16| {
                    if high {
                        (word & 0x00FF) | u16::from(value) << 8
                    } else {
                        (word & 0xFF00) | u16::from(value)
                    }
                };
                if register & 1 == 0 {
                    channel.base_address = set(channel.base_address);
                    channel.current_address = channel.base_address;
                } else {
                    channel.base_count = set(channel.base_count);
                    channel.current_count = channel.base_count;
                }
            }
            8 => self.command = value,
            9 => {
                let bit = 1 << (value & 3);
                if value & 4 != 0 {
                    self.request |= bit;
                } else {
                    self.request &= !bit;
                }
            }
            0xA => {
                let bit = 1 << (value & 3);
                if value & 4 != 0 {
                    self.mask |= bit;
                } else {
                    self.mask &= !bit;
                }
            }
            0xB => self.channels[usize::from(value & 3)].mode = value,
            0xC => self.flip_flop = false,
            0xD => self.master_clear(),
            0xE => self.mask = 0,
            0xF => self.mask = value & 0x0F,
            _ => {}
        }
    }
}

/// Both 8237A controllers and the page registers.
#[derive(Clone, Debug)]
pub struct Dma8237 {
    controllers: [Controller; 2],
    /// Page registers 0x81–0x8F (index = port − 0x80); unused ones are scratch bytes.
    pages: [u8; 16],
}

impl Default for Dma8237 {
    fn default() -> Self {
        Self::new()
    }
}

impl Dma8237 {
    /// After reset every channel is masked.
    pub fn new() -> Dma8237 {
        let controller = Controller {
            mask: 0x0F,
            ..Controller::default()
        };
        Dma8237 {
            controllers: [controller.clone(), controller],
            pages: [0; 16],
        }
    }

    fn split(channel: u8) -> Option<(usize, usize)> {
        (channel < 8).then_some((usize::from(channel / 4), usize::from(channel % 4)))
    }

    /// The transfer channel `channel` (0–7) is programmed for, or `None` while the channel
    /// is masked, its controller is disabled (command bit 2), or it is the cascade.
    pub fn transfer(&self, channel: u8) -> Option<DmaTransfer> {
        let (index, local) = Self::split(channel)?;
        let controller = &self.controllers[index];
        if controller.mask & (1 << local) != 0 || controller.command & 0x04 != 0 || channel == 4 {
            return None;
        }
        let state = &controller.channels[local];
        let direction = match (state.mode >> 2) & 3 {
            1 => DmaDirection::ToMemory,
            2 => DmaDirection::FromMemory,
            _ => DmaDirection::Verify,
        };
        let unit = index + 1;
        let page = u64::from(self.page(channel));
        let address = if unit == 1 {
            page << 16 | u64::from(state.current_address)
        } else {
            (page & 0xFE) << 16 | u64::from(state.current_address) << 1
        };
        Some(DmaTransfer {
            address,
            remaining: (usize::from(state.current_count) + 1) * unit,
            direction,
            decrement: state.mode & 0x20 != 0,
            unit,
        })
    }

    /// The device moved `bytes` on `channel`: advances address and count; returns true when
    /// terminal count was reached (autoinitialising channels reload their base registers).
    pub fn complete(&mut self, channel: u8, bytes: usize) -> bool {
        let Some((index, local)) = Self::split(channel) else {
            return false;
        };
        let unit = index + 1;
        let controller = &mut self.controllers[index];
        let state = &mut controller.channels[local];
        let units = (bytes / unit).min(usize::from(state.current_count) + 1) as u32;
        let decrement = state.mode & 0x20 != 0;
        state.current_address = if decrement {
            state.current_address.wrapping_sub(units as u16)
        } else {
            state.current_address.wrapping_add(units as u16)
        };
        let terminal = units > u32::from(state.current_count);
        state.current_count = (u32::from(state.current_count).wrapping_sub(units)) as u16;
        if terminal {
            controller.status |= 1 << local;
            controller.request &= !(1 << local);
            if state.mode & 0x10 != 0 {
                state.current_address = state.base_address;
                state.current_count = state.base_count;
            } else {
                controller.mask |= 1 << local;
            }
        }
        terminal
    }

    fn page(&self, channel: u8) -> u8 {
        PAGE_PORTS
            .iter()
            .find(|&&(_, ch)| ch == usize::from(channel))
            .map_or(0, |&(port, _)| self.pages[usize::from(port - 0x80)])
    }

    fn read_byte(&mut self, port: u16) -> u8 {
        match port {
            0x00..=0x0F => self.controllers[0].read(port),
            0xC0..=0xDF if port & 1 == 0 => self.controllers[1].read((port - 0xC0) / 2),
            0x81..=0x8F => self.pages[usize::from(port - 0x80)],
            _ => 0xFF,
        }
    }

    fn write_byte(&mut self, port: u16, value: u8) {
        match port {
            0x00..=0x0F => self.controllers[0].write(port, value),
            0xC0..=0xDF if port & 1 == 0 => self.controllers[1].write((port - 0xC0) / 2, value),
            0x81..=0x8F => self.pages[usize::from(port - 0x80)] = value,
            _ => {}
        }
    }
}

impl PortIo for Dma8237 {
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        read_bytes(port, size, |p| self.read_byte(p))
    }

    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        write_bytes(port, size, value, |p, v| self.write_byte(p, v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(dma: &mut Dma8237, port: u16, value: u8) {
        dma.io_write(port, 1, u32::from(value));
    }

    /// The classic floppy setup: channel 2, write-to-memory, 512 bytes at 0x12345 (page 1).
    fn program_floppy_read(dma: &mut Dma8237) {
        out(dma, 0x0A, 0x06); // mask channel 2
        out(dma, 0x0C, 0x00); // reset flip-flop
        out(dma, 0x04, 0x45);
        out(dma, 0x04, 0x23);
        out(dma, 0x81, 0x01);
        out(dma, 0x0C, 0x00);
        out(dma, 0x05, 0xFF); // count 511 = 512 bytes
        out(dma, 0x05, 0x01);
        out(dma, 0x0B, 0x46); // single mode, write to memory, channel 2
        out(dma, 0x0A, 0x02); // unmask
    }

    #[test]
    fn floppy_style_transfer_reaches_terminal_count() {
        let mut dma = Dma8237::new();
        assert_eq!(dma.transfer(2), None, "masked after reset");
        program_floppy_read(&mut dma);
        let transfer = dma.transfer(2).expect("programmed");
        assert_eq!(
            transfer,
            DmaTransfer {
                address: 0x1_2345,
                remaining: 512,
                direction: DmaDirection::ToMemory,
                decrement: false,
                unit: 1
            }
        );
        assert!(!dma.complete(2, 256));
        assert_eq!(
            dma.transfer(2).map(|t| (t.address, t.remaining)),
            Some((0x1_2445, 256))
        );
        assert!(dma.complete(2, 256));
        assert_eq!(dma.io_read(0x08, 1) & 0x0F, 0x04, "TC for channel 2");
        assert_eq!(dma.io_read(0x08, 1) & 0x0F, 0, "status read clears TC");
        assert_eq!(dma.transfer(2), None, "masked again at terminal count");
        // Current address/count read back through the flip-flop.
        out(&mut dma, 0x0C, 0);
        let low = dma.io_read(0x04, 1);
        let high = dma.io_read(0x04, 1);
        assert_eq!(low | high << 8, 0x2545);
        assert_eq!(dma.io_read(0x05, 1), 0xFF);
        assert_eq!(dma.io_read(0x05, 1), 0xFF, "count wrapped to 0xFFFF");
    }

    #[test]
    fn autoinit_reloads_and_sixteen_bit_channels_use_words() {
        let mut dma = Dma8237::new();
        out(&mut dma, 0xD8, 0); // flip-flop of DMA2
        out(&mut dma, 0xC4, 0x00); // channel 5 address (words)
        out(&mut dma, 0xC4, 0x80);
        out(&mut dma, 0xC6, 0x0F); // 16 words
        out(&mut dma, 0xC6, 0x00);
        out(&mut dma, 0x8B, 0x03);
        out(&mut dma, 0xD6, 0x59); // autoinit, read from memory, channel 5
        out(&mut dma, 0xD4, 0x01); // unmask channel 5
        let transfer = dma.transfer(5).expect("channel 5");
        assert_eq!(
            (transfer.address, transfer.remaining, transfer.unit),
            (0x2_0000 | 0x8000 << 1, 32, 2)
        );
        assert_eq!(transfer.direction, DmaDirection::FromMemory);
        assert!(dma.complete(5, 32));
        let again = dma.transfer(5).expect("still unmasked");
        assert_eq!(again, transfer, "autoinit reloaded the base registers");
        assert_eq!(dma.transfer(4), None, "cascade channel");
    }

    #[test]
    fn masks_master_clear_and_pages() {
        let mut dma = Dma8237::new();
        assert_eq!(dma.io_read(0x0F, 1), 0xFF);
        out(&mut dma, 0x0E, 0);
        assert_eq!(dma.io_read(0x0F, 1), 0xF0);
        out(&mut dma, 0x0F, 0x05);
        assert_eq!(dma.io_read(0x0F, 1), 0xF5);
        out(&mut dma, 0x87, 0x42);
        out(&mut dma, 0x0D, 0);
        assert_eq!(dma.io_read(0x0F, 1), 0xFF, "master clear masks all");
        assert_eq!(dma.io_read(0x87, 1), 0x42, "pages survive master clear");
        out(&mut dma, 0x08, 0x04); // controller disable
        out(&mut dma, 0x0E, 0);
        assert_eq!(dma.transfer(0), None);
        assert_eq!(dma.io_read(0x80, 1), 0xFF, "POST port is not ours");
        assert!(!dma.complete(9, 10));
        dma.complete(0, usize::MAX);
    }
}
