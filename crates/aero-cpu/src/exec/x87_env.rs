//! x87 control and state instructions: FNINIT, FNCLEX, FLDCW/FNSTCW, FNSTSW,
//! FNSTENV/FLDENV, FNSAVE/FRSTOR, FXSAVE/FXRSTOR, FINCSTP/FDECSTP, FFREE(P), FNOP and
//! WAIT. The "FN" forms do not check for pending exceptions; control instructions do
//! not update FIP/FDP/FOP.

use super::x87::{check_nm, check_waiting, record};
use super::{Exec, Handler, Insn, K_MEM};
use crate::fault::{Fault, MF, XResult};
use crate::fpu::{self, EnvLayout, FxLayout, X87State};
use crate::mmu::{CR0_MP, CR0_NE, CR0_TS};
use iced_x86::{Instruction, Mnemonic, Register};

pub fn lookup(ins: &Instruction) -> Option<Handler> {
    use Mnemonic::*;
    Some(match ins.mnemonic() {
        Fninit => fninit,
        Fnclex => fnclex,
        Fldcw => fldcw,
        Fnstcw => fnstcw,
        Fnstsw => fnstsw,
        Fnstenv => fnstenv,
        Fldenv => fldenv,
        Fnsave => fnsave,
        Frstor => frstor,
        Fincstp | Fdecstp => fincdec,
        Ffree | Ffreep => ffree,
        Fnop => fnop,
        // 8087/287 leftovers execute as no-ops on the 387 and later.
        Fneni | Fndisi | Fnsetpm | Frstpm => legacy_nop,
        Wait => wait,
        Fxsave | Fxsave64 => fxsave,
        Fxrstor | Fxrstor64 => fxrstor,
        _ => return None,
    })
}

fn fninit(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    check_nm(ex)?;
    ex.c.fpu.init();
    Ok(())
}

fn fnclex(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    check_nm(ex)?;
    ex.c.fpu.clear_exceptions();
    Ok(())
}

fn fldcw(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let v = ex.read_op(i, 0)?;
    ex.c.fpu.set_control(v as u16);
    Ok(())
}

fn fnstcw(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_nm(ex)?;
    let cw = ex.c.fpu.control;
    ex.write_op(i, 0, cw as u64)
}

fn fnstsw(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_nm(ex)?;
    let sw = ex.c.fpu.status as u64;
    if i.ops[0].kind == K_MEM {
        ex.write_op(i, 0, sw)
    } else {
        ex.set_reg(0, 2, sw);
        Ok(())
    }
}

/// Image layout from the operand size and mode (V86 uses the real-mode format).
fn env_layout(ex: &Exec<'_>, i: &Insn) -> EnvLayout {
    EnvLayout::new(i.osize != 2, ex.protected())
}

/// Real-mode images hold linear instruction/operand pointers (selector * 16 + offset).
fn for_image(fpu: &X87State, layout: EnvLayout) -> X87State {
    let mut s = fpu.clone();
    if matches!(layout, EnvLayout::Real16 | EnvLayout::Real32) {
        s.fip = ((s.fcs as u64) << 4).wrapping_add(s.fip);
        s.fdp = ((s.fds as u64) << 4).wrapping_add(s.fdp);
    }
    s
}

fn fnstenv(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_nm(ex)?;
    let layout = env_layout(ex, i);
    let img = for_image(&ex.c.fpu, layout).env_image(layout);
    let off = ex.ea(i);
    ex.write_bytes(i.mem.seg, off, &img[..layout.env_size()])?;
    ex.c.fpu.fnstenv(layout);
    Ok(())
}

fn fldenv(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let layout = env_layout(ex, i);
    let mut buf = [0u8; 28];
    let off = ex.ea(i);
    ex.read_bytes(i.mem.seg, off, &mut buf[..layout.env_size()])?;
    ex.c.fpu.load_env(layout, &buf);
    Ok(())
}

fn fnsave(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_nm(ex)?;
    let layout = env_layout(ex, i);
    let img = for_image(&ex.c.fpu, layout).fnsave(layout);
    let off = ex.ea(i);
    ex.write_bytes(i.mem.seg, off, &img[..layout.save_size()])?;
    ex.c.fpu.init();
    Ok(())
}

fn frstor(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let layout = env_layout(ex, i);
    let mut buf = [0u8; 108];
    let off = ex.ea(i);
    ex.read_bytes(i.mem.seg, off, &mut buf[..layout.save_size()])?;
    ex.c.fpu.frstor(layout, &buf);
    Ok(())
}

fn fincdec(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    if i.raw.mnemonic() == Mnemonic::Fincstp {
        ex.c.fpu.increment_top();
    } else {
        ex.c.fpu.decrement_top();
    }
    ex.c.fpu.set_c1(false);
    record(ex, i);
    Ok(())
}

fn ffree(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    let r = i.raw.op_register(0);
    let k = if (Register::ST0..=Register::ST7).contains(&r) {
        r as usize - Register::ST0 as usize
    } else {
        0
    };
    ex.c.fpu.set_empty(k);
    if i.raw.mnemonic() == Mnemonic::Ffreep {
        ex.c.fpu.increment_top();
    }
    record(ex, i);
    Ok(())
}

fn fnop(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    check_waiting(ex)?;
    record(ex, i);
    Ok(())
}

fn legacy_nop(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    check_nm(ex)
}

/// WAIT/FWAIT: #NM only when both MP and TS are set; then the pending-exception check.
fn wait(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    if ex.s.cr0 & (CR0_MP | CR0_TS) == (CR0_MP | CR0_TS) {
        return Err(Fault::nm());
    }
    if ex.c.fpu.exception_pending() && ex.s.cr0 & CR0_NE != 0 {
        return Err(Fault::new(MF));
    }
    Ok(())
}

fn fx_layout(ex: &Exec<'_>, i: &Insn) -> FxLayout {
    if !ex.c.long64 {
        FxLayout::Legacy32
    } else if matches!(i.raw.mnemonic(), Mnemonic::Fxsave64 | Mnemonic::Fxrstor64) {
        FxLayout::Long64
    } else {
        FxLayout::Long32
    }
}

/// FXSAVE/FXRSTOR need a 16-byte aligned operand (#GP otherwise).
fn fx_operand(ex: &Exec<'_>, i: &Insn) -> XResult<u64> {
    check_nm(ex)?;
    let off = ex.ea(i);
    let lin = ex.c.segc[i.mem.seg as usize % 6].base.wrapping_add(off);
    if lin & 15 != 0 {
        return Err(Fault::gp0());
    }
    Ok(off)
}

fn fxsave(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let off = fx_operand(ex, i)?;
    let layout = fx_layout(ex, i);
    let img = fpu::fxsave(&ex.c.fpu, &ex.c.sse, layout);
    ex.write_bytes(i.mem.seg, off, &img[..layout.written_len()])
}

fn fxrstor(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let off = fx_operand(ex, i)?;
    let layout = fx_layout(ex, i);
    let mut buf = [0u8; 512];
    ex.read_bytes(i.mem.seg, off, &mut buf)?;
    let (mut x87, mut sse) = (ex.c.fpu.clone(), ex.c.sse.clone());
    fpu::fxrstor(&mut x87, &mut sse, layout, &buf).map_err(|_| Fault::gp0())?;
    ex.c.fpu = x87;
    ex.c.sse = sse;
    Ok(())
}
