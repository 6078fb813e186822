//! Where the guest picture goes in the window: aspect-correct fit, integer scaling, and
//! the window sizes that show a guest mode at a whole-number scale.
//!
//! Sizes are physical pixels (HiDPI screens are handled by working in physical units).

/// A rectangle in window pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
}

/// Where a `frame`-sized picture lands in a `window`-sized area, centred, with its aspect
/// ratio kept. With `integer`, the scale is a whole number (sharp pixels) as long as the
/// picture fits at 1:1; smaller windows fall back to a fractional fit.
pub fn fit(frame: (u32, u32), window: (u32, u32), integer: bool) -> Rect {
    let (fw, fh) = (u64::from(frame.0.max(1)), u64::from(frame.1.max(1)));
    let (ww, wh) = (u64::from(window.0), u64::from(window.1));
    let whole = (ww / fw).min(wh / fh);
    let (w, h) = if integer && whole >= 1 {
        (fw * whole, fh * whole)
    } else if ww * fh <= wh * fw {
        // Width limits: full width, height by the frame's aspect.
        (ww, ww * fh / fw)
    } else {
        (wh * fw / fh, wh)
    };
    Rect {
        x: ((ww - w) / 2) as u32,
        y: ((wh - h) / 2) as u32,
        width: w as u32,
        height: h as u32,
    }
}

/// The largest whole scale at which `frame` fits in `area` (at least 1).
pub fn largest_integer_scale(frame: (u32, u32), area: (u32, u32)) -> u32 {
    let (fw, fh) = (frame.0.max(1), frame.1.max(1));
    (area.0 / fw).min(area.1 / fh).max(1)
}

/// First window size: the guest picture at the largest whole scale that leaves room for
/// the desktop's panels (90% of the monitor), 1:1 when the monitor is unknown.
pub fn initial_window_size(frame: (u32, u32), monitor: Option<(u32, u32)>) -> (u32, u32) {
    let scale = monitor.map_or(1, |(w, h)| {
        largest_integer_scale(frame, (w * 9 / 10, h * 9 / 10))
    });
    (frame.0.max(1) * scale, frame.1.max(1) * scale)
}

/// The scale the user chose by sizing the window around `frame`, as a whole number
/// (rounded to nearest, at least 1).
pub fn current_scale(frame: (u32, u32), window: (u32, u32)) -> u32 {
    let (fw, fh) = (frame.0.max(1), frame.1.max(1));
    // The axis that limits the picture decides.
    let scale_x = (window.0 + fw / 2) / fw;
    let scale_y = (window.1 + fh / 2) / fh;
    scale_x.min(scale_y).max(1)
}

/// The guest switched from `old` to `new` mode: the window size that keeps the scale the
/// window had, capped to `monitor` (None when nothing changes).
pub fn window_for_mode_change(
    old: (u32, u32),
    new: (u32, u32),
    window: (u32, u32),
    monitor: Option<(u32, u32)>,
) -> Option<(u32, u32)> {
    if old == new || new.0 == 0 || new.1 == 0 {
        return None;
    }
    let mut scale = current_scale(old, window);
    if let Some(area) = monitor {
        scale = scale.min(largest_integer_scale(
            new,
            (area.0 * 9 / 10, area.1 * 9 / 10),
        ));
    }
    let size = (new.0 * scale, new.1 * scale);
    (size != window).then_some(size)
}

/// The USB tablet position (0..=32767 on both axes) of the window point `cursor` over the
/// picture drawn in `picture`; points outside the picture clamp to its edge.
pub fn tablet_position(cursor: (f64, f64), picture: Rect) -> (u16, u16) {
    let axis = |pos: f64, start: u32, len: u32| {
        let len = f64::from(len.max(1));
        let t = ((pos - f64::from(start)) / len).clamp(0.0, 1.0);
        (t * 32767.0).round() as u16
    };
    (
        axis(cursor.0, picture.x, picture.width),
        axis(cursor.1, picture.y, picture.height),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tablet_position_maps_the_picture_and_clamps_outside() {
        // A 640x480 picture letterboxed at x 80 in an 800x480 window.
        let picture = fit((640, 480), (800, 480), true);
        assert_eq!(tablet_position((80.0, 0.0), picture), (0, 0));
        assert_eq!(tablet_position((400.0, 240.0), picture), (16384, 16384));
        assert_eq!(tablet_position((720.0, 480.0), picture), (32767, 32767));
        assert_eq!(tablet_position((10.0, -5.0), picture), (0, 0));
        assert_eq!(tablet_position((9999.0, 9999.0), picture), (32767, 32767));
    }

    #[test]
    fn fit_keeps_aspect_and_centres() {
        // 4:3 picture in a wide window: pillarbox.
        assert_eq!(
            fit((640, 480), (1920, 1080), false),
            Rect {
                x: 240,
                y: 0,
                width: 1440,
                height: 1080
            }
        );
        // In a tall window: letterbox.
        assert_eq!(
            fit((640, 480), (800, 1000), false),
            Rect {
                x: 0,
                y: 200,
                width: 800,
                height: 600
            }
        );
        // Exact multiple fills the window.
        assert_eq!(
            fit((720, 400), (1440, 800), false),
            Rect {
                x: 0,
                y: 0,
                width: 1440,
                height: 800
            }
        );
        // Smaller window: scaled down.
        assert_eq!(
            fit((640, 480), (320, 240), false),
            Rect {
                x: 0,
                y: 0,
                width: 320,
                height: 240
            }
        );
    }

    #[test]
    fn integer_fit_uses_whole_scales() {
        assert_eq!(
            fit((640, 480), (1920, 1080), true),
            Rect {
                x: 320,
                y: 60,
                width: 1280,
                height: 960
            }
        );
        assert_eq!(
            fit((720, 400), (1500, 1200), true),
            Rect {
                x: 30,
                y: 200,
                width: 1440,
                height: 800
            }
        );
        // Too small for 1:1: fractional fit rather than cropping.
        assert_eq!(
            fit((640, 480), (320, 400), true),
            Rect {
                x: 0,
                y: 80,
                width: 320,
                height: 240
            }
        );
    }

    #[test]
    fn degenerate_sizes_do_not_panic() {
        assert_eq!(fit((0, 0), (100, 100), false).width, 100);
        assert_eq!(
            fit((640, 480), (0, 0), true),
            Rect {
                x: 0,
                y: 0,
                width: 0,
                height: 0
            }
        );
        assert_eq!(largest_integer_scale((0, 0), (0, 0)), 1);
        assert_eq!(current_scale((0, 0), (0, 0)), 1);
    }

    #[test]
    fn initial_window_is_the_largest_whole_scale_that_fits() {
        assert_eq!(
            initial_window_size((720, 400), Some((1920, 1080))),
            (1440, 800)
        );
        assert_eq!(
            initial_window_size((640, 480), Some((1920, 1080))),
            (1280, 960)
        );
        assert_eq!(
            initial_window_size((640, 480), Some((3840, 2160))),
            (2560, 1920)
        );
        assert_eq!(
            initial_window_size((1024, 768), Some((1280, 800))),
            (1024, 768)
        );
        assert_eq!(initial_window_size((640, 480), None), (640, 480));
    }

    #[test]
    fn mode_change_keeps_the_scale() {
        // Text mode at 2x switches to 640x480: stays at 2x.
        assert_eq!(
            window_for_mode_change((720, 400), (640, 480), (1440, 800), Some((1920, 1080))),
            Some((1280, 960))
        );
        // 1024x768 at 2x would not fit a 1080p monitor: 1x.
        assert_eq!(
            window_for_mode_change((640, 480), (1024, 768), (1280, 960), Some((1920, 1080))),
            Some((1024, 768))
        );
        // Same mode, or a window already right: nothing to do.
        assert_eq!(
            window_for_mode_change((640, 480), (640, 480), (1000, 700), None),
            None
        );
        assert_eq!(
            window_for_mode_change((720, 400), (640, 480), (640, 480), None),
            None
        );
        // A user-sized window rounds to the nearest whole scale.
        assert_eq!(current_scale((640, 480), (1300, 1000)), 2);
    }
}
