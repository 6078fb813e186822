//! What the PCI configuration says about address decoding (PAM shadowing, BARs, the PM
//! I/O base), decoded once per configuration write for the machine to map.

use crate::devices::PortIo;
use crate::devices::ahci_pci::AhciConfig;
use crate::devices::i440fx::PAM0;
use crate::devices::pc_pci::PcPci;
use crate::devices::pci::PciFunction;
use crate::devices::pci_device::{BarWindow, bar_windows};
use crate::devices::piix3_ide::ChannelPorts;
use crate::memory_map::PamMode;

/// Bus 0 plus the generation of configuration writes already decoded.
pub struct PciBus {
    pub pci: PcPci,
    decoded_generation: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    pub pam: [PamMode; 13],
    /// VGA linear framebuffer base (display function BAR2), when assigned and memory
    /// decoding is on.
    pub vga_lfb: Option<u64>,
    /// VGA expansion ROM base, when enabled.
    pub vga_rom: Option<u64>,
    /// AeroGPU register block base (display function BAR0).
    pub aerogpu_mmio: Option<u64>,
    pub pm_io_base: Option<u16>,
    /// Where the IDE channels decode (primary, secondary; legacy ports or native-mode
    /// BARs) and the bus-master I/O base.
    pub ide_channels: [Option<ChannelPorts>; 2],
    pub ide_bus_master: Option<u16>,
    /// AHCI register block base (BAR5), when assigned and memory decoding is on.
    pub ahci_abar: Option<u64>,
    /// Where the plugged-in devices' BARs decode.
    pub device_bars: Vec<BarWindow>,
}

impl PciBus {
    pub fn new() -> PciBus {
        PciBus {
            pci: PcPci::new(),
            decoded_generation: None,
        }
    }

    pub fn io_read(&mut self, port: u16, size: u8) -> u32 {
        self.pci.io_read(port, size)
    }

    pub fn io_write(&mut self, port: u16, size: u8, value: u32) {
        self.pci.io_write(port, size, value)
    }

    pub fn ecam_read(&mut self, offset: u64, size: u8) -> u64 {
        self.pci.ecam_read(offset, size)
    }

    pub fn ecam_write(&mut self, offset: u64, size: u8, value: u64) {
        self.pci.ecam_write(offset, size, value)
    }

    /// The decoded state if configuration changed since the last call.
    pub fn decode_if_changed(&mut self) -> Option<Decoded> {
        let generation = self.pci.write_generation();
        if self.decoded_generation == Some(generation) {
            return None;
        }
        self.decoded_generation = Some(generation);
        let f = &self.pci.functions;
        let mut pam = [PamMode::default(); 13];
        for (mode, region) in pam.iter_mut().zip(f.host_bridge.pam_regions()) {
            *mode = PamMode {
                read_ram: region.access.read_ram,
                write_ram: region.access.write_ram,
            };
        }
        Some(Decoded {
            pam,
            vga_lfb: f.display.lfb_base(),
            vga_rom: f.display.rom_base(),
            aerogpu_mmio: f.display.mmio_base(),
            pm_io_base: f.power_management.pm_io_base(),
            ide_channels: [f.ide.channel_decode(false), f.ide.channel_decode(true)],
            ide_bus_master: f.ide.bus_master_base(),
            ahci_abar: f.ahci.config().abar(),
            device_bars: f
                .devices
                .iter()
                .enumerate()
                .flat_map(|(i, d)| bar_windows(i, d.device.as_ref()))
                .collect(),
        })
    }

    /// Makes the next `decode_if_changed` decode even without a configuration write
    /// (a device was plugged in).
    pub fn invalidate_decoding(&mut self) {
        self.decoded_generation = None;
    }

    /// Both IDE channels back to compatibility mode (platform reset).
    pub fn reset_ide_mode(&mut self) {
        self.pci.functions.ide.reset_mode();
        self.decoded_generation = None;
    }

    /// Sets the PAM registers directly (our BIOS shadows the VGA ROM without config cycles).
    pub fn set_pam_registers(&mut self, values: [u8; 7]) {
        let space = self.pci.functions.host_bridge.config_mut();
        for (i, v) in values.into_iter().enumerate() {
            space.set_u8(PAM0 + i as u8, v);
        }
        self.decoded_generation = None;
    }
}
