#!/usr/bin/env bash
# GPU benchmark (not a test): a DWM-like scene (tests/d3d9/programs/bench_dwm.c: 64
# alpha-blended textured window quads at 1280x1024, one PresentEx per frame) run through
# tests/d3d9/run.sh on Aero (test runtime + shipped UMD + AeroGPU device model + the wgpu
# executor, Mesa lavapipe here) and on Wine's own d3d9 (wined3d, OpenGL on Mesa llvmpipe).
# Prints frames/s and draws/s of both and the ratio Aero/Wine (goal: >= 1).
#
#   bash tests/bench/gpu-dwm.sh [FRAMES]        (default 200)
#
# AERO_D3D9_EXECUTOR=soft measures the CPU executor instead; AERO_D3D9_HOST_BIN uses a
# prebuilt aero-d3d9-host (else run.sh builds it, ci profile).
set -euo pipefail
cd "$(dirname "$0")/../.."
frames="${1:-200}"
command -v x86_64-w64-mingw32-gcc >/dev/null ||
    { echo "x86_64-w64-mingw32-gcc missing (bash tests/install-deps.sh test)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Same flags as the suite's builder (guest-tools/tests/d3d9_suite.rs).
x86_64-w64-mingw32-gcc -O1 -Wall -Werror -o "$work/bench_dwm.exe" tests/d3d9/programs/bench_dwm.c -ld3d9

run() { # MODE -> the program's output
    (cd "$work" && bash "$OLDPWD/tests/d3d9/run.sh" "$1" "$work/bench_dwm.exe" "$frames") 2>&1 |
        tee "$work/${1#--}.log" >&2
}
field() { sed -n "s|^$1 ||p" "$2" | tail -1; }

echo "== Wine's d3d9 (llvmpipe)" >&2
run --wine
echo "== Aero (executor ${AERO_D3D9_EXECUTOR:=wgpu})" >&2
export AERO_D3D9_EXECUTOR
run --aero
wine_fps=$(field frames/s "$work/wine.log")
aero_fps=$(field frames/s "$work/aero.log")
[ -n "$wine_fps" ] && [ -n "$aero_fps" ] || { echo "gpu-dwm: a run printed no frames/s" >&2; exit 1; }
echo "wine  frames/s $wine_fps  draws/s $(field draws/s "$work/wine.log")"
echo "aero  frames/s $aero_fps  draws/s $(field draws/s "$work/aero.log")  (executor $AERO_D3D9_EXECUTOR)"
python3 -c "import sys; print('ratio aero/wine %.2f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$aero_fps" "$wine_fps"
