//! The firmware's ACPI/MP tables describe the chipset with constants of their own
//! (`aero_firmware::tables::platform`); these tests keep the device models and those
//! descriptions in step, so a guest never reads tables that lie about the hardware.

use aero_firmware::tables::platform as fw;

use super::acpi_pm::{self, AcpiPm, AcpiPmLayout, SleepRequest};
use super::hpet::{self, Hpet};
use super::ioapic::{self, IoApic};
use super::lapic::{self, LocalApic};
use super::piix3;
use super::reset_control::{self, ResetControl, ResetKind};
use super::rtc;
use super::serial;
use super::{Mmio, PortIo};

#[test]
fn apic_bases_versions_and_pins() {
    assert_eq!(lapic::DEFAULT_BASE, u64::from(fw::LAPIC_BASE));
    assert_eq!(ioapic::DEFAULT_BASE, u64::from(fw::IOAPIC_BASE));
    assert_eq!(ioapic::PINS as u32, fw::IOAPIC_PINS);
    let mut lapic = LocalApic::new(0, true);
    assert_eq!(lapic.mmio_read(0x30, 4) as u8, fw::LAPIC_VERSION);
    let mut io = IoApic::new(1);
    io.mmio_write(0x00, 4, 0x01);
    let version = io.mmio_read(0x10, 4);
    assert_eq!(version as u8, fw::IOAPIC_VERSION);
    assert_eq!(((version >> 16) & 0xFF) + 1, u64::from(fw::IOAPIC_PINS));
}

#[test]
fn hpet_matches_its_table() {
    assert_eq!(hpet::DEFAULT_BASE, u64::from(fw::HPET_BASE));
    let mut hpet = Hpet::new();
    let caps = hpet.mmio_read(0, 8);
    assert_eq!((caps >> 16) as u16, fw::HPET_VENDOR_ID);
    assert_eq!((caps >> 32) as u32, fw::HPET_PERIOD_FS);
    assert_eq!(((caps >> 8) & 0x1F) + 1, u64::from(fw::HPET_TIMERS));
    assert_ne!(caps & (1 << 15), 0, "legacy replacement capable");
}

#[test]
fn acpi_pm_layout_matches_fadt() {
    let layout = AcpiPmLayout::default();
    assert_eq!(layout.pm1a_evt, fw::PM1A_EVT_BLK);
    assert_eq!(layout.pm1a_cnt, fw::PM1A_CNT_BLK);
    assert_eq!(layout.pm_tmr, fw::PM_TMR_BLK);
    assert_eq!(layout.gpe0, fw::GPE0_BLK);
    assert_eq!(layout.gpe0_half_len * 2, fw::GPE0_BLK_LEN);
    assert_eq!(layout.smi_cmd, fw::SMI_CMD_PORT);
    assert_eq!(layout.acpi_enable, fw::ACPI_ENABLE);
    assert_eq!(layout.acpi_disable, fw::ACPI_DISABLE);
    assert_eq!(layout.s5_slp_typ, fw::SLP_TYP_S5);
    assert_eq!(layout.s4_slp_typ, fw::SLP_TYP_S4);
    assert_eq!(acpi_pm::SCI_IRQ, fw::SCI_IRQ);
    // The OS's S5 sequence with the table's values powers off.
    let mut pm = AcpiPm::new(layout);
    pm.io_write(fw::SMI_CMD_PORT, 1, u32::from(fw::ACPI_ENABLE));
    pm.io_write(
        fw::PM1A_CNT_BLK,
        2,
        u32::from(fw::SLP_TYP_S5) << 10 | 1 << 13,
    );
    assert_eq!(pm.take_sleep_request(), Some(SleepRequest::PowerOff));
    // S4 (hibernate) powers off too; S3 is not supported.
    pm.io_write(
        fw::PM1A_CNT_BLK,
        2,
        u32::from(fw::SLP_TYP_S4) << 10 | 1 << 13,
    );
    assert_eq!(pm.take_sleep_request(), Some(SleepRequest::PowerOff));
    pm.io_write(fw::PM1A_CNT_BLK, 2, 1 << 10 | 1 << 13);
    assert_eq!(
        pm.take_sleep_request(),
        Some(SleepRequest::Sleep { slp_typ: 1 })
    );
}

#[test]
fn reset_register_and_rtc_century() {
    assert_eq!(reset_control::PORT, fw::RESET_PORT);
    let mut reset = ResetControl::new();
    reset.io_write(fw::RESET_PORT, 1, u32::from(fw::RESET_VALUE));
    assert_eq!(reset.take_reset_request(), Some(ResetKind::Hard));
    assert_eq!(rtc::REG_CENTURY, fw::RTC_CENTURY_INDEX);
    assert_eq!(serial::COM1_BASE, fw::COM1_BASE);
}

#[test]
fn pci_interrupt_routing_matches_prt() {
    assert_eq!(piix3::PIRQ_ROUTE, fw::PIIX3_PIRQ_ROUTE_REG);
    assert_eq!(u32::from(piix3::PIRQ_GSI_BASE), fw::PIRQ_GSI_BASE);
    for slot in 0..32u8 {
        for pin0 in 0..4u8 {
            // The firmware counts pins from 0 (INTA), config space from 1.
            assert_eq!(
                piix3::pirq_for(slot, pin0 + 1),
                fw::pirq_for(slot, pin0),
                "slot {slot} pin {pin0}"
            );
        }
    }
}

#[test]
fn piix4_pm_base_relocation_matches_fadt() {
    use super::pci::PciFunction;
    use super::piix4_pm::{PMBA, PMREGMISC, Piix4Pm};
    let mut function = Piix4Pm::new();
    function.config_write(PMBA, 4, u32::from(fw::PM_IO_BASE) | 1);
    function.config_write(PMREGMISC, 1, 1);
    let base = function.pm_io_base().expect("PM I/O enabled");
    let mut pm = AcpiPm::new(AcpiPmLayout::default());
    pm.relocate_pm_base(base);
    assert_eq!(
        pm.layout(),
        AcpiPmLayout::default(),
        "the BIOS's PMBA keeps the FADT's blocks"
    );
}

#[test]
fn ecam_window_matches_the_mcfg_description() {
    use crate::memory_map::{ECAM_BASE, ECAM_BUSES, PCI_HOLE_START, PCI_MMIO_START};
    use aero_firmware::tables::acpi::EcamWindow;
    assert_eq!(ECAM_BASE, u64::from(fw::PCI_ECAM_BASE));
    assert_eq!(ECAM_BUSES, fw::PCI_ECAM_BUSES);
    assert_eq!(PCI_MMIO_START, u64::from(fw::PCI_MMIO32_BASE));
    let window = EcamWindow::default();
    assert_eq!(window.base, ECAM_BASE);
    assert_eq!(window.size(), super::pc_pci::PcPci::new().ecam_size());
    // Outside RAM, below the BAR window and the APIC/HPET/ROM ranges.
    const { assert!(ECAM_BASE >= PCI_HOLE_START) };
    assert!(ECAM_BASE + window.size() <= PCI_MMIO_START);
    assert!(PCI_MMIO_START < u64::from(fw::IOAPIC_BASE));
}
