//! PIIX3 IDE function (82371SB function 1, 8086:7010): the PCI face of the IDE controller,
//! compatibility mode at power-on, PCI native mode when the guest programs it.
//!
//! Follows the 82371SB datasheet for the chipset registers: class 01h/01h, BAR4 = 16-byte
//! bus-master IDE I/O block (BMIBA), IDETIM (0x40 primary, 0x42 secondary, bit 15 = decode
//! enable), SIDETIM (0x44). The real PIIX3 is compatibility-only (programming interface
//! 80h); native mode is added the way native-capable controllers (ICH, VIA) and the PCI IDE
//! Controller Specification rev 1.0 do it:
//!
//! - Programming interface 8Ah: bit 7 bus master, bits 1/3 "mode programmable" (read-only
//!   ones), bits 0/2 the primary/secondary channel mode (0 = compatibility, 1 = native),
//!   guest-writable.
//! - BAR0/BAR1 (primary) and BAR2/BAR3 (secondary): 8-byte command block and 4-byte
//!   control block I/O BARs, always implemented (sizing works in both modes) but only
//!   decoded for a native channel. The device control / alternate status register is at
//!   control block offset 2 (0x3F6 = 0x3F4 + 2 in legacy terms).
//! - A native channel interrupts through INTB# (interrupt pin 2, PIRQB: routed by the PIIX3
//!   PIRQ registers / ACPI _PRT like every other function) and stops decoding 0x1F0/0x3F6
//!   (0x170/0x376) and driving IRQ 14 (15). Not INTA#: the _PRT entries are per slot, and
//!   slot 1 INTA# is the PIIX4 PM function's SCI, hard-wired to IRQ 9 (`LNKS`, which has
//!   no routable IRQ: Linux logs "LNKS: No IRQ available" for a function using it).
//! - Decoding needs the PCI command register's I/O enable and the channel's IDETIM decode
//!   bit in both modes (as ICH does). A BAR of 0 or one whose block does not fit below
//!   0x10000 decodes nothing; a BAR on top of another device's ports loses to that device.
//!
//! Why advertising 8Ah (and INTB#, and BAR0–3) at power-on changes no boot: both channels
//! still start in compatibility mode, and neither OS switches a controller by itself.
//! Linux (PCI core and libata's ata_piix) only reads bits 0/2 to choose legacy resources
//! and IRQ 14/15 and never writes the programming interface; Windows' pci.sys switches only
//! when the registry opts in (PciEnableNativeModeATA) *and* the firmware lists the slot in
//! an ACPI `NATA` object, which our DSDT does not have. Native-capable chipsets (ICH with
//! 8Ah, an INTx pin and BAR0–3) run both unchanged. What does change: BIOSes place four
//! more small I/O BARs and route the pin, and Linux's PCI core enables the pin's link
//! (LNKB) for 00:01.1 when ata_piix enables the device; ata_piix still takes the legacy
//! ports and IRQ 14/15 (checked by the Linux storage and boot tests).
//! The mode bits return to compatibility on a platform reset (RESET# resets the function;
//! our BIOS's disk services use the legacy ports).
//!
//! The ATA/ATAPI model itself lives in the storage crate; the machine routes ports and the
//! interrupt to it as [`Piix3Ide::channel_decode`], [`Piix3Ide::channel_interrupt`] and
//! [`Piix3Ide::bus_master_base`] say.

use super::pci::{BarKind, COMMAND_INTX_DISABLE, ConfigSpace, PciFunction};

pub const IDETIM_PRIMARY: u8 = 0x40;
pub const IDETIM_SECONDARY: u8 = 0x42;
const IDETIM_DECODE_ENABLE: u16 = 1 << 15;
pub const BUS_MASTER_BAR: usize = 4;
/// Programming interface register (class code byte 0).
pub const REG_PROG_IF: u8 = 0x09;
/// Bus master, both channels programmable, both in compatibility mode.
pub const PROG_IF_POWER_ON: u8 = 0x8A;
/// Channel mode bits: primary native (bit 0), secondary native (bit 2).
const PROG_IF_NATIVE: [u8; 2] = [1 << 0, 1 << 2];
/// Command block and control block sizes (PCI IDE spec: 8 and 4 bytes).
const COMMAND_BLOCK_SIZE: u64 = 8;
const CONTROL_BLOCK_SIZE: u64 = 4;
/// INTB#: see the header for why not INTA#.
pub const INTERRUPT_PIN: u8 = 2;
/// Device control / alternate status within the control block.
const CONTROL_REGISTER_OFFSET: u16 = 2;
/// Legacy (command block, control register, ISA IRQ) per channel.
const LEGACY: [(u16, u16, u8); 2] = [(0x1F0, 0x3F6, 14), (0x170, 0x376, 15)];

/// Where a channel's registers decode: the 8 command block ports from `command`, and the
/// device control / alternate status port `control`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelPorts {
    pub command: u16,
    pub control: u16,
}

/// Where a channel's interrupt goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelInterrupt {
    /// Nowhere (channel not decoding in compatibility mode, or INTx disabled).
    None,
    /// A legacy ISA line (14 or 15).
    Isa(u8),
    /// The function's INTx pin ([`INTERRUPT_PIN`]).
    Intx,
}

/// The PIIX3 IDE function's configuration space.
#[derive(Clone, Debug)]
pub struct Piix3Ide {
    config: ConfigSpace,
}

impl Default for Piix3Ide {
    fn default() -> Self {
        Self::new()
    }
}

impl Piix3Ide {
    pub fn new() -> Piix3Ide {
        let mut config = ConfigSpace::new(0x8086, 0x7010, 0x01_01_00, 0x00, 0x00);
        config.set_u8(REG_PROG_IF, PROG_IF_POWER_ON);
        config.set_writable_u8(REG_PROG_IF, PROG_IF_NATIVE[0] | PROG_IF_NATIVE[1]);
        for channel in 0..2 {
            config.set_bar(2 * channel, BarKind::Io, COMMAND_BLOCK_SIZE);
            config.set_bar(2 * channel + 1, BarKind::Io, CONTROL_BLOCK_SIZE);
        }
        config.set_bar(BUS_MASTER_BAR, BarKind::Io, 16);
        config.set_interrupt_pin(INTERRUPT_PIN); // used by native channels only
        config.set_u16(0x06, 0x0280); // fast back-to-back, DEVSEL medium
        config.set_writable_u16(IDETIM_PRIMARY, 0xF3FF);
        config.set_writable_u16(IDETIM_SECONDARY, 0xF3FF);
        config.set_writable_u8(0x44, 0xFF); // SIDETIM
        Piix3Ide { config }
    }

    /// Back to compatibility mode on both channels (platform reset).
    pub fn reset_mode(&mut self) {
        self.config.set_u8(REG_PROG_IF, PROG_IF_POWER_ON);
    }

    fn channel_index(secondary: bool) -> usize {
        usize::from(secondary)
    }

    /// The channel is in PCI native mode (its programming interface bit is set).
    pub fn channel_native(&self, secondary: bool) -> bool {
        self.config.u8_at(REG_PROG_IF) & PROG_IF_NATIVE[Self::channel_index(secondary)] != 0
    }

    /// The I/O space enable and the channel's IDETIM decode bit are both set.
    pub fn channel_enabled(&self, secondary: bool) -> bool {
        let register = if secondary {
            IDETIM_SECONDARY
        } else {
            IDETIM_PRIMARY
        };
        self.config.io_enabled() && self.config.u16_at(register) & IDETIM_DECODE_ENABLE != 0
    }

    /// Where the channel's registers decode now: the legacy ports in compatibility mode,
    /// the programmed BARs in native mode; `None` when it decodes nothing.
    pub fn channel_decode(&self, secondary: bool) -> Option<ChannelPorts> {
        if !self.channel_enabled(secondary) {
            return None;
        }
        let index = Self::channel_index(secondary);
        if !self.channel_native(secondary) {
            let (command, control, _) = LEGACY[index];
            return Some(ChannelPorts { command, control });
        }
        let command = self.io_bar_base(2 * index, COMMAND_BLOCK_SIZE)?;
        let control =
            self.io_bar_base(2 * index + 1, CONTROL_BLOCK_SIZE)? + CONTROL_REGISTER_OFFSET;
        Some(ChannelPorts { command, control })
    }

    /// Where the channel's interrupt goes now.
    pub fn channel_interrupt(&self, secondary: bool) -> ChannelInterrupt {
        if self.channel_native(secondary) {
            if self.config.command() & COMMAND_INTX_DISABLE != 0 {
                ChannelInterrupt::None
            } else {
                ChannelInterrupt::Intx
            }
        } else if self.channel_enabled(secondary) {
            ChannelInterrupt::Isa(LEGACY[Self::channel_index(secondary)].2)
        } else {
            ChannelInterrupt::None
        }
    }

    /// INTx pin (2 = INTB#).
    pub fn interrupt_pin(&self) -> u8 {
        self.config.interrupt_pin()
    }

    /// Base of I/O BAR `index` when assigned (non-zero) and its `len` ports fit in the
    /// 64 KiB I/O space; I/O decode is checked by the callers.
    fn io_bar_base(&self, index: usize, len: u64) -> Option<u16> {
        let (_, _, base) = self.config.bar(index)?;
        (base != 0 && base + len <= 0x1_0000).then_some(base as u16)
    }

    /// I/O base of the bus-master register block, when assigned and I/O is enabled.
    pub fn bus_master_base(&self) -> Option<u16> {
        if !self.config.io_enabled() {
            return None;
        }
        self.io_bar_base(BUS_MASTER_BAR, 16)
    }

    /// Bus-master DMA allowed (PCI command bit 2).
    pub fn dma_enabled(&self) -> bool {
        self.config.bus_master()
    }
}

impl PciFunction for Piix3Ide {
    fn config(&self) -> &ConfigSpace {
        &self.config
    }

    fn config_mut(&mut self) -> &mut ConfigSpace {
        &mut self.config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRIMARY: bool = false;
    const SECONDARY: bool = true;

    /// I/O and bus master on, both IDETIM decode bits set (what a BIOS does).
    fn enabled() -> Piix3Ide {
        let mut ide = Piix3Ide::new();
        ide.config_write(0x04, 2, 0x0005);
        ide.config_write(IDETIM_PRIMARY, 4, 0x8000_8000);
        ide
    }

    #[test]
    fn identity_and_power_on_compatibility_mode() {
        let ide = Piix3Ide::new();
        assert_eq!(ide.config().u32_at(0), 0x7010_8086);
        assert_eq!(ide.config().u32_at(0x08), 0x0101_8A00);
        assert_eq!(ide.config().interrupt_pin(), 2, "INTB# for native mode");
        for bar in 0..4 {
            assert_eq!(
                ide.config().u32_at(0x10 + 4 * bar),
                0x1,
                "unassigned I/O BAR"
            );
        }
        let ide = enabled();
        assert!(!ide.channel_native(PRIMARY) && !ide.channel_native(SECONDARY));
        assert_eq!(
            ide.channel_decode(PRIMARY),
            Some(ChannelPorts {
                command: 0x1F0,
                control: 0x3F6
            })
        );
        assert_eq!(
            ide.channel_decode(SECONDARY),
            Some(ChannelPorts {
                command: 0x170,
                control: 0x376
            })
        );
        assert_eq!(ide.channel_interrupt(PRIMARY), ChannelInterrupt::Isa(14));
        assert_eq!(ide.channel_interrupt(SECONDARY), ChannelInterrupt::Isa(15));
    }

    #[test]
    fn bus_master_bar_and_decode_enables() {
        let mut ide = Piix3Ide::new();
        ide.config_write(0x20, 4, 0xFFFF_FFFF);
        assert_eq!(ide.config_read(0x20, 4), 0xFFFF_FFF1, "16-byte I/O BAR");
        ide.config_write(0x20, 4, 0xC041);
        assert_eq!(ide.bus_master_base(), None, "I/O decode off");
        assert!(!ide.channel_enabled(PRIMARY));
        assert_eq!(ide.channel_decode(PRIMARY), None);
        assert_eq!(ide.channel_interrupt(PRIMARY), ChannelInterrupt::None);
        ide.config_write(0x04, 2, 0x0005);
        assert_eq!(ide.bus_master_base(), Some(0xC040));
        assert!(ide.dma_enabled());
        assert!(
            !ide.channel_enabled(PRIMARY),
            "IDETIM decode bit still clear"
        );
        ide.config_write(IDETIM_PRIMARY, 2, 0x8000);
        ide.config_write(IDETIM_SECONDARY, 2, 0x8000);
        assert!(ide.channel_enabled(PRIMARY) && ide.channel_enabled(SECONDARY));
        assert_eq!(ide.config_read(IDETIM_PRIMARY, 4), 0x8000_8000);
    }

    #[test]
    fn programming_interface_writes_only_change_the_mode_bits() {
        let mut ide = Piix3Ide::new();
        ide.config_write(REG_PROG_IF, 1, 0xFF);
        assert_eq!(
            ide.config_read(REG_PROG_IF, 1),
            0x8F,
            "bits 1/3/7 are read-only"
        );
        ide.config_write(REG_PROG_IF, 1, 0x00);
        assert_eq!(
            ide.config_read(REG_PROG_IF, 1),
            0x8A,
            "programmable bits stay set"
        );
        ide.config_write(REG_PROG_IF, 1, 0x04);
        assert_eq!(
            ide.config_read(0x08, 4),
            0x0101_8E00,
            "class and subclass unchanged"
        );
        assert!(!ide.channel_native(PRIMARY) && ide.channel_native(SECONDARY));
        // A dword write to the class code register only reaches the mode bits.
        ide.config_write(0x08, 4, 0xFFFF_FF01);
        assert_eq!(ide.config_read(0x08, 4), 0x0101_8F00);
        ide.reset_mode();
        assert_eq!(ide.config_read(REG_PROG_IF, 1), 0x8A);
    }

    #[test]
    fn channel_bars_size_as_8_and_4_byte_io_blocks() {
        let mut ide = Piix3Ide::new();
        for (bar, mask) in [
            (0, 0xFFFF_FFF9),
            (1, 0xFFFF_FFFD),
            (2, 0xFFFF_FFF9),
            (3, 0xFFFF_FFFD),
        ] {
            ide.config_write(0x10 + 4 * bar, 4, 0xFFFF_FFFF);
            assert_eq!(ide.config_read(0x10 + 4 * bar, 4), mask, "BAR{bar}");
        }
        // Low bits below the size read back as zero, the I/O indicator as one.
        ide.config_write(0x10, 4, 0xC107);
        assert_eq!(ide.config_read(0x10, 4), 0xC101);
        ide.config_write(0x14, 4, 0xC20B);
        assert_eq!(ide.config_read(0x14, 4), 0xC209);
    }

    #[test]
    fn native_channel_decodes_at_its_bars_and_interrupts_through_intx() {
        let mut ide = enabled();
        ide.config_write(0x10, 4, 0xC100);
        ide.config_write(0x14, 4, 0xC108);
        ide.config_write(0x18, 4, 0xC110);
        ide.config_write(0x1C, 4, 0xC118);
        // Compatibility mode ignores the BARs.
        assert_eq!(ide.channel_decode(PRIMARY).unwrap().command, 0x1F0);
        ide.config_write(REG_PROG_IF, 1, 0x01);
        assert_eq!(
            ide.channel_decode(PRIMARY),
            Some(ChannelPorts {
                command: 0xC100,
                control: 0xC10A
            })
        );
        assert_eq!(ide.channel_interrupt(PRIMARY), ChannelInterrupt::Intx);
        assert_eq!(
            ide.channel_decode(SECONDARY),
            Some(ChannelPorts {
                command: 0x170,
                control: 0x376
            }),
            "the other channel keeps its mode"
        );
        assert_eq!(ide.channel_interrupt(SECONDARY), ChannelInterrupt::Isa(15));
        ide.config_write(REG_PROG_IF, 1, 0x05);
        assert_eq!(
            ide.channel_decode(SECONDARY),
            Some(ChannelPorts {
                command: 0xC110,
                control: 0xC11A
            })
        );
        // INTx disable (command bit 10) silences native channels only.
        ide.config_write(0x04, 2, 0x0405);
        assert_eq!(ide.channel_interrupt(SECONDARY), ChannelInterrupt::None);
        ide.config_write(REG_PROG_IF, 1, 0x04);
        assert_eq!(ide.channel_interrupt(PRIMARY), ChannelInterrupt::Isa(14));
        // I/O decode off: nothing decodes in either mode.
        ide.config_write(0x04, 2, 0x0000);
        assert_eq!(ide.channel_decode(PRIMARY), None);
        assert_eq!(ide.channel_decode(SECONDARY), None);
        // Back to compatibility on both channels.
        ide.config_write(0x04, 2, 0x0005);
        ide.config_write(REG_PROG_IF, 1, 0x00);
        assert_eq!(ide.channel_decode(SECONDARY).unwrap().command, 0x170);
        assert_eq!(ide.channel_interrupt(SECONDARY), ChannelInterrupt::Isa(15));
    }

    #[test]
    fn hostile_bars_decode_nothing_or_where_they_point() {
        let mut ide = enabled();
        ide.config_write(REG_PROG_IF, 1, 0x05);
        // Unassigned BARs: no decode, no panic.
        assert_eq!(ide.channel_decode(PRIMARY), None);
        // Above the 16-bit I/O space, or a block running past 0xFFFF.
        ide.config_write(0x10, 4, 0x0001_0000);
        ide.config_write(0x14, 4, 0xC000);
        assert_eq!(ide.channel_decode(PRIMARY), None);
        ide.config_write(0x10, 4, 0xFFF8);
        ide.config_write(0x14, 4, 0xFFFC);
        assert_eq!(
            ide.channel_decode(PRIMARY),
            Some(ChannelPorts {
                command: 0xFFF8,
                control: 0xFFFE
            })
        );
        ide.config_write(0x18, 4, 0xFFFF_FFFF);
        ide.config_write(0x1C, 4, 0xFFFF_FFFF);
        assert_eq!(ide.channel_decode(SECONDARY), None);
        // On top of the legacy ports or another device: decodes there (the platform gives
        // fixed devices priority).
        ide.config_write(0x18, 4, 0x1F0);
        ide.config_write(0x1C, 4, 0x60);
        assert_eq!(
            ide.channel_decode(SECONDARY),
            Some(ChannelPorts {
                command: 0x1F0,
                control: 0x62
            })
        );
    }
}
