//! Power-on self test, the Rust half: interrupt vectors, BDA/EBDA, interrupt controllers,
//! timer, CMOS check, PCI, firmware tables. The ROM half then initialises the keyboard
//! controller, runs option ROMs and INT 19h.

use tracing::{info, warn};

use super::Bios;
use super::bda;
use super::call::{Call, Flow};
use super::error::FirmwareError;
use super::mtrr;
use super::pci;
use super::rom::BIOS_SEGMENT;

impl Bios {
    pub(crate) fn post(&mut self, c: &mut Call) -> Result<Flow, FirmwareError> {
        info!(
            "POST: {} MiB RAM, {} CPU(s)",
            self.config.ram_size >> 20,
            self.config.cpu_count
        );
        self.state = Default::default();
        self.write_ivt(c)?;
        self.write_bda(c)?;
        init_pics(c);
        init_pit(c);
        check_cmos(self, c);
        let hole = self.config.pci_hole_start;
        mtrr::write_list(c, self.config.ram_size.min(hole), hole)?;
        // A20 on: boot loaders expect it and it costs nothing.
        let p92 = c.host.io_read(0x92, 1);
        c.host.io_write(0x92, 1, (p92 | 2) & !1);
        self.state.pci = pci::enumerate(c.host, self.config.pci_mmio_start, self.mmio64_window());
        self.install_tables(c)?;
        // POST runs with interrupts off; the ROM enables them before INT 19h.
        Ok(Flow::Return)
    }

    fn write_ivt(&self, c: &mut Call) -> Result<(), FirmwareError> {
        for (vector, target) in self.rom.layout.vectors.iter().enumerate() {
            let (seg, off) = match target {
                Some(ip) => (BIOS_SEGMENT, *ip),
                None => (0, 0),
            };
            c.mem.write_u16(vector as u64 * 4, off)?;
            c.mem.write_u16(vector as u64 * 4 + 2, seg)?;
        }
        Ok(())
    }

    fn write_bda(&self, c: &mut Call) -> Result<(), FirmwareError> {
        c.mem.fill(bda::BDA, 0x100, 0)?;
        for (i, port) in self.config.serial_ports.iter().take(4).enumerate() {
            c.mem.write_u16(bda::COM_PORTS + 2 * i as u64, *port)?;
        }
        let ebda_seg = (self.memory.ebda_base >> 4) as u16;
        c.mem.write_u16(bda::EBDA_SEGMENT, ebda_seg)?;
        let floppies = u16::from(self.floppy_count(c));
        let hard_disks = self.hard_disk_count(c);
        let serial = self.config.serial_ports.len().min(4) as u16;
        // x87 present, PS/2 mouse, 80x25 colour initial video mode.
        let mut equipment = 0x0002 | 0x0004 | 0x0020 | serial << 9;
        if floppies > 0 {
            equipment |= 1 | (floppies - 1) << 6;
        }
        c.mem.write_u16(bda::EQUIPMENT, equipment)?;
        c.mem
            .write_u16(bda::BASE_MEMORY_KIB, self.memory.base_kib())?;
        c.mem.write_u16(bda::KBD_HEAD, bda::KBD_BUFFER_START_OFF)?;
        c.mem.write_u16(bda::KBD_TAIL, bda::KBD_BUFFER_START_OFF)?;
        c.mem
            .write_u16(bda::KBD_BUF_START, bda::KBD_BUFFER_START_OFF)?;
        c.mem.write_u16(bda::KBD_BUF_END, bda::KBD_BUFFER_END_OFF)?;
        c.mem.write_u8(bda::KBD_STATUS3, 0x10)?; // 101/102-key keyboard
        c.mem.write_u8(bda::HDD_COUNT, hard_disks)?;
        let ticks = super::clock::ticks_since_midnight(c.host);
        c.mem.write_u32(bda::TIMER_TICKS, ticks)?;
        // EBDA: first word is its size in KiB.
        let ebda = self.memory.ebda_base;
        c.mem.fill(ebda, super::e820::EBDA_SIZE as usize, 0)?;
        c.mem
            .write_u16(ebda, (super::e820::EBDA_SIZE / 1024) as u16)?;
        Ok(())
    }
}

fn init_pics(c: &mut Call) {
    // ICW1 edge + ICW4, ICW2 vector base, ICW3 cascade on IRQ2, ICW4 8086 mode.
    for (cmd, data, base, cascade) in [
        (0x20u16, 0x21u16, 0x08u32, 0x04u32),
        (0xA0, 0xA1, 0x70, 0x02),
    ] {
        c.host.io_write(cmd, 1, 0x11);
        c.host.io_write(data, 1, base);
        c.host.io_write(data, 1, cascade);
        c.host.io_write(data, 1, 0x01);
    }
    // Unmask timer, keyboard, cascade, RTC (the ROM handles IRQ8); the OS reprograms all.
    c.host.io_write(0x21, 1, 0xF8);
    c.host.io_write(0xA1, 1, 0xFE);
}

fn init_pit(c: &mut Call) {
    // Channel 0, lobyte/hibyte, mode 3, divisor 65536: 18.2 Hz.
    c.host.io_write(0x43, 1, 0x36);
    c.host.io_write(0x40, 1, 0);
    c.host.io_write(0x40, 1, 0);
}

fn cmos_read(c: &mut Call, index: u8) -> u8 {
    c.host.io_write(0x70, 1, index as u32);
    c.host.io_read(0x71, 1) as u8
}

fn cmos_write(c: &mut Call, index: u8, v: u8) {
    c.host.io_write(0x70, 1, index as u32);
    c.host.io_write(0x71, 1, v as u32);
}

/// The machine fills the CMOS memory fields; make sure they match our memory plan so DOS-era
/// software and the OS agree with E820, fixing them (and the checksum) if not.
fn check_cmos(bios: &Bios, c: &mut Call) {
    const MIB: u64 = 1 << 20;
    let below = bios.memory.low_ram;
    let ext_kib = ((below.saturating_sub(MIB)) / 1024).min(0xFFFF) as u16;
    let above16 = (below.saturating_sub(16 * MIB) >> 16).min(0xFFFF) as u16;
    let fields = [
        (0x15u8, 640u16),
        (0x17, ext_kib),
        (0x30, ext_kib),
        (0x34, above16),
    ];
    let mut changed = false;
    for (index, value) in fields {
        let cur = cmos_read(c, index) as u16 | (cmos_read(c, index + 1) as u16) << 8;
        if cur != value {
            cmos_write(c, index, value as u8);
            cmos_write(c, index + 1, (value >> 8) as u8);
            changed = true;
        }
    }
    if changed {
        warn!("CMOS memory size fields did not match the memory map; rewritten");
        let sum: u16 = (0x10..=0x2D).map(|i| cmos_read(c, i) as u16).sum();
        cmos_write(c, 0x2E, (sum >> 8) as u8);
        cmos_write(c, 0x2F, sum as u8);
    }
    // Status register A: make sure the divider runs (32.768 kHz, 1024 Hz periodic rate).
    if cmos_read(c, 0x0A) & 0x70 != 0x20 {
        cmos_write(c, 0x0A, 0x26);
    }
    // Clear pending RTC interrupt flags.
    let _ = cmos_read(c, 0x0C);
}
