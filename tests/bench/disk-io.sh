#!/usr/bin/env bash
# Disk I/O benchmark (not a test): the Linux amd64 storage guest booted from
# linux-amd64-diskbench.iso (tests/images/build.sh; kernel command line aero.bench=disk)
# times, on a blank 128 MiB scratch disk on AHCI:
#   seq-write   64 MiB, dd bs=1M conv=fsync
#   seq-read    64 MiB, dd bs=1M after dropping the page cache
#   rand-read   256 x 4 KiB, dd iflag=direct at pseudo-random blocks (fixed seed)
#   rand-write  256 x 4 KiB, dd oflag=direct at the same blocks, then sync
#   dd-only     the same 256 dd processes without a disk (process cost in every random op)
# with the guest's /proc/uptime, once on Aero (release build, --realtime so that guest time
# is host time) and once on `qemu-system-x86_64 -accel tcg -M pc -smp 1` (disk on an
# ich9-ahci controller at 00:05.0, CD on the PIIX3 IDE secondary master: Aero's topology).
# Prints MB/s or IOPS per phase and the ratio Aero/QEMU (higher is better for Aero).
#
#   bash tests/bench/disk-io.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
iso_cached="${XDG_CACHE_HOME:-$HOME/.cache}/aero/images/linux-amd64-diskbench.iso"
[ -f "$iso_cached" ] || { echo "missing $iso_cached: run bash tests/images/build.sh" >&2; exit 2; }
command -v qemu-system-x86_64 >/dev/null || { echo "qemu-system-x86_64 missing (apt-get install qemu-system-x86)" >&2; exit 2; }
cargo build --release -q -p aero

# Scratch copies only: the cached images are never handed to an emulator for writing.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$iso_cached" "$work/bench.iso"
truncate -s 128M "$work/aero-disk.raw" "$work/qemu-disk.raw"

now() { date +%s.%N; }
t0=$(now)
target/release/aero headless --realtime --boot d --cdrom "$work/bench.iso" --hda "$work/aero-disk.raw" \
    --serial "$work/aero.log" --until-serial AERO-BENCH-DONE --timeout 600 >/dev/null
t1=$(now)
timeout 600 qemu-system-x86_64 -accel tcg -M pc -smp 1 -m 512 -display none -no-reboot -boot d \
    -drive "file=$work/bench.iso,media=cdrom,readonly=on" \
    -device ahci,id=ahci,addr=05.0 -drive "if=none,id=d0,file=$work/qemu-disk.raw,format=raw" \
    -device ide-hd,drive=d0,bus=ahci.0 \
    -serial "file:$work/qemu.log" -monitor none
t2=$(now)

for e in aero qemu; do
    log="$work/$e.log"
    if ! grep -q '^AERO-BENCH-DONE' "$log" || ! grep -q '^AERO-BENCH-FAILS=0' "$log"; then
        echo "$e: the benchmark did not complete cleanly; serial log tail:" >&2
        tail -n 20 "$log" >&2
        exit 1
    fi
    # The disk must be the AHCI one: the AHCI function is 00:05.0 on both machines.
    grep -q '^AERO-STORAGE-SDA-PATH=.*/0000:00:05\.0/ata' "$log" \
        || { echo "$e: the disk is not behind the AHCI function 00:05.0" >&2; grep SDA-PATH "$log" >&2; exit 1; }
done

# Phase lines: AERO-BENCH-PHASE NAME AMOUNT START END (bytes or ops; guest uptime seconds).
awk -v wall_aero="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
    -v wall_qemu="$(awk -v a="$t1" -v b="$t2" 'BEGIN { print b - a }')" '
    FNR == 1 { e = (FILENAME ~ /aero\.log$/) ? "aero" : "qemu" }
    { gsub(/\r/, "") }
    /^AERO-BENCH-PHASE / {
        name = $2; d = $5 - $4
        if (d <= 0) d = 0.01  # /proc/uptime has 10 ms steps
        rate[e, name] = (name ~ /^seq-/) ? $3 / d / 1e6 : $3 / d
        if (!(name in seen)) { seen[name] = 1; order[++n] = name }
    }
    /^AERO-BENCH-UPTIME=/ { sub(/^[^=]*=/, ""); uptime[e] = $0 + 0 }
    function row(p, unit, a, q) {
        printf "%-14s %9.1f %-4s %9.1f %-4s %8.2f\n", p, a, unit, q, unit, (q > 0) ? a / q : 0
    }
    END {
        printf "%-14s %14s %14s %8s\n", "phase", "aero", "qemu-tcg", "aero/qemu"
        for (i = 1; i <= n; i++) {
            p = order[i]
            row(p, (p ~ /^seq-/) ? "MB/s" : "IOPS", rate["aero", p], rate["qemu", p])
        }
        for (k = 1; k <= 2; k++) {
            e = (k == 1) ? "aero" : "qemu"; w = (k == 1) ? wall_aero : wall_qemu
            printf "%s: guest uptime at the end %.1f s, host wall time of the whole run %.1f s\n", e, uptime[e], w
            # Firmware and process start-up come on top of the guest uptime, never less.
            if (uptime[e] > w * 1.02) printf "warning: %s guest clock ran faster than the host: rates are off\n", e
        }
    }' "$work/aero.log" "$work/qemu.log"
