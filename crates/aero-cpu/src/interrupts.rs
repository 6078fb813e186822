//! Exception and interrupt delivery in every mode, #DF escalation, triple fault, IRET.

use crate::exec::{Exec, Insn};
use crate::fault::{self, Fault, XResult, escalates};
use crate::flags::{self, AC, IF, IOPL, NT, RF, TF, VIF, VIP, VM};
use crate::seg::{CS, DS, ES, FS, GS, SS, refresh_mode};
use crate::state::Segment;

/// What caused the delivery; decides DPL checks, EXT bit and return address.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Source {
    /// INTR/NMI: EXT=1, no gate DPL check.
    External,
    /// CPU exception with optional error code: EXT=1.
    Exception(Option<u32>),
    /// INT n / INT3 / INTO: gate DPL is checked against CPL.
    Software,
}

/// Deliver an exception raised by an instruction (RIP points at it), escalating to #DF
/// and to a triple fault as the SDM prescribes.
pub fn raise_exception(ex: &mut Exec<'_>, f: Fault) {
    ex.c.last_exception = Some(f.vector);
    let rip = ex.s.rip;
    let mut current = f;
    // A fault during delivery of `current` is handled serially or escalates.
    for _ in 0..3 {
        match deliver(
            ex,
            current.vector,
            Source::Exception(current.error_code()),
            rip,
        ) {
            Ok(()) => return,
            Err(second) => {
                if current.vector == fault::DF {
                    break;
                }
                ex.c.last_exception = Some(second.vector);
                current = if escalates(current.vector, second.vector) {
                    Fault::with_code(fault::DF, 0)
                } else {
                    second
                };
            }
        }
    }
    ex.c.events |= crate::core::EV_SHUTDOWN;
    ex.c.shutdown = Some(format!(
        "triple fault (last exception {:#x})",
        current.vector
    ));
    ex.c.end_block = true;
}

/// Deliver an external interrupt or NMI at the current RIP (between instructions).
pub fn deliver_external(ex: &mut Exec<'_>, vector: u8) {
    let rip = ex.s.rip;
    if let Err(f) = deliver(ex, vector, Source::External, rip) {
        raise_exception(ex, f);
    }
}

/// #DB trap after an instruction (single-step and/or data breakpoints in `dr6_bits`).
pub fn debug_trap(ex: &mut Exec<'_>, dr6_bits: u64) {
    ex.s.dr[6] = (ex.s.dr[6] & !0xF) | dr6_bits;
    let rip = ex.s.rip;
    if let Err(f) = deliver(ex, fault::DB, Source::Exception(None), rip) {
        raise_exception(ex, f);
    }
}

/// Deliver interrupt `vector`; `ret` is the RIP pushed as the return address.
pub fn deliver(ex: &mut Exec<'_>, vector: u8, src: Source, ret: u64) -> XResult {
    ex.c.end_block = true;
    ex.s.halted = false;
    if ex.s.cr0 & 1 == 0 {
        return deliver_real(ex, vector, src, ret);
    }
    // Keep everything needed to undo a half-done delivery.
    let saved_seg = ex.s.seg;
    let saved_rsp = ex.s.gpr[4];
    let saved_cpl = ex.s.cpl;
    let saved_flags = ex.rflags();
    let r = if ex.long_mode() {
        deliver_long(ex, vector, src, ret)
    } else {
        deliver_protected(ex, vector, src, ret)
    };
    if r.is_err() {
        ex.s.seg = saved_seg;
        ex.s.gpr[4] = saved_rsp;
        ex.s.cpl = saved_cpl;
        ex.set_rflags(saved_flags);
        refresh_mode(ex);
    }
    r
}

fn ext_bit(src: Source) -> u32 {
    if src == Source::Software { 0 } else { 1 }
}

fn deliver_real(ex: &mut Exec<'_>, vector: u8, _src: Source, ret: u64) -> XResult {
    let off = vector as u64 * 4;
    if off + 3 > ex.s.idtr.limit as u64 {
        return Err(Fault::gp(vector as u32 * 8 + 2));
    }
    let ivt = ex.read_sys(ex.s.idtr.base.wrapping_add(off), 4)?;
    let fl = ex.rflags();
    let saved_rsp = ex.s.gpr[4];
    let r = (|| {
        ex.push(fl & 0xFFFF, 2)?;
        ex.push(ex.s.seg[CS as usize].selector as u64, 2)?;
        ex.push(ret & 0xFFFF, 2)
    })();
    if let Err(e) = r {
        ex.s.gpr[4] = saved_rsp;
        return Err(e);
    }
    ex.set_rflags(fl & !(IF | TF | AC | RF));
    ex.set_cs_real((ivt >> 16) as u16);
    ex.s.rip = ivt & 0xFFFF;
    Ok(())
}

struct Gate {
    selector: u16,
    offset: u64,
    typ: u8,
    dpl: u8,
    present: bool,
    ist: u8,
}

fn deliver_protected(ex: &mut Exec<'_>, vector: u8, src: Source, ret: u64) -> XResult {
    let ext = ext_bit(src);
    let gate_err = vector as u32 * 8 + 2 + ext;
    let off = vector as u64 * 8;
    if off + 7 > ex.s.idtr.limit as u64 {
        return Err(Fault::gp(gate_err));
    }
    let raw = ex.read_sys(ex.s.idtr.base.wrapping_add(off) & 0xFFFF_FFFF, 8)?;
    let gate = Gate {
        selector: (raw >> 16) as u16,
        offset: (raw & 0xFFFF) | ((raw >> 32) & 0xFFFF_0000),
        typ: ((raw >> 40) & 0x1F) as u8,
        dpl: ((raw >> 45) & 3) as u8,
        present: raw & (1 << 47) != 0,
        ist: 0,
    };
    if !matches!(gate.typ, 0x05 | 0x06 | 0x07 | 0x0E | 0x0F) {
        return Err(Fault::gp(gate_err));
    }
    if src == Source::Software && gate.dpl < ex.s.cpl {
        return Err(Fault::gp(gate_err));
    }
    if !gate.present {
        return Err(Fault::np(gate_err));
    }
    if gate.typ == 0x05 {
        let code = match src {
            Source::Exception(c) => c,
            _ => None,
        };
        return crate::task::switch_via_gate(ex, gate.selector, ret, code, ext);
    }
    let gate32 = gate.typ & 8 != 0;
    let trap = gate.typ & 1 != 0;
    let offset = if gate32 {
        gate.offset
    } else {
        gate.offset & 0xFFFF
    };
    let code = match src {
        Source::Exception(c) => c,
        _ => None,
    };
    enter_handler(ex, &gate, offset, gate32, trap, code, ret, ext, false)
}

fn deliver_long(ex: &mut Exec<'_>, vector: u8, src: Source, ret: u64) -> XResult {
    let ext = ext_bit(src);
    let gate_err = vector as u32 * 8 + 2 + ext;
    let off = vector as u64 * 16;
    if off + 15 > ex.s.idtr.limit as u64 {
        return Err(Fault::gp(gate_err));
    }
    let base = ex.s.idtr.base.wrapping_add(off);
    let lo = ex.read_sys(base, 8)?;
    let hi = ex.read_sys(base.wrapping_add(8), 8)?;
    let gate = Gate {
        selector: (lo >> 16) as u16,
        offset: (lo & 0xFFFF) | ((lo >> 32) & 0xFFFF_0000) | (hi << 32),
        typ: ((lo >> 40) & 0x1F) as u8,
        dpl: ((lo >> 45) & 3) as u8,
        present: lo & (1 << 47) != 0,
        ist: ((lo >> 32) & 7) as u8,
    };
    if !matches!(gate.typ, 0x0E | 0x0F) {
        return Err(Fault::gp(gate_err));
    }
    if src == Source::Software && gate.dpl < ex.s.cpl {
        return Err(Fault::gp(gate_err));
    }
    if !gate.present {
        return Err(Fault::np(gate_err));
    }
    let code = match src {
        Source::Exception(c) => c,
        _ => None,
    };
    enter_handler(
        ex,
        &gate,
        gate.offset,
        true,
        gate.typ & 1 != 0,
        code,
        ret,
        ext,
        true,
    )
}

/// Common part of interrupt/trap gate delivery: target CS checks, stack switch, frame.
#[allow(clippy::too_many_arguments)]
fn enter_handler(
    ex: &mut Exec<'_>,
    gate: &Gate,
    offset: u64,
    gate32: bool,
    trap: bool,
    code: Option<u32>,
    ret: u64,
    ext: u32,
    long: bool,
) -> XResult {
    let sel = gate.selector;
    let sel_err = (sel as u32 & 0xFFFC) + ext;
    if sel & !3 == 0 {
        return Err(Fault::gp(ext));
    }
    let d = ex.read_descriptor(sel).map_err(|_| Fault::gp(sel_err))?;
    let cpl = ex.s.cpl;
    if !d.is_code() || d.dpl() > cpl {
        return Err(Fault::gp(sel_err));
    }
    if !d.present() {
        return Err(Fault::np(sel_err));
    }
    if long && (d.attr() & 0x200 == 0 || d.attr() & 0x400 != 0) {
        return Err(Fault::gp(sel_err));
    }
    let conforming = d.typ() & 4 != 0;
    let old_flags = ex.rflags();
    let from_v86 = old_flags & VM != 0;
    let new_cpl = if conforming { cpl } else { d.dpl() };
    let old_ss = ex.s.seg[SS as usize].selector;
    let old_rsp = ex.s.gpr[4];
    let old_cs = ex.s.seg[CS as usize].selector;
    let size: u8 = if long {
        8
    } else if gate32 {
        4
    } else {
        2
    };

    if from_v86 && new_cpl != 0 {
        return Err(Fault::gp(sel_err));
    }
    let switch_stack = new_cpl < cpl || (long && gate.ist != 0);
    if from_v86 {
        // Leave V86 before touching the ring-0 stack so refresh_mode keeps CPL 0.
        ex.s.rflags &= !VM;
    }
    if switch_stack {
        if long {
            let tss_off = if gate.ist != 0 {
                0x24 + 8 * (gate.ist as u64 - 1)
            } else {
                4 + 8 * new_cpl as u64
            };
            if tss_off + 7 > ex.s.tr.limit as u64 {
                return Err(Fault::ts(ex.s.tr.selector as u32 & 0xFFFC));
            }
            let rsp = ex.read_sys(ex.s.tr.base.wrapping_add(tss_off), 8)?;
            if new_cpl < cpl {
                let ss = &mut ex.s.seg[SS as usize];
                ss.selector = new_cpl as u16;
                ss.base = 0;
                ss.limit = 0xFFFF_FFFF;
                ss.attr = 0x93 | ((new_cpl as u16) << 5);
            }
            ex.s.gpr[4] = rsp & !0xF;
        } else {
            let (ss_sel, esp) = crate::task::stack_from_tss(ex, new_cpl)?;
            load_stack_for_cpl(ex, ss_sel, new_cpl)?;
            ex.set_sp_for_new_ss(esp);
        }
        // The new stack is written with supervisor rights at the new CPL.
        ex.s.cpl = new_cpl;
        refresh_mode(ex);
    } else if long {
        ex.s.gpr[4] &= !0xF;
    }
    // 64-bit mode has a fixed frame: it needs the mode cache to use 8-byte stack slots.
    if long {
        // Temporarily run with a 64-bit code segment so push() uses 64-bit RSP.
        ex.s.seg[CS as usize] = d.segment((sel & !3) | new_cpl as u16);
        ex.s.cpl = new_cpl;
        refresh_mode(ex);
    }
    let push_old_stack = long || new_cpl < cpl;
    if from_v86 {
        for s in [GS, FS, DS, ES] {
            let v = ex.s.seg[s as usize].selector as u64;
            ex.push(v, size)?;
        }
    }
    if push_old_stack {
        ex.push(old_ss as u64, size)?;
        ex.push(old_rsp, size)?;
    }
    ex.push(old_flags, size)?;
    ex.push(old_cs as u64, size)?;
    ex.push(ret, size)?;
    if let Some(c) = code {
        ex.push(c as u64, size)?;
    }
    if from_v86 {
        for s in [GS, FS, DS, ES] {
            ex.s.seg[s as usize] = Segment {
                selector: 0,
                base: 0,
                limit: 0,
                attr: 0,
            };
        }
    }
    let mut nf = old_flags & !(TF | NT | RF | VM);
    if !trap {
        nf &= !IF;
    }
    ex.set_rflags(nf);
    ex.set_cs(sel, &d, new_cpl)?;
    ex.s.rip = offset;
    Ok(())
}

/// Load SS for an inner-privilege stack from a TSS, with #TS checks.
pub fn load_stack_for_cpl(ex: &mut Exec<'_>, ss_sel: u16, cpl: u8) -> XResult {
    let err = ss_sel as u32 & 0xFFFC;
    if ss_sel & !3 == 0 {
        return Err(Fault::ts(err));
    }
    let d = ex.read_descriptor(ss_sel).map_err(|_| Fault::ts(err))?;
    let writable = d.is_code_data() && !d.is_code() && d.typ() & 2 != 0;
    if (ss_sel & 3) as u8 != cpl || d.dpl() != cpl || !writable {
        return Err(Fault::ts(err));
    }
    if !d.present() {
        return Err(Fault::ss(err));
    }
    ex.set_accessed(ss_sel, &d)?;
    let mut seg = d.segment(ss_sel);
    seg.attr |= 1;
    ex.s.seg[SS as usize] = seg;
    crate::seg::refresh_seg(ex, SS);
    Ok(())
}

/// INT n, INT3, INTO: software interrupts return to the next instruction. Only INT n is
/// IOPL-sensitive in V86 mode (`iopl_sensitive`).
pub fn software_interrupt(ex: &mut Exec<'_>, vector: u8, iopl_sensitive: bool) -> XResult {
    if iopl_sensitive && ex.v86() && ex.s.rflags & IOPL != IOPL {
        return Err(Fault::gp0());
    }
    let ret = ex.c.next_rip;
    deliver(ex, vector, Source::Software, ret)?;
    // deliver() set RIP to the handler; the run loop must not advance it.
    ex.c.next_rip = ex.s.rip;
    Ok(())
}

/// Apply a POPF/IRET flags image with the privilege rules of the current mode.
pub fn write_flags_checked(ex: &mut Exec<'_>, new: u64, size: u8, allow_vm: bool) {
    let old = ex.rflags();
    let cpl = ex.s.cpl;
    let iopl = ((old & IOPL) >> 12) as u8;
    let mut changeable = flags::STATUS | TF | flags::DF | NT | AC | flags::ID | IF | IOPL;
    if ex.s.cr0 & 1 != 0 {
        if ex.v86() || cpl > 0 {
            changeable &= !IOPL;
        }
        if !ex.v86() && cpl > iopl {
            changeable &= !IF;
        }
    }
    if allow_vm {
        changeable |= VM | VIF | VIP;
    }
    let size_mask = match size {
        2 => 0xFFFF,
        4 => 0xFFFF_FFFF,
        _ => u64::MAX,
    };
    changeable &= size_mask;
    let nf = (old & !changeable) | (new & changeable);
    ex.set_rflags(nf & !RF);
    if (old ^ nf) & (IF | TF | VM) != 0 {
        ex.c.end_block = true;
    }
    if (old ^ nf) & VM != 0 {
        refresh_mode(ex);
    }
}

/// IRET/IRETD/IRETQ.
pub fn iret(ex: &mut Exec<'_>, i: &Insn) -> XResult {
    let size = i.osize;
    ex.c.nmi_blocked = false;
    ex.c.end_block = true;
    if ex.s.cr0 & 1 == 0 {
        return iret_real(ex, size);
    }
    if ex.v86() {
        if ex.s.rflags & IOPL != IOPL {
            return Err(Fault::gp0());
        }
        return iret_real(ex, size);
    }
    let fl = ex.rflags();
    if fl & NT != 0 && !ex.long_mode() {
        return crate::task::task_return(ex);
    }
    let new_ip = ex.peek(0, size)?;
    let cs_sel = ex.peek(size as u64, size)? as u16;
    let new_flags = ex.peek(2 * size as u64, size)?;
    let cpl = ex.s.cpl;
    if !ex.long_mode() && size == 4 && new_flags & VM != 0 && cpl == 0 {
        return iret_to_v86(ex, new_ip, cs_sel, new_flags);
    }
    if cs_sel & !3 == 0 {
        return Err(Fault::gp0());
    }
    let rpl = (cs_sel & 3) as u8;
    let err = cs_sel as u32 & 0xFFFC;
    if rpl < cpl {
        return Err(Fault::gp(err));
    }
    let d = ex.read_descriptor(cs_sel)?;
    if !d.is_code() {
        return Err(Fault::gp(err));
    }
    let conforming = d.typ() & 4 != 0;
    if (conforming && d.dpl() > rpl) || (!conforming && d.dpl() != rpl) {
        return Err(Fault::gp(err));
    }
    if !d.present() {
        return Err(Fault::np(err));
    }
    let to_64 = ex.long_mode() && d.attr() & 0x200 != 0;
    let outer = rpl > cpl || ex.c.long64;
    if outer {
        let new_sp = ex.peek(3 * size as u64, size)?;
        let ss_sel = ex.peek(4 * size as u64, size)? as u16;
        // Validate the outer SS before committing anything.
        let null_ok = ex.long_mode() && to_64 && rpl < 3;
        let ss_desc = if ss_sel & !3 == 0 {
            if !null_ok {
                return Err(Fault::gp0());
            }
            None
        } else {
            let sd = ex.read_descriptor(ss_sel)?;
            let writable = sd.is_code_data() && !sd.is_code() && sd.typ() & 2 != 0;
            if (ss_sel & 3) as u8 != rpl || sd.dpl() != rpl || !writable {
                return Err(Fault::gp(ss_sel as u32 & 0xFFFC));
            }
            if !sd.present() {
                return Err(Fault::ss(ss_sel as u32 & 0xFFFC));
            }
            Some(sd)
        };
        write_flags_checked(ex, new_flags, size, false);
        ex.s.rflags |= new_flags & RF;
        ex.set_cs(cs_sel, &d, rpl)?;
        match ss_desc {
            Some(sd) => {
                ex.set_accessed(ss_sel, &sd)?;
                let mut seg = sd.segment(ss_sel);
                seg.attr |= 1;
                ex.s.seg[SS as usize] = seg;
            }
            None => {
                let ss = &mut ex.s.seg[SS as usize];
                ss.selector = ss_sel;
                ss.base = 0;
                ss.limit = 0xFFFF_FFFF;
                ss.attr = 0x93 | ((rpl as u16) << 5);
            }
        }
        ex.set_sp_for_new_ss(new_sp);
        if rpl > cpl {
            ex.invalidate_segs_for_cpl();
        }
        refresh_mode(ex);
    } else {
        let nsp = ex.sp_add(3 * size as i64);
        write_flags_checked(ex, new_flags, size, false);
        ex.s.rflags |= new_flags & RF & crate::flags::size_mask(size);
        ex.set_cs(cs_sel, &d, rpl)?;
        ex.s.gpr[4] = nsp;
    }
    ex.s.rip = if to_64 || size == 8 {
        new_ip
    } else {
        new_ip & 0xFFFF_FFFF
    };
    if size == 2 {
        ex.s.rip &= 0xFFFF;
    }
    ex.c.next_rip = ex.s.rip;
    Ok(())
}

fn iret_real(ex: &mut Exec<'_>, size: u8) -> XResult {
    let ip = ex.peek(0, size)?;
    let cs = ex.peek(size as u64, size)? as u16;
    let fl = ex.peek(2 * size as u64, size)?;
    if size == 4 && ip > ex.s.seg[CS as usize].limit as u64 && ex.s.cr0 & 1 == 0 {
        return Err(Fault::gp0());
    }
    let nsp = ex.sp_add(3 * size as i64);
    ex.s.gpr[4] = nsp;
    let fl = if size == 4 {
        (fl & 0x257FD5) | (ex.rflags() & 0x1A_0000)
    } else {
        fl
    };
    write_flags_checked(ex, fl, size, false);
    ex.set_cs_real(cs);
    ex.s.rip = ip;
    ex.c.next_rip = ip;
    Ok(())
}

fn iret_to_v86(ex: &mut Exec<'_>, ip: u64, cs: u16, fl: u64) -> XResult {
    let esp = ex.peek(12, 4)?;
    let ss = ex.peek(16, 4)? as u16;
    let es = ex.peek(20, 4)? as u16;
    let ds = ex.peek(24, 4)? as u16;
    let fs = ex.peek(28, 4)? as u16;
    let gs = ex.peek(32, 4)? as u16;
    ex.set_rflags(fl | VM);
    ex.s.cpl = 3;
    for (s, v) in [(ES, es), (DS, ds), (FS, fs), (GS, gs), (SS, ss), (CS, cs)] {
        ex.s.seg[s as usize] = Segment {
            selector: v,
            base: (v as u64) << 4,
            limit: 0xFFFF,
            attr: 0xF3,
        };
    }
    ex.s.seg[CS as usize].attr = 0xFB;
    ex.s.gpr[4] = esp & 0xFFFF_FFFF;
    ex.s.rip = ip & 0xFFFF;
    ex.c.next_rip = ex.s.rip;
    refresh_mode(ex);
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::fault::{DE, GP, NP, PF, UD, escalates};

    #[test]
    fn double_fault_table() {
        assert!(escalates(GP, NP));
        assert!(escalates(PF, PF));
        assert!(escalates(PF, GP));
        assert!(!escalates(GP, PF));
        assert!(!escalates(UD, GP));
        assert!(escalates(DE, GP));
    }
}
