//! Hardware task switching through 32-bit and 16-bit TSSs (task gates, JMP/CALL to a TSS, IRET with
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

/// The register image of a task as stored in its TSS (either format).
struct TaskImage {
    eip: u64,
    eflags: u64,
    gpr: [u64; 8],
    /// ES, CS, SS, DS, FS, GS (a 16-bit TSS has no FS/GS: they load as null).
    sels: [u16; 6],
    ldt: u16,
    /// CR3 of a 32-bit TSS; a 16-bit TSS leaves CR3 alone.
    cr3: Option<u64>,
}

/// Offsets of the dynamic fields; a 16-bit (286) TSS keeps them as words.
fn is_tss16(typ: u8) -> bool {
    typ & 8 == 0
}

fn read_task_image(ex: &mut Exec<'_>, base: u64, tss16: bool) -> XResult<TaskImage> {
    let at = |off: u64| base.wrapping_add(off) & 0xFFFF_FFFF;
    if tss16 {
        let mut w = [0u16; 22];
        for (k, v) in w.iter_mut().enumerate() {
            *v = ex.read_sys(at(2 * k as u64), 2)? as u16;
        }
        // The 386 loads the word registers of a 286 task with ones in the upper halves
        // (test386 POST 22 checks EAX..EDI = FFFFxxxx).
        let mut gpr = [0u64; 8];
        for (r, g) in gpr.iter_mut().enumerate() {
            *g = 0xFFFF_0000 | w[9 + r] as u64;
        }
        Ok(TaskImage {
            eip: w[7] as u64,
            eflags: w[8] as u64,
            gpr,
            sels: [w[17], w[18], w[19], w[20], 0, 0],
            ldt: w[21],
            cr3: None,
        })
    } else {
        let mut t = [0u32; 26];
        for (k, v) in t.iter_mut().enumerate() {
            *v = ex.read_sys(at(4 * k as u64), 4)? as u32;
        }
        let mut gpr = [0u64; 8];
        for (r, g) in gpr.iter_mut().enumerate() {
            *g = t[10 + r] as u64;
        }
        Ok(TaskImage {
            eip: t[8] as u64,
            eflags: t[9] as u64,
            gpr,
            sels: [
                t[18] as u16,
                t[19] as u16,
                t[20] as u16,
                t[21] as u16,
                t[22] as u16,
                t[23] as u16,
            ],
            ldt: t[24] as u16,
            cr3: Some(t[7] as u64),
        })
    }
}

/// Save the outgoing task's dynamic fields in its own TSS format.
fn save_task_image(ex: &mut Exec<'_>, base: u64, tss16: bool, eip: u64, eflags: u64) -> XResult {
    let at = |off: u64| base.wrapping_add(off) & 0xFFFF_FFFF;
    let regs = ex.s.gpr;
    let sels: [u64; 6] = std::array::from_fn(|s| ex.s.seg[s].selector as u64);
    if tss16 {
        ex.write_sys(at(0x0E), 2, eip & 0xFFFF)?;
        ex.write_sys(at(0x10), 2, eflags & 0xFFFF)?;
        for (r, v) in regs.iter().take(8).enumerate() {
            ex.write_sys(at(0x12 + 2 * r as u64), 2, v & 0xFFFF)?;
        }
        for (s, v) in sels.iter().take(4).enumerate() {
            ex.write_sys(at(0x22 + 2 * s as u64), 2, *v)?;
        }
    } else {
        ex.write_sys(at(0x20), 4, eip)?;
        ex.write_sys(at(0x24), 4, eflags)?;
        for (r, v) in regs.iter().take(8).enumerate() {
            ex.write_sys(at(0x28 + 4 * r as u64), 4, *v)?;
        }
        for (s, v) in sels.iter().enumerate() {
            ex.write_sys(at(0x48 + 4 * s as u64), 2, *v)?;
        }
    }
    Ok(())
}

/// Switch to the TSS `sel` (32-bit or 16-bit). `ret` is the EIP saved in the outgoing TSS.
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
    let ok_type = if want_busy {
        typ == 0xB || typ == 0x3
    } else {
        typ == 0x9 || typ == 0x1
    };
    if d.is_code_data() || !ok_type {
        return Err(if kind == SwitchKind::Iret {
            Fault::ts(err)
        } else {
            Fault::gp(err)
        });
    }
    if !d.present() {
        return Err(Fault::np(err));
    }
    let new16 = is_tss16(typ);
    if d.limit() < if new16 { 0x2B } else { 0x67 } {
        return Err(Fault::ts(err));
    }
    let new_base = d.base();
    // Read the whole incoming TSS first so a fault leaves the old task intact.
    let t = read_task_image(ex, new_base, new16)?;
    // Save the outgoing task.
    let old = ex.s.tr;
    let mut fl = ex.rflags();
    // Only IRET clears NT in the saved image; JMP leaves it as it was (SDM "Task
    // Switching"; the 386/486 manuals' "JMP clears NT" is a misprint, test386 POST 22).
    if kind == SwitchKind::Iret {
        fl &= !NT;
    }
    save_task_image(ex, old.base, is_tss16(old.attr as u8 & 0xF), ret, fl)?;
    if kind != SwitchKind::Call {
        // Clear the old TSS's busy bit.
        let a = gdt_desc_addr(ex, old.selector) + 4;
        let hi = ex.read_sys(a, 4)?;
        ex.write_sys(a, 4, hi & !(1 << 9))?;
    }
    let mut new_flags = t.eflags;
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
    if let Some(cr3) = t.cr3
        && ex.s.cr0 & CR0_PG != 0
    {
        ex.s.cr3 = cr3;
        ex.c.tlb.flush_non_global();
    }
    ex.s.cr0 |= CR0_TS;
    ex.s.gpr[..8].copy_from_slice(&t.gpr);
    ex.set_rflags(new_flags | 2);
    ex.s.rip = t.eip;
    ex.c.next_rip = ex.s.rip;
    let v86 = new_flags & VM != 0;
    let sels = t.sels;
    let ldt = t.ldt;
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
