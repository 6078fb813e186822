//! The device side of the test-only D3D9 runtime (`tests/d3d9/runtime`): a Windows
//! program under Wine loads that `d3d9.dll`, which drives our UMD and plays the KMD; its
//! guest RAM writes and BAR0 accesses come here over a loopback socket and run live on an
//! [`AeroGpu`] over [`VecMemory`], so readbacks see the executor's pixels synchronously.
//!
//! Wire format: the driver trace records (`drivers/aerogpu/tests_host/agpu_trace.h`) plus
//! two requests that are answered at once, all little-endian:
//!
//! ```text
//!   'M' u64 gpa, u32 len, len bytes   guest RAM write
//!   'W' u32 offset, u32 value          BAR0 write
//!   'R' u32 offset                     BAR0 read      -> u32 value
//!   'G' u64 gpa, u32 len               guest RAM read -> len bytes (zeros outside RAM)
//!   'E'                                end of the session
//! ```
//!
//! Each connection is a fresh device and RAM. Time is the host's monotonic clock, so
//! VSYNC presents complete at the device's vblanks as they would in the machine.

use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use aero_gpu::aerogpu::{AeroGpu, AeroGpuConfig, DeviceStats, Executor, GuestMemory, VecMemory};
use thiserror::Error;

/// Guest RAM of one session; the runtime uses the same size (`AGPU_LIVE_RAM_BYTES`).
pub const LIVE_RAM_BYTES: usize = 256 << 20;
/// Largest single memory record or read; larger ones are protocol errors.
const MAX_TRANSFER: u32 = 64 << 20;

#[derive(Debug, Error)]
pub enum HostError {
    #[error("socket: {0}")]
    Io(#[from] io::Error),
    #[error("unknown record tag {0:#x}")]
    UnknownRecord(u8),
    #[error("memory record {gpa:#x}+{len:#x} outside guest RAM or too large")]
    BadRange { gpa: u64, len: u32 },
}

/// What one session did.
#[derive(Debug, Default)]
pub struct SessionSummary {
    pub stats: DeviceStats,
    pub mmio_writes: u64,
    pub bytes_in: u64,
}

fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

/// Serves one runtime connection until its 'E' record (or EOF) on a new device.
pub fn serve<E: Executor>(stream: TcpStream, executor: E) -> Result<SessionSummary, HostError> {
    stream.set_nodelay(true)?;
    let mut rd = BufReader::with_capacity(1 << 20, stream.try_clone()?);
    let mut wr = BufWriter::new(stream);
    let mut dev = AeroGpu::with_executor(AeroGpuConfig::default(), executor);
    let mut mem = VecMemory::new(LIVE_RAM_BYTES);
    let start = Instant::now();
    let mut summary = SessionSummary::default();
    let mut buf = Vec::new();
    loop {
        let mut tag = [0u8; 1];
        match rd.read_exact(&mut tag) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e.into()),
        }
        let now_ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        dev.tick(now_ns, &mut mem);
        match tag[0] {
            b'M' => {
                let gpa = read_u64(&mut rd)?;
                let len = read_u32(&mut rd)?;
                if len > MAX_TRANSFER || !mem.contains(gpa, len.into()) {
                    return Err(HostError::BadRange { gpa, len });
                }
                buf.resize(len as usize, 0);
                rd.read_exact(&mut buf)?;
                mem.write(gpa, &buf)
                    .map_err(|_| HostError::BadRange { gpa, len })?;
                summary.bytes_in += u64::from(len);
            }
            b'W' => {
                let off = read_u32(&mut rd)?;
                let value = read_u32(&mut rd)?;
                dev.write_reg(off, value, &mut mem);
                summary.mmio_writes += 1;
            }
            b'R' => {
                let off = read_u32(&mut rd)?;
                wr.write_all(&dev.read_reg(off).to_le_bytes())?;
                wr.flush()?;
            }
            b'G' => {
                let gpa = read_u64(&mut rd)?;
                let len = read_u32(&mut rd)?;
                if len > MAX_TRANSFER {
                    return Err(HostError::BadRange { gpa, len });
                }
                buf.clear();
                buf.resize(len as usize, 0);
                // Outside RAM reads as zeros: the runtime asked for memory it never had.
                let _ = mem.read(gpa, &mut buf);
                wr.write_all(&buf)?;
                wr.flush()?;
            }
            b'E' => break,
            t => return Err(HostError::UnknownRecord(t)),
        }
    }
    summary.stats = dev.stats();
    let err = dev.error();
    if err.count > 0 {
        tracing::warn!(
            count = err.count,
            code = err.code,
            fence = err.fence,
            "device latched errors"
        );
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aero_gpu::aerogpu::NullExecutor;
    use std::net::TcpListener;

    /// Runs `client` against a session served on a loopback socket.
    fn session(
        client: impl FnOnce(&mut TcpStream) + Send + 'static,
    ) -> Result<SessionSummary, HostError> {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let c = std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            client(&mut s);
        });
        let (conn, _) = listener.accept().unwrap();
        let out = serve(conn, NullExecutor::default());
        c.join().unwrap();
        out
    }

    fn rec(tag: u8, parts: &[&[u8]]) -> Vec<u8> {
        let mut v = vec![tag];
        for p in parts {
            v.extend_from_slice(p);
        }
        v
    }

    #[test]
    fn memory_writes_read_back_and_registers_answer() {
        let summary = session(|s| {
            s.write_all(&rec(
                b'M',
                &[&0x5000u64.to_le_bytes(), &4u32.to_le_bytes(), b"abcd"],
            ))
            .unwrap();
            s.write_all(&rec(b'G', &[&0x5001u64.to_le_bytes(), &3u32.to_le_bytes()]))
                .unwrap();
            let mut got = [0u8; 3];
            s.read_exact(&mut got).unwrap();
            assert_eq!(&got, b"bcd");
            // BAR0 offset 0 is the device's magic ("AGPU").
            s.write_all(&rec(b'R', &[&0u32.to_le_bytes()])).unwrap();
            let mut magic = [0u8; 4];
            s.read_exact(&mut magic).unwrap();
            assert_eq!(u32::from_le_bytes(magic), 0x5550_4741);
            // Outside RAM reads as zeros.
            s.write_all(&rec(b'G', &[&u64::MAX.to_le_bytes(), &2u32.to_le_bytes()]))
                .unwrap();
            let mut z = [1u8; 2];
            s.read_exact(&mut z).unwrap();
            assert_eq!(z, [0, 0]);
            s.write_all(b"E").unwrap();
        })
        .unwrap();
        assert_eq!(summary.bytes_in, 4);
    }

    #[test]
    fn hostile_records_end_the_session_with_an_error() {
        let past_ram = (LIVE_RAM_BYTES as u64 - 2).to_le_bytes();
        let err = session(move |s| {
            let _ = s.write_all(&rec(b'M', &[&past_ram, &4u32.to_le_bytes(), b"abcd"]));
        })
        .unwrap_err();
        assert!(matches!(err, HostError::BadRange { len: 4, .. }), "{err}");
        let err = session(|s| {
            let _ = s.write_all(&rec(b'G', &[&0u64.to_le_bytes(), &u32::MAX.to_le_bytes()]));
        })
        .unwrap_err();
        assert!(matches!(err, HostError::BadRange { .. }), "{err}");
        let err = session(|s| {
            let _ = s.write_all(b"Z");
        })
        .unwrap_err();
        assert!(matches!(err, HostError::UnknownRecord(b'Z')), "{err}");
    }
}
