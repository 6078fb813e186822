#!/usr/bin/env python3
"""Generates Aero's text-mode fonts (aero-8x16.txt, aero-8x8.txt).

The glyph designs are the project's own (glyphs_ascii.py, glyphs_symbols.py);
this script composes accented letters, draws box-drawing, shade and block
characters from rules, and derives the 8x8 font from the 8x16 designs (with
hand-drawn 8x8 overrides where the derivation reads badly).

Run from this directory:  python3 generate.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from glyphs_ascii import ASCII  # noqa: E402
from glyphs_symbols import SYMBOLS  # noqa: E402
from glyphs_8x8 import OVERRIDES_8X8  # noqa: E402

BLANK = "........"


def pad(row):
    return (row + BLANK)[:8]


def place(top, rows, height):
    """Puts a design into a blank glyph of `height` rows starting at `top`."""
    glyph = [BLANK] * height
    for i, row in enumerate(rows):
        if 0 <= top + i < height:
            glyph[top + i] = pad(row)
    return glyph


def overlay(base, extra):
    return ["".join("#" if a == "#" or b == "#" else "." for a, b in zip(r1, r2))
            for r1, r2 in zip(base, extra)]


def invert(glyph):
    return ["".join("." if c == "#" else "#" for c in row) for row in glyph]


def squash(rows, n):
    """Reduces a list of rows to n rows by merging (OR) the most similar
    adjacent pair, preferring identical pairs; keeps the outline's ends."""
    rows = [pad(r) for r in rows]
    while len(rows) > n:
        best = None
        for i in range(len(rows) - 1):
            dist = sum(a != b for a, b in zip(rows[i], rows[i + 1]))
            # Prefer merging near the middle: ends carry the shape's caps.
            centre = abs((i + 0.5) - (len(rows) - 1) / 2)
            key = (dist, centre)
            if best is None or key < best[0]:
                best = (key, i)
        i = best[1]
        rows[i:i + 2] = [overlay([rows[i]], [rows[i + 1]])[0]]
    return rows


# --- accents -----------------------------------------------------------------

ACCENTS_16 = {
    "acute": ["....##.", "...##.."],
    "grave": [".##....", "..##..."],
    "circ": ["..###..", ".##.##."],
    "diaer": [".##.##."],
    "ring": ["..###..", ".##.##.", "..###.."],
    "tilde": [".###.##", "##.###."],
}
ACCENTS_8 = {
    "acute": ["...##.."],
    "grave": ["..##..."],
    "circ": ["..###.."],
    "diaer": [".##.##."],
    "ring": ["..###..", "..#.#.."],
    "tilde": ["##.###."],
}
CEDILLA_16 = (12, ["...##..", "....##.", "..###.."])
CEDILLA_8 = (7, ["..##..."])

# (code, base char, accent); base 'ı' means dotless i.
ACCENTED = [
    (0x81, "u", "diaer"), (0x82, "e", "acute"), (0x83, "a", "circ"), (0x84, "a", "diaer"),
    (0x85, "a", "grave"), (0x86, "a", "ring"), (0x88, "e", "circ"), (0x89, "e", "diaer"),
    (0x8A, "e", "grave"), (0x8B, "ı", "diaer"), (0x8C, "ı", "circ"), (0x8D, "ı", "grave"),
    (0x8E, "A", "diaer"), (0x8F, "A", "ring"), (0x90, "E", "acute"), (0x93, "o", "circ"),
    (0x94, "o", "diaer"), (0x95, "o", "grave"), (0x96, "u", "circ"), (0x97, "u", "grave"),
    (0x98, "y", "diaer"), (0x99, "O", "diaer"), (0x9A, "U", "diaer"), (0xA0, "a", "acute"),
    (0xA1, "ı", "acute"), (0xA2, "o", "acute"), (0xA3, "u", "acute"), (0xA4, "n", "tilde"),
    (0xA5, "N", "tilde"),
]

DOTLESS_I = (5, [".###...", "..##...", "..##...", "..##...", "..##...", "..##...", ".####.."])


def accented_16(base, accent):
    shift_left = base == "ı"
    acc = ACCENTS_16[accent]
    if shift_left:
        acc = [r[1:] + "." for r in acc]
    if base.isupper():
        top, rows = ASCII[base]
        body = place(4, squash(rows, 8), 16)
        acc_top = 1 if accent == "ring" else 3 - len(acc)
    else:
        top, rows = DOTLESS_I if base == "ı" else ASCII[base]
        body = place(top, rows, 16)
        acc_top = 4 - len(acc)
    return overlay(body, place(acc_top, acc, 16))


def accented_8(base, accent, font8):
    acc = ACCENTS_8[accent]
    if base == "ı":
        acc = [r[1:] + "." for r in acc]
        body = place(2, [".###...", "..##...", "..##...", "..##...", ".####.."], 8)
    elif base.isupper():
        cap = [r for r in font8[ord(base)][0:7]]
        body = place(2, squash(cap, 5), 8)
    else:
        body = font8[ord(base)]
    return overlay(body, place(0, acc, 8))


# --- box drawing ---------------------------------------------------------------

# Arms: (up, down, left, right); 0 none, 1 single, 2 double.
BOX = {
    0xB3: (1, 1, 0, 0), 0xB4: (1, 1, 1, 0), 0xB5: (1, 1, 2, 0), 0xB6: (2, 2, 1, 0),
    0xB7: (0, 2, 1, 0), 0xB8: (0, 1, 2, 0), 0xB9: (2, 2, 2, 0), 0xBA: (2, 2, 0, 0),
    0xBB: (0, 2, 2, 0), 0xBC: (2, 0, 2, 0), 0xBD: (2, 0, 1, 0), 0xBE: (1, 0, 2, 0),
    0xBF: (0, 1, 1, 0), 0xC0: (1, 0, 0, 1), 0xC1: (1, 0, 1, 1), 0xC2: (0, 1, 1, 1),
    0xC3: (1, 1, 0, 1), 0xC4: (0, 0, 1, 1), 0xC5: (1, 1, 1, 1), 0xC6: (1, 1, 0, 2),
    0xC7: (2, 2, 0, 1), 0xC8: (2, 0, 0, 2), 0xC9: (0, 2, 0, 2), 0xCA: (2, 0, 2, 2),
    0xCB: (0, 2, 2, 2), 0xCC: (2, 2, 0, 2), 0xCD: (0, 0, 2, 2), 0xCE: (2, 2, 2, 2),
    0xCF: (1, 0, 2, 2), 0xD0: (2, 0, 1, 1), 0xD1: (0, 1, 2, 2), 0xD2: (0, 2, 1, 1),
    0xD3: (2, 0, 0, 1), 0xD4: (1, 0, 0, 2), 0xD5: (0, 1, 0, 2), 0xD6: (0, 2, 0, 1),
    0xD7: (2, 2, 1, 1), 0xD8: (1, 1, 2, 2), 0xD9: (1, 0, 1, 0), 0xDA: (0, 1, 0, 1),
}


def box_glyph(arms, height):
    """Draws a box-drawing character. Lines are 1 pixel; double lines sit one
    pixel either side of the centre line, and where lines meet, the inner
    lines of a double pair stop at the crossing line so corners look joined."""
    up, down, left, right = arms
    mid = height // 2 - 1          # centre row (7 for 16, 3 for 8)
    top_row, bot_row = mid - 1, mid + 1
    mid_col, left_col, right_col = 3, 2, 4
    width = 8
    pix = [[False] * width for _ in range(height)]

    def vline(col, r0, r1):
        for r in range(max(0, r0), min(height - 1, r1) + 1):
            pix[r][col] = True

    def hline(row, c0, c1):
        for c in range(max(0, c0), min(width - 1, c1) + 1):
            pix[row][c] = True

    horiz_double_through = left == 2 and right == 2
    vert_double_through = up == 2 and down == 2

    # Vertical arms.
    for direction, style in (("up", up), ("down", down)):
        if style == 0:
            continue
        going_up = direction == "up"
        other_vertical = down if going_up else up
        if style == 1:
            if up == 1 and down == 1:
                end = mid  # a single line runs straight through any crossing
            elif horiz_double_through:
                end = top_row if going_up else bot_row
            elif left == 2 or right == 2:
                end = bot_row if going_up else top_row
            else:
                end = mid
            lines = [(mid_col, end, None)]
        else:
            lines = []
            for col, near, far in ((left_col, left, right), (right_col, right, left)):
                if near == 2:
                    end = top_row if going_up else bot_row
                elif near == 1:
                    end = mid
                elif other_vertical:
                    end = mid
                elif far == 2:
                    end = bot_row if going_up else top_row
                else:
                    end = mid
                lines.append((col, end, None))
        for col, end, _ in lines:
            if going_up:
                vline(col, 0, end)
            else:
                vline(col, end, height - 1)

    # Horizontal arms.
    for direction, style in (("left", left), ("right", right)):
        if style == 0:
            continue
        going_left = direction == "left"
        other_horizontal = right if going_left else left
        if style == 1:
            if left == 1 and right == 1:
                end = mid_col
            elif vert_double_through:
                end = left_col if going_left else right_col
            elif up == 2 or down == 2:
                end = right_col if going_left else left_col
            else:
                end = mid_col
            lines = [(mid, end)]
        else:
            lines = []
            for row, near, far in ((top_row, up, down), (bot_row, down, up)):
                if near == 2:
                    end = left_col if going_left else right_col
                elif near == 1:
                    end = mid_col
                elif other_horizontal:
                    end = mid_col
                elif far == 2:
                    end = right_col if going_left else left_col
                else:
                    end = mid_col
                lines.append((row, end))
        for row, end in lines:
            if going_left:
                hline(row, 0, end)
            else:
                hline(row, end, width - 1)

    return ["".join("#" if p else "." for p in row) for row in pix]


def shade(code, height):
    rows = []
    for r in range(height):
        if code == 0xB0:    # light: one pixel in four
            rows.append("#...#..." if r % 2 == 0 else "..#...#.")
        elif code == 0xB1:  # medium: checkerboard
            rows.append("#.#.#.#." if r % 2 == 0 else ".#.#.#.#")
        else:               # dark: inverse of light
            rows.append(".###.###" if r % 2 == 0 else "##.###.#")
    return rows


def blocks(code, height):
    half = height // 2
    full = "########"
    if code == 0xDB:
        return [full] * height
    if code == 0xDC:
        return [BLANK] * half + [full] * (height - half)
    if code == 0xDD:
        return ["####...."] * height
    if code == 0xDE:
        return ["....####"] * height
    return [full] * half + [BLANK] * (height - half)  # 0xDF


# --- whole fonts ------------------------------------------------------------------

def circle_16():
    return place(5, ["..####..", ".##..##.", ".#....#.", ".#....#.", ".##..##.", "..####.."], 16)


def build_16():
    font = [[BLANK] * 16 for _ in range(256)]
    for ch, (top, rows) in ASCII.items():
        font[ord(ch)] = place(top, rows, 16)
    for code, (top, rows) in SYMBOLS.items():
        font[code] = place(top, rows, 16)
    font[0x08] = invert(font[0x07])
    font[0x09] = circle_16()
    font[0x0A] = invert(circle_16())
    for code, base, accent in ACCENTED:
        font[code] = accented_16(base, accent)
    font[0x80] = overlay(font[ord("C")], place(*CEDILLA_16, 16))
    font[0x87] = overlay(font[ord("c")], place(*CEDILLA_16, 16))
    for code in (0xB0, 0xB1, 0xB2):
        font[code] = shade(code, 16)
    for code, arms in BOX.items():
        font[code] = box_glyph(arms, 16)
    for code in range(0xDB, 0xE0):
        font[code] = blocks(code, 16)
    return font


def derive_8(glyph16):
    """16 -> 8 rows by regions: above-cap rows fold into row 0, rows 2-4 (cap
    to x-height) become rows 0-1, rows 5-11 (x-height to baseline) become rows
    2-6, and the descender rows 12-15 become row 7."""
    above = glyph16[0:2]
    head = squash(glyph16[2:5], 2)
    body = squash(glyph16[5:12], 5)
    tail = squash(glyph16[12:16], 1)
    head[0] = overlay([head[0]], [squash(above, 1)[0]])[0]
    return head + body + tail


def build_8(font16):
    font = [derive_8(g) for g in font16]
    for code, rows in OVERRIDES_8X8.items():
        font[code] = [pad(r) for r in rows]
    font[0x08] = invert(font[0x07])
    font[0x0A] = invert(font[0x09])
    for code, base, accent in ACCENTED:
        font[code] = accented_8(base, accent, font)
    font[0x80] = overlay(font[ord("C")], place(*CEDILLA_8, 8))
    font[0x87] = overlay(font[ord("c")], place(*CEDILLA_8, 8))
    for code in (0xB0, 0xB1, 0xB2):
        font[code] = shade(code, 8)
    for code, arms in BOX.items():
        font[code] = box_glyph(arms, 8)
    for code in range(0xDB, 0xE0):
        font[code] = blocks(code, 8)
    return font


HEADER = """# Aero text-mode font, 8x{h}, code page 437 order (256 glyphs).
# Made for the Aero project by the project itself; same licence as Aero.
# Generated by assets/fonts/generate.py from the project's own glyph designs.
# Format: 'glyph 0xNN' then {h} rows of 8 columns, '#' = pixel on, '.' = off.
"""


def write(path, font, height):
    with open(path, "w", encoding="ascii") as out:
        out.write(HEADER.format(h=height))
        for code, glyph in enumerate(font):
            assert len(glyph) == height, (code, len(glyph))
            out.write(f"glyph 0x{code:02X}\n")
            for row in glyph:
                assert len(row) == 8 and set(row) <= {"#", "."}, (code, row)
                out.write(row + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    font16 = build_16()
    font8 = build_8(font16)
    write(os.path.join(here, "aero-8x16.txt"), font16, 16)
    write(os.path.join(here, "aero-8x8.txt"), font8, 8)


if __name__ == "__main__":
    main()
