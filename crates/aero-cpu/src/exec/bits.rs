//! Bit instructions: BT/BTS/BTR/BTC, BSF/BSR (and TZCNT/LZCNT, which behave as
//! BSF/BSR on a CPU that does not advertise them).

use super::{Exec, Handler, Insn, K_MEM, K_REG};
use crate::fault::XResult;
use crate::flags::{CF, ZF, size_mask};
use iced_x86::{Instruction, Mnemonic};

const BT: u8 = 0;
const BTS: u8 = 1;
const BTR: u8 = 2;
const BTC: u8 = 3;

pub fn lookup(ins: &Instruction) -> Option<Handler> {
    use Mnemonic::*;
    Some(match ins.mnemonic() {
        Bt => bt::<BT>,
        Bts => bt::<BTS>,
        Btr => bt::<BTR>,
        Btc => bt::<BTC>,
        Bsf | Tzcnt => bsf,
        Bsr | Lzcnt => bsr,
        _ => return None,
    })
}

fn bt<const OP: u8>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let bits = size as u64 * 8;
    let off = ex.read_op(i, 1)?;
    let (loc, bit) = if i.ops[0].kind == K_MEM && i.ops[1].kind == K_REG {
        // Register bit offsets address memory beyond the operand (signed).
        let sh = 64 - bits as u32;
        let soff = ((off << sh) as i64) >> sh;
        let byte_off = (soff >> (bits.trailing_zeros())) * size as i64;
        let ea = ex.ea(i).wrapping_add(byte_off as u64) & size_mask(i.asize);
        let bit = (off & (bits - 1)) as u32;
        let lin = if OP == BT {
            ex.lin(i.mem.seg, ea, size, false)?
        } else {
            ex.lin(i.mem.seg, ea, size, true)?
        };
        (super::Loc::Mem(lin, size), bit)
    } else {
        let bit = (off & (bits - 1)) as u32;
        let loc = if OP == BT && i.ops[0].kind == K_MEM {
            let ea = ex.ea(i);
            super::Loc::Mem(ex.lin(i.mem.seg, ea, size, false)?, size)
        } else {
            ex.rmw_loc(i, 0)?
        };
        (loc, bit)
    };
    let v = ex.loc_read(loc)?;
    let cf = (v >> bit) & 1;
    let nv = match OP {
        BTS => v | (1 << bit),
        BTR => v & !(1 << bit),
        BTC => v ^ (1 << bit),
        _ => v,
    };
    if OP != BT {
        ex.loc_write(loc, nv)?;
    }
    ex.materialize_flags();
    ex.s.rflags = (ex.s.rflags & !CF) | (cf * CF);
    Ok(())
}

fn bsf(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let v = ex.read_op(i, 1)?;
    ex.materialize_flags();
    if v == 0 {
        ex.s.rflags |= ZF;
        return Ok(());
    }
    ex.s.rflags &= !ZF;
    ex.write_op(i, 0, v.trailing_zeros() as u64)
}

fn bsr(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let v = ex.read_op(i, 1)?;
    ex.materialize_flags();
    if v == 0 {
        ex.s.rflags |= ZF;
        return Ok(());
    }
    ex.s.rflags &= !ZF;
    ex.write_op(i, 0, 63 - v.leading_zeros() as u64)
}
