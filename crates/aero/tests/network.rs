//! Network tests with a real guest: Linux's `e1000` driver binds Aero's 82540EM, sees
//! its link and MAC address, gets a DHCP lease from the user-mode NAT (libslirp),
//! downloads a file from an HTTP server the test runs on 127.0.0.1 (through the gateway
//! 10.0.2.2) and serves it back through a `hostfwd` port forward; both copies are
//! checked by SHA-256. Then the monitor pulls the cable and the driver sees the link go
//! down. All NAT traffic stays on the loopback interface. A second test puts the NIC on a
//! TAP interface the test creates (10.0.3.1/24 on the host; root, skipped only without
//! /dev/net/tun): the guest pings the host end and downloads a file from it.

mod common;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The body of the guest's /init, appended to the storage initramfs (which carries e1000.ko).
/// `@PORT@` is the test's HTTP server port on the host.
const INIT: &str = r#"mkdir -p /www/cgi-bin
insmod /lib/modules/e1000.ko || echo "AERO-NET-INSMOD-FAILED"
i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
echo "AERO-NET-DRIVER=$(basename "$(readlink /sys/class/net/eth0/device/driver)")"
echo "AERO-NET-PCI=$(basename "$(readlink /sys/class/net/eth0/device)")"
echo "AERO-NET-MAC=$(cat /sys/class/net/eth0/address)"
ip link set lo up
ip link set eth0 up
i=0
while [ "$(cat /sys/class/net/eth0/carrier 2>/dev/null)" != 1 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
echo "AERO-NET-CARRIER=$(cat /sys/class/net/eth0/carrier 2>/dev/null)"
cat >/bin/dhcp-event <<'EOF'
#!/bin/sh
if [ "$1" = bound ] || [ "$1" = renew ]; then
    ifconfig "$interface" "$ip" netmask "$subnet"
    route add default gw "$router" dev "$interface"
    echo "AERO-NET-LEASE=$ip router $router dns $dns"
fi
EOF
chmod 0755 /bin/dhcp-event
udhcpc -i eth0 -s /bin/dhcp-event -q -n -t 10 -T 2 || echo "AERO-NET-DHCP-FAILED"
if wget -q -O /www/payload http://10.0.2.2:@PORT@/payload; then
    echo "AERO-NET-FETCH-SHA=$(sha256sum /www/payload | cut -d' ' -f1)"
else
    echo "AERO-NET-FETCH-FAILED"
fi
# Serve the file back (the host reaches port 8080 through hostfwd); the host asks for
# /cgi-bin/done when it has it.
printf '#!/bin/sh\ntouch /tmp/done\nprintf "Content-Type: text/plain\\r\\n\\r\\nbye\\n"\n' >/www/cgi-bin/done
chmod 0755 /www/cgi-bin/done
httpd -p 8080 -h /www
echo "AERO-NET-SERVING"
i=0
while [ ! -e /tmp/done ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
# The host pulls the cable (monitor: set_link nic off) once it sees this line.
echo "AERO-NET-LINK-WAIT"
i=0
while [ "$(cat /sys/class/net/eth0/carrier)" = 1 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
echo "AERO-NET-CARRIER-AFTER=$(cat /sys/class/net/eth0/carrier)"
echo "AERO-NET-DONE"
"#;

/// The body of the guest's /init for the TAP test: a static address on the host's TAP subnet, a
/// ping to the host end and a download from the test's server there.
const TAP_INIT: &str = r#"insmod /lib/modules/e1000.ko || echo "AERO-NET-INSMOD-FAILED"
i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
ifconfig eth0 10.0.3.2 netmask 255.255.255.0 up
if ping -c 2 -W 5 10.0.3.1 >/dev/null; then echo "AERO-NET-PING=ok"; else echo "AERO-NET-PING=lost"; fi
if wget -q -O /tmp/payload http://10.0.3.1:@PORT@/payload; then
    echo "AERO-NET-FETCH-SHA=$(sha256sum /tmp/payload | cut -d' ' -f1)"
else
    echo "AERO-NET-FETCH-FAILED"
fi
echo "AERO-NET-DONE"
"#;

/// Arguments booting the amd64 kernel directly with the storage initramfs (modules) plus
/// our /init.
fn boot_with_init(dir: &Path, port: u16) -> Vec<String> {
    boot_with(dir, INIT, port)
}

fn boot_with(dir: &Path, init: &str, port: u16) -> Vec<String> {
    let init = common::guest_init(init).replace("@PORT@", &port.to_string());
    common::linux_direct_with_files(
        dir,
        "initrd-amd64-storage.img",
        &[("init", 0o100755, init.into_bytes())],
    )
}

/// 1 MiB the guest cannot guess (xorshift, seeded from the clock).
fn payload() -> Vec<u8> {
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64;
    let mut x = (clock ^ u64::from(std::process::id()).wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1;
    (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Serves `body` at any GET on a loopback port until the test ends; returns the port.
fn http_server(body: Vec<u8>) -> u16 {
    http_server_on("127.0.0.1", body)
}

fn http_server_on(address: &str, body: Vec<u8>) -> u16 {
    let listener = TcpListener::bind((address, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            // Request line and headers, up to the blank line.
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let mut stream = reader.into_inner();
            let head = format!(
                "HTTP/1.0 200 OK\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    port
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One HTTP/1.0 GET to 127.0.0.1:`port`; the response body.
fn http_get(port: u16, path: &str) -> std::io::Result<Vec<u8>> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: guest\r\n\r\n")?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no HTTP header end"))?;
    let head = String::from_utf8_lossy(&response[..split]);
    if !head.starts_with("HTTP/1.") || !head.contains(" 200 ") {
        return Err(std::io::Error::other(format!("HTTP status: {head}")));
    }
    Ok(response[split + 4..].to_vec())
}

fn sha256_hex(data: &[u8]) -> String {
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum");
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Kills the emulator if the test fails before it exits.
struct Guest(Child);

impl Guest {
    /// `aero headless --realtime` booting with `boot` until the guest prints AERO-NET-DONE
    /// (or `timeout_secs` pass), with `args` (the NIC, a monitor script).
    fn start(serial: &Path, timeout_secs: u32, args: &[&str], boot: &[String]) -> Guest {
        let child = Command::new(env!("CARGO_BIN_EXE_aero"))
            .args(["headless", "--realtime", "--serial"])
            .arg(serial)
            .args(["--until-serial", "AERO-NET-DONE", "--timeout"])
            .arg(timeout_secs.to_string())
            .args(args)
            .args(boot)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run aero");
        Guest(child)
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The value the guest printed as `AERO-NET-KEY=value`.
fn report<'a>(serial: &'a str, key: &str) -> Option<&'a str> {
    common::serial_value(serial, &format!("AERO-NET-{key}"))
}

/// Waits until the serial file holds `marker` (or the guest exits / time runs out).
fn wait_for(serial: &Path, marker: &str, guest: &mut Guest, limit: Duration) -> String {
    let start = Instant::now();
    loop {
        let text = String::from_utf8_lossy(&std::fs::read(serial).unwrap_or_default()).into_owned();
        if text.contains(marker) {
            return text;
        }
        if let Ok(Some(status)) = guest.0.try_wait() {
            panic!("aero exited ({status}) before {marker}:\n{text}");
        }
        assert!(
            start.elapsed() < limit,
            "no {marker} after {limit:?}:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn e1000_gets_a_lease_fetches_through_nat_and_serves_through_hostfwd() {
    let dir = common::work_dir("network-nat");
    let body = payload();
    let want = sha256_hex(&body);
    let port = http_server(body);
    let boot = boot_with_init(&dir, port);
    let forward = free_port();
    let serial = dir.join("serial.txt");
    let pcap = dir.join("capture.pcap");
    let nic = format!(
        "user,hostfwd=tcp:127.0.0.1:{forward}-:8080,mac=52:54:00:ae:40:01,pcap={}",
        pcap.display()
    );
    let monitor = dir.join("monitor.txt");
    std::fs::write(
        &monitor,
        "wait-serial AERO-NET-LINK-WAIT\nset_link nic off\n",
    )
    .unwrap();
    let mut guest = Guest::start(
        &serial,
        240,
        &["--nic", &nic, "--monitor", monitor.to_str().unwrap()],
        &boot,
    );
    let text = wait_for(
        &serial,
        "AERO-NET-SERVING",
        &mut guest,
        Duration::from_secs(200),
    );
    assert_eq!(report(&text, "DRIVER"), Some("e1000"), "{text}");
    assert_eq!(report(&text, "PCI"), Some("0000:00:03.0"), "{text}");
    assert_eq!(report(&text, "MAC"), Some("52:54:00:ae:40:01"), "{text}");
    assert_eq!(report(&text, "CARRIER"), Some("1"), "{text}");
    assert_eq!(
        report(&text, "LEASE"),
        Some("10.0.2.15 router 10.0.2.2 dns 10.0.2.3"),
        "{text}"
    );
    assert_eq!(report(&text, "FETCH-SHA"), Some(want.as_str()), "{text}");
    // The guest's copy, back through the port forward.
    let served = http_get(forward, "/payload").expect("GET through hostfwd");
    assert_eq!(sha256_hex(&served), want, "file served back by the guest");
    // The guest powers off as soon as the CGI ran: its answer may never come.
    let mut done = TcpStream::connect(("127.0.0.1", forward)).expect("connect through hostfwd");
    write!(done, "GET /cgi-bin/done HTTP/1.0\r\n\r\n").unwrap();
    let text = wait_for(
        &serial,
        "AERO-NET-DONE",
        &mut guest,
        Duration::from_secs(30),
    );
    // Pulling the cable: a link-status-change interrupt, and the driver sees it down.
    assert_eq!(report(&text, "CARRIER-AFTER"), Some("0"), "{text}");
    assert!(text.contains("NIC Link is Down"), "{text}");
    let status = guest.0.wait().unwrap();
    assert!(status.success(), "aero exit status {status}");
    // The capture file saw the DHCP exchange (UDP ports 68/67) in both directions.
    let capture = std::fs::read(&pcap).unwrap();
    assert_eq!(&capture[..4], &0xA1B2_C3D4u32.to_le_bytes());
    let dhcp = |from: u16, to: u16| {
        let mut ports = from.to_be_bytes().to_vec();
        ports.extend_from_slice(&to.to_be_bytes());
        capture.windows(4).any(|w| w == ports.as_slice())
    };
    assert!(dhcp(68, 67) && dhcp(67, 68), "no DHCP in the capture");
}

/// A TAP interface made for one test (`ip tuntap`), deleted when the test ends.
struct TapInterface(String);

impl TapInterface {
    fn create(name: &str) -> TapInterface {
        let ip = |args: &[&str]| {
            let status = Command::new("ip")
                .args(args)
                .status()
                .expect("run ip (iproute2)");
            assert!(
                status.success(),
                "ip {args:?} failed (the test runs as root)"
            );
        };
        let _ = Command::new("ip")
            .args(["tuntap", "del", "dev", name, "mode", "tap"])
            .stderr(Stdio::null())
            .status();
        ip(&["tuntap", "add", "dev", name, "mode", "tap"]);
        let tap = TapInterface(name.to_string());
        ip(&["addr", "add", "10.0.3.1/24", "dev", name]);
        ip(&["link", "set", name, "up"]);
        tap
    }
}

impl Drop for TapInterface {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["tuntap", "del", "dev", &self.0, "mode", "tap"])
            .status();
    }
}

#[test]
fn e1000_on_a_tap_interface_pings_and_fetches_from_the_host() {
    if !Path::new("/dev/net/tun").exists() {
        println!("skipped: /dev/net/tun is absent (no TUN/TAP driver on this machine)");
        return;
    }
    let dir = common::work_dir("network-tap");
    let tap = TapInterface::create(&format!("aerotap{}", std::process::id() % 100_000));
    let body = payload();
    let want = sha256_hex(&body);
    let port = http_server_on("10.0.3.1", body);
    let boot = boot_with(&dir, TAP_INIT, port);
    let serial = dir.join("serial.txt");
    let nic = format!("tap,ifname={},script=no", tap.0);
    let mut guest = Guest::start(&serial, 200, &["--nic", &nic], &boot);
    let text = wait_for(
        &serial,
        "AERO-NET-DONE",
        &mut guest,
        Duration::from_secs(190),
    );
    assert_eq!(report(&text, "PING"), Some("ok"), "{text}");
    assert_eq!(report(&text, "FETCH-SHA"), Some(want.as_str()), "{text}");
    let status = guest.0.wait().unwrap();
    assert!(status.success(), "aero exit status {status}");
}
