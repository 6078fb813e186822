#!/usr/bin/env bash
# Windows 7 readiness without Windows: runs every check of the platform paths only Windows
# takes (issue "Windows 7 readiness") and prints one line per item: PASS/FAIL and what the
# check compares against. Every check is also part of the README test command; this script
# is the at-a-glance view.
#
#   bash tests/windows-readiness.sh            # all items
#   TEST386_DIR=/path/to/test386.asm bash tests/windows-readiness.sh
#                                             # also builds test386.asm and requires POST FF
set -uo pipefail
cd "$(dirname "$0")/.."
bash tests/install-deps.sh test >/dev/null
bash tests/images/build.sh >/dev/null

log_dir=${TMPDIR:-/tmp}/aero-windows-readiness
mkdir -p "$log_dir"
failed=0
results=()

# check NAME EVIDENCE NEXTEST-FILTER
check() {
  local name=$1 evidence=$2 filter=$3 log
  log="$log_dir/$(echo "$name" | tr -c 'a-zA-Z0-9' '_').log"
  if cargo nextest run --workspace --cargo-profile ci --no-fail-fast -E "$filter" >"$log" 2>&1; then
    results+=("PASS  $name — $evidence")
  else
    results+=("FAIL  $name — $evidence (log: $log)")
    failed=1
  fi
}

cargo build --profile ci -p aero --bins >/dev/null 2>&1 || { echo "build failed" >&2; exit 1; }

check "16-bit stacks (POP SS, stack-size mixes)" \
  "unit tests + 1200 generated stack cases diffed with QEMU TCG" \
  'binary_id(aero-cpu::stack_width) | binary_id(aero-cpu::qemu_diff)'
check "four IDE drives" \
  "disk, disk, media=cdrom, disk: slots unit test; Linux ata_piix sees each in its slot" \
  'test(four_ide_drives)'
check "MSRs" \
  "every MSR in 0-0x1FFF and 0xC0000000-0xC0001FFF read on Aero and QEMU -cpu core2duo; write checks; unknown MSRs logged once" \
  'binary_id(aero-cpu::cpu_model) & (test(msr) | test(rdtscp))'
check "CPU identity" \
  "CPUID leaves vs QEMU -cpu core2duo; /proc/cpuinfo and cpuid -r from a Linux guest on both" \
  'binary_id(aero-cpu::cpu_model) & test(cpuid) | binary_id(aero::cpu_identity)'
check "ACPI under acpiexec and iasl" \
  "every _STA/_CRS/_PRS/_SRS/_DIS/_PRT/_S5 evaluated in PIC and APIC mode, _SRS->_CRS round trips; iasl -d clean" \
  'package(aero-firmware) & test(/tool_tests/)'
check "VGA BIOS in the x64 HAL emulator" \
  "every INT 10h function with only the HAL emulator's memory visible equals a full-PC run; ROM is 386 code, INT 10h only" \
  'package(aero-firmware) & test(/hal_emu/)'
check "real mode from long mode and PAE" \
  "1000 round trips each for INT 13h 42h, E820, INT 10h; checksums equal on our BIOS, SeaBIOS and QEMU" \
  'binary_id(aero-machine::real_mode_round_trips)'
check "the clock Windows uses" \
  "RTC periodic 64/1024 Hz on IRQ 8 and HPET legacy replacement, counted by a Linux guest within 1%" \
  'binary_id(aero::clock)'
check "memory sizes" \
  "Linux amd64 with 1024, 2048, 3072 MiB (E820 ends at the size, MemTotal) and 4096 MiB (amd64 and i386 PAE: RAM above 4 GiB, NX, highmem) on both BIOSes" \
  'binary_id(aero::memory_sizes)'
check "MTRRs and PAT" \
  "BIOS MTRR writes as SeaBIOS's; Linux reports PAT on and /proc/mtrr equal to SeaBIOS's" \
  'test(mtrr)'
check "AHCI as msahci drives it" \
  "handoff, reset, COMRESET, IDENTIFY, DMA, NCQ, errors: registers and FISes diffed with QEMU ich9-ahci over qtest" \
  'binary_id(aero-storage::ahci_vs_qemu)'
check "bootvid and V86" \
  "presence check + mode 12h planar drawing equal to QEMU std-vga; Linux vga16fb (fbcon text, raw /dev/fb0 writes) equal to QEMU std-vga; INT 10h from V86 equal to real mode" \
  'binary_id(aero-machine::windows_video) | binary_id(aero-machine::vga16fb)'
check "EDD 3.0" \
  "INT 13h 48h buffers per size; Linux edd.ko reads version 3.0 and the PCI device path" \
  'test(edd)'

if [ -n "${TEST386_DIR:-}" ]; then
  if out=$(bash tests/test386.sh "$TEST386_DIR" 2>&1); then
    results+=("PASS  test386.asm — $out")
  else
    results+=("FAIL  test386.asm — $out")
    failed=1
  fi
else
  results+=("SKIP  test386.asm — set TEST386_DIR to a checkout of barotto/test386.asm (not redistributable here)")
fi

printf '%s\n' "${results[@]}"
exit $failed
