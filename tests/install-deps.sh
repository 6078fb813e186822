#!/usr/bin/env bash
# Installs the Debian packages Aero needs. Usage: install-deps.sh run|test
# Runs apt-get only when something is missing, so repeated runs cost nothing.
set -euo pipefail
what=${1:-test}

# libasound2-dev, libudev-dev: sound (cpal) and gamepads (gilrs) of the `aero run` window;
# libslirp-dev: user-mode NAT behind the e1000 (`--nic user`, QEMU's library).
run_pkgs=(pkg-config libasound2-dev libudev-dev libslirp-dev)
test_pkgs=(qemu-system-x86 qemu-utils seabios acpica-tools busybox-static syslinux syslinux-common
           gcc-mingw-w64-i686 gcc-mingw-w64-x86-64 g++-mingw-w64-i686 g++-mingw-w64-x86-64 dmidecode
           binutils-mingw-w64-i686 binutils-mingw-w64-x86-64 openssl osslsigncode
           extlinux isolinux grub-pc-bin grub-common xorriso mtools dosfstools cpio fdisk
           xz-utils        # unxz: the vmlinux the kernel_boot test boots through PVH
           xvfb xdotool imagemagick python3 mesa-vulkan-drivers openbox wine64 cpuid
           gcc libc6-dev   # gcc -static: the clock test's guest probe
           iproute2)       # ip tuntap: the network test's TAP interface

pkgs=("${run_pkgs[@]}")
[ "$what" = test ] && pkgs+=("${test_pkgs[@]}")

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo

# A mirror in the middle of a sync makes `apt-get update` fail for one index while the
# rest is fine: retry, and go on with whatever indexes we have; the install decides.
apt_update() {
  for i in 1 2 3; do
    $sudo apt-get update -qq && return 0
    echo "apt-get update failed (attempt $i); retrying" >&2
    sleep $((i * 5))
  done
  echo "warning: apt-get update kept failing; installing from the indexes we have" >&2
}
apt_install() {
  for i in 1 2 3; do
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null && return 0
    echo "apt-get install failed (attempt $i); refreshing indexes and retrying" >&2
    apt_update
  done
  echo "error: could not install: $*" >&2
  exit 1
}

# 32-bit host headers for the ABI layout checks (only exists on amd64 hosts).
if [ "$what" = test ] && [ "$(dpkg --print-architecture)" = amd64 ] && \
   ! dpkg-query -W -f='${Status}' gcc-multilib 2>/dev/null | grep -q "install ok installed"; then
  missing+=(gcc-multilib)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  # Indexes already on the machine are usually good enough; fetch them only when the
  # install cannot find what it needs (apt_install refreshes on failure).
  if ! compgen -G "/var/lib/apt/lists/*_Packages*" >/dev/null; then
    apt_update
  fi
  apt_install "${missing[@]}"
fi
command -v cargo >/dev/null || { echo "error: Rust (cargo) is needed: https://rustup.rs" >&2; exit 2; }
