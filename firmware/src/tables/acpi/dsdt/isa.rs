//! The PIIX3 ISA bridge (00:01.0): its PIRQ route registers and the legacy devices
//! behind it, each with the fixed ports and IRQ the chipset decodes.

use crate::tables::acpi::AcpiConfig;
use crate::tables::aml::resource::Resource;
use crate::tables::aml::*;
use crate::tables::platform::*;

/// Motherboard ports not owned by any other device: claimed so the OS never hands them
/// to a PCI I/O BAR.
const DEBUG_PORT: u16 = 0xE9;
const POST_PORT: u16 = 0x80;
const A20_PORT: u16 = 0x92;
const ELCR_PORT: u16 = 0x4D0;

fn io(base: u16, len: u8) -> Resource {
    Resource::Io {
        min: base,
        max: base,
        align: 1,
        len,
    }
}

fn irq(line: u8) -> Resource {
    Resource::Irq {
        irqs: vec![line],
        flags: None,
    }
}

/// `Device(name) { _HID, [_UID], _CRS }` for a fixed-resource ISA device.
fn isa_device(
    dev: &str,
    hid: &str,
    uid: Option<u64>,
    resources: &[Resource],
) -> Result<Aml, AmlError> {
    let mut body = vec![name("_HID", eisa_id(hid)?)?];
    if let Some(uid) = uid {
        body.push(name("_UID", int(uid))?);
    }
    body.push(name("_CRS", resource_template(resources)?)?);
    device(dev, &body)
}

pub fn isa_bridge(config: &AcpiConfig) -> Result<Aml, AmlError> {
    let mut body = vec![
        name("_ADR", int(u64::from(PIIX3_SLOT) << 16))?,
        op_region(
            "PIRQ",
            RegionSpace::PciConfig,
            int(PIIX3_PIRQ_ROUTE_REG.into()),
            int(4),
        )?,
        field(
            "PIRQ",
            FieldAccess::Byte,
            false,
            FieldUpdate::Preserve,
            &[
                FieldEntry::Named("PRQA", 8),
                FieldEntry::Named("PRQB", 8),
                FieldEntry::Named("PRQC", 8),
                FieldEntry::Named("PRQD", 8),
            ],
        )?,
        isa_device(
            "PIC",
            "PNP0000",
            None,
            &[io(0x20, 2), io(0xA0, 2), io(ELCR_PORT, 2), irq(IRQ_CASCADE)],
        )?,
        isa_device("TMR", "PNP0100", None, &[io(0x40, 4), irq(IRQ_PIT)])?,
        isa_device("RTC", "PNP0B00", None, &[io(0x70, 2), irq(IRQ_RTC)])?,
        isa_device("SPKR", "PNP0800", None, &[io(0x61, 1)])?,
        isa_device(
            "KBD",
            "PNP0303",
            None,
            &[io(0x60, 1), io(0x64, 1), irq(IRQ_KEYBOARD)],
        )?,
        isa_device("MOU", "PNP0F13", None, &[irq(IRQ_MOUSE)])?,
        isa_device(
            "COM1",
            "PNP0501",
            Some(1),
            &[io(COM1_BASE, 8), irq(IRQ_COM1)],
        )?,
        isa_device(
            "SYSR",
            "PNP0C02",
            Some(1),
            &[
                io(POST_PORT, 1),
                io(A20_PORT, 1),
                io(SMI_CMD_PORT, 2),
                io(DEBUG_PORT, 1),
                io(GPE0_BLK, GPE0_BLK_LEN),
                io(PM_IO_BASE, PM_IO_LEN),
            ],
        )?,
    ];
    // The PIIX3's 8237 pair: always present, whether or not a floppy drive uses it.
    body.push(isa_device(
        "DMAC",
        "PNP0200",
        None,
        &[
            io(0x00, 0x10),
            io(0x81, 3),
            io(0x87, 1),
            io(0x89, 3),
            io(0x8F, 1),
            io(0xC0, 0x20),
            Resource::Dma { channels: vec![4] },
        ],
    )?);
    if config.floppy {
        body.push(isa_device(
            "FDC0",
            "PNP0700",
            None,
            // SRA/SRB at 0x3F0-0x3F1 decode too; 0x3F6 is the IDE primary's.
            &[
                io(0x3F0, 6),
                io(0x3F7, 1),
                irq(IRQ_FLOPPY),
                Resource::Dma { channels: vec![2] },
            ],
        )?);
    }
    device("ISA", &body)
}
