//! Hardware task switching through 32-bit TSSs (task gates, JMP/CALL to a TSS, IRET with
//! NT) and the inner-stack lookup used by privilege-changing interrupts and calls.

use crate::exec::Exec;
use crate::fault::{Fault, XResult};
use crate::flags::{NT, VM};
use crate::mmu::{CR0_PG, CR0_TS};
use crate::seg::{CS, DS, Descriptor, ES, FS, GS, SS, refresh_mode};
use crate::state::Segment;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SwitchKind {
    Jmp,
    Call,
    Iret,
}

/// SS:ESP for privilege level `cpl` from the current TSS.
pub fn stack_from_tss(ex: &mut Exec<'_>, cpl: u8) -> XResult<(u16, u64)> {
    let tr = ex.s.tr;
    let ts = Fault::ts(tr.selector as u32 & 0xFFFC);
    let typ = tr.attr & 0xF;
    if typ == 0x9 || typ == 0xB {
        let off = 4 + 8 * cpl as u64;
        if off + 7 > tr.limit as u64 {
            return Err(ts);
        }
        let esp = ex.read_sys(tr.base.wrapping_add(off) & 0xFFFF_FFFF, 4)?;
        let ss = ex.read_sys(tr.base.wrapping_add(off + 4) & 0xFFFF_FFFF, 2)? as u16;
        Ok((ss, esp))
    } else {
        let off = 2 + 4 * cpl as u64;
        if off + 3 > tr.limit as u64 {
            return Err(ts);
        }
        let sp = ex.read_sys(tr.base.wrapping_add(off) & 0xFFFF_FFFF, 2)?;
        let ss = ex.read_sys(tr.base.wrapping_add(off + 2) & 0xFFFF_FFFF, 2)? as u16;
        Ok((ss, sp))
    }
}

/// Interrupt/exception through a task gate.
pub fn switch_via_gate(
    ex: &mut Exec<'_>,
    tss_sel: u16,
    ret: u64,
    code: Option<u32>,
    ext: u32,
) -> XResult {
    switch_task(ex, tss_sel, SwitchKind::Call, ret, code, ext)
}

/// IRET with NT=1: return to the task in the back link.
pub fn task_return(ex: &mut Exec<'_>) -> XResult {
    let back = ex.read_sys(ex.s.tr.base & 0xFFFF_FFFF, 2)? as u16;
    let ret = ex.c.next_rip;
    switch_task(ex, back, SwitchKind::Iret, ret, None, 0)?;
    ex.c.next_rip = ex.s.rip;
    Ok(())
}

fn gdt_desc_addr(ex: &Exec<'_>, sel: u16) -> u64 {
    ex.s.gdtr.base.wrapping_add((sel & !7) as u64) & 0xFFFF_FFFF
}

/// Switch to the 32-bit TSS `sel`. `ret` is the EIP saved in the outgoing TSS.
pub fn switch_task(
    ex: &mut Exec<'_>,
    sel: u16,
    kind: SwitchKind,
    ret: u64,
    code: Option<u32>,
    ext: u32,
) -> XResult {
    let err = (sel as u32 & 0xFFFC) + ext;
    if sel & 4 != 0 || sel & !3 == 0 {
        return Err(Fault::ts(err));
    }
    let d = ex.read_descriptor(sel).map_err(|_| Fault::ts(err))?;
    let typ = d.typ();
    let want_busy = kind == SwitchKind::Iret;
    let ok_type = if want_busy { typ == 0xB } else { typ == 0x9 };
    if d.is_code_data() || !ok_type {
        if typ == 0x1 || typ == 0x3 {
            tracing::warn!("16-bit TSS task switch is not implemented");
        }
        return Err(if kind == SwitchKind::Iret {
            Fault::ts(err)
        } else {
            Fault::gp(err)
        });
    }
    if !d.present() {
        return Err(Fault::np(err));
    }
    if d.limit() < 0x67 {
        return Err(Fault::ts(err));
    }
    let new_base = d.base();
    // Read the whole incoming TSS first so a fault leaves the old task intact.
    let mut t = [0u32; 26];
    for (k, v) in t.iter_mut().enumerate() {
        *v = ex.read_sys(new_base.wrapping_add(4 * k as u64) & 0xFFFF_FFFF, 4)? as u32;
    }
    // Save the outgoing task.
    let old = ex.s.tr;
    let mut fl = ex.rflags();
    if kind != SwitchKind::Call {
        fl &= !NT;
    }
    let ob = old.base;
    let regs = ex.s.gpr;
    ex.write_sys(ob.wrapping_add(0x20) & 0xFFFF_FFFF, 4, ret)?;
    ex.write_sys(ob.wrapping_add(0x24) & 0xFFFF_FFFF, 4, fl)?;
    for r in 0..8 {
        ex.write_sys(
            ob.wrapping_add(0x28 + 4 * r as u64) & 0xFFFF_FFFF,
            4,
            regs[r],
        )?;
    }
    for s in 0..6 {
        let v = ex.s.seg[s].selector as u64;
        ex.write_sys(ob.wrapping_add(0x48 + 4 * s as u64) & 0xFFFF_FFFF, 2, v)?;
    }
    if kind != SwitchKind::Call {
        // Clear the old TSS's busy bit.
        let a = gdt_desc_addr(ex, old.selector) + 4;
        let hi = ex.read_sys(a, 4)?;
        ex.write_sys(a, 4, hi & !(1 << 9))?;
    }
    let mut new_flags = t[9] as u64;
    if kind == SwitchKind::Call {
        ex.write_sys(new_base & 0xFFFF_FFFF, 2, old.selector as u64)?;
        new_flags |= NT;
    }
    if kind != SwitchKind::Iret {
        let a = gdt_desc_addr(ex, sel) + 4;
        ex.write_sys(a, 4, (d.hi | (1 << 9)) as u64)?;
    }
    // Load the incoming task.
    ex.s.tr = Segment {
        selector: sel,
        base: new_base,
        limit: d.limit(),
        attr: d.attr() | 0x2,
    };
    if ex.s.cr0 & CR0_PG != 0 {
        ex.s.cr3 = t[7] as u64;
        ex.c.tlb.flush_non_global();
    }
    ex.s.cr0 |= CR0_TS;
    for r in 0..8 {
        ex.s.gpr[r] = t[10 + r] as u64;
    }
    ex.set_rflags(new_flags | 2);
    ex.s.rip = t[8] as u64;
    ex.c.next_rip = ex.s.rip;
    let v86 = new_flags & VM != 0;
    let sels = [
        t[18] as u16,
        t[19] as u16,
        t[20] as u16,
        t[21] as u16,
        t[22] as u16,
        t[23] as u16,
    ];
    let ldt = t[24] as u16;
    // Load LDTR first: segment selectors may refer to it.
    if ldt & !3 == 0 {
        ex.s.ldtr = Segment {
            selector: 0,
            base: 0,
            limit: 0,
            attr: 0,
        };
    } else {
        let ld = ex
            .read_descriptor(ldt & !4)
            .map_err(|_| Fault::ts(ldt as u32 & 0xFFFC))?;
        if ld.is_code_data() || ld.typ() != 2 || !ld.present() {
            return Err(Fault::ts(ldt as u32 & 0xFFFC));
        }
        ex.s.ldtr = ld.segment(ldt);
    }
    if v86 {
        ex.s.cpl = 3;
        for (s, v) in sels.iter().enumerate() {
            ex.s.seg[s] = Segment {
                selector: *v,
                base: (*v as u64) << 4,
                limit: 0xFFFF,
                attr: 0xF3,
            };
        }
        ex.s.seg[CS as usize].attr = 0xFB;
        refresh_mode(ex);
    } else {
        let cs_sel = sels[CS as usize];
        let cpl = (cs_sel & 3) as u8;
        let cd = load_task_seg(ex, cs_sel)?;
        if !cd.is_code() {
            return Err(Fault::ts(cs_sel as u32 & 0xFFFC));
        }
        ex.s.seg[CS as usize] = cd.segment(cs_sel);
        ex.s.cpl = cpl;
        refresh_mode(ex);
        for s in [SS, DS, ES, FS, GS] {
            let v = sels[s as usize];
            if v & !3 == 0 {
                if s == SS {
                    return Err(Fault::ts(0));
                }
                ex.s.seg[s as usize] = Segment {
                    selector: v,
                    base: 0,
                    limit: 0,
                    attr: 0,
                };
                continue;
            }
            let sd = load_task_seg(ex, v)?;
            ex.s.seg[s as usize] = sd.segment(v);
        }
        refresh_mode(ex);
    }
    ex.c.end_block = true;
    if let Some(c) = code {
        let size = if d.typ() & 8 != 0 { 4 } else { 2 };
        ex.push(c as u64, size)?;
    }
    Ok(())
}

fn load_task_seg(ex: &mut Exec<'_>, sel: u16) -> XResult<Descriptor> {
    let d = ex
        .read_descriptor(sel)
        .map_err(|_| Fault::ts(sel as u32 & 0xFFFC))?;
    if !d.is_code_data() {
        return Err(Fault::ts(sel as u32 & 0xFFFC));
    }
    if !d.present() {
        return Err(Fault::np(sel as u32 & 0xFFFC));
    }
    Ok(d)
}
