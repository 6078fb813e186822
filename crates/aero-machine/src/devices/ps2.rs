//! The interface between the 8042 keyboard controller and the PS/2 devices on its two
//! ports (keyboard and auxiliary/mouse): bytes in, bytes out, nothing else, as in the IBM
//! PS/2 hardware interface technical reference. Shared protocol bytes live here.

/// Acknowledge of a command or parameter byte.
pub const ACK: u8 = 0xFA;
/// "Resend": the device did not understand the byte.
pub const RESEND: u8 = 0xFE;
/// Command answers a device keeps queued (the longest answer is 4 bytes).
pub const MAX_RESPONSES: usize = 16;

/// A device on one of the controller's PS/2 ports.
pub trait Ps2Device {
    /// A byte the host (controller) sent to the device.
    fn write(&mut self, byte: u8);
    /// Next byte the device wants to send to the controller.
    fn pop(&mut self) -> Option<u8>;
    /// The device has a byte to send.
    fn has_data(&self) -> bool;
}
