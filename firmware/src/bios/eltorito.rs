//! El Torito CD boot: boot record volume descriptor, boot catalog, and INT 13h 4B00/4B01.
//! No-emulation images (isolinux, GRUB, Windows Setup) run with DL = E0h. Floppy
//! emulation (1.2/1.44/2.88 MB; memtest86+, DOS and firmware-update CDs) and hard disk
//! emulation images become drive 00h or 80h: INT 13h reads them out of the CD, the real
//! drives of that class move up by one, until INT 13h 4B00h ends the emulation.

use aero_cpu::{Reg, Seg};
use thiserror::Error;

use super::Bios;
use super::bda;
use super::call::{Call, Flow};
use super::disk::{CDROM_DRIVE, STATUS_BAD_COMMAND, STATUS_OK, finish};
use super::error::{DiskIoError, FirmwareError};
use super::geometry::{self, Chs};
use super::host::{DiskId, DiskInfo, FirmwareHost};

/// The boot record volume descriptor sits in the second descriptor slot.
pub const BOOT_RECORD_LBA: u64 = 17;
pub const CD_SECTOR: usize = 2048;

#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
pub enum ElToritoError {
    #[error("sector 17 is not an El Torito boot record")]
    NotBootRecord,
    #[error("boot catalog validation entry is invalid")]
    BadValidationEntry,
    #[error("initial catalog entry is not bootable")]
    NotBootable,
    #[error("unknown emulation mode {0}")]
    UnsupportedMedia(u8),
    #[error("input too short")]
    Truncated,
    #[error(
        "boot image at {segment:04X}:0000 with {sectors} sectors does not fit in conventional memory"
    )]
    ImageTooLarge { segment: u16, sectors: u16 },
}

/// The default boot entry of a catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BootImage {
    pub load_segment: u16,
    /// Count of 512-byte virtual sectors to load.
    pub sector_count: u16,
    /// CD sector (2048 bytes) of the image.
    pub load_rba: u32,
    pub media: u8,
}

impl BootImage {
    /// Bytes to load (at least one virtual sector).
    pub fn load_bytes(&self) -> usize {
        self.sector_count.max(1) as usize * 512
    }
}

/// Catalog LBA from the boot record volume descriptor.
pub fn catalog_lba(descriptor: &[u8]) -> Result<u32, ElToritoError> {
    let d = descriptor.get(..0x4B).ok_or(ElToritoError::Truncated)?;
    const ID: &[u8] = b"EL TORITO SPECIFICATION";
    if d[0] != 0 || &d[1..6] != b"CD001" || d[6] != 1 || &d[7..7 + ID.len()] != ID {
        return Err(ElToritoError::NotBootRecord);
    }
    Ok(u32::from_le_bytes([d[0x47], d[0x48], d[0x49], d[0x4A]]))
}

/// Validates the catalog and returns its initial/default entry.
pub fn parse_catalog(catalog: &[u8]) -> Result<BootImage, ElToritoError> {
    let c = catalog.get(..64).ok_or(ElToritoError::Truncated)?;
    let validation = &c[..32];
    let sum = validation.chunks_exact(2).fold(0u16, |s, w| {
        s.wrapping_add(u16::from_le_bytes([w[0], w[1]]))
    });
    if validation[0] != 1 || validation[0x1E] != 0x55 || validation[0x1F] != 0xAA || sum != 0 {
        return Err(ElToritoError::BadValidationEntry);
    }
    let e = &c[32..64];
    if e[0] != 0x88 {
        return Err(ElToritoError::NotBootable);
    }
    let media = e[1] & 0x0F;
    if media > MEDIA_HARD_DISK {
        return Err(ElToritoError::UnsupportedMedia(media));
    }
    let segment = u16::from_le_bytes([e[2], e[3]]);
    let image = BootImage {
        load_segment: if segment == 0 { 0x07C0 } else { segment },
        sector_count: u16::from_le_bytes([e[6], e[7]]),
        load_rba: u32::from_le_bytes([e[8], e[9], e[10], e[11]]),
        media,
    };
    // Must fit between the load address and the EBDA/VGA area at 0x9FC00.
    let end = ((image.load_segment as usize) << 4) + image.load_bytes();
    if image.load_segment < 0x50 || end > 0x9FC00 {
        return Err(ElToritoError::ImageTooLarge {
            segment: image.load_segment,
            sectors: image.sector_count,
        });
    }
    Ok(image)
}

/// Boot media types of a catalog entry (bits 0–3).
pub const MEDIA_NO_EMULATION: u8 = 0;
pub const MEDIA_HARD_DISK: u8 = 4;

/// A disk image inside the CD that the BIOS presents as drive 00h or 80h.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Emulation {
    /// Drive 00h (floppy) rather than 80h (hard disk).
    pub floppy: bool,
    /// CD sector where the image starts.
    pub rba: u32,
    /// 512-byte sectors in the image.
    pub sectors: u64,
    pub chs: Chs,
}

impl Emulation {
    /// The BIOS drive number the image answers to.
    pub fn drive_number(&self) -> u8 {
        if self.floppy { 0x00 } else { 0x80 }
    }

    /// The emulated drive's BIOS identity.
    pub fn disk_id(&self) -> DiskId {
        if self.floppy {
            DiskId::Floppy(0)
        } else {
            DiskId::HardDisk(0)
        }
    }

    pub fn info(&self) -> DiskInfo {
        DiskInfo {
            sectors: self.sectors,
            sector_size: 512,
            read_only: true,
            location: None,
        }
    }
}

/// The emulated drive for a catalog entry: floppies by media type; a hard disk image is
/// sized and shaped by the partition table in its first sector (`mbr`), the geometry its
/// boot code was written for. `cd_sectors` bounds the image to the disc.
pub fn emulation_for(image: &BootImage, mbr: &[u8], cd_sectors: u64) -> Option<Emulation> {
    let floppy_sectors = match image.media {
        1 => Some(2400),
        2 => Some(2880),
        3 => Some(5760),
        MEDIA_HARD_DISK => None,
        _ => return None,
    };
    let available = cd_sectors
        .checked_sub(u64::from(image.load_rba))?
        .saturating_mul((CD_SECTOR / 512) as u64);
    let (sectors, chs) = match floppy_sectors {
        Some(n) => (n, geometry::floppy(n).0),
        None => hard_disk_shape(mbr, available)?,
    };
    Some(Emulation {
        floppy: floppy_sectors.is_some(),
        rba: image.load_rba,
        sectors: sectors.min(available),
        chs,
    })
}

/// Size and geometry of an emulated hard disk from its MBR: the end of the furthest
/// partition, heads and sectors per track from the partition entries' ending CHS.
fn hard_disk_shape(mbr: &[u8], available: u64) -> Option<(u64, Chs)> {
    let table = mbr.get(0x1BE..0x1FE)?;
    let mut end = 0u64;
    let mut shape = None;
    for e in table.chunks_exact(16) {
        let start = u64::from(u32::from_le_bytes([e[8], e[9], e[10], e[11]]));
        let count = u64::from(u32::from_le_bytes([e[12], e[13], e[14], e[15]]));
        if e[4] == 0 || count == 0 {
            continue;
        }
        end = end.max(start + count);
        let (heads, spt) = (u32::from(e[5]) + 1, u32::from(e[6] & 0x3F));
        if shape.is_none() && spt != 0 {
            shape = Some((heads, spt));
        }
    }
    let sectors = end.min(available);
    if sectors == 0 {
        return None;
    }
    let chs = match shape {
        Some((heads, spt)) => Chs {
            cylinders: sectors.div_ceil(u64::from(heads * spt)).clamp(1, 1024) as u32,
            heads,
            sectors_per_track: spt,
        },
        None => geometry::hard_disk_logical(sectors),
    };
    Some((sectors, chs))
}

/// Reads whole 512-byte sectors of an emulated image out of the CD.
pub fn read_emulated(
    host: &mut dyn FirmwareHost,
    e: &Emulation,
    lba: u64,
    buf: &mut [u8],
) -> Result<(), DiskIoError> {
    let count = (buf.len() / 512) as u64;
    if lba.checked_add(count).is_none_or(|end| end > e.sectors) {
        return Err(DiskIoError::OutOfRange);
    }
    let offset = u64::from(e.rba) * CD_SECTOR as u64 + lba * 512;
    let first = offset / CD_SECTOR as u64;
    let skip = (offset % CD_SECTOR as u64) as usize;
    let cd_sectors = (skip + buf.len()).div_ceil(CD_SECTOR);
    let mut cd = vec![0u8; cd_sectors * CD_SECTOR];
    host.disk_read(DiskId::Cdrom(0), first, &mut cd)?;
    buf.copy_from_slice(&cd[skip..skip + buf.len()]);
    Ok(())
}

/// The 13h-byte specification packet of INT 13h 4B00/4B01.
pub fn specification_packet(image: &BootImage, emulation: Option<&Emulation>) -> [u8; 0x13] {
    let mut p = [0u8; 0x13];
    p[0] = 0x13;
    p[1] = image.media;
    p[2] = emulation.map_or(CDROM_DRIVE, Emulation::drive_number);
    p[3] = 0; // controller index
    p[4..8].copy_from_slice(&image.load_rba.to_le_bytes());
    p[0x0C..0x0E].copy_from_slice(&image.load_segment.to_le_bytes());
    p[0x0E..0x10].copy_from_slice(&image.sector_count.to_le_bytes());
    if let Some(e) = emulation {
        // INT 13h 08h style: cylinder low byte, sectors with cylinder bits 8–9, heads.
        let max_cyl = e.chs.cylinders.saturating_sub(1);
        p[0x10] = max_cyl as u8;
        p[0x11] = e.chs.sectors_per_track as u8 | ((max_cyl >> 2) & 0xC0) as u8;
        p[0x12] = e.chs.heads.saturating_sub(1) as u8;
    }
    p
}

impl Bios {
    /// INT 13h AH=4Bh: AL=01 get status, AL=00 the same and then end the emulation (the
    /// real drives get their numbers back). Without an El Torito boot: error.
    pub(crate) fn int13_eltorito(&mut self, c: &mut Call) -> Result<Flow, FirmwareError> {
        let dl = c.lo(Reg::Rdx);
        let (Some(image), 0x00 | 0x01) = (self.state.cd_boot, c.al()) else {
            return finish(c, dl, STATUS_BAD_COMMAND);
        };
        let at = c.linear(Seg::Ds, c.r16(Reg::Rsi));
        let packet = specification_packet(&image, self.state.emulation.as_ref());
        if c.mem.write(at, &packet).is_err() {
            return finish(c, dl, STATUS_BAD_COMMAND);
        }
        if c.al() == 0x00 && self.state.emulation.take().is_some() {
            self.write_drive_counts(c)?;
        }
        finish(c, dl, STATUS_OK)
    }

    /// BDA equipment word (floppy count) and hard disk count as INT 13h sees the drives.
    pub(crate) fn write_drive_counts(&self, c: &mut Call) -> Result<(), FirmwareError> {
        let floppies = self.floppy_count(c) as u16;
        let mut equipment = c.mem.read_u16(bda::EQUIPMENT)? & !0x00C1;
        if floppies > 0 {
            equipment |= 1 | ((floppies - 1) << 6);
        }
        c.mem.write_u16(bda::EQUIPMENT, equipment)?;
        c.mem.write_u8(bda::HDD_COUNT, self.hard_disk_count(c))?;
        Ok(())
    }
}

/// Builders of valid El Torito structures for tests.
#[cfg(test)]
pub(crate) mod test_data {
    use super::CD_SECTOR;

    pub(crate) fn boot_record(catalog: u32) -> Vec<u8> {
        let mut d = vec![0u8; CD_SECTOR];
        d[1..6].copy_from_slice(b"CD001");
        d[6] = 1;
        d[7..30].copy_from_slice(b"EL TORITO SPECIFICATION");
        d[0x47..0x4B].copy_from_slice(&catalog.to_le_bytes());
        d
    }

    pub(crate) fn catalog(segment: u16, count: u16, rba: u32) -> Vec<u8> {
        let mut c = vec![0u8; CD_SECTOR];
        c[0] = 1;
        c[0x1E] = 0x55;
        c[0x1F] = 0xAA;
        let sum = c[..32].chunks_exact(2).fold(0u16, |s, w| {
            s.wrapping_add(u16::from_le_bytes([w[0], w[1]]))
        });
        c[0x1C..0x1E].copy_from_slice(&0u16.wrapping_sub(sum).to_le_bytes());
        c[32] = 0x88;
        c[34..36].copy_from_slice(&segment.to_le_bytes());
        c[38..40].copy_from_slice(&count.to_le_bytes());
        c[40..44].copy_from_slice(&rba.to_le_bytes());
        c
    }
}

#[cfg(test)]
mod tests {
    use super::test_data::*;
    use super::*;

    #[test]
    fn valid_catalog() {
        assert_eq!(catalog_lba(&boot_record(19)), Ok(19));
        let img = parse_catalog(&catalog(0, 4, 30)).unwrap();
        assert_eq!(
            img,
            BootImage {
                load_segment: 0x07C0,
                sector_count: 4,
                load_rba: 30,
                media: 0
            }
        );
        let p = specification_packet(&img, None);
        assert_eq!((p[0], p[2]), (0x13, 0xE0));
        assert_eq!(u32::from_le_bytes([p[4], p[5], p[6], p[7]]), 30);
    }

    #[test]
    fn hostile_and_truncated_input_is_rejected_without_panic() {
        assert_eq!(catalog_lba(&[]), Err(ElToritoError::Truncated));
        assert_eq!(
            catalog_lba(&boot_record(1)[..0x4A]),
            Err(ElToritoError::Truncated)
        );
        let mut bad = boot_record(1);
        bad[3] = b'X';
        assert_eq!(catalog_lba(&bad), Err(ElToritoError::NotBootRecord));
        for len in 0..64 {
            assert_eq!(
                parse_catalog(&catalog(0, 4, 30)[..len]),
                Err(ElToritoError::Truncated)
            );
        }
        let mut c = catalog(0, 4, 30);
        c[4] ^= 1; // checksum now wrong
        assert_eq!(parse_catalog(&c), Err(ElToritoError::BadValidationEntry));
        let mut c = catalog(0, 4, 30);
        c[32] = 0;
        assert_eq!(parse_catalog(&c), Err(ElToritoError::NotBootable));
        let mut c = catalog(0, 4, 30);
        c[33] = 5; // media types stop at 4 (hard disk)
        assert_eq!(parse_catalog(&c), Err(ElToritoError::UnsupportedMedia(5)));
        assert!(matches!(
            parse_catalog(&catalog(0x9000, 0xFFFF, 1)),
            Err(ElToritoError::ImageTooLarge { .. })
        ));
        assert!(matches!(
            parse_catalog(&catalog(0x0001, 1, 1)),
            Err(ElToritoError::ImageTooLarge { .. })
        ));
        // Arbitrary garbage never panics.
        let mut x = 0x1234_5678u32;
        for _ in 0..2000 {
            let mut buf = vec![0u8; (x % 80) as usize];
            for b in &mut buf {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *b = x as u8;
            }
            let _ = parse_catalog(&buf);
            let _ = catalog_lba(&buf);
        }
    }

    #[test]
    fn emulated_drive_shapes() {
        let floppy = BootImage {
            load_segment: 0x07C0,
            sector_count: 1,
            load_rba: 30,
            media: 2,
        };
        let e = emulation_for(&floppy, &[], 1000).unwrap();
        assert!(e.floppy);
        assert_eq!((e.sectors, e.rba, e.drive_number()), (2880, 30, 0x00));
        assert_eq!(
            (e.chs.cylinders, e.chs.heads, e.chs.sectors_per_track),
            (80, 2, 18)
        );
        // A disc too short for the whole image: the drive ends with the disc.
        assert_eq!(emulation_for(&floppy, &[], 100).unwrap().sectors, 70 * 4);
        assert_eq!(emulation_for(&floppy, &[], 20), None);

        // Hard disk image: one partition from 63 to 63 + 16065, ending at head 254,
        // sector 63 (the classic 255x63 shape).
        let mut mbr = vec![0u8; 512];
        let entry = &mut mbr[0x1BE..0x1CE];
        entry[4] = 0x06;
        entry[5] = 254;
        entry[6] = 63;
        entry[8..12].copy_from_slice(&63u32.to_le_bytes());
        entry[12..16].copy_from_slice(&16065u32.to_le_bytes());
        let disk = BootImage {
            media: MEDIA_HARD_DISK,
            ..floppy
        };
        let e = emulation_for(&disk, &mbr, 100_000).unwrap();
        assert!(!e.floppy);
        assert_eq!((e.sectors, e.drive_number()), (16128, 0x80));
        assert_eq!(
            (e.chs.cylinders, e.chs.heads, e.chs.sectors_per_track),
            (2, 255, 63)
        );
        // No partitions: nothing to size the disk by.
        assert_eq!(emulation_for(&disk, &[0u8; 512], 100_000), None);
        assert_eq!(emulation_for(&disk, &[], 100_000), None);
        let p = specification_packet(&disk, Some(&e));
        assert_eq!(
            (p[1], p[2], p[0x10], p[0x11], p[0x12]),
            (4, 0x80, 1, 63, 254)
        );
    }
}
