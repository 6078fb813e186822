use super::*;
use crate::devices::test_ram::Ram;
use crate::devices::usb::hid::{HidDevice, HidKind};
use crate::devices::usb::{
    REQ_GET_DESCRIPTOR, REQ_SET_ADDRESS, REQ_SET_CONFIGURATION, SetupPacket,
    test_request as request,
};

impl Ram {
    fn u32(&mut self, addr: u32) -> u32 {
        read_u32(self, u64::from(addr)).unwrap()
    }
    fn set_u32(&mut self, addr: u32, value: u32) {
        write_u32(self, u64::from(addr), value).unwrap();
    }
}

const FRAME_LIST: u32 = 0x1000;
const QH: u32 = 0x2000;
const TDS: u32 = 0x3000;
const BUFFERS: u32 = 0x8000;

fn io_read(hc: &mut Uhci, offset: u64) -> u16 {
    hc.bar_read(4, offset, 2) as u16
}

fn io_write(hc: &mut Uhci, offset: u64, value: u16) {
    hc.bar_write(4, offset, 2, u64::from(value));
}

/// A running controller whose whole frame list points at one QH (element list empty),
/// with a tablet on port 0 that has been reset and enabled.
fn running_controller() -> (Uhci, Ram) {
    let mut hc = Uhci::new(DEVICE_ID_UHCI1, 1, true);
    assert!(
        hc.root_ports()
            .attach(0, Box::new(HidDevice::new(HidKind::Tablet)))
            .is_ok()
    );
    let mut ram = Ram(vec![0; 1 << 20]);
    for i in 0..1024 {
        ram.set_u32(FRAME_LIST + 4 * i, QH | LINK_QH);
    }
    ram.set_u32(QH, LINK_TERMINATE);
    ram.set_u32(QH + 4, LINK_TERMINATE);
    hc.bar_write(4, FLBASEADD, 4, u64::from(FRAME_LIST));
    io_write(&mut hc, PORTSC1, PORT_RESET);
    io_write(&mut hc, PORTSC1, 0);
    io_write(&mut hc, PORTSC1, PORT_ENABLED | PORT_CONNECT_CHANGE);
    io_write(
        &mut hc,
        USBINTR,
        INTR_IOC | INTR_TIMEOUT_CRC | INTR_SHORT_PACKET,
    );
    io_write(&mut hc, USBCMD, CMD_RS);
    (hc, ram)
}

/// `f` on the controller's first HID device.
fn with_hid<R>(hc: &Uhci, f: impl FnOnce(&mut HidDevice) -> R) -> Option<R> {
    let mut f = Some(f);
    hc.root_ports().find_map(|d| {
        let hid = d.as_any_mut().downcast_mut::<HidDevice>()?;
        f.take().map(|f| f(hid))
    })
}

/// Advances the clock by `frames` ms and runs what is due.
fn run_frames(hc: &mut Uhci, ram: &mut Ram, frames: u64) {
    for _ in 0..frames {
        let now = hc.now_ns + FRAME_NS;
        hc.advance(now);
        if hc.dma_pending() {
            hc.run_dma(ram, now);
        }
    }
}

/// Writes a TD at `at` linking to `link`.
#[allow(clippy::too_many_arguments)]
fn td(
    ram: &mut Ram,
    at: u32,
    link: u32,
    pid: u8,
    address: u8,
    endpoint: u8,
    len: usize,
    buffer: u32,
    flags: u32,
) {
    let max_len = (len as u32).wrapping_sub(1) & 0x7FF;
    ram.set_u32(at, link);
    ram.set_u32(at + 4, TD_ACTIVE | 3 << TD_ERROR_COUNT_SHIFT | flags);
    ram.set_u32(
        at + 8,
        max_len << 21 | u32::from(endpoint) << 15 | u32::from(address) << 8 | u32::from(pid),
    );
    ram.set_u32(at + 12, buffer);
}

/// Queues a whole control transfer (SETUP, 8-byte data packets, status) on the QH,
/// depth first; returns the TD addresses.
fn control_transfer(ram: &mut Ram, address: u8, setup: SetupPacket) -> Vec<u32> {
    ram.0[BUFFERS as usize..BUFFERS as usize + 8].copy_from_slice(&setup.bytes());
    let mut tds = Vec::new();
    let data_packets = usize::from(setup.length).div_ceil(8);
    let count = 2 + data_packets;
    for i in 0..count {
        let at = TDS + 32 * i as u32;
        let link = if i + 1 == count {
            LINK_TERMINATE
        } else {
            (at + 32) | LINK_DEPTH_FIRST
        };
        let (pid, len, buffer) = if i == 0 {
            (PID_SETUP, 8, BUFFERS)
        } else if i + 1 == count {
            (if setup.is_in() { PID_OUT } else { PID_IN }, 0, 0)
        } else {
            let data_pid = if setup.is_in() { PID_IN } else { PID_OUT };
            (data_pid, 8, BUFFERS + 0x100 + 8 * (i as u32 - 1))
        };
        let flags = if i + 1 == count { TD_IOC } else { 0 };
        td(ram, at, link, pid, address, 0, len, buffer, flags);
        tds.push(at);
    }
    ram.set_u32(QH + 4, TDS);
    tds
}

#[test]
fn port_reset_and_enable_follow_the_driver_and_ports_count_two() {
    let mut hc = Uhci::new(DEVICE_ID_UHCI1, 1, true);
    assert_eq!(io_read(&mut hc, PORTSC1), PORT_ALWAYS_ONE);
    assert!(
        hc.root_ports()
            .attach(0, Box::new(HidDevice::new(HidKind::Keyboard)))
            .is_ok()
    );
    let port = io_read(&mut hc, PORTSC1);
    assert_eq!(
        port,
        PORT_ALWAYS_ONE | PORT_CONNECTED | PORT_CONNECT_CHANGE | PORT_LINE_DPLUS
    );
    // Enabling needs the reset sequence first in a driver, but the bit is plain RW.
    io_write(&mut hc, PORTSC1, PORT_RESET | PORT_CONNECT_CHANGE);
    let port = io_read(&mut hc, PORTSC1);
    assert_eq!(
        port & (PORT_RESET | PORT_CONNECT_CHANGE | PORT_ENABLED),
        PORT_RESET
    );
    io_write(&mut hc, PORTSC1, 0);
    io_write(&mut hc, PORTSC1, PORT_ENABLED);
    assert_ne!(io_read(&mut hc, PORTSC1) & PORT_ENABLED, 0);
    // An empty port cannot be enabled; the third "port" has bit 7 clear.
    io_write(&mut hc, PORTSC1 + 2, PORT_ENABLED);
    assert_eq!(io_read(&mut hc, PORTSC1 + 2), PORT_ALWAYS_ONE);
    assert_eq!(io_read(&mut hc, PORTSC1 + 4) & PORT_ALWAYS_ONE, 0);
    // Unplugging reports both changes.
    assert!(hc.root_ports().detach(0).is_some());
    assert_eq!(
        io_read(&mut hc, PORTSC1),
        PORT_ALWAYS_ONE | PORT_CONNECT_CHANGE | PORT_ENABLE_CHANGE
    );
    // Halted until run; HCRESET restores defaults.
    assert_eq!(io_read(&mut hc, USBSTS), STS_HALTED);
    io_write(&mut hc, SOFMOD, 0x20);
    io_write(&mut hc, USBCMD, CMD_HCRESET);
    assert_eq!(io_read(&mut hc, SOFMOD) as u8, 64);
}

#[test]
fn control_transfers_enumerate_a_device_through_the_schedule() {
    let (mut hc, mut ram) = running_controller();
    assert!(!hc.irq_level());
    let tds = control_transfer(&mut ram, 0, request(0x80, REQ_GET_DESCRIPTOR, 0x0100, 18));
    run_frames(&mut hc, &mut ram, 1);
    // Depth first: the whole transfer runs in one frame.
    for &at in &tds {
        assert_eq!(ram.u32(at + 4) & TD_ACTIVE, 0, "TD {at:#x} done");
    }
    let descriptor = &ram.0[BUFFERS as usize + 0x100..BUFFERS as usize + 0x100 + 18];
    assert_eq!(&descriptor[..2], &[18, 1]);
    // Actual lengths: 8, 8, 2 (n-1 encoded), the status stage 0 (0x7FF).
    assert_eq!(ram.u32(tds[2] + 4) & TD_ACTLEN, 7);
    assert_eq!(ram.u32(tds[3] + 4) & TD_ACTLEN, 1);
    assert_eq!(ram.u32(tds[4] + 4) & TD_ACTLEN, 0x7FF);
    assert_eq!(
        ram.u32(QH + 4),
        LINK_TERMINATE,
        "the queue advanced to its end"
    );
    assert!(hc.irq_level(), "IOC on the status stage");
    assert_ne!(io_read(&mut hc, USBSTS) & STS_USBINT, 0);
    io_write(&mut hc, USBSTS, STS_USBINT);
    assert!(!hc.irq_level());
    assert_eq!(io_read(&mut hc, FRNUM), 1);

    // SET_ADDRESS 3, then SET_CONFIGURATION at the new address.
    control_transfer(&mut ram, 0, request(0, REQ_SET_ADDRESS, 3, 0));
    run_frames(&mut hc, &mut ram, 1);
    control_transfer(&mut ram, 3, request(0, REQ_SET_CONFIGURATION, 1, 0));
    run_frames(&mut hc, &mut ram, 1);
    assert_eq!(with_hid(&hc, |tablet| tablet.configured()), Some(true));

    // Interrupt IN: NAK keeps the TD active without an interrupt; a report completes it.
    io_write(&mut hc, USBSTS, 0x3F);
    td(
        &mut ram,
        TDS,
        LINK_TERMINATE,
        PID_IN,
        3,
        1,
        8,
        BUFFERS,
        TD_IOC | TD_SHORT_PACKET_DETECT,
    );
    ram.set_u32(QH + 4, TDS);
    run_frames(&mut hc, &mut ram, 3);
    assert_ne!(ram.u32(TDS + 4) & TD_ACTIVE, 0);
    assert_ne!(ram.u32(TDS + 4) & TD_NAK, 0);
    assert!(!hc.irq_level());
    with_hid(&hc, |tablet| tablet.tablet_event(0x4000, 0x2000, 1, 0)).unwrap();
    run_frames(&mut hc, &mut ram, 1);
    assert_eq!(ram.u32(TDS + 4) & (TD_ACTIVE | TD_NAK | TD_ACTLEN), 5);
    assert_eq!(
        &ram.0[BUFFERS as usize..BUFFERS as usize + 6],
        &[1, 0, 0x40, 0, 0x20, 0]
    );
    // Short packet with SPD: the queue stays on the TD, and the interrupt is raised.
    assert_eq!(ram.u32(QH + 4), TDS);
    assert!(hc.irq_level());
}

#[test]
fn tokens_to_absent_devices_time_out_with_an_error_interrupt() {
    let (mut hc, mut ram) = running_controller();
    td(&mut ram, TDS, LINK_TERMINATE, PID_IN, 42, 1, 8, BUFFERS, 0);
    ram.set_u32(QH + 4, TDS);
    run_frames(&mut hc, &mut ram, 1);
    let status = ram.u32(TDS + 4);
    assert_eq!(status & (TD_ACTIVE | TD_CRC_TIMEOUT), TD_CRC_TIMEOUT);
    assert_ne!(io_read(&mut hc, USBSTS) & STS_USBERRINT, 0);
    assert!(hc.irq_level());
    // A stalled request (unknown descriptor type) stalls its data stage.
    io_write(&mut hc, USBSTS, 0x3F);
    let tds = control_transfer(&mut ram, 0, request(0x80, REQ_GET_DESCRIPTOR, 0x0900, 8));
    run_frames(&mut hc, &mut ram, 1);
    assert_ne!(ram.u32(tds[1] + 4) & TD_STALLED, 0);
    assert_eq!(
        ram.u32(QH + 4) & LINK_ADDRESS,
        tds[1],
        "the queue stops at the failed TD"
    );
}

#[test]
fn hostile_schedules_cost_bounded_work_per_frame() {
    let (mut hc, mut ram) = running_controller();
    // Frame entries point at a TD linking to itself horizontally, and a QH chain loops.
    ram.set_u32(TDS, TDS); // TD, link = itself (not a QH)
    ram.set_u32(TDS + 4, 0); // inactive
    for i in 0..1024 {
        let entry = if i % 2 == 0 { TDS } else { QH | LINK_QH };
        ram.set_u32(FRAME_LIST + 4 * i, entry);
    }
    ram.set_u32(QH, (QH + 0x10) | LINK_QH);
    ram.set_u32(QH + 4, LINK_TERMINATE);
    ram.set_u32(QH + 0x10, QH | LINK_QH);
    ram.set_u32(QH + 0x14, (TDS + 0x40) | LINK_QH); // a QH as element: skipped
    let start = std::time::Instant::now();
    run_frames(&mut hc, &mut ram, 200);
    assert!(start.elapsed() < std::time::Duration::from_secs(2));
    assert_eq!(io_read(&mut hc, FRNUM), 200);
    assert_eq!(io_read(&mut hc, USBSTS) & STS_HALTED, 0, "still running");
    // A vertical TD chain that loops back to itself with depth first: each TD runs once.
    td(
        &mut ram,
        TDS + 0x100,
        (TDS + 0x120) | LINK_DEPTH_FIRST,
        PID_OUT,
        0,
        0,
        0,
        0,
        0,
    );
    td(
        &mut ram,
        TDS + 0x120,
        (TDS + 0x100) | LINK_DEPTH_FIRST,
        PID_OUT,
        0,
        0,
        0,
        0,
        0,
    );
    ram.set_u32(QH + 4, TDS + 0x100);
    run_frames(&mut hc, &mut ram, 2);
    // Missed frames are skipped, not replayed: a 10 s jump is a few frames of work.
    let now = hc.now_ns + 10_000 * FRAME_NS;
    hc.advance(now);
    hc.run_dma(&mut ram, now);
    assert_eq!(io_read(&mut hc, FRNUM), (202 + 10_000) & 0x7FF);
    assert!(!hc.dma_pending());
    // A frame list outside RAM stops the controller with a host system error.
    hc.bar_write(4, FLBASEADD, 4, 0xFFFF_F000);
    run_frames(&mut hc, &mut ram, 1);
    let status = io_read(&mut hc, USBSTS);
    assert_eq!(
        status & (STS_HOST_ERROR | STS_HALTED),
        STS_HOST_ERROR | STS_HALTED
    );
    assert!(hc.irq_level());
    assert_eq!(hc.next_deadline_ns(), None);
}

#[test]
fn bad_tokens_and_lengths_are_process_errors() {
    let (mut hc, mut ram) = running_controller();
    td(&mut ram, TDS, LINK_TERMINATE, 0x55, 0, 0, 8, BUFFERS, 0);
    ram.set_u32(QH + 4, TDS);
    run_frames(&mut hc, &mut ram, 1);
    assert_ne!(io_read(&mut hc, USBSTS) & STS_PROCESS_ERROR, 0);
    assert_ne!(io_read(&mut hc, USBSTS) & STS_HALTED, 0);
    // Dword access at PORTSC1 sees both ports.
    let both = hc.bar_read(4, PORTSC1, 4) as u32;
    assert_eq!(both >> 16, u32::from(PORT_ALWAYS_ONE));
}
