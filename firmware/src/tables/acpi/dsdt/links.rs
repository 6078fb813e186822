//! PCI interrupt link devices (`PNP0C0F`). LNKA–LNKD drive the PIIX3 PIRQ route
//! registers (0x60–0x63 of 00:01.0): bit 7 set = disabled, bits 3:0 = ISA IRQ.
//! GSIA–GSID (DirectGsi mode only) are fixed links to IOAPIC pins 16–19.

use crate::tables::acpi::PciIrqMode;
use crate::tables::aml::resource::{Polarity, Resource, Trigger};
use crate::tables::aml::*;
use crate::tables::platform::{PCI_LINK_IRQS, PIRQ_GSI_BASE, SCI_IRQ};

const PIRQ_DISABLED: u64 = 0x80;
const PIRQ_IRQ_MASK: u64 = 0x0F;
/// `_STA` values: present+enabled+functioning, or present+functioning but disabled.
const STA_ENABLED: u64 = 0x0B;
const STA_DISABLED: u64 = 0x09;
/// Byte offset of the first interrupt number inside an Extended Interrupt descriptor.
const EXT_IRQ_NUMBER_OFFSET: u64 = 5;

/// Fixed link for the PIIX4 PM function's INTA, which is the SCI.
pub const SCI_LINK_NAME: &str = "LNKS";

pub fn pirq_link_name(pirq: u8) -> String {
    format!("LNK{}", char::from(b'A' + pirq % 4))
}

pub fn gsi_link_name(pirq: u8) -> String {
    format!("GSI{}", char::from(b'A' + pirq % 4))
}

/// The PIIX3 register field (declared in the ISA bridge) behind PIRQ `pirq`.
pub fn pirq_register(pirq: u8) -> String {
    format!("\\_SB.PCI0.ISA.PRQ{}", char::from(b'A' + pirq % 4))
}

/// PCI lines are level-triggered and shareable; Aero's interrupt controllers see them
/// active high (no inverter is modelled), as QEMU declares them.
fn pci_interrupt(irqs: Vec<u32>) -> Resource {
    Resource::Interrupt {
        consumer: true,
        trigger: Trigger::Level,
        polarity: Polarity::ActiveHigh,
        shared: true,
        irqs,
    }
}

pub fn link_devices(mode: PciIrqMode) -> Result<Vec<Aml>, AmlError> {
    let mut out = helper_methods()?;
    for pirq in 0..4 {
        out.push(pirq_link(pirq)?);
    }
    out.push(fixed_link(SCI_LINK_NAME, 0, u32::from(SCI_IRQ))?);
    if mode == PciIrqMode::DirectGsi {
        for pirq in 0..4 {
            out.push(gsi_link(pirq)?);
        }
    }
    Ok(out)
}

/// Shared bodies of the link methods, parameterised by the route register's value.
fn helper_methods() -> Result<Vec<Aml>, AmlError> {
    let disabled = |reg: Aml| and(reg, int(PIRQ_DISABLED), no_target());
    Ok(vec![
        // LSTA(reg) → _STA value.
        method(
            "LSTA",
            1,
            false,
            &[
                if_(disabled(arg(0)), &[ret(int(STA_DISABLED))])?,
                ret(int(STA_ENABLED)),
            ],
        )?,
        // LCRS(reg) → current resource template (IRQ 0 when the link is disabled). As
        // QEMU's and SeaBIOS's tables have done for Windows for years: a Serialized method
        // with the template in a Name and its IRQ patched through CreateDWordField. IRQs
        // are < 16, so the descriptor's first interrupt number holds the whole value.
        method(
            "LCRS",
            1,
            true,
            &[
                name("RTPL", resource_template(&[pci_interrupt(vec![0])])?)?,
                create_dword_field(name_ref("RTPL")?, int(EXT_IRQ_NUMBER_OFFSET), "IRQN")?,
                if_(
                    lnot(disabled(arg(0))),
                    &[store(
                        and(arg(0), int(PIRQ_IRQ_MASK), no_target()),
                        name_ref("IRQN")?,
                    )],
                )?,
                ret(name_ref("RTPL")?),
            ],
        )?,
        // LSRS(template) → route register value for the IRQ the OS chose.
        method(
            "LSRS",
            1,
            true,
            &[
                create_dword_field(arg(0), int(EXT_IRQ_NUMBER_OFFSET), "IRQN")?,
                ret(and(name_ref("IRQN")?, int(PIRQ_IRQ_MASK), no_target())),
            ],
        )?,
    ])
}

fn pirq_link(pirq: u8) -> Result<Aml, AmlError> {
    let reg = pirq_register(pirq);
    let choices = PCI_LINK_IRQS.iter().map(|&irq| u32::from(irq)).collect();
    device(
        &pirq_link_name(pirq),
        &[
            name("_HID", eisa_id("PNP0C0F")?)?,
            name("_UID", int(u64::from(pirq) + 1))?,
            name("_PRS", resource_template(&[pci_interrupt(choices)])?)?,
            method(
                "_STA",
                0,
                false,
                &[ret(call("\\_SB.LSTA", &[name_ref(&reg)?])?)],
            )?,
            method(
                "_DIS",
                0,
                false,
                &[or(name_ref(&reg)?, int(PIRQ_DISABLED), name_ref(&reg)?)],
            )?,
            method(
                "_CRS",
                0,
                false,
                &[ret(call("\\_SB.LCRS", &[name_ref(&reg)?])?)],
            )?,
            method(
                "_SRS",
                1,
                false,
                &[store(call("\\_SB.LSRS", &[arg(0)])?, name_ref(&reg)?)],
            )?,
        ],
    )
}

fn gsi_link(pirq: u8) -> Result<Aml, AmlError> {
    fixed_link(
        &gsi_link_name(pirq),
        u64::from(pirq) + 5,
        PIRQ_GSI_BASE + u32::from(pirq),
    )
}

/// A link hard-wired to one interrupt (the same number as ISA IRQ and GSI).
fn fixed_link(link: &str, uid: u64, irq: u32) -> Result<Aml, AmlError> {
    let template = resource_template(&[pci_interrupt(vec![irq])])?;
    device(
        link,
        &[
            name("_HID", eisa_id("PNP0C0F")?)?,
            name("_UID", int(uid))?,
            name("_PRS", template.clone())?,
            name("_CRS", template)?,
            // Hard-wired: nothing to program or disable.
            method("_SRS", 1, false, &[])?,
            method("_DIS", 0, false, &[])?,
        ],
    )
}
