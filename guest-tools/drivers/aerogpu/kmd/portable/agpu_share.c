#include "agpu_share.h"

void agpu_share_init(agpu_share_table *t, uint64_t seed)
{
    agpu_zero(t, sizeof(*t));
    t->token_state = seed;
}

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static agpu_share_entry *find(agpu_share_table *t, uint64_t token)
{
    uint32_t i;
    for (i = 0; i < AGPU_SHARE_CAPACITY; i++)
        if (t->entries[i].refs && t->entries[i].token == token) return &t->entries[i];
    return NULL;
}

uint64_t agpu_share_new_token(agpu_share_table *t)
{
    for (;;) {
        uint64_t tok = splitmix64(&t->token_state);
        if (tok != 0 && !find(t, tok)) return tok;
    }
}

agpu_status agpu_share_open(agpu_share_table *t, uint64_t token)
{
    uint32_t i;
    agpu_share_entry *e;
    if (token == 0) return AGPU_ERR_INVALID_PARAMETER;
    e = find(t, token);
    if (e) {
        if (e->refs == 0xFFFFFFFFu) return AGPU_ERR_NO_RESOURCES;
        e->refs++;
        return AGPU_OK;
    }
    for (i = 0; i < AGPU_SHARE_CAPACITY; i++) {
        if (t->entries[i].refs == 0) {
            t->entries[i].token = token;
            t->entries[i].refs = 1;
            return AGPU_OK;
        }
    }
    return AGPU_ERR_NO_RESOURCES;
}

agpu_status agpu_share_close(agpu_share_table *t, uint64_t token, int *last)
{
    agpu_share_entry *e = token ? find(t, token) : NULL;
    *last = 0;
    if (!e) return AGPU_ERR_INVALID_PARAMETER;
    if (--e->refs == 0) {
        e->token = 0;
        *last = 1;
    }
    return AGPU_OK;
}

uint32_t agpu_share_refs(const agpu_share_table *t, uint64_t token)
{
    uint32_t i;
    for (i = 0; i < AGPU_SHARE_CAPACITY; i++)
        if (t->entries[i].refs && t->entries[i].token == token) return t->entries[i].refs;
    return 0;
}

uint32_t agpu_build_release_stream(uint64_t token, void *out, uint32_t out_size)
{
    struct aerogpu_cmd_stream_header h;
    struct aerogpu_cmd_release_shared_surface p;
    uint32_t total = (uint32_t)(sizeof(h) + sizeof(p));
    if (!out || out_size < total) return 0;
    agpu_zero(&h, sizeof(h));
    h.magic = AEROGPU_CMD_STREAM_MAGIC;
    h.abi_version = AEROGPU_ABI_VERSION_U32;
    h.size_bytes = total;
    agpu_zero(&p, sizeof(p));
    p.hdr.opcode = AEROGPU_CMD_RELEASE_SHARED_SURFACE;
    p.hdr.size_bytes = (uint32_t)sizeof(p);
    p.share_token = token;
    agpu_copy(out, &h, sizeof(h));
    agpu_copy((uint8_t *)out + sizeof(h), &p, sizeof(p));
    return total;
}
