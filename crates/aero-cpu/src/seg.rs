//! Segmentation: descriptor fetch, segment register loads with their privilege checks,
//! and the derived mode caches (code size, CPL-dependent page permissions).

use crate::core::SegCache;
use crate::exec::Exec;
use crate::fault::{Fault, XResult};
use crate::flags;
use crate::mmu::{self, EFER_LMA};
use crate::state::{CpuState, Segment};

pub const ES: u8 = 0;
pub const CS: u8 = 1;
pub const SS: u8 = 2;
pub const DS: u8 = 3;
pub const FS: u8 = 4;
pub const GS: u8 = 5;

/// A descriptor as read from the GDT/LDT.
#[derive(Clone, Copy, Debug, Default)]
pub struct Descriptor {
    pub lo: u32,
    pub hi: u32,
}

impl Descriptor {
    pub fn base(&self) -> u64 {
        ((self.lo >> 16) | ((self.hi & 0xFF) << 16) | (self.hi & 0xFF00_0000)) as u64
    }
    pub fn limit(&self) -> u32 {
        let raw = (self.lo & 0xFFFF) | (self.hi & 0xF_0000);
        if self.hi & (1 << 23) != 0 {
            (raw << 12) | 0xFFF
        } else {
            raw
        }
    }
    /// Attribute bits in [`Segment::attr`] layout.
    pub fn attr(&self) -> u16 {
        (((self.hi >> 8) & 0xFF) | (((self.hi >> 20) & 0xF) << 8)) as u16
    }
    pub fn present(&self) -> bool {
        self.hi & (1 << 15) != 0
    }
    pub fn dpl(&self) -> u8 {
        ((self.hi >> 13) & 3) as u8
    }
    /// S bit: code/data (true) or system (false).
    pub fn is_code_data(&self) -> bool {
        self.hi & (1 << 12) != 0
    }
    pub fn typ(&self) -> u8 {
        ((self.hi >> 8) & 0xF) as u8
    }
    pub fn is_code(&self) -> bool {
        self.is_code_data() && self.typ() & 8 != 0
    }
    pub fn segment(&self, selector: u16) -> Segment {
        Segment {
            selector,
            base: self.base(),
            limit: self.limit(),
            attr: self.attr(),
        }
    }
}

pub fn seg_cache(s: &CpuState, i: usize, long64: bool) -> SegCache {
    let sg = &s.seg[i];
    if long64 {
        let base = if i >= FS as usize { sg.base } else { 0 };
        return SegCache::new(base, 0, u64::MAX, true, true);
    }
    let real_like = s.cr0 & 1 == 0 || s.rflags & flags::VM != 0;
    if real_like {
        return SegCache::new(sg.base, 0, sg.limit as u64, true, true);
    }
    let present = sg.attr & 0x80 != 0 && sg.attr & 0x10 != 0;
    let ty = sg.attr & 0xF;
    let code = ty & 8 != 0;
    let readable = present && (!code || ty & 2 != 0);
    let writable = present && !code && ty & 2 != 0;
    let (lo, hi) = if !code && ty & 4 != 0 {
        (
            sg.limit as u64 + 1,
            if sg.db() { 0xFFFF_FFFF } else { 0xFFFF },
        )
    } else {
        (0, sg.limit as u64)
    };
    SegCache::new(sg.base, lo, hi, readable, writable)
}

/// Recompute everything derived from CR0/EFER/CS/CPL/segments.
pub fn refresh_mode(ex: &mut Exec<'_>) {
    let pe = ex.s.cr0 & 1 != 0;
    let vm = ex.s.rflags & flags::VM != 0;
    if !pe {
        ex.s.cpl = 0;
    } else if vm {
        ex.s.cpl = 3;
    }
    let cs = ex.s.seg[CS as usize];
    let long64 = pe && !vm && ex.s.efer & EFER_LMA != 0 && cs.long();
    ex.c.long64 = long64;
    ex.c.bitness = if long64 {
        64
    } else if !vm && cs.db() {
        32
    } else {
        16
    };
    ex.c.lin_mask = if long64 { u64::MAX } else { 0xFFFF_FFFF };
    ex.c.user = ex.s.cpl == 3;
    ex.c.need_r = mmu::need_bit(mmu::Access::Read, ex.c.user);
    ex.c.need_w = mmu::need_bit(mmu::Access::Write, ex.c.user);
    if ex.c.breakpoints.data {
        // No fast-path bit matches: every access is checked in the slow path.
        ex.c.need_r = 0x80;
        ex.c.need_w = 0x80;
    }
    for i in 0..6 {
        ex.c.segc[i] = seg_cache(ex.s, i, long64);
    }
    refresh_flat(ex);
    ex.c.end_block = true;
}

/// Refresh the cache of one segment register after it was loaded.
pub fn refresh_seg(ex: &mut Exec<'_>, i: u8) {
    if i == CS {
        refresh_mode(ex);
    } else {
        ex.c.segc[i as usize % 6] = seg_cache(ex.s, i as usize % 6, ex.c.long64);
        let old = ex.c.flat;
        refresh_flat(ex);
        if ex.c.flat != old {
            // The rest of the block was decoded for the old flatness.
            ex.c.end_block = true;
        }
    }
}

/// Recompute `Core::flat` from the segment caches.
fn refresh_flat(ex: &mut Exec<'_>) {
    ex.c.flat = (0..6).fold(0, |m, i| m | ((ex.c.segc[i].is_flat() as u8) << i));
    ex.c.mode_bits = ((ex.c.flat as u64) << 8) | ((ex.c.user as u64) << 7) | ex.c.bitness as u64;
}

impl Exec<'_> {
    pub fn protected(&self) -> bool {
        self.s.cr0 & 1 != 0 && self.s.rflags & flags::VM == 0
    }
    pub fn v86(&self) -> bool {
        self.s.rflags & flags::VM != 0
    }
    pub fn long_mode(&self) -> bool {
        self.s.efer & EFER_LMA != 0
    }

    /// Read the 8-byte descriptor for `sel`; `Err` with #GP(sel) if outside the table.
    pub fn read_descriptor(&mut self, sel: u16) -> XResult<Descriptor> {
        let (base, limit) = if sel & 4 != 0 {
            if self.s.ldtr.attr & 0x80 == 0 || self.s.ldtr.selector & !3 == 0 {
                return Err(Fault::gp(sel as u32 & 0xFFFC));
            }
            (self.s.ldtr.base, self.s.ldtr.limit as u64)
        } else {
            (self.s.gdtr.base, self.s.gdtr.limit as u64)
        };
        let off = (sel & !7) as u64;
        if off + 7 > limit {
            return Err(Fault::gp(sel as u32 & 0xFFFC));
        }
        let v = self.read_sys(base.wrapping_add(off) & self.c.lin_mask, 8)?;
        Ok(Descriptor {
            lo: v as u32,
            hi: (v >> 32) as u32,
        })
    }

    /// Upper 8 bytes of a 16-byte system descriptor (long mode).
    pub fn read_descriptor_high(&mut self, sel: u16) -> XResult<u32> {
        let (base, limit) = if sel & 4 != 0 {
            (self.s.ldtr.base, self.s.ldtr.limit as u64)
        } else {
            (self.s.gdtr.base, self.s.gdtr.limit as u64)
        };
        let off = (sel & !7) as u64 + 8;
        if off + 7 > limit {
            return Err(Fault::gp(sel as u32 & 0xFFFC));
        }
        Ok(self.read_sys(base.wrapping_add(off), 4)? as u32)
    }

    /// Set the accessed bit of a code/data descriptor in memory.
    pub fn set_accessed(&mut self, sel: u16, d: &Descriptor) -> XResult {
        if d.hi & (1 << 8) != 0 {
            return Ok(());
        }
        let base = if sel & 4 != 0 {
            self.s.ldtr.base
        } else {
            self.s.gdtr.base
        };
        let addr = base.wrapping_add((sel & !7) as u64 + 4);
        self.write_sys(addr & self.c.lin_mask, 4, (d.hi | (1 << 8)) as u64)
    }

    /// MOV/POP/LxS to a data segment register or SS, with all protected-mode checks.
    pub fn load_seg(&mut self, i: u8, sel: u16) -> XResult {
        let idx = i as usize % 6;
        if !self.protected() {
            let v86 = self.v86();
            let sg = &mut self.s.seg[idx];
            sg.selector = sel;
            sg.base = (sel as u64) << 4;
            if v86 {
                sg.limit = 0xFFFF;
                sg.attr = 0xF3;
            }
            refresh_seg(self, i);
            return Ok(());
        }
        let cpl = self.s.cpl;
        if sel & !3 == 0 {
            // Null selector: allowed except for SS (64-bit mode allows it below CPL 3).
            if i == SS && !(self.c.long64 && cpl < 3 && (sel & 3) as u8 == cpl) {
                return Err(Fault::gp0());
            }
            let sg = &mut self.s.seg[idx];
            sg.selector = sel;
            sg.base = 0;
            sg.limit = 0;
            sg.attr = if i == SS {
                0x93 | ((cpl as u16) << 5) | 0x400
            } else {
                0
            };
            if i == SS && self.c.long64 {
                // 64-bit null SS stays usable.
                sg.attr = 0x93 | ((cpl as u16) << 5);
            }
            refresh_seg(self, i);
            return Ok(());
        }
        let d = self.read_descriptor(sel)?;
        let rpl = (sel & 3) as u8;
        let err = sel as u32 & 0xFFFC;
        if i == SS {
            let writable_data = d.is_code_data() && !d.is_code() && d.typ() & 2 != 0;
            if rpl != cpl || d.dpl() != cpl || !writable_data {
                return Err(Fault::gp(err));
            }
            if !d.present() {
                return Err(Fault::ss(err));
            }
        } else {
            let readable = d.is_code_data() && (!d.is_code() || d.typ() & 2 != 0);
            if !readable {
                return Err(Fault::gp(err));
            }
            let conforming_code = d.is_code() && d.typ() & 4 != 0;
            if !conforming_code && d.dpl() < cpl.max(rpl) {
                return Err(Fault::gp(err));
            }
            if !d.present() {
                return Err(Fault::np(err));
            }
        }
        self.set_accessed(sel, &d)?;
        let mut seg = d.segment(sel);
        seg.attr |= 1; // accessed
        self.s.seg[idx] = seg;
        refresh_seg(self, i);
        if i == SS {
            self.c.end_block = true;
        }
        Ok(())
    }

    /// Load CS from a descriptor already checked by the caller, at privilege `cpl`.
    pub fn set_cs(&mut self, sel: u16, d: &Descriptor, cpl: u8) -> XResult {
        self.set_accessed(sel, d)?;
        let mut seg = d.segment((sel & !3) | cpl as u16);
        seg.attr |= 1;
        self.s.seg[CS as usize] = seg;
        self.set_cpl(cpl);
        Ok(())
    }

    pub fn set_cpl(&mut self, cpl: u8) {
        self.s.cpl = cpl;
        refresh_mode(self);
    }

    /// Real-mode/V86 style CS load.
    pub fn set_cs_real(&mut self, sel: u16) {
        let sg = &mut self.s.seg[CS as usize];
        sg.selector = sel;
        sg.base = (sel as u64) << 4;
        if self.s.rflags & flags::VM != 0 {
            sg.limit = 0xFFFF;
            sg.attr = 0xFB;
        }
        refresh_mode(self);
    }

    /// After a privilege drop, data segments not accessible at the new CPL become null.
    pub fn invalidate_segs_for_cpl(&mut self) {
        let cpl = self.s.cpl;
        for i in [ES, DS, FS, GS] {
            let sg = self.s.seg[i as usize];
            let code = sg.attr & 8 != 0;
            let conforming = code && sg.attr & 4 != 0;
            let data_or_nc = !code || !conforming;
            if (sg.attr & 0x10 == 0 || data_or_nc)
                && sg.dpl() < cpl
                && !(sg.selector & !3 == 0 && self.c.long64)
            {
                let s = &mut self.s.seg[i as usize];
                s.selector = 0;
                s.attr = 0;
                refresh_seg(self, i);
            }
        }
    }
}
