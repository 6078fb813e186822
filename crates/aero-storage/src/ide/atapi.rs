//! ATAPI CD/DVD drive: the ATA commands an ATAPI device answers, and the SCSI/MMC packet
//! commands (TEST UNIT READY, REQUEST SENSE, INQUIRY, READ CAPACITY, READ(10)/(12), READ
//! TOC, GET CONFIGURATION, GET EVENT STATUS NOTIFICATION, MODE SENSE(10), START STOP UNIT,
//! PREVENT ALLOW MEDIUM REMOVAL), and the drive's media-change model: the tray, the lock,
//! UNIT ATTENTION and media events. The IDE channel and the AHCI port both drive this one
//! model; they only move the bytes.
//!
//! Media change, as a real tray-loading drive does it:
//! - host eject: the tray opens and the disc is taken out; commands that need a disc fail
//!   with NOT READY, "medium not present - tray open" (02/3A/02) and a MediaRemoval event
//!   is queued. If the guest has locked the tray (PREVENT ALLOW MEDIUM REMOVAL) the tray
//!   stays shut and an EjectRequest event goes to the guest instead, as when the eject
//!   button of a locked drive is pressed; the host may force the eject.
//! - host insert: the disc goes in and the tray closes; the next command that is not
//!   INQUIRY, REQUEST SENSE or GET EVENT STATUS NOTIFICATION fails once with UNIT
//!   ATTENTION "not ready to ready change, medium may have changed" (06/28/00), then the
//!   drive is ready with the new disc (capacity, TOC) and a NewMedia event is queued.
//! - guest START STOP UNIT with LoEj: eject opens the tray (refused with 05/53/02 while
//!   locked); the disc stays on the tray and load closes it again (NewMedia event).

use super::ata;
use super::channel::{AtapiState, DmaJob, ERR_ABRT, IdeChannel, Kind, ST_DRDY, ST_ERR, Transfer};
use crate::BlockDevice;

pub(crate) const SECTOR: u64 = 2048;
/// Capacity above which the disc reports itself as a DVD (a CD holds at most ~870 MB).
const CD_MAX_SECTORS: u64 = 870 * 1024 * 1024 / SECTOR;

/// SCSI sense (key, additional sense code, qualifier).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sense(pub u8, pub u8, pub u8);

impl Sense {
    pub const NONE: Sense = Sense(0x00, 0x00, 0x00);
    pub const NO_MEDIUM_TRAY_CLOSED: Sense = Sense(0x02, 0x3A, 0x01);
    pub const NO_MEDIUM_TRAY_OPEN: Sense = Sense(0x02, 0x3A, 0x02);
    pub const READ_ERROR: Sense = Sense(0x03, 0x11, 0x00);
    pub const INVALID_OPCODE: Sense = Sense(0x05, 0x20, 0x00);
    pub const LBA_OUT_OF_RANGE: Sense = Sense(0x05, 0x21, 0x00);
    pub const INVALID_FIELD: Sense = Sense(0x05, 0x24, 0x00);
    pub const INCOMPATIBLE_FORMAT: Sense = Sense(0x05, 0x30, 0x02);
    pub const SAVING_NOT_SUPPORTED: Sense = Sense(0x05, 0x39, 0x00);
    pub const REMOVAL_PREVENTED: Sense = Sense(0x05, 0x53, 0x02);
    pub const MEDIUM_CHANGED: Sense = Sense(0x06, 0x28, 0x00);
    pub const ABORTED: Sense = Sense(0x0B, 0x00, 0x00);
}

/// Data a packet command returns: bytes, then optionally `count` sectors from `lba`.
pub(crate) struct Reply {
    pub data: Vec<u8>,
    pub read: Option<(u64, u32)>,
}

/// GET EVENT STATUS NOTIFICATION media event codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MediaEvent {
    EjectRequest = 1,
    NewMedia = 2,
    MediaRemoval = 3,
}

/// What the host sees of a CD/DVD drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CdStatus {
    /// A disc is in the drive (on the tray if the tray is open).
    pub medium: bool,
    pub tray_open: bool,
    /// The guest prevents medium removal.
    pub locked: bool,
}

/// Why a host media change was not done.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MediaError {
    #[error("no CD/DVD drive there")]
    NoCdDrive,
    #[error("the guest has locked the tray; an eject request was sent to the guest")]
    Locked,
}

/// What a packet command works on: the disc (if any) and the drive's sense/media state.
/// Shared by the IDE channel and the AHCI port.
pub(crate) struct Disc<'a> {
    pub media: &'a mut Option<Box<dyn BlockDevice>>,
    pub state: &'a mut AtapiState,
}

impl AtapiState {
    pub fn status(&self, media: &Option<Box<dyn BlockDevice>>) -> CdStatus {
        CdStatus {
            medium: media.is_some(),
            tray_open: self.tray_open,
            locked: self.locked,
        }
    }
}

impl Disc<'_> {
    /// Host inserts `disc`: the tray closes with it, the guest is told (UNIT ATTENTION,
    /// NewMedia). Returns the disc it replaced.
    pub fn insert(&mut self, disc: Box<dyn BlockDevice>) -> Option<Box<dyn BlockDevice>> {
        let old = self.media.replace(disc);
        self.state.tray_open = false;
        self.state.unit_attention = true;
        self.state.media_event = Some(MediaEvent::NewMedia);
        old
    }

    /// Host eject (the drive's eject button). A locked tray stays shut unless `force`: the
    /// guest gets an EjectRequest event and decides (it may unlock and eject itself).
    pub fn eject(&mut self, force: bool) -> Result<Option<Box<dyn BlockDevice>>, MediaError> {
        if self.state.locked && !force {
            self.state.media_event = Some(MediaEvent::EjectRequest);
            return Err(MediaError::Locked);
        }
        if !self.state.tray_open {
            self.state.tray_open = true;
            self.state.media_event = Some(MediaEvent::MediaRemoval);
        }
        // A change the guest has not seen yet is superseded by "no medium".
        self.state.unit_attention = false;
        Ok(self.media.take())
    }

    /// NOT READY sense for a command that needs a disc.
    pub fn no_medium(&self) -> Sense {
        if self.state.tray_open {
            Sense::NO_MEDIUM_TRAY_OPEN
        } else {
            Sense::NO_MEDIUM_TRAY_CLOSED
        }
    }

    /// The disc's size in 2048-byte sectors, or NOT READY without a loaded disc.
    fn sectors(&self) -> Result<u64, Sense> {
        match self.media.as_ref() {
            Some(m) if !self.state.tray_open => Ok(m.sector_count()),
            _ => Err(self.no_medium()),
        }
    }

    /// A command completed without error: the sense data is consumed.
    pub fn clear_sense(&mut self) {
        self.state.sense_key = 0;
        self.state.asc = 0;
        self.state.ascq = 0;
    }

    pub fn set_sense(&mut self, sense: Sense) {
        self.state.sense_key = sense.0;
        self.state.asc = sense.1;
        self.state.ascq = sense.2;
    }
}

/// The ATA error register value for a CHECK CONDITION with `sense`.
pub(crate) fn error_register(sense: Sense) -> u8 {
    (sense.0 << 4) | if sense.0 == 0x05 { ERR_ABRT } else { 0 }
}

impl Reply {
    fn none() -> Result<Reply, Sense> {
        Ok(Reply {
            data: Vec::new(),
            read: None,
        })
    }
    /// `data` cut to the command's allocation length.
    fn bytes(mut data: Vec<u8>, alloc: usize) -> Result<Reply, Sense> {
        data.truncate(alloc);
        Ok(Reply { data, read: None })
    }
}

pub(crate) fn execute_ata(ch: &mut IdeChannel, command: u8) {
    match command {
        0xA0 => {
            let dma = ch.tf.feature & 1 != 0;
            ch.tf.nsector = 0x01; // CoD: the device wants the command packet
            ch.start_pio_out(12, Transfer::AtapiPacket { dma });
        }
        0xA1 => {
            let data = ata::identify(ch, true);
            ch.start_pio_in(data, Transfer::BufferIn, true);
        }
        0x08 => {
            // DEVICE RESET: signature, no interrupt.
            ch.tf.set_signature(Kind::Cdrom);
            ch.set_status(0, 0x01);
        }
        0x90 => ata::diagnostic(ch),
        0xEC => {
            // IDENTIFY DEVICE on ATAPI aborts and leaves the signature for the driver.
            ch.tf.set_signature(Kind::Cdrom);
            ch.abort(ERR_ABRT);
        }
        0xEF => {
            let ok = matches!(ch.tf.feature, 0x02 | 0x82 | 0x55 | 0xAA | 0x66 | 0xCC)
                || (ch.tf.feature == 0x03
                    && matches!(ch.tf.nsector, 0x00 | 0x01 | 0x08..=0x0C | 0x20..=0x22 | 0x40..=0x45));
            if ok {
                if ch.tf.feature == 0x03 {
                    let mode = ch.tf.nsector;
                    if let Some(d) = ch.dev() {
                        d.transfer_mode = mode;
                    }
                }
                ch.complete();
            } else {
                ch.abort(ERR_ABRT);
            }
        }
        0xE0 | 0xE2 | 0xE6 => {
            if let Some(d) = ch.dev() {
                d.standby = true;
            }
            ch.complete();
        }
        0xE1 | 0xE3 | 0xE7 | 0xEA | 0x00 => {
            if command != 0x00 {
                if let Some(d) = ch.dev() {
                    d.standby = false;
                }
                ch.complete();
            } else {
                ch.abort(ERR_ABRT); // NOP always aborts
            }
        }
        0xE5 => {
            let standby = ch.dev().is_some_and(|d| d.standby);
            ch.tf.nsector = if standby { 0x00 } else { 0xFF };
            ch.complete();
        }
        _ => {
            tracing::debug!(command, "ATAPI: unsupported ATA command aborted");
            ch.abort(ERR_ABRT);
        }
    }
}

/// Ends a packet command with CHECK CONDITION and the given sense.
pub(crate) fn fail(ch: &mut IdeChannel, sense: Sense) {
    if let Some(d) = ch.dev() {
        Disc {
            media: &mut d.media,
            state: &mut d.atapi,
        }
        .set_sense(sense);
    }
    ch.transfer = Transfer::Idle;
    ch.buf.clear();
    ch.pos = 0;
    ch.tf.nsector = 0x03; // CoD | I/O: status phase
    ch.set_status(ST_DRDY | ST_ERR, error_register(sense));
    ch.raise_irq();
}

/// Ends a packet command with NOT READY (the disc went away under a DMA transfer).
pub(crate) fn fail_no_medium(ch: &mut IdeChannel) {
    let sense = match ch.dev() {
        Some(d) => Disc {
            media: &mut d.media,
            state: &mut d.atapi,
        }
        .no_medium(),
        None => Sense::ABORTED,
    };
    fail(ch, sense);
}

fn finish(ch: &mut IdeChannel) {
    if let Some(d) = ch.dev() {
        Disc {
            media: &mut d.media,
            state: &mut d.atapi,
        }
        .clear_sense();
    }
    ch.tf.nsector = 0x03;
    ch.complete();
}

pub(crate) fn run_packet(ch: &mut IdeChannel, cdb: &[u8; 12], dma: bool) {
    let result = match ch.dev() {
        Some(d) => command(
            &mut Disc {
                media: &mut d.media,
                state: &mut d.atapi,
            },
            cdb,
        ),
        None => Err(Sense::ABORTED),
    };
    match result {
        Err(sense) => fail(ch, sense),
        Ok(reply) if reply.data.is_empty() && reply.read.is_none() => finish(ch),
        Ok(reply) if dma => ch.start_dma(DmaJob::AtapiIn {
            pending: reply.data,
            read: reply.read,
        }),
        Ok(reply) => next_chunk(ch, reply.data, reply.read),
    }
}

/// Offers the next PIO chunk (at most the byte count limit) or ends the command.
pub(crate) fn next_chunk(ch: &mut IdeChannel, mut pending: Vec<u8>, mut read: Option<(u64, u32)>) {
    let total = pending.len() as u64 + read.map_or(0, |(_, n)| n as u64 * SECTOR);
    if total == 0 {
        finish(ch);
        return;
    }
    let limit = match ch.tf.byte_count() & 0xFFFE {
        0 => 0xFFFE,
        n => n,
    } as u64;
    let chunk = limit.min(total) as usize;
    while pending.len() < chunk {
        let Some((lba, count)) = read else { break };
        let need = ((chunk - pending.len()) as u64)
            .div_ceil(SECTOR)
            .min(count as u64) as u32;
        let mut data = vec![0u8; need as usize * SECTOR as usize];
        let ok = ch
            .dev()
            .and_then(|d| d.media.as_mut())
            .is_some_and(|m| m.read_sectors(lba, &mut data).is_ok());
        if !ok {
            fail(ch, Sense::READ_ERROR);
            return;
        }
        pending.extend_from_slice(&data);
        read = (count > need).then_some((lba + need as u64, count - need));
    }
    let mut out: Vec<u8> = pending.drain(..chunk.min(pending.len())).collect();
    ch.tf.set_byte_count(out.len() as u16);
    if out.len() % 2 == 1 {
        out.push(0);
    }
    ch.tf.nsector = 0x02; // I/O: data to the host
    ch.start_pio_in(out, Transfer::AtapiIn { pending, read }, true);
}

fn be16(b: &[u8], at: usize) -> u32 {
    ((b[at] as u32) << 8) | b[at + 1] as u32
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn capacity(disc: &mut Disc<'_>) -> Option<u64> {
    disc.sectors().ok()
}

/// Runs one packet command against the drive's state; the transport (IDE PIO/DMA or an
/// AHCI command slot) moves the reply.
pub(crate) fn command(disc: &mut Disc<'_>, cdb: &[u8; 12]) -> Result<Reply, Sense> {
    let op = cdb[0];
    // A media change is reported once to the first command that is not exempt.
    let exempt = matches!(op, 0x03 | 0x12 | 0x4A);
    if !exempt && disc.state.unit_attention {
        disc.state.unit_attention = false;
        return Err(Sense::MEDIUM_CHANGED);
    }
    match op {
        0x00 => disc.sectors().map(|_| Reply {
            data: Vec::new(),
            read: None,
        }),
        0x03 => request_sense(disc, cdb[4] as usize),
        0x12 => inquiry(cdb[4] as usize),
        0x25 => {
            let sectors = disc.sectors()?;
            let last = sectors.saturating_sub(1).min(u32::MAX as u64) as u32;
            let mut d = last.to_be_bytes().to_vec();
            d.extend_from_slice(&(SECTOR as u32).to_be_bytes());
            Reply::bytes(d, 8)
        }
        0x28 => read(disc, be32(cdb, 2) as u64, be16(cdb, 7)),
        0xA8 => read(disc, be32(cdb, 2) as u64, be32(cdb, 6)),
        0x43 => read_toc(disc, cdb),
        0x46 => get_configuration(disc, cdb),
        0x4A => event_status(disc, cdb),
        0x5A => mode_sense(cdb),
        0x1B => start_stop(disc, cdb[4]),
        0x51 => read_disc_information(disc, be16(cdb, 7) as usize),
        0xBD => mechanism_status(disc, be16(cdb, 8) as usize),
        0xBB => Reply::none(), // SET CD SPEED: we read at host speed anyway
        0xBE => read_cd(disc, cdb),
        0xAD => read_dvd_structure(disc, cdb),
        0x1E => {
            // Prevent field: bit 0 locks against removal (bit 1, persistent prevention, is
            // for changers).
            disc.state.locked = cdb[4] & 1 != 0;
            Reply::none()
        }
        _ => {
            tracing::debug!(op, "ATAPI: unsupported packet command");
            Err(Sense::INVALID_OPCODE)
        }
    }
}

fn request_sense(disc: &mut Disc<'_>, alloc: usize) -> Result<Reply, Sense> {
    let stored = Sense(disc.state.sense_key, disc.state.asc, disc.state.ascq);
    // The last command's sense first (SPC-3 5.9.7 a: the unit attention stays pending).
    // Nothing stored (the last command succeeded, or its sense was read already): a
    // pending unit attention, reported and cleared (SPC-3 5.9.7 b: drivers that poll with
    // REQUEST SENSE see the media change once), else the drive's current condition, so
    // that such a driver still sees an empty drive or an open tray.
    let Sense(key, asc, ascq) = if stored != Sense::NONE {
        stored
    } else if disc.state.unit_attention {
        disc.state.unit_attention = false;
        Sense::MEDIUM_CHANGED
    } else {
        disc.sectors().err().unwrap_or(Sense::NONE)
    };
    let mut d = vec![0u8; 18];
    d[0] = 0x70; // current error, fixed format
    d[2] = key;
    d[7] = 10; // additional length
    d[12] = asc;
    d[13] = ascq;
    // Reading the sense consumes it (finish() clears it).
    Reply::bytes(d, alloc)
}

fn inquiry(alloc: usize) -> Result<Reply, Sense> {
    let mut d = vec![0u8; 36];
    d[0] = 0x05; // CD/DVD device
    d[1] = 0x80; // removable
    d[2] = 0x00;
    d[3] = 0x21; // ATAPI, response data format 1
    d[4] = 31;
    d[8..16].copy_from_slice(b"AERO    ");
    d[16..32].copy_from_slice(b"Aero DVD-ROM    ");
    d[32..36].copy_from_slice(b"1.0 ");
    Reply::bytes(d, alloc)
}

fn read(disc: &mut Disc<'_>, lba: u64, count: u32) -> Result<Reply, Sense> {
    let sectors = disc.sectors()?;
    if lba + count as u64 > sectors {
        return Err(Sense::LBA_OUT_OF_RANGE);
    }
    Ok(Reply {
        data: Vec::new(),
        read: (count > 0).then_some((lba, count)),
    })
}

/// LBA to MSF (minutes, seconds, frames) with the 2-second lead-in.
fn msf(lba: u64) -> [u8; 4] {
    let f = lba + 150;
    [
        0,
        (f / (75 * 60)).min(255) as u8,
        ((f / 75) % 60) as u8,
        (f % 75) as u8,
    ]
}

fn address(lba: u64, as_msf: bool) -> [u8; 4] {
    if as_msf {
        msf(lba)
    } else {
        (lba.min(u32::MAX as u64) as u32).to_be_bytes()
    }
}

fn read_toc(disc: &mut Disc<'_>, cdb: &[u8; 12]) -> Result<Reply, Sense> {
    let sectors = disc.sectors()?;
    let as_msf = cdb[1] & 0x02 != 0;
    let alloc = be16(cdb, 7) as usize;
    // Old drivers put the format in the control byte's top bits.
    let format = match cdb[2] & 0x0F {
        0 => cdb[9] >> 6,
        f => f,
    };
    let start = cdb[6];
    let mut d = vec![0u8; 4];
    match format {
        0 => {
            if start > 1 && start != 0xAA {
                return Err(Sense::INVALID_FIELD);
            }
            if start <= 1 {
                d.extend_from_slice(&[0, 0x14, 1, 0]); // data track 1
                d.extend_from_slice(&address(0, as_msf));
            }
            d.extend_from_slice(&[0, 0x14, 0xAA, 0]); // lead-out
            d.extend_from_slice(&address(sectors, as_msf));
        }
        1 => {
            // Session information: one session, first track 1 at LBA 0.
            d.extend_from_slice(&[0, 0x14, 1, 0]);
            d.extend_from_slice(&address(0, as_msf));
        }
        _ => return Err(Sense::INVALID_FIELD),
    }
    let len = (d.len() - 2) as u16;
    d[0..2].copy_from_slice(&len.to_be_bytes());
    d[2] = 1; // first track / session
    d[3] = 1; // last
    Reply::bytes(d, alloc)
}

fn get_configuration(disc: &mut Disc<'_>, cdb: &[u8; 12]) -> Result<Reply, Sense> {
    let rt = cdb[1] & 0x03;
    let starting = be16(cdb, 2) as u16;
    let alloc = be16(cdb, 7) as usize;
    let profile: u16 = match capacity(disc) {
        None => 0,
        Some(n) if n > CD_MAX_SECTORS => 0x0010, // DVD-ROM
        Some(_) => 0x0008,                       // CD-ROM
    };
    let has_media = profile != 0;
    // (feature code, current, additional data)
    let features: Vec<(u16, bool, Vec<u8>)> = vec![
        (0x0000, true, {
            let dvd = profile == 0x0010;
            vec![
                0x00,
                0x10,
                dvd as u8,
                0,
                0x00,
                0x08,
                (profile == 0x0008) as u8,
                0,
            ]
        }),
        (0x0001, true, vec![0, 0, 0, 2, 0, 0, 0, 0]), // core: ATAPI physical interface
        (0x0002, true, vec![0, 0, 0, 0]),             // morphing
        (0x0003, true, vec![0x29, 0, 0, 0]),          // removable medium: tray, eject, lock
        (0x0010, has_media, vec![0, 0, 0x08, 0, 0, 0x10, 0, 0]), // random readable, 2048-byte blocks
        (0x001E, profile == 0x0008, vec![0, 0, 0, 0]),           // CD read
        (0x001F, profile == 0x0010, vec![0, 0, 0, 0]),           // DVD read
    ];
    let mut d = vec![0u8; 8];
    d[6..8].copy_from_slice(&profile.to_be_bytes());
    for (code, current, data) in features {
        let wanted = match rt {
            0 => code >= starting,
            1 => code >= starting && current,
            2 => code == starting,
            _ => return Err(Sense::INVALID_FIELD),
        };
        if !wanted {
            continue;
        }
        d.extend_from_slice(&code.to_be_bytes());
        let version = if code == 0x0001 || code == 0x0003 {
            1
        } else {
            0
        };
        d.push((version << 2) | (0x02 * (code <= 0x0003) as u8) | current as u8);
        d.push(data.len() as u8);
        d.extend_from_slice(&data);
    }
    let len = (d.len() - 4) as u32;
    d[0..4].copy_from_slice(&len.to_be_bytes());
    Reply::bytes(d, alloc)
}

fn event_status(disc: &mut Disc<'_>, cdb: &[u8; 12]) -> Result<Reply, Sense> {
    if cdb[1] & 1 == 0 {
        return Err(Sense::INVALID_FIELD); // only polled operation
    }
    let classes = cdb[4];
    let alloc = be16(cdb, 7) as usize;
    const MEDIA_CLASS: u8 = 1 << 4;
    if classes & MEDIA_CLASS == 0 {
        // No supported class requested: header only, "no event available".
        return Reply::bytes(vec![0, 2, 0x80, MEDIA_CLASS], alloc);
    }
    let event = disc.state.media_event.take().map_or(0, |e| e as u8);
    let status = disc.state.tray_open as u8 | (disc.media.is_some() as u8) << 1;
    let d = vec![0, 6, 4, MEDIA_CLASS, event, status, 0, 0];
    Reply::bytes(d, alloc)
}

fn mode_sense(cdb: &[u8; 12]) -> Result<Reply, Sense> {
    let control = cdb[2] >> 6;
    let page = cdb[2] & 0x3F;
    let alloc = be16(cdb, 7) as usize;
    if control == 3 {
        return Err(Sense::SAVING_NOT_SUPPORTED);
    }
    let changeable = control == 1;
    let error_recovery = vec![0x01, 0x06, 0, if changeable { 0 } else { 5 }, 0, 0, 0, 0];
    let mut capabilities = vec![0u8; 22];
    capabilities[0] = 0x2A;
    capabilities[1] = 20;
    if !changeable {
        capabilities[2] = 0x3B; // reads CD-R/RW, DVD-ROM/R/RAM
        capabilities[4] = 0x71; // audio play, composite, digital ports, multisession
        capabilities[5] = 0xFF;
        capabilities[6] = 0x29; // tray loading, eject, lock supported (lock state added by guest)
        capabilities[8..10].copy_from_slice(&(16 * 176u16).to_be_bytes()); // max speed KB/s
        capabilities[10..12].copy_from_slice(&256u16.to_be_bytes()); // volume levels
        capabilities[12..14].copy_from_slice(&512u16.to_be_bytes()); // buffer KB
        capabilities[14..16].copy_from_slice(&(16 * 176u16).to_be_bytes());
    }
    let mut pages = Vec::new();
    match page {
        0x01 => pages.extend_from_slice(&error_recovery),
        0x2A => pages.extend_from_slice(&capabilities),
        0x3F => {
            pages.extend_from_slice(&error_recovery);
            pages.extend_from_slice(&capabilities);
        }
        _ => return Err(Sense::INVALID_FIELD),
    }
    let mut d = vec![0u8; 8];
    d.extend_from_slice(&pages);
    let len = (d.len() - 2) as u16;
    d[0..2].copy_from_slice(&len.to_be_bytes());
    Reply::bytes(d, alloc)
}

/// START STOP UNIT: only LoEj does anything (the tray); the motor is not modelled.
fn start_stop(disc: &mut Disc<'_>, flags: u8) -> Result<Reply, Sense> {
    let load_eject = flags & 0x02 != 0;
    let start = flags & 0x01 != 0;
    if !load_eject {
        return Reply::none();
    }
    if !start {
        if disc.state.locked {
            return Err(Sense::REMOVAL_PREVENTED);
        }
        if !disc.state.tray_open {
            // The disc stays on the open tray until the host takes it out.
            disc.state.tray_open = true;
            disc.state.media_event = Some(MediaEvent::MediaRemoval);
        }
    } else if disc.state.tray_open {
        disc.state.tray_open = false;
        if disc.media.is_some() {
            disc.state.media_event = Some(MediaEvent::NewMedia);
        }
    }
    Reply::none()
}

fn read_disc_information(disc: &mut Disc<'_>, alloc: usize) -> Result<Reply, Sense> {
    disc.sectors()?;
    let mut d = vec![0u8; 34];
    d[1] = 32;
    d[2] = 0x0E; // last session complete, disc complete (not writable)
    d[3] = 1; // first track
    d[4] = 1; // sessions
    d[5] = 1; // first track of the last session
    d[6] = 1; // last track of the last session
    d[16..24].fill(0xFF); // no lead-in / lead-out for recording
    Reply::bytes(d, alloc)
}

fn mechanism_status(disc: &mut Disc<'_>, alloc: usize) -> Result<Reply, Sense> {
    // Header only: no changer, idle mechanism, door open bit.
    let d = vec![0, (disc.state.tray_open as u8) << 4, 0, 0, 0, 0, 0, 0];
    Reply::bytes(d, alloc)
}

/// READ CD: only the 2048-byte user-data form that data discs use (flags 10h).
fn read_cd(disc: &mut Disc<'_>, cdb: &[u8; 12]) -> Result<Reply, Sense> {
    let sector_type = (cdb[1] >> 2) & 7;
    if sector_type != 0 && sector_type != 2 {
        return Err(Sense::INCOMPATIBLE_FORMAT); // audio / mode 2 sectors: not on our discs
    }
    let lba = be32(cdb, 2) as u64;
    let count = ((cdb[6] as u32) << 16) | be16(cdb, 7);
    match cdb[9] & 0xF8 {
        0x00 => Reply::none(),
        0x10 => read(disc, lba, count),
        _ => Err(Sense::INVALID_FIELD),
    }
}

/// READ DVD STRUCTURE format 0 (physical format information) for DVD-sized discs.
fn read_dvd_structure(disc: &mut Disc<'_>, cdb: &[u8; 12]) -> Result<Reply, Sense> {
    let sectors = disc.sectors()?;
    if cdb[7] != 0 {
        return Err(Sense::INVALID_FIELD);
    }
    if sectors <= CD_MAX_SECTORS {
        return Err(Sense::INCOMPATIBLE_FORMAT);
    }
    let alloc = be16(cdb, 8) as usize;
    let mut d = vec![0u8; 4 + 17];
    d[1] = 2 + 17;
    d[4] = 0x01; // DVD-ROM book, part version 1
    d[5] = 0x0F; // 120 mm, maximum rate not specified
    d[6] = 0x01; // one layer, read-only
    let start = 0x30000u32;
    let end = start + (sectors.min(u32::MAX as u64 - start as u64) as u32).saturating_sub(1);
    d[8..12].copy_from_slice(&start.to_be_bytes());
    d[12..16].copy_from_slice(&end.to_be_bytes());
    Reply::bytes(d, alloc)
}
