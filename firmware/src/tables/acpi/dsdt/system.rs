//! Root-scope objects (interrupt model, sleep states), processors, the HPET device and the
//! ECAM window's motherboard-resource reservation.

use crate::tables::aml::resource::Resource;
use crate::tables::aml::*;
use crate::tables::platform::*;

/// `\PICM`, `\_PIC`, `\_S4` and `\_S5`.
pub fn root_objects() -> Result<Vec<Aml>, AmlError> {
    Ok(vec![
        // 0 until the OS calls _PIC(1) on switching to the IOAPIC.
        name("PICM", int(0))?,
        method("_PIC", 1, false, &[store(arg(0), name_ref("PICM")?)])?,
        // {SLP_TYPa, SLP_TYPb, reserved, reserved}. S4 lets an OS hibernate (Windows
        // offers it only with _S4); the PM device powers off for S4 and S5 alike.
        name(
            "_S4",
            package(&[
                int(SLP_TYP_S4.into()),
                int(SLP_TYP_S4.into()),
                int(0),
                int(0),
            ])?,
        )?,
        name(
            "_S5",
            package(&[
                int(SLP_TYP_S5.into()),
                int(SLP_TYP_S5.into()),
                int(0),
                int(0),
            ])?,
        )?,
    ])
}

/// `Processor(CPxx, id, 0, 0)` for each CPU: no P_BLK (no throttling/C2/C3 ports).
pub fn processors(cpu_count: u8) -> Result<Vec<Aml>, AmlError> {
    (0..cpu_count)
        .map(|id| processor(&format!("CP{id:02X}"), id, 0, 0, &[]))
        .collect()
}

pub fn hpet_device() -> Result<Aml, AmlError> {
    device(
        "HPET",
        &[
            name("_HID", eisa_id("PNP0103")?)?,
            name("_UID", int(0))?,
            name("_STA", int(0x0F))?,
            name(
                "_CRS",
                resource_template(&[Resource::Memory32Fixed {
                    writable: true,
                    base: HPET_BASE,
                    len: HPET_MMIO_SIZE,
                }])?,
            )?,
        ],
    )
}

/// `\_SB.ECAM` (`PNP0C02`): claims the ECAM window as a motherboard resource. Linux only
/// uses the MCFG window once it finds it reserved here ("reserved as ACPI motherboard
/// resource"), and it keeps the OS from giving the range to a device.
/// `base` and `len` come from a validated [`EcamWindow`] (below 4 GiB).
pub fn ecam_reservation(base: u32, len: u32) -> Result<Aml, AmlError> {
    device(
        "ECAM",
        &[
            name("_HID", eisa_id("PNP0C02")?)?,
            name("_UID", int(2))?,
            name("_STA", int(0x0F))?,
            name(
                "_CRS",
                resource_template(&[Resource::Memory32Fixed {
                    writable: true,
                    base,
                    len,
                }])?,
            )?,
        ],
    )
}
