//! Intel 82371SB PIIX3 PCI-to-ISA bridge, function 00:01.0, 8086:7000 (multi-function).
//!
//! Follows the 82371SB datasheet for what firmware and operating systems touch: the PIRQ
//! route control registers (0x60–0x63: bit 7 disables routing, bits 3–0 pick ISA IRQ 3–7,
//! 9–12, 14 or 15), the top-of-memory, misc and APIC base registers, which read back. The
//! ELCR (0x4D0/0x4D1) lives with the PIC; the IDE/USB functions are separate devices.
//!
//! Interrupt routing as on QEMU's `pc`: device `d` pin INTx (1 = INTA) drives PIRQ
//! `(x - 1 + d - 1) mod 4` ([`pirq_for`]). In PIC mode the machine raises the ISA IRQ that
//! [`Piix3IsaBridge::pirq_route`] names; in APIC mode PIRQA–D drive I/O APIC inputs 16–19
//! ([`PIRQ_GSI_BASE`]), which the ACPI `_PRT` must describe.

use super::IrqLines;
use super::pci::{ConfigSpace, PciFunction};

pub const PIRQ_ROUTE: u8 = 0x60;
/// I/O APIC input of PIRQA (PIRQB–D follow).
pub const PIRQ_GSI_BASE: u8 = 16;

/// The PIRQ (0 = A … 3 = D) a PCI device's interrupt pin (1 = INTA# … 4 = INTD#) drives.
pub fn pirq_for(device: u8, pin: u8) -> u8 {
    (pin.wrapping_sub(1).wrapping_add(device).wrapping_sub(1)) & 3
}

/// The PIIX3 ISA bridge function.
#[derive(Clone, Debug)]
pub struct Piix3IsaBridge {
    config: ConfigSpace,
}

impl Default for Piix3IsaBridge {
    fn default() -> Self {
        Self::new()
    }
}

impl Piix3IsaBridge {
    pub fn new() -> Piix3IsaBridge {
        let mut config = ConfigSpace::new(0x8086, 0x7000, 0x06_01_00, 0x00, 0x80);
        // Command: I/O, memory and special cycles are hardwired on for the ISA bridge.
        config.set_u16(0x04, 0x0007);
        config.set_writable_u16(0x04, 0x0008);
        config.set_u16(0x06, 0x0200); // DEVSEL medium
        config.set_writable_range(0x4C, 0x4F); // IORT, XBCS
        config.set_u8(0x4C, 0x4D);
        config.set_u16(0x4E, 0x0003);
        config.set_writable_range(PIRQ_ROUTE, PIRQ_ROUTE + 3);
        config.set_u32(PIRQ_ROUTE, 0x8080_8080);
        config.set_writable_range(0x69, 0x6A); // TOM, MSTAT
        config.set_u8(0x69, 0x02);
        config.set_writable_range(0x70, 0x71); // MBIRQ0/1
        config.set_u16(0x70, 0x8080);
        config.set_writable_range(0x76, 0x78); // MBDMA, PCSC
        config.set_u16(0x76, 0x0C0C);
        config.set_writable_u8(0x80, 0x7F); // APICBASE
        config.set_writable_range(0xA0, 0xAB); // SMI / power management control
        Piix3IsaBridge { config }
    }

    /// The ISA IRQ lines the PIRQ inputs drive in PIC mode: PIRQs are open-drain, so
    /// several sharing one IRQ wire-OR (`pirq_levels[n]` = PIRQn asserted). The BIOS marks
    /// these IRQs level-triggered in the ELCR.
    pub fn isa_lines(&self, pirq_levels: [bool; 4]) -> IrqLines {
        let mut lines = IrqLines::NONE;
        for (pirq, &asserted) in pirq_levels.iter().enumerate() {
            if let (true, Some(irq)) = (asserted, self.pirq_route(pirq as u8)) {
                lines.set(irq, true);
            }
        }
        lines
    }

    /// ISA IRQ that PIRQ `pirq` (0–3) is routed to, `None` when disabled or invalid.
    pub fn pirq_route(&self, pirq: u8) -> Option<u8> {
        let value = self.config.u8_at(PIRQ_ROUTE + (pirq & 3));
        let irq = value & 0x0F;
        let valid = matches!(irq, 3..=7 | 9..=12 | 14 | 15);
        (value & 0x80 == 0 && valid).then_some(irq)
    }
}

impl PciFunction for Piix3IsaBridge {
    fn config(&self) -> &ConfigSpace {
        &self.config
    }

    fn config_mut(&mut self) -> &mut ConfigSpace {
        &mut self.config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_and_multifunction_header() {
        let bridge = Piix3IsaBridge::new();
        assert_eq!(bridge.config().u32_at(0), 0x7000_8086);
        assert_eq!(bridge.config().u32_at(0x08), 0x0601_0000);
        assert_eq!(bridge.config().u8_at(0x0E), 0x80);
    }

    #[test]
    fn pirq_routing_registers() {
        let mut bridge = Piix3IsaBridge::new();
        assert_eq!(bridge.pirq_route(0), None, "disabled at reset");
        bridge.config_write(0x60, 4, 0x0B0A_0B0A);
        assert_eq!(bridge.config_read(0x60, 4), 0x0B0A_0B0A);
        assert_eq!(bridge.pirq_route(0), Some(10));
        assert_eq!(bridge.pirq_route(1), Some(11));
        bridge.config_write(0x62, 1, 0x08); // IRQ 8 is not routable
        assert_eq!(bridge.pirq_route(2), None);
        bridge.config_write(0x63, 1, 0x8B);
        assert_eq!(bridge.pirq_route(3), None);
    }

    #[test]
    fn shared_pirqs_wire_or_onto_isa_lines() {
        let mut bridge = Piix3IsaBridge::new();
        bridge.config_write(0x60, 4, 0x0B0B_0A0A);
        assert_eq!(bridge.isa_lines([false; 4]), IrqLines::NONE);
        assert_eq!(
            bridge.isa_lines([true, false, false, false]),
            IrqLines::single(10)
        );
        assert_eq!(
            bridge.isa_lines([false, true, true, false]),
            IrqLines((1 << 10) | (1 << 11))
        );
        bridge.config_write(0x63, 1, 0x80);
        assert_eq!(
            bridge.isa_lines([false, false, false, true]),
            IrqLines::NONE,
            "PIRQD disabled"
        );
    }

    #[test]
    fn swizzle_matches_qemu_pc() {
        assert_eq!(pirq_for(1, 1), 0);
        assert_eq!(pirq_for(2, 1), 1);
        assert_eq!(pirq_for(3, 1), 2);
        assert_eq!(pirq_for(4, 1), 3);
        assert_eq!(pirq_for(5, 1), 0);
        assert_eq!(pirq_for(3, 2), 3);
        assert_eq!(pirq_for(0, 0), 2);
    }

    #[test]
    fn command_register_is_mostly_hardwired() {
        let mut bridge = Piix3IsaBridge::new();
        bridge.config_write(0x04, 2, 0);
        assert_eq!(bridge.config_read(0x04, 2), 0x0007);
        bridge.config_write(0x04, 2, 0xFFFF);
        assert_eq!(bridge.config_read(0x04, 2), 0x000F);
    }
}
