//! String instructions MOVS/CMPS/STOS/LODS/SCAS/INS/OUTS with REP/REPE/REPNE.
//!
//! A REP instruction runs at most `CHUNK` iterations per execution and then restarts
//! itself (RIP unchanged), so interrupts and the instruction budget are honoured in the
//! middle of long copies, as on hardware.

use super::{Exec, Handler, Insn, K_OTHER, PFX_REP, PFX_REPNE};
use crate::fault::XResult;
use crate::flags::{size_mask, FlagOp, DF};
use crate::seg::ES;
use iced_x86::{Instruction, Mnemonic, Register};

const CHUNK: u64 = 4096;

const MOVS: u8 = 0;
const CMPS: u8 = 1;
const STOS: u8 = 2;
const LODS: u8 = 3;
const SCAS: u8 = 4;
const INS: u8 = 5;
const OUTS: u8 = 6;

pub fn lookup(ins: &Instruction) -> Option<Handler> {
    use Mnemonic::*;
    Some(match ins.mnemonic() {
        Movsb | Movsw | Movsq => string::<MOVS>,
        Movsd if ins.op_count() == 2 && ins.op0_kind() != iced_x86::OpKind::Register => string::<MOVS>,
        Cmpsb | Cmpsw | Cmpsq => string::<CMPS>,
        Cmpsd if ins.op0_kind() != iced_x86::OpKind::Register => string::<CMPS>,
        Stosb | Stosw | Stosd | Stosq => string::<STOS>,
        Lodsb | Lodsw | Lodsd | Lodsq => string::<LODS>,
        Scasb | Scasw | Scasd | Scasq => string::<SCAS>,
        Insb | Insw | Insd => string::<INS>,
        Outsb | Outsw | Outsd => string::<OUTS>,
        _ => return None,
    })
}

fn seg_index(r: Register) -> u8 {
    match r {
        Register::ES => 0,
        Register::CS => 1,
        Register::SS => 2,
        Register::FS => 4,
        Register::GS => 5,
        _ => 3,
    }
}

fn string<const OP: u8>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let esize = if i.ops[0].kind == K_OTHER { i.ops[0].size } else { i.ops[1].size };
    let am = size_mask(i.asize);
    let src_seg = seg_index(i.raw.segment_prefix());
    let step = if ex.s.rflags & DF != 0 { (esize as u64).wrapping_neg() } else { esize as u64 };
    let rep = i.prefix & (PFX_REP | PFX_REPNE) != 0;
    if matches!(OP, INS | OUTS) {
        let port = ex.s.gpr[2] as u16;
        ex.check_io(port, esize)?;
    }
    let mut left = if rep { ex.s.gpr[1] & am } else { 1 };
    if left == 0 {
        return Ok(());
    }
    let mut n = 0;
    loop {
        let si = ex.s.gpr[6] & am;
        let di = ex.s.gpr[7] & am;
        let mut compare: Option<(u64, u64)> = None;
        match OP {
            MOVS => {
                let v = ex.read_mem(src_seg, si, esize)?;
                ex.write_mem(ES, di, esize, v)?;
            }
            CMPS => {
                let a = ex.read_mem(src_seg, si, esize)?;
                let b = ex.read_mem(ES, di, esize)?;
                compare = Some((a, b));
            }
            STOS => {
                let v = ex.reg(0, esize);
                ex.write_mem(ES, di, esize, v)?;
            }
            LODS => {
                let v = ex.read_mem(src_seg, si, esize)?;
                ex.set_reg(0, esize, v);
            }
            SCAS => {
                let b = ex.read_mem(ES, di, esize)?;
                compare = Some((ex.reg(0, esize), b));
            }
            INS => {
                // Check the destination before the port read has side effects.
                ex.lin(ES, di, esize, true)?;
                let port = ex.s.gpr[2] as u16;
                let v = ex.port_in(port, esize);
                ex.write_mem(ES, di, esize, v as u64)?;
            }
            _ => {
                let v = ex.read_mem(src_seg, si, esize)?;
                let port = ex.s.gpr[2] as u16;
                ex.port_out(port, esize, v as u32);
            }
        }
        // Advance the index registers used by this instruction.
        // 32-bit address size writes ESI/EDI (zero-extending); 16-bit merges.
        if matches!(OP, MOVS | CMPS | LODS | OUTS) {
            ex.set_reg(6, i.asize, si.wrapping_add(step));
        }
        if matches!(OP, MOVS | CMPS | STOS | SCAS | INS) {
            ex.set_reg(7, i.asize, di.wrapping_add(step));
        }
        if let Some((a, b)) = compare {
            ex.c.flags.set(FlagOp::Sub, esize, a, b, a.wrapping_sub(b) & size_mask(esize));
        }
        if !rep {
            return Ok(());
        }
        left -= 1;
        ex.set_reg(1, i.asize, left);
        if left == 0 {
            return Ok(());
        }
        if compare.is_some() {
            let zf = ex.c.flags.zf(ex.s.rflags);
            let stop = if i.prefix & PFX_REPNE != 0 { zf } else { !zf };
            if stop {
                return Ok(());
            }
        }
        n += 1;
        if n >= CHUNK || ex.c.end_block {
            // Resume later at the same instruction.
            ex.c.next_rip = ex.s.rip;
            ex.c.end_block = true;
            return Ok(());
        }
    }
}
