//! Placement of the firmware tables built by `crate::tables`: ACPI in RAM below the top
//! of low memory (E820 ACPI reclaim/NVS), anchors (RSDP, SMBIOS entry, MP floating
//! pointer) in the ROM's table area.

use super::config::BiosConfig;
use super::e820::MemoryPlan;
use super::error::FirmwareError;
use super::rom::Rom;
use super::call::Call;
use super::Bios;

/// Blobs POST copies into RAM: `(physical address, bytes)`.
#[derive(Clone, Debug, Default)]
pub struct PlacedTables {
    pub ram_blobs: Vec<(u64, Vec<u8>)>,
}

pub fn build(_config: &BiosConfig, _memory: &MemoryPlan, _rom: &mut Rom) -> Result<PlacedTables, FirmwareError> {
    // TABLES: call site for crate::tables::{build_acpi, build_smbios, build_mptable}
    // once that module is part of the crate.
    tracing::warn!("firmware tables not built yet: no ACPI/SMBIOS/MP tables");
    Ok(PlacedTables::default())
}

impl Bios {
    pub(crate) fn install_tables(&self, c: &mut Call) -> Result<(), FirmwareError> {
        c.mem.fill(self.memory.acpi_base, (self.memory.nvs_base + super::e820::ACPI_NVS_SIZE - self.memory.acpi_base) as usize, 0)?;
        for (addr, bytes) in &self.tables.ram_blobs {
            c.mem.write(*addr, bytes)?;
        }
        Ok(())
    }
}
