#!/usr/bin/env bash
# Network throughput benchmark (not a test): the Linux amd64 guest (the storage
# initramfs's e1000.ko with an /init of this script's) gets a DHCP lease from user-mode
# NAT and sends 32 MiB of zeros over one TCP connection to a receiver on the host's
# 127.0.0.1 (the guest's 10.0.2.2); the receiver times the transfer. Once on Aero (release
# build, --realtime, --nic user: libslirp) and once on `qemu-system-x86_64 -accel tcg -M pc`
# with `-device e1000` on `-netdev user` (libslirp too). Prints MB/s and the ratio.
#
#   bash tests/bench/net-throughput.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
images="${XDG_CACHE_HOME:-$HOME/.cache}/aero/images"
for f in linux-amd64.img vmlinuz-amd64 initrd-amd64-storage.img; do
    [ -f "$images/$f" ] || { echo "missing $images/$f: run bash tests/images/build.sh" >&2; exit 2; }
done
command -v qemu-system-x86_64 >/dev/null || { echo "qemu-system-x86_64 missing (apt-get install qemu-system-x86)" >&2; exit 2; }
# AERO_BIN=path uses an already built binary (e.g. target/ci/aero) instead.
aero="${AERO_BIN:-target/release/aero}"
[ -n "${AERO_BIN:-}" ] || cargo build --release -q -p aero

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bytes=$((32 << 20))

# The receiver: one connection, exactly $bytes bytes, then it closes and prints
# "BYTES SECONDS" (from the first byte to the last).
receiver() {
    python3 - "$1" "$bytes" <<'EOF'
import socket, sys, time
port_file, want = sys.argv[1], int(sys.argv[2])
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
open(port_file + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(port_file + ".tmp", port_file)
s.settimeout(300)
c, _ = s.accept()
got, start = 0, None
while got < want:
    data = c.recv(1 << 16)
    if not data:
        break
    if start is None:
        start = time.monotonic()
    got += len(data)
end = time.monotonic()
c.close()
print(got, end - (start or end))
EOF
}

# $1: receiver port. Writes the combined initrd to $work/initrd-$1.img.
make_initrd() {
    local port="$1" root="$work/root-$1"
    mkdir -p "$root"
    cat >"$root/init" <<EOF
#!/bin/sh
/bin/busybox mkdir -p /proc /sys /dev /tmp
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox --install -s /bin
exec >/dev/ttyS0 2>&1
insmod /lib/modules/e1000.ko
ip link set eth0 up
printf '#!/bin/sh\n[ "\$1" = bound ] && ifconfig "\$interface" "\$ip" netmask "\$subnet" && route add default gw "\$router"\n' >/bin/dhcp-event
chmod 0755 /bin/dhcp-event
udhcpc -i eth0 -s /bin/dhcp-event -q -n -t 10 -T 2 >/dev/null || echo AERO-BENCH-NO-LEASE
dd if=/dev/zero bs=65536 count=$((bytes / 65536)) 2>/dev/null | nc 10.0.2.2 $port
echo AERO-BENCH-DONE
poweroff -f
EOF
    chmod 0755 "$root/init"
    cp "$images/initrd-amd64-storage.img" "$work/initrd-$port.img"
    # Pad to 4 bytes, then a second archive whose /init wins.
    local size; size=$(stat -c %s "$work/initrd-$port.img")
    head -c $(( (4 - size % 4) % 4 )) /dev/zero >>"$work/initrd-$port.img"
    (cd "$root" && echo init | cpio --quiet -o -H newc -R 0:0) >>"$work/initrd-$port.img"
}

# $1: aero|qemu. Prints "BYTES SECONDS".
run() {
    local e="$1" port_file="$work/port-$1"
    receiver "$port_file" >"$work/result-$e" &
    local rpid=$!
    while [ ! -f "$port_file" ]; do sleep 0.05; done
    local port; port=$(cat "$port_file")
    make_initrd "$port"
    if [ "$e" = aero ]; then
        cp "$images/linux-amd64.img" "$work/disk.img"
        local start; start=$(od -An -tu4 -j454 -N4 "$work/disk.img" | tr -d ' ')
        mcopy -o -i "$work/disk.img@@$((start * 512))" "$work/initrd-$port.img" ::/initrd.img
        "$aero" headless --realtime --nic user --serial "$work/aero.log" \
            --until-serial AERO-BENCH-DONE --timeout 600 "$work/disk.img" >/dev/null
    else
        timeout 600 qemu-system-x86_64 -accel tcg -M pc -smp 1 -m 512 -display none -no-reboot \
            -kernel "$images/vmlinuz-amd64" -initrd "$work/initrd-$port.img" \
            -append "console=ttyS0,115200 panic=-1" \
            -netdev user,id=n0 -device e1000,netdev=n0,addr=03.0 \
            -serial "file:$work/qemu.log" -monitor none
    fi
    wait "$rpid"
    grep -q AERO-BENCH-DONE "$work/$e.log" || { echo "$e: no AERO-BENCH-DONE" >&2; tail -20 "$work/$e.log" >&2; exit 1; }
    cat "$work/result-$e"
}

read -r aero_bytes aero_s < <(run aero)
read -r qemu_bytes qemu_s < <(run qemu)
for r in "$aero_bytes" "$qemu_bytes"; do
    [ "$r" -eq "$bytes" ] || { echo "a transfer was cut short ($r of $bytes bytes)" >&2; exit 1; }
done
awk -v b="$bytes" -v a="$aero_s" -v q="$qemu_s" 'BEGIN {
    ra = b / a / 1e6; rq = b / q / 1e6
    printf "guest -> host TCP, %d MiB over e1000 + libslirp NAT\n", b / 1048576
    printf "aero      %8.1f MB/s (%.2f s)\nqemu-tcg  %8.1f MB/s (%.2f s)\naero/qemu %8.2f\n", ra, a, rq, q, ra / rq
}'
