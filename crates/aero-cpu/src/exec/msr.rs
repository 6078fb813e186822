//! RDMSR/WRMSR: the MSRs of the advertised Core 2 (see `cpuid.rs`) as QEMU's TCG has them
//! for that model, with the write checks of real hardware (reserved bits raise #GP).
//! Unknown MSRs raise #GP(0) like real hardware and are logged once each.
//! `tests/cpu_model.rs` reads every MSR in 0-0x1FFF and 0xC0000000-0xC0001FFF on Aero
//! and QEMU and compares.

use super::{Exec, Handler, Insn};
use crate::fault::{Fault, XResult};
use crate::mmu::{CR0_PG, EFER_LMA, EFER_LME, EFER_NXE, EFER_SCE};
use crate::seg::{FS, GS};
use iced_x86::{Instruction, Mnemonic};

pub const IA32_P5_MC_ADDR: u32 = 0x0;
pub const IA32_P5_MC_TYPE: u32 = 0x1;
pub const IA32_TSC: u32 = 0x10;
pub const IA32_PLATFORM_ID: u32 = 0x17;
pub const IA32_APIC_BASE: u32 = 0x1B;
pub const MSR_EBL_CR_POWERON: u32 = 0x2A;
pub const IA32_FEATURE_CONTROL: u32 = 0x3A;
pub const IA32_BIOS_UPDT_TRIG: u32 = 0x79;
pub const IA32_BIOS_SIGN_ID: u32 = 0x8B;
pub const IA32_MTRRCAP: u32 = 0xFE;
pub const IA32_SYSENTER_CS: u32 = 0x174;
pub const IA32_SYSENTER_ESP: u32 = 0x175;
pub const IA32_SYSENTER_EIP: u32 = 0x176;
pub const IA32_MCG_CAP: u32 = 0x179;
pub const IA32_MCG_STATUS: u32 = 0x17A;
pub const IA32_MCG_CTL: u32 = 0x17B;
pub const IA32_PERF_STATUS: u32 = 0x198;
pub const IA32_MISC_ENABLE: u32 = 0x1A0;
pub const IA32_DEBUGCTL: u32 = 0x1D9;
/// Last branch / last exception record (P6 numbering, as KVM answers them): 0x1DB-0x1DE.
pub const MSR_LASTBRANCH_FROM_IP: u32 = 0x1DB;
pub const MSR_LASTINT_TO_IP: u32 = 0x1DE;
pub const IA32_MTRR_PHYS_FIRST: u32 = 0x200;
pub const IA32_MTRR_PHYS_LAST: u32 = 0x20F;
pub const IA32_PAT: u32 = 0x277;
pub const IA32_MTRR_DEF_TYPE: u32 = 0x2FF;
pub const IA32_MC0_CTL: u32 = 0x400;
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
/// MTRRCAP: 8 variable ranges, fixed ranges, write-combining.
const MTRRCAP: u64 = 0x508;
/// PERF_STATUS as QEMU's TCG reports it (Core 2 has the MSR even without EST).
const PERF_STATUS: u64 = (4 << 40) | 1000;
/// Physical address bits (CPUID 0x80000008): higher MTRR/APIC base bits are reserved.
const PHYS_MASK: u64 = (1 << 40) - 1;
/// Unknown MSR indexes logged at most this many times per CPU.
const MAX_LOGGED: usize = 256;

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

/// A memory type an MTRR may hold: UC, WC, WT, WP, WB.
fn mtrr_type_valid(t: u64) -> bool {
    matches!(t, 0 | 1 | 4 | 5 | 6)
}

/// Why a write is refused: #GP, as real hardware (and KVM) raise for reserved bits.
fn mtrr_write_valid(idx: u32, v: u64) -> bool {
    match idx {
        IA32_MTRR_DEF_TYPE => v & !0xCFF == 0 && mtrr_type_valid(v & 0xFF),
        // PHYSBASE: type in 7:0, base in 39:12.
        IA32_MTRR_PHYS_FIRST..=IA32_MTRR_PHYS_LAST if idx.is_multiple_of(2) => {
            v & !(PHYS_MASK & !0xF00) == 0 && mtrr_type_valid(v & 0xFF)
        }
        // PHYSMASK: valid bit 11, mask in 39:12.
        IA32_MTRR_PHYS_FIRST..=IA32_MTRR_PHYS_LAST => v & !(PHYS_MASK & !0x7FF) == 0,
        // Fixed ranges: eight types.
        _ => (0..8).all(|k| mtrr_type_valid((v >> (8 * k)) & 0xFF)),
    }
}

impl Exec<'_> {
    /// Logs an access to an MSR Aero does not implement, once per index.
    fn unknown_msr(&mut self, idx: u32, write: Option<u64>) -> Fault {
        let logged = &mut self.c.msr.unknown_logged;
        if logged.len() < MAX_LOGGED && logged.insert(idx) {
            match write {
                Some(v) => tracing::warn!("WRMSR {idx:#x} <- {v:#x}: unknown MSR, #GP"),
                None => tracing::warn!("RDMSR {idx:#x}: unknown MSR, #GP"),
            }
        }
        Fault::gp0()
    }

    pub fn read_msr(&mut self, idx: u32) -> XResult<u64> {
        let m = &self.c.msr;
        Ok(match idx {
            IA32_TSC => return Ok(self.read_tsc()),
            // Read as 0, as KVM answers them (guests probe them; QEMU's TCG reads 0 too):
            // no P5-style machine check, no bus configuration, no branch recorded.
            IA32_P5_MC_ADDR | IA32_P5_MC_TYPE | MSR_EBL_CR_POWERON => 0,
            MSR_LASTBRANCH_FROM_IP..=MSR_LASTINT_TO_IP => 0,
            IA32_PLATFORM_ID => 0,
            IA32_APIC_BASE => m.apic_base,
            IA32_FEATURE_CONTROL => m.feature_control,
            // Write-only trigger; reads as 0 (QEMU does the same).
            IA32_BIOS_UPDT_TRIG => 0,
            IA32_BIOS_SIGN_ID => m.bios_sign,
            IA32_MTRRCAP => MTRRCAP,
            IA32_SYSENTER_CS => m.sysenter_cs,
            IA32_SYSENTER_ESP => m.sysenter_esp,
            IA32_SYSENTER_EIP => m.sysenter_eip,
            IA32_MCG_CAP => super::cpuid::MCG_CAP,
            IA32_MCG_STATUS => m.mcg_status,
            IA32_MCG_CTL => m.mcg_ctl,
            IA32_PERF_STATUS => PERF_STATUS,
            IA32_MISC_ENABLE => m.misc_enable,
            IA32_DEBUGCTL => m.debugctl,
            IA32_PAT => m.pat,
            IA32_MTRR_DEF_TYPE => m.mtrr_cap_def,
            IA32_MTRR_PHYS_FIRST..=IA32_MTRR_PHYS_LAST => {
                m.mtrr_var[(idx - IA32_MTRR_PHYS_FIRST) as usize]
            }
            IA32_EFER => self.s.efer,
            IA32_STAR => m.star,
            IA32_LSTAR => m.lstar,
            IA32_CSTAR => m.cstar,
            IA32_FMASK => m.sfmask,
            IA32_FS_BASE => self.s.seg[FS as usize].base,
            IA32_GS_BASE => self.s.seg[GS as usize].base,
            IA32_KERNEL_GS_BASE => m.kernel_gs_base,
            IA32_TSC_AUX if super::cpuid::HAS_RDTSCP => m.tsc_aux,
            _ => {
                if let Some((bank, reg)) = mc_bank(idx) {
                    return Ok(m.mc_banks[bank][reg]);
                }
                match FIXED_MTRRS.iter().position(|&f| f == idx) {
                    Some(k) => m.mtrr_fixed[k],
                    None => return Err(self.unknown_msr(idx, None)),
                }
            }
        })
    }

    pub fn write_msr(&mut self, idx: u32, v: u64) -> XResult {
        let m = &mut self.c.msr;
        match idx {
            IA32_TSC => {
                let now = self.read_tsc().wrapping_sub(self.c.msr.tsc_offset);
                self.c.msr.tsc_offset = v.wrapping_sub(now);
            }
            // Read-only.
            IA32_PLATFORM_ID | IA32_MTRRCAP | IA32_MCG_CAP | IA32_PERF_STATUS => {
                return Err(Fault::gp0());
            }
            IA32_P5_MC_ADDR | IA32_P5_MC_TYPE | MSR_EBL_CR_POWERON => return Err(Fault::gp0()),
            MSR_LASTBRANCH_FROM_IP..=MSR_LASTINT_TO_IP => return Err(Fault::gp0()),
            IA32_APIC_BASE => {
                // BSP (8), enable (11) and the base; x2APIC (10) is not supported.
                if v & !(PHYS_MASK & !0xFFF | (1 << 11) | (1 << 8)) != 0 {
                    return Err(Fault::gp0());
                }
                m.apic_base = v;
                self.bus.apic_base_written(v);
            }
            IA32_FEATURE_CONTROL => {
                // Only the lock bit: VMX and SMX are not advertised. Locked until reset.
                if m.feature_control & 1 != 0 || v & !1 != 0 {
                    return Err(Fault::gp0());
                }
                m.feature_control = v;
            }
            // Microcode updates are accepted and ignored (the revision stays).
            IA32_BIOS_UPDT_TRIG => {}
            // Software writes 0 here, then CPUID 1 loads the revision back.
            IA32_BIOS_SIGN_ID => m.bios_sign = v,
            IA32_SYSENTER_CS => m.sysenter_cs = v & 0xFFFF,
            IA32_SYSENTER_ESP | IA32_SYSENTER_EIP if !canonical(v) => return Err(Fault::gp0()),
            IA32_SYSENTER_ESP => m.sysenter_esp = v,
            IA32_SYSENTER_EIP => m.sysenter_eip = v,
            // Only 0 (no machine check in progress) makes sense to write; others are kept
            // as QEMU keeps them.
            IA32_MCG_STATUS => m.mcg_status = v,
            IA32_MCG_CTL => {
                if v != 0 && v != u64::MAX {
                    return Err(Fault::gp0());
                }
                m.mcg_ctl = v;
            }
            IA32_MISC_ENABLE => m.misc_enable = v,
            // Stored only: no LBR/BTF (BTF single-step-on-branch is not implemented).
            IA32_DEBUGCTL => m.debugctl = v & 0x3,
            IA32_PAT => {
                // Each entry must be a valid memory type (0, 1, 4, 5, 6, 7).
                if (0..8).any(|k| matches!((v >> (8 * k)) & 0xFF, 2 | 3 | 8..=0xFF)) {
                    return Err(Fault::gp0());
                }
                m.pat = v;
            }
            IA32_MTRR_DEF_TYPE => {
                if !mtrr_write_valid(idx, v) {
                    return Err(Fault::gp0());
                }
                m.mtrr_cap_def = v;
            }
            IA32_MTRR_PHYS_FIRST..=IA32_MTRR_PHYS_LAST => {
                if !mtrr_write_valid(idx, v) {
                    return Err(Fault::gp0());
                }
                m.mtrr_var[(idx - IA32_MTRR_PHYS_FIRST) as usize] = v;
            }
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
            IA32_STAR => m.star = v,
            IA32_LSTAR | IA32_CSTAR | IA32_KERNEL_GS_BASE | IA32_FS_BASE | IA32_GS_BASE
                if !canonical(v) =>
            {
                return Err(Fault::gp0());
            }
            IA32_LSTAR => m.lstar = v,
            IA32_CSTAR => m.cstar = v,
            IA32_FMASK => m.sfmask = v & 0xFFFF_FFFF,
            IA32_FS_BASE => {
                self.s.seg[FS as usize].base = v;
                crate::seg::refresh_seg(self, FS);
            }
            IA32_GS_BASE => {
                self.s.seg[GS as usize].base = v;
                crate::seg::refresh_seg(self, GS);
            }
            IA32_KERNEL_GS_BASE => m.kernel_gs_base = v,
            IA32_TSC_AUX if super::cpuid::HAS_RDTSCP => {
                if v >> 32 != 0 {
                    return Err(Fault::gp0());
                }
                m.tsc_aux = v;
            }
            _ => {
                if let Some((bank, reg)) = mc_bank(idx) {
                    // CTL: all or nothing; STATUS: only cleared (as on Intel and KVM).
                    let ok = match reg {
                        0 => v == 0 || v == u64::MAX,
                        1 => v == 0,
                        _ => true,
                    };
                    if !ok {
                        return Err(Fault::gp0());
                    }
                    m.mc_banks[bank][reg] = v;
                    return Ok(());
                }
                match FIXED_MTRRS.iter().position(|&f| f == idx) {
                    Some(k) if mtrr_write_valid(idx, v) => m.mtrr_fixed[k] = v,
                    Some(_) => return Err(Fault::gp0()),
                    None => return Err(self.unknown_msr(idx, Some(v))),
                }
            }
        }
        Ok(())
    }
}

/// (bank, register) of a machine-check bank MSR.
fn mc_bank(idx: u32) -> Option<(usize, usize)> {
    let off = idx.checked_sub(IA32_MC0_CTL)? as usize;
    (off < 4 * super::cpuid::MC_BANKS).then_some((off / 4, off % 4))
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
