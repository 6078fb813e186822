//! Integer SIMD instructions on MMX (64-bit) and XMM (128-bit) registers: MMX, the SSE
//! integer extensions, SSE2 and SSSE3. The lane arithmetic is `crate::sse::int`.

use super::sse::{epilogue, prologue, read, write};
use super::{Exec, Handler, Insn};
use crate::fault::XResult;
use crate::sse::int::*;
use iced_x86::{Instruction, Mnemonic};

pub fn lookup(ins: &Instruction) -> Option<Handler> {
    use Mnemonic::*;
    Some(match ins.mnemonic() {
        Paddb | Paddw | Paddd | Paddq | Psubb | Psubw | Psubd | Psubq | Paddsb | Paddsw
        | Paddusb | Paddusw | Psubsb | Psubsw | Psubusb | Psubusw | Pmullw | Pmulhw | Pmulhuw
        | Pmuludq | Pmaddwd | Pavgb | Pavgw | Pminub | Pmaxub | Pminsw | Pmaxsw | Pcmpeqb
        | Pcmpeqw | Pcmpeqd | Pcmpgtb | Pcmpgtw | Pcmpgtd | Psadbw | Pand | Pandn | Por | Pxor
        | Packsswb | Packssdw | Packuswb | Punpcklbw | Punpcklwd | Punpckldq | Punpcklqdq
        | Punpckhbw | Punpckhwd | Punpckhdq | Punpckhqdq | Pshufb | Phaddw | Phaddd | Phaddsw
        | Phsubw | Phsubd | Phsubsw | Pmaddubsw | Pmulhrsw | Psignb | Psignw | Psignd | Pabsb
        | Pabsw | Pabsd => binop,
        Psllw | Pslld | Psllq | Psrlw | Psrld | Psrlq | Psraw | Psrad => shift,
        Pslldq | Psrldq => byte_shift,
        Pshufd | Pshufhw | Pshuflw | Pshufw => pshuf,
        Palignr => palignr_,
        Pinsrw => pinsrw_,
        Pextrw => pextrw_,
        _ => return None,
    })
}

fn width_of(mmx: bool) -> u32 {
    if mmx { 8 } else { 16 }
}

fn truncate(v: u128, mmx: bool) -> u128 {
    if mmx { v & u64::MAX as u128 } else { v }
}

fn apply(m: Mnemonic, a: u128, b: u128, w: u32) -> u128 {
    use Mnemonic::*;
    match m {
        Paddb => padd(a, b, 8),
        Paddw => padd(a, b, 16),
        Paddd => padd(a, b, 32),
        Paddq => padd(a, b, 64),
        Psubb => psub(a, b, 8),
        Psubw => psub(a, b, 16),
        Psubd => psub(a, b, 32),
        Psubq => psub(a, b, 64),
        Paddsb => padds(a, b, 8),
        Paddsw => padds(a, b, 16),
        Paddusb => paddus(a, b, 8),
        Paddusw => paddus(a, b, 16),
        Psubsb => psubs(a, b, 8),
        Psubsw => psubs(a, b, 16),
        Psubusb => psubus(a, b, 8),
        Psubusw => psubus(a, b, 16),
        Pmullw => pmullw(a, b),
        Pmulhw => pmulhw(a, b),
        Pmulhuw => pmulhuw(a, b),
        Pmuludq => pmuludq(a, b),
        Pmaddwd => pmaddwd(a, b),
        Pavgb => pavg(a, b, 8),
        Pavgw => pavg(a, b, 16),
        Pminub => pminu(a, b, 8),
        Pmaxub => pmaxu(a, b, 8),
        Pminsw => pmins(a, b, 16),
        Pmaxsw => pmaxs(a, b, 16),
        Pcmpeqb => pcmpeq(a, b, 8),
        Pcmpeqw => pcmpeq(a, b, 16),
        Pcmpeqd => pcmpeq(a, b, 32),
        Pcmpgtb => pcmpgt(a, b, 8),
        Pcmpgtw => pcmpgt(a, b, 16),
        Pcmpgtd => pcmpgt(a, b, 32),
        Psadbw => psadbw(a, b),
        Pand => a & b,
        Pandn => !a & b,
        Por => a | b,
        Pxor => a ^ b,
        Packsswb => pack(a, b, 16, w, false),
        Packssdw => pack(a, b, 32, w, false),
        Packuswb => pack(a, b, 16, w, true),
        Punpcklbw => unpack(a, b, 8, w, false),
        Punpcklwd => unpack(a, b, 16, w, false),
        Punpckldq => unpack(a, b, 32, w, false),
        Punpcklqdq => unpack(a, b, 64, w, false),
        Punpckhbw => unpack(a, b, 8, w, true),
        Punpckhwd => unpack(a, b, 16, w, true),
        Punpckhdq => unpack(a, b, 32, w, true),
        Punpckhqdq => unpack(a, b, 64, w, true),
        Pshufb => pshufb(a, b, w),
        Phaddw => phorizontal(a, b, 16, w, false, false),
        Phaddd => phorizontal(a, b, 32, w, false, false),
        Phaddsw => phorizontal(a, b, 16, w, false, true),
        Phsubw => phorizontal(a, b, 16, w, true, false),
        Phsubd => phorizontal(a, b, 32, w, true, false),
        Phsubsw => phorizontal(a, b, 16, w, true, true),
        Pmaddubsw => pmaddubsw(a, b, w),
        Pmulhrsw => pmulhrsw(a, b),
        Psignb => psign(a, b, 8),
        Psignw => psign(a, b, 16),
        Psignd => psign(a, b, 32),
        Pabsb => pabs(b, 8),
        Pabsw => pabs(b, 16),
        _ => pabs(b, 32),
    }
}

fn binop(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let mmx = prologue(ex, i)?;
    let a = read(ex, i, 0, true)?;
    let b = read(ex, i, 1, true)?;
    let r = apply(i.raw.mnemonic(), a, b, width_of(mmx));
    write(ex, i, 0, truncate(r, mmx), true)?;
    epilogue(ex, mmx);
    Ok(())
}

/// PSLL/PSRL/PSRA by an immediate, a register or memory count (low 64 bits).
fn shift(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    use Mnemonic::*;
    let mmx = prologue(ex, i)?;
    let a = read(ex, i, 0, true)?;
    let count = read(ex, i, 1, true)? as u64;
    let r = match i.raw.mnemonic() {
        Psllw => psll(a, count, 16),
        Pslld => psll(a, count, 32),
        Psllq => psll(a, count, 64),
        Psrlw => psrl(a, count, 16),
        Psrld => psrl(a, count, 32),
        Psrlq => psrl(a, count, 64),
        Psraw => psra(a, count, 16),
        _ => psra(a, count, 32),
    };
    write(ex, i, 0, truncate(r, mmx), true)?;
    epilogue(ex, mmx);
    Ok(())
}

fn byte_shift(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    prologue(ex, i)?;
    let a = read(ex, i, 0, true)?;
    let n = i.imm as u8;
    let r = if i.raw.mnemonic() == Mnemonic::Pslldq {
        pslldq(a, n)
    } else {
        psrldq(a, n)
    };
    write(ex, i, 0, r, true)
}

fn pshuf(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let mmx = prologue(ex, i)?;
    let src = read(ex, i, 1, true)?;
    let imm = i.imm as u8;
    let r = match i.raw.mnemonic() {
        Mnemonic::Pshufd => pshufd(src, imm),
        Mnemonic::Pshufhw => pshufhw(src, imm),
        _ => pshuflw(src, imm),
    };
    write(ex, i, 0, truncate(r, mmx), true)?;
    epilogue(ex, mmx);
    Ok(())
}

fn palignr_(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let mmx = prologue(ex, i)?;
    let a = read(ex, i, 0, true)?;
    let b = read(ex, i, 1, true)?;
    let r = palignr(a, b, i.imm as u8, width_of(mmx));
    write(ex, i, 0, r, true)?;
    epilogue(ex, mmx);
    Ok(())
}

fn pinsrw_(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let mmx = prologue(ex, i)?;
    let a = read(ex, i, 0, true)?;
    let val = read(ex, i, 1, false)? as u16;
    let r = pinsrw(a, val, i.imm as u8, width_of(mmx));
    write(ex, i, 0, r, true)?;
    epilogue(ex, mmx);
    Ok(())
}

fn pextrw_(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let mmx = prologue(ex, i)?;
    let src = read(ex, i, 1, true)?;
    let r = pextrw(src, i.imm as u8, width_of(mmx));
    write(ex, i, 0, r as u128, false)?;
    epilogue(ex, mmx);
    Ok(())
}
