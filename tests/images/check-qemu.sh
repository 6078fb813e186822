#!/usr/bin/env bash
# Boots the images made by build.sh under QEMU TCG and checks that each one reaches the
# initramfs marker and powers off. This is the reference oracle for Aero's boot tests
# and the QEMU half of the boot-time benchmark.
#
#   tests/images/check-qemu.sh [--bios FILE] [--timeout SECONDS] [IMAGE...]
#
# IMAGE is one of: linux-amd64 linux-i386 grub cdrom kernel-amd64 (default: all but
# kernel-amd64). kernel-amd64 boots vmlinuz-amd64 + initrd-amd64.img via -kernel.
# For every image one line is printed:
#   PASS linux-amd64 seconds=6.21 log=/path/to/serial.log
# or FAIL with the reason; the exit status is non-zero if any image failed.
set -euo pipefail

CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/aero"
IMG_DIR="$CACHE_ROOT/images"
LOG_DIR="$IMG_DIR/logs"
TIMEOUT=180
BIOS_ARGS=()
IMAGES=()

while [[ $# -gt 0 ]]; do
    case "$1" in
        --bios) BIOS_ARGS=(-bios "$2"); shift 2 ;;
        --timeout) TIMEOUT="$2"; shift 2 ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) IMAGES+=("$1"); shift ;;
    esac
done
[[ ${#IMAGES[@]} -gt 0 ]] || IMAGES=(linux-amd64 linux-i386 grub cdrom)

command -v qemu-system-x86_64 >/dev/null || { echo "qemu-system-x86_64 not found (apt-get install qemu-system-x86)" >&2; exit 2; }
mkdir -p "$LOG_DIR"

QEMU_BASE=(qemu-system-x86_64 -accel tcg -M pc -smp 1 -m 512 -nographic -no-reboot "${BIOS_ARGS[@]}")

# Media arguments and the expected `uname -m` per image.
media_args() {
    case "$1" in
        linux-amd64) echo "-drive file=$IMG_DIR/linux-amd64.img,format=raw,snapshot=on -boot c" ;;
        linux-i386)  echo "-drive file=$IMG_DIR/linux-i386.img,format=raw,snapshot=on -boot c" ;;
        grub)        echo "-drive file=$IMG_DIR/grub.img,format=raw,snapshot=on -boot c" ;;
        cdrom)       echo "-cdrom $IMG_DIR/linux-amd64.iso -boot d" ;;
        kernel-amd64) echo "-kernel $IMG_DIR/vmlinuz-amd64 -initrd $IMG_DIR/initrd-amd64.img" ;;
        *) return 1 ;;
    esac
}
expected_arch() { case "$1" in linux-i386) echo i686 ;; *) echo x86_64 ;; esac; }

# Runs one image; serial output goes to $2. GRUB waits in its menu (no timeout), so
# for it we type Enter on the serial console once the menu is visible.
run_qemu() {
    local name="$1" log="$2" fifo pid rc=0 waited=0 sent=0
    local -a args
    read -r -a args <<<"$(media_args "$name")"
    if [[ "$name" == kernel-amd64 ]]; then
        args+=(-append "console=ttyS0,115200 console=tty0 loglevel=7 panic=-1")
    fi
    fifo="$(mktemp -u)"; mkfifo "$fifo"
    exec {in_fd}<>"$fifo"
    "${QEMU_BASE[@]}" "${args[@]}" <&"$in_fd" >"$log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        if [[ "$name" == grub && $sent -eq 0 ]] && grep -aq 'Aero test: Linux amd64' "$log"; then
            sleep 0.5
            printf '\r' >&"$in_fd"
            sent=1
        fi
        if (( waited >= TIMEOUT * 10 )); then
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            exec {in_fd}>&-; rm -f "$fifo"
            return 124
        fi
        sleep 0.1
        waited=$(( waited + 1 ))
    done
    wait "$pid" || rc=$?
    exec {in_fd}>&-; rm -f "$fifo"
    return "$rc"
}

# Checks the serial log of a finished run; prints a reason and fails if anything is off.
check_log() {
    local name="$1" log="$2" arch
    arch="$(expected_arch "$name")"
    local -a required=(
        "AERO-BOOT-OK"
        "AERO-UNAME-M=$arch"
        "AERO-ACPI=yes"
        "AERO-IOAPIC=yes"
        "AERO-HPET-DMESG=yes"
        "AERO-BOOT-DONE"
        "reboot: Power down"
    )
    [[ "$name" == grub ]] && required=("GNU GRUB" "${required[@]}")
    local line
    for line in "${required[@]}"; do
        grep -aqF "$line" "$log" || { echo "missing '$line'"; return 1; }
    done
}

failed=0
for name in "${IMAGES[@]}"; do
    if ! media_args "$name" >/dev/null; then
        echo "FAIL $name unknown image name"; failed=1; continue
    fi
    log="$LOG_DIR/$name.qemu.log"
    t0=$(date +%s.%N)
    rc=0; run_qemu "$name" "$log" || rc=$?
    t1=$(date +%s.%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    if [[ $rc -eq 124 ]]; then
        echo "FAIL $name timeout after ${TIMEOUT}s log=$log"; failed=1
    elif [[ $rc -ne 0 ]]; then
        echo "FAIL $name qemu exit status $rc log=$log"; failed=1
    elif ! reason="$(check_log "$name" "$log")"; then
        echo "FAIL $name $reason log=$log"; failed=1
    else
        echo "PASS $name seconds=$secs log=$log"
    fi
done
exit "$failed"
