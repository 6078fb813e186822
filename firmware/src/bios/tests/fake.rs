//! A fake machine for trap tests: disks in memory, CMOS, a tiny i8042, PCI config
//! space with sizable BARs, and a log of every port write.

use std::collections::{BTreeMap, VecDeque};

use crate::bios::{DiskId, DiskInfo, DiskIoError, FirmwareHost};

pub struct FakeFunction {
    pub cfg: [u8; 256],
    /// Writable bits of each BAR (0 = no BAR). 64-bit BARs use two entries.
    pub bar_masks: [u32; 6],
    pub bar_low: [u32; 6],
}

impl FakeFunction {
    pub fn new(vendor: u16, device: u16, class: u16, header: u8) -> FakeFunction {
        let mut cfg = [0u8; 256];
        cfg[0..2].copy_from_slice(&vendor.to_le_bytes());
        cfg[2..4].copy_from_slice(&device.to_le_bytes());
        cfg[0x0A..0x0C].copy_from_slice(&class.to_le_bytes());
        cfg[0x0E] = header;
        FakeFunction {
            cfg,
            bar_masks: [0; 6],
            bar_low: [0; 6],
        }
    }
    /// Declares BAR `i` with `size` bytes and the read-only low bits `flags`.
    pub fn bar(mut self, i: usize, size: u64, flags: u32) -> Self {
        let mask = !(size - 1);
        let low = if flags & 1 != 0 { 0x3 } else { 0xF };
        self.bar_masks[i] = mask as u32 & !low;
        self.bar_low[i] = low;
        self.cfg[0x10 + 4 * i..0x14 + 4 * i].copy_from_slice(&flags.to_le_bytes());
        if flags & 0x7 == 0x4 {
            self.bar_masks[i + 1] = (mask >> 32) as u32;
        }
        self
    }
    pub fn pin(mut self, pin: u8) -> Self {
        self.cfg[0x3D] = pin;
        self
    }
    pub fn reg32(&self, reg: usize) -> u32 {
        u32::from_le_bytes(self.cfg[reg..reg + 4].try_into().unwrap())
    }
}

pub struct FakeHost {
    pub disks: BTreeMap<DiskId, (DiskInfo, Vec<u8>)>,
    pub writes: Vec<(u16, u8, u32)>,
    pub debug_out: Vec<u8>,
    pub cmos: [u8; 128],
    cmos_index: u8,
    pub pci: BTreeMap<u16, FakeFunction>,
    pci_address: u32,
    kbc_out: VecDeque<u8>,
    kbc_expect_cmd_byte: bool,
    pub kbc_cmd_byte: u8,
    pub port92: u8,
    pub elcr: [u8; 2],
    retrace: bool,
    time: std::cell::Cell<u64>,
    /// Virtual time advances by this much on every `now_ns` call.
    pub step_ns: u64,
    /// Floppy drives that exist even when their disk is taken out (`remove_floppy`).
    pub floppy_drives: u8,
    /// Change lines of floppy drives 0 and 1 (set by `remove_floppy`/`add_disk`).
    pub floppy_changed: [bool; 2],
}

impl FakeHost {
    pub fn new() -> FakeHost {
        let mut cmos = [0u8; 128];
        cmos[0x0A] = 0x26;
        cmos[0x0B] = 0x02;
        // 12:34:56, 2026-11-22 (BCD)
        cmos[0x04] = 0x12;
        cmos[0x02] = 0x34;
        cmos[0x00] = 0x56;
        cmos[0x09] = 0x26;
        cmos[0x08] = 0x11;
        cmos[0x07] = 0x22;
        cmos[0x32] = 0x20;
        FakeHost {
            disks: BTreeMap::new(),
            writes: Vec::new(),
            debug_out: Vec::new(),
            cmos,
            cmos_index: 0,
            pci: BTreeMap::new(),
            pci_address: 0,
            kbc_out: VecDeque::new(),
            kbc_expect_cmd_byte: false,
            kbc_cmd_byte: 0,
            port92: 0,
            elcr: [0; 2],
            retrace: false,
            time: std::cell::Cell::new(0),
            step_ns: 0,
            floppy_drives: 0,
            floppy_changed: [false; 2],
        }
    }

    /// A disk whose every sector starts with its LBA (u32) and the drive tag.
    pub fn add_disk(&mut self, id: DiskId, sectors: u64, sector_size: u32) {
        let mut data = vec![0u8; (sectors * sector_size as u64) as usize];
        for (lba, s) in data.chunks_mut(sector_size as usize).enumerate() {
            s[0..4].copy_from_slice(&(lba as u32).to_le_bytes());
            s[4] = 0xD5;
        }
        let info = DiskInfo {
            sectors,
            sector_size,
            read_only: matches!(id, DiskId::Cdrom(_)),
            location: None,
        };
        self.disks.insert(id, (info, data));
        if let DiskId::Floppy(n) = id {
            self.floppy_drives = self.floppy_drives.max(n + 1);
            if let Some(line) = self.floppy_changed.get_mut(usize::from(n)) {
                *line = true;
            }
        }
    }

    /// Takes the disk out of floppy drive `n`; the drive stays.
    pub fn remove_floppy(&mut self, n: u8) {
        self.disks.remove(&DiskId::Floppy(n));
        self.floppy_changed[usize::from(n)] = true;
    }

    /// A byte the keyboard controller will hand out at port 0x60.
    pub fn queue_scancode(&mut self, code: u8) {
        self.kbc_out.push_back(code);
    }

    pub fn sector(&self, id: DiskId, lba: u64) -> &[u8] {
        let (info, data) = &self.disks[&id];
        let s = info.sector_size as usize;
        &data[lba as usize * s..(lba as usize + 1) * s]
    }

    pub fn sector_mut(&mut self, id: DiskId, lba: u64) -> &mut [u8] {
        let (info, data) = self.disks.get_mut(&id).unwrap();
        let s = info.sector_size as usize;
        &mut data[lba as usize * s..(lba as usize + 1) * s]
    }

    /// The i440FX/PIIX3-like bus used by POST tests.
    pub fn with_pc_bus(mut self) -> FakeHost {
        self.pci
            .insert(0x0000, FakeFunction::new(0x8086, 0x1237, 0x0600, 0));
        self.pci
            .insert(0x0008, FakeFunction::new(0x8086, 0x7000, 0x0601, 0x80));
        self.pci.insert(
            0x0009,
            FakeFunction::new(0x8086, 0x7010, 0x0101, 0)
                .bar(0, 8, 1)
                .bar(1, 4, 1)
                .bar(2, 8, 1)
                .bar(3, 4, 1)
                .bar(4, 16, 1)
                .pin(2),
        );
        self.pci.insert(
            0x0010,
            FakeFunction::new(0x1234, 0x1111, 0x0300, 0)
                .bar(0, 16 << 20, 0x8)
                .bar(2, 0x1000, 0),
        );
        self.pci.insert(
            0x0018,
            FakeFunction::new(0x8086, 0x100E, 0x0200, 0)
                .bar(0, 0x20000, 0)
                .bar(1, 64, 1)
                .bar(2, 0x4000, 0x4)
                .pin(1),
        );
        self
    }

    fn pci_read(&mut self, port: u16, size: u8) -> u32 {
        let bdf = ((self.pci_address >> 8) & 0xFFFF) as u16;
        let reg = (self.pci_address & 0xFC) as usize + (port - 0xCFC) as usize;
        let Some(f) = self.pci.get(&bdf) else {
            return u32::MAX >> (32 - 8 * size as u32);
        };
        let mut v = 0u32;
        for i in 0..size as usize {
            v |= (f.cfg[(reg + i) & 0xFF] as u32) << (8 * i);
        }
        v
    }

    fn pci_write(&mut self, port: u16, size: u8, value: u32) {
        let bdf = ((self.pci_address >> 8) & 0xFFFF) as u16;
        let reg = (self.pci_address & 0xFC) as usize + (port - 0xCFC) as usize;
        let Some(f) = self.pci.get_mut(&bdf) else {
            return;
        };
        if (0x10..0x28).contains(&reg) && size == 4 {
            let i = (reg - 0x10) / 4;
            let v = (value & f.bar_masks[i]) | (f.reg32(reg) & f.bar_low[i]);
            f.cfg[reg..reg + 4].copy_from_slice(&v.to_le_bytes());
            return;
        }
        if reg < 0x10 && reg != 4 && reg != 5 {
            return; // IDs and class are read-only
        }
        for i in 0..size as usize {
            f.cfg[(reg + i) & 0xFF] = (value >> (8 * i)) as u8;
        }
    }
}

impl FirmwareHost for FakeHost {
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        match port {
            0x71 => self.cmos[(self.cmos_index & 0x7F) as usize] as u32,
            0x60 => self.kbc_out.pop_front().unwrap_or(0) as u32,
            0x64 => (!self.kbc_out.is_empty()) as u32,
            0x92 => self.port92 as u32,
            // VGA input status 1: alternate retrace/no retrace so polling loops end.
            0x3DA => {
                self.retrace = !self.retrace;
                if self.retrace { 0x09 } else { 0x00 }
            }
            0x4D0 => self.elcr[0] as u32,
            0x4D1 => self.elcr[1] as u32,
            0xCF8 => self.pci_address,
            0xCFC..=0xCFF => self.pci_read(port, size),
            _ => u32::MAX >> (32 - 8 * size as u32),
        }
    }

    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        self.writes.push((port, size, value));
        match port {
            0xE9 => self.debug_out.push(value as u8),
            0x70 => self.cmos_index = value as u8 & 0x7F,
            0x71 => self.cmos[(self.cmos_index & 0x7F) as usize] = value as u8,
            0x64 => match value {
                0xAA => self.kbc_out.push_back(0x55),
                0x60 => self.kbc_expect_cmd_byte = true,
                _ => {}
            },
            0x60 if self.kbc_expect_cmd_byte => {
                self.kbc_expect_cmd_byte = false;
                self.kbc_cmd_byte = value as u8;
            }
            0x60 => match value {
                0xFF => self.kbc_out.extend([0xFA, 0xAA]),
                _ => self.kbc_out.push_back(0xFA),
            },
            0x92 => self.port92 = value as u8,
            0x4D0 => self.elcr[0] = value as u8,
            0x4D1 => self.elcr[1] = value as u8,
            0xCF8 => self.pci_address = value,
            0xCFC..=0xCFF => self.pci_write(port, size, value),
            _ => {}
        }
    }

    fn disk_info(&self, drive: DiskId) -> Option<DiskInfo> {
        self.disks.get(&drive).map(|(i, _)| *i)
    }

    fn floppy_installed(&self, n: u8) -> bool {
        n < self.floppy_drives
    }

    fn take_floppy_change(&mut self, n: u8) -> bool {
        self.floppy_changed
            .get_mut(usize::from(n))
            .is_some_and(std::mem::take)
    }

    fn disk_read(&mut self, drive: DiskId, lba: u64, buf: &mut [u8]) -> Result<(), DiskIoError> {
        let (info, data) = self.disks.get(&drive).ok_or(DiskIoError::NoDrive)?;
        let start = (lba * info.sector_size as u64) as usize;
        let src = data
            .get(start..start + buf.len())
            .ok_or(DiskIoError::OutOfRange)?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn disk_write(&mut self, drive: DiskId, lba: u64, buf: &[u8]) -> Result<(), DiskIoError> {
        let (info, data) = self.disks.get_mut(&drive).ok_or(DiskIoError::NoDrive)?;
        if info.read_only {
            return Err(DiskIoError::WriteProtected);
        }
        let start = (lba * info.sector_size as u64) as usize;
        let dst = data
            .get_mut(start..start + buf.len())
            .ok_or(DiskIoError::OutOfRange)?;
        dst.copy_from_slice(buf);
        Ok(())
    }

    fn now_ns(&self) -> u64 {
        let t = self.time.get();
        self.time.set(t + self.step_ns);
        t
    }
}
