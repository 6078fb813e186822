//! AHCI 1.3 SATA host bus adapter (the ICH9 AHCI function's device logic): HBA and port
//! registers behind ABAR, command lists and command tables in guest memory, PRDT
//! scatter/gather, the received-FIS area, ATA disks (DMA, PIO-through-PRDT, NCQ) and ATAPI
//! CD/DVD drives. The PCI function lives in the machine crate.
//!
//! Register writes never touch guest memory: a write to PxCI only records the command, and
//! the machine calls [`Ahci::process`] with guest memory afterwards (see
//! [`Ahci::command_pending`]). Commands complete synchronously inside `process`.
//!
//! Guest-controlled tables are hostile: every guest address goes through
//! [`GuestMemory`], PRDT length is bounded by its 16-bit entry count, data moves in 64 KiB
//! chunks, and any failure ends the command with the port's error path (PxIS.TFES, TFD
//! ERR/ABRT), never a host panic.

#[cfg(test)]
mod tests;

use crate::BlockDevice;
use crate::ide::ata::{self, IdentifyParams};
use crate::ide::atapi::{self, Disc, Sense};
use crate::ide::busmaster::{Scatter, Segment};
use crate::ide::channel::AtapiState;
use crate::ide::{CdStatus, DmaError, GuestMemory, IdeDrive, MediaError};

/// Size of the register block behind ABAR (BAR5).
pub const ABAR_SIZE: u64 = 0x1000;
/// Ports the ICH9 AHCI function implements.
pub const ICH9_PORTS: usize = 6;

// HBA registers (public for drivers and tests that program the HBA).
pub const CAP: u64 = 0x00;
pub const GHC: u64 = 0x04;
pub const IS: u64 = 0x08;
pub const PI: u64 = 0x0C;
pub const VS: u64 = 0x10;
pub const CAP2: u64 = 0x24;
pub const BOHC: u64 = 0x28;
pub const PORT_BASE: u64 = 0x100;
pub const PORT_STRIDE: u64 = 0x80;

pub const GHC_HR: u32 = 1 << 0;
pub const GHC_IE: u32 = 1 << 1;
pub const GHC_AE: u32 = 1 << 31;

pub const BOHC_BOS: u32 = 1 << 0;
pub const BOHC_OOS: u32 = 1 << 1;
pub const BOHC_SOOE: u32 = 1 << 2;
pub const BOHC_OOC: u32 = 1 << 3;

// Port registers (offsets inside the port's 0x80 bytes).
pub const P_CLB: u64 = 0x00;
pub const P_CLBU: u64 = 0x04;
pub const P_FB: u64 = 0x08;
pub const P_FBU: u64 = 0x0C;
pub const P_IS: u64 = 0x10;
pub const P_IE: u64 = 0x14;
pub const P_CMD: u64 = 0x18;
pub const P_TFD: u64 = 0x20;
pub const P_SIG: u64 = 0x24;
pub const P_SSTS: u64 = 0x28;
pub const P_SCTL: u64 = 0x2C;
pub const P_SERR: u64 = 0x30;
pub const P_SACT: u64 = 0x34;
pub const P_CI: u64 = 0x38;
pub const P_SNTF: u64 = 0x3C;

/// PxIS bits.
pub const PXIS_DHRS: u32 = 1 << 0;
pub const PXIS_PSS: u32 = 1 << 1;
pub const PXIS_SDBS: u32 = 1 << 3;
pub const PXIS_DPS: u32 = 1 << 5;
pub const PXIS_TFES: u32 = 1 << 30;
const PXIS_VALID: u32 = 0xFDC0_00FF;

pub const CMD_ST: u32 = 1 << 0;
pub const CMD_SUD: u32 = 1 << 1;
pub const CMD_POD: u32 = 1 << 2;
pub const CMD_CLO: u32 = 1 << 3;
pub const CMD_FRE: u32 = 1 << 4;
pub const CMD_FR: u32 = 1 << 14;
pub const CMD_CR: u32 = 1 << 15;
pub const CMD_ATAPI: u32 = 1 << 24;
/// Bits software owns in PxCMD (ST, CLO, FRE, ATAPI, DLAE, ALPE, ASP, ICC).
const CMD_WRITABLE: u32 = CMD_ST | CMD_CLO | CMD_FRE | CMD_ATAPI | (7 << 25) | (0xF << 28);

const ST_BSY: u8 = 0x80;
const ST_DRDY: u8 = 0x40;
const ST_DSC: u8 = 0x10;
const ST_DRQ: u8 = 0x08;
const ST_ERR: u8 = 0x01;
const ERR_ABRT: u8 = 0x04;
const ERR_IDNF: u8 = 0x10;
const ERR_UNC: u8 = 0x40;

const SIG_DISK: u32 = 0x0000_0101;
const SIG_ATAPI: u32 = 0xEB14_0101;
/// Link up, Gen2 speed, interface active.
const SSTS_UP: u32 = 0x123;

/// Received-FIS area offsets.
const RFIS_PIO_SETUP: u64 = 0x20;
const RFIS_D2H: u64 = 0x40;
const RFIS_SDB: u64 = 0x58;

/// SET FEATURES SATA feature number of asynchronous notification.
const SATA_FEATURE_AN: u8 = 0x05;

/// Bytes moved per step (bounds the bounce buffer whatever the guest asks for).
const CHUNK_BYTES: usize = 64 * 1024;

enum Kind {
    Disk,
    Cdrom,
}

struct Drive {
    kind: Kind,
    media: Option<Box<dyn BlockDevice>>,
    atapi: AtapiState,
    write_cache: bool,
    transfer_mode: u8,
    /// ATAPI: the host enabled asynchronous notification (SET FEATURES 10h/05h).
    an_enabled: bool,
    /// The queued command that failed, for the NCQ Command Error log (page 10h) until
    /// software reads it or resets the device.
    ncq_error: Option<NcqError>,
}

/// What the NCQ Command Error log reports about a failed queued command.
#[derive(Clone, Copy)]
struct NcqError {
    tag: u8,
    ending: Ending,
}

#[derive(Default)]
struct Port {
    drive: Option<Drive>,
    clb: u64,
    fb: u64,
    is: u32,
    ie: u32,
    cmd: u32,
    tfd: u32,
    sig: u32,
    ssts: u32,
    sctl: u32,
    serr: u32,
    sact: u32,
    ci: u32,
    sntf: u32,
    /// A command failed: nothing more runs until software clears PxCMD.ST.
    stalled: bool,
    /// The device's reset signature FIS waits for PxCMD.FRE.
    signature_pending: bool,
    /// The ATAPI device has a media event to announce with a Set Device Bits FIS (N bit).
    notify_pending: bool,
}

/// Task-file values a command ends with (for TFD and the D2H FIS).
#[derive(Clone, Copy, Default)]
struct Ending {
    status: u8,
    error: u8,
    lba: u64,
    count: u16,
    /// Device register (echoes the command's).
    device: u8,
    /// Bytes moved (PRDBC).
    bytes: u32,
    /// Data went through the PIO protocol (PIO Setup FIS).
    pio: bool,
}

impl Ending {
    fn ok() -> Ending {
        Ending {
            status: ST_DRDY | ST_DSC,
            ..Ending::default()
        }
    }
    fn error(error: u8) -> Ending {
        Ending {
            status: ST_DRDY | ST_ERR,
            error,
            ..Ending::default()
        }
    }
    fn failed(&self) -> bool {
        self.status & ST_ERR != 0
    }
}

/// The host bus adapter: global registers and its ports.
pub struct Ahci {
    ports: Vec<Port>,
    ghc: u32,
    is: u32,
    bohc: u32,
    /// An interrupt event since the last [`Ahci::take_msi`] (for MSI delivery).
    msi_event: bool,
}

impl Ahci {
    /// An HBA with `ports` ports (1–32), all empty.
    pub fn new(ports: usize) -> Ahci {
        let n = ports.clamp(1, 32);
        let mut hba = Ahci {
            ports: (0..n).map(|_| Port::default()).collect(),
            ghc: GHC_AE,
            is: 0,
            bohc: 0,
            msi_event: false,
        };
        hba.reset();
        hba
    }

    pub fn port_count(&self) -> usize {
        self.ports.len()
    }

    /// Plugs a disk or CD drive into `port` (replacing what was there) and brings the link up.
    pub fn attach(&mut self, port: usize, drive: IdeDrive) {
        let Some(p) = self.ports.get_mut(port) else {
            tracing::warn!(port, "AHCI: no such port");
            return;
        };
        let (kind, media) = match drive {
            IdeDrive::Disk(d) => {
                if d.sector_size() != 512 {
                    tracing::warn!("AHCI disk attached with a sector size other than 512");
                }
                (Kind::Disk, Some(d))
            }
            IdeDrive::Cdrom(d) => (Kind::Cdrom, d),
        };
        p.drive = Some(Drive {
            kind,
            media,
            atapi: AtapiState::default(),
            write_cache: true,
            transfer_mode: 0x45,
            an_enabled: false,
            ncq_error: None,
        });
        p.link_reset();
    }

    /// Flushes every attached medium (emulator shutdown).
    pub fn flush_all(&mut self) -> Result<(), crate::StorageError> {
        for media in self
            .ports
            .iter_mut()
            .filter_map(|p| p.drive.as_mut()?.media.as_mut())
        {
            media.flush()?;
        }
        Ok(())
    }

    /// The CD drive on `port` as the shared ATAPI model sees it.
    fn cd_disc(&mut self, port: usize) -> Result<Disc<'_>, MediaError> {
        let d = self
            .ports
            .get_mut(port)
            .and_then(|p| p.drive.as_mut())
            .filter(|d| matches!(d.kind, Kind::Cdrom))
            .ok_or(MediaError::NoCdDrive)?;
        Ok(Disc {
            media: &mut d.media,
            state: &mut d.atapi,
        })
    }

    /// Inserts a disc into the CD drive on `port` (host action); returns the disc it
    /// replaced. Same model as on IDE (see `ide::atapi`).
    pub fn insert_media(
        &mut self,
        port: usize,
        media: Box<dyn BlockDevice>,
    ) -> Result<Option<Box<dyn BlockDevice>>, MediaError> {
        let old = self.cd_disc(port)?.insert(media);
        self.media_event_queued(port);
        Ok(old)
    }

    /// Host eject from the CD drive on `port`; a tray the guest locked stays shut (the
    /// guest gets an eject request) unless `force`.
    pub fn eject_media(
        &mut self,
        port: usize,
        force: bool,
    ) -> Result<Option<Box<dyn BlockDevice>>, MediaError> {
        let result = self.cd_disc(port)?.eject(force);
        // Also when refused: the locked drive queued an eject request for the guest.
        self.media_event_queued(port);
        result
    }

    /// A host media change queued a media event: with asynchronous notification enabled,
    /// the drive announces it (the FIS goes out in [`Ahci::process`]; see
    /// [`Ahci::command_pending`]).
    fn media_event_queued(&mut self, port: usize) {
        if let Some(p) = self.ports.get_mut(port)
            && let Some(d) = p.drive.as_ref()
            && d.an_enabled
            && d.atapi.media_event.is_some()
        {
            p.notify_pending = true;
        }
    }

    /// Tray and disc state of the CD drive on `port` (None: no CD drive there).
    pub fn cd_status(&self, port: usize) -> Option<CdStatus> {
        let d = self
            .ports
            .get(port)?
            .drive
            .as_ref()
            .filter(|d| matches!(d.kind, Kind::Cdrom))?;
        Some(d.atapi.status(&d.media))
    }

    /// HBA reset (power-on, PCI reset or GHC.HR): registers to their defaults, every
    /// port's link reset. The command list and FIS base addresses survive, as the spec says.
    pub fn reset(&mut self) {
        self.ghc = GHC_AE;
        self.is = 0;
        self.bohc = 0;
        self.msi_event = false;
        for p in &mut self.ports {
            let (clb, fb, mut drive) = (p.clb, p.fb, p.drive.take());
            // The device's hard reset ends the guest's PREVENT MEDIUM REMOVAL and its
            // SET FEATURES choices.
            if let Some(d) = drive.as_mut() {
                d.atapi.locked = false;
                d.an_enabled = false;
                d.ncq_error = None;
            }
            *p = Port {
                clb,
                fb,
                drive,
                ..Port::default()
            };
            p.link_reset();
        }
    }

    fn cap(&self) -> u32 {
        // S64A, SNCQ, SSNTF, SCLO, ISS = Gen2, SAM (AHCI only), NCS = 32 slots, NP.
        (1 << 31)
            | (1 << 30)
            | (1 << 29)
            | (1 << 24)
            | (2 << 20)
            | (1 << 18)
            | (31 << 8)
            | (self.ports.len() as u32 - 1)
    }

    fn pi(&self) -> u32 {
        if self.ports.len() == 32 {
            u32::MAX
        } else {
            (1u32 << self.ports.len()) - 1
        }
    }

    fn read_dword(&self, offset: u64) -> u32 {
        match offset {
            CAP => self.cap(),
            GHC => self.ghc,
            IS => self.is,
            PI => self.pi(),
            VS => 0x0001_0300,
            CAP2 => 1, // BOH: BIOS/OS handoff register present
            BOHC => self.bohc,
            o if o >= PORT_BASE => {
                let index = ((o - PORT_BASE) / PORT_STRIDE) as usize;
                let Some(p) = self.ports.get(index) else {
                    return 0;
                };
                match (o - PORT_BASE) % PORT_STRIDE {
                    P_CLB => p.clb as u32,
                    P_CLBU => (p.clb >> 32) as u32,
                    P_FB => p.fb as u32,
                    P_FBU => (p.fb >> 32) as u32,
                    P_IS => p.is,
                    P_IE => p.ie,
                    P_CMD => p.cmd_value(),
                    P_TFD => p.tfd,
                    P_SIG => p.sig,
                    P_SSTS => p.ssts,
                    P_SCTL => p.sctl,
                    P_SERR => p.serr,
                    P_SACT => p.sact,
                    P_CI => p.ci,
                    P_SNTF => p.sntf,
                    _ => 0,
                }
            }
            _ => 0,
        }
    }

    /// Register read at `offset` in ABAR (any size 1–8; registers are dwords).
    pub fn mmio_read(&mut self, offset: u64, size: u8) -> u64 {
        let size = size.clamp(1, 8) as u64;
        let mut value = 0u64;
        let mut done = 0;
        while done < size {
            let at = offset.wrapping_add(done);
            let dword = self.read_dword(at & !3) as u64;
            let shift = (at & 3) * 8;
            let take = (4 - (at & 3)).min(size - done);
            let mask = if take == 4 {
                0xFFFF_FFFF
            } else {
                (1u64 << (take * 8)) - 1
            };
            value |= ((dword >> shift) & mask) << (done * 8);
            done += take;
        }
        value
    }

    /// Register write at `offset` in ABAR. Issuing commands only records them; see
    /// [`Ahci::process`].
    pub fn mmio_write(&mut self, offset: u64, size: u8, value: u64) {
        let size = size.clamp(1, 8) as u64;
        let mut done = 0;
        while done < size {
            let at = offset.wrapping_add(done);
            let shift = (at & 3) * 8;
            let take = (4 - (at & 3)).min(size - done);
            let mask = if take == 4 {
                0xFFFF_FFFF
            } else {
                (((1u64 << (take * 8)) - 1) << shift) as u32
            };
            let part = (((value >> (done * 8)) << shift) as u32) & mask;
            self.write_dword(at & !3, part, mask);
            done += take;
        }
    }

    /// Writes the `mask`ed bits of a dword register (`value` is already masked).
    fn write_dword(&mut self, offset: u64, value: u32, mask: u32) {
        let merge = |old: u32| (old & !mask) | value;
        match offset {
            GHC => {
                if value & GHC_HR != 0 {
                    self.reset(); // completes at once: HR reads back 0
                    return;
                }
                let was = self.ghc & GHC_IE;
                self.ghc = GHC_AE | (merge(self.ghc) & GHC_IE);
                if was == 0 && self.ghc & GHC_IE != 0 && self.is != 0 {
                    self.msi_event = true;
                }
            }
            IS => {
                self.is &= !value;
                self.update_is();
            }
            BOHC => {
                let v = merge(self.bohc);
                let mut bohc =
                    (v & (BOHC_OOS | BOHC_SOOE)) | (self.bohc & BOHC_OOC & !(value & BOHC_OOC));
                // No BIOS driver holds the HBA: ownership passes to the OS at once.
                if bohc & BOHC_OOS != 0 && self.bohc & BOHC_OOS == 0 {
                    bohc |= BOHC_OOC;
                }
                self.bohc = bohc & !BOHC_BOS;
            }
            o if o >= PORT_BASE => {
                let index = ((o - PORT_BASE) / PORT_STRIDE) as usize;
                let reg = (o - PORT_BASE) % PORT_STRIDE;
                if index < self.ports.len() {
                    self.port_write(index, reg, value, mask);
                }
            }
            _ => {}
        }
    }

    fn port_write(&mut self, index: usize, reg: u64, value: u32, mask: u32) {
        let p = &mut self.ports[index];
        let merge = |old: u32| (old & !mask) | value;
        match reg {
            P_CLB => p.clb = (p.clb & !0xFFFF_FFFF) | u64::from(merge(p.clb as u32) & !0x3FF),
            P_CLBU => p.clb = (p.clb & 0xFFFF_FFFF) | u64::from(merge((p.clb >> 32) as u32)) << 32,
            P_FB => p.fb = (p.fb & !0xFFFF_FFFF) | u64::from(merge(p.fb as u32) & !0xFF),
            P_FBU => p.fb = (p.fb & 0xFFFF_FFFF) | u64::from(merge((p.fb >> 32) as u32)) << 32,
            P_IS => p.is &= !value,
            P_IE => {
                p.ie = merge(p.ie) & PXIS_VALID;
                if p.is & p.ie != 0 && self.ghc & GHC_IE != 0 {
                    self.msi_event = true;
                }
            }
            P_CMD => p.write_cmd(merge(p.cmd)),
            P_SCTL => {
                let old_det = p.sctl & 0xF;
                p.sctl = merge(p.sctl) & 0xFFF;
                let det = p.sctl & 0xF;
                if det == 1 && old_det != 1 {
                    // COMRESET asserted: the link is down until it is released, and
                    // PxTFD.STS reads 7Fh meanwhile (AHCI 1.3 §10.4.2).
                    p.ssts = 0;
                    p.tfd = (p.tfd & !0xFF) | 0x7F;
                } else if det == 0 && old_det == 1 {
                    // COMRESET: a hard reset of the device, which forgets asynchronous
                    // notification (we do not offer software settings preservation).
                    if let Some(d) = p.drive.as_mut() {
                        d.an_enabled = false;
                        d.ncq_error = None;
                    }
                    p.notify_pending = false;
                    p.link_reset();
                }
            }
            P_SERR => p.serr &= !value,
            // Only a started port takes commands.
            P_SACT if p.cmd & CMD_ST != 0 => p.sact |= value,
            P_CI if p.cmd & CMD_ST != 0 => p.ci |= value,
            P_SNTF => p.sntf &= !value,
            _ => {}
        }
        self.update_is();
    }

    /// Recomputes HBA IS from the ports (a port keeps its bit while it has enabled events).
    fn update_is(&mut self) {
        for (i, p) in self.ports.iter().enumerate() {
            if p.is & p.ie != 0 {
                self.is |= 1 << i;
            }
        }
    }

    /// Some port has an issued command waiting for [`Ahci::process`] (or a FIS to post).
    pub fn command_pending(&self) -> bool {
        self.ports.iter().any(|p| {
            p.runnable() || ((p.signature_pending || p.notify_pending) && p.cmd & CMD_FRE != 0)
        })
    }

    /// Runs every issued command against `memory` and posts their FISes and interrupts.
    pub fn process(&mut self, memory: &mut dyn GuestMemory) {
        for index in 0..self.ports.len() {
            let p = &mut self.ports[index];
            if p.signature_pending && p.cmd & CMD_FRE != 0 {
                p.signature_pending = false;
                let tfd = p.tfd;
                let ending = Ending {
                    status: tfd as u8,
                    error: (tfd >> 8) as u8,
                    lba: 1,
                    count: 1,
                    ..Ending::default()
                };
                let lba = if p.sig == SIG_ATAPI { 0xEB1401 } else { 1 };
                // Its I bit is set: that is what PxIS.DHRS reports (as on QEMU's ich9-ahci).
                let fis = d2h_fis(&Ending { lba, ..ending }, true);
                if memory.write(p.fb + RFIS_D2H, &fis).is_ok() {
                    self.raise(index, PXIS_DHRS);
                }
            }
            let p = &mut self.ports[index];
            if p.notify_pending && p.cmd & CMD_FRE != 0 {
                p.notify_pending = false;
                // Set Device Bits FIS, N (notification) and I (interrupt), PM port 0; the
                // status fields repeat the current status, so PxTFD stays as it is.
                let status = p.tfd as u8;
                let fis = [0xA1, 0x80 | 0x40, status & 0x77, 0, 0, 0, 0, 0];
                if memory.write(p.fb + RFIS_SDB, &fis).is_ok() {
                    p.sntf |= 1; // PMN bit of PM port 0
                    self.raise(index, PXIS_SDBS);
                }
            }
            let mut guard = 0;
            while self.ports[index].runnable() && guard < 32 {
                guard += 1;
                let p = &mut self.ports[index];
                let slot = p.ci.trailing_zeros();
                p.cmd = (p.cmd & !(0x1F << 8)) | (slot << 8); // CCS
                let events = p.run_slot(slot, memory);
                self.raise(index, events);
            }
        }
    }

    fn raise(&mut self, port: usize, bits: u32) {
        let p = &mut self.ports[port];
        p.is |= bits;
        if bits & p.ie != 0 && self.ghc & GHC_IE != 0 {
            self.msi_event = true;
        }
        self.update_is();
    }

    /// Level of the INTx line: interrupts enabled and some port bit set in IS.
    pub fn irq_level(&self) -> bool {
        self.ghc & GHC_IE != 0 && self.is != 0
    }

    /// Whether an interrupt event happened since the last call (one MSI message each).
    pub fn take_msi(&mut self) -> bool {
        std::mem::take(&mut self.msi_event) && self.ghc & GHC_IE != 0
    }
}

impl Port {
    fn cmd_value(&self) -> u32 {
        let mut v = self.cmd | CMD_SUD | CMD_POD;
        if self.cmd & CMD_ST != 0 {
            v |= CMD_CR;
        }
        if self.cmd & CMD_FRE != 0 {
            v |= CMD_FR;
        }
        if matches!(self.drive.as_ref().map(|d| &d.kind), Some(Kind::Cdrom)) {
            v |= CMD_ATAPI;
        }
        v
    }

    fn write_cmd(&mut self, value: u32) {
        let was_started = self.cmd & CMD_ST != 0;
        if value & CMD_CLO != 0 {
            self.tfd &= !u32::from(ST_BSY | ST_DRQ); // command list override
        }
        self.cmd = (self.cmd & !CMD_WRITABLE) | (value & CMD_WRITABLE & !CMD_CLO);
        if was_started && value & CMD_ST == 0 {
            // Stopping the engine drops every outstanding command.
            self.ci = 0;
            self.sact = 0;
            self.stalled = false;
            self.cmd &= !(0x1F << 8);
        }
    }

    /// COMINIT from the device after a reset: link up and the signature in TFD/SIG; the
    /// signature FIS follows once FIS receive is on.
    fn link_reset(&mut self) {
        self.ci = 0;
        self.sact = 0;
        self.stalled = false;
        match self.drive.as_mut() {
            None => {
                self.ssts = 0;
                self.sig = 0xFFFF_FFFF;
                self.tfd = 0x7F;
                self.signature_pending = false;
            }
            Some(d) => {
                self.ssts = SSTS_UP;
                let (sig, status) = match d.kind {
                    Kind::Disk => (SIG_DISK, ST_DRDY | ST_DSC),
                    Kind::Cdrom => (SIG_ATAPI, 0),
                };
                self.sig = sig;
                self.tfd = 0x100 | u32::from(status); // error 01h: diagnostics passed
                self.signature_pending = true;
            }
        }
    }

    fn runnable(&self) -> bool {
        self.cmd & CMD_ST != 0 && !self.stalled && self.ci != 0
    }

    /// Executes command slot `slot`; returns the PxIS bits to raise.
    fn run_slot(&mut self, slot: u32, memory: &mut dyn GuestMemory) -> u32 {
        let bit = 1u32 << slot;
        let header_addr = self.clb + u64::from(slot) * 32;
        let mut header = [0u8; 16];
        if memory.read(header_addr, &mut header).is_err() {
            return self.fail(bit, Ending::error(ERR_ABRT), memory);
        }
        let dw0 = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
        let ctba =
            u64::from(u32::from_le_bytes([header[8], header[9], header[10], header[11]]) & !0x7F)
                | u64::from(u32::from_le_bytes([
                    header[12], header[13], header[14], header[15],
                ])) << 32;
        let prdtl = (dw0 >> 16) as usize;
        let mut table = [0u8; 0x50];
        if memory.read(ctba, &mut table).is_err() {
            return self.fail(bit, Ending::error(ERR_ABRT), memory);
        }
        let cfis: [u8; 20] = table[..20].try_into().unwrap_or([0; 20]);
        if cfis[0] != 0x27 {
            tracing::debug!(fis = cfis[0], "AHCI: command FIS is not a Register H2D FIS");
            return self.fail(bit, Ending::error(ERR_ABRT), memory);
        }
        if cfis[1] & 0x80 == 0 {
            return self.control_fis(bit, &cfis, memory);
        }
        let (segments, interrupt_on_prd) = match read_prdt(memory, ctba + 0x80, prdtl) {
            Ok(found) => found,
            Err(_) => return self.fail(bit, Ending::error(ERR_ABRT), memory),
        };
        let mut sg = Scatter::new(segments);
        if self.drive.is_none() {
            return self.fail(bit, Ending::error(ERR_ABRT), memory);
        }
        let command = cfis[2];
        if command == 0x60 || command == 0x61 {
            return self.run_ncq(bit, &cfis, &mut sg, memory);
        }
        if command == 0xA0 && matches!(self.drive.as_ref().map(|d| &d.kind), Some(Kind::Cdrom)) {
            self.post_fis(RFIS_PIO_SETUP, &packet_request_fis(&cfis), memory);
        }
        let Some(drive) = self.drive.as_mut() else {
            return 0;
        };
        let ending = match drive.kind {
            Kind::Disk => disk_command(drive, &cfis, &mut sg, memory),
            Kind::Cdrom => {
                let cdb: [u8; 12] = table[0x40..0x4C].try_into().unwrap_or([0; 12]);
                cdrom_command(drive, &cfis, &cdb, &mut sg, memory)
            }
        };
        let ending = Ending {
            device: cfis[7],
            ..ending
        };
        if ending.failed() {
            return self.fail(bit, ending, memory);
        }
        let _ = memory.write(header_addr + 4, &ending.bytes.to_le_bytes()); // PRDBC
        self.tfd = u32::from(ending.error) << 8 | u32::from(ending.status);
        let mut events = PXIS_DHRS;
        if ending.pio {
            let mut fis = [0u8; 20];
            fis[0] = 0x5F;
            fis[1] = 0x20 | 0x40; // device to host, interrupt
            fis[2] = ST_DRDY | ST_DSC | ST_DRQ;
            fis[7] = ending.device;
            fis[15] = ending.status; // E_Status
            fis[16..18].copy_from_slice(&(ending.bytes.min(0xFFFF) as u16).to_le_bytes());
            self.post_fis(RFIS_PIO_SETUP, &fis, memory);
            events |= PXIS_PSS;
        }
        self.post_fis(RFIS_D2H, &d2h_fis(&ending, true), memory);
        if interrupt_on_prd && ending.bytes > 0 {
            events |= PXIS_DPS;
        }
        self.ci &= !bit;
        events
    }

    /// READ/WRITE FPDMA QUEUED: data through the PRDT, completion through a Set Device
    /// Bits FIS that clears the tag in PxSACT.
    fn run_ncq(
        &mut self,
        bit: u32,
        cfis: &[u8; 20],
        sg: &mut Scatter,
        memory: &mut dyn GuestMemory,
    ) -> u32 {
        // The device accepts the command before any data moves: a Register D2H FIS with
        // BSY clear and no interrupt (I = 0), which the HBA copies to PxTFD and RFIS.
        self.ci &= !bit;
        let accepted = Ending {
            device: cfis[7],
            ..Ending::ok()
        };
        self.tfd = u32::from(accepted.status);
        self.post_fis(RFIS_D2H, &d2h_fis(&accepted, false), memory);
        let Some(drive) = self.drive.as_mut() else {
            return 0;
        };
        let write = cfis[2] == 0x61;
        let tag = cfis[12] >> 3;
        let count = match u32::from(cfis[3]) | u32::from(cfis[11]) << 8 {
            0 => 65536,
            n => n,
        };
        let lba = lba48(cfis);
        let ending = match (&drive.kind, drive.media.as_mut()) {
            (Kind::Disk, Some(media)) => {
                transfer_sectors(media.as_mut(), lba, count, write, sg, memory)
            }
            _ => Ending::error(ERR_ABRT),
        };
        if ending.failed() {
            return self.fail_queued(tag, Ending { lba, ..ending }, memory);
        }
        let done = 1u32 << (tag & 31);
        self.sact &= !done;
        self.tfd = u32::from(ST_DRDY | ST_DSC);
        let mut fis = [0u8; 8];
        fis[0] = 0xA1;
        fis[1] = 0x40; // interrupt
        fis[2] = ST_DRDY | ST_DSC; // status hi/lo nibbles: no error
        fis[4..8].copy_from_slice(&done.to_le_bytes());
        self.post_fis(RFIS_SDB, &fis, memory);
        PXIS_SDBS
    }

    /// A queued command failed (SATA NCQ error protocol): a Set Device Bits FIS with ERR,
    /// the error register and no completed tags; PxSACT keeps its bits, PxCI stays clear
    /// (the command was accepted), PxTFD takes the error and the port stops until software
    /// restarts it. The device keeps the details for the NCQ Command Error log.
    fn fail_queued(&mut self, tag: u8, ending: Ending, memory: &mut dyn GuestMemory) -> u32 {
        let ending = Ending {
            status: ending.status | ST_ERR,
            device: 0x40,
            ..ending
        };
        tracing::debug!(tag, error = ending.error, "AHCI queued command failed");
        if let Some(d) = self.drive.as_mut() {
            d.ncq_error = Some(NcqError { tag, ending });
        }
        self.tfd = u32::from(ending.error) << 8 | u32::from(ending.status);
        let fis = [0xA1, 0x40, ending.status & 0x77, ending.error, 0, 0, 0, 0];
        self.post_fis(RFIS_SDB, &fis, memory);
        self.stalled = true;
        PXIS_TFES | PXIS_SDBS
    }

    /// Control FIS (C = 0): software reset through the device control register.
    fn control_fis(&mut self, bit: u32, cfis: &[u8; 20], memory: &mut dyn GuestMemory) -> u32 {
        self.ci &= !bit;
        const SRST: u8 = 0x04;
        if cfis[15] & SRST != 0 {
            self.tfd |= u32::from(ST_BSY);
            return 0;
        }
        // SRST released: the device runs its reset and sends its signature.
        self.link_reset();
        self.signature_pending = false;
        let lba = if self.sig == SIG_ATAPI { 0xEB1401 } else { 1 };
        let ending = Ending {
            status: self.tfd as u8,
            error: 1,
            lba,
            count: 1,
            ..Ending::default()
        };
        self.post_fis(RFIS_D2H, &d2h_fis(&ending, true), memory);
        PXIS_DHRS
    }

    /// Error path: TFD gets ERR and the error register, a D2H FIS reports it, PxIS.TFES
    /// is raised and the port stops until software restarts it (PxCMD.ST).
    fn fail(&mut self, bit: u32, ending: Ending, memory: &mut dyn GuestMemory) -> u32 {
        let ending = Ending {
            status: ending.status | ST_ERR,
            ..ending
        };
        tracing::debug!(
            status = ending.status,
            error = ending.error,
            slot = bit.trailing_zeros(),
            "AHCI command failed"
        );
        self.tfd = u32::from(ending.error) << 8 | u32::from(ending.status);
        self.post_fis(RFIS_D2H, &d2h_fis(&ending, true), memory);
        self.stalled = true;
        self.ci |= bit;
        // The D2H FIS has its interrupt bit set, so DHRS is raised with TFES (as on real
        // HBAs); SeaBIOS waits for DHRS and only then looks at the status.
        PXIS_TFES | PXIS_DHRS
    }

    fn post_fis(&mut self, offset: u64, fis: &[u8], memory: &mut dyn GuestMemory) {
        if self.cmd & CMD_FRE != 0 {
            // A receive area outside memory loses the FIS; the registers still tell.
            let _ = memory.write(self.fb + offset, fis);
        }
    }
}

/// The PIO Setup FIS with which an ATAPI device asks for the PACKET command's CDB:
/// host to device, 12 bytes, interrupt reason C/D = 1, the byte count limit echoed, no
/// interrupt (so no PxIS.PSS); the HBA copies it to the received-FIS area.
fn packet_request_fis(cfis: &[u8; 20]) -> [u8; 20] {
    let mut fis = [0u8; 20];
    fis[0] = 0x5F;
    fis[2] = ST_DRDY | ST_DSC | ST_DRQ;
    fis[5] = cfis[5];
    fis[6] = cfis[6];
    fis[7] = cfis[7];
    fis[12] = 1; // C/D: command packet
    fis[15] = ST_DRDY | ST_DSC; // E_Status
    fis[16] = 12;
    fis
}

fn lba48(cfis: &[u8; 20]) -> u64 {
    u64::from_le_bytes([cfis[4], cfis[5], cfis[6], cfis[8], cfis[9], cfis[10], 0, 0])
}

fn lba28(cfis: &[u8; 20]) -> u64 {
    u64::from_le_bytes([cfis[4], cfis[5], cfis[6], cfis[7] & 0x0F, 0, 0, 0, 0])
}

/// Device-to-host Register FIS.
fn d2h_fis(e: &Ending, interrupt: bool) -> [u8; 20] {
    let mut fis = [0u8; 20];
    fis[0] = 0x34;
    fis[1] = if interrupt { 0x40 } else { 0 };
    fis[2] = e.status;
    fis[3] = e.error;
    let lba = e.lba.to_le_bytes();
    fis[4..7].copy_from_slice(&lba[..3]);
    fis[7] = e.device;
    fis[8..11].copy_from_slice(&lba[3..6]);
    fis[12..14].copy_from_slice(&e.count.to_le_bytes());
    fis
}

/// Reads `entries` PRDT entries: the segments and whether any asks for an interrupt.
fn read_prdt(
    memory: &mut dyn GuestMemory,
    base: u64,
    entries: usize,
) -> Result<(Vec<Segment>, bool), DmaError> {
    let mut segments = Vec::with_capacity(entries.min(256));
    let mut interrupt = false;
    for i in 0..entries {
        let mut e = [0u8; 16];
        memory.read(base + i as u64 * 16, &mut e)?;
        let addr = u64::from(u32::from_le_bytes([e[0], e[1], e[2], e[3]]) & !1)
            | u64::from(u32::from_le_bytes([e[4], e[5], e[6], e[7]])) << 32;
        let dw3 = u32::from_le_bytes([e[12], e[13], e[14], e[15]]);
        interrupt |= dw3 & (1 << 31) != 0;
        segments.push(Segment {
            addr,
            len: (dw3 & 0x3F_FFFF) as usize + 1,
        });
    }
    Ok((segments, interrupt))
}

/// Moves `count` sectors between the disk and the PRDT in bounded chunks.
fn transfer_sectors(
    media: &mut dyn BlockDevice,
    lba: u64,
    count: u32,
    write: bool,
    sg: &mut Scatter,
    memory: &mut dyn GuestMemory,
) -> Ending {
    if lba
        .checked_add(u64::from(count))
        .is_none_or(|end| end > media.sector_count())
    {
        return Ending::error(ERR_IDNF | ERR_ABRT);
    }
    let bytes = u64::from(count) * 512;
    if bytes > sg.capacity() as u64 {
        tracing::debug!(
            bytes,
            prdt = sg.capacity(),
            "AHCI: PRDT smaller than the transfer"
        );
        return Ending::error(ERR_ABRT);
    }
    let per_chunk = (CHUNK_BYTES / 512) as u32;
    let mut done = 0u32;
    while done < count {
        let n = per_chunk.min(count - done);
        let mut chunk = vec![0u8; n as usize * 512];
        let at = lba + u64::from(done);
        if write {
            if sg.read_in(memory, &mut chunk).is_err() {
                return Ending::error(ERR_ABRT);
            }
            if media.write_sectors(at, &chunk).is_err() {
                return Ending::error(ERR_UNC | ERR_ABRT);
            }
        } else {
            if media.read_sectors(at, &mut chunk).is_err() {
                return Ending::error(ERR_UNC);
            }
            if sg.write_out(memory, &chunk).is_err() {
                return Ending::error(ERR_ABRT);
            }
        }
        done += n;
    }
    Ending {
        bytes: bytes as u32,
        ..Ending::ok()
    }
}

fn identify(drive: &Drive, packet: bool, memory: &mut dyn GuestMemory, sg: &mut Scatter) -> Ending {
    let data = ata::identify_data(&IdentifyParams {
        packet,
        sectors: drive.media.as_ref().map_or(0, |m| m.sector_count()),
        multiple: 0,
        write_cache: drive.write_cache,
        transfer_mode: drive.transfer_mode,
        serial: 1,
        slave: false,
        ncq_depth: Some(32),
        async_notification: packet.then_some(drive.an_enabled),
    });
    match sg.write_out(memory, &data) {
        Ok(()) => Ending {
            bytes: 512,
            pio: true,
            ..Ending::ok()
        },
        Err(_) => Ending::error(ERR_ABRT),
    }
}

/// ATA commands of a disk.
fn disk_command(
    drive: &mut Drive,
    cfis: &[u8; 20],
    sg: &mut Scatter,
    memory: &mut dyn GuestMemory,
) -> Ending {
    let command = cfis[2];
    let count28 = match cfis[12] {
        0 => 256,
        n => u32::from(n),
    };
    let count48 = match u32::from(cfis[12]) | u32::from(cfis[13]) << 8 {
        0 => 65536,
        n => n,
    };
    let sectors = drive.media.as_ref().map_or(0, |m| m.sector_count());
    let Some(media) = drive.media.as_mut() else {
        return Ending::error(ERR_ABRT);
    };
    match command {
        0xEC => identify(drive, false, memory, sg),
        // READ/WRITE DMA (EXT) and the PIO forms: all data goes through the PRDT.
        0xC8 | 0xC9 | 0x20 | 0x21 => {
            transfer_sectors(media.as_mut(), lba28(cfis), count28, false, sg, memory)
        }
        0xCA | 0xCB | 0x30 | 0x31 => {
            transfer_sectors(media.as_mut(), lba28(cfis), count28, true, sg, memory)
        }
        0x25 | 0x24 => transfer_sectors(media.as_mut(), lba48(cfis), count48, false, sg, memory),
        0x35 | 0x34 => transfer_sectors(media.as_mut(), lba48(cfis), count48, true, sg, memory),
        0x40..=0x42 => {
            let (lba, count) = if command == 0x42 {
                (lba48(cfis), count48)
            } else {
                (lba28(cfis), count28)
            };
            if lba + u64::from(count) > sectors {
                Ending::error(ERR_IDNF | ERR_ABRT)
            } else {
                Ending::ok()
            }
        }
        // READ LOG EXT (PIO) / READ LOG DMA EXT: the log directory and the NCQ Command
        // Error log, one page each.
        0x2F | 0x47 => {
            let Some(page) = general_purpose_log(cfis[4], &mut drive.ncq_error) else {
                return Ending::error(ERR_ABRT);
            };
            if count48 != 1 || u16::from_le_bytes([cfis[5], cfis[9]]) != 0 {
                return Ending::error(ERR_ABRT);
            }
            match sg.write_out(memory, &page) {
                Ok(()) => Ending {
                    bytes: 512,
                    pio: command == 0x2F,
                    ..Ending::ok()
                },
                Err(_) => Ending::error(ERR_ABRT),
            }
        }
        0xE7 | 0xEA => match media.flush() {
            Ok(()) => Ending::ok(),
            Err(e) => {
                tracing::warn!(%e, "AHCI: FLUSH CACHE failed");
                Ending::error(ERR_ABRT)
            }
        },
        0xEF => {
            if ata::apply_set_features(
                cfis[3],
                cfis[12],
                &mut drive.write_cache,
                &mut drive.transfer_mode,
            ) {
                Ending::ok()
            } else {
                Ending::error(ERR_ABRT)
            }
        }
        0xF8 | 0x27 => {
            let max = sectors.saturating_sub(1);
            Ending {
                lba: if command == 0xF8 {
                    max.min(0x0FFF_FFFF)
                } else {
                    max
                },
                ..Ending::ok()
            }
        }
        0xE5 => Ending {
            count: 0xFF,
            ..Ending::ok()
        },
        // SET MULTIPLE, INITIALIZE DEVICE PARAMETERS, SEEK, RECALIBRATE, power management.
        0xC6 | 0x91 | 0x70 | 0x10..=0x1F | 0xE0..=0xE3 | 0xE6 => Ending::ok(),
        0x90 => Ending {
            status: ST_DRDY | ST_DSC,
            error: 1,
            lba: 1,
            count: 1,
            ..Ending::default()
        },
        _ => {
            tracing::debug!(command, "AHCI disk: unsupported command aborted");
            Ending::error(ERR_ABRT)
        }
    }
}

/// Log `address` of the general-purpose logs a disk keeps, one 512-byte page: the
/// directory (00h) and the NCQ Command Error log (10h), which reading clears. Other logs
/// are not kept (None: the command is aborted).
fn general_purpose_log(address: u8, ncq_error: &mut Option<NcqError>) -> Option<[u8; 512]> {
    let mut page = [0u8; 512];
    match address {
        0x00 => {
            page[0] = 0x01; // general-purpose logging version 1
            page[0x10 * 2] = 1; // log 10h: one page
        }
        0x10 => {
            if let Some(e) = ncq_error.take() {
                // NQ = 0: a queued command failed, its tag in bits 4:0.
                page[0] = e.tag & 0x1F;
                page[2] = e.ending.status;
                page[3] = e.ending.error;
                let lba = e.ending.lba.to_le_bytes();
                page[4..7].copy_from_slice(&lba[..3]);
                page[7] = e.ending.device;
                page[8..11].copy_from_slice(&lba[3..6]);
                page[12..14].copy_from_slice(&e.ending.count.to_le_bytes());
            }
            let sum = page[..511].iter().fold(0u8, |a, &b| a.wrapping_add(b));
            page[511] = sum.wrapping_neg();
        }
        _ => return None,
    }
    Some(page)
}

/// ATA commands of an ATAPI drive, including PACKET with the CDB from the command table.
fn cdrom_command(
    drive: &mut Drive,
    cfis: &[u8; 20],
    cdb: &[u8; 12],
    sg: &mut Scatter,
    memory: &mut dyn GuestMemory,
) -> Ending {
    match cfis[2] {
        0xA1 => identify(drive, true, memory, sg),
        0xA0 => {
            let mut disc = Disc {
                media: &mut drive.media,
                state: &mut drive.atapi,
            };
            let reply = match atapi::command(&mut disc, cdb) {
                Ok(r) => r,
                Err(sense) => return packet_failed(&mut disc, sense),
            };
            let total = reply.data.len() as u64
                + reply.read.map_or(0, |(_, n)| u64::from(n) * atapi::SECTOR);
            if total > sg.capacity() as u64 {
                return packet_failed(&mut disc, Sense::ABORTED);
            }
            if sg.write_out(memory, &reply.data).is_err() {
                return packet_failed(&mut disc, Sense::ABORTED);
            }
            if let Some((lba, count)) = reply.read {
                let per_chunk = (CHUNK_BYTES as u64 / atapi::SECTOR) as u32;
                let mut done = 0u32;
                while done < count {
                    let n = per_chunk.min(count - done);
                    let mut chunk = vec![0u8; n as usize * atapi::SECTOR as usize];
                    let ok = disc
                        .media
                        .as_mut()
                        .is_some_and(|m| m.read_sectors(lba + u64::from(done), &mut chunk).is_ok());
                    if !ok {
                        return packet_failed(&mut disc, Sense::READ_ERROR);
                    }
                    if sg.write_out(memory, &chunk).is_err() {
                        return packet_failed(&mut disc, Sense::ABORTED);
                    }
                    done += n;
                }
            }
            disc.clear_sense();
            // Interrupt reason: command/data = 1, I/O = 1 (status phase).
            Ending {
                status: ST_DRDY | ST_DSC,
                count: 3,
                bytes: total.min(u64::from(u32::MAX)) as u32,
                ..Ending::default()
            }
        }
        0xEC => Ending {
            lba: 0xEB1401,
            count: 1,
            ..Ending::error(ERR_ABRT)
        },
        0x08 | 0x90 => Ending {
            status: 0,
            error: 1,
            lba: 0xEB1401,
            count: 1,
            ..Ending::default()
        },
        // SATA feature enable (10h) / disable (90h), count 05h: asynchronous notification.
        0xEF if matches!(cfis[3], 0x10 | 0x90) && cfis[12] == SATA_FEATURE_AN => {
            drive.an_enabled = cfis[3] == 0x10;
            Ending::ok()
        }
        0xEF => {
            if ata::apply_set_features(
                cfis[3],
                cfis[12],
                &mut drive.write_cache,
                &mut drive.transfer_mode,
            ) {
                Ending::ok()
            } else {
                Ending::error(ERR_ABRT)
            }
        }
        0xE0..=0xE3 | 0xE6 | 0xE7 | 0xEA => Ending::ok(),
        0xE5 => Ending {
            count: 0xFF,
            ..Ending::ok()
        },
        command => {
            tracing::debug!(command, "AHCI ATAPI: unsupported ATA command aborted");
            Ending::error(ERR_ABRT)
        }
    }
}

/// CHECK CONDITION: the sense is kept for REQUEST SENSE, the error register carries the key.
fn packet_failed(disc: &mut Disc<'_>, sense: Sense) -> Ending {
    disc.set_sense(sense);
    Ending {
        count: 3,
        ..Ending::error(atapi::error_register(sense))
    }
}
