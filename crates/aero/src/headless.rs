//! `aero headless`: boot a guest without a window, watch serial/screen, save a screenshot.
//!
//! The options are a contract with external test suites; keep them stable.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use aero_machine::{Machine, RunEvent};

use aero::needle::{MatchResult, Needle, Screen};
use aero::screenshot::Image;

use crate::machine_args::MachineArgs;
use crate::monitor::Monitor;
use clap::Args;

#[derive(Args, Debug)]
pub struct HeadlessArgs {
    #[command(flatten)]
    pub machine: MachineArgs,
    /// COM1 output (- = stdout).
    #[arg(long, value_name = "FILE|-")]
    serial: Option<String>,
    /// Port 0xE9 output (- = stdout).
    #[arg(long, value_name = "FILE|-")]
    debugcon: Option<String>,
    /// Every byte written to port 0x80, one hex code per line.
    #[arg(long = "post-log", value_name = "FILE")]
    post_log: Option<PathBuf>,
    /// Stop with exit 0 once TEXT appeared on COM1.
    #[arg(long = "until-serial", value_name = "TEXT")]
    until_serial: Option<String>,
    /// Stop with exit 0 once TEXT is on the text-mode screen.
    #[arg(long = "until-screen", value_name = "TEXT")]
    until_screen: Option<String>,
    /// Stop with exit 0 once the screen matches this openQA needle (repeatable: any of
    /// them). On timeout, the closest needle and a diff are written next to --screenshot.
    #[arg(long = "until-match", value_name = "NEEDLE.json")]
    until_match: Vec<PathBuf>,
    /// Give up after this much guest time (exit 1).
    #[arg(long, value_name = "SECONDS")]
    timeout: Option<f64>,
    /// Write the screen when the run ends.
    #[arg(long, value_name = "FILE.png")]
    screenshot: Option<PathBuf>,
    /// Write the text-mode screen as text when the run ends (empty in graphics modes).
    #[arg(long = "screen-text", value_name = "FILE")]
    screen_text: Option<PathBuf>,
    /// Instruction-count time (the default in headless mode).
    #[arg(long, conflicts_with = "realtime")]
    deterministic: bool,
    /// Follow the host clock instead of counting instructions.
    #[arg(long)]
    realtime: bool,
    /// Monitor commands (eject, change, info block, quit; QEMU-like) typed on stdin
    /// ("stdio") or from a script FILE whose `at SECONDS` / `wait-serial TEXT` lines say
    /// when the next lines run (deterministic). See README "Monitor".
    #[arg(long, value_name = "FILE|stdio")]
    monitor: Option<String>,
}

/// Exit statuses of the contract.
const EXIT_OK: u8 = 0;
const EXIT_TIMEOUT: u8 = 1;
const EXIT_BAD_ARGS: u8 = 2;
const EXIT_SHUTDOWN: u8 = 3;

/// Least guest time between two needle searches: a guest that animates changes its
/// picture every frame, and a search costs milliseconds of host time.
const MATCH_INTERVAL_NS: u64 = 100_000_000;

/// Guest time between checks of the screen and the timeout.
const SLICE_NS: u64 = 10_000_000;

pub fn main(mut args: HeadlessArgs) -> ExitCode {
    let setup = match args.machine.load_config().and_then(|()| Setup::new(&args)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("aero: {e:#}");
            return ExitCode::from(EXIT_BAD_ARGS);
        }
    };
    match run(args, setup) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("aero: {e:#}");
            ExitCode::from(EXIT_BAD_ARGS)
        }
    }
}

/// Everything opened before the guest starts, so bad arguments fail early with exit 2.
struct Setup {
    machine: Machine,
    serial: Option<Box<dyn Write>>,
    debugcon: Option<Box<dyn Write>>,
    post_log: Option<Box<dyn Write>>,
    monitor: Option<Monitor>,
    needles: Vec<Needle>,
}

fn open_sink(spec: &str) -> anyhow::Result<Box<dyn Write>> {
    if spec == "-" {
        Ok(Box::new(std::io::stdout()))
    } else {
        let f = File::create(spec).map_err(|e| anyhow::anyhow!("cannot create {spec}: {e}"))?;
        Ok(Box::new(std::io::BufWriter::new(f)))
    }
}

impl Setup {
    fn new(args: &HeadlessArgs) -> anyhow::Result<Setup> {
        if let Some(t) = args.timeout {
            anyhow::ensure!(
                t.is_finite() && t > 0.0,
                "--timeout must be a positive number of seconds"
            );
        }
        let config = args
            .machine
            .machine_config(crate::machine_args::HEADLESS_MEMORY_MIB, !args.realtime)?;
        let monitor = args
            .monitor
            .as_deref()
            .map(|spec| Monitor::open(spec, args.machine.media_files()))
            .transpose()?;
        let needles = args
            .until_match
            .iter()
            .map(|p| Needle::load(p))
            .collect::<Result<Vec<_>, _>>()?;
        let mut machine = Machine::new(config)?;
        machine.set_aerogpu_executor(crate::machine_args::aerogpu_executor(args.machine.gpu)?);
        Ok(Setup {
            machine,
            serial: args.serial.as_deref().map(open_sink).transpose()?,
            debugcon: args.debugcon.as_deref().map(open_sink).transpose()?,
            post_log: args
                .post_log
                .as_deref()
                .map(|p| open_sink(&p.to_string_lossy()))
                .transpose()?,
            monitor,
            needles,
        })
    }
}

/// Finds `needle` in a stream that arrives in pieces.
struct StreamMatcher {
    needle: Vec<u8>,
    tail: Vec<u8>,
}

impl StreamMatcher {
    fn new(needle: &str) -> Self {
        StreamMatcher {
            needle: needle.as_bytes().to_vec(),
            tail: Vec::new(),
        }
    }
    fn feed(&mut self, data: &[u8]) -> bool {
        if self.needle.is_empty() {
            return true;
        }
        self.tail.extend_from_slice(data);
        let found = self
            .tail
            .windows(self.needle.len())
            .any(|w| w == self.needle.as_slice());
        // Keep just enough to match across the next boundary.
        let keep = self.needle.len() - 1;
        if self.tail.len() > keep {
            self.tail.drain(..self.tail.len() - keep);
        }
        found
    }
}

/// Watches the screen for `--until-match` needles; matches only when the picture changed.
#[derive(Default)]
struct ScreenWatch {
    last_hash: Option<u64>,
    /// Guest time before which the screen is not looked at again after a search.
    next_check_ns: u64,
    /// The needle that came closest so far and how (index into the needles).
    closest: Option<(usize, MatchResult, Image)>,
}

impl ScreenWatch {
    /// Returns the name of a needle that matches the current screen.
    fn check(&mut self, machine: &mut Machine, needles: &[Needle]) -> Option<String> {
        use std::hash::{Hash, Hasher};
        if machine.now_ns() < self.next_check_ns {
            return None;
        }
        let frame = machine.screen();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (frame.width, frame.height, &frame.pixels).hash(&mut h);
        let hash = h.finish();
        if self.last_hash == Some(hash) {
            return None;
        }
        self.last_hash = Some(hash);
        self.next_check_ns = machine.now_ns().saturating_add(MATCH_INTERVAL_NS);
        let image = Image {
            width: frame.width,
            height: frame.height,
            rgba: frame.pixels,
        };
        if image.rgba.len() as u64 != u64::from(image.width) * u64::from(image.height) * 4 {
            return None; // no picture yet
        }
        let screen = Screen::new(image);
        let mut found = None;
        for (i, n) in needles.iter().enumerate() {
            let r = n.find_on(&screen);
            if r.ok() {
                found = Some(n.name.clone());
                break;
            }
            // Ties go to the newer screen: the diff then shows what the guest shows now.
            if self
                .closest
                .as_ref()
                .is_none_or(|c| r.margin() >= c.1.margin())
            {
                self.closest = Some((i, r, screen.image().clone()));
            }
        }
        found
    }

    /// After a timeout: says how close the needles came and writes the closest needle's
    /// picture and a diff next to `shot` (`NAME.needle.png`, `NAME.diff.png`).
    fn report(&self, needles: &[Needle], shot: Option<&std::path::Path>) -> anyhow::Result<()> {
        let Some((i, result, screen)) = &self.closest else {
            eprintln!("aero: no screen was seen to match against");
            return Ok(());
        };
        let n = &needles[*i];
        for a in &result.areas {
            eprintln!(
                "aero: closest needle {}: area {} best at {},{} similarity {:.3} (needs {:.3})",
                n.name, a.index, a.x, a.y, a.similarity, a.required
            );
        }
        if let Some(shot) = shot {
            let stem = shot.file_stem().unwrap_or_default().to_string_lossy();
            let out = |what: &str| shot.with_file_name(format!("{stem}.{what}.png"));
            aero::screenshot::write_png(
                &out("needle"),
                n.image.width,
                n.image.height,
                &n.image.rgba,
            )?;
            let diff = n.diff_image(screen, result);
            aero::screenshot::write_png(&out("diff"), diff.width, diff.height, &diff.rgba)?;
            eprintln!(
                "aero: wrote {} and {} (screen at the closest match)",
                out("needle").display(),
                out("diff").display()
            );
        }
        Ok(())
    }
}

fn run(args: HeadlessArgs, mut s: Setup) -> anyhow::Result<u8> {
    let timeout_ns = args.timeout.map(|t| (t * 1e9) as u64);
    let mut watch = ScreenWatch::default();
    let mut serial_match = args.until_serial.as_deref().map(StreamMatcher::new);
    // Monitor lines due at power-on run before the first instruction.
    if let Some(m) = s.monitor.as_mut() {
        m.poll(&mut s.machine, &[]);
    }
    let code = loop {
        // A slice ends exactly where a monitor script waits for the guest clock.
        let now = s.machine.now_ns();
        let slice = s
            .monitor
            .as_ref()
            .and_then(Monitor::next_deadline)
            .map_or(SLICE_NS, |t| t.saturating_sub(now).clamp(1, SLICE_NS));
        let event = s.machine.run_for(slice);
        let serial = s.machine.take_serial_output();
        if let Some(w) = s.serial.as_mut() {
            w.write_all(&serial)?;
            w.flush()?;
        }
        let dbg = s.machine.take_debugcon_output();
        if let Some(w) = s.debugcon.as_mut() {
            w.write_all(&dbg)?;
            w.flush()?;
        }
        for code in s.machine.take_post_codes() {
            if let Some(w) = s.post_log.as_mut() {
                writeln!(w, "{code:02x}")?;
            }
        }
        if serial_match.as_mut().is_some_and(|m| m.feed(&serial)) {
            break EXIT_OK;
        }
        if let Some(m) = s.monitor.as_mut() {
            m.poll(&mut s.machine, &serial);
            if m.quit_requested() {
                break EXIT_OK;
            }
        }
        if let Some(text) = &args.until_screen
            && s.machine
                .text_screen()
                .is_some_and(|screen| screen.contains(text.as_str()))
        {
            break EXIT_OK;
        }
        if !s.needles.is_empty()
            && let Some(name) = watch.check(&mut s.machine, &s.needles)
        {
            eprintln!("aero: screen matches needle {name}");
            break EXIT_OK;
        }
        match event {
            RunEvent::Running => {}
            RunEvent::PoweredOff => break EXIT_OK,
            RunEvent::Shutdown(msg) => {
                eprintln!("aero: {msg}");
                break EXIT_SHUTDOWN;
            }
        }
        if timeout_ns.is_some_and(|t| s.machine.now_ns() >= t) {
            eprintln!(
                "aero: timeout after {:.1} s of guest time; CPU at {}",
                s.machine.now_ns() as f64 / 1e9,
                s.machine.cpu_location()
            );
            if !s.needles.is_empty() {
                watch.report(&s.needles, args.screenshot.as_deref())?;
            }
            break EXIT_TIMEOUT;
        }
    };
    // For benchmarks: guest instructions per host second (AERO_LOG=aero::headless=info).
    tracing::info!(
        instructions = s.machine.instructions_retired(),
        "guest instructions retired"
    );
    for w in [s.serial.as_mut(), s.debugcon.as_mut(), s.post_log.as_mut()]
        .into_iter()
        .flatten()
    {
        w.flush()?;
    }
    if let Some(path) = &args.screenshot {
        let frame = s.machine.screen();
        aero::screenshot::write_png(path, frame.width, frame.height, &frame.pixels)?;
    }
    if let Some(path) = &args.screen_text {
        let text = s.machine.text_screen().unwrap_or_default();
        std::fs::write(path, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    s.machine.shutdown()?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_matcher_finds_text_across_chunks() {
        let mut m = StreamMatcher::new("BOOT-OK");
        assert!(!m.feed(b"xxBOO"));
        assert!(!m.feed(b"T-"));
        assert!(m.feed(b"OKyy"));
        let mut m = StreamMatcher::new("abc");
        assert!(!m.feed(b"ab"));
        assert!(!m.feed(b"xc"));
    }
}
