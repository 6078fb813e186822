//! Shifts and rotates: SHL/SAL/SHR/SAR, ROL/ROR/RCL/RCR, SHLD/SHRD.

use super::{Exec, Handler, Insn};
use crate::fault::XResult;
use crate::flags::{CF, OF, sign_bit, size_mask};
use iced_x86::{Instruction, Mnemonic};

const SHL: u8 = 0;
const SHR: u8 = 1;
const SAR: u8 = 2;
const ROL: u8 = 3;
const ROR: u8 = 4;
const RCL: u8 = 5;
const RCR: u8 = 6;

pub fn lookup(ins: &Instruction) -> Option<Handler> {
    use super::sized;
    use Mnemonic::*;
    // SHL/SHR/SAR reg, imm|CL: size-specialised, no operand-kind dispatch.
    if super::is_plain_gpr(ins, 0) {
        let size = ins.op0_register().size();
        match ins.mnemonic() {
            Shl | Sal => return Some(sized!(size, shift_reg, SHL)),
            Shr => return Some(sized!(size, shift_reg, SHR)),
            Sar => return Some(sized!(size, shift_reg, SAR)),
            _ => {}
        }
    }
    Some(match ins.mnemonic() {
        Shl | Sal => shift::<SHL>,
        Shr => shift::<SHR>,
        Sar => shift::<SAR>,
        Rol => shift::<ROL>,
        Ror => shift::<ROR>,
        Rcl => shift::<RCL>,
        Rcr => shift::<RCR>,
        Shld => double_shift::<true>,
        Shrd => double_shift::<false>,
        _ => return None,
    })
}

/// Shift count: operand 1 (CL or imm8), or 1 for the D0/D1 forms.
fn count(ex: &mut Exec<'_>, i: &Insn, n: usize, size: u8) -> XResult<u32> {
    let c = if i.ops[n].kind == super::K_NONE {
        1
    } else {
        ex.read_op(i, n)?
    };
    Ok((c & if size == 8 { 63 } else { 31 }) as u32)
}

fn shift<const OP: u8>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let bits = size as u32 * 8;
    let m = size_mask(size);
    let cnt = count(ex, i, 1, size)?;
    let loc = ex.rmw_loc(i, 0)?;
    let dst = ex.loc_read(loc)?;
    if cnt == 0 {
        // Flags unchanged; a 32-bit register destination is still zero-extended.
        return ex.loc_write(loc, dst);
    }
    let msb = sign_bit(size);
    match OP {
        SHL | SHR | SAR => {
            let (res, aux) = shift_core::<OP>(size, dst, cnt);
            ex.loc_write(loc, res)?;
            ex.c.flags.set_explicit(size, res, aux);
        }
        ROL | ROR => {
            let r = cnt % bits;
            let res = if r == 0 {
                dst
            } else if OP == ROL {
                ((dst << r) | (dst >> (bits - r))) & m
            } else {
                ((dst >> r) | (dst << (bits - r))) & m
            };
            ex.loc_write(loc, res)?;
            let (cf, of) = if OP == ROL {
                let cf = res & 1;
                (cf, ((res & msb != 0) as u64) ^ cf)
            } else {
                let cf = (res & msb != 0) as u64;
                (cf, cf ^ ((res >> (bits - 2)) & 1))
            };
            set_cf_of(ex, cf, of);
        }
        _ => {
            // Rotate through carry: a (bits+1)-bit rotation.
            let r = cnt % (bits + 1);
            let cin = ex.cf() as u128;
            let wide = (dst as u128) | (cin << bits);
            let n = bits + 1;
            let wm = (1u128 << n) - 1;
            let rot = if r == 0 {
                wide
            } else if OP == RCL {
                ((wide << r) | (wide >> (n - r))) & wm
            } else {
                ((wide >> r) | (wide << (n - r))) & wm
            };
            let res = (rot as u64) & m;
            let cf = ((rot >> bits) & 1) as u64;
            ex.loc_write(loc, res)?;
            let of = if OP == RCL {
                ((res & msb != 0) as u64) ^ cf
            } else {
                ((res >> (bits - 1)) ^ (res >> (bits - 2))) & 1
            };
            set_cf_of(ex, cf, of);
        }
    }
    Ok(())
}

/// SHL/SHR/SAR of `dst` by a non-zero, masked `cnt`: the result and its CF/OF bits.
#[inline(always)]
fn shift_core<const OP: u8>(size: u8, dst: u64, cnt: u32) -> (u64, u64) {
    let bits = size as u32 * 8;
    let m = size_mask(size);
    let msb = sign_bit(size);
    match OP {
        SHL => {
            let res = if cnt >= 64 { 0 } else { (dst << cnt) & m };
            let cf = if cnt > bits {
                0
            } else {
                (dst >> (bits - cnt)) & 1
            };
            let of = ((res & msb != 0) as u64) ^ cf;
            (res, (cf * CF) | (of * OF))
        }
        SHR => {
            let res = if cnt >= 64 { 0 } else { dst >> cnt };
            let cf = if cnt > 64 { 0 } else { (dst >> (cnt - 1)) & 1 };
            let of = (dst & msb != 0) as u64;
            (res, (cf * CF) | (of * OF))
        }
        _ => {
            let sh = 64 - bits;
            let sdst = ((dst << sh) as i64) >> sh;
            let res = (sdst >> cnt.min(63)) as u64 & m;
            let cf = ((sdst >> (cnt - 1).min(63)) & 1) as u64;
            (res, cf * CF)
        }
    }
}

/// SHL/SHR/SAR reg, imm|CL (the D0/D1 forms carry an immediate 1) with the size fixed.
fn shift_reg<const OP: u8, const N: usize>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = N as u8;
    let c = match i.ops[1].kind {
        super::K_IMM => i.imm,
        super::K_NONE => 1,
        _ => ex.s.gpr[1],
    };
    let cnt = (c & if N == 8 { 63 } else { 31 }) as u32;
    let r = i.ops[0].reg;
    let dst = ex.reg(r, size);
    if cnt == 0 {
        // Flags unchanged; a 32-bit destination is still zero-extended.
        ex.set_reg(r, size, dst);
        return Ok(());
    }
    let (res, aux) = shift_core::<OP>(size, dst, cnt);
    ex.set_reg(r, size, res);
    ex.c.flags.set_explicit(size, res, aux);
    Ok(())
}

fn set_cf_of(ex: &mut Exec<'_>, cf: u64, of: u64) {
    ex.materialize_flags();
    ex.s.rflags = (ex.s.rflags & !(CF | OF)) | (cf * CF) | (of * OF);
}

fn double_shift<const LEFT: bool>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let bits = size as u32 * 8;
    let m = size_mask(size);
    let cnt = count(ex, i, 2, size)?;
    let src = ex.read_op(i, 1)?;
    let loc = ex.rmw_loc(i, 0)?;
    let dst = ex.loc_read(loc)?;
    if cnt == 0 {
        return ex.loc_write(loc, dst);
    }
    // Work in 128 bits so counts up to 63 and 16-bit "count > 16" cases stay defined.
    let (res, cf) = if LEFT {
        let wide = ((dst as u128) << bits) | src as u128;
        let w = wide << cnt;
        (
            ((w >> bits) as u64) & m,
            ((wide >> (2 * bits - cnt)) & 1) as u64,
        )
    } else {
        let wide = ((src as u128) << bits) | dst as u128;
        let w = wide >> cnt;
        ((w as u64) & m, ((wide >> (cnt - 1)) & 1) as u64)
    };
    ex.loc_write(loc, res)?;
    let of = ((res ^ dst) & sign_bit(size) != 0) as u64;
    ex.c.flags.set_explicit(size, res, (cf * CF) | (of * OF));
    Ok(())
}
