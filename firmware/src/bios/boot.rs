//! INT 19h: try the configured boot devices in order and jump to the first that loads.
//! INT 18h (a boot sector giving up, e.g. "Missing operating system") continues with the
//! next device in the order.

use aero_cpu::{Reg, Seg};
use tracing::{info, warn};

use super::Bios;
use super::call::{Call, Flow};
use super::config::BootDevice;
use super::disk::{CDROM_DRIVE, read_sectors};
use super::eltorito::{self, BootImage, CD_SECTOR};
use super::error::FirmwareError;
use super::host::DiskId;
use super::linux::{self, LinuxBoot, LoadPlan};
use super::pvh::{self, PvhImage};
use super::rom::BIOS_SEGMENT;
use super::rom::BIOS_SEGMENT_BASE;

const BOOT_ADDR: u64 = 0x7C00;

impl Bios {
    pub(crate) fn int19(&mut self, c: &mut Call) -> Result<Flow, FirmwareError> {
        // A kernel given with --kernel comes before every boot device (as in QEMU).
        if let Some(linux) = self.config.linux.clone() {
            return self.boot_linux(c, &linux);
        }
        self.boot_from(c, 0)
    }

    /// Writes the kernel's parts where [`LinuxBoot::plan`] puts them and enters its
    /// real-mode setup code as boot.rst describes: DS=ES=FS=GS=SS = the setup segment,
    /// SP at the top of its heap, CS:IP = segment + 20h:0, interrupts off.
    fn boot_linux(&mut self, c: &mut Call, linux: &LinuxBoot) -> Result<Flow, FirmwareError> {
        self.state.cd_boot = None;
        if self.state.emulation.take().is_some() {
            self.write_drive_counts(c)?;
        }
        let (setup, kernel, kernel_addr, initrd, protocol) =
            match linux.plan(self.memory.extended_top())? {
                LoadPlan::Pvh { image, initrd } => return self.boot_pvh(c, linux, image, initrd),
                LoadPlan::BzImage {
                    setup,
                    kernel,
                    kernel_addr,
                    initrd,
                    protocol,
                } => (setup, kernel, kernel_addr, initrd, protocol),
            };
        c.debug_print("Booting Linux kernel (direct boot)...\n");
        c.mem.write(linux::SETUP_BASE, &setup)?;
        c.mem.write(linux::CMDLINE_ADDR, &linux.cmdline_bytes())?;
        c.mem.write(kernel_addr, kernel)?;
        if let Some((addr, _)) = initrd {
            c.mem.write(addr, linux.initrd())?;
        }
        info!(
            kernel = format_args!("{kernel_addr:#x}"),
            ?initrd,
            protocol = format_args!("{protocol:#x}"),
            "booting Linux directly"
        );
        let seg = (linux::SETUP_BASE >> 4) as u16;
        for s in [Seg::Ds, Seg::Es, Seg::Fs, Seg::Gs, Seg::Ss] {
            c.set_seg_real(s, seg);
        }
        c.set_seg_real(Seg::Cs, seg + 0x20);
        c.cpu.rip = 0;
        c.cpu.set_reg(Reg::Rsp, u64::from(linux::SETUP_STACK));
        c.cpu.rflags = 0x2;
        Ok(Flow::Jumped)
    }

    /// Writes a vmlinux's segments (bss zeroed), the initrd, the command line and the
    /// `hvm_start_info` with the E820 map, then enters the PVH entry point in flat 32-bit
    /// protected mode, paging off, EBX = the start info (the PVH boot ABI).
    fn boot_pvh(
        &mut self,
        c: &mut Call,
        linux: &LinuxBoot,
        image: &PvhImage,
        initrd: Option<(u64, u64)>,
    ) -> Result<Flow, FirmwareError> {
        c.debug_print("Booting Linux vmlinux (direct boot, PVH entry)...\n");
        let file = linux.kernel_file();
        for s in &image.segments {
            c.mem
                .write(s.paddr, &file[s.offset..s.offset + s.file_len])?;
            let bss = (s.mem_len - s.file_len as u64) as usize;
            c.mem.fill(s.paddr + s.file_len as u64, bss, 0)?;
        }
        c.mem.write(linux::CMDLINE_ADDR, &linux.cmdline_bytes())?;
        let modules = match initrd {
            Some((addr, size)) => {
                c.mem.write(addr, linux.initrd())?;
                let (at, entry) = pvh::module_entry(addr, size);
                c.mem.write(at, &entry)?;
                1
            }
            None => 0,
        };
        let map = &self.memory.map;
        if map.len() > pvh::MAX_MEMMAP_ENTRIES {
            return Err(FirmwareError::Config("E820 map too long for PVH".into()));
        }
        for (i, e) in map.iter().enumerate() {
            let entry = pvh::memmap_entry(e.base, e.len, e.kind as u32);
            c.mem.write(pvh::MEMMAP_ADDR + 24 * i as u64, &entry)?;
        }
        let rsdp = BIOS_SEGMENT_BASE + u64::from(super::tables_glue::RSDP_IP);
        let info = pvh::start_info(modules, linux::CMDLINE_ADDR, rsdp, map.len() as u32);
        c.mem.write(pvh::START_INFO_ADDR, &info)?;
        info!(
            entry = format_args!("{:#x}", image.entry),
            ?initrd,
            "booting vmlinux (PVH)"
        );
        // Flat 4 GiB segments: code 32-bit (D=1, G=1), data read/write.
        let flat = |selector, attr| aero_cpu::Segment {
            selector,
            base: 0,
            limit: 0xFFFF_FFFF,
            attr,
        };
        c.cpu.seg[Seg::Cs as usize] = flat(0x10, 0xC9B);
        for s in [Seg::Ds, Seg::Es, Seg::Fs, Seg::Gs, Seg::Ss] {
            c.cpu.seg[s as usize] = flat(0x18, 0xC93);
        }
        c.cpu.cr0 |= 1;
        c.cpu.cpl = 0;
        c.cpu.rflags = 0x2;
        c.cpu.set_reg(Reg::Rbx, pvh::START_INFO_ADDR);
        c.cpu.rip = u64::from(image.entry);
        Ok(Flow::Jumped)
    }

    pub(crate) fn int18(&mut self, c: &mut Call) -> Result<Flow, FirmwareError> {
        c.debug_print("Boot failed: boot code gave up (INT 18h)\n");
        let next = self.state.boot_index.map_or(0, |i| i + 1);
        self.boot_from(c, next)
    }

    fn boot_from(&mut self, c: &mut Call, first: usize) -> Result<Flow, FirmwareError> {
        self.state.cd_boot = None;
        if self.state.emulation.take().is_some() {
            self.write_drive_counts(c)?;
        }
        self.state.boot_index = None;
        let order = self.config.boot_order.clone();
        for (index, device) in order.into_iter().enumerate().skip(first) {
            self.state.boot_index = Some(index);
            let attempt = match device {
                BootDevice::Floppy => boot_disk(c, DiskId::Floppy(0), 0x00, "Floppy", false),
                BootDevice::HardDisk => boot_disk(c, DiskId::HardDisk(0), 0x80, "Hard Disk", true),
                BootDevice::Cdrom => self.boot_cd(c),
            };
            match attempt {
                Ok(true) => return Ok(Flow::Jumped),
                Ok(false) => {}
                Err(e) => return Err(e),
            }
        }
        warn!("no bootable device");
        // The ROM routine prints the message on screen and on port 0xE9, then idles.
        c.set_seg_real(Seg::Cs, BIOS_SEGMENT);
        c.cpu.rip = self.rom.layout.boot_fail as u64;
        Ok(Flow::Jumped)
    }

    fn boot_cd(&mut self, c: &mut Call) -> Result<bool, FirmwareError> {
        let drive = DiskId::Cdrom(0);
        if c.host.disk_info(drive).is_none() {
            return Ok(false);
        }
        c.debug_print("Booting from DVD/CD...\n");
        let image = match load_cd_image(c, drive) {
            Ok(image) => image,
            Err(msg) => {
                c.debug_print(&format!("Boot failed: {msg}\n"));
                return Ok(false);
            }
        };
        let dl = if image.media == eltorito::MEDIA_NO_EMULATION {
            CDROM_DRIVE
        } else {
            let cd_sectors = c.host.disk_info(drive).map_or(0, |i| i.sectors);
            let mbr = match read_sectors(c.host, drive, image.load_rba.into(), 1, CD_SECTOR) {
                Ok(sector) => sector,
                Err(e) => {
                    c.debug_print(&format!("Boot failed: {e}\n"));
                    return Ok(false);
                }
            };
            let Some(emulation) = eltorito::emulation_for(&image, &mbr, cd_sectors) else {
                c.debug_print("Boot failed: the emulated disk image has no usable size\n");
                return Ok(false);
            };
            self.state.emulation = Some(emulation);
            self.write_drive_counts(c)?;
            emulation.drive_number()
        };
        self.state.cd_boot = Some(image);
        // 07C0:0000 is entered as 0000:7C00 like a disk boot sector.
        let (cs, ip) = if image.load_segment == 0x07C0 {
            (0, 0x7C00)
        } else {
            (image.load_segment, 0)
        };
        jump(c, cs, ip, dl);
        info!(
            rba = image.load_rba,
            sectors = image.sector_count,
            media = image.media,
            "booting El Torito image"
        );
        Ok(true)
    }
}

/// Loads and validates a boot sector; on success the CPU is set up to run it.
fn boot_disk(
    c: &mut Call,
    drive: DiskId,
    dl: u8,
    name: &str,
    check_signature: bool,
) -> Result<bool, FirmwareError> {
    if c.host.disk_info(drive).is_none() {
        return Ok(false);
    }
    c.debug_print(&format!("Booting from {name}...\n"));
    let sector = match read_sectors(c.host, drive, 0, 1, 512) {
        Ok(s) => s,
        Err(e) => {
            c.debug_print(&format!(
                "Boot failed: could not read the boot sector ({e})\n"
            ));
            return Ok(false);
        }
    };
    if check_signature && sector[510..512] != [0x55, 0xAA] {
        c.debug_print("Boot failed: not a bootable disk\n");
        return Ok(false);
    }
    c.mem.write(BOOT_ADDR, &sector)?;
    jump(c, 0, 0x7C00, dl);
    Ok(true)
}

fn load_cd_image(c: &mut Call, drive: DiskId) -> Result<BootImage, String> {
    let record = read_sectors(c.host, drive, eltorito::BOOT_RECORD_LBA, 1, CD_SECTOR)
        .map_err(|e| e.to_string())?;
    let catalog_lba = eltorito::catalog_lba(&record).map_err(|e| e.to_string())?;
    let catalog =
        read_sectors(c.host, drive, catalog_lba as u64, 1, CD_SECTOR).map_err(|e| e.to_string())?;
    let image = eltorito::parse_catalog(&catalog).map_err(|e| e.to_string())?;
    let bytes = image.load_bytes();
    let sectors = bytes.div_ceil(CD_SECTOR);
    let data = read_sectors(c.host, drive, image.load_rba as u64, sectors, CD_SECTOR)
        .map_err(|e| e.to_string())?;
    let addr = (image.load_segment as u64) << 4;
    c.mem
        .write(addr, &data[..bytes])
        .map_err(|e| e.to_string())?;
    Ok(image)
}

/// Enters boot code the way PC BIOSes do: DL = drive, DS=ES=SS=0, SP=7C00h, IF=1.
fn jump(c: &mut Call, cs: u16, ip: u16, dl: u8) {
    for s in [Seg::Ds, Seg::Es, Seg::Ss] {
        c.set_seg_real(s, 0);
    }
    c.set_seg_real(Seg::Cs, cs);
    c.cpu.rip = ip as u64;
    c.cpu.set_reg(Reg::Rsp, 0x7C00);
    c.set_r32(Reg::Rdx, dl as u32);
    c.cpu.rflags = 0x202;
}
