//! Placement of the firmware tables built by `crate::tables`:
//! - ACPI: blob at the top of low RAM (`MemoryPlan::acpi_base`, FACS page NVS, rest
//!   reclaimable), RSDP in the ROM at F000:C000.
//! - SMBIOS: structure table in the ROM at E000:0000, entry point at F000:C040.
//! - MP: floating pointer + configuration table in the EBDA (built at POST, because it
//!   lists the PCI functions enumeration finds).

use tracing::{info, warn};

use super::Bios;
use super::call::Call;
use super::config::BiosConfig;
use super::e820::{ACPI_REGION_SIZE, MemoryPlan};
use super::error::FirmwareError;
use super::pci::PIRQ_IRQS;
use super::rom::{ROM_BASE, ROM_SIZE, Rom};
use crate::tables::acpi::MmioWindow64;
use crate::tables::{self, AcpiConfig, AcpiTables, MpConfig, PciIntxSource, SmbiosConfig};

pub const RSDP_IP: u16 = 0xC000;
pub const SMBIOS_ENTRY_IP: u16 = 0xC040;
pub const SMBIOS_TABLE_OFFSET: u16 = 0x0000;
/// Offset of the MP floating pointer inside the EBDA (16-byte aligned, first KiB).
pub const MP_EBDA_OFFSET: u64 = 0x10;
/// Size of the 64-bit PCI MMIO window above RAM.
const MMIO64_SIZE: u64 = 1 << 32;

#[derive(Clone, Debug)]
pub struct PlacedTables {
    pub acpi: AcpiTables,
    pub mmio64: MmioWindow64,
}

fn table_error(e: tables::TablesError) -> FirmwareError {
    FirmwareError::Config(format!("firmware tables: {e}"))
}

pub fn build(
    config: &BiosConfig,
    memory: &MemoryPlan,
    rom: &mut Rom,
) -> Result<PlacedTables, FirmwareError> {
    let cpu_count = u8::try_from(config.cpu_count)
        .map_err(|_| FirmwareError::Config("too many CPUs".into()))?;
    let mmio64 = MmioWindow64::above_ram((1 << 32) + memory.high_ram, MMIO64_SIZE);
    let acpi_config = AcpiConfig {
        cpu_count,
        pci_mmio32_base: u32::try_from(config.pci_mmio_start)
            .map_err(|_| FirmwareError::Config("PCI MMIO start above 4 GiB".into()))?,
        pci_mmio64: Some(mmio64),
        pci_ecam: config.pci_ecam,
        pci_irq_mode: config.pci_irq_mode,
        hpet: config.hpet,
        floppy: config.floppy_controller,
    };
    let acpi = tables::build_acpi(&acpi_config, memory.acpi_base as u32).map_err(table_error)?;
    if acpi.blob.len() as u64 > ACPI_REGION_SIZE {
        return Err(FirmwareError::Layout(format!(
            "ACPI tables are {} bytes, region holds {ACPI_REGION_SIZE}",
            acpi.blob.len()
        )));
    }
    rom.place(RSDP_IP, &acpi.rsdp)?;

    let smbios = tables::build_smbios(&SmbiosConfig {
        cpu_count,
        cpuid_signature: config.cpuid_signature,
        cpuid_features_edx: config.cpuid_features_edx,
        cpu_64bit: config.cpu_64bit,
        cpu_mhz: 0,
        ram_below_4g: memory.low_ram,
        ram_above_4g: memory.high_ram,
        bios_rom_size: ROM_SIZE as u32,
        bios_segment: (ROM_BASE >> 4) as u16,
        uuid: tables::smbios::DEFAULT_UUID,
        serial_number: "AERO-0001".to_owned(),
        tables_address: (ROM_BASE + SMBIOS_TABLE_OFFSET as u64) as u32,
    })
    .map_err(table_error)?;
    rom.place_low(SMBIOS_TABLE_OFFSET, &smbios.tables)?;
    rom.place(SMBIOS_ENTRY_IP, &smbios.entry_point)?;
    info!(
        acpi_base = memory.acpi_base,
        acpi_len = acpi.blob.len(),
        smbios_len = smbios.tables.len(),
        "firmware tables built"
    );
    Ok(PlacedTables { acpi, mmio64 })
}

impl Bios {
    /// POST: copy the ACPI blob into RAM and build the MP table into the EBDA.
    pub(crate) fn install_tables(&self, c: &mut Call) -> Result<(), FirmwareError> {
        c.mem
            .fill(self.memory.acpi_base, ACPI_REGION_SIZE as usize, 0)?;
        c.mem.write(self.memory.acpi_base, &self.tables.acpi.blob)?;

        let mp_base = self.memory.ebda_base + MP_EBDA_OFFSET;
        let mp = MpConfig {
            cpu_count: self.config.cpu_count as u8,
            cpuid_signature: self.config.cpuid_signature,
            cpuid_features_edx: self.config.cpuid_features_edx,
            pci_irq_mode: self.config.pci_irq_mode,
            pirq_routes: PIRQ_IRQS.map(Some),
            pci_devices: self
                .state
                .pci
                .intx
                .iter()
                .map(|&(slot, pin)| PciIntxSource { slot, pin })
                .collect(),
        };
        match tables::build_mptable(&mp, mp_base as u32) {
            Ok(bytes) if bytes.len() as u64 <= super::e820::EBDA_SIZE - MP_EBDA_OFFSET => {
                c.mem.write(mp_base, &bytes)?
            }
            Ok(bytes) => warn!(
                len = bytes.len(),
                "MP table does not fit in the EBDA; not installed"
            ),
            Err(e) => warn!("MP table not built: {e}"),
        }
        Ok(())
    }

    pub(crate) fn mmio64_window(&self) -> (u64, u64) {
        let w = self.tables.mmio64;
        (w.base, w.base.saturating_add(w.size))
    }
}
