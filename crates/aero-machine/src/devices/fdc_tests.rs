//! The floppy controller driven through its ports the way a driver does it.

use super::*;
use crate::devices::test_ram::Ram;
use aero_storage::{MemoryDisk, SharedDisk};

const DOR: u16 = 0x3F2;
const MSR: u16 = 0x3F4;
const FIFO: u16 = 0x3F5;
const DIR: u16 = 0x3F7;

/// Contents of sector `lba` of the test image.
fn pattern(lba: u64) -> Vec<u8> {
    (0..SECTOR)
        .map(|i| (lba as usize * 7 + i * 3 + (lba as usize >> 8)) as u8)
        .collect()
}

struct Rig {
    fdc: Fdc,
    dma: Dma8237,
    ram: Ram,
    disk: SharedDisk,
}

impl Rig {
    /// A 1.44 MB image in drive 0, the controller out of reset with DMA/IRQ gate on.
    fn new(read_only: bool) -> Rig {
        let image: Vec<u8> = (0..2880).flat_map(pattern).collect();
        let disk = SharedDisk::new(Box::new(MemoryDisk::new(image, 512, read_only).unwrap()));
        let mut fdc = Fdc::new();
        let format = fdc.insert_disk(0, Box::new(disk.clone())).unwrap();
        assert_eq!(
            (format.cylinders, format.heads, format.sectors),
            (80, 2, 18)
        );
        let mut rig = Rig {
            fdc,
            dma: Dma8237::new(),
            ram: Ram(vec![0; 0x20000]),
            disk,
        };
        rig.out(DOR, 0x00);
        rig.out(DOR, 0x1C);
        for _ in 0..4 {
            rig.sense();
        }
        rig.fdc.take_irq_pulse();
        rig
    }

    fn out(&mut self, port: u16, value: u8) {
        self.fdc.io_write(port, 1, u32::from(value));
    }

    fn inb(&mut self, port: u16) -> u8 {
        self.fdc.io_read(port, 1) as u8
    }

    /// Sends a command the way a driver does: wait for RQM with DIO clear, write a byte.
    fn command(&mut self, bytes: &[u8]) {
        for &b in bytes {
            let msr = self.inb(MSR);
            assert_eq!(
                msr & 0xC0,
                0x80,
                "controller not ready for {bytes:02x?}: {msr:#x}"
            );
            self.out(FIFO, b);
        }
    }

    /// Reads the result phase.
    fn results(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        while self.inb(MSR) & 0xC0 == 0xC0 {
            out.push(self.inb(FIFO));
            assert!(out.len() <= 16, "endless result phase");
        }
        assert_eq!(self.inb(MSR), 0x80, "controller not idle after the results");
        out
    }

    fn sense(&mut self) -> Vec<u8> {
        self.command(&[0x08]);
        self.results()
    }

    fn seek(&mut self, drive_head: u8, cylinder: u8) {
        self.command(&[0x0F, drive_head, cylinder]);
        assert!(self.fdc.take_irq_pulse(), "seek did not interrupt");
        assert_eq!(self.sense(), vec![0x20 | drive_head, cylinder]);
    }

    /// Channel 2, single mode, `len` bytes at `addr`.
    fn program_dma(&mut self, addr: u32, len: u16, to_memory: bool) {
        let d = &mut self.dma;
        let mut o = |port: u16, v: u32| d.io_write(port, 1, v);
        o(0x0A, 0x06);
        o(0x0C, 0);
        o(0x04, addr & 0xFF);
        o(0x04, (addr >> 8) & 0xFF);
        o(0x81, (addr >> 16) & 0xFF);
        o(0x0C, 0);
        o(0x05, u32::from(len - 1) & 0xFF);
        o(0x05, u32::from(len - 1) >> 8);
        o(0x0B, if to_memory { 0x46 } else { 0x4A });
        o(0x0A, 0x02);
    }

    fn run_dma(&mut self) {
        assert!(self.fdc.dma_pending(), "no DMA transfer waiting");
        self.fdc.service_dma(&mut self.dma, &mut self.ram);
    }

    fn disk_sector(&mut self, lba: u64) -> Vec<u8> {
        let mut buf = vec![0; SECTOR];
        self.disk.read_sectors(lba, &mut buf).unwrap();
        buf
    }
}

#[test]
fn power_on_state_is_idle_with_no_interrupt() {
    let mut fdc = Fdc::new();
    assert_eq!(fdc.io_read(DOR, 1), 0x0C);
    assert_eq!(fdc.io_read(MSR, 1), 0x80);
    // Linux's first DOR writes (0x04, then 0x0C) must not raise a reset interrupt.
    fdc.io_write(DOR, 1, 0x04);
    fdc.io_write(DOR, 1, 0x0C);
    assert!(!fdc.irq_level() && !fdc.take_irq_pulse());
    fdc.io_write(FIFO, 1, 0x08);
    assert_eq!(fdc.io_read(FIFO, 1), 0x80, "nothing to sense");
}

#[test]
fn reset_reports_four_polled_drives_then_nothing() {
    let mut rig = Rig::new(false);
    rig.out(DOR, 0x0C);
    assert_eq!(rig.inb(MSR), 0x80);
    rig.out(DOR, 0x08); // reset asserted
    assert_eq!(rig.inb(MSR), 0, "controller answers while held in reset");
    assert!(!rig.fdc.irq_level());
    rig.out(DOR, 0x0C);
    assert!(rig.fdc.irq_level() && rig.fdc.take_irq_pulse());
    for drive in 0..4 {
        assert_eq!(rig.sense(), vec![0xC0 | drive, 0]);
        // One interrupt for the reset, however many polls are read.
        assert!(!rig.fdc.irq_level() && !rig.fdc.take_irq_pulse());
    }
    assert!(!rig.fdc.irq_level());
    assert_eq!(rig.sense(), vec![0x80], "no interrupt pending");
    // The DOR gate hides the interrupt (PC-AT mode); DSR bit 7 resets too.
    rig.out(DOR, 0x04);
    rig.out(MSR, 0x80);
    assert!(!rig.fdc.irq_level());
    rig.out(DOR, 0x0C);
    assert!(rig.fdc.irq_level());
    assert_eq!(rig.sense(), vec![0xC0, 0]);
}

#[test]
fn recalibrate_seek_and_drive_status() {
    let mut rig = Rig::new(false);
    rig.command(&[0x03, 0xDF, 0x02]); // SPECIFY: no result phase
    assert_eq!(rig.inb(MSR), 0x80);
    rig.seek(0x04, 40);
    rig.command(&[0x04, 0x04]);
    assert_eq!(
        rig.results(),
        vec![0x20 | 0x08 | 0x04],
        "ST3 away from track 0"
    );
    rig.command(&[0x07, 0x00]);
    assert!(rig.fdc.take_irq_pulse());
    assert_eq!(rig.sense(), vec![0x20, 0]);
    rig.command(&[0x04, 0x00]);
    assert_eq!(rig.results(), vec![0x20 | 0x10 | 0x08], "ST3 at track 0");
    // Relative seeks: out by 5, in by 10 (stops at 0).
    rig.command(&[0xCF, 0x00, 5]);
    assert_eq!(rig.sense(), vec![0x20, 5]);
    rig.command(&[0x8F, 0x00, 10]);
    assert_eq!(rig.sense(), vec![0x20, 0]);
    // Drive 1 is not installed: recalibrate fails with equipment check.
    rig.command(&[0x07, 0x01]);
    assert_eq!(rig.sense(), vec![0x70 | 0x01, 0]);
}

#[test]
fn reads_a_sector_by_pio() {
    let mut rig = Rig::new(false);
    rig.command(&[0x03, 0xDF, 0x03]); // ND: non-DMA
    rig.seek(0x04, 1);
    rig.command(&[0x46, 0x04, 1, 1, 3, 2, 3, 0x1B, 0xFF]);
    assert!(rig.fdc.take_irq_pulse(), "non-DMA mode interrupts for data");
    let mut data = Vec::new();
    for _ in 0..SECTOR {
        assert_eq!(rig.inb(MSR), 0xF0, "RQM|DIO|NDMA|CB while data waits");
        data.push(rig.inb(FIFO));
    }
    assert_eq!(data, pattern((2 + 1) * 18 + 2), "C1 H1 S3");
    // Without terminal count the read runs past EOT: end of cylinder.
    assert!(rig.fdc.take_irq_pulse());
    assert_eq!(rig.results(), vec![0x44, 0x80, 0x00, 2, 1, 1, 2]);
}

#[test]
fn reads_two_sectors_across_heads_by_dma() {
    let mut rig = Rig::new(false);
    rig.command(&[0x03, 0xDF, 0x02]);
    rig.program_dma(0x1_2340, 1024, true);
    // Multi-track read from H0 S18: the second sector is H1 S1.
    rig.command(&[0xC6, 0x00, 0, 0, 18, 2, 18, 0x1B, 0xFF]);
    assert_eq!(rig.inb(MSR) & 0x80, 0, "no RQM during DMA execution");
    rig.run_dma();
    assert_eq!(&rig.ram.0[0x1_2340..0x1_2540], &pattern(17)[..]);
    assert_eq!(&rig.ram.0[0x1_2540..0x1_2740], &pattern(18)[..]);
    assert_eq!(rig.ram.0[0x1_2740], 0, "wrote past the DMA count");
    assert!(rig.fdc.take_irq_pulse());
    assert_eq!(rig.results(), vec![0x04, 0, 0, 0, 1, 2, 2]);
    assert_eq!(
        rig.dma.io_read(0x08, 1) & 0x04,
        0x04,
        "terminal count on channel 2"
    );
}

#[test]
fn dma_waits_for_the_channel_and_the_gate() {
    let mut rig = Rig::new(false);
    rig.command(&[0xE6, 0x00, 0, 0, 1, 2, 18, 0x1B, 0xFF]);
    // Channel still masked: nothing moves, the command stays in execution.
    rig.run_dma();
    assert!(rig.fdc.dma_pending());
    rig.out(DOR, 0x14); // gate off
    assert!(!rig.fdc.dma_pending());
    rig.out(DOR, 0x1C);
    rig.program_dma(0x800, 512, true);
    rig.run_dma();
    assert_eq!(&rig.ram.0[0x800..0xA00], &pattern(0)[..]);
    assert_eq!(rig.results(), vec![0x00, 0, 0, 0, 0, 2, 2]);
}

#[test]
fn writes_by_dma_and_reads_back_by_pio() {
    let mut rig = Rig::new(false);
    let data: Vec<u8> = (0..SECTOR).map(|i| (i * 13 + 5) as u8).collect();
    rig.ram.0[0x4000..0x4200].copy_from_slice(&data);
    rig.seek(0x00, 79);
    rig.program_dma(0x4000, 512, false);
    rig.command(&[0x45, 0x00, 79, 0, 18, 2, 18, 0x1B, 0xFF]);
    rig.run_dma();
    assert_eq!(rig.results(), vec![0x00, 0, 0, 80, 0, 1, 2]);
    assert_eq!(rig.disk_sector(79 * 36 + 17), data, "image not written");
    // Read it back through the FIFO.
    rig.command(&[0x03, 0xDF, 0x03]);
    rig.command(&[0x46, 0x00, 79, 0, 18, 2, 18, 0x1B, 0xFF]);
    let back: Vec<u8> = (0..SECTOR).map(|_| rig.inb(FIFO)).collect();
    assert_eq!(back, data);
    assert_eq!(rig.results()[..3], [0x40, 0x80, 0x00]);
}

#[test]
fn writes_by_pio() {
    let mut rig = Rig::new(false);
    rig.command(&[0x03, 0xDF, 0x03]);
    rig.command(&[0x45, 0x00, 0, 0, 2, 2, 2, 0x1B, 0xFF]);
    assert_eq!(rig.inb(MSR), 0xB0, "RQM|NDMA|CB, host to controller");
    for i in 0..SECTOR {
        rig.out(FIFO, (i ^ 0x5A) as u8);
    }
    let expect: Vec<u8> = (0..SECTOR).map(|i| (i ^ 0x5A) as u8).collect();
    assert_eq!(rig.disk_sector(1), expect);
    assert_eq!(rig.results(), vec![0x40, 0x80, 0x00, 1, 0, 1, 2]);
}

#[test]
fn write_protected_media() {
    let mut rig = Rig::new(true);
    rig.command(&[0x04, 0x00]);
    assert_eq!(rig.results()[0] & 0x40, 0x40, "ST3 WP");
    rig.program_dma(0x4000, 512, false);
    rig.command(&[0x45, 0x00, 0, 0, 1, 2, 18, 0x1B, 0xFF]);
    assert!(!rig.fdc.dma_pending());
    assert!(rig.fdc.take_irq_pulse());
    assert_eq!(rig.results(), vec![0x40, 0x02, 0x00, 0, 0, 1, 2]);
    rig.command(&[0x4D, 0x00, 2, 18, 0x54, 0xF6]);
    assert_eq!(
        rig.results()[..2],
        [0x40, 0x02],
        "FORMAT on a protected disk"
    );
    assert_eq!(rig.disk_sector(0), pattern(0));
}

#[test]
fn missing_sectors_and_wrong_cylinder() {
    let mut rig = Rig::new(false);
    rig.program_dma(0x4000, 512, true);
    rig.command(&[0x46, 0x00, 0, 0, 19, 2, 19, 0x1B, 0xFF]);
    assert_eq!(
        rig.results(),
        vec![0x40, 0x04, 0x00, 0, 0, 19, 2],
        "sector 19"
    );
    rig.command(&[0x46, 0x00, 0, 0, 0, 2, 1, 0x1B, 0xFF]);
    assert_eq!(rig.results()[..3], [0x40, 0x04, 0x00], "sector 0");
    rig.command(&[0x46, 0x00, 5, 0, 1, 2, 18, 0x1B, 0xFF]);
    assert_eq!(
        rig.results()[..3],
        [0x40, 0x04, 0x10],
        "head is on cylinder 0"
    );
    rig.command(&[0x46, 0x00, 0, 0, 1, 3, 18, 0x1B, 0xFF]);
    assert_eq!(
        rig.results()[..3],
        [0x40, 0x04, 0x00],
        "1024-byte sector size"
    );
    // Wrong data rate (250 kbps for 1.44 MB media): no address marks found.
    rig.out(DIR, 0x02);
    rig.command(&[0x46, 0x00, 0, 0, 1, 2, 18, 0x1B, 0xFF]);
    assert_eq!(rig.results()[..3], [0x40, 0x01, 0x00]);
    assert_eq!(rig.ram.0[0x4000..0x4200], [0u8; 512], "data moved on error");
}

#[test]
fn read_id_walks_the_track() {
    let mut rig = Rig::new(false);
    rig.seek(0x04, 2);
    let mut seen = Vec::new();
    for _ in 0..18 {
        rig.command(&[0x4A, 0x04]);
        assert!(rig.fdc.take_irq_pulse());
        let r = rig.results();
        assert_eq!(r[..5], [0x04, 0, 0, 2, 1]);
        assert_eq!(r[6], 2);
        seen.push(r[5]);
    }
    seen.sort_unstable();
    assert_eq!(
        seen,
        (1..=18).collect::<Vec<u8>>(),
        "every sector header passes by"
    );
    rig.out(DIR, 0x03); // 1 Mbps
    rig.command(&[0x4A, 0x00]);
    assert_eq!(rig.results()[..3], [0x40, 0x01, 0x00]);
}

#[test]
fn version_configure_lock_dumpreg() {
    let mut rig = Rig::new(false);
    rig.command(&[0x10]);
    assert_eq!(rig.results(), vec![0x90]);
    rig.command(&[0x18]);
    assert_eq!(rig.results(), vec![0x41]);
    rig.command(&[0x03, 0xAF, 0x1E]);
    rig.command(&[0x13, 0x00, 0x57, 0x08]);
    rig.command(&[0x12, 0x83]);
    rig.seek(0x00, 7);
    rig.command(&[0x94]);
    assert_eq!(rig.results(), vec![0x10]);
    rig.command(&[0x0E]);
    assert_eq!(
        rig.results(),
        vec![7, 0, 0, 0, 0xAF, 0x1E, 0, 0x80 | 0x03, 0x57, 0x08]
    );
    // A locked configuration survives a reset; the perpendicular GAP/WGATE do not.
    rig.out(DOR, 0x08);
    rig.out(DOR, 0x0C);
    rig.command(&[0x0E]);
    assert_eq!(rig.results()[7..], [0x80, 0x57, 0x08]);
    rig.command(&[0x14]);
    assert_eq!(rig.results(), vec![0x00]);
    rig.out(DOR, 0x08);
    rig.out(DOR, 0x0C);
    rig.command(&[0x0E]);
    assert_eq!(rig.results()[8..], [0x20, 0x00], "unlocked: reset values");
    for op in [0x00, 0x01, 0x02, 0x09, 0x0C, 0x11, 0x1F, 0xFF, 0x25, 0x8A] {
        rig.command(&[op]);
        assert_eq!(rig.results(), vec![0x80], "opcode {op:#x}");
    }
}

#[test]
fn formats_a_track_with_the_fill_byte() {
    let mut rig = Rig::new(false);
    rig.command(&[0x03, 0xDF, 0x03]);
    rig.seek(0x04, 3);
    rig.command(&[0x4D, 0x04, 2, 18, 0x54, 0xE5]);
    for r in 1..=18u8 {
        for b in [3, 1, r, 2] {
            assert_eq!(rig.inb(MSR) & 0xC0, 0x80);
            rig.out(FIFO, b);
        }
    }
    assert!(rig.fdc.take_irq_pulse());
    assert_eq!(rig.results()[..3], [0x04, 0, 0]);
    let track = (3 * 2 + 1) * 18;
    for lba in track..track + 18 {
        assert_eq!(rig.disk_sector(lba), vec![0xE5; SECTOR], "lba {lba}");
    }
    assert_eq!(
        rig.disk_sector(track - 1),
        pattern(track - 1),
        "head 0 untouched"
    );
    assert_eq!(rig.disk_sector(track + 18), pattern(track + 18));
}

#[test]
fn verify_checks_sectors_without_moving_data() {
    let mut rig = Rig::new(false);
    rig.command(&[0x56, 0x00, 0, 0, 10, 2, 18, 0x1B, 0xFF]);
    assert!(rig.fdc.take_irq_pulse());
    assert_eq!(rig.results(), vec![0x00, 0, 0, 1, 0, 1, 2]);
    // EC=1: three sectors.
    rig.command(&[0x56, 0x80, 0, 0, 10, 2, 18, 0x1B, 3]);
    assert_eq!(rig.results(), vec![0x00, 0, 0, 0, 0, 13, 2]);
    rig.command(&[0x56, 0x00, 0, 0, 20, 2, 18, 0x1B, 0xFF]);
    assert_eq!(rig.results()[..2], [0x40, 0x04]);
}

#[test]
fn disk_change_line_and_missing_media() {
    let mut rig = Rig::new(false);
    let mut fresh = Fdc::new();
    fresh.insert_disk(0, Box::new(rig.disk.clone())).unwrap();
    fresh.io_write(DOR, 1, 0x1C);
    assert_eq!(
        fresh.io_read(DIR, 1) & 0x80,
        0x80,
        "change line after insert"
    );
    assert_eq!(
        fresh.cmos_drive_types(),
        0x40,
        "1.44 MB drive 0, no drive 1"
    );
    assert_eq!(Fdc::new().cmos_drive_types(), 0);
    // A seek with a disk in the drive clears it; an eject sets it.
    rig.seek(0x00, 1);
    assert_eq!(rig.inb(DIR) & 0x80, 0);
    assert!(rig.fdc.eject_disk(0).is_some());
    assert_eq!(rig.inb(DIR) & 0x80, 0x80);
    rig.seek(0x00, 0);
    assert_eq!(rig.inb(DIR) & 0x80, 0x80, "no disk: the line stays active");
    rig.program_dma(0x4000, 512, true);
    rig.command(&[0x46, 0x00, 0, 0, 1, 2, 18, 0x1B, 0xFF]);
    assert_eq!(rig.results()[..3], [0x40, 0x01, 0x00]);
    rig.command(&[0x4A, 0x00]);
    assert_eq!(rig.results()[..3], [0x40, 0x01, 0x00]);
}

#[test]
fn image_sizes_give_standard_geometries() {
    let geometry = |n| {
        let f = FloppyFormat::for_sectors(n);
        (f.cylinders, f.heads, f.sectors, f.cmos_drive_type)
    };
    assert_eq!(geometry(720), (40, 2, 9, 1));
    assert_eq!(geometry(1440), (80, 2, 9, 3));
    assert_eq!(geometry(2400), (80, 2, 15, 2));
    assert_eq!(geometry(2880), (80, 2, 18, 4));
    assert_eq!(geometry(5760), (80, 2, 36, 5));
    assert_eq!(geometry(u64::MAX).0, 255);
    assert_eq!(geometry(0).0, 1);
}

/// Hostile driver: random port traffic with random DMA programming never panics and
/// never writes outside the DMA window of the (small) RAM.
#[test]
fn random_port_traffic_does_not_panic() {
    let mut rig = Rig::new(false);
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for step in 0..200_000u32 {
        let r = next();
        let port = 0x3F0 + (r % 8) as u16;
        let value = (r >> 8) as u8;
        match (r >> 16) % 8 {
            0 | 1 => {
                rig.fdc.io_read(port, 1);
            }
            2 if r >> 20 & 0xFF == 0 => {
                // Occasionally a well-formed data command with hostile fields.
                let n = (r >> 28) as u8;
                for b in [
                    0x46 | (n & 0x80),
                    n & 7,
                    n,
                    n >> 1,
                    n >> 2,
                    n & 7,
                    !n,
                    0x1B,
                    n,
                ] {
                    rig.out(FIFO, b);
                }
            }
            3 if step % 97 == 0 => {
                let addr = (next() & 0xF_FFFF) as u32;
                rig.program_dma(addr, (next() as u16).max(1), r & 1 == 0);
            }
            4 => rig.fdc.service_dma(&mut rig.dma, &mut rig.ram),
            _ => rig.out(port, value),
        }
        rig.fdc.take_irq_pulse();
    }
}
