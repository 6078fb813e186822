//! AND/OR/XOR/TEST/NOT.

use super::{Exec, Handler, Insn};
use crate::fault::XResult;
use crate::flags::{size_mask, FlagOp};
use iced_x86::{Instruction, Mnemonic};

const AND: u8 = 0;
const OR: u8 = 1;
const XOR: u8 = 2;

pub fn lookup(ins: &Instruction) -> Option<Handler> {
    Some(match ins.mnemonic() {
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
