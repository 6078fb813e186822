//! The 128 KiB system ROM image (0xE0000–0xFFFFF, aliased below 4 GiB).
//!
//! Layout, as offsets inside segment F000 (image offset = 0x10000 + IP):
//! ```text
//!   F000:0000 ..          code: POST entry, option-ROM scan, trap stubs, IRQ handlers,
//!                         small data (diskette parameter table, C0h configuration table)
//!   F000:C000 .. F000:DFFF table anchors (RSDP, SMBIOS entry point, MP floating pointer,
//!                         static MP/SMBIOS tables), written by `Bios::new`
//!   F000:E05B             POST entry at the IBM PC/AT compatible address
//!   F000:FFF0             reset vector: jmp far F000:E05B
//!   F000:FFF5             BIOS date "11/22/26", F000:FFFE model byte FCh
//! ```
//! Segment E000 (image offset 0..0x10000) is free for larger static tables.

mod routines;

use std::collections::BTreeMap;

use iced_x86::BlockEncoderOptions;
use iced_x86::code_asm::CodeAssembler;

use super::error::FirmwareError;
use super::trap::TrapId;

pub const ROM_SIZE: usize = 0x20000;
/// Physical address of the image below 1 MiB.
pub const ROM_BASE: u64 = 0xE0000;
pub const BIOS_SEGMENT: u16 = 0xF000;
/// Physical base of segment F000.
pub const BIOS_SEGMENT_BASE: u64 = 0xF0000;
/// Where table anchors go (IPs in segment F000).
pub const TABLE_AREA: std::ops::Range<u16> = 0xC000..0xE000;
const POST_ENTRY_COMPAT: u16 = 0xE05B;
const RESET_VECTOR: u16 = 0xFFF0;
const CODE_LIMIT: u16 = TABLE_AREA.start;

/// Where the assembled code put everything the Rust side needs to know.
#[derive(Clone, Debug)]
pub struct RomLayout {
    /// Trap id code → IP right after that stub's OUT (what RIP is when the trap arrives).
    pub trap_return: BTreeMap<u16, u16>,
    /// Trap id code → IP of the stub's first instruction (re-entered after idling).
    pub trap_entry: BTreeMap<u16, u16>,
    /// Initial IVT: offset in segment F000 per vector, `None` for a null vector.
    pub vectors: [Option<u16>; 256],
    /// `sti; hlt; ret`: a service that must wait pushes its stub's entry and goes here.
    pub idle_reenter: u16,
    /// Prints "no bootable device" via INT 10h and port 0xE9, then halts forever.
    pub boot_fail: u16,
    pub diskette_params: u16,
    pub config_table: u16,
    pub post_entry: u16,
}

/// A finished image plus its layout.
#[derive(Clone, Debug)]
pub struct Rom {
    pub image: Vec<u8>,
    pub layout: RomLayout,
}

impl Rom {
    pub fn build() -> Result<Rom, FirmwareError> {
        let asm_err = |e: iced_x86::IcedError| FirmwareError::Assembly(e.to_string());
        let mut a = CodeAssembler::new(16).map_err(asm_err)?;
        let labels = routines::emit(&mut a).map_err(asm_err)?;
        let result = a
            .assemble_options(0, BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS)
            .map_err(asm_err)?;
        let code = &result.inner.code_buffer;
        if code.len() > CODE_LIMIT as usize {
            return Err(FirmwareError::Layout(format!(
                "code is {:#x} bytes, only {:#x} fit before the table area",
                code.len(),
                CODE_LIMIT
            )));
        }
        let ip = |l: &iced_x86::code_asm::CodeLabel| -> Result<u16, FirmwareError> {
            let v = result.label_ip(l).map_err(asm_err)?;
            u16::try_from(v)
                .map_err(|_| FirmwareError::Layout(format!("label beyond 64 KiB: {v:#x}")))
        };

        let mut trap_return = BTreeMap::new();
        let mut trap_entry = BTreeMap::new();
        for site in &labels.traps {
            trap_return.insert(site.id.code(), ip(&site.after_out)?);
            if let Some(entry) = &site.entry {
                trap_entry.insert(site.id.code(), ip(entry)?);
            }
        }
        let mut vectors = [None; 256];
        for (vector, label) in &labels.vectors {
            vectors[*vector as usize] = Some(ip(label)?);
        }
        let layout = RomLayout {
            trap_return,
            trap_entry,
            vectors,
            idle_reenter: ip(&labels.idle_reenter)?,
            boot_fail: ip(&labels.boot_fail)?,
            diskette_params: ip(&labels.diskette_params)?,
            config_table: ip(&labels.config_table)?,
            post_entry: ip(&labels.post_entry)?,
        };

        let mut image = vec![0xFFu8; ROM_SIZE];
        let seg = 0x10000usize;
        image[seg..seg + code.len()].copy_from_slice(code);
        // Table area starts zeroed so anchors never find stale 0xFF patterns.
        image[seg + TABLE_AREA.start as usize..seg + TABLE_AREA.end as usize].fill(0);

        let post = layout.post_entry.to_le_bytes();
        let compat = seg + POST_ENTRY_COMPAT as usize;
        image[compat..compat + 5].copy_from_slice(&[0xEA, post[0], post[1], 0x00, 0xF0]);
        let reset = seg + RESET_VECTOR as usize;
        let entry = POST_ENTRY_COMPAT.to_le_bytes();
        image[reset..reset + 5].copy_from_slice(&[0xEA, entry[0], entry[1], 0x00, 0xF0]);
        image[reset + 5..reset + 13].copy_from_slice(b"11/22/26");
        image[seg + 0xFFFE] = 0xFC;
        Ok(Rom { image, layout })
    }

    /// Copies `data` into segment F000 at `ip` (table anchors, static tables).
    pub fn place(&mut self, ip: u16, data: &[u8]) -> Result<(), FirmwareError> {
        let end = ip as usize + data.len();
        if ip < TABLE_AREA.start || end > TABLE_AREA.end as usize {
            return Err(FirmwareError::Layout(format!(
                "{} bytes at F000:{ip:04X} leave the table area",
                data.len()
            )));
        }
        let at = 0x10000 + ip as usize;
        self.image[at..at + data.len()].copy_from_slice(data);
        Ok(())
    }

    /// Copies `data` into segment E000 at `offset` (large static tables).
    pub fn place_low(&mut self, offset: u16, data: &[u8]) -> Result<(), FirmwareError> {
        let end = offset as usize + data.len();
        if end > 0x10000 {
            return Err(FirmwareError::Layout(format!(
                "{} bytes at E000:{offset:04X} overflow",
                data.len()
            )));
        }
        self.image[offset as usize..end].copy_from_slice(data);
        Ok(())
    }
}

/// Trap sites recorded while emitting code.
pub(crate) struct TrapSite {
    pub id: TrapId,
    pub entry: Option<iced_x86::code_asm::CodeLabel>,
    pub after_out: iced_x86::code_asm::CodeLabel,
}

#[cfg(test)]
mod tests;
