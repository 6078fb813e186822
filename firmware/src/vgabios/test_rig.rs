//! What the tests that execute the ROM on Aero's CPU share: the memory layout, the VGA
//! function's PCI configuration space (00:03.0, found by the ROM's scan through ports
//! CF8h/CFCh), the adapter's port decoding and the far call into the ROM's init entry.

use aero_cpu::{Cpu, Reg, Seg};
use aero_gpu::Vga;

pub(super) const RAM_SIZE: usize = 1 << 20;
pub(super) const ROM_BASE: usize = 0xC0000;
pub(super) const LFB_BASE: u32 = 0xFD00_0000;
/// PCI device number the tests put the VGA at (the ROM must find it by scanning).
pub(super) const VGA_DEVICE: u32 = 3;

/// The dword at configuration `address` (the value last written to CF8h).
fn pci_config_read(address: u32) -> u32 {
    let a = address;
    if a >> 31 == 0 || (a >> 16) & 0xFF != 0 || (a >> 11) & 0x1F != VGA_DEVICE || (a >> 8) & 7 != 0
    {
        return 0xFFFF_FFFF;
    }
    match a & 0xFC {
        0x00 => 0x0001_A3A0,
        0x08 => 0x0300_0001,
        0x10 => 0xFEBF_0000,
        0x18 => LFB_BASE | 0x08,
        _ => 0,
    }
}

/// IN from the adapter's ports (VGA, DISPI) or PCI configuration; other ports float.
pub(super) fn adapter_io_read(vga: &mut Vga, pci_address: u32, port: u16, size: u8) -> u32 {
    match port {
        0x3B0..=0x3DF | 0x1CE..=0x1D0 => vga.io_read(port, size),
        0xCF8 => pci_address,
        0xCFC..=0xCFF => pci_config_read(pci_address) >> (8 * u32::from(port - 0xCFC)),
        _ => 0xFFFF_FFFF,
    }
}

/// OUT to the adapter's ports or the PCI address port; others are ignored.
pub(super) fn adapter_io_write(
    vga: &mut Vga,
    pci_address: &mut u32,
    port: u16,
    size: u8,
    value: u32,
) {
    match port {
        0x3B0..=0x3DF | 0x1CE..=0x1D0 => vga.io_write(port, size, value),
        0xCF8 if size == 4 => *pci_address = value,
        _ => {}
    }
}

/// The first MiB with `rom` shadowed at C0000h and `cpu` set up as POST leaves it when it
/// far-calls the ROM's init entry (C000:0003) from 0000:0600, where a HLT waits; the
/// stack is 0000:`stack_top`.
pub(super) fn ram_calling_init(rom: &[u8], cpu: &mut Cpu, stack_top: usize) -> Vec<u8> {
    let mut ram = vec![0u8; RAM_SIZE];
    ram[ROM_BASE..ROM_BASE + rom.len()].copy_from_slice(rom);
    ram[0x600] = 0xF4;
    let sp = stack_top - 4;
    ram[sp..stack_top].copy_from_slice(&[0x00, 0x06, 0x00, 0x00]);
    let s = &mut cpu.state;
    s.load_seg_real(Seg::Ss, 0);
    s.set_reg(Reg::Rsp, sp as u64);
    s.load_seg_real(Seg::Cs, 0xC000);
    s.rip = 3;
    ram
}
