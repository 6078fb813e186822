#!/bin/bash
# Runs an unmodified D3D9 program (x64, built with mingw against the standard d3d9.h)
# under Wine, on one of two Direct3D 9 implementations:
#
#   bash tests/d3d9/run.sh --aero PROGRAM.exe [ARGS...]   our test runtime (runtime/) on the
#        shipped UMD (aerogpu_d3d9_x64.dll), submitting live to the AeroGPU device model
#        (aero-d3d9-host, started and stopped here)
#   bash tests/d3d9/run.sh --wine PROGRAM.exe [ARGS...]   Wine's builtin d3d9 (wined3d, OpenGL
#        renderer on Mesa llvmpipe, under Xvfb): the reference
#
# The program runs in the current directory; exit status and output are the program's
# (the wrapper's own failures exit 125). Environment: WINEPREFIX (default
# target/d3d9/wine-prefix), AERO_D3D9_OUT (build cache, default target/d3d9),
# AERO_D3D9_HOST_BIN (a prebuilt aero-d3d9-host; else cargo builds it, ci profile),
# AERO_D3D9_EXECUTOR (wgpu, the default: the executor the machine draws D3D9 with; soft: the CPU
# executor, which does not draw).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${AERO_D3D9_OUT:-$ROOT/target/d3d9}
export WINEPREFIX=${WINEPREFIX:-$OUT/wine-prefix}
export WINEDEBUG=${WINEDEBUG:--all}
WINE=/usr/lib/wine/wine64
[ -x "$WINE" ] || WINE=$(command -v wine64 || echo wine64)
WINESERVER=/usr/lib/wine/wineserver64
[ -x "$WINESERVER" ] || WINESERVER=$(command -v wineserver || echo wineserver)
# Programs need windows, and Wine's windows need an X display: a private Xvfb per run.
XVFB=(xvfb-run -a -s "-screen 0 1024x768x24")
command -v xvfb-run >/dev/null || { echo "run.sh: xvfb-run missing (Debian xvfb)" >&2; exit 125; }

die() { echo "run.sh: $*" >&2; exit 125; }

[ $# -ge 2 ] || die "usage: run.sh --aero|--wine PROGRAM.exe [ARGS...]"
MODE=$1
PROG=$2
shift 2
[ -f "$PROG" ] || die "no program $PROG"
PROG=$(cd "$(dirname "$PROG")" && pwd)/$(basename "$PROG")
mkdir -p "$OUT" || die "cannot make $OUT"

# Newer sources than the output: rebuild.
stale() { # OUTPUT SOURCE_DIR...
    local out=$1
    shift
    [ ! -f "$out" ] || [ -n "$(find "$@" -newer "$out" -type f -print -quit)" ]
}

prefix() {
    [ -f "$WINEPREFIX/.aero-d3d9-ready" ] && return
    WINEDLLOVERRIDES="mscoree,mshtml=" "$WINE" wineboot -i >/dev/null 2>&1 || die "wineboot failed"
    # wined3d's OpenGL renderer (Wine 8's Vulkan one runs no D3D9 shaders).
    "$WINE" reg add 'HKCU\Software\Wine\Direct3D' /v renderer /t REG_SZ /d gl /f >/dev/null 2>&1 ||
        die "cannot set renderer=gl"
    "$WINESERVER" -w 2>/dev/null || true
    touch "$WINEPREFIX/.aero-d3d9-ready"
}

case "$MODE" in
--aero)
    DRV=$ROOT/guest-tools/drivers/aerogpu
    UMD=$OUT/guest-tools/amd64/aerogpu/aerogpu_d3d9_x64.dll
    if stale "$UMD" "$DRV/umd" "$DRV/include" "$DRV/protocol"; then
        AERO_NO_SIGN=1 sh "$ROOT/guest-tools/build.sh" "$OUT/guest-tools" >"$OUT/guest-tools.log" 2>&1 ||
            die "guest-tools/build.sh failed (see $OUT/guest-tools.log)"
    fi
    RT=$OUT/runtime/d3d9.dll
    if stale "$RT" "$HERE/runtime" "$DRV/kmd/portable" "$DRV/include" "$DRV/protocol"; then
        sh "$HERE/runtime/build.sh" "$OUT/runtime" >"$OUT/runtime.log" 2>&1 ||
            die "runtime build failed: $(cat "$OUT/runtime.log")"
    fi
    HOST=${AERO_D3D9_HOST_BIN:-}
    if [ -z "$HOST" ]; then
        (cd "$ROOT" && cargo build -q --profile ci -p aero-guest-tools --bin aero-d3d9-host) || die "cargo build failed"
        HOST=$ROOT/target/ci/aero-d3d9-host
    fi
    prefix
    # Our runtime and the UMD beside the program, where Windows' loader looks first.
    DIR=$(dirname "$PROG")
    cp "$RT" "$DIR/d3d9.dll" && cp "$UMD" "$DIR/aerogpu_d3d9_x64.dll" || die "cannot place the DLLs in $DIR"
    PORTFILE=$(mktemp)
    "$HOST" --once --executor "${AERO_D3D9_EXECUTOR:-wgpu}" >"$PORTFILE" &
    HOST_PID=$!
    trap 'kill $HOST_PID 2>/dev/null; rm -f "$PORTFILE"' EXIT
    for _ in $(seq 100); do
        grep -q '^port ' "$PORTFILE" && break
        sleep 0.05
    done
    PORT=$(sed -n 's/^port //p' "$PORTFILE")
    [ -n "$PORT" ] || die "aero-d3d9-host did not start"
    AERO_D3D9_HOST=$PORT WINEDLLOVERRIDES="d3d9=n;mscoree,mshtml=" "${XVFB[@]}" "$WINE" "$PROG" "$@"
    STATUS=$?
    # The host ends with the runtime's session; give it a moment to report.
    for _ in $(seq 40); do kill -0 $HOST_PID 2>/dev/null || break; sleep 0.05; done
    exit $STATUS
    ;;
--wine)
    prefix
    # Remove a runtime left by an --aero run in the program's directory.
    DIR=$(dirname "$PROG")
    rm -f "$DIR/d3d9.dll"
    LIBGL_ALWAYS_SOFTWARE=1 GALLIUM_DRIVER=${GALLIUM_DRIVER:-llvmpipe} WINEDLLOVERRIDES="d3d9=b;mscoree,mshtml=" \
        "${XVFB[@]}" "$WINE" "$PROG" "$@"
    exit $?
    ;;
*)
    die "unknown mode $MODE (--aero or --wine)"
    ;;
esac
