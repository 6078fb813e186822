//! Data movement: MOV and friends, XCHG, CMPXCHG*, XADD, CMOVcc/SETcc, BSWAP, LEA,
//! sign-extension helpers, LAHF/SAHF, XLAT, MOV/LxS to segment registers, NOPs.

use super::{Exec, Handler, Insn, K_MEM, K_SEG};
use crate::fault::{Fault, XResult};
use crate::flags::{AF, CF, FlagOp, PF, SF, STATUS, ZF, size_mask};
use crate::seg::SS;
use iced_x86::{Code, Instruction, Mnemonic};

pub fn lookup(ins: &Instruction, form: u8) -> Option<Handler> {
    use super::formed;
    Some(match ins.mnemonic() {
        Mnemonic::Mov => {
            if ins.op0_kind() == iced_x86::OpKind::Register
                && ins.op0_register().is_segment_register()
            {
                mov_to_sreg
            } else if ins.op0_register().is_cr()
                || ins.op1_register().is_cr()
                || ins.op0_register().is_dr()
                || ins.op1_register().is_dr()
            {
                return None; // system.rs
            } else if super::is_plain_gpr(ins, 0) && super::is_plain_gpr(ins, 1) {
                super::sized!(ins.op0_register().size(), mov_reg, super::SRC_REG)
            } else if super::is_plain_gpr(ins, 0) && super::is_imm(ins, 1) {
                super::sized!(ins.op0_register().size(), mov_reg, super::SRC_IMM)
            } else if super::is_plain_gpr(ins, 0) && super::is_mem(ins, 1) {
                formed!(form, ins.op0_register().size(), mov_reg_mem_n)
            } else if super::is_mem(ins, 0) && super::is_plain_gpr(ins, 1) {
                formed!(form, ins.op1_register().size(), mov_mem_reg_n)
            } else {
                mov
            }
        }
        Mnemonic::Movzx if super::is_plain_gpr(ins, 0) && super::is_mem(ins, 1) => {
            match ins.memory_size().size() {
                1 => match form {
                    super::F_FLAT => movzx_mem::<{ super::F_FLAT }, 1>,
                    super::F_FLAT_BD => movzx_mem::<{ super::F_FLAT_BD }, 1>,
                    super::F_FLAT_BISD => movzx_mem::<{ super::F_FLAT_BISD }, 1>,
                    _ => movzx_mem::<{ super::F_ANY }, 1>,
                },
                2 => match form {
                    super::F_FLAT => movzx_mem::<{ super::F_FLAT }, 2>,
                    super::F_FLAT_BD => movzx_mem::<{ super::F_FLAT_BD }, 2>,
                    super::F_FLAT_BISD => movzx_mem::<{ super::F_FLAT_BISD }, 2>,
                    _ => movzx_mem::<{ super::F_ANY }, 2>,
                },
                _ => movzx,
            }
        }
        Mnemonic::Movzx if super::is_plain_gpr(ins, 0) && super::is_plain_gpr(ins, 1) => {
            match ins.op1_register().size() {
                1 => movzx_reg::<1>,
                _ => movzx_reg::<2>,
            }
        }
        Mnemonic::Movzx => movzx,
        Mnemonic::Movsx | Mnemonic::Movsxd => movsx,
        Mnemonic::Lea if super::is_plain_gpr(ins, 0) => {
            // The segment does not matter: only the address form.
            formed!(super::ea_form(ins), ins.op0_register().size(), lea_reg)
        }
        Mnemonic::Lea => lea,
        Mnemonic::Xchg => xchg,
        Mnemonic::Cmpxchg => cmpxchg,
        Mnemonic::Cmpxchg8b => cmpxchg8b,
        Mnemonic::Cmpxchg16b => cmpxchg16b,
        Mnemonic::Xadd => xadd,
        Mnemonic::Bswap => bswap,
        Mnemonic::Cbw | Mnemonic::Cwde | Mnemonic::Cdqe => cbw,
        Mnemonic::Cwd | Mnemonic::Cdq | Mnemonic::Cqo => cwd,
        Mnemonic::Lahf => lahf,
        Mnemonic::Sahf => sahf,
        Mnemonic::Xlatb => xlat,
        Mnemonic::Lds | Mnemonic::Les | Mnemonic::Lfs | Mnemonic::Lgs | Mnemonic::Lss => {
            load_far_ptr
        }
        Mnemonic::Nop
        | Mnemonic::Reservednop
        | Mnemonic::Pause
        | Mnemonic::Prefetchnta
        | Mnemonic::Prefetcht0
        | Mnemonic::Prefetcht1
        | Mnemonic::Prefetcht2
        | Mnemonic::Prefetchw
        | Mnemonic::Prefetch
        | Mnemonic::Lfence
        | Mnemonic::Sfence
        | Mnemonic::Mfence => nop,
        // CET lives in the 0F 1E hint-NOP space: without CET (we do not advertise it)
        // ENDBR and RDSSP execute as NOPs. CET-enabled distributions start every
        // function with ENDBR64, so user space dies on #UD without this.
        Mnemonic::Endbr32 | Mnemonic::Endbr64 | Mnemonic::Rdsspd | Mnemonic::Rdsspq => nop,
        Mnemonic::Clflush => clflush,
        Mnemonic::Salc => salc,
        m if is_cmov(m) && super::is_plain_gpr(ins, 0) && super::is_plain_gpr(ins, 1) => {
            super::sized!(ins.op0_register().size(), cmov_reg, super::SRC_REG)
        }
        m if is_cmov(m) && super::is_plain_gpr(ins, 0) && super::is_mem(ins, 1) => {
            super::sized!(ins.op0_register().size(), cmov_reg, super::SRC_MEM)
        }
        _ if ins.code() == Code::Cmovo_r16_rm16 || is_cmov(ins.mnemonic()) => cmov,
        _ if is_setcc(ins.mnemonic()) => setcc,
        _ => return None,
    })
}

fn is_cmov(m: Mnemonic) -> bool {
    use Mnemonic::*;
    matches!(
        m,
        Cmovo
            | Cmovno
            | Cmovb
            | Cmovae
            | Cmove
            | Cmovne
            | Cmovbe
            | Cmova
            | Cmovs
            | Cmovns
            | Cmovp
            | Cmovnp
            | Cmovl
            | Cmovge
            | Cmovle
            | Cmovg
    )
}

fn is_setcc(m: Mnemonic) -> bool {
    use Mnemonic::*;
    matches!(
        m,
        Seto | Setno
            | Setb
            | Setae
            | Sete
            | Setne
            | Setbe
            | Seta
            | Sets
            | Setns
            | Setp
            | Setnp
            | Setl
            | Setge
            | Setle
            | Setg
    )
}

pub fn nop(_: &mut Exec<'_>, _: &Insn) -> XResult {
    Ok(())
}

fn clflush(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    // Only the access check is architectural here.
    let off = ex.ea(i);
    ex.read_mem(i.mem.seg, off, 1)?;
    Ok(())
}

fn mov(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let v = ex.read_op(i, 1)?;
    ex.write_op(i, 0, v)
}

/// MOV reg, reg|imm with the size fixed at decode time.
fn mov_reg<const S: u8, const N: usize>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let v = ex.src::<S, N>(i)?;
    ex.set_reg(i.ops[0].reg, N as u8, v);
    Ok(())
}

/// MOV reg, [mem] with the size fixed at decode time (the memory fast path inlines).
fn mov_reg_mem_n<const F: u8, const N: usize>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let v = ex.load_f::<F, N>(i)?;
    ex.set_reg(i.ops[0].reg, N as u8, v);
    Ok(())
}

/// MOV [mem], reg with the size fixed at decode time.
fn mov_mem_reg_n<const F: u8, const N: usize>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let v = ex.reg(i.ops[1].reg, N as u8);
    ex.store_f::<F, N>(i, v)
}

/// MOVZX reg, byte/word [mem].
fn movzx_mem<const F: u8, const N: usize>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let v = ex.load_f::<F, N>(i)?;
    let d = i.ops[0];
    ex.set_reg(d.reg, d.size, v);
    Ok(())
}

/// MOVZX reg, reg8/reg16 (never AH..BH: those take the generic path).
fn movzx_reg<const N: usize>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let v = ex.reg(i.ops[1].reg, N as u8);
    let d = i.ops[0];
    ex.set_reg(d.reg, d.size, v);
    Ok(())
}

fn movzx(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let v = ex.read_op(i, 1)?;
    ex.write_op(i, 0, v)
}

fn movsx(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let v = ex.read_op(i, 1)?;
    let sh = 64 - i.ops[1].size as u32 * 8;
    let s = (((v << sh) as i64) >> sh) as u64;
    ex.write_op(i, 0, s & size_mask(i.ops[0].size))
}

/// LEA reg, [mem] with the destination size fixed.
fn lea_reg<const F: u8, const N: usize>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let a = ex.ea_f::<F>(i);
    ex.set_reg(i.ops[0].reg, N as u8, a);
    Ok(())
}

fn lea(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let a = ex.ea(i);
    ex.write_op(i, 0, a & size_mask(i.ops[0].size))
}

fn xchg(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    // Memory operand first so a fault leaves the register untouched.
    let (m, r) = if i.ops[0].kind == K_MEM {
        (0, 1)
    } else {
        (1, 0)
    };
    let l = ex.rmw_loc(i, m)?;
    let a = ex.loc_read(l)?;
    let b = ex.read_op(i, r)?;
    ex.loc_write(l, b)?;
    ex.write_op(i, r, a)
}

fn cmpxchg(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let l = ex.rmw_loc(i, 0)?;
    let dst = ex.loc_read(l)?;
    let acc = ex.reg(0, size);
    let src = ex.read_op(i, 1)?;
    if dst == acc {
        ex.loc_write(l, src)?;
    } else {
        // The destination is always written (locked cycle) on real hardware.
        ex.loc_write(l, dst)?;
        ex.set_reg(0, size, dst);
    }
    ex.c.flags.set(
        FlagOp::Sub,
        size,
        acc,
        dst,
        acc.wrapping_sub(dst) & size_mask(size),
    );
    Ok(())
}

fn cmpxchg8b(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    if i.ops[0].kind != K_MEM {
        return Err(Fault::ud());
    }
    let off = ex.ea(i);
    let lin = ex.lin(i.mem.seg, off, 8, true)?;
    let cur = ex.read_lin::<8>(lin)?;
    let want = (ex.s.gpr[0] & 0xFFFF_FFFF) | (ex.s.gpr[2] << 32);
    ex.materialize_flags();
    if cur == want {
        let new = (ex.s.gpr[3] & 0xFFFF_FFFF) | (ex.s.gpr[1] << 32);
        ex.write_lin::<8>(lin, new)?;
        ex.s.rflags |= ZF;
    } else {
        ex.write_lin::<8>(lin, cur)?;
        ex.set_reg(0, 4, cur);
        ex.set_reg(2, 4, cur >> 32);
        ex.s.rflags &= !ZF;
    }
    Ok(())
}

fn cmpxchg16b(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    if i.ops[0].kind != K_MEM {
        return Err(Fault::ud());
    }
    let off = ex.ea(i);
    if off & 15 != 0 {
        return Err(Fault::gp0());
    }
    let lo_lin = ex.lin(i.mem.seg, off, 8, true)?;
    let hi_lin = ex.lin(i.mem.seg, off + 8, 8, true)?;
    let lo = ex.read_lin::<8>(lo_lin)?;
    let hi = ex.read_lin::<8>(hi_lin)?;
    ex.materialize_flags();
    if lo == ex.s.gpr[0] && hi == ex.s.gpr[2] {
        let (b, c) = (ex.s.gpr[3], ex.s.gpr[1]);
        ex.write_lin::<8>(lo_lin, b)?;
        ex.write_lin::<8>(hi_lin, c)?;
        ex.s.rflags |= ZF;
    } else {
        ex.write_lin::<8>(lo_lin, lo)?;
        ex.write_lin::<8>(hi_lin, hi)?;
        ex.s.gpr[0] = lo;
        ex.s.gpr[2] = hi;
        ex.s.rflags &= !ZF;
    }
    Ok(())
}

fn xadd(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let l = ex.rmw_loc(i, 0)?;
    let dst = ex.loc_read(l)?;
    let src = ex.read_op(i, 1)?;
    let res = dst.wrapping_add(src) & size_mask(size);
    if let super::Loc::Mem(..) = l {
        ex.loc_write(l, res)?;
        ex.write_op(i, 1, dst)?;
    } else {
        // XADD r, r with the same register keeps the sum: the destination is written last.
        ex.write_op(i, 1, dst)?;
        ex.loc_write(l, res)?;
    }
    ex.c.flags.set(FlagOp::Add, size, dst, src, res);
    Ok(())
}

fn bswap(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.ops[0].size;
    let v = ex.read_op(i, 0)?;
    // BSWAP r16 is undefined; like QEMU, swap the whole 32-bit register.
    if size == 8 {
        return ex.write_op(i, 0, v.swap_bytes());
    }
    let full = ex.reg(i.ops[0].reg, 4);
    ex.set_reg(i.ops[0].reg, 4, (full as u32).swap_bytes() as u64);
    Ok(())
}

fn cmov(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let v = ex.read_op(i, 1)?;
    if ex.cond(i.cc) {
        ex.write_op(i, 0, v)
    } else if i.ops[0].size == 4 {
        // A 32-bit CMOV zero-extends the destination even when the condition is false.
        let cur = ex.read_op(i, 0)?;
        ex.write_op(i, 0, cur)
    } else {
        Ok(())
    }
}

/// CMOVcc reg, reg|mem with the size fixed (the source is read, and may fault, either way).
fn cmov_reg<const S: u8, const N: usize>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let v = ex.src::<S, N>(i)?;
    let r = i.ops[0].reg;
    if ex.cond(i.cc) {
        ex.set_reg(r, N as u8, v);
    } else if N == 4 {
        // A 32-bit CMOV zero-extends the destination even when the condition is false.
        let cur = ex.reg(r, 4);
        ex.set_reg(r, 4, cur);
    }
    Ok(())
}

fn setcc(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let v = ex.cond(i.cc) as u64;
    ex.write_op(i, 0, v)
}

fn cbw(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let a = ex.s.gpr[0];
    match i.raw.code() {
        Code::Cbw => ex.set_reg(0, 2, a as u8 as i8 as i16 as u16 as u64),
        Code::Cwde => ex.set_reg(0, 4, a as u16 as i16 as i32 as u32 as u64),
        _ => ex.s.gpr[0] = a as u32 as i32 as i64 as u64,
    }
    Ok(())
}

fn cwd(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let a = ex.s.gpr[0];
    match i.raw.code() {
        Code::Cwd => ex.set_reg(2, 2, if a & 0x8000 != 0 { 0xFFFF } else { 0 }),
        Code::Cdq => ex.set_reg(2, 4, if a & 0x8000_0000 != 0 { 0xFFFF_FFFF } else { 0 }),
        _ => ex.s.gpr[2] = if (a as i64) < 0 { u64::MAX } else { 0 },
    }
    Ok(())
}

fn lahf(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    let f = ex.rflags() & 0xFF;
    let g = &mut ex.s.gpr[0];
    *g = (*g & !0xFF00) | (f << 8);
    Ok(())
}

fn sahf(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    let ah = (ex.s.gpr[0] >> 8) & (CF | PF | AF | ZF | SF);
    let f = ex.rflags();
    ex.set_rflags((f & !(STATUS & 0xFF)) | ah);
    Ok(())
}

fn xlat(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let off = (ex.s.gpr[3].wrapping_add(ex.s.gpr[0] & 0xFF)) & size_mask(i.asize);
    let v = ex.read_mem(i.mem.seg, off, 1)?;
    ex.set_reg(0, 1, v);
    Ok(())
}

fn salc(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    let v = if ex.cf() { 0xFF } else { 0 };
    ex.set_reg(0, 1, v);
    Ok(())
}

fn mov_to_sreg(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let seg = i.ops[0].reg;
    if i.ops[0].kind != K_SEG || seg == 1 || seg > 5 {
        return Err(Fault::ud());
    }
    let v = ex.read_op(i, 1)? as u16;
    ex.load_seg(seg, v)?;
    if seg == SS {
        ex.c.events |= crate::core::EV_SHADOW_ARMED;
        ex.c.end_block = true;
    }
    Ok(())
}

/// LDS/LES/LFS/LGS/LSS r, m16:16/32/64.
fn load_far_ptr(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    if i.ops[1].kind != K_MEM {
        return Err(Fault::ud());
    }
    let size = i.ops[0].size;
    let off = ex.ea(i);
    let v = ex.read_mem(i.mem.seg, off, size)?;
    let sel = ex.read_mem(
        i.mem.seg,
        off.wrapping_add(size as u64) & size_mask(i.asize),
        2,
    )? as u16;
    let seg = match i.raw.mnemonic() {
        Mnemonic::Les => 0,
        Mnemonic::Lss => 2,
        Mnemonic::Lds => 3,
        Mnemonic::Lfs => 4,
        _ => 5,
    };
    ex.load_seg(seg, sel)?;
    ex.write_op(i, 0, v)
}
