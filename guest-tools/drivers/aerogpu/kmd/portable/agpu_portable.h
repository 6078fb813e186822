/* Common definitions for the OS-independent parts of the AeroGPU KMD.
 *
 * Everything under kmd/portable/ builds both inside the Windows kernel driver (mingw-w64,
 * freestanding) and natively on the host for unit tests. It must therefore not call any
 * OS or C library function except the few declared here, never allocate, and treat every
 * value coming from user mode or the device as hostile (bounds checked, no overflow).
 */
#ifndef AGPU_PORTABLE_H
#define AGPU_PORTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "../../protocol/aerogpu_pci.h"
#include "../../protocol/aerogpu_ring.h"
#include "../../protocol/aerogpu_cmd.h"
#include "../../protocol/aerogpu_wddm_alloc.h"
#include "../../protocol/aerogpu_dbgctl_escape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Portable status codes; the Windows glue maps them to NTSTATUS (agpu_status_to_nt). */
typedef enum agpu_status {
    AGPU_OK = 0,
    AGPU_ERR_INVALID_PARAMETER = 1,
    AGPU_ERR_BUFFER_TOO_SMALL = 2,
    AGPU_ERR_NOT_SUPPORTED = 3,
    AGPU_ERR_ACCESS_DENIED = 4,
    AGPU_ERR_RING_FULL = 5,
    AGPU_ERR_DEVICE_NOT_READY = 6,
    AGPU_ERR_TOO_LARGE = 7,
    AGPU_ERR_CONFLICT = 8,     /* same alloc_id with a different GPA */
    AGPU_ERR_NO_RESOURCES = 9, /* a fixed-size table is full */
    AGPU_ERR_ABI_MISMATCH = 10
} agpu_status;

/* Byte helpers: the code writes shared memory through these so the layout is explicit
 * and there is no unaligned-access or strict-aliasing trouble. Little-endian guests only
 * (x86/x64), so a plain byte copy is the wire encoding. */
static inline void agpu_copy(void *dst, const void *src, size_t n)
{
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    while (n--) *d++ = *s++;
}

static inline void agpu_zero(void *dst, size_t n)
{
    unsigned char *d = (unsigned char *)dst;
    while (n--) *d++ = 0;
}

/* Compiler barrier + store ordering. On x86/x64 stores are not reordered with other
 * stores, so a compiler barrier is enough for the device to observe descriptor bytes
 * before the tail update. */
#if defined(__GNUC__)
#define AGPU_WRITE_BARRIER() __asm__ __volatile__("" ::: "memory")
#else
#define AGPU_WRITE_BARRIER() ((void)0)
#endif

/* BAR0 access, abstracted so the same submission code drives real MMIO in the driver and
 * a recorder in host tests. */
typedef struct agpu_mmio_ops {
    void *ctx;
    uint32_t (*read32)(void *ctx, uint32_t offset);
    void (*write32)(void *ctx, uint32_t offset, uint32_t value);
} agpu_mmio_ops;

static inline uint32_t agpu_rd(const agpu_mmio_ops *m, uint32_t off) { return m->read32(m->ctx, off); }
static inline void agpu_wr(const agpu_mmio_ops *m, uint32_t off, uint32_t v) { m->write32(m->ctx, off, v); }

/* A 64-bit register pair the device updates on its own: HI, LO, HI until stable. */
uint64_t agpu_read_reg64_stable(const agpu_mmio_ops *m, uint32_t lo_off, uint32_t hi_off);

#ifdef __cplusplus
}
#endif

#endif /* AGPU_PORTABLE_H */
