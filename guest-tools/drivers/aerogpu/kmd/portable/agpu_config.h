/* Registry parameters and their documented defaults and clamps. The Windows glue reads
 * the raw REG_DWORDs (0 / missing = unset) and passes them here. */
#ifndef AGPU_CONFIG_H
#define AGPU_CONFIG_H

#include "agpu_portable.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct agpu_registry_raw {
    uint32_t preferred_width, preferred_height; /* Services\aerogpu\Parameters */
    uint32_t max_width, max_height;
    uint32_t max_dma_buffer_bytes;
    uint32_t non_local_memory_size_mb;          /* HKR\Parameters */
    uint32_t enable_read_gpa_escape;
    uint32_t enable_map_shared_handle_escape;
} agpu_registry_raw;

typedef struct agpu_config {
    uint32_t preferred_width, preferred_height; /* both 0 unless both were set */
    uint32_t max_width, max_height;             /* 0 = no cap */
    uint32_t max_dma_buffer_bytes;
    uint32_t non_local_memory_size_mb;
    int enable_read_gpa_escape;
    int enable_map_shared_handle_escape;
} agpu_config;

#define AGPU_MAX_DMA_DEFAULT_X64 (32u << 20)
#define AGPU_MAX_DMA_DEFAULT_X86 (16u << 20)
#define AGPU_MAX_DMA_MIN (256u << 10)
#define AGPU_MAX_DMA_MAX (256u << 20)
#define AGPU_NONLOCAL_MB_DEFAULT 512u
#define AGPU_NONLOCAL_MB_MIN 128u
#define AGPU_NONLOCAL_MB_MAX_X64 2048u
#define AGPU_NONLOCAL_MB_MAX_X86 1024u

/* Applies defaults and clamps; is_64bit selects the x64 or x86 limits. */
void agpu_config_from_registry(const agpu_registry_raw *raw, int is_64bit, agpu_config *out);

#ifdef __cplusplus
}
#endif

#endif /* AGPU_CONFIG_H */
