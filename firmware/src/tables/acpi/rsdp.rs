//! Root pointers: RSDP (revision 2, §5.2.5), RSDT (32-bit entries) and XSDT (64-bit).

use super::sdt;
use crate::tables::checksum::fill_checksum;

pub fn build_rsdp(rsdt_addr: u32, xsdt_addr: u32) -> [u8; 36] {
    let mut r = [0u8; 36];
    r[0..8].copy_from_slice(b"RSD PTR ");
    r[9..15].copy_from_slice(sdt::OEM_ID);
    r[15] = 2; // ACPI 2.0+ structure with XSDT
    r[16..20].copy_from_slice(&rsdt_addr.to_le_bytes());
    r[20..24].copy_from_slice(&36u32.to_le_bytes());
    r[24..32].copy_from_slice(&u64::from(xsdt_addr).to_le_bytes());
    fill_checksum(&mut r, 0..20, 8); // ACPI 1.0 checksum: first 20 bytes
    fill_checksum(&mut r, 0..36, 32); // extended checksum: whole structure
    r
}

pub fn build_rsdt(tables: &[u32]) -> Vec<u8> {
    let mut t = sdt::begin(b"RSDT", 1);
    for addr in tables {
        t.extend_from_slice(&addr.to_le_bytes());
    }
    sdt::finish(t)
}

pub fn build_xsdt(tables: &[u32]) -> Vec<u8> {
    let mut t = sdt::begin(b"XSDT", 1);
    for &addr in tables {
        t.extend_from_slice(&u64::from(addr).to_le_bytes());
    }
    sdt::finish(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::checksum::sums_to_zero;

    #[test]
    fn rsdp_checksums_and_pointers() {
        let r = build_rsdp(0x1234_5678, 0x0ABC_DEF0);
        assert_eq!(&r[..8], b"RSD PTR ");
        assert!(sums_to_zero(&r[..20]));
        assert!(sums_to_zero(&r));
        assert_eq!(r[15], 2);
        assert_eq!(
            u32::from_le_bytes(r[16..20].try_into().unwrap()),
            0x1234_5678
        );
        assert_eq!(
            u64::from_le_bytes(r[24..32].try_into().unwrap()),
            0x0ABC_DEF0
        );
    }

    #[test]
    fn root_tables_list_entries() {
        let rsdt = build_rsdt(&[0x100, 0x200]);
        assert_eq!(rsdt.len(), 36 + 8);
        assert!(sums_to_zero(&rsdt));
        let xsdt = build_xsdt(&[0x100, 0x200]);
        assert_eq!(xsdt.len(), 36 + 16);
        assert_eq!(u64::from_le_bytes(xsdt[44..52].try_into().unwrap()), 0x200);
    }
}
