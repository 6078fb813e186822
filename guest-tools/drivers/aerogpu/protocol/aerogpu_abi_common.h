/* AeroGPU ABI: shared helpers for every protocol header.
 *
 * Rules for all AeroGPU ABI structs (they cross the guest/host boundary):
 *   - little-endian, fixed-width integer types only (no pointers, no long, no enums
 *     as field types), so x86 and x64 builds see the same bytes;
 *   - explicit reserved/padding fields; 64-bit fields sit at 8-byte aligned offsets and
 *     every struct holding one has a size that is a multiple of 8 (i386 GCC aligns
 *     uint64_t to 4 inside structs, MSVC to 8: this keeps both identical);
 *   - reserved fields must be written as zero and ignored when read;
 *   - minor ABI versions are append-only (new fields go at the end of a packet, readers
 *     use the packet's own size), a major mismatch is refused.
 */
#ifndef AEROGPU_ABI_COMMON_H
#define AEROGPU_ABI_COMMON_H

#include <stddef.h>
#include <stdint.h>

#if defined(__cplusplus)
#define AEROGPU_STATIC_ASSERT(expr, msg) static_assert((expr), msg)
#elif defined(__STDC_VERSION__) && (__STDC_VERSION__ >= 201112L)
#define AEROGPU_STATIC_ASSERT(expr, msg) _Static_assert((expr), msg)
#else
/* Pre-C11 compilers (old MSVC C mode): a negative array size fails the build. */
#define AEROGPU_SA_CAT2(a, b) a##b
#define AEROGPU_SA_CAT(a, b) AEROGPU_SA_CAT2(a, b)
#define AEROGPU_STATIC_ASSERT(expr, msg) \
    typedef char AEROGPU_SA_CAT(aerogpu_static_assert_, __LINE__)[(expr) ? 1 : -1]
#endif

#define AEROGPU_ASSERT_SIZE(type, size) \
    AEROGPU_STATIC_ASSERT(sizeof(type) == (size), "sizeof(" #type ") changed")
#define AEROGPU_ASSERT_OFFSET(type, field, off) \
    AEROGPU_STATIC_ASSERT(offsetof(type, field) == (off), "offsetof(" #type ", " #field ") changed")

/* ABI version of this header set: major << 16 | minor. */
#define AEROGPU_ABI_MAJOR 1u
#define AEROGPU_ABI_MINOR 6u /* 4: CLEAR_RECTS; 5: GART; 6: volumes, texture stage state */
#define AEROGPU_ABI_VERSION_U32 ((AEROGPU_ABI_MAJOR << 16) | AEROGPU_ABI_MINOR)

/* Protocol object handle (resource, shader, input layout): 32-bit, guest-chosen, one
 * global namespace per device, 0 = "none". */
typedef uint32_t aerogpu_handle_t;

#endif /* AEROGPU_ABI_COMMON_H */
