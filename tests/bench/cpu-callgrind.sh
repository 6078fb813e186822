#!/usr/bin/env bash
# Interpreter cost benchmark (not a test): host instructions per guest instruction on each
# `vs_qemu` loop (crates/aero-cpu/examples/vs_qemu.rs), counted by callgrind (exact and
# repeatable, unlike timings on a shared machine). Each loop runs alone at 1/SCALE of its
# iterations; the cost of a run with no loop (start-up, decoding) is subtracted.
#
#   bash tests/bench/cpu-callgrind.sh [SCALE]     (default 100; needs valgrind)
set -euo pipefail
cd "$(dirname "$0")/../.."
scale="${1:-100}"
command -v valgrind >/dev/null || { echo "valgrind missing (apt-get install valgrind)" >&2; exit 2; }
cargo build --release -q -p aero-cpu --example vs_qemu
bin=target/release/examples/vs_qemu
names=("" "integer loop" "memory copy" "branchy+calls" "x87 loop" "memory RMW")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Total host instructions of one run (`VS_QEMU_LOOPS=$1`); its report goes to $tmp/out.
host_instructions() {
    VS_QEMU_NO_QEMU=1 VS_QEMU_SCALE="$scale" VS_QEMU_LOOPS="$1" \
        valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$bin" >"$tmp/out" 2>"$tmp/err"
    grep -m1 '^summary:' "$tmp/cg" | awk '{print $2}'
}
base=$(host_instructions none)
printf '%-14s %12s %14s %12s\n' loop guest host host/guest
for k in 1 2 3 4 5; do
    ir=$(host_instructions "$k")
    guest=$(awk -v n="${names[$k]}" 'index($0, n) == 1 { print $(NF-4) }' "$tmp/out")
    awk -v n="${names[$k]}" -v g="$guest" -v ir="$ir" -v b="$base" \
        'BEGIN { printf "%-14s %12d %14d %12.1f\n", n, g, ir - b, (ir - b) / g }'
done
