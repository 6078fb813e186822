//! INT 1Ah AH=B1h: the real-mode PCI BIOS (2.1) over configuration mechanism #1.

use aero_cpu::Reg;
use tracing::debug;

use super::Bios;
use super::call::{Call, Flow};
use super::error::FirmwareError;
use super::pci::PciConfig;

const SUCCESSFUL: u8 = 0x00;
const FUNC_NOT_SUPPORTED: u8 = 0x81;
const DEVICE_NOT_FOUND: u8 = 0x86;
const BAD_REGISTER: u8 = 0x87;
/// "PCI " in EDX.
const PCI_SIGNATURE: u32 = 0x2049_4350;

impl Bios {
    pub(crate) fn pci_bios(&mut self, c: &mut Call) -> Result<Flow, FirmwareError> {
        let al = c.al();
        let bdf = c.r16(Reg::Rbx);
        let reg = c.r16(Reg::Rdi);
        match al {
            0x01 => {
                c.set_r32(Reg::Rdx, PCI_SIGNATURE);
                c.set_al(0x01); // configuration mechanism #1
                c.set_r16(Reg::Rbx, 0x0210);
                c.set_lo(Reg::Rcx, self.state.pci.last_bus);
                c.set_r32(Reg::Rdi, 0); // no protected-mode entry point
                status(c, SUCCESSFUL)
            }
            0x02 | 0x03 => {
                let index = c.r16(Reg::Rsi) as usize;
                let want_id = (c.r16(Reg::Rcx) as u32) << 16 | c.r16(Reg::Rdx) as u32;
                let want_class = c.r32(Reg::Rcx) & 0xFF_FFFF;
                if al == 0x02 && c.r16(Reg::Rdx) == 0xFFFF {
                    return status(c, DEVICE_NOT_FOUND);
                }
                let functions = self.state.pci.functions.clone();
                let mut pci = PciConfig::new(c.host);
                let found = functions
                    .into_iter()
                    .filter(|&f| {
                        if al == 0x02 {
                            pci.read32(f, 0) == want_id
                        } else {
                            pci.read32(f, 0x08) >> 8 == want_class
                        }
                    })
                    .nth(index);
                match found {
                    Some(f) => {
                        c.set_r16(Reg::Rbx, f);
                        status(c, SUCCESSFUL)
                    }
                    None => status(c, DEVICE_NOT_FOUND),
                }
            }
            0x08..=0x0D => {
                let width = match al {
                    0x08 | 0x0B => 1,
                    0x09 | 0x0C => 2,
                    _ => 4,
                };
                if reg > 0xFF || !reg.is_multiple_of(width) {
                    return status(c, BAD_REGISTER);
                }
                let reg = reg as u8;
                let value = c.r32(Reg::Rcx);
                let mut pci = PciConfig::new(c.host);
                match al {
                    0x08 => {
                        let v = pci.read8(bdf, reg);
                        c.set_lo(Reg::Rcx, v);
                    }
                    0x09 => {
                        let v = pci.read16(bdf, reg);
                        c.set_r16(Reg::Rcx, v);
                    }
                    0x0A => {
                        let v = pci.read32(bdf, reg);
                        c.set_r32(Reg::Rcx, v);
                    }
                    0x0B => pci.write8(bdf, reg, value as u8),
                    0x0C => pci.write16(bdf, reg, value as u16),
                    _ => pci.write32(bdf, reg, value),
                }
                status(c, SUCCESSFUL)
            }
            _ => {
                debug!(al, "PCI BIOS function not supported");
                status(c, FUNC_NOT_SUPPORTED)
            }
        }
    }
}

fn status(c: &mut Call, code: u8) -> Result<Flow, FirmwareError> {
    c.set_ah(code);
    c.set_cf(code != SUCCESSFUL)?;
    Ok(Flow::Return)
}
