//! `aero compare`'s rule: two same-sized pictures are equal when every pixel outside the
//! excluded rectangles is within a per-channel tolerance. Alpha is ignored (screens are
//! opaque; a PNG written by another tool may carry any alpha).

use crate::screenshot::Image;

/// A rectangle in pixels; parsed from `x,y,w,h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
}

impl Rect {
    pub fn contains(&self, px: u32, py: u32) -> bool {
        px >= self.x
            && py >= self.y
            && u64::from(px) < u64::from(self.x) + u64::from(self.w)
            && u64::from(py) < u64::from(self.y) + u64::from(self.h)
    }
}

impl std::str::FromStr for Rect {
    type Err = String;
    fn from_str(s: &str) -> Result<Rect, String> {
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        let [x, y, w, h] = parts.as_slice() else {
            return Err(format!("`{s}` is not x,y,w,h"));
        };
        let num = |v: &str| {
            v.parse::<u32>()
                .map_err(|_| format!("`{v}` in `{s}` is not a pixel count"))
        };
        Ok(Rect {
            x: num(x)?,
            y: num(y)?,
            w: num(w)?,
            h: num(h)?,
        })
    }
}

/// What [`compare`] found.
#[derive(Debug)]
pub struct Difference {
    /// Pixels (outside the exclusions) with a channel off by more than the tolerance.
    pub differing: u64,
    /// The largest channel difference seen outside the exclusions.
    pub max_channel_diff: u8,
    /// Red where pixels differ, blue over excluded areas, a dimmed copy of `b` elsewhere.
    pub diff: Image,
}

/// Compares `a` with `b` pixel by pixel; `Err` when the sizes differ.
pub fn compare(
    a: &Image,
    b: &Image,
    tolerance: u8,
    exclude: &[Rect],
) -> Result<Difference, String> {
    if (a.width, a.height) != (b.width, b.height) {
        return Err(format!(
            "sizes differ: {}x{} and {}x{}",
            a.width, a.height, b.width, b.height
        ));
    }
    let mut diff = Vec::with_capacity(b.rgba.len());
    let mut differing = 0;
    let mut max_channel_diff = 0;
    let width = a.width.max(1);
    for (i, (pa, pb)) in a
        .rgba
        .chunks_exact(4)
        .zip(b.rgba.chunks_exact(4))
        .enumerate()
    {
        let (x, y) = (
            (i as u64 % u64::from(width)) as u32,
            (i as u64 / u64::from(width)) as u32,
        );
        if exclude.iter().any(|r| r.contains(x, y)) {
            diff.extend_from_slice(&[0, 0, 160, 255]);
            continue;
        }
        let d = pa[..3]
            .iter()
            .zip(&pb[..3])
            .map(|(p, q)| p.abs_diff(*q))
            .max()
            .unwrap_or(0);
        max_channel_diff = max_channel_diff.max(d);
        if d > tolerance {
            differing += 1;
            diff.extend_from_slice(&[255, 0, 0, 255]);
        } else {
            diff.extend_from_slice(&[pb[0] / 3, pb[1] / 3, pb[2] / 3, 255]);
        }
    }
    Ok(Difference {
        differing,
        max_channel_diff,
        diff: Image {
            width: b.width,
            height: b.height,
            rgba: diff,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solid(w: u32, h: u32, px: [u8; 4]) -> Image {
        Image {
            width: w,
            height: h,
            rgba: px.repeat((w * h) as usize),
        }
    }

    #[test]
    fn tolerance_counts_and_max() {
        let b = solid(4, 3, [100, 100, 100, 255]);
        let mut a = b.clone();
        a.rgba[0] = 103; // pixel (0,0) off by 3
        a.rgba[4 * 5 + 1] = 150; // pixel (1,1) off by 50
        let d = compare(&a, &b, 0, &[]).unwrap();
        assert_eq!((d.differing, d.max_channel_diff), (2, 50));
        let d = compare(&a, &b, 3, &[]).unwrap();
        assert_eq!((d.differing, d.max_channel_diff), (1, 50));
        assert_eq!(&d.diff.rgba[20..24], &[255, 0, 0, 255]);
        assert_eq!(&d.diff.rgba[0..4], &[33, 33, 33, 255]);
        let d = compare(&a, &b, 50, &[]).unwrap();
        assert_eq!(d.differing, 0);
    }

    #[test]
    fn excluded_rects_are_ignored_and_alpha_too() {
        let b = solid(4, 4, [0, 0, 0, 255]);
        let mut a = b.clone();
        a.rgba[4 * 5] = 255; // (1,1)
        a.rgba[3] = 0; // alpha of (0,0)
        let ex: Rect = "1,1,2,2".parse().unwrap();
        let d = compare(&a, &b, 0, &[ex]).unwrap();
        assert_eq!((d.differing, d.max_channel_diff), (0, 0));
        assert_eq!(&d.diff.rgba[20..24], &[0, 0, 160, 255]);
        let d = compare(&a, &b, 0, &["2,2,2,2".parse().unwrap()]).unwrap();
        assert_eq!(d.differing, 1);
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(compare(&solid(2, 2, [0; 4]), &solid(2, 3, [0; 4]), 0, &[]).is_err());
        assert!("1,2,3".parse::<Rect>().is_err());
        assert!("1,2,3,-4".parse::<Rect>().is_err());
        assert_eq!(
            "1, 2,3,4".parse::<Rect>(),
            Ok(Rect {
                x: 1,
                y: 2,
                w: 3,
                h: 4
            })
        );
        // A rectangle reaching past u32 does not overflow.
        assert!(
            Rect {
                x: u32::MAX,
                y: 0,
                w: u32::MAX,
                h: 1
            }
            .contains(u32::MAX, 0)
        );
    }
}
