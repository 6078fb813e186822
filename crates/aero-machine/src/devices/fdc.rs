//! Intel 82077AA-compatible floppy disk controller (PC-AT mode) at 0x3F0–0x3F5 and 0x3F7,
//! IRQ 6, 8237 DMA channel 2.
//!
//! Registers: SRA/SRB (PS/2 style), DOR (reset, drive select, motors, DMA/IRQ gate), TDR,
//! MSR/DSR, the FIFO, DIR (disk change line) / CCR (data rate). Commands: SPECIFY, SENSE
//! DRIVE STATUS, RECALIBRATE, SENSE INTERRUPT STATUS, SEEK (absolute and relative), READ
//! DATA, WRITE DATA, READ ID, FORMAT TRACK, VERIFY, VERSION, CONFIGURE, LOCK/UNLOCK,
//! DUMPREG, PERPENDICULAR MODE, PART ID; anything else is answered with ST0 = 0x80.
//!
//! Media are 512-byte-sector images whose geometry follows from their size. Seeks and
//! transfers complete at once (no rotational timing). Port handlers cannot reach RAM, so a
//! DMA-mode transfer waits in [`Fdc::dma_pending`] until the machine calls
//! [`Fdc::service_dma`] with the 8237 and guest memory.

use aero_storage::BlockDevice;
use aero_storage::ide::GuestMemory;

use super::dma::{Dma8237, DmaDirection};
use super::{PortIo, read_bytes, write_bytes};

pub const FDC_IRQ: u8 = 6;
pub const FDC_DMA_CHANNEL: u8 = 2;
pub const FDC_BASE: u16 = 0x3F0;
const SECTOR: usize = 512;
/// Size code of a 512-byte sector (128 << 2).
const N_512: u8 = 2;
const DRIVES: usize = 4;

// Main status register.
const MSR_RQM: u8 = 0x80;
const MSR_DIO: u8 = 0x40;
const MSR_NDMA: u8 = 0x20;
const MSR_CB: u8 = 0x10;

// DOR.
const DOR_NRESET: u8 = 0x04;
const DOR_DMA_GATE: u8 = 0x08;

// ST0.
const ST0_ABNORMAL: u8 = 0x40;
const ST0_INVALID: u8 = 0x80;
const ST0_READY_CHANGED: u8 = 0xC0;
const ST0_SEEK_END: u8 = 0x20;
const ST0_EQUIPMENT: u8 = 0x10;
// ST1.
const ST1_END_OF_CYLINDER: u8 = 0x80;
const ST1_DATA_ERROR: u8 = 0x20;
const ST1_NO_DATA: u8 = 0x04;
const ST1_NOT_WRITABLE: u8 = 0x02;
const ST1_MISSING_AM: u8 = 0x01;
// ST2.
const ST2_DATA_ERROR: u8 = 0x20;
const ST2_WRONG_CYLINDER: u8 = 0x10;
const ST2_BAD_CYLINDER: u8 = 0x02;
// ST3.
const ST3_WRITE_PROTECT: u8 = 0x40;
const ST3_READY: u8 = 0x20;
const ST3_TRACK0: u8 = 0x10;
const ST3_TWO_SIDED: u8 = 0x08;

/// Data rates as DSR/CCR encode them.
const RATE_500K: u8 = 0;
const RATE_300K: u8 = 1;
const RATE_250K: u8 = 2;
const RATE_1M: u8 = 3;

/// A diskette format: geometry, the data rates it is recorded at, and the CMOS drive type
/// (register 0x10 nibble) of the drive that reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloppyFormat {
    pub cylinders: u8,
    pub heads: u8,
    pub sectors: u8,
    rates: &'static [u8],
    pub cmos_drive_type: u8,
}

impl FloppyFormat {
    /// The format of an image of `sectors` 512-byte sectors: 160K/180K/320K/360K, 720K,
    /// 1.2M, 1.44M, DMF 1.68M, 2.88M. Other sizes get the 1.44M layout with as many
    /// cylinders as they need (up to 255).
    pub fn for_sectors(sectors: u64) -> FloppyFormat {
        let (cylinders, heads, spt, rates, kind): (u8, u8, u8, &'static [u8], u8) = match sectors {
            320 => (40, 1, 8, &[RATE_250K, RATE_300K], 1),
            360 => (40, 1, 9, &[RATE_250K, RATE_300K], 1),
            640 => (40, 2, 8, &[RATE_250K, RATE_300K], 1),
            720 => (40, 2, 9, &[RATE_250K, RATE_300K], 1),
            1440 => (80, 2, 9, &[RATE_250K], 3),
            2400 => (80, 2, 15, &[RATE_500K], 2),
            2880 => (80, 2, 18, &[RATE_500K], 4),
            3360 => (80, 2, 21, &[RATE_500K], 4),
            5760 => (80, 2, 36, &[RATE_1M], 5),
            n => (n.div_ceil(36).clamp(1, 255) as u8, 2, 18, &[RATE_500K], 4),
        };
        FloppyFormat {
            cylinders,
            heads,
            sectors: spt,
            rates,
            cmos_drive_type: kind,
        }
    }
}

struct Drive {
    present: bool,
    disk: Option<Box<dyn BlockDevice>>,
    format: FloppyFormat,
    /// Present cylinder number (where the head is).
    cylinder: u8,
    head: u8,
    /// Disk change line: set on insert/eject, cleared by a seek with a disk in the drive.
    changed: bool,
    /// The next sector header READ ID sees (the disk "rotates" one sector per READ ID).
    next_id: u8,
}

impl Drive {
    fn empty(present: bool) -> Drive {
        Drive {
            present,
            disk: None,
            format: FloppyFormat::for_sectors(2880),
            cylinder: 0,
            head: 0,
            changed: present,
            next_id: 1,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Command,
    Execution,
    Result,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Read,
    Write,
    Format,
}

/// A READ/WRITE/FORMAT in its execution phase.
struct Transfer {
    op: Op,
    drive: usize,
    /// Head the drive reads with (HDS of the command).
    head: u8,
    /// The ID registers: cylinder, head, sector, size code of the sector being moved.
    c: u8,
    h: u8,
    r: u8,
    n: u8,
    eot: u8,
    multitrack: bool,
    dma: bool,
    buf: [u8; SECTOR],
    pos: usize,
    /// Bytes of `buf` that belong to the current unit (512 for data, 4 for a format ID).
    len: usize,
    /// FORMAT: sectors still to format, fill byte, and whether an ID was unusable.
    format_left: u8,
    fill: u8,
    format_error: bool,
}

/// Why a sector cannot be reached: (ST1, ST2).
type SectorError = (u8, u8);

pub struct Fdc {
    dor: u8,
    tdr: u8,
    rate: u8,
    phase: Phase,
    cmd: [u8; 9],
    cmd_len: usize,
    cmd_need: usize,
    result: [u8; 10],
    result_len: usize,
    result_pos: usize,
    transfer: Option<Box<Transfer>>,
    /// Interrupt request (the pin follows it while the DOR gate is open).
    irq: bool,
    /// A new interrupt event happened since the platform last looked (edge for the PIC).
    irq_pulse: bool,
    /// Drive-polling SENSE INTERRUPT results still owed after a reset.
    reset_polls: u8,
    /// ST0 of seeks/recalibrates whose SENSE INTERRUPT is pending, per drive.
    seek_status: [Option<u8>; DRIVES],
    specify: [u8; 2],
    config: u8,
    pretrk: u8,
    locked: bool,
    perpendicular: u8,
    last_eot: u8,
    drives: [Drive; DRIVES],
}

impl Default for Fdc {
    fn default() -> Self {
        Self::new()
    }
}

impl Fdc {
    /// A controller without drives (see [`Fdc::insert_disk`]) in the state a PC BIOS leaves
    /// it in: out of reset, DMA/IRQ gate open, no interrupt pending (our BIOS does not touch
    /// it; Linux's first DOR write must not find a reset interrupt it did not ask for).
    pub fn new() -> Fdc {
        Fdc {
            dor: DOR_NRESET | DOR_DMA_GATE,
            tdr: 0,
            // 500 kbps: what a 1.44 MB diskette needs.
            rate: RATE_500K,
            phase: Phase::Command,
            cmd: [0; 9],
            cmd_len: 0,
            cmd_need: 0,
            result: [0; 10],
            result_len: 0,
            result_pos: 0,
            transfer: None,
            irq: false,
            irq_pulse: false,
            reset_polls: 0,
            seek_status: [None; DRIVES],
            specify: [0; 2],
            // FIFO disabled, drive polling on, threshold 1 (the 82077AA's reset value).
            config: 0x20,
            pretrk: 0,
            locked: false,
            perpendicular: 0,
            last_eot: 0,
            drives: [
                Drive::empty(false),
                Drive::empty(false),
                Drive::empty(false),
                Drive::empty(false),
            ],
        }
    }

    /// Puts `disk` (512-byte sectors) into `drive` (0–3, installing the drive); the change
    /// line goes active. Returns the format chosen from the image size.
    pub fn insert_disk(
        &mut self,
        drive: usize,
        disk: Box<dyn BlockDevice>,
    ) -> Result<FloppyFormat, String> {
        if disk.sector_size() as usize != SECTOR {
            return Err(format!(
                "a floppy image has 512-byte sectors, not {}",
                disk.sector_size()
            ));
        }
        let d = self
            .drives
            .get_mut(drive)
            .ok_or_else(|| format!("no floppy drive {drive}"))?;
        let format = FloppyFormat::for_sectors(disk.sector_count());
        d.present = true;
        d.format = format;
        d.disk = Some(disk);
        d.changed = true;
        Ok(format)
    }

    /// Takes the disk out of `drive`; the change line goes active.
    pub fn eject_disk(&mut self, drive: usize) -> Option<Box<dyn BlockDevice>> {
        let d = self.drives.get_mut(drive)?;
        d.changed = true;
        d.disk.take()
    }

    /// Drive `drive` is installed (it may be empty).
    pub fn drive_installed(&self, drive: usize) -> bool {
        self.drives.get(drive).is_some_and(|d| d.present)
    }

    /// Drive `drive` holds a disk.
    pub fn has_disk(&self, drive: usize) -> bool {
        self.drives.get(drive).is_some_and(|d| d.disk.is_some())
    }

    /// The CMOS register 0x10 value: drive 0 type in the high nibble, drive 1 in the low.
    pub fn cmos_drive_types(&self) -> u8 {
        let kind = |d: &Drive| match (d.present, &d.disk) {
            (false, _) => 0,
            (true, Some(_)) => d.format.cmos_drive_type,
            (true, None) => 4,
        };
        kind(&self.drives[0]) << 4 | kind(&self.drives[1])
    }

    /// Platform reset (RESET#): registers back to power-on, drives and media kept.
    pub fn reset(&mut self) {
        let drives = std::mem::replace(
            &mut self.drives,
            [
                Drive::empty(false),
                Drive::empty(false),
                Drive::empty(false),
                Drive::empty(false),
            ],
        );
        *self = Fdc::new();
        self.drives = drives;
        for d in &mut self.drives {
            d.cylinder = 0;
        }
    }

    /// Level of the IRQ 6 output (gated by the DOR's DMA gate in PC-AT mode).
    pub fn irq_level(&self) -> bool {
        self.irq && self.dor & DOR_DMA_GATE != 0
    }

    /// Whether an interrupt event happened since the last call (the PIC needs an edge even
    /// when the line was already high).
    pub fn take_irq_pulse(&mut self) -> bool {
        std::mem::take(&mut self.irq_pulse) && self.irq_level()
    }

    /// A DMA-mode transfer waits for [`Fdc::service_dma`].
    pub fn dma_pending(&self) -> bool {
        self.phase == Phase::Execution
            && self.dor & DOR_DMA_GATE != 0
            && self.transfer.as_ref().is_some_and(|t| t.dma)
    }

    fn raise_irq(&mut self) {
        self.irq = true;
        self.irq_pulse = true;
    }

    fn in_reset(&self) -> bool {
        self.dor & DOR_NRESET == 0
    }

    /// Software reset (DOR bit 2 pulse or DSR bit 7): the controller restarts, interrupts
    /// and reports a ready change for each drive.
    fn controller_reset(&mut self) {
        self.phase = Phase::Command;
        self.cmd_len = 0;
        self.result_len = 0;
        self.result_pos = 0;
        self.transfer = None;
        self.irq = false;
        self.seek_status = [None; DRIVES];
        self.perpendicular &= 0xFC;
        if !self.locked {
            self.config = 0x20;
            self.pretrk = 0;
        }
        // Drivers wait for this interrupt even with polling disabled in CONFIGURE (QEMU
        // raises it unconditionally too).
        self.reset_polls = DRIVES as u8;
        self.raise_irq();
    }

    fn msr(&self) -> u8 {
        if self.in_reset() {
            return 0;
        }
        match self.phase {
            Phase::Command => MSR_RQM | if self.cmd_len > 0 { MSR_CB } else { 0 },
            Phase::Result => MSR_RQM | MSR_DIO | MSR_CB,
            Phase::Execution => match &self.transfer {
                Some(t) if t.dma => MSR_CB,
                Some(t) if t.op == Op::Read => MSR_RQM | MSR_DIO | MSR_NDMA | MSR_CB,
                Some(_) => MSR_RQM | MSR_NDMA | MSR_CB,
                None => MSR_CB,
            },
        }
    }

    fn read_port(&mut self, port: u16) -> u8 {
        match port.wrapping_sub(FDC_BASE) {
            0 => {
                // SRA (PS/2): interrupt pending, second drive not installed (active low).
                let drv2 = if self.drives[1].present { 0 } else { 0x40 };
                u8::from(self.irq) << 7 | drv2
            }
            1 => 0xC0 | (self.dor & 1) << 5 | (self.dor >> 4) & 3,
            2 => self.dor,
            3 => self.tdr & 3,
            4 => self.msr(),
            5 => self.read_fifo(),
            7 => {
                let d = &self.drives[usize::from(self.dor & 3)];
                u8::from(d.present && d.changed) << 7
            }
            _ => 0xFF,
        }
    }

    fn write_port(&mut self, port: u16, value: u8) {
        match port.wrapping_sub(FDC_BASE) {
            2 => {
                let was_reset = self.in_reset();
                self.dor = value;
                if was_reset && !self.in_reset() {
                    self.controller_reset();
                } else if !was_reset && self.in_reset() {
                    self.irq = false;
                    self.transfer = None;
                    self.phase = Phase::Command;
                    self.cmd_len = 0;
                }
            }
            3 => self.tdr = value & 3,
            4 => {
                self.rate = value & 3;
                if value & 0x80 != 0 && !self.in_reset() {
                    self.controller_reset();
                }
            }
            5 => self.write_fifo(value),
            7 => self.rate = value & 3,
            _ => {}
        }
    }

    fn read_fifo(&mut self) -> u8 {
        if self.in_reset() {
            return 0xFF;
        }
        match self.phase {
            Phase::Result => {
                self.irq = false;
                let value = self.result.get(self.result_pos).copied().unwrap_or(0xFF);
                self.result_pos += 1;
                if self.result_pos >= self.result_len {
                    self.phase = Phase::Command;
                }
                value
            }
            Phase::Execution => {
                let Some(t) = self
                    .transfer
                    .as_mut()
                    .filter(|t| !t.dma && t.op == Op::Read)
                else {
                    return 0xFF;
                };
                self.irq = false;
                let value = t.buf[t.pos.min(SECTOR - 1)];
                t.pos += 1;
                if t.pos >= t.len {
                    self.unit_done(false);
                }
                value
            }
            Phase::Command => 0xFF,
        }
    }

    fn write_fifo(&mut self, value: u8) {
        if self.in_reset() {
            return;
        }
        match self.phase {
            Phase::Command => {
                self.irq = false;
                if self.cmd_len == 0 {
                    let Some(need) = command_length(value) else {
                        tracing::debug!(opcode = value, "fdc: invalid command");
                        self.reset_polls = 0;
                        self.set_result(&[ST0_INVALID], false);
                        return;
                    };
                    if value != 0x08 {
                        self.reset_polls = 0;
                    }
                    self.cmd_need = need;
                }
                self.cmd[self.cmd_len.min(self.cmd.len() - 1)] = value;
                self.cmd_len += 1;
                if self.cmd_len >= self.cmd_need {
                    self.cmd_len = 0;
                    self.execute();
                }
            }
            Phase::Execution => {
                let Some(t) = self
                    .transfer
                    .as_mut()
                    .filter(|t| !t.dma && t.op != Op::Read)
                else {
                    return;
                };
                self.irq = false;
                t.buf[t.pos.min(SECTOR - 1)] = value;
                t.pos += 1;
                if t.pos >= t.len {
                    self.unit_done(false);
                }
            }
            Phase::Result => {}
        }
    }

    fn set_result(&mut self, bytes: &[u8], interrupt: bool) {
        let n = bytes.len().min(self.result.len());
        self.result[..n].copy_from_slice(&bytes[..n]);
        self.result_len = n;
        self.result_pos = 0;
        self.phase = if n == 0 {
            Phase::Command
        } else {
            Phase::Result
        };
        if interrupt {
            self.raise_irq();
        }
    }

    fn execute(&mut self) {
        let cmd = self.cmd;
        let op = cmd[0];
        tracing::trace!(?cmd, "fdc command");
        match op {
            0x03 => {
                self.specify = [cmd[1], cmd[2]];
                self.phase = Phase::Command;
            }
            0x04 => {
                let st3 = self.st3(usize::from(cmd[1] & 3), cmd[1] >> 2 & 1);
                self.set_result(&[st3], false);
            }
            0x07 => {
                let drive = usize::from(cmd[1] & 3);
                self.seek_to(drive, 0, 0);
            }
            0x08 => self.sense_interrupt(),
            0x0F | 0x8F | 0xCF => {
                let drive = usize::from(cmd[1] & 3);
                let head = cmd[1] >> 2 & 1;
                let current = self.drives[drive].cylinder;
                let target = match op {
                    0x8F => current.saturating_sub(cmd[2]),
                    0xCF => current.saturating_add(cmd[2]),
                    _ => cmd[2],
                };
                self.seek_to(drive, head, target);
            }
            0x0E => {
                let p = &self.drives;
                let regs = [
                    p[0].cylinder,
                    p[1].cylinder,
                    p[2].cylinder,
                    p[3].cylinder,
                    self.specify[0],
                    self.specify[1],
                    self.last_eot,
                    u8::from(self.locked) << 7 | self.perpendicular & 0x3F,
                    self.config,
                    self.pretrk,
                ];
                self.set_result(&regs, false);
            }
            0x10 => self.set_result(&[0x90], false),
            0x12 => {
                // Bit 7 (OW) gates the per-drive bits; GAP/WGATE always load.
                let v = cmd[1];
                let mut p = self.perpendicular & 0x3C;
                if v & 0x80 != 0 {
                    p = v & 0x3C;
                }
                self.perpendicular = p | v & 3;
                self.phase = Phase::Command;
            }
            0x13 => {
                self.config = cmd[2];
                self.pretrk = cmd[3];
                self.phase = Phase::Command;
            }
            0x14 | 0x94 => {
                self.locked = op & 0x80 != 0;
                self.set_result(&[u8::from(self.locked) << 4], false);
            }
            0x18 => self.set_result(&[0x41], false),
            _ => match op & 0x1F {
                0x05 => self.start_data(Op::Write),
                0x06 => self.start_data(Op::Read),
                0x16 => self.verify(),
                0x0A => self.read_id(),
                0x0D => self.start_format(),
                _ => self.set_result(&[ST0_INVALID], false),
            },
        }
    }

    fn st3(&self, drive: usize, head: u8) -> u8 {
        let d = &self.drives[drive];
        let mut st3 = head << 2 | drive as u8;
        if d.present {
            st3 |= ST3_READY | ST3_TWO_SIDED;
            if d.cylinder == 0 {
                st3 |= ST3_TRACK0;
            }
            if d.disk.as_ref().is_some_and(|disk| disk.read_only()) {
                st3 |= ST3_WRITE_PROTECT;
            }
        }
        st3
    }

    fn seek_to(&mut self, drive: usize, head: u8, cylinder: u8) {
        let d = &mut self.drives[drive];
        let hds = head << 2 | drive as u8;
        let st0 = if d.present {
            d.cylinder = cylinder;
            d.head = head;
            if d.disk.is_some() {
                d.changed = false;
            }
            ST0_SEEK_END | hds
        } else {
            // No track 0 signal after the step limit: equipment check.
            ST0_ABNORMAL | ST0_SEEK_END | ST0_EQUIPMENT | hds
        };
        self.seek_status[drive] = Some(st0);
        self.phase = Phase::Command;
        self.raise_irq();
    }

    fn sense_interrupt(&mut self) {
        if self.reset_polls > 0 {
            let drive = DRIVES as u8 - self.reset_polls;
            self.reset_polls -= 1;
            let pcn = self.drives[usize::from(drive)].cylinder;
            self.set_result(&[ST0_READY_CHANGED | drive, pcn], false);
        } else if let Some(drive) = self.seek_status.iter().position(Option::is_some) {
            let st0 = self.seek_status[drive].take().unwrap_or(ST0_INVALID);
            let pcn = self.drives[drive].cylinder;
            self.set_result(&[st0, pcn], false);
        } else {
            self.set_result(&[ST0_INVALID], false);
        }
        // The first SENSE INTERRUPT clears the request; the remaining polls are only
        // reported. Raising it again here would give the driver a second, unexpected
        // interrupt (Linux then resets the controller and gives up).
        self.irq = false;
    }

    /// Ends a command with ST0 (plus HDS), ST1, ST2 and the ID registers, and interrupts.
    fn finish(&mut self, drive: usize, head: u8, st: [u8; 3], id: [u8; 4]) {
        let st0 = st[0] | head << 2 | drive as u8;
        self.transfer = None;
        self.set_result(&[st0, st[1], st[2], id[0], id[1], id[2], id[3]], true);
    }

    /// Checks that `drive` can be read with `head` at the current data rate.
    fn medium_check(&self, drive: usize, head: u8) -> Result<(), SectorError> {
        let d = &self.drives[drive];
        match &d.disk {
            Some(_) if d.present => {}
            // No disk: no index pulses, no address marks.
            _ => return Err((ST1_MISSING_AM, 0)),
        }
        if !d.format.rates.contains(&self.rate) || head >= d.format.heads {
            return Err((ST1_MISSING_AM, 0));
        }
        Ok(())
    }

    /// LBA of the sector whose ID is (c, h, r, n) on the track under `drive`'s `head`.
    fn locate(
        &self,
        drive: usize,
        head: u8,
        c: u8,
        h: u8,
        r: u8,
        n: u8,
    ) -> Result<u64, SectorError> {
        self.medium_check(drive, head)?;
        let d = &self.drives[drive];
        let f = d.format;
        let pcn = d.cylinder;
        if pcn >= f.cylinders {
            return Err((ST1_MISSING_AM, 0));
        }
        if c != pcn {
            let st2 = if c == 0xFF {
                ST2_BAD_CYLINDER
            } else {
                ST2_WRONG_CYLINDER
            };
            return Err((ST1_NO_DATA, st2));
        }
        if h != head || r == 0 || r > f.sectors || n != N_512 {
            return Err((ST1_NO_DATA, 0));
        }
        let lba = (u64::from(pcn) * u64::from(f.heads) + u64::from(head)) * u64::from(f.sectors)
            + u64::from(r)
            - 1;
        let count = d.disk.as_ref().map_or(0, |disk| disk.sector_count());
        if lba >= count {
            return Err((ST1_NO_DATA, 0));
        }
        Ok(lba)
    }

    /// READ/WRITE DATA and VERIFY share their parameter layout.
    fn data_params(&mut self) -> (usize, u8, [u8; 4], u8) {
        let cmd = self.cmd;
        let drive = usize::from(cmd[1] & 3);
        let head = cmd[1] >> 2 & 1;
        self.last_eot = cmd[6];
        // Implied seek (CONFIGURE EIS).
        if self.config & 0x40 != 0 && self.drives[drive].present {
            self.drives[drive].cylinder = cmd[2];
        }
        self.drives[drive].head = head;
        (drive, head, [cmd[2], cmd[3], cmd[4], cmd[5]], cmd[6])
    }

    fn start_data(&mut self, op: Op) {
        let multitrack = self.cmd[0] & 0x80 != 0;
        let (drive, head, id, eot) = self.data_params();
        if let Err((st1, st2)) = self.medium_check(drive, head) {
            return self.finish(drive, head, [ST0_ABNORMAL, st1, st2], id);
        }
        if op == Op::Write
            && self.drives[drive]
                .disk
                .as_ref()
                .is_some_and(|d| d.read_only())
        {
            return self.finish(drive, head, [ST0_ABNORMAL, ST1_NOT_WRITABLE, 0], id);
        }
        let dma = self.specify[1] & 1 == 0;
        self.transfer = Some(Box::new(Transfer {
            op,
            drive,
            head,
            c: id[0],
            h: id[1],
            r: id[2],
            n: id[3].min(7),
            eot,
            multitrack,
            dma,
            buf: [0; SECTOR],
            pos: 0,
            len: SECTOR,
            format_left: 0,
            fill: 0,
            format_error: false,
        }));
        self.phase = Phase::Execution;
        if op == Op::Read && !self.load_sector() {
            return;
        }
        if !dma {
            // Non-DMA mode interrupts when data is ready.
            self.raise_irq();
        }
    }

    /// Reads the sector the ID registers name into the buffer; on failure ends the command.
    fn load_sector(&mut self) -> bool {
        let Some(t) = self.transfer.as_ref() else {
            return false;
        };
        let (drive, head, id) = (t.drive, t.head, [t.c, t.h, t.r, t.n]);
        let lba = match self.locate(drive, head, id[0], id[1], id[2], id[3]) {
            Ok(lba) => lba,
            Err((st1, st2)) => {
                self.finish(drive, head, [ST0_ABNORMAL, st1, st2], id);
                return false;
            }
        };
        let mut buf = [0u8; SECTOR];
        let ok = self.drives[drive]
            .disk
            .as_mut()
            .is_some_and(|disk| disk.read_sectors(lba, &mut buf).is_ok());
        if !ok {
            tracing::warn!(lba, "fdc: image read failed");
            self.finish(
                drive,
                head,
                [ST0_ABNORMAL, ST1_DATA_ERROR, ST2_DATA_ERROR],
                id,
            );
            return false;
        }
        if let Some(t) = self.transfer.as_mut() {
            t.buf = buf;
            t.pos = 0;
            t.len = SECTOR;
        }
        true
    }

    /// Writes the buffer to the sector the ID registers name; on failure ends the command.
    fn store_sector(&mut self) -> bool {
        let Some(t) = self.transfer.as_ref() else {
            return false;
        };
        let (drive, head, id, buf) = (t.drive, t.head, [t.c, t.h, t.r, t.n], t.buf);
        let lba = match self.locate(drive, head, id[0], id[1], id[2], id[3]) {
            Ok(lba) => lba,
            Err((st1, st2)) => {
                self.finish(drive, head, [ST0_ABNORMAL, st1, st2], id);
                return false;
            }
        };
        let result = match self.drives[drive].disk.as_mut() {
            Some(disk) => disk.write_sectors(lba, &buf),
            None => Err(aero_storage::StorageError::ReadOnly),
        };
        match result {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(lba, "fdc: image write failed: {e}");
                let st1 = match e {
                    aero_storage::StorageError::ReadOnly => ST1_NOT_WRITABLE,
                    _ => ST1_DATA_ERROR,
                };
                self.finish(drive, head, [ST0_ABNORMAL, st1, 0], id);
                false
            }
        }
    }

    /// The ID registers after sector `r` (datasheet table for MT/EOT): returns whether the
    /// transfer may go on to another sector.
    fn advance_id(t: &mut Transfer, heads: u8) -> bool {
        if t.r < t.eot {
            t.r = t.r.wrapping_add(1);
            return true;
        }
        t.r = 1;
        if t.multitrack && t.head == 0 && heads > 1 {
            t.head = 1;
            t.h ^= 1;
            return true;
        }
        if t.multitrack {
            t.h ^= 1;
            t.head = 0;
        }
        t.c = t.c.wrapping_add(1);
        false
    }

    /// One unit (sector, or format ID) of the execution phase was moved; `terminal` is the
    /// DMA terminal count.
    fn unit_done(&mut self, terminal: bool) {
        let Some(op) = self.transfer.as_ref().map(|t| t.op) else {
            return;
        };
        match op {
            Op::Format => return self.format_id_done(terminal),
            Op::Write => {
                if !self.store_sector() {
                    return;
                }
            }
            Op::Read => {}
        }
        let Some(t) = self.transfer.as_mut() else {
            return;
        };
        let heads = self.drives[t.drive].format.heads;
        let more = Self::advance_id(t, heads);
        let (drive, head, id) = (t.drive, t.head, [t.c, t.h, t.r, t.n]);
        if terminal {
            return self.finish(drive, head, [0, 0, 0], id);
        }
        if !more {
            // Past the last sector without terminal count.
            return self.finish(drive, head, [ST0_ABNORMAL, ST1_END_OF_CYLINDER, 0], id);
        }
        if let Some(t) = self.transfer.as_mut() {
            t.pos = 0;
            t.len = SECTOR;
        }
        if op == Op::Read {
            self.load_sector();
        }
    }

    fn verify(&mut self) {
        let cmd = self.cmd;
        let multitrack = cmd[0] & 0x80 != 0;
        // EC (byte 1 bit 7): DTL holds the sector count instead of EOT ending the command.
        let count_mode = cmd[1] & 0x80 != 0;
        let (drive, head, id, eot) = self.data_params();
        let mut t = Transfer {
            op: Op::Read,
            drive,
            head,
            c: id[0],
            h: id[1],
            r: id[2],
            n: id[3],
            eot,
            multitrack,
            dma: false,
            buf: [0; SECTOR],
            pos: 0,
            len: SECTOR,
            format_left: 0,
            fill: 0,
            format_error: false,
        };
        let heads = self.drives[drive].format.heads;
        let mut left = if count_mode {
            u32::from(cmd[8])
        } else {
            u32::MAX
        };
        // At most two tracks of sectors are ever visited.
        for _ in 0..512 {
            let id = [t.c, t.h, t.r, t.n];
            let lba = match self.locate(drive, t.head, id[0], id[1], id[2], id[3]) {
                Ok(lba) => lba,
                Err((st1, st2)) => {
                    return self.finish(drive, t.head, [ST0_ABNORMAL, st1, st2], id);
                }
            };
            let mut buf = [0u8; SECTOR];
            let ok = self.drives[drive]
                .disk
                .as_mut()
                .is_some_and(|d| d.read_sectors(lba, &mut buf).is_ok());
            if !ok {
                return self.finish(
                    drive,
                    t.head,
                    [ST0_ABNORMAL, ST1_DATA_ERROR, ST2_DATA_ERROR],
                    id,
                );
            }
            left = left.saturating_sub(1);
            let more = Self::advance_id(&mut t, heads);
            let id = [t.c, t.h, t.r, t.n];
            if left == 0 || (!more && !count_mode) {
                return self.finish(drive, t.head, [0, 0, 0], id);
            }
            if !more {
                return self.finish(drive, t.head, [ST0_ABNORMAL, ST1_END_OF_CYLINDER, 0], id);
            }
        }
        let id = [t.c, t.h, t.r, t.n];
        self.finish(drive, t.head, [ST0_ABNORMAL, ST1_END_OF_CYLINDER, 0], id);
    }

    fn read_id(&mut self) {
        let drive = usize::from(self.cmd[1] & 3);
        let head = self.cmd[1] >> 2 & 1;
        self.drives[drive].head = head;
        if let Err((st1, st2)) = self.medium_check(drive, head) {
            return self.finish(drive, head, [ST0_ABNORMAL, st1, st2], [0, 0, 0, 0]);
        }
        let d = &mut self.drives[drive];
        if d.cylinder >= d.format.cylinders {
            return self.finish(drive, head, [ST0_ABNORMAL, ST1_MISSING_AM, 0], [0; 4]);
        }
        let r = d.next_id.clamp(1, d.format.sectors);
        d.next_id = if r >= d.format.sectors { 1 } else { r + 1 };
        let id = [d.cylinder, head, r, N_512];
        self.finish(drive, head, [0, 0, 0], id);
    }

    fn start_format(&mut self) {
        let cmd = self.cmd;
        let drive = usize::from(cmd[1] & 3);
        let head = cmd[1] >> 2 & 1;
        self.drives[drive].head = head;
        let id = [self.drives[drive].cylinder, head, 1, cmd[2]];
        if let Err((st1, st2)) = self.medium_check(drive, head) {
            return self.finish(drive, head, [ST0_ABNORMAL, st1, st2], id);
        }
        if self.drives[drive]
            .disk
            .as_ref()
            .is_some_and(|d| d.read_only())
        {
            return self.finish(drive, head, [ST0_ABNORMAL, ST1_NOT_WRITABLE, 0], id);
        }
        if cmd[3] == 0 {
            return self.finish(drive, head, [0, 0, 0], id);
        }
        let dma = self.specify[1] & 1 == 0;
        self.transfer = Some(Box::new(Transfer {
            op: Op::Format,
            drive,
            head,
            c: id[0],
            h: head,
            r: 1,
            n: cmd[2].min(7),
            eot: cmd[3],
            multitrack: false,
            dma,
            buf: [0; SECTOR],
            pos: 0,
            len: 4,
            format_left: cmd[3],
            fill: cmd[5],
            format_error: false,
        }));
        self.phase = Phase::Execution;
        if !dma {
            self.raise_irq();
        }
    }

    /// A 4-byte sector ID (C, H, R, N) arrived: write that sector with the fill byte.
    fn format_id_done(&mut self, terminal: bool) {
        let Some(t) = self.transfer.as_mut() else {
            return;
        };
        let (c, h, r, n) = (t.buf[0], t.buf[1], t.buf[2], t.buf[3]);
        t.c = c;
        t.h = h;
        t.r = r;
        t.n = n;
        t.pos = 0;
        t.format_left = t.format_left.saturating_sub(1);
        let (drive, head, fill, left) = (t.drive, t.head, t.fill, t.format_left);
        // The image stores the standard layout only: the ID must name this track's sector
        // of 512 bytes.
        match self.locate(drive, head, c, h, r, n) {
            Ok(lba) => {
                let buf = [fill; SECTOR];
                let ok = self.drives[drive]
                    .disk
                    .as_mut()
                    .is_some_and(|d| d.write_sectors(lba, &buf).is_ok());
                if !ok && let Some(t) = self.transfer.as_mut() {
                    t.format_error = true;
                }
            }
            Err(_) => {
                tracing::debug!(c, h, r, n, "fdc: FORMAT ID the image cannot hold");
                if let Some(t) = self.transfer.as_mut() {
                    t.format_error = true;
                }
            }
        }
        if left == 0 || terminal {
            let error = self.transfer.as_ref().is_some_and(|t| t.format_error);
            let st = if error {
                [ST0_ABNORMAL, ST1_DATA_ERROR, 0]
            } else {
                [0, 0, 0]
            };
            self.finish(drive, head, st, [c, h, r, n]);
        }
    }

    /// Runs a waiting DMA-mode transfer through channel 2 of `dma` into/out of `ram`, as far
    /// as the channel lets it (a masked channel leaves it waiting).
    pub fn service_dma(&mut self, dma: &mut Dma8237, ram: &mut dyn GuestMemory) {
        // Each round moves at least one byte or ends; a track is at most 36 sectors, two
        // sides, so this bound is never reached by a real transfer.
        for _ in 0..4096 {
            if !self.dma_pending() {
                return;
            }
            let Some(channel) = dma.transfer(FDC_DMA_CHANNEL) else {
                return;
            };
            let Some(t) = self.transfer.as_mut() else {
                return;
            };
            let want = t.len.saturating_sub(t.pos);
            // An 8-bit channel's address wraps inside its 64 KiB page.
            let low = channel.address & 0xFFFF;
            let room = if channel.decrement {
                low + 1
            } else {
                0x1_0000 - low
            } as usize;
            let n = want.min(channel.remaining).min(room);
            if n == 0 {
                return;
            }
            let range = t.pos..t.pos + n;
            let reading = t.op == Op::Read;
            if channel.direction != DmaDirection::Verify {
                let result = if channel.decrement {
                    (0..n).try_for_each(|i| {
                        let addr = channel.address - i as u64;
                        let index = t.pos + i;
                        if reading {
                            ram.write(addr, &t.buf[index..=index])
                        } else {
                            ram.read(addr, &mut t.buf[index..=index])
                        }
                    })
                } else if reading {
                    ram.write(channel.address, &t.buf[range])
                } else {
                    ram.read(channel.address, &mut t.buf[range])
                };
                if let Err(e) = result {
                    // The bus cycle goes nowhere; the controller does not notice.
                    tracing::debug!("fdc: DMA outside RAM: {e}");
                }
            }
            t.pos += n;
            let unit_complete = t.pos >= t.len;
            let terminal = dma.complete(FDC_DMA_CHANNEL, n);
            if unit_complete {
                self.unit_done(terminal);
            } else if terminal {
                self.terminal_mid_unit();
            }
        }
    }

    /// Terminal count arrived inside a unit: a write fills the rest of the sector with
    /// zeros, a read drops the rest; a format ID is incomplete.
    fn terminal_mid_unit(&mut self) {
        let Some(t) = self.transfer.as_mut() else {
            return;
        };
        match t.op {
            Op::Write => {
                let pos = t.pos.min(SECTOR);
                t.buf[pos..].fill(0);
                t.pos = t.len;
                self.unit_done(true);
            }
            Op::Read => {
                t.pos = t.len;
                self.unit_done(true);
            }
            Op::Format => {
                let (drive, head, id) = (t.drive, t.head, [t.c, t.h, t.r, t.n]);
                self.finish(drive, head, [0, 0, 0], id);
            }
        }
    }
}

/// Bytes (opcode included) of each command the controller knows, `None` for invalid ones.
fn command_length(op: u8) -> Option<usize> {
    Some(match op {
        0x03 => 3,
        0x04 | 0x07 | 0x12 => 2,
        0x08 | 0x0E | 0x10 | 0x14 | 0x94 | 0x18 => 1,
        0x0F | 0x8F | 0xCF => 3,
        0x13 => 4,
        // READ DATA / VERIFY: MT, MFM, SK allowed; WRITE DATA: MT, MFM.
        _ if op & 0x1F == 0x06 || op & 0x1F == 0x16 => 9,
        _ if op & 0x3F == 0x05 => 9,
        _ if op & 0xBF == 0x0A => 2,
        _ if op & 0xBF == 0x0D => 6,
        _ => return None,
    })
}

impl PortIo for Fdc {
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        read_bytes(port, size, |p| self.read_port(p))
    }

    fn io_write(&mut self, port: u16, size: u8, value: u32) {
        write_bytes(port, size, value, |p, v| self.write_port(p, v));
    }
}

#[cfg(test)]
#[path = "fdc_tests.rs"]
mod tests;
