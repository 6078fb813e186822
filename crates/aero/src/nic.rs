//! `--nic`: the e1000's host side, QEMU style. `none`, `user` (libslirp NAT) with
//! `hostfwd=tcp:[ADDR]:HOST-:GUEST` (repeatable), or `tap,ifname=NAME[,script=no]` (a
//! Linux TAP interface the user configures; no scripts are run); both take
//! `mac=52:54:00:12:34:56` and `pcap=FILE` (every frame in both directions, in a libpcap
//! capture file).

use std::io::Write;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use aero_machine::MacAddress;
use aero_machine::net::NetBackend;

use crate::slirp::{HostForward, UserNet};
use crate::tap::Tap;

/// A parsed `--nic` option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NicSpec {
    None,
    User {
        forwards: Vec<HostForward>,
        mac: MacAddress,
        pcap: Option<PathBuf>,
    },
    Tap {
        ifname: String,
        mac: MacAddress,
        pcap: Option<PathBuf>,
    },
}

impl NicSpec {
    pub fn parse(text: &str) -> anyhow::Result<NicSpec> {
        let mut parts = text.split(',');
        let kind = parts.next().unwrap_or_default();
        match kind {
            "none" => {
                if let Some(extra) = parts.next() {
                    anyhow::bail!("--nic none takes no options (got {extra:?})");
                }
                Ok(NicSpec::None)
            }
            "user" => {
                let mut forwards = Vec::new();
                let mut mac = aero_machine::devices::e1000::DEFAULT_MAC;
                let mut pcap = None;
                for part in parts {
                    let (key, value) = part
                        .split_once('=')
                        .ok_or_else(|| anyhow::anyhow!("--nic user: {part:?} is not KEY=VALUE"))?;
                    match key {
                        "hostfwd" => forwards.push(parse_hostfwd(value)?),
                        "mac" => mac = parse_mac(value)?,
                        "pcap" => pcap = Some(PathBuf::from(value)),
                        other => anyhow::bail!(
                            "--nic user: unknown option {other:?} (hostfwd, mac, pcap)"
                        ),
                    }
                }
                Ok(NicSpec::User {
                    forwards,
                    mac,
                    pcap,
                })
            }
            "tap" => {
                let mut ifname = None;
                let mut mac = aero_machine::devices::e1000::DEFAULT_MAC;
                let mut pcap = None;
                for part in parts {
                    let (key, value) = part
                        .split_once('=')
                        .ok_or_else(|| anyhow::anyhow!("--nic tap: {part:?} is not KEY=VALUE"))?;
                    match (key, value) {
                        ("ifname", name) => ifname = Some(name.to_string()),
                        ("script" | "downscript", "no") => {}
                        ("script" | "downscript", other) => anyhow::bail!(
                            "--nic tap: {key}={other}: Aero runs no interface scripts; \
                             configure the interface yourself and give {key}=no"
                        ),
                        ("mac", value) => mac = parse_mac(value)?,
                        ("pcap", value) => pcap = Some(PathBuf::from(value)),
                        (other, _) => anyhow::bail!(
                            "--nic tap: unknown option {other:?} (ifname, script, downscript, mac, pcap)"
                        ),
                    }
                }
                let ifname =
                    ifname.ok_or_else(|| anyhow::anyhow!("--nic tap needs ifname=NAME"))?;
                Ok(NicSpec::Tap { ifname, mac, pcap })
            }
            other => anyhow::bail!("--nic {other:?}: expected none, user[,...] or tap,ifname=NAME"),
        }
    }

    /// The machine's NIC: its MAC address and started backend (None for `none`).
    pub fn start(&self) -> anyhow::Result<Option<(MacAddress, Box<dyn NetBackend>)>> {
        match self {
            NicSpec::None => Ok(None),
            NicSpec::User {
                forwards,
                mac,
                pcap,
            } => {
                let net: Box<dyn NetBackend> = Box::new(UserNet::start(forwards)?);
                Ok(Some((*mac, with_capture(net, pcap.as_deref())?)))
            }
            NicSpec::Tap { ifname, mac, pcap } => {
                let net: Box<dyn NetBackend> = Box::new(Tap::open(ifname)?);
                Ok(Some((*mac, with_capture(net, pcap.as_deref())?)))
            }
        }
    }
}

/// The backend, wrapped in a capture file when `pcap=` was given.
fn with_capture(
    net: Box<dyn NetBackend>,
    pcap: Option<&std::path::Path>,
) -> anyhow::Result<Box<dyn NetBackend>> {
    Ok(match pcap {
        Some(path) => Box::new(PcapTap::create(path, net)?),
        None => net,
    })
}

/// `tcp:[ADDR]:HOSTPORT-[GUESTADDR]:GUESTPORT` (the address defaults to 127.0.0.1; the
/// guest address, if given, must be the DHCP lease).
fn parse_hostfwd(text: &str) -> anyhow::Result<HostForward> {
    let bad = || anyhow::anyhow!("hostfwd={text}: expected tcp:[ADDR]:HOSTPORT-:GUESTPORT");
    let rest = text.strip_prefix("tcp:").ok_or_else(bad)?;
    let (host, guest) = rest.split_once('-').ok_or_else(bad)?;
    let (host_addr, host_port) = host.rsplit_once(':').unwrap_or(("", host));
    let (guest_addr, guest_port) = guest.rsplit_once(':').unwrap_or(("", guest));
    let host = if host_addr.is_empty() {
        Ipv4Addr::LOCALHOST
    } else {
        host_addr.parse().map_err(|_| bad())?
    };
    if !guest_addr.is_empty() && guest_addr.parse::<Ipv4Addr>().ok() != Some(crate::slirp::GUEST) {
        anyhow::bail!(
            "hostfwd={text}: the guest address must be {}",
            crate::slirp::GUEST
        );
    }
    Ok(HostForward {
        host,
        host_port: host_port.parse().map_err(|_| bad())?,
        guest_port: guest_port.parse().map_err(|_| bad())?,
    })
}

fn parse_mac(text: &str) -> anyhow::Result<MacAddress> {
    let bytes: Vec<u8> = text
        .split(':')
        .map(|b| u8::from_str_radix(b, 16))
        .collect::<Result<_, _>>()
        .map_err(|_| {
            anyhow::anyhow!("mac={text}: expected six hex bytes like 52:54:00:12:34:56")
        })?;
    let mac: MacAddress = bytes
        .try_into()
        .map_err(|_| anyhow::anyhow!("mac={text}: expected six bytes"))?;
    if mac[0] & 1 != 0 {
        anyhow::bail!("mac={text}: a multicast address cannot be a NIC's");
    }
    Ok(mac)
}

/// Writes every frame passing through to a pcap file (Ethernet link type).
pub struct PcapTap {
    inner: Box<dyn NetBackend>,
    file: std::io::BufWriter<std::fs::File>,
}

impl PcapTap {
    pub fn create(path: &std::path::Path, inner: Box<dyn NetBackend>) -> anyhow::Result<PcapTap> {
        let file = std::fs::File::create(path)
            .map_err(|e| anyhow::anyhow!("pcap={}: {e}", path.display()))?;
        let mut file = std::io::BufWriter::new(file);
        // Magic, version 2.4, GMT offset, accuracy, snapshot length, LINKTYPE_ETHERNET.
        let mut header = Vec::with_capacity(24);
        header.extend_from_slice(&0xA1B2_C3D4u32.to_le_bytes());
        header.extend_from_slice(&2u16.to_le_bytes());
        header.extend_from_slice(&4u16.to_le_bytes());
        header.extend_from_slice(&[0; 8]);
        header.extend_from_slice(&65535u32.to_le_bytes());
        header.extend_from_slice(&1u32.to_le_bytes());
        file.write_all(&header)?;
        file.flush()?;
        Ok(PcapTap { inner, file })
    }

    fn record(&mut self, frame: &[u8]) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let len = frame.len().min(65535) as u32;
        let mut header = [0u8; 16];
        header[0..4].copy_from_slice(&(now.as_secs() as u32).to_le_bytes());
        header[4..8].copy_from_slice(&now.subsec_micros().to_le_bytes());
        header[8..12].copy_from_slice(&len.to_le_bytes());
        header[12..16].copy_from_slice(&(frame.len() as u32).to_le_bytes());
        let written = self
            .file
            .write_all(&header)
            .and_then(|_| self.file.write_all(&frame[..len as usize]))
            .and_then(|_| self.file.flush());
        if let Err(e) = written {
            tracing::warn!("pcap: {e}; capture incomplete");
        }
    }
}

impl NetBackend for PcapTap {
    fn send(&mut self, frame: &[u8]) {
        self.record(frame);
        self.inner.send(frame);
    }

    fn receive(&mut self) -> Option<Vec<u8>> {
        let frame = self.inner.receive()?;
        self.record(&frame);
        Some(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nic_options_parse_like_qemu() {
        assert_eq!(NicSpec::parse("none").unwrap(), NicSpec::None);
        let spec = NicSpec::parse("user,hostfwd=tcp:127.0.0.1:5555-:22,hostfwd=tcp::8080-10.0.2.15:80,mac=52:54:00:aa:bb:cc,pcap=/tmp/x.pcap").unwrap();
        let NicSpec::User {
            forwards,
            mac,
            pcap,
        } = spec
        else {
            panic!("not user");
        };
        assert_eq!(
            forwards,
            vec![
                HostForward {
                    host: Ipv4Addr::LOCALHOST,
                    host_port: 5555,
                    guest_port: 22
                },
                HostForward {
                    host: Ipv4Addr::LOCALHOST,
                    host_port: 8080,
                    guest_port: 80
                },
            ]
        );
        assert_eq!(mac, [0x52, 0x54, 0, 0xAA, 0xBB, 0xCC]);
        assert_eq!(pcap, Some(PathBuf::from("/tmp/x.pcap")));
        assert_eq!(
            NicSpec::parse("tap,ifname=tap0,script=no,downscript=no,mac=52:54:00:00:00:01")
                .unwrap(),
            NicSpec::Tap {
                ifname: "tap0".into(),
                mac: [0x52, 0x54, 0, 0, 0, 1],
                pcap: None
            }
        );
        for bad in [
            "tap",
            "tap,ifname=tap0,script=/etc/qemu-ifup",
            "tap,ifname=tap0,vhost=on",
            "user,hostfwd=udp::1-:2",
            "user,hostfwd=tcp::99999-:2",
            "user,mac=01:00:00:00:00:00",
            "user,foo=bar",
            "bridge",
            "none,x=y",
        ] {
            assert!(NicSpec::parse(bad).is_err(), "accepted {bad}");
        }
    }
}
