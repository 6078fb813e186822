#include "agpu_modes.h"

/* Curated fallback list (all 60 Hz). */
static const agpu_mode k_curated[] = {
    {640, 480},   {800, 600},   {1024, 768}, {1280, 720},
    {1280, 800},  {1366, 768},  {1600, 900}, {1920, 1080},
};

void agpu_edid_builtin(uint8_t e[AGPU_EDID_SIZE])
{
    static const uint8_t std_timings[16] = {
        0x81, 0xC0, /* 1280x720 16:9 */
        0x81, 0x00, /* 1280x800 16:10 */
        0x8C, 0xC0, /* 1368x768 16:9 (1366 is not a multiple of 8) */
        0xA9, 0xC0, /* 1600x900 16:9 */
        0xD1, 0xC0, /* 1920x1080 16:9 */
        0x61, 0x40, /* 1024x768 4:3 */
        0x01, 0x01, 0x01, 0x01, /* unused */
    };
    static const char name[] = "AeroGPU";
    uint32_t i, sum = 0;
    uint8_t *d;
    agpu_zero(e, AGPU_EDID_SIZE);
    e[1] = e[2] = e[3] = e[4] = e[5] = e[6] = 0xFF; /* header 00 FF*6 00 */
    e[8] = 0x04; e[9] = 0xB2;   /* manufacturer "AER" (5-bit letters, big-endian) */
    e[10] = 0x01;               /* product code */
    e[16] = 1; e[17] = 2010 - 1990;
    e[18] = 1; e[19] = 3;       /* EDID 1.3 */
    e[20] = 0x80;               /* digital input */
    e[21] = 52; e[22] = 29;     /* 52x29 cm */
    e[23] = 120;                /* gamma 2.2 */
    e[24] = 0x0A;               /* RGB colour, preferred timing is native */
    /* Chromaticity (sRGB-ish primaries, 10-bit fixed point). */
    e[25] = 0xEE; e[26] = 0x91; e[27] = 0xA3; e[28] = 0x54; e[29] = 0x4C;
    e[30] = 0x99; e[31] = 0x26; e[32] = 0x0F; e[33] = 0x50; e[34] = 0x54;
    e[35] = 0x21;               /* 640x480@60, 800x600@60 */
    e[36] = 0x08;               /* 1024x768@60 */
    agpu_copy(e + 38, std_timings, sizeof(std_timings));
    /* Detailed timing 1: 1920x1080@60, 148.5 MHz, CEA-861 blanking. */
    d = e + 54;
    d[0] = 0x02; d[1] = 0x3A;           /* 14850 * 10 kHz */
    d[2] = 0x80; d[3] = 0x18; d[4] = 0x71; /* h active 0x780, h blank 0x118 */
    d[5] = 0x38; d[6] = 0x2D; d[7] = 0x40; /* v active 0x438, v blank 0x02D */
    d[8] = 88; d[9] = 44; d[10] = 0x45; d[11] = 0x00; /* sync offsets/widths */
    d[12] = 0x08; d[13] = 0x22; d[14] = 0x21;         /* 520x290 mm */
    d[17] = 0x1E;
    /* Descriptor 2: range limits 56-61 Hz vertical, 30-83 kHz horizontal, 150 MHz. */
    d = e + 72;
    d[3] = 0xFD; d[5] = 56; d[6] = 61; d[7] = 30; d[8] = 83; d[9] = 15; d[10] = 0;
    d[11] = 0x0A; for (i = 12; i < 18; i++) d[i] = 0x20;
    /* Descriptor 3: monitor name. */
    d = e + 90;
    d[3] = 0xFC;
    for (i = 0; i < 13; i++) d[5 + i] = i < sizeof(name) - 1 ? (uint8_t)name[i] : (i == sizeof(name) - 1 ? 0x0A : 0x20);
    /* Descriptor 4: dummy. */
    d = e + 108;
    d[3] = 0x10;
    e[126] = 0; /* no extensions */
    for (i = 0; i < 127; i++) sum += e[i];
    e[127] = (uint8_t)(256u - (sum & 0xFF));
}

static void add_mode(agpu_edid_modes *out, uint32_t w, uint32_t h)
{
    uint32_t i;
    if (w == 0 || h == 0 || w > AGPU_MAX_MODE_DIM || h > AGPU_MAX_MODE_DIM) return;
    for (i = 0; i < out->count; i++)
        if (out->modes[i].width == w && out->modes[i].height == h) return;
    if (out->count >= AGPU_MAX_MODES) return;
    out->modes[out->count].width = w;
    out->modes[out->count].height = h;
    out->count++;
}

agpu_status agpu_edid_parse(const uint8_t *e, uint32_t size, agpu_edid_modes *out)
{
    static const uint8_t header[8] = {0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0};
    uint32_t i, sum = 0;
    if (!e || !out) return AGPU_ERR_INVALID_PARAMETER;
    agpu_zero(out, sizeof(*out));
    if (size < AGPU_EDID_SIZE) return AGPU_ERR_BUFFER_TOO_SMALL;
    for (i = 0; i < 8; i++)
        if (e[i] != header[i]) return AGPU_ERR_INVALID_PARAMETER;
    for (i = 0; i < AGPU_EDID_SIZE; i++) sum += e[i];
    if ((sum & 0xFF) != 0) return AGPU_ERR_INVALID_PARAMETER;

    /* Detailed timing #1 (a pixel clock of 0 marks a display descriptor instead). */
    if (e[54] | e[55]) {
        uint32_t w = e[56] | ((uint32_t)(e[58] & 0xF0) << 4);
        uint32_t h = e[59] | ((uint32_t)(e[61] & 0xF0) << 4);
        if (w && h && w <= AGPU_MAX_MODE_DIM && h <= AGPU_MAX_MODE_DIM) {
            out->preferred.width = w;
            out->preferred.height = h;
            add_mode(out, w, h);
        }
    }
    /* Established timings at 60 Hz. */
    if (e[35] & 0x20) add_mode(out, 640, 480);
    if (e[35] & 0x01) add_mode(out, 800, 600);
    if (e[36] & 0x08) add_mode(out, 1024, 768);
    /* Standard timings: only 60 Hz entries (the scanout runs at 60 Hz). */
    for (i = 0; i < 8; i++) {
        uint8_t b0 = e[38 + 2 * i], b1 = e[39 + 2 * i];
        uint32_t w, h;
        if ((b0 == 0x01 && b1 == 0x01) || b0 == 0) continue;
        if ((b1 & 0x3F) != 0) continue; /* refresh = 60 + (b1 & 0x3F) */
        w = ((uint32_t)b0 + 31) * 8;
        switch (b1 >> 6) {
        case 0: h = w * 10 / 16; break; /* 16:10 (EDID 1.3) */
        case 1: h = w * 3 / 4; break;
        case 2: h = w * 4 / 5; break;
        default: h = w * 9 / 16; break;
        }
        /* 1368 * 9/16 = 769.5: round odd heights down (scanout sizes are even). */
        add_mode(out, w, h & ~1u);
    }
    return AGPU_OK;
}

static int fits(uint32_t w, uint32_t h, uint32_t max_w, uint32_t max_h)
{
    return w && h && (!max_w || w <= max_w) && (!max_h || h <= max_h) &&
           w <= AGPU_MAX_MODE_DIM && h <= AGPU_MAX_MODE_DIM;
}

static int push_unique(agpu_mode *out, uint32_t *n, uint32_t cap, uint32_t w, uint32_t h)
{
    uint32_t i;
    for (i = 0; i < *n; i++)
        if (out[i].width == w && out[i].height == h) return 0;
    if (*n >= cap) return 0;
    out[*n].width = w;
    out[*n].height = h;
    (*n)++;
    return 1;
}

uint32_t agpu_build_mode_list(const agpu_edid_modes *edid, uint32_t pref_w, uint32_t pref_h,
                              uint32_t max_w, uint32_t max_h, agpu_mode *out, uint32_t cap)
{
    uint32_t n = 0, i, j;
    if (!out || cap == 0) return 0;
    /* 640x480 is the floor every cap keeps, so the list is never empty. */
    if (max_w && max_w < 640) max_w = 640;
    if (max_h && max_h < 480) max_h = 480;

    if (pref_w && pref_h && fits(pref_w, pref_h, max_w, max_h))
        push_unique(out, &n, cap, pref_w, pref_h);
    else if (edid && fits(edid->preferred.width, edid->preferred.height, max_w, max_h))
        push_unique(out, &n, cap, edid->preferred.width, edid->preferred.height);
    else if (fits(AGPU_FALLBACK_WIDTH, AGPU_FALLBACK_HEIGHT, max_w, max_h))
        push_unique(out, &n, cap, AGPU_FALLBACK_WIDTH, AGPU_FALLBACK_HEIGHT);

    if (edid)
        for (i = 0; i < edid->count && i < AGPU_MAX_MODES; i++)
            if (fits(edid->modes[i].width, edid->modes[i].height, max_w, max_h))
                push_unique(out, &n, cap, edid->modes[i].width, edid->modes[i].height);
    for (i = 0; i < sizeof(k_curated) / sizeof(k_curated[0]); i++)
        if (fits(k_curated[i].width, k_curated[i].height, max_w, max_h))
            push_unique(out, &n, cap, k_curated[i].width, k_curated[i].height);

    /* Sort everything after the preferred mode by area, then width (insertion sort). */
    for (i = 2; i < n; i++) {
        agpu_mode m = out[i];
        uint64_t a = (uint64_t)m.width * m.height;
        for (j = i; j > 1; j--) {
            uint64_t b = (uint64_t)out[j - 1].width * out[j - 1].height;
            if (b < a || (b == a && out[j - 1].width <= m.width)) break;
            out[j] = out[j - 1];
        }
        out[j] = m;
    }
    return n;
}

uint32_t agpu_vblank_lines(uint32_t height)
{
    uint32_t v = (uint32_t)(((uint64_t)height * 45u) / 1080u);
    return v < 20 ? 20 : (v > 40 ? 40 : v);
}

uint32_t agpu_total_width(uint32_t width)
{
    uint32_t blank = (width / 8 + 7) & ~7u;
    return width + (blank < 16 ? 16 : blank);
}

void agpu_scanline(uint32_t height, uint64_t elapsed_ns, uint32_t period_ns,
                   uint32_t *scanline, int *in_vblank)
{
    uint64_t period = period_ns ? period_ns : AEROGPU_VBLANK_PERIOD_NS_60HZ;
    uint32_t total = height + agpu_vblank_lines(height);
    uint64_t pos = elapsed_ns % period;
    uint32_t line = (uint32_t)((pos * total) / period);
    if (line >= total) line = total - 1;
    *in_vblank = line >= height;
    *scanline = line;
}

int agpu_refresh_acceptable(uint32_t num, uint32_t den)
{
    /* 59..61 Hz, e.g. 60/1 or 59940/1000; avoids overflow by using 64-bit products. */
    if (den == 0) return 0;
    return (uint64_t)num * 1000u >= (uint64_t)den * 59000u &&
           (uint64_t)num * 1000u <= (uint64_t)den * 61000u;
}
