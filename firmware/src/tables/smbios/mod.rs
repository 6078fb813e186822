//! SMBIOS 2.8 tables (DMTF DSP0134) with the 32-bit "_SM_" entry point, which Windows 7
//! and every Linux read. Structures: BIOS (0), system (1), chassis (3), processors (4),
//! physical memory array (16), memory device (17), mapped addresses (19), boot info (32)
//! and end-of-table (127).
//!
//! For SeaBIOS over fw_cfg, the same output serves as `etc/smbios/smbios-anchor` (the
//! entry point) and `etc/smbios/smbios-tables`; SeaBIOS copies the structures and
//! rewrites the table address and checksums itself, so `tables_address` does not matter.

mod structure;

use structure::Structure;

use super::TablesError;
use super::checksum::fill_checksum;

/// Fixed identification strings. The release date is a constant so builds stay
/// reproducible (MM/DD/YYYY as SMBIOS requires).
pub const BIOS_VENDOR: &str = "Aero";
pub const BIOS_VERSION: &str = env!("CARGO_PKG_VERSION");
pub const BIOS_RELEASE_DATE: &str = "11/22/2026";
pub const SYSTEM_MANUFACTURER: &str = "Aero";
pub const SYSTEM_PRODUCT: &str = "Aero PC";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmbiosConfig {
    pub cpu_count: u8,
    /// CPUID leaf 1 EAX / EDX, reported as the processor ID.
    pub cpuid_signature: u32,
    pub cpuid_features_edx: u32,
    /// The CPU supports long mode (characteristics bit "64-bit capable").
    pub cpu_64bit: bool,
    /// Nominal speed reported in MHz (0 = unknown).
    pub cpu_mhz: u16,
    /// RAM below the PCI hole and RAM remapped above 4 GiB, in bytes.
    pub ram_below_4g: u64,
    pub ram_above_4g: u64,
    /// Size and real-mode segment of the system BIOS ROM.
    pub bios_rom_size: u32,
    pub bios_segment: u16,
    /// System UUID bytes as stored in the table (first three fields little-endian).
    pub uuid: [u8; 16],
    pub serial_number: String,
    /// Guest-physical address where the BIOS will copy `tables` (below 4 GiB).
    pub tables_address: u32,
}

/// A fixed, recognisable UUID so that guests see the same machine on every boot.
pub const DEFAULT_UUID: [u8; 16] = *b"AeroPC\0\x01\0\0\0\0\0\0\0\x01";

impl Default for SmbiosConfig {
    fn default() -> SmbiosConfig {
        SmbiosConfig {
            cpu_count: 1,
            cpuid_signature: 0,
            cpuid_features_edx: 0,
            cpu_64bit: true,
            cpu_mhz: 0,
            ram_below_4g: 512 << 20,
            ram_above_4g: 0,
            bios_rom_size: 128 << 10,
            bios_segment: 0xE000,
            uuid: DEFAULT_UUID,
            serial_number: "AERO-0001".to_owned(),
            tables_address: 0,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmbiosTables {
    /// 31-byte SMBIOS 2.8 entry point; the BIOS places it on a 16-byte boundary in
    /// 0xF0000–0xFFFFF.
    pub entry_point: [u8; 31],
    /// The structure table, to be copied to `config.tables_address`.
    pub tables: Vec<u8>,
}

const ENTRY_POINT_LEN: u8 = 0x1F;
const SMBIOS_MAJOR: u8 = 2;
const SMBIOS_MINOR: u8 = 8;

mod handle {
    pub const BIOS: u16 = 0x0000;
    pub const SYSTEM: u16 = 0x0100;
    pub const CHASSIS: u16 = 0x0300;
    pub const PROCESSOR: u16 = 0x0400;
    pub const MEMORY_ARRAY: u16 = 0x1000;
    pub const MEMORY_DEVICE: u16 = 0x1100;
    pub const MAPPED_ADDRESS: u16 = 0x1300;
    pub const BOOT_INFO: u16 = 0x2000;
    pub const END: u16 = 0x7F00;
}

/// "Not provided" handle for optional references.
const NO_HANDLE: u16 = 0xFFFE;
/// "No such structure" handle (caches).
const ABSENT_HANDLE: u16 = 0xFFFF;

pub fn build_smbios(config: &SmbiosConfig) -> Result<SmbiosTables, TablesError> {
    if !(1..=15).contains(&config.cpu_count) {
        return Err(TablesError::InvalidConfig(format!(
            "cpu_count {} outside 1..=15",
            config.cpu_count
        )));
    }
    if config.ram_below_4g == 0 || config.ram_below_4g > 1 << 32 {
        return Err(TablesError::InvalidConfig(format!(
            "ram_below_4g {:#x} invalid",
            config.ram_below_4g
        )));
    }
    let mut structures = vec![bios(config)?, system(config)?, chassis()?];
    for cpu in 0..config.cpu_count {
        structures.push(processor(config, cpu)?);
    }
    structures.extend(memory(config)?);
    structures.push(boot_info());
    structures.push(Structure::new(127, handle::END));

    let encoded: Vec<Vec<u8>> = structures.iter().map(Structure::encode).collect();
    let max_size = encoded.iter().map(Vec::len).max().unwrap_or(0);
    let tables: Vec<u8> = encoded.concat();
    let table_len = u16::try_from(tables.len()).map_err(|_| TablesError::TooLarge {
        what: "SMBIOS structure table",
        len: tables.len(),
        max: 0xFFFF,
    })?;
    let entry_point = entry_point(
        config.tables_address,
        table_len,
        max_size as u16,
        encoded.len() as u16,
    );
    Ok(SmbiosTables {
        entry_point,
        tables,
    })
}

fn entry_point(address: u32, table_len: u16, max_size: u16, count: u16) -> [u8; 31] {
    let mut e = [0u8; 31];
    e[0..4].copy_from_slice(b"_SM_");
    e[5] = ENTRY_POINT_LEN;
    e[6] = SMBIOS_MAJOR;
    e[7] = SMBIOS_MINOR;
    e[8..10].copy_from_slice(&max_size.to_le_bytes());
    // e[10] entry point revision 0, e[11..16] formatted area: zero.
    e[16..21].copy_from_slice(b"_DMI_");
    e[22..24].copy_from_slice(&table_len.to_le_bytes());
    e[24..28].copy_from_slice(&address.to_le_bytes());
    e[28..30].copy_from_slice(&count.to_le_bytes());
    e[30] = (SMBIOS_MAJOR << 4) | SMBIOS_MINOR; // BCD revision
    fill_checksum(&mut e, 16..31, 21); // intermediate checksum over the _DMI_ part
    fill_checksum(&mut e, 0..31, 4);
    e
}

fn bios(config: &SmbiosConfig) -> Result<Structure, TablesError> {
    const ISA: u64 = 1 << 4;
    const PCI: u64 = 1 << 7;
    const CD_BOOT: u64 = 1 << 15;
    const SELECTABLE_BOOT: u64 = 1 << 16;
    const EDD: u64 = 1 << 19;
    const EXT1_ACPI: u8 = 1 << 0;
    const EXT2_VIRTUAL_MACHINE: u8 = 1 << 4;
    let mut s = Structure::new(0, handle::BIOS);
    let vendor = s.string(BIOS_VENDOR)?;
    let version = s.string(BIOS_VERSION)?;
    s.bytes(&[vendor, version]);
    s.u16(config.bios_segment);
    let date = s.string(BIOS_RELEASE_DATE)?;
    s.bytes(&[date]);
    // ROM size in 64 KiB units minus one.
    s.bytes(&[(config.bios_rom_size.div_ceil(64 << 10).clamp(1, 256) - 1) as u8]);
    s.u64(ISA | PCI | CD_BOOT | SELECTABLE_BOOT | EDD);
    s.bytes(&[EXT1_ACPI, EXT2_VIRTUAL_MACHINE]);
    let (major, minor) = version_numbers(BIOS_VERSION);
    s.bytes(&[major, minor, 0xFF, 0xFF]); // no embedded controller firmware
    Ok(s)
}

fn version_numbers(version: &str) -> (u8, u8) {
    let mut parts = version.split('.').map(|p| p.parse::<u8>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

fn system(config: &SmbiosConfig) -> Result<Structure, TablesError> {
    const WAKE_POWER_SWITCH: u8 = 6;
    let mut s = Structure::new(1, handle::SYSTEM);
    let manufacturer = s.string(SYSTEM_MANUFACTURER)?;
    let product = s.string(SYSTEM_PRODUCT)?;
    let version = s.string(BIOS_VERSION)?;
    let serial = s.string(&config.serial_number)?;
    s.bytes(&[manufacturer, product, version, serial]);
    s.bytes(&config.uuid);
    s.bytes(&[WAKE_POWER_SWITCH]);
    let sku = s.string("Aero PC")?;
    let family = s.string("Aero")?;
    s.bytes(&[sku, family]);
    Ok(s)
}

fn chassis() -> Result<Structure, TablesError> {
    const DESKTOP: u8 = 0x03;
    const SAFE: u8 = 0x03;
    const SECURITY_NONE: u8 = 0x03;
    let mut s = Structure::new(3, handle::CHASSIS);
    let manufacturer = s.string(SYSTEM_MANUFACTURER)?;
    s.bytes(&[manufacturer, DESKTOP, 0, 0, 0]); // no version, serial, asset tag
    s.bytes(&[SAFE, SAFE, SAFE, SECURITY_NONE]);
    s.u32(0); // OEM-defined
    s.bytes(&[0, 0, 0, 0]); // height, power cords, no contained elements (count, size)
    s.bytes(&[0]); // SKU
    Ok(s)
}

fn processor(config: &SmbiosConfig, cpu: u8) -> Result<Structure, TablesError> {
    const CENTRAL_PROCESSOR: u8 = 0x03;
    const FAMILY_OTHER: u8 = 0x01;
    const STATUS_POPULATED_ENABLED: u8 = 0x41;
    const UPGRADE_OTHER: u8 = 0x01;
    const CHAR_64BIT: u16 = 1 << 2;
    let mut s = Structure::new(4, handle::PROCESSOR + u16::from(cpu));
    let socket = s.string(&format!("CPU {cpu}"))?;
    s.bytes(&[socket, CENTRAL_PROCESSOR, FAMILY_OTHER]);
    let manufacturer = s.string("Aero")?;
    s.bytes(&[manufacturer]);
    s.u32(config.cpuid_signature);
    s.u32(config.cpuid_features_edx);
    let version = s.string("Aero virtual CPU")?;
    s.bytes(&[version, 0]); // voltage: not reported
    s.u16(0); // external clock unknown
    s.u16(config.cpu_mhz);
    s.u16(config.cpu_mhz);
    s.bytes(&[STATUS_POPULATED_ENABLED, UPGRADE_OTHER]);
    for _ in 0..3 {
        s.u16(ABSENT_HANDLE); // L1/L2/L3 cache
    }
    s.bytes(&[0, 0, 0]); // serial, asset tag, part number
    s.bytes(&[1, 1, 1]); // cores, enabled cores, threads
    s.u16(if config.cpu_64bit { CHAR_64BIT } else { 0 });
    s.u16(u16::from(FAMILY_OTHER));
    Ok(s)
}

fn memory(config: &SmbiosConfig) -> Result<Vec<Structure>, TablesError> {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    let total = config.ram_below_4g + config.ram_above_4g;
    let total_kib = total.div_ceil(KIB);

    let mut array = Structure::new(16, handle::MEMORY_ARRAY);
    array.bytes(&[0x03, 0x03, 0x03]); // system board, system memory, no ECC
    if total_kib < 0x8000_0000 {
        array.u32(total_kib as u32);
    } else {
        array.u32(0x8000_0000); // see extended capacity
    }
    array.u16(NO_HANDLE);
    array.u16(1); // one memory device
    array.u64(if total_kib < 0x8000_0000 { 0 } else { total });

    let mut dev = Structure::new(17, handle::MEMORY_DEVICE);
    dev.u16(handle::MEMORY_ARRAY);
    dev.u16(NO_HANDLE);
    dev.u16(64); // total width
    dev.u16(64); // data width
    let size_mib = total.div_ceil(MIB);
    dev.u16(if size_mib < 0x7FFF {
        size_mib as u16
    } else {
        0x7FFF
    });
    dev.bytes(&[0x09, 0]); // DIMM, not part of a set
    let locator = dev.string("DIMM 0")?;
    let bank = dev.string("BANK 0")?;
    dev.bytes(&[locator, bank, 0x07]); // RAM
    dev.u16(0x0002); // type detail: other
    dev.u16(0); // speed unknown
    let maker = dev.string("Aero")?;
    dev.bytes(&[maker, 0, 0, 0, 0]); // serial, asset, part, attributes
    dev.u32(if size_mib < 0x7FFF {
        0
    } else {
        u32::try_from(size_mib).unwrap_or(u32::MAX)
    });
    dev.u16(0); // configured speed
    dev.u16(0);
    dev.u16(0);
    dev.u16(0); // voltages

    let mut out = vec![array, dev];
    let ranges = [(0, config.ram_below_4g), (1 << 32, config.ram_above_4g)];
    for (i, &(start, len)) in ranges.iter().filter(|(_, len)| *len > 0).enumerate() {
        let mut m = Structure::new(19, handle::MAPPED_ADDRESS + i as u16);
        let end = start + len - 1;
        let fits = (end / KIB) < 0xFFFF_FFFF;
        m.u32(if fits {
            (start / KIB) as u32
        } else {
            0xFFFF_FFFF
        });
        m.u32(if fits {
            (end / KIB) as u32
        } else {
            0xFFFF_FFFF
        });
        m.u16(handle::MEMORY_ARRAY);
        m.bytes(&[1]); // partition width
        m.u64(if fits { 0 } else { start });
        m.u64(if fits { 0 } else { end });
        out.push(m);
    }
    Ok(out)
}

fn boot_info() -> Structure {
    let mut s = Structure::new(32, handle::BOOT_INFO);
    s.bytes(&[0; 6]);
    s.bytes(&[0]); // no errors detected
    s
}

#[cfg(test)]
mod tests;
