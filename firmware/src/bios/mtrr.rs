//! Memory type range registers, programmed at POST the way SeaBIOS leaves them on QEMU's
//! PC: RAM write-back (the default type), the legacy VGA window uncachable, the option ROM
//! and BIOS area (C0000h–FFFFFh) write-protected, and everything from the end of RAM (at
//! 2 GiB, 3 GiB or the PCI hole) up to 4 GiB uncachable through a variable range. Operating systems keep what the firmware set: Linux enables
//! PAT only when the MTRRs are on, and Windows expects a BIOS to have done this.
//! PAT itself stays at its reset value.

use super::call::Call;
use super::error::FirmwareError;

/// Where the POST trap leaves the WRMSR list for the ROM (0000:6000, below the POST
/// stack): 12-byte entries `index: u32, value: u64`, ended by index 0. The ROM writes
/// them with WRMSR right after the trap if CPUID says the CPU has MTRRs, so the CPU
/// checks every value as it would a guest's.
pub const MSR_LIST: u16 = 0x6000;
/// Variable ranges every CPU we model has (IA32_MTRRCAP.VCNT).
const VARIABLE_RANGES: u32 = 8;
/// Memory types (Intel SDM vol. 3, 11.11).
const UC: u8 = 0;
const WP: u8 = 5;
const WB: u8 = 6;
const IA32_MTRR_DEF_TYPE: u32 = 0x2FF;
const IA32_MTRR_PHYSBASE0: u32 = 0x200;
/// The fixed-range MSRs in address order: 64K_00000, 16K_80000, 16K_A0000, 4K_C0000 …
/// 4K_F8000.
const FIXED: [u32; 11] = [
    0x250, 0x258, 0x259, 0x268, 0x269, 0x26A, 0x26B, 0x26C, 0x26D, 0x26E, 0x26F,
];
/// IA32_MTRR_DEF_TYPE: E (MTRRs on) and FE (fixed ranges on).
const DEF_ENABLE: u64 = 1 << 11;
const DEF_FIXED_ENABLE: u64 = 1 << 10;
/// IA32_MTRR_PHYSMASKn: the range is in use.
const MASK_VALID: u64 = 1 << 11;
const FOUR_GIB: u64 = 1 << 32;
/// The physical address width of the CPUs Aero models (CPUID 0x80000008 EAX[7:0]).
const PHYS_ADDR_BITS: u32 = 40;

/// The MSR writes that set the MTRRs up for a machine whose PCI hole starts at
/// `pci_hole_start` (RAM below it, MMIO from it to 4 GiB), in the order a BIOS must use:
/// MTRRs off, fixed ranges, variable ranges, then on again.
pub fn msr_writes(ram_below_4g: u64, pci_hole_start: u64) -> Vec<(u32, u64)> {
    let mut out = vec![(IA32_MTRR_DEF_TYPE, 0)];
    // A block is write-back when RAM covers all of it.
    let ram_blocks = |base: u64, step: u64| {
        u64::from_le_bytes(std::array::from_fn(|i| {
            if ram_below_4g >= base + step * (i as u64 + 1) {
                WB
            } else {
                UC
            }
        }))
    };
    let all = |t: u8| u64::from_le_bytes([t; 8]);
    out.push((FIXED[0], ram_blocks(0, 0x1_0000)));
    out.push((FIXED[1], ram_blocks(0x8_0000, 0x4000)));
    out.push((FIXED[2], all(UC))); // the VGA window
    // Option ROMs and the BIOS: write-protected, as SeaBIOS leaves them.
    out.extend(FIXED[3..].iter().map(|&msr| (msr, all(WP))));
    // Variable ranges: the PCI hole uncachable; everything else takes the default (WB).
    let phys_mask = (1u64 << PHYS_ADDR_BITS) - 1;
    let mut ranges =
        aligned_blocks(uncachable_from(ram_below_4g, pci_hole_start), FOUR_GIB).into_iter();
    for n in 0..VARIABLE_RANGES {
        let (base, mask) = match ranges.next() {
            Some((base, size)) => (
                base | u64::from(UC),
                (!(size - 1) & phys_mask & !0xFFF) | MASK_VALID,
            ),
            None => (0, 0),
        };
        out.push((IA32_MTRR_PHYSBASE0 + 2 * n, base));
        out.push((IA32_MTRR_PHYSBASE0 + 2 * n + 1, mask));
    }
    out.push((
        IA32_MTRR_DEF_TYPE,
        DEF_ENABLE | DEF_FIXED_ENABLE | u64::from(WB),
    ));
    out
}

/// Leaves the list at [`MSR_LIST`] for the ROM.
pub fn write_list(
    c: &mut Call,
    ram_below_4g: u64,
    pci_hole_start: u64,
) -> Result<(), FirmwareError> {
    let mut bytes = Vec::new();
    for (index, value) in msr_writes(ram_below_4g, pci_hole_start) {
        bytes.extend_from_slice(&index.to_le_bytes());
        bytes.extend_from_slice(&value.to_le_bytes());
    }
    bytes.extend_from_slice(&[0; 12]);
    c.mem.write(u64::from(MSR_LIST), &bytes)?;
    Ok(())
}

/// Where the uncachable range up to 4 GiB starts: 2 GiB or 3 GiB when RAM ends below
/// them, else the PCI hole. As SeaBIOS places its PCI window on the i440FX, so that one
/// aligned variable range covers every address above RAM, whatever BARs land there later.
fn uncachable_from(ram_below_4g: u64, pci_hole_start: u64) -> u64 {
    [0x8000_0000, 0xC000_0000]
        .into_iter()
        .find(|&at| ram_below_4g <= at)
        .unwrap_or(pci_hole_start)
        .min(pci_hole_start)
}

/// `[start, end)` as naturally aligned power-of-two blocks (what one variable MTRR can
/// cover), largest first; empty when `start` is not below `end` or not 4 KiB aligned.
fn aligned_blocks(start: u64, end: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    if !start.is_multiple_of(0x1000) {
        return out;
    }
    let mut at = start;
    while at < end {
        let align = if at == 0 {
            1 << 63
        } else {
            1u64 << at.trailing_zeros()
        };
        let mut size = align;
        while size > end - at {
            size >>= 1;
        }
        out.push((at, size));
        at += size;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hole_blocks_are_aligned_powers_of_two() {
        assert_eq!(
            aligned_blocks(0xE000_0000, FOUR_GIB),
            [(0xE000_0000, 0x2000_0000)]
        );
        assert_eq!(
            aligned_blocks(0xC000_0000, FOUR_GIB),
            [(0xC000_0000, 0x4000_0000)]
        );
        assert_eq!(
            aligned_blocks(0xD000_0000, FOUR_GIB),
            [(0xD000_0000, 0x1000_0000), (0xE000_0000, 0x2000_0000)]
        );
        assert!(aligned_blocks(FOUR_GIB, FOUR_GIB).is_empty());
        assert!(aligned_blocks(0xE000_0001, FOUR_GIB).is_empty());
    }

    /// SeaBIOS's layout on QEMU's PC: def type WB with both enables, the fixed ranges
    /// WB/UC/WP, one variable range UC from 2 GiB (RAM up to 2 GiB), 3 GiB (up to 3 GiB)
    /// or the hole at 3.5 GiB, its mask as wide as the CPU's 40 physical address bits, the
    /// other ranges cleared.
    #[test]
    fn writes_seabios_layout() {
        let w = msr_writes(512 << 20, 0xE000_0000);
        assert_eq!(w.len(), 1 + 11 + 16 + 1);
        assert_eq!(w[0], (0x2FF, 0));
        assert_eq!(w[1], (0x250, 0x0606_0606_0606_0606));
        assert_eq!(w[2], (0x258, 0x0606_0606_0606_0606));
        assert_eq!(w[3], (0x259, 0));
        assert!(w[4..12].iter().all(|&(_, v)| v == 0x0505_0505_0505_0505));
        assert_eq!(w[11].0, 0x26F);
        assert_eq!(w[12], (0x200, 0x8000_0000));
        assert_eq!(w[13], (0x201, 0xFF_8000_0800));
        assert!(w[14..28].iter().all(|&(_, v)| v == 0));
        assert_eq!(w[27].0, 0x20F);
        assert_eq!(w[28], (0x2FF, 0xC06));
        let uc = |ram| msr_writes(ram, 0xE000_0000)[12..14].to_vec();
        assert_eq!(uc(2 << 30), [(0x200, 0x8000_0000), (0x201, 0xFF_8000_0800)]);
        assert_eq!(uc(3 << 30), [(0x200, 0xC000_0000), (0x201, 0xFF_C000_0800)]);
        assert_eq!(
            uc(0xE000_0000),
            [(0x200, 0xE000_0000), (0x201, 0xFF_E000_0800)]
        );
        // A tiny RAM leaves the top of conventional memory UC; a hole at 3.25 GiB with
        // 3.25 GiB of RAM below it takes two ranges.
        let w = msr_writes(0x9_0000, 0xE000_0000);
        assert_eq!(w[2], (0x258, 0x0000_0000_0606_0606));
        let w = msr_writes(0xD000_0000, 0xD000_0000);
        assert_eq!(
            w[12..16],
            [
                (0x200, 0xD000_0000),
                (0x201, 0xFF_F000_0800),
                (0x202, 0xE000_0000),
                (0x203, 0xFF_E000_0800)
            ]
        );
    }
}
