//! The RGBA frame the display hands to screenshots and the window.

/// An RGBA8 image, row-major, `width * height * 4` bytes, no row padding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u8>,
}

impl Frame {
    pub fn new() -> Frame {
        Frame::default()
    }

    /// Resizes to `width` x `height` (reusing the allocation) and clears to opaque black.
    pub(crate) fn reset(&mut self, width: u32, height: u32) {
        self.width = width;
        self.height = height;
        let len = width as usize * height as usize * 4;
        self.pixels.clear();
        self.pixels.resize(len, 0);
        for px in self.pixels.chunks_exact_mut(4) {
            px[3] = 0xFF;
        }
    }

    /// The RGBA value at (x, y), if inside the frame.
    pub fn pixel(&self, x: u32, y: u32) -> Option<[u8; 4]> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let i = (y as usize * self.width as usize + x as usize) * 4;
        let p = self.pixels.get(i..i + 4)?;
        Some([p[0], p[1], p[2], p[3]])
    }

    /// RGBA row `y` (empty if outside the frame).
    pub fn row(&self, y: u32) -> &[u8] {
        let stride = self.width as usize * 4;
        let start = y as usize * stride;
        self.pixels.get(start..start + stride).unwrap_or(&[])
    }

    /// Mutable RGBA row `y` (empty if outside the frame).
    pub(crate) fn row_mut(&mut self, y: u32) -> &mut [u8] {
        let stride = self.width as usize * 4;
        let start = y as usize * stride;
        self.pixels
            .get_mut(start..start + stride)
            .unwrap_or(&mut [])
    }
}
