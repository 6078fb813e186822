//! How the device reaches guest RAM. The machine implements [`GuestMemory`] over its RAM
//! (MMIO holes are not RAM: DMA to them fails); tests use [`VecMemory`].

use thiserror::Error;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("guest memory access of {len} bytes at {gpa:#x} is outside guest RAM")]
pub struct GuestMemoryError {
    pub gpa: u64,
    pub len: u64,
}

/// DMA access to guest physical memory. Implementations must reject (not panic on) any
/// range that is not entirely RAM, including ranges whose end overflows.
pub trait GuestMemory {
    fn read(&self, gpa: u64, buf: &mut [u8]) -> Result<(), GuestMemoryError>;
    fn write(&mut self, gpa: u64, data: &[u8]) -> Result<(), GuestMemoryError>;
    /// Whether `[gpa, gpa + len)` is entirely guest RAM.
    fn contains(&self, gpa: u64, len: u64) -> bool;
}

/// Guest RAM as one vector starting at GPA 0.
#[derive(Clone, Debug, Default)]
pub struct VecMemory {
    pub bytes: Vec<u8>,
}

impl VecMemory {
    pub fn new(size: usize) -> Self {
        Self {
            bytes: vec![0; size],
        }
    }

    fn range(&self, gpa: u64, len: usize) -> Option<core::ops::Range<usize>> {
        let start = usize::try_from(gpa).ok()?;
        let end = start.checked_add(len)?;
        (end <= self.bytes.len()).then_some(start..end)
    }
}

impl GuestMemory for VecMemory {
    fn read(&self, gpa: u64, buf: &mut [u8]) -> Result<(), GuestMemoryError> {
        let err = GuestMemoryError {
            gpa,
            len: buf.len() as u64,
        };
        let r = self.range(gpa, buf.len()).ok_or(err)?;
        buf.copy_from_slice(self.bytes.get(r).ok_or(err)?);
        Ok(())
    }

    fn write(&mut self, gpa: u64, data: &[u8]) -> Result<(), GuestMemoryError> {
        let err = GuestMemoryError {
            gpa,
            len: data.len() as u64,
        };
        let r = self.range(gpa, data.len()).ok_or(err)?;
        self.bytes.get_mut(r).ok_or(err)?.copy_from_slice(data);
        Ok(())
    }

    fn contains(&self, gpa: u64, len: u64) -> bool {
        usize::try_from(len)
            .ok()
            .and_then(|len| self.range(gpa, len))
            .is_some()
    }
}

/// The device's GART (`AEROGPU_FEATURE_GART`): `entries` 64-bit entries at `table_gpa`,
/// entry i mapping aperture page i (device address `APERTURE_BASE + i * 4096`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gart {
    pub table_gpa: u64,
    pub entries: u32,
}

const PAGE: u64 = 4096;

impl Gart {
    /// The guest-RAM address of the device address `at` and how many bytes from there on
    /// (at most `left`) are contiguous: identity below the aperture, through the table in
    /// it (to the end of the page).
    fn piece(
        &self,
        ram: &dyn GuestMemory,
        at: u64,
        left: u64,
    ) -> Result<(u64, u64), GuestMemoryError> {
        let err = GuestMemoryError { gpa: at, len: left };
        if at < aero_protocol::pci::APERTURE_BASE {
            return match at.checked_add(left) {
                Some(end) if end <= aero_protocol::pci::APERTURE_BASE => Ok((at, left)),
                _ => Err(err),
            };
        }
        let page = (at - aero_protocol::pci::APERTURE_BASE) / PAGE;
        if page >= u64::from(self.entries.min(aero_protocol::pci::GART_MAX_ENTRIES)) {
            return Err(err);
        }
        let mut entry = [0u8; 8];
        ram.read(self.table_gpa.wrapping_add(page * 8), &mut entry)?;
        let entry = u64::from_le_bytes(entry);
        if entry & aero_protocol::pci::GART_ENTRY_VALID == 0 {
            return Err(err);
        }
        let in_page = at % PAGE;
        Ok(((entry & !(PAGE - 1)) + in_page, (PAGE - in_page).min(left)))
    }

    /// Calls `f(ram_gpa, offset, len)` for each guest-RAM piece of the device range
    /// `[addr, addr + len)`, in order.
    fn for_each_piece(
        &self,
        ram: &dyn GuestMemory,
        addr: u64,
        len: u64,
        mut f: impl FnMut(u64, usize, usize) -> Result<(), GuestMemoryError>,
    ) -> Result<(), GuestMemoryError> {
        if len == 0 {
            // An empty range still has to name guest RAM (what `ram` says of it).
            let (ram_gpa, _) = self.piece(ram, addr, 0)?;
            return f(ram_gpa, 0, 0);
        }
        let mut done = 0u64;
        while done < len {
            let at = addr
                .checked_add(done)
                .ok_or(GuestMemoryError { gpa: addr, len })?;
            let (ram_gpa, n) = self.piece(ram, at, len - done)?;
            let (off, n) = (usize::try_from(done), usize::try_from(n));
            let (Ok(off), Ok(n)) = (off, n) else {
                return Err(GuestMemoryError { gpa: addr, len });
            };
            f(ram_gpa, off, n)?;
            done += n as u64;
        }
        Ok(())
    }

    /// Reads device addresses `[gpa, gpa + buf.len())` from `ram`.
    fn read(
        &self,
        ram: &dyn GuestMemory,
        gpa: u64,
        buf: &mut [u8],
    ) -> Result<(), GuestMemoryError> {
        let len = buf.len() as u64;
        self.for_each_piece(ram, gpa, len, |at, off, n| {
            ram.read(at, &mut buf[off..off + n])
        })
    }

    /// Whether every byte of the device range is mapped guest RAM.
    fn contains(&self, ram: &dyn GuestMemory, gpa: u64, len: u64) -> bool {
        self.for_each_piece(ram, gpa, len, |at, _, n| {
            if ram.contains(at, n as u64) {
                Ok(())
            } else {
                Err(GuestMemoryError {
                    gpa: at,
                    len: n as u64,
                })
            }
        })
        .is_ok()
    }
}

/// Guest memory as the device addresses it: guest-physical below the aperture, through the
/// GART above. Every DMA the device does for the guest goes through this.
pub struct DeviceMemory<'a> {
    pub ram: &'a mut dyn GuestMemory,
    pub gart: Gart,
}

impl GuestMemory for DeviceMemory<'_> {
    fn read(&self, gpa: u64, buf: &mut [u8]) -> Result<(), GuestMemoryError> {
        self.gart.read(&*self.ram, gpa, buf)
    }

    fn write(&mut self, gpa: u64, data: &[u8]) -> Result<(), GuestMemoryError> {
        // Check the whole range first (reads only), then write: a failing range writes
        // nothing.
        let ram: &dyn GuestMemory = &*self.ram;
        if !self.gart.contains(ram, gpa, data.len() as u64) {
            return Err(GuestMemoryError {
                gpa,
                len: data.len() as u64,
            });
        }
        let mut done = 0u64;
        while done < data.len() as u64 {
            let (at, n) = self
                .gart
                .piece(&*self.ram, gpa + done, data.len() as u64 - done)?;
            self.ram
                .write(at, &data[done as usize..(done + n) as usize])?;
            done += n;
        }
        Ok(())
    }

    fn contains(&self, gpa: u64, len: u64) -> bool {
        self.gart.contains(&*self.ram, gpa, len)
    }
}

/// [`DeviceMemory`] for reading only (scanout).
pub struct DeviceMemoryRef<'a> {
    pub ram: &'a dyn GuestMemory,
    pub gart: Gart,
}

impl GuestMemory for DeviceMemoryRef<'_> {
    fn read(&self, gpa: u64, buf: &mut [u8]) -> Result<(), GuestMemoryError> {
        self.gart.read(self.ram, gpa, buf)
    }

    fn write(&mut self, gpa: u64, data: &[u8]) -> Result<(), GuestMemoryError> {
        Err(GuestMemoryError {
            gpa,
            len: data.len() as u64,
        })
    }

    fn contains(&self, gpa: u64, len: u64) -> bool {
        self.gart.contains(self.ram, gpa, len)
    }
}
