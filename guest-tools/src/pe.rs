//! A minimal, bounds-checked PE/COFF reader for checking the driver binaries we build:
//! machine, subsystem, DLL characteristics, imported DLLs/functions, exported names and
//! whether an Authenticode signature is attached. Input is untrusted: every read is
//! checked and a malformed file yields [`PeError`], never a panic.

use thiserror::Error;

pub const MACHINE_I386: u16 = 0x014C;
pub const MACHINE_AMD64: u16 = 0x8664;
pub const SUBSYSTEM_NATIVE: u16 = 1;
pub const SUBSYSTEM_WINDOWS_GUI: u16 = 2;
pub const SUBSYSTEM_WINDOWS_CUI: u16 = 3;
pub const CHARACTERISTICS_DLL: u16 = 0x2000;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum PeError {
    #[error("not a PE file: {0}")]
    NotPe(&'static str),
    #[error("truncated or out-of-range {0}")]
    OutOfRange(&'static str),
    #[error("RVA {0:#x} is not inside any section")]
    BadRva(u32),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Import {
    pub dll: String,
    /// Function names; ordinal imports appear as `#<ordinal>`.
    pub functions: Vec<String>,
    /// RVA of this DLL's import address table: the loader writes the address of
    /// `functions[k]` at `iat_rva + k * pointer size`.
    pub iat_rva: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeInfo {
    pub machine: u16,
    pub characteristics: u16,
    pub is_pe32_plus: bool,
    pub subsystem: u16,
    pub major_subsystem_version: u16,
    pub minor_subsystem_version: u16,
    pub entry_point_rva: u32,
    /// Preferred load address and mapped size (the loader's view of the image).
    pub image_base: u64,
    pub size_of_image: u32,
    pub size_of_headers: u32,
    pub imports: Vec<Import>,
    pub exports: Vec<String>,
    /// Size of the certificate table (Authenticode), 0 when unsigned.
    pub certificate_bytes: u32,
    /// Size of the base relocation table (a kernel image without one cannot be rebased).
    pub relocation_bytes: u32,
}

impl PeInfo {
    pub fn is_dll(&self) -> bool {
        self.characteristics & CHARACTERISTICS_DLL != 0
    }

    pub fn imported_dlls(&self) -> Vec<String> {
        self.imports
            .iter()
            .map(|i| i.dll.to_ascii_lowercase())
            .collect()
    }
}

struct Section {
    va: u32,
    vsize: u32,
    raw_ptr: u32,
    raw_size: u32,
}

struct Image<'a> {
    bytes: &'a [u8],
    sections: Vec<Section>,
}

fn u16_at(b: &[u8], off: usize, what: &'static str) -> Result<u16, PeError> {
    let s = b.get(off..off.checked_add(2).ok_or(PeError::OutOfRange(what))?);
    let s = s.ok_or(PeError::OutOfRange(what))?;
    Ok(u16::from_le_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], off: usize, what: &'static str) -> Result<u32, PeError> {
    let s = b.get(off..off.checked_add(4).ok_or(PeError::OutOfRange(what))?);
    let s = s.ok_or(PeError::OutOfRange(what))?;
    Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], off: usize, what: &'static str) -> Result<u64, PeError> {
    let lo = u64::from(u32_at(b, off, what)?);
    let hi = u64::from(u32_at(
        b,
        off.checked_add(4).ok_or(PeError::OutOfRange(what))?,
        what,
    )?);
    Ok(lo | hi << 32)
}

impl Image<'_> {
    fn offset_of(&self, rva: u32) -> Result<usize, PeError> {
        for s in &self.sections {
            let span = s.vsize.max(s.raw_size);
            if rva >= s.va && rva - s.va < span {
                let delta = rva - s.va;
                if delta >= s.raw_size {
                    return Err(PeError::BadRva(rva)); // in the zero-filled tail
                }
                return usize::try_from(u64::from(s.raw_ptr) + u64::from(delta))
                    .map_err(|_| PeError::BadRva(rva));
            }
        }
        Err(PeError::BadRva(rva))
    }

    fn cstr(&self, rva: u32) -> Result<String, PeError> {
        let off = self.offset_of(rva)?;
        let tail = self.bytes.get(off..).ok_or(PeError::OutOfRange("string"))?;
        let end = tail
            .iter()
            .take(4096)
            .position(|&c| c == 0)
            .ok_or(PeError::OutOfRange("string terminator"))?;
        Ok(String::from_utf8_lossy(&tail[..end]).into_owned())
    }
}

/// Upper bounds so a hostile file cannot make the parser loop for long.
const MAX_IMPORT_DLLS: usize = 256;
const MAX_THUNKS: usize = 65536;
const MAX_EXPORTS: u32 = 65536;

pub fn parse(bytes: &[u8]) -> Result<PeInfo, PeError> {
    if bytes.get(0..2) != Some(b"MZ") {
        return Err(PeError::NotPe("no MZ header"));
    }
    let pe = u32_at(bytes, 0x3C, "e_lfanew")? as usize;
    if bytes.get(pe..pe.saturating_add(4)) != Some(b"PE\0\0") {
        return Err(PeError::NotPe("no PE signature"));
    }
    let coff = pe + 4;
    let machine = u16_at(bytes, coff, "machine")?;
    let characteristics = u16_at(bytes, coff + 18, "characteristics")?;
    let opt = coff + 20;
    let magic = u16_at(bytes, opt, "optional magic")?;
    let is_pe32_plus = match magic {
        0x10B => false,
        0x20B => true,
        _ => return Err(PeError::NotPe("unknown optional header magic")),
    };
    let entry_point_rva = u32_at(bytes, opt + 16, "entry point")?;
    let image_base = if is_pe32_plus {
        u64_at(bytes, opt + 24, "image base")?
    } else {
        u64::from(u32_at(bytes, opt + 28, "image base")?)
    };
    let size_of_image = u32_at(bytes, opt + 56, "size of image")?;
    let size_of_headers = u32_at(bytes, opt + 60, "size of headers")?;
    let major_subsystem_version = u16_at(bytes, opt + 48, "subsystem version")?;
    let minor_subsystem_version = u16_at(bytes, opt + 50, "subsystem version")?;
    let subsystem = u16_at(bytes, opt + 68, "subsystem")?;
    let (ndirs_off, dirs_off) = if is_pe32_plus { (108, 112) } else { (92, 96) };
    let ndirs = u32_at(bytes, opt + ndirs_off, "data directory count")?.min(16) as usize;
    let dir = |i: usize| -> Result<(u32, u32), PeError> {
        if i >= ndirs {
            return Ok((0, 0));
        }
        let off = opt + dirs_off + i * 8;
        Ok((
            u32_at(bytes, off, "directory")?,
            u32_at(bytes, off + 4, "directory")?,
        ))
    };
    let img = Image {
        bytes,
        sections: section_table(bytes)?,
    };

    let mut imports = Vec::new();
    let (imp_rva, imp_size) = dir(1)?;
    if imp_rva != 0 && imp_size != 0 {
        let base = img.offset_of(imp_rva)?;
        for i in 0..MAX_IMPORT_DLLS {
            let d = base + i * 20;
            let ilt = u32_at(bytes, d, "import descriptor")?;
            let name = u32_at(bytes, d + 12, "import descriptor")?;
            let iat = u32_at(bytes, d + 16, "import descriptor")?;
            if ilt == 0 && name == 0 && iat == 0 {
                break;
            }
            let dll = img.cstr(name)?;
            let thunks = if ilt != 0 { ilt } else { iat };
            let mut functions = Vec::new();
            let toff = img.offset_of(thunks)?;
            let step = if is_pe32_plus { 8 } else { 4 };
            for k in 0..MAX_THUNKS {
                let v = if is_pe32_plus {
                    u64_at(bytes, toff + k * step, "thunk")?
                } else {
                    u64::from(u32_at(bytes, toff + k * step, "thunk")?)
                };
                if v == 0 {
                    break;
                }
                let ordinal_flag = if is_pe32_plus { 1u64 << 63 } else { 1u64 << 31 };
                if v & ordinal_flag != 0 {
                    functions.push(format!("#{}", v & 0xFFFF));
                } else {
                    let hint_name =
                        u32::try_from(v & 0x7FFF_FFFF).map_err(|_| PeError::BadRva(0))?;
                    functions.push(
                        img.cstr(hint_name.checked_add(2).ok_or(PeError::BadRva(hint_name))?)?,
                    );
                }
            }
            imports.push(Import {
                dll,
                functions,
                iat_rva: iat,
            });
        }
    }

    let mut exports = Vec::new();
    let (exp_rva, exp_size) = dir(0)?;
    if exp_rva != 0 && exp_size != 0 {
        let e = img.offset_of(exp_rva)?;
        let nnames = u32_at(bytes, e + 24, "export directory")?.min(MAX_EXPORTS);
        let names_rva = u32_at(bytes, e + 32, "export directory")?;
        if nnames > 0 {
            let names = img.offset_of(names_rva)?;
            for k in 0..nnames as usize {
                exports.push(img.cstr(u32_at(bytes, names + k * 4, "export name")?)?);
            }
        }
    }
    let (_, certificate_bytes) = dir(4)?;
    let (_, relocation_bytes) = dir(5)?;
    Ok(PeInfo {
        machine,
        characteristics,
        is_pe32_plus,
        subsystem,
        major_subsystem_version,
        minor_subsystem_version,
        entry_point_rva,
        image_base,
        size_of_image,
        size_of_headers,
        imports,
        exports,
        certificate_bytes,
        relocation_bytes,
    })
}

/// Lays the image out as the Windows loader maps it at its preferred base: headers, then
/// each section at its RVA with the zero-filled tail. Imports are left unresolved (the
/// caller writes the IAT). Refuses images larger than `max_size` bytes.
pub fn map_image(bytes: &[u8], max_size: u32) -> Result<(PeInfo, Vec<u8>), PeError> {
    let info = parse(bytes)?;
    if info.size_of_image == 0 || info.size_of_image > max_size {
        return Err(PeError::OutOfRange("size of image"));
    }
    let mut image = vec![0u8; info.size_of_image as usize];
    let headers = (info.size_of_headers as usize).min(bytes.len());
    image
        .get_mut(..headers)
        .ok_or(PeError::OutOfRange("headers"))?
        .copy_from_slice(&bytes[..headers]);
    for s in section_table(bytes)? {
        // Past the virtual size is file padding; the loader maps zeros there.
        let raw = if s.vsize == 0 {
            s.raw_size
        } else {
            s.raw_size.min(s.vsize)
        } as usize;
        let src = bytes
            .get(s.raw_ptr as usize..(s.raw_ptr as usize).saturating_add(raw))
            .ok_or(PeError::OutOfRange("section data"))?;
        let dst = image
            .get_mut(s.va as usize..(s.va as usize).saturating_add(raw))
            .ok_or(PeError::OutOfRange("section placement"))?;
        dst.copy_from_slice(src);
    }
    Ok((info, image))
}

fn section_table(bytes: &[u8]) -> Result<Vec<Section>, PeError> {
    let pe = u32_at(bytes, 0x3C, "e_lfanew")? as usize;
    let coff = pe + 4;
    let nsections = u16_at(bytes, coff + 2, "section count")?;
    let opt_size = u16_at(bytes, coff + 16, "optional header size")? as usize;
    let sec0 = coff + 20 + opt_size;
    (0..usize::from(nsections))
        .map(|i| {
            let s = sec0 + i * 40;
            Ok(Section {
                vsize: u32_at(bytes, s + 8, "section")?,
                va: u32_at(bytes, s + 12, "section")?,
                raw_size: u32_at(bytes, s + 16, "section")?,
                raw_ptr: u32_at(bytes, s + 20, "section")?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_garbage_without_panicking() {
        assert_eq!(parse(b""), Err(PeError::NotPe("no MZ header")));
        let mut b = vec![0u8; 0x40];
        b[0] = b'M';
        b[1] = b'Z';
        b[0x3C] = 0xFF;
        assert_eq!(parse(&b), Err(PeError::NotPe("no PE signature")));
        // A PE signature with a truncated header.
        let mut b = vec![0u8; 0x48];
        b[0] = b'M';
        b[1] = b'Z';
        b[0x3C] = 0x40;
        b[0x40..0x44].copy_from_slice(b"PE\0\0");
        assert!(matches!(parse(&b), Err(PeError::OutOfRange(_))));
        // Every prefix of a valid-looking header is rejected cleanly.
        for n in 0..b.len() {
            let _ = parse(&b[..n]);
        }
    }

    /// A PE32 image with one section: headers in the first 0x200 bytes, the section's
    /// 0x200 raw bytes (virtual size 0x100) at file offset 0x200, RVA 0x1000.
    fn tiny_image() -> Vec<u8> {
        let mut b = vec![0u8; 0x400];
        b[0..2].copy_from_slice(b"MZ");
        b[0x3C..0x40].copy_from_slice(&0x40u32.to_le_bytes());
        b[0x40..0x44].copy_from_slice(b"PE\0\0");
        let coff = 0x44;
        b[coff..coff + 2].copy_from_slice(&MACHINE_I386.to_le_bytes());
        b[coff + 2..coff + 4].copy_from_slice(&1u16.to_le_bytes());
        b[coff + 16..coff + 18].copy_from_slice(&224u16.to_le_bytes());
        let opt = coff + 20;
        b[opt..opt + 2].copy_from_slice(&0x10Bu16.to_le_bytes());
        b[opt + 28..opt + 32].copy_from_slice(&0x40_0000u32.to_le_bytes()); // image base
        b[opt + 56..opt + 60].copy_from_slice(&0x2000u32.to_le_bytes()); // size of image
        b[opt + 60..opt + 64].copy_from_slice(&0x200u32.to_le_bytes()); // size of headers
        b[opt + 92..opt + 96].copy_from_slice(&16u32.to_le_bytes());
        let sec = opt + 224;
        b[sec..sec + 5].copy_from_slice(b".text");
        b[sec + 8..sec + 12].copy_from_slice(&0x100u32.to_le_bytes()); // virtual size
        b[sec + 12..sec + 16].copy_from_slice(&0x1000u32.to_le_bytes()); // RVA
        b[sec + 16..sec + 20].copy_from_slice(&0x200u32.to_le_bytes()); // raw size
        b[sec + 20..sec + 24].copy_from_slice(&0x200u32.to_le_bytes()); // raw pointer
        for (i, v) in b[0x200..0x400].iter_mut().enumerate() {
            *v = i as u8 | 1;
        }
        b
    }

    #[test]
    fn map_image_lays_out_sections_and_rejects_bad_ones() {
        let file = tiny_image();
        let (info, image) = map_image(&file, 1 << 20).unwrap();
        assert_eq!((info.image_base, image.len()), (0x40_0000, 0x2000));
        assert_eq!(&image[..0x200], &file[..0x200], "headers");
        assert_eq!(
            &image[0x1000..0x1100],
            &file[0x200..0x300],
            "the section at its RVA"
        );
        assert!(
            image[0x1100..].iter().all(|&v| v == 0),
            "padding past the virtual size is zero"
        );
        assert!(
            map_image(&file, 0x1000).is_err(),
            "larger than the caller allows"
        );
        let patch = |off: usize, v: u32| {
            let mut f = file.clone();
            f[off..off + 4].copy_from_slice(&v.to_le_bytes());
            f
        };
        let sec = 0x44 + 20 + 224;
        assert!(
            map_image(&patch(sec + 20, 0x380), 1 << 20).is_err(),
            "raw data past the end of the file"
        );
        assert!(
            map_image(&patch(sec + 12, 0x1F80), 1 << 20).is_err(),
            "section past the image"
        );
        assert!(
            map_image(&patch(sec + 12, u32::MAX), 1 << 20).is_err(),
            "RVA at the top of the address space"
        );
        // Every truncation fails cleanly.
        for n in 0..file.len() {
            let _ = map_image(&file[..n], 1 << 20);
        }
    }
}
