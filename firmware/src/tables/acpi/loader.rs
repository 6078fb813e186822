//! The ACPI tables in the form QEMU hands them to firmware over fw_cfg: the files
//! `etc/acpi/rsdp` and `etc/acpi/tables` plus an `etc/table-loader` script of
//! "BIOS linker/loader" commands (allocate each file, patch pointers between them, fix
//! checksums). SeaBIOS executes that script, so a machine exposing these three fw_cfg
//! files gives `--bios seabios` guests exactly the tables our own BIOS installs.
//!
//! Command format (QEMU's BIOS linker/loader interface): 128-byte little-endian records,
//! `u32 command` followed by
//! * ALLOCATE (1): `file[56], u32 align, u8 zone` (zone 1 = high memory, 2 = F-segment)
//! * ADD_POINTER (2): `dest_file[56], src_file[56], u32 offset, u8 size` — add the
//!   address of `src_file` to the `size`-byte integer at `dest_file + offset`
//! * ADD_CHECKSUM (3): `file[56], u32 offset, u32 start, u32 length` — adjust the byte
//!   at `offset` so `start..start + length` sums to zero.

use super::{AcpiConfig, build_acpi};
use crate::tables::TablesError;

pub const RSDP_FILE: &str = "etc/acpi/rsdp";
pub const TABLES_FILE: &str = "etc/acpi/tables";
pub const LOADER_FILE: &str = "etc/table-loader";

const ENTRY_LEN: usize = 128;
const FILE_NAME_LEN: usize = 56;
const CMD_ALLOCATE: u32 = 1;
const CMD_ADD_POINTER: u32 = 2;
const CMD_ADD_CHECKSUM: u32 = 3;
const ZONE_HIGH: u8 = 1;
const ZONE_FSEG: u8 = 2;

/// The three fw_cfg files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoaderFiles {
    pub rsdp: Vec<u8>,
    pub tables: Vec<u8>,
    pub loader: Vec<u8>,
}

impl LoaderFiles {
    /// `(fw_cfg name, contents)` pairs, in the order to register them.
    pub fn files(&self) -> [(&'static str, &[u8]); 3] {
        [
            (RSDP_FILE, &self.rsdp),
            (TABLES_FILE, &self.tables),
            (LOADER_FILE, &self.loader),
        ]
    }
}

fn name_field(out: &mut Vec<u8>, name: &str) {
    let mut field = [0u8; FILE_NAME_LEN];
    field[..name.len()].copy_from_slice(name.as_bytes());
    out.extend_from_slice(&field);
}

fn finish_entry(mut entry: Vec<u8>, loader: &mut Vec<u8>) {
    entry.resize(ENTRY_LEN, 0);
    loader.extend_from_slice(&entry);
}

fn allocate(loader: &mut Vec<u8>, file: &str, align: u32, zone: u8) {
    let mut e = CMD_ALLOCATE.to_le_bytes().to_vec();
    name_field(&mut e, file);
    e.extend_from_slice(&align.to_le_bytes());
    e.push(zone);
    finish_entry(e, loader);
}

fn add_pointer(loader: &mut Vec<u8>, dest: &str, offset: u32, size: u8, src: &str) {
    let mut e = CMD_ADD_POINTER.to_le_bytes().to_vec();
    name_field(&mut e, dest);
    name_field(&mut e, src);
    e.extend_from_slice(&offset.to_le_bytes());
    e.push(size);
    finish_entry(e, loader);
}

fn add_checksum(loader: &mut Vec<u8>, file: &str, offset: u32, start: u32, length: u32) {
    let mut e = CMD_ADD_CHECKSUM.to_le_bytes().to_vec();
    name_field(&mut e, file);
    for v in [offset, start, length] {
        e.extend_from_slice(&v.to_le_bytes());
    }
    finish_entry(e, loader);
}

/// Builds the tables relative to address 0 of `etc/acpi/tables` (so every pointer holds
/// an offset into that file) and the script that relocates them.
pub fn build_acpi_loader_files(config: &AcpiConfig) -> Result<LoaderFiles, TablesError> {
    let tables = build_acpi(config, 0)?;
    let mut loader = Vec::new();
    allocate(&mut loader, RSDP_FILE, 16, ZONE_FSEG);
    allocate(&mut loader, TABLES_FILE, 64, ZONE_HIGH);

    for loc in &tables.tables {
        let base = loc.address;
        let pointers: Vec<(u32, u8)> = match &loc.signature {
            // FIRMWARE_CTRL, DSDT, X_FIRMWARE_CTRL, X_DSDT.
            b"FACP" => vec![(36, 4), (40, 4), (132, 8), (140, 8)],
            b"RSDT" => (36..loc.length).step_by(4).map(|o| (o, 4)).collect(),
            b"XSDT" => (36..loc.length).step_by(8).map(|o| (o, 8)).collect(),
            _ => Vec::new(),
        };
        for (offset, size) in pointers {
            add_pointer(&mut loader, TABLES_FILE, base + offset, size, TABLES_FILE);
        }
        // The FACS has no checksum; every other table gets its checksum fixed after the
        // pointers inside it were relocated.
        if &loc.signature != b"FACS" {
            add_checksum(&mut loader, TABLES_FILE, base + 9, base, loc.length);
        }
    }
    add_pointer(&mut loader, RSDP_FILE, 16, 4, TABLES_FILE);
    add_pointer(&mut loader, RSDP_FILE, 24, 8, TABLES_FILE);
    add_checksum(&mut loader, RSDP_FILE, 8, 0, 20);
    add_checksum(&mut loader, RSDP_FILE, 32, 0, 36);
    Ok(LoaderFiles {
        rsdp: tables.rsdp.to_vec(),
        tables: tables.blob,
        loader,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::checksum::{checksum, sums_to_zero};

    /// Executes a loader script the way firmware does, with the given file addresses.
    fn run_script(files: &LoaderFiles, rsdp_addr: u64, tables_addr: u64) -> (Vec<u8>, Vec<u8>) {
        let mut rsdp = files.rsdp.clone();
        let mut tables = files.tables.clone();
        let name = |b: &[u8]| {
            String::from_utf8(b.iter().copied().take_while(|&c| c != 0).collect()).unwrap()
        };
        let addr_of = |n: &str| {
            if n == RSDP_FILE {
                rsdp_addr
            } else {
                tables_addr
            }
        };
        for e in files.loader.chunks(ENTRY_LEN) {
            assert_eq!(e.len(), ENTRY_LEN);
            let cmd = u32::from_le_bytes(e[0..4].try_into().unwrap());
            let dest = name(&e[4..60]);
            let file = if dest == RSDP_FILE {
                &mut rsdp
            } else {
                &mut tables
            };
            match cmd {
                CMD_ALLOCATE => assert!(dest == RSDP_FILE || dest == TABLES_FILE),
                CMD_ADD_POINTER => {
                    let src = name(&e[60..116]);
                    let offset = u32::from_le_bytes(e[116..120].try_into().unwrap()) as usize;
                    let size = e[120] as usize;
                    let mut v = [0u8; 8];
                    v[..size].copy_from_slice(&file[offset..offset + size]);
                    let patched = u64::from_le_bytes(v) + addr_of(&src);
                    file[offset..offset + size].copy_from_slice(&patched.to_le_bytes()[..size]);
                }
                CMD_ADD_CHECKSUM => {
                    let f = |i: usize| {
                        u32::from_le_bytes(e[60 + 4 * i..64 + 4 * i].try_into().unwrap()) as usize
                    };
                    let (offset, start, len) = (f(0), f(1), f(2));
                    let sum = checksum(&file[start..start + len]);
                    file[offset] = file[offset].wrapping_add(sum);
                }
                other => panic!("unknown loader command {other}"),
            }
        }
        (rsdp, tables)
    }

    #[test]
    fn relocated_tables_equal_tables_built_in_place() {
        let config = AcpiConfig::default();
        let files = build_acpi_loader_files(&config).unwrap();
        assert_eq!(files.loader.len() % ENTRY_LEN, 0);
        let (rsdp, tables) = run_script(&files, 0xF_5A40, 0x7FE_0000);
        let direct = build_acpi(&config, 0x7FE_0000).unwrap();
        assert_eq!(tables, direct.blob);
        assert_eq!(rsdp, direct.rsdp.to_vec());
        assert!(sums_to_zero(&rsdp[..20]) && sums_to_zero(&rsdp));
    }
}
