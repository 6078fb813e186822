//! AND/OR/XOR/TEST/NOT.

use super::{Exec, Handler, Insn};
use crate::fault::XResult;
use crate::flags::{FlagOp, size_mask};
use iced_x86::{Instruction, Mnemonic};

const AND: u8 = 0;
const OR: u8 = 1;
const XOR: u8 = 2;

pub fn lookup(ins: &Instruction) -> Option<Handler> {
    use super::{is_imm, is_plain_gpr};
    let reg_form = is_plain_gpr(ins, 0) && (is_plain_gpr(ins, 1) || is_imm(ins, 1));
    Some(match ins.mnemonic() {
        Mnemonic::And if reg_form => logic_reg::<AND>,
        Mnemonic::Or if reg_form => logic_reg::<OR>,
        Mnemonic::Xor if reg_form => logic_reg::<XOR>,
        Mnemonic::Test if reg_form => test_reg,
        Mnemonic::And => logic::<AND>,
        Mnemonic::Or => logic::<OR>,
        Mnemonic::Xor => logic::<XOR>,
        Mnemonic::Test => test,
        Mnemonic::Not => not,
        _ => return None,
    })
}

fn logic<const OP: u8>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let src = ex.read_op(i, 1)? & size_mask(size);
    let loc = ex.rmw_loc(i, 0)?;
    let dst = ex.loc_read(loc)?;
    let res = match OP {
        AND => dst & src,
        OR => dst | src,
        _ => dst ^ src,
    };
    ex.loc_write(loc, res)?;
    ex.c.flags.set(FlagOp::Logic, size, dst, src, res);
    Ok(())
}

#[inline(always)]
fn reg_or_imm(ex: &Exec<'_>, i: &Insn) -> u64 {
    let o = i.ops[1];
    if o.kind == super::K_IMM {
        i.imm
    } else {
        ex.reg(o.reg, o.size)
    }
}

fn logic_reg<const OP: u8>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let d = i.ops[0];
    let src = reg_or_imm(ex, i) & size_mask(d.size);
    let dst = ex.reg(d.reg, d.size);
    let res = match OP {
        AND => dst & src,
        OR => dst | src,
        _ => dst ^ src,
    };
    ex.set_reg(d.reg, d.size, res);
    ex.c.flags.set(FlagOp::Logic, d.size, dst, src, res);
    Ok(())
}

fn test_reg(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let d = i.ops[0];
    let a = ex.reg(d.reg, d.size);
    let b = reg_or_imm(ex, i) & size_mask(d.size);
    ex.c.flags.set(FlagOp::Logic, d.size, a, b, a & b);
    Ok(())
}

fn test(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let a = ex.read_op(i, 0)?;
    let b = ex.read_op(i, 1)? & size_mask(size);
    ex.c.flags.set(FlagOp::Logic, size, a, b, a & b);
    Ok(())
}

fn not(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let loc = ex.rmw_loc(i, 0)?;
    let v = ex.loc_read(loc)?;
    ex.loc_write(loc, !v & size_mask(size))
}
