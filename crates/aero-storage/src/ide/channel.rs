//! One ATA channel: the shared task-file registers, the two device slots, the PIO data
//! port state machine, the interrupt line and the channel's bus-master registers.

use super::atapi::{CdStatus, MediaError};
use super::busmaster::{self, BusMaster, DmaError, GuestMemory, Scatter};
use super::{ata, atapi};
use crate::BlockDevice;

pub(crate) const ST_BSY: u8 = 0x80;
pub(crate) const ST_DRDY: u8 = 0x40;
pub(crate) const ST_DSC: u8 = 0x10;
pub(crate) const ST_DRQ: u8 = 0x08;
pub(crate) const ST_ERR: u8 = 0x01;
pub(crate) const ERR_ABRT: u8 = 0x04;
pub(crate) const ERR_IDNF: u8 = 0x10;
pub(crate) const ERR_UNC: u8 = 0x40;

const CTL_NIEN: u8 = 0x02;
const CTL_SRST: u8 = 0x04;
const CTL_HOB: u8 = 0x80;
/// Sectors moved per step of a DMA transfer (bounds the bounce buffer).
const DMA_CHUNK_BYTES: usize = 64 * 1024;

/// What is plugged into a device slot.
pub enum IdeDrive {
    /// A hard disk with 512-byte sectors.
    Disk(Box<dyn BlockDevice>),
    /// A CD/DVD drive (2048-byte sectors), possibly without a disc.
    Cdrom(Option<Box<dyn BlockDevice>>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Disk,
    Cdrom,
}

/// Task-file registers. Both devices latch every write, so one copy serves the channel; the
/// "previous" copies are the LBA48 high-order bytes (read back with HOB set).
#[derive(Clone, Debug, Default)]
pub(crate) struct TaskFile {
    pub feature: u8,
    pub nsector: u8,
    pub lba_low: u8,
    pub lba_mid: u8,
    pub lba_high: u8,
    pub hob_feature: u8,
    pub hob_nsector: u8,
    pub hob_lba_low: u8,
    pub hob_lba_mid: u8,
    pub hob_lba_high: u8,
    pub device: u8,
}

impl TaskFile {
    pub fn lba28(&self) -> u64 {
        ((self.device as u64 & 0x0F) << 24)
            | ((self.lba_high as u64) << 16)
            | ((self.lba_mid as u64) << 8)
            | self.lba_low as u64
    }
    pub fn lba48(&self) -> u64 {
        ((self.hob_lba_high as u64) << 40)
            | ((self.hob_lba_mid as u64) << 32)
            | ((self.hob_lba_low as u64) << 24)
            | ((self.lba_high as u64) << 16)
            | ((self.lba_mid as u64) << 8)
            | self.lba_low as u64
    }
    pub fn count28(&self) -> u32 {
        if self.nsector == 0 {
            256
        } else {
            self.nsector as u32
        }
    }
    pub fn count48(&self) -> u32 {
        let c = ((self.hob_nsector as u32) << 8) | self.nsector as u32;
        if c == 0 { 65536 } else { c }
    }
    /// ATAPI byte count limit (cylinder registers).
    pub fn byte_count(&self) -> u16 {
        ((self.lba_high as u16) << 8) | self.lba_mid as u16
    }
    pub fn set_byte_count(&mut self, n: u16) {
        self.lba_mid = n as u8;
        self.lba_high = (n >> 8) as u8;
    }
    /// The device signature (after reset / diagnostics): ATA disk or ATAPI.
    pub fn set_signature(&mut self, kind: Kind) {
        self.nsector = 1;
        self.lba_low = 1;
        let (mid, high) = if kind == Kind::Cdrom {
            (0x14, 0xEB)
        } else {
            (0, 0)
        };
        self.lba_mid = mid;
        self.lba_high = high;
        self.device &= 0x10;
    }
}

/// ATAPI sense data and media state.
#[derive(Clone, Debug, Default)]
pub(crate) struct AtapiState {
    pub sense_key: u8,
    pub asc: u8,
    pub ascq: u8,
    /// A disc was inserted and the guest has not been told (UNIT ATTENTION).
    pub unit_attention: bool,
    /// GET EVENT STATUS NOTIFICATION media event not yet reported.
    pub media_event: Option<atapi::MediaEvent>,
    /// PREVENT ALLOW MEDIUM REMOVAL: the guest locked the tray.
    pub locked: bool,
    pub tray_open: bool,
}

pub(crate) struct Device {
    pub kind: Kind,
    pub media: Option<Box<dyn BlockDevice>>,
    pub status: u8,
    pub error: u8,
    /// Sectors per DRQ block for READ/WRITE MULTIPLE; 0 = multiple mode off.
    pub multiple: u8,
    pub standby: bool,
    pub write_cache: bool,
    /// SET FEATURES transfer mode value (0x08 PIO n, 0x20 MWDMA n, 0x40 UDMA n).
    pub transfer_mode: u8,
    pub atapi: AtapiState,
}

impl Device {
    fn new(drive: IdeDrive) -> Self {
        let (kind, media) = match drive {
            IdeDrive::Disk(d) => (Kind::Disk, Some(d)),
            IdeDrive::Cdrom(d) => (Kind::Cdrom, d),
        };
        let status = if kind == Kind::Disk {
            ST_DRDY | ST_DSC
        } else {
            0
        };
        Device {
            kind,
            media,
            status,
            error: 1,
            multiple: 0,
            standby: false,
            write_cache: true,
            transfer_mode: 0x40 | 5,
            atapi: AtapiState::default(),
        }
    }
}

/// What the data port is doing.
pub(crate) enum Transfer {
    Idle,
    /// Single buffer to the host (IDENTIFY).
    BufferIn,
    /// PIO sectors to the host; `lba`/`remaining` describe what follows the buffer.
    AtaReadPio {
        lba: u64,
        remaining: u32,
        block: u32,
    },
    /// PIO sectors from the host; the buffer holds the block at `lba`.
    AtaWritePio {
        lba: u64,
        remaining: u32,
        block: u32,
    },
    /// Receiving the 12-byte ATAPI command packet.
    AtapiPacket {
        dma: bool,
    },
    /// ATAPI data to the host, in chunks of at most the byte count limit.
    AtapiIn {
        pending: Vec<u8>,
        read: Option<(u64, u32)>,
    },
    /// Waiting for the bus master to be started.
    Dma(DmaJob),
}

pub(crate) enum DmaJob {
    AtaRead {
        lba: u64,
        count: u32,
    },
    AtaWrite {
        lba: u64,
        count: u32,
    },
    AtapiIn {
        pending: Vec<u8>,
        read: Option<(u64, u32)>,
    },
}

pub struct IdeChannel {
    pub(crate) devices: [Option<Device>; 2],
    pub(crate) tf: TaskFile,
    pub(crate) device_control: u8,
    pub(crate) irq_pending: bool,
    pub(crate) buf: Vec<u8>,
    pub(crate) pos: usize,
    pub(crate) transfer: Transfer,
    pub(crate) bm: BusMaster,
}

impl Default for IdeChannel {
    fn default() -> Self {
        Self::new()
    }
}

impl IdeChannel {
    pub fn new() -> Self {
        IdeChannel {
            devices: [None, None],
            tf: TaskFile::default(),
            device_control: 0,
            irq_pending: false,
            buf: Vec::new(),
            pos: 0,
            transfer: Transfer::Idle,
            bm: BusMaster::default(),
        }
    }

    pub fn attach(&mut self, slave: bool, drive: IdeDrive) {
        let dev = Device::new(drive);
        if dev.kind == Kind::Disk && dev.media.as_ref().is_some_and(|m| m.sector_size() != 512) {
            tracing::warn!("IDE disk attached with a sector size other than 512");
        }
        self.devices[slave as usize] = Some(dev);
        if self.selected() == slave as usize {
            self.tf.set_signature(
                self.devices[slave as usize]
                    .as_ref()
                    .map_or(Kind::Disk, |d| d.kind),
            );
        }
    }

    /// The CD drive in `slave`'s slot as the shared ATAPI model sees it.
    fn cd_disc(&mut self, slave: bool) -> Result<atapi::Disc<'_>, MediaError> {
        let dev = self.devices[slave as usize]
            .as_mut()
            .filter(|d| d.kind == Kind::Cdrom)
            .ok_or(MediaError::NoCdDrive)?;
        Ok(atapi::Disc {
            media: &mut dev.media,
            state: &mut dev.atapi,
        })
    }

    /// Inserts a disc into the CD drive in `slave`'s slot (host action); returns the disc
    /// it replaced. See [`atapi`] for what the guest sees.
    pub fn insert_media(
        &mut self,
        slave: bool,
        media: Box<dyn BlockDevice>,
    ) -> Result<Option<Box<dyn BlockDevice>>, MediaError> {
        Ok(self.cd_disc(slave)?.insert(media))
    }

    /// Host eject: opens the tray and takes the disc out, unless the guest locked the tray
    /// (then the guest gets an eject request) and `force` is off.
    pub fn eject_media(
        &mut self,
        slave: bool,
        force: bool,
    ) -> Result<Option<Box<dyn BlockDevice>>, MediaError> {
        self.cd_disc(slave)?.eject(force)
    }

    /// Tray and disc state of the CD drive in `slave`'s slot (None: no CD drive there).
    pub fn cd_status(&self, slave: bool) -> Option<CdStatus> {
        let dev = self.devices[slave as usize]
            .as_ref()
            .filter(|d| d.kind == Kind::Cdrom)?;
        Some(dev.atapi.status(&dev.media))
    }

    pub(crate) fn selected(&self) -> usize {
        ((self.tf.device >> 4) & 1) as usize
    }

    pub(crate) fn dev(&mut self) -> Option<&mut Device> {
        let s = self.selected();
        self.devices[s].as_mut()
    }

    pub fn irq_level(&self) -> bool {
        self.irq_pending && self.device_control & CTL_NIEN == 0
    }

    pub(crate) fn raise_irq(&mut self) {
        self.irq_pending = true;
    }

    pub fn reset(&mut self) {
        self.device_control = 0;
        self.soft_reset();
        self.bm = BusMaster::default();
        // A hardware reset ends the guest's PREVENT MEDIUM REMOVAL (as power-on does).
        for dev in self.devices.iter_mut().flatten() {
            dev.atapi.locked = false;
        }
    }

    fn soft_reset(&mut self) {
        self.transfer = Transfer::Idle;
        self.buf.clear();
        self.pos = 0;
        self.irq_pending = false;
        self.tf.device = 0;
        for dev in self.devices.iter_mut().flatten() {
            dev.status = if dev.kind == Kind::Disk {
                ST_DRDY | ST_DSC
            } else {
                0
            };
            dev.error = 1; // diagnostics passed
            dev.multiple = 0;
            dev.standby = false;
        }
        let kind = self.devices[0]
            .as_ref()
            .or(self.devices[1].as_ref())
            .map_or(Kind::Disk, |d| d.kind);
        self.tf.set_signature(kind);
    }

    // ---- register access ----

    fn hob(&self) -> bool {
        self.device_control & CTL_HOB != 0
    }

    pub fn read_register(&mut self, reg: u8) -> u8 {
        if self.devices.iter().all(Option::is_none) {
            return 0xFF; // nothing drives the bus
        }
        let hob = self.hob();
        let selected_present = self.dev().is_some();
        match reg {
            1 => self.dev().map_or(0, |d| d.error),
            2 => {
                if hob {
                    self.tf.hob_nsector
                } else {
                    self.tf.nsector
                }
            }
            3 => {
                if hob {
                    self.tf.hob_lba_low
                } else {
                    self.tf.lba_low
                }
            }
            4 => {
                if hob {
                    self.tf.hob_lba_mid
                } else {
                    self.tf.lba_mid
                }
            }
            5 => {
                if hob {
                    self.tf.hob_lba_high
                } else {
                    self.tf.lba_high
                }
            }
            6 => self.tf.device | 0xA0,
            7 => {
                if !selected_present {
                    return 0;
                }
                self.irq_pending = false;
                self.dev().map_or(0, |d| d.status)
            }
            _ => 0xFF,
        }
    }

    pub fn read_alt_status(&mut self) -> u8 {
        if self.devices.iter().all(Option::is_none) {
            return 0xFF;
        }
        self.dev().map_or(0, |d| d.status)
    }

    pub fn write_register(&mut self, reg: u8, value: u8) {
        // Writing the command block clears HOB.
        self.device_control &= !CTL_HOB;
        let tf = &mut self.tf;
        match reg {
            1 => (tf.hob_feature, tf.feature) = (tf.feature, value),
            2 => (tf.hob_nsector, tf.nsector) = (tf.nsector, value),
            3 => (tf.hob_lba_low, tf.lba_low) = (tf.lba_low, value),
            4 => (tf.hob_lba_mid, tf.lba_mid) = (tf.lba_mid, value),
            5 => (tf.hob_lba_high, tf.lba_high) = (tf.lba_high, value),
            6 => tf.device = value & 0x5F,
            7 => self.execute(value),
            _ => {}
        }
    }

    pub fn write_device_control(&mut self, value: u8) {
        let was_reset = self.device_control & CTL_SRST != 0;
        self.device_control = value;
        if value & CTL_SRST != 0 && !was_reset {
            self.soft_reset();
            for dev in self.devices.iter_mut().flatten() {
                dev.status = ST_BSY;
            }
        } else if value & CTL_SRST == 0 && was_reset {
            self.soft_reset();
        }
    }

    fn execute(&mut self, command: u8) {
        let Some(kind) = self.dev().map(|d| d.kind) else {
            return; // commands to an absent device are ignored
        };
        if self.dev().is_some_and(|d| d.status & ST_BSY != 0) {
            return;
        }
        self.irq_pending = false;
        self.transfer = Transfer::Idle;
        self.buf.clear();
        self.pos = 0;
        match kind {
            Kind::Disk => ata::execute(self, command),
            Kind::Cdrom => atapi::execute_ata(self, command),
        }
    }

    // ---- completion helpers ----

    pub(crate) fn set_status(&mut self, status: u8, error: u8) {
        if let Some(d) = self.dev() {
            d.status = status;
            d.error = error;
        }
    }

    pub(crate) fn complete(&mut self) {
        self.transfer = Transfer::Idle;
        self.set_status(ST_DRDY | ST_DSC, 0);
        self.raise_irq();
    }

    pub(crate) fn abort(&mut self, error: u8) {
        self.transfer = Transfer::Idle;
        self.buf.clear();
        self.pos = 0;
        self.set_status(ST_DRDY | ST_ERR, error);
        self.raise_irq();
    }

    /// Offers `data` to the host through the data port.
    pub(crate) fn start_pio_in(&mut self, data: Vec<u8>, transfer: Transfer, irq: bool) {
        self.buf = data;
        self.pos = 0;
        self.transfer = transfer;
        self.set_status(ST_DRDY | ST_DSC | ST_DRQ, 0);
        if irq {
            self.raise_irq();
        }
    }

    /// Waits for `len` bytes from the host through the data port.
    pub(crate) fn start_pio_out(&mut self, len: usize, transfer: Transfer) {
        self.buf = vec![0; len];
        self.pos = 0;
        self.transfer = transfer;
        self.set_status(ST_DRDY | ST_DSC | ST_DRQ, 0);
    }

    /// Waits for the bus master.
    pub(crate) fn start_dma(&mut self, job: DmaJob) {
        self.transfer = Transfer::Dma(job);
        self.set_status(ST_DRDY | ST_DSC | ST_DRQ, 0);
    }

    // ---- data port ----

    pub fn read_data(&mut self, size: u8) -> u32 {
        let n = if size >= 4 { 4 } else { 2 };
        let receiving = matches!(
            self.transfer,
            Transfer::BufferIn | Transfer::AtaReadPio { .. } | Transfer::AtapiIn { .. }
        );
        if !receiving || self.pos >= self.buf.len() {
            return 0xFFFF_FFFF >> (32 - 8 * n);
        }
        let mut value = 0u32;
        for i in 0..n {
            value |= (self.buf.get(self.pos + i).copied().unwrap_or(0) as u32) << (8 * i);
        }
        self.pos += n;
        if self.pos >= self.buf.len() {
            self.pio_in_drained();
        }
        value
    }

    pub fn write_data(&mut self, size: u8, value: u32) {
        let n = if size >= 4 { 4 } else { 2 };
        let sending = matches!(
            self.transfer,
            Transfer::AtaWritePio { .. } | Transfer::AtapiPacket { .. }
        );
        if !sending || self.pos >= self.buf.len() {
            return;
        }
        for i in 0..n {
            if let Some(b) = self.buf.get_mut(self.pos + i) {
                *b = (value >> (8 * i)) as u8;
            }
        }
        self.pos += n;
        if self.pos >= self.buf.len() {
            self.pio_out_filled();
        }
    }

    fn pio_in_drained(&mut self) {
        match std::mem::replace(&mut self.transfer, Transfer::Idle) {
            Transfer::AtaReadPio {
                lba,
                remaining,
                block,
            } if remaining > 0 => ata::read_block(self, lba, remaining, block),
            Transfer::AtapiIn { pending, read } => atapi::next_chunk(self, pending, read),
            _ => {
                // Last PIO-in block: no interrupt, the command is over.
                self.buf.clear();
                self.pos = 0;
                self.set_status(ST_DRDY | ST_DSC, 0);
            }
        }
    }

    fn pio_out_filled(&mut self) {
        match std::mem::replace(&mut self.transfer, Transfer::Idle) {
            Transfer::AtaWritePio {
                lba,
                remaining,
                block,
            } => ata::write_block_done(self, lba, remaining, block),
            Transfer::AtapiPacket { dma } => {
                let mut cdb = [0u8; 12];
                cdb.copy_from_slice(&self.buf[..12]);
                atapi::run_packet(self, &cdb, dma);
            }
            _ => {}
        }
    }

    // ---- bus master ----

    pub fn bus_master_read(&mut self, offset: u8, size: u8) -> u32 {
        self.bm.read(offset, size)
    }

    pub fn bus_master_write(
        &mut self,
        offset: u8,
        size: u8,
        value: u32,
        memory: &mut dyn GuestMemory,
    ) {
        self.bus_master_write_registers(offset, size, value);
        self.service_dma(memory);
    }

    /// The register half of [`IdeChannel::bus_master_write`]: a machine whose port handlers
    /// cannot reach guest memory runs the transfer later with [`IdeChannel::service_dma`]
    /// when [`IdeChannel::dma_pending`] says so.
    pub fn bus_master_write_registers(&mut self, offset: u8, size: u8, value: u32) {
        if let Some(command) = self.bm.write(offset, size, value) {
            let starting =
                command & busmaster::CMD_START != 0 && self.bm.command & busmaster::CMD_START == 0;
            self.bm.command = command;
            if command & busmaster::CMD_START == 0 {
                self.bm.status &= !busmaster::STATUS_ACTIVE;
            } else if starting {
                self.bm.status |= busmaster::STATUS_ACTIVE;
            }
        }
    }

    /// A DMA command waits and the bus master is started: [`IdeChannel::service_dma`] would
    /// move data now.
    pub fn dma_pending(&self) -> bool {
        self.bm.command & busmaster::CMD_START != 0 && matches!(self.transfer, Transfer::Dma(_))
    }

    /// Runs a pending DMA command if the bus master is started. Called on bus-master writes;
    /// the machine also calls it after command-block writes (a guest may start the engine
    /// before issuing the command).
    pub fn service_dma(&mut self, memory: &mut dyn GuestMemory) {
        if self.bm.command & busmaster::CMD_START == 0 || !matches!(self.transfer, Transfer::Dma(_))
        {
            return;
        }
        let Transfer::Dma(job) = std::mem::replace(&mut self.transfer, Transfer::Idle) else {
            return;
        };
        self.bm.status |= busmaster::STATUS_ACTIVE;
        let to_memory = self.bm.command & busmaster::CMD_TO_MEMORY != 0;
        let result = busmaster::read_prdt(memory, self.bm.prdt)
            .map(Scatter::new)
            .and_then(|mut sg| {
                let capacity = sg.capacity();
                Ok(self
                    .run_job(job, to_memory, &mut sg, memory)?
                    .map(|moved| (moved, capacity)))
            });
        match result {
            Ok(Ok((moved, capacity))) => {
                // The engine stays active when the table describes more than was moved.
                if moved >= capacity {
                    self.bm.status &= !busmaster::STATUS_ACTIVE;
                }
                self.bm.status |= busmaster::STATUS_INTERRUPT;
                let kind = self.dev().map(|d| d.kind);
                if kind == Some(Kind::Cdrom) {
                    self.tf.nsector = 3;
                }
                self.complete();
            }
            Ok(Err(media_error)) => {
                self.bm.status =
                    (self.bm.status | busmaster::STATUS_INTERRUPT) & !busmaster::STATUS_ACTIVE;
                media_error(self);
            }
            Err(dma) => {
                tracing::debug!(%dma, "IDE DMA failed");
                self.bm.status =
                    (self.bm.status | busmaster::STATUS_ERROR | busmaster::STATUS_INTERRUPT)
                        & !busmaster::STATUS_ACTIVE;
                let kind = self.dev().map(|d| d.kind);
                if kind == Some(Kind::Cdrom) {
                    atapi::fail(self, atapi::Sense::ABORTED);
                } else {
                    self.abort(ERR_ABRT);
                }
            }
        }
    }

    /// Moves the job's data. Outer error: the DMA itself failed; inner error: the medium
    /// failed (reported by the returned completion function).
    #[allow(clippy::type_complexity)]
    fn run_job(
        &mut self,
        job: DmaJob,
        to_memory: bool,
        sg: &mut Scatter,
        memory: &mut dyn GuestMemory,
    ) -> Result<Result<usize, fn(&mut IdeChannel)>, DmaError> {
        let wants_memory = !matches!(job, DmaJob::AtaWrite { .. });
        if wants_memory != to_memory {
            return Err(DmaError::WrongDirection);
        }
        let Some(dev) = self.dev() else {
            return Err(DmaError::NoDevice);
        };
        let Some(media) = dev.media.as_mut() else {
            return Ok(Err(atapi::fail_no_medium));
        };
        let mut moved = 0usize;
        match job {
            DmaJob::AtaRead { lba, count } | DmaJob::AtaWrite { lba, count } => {
                let write = !to_memory;
                let per_chunk = (DMA_CHUNK_BYTES / 512) as u32;
                let mut done = 0u32;
                while done < count {
                    let n = per_chunk.min(count - done);
                    let mut chunk = vec![0u8; n as usize * 512];
                    let at = lba + done as u64;
                    if write {
                        sg.read_in(memory, &mut chunk)?;
                        if media.write_sectors(at, &chunk).is_err() {
                            return Ok(Err(|ch| ch.abort(ERR_UNC | ERR_ABRT)));
                        }
                    } else {
                        if media.read_sectors(at, &mut chunk).is_err() {
                            return Ok(Err(|ch| ch.abort(ERR_UNC)));
                        }
                        sg.write_out(memory, &chunk)?;
                    }
                    done += n;
                    moved += chunk.len();
                }
            }
            DmaJob::AtapiIn { pending, read } => {
                sg.write_out(memory, &pending)?;
                moved += pending.len();
                if let Some((lba, count)) = read {
                    let per_chunk = (DMA_CHUNK_BYTES / 2048) as u32;
                    let mut done = 0u32;
                    while done < count {
                        let n = per_chunk.min(count - done);
                        let mut chunk = vec![0u8; n as usize * 2048];
                        if media.read_sectors(lba + done as u64, &mut chunk).is_err() {
                            return Ok(Err(|ch| atapi::fail(ch, atapi::Sense::READ_ERROR)));
                        }
                        sg.write_out(memory, &chunk)?;
                        done += n;
                        moved += chunk.len();
                    }
                }
            }
        }
        Ok(Ok(moved))
    }
}
