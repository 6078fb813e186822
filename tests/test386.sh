#!/usr/bin/env bash
# Builds test386.asm (barotto's 386 conformance ROM; its source is not part of this
# repository) from a checkout the user provides and runs it on Aero as the system BIOS, in
# both ROM sizes. Passes when the POST log reaches FFh and the port E9h output equals the
# suite's own reference output.
#
#   bash tests/test386.sh /path/to/test386.asm
set -euo pipefail
src=${1:?usage: test386.sh TEST386_CHECKOUT}
cd "$(dirname "$0")/.."
command -v nasm >/dev/null || {
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nasm >/dev/null
}
cargo build -q --profile ci -p aero --bin aero
aero=target/ci/aero

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
summary=()
for rom128 in 0 1; do
  dir="$work/rom$rom128"
  cp -r "$src" "$dir"
  # POST codes to port 80h (--post-log), results to port E9h (--debugcon).
  sed -i -e 's/^POST_PORT equ .*/POST_PORT equ 0x80/' -e 's/^OUT_PORT equ .*/OUT_PORT equ 0xE9/' \
         -e "s/^ROM128 equ .*/ROM128 equ $rom128/" "$dir/src/configuration.asm"
  (cd "$dir" && nasm -i./src/ -f bin src/test386.asm -w-all -o test386.bin)
  # The ROM halts after POST FF, so the run ends on its timeout: judge by the logs.
  "$aero" headless --bios "$dir/test386.bin" --post-log "$dir/post.log" \
    --debugcon "$dir/e9.txt" --timeout 20 >/dev/null 2>&1 || true
  last=$(tail -n 1 "$dir/post.log" | tr 'A-F' 'a-f')
  if [ "$last" != ff ]; then
    echo "ROM128=$rom128 stopped at POST $last"
    exit 1
  fi
  if ! cmp -s "$dir/e9.txt" "$dir/test386-EE-reference.txt"; then
    echo "ROM128=$rom128 reached POST FF but its E9h output differs from test386-EE-reference.txt"
    exit 1
  fi
  summary+=("ROM128=$rom128: POST FF, E9h output equals the reference")
done
echo "${summary[*]}"
