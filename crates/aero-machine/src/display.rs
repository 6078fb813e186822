//! Machine-side glue of the display function: AeroGPU work that needs guest RAM (register
//! writes queued by the platform, vblank ticks) and the choice of the current frame.
//!
//! Bus callbacks cannot reach RAM (the CPU holds it), so the platform queues every BAR0
//! write and asks the CPU to stop after the instruction; the machine applies the queue
//! here through [`GuestRam`], then drops decoded code in the ranges the device wrote
//! (ring head, fence page, writebacks).

use aero_gpu::Frame;
use aero_gpu::aerogpu::ScanoutError;

use super::Machine;
use crate::guest_ram::GuestRam;

impl Machine {
    /// Applies the queued AeroGPU register writes in order, with RAM access.
    pub(super) fn apply_display_writes(&mut self) {
        let writes = std::mem::take(&mut self.platform.aerogpu_writes);
        let now = self.platform.clock.now();
        let mut ram = GuestRam::new(&mut self.memory, &self.platform.map);
        // Vblank state first, so a write sees the device as of now.
        self.platform.aerogpu.tick(now, &mut ram);
        for w in &writes {
            self.platform
                .aerogpu
                .mmio_write(w.offset, usize::from(w.size), w.value, &mut ram);
        }
        for (addr, len) in ram.written {
            self.cpu.invalidate_code(addr, len);
        }
        // Reuse the queue's allocation.
        self.platform.aerogpu_writes = writes;
        self.platform.aerogpu_writes.clear();
    }

    /// Runs AeroGPU's vblank clock up to `now` when it is due (vblank IRQ, VSYNC fences).
    pub(super) fn tick_display(&mut self, now: u64) {
        if self
            .platform
            .aerogpu
            .next_deadline_ns()
            .is_none_or(|d| d > now)
        {
            return;
        }
        let mut ram = GuestRam::new(&mut self.memory, &self.platform.map);
        self.platform.aerogpu.tick(now, &mut ram);
        for (addr, len) in ram.written {
            self.cpu.invalidate_code(addr, len);
        }
    }

    /// The current screen as RGBA pixels: AeroGPU's scanout 0 (with the cursor composited)
    /// while the guest has it enabled, otherwise the VGA/VBE output.
    pub fn screen(&mut self) -> Frame {
        let mut frame = Frame::new();
        if self.platform.aerogpu.scanout().enable {
            let ram = GuestRam::new(&mut self.memory, &self.platform.map);
            match self.platform.aerogpu.render_scanout(&ram, &mut frame) {
                Ok(()) => return frame,
                Err(ScanoutError::Disabled) => {}
                // A scanout the device cannot show: say why and keep the VGA picture.
                Err(e) => tracing::debug!(error = %e, "aerogpu scanout not shown"),
            }
            frame = Frame::new();
        }
        let lfb = &self.memory[self.platform.map.lfb_range()];
        self.platform.vga.render(lfb, &mut frame);
        frame
    }
}
