//! Resource descriptors for `_CRS`/`_PRS` buffers (ACPI 6.x §6.4): the small IO, IRQ and
//! DMA items and the large Memory32Fixed, Word/DWord/QWord address-space and Extended
//! Interrupt items, closed by an End Tag.

use super::{Aml, AmlError, buffer};

/// Interrupt trigger mode of an IRQ or Interrupt descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    Edge,
    Level,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Polarity {
    ActiveHigh,
    ActiveLow,
}

/// Cacheability of a memory address-space descriptor (`_MEM`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryCaching {
    NonCacheable = 0,
    Cacheable = 1,
    WriteCombining = 2,
    Prefetchable = 3,
}

/// Which ranges an I/O address-space descriptor covers (`_RNG`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoRangeKind {
    NonIsaOnly = 1,
    IsaOnly = 2,
    EntireRange = 3,
}

/// The resource type of an address-space descriptor and its type-specific flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressKind {
    Memory {
        caching: MemoryCaching,
        writable: bool,
    },
    Io(IoRangeKind),
    BusNumber,
}

/// A Word/DWord/QWord address-space descriptor's contents. All of Aero's ranges are
/// fixed, positively decoded windows; `producer` is true for a bridge's windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressRange {
    pub kind: AddressKind,
    pub producer: bool,
    pub granularity: u64,
    pub min: u64,
    pub max: u64,
    pub translation: u64,
    pub length: u64,
}

impl AddressRange {
    /// A fixed window `[min, max]` with no translation.
    pub fn window(kind: AddressKind, producer: bool, min: u64, max: u64) -> AddressRange {
        AddressRange {
            kind,
            producer,
            granularity: 0,
            min,
            max,
            translation: 0,
            length: max.wrapping_sub(min).wrapping_add(1),
        }
    }
}

/// One resource descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resource {
    /// `IO(Decode16, min, max, align, len)`.
    Io {
        min: u16,
        max: u16,
        align: u8,
        len: u8,
    },
    /// `IRQNoFlags() { irqs }` (edge, active high, exclusive) when `flags` is None,
    /// otherwise `IRQ(trigger, polarity, shared) { irqs }`.
    Irq {
        irqs: Vec<u8>,
        flags: Option<(Trigger, Polarity, bool)>,
    },
    /// `DMA(Compatibility, NotBusMaster, Transfer8) { channels }`.
    Dma {
        channels: Vec<u8>,
    },
    /// `Memory32Fixed(ReadWrite|ReadOnly, base, len)`.
    Memory32Fixed {
        writable: bool,
        base: u32,
        len: u32,
    },
    WordAddress(AddressRange),
    DWordAddress(AddressRange),
    QWordAddress(AddressRange),
    /// `Interrupt(consumer, trigger, polarity, shared) { gsis }`.
    Interrupt {
        consumer: bool,
        trigger: Trigger,
        polarity: Polarity,
        shared: bool,
        irqs: Vec<u32>,
    },
}

const SMALL_IRQ: u8 = 0x04;
const SMALL_DMA: u8 = 0x05;
const SMALL_IO: u8 = 0x08;
const SMALL_END: u8 = 0x0F;
const LARGE_MEMORY32_FIXED: u8 = 0x86;
const LARGE_DWORD_ADDRESS: u8 = 0x87;
const LARGE_WORD_ADDRESS: u8 = 0x88;
const LARGE_EXTENDED_IRQ: u8 = 0x89;
const LARGE_QWORD_ADDRESS: u8 = 0x8A;

fn small(out: &mut Vec<u8>, item: u8, body: &[u8]) {
    // Small items carry their length (≤ 7) in the low three tag bits.
    out.push((item << 3) | body.len() as u8);
    out.extend_from_slice(body);
}

fn large(out: &mut Vec<u8>, tag: u8, body: &[u8]) -> Result<(), AmlError> {
    let len = u16::try_from(body.len()).map_err(|_| AmlError::InvalidResource("too long"))?;
    out.push(tag);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(body);
    Ok(())
}

fn bit_mask<T: Copy + Into<u32>>(
    items: &[T],
    limit: u32,
    what: &'static str,
) -> Result<u16, AmlError> {
    items.iter().try_fold(0u16, |mask, &n| {
        let n: u32 = n.into();
        if n >= limit {
            return Err(AmlError::InvalidResource(what));
        }
        Ok(mask | (1 << n))
    })
}

fn fits(field: &'static str, value: u64, width: u32) -> Result<u64, AmlError> {
    if width < 64 && value >> width != 0 {
        return Err(AmlError::ResourceValueTooWide {
            field,
            value,
            width,
        });
    }
    Ok(value)
}

impl AddressRange {
    fn encode(&self, out: &mut Vec<u8>, tag: u8, width: u32) -> Result<(), AmlError> {
        let (resource_type, type_flags) = match self.kind {
            AddressKind::Memory { caching, writable } => {
                (0u8, (caching as u8) << 1 | u8::from(writable))
            }
            AddressKind::Io(range) => (1, range as u8),
            AddressKind::BusNumber => (2, 0),
        };
        // General flags: bit 3 _MAF, bit 2 _MIF (both fixed), bit 1 _DEC = 0 (positive
        // decode), bit 0 = 1 for a consumer, 0 for a producer.
        let general_flags = 0b1100 | u8::from(!self.producer);
        let mut body = vec![resource_type, general_flags, type_flags];
        for (field, value) in [
            ("granularity", self.granularity),
            ("minimum", self.min),
            ("maximum", self.max),
            ("translation", self.translation),
            ("length", self.length),
        ] {
            let value = fits(field, value, width)?;
            body.extend_from_slice(&value.to_le_bytes()[..(width / 8) as usize]);
        }
        if self.max < self.min || self.length != self.max - self.min + 1 {
            return Err(AmlError::InvalidResource(
                "fixed window length must equal max - min + 1",
            ));
        }
        large(out, tag, &body)
    }
}

impl Resource {
    pub fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), AmlError> {
        match self {
            Resource::Io {
                min,
                max,
                align,
                len,
            } => {
                let mut body = vec![0x01]; // decodes all 16 address bits
                body.extend_from_slice(&min.to_le_bytes());
                body.extend_from_slice(&max.to_le_bytes());
                body.extend_from_slice(&[*align, *len]);
                small(out, SMALL_IO, &body);
            }
            Resource::Irq { irqs, flags } => {
                let mask = bit_mask(irqs, 16, "IRQ number above 15")?;
                let mut body = mask.to_le_bytes().to_vec();
                if let Some((trigger, polarity, shared)) = flags {
                    body.push(
                        u8::from(*trigger == Trigger::Edge)
                            | u8::from(*polarity == Polarity::ActiveLow) << 3
                            | u8::from(*shared) << 4,
                    );
                }
                small(out, SMALL_IRQ, &body);
            }
            Resource::Dma { channels } => {
                let mask = bit_mask(channels, 8, "DMA channel above 7")?;
                // Compatibility timing, not a bus master, 8-bit transfers.
                small(out, SMALL_DMA, &[mask as u8, 0x00]);
            }
            Resource::Memory32Fixed {
                writable,
                base,
                len,
            } => {
                let mut body = vec![u8::from(*writable)];
                body.extend_from_slice(&base.to_le_bytes());
                body.extend_from_slice(&len.to_le_bytes());
                large(out, LARGE_MEMORY32_FIXED, &body)?;
            }
            Resource::WordAddress(range) => range.encode(out, LARGE_WORD_ADDRESS, 16)?,
            Resource::DWordAddress(range) => range.encode(out, LARGE_DWORD_ADDRESS, 32)?,
            Resource::QWordAddress(range) => range.encode(out, LARGE_QWORD_ADDRESS, 64)?,
            Resource::Interrupt {
                consumer,
                trigger,
                polarity,
                shared,
                irqs,
            } => {
                let count = u8::try_from(irqs.len())
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or(AmlError::InvalidResource("Interrupt needs 1..=255 entries"))?;
                let flags = u8::from(*consumer)
                    | u8::from(*trigger == Trigger::Edge) << 1
                    | u8::from(*polarity == Polarity::ActiveLow) << 2
                    | u8::from(*shared) << 3;
                let mut body = vec![flags, count];
                for irq in irqs {
                    body.extend_from_slice(&irq.to_le_bytes());
                }
                large(out, LARGE_EXTENDED_IRQ, &body)?;
            }
        }
        Ok(())
    }
}

/// The raw descriptor bytes of `resources` followed by an End Tag with checksum 0
/// ("treat as correct"), as ASL's `ResourceTemplate()` emits.
pub fn resource_bytes(resources: &[Resource]) -> Result<Vec<u8>, AmlError> {
    let mut out = Vec::new();
    for resource in resources {
        resource.encode_into(&mut out)?;
    }
    small(&mut out, SMALL_END, &[0x00]);
    Ok(out)
}

/// `ResourceTemplate() { resources }`: a Buffer holding the descriptors.
pub fn resource_template(resources: &[Resource]) -> Result<Aml, AmlError> {
    buffer(&resource_bytes(resources)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(r: Resource) -> Vec<u8> {
        let mut out = Vec::new();
        r.encode_into(&mut out).unwrap();
        out
    }

    #[test]
    fn io_descriptor() {
        let bytes = one(Resource::Io {
            min: 0x3F8,
            max: 0x3F8,
            align: 1,
            len: 8,
        });
        assert_eq!(bytes, [0x47, 0x01, 0xF8, 0x03, 0xF8, 0x03, 0x01, 0x08]);
    }

    #[test]
    fn irq_descriptor_forms() {
        assert_eq!(
            one(Resource::Irq {
                irqs: vec![8],
                flags: None
            }),
            [0x22, 0x00, 0x01]
        );
        let level = Resource::Irq {
            irqs: vec![5, 10, 11],
            flags: Some((Trigger::Level, Polarity::ActiveLow, true)),
        };
        assert_eq!(one(level), [0x23, 0x20, 0x0C, 0x18]);
        let mut out = Vec::new();
        assert!(
            Resource::Irq {
                irqs: vec![16],
                flags: None
            }
            .encode_into(&mut out)
            .is_err()
        );
    }

    #[test]
    fn dma_descriptor() {
        assert_eq!(one(Resource::Dma { channels: vec![2] }), [0x2A, 0x04, 0x00]);
    }

    #[test]
    fn memory32_fixed_descriptor() {
        let bytes = one(Resource::Memory32Fixed {
            writable: false,
            base: 0xFED0_0000,
            len: 0x400,
        });
        assert_eq!(
            bytes,
            [
                0x86, 0x09, 0x00, 0x00, 0x00, 0x00, 0xD0, 0xFE, 0x00, 0x04, 0x00, 0x00
            ]
        );
    }

    #[test]
    fn word_bus_number_descriptor() {
        let bytes = one(Resource::WordAddress(AddressRange::window(
            AddressKind::BusNumber,
            true,
            0,
            0xFF,
        )));
        assert_eq!(
            bytes,
            [
                0x88, 0x0D, 0x00, 0x02, 0x0C, 0x00, 0, 0, 0, 0, 0xFF, 0, 0, 0, 0x00, 0x01
            ]
        );
    }

    #[test]
    fn dword_io_and_memory_descriptors() {
        let io = one(Resource::DWordAddress(AddressRange::window(
            AddressKind::Io(IoRangeKind::EntireRange),
            true,
            0xD00,
            0xFFFF,
        )));
        assert_eq!(&io[..6], [0x87, 0x17, 0x00, 0x01, 0x0C, 0x03]);
        assert_eq!(io.len(), 3 + 23);
        assert_eq!(&io[10..14], 0xD00u32.to_le_bytes());
        assert_eq!(&io[22..26], 0xF300u32.to_le_bytes());
        let mem = one(Resource::DWordAddress(AddressRange::window(
            AddressKind::Memory {
                caching: MemoryCaching::Cacheable,
                writable: true,
            },
            true,
            0xA_0000,
            0xB_FFFF,
        )));
        assert_eq!(&mem[3..6], [0x00, 0x0C, 0x03]);
        assert_eq!(&mem[22..26], 0x2_0000u32.to_le_bytes());
    }

    #[test]
    fn qword_memory_descriptor_and_width_checks() {
        let range = AddressRange::window(
            AddressKind::Memory {
                caching: MemoryCaching::NonCacheable,
                writable: true,
            },
            true,
            0x2_0000_0000,
            0x2_FFFF_FFFF,
        );
        let q = one(Resource::QWordAddress(range));
        assert_eq!(&q[..6], [0x8A, 0x2B, 0x00, 0x00, 0x0C, 0x01]);
        assert_eq!(q.len(), 3 + 43);
        assert_eq!(&q[38..46], 0x1_0000_0000u64.to_le_bytes());
        let mut out = Vec::new();
        assert!(matches!(
            Resource::DWordAddress(range).encode_into(&mut out),
            Err(AmlError::ResourceValueTooWide { .. })
        ));
        let bad = AddressRange { length: 5, ..range };
        assert!(Resource::QWordAddress(bad).encode_into(&mut out).is_err());
    }

    #[test]
    fn extended_interrupt_descriptor() {
        let bytes = one(Resource::Interrupt {
            consumer: true,
            trigger: Trigger::Level,
            polarity: Polarity::ActiveHigh,
            shared: true,
            irqs: vec![5, 10, 11],
        });
        assert_eq!(
            bytes,
            [
                0x89, 0x0E, 0x00, 0x09, 0x03, 5, 0, 0, 0, 10, 0, 0, 0, 11, 0, 0, 0
            ]
        );
    }

    #[test]
    fn template_ends_with_end_tag() {
        let t = resource_template(&[Resource::Irq {
            irqs: vec![1],
            flags: None,
        }])
        .unwrap();
        assert_eq!(
            t.bytes(),
            [0x11, 0x08, 0x0A, 0x05, 0x22, 0x02, 0x00, 0x79, 0x00]
        );
    }
}
