//! Firmware ACPI Control Structure (ACPI 6.x §5.2.10): 64 bytes, no checksum. Aero has
//! no S3/S4, so the waking vectors stay zero and the global lock is unused.

pub const FACS_LEN: usize = 64;
const VERSION: u8 = 1;

pub fn build() -> Vec<u8> {
    let mut t = Vec::with_capacity(FACS_LEN);
    t.extend_from_slice(b"FACS");
    t.extend_from_slice(&(FACS_LEN as u32).to_le_bytes());
    t.extend_from_slice(&0u32.to_le_bytes()); // hardware signature: fixed hardware
    t.extend_from_slice(&0u32.to_le_bytes()); // firmware waking vector
    t.extend_from_slice(&0u32.to_le_bytes()); // global lock
    t.extend_from_slice(&0u32.to_le_bytes()); // flags: no S4BIOS, no 64-bit wake
    t.extend_from_slice(&0u64.to_le_bytes()); // X firmware waking vector
    t.push(VERSION);
    t.resize(FACS_LEN, 0); // reserved, OSPM flags (version 2+), reserved
    t
}

#[cfg(test)]
mod tests {
    #[test]
    fn facs_is_64_bytes_with_signature() {
        let t = super::build();
        assert_eq!(t.len(), 64);
        assert_eq!(&t[..4], b"FACS");
        assert_eq!(u32::from_le_bytes(t[4..8].try_into().unwrap()), 64);
        assert_eq!(t[32], 1);
    }
}
