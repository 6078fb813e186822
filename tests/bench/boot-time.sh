#!/usr/bin/env bash
# Boot-time benchmark (not a test): the Linux amd64 test guest (tests/images/build.sh) boots
# to its AERO-BOOT-DONE marker on Aero (release build, deterministic mode) and on
# `qemu-system-x86_64 -accel tcg -smp 1`, same disk image, same kernel and initramfs.
# Prints both wall-clock times and the ratio Aero/QEMU (lower is better).
#
#   bash tests/bench/boot-time.sh [IMAGE]      (default: the amd64 syslinux disk)
set -euo pipefail
cd "$(dirname "$0")/../.."
img="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/aero/images/linux-amd64.img}"
[ -f "$img" ] || { echo "missing $img: run bash tests/images/build.sh" >&2; exit 2; }
command -v qemu-system-x86_64 >/dev/null || { echo "qemu-system-x86_64 missing (apt-get install qemu-system-x86)" >&2; exit 2; }
cargo build --release -q -p aero

now() { date +%s.%N; }
t0=$(now)
target/release/aero headless --snapshot --serial /dev/null --until-serial AERO-BOOT-DONE --timeout 300 "$img" >/dev/null
t1=$(now)
# QEMU: wait for the same marker on its serial console, then stop it.
log=$(mktemp)
qemu-system-x86_64 -accel tcg -M pc -smp 1 -m 512 -display none -no-reboot \
    -drive "file=$img,format=raw,snapshot=on" -serial "file:$log" -monitor none &
qpid=$!
while ! grep -q AERO-BOOT-DONE "$log" 2>/dev/null; do
    kill -0 "$qpid" 2>/dev/null || { echo "QEMU exited before the marker" >&2; exit 1; }
    sleep 0.05
done
t2=$(now)
kill "$qpid" 2>/dev/null || true  # it may have powered off already
wait "$qpid" 2>/dev/null || true
rm -f "$log"
awk -v t0="$t0" -v t1="$t1" -v t2="$t2" \
    'BEGIN { a = t1 - t0; q = t2 - t1; printf "aero %.2f s   qemu-tcg %.2f s   ratio aero/qemu %.2f\n", a, q, a / q }'
