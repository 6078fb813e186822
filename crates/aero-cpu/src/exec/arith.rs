//! ADD/ADC/SUB/SBB/CMP, INC/DEC/NEG, MUL/IMUL/DIV/IDIV.

use super::{Exec, Handler, Insn};
use crate::fault::{Fault, XResult};
use crate::flags::{AF, CF, FlagOp, OF, sign_bit, size_mask};
use iced_x86::{Instruction, Mnemonic};

const ADD: u8 = 0;
const ADC: u8 = 1;
const SUB: u8 = 2;
const SBB: u8 = 3;
const CMP: u8 = 4;

pub fn lookup(ins: &Instruction, form: u8) -> Option<Handler> {
    use super::{SRC_MEM, SRC_REG, formed, is_mem, is_plain_gpr, sized, src_kind};
    // Register destinations get size-specialised handlers without operand-kind dispatch.
    let dst_reg = is_plain_gpr(ins, 0);
    let size = ins.op0_register().size();
    let src = src_kind(ins, 1);
    Some(match (ins.mnemonic(), src) {
        (Mnemonic::Add, Some(s)) if dst_reg => alu_fast(ADD, s, size, form),
        (Mnemonic::Sub, Some(s)) if dst_reg => alu_fast(SUB, s, size, form),
        (Mnemonic::Cmp, Some(s)) if dst_reg => alu_fast(CMP, s, size, form),
        // CMP [mem], reg/imm.
        (Mnemonic::Cmp, Some(s)) if is_mem(ins, 0) && s != SRC_MEM => {
            let n = ins.memory_size().size();
            if s == SRC_REG {
                formed!(form, n, cmp_mem, SRC_REG)
            } else {
                formed!(form, n, cmp_mem, super::SRC_IMM)
            }
        }
        (Mnemonic::Inc, _) if dst_reg => sized!(size, inc_dec_reg, true),
        (Mnemonic::Dec, _) if dst_reg => sized!(size, inc_dec_reg, false),
        (Mnemonic::Imul, Some(s)) if dst_reg && s != super::SRC_IMM => {
            let three = ins.op_count() == 3;
            match (s == SRC_MEM, three) {
                (false, false) => sized!(size, imul_fast, SRC_REG, false),
                (false, true) => sized!(size, imul_fast, SRC_REG, true),
                (true, false) => sized!(size, imul_fast, SRC_MEM, false),
                (true, true) => sized!(size, imul_fast, SRC_MEM, true),
            }
        }
        (Mnemonic::Add, _) => alu::<ADD>,
        (Mnemonic::Adc, _) => alu::<ADC>,
        (Mnemonic::Sub, _) => alu::<SUB>,
        (Mnemonic::Sbb, _) => alu::<SBB>,
        (Mnemonic::Cmp, _) => cmp,
        (Mnemonic::Inc, _) => inc,
        (Mnemonic::Dec, _) => dec,
        (Mnemonic::Neg, _) => neg,
        (Mnemonic::Mul, _) => mul,
        (Mnemonic::Imul, _) => match ins.op_count() {
            1 => imul1,
            _ => imul_n,
        },
        (Mnemonic::Div, _) => div,
        (Mnemonic::Idiv, _) => idiv,
        _ => return None,
    })
}

/// ADD/SUB/CMP reg, reg|imm|mem for operand size `size` (memory form `form`).
fn alu_fast(op: u8, src: u8, size: usize, form: u8) -> Handler {
    use super::{F_ANY, SRC_IMM, SRC_MEM, SRC_REG, formed, sized};
    match (op, src) {
        (ADD, SRC_REG) => sized!(size, alu_reg, ADD, SRC_REG, F_ANY),
        (ADD, SRC_IMM) => sized!(size, alu_reg, ADD, SRC_IMM, F_ANY),
        (ADD, _) => formed!(form, size, alu_reg, ADD, SRC_MEM),
        (SUB, SRC_REG) => sized!(size, alu_reg, SUB, SRC_REG, F_ANY),
        (SUB, SRC_IMM) => sized!(size, alu_reg, SUB, SRC_IMM, F_ANY),
        (SUB, _) => formed!(form, size, alu_reg, SUB, SRC_MEM),
        (_, SRC_REG) => sized!(size, alu_reg, CMP, SRC_REG, F_ANY),
        (_, SRC_IMM) => sized!(size, alu_reg, CMP, SRC_IMM, F_ANY),
        _ => formed!(form, size, alu_reg, CMP, SRC_MEM),
    }
}

fn alu<const OP: u8>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let m = size_mask(size);
    let src = ex.read_op(i, 1)? & m;
    let loc = ex.rmw_loc(i, 0)?;
    let dst = ex.loc_read(loc)?;
    let (res, op, cin) = match OP {
        ADD => (dst.wrapping_add(src), FlagOp::Add, 0),
        ADC => {
            let c = ex.cf() as u64;
            (dst.wrapping_add(src).wrapping_add(c), FlagOp::Adc, c)
        }
        SUB => (dst.wrapping_sub(src), FlagOp::Sub, 0),
        _ => {
            let c = ex.cf() as u64;
            (dst.wrapping_sub(src).wrapping_sub(c), FlagOp::Sbb, c)
        }
    };
    let res = res & m;
    ex.loc_write(loc, res)?;
    ex.c.flags.set(op, size, dst, src, res);
    ex.c.flags.aux = cin;
    Ok(())
}

/// ADD/SUB/CMP with a register destination; source kind `S` and size `N` fixed at
/// decode time.
fn alu_reg<const OP: u8, const S: u8, const F: u8, const N: usize>(
    ex: &mut Exec<'_>,
    i: &Insn,
) -> XResult {
    let size = N as u8;
    let m = size_mask(size);
    let src = ex.src_f::<S, F, N>(i)?;
    let r = i.ops[0].reg;
    let dst = ex.reg(r, size);
    let (res, op) = if OP == ADD {
        (dst.wrapping_add(src) & m, FlagOp::Add)
    } else {
        (dst.wrapping_sub(src) & m, FlagOp::Sub)
    };
    if OP != CMP {
        ex.set_reg(r, size, res);
    }
    ex.c.flags.set(op, size, dst, src, res);
    Ok(())
}

/// CMP [mem], reg|imm.
fn cmp_mem<const S: u8, const F: u8, const N: usize>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = N as u8;
    let dst = ex.load_f::<F, N>(i)?;
    let src = ex.src::<S, N>(i)?;
    ex.c.flags.set(
        FlagOp::Sub,
        size,
        dst,
        src,
        dst.wrapping_sub(src) & size_mask(size),
    );
    Ok(())
}

/// INC/DEC reg: CF is kept from before.
fn inc_dec_reg<const INC: bool, const N: usize>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = N as u8;
    let r = i.ops[0].reg;
    let dst = ex.reg(r, size);
    let (res, op) = if INC {
        (dst.wrapping_add(1) & size_mask(size), FlagOp::Inc)
    } else {
        (dst.wrapping_sub(1) & size_mask(size), FlagOp::Dec)
    };
    ex.set_reg(r, size, res);
    let cf = ex.cf() as u64;
    ex.c.flags.set(op, size, dst, 1, res);
    ex.c.flags.aux = cf;
    Ok(())
}

fn cmp(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let m = size_mask(size);
    let dst = ex.read_op(i, 0)?;
    let src = ex.read_op(i, 1)? & m;
    ex.c.flags
        .set(FlagOp::Sub, size, dst, src, dst.wrapping_sub(src) & m);
    Ok(())
}

fn inc(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let loc = ex.rmw_loc(i, 0)?;
    let dst = ex.loc_read(loc)?;
    let res = dst.wrapping_add(1) & size_mask(size);
    ex.loc_write(loc, res)?;
    let cf = ex.cf() as u64;
    ex.c.flags.set(FlagOp::Inc, size, dst, 1, res);
    ex.c.flags.aux = cf;
    Ok(())
}

fn dec(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let loc = ex.rmw_loc(i, 0)?;
    let dst = ex.loc_read(loc)?;
    let res = dst.wrapping_sub(1) & size_mask(size);
    ex.loc_write(loc, res)?;
    let cf = ex.cf() as u64;
    ex.c.flags.set(FlagOp::Dec, size, dst, 1, res);
    ex.c.flags.aux = cf;
    Ok(())
}

fn neg(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let loc = ex.rmw_loc(i, 0)?;
    let src = ex.loc_read(loc)?;
    let res = 0u64.wrapping_sub(src) & size_mask(size);
    ex.loc_write(loc, res)?;
    ex.c.flags.set(FlagOp::Sub, size, 0, src, res);
    Ok(())
}

/// Flags after MUL/IMUL: CF=OF=overflow; SF/ZF/PF follow the low half like QEMU.
fn mul_flags(ex: &mut Exec<'_>, size: u8, low: u64, overflow: bool) {
    let aux = if overflow { CF | OF } else { 0 };
    ex.c.flags
        .set_explicit(size, low & size_mask(size), aux & !AF);
}

fn mul(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let src = ex.read_op(i, 0)?;
    match size {
        1 => {
            let r = (ex.s.gpr[0] & 0xFF) * src;
            ex.set_reg(0, 2, r);
            mul_flags(ex, 1, r, r >> 8 != 0);
        }
        2 => {
            let r = (ex.s.gpr[0] & 0xFFFF) * src;
            ex.set_reg(0, 2, r);
            ex.set_reg(2, 2, r >> 16);
            mul_flags(ex, 2, r, r >> 16 != 0);
        }
        4 => {
            let r = (ex.s.gpr[0] & 0xFFFF_FFFF) * src;
            ex.set_reg(0, 4, r);
            ex.set_reg(2, 4, r >> 32);
            mul_flags(ex, 4, r, r >> 32 != 0);
        }
        _ => {
            let r = (ex.s.gpr[0] as u128) * (src as u128);
            ex.s.gpr[0] = r as u64;
            ex.s.gpr[2] = (r >> 64) as u64;
            mul_flags(ex, 8, r as u64, (r >> 64) != 0);
        }
    }
    Ok(())
}

fn sext(v: u64, size: u8) -> i64 {
    let sh = 64 - size as u32 * 8;
    ((v << sh) as i64) >> sh
}

fn imul1(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let src = sext(ex.read_op(i, 0)?, size) as i128;
    let a = sext(ex.s.gpr[0], size) as i128;
    let r = a * src;
    let bits = size as u32 * 8;
    let fits = r == sext(r as u64, size) as i128;
    match size {
        1 => ex.set_reg(0, 2, r as u64),
        2 | 4 => {
            ex.set_reg(0, size, r as u64);
            ex.set_reg(2, size, (r >> bits) as u64);
        }
        _ => {
            ex.s.gpr[0] = r as u64;
            ex.s.gpr[2] = (r >> 64) as u64;
        }
    }
    mul_flags(ex, size, r as u64, !fits);
    Ok(())
}

/// IMUL reg, reg|mem (`THREE`: IMUL reg, reg|mem, imm) with the size fixed.
fn imul_fast<const S: u8, const THREE: bool, const N: usize>(
    ex: &mut Exec<'_>,
    i: &Insn,
) -> XResult {
    let size = N as u8;
    let b = ex.src::<S, N>(i)?;
    let a = if THREE {
        i.imm
    } else {
        ex.reg(i.ops[0].reg, size)
    };
    let r = (sext(a, size) as i128) * (sext(b, size) as i128);
    let fits = r == sext(r as u64, size) as i128;
    let res = (r as u64) & size_mask(size);
    ex.set_reg(i.ops[0].reg, size, res);
    mul_flags(ex, size, res, !fits);
    Ok(())
}

/// IMUL r, r/m and IMUL r, r/m, imm.
fn imul_n(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let (a, b) = if i.ops[2].kind != super::K_NONE {
        (ex.read_op(i, 1)?, i.imm)
    } else {
        (ex.read_op(i, 0)?, ex.read_op(i, 1)?)
    };
    let r = (sext(a, size) as i128) * (sext(b, size) as i128);
    let fits = r == sext(r as u64, size) as i128;
    let res = (r as u64) & size_mask(size);
    ex.write_op(i, 0, res)?;
    mul_flags(ex, size, res, !fits);
    Ok(())
}

fn div(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let d = ex.read_op(i, 0)? as u128;
    if d == 0 {
        return Err(Fault::de());
    }
    let bits = size as u32 * 8;
    let n: u128 = match size {
        1 => (ex.s.gpr[0] & 0xFFFF) as u128,
        8 => ((ex.s.gpr[2] as u128) << 64) | ex.s.gpr[0] as u128,
        _ => {
            (((ex.s.gpr[2] & size_mask(size)) as u128) << bits)
                | (ex.s.gpr[0] & size_mask(size)) as u128
        }
    };
    let q = n / d;
    let r = n % d;
    if q > size_mask(size) as u128 {
        return Err(Fault::de());
    }
    if size == 1 {
        ex.set_reg(0, 2, (q as u64) | ((r as u64) << 8));
    } else {
        ex.set_reg(0, size, q as u64);
        ex.set_reg(2, size, r as u64);
    }
    Ok(())
}

fn idiv(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let d = sext(ex.read_op(i, 0)?, size) as i128;
    if d == 0 {
        return Err(Fault::de());
    }
    let bits = size as u32 * 8;
    let n: i128 = match size {
        1 => sext(ex.s.gpr[0] & 0xFFFF, 2) as i128,
        8 => (((ex.s.gpr[2] as u128) << 64) | ex.s.gpr[0] as u128) as i128,
        _ => {
            let raw = ((ex.s.gpr[2] & size_mask(size)) << bits) | (ex.s.gpr[0] & size_mask(size));
            sext(raw, size * 2) as i128
        }
    };
    // i128::MIN / -1 cannot happen: n fits in 2*size bits <= 128 only for size 8.
    let (q, r) = match n.checked_div(d) {
        Some(q) => (q, n.wrapping_rem(d)),
        None => return Err(Fault::de()),
    };
    let lim = sign_bit(size) as i128;
    if q >= lim || q < -lim {
        return Err(Fault::de());
    }
    if size == 1 {
        ex.set_reg(0, 2, ((q as u64) & 0xFF) | (((r as u64) & 0xFF) << 8));
    } else {
        ex.set_reg(0, size, q as u64);
        ex.set_reg(2, size, r as u64);
    }
    Ok(())
}
