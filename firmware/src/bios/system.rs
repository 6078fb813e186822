//! INT 15h system services: memory map (E820/E801/88h), A20, configuration table,
//! wait, block move, keyboard intercept and device busy/post hooks.

use aero_cpu::{Reg, Seg};
use tracing::debug;

use super::Bios;
use super::call::{Call, Flow};
use super::error::FirmwareError;
use super::rom::BIOS_SEGMENT;

const SMAP: u32 = 0x534D_4150;
const UNSUPPORTED: u8 = 0x86;
const PORT_A20: u16 = 0x92;

impl Bios {
    pub(crate) fn int15(&mut self, c: &mut Call) -> Result<Flow, FirmwareError> {
        let ax = c.r16(Reg::Rax);
        match c.ah() {
            0x4F => {
                // Keyboard intercept: keep the scancode (CF stays set).
                c.set_cf(true)?;
                Ok(Flow::Return)
            }
            0x24 => a20(c, c.al()),
            0x86 => self.wait(c),
            0x87 => block_move(c),
            0x88 => {
                c.set_r16(Reg::Rax, self.memory.extended_kib_88());
                c.set_cf(false)?;
                Ok(Flow::Return)
            }
            0x90 | 0x91 => c.ok(),
            0xC0 => {
                c.set_seg_real(Seg::Es, BIOS_SEGMENT);
                c.set_r16(Reg::Rbx, self.rom.layout.config_table);
                c.ok()
            }
            0xC1 => {
                c.set_seg_real(Seg::Es, (self.memory.ebda_base >> 4) as u16);
                c.set_cf(false)?;
                Ok(Flow::Return)
            }
            0xE8 if ax == 0xE820 && c.r32(Reg::Rdx) == SMAP => self.e820(c),
            0xE8 if ax == 0xE801 => {
                let (below16, above16) = self.memory.e801();
                c.set_r16(Reg::Rax, below16);
                c.set_r16(Reg::Rcx, below16);
                c.set_r16(Reg::Rbx, above16);
                c.set_r16(Reg::Rdx, above16);
                c.set_cf(false)?;
                Ok(Flow::Return)
            }
            _ => {
                debug!(ax, "INT 15h function not supported");
                c.fail(UNSUPPORTED)
            }
        }
    }

    /// E820: EBX is the continuation index; ES:DI gets one 20-byte entry per call.
    fn e820(&self, c: &mut Call) -> Result<Flow, FirmwareError> {
        let index = c.r32(Reg::Rbx) as usize;
        let Some(entry) = self.memory.map.get(index) else {
            return c.fail(UNSUPPORTED);
        };
        let size = c.r32(Reg::Rcx);
        if size < 20 {
            return c.fail(UNSUPPORTED);
        }
        // ACPI 3.0 callers offer 24 bytes and get the extended attributes (bit 0: enabled).
        let mut record = entry.to_bytes().to_vec();
        if size >= 24 {
            record.extend_from_slice(&1u32.to_le_bytes());
        }
        let at = c.linear(Seg::Es, c.r16(Reg::Rdi));
        if c.mem.write(at, &record).is_err() {
            return c.fail(UNSUPPORTED);
        }
        let next = if index + 1 < self.memory.map.len() {
            index as u32 + 1
        } else {
            0
        };
        c.set_r32(Reg::Rax, SMAP);
        c.set_r32(Reg::Rbx, next);
        c.set_r32(Reg::Rcx, record.len() as u32);
        c.set_cf(false)?;
        Ok(Flow::Return)
    }

    /// AH=86h: wait CX:DX microseconds of virtual time. The first call arms a deadline,
    /// then the stub idles (HLT, interrupts on) and calls again until it has passed.
    fn wait(&mut self, c: &mut Call) -> Result<Flow, FirmwareError> {
        let now = c.host.now_ns();
        let deadline = match self.state.wait_deadline {
            Some(d) => d,
            None => {
                let us = (c.r16(Reg::Rcx) as u64) << 16 | c.r16(Reg::Rdx) as u64;
                let d = now.saturating_add(us.saturating_mul(1000));
                self.state.wait_deadline = Some(d);
                d
            }
        };
        if now < deadline {
            return Ok(Flow::Retry);
        }
        self.state.wait_deadline = None;
        c.ok()
    }
}

fn a20(c: &mut Call, al: u8) -> Result<Flow, FirmwareError> {
    let port = c.host.io_read(PORT_A20, 1) as u8;
    match al {
        0x00 | 0x01 => {
            let v = if al == 1 { port | 2 } else { port & !2 };
            // Bit 0 would reset the CPU: never set it.
            c.host.io_write(PORT_A20, 1, (v & !1) as u32);
            c.ok()
        }
        0x02 => {
            c.set_al((port >> 1) & 1);
            c.ok()
        }
        0x03 => {
            // Supported through the keyboard controller and port 92h.
            c.set_r16(Reg::Rbx, 0x0003);
            c.ok()
        }
        _ => c.fail(UNSUPPORTED),
    }
}

/// AH=87h: copy CX words between the source and destination descriptors of the GDT at
/// ES:SI (entries 2 and 3), as 286 protected-mode software expects.
fn block_move(c: &mut Call) -> Result<Flow, FirmwareError> {
    let gdt = c.linear(Seg::Es, c.r16(Reg::Rsi));
    let base = |c: &Call, desc: u64| -> Option<u64> {
        let d = c.mem.slice(gdt + desc, 8).ok()?;
        Some(d[2] as u64 | (d[3] as u64) << 8 | (d[4] as u64) << 16 | (d[7] as u64) << 24)
    };
    let (Some(src), Some(dst)) = (base(c, 0x10), base(c, 0x18)) else {
        return c.fail(0x03);
    };
    let len = c.r16(Reg::Rcx) as usize * 2;
    let data = match c.mem.slice(src, len) {
        Ok(d) => d.to_vec(),
        Err(_) => return c.fail(0x01),
    };
    if c.mem.write(dst, &data).is_err() {
        return c.fail(0x01);
    }
    c.ok()
}
