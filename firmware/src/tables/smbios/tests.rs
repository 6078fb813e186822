use super::*;
use crate::tables::checksum::sums_to_zero;

/// Splits the structure table into (type, formatted area, strings).
fn parse(table: &[u8]) -> Vec<(u8, Vec<u8>, Vec<String>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < table.len() {
        let len = table[at + 1] as usize;
        let formatted = table[at..at + len].to_vec();
        let mut p = at + len;
        let mut strings = Vec::new();
        loop {
            let end = p + table[p..].iter().position(|&b| b == 0).unwrap();
            if end == p {
                p += 1;
                if strings.is_empty() {
                    // An empty string set is two NULs.
                    assert_eq!(table[p], 0);
                    p += 1;
                }
                break;
            }
            strings.push(String::from_utf8(table[p..end].to_vec()).unwrap());
            p = end + 1;
            if table[p] == 0 {
                p += 1;
                break;
            }
        }
        out.push((formatted[0], formatted, strings));
        at = p;
    }
    assert_eq!(at, table.len());
    out
}

#[test]
fn entry_point_checksums_and_fields() {
    let config = SmbiosConfig {
        tables_address: 0xF_1000,
        ..SmbiosConfig::default()
    };
    let t = build_smbios(&config).unwrap();
    let e = &t.entry_point;
    assert_eq!(&e[..4], b"_SM_");
    assert_eq!(&e[16..21], b"_DMI_");
    assert!(sums_to_zero(e));
    assert!(sums_to_zero(&e[16..]));
    assert_eq!((e[6], e[7], e[30]), (2, 8, 0x28));
    assert_eq!(u16::from_le_bytes([e[22], e[23]]) as usize, t.tables.len());
    assert_eq!(u32::from_le_bytes(e[24..28].try_into().unwrap()), 0xF_1000);
    let structures = parse(&t.tables);
    assert_eq!(
        u16::from_le_bytes([e[28], e[29]]) as usize,
        structures.len()
    );
}

#[test]
fn structures_have_spec_lengths_and_strings() {
    let config = SmbiosConfig {
        cpu_count: 2,
        ram_below_4g: 3 << 30,
        ram_above_4g: 5 << 30,
        ..SmbiosConfig::default()
    };
    let t = build_smbios(&config).unwrap();
    let s = parse(&t.tables);
    let types: Vec<u8> = s.iter().map(|x| x.0).collect();
    assert_eq!(types, [0, 1, 3, 4, 4, 16, 17, 19, 19, 32, 127]);
    let expected_len = |ty: u8| match ty {
        0 => 0x18,
        1 => 0x1B,
        3 => 0x16,
        4 => 0x2A,
        16 => 0x17,
        17 => 0x28,
        19 => 0x1F,
        32 => 0x0B,
        127 => 4,
        _ => unreachable!(),
    };
    for (ty, formatted, _) in &s {
        assert_eq!(formatted.len(), expected_len(*ty), "type {ty}");
    }
    let (_, bios, bios_strings) = &s[0];
    assert_eq!(bios_strings[bios[4] as usize - 1], "Aero");
    assert_eq!(bios_strings[bios[8] as usize - 1], BIOS_RELEASE_DATE);
    let (_, sys, sys_strings) = &s[1];
    assert_eq!(sys_strings[sys[4] as usize - 1], "Aero");
    assert_eq!(sys_strings[sys[5] as usize - 1], "Aero PC");
    assert_eq!(&sys[8..24], &DEFAULT_UUID);
    // Handles are unique.
    let mut handles: Vec<u16> = s
        .iter()
        .map(|x| u16::from_le_bytes([x.1[2], x.1[3]]))
        .collect();
    handles.sort_unstable();
    handles.dedup();
    assert_eq!(handles.len(), s.len());
    // 8 GiB in one device: 8192 MiB in the size field.
    assert_eq!(u16::from_le_bytes([s[6].1[0x0C], s[6].1[0x0D]]), 8192);
    // Mapped ranges in KiB: [0, 3G) and [4G, 9G).
    let kib = |f: &[u8], at: usize| u32::from_le_bytes(f[at..at + 4].try_into().unwrap());
    assert_eq!((kib(&s[7].1, 4), kib(&s[7].1, 8)), (0, (3 << 20) - 1));
    assert_eq!((kib(&s[8].1, 4), kib(&s[8].1, 8)), (4 << 20, (9 << 20) - 1));
}

#[test]
fn builds_are_deterministic_and_validate_input() {
    let config = SmbiosConfig::default();
    assert_eq!(
        build_smbios(&config).unwrap(),
        build_smbios(&config).unwrap()
    );
    let bad = SmbiosConfig {
        serial_number: "a\0b".into(),
        ..SmbiosConfig::default()
    };
    assert!(build_smbios(&bad).is_err());
    assert!(
        build_smbios(&SmbiosConfig {
            cpu_count: 0,
            ..SmbiosConfig::default()
        })
        .is_err()
    );
}
