//! Scanout 0 and the hardware cursor: the registers, and turning them into the machine's
//! current [`Frame`] (scanout read from guest RAM, cursor alpha-composited on top).

use aero_protocol::pci::{CURSOR_MAX_DIM, Format};
use thiserror::Error;

use super::memory::{GuestMemory, GuestMemoryError};
use crate::Frame;

/// Largest scanout the device shows (beyond it the configuration is rejected).
pub const MAX_SCANOUT_DIM: u32 = 8192;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanoutConfig {
    pub enable: bool,
    pub width: u32,
    pub height: u32,
    /// `enum aerogpu_format` value as programmed.
    pub format: u32,
    pub pitch_bytes: u32,
    pub fb_gpa: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CursorConfig {
    pub enable: bool,
    pub x: i32,
    pub y: i32,
    pub hot_x: u32,
    pub hot_y: u32,
    pub width: u32,
    pub height: u32,
    pub format: u32,
    pub fb_gpa: u64,
    pub pitch_bytes: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ScanoutError {
    #[error("scanout is disabled")]
    Disabled,
    #[error("unsupported scanout configuration: {0}")]
    BadConfig(&'static str),
    #[error(transparent)]
    Memory(#[from] GuestMemoryError),
}

/// Converts one row of 32-bit pixels to RGBA8 (alpha forced opaque for X formats).
fn convert_row(format: Format, src: &[u8], dst: &mut [u8]) {
    for (s, d) in src.chunks_exact(4).zip(dst.chunks_exact_mut(4)) {
        let (r, g, b, a) = match format {
            Format::B8G8R8A8Unorm => (s[2], s[1], s[0], s[3]),
            Format::B8G8R8X8Unorm => (s[2], s[1], s[0], 0xFF),
            Format::R8G8B8A8Unorm => (s[0], s[1], s[2], s[3]),
            _ => (s[0], s[1], s[2], 0xFF),
        };
        d.copy_from_slice(&[r, g, b, a]);
    }
}

/// Checks a 32bpp surface and returns its format.
fn surface_format(
    format: u32,
    width: u32,
    height: u32,
    pitch: u32,
    max_dim: u32,
) -> Result<Format, ScanoutError> {
    let format = Format::from_u32(format)
        .filter(|f| f.is_scanout_capable())
        .ok_or(ScanoutError::BadConfig("format"))?;
    if width == 0 || height == 0 || width > max_dim || height > max_dim {
        return Err(ScanoutError::BadConfig("size"));
    }
    if u64::from(pitch) < u64::from(width) * 4 {
        return Err(ScanoutError::BadConfig("pitch below width * 4"));
    }
    Ok(format)
}

/// Appends the unconverted bytes of a validated 32bpp surface (`width * 4` bytes of each
/// of `height` rows, `pitch` apart), read straight from guest memory: comparing these is
/// how a watcher learns the picture changed without converting pixels. The size is
/// bounded by `max_dim` and checked against guest memory before anything is allocated.
fn append_surface_bytes(
    mem: &dyn GuestMemory,
    gpa: u64,
    (width, height, pitch): (u32, u32, u32),
    out: &mut Vec<u8>,
) -> Result<(), ScanoutError> {
    let row_len = width as usize * 4;
    let last_row = u64::from(height - 1) * u64::from(pitch);
    let end = gpa
        .checked_add(last_row)
        .ok_or(ScanoutError::BadConfig("framebuffer address overflows"))?;
    if !mem.contains(gpa, row_len as u64) || !mem.contains(end, row_len as u64) {
        return Err(GuestMemoryError {
            gpa,
            len: last_row + row_len as u64,
        }
        .into());
    }
    // Through a small row buffer: zero-filling the whole output first would cost as much
    // as the copy.
    out.reserve(row_len * height as usize);
    let mut row = vec![0u8; row_len];
    for y in 0..u64::from(height) {
        mem.read(gpa + y * u64::from(pitch), &mut row)?;
        out.extend_from_slice(&row);
    }
    Ok(())
}

impl ScanoutConfig {
    /// Renders the scanout (and `cursor`, if enabled and valid) into `frame`.
    pub fn render(
        &self,
        cursor: &CursorConfig,
        mem: &dyn GuestMemory,
        frame: &mut Frame,
    ) -> Result<(), ScanoutError> {
        if !self.enable {
            return Err(ScanoutError::Disabled);
        }
        let format = surface_format(
            self.format,
            self.width,
            self.height,
            self.pitch_bytes,
            MAX_SCANOUT_DIM,
        )?;
        frame.reset(self.width, self.height);
        let mut row = vec![0u8; self.width as usize * 4];
        for y in 0..self.height {
            let gpa = self
                .fb_gpa
                .checked_add(u64::from(y) * u64::from(self.pitch_bytes))
                .ok_or(ScanoutError::BadConfig("framebuffer address overflows"))?;
            mem.read(gpa, &mut row)?;
            convert_row(format, &row, frame.row_mut(y));
        }
        if cursor.enable {
            // A broken cursor must not blank the desktop: log and show the frame without it.
            if let Err(e) = cursor.composite(mem, frame) {
                tracing::debug!(error = %e, "aerogpu: cursor not drawn");
            }
        }
        Ok(())
    }
    /// Appends the framebuffer's raw bytes (see [`append_surface_bytes`]); errors as
    /// [`ScanoutConfig::render`] would.
    pub fn append_raw_bytes(
        &self,
        mem: &dyn GuestMemory,
        out: &mut Vec<u8>,
    ) -> Result<(), ScanoutError> {
        if !self.enable {
            return Err(ScanoutError::Disabled);
        }
        surface_format(
            self.format,
            self.width,
            self.height,
            self.pitch_bytes,
            MAX_SCANOUT_DIM,
        )?;
        let size = (self.width, self.height, self.pitch_bytes);
        append_surface_bytes(mem, self.fb_gpa, size, out)
    }
}

impl CursorConfig {
    /// Appends the cursor image's raw bytes while it is enabled and valid (nothing when
    /// not: then it is not drawn either).
    pub fn append_raw_bytes(&self, mem: &dyn GuestMemory, out: &mut Vec<u8>) {
        if !self.enable
            || surface_format(
                self.format,
                self.width,
                self.height,
                self.pitch_bytes,
                CURSOR_MAX_DIM,
            )
            .is_err()
        {
            return;
        }
        let size = (self.width, self.height, self.pitch_bytes);
        if append_surface_bytes(mem, self.fb_gpa, size, out).is_err() {
            out.push(0xEE); // unreadable: not drawn, still a different picture
        }
    }

    /// The cursor image as RGBA8, and where its top-left corner lands on the scanout
    /// (position minus hot spot): what a window draws over a scanout on the GPU.
    pub fn image(&self, mem: &dyn GuestMemory) -> Result<CursorImage, ScanoutError> {
        let format = surface_format(
            self.format,
            self.width,
            self.height,
            self.pitch_bytes,
            CURSOR_MAX_DIM,
        )?;
        let mut image = Frame::new();
        image.reset(self.width, self.height);
        let mut src = vec![0u8; self.width as usize * 4];
        for cy in 0..self.height {
            let gpa = self
                .fb_gpa
                .checked_add(u64::from(cy) * u64::from(self.pitch_bytes))
                .ok_or(ScanoutError::BadConfig("cursor address overflows"))?;
            mem.read(gpa, &mut src)?;
            convert_row(format, &src, image.row_mut(cy));
        }
        Ok(CursorImage {
            x: i64::from(self.x) - i64::from(self.hot_x),
            y: i64::from(self.y) - i64::from(self.hot_y),
            image,
        })
    }

    pub(crate) fn composite(
        &self,
        mem: &dyn GuestMemory,
        frame: &mut Frame,
    ) -> Result<(), ScanoutError> {
        self.image(mem)?.draw_over(frame);
        Ok(())
    }
}

/// The hardware cursor as a window draws it: RGBA8 pixels with their top-left corner at
/// (`x`, `y`) of the scanout (may be partly or wholly outside).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CursorImage {
    pub x: i64,
    pub y: i64,
    pub image: Frame,
}

impl CursorImage {
    /// Alpha-blends the cursor over `frame` (on the sRGB-encoded bytes, as scanout
    /// hardware mixes a cursor plane).
    pub fn draw_over(&self, frame: &mut Frame) {
        let frame_width = i64::from(frame.width);
        for cy in 0..self.image.height {
            let fy = self.y + i64::from(cy);
            if fy < 0 || fy >= i64::from(frame.height) {
                continue;
            }
            let src = self.image.row(cy);
            let dst_row = frame.row_mut(fy as u32);
            for (cx, px) in src.chunks_exact(4).enumerate() {
                let fx = self.x + cx as i64;
                if fx < 0 || fx >= frame_width {
                    continue;
                }
                let Some(dst) = dst_row.get_mut(fx as usize * 4..fx as usize * 4 + 4) else {
                    continue;
                };
                let a = u32::from(px[3]);
                for c in 0..3 {
                    let blended =
                        (u32::from(px[c]) * a + u32::from(dst[c]) * (255 - a) + 127) / 255;
                    dst[c] = blended as u8;
                }
            }
        }
    }
}
