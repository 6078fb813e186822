//! Byte checksums shared by ACPI, SMBIOS and MP tables: the bytes of a structure must sum
//! to zero modulo 256.

/// The byte that makes `bytes` sum to zero when stored in a zeroed checksum slot.
pub fn checksum(bytes: &[u8]) -> u8 {
    bytes
        .iter()
        .fold(0u8, |sum, &b| sum.wrapping_add(b))
        .wrapping_neg()
}

/// Computes the checksum over `bytes[range]` and stores it at `bytes[at]` (which must be
/// inside the range and is zeroed first).
pub fn fill_checksum(bytes: &mut [u8], range: std::ops::Range<usize>, at: usize) {
    if let Some(slot) = bytes.get_mut(at) {
        *slot = 0;
    }
    if let Some(region) = bytes.get(range) {
        let sum = checksum(region);
        if let Some(slot) = bytes.get_mut(at) {
            *slot = sum;
        }
    }
}

/// True if `bytes` sum to zero modulo 256.
pub fn sums_to_zero(bytes: &[u8]) -> bool {
    checksum(bytes) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_makes_the_sum_zero() {
        let mut data = vec![0x12, 0x34, 0x00, 0xFF];
        fill_checksum(&mut data, 0..4, 2);
        assert!(sums_to_zero(&data));
        assert_eq!(data[2], 0u8.wrapping_sub(0x12 + 0x34).wrapping_sub(0xFF));
        assert!(!sums_to_zero(&[1, 2, 3]));
    }
}
