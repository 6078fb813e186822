//! Needles in openQA's format and a matcher with openQA's similarity rule.
//!
//! A needle is `NAME.json` (`tags`, `area` rectangles) next to `NAME.png` (the screen it was
//! made from). Each `match` area must be found on the screen within `margin` pixels
//! (default 50) of where it was recorded, with a similarity of at least `match` percent
//! (default 96); `exclude` areas are blanked in both pictures before matching.
//!
//! The rule, as os-autoinst applies it (learned from its documentation and behaviour, this
//! is our own code): both pictures are converted to grey (ITU-R 601 weights) after a 3×3
//! Gaussian blur; the best position is the one with the smallest sum of squared grey
//! differences; there the error counts only pixels whose grey values differ by 16 or more,
//! each as the squared difference of the values rounded to 16 levels; with `mse` that error
//! per pixel, similarity = clamp(0.9 + (40 − mse) / 380, 0, 1).
//!
//! Where Aero differs from openQA:
//! - the recorded position is tried first and accepted when it is good enough, without the
//!   search (openQA always searches; the outcome differs only when two positions in the
//!   margin both match);
//! - the best position minimises the plain sum of squared differences, not OpenCV's
//!   normalised one, and ties go to the position nearest the recorded one; for areas of
//!   16×16 pixels or more it is chosen among the 8 best positions of a coarse pass that
//!   samples every 4th pixel of every 4th row (openQA compares every pixel everywhere);
//! - the blur clamps at the picture's edges (OpenCV reflects);
//! - `ocr` areas are refused with an error (no OCR here); openQA does not match them either.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::screenshot::{Image, read_png};

/// openQA's default `match` percentage.
pub const DEFAULT_MATCH: f64 = 96.0;
/// How far from its recorded position an area is searched, in pixels.
pub const DEFAULT_MARGIN: u32 = 50;

#[derive(Debug, thiserror::Error)]
pub enum NeedleError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a needle: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{path}: {why}")]
    Invalid { path: PathBuf, why: String },
    #[error("{path}: picture: {why}")]
    Picture { path: PathBuf, why: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AreaType {
    Match,
    Ocr,
    Exclude,
}

/// One `area` entry of the json.
#[derive(Clone, Debug, PartialEq, Deserialize, serde::Serialize)]
pub struct Area {
    pub xpos: u32,
    pub ypos: u32,
    pub width: u32,
    pub height: u32,
    #[serde(rename = "type", default = "default_type")]
    pub kind: AreaType,
    /// Required similarity in percent.
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub match_percent: Option<f64>,
    /// Search distance in pixels around the recorded position.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin: Option<u32>,
}

fn default_type() -> AreaType {
    AreaType::Match
}

#[derive(Debug, Deserialize, serde::Serialize)]
pub struct NeedleJson {
    pub tags: Vec<String>,
    pub area: Vec<Area>,
    #[serde(default)]
    pub properties: Vec<serde_json::Value>,
}

/// A loaded needle: its json and picture, checked against each other.
#[derive(Debug)]
pub struct Needle {
    pub name: String,
    pub json: NeedleJson,
    pub image: Image,
    /// The picture as blurred grey, exclusions blanked.
    grey: Grey,
}

/// How one match area fared.
#[derive(Clone, Debug, PartialEq)]
pub struct AreaResult {
    /// Index in the json's `area` list.
    pub index: usize,
    /// Where the area was found best on the screen.
    pub x: u32,
    pub y: u32,
    pub similarity: f64,
    pub required: f64,
}

impl AreaResult {
    pub fn ok(&self) -> bool {
        self.similarity >= self.required
    }
}

/// How a needle fared on one screen.
#[derive(Clone, Debug, PartialEq)]
pub struct MatchResult {
    pub areas: Vec<AreaResult>,
}

impl MatchResult {
    /// Every match area matched.
    pub fn ok(&self) -> bool {
        self.areas.iter().all(AreaResult::ok)
    }
    /// The worst area's similarity minus what it needed (≥ 0 when matched): ranks candidates.
    pub fn margin(&self) -> f64 {
        self.areas
            .iter()
            .map(|a| a.similarity - a.required)
            .fold(f64::INFINITY, f64::min)
    }
}

impl Needle {
    /// Reads `NAME.json` and the `NAME.png` beside it.
    pub fn load(json_path: &Path) -> Result<Needle, NeedleError> {
        let text = std::fs::read_to_string(json_path).map_err(|source| NeedleError::Read {
            path: json_path.into(),
            source,
        })?;
        let json: NeedleJson = serde_json::from_str(&text).map_err(|source| NeedleError::Json {
            path: json_path.into(),
            source,
        })?;
        let png = json_path.with_extension("png");
        let image = read_png(&png).map_err(|e| NeedleError::Picture {
            path: png.clone(),
            why: format!("{e:#}"),
        })?;
        let name = json_path
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        Needle::new(name, json, image).map_err(|why| NeedleError::Invalid {
            path: json_path.into(),
            why,
        })
    }

    /// Checks the areas against the picture.
    pub fn new(name: String, json: NeedleJson, image: Image) -> Result<Needle, String> {
        if !json.area.iter().any(|a| a.kind == AreaType::Match) {
            return Err("no area of type match".into());
        }
        for (i, a) in json.area.iter().enumerate() {
            if a.kind == AreaType::Ocr {
                return Err(format!("area {i}: ocr areas are not supported"));
            }
            if a.width == 0 || a.height == 0 {
                return Err(format!("area {i} is empty"));
            }
            if u64::from(a.xpos) + u64::from(a.width) > u64::from(image.width)
                || u64::from(a.ypos) + u64::from(a.height) > u64::from(image.height)
            {
                return Err(format!(
                    "area {i} ({},{} {}x{}) is outside the {}x{} picture",
                    a.xpos, a.ypos, a.width, a.height, image.width, image.height
                ));
            }
            if let Some(m) = a.match_percent
                && !(0.0..=100.0).contains(&m)
            {
                return Err(format!("area {i}: match {m} is not a percentage"));
            }
        }
        let grey = Grey::from_image(&image, &exclusions(&json.area));
        Ok(Needle {
            name,
            json,
            image,
            grey,
        })
    }

    /// Matches against a screen; a screen of a different size is searched all the same
    /// (areas that do not fit score 0).
    pub fn find(&self, screen: &Image) -> MatchResult {
        self.find_in(&Grey::from_image(screen, &exclusions(&self.json.area)))
    }

    /// Matches against a screen already converted by [`Screen::new`].
    pub fn find_on(&self, screen: &Screen) -> MatchResult {
        let ex = exclusions(&self.json.area);
        if ex.is_empty() {
            self.find_in(&screen.plain)
        } else {
            self.find_in(&Grey::from_rgba(
                screen.width,
                screen.height,
                screen.rgba,
                &ex,
            ))
        }
    }

    fn find_in(&self, screen: &Grey) -> MatchResult {
        let areas = self
            .json
            .area
            .iter()
            .enumerate()
            .filter(|(_, a)| a.kind == AreaType::Match)
            .map(|(index, a)| {
                let required = a.match_percent.unwrap_or(DEFAULT_MATCH) / 100.0;
                let margin = a.margin.unwrap_or(DEFAULT_MARGIN);
                let (x, y, similarity) = search(screen, &self.grey, a, margin, required);
                AreaResult {
                    index,
                    x,
                    y,
                    similarity,
                    required,
                }
            })
            .collect();
        MatchResult { areas }
    }

    /// A screen-sized picture of how `result` differs: the screen dimmed, each match area
    /// outlined where it was found, its pixels red where the grey values differ by 16 or
    /// more (the pixels that count against the similarity).
    pub fn diff_image(&self, screen: &Image, result: &MatchResult) -> Image {
        let mut out = screen.clone();
        for px in out.rgba.chunks_exact_mut(4) {
            for c in &mut px[..3] {
                *c /= 3;
            }
        }
        let grey = Grey::from_image(screen, &exclusions(&self.json.area));
        for r in &result.areas {
            let a = &self.json.area[r.index];
            for dy in 0..a.height {
                for dx in 0..a.width {
                    let (sx, sy) = (r.x + dx, r.y + dy);
                    if sx >= screen.width || sy >= screen.height {
                        continue;
                    }
                    let s = grey.at(sx, sy);
                    let n = self.grey.at(a.xpos + dx, a.ypos + dy);
                    let edge = dx == 0 || dy == 0 || dx + 1 == a.width || dy + 1 == a.height;
                    let colour = if s.abs_diff(n) >= 16 {
                        [255, 0, 0]
                    } else if edge {
                        [0, 255, 0]
                    } else {
                        continue;
                    };
                    let i = (sy as usize * screen.width as usize + sx as usize) * 4;
                    out.rgba[i..i + 3].copy_from_slice(&colour);
                }
            }
        }
        out
    }
}

fn exclusions(areas: &[Area]) -> Vec<&Area> {
    areas
        .iter()
        .filter(|a| a.kind == AreaType::Exclude)
        .collect()
}

/// A screen converted once for any number of needles (those without exclusions share it).
/// It borrows the pixels (the machine's last frame, say): converting copies nothing else.
pub struct Screen<'a> {
    width: u32,
    height: u32,
    rgba: &'a [u8],
    plain: Grey,
}

impl<'a> Screen<'a> {
    /// `rgba` holds `width` × `height` RGBA pixels (missing ones count as black).
    pub fn new(width: u32, height: u32, rgba: &'a [u8]) -> Screen<'a> {
        let plain = Grey::from_rgba(width, height, rgba, &[]);
        Screen {
            width,
            height,
            rgba,
            plain,
        }
    }

    pub fn of(image: &'a Image) -> Screen<'a> {
        Screen::new(image.width, image.height, &image.rgba)
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    pub fn height(&self) -> u32 {
        self.height
    }

    pub fn rgba(&self) -> &'a [u8] {
        self.rgba
    }
}

/// A blurred grey picture.
#[derive(Debug)]
struct Grey {
    width: u32,
    height: u32,
    px: Vec<u8>,
}

impl Grey {
    /// Grey (601 weights) of the picture with `exclude` areas filled with one grey level,
    /// then a 3×3 Gaussian blur (weights 1 2 1 each way), edges clamped.
    fn from_image(img: &Image, exclude: &[&Area]) -> Grey {
        Grey::from_rgba(img.width, img.height, &img.rgba, exclude)
    }

    fn from_rgba(width: u32, height: u32, rgba: &[u8], exclude: &[&Area]) -> Grey {
        let (w, h) = (width as usize, height as usize);
        let mut grey: Vec<f32> = rgba
            .chunks_exact(4)
            .take(w * h)
            .map(|p| 0.299 * f32::from(p[0]) + 0.587 * f32::from(p[1]) + 0.114 * f32::from(p[2]))
            .collect();
        grey.resize(w * h, 0.0);
        for a in exclude {
            let x_end = (a.xpos as usize).saturating_add(a.width as usize).min(w);
            let y_end = (a.ypos as usize).saturating_add(a.height as usize).min(h);
            for y in (a.ypos as usize).min(h)..y_end {
                grey[y * w + (a.xpos as usize).min(x_end)..y * w + x_end].fill(128.0);
            }
        }
        let mut rows = vec![0.0f32; w * h];
        for y in 0..h {
            for x in 0..w {
                let l = grey[y * w + x.saturating_sub(1)];
                let r = grey[y * w + (x + 1).min(w - 1)];
                rows[y * w + x] = (l + 2.0 * grey[y * w + x] + r) / 4.0;
            }
        }
        let mut px = vec![0u8; w * h];
        for y in 0..h {
            for x in 0..w {
                let u = rows[y.saturating_sub(1) * w + x];
                let d = rows[(y + 1).min(h - 1) * w + x];
                px[y * w + x] = ((u + 2.0 * rows[y * w + x] + d) / 4.0).round() as u8;
            }
        }
        Grey { width, height, px }
    }

    fn at(&self, x: u32, y: u32) -> u8 {
        self.px[y as usize * self.width as usize + x as usize]
    }
}

/// Sum of squared differences of the area at (`sx`,`sy`) on the screen against the needle,
/// giving up once it exceeds `limit`.
/// `rows` gives the order of the area's rows (most varied first, so a wrong position goes
/// over the limit early); the sum itself does not depend on it.
fn ssd(
    screen: &Grey,
    needle: &Grey,
    a: &Area,
    rows: &[usize],
    (sx, sy): (u32, u32),
    limit: u64,
) -> u64 {
    let mut sum = 0u64;
    for &dy in rows {
        let s0 = (sy as usize + dy) * screen.width as usize + sx as usize;
        let n0 = (a.ypos as usize + dy) * needle.width as usize + a.xpos as usize;
        let s = &screen.px[s0..s0 + a.width as usize];
        let n = &needle.px[n0..n0 + a.width as usize];
        // u32 sums over chunks that cannot overflow (4096 × 255²), which vectorise well.
        for (sc, nc) in s.chunks(4096).zip(n.chunks(4096)) {
            let part: u32 = sc
                .iter()
                .zip(nc)
                .map(|(p, q)| {
                    let d = u32::from(p.abs_diff(*q));
                    d * d
                })
                .sum();
            sum += u64::from(part);
        }
        if sum > limit {
            return sum;
        }
    }
    sum
}

/// How many positions of the coarse pass are measured exactly.
const CANDIDATES: usize = 8;

/// The sum of squared differences over every `step`-th pixel of every `step`-th row,
/// giving up once it exceeds `limit`.
fn sampled_ssd(
    screen: &Grey,
    needle: &Grey,
    a: &Area,
    step: usize,
    (sx, sy): (u32, u32),
    limit: u64,
) -> u64 {
    let mut sum = 0u64;
    for dy in (0..a.height).step_by(step) {
        for dx in (0..a.width).step_by(step) {
            let d = u64::from(
                screen
                    .at(sx + dx, sy + dy)
                    .abs_diff(needle.at(a.xpos + dx, a.ypos + dy)),
            );
            sum += d * d;
        }
        if sum > limit {
            return sum;
        }
    }
    sum
}

/// The area's row offsets, the rows whose grey values vary most first.
fn rows_by_variance(needle: &Grey, a: &Area) -> Vec<usize> {
    let mut rows: Vec<(u128, usize)> = (0..a.height)
        .map(|dy| {
            let row = (0..a.width).map(|dx| u64::from(needle.at(a.xpos + dx, a.ypos + dy)));
            let (sum, sq) = row.fold((0u128, 0u128), |(s, q), v| {
                (s + u128::from(v), q + u128::from(v * v))
            });
            // n·Σv² − (Σv)² is n² times the variance.
            let n = u128::from(a.width);
            (n * sq - sum * sum, dy as usize)
        })
        .collect();
    rows.sort_by(|p, q| q.0.cmp(&p.0).then(p.1.cmp(&q.1)));
    rows.into_iter().map(|(_, dy)| dy).collect()
}

/// openQA's similarity of the area at (`sx`,`sy`): small grey differences are free, larger
/// ones count at 16 levels.
fn similarity(screen: &Grey, needle: &Grey, a: &Area, sx: u32, sy: u32) -> f64 {
    let mut sse = 0.0f64;
    for dy in 0..a.height {
        for dx in 0..a.width {
            let s = screen.at(sx + dx, sy + dy);
            let n = needle.at(a.xpos + dx, a.ypos + dy);
            if s.abs_diff(n) < 16 {
                continue;
            }
            let d = ((f64::from(s) / 16.0).round() - (f64::from(n) / 16.0).round()) * 16.0;
            sse += d * d;
        }
    }
    let mse = sse / (f64::from(a.width) * f64::from(a.height));
    (0.9 + (40.0 - mse) / 380.0).clamp(0.0, 1.0)
}

/// Best position and its similarity for one area; (recorded position, 0) when the area
/// does not fit on the screen.
fn search(screen: &Grey, needle: &Grey, a: &Area, margin: u32, required: f64) -> (u32, u32, f64) {
    let fits = |x: u32, y: u32| {
        u64::from(x) + u64::from(a.width) <= u64::from(screen.width)
            && u64::from(y) + u64::from(a.height) <= u64::from(screen.height)
    };
    if fits(a.xpos, a.ypos) {
        let sim = similarity(screen, needle, a, a.xpos, a.ypos);
        if sim >= required {
            return (a.xpos, a.ypos, sim);
        }
    }
    // Clamped to positions where the area fits, so a huge `margin` costs no more than the
    // whole screen.
    let x_range = a.xpos.saturating_sub(margin)
        ..=a.xpos
            .saturating_add(margin)
            .min(screen.width.saturating_sub(a.width));
    let y_range = a.ypos.saturating_sub(margin)
        ..=a.ypos
            .saturating_add(margin)
            .min(screen.height.saturating_sub(a.height));
    // Coarse pass: every position, but only every STEP-th pixel of every STEP-th row;
    // the few best positions then get the exact sum.
    let step = if a.width >= 16 && a.height >= 16 {
        4
    } else {
        1
    };
    let mut coarse: Vec<(u64, u64, u32, u32)> = Vec::with_capacity(CANDIDATES + 1); // (cost, distance², x, y)
    for y in y_range {
        for x in x_range.clone() {
            if !fits(x, y) {
                continue;
            }
            let dist = u64::from(x.abs_diff(a.xpos)).pow(2) + u64::from(y.abs_diff(a.ypos)).pow(2);
            let limit = if coarse.len() == CANDIDATES {
                coarse[CANDIDATES - 1].0
            } else {
                u64::MAX
            };
            let cost = sampled_ssd(screen, needle, a, step, (x, y), limit);
            if coarse.len() < CANDIDATES
                || (cost, dist) < (coarse[CANDIDATES - 1].0, coarse[CANDIDATES - 1].1)
            {
                let at = coarse.partition_point(|c| (c.0, c.1) <= (cost, dist));
                coarse.insert(at, (cost, dist, x, y));
                coarse.truncate(CANDIDATES);
            }
        }
    }
    let rows = rows_by_variance(needle, a);
    let mut best: Option<(u64, u64, u32, u32)> = None; // (ssd, distance², x, y)
    // The recorded position always competes.
    let recorded = fits(a.xpos, a.ypos).then_some((0, 0, a.xpos, a.ypos));
    for (_, dist, x, y) in recorded.into_iter().chain(coarse) {
        let limit = best.map_or(u64::MAX, |b| b.0);
        let cost = ssd(screen, needle, a, &rows, (x, y), limit);
        if best.is_none_or(|b| (cost, dist) < (b.0, b.1)) {
            best = Some((cost, dist, x, y));
        }
    }
    match best {
        Some((_, _, x, y)) => (x, y, similarity(screen, needle, a, x, y)),
        None => (a.xpos, a.ypos, 0.0),
    }
}

/// The json of a needle with one match area (what `aero needle create` writes).
pub fn new_needle_json(tags: Vec<String>, areas: Vec<Area>) -> String {
    let json = NeedleJson {
        tags,
        area: areas,
        properties: Vec::new(),
    };
    // Serialising plain structs cannot fail.
    serde_json::to_string_pretty(&json).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 160×120 picture of smooth noise-free stripes with a distinctive block.
    fn scene(block_x: u32, block_y: u32) -> Image {
        let (w, h) = (160u32, 120u32);
        let mut rgba = Vec::with_capacity((w * h * 4) as usize);
        for y in 0..h {
            for x in 0..w {
                let inside =
                    (block_x..block_x + 30).contains(&x) && (block_y..block_y + 20).contains(&y);
                let px = if inside {
                    // A checker inside the block, so shifted copies do not look alike.
                    if ((x - block_x) / 5 + (y - block_y) / 5).is_multiple_of(2) {
                        [250, 250, 40, 255]
                    } else {
                        [20, 20, 200, 255]
                    }
                } else {
                    [40, 60, 80, 255]
                };
                rgba.extend_from_slice(&px);
            }
        }
        Image {
            width: w,
            height: h,
            rgba,
        }
    }

    fn area(x: u32, y: u32, w: u32, h: u32, kind: AreaType) -> Area {
        Area {
            xpos: x,
            ypos: y,
            width: w,
            height: h,
            kind,
            match_percent: None,
            margin: None,
        }
    }

    fn needle(areas: Vec<Area>) -> Needle {
        let json = NeedleJson {
            tags: vec!["t".into()],
            area: areas,
            properties: Vec::new(),
        };
        Needle::new("t".into(), json, scene(50, 40)).unwrap()
    }

    #[test]
    fn exact_match_at_the_recorded_position() {
        let n = needle(vec![area(45, 35, 40, 30, AreaType::Match)]);
        let r = n.find(&scene(50, 40));
        assert!(r.ok(), "{r:?}");
        assert_eq!(
            (r.areas[0].x, r.areas[0].y, r.areas[0].similarity),
            (45, 35, 1.0)
        );
    }

    #[test]
    fn shifted_within_the_margin_is_found_where_it_moved() {
        let n = needle(vec![area(45, 35, 40, 30, AreaType::Match)]);
        let r = n.find(&scene(70, 52));
        assert!(r.ok(), "{r:?}");
        assert_eq!((r.areas[0].x, r.areas[0].y), (65, 47));
        // Beyond a small margin it is not.
        let mut a = area(45, 35, 40, 30, AreaType::Match);
        a.margin = Some(5);
        let r = needle(vec![a]).find(&scene(70, 52));
        assert!(!r.ok(), "{r:?}");
    }

    #[test]
    fn below_the_threshold_does_not_match() {
        let n = needle(vec![area(45, 35, 40, 30, AreaType::Match)]);
        // The block gone: only background where it was.
        let mut s = scene(50, 40);
        for px in s.rgba.chunks_exact_mut(4) {
            px.copy_from_slice(&[40, 60, 80, 255]);
        }
        let r = n.find(&s);
        assert!(!r.ok(), "{r:?}");
        assert!(r.areas[0].similarity < 0.9, "{r:?}");
        assert!(r.margin() < 0.0);
        // One changed pixel stays above 96%, as in openQA.
        let mut s = scene(50, 40);
        let i = (36 * 160 + 46) * 4;
        s.rgba[i..i + 3].copy_from_slice(&[255, 255, 255]);
        let r = n.find(&s);
        assert!(r.ok(), "{r:?}");
        assert!(r.areas[0].similarity < 1.0);
        // A required 100% refuses the same screen.
        let mut a = area(45, 35, 40, 30, AreaType::Match);
        a.match_percent = Some(100.0);
        assert!(!needle(vec![a]).find(&s).ok());
    }

    #[test]
    fn exclude_area_ignores_changes_there() {
        let mut s = scene(50, 40);
        // Scribble over the block's left half.
        for y in 40..60 {
            for x in 50..65 {
                let i = (y * 160 + x) * 4;
                s.rgba[i..i + 3].copy_from_slice(&[0, 255, 0]);
            }
        }
        let plain = needle(vec![area(45, 35, 40, 30, AreaType::Match)]);
        assert!(!plain.find(&s).ok());
        let masked = needle(vec![
            area(45, 35, 40, 30, AreaType::Match),
            area(48, 38, 19, 24, AreaType::Exclude),
        ]);
        let r = masked.find(&s);
        assert!(r.ok(), "{r:?}");
        let d = plain.diff_image(&s, &plain.find(&s));
        assert_eq!((d.width, d.height), (160, 120));
        // Inside the scribble the diff is red.
        let i = (50 * 160 + 55) * 4;
        assert_eq!(&d.rgba[i..i + 3], &[255, 0, 0]);
    }

    #[test]
    fn a_screen_converted_once_borrows_its_pixels_for_every_needle() {
        let mut s = scene(50, 40);
        for y in 40..60 {
            for x in 50..65 {
                let i = (y * 160 + x) * 4;
                s.rgba[i..i + 3].copy_from_slice(&[0, 255, 0]);
            }
        }
        let plain = needle(vec![area(45, 35, 40, 30, AreaType::Match)]);
        let masked = needle(vec![
            area(45, 35, 40, 30, AreaType::Match),
            area(48, 38, 19, 24, AreaType::Exclude),
        ]);
        // The pixels as a machine frame holds them: no Image around them.
        let frame: &[u8] = &s.rgba;
        let screen = Screen::new(160, 120, frame);
        assert_eq!(screen.rgba().as_ptr(), frame.as_ptr(), "not copied");
        // The shared conversion and the one with the exclusion read the same pixels.
        assert_eq!(plain.find_on(&screen), plain.find(&s));
        assert!(!plain.find_on(&screen).ok());
        assert_eq!(masked.find_on(&screen), masked.find(&s));
        assert!(masked.find_on(&screen).ok());
    }

    #[test]
    fn bad_needles_are_refused() {
        let img = scene(0, 0);
        let make = |areas: Vec<Area>| {
            let json = NeedleJson {
                tags: vec![],
                area: areas,
                properties: vec![],
            };
            Needle::new("x".into(), json, img.clone())
        };
        assert!(make(vec![]).is_err());
        assert!(make(vec![area(150, 0, 20, 10, AreaType::Match)]).is_err());
        assert!(make(vec![area(u32::MAX, 0, u32::MAX, 10, AreaType::Match)]).is_err());
        assert!(make(vec![area(0, 0, 0, 10, AreaType::Match)]).is_err());
        assert!(make(vec![area(0, 0, 10, 10, AreaType::Ocr)]).is_err());
        // A screen smaller than the area scores 0 instead of reading out of bounds.
        let n = needle(vec![area(45, 35, 40, 30, AreaType::Match)]);
        let tiny = Image {
            width: 10,
            height: 10,
            rgba: vec![0; 400],
        };
        assert_eq!(n.find(&tiny).areas[0].similarity, 0.0);
        // A huge margin searches the screen, not 2³² positions.
        let mut a = area(45, 35, 40, 30, AreaType::Match);
        a.margin = Some(u32::MAX);
        assert!(needle(vec![a]).find(&scene(100, 80)).ok());
    }

    #[test]
    fn json_round_trip_in_openqa_form() {
        let dir = tempfile::tempdir().unwrap();
        let text = r#"{"tags": ["desk"], "properties": [],
            "area": [{"xpos": 45, "ypos": 35, "width": 40, "height": 30, "type": "match", "match": 90},
                     {"xpos": 48, "ypos": 38, "width": 5, "height": 5, "type": "exclude"}]}"#;
        std::fs::write(dir.path().join("desk.json"), text).unwrap();
        let img = scene(50, 40);
        crate::screenshot::write_png(
            &dir.path().join("desk.png"),
            img.width,
            img.height,
            &img.rgba,
        )
        .unwrap();
        let n = Needle::load(&dir.path().join("desk.json")).unwrap();
        assert_eq!(n.name, "desk");
        assert_eq!(n.json.area[0].match_percent, Some(90.0));
        assert_eq!(n.json.area[1].kind, AreaType::Exclude);
        assert!(n.find(&img).ok());
        let written = new_needle_json(vec!["desk".into()], n.json.area.clone());
        let back: NeedleJson = serde_json::from_str(&written).unwrap();
        assert_eq!(back.area, n.json.area);
        std::fs::write(dir.path().join("bad.json"), "{").unwrap();
        assert!(matches!(
            Needle::load(&dir.path().join("bad.json")),
            Err(NeedleError::Json { .. })
        ));
    }
}
