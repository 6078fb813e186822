//! Identifier rules: ISO9660 level 2 (d-characters, 31 bytes incl. ";1") and Joliet
//! (UCS-2 big-endian, 64 units).

/// Primary-volume name of a file ("NAME.EXT;1") or directory ("NAME").
pub fn iso_name(name: &str, is_dir: bool) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            let c = c.to_ascii_uppercase();
            if c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' || (c == '.' && !is_dir) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !is_dir {
        // Only one dot is allowed: keep the last one as the extension separator.
        if let Some(pos) = out.rfind('.') {
            let (base, ext) = out.split_at(pos);
            out = format!("{}{}", base.replace('.', "_"), ext);
        } else {
            out.push('.');
        }
        out.truncate(28);
        out.push_str(";1");
    } else {
        out.truncate(31);
    }
    out
}

pub fn joliet_name(name: &str) -> Vec<u8> {
    name.encode_utf16().flat_map(|u| u.to_be_bytes()).collect()
}

/// A d-character identifier padded with spaces (volume descriptors).
pub fn d_chars(s: &str, len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = s
        .chars()
        .map(|c| {
            let c = c.to_ascii_uppercase();
            if c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' {
                c as u8
            } else {
                b'_'
            }
        })
        .take(len)
        .collect();
    v.resize(len, b' ');
    v
}

/// A Joliet descriptor identifier: UCS-2 BE, padded with UCS-2 spaces.
pub fn joliet_field(s: &str, len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = s
        .encode_utf16()
        .take(len / 2)
        .flat_map(|u| u.to_be_bytes())
        .collect();
    while v.len() + 2 <= len {
        v.extend_from_slice(&[0, b' ']);
    }
    v.resize(len, 0);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_names() {
        assert_eq!(iso_name("setup.cmd", false), "SETUP.CMD;1");
        assert_eq!(
            iso_name("aerogpu_d3d9_x64.dll", false),
            "AEROGPU_D3D9_X64.DLL;1"
        );
        assert_eq!(iso_name("a.b.c", false), "A_B.C;1");
        assert_eq!(iso_name("README", false), "README.;1");
        assert_eq!(iso_name("amd64", true), "AMD64");
        assert_eq!(iso_name("x-y z", true), "X_Y_Z");
        assert_eq!(joliet_name("ab"), vec![0, b'a', 0, b'b']);
        assert_eq!(d_chars("Aero tools", 12), b"AERO_TOOLS  ".to_vec());
    }
}
