//! A small AML (ACPI Machine Language) encoder, written from the grammar in ACPI 6.x
//! chapter 20. Every constructor returns one encoded term ([`Aml`]); terms compose by
//! value, and the variable-length ones compute their PkgLength when built.
//!
//! Only what Aero's DSDT needs is here: data objects (integers in their shortest form,
//! strings, buffers, packages), names and scopes, devices, processors, methods,
//! operation regions and fields, and a handful of expression/statement opcodes.

mod name;
pub mod resource;

pub use name::{NameSeg, NameString};
pub use resource::{Resource, resource_template};

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum AmlError {
    #[error("invalid AML name segment {0:?}")]
    InvalidNameSeg(String),
    #[error("invalid AML name path {0:?}")]
    InvalidPath(String),
    #[error("AML package of {0} bytes exceeds the 28-bit PkgLength")]
    PackageTooLong(usize),
    #[error("AML package has {0} elements; at most 255 fit a Package")]
    TooManyElements(usize),
    #[error("AML string {0:?} must be 7-bit ASCII without NUL")]
    InvalidString(String),
    #[error("invalid EISA ID {0:?} (expected three letters and four hex digits)")]
    InvalidEisaId(String),
    #[error("method argument count {0} exceeds 7")]
    TooManyArgs(u8),
    #[error("{field} = {value:#x} does not fit the {width}-bit resource descriptor")]
    ResourceValueTooWide {
        field: &'static str,
        value: u64,
        width: u32,
    },
    #[error("resource descriptor invalid: {0}")]
    InvalidResource(&'static str),
}

/// One encoded AML term (object, statement or expression).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aml(Vec<u8>);

impl Aml {
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
    fn from_parts(parts: &[&[u8]]) -> Aml {
        Aml(parts.concat())
    }
}

/// Concatenates terms into a TermList.
pub fn term_list(terms: &[Aml]) -> Vec<u8> {
    terms.iter().flat_map(|t| t.0.iter().copied()).collect()
}

mod op {
    pub const ZERO: u8 = 0x00;
    pub const ONE: u8 = 0x01;
    pub const NAME: u8 = 0x08;
    pub const BYTE_PREFIX: u8 = 0x0A;
    pub const WORD_PREFIX: u8 = 0x0B;
    pub const DWORD_PREFIX: u8 = 0x0C;
    pub const STRING_PREFIX: u8 = 0x0D;
    pub const QWORD_PREFIX: u8 = 0x0E;
    pub const SCOPE: u8 = 0x10;
    pub const BUFFER: u8 = 0x11;
    pub const PACKAGE: u8 = 0x12;
    pub const METHOD: u8 = 0x14;
    pub const EXT_PREFIX: u8 = 0x5B;
    pub const LOCAL0: u8 = 0x60;
    pub const ARG0: u8 = 0x68;
    pub const STORE: u8 = 0x70;
    pub const ADD: u8 = 0x72;
    pub const SHIFT_LEFT: u8 = 0x79;
    pub const AND: u8 = 0x7B;
    pub const OR: u8 = 0x7D;
    pub const DEREF_OF: u8 = 0x83;
    pub const SIZE_OF: u8 = 0x87;
    pub const INDEX: u8 = 0x88;
    pub const CREATE_DWORD_FIELD: u8 = 0x8A;
    pub const LAND: u8 = 0x90;
    pub const LNOT: u8 = 0x92;
    pub const LEQUAL: u8 = 0x93;
    pub const IF: u8 = 0xA0;
    pub const ELSE: u8 = 0xA1;
    pub const RETURN: u8 = 0xA4;
    pub const ONES: u8 = 0xFF;
    // Second bytes after EXT_PREFIX.
    pub const EXT_OP_REGION: u8 = 0x80;
    pub const EXT_FIELD: u8 = 0x81;
    pub const EXT_DEVICE: u8 = 0x82;
    pub const EXT_PROCESSOR: u8 = 0x83;
}

/// Largest value a PkgLength can hold (28 bits), ACPI 6.x §20.2.4.
const PKG_LENGTH_MAX: usize = (1 << 28) - 1;

/// Encodes the PkgLength for `content_len` bytes that follow it. The encoded value counts
/// the PkgLength bytes themselves, so the form is chosen by the total.
pub fn pkg_length(content_len: usize) -> Result<Vec<u8>, AmlError> {
    // One byte holds six bits; each follow byte adds eight above the lead byte's nibble.
    if content_len < 0x3F {
        return Ok(vec![(content_len + 1) as u8]);
    }
    for follow in 1..=3usize {
        let total = content_len + 1 + follow;
        if total < 1usize << (4 + 8 * follow) {
            let mut out = vec![((follow as u8) << 6) | (total & 0x0F) as u8];
            out.extend((0..follow).map(|i| (total >> (4 + 8 * i)) as u8));
            return Ok(out);
        }
    }
    Err(AmlError::PackageTooLong(content_len))
}

/// Encodes a field-unit width; FieldList entries reuse the PkgLength encoding for bit
/// counts, but the value is the plain count (it does not include its own size).
fn field_length(bits: u32) -> Result<Vec<u8>, AmlError> {
    let bits = bits as usize;
    if bits > PKG_LENGTH_MAX {
        return Err(AmlError::PackageTooLong(bits));
    }
    if bits <= 0x3F {
        return Ok(vec![bits as u8]);
    }
    let follow = (1..=3usize)
        .find(|&f| bits < 1usize << (4 + 8 * f))
        .unwrap_or(3);
    let mut out = vec![((follow as u8) << 6) | (bits & 0x0F) as u8];
    out.extend((0..follow).map(|i| (bits >> (4 + 8 * i)) as u8));
    Ok(out)
}

/// `opcode PkgLength contents`.
fn with_pkg(opcode: &[u8], contents: &[u8]) -> Result<Aml, AmlError> {
    let len = pkg_length(contents.len())?;
    Ok(Aml::from_parts(&[opcode, &len, contents]))
}

// ---------------------------------------------------------------- data objects

/// An integer in its shortest encoding: ZeroOp, OneOp, or a Byte/Word/DWord/QWord prefix.
pub fn int(value: u64) -> Aml {
    match value {
        0 => Aml(vec![op::ZERO]),
        1 => Aml(vec![op::ONE]),
        2..=0xFF => Aml(vec![op::BYTE_PREFIX, value as u8]),
        0x100..=0xFFFF => Aml::from_parts(&[&[op::WORD_PREFIX], &(value as u16).to_le_bytes()]),
        0x1_0000..=0xFFFF_FFFF => {
            Aml::from_parts(&[&[op::DWORD_PREFIX], &(value as u32).to_le_bytes()])
        }
        _ => Aml::from_parts(&[&[op::QWORD_PREFIX], &value.to_le_bytes()]),
    }
}

/// OnesOp: all bits set at the table's integer width.
pub fn ones() -> Aml {
    Aml(vec![op::ONES])
}

/// A NUL-terminated ASCII string.
pub fn string(text: &str) -> Result<Aml, AmlError> {
    if !text.bytes().all(|b| (0x01..=0x7F).contains(&b)) {
        return Err(AmlError::InvalidString(text.to_owned()));
    }
    Ok(Aml::from_parts(&[
        &[op::STRING_PREFIX],
        text.as_bytes(),
        &[0],
    ]))
}

/// The 32-bit compressed EISA ID of a PnP identifier such as `PNP0A03`, as ASL's
/// `EisaId()` produces it.
pub fn eisa_id_value(id: &str) -> Result<u32, AmlError> {
    let b = id.as_bytes();
    let invalid = || AmlError::InvalidEisaId(id.to_owned());
    if b.len() != 7 || !b[..3].iter().all(u8::is_ascii_uppercase) {
        return Err(invalid());
    }
    let letter = |c: u8| u32::from(c - b'@'); // 'A' = 1 … 'Z' = 26, five bits
    let mut hex = 0u32;
    for &c in &b[3..] {
        let digit = char::from(c).to_digit(16).ok_or_else(invalid)?;
        hex = (hex << 4) | digit;
    }
    let vendor = (letter(b[0]) << 10) | (letter(b[1]) << 5) | letter(b[2]);
    // Stored big-endian in memory (vendor high byte first), read as a little-endian DWord.
    let bytes = [
        (vendor >> 8) as u8,
        vendor as u8,
        (hex >> 8) as u8,
        hex as u8,
    ];
    Ok(u32::from_le_bytes(bytes))
}

pub fn eisa_id(id: &str) -> Result<Aml, AmlError> {
    Ok(int(u64::from(eisa_id_value(id)?)))
}

/// `Buffer(len) { bytes }`.
pub fn buffer(bytes: &[u8]) -> Result<Aml, AmlError> {
    let size = int(bytes.len() as u64);
    with_pkg(&[op::BUFFER], &[size.bytes(), bytes].concat())
}

/// `Package(n) { elements }`; elements are data objects or name references.
pub fn package(elements: &[Aml]) -> Result<Aml, AmlError> {
    let count =
        u8::try_from(elements.len()).map_err(|_| AmlError::TooManyElements(elements.len()))?;
    let mut contents = vec![count];
    contents.extend(term_list(elements));
    with_pkg(&[op::PACKAGE], &contents)
}

/// A reference to a named object (a NameString used as a term, a package element, a
/// store target, or a call of a method without arguments).
pub fn name_ref(path: &str) -> Result<Aml, AmlError> {
    Ok(Aml(NameString::parse(path)?.encoded()))
}

/// Calls a method with arguments.
pub fn call(path: &str, args: &[Aml]) -> Result<Aml, AmlError> {
    let mut out = NameString::parse(path)?.encoded();
    out.extend(term_list(args));
    Ok(Aml(out))
}

pub fn arg(n: u8) -> Aml {
    Aml(vec![op::ARG0 + n.min(6)])
}

pub fn local(n: u8) -> Aml {
    Aml(vec![op::LOCAL0 + n.min(7)])
}

/// The NullName target: discard an operator's result.
pub fn no_target() -> Aml {
    Aml(vec![0x00])
}

// ---------------------------------------------------------- namespace objects

/// `Name(path, value)`.
pub fn name(path: &str, value: Aml) -> Result<Aml, AmlError> {
    let path = NameString::parse(path)?.encoded();
    Ok(Aml::from_parts(&[&[op::NAME], &path, value.bytes()]))
}

/// `Scope(path) { body }`.
pub fn scope(path: &str, body: &[Aml]) -> Result<Aml, AmlError> {
    let contents = [NameString::parse(path)?.encoded(), term_list(body)].concat();
    with_pkg(&[op::SCOPE], &contents)
}

/// `Device(path) { body }`.
pub fn device(path: &str, body: &[Aml]) -> Result<Aml, AmlError> {
    let contents = [NameString::parse(path)?.encoded(), term_list(body)].concat();
    with_pkg(&[op::EXT_PREFIX, op::EXT_DEVICE], &contents)
}

/// `Processor(path, id, pblk_address, pblk_length) { body }` — deprecated in ACPI 6.x in
/// favour of `Device(ACPI0007)`, but Windows 7 only understands this form.
pub fn processor(
    path: &str,
    id: u8,
    pblk_address: u32,
    pblk_length: u8,
    body: &[Aml],
) -> Result<Aml, AmlError> {
    let mut contents = NameString::parse(path)?.encoded();
    contents.push(id);
    contents.extend_from_slice(&pblk_address.to_le_bytes());
    contents.push(pblk_length);
    contents.extend(term_list(body));
    with_pkg(&[op::EXT_PREFIX, op::EXT_PROCESSOR], &contents)
}

/// `Method(path, arg_count, Serialized|NotSerialized) { body }` with sync level 0.
pub fn method(path: &str, arg_count: u8, serialized: bool, body: &[Aml]) -> Result<Aml, AmlError> {
    if arg_count > 7 {
        return Err(AmlError::TooManyArgs(arg_count));
    }
    let flags = arg_count | if serialized { 1 << 3 } else { 0 };
    let contents = [
        NameString::parse(path)?.encoded(),
        vec![flags],
        term_list(body),
    ]
    .concat();
    with_pkg(&[op::METHOD], &contents)
}

/// Address spaces an OperationRegion can live in (ACPI 6.x §19.6.100, table 19.x).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegionSpace {
    SystemMemory = 0,
    SystemIo = 1,
    PciConfig = 2,
}

/// `OperationRegion(path, space, offset, length)`.
pub fn op_region(
    path: &str,
    space: RegionSpace,
    offset: Aml,
    length: Aml,
) -> Result<Aml, AmlError> {
    let path = NameString::parse(path)?.encoded();
    Ok(Aml::from_parts(&[
        &[op::EXT_PREFIX, op::EXT_OP_REGION],
        &path,
        &[space as u8],
        offset.bytes(),
        length.bytes(),
    ]))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldAccess {
    Any = 0,
    Byte = 1,
    Word = 2,
    DWord = 3,
    QWord = 4,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldUpdate {
    Preserve = 0,
    WriteAsOnes = 1,
    WriteAsZeros = 2,
}

/// One entry of a FieldList.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldEntry<'a> {
    /// A named field unit of `bits` bits.
    Named(&'a str, u32),
    /// `Offset()`-style skip of `bits` bits.
    Reserved(u32),
}

/// `Field(region, access, lock, update) { entries }`.
pub fn field(
    region: &str,
    access: FieldAccess,
    lock: bool,
    update: FieldUpdate,
    entries: &[FieldEntry<'_>],
) -> Result<Aml, AmlError> {
    let flags = access as u8 | (u8::from(lock) << 4) | ((update as u8) << 5);
    let mut contents = NameString::parse(region)?.encoded();
    contents.push(flags);
    for entry in entries {
        match *entry {
            FieldEntry::Named(seg, bits) => {
                contents.extend_from_slice(&NameSeg::new(seg)?.bytes());
                contents.extend(field_length(bits)?);
            }
            FieldEntry::Reserved(bits) => {
                contents.push(0x00);
                contents.extend(field_length(bits)?);
            }
        }
    }
    with_pkg(&[op::EXT_PREFIX, op::EXT_FIELD], &contents)
}

/// `CreateDWordField(source, byte_index, path)`.
pub fn create_dword_field(source: Aml, byte_index: Aml, path: &str) -> Result<Aml, AmlError> {
    let path = NameString::parse(path)?.encoded();
    Ok(Aml::from_parts(&[
        &[op::CREATE_DWORD_FIELD],
        source.bytes(),
        byte_index.bytes(),
        &path,
    ]))
}

// ------------------------------------------------------- statements/expressions

/// `If (predicate) { body }`.
pub fn if_(predicate: Aml, body: &[Aml]) -> Result<Aml, AmlError> {
    with_pkg(
        &[op::IF],
        &[predicate.into_bytes(), term_list(body)].concat(),
    )
}

/// `Else { body }`; must directly follow an `If` in the same TermList.
pub fn else_(body: &[Aml]) -> Result<Aml, AmlError> {
    with_pkg(&[op::ELSE], &term_list(body))
}

pub fn ret(value: Aml) -> Aml {
    Aml::from_parts(&[&[op::RETURN], value.bytes()])
}

/// `Store(source, target)`.
pub fn store(source: Aml, target: Aml) -> Aml {
    Aml::from_parts(&[&[op::STORE], source.bytes(), target.bytes()])
}

fn binary(opcode: u8, a: Aml, b: Aml, target: Aml) -> Aml {
    Aml::from_parts(&[&[opcode], a.bytes(), b.bytes(), target.bytes()])
}

pub fn and(a: Aml, b: Aml, target: Aml) -> Aml {
    binary(op::AND, a, b, target)
}
pub fn or(a: Aml, b: Aml, target: Aml) -> Aml {
    binary(op::OR, a, b, target)
}
pub fn add(a: Aml, b: Aml, target: Aml) -> Aml {
    binary(op::ADD, a, b, target)
}
pub fn shift_left(a: Aml, count: Aml, target: Aml) -> Aml {
    binary(op::SHIFT_LEFT, a, count, target)
}
/// `Index(source, index, target)`: a reference to one element of a package or buffer.
pub fn index(source: Aml, idx: Aml, target: Aml) -> Aml {
    binary(op::INDEX, source, idx, target)
}
pub fn deref_of(reference: Aml) -> Aml {
    Aml::from_parts(&[&[op::DEREF_OF], reference.bytes()])
}
/// `SizeOf(object)`: elements of a package, bytes of a buffer or string.
pub fn size_of(object: Aml) -> Aml {
    Aml::from_parts(&[&[op::SIZE_OF], object.bytes()])
}
pub fn lnot(a: Aml) -> Aml {
    Aml::from_parts(&[&[op::LNOT], a.bytes()])
}
pub fn land(a: Aml, b: Aml) -> Aml {
    Aml::from_parts(&[&[op::LAND], a.bytes(), b.bytes()])
}
pub fn lequal(a: Aml, b: Aml) -> Aml {
    Aml::from_parts(&[&[op::LEQUAL], a.bytes(), b.bytes()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkg_length_uses_one_to_four_bytes() {
        assert_eq!(pkg_length(0).unwrap(), vec![0x01]);
        assert_eq!(pkg_length(0x3E).unwrap(), vec![0x3F]);
        // 63 content bytes + 2 length bytes = 65 = 0x41: lead 0x41 & 0xF | 1<<6, then 0x04.
        assert_eq!(pkg_length(0x3F).unwrap(), vec![0x41, 0x04]);
        assert_eq!(pkg_length(0xFFD).unwrap(), vec![0x4F, 0xFF]); // total 0xFFF
        assert_eq!(pkg_length(0xFFE).unwrap(), vec![0x81, 0x00, 0x01]); // total 0x1001
        assert_eq!(pkg_length(0xF_FFFC).unwrap(), vec![0x8F, 0xFF, 0xFF]); // total 0xFFFFF
        assert_eq!(pkg_length(0xF_FFFD).unwrap(), vec![0xC1, 0x00, 0x00, 0x01]);
        assert_eq!(
            pkg_length(0x0FFF_FFFB).unwrap(),
            vec![0xCF, 0xFF, 0xFF, 0xFF]
        );
        assert!(pkg_length(0x0FFF_FFFC).is_err());
    }

    #[test]
    fn field_lengths_are_plain_bit_counts() {
        assert_eq!(field_length(8).unwrap(), vec![0x08]);
        assert_eq!(field_length(0x3F).unwrap(), vec![0x3F]);
        assert_eq!(field_length(0x40).unwrap(), vec![0x40, 0x04]);
        assert_eq!(field_length(0x1000).unwrap(), vec![0x80, 0x00, 0x01]);
    }

    #[test]
    fn integers_take_the_shortest_form() {
        assert_eq!(int(0).bytes(), [0x00]);
        assert_eq!(int(1).bytes(), [0x01]);
        assert_eq!(int(2).bytes(), [0x0A, 0x02]);
        assert_eq!(int(0xFF).bytes(), [0x0A, 0xFF]);
        assert_eq!(int(0x100).bytes(), [0x0B, 0x00, 0x01]);
        assert_eq!(int(0xFFFF).bytes(), [0x0B, 0xFF, 0xFF]);
        assert_eq!(int(0x1_0000).bytes(), [0x0C, 0x00, 0x00, 0x01, 0x00]);
        assert_eq!(int(0xFEC0_0000).bytes(), [0x0C, 0x00, 0x00, 0xC0, 0xFE]);
        assert_eq!(int(0x1_0000_0000).bytes(), [0x0E, 0, 0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(ones().bytes(), [0xFF]);
    }

    #[test]
    fn eisa_ids_compress_like_asl() {
        assert_eq!(eisa_id_value("PNP0A03").unwrap(), 0x030A_D041);
        assert_eq!(eisa_id_value("PNP0103").unwrap(), 0x0301_D041);
        assert_eq!(eisa_id_value("PNP0C0F").unwrap(), 0x0F0C_D041);
        assert!(eisa_id_value("pnp0A03").is_err());
        assert!(eisa_id_value("PNP0A0G").is_err());
        assert!(eisa_id_value("PNP0A0").is_err());
    }

    #[test]
    fn strings_are_nul_terminated_ascii() {
        assert_eq!(string("AB").unwrap().bytes(), [0x0D, b'A', b'B', 0x00]);
        assert!(string("a\0b").is_err());
        assert!(string("é").is_err());
    }

    #[test]
    fn name_and_package_encodings() {
        let pkg = package(&[int(0), int(5), name_ref("LNKA").unwrap()]).unwrap();
        assert_eq!(
            pkg.bytes(),
            [0x12, 0x09, 0x03, 0x00, 0x0A, 0x05, b'L', b'N', b'K', b'A']
        );
        let s5 = name("_S5", package(&[int(0), int(0)]).unwrap()).unwrap();
        assert_eq!(
            s5.bytes(),
            [0x08, b'_', b'S', b'5', b'_', 0x12, 0x04, 0x02, 0x00, 0x00]
        );
        let too_many: Vec<Aml> = (0..256).map(|_| int(0)).collect();
        assert_eq!(package(&too_many), Err(AmlError::TooManyElements(256)));
    }

    #[test]
    fn buffer_encodes_its_size_as_an_integer() {
        assert_eq!(
            buffer(&[0x79, 0x00]).unwrap().bytes(),
            [0x11, 0x05, 0x0A, 0x02, 0x79, 0x00]
        );
        let big = buffer(&[0u8; 100]).unwrap();
        // 2 PkgLength bytes + ByteConst(100) 2 bytes + 100 data bytes.
        assert_eq!(&big.bytes()[..5], [0x11, 0x48, 0x06, 0x0A, 100]);
        assert_eq!(big.bytes().len(), 1 + 2 + 2 + 100);
    }

    #[test]
    fn method_device_and_scope_encodings() {
        let m = method(
            "_PIC",
            1,
            false,
            &[store(arg(0), name_ref("PICM").unwrap())],
        )
        .unwrap();
        assert_eq!(
            m.bytes(),
            [
                0x14, 0x0C, b'_', b'P', b'I', b'C', 0x01, 0x70, 0x68, b'P', b'I', b'C', b'M'
            ]
        );
        let serialized = method("LCRS", 1, true, &[]).unwrap();
        assert_eq!(serialized.bytes()[6], 0x09);
        assert!(method("XXXX", 8, false, &[]).is_err());
        let d = device("RTC", &[name("_UID", int(0)).unwrap()]).unwrap();
        assert_eq!(
            d.bytes(),
            [
                0x5B, 0x82, 0x0B, b'R', b'T', b'C', b'_', 0x08, b'_', b'U', b'I', b'D', 0x00
            ]
        );
        let s = scope("\\_SB", &[]).unwrap();
        assert_eq!(s.bytes(), [0x10, 0x06, b'\\', b'_', b'S', b'B', b'_']);
    }

    #[test]
    fn processor_encoding() {
        let p = processor("CP00", 0, 0, 0, &[]).unwrap();
        assert_eq!(
            p.bytes(),
            [0x5B, 0x83, 0x0B, b'C', b'P', b'0', b'0', 0, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn region_and_field_encodings() {
        let r = op_region("PIRQ", RegionSpace::PciConfig, int(0x60), int(4)).unwrap();
        assert_eq!(
            r.bytes(),
            [
                0x5B, 0x80, b'P', b'I', b'R', b'Q', 0x02, 0x0A, 0x60, 0x0A, 0x04
            ]
        );
        let f = field(
            "PIRQ",
            FieldAccess::Byte,
            false,
            FieldUpdate::Preserve,
            &[
                FieldEntry::Named("PRQA", 8),
                FieldEntry::Reserved(16),
                FieldEntry::Named("PRQD", 8),
            ],
        )
        .unwrap();
        assert_eq!(
            f.bytes(),
            [
                0x5B, 0x81, 0x12, b'P', b'I', b'R', b'Q', 0x01, b'P', b'R', b'Q', b'A', 0x08, 0x00,
                0x10, b'P', b'R', b'Q', b'D', 0x08
            ]
        );
        let locked = field(
            "R",
            FieldAccess::DWord,
            true,
            FieldUpdate::WriteAsZeros,
            &[],
        )
        .unwrap();
        assert_eq!(locked.bytes()[7], 0x03 | 0x10 | 0x40);
    }

    #[test]
    fn control_flow_encodings() {
        let i = if_(lnot(arg(0)), &[ret(int(0x0B))]).unwrap();
        assert_eq!(i.bytes(), [0xA0, 0x06, 0x92, 0x68, 0xA4, 0x0A, 0x0B]);
        let e = else_(&[ret(int(9))]).unwrap();
        assert_eq!(e.bytes(), [0xA1, 0x04, 0xA4, 0x0A, 0x09]);
        let a = and(arg(0), int(0x80), no_target());
        assert_eq!(a.bytes(), [0x7B, 0x68, 0x0A, 0x80, 0x00]);
        let d = deref_of(index(name_ref("PRTP").unwrap(), arg(0), no_target()));
        assert_eq!(d.bytes(), [0x83, 0x88, b'P', b'R', b'T', b'P', 0x68, 0x00]);
        let c = create_dword_field(arg(0), int(5), "IRQW").unwrap();
        assert_eq!(c.bytes(), [0x8A, 0x68, 0x0A, 0x05, b'I', b'R', b'Q', b'W']);
    }
}
