//! AML names: `NameSeg` (four characters, `_`-padded) and `NameString` (a path with an
//! optional root or parent prefix), ACPI 6.x §20.2.2.

use super::AmlError;

const ROOT_CHAR: u8 = b'\\';
const PARENT_PREFIX_CHAR: u8 = b'^';
const DUAL_NAME_PREFIX: u8 = 0x2E;
const MULTI_NAME_PREFIX: u8 = 0x2F;
const NULL_NAME: u8 = 0x00;

/// One four-character name segment. Shorter names are padded with `_` as ASL does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameSeg([u8; 4]);

impl NameSeg {
    /// Parses `A`–`Z`/`_` followed by up to three `A`–`Z`/`0`–`9`/`_` characters.
    pub fn new(text: &str) -> Result<NameSeg, AmlError> {
        let bytes = text.as_bytes();
        let invalid = || AmlError::InvalidNameSeg(text.to_owned());
        if bytes.is_empty() || bytes.len() > 4 {
            return Err(invalid());
        }
        let mut seg = [b'_'; 4];
        for (i, &c) in bytes.iter().enumerate() {
            let ok = c.is_ascii_uppercase() || c == b'_' || (i > 0 && c.is_ascii_digit());
            if !ok {
                return Err(invalid());
            }
            seg[i] = c;
        }
        Ok(NameSeg(seg))
    }

    pub fn bytes(self) -> [u8; 4] {
        self.0
    }
}

/// A name path as written in ASL: `\_SB.PCI0`, `^LNKA`, `PRQA`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameString {
    rooted: bool,
    parent_levels: u8,
    segments: Vec<NameSeg>,
}

impl NameString {
    pub fn parse(text: &str) -> Result<NameString, AmlError> {
        let mut rest = text;
        let rooted = rest.starts_with('\\');
        if rooted {
            rest = &rest[1..];
        }
        let mut parent_levels = 0u8;
        while !rooted && rest.starts_with('^') {
            parent_levels = parent_levels
                .checked_add(1)
                .ok_or_else(|| AmlError::InvalidPath(text.to_owned()))?;
            rest = &rest[1..];
        }
        let segments = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split('.')
                .map(NameSeg::new)
                .collect::<Result<Vec<_>, _>>()?
        };
        // A bare "^" or "" names nothing; only "\" may stand alone (the root scope).
        if segments.is_empty() && !rooted {
            return Err(AmlError::InvalidPath(text.to_owned()));
        }
        if segments.len() > usize::from(u8::MAX) {
            return Err(AmlError::InvalidPath(text.to_owned()));
        }
        Ok(NameString {
            rooted,
            parent_levels,
            segments,
        })
    }

    pub fn encode_into(&self, out: &mut Vec<u8>) {
        if self.rooted {
            out.push(ROOT_CHAR);
        }
        out.extend(std::iter::repeat_n(
            PARENT_PREFIX_CHAR,
            usize::from(self.parent_levels),
        ));
        match self.segments.as_slice() {
            [] => out.push(NULL_NAME),
            [one] => out.extend_from_slice(&one.bytes()),
            [first, second] => {
                out.push(DUAL_NAME_PREFIX);
                out.extend_from_slice(&first.bytes());
                out.extend_from_slice(&second.bytes());
            }
            many => {
                out.push(MULTI_NAME_PREFIX);
                // parse() caps the segment count at 255.
                out.push(u8::try_from(many.len()).unwrap_or(u8::MAX));
                for seg in many {
                    out.extend_from_slice(&seg.bytes());
                }
            }
        }
    }

    pub fn encoded(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_segments_are_underscore_padded() {
        assert_eq!(NameSeg::new("ISA").unwrap().bytes(), *b"ISA_");
        assert_eq!(NameSeg::new("_SB").unwrap().bytes(), *b"_SB_");
        assert_eq!(NameSeg::new("A").unwrap().bytes(), *b"A___");
        assert_eq!(NameSeg::new("PCI0").unwrap().bytes(), *b"PCI0");
    }

    #[test]
    fn invalid_segments_are_rejected() {
        for bad in ["", "TOOLONG", "0ABC", "ab", "A-B", "A.B"] {
            assert!(NameSeg::new(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn path_prefixes_follow_the_grammar() {
        assert_eq!(
            NameString::parse("LNKA").unwrap().encoded(),
            b"LNKA".to_vec()
        );
        assert_eq!(
            NameString::parse("\\").unwrap().encoded(),
            vec![b'\\', 0x00]
        );
        assert_eq!(
            NameString::parse("\\_SB").unwrap().encoded(),
            b"\\_SB_".to_vec()
        );
        assert_eq!(
            NameString::parse("\\_SB.PCI0").unwrap().encoded(),
            b"\\\x2E_SB_PCI0".to_vec()
        );
        assert_eq!(
            NameString::parse("\\_SB.PCI0.ISA.PRQA").unwrap().encoded(),
            b"\\\x2F\x04_SB_PCI0ISA_PRQA".to_vec()
        );
        assert_eq!(
            NameString::parse("^^RTC").unwrap().encoded(),
            b"^^RTC_".to_vec()
        );
    }

    #[test]
    fn empty_relative_paths_are_rejected() {
        assert!(NameString::parse("").is_err());
        assert!(NameString::parse("^").is_err());
        assert!(NameString::parse("PCI0..ISA").is_err());
    }
}
