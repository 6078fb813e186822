//! System instructions: descriptor tables, control/debug registers, LAR/LSL/VERR/VERW,
//! ARPL, HLT, flag instructions (CLI/STI/CLC...), INVLPG, cache control, SWAPGS,
//! SYSCALL/SYSRET, SYSENTER/SYSEXIT, RDTSC/RDTSCP/RDPMC.

use super::{Exec, Handler, Insn, K_CR, K_DR, K_MEM, K_REG};
use crate::fault::{Fault, XResult};
use crate::flags::{CF, DF, IF, IOPL, RF, VM, ZF, size_mask};
use crate::mmu::*;
use crate::seg::{CS, Descriptor, GS, SS, refresh_mode};
use crate::state::Segment;
use iced_x86::{Instruction, Mnemonic};

pub fn lookup(ins: &Instruction) -> Option<Handler> {
    use Mnemonic::*;
    Some(match ins.mnemonic() {
        Mov => mov_crdr,
        Lgdt | Lidt => lgdt_lidt,
        Sgdt | Sidt => sgdt_sidt,
        Lldt => lldt,
        Ltr => ltr,
        Sldt => sldt,
        Str => str_,
        Smsw => smsw,
        Lmsw => lmsw,
        Clts => clts,
        Lar => lar,
        Lsl => lsl,
        Verr => verr::<false>,
        Verw => verr::<true>,
        Arpl => arpl,
        Hlt => hlt,
        Cli => cli,
        Sti => sti,
        Clc => clc,
        Stc => stc,
        Cmc => cmc,
        Cld => cld,
        Std => std_,
        Invlpg => invlpg,
        Invd | Wbinvd => wbinvd,
        Swapgs => swapgs,
        Syscall => syscall,
        Sysret | Sysretq => sysret,
        Sysenter => sysenter,
        Sysexit | Sysexitq => sysexit,
        Rdtsc => rdtsc,
        Rdtscp => rdtscp,
        Rdpmc => rdpmc,
        Wait => wait,
        _ => return None,
    })
}

fn require_cpl0(ex: &Exec<'_>) -> XResult {
    if ex.s.cr0 & 1 != 0 && (ex.s.cpl != 0 || ex.v86()) {
        return Err(Fault::gp0());
    }
    Ok(())
}

fn wait(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    if ex.s.cr0 & (CR0_MP | CR0_TS) == (CR0_MP | CR0_TS) {
        return Err(Fault::nm());
    }
    Ok(())
}

// ---- control and debug registers ------------------------------------------------------------

fn mov_crdr(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    require_cpl0(ex)?;
    let size = if ex.c.long64 { 8 } else { 4 };
    let (dst, src) = (i.ops[0], i.ops[1]);
    match (dst.kind, src.kind) {
        (K_REG, K_CR) => {
            let v = match src.reg {
                0 => ex.s.cr0,
                2 => ex.s.cr2,
                3 => ex.s.cr3,
                4 => ex.s.cr4,
                8 => match ex.bus.task_priority() {
                    Some(tpr) => tpr as u64 & 0xF,
                    None => ex.s.cr8,
                },
                _ => return Err(Fault::ud()),
            };
            ex.set_reg(dst.reg, size, v);
            Ok(())
        }
        (K_CR, K_REG) => {
            let v = ex.reg(src.reg, size);
            write_cr(ex, dst.reg, v)
        }
        (K_REG, K_DR) => {
            let r = dr_index(ex, src.reg)?;
            let v = ex.s.dr[r];
            ex.set_reg(dst.reg, size, v);
            Ok(())
        }
        (K_DR, K_REG) => {
            let r = dr_index(ex, dst.reg)?;
            let v = ex.reg(src.reg, size);
            ex.s.dr[r] = match r {
                6 => (v & 0xE00F) | 0xFFFF_0FF0,
                7 => (v & 0xFFFF_2BFF) | 0x400,
                _ => v,
            };
            ex.refresh_breakpoints();
            ex.c.end_block = true;
            Ok(())
        }
        _ => Err(Fault::ud()),
    }
}

fn dr_index(ex: &Exec<'_>, r: u8) -> XResult<usize> {
    match r {
        0..=3 | 6 | 7 => Ok(r as usize),
        4 | 5 if ex.s.cr4 & CR4_DE == 0 => Ok(r as usize + 2),
        _ => Err(Fault::ud()),
    }
}

/// CR4 bits this CPU implements.
const CR4_KNOWN: u64 = CR4_VME
    | CR4_PVI
    | CR4_TSD
    | CR4_DE
    | CR4_PSE
    | CR4_PAE
    | CR4_MCE
    | CR4_PGE
    | CR4_PCE
    | CR4_OSFXSR
    | CR4_OSXMMEXCPT;

pub fn write_cr(ex: &mut Exec<'_>, n: u8, v: u64) -> XResult {
    ex.c.end_block = true;
    match n {
        0 => {
            let v = (v & 0xFFFF_FFFF) | CR0_ET;
            if v & CR0_PG != 0 && v & CR0_PE == 0 {
                return Err(Fault::gp0());
            }
            if v & CR0_NW != 0 && v & CR0_CD == 0 {
                return Err(Fault::gp0());
            }
            let old = ex.s.cr0;
            if v & CR0_PG != 0 && old & CR0_PG == 0 && ex.s.efer & EFER_LME != 0 {
                if ex.s.cr4 & CR4_PAE == 0 {
                    return Err(Fault::gp0());
                }
                ex.s.efer |= EFER_LMA;
            }
            if v & CR0_PG == 0 && old & CR0_PG != 0 && ex.s.efer & EFER_LMA != 0 {
                if ex.c.long64 {
                    return Err(Fault::gp0());
                }
                ex.s.efer &= !EFER_LMA;
            }
            ex.s.cr0 = v;
            if (old ^ v) & (CR0_PG | CR0_WP | CR0_PE) != 0 {
                ex.c.tlb.flush_all();
            }
            refresh_mode(ex);
        }
        2 => ex.s.cr2 = v,
        3 => {
            ex.s.cr3 = if ex.long_mode() {
                v & 0x000F_FFFF_FFFF_FFFF
            } else {
                v & 0xFFFF_FFFF
            };
            ex.c.tlb.flush_non_global();
        }
        4 => {
            if v & !CR4_KNOWN != 0 {
                return Err(Fault::gp0());
            }
            if ex.long_mode() && v & CR4_PAE == 0 {
                return Err(Fault::gp0());
            }
            let old = ex.s.cr4;
            ex.s.cr4 = v;
            if (old ^ v) & (CR4_PGE | CR4_PAE | CR4_PSE) != 0 {
                ex.c.tlb.flush_all();
            }
        }
        8 => {
            if v & !0xF != 0 {
                return Err(Fault::gp0());
            }
            ex.s.cr8 = v;
            ex.bus.task_priority_written(v as u8);
        }
        _ => return Err(Fault::ud()),
    }
    Ok(())
}

fn smsw(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let v = if i.ops[0].kind == K_MEM {
        ex.s.cr0 & 0xFFFF
    } else {
        ex.s.cr0
    };
    ex.write_op(i, 0, v & size_mask(i.ops[0].size))
}

fn lmsw(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    require_cpl0(ex)?;
    let v = ex.read_op(i, 0)? & 0xF;
    // LMSW can set PE but never clear it.
    let nv = (ex.s.cr0 & !0xE) | (v & 0xE) | (v & 1) | (ex.s.cr0 & 1);
    write_cr(ex, 0, nv)
}

fn clts(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    require_cpl0(ex)?;
    ex.s.cr0 &= !CR0_TS;
    Ok(())
}

// ---- descriptor tables ------------------------------------------------------------------------

fn lgdt_lidt(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    require_cpl0(ex)?;
    if i.ops[0].kind != K_MEM {
        return Err(Fault::ud());
    }
    let off = ex.ea(i);
    let am = size_mask(i.asize);
    let limit = ex.read_mem(i.mem.seg, off, 2)? as u16;
    let base = if ex.c.long64 {
        ex.read_mem(i.mem.seg, off.wrapping_add(2) & am, 8)?
    } else {
        let b = ex.read_mem(i.mem.seg, off.wrapping_add(2) & am, 4)?;
        if i.osize == 2 { b & 0xFF_FFFF } else { b }
    };
    let t = crate::state::DescriptorTable { base, limit };
    if i.raw.mnemonic() == Mnemonic::Lgdt {
        ex.s.gdtr = t;
    } else {
        ex.s.idtr = t;
    }
    Ok(())
}

fn sgdt_sidt(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    if i.ops[0].kind != K_MEM {
        return Err(Fault::ud());
    }
    let t = if i.raw.mnemonic() == Mnemonic::Sgdt {
        ex.s.gdtr
    } else {
        ex.s.idtr
    };
    let off = ex.ea(i);
    let am = size_mask(i.asize);
    let bsize = if ex.c.long64 { 8 } else { 4 };
    // Check both parts before writing either.
    ex.lin(i.mem.seg, off.wrapping_add(2) & am, bsize, true)?;
    ex.write_mem(i.mem.seg, off, 2, t.limit as u64)?;
    ex.write_mem(i.mem.seg, off.wrapping_add(2) & am, bsize, t.base)
}

fn sldt(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    if !ex.protected() {
        return Err(Fault::ud());
    }
    let v = ex.s.ldtr.selector as u64;
    ex.write_op(i, 0, v)
}

fn str_(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    if !ex.protected() {
        return Err(Fault::ud());
    }
    let v = ex.s.tr.selector as u64;
    ex.write_op(i, 0, v)
}

/// Read a system descriptor from the GDT (16 bytes in long mode).
fn system_descriptor(ex: &mut Exec<'_>, sel: u16) -> XResult<(Descriptor, u64)> {
    if sel & 4 != 0 {
        return Err(Fault::gp(sel as u32 & 0xFFFC));
    }
    let d = ex.read_descriptor(sel)?;
    let mut base = d.base();
    if ex.long_mode() {
        base |= (ex.read_descriptor_high(sel)? as u64) << 32;
    }
    Ok((d, base))
}

fn lldt(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    if !ex.protected() {
        return Err(Fault::ud());
    }
    require_cpl0(ex)?;
    let sel = ex.read_op(i, 0)? as u16;
    if sel & !3 == 0 {
        ex.s.ldtr = Segment {
            selector: sel,
            base: 0,
            limit: 0,
            attr: 0,
        };
        return Ok(());
    }
    let (d, base) = system_descriptor(ex, sel)?;
    if d.is_code_data() || d.typ() != 2 {
        return Err(Fault::gp(sel as u32 & 0xFFFC));
    }
    if !d.present() {
        return Err(Fault::np(sel as u32 & 0xFFFC));
    }
    ex.s.ldtr = Segment {
        selector: sel,
        base,
        limit: d.limit(),
        attr: d.attr(),
    };
    Ok(())
}

fn ltr(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    if !ex.protected() {
        return Err(Fault::ud());
    }
    require_cpl0(ex)?;
    let sel = ex.read_op(i, 0)? as u16;
    if sel & !3 == 0 {
        return Err(Fault::gp0());
    }
    let (d, base) = system_descriptor(ex, sel)?;
    let ok = if ex.long_mode() {
        d.typ() == 9
    } else {
        d.typ() == 9 || d.typ() == 1
    };
    if d.is_code_data() || !ok {
        return Err(Fault::gp(sel as u32 & 0xFFFC));
    }
    if !d.present() {
        return Err(Fault::np(sel as u32 & 0xFFFC));
    }
    let addr = ex.s.gdtr.base.wrapping_add((sel & !7) as u64 + 4);
    ex.write_sys(addr, 4, (d.hi | (1 << 9)) as u64)?;
    ex.s.tr = Segment {
        selector: sel,
        base,
        limit: d.limit(),
        attr: d.attr() | 2,
    };
    Ok(())
}

// ---- LAR/LSL/VERR/VERW/ARPL ----------------------------------------------------------------

/// Descriptor visible at the current privilege for LAR/LSL/VERx, or None (ZF=0).
fn visible_descriptor(ex: &mut Exec<'_>, sel: u16, lsl: bool) -> XResult<Option<Descriptor>> {
    if sel & !3 == 0 {
        return Ok(None);
    }
    let d = match ex.read_descriptor(sel) {
        Ok(d) => d,
        Err(f) if f.vector == crate::fault::GP => return Ok(None),
        Err(f) => return Err(f),
    };
    if !d.is_code_data() {
        let ok = match d.typ() {
            1 | 2 | 3 | 9 | 0xB => true,
            4 | 5 | 0xC => !lsl && (!ex.long_mode() || d.typ() == 0xC),
            _ => false,
        };
        if !ok {
            return Ok(None);
        }
    }
    let conforming_code = d.is_code() && d.typ() & 4 != 0;
    let rpl = (sel & 3) as u8;
    if !conforming_code && d.dpl() < ex.s.cpl.max(rpl) {
        return Ok(None);
    }
    Ok(Some(d))
}

fn set_zf(ex: &mut Exec<'_>, on: bool) {
    ex.materialize_flags();
    if on {
        ex.s.rflags |= ZF;
    } else {
        ex.s.rflags &= !ZF;
    }
}

fn lar(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    if !ex.protected() {
        return Err(Fault::ud());
    }
    let sel = ex.read_op(i, 1)? as u16;
    match visible_descriptor(ex, sel, false)? {
        Some(d) => {
            ex.write_op(i, 0, (d.hi & 0x00F0_FF00) as u64 & size_mask(i.ops[0].size))?;
            set_zf(ex, true);
        }
        None => set_zf(ex, false),
    }
    Ok(())
}

fn lsl(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    if !ex.protected() {
        return Err(Fault::ud());
    }
    let sel = ex.read_op(i, 1)? as u16;
    match visible_descriptor(ex, sel, true)? {
        Some(d) => {
            ex.write_op(i, 0, d.limit() as u64 & size_mask(i.ops[0].size))?;
            set_zf(ex, true);
        }
        None => set_zf(ex, false),
    }
    Ok(())
}

fn verr<const WRITE: bool>(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    if !ex.protected() {
        return Err(Fault::ud());
    }
    let sel = ex.read_op(i, 0)? as u16;
    let ok = match visible_descriptor(ex, sel, false)? {
        Some(d) if d.is_code_data() => {
            if WRITE {
                !d.is_code() && d.typ() & 2 != 0
            } else {
                !d.is_code() || d.typ() & 2 != 0
            }
        }
        _ => false,
    };
    set_zf(ex, ok);
    Ok(())
}

fn arpl(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    if !ex.protected() {
        return Err(Fault::ud());
    }
    // The destination is written only when its RPL is raised: an unchanged memory operand
    // is just read, so a read-only data segment does not fault then (as on a 386).
    let dst = ex.read_op(i, 0)?;
    let src = ex.read_op(i, 1)?;
    if dst & 3 < src & 3 {
        let loc = ex.rmw_loc(i, 0)?;
        ex.loc_write(loc, (dst & !3) | (src & 3))?;
        set_zf(ex, true);
    } else {
        set_zf(ex, false);
    }
    Ok(())
}

// ---- flags, HLT, caches -----------------------------------------------------------------------

fn hlt(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    require_cpl0(ex)?;
    ex.s.halted = true;
    ex.c.end_block = true;
    Ok(())
}

/// CLI/STI are IOPL-sensitive in protected and V86 mode.
fn check_iopl(ex: &Exec<'_>) -> XResult {
    if ex.s.cr0 & 1 != 0 {
        let iopl = ((ex.s.rflags & IOPL) >> 12) as u8;
        let cpl = if ex.v86() { 3 } else { ex.s.cpl };
        if cpl > iopl {
            return Err(Fault::gp0());
        }
    }
    Ok(())
}

fn cli(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    check_iopl(ex)?;
    ex.s.rflags &= !IF;
    Ok(())
}

fn sti(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    check_iopl(ex)?;
    if ex.s.rflags & IF == 0 {
        ex.s.rflags |= IF;
        ex.c.events |= crate::core::EV_SHADOW_ARMED;
        ex.c.end_block = true;
    }
    Ok(())
}

fn clc(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    ex.materialize_flags();
    ex.s.rflags &= !CF;
    Ok(())
}

fn stc(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    ex.materialize_flags();
    ex.s.rflags |= CF;
    Ok(())
}

fn cmc(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    ex.materialize_flags();
    ex.s.rflags ^= CF;
    Ok(())
}

fn cld(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    ex.s.rflags &= !DF;
    Ok(())
}

fn std_(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    ex.s.rflags |= DF;
    Ok(())
}

fn invlpg(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    require_cpl0(ex)?;
    if i.ops[0].kind != K_MEM {
        return Err(Fault::ud());
    }
    let off = ex.ea(i);
    let lin = ex.c.segc[i.mem.seg as usize % 6].base.wrapping_add(off) & ex.c.lin_mask;
    ex.c.tlb.flush_page(lin);
    ex.c.end_block = true;
    Ok(())
}

fn wbinvd(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    require_cpl0(ex)
}

fn swapgs(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    if !ex.c.long64 {
        return Err(Fault::ud());
    }
    require_cpl0(ex)?;
    std::mem::swap(
        &mut ex.c.msr.kernel_gs_base,
        &mut ex.s.seg[GS as usize].base,
    );
    crate::seg::refresh_seg(ex, GS);
    Ok(())
}

// ---- fast system calls ----------------------------------------------------------------------

fn flat(sel: u16, code: bool, dpl: u8, long: bool) -> Segment {
    let ty = if code { 0xB } else { 0x3 };
    let mut attr = 0x90 | ty | ((dpl as u16) << 5) | 0x800;
    if code && long {
        attr |= 0x200;
    } else {
        attr |= 0x400;
    }
    Segment {
        selector: sel,
        base: 0,
        limit: 0xFFFF_FFFF,
        attr,
    }
}

fn syscall(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    if ex.s.efer & EFER_SCE == 0 || !ex.long_mode() {
        return Err(Fault::ud());
    }
    let star = ex.c.msr.star;
    let sel = ((star >> 32) & 0xFFFC) as u16;
    let fl = ex.rflags();
    ex.s.gpr[1] = ex.c.next_rip;
    ex.s.gpr[11] = fl & !RF;
    let target = if ex.c.long64 {
        ex.c.msr.lstar
    } else {
        ex.c.msr.cstar
    };
    ex.set_rflags(fl & !ex.c.msr.sfmask & !(RF | VM));
    ex.s.seg[CS as usize] = flat(sel, true, 0, true);
    ex.s.seg[SS as usize] = flat(sel.wrapping_add(8), false, 0, false);
    ex.set_cpl(0);
    ex.c.next_rip = target;
    Ok(())
}

fn sysret(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    if ex.s.efer & EFER_SCE == 0 || !ex.long_mode() {
        return Err(Fault::ud());
    }
    if !ex.c.long64 || ex.s.cpl != 0 {
        return Err(Fault::gp0());
    }
    let base = ((ex.c.msr.star >> 48) & 0xFFFF) as u16;
    let to64 = i.osize == 8;
    let rip = if to64 {
        ex.s.gpr[1]
    } else {
        ex.s.gpr[1] & 0xFFFF_FFFF
    };
    if to64 && ((rip as i64) << 16 >> 16) as u64 != rip {
        return Err(Fault::gp0());
    }
    let cs = if to64 { base.wrapping_add(16) } else { base } | 3;
    let r11 = ex.s.gpr[11];
    write_flags_raw(ex, (r11 & 0x3C_7FD7) | 2);
    let mut c = flat(cs, true, 3, to64);
    if !to64 {
        c.attr = (c.attr & !0x200) | 0x400;
    }
    ex.s.seg[CS as usize] = c;
    // SS keeps the selector semantics of STAR[63:48]+8 with RPL 3.
    ex.s.seg[SS as usize] = flat(base.wrapping_add(8) | 3, false, 3, false);
    ex.set_cpl(3);
    ex.c.next_rip = rip;
    Ok(())
}

fn write_flags_raw(ex: &mut Exec<'_>, v: u64) {
    ex.set_rflags(v);
    ex.c.end_block = true;
}

fn sysenter(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    if !ex.protected() {
        return Err(Fault::gp0());
    }
    let cs = (ex.c.msr.sysenter_cs & 0xFFFC) as u16;
    if cs == 0 {
        return Err(Fault::gp0());
    }
    let long = ex.long_mode();
    let fl = ex.rflags();
    ex.set_rflags(fl & !(VM | IF | RF));
    ex.s.seg[CS as usize] = flat(cs, true, 0, long);
    ex.s.seg[SS as usize] = flat(cs.wrapping_add(8), false, 0, false);
    ex.s.gpr[4] = if long {
        ex.c.msr.sysenter_esp
    } else {
        ex.c.msr.sysenter_esp & 0xFFFF_FFFF
    };
    ex.set_cpl(0);
    ex.c.next_rip = if long {
        ex.c.msr.sysenter_eip
    } else {
        ex.c.msr.sysenter_eip & 0xFFFF_FFFF
    };
    Ok(())
}

fn sysexit(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let cs0 = (ex.c.msr.sysenter_cs & 0xFFFC) as u16;
    if !ex.protected() || ex.s.cpl != 0 || cs0 == 0 {
        return Err(Fault::gp0());
    }
    let to64 = i.osize == 8;
    let cs = if to64 {
        cs0.wrapping_add(32)
    } else {
        cs0.wrapping_add(16)
    } | 3;
    ex.s.seg[CS as usize] = flat(cs, true, 3, to64);
    if !to64 {
        ex.s.seg[CS as usize].attr = (ex.s.seg[CS as usize].attr & !0x200) | 0x400;
    }
    ex.s.seg[SS as usize] = flat(cs.wrapping_add(8), false, 3, false);
    let m = if to64 { u64::MAX } else { 0xFFFF_FFFF };
    ex.s.gpr[4] = ex.s.gpr[1] & m;
    ex.set_cpl(3);
    ex.c.next_rip = ex.s.gpr[2] & m;
    Ok(())
}

// ---- time stamp counter -----------------------------------------------------------------------

impl Exec<'_> {
    pub fn read_tsc(&mut self) -> u64 {
        self.bus.sync_time(self.c.retired_now());
        self.bus.tsc().wrapping_add(self.c.msr.tsc_offset)
    }
}

fn rdtsc(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    if ex.s.cr4 & CR4_TSD != 0 && ex.s.cpl != 0 && ex.s.cr0 & 1 != 0 {
        return Err(Fault::gp0());
    }
    let t = ex.read_tsc();
    ex.set_reg(0, 4, t);
    ex.set_reg(2, 4, t >> 32);
    Ok(())
}

fn rdtscp(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    // The advertised model has no RDTSCP.
    if !super::cpuid::HAS_RDTSCP {
        return Err(Fault::ud());
    }
    rdtsc(ex, i)?;
    let aux = ex.c.msr.tsc_aux;
    ex.set_reg(1, 4, aux);
    Ok(())
}

fn rdpmc(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    // No performance counters are advertised: every index is invalid.
    let _ = ex;
    Err(Fault::gp0())
}
