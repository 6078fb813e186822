//! How AeroGPU appears on the PCI bus (values from `aerogpu_pci.h`).

use aero_protocol::pci;

/// Identity and resources of the AeroGPU PCI function. The machine builds config space
/// from this; BAR0 maps to [`super::AeroGpu::mmio_read`]/[`super::AeroGpu::mmio_write`],
/// and the function's INTx pin follows [`super::AeroGpu::irq_level`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AeroGpuPciDescription {
    pub vendor_id: u16,
    pub device_id: u16,
    pub revision: u8,
    pub class: u8,
    pub subclass: u8,
    pub prog_if: u8,
    pub subsystem_vendor_id: u16,
    pub subsystem_id: u16,
    /// BAR0: 32-bit non-prefetchable memory, the register block.
    pub bar0_size: u32,
    /// The BAR that maps the legacy VGA's VBE linear framebuffer (the one display function
    /// carries both models).
    pub lfb_bar_index: u8,
    /// INTA#.
    pub interrupt_pin: u8,
}

pub const AEROGPU_PCI_DESCRIPTION: AeroGpuPciDescription = AeroGpuPciDescription {
    vendor_id: pci::VENDOR_ID,
    device_id: pci::DEVICE_ID,
    revision: pci::REVISION_ID,
    class: pci::CLASS_CODE,
    subclass: pci::SUBCLASS,
    prog_if: pci::PROG_IF,
    subsystem_vendor_id: pci::SUBSYSTEM_VENDOR_ID,
    subsystem_id: pci::SUBSYSTEM_ID,
    bar0_size: pci::BAR0_SIZE_BYTES,
    lfb_bar_index: pci::LFB_BAR_INDEX as u8,
    interrupt_pin: 1,
};
