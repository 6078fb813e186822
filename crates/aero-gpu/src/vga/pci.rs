//! How the adapter appears on the PCI bus: a QEMU "std vga" compatible function, so
//! guests' Bochs/QEMU display drivers (Linux bochs-drm, Windows' generic VGA) bind to it.

use super::vbe::LFB_SIZE;

/// Identity and resources of the VGA PCI function. The machine builds config space from
/// this; BAR0 (the linear framebuffer) maps to [`super::Vga::lfb_read`]/`lfb_write`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PciDescription {
    pub vendor_id: u16,
    pub device_id: u16,
    pub revision: u8,
    /// Base class 0x03 (display controller).
    pub class: u8,
    /// Subclass 0x00 (VGA compatible): legacy ports 0x3B0-0x3DF and memory 0xA0000.
    pub subclass: u8,
    pub prog_if: u8,
    pub subsystem_vendor_id: u16,
    pub subsystem_id: u16,
    /// BAR0: 32-bit prefetchable memory, the linear framebuffer.
    pub bar0_size: u32,
    pub bar0_prefetchable: bool,
}

pub const PCI_DESCRIPTION: PciDescription = PciDescription {
    vendor_id: 0x1234,
    device_id: 0x1111,
    revision: 0x02,
    class: 0x03,
    subclass: 0x00,
    prog_if: 0x00,
    subsystem_vendor_id: 0x1AF4,
    subsystem_id: 0x1100,
    bar0_size: LFB_SIZE as u32,
    bar0_prefetchable: true,
};
