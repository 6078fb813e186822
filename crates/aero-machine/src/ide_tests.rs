//! The PIIX3 IDE function in PCI native mode, end to end as a guest driver drives it: the
//! programming interface switches the primary channel, BAR0/BAR1 place its registers,
//! IDENTIFY and a bus-master READ DMA run through them, and the interrupt arrives on the
//! line the PIIX3 PIRQ routing gives the function's INTx pin (PIC and IOAPIC), never on
//! IRQ 14. Switching
//! back gives the legacy ports and IRQ 14 again; a platform reset does too.

use super::*;
use aero_cpu::Bus;
use aero_storage::MemoryDisk;

const IDE_DEV: u32 = 1;
const IDE_FN: u32 = 1;
const CMD_BASE: u16 = 0xC100;
const CTL_BASE: u16 = 0xC108;
const BMIBA: u16 = 0xC040;
const PRD: u64 = 0x10_0000;
const BUF: u64 = 0x20_0000;
const SECTORS: usize = 1024;

fn sector_byte(i: usize) -> u8 {
    (i / 512 * 7 + i % 251) as u8
}

fn machine() -> Machine {
    let disk: Vec<u8> = (0..SECTORS * 512).map(sector_byte).collect();
    let config = MachineConfig {
        memory_bytes: 32 << 20,
        hda: Some(Box::new(MemoryDisk::new(disk, 512, false).unwrap())),
        hda_slot: DriveSlot::Ide {
            channel: 0,
            slave: false,
        },
        boot_order: Vec::new(),
        ..Default::default()
    };
    Machine::new(config).expect("machine")
}

fn cfg_select(m: &mut Machine, function: u32, reg: u32) {
    let address = 0x8000_0000 | IDE_DEV << 11 | function << 8 | (reg & 0xFC);
    m.platform.io_write(0xCF8, 4, address);
}

fn cfg_read(m: &mut Machine, reg: u32) -> u32 {
    cfg_select(m, IDE_FN, reg);
    m.platform.io_read(0xCFC, 4)
}

fn cfg_write(m: &mut Machine, function: u32, reg: u32, size: u8, value: u32) {
    cfg_select(m, function, reg);
    m.platform.io_write(0xCFC + (reg & 3) as u16, size, value);
}

/// PIC IRR (OCW3 read IRR) bit of ISA line `irq`.
fn pic_requested(m: &mut Machine, irq: u8) -> bool {
    let (port, bit) = if irq < 8 {
        (0x20, irq)
    } else {
        (0xA0, irq - 8)
    };
    m.platform.io_write(port, 1, 0x0A);
    m.platform.io_read(port, 1) & (1 << bit) != 0
}

/// IDENTIFY DEVICE by PIO through a command block at `cmd` and the alternate status port
/// `ctl` (which, unlike the status register, leaves the interrupt pending): the 256 words.
fn identify(m: &mut Machine, cmd: u16, ctl: u16) -> Vec<u16> {
    let p = &mut m.platform;
    p.io_write(cmd + 6, 1, 0xA0);
    p.io_write(cmd + 7, 1, 0xEC);
    assert_eq!(p.io_read(ctl, 1) & 0x89, 0x08, "DRQ, no error");
    (0..256).map(|_| p.io_read(cmd, 2) as u16).collect()
}

/// BIOS-style set-up: I/O + bus master, IDETIM decode on, bus-master block at BMIBA,
/// PIRQA–D → IRQ 10/10/11/11 with IRQ 10/11 level-triggered.
fn setup(m: &mut Machine) {
    cfg_write(m, IDE_FN, 0x20, 4, u32::from(BMIBA));
    cfg_write(m, IDE_FN, 0x04, 2, 0x0005);
    cfg_write(m, IDE_FN, 0x40, 4, 0x8000_8000);
    cfg_write(m, 0, 0x60, 4, 0x0B0B_0A0A);
    m.platform.io_write(0x4D1, 1, 0x0C);
}

/// The PIRQ (0 = A) and ISA IRQ the PIIX3 routes the IDE function's INTx pin to.
fn intx_route(m: &mut Machine) -> (u8, u8) {
    let pin = (cfg_read(m, 0x3C) >> 8 & 0xFF) as u8;
    assert_eq!(pin, 2, "INTB#");
    let pirq = crate::devices::piix3::pirq_for(IDE_DEV as u8, pin);
    cfg_select(m, 0, 0x60);
    (pirq, m.platform.io_read(0xCFC + u16::from(pirq), 1) as u8)
}

#[test]
fn native_primary_channel_identifies_reads_by_dma_and_interrupts_through_intx() {
    let mut m = machine();
    setup(&mut m);
    assert_eq!(cfg_read(&mut m, 0x00), 0x7010_8086);
    assert_eq!(
        cfg_read(&mut m, 0x08),
        0x0101_8A00,
        "compatibility, programmable"
    );
    // Sizing and placing BAR0 (command block) and BAR1 (control block).
    cfg_write(&mut m, IDE_FN, 0x10, 4, 0xFFFF_FFFF);
    cfg_write(&mut m, IDE_FN, 0x14, 4, 0xFFFF_FFFF);
    assert_eq!(cfg_read(&mut m, 0x10), 0xFFFF_FFF9);
    assert_eq!(cfg_read(&mut m, 0x14), 0xFFFF_FFFD);
    cfg_write(&mut m, IDE_FN, 0x10, 4, u32::from(CMD_BASE));
    cfg_write(&mut m, IDE_FN, 0x14, 4, u32::from(CTL_BASE));
    // Still compatibility mode: the BARs decode nothing yet.
    assert_eq!(m.platform.io_read(CMD_BASE + 7, 1), 0xFF);
    assert_eq!(
        m.platform.io_read(0x1F7, 1) & 0x50,
        0x50,
        "legacy ports answer"
    );

    cfg_write(&mut m, IDE_FN, 0x09, 1, 0x01);
    assert_eq!(cfg_read(&mut m, 0x08), 0x0101_8B00);
    assert_eq!(
        m.platform.io_read(0x1F7, 1),
        0xFF,
        "legacy command block gone"
    );
    assert_eq!(
        m.platform.io_read(0x3F6, 1),
        0xFF,
        "legacy control port gone"
    );
    assert_eq!(
        m.platform.io_read(CTL_BASE + 2, 1) & 0x50,
        0x50,
        "alternate status at control block offset 2: DRDY, DSC"
    );

    let (pirq, irq) = intx_route(&mut m);
    assert_eq!(
        (pirq, irq),
        (1, 10),
        "slot 1 INTB# is PIRQB, routed to IRQ 10"
    );
    // IOAPIC: PIRQB is GSI 17 → vector 0x46, level, unmasked; LAPIC enabled.
    m.platform.mmio_write(0xFEE0_00F0, 4, 0x1FF);
    m.platform.mmio_write(0xFEC0_0000, 4, 0x10 + 2 * 17);
    m.platform.mmio_write(0xFEC0_0010, 4, 0x46 | 1 << 15);

    // nIEN clear through the native control port, then IDENTIFY by PIO.
    m.platform.io_write(CTL_BASE + 2, 1, 0x00);
    let words = identify(&mut m, CMD_BASE, CTL_BASE + 2);
    let lba28 = u32::from(words[60]) | u32::from(words[61]) << 16;
    assert_eq!(lba28 as usize, SECTORS, "capacity in IDENTIFY");
    assert!(pic_requested(&mut m, irq), "IRQ {irq} at the PIC");
    assert!(!pic_requested(&mut m, 14), "nothing on IRQ 14");
    assert_eq!(
        m.platform.lapic.pending_vector(),
        Some(0x46),
        "GSI 17 delivered"
    );
    // Reading the status register acknowledges: the line drops.
    m.platform.io_read(CMD_BASE + 7, 1);
    assert!(!pic_requested(&mut m, irq), "line released");

    // READ DMA (LBA 100, 8 sectors) through the bus-master block, one PRD entry.
    let mut prd = [0u8; 8];
    prd[..4].copy_from_slice(&(BUF as u32).to_le_bytes());
    prd[4..6].copy_from_slice(&(8u16 * 512).to_le_bytes());
    prd[6..8].copy_from_slice(&0x8000u16.to_le_bytes());
    ram_write(&mut m, PRD, &prd);
    let p = &mut m.platform;
    p.io_write(BMIBA + 4, 4, PRD as u32);
    p.io_write(CMD_BASE + 2, 1, 8);
    p.io_write(CMD_BASE + 3, 1, 100);
    p.io_write(CMD_BASE + 4, 1, 0);
    p.io_write(CMD_BASE + 5, 1, 0);
    p.io_write(CMD_BASE + 6, 1, 0xE0);
    p.io_write(CMD_BASE + 7, 1, 0xC8);
    p.io_write(BMIBA, 1, 0x09); // start, to memory
    m.handle_requests();
    assert_eq!(
        m.platform.io_read(BMIBA + 2, 1) & 0x07,
        0x04,
        "done, interrupt"
    );
    let expect: Vec<u8> = (100 * 512..108 * 512).map(sector_byte).collect();
    assert_eq!(ram_read(&mut m, BUF, 8 * 512), expect);
    assert!(pic_requested(&mut m, irq));
    assert!(!pic_requested(&mut m, 14));

    // INTx disable (command bit 10) holds the native interrupt back.
    cfg_write(&mut m, IDE_FN, 0x04, 2, 0x0405);
    assert!(!pic_requested(&mut m, irq), "INTx disabled");
    cfg_write(&mut m, IDE_FN, 0x04, 2, 0x0005);
    assert!(pic_requested(&mut m, irq));
    m.platform.io_read(CMD_BASE + 7, 1);

    // I/O decode off: the BAR ports stop answering.
    cfg_write(&mut m, IDE_FN, 0x04, 2, 0x0004);
    assert_eq!(m.platform.io_read(CMD_BASE + 7, 1), 0xFF);
    cfg_write(&mut m, IDE_FN, 0x04, 2, 0x0005);

    // Back to compatibility mode: legacy ports and IRQ 14, the BARs are ignored.
    cfg_write(&mut m, IDE_FN, 0x09, 1, 0x00);
    assert_eq!(m.platform.io_read(CMD_BASE + 7, 1), 0xFF);
    let words = identify(&mut m, 0x1F0, 0x3F6);
    assert_eq!(words[60] as usize, SECTORS);
    assert!(pic_requested(&mut m, 14), "IRQ 14 in compatibility mode");
    assert!(
        !pic_requested(&mut m, irq),
        "INTx idle in compatibility mode"
    );
}

#[test]
fn hostile_bars_and_reset_back_to_compatibility() {
    let mut m = machine();
    setup(&mut m);
    cfg_write(&mut m, IDE_FN, 0x09, 1, 0x05);
    // Unassigned, out-of-space and overlapping BARs: no panic, fixed devices keep ports.
    for (cmd, ctl) in [
        (0, 0),
        (0xFFFF_FFF8, 0xFFFF_FFFC),
        (0xFFF8, 0xFFFC),
        (0x60, 0x20),
        (0xCF8, 0x70),
        (0x1F0, 0x3F4),
    ] {
        for (bar, value) in [(0x10, cmd), (0x14, ctl), (0x18, cmd), (0x1C, ctl)] {
            cfg_write(&mut m, IDE_FN, bar, 4, value);
        }
        for port in [0u16, 0x20, 0x60, 0x64, 0x70, 0x1F7, 0x3F6, 0xFFFE, 0xFFFF] {
            m.platform.io_read(port, 1);
            m.platform.io_read(port, 4);
        }
    }
    assert_eq!(
        cfg_read(&mut m, 0x00),
        0x7010_8086,
        "config cycles still work"
    );
    // BARs placed where the legacy ports are: native decode there, INTx not IRQ 14.
    assert_eq!(m.platform.io_read(0x3F6, 1) & 0x50, 0x50);
    let (_, irq) = intx_route(&mut m);
    m.platform.io_write(0x3F6, 1, 0x00);
    identify(&mut m, 0x1F0, 0x3F6);
    assert!(pic_requested(&mut m, irq));
    assert!(!pic_requested(&mut m, 14));

    m.reset();
    assert_eq!(
        cfg_read(&mut m, 0x08),
        0x0101_8A00,
        "reset: compatibility again"
    );
    m.platform.io_write(0x3F6, 1, 0x00);
    identify(&mut m, 0x1F0, 0x3F6);
    assert!(pic_requested(&mut m, 14), "IRQ 14 after reset");
}
