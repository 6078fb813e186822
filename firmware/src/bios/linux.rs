//! Direct Linux kernel boot (`--kernel`/`--initrd`/`--append`): reads a bzImage's setup
//! header and decides where its parts go, following the Linux x86 boot protocol
//! (Documentation/arch/x86/boot.rst). INT 19h then writes them and enters the real-mode
//! setup code, so the kernel still finds a running BIOS (E820, video, EDD) as a boot
//! loader would leave it.
//!
//! Layout (as QEMU uses it): the real-mode setup at 0x10000 with its heap up to 0x1FE00
//! and stack at the top of that segment, the command line at 0x20000, the protected-mode
//! kernel at 1 MiB (or at its preferred address when it is relocatable and RAM allows),
//! the initrd page-aligned at the top of usable RAM below `initrd_addr_max`.

use thiserror::Error;

use super::pvh::{self, PvhImage};

/// Where the real-mode setup code (and the boot_params it starts with) is loaded.
pub const SETUP_BASE: u64 = 0x1_0000;
/// Where the command line goes (right after the setup segment).
pub const CMDLINE_ADDR: u64 = 0x2_0000;
/// The classic load address of a bzImage's protected-mode part.
pub const HIGH_LOAD_ADDR: u64 = 0x10_0000;
/// heap_end_ptr: the setup heap ends 0x200 bytes below the segment's end (the stack).
const HEAP_END_PTR: u16 = 0xFE00;
/// SP on entry: the top of the setup segment, above the heap.
pub const SETUP_STACK: u16 = 0xFFF0;
/// The real-mode code may not exceed 32 KiB (boot.rst's memory layout).
const MAX_SETUP_BYTES: usize = 0x8000;
/// Room for the command line below the EBDA; larger cmdline_size values are capped.
const MAX_CMDLINE_BYTES: usize = 0x1_0000;
/// boot_params offsets of the setup header fields we read or write.
const SETUP_SECTS: usize = 0x1F1;
const BOOT_FLAG: usize = 0x1FE;
const HEADER_MAGIC: usize = 0x202;
const VERSION: usize = 0x206;
const TYPE_OF_LOADER: usize = 0x210;
const LOADFLAGS: usize = 0x211;
const CODE32_START: usize = 0x214;
const RAMDISK_IMAGE: usize = 0x218;
const RAMDISK_SIZE: usize = 0x21C;
const HEAP_END: usize = 0x224;
const CMD_LINE_PTR: usize = 0x228;
const INITRD_ADDR_MAX: usize = 0x22C;
const RELOCATABLE: usize = 0x234;
const CMDLINE_SIZE: usize = 0x238;
const PAYLOAD_OFFSET: usize = 0x248;
const PAYLOAD_LENGTH: usize = 0x24C;
const PREF_ADDRESS: usize = 0x258;
const INIT_SIZE: usize = 0x260;
/// loadflags bits.
const LOADED_HIGH: u8 = 0x01;
const CAN_USE_HEAP: u8 = 0x80;
/// type_of_loader: "undefined", what boot.rst asks of loaders without an assigned ID.
const LOADER_UNDEFINED: u8 = 0xFF;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum LinuxBootError {
    #[error("the kernel file is truncated or too short ({0} bytes)")]
    TooShort(usize),
    #[error("not a Linux kernel: no 'HdrS' setup header at offset 0x202")]
    NoHeader,
    #[error(
        "Linux boot protocol {}.{:02} is too old: 2.02 or later is needed",
        .0 >> 8,
        .0 & 0xFF
    )]
    OldProtocol(u16),
    #[error("the kernel is a zImage (loaded low); only bzImage kernels are supported")]
    NotBzImage,
    #[error("the kernel's setup code ({setup} bytes) is larger than 32 KiB or than the file")]
    BadSetupSize { setup: usize },
    #[error("command line of {len} bytes is longer than the kernel's limit of {max}")]
    CmdlineTooLong { len: usize, max: usize },
    #[error("ELF kernel: {0}")]
    BadElf(&'static str),
    #[error(
        "ELF kernel without a PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY): build it with CONFIG_PVH"
    )]
    NoPvhEntry,
    #[error("the command line contains a NUL byte")]
    CmdlineNul,
    #[error(
        "the kernel needs RAM up to {need:#x} (decompressed size included) but RAM ends at {ram_top:#x}"
    )]
    KernelTooBig { need: u64, ram_top: u64 },
    #[error(
        "initrd of {size} bytes does not fit: {room} bytes free between the kernel and the top of usable RAM"
    )]
    InitrdTooBig { size: u64, room: u64 },
}

/// A kernel checked for direct boot, with its initrd and command line.
#[derive(Debug)]
pub struct LinuxBoot {
    kernel: Vec<u8>,
    initrd: Vec<u8>,
    cmdline: Vec<u8>,
    kind: Kind,
}

/// What sort of kernel file it is, with what its headers said.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    BzImage(SetupHeader),
    /// An uncompressed ELF vmlinux booted through its PVH entry.
    Pvh(PvhImage),
}

/// The setup header fields placement depends on, read once by [`LinuxBoot::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SetupHeader {
    version: u16,
    /// Boot sector + real-mode setup code: where the protected-mode kernel starts.
    setup_len: usize,
    /// What the kernel needs from its load address on while it decompresses (0 before 2.10).
    init_size: u64,
    /// The preferred load address of a relocatable kernel (2.10+).
    pref_address: Option<u64>,
    /// The highest address the initrd may occupy.
    initrd_addr_max: u64,
}

/// Where each part goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadPlan<'a> {
    BzImage {
        /// The setup bytes with the loader's header fields filled in, for [`SETUP_BASE`].
        setup: Vec<u8>,
        /// The protected-mode kernel, for `kernel_addr`.
        kernel: &'a [u8],
        kernel_addr: u64,
        /// (address, size); `None` without an initrd.
        initrd: Option<(u64, u64)>,
        /// The boot protocol version (0x020F = 2.15).
        protocol: u16,
    },
    /// A vmlinux: its segments go to their own addresses; only the initrd is placed.
    Pvh {
        image: &'a PvhImage,
        initrd: Option<(u64, u64)>,
    },
}

/// Little-endian readers for kernel headers (bzImage setup header, ELF headers and notes):
/// a read past the end is a [`LinuxBootError::TooShort`], never a panic.
pub(super) fn bytes_at<const N: usize>(b: &[u8], off: usize) -> Result<[u8; N], LinuxBootError> {
    off.checked_add(N)
        .and_then(|end| b.get(off..end))
        .and_then(|s| s.try_into().ok())
        .ok_or(LinuxBootError::TooShort(b.len()))
}
pub(super) fn u16_at(b: &[u8], off: usize) -> Result<u16, LinuxBootError> {
    Ok(u16::from_le_bytes(bytes_at(b, off)?))
}
pub(super) fn u32_at(b: &[u8], off: usize) -> Result<u32, LinuxBootError> {
    Ok(u32::from_le_bytes(bytes_at(b, off)?))
}
pub(super) fn u64_at(b: &[u8], off: usize) -> Result<u64, LinuxBootError> {
    Ok(u64::from_le_bytes(bytes_at(b, off)?))
}

impl LinuxBoot {
    /// Checks the kernel's headers and the command line length against what it takes.
    pub fn new(
        kernel: Vec<u8>,
        initrd: Option<Vec<u8>>,
        cmdline: &str,
    ) -> Result<LinuxBoot, LinuxBootError> {
        let kind = if pvh::is_elf(&kernel) {
            // The x86 kernel's COMMAND_LINE_SIZE.
            check_cmdline(cmdline, 2047)?;
            Kind::Pvh(PvhImage::parse(&kernel)?)
        } else {
            let header = SetupHeader::parse(&kernel)?;
            let max = if header.version >= 0x0206 {
                (u32_at(&kernel, CMDLINE_SIZE)? as usize).min(MAX_CMDLINE_BYTES - 1)
            } else {
                255
            };
            check_cmdline(cmdline, max)?;
            Kind::BzImage(header)
        };
        Ok(LinuxBoot {
            kernel,
            initrd: initrd.unwrap_or_default(),
            cmdline: cmdline.as_bytes().to_vec(),
            kind,
        })
    }

    /// The whole kernel file.
    pub fn kernel_file(&self) -> &[u8] {
        &self.kernel
    }

    /// A bzImage's compressed kernel (`payload_offset`/`payload_length`, protocol 2.08+):
    /// what tools unpack to get the vmlinux. `None` for a vmlinux or an older bzImage.
    pub fn compressed_payload(&self) -> Option<&[u8]> {
        let Kind::BzImage(h) = &self.kind else {
            return None;
        };
        if h.version < 0x0208 {
            return None;
        }
        let offset = u32_at(&self.kernel, PAYLOAD_OFFSET).ok()? as usize;
        let len = u32_at(&self.kernel, PAYLOAD_LENGTH).ok()? as usize;
        let start = h.setup_len.checked_add(offset)?;
        self.kernel.get(start..start.checked_add(len)?)
    }

    pub fn initrd(&self) -> &[u8] {
        &self.initrd
    }

    /// The command line with its terminating NUL, for [`CMDLINE_ADDR`].
    pub fn cmdline_bytes(&self) -> Vec<u8> {
        let mut c = self.cmdline.clone();
        c.push(0);
        c
    }

    /// Places the parts in RAM that is usable from 1 MiB up to `ram_top` (the end of the
    /// E820 RAM the kernel will see below 4 GiB).
    pub fn plan(&self, ram_top: u64) -> Result<LoadPlan<'_>, LinuxBootError> {
        let h = match &self.kind {
            Kind::Pvh(image) => {
                // The segments at their own addresses, the initrd above them.
                let end = image.check(ram_top)?;
                return Ok(LoadPlan::Pvh {
                    image,
                    initrd: self.place_initrd(end, ram_top, 0xFFFF_FFFF)?,
                });
            }
            Kind::BzImage(h) => h,
        };
        let kernel = &self.kernel[h.setup_len..];
        let pm_len = kernel.len() as u64;
        let need = pm_len.max(h.init_size);
        // A relocatable kernel decompresses to its preferred address whatever the load
        // address; loading it there (as GRUB does) saves it a move when RAM allows.
        let kernel_addr = match h.pref_address {
            Some(p) if p >= HIGH_LOAD_ADDR && p.saturating_add(need) <= ram_top.min(1 << 32) => p,
            _ => HIGH_LOAD_ADDR,
        };
        let kernel_end = kernel_addr
            .max(h.pref_address.unwrap_or(0))
            .saturating_add(need);
        if kernel_end > ram_top || HIGH_LOAD_ADDR.saturating_add(pm_len) > ram_top {
            return Err(LinuxBootError::KernelTooBig {
                need: kernel_end,
                ram_top,
            });
        }
        let initrd = self.place_initrd(kernel_end, ram_top, h.initrd_addr_max)?;
        // setup_len >= 1024 covers every field written here (all below 0x240).
        let mut setup = self.kernel[..h.setup_len].to_vec();
        setup[TYPE_OF_LOADER] = LOADER_UNDEFINED;
        setup[LOADFLAGS] |= CAN_USE_HEAP;
        setup[HEAP_END..HEAP_END + 2].copy_from_slice(&HEAP_END_PTR.to_le_bytes());
        setup[CMD_LINE_PTR..CMD_LINE_PTR + 4].copy_from_slice(&(CMDLINE_ADDR as u32).to_le_bytes());
        setup[CODE32_START..CODE32_START + 4].copy_from_slice(&(kernel_addr as u32).to_le_bytes());
        let (image, size) = initrd.unwrap_or((0, 0));
        setup[RAMDISK_IMAGE..RAMDISK_IMAGE + 4].copy_from_slice(&(image as u32).to_le_bytes());
        setup[RAMDISK_SIZE..RAMDISK_SIZE + 4].copy_from_slice(&(size as u32).to_le_bytes());
        Ok(LoadPlan::BzImage {
            setup,
            kernel,
            kernel_addr,
            initrd,
            protocol: h.version,
        })
    }

    /// The initrd page-aligned at the top of RAM below `addr_max` (the highest address it
    /// may occupy) and above `kernel_end`.
    fn place_initrd(
        &self,
        kernel_end: u64,
        ram_top: u64,
        addr_max: u64,
    ) -> Result<Option<(u64, u64)>, LinuxBootError> {
        if self.initrd.is_empty() {
            return Ok(None);
        }
        let limit = ram_top.min(addr_max.saturating_add(1)).min(1 << 32);
        let size = self.initrd.len() as u64;
        let room = limit.saturating_sub(kernel_end);
        match limit.checked_sub(size).map(|a| a & !0xFFF) {
            Some(addr) if addr >= kernel_end => Ok(Some((addr, size))),
            _ => Err(LinuxBootError::InitrdTooBig { size, room }),
        }
    }
}

impl SetupHeader {
    fn parse(kernel: &[u8]) -> Result<SetupHeader, LinuxBootError> {
        // Everything up to the end of the fields we use (init_size, protocol 2.10).
        if kernel.len() < INIT_SIZE + 4 {
            return Err(LinuxBootError::TooShort(kernel.len()));
        }
        if &bytes_at::<4>(kernel, HEADER_MAGIC)? != b"HdrS" || u16_at(kernel, BOOT_FLAG)? != 0xAA55
        {
            return Err(LinuxBootError::NoHeader);
        }
        let version = u16_at(kernel, VERSION)?;
        if version < 0x0202 {
            return Err(LinuxBootError::OldProtocol(version));
        }
        if kernel[LOADFLAGS] & LOADED_HIGH == 0 {
            return Err(LinuxBootError::NotBzImage);
        }
        // setup_sects 0 means 4 (very old kernels).
        let sects = match kernel[SETUP_SECTS] {
            0 => 4,
            n => usize::from(n),
        };
        let setup_len = (sects + 1) * 512;
        if setup_len > MAX_SETUP_BYTES || setup_len >= kernel.len() {
            return Err(LinuxBootError::BadSetupSize { setup: setup_len });
        }
        let relocatable = version >= 0x0205 && kernel[RELOCATABLE] != 0;
        Ok(SetupHeader {
            version,
            setup_len,
            init_size: if version >= 0x020A {
                u64::from(u32_at(kernel, INIT_SIZE)?)
            } else {
                0
            },
            pref_address: if version >= 0x020A && relocatable {
                Some(u64_at(kernel, PREF_ADDRESS)?)
            } else {
                None
            },
            initrd_addr_max: if version >= 0x0203 {
                u64::from(u32_at(kernel, INITRD_ADDR_MAX)?)
            } else {
                0x37FF_FFFF
            },
        })
    }
}

fn check_cmdline(cmdline: &str, max: usize) -> Result<(), LinuxBootError> {
    if cmdline.len() > max {
        return Err(LinuxBootError::CmdlineTooLong {
            len: cmdline.len(),
            max,
        });
    }
    if cmdline.contains('\0') {
        return Err(LinuxBootError::CmdlineNul);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    /// A minimal bzImage: `setup_sects` sectors of setup after the boot sector, then
    /// `pm_len` bytes of protected-mode kernel.
    fn bzimage(version: u16, setup_sects: u8, pm_len: usize) -> Vec<u8> {
        let setup_len = (usize::from(setup_sects.max(1)) + 1) * 512;
        let mut k = vec![0u8; setup_len + pm_len];
        k[SETUP_SECTS] = setup_sects;
        k[BOOT_FLAG..BOOT_FLAG + 2].copy_from_slice(&0xAA55u16.to_le_bytes());
        k[HEADER_MAGIC..HEADER_MAGIC + 4].copy_from_slice(b"HdrS");
        k[VERSION..VERSION + 2].copy_from_slice(&version.to_le_bytes());
        k[LOADFLAGS] = LOADED_HIGH;
        k[CODE32_START..CODE32_START + 4].copy_from_slice(&0x10_0000u32.to_le_bytes());
        k[INITRD_ADDR_MAX..INITRD_ADDR_MAX + 4].copy_from_slice(&0x7FFF_FFFFu32.to_le_bytes());
        k[CMDLINE_SIZE..CMDLINE_SIZE + 4].copy_from_slice(&2047u32.to_le_bytes());
        k
    }

    fn set_u32(k: &mut [u8], off: usize, v: u32) {
        k[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }

    #[test]
    fn bad_magic_short_files_and_old_protocols_are_refused() {
        assert_eq!(
            LinuxBoot::new(vec![0; 100], None, "").unwrap_err(),
            LinuxBootError::TooShort(100)
        );
        let mut k = bzimage(0x020F, 30, 4096);
        k[HEADER_MAGIC] = b'X';
        assert_eq!(
            LinuxBoot::new(k, None, "").unwrap_err(),
            LinuxBootError::NoHeader
        );
        let e = LinuxBoot::new(bzimage(0x0201, 30, 4096), None, "").unwrap_err();
        assert_eq!(e, LinuxBootError::OldProtocol(0x0201));
        assert!(e.to_string().contains("2.01 is too old"), "{e}");
        let mut k = bzimage(0x020F, 30, 4096);
        k[LOADFLAGS] = 0;
        assert_eq!(
            LinuxBoot::new(k, None, "").unwrap_err(),
            LinuxBootError::NotBzImage
        );
        // A header claiming more setup than the file holds (a truncated download).
        let mut k = bzimage(0x020F, 30, 0);
        k.truncate(20 * 512);
        assert!(matches!(
            LinuxBoot::new(k, None, "").unwrap_err(),
            LinuxBootError::BadSetupSize { .. }
        ));
        let k = bzimage(0x020F, 200, 4096);
        assert!(matches!(
            LinuxBoot::new(k, None, "").unwrap_err(),
            LinuxBootError::BadSetupSize { .. }
        ));
    }

    #[test]
    fn cmdline_length_follows_the_protocol() {
        let long = "x".repeat(2048);
        assert_eq!(
            LinuxBoot::new(bzimage(0x020F, 30, 4096), None, &long).unwrap_err(),
            LinuxBootError::CmdlineTooLong {
                len: 2048,
                max: 2047
            }
        );
        assert!(LinuxBoot::new(bzimage(0x020F, 30, 4096), None, &long[..2047]).is_ok());
        // Before 2.06 the limit is 255 whatever cmdline_size holds.
        assert_eq!(
            LinuxBoot::new(bzimage(0x0205, 30, 4096), None, &long[..256]).unwrap_err(),
            LinuxBootError::CmdlineTooLong { len: 256, max: 255 }
        );
        assert_eq!(
            LinuxBoot::new(bzimage(0x020F, 30, 4096), None, "a\0b").unwrap_err(),
            LinuxBootError::CmdlineNul
        );
        let boot = LinuxBoot::new(bzimage(0x020F, 30, 4096), None, "quiet").unwrap();
        assert_eq!(boot.cmdline_bytes(), b"quiet\0");
    }

    /// The bzImage parts of a plan: (setup, protected-mode kernel, address, initrd).
    type BzParts<'a> = (Vec<u8>, &'a [u8], u64, Option<(u64, u64)>);
    fn bz(plan: LoadPlan<'_>) -> BzParts<'_> {
        match plan {
            LoadPlan::BzImage {
                setup,
                kernel,
                kernel_addr,
                initrd,
                ..
            } => (setup, kernel, kernel_addr, initrd),
            LoadPlan::Pvh { .. } => panic!("a bzImage planned as PVH"),
        }
    }

    fn field32(s: &[u8], off: usize) -> u32 {
        u32_at(s, off).unwrap()
    }

    #[test]
    fn header_fields_and_placement() {
        let mut k = bzimage(0x020F, 30, 3 * 4096);
        k[31 * 512] = 0xE8; // first byte of the protected-mode part
        let boot = LinuxBoot::new(k, Some(vec![7; 5000]), "console=ttyS0").unwrap();
        let (s, kernel, kernel_addr, initrd) = bz(boot.plan(64 * MIB).unwrap());
        assert_eq!(kernel.len(), 3 * 4096);
        assert_eq!(kernel[0], 0xE8);
        // Not relocatable: 1 MiB.
        assert_eq!(kernel_addr, HIGH_LOAD_ADDR);
        // The initrd page-aligned at the top of RAM.
        assert_eq!(initrd, Some(((64 * MIB - 5000) & !0xFFF, 5000)));
        assert_eq!(s.len(), 31 * 512);
        assert_eq!(s[TYPE_OF_LOADER], 0xFF);
        assert_eq!(s[LOADFLAGS], LOADED_HIGH | CAN_USE_HEAP);
        assert_eq!(u16_at(&s, HEAP_END).unwrap(), 0xFE00);
        assert_eq!(field32(&s, CMD_LINE_PTR), 0x20000);
        assert_eq!(field32(&s, CODE32_START), 0x10_0000);
        assert_eq!(field32(&s, RAMDISK_IMAGE) as u64, initrd.unwrap().0);
        assert_eq!(field32(&s, RAMDISK_SIZE), 5000);
        // Without an initrd both ramdisk fields are zero.
        let boot = LinuxBoot::new(bzimage(0x020F, 30, 4096), None, "").unwrap();
        let (s, _, _, initrd) = bz(boot.plan(64 * MIB).unwrap());
        assert_eq!(initrd, None);
        assert_eq!(field32(&s, RAMDISK_IMAGE), 0);
    }

    #[test]
    fn compressed_payload_follows_payload_offset_and_length() {
        let mut k = bzimage(0x020F, 30, 4096);
        set_u32(&mut k, PAYLOAD_OFFSET, 0x100);
        set_u32(&mut k, PAYLOAD_LENGTH, 6);
        k[31 * 512 + 0x100..][..6].copy_from_slice(b"\xfd7zXZ\0");
        let boot = LinuxBoot::new(k.clone(), None, "").unwrap();
        assert_eq!(boot.compressed_payload(), Some(&b"\xfd7zXZ\0"[..]));
        // A length past the end of the file, or a protocol without the fields: none.
        set_u32(&mut k, PAYLOAD_LENGTH, 1 << 20);
        assert_eq!(
            LinuxBoot::new(k, None, "").unwrap().compressed_payload(),
            None
        );
        let boot = LinuxBoot::new(bzimage(0x0207, 30, 4096), None, "").unwrap();
        assert_eq!(boot.compressed_payload(), None);
    }

    #[test]
    fn a_vmlinux_plans_only_its_initrd() {
        // The smallest ELF64 with a PT_LOAD at 16 MiB and a PVH note (see pvh.rs tests).
        let mut f = vec![0u8; 0x100];
        f[..4].copy_from_slice(b"\x7fELF");
        f[4] = 2;
        f[5] = 1;
        f[0x20..0x28].copy_from_slice(&0x40u64.to_le_bytes());
        f[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        f[0x38..0x3A].copy_from_slice(&2u16.to_le_bytes());
        let ph = |f: &mut Vec<u8>, at: usize, kind: u32, off: u64, pa: u64, len: u64| {
            f[at..at + 4].copy_from_slice(&kind.to_le_bytes());
            f[at + 8..at + 16].copy_from_slice(&off.to_le_bytes());
            f[at + 0x18..at + 0x20].copy_from_slice(&pa.to_le_bytes());
            f[at + 0x20..at + 0x28].copy_from_slice(&len.to_le_bytes());
            f[at + 0x28..at + 0x30].copy_from_slice(&len.to_le_bytes());
        };
        ph(&mut f, 0x40, 1, 0, 16 * MIB, 0x100);
        ph(&mut f, 0x40 + 56, 4, 0x100, 0, 20);
        for w in [4u32, 4, 18] {
            f.extend_from_slice(&w.to_le_bytes());
        }
        f.extend_from_slice(b"Xen\0");
        f.extend_from_slice(&((16 * MIB) as u32).to_le_bytes());
        let boot = LinuxBoot::new(f, Some(vec![1; 4096]), "console=ttyS0").unwrap();
        assert_eq!(boot.compressed_payload(), None);
        match boot.plan(64 * MIB).unwrap() {
            LoadPlan::Pvh { image, initrd } => {
                assert_eq!(image.entry, (16 * MIB) as u32);
                assert_eq!(initrd, Some((64 * MIB - 4096, 4096)));
            }
            plan => panic!("a vmlinux planned as a bzImage: {plan:?}"),
        }
    }

    #[test]
    fn initrd_respects_initrd_addr_max_and_the_kernel() {
        let mut k = bzimage(0x020F, 30, 4096);
        set_u32(&mut k, INITRD_ADDR_MAX, (32 * MIB - 1) as u32);
        let boot = LinuxBoot::new(k.clone(), Some(vec![1; 8192]), "").unwrap();
        assert_eq!(
            bz(boot.plan(512 * MIB).unwrap()).3,
            Some((32 * MIB - 8192, 8192))
        );
        // Too big for the RAM between the kernel and the top: a plain error.
        let boot = LinuxBoot::new(k, Some(vec![1; 40 << 20]), "").unwrap();
        let e = boot.plan(512 * MIB).unwrap_err();
        assert!(matches!(e, LinuxBootError::InitrdTooBig { size, .. } if size == 40 << 20));
        assert!(e.to_string().contains("does not fit"), "{e}");
    }

    #[test]
    fn relocatable_kernels_go_to_their_preferred_address_when_it_fits() {
        let mut k = bzimage(0x020F, 30, 4096);
        k[RELOCATABLE] = 1;
        set_u32(&mut k, PREF_ADDRESS, (16 * MIB) as u32);
        set_u32(&mut k, INIT_SIZE, (20 * MIB) as u32);
        let boot = LinuxBoot::new(k, Some(vec![0; 4096]), "").unwrap();
        let (setup, _, kernel_addr, _) = bz(boot.plan(512 * MIB).unwrap());
        assert_eq!(kernel_addr, 16 * MIB);
        assert_eq!(field32(&setup, CODE32_START) as u64, 16 * MIB);
        // RAM ends before pref + init_size: the kernel cannot unpack anywhere.
        assert!(matches!(
            boot.plan(30 * MIB).unwrap_err(),
            LinuxBootError::KernelTooBig { .. }
        ));
        // The initrd may not overlap the area the kernel decompresses into.
        let boot = LinuxBoot::new(
            {
                let mut k = bzimage(0x020F, 30, 4096);
                k[RELOCATABLE] = 1;
                set_u32(&mut k, PREF_ADDRESS, (16 * MIB) as u32);
                set_u32(&mut k, INIT_SIZE, (20 * MIB) as u32);
                k
            },
            Some(vec![0; 8 << 20]),
            "",
        )
        .unwrap();
        assert!(matches!(
            boot.plan(40 * MIB).unwrap_err(),
            LinuxBootError::InitrdTooBig { .. }
        ));
        assert!(boot.plan(48 * MIB).is_ok());
    }
}
