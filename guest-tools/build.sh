#!/bin/sh
# Builds the AeroGPU Windows 7 guest drivers with mingw-w64 (Debian packages
# gcc-mingw-w64-i686, gcc-mingw-w64-x86-64, g++-mingw-w64-i686, g++-mingw-w64-x86-64,
# binutils-mingw-w64-i686, binutils-mingw-w64-x86-64).
#
#   guest-tools/build.sh [OUT_DIR]      (default: guest-tools/out)
#
# Produces OUT_DIR/{x86,amd64}/aerogpu/: aerogpu.sys, aerogpu_d3d9.dll (x86) /
# aerogpu_d3d9_x64.dll + the WOW64 aerogpu_d3d9.dll (amd64), aerogpu_dbgctl.exe,
# aerogpu.inf; OUT_DIR/certs/aero-test.cer; setup.cmd, uninstall.cmd.
# Deterministic: no timestamps in the PE headers (--no-insert-timestamp), fixed build
# paths via -ffile-prefix-map, signatures without signing time.
#
# Signing (openssl + osslsigncode): a self-made test certificate is generated at build
# time into $AERO_SIGN_DIR (default OUT_DIR/signing-key; the private key never leaves it, is
# never packaged or committed); every PE is signed with an Authenticode SHA-1 digest, which stock
# Windows 7 accepts. AERO_NO_SIGN=1 skips signing.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-"$HERE/out"}
DRV="$HERE/drivers/aerogpu"
DDK=/usr/share/mingw-w64/include/ddk

for t in i686-w64-mingw32-gcc x86_64-w64-mingw32-gcc i686-w64-mingw32-g++ x86_64-w64-mingw32-g++ \
         i686-w64-mingw32-dlltool x86_64-w64-mingw32-dlltool; do
    if ! command -v "$t" >/dev/null 2>&1; then
        echo "missing $t: apt-get install gcc-mingw-w64-i686 gcc-mingw-w64-x86-64 g++-mingw-w64-i686 g++-mingw-w64-x86-64" >&2
        exit 127
    fi
done

COMMON_CFLAGS="-O2 -Wall -Wextra -Werror -Wno-unused-parameter -fno-ident -ffile-prefix-map=$HERE=guest-tools"
KM_CFLAGS="-std=gnu11 -ffreestanding -fno-stack-protector -fno-builtin -mno-stack-arg-probe \
  -D_WIN32_WINNT=0x0601 -DNTDDI_VERSION=0x06010000 -I$DDK"
DET_LDFLAGS="-s -Wl,--no-insert-timestamp -Wl,--major-os-version,6 -Wl,--minor-os-version,1 \
  -Wl,--major-subsystem-version,6 -Wl,--minor-subsystem-version,1"

build_arch() {
    arch=$1 triple=$2 dir="$OUT/$3/aerogpu"
    mkdir -p "$dir" "$OUT/obj/$3"
    obj="$OUT/obj/$3"
    if [ "$arch" = x86 ]; then
        entry=_DriverEntry@8 km_extra="-fno-asynchronous-unwind-tables" dll=aerogpu_d3d9.dll def="$DRV/umd/aerogpu_d3d9_x86.def"
        kdef="$DRV/kmd/lib/dxgkrnl_x86.def" killat="-k"
    else
        entry=DriverEntry km_extra="-mno-red-zone -mcmodel=small" dll=aerogpu_d3d9_x64.dll
        def="$DRV/umd/aerogpu_d3d9_x64.def" kdef="$DRV/kmd/lib/dxgkrnl_x64.def" killat=""
    fi

    echo "[$arch] dxgkrnl import library"
    "$triple-dlltool" $killat -d "$kdef" -l "$obj/libdxgkrnl.a"

    echo "[$arch] aerogpu.sys"
    # shellcheck disable=SC2086
    "$triple-gcc" $COMMON_CFLAGS $KM_CFLAGS $km_extra -nostdlib -nostartfiles \
        -Wl,--subsystem,native -Wl,--entry,$entry -Wl,--image-base,0x10000 \
        -Wl,--file-alignment,0x200 -Wl,--section-alignment,0x1000 -Wl,--dynamicbase -Wl,--nxcompat \
        -Wl,--exclude-all-symbols -Wl,--enable-reloc-section $DET_LDFLAGS \
        -o "$dir/aerogpu.sys" \
        "$DRV/kmd/src/aerogpu_kmd.c" "$DRV/kmd/src/aerogpu_memory.c" "$DRV/kmd/src/aerogpu_vidpn.c" \
        "$DRV/kmd/portable/agpu_kmd_portable.c" \
        -L"$obj" -ldxgkrnl -lntoskrnl -lhal -lgcc

    if [ -d "$DRV/umd" ]; then
        echo "[$arch] $dll"
        # shellcheck disable=SC2086
        "$triple-g++" $COMMON_CFLAGS -std=c++17 -fno-exceptions -fno-rtti -shared \
            -static-libgcc -static-libstdc++ $DET_LDFLAGS -Wl,--subsystem,windows \
            -Wl,--disable-auto-image-base -Wl,--dynamicbase -Wl,--nxcompat \
            -o "$dir/$dll" "$def" \
            "$DRV/umd/src/aerogpu_umd_core.cpp" "$DRV/umd/src/aerogpu_umd_core_draw.cpp" "$DRV/umd/src/aerogpu_umd_core_copy.cpp" "$DRV/umd/src/aerogpu_umd_ddi.cpp" "$DRV/umd/src/aerogpu_umd_caps.cpp" \
            "$DRV/umd/src/aerogpu_umd_legacy.cpp" "$DRV/umd/src/aerogpu_umd_ff.cpp" \
            "$DRV/umd/src/aerogpu_umd_win.cpp" \
            -lkernel32
    fi

    if [ -d "$DRV/tools/dbgctl" ]; then
        echo "[$arch] aerogpu_dbgctl.exe"
        # shellcheck disable=SC2086
        "$triple-gcc" $COMMON_CFLAGS -std=c11 $DET_LDFLAGS -municode -Wl,--subsystem,console \
            -o "$dir/aerogpu_dbgctl.exe" "$DRV/tools/dbgctl/aerogpu_dbgctl.c" -lgdi32
    fi
}

build_arch x86 i686-w64-mingw32 x86
build_arch x64 x86_64-w64-mingw32 amd64

echo "[package] INF, scripts, WOW64 UMD"
for a in x86 amd64; do cp "$DRV/packaging/aerogpu.inf" "$OUT/$a/aerogpu/aerogpu.inf"; done
cp "$OUT/x86/aerogpu/aerogpu_d3d9.dll" "$OUT/amd64/aerogpu/aerogpu_d3d9.dll"
cp "$HERE/scripts/setup.cmd" "$HERE/scripts/uninstall.cmd" "$OUT/"

if [ "${AERO_NO_SIGN:-0}" != 1 ]; then
    for t in openssl osslsigncode; do
        if ! command -v "$t" >/dev/null 2>&1; then
            echo "missing $t: apt-get install openssl osslsigncode (or AERO_NO_SIGN=1)" >&2
            exit 127
        fi
    done
    SIGN_DIR=${AERO_SIGN_DIR:-"$OUT/signing-key"}
    mkdir -p "$SIGN_DIR" "$OUT/certs"
    if [ ! -f "$SIGN_DIR/aero-test.key" ]; then
        echo "[sign] generating the test certificate in $SIGN_DIR"
        openssl req -x509 -newkey rsa:2048 -sha256 -nodes -days 3650 \
            -subj "/CN=Aero Test Signing" \
            -addext "extendedKeyUsage=codeSigning" -addext "keyUsage=digitalSignature" \
            -keyout "$SIGN_DIR/aero-test.key" -out "$SIGN_DIR/aero-test.pem" 2>/dev/null
        chmod 600 "$SIGN_DIR/aero-test.key"
    fi
    openssl x509 -in "$SIGN_DIR/aero-test.pem" -outform DER -out "$OUT/certs/aero-test.cer"
    for f in "$OUT"/x86/aerogpu/*.sys "$OUT"/x86/aerogpu/*.dll "$OUT"/x86/aerogpu/*.exe \
             "$OUT"/amd64/aerogpu/*.sys "$OUT"/amd64/aerogpu/*.dll "$OUT"/amd64/aerogpu/*.exe; do
        echo "[sign] ${f#$OUT/}"
        osslsigncode sign -h sha1 -certs "$SIGN_DIR/aero-test.pem" -key "$SIGN_DIR/aero-test.key" \
            -n "Aero guest tools" -time "${SOURCE_DATE_EPOCH:-1700000000}" -in "$f" -out "$f.signed" >/dev/null
        mv "$f.signed" "$f"
    done
fi
echo "done: $OUT"
