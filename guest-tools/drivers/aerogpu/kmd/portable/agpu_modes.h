/* Display modes: the built-in EDID, an EDID parser (detailed preferred timing, standard
 * and established timings) and the mode list the VidPN code offers (single source/target,
 * 60 Hz progressive, 32bpp). */
#ifndef AGPU_MODES_H
#define AGPU_MODES_H

#include "agpu_portable.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AGPU_EDID_SIZE 128u
#define AGPU_MAX_MODES 24u
#define AGPU_FALLBACK_WIDTH 1024u
#define AGPU_FALLBACK_HEIGHT 768u
#define AGPU_MAX_MODE_DIM 16384u

typedef struct agpu_mode {
    uint32_t width, height;
} agpu_mode;

typedef struct agpu_edid_modes {
    agpu_mode preferred; /* 0x0 when the EDID has no detailed timing */
    agpu_mode modes[AGPU_MAX_MODES];
    uint32_t count;
} agpu_edid_modes;

/* The driver's built-in monitor EDID (1920x1080 preferred, standard timings for the
 * curated list). Written into out[AGPU_EDID_SIZE] with a valid checksum. */
void agpu_edid_builtin(uint8_t out[AGPU_EDID_SIZE]);

/* Parses a 128-byte EDID base block: header, checksum, detailed timing #1 as preferred,
 * 60 Hz standard timings, and the 60 Hz established timings. */
agpu_status agpu_edid_parse(const uint8_t *edid, uint32_t size, agpu_edid_modes *out);

/* The final list: preferred first (registry pair, then EDID preferred, then the 1024x768
 * fallback, each only if within the caps), then the EDID modes and the curated list,
 * deduplicated, capped by max_width/max_height (0 = no cap), sorted by area. Returns the
 * number of modes; mode 0 is the preferred one. Never returns 0: 640x480 survives any
 * cap. */
uint32_t agpu_build_mode_list(const agpu_edid_modes *edid, uint32_t pref_w, uint32_t pref_h,
                              uint32_t max_w, uint32_t max_h, agpu_mode *out, uint32_t cap);

/* Synthetic timing model shared by the VidPN and GetScanLine: total lines per frame. */
uint32_t agpu_vblank_lines(uint32_t height);
uint32_t agpu_total_width(uint32_t width);

/* Scanline for a position `elapsed_ns` into a frame of `period_ns` (0 = 60 Hz). */
void agpu_scanline(uint32_t height, uint64_t elapsed_ns, uint32_t period_ns,
                   uint32_t *scanline, int *in_vblank);

/* The refresh rates IsSupportedVidPn accepts (numerator/denominator), ~59-61 Hz. */
int agpu_refresh_acceptable(uint32_t numerator, uint32_t denominator);

#ifdef __cplusplus
}
#endif

#endif /* AGPU_MODES_H */
