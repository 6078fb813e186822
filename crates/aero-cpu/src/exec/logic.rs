//! AND/OR/XOR/TEST/NOT.

use super::{Exec, Handler, Insn};
use crate::fault::XResult;
use crate::flags::{FlagOp, size_mask};
use iced_x86::{Instruction, Mnemonic};

const AND: u8 = 0;
const OR: u8 = 1;
const XOR: u8 = 2;
const TEST: u8 = 3;

pub fn lookup(ins: &Instruction, form: u8) -> Option<Handler> {
    use super::{F_ANY, SRC_IMM, SRC_MEM, SRC_REG, formed, is_mem, is_plain_gpr, sized, src_kind};
    let dst_reg = is_plain_gpr(ins, 0);
    let size = ins.op0_register().size();
    let src = src_kind(ins, 1);
    // Register destinations get size-specialised handlers without operand-kind dispatch.
    let fast = |op: u8, s: u8| -> Handler {
        match (op, s) {
            (AND, SRC_REG) => sized!(size, logic_reg, AND, SRC_REG, F_ANY),
            (AND, SRC_IMM) => sized!(size, logic_reg, AND, SRC_IMM, F_ANY),
            (AND, _) => formed!(form, size, logic_reg, AND, SRC_MEM),
            (OR, SRC_REG) => sized!(size, logic_reg, OR, SRC_REG, F_ANY),
            (OR, SRC_IMM) => sized!(size, logic_reg, OR, SRC_IMM, F_ANY),
            (OR, _) => formed!(form, size, logic_reg, OR, SRC_MEM),
            (XOR, SRC_REG) => sized!(size, logic_reg, XOR, SRC_REG, F_ANY),
            (XOR, SRC_IMM) => sized!(size, logic_reg, XOR, SRC_IMM, F_ANY),
            (XOR, _) => formed!(form, size, logic_reg, XOR, SRC_MEM),
            (_, SRC_REG) => sized!(size, logic_reg, TEST, SRC_REG, F_ANY),
            (_, SRC_IMM) => sized!(size, logic_reg, TEST, SRC_IMM, F_ANY),
            _ => formed!(form, size, logic_reg, TEST, SRC_MEM),
        }
    };
    Some(match (ins.mnemonic(), src) {
        (Mnemonic::And, Some(s)) if dst_reg => fast(AND, s),
        (Mnemonic::Or, Some(s)) if dst_reg => fast(OR, s),
        (Mnemonic::Xor, Some(s)) if dst_reg => fast(XOR, s),
        (Mnemonic::Test, Some(s)) if dst_reg => fast(TEST, s),
        // TEST [mem], imm.
        (Mnemonic::Test, Some(SRC_IMM)) if is_mem(ins, 0) => {
            formed!(form, ins.memory_size().size(), test_mem_imm)
        }
        (Mnemonic::And, _) => logic::<AND>,
        (Mnemonic::Or, _) => logic::<OR>,
        (Mnemonic::Xor, _) => logic::<XOR>,
        (Mnemonic::Test, _) => test,
        (Mnemonic::Not, _) => not,
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

/// AND/OR/XOR/TEST with a register destination; source kind `S` and size `N` fixed at
/// decode time.
fn logic_reg<const OP: u8, const S: u8, const F: u8, const N: usize>(
    ex: &mut Exec<'_>,
    i: &Insn,
) -> XResult {
    let size = N as u8;
    let src = ex.src_f::<S, F, N>(i)?;
    let r = i.ops[0].reg;
    let dst = ex.reg(r, size);
    let res = match OP {
        AND | TEST => dst & src,
        OR => dst | src,
        _ => dst ^ src,
    };
    if OP != TEST {
        ex.set_reg(r, size, res);
    }
    ex.c.flags.set(FlagOp::Logic, size, dst, src, res);
    Ok(())
}

/// TEST [mem], imm.
fn test_mem_imm<const F: u8, const N: usize>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let a = ex.load_f::<F, N>(i)?;
    let b = i.imm & size_mask(N as u8);
    ex.c.flags.set(FlagOp::Logic, N as u8, a, b, a & b);
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
