//! PUSH/POP (registers, memory, immediates, segment registers), PUSHA/POPA,
//! PUSHF/POPF, ENTER/LEAVE.

use super::{Exec, Handler, Insn, K_IMM, K_MEM, K_SEG};
use crate::fault::{Fault, XResult};
use crate::flags::{IOPL, RF, VM, size_mask};
use crate::interrupts::write_flags_checked;
use crate::seg::SS;
use iced_x86::{Instruction, Mnemonic};

pub fn lookup(ins: &Instruction, flat_ss: bool) -> Option<Handler> {
    use super::sized;
    use Mnemonic::*;
    let reg = super::is_plain_gpr(ins, 0);
    let size = ins.op0_register().size();
    Some(match ins.mnemonic() {
        Push if reg && flat_ss => sized!(size, push_reg, true),
        Push if reg => sized!(size, push_reg, false),
        Pop if reg && flat_ss => sized!(size, pop_reg, true),
        Pop if reg => sized!(size, pop_reg, false),
        Push => push,
        Pop => pop,
        Pusha | Pushad => pusha,
        Popa | Popad => popa,
        Pushf | Pushfd | Pushfq => pushf,
        Popf | Popfd | Popfq => popf,
        Enter => enter,
        Leave => leave,
        _ => return None,
    })
}

/// PUSH reg with the size fixed at decode time (the stack write inlines); `FLAT`: SS was
/// flat when the block was decoded.
fn push_reg<const FLAT: bool, const N: usize>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let v = ex.reg(i.ops[0].reg, N as u8);
    ex.push_f::<FLAT, N>(v)
}

fn pop_reg<const FLAT: bool, const N: usize>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let v = ex.peek_f::<FLAT, N>(0)?;
    ex.s.gpr[4] = ex.sp_add(N as i64);
    ex.set_reg(i.ops[0].reg, N as u8, v);
    Ok(())
}

fn push(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let o = i.ops[0];
    let (v, size) = match o.kind {
        K_IMM => (i.imm & size_mask(i.osize), i.osize),
        K_SEG => (ex.s.seg[o.reg as usize % 6].selector as u64, i.osize),
        _ => {
            let v = ex.read_op(i, 0)?;
            (v, o.size)
        }
    };
    ex.push(v, size)
}

fn pop(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let o = i.ops[0];
    match o.kind {
        K_SEG => {
            let size = i.osize;
            let v = ex.peek(0, size)? as u16;
            // The increment uses the stack size of the SS the value was popped from:
            // POP SS may load a segment with another B bit (test386 POST 09).
            let nsp = ex.sp_add(size as i64);
            ex.load_seg(o.reg, v)?;
            ex.s.gpr[4] = nsp;
            if o.reg == SS {
                ex.c.events |= crate::core::EV_SHADOW_ARMED;
                ex.c.end_block = true;
            }
            Ok(())
        }
        K_MEM => {
            // The address is computed with RSP already incremented.
            let size = o.size;
            let v = ex.peek(0, size)?;
            let old = ex.s.gpr[4];
            ex.s.gpr[4] = ex.sp_add(size as i64);
            if let Err(e) = ex.write_op(i, 0, v) {
                ex.s.gpr[4] = old;
                return Err(e);
            }
            Ok(())
        }
        _ => {
            let v = ex.peek(0, o.size)?;
            ex.s.gpr[4] = ex.sp_add(o.size as i64);
            ex.write_op(i, 0, v)
        }
    }
}

fn pusha(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.osize;
    let sp = ex.s.gpr[4];
    let regs = ex.s.gpr;
    for (r, &reg) in regs.iter().take(8).enumerate() {
        let v = if r == 4 { sp } else { reg };
        if let Err(e) = ex.push(v & size_mask(size), size) {
            ex.s.gpr[4] = sp;
            return Err(e);
        }
    }
    Ok(())
}

fn popa(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.osize;
    let mut vals = [0u64; 8];
    for (k, v) in vals.iter_mut().enumerate() {
        *v = ex.peek(k as u64 * size as u64, size)?;
    }
    // Slot k holds register 7 - k (EDI first); slot 3 is the skipped ESP image.
    for r in 0..8u8 {
        if r != 3 {
            ex.set_reg(7 - r, size, vals[r as usize]);
        }
    }
    ex.s.gpr[4] = ex.sp_add(8 * size as i64);
    Ok(())
}

fn pushf(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let f = ex.rflags();
    if f & VM != 0 && f & IOPL != IOPL {
        return Err(Fault::gp0());
    }
    ex.push(f & !(VM | RF) & size_mask(i.osize), i.osize)
}

fn popf(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let f = ex.rflags();
    if f & VM != 0 && f & IOPL != IOPL {
        return Err(Fault::gp0());
    }
    let v = ex.peek(0, i.osize)?;
    ex.s.gpr[4] = ex.sp_add(i.osize as i64);
    write_flags_checked(ex, v, i.osize, false);
    Ok(())
}

fn enter(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.osize;
    let alloc = i.imm & 0xFFFF;
    let level = i.imm2() & 31;
    let spm = size_mask(ex.sp_size());
    let saved_sp = ex.s.gpr[4];
    let r = (|| -> XResult {
        let bp = ex.s.gpr[5];
        ex.push(bp, size)?;
        let frame = ex.s.gpr[4];
        if level > 0 {
            let mut bp_walk = bp;
            for _ in 1..level {
                bp_walk = bp_walk.wrapping_sub(size as u64);
                let v = ex.read_mem(SS, bp_walk & spm, size)?;
                ex.push(v, size)?;
            }
            ex.push(frame, size)?;
        }
        let nsp = ex.sp_add(-(alloc as i64));
        // Probe the new stack top as a write so a fault happens here, not later: ENTER
        // faults whenever a write at the final stack pointer would (#PF error code W=1).
        if alloc > 0 {
            let lin = ex.lin(SS, nsp & spm, 1, true)?;
            let user = ex.c.user;
            ex.translate(lin & ex.c.lin_mask, crate::mmu::Access::Write, user)?;
        }
        ex.set_reg(5, size, frame);
        ex.s.gpr[4] = nsp;
        Ok(())
    })();
    if r.is_err() {
        ex.s.gpr[4] = saved_sp;
    }
    r
}

fn leave(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let spm = size_mask(ex.sp_size());
    let bp = ex.s.gpr[5] & spm;
    let v = ex.read_mem(SS, bp, i.osize)?;
    let nsp = bp.wrapping_add(i.osize as u64) & spm;
    ex.s.gpr[4] = (ex.s.gpr[4] & !spm) | nsp;
    ex.set_reg(5, i.osize, v);
    Ok(())
}
