//! Screenshots: writing the guest screen as PNG and comparing it with a golden image.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// An RGBA8 image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub rgba: Vec<u8>,
}

/// Writes tightly packed RGBA8 pixels as a PNG file.
pub fn write_png(path: &Path, width: u32, height: u32, rgba: &[u8]) -> anyhow::Result<()> {
    anyhow::ensure!(
        rgba.len() as u64 == width as u64 * height as u64 * 4 && width > 0 && height > 0,
        "screen has no picture to save ({width}x{height})"
    );
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), width, height);
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header().context("writing PNG header")?;
    w.write_image_data(rgba).context("writing PNG data")?;
    w.finish().context("finishing PNG")?;
    Ok(())
}

/// Reads a PNG as RGBA8 (RGB and grey images are expanded).
pub fn read_png(path: &Path) -> anyhow::Result<Image> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut dec = png::Decoder::new(std::io::BufReader::new(file));
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = dec
        .read_info()
        .with_context(|| format!("{} is not a PNG", path.display()))?;
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader
        .next_frame(&mut buf)
        .with_context(|| format!("cannot decode {}", path.display()))?;
    let (w, h) = (info.width, info.height);
    let px = (w * h) as usize;
    let rgba = match info.color_type {
        png::ColorType::Rgba => buf[..px * 4].to_vec(),
        png::ColorType::Rgb => buf[..px * 3]
            .chunks(3)
            .flat_map(|c| [c[0], c[1], c[2], 255])
            .collect(),
        png::ColorType::Grayscale => buf[..px].iter().flat_map(|&g| [g, g, g, 255]).collect(),
        png::ColorType::GrayscaleAlpha => buf[..px * 2]
            .chunks(2)
            .flat_map(|c| [c[0], c[0], c[0], c[1]])
            .collect(),
        png::ColorType::Indexed => {
            anyhow::bail!("{}: indexed PNG was not expanded", path.display())
        }
    };
    Ok(Image {
        width: w,
        height: h,
        rgba,
    })
}

/// How different two images may be and still match.
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    /// Largest allowed difference of one colour channel for a pixel to count as equal.
    pub per_channel: u8,
    /// Largest allowed fraction of unequal pixels.
    pub mismatch_ratio: f64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance {
            per_channel: 8,
            mismatch_ratio: 0.001,
        }
    }
}

#[derive(Debug)]
pub struct Comparison {
    pub mismatched: u64,
    pub total: u64,
    /// Red where pixels differ, a dimmed copy of the expected image elsewhere.
    pub diff: Image,
}

impl Comparison {
    /// Few enough pixels differ for `tol`.
    pub fn matches(&self, tol: Tolerance) -> bool {
        self.mismatched as f64 <= tol.mismatch_ratio * self.total as f64
    }
}

/// Compares `actual` with `expected`; sizes must match.
pub fn compare(actual: &Image, expected: &Image, tol: Tolerance) -> Result<Comparison, String> {
    if (actual.width, actual.height) != (expected.width, expected.height) {
        return Err(format!(
            "size differs: actual {}x{}, expected {}x{}",
            actual.width, actual.height, expected.width, expected.height
        ));
    }
    let mut diff = Vec::with_capacity(expected.rgba.len());
    let mut mismatched = 0;
    for (a, e) in actual.rgba.chunks(4).zip(expected.rgba.chunks(4)) {
        let differs = a
            .iter()
            .zip(e)
            .any(|(x, y)| x.abs_diff(*y) > tol.per_channel);
        if differs {
            mismatched += 1;
            diff.extend_from_slice(&[255, 0, 0, 255]);
        } else {
            diff.extend_from_slice(&[e[0] / 3, e[1] / 3, e[2] / 3, 255]);
        }
    }
    let total = u64::from(expected.width) * u64::from(expected.height);
    Ok(Comparison {
        mismatched,
        total,
        diff: Image {
            width: expected.width,
            height: expected.height,
            rgba: diff,
        },
    })
}

/// Compares a screenshot with a golden PNG. On mismatch writes `<out_dir>/<name>.actual.png`,
/// `.expected.png` and `.diff.png` and returns an error naming them. With
/// `AERO_UPDATE_GOLDEN=1` the golden file is (re)written from `actual` instead.
pub fn assert_matches_golden(
    actual: &Image,
    golden: &Path,
    out_dir: &Path,
    tol: Tolerance,
) -> anyhow::Result<()> {
    if std::env::var_os("AERO_UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        write_png(golden, actual.width, actual.height, &actual.rgba)?;
        return Ok(());
    }
    let expected = read_png(golden)?;
    let name = golden
        .file_stem()
        .map_or("screen".into(), |s| s.to_string_lossy().into_owned());
    let out = |suffix: &str| -> PathBuf { out_dir.join(format!("{name}.{suffix}.png")) };
    let fail = |why: String| -> anyhow::Result<()> {
        std::fs::create_dir_all(out_dir)?;
        write_png(&out("actual"), actual.width, actual.height, &actual.rgba)?;
        write_png(
            &out("expected"),
            expected.width,
            expected.height,
            &expected.rgba,
        )?;
        anyhow::bail!(
            "{} does not match: {why}; see {}",
            golden.display(),
            out_dir.display()
        )
    };
    match compare(actual, &expected, tol) {
        Err(why) => fail(why),
        Ok(c) if !c.matches(tol) => {
            std::fs::create_dir_all(out_dir)?;
            write_png(&out("diff"), c.diff.width, c.diff.height, &c.diff.rgba)?;
            fail(format!("{} of {} pixels differ", c.mismatched, c.total))
        }
        Ok(_) => Ok(()),
    }
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
    fn png_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.png");
        let mut img = solid(3, 2, [1, 2, 3, 255]);
        img.rgba[4] = 200;
        write_png(&p, img.width, img.height, &img.rgba).unwrap();
        assert_eq!(read_png(&p).unwrap(), img);
    }

    #[test]
    fn tolerance_and_ratio() {
        let e = solid(10, 10, [100, 100, 100, 255]);
        let mut a = e.clone();
        a.rgba[0] = 105; // within tolerance 8
        a.rgba[4] = 150; // pixel 1 differs
        let c = compare(&a, &e, Tolerance::default()).unwrap();
        assert_eq!(c.mismatched, 1);
        assert_eq!(&c.diff.rgba[4..8], &[255, 0, 0, 255]);
        assert!(compare(&solid(1, 1, [0; 4]), &e, Tolerance::default()).is_err());
    }

    #[test]
    fn golden_failure_writes_diff_images() {
        let dir = tempfile::tempdir().unwrap();
        let golden = dir.path().join("g.png");
        let e = solid(4, 4, [0, 0, 0, 255]);
        write_png(&golden, 4, 4, &e.rgba).unwrap();
        assert!(assert_matches_golden(&e, &golden, dir.path(), Tolerance::default()).is_ok());
        let a = solid(4, 4, [255, 255, 255, 255]);
        let err = assert_matches_golden(&a, &golden, &dir.path().join("out"), Tolerance::default())
            .unwrap_err();
        assert!(err.to_string().contains("16 of 16 pixels differ"), "{err}");
        assert!(dir.path().join("out/g.diff.png").exists());
        assert!(dir.path().join("out/g.actual.png").exists());
    }
}
