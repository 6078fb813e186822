//! Control flow: JMP/Jcc/CALL/RET (near and far, incl. call gates and task switches),
//! LOOPcc/JrCXZ, INT/INT3/INTO/INT1/IRET, BOUND.

use super::{Exec, Handler, Insn, K_MEM, K_NONE};
use crate::fault::{self, Fault, XResult};
use crate::flags::{OF, size_mask};
use crate::interrupts;
use crate::seg::{CS, Descriptor, SS};
use crate::task::{self, SwitchKind};
use iced_x86::{Instruction, Mnemonic};

pub fn lookup(ins: &Instruction, flat_ss: bool) -> Option<Handler> {
    use super::sized;
    use Mnemonic::*;
    let far_ptr = ins.op_count() > 0
        && matches!(
            ins.op0_kind(),
            iced_x86::OpKind::FarBranch16 | iced_x86::OpKind::FarBranch32
        );
    let far_mem =
        ins.op_count() > 0 && ins.op0_kind() == iced_x86::OpKind::Memory && is_far_mem(ins);
    Some(match ins.mnemonic() {
        Jmp if far_ptr || far_mem => jmp_far,
        Jmp if ins.op0_kind() == iced_x86::OpKind::NearBranch16
            || ins.op0_kind() == iced_x86::OpKind::NearBranch32
            || ins.op0_kind() == iced_x86::OpKind::NearBranch64 =>
        {
            jmp_rel
        }
        Jmp => jmp_ind,
        Call if far_ptr || far_mem => call_far,
        Call if matches!(
            ins.op0_kind(),
            iced_x86::OpKind::NearBranch16
                | iced_x86::OpKind::NearBranch32
                | iced_x86::OpKind::NearBranch64
        ) =>
        {
            if flat_ss {
                sized!(stack_size(ins), call_rel, true)
            } else {
                sized!(stack_size(ins), call_rel, false)
            }
        }
        Call => call_ind,
        Ret => match (flat_ss, ins.op_count() > 0) {
            (true, false) => sized!(stack_size(ins), ret_near, true, false),
            (true, true) => sized!(stack_size(ins), ret_near, true, true),
            (false, false) => sized!(stack_size(ins), ret_near, false, false),
            (false, true) => sized!(stack_size(ins), ret_near, false, true),
        },
        Retf => ret_far,
        m if is_jcc(m) => {
            let cc = (ins.condition_code() as usize).wrapping_sub(1);
            JCC.get(cc).copied().unwrap_or(jcc)
        }
        Loop => loop_::<0>,
        Loope => loop_::<1>,
        Loopne => loop_::<2>,
        Jcxz | Jecxz | Jrcxz => jcxz,
        Int => int_n,
        Int3 => int3,
        Into => into,
        Int1 => int1,
        Iret | Iretd | Iretq => interrupts::iret,
        Bound => bound,
        _ => return None,
    })
}

/// Jcc (not LOOPcc/JrCXZ).
pub fn is_jcc(m: Mnemonic) -> bool {
    use Mnemonic::*;
    matches!(
        m,
        Jo | Jno | Jb | Jae | Je | Jne | Jbe | Ja | Js | Jns | Jp | Jnp | Jl | Jge | Jle | Jg
    )
}

fn is_far_mem(ins: &Instruction) -> bool {
    matches!(
        ins.memory_size(),
        iced_x86::MemorySize::SegPtr16
            | iced_x86::MemorySize::SegPtr32
            | iced_x86::MemorySize::SegPtr64
    )
}

/// Mask for a near branch target: 64-bit mode ignores the operand size.
#[inline(always)]
fn ip_mask(ex: &Exec<'_>, i: &Insn) -> u64 {
    if ex.c.long64 {
        u64::MAX
    } else {
        size_mask(i.osize)
    }
}

/// Commit a near branch target after the CS limit check.
#[inline(always)]
fn branch(ex: &mut Exec<'_>, target: u64) -> XResult {
    if !ex.c.long64 && target > ex.s.seg[CS as usize].limit as u64 {
        return Err(Fault::gp0());
    }
    if ex.c.long64 && ((target as i64) << 16 >> 16) as u64 != target {
        return Err(Fault::gp0());
    }
    ex.c.next_rip = target;
    Ok(())
}

fn jmp_rel(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let t = ex.c.next_rip.wrapping_add(i.rel as u64) & ip_mask(ex, i);
    branch(ex, t)
}

fn jcc(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    if ex.cond(i.cc) {
        let t = ex.c.next_rip.wrapping_add(i.rel as u64) & ip_mask(ex, i);
        return branch(ex, t);
    }
    Ok(())
}

/// Jcc with the condition fixed at decode time (the flag evaluation folds to one test).
const JCC: [Handler; 16] = [
    jcc_n::<0>,
    jcc_n::<1>,
    jcc_n::<2>,
    jcc_n::<3>,
    jcc_n::<4>,
    jcc_n::<5>,
    jcc_n::<6>,
    jcc_n::<7>,
    jcc_n::<8>,
    jcc_n::<9>,
    jcc_n::<10>,
    jcc_n::<11>,
    jcc_n::<12>,
    jcc_n::<13>,
    jcc_n::<14>,
    jcc_n::<15>,
];

fn jcc_n<const CC: u8>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    if ex.cond(CC) {
        let t = ex.c.next_rip.wrapping_add(i.rel as u64) & ip_mask(ex, i);
        return branch(ex, t);
    }
    Ok(())
}

fn jmp_ind(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let t = ex.read_op(i, 0)? & ip_mask(ex, i);
    branch(ex, t)
}

/// The operand size of a near CALL/RET (what it pushes or pops): 2, 4 or 8 bytes as
/// iced decodes it (Intel: 64-bit mode ignores an operand-size prefix on near branches).
fn stack_size(ins: &Instruction) -> usize {
    use iced_x86::Code::*;
    match ins.code() {
        Call_rel16 | Retnw | Retnw_imm16 => 2,
        Call_rel32_64 | Retnq | Retnq_imm16 => 8,
        _ => 4,
    }
}

/// CALL rel with the operand size `N` fixed at decode time; `FLAT`: SS was flat then.
fn call_rel<const FLAT: bool, const N: usize>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let ret = ex.c.next_rip;
    let t = ret.wrapping_add(i.rel as u64) & ip_mask(ex, i);
    if !ex.c.long64 && t > ex.s.seg[CS as usize].limit as u64 {
        return Err(Fault::gp0());
    }
    ex.push_f::<FLAT, N>(ret)?;
    ex.c.next_rip = t;
    Ok(())
}

fn call_ind(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let ret = ex.c.next_rip;
    let t = ex.read_op(i, 0)? & ip_mask(ex, i);
    if !ex.c.long64 && t > ex.s.seg[CS as usize].limit as u64 {
        return Err(Fault::gp0());
    }
    ex.push(ret, i.osize)?;
    ex.c.next_rip = t;
    Ok(())
}

/// RET [imm16] (`IMM`) with the operand size `N` fixed at decode time; `FLAT`: SS was
/// flat then.
fn ret_near<const FLAT: bool, const IMM: bool, const N: usize>(
    ex: &mut Exec<'_>,
    i: &Insn,
) -> XResult {
    let t = ex.peek_f::<FLAT, N>(0)? & ip_mask(ex, i);
    branch(ex, t)?;
    let extra = if IMM { i.imm } else { 0 };
    ex.s.gpr[4] = ex.sp_add(N as i64 + extra as i64);
    Ok(())
}

fn loop_<const KIND: u8>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let m = size_mask(i.asize);
    let c = ex.s.gpr[1].wrapping_sub(1) & m;
    let take = c != 0
        && match KIND {
            1 => ex.cond(4),
            2 => ex.cond(5),
            _ => true,
        };
    if take {
        let t = ex.c.next_rip.wrapping_add(i.rel as u64) & ip_mask(ex, i);
        branch(ex, t)?;
    }
    ex.set_reg(1, i.asize, c);
    Ok(())
}

fn jcxz(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    if ex.s.gpr[1] & size_mask(i.asize) == 0 {
        let t = ex.c.next_rip.wrapping_add(i.rel as u64) & ip_mask(ex, i);
        return branch(ex, t);
    }
    Ok(())
}

fn int_n(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    interrupts::software_interrupt(ex, i.imm as u8, true)
}

fn int3(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    interrupts::software_interrupt(ex, fault::BP, false)
}

fn int1(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    let ret = ex.c.next_rip;
    interrupts::deliver(ex, fault::DB, interrupts::Source::External, ret)?;
    ex.c.next_rip = ex.s.rip;
    Ok(())
}

fn into(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    if ex.c.long64 {
        return Err(Fault::ud());
    }
    if ex.rflags() & OF != 0 {
        return interrupts::software_interrupt(ex, fault::OF, false);
    }
    Ok(())
}

fn bound(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    if i.ops[1].kind != K_MEM {
        return Err(Fault::ud());
    }
    let size = i.ops[0].size;
    let sh = 64 - size as u32 * 8;
    let idx = ((ex.read_op(i, 0)? << sh) as i64) >> sh;
    let off = ex.ea(i);
    let lo = ((ex.read_mem(i.mem.seg, off, size)? << sh) as i64) >> sh;
    let hi = ((ex.read_mem(
        i.mem.seg,
        off.wrapping_add(size as u64) & size_mask(i.asize),
        size,
    )? << sh) as i64)
        >> sh;
    if idx < lo || idx > hi {
        return Err(Fault::new(fault::BR));
    }
    Ok(())
}

// ---- far transfers -------------------------------------------------------------------------

/// Selector and offset of a far JMP/CALL operand.
fn far_target(ex: &mut Exec<'_>, i: &Insn) -> XResult<(u16, u64, u8)> {
    if i.ops[0].kind == K_MEM {
        let size = (i.ops[0].size - 2).clamp(2, 8);
        let off = ex.ea(i);
        let o = ex.read_mem(i.mem.seg, off, size)?;
        let sel = ex.read_mem(
            i.mem.seg,
            off.wrapping_add(size as u64) & size_mask(i.asize),
            2,
        )? as u16;
        Ok((sel, o, size))
    } else {
        Ok((i.imm2() as u16, i.imm, i.ops[0].size))
    }
}

fn jmp_far(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let (sel, off, size) = far_target(ex, i)?;
    if !ex.protected() {
        ex.set_cs_real(sel);
        ex.c.next_rip = off & size_mask(size);
        return Ok(());
    }
    far_transfer(ex, sel, off, size, false)
}

fn call_far(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let (sel, off, size) = far_target(ex, i)?;
    if !ex.protected() {
        let ret = ex.c.next_rip;
        let cs = ex.s.seg[CS as usize].selector as u64;
        let sp = ex.s.gpr[4];
        ex.push(cs, size)?;
        if let Err(e) = ex.push(ret, size) {
            ex.s.gpr[4] = sp;
            return Err(e);
        }
        ex.set_cs_real(sel);
        ex.c.next_rip = off & size_mask(size);
        return Ok(());
    }
    far_transfer(ex, sel, off, size, true)
}

/// Protected-mode far JMP/CALL: code segment, call gate, task gate or TSS.
fn far_transfer(ex: &mut Exec<'_>, sel: u16, off: u64, size: u8, call: bool) -> XResult {
    let err = sel as u32 & 0xFFFC;
    if sel & !3 == 0 {
        return Err(Fault::gp0());
    }
    let d = ex.read_descriptor(sel)?;
    let cpl = ex.s.cpl;
    let rpl = (sel & 3) as u8;
    if d.is_code_data() {
        if !d.is_code() {
            return Err(Fault::gp(err));
        }
        let conforming = d.typ() & 4 != 0;
        if (conforming && d.dpl() > cpl) || (!conforming && (rpl > cpl || d.dpl() != cpl)) {
            return Err(Fault::gp(err));
        }
        if !d.present() {
            return Err(Fault::np(err));
        }
        let target_mask = if ex.long_mode() && d.attr() & 0x200 != 0 {
            u64::MAX
        } else {
            size_mask(size)
        };
        let target = off & target_mask;
        if d.attr() & 0x200 == 0 && target > d.limit() as u64 {
            return Err(Fault::gp0());
        }
        if call {
            let ret = ex.c.next_rip;
            let cs = ex.s.seg[CS as usize].selector as u64;
            let sp = ex.s.gpr[4];
            ex.push(cs, size)?;
            if let Err(e) = ex.push(ret, size) {
                ex.s.gpr[4] = sp;
                return Err(e);
            }
        }
        ex.set_cs(sel, &d, cpl)?;
        ex.c.next_rip = target;
        return Ok(());
    }
    // System descriptor.
    let typ = d.typ();
    match typ {
        0x4 | 0xC => call_gate(ex, sel, &d, call),
        0x5 => {
            if d.dpl() < cpl.max(rpl) {
                return Err(Fault::gp(err));
            }
            if !d.present() {
                return Err(Fault::np(err));
            }
            let tss = (d.lo >> 16) as u16;
            let ret = ex.c.next_rip;
            task::switch_task(
                ex,
                tss,
                if call {
                    SwitchKind::Call
                } else {
                    SwitchKind::Jmp
                },
                ret,
                None,
                0,
            )
        }
        0x9 | 0x1 => {
            if d.dpl() < cpl.max(rpl) {
                return Err(Fault::gp(err));
            }
            let ret = ex.c.next_rip;
            task::switch_task(
                ex,
                sel,
                if call {
                    SwitchKind::Call
                } else {
                    SwitchKind::Jmp
                },
                ret,
                None,
                0,
            )
        }
        _ => Err(Fault::gp(err)),
    }
}

fn call_gate(ex: &mut Exec<'_>, gsel: u16, g: &Descriptor, call: bool) -> XResult {
    let err = gsel as u32 & 0xFFFC;
    let cpl = ex.s.cpl;
    let rpl = (gsel & 3) as u8;
    if g.dpl() < cpl.max(rpl) {
        return Err(Fault::gp(err));
    }
    if !g.present() {
        return Err(Fault::np(err));
    }
    let long = ex.long_mode();
    let tsel = (g.lo >> 16) as u16;
    let mut off = ((g.lo & 0xFFFF) | (g.hi & 0xFFFF_0000)) as u64;
    if long {
        if g.typ() != 0xC {
            return Err(Fault::gp(err));
        }
        off |= (ex.read_descriptor_high(gsel)? as u64) << 32;
    }
    let gate32 = g.typ() == 0xC;
    if !gate32 {
        off &= 0xFFFF;
    }
    let terr = tsel as u32 & 0xFFFC;
    if tsel & !3 == 0 {
        return Err(Fault::gp0());
    }
    let d = ex.read_descriptor(tsel)?;
    if !d.is_code() || d.dpl() > cpl {
        return Err(Fault::gp(terr));
    }
    if long && (d.attr() & 0x200 == 0 || d.attr() & 0x400 != 0) {
        return Err(Fault::gp(terr));
    }
    if !d.present() {
        return Err(Fault::np(terr));
    }
    let conforming = d.typ() & 4 != 0;
    let size: u8 = if long {
        8
    } else if gate32 {
        4
    } else {
        2
    };
    let ret = ex.c.next_rip;
    let old_cs = ex.s.seg[CS as usize].selector as u64;
    if !call {
        if !conforming && d.dpl() != cpl {
            return Err(Fault::gp(terr));
        }
        ex.set_cs(tsel, &d, cpl)?;
        ex.c.next_rip = off;
        return Ok(());
    }
    if !conforming && d.dpl() < cpl {
        // Inner-privilege call: switch stacks and copy parameters.
        let new_cpl = d.dpl();
        let old_ss = ex.s.seg[SS as usize].selector as u64;
        let old_sp = ex.s.gpr[4];
        let params = (g.hi & 0x1F) as u64;
        let mut copied = [0u64; 32];
        if !long {
            for (k, p) in copied.iter_mut().enumerate().take(params as usize) {
                *p = ex.peek(k as u64 * size as u64, size)?;
            }
        }
        let saved = (ex.s.seg, ex.s.gpr[4], ex.s.cpl);
        let r = (|| -> XResult {
            if long {
                let rsp = ex.read_sys(ex.s.tr.base.wrapping_add(4 + 8 * new_cpl as u64), 8)?;
                let ss = &mut ex.s.seg[SS as usize];
                ss.selector = new_cpl as u16;
                ss.base = 0;
                ss.limit = 0xFFFF_FFFF;
                ss.attr = 0x93 | ((new_cpl as u16) << 5);
                ex.s.gpr[4] = rsp;
            } else {
                let (ss, esp) = task::stack_from_tss(ex, new_cpl)?;
                interrupts::load_stack_for_cpl(ex, ss, new_cpl)?;
                ex.set_sp_for_new_ss(esp);
            }
            ex.set_cs(tsel, &d, new_cpl)?;
            ex.push(old_ss, size)?;
            ex.push(old_sp, size)?;
            for k in (0..params as usize).rev() {
                if !long {
                    ex.push(copied[k], size)?;
                }
            }
            ex.push(old_cs, size)?;
            ex.push(ret, size)
        })();
        if let Err(e) = r {
            ex.s.seg = saved.0;
            ex.s.gpr[4] = saved.1;
            ex.set_cpl(saved.2);
            return Err(e);
        }
    } else {
        let sp = ex.s.gpr[4];
        ex.push(old_cs, size)?;
        if let Err(e) = ex.push(ret, size) {
            ex.s.gpr[4] = sp;
            return Err(e);
        }
        ex.set_cs(tsel, &d, cpl)?;
    }
    ex.c.next_rip = off;
    Ok(())
}

fn ret_far(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.osize;
    let extra = if i.ops[0].kind != K_NONE { i.imm } else { 0 };
    let ip = ex.peek(0, size)?;
    let sel = ex.peek(size as u64, size)? as u16;
    if !ex.protected() {
        ex.s.gpr[4] = ex.sp_add(2 * size as i64 + extra as i64);
        ex.set_cs_real(sel);
        ex.c.next_rip = ip & size_mask(size);
        return Ok(());
    }
    let err = sel as u32 & 0xFFFC;
    if sel & !3 == 0 {
        return Err(Fault::gp0());
    }
    let d = ex.read_descriptor(sel)?;
    let cpl = ex.s.cpl;
    let rpl = (sel & 3) as u8;
    if !d.is_code() || rpl < cpl {
        return Err(Fault::gp(err));
    }
    let conforming = d.typ() & 4 != 0;
    if (conforming && d.dpl() > rpl) || (!conforming && d.dpl() != rpl) {
        return Err(Fault::gp(err));
    }
    if !d.present() {
        return Err(Fault::np(err));
    }
    let to64 = ex.long_mode() && d.attr() & 0x200 != 0;
    let ip = if to64 { ip } else { ip & size_mask(size) };
    if rpl > cpl {
        let sp = ex.peek(2 * size as u64 + extra, size)?;
        let ss = ex.peek(3 * size as u64 + extra, size)? as u16;
        let saved = (ex.s.seg, ex.s.gpr[4], ex.s.cpl);
        let r = (|| -> XResult {
            ex.set_cs(sel, &d, rpl)?;
            if ss & !3 == 0 && ex.long_mode() && to64 {
                let s = &mut ex.s.seg[SS as usize];
                s.selector = ss;
                s.attr = 0x93 | ((rpl as u16) << 5);
                crate::seg::refresh_seg(ex, SS);
            } else {
                ex.load_seg(SS, ss)?;
            }
            Ok(())
        })();
        if let Err(e) = r {
            ex.s.seg = saved.0;
            ex.s.gpr[4] = saved.1;
            ex.set_cpl(saved.2);
            return Err(e);
        }
        // The outer stack pointer plus the parameter bytes, at the outer SS's width.
        ex.set_sp_for_new_ss(sp.wrapping_add(extra));
        ex.invalidate_segs_for_cpl();
    } else {
        ex.s.gpr[4] = ex.sp_add(2 * size as i64 + extra as i64);
        ex.set_cs(sel, &d, cpl)?;
    }
    ex.c.next_rip = ip;
    Ok(())
}
