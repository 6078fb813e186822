//! The HD Audio controller as Linux's snd-hda-intel programs it: reset and codec
//! presence, CORB/RIRB and the immediate interface, BDL DMA in both directions with IOC
//! interrupts and the position buffer, hostile lists.

use super::*;
use crate::audio::CaptureBackend;
use crate::devices::test_ram::Ram;

const CORB: u64 = 0x1000;
const RIRB: u64 = 0x2000;
const POSITION: u64 = 0x3000;
const BDL: u64 = 0x4000;
const BUFFER: u64 = 0x10000;

fn rd(h: &mut Hda, offset: u32, size: u8) -> u32 {
    h.bar_read(0, u64::from(offset), size) as u32
}

fn wr(h: &mut Hda, offset: u32, size: u8, value: u32) {
    h.bar_write(0, u64::from(offset), size, u64::from(value));
}

/// A controller out of reset with its codec found, and its capture backend.
fn controller() -> (Hda, CaptureBackend, Ram) {
    let backend = CaptureBackend::new();
    let mut h = Hda::new(Box::new(backend.clone()));
    h.config_mut().write(0x04, 2, 0x0006);
    assert_eq!(rd(&mut h, GCTL, 4) & 1, 0, "in reset at power-on");
    wr(&mut h, GCTL, 4, 1);
    assert_eq!(rd(&mut h, GCTL, 4) & 1, 1);
    (h, backend, Ram(vec![0; 1 << 20]))
}

/// CORB/RIRB set up as Linux does: 256 entries, RINTCNT 1, both rings running.
fn start_rings(h: &mut Hda) {
    wr(h, CORBLBASE, 4, CORB as u32);
    wr(h, CORBUBASE, 4, 0);
    wr(h, 0x4E, 1, 2);
    wr(h, 0x4A, 2, 0x8000);
    assert_eq!(rd(h, 0x4A, 2), 0x8000, "CORBRP reset reads back");
    wr(h, 0x4A, 2, 0);
    assert_eq!(rd(h, 0x4A, 2), 0);
    wr(h, RIRBLBASE, 4, RIRB as u32);
    wr(h, 0x5E, 1, 2);
    wr(h, RIRBWP, 2, 0x8000);
    wr(h, 0x5A, 2, 1);
    wr(h, INTCTL, 4, INTCTL_GIE | INTCTL_CIE | 0x3);
    wr(h, RIRBCTL, 1, u32::from(RIRBCTL_DMAEN | RIRBCTL_RINTCTL));
    wr(h, CORBCTL, 1, u32::from(CORBCTL_RUN));
}

fn send(h: &mut Hda, ram: &mut Ram, commands: &[u32]) -> Vec<u32> {
    let mut wp = rd(h, CORBWP, 2) as u8;
    for &c in commands {
        wp = wp.wrapping_add(1);
        ram.write(CORB + u64::from(wp) * 4, &c.to_le_bytes())
            .unwrap();
    }
    let rirb_before = rd(h, RIRBWP, 2) as u8;
    wr(h, CORBWP, 2, u32::from(wp));
    assert!(h.dma_pending());
    h.run_dma(ram, 0);
    let rirb_after = rd(h, RIRBWP, 2) as u8;
    let mut out = Vec::new();
    let mut i = rirb_before;
    while i != rirb_after {
        i = i.wrapping_add(1);
        let mut e = [0u8; 8];
        ram.read(RIRB + u64::from(i) * 8, &mut e).unwrap();
        out.push(u32::from_le_bytes([e[0], e[1], e[2], e[3]]));
    }
    out
}

#[test]
fn reset_announces_the_codec_and_capabilities() {
    let (mut h, _, _) = controller();
    assert_eq!(
        rd(&mut h, GCAP, 2),
        0x1101,
        "1 output, 1 input stream, 64-bit"
    );
    assert_eq!(rd(&mut h, 0x03, 1), 1, "VMAJ");
    assert_eq!(rd(&mut h, 0x0E, 2), 1, "codec 0 present");
    wr(&mut h, 0x0E, 2, 1);
    assert_eq!(rd(&mut h, 0x0E, 2), 0, "STATESTS is write-1-to-clear");
    assert_eq!(rd(&mut h, 0x4E, 1), 0x42, "256-entry CORB");
    wr(&mut h, INTCTL, 4, 0xC000_0003);
    wr(&mut h, GCTL, 4, 0);
    assert_eq!(rd(&mut h, INTCTL, 4), 0, "CRST clears the registers");
    assert_eq!(h.config().u16_at(0x0A), 0x0403, "audio device class");
}

#[test]
fn corb_commands_get_rirb_responses_and_an_interrupt() {
    let (mut h, _, mut ram) = controller();
    start_rings(&mut h);
    let responses = send(
        &mut h,
        &mut ram,
        &[0x000F_0000, 0x001F_0004, 0x0030_0000 | 0xF00 << 8 | 0x0C],
    );
    assert_eq!(responses, vec![0xA3A0_0001, 0x0002_0004, 0x10]);
    assert_eq!(rd(&mut h, 0x4A, 2), 3, "CORBRP follows");
    assert_ne!(rd(&mut h, 0x5D, 1) & 1, 0, "RINTFL");
    assert!(h.irq_level());
    assert!(h.take_msi() && !h.take_msi(), "one MSI per rising edge");
    assert_eq!(rd(&mut h, INTSTS, 4), INTSTS_GIS | INTSTS_CIS);
    wr(&mut h, 0x5D, 1, 1);
    assert!(!h.irq_level());
    // Commands for absent codecs get no response; the ring still moves on.
    assert!(send(&mut h, &mut ram, &[0x1000_F000]).is_empty());
    assert_eq!(rd(&mut h, 0x4A, 2), 4);
    // The pointers wrap around the ring.
    for _ in 0..100 {
        send(&mut h, &mut ram, &[0x000F_0000, 0x000F_0000, 0x000F_0000]);
    }
    assert_eq!(rd(&mut h, 0x4A, 2), (4 + 300) % 256);
}

#[test]
fn immediate_command_interface_answers_at_once() {
    let (mut h, _, _) = controller();
    wr(&mut h, ICOI, 4, 0x000F_0000);
    wr(&mut h, ICIS, 2, 1);
    assert_eq!(rd(&mut h, ICIS, 2) & 3, 2, "not busy, response valid");
    assert_eq!(rd(&mut h, IRII, 4), 0xA3A0_0001);
    wr(&mut h, ICIS, 2, 2);
    assert_eq!(rd(&mut h, ICIS, 2) & 2, 0);
}

/// Sets up stream `index` (tag 1) with `entries` descriptors of `len` bytes each at
/// BUFFER, IOC on each, 48 kHz 16-bit stereo.
fn setup_stream(h: &mut Hda, ram: &mut Ram, index: usize, entries: u32, len: u32) {
    for i in 0..entries {
        let mut bd = [0u8; 16];
        bd[..8].copy_from_slice(&(BUFFER + u64::from(i * len)).to_le_bytes());
        bd[8..12].copy_from_slice(&len.to_le_bytes());
        bd[12] = 1;
        ram.write(BDL + u64::from(i) * 16, &bd).unwrap();
    }
    let sd = STREAM_BASE + index as u32 * STREAM_STRIDE;
    wr(h, sd, 1, 1);
    assert_eq!(rd(h, sd, 1) & 1, 1, "SRST reads back");
    wr(h, sd, 1, 0);
    wr(h, sd + 0x18, 4, BDL as u32);
    wr(h, sd + 0x1C, 4, 0);
    wr(h, sd + 0x08, 4, entries * len);
    wr(h, sd + 0x0C, 2, entries - 1);
    wr(h, sd + 0x12, 2, 0x0011);
    wr(h, sd + 2, 1, 0x10); // stream tag 1
    wr(h, DPLBASE, 4, POSITION as u32 | 1);
}

fn codec_route(h: &mut Hda, ram: &mut Ram, converter: u8, pin: u8, pin_ctl: u8) {
    start_rings(h);
    let verb = |nid: u8, v: u32, p: u8| u32::from(nid) << 20 | v << 8 | u32::from(p);
    send(
        h,
        ram,
        &[
            verb(converter, 0x706, 0x10),
            u32::from(converter) << 20 | 0x2_0011,
            verb(pin, 0x707, pin_ctl),
        ],
    );
}

#[test]
fn output_stream_plays_the_buffer_at_guest_pace_with_ioc_and_position() {
    let (mut h, backend, mut ram) = controller();
    codec_route(&mut h, &mut ram, 2, 3, 0x40);
    // 4 × 960 bytes = 4 × 240 frames (5 ms each); a ramp in the left channel.
    for i in 0..960u32 {
        let v = (i as i16).wrapping_mul(30);
        ram.write(BUFFER + u64::from(i) * 4, &v.to_le_bytes())
            .unwrap();
    }
    setup_stream(&mut h, &mut ram, OUTPUT_STREAM, 4, 960);
    h.advance(1_000_000);
    wr(&mut h, 0xA0, 1, SD_CTL_RUN | SD_CTL_IOCE);
    assert_eq!(
        h.next_deadline_ns(),
        Some(2_000_000),
        "1 ms of frames later"
    );
    h.advance(1_500_000);
    assert!(!h.dma_pending());
    h.advance(6_000_000); // 5 ms: the first descriptor
    assert!(h.dma_pending());
    h.run_dma(&mut ram, 6_000_000);
    let (rate, played) = backend.played();
    assert_eq!(rate, 48_000);
    assert_eq!(played.len(), 240);
    assert_eq!(played[2][0], f32::from(60i16) / 32768.0);
    assert_eq!(rd(&mut h, 0xA4, 4), 960, "LPIB");
    assert_eq!(rd(&mut h, 0x2000 + 0xA4, 4), 960, "LPIB alias");
    let mut pos = [0u8; 4];
    ram.read(POSITION + 8, &mut pos).unwrap();
    assert_eq!(u32::from_le_bytes(pos), 960, "position buffer, stream 1");
    assert_ne!(rd(&mut h, 0xA3, 1) & u32::from(SD_STS_BCIS), 0);
    assert_eq!(
        rd(&mut h, INTSTS, 4) & !INTSTS_CIS,
        INTSTS_GIS | 1 << OUTPUT_STREAM
    );
    wr(&mut h, 0x5D, 1, 1);
    assert!(h.irq_level());
    wr(&mut h, 0xA3, 1, u32::from(SD_STS_BCIS));
    assert!(!h.irq_level());
    // 25 ms more: wraps around the 20 ms buffer; LPIB stays inside CBL.
    h.advance(31_000_000);
    h.run_dma(&mut ram, 31_000_000);
    assert_eq!(backend.played().1.len(), 1440);
    assert_eq!(rd(&mut h, 0xA4, 4), 1440 * 4 % 3840);
    // The wall clock counts at 24 MHz.
    assert_eq!(rd(&mut h, WALCLK, 4), 31_000 * 24);
}

#[test]
fn muted_or_unrouted_output_plays_silence_of_the_same_length() {
    let (mut h, backend, mut ram) = controller();
    start_rings(&mut h);
    ram.write(BUFFER, &[0x55; 3840]).unwrap();
    setup_stream(&mut h, &mut ram, OUTPUT_STREAM, 4, 960);
    wr(&mut h, 0xA0, 1, SD_CTL_RUN);
    h.advance(10_000_000);
    h.run_dma(&mut ram, 10_000_000);
    let played = backend.played().1;
    assert_eq!(played.len(), 480);
    assert!(played.iter().all(|f| *f == [0.0, 0.0]));
}

#[test]
fn input_stream_records_the_backend_into_the_buffer() {
    let (mut h, backend, mut ram) = controller();
    codec_route(&mut h, &mut ram, 5, 4, 0x20);
    backend.set_input(
        48_000,
        (0..480).map(|i| [i as f32 / 1000.0, -0.5]).collect(),
    );
    setup_stream(&mut h, &mut ram, INPUT_STREAM, 2, 960);
    wr(&mut h, 0x80, 1, SD_CTL_RUN | SD_CTL_IOCE);
    h.advance(10_000_000);
    assert!(h.dma_pending());
    h.run_dma(&mut ram, 10_000_000);
    let mut buf = [0u8; 8];
    ram.read(BUFFER + 100 * 4, &mut buf).unwrap();
    assert_eq!(
        i16::from_le_bytes([buf[0], buf[1]]),
        (0.1f32 * 32767.0) as i16
    );
    assert_eq!(i16::from_le_bytes([buf[2], buf[3]]), -16383);
    assert_eq!(rd(&mut h, 0x84, 4), 0, "LPIB wrapped at CBL (1920)");
    assert_ne!(rd(&mut h, INTSTS, 4) & 1, 0, "IOC on the input stream");
}

#[test]
fn hostile_lists_stop_the_stream_without_hanging() {
    let (mut h, _, mut ram) = controller();
    // All descriptors empty.
    setup_stream(&mut h, &mut ram, OUTPUT_STREAM, 4, 0);
    // The output stream (descriptor 1) may interrupt: DESE with DEIE set must raise the line.
    wr(&mut h, INTCTL, 4, INTCTL_GIE | 1 << 1);
    wr(&mut h, 0xA0, 1, SD_CTL_RUN | 1 << 4);
    h.advance(5_000_000);
    h.run_dma(&mut ram, 5_000_000);
    assert_ne!(rd(&mut h, 0xA3, 1) & u32::from(SD_STS_DESE), 0);
    assert!(h.irq_level(), "descriptor error interrupt");
    assert!(!h.dma_pending());
    // Buffers outside RAM, a BDL outside RAM, a huge CBL and LVI: errors, no panic.
    let (mut h, _, mut ram) = controller();
    let mut bd = [0u8; 16];
    bd[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    bd[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    ram.write(BDL, &bd).unwrap();
    setup_stream(&mut h, &mut ram, INPUT_STREAM, 1, 0);
    ram.write(BDL, &bd).unwrap();
    wr(&mut h, 0x88, 4, u32::MAX);
    wr(&mut h, 0x8C, 2, 0xFFFF);
    wr(&mut h, 0x80, 1, SD_CTL_RUN);
    h.advance(10_000_000_000);
    h.run_dma(&mut ram, 10_000_000_000);
    assert_ne!(rd(&mut h, 0x83, 1) & u32::from(SD_STS_DESE), 0);
    wr(&mut h, 0xA0 + 0x18, 4, 0xFFFF_FF80);
    wr(&mut h, 0xA0 + 0x1C, 4, 0xFFFF_FFFF);
    wr(&mut h, 0xA0, 1, SD_CTL_RUN);
    h.advance(20_000_000_000);
    h.run_dma(&mut ram, 20_000_000_000);
    // CORB outside RAM: a memory error, the ring stops.
    wr(&mut h, CORBUBASE, 4, 0xFFFF_FFFF);
    wr(&mut h, RIRBCTL, 1, u32::from(RIRBCTL_DMAEN));
    wr(&mut h, CORBCTL, 1, u32::from(CORBCTL_RUN | CORBCTL_CMEIE));
    wr(&mut h, CORBWP, 2, 5);
    h.run_dma(&mut ram, 20_000_000_000);
    assert_ne!(rd(&mut h, 0x4D, 1) & 1, 0);
    assert!(!h.dma_pending());
    // Any access size at any offset.
    for offset in 0..MMIO_SIZE as u32 + 16 {
        for size in [1u8, 2, 4, 8] {
            h.bar_read(0, u64::from(offset), size);
        }
    }
}

#[test]
fn formats_decode_rate_size_and_channels() {
    let f = StreamFormat::decode(0x4011);
    assert_eq!((f.rate_hz, f.container, f.channels), (44_100, 2, 2));
    let f = StreamFormat::decode(0x0200 | 0x40);
    assert_eq!((f.rate_hz, f.bits, f.channels), (16_000, 32, 1));
    let f = StreamFormat::decode(0x7FFF);
    assert_eq!(f.channels, 16);
    assert!(f.rate_hz > 0);
}
