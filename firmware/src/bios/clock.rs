//! INT 1Ah time services (BIOS tick count and the RTC) and the tick count at boot.

use aero_cpu::Reg;
use tracing::debug;

use super::Bios;
use super::bda;
use super::call::{Call, Flow};
use super::error::FirmwareError;
use super::host::FirmwareHost;

const REG_B: u8 = 0x0B;
const B_SET: u8 = 0x80;
const B_AIE: u8 = 0x20;
const B_BINARY: u8 = 0x04;

fn cmos_read(host: &mut dyn FirmwareHost, index: u8) -> u8 {
    host.io_write(0x70, 1, index as u32);
    host.io_read(0x71, 1) as u8
}

fn cmos_write(host: &mut dyn FirmwareHost, index: u8, v: u8) {
    host.io_write(0x70, 1, index as u32);
    host.io_write(0x71, 1, v as u32);
}

fn from_bcd(v: u8) -> u8 {
    (v >> 4) * 10 + (v & 0xF)
}

fn to_bcd(v: u8) -> u8 {
    ((v / 10) << 4) | (v % 10)
}

/// Reads a clock register as BCD whatever mode the RTC is in (INT 1Ah speaks BCD).
fn read_bcd(host: &mut dyn FirmwareHost, index: u8) -> u8 {
    let binary = cmos_read(host, REG_B) & B_BINARY != 0;
    let v = cmos_read(host, index);
    if binary { to_bcd(v) } else { v }
}

fn write_bcd(host: &mut dyn FirmwareHost, index: u8, bcd: u8) {
    let binary = cmos_read(host, REG_B) & B_BINARY != 0;
    cmos_write(host, index, if binary { from_bcd(bcd) } else { bcd });
}

/// Tick count (18.2 Hz) for the RTC's time of day, for the BDA at POST.
pub fn ticks_since_midnight(host: &mut dyn FirmwareHost) -> u32 {
    let h = from_bcd(read_bcd(host, 0x04) & 0x3F) as u64;
    let m = from_bcd(read_bcd(host, 0x02)) as u64;
    let s = from_bcd(read_bcd(host, 0x00)) as u64;
    let seconds = (h * 3600 + m * 60 + s).min(86_399);
    // 1193182 / 65536 ticks per second.
    (seconds * 1_193_182 / 65_536).min(bda::TICKS_PER_DAY as u64 - 1) as u32
}

impl Bios {
    pub(crate) fn int1a(&mut self, c: &mut Call) -> Result<Flow, FirmwareError> {
        let (ch, cl, dh, dl) = (
            c.hi(Reg::Rcx),
            c.lo(Reg::Rcx),
            c.hi(Reg::Rdx),
            c.lo(Reg::Rdx),
        );
        match c.ah() {
            0x00 => {
                let ticks = c.mem.read_u32(bda::TIMER_TICKS)?;
                let rolled = c.mem.read_u8(bda::TIMER_ROLLOVER)?;
                c.mem.write_u8(bda::TIMER_ROLLOVER, 0)?;
                c.set_r16(Reg::Rcx, (ticks >> 16) as u16);
                c.set_r16(Reg::Rdx, ticks as u16);
                c.set_al(rolled);
                c.set_cf(false)?;
                Ok(Flow::Return)
            }
            0x01 => {
                let ticks = (c.r16(Reg::Rcx) as u32) << 16 | c.r16(Reg::Rdx) as u32;
                c.mem.write_u32(bda::TIMER_TICKS, ticks)?;
                c.mem.write_u8(bda::TIMER_ROLLOVER, 0)?;
                c.ok()
            }
            0x02 => {
                let h = read_bcd(c.host, 0x04);
                let m = read_bcd(c.host, 0x02);
                let s = read_bcd(c.host, 0x00);
                let dst = cmos_read(c.host, REG_B) & 1;
                c.set_hi(Reg::Rcx, h);
                c.set_lo(Reg::Rcx, m);
                c.set_hi(Reg::Rdx, s);
                c.set_lo(Reg::Rdx, dst);
                c.ok()
            }
            0x03 => {
                let b = cmos_read(c.host, REG_B);
                cmos_write(c.host, REG_B, b | B_SET);
                write_bcd(c.host, 0x04, ch);
                write_bcd(c.host, 0x02, cl);
                write_bcd(c.host, 0x00, dh);
                cmos_write(c.host, REG_B, (b & !(B_SET | 1)) | (dl & 1));
                c.ok()
            }
            0x04 => {
                let century = read_bcd(c.host, 0x32);
                let year = read_bcd(c.host, 0x09);
                let month = read_bcd(c.host, 0x08);
                let day = read_bcd(c.host, 0x07);
                c.set_hi(Reg::Rcx, century);
                c.set_lo(Reg::Rcx, year);
                c.set_hi(Reg::Rdx, month);
                c.set_lo(Reg::Rdx, day);
                c.ok()
            }
            0x05 => {
                let b = cmos_read(c.host, REG_B);
                cmos_write(c.host, REG_B, b | B_SET);
                write_bcd(c.host, 0x32, ch);
                write_bcd(c.host, 0x09, cl);
                write_bcd(c.host, 0x08, dh);
                write_bcd(c.host, 0x07, dl);
                cmos_write(c.host, REG_B, b & !B_SET);
                c.ok()
            }
            0x06 => {
                let b = cmos_read(c.host, REG_B);
                if b & B_AIE != 0 {
                    return c.fail(0x00); // alarm already set: CF=1
                }
                write_bcd(c.host, 0x05, ch);
                write_bcd(c.host, 0x03, cl);
                write_bcd(c.host, 0x01, dh);
                cmos_write(c.host, REG_B, b | B_AIE);
                c.ok()
            }
            0x07 => {
                let b = cmos_read(c.host, REG_B);
                cmos_write(c.host, REG_B, b & !B_AIE);
                c.ok()
            }
            0xB1 => self.pci_bios(c),
            ah => {
                debug!(ah, "INT 1Ah function not supported");
                c.fail(0x86)
            }
        }
    }
}
