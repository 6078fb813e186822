#!/usr/bin/env python3
"""Compares two images (binary PPM P6, 24/32-bit uncompressed BMP, 8-bit RGB/RGBA PNG).

usage: imgdiff.py REFERENCE TEST DIFF.ppm TOLERANCE
Prints "max M differing N of T" (per-channel maximum absolute difference over RGB, and the
pixels where any channel differs by more than TOLERANCE) and writes a diff image: black
where equal, the difference scaled x8 (red where beyond tolerance). Exit 0 within
tolerance, 1 beyond it, 2 when the images cannot be compared (sizes, formats)."""
import struct
import sys
import zlib


def read_ppm(data):
    fields, pos = [], 2
    while len(fields) < 3:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos)
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(int(data[pos:end]))
        pos = end
    w, h, maxval = fields
    if maxval != 255:
        raise ValueError("only 8-bit PPM")
    pix = data[pos + 1:pos + 1 + w * h * 3]
    if len(pix) != w * h * 3:
        raise ValueError("PPM truncated")
    return w, h, bytes(pix)


def read_bmp(data):
    off, = struct.unpack_from("<I", data, 10)
    w, h, _, bpp, comp = struct.unpack_from("<iiHHI", data, 18)
    if bpp not in (24, 32) or comp not in (0, 3):
        raise ValueError("only uncompressed 24/32-bit BMP")
    flip, h = h > 0, abs(h)
    stride = (w * bpp // 8 + 3) & ~3
    out = bytearray()
    for y in range(h):
        row = off + (h - 1 - y if flip else y) * stride
        for x in range(w):
            b, g, r = data[row + x * bpp // 8: row + x * bpp // 8 + 3]
            out += bytes((r, g, b))
    return w, h, bytes(out)


def read_png(data):
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack_from(">I4s", data, pos)
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise ValueError("only 8-bit RGB/RGBA non-interlaced PNG")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride, prev, out, i = w * bpp, bytearray(w * bpp), bytearray(), 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        for x in range(w):
            out += line[x * bpp:x * bpp + 3]
    return w, h, bytes(out)


def read(path):
    data = open(path, "rb").read()
    if data[:2] == b"P6":
        return read_ppm(data)
    if data[:2] == b"BM":
        return read_bmp(data)
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return read_png(data)
    raise ValueError("unknown image format")


def main():
    ref, test, diff_path, tol = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    try:
        w1, h1, a = read(ref)
        w2, h2, b = read(test)
    except (OSError, ValueError, IndexError, struct.error, zlib.error) as e:
        print("cannot compare: %s" % e)
        return 2
    if (w1, h1) != (w2, h2):
        print("size %dx%d vs %dx%d" % (w1, h1, w2, h2))
        return 2
    worst, bad, diff = 0, 0, bytearray(len(a))
    for i in range(0, len(a), 3):
        d = max(abs(a[i] - b[i]), abs(a[i + 1] - b[i + 1]), abs(a[i + 2] - b[i + 2]))
        worst = max(worst, d)
        if d > tol:
            bad += 1
            diff[i] = 255
        elif d:
            diff[i:i + 3] = bytes(min(255, 8 * d) for _ in range(3))
    with open(diff_path, "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (w1, h1))
        f.write(diff)
    print("max %d differing %d of %d" % (worst, bad, w1 * h1))
    return 1 if bad else 0


sys.exit(main())
