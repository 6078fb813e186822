//! Watching the guest's screen for openQA needles, shared by `aero headless --until-match`,
//! the monitor's `wait-match` and `aero test`.
//!
//! The screen is looked at only when the machine's display generation moved (the scanout
//! changed), and searched at most every [`MATCH_INTERVAL_NS`] of guest time: a guest that
//! animates changes its picture every frame, and a search costs milliseconds of host time.

use std::path::{Path, PathBuf};

use aero::needle::{MatchResult, Needle, Screen};
use aero::screenshot::Image;
use aero_machine::Machine;

/// Least guest time between two needle searches.
pub const MATCH_INTERVAL_NS: u64 = 100_000_000;
/// Least guest time between two looks at the display generation (one render and compare).
const POLL_INTERVAL_NS: u64 = 20_000_000;

/// The needle that came closest so far, how, and the screen it was measured on.
pub struct Closest {
    pub needle: usize,
    pub result: MatchResult,
    pub screen: Image,
}

#[derive(Default)]
pub struct ScreenWatch {
    last_generation: Option<u64>,
    /// Guest time before which the display generation is not read again.
    next_poll_ns: u64,
    /// Guest time before which the screen is not searched again after a search.
    next_search_ns: u64,
    pub closest: Option<Closest>,
}

impl ScreenWatch {
    /// Index of a needle that matches the screen, if the screen changed since the last
    /// search and one does. The first call always searches.
    pub fn check(&mut self, machine: &mut Machine, needles: &[Needle]) -> Option<usize> {
        let now = machine.now_ns();
        if now < self.next_poll_ns || now < self.next_search_ns {
            return None;
        }
        self.next_poll_ns = now.saturating_add(POLL_INTERVAL_NS);
        let generation = machine.display_generation();
        if self.last_generation == Some(generation) {
            return None;
        }
        self.last_generation = Some(generation);
        self.next_search_ns = now.saturating_add(MATCH_INTERVAL_NS);
        // The frame the generation was taken from, borrowed: a search copies the pixels
        // only when they become the closest candidate's (into the buffer kept for it).
        let frame = machine.last_screen();
        if frame.pixels.len() as u64 != u64::from(frame.width) * u64::from(frame.height) * 4
            || frame.pixels.is_empty()
        {
            return None; // no picture yet
        }
        let screen = Screen::new(frame.width, frame.height, &frame.pixels);
        let mut closer: Option<(usize, MatchResult)> = None;
        for (i, n) in needles.iter().enumerate() {
            let r = n.find_on(&screen);
            if r.ok() {
                return Some(i);
            }
            // Ties go to the newer screen: the diff then shows what the guest shows now.
            let best = closer
                .as_ref()
                .map(|(_, b)| b)
                .or(self.closest.as_ref().map(|c| &c.result));
            if best.is_none_or(|b| r.margin() >= b.margin()) {
                closer = Some((i, r));
            }
        }
        if let Some((needle, result)) = closer {
            let mut kept = self.closest.take().map_or(
                Image {
                    width: 0,
                    height: 0,
                    rgba: Vec::new(),
                },
                |c| c.screen,
            );
            kept.width = screen.width();
            kept.height = screen.height();
            kept.rgba.clear(); // keeps the allocation
            kept.rgba.extend_from_slice(screen.rgba());
            self.closest = Some(Closest {
                needle,
                result,
                screen: kept,
            });
        }
        None
    }

    /// How close the needles came, one line per area.
    pub fn describe(&self, needles: &[Needle]) -> Vec<String> {
        let Some(c) = &self.closest else {
            return vec!["no screen was seen to match against".into()];
        };
        let n = &needles[c.needle];
        c.result
            .areas
            .iter()
            .map(|a| {
                format!(
                    "closest needle {}: area {} best at {},{} similarity {:.3} (needs {:.3})",
                    n.name, a.index, a.x, a.y, a.similarity, a.required
                )
            })
            .collect()
    }

    /// Writes the closest needle's picture and a diff drawn over the screen it was
    /// measured on: `STEM.needle.png` and `STEM.diff.png` next to `stem`'s file name.
    /// Returns the files written (none when no screen was seen).
    pub fn write_pictures(&self, needles: &[Needle], stem: &Path) -> anyhow::Result<Vec<PathBuf>> {
        let Some(c) = &self.closest else {
            return Ok(Vec::new());
        };
        let n = &needles[c.needle];
        let name = stem.file_stem().unwrap_or_default().to_string_lossy();
        let out = |what: &str| stem.with_file_name(format!("{name}.{what}.png"));
        aero::screenshot::write_png(&out("needle"), n.image.width, n.image.height, &n.image.rgba)?;
        let diff = n.diff_image(&c.screen, &c.result);
        aero::screenshot::write_png(&out("diff"), diff.width, diff.height, &diff.rgba)?;
        Ok(vec![out("needle"), out("diff")])
    }
}
