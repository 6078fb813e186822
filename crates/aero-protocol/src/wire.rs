//! Little-endian field codecs and the macros that declare ABI structs and constants.
//!
//! Every ABI struct is a plain Rust struct plus an explicit byte layout (field offsets
//! written next to the fields, as in the C headers). Decoding copies out of a byte slice
//! and encoding copies into one: no transmutes, no alignment requirements, no unsafe.

use thiserror::Error;

/// A buffer was too small for the struct being decoded or encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("{what}: need {needed} bytes, have {have}")]
pub struct WireError {
    pub what: &'static str,
    pub needed: usize,
    pub have: usize,
}

/// A value with a fixed little-endian wire size.
///
/// `read_le`/`write_le` never panic: bytes outside `buf` read as zero and are not
/// written. The struct-level `decode`/`encode` check lengths first, so this only matters
/// for internal consistency.
pub trait Wire: Sized + Copy {
    const WIRE_SIZE: usize;
    fn read_le(buf: &[u8]) -> Self;
    fn write_le(&self, buf: &mut [u8]);
}

#[inline]
fn read_array<const N: usize>(buf: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(src) = buf.get(..N) {
        out.copy_from_slice(src);
    }
    out
}

#[inline]
fn write_array(buf: &mut [u8], bytes: &[u8]) {
    if let Some(dst) = buf.get_mut(..bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}

macro_rules! impl_wire_int {
    ($($t:ty),*) => {$(
        impl Wire for $t {
            const WIRE_SIZE: usize = core::mem::size_of::<$t>();
            #[inline]
            fn read_le(buf: &[u8]) -> Self {
                <$t>::from_le_bytes(read_array(buf))
            }
            #[inline]
            fn write_le(&self, buf: &mut [u8]) {
                write_array(buf, &self.to_le_bytes());
            }
        }
    )*};
}
impl_wire_int!(u8, u16, u32, i32, u64);

impl<T: Wire, const N: usize> Wire for [T; N] {
    const WIRE_SIZE: usize = T::WIRE_SIZE * N;
    fn read_le(buf: &[u8]) -> Self {
        core::array::from_fn(|i| T::read_le(buf.get(i * T::WIRE_SIZE..).unwrap_or(&[])))
    }
    fn write_le(&self, buf: &mut [u8]) {
        for (i, item) in self.iter().enumerate() {
            if let Some(dst) = buf.get_mut(i * T::WIRE_SIZE..) {
                item.write_le(dst);
            }
        }
    }
}

/// Layout of one ABI struct, for the C cross-check and for documentation.
#[derive(Clone, Copy, Debug)]
pub struct StructLayout {
    /// `struct <c_name>` in the headers.
    pub c_name: &'static str,
    pub size: usize,
    /// (field name as in C, offset, size).
    pub fields: &'static [(&'static str, usize, usize)],
}

/// Reads a little-endian u32 at `off` (0 if out of range).
#[inline]
pub fn read_u32(buf: &[u8], off: usize) -> u32 {
    u32::read_le(buf.get(off..).unwrap_or(&[]))
}

/// Reads a little-endian u64 at `off` (0 if out of range).
#[inline]
pub fn read_u64(buf: &[u8], off: usize) -> u64 {
    u64::read_le(buf.get(off..).unwrap_or(&[]))
}

/// Declares an ABI struct: fields with explicit offsets, `SIZE`, `LAYOUT`, `decode`,
/// `encode`, `to_bytes`.
#[macro_export]
macro_rules! wire_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident = $c_name:literal, size $size:literal {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $off:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $name {
            /// `sizeof(struct ...)` in the C headers.
            pub const SIZE: usize = $size;
            pub const LAYOUT: $crate::wire::StructLayout = $crate::wire::StructLayout {
                c_name: $c_name,
                size: $size,
                fields: &[ $( (stringify!($field), $off, <$ty as $crate::wire::Wire>::WIRE_SIZE), )* ],
            };

            /// Decodes from the first `SIZE` bytes of `buf` (extra bytes are ignored: later
            /// minor versions may append fields).
            pub fn decode(buf: &[u8]) -> Result<Self, $crate::wire::WireError> {
                if buf.len() < $size {
                    return Err($crate::wire::WireError { what: $c_name, needed: $size, have: buf.len() });
                }
                Ok(<Self as $crate::wire::Wire>::read_le(buf))
            }

            /// Encodes into the first `SIZE` bytes of `buf`.
            pub fn encode(&self, buf: &mut [u8]) -> Result<(), $crate::wire::WireError> {
                if buf.len() < $size {
                    return Err($crate::wire::WireError { what: $c_name, needed: $size, have: buf.len() });
                }
                <Self as $crate::wire::Wire>::write_le(self, buf);
                Ok(())
            }

            pub fn to_bytes(&self) -> [u8; $size] {
                let mut out = [0u8; $size];
                <Self as $crate::wire::Wire>::write_le(self, &mut out);
                out
            }
        }

        impl Default for $name {
            fn default() -> Self {
                <Self as $crate::wire::Wire>::read_le(&[0u8; $size])
            }
        }

        impl $crate::wire::Wire for $name {
            const WIRE_SIZE: usize = $size;
            #[inline]
            fn read_le(buf: &[u8]) -> Self {
                Self {
                    $( $field: <$ty as $crate::wire::Wire>::read_le(buf.get($off..).unwrap_or(&[])), )*
                }
            }
            #[inline]
            fn write_le(&self, buf: &mut [u8]) {
                $( if let Some(dst) = buf.get_mut($off..) {
                    <$ty as $crate::wire::Wire>::write_le(&self.$field, dst);
                } )*
            }
        }
    };
}

/// Declares `#define`-style constants together with their C names; also builds
/// `$table`, the list the C cross-check compares.
#[macro_export]
macro_rules! c_consts {
    (
        $table:ident;
        $( $(#[$meta:meta])* pub const $name:ident : $ty:ty = $value:expr => $c_name:literal; )*
    ) => {
        $( $(#[$meta])* pub const $name: $ty = $value; )*
        /// (C name, value) of every constant above.
        pub const $table: &[(&str, u64)] = &[ $( ($c_name, $name as u64), )* ];
    };
}

/// Declares a C enum as a Rust enum with `from_u32` and its C names.
#[macro_export]
macro_rules! c_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident = $c_name:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $c_variant:literal $value:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(u32)]
        pub enum $name {
            $( $(#[$vmeta])* $variant = $value, )*
        }

        impl $name {
            pub const C_NAME: &'static str = $c_name;
            /// (C name, value) of every variant.
            pub const C_VALUES: &'static [(&'static str, u64)] = &[ $( ($c_variant, $value), )* ];

            pub fn from_u32(value: u32) -> Option<Self> {
                match value {
                    $( $value => Some(Self::$variant), )*
                    _ => None,
                }
            }
        }
    };
}
