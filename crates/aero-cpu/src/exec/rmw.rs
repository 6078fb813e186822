//! Read-modify-write ALU instructions with a memory destination and a register or
//! immediate source (ADD/ADC/SUB/SBB/AND/OR/XOR [mem], reg|imm) and the unary ones
//! (INC/DEC/NOT/NEG [mem]), specialised per operation, source kind and size at decode
//! time. The segment check and the TLB lookup happen once; when the TLB entry allows a
//! fast write (the condition of `write_lin`: RAM, writable, dirty, no translated code,
//! no data breakpoints) the operand is read and written in place. Everything else
//! (TLB miss, MMIO, code pages, page-crossing operands) goes through `read_lin` /
//! `write_lin`, in the same order as the generic handlers: read, then write, flags last.

use super::{Exec, Handler, Insn, SRC_IMM, SRC_REG};
use crate::fault::XResult;
use crate::flags::{FlagOp, size_mask};
use iced_x86::{Instruction, Mnemonic};

const ADD: u8 = 0;
const ADC: u8 = 1;
const SUB: u8 = 2;
const SBB: u8 = 3;
const AND: u8 = 4;
const OR: u8 = 5;
const XOR: u8 = 6;
const INC: u8 = 7;
const DEC: u8 = 8;
const NOT: u8 = 9;
const NEG: u8 = 10;
/// Source kind of the unary operations (no source operand).
const SRC_NONE: u8 = 3;

pub fn lookup(ins: &Instruction, form: u8) -> Option<Handler> {
    use super::{formed, is_imm, is_mem, is_plain_gpr};
    if !is_mem(ins, 0) {
        return None;
    }
    let op = match ins.mnemonic() {
        Mnemonic::Add => ADD,
        Mnemonic::Adc => ADC,
        Mnemonic::Sub => SUB,
        Mnemonic::Sbb => SBB,
        Mnemonic::And => AND,
        Mnemonic::Or => OR,
        Mnemonic::Xor => XOR,
        Mnemonic::Inc => INC,
        Mnemonic::Dec => DEC,
        Mnemonic::Not => NOT,
        Mnemonic::Neg => NEG,
        _ => return None,
    };
    let src = if op >= INC {
        if ins.op_count() != 1 {
            return None;
        }
        SRC_NONE
    } else if is_plain_gpr(ins, 1) {
        SRC_REG
    } else if is_imm(ins, 1) {
        SRC_IMM
    } else {
        return None;
    };
    let n = ins.memory_size().size();
    if !matches!(n, 1 | 2 | 4 | 8) {
        return None;
    }
    macro_rules! by_src {
        ($op:expr) => {
            match src {
                SRC_REG => formed!(form, n, rmw, $op, SRC_REG),
                SRC_IMM => formed!(form, n, rmw, $op, SRC_IMM),
                _ => formed!(form, n, rmw, $op, SRC_NONE),
            }
        };
    }
    Some(match op {
        ADD => by_src!(ADD),
        ADC => by_src!(ADC),
        SUB => by_src!(SUB),
        SBB => by_src!(SBB),
        AND => by_src!(AND),
        OR => by_src!(OR),
        XOR => by_src!(XOR),
        INC => formed!(form, n, rmw, INC, SRC_NONE),
        DEC => formed!(form, n, rmw, DEC, SRC_NONE),
        NOT => formed!(form, n, rmw, NOT, SRC_NONE),
        _ => formed!(form, n, rmw, NEG, SRC_NONE),
    })
}

/// RAM offset of the `N`-byte operand at `lin` if it can be read and written in place.
#[inline(always)]
fn in_place<const N: usize>(ex: &Exec<'_>, lin: u64) -> Option<usize> {
    if (lin & 0xFFF) as usize + N > 4096 {
        return None;
    }
    let h = ex.fast_host(lin, true)?;
    (h.checked_add(N)? <= ex.ram.len()).then_some(h)
}

fn rmw<const OP: u8, const S: u8, const F: u8, const N: usize>(
    ex: &mut Exec<'_>,
    i: &Insn,
) -> XResult {
    let size = N as u8;
    let m = size_mask(size);
    let src = match S {
        SRC_REG => ex.reg(i.ops[1].reg, size),
        SRC_IMM => i.imm & m,
        _ => 0,
    };
    let off = ex.ea_f::<F>(i);
    // A flat segment: the offset is the linear address, and an in-place hit proves the
    // access legal (see `F_FLAT`); otherwise the segment checks first.
    let flat_hit = if F != super::F_ANY {
        in_place::<N>(ex, off)
    } else {
        None
    };
    let (lin, host) = match flat_hit {
        Some(h) => (off, Some(h)),
        None => {
            let lin = ex.lin(i.mem.seg, off, size, true)?;
            (lin, in_place::<N>(ex, lin))
        }
    };
    let dst = match host {
        Some(h) => {
            let mut b = [0u8; 8];
            b[..N].copy_from_slice(&ex.ram[h..h + N]);
            u64::from_le_bytes(b)
        }
        None => ex.read_lin::<N>(lin)?,
    };
    // Carry in (ADC/SBB) or the CF that INC/DEC keep, read before the flags change.
    let cf = if matches!(OP, ADC | SBB | INC | DEC) {
        ex.cf() as u64
    } else {
        0
    };
    let res = match OP {
        ADD => dst.wrapping_add(src),
        ADC => dst.wrapping_add(src).wrapping_add(cf),
        SUB => dst.wrapping_sub(src),
        SBB => dst.wrapping_sub(src).wrapping_sub(cf),
        AND => dst & src,
        OR => dst | src,
        XOR => dst ^ src,
        INC => dst.wrapping_add(1),
        DEC => dst.wrapping_sub(1),
        NOT => !dst,
        _ => 0u64.wrapping_sub(dst),
    } & m;
    match host {
        Some(h) => ex.ram[h..h + N].copy_from_slice(&res.to_le_bytes()[..N]),
        None => ex.write_lin::<N>(lin, res)?,
    }
    let f = &mut ex.c.flags;
    match OP {
        ADD => f.set(FlagOp::Add, size, dst, src, res),
        SUB => f.set(FlagOp::Sub, size, dst, src, res),
        ADC | SBB => {
            let op = if OP == ADC { FlagOp::Adc } else { FlagOp::Sbb };
            f.set(op, size, dst, src, res);
            f.aux = cf;
        }
        AND | OR | XOR => f.set(FlagOp::Logic, size, dst, src, res),
        INC | DEC => {
            let op = if OP == INC { FlagOp::Inc } else { FlagOp::Dec };
            f.set(op, size, dst, 1, res);
            f.aux = cf;
        }
        // NOT changes no flags.
        NOT => {}
        _ => f.set(FlagOp::Sub, size, 0, dst, res),
    }
    Ok(())
}
