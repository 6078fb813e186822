//! The HBA driven the way a guest driver does it: registers through `mmio_*`, command
//! lists, tables and buffers in a Vec-backed guest memory.

use super::*;
use crate::{MemoryDisk, StorageError};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Ram(Vec<u8>);

impl GuestMemory for Ram {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        let end = addr
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.0.len() as u64)
            .ok_or(DmaError::BadAddress(addr))?;
        buf.copy_from_slice(&self.0[addr as usize..end as usize]);
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        let end = addr
            .checked_add(data.len() as u64)
            .filter(|&e| e <= self.0.len() as u64)
            .ok_or(DmaError::BadAddress(addr))?;
        self.0[addr as usize..end as usize].copy_from_slice(data);
        Ok(())
    }
}

/// A disk whose content is a pattern of the byte offset, counting flushes.
struct PatternDisk {
    data: Vec<u8>,
    flushes: Arc<AtomicUsize>,
}

impl BlockDevice for PatternDisk {
    fn sector_size(&self) -> u32 {
        512
    }
    fn sector_count(&self) -> u64 {
        (self.data.len() / 512) as u64
    }
    fn read_only(&self) -> bool {
        false
    }
    fn read_sectors(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        crate::check_range(self, lba, buf.len())?;
        let at = lba as usize * 512;
        buf.copy_from_slice(&self.data[at..at + buf.len()]);
        Ok(())
    }
    fn write_sectors(&mut self, lba: u64, buf: &[u8]) -> Result<(), StorageError> {
        crate::check_range(self, lba, buf.len())?;
        let at = lba as usize * 512;
        self.data[at..at + buf.len()].copy_from_slice(buf);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        self.flushes.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

fn pattern(i: usize) -> u8 {
    (i / 512 * 13 + i % 251) as u8
}

const SECTORS: usize = 2048;
const CLB: u64 = 0x1000;
const FB: u64 = 0x2000;
const CT: u64 = 0x3000; // command tables, 0x100 each
const BUF: u64 = 0x10000;

struct Guest {
    hba: Ahci,
    ram: Ram,
    flushes: Arc<AtomicUsize>,
}

impl Guest {
    fn new() -> Guest {
        let flushes = Arc::new(AtomicUsize::new(0));
        let disk = PatternDisk {
            data: (0..SECTORS * 512).map(pattern).collect(),
            flushes: flushes.clone(),
        };
        let mut hba = Ahci::new(ICH9_PORTS);
        hba.attach(0, IdeDrive::Disk(Box::new(disk)));
        Guest {
            hba,
            ram: Ram(vec![0; 1 << 20]),
            flushes,
        }
    }

    fn r(&mut self, off: u64) -> u32 {
        self.hba.mmio_read(off, 4) as u32
    }
    fn w(&mut self, off: u64, v: u32) {
        self.hba.mmio_write(off, 4, v as u64)
    }
    fn p(port: usize, reg: u64) -> u64 {
        0x100 + port as u64 * 0x80 + reg
    }

    /// What a driver does at start: HBA reset, AHCI mode, interrupts, port 0 started.
    fn start(&mut self) {
        self.w(GHC, GHC_HR);
        assert_eq!(self.r(GHC) & GHC_HR, 0, "reset completes at once");
        self.w(GHC, GHC_AE | GHC_IE);
        self.w(Self::p(0, P_CLB), CLB as u32);
        self.w(Self::p(0, P_CLBU), 0);
        self.w(Self::p(0, P_FB), FB as u32);
        self.w(Self::p(0, P_FBU), 0);
        self.w(Self::p(0, P_SERR), u32::MAX);
        self.w(Self::p(0, P_IS), u32::MAX);
        self.w(Self::p(0, P_IE), 0xFDC0_00FF);
        self.w(Self::p(0, P_CMD), CMD_FRE);
        self.w(Self::p(0, P_CMD), CMD_FRE | CMD_ST);
        assert_eq!(
            self.r(Self::p(0, P_CMD)) & (CMD_CR | CMD_FR),
            CMD_CR | CMD_FR
        );
        self.hba.process(&mut self.ram); // signature FIS
        self.w(Self::p(0, P_IS), u32::MAX);
        self.w(IS, u32::MAX);
        assert!(!self.hba.irq_level());
    }

    /// Builds slot `slot`'s header + table: the H2D FIS and the PRDT `(addr, len)`.
    fn command(&mut self, slot: u32, fis: [u8; 20], write: bool, prdt: &[(u64, u32)]) {
        let table = CT + u64::from(slot) * 0x100 * 2;
        let mut header = [0u8; 32];
        let dw0 = 5 | if write { 1 << 6 } else { 0 } | (prdt.len() as u32) << 16;
        header[0..4].copy_from_slice(&dw0.to_le_bytes());
        header[8..12].copy_from_slice(&(table as u32).to_le_bytes());
        self.ram.write(CLB + u64::from(slot) * 32, &header).unwrap();
        let mut t = vec![0u8; 0x80 + 16 * prdt.len()];
        t[..20].copy_from_slice(&fis);
        for (i, &(addr, len)) in prdt.iter().enumerate() {
            let e = &mut t[0x80 + 16 * i..0x90 + 16 * i];
            e[0..4].copy_from_slice(&(addr as u32).to_le_bytes());
            e[4..8].copy_from_slice(&((addr >> 32) as u32).to_le_bytes());
            e[12..16].copy_from_slice(&(len - 1).to_le_bytes());
        }
        self.ram.write(table, &t).unwrap();
    }

    fn issue(&mut self, slots: u32) {
        self.w(Self::p(0, P_CI), slots);
        assert!(self.hba.command_pending());
        self.hba.process(&mut self.ram);
    }

    fn prdbc(&mut self, slot: u32) -> u32 {
        let mut b = [0u8; 4];
        self.ram
            .read(CLB + u64::from(slot) * 32 + 4, &mut b)
            .unwrap();
        u32::from_le_bytes(b)
    }

    fn mem(&self, addr: u64, len: usize) -> &[u8] {
        &self.ram.0[addr as usize..addr as usize + len]
    }
}

fn h2d(command: u8, lba: u64, count: u16) -> [u8; 20] {
    let mut f = [0u8; 20];
    f[0] = 0x27;
    f[1] = 0x80;
    f[2] = command;
    let l = lba.to_le_bytes();
    f[4..7].copy_from_slice(&l[..3]);
    f[7] = 0x40;
    f[8..11].copy_from_slice(&l[3..6]);
    f[12..14].copy_from_slice(&count.to_le_bytes());
    f
}

fn fpdma(command: u8, lba: u64, count: u16, tag: u8) -> [u8; 20] {
    let mut f = h2d(command, lba, 0);
    f[3] = count as u8;
    f[11] = (count >> 8) as u8;
    f[12] = tag << 3;
    f
}

#[test]
fn registers_after_reset() {
    let mut g = Guest::new();
    let cap = g.r(CAP);
    assert_eq!(cap & 0x1F, ICH9_PORTS as u32 - 1);
    assert_ne!(cap & (1 << 30), 0, "NCQ");
    assert_eq!((cap >> 8) & 0x1F, 31, "32 slots");
    assert_eq!(g.r(PI), 0x3F);
    assert_eq!(g.r(VS), 0x0001_0300);
    assert_ne!(g.r(GHC) & GHC_AE, 0);
    assert_eq!(g.r(Guest::p(0, P_SIG)), SIG_DISK);
    assert_eq!(g.r(Guest::p(0, P_SSTS)) & 0xF, 3, "device present, link up");
    assert_eq!(g.r(Guest::p(0, P_TFD)) & 0x88, 0, "not busy");
    assert_eq!(g.r(Guest::p(1, P_SSTS)), 0, "empty port");
    assert_eq!(g.r(Guest::p(7, P_SSTS)), 0, "unimplemented port reads 0");
    // CI is ignored while the port is stopped.
    g.w(Guest::p(0, P_CI), 1);
    assert_eq!(g.r(Guest::p(0, P_CI)), 0);
    // BIOS/OS handoff: the OS gets ownership at once.
    assert_eq!(g.r(CAP2) & 1, 1);
    g.w(BOHC, BOHC_OOS);
    assert_eq!(
        g.r(BOHC) & (BOHC_BOS | BOHC_OOS | BOHC_OOC),
        BOHC_OOS | BOHC_OOC
    );
    // Byte access to a dword register.
    assert_eq!(g.hba.mmio_read(VS + 1, 1), 0x03);
    // COMRESET through SCTL takes the link down and back up.
    g.w(Guest::p(0, P_SCTL), 1);
    assert_eq!(g.r(Guest::p(0, P_SSTS)), 0);
    g.w(Guest::p(0, P_SCTL), 0);
    assert_eq!(g.r(Guest::p(0, P_SSTS)) & 0xF, 3);
}

#[test]
fn identify_device_and_interrupt() {
    let mut g = Guest::new();
    g.start();
    g.command(0, h2d(0xEC, 0, 0), false, &[(BUF, 512)]);
    g.issue(1);
    assert_eq!(g.r(Guest::p(0, P_CI)), 0, "completed");
    let id = g.mem(BUF, 512).to_vec();
    assert_eq!(u16::from_le_bytes([id[0], id[1]]), 0x0040, "fixed disk");
    let sectors = u64::from_le_bytes(id[200..208].try_into().unwrap());
    assert_eq!(sectors, SECTORS as u64, "LBA48 capacity");
    assert_ne!(
        u16::from_le_bytes([id[152], id[153]]) & 0x0100,
        0,
        "NCQ supported (word 76)"
    );
    assert_eq!(
        u16::from_le_bytes([id[150], id[151]]) & 0x1F,
        31,
        "queue depth 32"
    );
    assert_eq!(
        id.iter().fold(0u8, |a, &b| a.wrapping_add(b)),
        0,
        "checksum"
    );
    assert_eq!(g.prdbc(0), 512);
    let is = g.r(Guest::p(0, P_IS));
    assert_ne!(is & PXIS_PSS, 0);
    assert_ne!(is & PXIS_DHRS, 0);
    assert_eq!(g.r(IS), 1, "port 0 interrupt");
    assert!(g.hba.irq_level());
    assert!(g.hba.take_msi());
    assert!(!g.hba.take_msi(), "one message per event");
    // The D2H FIS landed in the received-FIS area.
    assert_eq!(g.mem(FB + 0x40, 3), &[0x34, 0x40, 0x50]);
    // Clearing HBA IS first leaves the line up while the port still has its bits.
    g.w(IS, 1);
    assert!(g.hba.irq_level());
    g.w(Guest::p(0, P_IS), is);
    g.w(IS, 1);
    assert!(!g.hba.irq_level());
    // With GHC.IE off, no line.
    g.command(0, h2d(0xEC, 0, 0), false, &[(BUF, 512)]);
    g.w(GHC, GHC_AE);
    g.issue(1);
    assert!(!g.hba.irq_level());
}

#[test]
fn read_dma_ext_over_multi_entry_prdt() {
    let mut g = Guest::new();
    g.start();
    // 9 sectors from LBA 100 into three pieces: 1024 + 2048 + 1536 bytes.
    let prdt = [(BUF, 1024), (BUF + 0x8000, 2048), (BUF + 0x20000, 1536)];
    g.command(3, h2d(0x25, 100, 9), false, &prdt);
    g.issue(1 << 3);
    assert_eq!(g.r(Guest::p(0, P_TFD)) & 0xFF, 0x50);
    assert_eq!(g.prdbc(3), 9 * 512);
    let expect: Vec<u8> = (100 * 512..109 * 512).map(pattern).collect();
    let mut got = g.mem(BUF, 1024).to_vec();
    got.extend_from_slice(g.mem(BUF + 0x8000, 2048));
    got.extend_from_slice(g.mem(BUF + 0x20000, 1536));
    assert_eq!(got, expect);
}

#[test]
fn write_then_read_back_and_flush() {
    let mut g = Guest::new();
    g.start();
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
    g.ram.write(BUF, &data).unwrap();
    g.command(0, h2d(0x35, 1000, 8), true, &[(BUF, 4096)]);
    g.issue(1);
    assert_eq!(g.r(Guest::p(0, P_IS)) & PXIS_TFES, 0);
    g.command(1, h2d(0xC8, 1000, 8), false, &[(BUF + 0x10000, 4096)]);
    g.issue(2);
    assert_eq!(g.mem(BUF + 0x10000, 4096), &data[..]);
    assert_eq!(g.flushes.load(Ordering::SeqCst), 0);
    g.command(2, h2d(0xEA, 0, 0), false, &[]);
    g.issue(4);
    assert_eq!(
        g.flushes.load(Ordering::SeqCst),
        1,
        "FLUSH CACHE EXT reaches the disk"
    );
    assert_eq!(g.r(Guest::p(0, P_CI)), 0);
}

#[test]
fn ncq_with_several_tags() {
    let mut g = Guest::new();
    g.start();
    let data: Vec<u8> = (0..1024u32).map(|i| (i ^ 0x5A) as u8).collect();
    g.ram.write(BUF + 0x30000, &data).unwrap();
    g.command(0, fpdma(0x60, 10, 2, 0), false, &[(BUF, 1024)]);
    g.command(5, fpdma(0x60, 20, 4, 5), false, &[(BUF + 0x1000, 2048)]);
    g.command(9, fpdma(0x61, 500, 2, 9), true, &[(BUF + 0x30000, 1024)]);
    let tags = 1 | 1 << 5 | 1 << 9;
    g.w(Guest::p(0, P_SACT), tags);
    assert_eq!(g.r(Guest::p(0, P_SACT)), tags);
    g.issue(tags);
    assert_eq!(g.r(Guest::p(0, P_SACT)), 0, "every tag completed");
    assert_eq!(g.r(Guest::p(0, P_CI)), 0);
    assert_ne!(g.r(Guest::p(0, P_IS)) & PXIS_SDBS, 0);
    assert_eq!(g.mem(FB + 0x58, 2), &[0xA1, 0x40], "Set Device Bits FIS");
    assert_eq!(
        g.mem(BUF, 1024),
        &(10 * 512..12 * 512).map(pattern).collect::<Vec<_>>()[..]
    );
    assert_eq!(
        g.mem(BUF + 0x1000, 2048),
        &(20 * 512..24 * 512).map(pattern).collect::<Vec<_>>()[..]
    );
    g.command(1, h2d(0x25, 500, 2), false, &[(BUF + 0x40000, 1024)]);
    g.issue(2);
    assert_eq!(g.mem(BUF + 0x40000, 1024), &data[..]);
}

#[test]
fn bad_prdt_gives_error_status_not_panic() {
    let mut g = Guest::new();
    g.start();
    // Data buffer beyond guest memory.
    g.command(0, h2d(0x25, 0, 8), false, &[(0xFFFF_FFF0_0000, 4096)]);
    g.issue(1);
    let is = g.r(Guest::p(0, P_IS));
    assert_ne!(is & PXIS_TFES, 0, "task file error");
    let tfd = g.r(Guest::p(0, P_TFD));
    assert_ne!(tfd & 1, 0, "ERR in status");
    assert_ne!(tfd >> 8 & 0x04, 0, "ABRT in error");
    assert_eq!(g.r(Guest::p(0, P_CI)), 1, "failing slot stays issued");
    assert!(g.hba.irq_level());
    // The port is stalled until software restarts it.
    g.command(1, h2d(0xEC, 0, 0), false, &[(BUF, 512)]);
    g.w(Guest::p(0, P_CI), 2);
    g.hba.process(&mut g.ram);
    assert_eq!(g.r(Guest::p(0, P_CI)), 3);
    g.w(Guest::p(0, P_CMD), CMD_FRE);
    assert_eq!(g.r(Guest::p(0, P_CI)), 0, "stopping clears CI");
    g.w(Guest::p(0, P_IS), u32::MAX);
    g.w(Guest::p(0, P_CMD), CMD_FRE | CMD_ST);
    g.command(1, h2d(0xEC, 0, 0), false, &[(BUF, 512)]);
    g.issue(2);
    assert_eq!(g.r(Guest::p(0, P_IS)) & PXIS_TFES, 0, "works again");

    // PRDT too small, table or header out of memory, LBA out of range, huge PRDTL.
    let cases: [fn(&mut Guest); 5] = [
        |g| g.command(0, h2d(0x25, 0, 8), false, &[(BUF, 512)]),
        |g| g.command(0, h2d(0x25, SECTORS as u64 - 1, 2), false, &[(BUF, 1024)]),
        |g| {
            g.command(0, h2d(0x25, 0, 1), false, &[(BUF, 512)]);
            g.ram.write(CLB + 8, &0xFFFF_FF80u32.to_le_bytes()).unwrap(); // CTBA outside RAM
        },
        |g| {
            g.command(0, h2d(0x25, 0, 1), false, &[(BUF, 512)]);
            g.ram
                .write(CLB, &(5u32 | 0xFFFF << 16).to_le_bytes())
                .unwrap(); // 65535 entries
        },
        |g| {
            let mut f = h2d(0x25, 0, 1);
            f[0] = 0x34; // not an H2D FIS
            g.command(0, f, false, &[(BUF, 512)]);
        },
    ];
    for (i, case) in cases.iter().enumerate() {
        g.w(Guest::p(0, P_CMD), CMD_FRE);
        g.w(Guest::p(0, P_IS), u32::MAX);
        g.w(Guest::p(0, P_CMD), CMD_FRE | CMD_ST);
        case(&mut g);
        g.issue(1);
        assert_ne!(g.r(Guest::p(0, P_IS)) & PXIS_TFES, 0, "case {i}");
    }
    // Command list outside memory.
    g.w(Guest::p(0, P_CMD), CMD_FRE);
    g.w(Guest::p(0, P_CLB), 0xFFFF_FC00);
    g.w(Guest::p(0, P_CMD), CMD_FRE | CMD_ST);
    g.issue(1);
    assert_ne!(g.r(Guest::p(0, P_IS)) & PXIS_TFES, 0);
}

#[test]
fn atapi_identify_and_read10() {
    let mut hba = Ahci::new(ICH9_PORTS);
    let iso: Vec<u8> = (0..64 * 2048).map(|i| (i / 2048 + i % 7) as u8).collect();
    hba.attach(
        2,
        IdeDrive::Cdrom(Some(Box::new(
            MemoryDisk::new(iso.clone(), 2048, true).unwrap(),
        ))),
    );
    let mut g = Guest {
        hba,
        ram: Ram(vec![0; 1 << 20]),
        flushes: Arc::new(AtomicUsize::new(0)),
    };
    assert_eq!(g.r(Guest::p(2, P_SIG)), SIG_ATAPI);
    let port = |reg| Guest::p(2, reg);
    g.w(GHC, GHC_AE | GHC_IE);
    g.w(port(P_CLB), CLB as u32);
    g.w(port(P_FB), FB as u32);
    g.w(port(P_IE), u32::MAX);
    g.w(port(P_CMD), CMD_FRE | CMD_ST);
    assert_ne!(g.r(port(P_CMD)) & CMD_ATAPI, 0);
    g.hba.process(&mut g.ram);
    g.w(port(P_IS), u32::MAX);

    g.command(0, h2d(0xA1, 0, 0), false, &[(BUF, 512)]);
    g.w(port(P_CI), 1);
    g.hba.process(&mut g.ram);
    assert_eq!(g.r(port(P_CI)), 0);
    assert_eq!(
        u16::from_le_bytes([g.ram.0[BUF as usize], g.ram.0[BUF as usize + 1]]),
        0x85C0
    );

    // READ(10) of 3 sectors from LBA 5 over two PRDT entries.
    let mut f = h2d(0xA0, 0, 0);
    f[3] = 1; // DMA
    g.command(1, f, false, &[(BUF + 0x1000, 4096), (BUF + 0x4000, 2048)]);
    let cdb = [0x28, 0, 0, 0, 0, 5, 0, 0, 3, 0, 0, 0];
    let mut header = [0u8; 4];
    g.ram.read(CLB + 32, &mut header).unwrap();
    header[0] |= 1 << 5; // ATAPI
    g.ram.write(CLB + 32, &header).unwrap();
    g.ram.write(CT + 2 * 0x100 + 0x40, &cdb).unwrap();
    g.w(port(P_CI), 2);
    g.hba.process(&mut g.ram);
    assert_eq!(g.r(port(P_IS)) & PXIS_TFES, 0);
    assert_eq!(g.prdbc(1), 3 * 2048);
    let mut got = g.mem(BUF + 0x1000, 4096).to_vec();
    got.extend_from_slice(g.mem(BUF + 0x4000, 2048));
    assert_eq!(got, &iso[5 * 2048..8 * 2048]);

    // Beyond the disc: CHECK CONDITION, sense key 5 in the error register.
    let cdb = [0x28, 0, 0, 0, 0, 63, 0, 0, 2, 0, 0, 0];
    g.ram.write(CT + 2 * 0x100 + 0x40, &cdb).unwrap();
    g.w(port(P_CI), 2);
    g.hba.process(&mut g.ram);
    assert_ne!(g.r(port(P_IS)) & PXIS_TFES, 0);
    assert_eq!(g.r(port(P_TFD)) >> 12 & 0xF, 5);
    assert!(g.hba.irq_level());
}

/// Hostile guests: random command lists, tables, PRDTs and FIS bytes in memory plus random
/// register writes (also with a CD drive on port 1, and PRDTs reaching past the 1 MiB of
/// guest memory) — the HBA must never panic or hang. A bounded run with a fixed seed.
#[test]
fn random_guest_memory_and_registers_never_panic() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        // xorshift64*
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        seed.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    for round in 0..300 {
        let mut g = Guest::new();
        let cd = MemoryDisk::new(vec![0x5A; 2048 * 64], 2048, true).unwrap();
        g.hba.attach(1, IdeDrive::Cdrom(Some(Box::new(cd))));
        g.start();
        // Random bytes over the command list, FIS area and command tables; some rounds
        // keep plausible headers so the command paths (not just header checks) run.
        for b in g.ram.0[CLB as usize..(CT + 0x4000) as usize].iter_mut() {
            *b = next() as u8;
        }
        if round % 2 == 0 {
            for slot in 0..32u64 {
                let ops = [
                    0x25u8,
                    0x35,
                    0x60,
                    0x61,
                    0xEC,
                    0xA1,
                    0xE7,
                    0xEA,
                    0xEF,
                    0xA0,
                    next() as u8,
                ];
                let fis = h2d(
                    ops[(next() % ops.len() as u64) as usize],
                    next() % 4096,
                    (next() % 300) as u16,
                );
                let prdt: Vec<(u64, u32)> = (0..(next() % 6))
                    .map(|_| (next() % (1 << 21), (next() % 0x5000 + 1) as u32))
                    .collect();
                g.command(slot as u32, fis, next() % 2 == 0, &prdt);
                if next() % 3 == 0 {
                    // A few hostile PRDT lengths/addresses and table pointers.
                    let off = (CLB + slot * 32 + 8) as usize;
                    g.ram.0[off..off + 4].copy_from_slice(&(next() as u32).to_le_bytes());
                }
            }
        }
        for _ in 0..40 {
            let port = (next() % 3) as usize;
            let regs = [P_CI, P_SACT, P_IS, P_CMD, P_IE, P_SCTL, P_SERR, P_CLB, P_FB];
            let reg = regs[(next() % regs.len() as u64) as usize];
            let value = if reg == P_CMD {
                (next() as u32 & 0x1F) | CMD_FRE
            } else {
                next() as u32
            };
            g.w(Guest::p(port, reg), value);
            if next() % 4 == 0 {
                g.w(
                    [GHC, IS, BOHC][(next() % 3) as usize],
                    next() as u32 & !GHC_HR,
                );
            }
            // The host changes the disc now and then (the guest may hold the tray).
            match next() % 16 {
                0 => {
                    let _ = g.hba.eject_media(1, next() % 2 == 0);
                }
                1 => {
                    let sectors = (next() % 64 + 1) as usize;
                    let disc = MemoryDisk::new(vec![0xA5; 2048 * sectors], 2048, true).unwrap();
                    let _ = g.hba.insert_media(1, Box::new(disc));
                }
                _ => {}
            }
            g.hba.process(&mut g.ram);
            let _ = g.hba.irq_level();
            let _ = g.hba.take_msi();
            let _ = g.r(Guest::p(port, P_TFD));
        }
    }
}

/// A CD drive on port 2 (empty or with `disc`), the port started as a driver does.
fn cd_guest(disc: Option<Box<dyn BlockDevice>>) -> Guest {
    let mut hba = Ahci::new(ICH9_PORTS);
    hba.attach(2, IdeDrive::Cdrom(disc));
    let mut g = Guest {
        hba,
        ram: Ram(vec![0; 1 << 20]),
        flushes: Arc::new(AtomicUsize::new(0)),
    };
    g.w(GHC, GHC_AE | GHC_IE);
    g.w(Guest::p(2, P_CLB), CLB as u32);
    g.w(Guest::p(2, P_FB), FB as u32);
    g.w(Guest::p(2, P_CMD), CMD_FRE | CMD_ST);
    g.hba.process(&mut g.ram);
    g.w(Guest::p(2, P_IS), u32::MAX);
    g
}

/// One PIO packet command on port 2: Ok(data) or Err(sense key from PxTFD's error byte).
/// After an error the port is restarted (ST off and on), as drivers do.
fn cd_packet(g: &mut Guest, cdb: &[u8], len: u32) -> Result<Vec<u8>, u8> {
    let port = |reg| Guest::p(2, reg);
    g.command(0, h2d(0xA0, 0, 0), false, &[(BUF, len.max(2))]);
    let mut header = [0u8; 4];
    g.ram.read(CLB, &mut header).unwrap();
    header[0] |= 1 << 5; // ATAPI
    g.ram.write(CLB, &header).unwrap();
    let mut packet = [0u8; 16];
    packet[..cdb.len()].copy_from_slice(cdb);
    g.ram.write(CT + 0x40, &packet).unwrap();
    g.ram.0[BUF as usize..(BUF + u64::from(len)) as usize].fill(0xEE);
    g.w(port(P_CI), 1);
    g.hba.process(&mut g.ram);
    let is = g.r(port(P_IS));
    g.w(port(P_IS), u32::MAX);
    if is & PXIS_TFES != 0 {
        let key = (g.r(port(P_TFD)) >> 12 & 0xF) as u8;
        g.w(port(P_CMD), CMD_FRE);
        g.w(port(P_CMD), CMD_FRE | CMD_ST);
        return Err(key);
    }
    let n = g.prdbc(0) as usize;
    Ok(g.mem(BUF, n).to_vec())
}

/// The sense (key, ASC, ASCQ) through REQUEST SENSE on port 2.
fn cd_sense(g: &mut Guest) -> (u8, u8, u8) {
    let d = cd_packet(g, &[0x03, 0, 0, 0, 18], 18).unwrap();
    (d[2] & 0x0F, d[12], d[13])
}

#[test]
fn atapi_media_change_on_an_ahci_port() {
    let disc = |sectors: usize| -> Box<dyn BlockDevice> {
        let data = (0..sectors * 2048).map(|i| (i / 2048) as u8).collect();
        Box::new(MemoryDisk::new(data, 2048, true).unwrap())
    };
    let mut g = cd_guest(None);
    assert_eq!(cd_packet(&mut g, &[0x00], 0), Err(0x02), "empty drive");
    assert_eq!(
        cd_sense(&mut g),
        (0x02, 0x3A, 0x01),
        "no medium, tray closed"
    );

    assert!(g.hba.insert_media(2, disc(40)).unwrap().is_none());
    let events = cd_packet(&mut g, &[0x4A, 1, 0, 0, 0x10, 0, 0, 0, 8], 8).unwrap();
    assert_eq!((events[4], events[5]), (2, 0x02), "NewMedia, present");
    assert_eq!(
        cd_packet(&mut g, &[0x25], 8),
        Err(0x06),
        "unit attention once"
    );
    assert_eq!(cd_sense(&mut g), (0x06, 0x28, 0x00));
    let cap = cd_packet(&mut g, &[0x25], 8).unwrap();
    assert_eq!(&cap[..4], &39u32.to_be_bytes());
    let data = cd_packet(&mut g, &[0x28, 0, 0, 0, 0, 7, 0, 0, 1], 2048).unwrap();
    assert_eq!(data, vec![7u8; 2048], "reads the new disc");

    // Locked: the host's eject becomes a request; the guest unlocks and ejects.
    cd_packet(&mut g, &[0x1E, 0, 0, 0, 1], 0).unwrap();
    assert_eq!(g.hba.cd_status(2).map(|s| s.locked), Some(true));
    assert_eq!(g.hba.eject_media(2, false).err(), Some(MediaError::Locked));
    let events = cd_packet(&mut g, &[0x4A, 1, 0, 0, 0x10, 0, 0, 0, 8], 8).unwrap();
    assert_eq!(events[4], 1, "EjectRequest");
    cd_packet(&mut g, &[0x1E, 0, 0, 0, 0], 0).unwrap();
    cd_packet(&mut g, &[0x1B, 0, 0, 0, 0x02], 0).unwrap();
    assert_eq!(cd_packet(&mut g, &[0x00], 0), Err(0x02));
    assert_eq!(cd_sense(&mut g), (0x02, 0x3A, 0x02), "tray open");
    // The host takes the disc off the open tray and puts another in.
    assert!(g.hba.eject_media(2, false).unwrap().is_some());
    g.hba.insert_media(2, disc(3)).unwrap();
    assert_eq!(cd_packet(&mut g, &[0x00], 0), Err(0x06));
    let cap = cd_packet(&mut g, &[0x25], 8).unwrap();
    assert_eq!(&cap[..4], &2u32.to_be_bytes(), "the second disc's last LBA");
    assert_eq!(
        g.hba.eject_media(0, false).err(),
        Some(MediaError::NoCdDrive)
    );
}

/// One non-packet ATA command on port 2 (data, if any, to BUF): PxIS after it.
fn cd_ata(g: &mut Guest, fis: [u8; 20]) -> u32 {
    g.command(0, fis, false, &[(BUF, 512)]);
    g.w(Guest::p(2, P_CI), 1);
    g.hba.process(&mut g.ram);
    let is = g.r(Guest::p(2, P_IS));
    g.w(Guest::p(2, P_IS), u32::MAX);
    g.w(IS, u32::MAX);
    is
}

/// IDENTIFY PACKET DEVICE words 78 and 79 (SATA features supported / enabled).
fn sata_features(g: &mut Guest) -> (u16, u16) {
    assert_eq!(cd_ata(g, h2d(0xA1, 0, 0)) & PXIS_TFES, 0);
    let word = |i: u64| {
        u16::from_le_bytes([
            g.ram.0[(BUF + 2 * i) as usize],
            g.ram.0[(BUF + 2 * i + 1) as usize],
        ])
    };
    assert_eq!(
        word(76),
        0x0006,
        "SATA Gen1/Gen2: Linux reads 78/79 only then"
    );
    (word(78), word(79))
}

/// SET FEATURES `feature` (10h enable / 90h disable) of SATA feature `which`.
fn sata_feature(g: &mut Guest, feature: u8, which: u16) -> u32 {
    let mut f = h2d(0xEF, 0, which);
    f[3] = feature;
    cd_ata(g, f)
}

#[test]
fn atapi_request_sense_of_an_empty_drive_on_ahci() {
    let mut g = cd_guest(None);
    assert_eq!(
        cd_sense(&mut g),
        (0x02, 0x3A, 0x01),
        "nothing stored: the current condition, no medium with the tray closed"
    );
    assert_eq!(cd_packet(&mut g, &[0xFF], 0), Err(0x05));
    assert_eq!(
        cd_sense(&mut g),
        (0x05, 0x20, 0x00),
        "the stored sense first"
    );
    assert_eq!(
        cd_sense(&mut g),
        (0x02, 0x3A, 0x01),
        "then the condition again"
    );
}

/// SATA asynchronous notification of ATAPI media changes (what Linux's libata turns on
/// with libata.atapi_an=1): CAP.SSNTF and IDENTIFY word 78 advertise it, SET FEATURES
/// 10h/05h enables it, and then a host media change sends a Set Device Bits FIS with the
/// N and I bits: PxSNTF bit 0 and PxIS.SDBS are set and the HBA interrupts.
#[test]
fn atapi_asynchronous_notification_of_host_media_changes() {
    let disc = |sectors: usize| -> Box<dyn BlockDevice> {
        Box::new(MemoryDisk::new(vec![0x5A; sectors * 2048], 2048, true).unwrap())
    };
    let port = |reg| Guest::p(2, reg);
    let sdb = FB + RFIS_SDB;
    let mut g = cd_guest(None);
    g.w(port(P_IE), u32::MAX);
    assert_ne!(g.r(CAP) & (1 << 29), 0, "CAP.SSNTF");
    assert_eq!(sata_features(&mut g), (0x0020, 0x0000), "AN supported, off");

    // Off: a media change is only seen by polling.
    g.hba.insert_media(2, disc(4)).unwrap();
    assert!(!g.hba.command_pending());
    g.hba.process(&mut g.ram);
    assert_eq!((g.r(port(P_IS)), g.r(port(P_SNTF))), (0, 0));

    assert_eq!(sata_feature(&mut g, 0x10, 0x05), PXIS_DHRS, "enable AN");
    assert_eq!(sata_features(&mut g), (0x0020, 0x0020), "AN enabled");
    g.ram.write(sdb, &[0xEE; 8]).unwrap();
    assert!(g.hba.eject_media(2, false).unwrap().is_some());
    assert!(g.hba.command_pending(), "a notification to post");
    assert_eq!(
        g.mem(sdb, 8),
        &[0xEE; 8],
        "nothing is written before process()"
    );
    g.hba.process(&mut g.ram);
    assert_eq!(
        g.mem(sdb, 8),
        &[0xA1, 0xC0, 0x50, 0, 0, 0, 0, 0],
        "SDB FIS: N + I, PM port 0, status DRDY DSC, no error"
    );
    assert_eq!(g.r(port(P_IS)), PXIS_SDBS);
    assert_eq!(g.r(port(P_SNTF)), 0x0000_0001);
    assert_eq!(g.r(port(P_TFD)), 0x50, "status unchanged");
    assert_eq!(g.r(IS), 1 << 2);
    assert!(g.hba.irq_level());
    assert!(g.hba.take_msi());
    assert!(!g.hba.command_pending(), "posted once");
    // The driver clears PxSNTF (write 1) and PxIS, then asks what happened.
    g.w(port(P_SNTF), 1);
    g.w(port(P_IS), PXIS_SDBS);
    g.w(IS, 1 << 2);
    assert_eq!((g.r(port(P_SNTF)), g.hba.irq_level()), (0, false));
    let events = cd_packet(&mut g, &[0x4A, 1, 0, 0, 0x10, 0, 0, 0, 8], 8).unwrap();
    assert_eq!((events[4], events[5]), (3, 0x01), "MediaRemoval, tray open");

    // An insert and the eject request of a locked tray are announced too.
    g.hba.insert_media(2, disc(8)).unwrap();
    g.hba.process(&mut g.ram);
    assert_eq!((g.r(port(P_IS)), g.r(port(P_SNTF))), (PXIS_SDBS, 1));
    g.w(port(P_SNTF), 1);
    g.w(port(P_IS), u32::MAX);
    assert_eq!(cd_packet(&mut g, &[0x00], 0), Err(0x06), "unit attention");
    cd_packet(&mut g, &[0x1E, 0, 0, 0, 1], 0).unwrap();
    assert_eq!(g.hba.eject_media(2, false).err(), Some(MediaError::Locked));
    g.hba.process(&mut g.ram);
    assert_eq!((g.r(port(P_IS)), g.r(port(P_SNTF))), (PXIS_SDBS, 1));
    g.w(port(P_SNTF), 1);
    g.w(port(P_IS), u32::MAX);
    let events = cd_packet(&mut g, &[0x4A, 1, 0, 0, 0x10, 0, 0, 0, 8], 8).unwrap();
    assert_eq!(events[4], 1, "EjectRequest");
    cd_packet(&mut g, &[0x1E, 0, 0, 0, 0], 0).unwrap();

    // With FIS receive off the notification waits for PxCMD.FRE.
    g.w(port(P_CMD), 0);
    g.hba.eject_media(2, false).unwrap();
    assert!(!g.hba.command_pending());
    g.hba.process(&mut g.ram);
    assert_eq!(g.r(port(P_IS)), 0);
    g.w(port(P_CMD), CMD_FRE | CMD_ST);
    assert!(g.hba.command_pending());
    g.hba.process(&mut g.ram);
    assert_eq!(g.r(port(P_IS)), PXIS_SDBS);
    g.w(port(P_SNTF), 1);
    g.w(port(P_IS), u32::MAX);

    // Disabled again (SET FEATURES 90h/05h): silent.
    assert_eq!(sata_feature(&mut g, 0x90, 0x05), PXIS_DHRS);
    assert_eq!(sata_features(&mut g), (0x0020, 0x0000));
    g.hba.insert_media(2, disc(2)).unwrap();
    assert!(!g.hba.command_pending());
    // Enabled, then a COMRESET: the device forgets it (no settings preservation).
    assert_eq!(sata_feature(&mut g, 0x10, 0x05), PXIS_DHRS);
    g.w(port(P_SCTL), 1);
    g.w(port(P_SCTL), 0);
    g.hba.process(&mut g.ram); // signature FIS
    g.w(port(P_IS), u32::MAX);
    assert_eq!(
        sata_features(&mut g),
        (0x0020, 0x0000),
        "off after COMRESET"
    );
    g.hba.eject_media(2, false).unwrap();
    assert!(!g.hba.command_pending());
    assert_eq!(g.r(port(P_SNTF)), 0);
}

#[test]
fn comreset_asserted_reads_status_7f_until_released() {
    let mut g = Guest::new();
    g.start();
    g.w(Guest::p(0, P_SCTL), 1);
    assert_eq!(g.r(Guest::p(0, P_SSTS)) & 0xF, 0, "link down while DET = 1");
    assert_eq!(
        g.r(Guest::p(0, P_TFD)) & 0xFF,
        0x7F,
        "PxTFD.STS 7Fh during COMRESET (AHCI 1.3 10.4.2)"
    );
    g.w(Guest::p(0, P_SCTL), 0);
    assert_eq!(g.r(Guest::p(0, P_SSTS)) & 0xF, 3);
    assert_eq!(
        g.r(Guest::p(0, P_TFD)),
        0x150,
        "signature status after the reset"
    );
}

#[test]
fn signature_fis_sets_its_interrupt_bit_with_dhrs() {
    let mut g = Guest::new();
    g.w(Guest::p(0, P_FB), FB as u32);
    g.w(Guest::p(0, P_IE), PXIS_DHRS);
    g.w(Guest::p(0, P_CMD), CMD_FRE);
    assert!(g.hba.command_pending(), "the signature FIS waits for FRE");
    g.hba.process(&mut g.ram);
    assert_ne!(g.r(Guest::p(0, P_IS)) & PXIS_DHRS, 0);
    // Type, I bit, status 50h, error 01h, LBA 000001h, count 1.
    assert_eq!(g.mem(FB + 0x40, 4), &[0x34, 0x40, 0x50, 0x01]);
    assert_eq!(g.mem(FB + 0x44, 1), &[0x01]);
    assert_eq!(g.mem(FB + 0x4C, 1), &[0x01]);
}

#[test]
fn ncq_command_is_accepted_with_a_d2h_fis_without_interrupt() {
    let mut g = Guest::new();
    g.start();
    g.ram.write(FB + 0x40, &[0xEE; 20]).unwrap();
    g.command(7, fpdma(0x60, 10, 1, 7), false, &[(BUF, 512)]);
    g.w(Guest::p(0, P_SACT), 1 << 7);
    g.issue(1 << 7);
    // The acceptance FIS: BSY clear, I = 0, device register echoed; completion by SDB.
    assert_eq!(g.mem(FB + 0x40, 4), &[0x34, 0x00, 0x50, 0x00]);
    assert_eq!(g.mem(FB + 0x47, 1), &[0x40]);
    let is = g.r(Guest::p(0, P_IS));
    assert_eq!(is & PXIS_DHRS, 0, "no DHRS for a FIS without its I bit");
    assert_ne!(is & PXIS_SDBS, 0);
    assert_eq!(g.mem(FB + 0x58, 8), &[0xA1, 0x40, 0x50, 0, 0x80, 0, 0, 0]);
    assert_eq!(g.r(Guest::p(0, P_TFD)), 0x50);
}

#[test]
fn completion_fises_echo_the_device_register() {
    let mut g = Guest::new();
    g.start();
    let mut fis = h2d(0xEC, 0, 0);
    fis[7] = 0xE0;
    g.command(0, fis, false, &[(BUF, 512)]);
    g.issue(1);
    assert_eq!(g.mem(FB + 0x27, 1), &[0xE0], "PIO Setup FIS device");
    assert_eq!(g.mem(FB + 0x47, 1), &[0xE0], "D2H FIS device");
    g.command(1, h2d(0x25, 3, 1), false, &[(BUF, 512)]);
    g.issue(2);
    assert_eq!(g.mem(FB + 0x47, 1), &[0x40]);
}

#[test]
fn ncq_error_uses_set_device_bits_and_the_error_log_names_the_tag() {
    let mut g = Guest::new();
    g.start();
    // Tag 2 reads past the end of the disk.
    g.command(
        2,
        fpdma(0x60, SECTORS as u64 - 1, 2, 2),
        false,
        &[(BUF, 1024)],
    );
    g.w(Guest::p(0, P_SACT), 1 << 2);
    g.issue(1 << 2);
    let is = g.r(Guest::p(0, P_IS));
    assert_eq!(is & (PXIS_TFES | PXIS_SDBS), PXIS_TFES | PXIS_SDBS);
    assert_eq!(is & PXIS_DHRS, 0, "no D2H FIS reports a queued error");
    assert_eq!(g.r(Guest::p(0, P_CI)), 0, "the command was accepted");
    assert_eq!(
        g.r(Guest::p(0, P_SACT)),
        1 << 2,
        "the failed tag stays active"
    );
    assert_eq!(g.r(Guest::p(0, P_TFD)), 0x1441);
    // SDB FIS: I bit, status 41h, error, no tag completed.
    assert_eq!(g.mem(FB + 0x58, 8), &[0xA1, 0x40, 0x41, 0x14, 0, 0, 0, 0]);
    // The port is stopped until software restarts it; then READ LOG EXT page 10h.
    g.w(Guest::p(0, P_CMD), CMD_FRE);
    assert_eq!(g.r(Guest::p(0, P_SACT)), 0);
    g.w(Guest::p(0, P_IS), u32::MAX);
    g.w(Guest::p(0, P_CMD), CMD_FRE | CMD_ST);
    let mut log_cmd = h2d(0x2F, 0x10, 1);
    log_cmd[7] = 0;
    g.command(0, log_cmd, false, &[(BUF, 512)]);
    g.issue(1);
    assert_eq!(g.r(Guest::p(0, P_TFD)) & 1, 0, "READ LOG EXT accepted");
    assert_ne!(g.r(Guest::p(0, P_IS)) & PXIS_PSS, 0, "PIO data in");
    let log = g.mem(BUF, 512).to_vec();
    assert_eq!(log[0], 2, "NQ = 0, tag 2");
    assert_eq!(&log[2..4], &[0x41, 0x14]);
    assert_eq!(
        &log[4..7],
        &((SECTORS - 1) as u32).to_le_bytes()[..3],
        "LBA"
    );
    assert_eq!(
        log.iter().fold(0u8, |a, &b| a.wrapping_add(b)),
        0,
        "checksum"
    );
    // Reading the log cleared it; READ LOG DMA EXT of the directory lists page 10h.
    g.command(0, h2d(0x47, 0x10, 1), false, &[(BUF, 512)]);
    g.issue(1);
    assert_eq!(g.mem(BUF, 1), &[0], "no error left");
    g.command(0, h2d(0x47, 0x00, 1), false, &[(BUF, 512)]);
    g.issue(1);
    assert_eq!(g.mem(BUF, 2), &[1, 0], "GPL version 1");
    assert_eq!(g.mem(BUF + 0x20, 2), &[1, 0], "log 10h: one page");
    // An unknown log is aborted.
    g.command(0, h2d(0x2F, 0x80, 1), false, &[(BUF, 512)]);
    g.issue(1);
    assert_ne!(g.r(Guest::p(0, P_IS)) & PXIS_TFES, 0);
    // IDENTIFY says general-purpose logging is there (words 84/87 bit 5).
    let mut g = Guest::new();
    g.start();
    g.command(0, h2d(0xEC, 0, 0), false, &[(BUF, 512)]);
    g.issue(1);
    let id = g.mem(BUF, 512).to_vec();
    assert_ne!(u16::from_le_bytes([id[168], id[169]]) & 0x20, 0);
    assert_ne!(u16::from_le_bytes([id[174], id[175]]) & 0x20, 0);
}

#[test]
fn packet_command_receives_the_cdb_request_pio_setup_fis() {
    let mut g = cd_guest(None);
    g.ram.write(FB + 0x20, &[0xEE; 20]).unwrap();
    let _ = cd_packet(&mut g, &[0x00], 0); // TEST UNIT READY, no data
    // Host to device (D = 0), no I bit, status 58h, byte count limit, C/D = 1, 12 bytes.
    let fis = g.mem(FB + 0x20, 20).to_vec();
    assert_eq!(&fis[..3], &[0x5F, 0x00, 0x58]);
    assert_eq!(fis[12], 1, "interrupt reason C/D");
    assert_eq!(&fis[16..18], &[12, 0], "transfer count: the CDB");
}
