//! One SMBIOS structure: the formatted area (type, length, handle, fields) followed by
//! its string set.

use crate::tables::TablesError;

pub struct Structure {
    formatted: Vec<u8>,
    strings: Vec<String>,
}

impl Structure {
    pub fn new(kind: u8, handle: u16) -> Structure {
        let mut formatted = vec![kind, 0];
        formatted.extend_from_slice(&handle.to_le_bytes());
        Structure {
            formatted,
            strings: Vec::new(),
        }
    }

    pub fn bytes(&mut self, bytes: &[u8]) {
        self.formatted.extend_from_slice(bytes);
    }
    pub fn u16(&mut self, v: u16) {
        self.bytes(&v.to_le_bytes());
    }
    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    /// Adds a string and returns its 1-based number; empty strings are "none" (0).
    pub fn string(&mut self, text: &str) -> Result<u8, TablesError> {
        if text.is_empty() {
            return Ok(0);
        }
        if text.bytes().any(|b| b == 0 || !b.is_ascii()) {
            return Err(TablesError::InvalidConfig(format!(
                "SMBIOS string {text:?} must be ASCII without NUL"
            )));
        }
        if let Some(i) = self.strings.iter().position(|s| s == text) {
            return Ok(i as u8 + 1);
        }
        if self.strings.len() >= 255 {
            return Err(TablesError::TooLarge {
                what: "SMBIOS string set",
                len: 256,
                max: 255,
            });
        }
        self.strings.push(text.to_owned());
        Ok(self.strings.len() as u8)
    }

    /// Formatted area with its length byte filled in, the strings, and the double NUL.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.formatted.clone();
        out[1] = u8::try_from(self.formatted.len()).unwrap_or(u8::MAX);
        for s in &self.strings {
            out.extend_from_slice(s.as_bytes());
            out.push(0);
        }
        if self.strings.is_empty() {
            out.push(0);
        }
        out.push(0);
        out
    }
}
