//! QEMU's firmware configuration interface (fw_cfg), traditional port I/O form only:
//! a 16-bit selector at 0x510 and a byte-wide data port at 0x511 that streams the
//! selected item (QEMU's `docs/specs/fw_cfg.rst`).
//!
//! Why it exists: SeaBIOS reads the RAM above 4 GiB (CMOS 0x5B–0x5D) only once it has
//! found fw_cfg; without it a SeaBIOS guest loses everything above the PCI hole. Aero
//! offers the least that makes SeaBIOS take its configuration from CMOS as it does on
//! QEMU: the signature, the ID (no DMA interface), an empty file directory, and the
//! boot-menu flag set (so SeaBIOS keeps offering its boot menu as it does without
//! fw_cfg). Every other item reads as zeros, which SeaBIOS treats as absent; no file
//! (e820, ACPI loader, bootorder) is offered, so the BIOS still builds its own tables.
//! Our own BIOS does not use it.

use super::{PortIo, read_bytes};

pub const SELECTOR_PORT: u16 = 0x510;
pub const DATA_PORT: u16 = 0x511;

const KEY_SIGNATURE: u16 = 0x0000;
const KEY_ID: u16 = 0x0001;
const KEY_BOOT_MENU: u16 = 0x000E;
const KEY_FILE_DIR: u16 = 0x0019;

/// The fw_cfg ports.
#[derive(Clone, Debug, Default)]
pub struct FwCfg {
    selected: u16,
    offset: usize,
}

impl FwCfg {
    pub fn new() -> FwCfg {
        FwCfg::default()
    }

    /// The contents of item `key`; empty for items Aero does not offer.
    fn item(key: u16) -> &'static [u8] {
        match key {
            KEY_SIGNATURE => b"QEMU",
            // Bit 0: the traditional interface; bit 1 (DMA) clear.
            KEY_ID => &[1, 0, 0, 0],
            KEY_BOOT_MENU => &[1, 0],
            // A big-endian count of zero files.
            KEY_FILE_DIR => &[0, 0, 0, 0],
            _ => &[],
        }
    }

    fn read_data(&mut self) -> u8 {
        let byte = Self::item(self.selected)
            .get(self.offset)
            .copied()
            .unwrap_or(0);
        // Reads past the end keep returning 0; the offset saturates, never wraps.
        self.offset = self.offset.saturating_add(1);
        byte
    }
}

impl PortIo for FwCfg {
    fn io_read(&mut self, port: u16, size: u8) -> u32 {
        match (port, size) {
            // The selector port is write-only.
            (SELECTOR_PORT, _) => 0,
            _ => read_bytes(port, size, |p| {
                if p == DATA_PORT { self.read_data() } else { 0 }
            }),
        }
    }

    fn io_write(&mut self, port: u16, _size: u8, value: u32) {
        // Selecting an item (a 16-bit write; a byte write selects the low byte's key)
        // rewinds it; writes to the data port are ignored, as on QEMU since 2.4.
        if port == SELECTOR_PORT {
            self.selected = value as u16;
            self.offset = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_item(cfg: &mut FwCfg, key: u16, len: usize) -> Vec<u8> {
        cfg.io_write(SELECTOR_PORT, 2, u32::from(key));
        (0..len).map(|_| cfg.io_read(DATA_PORT, 1) as u8).collect()
    }

    #[test]
    fn seabios_finds_the_signature_no_dma_and_no_files() {
        let mut cfg = FwCfg::new();
        assert_eq!(read_item(&mut cfg, KEY_SIGNATURE, 4), b"QEMU");
        // Selecting again rewinds.
        assert_eq!(read_item(&mut cfg, KEY_SIGNATURE, 6), b"QEMU\0\0");
        assert_eq!(read_item(&mut cfg, KEY_ID, 4), [1, 0, 0, 0]);
        assert_eq!(read_item(&mut cfg, KEY_FILE_DIR, 4), [0; 4]);
        assert_eq!(read_item(&mut cfg, KEY_BOOT_MENU, 2), [1, 0]);
    }

    #[test]
    fn unknown_items_and_hostile_reads_are_zeros() {
        let mut cfg = FwCfg::new();
        // The legacy E820 reservation table, CPU count, NUMA: all absent.
        for key in [0x0005, 0x8003, 0x000D, 0xFFFF] {
            assert!(read_item(&mut cfg, key, 64).iter().all(|&b| b == 0));
        }
        cfg.io_write(SELECTOR_PORT, 2, u32::from(KEY_SIGNATURE));
        // A 4-byte read of the data port streams one byte per lane from 0x511 only.
        assert_eq!(cfg.io_read(DATA_PORT, 1), u32::from(b'Q'));
        cfg.io_write(DATA_PORT, 1, 0x55);
        assert_eq!(cfg.io_read(DATA_PORT, 1), u32::from(b'E'));
        assert_eq!(cfg.io_read(SELECTOR_PORT, 2), 0);
        for _ in 0..100_000 {
            cfg.io_read(DATA_PORT, 1);
        }
        assert_eq!(cfg.io_read(DATA_PORT, 1), 0);
    }
}
