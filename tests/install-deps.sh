#!/usr/bin/env bash
# Installs the Debian packages Aero needs. Usage: install-deps.sh run|test
# Runs apt-get only when something is missing, so repeated runs cost nothing.
set -euo pipefail
what=${1:-test}

run_pkgs=(pkg-config)
test_pkgs=(qemu-system-x86 qemu-utils seabios acpica-tools busybox-static syslinux syslinux-common
           gcc-mingw-w64-i686 gcc-mingw-w64-x86-64 g++-mingw-w64-i686 g++-mingw-w64-x86-64 dmidecode
           extlinux isolinux grub-pc-bin grub-common xorriso mtools dosfstools cpio fdisk)

pkgs=("${run_pkgs[@]}")
[ "$what" = test ] && pkgs+=("${test_pkgs[@]}")

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v cargo >/dev/null || { echo "error: Rust (cargo) is needed: https://rustup.rs" >&2; exit 2; }
# 32-bit host headers for the ABI layout checks (only exists on amd64 hosts).
if [ "$what" = test ] && [ "$(dpkg --print-architecture)" = amd64 ] && ! dpkg-query -W -f='${Status}' gcc-multilib 2>/dev/null | grep -q "install ok installed"; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends gcc-multilib >/dev/null
fi
