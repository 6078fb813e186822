//! `--nic tap,ifname=NAME`: the e1000's frames on a Linux TAP interface, for bridging
//! the guest onto a host network. The interface is configured by the user (or made
//! persistent beforehand with `ip tuntap add dev NAME mode tap`); Aero runs no scripts.
//!
//! The only `unsafe` is the TUNSETIFF ioctl that attaches the opened `/dev/net/tun` to
//! the named interface; frames then move with plain non-blocking reads and writes.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

use aero_machine::net::NetBackend;

/// `_IOW('T', 202, int)` from linux/if_tun.h.
const TUNSETIFF: libc::c_ulong = 0x4004_54CA;
const IFF_TAP: libc::c_short = 0x0002;
/// Frames without the 4-byte packet-information header.
const IFF_NO_PI: libc::c_short = 0x1000;
/// Largest frame handed to the NIC: 1518 plus a VLAN tag (no jumbo frames on the 82540EM).
const MAX_FRAME: usize = 1522;
/// Reads take a whole frame of any size the interface can carry (its MTU may be larger than
/// ours), so a too-long frame is seen whole and dropped instead of arriving truncated.
const READ_BUFFER: usize = 65536;

#[derive(Debug, thiserror::Error)]
pub enum TapError {
    #[error("ifname={0:?}: an interface name is 1 to 15 bytes without NUL")]
    BadName(String),
    #[error("/dev/net/tun: {0} (the TUN/TAP driver is needed; root or CAP_NET_ADMIN)")]
    Open(std::io::Error),
    #[error("TUNSETIFF {0}: {1} (root or CAP_NET_ADMIN, or a tap owned by this user)")]
    Attach(String, std::io::Error),
}

/// `struct ifreq` as TUNSETIFF reads it: the name and the flags (the union's first
/// member), padded to the kernel's 40 bytes.
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

pub struct Tap {
    file: File,
    buffer: Vec<u8>,
}

impl Tap {
    /// Attaches to (or creates) the TAP interface `name`.
    pub fn open(name: &str) -> Result<Tap, TapError> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains('\0') {
            return Err(TapError::BadName(name.to_string()));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/net/tun")
            .map_err(TapError::Open)?;
        let mut request = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: IFF_TAP | IFF_NO_PI,
            _pad: [0; 22],
        };
        request.name[..name.len()].copy_from_slice(name.as_bytes());
        // SAFETY: TUNSETIFF reads (and writes back the name into) an ifreq; `request`
        // is a properly sized and aligned ifreq living across the call, and the fd is
        // the open /dev/net/tun.
        let result = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF as _, &mut request) };
        if result < 0 {
            return Err(TapError::Attach(
                name.to_string(),
                std::io::Error::last_os_error(),
            ));
        }
        Ok(Tap {
            file,
            buffer: vec![0; READ_BUFFER],
        })
    }
}

impl NetBackend for Tap {
    fn send(&mut self, frame: &[u8]) {
        // A full queue or a downed interface drops the frame, as a wire would.
        if let Err(e) = self.file.write(frame)
            && e.kind() != ErrorKind::WouldBlock
        {
            tracing::debug!(target: "aero::net", "tap: frame dropped: {e}");
        }
    }

    fn receive(&mut self) -> Option<Vec<u8>> {
        match self.file.read(&mut self.buffer) {
            Ok(n) if n > MAX_FRAME => {
                tracing::debug!(target: "aero::net", "tap: {n}-byte frame dropped (longer than {MAX_FRAME})");
                None
            }
            Ok(n) if n > 0 => Some(self.buffer[..n].to_vec()),
            Ok(_) => None,
            Err(e) => {
                if e.kind() != ErrorKind::WouldBlock {
                    tracing::debug!(target: "aero::net", "tap: read: {e}");
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names_are_checked_before_the_ioctl() {
        for bad in ["", "a-name-too-long-for-linux", "nul\0"] {
            assert!(
                matches!(Tap::open(bad), Err(TapError::BadName(_))),
                "{bad:?}"
            );
        }
    }
}
