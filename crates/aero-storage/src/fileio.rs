//! Positioned file I/O and big-endian field access shared by the image formats.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};

pub(crate) fn read_at(mut file: &File, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buf)
}

pub(crate) fn write_at(mut file: &File, offset: u64, buf: &[u8]) -> std::io::Result<()> {
    file.seek(SeekFrom::Start(offset))?;
    file.write_all(buf)
}

/// Big-endian fields of a header buffer. Callers bound-check the buffer length first, so
/// out-of-range offsets yield 0 instead of panicking.
pub(crate) fn be_u16(buf: &[u8], at: usize) -> u16 {
    buf.get(at..at + 2)
        .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
}

pub(crate) fn be_u32(buf: &[u8], at: usize) -> u32 {
    buf.get(at..at + 4)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

pub(crate) fn be_u64(buf: &[u8], at: usize) -> u64 {
    buf.get(at..at + 8).map_or(0, |b| {
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        u64::from_be_bytes(a)
    })
}

pub(crate) fn put_be_u32(buf: &mut [u8], at: usize, v: u32) {
    if let Some(b) = buf.get_mut(at..at + 4) {
        b.copy_from_slice(&v.to_be_bytes());
    }
}

pub(crate) fn put_be_u64(buf: &mut [u8], at: usize, v: u64) {
    if let Some(b) = buf.get_mut(at..at + 8) {
        b.copy_from_slice(&v.to_be_bytes());
    }
}
