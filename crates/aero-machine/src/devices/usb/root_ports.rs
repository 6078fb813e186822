//! The physical root ports of a USB host controller complex, shared by the controllers
//! that can drive them: an EHCI function and its UHCI companions (ICH9 device 29), or a
//! lone UHCI controller.
//!
//! A port holds the device plugged into it and its routing: EHCI routes each port either
//! to itself or to the companion UHCI function behind it (CONFIGFLAG and PORTSC's Port
//! Owner bit, EHCI 1.0 §4.2). Each controller keeps its own PORTSC state and notices a
//! plug, a pull or a routing change by the port's generation number: the device appears
//! on (or vanishes from) the controller the port is routed to, with a connect change, as
//! if it had been plugged (or pulled) there.
//!
//! The ports sit behind a mutex because the controllers are separate PCI functions; all of
//! them run on the machine's thread, so the lock is never contended.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::UsbDevice;

/// One physical port.
pub struct RootPort {
    pub device: Option<Box<dyn UsbDevice>>,
    /// Routed to the UHCI companion (true at power-on: CONFIGFLAG is clear until an EHCI
    /// driver claims the ports). A lone UHCI controller's ports are always its own.
    pub companion_owned: bool,
    /// Bumped on every plug, pull and routing change.
    pub generation: u64,
}

impl RootPort {
    /// The device, if the port is routed to the companion (`to_companion`) or to EHCI.
    pub fn device_for(&mut self, to_companion: bool) -> Option<&mut Box<dyn UsbDevice>> {
        if self.companion_owned == to_companion {
            self.device.as_mut()
        } else {
            None
        }
    }
}

struct Shared {
    ports: Mutex<Vec<RootPort>>,
    /// Sum of the ports' generations, so a controller can skip the lock when nothing moved.
    changes: AtomicU64,
    /// EHCI's CONFIGFLAG: while set, a port whose device leaves goes back to EHCI.
    configured: AtomicBool,
}

/// A handle on the shared ports (cloning it shares them).
#[derive(Clone)]
pub struct RootPorts(Arc<Shared>);

impl RootPorts {
    /// `count` empty ports, routed to the companions.
    pub fn new(count: usize) -> RootPorts {
        let ports = (0..count)
            .map(|_| RootPort {
                device: None,
                companion_owned: true,
                generation: 0,
            })
            .collect();
        RootPorts(Arc::new(Shared {
            ports: Mutex::new(ports),
            changes: AtomicU64::new(0),
            configured: AtomicBool::new(false),
        }))
    }

    /// The ports, locked. A poisoned lock (a panic elsewhere) still yields the ports.
    pub fn lock(&self) -> PortsGuard<'_> {
        PortsGuard {
            ports: self.0.ports.lock().unwrap_or_else(|e| e.into_inner()),
            shared: &self.0,
        }
    }

    /// Changes so far on any port (compare with an earlier value to see if any moved).
    pub fn changes(&self) -> u64 {
        self.0.changes.load(Ordering::Relaxed)
    }

    /// Plugs `device` into `port`, replacing (and returning) what was there; `Err` gives
    /// the device back when there is no such port.
    pub fn attach(
        &self,
        port: usize,
        device: Box<dyn UsbDevice>,
    ) -> Result<Option<Box<dyn UsbDevice>>, Box<dyn UsbDevice>> {
        let mut ports = self.lock();
        if port >= ports.len() {
            return Err(device);
        }
        let old = ports.port_mut(port).device.replace(device);
        if old.is_some() {
            ports.device_left(port);
        }
        ports.bump(port);
        Ok(old)
    }

    /// Plugs `device` into the first empty port; `Err` gives it back when all are taken.
    pub fn attach_free(&self, device: Box<dyn UsbDevice>) -> Result<usize, Box<dyn UsbDevice>> {
        let mut ports = self.lock();
        let Some(port) = ports.iter().position(|p| p.device.is_none()) else {
            return Err(device);
        };
        ports.port_mut(port).device = Some(device);
        ports.bump(port);
        Ok(port)
    }

    /// Unplugs the device in `port`.
    pub fn detach(&self, port: usize) -> Option<Box<dyn UsbDevice>> {
        self.lock().unplug(port)
    }

    /// Unplugs the first device `f` picks, with its port.
    pub fn detach_where(
        &self,
        mut f: impl FnMut(&mut dyn UsbDevice) -> bool,
    ) -> Option<(usize, Box<dyn UsbDevice>)> {
        let mut ports = self.lock();
        let port = ports
            .iter_mut()
            .position(|p| p.device.as_mut().is_some_and(|d| f(d.as_mut())))?;
        Some((port, ports.unplug(port)?))
    }

    /// Resets every plugged-in device (a machine reset: USB reset signalling on every
    /// port, whichever controller owns it).
    pub fn reset_devices(&self) {
        for device in self.lock().iter_mut().filter_map(|p| p.device.as_mut()) {
            device.reset();
        }
    }

    /// The first answer `f` gives for a plugged-in device (host input finds its device
    /// this way).
    pub fn find_map<R>(&self, mut f: impl FnMut(&mut dyn UsbDevice) -> Option<R>) -> Option<R> {
        let mut ports = self.lock();
        ports
            .iter_mut()
            .filter_map(|p| p.device.as_mut())
            .find_map(|d| f(d.as_mut()))
    }
}

/// The locked ports.
pub struct PortsGuard<'a> {
    ports: MutexGuard<'a, Vec<RootPort>>,
    shared: &'a Shared,
}

impl PortsGuard<'_> {
    fn port_mut(&mut self, port: usize) -> &mut RootPort {
        &mut self.ports[port]
    }

    /// Records a change on `port` (plug, pull, routing), if it exists.
    pub fn bump(&mut self, port: usize) {
        if let Some(p) = self.ports.get_mut(port) {
            p.generation = p.generation.wrapping_add(1);
            self.shared.changes.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// EHCI's CONFIGFLAG: set routes every port to EHCI, clear to the companions (§4.2).
    pub fn set_configured(&mut self, configured: bool) {
        self.shared.configured.store(configured, Ordering::Relaxed);
        for port in 0..self.ports.len() {
            self.route(port, !configured);
        }
    }

    /// Takes the device out of `port`.
    fn unplug(&mut self, port: usize) -> Option<Box<dyn UsbDevice>> {
        let device = self.ports.get_mut(port)?.device.take()?;
        self.device_left(port);
        self.bump(port);
        Some(device)
    }

    /// A device left `port`: with CONFIGFLAG set, a companion's port goes back to EHCI
    /// (EHCI 1.0 §4.2.2: Port Owner reverts to 0 on disconnect). The caller bumps it.
    fn device_left(&mut self, port: usize) {
        if self.shared.configured.load(Ordering::Relaxed)
            && let Some(p) = self.ports.get_mut(port)
        {
            p.companion_owned = false;
        }
    }

    /// Routes `port` to the companion or to EHCI; a change counts as a pull on one side and
    /// a plug on the other.
    pub fn route(&mut self, port: usize, to_companion: bool) {
        if let Some(p) = self.ports.get_mut(port)
            && p.companion_owned != to_companion
        {
            p.companion_owned = to_companion;
            self.bump(port);
        }
    }
}

impl std::ops::Deref for PortsGuard<'_> {
    type Target = [RootPort];
    fn deref(&self) -> &[RootPort] {
        &self.ports
    }
}

impl std::ops::DerefMut for PortsGuard<'_> {
    fn deref_mut(&mut self) -> &mut [RootPort] {
        &mut self.ports
    }
}
