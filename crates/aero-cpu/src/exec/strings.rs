//! String instructions MOVS/CMPS/STOS/LODS/SCAS/INS/OUTS with REP/REPE/REPNE.
//!
//! A REP instruction runs at most `CHUNK` iterations per execution and then restarts
//! itself (RIP unchanged), so interrupts and the instruction budget are honoured in the
//! middle of long copies, as on hardware.

use super::{Exec, Handler, Insn, K_OTHER, PFX_REP, PFX_REPNE};
use crate::fault::XResult;
use crate::flags::{DF, FlagOp, size_mask};
use crate::mmu::Access;
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
        Movsd if ins.op_count() == 2 && ins.op0_kind() != iced_x86::OpKind::Register => {
            string::<MOVS>
        }
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
    let esize = if i.ops[0].kind == K_OTHER {
        i.ops[0].size
    } else {
        i.ops[1].size
    };
    let am = size_mask(i.asize);
    let src_seg = seg_index(i.raw.segment_prefix());
    let step = if ex.s.rflags & DF != 0 {
        (esize as u64).wrapping_neg()
    } else {
        esize as u64
    };
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
    if rep && matches!(OP, MOVS | STOS) && ex.s.rflags & DF == 0 {
        left = bulk_forward::<OP>(ex, i, esize, src_seg, left);
        if left == 0 {
            return Ok(());
        }
    }
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
            ex.c.flags.set(
                FlagOp::Sub,
                esize,
                a,
                b,
                a.wrapping_sub(b) & size_mask(esize),
            );
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
            ex.c.next_rip = ex.rip_of(i);
            ex.c.end_block = true;
            return Ok(());
        }
    }
}

/// REP MOVS/STOS moving forward: copy whole runs that stay inside one RAM page on both
/// sides directly on the RAM slice. Returns the remaining count; anything unusual (page
/// or segment boundary, MMIO, code page, breakpoints) is left to the per-element loop.
fn bulk_forward<const OP: u8>(
    ex: &mut Exec<'_>,
    i: &Insn,
    esize: u8,
    src_seg: u8,
    mut left: u64,
) -> u64 {
    let am = size_mask(i.asize);
    let es = esize as u64;
    // Bounded so one instruction never runs unboundedly long.
    let mut budget = 64 * CHUNK;
    while left > 0 && budget > 0 {
        let di = ex.s.gpr[7] & am;
        let si = ex.s.gpr[6] & am;
        // Elements until the destination (and source) offset reaches a page end.
        let Ok(dlin) = ex.lin(ES, di, esize, true) else {
            break;
        };
        let mut run = ((0x1000 - (dlin & 0xFFF)) / es).min(left).min(budget);
        let mut slin = 0;
        if OP == MOVS {
            let Ok(l) = ex.lin(src_seg, si, esize, false) else {
                break;
            };
            slin = l;
            run = run.min((0x1000 - (slin & 0xFFF)) / es);
        }
        if run == 0 {
            break;
        }
        let bytes = run * es;
        // The whole run must be inside the segments and must not wrap the offsets.
        if di + bytes - 1 > am || ex.lin(ES, di + bytes - es, esize, true).is_err() {
            break;
        }
        if OP == MOVS
            && (si + bytes - 1 > am || ex.lin(src_seg, si + bytes - es, esize, false).is_err())
        {
            break;
        }
        let user = ex.c.user;
        // Source first, so a faulting source leaves the destination's dirty bit alone.
        let mut src = 0;
        if OP == MOVS {
            if ex.fast_host(slin, false).is_none()
                && ex.translate(slin, Access::Read, user).is_err()
            {
                break; // the element loop raises the fault
            }
            let Some(s) = ex.fast_host(slin, false) else {
                break;
            };
            src = s;
        }
        if ex.fast_host(dlin, true).is_none() && ex.translate(dlin, Access::Write, user).is_err() {
            break;
        }
        let Some(dst) = ex.fast_host(dlin, true) else {
            break;
        };
        let bytes = bytes as usize;
        if OP == MOVS {
            if dst + bytes > ex.ram.len() || src + bytes > ex.ram.len() {
                break;
            }
            // Overlapping forward copies must behave element by element.
            if src < dst && dst < src + bytes {
                break;
            }
            ex.ram.copy_within(src..src + bytes, dst);
            ex.set_reg(6, i.asize, si + bytes as u64);
        } else {
            let Some(d) = ex.ram.get_mut(dst..dst + bytes) else {
                break;
            };
            let v = ex.s.gpr[0].to_le_bytes();
            for chunk in d.chunks_exact_mut(esize as usize) {
                chunk.copy_from_slice(&v[..esize as usize]);
            }
        }
        ex.set_reg(7, i.asize, di + bytes as u64);
        left -= run;
        budget -= run;
        ex.set_reg(1, i.asize, left);
    }
    left
}
