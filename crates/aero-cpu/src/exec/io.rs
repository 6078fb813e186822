//! IN/OUT and the I/O permission check (IOPL, TSS I/O bitmap) shared with INS/OUTS.

use super::{Exec, Handler, Insn, K_IMM};
use crate::fault::{Fault, XResult};
use crate::flags::IOPL;
use iced_x86::{Instruction, Mnemonic};

pub fn lookup(ins: &Instruction) -> Option<Handler> {
    Some(match ins.mnemonic() {
        Mnemonic::In => in_,
        Mnemonic::Out => out,
        _ => return None,
    })
}

impl Exec<'_> {
    /// #GP(0) unless the current privilege may access ports `port..port+size`.
    pub fn check_io(&mut self, port: u16, size: u8) -> XResult {
        if self.s.cr0 & 1 == 0 {
            return Ok(());
        }
        let iopl = ((self.s.rflags & IOPL) >> 12) as u8;
        if !self.v86() && self.s.cpl <= iopl {
            return Ok(());
        }
        let tr = self.s.tr;
        let typ = tr.attr & 0xF;
        if !(typ == 0x9 || typ == 0xB) || tr.limit < 0x67 {
            return Err(Fault::gp0());
        }
        let map = self.read_sys(tr.base.wrapping_add(0x66) & self.c.lin_mask, 2)?;
        let byte = map + (port as u64 >> 3);
        if byte + 1 > tr.limit as u64 {
            return Err(Fault::gp0());
        }
        let bits = self.read_sys(tr.base.wrapping_add(byte) & self.c.lin_mask, 2)?;
        let mask = ((1u64 << size) - 1) << (port & 7);
        if bits & mask != 0 {
            return Err(Fault::gp0());
        }
        Ok(())
    }

    pub fn port_in(&mut self, port: u16, size: u8) -> u32 {
        self.bus.sync_time(self.c.retired_now());
        let v = self.bus.io_read(port, size) & (crate::flags::size_mask(size) as u32);
        if self.bus.stop_requested() {
            self.c.events |= crate::core::EV_STOP;
            self.c.end_block = true;
        }
        v
    }

    pub fn port_out(&mut self, port: u16, size: u8, v: u32) {
        self.bus.sync_time(self.c.retired_now());
        self.bus.io_write(port, size, v);
        if self.bus.stop_requested() {
            self.c.events |= crate::core::EV_STOP;
            self.c.end_block = true;
        }
    }
}

fn port_of(ex: &Exec<'_>, i: &Insn, n: usize) -> u16 {
    if i.ops[n].kind == K_IMM {
        i.imm as u16
    } else {
        ex.s.gpr[2] as u16
    }
}

fn in_(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let port = port_of(ex, i, 1);
    ex.check_io(port, size)?;
    let v = ex.port_in(port, size);
    ex.set_reg(0, size, v as u64);
    Ok(())
}

fn out(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[1].size;
    let port = port_of(ex, i, 0);
    ex.check_io(port, size)?;
    let v = ex.reg(0, size) as u32;
    ex.port_out(port, size, v);
    Ok(())
}
