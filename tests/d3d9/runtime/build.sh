#!/bin/sh
# Builds the test D3D9 runtime: OUT_DIR/d3d9.dll (x64, mingw-w64, static C++ runtime).
#   tests/d3d9/runtime/build.sh OUT_DIR
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
OUT=$1
DRV="$ROOT/guest-tools/drivers/aerogpu"
mkdir -p "$OUT/obj"
python3 "$HERE/gen_stubs.py" /usr/share/mingw-w64/include/d3d9.h "$OUT/obj/stubs.h"
CC=x86_64-w64-mingw32-gcc CXX=x86_64-w64-mingw32-g++
FLAGS="-O1 -Wall -Wextra -Wno-unused-parameter -I$DRV -I$DRV/include -I$OUT/obj"
$CC $FLAGS -std=c11 -c "$DRV/kmd/portable/agpu_kmd_portable.c" -o "$OUT/obj/agpu_kmd_portable.o"
$CXX $FLAGS -std=c++17 -c "$HERE/kmd.cpp" -o "$OUT/obj/kmd.o"
$CXX $FLAGS -std=c++17 -c "$HERE/d3d9.cpp" -o "$OUT/obj/d3d9.o"
$CXX -shared -static -o "$OUT/d3d9.dll" "$OUT/obj/d3d9.o" "$OUT/obj/kmd.o" "$OUT/obj/agpu_kmd_portable.o" \
    -lws2_32 -luuid -ldxguid
