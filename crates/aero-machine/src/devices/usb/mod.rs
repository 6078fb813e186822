//! USB: host controllers and the devices on their ports.
//!
//! A host controller (`uhci.rs`, `ehci.rs`, which routes full/low-speed ports to its UHCI
//! companions) walks the guest's schedule and turns each transfer descriptor into one
//! token for a [`UsbDevice`]: SETUP/OUT carry data to the device, IN asks for data. A
//! device answers ACK (with a length), NAK (nothing now, try again next frame) or STALL.
//! Devices know nothing about the controller: the same device works behind any of them.
//!
//! [`ControlPipe`] runs the three stages of control transfers on endpoint 0 for a device,
//! which only answers whole requests ([`SetupPacket`] in, bytes or a stall out).

pub mod ehci;
pub mod hid;
pub mod root_ports;
pub mod uhci;

use std::any::Any;

use aero_storage::ide::GuestMemory;

/// One little-endian dword of a guest schedule; `None` when the address is outside RAM.
pub(crate) fn read_u32(ram: &mut dyn GuestMemory, address: u64) -> Option<u32> {
    let mut b = [0u8; 4];
    ram.read(address, &mut b).ok()?;
    Some(u32::from_le_bytes(b))
}

/// Writes one dword of a guest schedule back; `None` when the address is outside RAM.
pub(crate) fn write_u32(ram: &mut dyn GuestMemory, address: u64, value: u32) -> Option<()> {
    ram.write(address, &value.to_le_bytes()).ok()
}

/// Bus speed of a device (the root port reports low speed in PORTSC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsbSpeed {
    Low,
    Full,
    High,
}

/// Token packet identifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsbPid {
    Setup,
    In,
    Out,
}

/// A device's handshake for one token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsbResponse {
    /// Accepted; for IN, this many bytes were written into the buffer.
    Ack(usize),
    /// No data now (interrupt IN without a report): the controller retries later.
    Nak,
    /// The endpoint refuses the request.
    Stall,
}

/// A USB device as a host controller port sees it.
pub trait UsbDevice: Send {
    fn speed(&self) -> UsbSpeed;
    /// The address the device answers to (0 until SET_ADDRESS).
    fn address(&self) -> u8;
    /// USB bus reset (port reset): address 0, unconfigured, pipes idle.
    fn reset(&mut self);
    /// One token to `endpoint`. For SETUP/OUT `data` holds the payload; for IN the device
    /// writes at most `data.len()` bytes into it and returns how many.
    fn handle_token(&mut self, pid: UsbPid, endpoint: u8, data: &mut [u8]) -> UsbResponse;
    /// For the machine's host-input paths, which need the concrete device.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// The 8-byte SETUP stage of a control transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetupPacket {
    pub request_type: u8,
    pub request: u8,
    pub value: u16,
    pub index: u16,
    pub length: u16,
}

impl SetupPacket {
    pub fn parse(bytes: &[u8]) -> Option<SetupPacket> {
        let b: &[u8; 8] = bytes.get(..8)?.try_into().ok()?;
        Some(SetupPacket {
            request_type: b[0],
            request: b[1],
            value: u16::from_le_bytes([b[2], b[3]]),
            index: u16::from_le_bytes([b[4], b[5]]),
            length: u16::from_le_bytes([b[6], b[7]]),
        })
    }

    /// Device-to-host data stage.
    pub fn is_in(&self) -> bool {
        self.request_type & 0x80 != 0
    }

    pub fn bytes(&self) -> [u8; 8] {
        let [v0, v1] = self.value.to_le_bytes();
        let [i0, i1] = self.index.to_le_bytes();
        let [l0, l1] = self.length.to_le_bytes();
        [self.request_type, self.request, v0, v1, i0, i1, l0, l1]
    }
}

// Standard requests (USB 2.0 §9.4).
pub const REQ_GET_STATUS: u8 = 0x00;
pub const REQ_CLEAR_FEATURE: u8 = 0x01;
pub const REQ_SET_FEATURE: u8 = 0x03;
pub const REQ_SET_ADDRESS: u8 = 0x05;
pub const REQ_GET_DESCRIPTOR: u8 = 0x06;
pub const REQ_GET_CONFIGURATION: u8 = 0x08;
pub const REQ_SET_CONFIGURATION: u8 = 0x09;
pub const REQ_GET_INTERFACE: u8 = 0x0A;
pub const REQ_SET_INTERFACE: u8 = 0x0B;

pub const DESC_DEVICE: u8 = 1;
pub const DESC_CONFIGURATION: u8 = 2;
pub const DESC_STRING: u8 = 3;

/// Where a control transfer is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum ControlStage {
    #[default]
    Idle,
    /// Sending the answer; `sent` bytes so far.
    DataIn { data: Vec<u8>, sent: usize },
    /// Gathering the host's data for `setup`.
    DataOut { setup: SetupPacket, data: Vec<u8> },
    /// Request done; the host's zero-length IN (after an OUT request) ends it.
    StatusIn { setup: SetupPacket },
    /// The request stalled: every token but a new SETUP stalls.
    Stalled,
}

/// Runs control transfers on endpoint 0: stages, chunking by the host's packet size,
/// stalls. The device answers whole requests through a closure.
#[derive(Clone, Debug, Default)]
pub struct ControlPipe {
    stage: ControlStage,
    /// The request whose status stage just completed (taken by the device: SET_ADDRESS
    /// takes effect only then).
    completed: Option<SetupPacket>,
}

/// Answers one control request: `out` is the host's data stage (empty for IN requests);
/// `Ok` carries the IN data (truncated to wLength here), `Err` stalls.
pub type ControlResult = Result<Vec<u8>, ()>;

impl ControlPipe {
    pub fn reset(&mut self) {
        *self = ControlPipe::default();
    }

    /// The request whose status stage completed with the last token, once.
    pub fn take_completed(&mut self) -> Option<SetupPacket> {
        self.completed.take()
    }

    pub fn token(
        &mut self,
        pid: UsbPid,
        data: &mut [u8],
        mut request: impl FnMut(&SetupPacket, &[u8]) -> ControlResult,
    ) -> UsbResponse {
        match pid {
            UsbPid::Setup => {
                let Some(setup) = SetupPacket::parse(data) else {
                    self.stage = ControlStage::Stalled;
                    return UsbResponse::Stall;
                };
                self.stage = if setup.is_in() {
                    match request(&setup, &[]) {
                        Ok(mut answer) => {
                            answer.truncate(usize::from(setup.length));
                            ControlStage::DataIn {
                                data: answer,
                                sent: 0,
                            }
                        }
                        Err(()) => ControlStage::Stalled,
                    }
                } else if setup.length == 0 {
                    match request(&setup, &[]) {
                        Ok(_) => ControlStage::StatusIn { setup },
                        Err(()) => ControlStage::Stalled,
                    }
                } else {
                    ControlStage::DataOut {
                        setup,
                        data: Vec::new(),
                    }
                };
                // The SETUP itself is always acknowledged; a refusal stalls the next stage.
                UsbResponse::Ack(8)
            }
            UsbPid::In => match &mut self.stage {
                ControlStage::DataIn { data: answer, sent } => {
                    let n = (answer.len() - *sent).min(data.len());
                    data[..n].copy_from_slice(&answer[*sent..*sent + n]);
                    *sent += n;
                    UsbResponse::Ack(n)
                }
                ControlStage::StatusIn { setup } => {
                    self.completed = Some(*setup);
                    self.stage = ControlStage::Idle;
                    UsbResponse::Ack(0)
                }
                _ => UsbResponse::Stall,
            },
            UsbPid::Out => match &mut self.stage {
                // The host's zero-length OUT is the status stage of an IN request (it
                // may end the data stage early).
                ControlStage::DataIn { .. } => {
                    self.stage = ControlStage::Idle;
                    UsbResponse::Ack(0)
                }
                ControlStage::DataOut { setup, data: got } => {
                    let want = usize::from(setup.length);
                    let n = data.len().min(want - got.len());
                    got.extend_from_slice(&data[..n]);
                    if got.len() == want {
                        let setup = *setup;
                        let got = std::mem::take(got);
                        self.stage = match request(&setup, &got) {
                            Ok(_) => ControlStage::StatusIn { setup },
                            Err(()) => ControlStage::Stalled,
                        };
                    }
                    UsbResponse::Ack(n)
                }
                _ => UsbResponse::Stall,
            },
        }
    }
}

/// A string descriptor for `text` (UTF-16LE), at most 255 bytes.
pub fn string_descriptor(text: &str) -> Vec<u8> {
    let mut d = vec![0, DESC_STRING];
    for unit in text.encode_utf16().take(126) {
        d.extend_from_slice(&unit.to_le_bytes());
    }
    d[0] = d.len() as u8;
    d
}

/// The request the tests send: index 0 (the device, interface 0 or endpoint 0).
#[cfg(test)]
pub(crate) fn test_request(request_type: u8, request: u8, value: u16, length: u16) -> SetupPacket {
    SetupPacket {
        request_type,
        request,
        value,
        index: 0,
        length,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(request_type: u8, request: u8, value: u16, length: u16) -> [u8; 8] {
        test_request(request_type, request, value, length).bytes()
    }

    #[test]
    fn control_in_is_chunked_truncated_and_ends_with_status_out() {
        let mut pipe = ControlPipe::default();
        let answer = |_: &SetupPacket, _: &[u8]| Ok((0u8..20).collect());
        let mut s = setup(0x80, REQ_GET_DESCRIPTOR, 0x0100, 12);
        assert_eq!(
            pipe.token(UsbPid::Setup, &mut s, answer),
            UsbResponse::Ack(8)
        );
        let mut buf = [0u8; 8];
        assert_eq!(
            pipe.token(UsbPid::In, &mut buf, answer),
            UsbResponse::Ack(8)
        );
        assert_eq!(buf, [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(
            pipe.token(UsbPid::In, &mut buf, answer),
            UsbResponse::Ack(4)
        );
        assert_eq!(&buf[..4], &[8, 9, 10, 11]);
        assert_eq!(
            pipe.token(UsbPid::In, &mut buf, answer),
            UsbResponse::Ack(0)
        );
        assert_eq!(
            pipe.token(UsbPid::Out, &mut [], answer),
            UsbResponse::Ack(0)
        );
        // Nothing is going on now.
        assert_eq!(pipe.token(UsbPid::In, &mut buf, answer), UsbResponse::Stall);
    }

    #[test]
    fn control_out_data_reaches_the_request_and_status_in_completes_it() {
        let mut pipe = ControlPipe::default();
        let mut seen = Vec::new();
        let mut s = setup(0x21, 0x09, 0x0200, 1);
        pipe.token(UsbPid::Setup, &mut s, |_, _| Ok(vec![]));
        let r = pipe.token(UsbPid::Out, &mut [0x05], |_, d| {
            seen = d.to_vec();
            Ok(vec![])
        });
        assert_eq!(r, UsbResponse::Ack(1));
        assert_eq!(seen, [0x05]);
        assert_eq!(pipe.take_completed(), None);
        assert_eq!(
            pipe.token(UsbPid::In, &mut [], |_, _| Ok(vec![])),
            UsbResponse::Ack(0)
        );
        assert_eq!(pipe.take_completed().map(|s| s.request), Some(0x09));
    }

    #[test]
    fn refused_request_stalls_until_the_next_setup() {
        let mut pipe = ControlPipe::default();
        let mut s = setup(0x80, 0x77, 0, 8);
        assert_eq!(
            pipe.token(UsbPid::Setup, &mut s, |_, _| Err(())),
            UsbResponse::Ack(8)
        );
        assert_eq!(
            pipe.token(UsbPid::In, &mut [0; 8], |_, _| Err(())),
            UsbResponse::Stall
        );
        // A short SETUP stalls too.
        assert_eq!(
            pipe.token(UsbPid::Setup, &mut [0; 3], |_, _| Ok(vec![])),
            UsbResponse::Stall
        );
    }

    #[test]
    fn string_descriptor_is_utf16_with_its_length() {
        assert_eq!(string_descriptor("Ab"), [6, 3, b'A', 0, b'b', 0]);
        assert_eq!(string_descriptor(&"x".repeat(400)).len(), 254);
    }
}
