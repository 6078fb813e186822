//! Decimal adjust: DAA/DAS/AAA/AAS/AAM/AAD.

use super::{Exec, Handler, Insn};
use crate::fault::{Fault, XResult};
use crate::flags::{AF, CF, OF};
use iced_x86::{Instruction, Mnemonic};

pub fn lookup(ins: &Instruction) -> Option<Handler> {
    use Mnemonic::*;
    Some(match ins.mnemonic() {
        Daa => daa,
        Das => das,
        Aaa => aaa,
        Aas => aas,
        Aam => aam,
        Aad => aad,
        _ => return None,
    })
}

/// Set SF/ZF/PF from `al` with explicit CF/AF (OF cleared).
fn set(ex: &mut Exec<'_>, al: u64, cf: bool, af: bool) {
    let aux = if cf { CF } else { 0 } | if af { AF } else { 0 };
    ex.c.flags.set_explicit(1, al & 0xFF, aux & !OF);
}

fn daa(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    let f = ex.rflags();
    let old_al = ex.s.gpr[0] & 0xFF;
    let old_cf = f & CF != 0;
    let mut al = old_al;
    let mut cf = false;
    let mut af = false;
    if al & 0xF > 9 || f & AF != 0 {
        al = (al + 6) & 0xFF;
        cf = old_cf || old_al + 6 > 0xFF;
        af = true;
    }
    if old_al > 0x99 || old_cf {
        al = (al + 0x60) & 0xFF;
        cf = true;
    }
    ex.set_reg(0, 1, al);
    set(ex, al, cf, af);
    Ok(())
}

fn das(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    let f = ex.rflags();
    let old_al = ex.s.gpr[0] & 0xFF;
    let old_cf = f & CF != 0;
    let mut al = old_al;
    let mut cf = false;
    let mut af = false;
    if al & 0xF > 9 || f & AF != 0 {
        cf = old_cf || al < 6;
        al = al.wrapping_sub(6) & 0xFF;
        af = true;
    }
    if old_al > 0x99 || old_cf {
        al = al.wrapping_sub(0x60) & 0xFF;
        cf = true;
    }
    ex.set_reg(0, 1, al);
    set(ex, al, cf, af);
    Ok(())
}

fn aaa(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    let f = ex.rflags();
    let mut ax = ex.s.gpr[0] & 0xFFFF;
    let adjust = ax & 0xF > 9 || f & AF != 0;
    if adjust {
        // AX += 0x106: the carry out of AL propagates into AH (as on current CPUs).
        ax = (ax + 0x106) & 0xFFFF;
    }
    ax = (ax & 0xFF00) | (ax & 0x0F);
    ex.set_reg(0, 2, ax);
    set(ex, ax & 0xFF, adjust, adjust);
    Ok(())
}

fn aas(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    let f = ex.rflags();
    let mut ax = ex.s.gpr[0] & 0xFFFF;
    let adjust = ax & 0xF > 9 || f & AF != 0;
    if adjust {
        // AX -= 6 (borrow propagates into AH), then AH -= 1.
        ax = ax.wrapping_sub(6) & 0xFFFF;
        ax = ax.wrapping_sub(0x100) & 0xFFFF;
    }
    ax = (ax & 0xFF00) | (ax & 0x0F);
    ex.set_reg(0, 2, ax);
    set(ex, ax & 0xFF, adjust, adjust);
    Ok(())
}

fn aam(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let base = i.imm & 0xFF;
    if base == 0 {
        return Err(Fault::de());
    }
    let al = ex.s.gpr[0] & 0xFF;
    let ax = ((al / base) << 8) | (al % base);
    ex.set_reg(0, 2, ax);
    set(ex, ax & 0xFF, false, false);
    Ok(())
}

fn aad(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let base = i.imm & 0xFF;
    let ax = ex.s.gpr[0];
    let al = ((ax & 0xFF) + ((ax >> 8) & 0xFF) * base) & 0xFF;
    ex.set_reg(0, 2, al);
    set(ex, al, false, false);
    Ok(())
}
