/* Register-level device logic shared by StartDevice, the ISR, power transitions, scanout
 * and cursor DDIs. Only BAR0 accesses through agpu_mmio_ops. */
#ifndef AGPU_DEVICE_H
#define AGPU_DEVICE_H

#include "agpu_portable.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct agpu_device_info {
    uint32_t magic, abi_version;
    uint64_t features;
} agpu_device_info;

/* Reads MAGIC/ABI_VERSION/FEATURES. AGPU_ERR_NOT_SUPPORTED for a foreign magic,
 * AGPU_ERR_ABI_MISMATCH for a different ABI major (StartDevice: STATUS_NOT_SUPPORTED). */
agpu_status agpu_probe(const agpu_mmio_ops *mmio, agpu_device_info *out);

typedef struct agpu_irq_result {
    uint32_t status;       /* IRQ_STATUS & enable (what was acknowledged) */
    uint64_t completed_fence;
    uint32_t error_code, error_count;
    uint64_t error_fence;
} agpu_irq_result;

/* ISR body: returns 0 if the (shared) interrupt was not ours. Acks what it handled. */
int agpu_isr(const agpu_mmio_ops *mmio, uint32_t enable_mask, uint64_t features,
             agpu_irq_result *out);

/* Interrupt mask the driver wants given dxgkrnl's vblank request. Fence and error
 * interrupts are always on; vblank only when requested and supported. */
uint32_t agpu_irq_mask(uint64_t features, int vblank_requested);

typedef struct agpu_scanout {
    uint32_t enable, width, height, format, pitch;
    uint64_t fb_gpa;
} agpu_scanout;

void agpu_scanout_program(const agpu_mmio_ops *mmio, const agpu_scanout *s);

typedef struct agpu_cursor {
    uint32_t enable;
    int32_t x, y;
    uint32_t hot_x, hot_y, width, height, format, pitch;
    uint64_t fb_gpa;
} agpu_cursor;

void agpu_cursor_program(const agpu_mmio_ops *mmio, const agpu_cursor *c);

/* Leaving D0: IRQs off and acked, cursor and scanout off with their GPAs cleared, ring
 * and fence programming cleared so the device stops DMA into memory being freed. */
void agpu_power_down(const agpu_mmio_ops *mmio, uint64_t features);

#ifdef __cplusplus
}
#endif

#endif /* AGPU_DEVICE_H */
