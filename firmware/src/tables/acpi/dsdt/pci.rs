//! The PCI host bridge `\_SB.PCI0`: its address windows and the `_PRT` interrupt routing.

use super::isa;
use crate::tables::acpi::{AcpiConfig, PCI_MMIO32_END, PciIrqMode};
use crate::tables::aml::resource::{
    AddressKind, AddressRange, IoRangeKind, MemoryCaching, Resource,
};
use crate::tables::aml::*;
use crate::tables::platform::{hardwired_irq, pirq_for};

use super::links::{SCI_LINK_NAME, gsi_link_name, pirq_link_name};

const PCI_CONFIG_ADDRESS_PORT: u16 = 0xCF8;
const LAST_SLOT: u8 = 31;

pub fn host_bridge(config: &AcpiConfig) -> Result<Aml, AmlError> {
    let mut body = vec![
        name("_HID", eisa_id("PNP0A03")?)?,
        // No _ADR: a host bridge is identified by _HID alone (ACPI 6.x §6.1).
        name("_UID", int(0))?,
        name("_BBN", int(0))?,
        name("_CRS", resource_template(&windows(config))?)?,
    ];
    body.extend(routing(config.pci_irq_mode)?);
    body.push(isa::isa_bridge(config)?);
    device("PCI0", &body)
}

/// Everything the host bridge decodes: bus numbers, its own config ports, and the
/// windows it forwards to PCI (all I/O except the config ports, legacy VGA memory and
/// the PCI holes).
fn windows(config: &AcpiConfig) -> Vec<Resource> {
    let io = AddressKind::Io(IoRangeKind::EntireRange);
    let mmio = AddressKind::Memory {
        caching: MemoryCaching::NonCacheable,
        writable: true,
    };
    let vga = AddressKind::Memory {
        caching: MemoryCaching::Cacheable,
        writable: true,
    };
    let mut list = vec![
        // The buses behind the bridge: those the ECAM window covers (MCFG and _CRS must
        // agree or Linux reports the window as only partially covering the bridge).
        Resource::WordAddress(AddressRange::window(
            AddressKind::BusNumber,
            true,
            0,
            config.pci_ecam.map_or(0xFF, |e| u64::from(e.end_bus)),
        )),
        Resource::Io {
            min: PCI_CONFIG_ADDRESS_PORT,
            max: PCI_CONFIG_ADDRESS_PORT,
            align: 1,
            len: 8,
        },
        Resource::DWordAddress(AddressRange::window(io, true, 0, 0xCF7)),
        Resource::DWordAddress(AddressRange::window(io, true, 0xD00, 0xFFFF)),
        Resource::DWordAddress(AddressRange::window(vga, true, 0xA_0000, 0xB_FFFF)),
        Resource::DWordAddress(AddressRange::window(
            mmio,
            true,
            u64::from(config.pci_mmio32_base),
            u64::from(PCI_MMIO32_END),
        )),
    ];
    if let Some(w) = config.pci_mmio64 {
        list.push(Resource::QWordAddress(AddressRange::window(
            mmio,
            true,
            w.base,
            w.base + (w.size - 1),
        )));
    }
    list
}

/// `_PRT` entries `{address, pin, source, source_index}` for every INTx of slots 1–31.
fn prt_package(source_for_pirq: impl Fn(u8) -> Result<Aml, AmlError>) -> Result<Aml, AmlError> {
    let mut entries = Vec::new();
    for slot in 1..=LAST_SLOT {
        for pin in 0..4u8 {
            // Function field 0xFFFF: all functions of the device.
            let address = (u64::from(slot) << 16) | 0xFFFF;
            let source = match hardwired_irq(slot, pin) {
                Some(_) => name_ref(&format!("\\_SB.{SCI_LINK_NAME}"))?,
                None => source_for_pirq(pirq_for(slot, pin))?,
            };
            entries.push(package(&[int(address), int(pin.into()), source, int(0)])?);
        }
    }
    package(&entries)
}

/// PIC mode always routes through the PIIX3 links. APIC mode either keeps doing so
/// (`SharedIsaIrqs`, the table is static) or switches on `\PICM` to the GSI links.
fn routing(mode: PciIrqMode) -> Result<Vec<Aml>, AmlError> {
    let via_pirq = prt_package(|pirq| name_ref(&format!("\\_SB.{}", pirq_link_name(pirq))))?;
    Ok(match mode {
        PciIrqMode::SharedIsaIrqs => vec![name("_PRT", via_pirq)?],
        PciIrqMode::DirectGsi => {
            let via_gsi = prt_package(|pirq| name_ref(&format!("\\_SB.{}", gsi_link_name(pirq))))?;
            vec![
                name("PRTP", via_pirq)?,
                name("PRTA", via_gsi)?,
                method(
                    "_PRT",
                    0,
                    false,
                    &[
                        if_(name_ref("\\PICM")?, &[ret(name_ref("PRTA")?)])?,
                        ret(name_ref("PRTP")?),
                    ],
                )?,
            ]
        }
    })
}
