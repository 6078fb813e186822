//! `aero headless`: boot a guest without a window, watch serial/screen, save a screenshot.
//!
//! The options are a contract with external test suites; keep them stable.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use aero_machine::{Machine, RunEvent};

use aero::needle::Needle;

use crate::machine_args::MachineArgs;
use crate::monitor::Monitor;
use crate::screen_watch::ScreenWatch;
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
    /// Write what the guest plays on the HD Audio controller to this WAV file (16-bit
    /// stereo at the guest's rate, paced by guest time). Without it the controller plays
    /// into nothing.
    #[arg(long = "audio-wav", value_name = "FILE.wav")]
    audio_wav: Option<PathBuf>,
    /// Play this WAV file into the HD Audio controller's input jack (then silence; without
    /// it the jack hears silence).
    #[arg(long = "audio-in-wav", value_name = "FILE.wav")]
    audio_in_wav: Option<PathBuf>,
    /// No HD Audio controller (headless has one by default, with no host side).
    #[arg(long = "no-audio", conflicts_with_all = ["audio_wav", "audio_in_wav"])]
    no_audio: bool,
}

/// Exit statuses of the contract.
const EXIT_OK: u8 = 0;
const EXIT_TIMEOUT: u8 = 1;
const EXIT_BAD_ARGS: u8 = 2;
const EXIT_SHUTDOWN: u8 = 3;

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
    session: Session,
    needles: Vec<Needle>,
}

/// A machine with its output files and monitor: the run loop `aero headless` and
/// `aero test` share.
pub struct Session {
    pub machine: Machine,
    pub serial: Option<Box<dyn Write>>,
    pub debugcon: Option<Box<dyn Write>>,
    pub post_log: Option<Box<dyn Write>>,
    pub monitor: Option<Monitor>,
}

/// What one slice of [`Session::run_slice`] brought.
pub struct Slice {
    pub event: RunEvent,
    /// COM1 output of the slice.
    pub serial: Vec<u8>,
}

impl Session {
    /// Runs the monitor lines due at power-on (before the first instruction).
    pub fn start(&mut self) {
        if let Some(m) = self.monitor.as_mut() {
            m.poll(&mut self.machine, &[]);
        }
    }

    /// Runs the guest for up to 10 ms of guest time (less when the monitor waits for an
    /// earlier point of the guest clock), writes its output and runs the monitor lines
    /// that became due.
    pub fn run_slice(&mut self) -> anyhow::Result<Slice> {
        let now = self.machine.now_ns();
        let slice = self
            .monitor
            .as_ref()
            .and_then(Monitor::next_deadline)
            .map_or(SLICE_NS, |t| t.saturating_sub(now).clamp(1, SLICE_NS));
        let event = self.machine.run_for(slice);
        let serial = self.machine.take_serial_output();
        if let Some(w) = self.serial.as_mut() {
            w.write_all(&serial)?;
            w.flush()?;
        }
        let dbg = self.machine.take_debugcon_output();
        if let Some(w) = self.debugcon.as_mut() {
            w.write_all(&dbg)?;
            w.flush()?;
        }
        for code in self.machine.take_post_codes() {
            if let Some(w) = self.post_log.as_mut() {
                writeln!(w, "{code:02x}")?;
            }
        }
        if let Some(m) = self.monitor.as_mut() {
            m.poll(&mut self.machine, &serial);
        }
        Ok(Slice { event, serial })
    }

    /// Flushes the output files and closes the machine's disks.
    pub fn finish(&mut self) -> anyhow::Result<()> {
        for w in [
            self.serial.as_mut(),
            self.debugcon.as_mut(),
            self.post_log.as_mut(),
        ]
        .into_iter()
        .flatten()
        {
            w.flush()?;
        }
        self.machine.shutdown()?;
        Ok(())
    }
}

pub fn open_sink(spec: &str) -> anyhow::Result<Box<dyn Write>> {
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
        let mut config = args
            .machine
            .machine_config(crate::machine_args::HEADLESS_MEMORY_MIB, !args.realtime)?;
        // HD Audio by default, as in the window: an idle controller costs nothing, and
        // the file backend is paced by guest time, so runs stay deterministic.
        if !args.no_audio {
            config.audio = Some(Box::new(aero::audio_file::FileAudio::open(
                args.audio_wav.as_deref(),
                args.audio_in_wav.as_deref(),
            )?));
        }
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
            session: Session {
                machine,
                serial: args.serial.as_deref().map(open_sink).transpose()?,
                debugcon: args.debugcon.as_deref().map(open_sink).transpose()?,
                post_log: args
                    .post_log
                    .as_deref()
                    .map(|p| open_sink(&p.to_string_lossy()))
                    .transpose()?,
                monitor,
            },
            needles,
        })
    }
}

/// Finds `needle` in a stream that arrives in pieces.
pub struct StreamMatcher {
    needle: Vec<u8>,
    tail: Vec<u8>,
}

impl StreamMatcher {
    pub fn new(needle: &str) -> Self {
        StreamMatcher {
            needle: needle.as_bytes().to_vec(),
            tail: Vec::new(),
        }
    }
    pub fn feed(&mut self, data: &[u8]) -> bool {
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

fn run(args: HeadlessArgs, setup: Setup) -> anyhow::Result<u8> {
    let Setup {
        session: mut s,
        needles,
    } = setup;
    let timeout_ns = args.timeout.map(|t| (t * 1e9) as u64);
    let mut watch = ScreenWatch::default();
    let mut serial_match = args.until_serial.as_deref().map(StreamMatcher::new);
    s.start();
    let code = loop {
        let Slice { event, serial } = s.run_slice()?;
        if serial_match.as_mut().is_some_and(|m| m.feed(&serial)) {
            break EXIT_OK;
        }
        if s.monitor.as_ref().is_some_and(Monitor::quit_requested) {
            break EXIT_OK;
        }
        if let Some(text) = &args.until_screen
            && s.machine
                .text_screen()
                .is_some_and(|screen| screen.contains(text.as_str()))
        {
            break EXIT_OK;
        }
        if !needles.is_empty()
            && let Some(i) = watch.check(&mut s.machine, &needles)
        {
            eprintln!("aero: screen matches needle {}", needles[i].name);
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
            if !needles.is_empty() {
                for line in watch.describe(&needles) {
                    eprintln!("aero: {line}");
                }
                if let Some(shot) = &args.screenshot {
                    let files = watch.write_pictures(&needles, shot)?;
                    if let [needle, diff] = files.as_slice() {
                        eprintln!(
                            "aero: wrote {} and {} (screen at the closest match)",
                            needle.display(),
                            diff.display()
                        );
                    }
                }
            }
            break EXIT_TIMEOUT;
        }
    };
    // For benchmarks: guest instructions per host second (AERO_LOG=aero::headless=info).
    tracing::info!(
        instructions = s.machine.instructions_retired(),
        "guest instructions retired"
    );
    if let Some(path) = &args.screenshot {
        let frame = s.machine.screen();
        aero::screenshot::write_png(path, frame.width, frame.height, &frame.pixels)?;
    }
    if let Some(path) = &args.screen_text {
        let text = s.machine.text_screen().unwrap_or_default();
        std::fs::write(path, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    s.finish()?;
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
