//! CMP/TEST reg, reg|imm|mem followed by Jcc, run by one handler.
//!
//! Compiled loops end almost every block with such a pair; one dispatch instead of two,
//! and the condition folds to a direct compare of the operands (the lazy flags are still
//! recorded: code after the branch may read them).
//!
//! The decoder fuses only the last two instructions of a block (a Jcc always ends one)
//! and marks the CMP/TEST with [`Insn::fuse`] (the Jcc's operand size); the CMP/TEST's
//! `rel` and `cc` then hold the Jcc's displacement and length. The Jcc stays in the
//! block: when the run loop must stop between the two (single-step, budget), the CMP/TEST
//! runs alone through its ordinary handler, and when the branch itself would fault or
//! the compare asked to end the block (data breakpoint, device stop), the fused handler
//! stops after the compare so the Jcc runs on its own.

use super::{Exec, Handler, Insn, K_IMM, K_REG};
use crate::fault::XResult;
use crate::flags::{FlagOp, LazyFlags, size_mask};
use iced_x86::{Instruction, Mnemonic};

const CMP: u8 = 0;
const TEST: u8 = 1;
/// INC/DEC reg + Jcc (`dec ecx; jnz` closes most counted loops): the register is written,
/// CF kept.
const INC: u8 = 2;
const DEC: u8 = 3;

/// The fused handler for `first` (CMP/TEST) followed by the Jcc `jcc`, if the pair has one.
pub fn lookup(first: &Instruction, jcc: &Instruction) -> Option<Handler> {
    use iced_x86::OpKind::{NearBranch16, NearBranch32, NearBranch64};
    if !matches!(jcc.op0_kind(), NearBranch16 | NearBranch32 | NearBranch64)
        || !super::control::is_jcc(jcc.mnemonic())
        || !super::is_plain_gpr(first, 0)
    {
        return None;
    }
    let unary = first.op_count() == 1;
    if !unary && super::src_kind(first, 1).is_none() {
        return None;
    }
    let cc = (jcc.condition_code() as usize).checked_sub(1)?;
    let size = first.op0_register().size();
    let row = match first.mnemonic() {
        Mnemonic::Cmp if !unary => by_size::<CMP>(size),
        Mnemonic::Test if !unary => by_size::<TEST>(size),
        Mnemonic::Inc if unary => by_size::<INC>(size),
        Mnemonic::Dec if unary => by_size::<DEC>(size),
        _ => return None,
    };
    row.get(cc).copied()
}

/// `cmp_jcc::<OP, 0..15, N>`.
macro_rules! every_cc {
    ($op:expr, $n:expr) => {
        [
            cmp_jcc::<$op, 0, $n> as Handler,
            cmp_jcc::<$op, 1, $n>,
            cmp_jcc::<$op, 2, $n>,
            cmp_jcc::<$op, 3, $n>,
            cmp_jcc::<$op, 4, $n>,
            cmp_jcc::<$op, 5, $n>,
            cmp_jcc::<$op, 6, $n>,
            cmp_jcc::<$op, 7, $n>,
            cmp_jcc::<$op, 8, $n>,
            cmp_jcc::<$op, 9, $n>,
            cmp_jcc::<$op, 10, $n>,
            cmp_jcc::<$op, 11, $n>,
            cmp_jcc::<$op, 12, $n>,
            cmp_jcc::<$op, 13, $n>,
            cmp_jcc::<$op, 14, $n>,
            cmp_jcc::<$op, 15, $n>,
        ]
    };
}

fn by_size<const OP: u8>(size: usize) -> [Handler; 16] {
    match size {
        1 => every_cc!(OP, 1),
        2 => every_cc!(OP, 2),
        4 => every_cc!(OP, 4),
        _ => every_cc!(OP, 8),
    }
}

fn cmp_jcc<const OP: u8, const CC: u8, const N: usize>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = N as u8;
    let m = size_mask(size);
    let src = if OP >= INC {
        1
    } else {
        match i.ops[1].kind {
            K_REG => ex.reg(i.ops[1].reg, size),
            K_IMM => i.imm & m,
            _ => ex.load::<N>(i)?,
        }
    };
    let dst = ex.reg(i.ops[0].reg, size);
    // Built locally so the operation and size are constants and `cond` folds.
    let flags = if OP == CMP {
        LazyFlags {
            op: FlagOp::Sub,
            size,
            dst,
            src,
            res: dst.wrapping_sub(src) & m,
            aux: 0,
        }
    } else if OP == TEST {
        LazyFlags {
            op: FlagOp::Logic,
            size,
            dst,
            src,
            res: dst & src,
            aux: 0,
        }
    } else {
        let res = if OP == INC {
            dst.wrapping_add(1)
        } else {
            dst.wrapping_sub(1)
        } & m;
        ex.set_reg(i.ops[0].reg, size, res);
        LazyFlags {
            op: if OP == INC { FlagOp::Inc } else { FlagOp::Dec },
            size,
            dst,
            src,
            res,
            // INC/DEC keep CF: read before the flags change.
            aux: ex.cf() as u64,
        }
    };
    ex.c.flags = flags;
    if ex.c.end_block {
        // The compare hit a data breakpoint or a device asked to stop.
        return Ok(());
    }
    // 0xFFFF, 0xFFFF_FFFF or all ones for 16-, 32- and 64-bit code (as the run loop).
    let bits = u64::MAX >> (64u32.wrapping_sub(ex.c.bitness) & 63);
    let fall = ex.c.next_rip.wrapping_add(i.cc as u64) & bits;
    if flags.cond(0, CC) {
        let target = fall.wrapping_add(i.rel as u64);
        let target = if ex.c.long64 {
            if ((target as i64) << 16 >> 16) as u64 != target {
                return Ok(()); // the Jcc raises #GP on its own
            }
            target
        } else {
            let t = target & size_mask(i.fuse);
            if t > ex.s.seg[1].limit as u64 {
                return Ok(());
            }
            t
        };
        ex.c.next_rip = target;
    } else {
        ex.c.next_rip = fall;
    }
    ex.c.end_block = true;
    ex.c.fused_jcc = true;
    Ok(())
}
