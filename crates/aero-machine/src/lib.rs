//! One PC: memory map, port/MMIO dispatch, PCI bus, interrupt controllers, timers and
//! the run loop with its virtual clock. Owns and wires every device.
#![forbid(unsafe_code)]

pub mod audio;
mod clock;
pub mod devices;
mod firmware_host;
mod guest_ram;
mod machine;
mod memory_map;
pub mod net;
mod pci_bus;
mod platform;
mod trace;

pub use aero_storage::ide::{CdStatus, MediaError};
pub use machine::floppy_media::FloppyStatus;
pub use machine::host_gamepad::{GamepadAxis, GamepadError, GamepadInput};
pub use machine::host_io::tablet_coordinate;
pub use machine::{
    BootDevice, DriveSlot, Frame, HDA_ADDRESS, LinuxBoot, LinuxBootError, MacAddress, Machine,
    MachineConfig, MachineError, NIC_ADDRESS, RunEvent,
};
