/* Runtime presents (DxgkDdiPresent) as AeroGPU command streams: Blt, ColorFill, Flip.
 *
 * On Windows 7 everything GDI draws without DWM reaches the screen this way: dxgkrnl asks
 * the KMD to copy a rectangle of one allocation (GDI's shadow surface, an application's
 * back buffer) into another (the primary), to fill rectangles with a colour, or to flip.
 * The KMD has no objects of its own on the device, so every present creates textures
 * over the allocations it names (backing_alloc_id: the device reads and writes guest
 * memory through the submission's allocation table), copies with WRITEBACK_DST so the
 * result lands in the destination's guest memory, and destroys the textures again.
 *
 * Handles: the KMD owns protocol handles [AGPU_KMD_HANDLE_FIRST, AGPU_KMD_HANDLE_LIMIT)
 * (aerogpu_cmd.h says so); the UMD's come in 0x1000-handle chunks from 0x1000 up. Each
 * present takes a slot of AGPU_PRESENT_HANDLES consecutive handles, round robin, so
 * presents staged by different contexts never share one. A present the device refuses
 * part-way may leave its textures alive (the device ran the packets before the failing
 * one), and re-creating a live handle with another size fails: such a slot is lost for
 * good. The KMD's checks mirror the device's, so only executor failures (its host memory
 * cap, unreadable guest memory) should ever lose one.
 *
 * Everything here is host-tested (kmd/tests/test_kmd_portable.c) and bounds-checks every
 * value, since the rectangles come from the runtime on behalf of user mode. */
#ifndef AGPU_PRESENT_H
#define AGPU_PRESENT_H

#include "agpu_portable.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AGPU_KMD_HANDLE_FIRST 1u
#define AGPU_KMD_HANDLE_LIMIT 0x1000u /* exclusive: the UMD's first chunk starts here */
#define AGPU_PRESENT_HANDLES 3u       /* source, destination, ColorFill's fill texture */
/* More destination sub-rectangles than this in one present are refused (there is no
 * documented maximum; a GDI update region with thousands of rectangles is already absurd,
 * and the bound keeps a hostile count from walking the runtime's memory). */
#define AGPU_PRESENT_MAX_SUBRECTS 4096u

/* RECT's layout (LONG is 32-bit on both Windows ABIs); right/bottom are exclusive. */
typedef struct agpu_rect {
    int32_t left, top, right, bottom;
} agpu_rect;

/* An allocation as a present sees it: 32-bit pixels, `pitch` bytes per row. width == 0
 * means its layout is unknown (a buffer, or a format the KMD cannot describe). */
typedef struct agpu_surface {
    uint32_t alloc_id; /* 0: the list entry was empty */
    uint32_t width, height, pitch;
    uint64_t size_bytes;
} agpu_surface;

enum agpu_present_op {
    AGPU_PRESENT_BLT = 1,
    AGPU_PRESENT_COLORFILL = 2,
    AGPU_PRESENT_FLIP = 3
};

typedef struct agpu_present_req {
    uint32_t op;         /* enum agpu_present_op */
    agpu_surface src;    /* BLT, FLIP */
    agpu_surface dst;    /* BLT, COLORFILL */
    agpu_rect src_rect;  /* BLT: same size as dst_rect (no stretching) */
    agpu_rect dst_rect;  /* BLT, COLORFILL */
    const agpu_rect *sub_rects; /* destination space, clipped to dst_rect; NULL when count 0 */
    uint32_t sub_rect_count;    /* 0: dst_rect alone */
    uint32_t color;             /* COLORFILL: D3DCOLOR (A8R8G8B8) */
    uint32_t handle_base;       /* agpu_present_slots_take() */
} agpu_present_req;

#define AGPU_PRESENT_SLOTS ((AGPU_KMD_HANDLE_LIMIT - AGPU_KMD_HANDLE_FIRST) / AGPU_PRESENT_HANDLES)

/* The handle slots of runtime presents (callers serialize access). */
typedef struct agpu_present_slots {
    uint32_t next;
    uint32_t lost_count;
    uint8_t lost[(AGPU_PRESENT_SLOTS + 7) / 8];
} agpu_present_slots;

/* First handle of the next slot not lost; 0 when every slot is lost. */
uint32_t agpu_present_slots_take(agpu_present_slots *s);

/* The device refused the present that used the slot starting at handle_base. */
void agpu_present_slots_lose(agpu_present_slots *s, uint32_t handle_base);

/* The IEEE-754 binary32 bits of v / 255 (v <= 255), exactly what (float)v / 255.0f gives,
 * computed without floating point (the x86 kernel must not touch the FPU unsaved). */
uint32_t agpu_unorm8_to_f32_bits(uint32_t v);

/* How many rectangles a present walks (MultipassOffset counts these): the sub-rectangles,
 * or 1 for dst_rect alone; 0 for a flip. */
uint32_t agpu_present_rect_count(const agpu_present_req *r);

/* Checks a whole present before anything is written:
 * - AGPU_ERR_INVALID_PARAMETER: a missing allocation, a rectangle that is inverted or
 *   outside its surface, too many sub-rectangles or none given for a nonzero count;
 * - AGPU_ERR_NOT_SUPPORTED: an unknown operation, a surface without a known layout, or a
 *   stretching Blt (source and destination rectangles of different sizes: COPY_TEXTURE2D
 *   cannot scale; Windows 7 sends GDI's shadow-to-primary blits 1:1). */
agpu_status agpu_present_check(const agpu_present_req *r);

/* Writes one command stream for rectangles first.. of a checked present into out (at most
 * out_size bytes): as many rectangles as fit. *out_bytes gets the stream size, *next the
 * first rectangle not written (agpu_present_rect_count when done). Empty rectangles (after
 * clipping to dst_rect) are skipped; a present with nothing to draw, and a flip, is a
 * header-only stream. AGPU_ERR_BUFFER_TOO_SMALL when not even one rectangle fits;
 * AGPU_ERR_INVALID_PARAMETER when first is past the end. */
agpu_status agpu_present_build(const agpu_present_req *r, uint32_t first, void *out, uint32_t out_size,
                               uint32_t *out_bytes, uint32_t *next);

#ifdef __cplusplus
}
#endif

#endif /* AGPU_PRESENT_H */
