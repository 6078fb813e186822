#include "agpu_device.h"
#include "agpu_ring.h"

agpu_status agpu_probe(const agpu_mmio_ops *mmio, agpu_device_info *out)
{
    agpu_zero(out, sizeof(*out));
    out->magic = agpu_rd(mmio, AEROGPU_MMIO_REG_MAGIC);
    if (out->magic != AEROGPU_MMIO_MAGIC) return AGPU_ERR_NOT_SUPPORTED;
    out->abi_version = agpu_rd(mmio, AEROGPU_MMIO_REG_ABI_VERSION);
    if ((out->abi_version >> 16) != AEROGPU_ABI_MAJOR) return AGPU_ERR_ABI_MISMATCH;
    out->features = ((uint64_t)agpu_rd(mmio, AEROGPU_MMIO_REG_FEATURES_HI) << 32) |
                    agpu_rd(mmio, AEROGPU_MMIO_REG_FEATURES_LO);
    return AGPU_OK;
}

uint32_t agpu_irq_mask(uint64_t features, int vblank_requested)
{
    uint32_t m = AEROGPU_IRQ_FENCE | AEROGPU_IRQ_ERROR;
    if (vblank_requested && (features & AEROGPU_FEATURE_VBLANK)) m |= AEROGPU_IRQ_SCANOUT_VBLANK;
    return m;
}

int agpu_isr(const agpu_mmio_ops *mmio, uint32_t enable_mask, uint64_t features,
             agpu_irq_result *out)
{
    uint32_t status;
    agpu_zero(out, sizeof(*out));
    status = agpu_rd(mmio, AEROGPU_MMIO_REG_IRQ_STATUS) & enable_mask;
    if (!status) return 0;
    agpu_wr(mmio, AEROGPU_MMIO_REG_IRQ_ACK, status);
    out->status = status;
    /* Read the fence after the ack so a completion racing the ack is not lost: it either
     * shows in this value or raises the line again. */
    out->completed_fence = agpu_read_reg64_stable(mmio, AEROGPU_MMIO_REG_COMPLETED_FENCE_LO,
                                                  AEROGPU_MMIO_REG_COMPLETED_FENCE_HI);
    if ((status & AEROGPU_IRQ_ERROR) && (features & AEROGPU_FEATURE_ERROR_INFO)) {
        out->error_code = agpu_rd(mmio, AEROGPU_MMIO_REG_ERROR_CODE);
        out->error_fence = ((uint64_t)agpu_rd(mmio, AEROGPU_MMIO_REG_ERROR_FENCE_HI) << 32) |
                           agpu_rd(mmio, AEROGPU_MMIO_REG_ERROR_FENCE_LO);
        out->error_count = agpu_rd(mmio, AEROGPU_MMIO_REG_ERROR_COUNT);
    }
    return 1;
}

void agpu_scanout_program(const agpu_mmio_ops *mmio, const agpu_scanout *s)
{
    /* Disable first so the device never scans a half-updated configuration. */
    agpu_wr(mmio, AEROGPU_MMIO_REG_SCANOUT0_ENABLE, 0);
    agpu_wr(mmio, AEROGPU_MMIO_REG_SCANOUT0_WIDTH, s->width);
    agpu_wr(mmio, AEROGPU_MMIO_REG_SCANOUT0_HEIGHT, s->height);
    agpu_wr(mmio, AEROGPU_MMIO_REG_SCANOUT0_FORMAT, s->format);
    agpu_wr(mmio, AEROGPU_MMIO_REG_SCANOUT0_PITCH_BYTES, s->pitch);
    agpu_wr(mmio, AEROGPU_MMIO_REG_SCANOUT0_FB_GPA_LO, (uint32_t)s->fb_gpa);
    agpu_wr(mmio, AEROGPU_MMIO_REG_SCANOUT0_FB_GPA_HI, (uint32_t)(s->fb_gpa >> 32));
    if (s->enable && s->fb_gpa) agpu_wr(mmio, AEROGPU_MMIO_REG_SCANOUT0_ENABLE, 1);
}

void agpu_cursor_program(const agpu_mmio_ops *mmio, const agpu_cursor *c)
{
    agpu_wr(mmio, AEROGPU_MMIO_REG_CURSOR_ENABLE, 0);
    agpu_wr(mmio, AEROGPU_MMIO_REG_CURSOR_X, (uint32_t)c->x);
    agpu_wr(mmio, AEROGPU_MMIO_REG_CURSOR_Y, (uint32_t)c->y);
    agpu_wr(mmio, AEROGPU_MMIO_REG_CURSOR_HOT_X, c->hot_x);
    agpu_wr(mmio, AEROGPU_MMIO_REG_CURSOR_HOT_Y, c->hot_y);
    agpu_wr(mmio, AEROGPU_MMIO_REG_CURSOR_WIDTH, c->width);
    agpu_wr(mmio, AEROGPU_MMIO_REG_CURSOR_HEIGHT, c->height);
    agpu_wr(mmio, AEROGPU_MMIO_REG_CURSOR_FORMAT, c->format);
    agpu_wr(mmio, AEROGPU_MMIO_REG_CURSOR_PITCH_BYTES, c->pitch);
    agpu_wr(mmio, AEROGPU_MMIO_REG_CURSOR_FB_GPA_LO, (uint32_t)c->fb_gpa);
    agpu_wr(mmio, AEROGPU_MMIO_REG_CURSOR_FB_GPA_HI, (uint32_t)(c->fb_gpa >> 32));
    if (c->enable && c->fb_gpa && c->width && c->height &&
        c->width <= AEROGPU_CURSOR_MAX_DIM && c->height <= AEROGPU_CURSOR_MAX_DIM)
        agpu_wr(mmio, AEROGPU_MMIO_REG_CURSOR_ENABLE, 1);
}

void agpu_power_down(const agpu_mmio_ops *mmio, uint64_t features)
{
    agpu_wr(mmio, AEROGPU_MMIO_REG_IRQ_ENABLE, 0);
    agpu_wr(mmio, AEROGPU_MMIO_REG_IRQ_ACK, 0xFFFFFFFFu);
    if (features & AEROGPU_FEATURE_CURSOR) {
        agpu_wr(mmio, AEROGPU_MMIO_REG_CURSOR_ENABLE, 0);
        agpu_wr(mmio, AEROGPU_MMIO_REG_CURSOR_FB_GPA_LO, 0);
        agpu_wr(mmio, AEROGPU_MMIO_REG_CURSOR_FB_GPA_HI, 0);
    }
    agpu_wr(mmio, AEROGPU_MMIO_REG_SCANOUT0_ENABLE, 0);
    agpu_wr(mmio, AEROGPU_MMIO_REG_SCANOUT0_FB_GPA_LO, 0);
    agpu_wr(mmio, AEROGPU_MMIO_REG_SCANOUT0_FB_GPA_HI, 0);
    agpu_ring_stop(mmio);
    if (features & AEROGPU_FEATURE_GART) {
        agpu_wr(mmio, AEROGPU_MMIO_REG_GART_ENTRIES, 0);
        agpu_wr(mmio, AEROGPU_MMIO_REG_GART_GPA_LO, 0);
        agpu_wr(mmio, AEROGPU_MMIO_REG_GART_GPA_HI, 0);
    }
}
