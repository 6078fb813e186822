/* Shared helpers for the project's own WDDM 1.1 / D3D9 DDI header subset.
 *
 * mingw-w64 ships no WDDM headers, so guest-tools/drivers/aerogpu/include/ holds the
 * subset the AeroGPU drivers use, written from Microsoft's public documentation of the
 * Windows 7 (WDDM 1.1) interfaces. Only Windows 7 layouts are declared: members that the
 * public pages show behind DXGKDDI_INTERFACE_VERSION_WIN8 or later guards are left out,
 * because dxgkrnl on Windows 7 reads the tables with the Windows 7 offsets.
 *
 * Calling convention: the WDK builds x86 kernel drivers with __stdcall as the default and
 * the D3D DDIs are declared APIENTRY (__stdcall); every DDI, callback and interface
 * function pointer here is therefore declared with AEROGPU_DDI (stdcall; ignored on x64).
 *
 * Layouts are pinned by AEROGPU_DDI_ASSERT_* static asserts for x86 and x64. Sizes that
 * could not be cross-checked against a Windows 7 WDK are marked "unverified".
 */
#ifndef AEROGPU_DDI_COMMON_H
#define AEROGPU_DDI_COMMON_H

#include <stddef.h>

#if defined(_WIN64) || defined(__x86_64__)
#define AEROGPU_DDI_X64 1
#define AEROGPU_DDI_SEL(x86, x64) (x64)
#else
#define AEROGPU_DDI_X64 0
#define AEROGPU_DDI_SEL(x86, x64) (x86)
#endif

#if defined(__GNUC__) && !defined(__x86_64__)
#define AEROGPU_DDI __attribute__((stdcall))
#elif defined(_MSC_VER)
#define AEROGPU_DDI __stdcall
#else
#define AEROGPU_DDI
#endif

#ifndef APIENTRY
#define APIENTRY AEROGPU_DDI
#endif

#if defined(__cplusplus)
#define AEROGPU_DDI_STATIC_ASSERT(e, m) static_assert((e), m)
#else
#define AEROGPU_DDI_STATIC_ASSERT(e, m) _Static_assert((e), m)
#endif

/* Size/offset that must hold on x86 (first value) and x64 (second value). */
#define AEROGPU_DDI_ASSERT_SIZE(type, x86, x64) \
    AEROGPU_DDI_STATIC_ASSERT(sizeof(type) == AEROGPU_DDI_SEL(x86, x64), "sizeof(" #type ")")
#define AEROGPU_DDI_ASSERT_OFFSET(type, field, x86, x64)                       \
    AEROGPU_DDI_STATIC_ASSERT(offsetof(type, field) == AEROGPU_DDI_SEL(x86, x64), \
                              "offsetof(" #type ", " #field ")")

#endif /* AEROGPU_DDI_COMMON_H */
