/* Adapter-global open refcounts of shared allocations keyed by share_token, and the
 * share_token generator. When the last wrapper of a token closes, the KMD sends
 * RELEASE_SHARED_SURFACE so the host drops the token mapping. Fixed capacity: the kernel
 * must not grow memory on user-mode demand. */
#ifndef AGPU_SHARE_H
#define AGPU_SHARE_H

#include "agpu_portable.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AGPU_SHARE_CAPACITY 1024u

typedef struct agpu_share_entry {
    uint64_t token;
    uint32_t refs;
} agpu_share_entry;

typedef struct agpu_share_table {
    agpu_share_entry entries[AGPU_SHARE_CAPACITY];
    uint64_t token_state; /* generator state (seeded once per boot) */
} agpu_share_table;

void agpu_share_init(agpu_share_table *t, uint64_t seed);

/* A new nonzero token that is not currently in the table (splitmix64 over the seed, so
 * tokens are not guessable from the count alone; the seed comes from the boot time). */
uint64_t agpu_share_new_token(agpu_share_table *t);

/* One more open of `token` (create or open). AGPU_ERR_NO_RESOURCES when full. */
agpu_status agpu_share_open(agpu_share_table *t, uint64_t token);

/* One close. *last is set to 1 when this was the final reference (send RELEASE). Unknown
 * tokens return AGPU_ERR_INVALID_PARAMETER and never report "last". */
agpu_status agpu_share_close(agpu_share_table *t, uint64_t token, int *last);

uint32_t agpu_share_refs(const agpu_share_table *t, uint64_t token);

/* Writes a RELEASE_SHARED_SURFACE command stream (header + one packet) into out.
 * Returns the byte count (0 if out_size is too small). */
uint32_t agpu_build_release_stream(uint64_t token, void *out, uint32_t out_size);

#ifdef __cplusplus
}
#endif

#endif /* AGPU_SHARE_H */
