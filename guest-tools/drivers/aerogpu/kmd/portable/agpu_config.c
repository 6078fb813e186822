#include "agpu_config.h"

static uint32_t clamp_u32(uint32_t v, uint32_t lo, uint32_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

void agpu_config_from_registry(const agpu_registry_raw *raw, int is_64bit, agpu_config *out)
{
    agpu_zero(out, sizeof(*out));
    /* The preferred mode is only meaningful as a pair. */
    if (raw->preferred_width && raw->preferred_height) {
        out->preferred_width = raw->preferred_width;
        out->preferred_height = raw->preferred_height;
    }
    out->max_width = raw->max_width;
    out->max_height = raw->max_height;
    out->max_dma_buffer_bytes =
        raw->max_dma_buffer_bytes
            ? clamp_u32(raw->max_dma_buffer_bytes, AGPU_MAX_DMA_MIN, AGPU_MAX_DMA_MAX)
            : (is_64bit ? AGPU_MAX_DMA_DEFAULT_X64 : AGPU_MAX_DMA_DEFAULT_X86);
    out->non_local_memory_size_mb =
        raw->non_local_memory_size_mb
            ? clamp_u32(raw->non_local_memory_size_mb, AGPU_NONLOCAL_MB_MIN,
                        is_64bit ? AGPU_NONLOCAL_MB_MAX_X64 : AGPU_NONLOCAL_MB_MAX_X86)
            : AGPU_NONLOCAL_MB_DEFAULT;
    out->enable_read_gpa_escape = raw->enable_read_gpa_escape == 1;
    out->enable_map_shared_handle_escape = raw->enable_map_shared_handle_escape == 1;
}
