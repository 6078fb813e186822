//! Intel ICH6 High Definition Audio controller (8086:2668, class 0403, QEMU's
//! `intel-hda`) with one codec ([`super::hda_codec`]). Linux's `snd-hda-intel` and
//! Windows 7's inbox `hdaudbus.sys` drive it.
//!
//! From the Intel High Definition Audio specification (rev. 1.0a, chapter 3): BAR0 is a
//! 16 KiB register block. Modelled: global capabilities and reset (GCAP, GCTL, STATESTS
//! codec presence), the CORB/RIRB command rings with their pointers, sizes and
//! interrupts, the immediate command interface, INTCTL/INTSTS, one input stream (SD0)
//! and one output stream (SD1) with their buffer descriptor lists, IOC interrupts, the
//! DMA position buffer, the 24 MHz wall clock and MSI.
//!
//! Streams move data at the pace of the virtual clock: a running stream owes
//! `rate × elapsed` frames, moved about every millisecond (so IOC interrupts come at
//! most that late). Guest values are bounded: ring sizes come from 2-bit fields, a BDL has
//! at most 256 entries, one DMA call moves at most [`MAX_CATCH_UP_NS`] of audio (a
//! longer gap is skipped), and a list of only empty entries stops the stream with a
//! descriptor error.

use aero_storage::ide::GuestMemory;

use super::hda_codec::Codec;
use super::pci::{BarKind, ConfigSpace, PciFunction};
use super::pci_device::PciDevice;
use crate::audio::{AudioBackend, StereoFrame};

pub const VENDOR_ID: u16 = 0x8086;
pub const DEVICE_ID: u16 = 0x2668;
pub const MMIO_SIZE: u64 = 0x4000;

// Global registers.
const GCAP: u32 = 0x00;
const GCTL: u32 = 0x08;
const WAKEEN: u32 = 0x0C; // + STATESTS at 0x0E
const GSTS: u32 = 0x10;
const INTCTL: u32 = 0x20;
const INTSTS: u32 = 0x24;
const WALCLK: u32 = 0x30;
const SSYNC_OLD: u32 = 0x34;
const SSYNC: u32 = 0x38;
const CORBLBASE: u32 = 0x40;
const CORBUBASE: u32 = 0x44;
const CORBWP: u32 = 0x48; // + CORBRP at 0x4A
const CORBCTL: u32 = 0x4C; // + CORBSTS 0x4D, CORBSIZE 0x4E
const RIRBLBASE: u32 = 0x50;
const RIRBUBASE: u32 = 0x54;
const RIRBWP: u32 = 0x58; // + RINTCNT at 0x5A
const RIRBCTL: u32 = 0x5C; // + RIRBSTS 0x5D, RIRBSIZE 0x5E
const ICOI: u32 = 0x60;
const IRII: u32 = 0x64;
const ICIS: u32 = 0x68;
const DPLBASE: u32 = 0x70;
const DPUBASE: u32 = 0x74;
const STREAM_BASE: u32 = 0x80;
const STREAM_STRIDE: u32 = 0x20;
/// Aliases of WALCLK and the LPIBs at +0x2000.
const ALIAS_BASE: u32 = 0x2000;

/// One output and one input stream, no bidirectional ones, 64-bit addressing.
const STREAM_COUNT: usize = 2;
const GCAP_VALUE: u32 = 1 << 12 | 1 << 8 | 1;
/// Stream index (= register block and INTSTS bit): inputs come first.
pub const INPUT_STREAM: usize = 0;
pub const OUTPUT_STREAM: usize = 1;

const GCTL_CRST: u32 = 1 << 0;
const INTCTL_GIE: u32 = 1 << 31;
const INTCTL_CIE: u32 = 1 << 30;
const INTSTS_GIS: u32 = 1 << 31;
const INTSTS_CIS: u32 = 1 << 30;
const CORBRP_RESET: u16 = 1 << 15;
const CORBCTL_CMEIE: u8 = 1 << 0;
const CORBCTL_RUN: u8 = 1 << 1;
const CORBSTS_CMEI: u8 = 1 << 0;
const RIRBWP_RESET: u16 = 1 << 15;
const RIRBCTL_RINTCTL: u8 = 1 << 0;
const RIRBCTL_DMAEN: u8 = 1 << 1;
const RIRBCTL_OIC: u8 = 1 << 2;
const RIRBSTS_RINTFL: u8 = 1 << 0;
const RIRBSTS_OIS: u8 = 1 << 2;
/// Ring size registers: 256 entries is the only size offered (capability bit 6), and
/// the reset selection.
const RING_SIZE_RESET: u8 = 0x42;
const ICIS_ICB: u16 = 1 << 0;
const ICIS_IRV: u16 = 1 << 1;
const DPLBASE_ENABLE: u32 = 1 << 0;

const SD_CTL_SRST: u32 = 1 << 0;
const SD_CTL_RUN: u32 = 1 << 1;
const SD_CTL_IOCE: u32 = 1 << 2;
const SD_CTL_FEIE: u32 = 1 << 3;
const SD_CTL_DEIE: u32 = 1 << 4;
const SD_STS_BCIS: u8 = 1 << 2;
const SD_STS_FIFOE: u8 = 1 << 3;
const SD_STS_DESE: u8 = 1 << 4;
const SD_STS_FIFORDY: u8 = 1 << 5;
const SD_FIFO_SIZE: u16 = 0xFF;
const BDL_MAX_ENTRIES: u16 = 256;

/// The longest stretch of audio one DMA call moves; a longer gap (the host paused) is
/// skipped rather than played fast.
pub const MAX_CATCH_UP_NS: u64 = 100_000_000;
/// Streams move data in steps of about this much guest time.
const DMA_STEP_NS: u64 = 1_000_000;
/// Guest bytes copied per RAM access.
const DMA_CHUNK: usize = 4096;
/// Codec address of the one codec (SDATA_IN 0).
const CODEC_ADDRESS: u32 = 0;

/// Rate, sample size and channel count from an SDnFMT value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamFormat {
    pub rate_hz: u32,
    /// Bytes per sample in memory: 1, 2 or 4.
    pub container: usize,
    pub bits: u32,
    pub channels: usize,
}

impl StreamFormat {
    pub fn decode(fmt: u16) -> StreamFormat {
        let base = if fmt & 0x4000 != 0 { 44_100 } else { 48_000 };
        let multiple = u32::from((fmt >> 11) & 7).min(3) + 1;
        let divisor = u32::from((fmt >> 8) & 7) + 1;
        let (container, bits) = match (fmt >> 4) & 7 {
            0 => (1, 8),
            1 => (2, 16),
            2 => (4, 20),
            3 => (4, 24),
            _ => (4, 32),
        };
        StreamFormat {
            rate_hz: base * multiple / divisor,
            container,
            bits,
            channels: usize::from(fmt & 0xF) + 1,
        }
    }

    pub fn frame_bytes(&self) -> usize {
        self.container * self.channels
    }

    fn decode_sample(&self, b: &[u8]) -> f32 {
        match self.container {
            // 8-bit samples are unsigned.
            1 => (f32::from(b[0]) - 128.0) / 128.0,
            2 => f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0,
            // 20/24-bit samples sit in the top bits of a 32-bit container.
            _ => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32 / 2_147_483_648.0,
        }
    }

    fn encode_sample(&self, v: f32, out: &mut Vec<u8>) {
        let v = v.clamp(-1.0, 1.0);
        match self.container {
            1 => out.push((v * 127.0 + 128.0) as u8),
            2 => out.extend_from_slice(&((v * 32767.0) as i16).to_le_bytes()),
            _ => out.extend_from_slice(&((f64::from(v) * 2_147_483_647.0) as i32).to_le_bytes()),
        }
    }
}

/// One stream descriptor and its DMA progress.
#[derive(Clone, Debug, Default)]
struct Stream {
    ctl: u32,
    sts: u8,
    lpib: u32,
    cbl: u32,
    lvi: u16,
    fmt: u16,
    bdpl: u32,
    bdpu: u32,
    /// The buffer descriptor being worked on and the offset in it.
    entry: u16,
    entry_offset: u32,
    /// When RUN was set and how many frames have moved since.
    started_ns: u64,
    frames_done: u64,
    /// Stopped by a descriptor error until RUN is cleared.
    halted: bool,
    /// Bytes of an output frame split across descriptors.
    partial: Vec<u8>,
}

impl Stream {
    fn running(&self) -> bool {
        self.ctl & SD_CTL_RUN != 0 && self.ctl & SD_CTL_SRST == 0 && !self.halted
    }

    fn tag(&self) -> u8 {
        ((self.ctl >> 20) & 0xF) as u8
    }

    fn format(&self) -> StreamFormat {
        StreamFormat::decode(self.fmt)
    }

    fn frames_at(&self, now_ns: u64) -> u64 {
        let elapsed = now_ns.saturating_sub(self.started_ns);
        (u128::from(elapsed) * u128::from(self.format().rate_hz) / 1_000_000_000) as u64
    }

    fn frames_due(&self, now_ns: u64) -> u64 {
        if !self.running() {
            return 0;
        }
        self.frames_at(now_ns).saturating_sub(self.frames_done)
    }

    /// Time the next step of frames is due.
    fn next_step_ns(&self) -> Option<u64> {
        if !self.running() {
            return None;
        }
        let rate = u64::from(self.format().rate_hz.max(1));
        let step = (rate * DMA_STEP_NS / 1_000_000_000).max(1);
        let target = self.frames_done.saturating_add(step);
        let ns = (u128::from(target) * 1_000_000_000).div_ceil(u128::from(rate));
        Some(
            self.started_ns
                .saturating_add(ns.min(u128::from(u64::MAX)) as u64),
        )
    }

    fn interrupt_status(&self) -> bool {
        (self.sts & SD_STS_BCIS != 0 && self.ctl & SD_CTL_IOCE != 0)
            || (self.sts & SD_STS_FIFOE != 0 && self.ctl & SD_CTL_FEIE != 0)
            || (self.sts & SD_STS_DESE != 0 && self.ctl & SD_CTL_DEIE != 0)
    }

    fn bdl_base(&self) -> u64 {
        u64::from(self.bdpu) << 32 | u64::from(self.bdpl & !0x7F)
    }

    /// Registers back to their reset values (the stream number and SRST stay as written).
    fn reset(&mut self) {
        let ctl = self.ctl & (SD_CTL_SRST | 0xF0_0000);
        *self = Stream {
            ctl,
            ..Stream::default()
        };
    }
}

/// One buffer descriptor.
#[derive(Clone, Copy, Debug)]
struct BufferDescriptor {
    address: u64,
    length: u32,
    ioc: bool,
}

pub struct Hda {
    config: ConfigSpace,
    codec: Codec,
    backend: Box<dyn AudioBackend>,
    gctl: u32,
    wakeen: u16,
    statests: u16,
    intctl: u32,
    ssync: u32,
    corb_base: u64,
    corb_wp: u8,
    corb_rp: u8,
    corb_rp_reset: bool,
    corb_ctl: u8,
    corb_sts: u8,
    corb_size: u8,
    rirb_base: u64,
    rirb_wp: u8,
    rintcnt: u16,
    rirb_ctl: u8,
    rirb_sts: u8,
    rirb_size: u8,
    /// Responses written since the last RIRB interrupt.
    rirb_count: u16,
    icoi: u32,
    irii: u32,
    icis: u16,
    dpl_base: u64,
    streams: [Stream; STREAM_COUNT],
    now_ns: u64,
    /// Interrupt condition as of the last check, and an MSI owed for a rising edge.
    irq_was: bool,
    msi_due: bool,
    /// Scratch buffers for one DMA step.
    frames: Vec<StereoFrame>,
    bytes: Vec<u8>,
}

impl Hda {
    pub fn new(backend: Box<dyn AudioBackend>) -> Hda {
        let mut config = ConfigSpace::new(VENDOR_ID, DEVICE_ID, 0x04_03_00, 0x01, 0x00);
        config.set_bar(
            0,
            BarKind::Memory32 {
                prefetchable: false,
            },
            MMIO_SIZE,
        );
        config.set_interrupt_pin(1);
        config.set_subsystem(0xA3A0, 0x0002);
        config.add_msi(true);
        let mut hda = Hda {
            config,
            codec: Codec::new(),
            backend,
            gctl: 0,
            wakeen: 0,
            statests: 0,
            intctl: 0,
            ssync: 0,
            corb_base: 0,
            corb_wp: 0,
            corb_rp: 0,
            corb_rp_reset: false,
            corb_ctl: 0,
            corb_sts: 0,
            corb_size: RING_SIZE_RESET,
            rirb_base: 0,
            rirb_wp: 0,
            rintcnt: 0,
            rirb_ctl: 0,
            rirb_sts: 0,
            rirb_size: RING_SIZE_RESET,
            rirb_count: 0,
            icoi: 0,
            irii: 0,
            icis: 0,
            dpl_base: 0,
            streams: Default::default(),
            now_ns: 0,
            irq_was: false,
            msi_due: false,
            frames: Vec::new(),
            bytes: Vec::new(),
        };
        hda.controller_reset();
        hda
    }

    /// The codec's state (tests and diagnostics).
    pub fn codec(&self) -> &Codec {
        &self.codec
    }

    /// CRST# asserted: everything but the PCI side back to reset values.
    fn controller_reset(&mut self) {
        self.wakeen = 0;
        self.statests = 0;
        self.intctl = 0;
        self.ssync = 0;
        self.corb_base = 0;
        self.corb_wp = 0;
        self.corb_rp = 0;
        self.corb_rp_reset = false;
        self.corb_ctl = 0;
        self.corb_sts = 0;
        self.corb_size = RING_SIZE_RESET;
        self.rirb_base = 0;
        self.rirb_wp = 0;
        self.rintcnt = 0;
        self.rirb_ctl = 0;
        self.rirb_sts = 0;
        self.rirb_size = RING_SIZE_RESET;
        self.rirb_count = 0;
        self.icoi = 0;
        self.irii = 0;
        self.icis = 0;
        self.dpl_base = 0;
        self.streams = Default::default();
        self.codec = Codec::new();
    }

    fn ring_entries(size: u8) -> u16 {
        match size & 3 {
            0 => 2,
            1 => 16,
            _ => 256,
        }
    }

    fn ring_mask(size: u8) -> u8 {
        (Self::ring_entries(size) - 1) as u8
    }

    fn corb_running(&self) -> bool {
        self.corb_ctl & CORBCTL_RUN != 0 && self.rirb_ctl & RIRBCTL_DMAEN != 0
    }

    fn corb_pending(&self) -> bool {
        self.corb_running() && self.corb_rp != self.corb_wp & Self::ring_mask(self.corb_size)
    }

    fn interrupt_status(&self) -> u32 {
        let mut sts = 0;
        for (i, s) in self.streams.iter().enumerate() {
            if s.interrupt_status() {
                sts |= 1 << i;
            }
        }
        let controller = (self.rirb_sts & RIRBSTS_RINTFL != 0
            && self.rirb_ctl & RIRBCTL_RINTCTL != 0)
            || (self.rirb_sts & RIRBSTS_OIS != 0 && self.rirb_ctl & RIRBCTL_OIC != 0)
            || (self.corb_sts & CORBSTS_CMEI != 0 && self.corb_ctl & CORBCTL_CMEIE != 0);
        if controller {
            sts |= INTSTS_CIS;
        }
        if sts != 0 {
            sts |= INTSTS_GIS;
        }
        sts
    }

    fn interrupt_asserted(&self) -> bool {
        let sts = self.interrupt_status();
        self.intctl & INTCTL_GIE != 0
            && ((sts & INTSTS_CIS != 0 && self.intctl & INTCTL_CIE != 0)
                || sts & self.intctl & 0x3FFF_FFFF != 0)
    }

    /// Latches an MSI on a rising edge of the interrupt condition.
    fn refresh_irq(&mut self) {
        let now = self.interrupt_asserted();
        if now && !self.irq_was {
            self.msi_due = true;
        }
        self.irq_was = now;
    }

    fn wall_clock(&self) -> u32 {
        // 24 MHz.
        (u128::from(self.now_ns) * 24 / 1000) as u32
    }

    // --- register file ---

    /// The dword at `offset` (4-byte aligned).
    fn read_dword(&self, offset: u32) -> u32 {
        if offset >= ALIAS_BASE {
            return match offset - ALIAS_BASE {
                WALCLK => self.wall_clock(),
                o if o >= STREAM_BASE => self.stream_dword((o - STREAM_BASE) / 0x20, 4),
                _ => 0,
            };
        }
        match offset {
            GCAP => GCAP_VALUE | 0x0100 << 16, // VMIN 0, VMAJ 1
            0x04 => 0x3C | 0x1D << 16,         // OUTPAY, INPAY
            GCTL => self.gctl,
            WAKEEN => u32::from(self.wakeen) | u32::from(self.statests) << 16,
            GSTS => 0,
            0x18 => 0x30 | 0x10 << 16, // OUTSTRMPAY, INSTRMPAY (in words)
            INTCTL => self.intctl,
            INTSTS => self.interrupt_status(),
            WALCLK => self.wall_clock(),
            SSYNC | SSYNC_OLD => self.ssync,
            CORBLBASE => self.corb_base as u32,
            CORBUBASE => (self.corb_base >> 32) as u32,
            CORBWP => {
                let rp =
                    u16::from(self.corb_rp) | if self.corb_rp_reset { CORBRP_RESET } else { 0 };
                u32::from(self.corb_wp) | u32::from(rp) << 16
            }
            CORBCTL => {
                u32::from(self.corb_ctl)
                    | u32::from(self.corb_sts) << 8
                    | u32::from(self.corb_size) << 16
            }
            RIRBLBASE => self.rirb_base as u32,
            RIRBUBASE => (self.rirb_base >> 32) as u32,
            RIRBWP => u32::from(self.rirb_wp) | u32::from(self.rintcnt) << 16,
            RIRBCTL => {
                u32::from(self.rirb_ctl)
                    | u32::from(self.rirb_sts) << 8
                    | u32::from(self.rirb_size) << 16
            }
            ICOI => self.icoi,
            IRII => self.irii,
            ICIS => u32::from(self.icis),
            DPLBASE => self.dpl_base as u32,
            DPUBASE => (self.dpl_base >> 32) as u32,
            o if o >= STREAM_BASE => {
                let index = (o - STREAM_BASE) / STREAM_STRIDE;
                self.stream_dword(index, (o - STREAM_BASE) % STREAM_STRIDE)
            }
            _ => 0,
        }
    }

    fn stream_dword(&self, index: u32, reg: u32) -> u32 {
        let Some(s) = self.streams.get(index as usize) else {
            return 0;
        };
        match reg {
            0x00 => s.ctl & 0xFF_FFFF | u32::from(s.sts | SD_STS_FIFORDY) << 24,
            0x04 => s.lpib,
            0x08 => s.cbl,
            0x0C => u32::from(s.lvi),
            0x10 => u32::from(SD_FIFO_SIZE) | u32::from(s.fmt) << 16,
            0x18 => s.bdpl,
            0x1C => s.bdpu,
            _ => 0,
        }
    }

    /// A write of the `mask`ed bits of `value` to the dword at `offset`.
    fn write_dword(&mut self, offset: u32, mask: u32, value: u32) {
        let merge = |old: u32| old & !mask | value & mask;
        // Write-1-to-clear bits: those written as one within the mask.
        let w1c = value & mask;
        match offset {
            GCTL => {
                let was = self.gctl;
                self.gctl = merge(self.gctl) & 0x103;
                if self.gctl & GCTL_CRST == 0 {
                    self.controller_reset();
                } else if was & GCTL_CRST == 0 {
                    // Leaving reset: the codec on SDATA_IN 0 announces itself.
                    self.statests |= 1 << CODEC_ADDRESS;
                }
            }
            WAKEEN => {
                self.wakeen = merge(u32::from(self.wakeen)) as u16 & 0x7FFF;
                self.statests &= !((w1c >> 16) as u16);
            }
            INTCTL => self.intctl = merge(self.intctl),
            SSYNC | SSYNC_OLD => self.ssync = merge(self.ssync) & 0x3FFF_FFFF,
            CORBLBASE => {
                self.corb_base =
                    self.corb_base & !0xFFFF_FFFF | u64::from(merge(self.corb_base as u32) & !0x7F)
            }
            CORBUBASE => {
                self.corb_base = self.corb_base & 0xFFFF_FFFF
                    | u64::from(merge((self.corb_base >> 32) as u32)) << 32
            }
            CORBWP => {
                if mask & 0xFF != 0 {
                    self.corb_wp = value as u8;
                }
                if mask & 0xFFFF_0000 != 0 {
                    // CORBRP: only the reset bit is writable; reading it back as one
                    // tells the driver the pointer is cleared.
                    let reset = (value >> 16) as u16 & CORBRP_RESET != 0 && mask & 0x8000_0000 != 0;
                    if reset {
                        self.corb_rp = 0;
                    }
                    if mask & 0x8000_0000 != 0 {
                        self.corb_rp_reset = reset;
                    }
                }
            }
            CORBCTL => {
                if mask & 0xFF != 0 {
                    self.corb_ctl = value as u8 & 0x3;
                }
                self.corb_sts &= !((w1c >> 8) as u8);
                if mask & 0xFF_0000 != 0 {
                    self.corb_size = self.corb_size & !3 | (value >> 16) as u8 & 3;
                }
            }
            RIRBLBASE => {
                self.rirb_base =
                    self.rirb_base & !0xFFFF_FFFF | u64::from(merge(self.rirb_base as u32) & !0x7F)
            }
            RIRBUBASE => {
                self.rirb_base = self.rirb_base & 0xFFFF_FFFF
                    | u64::from(merge((self.rirb_base >> 32) as u32)) << 32
            }
            RIRBWP => {
                if mask & 0xFFFF != 0 && value as u16 & RIRBWP_RESET != 0 {
                    self.rirb_wp = 0;
                }
                if mask & 0xFFFF_0000 != 0 {
                    self.rintcnt = (merge(u32::from(self.rintcnt) << 16) >> 16) as u16 & 0xFF;
                }
            }
            RIRBCTL => {
                if mask & 0xFF != 0 {
                    self.rirb_ctl = value as u8 & 0x7;
                }
                self.rirb_sts &= !((w1c >> 8) as u8 & (RIRBSTS_RINTFL | RIRBSTS_OIS));
                if mask & 0xFF_0000 != 0 {
                    self.rirb_size = self.rirb_size & !3 | (value >> 16) as u8 & 3;
                }
            }
            ICOI => self.icoi = merge(self.icoi),
            ICIS => {
                let written = value & mask;
                if written & u32::from(ICIS_IRV) != 0 {
                    self.icis &= !ICIS_IRV;
                }
                if written & u32::from(ICIS_ICB) != 0 && self.icis & ICIS_ICB == 0 {
                    // Immediate command: answered at once, no DMA involved.
                    if let Some(response) = self.codec_command(self.icoi) {
                        self.irii = response;
                        self.icis |= ICIS_IRV;
                    }
                }
            }
            DPLBASE => {
                self.dpl_base =
                    self.dpl_base & !0xFFFF_FFFF | u64::from(merge(self.dpl_base as u32) & !0x7E)
            }
            DPUBASE => {
                self.dpl_base = self.dpl_base & 0xFFFF_FFFF
                    | u64::from(merge((self.dpl_base >> 32) as u32)) << 32
            }
            o if (STREAM_BASE..STREAM_BASE + STREAM_STRIDE * STREAM_COUNT as u32).contains(&o) => {
                let index = ((o - STREAM_BASE) / STREAM_STRIDE) as usize;
                self.write_stream(index, (o - STREAM_BASE) % STREAM_STRIDE, mask, value);
            }
            _ => {}
        }
    }

    fn write_stream(&mut self, index: usize, reg: u32, mask: u32, value: u32) {
        let now = self.now_ns;
        let Some(s) = self.streams.get_mut(index) else {
            return;
        };
        let merge = |old: u32| old & !mask | value & mask;
        match reg {
            0x00 => {
                if mask & 0xFF_FFFF != 0 {
                    let was = s.ctl;
                    let ctl = merge(s.ctl) & 0xFF_001F;
                    if ctl & SD_CTL_SRST != 0 {
                        s.ctl = ctl;
                        s.reset();
                    } else {
                        s.ctl = ctl;
                        if ctl & SD_CTL_RUN != 0 && was & SD_CTL_RUN == 0 {
                            tracing::debug!(
                                index,
                                tag = s.tag(),
                                fmt = s.fmt,
                                cbl = s.cbl,
                                lvi = s.lvi,
                                "HDA stream starts"
                            );
                            s.started_ns = now;
                            s.frames_done = 0;
                            s.halted = false;
                        }
                    }
                }
                let clear =
                    ((value & mask) >> 24) as u8 & (SD_STS_BCIS | SD_STS_FIFOE | SD_STS_DESE);
                s.sts &= !clear;
            }
            // LPIB is read-only.
            0x08 => s.cbl = merge(s.cbl),
            0x0C => s.lvi = (merge(u32::from(s.lvi)) & 0xFF) as u16,
            0x10 => s.fmt = (merge(u32::from(s.fmt) << 16) >> 16) as u16 & 0x7F7F,
            0x18 => s.bdpl = merge(s.bdpl) & !0x7F,
            0x1C => s.bdpu = merge(s.bdpu),
            _ => {}
        }
    }

    fn access_read(&self, offset: u64, size: u8) -> u64 {
        let mut out = 0u64;
        for i in 0..u64::from(size.clamp(1, 8)) {
            let byte_offset = offset + i;
            let dword = self.read_dword((byte_offset & !3) as u32);
            let byte = (dword >> ((byte_offset & 3) * 8)) & 0xFF;
            out |= u64::from(byte) << (i * 8);
        }
        out
    }

    fn access_write(&mut self, offset: u64, size: u8, value: u64) {
        // Split into dword-aligned pieces, each with its byte-lane mask.
        let size = u64::from(size.clamp(1, 8));
        let mut i = 0;
        while i < size {
            let byte_offset = offset + i;
            let aligned = byte_offset & !3;
            let lane = byte_offset & 3;
            let count = (4 - lane).min(size - i);
            let lane_mask = if count == 4 {
                u32::MAX
            } else {
                ((1u32 << (count * 8)) - 1) << (lane * 8)
            };
            let bits = ((value >> (i * 8)) as u32) << (lane * 8);
            if aligned < MMIO_SIZE {
                self.write_dword(aligned as u32, lane_mask, bits);
            }
            i += count;
        }
        self.refresh_irq();
    }

    // --- codec commands ---

    /// One command for the link; the response, if a codec answers.
    fn codec_command(&mut self, command: u32) -> Option<u32> {
        if command >> 28 != CODEC_ADDRESS {
            return None;
        }
        let response = self.codec.command(command);
        tracing::trace!("HDA codec command {command:08x} -> {response:08x}");
        Some(response)
    }

    /// Runs the CORB's new commands and writes their responses to the RIRB.
    fn process_corb(&mut self, ram: &mut dyn GuestMemory) {
        let mask = Self::ring_mask(self.corb_size);
        let rirb_mask = Self::ring_mask(self.rirb_size);
        let mut written = 0u32;
        // At most one ring's worth per call.
        for _ in 0..Self::ring_entries(self.corb_size) {
            if !self.corb_pending() {
                break;
            }
            let rp = self.corb_rp.wrapping_add(1) & mask;
            let mut word = [0u8; 4];
            if ram
                .read(self.corb_base.wrapping_add(u64::from(rp) * 4), &mut word)
                .is_err()
            {
                // Unreadable CORB: memory error, stop the ring.
                self.corb_sts |= CORBSTS_CMEI;
                self.corb_ctl &= !CORBCTL_RUN;
                break;
            }
            self.corb_rp = rp;
            let command = u32::from_le_bytes(word);
            let Some(response) = self.codec_command(command) else {
                continue;
            };
            let wp = self.rirb_wp.wrapping_add(1) & rirb_mask;
            let mut entry = [0u8; 8];
            entry[..4].copy_from_slice(&response.to_le_bytes());
            entry[4..].copy_from_slice(&CODEC_ADDRESS.to_le_bytes());
            if ram
                .write(self.rirb_base.wrapping_add(u64::from(wp) * 8), &entry)
                .is_err()
            {
                self.rirb_sts |= RIRBSTS_OIS;
                continue;
            }
            self.rirb_wp = wp;
            written += 1;
            self.rirb_count += 1;
            let threshold = if self.rintcnt == 0 { 256 } else { self.rintcnt };
            if self.rirb_count >= threshold {
                self.rirb_sts |= RIRBSTS_RINTFL;
                self.rirb_count = 0;
            }
        }
        // The link went idle with responses below the count: interrupt for them too.
        if written > 0 && self.rirb_count > 0 && !self.corb_pending() {
            self.rirb_sts |= RIRBSTS_RINTFL;
            self.rirb_count = 0;
        }
    }

    // --- streams ---

    fn read_descriptor(ram: &mut dyn GuestMemory, s: &Stream) -> Option<BufferDescriptor> {
        let mut raw = [0u8; 16];
        ram.read(s.bdl_base().wrapping_add(u64::from(s.entry) * 16), &mut raw)
            .ok()?;
        let dword = |i: usize| u32::from_le_bytes([raw[i], raw[i + 1], raw[i + 2], raw[i + 3]]);
        Some(BufferDescriptor {
            address: u64::from(dword(0)) | u64::from(dword(4)) << 32,
            length: dword(8),
            ioc: dword(12) & 1 != 0,
        })
    }

    /// Moves what stream `index` owes as of `now_ns`.
    fn run_stream(&mut self, index: usize, ram: &mut dyn GuestMemory, now_ns: u64) {
        let Some(s) = self.streams.get_mut(index) else {
            return;
        };
        let due = s.frames_due(now_ns);
        if due == 0 {
            return;
        }
        let format = s.format();
        let cap = u64::from(format.rate_hz) * MAX_CATCH_UP_NS / 1_000_000_000;
        if due > cap {
            // A long gap (the host stopped the machine): skip rather than play fast.
            s.frames_done += due - cap;
        }
        let frames = due.min(cap) as usize;
        s.frames_done += frames as u64;
        let output = index == OUTPUT_STREAM;
        let frame_bytes = format.frame_bytes();
        let mut bytes = std::mem::take(&mut self.bytes);
        bytes.clear();
        if output {
            bytes.resize(frames * frame_bytes, 0);
        } else {
            self.input_bytes(index, frames, format, &mut bytes);
        }
        let moved = self.move_bytes(index, ram, &mut bytes, output);
        if output {
            self.play_bytes(index, &bytes[..moved], format);
        }
        self.bytes = bytes;
        self.write_position(ram);
    }

    /// Walks the BDL from the current position, copying `bytes` to (input) or from
    /// (output) the guest's buffers; returns how many bytes moved.
    fn move_bytes(
        &mut self,
        index: usize,
        ram: &mut dyn GuestMemory,
        bytes: &mut [u8],
        output: bool,
    ) -> usize {
        let s = &mut self.streams[index];
        let mut done = 0usize;
        let mut empty_entries = 0u16;
        while done < bytes.len() {
            if s.entry > s.lvi || s.entry >= BDL_MAX_ENTRIES {
                s.entry = 0;
            }
            let Some(bd) = Self::read_descriptor(ram, s) else {
                s.sts |= SD_STS_DESE;
                s.halted = true;
                break;
            };
            if s.entry_offset >= bd.length {
                // An empty (or already finished) entry: on to the next, but a list of
                // nothing else stops the stream.
                empty_entries += 1;
                if empty_entries > BDL_MAX_ENTRIES {
                    s.sts |= SD_STS_DESE;
                    s.halted = true;
                    break;
                }
                s.entry = if s.entry >= s.lvi { 0 } else { s.entry + 1 };
                s.entry_offset = 0;
                continue;
            }
            empty_entries = 0;
            let take = ((bd.length - s.entry_offset) as usize)
                .min(bytes.len() - done)
                .min(DMA_CHUNK);
            let address = bd.address.wrapping_add(u64::from(s.entry_offset));
            let chunk = &mut bytes[done..done + take];
            let result = if output {
                ram.read(address, chunk)
            } else {
                ram.write(address, chunk)
            };
            if result.is_err() {
                // Buffer outside RAM: a descriptor error.
                s.sts |= SD_STS_DESE;
                s.halted = true;
                break;
            }
            done += take;
            s.entry_offset += take as u32;
            s.lpib = match s.cbl {
                0 => 0,
                cbl => ((u64::from(s.lpib) + take as u64) % u64::from(cbl)) as u32,
            };
            if s.entry_offset >= bd.length {
                if bd.ioc {
                    s.sts |= SD_STS_BCIS;
                }
                s.entry = if s.entry >= s.lvi { 0 } else { s.entry + 1 };
                s.entry_offset = 0;
            }
        }
        done
    }

    /// Decodes output bytes to stereo frames (through the DAC's amp) and plays them.
    fn play_bytes(&mut self, index: usize, data: &[u8], format: StreamFormat) {
        let s = &mut self.streams[index];
        let routed = self.codec.dac.stream == s.tag() && s.tag() != 0;
        let gain = if routed && self.codec.output_enabled() {
            self.codec.dac_amp.factors()
        } else {
            [0.0; 2]
        };
        let frame_bytes = format.frame_bytes();
        let mut pending = std::mem::take(&mut s.partial);
        pending.extend_from_slice(data);
        let whole = pending.len() / frame_bytes * frame_bytes;
        self.frames.clear();
        for frame in pending[..whole].chunks_exact(frame_bytes) {
            let left = format.decode_sample(&frame[..format.container]);
            let right = if format.channels > 1 {
                format.decode_sample(&frame[format.container..2 * format.container])
            } else {
                left
            };
            self.frames.push([left * gain[0], right * gain[1]]);
        }
        pending.drain(..whole);
        self.streams[index].partial = pending;
        self.backend.play(format.rate_hz, &self.frames);
    }

    /// What the input jack hears for `frames` frames, through the ADC's amp, in the
    /// stream's format.
    fn input_bytes(
        &mut self,
        index: usize,
        frames: usize,
        format: StreamFormat,
        out: &mut Vec<u8>,
    ) {
        let s = &self.streams[index];
        self.frames.clear();
        self.frames.resize(frames, [0.0; 2]);
        let routed = self.codec.adc.stream == s.tag() && s.tag() != 0;
        self.backend.record(format.rate_hz, &mut self.frames);
        let gain = if routed && self.codec.input_enabled() {
            self.codec.adc_amp.factors()
        } else {
            [0.0; 2]
        };
        for frame in &self.frames {
            for channel in 0..format.channels {
                let v = if channel < 2 {
                    frame[channel] * gain[channel]
                } else {
                    0.0
                };
                format.encode_sample(v, out);
            }
        }
    }

    /// The DMA position buffer: each stream's LPIB at base + 8 × index.
    fn write_position(&mut self, ram: &mut dyn GuestMemory) {
        if self.dpl_base & u64::from(DPLBASE_ENABLE) == 0 {
            return;
        }
        let base = self.dpl_base & !0x7F;
        for (i, s) in self.streams.iter().enumerate() {
            let _ = ram.write(base.wrapping_add(i as u64 * 8), &s.lpib.to_le_bytes());
        }
    }
}

impl PciFunction for Hda {
    fn config(&self) -> &ConfigSpace {
        &self.config
    }

    fn config_mut(&mut self) -> &mut ConfigSpace {
        &mut self.config
    }
}

impl PciDevice for Hda {
    fn bar_read(&mut self, bar: usize, offset: u64, size: u8) -> u64 {
        if bar != 0 || offset >= MMIO_SIZE {
            return 0;
        }
        self.access_read(offset, size)
    }

    fn bar_write(&mut self, bar: usize, offset: u64, size: u8, value: u64) {
        if bar == 0 && offset < MMIO_SIZE {
            self.access_write(offset, size, value);
        }
    }

    fn irq_level(&self) -> bool {
        self.interrupt_asserted()
    }

    fn take_msi(&mut self) -> bool {
        std::mem::take(&mut self.msi_due)
    }

    fn dma_pending(&self) -> bool {
        self.corb_pending()
            || self.streams.iter().any(|s| {
                s.next_step_ns().is_some_and(|t| t <= self.now_ns) && s.frames_due(self.now_ns) > 0
            })
    }

    fn run_dma(&mut self, ram: &mut dyn GuestMemory, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        self.process_corb(ram);
        for index in 0..STREAM_COUNT {
            self.run_stream(index, ram, self.now_ns);
        }
        self.refresh_irq();
    }

    fn advance(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        self.streams.iter().filter_map(Stream::next_step_ns).min()
    }

    fn reset(&mut self) {
        self.gctl = 0;
        self.controller_reset();
        self.irq_was = false;
        self.msi_due = false;
    }
}

#[cfg(test)]
#[path = "hda_tests.rs"]
mod tests;
