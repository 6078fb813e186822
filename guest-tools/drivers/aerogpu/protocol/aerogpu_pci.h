/* AeroGPU PCI identity and BAR0 MMIO register map (versioned "AGPU" ABI).
 *
 * All registers are 32 bits wide, little-endian, accessed with aligned 32-bit loads and
 * stores. 64-bit values are split into _LO/_HI halves; values the device updates on its
 * own (COMPLETED_FENCE, VBLANK_SEQ, VBLANK_TIME_NS) should be read HI, LO, HI and
 * re-read if the two HI reads differ. Unknown offsets read as 0 and ignore writes.
 */
#ifndef AEROGPU_PCI_H
#define AEROGPU_PCI_H

#include "aerogpu_abi_common.h"

/* ---- PCI identity ---------------------------------------------------------------- */
#define AEROGPU_PCI_VENDOR_ID 0xA3A0u
#define AEROGPU_PCI_DEVICE_ID 0x0001u
#define AEROGPU_PCI_SUBSYSTEM_VENDOR_ID 0xA3A0u
#define AEROGPU_PCI_SUBSYSTEM_ID 0x0001u
#define AEROGPU_PCI_REVISION_ID 0x01u
/* Display controller / VGA-compatible: the same function also decodes the legacy VGA
 * ranges so boot (BIOS, Windows setup, OSes without the driver) keeps working. */
#define AEROGPU_PCI_CLASS_CODE 0x03u
#define AEROGPU_PCI_SUBCLASS 0x00u
#define AEROGPU_PCI_PROG_IF 0x00u

/* BAR0: 32-bit non-prefetchable memory, the MMIO register block below. */
#define AEROGPU_PCI_BAR0_INDEX 0u
#define AEROGPU_PCI_BAR0_SIZE_BYTES 0x1000u
/* BAR2: 32-bit prefetchable memory, the linear framebuffer of the legacy VGA/VBE path
 * (Bochs DISPI) once the VGA model is merged into this function. Drivers of this ABI do
 * not need it; the firmware's VBE code finds the LFB here. */
#define AEROGPU_PCI_LFB_BAR_INDEX 2u

/* ---- Identification -------------------------------------------------------------- */
#define AEROGPU_MMIO_MAGIC 0x55504741u /* "AGPU" as little-endian bytes */

#define AEROGPU_MMIO_REG_MAGIC 0x000u
#define AEROGPU_MMIO_REG_ABI_VERSION 0x004u /* AEROGPU_ABI_VERSION_U32 */
#define AEROGPU_MMIO_REG_FEATURES_LO 0x008u
#define AEROGPU_MMIO_REG_FEATURES_HI 0x00Cu

/* FEATURES_LO/HI: a 64-bit mask. A driver must ignore bits it does not know. */
#define AEROGPU_FEATURE_FENCE_PAGE (1ull << 0)     /* FENCE_GPA + aerogpu_fence_page */
#define AEROGPU_FEATURE_CURSOR (1ull << 1)         /* CURSOR_* registers */
#define AEROGPU_FEATURE_SCANOUT (1ull << 2)        /* SCANOUT0_* registers */
#define AEROGPU_FEATURE_VBLANK (1ull << 3)         /* vblank IRQ + SCANOUT0_VBLANK_* */
#define AEROGPU_FEATURE_ERROR_INFO (1ull << 4)     /* ERROR_CODE/FENCE/COUNT (ABI 1.3+) */
#define AEROGPU_FEATURE_SHARED_SURFACE (1ull << 5) /* EXPORT/IMPORT/RELEASE_SHARED_SURFACE */
#define AEROGPU_FEATURE_WRITEBACK (1ull << 6)      /* COPY_* with WRITEBACK_DST */
#define AEROGPU_FEATURE_GART (1ull << 7)           /* GART_* registers, the aperture (ABI 1.5) */

/* ---- Ring (see aerogpu_ring.h) ----------------------------------------------------- */
#define AEROGPU_MMIO_REG_RING_GPA_LO 0x100u
#define AEROGPU_MMIO_REG_RING_GPA_HI 0x104u
#define AEROGPU_MMIO_REG_RING_SIZE_BYTES 0x108u
#define AEROGPU_MMIO_REG_RING_CONTROL 0x10Cu

/* RING_CONTROL bits. ENABLE reads back as written. RESET is write-only (reads as 0):
 * the device completes every fence it has accepted (deferred vsync presents included),
 * drops descriptors not yet consumed (head := tail in the ring header), and forgets
 * cached ring state. Latched error info and IRQ_STATUS are kept. */
#define AEROGPU_RING_CONTROL_ENABLE (1u << 0)
#define AEROGPU_RING_CONTROL_RESET (1u << 1)

/* ---- GART (AEROGPU_FEATURE_GART, ABI 1.5+) ------------------------------------------
 * WDDM maps an allocation's pages into the aperture segment page by page, and system pages
 * are rarely physically contiguous. The driver keeps GART_ENTRIES 64-bit entries at
 * GART_GPA (contiguous guest memory, 8-byte aligned); entry i maps aperture page i:
 * AEROGPU_GART_ENTRY_VALID plus the 4 KiB-aligned guest-physical page address. Every
 * device address in [AEROGPU_APERTURE_BASE, AEROGPU_APERTURE_BASE + GART_ENTRIES * 4096)
 * (allocation-table GPAs, the scanout and cursor GPAs) is translated page by page; an
 * access through an invalid entry, or past GART_ENTRIES, is a DMA error. The device reads
 * the entries at each access, so a change needs no flush; GART_ENTRIES = 0 turns the
 * aperture off. Addresses below AEROGPU_APERTURE_BASE are guest-physical as before. */
#define AEROGPU_MMIO_REG_GART_GPA_LO 0x140u
#define AEROGPU_MMIO_REG_GART_GPA_HI 0x144u
#define AEROGPU_MMIO_REG_GART_ENTRIES 0x148u
#define AEROGPU_GART_ENTRY_VALID 1ull
#define AEROGPU_GART_MAX_ENTRIES (1u << 20) /* 4 GiB of aperture */
#define AEROGPU_APERTURE_BASE 0x0000010000000000ull /* 1 TiB: above any guest RAM */

/* ---- Fences ---------------------------------------------------------------------- */
/* Optional fence page GPA (4-byte aligned, 0 = none); see aerogpu_fence_page. */
#define AEROGPU_MMIO_REG_FENCE_GPA_LO 0x120u
#define AEROGPU_MMIO_REG_FENCE_GPA_HI 0x124u
/* Highest completed submission fence; monotonic (never goes backwards). Read-only. */
#define AEROGPU_MMIO_REG_COMPLETED_FENCE_LO 0x130u
#define AEROGPU_MMIO_REG_COMPLETED_FENCE_HI 0x134u

/* Any write makes the device consume the ring from head to tail. */
#define AEROGPU_MMIO_REG_DOORBELL 0x200u

/* ---- Interrupts (one level-triggered INTx line) ------------------------------------
 * The line is asserted while (IRQ_STATUS & IRQ_ENABLE) != 0. A status bit latches only
 * while its enable bit is set; clearing an enable bit also clears that status bit, so
 * re-enabling never delivers a stale event. Writing 1s to IRQ_ACK clears those bits. */
#define AEROGPU_MMIO_REG_IRQ_STATUS 0x300u
#define AEROGPU_MMIO_REG_IRQ_ENABLE 0x304u
#define AEROGPU_MMIO_REG_IRQ_ACK 0x308u

#define AEROGPU_IRQ_FENCE (1u << 0)
#define AEROGPU_IRQ_SCANOUT_VBLANK (1u << 1)
#define AEROGPU_IRQ_ERROR (1u << 31)

/* ---- Error info (AEROGPU_FEATURE_ERROR_INFO, ABI 1.3+) ------------------------------
 * Latched on every device error, independent of IRQ_ENABLE; IRQ_ACK does not clear it.
 * The device keeps running: later submissions are processed normally. */
#define AEROGPU_MMIO_REG_ERROR_CODE 0x310u     /* enum aerogpu_error_code */
#define AEROGPU_MMIO_REG_ERROR_FENCE_LO 0x314u /* signal_fence of the failing submission */
#define AEROGPU_MMIO_REG_ERROR_FENCE_HI 0x318u
#define AEROGPU_MMIO_REG_ERROR_COUNT 0x31Cu    /* monotonic (wrapping) error counter */

enum aerogpu_error_code {
    AEROGPU_ERROR_NONE = 0,
    AEROGPU_ERROR_INTERNAL = 1,
    AEROGPU_ERROR_CMD_DECODE = 2,     /* malformed/truncated command stream or packet */
    AEROGPU_ERROR_OOB = 3,            /* GPA or range outside guest RAM / allocation */
    AEROGPU_ERROR_BACKEND = 4,        /* the executor failed */
    AEROGPU_ERROR_RING = 5,           /* invalid ring header or submit descriptor */
    AEROGPU_ERROR_ALLOC_TABLE = 6,    /* invalid allocation table or missing alloc_id */
    AEROGPU_ERROR_VALIDATION = 7,     /* semantic rule violated (handles, rebind, ...) */
    AEROGPU_ERROR_RESOURCE_LIMIT = 8, /* a size or count cap was exceeded */
    AEROGPU_ERROR_READONLY = 9        /* writeback into a READONLY allocation */
};

/* ---- Scanout 0 -------------------------------------------------------------------- */
#define AEROGPU_MMIO_REG_SCANOUT0_ENABLE 0x400u
#define AEROGPU_MMIO_REG_SCANOUT0_WIDTH 0x404u
#define AEROGPU_MMIO_REG_SCANOUT0_HEIGHT 0x408u
#define AEROGPU_MMIO_REG_SCANOUT0_FORMAT 0x40Cu /* enum aerogpu_format */
#define AEROGPU_MMIO_REG_SCANOUT0_PITCH_BYTES 0x410u
#define AEROGPU_MMIO_REG_SCANOUT0_FB_GPA_LO 0x414u
#define AEROGPU_MMIO_REG_SCANOUT0_FB_GPA_HI 0x418u
/* Vblank (AEROGPU_FEATURE_VBLANK): counter and time of the last vblank, in the device's
 * virtual nanoseconds; they advance only while scanout 0 is enabled. */
#define AEROGPU_MMIO_REG_SCANOUT0_VBLANK_SEQ_LO 0x420u
#define AEROGPU_MMIO_REG_SCANOUT0_VBLANK_SEQ_HI 0x424u
#define AEROGPU_MMIO_REG_SCANOUT0_VBLANK_TIME_NS_LO 0x428u
#define AEROGPU_MMIO_REG_SCANOUT0_VBLANK_TIME_NS_HI 0x42Cu
#define AEROGPU_MMIO_REG_SCANOUT0_VBLANK_PERIOD_NS 0x430u

#define AEROGPU_VBLANK_PERIOD_NS_60HZ 16666667u

/* ---- Hardware cursor (AEROGPU_FEATURE_CURSOR) -------------------------------------- */
#define AEROGPU_MMIO_REG_CURSOR_ENABLE 0x500u
#define AEROGPU_MMIO_REG_CURSOR_X 0x504u      /* int32, scanout pixels, may be negative */
#define AEROGPU_MMIO_REG_CURSOR_Y 0x508u      /* int32 */
#define AEROGPU_MMIO_REG_CURSOR_HOT_X 0x50Cu
#define AEROGPU_MMIO_REG_CURSOR_HOT_Y 0x510u
#define AEROGPU_MMIO_REG_CURSOR_WIDTH 0x514u  /* <= AEROGPU_CURSOR_MAX_DIM */
#define AEROGPU_MMIO_REG_CURSOR_HEIGHT 0x518u /* <= AEROGPU_CURSOR_MAX_DIM */
#define AEROGPU_MMIO_REG_CURSOR_FORMAT 0x51Cu /* enum aerogpu_format (BGRA/RGBA 8888) */
#define AEROGPU_MMIO_REG_CURSOR_FB_GPA_LO 0x520u
#define AEROGPU_MMIO_REG_CURSOR_FB_GPA_HI 0x524u
#define AEROGPU_MMIO_REG_CURSOR_PITCH_BYTES 0x528u

#define AEROGPU_CURSOR_MAX_DIM 256u

/* ---- Pixel formats (scanout, cursor, textures) --------------------------------------
 * Names give the byte order in memory (B8G8R8A8 = bytes B, G, R, A = D3DFMT_A8R8G8B8). */
enum aerogpu_format {
    AEROGPU_FORMAT_INVALID = 0,
    AEROGPU_FORMAT_B8G8R8A8_UNORM = 1,
    AEROGPU_FORMAT_B8G8R8X8_UNORM = 2,
    AEROGPU_FORMAT_R8G8B8A8_UNORM = 3,
    AEROGPU_FORMAT_R8G8B8X8_UNORM = 4,
    AEROGPU_FORMAT_B5G6R5_UNORM = 5,
    AEROGPU_FORMAT_B5G5R5A1_UNORM = 6,
    AEROGPU_FORMAT_R8_UNORM = 7,
    AEROGPU_FORMAT_R8G8_UNORM = 8,
    AEROGPU_FORMAT_R16G16B16A16_FLOAT = 9,
    AEROGPU_FORMAT_R32G32B32A32_FLOAT = 10,
    AEROGPU_FORMAT_R32_FLOAT = 11,
    AEROGPU_FORMAT_A8_UNORM = 12,   /* D3DFMT_A8: one alpha byte, samples (0, 0, 0, a) */
    AEROGPU_FORMAT_L8A8_UNORM = 13, /* D3DFMT_A8L8: bytes L, A, samples (l, l, l, a) */
    AEROGPU_FORMAT_V8U8_SNORM = 14, /* D3DFMT_V8U8: signed bytes U, V, samples (u, v, 1, 1) */
    AEROGPU_FORMAT_Q8W8V8U8_SNORM = 15, /* D3DFMT_Q8W8V8U8: signed bytes U, V, W, Q, samples (u, v, w, q) */
    AEROGPU_FORMAT_D24_UNORM_S8_UINT = 32, /* one LE word: depth bits 31..8, stencil 7..0 (D3D9 D24S8) */
    AEROGPU_FORMAT_D32_FLOAT = 33,
    AEROGPU_FORMAT_D16_UNORM = 34,
    AEROGPU_FORMAT_BC1_UNORM = 64, /* DXT1: 4x4 blocks, 8 bytes each */
    AEROGPU_FORMAT_BC2_UNORM = 65, /* DXT3: 4x4 blocks, 16 bytes each */
    AEROGPU_FORMAT_BC3_UNORM = 66  /* DXT5: 4x4 blocks, 16 bytes each */
};

#endif /* AEROGPU_PCI_H */
