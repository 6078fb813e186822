//! Guest RAM sizes Windows needs (1 GiB for x86, 2 GiB for x64, more in practice): Linux
//! guests boot with large `-m` on both BIOSes and see the RAM the map promises.
//!
//! Aero's map: RAM up to the PCI hole at 0xE000_0000 (3.5 GiB), the rest remapped at
//! 4 GiB; CMOS 0x34/0x35 and 0x5B–0x5D carry both parts. QEMU's `pc` machine cuts low RAM
//! at 3 GiB instead once RAM exceeds 3.5 GiB (so 4096 MiB is 3 GiB + 1 GiB there, 3.5 GiB +
//! 0.5 GiB here); both are valid PC layouts and the guest's view differs only in where the
//! hole starts.
//!
//! Boots chosen to cover what differs, one each (a boot is ~30 s of CPU):
//! - 4096 MiB, amd64, our BIOS: E820 RAM above 4 GiB, the PCI hole, MemTotal.
//! - 4096 MiB, amd64, SeaBIOS: SeaBIOS reads RAM above 4 GiB from CMOS only once it has
//!   found QEMU's fw_cfg, which Aero offers for that (`devices/fw_cfg.rs`); without it
//!   the 512 MiB above 4 GiB were lost.
//! - 4096 MiB, i386 PAE (Debian's `686-pae` kernel, image `linux-i386-pae.img`), both
//!   BIOSes: the same map as amd64, reached by a 32-bit kernel through PAE page tables.
//!   The kernel reports NX active (only PAE page tables have an NX bit), its HighMem zone
//!   ends above 4 GiB and MemTotal exceeds the 3.5 GiB below the hole. It also covers
//!   what the 3072 MiB non-PAE `686` boot did (most RAM is highmem), so that boot is gone.
//!
//! - 1024, 2048 and 3072 MiB (the x86 and x64 minimums, and the size that ends where
//!   SeaBIOS's i440FX PCI window and our BIOS's uncachable MTRR range begin), amd64, both
//!   BIOSes: all RAM below the hole, the map ends exactly at the size, nothing usable
//!   above it, MemTotal. (`aero run`'s 2048 MiB default is checked in machine_args' unit
//!   tests.)

mod common;
use common::*;
use std::path::PathBuf;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const FOUR_GIB: u64 = 4 * GIB;
const SEABIOS: &str = "/usr/share/seabios/bios.bin";

/// One `BIOS-e820: [mem 0x...-0x...] usable` line: (start, end exclusive, kind).
fn e820(serial: &str) -> Vec<(u64, u64, String)> {
    serial
        .lines()
        .filter_map(|l| {
            let rest = l.split_once("BIOS-e820: [mem ")?.1;
            let (range, kind) = rest.split_once("] ")?;
            let (a, b) = range.split_once('-')?;
            let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
            Some((hex(a)?, hex(b)? + 1, kind.trim().to_string()))
        })
        .collect()
}

/// Boots `image` with `-m mib` (and `extra`) until the guest's report; returns the serial text.
fn boot(test: &str, image_name: &str, mib: u64, extra: &[&str]) -> String {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("memory-{test}"));
    std::fs::create_dir_all(&dir).unwrap();
    let serial = dir.join("serial.txt");
    let _ = std::fs::remove_file(&serial);
    let img = image(image_name);
    let m = mib.to_string();
    let mut args = vec![
        "headless",
        "--snapshot",
        "-m",
        m.as_str(),
        "--serial",
        serial.to_str().unwrap(),
        "--until-serial",
        "AERO-BOOT-DONE",
        "--timeout",
        "240",
    ];
    args.extend_from_slice(extra);
    args.push(img.to_str().unwrap());
    run_aero(&args, &serial)
}

/// What the guest saw: usable E820 RAM below and above 4 GiB, and MemTotal.
struct Seen {
    usable_low: u64,
    usable_high: u64,
    highest_low_ram_end: u64,
    mem_total: u64,
}

fn seen(serial: &str) -> Seen {
    let map = e820(serial);
    assert!(map.len() >= 4, "no E820 map in the kernel log:\n{serial}");
    let usable = map.iter().filter(|e| e.2 == "usable");
    let (mut usable_low, mut usable_high, mut highest_low_ram_end) = (0, 0, 0);
    for (a, b, _) in usable {
        if *a >= FOUR_GIB {
            usable_high += b - a;
        } else {
            assert!(*b <= FOUR_GIB, "usable range crosses 4 GiB: {a:#x}-{b:#x}");
            usable_low += b - a;
            highest_low_ram_end = highest_low_ram_end.max(*b);
        }
    }
    let mem_total = serial
        .lines()
        .find_map(|l| l.trim().strip_prefix("AERO-MEM-KB="))
        .and_then(|v| {
            let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u64>().ok()
        })
        .unwrap_or_else(|| panic!("no AERO-MEM-KB in:\n{serial}"))
        * 1024;
    Seen {
        usable_low,
        usable_high,
        highest_low_ram_end,
        mem_total,
    }
}

/// MemTotal is the usable RAM minus what the kernel keeps for itself (its image, page
/// structures, early allocations): a few percent, never more than the map offers.
fn assert_mem_total(s: &Seen, serial: &str) {
    let usable = s.usable_low + s.usable_high;
    assert!(
        s.mem_total <= usable && s.mem_total >= usable - usable / 16 - 64 * MIB,
        "MemTotal {} MiB for {} MiB of usable E820 RAM:\n{serial}",
        s.mem_total / MIB,
        usable / MIB
    );
}

/// The map both BIOSes must give a 4096 MiB guest; returns the serial text.
fn with_4096_mib(test: &str, image_name: &str, extra: &[&str]) -> String {
    let serial = boot(test, image_name, 4096, extra);
    let s = seen(&serial);
    // Low RAM runs to the tables just under the hole at 0xE000_0000, the rest at 4 GiB.
    assert_eq!(
        s.usable_high,
        4096 * MIB - 0xE000_0000,
        "RAM above 4 GiB:\n{serial}"
    );
    assert!(
        (0xDFF0_0000..=0xE000_0000).contains(&s.highest_low_ram_end),
        "low RAM ends at {:#x}:\n{serial}",
        s.highest_low_ram_end
    );
    assert!(s.usable_low > 0xDF00_0000, "{serial}");
    assert_mem_total(&s, &serial);
    // More than the 3.5 GiB below the hole: the kernel uses the RAM above 4 GiB.
    assert!(s.mem_total > 3800 * MIB, "MemTotal {}", s.mem_total);
    serial
}

/// A size below the hole: RAM from 1 MiB up to (just under) `mib`, the BIOS's tables in
/// what is left of it, nothing usable above.
fn below_the_hole(test: &str, mib: u64, extra: &[&str]) {
    let serial = boot(test, "linux-amd64.img", mib, extra);
    let s = seen(&serial);
    let top = mib * MIB;
    assert_eq!(s.usable_high, 0, "RAM above 4 GiB:\n{serial}");
    // The BIOS keeps its ACPI tables (ours) or a reserved block (SeaBIOS) at the top.
    assert!(
        (top - MIB..=top).contains(&s.highest_low_ram_end),
        "usable RAM ends at {:#x}, not just under {top:#x}:\n{serial}",
        s.highest_low_ram_end
    );
    assert!(
        e820(&serial).iter().any(|(_, end, _)| *end == top),
        "no E820 entry ends at {top:#x}:\n{serial}"
    );
    // Everything below the top but the 384 KiB legacy hole and the tables is usable.
    assert!(s.usable_low > top - 2 * MIB, "{serial}");
    assert_mem_total(&s, &serial);
}

#[test]
fn amd64_with_1024_mib_on_our_bios() {
    below_the_hole("1024-aero", 1024, &[]);
}

#[test]
fn amd64_with_1024_mib_on_seabios() {
    below_the_hole("1024-seabios", 1024, &["--bios", SEABIOS]);
}

#[test]
fn amd64_with_2048_mib_on_our_bios() {
    below_the_hole("2048-aero", 2048, &[]);
}

#[test]
fn amd64_with_2048_mib_on_seabios() {
    below_the_hole("2048-seabios", 2048, &["--bios", SEABIOS]);
}

#[test]
fn amd64_with_3072_mib_on_our_bios() {
    below_the_hole("3072-aero", 3072, &[]);
}

#[test]
fn amd64_with_3072_mib_on_seabios() {
    below_the_hole("3072-seabios", 3072, &["--bios", SEABIOS]);
}

#[test]
fn amd64_with_4096_mib_on_our_bios_has_ram_above_4_gib() {
    let serial = with_4096_mib("4096-aero", "linux-amd64.img", &[]);
    assert!(
        serial.contains("[mem 0x00000000e0000000-0x00000000efffffff] reserved"),
        "the ECAM part of the hole is reserved:\n{serial}"
    );
}

#[test]
fn amd64_with_4096_mib_on_seabios_has_ram_above_4_gib() {
    with_4096_mib("4096-seabios", "linux-amd64.img", &["--bios", SEABIOS]);
}

/// End (exclusive) of the kernel's HighMem zone from its "  HighMem  [mem A-B]" line.
fn highmem_zone_end(serial: &str) -> Option<u64> {
    serial.lines().find_map(|l| {
        let rest = l.split_once("HighMem ")?.1.trim_start();
        let range = rest.strip_prefix("[mem ")?.split_once(']')?.0;
        let end = range.split_once('-')?.1.trim_start_matches("0x");
        Some(u64::from_str_radix(end, 16).ok()? + 1)
    })
}

/// A 32-bit PAE kernel with 4096 MiB: the amd64 map, used through PAE page tables.
fn i386_pae_with_4096_mib(test: &str, extra: &[&str]) {
    let serial = with_4096_mib(test, "linux-i386-pae.img", extra);
    assert!(serial.contains("AERO-UNAME-M=i686"), "{serial}");
    assert!(
        serial
            .lines()
            .any(|l| l.contains("AERO-UNAME-R=") && l.trim_end().ends_with("-686-pae")),
        "not the 686-pae kernel:\n{serial}"
    );
    // NX lives in bit 63 of a PAE page-table entry: "active" means PAE paging is on.
    assert!(
        serial.contains("NX (Execute Disable) protection: active"),
        "no NX, so no PAE paging:\n{serial}"
    );
    // The direct map stops at ~896 MiB; everything else, up to the top of RAM above 4 GiB, is highmem.
    let highmem_end = highmem_zone_end(&serial);
    assert_eq!(
        highmem_end,
        Some(FOUR_GIB + 4096 * MIB - 0xE000_0000),
        "HighMem zone end:\n{serial}"
    );
}

#[test]
fn i386_pae_with_4096_mib_on_our_bios_has_ram_above_4_gib() {
    i386_pae_with_4096_mib("4096-pae-aero", &[]);
}

#[test]
fn i386_pae_with_4096_mib_on_seabios_has_ram_above_4_gib() {
    i386_pae_with_4096_mib("4096-pae-seabios", &["--bios", SEABIOS]);
}
