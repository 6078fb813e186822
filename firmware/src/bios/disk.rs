//! INT 13h: floppy and hard disk CHS services, EDD 41h–48h, CD-ROM reads through EDD.

use aero_cpu::{Reg, Seg};
use tracing::debug;

use super::Bios;
use super::bda;
use super::call::{Call, Flow};
use super::eltorito::{Emulation, read_emulated};
use super::error::{DiskIoError, FirmwareError};
use super::geometry::{self, Chs};
use super::host::{DiskId, DiskInfo, DiskLocation, DiskPort, FirmwareHost};
use super::mem::real_addr;
use super::rom::BIOS_SEGMENT;

pub const STATUS_OK: u8 = 0x00;
pub const STATUS_BAD_COMMAND: u8 = 0x01;
pub const STATUS_WRITE_PROTECTED: u8 = 0x03;
pub const STATUS_SECTOR_NOT_FOUND: u8 = 0x04;
/// AH=16h: the disk was changed (also "change line active" for a read after a change).
pub const STATUS_MEDIA_CHANGED: u8 = 0x06;
pub const STATUS_DMA_BOUNDARY: u8 = 0x09;
/// AH=18h: the drive cannot format this track count / sectors-per-track combination.
pub const STATUS_MEDIA_TYPE_UNSUPPORTED: u8 = 0x0C;
pub const STATUS_CONTROLLER: u8 = 0x20;
pub const STATUS_TIMEOUT: u8 = 0x80;

/// The first CD-ROM's drive number (El Torito no-emulation convention).
pub const CDROM_DRIVE: u8 = 0xE0;
const MAX_HARD_DISKS: u8 = 8;
/// Sectors moved per host call; bounds the bounce buffer to 128 KiB.
const CHUNK_SECTORS: u64 = 64;

/// Maps a BIOS drive number to the machine's drive.
pub fn drive_id(dl: u8, hard_disks: u8) -> Option<DiskId> {
    match dl {
        0x00 | 0x01 => Some(DiskId::Floppy(dl)),
        0x80..=0x87 if dl - 0x80 < hard_disks => Some(DiskId::HardDisk(dl - 0x80)),
        CDROM_DRIVE => Some(DiskId::Cdrom(0)),
        _ => None,
    }
}

fn io_status(e: DiskIoError) -> u8 {
    match e {
        DiskIoError::NoDrive => STATUS_TIMEOUT,
        DiskIoError::OutOfRange => STATUS_SECTOR_NOT_FOUND,
        DiskIoError::WriteProtected => STATUS_WRITE_PROTECTED,
        DiskIoError::Io => STATUS_CONTROLLER,
    }
}

/// Where a BIOS drive's sectors come from.
#[derive(Clone, Copy, Debug)]
pub enum Source {
    /// The machine's drive.
    Host(DiskId),
    /// An El Torito emulation image inside the CD.
    Emulated(Emulation),
}

impl Source {
    fn read(
        &self,
        host: &mut dyn FirmwareHost,
        lba: u64,
        buf: &mut [u8],
    ) -> Result<(), DiskIoError> {
        match self {
            Source::Host(d) => host.disk_read(*d, lba, buf),
            Source::Emulated(e) => read_emulated(host, e, lba, buf),
        }
    }

    fn write(&self, host: &mut dyn FirmwareHost, lba: u64, buf: &[u8]) -> Result<(), DiskIoError> {
        match self {
            Source::Host(d) => host.disk_write(*d, lba, buf),
            // A CD is read-only, and so is every image on it.
            Source::Emulated(_) => Err(DiskIoError::WriteProtected),
        }
    }

    /// The emulated image's own geometry, if it is one.
    fn geometry(&self) -> Option<Chs> {
        match self {
            Source::Host(_) => None,
            Source::Emulated(e) => Some(e.chs),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Read,
    Write,
    Verify,
}

/// Moves `count` sectors between the drive and guest memory at `addr`. Returns how many
/// sectors were done and the status (OK only when all were).
pub fn transfer(
    c: &mut Call,
    source: Source,
    info: &DiskInfo,
    lba: u64,
    count: u64,
    addr: u64,
    dir: Direction,
) -> (u64, u8) {
    let size = info.sector_size as u64;
    if size == 0 || size > 4096 {
        return (0, STATUS_BAD_COMMAND);
    }
    if lba.checked_add(count).is_none_or(|end| end > info.sectors) {
        return (0, STATUS_SECTOR_NOT_FOUND);
    }
    if dir == Direction::Write && info.read_only {
        return (0, STATUS_WRITE_PROTECTED);
    }
    let mut done = 0u64;
    let mut buf = Vec::new();
    while done < count {
        let n = (count - done).min(CHUNK_SECTORS);
        let bytes = (n * size) as usize;
        let at = addr + done * size;
        buf.resize(bytes, 0);
        let result = match dir {
            Direction::Verify => Ok(()),
            Direction::Read => match source.read(c.host, lba + done, &mut buf) {
                Ok(()) => c.mem.write(at, &buf).map_err(|_| STATUS_DMA_BOUNDARY),
                Err(e) => Err(io_status(e)),
            },
            Direction::Write => match c.mem.read(at, &mut buf) {
                Ok(()) => source.write(c.host, lba + done, &buf).map_err(io_status),
                Err(_) => Err(STATUS_DMA_BOUNDARY),
            },
        };
        if let Err(status) = result {
            debug!(?source, lba = lba + done, status, "INT 13h transfer failed");
            return (done, status);
        }
        done += n;
    }
    (done, STATUS_OK)
}

impl Bios {
    /// Hard disks INT 13h answers for (an emulated one counts).
    pub(crate) fn hard_disk_count(&self, c: &Call) -> u8 {
        let emulated = self.state.emulation.is_some_and(|e| !e.floppy);
        let host = (0..MAX_HARD_DISKS - u8::from(emulated))
            .take_while(|i| c.host.disk_info(DiskId::HardDisk(*i)).is_some())
            .count() as u8;
        host + u8::from(emulated)
    }

    /// Floppy drives INT 13h answers for (an emulated one counts; at most two).
    pub(crate) fn floppy_count(&self, c: &Call) -> u8 {
        let emulated = self.state.emulation.is_some_and(|e| e.floppy);
        let host = (0..2).filter(|i| c.host.floppy_installed(*i)).count() as u8;
        (host + u8::from(emulated)).min(2)
    }

    /// The drive behind BIOS drive number `dl`: what it is to INT 13h, its size, and
    /// where its sectors come from. During El Torito emulation the image is drive 00h or
    /// 80h and the machine's drives of that class answer one number higher.
    fn resolve(&self, c: &Call, dl: u8) -> Option<(DiskId, DiskInfo, Source)> {
        let drive = drive_id(dl, self.hard_disk_count(c))?;
        let host_drive = match (self.state.emulation, drive) {
            (Some(e), d) if d == e.disk_id() => {
                // The image lives on the CD: EDD's device path is the CD drive's.
                let mut info = e.info();
                info.location = c.host.disk_info(DiskId::Cdrom(0)).and_then(|i| i.location);
                return Some((d, info, Source::Emulated(e)));
            }
            (Some(e), DiskId::Floppy(n)) if e.floppy => DiskId::Floppy(n.checked_sub(1)?),
            (Some(e), DiskId::HardDisk(n)) if !e.floppy => DiskId::HardDisk(n.checked_sub(1)?),
            (_, d) => d,
        };
        let info = c.host.disk_info(host_drive)?;
        Some((drive, info, Source::Host(host_drive)))
    }

    pub(crate) fn int13(&mut self, c: &mut Call) -> Result<Flow, FirmwareError> {
        let ah = c.ah();
        let dl = c.lo(Reg::Rdx);
        if ah == 0x4B {
            return self.int13_eltorito(c);
        }
        let hard_disks = self.hard_disk_count(c);
        let Some((drive, info, source)) = self.resolve(c, dl) else {
            if let Some(n) = self.empty_floppy_drive(c, dl) {
                return self.int13_empty_floppy(c, dl, n, hard_disks);
            }
            return finish(c, dl, STATUS_BAD_COMMAND);
        };
        let host_floppy = match source {
            Source::Host(DiskId::Floppy(n)) => Some(n),
            _ => None,
        };
        match ah {
            0x00 | 0x0C | 0x0D | 0x10 | 0x11 | 0x14 | 0x44 | 0x47 => finish(c, dl, STATUS_OK),
            0x01 => {
                let status = c.mem.read_u8(status_addr(dl))?;
                c.set_ah(status);
                c.set_cf(status != 0)?;
                Ok(Flow::Return)
            }
            0x02..=0x04 => {
                let flow = chs_transfer(c, dl, drive, &info, source, ah)?;
                // Like a seek with a disk in the drive, an access resets the change line.
                if let Some(n) = host_floppy
                    && c.ah() == STATUS_OK
                {
                    c.host.take_floppy_change(n);
                }
                Ok(flow)
            }
            0x08 => self.parameters(c, dl, drive, &info, source, hard_disks),
            0x15 => disk_type(c, drive, &info),
            // Change line: hard disks and emulated floppies never change.
            0x16 => match host_floppy {
                Some(n) if c.host.take_floppy_change(n) => finish(c, dl, STATUS_MEDIA_CHANGED),
                _ => finish(c, dl, STATUS_OK),
            },
            0x05 if matches!(drive, DiskId::Floppy(_)) => {
                let status = format_track(c, drive, &info, source)?;
                if let Some(n) = host_floppy
                    && status == STATUS_OK
                {
                    c.host.take_floppy_change(n);
                }
                finish(c, dl, status)
            }
            0x17 if matches!(drive, DiskId::Floppy(_)) => finish(c, dl, STATUS_OK),
            // Set media type for format: only the inserted image's own geometry can be
            // formatted (an image file has one layout), so DOS FORMAT learns early when a
            // different size is asked for.
            0x18 if matches!(drive, DiskId::Floppy(_)) => {
                let cl = c.lo(Reg::Rcx) as u32;
                let max_track = c.hi(Reg::Rcx) as u32 | (cl & 0xC0) << 2;
                let fits = chs_of(drive, &info, source).is_some_and(|chs| {
                    chs.cylinders == max_track + 1 && chs.sectors_per_track == cl & 0x3F
                });
                if !fits {
                    return finish(c, dl, STATUS_MEDIA_TYPE_UNSUPPORTED);
                }
                c.set_seg_real(Seg::Es, BIOS_SEGMENT);
                c.set_r16(Reg::Rdi, self.rom.layout.diskette_params);
                finish(c, dl, STATUS_OK)
            }
            0x41 => edd_check(c, dl, drive),
            0x42 | 0x43 => edd_transfer(c, dl, drive, &info, source, ah),
            0x48 => edd_parameters(c, dl, drive, &info),
            _ => {
                debug!(ah, dl, "INT 13h function not supported");
                finish(c, dl, STATUS_BAD_COMMAND)
            }
        }
    }

    /// The machine's floppy drive behind `dl` when it is installed but holds no disk.
    fn empty_floppy_drive(&self, c: &Call, dl: u8) -> Option<u8> {
        let DiskId::Floppy(n) = drive_id(dl, 0)? else {
            return None;
        };
        let n = match self.state.emulation {
            Some(e) if e.floppy => n.checked_sub(1)?,
            _ => n,
        };
        (c.host.floppy_installed(n) && c.host.disk_info(DiskId::Floppy(n)).is_none()).then_some(n)
    }

    /// INT 13h on an empty floppy drive: the drive answers, transfers time out (not
    /// ready), and the change line tells DOS when a disk comes back.
    fn int13_empty_floppy(
        &mut self,
        c: &mut Call,
        dl: u8,
        n: u8,
        hard_disks: u8,
    ) -> Result<Flow, FirmwareError> {
        match c.ah() {
            0x00 => finish(c, dl, STATUS_OK),
            0x01 => {
                let status = c.mem.read_u8(status_addr(dl))?;
                c.set_ah(status);
                c.set_cf(status != 0)?;
                Ok(Flow::Return)
            }
            // Parameters describe the drive (1.44 MB), not the missing disk.
            0x08 => {
                let drive_only = DiskInfo {
                    sectors: 2880,
                    sector_size: 512,
                    read_only: false,
                    location: None,
                };
                let drive = DiskId::Floppy(n);
                self.parameters(c, dl, drive, &drive_only, Source::Host(drive), hard_disks)
            }
            0x15 => {
                c.set_ah(0x02); // floppy with change-line support
                c.set_cf(false)?;
                Ok(Flow::Return)
            }
            0x16 if c.host.take_floppy_change(n) => finish(c, dl, STATUS_MEDIA_CHANGED),
            _ => finish(c, dl, STATUS_TIMEOUT),
        }
    }

    fn parameters(
        &self,
        c: &mut Call,
        dl: u8,
        drive: DiskId,
        info: &DiskInfo,
        source: Source,
        hard_disks: u8,
    ) -> Result<Flow, FirmwareError> {
        let (chs, count) = match drive {
            DiskId::Floppy(_) => {
                let (chs, kind) = geometry::floppy(info.sectors);
                let chs = source.geometry().unwrap_or(chs);
                c.set_lo(Reg::Rbx, kind);
                c.set_seg_real(Seg::Es, BIOS_SEGMENT);
                c.set_r16(Reg::Rdi, self.rom.layout.diskette_params);
                let floppies = c.mem.read_u16(bda::EQUIPMENT)?;
                let count = if floppies & 1 != 0 {
                    ((floppies >> 6) & 3) as u8 + 1
                } else {
                    0
                };
                (chs, count)
            }
            DiskId::HardDisk(_) => (
                source
                    .geometry()
                    .unwrap_or_else(|| geometry::hard_disk_logical(info.sectors)),
                hard_disks,
            ),
            DiskId::Cdrom(_) => return finish(c, dl, STATUS_BAD_COMMAND),
        };
        let max_cyl = chs.cylinders - 1;
        c.set_al(0);
        c.set_hi(Reg::Rcx, max_cyl as u8);
        c.set_lo(
            Reg::Rcx,
            chs.sectors_per_track as u8 | ((max_cyl >> 2) & 0xC0) as u8,
        );
        c.set_hi(Reg::Rdx, (chs.heads - 1) as u8);
        c.set_lo(Reg::Rdx, count);
        finish(c, dl, STATUS_OK)
    }
}

/// BDA byte that keeps the last status for this drive class.
fn status_addr(dl: u8) -> u64 {
    if dl < 0x80 {
        bda::FLOPPY_LAST_STATUS
    } else {
        bda::HDD_LAST_STATUS
    }
}

/// Sets AH/CF and remembers the status for AH=01h.
pub(crate) fn finish(c: &mut Call, dl: u8, status: u8) -> Result<Flow, FirmwareError> {
    c.mem.write_u8(status_addr(dl), status)?;
    if status == STATUS_OK {
        c.ok()
    } else {
        c.fail(status)
    }
}

fn chs_of(drive: DiskId, info: &DiskInfo, source: Source) -> Option<Chs> {
    if let Some(chs) = source.geometry() {
        return Some(chs);
    }
    match drive {
        DiskId::Floppy(_) => Some(geometry::floppy(info.sectors).0),
        DiskId::HardDisk(_) => Some(geometry::hard_disk_logical(info.sectors)),
        DiskId::Cdrom(_) => None,
    }
}

fn chs_transfer(
    c: &mut Call,
    dl: u8,
    drive: DiskId,
    info: &DiskInfo,
    source: Source,
    ah: u8,
) -> Result<Flow, FirmwareError> {
    let count = c.al() as u64;
    let Some(chs) = chs_of(drive, info, source) else {
        return finish(c, dl, STATUS_BAD_COMMAND);
    };
    if count == 0 {
        return finish(c, dl, STATUS_BAD_COMMAND);
    }
    let cl = c.lo(Reg::Rcx) as u32;
    let cyl = c.hi(Reg::Rcx) as u32 | (cl & 0xC0) << 2;
    let head = c.hi(Reg::Rdx) as u32;
    let Some(lba) = chs.lba(cyl, head, cl & 0x3F) else {
        c.set_al(0);
        return finish(c, dl, STATUS_SECTOR_NOT_FOUND);
    };
    let addr = c.linear(Seg::Es, c.r16(Reg::Rbx));
    let dir = match ah {
        0x02 => Direction::Read,
        0x03 => Direction::Write,
        _ => Direction::Verify,
    };
    let (done, status) = transfer(c, source, info, lba, count, addr, dir);
    c.set_al(done as u8);
    finish(c, dl, status)
}

/// INT 13h AH=05h on a floppy: the AL sectors of track CH, head DH that the address fields
/// at ES:BX name (cylinder, head, sector, size code; 4 bytes each) are written with the
/// format fill byte of the diskette parameter table INT 1Eh points to. An image holds
/// only sector data, not ID fields, so every field must name one of this track's own
/// 512-byte sectors (N = 2); the fields are all checked before anything is written.
/// Returns the INT 13h status.
fn format_track(
    c: &mut Call,
    drive: DiskId,
    info: &DiskInfo,
    source: Source,
) -> Result<u8, FirmwareError> {
    let Some(chs) = chs_of(drive, info, source) else {
        return Ok(STATUS_BAD_COMMAND);
    };
    let count = c.al() as u32;
    let (cyl, head) = (c.hi(Reg::Rcx) as u32, c.hi(Reg::Rdx) as u32);
    if count == 0 || count > chs.sectors_per_track || info.sector_size != 512 {
        return Ok(STATUS_BAD_COMMAND);
    }
    if info.read_only {
        return Ok(STATUS_WRITE_PROTECTED);
    }
    let mut fields = vec![0u8; count as usize * 4];
    if c.mem
        .read(c.linear(Seg::Es, c.r16(Reg::Rbx)), &mut fields)
        .is_err()
    {
        return Ok(STATUS_DMA_BOUNDARY);
    }
    let mut lbas = Vec::with_capacity(count as usize);
    for f in fields.chunks_exact(4) {
        if f[0] as u32 != cyl || f[1] as u32 != head || f[3] != 2 {
            debug!(
                ?f,
                cyl, head, "INT 13h format: ID field an image cannot hold"
            );
            return Ok(STATUS_BAD_COMMAND);
        }
        let Some(lba) = chs.lba(cyl, head, f[2] as u32) else {
            return Ok(STATUS_SECTOR_NOT_FOUND);
        };
        lbas.push(lba);
    }
    // The parameter table's byte 8 is the fill byte (F6h in ours).
    let dpt = c.mem.read_u16(0x78).and_then(|off| {
        let seg = c.mem.read_u16(0x7A)?;
        c.mem.read_u8(((seg as u64) << 4) + off as u64 + 8)
    });
    let sector = [dpt.unwrap_or(0xF6); 512];
    for lba in lbas {
        if let Err(e) = source.write(c.host, lba, &sector) {
            return Ok(io_status(e));
        }
    }
    Ok(STATUS_OK)
}

fn disk_type(c: &mut Call, drive: DiskId, info: &DiskInfo) -> Result<Flow, FirmwareError> {
    // AH is the drive type here, not a status.
    match drive {
        DiskId::HardDisk(_) => {
            let sectors = info.sectors.min(0xFFFF_FFFF) as u32;
            c.set_r16(Reg::Rcx, (sectors >> 16) as u16);
            c.set_r16(Reg::Rdx, sectors as u16);
            c.set_ah(0x03);
        }
        // Floppy with change-line support; CD-ROMs report the same class.
        DiskId::Floppy(_) | DiskId::Cdrom(_) => c.set_ah(0x02),
    }
    c.set_cf(false)?;
    Ok(Flow::Return)
}

fn edd_check(c: &mut Call, dl: u8, drive: DiskId) -> Result<Flow, FirmwareError> {
    if c.r16(Reg::Rbx) != 0x55AA || matches!(drive, DiskId::Floppy(_)) {
        return finish(c, dl, STATUS_BAD_COMMAND);
    }
    c.set_r16(Reg::Rbx, 0xAA55);
    // Fixed-disk access subset (42h–44h, 47h, 48h) and EDD support (48h with the device
    // path, see `edd_drive_parameters`).
    c.set_r16(Reg::Rcx, 0x0005);
    finish(c, dl, STATUS_OK)?;
    c.set_ah(0x30); // EDD 3.0
    Ok(Flow::Return)
}

fn edd_transfer(
    c: &mut Call,
    dl: u8,
    drive: DiskId,
    info: &DiskInfo,
    source: Source,
    ah: u8,
) -> Result<Flow, FirmwareError> {
    let packet = c.linear(Seg::Ds, c.r16(Reg::Rsi));
    let mut p = [0u8; 0x18];
    if c.mem.read(packet, &mut p[..0x10]).is_err() || p[0] < 0x10 {
        return finish(c, dl, STATUS_BAD_COMMAND);
    }
    let word = |i: usize| u16::from_le_bytes([p[i], p[i + 1]]);
    let count = word(2) as u64;
    let (off, seg) = (word(4), word(6));
    let lba = u64::from_le_bytes(p[8..16].try_into().unwrap_or_default());
    let addr = if p[0] >= 0x18 && off == 0xFFFF && seg == 0xFFFF {
        match c.mem.read_u64(packet + 0x10) {
            Ok(a) => a,
            Err(_) => return finish(c, dl, STATUS_BAD_COMMAND),
        }
    } else {
        real_addr(seg, off)
    };
    let dir = if ah == 0x42 {
        Direction::Read
    } else {
        Direction::Write
    };
    if dir == Direction::Write && matches!(drive, DiskId::Cdrom(_)) {
        c.mem.write_u16(packet + 2, 0)?;
        return finish(c, dl, STATUS_WRITE_PROTECTED);
    }
    let (done, status) = transfer(c, source, info, lba, count, addr, dir);
    c.mem.write_u16(packet + 2, done as u16)?;
    finish(c, dl, status)
}

/// EDD 48h result buffer sizes, by version.
const EDD_1X_LEN: usize = 0x1A;
const EDD_2X_LEN: usize = 0x1E;
/// Phoenix EDD 3.0: an 8-byte device path, 36 bytes of device path information.
const EDD_30_LEN: usize = 0x42;
/// T13 EDD-3 (D1386/D1572): a 16-byte device path, 44 bytes of device path information;
/// the layout Linux's `edd` driver reads (it passes a 0x4A-byte buffer).
const EDD_30_T13_LEN: usize = 0x4A;

/// EDD 48h result buffer, the largest layout the caller's `buffer_size` holds: 1.x
/// (0x1A), 2.x (0x1E, DPTE pointer FFFF:FFFF = none), or 3.0 with the device path
/// (0x42 Phoenix, 0x4A T13) when the drive's location is known. `None`: too small.
pub fn edd_drive_parameters(drive: DiskId, info: &DiskInfo, buffer_size: u16) -> Option<Vec<u8>> {
    let fits = |len: usize| usize::from(buffer_size) >= len;
    let len = match info.location {
        Some(_) if fits(EDD_30_T13_LEN) => EDD_30_T13_LEN,
        Some(_) if fits(EDD_30_LEN) => EDD_30_LEN,
        _ if fits(EDD_2X_LEN) => EDD_2X_LEN,
        _ if fits(EDD_1X_LEN) => EDD_1X_LEN,
        _ => return None,
    };
    let mut b = vec![0u8; len];
    b[0..2].copy_from_slice(&(len as u16).to_le_bytes());
    let (flags, chs) = match drive {
        // DMA boundary errors handled transparently, removable.
        DiskId::Cdrom(_) => (0x0005u16, None),
        _ => match geometry::hard_disk_physical(info.sectors) {
            Some(chs) => (0x0003, Some(chs)),
            None => (0x0001, None),
        },
    };
    b[2..4].copy_from_slice(&flags.to_le_bytes());
    let (cyl, heads, spt) = match chs {
        Some(g) => (g.cylinders, g.heads, g.sectors_per_track),
        None if matches!(drive, DiskId::Cdrom(_)) => (0, 0, 0),
        None => (16383, 16, 63),
    };
    b[4..8].copy_from_slice(&cyl.to_le_bytes());
    b[8..12].copy_from_slice(&heads.to_le_bytes());
    b[12..16].copy_from_slice(&spt.to_le_bytes());
    b[16..24].copy_from_slice(&info.sectors.to_le_bytes());
    b[24..26].copy_from_slice(&(info.sector_size as u16).to_le_bytes());
    if len >= EDD_2X_LEN {
        b[26..30].copy_from_slice(&0xFFFF_FFFFu32.to_le_bytes());
    }
    if let Some(location) = info.location.filter(|_| len >= EDD_30_LEN) {
        edd_device_path(&mut b, drive, location);
    }
    Some(b)
}

/// Fills EDD 3.0's device path information (offset 1Eh to the end): the controller's PCI
/// function and the drive's place on it, closed by a checksum over those bytes.
fn edd_device_path(b: &mut [u8], drive: DiskId, location: DiskLocation) {
    let t13 = b.len() == EDD_30_T13_LEN;
    b[0x1E..0x20].copy_from_slice(&0xBEDDu16.to_le_bytes());
    b[0x20] = (b.len() - 0x1E) as u8; // 44 (T13) or 36 (Phoenix), key to checksum
    b[0x24..0x28].copy_from_slice(b"PCI ");
    let (interface, device_path): (&[u8; 8], [u8; 2]) = match (location.port, drive) {
        (DiskPort::Ide { slave, .. }, DiskId::Cdrom(_)) => (b"ATAPI   ", [u8::from(slave), 0]),
        (DiskPort::Ide { slave, .. }, _) => (b"ATA     ", [u8::from(slave), 0]),
        // Port number, then the port multiplier port (none).
        (DiskPort::Sata { port }, _) => (b"SATA    ", [port, 0]),
    };
    b[0x28..0x30].copy_from_slice(interface);
    b[0x30] = location.pci_bus;
    b[0x31] = location.pci_device;
    b[0x32] = location.pci_function;
    // T13 names the IDE channel next to the function; Phoenix leaves it reserved.
    if let (true, DiskPort::Ide { channel, .. }) = (t13, location.port) {
        b[0x33] = channel;
    }
    b[0x38..0x3A].copy_from_slice(&device_path);
    let last = b.len() - 1;
    let sum = b[0x1E..last].iter().fold(0u8, |s, x| s.wrapping_add(*x));
    b[last] = sum.wrapping_neg();
}

fn edd_parameters(
    c: &mut Call,
    dl: u8,
    drive: DiskId,
    info: &DiskInfo,
) -> Result<Flow, FirmwareError> {
    if matches!(drive, DiskId::Floppy(_)) {
        return finish(c, dl, STATUS_BAD_COMMAND);
    }
    let buf = c.linear(Seg::Ds, c.r16(Reg::Rsi));
    let Ok(size) = c.mem.read_u16(buf) else {
        return finish(c, dl, STATUS_BAD_COMMAND);
    };
    let Some(bytes) = edd_drive_parameters(drive, info, size) else {
        return finish(c, dl, STATUS_BAD_COMMAND);
    };
    if c.mem.write(buf, &bytes).is_err() {
        return finish(c, dl, STATUS_BAD_COMMAND);
    }
    finish(c, dl, STATUS_OK)
}

/// Host-side helper for boot code: read whole sectors into a fresh buffer.
pub fn read_sectors(
    host: &mut dyn FirmwareHost,
    drive: DiskId,
    lba: u64,
    count: usize,
    sector_size: usize,
) -> Result<Vec<u8>, DiskIoError> {
    let mut buf = vec![0u8; count * sector_size];
    host.disk_read(drive, lba, &mut buf)?;
    Ok(buf)
}
