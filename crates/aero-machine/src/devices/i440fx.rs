//! Intel 82441FX PCI and memory controller (PMC), the host bridge of the 440FX chipset:
//! PCI function 00:00.0, 8086:1237.
//!
//! Follows the 82441FX datasheet for the registers firmware uses: PAM0–PAM6 (0x59–0x5F,
//! the shadow-RAM attributes of 0xC0000–0xFFFFF), SMRAM control (0x72: D_OPEN, D_CLS,
//! D_LCK, G_SMRAME, fixed C_BASE_SEG = 0xA0000), and the DRAM configuration registers
//! (0x50–0x58, DRB 0x60–0x67) which only need to read back. The machine re-reads
//! [`I440fxHostBridge::pam_regions`] and [`I440fxHostBridge::smram`] whenever the PCI write
//! generation changes and maps ROM/RAM accordingly.

use super::pci::{ConfigSpace, PciFunction};

pub const PAM0: u8 = 0x59;
pub const SMRAM: u8 = 0x72;
const SMRAM_D_OPEN: u8 = 1 << 6;
const SMRAM_D_LCK: u8 = 1 << 4;
/// C_BASE_SEG = 010b: SMRAM at 0xA0000–0xBFFFF (read-only field).
const SMRAM_BASE_SEG: u8 = 0x02;

/// Where accesses to one shadow region go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PamAccess {
    /// Reads come from RAM (otherwise from ROM / the PCI bus).
    pub read_ram: bool,
    /// Writes go to RAM (otherwise to ROM / the PCI bus, i.e. are dropped for ROM).
    pub write_ram: bool,
}

/// One PAM-controlled region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PamRegion {
    pub base: u32,
    pub size: u32,
    pub access: PamAccess,
}

/// The SMRAM control state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmramState {
    /// SMRAM enabled at all (G_SMRAME).
    pub enabled: bool,
    /// Visible to normal (non-SMM) accesses at 0xA0000 (D_OPEN).
    pub open: bool,
    pub locked: bool,
}

/// The i440FX host bridge.
#[derive(Clone, Debug)]
pub struct I440fxHostBridge {
    config: ConfigSpace,
}

impl Default for I440fxHostBridge {
    fn default() -> Self {
        Self::new()
    }
}

impl I440fxHostBridge {
    pub fn new() -> I440fxHostBridge {
        let mut config = ConfigSpace::new(0x8086, 0x1237, 0x06_00_00, 0x02, 0x00);
        config.set_writable_range(0x50, 0x58); // PMCCFG, DETURBO, DBC, DRT, DRAMC, DRAMT
        config.set_writable_range(PAM0, PAM0 + 6);
        config.set_writable_range(0x60, 0x67); // DRB
        config.set_writable_range(0x68, 0x71); // FDHC, MTT, CLT, SMRAM-adjacent misc
        config.set_writable_u8(SMRAM, 0x78);
        config.set_u8(SMRAM, SMRAM_BASE_SEG);
        config.set_u8(0x51, 0x01); // DETURBO reset value per datasheet
        // QEMU's subsystem ID: SeaBIOS builds for QEMU (Debian's bios.bin) recognise the
        // platform by it and otherwise take real-hardware paths that do not fit ours.
        config.set_subsystem(0x1AF4, 0x1100);
        I440fxHostBridge { config }
    }

    /// The 13 PAM regions: 0xF0000 (64 KiB) then 0xC0000–0xEFFFF in 16 KiB pieces.
    pub fn pam_regions(&self) -> [PamRegion; 13] {
        let decode = |bits: u8| PamAccess {
            read_ram: bits & 1 != 0,
            write_ram: bits & 2 != 0,
        };
        let mut regions = [PamRegion {
            base: 0xF0000,
            size: 0x10000,
            access: decode(self.config.u8_at(PAM0) >> 4),
        }; 13];
        for (i, region) in regions.iter_mut().enumerate().skip(1) {
            let register = self.config.u8_at(PAM0 + i.div_ceil(2) as u8);
            let bits = if i % 2 == 1 { register } else { register >> 4 };
            *region = PamRegion {
                base: 0xC0000 + (i as u32 - 1) * 0x4000,
                size: 0x4000,
                access: decode(bits & 3),
            };
        }
        regions
    }

    pub fn smram(&self) -> SmramState {
        let value = self.config.u8_at(SMRAM);
        SmramState {
            enabled: value & 0x08 != 0,
            open: value & SMRAM_D_OPEN != 0,
            locked: value & SMRAM_D_LCK != 0,
        }
    }
}

impl PciFunction for I440fxHostBridge {
    fn config(&self) -> &ConfigSpace {
        &self.config
    }

    fn config_mut(&mut self) -> &mut ConfigSpace {
        &mut self.config
    }

    fn config_write(&mut self, offset: u8, size: u8, value: u32) {
        let was_locked = self.smram().locked;
        self.config.write(offset, size, value);
        let mut smram = self.config.u8_at(SMRAM);
        if was_locked {
            // D_LCK makes the register read-only (except D_CLS) and closes D_OPEN.
            smram |= SMRAM_D_LCK;
        }
        if smram & SMRAM_D_LCK != 0 {
            smram &= !SMRAM_D_OPEN;
            self.config.set_writable_u8(SMRAM, 0x20);
        }
        self.config.set_u8(SMRAM, smram);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_and_class() {
        let bridge = I440fxHostBridge::new();
        assert_eq!(bridge.config().u32_at(0), 0x1237_8086);
        assert_eq!(bridge.config().u32_at(0x08), 0x0600_0002);
        assert_eq!(bridge.config().u8_at(0x0E), 0x00);
    }

    #[test]
    fn pam_regions_decode() {
        let mut bridge = I440fxHostBridge::new();
        assert!(
            bridge
                .pam_regions()
                .iter()
                .all(|r| !r.access.read_ram && !r.access.write_ram)
        );
        bridge.config_write(0x58, 4, 0x0000_3000); // PAM0 = 0x30 (byte 0x59)
        assert_eq!(bridge.config_read(0x58, 4), 0x0000_3000);
        bridge.config_write(0x5A, 1, 0x31); // 0xC0000 RE, 0xC4000 RE+WE
        bridge.config_write(0x5F, 1, 0x20); // 0xEC000 WE only
        let regions = bridge.pam_regions();
        assert_eq!(
            regions[0],
            PamRegion {
                base: 0xF0000,
                size: 0x10000,
                access: PamAccess {
                    read_ram: true,
                    write_ram: true
                }
            }
        );
        assert_eq!(
            regions[1],
            PamRegion {
                base: 0xC0000,
                size: 0x4000,
                access: PamAccess {
                    read_ram: true,
                    write_ram: false
                }
            }
        );
        assert_eq!(regions[2].base, 0xC4000);
        assert_eq!(
            regions[2].access,
            PamAccess {
                read_ram: true,
                write_ram: true
            }
        );
        assert_eq!(regions[12].base, 0xEC000);
        assert_eq!(
            regions[12].access,
            PamAccess {
                read_ram: false,
                write_ram: true
            }
        );
    }

    #[test]
    fn smram_open_and_lock() {
        let mut bridge = I440fxHostBridge::new();
        assert_eq!(bridge.config_read(SMRAM, 1), 0x02);
        bridge.config_write(SMRAM, 1, 0x4F);
        assert_eq!(
            bridge.config_read(SMRAM, 1),
            0x4A,
            "base segment is read-only"
        );
        assert_eq!(
            bridge.smram(),
            SmramState {
                enabled: true,
                open: true,
                locked: false
            }
        );
        bridge.config_write(SMRAM, 1, 0x5A);
        assert_eq!(
            bridge.smram(),
            SmramState {
                enabled: true,
                open: false,
                locked: true
            }
        );
        bridge.config_write(SMRAM, 1, 0x42);
        assert_eq!(
            bridge.smram(),
            SmramState {
                enabled: true,
                open: false,
                locked: true
            },
            "locked"
        );
    }
}
