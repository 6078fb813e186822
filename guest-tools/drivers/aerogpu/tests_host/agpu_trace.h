/* Host-test "guest": a flat guest RAM buffer plus a BAR0 recorder. Everything the
 * portable driver code does to guest memory and to the device is written to a trace file
 * that the guest-tools Rust tests replay into the Rust AeroGPU device model:
 *
 *   "AGTR" u32 version(1), then records (little-endian):
 *     'M' u64 gpa, u32 len, len bytes   guest RAM changed since the previous record
 *     'W' u32 offset, u32 value          BAR0 write (memory diffs always come first)
 *     'F' u64 fence                      expected final COMPLETED_FENCE
 *     'C' u32 count, u32 code            expected ERROR_COUNT and last ERROR_CODE
 *     'S' u32 submissions                expected submissions consumed
 *     'E'                                end
 *
 * BAR0 reads return a static model (magic, ABI, features): the scenarios never depend on
 * device-written values except the ring head, which the recorder advances itself after a
 * doorbell, exactly as the device does (the device writes the same value). */
#ifndef AGPU_TRACE_H
#define AGPU_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "../kmd/portable/agpu_portable.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AGPU_TRACE_RAM_BYTES (8u << 20)

/* Scenario programs: a failed requirement names its location and ends main() with exit 3. */
#define REQUIRE(c)                                                          \
    do {                                                                    \
        if (!(c)) {                                                         \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c);         \
            return 3;                                                       \
        }                                                                   \
    } while (0)

typedef struct agpu_trace {
    uint8_t *ram, *shadow;
    FILE *out;
    uint64_t ring_gpa; /* for the head-follows-tail model; 0 = none yet */
    agpu_mmio_ops ops;
} agpu_trace;

int agpu_trace_open(agpu_trace *t, const char *path);
void agpu_trace_expect(agpu_trace *t, uint64_t fence, uint32_t err_count, uint32_t err_code,
                       uint32_t submissions);
void agpu_trace_close(agpu_trace *t);

#ifdef __cplusplus
}
#endif

#endif
