//! The fixed facts about Aero's PC platform (i440FX host bridge + PIIX3, QEMU `pc`-like)
//! that every firmware table describes. The chipset models must match these values.

/// Local APIC MMIO base, identical for every CPU.
pub const LAPIC_BASE: u32 = 0xFEE0_0000;
/// The single IOAPIC: 24 input pins starting at GSI 0. Its APIC ID is the CPU count (so
/// it never collides with a LAPIC ID).
pub const IOAPIC_BASE: u32 = 0xFEC0_0000;
pub const IOAPIC_PINS: u32 = 24;
/// IOAPIC version register value as reported in the MP table (82093AA-style).
pub const IOAPIC_VERSION: u8 = 0x11;
/// LAPIC version register value (integrated xAPIC).
pub const LAPIC_VERSION: u8 = 0x14;

/// HPET block: 3 comparators, 10 MHz, 64-bit counter, legacy-replacement capable.
pub const HPET_BASE: u32 = 0xFED0_0000;
pub const HPET_TIMERS: u8 = 3;
/// Period of the HPET main counter in femtoseconds (10 MHz).
pub const HPET_PERIOD_FS: u32 = 100_000_000;
pub const HPET_VENDOR_ID: u16 = 0x8086;
/// Size of the HPET register block that `_CRS` claims.
pub const HPET_MMIO_SIZE: u32 = 0x400;

/// PCI Express enhanced configuration window (ECAM/MMCONFIG) of segment 0, buses
/// 0..`PCI_ECAM_BUSES`, 1 MiB per bus: the first 256 MiB of the PCI hole. It is a
/// motherboard resource (MCFG, E820 reserved, `PNP0C02` in the DSDT), never a BAR window.
pub const PCI_ECAM_BASE: u32 = 0xE000_0000;
pub const PCI_ECAM_BUSES: u16 = 256;
/// 32-bit PCI BARs are placed from here (just above the ECAM window) up to the IOAPIC.
pub const PCI_MMIO32_BASE: u32 = 0xF000_0000;

/// ACPI fixed-hardware register blocks (PIIX4-PM-like layout at I/O 0xB000).
pub const PM1A_EVT_BLK: u16 = 0xB000;
pub const PM1_EVT_LEN: u8 = 4;
pub const PM1A_CNT_BLK: u16 = 0xB004;
pub const PM1_CNT_LEN: u8 = 2;
pub const PM_TMR_BLK: u16 = 0xB008;
pub const PM_TMR_LEN: u8 = 4;
pub const GPE0_BLK: u16 = 0xAFE0;
pub const GPE0_BLK_LEN: u8 = 4;
/// The PM I/O block as a whole (claimed by the motherboard-resources device).
pub const PM_IO_BASE: u16 = 0xB000;
pub const PM_IO_LEN: u8 = 0x40;

/// Software SMI command port; writing `ACPI_ENABLE`/`ACPI_DISABLE` toggles SCI_EN.
pub const SMI_CMD_PORT: u16 = 0xB2;
pub const ACPI_ENABLE: u8 = 0xF1;
pub const ACPI_DISABLE: u8 = 0xF0;
/// The SCI is ISA IRQ 9, level-triggered, active high (as QEMU wires it).
pub const SCI_IRQ: u8 = 9;

/// SLP_TYP value that the ACPI PM device treats as S5 (soft off) when SLP_EN is written.
pub const SLP_TYP_S5: u8 = 0;
/// SLP_TYP value of S4 (hibernate): the OS saved its memory to disk, and the ACPI PM
/// device powers off as for S5 (QEMU's PIIX4 uses the same value).
pub const SLP_TYP_S4: u8 = 2;

/// Reset register: I/O port 0xCF9 (PIIX3 reset control), value 0x06 = hard reset.
pub const RESET_PORT: u16 = 0xCF9;
pub const RESET_VALUE: u8 = 0x06;

/// CMOS index of the century byte (BCD), advertised in the FADT.
pub const RTC_CENTURY_INDEX: u8 = 0x32;

/// PIIX3 function on bus 0 whose config registers 0x60–0x63 hold PIRQA–PIRQD routing.
pub const PIIX3_SLOT: u8 = 1;
pub const PIIX3_PIRQ_ROUTE_REG: u8 = 0x60;
/// ISA IRQs a PCI link (PIRQx) may be routed to. The BIOS programs PIRQA–D from this set
/// and the MADT declares each of them level-triggered, active high.
pub const PCI_LINK_IRQS: [u8; 3] = [5, 10, 11];

/// The PIRQ line (0 = PIRQA … 3 = PIRQD) that INTx pin `pin` (0 = INTA … 3 = INTD) of a
/// device in `slot` on bus 0 is wired to: the rotation used by QEMU's i440FX/PIIX3 and
/// real PIIX boards, `(slot + pin - 1) mod 4`, so slot 1 INTA (the PIIX3 itself) is PIRQA
/// and PIIX3 USB (slot 1 INTD) is PIRQD. Must match the chipset's INTx wiring.
pub fn pirq_for(slot: u8, pin: u8) -> u8 {
    ((u32::from(slot) + u32::from(pin) + 3) % 4) as u8
}

/// PCI interrupts that bypass the PIRQ lines: the PIIX4 PM function (00:01.3, paired with
/// the PIIX3 as on QEMU `pc`) reports INTA, but that is its SCI, hard-wired to ISA IRQ 9.
/// It is the only INTA user in slot 1 (IDE uses IRQ 14/15, or INTB in PCI native mode;
/// USB uses INTD), so the whole slot-1 INTA entry points at the SCI.
pub fn hardwired_irq(slot: u8, pin: u8) -> Option<u8> {
    (slot == PIIX3_SLOT && pin == 0).then_some(SCI_IRQ)
}

/// First IOAPIC input that PIRQA reaches when PCI interrupts are wired directly to the
/// IOAPIC ([`crate::tables::PciIrqMode::DirectGsi`]); PIRQA–D use GSI 16–19.
pub const PIRQ_GSI_BASE: u32 = 16;

/// Legacy ISA interrupt lines.
pub const IRQ_PIT: u8 = 0;
pub const IRQ_KEYBOARD: u8 = 1;
pub const IRQ_CASCADE: u8 = 2;
pub const IRQ_COM1: u8 = 4;
pub const IRQ_FLOPPY: u8 = 6;
pub const IRQ_RTC: u8 = 8;
pub const IRQ_MOUSE: u8 = 12;
pub const IRQ_FPU: u8 = 13;
pub const IRQ_IDE_PRIMARY: u8 = 14;
pub const IRQ_IDE_SECONDARY: u8 = 15;
/// The PIT's output reaches IOAPIC pin 2 (pin 0 carries the 8259's INTR).
pub const PIT_GSI: u32 = 2;

pub const COM1_BASE: u16 = 0x3F8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pirq_rotation_matches_piix_boards() {
        assert_eq!(pirq_for(1, 0), 0); // PIIX3 INTA → PIRQA
        assert_eq!(pirq_for(1, 3), 3); // PIIX3 USB INTD → PIRQD
        assert_eq!(pirq_for(2, 0), 1);
        assert_eq!(pirq_for(3, 0), 2);
        assert_eq!(pirq_for(4, 0), 3);
        assert_eq!(pirq_for(5, 0), 0);
        assert_eq!(pirq_for(2, 3), 0);
        assert_eq!(pirq_for(31, 3), 1);
    }

    #[test]
    fn only_the_pm_function_is_hardwired() {
        assert_eq!(hardwired_irq(1, 0), Some(9));
        assert_eq!(hardwired_irq(1, 3), None);
        assert_eq!(hardwired_irq(2, 0), None);
    }
}
