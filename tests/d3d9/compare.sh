#!/bin/bash
# Runs a D3D9 program on Wine's d3d9 (the reference) and on ours, then compares every image
# it wrote (*.ppm, *.png, *.bmp in its working directory):
#
#   bash tests/d3d9/compare.sh PROGRAM.exe OUTDIR [ARGS...]
#
# OUTDIR/wine and OUTDIR/aero hold each run (program, images, output.txt); one line per
# image: "NAME: max M differing N of T (tolerance K) ok|FAIL", a diff image in
# OUTDIR/diff/NAME.ppm. Tolerance: 1 per channel, unless the program wrote tolerance.txt
# (lines "IMAGE MAX" or "* MAX"; read from the Wine run). Exit 0 when both runs exited 0,
# wrote the same images, and every image is within tolerance; 1 otherwise.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: compare.sh PROGRAM.exe OUTDIR [ARGS...]" >&2; exit 2; }
PROG=$1
OUTDIR=$2
shift 2
NAME=$(basename "$PROG")
rm -rf "$OUTDIR/wine" "$OUTDIR/aero" "$OUTDIR/diff"
mkdir -p "$OUTDIR/wine" "$OUTDIR/aero" "$OUTDIR/diff"
FAIL=0
for mode in wine aero; do
    cp "$PROG" "$OUTDIR/$mode/$NAME"
    (cd "$OUTDIR/$mode" && bash "$HERE/run.sh" --$mode "./$NAME" "$@" >output.txt 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "$NAME on $mode: exit $rc"
        sed 's/^/    /' "$OUTDIR/$mode/output.txt" | grep -v "X connection" | tail -20
        FAIL=1
    fi
done
images() { (cd "$1" && ls -1 -- *.ppm *.png *.bmp 2>/dev/null | sort); }
tolerance() { # IMAGE
    local t=1 f=$OUTDIR/wine/tolerance.txt
    if [ -f "$f" ]; then
        t=$(awk -v n="$1" '$1 == n { print $2; found = 1; exit } $1 == "*" { star = $2 } END { if (!found && star != "") print star }' "$f")
        t=${t:-1}
    fi
    echo "$t"
}
W=$(images "$OUTDIR/wine")
A=$(images "$OUTDIR/aero")
if [ "$W" != "$A" ]; then
    echo "$NAME: images differ: wine wrote [$(echo $W)], aero wrote [$(echo $A)]"
    FAIL=1
fi
[ -n "$W" ] || { echo "$NAME: wrote no images"; FAIL=1; }
for img in $W; do
    [ -f "$OUTDIR/aero/$img" ] || continue
    tol=$(tolerance "$img")
    line=$(python3 "$HERE/imgdiff.py" "$OUTDIR/wine/$img" "$OUTDIR/aero/$img" "$OUTDIR/diff/${img%.*}.ppm" "$tol")
    rc=$?
    if [ $rc -eq 0 ]; then
        echo "$img: $line (tolerance $tol) ok"
    else
        echo "$img: $line (tolerance $tol) FAIL"
        FAIL=1
    fi
done
exit $FAIL
