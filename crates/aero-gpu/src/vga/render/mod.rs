//! Turning the adapter state into an RGBA frame (and the text screen into a string).

mod graphics;
mod lfb;
mod text;

use super::{PLANE_SIZE, VbeMode, Vga};
use crate::cp437::cp437_to_char;
use crate::frame::Frame;

/// Bounds on a rendered VGA frame, whatever the CRTC is programmed with.
pub const MAX_FRAME_WIDTH: u32 = 2048;
pub const MAX_FRAME_HEIGHT: u32 = 2048;

/// What the adapter is currently displaying.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DisplayMode {
    /// Alphanumeric mode: `columns` x `rows` cells of `char_width` x `char_height` dots.
    Text {
        columns: u32,
        rows: u32,
        char_width: u32,
        char_height: u32,
    },
    /// 16-colour planar graphics (modes 0Dh, 0Eh, 10h, 12h); size in pixels.
    Planar16 { width: u32, height: u32 },
    /// 256-colour graphics (mode 13h, unchained "mode X"); size in pixels.
    Packed256 { width: u32, height: u32 },
    /// CGA-compatible 4-colour graphics (modes 4/5); size in pixels.
    Cga4 { width: u32, height: u32 },
    /// A Bochs VBE linear-framebuffer mode.
    Vbe(VbeMode),
}

/// Where display line `y` fetches from: the start address, or address 0 below the
/// line-compare split.
pub(super) struct LineSource {
    pub(super) base: u32,
    /// Line number within the region, after scan doubling.
    pub(super) line: u32,
    /// Attribute-controller pixel panning for this line.
    pub(super) pan: u32,
}

impl Vga {
    /// The current display mode as the registers describe it.
    pub fn display_mode(&self) -> DisplayMode {
        if let Some(mode) = self.vbe.active_mode() {
            return DisplayMode::Vbe(mode);
        }
        let lines = self.crtc.display_lines() / self.scan_repeat();
        let clocks = self.crtc.display_chars();
        if !self.attr.graphics_mode() {
            let char_height = self.crtc.max_scan_line() + 1;
            return DisplayMode::Text {
                columns: clocks,
                rows: lines / char_height,
                char_width: if self.seq.eight_dot_chars() { 8 } else { 9 },
                char_height,
            };
        }
        // Scan lines of a row repeat the same pixels, unless the CGA interleave makes
        // each scan line fetch its own memory bank.
        let height = if self.crtc.cga_interleave() {
            lines
        } else {
            lines / (self.crtc.max_scan_line() + 1)
        };
        if self.attr.eight_bit_color() || self.gc.shift_256() {
            DisplayMode::Packed256 {
                width: clocks * 4,
                height,
            }
        } else if self.gc.shift_interleave() {
            DisplayMode::Cga4 {
                width: clocks * 8,
                height,
            }
        } else {
            DisplayMode::Planar16 {
                width: clocks * 8,
                height,
            }
        }
    }

    /// Renders the current screen into `out` (resized as needed); VBE modes show `lfb`,
    /// the linear framebuffer. Blinking follows the virtual time last passed to
    /// [`Vga::advance`].
    pub fn render(&mut self, lfb: &[u8], out: &mut Frame) {
        if let Some(mode) = self.vbe.active_mode() {
            lfb::render(self, lfb, mode, out);
            return;
        }
        let (width, height) = self.output_size();
        out.reset(width, height);
        if !self.attr.display_enabled() || self.seq.screen_off() {
            return; // blanked: palette access by the CPU, or screen off
        }
        match self.display_mode() {
            DisplayMode::Text { .. } => text::render(self, out),
            DisplayMode::Planar16 { .. } => graphics::render_planar16(self, out),
            DisplayMode::Packed256 { .. } => graphics::render_packed256(self, out),
            DisplayMode::Cga4 { .. } => graphics::render_cga4(self, out),
            DisplayMode::Vbe(_) => {}
        }
    }

    /// The characters of the text-mode screen (CP437 shown as Unicode), one line per
    /// row with trailing spaces removed; `None` in graphics and VBE modes.
    pub fn text_screen(&self) -> Option<String> {
        let DisplayMode::Text { columns, rows, .. } = self.display_mode() else {
            return None;
        };
        let start = self.crtc.start_address();
        let pitch = self.crtc.row_pitch();
        let mut screen = String::new();
        for row in 0..rows.min(MAX_FRAME_HEIGHT) {
            let mut line = String::new();
            for col in 0..columns {
                let offset = self.crtc.memory_offset(start + row * pitch + col, 0);
                line.push(cp437_to_char(self.plane(0, offset)));
            }
            screen.push_str(line.trim_end());
            screen.push('\n');
        }
        Some(screen)
    }

    /// Output size in pixels for the VGA (non-VBE) modes.
    fn output_size(&self) -> (u32, u32) {
        let dots = if self.attr.graphics_mode() || self.seq.eight_dot_chars() {
            8
        } else {
            9
        };
        let width =
            self.crtc.display_chars() * dots * if self.seq.half_dot_clock() { 2 } else { 1 };
        let height = self.crtc.display_lines();
        (width.min(MAX_FRAME_WIDTH), height.min(MAX_FRAME_HEIGHT))
    }

    pub(super) fn scan_repeat(&self) -> u32 {
        if self.crtc.double_scan() { 2 } else { 1 }
    }

    pub(super) fn line_source(&self, y: u32) -> LineSource {
        let split = self.crtc.line_compare();
        let repeat = self.scan_repeat();
        if y > split {
            let pan = if self.attr.pan_below_split() {
                self.attr.panning()
            } else {
                0
            };
            LineSource {
                base: 0,
                line: (y - split - 1) / repeat,
                pan,
            }
        } else {
            let line = y / repeat + self.crtc.preset_row_scan();
            LineSource {
                base: self.crtc.start_address(),
                line,
                pan: self.attr.panning(),
            }
        }
    }

    pub(super) fn plane(&self, plane: usize, offset: usize) -> u8 {
        self.vram
            .get(plane * PLANE_SIZE + (offset & (PLANE_SIZE - 1)))
            .copied()
            .unwrap_or(0)
    }

    /// RGBA for each 4-bit attribute/pixel value, through the attribute palette and DAC.
    pub(super) fn attribute_colors(&self) -> [[u8; 4]; 16] {
        std::array::from_fn(|i| self.dac.rgba(self.attr.dac_index(i as u8)))
    }
}
