//! Beam position, retrace status and blink phases, all derived from the virtual time
//! the machine passes in — never from the host clock — so runs are reproducible.

use super::Vga;

const NS_PER_SEC: u128 = 1_000_000_000;
/// Frame rate assumed for VBE modes (the DISPI interface has no timing registers).
const VBE_FRAME_NS: u64 = 16_666_667;

/// One frame's timing as programmed in the CRTC (or a 60 Hz model for VBE modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FrameTiming {
    pub(crate) line_ns: u64,
    pub(crate) total_lines: u64,
    pub(crate) display_lines: u64,
    pub(crate) retrace_start: u64,
    pub(crate) retrace_lines: u64,
    /// Share of each line (in dots) that is visible, as (visible, total).
    pub(crate) visible_dots: (u64, u64),
}

impl FrameTiming {
    pub(crate) fn frame_ns(&self) -> u64 {
        self.line_ns.saturating_mul(self.total_lines).max(1)
    }

    /// Input status 1: bit 0 = display disabled (any blanking), bit 3 = vertical retrace.
    pub(crate) fn status_bits(&self, now_ns: u64) -> u8 {
        let pos = now_ns % self.frame_ns();
        let line = pos / self.line_ns;
        let dot = (pos % self.line_ns) * self.visible_dots.1 / self.line_ns;
        let in_retrace =
            line >= self.retrace_start && line < self.retrace_start + self.retrace_lines;
        let blanking = line >= self.display_lines || dot >= self.visible_dots.0;
        u8::from(blanking) | u8::from(in_retrace) << 3
    }
}

impl Vga {
    pub(crate) fn frame_timing(&self) -> FrameTiming {
        if let Some(mode) = self.vbe.active_mode() {
            let total_lines = u64::from(mode.height) + 45;
            return FrameTiming {
                line_ns: (VBE_FRAME_NS / total_lines).max(1),
                total_lines,
                display_lines: u64::from(mode.height),
                retrace_start: u64::from(mode.height) + 10,
                retrace_lines: 2,
                visible_dots: (u64::from(mode.width), u64::from(mode.width) + 160),
            };
        }
        let dots_per_char = if self.seq.eight_dot_chars() { 8 } else { 9 };
        let clock_mul = if self.seq.half_dot_clock() { 2 } else { 1 };
        let clock_hz: u128 = match (self.misc >> 2) & 3 {
            1 => 28_322_000,
            _ => 25_175_000,
        };
        let total_dots = u64::from(self.crtc.horizontal_total_chars()) * dots_per_char * clock_mul;
        let visible =
            (u64::from(self.crtc.display_chars()) * dots_per_char * clock_mul).min(total_dots);
        let line_ns = (u128::from(total_dots) * NS_PER_SEC / clock_hz).max(1) as u64;
        let display_lines = u64::from(self.crtc.display_lines());
        let total_lines = u64::from(self.crtc.vertical_total()).max(display_lines + 1);
        let mut retrace_start = u64::from(self.crtc.vertical_retrace_start());
        if retrace_start >= total_lines {
            retrace_start = display_lines.min(total_lines - 1);
        }
        let end_low = u64::from(self.crtc.vertical_retrace_end_low());
        let retrace_lines = match end_low.wrapping_sub(retrace_start) & 0x0F {
            0 => 16,
            n => n,
        };
        FrameTiming {
            line_ns,
            total_lines,
            display_lines,
            retrace_start,
            retrace_lines,
            visible_dots: (visible, total_dots.max(1)),
        }
    }

    /// Frames displayed since virtual time 0.
    pub(crate) fn frame_number(&self) -> u64 {
        self.now_ns / self.frame_timing().frame_ns()
    }

    /// The text cursor is shown for 8 frames, then hidden for 8.
    pub(crate) fn cursor_blink_on(&self) -> bool {
        (self.frame_number() / 8).is_multiple_of(2)
    }

    /// Blinking characters are shown for 16 frames, then hidden for 16.
    pub(crate) fn char_blink_on(&self) -> bool {
        (self.frame_number() / 16).is_multiple_of(2)
    }

    /// Input status register 1 (0x3DA / 0x3BA).
    pub(crate) fn input_status_1(&self) -> u8 {
        self.frame_timing().status_bits(self.now_ns)
    }
}
