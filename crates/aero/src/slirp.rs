//! User-mode NAT through libslirp (QEMU's library, Debian `libslirp-dev`): the guest's
//! Ethernet frames go into a slirp stack on a host thread, which answers DHCP/DNS/ARP
//! itself and turns TCP/UDP into host sockets; `hostfwd` rules listen on host ports.
//!
//! All `unsafe` code of the NAT is here: our own bindings to the C API (the subset we
//! use) and the callbacks libslirp makes into us. One thread owns the `Slirp *` for its
//! whole life (libslirp is not thread-safe); the emulator talks to that thread over
//! channels and wakes it through a socket pair.

use std::ffi::{c_char, c_int, c_void};
use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::time::Instant;

use aero_machine::net::NetBackend;

/// The guest network, as QEMU's user networking lays it out.
pub const NETWORK: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 0);
pub const NETMASK: Ipv4Addr = Ipv4Addr::new(255, 255, 255, 0);
/// The gateway; connections to it reach the host's 127.0.0.1.
pub const HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);
pub const NAMESERVER: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 3);
/// The first (and usually only) DHCP lease.
pub const GUEST: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 15);

/// A TCP port forward: connections to `host:host_port` go to the guest's `guest_port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostForward {
    pub host: Ipv4Addr,
    pub host_port: u16,
    pub guest_port: u16,
}

#[derive(Debug, thiserror::Error)]
pub enum SlirpError {
    #[error("libslirp refused its configuration")]
    Init,
    #[error("hostfwd tcp:{0}:{1}: cannot listen on the host port (in use?)")]
    HostForward(Ipv4Addr, u16),
    #[error("the NAT thread: {0}")]
    Thread(#[from] std::io::Error),
    #[error("the NAT thread ended before it started")]
    ThreadGone,
}

/// The emulator's end of the NAT thread.
pub struct UserNet {
    to_slirp: Option<Sender<Vec<u8>>>,
    from_slirp: Receiver<Vec<u8>>,
    wake: UnixStream,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl UserNet {
    /// Starts the NAT thread with these port forwards.
    pub fn start(forwards: &[HostForward]) -> Result<UserNet, SlirpError> {
        let (to_slirp, frames_in) = mpsc::channel::<Vec<u8>>();
        let (frames_out, from_slirp) = mpsc::channel::<Vec<u8>>();
        let (wake, wake_reader) = UnixStream::pair()?;
        // Neither side may block: a full buffer already means "wake up".
        wake.set_nonblocking(true)?;
        wake_reader.set_nonblocking(true)?;
        let (started, start_result) = mpsc::channel::<Result<(), SlirpError>>();
        let forwards = forwards.to_vec();
        let thread = std::thread::Builder::new()
            .name("aero-slirp".into())
            .spawn(move || {
                run_nat(&forwards, frames_in, frames_out, wake_reader, started);
            })?;
        start_result.recv().map_err(|_| SlirpError::ThreadGone)??;
        Ok(UserNet {
            to_slirp: Some(to_slirp),
            from_slirp,
            wake,
            thread: Some(thread),
        })
    }
}

impl NetBackend for UserNet {
    fn send(&mut self, frame: &[u8]) {
        if let Some(to_slirp) = &self.to_slirp
            && to_slirp.send(frame.to_vec()).is_ok()
        {
            // A full socket buffer means a wake-up is already pending.
            let _ = self.wake.write(&[1]);
        }
    }

    fn receive(&mut self) -> Option<Vec<u8>> {
        self.from_slirp.try_recv().ok()
    }
}

impl Drop for UserNet {
    fn drop(&mut self) {
        // Closing the channel and waking the thread ends it.
        self.to_slirp = None;
        let _ = self.wake.write(&[1]);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

// ---- Bindings (libslirp.h, SlirpConfig version 4) ----

#[repr(C)]
struct SlirpConfig {
    version: u32,
    restricted: c_int,
    in_enabled: bool,
    vnetwork: libc::in_addr,
    vnetmask: libc::in_addr,
    vhost: libc::in_addr,
    in6_enabled: bool,
    vprefix_addr6: libc::in6_addr,
    vprefix_len: u8,
    vhost6: libc::in6_addr,
    vhostname: *const c_char,
    tftp_server_name: *const c_char,
    tftp_path: *const c_char,
    bootfile: *const c_char,
    vdhcp_start: libc::in_addr,
    vnameserver: libc::in_addr,
    vnameserver6: libc::in6_addr,
    vdnssearch: *const *const c_char,
    vdomainname: *const c_char,
    if_mtu: usize,
    if_mru: usize,
    disable_host_loopback: bool,
    enable_emu: bool,
    outbound_addr: *const libc::sockaddr_in,
    outbound_addr6: *const libc::sockaddr_in6,
    disable_dns: bool,
    disable_dhcp: bool,
}

type TimerCb = unsafe extern "C" fn(opaque: *mut c_void);

#[repr(C)]
struct SlirpCb {
    send_packet: unsafe extern "C" fn(buf: *const c_void, len: usize, opaque: *mut c_void) -> isize,
    guest_error: unsafe extern "C" fn(msg: *const c_char, opaque: *mut c_void),
    clock_get_ns: unsafe extern "C" fn(opaque: *mut c_void) -> i64,
    timer_new: unsafe extern "C" fn(
        cb: TimerCb,
        cb_opaque: *mut c_void,
        opaque: *mut c_void,
    ) -> *mut c_void,
    timer_free: unsafe extern "C" fn(timer: *mut c_void, opaque: *mut c_void),
    timer_mod: unsafe extern "C" fn(timer: *mut c_void, expire_ms: i64, opaque: *mut c_void),
    register_poll_fd: unsafe extern "C" fn(fd: c_int, opaque: *mut c_void),
    unregister_poll_fd: unsafe extern "C" fn(fd: c_int, opaque: *mut c_void),
    notify: unsafe extern "C" fn(opaque: *mut c_void),
    init_completed: Option<unsafe extern "C" fn(slirp: *mut c_void, opaque: *mut c_void)>,
    timer_new_opaque: Option<
        unsafe extern "C" fn(id: c_int, cb_opaque: *mut c_void, opaque: *mut c_void) -> *mut c_void,
    >,
}

type AddPollCb = unsafe extern "C" fn(fd: c_int, events: c_int, opaque: *mut c_void) -> c_int;
type GetREventsCb = unsafe extern "C" fn(idx: c_int, opaque: *mut c_void) -> c_int;

#[link(name = "slirp")]
unsafe extern "C" {
    fn slirp_new(
        cfg: *const SlirpConfig,
        callbacks: *const SlirpCb,
        opaque: *mut c_void,
    ) -> *mut c_void;
    fn slirp_cleanup(slirp: *mut c_void);
    fn slirp_pollfds_fill(
        slirp: *mut c_void,
        timeout: *mut u32,
        add_poll: AddPollCb,
        opaque: *mut c_void,
    );
    fn slirp_pollfds_poll(
        slirp: *mut c_void,
        select_error: c_int,
        get_revents: GetREventsCb,
        opaque: *mut c_void,
    );
    fn slirp_input(slirp: *mut c_void, pkt: *const u8, pkt_len: c_int);
    fn slirp_add_hostfwd(
        slirp: *mut c_void,
        is_udp: c_int,
        host_addr: libc::in_addr,
        host_port: c_int,
        guest_addr: libc::in_addr,
        guest_port: c_int,
    ) -> c_int;
}

const SLIRP_POLL_IN: c_int = 1 << 0;
const SLIRP_POLL_OUT: c_int = 1 << 1;
const SLIRP_POLL_PRI: c_int = 1 << 2;
const SLIRP_POLL_ERR: c_int = 1 << 3;
const SLIRP_POLL_HUP: c_int = 1 << 4;

/// A libslirp timer: its callback and when it fires (milliseconds on our clock).
struct Timer {
    cb: TimerCb,
    cb_opaque: *mut c_void,
    expire_ms: Option<i64>,
}

/// What the callbacks reach through libslirp's `opaque` pointer; lives on the NAT
/// thread's stack for as long as the `Slirp *`.
struct NatState {
    start: Instant,
    frames_out: Sender<Vec<u8>>,
    /// Timers libslirp created (boxed: libslirp holds their addresses).
    timers: Vec<*mut Timer>,
    pollfds: Vec<libc::pollfd>,
}

impl NatState {
    fn now_ms(&self) -> i64 {
        (self.start.elapsed().as_millis()).min(i64::MAX as u128) as i64
    }
}

fn in_addr(ip: Ipv4Addr) -> libc::in_addr {
    libc::in_addr {
        s_addr: u32::from_ne_bytes(ip.octets()),
    }
}

fn in6_zero() -> libc::in6_addr {
    libc::in6_addr { s6_addr: [0; 16] }
}

/// The NAT thread: creates the stack, then polls its sockets, our wake-up socket and
/// its timers until the emulator's end goes away.
fn run_nat(
    forwards: &[HostForward],
    frames_in: Receiver<Vec<u8>>,
    frames_out: Sender<Vec<u8>>,
    mut wake: UnixStream,
    started: Sender<Result<(), SlirpError>>,
) {
    let mut state = NatState {
        start: Instant::now(),
        frames_out,
        timers: Vec::new(),
        pollfds: Vec::new(),
    };
    let config = SlirpConfig {
        version: 4,
        restricted: 0,
        in_enabled: true,
        vnetwork: in_addr(NETWORK),
        vnetmask: in_addr(NETMASK),
        vhost: in_addr(HOST),
        in6_enabled: false,
        vprefix_addr6: in6_zero(),
        vprefix_len: 0,
        vhost6: in6_zero(),
        vhostname: std::ptr::null(),
        tftp_server_name: std::ptr::null(),
        tftp_path: std::ptr::null(),
        bootfile: std::ptr::null(),
        vdhcp_start: in_addr(GUEST),
        vnameserver: in_addr(NAMESERVER),
        vnameserver6: in6_zero(),
        vdnssearch: std::ptr::null(),
        vdomainname: std::ptr::null(),
        if_mtu: 0,
        if_mru: 0,
        disable_host_loopback: false,
        enable_emu: false,
        outbound_addr: std::ptr::null(),
        outbound_addr6: std::ptr::null(),
        disable_dns: false,
        disable_dhcp: false,
    };
    let callbacks = SlirpCb {
        send_packet,
        guest_error,
        clock_get_ns,
        timer_new,
        timer_free,
        timer_mod,
        register_poll_fd,
        unregister_poll_fd,
        notify,
        init_completed: None,
        timer_new_opaque: None,
    };
    let opaque = (&raw mut state).cast::<c_void>();
    // SAFETY: `config` and `callbacks` are valid for the call (libslirp copies the
    // configuration; it keeps the callbacks pointer, and `callbacks` outlives the stack
    // because it lives on this frame until `slirp_cleanup`). `opaque` points at `state`,
    // which also lives until then and is only touched through this pointer while libslirp
    // runs.
    let slirp = unsafe { slirp_new(&config, &callbacks, opaque) };
    if slirp.is_null() {
        let _ = started.send(Err(SlirpError::Init));
        return;
    }
    for forward in forwards {
        // SAFETY: `slirp` is the live stack created above; the addresses are plain values.
        let result = unsafe {
            slirp_add_hostfwd(
                slirp,
                0,
                in_addr(forward.host),
                c_int::from(forward.host_port),
                in_addr(GUEST),
                c_int::from(forward.guest_port),
            )
        };
        if result < 0 {
            let _ = started.send(Err(SlirpError::HostForward(
                forward.host,
                forward.host_port,
            )));
            // SAFETY: the stack is ours and not used after this.
            unsafe { slirp_cleanup(slirp) };
            return;
        }
    }
    let _ = started.send(Ok(()));
    'run: loop {
        // Frames from the guest.
        loop {
            match frames_in.try_recv() {
                Ok(frame) => {
                    let Ok(len) = c_int::try_from(frame.len()) else {
                        continue;
                    };
                    // SAFETY: `frame` is valid for `len` bytes during the call; libslirp
                    // copies what it keeps.
                    unsafe { slirp_input(slirp, frame.as_ptr(), len) };
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => break 'run,
            }
        }
        // SAFETY: only this thread touches `state`; no reference is held across the
        // libslirp calls below, which reach it through `opaque`.
        unsafe { (*opaque.cast::<NatState>()).pollfds.clear() };
        let mut timeout_ms: u32 = 1000;
        // SAFETY: live stack; `add_poll` only pushes onto `state.pollfds` through `opaque`.
        unsafe { slirp_pollfds_fill(slirp, &mut timeout_ms, add_poll, opaque) };
        let (mut fds, next_timer) = {
            // SAFETY: as above; the reference ends before the next libslirp call.
            let st = unsafe { &mut *opaque.cast::<NatState>() };
            let now = st.now_ms();
            let next = st
                .timers
                .iter()
                // SAFETY: every pointer in `timers` is a live Box (removed on free).
                .filter_map(|&t| unsafe { (*t).expire_ms })
                .min()
                .map(|at| (at - now).clamp(0, 1000) as u32);
            (std::mem::take(&mut st.pollfds), next)
        };
        fds.push(libc::pollfd {
            fd: wake.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        let timeout = timeout_ms.min(next_timer.unwrap_or(u32::MAX)).min(1000);
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structures.
        let ready = unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                timeout as c_int,
            )
        };
        if fds.last().is_some_and(|w| w.revents & libc::POLLIN != 0) {
            let mut sink = [0u8; 256];
            while matches!(wake.read(&mut sink), Ok(n) if n > 0) {}
        }
        fds.pop();
        // SAFETY: as above.
        unsafe { (*opaque.cast::<NatState>()).pollfds = fds };
        // SAFETY: live stack; `get_revents` reads `state.pollfds` through `opaque`.
        unsafe { slirp_pollfds_poll(slirp, c_int::from(ready < 0), get_revents, opaque) };
        // Expired timers (collected first: a callback may modify or free timers).
        let due: Vec<(TimerCb, *mut c_void)> = {
            // SAFETY: as above.
            let st = unsafe { &mut *opaque.cast::<NatState>() };
            let now = st.now_ms();
            st.timers
                .iter()
                .filter_map(|&t| {
                    // SAFETY: live Box, see `timers`.
                    let timer = unsafe { &mut *t };
                    match timer.expire_ms {
                        Some(at) if at <= now => {
                            timer.expire_ms = None;
                            Some((timer.cb, timer.cb_opaque))
                        }
                        _ => None,
                    }
                })
                .collect()
        };
        for (cb, cb_opaque) in due {
            // SAFETY: libslirp gave us this callback and its argument for this purpose.
            unsafe { cb(cb_opaque) };
        }
    }
    // SAFETY: the stack is ours and not used after this; it frees its timers through
    // `timer_free` while `state` is still alive.
    unsafe { slirp_cleanup(slirp) };
    for timer in state.timers.drain(..) {
        // SAFETY: timers libslirp never freed are still our Boxes.
        drop(unsafe { Box::from_raw(timer) });
    }
}

/// Recovers the state from libslirp's `opaque`.
///
/// # Safety
/// `opaque` must be the pointer given to `slirp_new`, called on the NAT thread.
unsafe fn nat_state<'a>(opaque: *mut c_void) -> &'a mut NatState {
    // SAFETY: guaranteed by the caller.
    unsafe { &mut *opaque.cast::<NatState>() }
}

unsafe extern "C" fn send_packet(buf: *const c_void, len: usize, opaque: *mut c_void) -> isize {
    // SAFETY: libslirp passes a frame of `len` bytes and our opaque pointer.
    let (frame, state) = unsafe {
        (
            std::slice::from_raw_parts(buf.cast::<u8>(), len),
            nat_state(opaque),
        )
    };
    // The emulator's end gone means the thread is about to stop; the frame is dropped.
    let _ = state.frames_out.send(frame.to_vec());
    len as isize
}

unsafe extern "C" fn guest_error(msg: *const c_char, _opaque: *mut c_void) {
    if !msg.is_null() {
        // SAFETY: libslirp passes a NUL-terminated message.
        let text = unsafe { std::ffi::CStr::from_ptr(msg) }.to_string_lossy();
        tracing::debug!(target: "aero::net", "slirp: guest error: {text}");
    }
}

unsafe extern "C" fn clock_get_ns(opaque: *mut c_void) -> i64 {
    // SAFETY: our opaque pointer, on the NAT thread.
    let state = unsafe { nat_state(opaque) };
    state.start.elapsed().as_nanos().min(i64::MAX as u128) as i64
}

unsafe extern "C" fn timer_new(
    cb: TimerCb,
    cb_opaque: *mut c_void,
    opaque: *mut c_void,
) -> *mut c_void {
    // SAFETY: our opaque pointer, on the NAT thread.
    let state = unsafe { nat_state(opaque) };
    let timer = Box::into_raw(Box::new(Timer {
        cb,
        cb_opaque,
        expire_ms: None,
    }));
    state.timers.push(timer);
    timer.cast()
}

unsafe extern "C" fn timer_free(timer: *mut c_void, opaque: *mut c_void) {
    // SAFETY: our opaque pointer, on the NAT thread.
    let state = unsafe { nat_state(opaque) };
    let timer = timer.cast::<Timer>();
    if let Some(i) = state.timers.iter().position(|&t| t == timer) {
        state.timers.swap_remove(i);
        // SAFETY: created by `timer_new` and now forgotten by both sides.
        drop(unsafe { Box::from_raw(timer) });
    }
}

unsafe extern "C" fn timer_mod(timer: *mut c_void, expire_ms: i64, opaque: *mut c_void) {
    // SAFETY: our opaque pointer, on the NAT thread.
    let state = unsafe { nat_state(opaque) };
    let timer = timer.cast::<Timer>();
    if state.timers.contains(&timer) {
        // SAFETY: a live timer of ours (checked above).
        unsafe { (*timer).expire_ms = Some(expire_ms) };
    }
}

unsafe extern "C" fn register_poll_fd(_fd: c_int, _opaque: *mut c_void) {}
unsafe extern "C" fn unregister_poll_fd(_fd: c_int, _opaque: *mut c_void) {}
/// libslirp calls this from its own thread (ours): the loop goes round anyway.
unsafe extern "C" fn notify(_opaque: *mut c_void) {}

unsafe extern "C" fn add_poll(fd: c_int, events: c_int, opaque: *mut c_void) -> c_int {
    // SAFETY: our opaque pointer, on the NAT thread.
    let state = unsafe { nat_state(opaque) };
    let mut poll_events = 0;
    if events & SLIRP_POLL_IN != 0 {
        poll_events |= libc::POLLIN;
    }
    if events & SLIRP_POLL_OUT != 0 {
        poll_events |= libc::POLLOUT;
    }
    if events & SLIRP_POLL_PRI != 0 {
        poll_events |= libc::POLLPRI;
    }
    state.pollfds.push(libc::pollfd {
        fd,
        events: poll_events,
        revents: 0,
    });
    (state.pollfds.len() - 1) as c_int
}

unsafe extern "C" fn get_revents(index: c_int, opaque: *mut c_void) -> c_int {
    // SAFETY: our opaque pointer, on the NAT thread.
    let state = unsafe { nat_state(opaque) };
    let Some(fd) = usize::try_from(index)
        .ok()
        .and_then(|i| state.pollfds.get(i))
    else {
        return 0;
    };
    let r = fd.revents;
    let mut events = 0;
    if r & libc::POLLIN != 0 {
        events |= SLIRP_POLL_IN;
    }
    if r & libc::POLLOUT != 0 {
        events |= SLIRP_POLL_OUT;
    }
    if r & libc::POLLPRI != 0 {
        events |= SLIRP_POLL_PRI;
    }
    if r & libc::POLLERR != 0 {
        events |= SLIRP_POLL_ERR;
    }
    if r & libc::POLLHUP != 0 {
        events |= SLIRP_POLL_HUP;
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAC: [u8; 6] = [0x52, 0x54, 0, 0x12, 0x34, 0x56];

    /// An ARP request from the guest's address for `target`.
    fn arp_request(target: Ipv4Addr) -> Vec<u8> {
        let mut f = vec![0xFF; 6];
        f.extend_from_slice(&MAC);
        f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
        f.extend_from_slice(&MAC);
        f.extend_from_slice(&GUEST.octets());
        f.extend_from_slice(&[0; 6]);
        f.extend_from_slice(&target.octets());
        f
    }

    fn wait_frame(net: &mut UserNet) -> Option<Vec<u8>> {
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Some(f) = net.receive() {
                return Some(f);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        None
    }

    #[test]
    fn the_gateway_answers_arp_and_hostfwd_listens() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let mut net = UserNet::start(&[HostForward {
            host: Ipv4Addr::LOCALHOST,
            host_port: port,
            guest_port: 80,
        }])
        .unwrap();
        net.send(&arp_request(HOST));
        let reply = wait_frame(&mut net).expect("no ARP reply from 10.0.2.2");
        assert_eq!(&reply[..6], &MAC, "to the guest");
        assert_eq!(&reply[12..14], &[0x08, 0x06]);
        assert_eq!(&reply[20..22], &[0, 2], "ARP reply");
        assert_eq!(&reply[28..32], &HOST.octets());
        // The forward's host port is taken by slirp's listening socket.
        assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_err());
        // A second NAT cannot forward the same port.
        let clash = UserNet::start(&[HostForward {
            host: Ipv4Addr::LOCALHOST,
            host_port: port,
            guest_port: 80,
        }]);
        assert!(matches!(clash, Err(SlirpError::HostForward(_, p)) if p == port));
        drop(net);
    }
}
