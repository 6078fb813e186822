//! One or more tests per ATA / ATAPI command and for bus-master DMA, driven through the
//! legacy ports the way a guest driver would.

use super::*;
use crate::{BlockDevice, StorageError};

struct VecDisk {
    data: Vec<u8>,
    sector: usize,
    flushes: usize,
}

impl VecDisk {
    fn new(sectors: usize, sector: usize) -> Box<Self> {
        let data = (0..sectors * sector)
            .map(|i| (i / sector * 7 + i % 251) as u8)
            .collect();
        Box::new(VecDisk {
            data,
            sector,
            flushes: 0,
        })
    }
}

impl BlockDevice for VecDisk {
    fn sector_size(&self) -> u32 {
        self.sector as u32
    }
    fn sector_count(&self) -> u64 {
        (self.data.len() / self.sector) as u64
    }
    fn read_only(&self) -> bool {
        false
    }
    fn read_sectors(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        crate::check_range(self, lba, buf.len())?;
        let at = lba as usize * self.sector;
        buf.copy_from_slice(&self.data[at..at + buf.len()]);
        Ok(())
    }
    fn write_sectors(&mut self, lba: u64, buf: &[u8]) -> Result<(), StorageError> {
        crate::check_range(self, lba, buf.len())?;
        let at = lba as usize * self.sector;
        self.data[at..at + buf.len()].copy_from_slice(buf);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        self.flushes += 1;
        Ok(())
    }
}

/// A large disc that reads as zeros without holding the bytes.
struct BlankDisc(u64);

impl BlockDevice for BlankDisc {
    fn sector_size(&self) -> u32 {
        2048
    }
    fn sector_count(&self) -> u64 {
        self.0
    }
    fn read_only(&self) -> bool {
        true
    }
    fn read_sectors(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        crate::check_range(self, lba, buf.len())?;
        buf.fill(0);
        Ok(())
    }
    fn write_sectors(&mut self, _: u64, _: &[u8]) -> Result<(), StorageError> {
        Err(StorageError::ReadOnly)
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        Ok(())
    }
}

fn expected_disk(sectors: std::ops::Range<usize>, sector: usize) -> Vec<u8> {
    (sectors.start * sector..sectors.end * sector)
        .map(|i| (i / sector * 7 + i % 251) as u8)
        .collect()
}

struct Memory(Vec<u8>);

impl GuestMemory for Memory {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        let src = self
            .0
            .get(addr as usize..addr as usize + buf.len())
            .ok_or(DmaError::BadAddress(addr))?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        let dst = self
            .0
            .get_mut(addr as usize..addr as usize + data.len())
            .ok_or(DmaError::BadAddress(addr))?;
        dst.copy_from_slice(data);
        Ok(())
    }
}

const DISK_SECTORS: usize = 1000;
const CD_SECTORS: usize = 64;
const STATUS: u16 = 0x1F7;
const CD_STATUS: u16 = 0x177;

fn controller() -> IdeController {
    let mut ide = IdeController::new();
    ide.attach(0, false, IdeDrive::Disk(VecDisk::new(DISK_SECTORS, 512)));
    ide.attach(
        1,
        false,
        IdeDrive::Cdrom(Some(VecDisk::new(CD_SECTORS, 2048))),
    );
    ide
}

fn status(ide: &mut IdeController, port: u16) -> u8 {
    ide.io_read(port, 1).unwrap() as u8
}

fn error(ide: &mut IdeController, base: u16) -> u8 {
    ide.io_read(base + 1, 1).unwrap() as u8
}

/// Issues an LBA28 command to the primary master.
fn ata28(ide: &mut IdeController, command: u8, lba: u32, count: u8, feature: u8) {
    ide.io_write(0x1F1, 1, feature as u32);
    ide.io_write(0x1F2, 1, count as u32);
    ide.io_write(0x1F3, 1, lba & 0xFF);
    ide.io_write(0x1F4, 1, (lba >> 8) & 0xFF);
    ide.io_write(0x1F5, 1, (lba >> 16) & 0xFF);
    ide.io_write(0x1F6, 1, 0xE0 | ((lba >> 24) & 0x0F));
    ide.io_write(0x1F7, 1, command as u32);
}

fn ata48(ide: &mut IdeController, command: u8, lba: u64, count: u16) {
    for (port, hi, lo) in [
        (0x1F2, (count >> 8) as u64, count as u64 & 0xFF),
        (0x1F3, (lba >> 24) & 0xFF, lba & 0xFF),
        (0x1F4, (lba >> 32) & 0xFF, (lba >> 8) & 0xFF),
        (0x1F5, (lba >> 40) & 0xFF, (lba >> 16) & 0xFF),
    ] {
        ide.io_write(port, 1, hi as u32);
        ide.io_write(port, 1, lo as u32);
    }
    ide.io_write(0x1F6, 1, 0x40);
    ide.io_write(0x1F7, 1, command as u32);
}

fn read_words(ide: &mut IdeController, base: u16, bytes: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..bytes / 2 {
        out.extend_from_slice(&(ide.io_read(base, 2).unwrap() as u16).to_le_bytes());
    }
    out
}

fn write_words(ide: &mut IdeController, base: u16, data: &[u8]) {
    for w in data.chunks(2) {
        ide.io_write(base, 2, u16::from_le_bytes([w[0], w[1]]) as u32);
    }
}

fn word(data: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([data[i * 2], data[i * 2 + 1]])
}

// ---- ATA ----

#[test]
fn signatures_and_empty_channel() {
    let mut ide = IdeController::new();
    assert_eq!(status(&mut ide, STATUS), 0xFF, "no drives: floating bus");
    let mut ide = controller();
    ide.reset();
    let regs: Vec<u8> = (2..6)
        .map(|r| ide.io_read(0x1F0 + r, 1).unwrap() as u8)
        .collect();
    assert_eq!(regs, [1, 1, 0, 0]);
    assert_eq!(status(&mut ide, STATUS) & 0xC9, 0x40, "DRDY, not busy");
    let regs: Vec<u8> = (2..6)
        .map(|r| ide.io_read(0x170 + r, 1).unwrap() as u8)
        .collect();
    assert_eq!(regs, [1, 1, 0x14, 0xEB], "ATAPI signature");
    // Selecting the absent slave: status reads 0.
    ide.io_write(0x1F6, 1, 0xB0);
    assert_eq!(status(&mut ide, STATUS), 0);
}

#[test]
fn soft_reset_via_device_control() {
    let mut ide = controller();
    ide.io_write(0x3F6, 1, 0x04);
    assert_eq!(status(&mut ide, STATUS) & 0x80, 0x80, "BSY during SRST");
    ide.io_write(0x3F6, 1, 0x00);
    assert_eq!(status(&mut ide, STATUS) & 0xC0, 0x40);
    assert_eq!(error(&mut ide, 0x1F0), 1, "diagnostic code: passed");
}

#[test]
fn identify_device() {
    let mut ide = controller();
    ata28(&mut ide, 0xEC, 0, 0, 0);
    assert!(ide.irq_level(0));
    assert_eq!(status(&mut ide, STATUS) & 0x08, 0x08);
    assert!(!ide.irq_level(0), "status read acknowledges the interrupt");
    let data = read_words(&mut ide, 0x1F0, 512);
    assert_eq!(
        status(&mut ide, STATUS) & 0x08,
        0,
        "DRQ clear after 256 words"
    );
    assert_eq!(
        data.iter().fold(0u8, |a, &b| a.wrapping_add(b)),
        0,
        "checksum"
    );
    assert_eq!(word(&data, 255) & 0xFF, 0xA5);
    assert_eq!(
        word(&data, 60) as usize | (word(&data, 61) as usize) << 16,
        DISK_SECTORS
    );
    assert_eq!(word(&data, 100) as usize, DISK_SECTORS);
    assert_ne!(word(&data, 83) & (1 << 10), 0, "LBA48");
    assert_ne!(word(&data, 49) & 0x0300, 0, "LBA + DMA");
    let model: Vec<u8> = (27..47)
        .flat_map(|i| word(&data, i).to_be_bytes())
        .collect();
    assert!(String::from_utf8_lossy(&model).starts_with("Aero Hard Disk"));
}

#[test]
fn read_sectors_pio() {
    let mut ide = controller();
    ata28(&mut ide, 0x20, 10, 2, 0);
    assert!(ide.irq_level(0));
    status(&mut ide, STATUS);
    let first = read_words(&mut ide, 0x1F0, 512);
    assert!(ide.irq_level(0), "interrupt for the second sector");
    let st = status(&mut ide, STATUS);
    assert_eq!(st & 0x08, 0x08);
    let second = read_words(&mut ide, 0x1F0, 512);
    assert_eq!([first, second].concat(), expected_disk(10..12, 512));
    assert_eq!(
        status(&mut ide, STATUS) & 0x89,
        0,
        "no DRQ, no error at the end"
    );
    // 32-bit data port accesses work too.
    ata28(&mut ide, 0x20, 5, 1, 0);
    let mut dwords = Vec::new();
    for _ in 0..128 {
        dwords.extend_from_slice(&ide.io_read(0x1F0, 4).unwrap().to_le_bytes());
    }
    assert_eq!(dwords, expected_disk(5..6, 512));
}

#[test]
fn write_sectors_pio_and_flush() {
    let mut ide = controller();
    ata28(&mut ide, 0x30, 20, 2, 0);
    assert!(!ide.irq_level(0), "no interrupt before the first block");
    assert_eq!(status(&mut ide, STATUS) & 0x08, 0x08);
    write_words(&mut ide, 0x1F0, &[0xAB; 512]);
    assert!(ide.irq_level(0), "interrupt asking for block 2");
    status(&mut ide, STATUS);
    write_words(&mut ide, 0x1F0, &[0xCD; 512]);
    assert!(ide.irq_level(0), "completion interrupt");
    assert_eq!(status(&mut ide, STATUS) & 0x89, 0);
    ata28(&mut ide, 0x20, 20, 2, 0);
    status(&mut ide, STATUS);
    let mut back = read_words(&mut ide, 0x1F0, 512);
    back.extend(read_words(&mut ide, 0x1F0, 512));
    assert_eq!(back, [vec![0xAB; 512], vec![0xCD; 512]].concat());
    for command in [0xE7, 0xEA] {
        ata28(&mut ide, command, 0, 0, 0);
        assert_eq!(
            status(&mut ide, STATUS) & 0x01,
            0,
            "FLUSH CACHE {command:#x}"
        );
    }
}

#[test]
fn lba48_ext_commands_and_hob() {
    let mut ide = controller();
    ata48(&mut ide, 0x24, 990, 3);
    status(&mut ide, STATUS);
    let mut data = Vec::new();
    for _ in 0..3 {
        data.extend(read_words(&mut ide, 0x1F0, 512));
    }
    assert_eq!(data, expected_disk(990..993, 512));
    // HOB: the previous (high-order) bytes read back with device control bit 7.
    ata48(&mut ide, 0x34, 1 << 32, 1);
    assert_eq!(status(&mut ide, STATUS) & 0x01, 0x01, "beyond the disk");
    assert_eq!(error(&mut ide, 0x1F0) & 0x10, 0x10, "IDNF");
    ide.io_write(0x3F6, 1, 0x80);
    assert_eq!(ide.io_read(0x1F4, 1), Some(1), "LBA bits 32..40");
    ide.io_write(0x3F6, 1, 0x00);
    assert_eq!(ide.io_read(0x1F4, 1), Some(0));
    // WRITE SECTORS EXT then READ NATIVE MAX ADDRESS EXT.
    ata48(&mut ide, 0x34, 999, 1);
    write_words(&mut ide, 0x1F0, &[0x11; 512]);
    assert_eq!(status(&mut ide, STATUS) & 0x01, 0);
    ata48(&mut ide, 0x27, 0, 0);
    let max = (3..6)
        .map(|r| ide.io_read(0x1F0 + r, 1).unwrap())
        .enumerate()
        .fold(0, |a, (i, b)| a | b << (8 * i));
    assert_eq!(max as usize, DISK_SECTORS - 1);
}

#[test]
fn read_write_multiple() {
    let mut ide = controller();
    ata28(&mut ide, 0xC4, 0, 4, 0);
    assert_eq!(
        status(&mut ide, STATUS) & 0x01,
        1,
        "READ MULTIPLE without SET MULTIPLE aborts"
    );
    assert_eq!(error(&mut ide, 0x1F0), 0x04);
    ata28(&mut ide, 0xC6, 0, 3, 0);
    assert_eq!(
        status(&mut ide, STATUS) & 0x01,
        1,
        "3 is not a power of two"
    );
    ata28(&mut ide, 0xC6, 0, 4, 0);
    assert_eq!(status(&mut ide, STATUS) & 0x01, 0);
    ata28(&mut ide, 0xC4, 100, 6, 0);
    let mut irqs = 0;
    let mut data = Vec::new();
    while status(&mut ide, STATUS) & 0x08 != 0 {
        irqs += 1;
        let before = data.len();
        while data.len() < before + 4 * 512 && data.len() < 6 * 512 {
            data.extend(read_words(&mut ide, 0x1F0, 512));
        }
    }
    assert_eq!(irqs, 2, "one DRQ block of 4 sectors, then 2");
    assert_eq!(data, expected_disk(100..106, 512));
    ata28(&mut ide, 0xC5, 200, 5, 0);
    write_words(&mut ide, 0x1F0, &[0x77; 4 * 512]);
    assert!(ide.irq_level(0));
    assert_eq!(status(&mut ide, STATUS) & 0x08, 0x08, "second block");
    write_words(&mut ide, 0x1F0, &[0x77; 512]);
    assert_eq!(status(&mut ide, STATUS) & 0x89, 0);
    ata28(&mut ide, 0x20, 204, 1, 0);
    assert_eq!(read_words(&mut ide, 0x1F0, 512), vec![0x77; 512]);
}

#[test]
fn set_features_modes_and_write_cache() {
    let mut ide = controller();
    ata28(&mut ide, 0xEF, 0, 0x42, 0x03); // UDMA 2
    assert_eq!(status(&mut ide, STATUS) & 0x01, 0);
    ata28(&mut ide, 0xEC, 0, 0, 0);
    let id = read_words(&mut ide, 0x1F0, 512);
    assert_eq!(word(&id, 88) >> 8, 1 << 2, "UDMA 2 selected");
    ata28(&mut ide, 0xEF, 0, 0x47, 0x03); // UDMA 7 does not exist
    assert_eq!(error(&mut ide, 0x1F0), 0x04);
    ata28(&mut ide, 0xEF, 0, 0, 0x82); // write cache off
    ata28(&mut ide, 0xEC, 0, 0, 0);
    let id = read_words(&mut ide, 0x1F0, 512);
    assert_eq!(word(&id, 85) & 0x20, 0);
    ata28(&mut ide, 0xEF, 0, 0, 0x99);
    assert_eq!(status(&mut ide, STATUS) & 0x01, 1, "unknown feature aborts");
}

#[test]
fn power_management() {
    let mut ide = controller();
    ata28(&mut ide, 0xE0, 0, 0, 0); // STANDBY IMMEDIATE
    ata28(&mut ide, 0xE5, 0, 0, 0);
    assert_eq!(ide.io_read(0x1F2, 1), Some(0x00), "standby");
    ata28(&mut ide, 0xE1, 0, 0, 0); // IDLE IMMEDIATE
    ata28(&mut ide, 0xE5, 0, 0, 0);
    assert_eq!(ide.io_read(0x1F2, 1), Some(0xFF), "active/idle");
    ata28(&mut ide, 0xE2, 0, 0, 0);
    ata28(&mut ide, 0x20, 0, 1, 0);
    read_words(&mut ide, 0x1F0, 512);
    ata28(&mut ide, 0xE5, 0, 0, 0);
    assert_eq!(
        ide.io_read(0x1F2, 1),
        Some(0xFF),
        "a read spins the disk up"
    );
    assert_eq!(status(&mut ide, STATUS) & 0x41, 0x40);
}

#[test]
fn errors_and_interrupt_masking() {
    let mut ide = controller();
    ata28(&mut ide, 0x20, DISK_SECTORS as u32 - 1, 2, 0);
    assert_eq!(status(&mut ide, STATUS) & 0x09, 0x01);
    assert_eq!(error(&mut ide, 0x1F0) & 0x10, 0x10, "IDNF");
    ata28(&mut ide, 0xA0, 0, 0, 0); // PACKET to a disk
    assert_eq!(error(&mut ide, 0x1F0), 0x04, "ABRT");
    ata28(&mut ide, 0xFF, 0, 0, 0);
    assert_eq!(error(&mut ide, 0x1F0), 0x04);
    ide.io_write(0x3F6, 1, 0x02); // nIEN
    ata28(&mut ide, 0xE7, 0, 0, 0);
    assert!(!ide.irq_level(0), "masked");
    ide.io_write(0x3F6, 1, 0x00);
    assert!(ide.irq_level(0), "still pending once unmasked");
    ide.io_read(0x3F6, 1);
    assert!(ide.irq_level(0), "alternate status does not acknowledge");
}

// ---- bus-master DMA ----

fn prd(mem: &mut Memory, table: u32, entries: &[(u32, u16, bool)]) {
    for (i, &(addr, len, last)) in entries.iter().enumerate() {
        let at = table as usize + i * 8;
        mem.0[at..at + 4].copy_from_slice(&addr.to_le_bytes());
        mem.0[at + 4..at + 6].copy_from_slice(&len.to_le_bytes());
        mem.0[at + 6..at + 8].copy_from_slice(&(if last { 0x8000u16 } else { 0 }).to_le_bytes());
    }
}

fn start_bm(ide: &mut IdeController, mem: &mut Memory, channel: u16, table: u32, to_memory: bool) {
    let base = channel * 8;
    ide.bus_master_write(base + 4, 4, table, mem);
    ide.bus_master_write(base + 2, 1, 0x06, mem); // clear error + interrupt
    ide.bus_master_write(base, 1, 1 | if to_memory { 8 } else { 0 }, mem);
}

#[test]
fn read_and_write_dma() {
    let mut ide = controller();
    let mut mem = Memory(vec![0; 0x20000]);
    prd(
        &mut mem,
        0x1000,
        &[(0x4000, 512, false), (0x8000, 1024, true)],
    );
    ata28(&mut ide, 0xC8, 50, 3, 0);
    assert_eq!(
        status(&mut ide, STATUS) & 0x08,
        0x08,
        "waiting for the bus master"
    );
    start_bm(&mut ide, &mut mem, 0, 0x1000, true);
    assert!(ide.irq_level(0));
    assert_eq!(
        ide.bus_master_read(2, 1) & 0x07,
        0x04,
        "interrupt, not active, no error"
    );
    assert_eq!(status(&mut ide, STATUS) & 0x89, 0);
    assert_eq!(
        [&mem.0[0x4000..0x4200], &mem.0[0x8000..0x8400]].concat(),
        expected_disk(50..53, 512)
    );

    // WRITE DMA EXT from memory, engine started before the command is issued.
    mem.0[0x9000..0x9400].fill(0x3C);
    prd(&mut mem, 0x1100, &[(0x9000, 1024, true)]);
    ide.bus_master_write(0, 1, 0, &mut mem);
    ide.bus_master_write(4, 4, 0x1100, &mut mem);
    ide.bus_master_write(0, 1, 1, &mut mem);
    ata48(&mut ide, 0x35, 60, 2);
    ide.channels[0].service_dma(&mut mem);
    assert_eq!(status(&mut ide, STATUS) & 0x01, 0);
    ata28(&mut ide, 0x20, 61, 1, 0);
    assert_eq!(read_words(&mut ide, 0x1F0, 512), vec![0x3C; 512]);
}

#[test]
fn bad_prd_tables_report_errors() {
    let mut ide = controller();
    let mut mem = Memory(vec![0; 0x10000]);
    // Segment outside guest memory.
    prd(&mut mem, 0x1000, &[(0xFFFF_0000, 512, true)]);
    ata28(&mut ide, 0xC8, 0, 1, 0);
    start_bm(&mut ide, &mut mem, 0, 0x1000, true);
    assert_eq!(
        ide.bus_master_read(2, 1) & 0x07,
        0x06,
        "error + interrupt, not active"
    );
    assert_eq!(status(&mut ide, STATUS) & 0x01, 0x01);
    assert_eq!(error(&mut ide, 0x1F0), 0x04);
    // Table shorter than the transfer.
    prd(&mut mem, 0x1000, &[(0x4000, 512, true)]);
    ide.bus_master_write(0, 1, 0, &mut mem);
    ata28(&mut ide, 0xC8, 0, 2, 0);
    start_bm(&mut ide, &mut mem, 0, 0x1000, true);
    assert_eq!(ide.bus_master_read(2, 1) & 0x02, 0x02);
    // Table that never ends (no EOT flag anywhere in memory range) and table beyond memory.
    ide.bus_master_write(0, 1, 0, &mut mem);
    ata28(&mut ide, 0xC8, 0, 1, 0);
    start_bm(&mut ide, &mut mem, 0, 0xFFF8, true);
    assert_eq!(ide.bus_master_read(2, 1) & 0x02, 0x02);
    // Wrong direction.
    prd(&mut mem, 0x1000, &[(0x4000, 512, true)]);
    ide.bus_master_write(0, 1, 0, &mut mem);
    ata28(&mut ide, 0xCA, 0, 1, 0);
    start_bm(&mut ide, &mut mem, 0, 0x1000, true);
    assert_eq!(ide.bus_master_read(2, 1) & 0x02, 0x02);
}

#[test]
fn prd_larger_than_transfer_leaves_engine_active() {
    let mut ide = controller();
    let mut mem = Memory(vec![0; 0x10000]);
    prd(&mut mem, 0x1000, &[(0x4000, 0, true)]); // 64 KiB
    ata28(&mut ide, 0xC8, 0, 1, 0);
    start_bm(&mut ide, &mut mem, 0, 0x1000, true);
    assert_eq!(ide.bus_master_read(2, 1) & 0x07, 0x05, "active + interrupt");
    assert_eq!(&mem.0[0x4000..0x4200], &expected_disk(0..1, 512)[..]);
}

// ---- ATAPI ----

/// Sends a packet to the secondary master and returns (data, status, error).
fn packet(ide: &mut IdeController, cdb: &[u8], byte_count: u16) -> (Vec<u8>, u8, u8) {
    ide.io_write(0x171, 1, 0);
    ide.io_write(0x174, 1, byte_count as u32 & 0xFF);
    ide.io_write(0x175, 1, byte_count as u32 >> 8);
    ide.io_write(0x176, 1, 0);
    ide.io_write(0x177, 1, 0xA0);
    assert_eq!(
        ide.io_read(0x172, 1),
        Some(1),
        "CoD: waiting for the packet"
    );
    let mut cdb12 = [0u8; 12];
    cdb12[..cdb.len()].copy_from_slice(cdb);
    write_words(ide, 0x170, &cdb12);
    let mut data = Vec::new();
    loop {
        assert!(ide.irq_level(1), "every ATAPI phase interrupts");
        let st = status(ide, CD_STATUS);
        if st & 0x08 == 0 {
            assert_eq!(ide.io_read(0x172, 1), Some(3), "status phase: CoD | I/O");
            return (data, st, error(ide, 0x170));
        }
        assert_eq!(ide.io_read(0x172, 1), Some(2), "data phase: I/O");
        let n = ide.io_read(0x174, 1).unwrap() as usize
            | (ide.io_read(0x175, 1).unwrap() as usize) << 8;
        assert!(n <= byte_count.max(2) as usize || byte_count == 0);
        let mut chunk = read_words(ide, 0x170, n.div_ceil(2) * 2);
        chunk.truncate(n);
        data.extend(chunk);
    }
}

fn sense(ide: &mut IdeController) -> (u8, u8, u8) {
    let (d, st, _) = packet(ide, &[0x03, 0, 0, 0, 18], 0xFFFE);
    assert_eq!(st & 1, 0);
    (d[2] & 0x0F, d[12], d[13])
}

#[test]
fn atapi_identify() {
    let mut ide = controller();
    ide.io_write(0x177, 1, 0xEC);
    assert_eq!(
        error(&mut ide, 0x170),
        0x04,
        "IDENTIFY DEVICE aborts on ATAPI"
    );
    assert_eq!(
        (ide.io_read(0x174, 1), ide.io_read(0x175, 1)),
        (Some(0x14), Some(0xEB))
    );
    ide.io_write(0x177, 1, 0xA1);
    let id = read_words(&mut ide, 0x170, 512);
    assert_eq!(word(&id, 0), 0x85C0);
    assert_eq!(id.iter().fold(0u8, |a, &b| a.wrapping_add(b)), 0);
}

#[test]
fn atapi_test_unit_ready_sense_and_media_change() {
    let mut ide = controller();
    let (_, st, _) = packet(&mut ide, &[0x00], 0);
    assert_eq!(st & 1, 0, "disc present: ready");
    let disc = ide.channels[1].eject_media(false, false).unwrap().unwrap();
    let (_, st, err) = packet(&mut ide, &[0x00], 0);
    assert_eq!((st & 1, err >> 4), (1, 0x02), "not ready after removal");
    assert_eq!(
        sense(&mut ide),
        (0x02, 0x3A, 0x02),
        "medium not present - tray open"
    );
    assert_eq!(
        sense(&mut ide),
        (0x02, 0x3A, 0x02),
        "nothing stored any more: the current condition, still no medium"
    );
    assert!(
        ide.channels[1].insert_media(false, disc).unwrap().is_none(),
        "the drive was empty"
    );
    assert_eq!(packet(&mut ide, &[0x00], 0).2 >> 4, 0x06);
    assert_eq!(sense(&mut ide), (0x06, 0x28, 0x00));
    assert_eq!(packet(&mut ide, &[0x00], 0).1 & 1, 0);
    // The master of the primary channel has no CD drive.
    assert_eq!(
        ide.channels[0].eject_media(false, false).err(),
        Some(MediaError::NoCdDrive)
    );
}

/// REQUEST SENSE returns the stored sense once; with nothing stored it reports the drive's
/// current condition (SPC), not "no sense" for an empty drive.
#[test]
fn atapi_request_sense_reports_the_current_condition() {
    let mut ide = controller();
    assert_eq!(sense(&mut ide), (0, 0, 0), "disc loaded, nothing stored");
    let (_, st, err) = packet(&mut ide, &[0xFF], 0);
    assert_eq!((st & 1, err >> 4), (1, 0x05), "unknown opcode");
    assert_eq!(sense(&mut ide), (0x05, 0x20, 0x00));
    assert_eq!(sense(&mut ide), (0, 0, 0), "the stored sense is consumed");

    ide.channels[1].eject_media(false, false).unwrap();
    assert_eq!(sense(&mut ide), (0x02, 0x3A, 0x02), "tray open, no disc");
    // A stored sense comes first, the condition after it.
    assert_eq!(packet(&mut ide, &[0xFF], 0).2 >> 4, 0x05);
    assert_eq!(sense(&mut ide), (0x05, 0x20, 0x00));
    assert_eq!(sense(&mut ide), (0x02, 0x3A, 0x02));
    // The guest closes the empty tray (START STOP UNIT, LoEj + Start).
    assert_eq!(packet(&mut ide, &[0x1B, 0, 0, 0, 0x03], 0).1 & 1, 0);
    assert_eq!(sense(&mut ide), (0x02, 0x3A, 0x01), "tray closed, no disc");

    // REQUEST SENSE itself never fails; the unit attention of the new disc comes next.
    ide.channels[1]
        .insert_media(false, Box::new(BlankDisc(10)))
        .unwrap();
    assert_eq!(sense(&mut ide), (0x06, 0x28, 0x00), "unit attention");
    assert_eq!(sense(&mut ide), (0, 0, 0), "a disc is loaded");
    assert_eq!(
        packet(&mut ide, &[0x00], 0).1 & 1,
        0,
        "no unit attention left"
    );
}

/// A pending UNIT ATTENTION is reported by REQUEST SENSE and then cleared (SPC), after
/// any sense the previous command left.
#[test]
fn atapi_request_sense_reports_and_clears_a_pending_unit_attention() {
    let mut ide = controller();
    ide.channels[1]
        .insert_media(false, Box::new(BlankDisc(10)))
        .unwrap();
    assert_eq!(
        sense(&mut ide),
        (0x06, 0x28, 0x00),
        "medium may have changed"
    );
    assert_eq!(sense(&mut ide), (0, 0, 0), "reported once");
    let (_, st, _) = packet(&mut ide, &[0x00], 0);
    assert_eq!(
        st & 1,
        0,
        "TEST UNIT READY passes: the attention was cleared"
    );
    assert_eq!(capacity(&mut ide), 10);

    // A stored sense (from a command that failed before the change) comes first, the unit
    // attention after it.
    assert_eq!(packet(&mut ide, &[0xFF], 0).2 >> 4, 0x05);
    ide.channels[1]
        .insert_media(false, Box::new(BlankDisc(20)))
        .unwrap();
    assert_eq!(sense(&mut ide), (0x05, 0x20, 0x00), "the stored sense");
    assert_eq!(sense(&mut ide), (0x06, 0x28, 0x00), "then the attention");
    assert_eq!(sense(&mut ide), (0, 0, 0));
    assert_eq!(capacity(&mut ide), 20);
}

/// GET EVENT STATUS NOTIFICATION, media class, polled: (event code, media status byte).
fn media_event(ide: &mut IdeController) -> (u8, u8) {
    let (d, st, _) = packet(ide, &[0x4A, 1, 0, 0, 0x10, 0, 0, 0, 8], 0xFFFE);
    assert_eq!(
        st & 1,
        0,
        "GESN never fails, not even with a unit attention pending"
    );
    assert_eq!((d[2], d[3]), (4, 0x10), "media class");
    (d[4] & 0x0F, d[5])
}

fn capacity(ide: &mut IdeController) -> u32 {
    let (d, st, _) = packet(ide, &[0x25], 0xFFFE);
    assert_eq!(st & 1, 0);
    u32::from_be_bytes([d[0], d[1], d[2], d[3]]) + 1
}

#[test]
fn atapi_change_disc_reports_the_new_medium() {
    let mut ide = controller();
    assert_eq!(capacity(&mut ide), CD_SECTORS as u32);
    assert_eq!(media_event(&mut ide), (0, 0x02), "no event, disc present");
    let old = ide.channels[1]
        .insert_media(false, Box::new(BlankDisc(1000)))
        .unwrap();
    assert_eq!(
        old.unwrap().sector_count(),
        CD_SECTORS as u64,
        "old disc back"
    );
    // INQUIRY and GESN pass a pending unit attention without consuming it.
    assert_eq!(packet(&mut ide, &[0x12, 0, 0, 0, 36], 0xFFFE).1 & 1, 0);
    assert_eq!(media_event(&mut ide), (2, 0x02), "NewMedia");
    assert_eq!(media_event(&mut ide), (0, 0x02), "reported once");
    let (_, st, err) = packet(&mut ide, &[0x25], 0xFFFE);
    assert_eq!(
        (st & 1, err >> 4),
        (1, 0x06),
        "READ CAPACITY gets the unit attention"
    );
    assert_eq!(sense(&mut ide), (0x06, 0x28, 0x00));
    assert_eq!(capacity(&mut ide), 1000, "new disc's capacity");
    let (d, _, _) = packet(&mut ide, &[0x43, 0, 0, 0, 0, 0, 1, 0, 100], 0xFFFE);
    assert_eq!(
        &d[16..20],
        &1000u32.to_be_bytes(),
        "lead-out of the new disc"
    );
}

#[test]
fn atapi_host_eject_of_a_locked_tray_is_an_eject_request() {
    let mut ide = controller();
    packet(&mut ide, &[0x1E, 0, 0, 0, 1], 0); // PREVENT
    let status = ide.channels[1].cd_status(false).unwrap();
    assert_eq!(
        (status.medium, status.tray_open, status.locked),
        (true, false, true)
    );
    assert_eq!(
        ide.channels[1].eject_media(false, false).err(),
        Some(MediaError::Locked)
    );
    assert_eq!(
        media_event(&mut ide),
        (1, 0x02),
        "EjectRequest, disc still in"
    );
    assert_eq!(packet(&mut ide, &[0x00], 0).1 & 1, 0, "still ready");
    // The guest answers the request: unlock, then eject itself.
    packet(&mut ide, &[0x1E, 0, 0, 0, 0], 0);
    assert_eq!(packet(&mut ide, &[0x1B, 0, 0, 0, 0x02], 0).1 & 1, 0);
    assert_eq!(
        media_event(&mut ide),
        (3, 0x03),
        "MediaRemoval, tray open, disc on it"
    );
    assert_eq!(packet(&mut ide, &[0x00], 0).1 & 1, 1);
    assert_eq!(sense(&mut ide), (0x02, 0x3A, 0x02));

    // Force overrides the lock; a reset ends it.
    let mut ide = controller();
    packet(&mut ide, &[0x1E, 0, 0, 0, 1], 0);
    assert!(ide.channels[1].eject_media(false, true).unwrap().is_some());
    assert_eq!(
        media_event(&mut ide),
        (3, 0x01),
        "MediaRemoval, tray open, empty"
    );
    let (d, _, _) = packet(&mut ide, &[0xBD, 0, 0, 0, 0, 0, 0, 0, 0, 8], 0xFFFE);
    assert_eq!(d[1] & 0x10, 0x10, "mechanism status: door open");
    ide.channels[1]
        .insert_media(false, Box::new(BlankDisc(10)))
        .unwrap();
    assert_eq!(packet(&mut ide, &[0x00], 0).2 >> 4, 0x06, "unit attention");
    assert_eq!(packet(&mut ide, &[0x1E, 0, 0, 0, 1], 0).1 & 1, 0);
    assert!(ide.channels[1].cd_status(false).unwrap().locked);
    ide.reset();
    assert!(!ide.channels[1].cd_status(false).unwrap().locked);
    assert!(ide.channels[1].eject_media(false, false).is_ok());
}

#[test]
fn atapi_inquiry_and_capacity() {
    let mut ide = controller();
    let (d, st, _) = packet(&mut ide, &[0x12, 0, 0, 0, 36], 0xFFFE);
    assert_eq!(st & 1, 0);
    assert_eq!((d[0], d[1], d.len()), (0x05, 0x80, 36));
    assert_eq!(&d[8..16], b"AERO    ");
    let (d, _, _) = packet(&mut ide, &[0x12, 0, 0, 0, 5], 0xFFFE);
    assert_eq!(d.len(), 5, "allocation length honoured");
    let (d, _, _) = packet(&mut ide, &[0x25], 0xFFFE);
    assert_eq!(d, [0, 0, 0, CD_SECTORS as u8 - 1, 0, 0, 8, 0]);
}

#[test]
fn atapi_read10_read12_in_chunks() {
    let mut ide = controller();
    // Byte count limit 4096: 3 sectors arrive as 4096 + 2048.
    let (d, st, _) = packet(&mut ide, &[0x28, 0, 0, 0, 0, 5, 0, 0, 3], 4096);
    assert_eq!(st & 1, 0);
    assert_eq!(d, expected_disk(5..8, 2048));
    // Odd-sized limit smaller than a sector.
    let (d, _, _) = packet(&mut ide, &[0xA8, 0, 0, 0, 0, 9, 0, 0, 0, 1], 1000);
    assert_eq!(d, expected_disk(9..10, 2048));
    let (_, st, err) = packet(
        &mut ide,
        &[0x28, 0, 0, 0, 0, CD_SECTORS as u8, 0, 0, 1],
        0xFFFE,
    );
    assert_eq!((st & 1, err >> 4), (1, 0x05));
    assert_eq!(sense(&mut ide), (0x05, 0x21, 0x00), "LBA out of range");
}

#[test]
fn atapi_read_toc() {
    let mut ide = controller();
    let (d, _, _) = packet(&mut ide, &[0x43, 0, 0, 0, 0, 0, 1, 0, 100], 0xFFFE);
    assert_eq!(d.len(), 20);
    assert_eq!(&d[..4], &[0, 18, 1, 1]);
    assert_eq!(d[6], 1, "track 1");
    assert_eq!(d[14], 0xAA, "lead-out");
    assert_eq!(&d[16..20], &(CD_SECTORS as u32).to_be_bytes());
    let (d, _, _) = packet(&mut ide, &[0x43, 2, 0, 0, 0, 0, 1, 0, 100], 0xFFFE);
    assert_eq!(&d[8..12], &[0, 0, 2, 0], "MSF 00:02:00 for LBA 0");
    let (d, _, _) = packet(&mut ide, &[0x43, 0, 1, 0, 0, 0, 0, 0, 12], 0xFFFE);
    assert_eq!((d.len(), d[6]), (12, 1), "session info");
    let (_, st, _) = packet(&mut ide, &[0x43, 0, 5, 0, 0, 0, 0, 0, 12], 0xFFFE);
    assert_eq!(st & 1, 1, "unsupported format");
}

#[test]
fn atapi_get_configuration_and_events() {
    let mut ide = controller();
    let (d, _, _) = packet(&mut ide, &[0x46, 0, 0, 0, 0, 0, 0, 0x01, 0], 0xFFFE);
    assert_eq!(
        u16::from_be_bytes([d[6], d[7]]),
        0x0008,
        "small disc: CD-ROM profile"
    );
    assert_eq!(&d[8..10], &[0, 0], "profile list first");
    let (d, _, _) = packet(&mut ide, &[0x46, 2, 0, 3, 0, 0, 0, 0x01, 0], 0xFFFE);
    assert_eq!(d.len(), 8 + 8, "RT=2: exactly the removable medium feature");
    assert_eq!(&d[8..10], &[0, 3]);
    // Events: not polled → error; polled media class.
    assert_eq!(
        packet(&mut ide, &[0x4A, 0, 0, 0, 0x10, 0, 0, 0, 8], 0xFFFE).1 & 1,
        1
    );
    let (d, _, _) = packet(&mut ide, &[0x4A, 1, 0, 0, 0x10, 0, 0, 0, 8], 0xFFFE);
    assert_eq!(
        (d[2], d[4], d[5]),
        (4, 0, 2),
        "media class, no change, present"
    );
    let disc = ide.channels[1].eject_media(false, false).unwrap().unwrap();
    ide.channels[1].insert_media(false, disc).unwrap();
    let (d, _, _) = packet(&mut ide, &[0x4A, 1, 0, 0, 0x10, 0, 0, 0, 8], 0xFFFE);
    assert_eq!(d[4], 2, "new media");
    let (d, _, _) = packet(&mut ide, &[0x4A, 1, 0, 0, 0x10, 0, 0, 0, 8], 0xFFFE);
    assert_eq!(d[4], 0, "reported once");
}

#[test]
fn atapi_mode_sense() {
    let mut ide = controller();
    let (d, st, _) = packet(&mut ide, &[0x5A, 0, 0x2A, 0, 0, 0, 0, 0, 255], 0xFFFE);
    assert_eq!(st & 1, 0);
    assert_eq!(u16::from_be_bytes([d[0], d[1]]) as usize, d.len() - 2);
    assert_eq!((d[8], d[9]), (0x2A, 20));
    let (d, _, _) = packet(&mut ide, &[0x5A, 0, 0x3F, 0, 0, 0, 0, 0, 255], 0xFFFE);
    assert_eq!((d[8], d[16]), (0x01, 0x2A), "all pages");
    assert_eq!(
        packet(&mut ide, &[0x5A, 0, 0xEA, 0, 0, 0, 0, 0, 255], 0xFFFE).1 & 1,
        1
    );
    assert_eq!(
        sense(&mut ide),
        (0x05, 0x39, 0x00),
        "saved values not supported"
    );
}

#[test]
fn atapi_eject_and_lock() {
    let mut ide = controller();
    packet(&mut ide, &[0x1E, 0, 0, 0, 1], 0); // PREVENT
    let (_, st, _) = packet(&mut ide, &[0x1B, 0, 0, 0, 0x02], 0);
    assert_eq!(st & 1, 1, "locked tray refuses to eject");
    assert_eq!(sense(&mut ide), (0x05, 0x53, 0x02));
    packet(&mut ide, &[0x1E, 0, 0, 0, 0], 0); // ALLOW
    assert_eq!(packet(&mut ide, &[0x1B, 0, 0, 0, 0x02], 0).1 & 1, 0);
    let (_, st, _) = packet(&mut ide, &[0x00], 0);
    assert_eq!(st & 1, 1);
    assert_eq!(sense(&mut ide), (0x02, 0x3A, 0x02), "tray open");
    // LoEj + Start closes the tray: the disc that stayed on it is back.
    assert_eq!(packet(&mut ide, &[0x1B, 0, 0, 0, 0x03], 0).1 & 1, 0);
    assert_eq!(packet(&mut ide, &[0x00], 0).1 & 1, 0, "ready again");
    assert_eq!(
        packet(&mut ide, &[0xFF], 0).2 >> 4,
        0x05,
        "unknown opcode: illegal request"
    );
    assert_eq!(sense(&mut ide), (0x05, 0x20, 0x00));
}

#[test]
fn atapi_read_dma() {
    let mut ide = controller();
    let mut mem = Memory(vec![0; 0x20000]);
    prd(&mut mem, 0x1000, &[(0x4000, 4096, true)]);
    ide.io_write(0x171, 1, 1); // DMA
    ide.io_write(0x176, 1, 0);
    ide.io_write(0x177, 1, 0xA0);
    write_words(&mut ide, 0x170, &[0x28, 0, 0, 0, 0, 2, 0, 0, 2, 0, 0, 0]);
    start_bm(&mut ide, &mut mem, 1, 0x1000, true);
    assert!(ide.irq_level(1));
    assert_eq!(status(&mut ide, CD_STATUS) & 0x89, 0);
    assert_eq!(ide.io_read(0x172, 1), Some(3));
    assert_eq!(&mem.0[0x4000..0x5000], &expected_disk(2..4, 2048)[..]);
    assert_eq!(ide.bus_master_read(10, 1) & 0x07, 0x04);
}

#[test]
fn random_port_traffic_never_panics() {
    // A deterministic storm of register, data-port and bus-master accesses, biased towards
    // real command opcodes and packet bytes, with garbage PRD tables in guest memory.
    let mut ide = controller();
    let mut mem = Memory((0..0x10000).map(|i| (i * 31 % 256) as u8).collect());
    let commands = [
        0x20, 0x24, 0x30, 0x34, 0xC4, 0xC5, 0x29, 0x39, 0xC8, 0xCA, 0x25, 0x35, 0xEC, 0xA1, 0xA0,
        0xEF, 0xC6, 0xE5, 0xE7, 0x27, 0x90, 0x08,
    ];
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let channel = (x >> 60) as u16 & 1;
        let base = if channel == 0 { 0x1F0 } else { 0x170 };
        let value = (x >> 24) as u32;
        match x % 16 {
            0 => {
                let cmd = commands[(x >> 8) as usize % commands.len()];
                ide.io_write(base + 7, 1, cmd as u32);
            }
            1..=5 => {
                ide.io_write(base + 1 + (x >> 8) as u16 % 6, 1, value & 0xFF);
            }
            6 | 7 => {
                ide.io_write(base, if x & 0x100 != 0 { 4 } else { 2 }, value);
            }
            8 | 9 => {
                ide.io_read(
                    base + (x >> 8) as u16 % 8,
                    if x & 0x100 != 0 { 4 } else { 1 },
                );
            }
            10 => {
                ide.io_write(base + 0x206, 1, value & 0x86);
            }
            11 | 12 => ide.bus_master_write(
                channel * 8 + (x >> 8) as u16 % 8,
                1 << ((x >> 12) % 3),
                value,
                &mut mem,
            ),
            13 => {
                ide.bus_master_read((x >> 8) as u16 % 16, 4);
            }
            14 => ide.channels[channel as usize].service_dma(&mut mem),
            // Now and then the host changes the disc, also in the middle of a transfer.
            _ if (x >> 8).is_multiple_of(64) => {
                if x & 0x4000 != 0 {
                    let _ = ide.channels[1].eject_media(false, x & 0x8000 != 0);
                } else {
                    let _ = ide.channels[1]
                        .insert_media(false, VecDisk::new(1 + (x >> 16) as usize % 64, 2048));
                }
            }
            _ => {
                ide.irq_level(channel as usize);
            }
        }
    }
    // Still a working controller afterwards.
    ide.reset();
    ata28(&mut ide, 0x20, 1, 1, 0);
    assert_eq!(read_words(&mut ide, 0x1F0, 512).len(), 512);
    // And a working CD drive: a fresh disc is announced once, then read.
    ide.channels[1]
        .insert_media(false, VecDisk::new(CD_SECTORS, 2048))
        .unwrap();
    assert_eq!(packet(&mut ide, &[0x00], 0).2 >> 4, 0x06);
    let (d, st, _) = packet(&mut ide, &[0x28, 0, 0, 0, 0, 2, 0, 0, 1], 0xFFFE);
    assert_eq!(st & 1, 0);
    assert_eq!(d, expected_disk(2..3, 2048));
}

#[test]
fn atapi_disc_information_mechanism_read_cd_and_dvd_structure() {
    let mut ide = controller();
    let (d, st, _) = packet(&mut ide, &[0x51, 0, 0, 0, 0, 0, 0, 0, 34], 0xFFFE);
    assert_eq!(st & 1, 0);
    assert_eq!((d.len(), d[2], d[3], d[4]), (34, 0x0E, 1, 1));
    let (d, _, _) = packet(&mut ide, &[0xBD, 0, 0, 0, 0, 0, 0, 0, 0, 8], 0xFFFE);
    assert_eq!(d, [0; 8], "disc present, tray closed");
    assert_eq!(
        packet(&mut ide, &[0xBB, 0, 0xFF, 0xFF], 0).1 & 1,
        0,
        "SET CD SPEED accepted"
    );
    let (d, st, _) = packet(&mut ide, &[0xBE, 0, 0, 0, 0, 3, 0, 0, 2, 0x10], 0xFFFE);
    assert_eq!(st & 1, 0);
    assert_eq!(d, expected_disk(3..5, 2048), "READ CD user data");
    assert_eq!(
        packet(&mut ide, &[0xBE, 1 << 2, 0, 0, 0, 3, 0, 0, 1, 0x10], 0xFFFE).1 & 1,
        1,
        "audio sectors"
    );
    assert_eq!(
        packet(&mut ide, &[0xBE, 0, 0, 0, 0, 3, 0, 0, 1, 0xF8], 0xFFFE).1 & 1,
        1,
        "raw sectors"
    );
    // A CD-sized disc has no DVD structure; a DVD-sized one does.
    assert_eq!(
        packet(&mut ide, &[0xAD, 0, 0, 0, 0, 0, 0, 0, 0, 21], 0xFFFE).2 >> 4,
        0x05
    );
    assert_eq!(sense(&mut ide), (0x05, 0x30, 0x02));
    ide.channels[1].eject_media(false, false).unwrap();
    ide.channels[1]
        .insert_media(false, Box::new(BlankDisc(500_000)))
        .unwrap();
    packet(&mut ide, &[0x00], 0); // consume the unit attention
    let (d, st, _) = packet(&mut ide, &[0xAD, 0, 0, 0, 0, 0, 0, 0, 0, 21], 0xFFFE);
    assert_eq!(st & 1, 0);
    assert_eq!(
        u32::from_be_bytes([d[12], d[13], d[14], d[15]]),
        0x30000 + 500_000 - 1
    );
    let (d, _, _) = packet(&mut ide, &[0x46, 0, 0, 0, 0, 0, 0, 0x01, 0], 0xFFFE);
    assert_eq!(u16::from_be_bytes([d[6], d[7]]), 0x0010, "DVD-ROM profile");
}
