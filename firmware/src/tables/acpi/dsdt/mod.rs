//! The Differentiated System Description Table: the AML namespace describing what the OS
//! cannot enumerate by itself.
//!
//! ```text
//! \PICM, \_PIC(mode)          interrupt model chosen by the OS (0 = PIC, 1 = APIC)
//! \_S5                        soft-off: SLP_TYP 0
//! \_SB.CP00…                  Processor() objects, ID = LAPIC ID = MADT UID
//! \_SB.PCI0 (PNP0A03)         host bridge: _CRS windows, _PRT for slots 1–31
//! \_SB.PCI0.ISA (00:01.0)     PIIX3: PIRQ route registers 0x60–0x63, ISA devices
//! \_SB.LNKA…LNKD (PNP0C0F)    PCI interrupt links on PIRQA–D
//! \_SB.GSIA…GSID              fixed links to GSI 16–19 (PciIrqMode::DirectGsi only)
//! \_SB.HPET (PNP0103)
//! \_SB.ECAM (PNP0C02)        the MCFG window as a motherboard resource
//! ```

mod isa;
mod links;
mod pci;
mod system;

use super::{AcpiConfig, sdt};
use crate::tables::TablesError;
use crate::tables::aml::{scope, term_list};

const REVISION: u8 = 2;

/// The complete DSDT including its header.
pub fn build(config: &AcpiConfig) -> Result<Vec<u8>, TablesError> {
    let mut root = system::root_objects()?;
    let mut sb = system::processors(config.cpu_count)?;
    sb.push(pci::host_bridge(config)?);
    sb.extend(links::link_devices(config.pci_irq_mode)?);
    if config.hpet {
        sb.push(system::hpet_device()?);
    }
    if let Some(ecam) = config.pci_ecam {
        let (Ok(base), Ok(len)) = (u32::try_from(ecam.base), u32::try_from(ecam.size())) else {
            return Err(TablesError::InvalidConfig(format!(
                "ECAM window {:#x} above 4 GiB",
                ecam.base
            )));
        };
        sb.push(system::ecam_reservation(base, len)?);
    }
    root.push(scope("\\_SB", &sb)?);
    let mut t = sdt::begin(b"DSDT", REVISION);
    t.extend(term_list(&root));
    Ok(sdt::finish(t))
}
