//! RDMSR/WRMSR. Unknown MSRs raise #GP(0) like real hardware.

use super::{Exec, Handler, Insn};
use crate::fault::{Fault, XResult};
use crate::mmu::{CR0_PG, EFER_LMA, EFER_LME, EFER_NXE, EFER_SCE};
use crate::seg::{FS, GS};
use iced_x86::{Instruction, Mnemonic};

pub const IA32_TSC: u32 = 0x10;
pub const IA32_PLATFORM_ID: u32 = 0x17;
pub const IA32_APIC_BASE: u32 = 0x1B;
pub const IA32_BIOS_SIGN_ID: u32 = 0x8B;
pub const IA32_MTRRCAP: u32 = 0xFE;
pub const IA32_SYSENTER_CS: u32 = 0x174;
pub const IA32_SYSENTER_ESP: u32 = 0x175;
pub const IA32_SYSENTER_EIP: u32 = 0x176;
pub const IA32_MISC_ENABLE: u32 = 0x1A0;
pub const IA32_DEBUGCTL: u32 = 0x1D9;
pub const IA32_PAT: u32 = 0x277;
pub const IA32_MTRR_DEF_TYPE: u32 = 0x2FF;
pub const IA32_EFER: u32 = 0xC000_0080;
pub const IA32_STAR: u32 = 0xC000_0081;
pub const IA32_LSTAR: u32 = 0xC000_0082;
pub const IA32_CSTAR: u32 = 0xC000_0083;
pub const IA32_FMASK: u32 = 0xC000_0084;
pub const IA32_FS_BASE: u32 = 0xC000_0100;
pub const IA32_GS_BASE: u32 = 0xC000_0101;
pub const IA32_KERNEL_GS_BASE: u32 = 0xC000_0102;
pub const IA32_TSC_AUX: u32 = 0xC000_0103;

const FIXED_MTRRS: [u32; 11] = [
    0x250, 0x258, 0x259, 0x268, 0x269, 0x26A, 0x26B, 0x26C, 0x26D, 0x26E, 0x26F,
];

pub fn lookup(ins: &Instruction) -> Option<Handler> {
    Some(match ins.mnemonic() {
        Mnemonic::Rdmsr => rdmsr,
        Mnemonic::Wrmsr => wrmsr,
        _ => return None,
    })
}

fn canonical(v: u64) -> bool {
    ((v as i64) << 16 >> 16) as u64 == v
}

impl Exec<'_> {
    pub fn read_msr(&mut self, idx: u32) -> XResult<u64> {
        let m = &self.c.msr;
        Ok(match idx {
            IA32_TSC => return Ok(self.read_tsc()),
            IA32_PLATFORM_ID => 0,
            IA32_APIC_BASE => m.apic_base,
            IA32_BIOS_SIGN_ID => m.bios_sign,
            // 8 variable ranges, fixed ranges, write-combining.
            IA32_MTRRCAP => 0x508,
            IA32_SYSENTER_CS => m.sysenter_cs,
            IA32_SYSENTER_ESP => m.sysenter_esp,
            IA32_SYSENTER_EIP => m.sysenter_eip,
            IA32_MISC_ENABLE => m.misc_enable,
            IA32_DEBUGCTL => m.debugctl,
            IA32_PAT => m.pat,
            IA32_MTRR_DEF_TYPE => m.mtrr_cap_def,
            0x200..=0x20F => m.mtrr_var[(idx - 0x200) as usize],
            IA32_EFER => self.s.efer,
            IA32_STAR => m.star,
            IA32_LSTAR => m.lstar,
            IA32_CSTAR => m.cstar,
            IA32_FMASK => m.sfmask,
            IA32_FS_BASE => self.s.seg[FS as usize].base,
            IA32_GS_BASE => self.s.seg[GS as usize].base,
            IA32_KERNEL_GS_BASE => m.kernel_gs_base,
            IA32_TSC_AUX => m.tsc_aux,
            _ => match FIXED_MTRRS.iter().position(|&f| f == idx) {
                Some(k) => m.mtrr_fixed[k],
                None => return Err(Fault::gp0()),
            },
        })
    }

    pub fn write_msr(&mut self, idx: u32, v: u64) -> XResult {
        match idx {
            IA32_TSC => {
                let now = self.read_tsc().wrapping_sub(self.c.msr.tsc_offset);
                self.c.msr.tsc_offset = v.wrapping_sub(now);
            }
            IA32_PLATFORM_ID | IA32_MTRRCAP => return Err(Fault::gp0()),
            IA32_APIC_BASE => {
                self.c.msr.apic_base = v & 0x000F_FFFF_FFFF_FD00;
                self.bus.apic_base_written(self.c.msr.apic_base);
            }
            IA32_BIOS_SIGN_ID => self.c.msr.bios_sign = v,
            IA32_SYSENTER_CS => self.c.msr.sysenter_cs = v & 0xFFFF,
            IA32_SYSENTER_ESP => self.c.msr.sysenter_esp = v,
            IA32_SYSENTER_EIP => self.c.msr.sysenter_eip = v,
            IA32_MISC_ENABLE => self.c.msr.misc_enable = v,
            // Stored only: no LBR/BTF (BTF single-step-on-branch is not implemented).
            IA32_DEBUGCTL => self.c.msr.debugctl = v & 0x3,
            IA32_PAT => {
                // Each entry must be a valid memory type (0, 1, 4, 5, 6, 7).
                if (0..8).any(|k| matches!((v >> (8 * k)) & 0xFF, 2 | 3 | 8..=0xFF)) {
                    return Err(Fault::gp0());
                }
                self.c.msr.pat = v;
            }
            IA32_MTRR_DEF_TYPE => self.c.msr.mtrr_cap_def = v & 0xCFF,
            0x200..=0x20F => self.c.msr.mtrr_var[(idx - 0x200) as usize] = v,
            IA32_EFER => {
                let allowed = EFER_SCE | EFER_LME | EFER_NXE;
                if v & !(allowed | EFER_LMA) != 0 {
                    return Err(Fault::gp0());
                }
                let old = self.s.efer;
                if (old ^ v) & EFER_LME != 0 && self.s.cr0 & CR0_PG != 0 {
                    return Err(Fault::gp0());
                }
                self.s.efer = (v & allowed) | (old & EFER_LMA);
                if (old ^ self.s.efer) & EFER_NXE != 0 {
                    self.c.tlb.flush_all();
                }
            }
            IA32_STAR => self.c.msr.star = v,
            IA32_LSTAR | IA32_CSTAR | IA32_KERNEL_GS_BASE | IA32_FS_BASE | IA32_GS_BASE
                if !canonical(v) =>
            {
                return Err(Fault::gp0());
            }
            IA32_LSTAR => self.c.msr.lstar = v,
            IA32_CSTAR => self.c.msr.cstar = v,
            IA32_FMASK => self.c.msr.sfmask = v & 0xFFFF_FFFF,
            IA32_FS_BASE => {
                self.s.seg[FS as usize].base = v;
                crate::seg::refresh_seg(self, FS);
            }
            IA32_GS_BASE => {
                self.s.seg[GS as usize].base = v;
                crate::seg::refresh_seg(self, GS);
            }
            IA32_KERNEL_GS_BASE => self.c.msr.kernel_gs_base = v,
            IA32_TSC_AUX => self.c.msr.tsc_aux = v & 0xFFFF_FFFF,
            _ => match FIXED_MTRRS.iter().position(|&f| f == idx) {
                Some(k) => self.c.msr.mtrr_fixed[k] = v,
                None => return Err(Fault::gp0()),
            },
        }
        Ok(())
    }
}

fn rdmsr(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    if ex.s.cr0 & 1 != 0 && (ex.s.cpl != 0 || ex.v86()) {
        return Err(Fault::gp0());
    }
    let v = ex.read_msr(ex.s.gpr[1] as u32)?;
    ex.set_reg(0, 4, v);
    ex.set_reg(2, 4, v >> 32);
    Ok(())
}

fn wrmsr(ex: &mut Exec<'_>, _: &Insn) -> XResult {
    if ex.s.cr0 & 1 != 0 && (ex.s.cpl != 0 || ex.v86()) {
        return Err(Fault::gp0());
    }
    let v = (ex.s.gpr[0] & 0xFFFF_FFFF) | (ex.s.gpr[2] << 32);
    ex.write_msr(ex.s.gpr[1] as u32, v)?;
    ex.c.end_block = true;
    Ok(())
}
