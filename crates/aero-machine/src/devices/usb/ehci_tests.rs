use super::*;
use crate::devices::test_ram::Ram;
use crate::devices::usb::hid::{HidDevice, HidKind};
use crate::devices::usb::uhci::{self, Uhci};
use crate::devices::usb::{
    ControlPipe, REQ_GET_DESCRIPTOR, SetupPacket, UsbDevice, test_request as request,
};

/// Dword access for these tests (the UHCI tests have their own).
trait Words {
    fn u32(&mut self, addr: u32) -> u32;
    fn set_u32(&mut self, addr: u32, value: u32);
    fn or_u32(&mut self, addr: u32, bits: u32);
    fn and_u32(&mut self, addr: u32, mask: u32);
}

impl Words for Ram {
    fn u32(&mut self, addr: u32) -> u32 {
        read_u32(self, u64::from(addr)).unwrap()
    }
    fn set_u32(&mut self, addr: u32, value: u32) {
        write_u32(self, u64::from(addr), value).unwrap();
    }
    fn or_u32(&mut self, addr: u32, bits: u32) {
        let value = self.u32(addr) | bits;
        self.set_u32(addr, value);
    }
    fn and_u32(&mut self, addr: u32, mask: u32) {
        let value = self.u32(addr) & mask;
        self.set_u32(addr, value);
    }
}

/// A high-speed test device at address 0: control requests on endpoint 0 answer
/// `DESCRIPTOR`, bulk IN endpoint 1 sends `in_data` (NAK while empty), bulk OUT endpoint 2
/// keeps what it gets. Every token is counted.
struct TestDevice {
    speed: UsbSpeed,
    pipe: ControlPipe,
    in_data: Vec<u8>,
    received: Vec<u8>,
    tokens: usize,
    resets: usize,
}

const DESCRIPTOR: [u8; 18] = [18, 1, 0, 2, 0, 0, 0, 64, 1, 2, 3, 4, 5, 6, 1, 2, 3, 1];

impl TestDevice {
    fn new(speed: UsbSpeed) -> TestDevice {
        TestDevice {
            speed,
            pipe: ControlPipe::default(),
            in_data: Vec::new(),
            received: Vec::new(),
            tokens: 0,
            resets: 0,
        }
    }
}

impl UsbDevice for TestDevice {
    fn speed(&self) -> UsbSpeed {
        self.speed
    }
    fn address(&self) -> u8 {
        0
    }
    fn reset(&mut self) {
        self.resets += 1;
        self.pipe.reset();
    }
    fn handle_token(&mut self, pid: UsbPid, endpoint: u8, data: &mut [u8]) -> UsbResponse {
        self.tokens += 1;
        match (endpoint, pid) {
            (0, _) => self.pipe.token(pid, data, |s: &SetupPacket, _: &[u8]| {
                if s.request == REQ_GET_DESCRIPTOR {
                    Ok(DESCRIPTOR.to_vec())
                } else {
                    Ok(Vec::new())
                }
            }),
            (1, UsbPid::In) if self.in_data.is_empty() => UsbResponse::Nak,
            (1, UsbPid::In) => {
                let n = data.len().min(self.in_data.len());
                data[..n].copy_from_slice(&self.in_data[..n]);
                self.in_data.drain(..n);
                UsbResponse::Ack(n)
            }
            (2, UsbPid::Out) => {
                self.received.extend_from_slice(data);
                UsbResponse::Ack(data.len())
            }
            _ => UsbResponse::Stall,
        }
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

const FRAME_LIST: u32 = 0x1000;
const ASYNC_QH: u32 = 0x2000;
const QH2: u32 = 0x2100;
const QTDS: u32 = 0x3000;
const BUFFERS: u32 = 0x8000;

fn read(hc: &mut Ehci, register: u64) -> u32 {
    hc.bar_read(0, CAPLENGTH + register, 4) as u32
}

fn write(hc: &mut Ehci, register: u64, value: u32) {
    hc.bar_write(0, CAPLENGTH + register, 4, u64::from(value));
}

fn portsc(port: usize) -> u64 {
    PORTSC + 4 * port as u64
}

/// `f` on the test device in `port`.
fn with_test_device<R>(root: &RootPorts, port: usize, f: impl FnOnce(&mut TestDevice) -> R) -> R {
    let mut ports = root.lock();
    let device = ports[port].device.as_mut().unwrap();
    f(device.as_any_mut().downcast_mut::<TestDevice>().unwrap())
}

/// Advances the clock by `frames` ms and runs what is due.
fn run_frames(hc: &mut Ehci, ram: &mut Ram, frames: u64) {
    for _ in 0..frames {
        let now = hc.now_ns + FRAME_NS;
        hc.advance(now);
        if hc.dma_pending() {
            hc.run_dma(ram, now);
        }
    }
}

/// Writes a QH at `at`: high speed, `endpoint` of device 0, `max_packet`, data toggle
/// from the qTDs, S-mask `smask`, overlay empty with `first` as its next qTD.
fn qh(ram: &mut Ram, at: u32, link: u32, endpoint: u32, max_packet: u32, smask: u32, first: u32) {
    ram.set_u32(at, link);
    ram.set_u32(
        at + 4,
        endpoint << 8 | SPEED_HIGH << 12 | QH_DTC | max_packet << 16,
    );
    ram.set_u32(at + 8, smask);
    ram.set_u32(at + 12, 0);
    ram.set_u32(at + 16, first);
    ram.set_u32(at + 20, LINK_TERMINATE);
    for i in 6..12 {
        ram.set_u32(at + 4 * i, 0);
    }
}

/// Writes a qTD at `at`: `pid` (0 OUT, 1 IN, 2 SETUP), `bytes` from `buffer` (pages
/// following it), active, three errors allowed.
#[allow(clippy::too_many_arguments)]
fn qtd(ram: &mut Ram, at: u32, next: u32, alt: u32, pid: u32, bytes: u32, buffer: u32, ioc: bool) {
    ram.set_u32(at, next);
    ram.set_u32(at + 4, alt);
    let ioc = if ioc { TOKEN_IOC } else { 0 };
    ram.set_u32(
        at + 8,
        bytes << TOKEN_BYTES_SHIFT
            | ioc
            | 3 << TOKEN_CERR_SHIFT
            | pid << TOKEN_PID_SHIFT
            | TOKEN_ACTIVE,
    );
    for page in 0..5 {
        let pointer = if page == 0 {
            buffer
        } else {
            (buffer & !0xFFF).wrapping_add(4096 * page)
        };
        ram.set_u32(at + 12 + 4 * page, pointer);
    }
}

/// A controller with six ports, a high-speed test device on port 0 routed to EHCI, reset
/// and enabled, interrupts on.
fn running_controller() -> (Ehci, RootPorts, Ram) {
    let root = RootPorts::new(PORTS);
    root.attach(0, Box::new(TestDevice::new(UsbSpeed::High)))
        .ok()
        .unwrap();
    let mut hc = Ehci::new(root.clone());
    let ram = Ram(vec![0; 1 << 20]);
    write(&mut hc, CONFIGFLAG, 1);
    write(&mut hc, portsc(0), PORT_RESET);
    write(&mut hc, portsc(0), 0);
    assert_ne!(read(&mut hc, portsc(0)) & PORT_PE, 0, "high speed enables");
    write(&mut hc, USBINTR, STS_EVENTS);
    write(&mut hc, USBSTS, STS_EVENTS);
    (hc, root, ram)
}

#[test]
fn capability_registers_and_power_on_state_match_ich9() {
    let mut hc = Ehci::new(RootPorts::new(PORTS));
    assert_eq!(hc.bar_read(0, 0, 1), 0x20, "CAPLENGTH");
    assert_eq!(hc.bar_read(0, 2, 2), 0x0100, "HCIVERSION");
    assert_eq!(
        hc.bar_read(0, 4, 4),
        0x3206,
        "HCSPARAMS: 3 companions x 2 ports, 6 ports"
    );
    assert_eq!(
        hc.bar_read(0, 8, 4) & 0xFF07,
        0,
        "32-bit, fixed list, no EECP"
    );
    assert_eq!(read(&mut hc, USBCMD), 0x0008_0000);
    assert_eq!(read(&mut hc, USBSTS), STS_HALTED);
    assert_eq!(read(&mut hc, CONFIGFLAG), 0);
    for port in 0..PORTS {
        assert_eq!(read(&mut hc, portsc(port)), PORT_OWNER | PORT_POWER);
    }
    assert_eq!(hc.config().u32_at(0), 0x293A_8086);
    assert_eq!(hc.config().u32_at(8) >> 8, 0x0C_03_20);
    assert_eq!(hc.config().interrupt_pin(), 4);
    assert_eq!(hc.config().u8_at(0x60), 0x20, "USB 2.0");
    assert!(!hc.irq_level());
}

#[test]
fn configflag_and_port_owner_route_a_full_speed_device_to_its_companion() {
    let root = RootPorts::new(PORTS);
    root.attach(2, Box::new(HidDevice::new(HidKind::Tablet)))
        .ok()
        .unwrap();
    let mut hc = Ehci::new(root.clone());
    // uhci2 covers ports 2 and 3.
    let mut companion = Uhci::companion(uhci::DEVICE_ID_UHCI2, 2, false, root.clone(), 2);
    let uhci_port = |c: &mut Uhci| c.bar_read(4, 0x10, 2) as u16;
    assert_eq!(
        uhci_port(&mut companion) & 1,
        1,
        "companion owns it before CONFIGFLAG"
    );

    write(&mut hc, USBINTR, STS_PCD);
    write(&mut hc, CONFIGFLAG, 1);
    let port = read(&mut hc, portsc(2));
    assert_eq!(
        port,
        PORT_CCS | PORT_CSC | PORT_LINE_J | PORT_POWER,
        "EHCI sees the connect"
    );
    assert_ne!(read(&mut hc, USBSTS) & STS_PCD, 0);
    assert!(hc.irq_level(), "port change interrupt");
    assert_eq!(
        uhci_port(&mut companion) & 3,
        2,
        "companion: disconnected, changed"
    );
    assert_eq!(
        read(&mut hc, portsc(3)),
        PORT_POWER,
        "empty port, EHCI-owned"
    );

    // The driver resets the port; a full-speed device leaves it disabled...
    write(&mut hc, portsc(2), PORT_CSC | PORT_RESET);
    assert_eq!(
        read(&mut hc, portsc(2)) & (PORT_RESET | PORT_PE),
        PORT_RESET
    );
    write(&mut hc, portsc(2), 0);
    let port = read(&mut hc, portsc(2));
    assert_eq!(port & (PORT_PE | PORT_RESET | PORT_CCS), PORT_CCS);
    // ... so it hands the port to the companion.
    write(&mut hc, portsc(2), port | PORT_OWNER);
    assert_eq!(
        read(&mut hc, portsc(2)) & (PORT_OWNER | PORT_CCS),
        PORT_OWNER
    );
    assert_eq!(
        uhci_port(&mut companion) & 3,
        3,
        "companion: connected, changed"
    );

    // Clearing CONFIGFLAG gives back every port; setting it takes them all.
    write(&mut hc, CONFIGFLAG, 0);
    write(&mut hc, CONFIGFLAG, 1);
    assert_eq!(read(&mut hc, portsc(2)) & (PORT_OWNER | PORT_CCS), PORT_CCS);
    // HCRESET routes them to the companions again.
    write(&mut hc, USBCMD, CMD_HCRESET);
    assert_eq!(read(&mut hc, CONFIGFLAG), 0);
    assert_ne!(read(&mut hc, portsc(2)) & PORT_OWNER, 0);
    assert_eq!(uhci_port(&mut companion) & 1, 1);
}

#[test]
fn low_speed_devices_show_the_k_state_and_hot_plugs_raise_port_change() {
    let root = RootPorts::new(PORTS);
    let mut hc = Ehci::new(root.clone());
    write(&mut hc, CONFIGFLAG, 1);
    write(&mut hc, USBSTS, STS_EVENTS);
    root.attach(5, Box::new(TestDevice::new(UsbSpeed::Low)))
        .ok()
        .unwrap();
    hc.advance(1);
    assert_ne!(
        read(&mut hc, USBSTS) & STS_PCD,
        0,
        "plug noticed on advance"
    );
    assert_eq!(
        read(&mut hc, portsc(5)),
        PORT_CCS | PORT_CSC | PORT_LINE_K | PORT_POWER
    );
    write(&mut hc, portsc(5), PORT_CSC);
    assert!(root.detach(5).is_some());
    assert_eq!(read(&mut hc, portsc(5)), PORT_CSC | PORT_POWER, "pulled");
}

#[test]
fn async_schedule_runs_a_control_transfer_and_raises_usbint() {
    let (mut hc, _root, mut ram) = running_controller();
    // SETUP GET_DESCRIPTOR(device, 18) -> IN 18 -> OUT status (IOC).
    let setup = request(0x80, REQ_GET_DESCRIPTOR, 0x0100, 18).bytes();
    ram.0[BUFFERS as usize..BUFFERS as usize + 8].copy_from_slice(&setup);
    qtd(
        &mut ram,
        QTDS,
        QTDS + 0x20,
        LINK_TERMINATE,
        2,
        8,
        BUFFERS,
        false,
    );
    qtd(
        &mut ram,
        QTDS + 0x20,
        QTDS + 0x40,
        LINK_TERMINATE,
        1,
        18,
        BUFFERS + 0x100,
        false,
    );
    ram.or_u32(QTDS + 0x28, TOKEN_TOGGLE);
    qtd(
        &mut ram,
        QTDS + 0x40,
        LINK_TERMINATE,
        LINK_TERMINATE,
        0,
        0,
        0,
        true,
    );
    ram.or_u32(QTDS + 0x48, TOKEN_TOGGLE);
    // The async list: one QH linking to itself.
    qh(&mut ram, ASYNC_QH, ASYNC_QH | TYPE_QH << 1, 0, 64, 0, QTDS);
    write(&mut hc, ASYNCLISTADDR, ASYNC_QH);
    write(&mut hc, USBCMD, CMD_RS | CMD_ASE);
    assert_eq!(read(&mut hc, USBSTS) & (STS_ASS | STS_HALTED), STS_ASS);
    assert!(!hc.irq_level());
    run_frames(&mut hc, &mut ram, 1);
    for i in 0..3 {
        let token = ram.u32(QTDS + 0x20 * i + 8);
        assert_eq!(
            token & (TOKEN_ACTIVE | TOKEN_HALTED | TOKEN_BYTES),
            0,
            "qTD {i}: {token:#x}"
        );
    }
    assert_eq!(&ram.0[BUFFERS as usize + 0x100..][..18], &DESCRIPTOR);
    assert_eq!(read(&mut hc, USBSTS) & STS_USBINT, STS_USBINT);
    assert!(hc.irq_level());
    // The overlay now holds the last qTD; the queue is empty.
    assert_eq!(ram.u32(ASYNC_QH + 12), QTDS + 0x40);
    write(&mut hc, USBSTS, STS_USBINT);
    assert!(!hc.irq_level());
    // The doorbell is answered.
    write(&mut hc, USBCMD, CMD_RS | CMD_ASE | CMD_IAAD);
    assert_ne!(read(&mut hc, USBSTS) & STS_IAA, 0);
    assert_eq!(read(&mut hc, USBCMD) & CMD_IAAD, 0);
}

#[test]
fn bulk_in_crosses_pages_and_a_short_packet_takes_the_alternate_next() {
    let (mut hc, root, mut ram) = running_controller();
    with_test_device(&root, 0, |d| {
        d.in_data = (0..600u32).map(|i| i as u8).collect()
    });
    // 1000 bytes from 0x100 before a page end, 512-byte packets: 512 + 88 (short).
    let buffer = BUFFERS + 0x1000 - 0x100;
    qtd(
        &mut ram,
        QTDS,
        QTDS + 0x20,
        QTDS + 0x40,
        1,
        1000,
        buffer,
        false,
    );
    qtd(
        &mut ram,
        QTDS + 0x20,
        LINK_TERMINATE,
        LINK_TERMINATE,
        1,
        8,
        BUFFERS + 0x3000,
        false,
    );
    qtd(
        &mut ram,
        QTDS + 0x40,
        LINK_TERMINATE,
        LINK_TERMINATE,
        0,
        4,
        BUFFERS + 0x4000,
        true,
    );
    ram.set_u32(QTDS + 0x40 + 12, BUFFERS + 0x4000);
    ram.0[(BUFFERS + 0x4000) as usize..][..4].copy_from_slice(b"ping");
    // The OUT qTD goes to endpoint 2 in a second QH.
    qh(&mut ram, ASYNC_QH, QH2 | TYPE_QH << 1, 1, 512, 0, QTDS);
    qh(
        &mut ram,
        QH2,
        ASYNC_QH | TYPE_QH << 1,
        2,
        512,
        0,
        LINK_TERMINATE,
    );
    write(&mut hc, ASYNCLISTADDR, ASYNC_QH);
    write(&mut hc, USBCMD, CMD_RS | CMD_ASE);
    run_frames(&mut hc, &mut ram, 1);
    let token = ram.u32(QTDS + 8);
    assert_eq!(token & (TOKEN_ACTIVE | TOKEN_HALTED), 0);
    assert_eq!(
        (token & TOKEN_BYTES) >> TOKEN_BYTES_SHIFT,
        400,
        "600 of 1000 moved"
    );
    let got = &ram.0[buffer as usize..][..600];
    assert!(
        got.iter().enumerate().all(|(i, &b)| b == i as u8),
        "data across the page"
    );
    // Short packet: USBINT, and the queue went to the alternate next (an OUT qTD, which
    // is endpoint 1's business here, so it runs there: OUT to endpoint 1 stalls).
    assert_ne!(read(&mut hc, USBSTS) & STS_USBINT, 0);
    assert_eq!(ram.u32(ASYNC_QH + 12), QTDS + 0x40);
    assert_ne!(ram.u32(QTDS + 0x40 + 8) & TOKEN_HALTED, 0, "stalled");
    assert_ne!(read(&mut hc, USBSTS) & STS_USBERRINT, 0);
    assert_ne!(ram.u32(QTDS + 0x28) & TOKEN_ACTIVE, 0, "next qTD skipped");

    // The same OUT qTD on endpoint 2's QH delivers its data.
    qtd(
        &mut ram,
        QTDS + 0x60,
        LINK_TERMINATE,
        LINK_TERMINATE,
        0,
        4,
        BUFFERS + 0x4000,
        true,
    );
    ram.set_u32(QH2 + 16, QTDS + 0x60);
    run_frames(&mut hc, &mut ram, 1);
    assert_eq!(ram.u32(QTDS + 0x68) & (TOKEN_ACTIVE | TOKEN_HALTED), 0);
    with_test_device(&root, 0, |d| assert_eq!(d.received, b"ping"));
}

#[test]
fn periodic_interrupt_qh_naks_until_data_then_completes() {
    let (mut hc, root, mut ram) = running_controller();
    for i in 0..1024 {
        ram.set_u32(FRAME_LIST + 4 * i, ASYNC_QH | TYPE_QH << 1);
    }
    qh(&mut ram, ASYNC_QH, LINK_TERMINATE, 1, 8, 0x01, QTDS);
    qtd(
        &mut ram,
        QTDS,
        LINK_TERMINATE,
        LINK_TERMINATE,
        1,
        8,
        BUFFERS,
        true,
    );
    write(&mut hc, PERIODICLISTBASE, FRAME_LIST);
    write(&mut hc, USBCMD, CMD_RS | CMD_PSE);
    assert_eq!(read(&mut hc, USBSTS) & (STS_PSS | STS_HALTED), STS_PSS);
    run_frames(&mut hc, &mut ram, 3);
    assert_ne!(
        ram.u32(ASYNC_QH + 24) & TOKEN_ACTIVE,
        0,
        "NAKed, still active"
    );
    assert!(!hc.irq_level());
    with_test_device(&root, 0, |d| d.in_data = vec![1, 2, 3]);
    run_frames(&mut hc, &mut ram, 1);
    let token = ram.u32(QTDS + 8);
    assert_eq!(token & (TOKEN_ACTIVE | TOKEN_HALTED), 0);
    assert_eq!((token & TOKEN_BYTES) >> TOKEN_BYTES_SHIFT, 5);
    assert_eq!(&ram.0[BUFFERS as usize..][..3], &[1, 2, 3]);
    assert!(hc.irq_level());
    // FRINDEX counted eight microframes per frame.
    assert_eq!(read(&mut hc, FRINDEX), 4 * 8);
}

#[test]
fn frame_index_runs_only_while_running_and_rollover_sets_flr() {
    let mut hc = Ehci::new(RootPorts::new(PORTS));
    write(&mut hc, FRINDEX, 0x1FF0);
    hc.advance(10_000_000);
    assert_eq!(read(&mut hc, FRINDEX), 0x1FF0, "halted: frozen");
    write(&mut hc, USBINTR, STS_FLR);
    write(&mut hc, USBCMD, CMD_RS);
    let deadline = hc.next_deadline_ns().unwrap();
    assert_eq!(deadline, 10_000_000 + 16 * MICROFRAME_NS);
    hc.advance(deadline);
    assert_eq!(read(&mut hc, FRINDEX), 0x2000);
    assert_ne!(read(&mut hc, USBSTS) & STS_FLR, 0);
    assert!(hc.irq_level());
    write(&mut hc, USBCMD, 0);
    hc.advance(deadline + 5 * MICROFRAME_NS);
    assert_eq!(read(&mut hc, FRINDEX), 0x2000);
    write(&mut hc, FRINDEX, 0x100);
    assert_eq!(read(&mut hc, FRINDEX), 0x100);
}

#[test]
fn errors_retry_then_halt_and_absent_devices_time_out() {
    let (mut hc, _root, mut ram) = running_controller();
    // Device 5 does not exist: three errors allowed, then halted.
    qh(&mut ram, ASYNC_QH, ASYNC_QH | TYPE_QH << 1, 1, 64, 0, QTDS);
    ram.or_u32(ASYNC_QH + 4, 5);
    qtd(
        &mut ram,
        QTDS,
        LINK_TERMINATE,
        LINK_TERMINATE,
        1,
        8,
        BUFFERS,
        false,
    );
    write(&mut hc, ASYNCLISTADDR, ASYNC_QH);
    write(&mut hc, USBCMD, CMD_RS | CMD_ASE);
    run_frames(&mut hc, &mut ram, 2);
    assert_eq!(
        ram.u32(ASYNC_QH + 24) & (TOKEN_ACTIVE | TOKEN_XACT_ERROR),
        TOKEN_ACTIVE | TOKEN_XACT_ERROR
    );
    assert!(!hc.irq_level());
    run_frames(&mut hc, &mut ram, 1);
    let token = ram.u32(QTDS + 8);
    assert_eq!(
        token & (TOKEN_ACTIVE | TOKEN_HALTED | TOKEN_CERR),
        TOKEN_HALTED
    );
    assert_ne!(read(&mut hc, USBSTS) & STS_USBERRINT, 0);
    // A full-speed QH (no transaction translator here) never reaches the device either.
    let (mut hc, root, mut ram) = running_controller();
    with_test_device(&root, 0, |d| d.in_data = vec![1; 8]);
    qh(&mut ram, ASYNC_QH, ASYNC_QH | TYPE_QH << 1, 1, 64, 0, QTDS);
    ram.and_u32(ASYNC_QH + 4, !(3 << 12));
    qtd(
        &mut ram,
        QTDS,
        LINK_TERMINATE,
        LINK_TERMINATE,
        1,
        8,
        BUFFERS,
        false,
    );
    write(&mut hc, ASYNCLISTADDR, ASYNC_QH);
    write(&mut hc, USBCMD, CMD_RS | CMD_ASE);
    run_frames(&mut hc, &mut ram, 3);
    assert_ne!(ram.u32(QTDS + 8) & TOKEN_HALTED, 0);
    with_test_device(&root, 0, |d| assert_eq!(d.tokens, 0));
}

#[test]
fn hostile_schedules_cost_bounded_work_per_frame() {
    // A huge transfer in 1-byte packets: at most MAX_PACKETS_PER_FRAME per frame, the
    // overlay carries on where it stopped.
    let (mut hc, root, mut ram) = running_controller();
    with_test_device(&root, 0, |d| d.in_data = vec![7; 0x5000]);
    qh(&mut ram, ASYNC_QH, ASYNC_QH | TYPE_QH << 1, 1, 1, 0, QTDS);
    qtd(
        &mut ram,
        QTDS,
        LINK_TERMINATE,
        LINK_TERMINATE,
        1,
        0x5000,
        BUFFERS,
        false,
    );
    write(&mut hc, ASYNCLISTADDR, ASYNC_QH);
    write(&mut hc, USBCMD, CMD_RS | CMD_ASE);
    run_frames(&mut hc, &mut ram, 1);
    with_test_device(&root, 0, |d| assert_eq!(d.tokens, MAX_PACKETS_PER_FRAME));
    let token = ram.u32(ASYNC_QH + 24);
    assert_eq!(
        (token & TOKEN_BYTES) >> TOKEN_BYTES_SHIFT,
        0x5000 - MAX_PACKETS_PER_FRAME as u32
    );
    run_frames(&mut hc, &mut ram, 1);
    with_test_device(&root, 0, |d| {
        assert_eq!(d.tokens, 2 * MAX_PACKETS_PER_FRAME)
    });
    assert!(
        ram.0[BUFFERS as usize..][..2 * MAX_PACKETS_PER_FRAME]
            .iter()
            .all(|&b| b == 7)
    );

    // A horizontal list that loops back past its start (A -> B -> C -> B), a qTD chain
    // looping onto itself, and an isochronous loop in the periodic list: each frame ends.
    let (mut hc, root, mut ram) = running_controller();
    qh(&mut ram, ASYNC_QH, QH2 | TYPE_QH << 1, 2, 512, 0, QTDS);
    qh(
        &mut ram,
        QH2,
        (QH2 + 0x80) | TYPE_QH << 1,
        2,
        512,
        0,
        LINK_TERMINATE,
    );
    qh(
        &mut ram,
        QH2 + 0x80,
        QH2 | TYPE_QH << 1,
        2,
        512,
        0,
        LINK_TERMINATE,
    );
    qtd(&mut ram, QTDS, QTDS, QTDS, 0, 0, BUFFERS, false);
    for i in 0..1024 {
        ram.set_u32(FRAME_LIST + 4 * i, 0x5000 | TYPE_ITD << 1);
    }
    ram.set_u32(0x5000, 0x5000 | TYPE_ITD << 1);
    write(&mut hc, PERIODICLISTBASE, FRAME_LIST);
    write(&mut hc, ASYNCLISTADDR, ASYNC_QH);
    write(&mut hc, USBCMD, CMD_RS | CMD_ASE | CMD_PSE);
    run_frames(&mut hc, &mut ram, 3);
    with_test_device(&root, 0, |d| {
        assert_eq!(d.tokens, 1, "the looping qTD ran once")
    });
    assert_eq!(read(&mut hc, USBSTS) & (STS_HALTED | STS_HSE), 0);

    // A 100 000-QH chain: each frame looks at MAX_ELEMENTS_PER_FRAME descriptors from the
    // head. The 1023rd QH and its qTD are the last two of them (its OUT runs); QH #2000's never
    // does, frame after frame.
    let (mut hc, root, _) = running_controller();
    let mut ram = Ram(vec![0; 8 << 20]);
    let chain_qh = |i: u32| 0x10_0000 + 64 * i;
    for i in 0..100_000u32 {
        let at = chain_qh(i);
        qh(
            &mut ram,
            at,
            chain_qh(i + 1) | TYPE_QH << 1,
            2,
            512,
            0,
            LINK_TERMINATE,
        );
    }
    for (i, qtd_at) in [
        (MAX_ELEMENTS_PER_FRAME as u32 - 2, QTDS),
        (2000, QTDS + 0x20),
    ] {
        qtd(
            &mut ram,
            qtd_at,
            LINK_TERMINATE,
            LINK_TERMINATE,
            0,
            1,
            BUFFERS,
            false,
        );
        ram.set_u32(chain_qh(i) + 16, qtd_at);
    }
    write(&mut hc, ASYNCLISTADDR, chain_qh(0));
    write(&mut hc, USBCMD, CMD_RS | CMD_ASE);
    run_frames(&mut hc, &mut ram, 10);
    assert_eq!(
        ram.u32(QTDS + 8) & TOKEN_ACTIVE,
        0,
        "the 1024th element ran"
    );
    assert_ne!(ram.u32(QTDS + 0x28) & TOKEN_ACTIVE, 0, "QH #2000 never ran");
    with_test_device(&root, 0, |d| assert_eq!(d.tokens, 1));

    // Descriptors outside RAM: host system error, halted, interrupt.
    let (mut hc, _root, mut ram) = running_controller();
    write(&mut hc, ASYNCLISTADDR, 0xFFFF_0000);
    write(&mut hc, USBCMD, CMD_RS | CMD_ASE);
    run_frames(&mut hc, &mut ram, 1);
    assert_eq!(
        read(&mut hc, USBSTS) & (STS_HSE | STS_HALTED),
        STS_HSE | STS_HALTED
    );
    assert!(hc.irq_level());
    // A qTD whose buffer is outside RAM, too.
    let (mut hc, root, mut ram) = running_controller();
    with_test_device(&root, 0, |d| d.in_data = vec![1; 8]);
    qh(&mut ram, ASYNC_QH, ASYNC_QH | TYPE_QH << 1, 1, 64, 0, QTDS);
    qtd(
        &mut ram,
        QTDS,
        LINK_TERMINATE,
        LINK_TERMINATE,
        1,
        8,
        0xFFFF_F000,
        false,
    );
    write(&mut hc, ASYNCLISTADDR, ASYNC_QH);
    write(&mut hc, USBCMD, CMD_RS | CMD_ASE);
    run_frames(&mut hc, &mut ram, 1);
    assert_ne!(read(&mut hc, USBSTS) & STS_HSE, 0);
}

#[test]
fn the_machine_plugs_ich9s_usb_functions_into_slot_29() {
    use crate::clock::Clock;
    use crate::memory_map::MemoryMap;
    use crate::platform::Platform;
    use aero_cpu::Bus;
    let (map, _) = MemoryMap::allocate(16 << 20, &[0u8; 0x20000]).unwrap();
    let mut p = Platform::new(Clock::new(true), map, 0);
    crate::machine::host_io::plug_usb(&mut p);
    let mut config = |function: u32, reg: u32| {
        p.io_write(0xCF8, 4, 0x8000_0000 | 0x1D << 11 | function << 8 | reg);
        p.io_read(0xCFC, 4)
    };
    // Function, device ID, class, INTx pin (INTA#-INTD#), header type.
    for (function, id, class, pin, header) in [
        (0, 0x2934, 0x0C_03_00, 1, 0x80),
        (1, 0x2935, 0x0C_03_00, 2, 0),
        (2, 0x2936, 0x0C_03_00, 3, 0),
        (7, 0x293A, 0x0C_03_20, 4, 0),
    ] {
        assert_eq!(config(function, 0), id << 16 | 0x8086, "00:1d.{function}");
        assert_eq!(config(function, 8) >> 8, class, "00:1d.{function}");
        assert_eq!(config(function, 0x3C) >> 8 & 0xFF, pin, "00:1d.{function}");
        assert_eq!(
            config(function, 0x0C) >> 16 & 0xFF,
            header,
            "00:1d.{function}"
        );
    }
    assert_eq!(config(3, 0) & 0xFFFF, 0xFFFF, "no function 3");
}

#[test]
fn a_device_leaving_a_companion_port_gives_it_back_to_ehci() {
    let root = RootPorts::new(PORTS);
    root.attach(2, Box::new(HidDevice::new(HidKind::Tablet)))
        .ok()
        .unwrap();
    let mut hc = Ehci::new(root.clone());
    write(&mut hc, CONFIGFLAG, 1);
    write(&mut hc, portsc(2), PORT_CSC | PORT_OWNER);
    assert_ne!(read(&mut hc, portsc(2)) & PORT_OWNER, 0);
    // Pulled: the port is EHCI's again (§4.2.2), so a high-speed device plugged in next
    // shows up on EHCI.
    assert!(root.detach(2).is_some());
    assert_eq!(read(&mut hc, portsc(2)) & (PORT_OWNER | PORT_CCS), 0);
    root.attach(2, Box::new(TestDevice::new(UsbSpeed::High)))
        .ok()
        .unwrap();
    hc.advance(1);
    assert_eq!(
        read(&mut hc, portsc(2)) & (PORT_OWNER | PORT_CCS | PORT_CSC),
        PORT_CCS | PORT_CSC
    );
    // Replacing a companion's device is a pull too; with CONFIGFLAG clear the
    // companions keep every port.
    write(&mut hc, portsc(2), PORT_CSC | PORT_OWNER);
    let old = root.attach(2, Box::new(TestDevice::new(UsbSpeed::High)));
    assert!(old.ok().flatten().is_some());
    assert_eq!(read(&mut hc, portsc(2)) & (PORT_OWNER | PORT_CCS), PORT_CCS);
    write(&mut hc, CONFIGFLAG, 0);
    assert!(root.detach(2).is_some());
    assert_ne!(read(&mut hc, portsc(2)) & PORT_OWNER, 0);
}

#[test]
fn machine_reset_resets_the_devices_on_every_port() {
    let (mut hc, root, _ram) = running_controller();
    root.attach(4, Box::new(TestDevice::new(UsbSpeed::Full)))
        .ok()
        .unwrap();
    write(&mut hc, portsc(4), PORT_OWNER);
    let resets = |port| with_test_device(&root, port, |d| d.resets);
    let before = [resets(0), resets(4)];
    hc.reset();
    assert_eq!([resets(0), resets(4)], [before[0] + 1, before[1] + 1]);
    assert_ne!(
        read(&mut hc, portsc(0)) & PORT_OWNER,
        0,
        "companions own all"
    );
}

/// RAM that counts writes.
struct CountingRam(Ram, usize);

impl GuestMemory for CountingRam {
    fn read(&mut self, address: u64, data: &mut [u8]) -> Result<(), aero_storage::ide::DmaError> {
        self.0.read(address, data)
    }
    fn write(&mut self, address: u64, data: &[u8]) -> Result<(), aero_storage::ide::DmaError> {
        self.1 += 1;
        self.0.write(address, data)
    }
}

#[test]
fn a_naking_qh_is_not_written_back() {
    let (mut hc, root, ram) = running_controller();
    let mut ram = CountingRam(ram, 0);
    qh(&mut ram.0, ASYNC_QH, ASYNC_QH | TYPE_QH << 1, 1, 8, 0, QTDS);
    qtd(
        &mut ram.0,
        QTDS,
        LINK_TERMINATE,
        LINK_TERMINATE,
        1,
        8,
        BUFFERS,
        true,
    );
    write(&mut hc, ASYNCLISTADDR, ASYNC_QH);
    write(&mut hc, USBCMD, CMD_RS | CMD_ASE);
    let frame = |hc: &mut Ehci, ram: &mut CountingRam| {
        let now = hc.now_ns + FRAME_NS;
        hc.advance(now);
        hc.run_dma(ram, now);
    };
    // The first frame loads the qTD into the overlay.
    frame(&mut hc, &mut ram);
    assert_eq!(ram.0.u32(ASYNC_QH + 12), QTDS);
    let writes = ram.1;
    for _ in 0..3 {
        frame(&mut hc, &mut ram);
    }
    assert_eq!(ram.1, writes, "NAKs write nothing");
    with_test_device(&root, 0, |d| {
        assert_eq!(d.tokens, 4);
        d.in_data = vec![9; 2];
    });
    frame(&mut hc, &mut ram);
    assert_ne!(ram.1, writes);
    assert_eq!(ram.0.u32(QTDS + 8) & TOKEN_ACTIVE, 0);
}
