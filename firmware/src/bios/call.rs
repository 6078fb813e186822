//! One service call in progress: the caller's registers, guest memory, the host and the
//! FLAGS image through which CF/ZF travel back to the caller.

use aero_cpu::{CpuState, Reg, Seg};

use super::error::FirmwareError;
use super::host::FirmwareHost;
use super::mem::GuestMem;

const CF: u16 = 1 << 0;
const ZF: u16 = 1 << 6;

/// How a service left the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Return to the caller through the stub's IRET (or next ROM instruction).
    Return,
    /// Nothing to do yet: idle with interrupts on, then call the service again.
    Retry,
    /// The service set CS:IP/SS:SP itself (boot, boot failure).
    Jumped,
}

pub struct Call<'a> {
    pub cpu: &'a mut CpuState,
    pub mem: GuestMem<'a>,
    pub host: &'a mut dyn FirmwareHost,
    /// Linear address of the caller's FLAGS word in the IRET frame; `None` for internal
    /// traps, whose flags are the live RFLAGS.
    flags_addr: Option<u64>,
}

impl<'a> Call<'a> {
    pub fn new(
        cpu: &'a mut CpuState,
        mem: GuestMem<'a>,
        host: &'a mut dyn FirmwareHost,
        flags_addr: Option<u64>,
    ) -> Call<'a> {
        Call {
            cpu,
            mem,
            host,
            flags_addr,
        }
    }

    pub fn r32(&self, r: Reg) -> u32 {
        self.cpu.reg(r) as u32
    }
    pub fn set_r32(&mut self, r: Reg, v: u32) {
        let old = self.cpu.reg(r);
        self.cpu.set_reg(r, (old & !0xFFFF_FFFF) | v as u64);
    }
    pub fn r16(&self, r: Reg) -> u16 {
        self.cpu.reg(r) as u16
    }
    pub fn set_r16(&mut self, r: Reg, v: u16) {
        let old = self.cpu.reg(r);
        self.cpu.set_reg(r, (old & !0xFFFF) | v as u64);
    }
    /// Low byte (AL, BL, CL, DL).
    pub fn lo(&self, r: Reg) -> u8 {
        self.cpu.reg(r) as u8
    }
    /// High byte (AH, BH, CH, DH).
    pub fn hi(&self, r: Reg) -> u8 {
        (self.cpu.reg(r) >> 8) as u8
    }
    pub fn set_lo(&mut self, r: Reg, v: u8) {
        let old = self.cpu.reg(r);
        self.cpu.set_reg(r, (old & !0xFF) | v as u64);
    }
    pub fn set_hi(&mut self, r: Reg, v: u8) {
        let old = self.cpu.reg(r);
        self.cpu.set_reg(r, (old & !0xFF00) | ((v as u64) << 8));
    }
    pub fn ah(&self) -> u8 {
        self.hi(Reg::Rax)
    }
    pub fn al(&self) -> u8 {
        self.lo(Reg::Rax)
    }
    pub fn set_ah(&mut self, v: u8) {
        self.set_hi(Reg::Rax, v)
    }
    pub fn set_al(&mut self, v: u8) {
        self.set_lo(Reg::Rax, v)
    }
    /// Linear address of `seg:off` using the segment's base (real or V86 mode).
    pub fn linear(&self, s: Seg, off: u16) -> u64 {
        self.cpu.seg(s).base.wrapping_add(off as u64) & 0xFFFF_FFFF
    }
    pub fn set_seg_real(&mut self, s: Seg, selector: u16) {
        self.cpu.load_seg_real(s, selector);
    }

    fn flags(&self) -> Result<u16, FirmwareError> {
        match self.flags_addr {
            Some(a) => self.mem.read_u16(a),
            None => Ok(self.cpu.rflags as u16),
        }
    }
    fn set_flag(&mut self, bit: u16, on: bool) -> Result<(), FirmwareError> {
        let f = self.flags()?;
        let f = if on { f | bit } else { f & !bit };
        match self.flags_addr {
            Some(a) => self.mem.write_u16(a, f),
            None => {
                self.cpu.rflags = (self.cpu.rflags & !0xFFFF) | f as u64;
                Ok(())
            }
        }
    }
    pub fn set_cf(&mut self, on: bool) -> Result<(), FirmwareError> {
        self.set_flag(CF, on)
    }
    pub fn set_zf(&mut self, on: bool) -> Result<(), FirmwareError> {
        self.set_flag(ZF, on)
    }
    /// Success: AH = 0, CF clear.
    pub fn ok(&mut self) -> Result<Flow, FirmwareError> {
        self.set_ah(0);
        self.set_cf(false)?;
        Ok(Flow::Return)
    }
    /// Failure: AH = status, CF set.
    pub fn fail(&mut self, status: u8) -> Result<Flow, FirmwareError> {
        self.set_ah(status);
        self.set_cf(true)?;
        Ok(Flow::Return)
    }

    /// Writes one debug-console line (port 0xE9) so headless tests can see BIOS messages.
    pub fn debug_print(&mut self, text: &str) {
        for b in text.bytes() {
            self.host.io_write(0xE9, 1, b as u32);
        }
    }
}
