//! ATA command set for hard disks: PIO and DMA reads/writes (LBA28 and LBA48, single and
//! MULTIPLE), IDENTIFY DEVICE, FLUSH CACHE, SET FEATURES, SET MULTIPLE and power management.

use super::channel::{
    DmaJob, ERR_ABRT, ERR_IDNF, ERR_UNC, IdeChannel, Kind, ST_DRDY, ST_DSC, Transfer,
};

/// Largest READ/WRITE MULTIPLE block we accept (IDENTIFY word 47).
pub(crate) const MAX_MULTIPLE: u8 = 16;

enum Access {
    Pio { multiple: bool },
    Dma,
    Verify,
}

pub(crate) fn execute(ch: &mut IdeChannel, command: u8) {
    if let Some(dev) = ch.dev() {
        // Any media access wakes the drive; CHECK POWER MODE reads the state first.
        if command != 0xE5 && command != 0xE0 && command != 0xE2 && command != 0xE6 {
            dev.standby = false;
        }
    }
    match command {
        0x20 | 0x21 => rw(ch, false, false, Access::Pio { multiple: false }),
        0x24 => rw(ch, false, true, Access::Pio { multiple: false }),
        0x30 | 0x31 => rw(ch, true, false, Access::Pio { multiple: false }),
        0x34 => rw(ch, true, true, Access::Pio { multiple: false }),
        0xC4 => rw(ch, false, false, Access::Pio { multiple: true }),
        0x29 => rw(ch, false, true, Access::Pio { multiple: true }),
        0xC5 => rw(ch, true, false, Access::Pio { multiple: true }),
        0x39 => rw(ch, true, true, Access::Pio { multiple: true }),
        0xC8 | 0xC9 => rw(ch, false, false, Access::Dma),
        0x25 => rw(ch, false, true, Access::Dma),
        0xCA | 0xCB => rw(ch, true, false, Access::Dma),
        0x35 => rw(ch, true, true, Access::Dma),
        0x40 | 0x41 => rw(ch, false, false, Access::Verify),
        0x42 => rw(ch, false, true, Access::Verify),
        0xEC => {
            let data = identify(ch, false);
            ch.start_pio_in(data, Transfer::BufferIn, true);
        }
        0xE7 | 0xEA => flush(ch),
        0xEF => set_features(ch),
        0xC6 => set_multiple(ch),
        0x91 | 0x70 | 0x10..=0x1F => ch.complete(), // INITIALIZE DEVICE PARAMETERS, SEEK, RECALIBRATE
        0xF8 | 0x27 => read_native_max(ch, command == 0x27),
        0x90 => diagnostic(ch),
        0xE0 | 0xE2 | 0xE6 => power(ch, true), // STANDBY IMMEDIATE, STANDBY, SLEEP
        0xE1 | 0xE3 => power(ch, false),       // IDLE IMMEDIATE, IDLE
        0xE5 => {
            let standby = ch.dev().is_some_and(|d| d.standby);
            ch.tf.nsector = if standby { 0x00 } else { 0xFF };
            ch.complete();
        }
        _ => {
            tracing::debug!(command, "IDE disk: unsupported command aborted");
            ch.abort(ERR_ABRT);
        }
    }
}

fn sectors(ch: &mut IdeChannel) -> u64 {
    ch.dev()
        .and_then(|d| d.media.as_ref())
        .map_or(0, |m| m.sector_count())
}

fn rw(ch: &mut IdeChannel, write: bool, ext: bool, access: Access) {
    let (lba, count) = if ext {
        (ch.tf.lba48(), ch.tf.count48())
    } else {
        (ch.tf.lba28(), ch.tf.count28())
    };
    if !ext && ch.tf.device & 0x40 == 0 {
        // CHS addressing: obsolete; every guest we target uses LBA.
        ch.abort(ERR_ABRT);
        return;
    }
    if lba
        .checked_add(count as u64)
        .is_none_or(|end| end > sectors(ch))
    {
        ch.abort(ERR_IDNF | ERR_ABRT);
        return;
    }
    match access {
        Access::Verify => ch.complete(),
        Access::Dma => ch.start_dma(if write {
            DmaJob::AtaWrite { lba, count }
        } else {
            DmaJob::AtaRead { lba, count }
        }),
        Access::Pio { multiple } => {
            let block = if multiple {
                match ch.dev().map_or(0, |d| d.multiple) {
                    0 => {
                        ch.abort(ERR_ABRT);
                        return;
                    }
                    m => m as u32,
                }
            } else {
                1
            };
            if write {
                let n = block.min(count);
                ch.start_pio_out(
                    n as usize * 512,
                    Transfer::AtaWritePio {
                        lba,
                        remaining: count,
                        block,
                    },
                );
            } else {
                read_block(ch, lba, count, block);
            }
        }
    }
}

/// Loads the next PIO-in block (`remaining` sectors left from `lba`) and raises DRQ + IRQ.
pub(crate) fn read_block(ch: &mut IdeChannel, lba: u64, remaining: u32, block: u32) {
    let n = block.min(remaining);
    let mut data = vec![0u8; n as usize * 512];
    let ok = ch
        .dev()
        .and_then(|d| d.media.as_mut())
        .is_some_and(|m| m.read_sectors(lba, &mut data).is_ok());
    if !ok {
        ch.abort(ERR_UNC);
        return;
    }
    ch.start_pio_in(
        data,
        Transfer::AtaReadPio {
            lba: lba + n as u64,
            remaining: remaining - n,
            block,
        },
        true,
    );
}

/// A PIO-out block arrived: store it, then ask for the next one or finish.
pub(crate) fn write_block_done(ch: &mut IdeChannel, lba: u64, remaining: u32, block: u32) {
    let data = std::mem::take(&mut ch.buf);
    let n = (data.len() / 512) as u32;
    let ok = ch
        .dev()
        .and_then(|d| d.media.as_mut())
        .is_some_and(|m| m.write_sectors(lba, &data).is_ok());
    if !ok {
        ch.abort(ERR_UNC | ERR_ABRT);
        return;
    }
    let remaining = remaining - n;
    if remaining == 0 {
        ch.complete();
        return;
    }
    let next = block.min(remaining);
    ch.start_pio_out(
        next as usize * 512,
        Transfer::AtaWritePio {
            lba: lba + n as u64,
            remaining,
            block,
        },
    );
    ch.raise_irq();
}

fn flush(ch: &mut IdeChannel) {
    let ok = ch
        .dev()
        .and_then(|d| d.media.as_mut())
        .is_some_and(|m| m.flush().is_ok());
    if ok {
        ch.complete();
    } else {
        ch.abort(ERR_ABRT);
    }
}

fn set_features(ch: &mut IdeChannel) {
    let feature = ch.tf.feature;
    let value = ch.tf.nsector;
    let Some(dev) = ch.dev() else { return };
    if apply_set_features(feature, value, &mut dev.write_cache, &mut dev.transfer_mode) {
        ch.complete();
    } else {
        ch.abort(ERR_ABRT);
    }
}

/// SET FEATURES subcommands a disk accepts; false = abort. Shared with AHCI.
pub(crate) fn apply_set_features(
    feature: u8,
    value: u8,
    write_cache: &mut bool,
    transfer_mode: &mut u8,
) -> bool {
    match feature {
        0x02 => {
            *write_cache = true;
            true
        }
        0x82 => {
            *write_cache = false;
            true
        }
        0x03 => {
            // Transfer mode: PIO 0–4 (0x00/0x01/0x08–0x0C), MWDMA 0–2, UDMA 0–5.
            let ok = matches!(value, 0x00 | 0x01 | 0x08..=0x0C | 0x20..=0x22 | 0x40..=0x45);
            if ok {
                *transfer_mode = value;
            }
            ok
        }
        // Read look-ahead, reverting to power-on defaults: accepted, nothing to change.
        0x55 | 0xAA | 0x66 | 0xCC => true,
        // SATA feature enable/disable (DIPM, asynchronous notification, …): accepted.
        0x10 | 0x90 => true,
        _ => false,
    }
}

fn set_multiple(ch: &mut IdeChannel) {
    let count = ch.tf.nsector;
    let valid = count == 0 || (count.is_power_of_two() && count <= MAX_MULTIPLE);
    if !valid {
        ch.abort(ERR_ABRT);
        return;
    }
    if let Some(dev) = ch.dev() {
        dev.multiple = count;
    }
    ch.complete();
}

fn read_native_max(ch: &mut IdeChannel, ext: bool) {
    let max = sectors(ch).saturating_sub(1);
    let tf = &mut ch.tf;
    tf.lba_low = max as u8;
    tf.lba_mid = (max >> 8) as u8;
    tf.lba_high = (max >> 16) as u8;
    if ext {
        tf.hob_lba_low = (max >> 24) as u8;
        tf.hob_lba_mid = (max >> 32) as u8;
        tf.hob_lba_high = (max >> 40) as u8;
    } else {
        tf.device = (tf.device & 0xF0) | ((max.min(0x0FFF_FFFF) >> 24) as u8 & 0x0F);
    }
    ch.complete();
}

/// EXECUTE DEVICE DIAGNOSTIC: signature in the task file, error register 01h = passed.
pub(crate) fn diagnostic(ch: &mut IdeChannel) {
    let kind = ch.dev().map_or(Kind::Disk, |d| d.kind);
    ch.tf.set_signature(kind);
    let status = if kind == Kind::Disk {
        ST_DRDY | ST_DSC
    } else {
        0
    };
    ch.set_status(status, 0x01);
    ch.raise_irq();
}

fn power(ch: &mut IdeChannel, standby: bool) {
    if let Some(dev) = ch.dev() {
        dev.standby = standby;
    }
    ch.complete();
}

/// Writes an ATA string (two characters per word, first in the high byte), space padded.
fn put_string(words: &mut [u16], s: &str) {
    let bytes: Vec<u8> = s
        .bytes()
        .chain(std::iter::repeat(b' '))
        .take(words.len() * 2)
        .collect();
    for (w, pair) in words.iter_mut().zip(bytes.chunks(2)) {
        *w = ((pair[0] as u16) << 8) | pair[1] as u16;
    }
}

/// IDENTIFY DEVICE / IDENTIFY PACKET DEVICE data for an IDE device.
pub(crate) fn identify(ch: &mut IdeChannel, packet: bool) -> Vec<u8> {
    let total = sectors(ch);
    let (multiple, write_cache, transfer_mode) = ch.dev().map_or((0, true, 0x45), |d| {
        (d.multiple, d.write_cache, d.transfer_mode)
    });
    let slot = ch.selected();
    identify_data(&IdentifyParams {
        packet,
        sectors: total,
        multiple,
        write_cache,
        transfer_mode,
        serial: slot + 1,
        slave: slot == 1,
        ncq_depth: None,
        async_notification: None,
    })
}

/// What IDENTIFY data depends on; shared by the IDE and AHCI front ends.
pub(crate) struct IdentifyParams {
    pub packet: bool,
    pub sectors: u64,
    pub multiple: u8,
    pub write_cache: bool,
    pub transfer_mode: u8,
    /// Serial number suffix (distinct per drive).
    pub serial: usize,
    /// IDE slave (word 93 reset result).
    pub slave: bool,
    /// Serial ATA: NCQ queue depth (1–32) for words 75/76; `None` for parallel ATA.
    pub ncq_depth: Option<u8>,
    /// Serial ATA ATAPI: asynchronous notification supported (words 78/79 bit 5), with
    /// whether the host enabled it; `None`: not supported.
    pub async_notification: Option<bool>,
}

/// IDENTIFY DEVICE / IDENTIFY PACKET DEVICE data (ATA/ATAPI-7 layout), checksummed.
pub(crate) fn identify_data(p: &IdentifyParams) -> Vec<u8> {
    let (packet, total, multiple, write_cache, mode, slot) = (
        p.packet,
        p.sectors,
        p.multiple,
        p.write_cache,
        p.transfer_mode,
        p.serial.saturating_sub(1),
    );
    let mut w = [0u16; 256];
    if packet {
        w[0] = 0x85C0; // ATAPI, CD/DVD, removable, 12-byte packets, DRQ within 50 µs
    } else {
        w[0] = 0x0040; // fixed disk
        let cylinders = (total / (16 * 63)).min(16383) as u16;
        w[1] = cylinders;
        w[3] = 16;
        w[6] = 63;
        w[54] = cylinders;
        w[55] = 16;
        w[56] = 63;
        let chs = cylinders as u32 * 16 * 63;
        w[57] = chs as u16;
        w[58] = (chs >> 16) as u16;
        w[47] = 0x8000 | MAX_MULTIPLE as u16;
        w[59] = if multiple != 0 {
            0x0100 | multiple as u16
        } else {
            0
        };
        let lba28 = total.min(0x0FFF_FFFF) as u32;
        w[60] = lba28 as u16;
        w[61] = (lba28 >> 16) as u16;
        for i in 0..4 {
            w[100 + i] = (total >> (16 * i)) as u16;
        }
    }
    put_string(&mut w[10..20], &format!("AERO{:016}", slot + 1));
    put_string(&mut w[23..27], "1.0");
    put_string(
        &mut w[27..47],
        if packet {
            "Aero DVD-ROM"
        } else {
            "Aero Hard Disk"
        },
    );
    w[49] = 0x0300; // LBA and DMA supported
    w[50] = 0x4000;
    w[51] = 0x0200; // PIO timing mode 2 (obsolete field, what drivers still print)
    w[53] = 0x0006; // words 64–70 and 88 valid
    let mwdma_sel = if mode & 0xF8 == 0x20 {
        1u16 << (mode & 7)
    } else {
        0
    };
    let udma_sel = if mode & 0xF8 == 0x40 {
        1u16 << (mode & 7)
    } else {
        0
    };
    w[63] = 0x0007 | (mwdma_sel << 8);
    w[64] = 0x0003; // PIO 3 and 4
    w[65] = 120;
    w[66] = 120;
    w[67] = 120;
    w[68] = 120;
    w[80] = 0x00F0; // ATA/ATAPI-4 to -7
    w[81] = 0x0021;
    if packet {
        w[82] = 0x4010; // NOP, PACKET
        w[83] = 0x4000;
        w[84] = 0x4000;
        w[85] = 0x4010;
        w[86] = 0x0000;
        w[87] = 0x4000;
    } else {
        let cache = if write_cache { 0x0020 } else { 0 };
        w[82] = 0x4028; // NOP, write cache, power management
        w[83] = 0x7400; // FLUSH CACHE EXT, FLUSH CACHE, LBA48
        w[84] = 0x4000;
        w[85] = 0x4008 | cache;
        w[86] = 0x3400;
        w[87] = 0x4000;
    }
    w[88] = 0x003F | (udma_sel << 8);
    if let Some(depth) = p.ncq_depth {
        // SATA: Gen1/Gen2 signalling; NCQ for disks (queue depth - 1 in word 75).
        w[76] = 0x0006;
        if !packet {
            w[75] = u16::from(depth.clamp(1, 32) - 1);
            w[76] |= 0x0100;
            // General-purpose logging (READ LOG EXT): NCQ error recovery reads log 10h.
            w[84] |= 1 << 5;
            w[87] |= 1 << 5;
        }
        // Words 78/79: SATA features supported / enabled.
        let an = 1u16 << 5;
        w[78] = if p.async_notification.is_some() {
            an
        } else {
            0
        };
        w[79] = if p.async_notification == Some(true) {
            an
        } else {
            0
        };
    } else {
        w[93] = 0x6001 | if p.slave { 0x0100 } else { 0 };
    }
    w[255] = 0x00A5;
    let mut bytes: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
    let sum = bytes[..511].iter().fold(0u8, |a, &b| a.wrapping_add(b));
    bytes[511] = 0u8.wrapping_sub(sum);
    bytes
}
