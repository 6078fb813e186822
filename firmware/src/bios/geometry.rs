//! CHS geometries the BIOS reports for floppies and hard disks.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chs {
    pub cylinders: u32,
    pub heads: u32,
    pub sectors_per_track: u32,
}

impl Chs {
    /// LBA of a 1-based CHS address, if it lies inside the geometry.
    pub fn lba(&self, cyl: u32, head: u32, sector: u32) -> Option<u64> {
        if sector == 0
            || sector > self.sectors_per_track
            || head >= self.heads
            || cyl >= self.cylinders
        {
            return None;
        }
        Some(
            (cyl as u64 * self.heads as u64 + head as u64) * self.sectors_per_track as u64
                + sector as u64
                - 1,
        )
    }
}

/// Standard diskette formats by total 512-byte sectors, with their INT 13h/08h type code.
pub fn floppy(sectors: u64) -> (Chs, u8) {
    let (cylinders, heads, spt, kind) = match sectors {
        320 => (40, 1, 8, 1),
        360 => (40, 1, 9, 1),
        640 => (40, 2, 8, 1),
        720 => (40, 2, 9, 1),
        1440 => (80, 2, 9, 3),
        2400 => (80, 2, 15, 2),
        2880 => (80, 2, 18, 4),
        3360 => (80, 2, 21, 4), // DMF
        5760 => (80, 2, 36, 5),
        // Odd image: pretend 1.44 MB geometry with as many cylinders as needed.
        n => (n.div_ceil(36).clamp(1, 255) as u32, 2, 18, 4),
    };
    (
        Chs {
            cylinders,
            heads,
            sectors_per_track: spt,
        },
        kind,
    )
}

/// The translated (LBA-assisted) geometry for INT 13h/02h–08h: 63 sectors, the fewest
/// heads (16..255) that keep the cylinder count at or below 1024.
pub fn hard_disk_logical(sectors: u64) -> Chs {
    let spt = 63u64;
    let mut heads = 16u64;
    for h in [16u64, 32, 64, 128, 255] {
        heads = h;
        if sectors / (h * spt) <= 1024 {
            break;
        }
    }
    let cylinders = (sectors / (heads * spt)).clamp(1, 1024);
    Chs {
        cylinders: cylinders as u32,
        heads: heads as u32,
        sectors_per_track: spt as u32,
    }
}

/// The ATA default geometry reported by EDD 48h; `None` when the disk is too big for it.
pub fn hard_disk_physical(sectors: u64) -> Option<Chs> {
    const LIMIT: u64 = 16383 * 16 * 63;
    (sectors <= LIMIT).then(|| Chs {
        cylinders: (sectors / (16 * 63)).max(1) as u32,
        heads: 16,
        sectors_per_track: 63,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floppy_formats() {
        let (g, kind) = floppy(2880);
        assert_eq!(
            (g.cylinders, g.heads, g.sectors_per_track, kind),
            (80, 2, 18, 4)
        );
        assert_eq!(g.lba(0, 0, 1), Some(0));
        assert_eq!(g.lba(0, 1, 1), Some(18));
        assert_eq!(g.lba(79, 1, 18), Some(2879));
        assert_eq!(g.lba(80, 0, 1), None);
        assert_eq!(g.lba(0, 0, 0), None);
        assert_eq!(floppy(0).0.cylinders, 1);
    }

    #[test]
    fn hard_disk_translation_stays_below_1024_cylinders() {
        for sectors in [2048u64, 1 << 20, 16 << 20, 1 << 24, 1 << 32] {
            let g = hard_disk_logical(sectors);
            assert!(g.cylinders <= 1024 && g.cylinders >= 1);
            assert_eq!(g.sectors_per_track, 63);
        }
        let g = hard_disk_logical(1 << 21); // 1 GiB
        assert_eq!(g.heads, 64);
        assert!(hard_disk_physical(1 << 30).is_none());
        assert_eq!(hard_disk_physical(1 << 21).unwrap().heads, 16);
    }
}
