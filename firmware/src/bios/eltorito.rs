//! El Torito CD boot: boot record volume descriptor, boot catalog, and INT 13h 4B00/4B01.
//! Only no-emulation images are supported (what isolinux, GRUB and Windows Setup use).

use aero_cpu::{Reg, Seg};
use thiserror::Error;

use super::Bios;
use super::call::{Call, Flow};
use super::disk::{CDROM_DRIVE, STATUS_BAD_COMMAND, STATUS_OK, finish};
use super::error::FirmwareError;

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
    #[error("emulation mode {0} is not supported (only no-emulation)")]
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
    if media != 0 {
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

/// The 13h-byte specification packet of INT 13h 4B00/4B01.
pub fn specification_packet(image: &BootImage) -> [u8; 0x13] {
    let mut p = [0u8; 0x13];
    p[0] = 0x13;
    p[1] = image.media;
    p[2] = CDROM_DRIVE;
    p[3] = 0; // controller index
    p[4..8].copy_from_slice(&image.load_rba.to_le_bytes());
    p[0x0C..0x0E].copy_from_slice(&image.load_segment.to_le_bytes());
    p[0x0E..0x10].copy_from_slice(&image.sector_count.to_le_bytes());
    p
}

impl Bios {
    /// INT 13h AH=4Bh: AL=00 terminate emulation, AL=01 get status. With no emulation
    /// there is nothing to terminate; both return the packet.
    pub(crate) fn int13_eltorito(&mut self, c: &mut Call) -> Result<Flow, FirmwareError> {
        let dl = c.lo(Reg::Rdx);
        let (Some(image), 0x00 | 0x01) = (self.state.cd_boot, c.al()) else {
            return finish(c, dl, STATUS_BAD_COMMAND);
        };
        let at = c.linear(Seg::Ds, c.r16(Reg::Rsi));
        if c.mem.write(at, &specification_packet(&image)).is_err() {
            return finish(c, dl, STATUS_BAD_COMMAND);
        }
        finish(c, dl, STATUS_OK)
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
        let p = specification_packet(&img);
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
        c[33] = 2; // 1.44 MB floppy emulation
        assert_eq!(parse_catalog(&c), Err(ElToritoError::UnsupportedMedia(2)));
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
}
