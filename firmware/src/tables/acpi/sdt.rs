//! The common 36-byte System Description Table header (ACPI 6.x §5.2.6).

use crate::tables::checksum::fill_checksum;

pub const OEM_ID: &[u8; 6] = b"AERO  ";
pub const OEM_TABLE_ID: &[u8; 8] = b"AEROPC  ";
pub const OEM_REVISION: u32 = 1;
pub const CREATOR_ID: &[u8; 4] = b"AERO";
pub const CREATOR_REVISION: u32 = 1;

/// Starts a table: the header with length and checksum still zero.
pub fn begin(signature: &[u8; 4], revision: u8) -> Vec<u8> {
    let mut t = Vec::with_capacity(256);
    t.extend_from_slice(signature);
    t.extend_from_slice(&0u32.to_le_bytes()); // length, set by finish()
    t.push(revision);
    t.push(0); // checksum, set by finish()
    t.extend_from_slice(OEM_ID);
    t.extend_from_slice(OEM_TABLE_ID);
    t.extend_from_slice(&OEM_REVISION.to_le_bytes());
    t.extend_from_slice(CREATOR_ID);
    t.extend_from_slice(&CREATOR_REVISION.to_le_bytes());
    t
}

/// Fills in the length and checksum once the body is complete.
pub fn finish(mut table: Vec<u8>) -> Vec<u8> {
    let len = u32::try_from(table.len()).unwrap_or(u32::MAX);
    table[4..8].copy_from_slice(&len.to_le_bytes());
    let end = table.len();
    fill_checksum(&mut table, 0..end, 9);
    table
}

/// A Generic Address Structure (ACPI 6.x §5.2.3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gas {
    pub space: GasSpace,
    pub bit_width: u8,
    pub bit_offset: u8,
    pub access_size: GasAccess,
    pub address: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GasSpace {
    SystemMemory = 0,
    SystemIo = 1,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GasAccess {
    /// Legacy reasons / unspecified: the OS derives the access width.
    Undefined = 0,
    Byte = 1,
}

impl Gas {
    pub const NONE: Gas = Gas {
        space: GasSpace::SystemMemory,
        bit_width: 0,
        bit_offset: 0,
        access_size: GasAccess::Undefined,
        address: 0,
    };

    pub fn io(port: u16, byte_len: u8, access_size: GasAccess) -> Gas {
        Gas {
            space: GasSpace::SystemIo,
            bit_width: byte_len.saturating_mul(8),
            bit_offset: 0,
            access_size,
            address: u64::from(port),
        }
    }

    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[
            self.space as u8,
            self.bit_width,
            self.bit_offset,
            self.access_size as u8,
        ]);
        out.extend_from_slice(&self.address.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::checksum::sums_to_zero;

    #[test]
    fn header_layout_and_checksum() {
        let mut t = begin(b"TEST", 2);
        assert_eq!(t.len(), 36);
        t.extend_from_slice(&[1, 2, 3]);
        let t = finish(t);
        assert_eq!(&t[0..4], b"TEST");
        assert_eq!(u32::from_le_bytes(t[4..8].try_into().unwrap()), 39);
        assert_eq!(t[8], 2);
        assert_eq!(&t[10..16], OEM_ID);
        assert_eq!(&t[16..24], OEM_TABLE_ID);
        assert!(sums_to_zero(&t));
    }

    #[test]
    fn gas_layout() {
        let mut out = Vec::new();
        Gas::io(0xCF9, 1, GasAccess::Byte).write_to(&mut out);
        assert_eq!(out, [1, 8, 0, 1, 0xF9, 0x0C, 0, 0, 0, 0, 0, 0]);
    }
}
