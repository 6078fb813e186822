#!/usr/bin/env bash
# Builds Aero's boot-test guest images from Debian packages only.
#
#   tests/images/build.sh [--force]
#
# Downloads are cached in   ${XDG_CACHE_HOME:-$HOME/.cache}/aero/debs
# Images are written to     ${XDG_CACHE_HOME:-$HOME/.cache}/aero/images
#   linux-amd64.img   MBR disk, FAT16 partition, syslinux, amd64 kernel + busybox initramfs
#   linux-i386.img    same layout, kernel from debian-installer-12-netboot-i386, i386 busybox
#   linux-i386-pae.img  the same with the vmlinuz of linux-image-686-pae (PAE, NX, >4 GiB)
#   grub.img          MBR disk, GRUB 2 (i386-pc) menu without timeout, boots the amd64 Linux
#   linux-amd64.iso   isolinux El Torito no-emulation CD, same amd64 kernel + initramfs
#   linux-amd64-storage.iso  isolinux CD whose initramfs loads the kernel's ata_piix/ahci
#                     drivers, formats the first disk (FAT) on first boot, writes files and
#                     prints their checksum; later boots verify the files (storage tests)
#   linux-amd64-diskbench.iso  the same CD with aero.bench=disk: the init times sequential
#                     and random I/O on the (scratch) first disk instead (disk benchmark)
#   vmlinuz-amd64-6.12, initrd-amd64-vga16.img  Linux 6.12 (bookworm-security) and a busybox
#                     initramfs with its vgastate/vga16fb modules whose init draws through
#                     vga16fb (the vga16fb test boots them with a loader of its own)
# plus the raw parts (vmlinuz-amd64, initrd-amd64.img, vmlinuz-i386, initrd-i386.img)
# for direct -kernel boots and the QEMU boot-time benchmark.
#
# Idempotent: nothing is downloaded or rebuilt when the inputs (this script, the
# package versions) are unchanged. Needs root only to install missing host tools.
set -euo pipefail
# mtools and xorriso take file dates from here instead of the wall clock.
export SOURCE_DATE_EPOCH=946684800
export TZ=UTC

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/aero"
DEB_DIR="$CACHE_ROOT/debs"
OUT_DIR="$CACHE_ROOT/images"
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1

# Kernel command line shared by every image. The boot tests assert on log lines, so
# no `quiet`; ACPI, APIC and HPET stay enabled. panic=-1 turns a kernel panic into an
# immediate reboot so a failing guest ends quickly instead of hanging until timeout.
CMDLINE="console=ttyS0,115200 console=tty0 loglevel=7 panic=-1"

log() { printf '[build-images] %s\n' "$*" >&2; }
die() { printf '[build-images] error: %s\n' "$*" >&2; exit 1; }
# Name the failing command instead of exiting silently under set -e.
set -E
trap 'printf "[build-images] error: line %s: %s\n" "$LINENO" "$BASH_COMMAND" >&2' ERR

# --- host tools -----------------------------------------------------------------------

APT_UPDATED=0
apt_update_once() {
    if [[ $APT_UPDATED -eq 0 ]]; then
        log "apt-get update"
        # A partial failure (e.g. one mirror mid-sync) is not fatal: the packages we need
        # may still resolve; fetch_deb reports clearly if they do not.
        apt-get update -qq >&2 || log "warning: apt-get update reported errors, continuing"
        APT_UPDATED=1
    fi
}

# command -> Debian package providing it
declare -A HOST_TOOLS=(
    [syslinux]=syslinux
    [mcopy]=mtools
    [mkfs.fat]=dosfstools
    [xorriso]=xorriso
    [grub-mkimage]=grub-common
    [cpio]=cpio
    [qemu-img]=qemu-utils
    [xz]=xz-utils
)
# files (not commands) the images need from host packages
declare -A HOST_FILES=(
    [/usr/lib/syslinux/mbr/mbr.bin]=syslinux-common
    [/usr/lib/syslinux/modules/bios/ldlinux.c32]=syslinux-common
    [/usr/lib/syslinux/memdisk]=syslinux-common
    [/usr/lib/ISOLINUX/isolinux.bin]=isolinux
    [/usr/lib/grub/i386-pc/boot.img]=grub-pc-bin
)

ensure_host_tools() {
    local missing=() cmd file
    export PATH="$PATH:/usr/sbin:/sbin"
    for cmd in $(printf '%s\n' "${!HOST_TOOLS[@]}" | sort); do
        command -v "$cmd" >/dev/null 2>&1 || missing+=("${HOST_TOOLS[$cmd]}")
    done
    for file in $(printf '%s\n' "${!HOST_FILES[@]}" | sort); do
        [[ -e "$file" ]] || missing+=("${HOST_FILES[$file]}")
    done
    if [[ ${#missing[@]} -gt 0 ]]; then
        [[ $(id -u) -eq 0 ]] || die "missing host packages (need root to install): ${missing[*]}"
        apt_update_once
        log "installing host tools: ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            $(printf '%s\n' "${missing[@]}" | sort -u) >&2
    fi
}

# --- package downloads ---------------------------------------------------------------

# Candidate version of a package (PKG may carry an :arch suffix).
candidate_version() {
    apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2; exit}'
}

# Prints the path of the cached .deb for PKG[:ARCH], downloading it if needed.
fetch_deb() {
    local pkg="$1" version name arch deb
    version="$(candidate_version "$pkg")"
    if [[ -z "$version" || "$version" == "(none)" ]]; then
        apt_update_once
        version="$(candidate_version "$pkg")"
    fi
    [[ -n "$version" && "$version" != "(none)" ]] || die "no candidate version for $pkg"
    name="${pkg%%:*}"
    # apt-get download names files NAME_VERSION_ARCH.deb with ':' in the version escaped.
    deb="$(find "$DEB_DIR" -maxdepth 1 -name "${name}_$(printf '%s' "$version" | sed 's/:/%3a/g')_*.deb" \
        | { if [[ "$pkg" == *:* ]]; then arch="${pkg##*:}"; grep "_${arch}\.deb$\|_all\.deb$" || true; else grep -v '_i386\.deb$' || true; fi; } | head -n1)"
    if [[ -z "$deb" ]]; then
        log "downloading $pkg $version"
        (cd "$DEB_DIR" && apt-get download -q -o APT::Sandbox::User=root "$pkg=$version" >&2) \
            || die "apt-get download $pkg failed"
        deb="$(find "$DEB_DIR" -maxdepth 1 -name "${name}_$(printf '%s' "$version" | sed 's/:/%3a/g')_*.deb" \
            | { if [[ "$pkg" == *:* ]]; then arch="${pkg##*:}"; grep "_${arch}\.deb$\|_all\.deb$" || true; else grep -v '_i386\.deb$' || true; fi; } | head -n1)"
        [[ -n "$deb" ]] || die "downloaded $pkg but cannot find the .deb in $DEB_DIR"
    fi
    printf '%s\n' "$deb"
}

ensure_i386_arch() {
    if ! dpkg --print-foreign-architectures | grep -qx i386; then
        [[ $(id -u) -eq 0 ]] || die "need root to run: dpkg --add-architecture i386"
        log "enabling the i386 architecture for apt-get download"
        dpkg --add-architecture i386
        APT_UPDATED=0
        apt_update_once
    elif [[ -z "$(candidate_version busybox-static:i386)" || "$(candidate_version busybox-static:i386)" == "(none)" ]]; then
        apt_update_once
    fi
}

# Name of the versioned kernel package a linux-image meta package ($1, PKG[:ARCH]) depends
# on, with the meta package's :ARCH suffix kept.
resolve_kernel_pkg() {
    local meta suffix=""
    [[ "$1" == *:* ]] && suffix=":${1##*:}"
    meta="$(fetch_deb "$1")"
    dpkg-deb -f "$meta" Depends | tr ',' '\n' | sed 's/[[:space:]]*(.*//; s/^[[:space:]]*//' \
        | grep -m1 '^linux-image-[0-9]' | sed "s/\$/$suffix/" | grep . \
        || die "cannot resolve the kernel of $1"
}

# --- image pieces --------------------------------------------------------------------

# Writes the initramfs /init script to $1.
write_init() {
    cat >"$1" <<'EOF'
#!/bin/sh
# Aero boot-test init: report boot facts on serial and VGA, then power off.
/bin/busybox mkdir -p /proc /sys /dev /tmp
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox --install -s /bin

yesno() { if "$@" >/dev/null 2>&1; then echo yes; else echo no; fi; }

facts() {
    echo "AERO-BOOT-OK"
    echo "AERO-UNAME-M=$(uname -m)"
    echo "AERO-UNAME-R=$(uname -r)"
    echo "AERO-CPUS=$(grep -c '^processor' /proc/cpuinfo)"
    echo "AERO-MEM-KB=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
    echo "AERO-IRQ-LINES=$(grep -c . /proc/interrupts)"
    echo "AERO-IOAPIC=$(yesno grep -q IO-APIC /proc/interrupts)"
    echo "AERO-HPET-DMESG=$(yesno sh -c 'dmesg | grep -qi hpet')"
    echo "AERO-ACPI=$(yesno test -d /sys/firmware/acpi/tables)"
    echo "AERO-CLOCKSOURCE=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
    echo "AERO-CMDLINE=$(cat /proc/cmdline)"
    echo "AERO-BOOT-DONE"
}

facts >/tmp/facts 2>&1
cat /tmp/facts >/dev/ttyS0 2>/dev/null
# The VGA console gets a clean screen with the facts that do not depend on the firmware,
# the kernel version or timing, so a screenshot of it is the same on every BIOS.
{
    printf '\033[H\033[J'
    grep -v -e '^AERO-UNAME-R=' -e '^AERO-MEM-KB=' -e '^AERO-IRQ-LINES=' \
        -e '^AERO-CLOCKSOURCE=' -e '^AERO-CMDLINE=' /tmp/facts
} >/dev/tty0 2>/dev/null
sync
poweroff -f
# poweroff returns only if it failed; keep PID 1 alive so the failure is visible.
echo "AERO-POWEROFF-FAILED" >/dev/ttyS0
while :; do sleep 3600; done
EOF
    chmod 0755 "$1"
}

# Packs directory $1 into a gzip'd newc initramfs $2, reproducibly (fixed mtimes, sorted
# names, fixed owner).
pack_initramfs() {
    local root="$1" out="$2"
    find "$root" -exec touch -h -d @0 {} +
    (cd "$root" && find . -mindepth 1 | LC_ALL=C sort \
        | cpio --quiet -o -H newc -R 0:0 --reproducible) | gzip -n -9 >"$out.tmp"
    mv "$out.tmp" "$out"
    touch -d @"$SOURCE_DATE_EPOCH" "$out"
}

# Builds a gzip'd newc initramfs at $2 from the busybox .deb $1.
build_initramfs() {
    local deb="$1" out="$2" work
    work="$(mktemp -d)"
    mkdir -p "$work/deb" "$work/root/bin" "$work/root/dev" "$work/root/proc" \
        "$work/root/sys" "$work/root/tmp" "$work/root/root"
    dpkg-deb -x "$deb" "$work/deb"
    install -m 0755 "$work/deb/bin/busybox" "$work/root/bin/busybox"
    ln -s busybox "$work/root/bin/sh"
    write_init "$work/root/init"
    # Fixed mtimes and sorted names make the archive reproducible.
    pack_initramfs "$work/root" "$out"
    rm -rf "$work"
}

# Kernel modules the storage initramfs loads; module_order adds their dependencies.
# e1000 is for the network tests (crates/aero/tests/network.rs), which boot this
# initramfs with an /init of their own appended.
# The crc providers are loaded up front because the kernel would otherwise ask user space
# (modprobe) for them by alias.
STORAGE_MODULES=(crct10dif_generic crc64_rocksoft_generic ata_piix ahci sd_mod sr_mod
                 vfat nls_cp437 nls_utf8 nls_ascii isofs edd e1000)
# Sound modules for the HD Audio tests (crates/aero/tests/sound.rs), kept apart in
# /lib/modules/sound (with their own order file) so the storage init does not load them:
# the controller driver, the generic codec parser and the OSS emulation (/dev/dsp, which
# plays and records with plain read/write, so the guest needs no ALSA user space).
SOUND_MODULES=(snd-hda-intel snd-hda-codec-generic snd-pcm-oss)

# Prints module names in load order, dependencies (from each .ko's .modinfo) first.
# $1: directory holding the flat NAME.ko files; the rest: the modules wanted.
module_order() {
    local dir="$1"; shift
    local -A seen=()
    visit() {
        local m="$1" deps d
        [[ -n "${seen[$m]:-}" ]] && return 0
        seen[$m]=1
        [[ -f "$dir/$m.ko" ]] || die "module $m.ko is missing from the kernel package"
        deps="$(tr '\0' '\n' <"$dir/$m.ko" | sed -n 's/^depends=//p' | head -n1)"
        for d in ${deps//,/ }; do visit "$d"; done
        printf '%s\n' "$m"
    }
    local m
    for m in "$@"; do visit "$m"; done
}

# Writes the storage-test /init to $1.
write_storage_init() {
    cat >"$1" <<'EOF'
#!/bin/sh
# Aero storage-test init: load the disk drivers, then format + write (first boot) or
# verify (later boots) files on the first hard disk; report on serial and power off.
/bin/busybox mkdir -p /proc /sys /dev /tmp /mnt
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox --install -s /bin
exec >/dev/ttyS0 2>&1

for m in $(cat /lib/modules/order); do
    # libata: SATA asynchronous notification of ATAPI media changes (off by default).
    args=""
    [ "$m" = libata ] && args="atapi_an=1"
    if ! insmod "/lib/modules/$m.ko" $args; then
        # edd.ko refuses to load (ENODEV) when the BIOS reported no hard disk at all,
        # e.g. a CD-only machine; tests that expect EDD data check its lines below.
        if [ "$m" = edd ]; then echo "AERO-STORAGE-EDD=none"; else echo "AERO-STORAGE-INSMOD-FAILED=$m"; fi
    fi
done
# Drivers probe asynchronously: wait for the disk (up to ~20 s of guest time).
i=0
while [ ! -b /dev/sda ] && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
bound() { ls "/sys/bus/pci/drivers/$1" 2>/dev/null | grep -c '^0000:'; }
echo "AERO-STORAGE-ATA-PIIX=$(bound ata_piix)"
echo "AERO-STORAGE-AHCI=$(bound ahci)"
echo "AERO-STORAGE-BLOCK=$(ls /sys/block | grep -v '^loop' | grep -v '^ram' | tr '\n' ' ')"
# The PCI function behind sda (00:01.1 PIIX3 IDE, 00:05.0 AHCI).
echo "AERO-STORAGE-SDA-PATH=$(readlink /sys/block/sda)"
# Every disk's place (PCI function, ATA port, SCSI target).
for d in /sys/block/sd* /sys/block/sr*; do
    [ -e "$d" ] && echo "AERO-STORAGE-PATH-${d##*/}=$(readlink "$d")"
done
# EDD (edd.ko): what INT 13h 41h/48h told the kernel's real-mode setup about each BIOS
# hard disk; host_bus and interface exist only for a valid EDD 3.0 device path.
one_line() { [ -e "$1" ] && tr '\t\n' '  ' <"$1" | tr -s ' '; }
for d in /sys/firmware/edd/int13_dev*; do
    [ -e "$d" ] || continue
    echo "AERO-STORAGE-EDD-${d##*int13_dev}=version $(one_line "$d/version")| bus $(one_line "$d/host_bus")| if $(one_line "$d/interface")"
done
# Caching as the firmware left it: the MTRRs and whether the kernel turned PAT on.
echo "AERO-STORAGE-MTRR=$(tr '\n' ';' </proc/mtrr 2>/dev/null)"
echo "AERO-STORAGE-PAT=$(dmesg | grep -o 'x86/PAT: .*' | head -n1)"
# Disk benchmark (kernel command line aero.bench=disk, tests/bench/disk-io.sh): the first
# disk is a blank scratch disk. Each phase prints its start and end guest uptime; the host
# turns them into rates, so the guest clock must follow the host's (Aero --realtime).
disk_bench() {
    dev=/dev/sda mib=64 ops=256 fails=0
    blocks=$((mib * 256))
    # The same pseudo-random 4 KiB block numbers on every run (busybox awk, fixed seed).
    awk -v n=$ops -v max=$blocks 'BEGIN { srand(7); for (i = 0; i < n; i++) print int(rand() * max) }' >/tmp/offsets
    phase() { echo "AERO-BENCH-PHASE $1 $2 $3 $4"; }
    read -r t0 _ </proc/uptime
    dd if=/dev/zero of=$dev bs=1M count=$mib conv=fsync,notrunc 2>/dev/null || fails=$((fails + 1))
    read -r t1 _ </proc/uptime
    phase seq-write $((mib << 20)) "$t0" "$t1"
    # Reads must reach the disk, not the page cache.
    sync
    echo 3 >/proc/sys/vm/drop_caches
    read -r t0 _ </proc/uptime
    dd if=$dev of=/dev/null bs=1M count=$mib 2>/dev/null || fails=$((fails + 1))
    read -r t1 _ </proc/uptime
    phase seq-read $((mib << 20)) "$t0" "$t1"
    # Random 4 KiB: O_DIRECT so that every request goes to the disk; one dd per request.
    read -r t0 _ </proc/uptime
    while read -r o; do
        dd if=$dev of=/dev/null bs=4096 count=1 skip="$o" iflag=direct 2>/dev/null || fails=$((fails + 1))
    done </tmp/offsets
    read -r t1 _ </proc/uptime
    phase rand-read $ops "$t0" "$t1"
    read -r t0 _ </proc/uptime
    while read -r o; do
        dd if=/dev/zero of=$dev bs=4096 count=1 seek="$o" oflag=direct conv=notrunc 2>/dev/null \
            || fails=$((fails + 1))
    done </tmp/offsets
    sync
    read -r t1 _ </proc/uptime
    phase rand-write $ops "$t0" "$t1"
    # The same loop without a disk: what one dd process costs (part of every random op).
    read -r t0 _ </proc/uptime
    while read -r o; do dd if=/dev/zero of=/dev/null bs=4096 count=1 2>/dev/null; done </tmp/offsets
    read -r t1 _ </proc/uptime
    phase dd-only $ops "$t0" "$t1"
    echo "AERO-BENCH-FAILS=$fails"
    # Guest time since boot, for a check against the host's wall clock.
    read -r t1 _ </proc/uptime
    echo "AERO-BENCH-UPTIME=$t1"
    echo "AERO-BENCH-DONE"
}
# Crash test (crates/aero/tests/storage.rs): a disk whose first sector starts with
# AERO-CRASH-TEST gets numbered records, each made durable (fsync = FLUSH CACHE) before it
# is reported on serial; the host kills Aero at random moments and checks that every
# reported record is in the image. Record g is 256 KiB of the line "AERO-CRASH-GEN g" at
# byte offset g MiB; sector 1 holds "AERO-CRASH-LAST g", the newest record, so that the
# next boot continues after it. 30 records per boot.
crash_records() {
    dev=/dev/sda
    echo "AERO-CRASH-CACHE=$(cat /sys/block/sda/device/scsi_disk/*/cache_type)"
    last=$(dd if=$dev bs=512 skip=1 count=1 2>/dev/null | tr -d '\000' \
        | sed -n 's/^AERO-CRASH-LAST \([0-9][0-9]*\)$/\1/p')
    g=$((${last:-0} + 1))
    end=$((g + 30))
    echo "AERO-CRASH-START $g"
    while [ $g -lt $end ]; do
        yes "AERO-CRASH-GEN $g" | head -c 262144 >/tmp/record
        dd if=/tmp/record of=$dev bs=65536 seek=$((g * 16)) conv=notrunc,fsync 2>/dev/null \
            || echo "AERO-CRASH-WRITE-FAILED $g"
        printf 'AERO-CRASH-LAST %d\n' $g >/tmp/last
        dd if=/tmp/last of=$dev bs=512 seek=1 count=1 conv=sync,notrunc,fsync 2>/dev/null \
            || echo "AERO-CRASH-WRITE-FAILED $g"
        echo "AERO-CRASH-FLUSHED $g"
        g=$((g + 1))
    done
    echo "AERO-CRASH-DONE"
}
if [ -b /dev/sda ] && [ "$(dd if=/dev/sda bs=512 count=1 2>/dev/null | head -c 15)" = AERO-CRASH-TEST ]; then
    crash_records
    poweroff -f
fi
if grep -q 'aero.bench=disk' /proc/cmdline; then
    if [ -b /dev/sda ]; then disk_bench; else echo "AERO-BENCH-NO-DISK"; fi
    poweroff -f
fi
if [ ! -b /dev/sda ]; then
    echo "AERO-STORAGE-NO-DISK"
elif mount -t vfat /dev/sda /mnt 2>/dev/null; then
    echo "AERO-STORAGE-MODE=verify"
else
    echo "AERO-STORAGE-MODE=write"
    mkdosfs /dev/sda >/dev/null && mount -t vfat /dev/sda /mnt || echo "AERO-STORAGE-MKFS-FAILED"
    for n in 1 2 3 4; do seq "$n" 7 300000 >"/mnt/file$n.txt"; done
    sync
fi
if grep -q ' /mnt ' /proc/mounts; then
    echo "AERO-STORAGE-FILES=$(ls /mnt | tr '\n' ' ')"
    echo "AERO-STORAGE-SUM=$(cd /mnt && md5sum file1.txt file2.txt file3.txt file4.txt | md5sum | cut -d' ' -f1)"
    umount /mnt
fi
# The CD drive answers too (ATAPI through sr_mod): read its first blocks.
if [ -b /dev/sr0 ]; then
    echo "AERO-STORAGE-CD-SUM=$(dd if=/dev/sr0 bs=2048 count=32 2>/dev/null | md5sum | cut -d' ' -f1)"
fi
readable() { dd if="/dev/$1" of=/dev/null bs=2048 count=1 2>/dev/null; }
# A disc with a manifest.json (the guest tools ISO): mount its file system (Joliet names)
# and check every file it lists against its SHA-256.
for d in /sys/block/sr*; do
    n=${d##*/}
    [ -e "$d" ] && readable "$n" || continue
    mount -t iso9660 -o ro "/dev/$n" /mnt 2>/dev/null || continue
    if [ -f /mnt/manifest.json ]; then
        sed -n 's/.*"path": "\([^"]*\)".*"sha256": "\([^"]*\)".*/\2  \1/p' /mnt/manifest.json >/tmp/sums
        echo "AERO-STORAGE-TOOLS-ENTRIES=$(wc -l </tmp/sums)"
        (cd /mnt && sha256sum -c /tmp/sums 2>&1) | sed 's/^/AERO-STORAGE-TOOLS-CHECK /'
    fi
    umount /mnt
done
# Media change, when CD drives are empty at boot (the test adds them and a --monitor
# script): once the host put discs in, read each; once it took them out, see them gone.
cd_empty=""
for d in /sys/block/sr*; do
    [ -e "$d" ] && ! readable "${d##*/}" && cd_empty="$cd_empty ${d##*/}"
done
if [ -n "$cd_empty" ]; then
    # A drive with asynchronous notification (AHCI) makes the kernel send an
    # SDEV_MEDIA_CHANGE uevent per media change: log their devices.
    printf '#!/bin/sh\n[ -n "$SDEV_MEDIA_CHANGE" ] && echo "$DEVPATH" >>/tmp/media-change\n' >/bin/uevent-log
    chmod 0755 /bin/uevent-log
    : >/tmp/media-change
    uevent /bin/uevent-log &
    sleep 0.2
    echo "AERO-STORAGE-CD2-WAIT=$cd_empty"
    for n in $cd_empty; do
        i=0
        until readable "$n" || [ $i -ge 300 ]; do sleep 0.1; i=$((i + 1)); done
        echo "AERO-STORAGE-CD2-PATH-$n=$(readlink "/sys/block/$n")"
        echo "AERO-STORAGE-CD2-SUM-$n=$(dd if="/dev/$n" bs=2048 count=16 2>/dev/null | md5sum | cut -d' ' -f1)"
        echo "AERO-STORAGE-CD2-SIZE-$n=$(cat "/sys/block/$n/size")"
    done
    echo "AERO-STORAGE-CD2-READ"
    # Not holding a drive open (Linux locks the tray then) when the host ejects.
    sleep 1
    for n in $cd_empty; do
        i=0
        while readable "$n" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
        if readable "$n"; then gone=no; else gone=yes; fi
        echo "AERO-STORAGE-CD2-EJECTED-$n=$gone"
    done
    sleep 1
    for n in $cd_empty; do
        sdev=$(basename "$(readlink "/sys/block/$n/device")")
        echo "AERO-STORAGE-CD2-AN-EVENTS-$n=$(grep -c "/$sdev\$" /tmp/media-change)"
    done
fi
sync
echo "AERO-STORAGE-DONE"
poweroff -f
echo "AERO-POWEROFF-FAILED"
while :; do sleep 3600; done
EOF
    chmod 0755 "$1"
}

# Builds the storage-test initramfs at $3 from the busybox .deb $1 and the kernel .deb $2.
build_storage_initramfs() {
    local bb_deb="$1" kernel_deb="$2" out="$3" work kdir f
    work="$(mktemp -d)"
    mkdir -p "$work/deb" "$work/k" "$work/mods" "$work/root/bin" "$work/root/dev" "$work/root/proc" \
        "$work/root/sys" "$work/root/tmp" "$work/root/mnt" "$work/root/lib/modules"
    dpkg-deb -x "$bb_deb" "$work/deb"
    install -m 0755 "$work/deb/bin/busybox" "$work/root/bin/busybox"
    ln -s busybox "$work/root/bin/sh"
    dpkg-deb --fsys-tarfile "$kernel_deb" | tar -x -C "$work/k" --wildcards './lib/modules/*/kernel/*'
    kdir="$(find "$work/k/lib/modules" -mindepth 1 -maxdepth 1 -type d | head -n1)"
    # Flat NAME.ko files (module names are unique in the kernel tree).
    find "$kdir/kernel" -name '*.ko' -exec cp -t "$work/mods/" {} +
    module_order "$work/mods" "${STORAGE_MODULES[@]}" >"$work/root/lib/modules/order"
    while read -r f; do cp "$work/mods/$f.ko" "$work/root/lib/modules/"; done <"$work/root/lib/modules/order"
    mkdir -p "$work/root/lib/modules/sound"
    module_order "$work/mods" "${SOUND_MODULES[@]}" >"$work/root/lib/modules/sound/order"
    while read -r f; do cp "$work/mods/$f.ko" "$work/root/lib/modules/sound/"; done <"$work/root/lib/modules/sound/order"
    write_storage_init "$work/root/init"
    pack_initramfs "$work/root" "$out"
    rm -rf "$work"
}

# Writes the vga16fb-test /init to $1: binds Linux's vga16fb, draws through it, reports.
write_vga16_init() {
    cat >"$1" <<'EOF'
#!/bin/sh
# Aero vga16fb-test init. The loader left the VGA in mode 12h and told the kernel so
# (screen_info: mode 12h, VIDEO_TYPE_VGAC), so sysfb made the vga-framebuffer device;
# vga16fb binds it and fbcon takes tty1 over. Then fbcon draws text in all 16 colours
# (image blits: write modes 2 and 3, set/reset, bit mask, latches) and raw bytes go to
# /dev/fb0 (CPU writes through whatever the graphics controller holds). Kernel messages
# stay on COM1 and the cursor is off, so the screen is the same on every run.
/bin/busybox mkdir -p /proc /sys /dev /tmp
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox --install -s /bin
exec >/dev/ttyS0 2>&1
dmesg -n 1
insmod /lib/modules/vgastate.ko
insmod /lib/modules/vga16fb.ko
echo "AERO-FB=$(cat /proc/fb)"
echo "AERO-FB-SIZE=$(cat /sys/class/graphics/fb0/virtual_size 2>/dev/null)x$(cat /sys/class/graphics/fb0/bits_per_pixel 2>/dev/null)"
if ! grep -q VGA16 /proc/fb; then
    dmesg | grep -i -e vga -e fb -e sysfb
    ls /sys/bus/platform/devices
    echo "AERO-VGA16FB-MISSING"
    while :; do sleep 3600; done
fi
{
    printf '\033[?25l\033[H\033[2J'
    b=0
    while [ $b -lt 8 ]; do
        f=0
        while [ $f -lt 8 ]; do
            printf '\033[0;4%d;3%dm A%d%d \033[1mB%d%d ' $b $f $f $b $f $b
            f=$((f + 1))
        done
        printf '\033[0m\n'
        b=$((b + 1))
    done
    printf '\n\033[0;1;33;44m%s\033[0m\n' ' The quick brown fox jumps over the lazy dog 0123456789 '
} >/dev/tty1
# Bytes 0..255 over and over into rows 300..459 (80 bytes a row).
i=0
while [ $i -lt 256 ]; do printf "\\$(printf %o $i)"; i=$((i + 1)); done >/tmp/ramp
n=0
while [ $n -lt 50 ]; do cat /tmp/ramp; n=$((n + 1)); done >/tmp/pattern
dd if=/tmp/pattern of=/dev/fb0 bs=80 seek=300 count=160 2>/dev/null || echo "AERO-FB-WRITE-FAILED"
echo "AERO-VGA16FB-DRAWN"
while :; do sleep 3600; done
EOF
    chmod 0755 "$1"
}

# Builds the vga16fb initramfs at $3 from the busybox .deb $1 and the Linux 6.12 .deb $2:
# busybox, the vga16fb-test /init and the kernel's vgastate.ko and vga16fb.ko,
# decompressed (busybox insmod takes plain ELF).
build_vga16_initramfs() {
    local bb_deb="$1" kernel_deb="$2" out="$3" work m f
    work="$(mktemp -d)"
    mkdir -p "$work/deb" "$work/k" "$work/root/bin" "$work/root/dev" "$work/root/proc" \
        "$work/root/sys" "$work/root/tmp" "$work/root/lib/modules"
    dpkg-deb -x "$bb_deb" "$work/deb"
    install -m 0755 "$work/deb/bin/busybox" "$work/root/bin/busybox"
    ln -s busybox "$work/root/bin/sh"
    dpkg-deb --fsys-tarfile "$kernel_deb" | tar -x -C "$work/k" --wildcards \
        '*/vgastate.ko*' '*/vga16fb.ko*'
    for m in vgastate vga16fb; do
        f="$(find "$work/k" -name "$m.ko*" | head -n1)"
        [[ -n "$f" ]] || die "$m.ko is missing from $(basename "$kernel_deb")"
        case "$f" in
            *.xz) xz -dc "$f" >"$work/root/lib/modules/$m.ko" ;;
            *) cp "$f" "$work/root/lib/modules/$m.ko" ;;
        esac
    done
    write_vga16_init "$work/root/init"
    pack_initramfs "$work/root" "$out"
    rm -rf "$work"
}

# Appends a 16-byte MBR partition entry (LBA only; CHS fields saturated) to stdout.
mbr_entry_hex() {
    local boot="$1" type="$2" start="$3" count="$4"
    le32() { printf '%02x%02x%02x%02x' $(( $1 & 255 )) $(( ($1 >> 8) & 255 )) $(( ($1 >> 16) & 255 )) $(( ($1 >> 24) & 255 )); }
    printf '%s' "$boot" "feffff" "$type" "feffff" "$(le32 "$start")" "$(le32 "$count")"
}

# Writes an MBR partition table with one bootable partition into disk image $1.
write_partition_table() {
    local disk="$1" type="$2" start="$3" count="$4"
    local hex
    hex="$(mbr_entry_hex 80 "$type" "$start" "$count"; printf '%096d' 0; printf '55aa')"
    # hex digits -> bytes without xxd: "\xNN" escapes for printf %b.
    printf '%b' "$(printf '%s' "$hex" | sed 's/../\\x&/g')" \
        | dd of="$disk" bs=1 seek=446 conv=notrunc status=none
}

# Size in MiB for a FAT partition holding the given files, with slack, rounded to 4 MiB.
partition_mib_for() {
    local bytes
    bytes="$(du -cb "$@" | tail -n1 | cut -f1)"
    echo $(( ( (bytes >> 20) + 6 + 3 ) / 4 * 4 ))
}

PART_START=2048 # 1 MiB alignment, also leaves room for GRUB's core.img

# Creates an empty FAT16 partition image $1 of $2 MiB whose BPB knows its disk offset.
make_fat_partition() {
    local img="$1" mib="$2"
    rm -f "$img"
    # Fixed volume id and no label entry (mkfs.fat stamps it with the wall clock):
    # identical inputs give byte-identical images.
    mkfs.fat -F 16 -h "$PART_START" -i 0AE50B00 -C "$img" $(( mib * 1024 )) >/dev/null
}

# Puts partition image $2 into a fresh disk image $1 with boot code from $3 (440 bytes).
assemble_disk() {
    local disk="$1" part="$2" mbr="$3" sectors
    sectors=$(( $(stat -c %s "$part") / 512 ))
    rm -f "$disk.tmp"
    truncate -s $(( (PART_START + sectors) * 512 )) "$disk.tmp"
    dd if="$mbr" of="$disk.tmp" bs=440 count=1 conv=notrunc status=none
    write_partition_table "$disk.tmp" 0e "$PART_START" "$sectors"
    dd if="$part" of="$disk.tmp" bs=512 seek="$PART_START" conv=notrunc,sparse status=none
}

# $1: extra kernel command line arguments (optional).
syslinux_cfg() {
    cat <<EOF
SERIAL 0 115200
PROMPT 0
TIMEOUT 0
DEFAULT aero
LABEL aero
  LINUX /vmlinuz
  INITRD /initrd.img
  APPEND $CMDLINE${1:+ $1}
EOF
}

# syslinux-on-FAT MBR disk $1 booting kernel $2 with initramfs $3.
build_syslinux_disk() {
    local disk="$1" kernel="$2" initrd="$3" work mib
    work="$(mktemp -d)"
    syslinux_cfg >"$work/syslinux.cfg"
    touch -d @"$SOURCE_DATE_EPOCH" "$work/syslinux.cfg"
    mib="$(partition_mib_for "$kernel" "$initrd")"
    make_fat_partition "$work/part.img" "$mib"
    mcopy -m -i "$work/part.img" "$kernel" ::/vmlinuz
    mcopy -m -i "$work/part.img" "$initrd" ::/initrd.img
    mcopy -m -i "$work/part.img" "$work/syslinux.cfg" ::/syslinux.cfg
    syslinux --install "$work/part.img"
    assemble_disk "$disk" "$work/part.img" /usr/lib/syslinux/mbr/mbr.bin
    mv "$disk.tmp" "$disk"
    rm -rf "$work"
}

grub_cfg() {
    cat <<EOF
serial --unit=0 --speed=115200
terminal_input console serial
terminal_output console serial
# No countdown: the menu waits for a key so the boot test's screenshot is stable.
set timeout=-1
set default=0
menuentry 'Aero test: Linux amd64' {
    linux /vmlinuz $CMDLINE
    initrd /initrd.img
}
menuentry 'Aero test: Linux amd64 (second entry)' {
    linux /vmlinuz $CMDLINE aero.entry=2
    initrd /initrd.img
}
EOF
}

# GRUB 2 (i386-pc) MBR disk $1: boot.img in the MBR, core.img in the gap before the
# partition, modules and grub.cfg on the FAT partition. No loop devices are needed:
# core.img's own blocklist already points at the sectors following it.
build_grub_disk() {
    local disk="$1" kernel="$2" initrd="$3" work mib grubdir=/usr/lib/grub/i386-pc core_sectors
    work="$(mktemp -d)"
    grub_cfg >"$work/grub.cfg"
    touch -d @"$SOURCE_DATE_EPOCH" "$work/grub.cfg"
    printf 'set root=(hd0,msdos1)\nset prefix=(hd0,msdos1)/boot/grub\n' >"$work/early.cfg"
    grub-mkimage -O i386-pc -d "$grubdir" -c "$work/early.cfg" -p '(hd0,msdos1)/boot/grub' \
        -o "$work/core.img" biosdisk part_msdos fat normal linux serial terminal echo
    core_sectors=$(( ($(stat -c %s "$work/core.img") + 511) / 512 ))
    (( core_sectors < PART_START - 1 )) || die "core.img too large for the MBR gap"
    mib="$(partition_mib_for "$kernel" "$initrd" "$grubdir")"
    make_fat_partition "$work/part.img" "$mib"
    mcopy -m -i "$work/part.img" "$kernel" ::/vmlinuz
    mcopy -m -i "$work/part.img" "$initrd" ::/initrd.img
    mmd -i "$work/part.img" ::/boot ::/boot/grub ::/boot/grub/i386-pc
    mcopy -m -i "$work/part.img" "$work/grub.cfg" ::/boot/grub/grub.cfg
    mcopy -m -i "$work/part.img" "$grubdir"/*.mod "$grubdir"/*.lst ::/boot/grub/i386-pc/
    # GRUB's boot.img carries its own (empty) partition table; copy only its code.
    assemble_disk "$disk" "$work/part.img" "$grubdir/boot.img"
    dd if="$work/core.img" of="$disk.tmp" bs=512 seek=1 conv=notrunc status=none
    mv "$disk.tmp" "$disk"
    rm -rf "$work"
}

# isolinux El Torito no-emulation CD $1; $4: extra kernel command line arguments.
build_iso() {
    local iso="$1" kernel="$2" initrd="$3" extra="${4:-}" work
    work="$(mktemp -d)"
    mkdir -p "$work/iso/isolinux"
    cp /usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/modules/bios/ldlinux.c32 "$work/iso/isolinux/"
    syslinux_cfg "$extra" >"$work/iso/isolinux/isolinux.cfg"
    cp "$kernel" "$work/iso/vmlinuz"
    cp "$initrd" "$work/iso/initrd.img"
    find "$work/iso" -exec touch -h -d @"$SOURCE_DATE_EPOCH" {} +
    xorriso -as mkisofs -quiet -o "$iso.tmp" -V AERO_TEST -J -R \
        -b isolinux/isolinux.bin -c isolinux/boot.cat \
        -no-emul-boot -boot-load-size 4 -boot-info-table "$work/iso" 2>/dev/null \
        || die "xorriso failed"
    mv "$iso.tmp" "$iso"
    rm -rf "$work"
}

# Builds $1: an isolinux CD whose only entry runs syslinux's memdisk on the floppy image $2.
# memdisk copies the floppy into high memory, hooks INT 13h (and INT 15h to hide its
# copy from the memory map) and boots it as drive 00h: a real-mode program that chains
# the BIOS's own services.
build_memdisk_iso() {
    local iso="$1" floppy="$2" work
    work="$(mktemp -d)"
    mkdir -p "$work/iso/isolinux"
    cp /usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/modules/bios/ldlinux.c32 "$work/iso/isolinux/"
    cp /usr/lib/syslinux/memdisk "$work/iso/memdisk"
    cp "$floppy" "$work/iso/floppy.img"
    printf 'DEFAULT floppy\nLABEL floppy\n  KERNEL /memdisk\n  INITRD /floppy.img\n  APPEND floppy\n' \
        >"$work/iso/isolinux/isolinux.cfg"
    find "$work/iso" -exec touch -h -d @"$SOURCE_DATE_EPOCH" {} +
    xorriso -as mkisofs -quiet -o "$iso.tmp" -V AERO_MEMDISK -J -R \
        -b isolinux/isolinux.bin -c isolinux/boot.cat \
        -no-emul-boot -boot-load-size 4 -boot-info-table "$work/iso" 2>/dev/null \
        || die "xorriso failed"
    mv "$iso.tmp" "$iso"
    rm -rf "$work"
}

# --- main ----------------------------------------------------------------------------

main() {
    local start_ts; start_ts=$(date +%s)
    mkdir -p "$DEB_DIR" "$OUT_DIR"
    ensure_host_tools
    ensure_i386_arch

    local kpkg deb_kernel deb_kernel_pae deb_kernel_612 deb_bb64 deb_bb32 deb_di deb_memtest deb_grub_rescue stamp_inputs
    kpkg="$(resolve_kernel_pkg linux-image-amd64)"
    deb_kernel="$(fetch_deb "$kpkg")"
    # The 686-pae flavour: PAE paging, NX and RAM above 4 GiB for a 32-bit kernel (the
    # installer's kernel is the non-PAE 686 one). Only its vmlinuz is used.
    deb_kernel_pae="$(fetch_deb "$(resolve_kernel_pkg linux-image-686-pae:i386)")"
    # Linux 6.12 from bookworm-security: its sysfb creates the vga-framebuffer device for a
    # VGA in mode 12h, which 6.1's never does (the vga16fb test).
    deb_kernel_612="$(fetch_deb "$(resolve_kernel_pkg linux-image-6.12-amd64)")"
    deb_bb64="$(fetch_deb busybox-static:amd64)"
    deb_bb32="$(fetch_deb busybox-static:i386)"
    deb_di="$(fetch_deb debian-installer-12-netboot-i386)"
    deb_memtest="$(fetch_deb memtest86+)"
    deb_grub_rescue="$(fetch_deb grub-rescue-pc)"

    stamp_inputs="$( {
        sha256sum "$0" | cut -d' ' -f1
        basename -a "$deb_kernel" "$deb_kernel_pae" "$deb_kernel_612" "$deb_bb64" "$deb_bb32" "$deb_di" "$deb_memtest" "$deb_grub_rescue"
        for f in /usr/lib/syslinux/mbr/mbr.bin /usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/memdisk \
                 /usr/lib/grub/i386-pc/boot.img "$(command -v syslinux)"; do
            sha256sum "$f" | cut -d' ' -f1
        done
    } | sha256sum | cut -d' ' -f1)"
    local outputs=(linux-amd64.img linux-i386.img linux-i386-pae.img grub.img linux-amd64.iso linux-amd64-storage.iso
                   linux-amd64-diskbench.iso vmlinuz-amd64-6.12 initrd-amd64-vga16.img
                   vmlinuz-amd64 initrd-amd64.img initrd-amd64-storage.img vmlinuz-i386 vmlinuz-i386-pae initrd-i386.img
                   memtest86+x64.iso grub-rescue-floppy.img grub-rescue-cdrom.iso
                   debian-installer-i386.iso memdisk-floppy.iso)
    local all_present=1 o
    for o in "${outputs[@]}"; do [[ -s "$OUT_DIR/$o" ]] || all_present=0; done
    if [[ $FORCE -eq 0 && $all_present -eq 1 && -f "$OUT_DIR/.stamp" \
          && "$(cat "$OUT_DIR/.stamp")" == "$stamp_inputs" ]]; then
        log "images up to date in $OUT_DIR"
        return 0
    fi
    rm -f "$OUT_DIR/.stamp"

    WORK="$(mktemp -d)"
    trap 'rm -rf "$WORK"' EXIT
    local work="$WORK"

    log "extracting the amd64 kernel from $(basename "$deb_kernel")"
    dpkg-deb --fsys-tarfile "$deb_kernel" | tar -x -C "$work" --wildcards './boot/vmlinuz-*'
    cp "$(find "$work/boot" -name 'vmlinuz-*' | head -n1)" "$OUT_DIR/vmlinuz-amd64"
    touch -d @"$SOURCE_DATE_EPOCH" "$OUT_DIR/vmlinuz-amd64"

    log "extracting the i386 kernel and installer from $(basename "$deb_di")"
    local di_dir=./usr/lib/debian-installer/images/12/i386/text/debian-installer/i386
    local di_linux=$di_dir/linux
    dpkg-deb --fsys-tarfile "$deb_di" | tar -x -C "$work" "$di_linux" "$di_dir/initrd.gz"
    cp "$work/$di_linux" "$OUT_DIR/vmlinuz-i386"
    touch -d @"$SOURCE_DATE_EPOCH" "$OUT_DIR/vmlinuz-i386"

    log "extracting the i386 PAE kernel from $(basename "$deb_kernel_pae")"
    mkdir -p "$work/pae"
    dpkg-deb --fsys-tarfile "$deb_kernel_pae" | tar -x -C "$work/pae" --wildcards './boot/vmlinuz-*'
    cp "$(find "$work/pae/boot" -name 'vmlinuz-*' | head -n1)" "$OUT_DIR/vmlinuz-i386-pae"
    touch -d @"$SOURCE_DATE_EPOCH" "$OUT_DIR/vmlinuz-i386-pae"

    log "extracting the amd64 Linux 6.12 kernel from $(basename "$deb_kernel_612")"
    mkdir -p "$work/k612"
    dpkg-deb --fsys-tarfile "$deb_kernel_612" | tar -x -C "$work/k612" --wildcards './boot/vmlinuz-*'
    cp "$(find "$work/k612/boot" -name 'vmlinuz-*' | head -n1)" "$OUT_DIR/vmlinuz-amd64-6.12"
    touch -d @"$SOURCE_DATE_EPOCH" "$OUT_DIR/vmlinuz-amd64-6.12"

    # Debian's memtest86+ ISO boots through El Torito floppy emulation.
    log "extracting memtest86+x64.iso from $(basename "$deb_memtest")"
    dpkg-deb --fsys-tarfile "$deb_memtest" | tar -x -C "$work" ./usr/lib/memtest86+/memtest86+x64.iso
    cp "$work/usr/lib/memtest86+/memtest86+x64.iso" "$OUT_DIR/memtest86+x64.iso"
    touch -d @"$SOURCE_DATE_EPOCH" "$OUT_DIR/memtest86+x64.iso"

    # GRUB's rescue images: a 1.44 MB-class floppy and a hybrid CD/disk image.
    log "extracting the GRUB rescue images from $(basename "$deb_grub_rescue")"
    dpkg-deb --fsys-tarfile "$deb_grub_rescue" | tar -x -C "$work" ./usr/lib/grub-rescue/
    for o in grub-rescue-floppy.img grub-rescue-cdrom.iso; do
        cp "$work/usr/lib/grub-rescue/$o" "$OUT_DIR/$o"
        touch -d @"$SOURCE_DATE_EPOCH" "$OUT_DIR/$o"
    done

    log "building memdisk-floppy.iso"
    build_memdisk_iso "$OUT_DIR/memdisk-floppy.iso" "$OUT_DIR/grub-rescue-floppy.img"

    log "building initramfs images"
    build_initramfs "$deb_bb64" "$OUT_DIR/initrd-amd64.img"
    build_initramfs "$deb_bb32" "$OUT_DIR/initrd-i386.img"
    build_storage_initramfs "$deb_bb64" "$deb_kernel" "$OUT_DIR/initrd-amd64-storage.img"
    build_vga16_initramfs "$deb_bb64" "$deb_kernel_612" "$OUT_DIR/initrd-amd64-vga16.img"

    log "building linux-amd64.img"
    build_syslinux_disk "$OUT_DIR/linux-amd64.img" "$OUT_DIR/vmlinuz-amd64" "$OUT_DIR/initrd-amd64.img"
    log "building linux-i386.img"
    build_syslinux_disk "$OUT_DIR/linux-i386.img" "$OUT_DIR/vmlinuz-i386" "$OUT_DIR/initrd-i386.img"
    log "building linux-i386-pae.img"
    build_syslinux_disk "$OUT_DIR/linux-i386-pae.img" "$OUT_DIR/vmlinuz-i386-pae" "$OUT_DIR/initrd-i386.img"
    log "building grub.img"
    build_grub_disk "$OUT_DIR/grub.img" "$OUT_DIR/vmlinuz-amd64" "$OUT_DIR/initrd-amd64.img"
    log "building linux-amd64.iso"
    build_iso "$OUT_DIR/linux-amd64.iso" "$OUT_DIR/vmlinuz-amd64" "$OUT_DIR/initrd-amd64.img"
    # The Debian installer itself (text frontend) on an isolinux CD.
    log "building debian-installer-i386.iso"
    build_iso "$OUT_DIR/debian-installer-i386.iso" "$OUT_DIR/vmlinuz-i386" "$work/$di_dir/initrd.gz"
    log "building linux-amd64-storage.iso"
    build_iso "$OUT_DIR/linux-amd64-storage.iso" "$OUT_DIR/vmlinuz-amd64" "$OUT_DIR/initrd-amd64-storage.img"
    log "building linux-amd64-diskbench.iso"
    build_iso "$OUT_DIR/linux-amd64-diskbench.iso" "$OUT_DIR/vmlinuz-amd64" \
        "$OUT_DIR/initrd-amd64-storage.img" aero.bench=disk

    printf '%s\n' "$stamp_inputs" >"$OUT_DIR/.stamp"
    log "done in $(( $(date +%s) - start_ts ))s:"
    (cd "$OUT_DIR" && ls -l "${outputs[@]}" >&2)
}

main "$@"
